import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';
import type { ResumeRecalibrage } from '../activities/modeles.ts';

// The backtests read the whole dataset: long, heartbeating; retried a few times on a transient database fault.
const { mesurerModeles } = proxyActivities<Activities>({
  startToCloseTimeout: '2 hours',
  heartbeatTimeout: '1 minute',
  retry: { initialInterval: '10 seconds', backoffCoefficient: 2, maximumAttempts: 3 },
});

export interface RecalibrageEntree {
  dataset: 'live' | 'sandbox';
}

/**
 * Measures the reference models again after a DVF import (started by the import, one per version of the data: see
 * lib/temporal.ts, demanderRecalibrage): the `estimation`, `travaux` and `bareme_prix` sheets of GET /modeles, the
 * calibrated half-width estimer_bien serves, and the pre-market model (its scores and its `pre_marche` sheet).
 */
export async function recalibrerModeles({ dataset }: RecalibrageEntree): Promise<ResumeRecalibrage> {
  return mesurerModeles({ dataset });
}
