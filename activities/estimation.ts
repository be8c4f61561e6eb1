import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Db } from '../db/client.ts';
import { affiner, demanderAuModele, repli, verifierReponse, type ChampsClient } from '../domain/estimation/affinage.ts';
import { estimer, type EstimationSortie } from '../domain/estimation/operations.ts';
import {
  chargerPhotos,
  createLimiteurParCle,
  DECODAGES_PAR_ORGANISATION,
  PhotosRefusees,
  type LimiteurParCle,
  type PhotoPreparee,
} from '../domain/estimation/photos.ts';
import { ApiError } from '../domain/errors.ts';
import { chargeCalls } from '../domain/platform/rate-limit.ts';
import { servedSource } from '../domain/qualite.ts';
import { completeTask, failTask, markRunning } from '../domain/taches/taches.ts';
import { ModelError, type Model } from '../lib/model.ts';
import type { OutboundHttp } from '../lib/outbound-http.ts';
import { modelFailure, taskRow, type Semaphore } from './shared.ts';

export interface EstimationActivityDeps {
  db: Db;
  model: Model | null;
  outbound: OutboundHttp;
  modelSlot: Semaphore;
  /** The model sees images; false: photos are not fetched, and `vision` says why. Default true. */
  modelSeesImages?: boolean;
  /** Photo decodings at once per organisation (default: DECODAGES_PAR_ORGANISATION per activities instance). */
  decodages?: LimiteurParCle;
}

// Fixed messages: they become `affinage.raison`, and a model server's own error text may quote the request.
const MODEL_MESSAGES: Record<ModelError['kind'], string> = {
  delai: 'Le modèle n’a pas répondu à temps.',
  indisponible: 'Le modèle est momentanément indisponible.',
  reponse_invalide: 'La réponse du modèle est inexploitable.',
  refus: 'Le modèle a refusé de répondre.',
  configuration: 'Le modèle a refusé la requête (modèle non configuré ou format non pris en charge).',
};

type EntreeAffinee = ChampsClient & { photos?: string[]; adresse?: string; insee?: string };

/**
 * The activities of `estimerBienAffine` (workflows/estimer-bien-affine.ts). The photos live inside
 * `affinerEstimation` only: fetched, re-encoded, given to the model and dropped there, so that no image ever reaches
 * Temporal's history, the database or a disk. The input (photo links, text fields) is read from the task row.
 */
export function createEstimationActivities(deps: EstimationActivityDeps) {
  const { db } = deps;
  const vision = deps.modelSeesImages ?? true;
  const decodages = deps.decodages ?? createLimiteurParCle(DECODAGES_PAR_ORGANISATION);

  return {
    /** The deterministic estimate, as estimer_bien computes it; its refusals are the task's failure. */
    async estimationDeterministe(tacheId: string): Promise<EstimationSortie> {
      await markRunning(db, tacheId);
      const task = await taskRow(db, tacheId);
      try {
        const base = await estimer(db, 'live', task.entree as never, new Date());
        return await servedSource(db, 'live', base);
      } catch (error) {
        if (error instanceof ApiError) {
          throw ApplicationFailure.create({ type: error.code, message: error.message, nonRetryable: true });
        }
        throw error;
      }
    },

    /**
     * Photos, one model call, the server's checks; the refined estimate goes straight into the task row. One attempt
     * only (the workflow's profile): a retry would fetch the photos again, and a failed model has its fallback.
     */
    async affinerEstimation(args: { tacheId: string; base: EstimationSortie }): Promise<void> {
      const { tacheId, base } = args;
      if (!deps.model) {
        throw ApplicationFailure.nonRetryable('Aucun modèle n’est configuré (OPENAI_MODEL).', 'modele_non_configure');
      }
      const model = deps.model;
      const task = await taskRow(db, tacheId);
      const entree = task.entree as unknown as EntreeAffinee;
      const urls = entree.photos ?? [];
      const context = Context.current();
      const beat = setInterval(() => context.heartbeat(), 2000);
      try {
        let photos: PhotoPreparee[] = [];
        if (vision && urls.length > 0) {
          photos = await chargerPhotos(urls, {
            outbound: deps.outbound,
            organisationId: task.organisation_id,
            decodages,
            signal: context.cancellationSignal,
          });
        }
        const reponse = await deps.modelSlot(() =>
          demanderAuModele({
            model,
            champs: entree,
            base: { valeur: base.valeur.valeur, prix_m2: base.valeur.prix_m2, commune: base.bien.commune },
            photos,
            signal: context.cancellationSignal,
          }),
        );
        const photosAnalysees = photos.length;
        // The images are no longer needed: nothing holds them past this point.
        photos = [];
        const verification = verifierReponse(reponse, {
          champs: entree,
          bareme: base.ajustements,
          photosAnalysees,
        });
        const resultat = affiner(base, {
          verification,
          modele: model.name,
          photos: urls.length,
          photosAnalysees,
          vueRaison:
            urls.length > 0 && !vision
              ? 'Le modèle configuré ne lit pas les images : les photos n’ont pas été lues.'
              : null,
        });
        // Synchronous operation: the request bills when it answers; the task itself debits nothing.
        await completeTask(db, tacheId, resultat, { debit: false, fingerprint: null });
      } catch (error) {
        if (error instanceof ApplicationFailure) throw error;
        if (error instanceof PhotosRefusees) {
          // The customer reads the refusal; why each host was unreachable is for us alone.
          context.log.warn('Photos refusées', { tache: tacheId, detail: error.journal });
          // Nothing is debited, but the fetching and decoding weigh in the organisation's per-minute rate.
          await chargeCalls(db, task.organisation_id, error.appels).catch((cause: unknown) =>
            context.log.warn('Quota par minute non imputé', { tache: tacheId, erreur: String(cause) }),
          );
          throw ApplicationFailure.create({ type: 'photo_invalide', message: error.message, nonRetryable: true });
        }
        if (error instanceof ModelError) throw modelFailure(error, MODEL_MESSAGES[error.kind]);
        if ((error as Error)?.name === 'AbortError') throw error;
        const kind = [(error as Error)?.name, (error as { code?: string })?.code].filter(Boolean).join(' ');
        throw ApplicationFailure.create({
          type: 'erreur_interne',
          message: `Erreur interne pendant l’affinage${kind ? ` (${kind})` : ''}.`,
          nonRetryable: true,
        });
      } finally {
        clearInterval(beat);
      }
    },

    /** The fallback: the deterministic estimate, with why the model did not refine it. */
    async servirEstimationDeterministe(args: {
      tacheId: string;
      base: EstimationSortie;
      raison: string;
    }): Promise<void> {
      const task = await taskRow(db, args.tacheId);
      if (task.statut === 'terminee' || task.statut === 'echouee') return;
      const photos = ((task.entree as unknown as EntreeAffinee).photos ?? []).length;
      await completeTask(db, args.tacheId, repli(args.base, args.raison, photos), { debit: false, fingerprint: null });
    },

    async echouerEstimationAffinee(args: { tacheId: string; code: string; detail: string }): Promise<void> {
      await failTask(db, args.tacheId, { code: args.code, detail: args.detail });
    },
  };
}

export type EstimationActivities = ReturnType<typeof createEstimationActivities>;
