-- Billing at the speed of reads, and limits that hold across api instances.

-- Debits carry no idempotency key: the unique index holds only the movements that have one.
ALTER TABLE mouvements DROP CONSTRAINT mouvements_cle_idempotence_key;
CREATE UNIQUE INDEX mouvements_cle_idempotence ON mouvements (cle_idempotence) WHERE cle_idempotence IS NOT NULL;

-- Debits of served answers, grouped: one statement (one transaction, one WAL flush) writes a whole batch, for any
-- number of organisations. The organisations' rows are locked first, in id order (two instances' batches never wait
-- on each other in a cycle), and each one's debits are checked in the order given, each against the balance the previous ones
-- left: never more spent than exists, never beyond a key's monthly cap. The rows are then written by two statements,
-- with the same columns svc_ecrire gives them (balances after each row). One result per item, `rang` its index:
--   debite                the movement is written (and the response's fingerprint noted)
--   identique             a response identical to this one was served within 24 h (`servi_le`), or earlier in the
--                         batch: nothing debited
--   credits_insuffisants / plafond_cle / organisation_absente   nothing written
-- Each statement a PL/pgSQL function runs costs an executor start: a batch of one organisation's key runs seven,
-- whatever its size (locks, the items' facts, the organisation's balances, the key's cap, two inserts, the result).
CREATE FUNCTION svc_debiter_lot(p_orgs uuid[], p_cles uuid[], p_credits integer[], p_operations text[],
                                p_requetes text[], p_empreintes text[])
RETURNS TABLE (rang integer, issue text, debites integer, restants bigint, servi_le timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
  nb integer := coalesce(array_length(p_orgs, 1), 0);
  m date := svc_mois();
  maintenant timestamptz := now();
  ordre integer[];
  issues text[] := array_fill(NULL::text, ARRAY[nb]);
  apres bigint[] := array_fill(0::bigint, ARRAY[nb]);
  servis timestamptz[];
  premiers integer[];
  d_gratuits integer[] := array_fill(0, ARRAY[nb]);
  d_inclus integer[] := array_fill(0, ARRAY[nb]);
  d_factures integer[] := array_fill(0, ARRAY[nb]);
  a_gratuits bigint[] := array_fill(0::bigint, ARRAY[nb]);
  a_inclus bigint[] := array_fill(0::bigint, ARRAY[nb]);
  a_factures bigint[] := array_fill(0::bigint, ARRAY[nb]);
  k integer;
  org uuid;
  existe boolean;
  acces text;
  plafond_eur numeric;
  inclus_du boolean;
  dernier mouvements;
  dernier_mois date;
  gratuits bigint;
  inclus bigint;
  facturables bigint;
  g bigint;
  i bigint;
  f bigint;
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
BEGIN
  IF nb = 0 THEN
    RETURN;
  END IF;
  -- Every organisation's lock first, in id order (rows are locked as the sorted scan returns them): what another
  -- batch wrote for them is then committed and seen, and two batches never wait on each other in a cycle.
  PERFORM 1 FROM organisations WHERE id = ANY (p_orgs) ORDER BY id FOR NO KEY UPDATE;
  -- Per item, under those locks: when its answer was served within 24 h (one primary-key probe each), the first
  -- item of the batch with the same organisation and fingerprint, and the order of the checks.
  SELECT array_agg(s ORDER BY x), array_agg(premier ORDER BY x), array_agg(x ORDER BY p_orgs[x], x)
    INTO servis, premiers, ordre
    FROM (SELECT x,
                 (SELECT r.servi_le FROM reponses_servies r
                   WHERE r.organisation_id = p_orgs[x] AND r.empreinte = p_empreintes[x]
                     AND r.servi_le > maintenant - interval '24 hours') AS s,
                 CASE WHEN p_empreintes[x] IS NULL THEN x
                      ELSE min(x) OVER (PARTITION BY p_orgs[x], p_empreintes[x]) END AS premier
            FROM generate_subscripts(p_orgs, 1) AS x) AS items;

  FOREACH k IN ARRAY ordre LOOP
    IF org IS DISTINCT FROM p_orgs[k] THEN
      org := p_orgs[k];
      -- The organisation, its last movement and whether the month's included grant is due, in one statement.
      SELECT true, o.acces, o.plafond_depense_eur,
             o.acces IN ('data', 'contrat') AND NOT EXISTS (
               SELECT 1 FROM mouvements WHERE cle_idempotence = 'inclus:' || o.id || ':' || to_char(m, 'YYYY-MM')),
             l.solde_gratuits, l.solde_inclus, l.factures_mois, l.mois
        INTO existe, acces, plafond_eur, inclus_du, g, i, f, dernier_mois
        FROM organisations o
        LEFT JOIN LATERAL (SELECT * FROM mouvements mv WHERE mv.organisation_id = o.id ORDER BY mv.id DESC LIMIT 1) l
          ON true
       WHERE o.id = org;
      existe := coalesce(existe, false);
      IF existe THEN
        IF inclus_du THEN
          -- Once a month: the included grant first, as svc_ecrire writes it.
          dernier := svc_ecrire(org, NULL, 'inclus_mensuel', 0, 100000, 0, NULL, NULL, NULL,
                                'Crédits inclus dans l''abonnement du mois',
                                'inclus:' || org || ':' || to_char(m, 'YYYY-MM'));
          g := dernier.solde_gratuits;
          i := dernier.solde_inclus;
          f := dernier.factures_mois;
          dernier_mois := dernier.mois;
        END IF;
        -- The balances as svc_solde derives them from the last movement.
        g := coalesce(g, 0);
        i := CASE WHEN dernier_mois = m THEN i ELSE 0 END;
        f := CASE WHEN dernier_mois = m THEN f ELSE 0 END;
        gratuits := greatest(g, 0);
        inclus := greatest(i, 0);
        facturables := greatest(0, floor(plafond_eur / svc_prix_credit(acces))::bigint - f);
        vues := '{}';
        utilises := '{}';
        plafonds := '{}';
      END IF;
    END IF;
    IF NOT existe THEN
      issues[k] := 'organisation_absente';
      CONTINUE;
    END IF;
    apres[k] := gratuits + inclus + facturables;
    IF servis[k] IS NOT NULL THEN
      issues[k] := 'identique';
      CONTINUE;
    END IF;
    IF premiers[k] <> k AND servis[premiers[k]] IS NOT NULL THEN
      issues[k] := 'identique';
      servis[k] := servis[premiers[k]];
      CONTINUE;
    END IF;
    prix := p_credits[k];
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
      issues[k] := 'credits_insuffisants';
      CONTINUE;
    END IF;
    IF pos IS NOT NULL AND plafonds[pos] IS NOT NULL AND utilises[pos] + prix > plafonds[pos] THEN
      issues[k] := 'plafond_cle';
      CONTINUE;
    END IF;
    -- Included credits expire with the month, so they are spent first; then free credits; then billed ones.
    pris_inclus := least(prix, inclus);
    reste := prix - pris_inclus;
    pris_gratuits := least(reste, gratuits);
    reste := reste - pris_gratuits;
    inclus := inclus - pris_inclus;
    gratuits := gratuits - pris_gratuits;
    facturables := facturables - reste;
    g := g - pris_gratuits;
    i := i - pris_inclus;
    f := f + reste;
    IF pos IS NOT NULL THEN
      utilises[pos] := utilises[pos] + prix;
    END IF;
    issues[k] := 'debite';
    apres[k] := gratuits + inclus + facturables;
    servis[k] := maintenant;
    -- A later identical answer of the batch is not debited again.
    servis[premiers[k]] := coalesce(servis[premiers[k]], maintenant);
    d_gratuits[k] := pris_gratuits;
    d_inclus[k] := pris_inclus;
    d_factures[k] := reste;
    a_gratuits[k] := g;
    a_inclus[k] := i;
    a_factures[k] := f;
  END LOOP;

  -- In the order of the checks: each organisation's last row carries its balances.
  INSERT INTO mouvements (organisation_id, cle_id, genre, credits, gratuits, inclus, factures, mois, solde_gratuits,
                          solde_inclus, factures_mois, operation, requete)
  SELECT p_orgs[x], p_cles[x], 'debit', -p_credits[x], -d_gratuits[x], -d_inclus[x], -d_factures[x], m,
         a_gratuits[x], a_inclus[x], a_factures[x], p_operations[x], p_requetes[x]
    FROM unnest(ordre) WITH ORDINALITY AS u(x, n)
   WHERE issues[x] = 'debite'
   ORDER BY n;
  INSERT INTO reponses_servies (organisation_id, empreinte, servi_le)
  SELECT DISTINCT p_orgs[x], p_empreintes[x], maintenant
    FROM generate_subscripts(p_orgs, 1) AS x
   WHERE issues[x] = 'debite' AND p_empreintes[x] IS NOT NULL
  ON CONFLICT (organisation_id, empreinte) DO UPDATE SET servi_le = EXCLUDED.servi_le;

  RETURN QUERY SELECT x, issues[x], CASE WHEN issues[x] = 'debite' THEN p_credits[x] ELSE 0 END, apres[x],
                      CASE WHEN issues[x] IN ('debite', 'identique') THEN servis[x] END
                 FROM generate_subscripts(p_orgs, 1) AS x;
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
