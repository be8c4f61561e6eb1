import type { Dataset } from '../platform/sandbox.ts';

/**
 * The declarative registry of the datasets (`jeu`) of the specification: each of its 31 names declared once, here.
 * The schema (`schema_jeu`), the filters and their SQL, the sort and its cursors, the aggregates, the OpenAPI enums
 * and the full-file exports (sourceComplete) all come from these declarations; nothing a client sends is written into
 * SQL, only column expressions declared here, values going as parameters.
 *
 * A dataset is a SELECT over the tables the domains already fill (db/migrations): `depuis` is its FROM (aliases and
 * joins), `conditions` the rows it keeps, among them the removal of private individuals (what `retrait` says), and
 * each column an expression over those aliases. A column marked `indexee` is backed by a real index whose leading
 * column (after `dataset`) is that expression: a filter on it is an index lookup (migration 039 adds the missing ones).
 * The sort key is unique and never empty (a tie-break column where needed), so that a keyset cursor is exact.
 */

export type TypeColonne = 'texte' | 'entier' | 'nombre' | 'booleen' | 'date' | 'horodatage' | 'json';
export const OPERATEURS = ['eq', 'in', 'lt', 'lte', 'gt', 'gte', 'entre', 'prefixe', 'nul'] as const;
export type Operateur = (typeof OPERATEURS)[number];
export type Nature = 'calcule_svc' | 'public_brut';
export type Territoire = 'commune' | 'code_postal' | 'departement' | 'iris';

export interface Colonne {
  nom: string;
  type: TypeColonne;
  /** The SQL expression over the dataset's aliases (declared here, never built from input). */
  sql: string;
  description?: string;
  /** Backed by an index whose leading column it is (after the dataset). */
  indexee?: boolean;
  /** The operators a filter may use; by default those of its type (OPERATEURS_PAR_TYPE). */
  operateurs?: readonly Operateur[];
  /** May be a key of `grouper`; by default texte, entier, booleen and date columns. */
  groupable?: boolean;
  /** A territory a pk_test_ key may only name inside the frozen sandbox. */
  territoire?: Territoire;
}

export interface JeuDisponible {
  nom: string;
  titre: string;
  description: string;
  nature: Nature;
  /** FROM clause with `{dataset}` where the dataset literal goes ('live' or 'sandbox', never from input). */
  depuis: string;
  /** The same rows for an aggregate, where another FROM is cheaper for PostgreSQL (the columns are the same SQL). */
  depuisAgregat?: string;
  /** Conditions every row meets, with `{dataset}` likewise: the dataset, the perimeter, the removal of individuals. */
  conditions: string[];
  colonnes: Colonne[];
  /** Unique, never empty: the cursor carries its values. */
  cle_tri: string[];
  /** Too large to read without a filter on an indexed column. */
  large: boolean;
  /** Not read 20:30-midnight Paris time (heavy reads kept off the evening load). */
  creneau_lourd: boolean;
  /** What the removal of private individuals does to this dataset's rows. */
  retrait: string;
  /**
   * A SQL returning one row `{ v }`: the dataset's estimated volume, where the planner's estimate of the source is
   * wrong (rows unnested from JSON, which it counts 100 a mutation). By default, that estimate.
   */
  volume?: string;
  /** A SQL returning one row `{ d }` (text AAAA-MM-JJ or null): the date of the data, `{dataset}` likewise. */
  donnees_du: string | null;
  source: string;
}

export interface JeuIndisponible {
  nom: string;
  titre: string;
  description: string;
  nature: Nature;
  indisponible: string;
}

export type Jeu = JeuDisponible | JeuIndisponible;

export const OPERATEURS_PAR_TYPE: Record<TypeColonne, readonly Operateur[]> = {
  texte: ['eq', 'in', 'lt', 'lte', 'gt', 'gte', 'entre', 'prefixe', 'nul'],
  entier: ['eq', 'in', 'lt', 'lte', 'gt', 'gte', 'entre', 'nul'],
  nombre: ['eq', 'in', 'lt', 'lte', 'gt', 'gte', 'entre', 'nul'],
  date: ['eq', 'in', 'lt', 'lte', 'gt', 'gte', 'entre', 'nul'],
  horodatage: ['lt', 'lte', 'gt', 'gte', 'entre', 'nul'],
  booleen: ['eq', 'nul'],
  json: ['nul'],
};

export function operateursDe(c: Colonne): readonly Operateur[] {
  return c.operateurs ?? OPERATEURS_PAR_TYPE[c.type];
}

export function groupable(c: Colonne): boolean {
  return c.groupable ?? ['texte', 'entier', 'booleen', 'date'].includes(c.type);
}

export function mesurable(c: Colonne): boolean {
  return c.type === 'entier' || c.type === 'nombre';
}

// ---------------------------------------------------------------------------------------------------------------------
// Column shorthands.
// ---------------------------------------------------------------------------------------------------------------------

type Extra = Omit<Colonne, 'nom' | 'type' | 'sql'>;
const col =
  (type: TypeColonne) =>
  (nom: string, sql: string, extra: Extra = {}): Colonne => ({ nom, type, sql, ...extra });
const t = col('texte');
const e = col('entier');
const n = col('nombre');
const b = col('booleen');
const d = col('date');
const h = col('horodatage');
const j = col('json');

// ---------------------------------------------------------------------------------------------------------------------
// Listings: annonces, annonces_archives, biens, diffusions, evenements_prix.
// ---------------------------------------------------------------------------------------------------------------------

const RETRAIT_ANNONCES =
  'Un vendeur particulier (ou dont le portail ne dit pas qu’il est professionnel) n’est jamais nommé : son identité n’est pas enregistrée à l’import, ses champs vendeur_* sont vides, et les coordonnées et noms précédés d’une civilité de son titre et de sa description sont masqués. Un professionnel est nommé avec son enseigne, son SIREN et les coordonnées professionnelles que l’annonce publie.';

/** The seller fields, served for a professional only (the importer keeps nothing else; said again here). */
const pro = (expr: string) => `CASE WHEN a.type_vendeur = 'pro' THEN ${expr} END`;

