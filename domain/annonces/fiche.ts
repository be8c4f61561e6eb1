import { z } from 'zod';
import type { Queryable } from '../../db/client.ts';
import { PRIX_M2_PLAUSIBLE, SURFACE_LOGEMENT_PLAUSIBLE } from '../dvf/mutation.ts';
import type { Dataset } from '../platform/sandbox.ts';
import { rawJson } from '../../lib/json-bytes.ts';
import { DRAPEAUX, drapeaux, QualiteSchema, type Drapeau, type Qualite } from '../qualite.ts';
import { calendrierDpe, chargesSuspectes, SOUS_SCORES, terrainSuspect, type Analyse } from './analyse.ts';
import {
  CLASSES,
  DETAILS_NOMBRES,
  EQUIPEMENTS_BOOLEENS,
  EQUIPEMENTS_TEXTES,
  PORTAILS,
  PRECISIONS,
  STATUTS,
  TYPES_BIEN,
  TYPES_VENDEUR,
  type DetailsPortail,
  type Dpe,
  type Equipements,
  type Portail,
  type Precision,
  type Statut,
  type TypeBien,
  type TypeVendeur,
} from './format.ts';
import type { EvenementLu } from './journal.ts';
import type { Annonceur } from './vendeur.ts';

/**
 * The listing as served: the full sheet (`annonce`) and the list format of the feed's events, both made from a row of
 * `annonces` here, once. The portal's identifier and link are served only to a caller with the scope lien_origine.
 */

const nombre = () => z.number().nullable();
const entier = () => z.number().int().nullable();

const SousScoresSchema = z.object(
  Object.fromEntries(SOUS_SCORES.map((k) => [k, z.number().min(0).max(100).nullable()])) as Record<
    (typeof SOUS_SCORES)[number],
    z.ZodNullable<z.ZodNumber>
  >,
);

export const AnalyseSchema = z
  .object({
    score: z
      .number()
      .min(0)
      .max(100)
      .nullable()
      .describe('Sur 100 ; null quand ni le marché ni la rentabilité ne sont notés.'),
    sous_scores: SousScoresSchema.describe(
      'Chacun sur 0-100 (plus haut = meilleur pour l’acheteur), null sans ses données.',
    ),
    profil: z.enum(['travaux', 'rendement', 'patrimonial', 'equilibre']).nullable(),
    verdict: z.enum(['excellente_affaire', 'bonne_affaire', 'correct', 'peu_interessant']).nullable(),
    recommandation: z.string().nullable(),
    forces: z.array(z.string()),
    faiblesses: z.array(z.string()),
    leviers: z.array(z.string()).describe('Ce qui fonde une négociation.'),
    negociation: z.object({
      cible_min: nombre().describe('Offre basse visée (€), entre 60 % et 100 % du prix.'),
      cible_max: nombre().describe('Offre haute visée (€).'),
      decote_pct: nombre().describe('Décote visée, 0-40 %.'),
      prix_reference: nombre().describe('Référence DVF de la commune × surface (€).'),
      arguments: z.array(z.string()),
    }),
    prix_m2: nombre(),
    reference_commune: z
      .object({
        prix_m2: z.number(),
        millesime: z.number().int(),
        label: z.enum(['mesure', 'estime']).nullable(),
        n_ventes: z.number().int(),
      })
      .nullable()
      .describe('Dernier millésime du barème DVF de la commune pour le type.'),
    ecart_reference_pct: nombre().describe('Écart du prix au m² à la référence (positif : plus cher).'),
    loyer: z
      .object({ mensuel: z.number(), loyer_m2: z.number(), nature: z.string(), edition: z.number().int() })
      .nullable()
      .describe('Loyer d’annonce prédit de la commune (charges comprises) × surface.'),
    rendement_brut_pct: nombre(),
    rendement_net_pct: nombre().describe('Net hors travaux, sur prix + frais de notaire.'),
    budget_total: nombre().describe('Prix + frais de notaire (8 %), hors travaux.'),
    etat_visuel: nombre().describe('Toujours null : les photos ne sont pas lues.'),
    jours_en_ligne: entier(),
    historique_prix: z.array(z.object({ le: z.string(), prix: z.number() })).describe('Changements de prix.'),
    interdiction_location: z.string().nullable(),
    mois_restants: entier(),
    limites: z.array(z.string()).describe('Pourquoi un sous-score est null, et ce que l’analyse ne lit pas.'),
    analyse_le: z.string().describe('Le relevé analysé (ISO 8601).'),
  })
  .describe('Analyse déterministe du service (méthodes dans la description de l’opération).');

