/**
 * Address base benchmark (`npm run bench -- adresses`, or `node bench/adresses.ts [--ban FICHIER]… [--dvf FICHIER|DOSSIER]…
 * [--nom LIBELLÉ]`): `resoudre_adresse` as users get it, the service as `npm start` runs it (bench/service.ts), one
 * request at a time over HTTP, right after each import (no VACUUM: a user's first searches come right after theirs),
 * on two inputs side by side:
 *
 * - **real**: the street addresses of real DVF sales, written as DVF writes them (`27 B BD DE CHARONNE 75011 Paris 11e
 *   Arrondissement`), against the real BAN of their communes: by default the Paris 3e-4e files of ../shared/data; with
 *   `--ban` and `--dvf`, other real files besides (a whole city's BAN and its sales), named by `--nom`;
 * - **generated**: BAN files in the official format over the real communes of whole départements (Gironde, Paris,
 *   Rhône…: one file a département, as the BAN publishes them), the addresses of a commune in proportion to its
 *   population, its streets named as France names its streets (bench/noms-de-voies.ts: the same names in thousands of
 *   communes, the same words in many names), queried as people type them (lower case, no accent, a typo) and as DVF
 *   writes them (AFNOR type, B and T suffixes, 26-character names, postal code and commune), at each size of
 *   BENCH_ADRESSES_PALIERS (1 000 000 and 5 000 000 lines by default; the national 26 000 000 when asked, disk and
 *   time allowing), imported with `npm run import -- ban` into the same base as the real files.
 *
 * Both are measured at each size, the real strings again each time (the base they are searched in grows). The two
 * must agree within a factor of 1.5: if they do not, the generated input is wrong, and the real one is the one to
 * trust. Besides: the reverse search, the accuracy of the real strings (domain/adresses/precision.ts), a batch of 100
 * real strings (`POST /adresses/recherche/lot`, each element compared with the same search alone), and where the time
 * of a search goes (reading the query, SQL, ranking, the HTTP pipeline), measured in this process on the service's
 * database. Figures go to bench/RESULTS.md, section "Address base" (BENCH_RESULTS: another file).
 */
