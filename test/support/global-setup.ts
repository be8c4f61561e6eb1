import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../../db/embedded.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
  }
}

/**
 * One PostgreSQL server per test run: DATABASE_URL when set (CI uses Debian's server), else an embedded one in a
 * temporary folder. Each test file then makes its own database on it (test/support/db.ts).
 */
export default async function setup(project: TestProject) {
  if (process.env.DATABASE_URL) {
    project.provide('databaseUrl', process.env.DATABASE_URL);
    return;
  }
  const dir = await mkdtemp(path.join(tmpdir(), 'svc-test-pg-'));
  // As root, the server runs as an unprivileged user that must reach its folder.
  await chmod(dir, 0o755);
  const server = await startEmbeddedPostgres(dir);
  project.provide('databaseUrl', server.url);
  return async () => {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  };
}
