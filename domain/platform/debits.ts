import type { Queryable } from '../../db/client.ts';

/** The debit of one served answer. */
export interface AnswerDebit {
  organisationId: string;
  cleId: string | null;
  credits: number;
  operation: string;
  requete: string;
  /** The answer's fingerprint: an identical answer served within 24 h is not debited. */
  empreinte: string | null;
}

export interface AnswerDebitOutcome {
  issue: 'debite' | 'identique' | 'credits_insuffisants' | 'plafond_cle' | 'organisation_absente';
  debites: number;
  /** The organisation's credits still usable after this debit. */
  restants: number;
  /** When the ledger last served this answer (debite, identique), in ms since the epoch; else null. */
  serviLe: number | null;
}

// A batch is one statement; its arrays stay small enough to parse fast and to keep one batch's wait short.
const MAX_BATCH = 500;
// Fingerprints of answers served more than a day ago spare no debit any more: each instance deletes them this often,
// a bounded number per statement (instances purging at once just find less to delete).
const PURGE_EVERY_MS = 10 * 60_000;
const PURGE_ROWS = 10_000;

/** Deletes the fingerprints of answers served more than 24 h ago (reponses_servies); returns how many. */
export async function purgeServedAnswers(db: Queryable): Promise<number> {
  let purged = 0;
  for (;;) {
    const { rowCount } = await db.query(
      `DELETE FROM reponses_servies WHERE ctid = ANY (ARRAY(
         SELECT ctid FROM reponses_servies WHERE servi_le <= now() - interval '24 hours' LIMIT $1))`,
      [PURGE_ROWS],
    );
    purged += rowCount ?? 0;
    if ((rowCount ?? 0) < PURGE_ROWS) return purged;
  }
}

/**
 * Group commit of the answers' debits. A debit waits for the batch that writes it to be committed, so it is durable
 * before the answer leaves; but the debits of all organisations that arrive while a batch is being written go
 * together in the next one (svc_debiter_lot: one statement, one transaction, one WAL flush), checked in their order
 * of arrival under each organisation's lock. Alone, a debit waits for no one: the batch leaves on the next turn of
 * the event loop. Under load, batches grow to what arrived during one commit, so the ledger's throughput follows the
 * load instead of one commit per answer.
 */
export function createDebiter(db: Queryable) {
  let queue: Array<{ debit: AnswerDebit; resolve: (o: AnswerDebitOutcome) => void; reject: (e: unknown) => void }> = [];
  let writing: Promise<void> | null = null;
  let scheduled = false;
  // A failed purge is retried at the next one; the rows it leaves only take room.
  const purge = setInterval(() => purgeServedAnswers(db).catch(() => {}), PURGE_EVERY_MS).unref();

  function schedule() {
    if (scheduled || writing) return;
    scheduled = true;
    // The next turn of the loop: the debits of the requests read in this one join the batch.
    setImmediate(() => {
      scheduled = false;
      writing = write().finally(() => {
        writing = null;
        if (queue.length > 0) schedule();
      });
    });
  }

  async function write() {
    const batch = queue.slice(0, MAX_BATCH);
    queue = queue.slice(batch.length);
    if (batch.length === 0) return;
    const d = batch.map((b) => b.debit);
    try {
      const { rows } = await db.query<{ issues: string }>({
        // Named: each connection parses and plans the statement once, not once per batch. The outcomes come back as
        // one text, "rang issue debites restants [servi_le in ms]" per debit: reading five typed columns per debit
        // cost the event loop more than the rest of the batch.
        name: 'svc_debiter_lot_texte',
        text: `SELECT string_agg(concat_ws(' ', rang, issue, debites, restants,
                                         floor(extract(epoch FROM servi_le) * 1000)::bigint), ',' ORDER BY rang) AS issues
                 FROM svc_debiter_lot($1::uuid[], $2::uuid[], $3::int[], $4::text[], $5::text[], $6::text[])`,
        values: [
          d.map((x) => x.organisationId),
          d.map((x) => x.cleId),
          d.map((x) => x.credits),
          d.map((x) => x.operation),
          d.map((x) => x.requete),
          d.map((x) => x.empreinte),
        ],
      });
      const outcomes = rows[0]!.issues.split(',');
      batch.forEach((b, i) => {
        const [rang, issue, debites, restants, serviLe] = outcomes[i]?.split(' ') ?? [];
        if (Number(rang) !== i + 1) return b.reject(new Error(`svc_debiter_lot : aucune issue pour le débit ${i + 1}`));
        b.resolve({
          issue: issue as AnswerDebitOutcome['issue'],
          debites: Number(debites),
          restants: Number(restants),
          serviLe: serviLe === undefined ? null : Number(serviLe),
        });
      });
    } catch (error) {
      // The batch is one transaction: it failed whole, nothing of it was debited.
      for (const b of batch) b.reject(error);
    }
  }

  return {
    /** Debits one served answer; resolves once the ledger holds it (or refused it). */
    debit(debit: AnswerDebit): Promise<AnswerDebitOutcome> {
      return new Promise((resolve, reject) => {
        queue.push({ debit, resolve, reject });
        schedule();
      });
    },
    close() {
      clearInterval(purge);
    },
  };
}

export type Debiter = ReturnType<typeof createDebiter>;
