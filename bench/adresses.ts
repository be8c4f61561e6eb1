/**
 * Address base benchmark (`node bench/adresses.ts`): BAN files in the official format, generated over the real
 * communes of whole départements (Gironde, Paris, Rhône, Bouches-du-Rhône…: one file a département, as the BAN
 * publishes them), the addresses of a commune in proportion to its population, its streets named as France names its
 * streets (bench/noms-de-voies.ts); imported as `npm run import -- ban <dossier>` does; then `resoudre_adresse`
 * called through its handlers, one call at a time: text searches as people type them (lower case, no accent, a typo)
 * and as DVF writes them (AFNOR type, postal code, upper case), reverse searches around numbers.
 *
 * Beside them, in the same database, the real BAN of Paris 3e and 4e and the street addresses of the real DVF sales
 * there (../shared/data, when present), geocoded the same way: the benchmark's figures must agree with the real ones
 * within a factor of 2, or the benchmark does not measure what users pay.
 *
 * BENCH_ADRESSES lines (1 000 000 by default); BENCH_ADRESSES_PALIERS="100000,1000000,5000000" measures at each of
 * these sizes, the base growing from one to the next: the growth curve, and its projection to the national 26
 * million. Figures go to bench/RESULTS.md, section "Address base".
 */
import { createWriteStream, existsSync, readdirSync } from 'node:fs';
import { once } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import { createDb, type Db } from '../db/client.ts';
import { migrate } from '../db/migrate.ts';
import { importBan } from '../domain/adresses/import-ban.ts';
import { adressesDesFichiers, mesurerPrecision, texteDvf } from '../domain/adresses/precision.ts';
import { resoudreAdresse, resoudreAdresseInverse } from '../domain/adresses/resoudre.ts';
import type { OperationContext } from '../domain/catalogue.ts';
import { toutesLesCommunes, type Commune } from '../domain/communes.ts';
import { seededRandom } from '../lib/random.ts';
import { benchDatabase } from './database.ts';
import { commeDvf, voiesDeCommune } from './noms-de-voies.ts';
import { machine, writeSection } from './results.ts';

const ROWS = Number(process.env.BENCH_ADRESSES ?? 1_000_000);
const PALIERS = (process.env.BENCH_ADRESSES_PALIERS ?? String(ROWS))
  .split(',')
  .map(Number)
  .sort((a, b) => a - b);
const QUERIES = 500;
const SEED = 20_261_121;
// Départements in the order their files are generated: the largest cities early, as in any real extract of France.
const DEPARTEMENTS = (
  '33 75 69 13 59 31 44 06 67 34 35 38 76 62 92 93 94 77 78 91 95 83 84 29 57 60 74 56 49 17 45 37 64 21 14 54 63 ' +
  '86 80 68 42 72 30 40 85 51 66 01 02 03'
).split(' ');
// Real data beside the generated data: the BAN of Paris 3e and 4e and the DVF sales there.
const SHARED = path.resolve(import.meta.dirname, '../../shared/data');
const BAN_REEL = path.join(SHARED, 'ban/adresses-75-extrait-75103-75104.csv');
const DVF_REEL = path.join(SHARED, 'dvf/paris_75103_75104_2024_2025');
const REELS = new Set(['75103', '75104']);

type Hasard = ReturnType<typeof seededRandom>;

// ---------------------------------------------------------------------------------------------------------------------
// Deterministic data.
// ---------------------------------------------------------------------------------------------------------------------

const HEADER =
  'id;id_fantoir;numero;rep;nom_voie;code_postal;code_insee;nom_commune;code_insee_ancienne_commune;nom_ancienne_commune;x;y;lon;lat;type_position;alias;nom_ld;libelle_acheminement;nom_afnor;source_position;source_nom_voie;certification_commune;cad_parcelles';
const POSITIONS = ['entrée', 'entrée', 'entrée', 'bâtiment', 'parcelle', 'segment'];

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

/** The communes of the départements in order, cities by their arrondissements, each placed on its département's grid. */
function communes(): CommuneGeneree[] {
  const toutes = [...toutesLesCommunes()];
  const parentes = new Set(toutes.map((c) => c.communeParente).filter(Boolean));
  const population = new Map(toutes.map((c) => [c.code, c.population ?? 0]));
  const out: CommuneGeneree[] = [];
  DEPARTEMENTS.forEach((dep, d) => {
    const liste = toutes
      .filter((c) => c.departement === dep && !parentes.has(c.code) && !REELS.has(c.code) && c.codesPostaux.length)
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
        lat: 43 + (d % 7) * 1.2 + Math.floor(i / cote) * 0.036,
        lon: -1 + Math.floor(d / 7) * 1.5 + (i % cote) * 0.05,
      });
    });
  });
  return out;
}

