-- The address base: communes (with EPCI and postal codes) and BAN addresses, for the live and the sandbox datasets.
-- Every reading table of the data platform carries `dataset`: 'live' (pk_live_ keys) or 'sandbox' (pk_test_ keys).
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE EXTENSION IF NOT EXISTS unaccent;
CREATE EXTENSION IF NOT EXISTS cube;
CREATE EXTENSION IF NOT EXISTS earthdistance;

-- unaccent() is only STABLE; an index needs an IMMUTABLE wrapper bound to the dictionary.
CREATE FUNCTION svc_plier(text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $$ SELECT lower(public.unaccent('public.unaccent'::regdictionary, $1)) $$;

CREATE TABLE communes (
  dataset text NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  insee text NOT NULL,
  nom text NOT NULL,
  type text NOT NULL CHECK (type IN ('commune-actuelle', 'arrondissement-municipal', 'commune-deleguee', 'commune-associee')),
  departement text,
  region text,
  epci text,
  commune_parente text,
  codes_postaux text[] NOT NULL DEFAULT '{}',
  population integer,
  lat double precision,
  lon double precision,
  PRIMARY KEY (dataset, insee)
);

CREATE TABLE epci (
  dataset text NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  siren text NOT NULL,
  nom text NOT NULL,
  nature text,
  membres text[] NOT NULL DEFAULT '{}',
  PRIMARY KEY (dataset, siren)
);

-- One row per BAN entry: a number (`numero`), a street (`voie`), a place (`lieu_dit`) or a commune (`commune`).
CREATE TABLE adresses (
  dataset text NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  cle_ban text NOT NULL,
  type text NOT NULL CHECK (type IN ('numero', 'voie', 'lieu_dit', 'commune')),
  numero integer,
  suffixe text,
  voie text,
  code_voie text,
  lieu_dit text,
  code_postal text,
  insee text NOT NULL,
  commune text NOT NULL,
  ancienne_commune_insee text,
  ancienne_commune_nom text,
  libelle text NOT NULL,
  lat double precision NOT NULL,
  lon double precision NOT NULL,
  type_position text,
  parcelles text[],
  certification boolean,
  source text NOT NULL,
  PRIMARY KEY (dataset, cle_ban)
);
CREATE INDEX adresses_libelle_trgm ON adresses USING gin (svc_plier(libelle) gin_trgm_ops);
CREATE INDEX adresses_position ON adresses USING gist (ll_to_earth(lat, lon));
CREATE INDEX adresses_insee_voie ON adresses (dataset, insee, code_voie, numero);
CREATE INDEX adresses_parcelles ON adresses USING gin (parcelles);
