-- Documents of a reading in progress (lire_document): prepared once (fetched, recognised, PDF text per page, images
-- normalised) for the model reading, then deleted by the workflow at its end, whatever happened. Only ids travel
-- through Temporal, so no document content reaches its history. UNLOGGED: these rows are never worth a WAL record
-- or a replica, and a crash empties the table rather than keeping content around. The cascade from the task row is
-- a second safety: the request deletes that row when it ends, and the documents go with it.
CREATE UNLOGGED TABLE lectures_documents (
  tache_id text NOT NULL REFERENCES taches (id) ON DELETE CASCADE,
  rang smallint NOT NULL CHECK (rang BETWEEN 1 AND 5),
  nom text NOT NULL,
  type text NOT NULL CHECK (type IN ('pdf', 'image')),
  format text NOT NULL CHECK (format IN ('pdf', 'jpeg', 'png', 'webp')),
  taille_octets integer NOT NULL CHECK (taille_octets >= 0),
  nb_pages integer,
  -- Text of each page read (PDF), null for an image.
  pages jsonb,
  scanne boolean NOT NULL DEFAULT false,
  -- [{page, mime, base64}]: the image file, or the rendered pages of a PDF without text.
  images jsonb NOT NULL DEFAULT '[]',
  -- What could not be prepared, said in the reading's limits.
  notes jsonb NOT NULL DEFAULT '[]',
  cree_le timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tache_id, rang)
);
