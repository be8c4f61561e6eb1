-- The address base, continued: départements and régions of the administrative split, and the indexes that
-- resoudre_adresse reads.
CREATE TABLE departements (
  dataset text NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  code text NOT NULL,
  nom text NOT NULL,
  region text,
  PRIMARY KEY (dataset, code)
);

CREATE TABLE regions (
  dataset text NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  code text NOT NULL,
  nom text NOT NULL,
  PRIMARY KEY (dataset, code)
);

-- What the text search compares with a query: the street or place name, the commune, the postal code, folded. Not the
-- label: its postal code sits between street and commune (`Rue X 33360 Latresne`), and a query without it (`rue x
-- latresne`) then matches the street and the commune only as two pieces, no better than any other street of the
-- commune (pg_trgm's word similarity rewards one continuous extent). Schema-qualified: index builds and ANALYZE run
-- with a search_path reduced to pg_catalog.
CREATE FUNCTION svc_texte_adresse(voie text, lieu_dit text, commune text, code_postal text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT public.svc_plier(coalesce(voie, lieu_dit, '') || ' ' || coalesce(commune, '') || ' ' || coalesce(code_postal, '')) $$;

-- The text search looks up streets, places and communes, then the asked number on the streets it found: an index of
-- the few non-number rows stays small and selective where one over every number would not. The predicate and the
-- expression must be written as is in the queries for the planner to use it.
CREATE INDEX adresses_texte_trgm_hors_numeros ON adresses
  USING gin (svc_texte_adresse(voie, lieu_dit, commune, code_postal) gin_trgm_ops)
  WHERE type <> 'numero';
-- It replaces the index of every label: nothing reads that one, and it cost a third of the import time of a BAN file
-- (measured: 16 µs of 60 per number; the GiST of positions takes 25, the other indexes a few each).
DROP INDEX adresses_libelle_trgm;

-- Numbers of a lieu-dit (`nom_ld`), found from the place the text search matched.
CREATE INDEX adresses_lieu_dit_numero ON adresses (dataset, insee, lieu_dit, numero) WHERE lieu_dit IS NOT NULL;
