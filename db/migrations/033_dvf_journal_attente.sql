-- The DVF imports that owe the journal of address novelties (030_flux_adresses.sql) their new sales. The DVF importer
-- commits its sales in batches of its own and appends their novelties in one more transaction at its end
-- (domain/dvf/import.ts): an import that dies between the two would lose them. So it writes this row, with the time it
-- started, before its first sale, and deletes it in the transaction that appends its novelties. A row found by the next
-- import says that the sales that entered since `depuis` may be missing from the journal: that import appends them too
-- (the journal's unique key keeps those already there from entering twice).
--
-- One row per dataset: its imports run one at a time, and an import that finds a row keeps its earlier `depuis`.
CREATE TABLE dvf_journal_attente (
  dataset text PRIMARY KEY CHECK (dataset IN ('live', 'sandbox')),
  depuis timestamptz NOT NULL
);
