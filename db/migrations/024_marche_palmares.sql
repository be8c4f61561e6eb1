-- The Communes market's derived tables behind palmares_communes, comparer_communes, prix_iris and secteur
-- (domain/marche/derives.ts). All rebuilt whole for a dataset after each DVF, DPE, rent, A/B/C zoning or IRIS import,
-- in one transaction: a read is one or two indexed lookups, never a computation over raw sales or DPE.

-- One row per commune (or municipal arrondissement) having data: the indicators of palmares_communes, computed with
-- the same rules as the market sheet (domain/marche/indicateurs.ts).
CREATE TABLE marche_indicateurs (
  dataset text COLLATE "C" NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  insee text COLLATE "C" NOT NULL,
  commune text,
  code_postal text,
  departement text COLLATE "C" NOT NULL,
  region text COLLATE "C",
  population integer,
  -- Sales counted in the price (one dwelling, readable price per m²) over the commune's latest 3 years of sales.
  transactions integer NOT NULL,
  prix_m2_appartement double precision,
  prix_m2_maison double precision,
  -- The two scale prices weighted by the commune's recent sales of each type (prix-bas, prix-eleve).
  prix_m2_logement double precision,
  loyer_m2_appartement double precision,
  loyer_m2_maison double precision,
  loyer_m2_predit double precision,
  rendement_brut_appartement_pct double precision,
  rendement_brut_maison_pct double precision,
  -- Monthly cash-flow per m² under the documented loan assumption (domain/marche/derives.ts, CREDIT).
  cashflow_m2_mois double precision,
  prix_residuel_pct double precision,
  evolution_3_ans_pct double precision,
  passoires_dpe_fg_pct double precision,
  dpe_n integer NOT NULL DEFAULT 0,
  zone_abc text,
  score_attractivite double precision,
  PRIMARY KEY (dataset, insee)
);

-- The rankings: one row per indicator and commune having a value for it. `cle` orders the ranking ascending (the
-- value, or its opposite for a ranking from the highest); the filters of a request (département, région, population,
-- transactions) are columns here, so a page is one walk of an index in ranking order.
CREATE TABLE marche_classement (
  dataset text COLLATE "C" NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  indicateur text COLLATE "C" NOT NULL,
  insee text COLLATE "C" NOT NULL,
  departement text COLLATE "C" NOT NULL,
  region text COLLATE "C",
  population integer,
  transactions integer NOT NULL,
  cle double precision NOT NULL,
  valeur double precision NOT NULL,
  PRIMARY KEY (dataset, indicateur, insee)
);
CREATE INDEX marche_classement_france ON marche_classement (dataset, indicateur, cle, insee);
CREATE INDEX marche_classement_departement ON marche_classement (dataset, indicateur, departement, cle, insee);
CREATE INDEX marche_classement_region ON marche_classement (dataset, indicateur, region, cle, insee);

-- What a rebuild measured for the methods it serves (the expected-price model of sous-evaluees), one row a dataset.
CREATE TABLE marche_derives (
  dataset text COLLATE "C" PRIMARY KEY CHECK (dataset IN ('live', 'sandbox')),
  modele_prix jsonb NOT NULL,
  donnees_du date,
  calcule_le timestamptz NOT NULL DEFAULT now()
);

-- Quarter prices (prix_iris): per IRIS and type of dwelling, the quarter's own sales over the latest two vintages
-- shrunk towards the commune's scale price.
CREATE TABLE marche_iris (
  dataset text COLLATE "C" NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  code_iris text COLLATE "C" NOT NULL,
  insee text COLLATE "C" NOT NULL,
  type text COLLATE "C" NOT NULL CHECK (type IN ('appartement', 'maison')),
  millesime smallint NOT NULL,
  prix_m2 double precision,
  label text CHECK (label IN ('mesure', 'estime')),
  n_ventes integer NOT NULL,
  n_ventes_recentes integer NOT NULL,
  poids_local double precision,
  prix_m2_local double precision,
  prix_m2_commune double precision,
  demi_bande_pct double precision,
  PRIMARY KEY (dataset, code_iris, type)
);

-- The pre-market of a postal code (secteur): addresses whose latest DPE is an individual one (a flat or a house) of
-- the last 90 days of the data, with no DVF sale at the address since.
CREATE TABLE marche_secteur (
  dataset text COLLATE "C" NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  code_postal text COLLATE "C" NOT NULL,
  n integer NOT NULL,
  passoires integer NOT NULL,
  -- The addresses of the window before the sold ones are set aside.
  dpe_recents integer NOT NULL,
  vendues_depuis integer NOT NULL,
  reference_le date NOT NULL,
  PRIMARY KEY (dataset, code_postal)
);
