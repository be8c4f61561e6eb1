import { stat } from 'node:fs/promises';
import type { Db } from '../../db/client.ts';
import {
  ImportError,
  type Dataset,
  type ImportOptions,
  type ImportReport,
  type ImportSource,
} from '../import/source.ts';
import { createFreshVintages, vintagePartitions, type FreshVintages } from './partitions.ts';
import { reconstruireMarche } from '../marche/agregats.ts';
import { reconstruireDerives } from '../marche/derives.ts';
import { journaliserVentes } from '../flux/journal-adresses.ts';
import { ligneReanalyse, reanalyserCommunes, type Reanalyse } from '../annonces/reanalyse.ts';
import { LECTEURS, readInWorkers } from './readers.ts';
import { createWriter, STAGING } from './rows.ts';

/**
 * Importer of DVF sales: the Etalab "DVF géolocalisées" CSV (comma, 40 columns) and the raw DGFiP file (`|`, decimal
 * commas, CRLF, dd/mm/yyyy), recognised by their header, columns found by name.
 *
 * The file is streamed: lines are grouped into mutations as they come (a mutation's lines are consecutive in both
 * formats; a mutation whose lines come back later is caught by a Bloom filter and regrouped in a second reading of the
 * file, limited to those mutations), each mutation folded into one row with its recomputed fields, and rows written
 * in batches of 10 000. The table is partitioned by dataset and vintage (db/migrations/013_dvf_partitions.sql): a
 * vintage the dataset does not have yet is COPied into a table of its own without indexes, attached (its indexes
 * then built in one sorted pass each) when the whole file is read, so that it appears whole or not at all. In a
 * vintage already there, the batch's ids are looked up, new mutations are COPied straight into the table, known ones
 * COPied to a staging table and updated only where what the file says of them changed. Importing the same file
 * again writes nothing. Imports of one dataset take a lock and run one at a time; the database writes a batch while
 * the next one is parsed.
 *
 * This file runs an import; the rest is beside it: formats.ts (the two formats) and lines.ts (bytes to lines) read,
 * readers.ts runs the reading in worker threads, fold.ts folds a mutation's lines into one row (and says what it
 * computes, and why), rows.ts writes the rows, partitions.ts makes, indexes and attaches the vintages' tables.
 */

// Imports of one dataset run one at a time: a batch's new mutations are those absent when it is written.
const VERROU_IMPORT = 726_354_009;

export interface DvfImportOptions {
  dataset?: Dataset;
  /** Worker threads that read the file (LECTEURS by default). */
  lecteurs?: number;
  onProgress?: (progress: { lus: number; gardes: number }) => void;
}

export interface DvfImportReport {
  source: string;
  format: 'etalab' | 'dgfip';
  formatLibelle: string;
  /** Data lines read (header excluded), kept, and the first rejected with why. */
  lus: number;
  gardes: number;
  rejetes: Array<{ ligne: number; motif: string }>;
  mutations: { lues: number; ajoutees: number; modifiees: number; inchangees: number };
  /** Mutations whose lines were not consecutive in the file, regrouped by a second reading. */
  scindees: number;
  /** Mutations without coordinates in the file. */
  sansCoordonnees: number;
  /** Mutations newly attached to a BAN number. */
  rattacheesBan: number;
  /**
   * Sales new to the database appended to the journal of address novelties: this import's, and those of an earlier
   * one that died before appending its own (`reprise`).
   */
  nouveautes: number;
  /** An earlier import died before journaling its new sales: this one appended them (see importDvf). */
  reprise: boolean;
  millesimes: number[];
  /** The listings analysed again: their commune's price scale may have moved (domain/annonces/reanalyse.ts). */
  reanalyse: Reanalyse;
}

/**
 * Imports DVF files (Etalab geolocated CSV or raw DGFiP, plain or gzipped) into `dataset`; see the top of this file.
 * Several files (Etalab publishes one per commune or département and year) are one import: read one after the other,
 * a vintage new to the dataset appears once, whole, when all are read.
 */
