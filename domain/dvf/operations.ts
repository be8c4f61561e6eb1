import { z } from 'zod';
import type { Queryable } from '../../db/client.ts';
import { degreeCellSql, degreeCellsAround } from '../../lib/geometrie.ts';
import { defineOperation } from '../catalogue.ts';
import { communeByCode, departementOf } from '../communes.ts';
import { jour, nombre } from '../entrees.ts';
import { absenceDvf, absenceSource } from '../couverture.ts';
import { ApiError, invalidField } from '../errors.ts';
import { drapeaux as ordonnes, QualiteSchema, servedFromDataset, type Drapeau } from '../qualite.ts';
import { adresseConnue, type AdresseBan } from '../adresses/resoudre.ts';
import { PRIX_M2_PLAUSIBLE, SURFACE_LOGEMENT_PLAUSIBLE, type Mutation } from './mutation.ts';
import type { Dataset } from '../platform/sandbox.ts';

// ---------------------------------------------------------------------------------------------------------------------
// Shapes.
// ---------------------------------------------------------------------------------------------------------------------

const NATURES = ['vente', 'vefa', 'terrain_a_batir', 'adjudication', 'echange', 'expropriation'] as const;
const TYPES = ['appartement', 'maison', 'dependance', 'local'] as const;
const RATTACHEMENTS = ['numero', 'parcelle', 'position'] as const;
type Rattachement = (typeof RATTACHEMENTS)[number];

const SOURCE = 'DVF (DGFiP, Etalab)';
const METHODE =
  'prix_m2 = valeur foncière / surface réelle bâtie des appartements et maisons de la mutation, chaque local compté une fois (les lignes DVF répètent un local par subdivision de parcelle).';
/** Mutations of an address or parcel served at most, newest first. */
const MAX_MUTATIONS_ADRESSE = 500;
/** Sales from this vintage on are attached to a number by its address; older ones by position only. */
export const PREMIER_MILLESIME_NUMERO = 2021;

const MutationSchema = z.object({
  id_mutation: z.string().nullable().describe('Identifiant Etalab, ou dérivé du fichier DGFiP (AAAA-D…).'),
  date: z.string().describe('Date de la mutation (AAAA-MM-JJ).'),
  nature: z.enum(NATURES),
  valeur_fonciere: z.number().nullable().describe('Prix de l’ensemble de la mutation (€).'),
  adresse: z
    .object({
      numero: z.string().nullable().describe('Numéro et indice de répétition (« 12 », « 12 bis »).'),
      voie: z.string().nullable(),
      code_voie: z.string().nullable(),
      cle_ban: z.string().nullable(),
    })
    .nullable(),
  code_postal: z.string().nullable(),
  insee: z.string(),
  nb_dispositions: z.number().int(),
  locaux: z.array(
    z.object({
      type: z.enum(TYPES).nullable().describe('null : lots sans type de local.'),
      surface_bati: z.number().nullable(),
      pieces: z.number().int().nullable(),
      id_parcelle: z.string(),
      lots: z.array(z.object({ numero: z.string(), carrez: z.number().nullable() })),
    }),
  ),
  nombre_lots: z.number().int(),
  terrains: z.array(
    z.object({
      id_parcelle: z.string(),
      nature_culture: z.string().nullable(),
      nature_culture_speciale: z.string().nullable(),
      surface: z.number().nullable(),
    }),
  ),
  surface_terrain: z.number().nullable(),
  parcelles: z.array(z.string()),
  volumes: z.array(z.string()),
  lat: z.number().nullable(),
  lon: z.number().nullable(),
  surface_logements: z.number().nullable().describe('Somme des surfaces bâties des appartements et maisons (m²).'),
  prix_m2: z.number().nullable().describe('valeur_fonciere / surface_logements, recalculé (€/m²).'),
  indicateurs: z.object({
    logements: z.number().int(),
    vente_en_bloc: z.boolean(),
    avec_dependance: z.boolean(),
    avec_local_pro: z.boolean(),
    prix_atypique: z.boolean(),
    motif: z.string().nullable(),
  }),
  qualite: QualiteSchema,
  millesime: z.number().int(),
  rattachement: z.enum(RATTACHEMENTS).nullable(),
  distance_m: z.number().nullable(),
});
type MutationItem = z.infer<typeof MutationSchema>;

// ---------------------------------------------------------------------------------------------------------------------
// Reading.
// ---------------------------------------------------------------------------------------------------------------------

/** A stored mutation as read back: the importer's mutation, the BAN number it is attached to, and the reading's own. */
interface MutationRow extends Omit<
  Mutation,
  'format' | 'nature_libelle' | 'commune' | 'departement' | 'parcelle_principale'
> {
  cle_ban: string | null;
  distance_m: number | null;
  rattachement?: Rattachement;
}

const COLONNES = `m.id_mutation, to_char(m.date_mutation, 'YYYY-MM-DD') AS date_mutation, m.millesime, m.nature,
  m.valeur_fonciere, m.adresse_numero, m.adresse_suffixe, m.adresse_voie, m.code_voie, m.code_postal, m.insee,
  m.cle_ban, m.lat, m.lon, m.parcelles, m.volumes, m.nb_dispositions, m.nb_lignes, m.locaux::json, m.terrains::json,
  m.nombre_lots, m.surface_terrain, m.types_locaux, m.logements, m.surface_logements, m.prix_m2, m.vente_en_bloc,
  m.avec_dependance, m.avec_local_pro, m.prix_atypique, m.surface_atypique, m.doublon_probable, m.motif`;

