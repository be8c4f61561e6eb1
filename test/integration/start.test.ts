import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chmod, cp, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../lib/net.ts';

const run = promisify(execFile);
const ROOT = process.getuid?.() === 0;
const IGNORED = new Set(['node_modules', '.git', '.data']);

/** A copy of this checkout under `parent` (node_modules hard-linked: same files, no copy of 800 MB). */
async function copyCheckout(parent: string): Promise<string> {
  const checkout = path.join(parent, 'checkout');
  await cp(process.cwd(), checkout, {
    recursive: true,
    filter: (source) => !IGNORED.has(path.relative(process.cwd(), source).split(path.sep)[0]!),
  });
  await run('cp', ['-al', path.resolve('node_modules'), path.join(checkout, 'node_modules')]);
  return checkout;
}

/** Every process whose command line names `place`: what a start left behind there. */
async function processesUnder(place: string): Promise<string[]> {
  const found: string[] = [];
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
    const cmdline = await run('cat', [`/proc/${pid}/cmdline`]).then(
      ({ stdout }) => stdout.replaceAll('\0', ' '),
      () => '',
    );
    if (cmdline.includes(place)) found.push(`${pid} ${cmdline}`);
  }
  return found;
}

interface Started {
  child: ChildProcess;
  output: () => string;
  exit: Promise<number | null>;
}

function start(checkout: string, env: NodeJS.ProcessEnv): Started {
  const child = spawn(process.execPath, ['scripts/start.ts'], {
    cwd: checkout,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exit };
}

/** Waits for the first 200 of /health; returns the problems it answered before (while the data was loading). */
async function healthy(port: number, started: Started): Promise<Array<{ code: string; detail: string }>> {
  const deadline = Date.now() + 150_000;
  const problems: Array<{ code: string; detail: string }> = [];
  while (Date.now() < deadline) {
    if (started.child.exitCode !== null)
      throw new Error(`npm start ended (${started.child.exitCode}):\n${started.output()}`);
    const res = await fetch(`http://127.0.0.1:${port}/health`).catch(() => null);
    if (res?.ok) return problems;
    if (res?.status === 503) problems.push((await res.json()) as { code: string; detail: string });
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`no /health after 150 s:\n${started.output()}`);
}

function baseEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'warn', NO_COLOR: '1' };
  for (const name of ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'DATA_DIR', 'ADMIN_TOKEN', 'VITEST', 'PORT'])
    delete env[name];
  return env;
}

// As root, PostgreSQL runs as another user, who cannot enter a folder of mode 700 (like a checkout under /root); as
// anyone else, the same test checks the ordinary start and stop.
describe('npm start from a folder only its owner may enter', () => {
  let parent: string;
  let rootDir: string;
  let checkout: string;

  beforeAll(async () => {
    // Like a checkout under /root: a folder only root may enter.
    parent = await mkdtemp(path.join(tmpdir(), 'svc-start-root-'));
    await chmod(parent, 0o700);
    rootDir = await mkdtemp(path.join(tmpdir(), 'svc-start-place-'));
    checkout = await copyCheckout(parent);
  }, 120_000);

  afterAll(async () => {
    await rm(parent, { recursive: true, force: true });
    await rm(rootDir, { recursive: true, force: true });
  });

  it('serves /health, says where PostgreSQL went, and leaves no process behind after SIGINT, then SIGTERM', async () => {
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      const port = await freePort();
      const started = start(checkout, { ...baseEnv(), PORT: String(port), EMBEDDED_PG_ROOT_DIR: rootDir });
      const loading = await healthy(port, started);
      if (signal === 'SIGINT') {
        // The first start: /health said what was loading, and at its first 200 the demonstration data serves.
        expect(loading.length).toBeGreaterThan(0);
        expect(loading[0]).toMatchObject({ code: 'service_indisponible', detail: expect.stringMatching(/Chargement/) });
        const keys = [...started.output().matchAll(/live \(personnelle\)\s+(pk_live_\w+)/g)].map((m) => m[1]);
        expect(keys).toHaveLength(1);
        const search = await fetch(`http://127.0.0.1:${port}/api/v1/adresses/recherche?q=rue%20des%20Pins%20Latresne`, {
          headers: { authorization: `Bearer ${keys[0]}` },
        });
        expect(search.status).toBe(200);
        expect(((await search.json()) as { candidats: unknown[] }).candidats.length).toBeGreaterThan(0);
      }
      expect(started.output()).toContain(`données sous ${ROOT ? rootDir : path.join(checkout, '.data', 'postgres')}`);
      expect(await processesUnder(ROOT ? rootDir : checkout)).not.toEqual([]);
      started.child.kill(signal);
      expect(await started.exit).toBe(0);
      expect(await processesUnder(rootDir)).toEqual([]);
      expect(await processesUnder(checkout)).toEqual([]);
    }
  }, 400_000);
});

describe('a start that cannot work', () => {
  it('ends on a wrong configuration with one sentence per wrong variable, code 1, no stack trace', async () => {
    const started = start(process.cwd(), {
      ...baseEnv(),
      ADMIN_TOKEN: 'court',
      PORT: 'quatre',
      STORAGE_S3_ENDPOINT: 'https://s3.example.fr',
    });
    expect(await started.exit).toBe(1);
    const lines = started.output().trim().split('\n');
    expect(lines[0]).toMatch(/^Configuration invalide/);
    expect(lines.filter((l) => /^Variable PORT : .*corrigez-la/.test(l))).toHaveLength(1);
    expect(lines.filter((l) => /^Variable ADMIN_TOKEN : .*16 caractères/.test(l))).toHaveLength(1);
    expect(started.output()).not.toMatch(/^\s+at /m);
  }, 60_000);

  it('ends on an S3 endpoint without its bucket and keys, naming each', async () => {
    const started = start(process.cwd(), { ...baseEnv(), STORAGE_S3_ENDPOINT: 'https://s3.example.fr' });
    expect(await started.exit).toBe(1);
    for (const name of ['STORAGE_S3_BUCKET', 'STORAGE_S3_ACCESS_KEY_ID', 'STORAGE_S3_SECRET_ACCESS_KEY']) {
      expect(started.output()).toMatch(new RegExp(`^Variable ${name} : requise quand STORAGE_S3_ENDPOINT`, 'm'));
    }
    expect(started.output()).not.toMatch(/^\s+at /m);
  }, 60_000);

  it('ends with one sentence that says what to do, and a non-zero code', async () => {
    const parent = await mkdtemp(path.join(tmpdir(), 'svc-start-fail-'));
    try {
      const started = start(process.cwd(), {
        ...baseEnv(),
        DATA_DIR: parent,
        PORT: String(await freePort()),
        // A port where nothing listens: the database is unreachable.
        DATABASE_URL: `postgres://svc:x@127.0.0.1:${await freePort()}/svc`,
        TEMPORAL_ADDRESS: inject('temporalAddress'),
      });
      expect(await started.exit).toBe(1);
      expect(started.output()).toMatch(
        /Le service n’a pas démarré : PostgreSQL de DATABASE_URL injoignable .*DATABASE_URL/,
      );
      expect(started.output()).not.toMatch(/^\s+at /m);
    } finally {
      await rm(parent, { recursive: true, force: true });
    }
  }, 60_000);
});
