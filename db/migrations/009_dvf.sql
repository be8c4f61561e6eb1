-- DVF sales (demandes de valeurs foncières), grouped by mutation, for the live data and for the frozen sandbox.
-- Written only by the importer (domain/dvf/import.ts) from the Etalab "DVF géolocalisées" CSV or the raw DGFiP file;
-- read by the operations ventes_adresse and ventes (domain/dvf/operations.ts). One row per mutation: its lines are
-- folded at import into `locaux` and `terrains` (each local and each parcel subdivision counted once), so a read never
-- regroups lines. Requires the extensions of 007 (cube, earthdistance).

CREATE TABLE dvf_mutations (
  dataset text NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  -- Etalab's id_mutation (2021-527101); for the raw DGFiP file, a stable id derived from the mutation's grouping key
  -- and its first parcel (2001-D1a2b3c4d5e6f7a8): importing the same file again finds the same ids.
  id_mutation text NOT NULL,
  format text NOT NULL CHECK (format IN ('etalab', 'dgfip')),
  date_mutation date NOT NULL,
  -- The DVF vintage (year of the mutation): sales from 2021 are attached to an address by number and parcel, those of
  -- 2018-2020 by position only.
  millesime smallint NOT NULL,
  -- vente, vefa, terrain_a_batir, adjudication, echange, expropriation; the source's wording in nature_libelle.
  nature text NOT NULL,
  nature_libelle text NOT NULL,
  valeur_fonciere numeric(15, 2),
  -- The address of the mutation's main line (first dwelling, else first local, else first line with a street).
  adresse_numero integer,
  -- bis, ter, quater, or a lower-case letter.
  adresse_suffixe text,
  adresse_voie text,
  -- DGFiP street code (4 characters, the FANTOIR/RIVOLI code of the commune's street).
  code_voie text,
  code_postal text,
  insee text NOT NULL,
  commune text,
  departement text NOT NULL,
  -- The BAN number the sale is attached to (same commune, same street code and number, or the only BAN number on the
  -- main parcel); null while the address base has no such number.
  cle_ban text,
  lat double precision,
  lon double precision,
  -- dvf: coordinates of the file (parcel centroid); ban: position of the attached BAN number; null: unknown.
  position_source text CHECK (position_source IN ('dvf', 'ban')),
  parcelle_principale text,
  parcelles text[] NOT NULL,
  volumes text[] NOT NULL DEFAULT '{}',
  nb_dispositions smallint NOT NULL,
  -- Lines of the source file behind the mutation (qualite.n).
  nb_lignes integer NOT NULL,
  -- [{type, surface_bati, pieces, id_parcelle, lots: [{numero, carrez}]}]. json, not jsonb: served as written, never
  -- queried inside, and a third cheaper to write (measured on the import of 171 000 mutations).
  locaux json NOT NULL,
  -- [{id_parcelle, nature_culture, nature_culture_speciale, surface}]
  terrains json NOT NULL,
  nombre_lots integer NOT NULL,
  surface_terrain double precision,
  -- Computed at import (domain/dvf/import.ts says how).
  types_locaux text[] NOT NULL DEFAULT '{}',
  logements smallint NOT NULL,
  surface_logements double precision,
  prix_m2 double precision,
  vente_en_bloc boolean NOT NULL,
  avec_dependance boolean NOT NULL,
  avec_local_pro boolean NOT NULL,
  prix_atypique boolean NOT NULL,
  surface_atypique boolean NOT NULL,
  -- Equal locals without lots on several lines: distinct locals or a duplicated line, DVF cannot say.
  doublon_probable boolean NOT NULL,
  motif text,
  -- Hash of the mutation's row as read from the file: a re-import writes only the mutations whose hash changed ('':
  -- a row written otherwise, rewritten by the next import that has it).
  empreinte text NOT NULL DEFAULT '',
  importe_le timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (dataset, id_mutation)
);

-- A commune, newest first (ventes?insee=, keyset on date and id).
CREATE INDEX dvf_mutations_insee_date ON dvf_mutations (dataset, insee, date_mutation DESC, id_mutation DESC);
-- A parcel (ventes_adresse by parcel, and the parcels of an address).
CREATE INDEX dvf_mutations_parcelles ON dvf_mutations USING gin (parcelles);
-- A BAN number, as attached at import.
CREATE INDEX dvf_mutations_cle_ban ON dvf_mutations (dataset, cle_ban) WHERE cle_ban IS NOT NULL;
-- A BAN number read by street code and number (BAN imported after DVF).
CREATE INDEX dvf_mutations_numero ON dvf_mutations (dataset, insee, code_voie, adresse_numero)
  WHERE adresse_numero IS NOT NULL;
-- Around a point: cells of 0.005° × 0.005° (about 550 m × 390 m in metropolitan France) covering the circle's box,
-- read through a btree, then the exact distance by earth_distance on the few rows inside. The expression is written
-- the same in domain/dvf/operations.ts (CELLULE), for the planner to match it. Neither a GiST on ll_to_earth nor one
-- on point(lon, lat): measured on the import of 171 000 mutations, they cost about 5 and 3 µs a row to maintain, the
-- btree about 1.7, for reads of a few milliseconds either way.
CREATE INDEX dvf_mutations_cellule ON dvf_mutations
  (dataset, (floor((lat + 90) * 200)::bigint * 72001 + floor((lon + 180) * 200)::bigint));

-- What each import brought, per vintage: the `millesimes` and `donnees_du` of the answers, without scanning sales.
CREATE TABLE dvf_millesimes (
  dataset text NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  millesime smallint NOT NULL,
  mutations integer NOT NULL,
  premiere_mutation date NOT NULL,
  derniere_mutation date NOT NULL,
  -- Last import that changed a mutation of this vintage.
  importe_le timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (dataset, millesime)
);
