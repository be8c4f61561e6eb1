import { Context } from '@temporalio/activity';
import type { Db } from '../db/client.ts';
import {
  buildDeliveryBody,
  claimDelivery,
  recordDeliveryOutcome,
  sendDelivery,
} from '../domain/webhooks/deliveries.ts';
import { livrerFile, type Tour } from '../domain/webhooks/file.ts';
import type { OutboundHttp } from '../lib/outbound-http.ts';

/** The deliveries of webhooks: a task's end, one delivery per workflow; a subscription's queue, a round at a time. */
export function createWebhookActivities(deps: { db: Db; outbound: OutboundHttp }) {
  const { db } = deps;
  return {
    async tenterLivraison(args: { livraisonId: string; tentative: number; derniere: boolean }) {
      const now = new Date();
      const delivery = await claimDelivery(db, args.livraisonId, now);
      if (!delivery) return { termine: true, statut: 'abandonnee' };
      const attempt = await sendDelivery(deps.outbound, {
        url: delivery.url,
        secret: delivery.secret,
        id: delivery.id,
        genre: delivery.genre,
        body: buildDeliveryBody({ id: delivery.id, genre: delivery.genre, le: delivery.le, donnees: delivery.donnees }),
        now,
      });
      const recorded = await recordDeliveryOutcome(db, {
        livraisonId: args.livraisonId,
        tentative: args.tentative,
        reussi: attempt.reussi,
        reponse: attempt.statut_http,
        erreur: attempt.erreur,
        derniere: args.derniere,
        le: now,
      });
      const statut = recorded.statut ?? (attempt.reussi ? 'livree' : 'echec');
      return { termine: attempt.reussi || args.derniere || recorded.coupe, statut };
    },

    async noterLivraisonPerdue(args: { livraisonId: string; tentative: number; derniere: boolean }) {
      const recorded = await recordDeliveryOutcome(db, {
        livraisonId: args.livraisonId,
        tentative: args.tentative,
        reussi: false,
        reponse: null,
        erreur: 'La tentative n’a pas pu être menée à son terme.',
        derniere: args.derniere,
        le: new Date(),
      });
      return { termine: args.derniere || recorded.coupe, statut: recorded.statut ?? 'echec' };
    },

    /** One round of a subscription's queue (domain/webhooks/file.ts), heartbeating between deliveries. */
    async livrerFileAbonnement(args: { webhookId: string; delaisS: number[] }): Promise<Tour> {
      const context = Context.current();
      return livrerFile(db, deps.outbound, {
        webhookId: args.webhookId,
        delaisS: args.delaisS,
        now: () => new Date(),
        signal: context.cancellationSignal,
        battement: () => context.heartbeat(),
      });
    },
  };
}
