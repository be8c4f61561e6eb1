-- The fan-out of events to the organisations (domain/diffusion/): listing events to webhook subscriptions, watches
-- and alerts (veilles) to their results, results to the subscriptions of `veille.resultat` and `alerte.resultat`.
--
-- The fan-out follows the two append-only journals (annonces_evenements, journal_adresses) by id, one cursor each,
-- and writes, in the transaction that moves the cursor, the deliveries and results the events cause: an event is
-- fanned out once, whatever the crashes. Only the live data is fanned out (webhooks and watches are not sandboxed).

CREATE TABLE diffusion_curseurs (
  journal text PRIMARY KEY CHECK (journal IN ('annonces', 'adresses')),
  -- The last id fanned out.
  dernier_id bigint NOT NULL
);
-- Installed over a journal already written: what came before is not news to anyone.
INSERT INTO diffusion_curseurs (journal, dernier_id)
VALUES ('annonces', (SELECT coalesce(max(id), 0) FROM annonces_evenements WHERE dataset = 'live')),
       ('adresses', (SELECT coalesce(max(id), 0) FROM journal_adresses WHERE dataset = 'live'));

-- A subscription never receives an event of before its creation: the last listing event of the journal when it was
-- created (the ids a transaction sees are all the ids below the highest it sees: migration 029).
ALTER TABLE webhooks ADD COLUMN evenement_depart bigint NOT NULL DEFAULT 0;
UPDATE webhooks SET evenement_depart = (SELECT coalesce(max(id), 0) FROM annonces_evenements WHERE dataset = 'live');
CREATE FUNCTION webhooks_evenement_depart() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.evenement_depart := (SELECT coalesce(max(id), 0) FROM annonces_evenements WHERE dataset = 'live');
  RETURN NEW;
END $$;
CREATE TRIGGER webhooks_evenement_depart BEFORE INSERT ON webhooks
  FOR EACH ROW EXECUTE FUNCTION webhooks_evenement_depart();

-- Deliveries of the fan-out go out through their subscription's queue (workflows/livrer-abonnement.ts: one workflow
-- per subscription sends them in order, so a burst of 10 000 events does not start 10 000 workflows); a task's own
-- deliveries keep their workflow each (workflows/livrer-webhook.ts).
-- The body of a listing event, written once for all the subscriptions it goes to (10 000 events to 100 subscriptions
-- are a million deliveries, not a million copies of the listing).
CREATE TABLE diffusion_charges (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  donnees jsonb NOT NULL
);
ALTER TABLE livraisons ALTER COLUMN payload DROP NOT NULL;
ALTER TABLE livraisons
  ADD COLUMN charge_id bigint REFERENCES diffusion_charges (id),
  ADD CONSTRAINT livraisons_corps CHECK ((payload IS NULL) <> (charge_id IS NULL)),
  ADD COLUMN en_file boolean NOT NULL DEFAULT false,
  -- Credits debited when the subscriber receives it (rate `evenement`); nothing when it fails for good.
  ADD COLUMN credits integer NOT NULL DEFAULT 0 CHECK (credits >= 0),
  -- When the next attempt is due: the first one, or the retry after a failure (1 min, 5 min, 30 min, 2 h, 12 h). A
  -- result of a watch is not due before it has been up 15 minutes.
  ADD COLUMN prochaine_le timestamptz NOT NULL DEFAULT now();
CREATE INDEX livraisons_file ON livraisons (webhook_id, rang) WHERE en_file AND statut IN ('a_livrer', 'en_cours', 'echec');
-- The fan-out's sweep for queues with a delivery overdue (worker/diffuseur.ts).
CREATE INDEX livraisons_file_dues ON livraisons (prochaine_le) WHERE en_file AND statut IN ('a_livrer', 'echec');

-- ---------------------------------------------------------------------------------------------------------------------
-- Watches and alerts (domain/veilles/): a watch is a saved search over the listings; an alert follows one listing or
-- one address. Both belong to an organisation and are written only through the API.
-- ---------------------------------------------------------------------------------------------------------------------

CREATE TABLE veilles (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organisation_id uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
  -- recherche: a watch; annonce, adresse: an alert.
  nature text NOT NULL CHECK (nature IN ('recherche', 'annonce', 'adresse')),
  nom text,
  -- A watch's criteria (domain/veilles/criteres.ts); {} for an alert.
  criteres jsonb NOT NULL DEFAULT '{}',
  annonce_id text COLLATE "C",
  cle_ban text COLLATE "C",
  -- Nothing of before its creation: the last id of each journal then.
  evenement_depart bigint NOT NULL,
  adresse_depart bigint NOT NULL,
  cree_le timestamptz NOT NULL DEFAULT now(),
  supprime_le timestamptz,
  CHECK ((nature = 'annonce') = (annonce_id IS NOT NULL)),
  CHECK ((nature = 'adresse') = (cle_ban IS NOT NULL))
);
CREATE INDEX veilles_organisation ON veilles (organisation_id, cree_le) WHERE supprime_le IS NULL;
CREATE INDEX veilles_annonce ON veilles (annonce_id) WHERE nature = 'annonce' AND supprime_le IS NULL;
CREATE INDEX veilles_adresse ON veilles (cle_ban) WHERE nature = 'adresse' AND supprime_le IS NULL;

-- Results in the order they came up (the id); readable, and due to webhooks, from `disponible_le` (15 minutes later).
CREATE TABLE veilles_resultats (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  organisation_id uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
  veille_id uuid NOT NULL REFERENCES veilles (id) ON DELETE CASCADE,
  genre text NOT NULL CHECK (genre IN ('veille.resultat', 'alerte.resultat')),
  -- The journal of the event that caused it, and its id there.
  journal text NOT NULL CHECK (journal IN ('annonces', 'adresses')),
  evenement_id bigint NOT NULL,
  annonce_id text COLLATE "C",
  cle_ban text COLLATE "C",
  -- When the event happened (at the source), when it came up here (the fan-out's clock once it holds the cursors, so
  -- that it grows with the id), when it is served.
  le timestamptz NOT NULL,
  releve_le timestamptz NOT NULL,
  disponible_le timestamptz NOT NULL,
  -- The result as served (domain/veilles/resultats.ts), written once.
  donnees jsonb NOT NULL,
  UNIQUE (veille_id, journal, evenement_id)
);
-- A watch's results are its new matches: one listing once.
CREATE UNIQUE INDEX veilles_resultats_annonce ON veilles_resultats (veille_id, annonce_id) WHERE genre = 'veille.resultat';
CREATE INDEX veilles_resultats_lecture ON veilles_resultats (organisation_id, id);
