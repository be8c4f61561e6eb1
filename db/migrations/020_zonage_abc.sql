-- The A/B/C housing zoning by commune, reference data of the Communes market domain, for the live data and the frozen
-- sandbox. Written only by the importer (domain/zonage-abc/import.ts), each edition replaced whole in one transaction;
-- read by zoneAbc (domain/zonage-abc/zone.ts).

CREATE TABLE zonage_abc (
  dataset text NOT NULL CHECK (dataset IN ('live', 'sandbox')),
  -- CODGEO: communes, not arrondissements (Paris is 75056; zoneAbc reads an arrondissement's zone there).
  insee text NOT NULL,
  -- The date the edition's zoning applies from, read from the name of the zone column ("Zone en vigueur depuis le 5
  -- juillet 2024").
  en_vigueur_le date NOT NULL,
  zone text NOT NULL CHECK (zone IN ('Abis', 'A', 'B1', 'B2', 'C')),
  commune text,
  -- The "Reclassement" column (Oui/Non): the commune changed zone with this edition; null when the file has none.
  reclassement boolean,
  PRIMARY KEY (dataset, insee, en_vigueur_le)
);
