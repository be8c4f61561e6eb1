/**
 * Address base benchmark (`node bench/adresses.ts`): a BAN `adresses-XX.csv` of BENCH_ADRESSES rows (1 000 000 by
 * default) generated deterministically over a few hundred real communes, imported (rows/s, peak memory, then a second
 * import of the same file that must change nothing), then `resoudre_adresse` called through its handlers: 500 text
 * searches written with a typo and without accents, 500 reverse searches around known numbers, one at a time.
 * Figures go to bench/RESULTS.md, section "Address base".
 */
import { createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import { createDb } from '../db/client.ts';
import { migrate } from '../db/migrate.ts';
import { importBan } from '../domain/adresses/import-ban.ts';
import { resoudreAdresse, resoudreAdresseInverse } from '../domain/adresses/resoudre.ts';
import type { OperationContext } from '../domain/catalogue.ts';
import { benchDatabase } from './database.ts';
import { machine, writeSection } from './results.ts';
import { seededRandom } from '../lib/random.ts';

const ROWS = Number(process.env.BENCH_ADRESSES ?? 1_000_000);
const COMMUNES = 300;
const QUERIES = 500;
const SEED = 20_261_121;

// ---------------------------------------------------------------------------------------------------------------------
// Deterministic data.
// ---------------------------------------------------------------------------------------------------------------------

const generator = seededRandom;

const TYPES = [
  'Rue',
  'Rue',
  'Rue',
  'Avenue',
  'Chemin',
  'Allée',
  'Impasse',
  'Route',
  'Place',
  'Boulevard',
  'Lotissement',
];
const NOMS = [
  'de la Liberté',
  'de la République',
  'de la Gare',
  "de l'Église",
  'du Moulin',
  'Victor Hugo',
  'Jean Jaurès',
  'Pasteur',
  'de la Paix',
  'de la Mairie',
  'du Château',
  'de la Fontaine',
  'des Écoles',
  'des Lilas',
  'des Tilleuls',
  'des Peupliers',
  'des Chênes',
  'des Pins',
  'des Vignes',
  'du Général de Gaulle',
  'du Maréchal Foch',
  'Georges Clemenceau',
  'du 8 Mai 1945',
  'du 11 Novembre',
  'des Acacias',
  'de Verdun',
  'de la Croix',
  'du Stade',
  'des Jardins',
  'du Lavoir',
  'de Bellevue',
  'des Prés',
  'du Bourg',
  'des Sources',
  'Émile Zola',
  'Louis Pasteur',
  'Anatole France',
  'Gambetta',
  'des Cerisiers',
  "de l'Océan",
  'du Port',
  'de la Forêt',
  'des Platanes',
  'Saint-Martin',
  'Sainte-Anne',
  'des Coquelicots',
  'des Hirondelles',
  'de la Garenne',
  'du Parc',
  'des Marronniers',
];
const LIEUX_DITS = [
  'Le Bourg',
  'Les Écus',
  'La Grange',
  'Le Moulin Neuf',
  'Les Granges',
  'La Croix Blanche',
  'Bel Air',
];
const POSITIONS = ['entrée', 'entrée', 'entrée', 'bâtiment', 'parcelle', 'segment'];

interface Commune {
  code: string;
  nom: string;
  cp: string;
  lat: number;
  lon: number;
}

/** Real communes of metropolitan France, every n-th by code; a made-up centre in the metropolitan box. */
function communes(rng: ReturnType<typeof generator>): Commune[] {
  const require = createRequire(import.meta.url);
  const all = (
    require('@etalab/decoupage-administratif/data/communes.json') as Array<{
      code: string;
      nom: string;
      type: string;
      zone: string;
      codesPostaux?: string[];
    }>
  ).filter((c) => c.type === 'commune-actuelle' && c.zone === 'metro' && c.codesPostaux?.length);
  const step = Math.floor(all.length / COMMUNES);
  return Array.from({ length: COMMUNES }, (_, i) => {
    const c = all[i * step];
    return { code: c.code, nom: c.nom, cp: c.codesPostaux![0], lat: 43.3 + rng.next() * 6, lon: -1 + rng.next() * 7 };
  });
}

const HEADER =
  'id;id_fantoir;numero;rep;nom_voie;code_postal;code_insee;nom_commune;code_insee_ancienne_commune;nom_ancienne_commune;x;y;lon;lat;type_position;alias;nom_ld;libelle_acheminement;nom_afnor;source_position;source_nom_voie;certification_commune;cad_parcelles';

const sansAccents = (s: string) => s.normalize('NFD').replace(/\p{M}/gu, '');

interface Sample {
  cle: string;
  query: string;
  lat: number;
  lon: number;
}

/** Writes the file; keeps one number in ROWS / 4 000 as a query sample (reservoir-free: evenly spread). */
async function generate(file: string): Promise<{ samples: Sample[]; bytes: number }> {
  const rng = generator(SEED);
  const list = communes(rng);
  const out = createWriteStream(file);
  const write = async (text: string) => {
    if (!out.write(text)) await once(out, 'drain');
  };
  await write(`${HEADER}\n`);
  const perCommune = Math.ceil(ROWS / list.length);
  const sampleEvery = Math.max(1, Math.floor(ROWS / (QUERIES * 4)));
  const samples: Sample[] = [];
  let written = 0;
  for (const commune of list) {
    const used = new Set<string>();
    let street = 0;
    let inCommune = 0;
    while (inCommune < perCommune && written < ROWS) {
      street++;
      let nom: string;
      do nom = `${rng.pick(TYPES)} ${rng.pick(NOMS)}`;
      while (used.has(nom) && used.size < TYPES.length * NOMS.length * 0.8);
      if (used.has(nom)) nom = `${nom} ${street}`;
      used.add(nom);
      const code = String(street).padStart(4, '0');
      const ld = rng.next() < 0.05 ? rng.pick(LIEUX_DITS) : '';
      // A street: 5 to 60 numbers from a start point, ~12 m apart in one direction.
      const count = 5 + rng.int(56);
      const angle = rng.next() * 2 * Math.PI;
      let lat = commune.lat + (rng.next() - 0.5) * 0.05;
      let lon = commune.lon + (rng.next() - 0.5) * 0.07;
      const dLat = (Math.cos(angle) * 12) / 111_320;
      const dLon = (Math.sin(angle) * 12) / (111_320 * Math.cos((lat * Math.PI) / 180));
      for (let k = 1; k <= count && inCommune < perCommune && written < ROWS; k++) {
        lat += dLat;
        lon += dLon;
        const bis = rng.next() < 0.03;
        const numero = k * 2 - (k % 2);
        const id = `${commune.code}_${code}_${String(numero).padStart(5, '0')}${bis ? '_bis' : ''}`.toLowerCase();
        const parcelles = Array.from(
          { length: rng.int(3) },
          () =>
            `${commune.code}000${String.fromCharCode(65 + rng.int(26))}${String.fromCharCode(65 + rng.int(26))}${String(rng.int(9999)).padStart(4, '0')}`,
        );
        // One line in a thousand is broken, as real files have a few.
        const broken = rng.next() < 0.001;
        const la = lat.toFixed(6);
        const lo = lon.toFixed(6);
        await write(
          [
            id,
            `${commune.code}_${code}`,
            numero,
            bis ? 'bis' : '',
            nom,
            commune.cp,
            commune.code,
            commune.nom,
            '',
            '',
            '',
            '',
            broken ? '' : lo,
            broken ? '' : la,
            rng.pick(POSITIONS),
            '',
            ld,
            commune.nom.toUpperCase(),
            sansAccents(nom).toUpperCase(),
            'commune',
            'commune',
            rng.next() < 0.4 ? '1' : '0',
            parcelles.join('|'),
          ].join(';') + '\n',
        );
        written++;
        inCommune++;
        if (!broken && !bis && written % sampleEvery === 0 && samples.length < QUERIES * 4) {
          samples.push({ cle: id, query: typo(rng, `${numero} ${nom} ${commune.nom}`), lat, lon });
        }
      }
    }
  }
  out.end();
  await once(out, 'finish');
  return { samples, bytes: (await stat(file)).size };
}

/** Lower case, no accents, and one typo (two letters swapped, one dropped or one replaced) in the longest word. */
function typo(rng: ReturnType<typeof generator>, text: string): string {
  const words = sansAccents(text).toLowerCase().split(' ');
  let at = 0;
  words.forEach((w, i) => {
    if (w.length > words[at].length && !/\d/.test(w)) at = i;
  });
  const w = words[at];
  if (w.length >= 5) {
    const i = 1 + rng.int(w.length - 2);
    const kind = rng.int(3);
    words[at] =
      kind === 0
        ? w.slice(0, i) + w[i + 1] + w[i] + w.slice(i + 2)
        : kind === 1
          ? w.slice(0, i) + w.slice(i + 1)
          : w.slice(0, i) + String.fromCharCode(97 + rng.int(26)) + w.slice(i + 1);
  }
  return words.join(' ');
}

// ---------------------------------------------------------------------------------------------------------------------
// Run.
// ---------------------------------------------------------------------------------------------------------------------

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

const database = await benchDatabase('adresses');
const { dir } = database;
const db = createDb(database.url, 4);
try {
  await migrate(db);
  const file = path.join(dir, 'adresses-99.csv');
  let t0 = performance.now();
  const { samples, bytes } = await generate(file);
  const generationS = (performance.now() - t0) / 1000;
  console.log(`fichier : ${ROWS} lignes, ${(bytes / 2 ** 20).toFixed(0)} Mio en ${generationS.toFixed(1)} s`);

  let peakRss = 0;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 100);
  const rssBefore = process.memoryUsage().rss;
  t0 = performance.now();
  const report = await importBan(db, file);
  const importS = (performance.now() - t0) / 1000;
  t0 = performance.now();
  const again = await importBan(db, file);
  const againS = (performance.now() - t0) / 1000;
  clearInterval(sampler);
  console.log(report.details.join('\n'));
  const unchanged = again.details.slice(0, 4).every((d) => /\(0 ajoutés, 0 modifiés/.test(d));
  const counts = await db.query<{ type: string; n: number }>(
    `SELECT type, count(*)::int AS n FROM adresses WHERE dataset = 'live' GROUP BY type ORDER BY type`,
  );
  await db.query('VACUUM ANALYZE adresses');

  const ctx = {
    caller: { organisationId: 'bench', cleId: 'bench', compteId: null, sandbox: false, portees: ['adresse'] },
    requestId: 'bench',
    signal: new AbortController().signal,
    services: { db, now: () => new Date() },
  } as unknown as OperationContext;
  // A few calls first: connections opened, plans and caches warm.
  for (const s of samples.slice(-20)) {
    await resoudreAdresse.handler({ q: s.query, limite: 5 }, ctx);
    await resoudreAdresseInverse.handler({ lat: s.lat, lon: s.lon, limite: 5 }, ctx);
  }
  const rng = generator(SEED + 1);
  const picked = Array.from({ length: QUERIES }, () => samples[rng.int(samples.length)]);
  const texte: number[] = [];
  let premier = 0;
  let parmiCinq = 0;
  for (const s of picked) {
    const start = performance.now();
    const out = await resoudreAdresse.handler({ q: s.query, limite: 5 }, ctx);
    texte.push(performance.now() - start);
    if (out.candidats[0]?.cle_ban === s.cle) premier++;
    if (out.candidats.some((c) => c.cle_ban === s.cle)) parmiCinq++;
  }
  const inverse: number[] = [];
  let plusProche = 0;
  for (const s of picked) {
    // Up to ~25 m off the number, in any direction.
    const lat = s.lat + (rng.next() - 0.5) * 0.0004;
    const lon = s.lon + (rng.next() - 0.5) * 0.0006;
    const start = performance.now();
    const out = await resoudreAdresseInverse.handler({ lat, lon, limite: 5 }, ctx);
    inverse.push(performance.now() - start);
    const d = out.candidats.map((c) => c.distance_m!);
    if (d.length > 0 && d.every((x, i) => i === 0 || x >= d[i - 1])) plusProche++;
  }
  texte.sort((a, b) => a - b);
  inverse.sort((a, b) => a - b);
  const ms = (x: number) => x.toFixed(1);
  const n = (type: string) => counts.rows.find((r) => r.type === type)?.n ?? 0;
  await writeSection(
    'Address base',
    `Machine: ${machine()}, ${database.label}.
Generated BAN file (seed ${SEED}): ${ROWS.toLocaleString('en')} lines over ${COMMUNES} real communes, ${(bytes / 2 ** 20).toFixed(0)} MiB; one line in a thousand with no coordinates (rejected). Stored: ${n('numero')} numbers, ${n('voie')} streets, ${n('lieu_dit')} lieux-dits, ${n('commune')} communes.

| import | value |
| --- | --- |
| first import (staging, derived rows, merge) | ${importS.toFixed(1)} s, **${Math.round(report.lus / importS).toLocaleString('en')} lines/s** |
| lines read / kept / rejected | ${report.lus} / ${report.gardes} / ${report.lus - report.gardes} |
| same file again | ${againS.toFixed(1)} s, ${unchanged ? 'nothing written' : 'ROWS WRITTEN (not idempotent)'} |
| peak RSS of the process during both imports | ${Math.round(peakRss / 2 ** 20)} MiB (${Math.round(rssBefore / 2 ** 20)} MiB before) |

\`resoudre_adresse\` through its handlers, one call at a time, ${QUERIES} calls each:

| search | p50 ms | p95 ms | max ms | quality |
| --- | --- | --- | --- | --- |
| text, lower case, no accents, one typo in the longest word | ${ms(percentile(texte, 50))} | ${ms(percentile(texte, 95))} | ${ms(texte.at(-1)!)} | expected number first ${((premier / QUERIES) * 100).toFixed(1)} %, in the 5 ${((parmiCinq / QUERIES) * 100).toFixed(1)} % |
| reverse, up to ~25 m from a number | ${ms(percentile(inverse, 50))} | ${ms(percentile(inverse, 95))} | ${ms(inverse.at(-1)!)} | nearest first ${((plusProche / QUERIES) * 100).toFixed(1)} % |

Street names are drawn from ${NOMS.length} common French names × ${TYPES.length} types, so every commune has its "Rue de la Liberté": the text search must tell communes apart by their name.`,
  );
} finally {
  await db.end();
  await database.close();
}
