import { hash } from 'node:crypto';
import type { PoolClient } from 'pg';
import { COPY_BINARY_HEADER, COPY_BINARY_TRAILER, CopyBinaryWriter } from '../../lib/copy-binary.ts';
import type { Dataset } from '../import/source.ts';
import { copyFrom, slices } from '../../lib/pg-copy.ts';
import type { Mutation } from './mutation.ts';
import type { FreshVintages } from './partitions.ts';

/**
 * Writing rows: mutations encoded as binary COPY rows with their fingerprint, in batches that go from a reader to the
 * writer; the writer COPies new mutations and rewrites known ones whose fingerprint changed.
 */

/** Columns written from the file, in COPY order (copyLine writes them in this order). */
const COLONNES: Array<[keyof Mutation, string]> = [
  ['id_mutation', 'text'],
  ['format', 'text'],
  ['date_mutation', 'date'],
  ['millesime', 'smallint'],
  ['nature', 'text'],
  ['nature_libelle', 'text'],
  ['valeur_fonciere', 'numeric(15,2)'],
  ['adresse_numero', 'integer'],
  ['adresse_suffixe', 'text'],
  ['adresse_voie', 'text'],
  ['code_voie', 'text'],
  ['code_postal', 'text'],
  ['insee', 'text'],
  ['commune', 'text'],
  ['departement', 'text'],
  ['lat', 'double precision'],
  ['lon', 'double precision'],
  ['parcelle_principale', 'text'],
  ['parcelles', 'text[]'],
  ['volumes', 'text[]'],
  ['nb_dispositions', 'smallint'],
  ['nb_lignes', 'integer'],
  ['locaux', 'text'],
  ['terrains', 'text'],
  ['nombre_lots', 'integer'],
  ['surface_terrain', 'double precision'],
  ['types_locaux', 'text[]'],
  ['logements', 'smallint'],
  ['surface_logements', 'double precision'],
  ['prix_m2', 'double precision'],
  ['vente_en_bloc', 'boolean'],
  ['avec_dependance', 'boolean'],
  ['avec_local_pro', 'boolean'],
  ['prix_atypique', 'boolean'],
  ['surface_atypique', 'boolean'],
  ['doublon_probable', 'boolean'],
  ['motif', 'text'],
];
const NOMS = COLONNES.map(([name]) => name);
// Kept by an update when the file has no position: the BAN number's position found since.
const POSITION = new Set(['lat', 'lon']);

/** The CopyBinaryWriter method that writes each type of COLONNES. */
const ECRITURES: Record<string, keyof CopyBinaryWriter> = {
  text: 'text',
  date: 'date',
  smallint: 'int2',
  integer: 'int4',
  'numeric(15,2)': 'numeric',
  'double precision': 'float8',
  'text[]': 'textArray',
  boolean: 'bool',
};

/**
 * Writes the columns of COLONNES of a mutation in COPY's binary format (fields only, without a row's field count).
 * Generated from COLONNES as straight code, one read of a named property per column: a loop over closures reading
 * `m[name]` made every read a lookup by name, a tenth of the readers' time (bench/RESULTS.md). locaux and terrains
 * are written as JSON text (db/migrations/013_dvf_partitions.sql).
 */
const encodeFields = new Function(
  'w',
  'm',
  COLONNES.map(([name, type]) => {
    const ecriture = ECRITURES[type];
    if (!ecriture) throw new Error(`type de colonne sans écriture binaire : ${type}`);
    if (name === 'locaux' || name === 'terrains') return `w.text(JSON.stringify(m.${name}));`;
    return `w.${ecriture}(m.${name}${type === 'numeric(15,2)' ? ', 2' : ''});`;
  }).join('\n'),
) as (w: CopyBinaryWriter, m: Mutation) => void;

/**
 * The fingerprint of a mutation's encoded columns: a re-import looks up the stored ones and writes only the
 * mutations whose columns changed. 96 bits of SHA-1 (a collision would only leave one changed mutation unwritten,
 * at odds of 2^-96).
 */
function empreinte(fields: Uint8Array): string {
  return hash('sha1', fields, 'base64url').slice(0, 16);
}

