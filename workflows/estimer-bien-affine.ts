import { ApplicationFailure, CancellationScope, isCancellation, proxyActivities } from '@temporalio/workflow';
import type { EstimationActivities } from '../activities/estimation.ts';

// The deterministic estimate's own refusals: no retry can mend them.
const REFUS = ['adresse_introuvable', 'ressource_absente', 'commune_introuvable', 'entree_invalide'];

// The whole operation has 45 s: the deterministic estimate is quick, retried once on a transient fault.
const deterministe = proxyActivities<EstimationActivities>({
  startToCloseTimeout: '12 seconds',
  retry: {
    initialInterval: '500 milliseconds',
    backoffCoefficient: 2,
    maximumAttempts: 2,
    nonRetryableErrorTypes: REFUS,
  },
});
// Photos and the model's one call: a single attempt. A retry would fetch the photos a second time, and a model that
// fails has its fallback (the deterministic estimate), which is better than an answer after the request's time-out.
const affinage = proxyActivities<EstimationActivities>({
  startToCloseTimeout: '38 seconds',
  heartbeatTimeout: '10 seconds',
  retry: { maximumAttempts: 1 },
});
// Bookkeeping in the database.
const etapes = proxyActivities<EstimationActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '300 milliseconds', backoffCoefficient: 2, maximumAttempts: 5 },
});

export interface EstimationAffineeEntree {
  tacheId: string;
}

function failureOf(error: unknown): ApplicationFailure | null {
  if (error instanceof ApplicationFailure) return error;
  const cause = (error as { cause?: unknown })?.cause;
  return cause instanceof ApplicationFailure ? cause : null;
}

/**
 * The refined estimation (estimer_bien_affine), a synchronous operation: the request waits for it (runSyncTask).
 * The deterministic estimate first; then the photos and the model, whose lines the server checks and bounds. A model
 * that fails leaves the deterministic estimate, served and said; refused photos and the estimate's own refusals end
 * the task in failure (the request answers the problem, nothing debited).
 */
export async function estimerBienAffine({ tacheId }: EstimationAffineeEntree): Promise<string> {
  try {
    const base = await deterministe.estimationDeterministe(tacheId);
    try {
      await affinage.affinerEstimation({ tacheId, base });
    } catch (error) {
      const failure = failureOf(error);
      if (isCancellation(error) || failure?.type === 'photo_invalide') throw error;
      const raison =
        failure?.type?.startsWith('modele_') === true
          ? failure.message
          : 'Le modèle n’a pas pu affiner l’estimation (échec ou délai de l’étape d’affinage).';
      await etapes.servirEstimationDeterministe({ tacheId, base, raison });
    }
    return 'terminee';
  } catch (error) {
    const failure = failureOf(error);
    const ended = isCancellation(error)
      ? { code: 'delai_depasse', detail: 'Estimation interrompue avant sa fin.' }
      : {
          code: failure?.type ?? 'erreur_interne',
          detail: failure?.message ?? 'L’estimation affinée a échoué.',
        };
    await CancellationScope.nonCancellable(() => etapes.echouerEstimationAffinee({ tacheId, ...ended }));
    throw error;
  }
}
