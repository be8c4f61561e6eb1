import { transaction, type Db } from '../../db/client.ts';
import type { OutboundHttp } from '../../lib/outbound-http.ts';
import { balanceOf } from '../platform/ledger.ts';
import { buildDeliveryBody, compterTentatives, sendDelivery, type AttemptResult } from './deliveries.ts';

/** An attempt taken and never recorded (its worker lost) is taken again after this long. */
const TENTATIVE_PERDUE_MS = 2 * 60_000;
/** Deliveries taken at once: one claim, one balance check, one transaction to record them and debit them. */
const TAILLE_LOT = 100;
/** What the ledger says a delivery was debited for. */
export const OPERATION_LIVRAISON = 'livraison_webhook';

export interface Tour {
  envoyees: number;
  /** When to come back: null, nothing pending; 0, more is due now. */
  attendreMs: number | null;
  /** The round ended on a failure: the queue waits `attendreMs` whatever comes meanwhile. */
  enPause: boolean;
}

interface Prise {
  id: string;
  genre: string;
  le: Date;
  donnees: unknown;
  tentatives: number;
  credits: number;
}

type Issue =
  | { d: Prise; genre: 'tentee'; tentative: AttemptResult; le: Date }
  | { d: Prise; genre: 'sans_credit'; le: Date }
  /** Taken but not attempted (the round stopped before it): given back as it was. */
  | { d: Prise; genre: 'rendue' };

/**
 * One round of a subscription's queue (the deliveries of listing events and watch results, `en_file`): its due
 * deliveries in the order they were queued, taken by lots, sent one at a time, until none is due, `maxEnvois` were
 * sent or `budgetMs` passed. A lot is taken in one statement, its credits checked once, and its outcomes recorded in one
 * transaction with their debits: the rate of a queue is the subscriber's, not the ledger's.
 *
 * A failure ends the round and the queue waits for that delivery's retry (1 min, 5 min, 30 min, 2 h, 12 h after it),
 * so that a subscriber that is down is probed, not flooded; each failed attempt counts against the subscription as for
 * any delivery (50 in a row cut it). A delivery that costs credits is sent only while the organisation has them; else
 * the attempt is not made, is not held against the subscriber, and is retried on the same schedule.
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
  const w = await abonnement(db, o.webhookId, o.now());
  if (!w) return { envoyees, attendreMs: null, enPause: false };
  while (envoyees < (o.maxEnvois ?? 1000) && Date.now() - debut < (o.budgetMs ?? 60_000)) {
    const lot = await prendre(db, o.webhookId, o.now());
    if (lot.length === 0) break;
    const cout = lot.reduce((s, d) => s + d.credits, 0);
    let credits = cout > 0 ? (await balanceOf(db, w.organisation_id, null)).restants : 0;
    const issues: Issue[] = [];
    let arret = false;
    for (const d of lot) {
      o.battement?.();
      if (arret) {
        issues.push({ d, genre: 'rendue' });
        continue;
      }
      if (d.credits > credits) {
        issues.push({ d, genre: 'sans_credit', le: o.now() });
        arret = true;
        continue;
      }
      credits -= d.credits;
      const maintenant = o.now();
      const tentative = await sendDelivery(outbound, {
        url: w.url,
        secret: w.secret,
        id: d.id,
        genre: d.genre,
        body: buildDeliveryBody(d),
        now: maintenant,
        signal: o.signal,
      });
      issues.push({ d, genre: 'tentee', tentative, le: o.now() });
      envoyees += 1;
      if (!tentative.reussi) arret = true;
    }
    const pause = await noter(db, w, issues, o.delaisS);
    // Cut: another round at once, which empties the queue; else the pause after the failure.
    if (pause !== null) return { envoyees, attendreMs: pause.coupe ? 0 : pause.ms, enPause: !pause.coupe };
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

interface Abonnement {
  id: string;
  organisation_id: string;
  url: string;
  secret: string;
}

/**
 * The subscription, while it takes deliveries; when it is cut or deleted, its queue is emptied at once (exhausted:
 * nothing is sent to a cut subscription, and nothing debited).
 */
async function abonnement(db: Db, webhookId: string, maintenant: Date): Promise<Abonnement | null> {
  const { rows } = await db.query<Abonnement & { actif: boolean }>(
    'SELECT id, organisation_id, url, secret, actif AND supprime_le IS NULL AS actif FROM webhooks WHERE id = $1',
    [webhookId],
  );
  if (rows[0]?.actif) return rows[0];
  await db.query(
    `UPDATE livraisons SET statut = 'epuisee', maj_le = $2
      WHERE webhook_id = $1 AND en_file AND statut IN ('a_livrer', 'echec', 'en_cours')`,
    [webhookId, maintenant],
  );
  return null;
}

