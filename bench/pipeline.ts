/**
 * What users get from the request pipeline. Three processes, so that none starves another's event loop: the service
 * as `npm start` runs it (bench/service.ts: embedded PostgreSQL, Temporal dev server, worker, logs at the default
 * level to a file), a bare Fastify route serving the same JSON (`node bench/pipeline.ts --bare`), and the load
 * generator (`node bench/pipeline.ts --load`, autocannon), started afresh for each measure.
 *
 * Cases: the bare route; `taxe_amenagement` (1 credit) with the same request again and again (the first answer is
 * debited, the identical ones within 24 h are not: billing still decides each time); the same operation with a new
 * request each time (every answer debited); `/health`. They run in short rounds, alternately in the order A B C D and
 * D C B A, so that a drift of the machine's speed (this VM's drifts by a third within minutes) weighs on every case
 * alike; each billed figure is compared with the bare route of its own round. Then task latencies, one call at a
 * time: POST → 202 of `lire_plu` on a point no zone covers (the task needs no model and ends as soon as it has
 * looked), and the delay between a task's end and the return of a client waiting on it with `attendre`.
 */
import { spawn } from 'node:child_process';
import { createReadStream, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import Fastify from 'fastify';
import { machine, writeSection } from './results.ts';
import { startService } from './service.ts';

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const WARMUP_S = 3;
const CONNECTIONS = 32;
const TASKS = Number(process.env.BENCH_TASKS ?? 200);
const WAITS = 30;
/** Fresh requests of one load run are numbered from its own offset, so that no two runs send the same body. */
const FRESH_PER_RUN = 1_000_000;

type Kind = 'same' | 'fresh' | 'none';
export interface LoadSpec {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  kind: Kind;
  offset: number;
  duration: number;
}
export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  ok: number;
  non2xx: number;
  errors: number;
  /** CPU time of the server's process (all its threads) per answer, in µs. */
  cpuUs?: number;
  /** CPU time of the server's other processes (the service's PostgreSQL, Temporal and worker) per answer, in µs. */
  autresCpuUs?: number;
}

/** `taxe_amenagement`'s body; surfaces of 10 to 100 000 m² with two decimals: ten million distinct requests. */
const body = (surface: number) => JSON.stringify({ insee: '33234', surface_taxable_creee_m2: surface });
const freshBody = (n: number) => body(10 + (n % 9_999_000) / 100);

/** Runs `node bench/pipeline.ts <args>` and resolves with the first line it prints. */
function child(args: string[], untilExit: boolean): Promise<{ line: string; pid: number; stop(): void }> {
  const proc = spawn(process.execPath, [import.meta.filename, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (chunk) => {
      out += chunk;
      if (!untilExit && out.includes('\n'))
        resolve({ line: out.trim(), pid: proc.pid!, stop: () => proc.kill('SIGTERM') });
    });
    proc.once('exit', (code) => {
      if (code === 0 && untilExit) resolve({ line: out.trim(), pid: proc.pid!, stop: () => {} });
      else reject(new Error(`node bench/pipeline.ts ${args[0]} : code ${code}`));
    });
  });
}

/**
 * CPU time a process has used so far, its threads included, in ms (Linux: /proc, 100 ticks a second). Less sensitive
 * than req/s to what else the machine runs, so that a change of the service's own cost shows on a shared machine.
 */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** The processes started by `pid`, at any depth (Linux: /proc). */
function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // Gone meanwhile.
    }
  }
  const out: number[] = [];
  const walk = (p: number) => (children.get(p) ?? []).forEach((c) => (out.push(c), walk(c)));
  walk(pid);
  return out;
}

/**
 * CPU time of the processes `pid` started, at any depth, in ms: each one's own and that of its children it has
 * reaped, so that a PostgreSQL backend ending during a run still counts (in its postmaster's).
 */
function cpuMsOfDescendants(pid: number): number {
  return descendants(pid).reduce((sum, p) => {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return sum + (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * 10;
    } catch {
      return sum;
    }
  }, 0);
}

/** One load run against the server of process `server`, by a load generator in a process of its own. */
export async function load(spec: LoadSpec, server: number): Promise<LoadResult> {
  const cpu = cpuMs(server);
  const othersCpu = cpuMsOfDescendants(server);
  const result: LoadResult = JSON.parse((await child(['--load', JSON.stringify(spec)], true)).line);
  const answers = Math.max(1, result.ok + result.non2xx);
  return {
    ...result,
    cpuUs: ((cpuMs(server) - cpu) * 1000) / answers,
    autresCpuUs: ((cpuMsOfDescendants(server) - othersCpu) * 1000) / answers,
  };
}

