import { ApplicationFailure, executeChild, ParentClosePolicy, proxyActivities, startChild } from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';
import type { NoticeFaite } from '../domain/dossiers/dossier.ts';
import { livrerWebhook } from './livrer-webhook.ts';
import { lirePlu, type TacheEntree } from './lire-plu.ts';

// Failure types (also the task's `erreur.code`) no retry can mend.
const NON_RETRYABLE = [
  'entree_invalide',
  'ressource_absente',
  'adresse_introuvable',
  'parametres_invalides',
  'service_indisponible',
  'modele_non_configure',
  'modele_refus',
];

// The steps over the database and the files: seconds each.
const etapes = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumAttempts: 4,
    nonRetryableErrorTypes: NON_RETRYABLE,
  },
});
// The notice drafted by the model: one long call, heartbeating; few tries, since a failure has a fallback.
const redaction = proxyActivities<Activities>({
  startToCloseTimeout: '90 seconds',
  heartbeatTimeout: '20 seconds',
  retry: {
    initialInterval: '2 seconds',
    backoffCoefficient: 2,
    maximumAttempts: 2,
    nonRetryableErrorTypes: NON_RETRYABLE,
  },
});

/** A zone's reading inside a dossier: what is left of the dossier's 150 s once its own steps are counted. */
const LECTURE_MAX = '100 seconds';

async function livrer(livraisons: string[], delaisS: number[]) {
  for (const livraisonId of livraisons) {
    await startChild(livrerWebhook, {
      workflowId: `livraison-${livraisonId}`,
      args: [{ livraisonId, delaisS }],
      parentClosePolicy: ParentClosePolicy.ABANDON,
    });
  }
}

/** The failure a step ended with, as the task's error: the first ApplicationFailure down the chain of causes (an
 * activity's, or a child workflow's activity's). */
function echecDe(error: unknown): ApplicationFailure | null {
  for (let e: unknown = error, i = 0; e && i < 5; e = (e as { cause?: unknown }).cause, i++) {
    if (e instanceof ApplicationFailure) return e;
  }
  return null;
}

/**
 * Dossier building (preparer_dossier): locate the parcel and model the site, read the zone's rules from the readings
 * cache, derive the formality (inside the drawing and closing steps, from the same study), draw the sheets, draft the
 * notice, then the bordereau and the result. A failing notice leaves its piece to the applicant; any other failure
 * ends the task `echouee`, its credits given back.
 */
export async function preparerDossier({ tacheId, delaisLivraisonS }: TacheEntree): Promise<string> {
  try {
    await etapes.commencerTache(tacheId);
    const site = await etapes.siteDossier(tacheId);
    let regles = await etapes.reglesDossier(site);
    if (regles.etat === 'non_lues') {
      // The zone was never read: read it now, as lire_plu does (its reading then cached for everyone), within the
      // dossier's price and time-out; a reading that fails leaves the rules unchecked, said, and the dossier goes on.
      const lectureId = await etapes.lectureZoneDossier({ tacheId, site });
      try {
        await executeChild(lirePlu, {
          workflowId: lectureId,
          args: [{ tacheId: lectureId, delaisLivraisonS }],
          workflowExecutionTimeout: LECTURE_MAX,
        });
        regles = await etapes.reglesDossier(site);
      } catch (error) {
        const failure = echecDe(error);
        regles = {
          ...regles,
          etat: 'lecture_echouee',
          raison: `La lecture du règlement de la zone ${regles.zone?.code ?? ''} a échoué (${failure?.type ?? 'erreur'} : ${failure?.message ?? 'délai dépassé'}) : les règles ne sont pas vérifiées.`,
        };
      }
    }
    const dessins = await etapes.dessinsDossier({ tacheId, site, regles });
    let notice: NoticeFaite;
    try {
      notice = await redaction.noticeDossier({ tacheId, site, regles });
    } catch (error) {
      const failure = echecDe(error);
      notice = {
        etat: 'a_fournir_par_le_demandeur',
        terrain: [],
        projet: [],
        chiffres_ecartes: 0,
        modele: null,
        raison: `La notice n’a pas pu être rédigée (${failure?.type ?? 'erreur'} : ${failure?.message ?? 'échec du modèle'}) : à rédiger par le demandeur.`,
        fichiers: null,
      };
    }
    const livraisons = await etapes.terminerDossier({ tacheId, site, regles, dessins, notice });
    await livrer(livraisons, delaisLivraisonS);
    return 'terminee';
  } catch (error) {
    const failure = echecDe(error);
    const livraisons = await etapes.echouerDossier({
      tacheId,
      code: failure?.type ?? 'erreur_interne',
      detail: failure?.message ?? 'La préparation du dossier a échoué.',
    });
    await livrer(livraisons, delaisLivraisonS);
    throw error;
  }
}
