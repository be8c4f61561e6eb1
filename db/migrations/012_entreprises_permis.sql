-- Building permits (Sitadel), companies (SIRENE legal units and establishments), legal notices (BODACC) and IRIS
-- outlines, for the live data and for the frozen sandbox. Written only by their importers (domain/urbanisme/
-- import-permis.ts, domain/entreprises/import-sirene.ts and import-bodacc.ts, domain/territoire/import-iris.ts); read
-- by permis_adresse (domain/urbanisme/permis.ts) and societes_civiles (domain/entreprises/societes-civiles.ts).
--
-- Privacy (rule 11 of the specification): natural persons in permits, company records and legal notices are never
-- named, so their names are never stored. A permit filed by a natural person keeps no applicant field; a sole trader
-- (legal category 1xxx) keeps no name, first name, pseudonym, sign or usual name; a notice about a natural person keeps
-- neither the trader's name nor the people listed, and no notice keeps a free text that may name someone (managers,
-- partners, administration): its summary is rebuilt from the coded fields only.

-- ---------------------------------------------------------------------------------------------------------------------
-- Permits: the four files of "Liste des permis de construire et autres autorisations d'urbanisme" (SDES, Sitadel).
-- ---------------------------------------------------------------------------------------------------------------------

CREATE TABLE permis (
  dataset text NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  -- NUM_DAU (NUM_PA, NUM_PD): commune of filing, year of filing, order number. Not unique alone: a PC and a DP may
  -- share it, hence the type in the key.
  numero text NOT NULL,
  type text NOT NULL CHECK (type IN ('PC', 'DP', 'PA', 'PD')),
  -- The file the row comes from: a mixed project (housing and non-residential premises) is in both files, one row
  -- each, as published.
  source text NOT NULL CHECK (source IN ('logements', 'locaux', 'demolir', 'amenager')),
  insee text NOT NULL,
  departement text,
  -- ETAT_DAU as published (2, 4, 5, 6) and its meaning.
  etat_code text,
  etat text CHECK (etat IN ('autorisee', 'annulee', 'commencee', 'achevee')),
  -- Year of filing (AN_DEPOT, else read from the number) and the filing date when the file gives one (DR_DEPOT).
  an_depot smallint,
  depot_le date,
  autorise_le date,
  ouvert_le date,
  acheve_le date,
  nature_declaree text,
  nature_completee text,
  destination text,
  -- Housing counts: null outside the housing file.
  logements_total integer,
  logements_individuels integer,
  logements_collectifs integer,
  logements_1p integer,
  logements_2p integer,
  logements_3p integer,
  logements_4p integer,
  logements_5p integer,
  logements_6p_plus integer,
  logements_sociaux integer,
  logements_accession_sociale integer,
  logements_ptz integer,
  logements_demolis integer,
  surface_habitation_creee double precision,
  surface_habitation_demolie double precision,
  surface_locaux_crees double precision,
  surface_locaux_demolis double precision,
  -- m²; SUPERFICIE_TERRAIN = 0 means "not given" in Sitadel: stored as null.
  superficie_terrain double precision,
  -- The applicant when it is a legal entity; all null for a natural person (whose name is never stored).
  demandeur_personne_physique boolean NOT NULL,
  demandeur_denomination text,
  demandeur_siren text,
  demandeur_siret text,
  demandeur_categorie_juridique text,
  demandeur_ape text,
  -- The land, as declared: number, street (type and name), lieu-dit, postal code, locality.
  terrain_numero text,
  terrain_voie text,
  terrain_lieu_dit text,
  terrain_code_postal text,
  terrain_localite text,
  -- Cadastral parcels (14 characters: commune, prefix 000, section on 2, number on 4), up to three in Sitadel.
  parcelles text[] NOT NULL DEFAULT '{}',
  -- Every other published column, by its name in the file, personal columns removed.
  champs jsonb NOT NULL,
  -- The BAN number of the land's address (same commune, number and street), when the address base has it.
  cle_ban text,
  maj_le timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (dataset, type, numero, source),
  CHECK (NOT demandeur_personne_physique OR (demandeur_denomination IS NULL AND demandeur_siren IS NULL
    AND demandeur_siret IS NULL AND demandeur_categorie_juridique IS NULL AND demandeur_ape IS NULL))
);
CREATE INDEX permis_cle_ban ON permis (dataset, cle_ban) WHERE cle_ban IS NOT NULL;
CREATE INDEX permis_parcelles ON permis USING gin (parcelles);
CREATE INDEX permis_insee_autorisation ON permis (dataset, insee, autorise_le DESC);
CREATE INDEX permis_demandeur_siren ON permis (dataset, demandeur_siren) WHERE demandeur_siren IS NOT NULL;

-- ---------------------------------------------------------------------------------------------------------------------
-- SIRENE: the stock files of legal units (StockUniteLegale) and establishments (StockEtablissement), Insee, v3.
-- ---------------------------------------------------------------------------------------------------------------------

