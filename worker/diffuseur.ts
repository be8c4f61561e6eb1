import type { Client } from '@temporalio/client';
import type { Db } from '../db/client.ts';
import { repartir } from '../domain/diffusion/repartir.ts';
import { reveillerAbonnement } from '../lib/temporal.ts';

/** A queue with a delivery due for this long and not taken is woken again (its workflow lost, a signal missed). */
const RETARD_REVEIL_MS = 60_000;

/**
 * The fan-out loop of a worker process: every `periodeMs`, the events of the live journals not yet fanned out go to
 * the subscriptions, watches and alerts (domain/diffusion/repartir.ts: one instance at a time), and the queues of the
 * subscriptions that got deliveries are woken. Every minute, a queue with a delivery overdue is woken too: a crash
 * between the fan-out's commit and its signals loses no delivery.
 */
export function startDiffuseur(o: {
  db: Db;
  client: Client;
  taskQueue: string;
  delaisS: number[];
  periodeMs?: number;
  onError?: (error: unknown) => void;
}): { stop(): Promise<void>; tour(): Promise<void> } {
  let arrete = false;
  let dernierRattrapage = 0;
  const reveiller = async (ids: Iterable<string>) => {
    for (const webhookId of ids) {
      await reveillerAbonnement(o.client, { taskQueue: o.taskQueue, webhookId, delaisS: o.delaisS });
    }
  };
  const tour = async () => {
    for (;;) {
      const r = await repartir(o.db);
      if (!r) return;
      await reveiller(r.abonnements);
      if (!r.reste) break;
    }
    if (Date.now() - dernierRattrapage >= RETARD_REVEIL_MS) {
      dernierRattrapage = Date.now();
      const { rows } = await o.db.query<{ webhook_id: string }>(
        `SELECT DISTINCT l.webhook_id FROM livraisons l JOIN webhooks w ON w.id = l.webhook_id
          WHERE l.en_file AND l.statut IN ('a_livrer', 'echec') AND l.prochaine_le < now() - $1 * interval '1 millisecond'
            AND w.actif AND w.supprime_le IS NULL`,
        [RETARD_REVEIL_MS],
      );
      await reveiller(rows.map((r) => r.webhook_id));
    }
  };
  let courant: Promise<void> = Promise.resolve();
  let minuterie: NodeJS.Timeout | undefined;
  const suivant = () => {
    if (arrete) return;
    minuterie = setTimeout(() => {
      courant = tour()
        .catch((error) => (o.onError ?? ((e) => console.error('Diffusion des événements :', e)))(error))
        .finally(suivant);
    }, o.periodeMs ?? 1000);
  };
  suivant();
  return {
    tour,
    async stop() {
      arrete = true;
      clearTimeout(minuterie);
      await courant;
    },
  };
}
