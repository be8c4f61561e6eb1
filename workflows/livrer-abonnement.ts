import { condition, continueAsNew, defineSignal, proxyActivities, setHandler } from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';

// A round sends one delivery at a time (10 s at most each) for a minute at most, heartbeating between them; a round
// that fails (database down) is tried again, its deliveries being taken under lock.
const { livrerFileAbonnement } = proxyActivities<Activities>({
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '5 seconds', backoffCoefficient: 2, maximumInterval: '5 minutes' },
});

/** Sent by the fan-out (worker/diffuseur.ts) when it queued deliveries for the subscription. */
export const nouvellesLivraisons = defineSignal('nouvellesLivraisons');

export interface AbonnementEntree {
  webhookId: string;
  /** Waits before each new attempt after a failure, in seconds (spec: 60, 300, 1800, 7200, 43200). */
  delaisS: number[];
}

/** Rounds before the history is started afresh (continue-as-new): a queue may live for days. */
const TOURS_PAR_HISTOIRE = 200;

/**
 * The queue of one subscription (workflow id `livraisons-<webhook id>`): rounds of its due deliveries, a durable
 * timer until the next one is due (a retry, a watch result's 15 minutes), woken early by a signal; it ends when nothing
 * is pending, and the next signal starts it again (signal-with-start).
 */
export async function livrerAbonnement(entree: AbonnementEntree): Promise<void> {
  let signale = false;
  setHandler(nouvellesLivraisons, () => {
    signale = true;
  });
  for (let tour = 0; tour < TOURS_PAR_HISTOIRE; tour++) {
    signale = false;
    const { attendreMs, enPause } = await livrerFileAbonnement(entree);
    if (attendreMs === null) {
      // Nothing pending; a signal that came during the round may have brought more.
      if (!signale) return;
      continue;
    }
    // After a failure the subscriber is given its pause: new deliveries wait behind the retry.
    if (attendreMs > 0) await condition(() => signale && !enPause, attendreMs);
  }
  await continueAsNew<typeof livrerAbonnement>(entree);
}
