import { performance } from 'node:perf_hooks';
import type { PoolClient } from 'pg';
import { transaction, type Db } from '../../db/client.ts';
import { OutboundError, type OutboundHttp } from '../../lib/outbound-http.ts';
import { SIGNATURE_HEADER, signDelivery } from './signature.ts';

/** Consecutive failed attempts that cut a subscription. */
export const MAX_CONSECUTIVE_FAILURES = 50;
/** A subscriber has this long to answer an attempt. */
export const DELIVERY_TIMEOUT_MS = 10_000;
/** Pauses before each retry after a failure: the sixth failed attempt exhausts the delivery. */
export const RETRY_DELAYS_S = [60, 300, 1800, 7200, 43_200] as const;

/**
 * The body of every delivery, test included: `{ id, genre, le, donnees }`, keys in this order. `id` is the delivery's
 * (also in `Svc-Livraison`, the same on every attempt), `le` when the event came up.
 */
export function buildDeliveryBody(delivery: { id: string; genre: string; le: Date; donnees: unknown }): string {
  return JSON.stringify({
    id: delivery.id,
    genre: delivery.genre,
    le: delivery.le.toISOString(),
    donnees: delivery.donnees,
  });
}

export interface AttemptResult {
  reussi: boolean;
  /** HTTP status received, null when none came. */
  statut_http: number | null;
  duree_ms: number;
  /** Why the attempt failed, in French; null on success. */
  erreur: string | null;
}

/**
 * One signed POST of a delivery, never retried here and never redirected. Only a 2xx counts as received; the
 * subscriber's response body is ignored.
 */
export async function sendDelivery(
  outbound: OutboundHttp,
  delivery: { url: string; secret: string; id: string; genre: string; body: string; now: Date; signal?: AbortSignal },
): Promise<AttemptResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  try {
    const response = await outbound.request({
      method: 'POST',
      url: delivery.url,
      headers: {
        'Content-Type': 'application/json',
        [SIGNATURE_HEADER]: signDelivery(delivery.secret, delivery.body, delivery.now.getTime() / 1000),
        'Svc-Livraison': delivery.id,
        'Svc-Genre': delivery.genre,
      },
      body: delivery.body,
      timeoutMs: DELIVERY_TIMEOUT_MS,
      connectTimeoutMs: 5_000,
      maxBytes: 64 * 1024,
      signal: delivery.signal,
    });
    return { ...judge(response.status), duree_ms: elapsed() };
  } catch (error) {
    if (!(error instanceof OutboundError)) throw error;
    // A 2xx followed by a huge body was still received: the body does not matter to us.
    if (error.reason === 'trop_lourd' && error.status !== null) return { ...judge(error.status), duree_ms: elapsed() };
    return { reussi: false, statut_http: null, duree_ms: elapsed(), erreur: error.message };
  }
}

function judge(status: number): Omit<AttemptResult, 'duree_ms'> {
  if (status >= 200 && status < 300) return { reussi: true, statut_http: status, erreur: null };
  if (status >= 300 && status < 400) {
    return {
      reussi: false,
      statut_http: status,
      erreur: `Redirection ${status} non suivie : abonnez directement l’adresse finale.`,
    };
  }
  return { reussi: false, statut_http: status, erreur: `Le destinataire a répondu ${status} au lieu d’un code 2xx.` };
}

export interface ClaimedDelivery {
  id: string;
  webhookId: string;
  url: string;
  secret: string;
  genre: string;
  le: Date;
  donnees: unknown;
  tentatives: number;
}

/**
 * Takes a delivery for an attempt: null when there is nothing to send any more (delivered, exhausted, cancelled by a
 * deletion). A delivery of a cut subscription is exhausted at once: nothing is sent to a cut subscription.
 */
export async function claimDelivery(db: Db, livraisonId: string, now: Date): Promise<ClaimedDelivery | null> {
  return transaction(db, async (client) => {
    const { rows } = await client.query(
      `SELECT l.id, l.webhook_id, l.genre, l.le, l.payload, l.tentatives, l.statut, w.url, w.secret, w.actif
         FROM livraisons l JOIN webhooks w ON w.id = l.webhook_id
        WHERE l.id = $1 AND w.supprime_le IS NULL
        FOR UPDATE OF l`,
      [livraisonId],
    );
    const row = rows[0];
    if (!row || !['a_livrer', 'en_cours', 'echec'].includes(row.statut)) return null;
    if (!row.actif) {
      await client.query(`UPDATE livraisons SET statut = 'epuisee', maj_le = $2 WHERE id = $1`, [livraisonId, now]);
      return null;
    }
    await client.query(`UPDATE livraisons SET statut = 'en_cours', maj_le = $2 WHERE id = $1`, [livraisonId, now]);
    return {
      id: row.id,
      webhookId: row.webhook_id,
      url: row.url,
      secret: row.secret,
      genre: row.genre,
      le: row.le,
      donnees: row.payload,
      tentatives: row.tentatives,
    };
  });
}

