import type { Db } from '../../db/client.ts';

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
}

/** An error whose message is for the user as it is (a missing file, an unknown format). */
export class ImportError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ImportError';
  }
}