const loadAverage = () =>
  os
    .loadavg()
    .map((n) => n.toFixed(1))
    .join(' / ');

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Lines of the service's log and, among them, pino's "request completed" lines. */
async function countLogLines(file: string): Promise<{ lines: number; completed: number }> {
  let lines = 0;
  let completed = 0;
  for await (const line of createInterface({ input: createReadStream(file) })) {
    lines += 1;
    if (line.startsWith('{') && line.includes('"msg":"request completed"')) completed += 1;
  }
  return { lines, completed };
}

async function main() {
  const service = await startService();
  let bareServer: { stop(): void } | undefined;
  try {
    const org = await service.organisation();
    await service.admin('POST', `/organisations/${org.id}/credits`, { credits: 100_000_000, motif: 'bench' });
    const auth = { authorization: `Bearer ${org.cle}` };
    const billedUrl = `${service.url}/api/v1/fiscal/taxe-amenagement`;
    const billed = async (payload: string) => {
      const res = await fetch(billedUrl, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: payload,
      });
      if (res.status !== 200) throw new Error(`taxe_amenagement → ${res.status} ${await res.text()}`);
      return { text: await res.text(), restants: Number(res.headers.get('svc-credits-restants')) };
    };
    const sample = await billed(body(100));

    const bare = await child(['--bare', sample.text], false);
    bareServer = bare;
    let offset = 0;
    const cases = {
      bare: (duration: number) =>
        load({ url: `${bare.line}/bare`, method: 'POST', headers: {}, kind: 'same', offset: 0, duration }, bare.pid),
      same: (duration: number) =>
        load({ url: billedUrl, method: 'POST', headers: auth, kind: 'same', offset: 0, duration }, service.pid),
      fresh: (duration: number) =>
        load(
          {
            url: billedUrl,
            method: 'POST',
            headers: auth,
            kind: 'fresh',
            offset: (offset += FRESH_PER_RUN),
            duration,
          },
          service.pid,
        ),
      health: (duration: number) =>
        load(
          { url: `${service.url}/health`, method: 'GET', headers: {}, kind: 'none', offset: 0, duration },
          service.pid,
        ),
    };
    type Case = keyof typeof cases;
    const order = Object.keys(cases) as Case[];

    const loadBefore = loadAverage();
    let freshAnswers = 0;
    for (const name of order) {
      const warm = await cases[name](WARMUP_S);
      if (name === 'fresh') freshAnswers += warm.ok;
    }
    const results: Record<Case, LoadResult[]> = { bare: [], same: [], fresh: [], health: [] };
    for (let round = 0; round < ROUNDS; round++) {
      for (const name of round % 2 ? [...order].reverse() : order) {
        const result = await cases[name](DURATION_S);
        console.log(`round ${round + 1} ${name}: ${JSON.stringify(result)}`);
        results[name].push(result);
        if (name === 'fresh') freshAnswers += result.ok;
      }
    }
    // Every answer to a new request must have been debited, else the case measures something else.
    const debited = sample.restants - (await billed(freshBody(offset + FRESH_PER_RUN))).restants - 1;
    const freshRuns = ROUNDS + 1;
    const allDebited = debited >= freshAnswers && debited <= freshAnswers + CONNECTIONS * freshRuns;

    const headers = { ...auth, 'content-type': 'application/json' };
    // A point no PLU zone covers, a new one each time (no identical request within 24 h).
    let point = 0;
    const startTask = async () => {
      const t0 = performance.now();
      const res = await fetch(`${service.url}/api/v1/urbanisme/reglements`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ lat: 45 + point++ / 1e5, lon: 1.5, themes: ['hauteur'] }),
      });
      const elapsed = performance.now() - t0;
      if (res.status !== 202) throw new Error(`POST /urbanisme/reglements → ${res.status} ${await res.text()}`);
      return { elapsed, tache: ((await res.json()) as any).tache as { resultat_url: string } };
    };
    const waitTask = async (resultatUrl: string) => {
      const res = await fetch(`${service.url}${resultatUrl}?attendre=30`, { headers: auth });
      const returned = Date.now();
      const done: any = await res.json();
      if (done.tache.statut !== 'terminee') throw new Error(`tâche ${done.tache.statut}`);
      return returned - Date.parse(done.tache.termine_le);
    };
    // The worker's first tasks pay its warm-up.
    for (let i = 0; i < 5; i++) await waitTask((await startTask()).tache.resultat_url);
    const waits: number[] = [];
    for (let i = 0; i < WAITS; i++) waits.push(await waitTask((await startTask()).tache.resultat_url));
    const posts: number[] = [];
    for (let i = 0; i < TASKS; i++) posts.push((await startTask()).elapsed);

    const loadAfter = loadAverage();
    const logs = await countLogLines(service.logFile);

    const row = (label: string, name: Case) => {
      const r = results[name];
      const ratios = r.map((x, i) => x.rps / results.bare[i]!.rps);
      const non2xx = r.reduce((sum, x) => sum + x.non2xx + x.errors, 0);
      return `| ${label} | ${median(r.map((x) => x.rps)).toFixed(0)} | ${median(r.map((x) => x.p50))} | ${median(r.map((x) => x.p99))} | ${non2xx} | ${median(r.map((x) => x.cpuUs!)).toFixed(0)} | ${median(r.map((x) => x.autresCpuUs!)).toFixed(0)} | ${median(ratios).toFixed(2)} (${ratios.map((x) => x.toFixed(2)).join(', ')}) |`;
    };
    const ms = (n: number) => n.toFixed(1);
    await writeSection(
      'Pipeline overhead',
      [
        `Machine: ${machine()}.`,
        'The service as `npm start` runs it (embedded PostgreSQL 18, Temporal dev server and worker, logs at the default',
        'level written to a file), the bare route and the load generator (autocannon) each in a process of its own;',
        `${CONNECTIONS} connections, ${ROUNDS} rounds of ${DURATION_S} s per case, alternately A B C D and D C B A, after a`,
        `${WARMUP_S} s warm-up of each. Figures: medians over the rounds; "vs bare" compares each round with the bare`,
        'route of the same round (per round in brackets). Server CPU: the CPU time of the process that answers (the',
        "service's api; the bare route's), all its threads, per answer: less sensitive than req/s to the machine's",
        'other work; beside it, that of the processes the service started (its PostgreSQL, Temporal dev server and',
        'worker). Load average (1 / 5 / 15 min) before the runs:',
        `${loadBefore}, after them: ${loadAfter}.`,
        '',
        '| route | req/s | p50 ms | p99 ms | non-2xx and errors | server CPU µs per answer | its other processes, µs | vs bare |',
        '|---|---|---|---|---|---|---|---|',
        row('bare Fastify, POST, same JSON', 'bare'),
        row('`taxe_amenagement`, same request again and again (identical answers within 24 h not debited)', 'same'),
        row('`taxe_amenagement`, a new request each time (every answer debited)', 'fresh'),
        row('`GET /health` (one `SELECT 1`)', 'health'),
        '',
        `Credits debited during the new-request runs: ${debited}, for ${freshAnswers} answers counted by the load`,
        `generator, which stops counting with up to ${CONNECTIONS} requests in flight per run (${freshRuns} runs), served and debited all`,
        `the same${allDebited ? '' : ': **not every answer was debited, this row measures something else**'}. Log lines written by the service: ${logs.lines}, of which ${logs.completed} "request completed".`,
        '',
        `Tasks, one call at a time: \`lire_plu\` on a point no zone covers (no model needed; the task ends once it has looked).`,
        '',
        '| measure | p50 ms | p99 ms |',
        '|---|---|---|',
        `| POST /urbanisme/reglements → 202 (${TASKS} calls) | ${ms(percentile(posts, 50))} | ${ms(percentile(posts, 99))} |`,
        `| task end (\`termine_le\`) → return of a waiting \`attendre\` (${WAITS} tasks) | ${ms(percentile(waits, 50))} | ${ms(percentile(waits, 99))} |`,
      ].join('\n'),
    );
  } finally {
    bareServer?.stop();
    await service.stop();
  }
}

