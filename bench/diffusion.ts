/**
 * `npm run bench -- diffusion`: the fan-out of listing events to webhook subscriptions, as users get it.
 *
 * The service as `npm start` runs it (bench/service.ts; its worker process runs the fan-out loop and the
 * subscriptions' queues); `SUBS` subscriptions to `nouvelle` (10 per organisation, the plan's default), each
 * organisation with enough credits; a subscriber in a process of its own that answers 204 and counts; then one import
 * (`npm run import -- annonces`, the CLI in its own process) of `EVENTS` new listings: `EVENTS` × `SUBS` deliveries.
 * Measured from the end of the import: the first delivery, the rate received (over the whole run, and its steady part
 * between 10 % and 90 %), the time to the last; then the credits debited, which must be exactly one per delivery
 * received.
 *
 *   npm run bench -- diffusion                          10 000 events to 100 subscriptions (the issue's figure)
 *   BENCH_EVENTS=1000 BENCH_SUBS=20 node bench/diffusion.ts
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { machine, writeSection } from './results.ts';
import { startService } from './service.ts';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 10_000);
const SUBS = Number(process.env.BENCH_SUBS ?? 100);
const PAR_ORGANISATION = 10;
/** No delivery for this long after the last one: the run is over, whatever was received. */
const SILENCE_MS = 120_000;

/** The subscriber: its own process, 204 to every POST, its count on stdout every 250 ms and at each new second. */
const ABONNE = `
const http = require('node:http');
let n = 0;
const s = http.createServer((req, res) => { req.resume(); req.on('end', () => { n++; res.writeHead(204).end(); }); });
s.keepAliveTimeout = 60000;
s.listen(0, '127.0.0.1', () => console.log('port ' + s.address().port));
setInterval(() => console.log('n ' + n + ' ' + Date.now()), 250);
`;

function abonne(): Promise<{ port: number; proc: ChildProcess; recus: () => Array<[number, number]> }> {
  const proc = spawn(process.execPath, ['-e', ABONNE], { stdio: ['ignore', 'pipe', 'inherit'] });
  const points: Array<[number, number]> = [];
  return new Promise((resolve) => {
    createInterface({ input: proc.stdout! }).on('line', (line) => {
      const [k, a, b] = line.split(' ');
      if (k === 'port') resolve({ port: Number(a), proc, recus: () => points });
      else if (points.length === 0 || points.at(-1)![0] !== Number(a)) points.push([Number(a), Number(b)]);
    });
  });
}

/** `n` new flats of Bordeaux, one snapshot each, in the documented JSON Lines format. */
function releves(n: number): string {
  const lignes: string[] = [];
  for (let i = 0; i < n; i++) {
    lignes.push(
      JSON.stringify({
        portail: 'portal_a',
        id: `bench-${i}`,
        vu_le: '2025-10-01T08:00:00Z',
        statut: 'actif',
        type: 'appartement',
        prix: 150_000 + (i % 500) * 1000,
        surface: 20 + (i % 80),
        pieces: 1 + (i % 5),
        insee: '33063',
        code_postal: '33000',
        type_vendeur: 'pro',
        annonceur: { nom: `AGENCE ${i % 50}` },
        titre: `Appartement ${i}`,
      }),
    );
  }
  return `${lignes.join('\n')}\n`;
}

const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) * q)];

