/**
 * Schemathesis against the service: every operation of the OpenAPI description, valid and invalid data
 * (`--mode all`), the examples, coverage, fuzzing and stateful phases (links between operations), NUL bytes and lone
 * surrogates included, with the checks that no answer is a 5xx and that every answer is as described.
 *
 *   npm run fuzz                                  the deep campaign: a service it starts, 1 000 examples per operation
 *   ST_EXAMPLES=100 ST_SEED=7 npm run fuzz        fewer examples, another seed
 *   ST_OPERATIONS=annonce,flux_annonces npm run fuzz   only these operations (operationIds): a new domain's deep campaign
 *   node scripts/fuzz.ts --url <base> --cle <key> a service already running (CI's smoke run)
 *
 * The seed is fixed (ST_SEED, 2 by default) so that a red run replays as it failed. Generating the cases is
 * schemathesis's own work on one core (its workers are threads of one Python process), so the time grows with the
 * examples times the operations: CI runs a share sized to its budget, this script's default is the deep campaign.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, openSync } from 'node:fs';
import { mkdtemp, readFile, rm, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { freePort } from '../lib/net.ts';
import { schemaReply, startModelServer } from '../test/support/model-server.ts';
import { CACHE_DIR } from './temporal-server.ts';

/** The versions CI has run green; the cache's venv is shared by every clone on the machine. */
const SCHEMATHESIS = 'schemathesis==4.32.5';
const VENV = path.join(CACHE_DIR, 'schemathesis');
const CHECKS = [
  'not_a_server_error',
  'status_code_conformance',
  'content_type_conformance',
  'response_schema_conformance',
  'response_headers_conformance',
];

const { values } = parseArgs({ options: { url: { type: 'string' }, cle: { type: 'string' } } });
const examples = Number(process.env.ST_EXAMPLES ?? 1000);
const seed = process.env.ST_SEED ?? '2';
const operations = (process.env.ST_OPERATIONS ?? '').split(',').filter(Boolean);
if (!Number.isInteger(examples) || examples < 1) throw new Error(`ST_EXAMPLES must be a positive integer: ${examples}`);

/** `st` from ST_BIN, the cache's venv, PATH, or installed into the cache's venv once. */
function schemathesis(): string {
  if (process.env.ST_BIN) return process.env.ST_BIN;
  const cached = path.join(VENV, 'bin', 'st');
  if (existsSync(cached)) return cached;
  try {
    return execFileSync('sh', ['-c', 'command -v st'], { encoding: 'utf8' }).trim();
  } catch {
    console.log(`Installation de ${SCHEMATHESIS} dans ${VENV}, une seule fois…`);
    execFileSync('python3', ['-m', 'venv', VENV], { stdio: 'inherit' });
    execFileSync(path.join(VENV, 'bin', 'pip'), ['install', '-q', SCHEMATHESIS], { stdio: 'inherit' });
    return cached;
  }
}

/** The service as `npm start` runs it, with a scripted model so that the readings and the Hub answer. */
async function startService(): Promise<{ base: string; cle: string; stop: () => Promise<void> }> {
  const model = await startModelServer(schemaReply);
  const dataDir = await mkdtemp(path.join(tmpdir(), 'svc-fuzz-'));
  // As root, PostgreSQL's unprivileged user must reach its data folder.
  await chmod(dataDir, 0o755);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  // The service's lines (the worker's warnings about the tasks the fuzzing starts) go to a file that outlives the run,
  // so that schemathesis's report stays readable and a failure can be looked into.
  const journal = path.join(tmpdir(), `svc-fuzz-${port}.log`);
  const out = openSync(journal, 'w');
  console.log(`Journal du service : ${journal}`);
  const service: ChildProcess = spawn('npm', ['start'], {
    detached: true,
    stdio: ['ignore', out, out],
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      PORT: String(port),
      LOG_LEVEL: 'warn',
      OPENAI_BASE_URL: model.url,
      OPENAI_MODEL: 'modele-test',
      OPENAI_API_KEY: 'sk-fuzz',
      // Crashes are looked for at whatever hour: the evening window's 503 is tested with a clock (lib/config.ts).
      CRENEAU_LOURD: 'aucun',
    },
  });
  const stop = async () => {
    const ended = new Promise((resolve) => service.once('exit', resolve));
    if (service.exitCode === null) process.kill(-service.pid!, 'SIGTERM');
    await ended;
    await model.close();
    await rm(dataDir, { recursive: true, force: true });
  };
  for (let i = 0; ; i++) {
    if (service.exitCode !== null) throw new Error(`npm start ended with code ${service.exitCode}: see ${journal}`);
    if (
      await fetch(`${base}/health`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    if (i === 240) {
      await stop();
      throw new Error('the service did not answer /health within 2 minutes');
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  const adminToken = (await readFile(path.join(dataDir, 'admin-token'), 'utf8')).trim();
  const smoke = execFileSync(process.execPath, [path.join(import.meta.dirname, 'ci-smoke.ts'), base, adminToken], {
    encoding: 'utf8',
  });
  const cle = /^SVC_CLE=(.+)$/m.exec(smoke)?.[1];
  if (!cle) throw new Error(`no key from ci-smoke: ${smoke}`);
  return { base, cle, stop };
}

const st = schemathesis();
const service =
  values.url && values.cle ? { base: values.url, cle: values.cle, stop: async () => {} } : await startService();
console.log(`schemathesis: ${examples} exemples par opération, graine ${seed}, ${service.base}`);
const started = Date.now();
const run = spawn(
  st,
  [
    'run',
    `${service.base}/api/v1/openapi.json`,
    '--url',
    service.base,
    '-H',
    `Authorization: Bearer ${service.cle}`,
    '--checks',
    CHECKS.join(','),
    '--mode',
    'all',
    '--max-examples',
    String(examples),
    '--seed',
    seed,
    ...operations.flatMap((id) => ['--include-operation-id', id]),
    '--no-color',
  ],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
// Schemathesis closes on a pytest-style banner ("=== 2 warnings in 26.81s ===") that CI's reader takes for a pytest
// run of no test; the banners are reworded so that the test runner's counts stay the run's only closing line.
for await (const line of createInterface({ input: run.stdout! }))
  console.log(line.replace(/^=+ (.*[^=]) =+$/, '-- $1 --'));
const code: number = run.exitCode ?? (await new Promise((resolve) => run.once('exit', (c) => resolve(c ?? 1))));
console.log(`schemathesis: ${Math.round((Date.now() - started) / 1000)} s, code ${code}`);
await service.stop();
process.exit(code);