CREATE TABLE unites_legales (
  dataset text NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  siren text NOT NULL CHECK (siren ~ '^[0-9]{9}$'),
  -- denominationUniteLegale (else the first usual name); null for a natural person.
  denomination text,
  sigle text,
  categorie_juridique text,
  -- Legal category 1xxx: a sole trader, a natural person (never named).
  personne_physique boolean NOT NULL,
  -- Legal category 65xx: a civil company (6540 SCI and its neighbours).
  societe_civile boolean NOT NULL,
  ape text,
  nomenclature_ape text,
  -- A active, C ceased.
  etat text CHECK (etat IN ('A', 'C')),
  cree_le date,
  -- For a ceased unit, the start of its current period (dateDebut), which is when it ceased.
  cesse_le date,
  -- statutDiffusionUniteLegale P: the unit asked for partial diffusion.
  diffusion_partielle boolean NOT NULL DEFAULT false,
  purgee boolean NOT NULL DEFAULT false,
  tranche_effectif text,
  categorie_entreprise text,
  nic_siege text,
  dernier_traitement timestamp,
  maj_le timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (dataset, siren),
  CHECK (NOT personne_physique OR (denomination IS NULL AND sigle IS NULL))
);
-- Matching a notice without SIREN by name (folded) among civil companies.
CREATE INDEX unites_legales_denomination ON unites_legales (dataset, svc_plier(denomination))
  WHERE denomination IS NOT NULL;

CREATE TABLE etablissements (
  dataset text NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  siret text NOT NULL CHECK (siret ~ '^[0-9]{14}$'),
  siren text NOT NULL,
  nic text NOT NULL,
  siege boolean,
  -- A active, F closed.
  etat text CHECK (etat IN ('A', 'F')),
  cree_le date,
  -- For a closed establishment, the start of its current period (dateDebut).
  ferme_le date,
  -- Sign and usual name: kept only for an establishment of a unit known not to be a natural person (a sole trader's
  -- sign is often their name).
  enseigne text,
  ape text,
  diffusion_partielle boolean NOT NULL DEFAULT false,
  numero text,
  indice_repetition text,
  type_voie text,
  voie text,
  -- No address complement: it often reads « chez M. X », naming a manager or the person domiciled.
  code_postal text,
  insee text,
  commune text,
  lat double precision,
  lon double precision,
  cle_ban text,
  dernier_traitement timestamp,
  maj_le timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (dataset, siret)
);
CREATE INDEX etablissements_siren ON etablissements (dataset, siren);
CREATE INDEX etablissements_cle_ban ON etablissements (dataset, cle_ban) WHERE cle_ban IS NOT NULL;
CREATE INDEX etablissements_code_postal ON etablissements (dataset, code_postal);

-- ---------------------------------------------------------------------------------------------------------------------
-- BODACC: the DILA export "annonces-commerciales" (one notice a row, JSON inside some columns).
-- ---------------------------------------------------------------------------------------------------------------------

CREATE TABLE avis_bodacc (
  dataset text NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  -- Publication letter, issue and notice number: A202301234567.
  id text NOT NULL,
  publication text,
  parution text,
  numero_annonce integer,
  date_parution date NOT NULL,
  -- annonce (initial notice), rectificatif, annulation.
  type_avis text,
  -- As published (creation, immatriculation, modification, radiation, collective, vente, dpc, ...) and its label.
  famille text,
  famille_libelle text,
  -- Ours: creation, modification, transfert, radiation, procedure, depot_comptes, vente, autre.
  categorie text NOT NULL,
  -- The date the notice speaks of (judgment, registration, removal, closing of accounts), when it gives one.
  date_effet date,
  tribunal text,
  ville text,
  cp text,
  departement text,
  -- The legal entity the notice is about; null for a natural person.
  denomination text,
  forme_juridique text,
  sirens text[] NOT NULL DEFAULT '{}',
  porte_sur_personne_physique boolean NOT NULL,
  societe_civile boolean NOT NULL,
  -- Registered office of the legal entity (never the address of a natural person).
  siege_numero text,
  siege_voie text,
  siege_code_postal text,
  siege_ville text,
  cle_ban text,
  -- Built from coded fields only: no manager, partner or natural person can appear in it.
  resume text NOT NULL,
  -- The notice a rectification or cancellation refers to.
  avis_precedent text,
  maj_le timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (dataset, id),
  CHECK (NOT porte_sur_personne_physique OR (denomination IS NULL AND siege_numero IS NULL AND siege_voie IS NULL))
);
CREATE INDEX avis_bodacc_sirens ON avis_bodacc USING gin (sirens);
CREATE INDEX avis_bodacc_cle_ban ON avis_bodacc (dataset, cle_ban) WHERE cle_ban IS NOT NULL;
CREATE INDEX avis_bodacc_denomination ON avis_bodacc (dataset, svc_plier(denomination), siege_code_postal)
  WHERE denomination IS NOT NULL;

-- ---------------------------------------------------------------------------------------------------------------------
-- IRIS: outlines of the Insee sub-communal units (GeoJSON, WGS84).
-- ---------------------------------------------------------------------------------------------------------------------

CREATE TABLE iris (
  dataset text NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  -- 9 characters: the commune (5) and the IRIS number (4); files that store it as an integer are left-padded.
  code text NOT NULL CHECK (code ~ '^([0-9]{2}|2[AB])[0-9]{7}$'),
  nom text,
  insee text NOT NULL,
  -- H habitat, A activity, D miscellaneous, Z commune not split.
  type text,
  geometrie jsonb NOT NULL CHECK (geometrie ->> 'type' IN ('Polygon', 'MultiPolygon')),
  bbox_xmin double precision NOT NULL,
  bbox_ymin double precision NOT NULL,
  bbox_xmax double precision NOT NULL,
  bbox_ymax double precision NOT NULL,
  aire_m2 double precision NOT NULL CHECK (aire_m2 >= 0),
  maj_le timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (dataset, code),
  CHECK (bbox_xmin <= bbox_xmax AND bbox_ymin <= bbox_ymax)
);
-- As for the zoning: queries must spell the indexed expression exactly.
CREATE INDEX iris_bbox ON iris USING gist (box(point(bbox_xmin, bbox_ymin), point(bbox_xmax, bbox_ymax)));
CREATE INDEX iris_insee ON iris (dataset, insee);
