import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import type { Db, Queryable } from '../../db/client.ts';
import { ecrireParquet, TYPE_DUCKDB } from '../../lib/parquet.ts';
import type { Dataset } from '../platform/sandbox.ts';
import type { Filtre } from './requete.ts';
import { estDisponible, JEUX, jeuNomme, sourceComplete, type Colonne, type JeuDisponible } from './registre.ts';

/**
 * The lake: a Parquet edition of a dataset (every row, after the removal of private individuals, as sourceComplete
 * gives them), aggregated by DuckDB. PostgreSQL aggregates a large dataset row by row through its JSON (dvf: 2.3 s on
 * 140 000 rows); DuckDB reads the columns it needs from a columnar file on both cores. An edition serves only while
 * its source tables have not been written since it was built: PostgreSQL counts every row inserted, updated or
 * deleted in each table (pg_stat_user_tables, partitions included), the edition records that count, and any import
 * since (of any vintage, commune or date) makes it stale: aggregates go back to PostgreSQL until it is rebuilt; so does
 * a release whose registry declares the dataset otherwise (a column added, an expression changed). Same
 * definitions of every measure (continuous median and quantiles: quantile_cont, percentile_cont), same groups, same
 * order, tested against PostgreSQL.
 */

export interface EditionLac {
  fichier: string;
  donnees_du: string | null;
  lignes: number;
}

/**
 * Builds the lake edition of a dataset in `dossier` and records it (jeux_lac); the previous file is removed. The date
 * is read before the copy: rows imported during it can only make the edition look older than it is, never fresher.
 */
export async function construireLac(
  db: Db,
  nom: string,
  dossier: string,
  dataset: Dataset = 'live',
  { stabiliteMs = STABILITE_MS }: { stabiliteMs?: number } = {},
) {
  const jeu = jeuNomme(nom);
  if (!jeu || !estDisponible(jeu)) throw new Error(`Jeu ${nom} : inconnu ou indisponible.`);
  let donneesDu: string | null = null;
  if (jeu.donnees_du) {
    const r = await db.query<{ d: string | null }>(jeu.donnees_du.replaceAll('{dataset}', dataset));
    donneesDu = r.rows[0]?.d ?? null;
  }
  // Counted before the copy: rows written during it can only make the edition look stale, never fresh.
  const ecritures = await ecrituresStables(db, tablesDe(jeu), stabiliteMs);
  const { sql, colonnes } = sourceComplete(nom, dataset);
  const declaration = declarationDe(nom, dataset);
  const fichier = path.resolve(dossier, `${dataset}-${nom}-${Date.now()}.parquet`);
  const ecrit = await ecrireParquet({ db, sql, colonnes, fichier });
  const avant = await db.query<{ fichier: string }>(`SELECT fichier FROM jeux_lac WHERE dataset = $1 AND jeu = $2`, [
    dataset,
    nom,
  ]);
  await db.query(
    `INSERT INTO jeux_lac (dataset, jeu, fichier, donnees_du, lignes, ecritures, declaration, construit_le)
     VALUES ($1, $2, $3, $4, $5, $6, $7, now())
     ON CONFLICT (dataset, jeu) DO UPDATE
       SET fichier = excluded.fichier, donnees_du = excluded.donnees_du, lignes = excluded.lignes,
           ecritures = excluded.ecritures, declaration = excluded.declaration, construit_le = excluded.construit_le`,
    [dataset, nom, fichier, donneesDu, ecrit.lignes, ecritures, declaration],
  );
  const ancien = avant.rows[0]?.fichier;
  if (ancien && ancien !== fichier) await rm(ancien, { force: true });
  return { fichier, donnees_du: donneesDu, lignes: ecrit.lignes };
}

/** Where the lake's files are: DATA_DIR/lac, for the worker that builds them and the api that reads them. */
export const dossierDuLac = (dataDir: string) => path.resolve(dataDir, 'lac');

/**
 * Rebuilds the lake editions of the large datasets that are stale (their tables written since, or never built), one
 * after the other; those still fresh are left as they are. `battement` is called between datasets (a long activity's
 * heartbeat).
 */
