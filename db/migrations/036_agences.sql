-- Real-estate agencies (domain/agences/): derived tables, rebuilt from SIRENE, the listings and their events after
-- the imports they depend on (reconstruireAgences in domain/agences/derive.ts), for the live data and the frozen
-- sandbox. Read by `agences` and `agences_commune` with one or two indexed look-ups: no read aggregates listings
-- (DESIGN.md section 13). Nothing here is written by a request.
--
-- Privacy (rule 11 of the specification): a sole trader is a natural person. No table here keeps a name SIRENE does
-- not keep (a sole trader's unit has no denomination, their establishments no sign), and the names and contacts the
-- listings give for a sole trader are kept only when SIRENE diffuses the unit (`diffusion_partielle` false).

-- One row per agency: a legal unit of real-estate activity (APE of the unit or of one of its establishments in the
-- list of domain/agences/derive.ts), or a unit the listings name as a professional seller by its SIREN.
CREATE TABLE agences (
  dataset text COLLATE "C" NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  siren text COLLATE "C" NOT NULL CHECK (siren ~ '^[0-9]{9}$'),
  -- Why it is an agency: its activity code (`ape`), or the listings that name it as a professional seller.
  motif text NOT NULL CHECK (motif IN ('ape', 'annonces')),
  denomination text,
  sigle text,
  categorie_juridique text,
  ape text,
  entrepreneur_individuel boolean NOT NULL,
  diffusion_partielle boolean NOT NULL,
  -- Folded names a search by `enseigne` reads (denomination, sigle, signs, trade names and brands of the listings),
  -- and the folded brands a search by `reseau` reads; each separated by ` | `.
  noms text NOT NULL DEFAULT '',
  reseaux_noms text NOT NULL DEFAULT '',
  -- Where it is: its establishments' communes, postal codes and départements, and those of its listings.
  insee text[] COLLATE "C" NOT NULL DEFAULT '{}',
  codes_postaux text[] COLLATE "C" NOT NULL DEFAULT '{}',
  departements text[] COLLATE "C" NOT NULL DEFAULT '{}',
  -- The served groups, as computed: reseaux [{...}], domaines [{...}], contacts_pro {...}|null, activite {...}|null.
  reseaux jsonb NOT NULL DEFAULT '[]',
  domaines jsonb NOT NULL DEFAULT '[]',
  contacts_pro jsonb,
  activite jsonb,
  calcule_le timestamptz NOT NULL,
  PRIMARY KEY (dataset, siren),
  CHECK (NOT entrepreneur_individuel OR (denomination IS NULL AND sigle IS NULL))
);
-- Agencies of a place, by ascending SIREN (the keyset of the cursor): btree_gin (migration 017) puts the dataset in the
-- same index as the array.
CREATE INDEX agences_insee ON agences USING gin (dataset, insee);
CREATE INDEX agences_codes_postaux ON agences USING gin (dataset, codes_postaux);
CREATE INDEX agences_departements ON agences USING gin (dataset, departements);
CREATE INDEX agences_noms ON agences USING gin (noms gin_trgm_ops);
CREATE INDEX agences_reseaux_noms ON agences USING gin (reseaux_noms gin_trgm_ops);

-- The activity of each seller in a commune and a month, from the listings: mandates in portfolio (distinct properties
-- online at least one day of the month), exclusive ones, median days online, share reduced, market share. A seller is
-- an agency's SIREN, or the folded name of a professional seller SIRENE does not know (`nom:<name>`).
CREATE TABLE agences_activite (
  dataset text COLLATE "C" NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  insee text COLLATE "C" NOT NULL,
  mois text COLLATE "C" NOT NULL CHECK (mois ~ '^[0-9]{4}-[0-9]{2}$'),
  vendeur text COLLATE "C" NOT NULL,
  siren text COLLATE "C",
  enseigne text,
  mandats integer NOT NULL CHECK (mandats > 0),
  exclusifs integer NOT NULL CHECK (exclusifs >= 0 AND exclusifs <= mandats),
  duree_mediane_j double precision,
  part_baisses_pct double precision,
  part_marche_pct double precision NOT NULL,
  PRIMARY KEY (dataset, insee, mois, vendeur)
);
CREATE INDEX agences_activite_siren ON agences_activite (dataset, siren, mois) WHERE siren IS NOT NULL;

-- The market of a commune in a month: what agences_commune serves beside the agencies.
CREATE TABLE agences_marche (
  dataset text COLLATE "C" NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  insee text COLLATE "C" NOT NULL,
  mois text COLLATE "C" NOT NULL,
  n_agences integer NOT NULL,
  mandats_total integer NOT NULL,
  part_leader_pct double precision,
  -- Herfindahl-Hirschman index of the mandates' shares, 0 (scattered) to 1 (a single agency).
  hhi double precision CHECK (hhi IS NULL OR (hhi >= 0 AND hhi <= 1)),
  PRIMARY KEY (dataset, insee, mois)
);

-- When each dataset's agencies were computed, and the latest month computed (the month of the latest snapshot).
CREATE TABLE agences_calculs (
  dataset text COLLATE "C" PRIMARY KEY CHECK (dataset IN ('live', 'sandbox')),
  dernier_mois text COLLATE "C",
  donnees_du date,
  calcule_le timestamptz NOT NULL
);
