/**
 * A change measured against the tree before it, on a machine whose speed drifts by a third within minutes: both
 * trees' services run at once (each as `npm start` runs it, bench/service.ts), and the load alternates between them
 * in short runs, A B then B A, so that the two runs of a pair see the same machine. The load is the pipeline
 * benchmark's (`node bench/pipeline.ts --load`, 32 connections): `taxe_amenagement` with a new request each time
 * (every answer debited), or the same request again and again.
 *
 *   node bench/ab.ts <other checkout> [pairs=10] [seconds=3] [fresh|same]
 *
 * A is the other checkout (the tree before the change, with its dependencies installed), B this one. Prints each
 * pair, then B's answers over A's, the pairs B won, and the medians of the api's CPU per answer and of p99.
 */
import path from 'node:path';
import { load, median, type LoadResult } from './pipeline.ts';
import { startService, type Service } from './service.ts';

const [other, pairsArg = '10', secondsArg = '3', kind = 'fresh'] = process.argv.slice(2);
if (!other || !['fresh', 'same'].includes(kind)) {
  console.error('usage : node bench/ab.ts <autre arbre> [paires=10] [secondes=3] [fresh|same]');
  process.exit(2);
}
const PAIRS = Number(pairsArg);
const SECONDS = Number(secondsArg);

const startFrom = async (root: string): Promise<Service> =>
  ((await import(path.resolve(root, 'bench/service.ts'))) as { startService: typeof startService }).startService();

/** The service with an organisation of ample credits, and its key. */
async function prepared(service: Service) {
  const org = await service.organisation();
  await service.admin('POST', `/organisations/${org.id}/credits`, { credits: 100_000_000, motif: 'bench' });
  return { service, key: org.cle };
}

// Each run's new requests start from their own offset, so that no two runs (nor the two services) send the same body.
let offset = 0;
const run = ({ service, key }: Awaited<ReturnType<typeof prepared>>, duration: number) =>
  load(
    {
      url: `${service.url}/api/v1/fiscal/taxe-amenagement`,
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      kind: kind as 'fresh' | 'same',
      offset: (offset += 1_000_000),
      duration,
    },
    service.pid,
  );

const services: Service[] = [];
try {
  services.push(await startFrom(other));
  services.push(await startService());
  const [a, b] = [await prepared(services[0]!), await prepared(services[1]!)];
  // Warm-up: each service's first answers pay its compilation and its memory's growth.
  for (const side of [a, b, a, b]) await run(side, 3);
  const runs: Array<{ a: LoadResult; b: LoadResult }> = [];
  for (let pair = 0; pair < PAIRS; pair++) {
    const [first, second] = pair % 2 === 0 ? [a, b] : [b, a];
    const one = await run(first, SECONDS);
    const two = await run(second, SECONDS);
    const result = first === a ? { a: one, b: two } : { a: two, b: one };
    runs.push(result);
    const line = (r: LoadResult) => `${r.rps.toFixed(0)} req/s, CPU ${r.cpuUs!.toFixed(0)} µs, p99 ${r.p99} ms`;
    const failures = result.a.non2xx + result.a.errors + result.b.non2xx + result.b.errors;
    console.log(
      `paire ${pair + 1} : A ${line(result.a)} | B ${line(result.b)}${failures ? ` | ${failures} échecs` : ''}`,
    );
  }
  const answers = (side: 'a' | 'b') => runs.reduce((sum, r) => sum + r[side].ok, 0);
  const won = runs.filter((r) => r.b.ok > r.a.ok).length;
  console.log(
    `B/A : ${(answers('b') / answers('a')).toFixed(3)} des réponses, ${won} paires sur ${PAIRS} gagnées par B ; ` +
      `CPU de l’api par réponse (médianes) ${median(runs.map((r) => r.a.cpuUs!)).toFixed(0)} → ` +
      `${median(runs.map((r) => r.b.cpuUs!)).toFixed(0)} µs ; p99 ${median(runs.map((r) => r.a.p99))} → ` +
      `${median(runs.map((r) => r.b.p99))} ms`,
  );
} finally {
  for (const service of services) await service.stop();
}