/** The grid cell of a sale, as the index dvf_mutations_cellule (db/migrations/013_dvf_partitions.sql) computes it. */
const CELLULE = degreeCellSql('m.lat', 'm.lon');

/**
 * The index condition of a circle whose cells (`degreeCellsAround`) are parameter `p`; the exact test is
 * earth_distance or a planar distance after it.
 */
export const dansCellules = (p: number) => `${CELLULE} = ANY($${p}::bigint[])`;

/** Distance in metres from ($lat, $lon) given as parameters `p` and `p + 1`, to 0.1 m; null without a position. */
const distance = (p: number) =>
  `round(earth_distance(ll_to_earth($${p}, $${p + 1}), ll_to_earth(m.lat, m.lon))::numeric, 1)::float8`;

function numeroTexte(numero: number | null, suffixe: string | null): string | null {
  if (numero === null) return null;
  return suffixe ? `${numero} ${suffixe}` : String(numero);
}

/**
 * Sales at a BAN number by DVF's own address: same commune, street code and number (parameters `p` to `p + 2`) and
 * repetition index (`p + 3`, '' for none; DVF's B/T/Q read as bis/ter/quater, a BAN letter `b` matches `bis` too).
 * What says a sale is attached by its number. A number of the BAN finds its sales by their attached key instead
 * (attachBanKeys): no index serves this (db/migrations/014_dvf_numero_par_cle.sql).
 */
export const parNumero = (p: number) => `(m.insee = $${p} AND m.code_voie = $${p + 1} AND m.adresse_numero = $${p + 2}
  AND (coalesce(m.adresse_suffixe, '') = $${p + 3} OR left(coalesce(m.adresse_suffixe, ''), 1) = $${p + 3}))`;

/**
 * Sales on one of the parcels of parameter `p` (a text array): by the main parcel, or among the parcels of the few
 * mutations that have several. The same as `m.parcelles && $p`, written so that the btree on the main parcel and
 * the GIN on the parcels of multi-parcel mutations answer it (db/migrations/013_dvf_partitions.sql).
 */
export const surParcelles = (p: number) =>
  `(m.parcelle_principale = ANY($${p}::text[]) OR (cardinality(m.parcelles) > 1 AND m.parcelles && $${p}::text[]))`;

const DRAPEAUX_MUTATION = ['prix_atypique', 'surface_atypique', 'vente_en_bloc', 'doublon_probable'] as const;

/** The flags of a stored mutation: its columns of the same names. */
export function drapeauxDeMutation(m: Record<(typeof DRAPEAUX_MUTATION)[number], boolean>): Drapeau[] {
  return DRAPEAUX_MUTATION.filter((flag) => m[flag]);
}

function toItem(row: MutationRow, rattachement: Rattachement | null, cleBan: string | null = null): MutationItem {
  const drapeaux: Drapeau[] = drapeauxDeMutation(row);
  if (rattachement === 'position') drapeaux.push('rattachement_incertain');
  const numero = numeroTexte(row.adresse_numero, row.adresse_suffixe);
  const cle = (rattachement === 'numero' ? cleBan : null) ?? row.cle_ban;
  const hasAdresse = numero !== null || row.adresse_voie !== null || row.code_voie !== null || cle !== null;
  return {
    id_mutation: row.id_mutation,
    date: row.date_mutation,
    nature: row.nature,
    valeur_fonciere: row.valeur_fonciere,
    adresse: hasAdresse ? { numero, voie: row.adresse_voie, code_voie: row.code_voie, cle_ban: cle } : null,
    code_postal: row.code_postal,
    insee: row.insee,
    nb_dispositions: row.nb_dispositions,
    locaux: row.locaux,
    nombre_lots: row.nombre_lots,
    terrains: row.terrains,
    surface_terrain: row.surface_terrain,
    parcelles: row.parcelles,
    volumes: row.volumes,
    lat: row.lat,
    lon: row.lon,
    surface_logements: row.surface_logements,
    prix_m2: row.prix_m2,
    indicateurs: {
      logements: row.logements,
      vente_en_bloc: row.vente_en_bloc,
      avec_dependance: row.avec_dependance,
      avec_local_pro: row.avec_local_pro,
      prix_atypique: row.prix_atypique,
      motif: row.motif,
    },
    qualite: {
      n: row.nb_lignes,
      provenance: 'mesure',
      incertitude: null,
      drapeaux: ordonnes(drapeaux),
      methode: row.prix_m2 !== null ? METHODE : null,
      donnees_du: row.date_mutation,
      source: SOURCE,
    },
    millesime: row.millesime,
    rattachement,
    distance_m: row.distance_m ?? null,
  };
}

/** The vintages held for a dataset and the date of its newest sale. */
async function millesimesDe(db: Queryable, dataset: Dataset) {
  const { rows } = await db.query<{ premier: number | null; dernier: number | null; donnees_du: string | null }>(
    `SELECT min(millesime)::int AS premier, max(millesime)::int AS dernier,
            to_char(max(derniere_mutation), 'YYYY-MM-DD') AS donnees_du
       FROM dvf_millesimes WHERE dataset = $1 AND mutations > 0`,
    [dataset],
  );
  return rows[0];
}

// ---------------------------------------------------------------------------------------------------------------------
// Inputs.
// ---------------------------------------------------------------------------------------------------------------------

