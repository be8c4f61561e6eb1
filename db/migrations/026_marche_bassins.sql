-- The neighbourhood of each commune that prix_commune's scale shrinks toward (domain/marche/prix.ts, bareme): per
-- type of dwelling and vintage, the communes whose centre lies within ~15 km of its own and had sales. Rebuilt whole
-- with the other derived tables (domain/marche/derives.ts, reconstruireDerives) after each DVF, DPE, rent, A/B/C
-- zoning or IRIS import, in the same transaction: a read of the scale is one range of the primary key, never a join
-- of the communes' centres with marche_prix per request.
CREATE TABLE marche_bassins (
  dataset text COLLATE "C" NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  insee text COLLATE "C" NOT NULL,
  type text COLLATE "C" NOT NULL CHECK (type IN ('appartement', 'maison')),
  annee smallint NOT NULL,
  -- Neighbouring communes having sales of the type in the vintage (the scale's nb_voisins).
  nb_voisins integer NOT NULL,
  -- Their sales (n_ventes_bassin): a row exists only when there is at least one, so the price below is never null.
  n_ventes integer NOT NULL CHECK (n_ventes > 0),
  -- Their medians weighted by their sales: the price of the neighbourhood, not a median of its sales (a median does
  -- not compose from medians, and reading the neighbours' raw sales per commune is what this table avoids).
  prix_m2 double precision NOT NULL,
  PRIMARY KEY (dataset, insee, type, annee)
);
