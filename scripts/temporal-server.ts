import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { createConnection } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../lib/net.ts';
import { promisify } from 'node:util';

/** The newest CLI tag that `go install` can build (later tags need replace directives). */
export const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal@v1.5.1';
/** Built binaries are cached outside the repository, shared by every clone on the machine. */
export const CACHE_DIR = path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'svc');

const run = promisify(execFile);

async function onPath(name: string): Promise<string | null> {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const candidate = path.join(dir, name);
    if (dir && existsSync(candidate)) return candidate;
  }
  return null;
}

/**
 * The Temporal CLI, found in this order: TEMPORAL_CLI, `temporal` on PATH, the cache, built with `go install` into
 * the cache where Go is available. Null when none works (the caller then tries the SDK's own download).
 */
export async function locateTemporalCli(log: (line: string) => void = () => {}): Promise<string | null> {
  if (process.env.TEMPORAL_CLI) {
    if (!existsSync(process.env.TEMPORAL_CLI)) throw new Error(`TEMPORAL_CLI=${process.env.TEMPORAL_CLI} introuvable`);
    return process.env.TEMPORAL_CLI;
  }
  const found = await onPath('temporal');
  if (found) return found;
  const cached = path.join(CACHE_DIR, 'bin', 'temporal');
  if (existsSync(cached)) return cached;
  const go = await onPath('go');
  if (!go) return null;
  log(`Construction du serveur de développement Temporal (go install ${TEMPORAL_CLI_MODULE}), une seule fois…`);
  await mkdir(path.dirname(cached), { recursive: true });
  await run(go, ['install', TEMPORAL_CLI_MODULE], {
    env: { ...process.env, GOBIN: path.dirname(cached), GOFLAGS: '-mod=mod' },
    maxBuffer: 64 * 2 ** 20,
  });
  return existsSync(cached) ? cached : null;
}

async function waitForPort(port: number, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`Le serveur Temporal s’est arrêté (code ${child.exitCode}).`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ port, host: '127.0.0.1' }, () => {
        socket.end();
        resolve(true);
      });
      socket.on('error', () => resolve(false));
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`Le serveur Temporal n’écoute pas sur ${port} après ${timeoutMs} ms.`);
}

export interface TemporalDevServer {
  address: string;
  uiUrl: string | null;
  stop(): Promise<void>;
}

/**
 * A Temporal dev server: its history in a SQLite file when `dbFile` is given (kept across restarts), in memory
 * otherwise (tests). The web UI is served unless `headless`.
 */
export async function startTemporalDevServer(options: {
  dbFile?: string;
  headless?: boolean;
  log?: (line: string) => void;
}): Promise<TemporalDevServer> {
  const cli = await locateTemporalCli(options.log);
  if (!cli) {
    // Last resort: the SDK downloads a CLI build (needs internet access to Temporal's CDN).
    const { TestWorkflowEnvironment } = await import('@temporalio/testing');
    const env = await TestWorkflowEnvironment.createLocal({
      server: { dbFilename: options.dbFile, ui: !options.headless },
    });
    return { address: env.address, uiUrl: null, stop: () => env.teardown() };
  }
  const port = await freePort();
  const uiPort = options.headless ? null : await freePort();
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(port), '--log-level', 'error'];
  if (options.dbFile) {
    await mkdir(path.dirname(options.dbFile), { recursive: true });
    // SQLite's default rollback journal syncs the file several times per write: a workflow start took 18 ms p50 on
    // this project's 2-core machine, 6.6 ms with a write-ahead log synced at checkpoints (bench/RESULTS.md, "Billing
    // path and task starts"). A process crash loses nothing; a power cut may lose the last history writes, which the
    // task resumer (domain/taches/reprise.ts) covers for tasks not yet started.
    args.push(
      '--db-filename',
      options.dbFile,
      '--sqlite-pragma',
      'journal_mode=wal',
      '--sqlite-pragma',
      'synchronous=normal',
    );
  }
  if (uiPort) args.push('--ui-port', String(uiPort));
  else args.push('--headless');
  const child = spawn(cli, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk) => (stderr = (stderr + chunk).slice(-4000)));
  // Should this process end without calling stop (an uncaught error, process.exit), the server ends with it.
  const orphanGuard = () => child.kill('SIGTERM');
  process.on('exit', orphanGuard);
  try {
    await waitForPort(port, child, 60_000);
  } catch (error) {
    process.off('exit', orphanGuard);
    child.kill('SIGKILL');
    throw new Error(`${(error as Error).message}\n${stderr}`);
  }
  return {
    address: `127.0.0.1:${port}`,
    uiUrl: uiPort ? `http://127.0.0.1:${uiPort}` : null,
    async stop() {
      process.off('exit', orphanGuard);
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