const dateParam = (description: string) => jour.optional().describe(description);
const booleen = z.union([z.boolean(), z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1')]);
const PARCELLE = /^(?:\d{2}|2[AB])\d{3}[0-9A-Z]{3}[0-9A-Z]{2}\d{4}$/;

const VentesAdresseInput = z.object({
  cle_ban: z.string().min(1).max(100).describe('Clé BAN d’un numéro (ex. 33001_0105_00012).'),
  depuis: dateParam('Ventes à partir de cette date (AAAA-MM-JJ).'),
  jusqu_a: dateParam('Ventes jusqu’à cette date incluse (AAAA-MM-JJ).'),
  inclure_2018_2020: booleen
    .default(true)
    .describe('Inclure les ventes 2018-2020, rattachées par position autour du numéro.'),
  rayon_position_m: nombre(z.number().min(1).max(100).default(15)).describe(
    'Rayon (m) du rattachement par position des ventes 2018-2020.',
  ),
});

const VentesParcelleInput = z.object({
  id_parcelle: z
    .string()
    .transform((v) => v.trim().toUpperCase())
    .pipe(
      z
        .string()
        .regex(PARCELLE, 'Identifiant de parcelle cadastrale : 14 caractères (INSEE, préfixe, section, numéro).'),
    )
    .describe('Parcelle cadastrale, 14 caractères (ex. 33001000AC0495).'),
  depuis: dateParam('Ventes à partir de cette date (AAAA-MM-JJ).'),
  jusqu_a: dateParam('Ventes jusqu’à cette date incluse (AAAA-MM-JJ).'),
});

const AdresseSchema = z
  .object({
    numero: z.string().nullable(),
    voie: z.string().nullable(),
    code_postal: z.string().nullable(),
    insee: z.string(),
    commune: z.string(),
    lat: z.number(),
    lon: z.number(),
  })
  .nullable();

const VentesAdresseOutput = z.object({
  cle_ban: z.string().nullable(),
  id_parcelle: z.string().nullable(),
  rattachement: z.enum(RATTACHEMENTS).nullable().describe('Le plus sûr des rattachements des mutations servies.'),
  adresse: AdresseSchema,
  parcelles_lues: z.array(z.string()),
  mutations: z.array(MutationSchema).describe('Les plus récentes d’abord.'),
  resume: z.object({
    n: z.number().int(),
    n_2021_et_apres: z.number().int(),
    n_2018_2020: z.number().int(),
    derniere: z.object({ date: z.string(), prix: z.number().nullable(), prix_m2: z.number().nullable() }).nullable(),
  }),
  millesimes: z.object({ premier: z.number().int().nullable(), dernier: z.number().int().nullable() }),
  donnees_du: z.string().nullable(),
  limites: z.array(z.string()),
});
type VentesAdresseSortie = z.infer<typeof VentesAdresseOutput>;

// ---------------------------------------------------------------------------------------------------------------------
// ventes_adresse
// ---------------------------------------------------------------------------------------------------------------------

type AdresseRow = Pick<
  AdresseBan,
  | 'cle_ban'
  | 'type'
  | 'numero'
  | 'suffixe'
  | 'voie'
  | 'code_voie'
  | 'code_postal'
  | 'insee'
  | 'commune'
  | 'lat'
  | 'lon'
  | 'parcelles'
>;

const ADRESSE_COLONNES =
  'cle_ban, type, numero, suffixe, voie, code_voie, code_postal, insee, commune, lat, lon, parcelles';

function adresseOf(a: AdresseRow | null): VentesAdresseSortie['adresse'] {
  if (!a) return null;
  return {
    numero: numeroTexte(a.numero, a.suffixe),
    voie: a.voie,
    code_postal: a.code_postal,
    insee: a.insee,
    commune: a.commune,
    lat: a.lat,
    lon: a.lon,
  };
}

function absent(insee: string, ce: string): never {
  const raison = absenceDvf(departementOf(insee));
  if (raison) throw new ApiError('ressource_absente', `${raison} Commune de ${ce} : ${insee} ; rien n’est débité.`);
  throw new ApiError('ressource_absente', `Aucune vente DVF pour ${ce} avec ces critères ; rien n’est débité.`);
}

function dateFilters(params: unknown[], depuis?: string, jusquA?: string): string {
  let sql = '';
  if (depuis) {
    params.push(depuis);
    sql += ` AND m.date_mutation >= $${params.length}`;
  }
  if (jusquA) {
    params.push(jusquA);
    sql += ` AND m.date_mutation <= $${params.length}`;
  }
  return sql;
}

function limitesCommunes(): string[] {
  return [
    'DVF recense les mutations à titre onéreux publiées par la DGFiP (ventes, VEFA, adjudications, échanges, expropriations) ; ni donations ni successions, ni l’Alsace-Moselle (livre foncier) ni Mayotte.',
    `prix_m2 est recalculé sur la surface bâtie des appartements et maisons ; il porte sur tout ce que la mutation vend (dépendances et locaux professionnels compris, voir indicateurs). Bornes de prix_atypique : ${PRIX_M2_PLAUSIBLE.min} à ${PRIX_M2_PLAUSIBLE.max} €/m², ou 1 € et moins ; de surface_atypique : ${SURFACE_LOGEMENT_PLAUSIBLE.min} à ${SURFACE_LOGEMENT_PLAUSIBLE.max} m² par logement.`,
  ];
}

function resumeOf(mutations: MutationItem[]): VentesAdresseSortie['resume'] {
  const derniere = mutations[0];
  return {
    n: mutations.length,
    n_2021_et_apres: mutations.filter((m) => m.millesime >= PREMIER_MILLESIME_NUMERO).length,
    n_2018_2020: mutations.filter((m) => m.millesime >= 2018 && m.millesime <= 2020).length,
    derniere: derniere ? { date: derniere.date, prix: derniere.valeur_fonciere, prix_m2: derniere.prix_m2 } : null,
  };
}

function newestFirst(a: MutationItem, b: MutationItem): number {
  if (a.date !== b.date) return a.date < b.date ? 1 : -1;
  return (a.id_mutation ?? '') < (b.id_mutation ?? '') ? 1 : -1;
}

const RANG: Record<Rattachement, number> = { numero: 0, parcelle: 1, position: 2 };

async function sortie(
  db: Queryable,
  dataset: Dataset,
  base: Pick<VentesAdresseSortie, 'cle_ban' | 'id_parcelle' | 'adresse' | 'parcelles_lues'>,
  mutations: MutationItem[],
  limites: string[],
  depuis2018: boolean,
): Promise<VentesAdresseSortie> {
  const tronque = mutations.length > MAX_MUTATIONS_ADRESSE;
  const servies = mutations.slice(0, MAX_MUTATIONS_ADRESSE);
  if (tronque) {
    limites.push(`Au plus ${MAX_MUTATIONS_ADRESSE} mutations servies, les plus récentes : resserrez depuis / jusqu_a.`);
  }
  const held = await millesimesDe(db, dataset);
  const plancher = depuis2018 ? 2018 : PREMIER_MILLESIME_NUMERO;
  const premier = held.premier === null ? null : Math.max(held.premier, plancher);
  const ratt = servies.map((m) => m.rattachement).filter((r): r is Rattachement => r !== null);
  return {
    ...base,
    rattachement: ratt.length ? ratt.reduce((a, b) => (RANG[b] < RANG[a] ? b : a)) : null,
    mutations: servies,
    resume: resumeOf(servies),
    millesimes: {
      premier: premier !== null && held.dernier !== null && premier <= held.dernier ? premier : null,
      dernier: premier !== null && held.dernier !== null && premier <= held.dernier ? held.dernier : null,
    },
    donnees_du: held.donnees_du,
    limites: [...limites, ...limitesCommunes()],
  };
}

const DESCRIPTION_ADRESSE = `Toutes les mutations DVF d'un numéro de la Base Adresse Nationale ou d'une parcelle cadastrale, groupées par mutation (toutes les lignes de l'acte : locaux, lots, terrains), les plus récentes d'abord, avec le prix au m² recalculé, les indicateurs et la qualité de chaque mutation.

**Rattachement.** Ventes depuis 2021 : celles rattachées à la clé BAN de l'adresse (même commune, même code de voie, même numéro et indice ; à défaut, seul numéro BAN de leur parcelle principale ; rattachement refait après chaque import DVF et chaque import BAN), puis celles des parcelles de l'adresse (\`parcelles_lues\`) ; \`rattachement\` = \`numero\` quand la vente porte le code de voie, le numéro et l'indice de l'adresse, \`parcelle\` sinon. Ventes 2018-2020 (\`inclure_2018_2020\`, vrai par défaut) : par position seulement, à \`rayon_position_m\` (15 m par défaut, 1-100) du numéro ; \`rattachement\` = \`position\` et \`qualite.drapeaux\` contient \`rattachement_incertain\`. \`distance_m\` : distance de la mutation au numéro (ou à l'adresse de la parcelle), quand les deux positions sont connues. Par parcelle, toutes les mutations qui comprennent la parcelle, quel que soit leur millésime (\`rattachement\` = \`parcelle\`).

**Calculs.** \`prix_m2\` = valeur foncière / surface bâtie des appartements et maisons, chaque local compté une fois (les lignes DVF répètent un local pour chaque subdivision de la parcelle). \`indicateurs\` : \`logements\`, \`vente_en_bloc\` (2 logements ou plus), \`avec_dependance\`, \`avec_local_pro\`, \`prix_atypique\` (hors ${PRIX_M2_PLAUSIBLE.min}-${PRIX_M2_PLAUSIBLE.max} €/m², ou 1 € et moins) et \`motif\` : la première raison de ne pas lire \`prix_m2\` comme le prix d'un logement (pas de logement, échange, prix symbolique, vente en bloc, local professionnel…), sinon null. \`qualite\` : \`n\` = lignes DVF de la mutation, \`provenance\` mesure, \`drapeaux\` tirés de la mutation, \`donnees_du\` = date de la mutation. \`donnees_du\` de la réponse : date de la vente la plus récente de la base ; \`millesimes\` : millésimes détenus que la requête couvre.

**Décisions.**
- Aucune vente : 404 \`ressource_absente\`, rien n'est débité. Clé BAN inconnue : 404 \`adresse_introuvable\`, rien n'est débité. Clé d'une voie, d'un lieu-dit ou d'une commune : 404 \`ressource_absente\` (les ventes se lisent par numéro ou par parcelle).
- **Alsace-Moselle** (57, 67, 68) et Mayotte (976) ne sont pas dans DVF : 404 \`ressource_absente\` dont le \`detail\` l'explique (pas une liste vide qui ferait croire à une absence de ventes), rien n'est débité.
- Au plus ${MAX_MUTATIONS_ADRESSE} mutations, les plus récentes ; \`limites\` le dit quand la liste est coupée.
- \`adresse.numero\` d'une mutation et de la réponse : numéro et indice de répétition en texte (« 12 bis »).
- Par parcelle, \`adresse\` est le numéro BAN de la parcelle quand elle n'en porte qu'un, sinon null.`;

const COMMUN_VENTES_ADRESSE = {
  tool: 'ventes_adresse',
  method: 'GET',
  credits: 5,
  unit: 'appel',
  scope: 'adresse',
  tier: 'usage',
  sandbox: false,
  cacheS: 86_400,
  timeoutS: 15,
  description: DESCRIPTION_ADRESSE,
  output: VentesAdresseOutput,
  dataDate: (o: VentesAdresseSortie) => o.donnees_du,
} as const;

export const ventesAdresse = defineOperation({
  ...COMMUN_VENTES_ADRESSE,
  path: '/adresses/{cle_ban}/ventes',
  lot: true,
  summary: 'Ventes DVF d’une adresse',
  errors: ['ressource_absente', 'adresse_introuvable'],
  input: VentesAdresseInput,
  handler: servedFromDataset(async (entree, ctx, dataset) => {
    const db = ctx.services.db;
    const a = await adresseConnue(db, dataset, entree.cle_ban);
    if (absenceDvf(departementOf(a.insee))) absent(a.insee, 'cette adresse');
    if (a.type !== 'numero') {
      throw new ApiError(
        'ressource_absente',
        `« ${a.cle_ban} » est la clé d’une ${a.type === 'voie' ? 'voie' : a.type === 'lieu_dit' ? 'lieu-dit' : 'commune'} : les ventes se lisent par numéro ou par parcelle ; rien n’est débité.`,
      );
    }
    const parcelles = a.parcelles ?? [];
    const params: unknown[] = [
      dataset,
      a.lat,
      a.lon,
      a.cle_ban,
      a.insee,
      a.code_voie,
      a.numero,
      a.suffixe ?? '',
      parcelles,
    ];
    const dates = dateFilters(params, entree.depuis, entree.jusqu_a);
    const recentes = await db.query<MutationRow>(
      `SELECT ${COLONNES}, ${distance(2)} AS distance_m,
              CASE WHEN ${parNumero(5)} THEN 'numero' ELSE 'parcelle' END AS rattachement
         FROM dvf_mutations m
        WHERE m.dataset = $1 AND m.millesime >= ${PREMIER_MILLESIME_NUMERO}
          AND (m.cle_ban = $4 OR ${surParcelles(9)})${dates}
        ORDER BY m.date_mutation DESC, m.id_mutation DESC
        LIMIT ${MAX_MUTATIONS_ADRESSE + 1}`,
      params,
    );
    const mutations = recentes.rows.map((r) => toItem(r, r.rattachement!, a.cle_ban));
    const limites: string[] = [];
    if (entree.inclure_2018_2020) {
      const p: unknown[] = [
        dataset,
        a.lat,
        a.lon,
        entree.rayon_position_m,
        degreeCellsAround(a.lat, a.lon, entree.rayon_position_m),
      ];
      const d = dateFilters(p, entree.depuis, entree.jusqu_a);
      const anciennes = await db.query<MutationRow>(
        `SELECT ${COLONNES}, ${distance(2)} AS distance_m
           FROM dvf_mutations m
          WHERE m.dataset = $1 AND m.millesime BETWEEN 2018 AND ${PREMIER_MILLESIME_NUMERO - 1}
            AND ${dansCellules(5)}
            AND earth_distance(ll_to_earth($2, $3), ll_to_earth(m.lat, m.lon)) <= $4${d}
          ORDER BY m.date_mutation DESC, m.id_mutation DESC
          LIMIT ${MAX_MUTATIONS_ADRESSE + 1}`,
        p,
      );
      mutations.push(...anciennes.rows.map((r) => toItem(r, 'position')));
      if (anciennes.rows.length > 0) {
        limites.push(
          `Ventes 2018-2020 rattachées par position, à ${entree.rayon_position_m} m du numéro au plus : elles peuvent concerner un voisin (rattachement_incertain).`,
        );
      }
    }
    if (mutations.length === 0) absent(a.insee, 'cette adresse');
    mutations.sort(newestFirst);
    return sortie(
      db,
      dataset,
      { cle_ban: a.cle_ban, id_parcelle: null, adresse: adresseOf(a), parcelles_lues: parcelles },
      mutations,
      limites,
      entree.inclure_2018_2020,
    );
  }),
});

export const ventesParcelle = defineOperation({
  ...COMMUN_VENTES_ADRESSE,
  variant: 'parcelle',
  path: '/parcelles/{id_parcelle}/ventes',
  summary: 'Ventes DVF d’une parcelle cadastrale',
  errors: ['ressource_absente'],
  input: VentesParcelleInput,
  handler: servedFromDataset(async (entree, ctx, dataset) => {
    const db = ctx.services.db;
    const id = entree.id_parcelle;
    const insee = id.slice(0, 5);
    if (absenceDvf(departementOf(insee))) absent(insee, 'cette parcelle');
    const { rows: adresses } = await db.query<AdresseRow>(
      `SELECT ${ADRESSE_COLONNES} FROM adresses
        WHERE dataset = $1 AND insee = $2 AND type = 'numero' AND parcelles @> ARRAY[$3]
        ORDER BY numero, cle_ban LIMIT 2`,
      [dataset, insee, id],
    );
    const a = adresses.length === 1 ? adresses[0] : null;
    const params: unknown[] = [dataset, a?.lat ?? null, a?.lon ?? null, [id]];
    const dates = dateFilters(params, entree.depuis, entree.jusqu_a);
    const { rows } = await db.query<MutationRow>(
      `SELECT ${COLONNES}, CASE WHEN $2::float8 IS NULL OR m.lat IS NULL THEN NULL ELSE ${distance(2)} END AS distance_m
         FROM dvf_mutations m
        WHERE m.dataset = $1 AND ${surParcelles(4)}${dates}
        ORDER BY m.date_mutation DESC, m.id_mutation DESC
        LIMIT ${MAX_MUTATIONS_ADRESSE + 1}`,
      params,
    );
    if (rows.length === 0) absent(insee, 'cette parcelle');
    return sortie(
      db,
      dataset,
      { cle_ban: null, id_parcelle: id, adresse: adresseOf(a), parcelles_lues: [id] },
      rows.map((r) => toItem(r, 'parcelle')),
      [],
      true,
    );
  }),
});

// ---------------------------------------------------------------------------------------------------------------------
// ventes
// ---------------------------------------------------------------------------------------------------------------------

const nombrePositif = (description: string) => nombre(z.number().min(0).optional()).describe(description);

const VentesInput = z.object({
  lat: nombre(z.number().min(-90).max(90).optional()).describe('Latitude du point (WGS84), avec lon.'),
  lon: nombre(z.number().min(-180).max(180).optional()).describe('Longitude du point (WGS84), avec lat.'),
  rayon_m: nombre(z.number().min(10).max(2000).default(300)).describe('Rayon autour du point (m), 10-2000.'),
  insee: z
    .string()
    .transform((v) => v.trim().toUpperCase())
    .pipe(z.string().regex(/^(?:\d{2}|2[AB])\d{3}$/, 'Code INSEE de commune : 5 caractères (2A/2B en Corse).'))
    .optional()
    .describe('Commune (code INSEE) ; avec un point, restreint le cercle à la commune.'),
  type: z.enum(TYPES).optional().describe('Mutations comprenant un local de ce type (filtre après lecture).'),
  nature: z.enum(NATURES).optional().describe('Nature de la mutation (filtre après lecture).'),
  depuis: dateParam('Ventes à partir de cette date (AAAA-MM-JJ).'),
  jusqu_a: dateParam('Ventes jusqu’à cette date incluse (AAAA-MM-JJ).'),
  surface_min: nombrePositif('Surface bâtie minimale (m²) : des logements, ou des locaux de `type` (après lecture).'),
  surface_max: nombrePositif('Surface bâtie maximale (m²), même règle (après lecture).'),
  prix_min: nombrePositif('Valeur foncière minimale (€, après lecture).'),
  prix_max: nombrePositif('Valeur foncière maximale (€, après lecture).'),
  tri: z.enum(['date', 'distance']).optional().describe('distance par défaut autour d’un point, date sinon.'),
  limite: nombre(z.number().int().min(1).max(50).default(20)).describe('Mutations lues par page (1-50).'),
  curseur: z.string().min(1).max(1024).optional().describe('curseur_suivant de la page précédente.'),
});
type VentesEntree = z.output<typeof VentesInput>;

const VentesOutput = z.object({
  recherche: z.object({
    mode: z.enum(['mutation', 'point', 'commune']),
    tri: z.enum(['date', 'distance']).nullable(),
    insee: z.string().nullable(),
    lat: z.number().nullable(),
    lon: z.number().nullable(),
    rayon_m: z.number().nullable(),
  }),
  donnees: z.array(MutationSchema),
  curseur_suivant: z.string().nullable().describe('Page suivante ; null sur la dernière.'),
  limites: z.array(z.string()),
});
type VentesSortie = z.infer<typeof VentesOutput>;

const VentesMutationInput = z.object({
  id_mutation: z.string().trim().min(1).max(100).describe('Identifiant de la mutation (ex. 2021-527130).'),
});

function surfaceOf(row: MutationRow, type: VentesEntree['type']): number | null {
  if (!type) return row.surface_logements;
  const locaux = row.locaux.filter((l) => l.type === type && l.surface_bati !== null);
  return locaux.length ? locaux.reduce((s, l) => s + (l.surface_bati ?? 0), 0) : null;
}

function passes(row: MutationRow, e: VentesEntree): boolean {
  if (e.type && !row.types_locaux.includes(e.type)) return false;
  if (e.nature && row.nature !== e.nature) return false;
  if (e.surface_min !== undefined || e.surface_max !== undefined) {
    const s = surfaceOf(row, e.type);
    if (
      s === null ||
      (e.surface_min !== undefined && s < e.surface_min) ||
      (e.surface_max !== undefined && s > e.surface_max)
    ) {
      return false;
    }
  }
  if (e.prix_min !== undefined || e.prix_max !== undefined) {
    const v = row.valeur_fonciere;
    if (v === null || (e.prix_min !== undefined && v < e.prix_min) || (e.prix_max !== undefined && v > e.prix_max)) {
      return false;
    }
  }
  return true;
}

/** Département of the nearest known place (BAN number within 3 km, else commune centre within 15 km), or null. */
async function departementAuPoint(db: Queryable, dataset: Dataset, lat: number, lon: number): Promise<string | null> {
  const adresse = await db.query<{ insee: string }>(
    `SELECT insee FROM adresses
      WHERE dataset = $1 AND earth_box(ll_to_earth($2, $3), 3000) @> ll_to_earth(lat, lon)
      ORDER BY ll_to_earth(lat, lon) <-> ll_to_earth($2, $3) LIMIT 1`,
    [dataset, lat, lon],
  );
  if (adresse.rows[0]) return departementOf(adresse.rows[0].insee);
  const commune = await db.query<{ insee: string }>(
    `SELECT insee FROM communes
      WHERE dataset = $1 AND lat IS NOT NULL AND lat BETWEEN $2 - 0.14 AND $2 + 0.14 AND lon BETWEEN $3 - 0.2 AND $3 + 0.2
      ORDER BY earth_distance(ll_to_earth($2, $3), ll_to_earth(lat, lon)) LIMIT 1`,
    [dataset, lat, lon],
  );
  return commune.rows[0] ? departementOf(commune.rows[0].insee) : null;
}

type Position = [string, string] | [number, string];

const LIMITES_VENTES = [
  'Ventes depuis 2021 seulement (millésimes 2018-2020 : par adresse, avec ventes_adresse).',
  'Les filtres type, nature, surface et prix s’appliquent après lecture : une page peut compter moins de `limite` mutations, voire aucune ; suivre curseur_suivant jusqu’à null.',
];

const DESCRIPTION_VENTES = `Mutations DVF une à une, avec toutes leurs lignes (locaux, lots, terrains) et le prix au m² recalculé : autour d'un point (\`lat\`, \`lon\`, \`rayon_m\` 10-2000 m, 300 par défaut), dans une commune (\`insee\`), ou par identifiant (\`GET /ventes/{id_mutation}\`). Ventes depuis 2021. **1 crédit par mutation servie** (une page vide ne coûte rien).

**Ordre et pages.** Autour d'un point : par distance croissante (\`tri=distance\`, défaut) ou par date décroissante (\`tri=date\`) ; dans une commune : par date décroissante (\`tri=distance\` y est refusé, faute de point). \`limite\` (1-50, 20 par défaut) mutations sont lues par page, \`curseur_suivant\` donne la suite (null à la fin) ; le curseur est lié à la recherche et à ses filtres, un curseur altéré ou d'une autre recherche répond 400 sur \`curseur\`.

**Filtres.** \`depuis\` / \`jusqu_a\` bornent la lecture. \`type\` (mutation comprenant un local de ce type), \`nature\`, \`surface_min\` / \`surface_max\` (surface bâtie des logements, ou des locaux de \`type\` s'il est donné ; une mutation sans cette surface est écartée) et \`prix_min\` / \`prix_max\` (valeur foncière) s'appliquent **après lecture**, comme le dit la spécification : une page peut compter moins de \`limite\` mutations.

**Décisions.**
- Point et commune ensemble : le cercle, restreint à la commune (\`recherche.mode\` = point). Ni l'un ni l'autre : 400.
- Les dates bornent la lecture elle-même (index par commune et date) : les pages ne se vident pas hors de la période.
- **Alsace-Moselle** (57, 67, 68) et Mayotte : 200 avec \`donnees\` vide, 0 crédit, et l'explication dans \`limites\` (commune demandée, ou commune du point d'après l'adresse ou la commune connue la plus proche).
- Commune inconnue (ni au découpage administratif ni dans DVF) : 404 \`commune_introuvable\`, rien n'est débité. Mutation inconnue : 404 \`ressource_absente\`, rien n'est débité.
- \`distance_m\` : distance au point (commune et identifiant : null) ; \`rattachement\` : null (pas d'adresse en jeu).
- \`prix_m2\`, \`indicateurs\` et \`qualite\` : comme pour ventes_adresse (valeur / surface bâtie des logements, chaque local compté une fois ; \`qualite.n\` = lignes DVF de la mutation).`;

const COMMUN_VENTES = {
  tool: 'ventes',
  method: 'GET',
  credits: 1,
  unit: 'element',
  scope: 'adresse',
  tier: 'usage',
  sandbox: false,
  cacheS: 86_400,
  timeoutS: 15,
  description: DESCRIPTION_VENTES,
  output: VentesOutput,
  units: (o: VentesSortie) => o.donnees.length,
  dataDate: (o: VentesSortie) =>
    o.donnees.reduce<string | null>((d, m) => (d === null || m.date > d ? m.date : d), null),
} as const;

export const ventes = defineOperation({
  ...COMMUN_VENTES,
  path: '/ventes',
  summary: 'Ventes DVF autour d’un point ou dans une commune',
  errors: ['commune_introuvable'],
  input: VentesInput,
  handler: servedFromDataset(async (e, ctx, dataset) => {
    const db = ctx.services.db;
    const point = e.lat !== undefined || e.lon !== undefined;
    if (point && (e.lat === undefined || e.lon === undefined)) {
      throw invalidField(e.lat === undefined ? 'lat' : 'lon', 'lat et lon vont ensemble.', 'requete');
    }
    if (!point && !e.insee) {
      throw new ApiError('parametres_invalides', 'Un point (lat, lon) ou une commune (insee) est requis.', {
        erreurs: [
          { champ: 'lat', emplacement: 'requete', message: 'lat et lon, ou insee' },
          { champ: 'insee', emplacement: 'requete', message: 'lat et lon, ou insee' },
        ],
      });
    }
    if (!point && e.tri === 'distance') {
      throw invalidField('tri', 'Le tri par distance demande un point (lat, lon).', 'requete');
    }
    if (e.depuis && e.jusqu_a && e.depuis > e.jusqu_a) {
      throw invalidField('jusqu_a', 'jusqu_a précède depuis.', 'requete');
    }
    const tri = e.tri ?? (point ? 'distance' : 'date');
    const recherche: VentesSortie['recherche'] = {
      mode: point ? 'point' : 'commune',
      tri,
      insee: e.insee ?? null,
      lat: point ? e.lat! : null,
      lon: point ? e.lon! : null,
      rayon_m: point ? e.rayon_m : null,
    };
    const { limite: _limite, curseur, ...bound } = e;
    const scope = `ventes|${dataset}|${JSON.stringify(bound)}`;
    let apres: Position | null = null;
    if (curseur) {
      apres = ctx.services.cursors.decode<Position>(scope, curseur);
      if (!Array.isArray(apres) || apres.length !== 2) {
        throw invalidField('curseur', 'Curseur invalide : altéré, ou émis pour une autre recherche.', 'requete');
      }
    }

    if (e.insee) {
      const raison = absenceDvf(departementOf(e.insee));
      if (raison) return { recherche, donnees: [], curseur_suivant: null, limites: [raison, ...LIMITES_VENTES] };
    }

    const params: unknown[] = [dataset];
    const where: string[] = ['m.dataset = $1', `m.millesime >= ${PREMIER_MILLESIME_NUMERO}`];
    let order: string;
    let select = `${COLONNES}, NULL::float8 AS distance_m`;
    if (point) {
      params.push(e.lat, e.lon, e.rayon_m, degreeCellsAround(e.lat!, e.lon!, e.rayon_m));
      select = `${COLONNES}, earth_distance(ll_to_earth($2, $3), ll_to_earth(m.lat, m.lon)) AS distance_m`;
      where.push(dansCellules(5), 'earth_distance(ll_to_earth($2, $3), ll_to_earth(m.lat, m.lon)) <= $4');
    }
    if (e.insee) {
      params.push(e.insee);
      where.push(`m.insee = $${params.length}`);
    }
    const dates = dateFilters(params, e.depuis, e.jusqu_a);
    if (tri === 'distance') {
      order = 'ORDER BY distance_m, m.id_mutation';
      if (apres) {
        params.push(apres[0], apres[1]);
        where.push(
          `(earth_distance(ll_to_earth($2, $3), ll_to_earth(m.lat, m.lon)), m.id_mutation) > ($${params.length - 1}::float8, $${params.length})`,
        );
      }
    } else {
      order = 'ORDER BY m.date_mutation DESC, m.id_mutation DESC';
      if (apres) {
        params.push(apres[0], apres[1]);
        where.push(`(m.date_mutation, m.id_mutation) < ($${params.length - 1}::date, $${params.length})`);
      }
    }
    params.push(e.limite + 1);
    const { rows } = await db.query<MutationRow>(
      `SELECT ${select} FROM dvf_mutations m WHERE ${where.join(' AND ')}${dates} ${order} LIMIT $${params.length}`,
      params,
    );
    const page = rows.slice(0, e.limite);
    const last = page.at(-1);
    const curseurSuivant =
      rows.length > e.limite && last
        ? ctx.services.cursors.encode(scope, [
            tri === 'distance' ? last.distance_m! : last.date_mutation,
            last.id_mutation,
          ])
        : null;
    const donnees = page
      .filter((r) => passes(r, e))
      .map((r) => {
        const item = toItem(r, null);
        if (item.distance_m !== null) item.distance_m = Math.round(item.distance_m * 10) / 10;
        return item;
      });

    const limites = [...LIMITES_VENTES];
    if (rows.length === 0 && !apres) {
      if (e.insee && !communeByCode(e.insee)) {
        const connue = await db.query('SELECT 1 FROM dvf_mutations WHERE dataset = $1 AND insee = $2 LIMIT 1', [
          dataset,
          e.insee,
        ]);
        if (connue.rows.length === 0) {
          throw new ApiError('commune_introuvable', `Aucune commune n’a le code ${e.insee} ; rien n’est débité.`);
        }
      }
      const departement = point ? await departementAuPoint(db, dataset, e.lat!, e.lon!) : departementOf(e.insee!);
      const ici = point ? `à moins de ${e.rayon_m} m de ce point` : `dans la commune ${e.insee}`;
      limites.unshift(
        (departement ? await absenceSource(db, dataset, 'dvf', departement) : null) ??
          (departement
            ? `Aucune vente DVF ${ici}${e.depuis || e.jusqu_a ? ' entre ces dates' : ''} dans les millésimes détenus depuis ${PREMIER_MILLESIME_NUMERO}.`
            : `Aucune adresse importée à moins de 3 km de ce point : il est hors des données importées.`),
      );
    } else if (donnees.length === 0 && !curseurSuivant) {
      limites.unshift('Aucune mutation de cette recherche ne passe les filtres type, nature, surface et prix.');
    } else if (donnees.length === 0) {
      limites.unshift('Aucune mutation de cette page ne passe les filtres : la suite est à curseur_suivant.');
    }
    return { recherche, donnees, curseur_suivant: curseurSuivant, limites };
  }),
});

export const ventesMutation = defineOperation({
  ...COMMUN_VENTES,
  variant: 'mutation',
  path: '/ventes/{id_mutation}',
  summary: 'Une mutation DVF par son identifiant',
  errors: ['ressource_absente'],
  input: VentesMutationInput,
  handler: servedFromDataset(async (e, ctx, dataset) => {
    const { rows } = await ctx.services.db.query<MutationRow>(
      `SELECT ${COLONNES}, NULL::float8 AS distance_m FROM dvf_mutations m WHERE m.dataset = $1 AND m.id_mutation = $2`,
      [dataset, e.id_mutation],
    );
    if (!rows[0]) {
      throw new ApiError(
        'ressource_absente',
        `Aucune mutation DVF n’a l’identifiant « ${e.id_mutation} » ; rien n’est débité.`,
      );
    }
    return {
      recherche: { mode: 'mutation' as const, tri: null, insee: null, lat: null, lon: null, rayon_m: null },
      donnees: [toItem(rows[0], null)],
      curseur_suivant: null,
      limites: [] as string[],
    };
  }),
});

/** The DVF operations, for the catalogue. */
export const dvfOperations = [ventesAdresse, ventesParcelle, ventes, ventesMutation];