const AnnonceurSchema = z.object({
  type_vendeur: z.enum(TYPES_VENDEUR),
  nom: z.string().nullable(),
  enseigne: z.string().nullable(),
  siren: z.string().nullable(),
  mandat: z.enum(['simple', 'exclusif']).nullable(),
  telephone: z.string().nullable().describe('Téléphone professionnel publié ; null pour un particulier.'),
  email: z.string().nullable().describe('Courriel professionnel publié ; null pour un particulier.'),
});

/** The full sheet: every field, as `champs` may reduce it (selectable: none required but `id`). */
export const AnnonceSchema = z.object({
  id: z.string().describe('Identifiant du service.'),
  id_portail: z
    .string()
    .nullable()
    .describe('`<portail>:<identifiant>` ; servi avec la portée lien_origine seulement.'),
  lien: z.string().nullable().describe('Lien d’origine ; servi avec la portée lien_origine seulement.'),
  source: z.enum(PORTAILS),
  statut: z.enum(STATUTS),
  actif: z.boolean(),
  type: z.enum(TYPES_BIEN),
  neuf_ancien: z.enum(['neuf', 'ancien']).nullable(),
  commune: z.string().nullable(),
  code_postal: z.string().nullable(),
  insee: z.string().nullable(),
  departement: z.string().nullable(),
  region: z.string().nullable(),
  position: z.object({ lat: z.number(), lon: z.number(), precision: z.enum(PRECISIONS) }).nullable(),
  prix: nombre(),
  prix_m2: nombre().describe('prix / surface, recalculé.'),
  prix_m2_portail: nombre().describe('La valeur du portail, telle quelle.'),
  surface: nombre(),
  pieces: entier(),
  chambres: entier(),
  etage: entier(),
  nb_etages: entier(),
  salles_de_bain: entier(),
  salles_d_eau: entier(),
  terrain_m2: nombre().describe('Le terrain du portail, sauf s’il est suspect (null alors).'),
  jardin_privatif_m2: nombre(),
  terrain_portail_m2: nombre(),
  annee_construction: entier(),
  terrain_suspect: z.boolean().nullable().describe('Maison dont le terrain est plus petit que la surface habitable.'),
  dpe: z.object({
    etiquette: z.enum(CLASSES).nullable(),
    conso_kwh_m2_an: nombre(),
    ges: z.enum(CLASSES).nullable(),
    ges_kg_m2_an: nombre(),
    ges_statut: z.enum(['non_soumis', 'vierge']).nullable(),
    interdiction_location: z.string().nullable(),
    mois_restants: entier(),
  }),
  equipements: z.object({
    ...Object.fromEntries(EQUIPEMENTS_BOOLEENS.map((k) => [k, z.boolean().nullable()])),
    ...Object.fromEntries(EQUIPEMENTS_TEXTES.map((k) => [k, z.string().nullable()])),
    liste: z.array(z.string()),
  } as Record<string, z.ZodType>),
  details_portail: z.object({
    ...Object.fromEntries(DETAILS_NOMBRES.map((k) => [k, nombre()])),
    honoraires_a_charge: z.enum(['acquereur', 'vendeur']).nullable(),
    charges_suspectes: z.boolean().nullable().describe('Charges annuelles de copropriété qui semblent mensuelles.'),
    procedure_copro: z.boolean().nullable(),
    en_copro: z.boolean().nullable(),
  } as Record<string, z.ZodType>),
  type_vendeur: z.enum(TYPES_VENDEUR),
  annonceur: AnnonceurSchema,
  titre: z.string().nullable(),
  description: z.string().nullable().describe('Texte ; coordonnées d’un vendeur non professionnel masquées.'),
  photos: z.array(z.string()),
  premiere_parution: z.object({ date: z.string().nullable(), estimee: z.boolean() }),
  vu_le: z.string(),
  retire_le: z.string().nullable(),
  entree_le: z.string(),
  maj_le: z.string(),
  bien_uid: z.string().nullable(),
  principale: z.boolean().describe('L’annonce que le flux sert pour ce bien (les autres sont ses doublons).'),
  analyse: AnalyseSchema,
  qualite: QualiteSchema,
  brut: z
    .record(z.string(), z.unknown())
    .nullable()
    .optional()
    .describe('Avec inclure=brut : le dernier relevé du portail tel qu’envoyé, vendeur professionnel seulement.'),
  limites: z.array(z.string()),
});
export type Annonce = z.infer<typeof AnnonceSchema>;

