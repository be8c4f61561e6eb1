-- The whole planning package of the Géoportail de l'Urbanisme (CNIG standard), public-utility easements (CNIG SUP
-- standard), the Etalab cadastre, and the planning status of communes. Written only by the importers
-- (domain/urbanisme/paquet-gpu.ts, sup-import.ts, statut-communes-import.ts, domain/cadastre/import.ts), for the live
-- data or the frozen sandbox; read by the urbanism operations (a zone, prescription, information or easement at a
-- point; the documents of a commune).
--
-- As for the zones (004_zonage.sql): no PostGIS. Each feature keeps its geometry as GeoJSON in WGS84 with its bounding
-- box; a GiST index on the box prefilters "what covers or lies near this point", the exact test (point in polygon,
-- distance to a line or a point) is done in the application (lib/geometrie.ts). Queries must spell the indexed
-- expression exactly: box(point(bbox_xmin, bbox_ymin), point(bbox_xmax, bbox_ymax)).
--
-- Natural keys: a feature without a stable identifier in its source (zones, sectors, prescriptions, information,
-- generators, assiettes, buildings) is keyed, within its document or package, by a hash of its geometry and its rank
-- among identical geometries in file order (`cle`): importing the same package again finds the same keys and writes
-- nothing, and ids stay.

-- DOC_URBA columns the zoning import did not keep: the end of validity, the graphic rules and the document's site.
ALTER TABLE documents_urbanisme
  ADD COLUMN datefin date,
  ADD COLUMN nomplan text,
  ADD COLUMN urlplan text,
  ADD COLUMN siteweb text;

-- The communes a document covers: DOC_URBA_COM (the communes of a PLUi), the INSEE code of a communal document's
-- IDURBA, the INSEE field of the layers of the 2013 layout. "The documents of a commune" is one indexed read here.
CREATE TABLE documents_urbanisme_communes (
  dataset text NOT NULL,
  idurba text NOT NULL,
  insee text NOT NULL,
  -- doc_urba_com: the package's table; idurba: the code in the document's identifier; couche: an INSEE field of a layer.
  origine text NOT NULL CHECK (origine IN ('doc_urba_com', 'idurba', 'couche')),
  maj_le timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (dataset, idurba, insee),
  FOREIGN KEY (dataset, idurba) REFERENCES documents_urbanisme (dataset, idurba) ON DELETE CASCADE
);
CREATE INDEX documents_urbanisme_communes_insee ON documents_urbanisme_communes (dataset, insee);

