/**
 * Pipeline overhead: an authenticated, billed read (key check, scope/tier/sandbox/credits/rate checks, handler, ETag,
 * billing, headers, credits block) against a bare Fastify route returning the same JSON, side by side in one run.
 * The billed read is `taxe_amenagement` (1 credit). Two cases: the same request again and again (the first answer is
 * debited, the identical ones within 24 h are not: billing still decides each time), and a new request each time
 * (every answer debited: one ledger write per call, all serialised on the organisation's row lock).
 */
import autocannon from 'autocannon';
import Fastify from 'fastify';
import { benchDatabase } from './database.ts';
import { machine, writeSection } from './results.ts';
import { buildApp } from '../api/app.ts';
import { createDb } from '../db/client.ts';
import { migrate } from '../db/migrate.ts';
import { loadConfig } from '../lib/config.ts';

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
const CONNECTIONS = 20;
const ADMIN = 'adm_bench_0123456789abcdef';

async function run(url: string, headers: Record<string, string>, setupRequest?: (req: any, ctx: any) => any) {
  const result = await autocannon({
    url,
    connections: CONNECTIONS,
    duration: DURATION_S,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    requests: [{ setupRequest }],
  });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
  };
}

const database = await benchDatabase('pipeline');
const db = createDb(database.url, 10);
await migrate(db);
const config = loadConfig({ ADMIN_TOKEN: ADMIN, LOG_LEVEL: 'warn' });
const app = await buildApp({ config, db });
const apiUrl = await app.listen({ port: 0, host: '127.0.0.1' });

const inject = (url: string, payload: unknown) =>
  app.inject({ method: 'POST', url, headers: { authorization: `Bearer ${ADMIN}` }, payload: payload as object });
const org = (await inject('/admin/v1/organisations', { nom: 'Bench', acces: 'data', quota_minute: 1_000_000 })).json();
const key = (await inject(`/admin/v1/organisations/${org.id}/cles`, { mode: 'live' })).json();

// Both sides answer the same JSON payload.
const body = (surface: number) => JSON.stringify({ insee: '33234', surface_taxable_creee_m2: surface });
const sample = await app.inject({
  method: 'POST',
  url: '/api/v1/fiscal/taxe-amenagement',
  headers: { authorization: `Bearer ${key.cle}`, 'content-type': 'application/json' },
  payload: body(100),
});
if (sample.statusCode !== 200) throw new Error(`billed read failed: ${sample.body}`);
const payload = sample.body;
const bare = Fastify({ logger: false });
bare.post('/bare', async (_req, reply) => reply.type('application/json; charset=utf-8').send(payload));
const bareUrl = await bare.listen({ port: 0, host: '127.0.0.1' });

const same = (req: any) => ({ ...req, body: body(100) });
let n = 0;
// Surfaces up to 100 000 m² with two decimals: ten million distinct requests, never twice the same in a run.
const fresh = (req: any) => ({ ...req, body: body(10 + (n++ % 9_999_000) / 100) });
const billedUrl = `${apiUrl}/api/v1/fiscal/taxe-amenagement`;
const auth = { authorization: `Bearer ${key.cle}` };
const bareResult = await run(`${bareUrl}/bare`, {}, same);
const billedSame = await run(billedUrl, auth, same);
const billedFresh = await run(billedUrl, auth, fresh);
const ratio = billedSame.rps / bareResult.rps;

const debits = await db.query(
  `SELECT count(*)::int AS n FROM mouvements WHERE organisation_id = $1 AND genre = 'debit'`,
  [org.id],
);
await app.close();
await bare.close();
await db.end();
await database.close();

await writeSection(
  'Pipeline overhead',
  [
    `Machine: ${machine()}, ${database.label}.`,
    `autocannon, ${CONNECTIONS} connections, ${DURATION_S} s per row, load generator on the same machine as the server.`,
    '',
    '| route | req/s | p50 ms | p99 ms | non-2xx | vs bare |',
    '|---|---|---|---|---|---|',
    `| bare Fastify, same JSON | ${bareResult.rps.toFixed(0)} | ${bareResult.p50} | ${bareResult.p99} | ${bareResult.non2xx} | 100 % |`,
    `| billed read, same request (identical answers not debited) | ${billedSame.rps.toFixed(0)} | ${billedSame.p50} | ${billedSame.p99} | ${billedSame.non2xx} | ${((billedSame.rps / bareResult.rps) * 100).toFixed(1)} % |`,
    `| billed read, new request each time (each answer debited) | ${billedFresh.rps.toFixed(0)} | ${billedFresh.p50} | ${billedFresh.p99} | ${billedFresh.non2xx} | ${((billedFresh.rps / bareResult.rps) * 100).toFixed(1)} % |`,
    '',
    `Ratio billed / bare (same JSON): **${(ratio * 100).toFixed(1)} %** (target ≥ 50 %). Debits written: ${debits.rows[0].n}.`,
    'Each debit is one durable transaction under the organisation row lock (commits wait for the WAL flush): the',
    'second row is the ledger’s throughput for one organisation, the first what a client re-reading pays.',
  ].join('\n'),
);
