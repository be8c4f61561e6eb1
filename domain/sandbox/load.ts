import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { transaction, type Db, type Queryable } from '../../db/client.ts';
import { ImportError, type ImportReport, type ImportSource } from '../import/source.ts';
import { reconstruireAgences, TABLES_AGENCES } from '../agences/derive.ts';
import { emptyDvf } from '../dvf/partitions.ts';
import { TABLES_DERIVEES } from '../estimation/backtest.ts';
import { recalibrerModeles } from '../estimation/recalibrer.ts';
import { TABLES_MARCHE } from '../marche/derives.ts';
import { SANDBOX_COMMUNES, type Dataset } from '../platform/sandbox.ts';
import { forgetServedSource, PARAMETRE_DEMONSTRATION, SOURCE_DEMONSTRATION } from '../qualite.ts';
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
 * `parametres` row PARAMETRE_DEMONSTRATION, and `servedSource` (domain/qualite.ts) gives the `source` an operation then
 * shows. It must never mix with real data: it is loaded only into live data that is empty or already the
 * demonstration, and the first real import removes it (clearDemonstration).
 */

/** An importer of the load, and the tables (each with a `dataset` column) it writes. */
type Etape = { source: 'communes' | SandboxSource; module: string; export: string; tables: string[] };

/** In import order: communes, then the BAN every other source attaches to. */
const ETAPES: Etape[] = [
  {
    source: 'communes',
    module: '../adresses/import-communes.ts',
    export: 'communesSource',
    tables: ['regions', 'departements', 'epci', 'communes'],
  },
  { source: 'ban', module: '../adresses/import-ban.ts', export: 'banSource', tables: ['adresses'] },
  // marche_prix, made from the sales by the DVF import, is emptied with them (emptyDvf) and rebuilt by it.
  { source: 'dvf', module: '../dvf/import.ts', export: 'dvfSource', tables: ['dvf_mutations', 'dvf_millesimes'] },
  { source: 'dpe', module: '../dpe/import.ts', export: 'dpeSource', tables: ['dpe', 'dpe_audits', 'marche_dpe'] },
  { source: 'permis', module: '../urbanisme/import-permis.ts', export: 'permisSource', tables: ['permis'] },
  {
    source: 'sirene',
    module: '../entreprises/import-sirene.ts',
    export: 'sireneSource',
    tables: ['unites_legales', 'etablissements'],
  },
  { source: 'bodacc', module: '../entreprises/import-bodacc.ts', export: 'bodaccSource', tables: ['avis_bodacc'] },
  { source: 'iris', module: '../territoire/import-iris.ts', export: 'irisSource', tables: ['iris'] },
  {
    source: 'gpu',
    module: '../urbanisme/paquet-gpu.ts',
    export: 'gpuSource',
    tables: [
      'documents_urbanisme_communes',
      'surcharges_urbanisme',
      'secteurs_cc',
      'zones_urbanisme',
      'documents_urbanisme',
    ],
  },
  // The zones' rules documents and their readings: lire_plu's cache, keyed by content, not by dataset.
  { source: 'reglements', module: '../plu/import-lectures.ts', export: 'lecturesPluSource', tables: [] },
  {
    source: 'sup',
    module: '../urbanisme/sup-import.ts',
    export: 'supSource',
    tables: ['sup_servitudes_actes', 'sup_actes', 'sup_assiettes', 'sup_generateurs', 'sup_servitudes', 'sup_lots'],
  },
  {
    source: 'cadastre',
    module: '../cadastre/import.ts',
    export: 'cadastreSource',
    tables: ['cadastre_parcelles', 'cadastre_batiments'],
  },
  { source: 'loyers', module: '../loyers/import.ts', export: 'loyersSource', tables: ['loyers_communes'] },
  { source: 'zonage-abc', module: '../zonage-abc/import.ts', export: 'zonageAbcSource', tables: ['zonage_abc'] },
  // Last: their analysis reads the price scales, rents and zoning, their sellers SIRENE.
  {
    source: 'annonces',
    module: '../annonces/import.ts',
    export: 'annoncesSource',
    tables: ['annonces', 'annonces_evenements'],
  },
];

/**
 * The journals the imports of several steps append to (domain/flux/journal-adresses.ts): the load writes the
 * demonstration's novelties, so that its feed has something to serve.
 */
const JOURNAUX = ['journal_adresses'];

/** The tables the load writes, each with a `dataset` column. */
export const TABLES_CHARGEES = [...ETAPES.flatMap((e) => e.tables), ...JOURNAUX];
/** Those of the generated territory proper: the administrative split is real data, from the npm packages. */
export const TABLES_DEMONSTRATION = [
  ...ETAPES.filter((e) => e.source !== 'communes').flatMap((e) => e.tables),
  ...JOURNAUX,
];

/** What the live dataset holds: nothing, the demonstration territory, or real data. */
export type LiveData = 'vide' | 'demonstration' | 'reelles';

