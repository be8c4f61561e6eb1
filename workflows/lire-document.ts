import { ApplicationFailure, CancellationScope, isCancellation, proxyActivities } from '@temporalio/workflow';
import type { DocumentActivities } from '../activities/documents.ts';

// Failure types (also the task's `erreur.code`) that no retry can mend. Fetch failures that may pass
// (`document_inaccessible` of a network fault) say so themselves through `nonRetryable`.
const NON_RETRYABLE = [
  'entree_invalide',
  'document_invalide',
  'document_illisible',
  'modele_non_configure',
  'modele_refus',
];

// The whole reading must fit in the request's 120 s: short time-outs, few attempts, short back-off.
// Fetching the URLs (30 s each at most, in parallel) and preparing the documents; heartbeats carry cancellation.
const preparation = proxyActivities<DocumentActivities>({
  startToCloseTimeout: '75 seconds',
  heartbeatTimeout: '15 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumAttempts: 2,
    nonRetryableErrorTypes: NON_RETRYABLE,
  },
});
// The model reading: one long call (90 s at most), heartbeating so that a lost worker is noticed.
const lecture = proxyActivities<DocumentActivities>({
  startToCloseTimeout: '100 seconds',
  heartbeatTimeout: '15 seconds',
  retry: {
    initialInterval: '2 seconds',
    backoffCoefficient: 2,
    maximumAttempts: 3,
    nonRetryableErrorTypes: NON_RETRYABLE,
  },
});
// Bookkeeping in the database.
const etapes = proxyActivities<DocumentActivities>({
  startToCloseTimeout: '15 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumAttempts: 5 },
});

export interface LectureDocumentEntree {
  tacheId: string;
}

/**
 * Document reading (lire_document), a synchronous operation: the request waits for it (runSyncTask). Prepare the
 * files, read them with the model, record the result or the failure in the task row; the prepared documents are
 * deleted at the end whatever happens, cancellation included.
 */
export async function lireDocument({ tacheId }: LectureDocumentEntree): Promise<string> {
  try {
    await preparation.preparerDocuments(tacheId);
    await lecture.lireDocumentsPrepares(tacheId);
    return 'terminee';
  } catch (error) {
    const cause = error instanceof ApplicationFailure ? error : (error as { cause?: unknown }).cause;
    const failure = cause instanceof ApplicationFailure ? cause : null;
    const champ = typeof failure?.details?.[0] === 'string' ? failure.details[0] : null;
    const ended = isCancellation(error)
      ? { code: 'delai_depasse', detail: 'Lecture interrompue avant sa fin.', champ: null }
      : {
          code: failure?.type ?? 'erreur_interne',
          detail: failure?.message ?? 'La lecture des documents a échoué.',
          champ,
        };
    await CancellationScope.nonCancellable(() => etapes.echouerLectureDocument({ tacheId, ...ended }));
    throw error;
  } finally {
    await CancellationScope.nonCancellable(() => etapes.effacerDocumentsPrepares(tacheId));
  }
}
