/**
 * Dossier building end to end (`npm run bench -- dossier`, or `node bench/dossier.ts`): the service as `npm start`
 * runs it (bench/service.ts), with a scripted model for the notice (test/support/model-server.ts: the real openai
 * client, answers at once), on the demonstration's Latresne, whose zones come with their rules document and its
 * reading in lire_plu's cache (as they are once a zone has been read), then
 * `POST /api/v1/urbanisme/dossiers` for a 15 m² extension on a parcel with a house, one at a time, each awaited with
 * `attendre`: the time from the POST to the finished dossier (site, rules, formality, plot plan, section and facades
 * drawn and stored, notice drafted, checked and rendered as PDF and Word, bordereau). Target: p95 under 10 s.
 * Figures go to bench/RESULTS.md, section "Dossier building".
 *
 * BENCH_DOSSIER=10 shows it working in about a minute.
 */
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createDb } from '../db/client.ts';
import { LECTURE_VERSION } from '../domain/urbanisme/lectures.ts';
import { promptText, startModelServer, type ChatRequestBody } from '../test/support/model-server.ts';
import { machine, writeSection } from './results.ts';
import { startService } from './service.ts';

const N = Number(process.env.BENCH_DOSSIER ?? 100);
const WARMUP = Math.min(5, Math.max(1, Math.floor(N / 10)));

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};

/** The notice as a model drafts it: sentences built from the facts it is sent. */
function notice(body: ChatRequestBody) {
  const faits = JSON.parse(promptText(body).split('Faits du dossier :\n')[1] ?? '{}');
  return {
    json: {
      terrain: [`Le terrain de ${faits.terrain?.superficie_m2 ?? ''} m² porte une maison.`],
      projet: [`Le projet est une extension de ${faits.projets?.[0]?.emprise_m2 ?? ''} m² accolée à la maison.`],
    },
  };
}

async function main() {
  const model = await startModelServer(notice);
  const service = await startService({
    OPENAI_BASE_URL: model.url,
    OPENAI_MODEL: 'modele-test',
    OPENAI_API_KEY: 'sk-bench',
  });
  const db = createDb((await readFile(path.join(path.dirname(service.logFile), 'postgres.url'), 'utf8')).trim(), 2);
  try {
    // The demonstration's zones come with their rules document and its reading (domain/sandbox/parts/reglements.ts).
    const { rows: z } = await db.query<{ n: number }>(
      `SELECT count(DISTINCT z.libelle)::int AS n FROM zones_urbanisme z
         JOIN reglements_pdf p ON p.url = split_part(z.reglement_url, '#', 1)
         JOIN lectures_plu l ON l.document_sha256 = p.sha256 AND l.zone = z.libelle AND l.version = $1
        WHERE z.dataset = 'live' AND z.insee = '33234'`,
      [LECTURE_VERSION],
    );
    const zones = z[0].n;
    // Parcels of Latresne carrying a house.
    const { rows: parcelles } = await db.query<{ id: string }>(
      `SELECT p.id FROM cadastre_parcelles p
        WHERE p.dataset = 'live' AND p.commune = '33234' AND EXISTS (
          SELECT 1 FROM cadastre_batiments b WHERE b.dataset = 'live' AND b.type = '01'
             AND box(point(b.bbox_xmin, b.bbox_ymin), point(b.bbox_xmax, b.bbox_ymax)) <@ box(point(p.bbox_xmin, p.bbox_ymin), point(p.bbox_xmax, p.bbox_ymax)))
        ORDER BY p.id LIMIT $1`,
      [N + WARMUP],
    );
    if (parcelles.length < N + WARMUP) throw new Error(`${parcelles.length} parcelles bâties seulement`);
    const orgs: string[] = [];
    const duree: number[] = [];
    let lues = 0;
    let pretes = 0;
    for (let i = 0; i < N + WARMUP; i++) {
      // 200 credits a dossier, 500 at opening: a new organisation every two dossiers.
      if (i % 2 === 0) orgs.push((await service.organisation({ acces: 'usage' })).cle);
      const headers = { authorization: `Bearer ${orgs.at(-1)}`, 'content-type': 'application/json' };
      const t0 = performance.now();
      const res = await fetch(`${service.url}/api/v1/urbanisme/dossiers`, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          idu: parcelles[i].id,
          attendre: 60,
          projets: [
            {
              nature: 'extension',
              largeur_m: 5,
              profondeur_m: 3,
              ancrage: 'accole_batiment',
              cote: 'sud',
              hauteur_m: 3,
              toiture: 'un_pan',
            },
          ],
        }),
      });
      const body: any = await res.json();
      const ms = performance.now() - t0;
      if (res.status !== 202 || body.tache.statut !== 'terminee') {
        throw new Error(
          `dossier ${parcelles[i].id} : ${res.status} ${body.tache?.statut} ${JSON.stringify(body.erreur ?? body)}`,
        );
      }
      if (i >= WARMUP) {
        duree.push(ms);
        if (body.resultat.regles.etat === 'lues') lues += 1;
        if (body.resultat.notice.etat === 'prete') pretes += 1;
      }
    }
    const [p50, p95, p99] = [50, 95, 99].map((p) => percentile(duree, p) / 1000);
    const lignes = [
      `Machine: ${machine()}; load average before: ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}.`,
      '',
      `${N} dossiers (after ${WARMUP} of warm-up), one at a time, each a 15 m² extension on a parcel of Latresne with a house, POST with \`attendre: 60\` to the finished task; rules of ${zones} zone(s) in lire_plu's cache; the notice by a scripted model answering at once (the model's own time is not measured).`,
      '',
      '| dossiers | rules from the cache | notices drafted | p50 (s) | p95 (s) | p99 (s) | target p95 |',
      '|---|---|---|---|---|---|---|',
      `| ${N} | ${lues} | ${pretes} | ${p50.toFixed(2)} | ${p95.toFixed(2)} | ${p99.toFixed(2)} | < 10 s |`,
    ];
    console.log(lignes.join('\n'));
    await writeSection('Dossier building', lignes.join('\n'));
  } finally {
    await db.end();
    await service.stop();
    await model.close();
  }
}

await main();