async function main() {
  const chargeAvant = loadavg()
    .map((x) => x.toFixed(1))
    .join(' / ');
  const service = await startService({ OUTBOUND_ALLOW_LOOPBACK: 'true' });
  const dataDir = path.dirname(service.logFile);
  const recepteur = await abonne();
  try {
    const racine = path.resolve(import.meta.dirname, '..');
    const cliEnv = service.cliEnv;
    // Real data only: the import into live replaces the demonstration (whose listings are events too).
    await promisify(execFile)(process.execPath, ['scripts/import.ts', 'communes', '-'], { cwd: racine, env: cliEnv });
    const organisations: Array<{ id: string; cle: string }> = [];
    for (let i = 0; i < Math.ceil(SUBS / PAR_ORGANISATION); i++) {
      const org = await service.organisation({ acces: 'data' });
      await service.admin('POST', `/organisations/${org.id}/credits`, {
        credits: EVENTS * PAR_ORGANISATION * 2,
        motif: 'banc de diffusion',
      });
      organisations.push(org);
    }
    for (let i = 0; i < SUBS; i++) {
      const org = organisations[Math.floor(i / PAR_ORGANISATION)];
      const res = await fetch(`${service.url}/api/v1/webhooks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${org.cle}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url: `http://127.0.0.1:${recepteur.port}/w${i}`, genres: ['nouvelle'] }),
      });
      if (!res.ok) throw new Error(`webhooks_creer : ${res.status} ${await res.text()}`);
    }
    const soldes = async () =>
      Promise.all(organisations.map(async (o) => (await service.admin('GET', `/organisations/${o.id}`)).solde));
    const avant = await soldes();

    const fichier = path.join(dataDir, 'diffusion-bench.jsonl');
    await writeFile(fichier, releves(EVENTS));
    let t = performance.now();
    await promisify(execFile)(process.execPath, ['scripts/import.ts', 'annonces', fichier], {
      cwd: racine,
      env: cliEnv,
      maxBuffer: 64 * 2 ** 20,
    });
    const importS = (performance.now() - t) / 1000;
    const finImport = Date.now();
    const attendues = EVENTS * SUBS;
    console.log(`import de ${EVENTS} annonces : ${importS.toFixed(1)} s ; ${attendues} livraisons attendues`);
    for (;;) {
      await new Promise((r) => setTimeout(r, 1000));
      const points = recepteur.recus();
      const dernier = points.at(-1);
      const n = dernier?.[0] ?? 0;
      process.stderr.write(`\r${n} / ${attendues} reçues`);
      if (n >= attendues) break;
      const depuis = dernier ? Date.now() - dernier[1] : Date.now() - finImport;
      if (depuis > SILENCE_MS) break;
    }
    process.stderr.write('\n');
    const points = recepteur.recus().filter(([n]) => n > 0);
    const recues = points.at(-1)?.[0] ?? 0;
    const premiere = points[0] ? (points[0][1] - finImport) / 1000 : null;
    const derniere = points.at(-1) ? (points.at(-1)![1] - finImport) / 1000 : null;
    const instant = (part: number) => points.find(([n]) => n >= recues * part)?.[1] ?? finImport;
    const regime = (recues * 0.8) / ((instant(0.9) - instant(0.1)) / 1000);
    // The rate over each second of the steady part: its spread says how even the delivery is.
    const parSeconde: number[] = [];
    for (let i = 1; i < points.length; i++) {
      const [n0, t0] = points[i - 1];
      const [n1, t1] = points[i];
      if (n0 >= recues * 0.1 && n1 <= recues * 0.9 && t1 > t0) parSeconde.push(((n1 - n0) * 1000) / (t1 - t0));
    }
    // A lot's deliveries are recorded, and debited, together once the lot is sent: the last ones a moment after the
    // subscriber received them. The ledger is read until it stops moving.
    const debitesDe = (apres: any[]) =>
      avant.reduce((s: number, v: any, i: number) => s + (v.restants - apres[i].restants), 0);
    let debites = debitesDe(await soldes());
    for (let stable = 0; stable < 5 && debites !== recues;) {
      await new Promise((r) => setTimeout(r, 1000));
      const d = debitesDe(await soldes());
      stable = d === debites ? stable + 1 : 0;
      debites = d;
    }
    const chargeApres = loadavg()
      .map((x) => x.toFixed(1))
      .join(' / ');
    t = performance.now();
    const lignes = [
      `Machine: ${machine()}. The service as \`npm start\` runs it (embedded PostgreSQL, Temporal dev server, its`,
      'worker process running the fan-out loop and the subscriptions’ queues, default settings); the subscriber, a bare',
      'Node HTTP server answering 204, in a process of its own on the same machine; the import by the CLI in its own.',
      `${SUBS} subscriptions to \`nouvelle\` (${PAR_ORGANISATION} per organisation, no filter), then one import of ${EVENTS}`,
      `new listings: ${attendues} deliveries. Load average (1 / 5 / 15 min) before: ${chargeAvant}, after: ${chargeApres}.`,
      '',
      '| measure | value |',
      '| --- | --- |',
      `| import of the ${EVENTS} listings (CLI, wall) | ${importS.toFixed(1)} s |`,
      `| first delivery received, after the import's end | ${premiere?.toFixed(1) ?? '—'} s |`,
      `| last delivery received, after the import's end | ${derniere?.toFixed(1) ?? '—'} s |`,
      `| deliveries received | ${recues} of ${attendues} |`,
      `| deliveries/s, whole run (first to last) | ${premiere !== null && derniere !== null && derniere > premiere ? (recues / (derniere - premiere)).toFixed(0) : '—'} |`,
      `| deliveries/s, steady part (10 % to 90 % received) | ${Number.isFinite(regime) ? regime.toFixed(0) : '—'} |`,
      `| deliveries/s per ¼ s window in the steady part, p10 / p50 / p90 | ${parSeconde.length ? [0.1, 0.5, 0.9].map((q) => quantile(parSeconde, q).toFixed(0)).join(' / ') : '—'} |`,
      `| credits debited (1 per delivery received) | ${debites} |`,
    ];
    console.log(lignes.join('\n'));
    await writeSection('Webhook fan-out of listing events', lignes.join('\n'));
    if (recues !== attendues) throw new Error(`${recues} livraisons reçues sur ${attendues}`);
    if (debites !== recues) throw new Error(`${debites} crédits débités pour ${recues} livraisons reçues`);
  } finally {
    recepteur.proc.kill();
    await service.stop();
  }
}

await main();