function colonnesAnnonce(): Colonne[] {
  return [
    t('id', 'a.id', { indexee: true, description: 'Identifiant de l’annonce (portail:identifiant).' }),
    t('portail', 'a.portail', { description: 'Portail relevé.' }),
    t('bien_uid', 'a.bien_uid', { indexee: true, description: 'Le bien, dédoublonné entre portails.' }),
    t('statut', 'a.statut', { description: 'actif (en ligne) ou retire (retirée du portail).' }),
    t('type', 'a.type', { description: 'appartement, maison ou immeuble.' }),
    t('neuf_ancien', 'a.neuf_ancien', { description: 'neuf ou ancien, null quand l’annonce ne le dit pas.' }),
    t('insee', 'a.insee', { indexee: true, territoire: 'commune', description: 'Code INSEE de la commune.' }),
    t('code_postal', 'a.code_postal', { territoire: 'code_postal', description: 'Code postal.' }),
    t('commune', 'a.commune', { description: 'Commune.' }),
    t('departement', 'a.departement', { territoire: 'departement', description: 'Département.' }),
    t('cle_ban', 'a.cle_ban', { indexee: true, description: 'Clé BAN de l’adresse du bien, quand elle est connue.' }),
    t('precision_position', 'a.precision_position', {
      description: 'Précision de la position : adresse, approchee, centre_commune ou inconnue.',
    }),
    n('lat', 'a.lat', { description: 'Latitude WGS84 (degrés).' }),
    n('lon', 'a.lon', { description: 'Longitude WGS84 (degrés).' }),
    n('prix', 'a.prix', { description: 'Prix affiché (€).' }),
    n('surface', 'a.surface', { description: 'Surface habitable (m²).' }),
    n('prix_m2', 'CASE WHEN a.surface > 0 THEN round((a.prix / a.surface)::numeric, 2)::float8 END', {
      description: 'Prix au m² : prix affiché divisé par la surface (€/m²).',
    }),
    e('pieces', 'a.pieces', { description: 'Pièces.' }),
    e('chambres', 'a.chambres', { description: 'Chambres.' }),
    e('etage', 'a.etage', { description: 'Étage (0 : rez-de-chaussée).' }),
    n('terrain_m2', 'a.terrain_portail_m2', { description: 'Surface du terrain annoncée par le portail (m²).' }),
    e('annee_construction', 'a.annee_construction', { description: 'Année de construction annoncée.' }),
    t('dpe_etiquette', "a.dpe->>'etiquette'", { description: 'Étiquette énergie annoncée (A-G).' }),
    t('type_vendeur', 'a.type_vendeur', { description: 'pro, particulier ou inconnu.' }),
    t('vendeur_nom', pro("a.annonceur->>'nom'"), { description: 'Nom du vendeur professionnel ; null sinon.' }),
    t('vendeur_enseigne', pro("a.annonceur->>'enseigne'"), { description: 'Enseigne du professionnel ; null sinon.' }),
    t('vendeur_siren', pro("a.annonceur->>'siren'"), { description: 'SIREN du professionnel ; null sinon.' }),
    t('vendeur_telephone', pro("a.annonceur->>'telephone'"), {
      description: 'Téléphone professionnel publié par l’annonce ; null sinon.',
    }),
    t('vendeur_email', pro("a.annonceur->>'email'"), {
      description: 'Courriel professionnel publié par l’annonce ; null sinon.',
    }),
    t('mandat', pro("a.annonceur->>'mandat'"), { description: 'Mandat du professionnel : simple ou exclusif.' }),
    t('titre', 'a.titre', {
      operateurs: ['nul'],
      description: 'Titre de l’annonce ; celui d’un vendeur particulier, ses coordonnées masquées à l’import.',
    }),
    t('description', 'a.description', {
      operateurs: ['nul'],
      description: 'Texte de l’annonce ; celui d’un vendeur particulier, ses coordonnées masquées à l’import.',
    }),
    d('premiere_parution', 'a.premiere_parution', { description: 'Première parution.' }),
    h('vu_le', 'a.vu_le', { description: 'Dernier relevé qui a vu l’annonce.' }),
    h('retire_le', 'a.retire_le', { description: 'Retrait du portail ; null tant qu’elle est en ligne.' }),
    n('score', 'a.analyse_score', { description: 'Score de l’analyse du service ; null avant l’analyse.' }),
    n('rendement_brut_pct', 'a.analyse_rendement_brut_pct', {
      description: 'Rendement brut estimé par l’analyse (%) ; null avant l’analyse.',
    }),
  ];
}

const annonce = (nom: string, titre: string, description: string, condition: string): JeuDisponible => ({
  nom,
  titre,
  description,
  nature: 'calcule_svc',
  depuis: 'annonces a',
  conditions: ["a.dataset = '{dataset}'", "a.statut <> 'masque'", condition],
  colonnes: colonnesAnnonce(),
  cle_tri: ['id'],
  large: true,
  creneau_lourd: nom === 'annonces_archives',
  retrait: RETRAIT_ANNONCES,
  donnees_du:
    "SELECT to_char(max(vu_le) AT TIME ZONE 'Europe/Paris', 'YYYY-MM-DD') AS d FROM annonces WHERE dataset = '{dataset}'",
  source: 'annonces des portails (relevés)',
});

// ---------------------------------------------------------------------------------------------------------------------
// DVF.
// ---------------------------------------------------------------------------------------------------------------------

/**
 * One row of `dvf` per local sold and per land subdivision, as the mutation's lines carry them once folded
 * (domain/dvf/fold.ts): Etalab writes a parcel's locals times its land subdivisions, one line each (a house on three
 * crop types comes on three lines); the service keeps each local once (equal locals counted as often as they appear
 * beside one subdivision) and each subdivision once. So a row is a local (type_local given, no land) or a land
 * subdivision (type_local empty, nature_culture and surface_terrain given); a mutation with neither has one row. The
 * mutation's fields (value, date, address of its main line, position) are repeated on each of its rows, as Etalab does.
 */
/**
 * The mutation's locals and land subdivisions unnested, as `x.loc` and `x.ter`, of type `type`. Pages of rows read
 * them as jsonb: a row reads up to eight fields of its local or subdivision, and `->>` on json parses the text again
 * for each (measured on a real Paris commune, a 1,000-row page: 24 ms of SQL as json, 11 ms as jsonb). Aggregates
 * read them as json: they read one field at most, and converting every mutation's arrays to jsonb cost more than it
 * saved (the same commune's aggregates 200-300 ms as json, 300-440 ms as jsonb). The columns read either.
 */
const dvfLignes = (type: 'json' | 'jsonb') => `dvf_mutations m CROSS JOIN LATERAL (
    SELECT l.rang, l.e AS loc, NULL::${type} AS ter
      FROM ${type}_array_elements(m.locaux::${type}) WITH ORDINALITY AS l(e, rang)
    UNION ALL
    SELECT ${type}_array_length(m.locaux::${type}) + t.rang, NULL, t.e
      FROM ${type}_array_elements(m.terrains::${type}) WITH ORDINALITY AS t(e, rang)
    UNION ALL
    SELECT 1, NULL, NULL WHERE m.locaux = '[]' AND m.terrains = '[]'
  ) x`;

const TYPE_LOCAL_ETALAB = `CASE x.loc->>'type' WHEN 'maison' THEN 'Maison' WHEN 'appartement' THEN 'Appartement'
  WHEN 'dependance' THEN 'Dépendance' WHEN 'local' THEN 'Local industriel. commercial ou assimilé' END`;

