-- Personal accounts: memory facts, investor profile, and the shared cache of listing addresses validated by users.

-- Order of the facts: a sequence rather than a timestamp, so that facts added in one call keep their order and a
-- fact said again can move to the top (nextval) without two facts ever tying.
CREATE SEQUENCE memoire_faits_ordre;

CREATE TABLE memoire_faits (
  compte_id uuid NOT NULL REFERENCES comptes (id) ON DELETE CASCADE,
  -- Normalised text (case, accents, spacing, final punctuation): the deduplication key.
  cle text NOT NULL,
  fait text NOT NULL CHECK (char_length(fait) BETWEEN 1 AND 500),
  ordre bigint NOT NULL DEFAULT nextval('memoire_faits_ordre'),
  retenu_le timestamptz NOT NULL,
  PRIMARY KEY (compte_id, cle)
);
ALTER SEQUENCE memoire_faits_ordre OWNED BY memoire_faits.ordre;
CREATE INDEX memoire_faits_recents ON memoire_faits (compte_id, ordre DESC);

-- One document per account, in the shape served by GET /compte/profil (domain/compte/profil.ts validates it on the
-- way in and fills fields added later on the way out), so the shape can grow without a migration.
CREATE TABLE profils_investisseur (
  compte_id uuid PRIMARY KEY REFERENCES comptes (id) ON DELETE CASCADE,
  donnees jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(donnees) = 'object'),
  cree_le timestamptz NOT NULL,
  maj_le timestamptz NOT NULL
);

-- Shared across organisations: one address per listing, the latest validation replaces the previous one. Who
-- validated is kept for audit and abuse handling, never served to others.
CREATE TABLE adresses_validees (
  annonce_id text PRIMARY KEY CHECK (char_length(annonce_id) BETWEEN 3 AND 200),
  libelle text NOT NULL CHECK (char_length(libelle) BETWEEN 5 AND 300),
  lat double precision CHECK (lat BETWEEN -90 AND 90),
  lon double precision CHECK (lon BETWEEN -180 AND 180),
  precision text CHECK (precision IN ('numero', 'rue', 'lieu_dit', 'commune')),
  confiance text CHECK (char_length(confiance) <= 120),
  compte_id uuid REFERENCES comptes (id) ON DELETE SET NULL,
  organisation_id uuid REFERENCES organisations (id) ON DELETE SET NULL,
  valide_le timestamptz NOT NULL,
  CHECK ((lat IS NULL) = (lon IS NULL))
);
CREATE INDEX adresses_validees_compte ON adresses_validees (compte_id) WHERE compte_id IS NOT NULL;
