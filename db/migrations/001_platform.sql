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
  operation text,
  requete text,
  tache text,
  motif text,
  cle_idempotence text UNIQUE,
  cree_le timestamptz NOT NULL DEFAULT clock_timestamp(),
  CHECK (credits = gratuits + inclus + factures)
);
CREATE INDEX mouvements_organisation_mois ON mouvements (organisation_id, mois);
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

-- Credits included in a subscription are granted as a ledger row, once per month, the first time they are looked at.
CREATE FUNCTION svc_assurer_inclus(p_org uuid, p_acces text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF p_acces IN ('data', 'contrat') THEN
    INSERT INTO mouvements (organisation_id, genre, credits, inclus, mois, motif, cle_idempotence)
    VALUES (p_org, 'inclus_mensuel', 100000, 100000, svc_mois(), 'Crédits inclus dans l''abonnement Data',
            'inclus:' || p_org || ':' || to_char(svc_mois(), 'YYYY-MM'))
    ON CONFLICT (cle_idempotence) DO NOTHING;
  END IF;
END $$;

-- Balances derived from the ledger. `facturables` are what the spend cap still allows this month
-- (0.005 EUR per credit on pay-per-use, 0.002 EUR beyond the included credits of a subscription).
CREATE FUNCTION svc_solde(p_org uuid, p_cle uuid)
RETURNS TABLE (gratuits bigint, inclus bigint, facturables bigint, restants bigint, cle_utilise bigint, cle_plafond integer)
LANGUAGE plpgsql AS $$
DECLARE
  o organisations;
  m date := svc_mois();
  factures_mois bigint;
BEGIN
  SELECT * INTO o FROM organisations WHERE id = p_org;
  PERFORM svc_assurer_inclus(p_org, o.acces);
  SELECT coalesce(sum(mv.gratuits), 0),
         coalesce(sum(mv.inclus) FILTER (WHERE mv.mois = m), 0),
         coalesce(-sum(mv.factures) FILTER (WHERE mv.mois = m), 0)
    INTO gratuits, inclus, factures_mois
    FROM mouvements mv WHERE mv.organisation_id = p_org;
  facturables := greatest(0, floor(o.plafond_depense_eur / (CASE WHEN o.acces = 'usage' THEN 0.005 ELSE 0.002 END))::bigint - factures_mois);
  gratuits := greatest(gratuits, 0);
  inclus := greatest(inclus, 0);
  restants := gratuits + inclus + facturables;
  SELECT c.plafond_mensuel INTO cle_plafond FROM cles c WHERE c.id = p_cle;
  SELECT coalesce(-sum(mv.credits), 0) INTO cle_utilise
    FROM mouvements mv WHERE mv.cle_id = p_cle AND mv.mois = m AND mv.genre IN ('debit', 'reservation', 'restitution');
  RETURN NEXT;
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
  o organisations;
  s record;
  reste integer := p_credits;
  pris_inclus integer;
  pris_gratuits integer;
  pris_factures integer;
BEGIN
  SELECT * INTO o FROM organisations WHERE id = p_org FOR UPDATE;
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
  pris_factures := reste;
  INSERT INTO mouvements (organisation_id, cle_id, genre, credits, gratuits, inclus, factures, mois, operation,
                          requete, tache, cle_idempotence)
  VALUES (p_org, p_cle, p_genre, -p_credits, -pris_gratuits, -pris_inclus, -pris_factures, svc_mois(), p_operation,
          p_requete, p_tache, p_idempotence);
  IF p_empreinte IS NOT NULL THEN
    INSERT INTO reponses_servies (organisation_id, empreinte, servi_le) VALUES (p_org, p_empreinte, now())
    ON CONFLICT (organisation_id, empreinte) DO UPDATE SET servi_le = EXCLUDED.servi_le;
  END IF;
  RETURN QUERY SELECT 'debite'::text, p_credits, s.restants - p_credits;
END $$;
