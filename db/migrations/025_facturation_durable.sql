-- Billing that stays fast as the ledger grows.

-- A key's credits of the month (debits and reservations, less what was given back), kept as one counter per key and
-- month by the two writers of the ledger (svc_ecrire, svc_debiter_lot) under the organisation's lock. The monthly cap
-- was checked by summing the month's movements of the key: with a million calls in a month, each batch of debits
-- then read a million rows (360 ms a batch, for every organisation, since an instance writes one batch at a time).
CREATE TABLE consommation_cles (
  cle_id uuid NOT NULL REFERENCES cles (id) ON DELETE CASCADE,
  mois date NOT NULL,
  credits bigint NOT NULL,
  PRIMARY KEY (cle_id, mois)
);
INSERT INTO consommation_cles (cle_id, mois, credits)
SELECT cle_id, mois, -sum(credits)
  FROM mouvements
 WHERE cle_id IS NOT NULL AND genre IN ('debit', 'reservation', 'restitution')
 GROUP BY cle_id, mois;
-- Nothing else read the movements by key: one index less to write per debit.
DROP INDEX mouvements_cle_mois;

-- Answers served within 24 h, by fingerprint: a memory of a day, not a ledger. Older rows are purged by the api
-- (domain/platform/debits.ts) along this index; without the purge the table grew by one row per debited answer for
-- ever. No foreign key: its check cost a lookup per debit, and a deleted organisation's rows go with the purge.
ALTER TABLE reponses_servies DROP CONSTRAINT reponses_servies_organisation_id_fkey;
CREATE INDEX reponses_servies_servi_le ON reponses_servies (servi_le);

-- The balances of svc_solde (001), the key's month read from its counter.
CREATE OR REPLACE FUNCTION svc_solde(p_org uuid, p_cle uuid)
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
      SELECT coalesce(sum(cc.credits), 0) INTO cle_utilise FROM consommation_cles cc WHERE cc.cle_id = p_cle AND cc.mois = m;
    END IF;
  END IF;
  RETURN NEXT;
END $$;

-- svc_ecrire (001), counting a key's debits, reservations and give-backs as it writes them.
CREATE OR REPLACE FUNCTION svc_ecrire(p_org uuid, p_cle uuid, p_genre text, p_gratuits integer, p_inclus integer,
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
  IF p_cle IS NOT NULL AND p_genre IN ('debit', 'reservation', 'restitution') THEN
    INSERT INTO consommation_cles (cle_id, mois, credits) VALUES (p_cle, m, -ligne.credits)
    ON CONFLICT (cle_id, mois) DO UPDATE SET credits = consommation_cles.credits + EXCLUDED.credits;
  END IF;
  RETURN ligne;
END $$;

-- svc_debiter_lot (016), checking a key's cap against its counter and adding the batch's debits to it, one row per
-- key and batch.
CREATE OR REPLACE FUNCTION svc_debiter_lot(p_orgs uuid[], p_cles uuid[], p_credits integer[], p_operations text[],
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
        utilise := NULL;
        IF plafond IS NOT NULL THEN
          SELECT cc.credits INTO utilise FROM consommation_cles cc WHERE cc.cle_id = p_cles[k] AND cc.mois = m;
        END IF;
        utilise := coalesce(utilise, 0);
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
  INSERT INTO consommation_cles (cle_id, mois, credits)
  SELECT p_cles[x], m, sum(p_credits[x])
    FROM generate_subscripts(p_orgs, 1) AS x
   WHERE issues[x] = 'debite' AND p_cles[x] IS NOT NULL
   GROUP BY p_cles[x]
  ON CONFLICT (cle_id, mois) DO UPDATE SET credits = consommation_cles.credits + EXCLUDED.credits;
  INSERT INTO reponses_servies (organisation_id, empreinte, servi_le)
  SELECT DISTINCT p_orgs[x], p_empreintes[x], maintenant
    FROM generate_subscripts(p_orgs, 1) AS x
   WHERE issues[x] = 'debite' AND p_empreintes[x] IS NOT NULL
  ON CONFLICT (organisation_id, empreinte) DO UPDATE SET servi_le = EXCLUDED.servi_le;

  RETURN QUERY SELECT x, issues[x], CASE WHEN issues[x] = 'debite' THEN p_credits[x] ELSE 0 END, apres[x],
                      CASE WHEN issues[x] IN ('debite', 'identique') THEN servis[x] END
                 FROM generate_subscripts(p_orgs, 1) AS x;
END $$;