export async function rafraichirLac(
  db: Db,
  dossier: string,
  { stabiliteMs, battement = () => {} }: { stabiliteMs?: number; battement?: () => void } = {},
): Promise<Array<{ jeu: string; lignes: number | null }>> {
  await mkdir(dossier, { recursive: true });
  const larges = JEUX.filter((j): j is JeuDisponible => estDisponible(j) && j.large);
  // Once for all of them: the counts of an import just ended reach the statistics; nothing moves between builds.
  await ecrituresStables(db, tablesDe(...larges), stabiliteMs ?? STABILITE_MS);
  const faits: Array<{ jeu: string; lignes: number | null }> = [];
  for (const jeu of larges) {
    battement();
    const fraiche = await editionFraiche(db, jeu.nom, 'live');
    const lignes = fraiche ? null : (await construireLac(db, jeu.nom, dossier, 'live', { stabiliteMs: 0 })).lignes;
    faits.push({ jeu: jeu.nom, lignes });
  }
  return faits;
}

/** The tables a dataset reads: the names of its FROM clause (lower case; SQL keywords are upper case there). */
function tablesDe(...jeux: JeuDisponible[]): string[] {
  return [...new Set(jeux.flatMap((j) => [...j.depuis.matchAll(/(?:^|JOIN\s+)([a-z_]+)\s/g)].map((m) => m[1])))];
}

/** Rows ever inserted, updated or deleted in the dataset's tables and their partitions, as PostgreSQL counts them. */
async function ecrituresDe(db: Queryable, tables: string[]): Promise<string> {
  const { rows } = await db.query<{ n: string }>(
    `SELECT coalesce(sum(s.n_tup_ins + s.n_tup_upd + s.n_tup_del), 0)::text AS n
       FROM unnest($1::text[]) AS t(nom), LATERAL pg_partition_tree(t.nom::regclass) p
       JOIN pg_stat_user_tables s ON s.relid = p.relid`,
    [tables],
  );
  return rows[0].n;
}

/**
 * A session's counts reach pg_stat_user_tables when it flushes them: at the end of a transaction at most once a
 * second, else within 10 s of going idle. The count an edition records is taken once it has not moved for longer
 * than that, so that an import just ended is in it (otherwise its late counts would make the edition stale at once).
 * The other way, an aggregate may still be served from an edition for up to 10 s after an import commits.
 */
const STABILITE_MS = 10_500;

async function ecrituresStables(db: Queryable, tables: string[], attenteMs: number): Promise<string> {
  let avant = await ecrituresDe(db, tables);
  for (let essai = 0; attenteMs > 0 && essai < 6; essai++) {
    await new Promise((r) => setTimeout(r, attenteMs));
    const apres = await ecrituresDe(db, tables);
    if (apres === avant) break;
    avant = apres;
  }
  return avant;
}

/**
 * What the registry declares a dataset's rows to be (its SELECT and column types), as a digest: an edition built from
 * another declaration (an earlier release's) is not served, however fresh its tables.
 */
function declarationDe(nom: string, dataset: Dataset): string {
  const { sql, colonnes } = sourceComplete(nom, dataset);
  return createHash('sha256')
    .update(JSON.stringify([sql, colonnes.map((c) => [c.nom, c.type])]))
    .digest('base64url');
}

/**
 * The dataset's lake edition when its tables have not been written since it was built, the registry still declares
 * it as it was then, and its file is there.
 */
export async function editionFraiche(db: Queryable, nom: string, dataset: Dataset): Promise<EditionLac | null> {
  const jeu = jeuNomme(nom);
  if (!jeu || !estDisponible(jeu)) return null;
  const { rows } = await db.query<{ fichier: string; donnees_du: string | null; lignes: number; ecritures: string }>(
    `SELECT fichier, to_char(donnees_du, 'YYYY-MM-DD') AS donnees_du, lignes, ecritures::text FROM jeux_lac
      WHERE dataset = $1 AND jeu = $2 AND declaration = $3`,
    [dataset, nom, declarationDe(nom, dataset)],
  );
  const e = rows[0];
  if (!e || e.ecritures !== (await ecrituresDe(db, tablesDe(jeu)))) return null;
  return existsSync(e.fichier) ? { fichier: e.fichier, donnees_du: e.donnees_du, lignes: e.lignes } : null;
}

/** A registry column name as a DuckDB identifier (names are the registry's, [a-z0-9_]). */
const id = (c: Colonne) => `"${c.nom}"`;

