/**
 * The Hub's own cost, run by `npm run bench -- hub`: the service as `npm start` runs it (its own process: api and
 * worker, embedded PostgreSQL, Temporal dev server, default log level), a model that answers at once (an
 * OpenAI-compatible server in this process), and this process as the client. A question takes three model turns:
 * the first asks for `ventes_adresse`, the second for `faits_adresse`, the third answers. Beside it, alternated, the
 * bare loop a client would write without the Hub: the same three model calls (openai SDK, same server) and the same
 * two operations over HTTP. The difference, per model turn, is what the Hub adds: the workflow, the scheduling of
 * its activities, the billing, the storing of the thread and the figure check. Figures go to bench/RESULTS.md.
 */
import os from 'node:os';
import OpenAI from 'openai';
import { startModelServer, type ChatRequestBody, type ModelReply } from '../test/support/model-server.ts';
import { machine, writeSection } from './results.ts';
import { startService } from './service.ts';

const N = Number(process.env.BENCH_HUB ?? 60);
const WARM_UP = 5;
const TOURS = 3;
// The steps of the agent loop, the same for both paths: the three model turns and the two tool calls.
const ETAPES = TOURS + 2;
// A number of the demonstration territory with sales and a DPE (domain/sandbox/exemples.ts).
const CLE_BAN = '33234_z008_00018_ter';

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};

/** The model: its answer depends only on how many tool results it has read, as for the Hub so for the bare loop. */
function modele(body: ChatRequestBody): ModelReply {
  const lus = (body.messages as any[]).filter((m) => m.role === 'tool').length;
  if (lus === 0) return { toolCalls: [{ name: 'ventes_adresse', arguments: { cle_ban: CLE_BAN } }] };
  if (lus === 1) return { toolCalls: [{ name: 'faits_adresse', arguments: { cle_ban: CLE_BAN } }] };
  return { content: 'Les ventes et les faits de l’adresse sont lus.' };
}

async function main() {
  const model = await startModelServer(modele);
  const service = await startService({
    OPENAI_BASE_URL: model.url,
    OPENAI_MODEL: 'modele-test',
    OPENAI_API_KEY: 'sk-bench',
  });
  try {
    const org = await service.organisation({ acces: 'usage' });
    const perso = await service.admin('POST', `/organisations/${org.id}/cles`, { mode: 'live', personnelle: true });
    await service.admin('POST', `/organisations/${org.id}/credits`, { credits: 1_000_000, motif: 'bench' });
    const headers = { authorization: `Bearer ${perso.cle}`, 'content-type': 'application/json' };
    const openai = new OpenAI({ baseURL: model.url, apiKey: 'sk-bench', maxRetries: 0 });

    const hub = async () => {
      const t0 = performance.now();
      const res = await fetch(`${service.url}/api/v1/hub/questions`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ question: `Que sait-on de l’adresse ${CLE_BAN} ?` }),
      });
      const body: any = await res.json();
      if (res.status !== 200 || body.appels.length !== 2)
        throw new Error(`hub → ${res.status} ${JSON.stringify(body)}`);
      return performance.now() - t0;
    };
    const bare = async () => {
      const t0 = performance.now();
      const messages: any[] = [{ role: 'user', content: `Que sait-on de l’adresse ${CLE_BAN} ?` }];
      for (let tour = 0; tour < TOURS; tour += 1) {
        const completion = await openai.chat.completions.create({ model: 'modele-test', messages });
        const call = completion.choices[0]!.message.tool_calls?.[0];
        if (!call || call.type !== 'function') break;
        const route = call.function.name === 'ventes_adresse' ? 'ventes' : 'faits';
        const res = await fetch(`${service.url}/api/v1/adresses/${CLE_BAN}/${route}`, { headers });
        const text = await res.text();
        if (res.status !== 200) throw new Error(`${route} → ${res.status} ${text}`);
        messages.push(completion.choices[0]!.message, { role: 'tool', tool_call_id: call.id, content: text });
      }
      return performance.now() - t0;
    };

    const chargeAvant = os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(' / ');
    for (let i = 0; i < WARM_UP; i += 1) {
      await hub();
      await bare();
    }
    const hubMs: number[] = [];
    const bareMs: number[] = [];
    for (let i = 0; i < N; i += 1) {
      // Alternated, so that both meet the same state of the machine.
      if (i % 2 === 0) {
        hubMs.push(await hub());
        bareMs.push(await bare());
      } else {
        bareMs.push(await bare());
        hubMs.push(await hub());
      }
    }
    const row = (label: string, values: number[]) =>
      `| ${label} | ${percentile(values, 50).toFixed(1)} | ${percentile(values, 95).toFixed(1)} |`;
    const par = (etapes: number, p: number) => ((percentile(hubMs, p) - percentile(bareMs, p)) / etapes).toFixed(1);
    await writeSection(
      'Hub agent overhead',
      [
        `Machine: ${machine()}.`,
        `The service as \`npm start\` runs it (api and worker processes, embedded PostgreSQL, Temporal dev server, logs`,
        `at the default level), a model server that answers at once, ${N} questions of ${TOURS} model turns (two tool`,
        `calls: \`ventes_adresse\`, \`faits_adresse\`, then the answer) after ${WARM_UP} of warm-up, alternated with the`,
        'bare loop a client would write: the same three model calls (openai SDK) and the same two operations over HTTP.',
        `Load average (1 / 5 / 15 min) before the runs: ${chargeAvant}, after them: ${os
          .loadavg()
          .map((x) => x.toFixed(1))
          .join(' / ')}.`,
        '',
        '| path | p50 ms | p95 ms |',
        '| --- | --- | --- |',
        row('`POST /hub/questions` (workflow, activities, billing, thread, figure check)', hubMs),
        row('bare loop (3 model calls + 2 HTTP calls, no Temporal)', bareMs),
        '',
        `Overhead of the Hub per step of the loop (${ETAPES} steps: ${TOURS} model turns and 2 tool calls, each an`,
        `activity of the Hub, a call of the bare loop): **${par(ETAPES, 50)} ms at p50**, ${par(ETAPES, 95)} ms at p95`,
        `(target: at most 30 ms at p50). Per model turn (the whole difference over ${TOURS}): ${par(TOURS, 50)} ms at p50,`,
        `${par(TOURS, 95)} ms at p95.`,
      ].join('\n'),
    );
  } finally {
    await service.stop();
    await model.close();
  }
}

await main();
