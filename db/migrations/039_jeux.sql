-- Indexes behind the indexed columns of the dataset registry (domain/jeux/registre.ts) that no domain had yet: a
-- large dataset is only read with a filter on an indexed column, and that filter must be an index lookup.
-- DPE by commune (dpe_existant, dpe_neuf, dpe_ancien: filtre[insee]); the sort key, numero_dpe, rides along so that
-- a commune's page in sort-key order is read from the index alone.
CREATE INDEX dpe_insee ON dpe (dataset, insee, numero_dpe) WHERE insee IS NOT NULL;
-- BODACC notices by département (bodacc: filtre[departement]), in sort-key order (id).
CREATE INDEX avis_bodacc_departement ON avis_bodacc (dataset, departement, id) WHERE departement IS NOT NULL;

-- The lake editions of the datasets (domain/jeux/lac.ts): one Parquet file per dataset, with the date of its data and
-- the count of rows written to its tables when it was built (pg_stat_user_tables). agreger_jeu reads it with DuckDB
-- while no row has been written since (`base: lac`).
CREATE TABLE jeux_lac (
  dataset text NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  jeu text NOT NULL,
  fichier text NOT NULL,
  donnees_du date,
  lignes bigint NOT NULL,
  ecritures numeric NOT NULL,
  construit_le timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (dataset, jeu)
);
