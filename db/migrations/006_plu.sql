-- Rules PDFs read once and kept as page text (the quotation check reads them again), and the readings cache.
CREATE TABLE reglements_pdf (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  url text NOT NULL UNIQUE,
  sha256 text NOT NULL,
  taille_octets integer NOT NULL,
  pages jsonb NOT NULL,
  nb_pages integer NOT NULL,
  scanne boolean NOT NULL,
  recupere_le timestamptz NOT NULL DEFAULT now()
);

-- One reading per document content, zone and reading version: a second reading of the zone needs no model call.
CREATE TABLE lectures_plu (
  document_sha256 text NOT NULL,
  zone text NOT NULL,
  version integer NOT NULL,
  contenu jsonb NOT NULL,
  modele text NOT NULL,
  extrait_le timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (document_sha256, zone, version)
);
