-- Platform: organisations, personal accounts, keys, the credits ledger and the responses already served.

CREATE TABLE parametres (
  nom text PRIMARY KEY,
  valeur text NOT NULL
);
-- Secret of the opaque cursors, made once per database so that every instance shares it (gen_random_uuid is a CSPRNG).
INSERT INTO parametres (nom, valeur)
VALUES ('secret_curseurs', replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''));

CREATE TABLE organisations (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  nom text NOT NULL,
  acces text NOT NULL CHECK (acces IN ('usage', 'data', 'contrat')),
  statut text NOT NULL DEFAULT 'active' CHECK (statut IN ('active', 'suspendue')),
  portees text[] NOT NULL,
  quota_minute integer NOT NULL CHECK (quota_minute > 0),
  plafond_depense_eur numeric(12, 2) NOT NULL DEFAULT 0 CHECK (plafond_depense_eur >= 0),
  max_webhooks integer NOT NULL DEFAULT 10 CHECK (max_webhooks >= 0),
  cree_le timestamptz NOT NULL DEFAULT now(),
  maj_le timestamptz NOT NULL DEFAULT now()
);

-- A personal account: the user behind personal keys (memory, investor profile, validated addresses).
CREATE TABLE comptes (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organisation_id uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
  cree_le timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE cles (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organisation_id uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
  compte_id uuid REFERENCES comptes (id) ON DELETE SET NULL,
  mode text NOT NULL CHECK (mode IN ('live', 'test')),
  prefixe text NOT NULL,
  empreinte bytea NOT NULL UNIQUE,
  portees text[],
  plafond_mensuel integer CHECK (plafond_mensuel >= 0),
  expire_le timestamptz,
  revoquee_le timestamptz,
  cree_le timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX cles_organisation ON cles (organisation_id);

-- The ledger. Each pool is a column: `gratuits` (free credits, no expiry), `inclus` (credits included in a
-- subscription, per month), `factures` (credits billed under the monthly spend cap, counted negative when spent).
-- A grant adds to a pool, a debit or reservation takes from pools, a give-back returns what its reservation took.
-- Every row also carries the balances after it (like a bank statement), so a balance is the last row, not a sum,
-- and the statement explains itself line by line. Rows are written only by svc_ecrire, under the organisation lock.
CREATE TABLE mouvements (
  id bigserial PRIMARY KEY,
  organisation_id uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
  cle_id uuid REFERENCES cles (id) ON DELETE SET NULL,
  genre text NOT NULL CHECK (genre IN ('ouverture', 'octroi', 'inclus_mensuel', 'debit', 'reservation', 'reglement', 'restitution')),
  credits integer NOT NULL,
  gratuits integer NOT NULL DEFAULT 0,
  inclus integer NOT NULL DEFAULT 0,
  factures integer NOT NULL DEFAULT 0,
  mois date NOT NULL,
  solde_gratuits bigint NOT NULL,
  solde_inclus bigint NOT NULL,
  factures_mois bigint NOT NULL,
  operation text,
  requete text,
  tache text,
  motif text,
  cle_idempotence text UNIQUE,
  cree_le timestamptz NOT NULL DEFAULT clock_timestamp(),
  CHECK (credits = gratuits + inclus + factures)
);
CREATE INDEX mouvements_organisation ON mouvements (organisation_id, id DESC);
CREATE INDEX mouvements_cle_mois ON mouvements (cle_id, mois) WHERE cle_id IS NOT NULL;

-- Fingerprints of the responses served to an organisation: an identical response within 24 h is not debited.
CREATE TABLE reponses_servies (
  organisation_id uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
  empreinte text NOT NULL,
  servi_le timestamptz NOT NULL,
  PRIMARY KEY (organisation_id, empreinte)
);

-- The billing month follows Paris time: a call at 00:30 on the 1st in Paris belongs to the new month.
CREATE FUNCTION svc_mois() RETURNS date
LANGUAGE sql STABLE AS $$ SELECT date_trunc('month', now() AT TIME ZONE 'Europe/Paris')::date $$;

CREATE FUNCTION svc_prix_credit(p_acces text) RETURNS numeric
LANGUAGE sql IMMUTABLE AS $$ SELECT CASE WHEN p_acces = 'usage' THEN 0.005 ELSE 0.002 END $$;

-- Balances after the last movement: included credits and billed credits start again each month (the month's
-- included grant is written with the first movement of the month; until then it is counted as due).
CREATE FUNCTION svc_solde(p_org uuid, p_cle uuid)
RETURNS TABLE (gratuits bigint, inclus bigint, facturables bigint, restants bigint, cle_utilise bigint, cle_plafond integer)
LANGUAGE plpgsql STABLE AS $$
DECLARE
  o organisations;
  last mouvements;
  m date := svc_mois();
  factures_mois bigint := 0;
BEGIN
  SELECT * INTO o FROM organisations WHERE id = p_org;
  SELECT * INTO last FROM mouvements WHERE organisation_id = p_org ORDER BY id DESC LIMIT 1;
  gratuits := greatest(coalesce(last.solde_gratuits, 0), 0);
  IF last.mois = m THEN
    inclus := last.solde_inclus;
    factures_mois := last.factures_mois;
  END IF;
  IF (last.mois IS DISTINCT FROM m OR NOT EXISTS (
        SELECT 1 FROM mouvements WHERE cle_idempotence = 'inclus:' || p_org || ':' || to_char(m, 'YYYY-MM')))
     AND o.acces IN ('data', 'contrat') THEN
    inclus := coalesce(inclus, 0) + 100000;
  END IF;
  inclus := greatest(coalesce(inclus, 0), 0);
  facturables := greatest(0, floor(o.plafond_depense_eur / svc_prix_credit(o.acces))::bigint - factures_mois);
  restants := gratuits + inclus + facturables;
  cle_plafond := NULL;
  cle_utilise := 0;
  IF p_cle IS NOT NULL THEN
    SELECT c.plafond_mensuel INTO cle_plafond FROM cles c WHERE c.id = p_cle;
    IF cle_plafond IS NOT NULL THEN
      SELECT coalesce(-sum(mv.credits), 0) INTO cle_utilise
        FROM mouvements mv WHERE mv.cle_id = p_cle AND mv.mois = m AND mv.genre IN ('debit', 'reservation', 'restitution');
    END IF;
  END IF;
  RETURN NEXT;
END $$;

-- The one writer of the ledger: appends a movement with the balances after it. The caller holds the organisation
-- row lock. The month's included grant is written first when it is due.
CREATE FUNCTION svc_ecrire(p_org uuid, p_cle uuid, p_genre text, p_gratuits integer, p_inclus integer,
                           p_factures integer, p_operation text, p_requete text, p_tache text, p_motif text,
                           p_idempotence text)
RETURNS mouvements
LANGUAGE plpgsql AS $$
DECLARE
  o organisations;
  last mouvements;
  m date := svc_mois();
  g bigint;
  i bigint;
  f bigint;
  cle_inclus text := 'inclus:' || p_org || ':' || to_char(m, 'YYYY-MM');
  ligne mouvements;
BEGIN
  SELECT * INTO o FROM organisations WHERE id = p_org;
  SELECT * INTO last FROM mouvements WHERE organisation_id = p_org ORDER BY id DESC LIMIT 1;
  g := coalesce(last.solde_gratuits, 0);
  i := CASE WHEN last.mois = m THEN last.solde_inclus ELSE 0 END;
  f := CASE WHEN last.mois = m THEN last.factures_mois ELSE 0 END;
  IF o.acces IN ('data', 'contrat') AND p_genre <> 'inclus_mensuel'
     AND NOT EXISTS (SELECT 1 FROM mouvements WHERE cle_idempotence = cle_inclus) THEN
    i := i + 100000;
    INSERT INTO mouvements (organisation_id, genre, credits, inclus, mois, solde_gratuits, solde_inclus, factures_mois,
                            motif, cle_idempotence)
    VALUES (p_org, 'inclus_mensuel', 100000, 100000, m, g, i, f, 'Crédits inclus dans l''abonnement du mois', cle_inclus);
  END IF;
  INSERT INTO mouvements (organisation_id, cle_id, genre, credits, gratuits, inclus, factures, mois, solde_gratuits,
                          solde_inclus, factures_mois, operation, requete, tache, motif, cle_idempotence)
  VALUES (p_org, p_cle, p_genre, p_gratuits + p_inclus + p_factures, p_gratuits, p_inclus, p_factures, m,
          g + p_gratuits, i + p_inclus, f - p_factures, p_operation, p_requete, p_tache, p_motif, p_idempotence)
  RETURNING * INTO ligne;
  RETURN ligne;
END $$;

-- Debits (or reserves) credits atomically with the checks that allow it: the organisation row is locked, so
-- concurrent calls are serialised and can never spend more than exists. Outcomes:
--   debite               the movement is written
--   identique            a response identical to this one was served within 24 h: nothing debited
--   deja                 this idempotency key was already written (a retried call): nothing more debited
--   credits_insuffisants / plafond_cle   nothing written
CREATE FUNCTION svc_debiter(p_org uuid, p_cle uuid, p_genre text, p_credits integer, p_operation text,
                            p_requete text, p_tache text, p_empreinte text, p_idempotence text)
RETURNS TABLE (issue text, debites integer, restants bigint)
LANGUAGE plpgsql AS $$
DECLARE
  s record;
  reste integer := p_credits;
  pris_inclus integer;
  pris_gratuits integer;
BEGIN
  -- Identical responses are the common case of a client re-reading: answered before taking any lock.
  IF p_empreinte IS NOT NULL AND EXISTS (
    SELECT 1 FROM reponses_servies r
     WHERE r.organisation_id = p_org AND r.empreinte = p_empreinte AND r.servi_le > now() - interval '24 hours') THEN
    SELECT * INTO s FROM svc_solde(p_org, p_cle);
    RETURN QUERY SELECT 'identique'::text, 0, s.restants;
    RETURN;
  END IF;
  PERFORM 1 FROM organisations WHERE id = p_org FOR UPDATE;
  IF p_idempotence IS NOT NULL AND EXISTS (SELECT 1 FROM mouvements WHERE cle_idempotence = p_idempotence) THEN
    SELECT * INTO s FROM svc_solde(p_org, p_cle);
    RETURN QUERY SELECT 'deja'::text, 0, s.restants;
    RETURN;
  END IF;
  IF p_empreinte IS NOT NULL AND EXISTS (
    SELECT 1 FROM reponses_servies r
     WHERE r.organisation_id = p_org AND r.empreinte = p_empreinte AND r.servi_le > now() - interval '24 hours') THEN
    SELECT * INTO s FROM svc_solde(p_org, p_cle);
    RETURN QUERY SELECT 'identique'::text, 0, s.restants;
    RETURN;
  END IF;
  SELECT * INTO s FROM svc_solde(p_org, p_cle);
  IF p_credits > s.restants THEN
    RETURN QUERY SELECT 'credits_insuffisants'::text, 0, s.restants;
    RETURN;
  END IF;
  IF s.cle_plafond IS NOT NULL AND s.cle_utilise + p_credits > s.cle_plafond THEN
    RETURN QUERY SELECT 'plafond_cle'::text, 0, s.restants;
    RETURN;
  END IF;
  -- Included credits expire with the month, so they are spent first; then free credits; then billed ones.
  pris_inclus := least(reste, s.inclus);
  reste := reste - pris_inclus;
  pris_gratuits := least(reste, s.gratuits);
  reste := reste - pris_gratuits;
  PERFORM svc_ecrire(p_org, p_cle, p_genre, -pris_gratuits, -pris_inclus, -reste, p_operation, p_requete, p_tache,
                     NULL, p_idempotence);
  IF p_empreinte IS NOT NULL THEN
    INSERT INTO reponses_servies (organisation_id, empreinte, servi_le) VALUES (p_org, p_empreinte, now())
    ON CONFLICT (organisation_id, empreinte) DO UPDATE SET servi_le = EXCLUDED.servi_le;
  END IF;
  RETURN QUERY SELECT 'debite'::text, p_credits, s.restants - p_credits;
END $$;