const colonnesMutation = (): Colonne[] => [
  t('id_mutation', 'm.id_mutation', { indexee: true, description: 'Identifiant de la mutation.' }),
  d('date_mutation', 'm.date_mutation', { description: 'Date de la mutation.' }),
  e('millesime', 'm.millesime', { description: 'Année de la mutation (le millésime DVF).' }),
  t('nature_mutation', 'm.nature_libelle', { description: 'Nature de la mutation (libellé DVF).' }),
  n('valeur_fonciere', 'm.valeur_fonciere', { description: 'Valeur foncière (€).' }),
  e('adresse_numero', 'm.adresse_numero', { description: 'Numéro de l’adresse de la ligne principale.' }),
  t('adresse_suffixe', 'm.adresse_suffixe', { description: 'Indice de répétition.' }),
  t('adresse_nom_voie', 'm.adresse_voie', { description: 'Voie.' }),
  t('adresse_code_voie', 'm.code_voie', { description: 'Code de la voie (DGFiP).' }),
  t('code_postal', 'm.code_postal', { territoire: 'code_postal', description: 'Code postal.' }),
  t('code_commune', 'm.insee', { indexee: true, territoire: 'commune', description: 'Code INSEE de la commune.' }),
  t('nom_commune', 'm.commune', { description: 'Commune.' }),
  t('code_departement', 'm.departement', { territoire: 'departement', description: 'Département.' }),
];

const DVF_RETRAIT =
  'DVF ne porte aucun nom d’acheteur ni de vendeur : rien à retirer. Les ventes d’Alsace-Moselle n’y sont pas (livre foncier).';
const DVF_DATE =
  "SELECT to_char(max(derniere_mutation), 'YYYY-MM-DD') AS d FROM dvf_millesimes WHERE dataset = '{dataset}'";

// ---------------------------------------------------------------------------------------------------------------------
// The registry.
// ---------------------------------------------------------------------------------------------------------------------

const indisponible = (nom: string, titre: string, nature: Nature, raison: string): JeuIndisponible => ({
  nom,
  titre,
  description: titre,
  nature,
  indisponible: raison,
});

const permis = (nom: string, titre: string, sourceSitadel: string): JeuDisponible => ({
  nom,
  titre,
  description: `${titre} (Sitadel, fichier « ${sourceSitadel} »).`,
  nature: 'public_brut',
  depuis: 'permis p',
  conditions: ["p.dataset = '{dataset}'", `p.source = '${sourceSitadel}'`],
  colonnes: [
    t('numero', "p.type || ':' || p.numero", { description: 'Type et numéro du permis (PC:…), unique.' }),
    t('type', 'p.type'),
    t('insee', 'p.insee', { indexee: true, territoire: 'commune' }),
    t('departement', 'p.departement', { territoire: 'departement' }),
    t('etat', 'p.etat'),
    e('an_depot', 'p.an_depot'),
    d('depot_le', 'p.depot_le'),
    d('autorise_le', 'p.autorise_le'),
    d('ouvert_le', 'p.ouvert_le'),
    d('acheve_le', 'p.acheve_le'),
    t('nature', 'coalesce(p.nature_completee, p.nature_declaree)'),
    t('destination', 'p.destination'),
    e('logements_total', 'p.logements_total'),
    e('logements_individuels', 'p.logements_individuels'),
    e('logements_collectifs', 'p.logements_collectifs'),
    e('logements_sociaux', 'p.logements_sociaux'),
    e('logements_demolis', 'p.logements_demolis'),
    n('surface_habitation_creee', 'p.surface_habitation_creee'),
    n('surface_locaux_crees', 'p.surface_locaux_crees'),
    n('superficie_terrain', 'p.superficie_terrain'),
    b('demandeur_personne_physique', 'p.demandeur_personne_physique'),
    t('demandeur_denomination', 'p.demandeur_denomination'),
    t('demandeur_siren', 'p.demandeur_siren', { indexee: true }),
    t('terrain_code_postal', 'p.terrain_code_postal'),
    t('cle_ban', 'p.cle_ban', { indexee: true }),
  ],
  cle_tri: ['insee', 'numero'],
  large: true,
  creneau_lourd: false,
  retrait:
    'Un demandeur personne physique n’est jamais nommé : ni dénomination, ni SIREN, ni SIRET (Sitadel ne les publie pas, et la base le refuse).',
  donnees_du:
    "SELECT to_char(max(maj_le) AT TIME ZONE 'Europe/Paris', 'YYYY-MM-DD') AS d FROM permis WHERE dataset = '{dataset}'",
  source: 'Sitadel (SDES)',
});

const dpe = (nom: string, titre: string, condition: string): JeuDisponible => ({
  nom,
  titre,
  description: titre,
  nature: 'public_brut',
  depuis: 'dpe x',
  conditions: ["x.dataset = '{dataset}'", condition],
  colonnes: [
    t('numero_dpe', 'x.numero_dpe', { indexee: true, description: 'Numéro ADEME du diagnostic.' }),
    t('cle_ban', 'x.cle_ban', { indexee: true, description: 'Clé BAN rattachée.' }),
    t('adresse', 'x.adresse', { description: 'Adresse du logement diagnostiqué.' }),
    t('code_postal', 'x.code_postal', { territoire: 'code_postal', description: 'Code postal.' }),
    t('insee', 'x.insee', { indexee: true, territoire: 'commune', description: 'Code INSEE de la commune.' }),
    t('commune', 'x.commune', { description: 'Commune.' }),
    n('lat', 'x.lat', { description: 'Latitude WGS84 (degrés).' }),
    n('lon', 'x.lon', { description: 'Longitude WGS84 (degrés).' }),
    d('etabli_le', 'x.etabli_le', { description: 'Date d’établissement.' }),
    d('fin_validite', 'x.fin_validite', { description: 'Fin de validité.' }),
    t('etiquette', 'x.etiquette', { description: 'Étiquette énergie (A-G).' }),
    t('ges', 'x.ges', { description: 'Étiquette climat (A-G).' }),
    n('conso_kwh_m2_an', 'x.conso_kwh_m2_an', { description: 'Consommation (kWh/m²/an).' }),
    n('ges_kg_m2_an', 'x.ges_kg_m2_an', { description: 'Émissions (kg CO2/m²/an).' }),
    n('surface_m2', 'x.surface_m2', { description: 'Surface (m²).' }),
    t('type_batiment', 'x.type_batiment', { description: 'maison, appartement ou immeuble.' }),
    t('periode_construction', 'x.periode_construction', { description: 'Période de construction.' }),
    e('annee_construction', 'x.annee_construction', { description: 'Année de construction.' }),
    t('chauffage_energie', 'x.chauffage_energie', { description: 'Énergie du chauffage.' }),
    t('isolation_enveloppe', 'x.isolation_enveloppe', { description: 'Qualité de l’isolation de l’enveloppe.' }),
    t('modele', 'x.modele', { description: 'Modèle du diagnostic (ADEME).' }),
    t('methode', 'x.methode', { description: 'Méthode du diagnostic.' }),
    t('numero_dpe_remplace', 'x.numero_dpe_remplace', { description: 'DPE que celui-ci remplace.' }),
    t('immatriculation_copropriete', 'x.immatriculation_copropriete', {
      description: 'Immatriculation de la copropriété au registre national (un syndicat, pas une personne).',
    }),
  ],
  cle_tri: ['numero_dpe'],
  large: true,
  creneau_lourd: true,
  retrait: 'Le DPE publié par l’ADEME ne nomme ni propriétaire ni occupant : rien à retirer.',
  donnees_du: "SELECT to_char(max(etabli_le), 'YYYY-MM-DD') AS d FROM dpe WHERE dataset = '{dataset}'",
  source: 'ADEME, DPE logements',
});