import { execFile } from 'node:child_process';
import { createWriteStream, existsSync, readdirSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { once } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { createDb, type Db, type Queryable } from '../db/client.ts';
import { adressesDesFichiers, mesurerPrecision, texteDvf, type AdresseVente } from '../domain/adresses/precision.ts';
import { analyserRequete } from '../domain/adresses/requete.ts';
import { rechercher, type Candidat } from '../domain/adresses/resoudre.ts';
import { toutesLesCommunes, type Commune } from '../domain/communes.ts';
import { seededRandom } from '../lib/random.ts';
import { commeDvf, voiesDeCommune } from './noms-de-voies.ts';
import { machine, writeSection } from './results.ts';
import { startService, type Service } from './service.ts';

const PALIERS = (process.env.BENCH_ADRESSES_PALIERS ?? '1000000,5000000')
  .split(',')
  .map(Number)
  .sort((a, b) => a - b);
/** Generated addresses searched per form and size. */
const QUERIES = 500;
/** Real strings searched per set and size (distinct, spread over the set's sales). */
const REELLES = 1000;
const LOT = 100;
/** Batches of LOT real strings, each of strings not searched before (the service keeps answers 24 h by input). */
const LOTS = 3;
const SEED = 20_261_121;
const RAPPORT_MAX = 1.5;
// Départements in the order their files are generated: the largest cities early, as in any real extract of France;
// then every other one, for the national size.
const PREMIERS =
  '33 75 69 13 59 31 44 06 67 34 35 38 76 62 92 93 94 77 78 91 95 83 84 29 57 60 74 56 49 17 45 37 64 21 14 54 63 ' +
  '86 80 68 42 72 30 40 85 51 66 01 02 03';
// The real data of ../shared/data: the BAN of Paris 3e and 4e and the DVF sales there.
const SHARED = path.resolve(import.meta.dirname, '../../shared/data');
const BAN_REEL = path.join(SHARED, 'ban/adresses-75-extrait-75103-75104.csv');
const DVF_REEL = path.join(SHARED, 'dvf/paris_75103_75104_2024_2025');

type Hasard = ReturnType<typeof seededRandom>;

// ---------------------------------------------------------------------------------------------------------------------
// Generated data.
// ---------------------------------------------------------------------------------------------------------------------

const HEADER =
  'id;id_fantoir;numero;rep;nom_voie;code_postal;code_insee;nom_commune;code_insee_ancienne_commune;nom_ancienne_commune;x;y;lon;lat;type_position;alias;nom_ld;libelle_acheminement;nom_afnor;source_position;source_nom_voie;certification_commune;cad_parcelles';
const POSITIONS = ['entrée', 'entrée', 'entrée', 'bâtiment', 'parcelle', 'segment'];
/** Repetition indexes as the BAN writes them and as DVF does. */
const DVF_REP: Record<string, string> = { bis: 'B', ter: 'T' };

/**
 * Addresses of a commune from its population: half a number per inhabitant in villages, fewer in towns, where
 * buildings hold more people (Latresne, 3 700 inhabitants: about 1 500; Paris: 0.07 per inhabitant, about 7 500
 * an arrondissement, as the real BAN has). A municipal arrondissement counts with its city's population.
 */
function adressesDe(population: number): number {
  const ratio = population <= 1000 ? 0.5 : 0.5 * (population / 1000) ** -0.3;
  return Math.max(5, Math.round(population * ratio));
}

/** Numbers a street has on average: 8 in a village, 20 in a city. */
const numerosParVoie = (population: number) => Math.min(25, 6 + 4 * Math.log10(Math.max(100, population) / 100));

interface CommuneGeneree {
  commune: Commune;
  adresses: number;
  population: number;
  lat: number;
  lon: number;
}

/**
 * The communes of the départements in order, cities by their arrondissements, each placed on its département's grid;
 * not those of the real files (their real BAN stays as imported).
 */
function communes(reelles: Set<string>): CommuneGeneree[] {
  const toutes = [...toutesLesCommunes()];
  const parentes = new Set(toutes.map((c) => c.communeParente).filter(Boolean));
  const population = new Map(toutes.map((c) => [c.code, c.population ?? 0]));
  const premiers = PREMIERS.split(' ');
  const autres = [...new Set(toutes.map((c) => c.departement))].filter((d) => !premiers.includes(d)).sort();
  const out: CommuneGeneree[] = [];
  [...premiers, ...autres].forEach((dep, d) => {
    const liste = toutes
      .filter((c) => c.departement === dep && !parentes.has(c.code) && !reelles.has(c.code) && c.codesPostaux.length)
      .sort((a, b) => a.code.localeCompare(b.code));
    // A département is a square of 4 km cells, one commune a cell; départements side by side.
    const cote = Math.ceil(Math.sqrt(liste.length));
    liste.forEach((commune, i) => {
      const pop = commune.communeParente ? (population.get(commune.communeParente) ?? 0) : (commune.population ?? 0);
      const part = commune.communeParente ? (commune.population ?? 0) / Math.max(1, pop) : 1;
      out.push({
        commune,
        population: pop,
        adresses: Math.max(5, Math.round(adressesDe(pop) * part)),
        lat: 42 + (d % 10) * 1.0 + Math.floor(i / cote) * 0.036,
        lon: -4 + Math.floor(d / 10) * 1.2 + (i % cote) * 0.05,
      });
    });
  });
  return out;
}

interface Echantillon {
  cle: string;
  /** As people type it: lower case, no accents, one typo, the commune's name. */
  saisie: string;
  /** As DVF writes it: `12 B BD X 33000 Bordeaux`. */
  dvf: string;
  /** Number and street alone: no commune, no code; the whole base is searched. */
  seule: string;
  lat: number;
  lon: number;
}

const sansAccents = (s: string) => s.normalize('NFD').replace(/\p{M}/gu, '');

/** Lower case, no accents, and one typo (two letters swapped, one dropped or one replaced) in the longest word. */
function typo(h: Hasard, text: string): string {
  const words = sansAccents(text).toLowerCase().replace(/'/g, ' ').split(' ');
  let at = 0;
  words.forEach((w, i) => {
    if (w.length > words[at].length && !/\d/.test(w)) at = i;
  });
  const w = words[at];
  if (w.length >= 5) {
    const i = 1 + h.int(w.length - 2);
    const kind = h.int(3);
    words[at] =
      kind === 0
        ? w.slice(0, i) + w[i + 1] + w[i] + w.slice(i + 2)
        : kind === 1
          ? w.slice(0, i) + w.slice(i + 1)
          : w.slice(0, i) + String.fromCharCode(97 + h.int(26)) + w.slice(i + 1);
  }
  return words.join(' ');
}

/**
 * Writes the communes' files into `dir`, from commune `debut` until `cible` lines are reached (at a commune's end: a
 * BAN file is complete for its communes), one file a département. Returns the files, the next commune, the lines
 * written, and a query sample spread evenly over them.
 */
async function generer(
  h: Hasard,
  dir: string,
  liste: CommuneGeneree[],
  debut: number,
  cible: number,
  etape: number,
): Promise<{ fichiers: string[]; suivante: number; lignes: number; echantillons: Echantillon[] }> {
  const fichiers: string[] = [];
  const echantillons: Echantillon[] = [];
  const prendreUnSur = Math.max(1, Math.floor(cible / (QUERIES * 4)));
  let out: ReturnType<typeof createWriteStream> | null = null;
  let departement = '';
  let lignes = 0;
  const write = async (text: string) => {
    if (!out!.write(text)) await once(out!, 'drain');
  };
  const fermer = async () => {
    if (!out) return;
    out.end();
    await once(out, 'finish');
    out = null;
  };
  let i = debut;
  for (; i < liste.length && lignes < cible; i++) {
    const { commune, adresses, population, lat: clat, lon: clon } = liste[i];
    if (commune.departement !== departement) {
      await fermer();
      departement = commune.departement;
      const file = path.join(dir, `adresses-${departement}-${etape}.csv`);
      fichiers.push(file);
      out = createWriteStream(file);
      await write(`${HEADER}\n`);
    }
    // Place names of the streets' `Route de …`: the communes around.
    const lieux = liste.slice(Math.max(0, i - 30), i + 30).map((c) => c.commune.nom);
    const moyenne = numerosParVoie(population);
    // A few more names than the mean says: the numbers run out before the names.
    const voies = voiesDeCommune(h, Math.max(1, Math.round((1.3 * adresses) / moyenne)), lieux);
    const rayon = Math.max(500, 12 * Math.sqrt(adresses));
    const cp = commune.codesPostaux[0];
    let restants = adresses;
    for (let v = 0; v < voies.length && restants > 0; v++) {
      const nom = voies[v];
      const code = String(v + 1).padStart(4, '0');
      // Numbers a street has: exponentially spread around the commune's mean.
      const count = Math.min(restants, 1 + Math.floor(-Math.log(1 - h.next()) * moyenne));
      restants -= count;
      const angle = h.next() * 2 * Math.PI;
      const r = Math.sqrt(h.next()) * rayon;
      let lat = clat + (Math.cos(angle) * r) / 111_320;
      let lon = clon + (Math.sin(angle) * r) / (111_320 * Math.cos((clat * Math.PI) / 180));
      const direction = h.next() * 2 * Math.PI;
      const dLat = (Math.cos(direction) * 12) / 111_320;
      const dLon = (Math.sin(direction) * 12) / (111_320 * Math.cos((clat * Math.PI) / 180));
      const lieuDit = h.next() < 0.03 ? voies[h.int(voies.length)] : '';
      for (let k = 1; k <= count; k++) {
        lat += dLat;
        lon += dLon;
        const x = h.next();
        const rep = x < 0.03 ? 'bis' : x < 0.04 ? 'ter' : '';
        const numero = k * 2 - (k % 2);
        const id = `${commune.code}_${code}_${String(numero).padStart(5, '0')}${rep ? `_${rep}` : ''}`.toLowerCase();
        const parcelles = Array.from(
          { length: h.int(3) },
          () =>
            `${commune.code}000${String.fromCharCode(65 + h.int(26))}${String.fromCharCode(65 + h.int(26))}${String(h.int(9999)).padStart(4, '0')}`,
        );
        // One line in a thousand is broken, as real files have a few.
        const broken = h.next() < 0.001;
        await write(
          [
            id,
            `${commune.code}_${code}`,
            numero,
            rep,
            nom,
            cp,
            commune.code,
            commune.nom,
            '',
            '',
            '',
            '',
            broken ? '' : lon.toFixed(6),
            broken ? '' : lat.toFixed(6),
            h.pick(POSITIONS),
            '',
            lieuDit === nom ? '' : lieuDit,
            sansAccents(commune.nom).toUpperCase(),
            sansAccents(nom).toUpperCase().replace(/['-]/g, ' ').slice(0, 32),
            'commune',
            'commune',
            h.next() < 0.4 ? '1' : '0',
            parcelles.join('|'),
          ].join(';') + '\n',
        );
        lignes++;
        if (!broken && lignes % prendreUnSur === 0 && echantillons.length < QUERIES * 4) {
          echantillons.push({
            cle: id,
            saisie: typo(h, `${numero}${rep ? ` ${rep}` : ''} ${nom} ${commune.nom}`),
            dvf: `${numero}${rep ? ` ${DVF_REP[rep]}` : ''} ${commeDvf(nom)} ${cp} ${commune.nom}`,
            seule: sansAccents(`${numero} ${nom}`).toLowerCase(),
            lat,
            lon,
          });
        }
      }
    }
  }
  await fermer();
  return { fichiers, suivante: i, lignes, echantillons };
}

// ---------------------------------------------------------------------------------------------------------------------
// Measures.
// ---------------------------------------------------------------------------------------------------------------------

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
const ms = (x: number) => x.toFixed(1);
const en = (n: number) => n.toLocaleString('en');
const charge = () => os.loadavg()[0];

interface Latences {
  n: number;
  p50: number;
  p95: number;
  max: number;
  /** Load average (1 min) at the end of the measure: the machine is shared. */
  charge: number;
}

function latences(durees: number[]): Latences {
  const sorted = [...durees].sort((a, b) => a - b);
  return {
    n: sorted.length,
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    max: sorted.at(-1) ?? 0,
    charge: charge(),
  };
}
const pp = (l: Latences) => `${ms(l.p50)} / ${ms(l.p95)}`;

/** The service's public API, one request at a time, each with the key of an organisation of its own. */
function client(service: Service, cle: string) {
  const headers = { authorization: `Bearer ${cle}` };
  const lire = async <T>(chemin: string, init?: RequestInit): Promise<{ ms: number; corps: T }> => {
    const start = performance.now();
    const res = await fetch(`${service.url}/api/v1${chemin}`, { ...init, headers: { ...headers, ...init?.headers } });
    const corps = (await res.json()) as T;
    const duree = performance.now() - start;
    if (!res.ok) throw new Error(`${chemin} : ${res.status} ${JSON.stringify(corps)}`);
    return { ms: duree, corps };
  };
  return {
    texte: (q: string, limite: number) =>
      lire<{ candidats: Candidat[] }>(`/adresses/recherche?q=${encodeURIComponent(q)}&limite=${limite}`),
    inverse: (lat: number, lon: number) =>
      lire<{ candidats: Candidat[] }>(`/adresses/inverse?lat=${lat.toFixed(6)}&lon=${lon.toFixed(6)}&limite=5`),
    lot: (qs: string[]) =>
      lire<{ elements: Array<{ statut: number; resultat: { candidats: Candidat[] } | null }> }>(
        '/adresses/recherche/lot',
        {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ elements: qs.map((q) => ({ q, limite: 5 })) }),
        },
      ),
  };
}
type Client = ReturnType<typeof client>;

/**
 * The service keeps an answer 24 h by input: a string searched again at the next size would be served from memory.
 * Each size asks for a different number of candidates (5, then 4, 3…): the same search, another input.
 */
const limiteDe = (etape: number) => Math.max(1, 5 - etape);

/** Text searches, one at a time: their latencies, and the first candidate of each. */
async function textes(api: Client, qs: string[], limite: number) {
  const durees: number[] = [];
  const premiers: Array<string | null> = [];
  for (const q of qs) {
    const r = await api.texte(q, limite);
    durees.push(r.ms);
    premiers.push(r.corps.candidats[0]?.cle_ban ?? null);
  }
  return { ...latences(durees), durees, premiers };
}

/** Reverse searches up to ~25 m off each point, in any direction; and the share served nearest first. */
async function inverses(api: Client, h: Hasard, points: Array<{ lat: number; lon: number }>) {
  const durees: number[] = [];
  let ordonnes = 0;
  for (const p of points) {
    const r = await api.inverse(p.lat + (h.next() - 0.5) * 0.0004, p.lon + (h.next() - 0.5) * 0.0006);
    durees.push(r.ms);
    const d = r.corps.candidats.map((c) => c.distance_m!);
    if (d.length > 0 && d.every((x, i) => i === 0 || x >= d[i - 1])) ordonnes++;
  }
  return { ...latences(durees), plusProche: ordonnes / Math.max(1, points.length) };
}

/** `db` with its statements timed: what a search spends in SQL, and in how many round trips. */
function chronometre(db: Db) {
  const compte = { ms: 0, appels: 0 };
  const query = (async (...args: Parameters<Db['query']>) => {
    const start = performance.now();
    try {
      return await (db.query as (...a: unknown[]) => Promise<unknown>)(...args);
    } finally {
      compte.ms += performance.now() - start;
      compte.appels++;
    }
  }) as unknown as Queryable['query'];
  return { db: { query } as Queryable, compte };
}

/**
 * Where a search's time goes, in this process on the service's database: reading the query (normaliser.ts,
 * requete.ts), its SQL statements, the rest of rechercher() (ranking); the HTTP pipeline is the request's time over
 * HTTP less rechercher's.
 */
async function etapes(db: Db, qs: string[], http: Latences) {
  const { db: timed, compte } = chronometre(db);
  const analyse: number[] = [];
  const sql: number[] = [];
  const reste: number[] = [];
  const total: number[] = [];
  let appels = 0;
  for (const q of qs) {
    let start = performance.now();
    analyserRequete(q);
    const a = performance.now() - start;
    compte.ms = 0;
    compte.appels = 0;
    start = performance.now();
    await rechercher(timed, 'live', q, null, 5);
    const t = performance.now() - start;
    analyse.push(a);
    sql.push(compte.ms);
    reste.push(Math.max(0, t - compte.ms - a));
    total.push(t);
    appels += compte.appels;
  }
  const tot = latences(total);
  return {
    analyse: latences(analyse),
    sql: latences(sql),
    reste: latences(reste),
    total: tot,
    allersRetours: appels / Math.max(1, qs.length),
    pipeline: { p50: http.p50 - tot.p50, p95: http.p95 - tot.p95 },
  };
}

// ---------------------------------------------------------------------------------------------------------------------
// Real data.
// ---------------------------------------------------------------------------------------------------------------------

interface JeuReel {
  nom: string;
  ban: string[];
  dvf: string[];
  /** Distinct street addresses of the sales, spread: REELLES per size, then batches' strings never searched. */
  adresses: AdresseVente[];
  total: number;
}

/** A file, or the files of a folder. */
const fichiersDe = (chemins: string[]) =>
  chemins.flatMap((c) =>
    statSync(c).isDirectory()
      ? readdirSync(c)
          .filter((f) => !f.startsWith('.'))
          .map((f) => path.join(c, f))
      : [c],
  );

/** Up to `n` of `list`, spread evenly over it. */
const etales = <T>(list: T[], n: number) =>
  list.length <= n ? list : Array.from({ length: n }, (_, i) => list[Math.floor((i * list.length) / n)]);

async function jeuxReels(): Promise<JeuReel[]> {
  const { values } = parseArgs({
    options: {
      ban: { type: 'string', multiple: true, default: [] },
      dvf: { type: 'string', multiple: true, default: [] },
      nom: { type: 'string' },
    },
  });
  const jeux: Array<Omit<JeuReel, 'adresses' | 'total'>> = [];
  if (existsSync(BAN_REEL) && existsSync(DVF_REEL)) {
    jeux.push({ nom: 'Paris 3e-4e (../shared/data)', ban: [BAN_REEL], dvf: [DVF_REEL] });
  } else {
    console.log(`données réelles absentes (${SHARED}) : le jeu de Paris 3e-4e n’est pas mesuré`);
  }
  if (values.ban.length > 0 || values.dvf.length > 0) {
    if (values.ban.length === 0 || values.dvf.length === 0) throw new Error('--ban et --dvf vont ensemble');
    jeux.push({ nom: values.nom ?? path.basename(values.ban[0]), ban: values.ban, dvf: values.dvf });
  }
  const out: JeuReel[] = [];
  for (const jeu of jeux) {
    const toutes = await adressesDesFichiers(fichiersDe(jeu.dvf));
    // Distinct texts: the service would serve a text seen before from memory.
    const parTexte = new Map(toutes.map((a) => [texteDvf(a), a]));
    const distinctes = [...parTexte.values()];
    const lots = Math.min(LOTS, Math.floor(Math.max(0, distinctes.length - REELLES) / LOT));
    const choisies = etales(distinctes, REELLES + lots * LOT);
    out.push({ ...jeu, adresses: choisies, total: distinctes.length });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------------
// Run.
// ---------------------------------------------------------------------------------------------------------------------

interface MesureReelle {
  jeu: string;
  texte: Latences;
}

/** A real set, right after its import. */
interface Reel {
  jeu: JeuReel;
  importS: number;
  /** BAN numbers in the base after its import. */
  numeros: number;
  texte: Latences;
  inverse: Latences & { plusProche: number };
  precision: Awaited<ReturnType<typeof mesurerPrecision>>;
  /** Batches of LOT strings: their time, how many elements are the same search alone, the load. */
  lots: Array<{ ms: number; pareils: number; charge: number }>;
  etapes: Etapes;
}

type Etapes = Awaited<ReturnType<typeof etapes>>;

interface Palier {
  /** Generated lines added at this size. */
  ajoutees: number;
  lignes: number;
  voies: number;
  importS: number;
  importCharge: number;
  reels: MesureReelle[];
  saisie: Latences & { premier: number };
  dvf: Latences & { premier: number };
  texte: Latences;
  seule: Latences;
  inverse: Latences & { plusProche: number };
}

const pc = (n: number, d: number) => `${((n / Math.max(1, d)) * 100).toFixed(1)} %`;
const ch = (l: { charge: number }) => l.charge.toFixed(1);

async function ecrire(reels: Reel[], paliers: Palier[], generees: { dvf: Etapes; saisie: Etapes } | null) {
  const dernier = paliers.at(-1)!;
  // Real strings against generated ones written the same way (DVF's), and against both generated forms.
  const rapports = dernier.reels.flatMap((m) =>
    (
      [
        ['as DVF writes it', dernier.dvf],
        ['both forms', dernier.texte],
      ] as const
    ).map(([forme, g]) => ({ jeu: m.jeu, forme, p50: m.texte.p50 / g.p50, p95: m.texte.p95 / g.p95 })),
  );
  const dans = (x: number) => Math.max(x, 1 / x) <= RAPPORT_MAX;
  // Like for like: the real strings are written as DVF writes them.
  const accord = rapports.filter((r) => r.forme === 'as DVF writes it').every((r) => dans(r.p50) && dans(r.p95));
  const accordDeux = rapports.every((r) => dans(r.p50) && dans(r.p95));
  const colonnesReelles = reels.map((r) => r.jeu.nom);
  const tableReels = [
    '| real set | BAN numbers after its import | import | text, p50 / p95 (load) | reverse ~25 m from a sale, p50 / p95 (load) | first candidate on the right street | batch of 100 strings never searched (`POST /adresses/recherche/lot`), ms (elements the same as alone; load) |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...reels.map(
      (r) =>
        `| ${r.jeu.nom}: ${r.texte.n} of the ${en(r.jeu.total)} distinct street addresses of its sales | ${en(r.numeros)} | ${r.importS.toFixed(1)} s | **${pp(r.texte)}** (${ch(r.texte)}) | ${pp(r.inverse)} (${ch(r.inverse)}) | ${r.precision.justes} / ${r.precision.adresses} (**${pc(r.precision.justes, r.precision.adresses)}**; ${r.precision.parDistance} judged by distance) | ${r.lots.map((l) => `${ms(l.ms)} (${l.pareils}/${LOT}; ${l.charge.toFixed(1)})`).join(', ') || '-'} |`,
    ),
  ];
  const tablePaliers = [
    `| numbers in the base | streets | import of the generated lines: lines/s (load) | generated, typed (lower case, no accent, one typo) | generated, as DVF writes it | generated, both: p50 / p95 (load) | ${colonnesReelles.map((c) => `real, ${c}: p50 / p95 (load)`).join(' | ')} | real / generated as DVF writes it, p50 and p95 (/ both forms) | reverse, generated (load) | without commune nor code (${QUERIES / 5}) |`,
    `| ${Array(9 + colonnesReelles.length)
      .fill('---')
      .join(' | ')} |`,
    ...paliers.map((p) => {
      const r = p.reels.map(
        (m) =>
          `${(m.texte.p50 / p.dvf.p50).toFixed(2)}, ${(m.texte.p95 / p.dvf.p95).toFixed(2)} (${(m.texte.p50 / p.texte.p50).toFixed(2)}, ${(m.texte.p95 / p.texte.p95).toFixed(2)})`,
      );
      return `| ${en(p.lignes)} | ${en(p.voies)} | ${en(Math.round(p.ajoutees / p.importS))} (${p.importCharge.toFixed(1)}) | ${pp(p.saisie)} | ${pp(p.dvf)} | **${pp(p.texte)}** (${ch(p.texte)}) | ${p.reels.map((m) => `**${pp(m.texte)}** (${ch(m.texte)})`).join(' | ')} | ${r.join('; ') || '-'} | ${pp(p.inverse)} (${ch(p.inverse)}) | ${pp(p.seule)} |`;
    }),
  ];
  const colonnesEtapes: Array<[string, Etapes]> = [
    ...reels.map((r) => [`real, ${r.jeu.nom}, right after its import`, r.etapes] as [string, Etapes]),
    ...(generees
      ? ([
          [`generated as DVF writes it, at ${en(dernier.lignes)}`, generees.dvf],
          [`generated as typed, at ${en(dernier.lignes)}`, generees.saisie],
        ] as Array<[string, Etapes]>)
      : []),
  ];
  const ligneEtape = (label: string, f: (e: Etapes) => string) =>
    `| ${label} | ${colonnesEtapes.map(([, e]) => f(e)).join(' | ')} |`;
  const tableEtapes = [
    `| step, ms p50 / p95 | ${colonnesEtapes.map(([c]) => c).join(' | ')} |`,
    `| --- | ${colonnesEtapes.map(() => '---').join(' | ')} |`,
    ligneEtape('reading the query (normaliser.ts, requete.ts)', (e) => pp(e.analyse)),
    ligneEtape('SQL (svc_adresses_lieux), round trips a search', (e) => `${pp(e.sql)}, ${e.allersRetours.toFixed(2)}`),
    ligneEtape('ranking (scorer, sort) and the rest of rechercher()', (e) => pp(e.reste)),
    ligneEtape('rechercher(), in this process', (e) => `${pp(e.total)} (load ${ch(e.total)})`),
    ligneEtape(
      'HTTP and the pipeline (the request over HTTP less rechercher())',
      (e) => `${ms(e.pipeline.p50)} / ${ms(e.pipeline.p95)}`,
    ),
  ];
  const chute = dernier.texte;
  await writeSection(
    'Address base',
    `Machine: ${machine()}; the service as \`npm start\` runs it (embedded PostgreSQL 18, Temporal dev server, worker, logs to a file: bench/service.ts), \`resoudre_adresse\` over HTTP with a live key, one request at a time, each right after the import it reads (no VACUUM). The machine is shared with other work: the load average (1 min) is given beside each figure; load average at the end (1 / 5 / 15 min): ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' / ')}.

**Real strings** (\`texteDvf\`: \`27 B BD DE CHARONNE 75011 Paris 11e Arrondissement\`): the distinct street addresses of the real DVF sales of each set, spread over them, against the set's real BAN, imported with \`npm run import -- ban\`. ${reels.length === 0 ? 'None: ../shared/data was absent and no `--ban`/`--dvf` was given.' : ''}

${tableReels.join('\n')}

**Generated France** (seed ${SEED}, bench/noms-de-voies.ts): BAN files over the real communes of whole départements (33, 75, 69…, cities by arrondissement, every département at the national size), one file a département, addresses in proportion to population, streets named as France names them (the names every village has, famous people, saints, dates, other communes, first names and surnames, lieux-dits, the same name for streets of different types), 3 % \`bis\` and 1 % \`ter\`; one line in a thousand without coordinates (rejected). Queried as people type them and as DVF writes them (AFNOR types \`BD\`, \`AV\`, \`PAS\`, \`IMP\`…, \`B\`/\`T\` suffixes, 26-character names with \`ST\`, \`GAL\`…, postal code, commune), ${QUERIES} addresses per form, each searched once. The real sets stay in the base and are searched again at each size (${REELLES} strings; each size asks for another number of candidates, 5, 4, 3…, since the service keeps an answer 24 h by input). Milliseconds p50 / p95:

${tablePaliers.join('\n')}

At ${en(dernier.lignes)} numbers: expected number first ${pc(dernier.saisie.premier, 1)} typed, ${pc(dernier.dvf.premier, 1)} as DVF writes it; reverse nearest first ${pc(dernier.inverse.plusProche, 1)}; text max ${ms(chute.max)} ms, reverse max ${ms(dernier.inverse.max)} ms. ${rapports.length > 0 ? `Real / generated at that size: ${rapports.map((r) => `${r.jeu} against ${r.forme}: p50 ${r.p50.toFixed(2)}, p95 ${r.p95.toFixed(2)}`).join('; ')}. Like for like (generated strings written as DVF writes them, as the real ones are): **${accord ? `within ${RAPPORT_MAX}×` : `NOT within ${RAPPORT_MAX}×: the generated input is wrong, trust the real one`}**; against both generated forms: ${accordDeux ? `within ${RAPPORT_MAX}× too` : `not within ${RAPPORT_MAX}×, the typed form costing more (its round trips above: a query whose typo leaves no candidate of its communes at 0.7 reads the whole base too)`}.` : ''}

**Where the time goes** (in this process, on the service's database, the same strings again; the pipeline's share is the request's time over HTTP less rechercher()'s, percentile by percentile):

${tableEtapes.join('\n')}

**Why it is fast right after an import.** The search reads a query's streets in one GIN index scan over (commune, trigrams) (\`adresses_recherche\`, db/migrations/017), bound to the communes of its postal code or commune. That index, like every GIN index, takes new entries into a pending list, read through by every search until a VACUUM, an autoanalyze or 4 MB of entries: right after the real Paris BAN was imported, its 7,571 streets sat there and a search took 12.6 ms in the database instead of 0.6 ms (19 ms p50, 38 ms p95 over HTTP on the real Paris strings, load 5.0); a département imported into a national base never triggers the autovacuum, whose threshold is a fifth of the table. The former benchmark ran a VACUUM after its imports and never saw it. The BAN importer now merges the lists at the end of each file (\`gin_clean_pending_list\`, domain/adresses/import-ban.ts: no measurable cost, where entries inserted one by one, \`fastupdate = off\`, cost the import 15 % on a million generated lines), and a search reads its streets, their number and its communes in one call of \`svc_adresses_lieux\` (db/migrations/035), one round trip instead of three (the threshold and generic plans are the function's own settings, its statements planned once per connection). Before that, the generator gave a name to several streets of a commune (34 % of its streets shared their name with another, 64 % in communes of more than 500 streets, against 14 % in the real BAN of Paris): more streets alike to read for each query. It now gives a name once per commune, to two streets of different types one time in ten.`,
  );
}

const jeux = await jeuxReels();
const service = await startService();
const dataDir = path.dirname(service.logFile);
const db = createDb((await readFile(path.join(dataDir, 'postgres.url'), 'utf8')).trim(), 2);
const cliEnv = service.cliEnv;
const importer = async (fichiers: string[]) => {
  const start = performance.now();
  await promisify(execFile)(process.execPath, ['scripts/import.ts', 'ban', ...fichiers], {
    cwd: path.resolve(import.meta.dirname, '..'),
    env: cliEnv,
    maxBuffer: 64 * 2 ** 20,
  });
  return (performance.now() - start) / 1000;
};
const compter = async () => {
  const { rows } = await db.query<{ type: string; n: number }>(
    `SELECT type, count(*)::int AS n FROM adresses WHERE dataset = 'live' GROUP BY type`,
  );
  const n = (type: string) => rows.find((r) => r.type === type)?.n ?? 0;
  return { lignes: n('numero'), voies: n('voie') };
};

try {
  const org = await service.organisation();
  const api = client(service, org.cle);
  const h = seededRandom(SEED);

  // The real files first, each set measured right after its import; they stay beside the generated data.
  const reels: Reel[] = [];
  for (const jeu of jeux) {
    const importS = await importer(jeu.ban);
    const { lignes } = await compter();
    const qs = jeu.adresses.slice(0, REELLES).map(texteDvf);
    // Calls first, with inputs asked nowhere else (lower case, 10 candidates): the service's code compiled, its
    // connections opened and their statements planned, as on a service that has been answering for a while.
    for (const q of qs.slice(0, 100)) await api.texte(q.toLowerCase(), 10);
    for (const a of jeu.adresses.slice(0, 20)) if (a.lat !== null && a.lon !== null) await api.inverse(a.lat, a.lon);
    const texte = await textes(api, qs, limiteDe(0));
    const positions = jeu.adresses.filter((a) => a.lat !== null && a.lon !== null) as Array<{
      lat: number;
      lon: number;
    }>;
    const inverse = await inverses(api, h, etales(positions, QUERIES));
    // Batches of strings never searched before; each element against the same search alone.
    const lots = [];
    for (let i = REELLES; i + LOT <= jeu.adresses.length; i += LOT) {
      const lot = jeu.adresses.slice(i, i + LOT).map(texteDvf);
      const r = await api.lot(lot);
      const c = charge();
      let pareils = 0;
      for (const [k, q] of lot.entries()) {
        const seul = await rechercher(db, 'live', q, null, 5);
        const el = r.corps.elements[k];
        const cles = (cs: Candidat[]) => cs.map((x) => `${x.cle_ban}|${x.score}`).join(' ');
        if (el.statut === 200 && el.resultat && cles(el.resultat.candidats) === cles(seul)) pareils++;
      }
      lots.push({ ms: r.ms, pareils, charge: c });
    }
    const precision = await mesurerPrecision(db, 'live', jeu.adresses);
    const e = await etapes(db, qs, texte);
    reels.push({ jeu, importS, numeros: lignes, texte, inverse, precision, lots, etapes: e });
    console.log(
      `${jeu.nom} : texte ${pp(texte)} ms, inverse ${pp(inverse)} ms, lots ${lots.map((l) => ms(l.ms)).join(', ')} ms, justes ${precision.justes}/${precision.adresses}`,
    );
  }

  const reellesCommunes = new Set(
    (
      await db.query<{ insee: string }>(`SELECT insee FROM adresses WHERE dataset = 'live' AND type = 'commune'`)
    ).rows.map((r) => r.insee),
  );
  const liste = communes(reellesCommunes);
  const paliers: Palier[] = [];
  const echantillons: Echantillon[] = [];
  const dejaCherches = new Set<string>();
  let suivante = 0;
  let generees = 0;
  let dernieresEtapes: { dvf: Etapes; saisie: Etapes } | null = null;
  for (const [etape, palier] of PALIERS.entries()) {
    const g = await generer(h, dataDir, liste, suivante, palier - generees, etape);
    suivante = g.suivante;
    generees += g.lignes;
    echantillons.push(...g.echantillons);
    const importS = await importer(g.fichiers);
    const importCharge = charge();
    const { lignes, voies } = await compter();
    // Queries over every generated address so far, each as likely, each searched once.
    const libres = echantillons.filter((s) => !dejaCherches.has(s.cle));
    const picked: Echantillon[] = [];
    while (picked.length < QUERIES && libres.length > 0) picked.push(libres.splice(h.int(libres.length), 1)[0]);
    for (const s of picked) dejaCherches.add(s.cle);
    const limite = limiteDe(etape + 1);
    const forme = async (q: (s: Echantillon) => string, n = picked.length) => {
      const r = await textes(api, picked.slice(0, n).map(q), limite);
      const premier = r.premiers.filter((c, i) => c === picked[i].cle).length / n;
      return { ...r, premier };
    };
    const saisie = await forme((s) => s.saisie);
    const dvf = await forme((s) => s.dvf);
    const seule = await forme((s) => s.seule, QUERIES / 5);
    const inverse = await inverses(api, h, picked);
    const mesuresReelles: MesureReelle[] = [];
    for (const r of reels) {
      const texte = await textes(api, r.jeu.adresses.slice(0, REELLES).map(texteDvf), limite);
      mesuresReelles.push({ jeu: r.jeu.nom, texte });
    }
    paliers.push({
      ajoutees: g.lignes,
      lignes,
      voies,
      importS,
      importCharge,
      reels: mesuresReelles,
      saisie,
      dvf,
      // Both forms together: what the real strings are compared with.
      texte: latences([...saisie.durees, ...dvf.durees]),
      seule,
      inverse,
    });
    if (etape === PALIERS.length - 1) {
      dernieresEtapes = {
        dvf: await etapes(
          db,
          picked.map((s) => s.dvf),
          dvf,
        ),
        saisie: await etapes(
          db,
          picked.map((s) => s.saisie),
          saisie,
        ),
      };
    }
    console.log(
      `${en(lignes)} numéros : import ${importS.toFixed(0)} s ; saisie ${pp(saisie)}, dvf ${pp(dvf)}, seule ${pp(seule)}, inverse ${pp(inverse)} ; réel ${mesuresReelles.map((m) => pp(m.texte)).join(', ')}`,
    );
  }
  await ecrire(reels, paliers, dernieresEtapes);
} finally {
  await db.end();
  await service.stop();
}
