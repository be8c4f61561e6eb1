/**
 * Datasets benchmark (`npm run bench -- jeux`, or `node bench/jeux.ts [--dvf FICHIER|DOSSIER]… [--nom LIBELLÉ]`):
 * `lire_jeu` and `agreger_jeu` on `dvf` as users get them, the service as `npm start` runs it (bench/service.ts), one
 * request at a time over HTTP from this process, with a live key of a `usage` organisation funded through the admin
 * API. Two modes:
 *
 * - **generated** (default): the Etalab "DVF géolocalisées" file of bench/dvf-genere.ts, BENCH_JEUX_LIGNES lines
 *   (1 000 000 by default), imported with `npm run import -- dvf`; then every row of the BENCH_JEUX_COMMUNES largest
 *   communes (10; the largest first) read through `curseur_suivant` at `limite=100` and `limite=1000`, each row
 *   exactly once (distinct sort keys read = the database's count for the commune, no duplicate), p50/p95/p99 a page;
 *   then the median price by commune and year (`grouper=code_commune,millesime&mesures=mediane:valeur_fonciere`),
 *   BENCH_JEUX_AGREGATS calls (7) on PostgreSQL (`base: servie`), the lake built with `npm run lac -- dvf`, the same
 *   calls on DuckDB (`base: lac`), `limite_groupes` different at each call so that the response memory never answers,
 *   and both compared group by group;
 * - **real** (`--dvf`): real Etalab files (a folder: its .csv and .csv.gz at any depth), imported likewise; every row
 *   of every commune in them read through the cursor at both sizes and compared with the rows the files give by the
 *   registry's row rule (test/support/dvf-attendues.ts, the tests' own); the median price by commune and type of
 *   local (`grouper=code_commune,type_local`) on PostgreSQL, then on the lake, each equal to the continuous medians
 *   computed here from the files.
 *
 * Figures go to bench/RESULTS.md, sections "Datasets, generated DVF" and "Datasets, real DVF" (BENCH_RESULTS:
 * another file).
 */
import { execFile } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { createDb, type Db } from '../db/client.ts';
import { colonne, estDisponible, jeuNomme, sourceSql, type JeuDisponible } from '../domain/jeux/registre.ts';
import { lignesAttendues, quantile, type LigneAttendue } from '../test/support/dvf-attendues.ts';
import { DVF_COMMUNES, DVF_SEED, genererDvf } from './dvf-genere.ts';
import { machine, writeSection } from './results.ts';
import { startService, type Service } from './service.ts';

const LIGNES = Number(process.env.BENCH_JEUX_LIGNES ?? 1_000_000);
const COMMUNES_LUES = Number(process.env.BENCH_JEUX_COMMUNES ?? 10);
const AGREGATS = Number(process.env.BENCH_JEUX_AGREGATS ?? 7);
const LIMITES = [100, 1000];
const CIBLE_P95_MS = 50;
const RACINE = path.resolve(import.meta.dirname, '..');

const DVF = jeuNomme('dvf');
if (!DVF || !estDisponible(DVF)) throw new Error('le jeu dvf n’est pas au registre');
const JEU: JeuDisponible = DVF;
/** The year column of the registry's `dvf`: the DVF vintage. */
const ANNEE = 'millesime';
if (!colonne(JEU, ANNEE)) throw new Error(`dvf n’a plus de colonne ${ANNEE}`);

// ---------------------------------------------------------------------------------------------------------------------
// Measures.
// ---------------------------------------------------------------------------------------------------------------------

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
const ms = (x: number) => x.toFixed(1);
const en = (n: number) => n.toLocaleString('en');
const charge = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' / ');

