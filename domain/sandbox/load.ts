import { PARAMETRE_DEMONSTRATION, SOURCE_DEMONSTRATION } from '../qualite.ts';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Db, Queryable } from '../../db/client.ts';
import type { ImportReport, ImportSource } from '../import/source.ts';
import { SANDBOX_COMMUNES } from '../platform/sandbox.ts';
import { generateSandbox, SANDBOX_SEED, type SandboxSource } from './generate.ts';

/**
 * Loads the frozen sandbox: the files of generateSandbox (fixed seed), written to a temporary folder, each run
 * through its real importer, into the sandbox dataset (pk_test_ keys) or into the live one (the demonstration data of
 * the embedded default). The importers are idempotent, so a second load changes nothing.
 *
 * Importers are found by file and loaded dynamically: one that is not there yet is skipped, and the report says so,
 * rather than the whole load failing.
 *
 * Demonstration data in the live dataset must be labelled. The importers write no origin the read operations show
 * (each operation names its source as a constant: DVF, Sitadel…), so the load records the fact once, in the
 * `parametres` row PARAMETRE_DEMONSTRATION, and `servedSource` (domain/qualite.ts) gives the `source` an operation then shows.
 */

export type SandboxDataset = 'sandbox' | 'live';

/** What `qualite.source` (and any served `source`) should say of live data that is the demonstration data. */

type Etape = { source: 'communes' | SandboxSource; module: string; export: string };

/** In import order: communes, then the BAN every other source attaches to. */
const ETAPES: Etape[] = [
  { source: 'communes', module: '../adresses/import-communes.ts', export: 'communesSource' },
  { source: 'ban', module: '../adresses/import-ban.ts', export: 'banSource' },
  { source: 'dvf', module: '../dvf/import.ts', export: 'dvfSource' },
  { source: 'dpe', module: '../dpe/import.ts', export: 'dpeSource' },
  { source: 'permis', module: '../urbanisme/import-permis.ts', export: 'permisSource' },
  { source: 'sirene', module: '../entreprises/import-sirene.ts', export: 'sireneSource' },
  { source: 'bodacc', module: '../entreprises/import-bodacc.ts', export: 'bodaccSource' },
  { source: 'iris', module: '../territoire/import-iris.ts', export: 'irisSource' },
  { source: 'gpu', module: '../urbanisme/zonage-import.ts', export: 'gpuSource' },
];

export interface SandboxImport {
  source: string;
  /** The generated file (its name), or `-` for the communes of the npm packages. */
  fichier: string;
  lus: number;
  gardes: number;
  rejetes: ImportReport['rejetes'];
  details: string[];
}

export interface SandboxLoadReport {
  dataset: SandboxDataset;
  seed: number;
  imports: SandboxImport[];
  /** Sources not loaded, and why (importer absent, communes already there). */
  ignorees: Array<{ source: string; motif: string }>;
  /** Rows rejected over all imports: 0 when generator and importers agree. */
  rejets: number;
}

async function importeur(etape: Etape): Promise<ImportSource | string> {
  const url = new URL(etape.module, import.meta.url);
  if (!existsSync(fileURLToPath(url))) return `importeur absent (${etape.module.replace('../', 'domain/')})`;
  const module = (await import(url.href)) as Record<string, unknown>;
  const source = module[etape.export] as ImportSource | undefined;
  if (!source || typeof source.run !== 'function') {
    return `${etape.module.replace('../', 'domain/')} n’exporte pas encore ${etape.export}`;
  }
  return source;
}

/** Whether the dataset has the five communes of the sandbox. */
async function communesPresentes(db: Queryable, dataset: SandboxDataset): Promise<boolean> {
  const { rows } = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM communes WHERE dataset = $1 AND insee = ANY($2::text[])',
    [dataset, [...SANDBOX_COMMUNES]],
  );
  return rows[0].n === SANDBOX_COMMUNES.length;
}

/**
 * Generates the sandbox with the fixed seed and imports it into `dataset` through every importer present. Throws
 * what an importer throws (a file it cannot read is a bug of the generator or of the importer, not of the data).
 */
export async function loadSandbox(
  db: Db,
  { dataset, log = () => {} }: { dataset: SandboxDataset; log?: (line: string) => void },
): Promise<SandboxLoadReport> {
  const report: SandboxLoadReport = { dataset, seed: SANDBOX_SEED, imports: [], ignorees: [], rejets: 0 };
  const dir = await mkdtemp(path.join(tmpdir(), 'svc-bac-a-sable-'));
  try {
    const fichiers = await generateSandbox(dir, { seed: SANDBOX_SEED });
    for (const etape of ETAPES) {
      // The live dataset has the real administrative split of the whole country: it is imported when the sandbox
      // communes are missing, never replaced by an older copy when a newer one was imported.
      if (etape.source === 'communes' && dataset === 'live' && (await communesPresentes(db, dataset))) {
        report.ignorees.push({ source: etape.source, motif: 'communes déjà présentes dans les données live' });
        log('communes : déjà présentes dans les données live, non réimportées');
        continue;
      }
      const source = await importeur(etape);
      if (typeof source === 'string') {
        report.ignorees.push({ source: etape.source, motif: source });
        log(`${etape.source} : ignoré, ${source}`);
        continue;
      }
      for (const fichier of etape.source === 'communes' ? ['-'] : fichiers[etape.source]) {
        const r = await source.run(db, fichier, { sandbox: dataset === 'sandbox', onProgress: () => {} });
        const rejets = r.lus - r.gardes;
        report.rejets += rejets;
        const nom = fichier === '-' ? '-' : path.basename(fichier);
        report.imports.push({
          source: etape.source,
          fichier: nom,
          lus: r.lus,
          gardes: r.gardes,
          rejetes: r.rejetes,
          details: r.details,
        });
        log(`${etape.source} ${nom} : ${r.lus} lus, ${r.gardes} gardés${rejets ? `, ${rejets} rejetés` : ''}`);
      }
    }
    if (dataset === 'live') {
      await db.query(
        `INSERT INTO parametres (nom, valeur) VALUES ($1, $2)
         ON CONFLICT (nom) DO UPDATE SET valeur = excluded.valeur WHERE parametres.valeur <> excluded.valeur`,
        [PARAMETRE_DEMONSTRATION, SOURCE_DEMONSTRATION],
      );
    }
    return report;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
