/**
 * The task runtime on a real Temporal dev server, run by `node bench/tasks.ts`: POST-to-202 latency of a task
 * operation against a bare `client.workflow.start` on the same server, and the delay between a task's end and the
 * return of a client waiting on it with `attendre`. Figures go to bench/RESULTS.md.
 */
import { randomBytes } from 'node:crypto';
import { createActivities } from '../activities/index.ts';
import { buildApp } from '../api/app.ts';
import { createDb } from '../db/client.ts';
import { migrate } from '../db/migrate.ts';
import { loadConfig } from '../lib/config.ts';
import { createOutboundHttp } from '../lib/outbound-http.ts';
import { connectTemporal, createTemporalEngine } from '../lib/temporal.ts';
import { startTemporalDevServer } from '../scripts/temporal-server.ts';
import { startWorker } from '../worker/worker.ts';
import { benchDatabase } from './database.ts';
import { machine, writeSection } from './results.ts';

const N = Number(process.env.BENCH_TASKS ?? 200);
const ADMIN = 'adm_bench_0123456789abcdef';
const TASK_QUEUE = 'bench';

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};
const ms = (n: number) => n.toFixed(1);

const database = await benchDatabase('tasks');
const db = createDb(database.url, 10);
await migrate(db);
const temporalServer = await startTemporalDevServer({ headless: true });
const temporal = await connectTemporal(temporalServer.address);
const engine = createTemporalEngine(temporal.client, { taskQueue: TASK_QUEUE, delaisLivraisonS: [1] });
const worker = await startWorker({
  address: temporalServer.address,
  taskQueue: TASK_QUEUE,
  activities: createActivities({
    db,
    model: null,
    outbound: createOutboundHttp({ allowLoopback: false }),
    modelConcurrency: 2,
  }),
});
const app = await buildApp({
  config: loadConfig({ ADMIN_TOKEN: ADMIN, LOG_LEVEL: 'warn' }),
  db,
  services: { tasks: engine },
});
const base = await app.listen({ port: 0, host: '127.0.0.1' });
const admin = (url: string, payload: unknown) =>
  app
    .inject({ method: 'POST', url, headers: { authorization: `Bearer ${ADMIN}` }, payload: payload as object })
    .then((r) => r.json());
const org = await admin('/admin/v1/organisations', { nom: 'Bench', acces: 'usage', quota_minute: 1_000_000 });
await admin(`/admin/v1/organisations/${org.id}/credits`, { credits: 1_000_000, motif: 'bench' });
const key = await admin(`/admin/v1/organisations/${org.id}/cles`, { mode: 'live' });
const headers = { authorization: `Bearer ${key.cle}`, 'content-type': 'application/json' };

// A point without any zone: the task ends as soon as it has looked, so the figures are the runtime's own.
const body = (i: number) => JSON.stringify({ lat: 45 + i / 1e5, lon: 1.5, themes: ['hauteur'] });

const post: number[] = [];
for (let i = 0; i < N; i++) {
  const t0 = performance.now();
  const res = await fetch(`${base}/api/v1/urbanisme/reglements`, { method: 'POST', headers, body: body(i) });
  post.push(performance.now() - t0);
  if (res.status !== 202) throw new Error(`POST → ${res.status} ${await res.text()}`);
}
const bare: number[] = [];
for (let i = 0; i < N; i++) {
  const t0 = performance.now();
  // Same workflow type on a queue no worker polls: the start alone is measured.
  await temporal.client.workflow.start('lirePlu', {
    workflowId: `bare-${randomBytes(6).toString('hex')}`,
    taskQueue: 'bench-sans-worker',
    args: [{ tacheId: 'aucune', delaisLivraisonS: [1] }],
  });
  bare.push(performance.now() - t0);
}

const delays: number[] = [];
for (let i = 0; i < 50; i++) {
  const started: any = await (
    await fetch(`${base}/api/v1/urbanisme/reglements`, { method: 'POST', headers, body: body(N + i) })
  ).json();
  const res = await fetch(`${base}${started.tache.resultat_url}?attendre=30`, { headers });
  const returned = Date.now();
  const done: any = await res.json();
  if (done.tache.statut !== 'terminee') throw new Error(`tâche ${done.tache.statut}`);
  delays.push(returned - Date.parse(done.tache.termine_le));
}

await app.close();
await worker.stop();
await temporal.close();
await temporalServer.stop();
await db.end();
await database.close();

await writeSection(
  'Task runtime',
  [
    `Machine: ${machine()}; Temporal dev server (in memory) and ${database.label} on the same machine.`,
    `${N} sequential calls each; tasks on a point without zone (they end as soon as the zone is looked up).`,
    '',
    '| measure | p50 ms | p95 ms | p99 ms |',
    '|---|---|---|---|',
    `| POST /urbanisme/reglements → 202 (key, checks, reservation, task row, workflow start) | ${ms(percentile(post, 50))} | ${ms(percentile(post, 95))} | ${ms(percentile(post, 99))} |`,
    `| bare \`client.workflow.start\` | ${ms(percentile(bare, 50))} | ${ms(percentile(bare, 95))} | ${ms(percentile(bare, 99))} |`,
    `| task end (\`termine_le\`) → return of a waiting \`attendre\` (50 tasks) | ${ms(percentile(delays, 50))} | ${ms(percentile(delays, 95))} | ${ms(percentile(delays, 99))} |`,
  ].join('\n'),
);
process.exit(0);
