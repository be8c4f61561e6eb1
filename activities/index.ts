import { ApplicationFailure, Context } from '@temporalio/activity';
import { createHash } from 'node:crypto';
import type { Db } from '../db/client.ts';
import {
  buildResult,
  loadRules,
  locate,
  PluError,
  readZone,
  type DocumentLu,
  type LectureFaite,
  type LieuPlu,
  type PluInput,
} from '../domain/plu/service.ts';
import { completeTask, failTask, markRunning } from '../domain/taches/taches.ts';
import { ModelError, type Model } from '../lib/model.ts';
import type { OutboundHttp } from '../lib/outbound-http.ts';
import type { FileDelivery } from '../domain/documents/telechargement.ts';
import { createDocumentActivities } from './documents.ts';
import { createDossierActivities } from './dossiers.ts';
import { createEstimationActivities } from './estimation.ts';
import { createExportsActivities } from './exports.ts';
import { createHubActivities, type HubDeps } from './hub.ts';
import { createModelesActivities } from './modeles.ts';
import { createWebhookActivities } from './webhooks.ts';
import { announceEnd, createSemaphore, modelFailure, taskRow, type Semaphore } from './shared.ts';

export interface ActivityDeps {
  db: Db;
  model: Model | null;
  outbound: OutboundHttp;
  /** Model readings at once in this worker; beyond it they wait their turn (and keep heartbeating). */
  modelConcurrency: number;
  /** The model reads images (documents' pictures, scanned pages); false: they are said unread in `limites`. */
  modelSeesImages?: boolean;
  /** The operations the Hub's questions call, through the pipeline (absent: its tool calls fail, said). */
  hub?: Pick<HubDeps, 'invoke' | 'outils' | 'refus' | 'nature'>;
  /** Storage and signed links of generated files (the dossiers' drawings); absent: a dossier fails, said. */
  files?: FileDelivery;
  /** The folder of the datasets' lake editions (domain/jeux/lac.ts); absent: the editions workflow builds none. */
  lac?: { dossier: string; stabiliteMs?: number };
}

/** Failures of the domain become Temporal failures whose type is the task's stable `erreur.code`. */
function asFailure(error: unknown): unknown {
  if (error instanceof PluError) {
    return ApplicationFailure.create({ type: error.code, message: error.message, nonRetryable: !error.retryable });
  }
  if (error instanceof ModelError) return modelFailure(error, `Modèle : ${error.message}`);
  return error;
}

/** Every activity of the service, over narrow dependencies (tests pass their own). */
export function createActivities(deps: ActivityDeps) {
  // One bound for every model reading of this worker, whatever the operation.
  const modelSlot = createSemaphore(deps.modelConcurrency);
  return {
    ...createPluActivities(deps, modelSlot),
    ...createDocumentActivities({ ...deps, modelSlot }),
    ...createDossierActivities({ ...deps, modelSlot }),
    ...createEstimationActivities({ ...deps, modelSlot }),
    ...createHubActivities({
      db: deps.db,
      model: deps.model,
      invoke: deps.hub?.invoke ?? null,
      outils: deps.hub?.outils ?? (async () => []),
      refus:
        deps.hub?.refus ??
        (async (_cleId, tool) => ({ code: 'ressource_absente', detail: `Aucun outil « ${tool} » pour le Hub.` })),
      nature: deps.hub?.nature ?? (() => ({ ecrit: true, texteTiers: true })),
    }),
    ...createModelesActivities({ db: deps.db }),
    ...createExportsActivities({ db: deps.db, files: deps.files, lac: deps.lac }),
    ...createWebhookActivities(deps),
  };
}

function createPluActivities(deps: ActivityDeps, modelSlot: Semaphore) {
  const { db } = deps;

  return {
    async commencerTache(tacheId: string): Promise<void> {
      await markRunning(db, tacheId);
    },

    async localiserZonePlu(tacheId: string): Promise<LieuPlu> {
      const task = await taskRow(db, tacheId);
      return locate(db, task.entree as PluInput).catch((e) => Promise.reject(asFailure(e)));
    },

    async chargerReglement(url: string): Promise<DocumentLu> {
      return loadRules(deps, url).catch((e) => Promise.reject(asFailure(e)));
    },

    async lireZonePlu({ document, zone }: { document: DocumentLu; zone: string }): Promise<LectureFaite> {
      const context = Context.current();
      // The reading is one long call: the heartbeat says the worker is alive, and carries cancellation back.
      const beat = setInterval(() => context.heartbeat(), 2000);
      try {
        return await modelSlot(() => readZone({ ...deps, signal: context.cancellationSignal }, document, zone));
      } catch (error) {
        throw asFailure(error);
      } finally {
        clearInterval(beat);
      }
    },

    async terminerLirePlu(args: {
      tacheId: string;
      lieu: LieuPlu;
      document: DocumentLu | null;
      lecture: LectureFaite | null;
    }): Promise<string[]> {
      const task = await taskRow(db, args.tacheId);
      const { resultat, debit } = await buildResult(
        db,
        task.entree as PluInput,
        args.lieu,
        args.document,
        args.lecture,
      );
      // The same rules again within 24 h are not debited: the fingerprint leaves out how they were obtained.
      const { lecture: _lecture, ...substance } = resultat;
      const fingerprint = createHash('sha256')
        .update(`lire_plu\0${JSON.stringify(substance)}`)
        .digest('base64url');
      await completeTask(db, args.tacheId, resultat, { debit, fingerprint });
      return announceEnd(db, args.tacheId);
    },

    async echouerTache(args: { tacheId: string; code: string; detail: string }): Promise<string[]> {
      await failTask(db, args.tacheId, { code: args.code, detail: args.detail });
      return announceEnd(db, args.tacheId);
    },
  };
}

export type Activities = ReturnType<typeof createActivities>;
