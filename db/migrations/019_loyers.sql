-- The rent indicators by commune ("carte des loyers"), reference data of the Estimation and Communes market domains,
-- for the live data and the frozen sandbox. Written only by the importer (domain/loyers/import.ts), each edition and
-- type replaced whole in one transaction; read by loyerCommune / loyersCommune (domain/loyers/loyers.ts).

CREATE TABLE loyers_communes (
  dataset text NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  -- INSEE code, 5 characters (the 2018 files write it as an integer: zero-padded on import). Municipal
  -- arrondissements are communes of their own in the source.
  insee text NOT NULL,
  -- One file per type of dwelling.
  type_logement text NOT NULL CHECK (type_logement IN ('appartement', 'appartement_t1_t2', 'appartement_t3_plus', 'maison')),
  -- Year of the edition (2018, 2022, 2023…), from the file's name, its folder's, or its layout (rule in the importer).
  edition smallint NOT NULL CHECK (edition BETWEEN 2000 AND 2099),
  -- LIBGEO, EPCI and id_zone (the group of communes of the model) as the file writes them.
  commune text,
  epci text,
  id_zone text,
  -- Predicted listing rent, € per m² per month, charges included (loypredm2), and its prediction interval
  -- (lwr.IPm2, upr.IPm2).
  loyer_m2 double precision NOT NULL CHECK (loyer_m2 > 0),
  loyer_m2_bas double precision NOT NULL CHECK (loyer_m2_bas <= loyer_m2),
  loyer_m2_haut double precision NOT NULL CHECK (loyer_m2_haut >= loyer_m2),
  -- TYPPRED, lower case: commune (the commune's own listings), maille or epci (a group of communes).
  niveau_prediction text NOT NULL,
  -- Listings of the commune and of the group (nbobs_com / NBobs_commune, nbobs_mail / NBobs_maille), the model's
  -- adjusted R² (R2_adj / R2adj).
  nb_obs_commune integer CHECK (nb_obs_commune >= 0),
  nb_obs_maille integer CHECK (nb_obs_maille >= 0),
  r2_ajuste double precision,
  -- The read is "the latest edition of this commune and type": the key's order serves it.
  PRIMARY KEY (dataset, insee, type_logement, edition)
);
