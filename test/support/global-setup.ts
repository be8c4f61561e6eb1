import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../../db/embedded.ts';
import { startTemporalDevServer } from '../../scripts/temporal-server.ts';
import { WORKFLOW_BUNDLE_ENV, WORKFLOWS_PATH } from '../../worker/worker.ts';

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
  // The workflows bundled once for the run, from this checkout: the test files and the processes they start reuse it
  // (each worker would otherwise bundle them again, 2 to 3 s a time, and the kill-point test starts dozens).
  const bundleDir = await mkdtemp(path.join(tmpdir(), 'svc-test-bundle-'));
  const { bundleWorkflowCode } = await import('@temporalio/worker');
  const silent = { info() {}, warn() {}, error() {}, debug() {}, trace() {}, log() {} };
  const bundle = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: silent });
  const bundlePath = path.join(bundleDir, 'workflows.js');
  await writeFile(bundlePath, bundle.code);
  process.env[WORKFLOW_BUNDLE_ENV] = bundlePath;
  stops.push(() => rm(bundleDir, { recursive: true, force: true }));
  return async () => {
    for (const stop of stops.reverse()) await stop();
  };
}
