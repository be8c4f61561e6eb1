import { proxyActivities, sleep } from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';

// One attempt per activity: the delivery's own retry schedule is the workflow's durable timers, not activity retries.
const { tenterLivraison } = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 1 },
});
// Recording an outcome must not be lost to a transient database fault.
const { noterLivraisonPerdue } = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumAttempts: 10 },
});

export interface LivraisonEntree {
  livraisonId: string;
  /** Waits before each new attempt after a failure, in seconds (spec: 60, 300, 1800, 7200, 43200). */
  delaisS: number[];
}

/** Delivers one webhook event: an attempt, then a durable timer before each retry; each attempt is signed anew. */
export async function livrerWebhook({ livraisonId, delaisS }: LivraisonEntree): Promise<string> {
  for (let tentative = 1; tentative <= delaisS.length + 1; tentative++) {
    let issue: Awaited<ReturnType<typeof tenterLivraison>>;
    try {
      issue = await tenterLivraison({ livraisonId, tentative, derniere: tentative === delaisS.length + 1 });
    } catch {
      // The attempt's activity itself failed (worker lost, database down): counted as a failed attempt.
      issue = await noterLivraisonPerdue({ livraisonId, tentative, derniere: tentative === delaisS.length + 1 });
    }
    if (issue.termine) return issue.statut;
    await sleep(delaisS[tentative - 1] * 1000);
  }
  return 'epuisee';
}
