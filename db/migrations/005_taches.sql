-- Tasks of the long operations: the rows the API reads (fast reads, expiry); Temporal runs them (workflow id = id).
CREATE TABLE taches (
  id text PRIMARY KEY,
  operation text NOT NULL,
  organisation_id uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
  cle_id uuid REFERENCES cles (id) ON DELETE SET NULL,
  statut text NOT NULL DEFAULT 'en_attente' CHECK (statut IN ('en_attente', 'en_cours', 'terminee', 'echouee')),
  entree jsonb NOT NULL,
  webhook text,
  resultat jsonb,
  erreur jsonb,
  -- Credits reserved when the task started, and what became of them (debited on success, given back otherwise).
  credits_reserves integer NOT NULL DEFAULT 0,
  credits_debites integer,
  cle_client text,
  empreinte_entree text NOT NULL,
  cree_le timestamptz NOT NULL DEFAULT now(),
  commence_le timestamptz,
  termine_le timestamptz,
  expire_le timestamptz NOT NULL,
  UNIQUE (organisation_id, cle_client)
);
CREATE INDEX taches_expiration ON taches (expire_le);

-- Settles the reservation of a task exactly once, under the organisation lock:
--   p_debiter true  → a `reglement` row (0 credits: the reservation becomes the debit), unless an identical result was
--                     served to the organisation within 24 h, then a `restitution`;
--   p_debiter false → a `restitution` row giving back what the reservation took, pool by pool.
-- Returns what the task finally costs. A second call for the same task changes nothing.
CREATE FUNCTION svc_regler_tache(p_tache text, p_debiter boolean, p_empreinte text)
RETURNS TABLE (debites integer, restants bigint)
LANGUAGE plpgsql AS $$
DECLARE
  t taches;
  r mouvements;
  s record;
  identique boolean := false;
BEGIN
  SELECT * INTO t FROM taches WHERE id = p_tache;
  PERFORM 1 FROM organisations WHERE id = t.organisation_id FOR UPDATE;
  SELECT * INTO r FROM mouvements WHERE cle_idempotence = 'reservation:' || p_tache;
  IF r.id IS NULL THEN
    SELECT * INTO s FROM svc_solde(t.organisation_id, t.cle_id);
    RETURN QUERY SELECT 0, s.restants;
    RETURN;
  END IF;
  IF EXISTS (SELECT 1 FROM mouvements WHERE cle_idempotence IN ('reglement:' || p_tache, 'restitution:' || p_tache)) THEN
    SELECT * INTO s FROM svc_solde(t.organisation_id, t.cle_id);
    RETURN QUERY SELECT CASE WHEN EXISTS (SELECT 1 FROM mouvements WHERE cle_idempotence = 'reglement:' || p_tache)
                        THEN -r.credits ELSE 0 END, s.restants;
    RETURN;
  END IF;
  IF p_debiter AND p_empreinte IS NOT NULL THEN
    identique := EXISTS (SELECT 1 FROM reponses_servies rs WHERE rs.organisation_id = t.organisation_id
                           AND rs.empreinte = p_empreinte AND rs.servi_le > now() - interval '24 hours');
  END IF;
  IF p_debiter AND NOT identique THEN
    PERFORM svc_ecrire(t.organisation_id, t.cle_id, 'reglement', 0, 0, 0, t.operation, NULL, p_tache,
                       'Réservation réglée : tâche terminée', 'reglement:' || p_tache);
    IF p_empreinte IS NOT NULL THEN
      INSERT INTO reponses_servies (organisation_id, empreinte, servi_le) VALUES (t.organisation_id, p_empreinte, now())
      ON CONFLICT (organisation_id, empreinte) DO UPDATE SET servi_le = EXCLUDED.servi_le;
    END IF;
    SELECT * INTO s FROM svc_solde(t.organisation_id, t.cle_id);
    RETURN QUERY SELECT -r.credits, s.restants;
    RETURN;
  END IF;
  PERFORM svc_ecrire(t.organisation_id, t.cle_id, 'restitution', -r.gratuits, -r.inclus, -r.factures, t.operation, NULL,
                     p_tache, CASE WHEN identique THEN 'Résultat identique à un résultat servi dans les 24 h'
                                   ELSE 'Crédits rendus : rien à débiter' END, 'restitution:' || p_tache);
  SELECT * INTO s FROM svc_solde(t.organisation_id, t.cle_id);
  RETURN QUERY SELECT 0, s.restants;
END $$;
