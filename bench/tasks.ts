/**
 * The task runtime as users get it, run by `npm run bench -- tasks`: the service as `npm start` runs it (its own
 * process: api and worker, embedded PostgreSQL, default log level), measured from this process, on a Temporal dev
 * server of this benchmark, once with its history in memory and once in a SQLite file as `npm start` keeps it.
 * POST→202 of a task operation alternates with a bare `client.workflow.start` on the same server, so both meet the
 * same load, at rest (one task at a time, each awaited with `attendre`: the delay between its end and the waiting
 * client's answer) and in a stream of starts. Figures go to bench/RESULTS.md.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os, { tmpdir } from 'node:os';
import path from 'node:path';
import { connectTemporal } from '../lib/temporal.ts';
import { startTemporalDevServer } from '../scripts/temporal-server.ts';
import { machine, writeSection } from './results.ts';
import { startService } from './service.ts';

const N = Number(process.env.BENCH_TASKS ?? 200);
const WARM_UP = 20;

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};
const figures = (values: number[]) => [50, 95, 99].map((p) => percentile(values, p).toFixed(1)).join(' | ');

async function measure(history: 'memory' | 'sqlite') {
  const temporalDir = await mkdtemp(path.join(tmpdir(), 'svc-bench-temporal-'));
  const temporalServer = await startTemporalDevServer({
    dbFile: history === 'sqlite' ? path.join(temporalDir, 'temporal.db') : undefined,
    headless: true,
  });
  const service = await startService({ TEMPORAL_ADDRESS: temporalServer.address });
  const temporal = await connectTemporal(temporalServer.address);
  try {
    const { cle } = await service.organisation();
    const headers = { authorization: `Bearer ${cle}`, 'content-type': 'application/json' };
    // Points at sea, each its own: no zone there, so a task ends as soon as it has looked, and the figures are the
    // runtime's own (no model, no PDF).
    let point = 0;
    const start = async () => {
      point += 1;
      const t0 = performance.now();
      const res = await fetch(`${service.url}/api/v1/urbanisme/reglements`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ lat: 46 + point / 1e5, lon: -4, themes: ['hauteur'] }),
      });
      const ms = performance.now() - t0;
      const body: any = await res.json();
      if (res.status !== 202) throw new Error(`POST → ${res.status} ${JSON.stringify(body)}`);
      return { ms, body };
    };
    // Same workflow type on a queue no worker polls: the start alone.
    const bare = async () => {
      const t0 = performance.now();
      await temporal.client.workflow.start('lirePlu', {
        workflowId: `nu-${randomBytes(8).toString('hex')}`,
        taskQueue: 'bench-sans-worker',
        args: [{ tacheId: 'aucune', delaisLivraisonS: [1] }],
      });
      return performance.now() - t0;
    };

    for (let i = 0; i < WARM_UP; i++) {
      await start();
      await bare();
    }
    // At rest: each start when the previous task has ended, its client then waiting for it with `attendre` sent on
    // the 202, so that its answer should leave with the task's end.
    const rest = { posts: [] as number[], bares: [] as number[] };
    const afterEnd: number[] = [];
    const runs: number[] = [];
    for (let i = 0; i < N; i++) {
      // Alternated, each first in turn: neither always follows the other's aftermath.
      if (i % 2) rest.bares.push(await bare());
      const { ms, body } = await start();
      rest.posts.push(ms);
      if (!(i % 2)) rest.bares.push(await bare());
      const res = await fetch(`${service.url}${body.tache.resultat_url}?attendre=30`, { headers });
      const returned = Date.now();
      const done: any = await res.json();
      if (done.tache.statut !== 'terminee')
        throw new Error(`tâche ${done.tache.statut} ${JSON.stringify(done.erreur)}`);
      afterEnd.push(returned - Date.parse(done.tache.termine_le));
      runs.push(Date.parse(done.tache.termine_le) - Date.parse(done.tache.cree_le));
    }
    // A stream of starts: each task runs in the service while the next ones start.
    const stream = { posts: [] as number[], bares: [] as number[] };
    for (let i = 0; i < N; i++) {
      if (i % 2) stream.bares.push(await bare());
      stream.posts.push((await start()).ms);
      if (!(i % 2)) stream.bares.push(await bare());
    }
    return { rest, stream, afterEnd, runs };
  } finally {
    await temporal.close();
    await service.stop();
    await temporalServer.stop();
    await rm(temporalDir, { recursive: true, force: true });
  }
}

const load = os.loadavg()[0].toFixed(1);
const memory = await measure('memory');
const sqlite = await measure('sqlite');
const rows = (label: string, pick: (m: typeof memory) => number[]) => [
  `| ${label} | memory | ${figures(pick(memory))} |`,
  `| | SQLite (\`npm start\`) | ${figures(pick(sqlite))} |`,
];
await writeSection(
  'Task runtime',
  [
    `Machine: ${machine()}; load average ${load} when the run began. The service as \`npm start\` runs it (api and worker each in a process of its own, embedded PostgreSQL 18, logs at the default level), its Temporal dev server's history in memory, then in a SQLite file as \`npm start\` keeps it; the client in a process of its own. Tasks on points without zone: they end as soon as the zone is looked up.`,
    `At rest: ${N} tasks one after the other, each started when the previous one has ended and awaited by \`GET …?attendre=30\` sent on its 202, a bare start beside each. Stream: ${N} starts back to back, each task running in the service while the next ones start, a bare start beside each. Bare starts are of the same workflow type on a queue no worker polls, on the same server, alternated with the POSTs (after ${WARM_UP} of each to warm up).`,
    '',
    '| measure | Temporal history | p50 ms | p95 ms | p99 ms |',
    '|---|---|---|---|---|',
    ...rows(
      'POST /urbanisme/reglements → 202, at rest (key, checks, reservation and task row; the workflow is started beside the answer)',
      (m) => m.rest.posts,
    ),
    ...rows('bare `client.workflow.start`, at rest', (m) => m.rest.bares),
    ...rows('POST → 202, stream of starts', (m) => m.stream.posts),
    ...rows('bare `client.workflow.start`, stream of starts', (m) => m.stream.bares),
    ...rows('task end (`termine_le`) → return of the waiting `attendre`', (m) => m.afterEnd),
    ...rows('task run, `cree_le` → `termine_le` (for scale)', (m) => m.runs),
  ].join('\n'),
);
process.exit(0);