/** The date the 2021 DPE method came into force: DPE established before it are of the old method. */
const DPE_2021 = "DATE '2021-07-01'";
const NEUF = "coalesce(x.modele ILIKE '%neuf%', false)";

export const JEUX: readonly Jeu[] = [
  annonce(
    'annonces',
    'Annonces en ligne',
    'Les annonces immobilières en ligne (statut actif), une ligne par annonce et par portail.',
    "a.statut = 'actif'",
  ),
  {
    nom: 'evenements_prix',
    titre: 'Événements de prix des annonces',
    description:
      'Les baisses et hausses de prix des annonces (journal append-only), une ligne par événement, par id croissant : prix avant et après.',
    nature: 'calcule_svc',
    depuis: 'annonces_evenements v',
    conditions: ["v.dataset = '{dataset}'", "v.genre IN ('baisse_prix', 'hausse_prix')"],
    colonnes: [
      e('id', 'v.id', { indexee: true, description: 'Identifiant croissant de l’événement.' }),
      t('genre', 'v.genre', { description: 'baisse_prix ou hausse_prix.' }),
      h('le', 'v.le', { description: 'Moment du relevé qui a vu le changement.' }),
      t('annonce_id', 'v.annonce_id', { indexee: true, description: 'Annonce concernée.' }),
      t('insee', 'v.insee', { indexee: true, territoire: 'commune', description: 'Code INSEE de la commune.' }),
      t('code_postal', 'v.code_postal', { indexee: true, territoire: 'code_postal', description: 'Code postal.' }),
      t('departement', 'v.departement', { indexee: true, territoire: 'departement', description: 'Département.' }),
      n('prix_avant', "(v.avant->>'prix')::float8", { description: 'Prix avant (€).' }),
      n('prix_apres', "(v.apres->>'prix')::float8", { description: 'Prix après (€).' }),
      n(
        'variation_pct',
        "CASE WHEN (v.avant->>'prix')::float8 > 0 THEN round((100 * ((v.apres->>'prix')::float8 / (v.avant->>'prix')::float8 - 1))::numeric, 2)::float8 END",
        { description: 'Variation du prix (%), négative pour une baisse.' },
      ),
    ],
    cle_tri: ['id'],
    large: true,
    creneau_lourd: false,
    retrait: 'Un événement ne porte que le prix et le lieu de l’annonce : aucun vendeur.',
    donnees_du:
      "SELECT to_char(max(le) AT TIME ZONE 'Europe/Paris', 'YYYY-MM-DD') AS d FROM annonces_evenements WHERE dataset = '{dataset}'",
    source: 'annonces des portails (relevés)',
  },
  {
    nom: 'diffusions',
    titre: 'Diffusions des biens sur les portails',
    description:
      'Où et quand chaque bien (dédoublonné) paraît : une ligne par bien et par annonce qui le diffuse, avec son portail, sa première parution, son retrait et son prix.',
    nature: 'calcule_svc',
    depuis: 'annonces a',
    conditions: ["a.dataset = '{dataset}'", "a.statut <> 'masque'"],
    colonnes: [
      t('bien_uid', 'a.bien_uid', { indexee: true }),
      t('annonce_id', 'a.id', { indexee: true }),
      t('portail', 'a.portail'),
      b('principale', 'a.principale'),
      t('statut', 'a.statut'),
      t('insee', 'a.insee', { indexee: true, territoire: 'commune' }),
      t('code_postal', 'a.code_postal', { territoire: 'code_postal' }),
      t('type_vendeur', 'a.type_vendeur'),
      t('vendeur_enseigne', pro("coalesce(a.annonceur->>'enseigne', a.annonceur->>'nom')")),
      d('premiere_parution', 'a.premiere_parution'),
      h('vu_le', 'a.vu_le'),
      h('retire_le', 'a.retire_le'),
      n('prix', 'a.prix'),
    ],
    cle_tri: ['bien_uid', 'annonce_id'],
    large: true,
    creneau_lourd: false,
    retrait: RETRAIT_ANNONCES,
    donnees_du:
      "SELECT to_char(max(vu_le) AT TIME ZONE 'Europe/Paris', 'YYYY-MM-DD') AS d FROM annonces WHERE dataset = '{dataset}'",
    source: 'annonces des portails (relevés)',
  },
  {
    nom: 'communes',
    titre: 'Communes',
    description:
      'Les communes (code officiel géographique, découpage administratif Etalab) : nom, rattachements, population.',
    nature: 'public_brut',
    depuis: 'communes c',
    conditions: ["c.dataset = '{dataset}'"],
    colonnes: [
      t('insee', 'c.insee', { indexee: true, territoire: 'commune' }),
      t('nom', 'c.nom'),
      t('type', 'c.type'),
      t('departement', 'c.departement', { territoire: 'departement' }),
      t('region', 'c.region'),
      t('epci', 'c.epci'),
      t('commune_parente', 'c.commune_parente'),
      j('codes_postaux', 'to_json(c.codes_postaux)'),
      e('population', 'c.population'),
      n('lat', 'c.lat'),
      n('lon', 'c.lon'),
    ],
    cle_tri: ['insee'],
    large: false,
    creneau_lourd: false,
    retrait: 'Des communes : aucune personne.',
    donnees_du: null,
    source: 'INSEE, découpage administratif (Etalab)',
  },
  {
    nom: 'prix_iris',
    titre: 'Prix au m² par IRIS',
    description: 'Le prix au m² des appartements et des maisons par quartier IRIS, mesuré ou estimé, avec ses ventes.',
    nature: 'calcule_svc',
    depuis: 'marche_iris i',
    conditions: ["i.dataset = '{dataset}'"],
    colonnes: [
      t('code_iris', 'i.code_iris', { indexee: true, territoire: 'iris' }),
      t('insee', 'i.insee', { territoire: 'commune' }),
      t('type', 'i.type'),
      e('millesime', 'i.millesime'),
      n('prix_m2', 'i.prix_m2'),
      t('label', 'i.label'),
      e('n_ventes', 'i.n_ventes'),
      e('n_ventes_recentes', 'i.n_ventes_recentes'),
      n('poids_local', 'i.poids_local'),
      n('prix_m2_local', 'i.prix_m2_local'),
      n('prix_m2_commune', 'i.prix_m2_commune'),
      n('demi_bande_pct', 'i.demi_bande_pct'),
    ],
    cle_tri: ['code_iris', 'type'],
    large: false,
    creneau_lourd: false,
    retrait: 'Des prix agrégés par quartier : aucune personne.',
    donnees_du: "SELECT to_char(donnees_du, 'YYYY-MM-DD') AS d FROM marche_derives WHERE dataset = '{dataset}'",
    source: 'DVF (DGFiP), calcul du service',
  },
  {
    nom: 'loyers',
    titre: 'Loyers d’annonce par commune',
    description:
      'Les indicateurs de loyers d’annonce par commune (carte des loyers, ministère du Logement) : loyer prédit au m² charges comprises et son intervalle.',
    nature: 'public_brut',
    depuis: 'loyers_communes l',
    conditions: ["l.dataset = '{dataset}'"],
    colonnes: [
      t('insee', 'l.insee', { indexee: true, territoire: 'commune' }),
      t('type_logement', 'l.type_logement'),
      e('edition', 'l.edition'),
      t('commune', 'l.commune'),
      t('epci', 'l.epci'),
      t('id_zone', 'l.id_zone'),
      n('loyer_m2', 'l.loyer_m2'),
      n('loyer_m2_bas', 'l.loyer_m2_bas'),
      n('loyer_m2_haut', 'l.loyer_m2_haut'),
      t('niveau_prediction', 'l.niveau_prediction'),
      e('nb_obs_commune', 'l.nb_obs_commune'),
      e('nb_obs_maille', 'l.nb_obs_maille'),
      n('r2_ajuste', 'l.r2_ajuste'),
    ],
    cle_tri: ['insee', 'type_logement', 'edition'],
    large: false,
    creneau_lourd: false,
    retrait: 'Des indicateurs par commune : aucune personne.',
    donnees_du: null,
    source: 'Carte des loyers (ministère du Logement, ANIL)',
  },
  {
    nom: 'mutations',
    titre: 'Mutations DVF regroupées',
    description:
      'Les ventes DVF regroupées par mutation (une ligne par mutation, ses lignes repliées par le service : chaque local et chaque subdivision comptés une fois), avec les indicateurs calculés : logements, surface des logements, prix au m², vente en bloc, drapeaux.',
    nature: 'calcule_svc',
    depuis: 'dvf_mutations m',
    conditions: ["m.dataset = '{dataset}'"],
    colonnes: [
      ...colonnesMutation(),
      t('parcelle_principale', 'm.parcelle_principale', {
        indexee: true,
        description: 'Parcelle de la ligne principale.',
      }),
      j('parcelles', 'to_json(m.parcelles)', { description: 'Parcelles de la mutation.' }),
      t('cle_ban', 'm.cle_ban', { indexee: true, description: 'Clé BAN de l’adresse rattachée.' }),
      n('lat', 'm.lat', { description: 'Latitude WGS84 (degrés).' }),
      n('lon', 'm.lon', { description: 'Longitude WGS84 (degrés).' }),
      e('nb_lignes', 'm.nb_lignes', { description: 'Lignes du fichier DVF repliées dans la mutation.' }),
      e('nombre_lots', 'm.nombre_lots', { description: 'Lots.' }),
      n('surface_terrain', 'm.surface_terrain', { description: 'Surface du terrain (m²).' }),
      j('types_locaux', 'to_json(m.types_locaux)', { description: 'Types des locaux.' }),
      e('logements', 'm.logements', { description: 'Logements (maisons et appartements).' }),
      n('surface_logements', 'm.surface_logements', { description: 'Surface des logements (m²).' }),
      n('prix_m2', 'm.prix_m2', { description: 'Prix au m² recalculé sur la surface des logements.' }),
      b('vente_en_bloc', 'm.vente_en_bloc', { description: 'Vente de plusieurs logements.' }),
      b('avec_dependance', 'm.avec_dependance', { description: 'La mutation comprend une dépendance.' }),
      b('avec_local_pro', 'm.avec_local_pro', { description: 'La mutation comprend un local professionnel.' }),
      b('prix_atypique', 'm.prix_atypique', { description: 'Prix hors des bornes plausibles.' }),
      b('surface_atypique', 'm.surface_atypique', { description: 'Surface moyenne par logement hors des bornes.' }),
      b('doublon_probable', 'm.doublon_probable', { description: 'Des locaux égaux, peut-être une ligne en double.' }),
      t('motif', 'm.motif', {
        description: 'La première raison de ne pas lire prix_m2 comme le prix d’un logement ; null sinon.',
      }),
    ],
    cle_tri: ['date_mutation', 'id_mutation'],
    large: true,
    creneau_lourd: true,
    retrait: DVF_RETRAIT,
    donnees_du: DVF_DATE,
    source: 'DVF (DGFiP), regroupement du service',
  },
  indisponible(
    'indice_travaux',
    'Indice du coût des travaux',
    'calcule_svc',
    'Aucun indice du coût des travaux n’est importé dans ce service.',
  ),
  {
    nom: 'adresses',
    titre: 'Adresses du service',
    description:
      'La base d’adresses du service (BAN et compléments) : numéros, voies et lieux-dits, leur position et leurs parcelles.',
    nature: 'calcule_svc',
    depuis: 'adresses r',
    conditions: ["r.dataset = '{dataset}'"],
    colonnes: [
      t('cle_ban', 'r.cle_ban', { indexee: true, description: 'Clé d’interopérabilité BAN.' }),
      t('type', 'r.type', { description: 'numero, voie, lieu_dit ou commune.' }),
      e('numero', 'r.numero', { description: 'Numéro.' }),
      t('suffixe', 'r.suffixe', { description: 'Indice de répétition.' }),
      t('voie', 'r.voie', { description: 'Nom de la voie.' }),
      t('lieu_dit', 'r.lieu_dit', { description: 'Lieu-dit.' }),
      t('code_postal', 'r.code_postal', { territoire: 'code_postal', description: 'Code postal.' }),
      t('insee', 'r.insee', { indexee: true, territoire: 'commune', description: 'Code INSEE de la commune.' }),
      t('commune', 'r.commune', { description: 'Commune.' }),
      t('libelle', 'r.libelle', { description: 'Adresse complète.' }),
      n('lat', 'r.lat', { description: 'Latitude WGS84 (degrés).' }),
      n('lon', 'r.lon', { description: 'Longitude WGS84 (degrés).' }),
      t('type_position', 'r.type_position', { description: 'Type de position BAN.' }),
      j('parcelles', 'to_json(r.parcelles)', { description: 'Parcelles cadastrales de l’adresse.' }),
      b('certification', 'r.certification', { description: 'Adresse certifiée par la commune.' }),
      t('source', 'r.source', { description: 'Origine de l’adresse : la BAN ou un complément du service.' }),
    ],
    cle_tri: ['cle_ban'],
    large: true,
    creneau_lourd: true,
    retrait: 'Des adresses, sans occupant ni propriétaire : rien à retirer.',
    donnees_du: null,
    source: 'Base Adresse Nationale, compléments du service',
  },
  {
    nom: 'dvf',
    titre: 'Demandes de valeurs foncières (DVF géolocalisées)',
    description:
      'Les ventes DVF avec les colonnes du fichier Etalab « DVF géolocalisées ». Une ligne par local vendu et par subdivision de terrain, comme les lignes d’Etalab une fois dédoublonnées : Etalab écrit les locaux d’une parcelle multipliés par ses subdivisions de terrain (une maison sur trois natures de culture vient sur trois lignes) ; ici chaque local est une ligne (type_local renseigné, sans terrain) et chaque subdivision une ligne (type_local vide, nature_culture et surface_terrain renseignés) ; une mutation sans l’un ni l’autre a une ligne. La valeur, la date, l’adresse de la ligne principale et la position de la mutation sont répétées sur chacune de ses lignes, comme le fait Etalab. Pas de numero_disposition ni de numéros de lots (non gardés par l’import) ; `rang` numérote les lignes d’une mutation (locaux puis terrains).',
    nature: 'public_brut',
    depuis: dvfLignes('jsonb'),
    depuisAgregat: dvfLignes('json'),
    conditions: ["m.dataset = '{dataset}'"],
    colonnes: [
      ...colonnesMutation(),
      e('rang', 'x.rang', { description: 'Rang de la ligne dans sa mutation : ses locaux, puis ses terrains.' }),
      t('id_parcelle', "coalesce(x.loc->>'id_parcelle', x.ter->>'id_parcelle', m.parcelle_principale)"),
      // json or jsonb (dvfLignes): a jsonb argument is read as it is, a json one (an aggregate's) converted.
      e('nombre_lots', "jsonb_array_length((x.loc->'lots')::jsonb)"),
      e(
        'code_type_local',
        "CASE x.loc->>'type' WHEN 'maison' THEN 1 WHEN 'appartement' THEN 2 WHEN 'dependance' THEN 3 WHEN 'local' THEN 4 END",
      ),
      t('type_local', TYPE_LOCAL_ETALAB),
      n('surface_reelle_bati', "(x.loc->>'surface_bati')::float8"),
      e('nombre_pieces_principales', "(x.loc->>'pieces')::int"),
      t('nature_culture', "x.ter->>'nature_culture'"),
      t('nature_culture_speciale', "x.ter->>'nature_culture_speciale'"),
      n('surface_terrain', "(x.ter->>'surface')::float8"),
      n('longitude', 'm.lon'),
      n('latitude', 'm.lat'),
    ],
    cle_tri: ['date_mutation', 'id_mutation', 'rang'],
    // The mutations the imports counted, times the rows of a mutation on a sample of 2 000.
    volume: `SELECT round((SELECT sum(mutations) FROM dvf_millesimes WHERE dataset = '{dataset}')
        * (SELECT avg(greatest(1, json_array_length(locaux::json) + json_array_length(terrains::json)))
             FROM (SELECT locaux, terrains FROM dvf_mutations WHERE dataset = '{dataset}' LIMIT 2000) s)) AS v`,
    large: true,
    creneau_lourd: true,
    retrait: DVF_RETRAIT,
    donnees_du: DVF_DATE,
    source: 'DVF (DGFiP), fichiers géolocalisés d’Etalab',
  },
  indisponible(
    'dvf_ancien',
    'DVF historique (avant 2014)',
    'public_brut',
    'Les fichiers DVF antérieurs à 2014 ne sont pas importés dans ce service : `dvf` sert les millésimes importés.',
  ),
  {
    nom: 'ban',
    titre: 'Base Adresse Nationale',
    description:
      'Les numéros de la Base Adresse Nationale tels qu’importés, avec les noms de colonnes du fichier BAN (id, numero, rep, nom_voie, code_postal, code_insee, nom_commune, lon, lat, type_position, cad_parcelles).',
    nature: 'public_brut',
    depuis: 'adresses r',
    conditions: ["r.dataset = '{dataset}'", "r.source = 'ban'", "r.type = 'numero'"],
    colonnes: [
      t('id', 'r.cle_ban', { indexee: true }),
      e('numero', 'r.numero'),
      t('rep', 'r.suffixe'),
      t('nom_voie', 'r.voie'),
      t('nom_ld', 'r.lieu_dit'),
      t('code_postal', 'r.code_postal', { territoire: 'code_postal' }),
      t('code_insee', 'r.insee', { indexee: true, territoire: 'commune' }),
      t('nom_commune', 'r.commune'),
      t('code_insee_ancienne_commune', 'r.ancienne_commune_insee'),
      t('nom_ancienne_commune', 'r.ancienne_commune_nom'),
      n('lon', 'r.lon'),
      n('lat', 'r.lat'),
      t('type_position', 'r.type_position'),
      b('certification_commune', 'r.certification'),
      t('cad_parcelles', "array_to_string(r.parcelles, '|')"),
    ],
    cle_tri: ['id'],
    large: true,
    creneau_lourd: true,
    retrait: 'Des adresses, sans occupant ni propriétaire : rien à retirer.',
    donnees_du: null,
    source: 'Base Adresse Nationale',
  },
  dpe('dpe_existant', 'DPE des logements existants (méthode de 2021)', `NOT ${NEUF} AND x.etabli_le >= ${DPE_2021}`),
  dpe('dpe_neuf', 'DPE des logements neufs', NEUF),
  indisponible(
    'dpe_tertiaire',
    'DPE tertiaires',
    'public_brut',
    'Les DPE tertiaires ne sont pas importés : l’import des DPE ne garde que les logements.',
  ),
  dpe('dpe_ancien', 'DPE des logements établis avant juillet 2021 (ancienne méthode)', `x.etabli_le < ${DPE_2021}`),
  {
    nom: 'audits',
    titre: 'Audits énergétiques',
    description:
      'Les audits énergétiques réglementaires (ADEME) : classes initiale et visée, coût des travaux, étapes.',
    nature: 'public_brut',
    depuis: 'dpe_audits u',
    conditions: ["u.dataset = '{dataset}'"],
    colonnes: [
      t('numero_audit', 'u.numero_audit', { indexee: true, description: 'Numéro de l’audit.' }),
      t('cle_ban', 'u.cle_ban', { indexee: true, description: 'Clé BAN rattachée.' }),
      t('numero_dpe', 'u.numero_dpe', { indexee: true, description: 'DPE audité.' }),
      t('numero_audit_remplace', 'u.numero_audit_remplace', { description: 'Audit que celui-ci remplace.' }),
      d('etabli_le', 'u.etabli_le', { description: 'Date d’établissement.' }),
      d('fin_validite', 'u.fin_validite', { description: 'Fin de validité.' }),
      n('cout_travaux_max', 'u.cout_travaux_max', { description: 'Coût cumulé le plus haut des scénarios (€).' }),
      t('classe_initiale', 'u.classe_initiale', { description: 'Classe avant travaux.' }),
      t('classe_visee', 'u.classe_visee', { description: 'Meilleure classe atteinte.' }),
      b('pack_pre_vente', 'u.pack_pre_vente', { description: 'Audit réglementaire avant vente.' }),
      e('etapes', 'u.etapes', { description: 'Étapes de travaux.' }),
    ],
    cle_tri: ['numero_audit'],
    large: true,
    creneau_lourd: false,
    retrait: 'L’audit publié ne nomme ni propriétaire ni auditeur : rien à retirer.',
    donnees_du: "SELECT to_char(max(etabli_le), 'YYYY-MM-DD') AS d FROM dpe_audits WHERE dataset = '{dataset}'",
    source: 'ADEME, audits énergétiques',
  },
  indisponible(
    'coproprietes',
    'Registre des copropriétés',
    'public_brut',
    'Le registre national des copropriétés (ANAH) n’est pas importé dans ce service.',
  ),
  permis('permis_logements', 'Permis de construire des logements', 'logements'),
  permis('permis_locaux', 'Permis de construire des locaux non résidentiels', 'locaux'),
  permis('permis_demolir', 'Permis de démolir', 'demolir'),
  permis('permis_amenager', 'Permis d’aménager', 'amenager'),
  {
    nom: 'bodacc',
    titre: 'Annonces du BODACC',
    description:
      'Les avis du Bulletin officiel des annonces civiles et commerciales importés : créations, modifications, ventes, radiations, procédures.',
    nature: 'public_brut',
    depuis: 'avis_bodacc v',
    conditions: ["v.dataset = '{dataset}'"],
    colonnes: [
      t('id', 'v.id', { indexee: true }),
      d('date_parution', 'v.date_parution'),
      t('parution', 'v.parution'),
      e('numero_annonce', 'v.numero_annonce'),
      t('type_avis', 'v.type_avis'),
      t('famille', 'v.famille'),
      t('categorie', 'v.categorie'),
      d('date_effet', 'v.date_effet'),
      t('tribunal', 'v.tribunal'),
      t('ville', 'v.ville'),
      t('cp', 'v.cp', { territoire: 'code_postal' }),
      t('departement', 'v.departement', { indexee: true, territoire: 'departement' }),
      t('denomination', 'v.denomination'),
      t('forme_juridique', 'v.forme_juridique'),
      j('sirens', 'to_json(v.sirens)'),
      b('porte_sur_personne_physique', 'v.porte_sur_personne_physique'),
      b('societe_civile', 'v.societe_civile'),
      t('cle_ban', 'v.cle_ban', { indexee: true }),
      t('resume', 'v.resume', { operateurs: ['nul'] }),
    ],
    cle_tri: ['id'],
    large: true,
    creneau_lourd: false,
    retrait:
      'Un avis portant sur une personne physique ne la nomme pas : ni dénomination ni adresse de siège (la base le refuse), et son résumé est rebâti des seuls champs codés.',
    donnees_du: "SELECT to_char(max(date_parution), 'YYYY-MM-DD') AS d FROM avis_bodacc WHERE dataset = '{dataset}'",
    source: 'BODACC (DILA)',
  },
  indisponible(
    'lovac',
    'Logements vacants (LOVAC)',
    'public_brut',
    'Le fichier LOVAC des logements vacants n’est pas importé dans ce service.',
  ),
  {
    nom: 'plu',
    titre: 'Zones des PLU',
    description:
      'Les zones des documents d’urbanisme (Géoportail de l’Urbanisme, ZONE_URBA) : libellé, type, règlement, date d’approbation, contour GeoJSON en WGS84.',
    nature: 'public_brut',
    depuis: 'zones_urbanisme z',
    conditions: ["z.dataset = '{dataset}'"],
    colonnes: [
      t('idurba', 'z.idurba', { indexee: true, description: 'Document d’urbanisme.' }),
      t('cle', 'z.cle', { description: 'Clé de la zone dans son document (empreinte de son contour).' }),
      t('libelle', 'z.libelle', { description: 'Code de la zone.' }),
      t('libelong', 'z.libelong', { description: 'Libellé long.' }),
      t('typezone', 'z.typezone', { description: 'U, AUc, AUs, A ou N.' }),
      t('destdomi', 'z.destdomi', { description: 'Destination dominante.' }),
      t('insee', 'z.insee', { indexee: true, territoire: 'commune', description: 'Code INSEE.' }),
      t('reglement_url', 'z.reglement_url', { description: 'Règlement écrit.' }),
      e('reglement_page', 'z.reglement_page', { description: 'Page du règlement écrit où lire la zone.' }),
      d('datappro', 'z.datappro', { description: 'Approbation.' }),
      d('datvalid', 'z.datvalid', { description: 'Validation.' }),
      n('aire_m2', 'z.aire_m2', { description: 'Aire (m²).' }),
      j('geometrie', 'z.geometrie', { description: 'Contour GeoJSON (WGS84).' }),
    ],
    cle_tri: ['idurba', 'cle'],
    large: true,
    creneau_lourd: false,
    retrait: 'Des zones d’urbanisme : aucune personne.',
    donnees_du:
      "SELECT to_char(max(maj_le) AT TIME ZONE 'Europe/Paris', 'YYYY-MM-DD') AS d FROM zones_urbanisme WHERE dataset = '{dataset}'",
    source: 'Géoportail de l’Urbanisme (IGN)',
  },
  indisponible(
    'signaux_communes',
    'Signaux par commune',
    'calcule_svc',
    'Les signaux par commune ne sont pas calculés dans ce service ; les signaux par adresse sont servis par le pré-marché.',
  ),
  {
    nom: 'marche_commune',
    titre: 'Indicateurs de marché par commune',
    description:
      'Les indicateurs de marché de chaque commune : transactions, prix au m², loyers, rendements, évolution, passoires, zone A/B/C, attractivité.',
    nature: 'calcule_svc',
    depuis: 'marche_indicateurs k',
    conditions: ["k.dataset = '{dataset}'"],
    colonnes: [
      t('insee', 'k.insee', { indexee: true, territoire: 'commune' }),
      t('commune', 'k.commune'),
      t('code_postal', 'k.code_postal', { territoire: 'code_postal' }),
      t('departement', 'k.departement', { territoire: 'departement' }),
      t('region', 'k.region'),
      e('population', 'k.population'),
      e('transactions', 'k.transactions'),
      n('prix_m2_appartement', 'k.prix_m2_appartement'),
      n('prix_m2_maison', 'k.prix_m2_maison'),
      n('prix_m2_logement', 'k.prix_m2_logement'),
      n('loyer_m2_appartement', 'k.loyer_m2_appartement'),
      n('loyer_m2_maison', 'k.loyer_m2_maison'),
      n('rendement_brut_appartement_pct', 'k.rendement_brut_appartement_pct'),
      n('rendement_brut_maison_pct', 'k.rendement_brut_maison_pct'),
      n('evolution_3_ans_pct', 'k.evolution_3_ans_pct'),
      n('passoires_dpe_fg_pct', 'k.passoires_dpe_fg_pct'),
      e('dpe_n', 'k.dpe_n'),
      t('zone_abc', 'k.zone_abc'),
      n('score_attractivite', 'k.score_attractivite'),
    ],
    cle_tri: ['insee'],
    large: false,
    creneau_lourd: false,
    retrait: 'Des indicateurs par commune : aucune personne.',
    donnees_du: "SELECT to_char(donnees_du, 'YYYY-MM-DD') AS d FROM marche_derives WHERE dataset = '{dataset}'",
    source: 'DVF, DPE, carte des loyers : calcul du service',
  },
  {
    nom: 'agences_commune',
    titre: 'Activité des agences par commune et par mois',
    description:
      'Les agences actives de chaque commune, mois par mois, d’après les annonces : mandats, exclusifs, durée médiane en ligne, part des biens baissés, part de marché.',
    nature: 'calcule_svc',
    depuis: 'agences_activite g',
    conditions: ["g.dataset = '{dataset}'"],
    colonnes: [
      t('insee', 'g.insee', { indexee: true, territoire: 'commune' }),
      t('mois', 'g.mois'),
      t('vendeur', 'g.vendeur', { description: 'SIREN, sinon nom de l’agence : la clé de l’agence dans la commune.' }),
      t('siren', 'g.siren', { indexee: true }),
      t('enseigne', 'g.enseigne'),
      e('mandats', 'g.mandats'),
      e('exclusifs', 'g.exclusifs'),
      n('duree_mediane_j', 'g.duree_mediane_j'),
      n('part_baisses_pct', 'g.part_baisses_pct'),
      n('part_marche_pct', 'g.part_marche_pct'),
    ],
    cle_tri: ['insee', 'mois', 'vendeur'],
    large: false,
    creneau_lourd: false,
    retrait:
      'Seuls des professionnels : un entrepreneur individuel que SIRENE ne diffuse pas paraît sous « Entrepreneur individuel (identité non diffusée) », sans nom.',
    donnees_du: "SELECT to_char(donnees_du, 'YYYY-MM-DD') AS d FROM agences_calculs WHERE dataset = '{dataset}'",
    source: 'annonces des portails (relevés), SIRENE (Insee)',
  },
  {
    nom: 'sirene_immobilier',
    titre: 'Entreprises de l’immobilier (SIRENE)',
    description:
      'Les unités légales SIRENE dont l’activité principale est immobilière (section L, 68.xx : marchands de biens, SCI, agences, administrateurs de biens), avec la commune de leur siège.',
    nature: 'public_brut',
    // The seat of a unit or establishment in partial diffusion is not joined (what `retrait` says): in the join, not
    // in the columns, so that a filter on siege_code_postal still reads the establishments' index.
    depuis: `unites_legales u LEFT JOIN etablissements s ON s.dataset = u.dataset AND s.siret = u.siren || u.nic_siege
      AND NOT u.diffusion_partielle AND NOT s.diffusion_partielle`,
    conditions: ["u.dataset = '{dataset}'", "u.ape LIKE '68%'"],
    colonnes: [
      t('siren', 'u.siren', { indexee: true, description: 'SIREN.' }),
      t('denomination', 'u.denomination', { description: 'Dénomination ; null pour une personne physique.' }),
      t('sigle', 'u.sigle', { description: 'Sigle.' }),
      t('categorie_juridique', 'u.categorie_juridique', {
        description: 'Catégorie juridique (65xx : société civile).',
      }),
      b('personne_physique', 'u.personne_physique', { description: 'Entrepreneur individuel (personne physique).' }),
      b('societe_civile', 'u.societe_civile', { description: 'Société civile (catégorie juridique 65xx).' }),
      t('ape', 'u.ape', { description: 'Activité principale.' }),
      t('etat', 'u.etat', { description: 'A (active) ou C (cessée).' }),
      d('cree_le', 'u.cree_le', { description: 'Création.' }),
      d('cesse_le', 'u.cesse_le', { description: 'Cessation.' }),
      b('diffusion_partielle', 'u.diffusion_partielle', {
        description: 'L’unité a demandé que ses données ne soient pas toutes diffusées.',
      }),
      t('tranche_effectif', 'u.tranche_effectif', { description: 'Tranche d’effectif salarié (code Insee).' }),
      t('categorie_entreprise', 'u.categorie_entreprise', { description: 'Catégorie d’entreprise : PME, ETI ou GE.' }),
      t('siege_code_postal', 's.code_postal', {
        indexee: true,
        territoire: 'code_postal',
        description: 'Code postal du siège.',
      }),
      t('siege_insee', 's.insee', { territoire: 'commune', description: 'Code INSEE de la commune du siège.' }),
      t('siege_commune', 's.commune', { description: 'Commune du siège.' }),
    ],
    cle_tri: ['siren'],
    large: true,
    creneau_lourd: false,
    retrait:
      'Une personne physique (entrepreneur individuel) n’est jamais nommée : SIRENE importé ne garde ni son nom ni son prénom (denomination vide) ; en diffusion partielle, ni son siège.',
    donnees_du:
      "SELECT to_char(max(dernier_traitement), 'YYYY-MM-DD') AS d FROM unites_legales WHERE dataset = '{dataset}'",
    source: 'SIRENE (Insee)',
  },
  annonce(
    'annonces_archives',
    'Annonces retirées',
    'Les annonces retirées des portails (vendues, expirées ou retirées), une ligne par annonce et par portail, avec leur date de retrait.',
    "a.statut = 'retire'",
  ),
  annonce(
    'biens',
    'Biens en vente (dédoublonnés)',
    'Les biens mis en vente, dédoublonnés entre portails : une ligne par bien, l’annonce qui le représente (la principale), en ligne ou retirée.',
    'a.principale',
  ),
];