/** Whether the live dataset is empty (no row in any table the load writes), the demonstration, or real data. */
export async function liveData(db: Queryable): Promise<LiveData> {
  const { rows } = await db.query<{ demonstration: boolean; vide: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM parametres WHERE nom = $1) AS demonstration,
            NOT (${TABLES_CHARGEES.map((table) => `EXISTS (SELECT 1 FROM ${table} WHERE dataset = 'live')`).join(
              ' OR ',
            )}) AS vide`,
    [PARAMETRE_DEMONSTRATION],
  );
  return rows[0].demonstration ? 'demonstration' : rows[0].vide ? 'vide' : 'reelles';
}

/**
 * Removes the demonstration territory from the live dataset, if it is there: every live row the load wrote but the
 * administrative split (communes, EPCI, départements, régions come from the npm packages: real data, kept), then the
 * marker. Called before an import into the live data (scripts/import.ts), so real data never meets fictitious data.
 * True when there was something to remove.
 */
export async function clearDemonstration(db: Db, log: (line: string) => void = () => {}): Promise<boolean> {
  if ((await liveData(db)) !== 'demonstration') return false;
  await transaction(db, async (client) => {
    // Sales: the demonstration's vintages dropped whole, for the real ones to be loaded the fast way.
    await emptyDvf(client, 'live');
    // The journals too: nothing else ever removes an event, but no fictitious novelty may be served as real.
    const tables = ETAPES.filter((e) => e.source !== 'communes' && e.source !== 'dvf').flatMap((e) => e.tables);
    for (const table of [...tables, ...JOURNAUX]) {
      await client.query(`DELETE FROM ${table} WHERE dataset = 'live'`);
    }
    // What the backtest derived from the demonstration's sales: the real data are measured by `npm run modeles`.
    for (const table of TABLES_DERIVEES) await client.query(`DELETE FROM ${table} WHERE dataset = 'live'`);
    // The Communes market's rankings, quarters and pre-market made from them: rebuilt by the next import.
    for (const table of TABLES_MARCHE) await client.query(`DELETE FROM ${table} WHERE dataset = 'live'`);
    // The agencies made from the demonstration's companies and listings: rebuilt by the next import.
    for (const table of TABLES_AGENCES) await client.query(`DELETE FROM ${table} WHERE dataset = 'live'`);
    await client.query('DELETE FROM parametres WHERE nom = $1', [PARAMETRE_DEMONSTRATION]);
  });
  forgetServedSource(db);
  log(
    'Données de démonstration retirées des données live (communes et découpage administratif conservés) : elles ne seront plus rechargées.',
  );
  return true;
}

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
  dataset: Dataset;
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
async function communesPresentes(db: Queryable, dataset: Dataset): Promise<boolean> {
  const { rows } = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM communes WHERE dataset = $1 AND insee = ANY($2::text[])',
    [dataset, [...SANDBOX_COMMUNES]],
  );
  return rows[0].n === SANDBOX_COMMUNES.length;
}

/**
 * Generates the sandbox with the fixed seed and imports it into `dataset` through every importer present. Throws
 * what an importer throws (a file it cannot read is a bug of the generator or of the importer, not of the data), and
 * an ImportError, before writing anything, when asked to load the live dataset while it holds real data.
 */
export async function loadSandbox(
  db: Db,
  { dataset, log = () => {} }: { dataset: Dataset; log?: (line: string) => void },
): Promise<SandboxLoadReport> {
  const report: SandboxLoadReport = { dataset, seed: SANDBOX_SEED, imports: [], ignorees: [], rejets: 0 };
  if (dataset === 'live') {
    if ((await liveData(db)) === 'reelles') {
      throw new ImportError(
        'les données live contiennent des données réelles : les données de démonstration n’y sont pas chargées.',
      );
    }
    // Written first: a load cut short leaves labelled data, which the next load completes or an import removes.
    await db.query(
      `INSERT INTO parametres (nom, valeur) VALUES ($1, $2)
       ON CONFLICT (nom) DO UPDATE SET valeur = excluded.valeur WHERE parametres.valeur <> excluded.valeur`,
      [PARAMETRE_DEMONSTRATION, SOURCE_DEMONSTRATION],
    );
    forgetServedSource(db);
  }
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
    // The derived tables are rebuilt after the imports they depend on: the agencies and their activity, the
    // estimate's index and measured range, and the sheets of GET /modeles.
    const agences = await reconstruireAgences(db, dataset);
    log(`agences : ${agences.agences} agences, activité jusqu’à ${agences.dernier_mois ?? '(aucune annonce)'}`);
    const r = await recalibrerModeles(db, dataset);
    log(
      `modeles : estimation mesurée sur ${r.estimation.estimees} ventes (${r.estimation.perimetre || 'rien à mesurer'}) ; travaux ${r.travaux.mesures.length} mesures ; barème ${r.bareme_prix.mesures.length} mesures`,
    );
    return report;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
