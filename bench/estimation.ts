/**
 * Estimation benchmark (`npm run bench -- estimation`): `estimer_bien` (POST /estimations) through the service as
 * `npm start` runs it (bench/service.ts), on BENCH_ESTIMATION_MUTATIONS generated mutations (1 000 000 by default),
 * and the run time of the models' backtest (`npm run modeles`) on them.
 *
 * The data: a BAN and an Etalab "DVF géolocalisées" file over COMMUNES real communes (made-up centres), each with
 * streets of numbered addresses; sales of flats and houses at those numbers from 2019 to mid-2025, priced by the
 * commune's level, a yearly trend, the street and a lognormal error. Both imported by the importers' CLI into the
 * running service's database (DATA_DIR). Then the load generator, a process of its own (`node bench/estimation.ts
 * --load`), sends estimates of addresses as people write them, each request different (no answer served from the
 * cache), one at a time and then CONCURRENT at a time. Figures go to bench/RESULTS.md, section "Estimation".
 */
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afnor, lambert93 } from '../domain/sandbox/territoire.ts';
import { seededRandom } from '../lib/random.ts';
import { communesReelles } from './communes.ts';
import { HEADER, ligneEtalab } from './dvf-genere.ts';
import { machine, writeSection } from './results.ts';
import { startService } from './service.ts';

const MUTATIONS = Number(process.env.BENCH_ESTIMATION_MUTATIONS ?? 1_000_000);
const COMMUNES = Number(process.env.BENCH_ESTIMATION_COMMUNES ?? 200);
const REQUESTS = Number(process.env.BENCH_ESTIMATION_REQUESTS ?? 1000);
const WARMUP = 50;
const CONCURRENT = 8;
const VOIES = 30;
const NUMEROS = 40;
const SEED = 20_261_127;

const LIBELLES = [
  'de la Gare',
  'Jean Jaurès',
  'Victor Hugo',
  'des Écoles',
  'de la République',
  'du Moulin',
  'Pasteur',
  'des Lilas',
  'du Château',
  'de l’Église',
];
const TYPES_VOIE = ['Rue', 'Avenue', 'Chemin', 'Allée', 'Boulevard', 'Impasse'];

interface Commune {
  code: string;
  nom: string;
  cp: string;
  departement: string;
  lat: number;
  lon: number;
  niveau: number;
  voies: Array<{
    code: string;
    nom: string;
    effet: number;
    numeros: Array<{ numero: number; lat: number; lon: number }>;
  }>;
}

type Rng = ReturnType<typeof seededRandom>;

const normal = (rng: Rng) => Math.sqrt(-2 * Math.log(1 - rng.next())) * Math.cos(2 * Math.PI * rng.next());

/** Real communes of metropolitan France outside Alsace-Moselle, every n-th by code, with streets of their own. */
function territoire(rng: Rng): Commune[] {
  return communesReelles(COMMUNES).map((c) => {
    const lat = 43.3 + rng.next() * 6;
    const lon = -1 + rng.next() * 7;
    const noms = new Set<string>();
    const voies = Array.from({ length: VOIES }, (_, v) => {
      let nom = `${rng.pick(TYPES_VOIE)} ${rng.pick(LIBELLES)}`;
      while (noms.has(nom)) nom = `${nom} ${v}`;
      noms.add(nom);
      // Streets start within 1.5 km of the centre and run straight, a number every 15 m.
      const r = Math.sqrt(rng.next()) * 1500;
      const a = rng.next() * 2 * Math.PI;
      const d = rng.next() * 2 * Math.PI;
      const x0 = r * Math.cos(a);
      const y0 = r * Math.sin(a);
      return {
        code: `Z${String(v + 1).padStart(3, '0')}`,
        nom,
        effet: 0.08 * normal(rng),
        numeros: Array.from({ length: NUMEROS }, (_, k) => {
          const x = x0 + k * 15 * Math.cos(d);
          const y = y0 + k * 15 * Math.sin(d);
          return {
            numero: k + 1,
            lat: Math.round((lat + y / 111_320) * 1e6) / 1e6,
            lon: Math.round((lon + x / (111_320 * Math.cos((lat * Math.PI) / 180))) * 1e6) / 1e6,
          };
        }),
      };
    });
    return {
      code: c.code,
      nom: c.nom,
      cp: c.cp,
      departement: c.departement,
      lat,
      lon,
      niveau: 1500 + rng.next() * 7500,
      voies,
    };
  });
}