export const NOMS_JEUX = JEUX.map((j) => j.nom) as [string, ...string[]];

const parNom = new Map(JEUX.map((j) => [j.nom, j]));

export function jeuNomme(nom: string): Jeu | undefined {
  return parNom.get(nom);
}

export function estDisponible(jeu: Jeu): jeu is JeuDisponible {
  return !('indisponible' in jeu);
}

export function colonne(jeu: JeuDisponible, nom: string): Colonne | undefined {
  return jeu.colonnes.find((c) => c.nom === nom);
}

/** The dataset's FROM (for rows, or for an aggregate) and conditions for `dataset` (a closed value, never input). */
export function sourceSql(
  jeu: JeuDisponible,
  dataset: Dataset,
  usage: 'lignes' | 'agregat' = 'lignes',
): { depuis: string; conditions: string[] } {
  const place = (s: string) => s.replaceAll('{dataset}', dataset);
  const depuis = usage === 'agregat' ? (jeu.depuisAgregat ?? jeu.depuis) : jeu.depuis;
  return { depuis: place(depuis), conditions: jeu.conditions.map(place) };
}

/** ORDER BY of the sort key: ascending, empty values last (a sort key is never empty: said for the reader). */
export function ordreSql(jeu: JeuDisponible): string {
  return jeu.cle_tri.map((nom) => `${colonne(jeu, nom)!.sql} ASC NULLS LAST`).join(', ');
}

