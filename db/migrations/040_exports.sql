-- Exports: editions of the datasets as files (Parquet, csv.gz), the export rights of contract organisations and the
-- log of downloads (domain/exports/).

-- One edition of a dataset: the files of one day in one format, for one perimeter. `contrat`: the full file, opened to
-- the organisations whose contract perimeter holds the dataset; `echantillon`: the demonstration territory's rows,
-- opened to every contract organisation. An edition whose volume failed its check is kept with its reason
-- (`retenue`) and never listed.
CREATE TABLE exports_editions (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  jeu text NOT NULL,
  date date NOT NULL,
  format text NOT NULL CHECK (format IN ('parquet', 'csv.gz', 'geoparquet', 'pmtiles')),
  perimetre text NOT NULL CHECK (perimetre IN ('contrat', 'echantillon')),
  statut text NOT NULL CHECK (statut IN ('listee', 'retenue')),
  raison text,
  lignes bigint CHECK (lignes >= 0),
  lignes_source bigint CHECK (lignes_source >= 0),
  taille_octets bigint CHECK (taille_octets >= 0),
  sha256 text CHECK (sha256 ~ '^[0-9a-f]{64}$'),
  -- Storage keys (lib/storage.ts) of the data file, its dictionary and its quality sheet.
  cle_donnees text NOT NULL,
  cle_dictionnaire text NOT NULL,
  cle_fiche_qualite text NOT NULL,
  taille_dictionnaire bigint,
  taille_fiche_qualite bigint,
  sha256_dictionnaire text,
  sha256_fiche_qualite text,
  dictionnaire jsonb NOT NULL,
  fiche_qualite jsonb NOT NULL,
  genere_le timestamptz NOT NULL DEFAULT now(),
  UNIQUE (jeu, date, format, perimetre),
  CHECK (statut = 'listee' OR raison IS NOT NULL)
);
-- The listing reads the newest listed editions of some datasets.
CREATE INDEX exports_editions_listees ON exports_editions (jeu, date DESC) WHERE statut = 'listee';

-- The export rights of an organisation's contract, one row per dataset and period: a right is closed (`ferme_le`),
-- never deleted, so that the rows are also the record of every change made through the admin API.
CREATE TABLE exports_droits (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  organisation_id uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
  jeu text NOT NULL,
  ouvert_le timestamptz NOT NULL DEFAULT now(),
  ferme_le timestamptz,
  -- Why it was opened, and closed, as the administrator wrote it (contract number, end of contract…).
  motif_ouverture text,
  motif_fermeture text,
  CHECK (ferme_le IS NULL OR ferme_le >= ouvert_le)
);
CREATE UNIQUE INDEX exports_droits_actifs ON exports_droits (organisation_id, jeu) WHERE ferme_le IS NULL;

-- Each download asked: who, which edition and file, when.
CREATE TABLE exports_telechargements (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  organisation_id uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
  cle_id uuid,
  edition_id bigint NOT NULL REFERENCES exports_editions (id) ON DELETE CASCADE,
  fichier text NOT NULL CHECK (fichier IN ('donnees', 'dictionnaire', 'fiche_qualite')),
  requete text,
  le timestamptz NOT NULL DEFAULT now(),
  expire_le timestamptz NOT NULL
);
CREATE INDEX exports_telechargements_organisation ON exports_telechargements (organisation_id, le DESC);