const BAN_HEADER =
  'id,id_fantoir,numero,rep,nom_voie,code_postal,code_insee,nom_commune,code_insee_ancienne_commune,nom_ancienne_commune,x,y,lon,lat,type_position,alias,nom_ld,libelle_acheminement,nom_afnor,source_position,source_nom_voie,certification_commune,cad_parcelles';
/** Yearly trend of prices, 2019 to 2025. */
const TENDANCE = [1, 1.04, 1.09, 1.14, 1.13, 1.08, 1.07];

const parcelle = (c: Commune, v: number, numero: number) =>
  `${c.code}000${String.fromCharCode(65 + (v % 26))}${String.fromCharCode(65 + Math.floor(v / 26))}${String(numero).padStart(4, '0')}`;

async function ecrire(file: string, lines: () => Generator<string>): Promise<void> {
  const out = createWriteStream(file);
  let chunk: string[] = [];
  for (const line of lines()) {
    chunk.push(line);
    if (chunk.length === 5000) {
      if (!out.write(`${chunk.join('\n')}\n`)) await once(out, 'drain');
      chunk = [];
    }
  }
  if (chunk.length) out.write(`${chunk.join('\n')}\n`);
  out.end();
  await once(out, 'finish');
}

function* ban(communes: Commune[]): Generator<string> {
  yield BAN_HEADER.replaceAll(',', ';');
  for (const c of communes) {
    for (const [i, v] of c.voies.entries()) {
      for (const n of v.numeros) {
        const { x, y } = lambert93(n.lat, n.lon);
        yield [
          `${c.code}_${v.code.toLowerCase()}_${String(n.numero).padStart(5, '0')}`,
          `${c.code}_${v.code}`,
          n.numero,
          '',
          v.nom,
          c.cp,
          c.code,
          c.nom,
          '',
          '',
          x,
          y,
          n.lon.toFixed(6),
          n.lat.toFixed(6),
          'entrée',
          '',
          '',
          afnor(c.nom),
          afnor(v.nom),
          'commune',
          'commune',
          '1',
          parcelle(c, i, n.numero),
        ].join(';');
      }
    }
  }
}

