import type { Queryable } from '../../db/client.ts';
import type { TaskEngine } from '../catalogue.ts';

/** A task still waiting this long after it was written is started again (a start takes milliseconds). */
export const RESUME_AFTER_S = 10;
/** How often each api instance looks for such tasks. */
export const RESUME_EVERY_MS = 10_000;

/**
 * Starts the tasks whose start was cut short. A task is written with its reservation in one commit, then its workflow
 * is started: an api stopped between the two (crash, kill, deployment) leaves a task that nothing would ever run, end
 * or settle, its credits reserved for good. Starting is idempotent (the workflow id is the task id), so a task whose
 * workflow did start, and merely waits for a worker, is left as it is. Returns how many tasks were looked at.
 */
export async function resumeStalledTasks(
  deps: { db: Queryable; engine: TaskEngine },
  olderThanS = RESUME_AFTER_S,
): Promise<number> {
  const { rows } = await deps.db.query<{ id: string; operation: string }>(
    `SELECT id, operation FROM taches
      WHERE statut = 'en_attente' AND cree_le < now() - make_interval(secs => $1)
      ORDER BY cree_le`,
    [olderThanS],
  );
  // One task that cannot start (Temporal down, an operation withdrawn) does not hold up the others.
  const failures: unknown[] = [];
  for (const task of rows) await deps.engine.start(task).catch((error: unknown) => failures.push(error));
  if (failures.length > 0) throw new AggregateError(failures, `${failures.length} tâche(s) non relancée(s)`);
  return rows.length;
}

/**
 * Runs resumeStalledTasks now, then every RESUME_EVERY_MS, until `stop()` (which waits for the round under way). A
 * failed round is reported; the next one tries again.
 */
export function startTaskResumer(
  deps: { db: Queryable; engine: TaskEngine },
  onError: (error: unknown) => void,
): { stop(): Promise<void> } {
  let running: Promise<unknown> | null = null;
  const round = () => {
    running ??= resumeStalledTasks(deps)
      .catch(onError)
      .finally(() => (running = null));
  };
  round();
  const timer = setInterval(round, RESUME_EVERY_MS).unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