/** The list format of the feed's events: 26 fields. */
export const AnnonceListeSchema = z.object({
  id: z.string(),
  id_portail: z.string().nullable(),
  lien: z.string().nullable(),
  source: z.enum(PORTAILS),
  statut: z.enum(STATUTS),
  type: z.enum(TYPES_BIEN),
  commune: z.string().nullable(),
  code_postal: z.string().nullable(),
  insee: z.string().nullable(),
  departement: z.string().nullable(),
  lat: nombre(),
  lon: nombre(),
  precision_coordonnees: z.enum(PRECISIONS),
  prix: nombre(),
  surface: nombre(),
  pieces: entier(),
  prix_m2: nombre(),
  dpe: z.enum(CLASSES).nullable(),
  score: nombre(),
  rendement_brut: nombre(),
  rendement_net: nombre(),
  etat_visuel: nombre(),
  premiere_parution: z.string().nullable(),
  type_vendeur: z.enum(TYPES_VENDEUR),
  annonceur: z.object({
    type_vendeur: z.enum(TYPES_VENDEUR),
    nom: z.string().nullable(),
    enseigne: z.string().nullable(),
    siren: z.string().nullable(),
  }),
  drapeaux: z.array(z.string()),
});
export type AnnonceListe = z.infer<typeof AnnonceListeSchema>;

/** The columns of `annonces` that the importer and the operations read alike. */
export interface ColonnesAnnonce {
  id: string;
  portail: Portail;
  identifiant: string;
  lien: string | null;
  statut: Statut;
  type: TypeBien;
  neuf_ancien: 'neuf' | 'ancien' | null;
  commune: string | null;
  code_postal: string | null;
  insee: string | null;
  departement: string | null;
  region: string | null;
  lat: number | null;
  lon: number | null;
  precision_position: Precision;
  cle_ban: string | null;
  prix: number | null;
  prix_m2_portail: number | null;
  surface: number | null;
  pieces: number | null;
  chambres: number | null;
  etage: number | null;
  nb_etages: number | null;
  salles_de_bain: number | null;
  salles_d_eau: number | null;
  terrain_portail_m2: number | null;
  jardin_privatif_m2: number | null;
  annee_construction: number | null;
  equipements: Partial<Equipements>;
  details_portail: Partial<DetailsPortail>;
  type_vendeur: TypeVendeur;
  annonceur: Annonceur | null;
  titre: string | null;
  description: string | null;
  photos: string[];
  premiere_parution: string | null;
  premiere_parution_estimee: boolean;
  releves: number;
  brut: Record<string, unknown> | null;
  bien_uid: string;
}

/** A row of `annonces` as the operations read it: dates as dates, the analysis. */
export interface LigneAnnonce extends ColonnesAnnonce {
  dpe: Partial<Dpe>;
  entree_le: Date;
  vu_le: Date;
  retire_le: Date | null;
  maj_le: Date;
  principale: boolean;
  analyse: Analyse | null;
}

export const COLONNES_ANNONCE = `id, portail, identifiant, lien, statut, type, neuf_ancien, commune, code_postal, insee,
  departement, region, lat, lon, precision_position, cle_ban, prix, prix_m2_portail, surface, pieces, chambres, etage,
  nb_etages, salles_de_bain, salles_d_eau, terrain_portail_m2, jardin_privatif_m2, annee_construction, dpe, equipements,
  details_portail, type_vendeur, annonceur, titre, description, photos,
  to_char(premiere_parution, 'YYYY-MM-DD') AS premiere_parution, premiere_parution_estimee, entree_le, vu_le,
  retire_le, maj_le, releves, brut, bien_uid, principale, resultat_analyse AS analyse`;

/**
 * A listing as the feeds, webhooks and watches' results need it: what their filters read, whether it is served, and
 * its list format already written as JSON by PostgreSQL (`liste`, see LISTE_SQL). A feed page is a thousand listings:
 * reading their columns into objects and serialising the objects again cost the api most of the page.
 */
