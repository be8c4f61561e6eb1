-- A lake edition is the rows of its dataset as the registry declared it when the file was written. A release that
-- changes a declaration (a column added, an expression changed) makes the files written before it wrong for what the
-- registry now says, though their tables were not written since: the edition records the declaration it was built
-- from (a digest of its SELECT and column types), and serves only while the registry still says the same. Editions
-- built before this column are stale (null) and rebuilt by the next refresh.
ALTER TABLE jeux_lac ADD COLUMN declaration text;
