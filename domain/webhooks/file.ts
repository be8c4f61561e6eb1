import type { Db } from '../../db/client.ts';
import type { OutboundHttp } from '../../lib/outbound-http.ts';
import { balanceOf } from '../platform/ledger.ts';
import { buildDeliveryBody, claimDelivery, recordDeliveryOutcome, sendDelivery } from './deliveries.ts';

/** An attempt taken and never recorded (its worker lost) is taken again after this long. */
const TENTATIVE_PERDUE_MS = 2 * 60_000;

export interface Tour {
  envoyees: number;
  /** When to come back: null, nothing pending; 0, more is due now. */
  attendreMs: number | null;
  /** The round ended on a failure: the queue waits `attendreMs` whatever comes meanwhile. */
  enPause: boolean;
}

/**
 * One round of a subscription's queue (the deliveries of listing events and watch results, en_file): its due
 * deliveries in the order they were queued, one at a time, until none is due, `maxEnvois` were sent or `budgetMs`
 * passed. A failure ends the round and the queue waits for that delivery's retry (1 min, 5 min, 30 min, 2 h, 12 h
 * after it), so that a subscriber that is down is probed, not flooded; each failed attempt counts against the
 * subscription as for any delivery (50 in a row cut it). A delivery that costs credits is sent only while the
 * organisation has them; else the attempt is not made, is not held against the subscriber, and is retried on the same
 * schedule.
 */
export async function livrerFile(
  db: Db,
  outbound: OutboundHttp,
  o: {
    webhookId: string;
    delaisS: readonly number[];
    now: () => Date;
    maxEnvois?: number;
    budgetMs?: number;
    signal?: AbortSignal;
    /** Called between deliveries (the activity's heartbeat). */
    battement?: () => void;
  },
): Promise<Tour> {
  const debut = Date.now();
  let envoyees = 0;
  if (!(await abonnementActif(db, o.webhookId, o.now()))) return { envoyees, attendreMs: null, enPause: false };
  while (envoyees < (o.maxEnvois ?? 200) && Date.now() - debut < (o.budgetMs ?? 60_000)) {
    o.battement?.();
    const maintenant = o.now();
    const { rows } = await db.query<{ id: string }>(
      `SELECT id FROM livraisons
        WHERE webhook_id = $1 AND en_file
          AND ((statut IN ('a_livrer', 'echec') AND prochaine_le <= $2)
               OR (statut = 'en_cours' AND maj_le <= $3))
        ORDER BY rang LIMIT 1`,
      [o.webhookId, maintenant, new Date(maintenant.getTime() - TENTATIVE_PERDUE_MS)],
    );
    if (rows.length === 0) break;
    const d = await claimDelivery(db, rows[0].id, maintenant);
    if (!d) continue;
    const tentative = d.tentatives + 1;
    const derniere = tentative > o.delaisS.length;
    // The retry of this delivery; once it is exhausted, the next delivery's first pause.
    const pauseMs = o.delaisS[derniere ? 0 : tentative - 1] * 1000;
    const echec = { livraisonId: d.id, tentative, reussi: false, derniere };
    if (d.credits > 0 && (await balanceOf(db, d.organisationId, null)).restants < d.credits) {
      await recordDeliveryOutcome(db, {
        ...echec,
        reponse: null,
        erreur: 'Crédits insuffisants : rien n’a été envoyé ni débité ; la livraison sera retentée.',
        le: maintenant,
        prochaineLe: new Date(maintenant.getTime() + pauseMs),
        imputable: false,
      });
      return { envoyees, attendreMs: pauseMs, enPause: true };
    }
    const issue = await sendDelivery(outbound, {
      url: d.url,
      secret: d.secret,
      id: d.id,
      genre: d.genre,
      body: buildDeliveryBody(d),
      now: maintenant,
      signal: o.signal,
    });
    const fin = o.now();
    const note = await recordDeliveryOutcome(db, {
      ...echec,
      reussi: issue.reussi,
      reponse: issue.statut_http,
      erreur: issue.erreur,
      le: fin,
      prochaineLe: issue.reussi ? null : new Date(fin.getTime() + pauseMs),
    });
    envoyees += 1;
    if (!issue.reussi) {
      if (note.coupe) await abonnementActif(db, o.webhookId, fin);
      return { envoyees, attendreMs: note.coupe ? null : pauseMs, enPause: true };
    }
  }
  const { rows } = await db.query<{ le: Date | null }>(
    `SELECT min(CASE WHEN statut = 'en_cours' THEN maj_le + $2 * interval '1 millisecond' ELSE prochaine_le END) AS le
       FROM livraisons WHERE webhook_id = $1 AND en_file AND statut IN ('a_livrer', 'echec', 'en_cours')`,
    [o.webhookId, TENTATIVE_PERDUE_MS],
  );
  const prochaine = rows[0].le;
  return {
    envoyees,
    attendreMs: prochaine ? Math.max(0, prochaine.getTime() - o.now().getTime()) : null,
    enPause: false,
  };
}

/**
 * Whether the subscription still takes deliveries; when it is cut or deleted, its queue is emptied at once (exhausted:
 * nothing is sent to a cut subscription, and nothing debited).
 */
async function abonnementActif(db: Db, webhookId: string, maintenant: Date): Promise<boolean> {
  const { rows } = await db.query<{ actif: boolean }>(
    'SELECT actif AND supprime_le IS NULL AS actif FROM webhooks WHERE id = $1',
    [webhookId],
  );
  if (rows[0]?.actif) return true;
  await db.query(
    `UPDATE livraisons SET statut = 'epuisee', maj_le = $2
      WHERE webhook_id = $1 AND en_file AND statut IN ('a_livrer', 'echec', 'en_cours')`,
    [webhookId, maintenant],
  );
  return false;
}
