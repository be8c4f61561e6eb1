import { avecBaseDeDonnees, codeDeSortie, lireArguments } from '../domain/import/cli.ts';
import { ImportError } from '../domain/import/source.ts';
import { loadSandbox, type SandboxLoadReport } from '../domain/sandbox/load.ts';
import { exitWith } from './exit.ts';

/**
 * `npm run sandbox -- [--live]`: generates the frozen sandbox (fixed seed) and loads it through the importers into the
 * sandbox dataset (pk_test_ keys), or with --live into the live data as labelled demonstration data. Database: that of
 * DATABASE_URL, else the embedded server of DATA_DIR (the running one, or one started for the time of the load),
 * migrated first. Loading again changes nothing.
 */

const USAGE = `Usage : npm run sandbox -- [--live]

Génère le bac à sable figé (graine fixe : Latresne, Abzac, Paris 11e, Lille, Strasbourg) et le charge par les
importeurs dans le jeu du bac à sable (clés pk_test_).

Options :
  --live        le charge dans les données live, comme données de démonstration (source « démonstration (données
                fictives) »)
  -h, --help    cette aide

Base de données : DATABASE_URL si défini, sinon le PostgreSQL embarqué de DATA_DIR (défaut .data).`;

function printReport(report: SandboxLoadReport): void {
  const lines = [
    `Bac à sable chargé (${report.dataset === 'live' ? 'live, démonstration' : 'bac à sable'}, graine ${report.seed})`,
  ];
  for (const i of report.imports) {
    const rejetes = i.lus - i.gardes;
    lines.push(
      `  ${i.source.padEnd(8)} ${i.fichier} : ${i.lus} lus, ${i.gardes} gardés, ${rejetes} rejetés`,
      ...i.rejetes.slice(0, 10).map((r) => `      n° ${r.ligne} : ${r.motif}`),
      ...i.details.map((d) => `      ${d}`),
    );
  }
  for (const i of report.ignorees) lines.push(`  ${i.source.padEnd(8)} ignoré : ${i.motif}`);
  console.log(lines.join('\n'));
}

async function main(): Promise<number> {
  const parsed = lireArguments(
    {
      options: {
        live: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    },
    USAGE,
  );
  return avecBaseDeDonnees(async (db) => {
    const report = await loadSandbox(db, {
      dataset: parsed.values.live ? 'live' : 'sandbox',
      log: (line) => process.stderr.isTTY && process.stderr.write(`${line}\n`),
    });
    printReport(report);
    // Generated data that an importer rejects is a bug of one or the other: said by the exit code.
    if (report.rejets > 0) {
      console.error(`Erreur : ${report.rejets} lignes générées rejetées par les importeurs.`);
      return 1;
    }
    return 0;
  });
}

await exitWith(await codeDeSortie(main, 'chargement interrompu', (error) => error instanceof ImportError));
