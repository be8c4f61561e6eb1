/**
 * The service as users get it: `node scripts/start.ts` (what `npm start` runs) in a process of its own, on a fresh
 * DATA_DIR (embedded PostgreSQL 18, Temporal dev server, the demonstration data), with the default configuration
 * (logs at the default level). Benchmarks measure it from other processes.
 */
import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../lib/net.ts';

export interface Service {
  url: string;
  /** The process of `node scripts/start.ts`: the api and the worker (PostgreSQL and Temporal run in their own). */
  pid: number;
  adminToken: string;
  /** The service's standard output (its logs), a file as in a deployment that writes them to disk; gone after stop. */
  logFile: string;
  /**
   * The environment of a CLI (`npm run import`, `npm run lac`…) run beside the service: it reaches the service's
   * embedded PostgreSQL through DATA_DIR, and no Temporal address starts workflows after it.
   */
  cliEnv: NodeJS.ProcessEnv;
  /** A call to the admin API; throws unless 2xx. */
  admin(method: 'GET' | 'POST' | 'PATCH', route: string, body?: unknown): Promise<any>;
  /** A new organisation and a live key of it, through the admin API. */
  organisation(org?: Record<string, unknown>): Promise<{ id: string; cle: string }>;
  stop(): Promise<void>;
}

/** Settings the bench's own environment must not pass on: the service runs with its defaults unless `env` says. */
const NOT_INHERITED = ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'ADMIN_TOKEN', 'LOG_LEVEL', 'DATA_DIR', 'PORT', 'HOST'];

export async function startService(env: Record<string, string> = {}): Promise<Service> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'svc-bench-service-'));
  // As root, PostgreSQL runs as an unprivileged user: when it reaches this folder its data stays inside and goes with
  // it at the stop (else it is kept under /var/lib/svc, as a real DATA_DIR's would be, and each run would leave one).
  await chmod(dataDir, 0o755);
  const port = await freePort();
  const root = path.resolve(import.meta.dirname, '..');
  const inherited = { ...process.env };
  for (const name of NOT_INHERITED) delete inherited[name];
  const logFile = path.join(dataDir, 'service.log');
  // The default log level writes lines per request: that cost is part of what users get, so they go to a file like
  // a real deployment's, not to this process (which would spend the benchmark's CPU reading them).
  const logFd = openSync(logFile, 'a');
  const child = spawn(process.execPath, ['scripts/start.ts'], {
    cwd: root,
    env: { ...inherited, DATA_DIR: dataDir, PORT: String(port), ...env },
    stdio: ['ignore', logFd, 'inherit'],
  });
  closeSync(logFd);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 180_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`le service s’est arrêté au démarrage (code ${child.exitCode})`);
    const up = await fetch(`${url}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (up) break;
    if (Date.now() > deadline) throw new Error('le service ne répond pas après 180 s');
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  // The api answers before the start is over (sandbox and demonstration data loaded, worker started): measures wait
  // for the addresses the start prints last.
  while (!/^Admin\s/m.test(await readFile(logFile, 'utf8'))) {
    if (child.exitCode !== null) throw new Error(`le service s’est arrêté au démarrage (code ${child.exitCode})`);
    if (Date.now() > deadline) throw new Error('le démarrage ne s’achève pas après 180 s');
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const adminToken = (await readFile(path.join(dataDir, 'admin-token'), 'utf8')).trim();
  const admin: Service['admin'] = async (method, route, body) => {
    const res = await fetch(`${url}/admin/v1${route}`, {
      method,
      headers: {
        authorization: `Bearer ${adminToken}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`${method} ${route}: ${res.status} ${await res.text()}`);
    return res.json();
  };
  const cliEnv: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir };
  delete cliEnv.DATABASE_URL;
  delete cliEnv.TEMPORAL_ADDRESS;
  return {
    url,
    pid: child.pid!,
    adminToken,
    logFile,
    cliEnv,
    admin,
    async organisation(org = {}) {
      const created = await admin('POST', '/organisations', {
        nom: 'Bench',
        acces: 'data',
        quota_minute: 1_000_000,
        ...org,
      });
      const key = await admin('POST', `/organisations/${created.id}/cles`, { mode: 'live' });
      return { id: created.id, cle: key.cle };
    },
    async stop() {
      child.kill('SIGTERM');
      await exited;
      // BENCH_GARDER=1 keeps the service's folder (its log, its database) to look into a run afterwards.
      if (!process.env.BENCH_GARDER) await rm(dataDir, { recursive: true, force: true });
    },
  };
}
