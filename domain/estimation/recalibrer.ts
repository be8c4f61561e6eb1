import type { Db, Queryable } from '../../db/client.ts';
import type { Dataset } from '../platform/sandbox.ts';
import { backtestBareme, type BacktestBareme } from './backtest-bareme.ts';
import { backtestTravaux, type BacktestTravaux } from './backtest-travaux.ts';
import { backtestEstimation, type Backtest } from './backtest.ts';
import { entrainerPreMarche, type Entrainement } from '../pre-marche/entrainement.ts';

/**
 * Every backtest behind GET /modeles, one after the other, each replacing its sheet: what `npm run modeles`, the
 * sandbox load and the `recalibrerModeles` workflow (started by each DVF import) run.
 */

export interface Recalibrage {
  dataset: Dataset;
  estimation: Backtest;
  travaux: BacktestTravaux;
  bareme_prix: BacktestBareme;
  /** The pre-market model, trained and measured on held-out addresses, and its scores rebuilt. */
  pre_marche: Entrainement;
  /** Run time of each backtest, in milliseconds. */
  durees_ms: { estimation: number; travaux: number; bareme_prix: number; pre_marche: number };
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
  const dBareme = lap();
  const pre_marche = await entrainerPreMarche(db, dataset, now);
  return {
    dataset,
    estimation,
    travaux,
    bareme_prix,
    pre_marche,
    durees_ms: { estimation: dEstimation, travaux: dTravaux, bareme_prix: dBareme, pre_marche: lap() },
  };
}

/**
 * The version of a dataset's sales the sheets are measured on: a digest of its vintages (count, last date, import
 * time). An import that changes nothing leaves it as it was (dvf_millesimes is only touched by a change), so the
 * recalibration it asks for is the one already run: the workflow id made from it dedupes.
 */
export async function versionDvf(db: Queryable, dataset: Dataset): Promise<string | null> {
  const { rows } = await db.query<{ v: string | null }>(
    `SELECT left(md5(string_agg(millesime || ':' || mutations || ':' || coalesce(derniere_mutation::text, '') || ':'
                                || extract(epoch FROM importe_le)::text, ',' ORDER BY millesime)), 16) AS v
       FROM dvf_millesimes WHERE dataset = $1`,
    [dataset],
  );
  return rows[0]?.v ?? null;
}