export async function importDvf(
  db: Db,
  sources: string | string[],
  options: DvfImportOptions = {},
): Promise<DvfImportReport> {
  const dataset = options.dataset ?? 'live';
  const files = typeof sources === 'string' ? [sources] : sources;
  if (files.length === 0) throw new ImportError('Aucun fichier DVF à importer.');
  for (const file of files) {
    const info = await stat(file).catch(() => null);
    if (!info?.isFile()) throw new ImportError(`Fichier DVF introuvable : ${file}.`);
  }
  const report: DvfImportReport = {
    source: files.length === 1 ? files[0] : `${files.length} fichiers, de ${files[0]} à ${files.at(-1)}`,
    format: 'etalab',
    formatLibelle: '',
    lus: 0,
    gardes: 0,
    rejetes: [],
    mutations: { lues: 0, ajoutees: 0, modifiees: 0, inchangees: 0 },
    scindees: 0,
    sansCoordonnees: 0,
    rattacheesBan: 0,
    nouveautes: 0,
    reprise: false,
    millesimes: [],
    reanalyse: { examinees: 0, analysees: 0, evenements: 0 },
  };
  const client = await db.connect();
  let vintages: FreshVintages | null = null;
  try {
    await client.query('SELECT pg_advisory_lock($1, hashtext($2))', [VERROU_IMPORT, dataset]);
    // The sales that enter from now on are this import's (imports of a dataset run one at a time): its novelties.
    // As text: a Date would drop the microseconds.
    const debut = (await client.query<{ t: string }>('SELECT clock_timestamp()::text AS t')).rows[0]!.t;
    // Its novelties are owed to the journal from before its first sale until the transaction that appends them (which
    // deletes this row): committed now, before any sale, so that no sale can outlive the crash of an import that
    // leaves no row behind. A row already there is an import that died owing its own: its earlier start is kept.
    await client.query(
      `INSERT INTO dvf_journal_attente (dataset, depuis) VALUES ($1, $2::timestamptz) ON CONFLICT (dataset) DO NOTHING`,
      [dataset, debut],
    );
    // The batches' commits do not wait for the disk: after a crash, an import is run again anyway (new vintages
    // are only visible once attached, a commit that waits). Hundreds of waits saved.
    await client.query('SET synchronous_commit = off');
    await client.query('DROP TABLE IF EXISTS pg_temp.dvf_lot');
    await client.query(STAGING);
    const attached = new Set((await vintagePartitions(client, dataset)).keys());
    const dejaLa = new Set(attached);
    vintages = createFreshVintages(db, client, dataset, attached);
    const writer = createWriter(client, dataset, vintages, report.mutations);
    const lecture = await readInWorkers(files, options.lecteurs ?? LECTEURS, dataset, attached, async (lot) => {
      if (lot.oublier) await writer.forget(lot.oublier);
      await writer.write(lot);
      report.lus = lot.lus;
      report.gardes = lot.gardes;
      options.onProgress?.({ lus: report.lus, gardes: report.gardes });
    });
    Object.assign(report, {
      format: lecture.format,
      formatLibelle: lecture.formatLibelle,
      lus: lecture.lus,
      gardes: lecture.gardes,
      rejetes: lecture.rejetes,
      scindees: lecture.scindees,
      sansCoordonnees: lecture.sansCoordonnees,
      millesimes: lecture.millesimes.map((v) => v.millesime),
    });
    await vintages.attach();
    report.mutations.lues = lecture.mutations;
    // Mutations regrouped by the second reading were written twice: they may count as modified although unchanged.
    report.mutations.inchangees = Math.max(
      0,
      report.mutations.lues - report.mutations.ajoutees - report.mutations.modifiees,
    );
    report.rattacheesBan = await attachBanKeys(client, dataset, lecture.insees);
    if (lecture.millesimes.length > 0) {
      const changed = report.mutations.ajoutees + report.mutations.modifiees > 0;
      // A vintage new to the dataset holds what the file has of it: its figures are the readers' (counting them
      // again would read it whole). Unless mutations were regrouped by a second reading: they were counted twice.
      const nouveaux = lecture.scindees ? [] : lecture.millesimes.filter((v) => !dejaLa.has(v.millesime));
      const comptes = lecture.millesimes.filter((v) => !nouveaux.includes(v));
      await client.query(
        `INSERT INTO dvf_millesimes AS d (dataset, millesime, mutations, premiere_mutation, derniere_mutation)
         SELECT dataset, millesime, count(*), min(date_mutation), max(date_mutation)
           FROM dvf_mutations WHERE dataset = $1 AND millesime = ANY($2) GROUP BY dataset, millesime
         UNION ALL
         SELECT $1, * FROM unnest($4::smallint[], $5::integer[], $6::date[], $7::date[])
         ON CONFLICT (dataset, millesime) DO UPDATE SET
           mutations = excluded.mutations, premiere_mutation = excluded.premiere_mutation,
           derniere_mutation = excluded.derniere_mutation, importe_le = now()
         WHERE $3 OR (d.mutations, d.premiere_mutation, d.derniere_mutation)
                     IS DISTINCT FROM (excluded.mutations, excluded.premiere_mutation, excluded.derniere_mutation)`,
        [
          dataset,
          comptes.map((v) => v.millesime),
          changed,
          nouveaux.map((v) => v.millesime),
          nouveaux.map((v) => v.mutations),
          nouveaux.map((v) => v.premiere),
          nouveaux.map((v) => v.derniere),
        ],
      );
    }
    // What follows commits as usual, waiting for the disk.
    await client.query('RESET synchronous_commit');
    // The sales new to the database are novelties of their address, journaled once attached to the BAN. The batches
    // were written in transactions of their own (and a new vintage in the one that attached it), which the writer
    // does not share: this is one more, which also deletes the row that said the novelties were owed. Should an
    // import die between its sales and this transaction, the row stays, with its start: the next import then appends
    // every sale attached to the BAN that entered since, in any commune and vintage, after attaching to the BAN those
    // still without a number (the dead import may not have got that far). The journal's unique key keeps out those
    // already there, so taking over twice, or over sales journaled already, appends nothing twice.
    const { depuis, reprise } = (
      await client.query<{ depuis: string; reprise: boolean }>(
        `SELECT depuis::text AS depuis, depuis < $2::timestamptz AS reprise FROM dvf_journal_attente WHERE dataset = $1`,
        [dataset, debut],
      )
    ).rows[0] ?? { depuis: debut, reprise: false };
    report.reprise = reprise;
    if (reprise) {
      const lues = new Set(lecture.insees);
      const { rows } = await client.query<{ insee: string }>(
        `SELECT DISTINCT insee FROM dvf_mutations
          WHERE dataset = $1 AND cree_le >= $2::timestamptz AND cle_ban IS NULL AND insee IS NOT NULL`,
        [dataset, depuis],
      );
      const autres = rows.map((r) => r.insee).filter((insee) => !lues.has(insee));
      report.rattacheesBan += await attachBanKeys(client, dataset, autres);
    }
    await client.query('BEGIN');
    try {
      await client.query('DELETE FROM dvf_journal_attente WHERE dataset = $1', [dataset]);
      if (reprise) {
        report.nouveautes = await journaliserVentes(client, dataset, { insees: null, millesimes: null, depuis });
      } else if (report.mutations.ajoutees > 0) {
        report.nouveautes = await journaliserVentes(client, dataset, {
          insees: lecture.insees,
          millesimes: lecture.millesimes.map((v) => v.millesime),
          depuis: debut,
        });
      }
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    }
    // The Communes market's prices are rebuilt for the communes read, once their sales are all there: a reader of
    // the market never computes over raw sales (domain/marche/agregats.ts).
    await reconstruireMarche(client, dataset, lecture.insees);
    // Then the rankings, comparisons, quarter prices and pre-market, which read those prices (domain/marche/derives.ts).
    await reconstruireDerives(client, dataset);
  } finally {
    await vintages?.discard().catch(() => {});
    await client.query('DROP TABLE IF EXISTS pg_temp.dvf_lot').catch(() => {});
    await client.query('SELECT pg_advisory_unlock($1, hashtext($2))', [VERROU_IMPORT, dataset]).catch(() => {});
    await client.query('RESET synchronous_commit').catch(() => {});
    client.release();
  }
  // Then the analysis of the listings, which reads those prices and their 3-year change: the date of the data and the
  // neighbours' prices move them beyond the communes read, so every commune's listings are looked at, and the
  // fingerprints tell which changed (domain/annonces/reanalyse.ts). On the pool, once the import's connection is back:
  // a caller may hold the others.
  report.reanalyse = await reanalyserCommunes(db, dataset, 'toutes');
  options.onProgress?.({ lus: report.lus, gardes: report.gardes });
  return report;
}