export interface DeliveryOutcome {
  livraisonId: string;
  /** Number of this attempt, from 1: recording the same attempt twice (a retried activity) changes nothing. */
  tentative: number;
  reussi: boolean;
  /** HTTP status received, null when none came. */
  reponse: number | null;
  erreur?: string | null;
  /** No retry will follow: a failure exhausts the delivery (`epuisee`) instead of leaving it in `echec`. */
  derniere: boolean;
  le: Date;
}

export interface RecordedOutcome {
  /** false: already recorded, or the delivery is no longer pending (cancelled by a deletion). */
  enregistre: boolean;
  statut: 'livree' | 'echec' | 'epuisee' | null;
  echecsConsecutifs: number | null;
  /** This failure cut the subscription: stop every pending delivery to it. */
  coupe: boolean;
}

/**
 * Records one attempt of a (non-test) delivery and keeps the subscription's count of consecutive failed attempts: a
 * success resets it, the 50th failure in a row cuts the subscription. Only a successful test delivery reactivates it.
 */
export async function recordDeliveryOutcome(db: Db, outcome: DeliveryOutcome): Promise<RecordedOutcome> {
  const statut = outcome.reussi ? 'livree' : outcome.derniere ? 'epuisee' : 'echec';
  return transaction(db, async (client) => {
    const updated = await client.query<{ webhook_id: string }>(
      `UPDATE livraisons SET statut = $2, tentatives = $3, reponse = $4, erreur = $5, maj_le = $6
        WHERE id = $1 AND tentatives < $3 AND statut IN ('a_livrer', 'en_cours', 'echec')
        RETURNING webhook_id`,
      [outcome.livraisonId, statut, outcome.tentative, outcome.reponse, outcome.erreur ?? null, outcome.le],
    );
    if (updated.rowCount === 0) return { enregistre: false, statut: null, echecsConsecutifs: null, coupe: false };
    const compte = await compterTentatives(client, updated.rows[0].webhook_id, {
      reussites: outcome.reussi ? 1 : 0,
      echec: outcome.reussi ? null : outcome,
      le: outcome.le,
    });
    return { enregistre: true, statut, ...compte };
  });
}

/**
 * The subscription's count of consecutive failed attempts after some attempts in this order: successes (which reset
 * it), then at most one failure. The 50th failure in a row cuts the subscription. Call it in the transaction that
 * records the attempts.
 */
export async function compterTentatives(
  client: PoolClient,
  webhookId: string,
  tentatives: { reussites: number; echec: { erreur?: string | null; reponse: number | null } | null; le: Date },
): Promise<{ echecsConsecutifs: number | null; coupe: boolean }> {
  const { rows } = await client.query<{ actif: boolean; echecs_consecutifs: number }>(
    'SELECT actif, echecs_consecutifs FROM webhooks WHERE id = $1 AND supprime_le IS NULL FOR UPDATE',
    [webhookId],
  );
  if (rows.length === 0) return { echecsConsecutifs: null, coupe: false };
  const avant = tentatives.reussites > 0 ? 0 : rows[0].echecs_consecutifs;
  const echecs = tentatives.echec ? avant + 1 : avant;
  const coupe = rows[0].actif && echecs >= MAX_CONSECUTIVE_FAILURES;
  const e = tentatives.echec;
  const last = e ? (e.erreur ?? (e.reponse !== null ? `réponse HTTP ${e.reponse}` : 'aucune réponse')) : '';
  await client.query(
    `UPDATE webhooks SET echecs_consecutifs = $2,
            actif = actif AND NOT $3, coupe_le = CASE WHEN $3 THEN $4 ELSE coupe_le END,
            motif_coupure = CASE WHEN $3 THEN $5 ELSE motif_coupure END
      WHERE id = $1`,
    [
      webhookId,
      echecs,
      coupe,
      tentatives.le,
      `${MAX_CONSECUTIVE_FAILURES} échecs de livraison consécutifs (dernier : ${last}). Un test réussi (POST /webhooks/{id}/test) rétablit l’abonnement.`,
    ],
  );
  return { echecsConsecutifs: echecs, coupe };
}
