-- What the listings say of a market, read by operations of other domains (domain/annonces/marche.ts): secteur's
-- private sellers and its pre-market « ni en vente », the listings of estimer_bien, the listing group of faits_adresse.
-- The look-ups by commune, type and surface use annonces_commune_type (029); these are the others.

-- The latest snapshot applied to a dataset's listings: the date the windows of drops and withdrawals end at.
CREATE INDEX annonces_vu ON annonces (dataset, vu_le);

-- The listings attached to a BAN number: faits_adresse (the address, and the numbers within 100 m), the pre-market.
CREATE INDEX annonces_cle_ban ON annonces (dataset, cle_ban) WHERE cle_ban IS NOT NULL;

-- The listings online of a postal code or a département, by kind of seller: secteur.
CREATE INDEX annonces_actives_lieu ON annonces (dataset, departement, code_postal, type_vendeur) WHERE statut = 'actif';
