import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { Db, Queryable } from '../../db/client.ts';
import { sha256Hex } from '../../lib/crypto.ts';
import type { Caller, TaskEnds, TaskEngine } from '../catalogue.ts';
import { ApiError } from '../errors.ts';

/** Results are kept 7 days after the task was created; then the task is absent. */
export const TASK_RETENTION_DAYS = 7;
/** How long `attendre` may wait, in seconds (spec: 0-60). */
export const MAX_WAIT_S = 60;

export const TacheSchema = z.object({
  id: z.string(),
  operation: z.string(),
  statut: z.enum(['en_attente', 'en_cours', 'terminee', 'echouee']),
  cree_le: z.string(),
  termine_le: z.string().nullable(),
  expire_le: z.string(),
  resultat_url: z.string(),
});

export const TaskErrorSchema = z.object({ code: z.string(), detail: z.string() });

/** The envelope of a task operation, without the `credits` block that the pipeline adds. */
export function taskEnvelopeSchema<R extends z.ZodType>(resultat: R) {
  return z.object({ tache: TacheSchema, resultat: resultat.nullable(), erreur: TaskErrorSchema.nullable() });
}

export interface TaskRow {
  id: string;
  operation: string;
  organisation_id: string;
  cle_id: string | null;
  statut: z.infer<typeof TacheSchema>['statut'];
  entree: Record<string, unknown>;
  webhook: string | null;
  resultat: unknown;
  erreur: z.infer<typeof TaskErrorSchema> | null;
  credits_reserves: number;
  credits_debites: number | null;
  cree_le: Date;
  termine_le: Date | null;
  expire_le: Date;
}

export function newTaskId(): string {
  return `tch_${randomBytes(12).toString('base64url')}`;
}

/** The task as served: the envelope, and the credits of the task (reserved while it runs, then debited or 0). */
export function envelopeOf(row: TaskRow, resultPath: (id: string) => string, restants: number | null) {
  const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);
  return {
    envelope: {
      tache: {
        id: row.id,
        operation: row.operation,
        statut: row.statut,
        cree_le: iso(row.cree_le)!,
        termine_le: iso(row.termine_le),
        expire_le: iso(row.expire_le)!,
        resultat_url: resultPath(row.id),
      },
      resultat: row.statut === 'terminee' ? row.resultat : null,
      erreur: row.statut === 'echouee' ? row.erreur : null,
    },
    credits: { debites: row.credits_debites ?? row.credits_reserves, restants },
  };
}

/** A synchronous long operation failed: `erreur` is the task's {code, detail}. */
export class SyncTaskFailed extends Error {
  readonly erreur: z.infer<typeof TaskErrorSchema>;
  constructor(erreur: z.infer<typeof TaskErrorSchema>) {
    super(erreur.detail);
    this.name = 'SyncTaskFailed';
    this.erreur = erreur;
  }
}

/**
 * Runs a synchronous long operation (document reading, refined estimation, Hub question) as a workflow while the
 * request waits, within `signal` (the operation's time-out): the result, or SyncTaskFailed. Nothing is reserved:
 * the request is billed by the pipeline once it succeeds, so a failure or a time-out costs nothing. The task row
 * carries the input and the result only for the time of the call, then is deleted: nothing of the content is kept.
 */
export async function runSyncTask<R>(
  deps: { db: Db; engine: TaskEngine; ends: TaskEnds },
  task: { operation: string; caller: Caller; input: Record<string, unknown>; signal: AbortSignal },
): Promise<R> {
  const id = newTaskId();
  await deps.db.query(
    `INSERT INTO taches (id, operation, organisation_id, cle_id, entree, empreinte_entree, expire_le)
     VALUES ($1, $2, $3, $4, $5, '', now() + interval '1 hour')`,
    [id, task.operation, task.caller.organisationId, task.caller.cleId, task.input],
  );
  const purge = () => deps.db.query('DELETE FROM taches WHERE id = $1', [id]);
  try {
    await deps.engine.start({ id, operation: task.operation });
    while (!task.signal.aborted) {
      // The wait also ends with the request's time-out (the signal).
      await deps.ends.wait(id, 60_000, task.signal);
      const { rows } = await deps.db.query<TaskRow>('SELECT statut, resultat, erreur FROM taches WHERE id = $1', [id]);
      const row = rows[0];
      if (row?.statut === 'terminee') return row.resultat as R;
      if (row?.statut === 'echouee')
        throw new SyncTaskFailed(row.erreur ?? { code: 'erreur_interne', detail: 'Échec.' });
    }
    await deps.engine.cancel(id).catch(() => {});
    throw task.signal.reason ?? new Error('délai dépassé');
  } finally {
    await purge();
  }
}