interface Latences {
  n: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

function latences(durees: number[]): Latences {
  const s = [...durees].sort((a, b) => a - b);
  return { n: s.length, p50: percentile(s, 50), p95: percentile(s, 95), p99: percentile(s, 99), max: s.at(-1) ?? 0 };
}

interface Agregat {
  base: 'servie' | 'lac';
  groupes: Array<{ cles: Record<string, unknown>; n: number; mesures: Record<string, number | null> }>;
  n_groupes: number;
  tronque: boolean;
}

/** The service's public API, one request at a time. */
function client(service: Service, cle: string) {
  return async <T>(chemin: string): Promise<{ ms: number; status: number; corps: T }> => {
    const start = performance.now();
    const res = await fetch(`${service.url}/api/v1${chemin}`, { headers: { authorization: `Bearer ${cle}` } });
    const octets = await res.arrayBuffer();
    // Until the answer's last byte is in, as in bench/annonces.ts: the client's parsing is not the service's time.
    const ms = performance.now() - start;
    return { ms, status: res.status, corps: JSON.parse(Buffer.from(octets).toString()) as T };
  };
}
type Client = ReturnType<typeof client>;

const cleDe = (l: Record<string, unknown>) => `${String(l.date_mutation)}|${String(l.id_mutation)}|${String(l.rang)}`;

/** Every row of a commune through `curseur_suivant`: the time of each page, the sort keys read, the duplicates. */
async function lireCommune(api: Client, code: string, limite: number) {
  const pages: number[] = [];
  const cles = new Set<string>();
  let lues = 0;
  let curseur: string | null = null;
  do {
    const url: string = `/jeux/dvf?filtre[code_commune][eq]=${code}&limite=${limite}${curseur ? `&curseur=${encodeURIComponent(curseur)}` : ''}`;
    const r = await api<{ lignes: Array<Record<string, unknown>>; curseur_suivant: string | null }>(url);
    if (r.status !== 200) throw new Error(`${url} : ${r.status} ${JSON.stringify(r.corps)}`);
    pages.push(r.ms);
    for (const l of r.corps.lignes) cles.add(cleDe(l));
    lues += r.corps.lignes.length;
    curseur = r.corps.curseur_suivant;
  } while (curseur);
  return { pages, cles, lues, doublons: lues - cles.size };
}

/** The rows of `dvf` per commune, counted by the database through the registry's own SQL. */
async function comptesParCommune(db: Db): Promise<Array<{ code: string; n: number }>> {
  const { depuis, conditions } = sourceSql(JEU, 'live');
  const { rows } = await db.query<{ code: string; n: number }>(
    `SELECT ${colonne(JEU, 'code_commune')!.sql} AS code, count(*)::int AS n FROM ${depuis}
      WHERE ${conditions.join(' AND ')} GROUP BY 1 ORDER BY 2 DESC, 1`,
  );
  return rows;
}

/**
 * The vintage partitions of dvf_mutations the planner has statistics for (ANALYZE or autoanalyze): right after an
 * import it has none for new ones, and misjudges a commune's rows (a few instead of thousands).
 */
async function analysees(db: Db): Promise<string> {
  const { rows } = await db.query<{ n: number; analysees: number }>(
    `SELECT count(*)::int AS n, count(coalesce(last_analyze, last_autoanalyze))::int AS analysees
       FROM pg_stat_user_tables WHERE relname LIKE 'dvf\\_mutations\\_live\\_%'`,
  );
  return `${rows[0]!.analysees} of ${rows[0]!.n}`;
}

const proches = (a: number | null | undefined, b: number | null | undefined) =>
  a === null || a === undefined || b === null || b === undefined
    ? (a ?? null) === (b ?? null)
    : Math.abs(a - b) <= 1e-6 * Math.max(1, Math.abs(a));

/** Two answers of the same aggregate, group by group in their order: keys, counts and the measure. */
function comparer(a: Agregat, b: Agregat, mesure: string) {
  const n = Math.min(a.groupes.length, b.groupes.length);
  const ecarts: string[] = [];
  for (let i = 0; i < n; i++) {
    const x = a.groupes[i]!;
    const y = b.groupes[i]!;
    if (
      JSON.stringify(x.cles) !== JSON.stringify(y.cles) ||
      x.n !== y.n ||
      !proches(x.mesures[mesure], y.mesures[mesure])
    ) {
      ecarts.push(
        `#${i} ${JSON.stringify(x.cles)} n ${x.n} ${x.mesures[mesure]} / ${JSON.stringify(y.cles)} n ${y.n} ${y.mesures[mesure]}`,
      );
    }
  }
  return { compares: n, ecarts, memesGroupes: a.n_groupes === b.n_groupes };
}

/** Files given, and those of the folders given (.csv, .csv.gz, at any depth). */
function fichiersDe(chemins: string[]): string[] {
  return chemins.flatMap((c) =>
    statSync(c).isDirectory()
      ? fichiersDe(
          readdirSync(c)
            .filter((f) => !f.startsWith('.'))
            .map((f) => path.join(c, f)),
        ).filter((f) => /\.csv(\.gz)?$/.test(f))
      : [c],
  );
}

// ---------------------------------------------------------------------------------------------------------------------
// Run.
// ---------------------------------------------------------------------------------------------------------------------

const { values } = parseArgs({
  options: { dvf: { type: 'string', multiple: true, default: [] }, nom: { type: 'string' } },
});
const reel = values.dvf.length > 0;
const fichiersReels = reel ? fichiersDe(values.dvf).sort() : [];
if (reel && fichiersReels.length === 0) throw new Error(`aucun fichier .csv ni .csv.gz dans ${values.dvf.join(', ')}`);

const chargeAvant = charge();
const debut = performance.now();
const service = await startService();
const dataDir = path.dirname(service.logFile);
const db = createDb((await readFile(path.join(dataDir, 'postgres.url'), 'utf8')).trim(), 2);
// The CLI reaches the running service's embedded PostgreSQL through DATA_DIR (no Temporal address: no workflow is
// started after the import, nothing runs beside the measures).
const cliEnv = service.cliEnv;
const cli = async (args: string[]) => {
  const start = performance.now();
  const { stdout } = await promisify(execFile)(process.execPath, args, {
    cwd: RACINE,
    env: cliEnv,
    maxBuffer: 64 * 2 ** 20,
  });
  console.log(stdout.trim());
  return { s: (performance.now() - start) / 1000, stdout };
};
const nombreDe = (stdout: string, libelle: string) => Number(new RegExp(`${libelle}\\s*:\\s*(\\d+)`).exec(stdout)?.[1]);

/** `lire_jeu` over communes at each page size: latencies per page, and each commune's rows checked. */
async function lectures(api: Client, communes: Array<{ code: string; attendues: Set<string> | null; base: number }>) {
  const parLimite = [];
  for (const limite of LIMITES) {
    const pages: number[] = [];
    let lignes = 0;
    let justes = 0;
    const fautes: string[] = [];
    for (const c of communes) {
      const r = await lireCommune(api, c.code, limite);
      pages.push(...r.pages);
      lignes += r.lues;
      const manquantes = c.attendues ? [...c.attendues].filter((k) => !r.cles.has(k)).length : 0;
      const enTrop = c.attendues ? [...r.cles].filter((k) => !c.attendues!.has(k)).length : 0;
      const attendu = c.attendues ? c.attendues.size : c.base;
      if (r.doublons === 0 && r.cles.size === attendu && r.cles.size === c.base && manquantes + enTrop === 0) justes++;
      else {
        fautes.push(
          `${c.code}: ${r.cles.size} distinct keys read (${r.doublons} duplicates) for ${attendu} expected${c.attendues ? ` (${manquantes} missing, ${enTrop} not in the files; database: ${c.base})` : ''}`,
        );
      }
    }
    parLimite.push({ limite, lat: latences(pages), lignes, justes, fautes });
    console.log(
      `lire_jeu limite=${limite} : ${pages.length} pages, ${lignes} lignes, p50 ${ms(latences(pages).p50)} p95 ${ms(latences(pages).p95)} ms ; ${justes}/${communes.length} communes lues exactement une fois`,
    );
  }
  return parLimite;
}

type Lectures = Awaited<ReturnType<typeof lectures>>;

function tableLectures(l: Lectures, communes: number): string {
  return [
    '| `limite` | pages | rows read | p50 ms | **p95 ms** | p99 ms | max ms | communes read exactly once |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
    ...l.map(
      (x) =>
        `| ${x.limite} | ${en(x.lat.n)} | ${en(x.lignes)} | ${ms(x.lat.p50)} | **${ms(x.lat.p95)}** | ${ms(x.lat.p99)} | ${ms(x.lat.max)} | ${x.justes} / ${communes}${x.fautes.length ? ` (${x.fautes.slice(0, 3).join('; ')})` : ''} |`,
    ),
  ].join('\n');
}

const verdictLecture = (l: Lectures, communes: number) => [
  ...l.map(
    (x) =>
      `- \`lire_jeu\` p95 a page < ${CIBLE_P95_MS} ms at \`limite=${x.limite}\`${x.limite === 100 ? ' (the default page)' : ''}: **${x.lat.p95 < CIBLE_P95_MS ? 'met' : 'NOT met'}** (${ms(x.lat.p95)} ms).`,
  ),
  `- every row of each commune read exactly once through the cursor: **${l.every((x) => x.justes === communes) ? 'met' : 'NOT met'}**.`,
];

/** `calls` calls of an aggregate, each with its own `limite_groupes` (from `premiere` down): none from memory. */
async function agregats(api: Client, requete: string, premiere: number, calls: number, base: 'servie' | 'lac') {
  const durees: number[] = [];
  const refus: string[] = [];
  let premiereReponse: Agregat | null = null;
  for (let i = 0; i < calls; i++) {
    const r = await api<Agregat & { code?: string }>(`${requete}&limite_groupes=${premiere - i}`);
    if (r.status !== 200) {
      refus.push(`${r.status} ${r.corps.code ?? ''} after ${ms(r.ms)} ms`);
      continue;
    }
    if (r.corps.base !== base) refus.push(`answered from base ${r.corps.base}, not ${base}`);
    durees.push(r.ms);
    premiereReponse ??= r.corps;
  }
  const lat = latences(durees);
  console.log(
    `agreger_jeu (${base}) : ${durees.map(ms).join(', ')} ms ; p50 ${ms(lat.p50)} p95 ${ms(lat.p95)}${refus.length ? ` ; ${refus.join(', ')}` : ''}`,
  );
  return { lat, durees, refus, reponse: premiereReponse };
}
type Agregats = Awaited<ReturnType<typeof agregats>>;

const aggText = (a: Agregats) =>
  a.durees.length
    ? `${ms(a.lat.p50)} / **${ms(a.lat.p95)}** (${a.durees.map((d) => ms(d)).join(', ')})${a.refus.length ? `; ${a.refus.join(', ')}` : ''}`
    : `no answer: ${a.refus.join(', ')}`;

/** The lake edition built by the CLI, and where the service now says it aggregates `dvf`. */
async function lac(api: Client) {
  const r = await cli(['scripts/lac.ts', 'dvf']);
  const schema = await api<{ base: string }>('/jeux/dvf/schema');
  return { s: r.s, lignes: nombreDe(r.stdout, 'dvf'), base: schema.corps.base };
}

try {
  const org = await service.organisation({ acces: 'usage' });
  await service.admin('POST', `/organisations/${org.id}/credits`, { credits: 100_000_000, motif: 'bench' });
  const api = client(service, org.cle);

  if (!reel) {
    // ---- Generated.
    const fichier = path.join(dataDir, 'dvf-jeux.csv');
    const t0 = performance.now();
    const g = await genererDvf(fichier, LIGNES);
    const generationS = (performance.now() - t0) / 1000;
    console.log(`fichier : ${LIGNES} lignes, ${g.mutations} mutations, ${(g.bytes / 2 ** 20).toFixed(0)} Mio`);
    const chargeAvantImport = charge();
    const imp = await cli(['scripts/import.ts', 'dvf', fichier]);
    const chargeApresImport = charge();
    const comptes = await comptesParCommune(db);
    const total = comptes.reduce((s, c) => s + c.n, 0);
    const lues = comptes.slice(0, COMMUNES_LUES);
    // Connections opened, plans and code warm: a page of the smallest commune, not measured.
    await api(`/jeux/dvf?filtre[code_commune][eq]=${comptes.at(-1)!.code}&limite=50`);
    const chargeAvantLectures = charge();
    const statsAvant = await analysees(db);
    const l = await lectures(
      api,
      lues.map((c) => ({ code: c.code, attendues: null, base: c.n })),
    );
    const chargeApresLectures = charge();
    const statsApres = await analysees(db);

    const requete = `/jeux/dvf/agregats?grouper=code_commune,${ANNEE}&mesures=mediane:valeur_fonciere`;
    const servie = await agregats(api, requete, 1000, AGREGATS, 'servie');
    const chargeApresServie = charge();
    const edition = await lac(api);
    const chargeApresLac = charge();
    const duck = await agregats(api, requete, 1000 - AGREGATS, AGREGATS, 'lac');
    const chargeApresDuck = charge();
    const cmp =
      servie.reponse && duck.reponse ? comparer(servie.reponse, duck.reponse, 'mediane_valeur_fonciere') : null;
    const plusRapide =
      servie.durees.length && duck.durees.length ? (duck.lat.p50 <= servie.lat.p50 ? 'lac' : 'servie') : null;
    const egaux = cmp !== null && cmp.ecarts.length === 0 && cmp.memesGroupes;
    const rapport = servie.durees.length && duck.durees.length ? servie.lat.p50 / duck.lat.p50 : null;
    const dureeTotaleS = (performance.now() - debut) / 1000;

    await writeSection(
      'Datasets, generated DVF',
      `Machine: ${machine()}; the service as \`npm start\` runs it (embedded PostgreSQL 18, Temporal dev server, worker, logs to a file: bench/service.ts), requests over HTTP from the bench's process, one at a time, with a live key of a \`usage\` organisation. Load average (1 / 5 / 15 min) before: ${chargeAvant}; after: ${charge()}. Whole run: ${ms(dureeTotaleS / 60)} min.

Generated Etalab "DVF géolocalisées" file (bench/dvf-genere.ts, seed ${DVF_SEED}, the file of bench/dvf.ts): ${en(LIGNES)} lines, ${en(g.mutations)} mutations over ${DVF_COMMUNES} real communes, ${(g.bytes / 2 ** 20).toFixed(0)} MiB, generated in ${generationS.toFixed(1)} s; imported with \`npm run import -- dvf\` in **${imp.s.toFixed(1)} s** (${nombreDe(imp.stdout, 'gardés')} lines kept of ${nombreDe(imp.stdout, 'lus')}; load ${chargeAvantImport} before, ${chargeApresImport} after), no VACUUM after it. \`dvf\` then holds ${en(total)} rows (one a local and a land subdivision, the registry's rule), ${en(comptes[0]!.n)} in the largest commune, ${en(comptes.at(-1)!.n)} in the smallest.

**\`lire_jeu\`** \`/jeux/dvf?filtre[code_commune][eq]=…\` (an indexed filter), every row of the ${lues.length} largest communes (${lues.map((c) => `${c.code}: ${en(c.n)}`).join(', ')} rows) read page after page through \`curseur_suivant\`, all columns; "exactly once": the distinct sort keys read equal the database's count for the commune (the registry's SQL), no key read twice. Load ${chargeAvantLectures} before, ${chargeApresLectures} after. Vintage partitions of \`dvf_mutations\` with planner statistics (the importer analyses each new vintage, domain/dvf/partitions.ts): ${statsAvant} when the reads began, ${statsApres} when they ended. Without them (before 9172489) the planner took a commune for a few rows: at \`limite=1000\` it then sorted the whole commune instead of reading its index in order (measured on the real 16e arrondissement, 7 079 mutations: a page's SQL 500-670 ms before ANALYZE, 43-54 ms after; at \`limite=100\` the index order either way).

${tableLectures(l, lues.length)}

**\`agreger_jeu\`** \`${requete}\` (median price by commune and year, ${cmp ? en(servie.reponse!.n_groupes) : '?'} groups), ${AGREGATS} calls on each base, \`limite_groupes\` from 1000 down, one value a call (the response memory never answers); ms p50 / p95 (every call):

| base | p50 / p95 ms (calls) | load after |
| --- | --- | --- |
| PostgreSQL (\`base: servie\`) | ${aggText(servie)} | ${chargeApresServie} |
| lake: \`npm run lac -- dvf\` (${en(edition.lignes)} rows; it waits until the write counters have not moved for 10.5 s, then writes the Parquet file) | ${edition.s.toFixed(1)} s, then \`GET /jeux/dvf/schema\` says \`base: ${edition.base}\` | ${chargeApresLac} |
| DuckDB over the Parquet edition (\`base: lac\`) | ${aggText(duck)} | ${chargeApresDuck} |

${cmp ? `Both compared group by group, in their order, on the ${en(cmp.compares)} groups both served (of ${en(servie.reponse!.n_groupes)}; \`limite_groupes\` is at most 1000): ${egaux ? '**the same groups, counts and medians** (within 1e-6 relative)' : `**${cmp.ecarts.length} groups differ**${cmp.memesGroupes ? '' : ', and not the same number of groups'}: ${cmp.ecarts.slice(0, 5).join('; ')}`}.` : '**Not compared**: one of the bases gave no answer.'}

Verdicts:
${verdictLecture(l, lues.length).join('\n')}
- PostgreSQL and DuckDB give the same numbers: **${egaux ? 'met' : 'NOT met'}**.
- the faster is what users get: ${plusRapide === null ? '**not measured** (a base gave no answer)' : plusRapide === 'lac' ? `**met**: the lake, ${rapport!.toFixed(1)}× faster at p50, is what the service uses while its edition is fresh (after an import, PostgreSQL until the lake is rebuilt)` : `**NOT met**: PostgreSQL is faster (${(1 / rapport!).toFixed(1)}×), yet the service uses the lake whenever its edition is fresh`}.`,
    );
  } else {
    // ---- Real files.
    const nom = values.nom ?? values.dvf.map((d) => path.basename(d)).join(', ');
    const t0 = performance.now();
    const attendues = lignesAttendues(fichiersReels);
    const calculS = (performance.now() - t0) / 1000;
    const parCommune = new Map<string, LigneAttendue[]>();
    for (const a of attendues) {
      const liste = parCommune.get(a.code_commune) ?? [];
      liste.push(a);
      parCommune.set(a.code_commune, liste);
    }
    const lignesFichiers = (
      await Promise.all(
        fichiersReels.map(async (f) =>
          f.endsWith('.gz') ? null : (await readFile(f, 'utf8')).trim().split(/\r?\n/).length - 1,
        ),
      )
    ).reduce<number | null>((s, n) => (s === null || n === null ? null : s + n), 0);
    const chargeAvantImport = charge();
    const imp = await cli(['scripts/import.ts', 'dvf', ...fichiersReels]);
    const chargeApresImport = charge();
    const base = new Map((await comptesParCommune(db)).map((c) => [c.code, c.n]));
    const communes = [...parCommune.keys()].sort();
    await api(`/jeux/dvf?filtre[code_commune][eq]=${communes[0]}&limite=50`);
    const chargeAvantLectures = charge();
    const statsAvant = await analysees(db);
    const l = await lectures(
      api,
      communes.map((code) => ({
        code,
        attendues: new Set(parCommune.get(code)!.map((a) => `${a.date_mutation}|${a.id_mutation}|${a.rang}`)),
        base: base.get(code) ?? 0,
      })),
    );
    const chargeApresLectures = charge();
    const statsApres = await analysees(db);

    // The medians the files give, by commune and type of local.
    const groupes = new Map<string, { cles: Record<string, unknown>; valeurs: number[]; n: number }>();
    for (const a of attendues) {
      const k = JSON.stringify({ code_commune: a.code_commune, type_local: a.type_local });
      const g = groupes.get(k) ?? {
        cles: { code_commune: a.code_commune, type_local: a.type_local },
        valeurs: [],
        n: 0,
      };
      g.n++;
      if (a.valeur_fonciere !== null) g.valeurs.push(a.valeur_fonciere);
      groupes.set(k, g);
    }
    const requete = '/jeux/dvf/agregats?grouper=code_commune,type_local&mesures=mediane:valeur_fonciere';
    const contreFichiers = (r: Agregat | null) => {
      if (!r) return { justes: 0, fautes: ['no answer'] };
      const fautes: string[] = [];
      let justes = 0;
      for (const [k, g] of groupes) {
        const servi = r.groupes.find((x) => JSON.stringify(x.cles) === k);
        const m = quantile(g.valeurs, 0.5);
        if (servi && servi.n === g.n && proches(servi.mesures.mediane_valeur_fonciere, m)) justes++;
        else
          fautes.push(
            `${k}: file n ${g.n} median ${m}, served ${servi ? `n ${servi.n} median ${servi.mesures.mediane_valeur_fonciere}` : 'nothing'}`,
          );
      }
      if (r.n_groupes !== groupes.size) fautes.push(`${r.n_groupes} groups served, ${groupes.size} in the files`);
      return { justes, fautes };
    };
    const servie = await agregats(api, requete, 1000, AGREGATS, 'servie');
    const edition = await lac(api);
    const duck = await agregats(api, requete, 1000 - AGREGATS, AGREGATS, 'lac');
    const chargeApresAgregats = charge();
    const vsServie = contreFichiers(servie.reponse);
    const vsLac = contreFichiers(duck.reponse);
    const dureeTotaleS = (performance.now() - debut) / 1000;
    const aggLigne = (nomBase: string, a: Agregats, v: ReturnType<typeof contreFichiers>) =>
      `| ${nomBase} | ${aggText(a)} | ${v.justes} / ${groupes.size}${v.fautes.length ? ` (${v.fautes.slice(0, 3).join('; ')})` : ''} |`;

    await writeSection(
      'Datasets, real DVF',
      `Machine: ${machine()}; the service as \`npm start\` runs it (bench/service.ts), requests over HTTP from the bench's process, one at a time, with a live key of a \`usage\` organisation. Load average (1 / 5 / 15 min) before: ${chargeAvant}; after: ${charge()}. Whole run: ${ms(dureeTotaleS / 60)} min.

Real Etalab "DVF géolocalisées" files, ${nom}: ${fichiersReels.length} files${lignesFichiers === null ? '' : `, ${en(lignesFichiers)} lines`}, ${communes.length} communes; imported with \`npm run import -- dvf\` in **${imp.s.toFixed(1)} s** (${nombreDe(imp.stdout, 'gardés')} lines kept of ${nombreDe(imp.stdout, 'lus')}; load ${chargeAvantImport} before, ${chargeApresImport} after). The rows the files give by the registry's rule (one a local, one a land subdivision, test/support/dvf-attendues.ts, the tests' own), computed here in ${calculS.toFixed(1)} s: ${en(attendues.length)}.

**\`lire_jeu\`** \`/jeux/dvf?filtre[code_commune][eq]=…\` (an indexed filter), every commune of the files (${communes.map((c) => `${c}: ${en(parCommune.get(c)!.length)}`).join(', ')} rows), page after page through \`curseur_suivant\`, all columns; "exactly once": the sort keys read are those the files give, each once, and as many as the database counts. Load ${chargeAvantLectures} before, ${chargeApresLectures} after. Vintage partitions of \`dvf_mutations\` with planner statistics (the importer analyses each new vintage, domain/dvf/partitions.ts): ${statsAvant} when the reads began, ${statsApres} when they ended. Without them (before 9172489) the planner took a commune for a few rows: at \`limite=1000\` it then sorted the whole commune instead of reading its index in order (measured on the real 16e arrondissement, 7 079 mutations: a page's SQL 500-670 ms before ANALYZE, 43-54 ms after; at \`limite=100\` the index order either way).

${tableLectures(l, communes.length)}

**\`agreger_jeu\`** \`${requete}\`, ${AGREGATS} calls on each base (\`limite_groupes\` from 1000 down, one value a call), each base's answer compared group by group with the continuous medians computed here from the files (${groupes.size} groups); the lake built in between with \`npm run lac -- dvf\` (${edition.s.toFixed(1)} s, ${en(edition.lignes)} rows, \`base: ${edition.base}\` after it). Load after: ${chargeApresAgregats}.

| base | p50 / p95 ms (calls) | groups equal to the files |
| --- | --- | --- |
${aggLigne('PostgreSQL (`base: servie`)', servie, vsServie)}
${aggLigne('DuckDB over the Parquet edition (`base: lac`)', duck, vsLac)}

Verdicts:
${verdictLecture(l, communes.length).join('\n')}
- \`agreger_jeu\` median price by commune and type equal to the medians computed from the files: **${vsServie.fautes.length === 0 && vsLac.fautes.length === 0 ? 'met' : 'NOT met'}** (PostgreSQL ${vsServie.justes} / ${groupes.size}, lake ${vsLac.justes} / ${groupes.size}).`,
    );
  }
} finally {
  await db.end();
  await service.stop();
}