/** A filter in DuckDB's SQL, its values as parameters (`$n`), with the same meaning as filtreSql's. */
function filtreDuck(f: Filtre, valeurs: unknown[]): string {
  const p = (v: unknown) => {
    valeurs.push(v);
    return `$${valeurs.length}::${TYPE_DUCKDB[f.colonne.type]}`;
  };
  const x = id(f.colonne);
  switch (f.operateur) {
    case 'eq':
      return `${x} = ${p(f.valeur)}`;
    case 'in':
      return `${x} IN (${(f.valeur as unknown[]).map(p).join(', ')})`;
    case 'lt':
      return `${x} < ${p(f.valeur)}`;
    case 'lte':
      return `${x} <= ${p(f.valeur)}`;
    case 'gt':
      return `${x} > ${p(f.valeur)}`;
    case 'gte':
      return `${x} >= ${p(f.valeur)}`;
    case 'entre': {
      const [a, b] = f.valeur as [unknown, unknown];
      return `${x} BETWEEN ${p(a)} AND ${p(b)}`;
    }
    case 'prefixe':
      return `starts_with(${x}, ${p(f.valeur)})`;
    case 'nul':
      return f.valeur ? `${x} IS NULL` : `${x} IS NOT NULL`;
  }
}

export interface MesureLac {
  fonction: 'nombre' | 'somme' | 'moyenne' | 'mediane' | 'quantile' | 'min' | 'max';
  colonne: Colonne;
  q: number | null;
}

function mesureDuck(m: MesureLac): string {
  const x = `${id(m.colonne)}::DOUBLE`;
  switch (m.fonction) {
    case 'nombre':
      return `count(${id(m.colonne)})`;
    case 'somme':
      return `sum(${x})`;
    case 'moyenne':
      return `avg(${x})`;
    case 'mediane':
      return `quantile_cont(${x}, 0.5)`;
    case 'quantile':
      // q is a number the operation parsed (0 to 1): DuckDB wants it constant.
      return `quantile_cont(${x}, ${Number(m.q)})`;
    case 'min':
      return `min(${x})`;
    case 'max':
      return `max(${x})`;
  }
}

/** A group key read back from DuckDB's JSON: numbers as numbers, dates as AAAA-MM-JJ. */
function cleLue(c: Colonne, v: unknown): unknown {
  if (v === null || v === undefined) return null;
  if (c.type === 'entier' || c.type === 'nombre') return Number(v);
  if (c.type === 'horodatage') return new Date(String(v)).toISOString();
  return v;
}

/**
 * The aggregate over the lake edition: rows shaped as PostgreSQL's (k0…, n, m0…, total), groups ordered alike
 * (largest first, then keys ascending, empty last).
 */
export async function agregerLac(options: {
  fichier: string;
  cles: Colonne[];
  mesures: MesureLac[];
  filtres: Filtre[];
  limite: number;
}): Promise<Array<Record<string, unknown>>> {
  const { fichier, cles, mesures, filtres, limite } = options;
  const valeurs: unknown[] = [];
  const where = filtres.map((f) => filtreDuck(f, valeurs));
  const select = [
    ...cles.map((c, i) => `${c.type === 'date' ? `strftime(${id(c)}, '%Y-%m-%d')` : id(c)} AS k${i}`),
    'count(*) AS n',
    ...mesures.map((m, i) => `${mesureDuck(m)} AS m${i}`),
    'count(*) OVER () AS total',
  ];
  const groupBy = cles.length > 0 ? `GROUP BY ${cles.map((_, i) => i + 1).join(', ')}` : '';
  const ordre = ['count(*) DESC', ...cles.map((_, i) => `k${i} ASC NULLS LAST`)].join(', ');
  const source = `read_parquet('${fichier.replaceAll("'", "''")}')`;
  const sql = `SELECT ${select.join(', ')} FROM ${source} ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ${groupBy} ORDER BY ${ordre} LIMIT ${Math.floor(limite)}`;
  const instance = await DuckDBInstance.create(':memory:', { threads: '2', memory_limit: '512MB' });
  const duck = await instance.connect();
  try {
    const reader = await duck.runAndReadAll(sql, valeurs as never);
    return reader.getRowObjectsJson().map((r) => {
      const row: Record<string, unknown> = { ...r };
      cles.forEach((c, i) => (row[`k${i}`] = cleLue(c, r[`k${i}`])));
      return row;
    });
  } finally {
    duck.closeSync();
    instance.closeSync();
  }
}
