-- For-sale listings read from portal snapshots (domain/annonces/import.ts), for the live data and for the frozen
-- sandbox, and the append-only journal of their events (DESIGN.md section 15). Written only by the importer; read by
-- `annonce` and `flux_annonces` (domain/annonces/operations.ts), and by whatever follows the journal by its id
-- (webhook fan-out, watches: `lireEvenements` in domain/annonces/journal.ts).
--
-- Privacy (rule 11 of the specification): a seller that is not a professional is never named and no contact of theirs
-- is kept. Their identity is not even stored (`annonceur` and the raw snapshot `brut` are null, a CHECK says so), and
-- their title and description are stored with contacts already masked.

CREATE TABLE annonces (
  dataset text COLLATE "C" NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  -- The service identifier: drawn at random at first sight, so that it tells nothing of the portal's identifier
  -- (served only with the scope lien_origine).
  id text COLLATE "C" NOT NULL,
  portail text COLLATE "C" NOT NULL CHECK (portail IN ('portal_a', 'portal_b', 'portal_c')),
  -- The portal's own identifier, without the portal code (`id_portail` is served as `<portail>:<identifiant>`).
  identifiant text COLLATE "C" NOT NULL,
  lien text,
  -- The link folded for look-ups: scheme, `www.`, query, fragment and trailing slash dropped, host in lower case.
  lien_cle text COLLATE "C",
  statut text NOT NULL CHECK (statut IN ('actif', 'retire', 'masque')),
  type text NOT NULL CHECK (type IN ('appartement', 'maison', 'immeuble')),
  neuf_ancien text CHECK (neuf_ancien IN ('neuf', 'ancien')),
  commune text,
  code_postal text COLLATE "C",
  insee text COLLATE "C",
  departement text COLLATE "C",
  region text,
  lat double precision,
  lon double precision,
  precision_position text NOT NULL CHECK (precision_position IN ('adresse', 'approchee', 'centre_commune', 'inconnue')),
  -- The BAN number the listing stands at: the address a user validated (valider_adresse), else the number at its
  -- position when the portal gives it to the address.
  cle_ban text COLLATE "C",
  prix double precision,
  prix_m2_portail double precision,
  surface double precision,
  pieces integer,
  chambres integer,
  etage integer,
  nb_etages integer,
  salles_de_bain integer,
  salles_d_eau integer,
  terrain_portail_m2 double precision,
  jardin_privatif_m2 double precision,
  annee_construction integer,
  -- {etiquette, conso_kwh_m2_an, ges, ges_kg_m2_an, ges_statut}
  dpe jsonb NOT NULL DEFAULT '{}',
  equipements jsonb NOT NULL DEFAULT '{}',
  details_portail jsonb NOT NULL DEFAULT '{}',
  type_vendeur text NOT NULL CHECK (type_vendeur IN ('pro', 'particulier', 'inconnu')),
  -- A professional seller: {nom, enseigne, siren, siren_origine, mandat, telephone, email}. Null for anyone else.
  annonceur jsonb,
  -- Who sells, for counting the agencies of one property: SIREN, else folded name; `particulier` for a private seller.
  vendeur_cle text,
  titre text,
  description text,
  photos text[] NOT NULL DEFAULT '{}',
  premiere_parution date,
  premiere_parution_estimee boolean NOT NULL,
  -- Snapshot times: the first seen, the last applied, when the current price was first seen, when it was withdrawn.
  entree_le timestamptz NOT NULL,
  vu_le timestamptz NOT NULL,
  prix_le timestamptz,
  retire_le timestamptz,
  -- The snapshot time of the last change of a served field.
  maj_le timestamptz NOT NULL,
  releves integer NOT NULL DEFAULT 1,
  -- The `nouvelle` event was written (a listing first seen withdrawn or under control has none until it is online).
  nouvelle_ecrite boolean NOT NULL DEFAULT false,
  -- A professional seller's last snapshot as the portal sent it (inclure=brut).
  brut jsonb,
  -- The deduplicated property (domain/annonces/biens.ts) and whether this listing is the one the feed serves for it.
  bien_uid text COLLATE "C" NOT NULL,
  principale boolean NOT NULL DEFAULT true,
  -- The analysis (domain/annonces/analyse.ts), the fingerprint of its inputs, and when it was computed.
  resultat_analyse jsonb,
  analyse_empreinte text,
  analyse_le timestamptz,
  PRIMARY KEY (dataset, id),
  UNIQUE (dataset, portail, identifiant),
  CHECK (type_vendeur = 'pro' OR (annonceur IS NULL AND brut IS NULL))
);
CREATE INDEX annonces_lien ON annonces (dataset, lien_cle) WHERE lien_cle IS NOT NULL;
CREATE INDEX annonces_bien ON annonces (dataset, bien_uid);
-- Candidates of the deduplication: one commune, one type.
CREATE INDEX annonces_commune_type ON annonces (dataset, insee, type, surface);

-- ---------------------------------------------------------------------------------------------------------------------
-- The journal of listing events: append-only, in write order.
-- ---------------------------------------------------------------------------------------------------------------------

-- Ids are taken by writers holding the journal's transaction-level advisory lock (domain/annonces/journal.ts): a
-- transaction that takes ids commits before the next one can take any, so the ids a reader sees committed are always
-- all the ids below the highest it sees, and a reader past id N never misses a smaller id committed later.
CREATE SEQUENCE annonces_evenements_id;

CREATE TABLE annonces_evenements (
  id bigint PRIMARY KEY,
  dataset text COLLATE "C" NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  genre text COLLATE "C" NOT NULL CHECK (genre IN ('nouvelle', 'analyse', 'reanalyse', 'baisse_prix', 'hausse_prix',
    'retrait', 'reactivation', 'multi_agences')),
  -- When it happened: the time of the snapshot that revealed it (the time of the analysis for analyse, reanalyse).
  le timestamptz NOT NULL,
  annonce_id text COLLATE "C" NOT NULL,
  -- Where, as the listing said it then: the feed's filters read these.
  insee text COLLATE "C",
  code_postal text COLLATE "C",
  departement text COLLATE "C",
  avant jsonb,
  apres jsonb,
  ecrit_le timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX annonces_evenements_lecture ON annonces_evenements (dataset, id);
CREATE INDEX annonces_evenements_annonce ON annonces_evenements (dataset, annonce_id, genre, id);
CREATE INDEX annonces_evenements_insee ON annonces_evenements (dataset, insee, id);
CREATE INDEX annonces_evenements_cp ON annonces_evenements (dataset, code_postal, id);
CREATE INDEX annonces_evenements_departement ON annonces_evenements (dataset, departement, id);

-- Nothing rewrites an event. (Rows are deleted only with the dataset's demonstration data, domain/sandbox/load.ts.)
CREATE FUNCTION annonces_evenements_immuables() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'annonces_evenements est en ajout seul : un événement n’est jamais réécrit';
END $$;
CREATE TRIGGER annonces_evenements_immuables BEFORE UPDATE ON annonces_evenements
  FOR EACH ROW EXECUTE FUNCTION annonces_evenements_immuables();
