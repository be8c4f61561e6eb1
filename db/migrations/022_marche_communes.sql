-- The Communes market's aggregates (domain/marche/agregats.ts): per commune (a municipal arrondissement of Paris, Lyon
-- and Marseille counts as a commune: DVF writes its code) and per département, per type of dwelling, year and
-- quarter, the median price per m² of one-dwelling sales and its dispersion. Rebuilt from dvf_mutations after each DVF
-- import, for the communes and départements the import touched, in one transaction: a read of the market
-- (prix_commune, ventes_commune) is one range of the primary key, never a computation over raw sales.
CREATE TABLE marche_prix (
  dataset text COLLATE "C" NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  niveau text COLLATE "C" NOT NULL CHECK (niveau IN ('commune', 'departement')),
  -- INSEE code of the commune or arrondissement, or the département's code.
  code text COLLATE "C" NOT NULL,
  -- global: apartments and houses together.
  type text COLLATE "C" NOT NULL CHECK (type IN ('appartement', 'maison', 'global')),
  annee smallint NOT NULL,
  -- 1 to 4; 0 for the whole year.
  trimestre smallint NOT NULL CHECK (trimestre BETWEEN 0 AND 4),
  -- Sales counted in the median: a sale (vente, VEFA, adjudication) of exactly one dwelling whose price per m² DVF
  -- can be read as that dwelling's (no business premises, plausible price and surface: domain/marche/agregats.ts).
  ventes integer NOT NULL,
  prix_m2_median double precision,
  prix_m2_p25 double precision,
  prix_m2_p75 double precision,
  prix_m2_min double precision,
  prix_m2_max double precision,
  -- DVF rows of apartments and of houses in the sales of the period (every sale with a dwelling, one per local, not
  -- per mutation), on the `global` rows only: the `velocite` of ventes_commune.
  lignes_appartements integer NOT NULL DEFAULT 0,
  lignes_maisons integer NOT NULL DEFAULT 0,
  PRIMARY KEY (dataset, niveau, code, type, annee, trimestre)
);

-- The share of F and G DPE labels by commune (domain/marche/agregats.ts, reconstruireDpeCommunes): rebuilt at the end
-- of each DPE import, one row a commune, for the market sheet and the comparisons. A DPE replaced by a newer one
-- (numero_dpe_remplace) is not counted.
CREATE TABLE marche_dpe (
  dataset text COLLATE "C" NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  insee text COLLATE "C" NOT NULL,
  dpe integer NOT NULL,
  passoires integer NOT NULL,
  dernier_dpe date,
  PRIMARY KEY (dataset, insee)
);

-- Reviews of communes by users (avis_zone, avis_zone_publier: domain/marche/avis.ts). Texts are stored as written;
-- they are served masked (contact details, civility-prefixed names) and never with their author. One review per
-- account and commune.
CREATE TABLE avis_communes (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  dataset text COLLATE "C" NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  insee text COLLATE "C" NOT NULL,
  compte_id uuid NOT NULL REFERENCES comptes (id) ON DELETE CASCADE,
  note smallint NOT NULL CHECK (note BETWEEN 1 AND 5),
  note_rentabilite smallint CHECK (note_rentabilite BETWEEN 1 AND 5),
  note_qualite_vie smallint CHECK (note_qualite_vie BETWEEN 1 AND 5),
  note_demande_locative smallint CHECK (note_demande_locative BETWEEN 1 AND 5),
  note_valorisation smallint CHECK (note_valorisation BETWEEN 1 AND 5),
  titre text NOT NULL,
  contenu text NOT NULL,
  profil text CHECK (profil IN ('proprietaire', 'locataire', 'investisseur', 'professionnel')),
  verifie boolean NOT NULL DEFAULT false,
  votes_utiles integer NOT NULL DEFAULT 0,
  cree_le timestamptz NOT NULL DEFAULT now(),
  UNIQUE (dataset, compte_id, insee)
);
-- The two orders of avis_zone, each a keyset.
CREATE INDEX avis_communes_utiles ON avis_communes (dataset, insee, votes_utiles DESC, cree_le DESC, id DESC);
CREATE INDEX avis_communes_recents ON avis_communes (dataset, insee, cree_le DESC, id DESC);

-- The neighbouring communes of prix_commune's estimate (domain/marche/prix.ts, lireVoisins): a band of latitude read
-- through this index, then the longitude, instead of every commune of the dataset.
CREATE INDEX communes_latitude ON communes (dataset, lat) WHERE lat IS NOT NULL;
