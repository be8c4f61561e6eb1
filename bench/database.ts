import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres } from '../db/embedded.ts';

/**
 * The database of a benchmark: DATABASE_URL when set, else an embedded PostgreSQL 18 under a work folder of the
 * benchmark's own (`dir`, also for its generated files; the server's data in `dir/pg`). `close()` stops the server
 * and removes the folder.
 */
export async function benchDatabase(name: string) {
  const dir = await mkdtemp(path.join(os.tmpdir(), `svc-bench-${name}-`));
  // As root, the embedded server runs as an unprivileged user that must reach its folder.
  await chmod(dir, 0o755);
  const external = process.env.DATABASE_URL;
  const server = external ? null : await startEmbeddedPostgres(path.join(dir, 'pg'));
  return {
    dir,
    url: external ?? server!.url,
    label: external ? 'PostgreSQL at DATABASE_URL' : 'embedded PostgreSQL 18',
    async close() {
      await server?.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
