import {
  Client,
  Connection,
  ScheduleAlreadyRunning,
  WithStartWorkflowOperation,
  WorkflowExecutionAlreadyStartedError,
  WorkflowUpdateFailedError,
} from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { HubEngine, TaskEngine } from '../domain/catalogue.ts';
import { ApiError, ERRORS, type ErrorCode } from '../domain/errors.ts';
import { JEUX_PAR_SOURCE, JEUX_PRODUITS } from '../domain/exports/editions.ts';

/** The workflow type of each task operation (workflows/index.ts exports them). */
export const WORKFLOW_OF: Record<string, string> = {
  lire_plu: 'lirePlu',
  lire_document: 'lireDocument',
  estimer_bien_affine: 'estimerBienAffine',
  preparer_dossier: 'preparerDossier',
};

/**
 * Retry delays of webhook deliveries, in seconds: the specification's 1 min, 5 min, 30 min, 2 h, 12 h, or
 * WEBHOOKS_RETRY_DELAYS (comma-separated durations such as `1s,2s,5s` or `1m,5m`) for tests and development.
 */
export function retryDelaysS(spec: string | undefined): number[] {
  if (!spec) return [60, 300, 1800, 7200, 43_200];
  return spec.split(',').map((part) => {
    const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(part);
    if (!m) throw new Error(`WEBHOOKS_RETRY_DELAYS : durée illisible « ${part} » (ex. 1s,5s,30s)`);
    const factor = { ms: 0.001, s: 1, m: 60, h: 3600 }[(m[2] ?? 's') as 'ms' | 's' | 'm' | 'h'];
    return Number(m[1]) * factor;
  });
}

export async function connectTemporal(address: string): Promise<{ client: Client; close(): Promise<void> }> {
  const connection = await Connection.connect({ address });
  return { client: new Client({ connection }), close: () => connection.close() };
}

/**
 * The task engine of the API: starts one workflow per task (workflow id = task id). Waiting for an end is not its
 * business: the database announces ends to every instance (domain/taches/fins.ts).
 */
export function createTemporalEngine(
  client: Client,
  options: { taskQueue: string; delaisLivraisonS: number[] },
): TaskEngine & { drain(): Promise<void> } {
  // Starts under way: a task's start does not hold up its 202, so a clean stop waits for them before it closes the
  // connection they use.
  const underway = new Set<Promise<unknown>>();
  async function start(task: { id: string; operation: string }) {
    const workflowType = WORKFLOW_OF[task.operation];
    if (!workflowType) throw new Error(`Aucun workflow pour l’opération ${task.operation}`);
    try {
      await client.workflow.start(workflowType, {
        workflowId: task.id,
        taskQueue: options.taskQueue,
        args: [{ tacheId: task.id, delaisLivraisonS: options.delaisLivraisonS }],
        // A task runs once: starting it again (resumeStalledTasks) finds its workflow, running or ended.
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
      });
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    }
  }
  return {
    start(task) {
      const started = start(task);
      const settled = started.catch(() => {}).finally(() => underway.delete(settled));
      underway.add(settled);
      return started;
    },
    async drain() {
      await Promise.all(underway);
    },
    async cancel(taskId) {
      await client.workflow.getHandle(taskId).cancel();
    },
  };
}

// A question that reaches a conversation while its workflow closes (idle) is refused by it; it is put again, and the
// conversation starts afresh. Each try waits this long more.
const REESSAIS_FERMETURE_MS = [50, 100, 200, 400, 800];

/**
 * The Hub's conversations on Temporal: one workflow per conversation (workflow id = conversation id), each question
 * an Update sent with the workflow's start (update-with-start, USE_EXISTING): the first question starts it, the next
 * ones join it, a question to a closed conversation starts it again.
 */