export type LigneListe = Pick<
  LigneAnnonce,
  'id' | 'type' | 'prix' | 'surface' | 'statut' | 'principale' | 'cle_ban'
> & {
  /** Of the analysis: what watches' criteria read. */
  score: number | null;
  rendement_brut_pct: number | null;
  liste: string;
};

const RELEVE_ANCIEN_JOURS = 30;

/**
 * The flags of a listing: what calls for caution in it, each rule said once, for the sheet (in JavaScript, on the
 * row) and for the list format (in SQL, the same rule on the same columns; test/api/annonces.test.ts checks that the
 * two agree on every listing of the sandbox).
 */
const REGLES_DRAPEAUX: Partial<Record<Drapeau, { js: (l: LigneAnnonce, maintenant: Date) => boolean; sql: string }>> = {
  doublon_probable: { js: (l) => !l.principale, sql: 'NOT a.principale' },
  date_estimee: { js: (l) => l.premiere_parution_estimee, sql: 'a.premiere_parution_estimee' },
  prix_atypique: {
    js: (l) => {
      const prixM2 = l.prix !== null && l.surface ? l.prix / l.surface : null;
      return prixM2 !== null && (prixM2 < PRIX_M2_PLAUSIBLE.min || prixM2 > PRIX_M2_PLAUSIBLE.max);
    },
    sql: `a.prix IS NOT NULL AND a.surface <> 0
      AND (a.prix / a.surface < ${PRIX_M2_PLAUSIBLE.min} OR a.prix / a.surface > ${PRIX_M2_PLAUSIBLE.max})`,
  },
  surface_atypique: {
    js: (l) =>
      l.surface !== null && (l.surface < SURFACE_LOGEMENT_PLAUSIBLE.min || l.surface > SURFACE_LOGEMENT_PLAUSIBLE.max),
    sql: `a.surface < ${SURFACE_LOGEMENT_PLAUSIBLE.min} OR a.surface > ${SURFACE_LOGEMENT_PLAUSIBLE.max}`,
  },
  rattachement_incertain: {
    js: (l) => !l.cle_ban && (l.precision_position === 'approchee' || l.precision_position === 'centre_commune'),
    sql: `coalesce(a.cle_ban, '') = '' AND a.precision_position IN ('approchee', 'centre_commune')`,
  },
  // `maintenant` is the statement's first parameter (LISTE_SQL). An interval of seconds: no day of 23 or 25 hours.
  donnee_ancienne: {
    js: (l, maintenant) =>
      l.statut === 'actif' && maintenant.getTime() - l.vu_le.getTime() > RELEVE_ANCIEN_JOURS * 86_400_000,
    sql: `a.statut = 'actif' AND a.vu_le < $1::timestamptz - make_interval(secs => ${RELEVE_ANCIEN_JOURS * 86_400})`,
  },
};

/**
 * The list format of a listing (AnnonceListeSchema, its fields in that order) as JSON text, written by PostgreSQL on
 * the row `a` of `annonces`: `$1` the time of the reading (timestamptz), `$2` whether the caller has the scope
 * lien_origine. row_to_json writes each column under its name, compact, in the order of the select list. Numbers are
 * PostgreSQL's shortest exact form, as JavaScript writes them (only past 10^16 or under 10^-4, which no price,
 * surface or position reaches, would it write an exponent where JavaScript does not).
 */
const LISTE_SQL = `(SELECT row_to_json(l)::text FROM (SELECT a.id,
    CASE WHEN $2::boolean THEN a.portail || ':' || a.identifiant END AS id_portail,
    CASE WHEN $2::boolean THEN a.lien END AS lien,
    a.portail AS source, a.statut, a.type, a.commune, a.code_postal, a.insee, a.departement, a.lat, a.lon,
    a.precision_position AS precision_coordonnees, a.prix, a.surface, a.pieces,
    -- As Math.round does: half up, on the same double.
    CASE WHEN a.prix IS NOT NULL AND a.surface <> 0 THEN floor(a.prix / a.surface + 0.5) END AS prix_m2,
    a.dpe->'etiquette' AS dpe, a.analyse_score AS score, a.analyse_rendement_brut_pct AS rendement_brut,
    a.analyse_rendement_net_pct AS rendement_net, NULL AS etat_visuel,
    to_char(a.premiere_parution, 'YYYY-MM-DD') AS premiere_parution, a.type_vendeur,
    (SELECT row_to_json(v) FROM (SELECT a.type_vendeur,
       ${['nom', 'enseigne', 'siren'].map((k) => `CASE WHEN a.type_vendeur = 'pro' THEN a.annonceur->>'${k}' END AS ${k}`).join(', ')}) v)
      AS annonceur,
    array_remove(ARRAY[${DRAPEAUX.filter((d) => REGLES_DRAPEAUX[d])
      .map((d) => `CASE WHEN ${REGLES_DRAPEAUX[d]!.sql} THEN '${d}' END`)
      .join(', ')}]::text[], NULL) AS drapeaux) l)`;