export async function readTask(db: Queryable, id: string, organisationId: string): Promise<TaskRow | null> {
  const { rows } = await db.query<TaskRow>(
    `SELECT * FROM taches WHERE id = $1 AND organisation_id = $2 AND expire_le > now()`,
    [id, organisationId],
  );
  return rows[0] ?? null;
}

/**
 * Creates a task and reserves its price in one statement (svc_creer_tache: one round trip, one commit), then starts
 * it without making the client wait for the start: from the commit on, the task is durable and will run, whatever
 * happens to this process (the task resumer, domain/taches/reprise.ts, starts a task still waiting 10 s after it was
 * written). A start the engine refuses ends the task `echouee` (service_indisponible) with its credits given back,
 * as a client learns from the envelope. With an idempotency key, the same key and body give back the same task;
 * another body with the same key is a 409 conflit.
 */
export async function createTask(
  deps: { db: Db; engine: TaskEngine },
  task: {
    operation: string;
    caller: Caller;
    input: Record<string, unknown>;
    credits: number;
    webhook: string | null;
    clientKey: string | null;
  },
): Promise<{ row: TaskRow; created: boolean; restants: number | null }> {
  const credits = task.caller.sandbox ? 0 : task.credits;
  const { rows } = await deps.db.query<TaskRow & { issue: string; restants: number | null }>(
    `SELECT r.issue, r.restants, (r.tache).* FROM svc_creer_tache($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) r`,
    [
      newTaskId(),
      task.operation,
      task.caller.organisationId,
      task.caller.cleId,
      task.input,
      task.webhook,
      credits,
      task.clientKey,
      sha256Hex(JSON.stringify([task.operation, task.input])),
      TASK_RETENTION_DAYS,
    ],
  );
  const { issue, restants, ...row } = rows[0];
  if (issue === 'conflit') {
    throw new ApiError(
      'conflit',
      'Cette Idempotency-Key a déjà servi pour une autre requête : utilisez une nouvelle clé.',
    );
  }
  if (issue === 'credits_insuffisants') {
    throw new ApiError('credits_insuffisants', `Il reste ${restants} crédits ; cette tâche en réserve ${credits}.`);
  }
  if (issue === 'plafond_cle') throw new ApiError('plafond_cle', 'Plafond mensuel de la clé atteint.');
  if (issue === 'creee') {
    deps.engine.start({ id: row.id, operation: task.operation }).catch(() =>
      // Nothing ran: the task ends failed and its credits are given back, so nothing is lost or half-written.
      failTask(deps.db, row.id, {
        code: 'service_indisponible',
        detail: 'Le moteur des tâches était injoignable au départ de la tâche ; rien n’a été débité : relancez-la.',
      }).catch(() => {
        // The database too is gone: the task resumer starts it once both are back.
      }),
    );
  }
  return { row, created: issue === 'creee', restants };
}

export async function markRunning(db: Queryable, id: string): Promise<void> {
  await db.query(
    `UPDATE taches SET statut = 'en_cours', commence_le = coalesce(commence_le, now()) WHERE id = $1 AND statut = 'en_attente'`,
    [id],
  );
}

/**
 * Ends a task with its result, exactly once (svc_finir_tache). `debit` false when there was nothing to read
 * (credits given back); the fingerprint makes a result identical to one served within 24 h free of charge.
 */
export async function completeTask(
  db: Queryable,
  id: string,
  resultat: unknown,
  options: { debit: boolean; fingerprint: string | null },
): Promise<void> {
  await db.query(`SELECT svc_finir_tache($1, 'terminee', $2, NULL, $3, $4)`, [
    id,
    resultat,
    options.debit,
    options.fingerprint,
  ]);
}

/** Ends a task in failure, exactly once, giving its credits back. */
export async function failTask(db: Queryable, id: string, erreur: z.infer<typeof TaskErrorSchema>): Promise<void> {
  await db.query(`SELECT svc_finir_tache($1, 'echouee', NULL, $2, false, NULL)`, [id, erreur]);
}