function* dvf(communes: Commune[], rng: Rng): Generator<string> {
  yield HEADER;
  const numeros = new Map<number, number>();
  // Mutations sorted by date, as Etalab publishes a year: each year's share drawn in turn (2025: its first half).
  const parAn = [1, 1, 1.1, 1.1, 0.9, 0.9, 0.45];
  const total = parAn.reduce((s, x) => s + x, 0);
  for (const [k, annee] of [2019, 2020, 2021, 2022, 2023, 2024, 2025].entries()) {
    const n = Math.round((MUTATIONS * parAn[k]) / total);
    const jours = annee === 2025 ? 180 : 365;
    const debut = Date.UTC(annee, 0, 1);
    const dates = Array.from({ length: n }, () => rng.int(jours)).sort((a, b) => a - b);
    for (const jour of dates) {
      const c = rng.pick(communes);
      const vi = rng.int(c.voies.length);
      const v = c.voies[vi];
      const adr = rng.pick(v.numeros);
      const maison = rng.next() < 0.4;
      const surface = maison ? 60 + rng.int(120) : 18 + rng.int(100);
      const prixM2 =
        c.niveau *
        TENDANCE[k] *
        (maison ? 0.85 : 1) *
        Math.exp(v.effet - 0.12 * Math.log(surface / 60) + 0.15 * normal(rng));
      const id = (numeros.get(annee) ?? 0) + 1;
      numeros.set(annee, id);
      const date = new Date(debut + jour * 86_400_000).toISOString().slice(0, 10);
      const local = maison
        ? {
            nombre_lots: 0,
            code_type_local: 1,
            type_local: 'Maison',
            surface_reelle_bati: surface,
            nombre_pieces_principales: 2 + Math.floor(surface / 30),
            code_nature_culture: 'S',
            nature_culture: 'sols',
            surface_terrain: 200 + rng.int(1500),
          }
        : {
            lot1_numero: 1 + rng.int(200),
            lot1_surface_carrez: (surface * 0.97).toFixed(2),
            nombre_lots: 1,
            code_type_local: 2,
            type_local: 'Appartement',
            surface_reelle_bati: surface,
            nombre_pieces_principales: 1 + Math.floor(surface / 25),
          };
      yield ligneEtalab({
        id_mutation: `${annee}-${id}`,
        date_mutation: date,
        numero_disposition: '000001',
        nature_mutation: 'Vente',
        valeur_fonciere: Math.round((prixM2 * surface) / 100) * 100,
        adresse_numero: adr.numero,
        adresse_nom_voie: afnor(v.nom),
        adresse_code_voie: v.code,
        code_postal: c.cp,
        code_commune: c.code,
        nom_commune: c.nom,
        code_departement: c.departement,
        id_parcelle: parcelle(c, vi, adr.numero),
        ...local,
        longitude: adr.lon.toFixed(6),
        latitude: adr.lat.toFixed(6),
      });
    }
  }
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
const loadAverage = () =>
  os
    .loadavg()
    .map((n) => n.toFixed(1))
    .join(' / ');

interface LoadSpec {
  url: string;
  cle: string;
  communes: Array<Pick<Commune, 'nom' | 'cp'> & { voies: Array<{ nom: string; numeros: number }> }>;
  requests: number;
  concurrent: number;
  seed: number;
}

interface LoadResult {
  latences: number[];
  statuts: Record<string, number>;
  socles: Record<string, number>;
  dureeS: number;
}

/** The load generator's process: estimates of addresses as people write them, each body different. */
async function charger(spec: LoadSpec): Promise<LoadResult> {
  const rng = seededRandom(spec.seed);
  const latences: number[] = [];
  const statuts: Record<string, number> = {};
  const socles: Record<string, number> = {};
  let envoyees = 0;
  const debut = performance.now();
  const un = async () => {
    while (envoyees < spec.requests) {
      envoyees++;
      const c = rng.pick(spec.communes);
      const v = rng.pick(c.voies);
      const maison = rng.next() < 0.4;
      const body = {
        type: maison ? 'maison' : 'appartement',
        surface: Math.round((maison ? 60 + rng.next() * 120 : 18 + rng.next() * 100) * 10) / 10,
        adresse: `${1 + rng.int(v.numeros)} ${v.nom} ${c.nom}`,
        code_postal: c.cp,
      };
      const t0 = performance.now();
      const res = await fetch(`${spec.url}/api/v1/estimations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${spec.cle}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const text = await res.text();
      latences.push(performance.now() - t0);
      statuts[res.status] = (statuts[res.status] ?? 0) + 1;
      if (res.status === 200) {
        const socle = (JSON.parse(text) as { niveau: { socle: string } }).niveau.socle;
        socles[socle] = (socles[socle] ?? 0) + 1;
      }
    }
  };
  await Promise.all(Array.from({ length: spec.concurrent }, un));
  return { latences, statuts, socles, dureeS: (performance.now() - debut) / 1000 };
}

function enfant(spec: LoadSpec): Promise<LoadResult> {
  const proc = spawn(process.execPath, [import.meta.filename, '--load'], { stdio: ['pipe', 'pipe', 'inherit'] });
  proc.stdin.end(JSON.stringify(spec));
  let out = '';
  proc.stdout.on('data', (chunk) => (out += chunk));
  return new Promise((resolve, reject) =>
    proc.once('exit', (code) =>
      code === 0 ? resolve(JSON.parse(out) as LoadResult) : reject(new Error(`générateur de charge : code ${code}`)),
    ),
  );
}

async function main() {
  const rng = seededRandom(SEED);
  const communes = territoire(rng);
  const service = await startService();
  const dataDir = path.dirname(service.logFile);
  // The CLI reaches the running service's embedded PostgreSQL through DATA_DIR; no Temporal: the backtest is timed here.
  const cliEnv = service.cliEnv;
  const cli = (args: string[]) =>
    promisify(execFile)(process.execPath, args, {
      cwd: path.resolve(import.meta.dirname, '..'),
      env: cliEnv,
      maxBuffer: 64 * 2 ** 20,
    });
  try {
    const banFile = path.join(dataDir, 'adresses-bench.csv');
    const dvfFile = path.join(dataDir, 'dvf-bench.csv');
    let t = performance.now();
    await ecrire(banFile, () => ban(communes));
    await ecrire(dvfFile, () => dvf(communes, rng));
    const generationS = (performance.now() - t) / 1000;
    console.log(`données générées en ${generationS.toFixed(1)} s`);
    t = performance.now();
    await cli(['scripts/import.ts', 'ban', banFile]);
    const banS = (performance.now() - t) / 1000;
    t = performance.now();
    const dvfRun = await cli(['scripts/import.ts', 'dvf', dvfFile]);
    const dvfS = (performance.now() - t) / 1000;
    const mutations = /mutations : (\d+)/.exec(dvfRun.stdout)?.[1] ?? '?';
    console.log(`imports : BAN ${banS.toFixed(1)} s, DVF ${dvfS.toFixed(1)} s (${mutations} mutations)`);
    t = performance.now();
    const modeles = await cli(['scripts/modeles.ts']);
    const backtestS = (performance.now() - t) / 1000;
    console.log(modeles.stdout);
    const chargeAvant = loadAverage();

    const org = await service.organisation();
    await service.admin('POST', `/organisations/${org.id}/credits`, { credits: 100_000_000, motif: 'bench' });
    const spec = (requests: number, concurrent: number, seed: number): LoadSpec => ({
      url: service.url,
      cle: org.cle,
      communes: communes.map((c) => ({
        nom: c.nom,
        cp: c.cp,
        voies: c.voies.map((v) => ({ nom: v.nom, numeros: v.numeros.length })),
      })),
      requests,
      concurrent,
      seed,
    });
    await enfant(spec(WARMUP, 1, 1));
    const seul = await enfant(spec(REQUESTS, 1, 2));
    const plusieurs = await enfant(spec(REQUESTS, CONCURRENT, 3));
    const chargeApres = loadAverage();

    const ligne = (nom: string, r: LoadResult) => {
      const s = [...r.latences].sort((a, b) => a - b);
      return `| ${nom} | ${r.latences.length} | ${(r.latences.length / r.dureeS).toFixed(0)} | ${percentile(s, 50).toFixed(1)} | **${percentile(s, 95).toFixed(1)}** | ${s[s.length - 1].toFixed(1)} | ${Object.entries(
        r.statuts,
      )
        .map(([k, n]) => `${k}: ${n}`)
        .join(', ')} | ${Object.entries(r.socles)
        .map(([k, n]) => `${k} ${n}`)
        .join(', ')} |`;
    };
    const duree = (nom: string) => new RegExp(`^${nom} : .*?([\\d.]+) s$`, 'm').exec(modeles.stdout)?.[1] ?? '?';
    const estimees = /^estimation : .*?(\d+) ventes estimées/m.exec(modeles.stdout)?.[1] ?? '?';
    await writeSection(
      'Estimation',
      [
        `Machine: ${machine()}; load average ${chargeAvant} before the requests, ${chargeApres} after (a shared machine: figures indicative).`,
        `The service as \`npm start\` runs it (embedded PostgreSQL 18, Temporal dev server, worker; bench/service.ts), the load generator in a process of its own. Generated data (seed ${SEED}): ${COMMUNES} real communes with made-up centres, ${VOIES} streets of ${NUMEROS} numbers each (BAN, ${COMMUNES * VOIES * NUMEROS} addresses), ${MUTATIONS.toLocaleString('en')} DVF mutations of one flat or house from 2019 to June 2025 at those numbers (${mutations} written), priced by the commune's level, a yearly trend, the street and a lognormal error; generated in ${generationS.toFixed(1)} s, imported by the CLI in ${banS.toFixed(1)} s (BAN) and ${dvfS.toFixed(1)} s (DVF).`,
        '',
        '`estimer_bien` (POST /estimations), each request a different address and surface (no answer from the cache), the address resolved in the BAN, comparables within 300 m to 3 km:',
        '',
        '| calls | n | req/s | p50 ms | p95 ms | max ms | statuses | socle |',
        '| --- | --- | --- | --- | --- | --- | --- | --- |',
        ligne('one at a time', seul),
        ligne(`${CONCURRENT} at a time`, plusieurs),
        '',
        `Target p95 < 50 ms (one at a time). The backtest (\`npm run modeles\`, a process of its own against the running service's database): ${backtestS.toFixed(1)} s in all, of which the estimation sheet ${duree('estimation')} s for ${estimees} held-out sales estimated (the 2025 vintage from 2019-2024), travaux ${duree('travaux')} s, bareme_prix ${duree('bareme_prix')} s.`,
      ].join('\n'),
    );
  } finally {
    await service.stop();
  }
}

if (process.argv[2] === '--load') {
  let input = '';
  for await (const chunk of process.stdin) input += chunk;
  process.stdout.write(JSON.stringify(await charger(JSON.parse(input) as LoadSpec)));
} else {
  await main();
}
