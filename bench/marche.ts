/**
 * Communes market benchmark (`npm run bench -- marche`, or `node bench/marche.ts`): an Etalab "DVF géolocalisées" CSV
 * of BENCH_MARCHE_MUTATIONS mutations (1 000 000 by default) over the 300 most populated communes of France that DVF
 * covers (real codes and centres from the administrative split), generated deterministically, imported through the
 * DVF importer with rents, A/B/C zones and F/G shares for every commune; then:
 * - the rebuild times of the aggregates: `marche_prix` for the 300 communes (what a DVF import runs for the communes
 *   it read) and the derived tables of palmares_communes, comparer_communes, prix_iris and secteur (what every DVF,
 *   DPE, rent, zoning or IRIS import runs), each the median of 3 runs;
 * - the latency of `prix_commune`, `palmares_communes` (France level) and `comparer_communes` through the service as
 *   `npm start` runs it (bench/service.ts, here on the benchmark's database through DATABASE_URL), with the load
 *   generator in a process of its own (`node bench/marche.ts --load`): every request a new input, so that none is
 *   answered from the service's memory of recent answers and each reads the database.
 * Figures go to bench/RESULTS.md, section "Communes market".
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createDb } from '../db/client.ts';
import { migrate } from '../db/migrate.ts';
import { communesSource } from '../domain/adresses/import-communes.ts';
import { toutesLesCommunes } from '../domain/communes.ts';
import { importDvf } from '../domain/dvf/import.ts';
import { reconstruireMarche } from '../domain/marche/agregats.ts';
import { INDICATEURS, reconstruireDerives } from '../domain/marche/derives.ts';
import { ARRONDISSEMENTS } from '../domain/marche/entrees.ts';
import { seededRandom } from '../lib/random.ts';
import { benchDatabase } from './database.ts';
import { machine, writeSection } from './results.ts';
import { startService } from './service.ts';

const MUTATIONS = Number(process.env.BENCH_MARCHE_MUTATIONS ?? 1_000_000);
const COMMUNES = 300;
const SEED = 20_261_127;
// Requests at a time: one (a read's own latency), then four (reads queueing on the 2 cores).
const CONCURRENCES = [1, 4];
const REQUESTS = Number(process.env.BENCH_MARCHE_REQUESTS ?? 2000);
const WARMUP = 200;
const RUNS = 3;

const HEADER =
  'id_mutation,date_mutation,numero_disposition,nature_mutation,valeur_fonciere,adresse_numero,adresse_suffixe,adresse_nom_voie,adresse_code_voie,code_postal,code_commune,nom_commune,code_departement,ancien_code_commune,ancien_nom_commune,id_parcelle,ancien_id_parcelle,numero_volume,lot1_numero,lot1_surface_carrez,lot2_numero,lot2_surface_carrez,lot3_numero,lot3_surface_carrez,lot4_numero,lot4_surface_carrez,lot5_numero,lot5_surface_carrez,nombre_lots,code_type_local,type_local,surface_reelle_bati,nombre_pieces_principales,code_nature_culture,nature_culture,code_nature_culture_speciale,nature_culture_speciale,surface_terrain,longitude,latitude';

interface LoadSpec {
  base: string;
  cle: string;
  file: string;
  concurrence: number;
}
interface LoadResult {
  n: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
  rps: number;
  non200: number;
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

/** The communes of the benchmark: the most populated that DVF covers, whole communes (no arrondissement). */
function choisirCommunes(): string[] {
  return [...toutesLesCommunes()]
    .filter(
      (c) =>
        c.communeParente === null &&
        !ARRONDISSEMENTS[c.code] &&
        !['57', '67', '68', '976'].includes(c.departement) &&
        c.population !== null,
    )
    .sort((a, b) => b.population! - a.population! || a.code.localeCompare(b.code))
    .slice(0, COMMUNES)
    .map((c) => c.code);
}

