-- Derived tables of the Estimation domain, rebuilt from the DVF mutations by `npm run modeles`
-- (domain/estimation/backtest.ts), never written by a request.
--
-- estimation_indices: the departmental price index, per type of dwelling and vintage: the median €/m² of the plain
-- one-dwelling sales (motif null) of the département that year. A comparable's price is brought to the latest vintage
-- by the ratio of the medians (domain/estimation/estimer.ts, indexer). One indexed read per estimate.
CREATE TABLE estimation_indices (
  dataset text NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  departement text NOT NULL,
  type_bien text NOT NULL CHECK (type_bien IN ('appartement', 'maison')),
  millesime smallint NOT NULL,
  prix_m2_median double precision NOT NULL,
  n integer NOT NULL,
  calcule_le timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (dataset, departement, type_bien, millesime)
);

-- modeles_mesures: what the backtests measured, one row per model, indicator, type and scale (`socle`; '' when the
-- measure is not split). GET /modeles serves these rows; estimer_bien reads its calibrated half-width from them
-- (indicateur demi_largeur_80). A measure not computed has no row: the sheet says so in `limites`.
CREATE TABLE modeles_mesures (
  dataset text NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  modele text NOT NULL,
  indicateur text NOT NULL,
  type_bien text NOT NULL DEFAULT '',
  socle text NOT NULL DEFAULT '',
  libelle text NOT NULL,
  valeur double precision NOT NULL,
  unite text NOT NULL,
  mesure_le timestamptz NOT NULL,
  echantillon integer,
  perimetre text,
  hors_echantillon boolean,
  PRIMARY KEY (dataset, modele, indicateur, type_bien, socle)
);

-- What the last backtest of a model could not measure, in its own words: GET /modeles serves it in `limites`.
CREATE TABLE modeles_limites (
  dataset text NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  modele text NOT NULL,
  rang integer NOT NULL,
  texte text NOT NULL,
  mesure_le timestamptz NOT NULL,
  PRIMARY KEY (dataset, modele, rang)
);