-- Sectors of a communal map (carte communale, SECTEUR_CC): the "zones" of a CC, which has no written rules per zone.
CREATE TABLE secteurs_cc (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  dataset text NOT NULL,
  idurba text NOT NULL,
  cle text NOT NULL,
  -- The sector's label (C, NC, Cx...).
  libelle text NOT NULL CHECK (libelle <> ''),
  -- 01 open to building, 02 reserved for activities, 03 closed to building (save exceptions), 99 other.
  typesect text,
  -- 'Oui' when the map closes the sector to rebuilding as before.
  fermreco text,
  destdomi text,
  nomfic text,
  urlfic text,
  -- URLFIC, else NOMFIC under the import's base URL.
  fichier_url text,
  insee text,
  datappro date,
  datvalid date,
  geometrie jsonb NOT NULL CHECK (geometrie ->> 'type' IN ('Polygon', 'MultiPolygon')),
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
CREATE INDEX secteurs_cc_bbox ON secteurs_cc USING gist (box(point(bbox_xmin, bbox_ymin), point(bbox_xmax, bbox_ymax)));

-- Prescriptions (PRESCRIPTION_SURF/LIN/PCT) and information (INFO_SURF/LIN/PCT) laid over the zoning: one shape, their
-- CNIG type code (TYPEPSC / TYPEINF, two digits: `07`, `15`) and sub-type, their label and file.
CREATE TABLE surcharges_urbanisme (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  dataset text NOT NULL,
  idurba text NOT NULL,
  nature text NOT NULL CHECK (nature IN ('prescription', 'information')),
  -- The layer it came in: an import replaces the rows of the layers its package brings, and leaves the others.
  couche text NOT NULL CHECK (couche ~ '^(PRESCRIPTION|INFO)_(SURF|LIN|PCT)$'),
  cle text NOT NULL,
  libelle text NOT NULL CHECK (libelle <> ''),
  -- TXT: the short label of the map.
  txt text,
  -- TYPEPSC or TYPEINF, two digits whatever the DBF field's type (a numeric field loses the leading zero: 7 -> 07).
  type text,
  -- STYPEPSC or STYPEINF.
  sous_type text,
  nomfic text,
  urlfic text,
  -- URLFIC, else NOMFIC under the import's base URL, and the page of a `#page=` fragment.
  fichier_url text,
  fichier_page integer CHECK (fichier_page > 0),
  insee text,
  datvalid date,
  forme text NOT NULL CHECK (forme IN ('surface', 'ligne', 'point')),
  geometrie jsonb NOT NULL CHECK (
    geometrie ->> 'type' IN ('Polygon', 'MultiPolygon', 'LineString', 'MultiLineString', 'Point', 'MultiPoint')),
  bbox_xmin double precision NOT NULL,
  bbox_ymin double precision NOT NULL,
  bbox_xmax double precision NOT NULL,
  bbox_ymax double precision NOT NULL,
  -- Surfaces only.
  aire_m2 double precision CHECK (aire_m2 >= 0),
  maj_le timestamptz NOT NULL DEFAULT now(),
  CHECK (bbox_xmin <= bbox_xmax AND bbox_ymin <= bbox_ymax),
  UNIQUE (dataset, idurba, nature, cle),
  FOREIGN KEY (dataset, idurba) REFERENCES documents_urbanisme (dataset, idurba) ON DELETE CASCADE
);
CREATE INDEX surcharges_urbanisme_bbox ON surcharges_urbanisme
  USING gist (box(point(bbox_xmin, bbox_ymin), point(bbox_xmax, bbox_ymax)));
CREATE INDEX surcharges_urbanisme_type ON surcharges_urbanisme (dataset, nature, type);

-- Public-utility easements (servitudes d'utilité publique), CNIG SUP standard. A package (`lot`) is what a manager
-- publishes for one category over one territory (`110068012_PM3_28_20161104`: manager SIREN, category, département or
-- commune, date); its key drops the date, so that a newer edition of the package replaces the older. Identifiers
-- (IDSUP, IDACTE, IDGEN...) are unique within a package only: numbers in some (35.00), text in others, kept as text
-- (35.00 -> '35').
CREATE TABLE sup_lots (
  dataset text NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  lot text NOT NULL,
  -- The folder or file the package was read from, as named.
  dossier text NOT NULL,
  -- From the package's name when it follows the standard: manager SIREN, category, territory, date.
  gestionnaire_siren text,
  categorie text,
  territoire text,
  date_lot date,
  maj_le timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (dataset, lot)
);

CREATE TABLE sup_servitudes (
  dataset text NOT NULL,
  lot text NOT NULL,
  idsup text NOT NULL,
  -- AC1, PM1, I4, T7... upper case.
  categorie text,
  nomsup text,
  nomsuplitt text,
  descriptio text,
  idgest text,
  -- GESTIONNAIRE_SUP.NOMGEST: the managing body (never its correspondent, who may be a person).
  gestionnaire text,
  idintgest text,
  datemaj date,
  echnum integer,
  validegest boolean,
  estabroge boolean,
  modeprod text,
  quiprod text,
  docsource text,
  maj_le timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (dataset, lot, idsup),
  FOREIGN KEY (dataset, lot) REFERENCES sup_lots (dataset, lot) ON DELETE CASCADE
);
CREATE INDEX sup_servitudes_categorie ON sup_servitudes (dataset, categorie);

-- The acts instituting the easements, and which easement each act institutes (SERVITUDE_ACTE_SUP).
CREATE TABLE sup_actes (
  dataset text NOT NULL,
  lot text NOT NULL,
  idacte text NOT NULL,
  nomacte text,
  reference text,
  typeacte text,
  fichier text,
  decision text,
  datedecis date,
  datepub date,
  aplan boolean,
  maj_le timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (dataset, lot, idacte),
  FOREIGN KEY (dataset, lot) REFERENCES sup_lots (dataset, lot) ON DELETE CASCADE
);

CREATE TABLE sup_servitudes_actes (
  dataset text NOT NULL,
  lot text NOT NULL,
  idsup text NOT NULL,
  idacte text NOT NULL,
  PRIMARY KEY (dataset, lot, idsup, idacte),
  FOREIGN KEY (dataset, lot) REFERENCES sup_lots (dataset, lot) ON DELETE CASCADE
);

-- What generates an easement (a monument, a cemetery, a pipeline...) and the area it burdens (the assiette): surfaces,
-- lines or points, each tied to its easement (IDSUP, through the generator for an assiette) and its category.
CREATE TABLE sup_generateurs (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  dataset text NOT NULL,
  lot text NOT NULL,
  cle text NOT NULL,
  idgen text,
  idsup text,
  categorie text,
  nomgen text,
  typegen text,
  modegenere text,
  srcgeogen text,
  datesrcgen text,
  refbdext text,
  idbdext text,
  forme text NOT NULL CHECK (forme IN ('surface', 'ligne', 'point')),
  geometrie jsonb NOT NULL,
  bbox_xmin double precision NOT NULL,
  bbox_ymin double precision NOT NULL,
  bbox_xmax double precision NOT NULL,
  bbox_ymax double precision NOT NULL,
  aire_m2 double precision CHECK (aire_m2 >= 0),
  maj_le timestamptz NOT NULL DEFAULT now(),
  CHECK (bbox_xmin <= bbox_xmax AND bbox_ymin <= bbox_ymax),
  UNIQUE (dataset, lot, cle),
  FOREIGN KEY (dataset, lot) REFERENCES sup_lots (dataset, lot) ON DELETE CASCADE
);
CREATE INDEX sup_generateurs_bbox ON sup_generateurs
  USING gist (box(point(bbox_xmin, bbox_ymin), point(bbox_xmax, bbox_ymax)));

CREATE TABLE sup_assiettes (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  dataset text NOT NULL,
  lot text NOT NULL,
  cle text NOT NULL,
  idass text,
  idgen text,
  -- The easement of the assiette, through its generator (or its own field when the layer has one).
  idsup text,
  categorie text,
  nomass text,
  typeass text,
  modegeoass text,
  -- The buffer distance of a computed assiette (m), when given.
  paramcalc double precision,
  srcgeoass text,
  datesrcass text,
  forme text NOT NULL CHECK (forme IN ('surface', 'ligne', 'point')),
  geometrie jsonb NOT NULL,
  bbox_xmin double precision NOT NULL,
  bbox_ymin double precision NOT NULL,
  bbox_xmax double precision NOT NULL,
  bbox_ymax double precision NOT NULL,
  aire_m2 double precision CHECK (aire_m2 >= 0),
  maj_le timestamptz NOT NULL DEFAULT now(),
  CHECK (bbox_xmin <= bbox_xmax AND bbox_ymin <= bbox_ymax),
  UNIQUE (dataset, lot, cle),
  FOREIGN KEY (dataset, lot) REFERENCES sup_lots (dataset, lot) ON DELETE CASCADE
);
CREATE INDEX sup_assiettes_bbox ON sup_assiettes
  USING gist (box(point(bbox_xmin, bbox_ymin), point(bbox_xmax, bbox_ymax)));
CREATE INDEX sup_assiettes_categorie ON sup_assiettes (dataset, categorie);

-- The cadastre, Etalab edition (cadastre.data.gouv.fr, `cadastre-<commune>-parcelles.json.gz`): parcels, the pivot of
-- dossiers and of sales by parcel, under their 14-character id (INSEE 5 + prefix 3 + section 2 + number 4).
CREATE TABLE cadastre_parcelles (
  dataset text NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  id text NOT NULL CHECK (length(id) = 14),
  commune text NOT NULL,
  prefixe text NOT NULL,
  section text NOT NULL,
  -- Four digits, as in the id (the Etalab files write `37`).
  numero text NOT NULL,
  -- m², as the cadastre states it; null when the source has none.
  contenance integer,
  arpente boolean,
  cree_le date,
  modifie_le date,
  geometrie jsonb NOT NULL CHECK (geometrie ->> 'type' IN ('Polygon', 'MultiPolygon')),
  bbox_xmin double precision NOT NULL,
  bbox_ymin double precision NOT NULL,
  bbox_xmax double precision NOT NULL,
  bbox_ymax double precision NOT NULL,
  maj_le timestamptz NOT NULL DEFAULT now(),
  CHECK (bbox_xmin <= bbox_xmax AND bbox_ymin <= bbox_ymax),
  PRIMARY KEY (dataset, id)
);
CREATE INDEX cadastre_parcelles_bbox ON cadastre_parcelles
  USING gist (box(point(bbox_xmin, bbox_ymin), point(bbox_xmax, bbox_ymax)));
CREATE INDEX cadastre_parcelles_commune ON cadastre_parcelles (dataset, commune, section);

-- Buildings (`cadastre-<commune>-batiments.json.gz`): no identifier in the source, keyed per commune by outline.
CREATE TABLE cadastre_batiments (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  dataset text NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  commune text NOT NULL,
  cle text NOT NULL,
  -- 01: "bâti dur", 02: "bâti léger" (sheds, greenhouses).
  type text,
  nom text,
  cree_le date,
  modifie_le date,
  geometrie jsonb NOT NULL CHECK (geometrie ->> 'type' IN ('Polygon', 'MultiPolygon')),
  bbox_xmin double precision NOT NULL,
  bbox_ymin double precision NOT NULL,
  bbox_xmax double precision NOT NULL,
  bbox_ymax double precision NOT NULL,
  aire_m2 double precision NOT NULL CHECK (aire_m2 >= 0),
  maj_le timestamptz NOT NULL DEFAULT now(),
  CHECK (bbox_xmin <= bbox_xmax AND bbox_ymin <= bbox_ymax),
  UNIQUE (dataset, commune, cle)
);
CREATE INDEX cadastre_batiments_bbox ON cadastre_batiments
  USING gist (box(point(bbox_xmin, bbox_ymin), point(bbox_xmax, bbox_ymax)));

-- The planning status of communes: the national table of communes and the document in force (RNU, CC, PLU, PLUi,
-- POS, PSMV) with its dates, as the ministry publishes it (format in domain/urbanisme/statut-communes-import.ts).
-- With the imported packages it tells `rnu` (national rules) from `document_non_publie` (a document in force that
-- the Géoportail does not publish) (domain/urbanisme/statut-communes.ts).
CREATE TABLE communes_urbanisme (
  dataset text NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  insee text NOT NULL,
  commune text,
  type_document text CHECK (type_document IN ('RNU', 'CC', 'PLU', 'PLUi', 'POS', 'PSMV')),
  etat text,
  approuve_le date,
  idurba text,
  -- Whether the table says the document is published on the Géoportail; null when it does not say.
  publie_gpu boolean,
  maj_le timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (dataset, insee)
);
