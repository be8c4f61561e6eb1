-- A feed page serves a thousand listings in the list format, three numbers of which come from their analysis
-- (`score`, `rendement_brut_pct`, `rendement_net_pct`). The analysis is a jsonb of about 1.7 KB that PostgreSQL
-- stores compressed: every read of one of its members decompressed it whole, three times a listing (about 20 µs each
-- on a 2-core machine, most of what PostgreSQL spent on a page). Kept beside it here, written with it, read as they
-- are (domain/annonces/fiche.ts, lireAnnoncesEnListe).
ALTER TABLE annonces
  ADD COLUMN analyse_score double precision GENERATED ALWAYS AS ((resultat_analyse->>'score')::double precision) STORED,
  ADD COLUMN analyse_rendement_brut_pct double precision
    GENERATED ALWAYS AS ((resultat_analyse->>'rendement_brut_pct')::double precision) STORED,
  ADD COLUMN analyse_rendement_net_pct double precision
    GENERATED ALWAYS AS ((resultat_analyse->>'rendement_net_pct')::double precision) STORED;
