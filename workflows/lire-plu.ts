import {
  ApplicationFailure,
  ParentClosePolicy,
  patched,
  proxyActivities,
  proxyLocalActivities,
  startChild,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';
import { livrerWebhook } from './livrer-webhook.ts';

// Failure types (also the `erreur.code` of the task) that no retry can mend.
const NON_RETRYABLE = ['entree_invalide', 'modele_non_configure', 'modele_refus', 'document_inaccessible'];

// Quick steps over the database and the network.
const QUICK = {
  startToCloseTimeout: '2 minutes',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumAttempts: 5,
    nonRetryableErrorTypes: NON_RETRYABLE,
  },
} as const;
const etapes = proxyActivities<Activities>(QUICK);
// The same steps over the database alone, as local activities: run by the worker that runs the workflow, without a
// round trip through the Temporal server each, so a task ends tens of milliseconds sooner and costs less to run.
// Retried as the others, and as harmless to repeat (a task ends once).
const etapesLocales = proxyLocalActivities<Activities>(QUICK);
// The model reading: long, heartbeating, so a lost worker is noticed within the heartbeat time-out.
const lecture = proxyActivities<Activities>({
  startToCloseTimeout: '4 minutes',
  heartbeatTimeout: '20 seconds',
  retry: {
    initialInterval: '2 seconds',
    backoffCoefficient: 2,
    maximumAttempts: 3,
    nonRetryableErrorTypes: NON_RETRYABLE,
  },
});

export interface TacheEntree {
  tacheId: string;
  delaisLivraisonS: number[];
}

async function livrer(livraisons: string[], delaisS: number[]) {
  for (const livraisonId of livraisons) {
    await startChild(livrerWebhook, {
      workflowId: `livraison-${livraisonId}`,
      args: [{ livraisonId, delaisS }],
      parentClosePolicy: ParentClosePolicy.ABANDON,
    });
  }
}

/** PLU reading (lire_plu): zone of the point, rules PDF, model reading with every quotation checked, result. */
export async function lirePlu({ tacheId, delaisLivraisonS }: TacheEntree): Promise<string> {
  // Workflows started before the local steps replay the activities their history recorded.
  const rapides = patched('etapes-locales') ? etapesLocales : etapes;
  try {
    await rapides.commencerTache(tacheId);
    const lieu = await rapides.localiserZonePlu(tacheId);
    let document = null;
    let lu = null;
    if (lieu.zone && lieu.reglementUrl) {
      document = await etapes.chargerReglement(lieu.reglementUrl);
      if (!document.scanne) lu = await lecture.lireZonePlu({ document, zone: lieu.zone.code });
    }
    const livraisons = await rapides.terminerLirePlu({ tacheId, lieu, document, lecture: lu });
    await livrer(livraisons, delaisLivraisonS);
    return 'terminee';
  } catch (error) {
    const cause = error instanceof ApplicationFailure ? error : (error as { cause?: unknown }).cause;
    const failure = cause instanceof ApplicationFailure ? cause : null;
    const livraisons = await rapides.echouerTache({
      tacheId,
      code: failure?.type ?? 'erreur_interne',
      detail: failure?.message ?? 'La lecture a échoué.',
    });
    await livrer(livraisons, delaisLivraisonS);
    throw error;
  }
}