/** The flags of a listing's sheet (REGLES_DRAPEAUX). */
function drapeauxDe(l: LigneAnnonce, maintenant: Date): Drapeau[] {
  return drapeaux(
    Object.entries(REGLES_DRAPEAUX)
      .filter(([, regle]) => regle.js(l, maintenant))
      .map(([d]) => d as Drapeau),
  );
}

export const REGLE_DRAPEAUX = `\`doublon_probable\` : une autre annonce du même bien est celle que le flux sert ; \`date_estimee\` : première parution non donnée par le portail (le jour du premier relevé) ; \`prix_atypique\` : prix au m² hors ${PRIX_M2_PLAUSIBLE.min}-${PRIX_M2_PLAUSIBLE.max} € ; \`surface_atypique\` : surface hors ${SURFACE_LOGEMENT_PLAUSIBLE.min}-${SURFACE_LOGEMENT_PLAUSIBLE.max} m² ; \`rattachement_incertain\` : position approchée ou au centre de la commune, sans numéro BAN ; \`donnee_ancienne\` : annonce en ligne dont le dernier relevé a plus de ${RELEVE_ANCIEN_JOURS} jours.`;

const prixM2 = (l: LigneAnnonce) => (l.prix !== null && l.surface ? Math.round(l.prix / l.surface) : null);
const idPortail = (l: LigneAnnonce) => `${l.portail}:${l.identifiant}`;

/** The seller as served: a professional as published, anyone else with no name and no contact. */
function annonceurServi(l: Pick<LigneAnnonce, 'type_vendeur' | 'annonceur'>) {
  const a = l.type_vendeur === 'pro' ? l.annonceur : null;
  return {
    type_vendeur: l.type_vendeur,
    nom: a?.nom ?? null,
    enseigne: a?.enseigne ?? null,
    siren: a?.siren ?? null,
    mandat: a?.mandat ?? null,
    telephone: a?.telephone ?? null,
    email: a?.email ?? null,
  };
}

