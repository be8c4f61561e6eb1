-- resoudre_adresse reads addresses as the files and people write them (domain/adresses/normaliser.ts): a street's type
-- apart from its name (a Boulevard is not a Rue), AFNOR abbreviations, saints, ordinals, Roman numerals spelt one
-- way, and the search bound to the communes of the postal or INSEE code given. The normalisation is one TypeScript
-- function run by the BAN importer, whose results are stored here, and by the search on the query.
--
-- Rows imported before this migration have none of these columns: the text search does not find their streets until
-- the BAN is imported again (`npm run import -- ban …`: the import rewrites every row whose columns changed).

-- A GIN index over a commune's code and trigrams together.
CREATE EXTENSION IF NOT EXISTS btree_gin;

ALTER TABLE adresses
  -- Street type of a street or lieu-dit (boulevard, rue, impasse, lieu dit…); null when the name has none.
  ADD COLUMN type_voie text,
  -- The name without its type, canonical words (`de charonne`).
  ADD COLUMN nom_norm text,
  -- The other forms of the name that say more: the BAN's nom_afnor (abbreviated to 32 characters) and alias.
  ADD COLUMN noms_alt text[],
  -- What the search indexes read: type, name and other forms (not the commune: the search binds communes apart).
  ADD COLUMN recherche text;

-- Streets and lieux-dits by commune and trigrams in one index scan: a search bound to the communes of a postal code
-- (or of the commune it names) reads the trigrams of those communes' streets only, whatever the size of the base:
-- the posting list of a trigram as common as ` sa` (saint) is crossed with the commune's, not read through. The
-- commune's key is its dataset and INSEE code together (`live:33234`), a key the btree of numbers
-- (adresses_insee_voie) cannot answer: with the bare INSEE code, the planner crossed that btree with the trigrams of
-- the whole base when a postal code covers several communes, and the cost grew with the base (measured: 60 ms at
-- 5 million addresses). An unbound search reads the trigram column alone. Expression and predicate must be written as
-- is in the queries.
CREATE INDEX adresses_recherche ON adresses USING gin ((dataset || ':' || insee), recherche gin_trgm_ops)
  WHERE type IN ('voie', 'lieu_dit');

-- The same streets and places by the words of their text, written exactly: a search of the whole base (no commune
-- given nor recognised) reads the posting lists of its words, not those of their trigrams, which are everywhere.
CREATE INDEX adresses_recherche_mots ON adresses USING gin (to_tsvector('simple', recherche))
  WHERE type IN ('voie', 'lieu_dit');

-- Replaced by the indexes above.
DROP INDEX adresses_texte_trgm_hors_numeros;
DROP FUNCTION svc_texte_adresse(text, text, text, text);
