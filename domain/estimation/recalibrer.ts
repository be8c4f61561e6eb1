import type { Db } from '../../db/client.ts';
import type { Dataset } from '../platform/sandbox.ts';
import { backtestBareme, type BacktestBareme } from './backtest-bareme.ts';
import { backtestTravaux, type BacktestTravaux } from './backtest-travaux.ts';
import { backtestEstimation, type Backtest } from './backtest.ts';

/**
 * Every backtest behind GET /modeles, one after the other, each replacing its sheet: what `npm run modeles`, the
 * sandbox load and the `recalibrerModeles` workflow (started by each DVF import) run.
 */

export interface Recalibrage {
  dataset: Dataset;
  estimation: Backtest;
  travaux: BacktestTravaux;
  bareme_prix: BacktestBareme;
  /** Run time of each backtest, in milliseconds. */
  durees_ms: { estimation: number; travaux: number; bareme_prix: number };
}

export async function recalibrerModeles(db: Db, dataset: Dataset, now = new Date()): Promise<Recalibrage> {
  let t = performance.now();
  const lap = () => {
    const d = Math.round(performance.now() - t);
    t = performance.now();
    return d;
  };
  const estimation = await backtestEstimation(db, dataset, now);
  const dEstimation = lap();
  const travaux = await backtestTravaux(db, dataset, now);
  const dTravaux = lap();
  const bareme_prix = await backtestBareme(db, dataset, now);
  return {
    dataset,
    estimation,
    travaux,
    bareme_prix,
    durees_ms: { estimation: dEstimation, travaux: dTravaux, bareme_prix: lap() },
  };
}
