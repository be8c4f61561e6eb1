import { ApplicationFailure } from '@temporalio/activity';
import type { Db } from '../db/client.ts';
import type { TaskRow } from '../domain/taches/taches.ts';
import { enqueueEvent } from '../domain/webhooks/evenements.ts';
import type { ModelError } from '../lib/model.ts';

/** Runs at most `size` pieces of work at once; the others wait their turn in order. */
export function createSemaphore(size: number) {
  let active = 0;
  const waiting: Array<() => void> = [];
  return async <T>(work: () => Promise<T>): Promise<T> => {
    if (active >= size) await new Promise<void>((resolve) => waiting.push(resolve));
    active += 1;
    try {
      return await work();
    } finally {
      active -= 1;
      waiting.shift()?.();
    }
  };
}

export type Semaphore = ReturnType<typeof createSemaphore>;

/** The task row an activity works for; its absence (expired, deleted) is final. */
export async function taskRow(db: Db, id: string): Promise<TaskRow> {
  const { rows } = await db.query<TaskRow>('SELECT * FROM taches WHERE id = $1', [id]);
  if (!rows[0]) throw ApplicationFailure.nonRetryable(`Tâche ${id} absente`, 'entree_invalide');
  return rows[0];
}

/**
 * A failure of the model as the Temporal failure of its step: its type the stable code (`modele_refus`,
 * `modele_non_configure`, `modele_indisponible`), retried unless the model's answer can only be the same, after
 * the delay the server asked for when it said one (a 429's Retry-After).
 */
export function modelFailure(error: ModelError, message: string): ApplicationFailure {
  const type =
    error.kind === 'refus'
      ? 'modele_refus'
      : error.kind === 'configuration'
        ? 'modele_non_configure'
        : 'modele_indisponible';
  return ApplicationFailure.create({
    type,
    message,
    nonRetryable: !error.retryable,
    ...(error.retryAfterMs !== null ? { nextRetryDelay: error.retryAfterMs } : {}),
  });
}

/** Where the result of each task operation is read: its result operation's path. */
const RESULTAT_DE: Record<string, (id: string) => string> = {
  lire_plu: (id) => `/api/v1/urbanisme/reglements/${id}`,
  preparer_dossier: (id) => `/api/v1/urbanisme/dossiers/${id}`,
};

/** The end of a task, as delivered to subscribers: the task, never its result (read it at `resultat_url`). */
export async function announceEnd(db: Db, id: string): Promise<string[]> {
  const task = await taskRow(db, id);
  const genre = task.statut === 'terminee' ? 'tache.terminee' : 'tache.echouee';
  const resultat = RESULTAT_DE[task.operation];
  if (!resultat) throw new Error(`announceEnd : opération ${task.operation} sans adresse de résultat`);
  return enqueueEvent(db, {
    organisationId: task.organisation_id,
    genre,
    evenement: `${genre}:${id}`,
    alsoUrl: task.webhook,
    donnees: {
      tache: {
        id,
        operation: task.operation,
        statut: task.statut,
        termine_le: task.termine_le ? new Date(task.termine_le).toISOString() : null,
        resultat_url: resultat(id),
      },
      erreur: task.erreur,
    },
  });
}