/**
 * A mutation `m` without a BAN number: none attached yet, or one the BAN no longer has. The sales' columns are in
 * COLLATE "C", the addresses' in the default collation: compared in the sales' collation, the addresses' primary key
 * cannot be used and every mutation scans the whole BAN (minutes for 20 000 sales over 250 000 addresses).
 */
const sansNumeroBan = (m: string) =>
  `(${m}.cle_ban IS NULL OR NOT EXISTS (SELECT 1 FROM adresses x WHERE x.dataset = ${m}.dataset COLLATE "default"
     AND x.cle_ban = ${m}.cle_ban COLLATE "default"))`;
/** The columns an attachment to the BAN address `a` sets: its key, and its position where the file had none. */
const RATTACHEMENT = `cle_ban = a.cle_ban,
            lat = CASE WHEN m.position_source = 'dvf' THEN m.lat ELSE a.lat END,
            lon = CASE WHEN m.position_source = 'dvf' THEN m.lon ELSE a.lon END,
            position_source = CASE WHEN m.position_source = 'dvf' THEN 'dvf' ELSE 'ban' END`;

/**
 * Attaches BAN numbers to the mutations of these communes that have none (or one the BAN has removed since): same
 * street code and number (and suffix), else the only BAN number on the mutation's main parcel. A mutation without
 * coordinates takes the number's position. The BAN importer writes street codes as DVF does (`0105`, `B012`) and the
 * repetition index in lower case (`bis`, `ter`, `a`): DVF's B/T/Q is read as bis/ter/quater, a BAN letter `b`
 * matches it too. Reads find the sales of a number by this key alone (db/migrations/014_dvf_numero_par_cle.sql).
 */
