-- Starting a task in one round trip, and its end announced to every api instance.

-- Creates a task and reserves its price in one statement (its own transaction), so that a start costs one round trip
-- and one commit. With a client idempotency key, the same key and input give back the task already made ('existante')
-- and another input under that key is a 'conflit'; a refused reservation ('credits_insuffisants', 'plafond_cle')
-- writes nothing. `tache` is the task made or found, null otherwise.
CREATE FUNCTION svc_creer_tache(p_id text, p_operation text, p_org uuid, p_cle uuid, p_entree jsonb, p_webhook text,
                                p_credits integer, p_cle_client text, p_empreinte text, p_jours integer)
RETURNS TABLE (issue text, restants bigint, tache taches)
LANGUAGE plpgsql AS $$
DECLARE
  t taches;
  d record;
  reste bigint;
BEGIN
  IF p_cle_client IS NOT NULL THEN
    -- Serialises concurrent requests of the same key: the second sees the first's row.
    PERFORM pg_advisory_xact_lock(hashtext(p_org::text || ':' || p_cle_client));
    SELECT * INTO t FROM taches WHERE organisation_id = p_org AND cle_client = p_cle_client;
    IF t.id IS NOT NULL THEN
      IF t.empreinte_entree <> p_empreinte OR t.operation <> p_operation THEN
        RETURN QUERY SELECT 'conflit'::text, NULL::bigint, NULL::taches;
      ELSE
        RETURN QUERY SELECT 'existante'::text, NULL::bigint, t;
      END IF;
      RETURN;
    END IF;
  END IF;
  IF p_credits > 0 THEN
    SELECT * INTO d FROM svc_debiter(p_org, p_cle, 'reservation', p_credits, p_operation, NULL, p_id, NULL,
                                     'reservation:' || p_id);
    IF d.issue IN ('credits_insuffisants', 'plafond_cle') THEN
      RETURN QUERY SELECT d.issue, d.restants, NULL::taches;
      RETURN;
    END IF;
    reste := d.restants;
  END IF;
  INSERT INTO taches (id, operation, organisation_id, cle_id, entree, webhook, credits_reserves, cle_client,
                      empreinte_entree, expire_le)
  VALUES (p_id, p_operation, p_org, p_cle, p_entree, p_webhook, p_credits, p_cle_client, p_empreinte,
          now() + make_interval(days => p_jours))
  RETURNING * INTO t;
  RETURN QUERY SELECT 'creee'::text, reste, t;
END $$;

-- The end of a task (terminee or echouee), announced at commit on channel svc_taches_fin with the task id as payload:
-- every api instance listens on one connection and wakes its `attendre` waiters at once, whatever process ended
-- the task. A trigger, so that no way of ending a task can forget it.
CREATE FUNCTION svc_annoncer_fin_tache() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('svc_taches_fin', NEW.id);
  RETURN NULL;
END $$;

CREATE TRIGGER taches_fin AFTER UPDATE OF statut ON taches
FOR EACH ROW WHEN (NEW.statut IN ('terminee', 'echouee') AND OLD.statut IS DISTINCT FROM NEW.statut)
EXECUTE FUNCTION svc_annoncer_fin_tache();

-- Ends a task exactly once, in one statement: with its result ('terminee', its reservation settled by
-- svc_regler_tache, debited unless `p_debiter` is false or the same result was served within 24 h) or with its error
-- ('echouee', its reservation given back). One statement holds the organisation lock only for its own execution,
-- never across round trips, so a task's end does not hold up the starts of the organisation's other tasks.
CREATE FUNCTION svc_finir_tache(p_id text, p_statut text, p_resultat jsonb, p_erreur jsonb, p_debiter boolean,
                                p_empreinte text)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  actuel text;
  debites integer;
BEGIN
  SELECT statut INTO actuel FROM taches WHERE id = p_id FOR UPDATE;
  IF actuel IS NULL OR actuel IN ('terminee', 'echouee') THEN
    RETURN;
  END IF;
  SELECT r.debites INTO debites
    FROM svc_regler_tache(p_id, p_statut = 'terminee' AND p_debiter, CASE WHEN p_statut = 'terminee' THEN p_empreinte END) r;
  UPDATE taches
     SET statut = p_statut, resultat = p_resultat, erreur = p_erreur,
         credits_debites = CASE WHEN p_statut = 'terminee' THEN debites ELSE 0 END, termine_le = now()
   WHERE id = p_id;
END $$;
