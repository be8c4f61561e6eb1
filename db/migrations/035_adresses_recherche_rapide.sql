-- resoudre_adresse on real address strings right after a BAN import: as fast as the benchmark says.
--
-- 1. Nothing left in the text search's GIN indexes for a search to read through. GIN takes new entries into a pending
-- list, read through by every search until a VACUUM, an autoanalyze or 4 MB of entries: right after importing the real
-- BAN of Paris (its 7 571 streets in the list of adresses_recherche), a search bound to one arrondissement took 12.6 ms
-- in the database instead of 0.6 ms, 19 ms p50 over HTTP. The autovacuum does not come after a département's import
-- into a national base (its threshold is a fifth of the table's rows), so the list stayed; the benchmark ran a VACUUM
-- after its imports and never saw it. The BAN importer now merges the lists at the end of each file
-- (domain/adresses/import-ban.ts); the lists already there are merged now.
SELECT gin_clean_pending_list('adresses_recherche'::regclass);
SELECT gin_clean_pending_list('adresses_recherche_mots'::regclass);

-- 2. One round trip a reading. The search read its streets in a transaction opened for two settings (the trigram
-- threshold, generic plans), then closed: three round trips, each a wait for the scheduler on a busy machine. This
-- function carries the settings itself (restored when it returns) and keeps its statements' plans for the session,
-- generic: planned once per connection without the query's values, they read a bound search's streets through the
-- communes' keys of adresses_recherche whatever the name (a plan made for each query's values took, now and then, a
-- trigram's matches in the whole base instead; pg_trgm's estimate of a name's matches can be off by hundreds).
--
-- The streets and places of `p_communes` (INSEE codes; null: everywhere) whose indexed text (type, name, other forms)
-- matches `p_texte`: by trigrams at word similarity `p_seuil` ('trigrammes', the nearest first, 40 at most), by its
-- words written exactly ('mots', 200 at most, unsorted: sorting every `Rue de la Gare` of France would read them all),
-- or every street of type `p_type` ('type', bound searches only); then the number `p_numero` on each, and the communes
-- themselves when some are given. `origine` says which: 'lieu', 'numero' (`lieu`: the street or place it was found
-- on), 'commune'. domain/adresses/resoudre.ts ranks them.
CREATE FUNCTION svc_adresses_lieux(
  p_dataset text, p_texte text, p_type text, p_numero integer, p_communes text[], p_mode text, p_seuil real
) RETURNS TABLE (
  origine text, lieu text, cle_ban text, type text, numero integer, suffixe text, voie text, code_voie text,
  lieu_dit text, code_postal text, insee text, commune text, ancienne_commune_insee text, ancienne_commune_nom text,
  libelle text, lat double precision, lon double precision, type_position text, parcelles text[],
  certification boolean, type_voie text, nom_norm text, noms_alt text[]
)
LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_generic_plan
SET pg_trgm.word_similarity_threshold = 0.3
AS $$
#variable_conflict use_column
DECLARE
  -- As adresses_recherche keys the communes (db/migrations/017_adresses_normalisees.sql).
  cles text[] := ARRAY(SELECT p_dataset || ':' || c FROM unnest(p_communes) c);
  lieux adresses[];
BEGIN
  -- Local to this function: its SET clause restores the setting when it returns.
  PERFORM set_config('pg_trgm.word_similarity_threshold', p_seuil::text, true);
  -- One statement a form, each with its plan: the index an expression or a predicate reads must be written as is.
  -- Among equals, the asked type, then the shorter label: fewer words the query did not ask for.
  IF p_mode = 'trigrammes' AND p_communes IS NOT NULL THEN
    lieux := ARRAY(
      SELECT a FROM adresses a
       WHERE a.dataset = p_dataset AND a.type IN ('voie', 'lieu_dit') AND (a.dataset || ':' || a.insee) = ANY (cles)
         AND p_texte <% a.recherche
       ORDER BY word_similarity(p_texte, a.recherche) DESC, a.type_voie IS NOT DISTINCT FROM p_type DESC,
                length(a.libelle), a.cle_ban
       LIMIT 40);
  ELSIF p_mode = 'trigrammes' THEN
    lieux := ARRAY(
      SELECT a FROM adresses a
       WHERE a.dataset = p_dataset AND a.type IN ('voie', 'lieu_dit') AND p_texte <% a.recherche
       ORDER BY word_similarity(p_texte, a.recherche) DESC, a.type_voie IS NOT DISTINCT FROM p_type DESC,
                length(a.libelle), a.cle_ban
       LIMIT 40);
  ELSIF p_mode = 'mots' AND p_communes IS NOT NULL THEN
    lieux := ARRAY(
      SELECT a FROM adresses a
       WHERE a.dataset = p_dataset AND a.type IN ('voie', 'lieu_dit') AND (a.dataset || ':' || a.insee) = ANY (cles)
         AND to_tsvector('simple', a.recherche) @@ plainto_tsquery('simple', p_texte)
       LIMIT 200);
  ELSIF p_mode = 'mots' THEN
    lieux := ARRAY(
      SELECT a FROM adresses a
       WHERE a.dataset = p_dataset AND a.type IN ('voie', 'lieu_dit')
         AND to_tsvector('simple', a.recherche) @@ plainto_tsquery('simple', p_texte)
       LIMIT 200);
  ELSIF p_mode = 'type' AND p_communes IS NOT NULL THEN
    lieux := ARRAY(
      SELECT a FROM adresses a
       WHERE a.dataset = p_dataset AND a.type IN ('voie', 'lieu_dit') AND (a.dataset || ':' || a.insee) = ANY (cles)
         AND a.type_voie = p_type
       ORDER BY word_similarity(p_texte, a.recherche) DESC, length(a.libelle), a.cle_ban
       LIMIT 40);
  ELSE
    RAISE EXCEPTION 'svc_adresses_lieux : mode % inconnu (ou sans communes)', p_mode;
  END IF;

  RETURN QUERY
    SELECT 'lieu', NULL::text, l.cle_ban, l.type, l.numero, l.suffixe, l.voie, l.code_voie, l.lieu_dit, l.code_postal,
           l.insee, l.commune, l.ancienne_commune_insee, l.ancienne_commune_nom, l.libelle, l.lat, l.lon,
           l.type_position, l.parcelles, l.certification, l.type_voie, l.nom_norm, l.noms_alt
      FROM unnest(lieux) l;

  IF p_numero IS NOT NULL THEN
    RETURN QUERY
      SELECT DISTINCT ON (n.cle_ban) 'numero', n.*
        FROM (
          SELECT l.cle_ban AS lieu, a.cle_ban, a.type, a.numero, a.suffixe, a.voie, a.code_voie, a.lieu_dit,
                 a.code_postal, a.insee, a.commune, a.ancienne_commune_insee, a.ancienne_commune_nom, a.libelle, a.lat,
                 a.lon, a.type_position, a.parcelles, a.certification, l.type_voie, l.nom_norm, l.noms_alt
            FROM unnest(lieux) l
            JOIN adresses a ON a.dataset = p_dataset AND a.insee = l.insee AND a.code_voie = l.code_voie
                           AND a.numero = p_numero
           WHERE l.type = 'voie' AND a.type = 'numero' AND starts_with(a.cle_ban, l.cle_ban || '_')
          UNION ALL
          SELECT l.cle_ban, a.cle_ban, a.type, a.numero, a.suffixe, a.voie, a.code_voie, a.lieu_dit, a.code_postal,
                 a.insee, a.commune, a.ancienne_commune_insee, a.ancienne_commune_nom, a.libelle, a.lat, a.lon,
                 a.type_position, a.parcelles, a.certification, l.type_voie, l.nom_norm, l.noms_alt
            FROM unnest(lieux) l
            JOIN adresses a ON a.dataset = p_dataset AND a.insee = l.insee AND a.lieu_dit = l.lieu_dit
                           AND a.numero = p_numero
           WHERE l.type = 'lieu_dit' AND a.type = 'numero') n;
  END IF;

  IF p_communes IS NOT NULL THEN
    RETURN QUERY
      SELECT 'commune', NULL::text, a.cle_ban, a.type, a.numero, a.suffixe, a.voie, a.code_voie, a.lieu_dit,
             a.code_postal, a.insee, a.commune, a.ancienne_commune_insee, a.ancienne_commune_nom, a.libelle, a.lat,
             a.lon, a.type_position, a.parcelles, a.certification, NULL::text, NULL::text, NULL::text[]
        FROM adresses a
       WHERE a.dataset = p_dataset AND a.type = 'commune' AND a.cle_ban = ANY (p_communes);
  END IF;
END
$$;
