-- Where each commune's sales are: the median latitude and longitude of its geolocated DVF mutations, rebuilt with
-- marche_prix for the communes an import read (domain/marche/agregats.ts) and emptied with the sales. The
-- neighbourhoods of prix_commune's scale (marche_bassins) are drawn around a commune's centre: the administrative
-- split gives none today (its package carries no centre), so a commune without one is placed at the centre of its
-- sales. A median per axis: a few mis-geocoded sales do not move it.
CREATE TABLE marche_centres (
  dataset text COLLATE "C" NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  insee text COLLATE "C" NOT NULL,
  lat double precision NOT NULL,
  lon double precision NOT NULL,
  -- The geolocated mutations it stands on.
  mutations integer NOT NULL,
  PRIMARY KEY (dataset, insee)
);

-- Neighbours are found by the rebuild in memory (domain/marche/derives.ts, grille), no longer per request through
-- this index (022).
DROP INDEX communes_latitude;
