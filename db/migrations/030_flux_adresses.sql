-- The journal of address novelties, read by GET /flux/adresses (domain/flux/adresses.ts) and written by the importers
-- in the transactions that write what causes them (domain/flux/journal-adresses.ts says which, and how).
--
-- Append-only: a row is never updated. `id` is the order of the feed: a sequence, never a timestamp, and writers take a
-- transaction-level advisory lock of the journal (per dataset) before drawing ids, held until they commit, so that ids
-- become visible in their order and a reader past id N never misses a smaller id committed later.
CREATE TABLE journal_adresses (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  dataset text NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  genre text NOT NULL CHECK (genre IN ('dpe', 'audit', 'permis', 'societe_civile', 'vente')),
  -- The key of the source row (DPE number, audit number, permit type and number, BODACC notice id, DVF mutation id):
  -- one novelty per row, whatever the re-imports.
  reference text NOT NULL,
  cle_ban text NOT NULL,
  insee text NOT NULL,
  code_postal text,
  -- The date the source gives the novelty: DPE or audit established, permit authorised, notice published, sale signed.
  date_source date NOT NULL,
  -- The fields of the genre (domain/flux/journal-adresses.ts); no natural person is ever named in them.
  detail jsonb NOT NULL,
  -- The public source, as the feed names it.
  source text NOT NULL,
  -- Taken after the lock: increasing with the id.
  entree_le timestamptz NOT NULL DEFAULT clock_timestamp(),
  UNIQUE (dataset, genre, reference)
);

-- Reading by id, whole or under one filter (the others are checked on the rows so found).
CREATE INDEX journal_adresses_id ON journal_adresses (dataset, id);
CREATE INDEX journal_adresses_insee ON journal_adresses (dataset, insee, id);
CREATE INDEX journal_adresses_code_postal ON journal_adresses (dataset, code_postal, id) WHERE code_postal IS NOT NULL;
CREATE INDEX journal_adresses_genre ON journal_adresses (dataset, genre, id);
CREATE INDEX journal_adresses_entree ON journal_adresses (dataset, entree_le);

-- When a sale first entered the database. The DVF importer writes a batch's new mutations by COPY, in transactions of
-- its own, and attaches them to BAN numbers once the whole file is read: its novelties are the mutations of the
-- import that entered since it started, once attached (domain/dvf/import.ts). An update leaves it as it was. The
-- sales already there take the time of this migration (a constant default: no rewrite of the table).
ALTER TABLE dvf_mutations ADD COLUMN cree_le timestamptz NOT NULL DEFAULT now();
