-- DVF mutations partitioned by dataset and vintage: a range on (dataset, millesime), one partition a pair, named
-- dvf_mutations_<dataset>_<year> (domain/dvf/import.ts creates them). Why: the importer loads a vintage the dataset
-- does not have yet into a table of its own, without indexes, and attaches it once full. PostgreSQL then builds each
-- index in one sorted pass instead of maintaining it row by row (bench/RESULTS.md, "DVF"), and readers see a vintage
-- appear whole, never half loaded. A failed import leaves nothing of such a vintage behind.
--
-- What the sorts cost decides the rest (measured on 570 000 mutations, bench/RESULTS.md):
-- - codes and ids compare byte by byte (COLLATE "C"): they are not words of a language, and the C collation lets
--   PostgreSQL sort them on abbreviated keys, twice as fast as the database's collation;
-- - the indexes leave `dataset` out: a partition holds one dataset, the partition bounds already choose it;
-- - parcels: most mutations have one parcel, their main one: a btree on it, and a GIN on the parcels of the others
--   only (a third of the cost of a GIN on every mutation). domain/dvf/operations.ts (surParcelles) reads both.
-- - locaux and terrains are text: JSON written by the importer only (JSON.stringify), served as written, cast to
--   json where read (domain/dvf/operations.ts, COLONNES). PostgreSQL's check of json input was a quarter of the
--   COPY's cost.
--
-- The primary key must hold the partition columns. The vintage is the year of the mutation, which Etalab's
-- id_mutation starts with (2021-527101) and the importer's DGFiP ids too: an id stays in one vintage, so
-- (dataset, id_mutation) stays unique. id_mutation comes first, for lookups by id.
-- The dataset is a partition column, set when the table is made: given its collation on the table copied.
ALTER TABLE dvf_mutations ALTER dataset TYPE text COLLATE "C";
CREATE TABLE dvf_mutations_partitionnees (
  LIKE dvf_mutations INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING COMMENTS
) PARTITION BY RANGE (dataset, millesime);
ALTER TABLE dvf_mutations_partitionnees
  ALTER id_mutation TYPE text COLLATE "C",
  ALTER insee TYPE text COLLATE "C",
  ALTER code_voie TYPE text COLLATE "C",
  ALTER cle_ban TYPE text COLLATE "C",
  ALTER parcelle_principale TYPE text COLLATE "C",
  ALTER parcelles TYPE text[] COLLATE "C",
  ALTER locaux TYPE text,
  ALTER terrains TYPE text,
  ADD PRIMARY KEY (id_mutation, dataset, millesime);

DO $$
DECLARE
  p record;
BEGIN
  FOR p IN SELECT DISTINCT dataset, millesime FROM dvf_mutations LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF dvf_mutations_partitionnees FOR VALUES FROM (%L, %s) TO (%L, %s)',
                   'dvf_mutations_' || p.dataset || '_' || p.millesime, p.dataset, p.millesime, p.dataset,
                   p.millesime + 1);
  END LOOP;
END $$;
INSERT INTO dvf_mutations_partitionnees SELECT * FROM dvf_mutations;
DROP TABLE dvf_mutations;
ALTER TABLE dvf_mutations_partitionnees RENAME TO dvf_mutations;
ALTER INDEX dvf_mutations_partitionnees_pkey RENAME TO dvf_mutations_pkey;

-- The reads of 009 (see the reasons of each index there), on these columns.
CREATE INDEX dvf_mutations_insee_date ON dvf_mutations (insee, date_mutation DESC, id_mutation DESC);
CREATE INDEX dvf_mutations_parcelle ON dvf_mutations (parcelle_principale);
CREATE INDEX dvf_mutations_parcelles ON dvf_mutations USING gin (parcelles) WHERE cardinality(parcelles) > 1;
CREATE INDEX dvf_mutations_cle_ban ON dvf_mutations (cle_ban) WHERE cle_ban IS NOT NULL;
CREATE INDEX dvf_mutations_numero ON dvf_mutations (insee, code_voie, adresse_numero) WHERE adresse_numero IS NOT NULL;
CREATE INDEX dvf_mutations_cellule ON dvf_mutations
  ((floor((lat + 90) * 200)::bigint * 72001 + floor((lon + 180) * 200)::bigint));
