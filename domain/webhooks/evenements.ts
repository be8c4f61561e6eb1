import type { Queryable } from '../../db/client.ts';

/**
 * Queues the deliveries of one event of an organisation: one per active subscription to its genre, plus the
 * subscription whose URL is `alsoUrl` (a task's own `webhook`), once each even when the caller is retried.
 * Returns the ids of the deliveries to send.
 */
export async function enqueueEvent(
  db: Queryable,
  event: { organisationId: string; genre: string; evenement: string; donnees: unknown; alsoUrl?: string | null },
): Promise<string[]> {
  await db.query(
    `INSERT INTO livraisons (webhook_id, genre, evenement, payload)
     SELECT w.id, $2, $3, $4 FROM webhooks w
      WHERE w.organisation_id = $1 AND w.actif AND w.supprime_le IS NULL AND ($2 = ANY (w.genres) OR w.url = $5)
     ON CONFLICT (webhook_id, evenement) WHERE evenement IS NOT NULL DO NOTHING`,
    [event.organisationId, event.genre, event.evenement, JSON.stringify(event.donnees), event.alsoUrl ?? null],
  );
  const { rows } = await db.query<{ id: string }>(
    `SELECT l.id FROM livraisons l JOIN webhooks w ON w.id = l.webhook_id
      WHERE w.organisation_id = $1 AND l.evenement = $2 AND l.statut IN ('a_livrer', 'en_cours', 'echec')`,
    [event.organisationId, event.evenement],
  );
  return rows.map((r) => r.id);
}

/** The subscription of an organisation to this URL, whose secret signs a task's own `webhook` deliveries. */
export async function subscriptionOfUrl(db: Queryable, organisationId: string, url: string): Promise<string | null> {
  const { rows } = await db.query<{ id: string }>(
    'SELECT id FROM webhooks WHERE organisation_id = $1 AND url = $2 AND actif AND supprime_le IS NULL LIMIT 1',
    [organisationId, url],
  );
  return rows[0]?.id ?? null;
}