/** The full sheet of a listing. */
export function fiche(l: LigneAnnonce, o: { lienOrigine: boolean; brut: boolean; maintenant: Date }): Annonce {
  const limites: string[] = [];
  if (!o.lienOrigine) limites.push('id_portail et lien : servis avec la portée lien_origine seulement.');
  if (l.statut === 'masque') {
    limites.push(
      'statut masque : le portail a suspendu l’annonce (contrôle en cours) ; le flux ne la sert pas d’ici là.',
    );
  }
  if (!l.principale) limites.push('Doublon probable : une autre annonce de ce bien est celle que le flux sert.');
  if (o.brut && l.type_vendeur !== 'pro') {
    limites.push('brut : données du portail servies pour un vendeur professionnel seulement.');
  }
  const terrainS = terrainSuspect(l.type, l.terrain_portail_m2, l.surface);
  const dpe = { etiquette: null, conso_kwh_m2_an: null, ges: null, ges_kg_m2_an: null, ges_statut: null, ...l.dpe };
  const qualite: Qualite = {
    n: l.releves,
    provenance: 'mesure',
    incertitude: null,
    drapeaux: drapeauxDe(l, o.maintenant),
    methode:
      'Dernier relevé du portail ; prix_m2 = prix / surface ; n = relevés appliqués à l’annonce depuis son entrée.',
    donnees_du: l.vu_le.toISOString(),
    source: `Relevés du portail ${l.portail}`,
  };
  return {
    id: l.id,
    id_portail: o.lienOrigine ? idPortail(l) : null,
    lien: o.lienOrigine ? l.lien : null,
    source: l.portail,
    statut: l.statut,
    actif: l.statut === 'actif',
    type: l.type,
    neuf_ancien: l.neuf_ancien,
    commune: l.commune,
    code_postal: l.code_postal,
    insee: l.insee,
    departement: l.departement,
    region: l.region,
    position: l.lat !== null && l.lon !== null ? { lat: l.lat, lon: l.lon, precision: l.precision_position } : null,
    prix: l.prix,
    prix_m2: prixM2(l),
    prix_m2_portail: l.prix_m2_portail,
    surface: l.surface,
    pieces: l.pieces,
    chambres: l.chambres,
    etage: l.etage,
    nb_etages: l.nb_etages,
    salles_de_bain: l.salles_de_bain,
    salles_d_eau: l.salles_d_eau,
    terrain_m2: terrainS ? null : l.terrain_portail_m2,
    jardin_privatif_m2: l.jardin_privatif_m2,
    terrain_portail_m2: l.terrain_portail_m2,
    annee_construction: l.annee_construction,
    terrain_suspect: terrainS,
    dpe: { ...dpe, ...calendrierDpe(dpe.etiquette, l.departement, o.maintenant) },
    equipements: {
      ...Object.fromEntries([...EQUIPEMENTS_BOOLEENS, ...EQUIPEMENTS_TEXTES].map((k) => [k, null])),
      liste: [],
      ...l.equipements,
    },
    details_portail: {
      ...Object.fromEntries(DETAILS_NOMBRES.map((k) => [k, null])),
      honoraires_a_charge: null,
      procedure_copro: null,
      en_copro: null,
      ...l.details_portail,
      charges_suspectes: chargesSuspectes(l.type, l.details_portail, l.surface),
    },
    type_vendeur: l.type_vendeur,
    annonceur: annonceurServi(l),
    titre: l.titre,
    description: l.description,
    photos: l.photos,
    premiere_parution: { date: l.premiere_parution, estimee: l.premiere_parution_estimee },
    vu_le: l.vu_le.toISOString(),
    retire_le: l.retire_le?.toISOString() ?? null,
    entree_le: l.entree_le.toISOString(),
    maj_le: l.maj_le.toISOString(),
    bien_uid: l.bien_uid,
    principale: l.principale,
    analyse: l.analyse!,
    qualite,
    ...(o.brut ? { brut: l.type_vendeur === 'pro' ? l.brut : null } : {}),
    limites,
  };
}

/** A listing in the list format of the feed, as PostgreSQL wrote it (LISTE_SQL). */
export const enListe = (l: LigneListe): AnnonceListe => rawJson<AnnonceListe>(l.liste);

/**
 * An event of the listings' journal as the feed serves it (and the webhooks deliver it), as JSON text: the listing as
 * it is now, in the list format PostgreSQL wrote, or null when it is not served (a duplicate of another listing of its
 * property, or hidden). Text, not an object: a feed page is a thousand of them, copied into the answer as they are.
 */
export function evenementServi(ev: EvenementLu, l: LigneListe | undefined): string {
  const { id, genre, le, annonce_id, avant, apres } = ev;
  const evenement = JSON.stringify({ id: String(id), genre, le, annonce_id, avant, apres });
  const annonce = l && l.principale && l.statut !== 'masque' ? l.liste : 'null';
  return `${evenement.slice(0, -1)},"annonce":${annonce}}`;
}

/**
 * Listings by service identifier, in one read, each with its list format as read at `maintenant` by a caller with the
 * scope lien_origine or not. Joined to the identifiers as a set: a thousand of them in `= ANY` cost the planner more
 * than the read.
 */
export async function lireAnnoncesEnListe(
  db: Queryable,
  dataset: Dataset,
  ids: string[],
  o: { lienOrigine: boolean; maintenant: Date },
): Promise<Map<string, LigneListe>> {
  if (ids.length === 0) return new Map();
  const { rows } = await db.query<LigneListe>({
    name: 'annonces_en_liste',
    // The analysis's numbers from their own columns (db/migrations/038): the analysis is stored compressed.
    text: `SELECT a.id, a.type, a.prix, a.surface, a.statut, a.principale, a.cle_ban, a.analyse_score AS score,
              a.analyse_rendement_brut_pct AS rendement_brut_pct, ${LISTE_SQL} AS liste
       FROM annonces a
      WHERE a.dataset = $3 AND a.id IN (SELECT unnest($4::text[]))`,
    values: [o.maintenant, o.lienOrigine, dataset, [...new Set(ids)]],
  });
  return new Map(rows.map((r) => [r.id, r]));
}
