import { existsSync } from 'node:fs';
import path from 'node:path';
import { banSource } from '../domain/adresses/import-ban.ts';
import { annoncesSource } from '../domain/annonces/import.ts';
import { communesSource } from '../domain/adresses/import-communes.ts';
import { dpeSource } from '../domain/dpe/import.ts';
import { dvfSource } from '../domain/dvf/import.ts';
import { cadastreSource } from '../domain/cadastre/import.ts';
import { reconstruireAgences, SOURCES_AGENCES } from '../domain/agences/derive.ts';
import { bodaccSource } from '../domain/entreprises/import-bodacc.ts';
import { sireneSource } from '../domain/entreprises/import-sirene.ts';
import {
  avecBaseDeDonnees,
  codeDeSortie,
  fichiersDesChemins,
  lireArguments,
  sortirAvecUsage,
} from '../domain/import/cli.ts';
import { ImportError, type ImportReport, type ImportSource } from '../domain/import/source.ts';
import { loyersSource } from '../domain/loyers/import.ts';
import { lecturesPluSource } from '../domain/plu/import-lectures.ts';
import { versionDvf } from '../domain/estimation/recalibrer.ts';
import { clearDemonstration } from '../domain/sandbox/load.ts';
import { irisSource } from '../domain/territoire/import-iris.ts';
import { permisSource } from '../domain/urbanisme/import-permis.ts';
import { gpuSource } from '../domain/urbanisme/paquet-gpu.ts';
import { statutCommunesSource } from '../domain/urbanisme/statut-communes-import.ts';
import { supSource } from '../domain/urbanisme/sup-import.ts';
import { zonageAbcSource } from '../domain/zonage-abc/import.ts';
import { loadConfigOrExit } from '../lib/config.ts';
import { editionsApresImport, recalibrerApresImport } from '../lib/temporal.ts';
import { exitWith } from './exit.ts';

/**
 * The importers' CLI: `npm run import -- <source> <chemin…> [--sandbox] [--base-url URL]`. A source published in
 * pieces (DVF, BAN) takes several paths, folders and globs, in one import. It writes into the database of
 * DATABASE_URL, else into the embedded server of DATA_DIR (the running one, or one started for the time of the
 * import), migrated first.
 */

/** One entry per importer; adding a source is adding it to this list. */
const SOURCES: Record<string, ImportSource> = Object.fromEntries(
  [
    communesSource,
    banSource,
    dvfSource,
    dpeSource,
    gpuSource,
    lecturesPluSource,
    supSource,
    cadastreSource,
    statutCommunesSource,
    permisSource,
    sireneSource,
    bodaccSource,
    irisSource,
    loyersSource,
    zonageAbcSource,
    annoncesSource,
  ].map((source) => [source.name, source]),
);

const USAGE = `Usage : npm run import -- <source> <chemin…> [--sandbox] [--base-url URL]

DVF, BAN et loyers, publiés par morceaux (commune, département, année, type de logement), prennent plusieurs
fichiers, un dossier (ses fichiers .csv, .csv.gz, à toute profondeur) ou un motif : npm run import -- dvf dvf-2024/ ;
npm run import -- ban 'ban/adresses-*.csv.gz' ; npm run import -- loyers carte-des-loyers-2025/
Les relevés d'annonces aussi (fichiers .jsonl, .jsonl.gz, .ndjson) : npm run import -- annonces releves/
Les paquets d'urbanisme et de servitudes (dossiers de dépôt, shapefile ou GeoJSON) et le cadastre Etalab aussi :
npm run import -- gpu gpu/ ; npm run import -- sup 'sup/*_AC1_*' ; npm run import -- cadastre cadastre-33/

Sources :
${Object.entries(SOURCES)
  .map(([name, source]) => `  ${name.padEnd(18)} ${source.description}`)
  .join('\n')}

Options :
  --sandbox         écrit dans le jeu figé du bac à sable (clés pk_test_) au lieu des données live
  --base-url URL    adresse où sont publiés les fichiers du document : le règlement d’une zone sans URLFIC
                    devient URL + NOMFIC (ex. --base-url https://exemple.fr/plu/30014/)
  -h, --help        cette aide

Base de données : DATABASE_URL si défini, sinon le PostgreSQL embarqué de DATA_DIR (défaut .data).`;

function usage(message: string): never {
  return sortirAvecUsage(USAGE, message);
}