export function createTemporalHub(client: Client, options: { taskQueue: string }): HubEngine {
  return {
    async poser(conversation, demande) {
      for (let essai = 0; ; essai += 1) {
        const start = new WithStartWorkflowOperation('conversationHub', {
          workflowId: conversation.id,
          taskQueue: options.taskQueue,
          args: [
            { conversationId: conversation.id, compteId: conversation.compteId, dernier: await conversation.dernier() },
          ],
          workflowIdConflictPolicy: 'USE_EXISTING',
        });
        try {
          return await client.workflow.executeUpdateWithStart<any, number, [typeof demande]>('poserQuestion', {
            args: [demande],
            startWorkflowOperation: start,
          });
        } catch (error) {
          const failure = error instanceof WorkflowUpdateFailedError ? error.cause : undefined;
          if (!(failure instanceof ApplicationFailure)) {
            throw new ApiError('service_indisponible', 'Le Hub ne répond pas ; rien n’a été débité.', { cause: error });
          }
          if (failure.type === 'conversation_fermee' && essai < REESSAIS_FERMETURE_MS.length) {
            await new Promise((resolve) => setTimeout(resolve, REESSAIS_FERMETURE_MS[essai]));
            continue;
          }
          const code = failure.type && failure.type in ERRORS ? (failure.type as ErrorCode) : 'service_indisponible';
          throw new ApiError(code, failure.message);
        }
      }
    },
  };
}

/** The workflow id of the recalibration of a dataset's models for a version of its sales: one run per version. */
export const idRecalibrage = (dataset: string, version: string) => `recalibrer-modeles-${dataset}-${version}`;

/**
 * Starts the `recalibrerModeles` workflow (workflows/recalibrer-modeles.ts) for this version of the dataset's sales,
 * once: a second request for the same version finds the run already started (running or ended) and starts nothing.
 */
export async function demanderRecalibrage(
  client: Client,
  options: { taskQueue: string; dataset: 'live' | 'sandbox'; version: string },
): Promise<{ workflowId: string; deja: boolean }> {
  const workflowId = idRecalibrage(options.dataset, options.version);
  try {
    await client.workflow.start('recalibrerModeles', {
      workflowId,
      taskQueue: options.taskQueue,
      args: [{ dataset: options.dataset }],
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
    });
    return { workflowId, deja: false };
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) return { workflowId, deja: true };
    throw error;
  }
}

/**
 * After a DVF import: the recalibration of the dataset's models, asked of Temporal when an address is given (the
 * worker of `npm start` or of worker/main.ts runs it), else left to `npm run modeles`. Returns what to tell the user.
 */
export async function recalibrerApresImport(
  versionDe: () => Promise<string | null>,
  options: { address: string | undefined; taskQueue: string; dataset: 'live' | 'sandbox' },
): Promise<string> {
  const commande = `npm run modeles${options.dataset === 'sandbox' ? ' -- --sandbox' : ''}`;
  if (!options.address) {
    return `Modèles : TEMPORAL_ADDRESS non défini, aucun recalibrage planifié ; lancez \`${commande}\` pour mesurer à nouveau les fiches de GET /modeles.`;
  }
  const version = await versionDe();
  if (version === null) return 'Modèles : aucune vente DVF, rien à recalibrer.';
  // The import is done whatever happens here: an unreachable Temporal is said, with what to run instead.
  const temporal = await connectTemporal(options.address).catch((error: Error) => error);
  if (temporal instanceof Error) {
    return `Modèles : Temporal injoignable à ${options.address} (${temporal.message}) ; lancez \`${commande}\`.`;
  }
  try {
    const r = await demanderRecalibrage(temporal.client, { ...options, version });
    return r.deja
      ? `Modèles : recalibrage de cette version des ventes déjà demandé (workflow ${r.workflowId}).`
      : `Modèles : recalibrage demandé à Temporal (workflow ${r.workflowId}, file ${options.taskQueue}).`;
  } finally {
    await temporal.close();
  }
}

/**
 * Wakes the delivery queue of a subscription (workflows/livrer-abonnement.ts), starting it when it is not running:
 * signal-with-start, so that a queue that was ending sees the signal and runs another round.
 */
