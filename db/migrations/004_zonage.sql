-- Zoning of the planning documents, as the Géoportail de l'Urbanisme publishes them: documents (DOC_URBA) and their
-- zones (ZONE_URBA). Written only by the importer (domain/urbanisme/zonage-import.ts), for the live data or for the
-- frozen sandbox. No PostGIS: a zone keeps its outline as GeoJSON (WGS84) with its bounding box; a GiST index on the
-- box prefilters "which zones cover or lie near this point", the exact test is done in the application.

CREATE TABLE documents_urbanisme (
  dataset text NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  -- <INSEE or SIREN>_<TYPEDOC>_<AAAAMMJJ>[_<code>], e.g. 30014_PLU_20171013, 241800432_PLUi_20200128.
  idurba text NOT NULL,
  typedoc text,
  etat text,
  nomproc text,
  datappro date,
  datvalid date,
  -- The GPU partition: a commune (INSEE code) for a communal document, an EPCI (SIREN) for an intercommunal one.
  insee text,
  siren text,
  -- The whole written rules, when DOC_URBA names them: the fallback of a zone without its own file.
  nomreg text,
  urlreg text,
  -- Whether the row came from a DOC_URBA table, or was inferred from the IDURBA of zones imported without one.
  depuis_doc_urba boolean NOT NULL,
  maj_le timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (dataset, idurba)
);
CREATE INDEX documents_urbanisme_insee ON documents_urbanisme (dataset, insee) WHERE insee IS NOT NULL;
CREATE INDEX documents_urbanisme_siren ON documents_urbanisme (dataset, siren) WHERE siren IS NOT NULL;

CREATE TABLE zones_urbanisme (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  dataset text NOT NULL,
  idurba text NOT NULL,
  -- Natural key of the zone within its document: a hash of its outline, plus an ordinal among identical outlines.
  -- Re-importing the same file finds the same keys, so it updates nothing and ids stay.
  cle text NOT NULL,
  -- LIBELLE: the zone code (UA, 1AUh...).
  libelle text NOT NULL CHECK (libelle <> ''),
  libelong text,
  -- U, AUc, AUs, A, N.
  typezone text,
  destdomi text,
  nomfic text,
  urlfic text,
  -- Resolved at import (URLFIC, else NOMFIC under the import's base URL, else the document's file), and the page of
  -- a `#page=` fragment.
  reglement_url text,
  reglement_page integer CHECK (reglement_page > 0),
  datappro date,
  datvalid date,
  insee text,
  siren text,
  -- Polygon or MultiPolygon, [longitude, latitude] in WGS84, holes kept.
  geometrie jsonb NOT NULL CHECK (geometrie ->> 'type' IN ('Polygon', 'MultiPolygon')),
  -- Bounding box in degrees (xmin and xmax are reserved: PostgreSQL's system columns).
  bbox_xmin double precision NOT NULL,
  bbox_ymin double precision NOT NULL,
  bbox_xmax double precision NOT NULL,
  bbox_ymax double precision NOT NULL,
  aire_m2 double precision NOT NULL CHECK (aire_m2 >= 0),
  maj_le timestamptz NOT NULL DEFAULT now(),
  CHECK (bbox_xmin <= bbox_xmax AND bbox_ymin <= bbox_ymax),
  UNIQUE (dataset, idurba, cle),
  FOREIGN KEY (dataset, idurba) REFERENCES documents_urbanisme (dataset, idurba) ON DELETE CASCADE
);
-- "Box contains the point" and "box within d of the point" are both `box && box(point ± d)`; queries must spell the
-- indexed expression exactly: box(point(bbox_xmin, bbox_ymin), point(bbox_xmax, bbox_ymax)).
CREATE INDEX zones_urbanisme_bbox ON zones_urbanisme
  USING gist (box(point(bbox_xmin, bbox_ymin), point(bbox_xmax, bbox_ymax)));
CREATE INDEX zones_urbanisme_insee ON zones_urbanisme (dataset, insee) WHERE insee IS NOT NULL;