function printReport(name: string, report: ImportReport, dataset: string): void {
  const rejetes = report.lus - report.gardes;
  const lines = [
    `Import ${name} terminé (${dataset}) : ${report.source}`,
    `  lus       : ${report.lus}`,
    `  gardés    : ${report.gardes}`,
    `  rejetés   : ${rejetes}`,
    ...report.rejetes.slice(0, 20).map((r) => `    n° ${r.ligne} : ${r.motif}`),
    ...(rejetes > 20 ? [`    … et ${rejetes - 20} autres`] : []),
    ...report.details.map((line) => `  ${line}`),
  ];
  console.log(lines.join('\n'));
}

async function main(): Promise<number> {
  const parsed = lireArguments(
    {
      allowPositionals: true,
      options: {
        sandbox: { type: 'boolean', default: false },
        'base-url': { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    },
    USAGE,
  );
  const [name, chemin, ...extra] = parsed.positionals;
  if (!name || !chemin) usage('source et chemin attendus.');
  const source = SOURCES[name];
  if (!source) usage(`source inconnue « ${name} » (connues : ${Object.keys(SOURCES).join(', ')}).`);
  if (extra.length > 0 && !source.morceaux) usage(`argument en trop : ${extra.join(' ')}`);
  const fullPath = path.resolve(chemin);
  // Said before any database is started: the most frequent mistake costs nothing. `-` stands for data that comes
  // with the sources' own packages (communes).
  const fichiers = source.morceaux ? await fichiersDesChemins([chemin, ...extra], source.morceaux.fichiers) : null;
  if (!fichiers && chemin !== '-' && !existsSync(fullPath)) throw new ImportError(`chemin introuvable : ${fullPath}`);
  if (fichiers && fichiers.length > 1) console.log(`${fichiers.length} fichiers à importer.`);

  const tty = process.stderr.isTTY;
  let last = 0;
  return avecBaseDeDonnees(async (db) => {
    // Real data never meets the demonstration data of the embedded default: an import into live removes it first.
    if (!parsed.values.sandbox) await clearDemonstration(db, (line) => console.log(line));
    const options = {
      sandbox: parsed.values.sandbox,
      baseUrl: parsed.values['base-url'],
      onProgress: ({ lus, gardes }: { lus: number; gardes: number }) => {
        if (!tty || Date.now() - last < 200) return;
        last = Date.now();
        process.stderr.write(`\r${name} : ${lus} lus, ${gardes} gardés…`);
      },
    };
    const report = await (
      source.morceaux && fichiers && fichiers.length > 1
        ? source.morceaux.run(db, fichiers, options)
        : source.run(db, fichiers ? fichiers[0] : chemin === '-' ? '-' : fullPath, options)
    ).finally(() => tty && process.stderr.write('\r\x1b[K'));
    printReport(name, report, parsed.values.sandbox ? 'bac à sable' : 'live');
    if (SOURCES_AGENCES.includes(name)) {
      // The agencies are derived from companies, notices and listings: rebuilt after each of their imports.
      const a = await reconstruireAgences(db, parsed.values.sandbox ? 'sandbox' : 'live');
      console.log(
        `Agences recalculées : ${a.agences} agences, activité jusqu’à ${a.dernier_mois ?? '(aucune annonce)'}.`,
      );
    }
    if (name === 'dvf') {
      // The sheets of GET /modeles and the range estimer_bien serves are measured on the sales: new sales, new
      // measures, by a workflow the running worker picks up (one per version of the sales).
      const config = loadConfigOrExit();
      const dataset = parsed.values.sandbox ? 'sandbox' : 'live';
      console.log(
        await recalibrerApresImport(() => versionDvf(db, dataset), {
          address: config.TEMPORAL_ADDRESS,
          taskQueue: config.TEMPORAL_TASK_QUEUE,
          dataset,
        }),
      );
    }
    if (!parsed.values.sandbox) {
      // New live rows, new editions: the contract files are built again by a workflow the running worker picks up.
      const config = loadConfigOrExit();
      console.log(
        await editionsApresImport({
          address: config.TEMPORAL_ADDRESS,
          taskQueue: config.TEMPORAL_TASK_QUEUE,
          source: name,
        }),
      );
    }
    return 0;
  });
}

await exitWith(await codeDeSortie(main, 'import interrompu', (error) => error instanceof ImportError));
