import { backtestEstimation } from '../domain/estimation/backtest.ts';
import { avecBaseDeDonnees, codeDeSortie, lireArguments } from '../domain/import/cli.ts';
import { ImportError } from '../domain/import/source.ts';
import { exitWith } from './exit.ts';

/**
 * `npm run modeles -- [--sandbox]`: the backtests behind GET /modeles. Rebuilds the departmental price index, estimates
 * the held-out most recent DVF vintage from the earlier ones and writes the `estimation` sheet's measures (and the
 * calibrated half-width estimer_bien serves). To run after each DVF import.
 */

const USAGE = `Usage : npm run modeles -- [--sandbox]

Mesure les modèles sur les données importées (backtest) et publie leurs fiches (GET /modeles).

Options :
  --sandbox     les données du bac à sable au lieu des données live
  -h, --help    cette aide`;

async function main(): Promise<number> {
  const { values } = lireArguments(
    {
      options: {
        sandbox: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    },
    USAGE,
  );
  const dataset = values.sandbox ? 'sandbox' : 'live';
  return avecBaseDeDonnees(async (db) => {
    const debut = performance.now();
    const b = await backtestEstimation(db, dataset, new Date());
    const duree = ((performance.now() - debut) / 1000).toFixed(1);
    console.log(
      `estimation (${dataset}) : ${b.perimetre || 'rien à mesurer'} ; ${b.estimees} ventes estimées, ${b.non_estimees} non estimées, ${duree} s`,
    );
    for (const g of b.groupes) {
      console.log(
        `  ${g.type_bien} / ${g.socle} : n ${g.n}, erreur absolue médiane ${g.erreur_absolue_mediane_pct} %, ±10 % ${g.part_10_pct} %, ±20 % ${g.part_20_pct} %, demi-largeur ${g.demi_largeur_80_pct ?? '-'} %, couverture ${g.couverture_pct ?? '-'} %`,
      );
    }
    for (const l of b.limites) console.log(`  limite : ${l}`);
    return 0;
  });
}

await exitWith(await codeDeSortie(main, 'mesure interrompue', (error) => error instanceof ImportError));
