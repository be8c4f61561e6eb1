-- Derived tables of the Pre-market domain (domain/pre-marche/), rebuilt whole by the training run (`npm run modeles`,
-- the recalibrerModeles workflow after each DVF import, the sandbox load), never written by a request. Reads are one
-- or two indexed lookups: no raw row is aggregated per request.

-- The measured model of a dataset: when it was trained and measured, on what, and its headline figures.
CREATE TABLE pre_marche_modele (
  dataset text PRIMARY KEY CHECK (dataset IN ('live', 'sandbox')),
  calcule_le timestamptz NOT NULL,
  -- The date of the data (the latest DPE held): ages of DPE are counted from it, so a frozen base answers the same.
  reference_le date NOT NULL,
  -- The last DVF sale held: a DPE is a training example only when its 12 months end before it.
  dvf_jusqu_au date,
  intercept double precision NOT NULL,
  n_entrainement integer NOT NULL,
  n_controle integer NOT NULL,
  -- Sale rate within 12 months of all held-out examples, and of the top band (percent).
  base_pct double precision NOT NULL,
  haut_pct double precision,
  auc double precision,
  perimetre text NOT NULL,
  -- The held-out examples by quarter of their DPE: the top band's sale rate against the cohort's (GET /modeles).
  cohortes jsonb NOT NULL,
  -- What the run could not measure, in its own words.
  limites text[] NOT NULL
);

-- Coefficients of the logistic regression, one per signal, with each signal's own lift on the training examples.
-- `coefficient_ajuste`: the coefficient retained for scoring (0 when the signal is unstable or too rare).
CREATE TABLE pre_marche_coefficients (
  dataset text NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  signal text NOT NULL,
  groupe text NOT NULL,
  n_dvf integer NOT NULL,
  taux_dvf_pct double precision,
  lift_dvf double precision,
  coefficient double precision NOT NULL,
  coefficient_ajuste double precision NOT NULL,
  erreur_type double precision,
  stable boolean NOT NULL,
  retenu boolean NOT NULL,
  calcule_le timestamptz NOT NULL,
  PRIMARY KEY (dataset, signal)
);

-- Calibration bands by type of dwelling ('tous' for all): the index range of the band (set on the training examples)
-- and the real sale rate within 12 months of the held-out examples that fall in it, beside the model's mean
-- prediction for them.
CREATE TABLE pre_marche_bandes (
  dataset text NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  type_bien text NOT NULL,
  bande text NOT NULL,
  rang smallint NOT NULL,
  indice_min double precision NOT NULL,
  indice_max double precision NOT NULL,
  n integer NOT NULL,
  ventes integer NOT NULL,
  taux_vente_12m_pct double precision NOT NULL,
  taux_predit_pct double precision NOT NULL,
  tolerance_pct double precision NOT NULL,
  calcule_le timestamptz NOT NULL,
  PRIMARY KEY (dataset, type_bien, bande)
);

-- How the chance of a sale within 12 months falls as the DPE ages without a sale (held-out and training examples).
CREATE TABLE pre_marche_decroissance (
  dataset text NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  age_min_jours integer NOT NULL,
  age_max_jours integer NOT NULL,
  n integer NOT NULL,
  taux_vente_12m_pct double precision NOT NULL,
  multiplicateur double precision NOT NULL,
  calcule_le timestamptz NOT NULL,
  PRIMARY KEY (dataset, age_min_jours)
);

-- One row per BAN address with an individual DPE: its latest DPE, the signals as of that DPE's day (the same
-- computation as the training examples), its index, band and probability, and its prospecting priority.
CREATE TABLE pre_marche_scores (
  dataset text NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  cle_ban text NOT NULL,
  insee text NOT NULL,
  code_postal text,
  epci text,
  adresse text,
  commune text,
  lat double precision,
  lon double precision,
  type_bien text NOT NULL CHECK (type_bien IN ('maison', 'appartement', 'immeuble', 'autre')),
  numero_dpe text NOT NULL,
  dpe_le date NOT NULL,
  etiquette text,
  periode_construction text,
  chauffage text,
  surface_m2 double precision,
  audit_le date,
  pack_pre_vente boolean NOT NULL,
  -- The model's variables as of the DPE (faits_adresse serves them as its pre_marche group).
  variables jsonb NOT NULL,
  signaux text[] NOT NULL,
  nb_dpe integer NOT NULL,
  -- Null outside the calibrated perimeter (hors_perimetre says why).
  indice double precision,
  bande text,
  p_vente double precision,
  lift double precision,
  fenetre double precision NOT NULL,
  priorite double precision,
  -- A DVF sale at the address on or after the DPE's day.
  vendue_depuis boolean NOT NULL,
  derniere_vente_le date,
  derniere_vente_prix double precision,
  hors_perimetre text,
  -- The address's dated facts as the item serves them (civil companies, permits, dwellings, timeline without the
  -- listings, which are read at the request): written with the score, so that a page of 50 is one read.
  societes jsonb NOT NULL,
  permis jsonb,
  logements jsonb NOT NULL,
  frise jsonb NOT NULL,
  fiabilite text NOT NULL CHECK (fiabilite IN ('mesure', 'indicatif')),
  calcule_le timestamptz NOT NULL,
  PRIMARY KEY (dataset, cle_ban)
);
-- The ranking of a sector: by priority, then key (the keyset cursor's order).
CREATE INDEX pre_marche_scores_insee ON pre_marche_scores (dataset, insee, priorite DESC NULLS LAST, cle_ban DESC);
CREATE INDEX pre_marche_scores_cp ON pre_marche_scores (dataset, code_postal, priorite DESC NULLS LAST, cle_ban DESC);
-- The sector's counts (comptage) read from the index alone (the training run vacuums the table after writing it).
CREATE INDEX pre_marche_scores_comptage ON pre_marche_scores (dataset, insee, dpe_le)
  INCLUDE (pack_pre_vente, vendue_depuis, priorite, cle_ban);
CREATE INDEX pre_marche_scores_position ON pre_marche_scores USING gist (ll_to_earth(lat, lon));
