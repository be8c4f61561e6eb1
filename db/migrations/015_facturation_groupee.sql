-- Billing at the speed of reads, and limits that hold across api instances.

-- Debits of served answers, grouped: one statement (one transaction, one WAL flush) writes a whole batch, for any
-- number of organisations. Each organisation's row is locked once, in id order (two instances' batches never wait on
-- each other in a cycle), and its debits are checked in the order given, each against the balance the previous ones
-- left: never more spent than exists, never beyond a key's monthly cap. One row per item, `rang` its index (1-based):
--   debite                the movement is written (and the response's fingerprint noted)
--   identique             a response identical to this one was served within 24 h (`servi_le`): nothing debited
--   credits_insuffisants / plafond_cle / organisation_absente   nothing written
CREATE FUNCTION svc_debiter_lot(p_orgs uuid[], p_cles uuid[], p_credits integer[], p_operations text[],
                                p_requetes text[], p_empreintes text[])
RETURNS TABLE (rang integer, issue text, debites integer, restants bigint, servi_le timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
  org uuid;
  k integer;
  s record;
  m date := svc_mois();
  gratuits bigint;
  inclus bigint;
  facturables bigint;
  -- Keys met in this organisation's items: their monthly cap and what they used so far.
  vues uuid[];
  utilises bigint[];
  plafonds integer[];
  pos integer;
  plafond integer;
  utilise bigint;
  prix integer;
  reste integer;
  pris_inclus integer;
  pris_gratuits integer;
  deja timestamptz;
BEGIN
  FOR org IN SELECT DISTINCT o FROM unnest(p_orgs) AS o ORDER BY 1 LOOP
    PERFORM 1 FROM organisations WHERE id = org FOR NO KEY UPDATE;
    IF NOT FOUND THEN
      RETURN QUERY SELECT i::integer, 'organisation_absente'::text, 0, 0::bigint, NULL::timestamptz
                     FROM generate_subscripts(p_orgs, 1) AS i WHERE p_orgs[i] = org;
      CONTINUE;
    END IF;
    SELECT * INTO s FROM svc_solde(org, NULL);
    gratuits := s.gratuits;
    inclus := s.inclus;
    facturables := s.facturables;
    vues := '{}';
    utilises := '{}';
    plafonds := '{}';
    FOR k IN SELECT i FROM generate_subscripts(p_orgs, 1) AS i WHERE p_orgs[i] = org ORDER BY i LOOP
      rang := k;
      prix := p_credits[k];
      deja := NULL;
      IF p_empreintes[k] IS NOT NULL THEN
        SELECT r.servi_le INTO deja FROM reponses_servies r
         WHERE r.organisation_id = org AND r.empreinte = p_empreintes[k] AND r.servi_le > now() - interval '24 hours';
      END IF;
      IF deja IS NOT NULL THEN
        RETURN QUERY SELECT k, 'identique'::text, 0, gratuits + inclus + facturables, deja;
        CONTINUE;
      END IF;
      pos := NULL;
      IF p_cles[k] IS NOT NULL THEN
        pos := array_position(vues, p_cles[k]);
        IF pos IS NULL THEN
          SELECT c.plafond_mensuel INTO plafond FROM cles c WHERE c.id = p_cles[k];
          utilise := 0;
          IF plafond IS NOT NULL THEN
            SELECT coalesce(-sum(mv.credits), 0) INTO utilise FROM mouvements mv
             WHERE mv.cle_id = p_cles[k] AND mv.mois = m AND mv.genre IN ('debit', 'reservation', 'restitution');
          END IF;
          vues := array_append(vues, p_cles[k]);
          utilises := array_append(utilises, utilise);
          plafonds := array_append(plafonds, plafond);
          pos := array_length(vues, 1);
        END IF;
      END IF;
      IF prix > gratuits + inclus + facturables THEN
        RETURN QUERY SELECT k, 'credits_insuffisants'::text, 0, gratuits + inclus + facturables, NULL::timestamptz;
        CONTINUE;
      END IF;
      IF pos IS NOT NULL AND plafonds[pos] IS NOT NULL AND utilises[pos] + prix > plafonds[pos] THEN
        RETURN QUERY SELECT k, 'plafond_cle'::text, 0, gratuits + inclus + facturables, NULL::timestamptz;
        CONTINUE;
      END IF;
      -- Included credits expire with the month, so they are spent first; then free credits; then billed ones.
      pris_inclus := least(prix, inclus);
      reste := prix - pris_inclus;
      pris_gratuits := least(reste, gratuits);
      reste := reste - pris_gratuits;
      PERFORM svc_ecrire(org, p_cles[k], 'debit', -pris_gratuits, -pris_inclus, -reste, p_operations[k],
                         p_requetes[k], NULL, NULL, NULL);
      inclus := inclus - pris_inclus;
      gratuits := gratuits - pris_gratuits;
      facturables := facturables - reste;
      IF pos IS NOT NULL THEN
        utilises[pos] := utilises[pos] + prix;
      END IF;
      IF p_empreintes[k] IS NOT NULL THEN
        INSERT INTO reponses_servies (organisation_id, empreinte, servi_le) VALUES (org, p_empreintes[k], now())
        ON CONFLICT (organisation_id, empreinte) DO UPDATE SET servi_le = EXCLUDED.servi_le;
      END IF;
      RETURN QUERY SELECT k, 'debite'::text, prix, gratuits + inclus + facturables, now();
    END LOOP;
  END LOOP;
END $$;

-- Keys and organisations are kept in each instance's memory for at most 2 s; a change to them is also announced at
-- once (LISTEN svc_acces), so a revoked key, a suspended organisation or a changed scope is refused everywhere within
-- milliseconds while the announcement's connection is up, and within the 2 s in any case.
CREATE FUNCTION svc_annoncer_acces() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('svc_acces', TG_TABLE_NAME);
  RETURN NULL;
END $$;
CREATE TRIGGER cles_acces AFTER INSERT OR UPDATE OR DELETE ON cles
  FOR EACH STATEMENT EXECUTE FUNCTION svc_annoncer_acces();
CREATE TRIGGER organisations_acces AFTER UPDATE OR DELETE ON organisations
  FOR EACH STATEMENT EXECUTE FUNCTION svc_annoncer_acces();

-- The per-minute quota, shared by every instance: each takes a share of the current minute's calls (never more than
-- the quota in all) and spends it in memory. Unlogged: a count lost in a database crash only restarts a minute.
CREATE UNLOGGED TABLE quotas_minute (
  organisation_id uuid PRIMARY KEY REFERENCES organisations (id) ON DELETE CASCADE,
  minute bigint NOT NULL,
  pris integer NOT NULL
);

-- Grants up to p_voulu calls of minute p_minute (minutes since the epoch, from the instance's clock) within p_quota.
-- Returns the calls granted (0: the minute's quota is spent) and the minute's calls granted in all after it.
CREATE FUNCTION svc_prendre_quota(p_org uuid, p_minute bigint, p_quota integer, p_voulu integer)
RETURNS TABLE (accordes integer, pris integer)
LANGUAGE plpgsql AS $$
DECLARE
  q quotas_minute;
BEGIN
  INSERT INTO quotas_minute (organisation_id, minute, pris) VALUES (p_org, p_minute, 0)
  ON CONFLICT (organisation_id) DO NOTHING;
  SELECT * INTO q FROM quotas_minute WHERE organisation_id = p_org FOR UPDATE;
  IF q.minute > p_minute THEN
    -- An instance whose clock is behind: its minute is over elsewhere.
    RETURN QUERY SELECT 0, p_quota;
    RETURN;
  END IF;
  IF q.minute < p_minute THEN
    q.pris := 0;
  END IF;
  accordes := greatest(0, least(p_voulu, p_quota - q.pris));
  pris := q.pris + accordes;
  UPDATE quotas_minute SET minute = p_minute, pris = q.pris + accordes WHERE organisation_id = p_org;
  RETURN NEXT;
END $$;
