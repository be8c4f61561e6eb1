import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../../db/embedded.ts';
import { startTemporalDevServer } from '../../scripts/temporal-server.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
    temporalAddress: string;
  }
}

/**
 * One PostgreSQL server and one Temporal dev server per test run. PostgreSQL: DATABASE_URL when set (CI uses
 * Debian's server), else an embedded one in a temporary folder; each test file makes its own database on it
 * (test/support/db.ts). Temporal: TEMPORAL_ADDRESS when set, else a dev server in memory; each test uses its own
 * task queue.
 */
export default async function setup(project: TestProject) {
  const stops: Array<() => Promise<void>> = [];
  if (process.env.DATABASE_URL) {
    project.provide('databaseUrl', process.env.DATABASE_URL);
  } else {
    const dir = await mkdtemp(path.join(tmpdir(), 'svc-test-pg-'));
    // As root, the server runs as an unprivileged user that must reach its folder.
    await chmod(dir, 0o755);
    const server = await startEmbeddedPostgres(dir);
    project.provide('databaseUrl', server.url);
    stops.push(async () => {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    });
  }
  if (process.env.TEMPORAL_ADDRESS) {
    project.provide('temporalAddress', process.env.TEMPORAL_ADDRESS);
  } else {
    const temporal = await startTemporalDevServer({ headless: true, log: (line) => console.log(line) });
    project.provide('temporalAddress', temporal.address);
    stops.push(temporal.stop);
  }
  return async () => {
    for (const stop of stops.reverse()) await stop();
  };
}
