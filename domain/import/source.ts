import { stat } from 'node:fs/promises';
import type { Db } from '../../db/client.ts';

import type { Dataset } from '../platform/sandbox.ts';

export type { Dataset };

/** What every importer reports: rows read, kept, rejected with their reason, and lines of its own. */
export interface ImportReport {
  /** The file or folder imported. */
  source: string;
  lus: number;
  gardes: number;
  /** The first rejected rows (1-based row or feature number) with why; `lus - gardes` is the full count. */
  rejetes: Array<{ ligne: number; motif: string }>;
  /** Extra report lines, e.g. `['documents : 1', 'zones : 90 ajoutées']`. */
  details: string[];
}

export interface ImportOptions {
  /** Write the frozen sandbox dataset (pk_test_ keys) instead of the live one. */
  sandbox: boolean;
  /** Where the files of a source are published (zoning: NOMFIC becomes baseUrl + NOMFIC). */
  baseUrl?: string;
  onProgress: (progress: { lus: number; gardes: number }) => void;
}

/** An importer, as the CLI (`npm run import -- <name> <path>`) knows it. */
export interface ImportSource {
  name: string;
  description: string;
  run(db: Db, path: string, options: ImportOptions): Promise<ImportReport>;
  /**
   * A source published in pieces (DVF per commune and year, the BAN per département): the names of its files, and its
   * import of several of them at once. The CLI then takes several paths, folders (their files of that name, at any
   * depth) and globs.
   */
  morceaux?: { fichiers: RegExp; run(db: Db, paths: string[], options: ImportOptions): Promise<ImportReport> };
}

/** An error whose message is for the user as it is (a missing file, an unknown format). */
export class ImportError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ImportError';
  }
}

/** The options of an importer called from code: the dataset written (live by default) and its progress. */
export interface DatasetImportOptions {
  dataset?: Dataset;
  onProgress?: (progress: { lus: number; gardes: number }) => void;
}

type Importer<P> = (db: Db, path: P, options: DatasetImportOptions) => Promise<ImportReport>;

/**
 * The CLI source of an importer that takes a dataset and a progress callback; with `fichiers`, a source published in
 * pieces whose importer takes several paths.
 */
export function importSource(name: string, description: string, importer: Importer<string>): ImportSource;
export function importSource(
  name: string,
  description: string,
  importer: Importer<string | string[]>,
  fichiers: RegExp,
): ImportSource;
export function importSource(
  name: string,
  description: string,
  importer: Importer<string> | Importer<string | string[]>,
  fichiers?: RegExp,
): ImportSource {
  const options = ({ sandbox, onProgress }: ImportOptions): DatasetImportOptions => ({
    dataset: sandbox ? 'sandbox' : 'live',
    onProgress,
  });
  return {
    name,
    description,
    run: (db, path, o) => importer(db, path, options(o)),
    // Only the second signature gives `fichiers`: its importer takes several paths.
    ...(fichiers
      ? { morceaux: { fichiers, run: (db, paths, o) => (importer as Importer<string[]>)(db, paths, options(o)) } }
      : {}),
  };
}

/** Rejected rows listed in a report at most; the count is always complete (`lus - gardes`). */
export const MAX_REJETS_LISTES = 1000;

export type Rejeter = (ligne: number, motif: string) => void;

/** A fresh report of `source`, and the function that lists a rejected row in it. */
export function nouveauRapport(source: string): { report: ImportReport; rejeter: Rejeter } {
  const report: ImportReport = { source, lus: 0, gardes: 0, rejetes: [], details: [] };
  return { report, rejeter: rejeteur(report) };
}

/** The function that lists a rejected row in `report`, up to MAX_REJETS_LISTES. */
export function rejeteur(report: ImportReport): Rejeter {
  return (ligne, motif) => {
    if (report.rejetes.length < MAX_REJETS_LISTES) report.rejetes.push({ ligne, motif });
  };
}

/** Throws an ImportError unless `file` is a readable file. */
export async function exigerFichier(file: string): Promise<void> {
  const info = await stat(file).catch(() => null);
  if (!info?.isFile()) throw new ImportError(`fichier introuvable : ${file}`);
}
