-- Webhooks: the subscriptions of an organisation and the deliveries made to them.

CREATE TABLE webhooks (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organisation_id uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
  url text NOT NULL CHECK (char_length(url) <= 500),
  genres text[] NOT NULL CHECK (cardinality(genres) BETWEEN 1 AND 10),
  filtres jsonb NOT NULL DEFAULT '{}',
  -- Kept in clear because every delivery is signed with it; returned only by creation, erased on deletion.
  secret text,
  actif boolean NOT NULL DEFAULT true,
  echecs_consecutifs integer NOT NULL DEFAULT 0 CHECK (echecs_consecutifs >= 0),
  coupe_le timestamptz,
  motif_coupure text,
  cree_le timestamptz NOT NULL DEFAULT now(),
  -- Deletion is a mark: the delivery history stays for support, and a delivery in flight finds it cancelled.
  supprime_le timestamptz,
  CHECK (supprime_le IS NOT NULL OR secret IS NOT NULL),
  CHECK (actif OR coupe_le IS NOT NULL)
);
CREATE INDEX webhooks_organisation ON webhooks (organisation_id, cree_le) WHERE supprime_le IS NULL;
-- The dispatcher looks for the live subscriptions to a genre.
CREATE INDEX webhooks_genres ON webhooks USING gin (genres) WHERE actif AND supprime_le IS NULL;

-- One row per event to deliver to one subscription; its attempts update it. The body posted is
-- {id, genre, le, donnees}: rebuilt from these columns at each attempt, so its key order never changes.
-- `annulee` is ours, never shown: the pending deliveries of a deleted subscription.
CREATE TABLE livraisons (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  -- Insertion order: breaks ties between deliveries of the same instant (random uuids do not).
  rang bigint GENERATED ALWAYS AS IDENTITY,
  webhook_id uuid NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
  genre text NOT NULL,
  statut text NOT NULL DEFAULT 'a_livrer'
    CHECK (statut IN ('a_livrer', 'en_cours', 'livree', 'echec', 'epuisee', 'annulee')),
  tentatives integer NOT NULL DEFAULT 0 CHECK (tentatives >= 0),
  -- Last HTTP status received, null when no answer came (refused connection, time-out).
  reponse integer,
  -- Last failure in words (French), for support.
  erreur text,
  -- Source event (feed event id, task id...): one delivery per event and subscription, whatever retries the sender.
  evenement text,
  le timestamptz NOT NULL DEFAULT now(),
  maj_le timestamptz NOT NULL DEFAULT now(),
  payload jsonb NOT NULL
);
CREATE INDEX livraisons_webhook_le ON livraisons (webhook_id, le DESC, rang DESC);
CREATE UNIQUE INDEX livraisons_evenement ON livraisons (webhook_id, evenement) WHERE evenement IS NOT NULL;