interface Echantillon {
  cle: string;
  saisie: string;
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
        const bis = h.next() < 0.03;
        const numero = k * 2 - (k % 2);
        const id = `${commune.code}_${code}_${String(numero).padStart(5, '0')}${bis ? '_bis' : ''}`.toLowerCase();
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
            bis ? 'bis' : '',
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
            saisie: typo(h, `${numero}${bis ? ' bis' : ''} ${nom} ${commune.nom}`),
            dvf: `${numero}${bis ? ' B' : ''} ${commeDvf(nom)} ${cp} ${sansAccents(commune.nom).toUpperCase()}`,
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
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
const ms = (x: number) => x.toFixed(1);

interface Latences {
  p50: number;
  p95: number;
  max: number;
}

function latences(durees: number[]): Latences {
  const sorted = [...durees].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p95: percentile(sorted, 95), max: sorted.at(-1) ?? 0 };
}

function contexte(db: Db): OperationContext {
  return {
    caller: { organisationId: 'bench', cleId: 'bench', compteId: null, sandbox: false, portees: ['adresse'] },
    requestId: 'bench',
    signal: new AbortController().signal,
    services: { db, now: () => new Date() },
  } as unknown as OperationContext;
}

interface Palier {
  lignes: number;
  numeros: number;
  voies: number;
  importS: number;
  lusParS: number;
  saisie: Latences & { premier: number };
  dvf: Latences & { premier: number };
  texte: Latences;
  seule: Latences;
  inverse: Latences & { plusProche: number };
  reel: (Latences & { justes: number; adresses: number }) | null;
}

/** Text searches in both forms and reverse searches on `picked`, then the real addresses, one call at a time. */
async function mesurer(db: Db, h: Hasard, picked: Echantillon[], reelles: string[]) {
  const ctx = contexte(db);
  // A few calls first: connections opened, plans and caches warm.
  for (const s of picked.slice(-20)) {
    await resoudreAdresse.handler({ q: s.dvf, limite: 5 }, ctx);
    await resoudreAdresseInverse.handler({ lat: s.lat, lon: s.lon, limite: 5 }, ctx);
  }
  const forme = async (q: (s: Echantillon) => string, n = picked.length) => {
    const durees: number[] = [];
    let premier = 0;
    for (const s of picked.slice(0, n)) {
      const start = performance.now();
      const out = await resoudreAdresse.handler({ q: q(s), limite: 5 }, ctx);
      durees.push(performance.now() - start);
      if (out.candidats[0]?.cle_ban === s.cle) premier++;
    }
    return { durees, premier: premier / picked.length };
  };
  const saisie = await forme((s) => s.saisie);
  const dvf = await forme((s) => s.dvf);
  const seule = await forme((s) => s.seule, QUERIES / 5);
  const inverse: number[] = [];
  let plusProche = 0;
  for (const s of picked) {
    // Up to ~25 m off the number, in any direction.
    const lat = s.lat + (h.next() - 0.5) * 0.0004;
    const lon = s.lon + (h.next() - 0.5) * 0.0006;
    const start = performance.now();
    const out = await resoudreAdresseInverse.handler({ lat, lon, limite: 5 }, ctx);
    inverse.push(performance.now() - start);
    const d = out.candidats.map((c) => c.distance_m!);
    if (d.length > 0 && d.every((x, i) => i === 0 || x >= d[i - 1])) plusProche++;
  }
  const reel: number[] = [];
  for (const q of reelles) {
    const start = performance.now();
    await resoudreAdresse.handler({ q, limite: 5 }, ctx);
    reel.push(performance.now() - start);
  }
  return {
    saisie: { ...latences(saisie.durees), premier: saisie.premier },
    dvf: { ...latences(dvf.durees), premier: dvf.premier },
    texte: latences([...saisie.durees, ...dvf.durees]),
    seule: latences(seule.durees),
    inverse: { ...latences(inverse), plusProche: plusProche / picked.length },
    reel: reelles.length ? latences(reel) : null,
  };
}