/** The staging table of known mutations that changed, made by the import on its connection. */
export const STAGING = `CREATE TEMP TABLE dvf_lot (${COLONNES.map(([n, t]) => `${n} ${t}`).join(', ')}, empreinte text) ON COMMIT PRESERVE ROWS`;
// New mutations go straight into the table (or a new vintage's own): the same columns, the dataset first, the
// position's source and the fingerprint last.
const copyInto = (table: string) =>
  `COPY ${table} (dataset, ${NOMS.join(', ')}, position_source, empreinte) FROM STDIN WITH (FORMAT binary)`;
/** A row of copyInto: the dataset, the mutation's encoded columns (written by `fields`), its position's source, its
 * fingerprint (of those columns); returns the fingerprint. */
function writeRow(w: CopyBinaryWriter, dataset: Dataset, situee: boolean, fields: () => void): string {
  w.row(COLONNES.length + 3);
  w.text(dataset);
  const start = w.end;
  fields();
  const fingerprint = empreinte(w.bytes.subarray(start, w.end));
  w.text(situee ? 'dvf' : null);
  w.text(fingerprint);
  return fingerprint;
}
const COMPARES = NOMS.filter((n) => n !== 'id_mutation' && !POSITION.has(n));
/**
 * Mutations already stored whose fingerprint changed: rewritten. A position taken from the BAN since is kept while
 * the file still has none.
 */
const MISE_A_JOUR = `
UPDATE dvf_mutations m SET
  ${COMPARES.map((n) => `${n} = l.${n}`).join(', ')},
  lat = CASE WHEN l.lat IS NULL AND m.position_source = 'ban' THEN m.lat ELSE l.lat END,
  lon = CASE WHEN l.lat IS NULL AND m.position_source = 'ban' THEN m.lon ELSE l.lon END,
  position_source = CASE WHEN l.lat IS NULL AND m.position_source = 'ban' THEN 'ban'
                         WHEN l.lat IS NULL THEN NULL ELSE 'dvf' END,
  empreinte = l.empreinte,
  importe_le = now()
FROM pg_temp.dvf_lot l
WHERE m.dataset = $1 AND m.id_mutation = l.id_mutation AND m.millesime = l.millesime`;

/** A mutation ready to be looked up and written: its id and vintage, its encoded columns and their fingerprint. */
interface Staged {
  id: string;
  millesime: number;
  row: Uint8Array;
  empreinte: string;
  situee: boolean;
}

/**
 * A batch as it goes from a reader to the writer: the mutations of vintages new to the dataset as COPY data, ready
 * to send (their bytes change hands, they are not copied), the others one by one, for the writer to look them up.
 */
export interface Transfert {
  nouvelles: Array<{ millesime: number; copie: Uint8Array }>;
  connues: Staged[];
  /** Split mutations: what the first reading wrote of them goes before they are written whole. */
  oublier?: string[];
  lus: number;
  gardes: number;
}

/**
 * The batch a reader fills, for a dataset whose vintages `attached` are there already. A mutation of a new vintage
 * is written as binary COPY data straight into that vintage's buffer, its fingerprint hashed from its bytes there:
 * nothing of it is kept but those bytes. The others are kept one by one, encoded.
 */
export function createBatch(dataset: Dataset, attached: Set<number>) {
  let writers = new Map<number, CopyBinaryWriter>();
  let connues: Staged[] = [];
  let size = 0;
  return {
    get size() {
      return size;
    },
    add(m: Mutation) {
      size++;
      const situee = m.lat !== null;
      if (attached.has(m.millesime)) {
        const w = new CopyBinaryWriter(1024);
        encodeFields(w, m);
        const row = w.take();
        connues.push({ id: m.id_mutation, millesime: m.millesime, row, situee, empreinte: empreinte(row) });
        return;
      }
      let w = writers.get(m.millesime);
      if (!w) {
        writers.set(m.millesime, (w = new CopyBinaryWriter(1 << 20)));
        w.raw(COPY_BINARY_HEADER);
      }
      const writer = w;
      writeRow(writer, dataset, situee, () => encodeFields(writer, m));
    },
    /** The batch's transfer; the batch starts again empty. */
    take(oublier: string[] | undefined, lus: number, gardes: number): Transfert {
      const nouvelles = [...writers].map(([millesime, w]) => {
        w.raw(COPY_BINARY_TRAILER);
        return { millesime, copie: w.take() };
      });
      const transfert = { nouvelles, connues, oublier, lus, gardes };
      writers = new Map();
      connues = [];
      size = 0;
      return transfert;
    },
  };
}