if (process.argv[2] === '--bare') {
  // The framework alone: parses the JSON body and answers the payload the billed read answers.
  const payload = process.argv[3]!;
  const bare = Fastify({ logger: false });
  bare.post('/bare', async (_request, reply) => reply.type('application/json; charset=utf-8').send(payload));
  console.log(await bare.listen({ port: 0, host: '127.0.0.1' }));
} else if (process.argv[2] === '--load') {
  const spec = JSON.parse(process.argv[3]!) as LoadSpec;
  let n = spec.offset;
  const setupRequest =
    spec.kind === 'same'
      ? (req: any) => ({ ...req, body: body(100) })
      : spec.kind === 'fresh'
        ? (req: any) => ({ ...req, body: freshBody(n++) })
        : undefined;
  const result = await autocannon({
    url: spec.url,
    connections: CONNECTIONS,
    duration: spec.duration,
    method: spec.method,
    headers: spec.kind === 'none' ? spec.headers : { 'content-type': 'application/json', ...spec.headers },
    ...(setupRequest ? { requests: [{ setupRequest }] } : {}),
  });
  const out: LoadResult = {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    ok: result['2xx'],
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
  console.log(JSON.stringify(out));
} else if (import.meta.main) {
  // Run as a script; imported (bench/ab.ts uses `load`), nothing runs.
  await main();
}