// ---------------------------------------------------------------------------------------------------------------------
// Run.
// ---------------------------------------------------------------------------------------------------------------------

const database = await benchDatabase('adresses');
const db = createDb(database.url, 4);
try {
  await migrate(db);
  const h = seededRandom(SEED);
  const liste = communes();

  // The real data first: it stays beside the generated data at every size.
  const reel = existsSync(BAN_REEL) && existsSync(DVF_REEL);
  let reelles: Awaited<ReturnType<typeof adressesDesFichiers>> = [];
  if (reel) {
    await importBan(db, BAN_REEL);
    reelles = await adressesDesFichiers(readdirSync(DVF_REEL).map((f) => path.join(DVF_REEL, f)));
    console.log(`réel : BAN de Paris 3e-4e, ${reelles.length} adresses de voie des ventes DVF`);
  }

  const paliers: Palier[] = [];
  const echantillons: Echantillon[] = [];
  let suivante = 0;
  let lignes = 0;
  let peakRss = 0;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 100);
  let derniers: string[] = [];
  for (const [etape, palier] of PALIERS.entries()) {
    const g = await generer(h, database.dir, liste, suivante, palier - lignes, etape);
    suivante = g.suivante;
    lignes += g.lignes;
    echantillons.push(...g.echantillons);
    derniers = g.fichiers;
    const t0 = performance.now();
    const report = await importBan(db, g.fichiers);
    const importS = (performance.now() - t0) / 1000;
    await db.query('VACUUM ANALYZE adresses');
    const counts = await db.query<{ type: string; n: number }>(
      `SELECT type, count(*)::int AS n FROM adresses WHERE dataset = 'live' GROUP BY type`,
    );
    const n = (type: string) => counts.rows.find((r) => r.type === type)?.n ?? 0;
    // Queries over every address of the base so far, each address as likely.
    const picked = Array.from({ length: QUERIES }, () => echantillons[h.int(echantillons.length)]);
    const m = await mesurer(db, h, picked, reelles.map(texteDvf));
    const justes = reel ? await mesurerPrecision(db, 'live', reelles) : null;
    paliers.push({
      lignes,
      numeros: n('numero'),
      voies: n('voie'),
      importS,
      lusParS: report.lus / importS,
      ...m,
      reel: m.reel && justes ? { ...m.reel, justes: justes.justes, adresses: justes.adresses } : null,
    });
    console.log(JSON.stringify(paliers.at(-1)));
  }
  // The last files again: nothing to write.
  let idempotent = '';
  if (PALIERS.length === 1) {
    const t0 = performance.now();
    const again = await importBan(db, derniers);
    const unchanged = again.details.slice(0, 4).every((d) => /\(0 ajoutés, 0 modifiés/.test(d));
    idempotent = `| same files again | ${((performance.now() - t0) / 1000).toFixed(1)} s, ${unchanged ? 'nothing written' : 'ROWS WRITTEN (not idempotent)'} |\n`;
  }
  clearInterval(sampler);

  const dernier = paliers.at(-1)!;
  const avant = paliers.at(-2)?.lignes ?? 0;
  const ligne = (p: Palier) =>
    `| ${p.lignes.toLocaleString('en')} | ${p.voies.toLocaleString('en')} | ${Math.round(p.lusParS).toLocaleString('en')} | ${ms(p.saisie.p50)} / ${ms(p.saisie.p95)} | ${ms(p.dvf.p50)} / ${ms(p.dvf.p95)} | ${ms(p.texte.p95)} | ${p.reel ? `${ms(p.reel.p50)} / ${ms(p.reel.p95)}` : '-'} | ${ms(p.inverse.p50)} / ${ms(p.inverse.p95)} | ${ms(p.seule.p50)} / ${ms(p.seule.p95)} |`;
  // p95 = a × size^b through the first and last sizes, carried to the national base.
  const premier = paliers[0];
  const pente =
    paliers.length > 1
      ? Math.log(dernier.texte.p95 / premier.texte.p95) / Math.log(dernier.lignes / premier.lignes)
      : 0;
  const national = dernier.texte.p95 * (26_000_000 / dernier.lignes) ** pente;
  const rapport = dernier.reel ? dernier.reel.p95 / dernier.texte.p95 : null;
  await writeSection(
    'Address base',
    `Machine: ${machine()}, ${database.label}; load average at the end of the run (1 / 5 / 15 min): ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' / ')} (the machine is shared: other work ran meanwhile).
Generated BAN files (seed ${SEED}, bench/noms-de-voies.ts): the real communes of whole départements (${DEPARTEMENTS.slice(0, 3).join(', ')}…, cities by arrondissement), one file a département, addresses in proportion to population, streets named as France names them (types, the names every village has, famous people, saints, dates, other communes, frequent first names and surnames, lieux-dits, same-name streets of different types); one line in a thousand without coordinates (rejected). Imported as \`npm run import -- ban <dossier>\` does. ${reel ? `Beside them, the real BAN of Paris 3e-4e (6,478 addresses) and the ${dernier.reel!.adresses} street addresses of the real DVF sales there (2024-2025), written as DVF writes them.` : 'The real data (../shared/data) was absent: no real-data column.'}

\`resoudre_adresse\` through its handlers, one client, one call at a time, ${QUERIES} generated addresses per form (each query once: nothing cached), milliseconds p50 / p95:

| lines | streets | import lines/s | text, typed (lower case, no accent, one typo) | text, as DVF writes it (\`12 B BD X 33000 BORDEAUX\`) | text p95, both | real DVF addresses, Paris 3e-4e | reverse, ~25 m from a number | text without commune nor code (${QUERIES / 5}) |
| --- | --- | --- | --- | --- | --- | --- | --- | --- |
${paliers.map(ligne).join('\n')}

At ${dernier.lignes.toLocaleString('en')} lines: expected number first ${(dernier.saisie.premier * 100).toFixed(1)} % typed, ${(dernier.dvf.premier * 100).toFixed(1)} % as DVF writes it; reverse nearest first ${(dernier.inverse.plusProche * 100).toFixed(1)} %; text max ${ms(Math.max(dernier.saisie.max, dernier.dvf.max))} ms, reverse max ${ms(dernier.inverse.max)} ms.${dernier.reel ? ` Real DVF addresses: the street DVF attached first for ${dernier.reel.justes} of ${dernier.reel.adresses} (${((dernier.reel.justes / dernier.reel.adresses) * 100).toFixed(1)} %); real p95 / benchmark p95 = **${rapport!.toFixed(2)}** (within a factor of 2: ${rapport! <= 2 && rapport! >= 0.5 ? 'yes' : 'NO'}).` : ''} Peak RSS of the process: ${Math.round(peakRss / 2 ** 20)} MiB.

| import | value |
| --- | --- |
| ${avant ? `${(dernier.lignes - avant).toLocaleString('en')} lines added to ${avant.toLocaleString('en')} (last stage)` : `${dernier.lignes.toLocaleString('en')} lines`} | ${dernier.importS.toFixed(1)} s, **${Math.round(dernier.lusParS).toLocaleString('en')} lines/s** |
${idempotent}
**Growth and the national base.** ${paliers.length > 1 ? `Text p95 grows as size^${pente.toFixed(2)} from ${premier.lignes.toLocaleString('en')} to ${dernier.lignes.toLocaleString('en')} lines; carried to the national BAN's 26 million: about ${ms(national)} ms.` : 'One size measured (BENCH_ADRESSES_PALIERS gives the growth).'} Why it holds: a query that gives a postal or INSEE code, or names its commune, is bound to those communes; its streets are found by one GIN index scan over (commune, trigrams) (\`adresses_recherche\`, db/migrations/017_adresses_normalisees.sql), which crosses the posting list of each trigram with the commune's: the cost follows the number of streets of the communes asked (a few hundred; Paris's 6,000 when a query says only "Paris"), not the size of the base, and common trigrams (\`rue\`, \`de\`, \`saint\`) are never read through. Bound statements run on generic plans, made once per connection: a plan made for each query's values sometimes took a trigram's matches in the whole base instead of the communes' (pg_trgm's estimates of a name's matches are off by hundreds), and the cost then grew with the base (60 ms p95 at 5 million measured that way). Only a query whose commune is neither given nor recognised searches the whole base: by the words of its name written exactly (\`adresses_recherche_mots\`, a GIN over words: their posting lists, not those of trigrams that are everywhere), 200 streets at most, ranked here; by trigrams only when no street has them all (a misspelt name). Last column: flat too. The reverse search walks the GiST index of positions nearest first.`,
  );
} finally {
  await db.end();
  await database.close();
}