/**
 * Writes the batches of one import, adding what it writes to `counts`. A vintage the dataset has no partition for is
 * COPied into a table of its own (`vintages`). In a vintage already there, new mutations are COPied straight into the
 * table and known ones staged and updated where they changed; which are new is first guessed (all, until a batch
 * meets a known one: a first import looks nothing up), then looked up by primary key for every following batch.
 */
export function createWriter(
  client: PoolClient,
  dataset: Dataset,
  vintages: FreshVintages,
  counts: { ajoutees: number; modifiees: number },
) {
  /** COPY data of `rows`, with `write` for each. */
  const copyData = (rows: Staged[], write: (w: CopyBinaryWriter, m: Staged) => void) => {
    const w = new CopyBinaryWriter(rows.length * 1024);
    w.raw(COPY_BINARY_HEADER);
    for (const m of rows) write(w, m);
    w.raw(COPY_BINARY_TRAILER);
    return slices(w.take());
  };
  let lookUp = false;

  const writeKnown = async (batch: Staged[]) => {
    const copyNew = (rows: Staged[]) =>
      copyFrom(
        client,
        copyInto('dvf_mutations'),
        copyData(rows, (w, m) => writeRow(w, dataset, m.situee, () => w.raw(m.row))),
      );
    if (!lookUp) {
      try {
        counts.ajoutees += await copyNew(batch);
        return;
      } catch (error) {
        // A known mutation in the batch: the COPY was rolled back whole; look ids up from now on.
        if ((error as { code?: string }).code !== '23505') throw error;
        lookUp = true;
      }
    }
    // One probe of the primary key per id (in its vintage's partition), whatever the statistics say: those of a table
    // being filled are stale enough for the planner to read the whole dataset for every batch (measured: 4.3 s of
    // lookups to re-import 171 000 mutations, 0.5 s this way).
    const rows = await withNestedLoops(
      async () =>
        (
          await client.query<{ id_mutation: string; empreinte: string }>(
            `SELECT m.id_mutation, m.empreinte FROM unnest($2::text[], $3::smallint[]) AS i(id, millesime)
               JOIN dvf_mutations m ON m.dataset = $1 AND m.id_mutation = i.id AND m.millesime = i.millesime`,
            [dataset, batch.map((m) => m.id), batch.map((m) => m.millesime)],
          )
        ).rows,
    );
    const stored = new Map(rows.map((r) => [r.id_mutation, r.empreinte]));
    const nouvelles = batch.filter((m) => !stored.has(m.id));
    if (nouvelles.length > 0) counts.ajoutees += await copyNew(nouvelles);
    // Unchanged mutations (same fingerprint) cost nothing more than the lookup.
    const changees = batch.filter((m) => stored.has(m.id) && stored.get(m.id) !== m.empreinte);
    if (changees.length === 0) return;
    await client.query('TRUNCATE pg_temp.dvf_lot');
    await copyFrom(
      client,
      'COPY pg_temp.dvf_lot FROM STDIN WITH (FORMAT binary)',
      copyData(changees, (w, m) => {
        w.row(COLONNES.length + 1);
        w.raw(m.row);
        w.text(m.empreinte);
      }),
    );
    counts.modifiees += await withNestedLoops(async () => (await client.query(MISE_A_JOUR, [dataset])).rowCount ?? 0);
  };

  /** Runs `work` in a transaction that probes indexes row by row (no hash, merge or bitmap plan). */
  const withNestedLoops = async <T>(work: () => Promise<T>): Promise<T> => {
    await client.query('BEGIN');
    try {
      await client.query(
        'SET LOCAL enable_hashjoin = off; SET LOCAL enable_mergejoin = off; SET LOCAL enable_bitmapscan = off',
      );
      const result = await work();
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    }
  };

  return {
    async write(lot: Transfert) {
      for (const { millesime, copie } of lot.nouvelles) {
        const table = await vintages.table(millesime);
        counts.ajoutees += await copyFrom(client, copyInto(table), slices(copie));
      }
      if (lot.connues.length > 0) await writeKnown(lot.connues);
    },
    /** Removes from the new vintages the parts of split mutations written by the first reading: rewritten whole. */
    async forget(ids: string[]) {
      counts.ajoutees -= await vintages.forget(ids);
    },
  };
}
