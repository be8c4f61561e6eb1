-- Energy-performance diagnoses (DPE) of existing dwellings and energy audits, for the live data and the frozen sandbox.
-- Written only by the importer (domain/dpe/import.ts) from the ADEME observatory XML or the ADEME open-data CSV;
-- read by faits_adresse (domain/dpe/faits.ts). Personal data never enters: owners, diagnosticians and their contacts
-- are not read from the sources, nor the dwelling's complements (floor, flat reference, residence name).

CREATE TABLE dpe (
  dataset text NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  -- ADEME number, 13 characters (2375E4029206L).
  numero_dpe text NOT NULL,
  format text NOT NULL CHECK (format IN ('xml', 'csv_ademe')),
  -- BAN key the observatory geocoded the dwelling to (`ban_id`, `Identifiant__BAN`), lowercase as in `adresses`; null
  -- when the DPE was not geocoded to the BAN.
  cle_ban text,
  -- The geocoder's score (0-1).
  ban_score double precision,
  -- Score under 0.5, or a key whose number is not the number of the address the diagnostician typed: the DPE may
  -- belong to a neighbour (qualite.drapeaux rattachement_incertain). Rule in domain/dpe/import.ts.
  rattachement_incertain boolean NOT NULL,
  -- The BAN address as the observatory returned it (label, street, postal code, commune); the raw typed address is
  -- not kept.
  adresse text,
  voie text,
  code_postal text,
  insee text,
  commune text,
  -- WGS84, from the BAN coordinates of the DPE (Lambert-93 in metropolitan France, UTM overseas).
  lat double precision,
  lon double precision,
  etabli_le date NOT NULL,
  fin_validite date NOT NULL,
  -- true: the source gives no end of validity, etabli_le + 10 years (the legal validity) is written.
  fin_validite_calculee boolean NOT NULL,
  etiquette text NOT NULL CHECK (etiquette IN ('A', 'B', 'C', 'D', 'E', 'F', 'G')),
  ges text CHECK (ges IN ('A', 'B', 'C', 'D', 'E', 'F', 'G')),
  -- Primary energy and greenhouse-gas emissions, 5 uses, per m² of living area and per year.
  conso_kwh_m2_an double precision,
  ges_kg_m2_an double precision,
  surface_m2 double precision,
  type_batiment text CHECK (type_batiment IN ('maison', 'appartement', 'immeuble')),
  surface_immeuble_m2 double precision,
  niveaux smallint,
  appartements integer,
  -- ADEME wording: avant 1948, 1948-1974, …, après 2021.
  periode_construction text,
  annee_construction smallint,
  -- Main heating energy (ADEME wording: Électricité, Gaz naturel, …) and installation (individuel, collectif, mixte).
  chauffage_energie text,
  chauffage_installation text,
  -- Insulation quality: très bonne, bonne, moyenne, insuffisante.
  isolation_enveloppe text,
  isolation_murs text,
  isolation_menuiseries text,
  ventilation text,
  -- DPE model (3CL 2021 logement…) and method of application (maison, appartement, immeuble, chauffage individuel…).
  modele text,
  methode text,
  -- The DPE this one cancels and replaces, the building DPE it was derived from, the condominium's registration.
  numero_dpe_remplace text,
  numero_dpe_immeuble text,
  immatriculation_copropriete text,
  -- Last import that changed the row.
  importe_le timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (dataset, numero_dpe)
);

-- The DPEs of an address, newest first.
CREATE INDEX dpe_cle_ban_date ON dpe (dataset, cle_ban, etabli_le DESC) WHERE cle_ban IS NOT NULL;
-- Whether a DPE was replaced by another (replaced ones are not counted as diagnoses of the address).
CREATE INDEX dpe_remplace ON dpe (dataset, numero_dpe_remplace) WHERE numero_dpe_remplace IS NOT NULL;

-- Energy audits (ADEME audit open data: one row per scenario step in the source, one row per audit here).
CREATE TABLE dpe_audits (
  dataset text NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  numero_audit text NOT NULL,
  -- From the source when it gives one, else the key of the audited DPE (numero_dpe) once that DPE is imported.
  cle_ban text,
  numero_dpe text,
  numero_audit_remplace text,
  etabli_le date NOT NULL,
  fin_validite date,
  -- Highest cumulative cost of works among the audit's scenarios (€).
  cout_travaux_max numeric(12, 2),
  classe_initiale text CHECK (classe_initiale IN ('A', 'B', 'C', 'D', 'E', 'F', 'G')),
  -- Best energy class the audit's final steps reach.
  classe_visee text CHECK (classe_visee IN ('A', 'B', 'C', 'D', 'E', 'F', 'G')),
  -- Audit and its DPE established within 31 days of each other (the pair a seller orders before a sale); null while
  -- the audited DPE is unknown. Computed by the importer (domain/dpe/import.ts).
  pack_pre_vente boolean,
  -- Scenario steps read for this audit (qualite.n).
  etapes integer NOT NULL,
  importe_le timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (dataset, numero_audit)
);

CREATE INDEX dpe_audits_cle_ban_date ON dpe_audits (dataset, cle_ban, etabli_le DESC) WHERE cle_ban IS NOT NULL;
CREATE INDEX dpe_audits_numero_dpe ON dpe_audits (dataset, numero_dpe) WHERE numero_dpe IS NOT NULL;