/** Writes the CSV: flats (some with a cellar), houses on one or two land subdivisions, a few blocks of flats. */
async function generer(
  file: string,
  communes: Array<{ insee: string; nom: string; lat: number; lon: number }>,
): Promise<number> {
  const rng = seededRandom(SEED);
  const out = createWriteStream(file);
  const ecrire = async (s: string) => {
    if (!out.write(s)) await once(out, 'drain');
  };
  await ecrire(HEADER + '\n');
  const base = communes.map(() => ({ appart: rng.between(1500, 9000), maison: rng.between(1300, 6000) }));
  let lignes = 0;
  for (let n = 0; n < MUTATIONS; n++) {
    const k = rng.int(communes.length);
    const c = communes[k]!;
    const annee = 2020 + rng.int(5);
    const date = `${annee}-${String(1 + rng.int(12)).padStart(2, '0')}-${String(1 + rng.int(28)).padStart(2, '0')}`;
    const tendance = 1 + 0.03 * (annee - 2020);
    const lat = (c.lat + rng.between(-0.02, 0.02)).toFixed(6);
    const lon = (c.lon + rng.between(-0.02, 0.02)).toFixed(6);
    const parcelle = `${c.insee}000AB${String(rng.int(10_000)).padStart(4, '0')}`;
    const voie = `RUE ${rng.int(200)}`;
    const numero = String(1 + rng.int(150));
    const tirage = rng.next();
    const ligne = (
      valeur: number,
      type: 'Appartement' | 'Maison' | 'Dépendance',
      surface: string,
      lot: string,
      culture: string,
      terrain: string,
    ) =>
      [
        `${annee}-${n}`,
        date,
        '000001',
        'Vente',
        String(Math.round(valeur)),
        numero,
        '',
        voie,
        'A001',
        '',
        c.insee,
        c.nom,
        c.insee.startsWith('97') ? c.insee.slice(0, 3) : c.insee.slice(0, 2),
        '',
        '',
        parcelle,
        '',
        '',
        lot,
        '',
        '',
        '',
        '',
        '',
        '',
        '',
        '',
        '',
        lot ? '1' : '0',
        { Maison: '1', Appartement: '2', Dépendance: '3' }[type],
        type,
        surface,
        surface ? String(1 + rng.int(5)) : '',
        culture,
        culture ? 'sols' : '',
        '',
        '',
        terrain,
        lon,
        lat,
      ].join(',') + '\n';
    if (tirage < 0.55) {
      const surface = 20 + rng.int(90);
      const valeur = surface * base[k]!.appart * tendance * rng.between(0.7, 1.3);
      await ecrire(ligne(valeur, 'Appartement', String(surface), String(1 + rng.int(500)), '', ''));
      lignes++;
      if (rng.next() < 0.3) {
        await ecrire(ligne(valeur, 'Dépendance', '', String(500 + rng.int(500)), '', ''));
        lignes++;
      }
    } else if (tirage < 0.95) {
      const surface = 60 + rng.int(140);
      const valeur = surface * base[k]!.maison * tendance * rng.between(0.7, 1.3);
      const subdivisions = 1 + rng.int(2);
      for (let s = 0; s < subdivisions; s++) {
        await ecrire(ligne(valeur, 'Maison', String(surface), '', s ? 'J' : 'S', String(100 + rng.int(900))));
        lignes++;
      }
    } else {
      const lots = 2 + rng.int(2);
      const valeur = lots * 50 * base[k]!.appart * tendance;
      for (let l = 0; l < lots; l++) {
        await ecrire(ligne(valeur, 'Appartement', String(40 + l), String(10 + l), '', ''));
        lignes++;
      }
    }
  }
  out.end();
  await once(out, 'finish');
  return lignes;
}

