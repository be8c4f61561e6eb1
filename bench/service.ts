/**
 * The service as users get it: `node scripts/start.ts` (what `npm start` runs) in a process of its own, on a fresh
 * DATA_DIR (embedded PostgreSQL 18, Temporal dev server, the demonstration data), with logs at the default level.
 * Benchmarks measure it from other processes.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../lib/net.ts';

export interface Service {
  url: string;
  adminToken: string;
  /** A new organisation and a live key of it, through the admin API. */
  organisation(org?: Record<string, unknown>): Promise<{ id: string; cle: string }>;
  stop(): Promise<void>;
}

export async function startService(env: Record<string, string> = {}): Promise<Service> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'svc-bench-service-'));
  const port = await freePort();
  const root = path.resolve(import.meta.dirname, '..');
  const child = spawn(process.execPath, ['scripts/start.ts'], {
    cwd: root,
    env: { ...process.env, DATA_DIR: dataDir, PORT: String(port), ...env },
    // The default log level writes a line per request: that cost is part of what users get, so it goes to a file
    // descriptor like a real deployment's, not to this process.
    stdio: ['ignore', 'ignore', 'inherit'],
  });
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
  // The embedded default writes its admin token once the api is up.
  let adminToken = '';
  while (!adminToken) {
    adminToken = (await readFile(path.join(dataDir, 'admin-token'), 'utf8').catch(() => '')).trim();
    if (!adminToken) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const admin = async (route: string, body: unknown): Promise<any> => {
    const res = await fetch(`${url}/admin/v1${route}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`${route}: ${res.status} ${await res.text()}`);
    return res.json();
  };
  return {
    url,
    adminToken,
    async organisation(org = {}) {
      const created = await admin('/organisations', { nom: 'Bench', acces: 'data', quota_minute: 1_000_000, ...org });
      const key = await admin(`/organisations/${created.id}/cles`, { mode: 'live' });
      return { id: created.id, cle: key.cle };
    },
    async stop() {
      child.kill('SIGTERM');
      await exited;
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