export async function reveillerAbonnement(
  client: Client,
  options: { taskQueue: string; webhookId: string; delaisS: number[] },
): Promise<void> {
  await client.workflow.signalWithStart('livrerAbonnement', {
    workflowId: `livraisons-${options.webhookId}`,
    taskQueue: options.taskQueue,
    args: [{ webhookId: options.webhookId, delaisS: options.delaisS }],
    signal: 'nouvellesLivraisons',
    signalArgs: [],
  });
}

/** The Temporal Schedule that builds the export editions every day (workflows/construire-editions.ts). */
export const SCHEDULE_EDITIONS = 'exports-editions';

/** Every produced dataset, for the contracts and for the common sample. */
const EDITIONS_DU_JOUR = { jeux: JEUX_PRODUITS, perimetres: ['contrat', 'echantillon'] as const };

/**
 * Creates the daily Schedule of the export editions (04:30 Paris time, after the night's imports), or brings an
 * existing one to this version's datasets and task queue: the worker calls it at each start, so it is idempotent.
 * One run at a time (a run still going when the next is due skips it).
 */
export async function planifierEditions(
  client: Client,
  /** `scheduleId`: another Schedule than the service's own (tests, which share one Temporal server). */
  options: { taskQueue: string; scheduleId?: string },
): Promise<'cree' | 'mis_a_jour'> {
  const scheduleId = options.scheduleId ?? SCHEDULE_EDITIONS;
  const action = {
    type: 'startWorkflow' as const,
    workflowType: 'construireEditions',
    workflowId: 'exports-editions-quotidiennes',
    taskQueue: options.taskQueue,
    args: [{ jeux: [...EDITIONS_DU_JOUR.jeux], perimetres: [...EDITIONS_DU_JOUR.perimetres] }],
  };
  const spec = { calendars: [{ hour: 4, minute: 30 }], timezone: 'Europe/Paris' };
  try {
    await client.schedule.create({ scheduleId, spec, action, policies: { overlap: 'SKIP' } });
    return 'cree';
  } catch (error) {
    if (!(error instanceof ScheduleAlreadyRunning)) throw error;
    await client.schedule.getHandle(scheduleId).update((previous) => ({ ...previous, spec, action }));
    return 'mis_a_jour';
  }
}

/**
 * After an import into the live data: the editions that source changes (JEUX_PAR_SOURCE) built again, by a workflow
 * the running worker picks up. One run per source at a time: an import that ends while the same source's run is going
 * joins it (USE_EXISTING) rather than starting a second one. Without a Temporal address, says what to run instead.
 * Returns what to tell the user.
 */
export async function editionsApresImport(options: {
  address: string | undefined;
  taskQueue: string;
  /** The importer's name (scripts/import.ts). */
  source: string;
}): Promise<string> {
  const jeux = (JEUX_PAR_SOURCE[options.source] ?? []).filter((jeu) => JEUX_PRODUITS.includes(jeu));
  if (jeux.length === 0) return 'Exports : aucune édition ne dépend de cette source.';
  const commande = `npm run export -- ${jeux.join(' ')}`;
  if (!options.address) {
    return `Exports : TEMPORAL_ADDRESS non défini, aucune édition planifiée ; lancez \`${commande}\`.`;
  }
  const temporal = await connectTemporal(options.address).catch((error: Error) => error);
  if (temporal instanceof Error) {
    return `Exports : Temporal injoignable à ${options.address} (${temporal.message}) ; lancez \`${commande}\`.`;
  }
  try {
    const handle = await temporal.client.workflow.start('construireEditions', {
      workflowId: `exports-editions-apres-import-${options.source}-${options.taskQueue}`,
      taskQueue: options.taskQueue,
      args: [{ jeux, perimetres: ['contrat'] }],
      workflowIdConflictPolicy: 'USE_EXISTING',
    });
    return `Exports : éditions ${jeux.join(', ')} demandées à Temporal (workflow ${handle.workflowId}, file ${options.taskQueue}).`;
  } finally {
    await temporal.close();
  }
}
