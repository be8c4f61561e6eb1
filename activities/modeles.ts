import { Context } from '@temporalio/activity';
import type { Db } from '../db/client.ts';
import { recalibrerModeles } from '../domain/estimation/recalibrer.ts';
import type { Dataset } from '../domain/platform/sandbox.ts';

/** What the `recalibrerModeles` workflow returns: the figures a run log or the Temporal UI wants, not the sheets. */
export interface ResumeRecalibrage {
  dataset: Dataset;
  mesure_le: string;
  estimation: { ventes_estimees: number; couverture_pct: number | null; echantillon: number | null };
  travaux: { mesures: number };
  bareme_prix: { mesures: number };
  pre_marche: { adresses: number; auc: number | null; bandes: number };
  durees_ms: { estimation: number; travaux: number; bareme_prix: number; pre_marche: number };
}

export function createModelesActivities({ db }: { db: Db }) {
  return {
    /** Every backtest behind GET /modeles on the dataset, each sheet replaced whole (npm run modeles does the same). */
    async mesurerModeles({ dataset }: { dataset: Dataset }): Promise<ResumeRecalibrage> {
      // A run reads the whole dataset: seconds on the sandbox, minutes on a country. Heartbeats say it is alive.
      const battement = setInterval(() => Context.current().heartbeat(), 5_000);
      try {
        const r = await recalibrerModeles(db, dataset);
        return {
          dataset,
          mesure_le: r.estimation.mesure_le,
          estimation: {
            ventes_estimees: r.estimation.estimees,
            couverture_pct: r.estimation.ensemble?.couverture_pct ?? null,
            echantillon: r.estimation.ensemble?.n_controle ?? null,
          },
          travaux: { mesures: r.travaux.mesures.length },
          bareme_prix: { mesures: r.bareme_prix.mesures.length },
          pre_marche: { adresses: r.pre_marche.adresses, auc: r.pre_marche.auc, bandes: r.pre_marche.bandes.length },
          durees_ms: r.durees_ms,
        };
      } finally {
        clearInterval(battement);
      }
    },
  };
}