/** Runs the load generator in its own process over the paths of a file; resolves with its figures. */
function charge(spec: LoadSpec): Promise<LoadResult> {
  const proc = spawn(process.execPath, [import.meta.filename, '--load', JSON.stringify(spec)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  proc.stdout.on('data', (chunk) => (out += chunk));
  return new Promise((resolve, reject) =>
    proc.once('exit', (code) =>
      code === 0 ? resolve(JSON.parse(out.trim())) : reject(new Error(`load: code ${code}`)),
    ),
  );
}

const loadAverage = () =>
  os
    .loadavg()
    .map((n) => n.toFixed(1))
    .join(' / ');

async function main() {
  const database = await benchDatabase('marche');
  const db = createDb(database.url, 4);
  try {
    await migrate(db);
    await communesSource.run(db, '-', { sandbox: false, onProgress: () => {} });
    const codes = choisirCommunes();
    // The administrative split has no centres: made-up ones, the communes of a département within ~30 km of a point
    // of their own, so that the price scale finds neighbouring communes as in real départements.
    const g0 = seededRandom(SEED - 1);
    const points = new Map<string, { lat: number; lon: number }>();
    for (const code of codes) {
      const dep = code.startsWith('97') ? code.slice(0, 3) : code.slice(0, 2);
      if (!points.has(dep)) points.set(dep, { lat: g0.between(43, 50), lon: g0.between(-1.5, 7) });
      const p = points.get(dep)!;
      await db.query(`UPDATE communes SET lat = $2, lon = $3 WHERE dataset = 'live' AND insee = $1`, [
        code,
        p.lat + g0.between(-0.3, 0.3),
        p.lon + g0.between(-0.4, 0.4),
      ]);
    }
    const { rows: centres } = await db.query<{ insee: string; nom: string; lat: number; lon: number }>(
      `SELECT insee, nom, lat, lon FROM communes WHERE dataset = 'live' AND insee = ANY($1) AND lat IS NOT NULL
        ORDER BY insee`,
      [codes],
    );
    const file = path.join(database.dir, 'dvf-marche.csv');
    const t0 = performance.now();
    const lignes = await generer(file, centres);
    const generation = (performance.now() - t0) / 1000;
    console.log(`généré : ${MUTATIONS} mutations, ${lignes} lignes, ${generation.toFixed(1)} s`);

    // Rents, zones and F/G shares of every commune, as their importers would leave them.
    const rng = seededRandom(SEED + 1);
    const zones = ['Abis', 'A', 'B1', 'B2', 'C'];
    for (const c of centres) {
      const loyer = rng.between(8, 25);
      await db.query(
        `INSERT INTO loyers_communes (dataset, insee, type_logement, edition, commune, loyer_m2, loyer_m2_bas,
                                      loyer_m2_haut, niveau_prediction, nb_obs_commune, nb_obs_maille)
         VALUES ('live', $1, 'appartement', 2025, $2, $3::float8, $3::float8 * 0.8, $3::float8 * 1.2, 'commune', 100, 1000),
                ('live', $1, 'maison', 2025, $2, $3::float8 * 0.85, $3::float8 * 0.7, $3::float8, 'commune', 50, 1000)`,
        [c.insee, c.nom, loyer],
      );
      await db.query(
        `INSERT INTO zonage_abc (dataset, insee, en_vigueur_le, zone, commune) VALUES ('live', $1, '2025-01-01', $2, $3)`,
        [c.insee, rng.pick(zones), c.nom],
      );
      const dpe = 100 + rng.int(2000);
      await db.query(
        `INSERT INTO marche_dpe (dataset, insee, dpe, passoires, dernier_dpe) VALUES ('live', $1, $2, $3, '2025-06-30')`,
        [c.insee, dpe, Math.round(dpe * rng.between(0.05, 0.45))],
      );
    }

    const t1 = performance.now();
    const report = await importDvf(db, file);
    const importS = (performance.now() - t1) / 1000;
    const { rows: compte } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM dvf_mutations WHERE dataset = 'live'`,
    );
    console.log(`import : ${importS.toFixed(1)} s, ${compte[0]!.n} mutations`);

    const prix: number[] = [];
    const derives: number[] = [];
    let ecrites = 0;
    let sortie: Awaited<ReturnType<typeof reconstruireDerives>> | undefined;
    for (let r = 0; r < RUNS; r++) {
      const client = await db.connect();
      try {
        const a = performance.now();
        ecrites = await reconstruireMarche(client, 'live', codes);
        prix.push((performance.now() - a) / 1000);
      } finally {
        client.release();
      }
      const b = performance.now();
      sortie = await reconstruireDerives(db, 'live');
      derives.push((performance.now() - b) / 1000);
      console.log(
        `reconstruction ${r + 1} : marche_prix ${prix.at(-1)!.toFixed(2)} s, dérivées ${derives.at(-1)!.toFixed(2)} s`,
      );
    }
    await db.end();

    // The service on this database; the sandbox it loads goes to its own dataset.
    const service = await startService({ DATABASE_URL: database.url });
    try {
      const org = await service.organisation();
      await service.admin('POST', `/organisations/${org.id}/credits`, { credits: 100_000_000, motif: 'bench' });
      const melange = <T>(xs: T[]) => {
        const g = seededRandom(SEED + 2);
        for (let i = xs.length - 1; i > 0; i--) {
          const j = g.int(i + 1);
          [xs[i], xs[j]] = [xs[j]!, xs[i]!];
        }
        return xs;
      };
      const ecrireChemins = async (nom: string, chemins: string[], concurrence = CONCURRENCES.at(-1)!) => {
        const f = path.join(database.dir, `${nom}.json`);
        await writeFile(f, JSON.stringify(chemins));
        return { base: service.url, cle: org.cle, file: f, concurrence };
      };
      /** The paths shared between the levels of concurrency, each its own half: no input is asked twice. */
      const parConcurrence = async (nom: string, chemins: string[]) => {
        const part = Math.floor(chemins.length / CONCURRENCES.length);
        const mesures: Array<[number, LoadResult]> = [];
        for (const [i, c] of CONCURRENCES.entries()) {
          mesures.push([
            c,
            await charge(await ecrireChemins(`${nom}-${c}`, chemins.slice(i * part, (i + 1) * part), c)),
          ]);
        }
        return mesures;
      };
      // Every request a new input: the service keeps answers 6-24 h in memory by input. The scale's warm-up takes
      // its own share of them (the first reads of a kind pay for the JIT and the server's caches).
      const prixTous = melange(
        codes.flatMap((c) => ['', '?type=appartement', '?type=maison'].map((q) => `/api/v1/communes/${c}/prix${q}`)),
      );
      const prixChauffe = prixTous.slice(0, Math.min(WARMUP, Math.floor(prixTous.length / 6)));
      const prixChemins = prixTous.slice(prixChauffe.length);
      const palmares = Array.from(
        { length: REQUESTS + WARMUP },
        (_, i) =>
          `/api/v1/communes/palmares?indicateur=${INDICATEURS[i % INDICATEURS.length]}&transactions_min=${Math.floor(i / INDICATEURS.length)}`,
      );
      const g = seededRandom(SEED + 3);
      const comparaisons = Array.from({ length: REQUESTS + WARMUP }, () => {
        const n = 2 + g.int(9);
        return `/api/v1/communes/comparaison?insee=${Array.from({ length: n }, () => g.pick(codes)).join(',')}`;
      });
      const avant = loadAverage();
      // Warm-up: the service's first requests (connections, JIT), not measured.
      await charge(
        await ecrireChemins('chauffe', [...prixChauffe, ...palmares.slice(REQUESTS), ...comparaisons.slice(REQUESTS)]),
      );
      const resultats = {
        prix_commune: await parConcurrence('prix', prixChemins),
        palmares_communes: await parConcurrence('palmares', palmares.slice(0, REQUESTS)),
        comparer_communes: await parConcurrence('comparaison', comparaisons.slice(0, REQUESTS)),
      };
      const apres = loadAverage();
      const s = (x: number) => x.toFixed(1);
      const ligne = (nom: string, quoi: string, mesures: Array<[number, LoadResult]>) =>
        mesures
          .map(
            ([c, r]) =>
              `| \`${nom}\` | ${quoi} | ${c} | ${r.n} | ${s(r.rps)} | ${s(r.p50)} | **${s(r.p95)}** | ${s(r.p99)} | ${s(r.max)} | ${r.non200} |`,
          )
          .join('\n');
      await writeSection(
        'Communes market',
        [
          `Machine: ${machine()}, ${database.label}; the machine is shared with other work, so timings are indicative. Load average (1 / 5 / 15 min) before the requests: ${avant}, after: ${apres}.`,
          `Generated Etalab "DVF géolocalisées" file (seed ${SEED}): ${MUTATIONS.toLocaleString('en')} mutations (${lignes.toLocaleString('en')} lines: flats, some with a cellar, houses on one or two land subdivisions, blocks of 2-3 flats), years 2020-2024, over the ${centres.length} most populated communes DVF covers; rents, A/B/C zones and F/G shares written for each. Imported by the DVF importer in ${importS.toFixed(1)} s (${report.gardes.toLocaleString('en')} lines kept, ${compte[0]!.n.toLocaleString('en')} mutations), its rebuilds included.`,
          '',
          '| rebuild | runs (s) | median |',
          '|---|---|---|',
          `| \`marche_prix\` for the ${codes.length} communes and their départements (${ecrites.toLocaleString('en')} rows: year and quarter, by type) | ${prix.map((x) => x.toFixed(2)).join(', ')} | **${median(prix).toFixed(2)} s** |`,
          `| derived tables: ${sortie!.indicateurs} communes' indicators, ${sortie!.classement} ranking rows, ${sortie!.bassins} neighbourhood rows, ${sortie!.iris} IRIS rows, ${sortie!.secteurs} postal codes | ${derives.map((x) => x.toFixed(2)).join(', ')} | **${median(derives).toFixed(2)} s** |`,
          '',
          `Reads through the service as \`npm start\` runs it (embedded Temporal, worker, logs to a file) on this database, the load generator in its own process, ${CONCURRENCES.join(' then ')} request(s) at a time (each on its own half of the inputs), every request a new input (none answered from the service's memory), after ${prixChauffe.length + WARMUP * 2} warm-up requests (each kind of read). Target p95 < 20 ms.`,
          '',
          '| operation | requests | at a time | n | req/s | p50 ms | p95 ms | p99 ms | max ms | non-200 |',
          '|---|---|---|---|---|---|---|---|---|---|',
          ligne('prix_commune', 'each commune, each type filter, shuffled', resultats.prix_commune),
          ligne(
            'palmares_communes',
            'France level, the ten indicators, 20 a page, transactions_min varied',
            resultats.palmares_communes,
          ),
          ligne('comparer_communes', '2 to 10 communes drawn at random', resultats.comparer_communes),
        ].join('\n'),
      );
    } finally {
      await service.stop();
    }
  } finally {
    await db.end().catch(() => {});
    await database.close();
  }
}

if (process.argv[2] === '--load') {
  const spec = JSON.parse(process.argv[3]!) as LoadSpec;
  const chemins = JSON.parse(readFileSync(spec.file, 'utf8')) as string[];
  const durees: number[] = [];
  let non200 = 0;
  let suivant = 0;
  const debut = performance.now();
  await Promise.all(
    Array.from({ length: spec.concurrence }, async () => {
      while (suivant < chemins.length) {
        const chemin = chemins[suivant++]!;
        const t0 = performance.now();
        const res = await fetch(spec.base + chemin, { headers: { authorization: `Bearer ${spec.cle}` } });
        await res.arrayBuffer();
        durees.push(performance.now() - t0);
        if (res.status !== 200) {
          non200++;
          if (non200 <= 3) console.error(`${chemin} → ${res.status}`);
        }
      }
    }),
  );
  const total = (performance.now() - debut) / 1000;
  const tri = durees.sort((a, b) => a - b);
  const out: LoadResult = {
    n: tri.length,
    p50: percentile(tri, 50),
    p95: percentile(tri, 95),
    p99: percentile(tri, 99),
    max: tri.at(-1)!,
    rps: tri.length / total,
    non200,
  };
  console.log(JSON.stringify(out));
} else {
  await main();
}