/**
 * Every row of a dataset, after the removal of private individuals, in sort-key order: the full file of exports and
 * of the lake. `conditions`, written like the dataset's own (over its aliases, `{dataset}` for the dataset), narrow it
 * to an export edition's rows; `compte` counts the rows they keep. The dataset literal is the only value placed in it.
 */
export function sourceComplete(
  nom: string,
  dataset: Dataset = 'live',
  conditions: readonly string[] = [],
): {
  sql: string;
  compte: string;
  colonnes: Array<{ nom: string; type: TypeColonne; description?: string }>;
  retrait: string;
} {
  const jeu = jeuNomme(nom);
  if (!jeu) throw new Error(`Jeu inconnu : ${nom}`);
  if (!estDisponible(jeu)) throw new Error(`Jeu ${nom} indisponible : ${jeu.indisponible}`);
  const source = sourceSql({ ...jeu, conditions: [...jeu.conditions, ...conditions] }, dataset);
  const from = `FROM ${source.depuis}\n WHERE ${source.conditions.join(' AND ')}`;
  const select = jeu.colonnes.map((c) => `${c.sql} AS "${c.nom}"`).join(',\n       ');
  return {
    sql: `SELECT ${select}\n  ${from}\n ORDER BY ${ordreSql(jeu)}`,
    compte: `SELECT count(*) ${from}`,
    colonnes: jeu.colonnes.map(({ nom, type, description }) => ({ nom, type, description })),
    retrait: jeu.retrait,
  };
}