/** The next due deliveries of the queue, in its order, taken (`en_cours`) in one statement. */
async function prendre(db: Db, webhookId: string, maintenant: Date): Promise<Prise[]> {
  const { rows } = await db.query<Prise & { rang: string }>(
    `UPDATE livraisons l SET statut = 'en_cours', maj_le = $2
       FROM (SELECT id FROM livraisons
              WHERE webhook_id = $1 AND en_file
                AND ((statut IN ('a_livrer', 'echec') AND prochaine_le <= $2)
                     OR (statut = 'en_cours' AND maj_le <= $3))
              ORDER BY rang LIMIT $4
              FOR UPDATE SKIP LOCKED) p
      WHERE l.id = p.id
     RETURNING l.id, l.genre, l.le, l.tentatives, l.credits, l.rang,
               coalesce(l.payload, (SELECT c.donnees FROM diffusion_charges c WHERE c.id = l.charge_id)) AS donnees`,
    [webhookId, maintenant, new Date(maintenant.getTime() - TENTATIVE_PERDUE_MS), TAILLE_LOT],
  );
  return rows.sort((a, b) => Number(a.rang) - Number(b.rang));
}

/**
 * Records a lot's outcomes in one transaction: the deliveries received, and their debits (one movement each, written
 * only by the transition to `livree`, so a replay debits nothing); the failure, its retry or exhaustion; a delivery
 * not sent for lack of credits; those given back. Returns the pause the queue takes after a failure, or null.
 */
async function noter(
  db: Db,
  w: Abonnement,
  issues: Issue[],
  delaisS: readonly number[],
): Promise<{ ms: number; coupe: boolean } | null> {
  return transaction(db, async (client) => {
    const recues = issues.filter((i) => i.genre === 'tentee' && i.tentative.reussi) as Array<
      Extract<Issue, { genre: 'tentee' }>
    >;
    if (recues.length > 0) {
      const { rows } = await client.query<{ id: string; credits: number }>(
        `UPDATE livraisons l SET statut = 'livree', tentatives = l.tentatives + 1, reponse = r.reponse, erreur = NULL,
                maj_le = r.le
           FROM unnest($1::uuid[], $2::int[], $3::timestamptz[]) AS r(id, reponse, le)
          WHERE l.id = r.id AND l.statut = 'en_cours'
         RETURNING l.id, l.credits`,
        [recues.map((i) => i.d.id), recues.map((i) => i.tentative.statut_http), recues.map((i) => i.le)],
      );
      const payees = rows.filter((r) => r.credits > 0);
      if (payees.length > 0) {
        // Credits were checked before sending; should they have run out meanwhile, the events were received all the
        // same and those beyond the balance are not billed (the ledger refuses them).
        await client.query(
          `SELECT 1 FROM svc_debiter_lot($1::uuid[], $2::uuid[], $3::int[], $4::text[], $5::text[], $6::text[])`,
          [
            payees.map(() => w.organisation_id),
            payees.map(() => null),
            payees.map((r) => r.credits),
            payees.map(() => OPERATION_LIVRAISON),
            payees.map((r) => r.id),
            payees.map(() => null),
          ],
        );
      }
    }
    let pause: { ms: number; coupe: boolean } | null = null;
    let echec: { erreur: string | null; reponse: number | null } | null = null;
    for (const i of issues) {
      if (i.genre === 'rendue') {
        await client.query(
          `UPDATE livraisons SET statut = CASE WHEN tentatives = 0 THEN 'a_livrer' ELSE 'echec' END
            WHERE id = $1 AND statut = 'en_cours'`,
          [i.d.id],
        );
        continue;
      }
      if (i.genre === 'tentee' && i.tentative.reussi) continue;
      const tentative = i.d.tentatives + 1;
      const derniere = tentative > delaisS.length;
      // The retry of this delivery; once it is exhausted, the next delivery's first pause.
      const ms = delaisS[derniere ? 0 : tentative - 1] * 1000;
      const sansCredit = i.genre === 'sans_credit';
      const erreur = sansCredit
        ? 'Crédits insuffisants : rien n’a été envoyé ni débité ; la livraison sera retentée.'
        : i.tentative.erreur;
      const reponse = sansCredit ? null : i.tentative.statut_http;
      await client.query(
        `UPDATE livraisons SET statut = $2, tentatives = $3, reponse = $4, erreur = $5, maj_le = $6, prochaine_le = $7
          WHERE id = $1 AND statut = 'en_cours'`,
        [i.d.id, derniere ? 'epuisee' : 'echec', tentative, reponse, erreur, i.le, new Date(i.le.getTime() + ms)],
      );
      pause = { ms, coupe: false };
      // A lack of credits is ours, not the subscriber's: it does not count against the subscription.
      if (!sansCredit) echec = { erreur, reponse };
    }
    const dernierLe = issues.flatMap((i) => (i.genre === 'rendue' ? [] : [i.le])).at(-1);
    if (dernierLe && (recues.length > 0 || echec)) {
      const compte = await compterTentatives(client, w.id, { reussites: recues.length, echec, le: dernierLe });
      if (pause && compte.coupe) pause.coupe = true;
    }
    return pause;
  });
}