export async function attachBanKeys(db: Pick<Db, 'query'>, dataset: Dataset, insees: string[]): Promise<number> {
  if (insees.length === 0) return 0;
  const byNumber = await db.query(
    `UPDATE dvf_mutations m
        SET ${RATTACHEMENT}
       FROM adresses a
      WHERE m.dataset = $1 AND m.insee = ANY($2) AND ${sansNumeroBan('m')} AND m.adresse_numero IS NOT NULL
        AND a.dataset = m.dataset AND a.insee = m.insee AND a.type = 'numero' AND a.numero = m.adresse_numero
        AND a.code_voie = m.code_voie
        AND coalesce(lower(a.suffixe), '') IN (coalesce(m.adresse_suffixe, ''), left(coalesce(m.adresse_suffixe, ''), 1))`,
    [dataset, insees],
  );
  const byParcel = await db.query(
    `UPDATE dvf_mutations m
        SET ${RATTACHEMENT}
       FROM (SELECT m2.id_mutation, min(a2.cle_ban) AS cle_ban
               FROM dvf_mutations m2
               JOIN adresses a2 ON a2.dataset = m2.dataset AND a2.insee = m2.insee AND a2.type = 'numero'
                               AND a2.parcelles @> ARRAY[m2.parcelle_principale]
              WHERE m2.dataset = $1 AND m2.insee = ANY($2) AND ${sansNumeroBan('m2')}
              GROUP BY m2.id_mutation
             HAVING count(*) = 1) u
       JOIN adresses a ON a.dataset = $1 AND a.cle_ban = u.cle_ban
      WHERE m.dataset = $1 AND m.id_mutation = u.id_mutation`,
    [dataset, insees],
  );
  return (byNumber.rowCount ?? 0) + (byParcel.rowCount ?? 0);
}

async function runDvf(
  db: Db,
  chemins: string | string[],
  { sandbox, onProgress }: ImportOptions,
): Promise<ImportReport> {
  {
    const report = await importDvf(db, chemins, { dataset: sandbox ? 'sandbox' : 'live', onProgress });
    const m = report.mutations;
    return {
      source: report.source,
      lus: report.lus,
      gardes: report.gardes,
      rejetes: report.rejetes,
      details: [
        `format    : ${report.formatLibelle}`,
        `mutations : ${m.lues} (${m.ajoutees} ajoutées, ${m.modifiees} modifiées, ${m.inchangees} inchangées)`,
        `millésimes : ${report.millesimes.join(', ') || 'aucun'}`,
        `sans coordonnées dans le fichier : ${report.sansCoordonnees} mutations`,
        `rattachées à un numéro BAN : ${report.rattacheesBan}`,
        `nouveautés au journal des adresses : ${report.nouveautes}${report.reprise ? ' (dont celles d’un import interrompu avant de les journaliser)' : ''}`,
        ligneReanalyse(report.reanalyse),
        ...(report.scindees
          ? [`lignes non consécutives : ${report.scindees} mutations regroupées en seconde lecture`]
          : []),
      ],
    };
  }
}

/** The `dvf` source of the importers' CLI: one file, or several (files, folders, globs) in one import. */
export const dvfSource: ImportSource = {
  name: 'dvf',
  description:
    'ventes DVF : CSV « DVF géolocalisées » d’Etalab (40 colonnes, .csv ou .csv.gz) ou fichier brut de la DGFiP (ValeursFoncieres-AAAA.txt, séparateur |) ; plusieurs fichiers, un dossier ou un motif (dvf-2024/*.csv.gz) en un import',
  run: runDvf,
  morceaux: { fichiers: /\.(csv|txt)(\.gz)?$/i, run: runDvf },
};
