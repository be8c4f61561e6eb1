import type { Queryable } from '../../db/client.ts';

export interface Balance {
  gratuits: number;
  inclus: number;
  facturables: number;
  /** Credits still usable this month before cut-off. */
  restants: number;
  cleUtilise: number;
  clePlafond: number | null;
}

export type DebitOutcome = 'debite' | 'identique' | 'deja' | 'credits_insuffisants' | 'plafond_cle';

export interface DebitRequest {
  organisationId: string;
  cleId: string | null;
  genre: 'debit' | 'reservation';
  credits: number;
  operation: string;
  requete: string | null;
  tache?: string | null;
  /** Fingerprint of the response: an identical one served within 24 h is not debited. */
  empreinte?: string | null;
  /** A retried movement with the same key is written once. */
  idempotence?: string | null;
}

/** Balances derived from the ledger (db function svc_solde). */
export async function balanceOf(db: Queryable, organisationId: string, cleId: string | null): Promise<Balance> {
  const { rows } = await db.query('SELECT * FROM svc_solde($1, $2)', [organisationId, cleId]);
  const r = rows[0];
  return {
    gratuits: r.gratuits,
    inclus: r.inclus,
    facturables: r.facturables,
    restants: r.restants,
    cleUtilise: r.cle_utilise,
    clePlafond: r.cle_plafond,
  };
}

/** Debits atomically with its checks (db function svc_debiter: the organisation row is locked meanwhile). */
export async function debit(
  db: Queryable,
  req: DebitRequest,
): Promise<{ issue: DebitOutcome; debites: number; restants: number }> {
  const { rows } = await db.query('SELECT * FROM svc_debiter($1, $2, $3, $4, $5, $6, $7, $8, $9)', [
    req.organisationId,
    req.cleId,
    req.genre,
    req.credits,
    req.operation,
    req.requete,
    req.tache ?? null,
    req.empreinte ?? null,
    req.idempotence ?? null,
  ]);
  return rows[0];
}

/**
 * Adds credits to the free pool (an admin grant), or removes some (a negative correction, down to zero). Takes the
 * organisation lock: call it inside a transaction.
 */
export async function grant(
  db: Queryable,
  organisationId: string,
  credits: number,
  motif: string,
  genre: 'ouverture' | 'octroi' = 'octroi',
): Promise<void> {
  await db.query('SELECT 1 FROM organisations WHERE id = $1 FOR UPDATE', [organisationId]);
  await db.query('SELECT svc_ecrire($1, NULL, $2, $3, 0, 0, NULL, NULL, NULL, $4, NULL)', [
    organisationId,
    genre,
    credits,
    motif,
  ]);
}

export interface Movement {
  id: string;
  genre: string;
  credits: number;
  /** What the movement added to (or took from) each pool. */
  pools: { gratuits: number; inclus: number; factures: number };
  /** The pools after it: free credits, included credits left this month, credits billed this month. */
  apres: { gratuits: number; inclus: number; factures_mois: number };
  operation: string | null;
  requete: string | null;
  tache: string | null;
  cle_id: string | null;
  motif: string | null;
  mois: string;
  le: string;
}

/** The ledger of an organisation, newest first, from movement id `avant` (exclusive) when given. */
export async function movements(db: Queryable, organisationId: string, limit: number, avant: number | null) {
  const { rows } = await db.query(
    `SELECT id, genre, credits, gratuits, inclus, factures, solde_gratuits, solde_inclus, factures_mois,
            operation, requete, tache, cle_id, motif,
            to_char(mois, 'YYYY-MM') AS mois, cree_le
       FROM mouvements
      WHERE organisation_id = $1 AND ($2::bigint IS NULL OR id < $2)
      ORDER BY id DESC LIMIT $3`,
    [organisationId, avant, limit + 1],
  );
  const page: Movement[] = rows.slice(0, limit).map((r) => ({
    id: String(r.id),
    genre: r.genre,
    credits: r.credits,
    pools: { gratuits: r.gratuits, inclus: r.inclus, factures: r.factures },
    apres: { gratuits: r.solde_gratuits, inclus: r.solde_inclus, factures_mois: r.factures_mois },
    operation: r.operation,
    requete: r.requete,
    tache: r.tache,
    cle_id: r.cle_id,
    motif: r.motif,
    mois: r.mois,
    le: new Date(r.cree_le).toISOString(),
  }));
  return { page, next: rows.length > limit ? Number(rows[limit - 1].id) : null };
}
