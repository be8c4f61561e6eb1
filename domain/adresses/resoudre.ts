import { z } from 'zod';
import { transaction, type Db, type Queryable } from '../../db/client.ts';
import { defineOperation } from '../catalogue.ts';
import { communeByCode } from '../communes.ts';
import { nombre } from '../entrees.ts';
import { ApiError } from '../errors.ts';
import { SANDBOX_COMMUNES, type Dataset } from '../platform/sandbox.ts';

/**
 * resoudre_adresse: geocoding over the address base (BAN numbers, streets, lieux-dits, communes) of the caller's
 * dataset. Text search finds streets, places and communes by trigrams (accents and typos tolerated), then the asked
 * number on the streets found; candidates are ranked by a word-level score computed here. The reverse search reads
 * the nearest rows around a point through the earthdistance index.
 */

type TypeAdresse = 'numero' | 'voie' | 'lieu_dit' | 'commune';

// Streets, places and communes read before ranking: enough for the right one to be among them even when common
// words (`rue`, `de`, `la`) make many labels look alike to trigrams.
const LIEUX_LUS = 40;
// pg_trgm word similarity a street, place or commune label must reach against the query (without its number).
const SEUIL_TRIGRAMMES = 0.4;
// Candidates whose score falls below are not served.
const SCORE_MIN = 0.35;
// A word of the candidate counts as found in the query from this similarity on.
const MOT_TROUVE = 0.75;
const RAYON_INVERSE_M = 1000;
// Distance from the frozen sandbox data beyond which a reverse search is outside the sandbox.
const RAYON_BAC_A_SABLE_M = 20_000;

const REPETITIONS = new Set(['bis', 'ter', 'quater', 'quinquies']);
// Words most labels share: left out of the trigram lookup, where they would make thousands of streets look alike
// (`rue de la liberte` is in every other commune), kept in the score.
const MOTS_COMMUNS = new Set([
  ...['rue', 'avenue', 'av', 'ave', 'boulevard', 'bd', 'bld', 'chemin', 'che', 'allee', 'all', 'impasse', 'imp'],
  ...['route', 'rte', 'place', 'pl', 'square', 'quai', 'cours', 'passage', 'lotissement', 'lot', 'residence', 'res'],
  ...['sentier', 'voie', 'ruelle', 'traverse', 'esplanade', 'promenade', 'hameau', 'lieu', 'dit'],
]);
// Short grammatical words: found or not, they weigh little in the score.
const MOTS_OUTILS = new Set('de du des la le les l d a au aux en et sur sous'.split(' '));

// ---------------------------------------------------------------------------------------------------------------------
// Schemas
// ---------------------------------------------------------------------------------------------------------------------

const limite = nombre(z.number().int().min(1).max(10).default(5)).describe(
  'Nombre de candidats au plus (1-10, 5 par défaut).',
);

const RechercheInputSchema = z.object({
  q: z
    .string()
    .trim()
    .min(3)
    .max(200)
    .describe(
      'Adresse en texte libre (3-200 caractères) : « 12 rue de la Liberté Latresne » ; accents et fautes tolérés.',
    ),
  code_postal: z
    .string()
    .regex(/^\d{5}$/, 'code postal de 5 chiffres')
    .optional()
    .describe('Ne garde que les candidats de ce code postal.'),
  limite,
});

const InverseInputSchema = z.object({
  lat: nombre(z.number().min(-90).max(90)).describe('Latitude WGS84 du point (-90 à 90).'),
  lon: nombre(z.number().min(-180).max(180)).describe('Longitude WGS84 du point (-180 à 180).'),
  limite,
});

const CandidatSchema = z.object({
  cle_ban: z
    .string()
    .nullable()
    .describe(
      'Clé BAN du numéro (33234_0160_00012), de la voie (33234_0160) ou de la commune (code INSEE) ; null pour un lieu-dit.',
    ),
  libelle: z.string().describe('Libellé complet : « 12 Rue de la Liberté 33360 Latresne ».'),
  type: z.enum(['numero', 'voie', 'lieu_dit', 'commune']),
  numero: z.number().int().nullable(),
  suffixe: z.string().nullable().describe('Indice de répétition en minuscules (bis, ter, a…).'),
  voie: z.string().nullable().describe('Nom de la voie (numéro ou voie) ; null pour un lieu-dit ou une commune.'),
  code_postal: z.string().nullable(),
  insee: z.string(),
  commune: z.string(),
  ancienne_commune: z.object({ insee: z.string(), nom: z.string().nullable() }).nullable(),
  lat: z.number(),
  lon: z.number(),
  type_position: z.string().nullable().describe('Type de position BAN (entrée, bâtiment, parcelle, segment…).'),
  parcelles: z
    .array(z.string())
    .nullable()
    .describe('Parcelles cadastrales (14 caractères) du numéro ; [] si la base n’en donne pas ; null hors numéro.'),
  score: z.number().min(0).max(1).nullable().describe('Recherche texte : ressemblance 0-1 (3 décimales).'),
  distance_m: z.number().int().min(0).nullable().describe('Recherche inverse : distance au point en mètres.'),
  certification: z.boolean().nullable().describe('Numéro certifié par la commune ; null hors numéro.'),
});
export type Candidat = z.infer<typeof CandidatSchema>;

const ResultatSchema = z.object({
  mode: z.enum(['recherche', 'inverse']),
  candidats: z.array(CandidatSchema),
});

// ---------------------------------------------------------------------------------------------------------------------
// Text
// ---------------------------------------------------------------------------------------------------------------------

/** Lower case, no accents, ligatures spelt out, other signs as spaces: the text as svc_plier() and pg_trgm see it. */
export function plier(text: string): string {
  return text
    .replace(/[œŒ]/g, 'oe')
    .replace(/[æÆ]/g, 'ae')
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, ' ')
    .trim();
}

function mots(text: string | null): string[] {
  return text ? plier(text).split(' ').filter(Boolean) : [];
}

/** Damerau-Levenshtein distance (optimal string alignment): a swap of two letters is one typo. */
export function distanceEdition(a: string, b: string): number {
  if (a === b) return 0;
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) {
    rows.push(new Array<number>(b.length + 1).fill(0));
    rows[i][0] = i;
  }
  for (let j = 0; j <= b.length; j++) rows[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2][j - 2] + 1);
      rows[i][j] = d;
    }
  }
  return rows[a.length][b.length];
}

function ressemblance(a: string, b: string): number {
  if (a === b) return 1;
  // Digits are exact: 33360 is not 33361.
  if (/\d/.test(a) || /\d/.test(b)) return 0;
  return Math.max(0, 1 - distanceEdition(a, b) / Math.max(a.length, b.length));
}

const poids = (mot: string) => (MOTS_OUTILS.has(mot) ? 1 : mot.length);

interface Requete {
  /** Folded words, number and repetition index removed. */
  mots: string[];
  numero: number | null;
  suffixe: string | null;
  codesPostaux: string[];
}

/** The number (leading, 1-4 digits, with its repetition index) and the words of a query. */
export function analyser(q: string): Requete {
  const tokens = plier(q).split(' ').filter(Boolean);
  let numero: number | null = null;
  let suffixe: string | null = null;
  const first = /^(\d{1,4})(bis|ter|quater|quinquies|[a-z])?$/.exec(tokens[0] ?? '');
  if (first) {
    numero = Number(first[1]);
    suffixe = first[2] ?? null;
    tokens.shift();
    // `12 bis`, `12 b`; not `12 a` nor `12 l` (à, l'), read as words.
    if (!suffixe && tokens.length > 1 && (REPETITIONS.has(tokens[0]) || /^[b-ce-km-xz]$/.test(tokens[0]))) {
      suffixe = tokens.shift()!;
    }
  }
  return { mots: tokens, numero, suffixe, codesPostaux: tokens.filter((t) => /^\d{5}$/.test(t)) };
}

interface Ligne {
  cle_ban: string;
  type: TypeAdresse;
  numero: number | null;
  suffixe: string | null;
  voie: string | null;
  code_voie: string | null;
  lieu_dit: string | null;
  code_postal: string | null;
  insee: string;
  commune: string;
  ancienne_commune_insee: string | null;
  ancienne_commune_nom: string | null;
  libelle: string;
  lat: number;
  lon: number;
  type_position: string | null;
  parcelles: string[] | null;
  certification: boolean | null;
}

/**
 * Score 0-1 of a candidate: 0.8 × the share of the query found in the candidate + 0.2 × the share of the candidate
 * found in the query. Each query word is compared with the candidate's words (street or place, lieu-dit, commune,
 * former commune) by edit distance, weighted by its length (short grammatical words weigh 1); the number weighs 3
 * (found: 1, other repetition index: 0.8) as does a postal code (equal or not).
 */
export function scorer(
  requete: Requete,
  ligne: Pick<
    Ligne,
    'numero' | 'suffixe' | 'voie' | 'lieu_dit' | 'commune' | 'ancienne_commune_nom' | 'code_postal' | 'type'
  >,
): number {
  const nom = ligne.type === 'lieu_dit' ? mots(ligne.lieu_dit) : mots(ligne.voie);
  const lieuDit = ligne.type === 'numero' ? mots(ligne.lieu_dit) : [];
  const commune = mots(ligne.commune);
  const candidats = [...nom, ...lieuDit, ...commune, ...mots(ligne.ancienne_commune_nom)];
  let trouve = 0;
  let total = 0;
  if (requete.numero !== null) {
    total += 3;
    if (ligne.numero === requete.numero) trouve += 3 * ((ligne.suffixe ?? null) === requete.suffixe ? 1 : 0.8);
  }
  const meilleur = (mot: string) => candidats.reduce((m, c) => Math.max(m, ressemblance(mot, c)), 0);
  for (const mot of requete.mots) {
    if (/^\d{5}$/.test(mot)) {
      total += 3;
      if (mot === ligne.code_postal) trouve += 3;
      continue;
    }
    total += poids(mot);
    trouve += poids(mot) * meilleur(mot);
  }
  const partRequete = total > 0 ? trouve / total : 0;
  // The candidate's own words: the street or place name it is known by (the lieu-dit of a number when that reads
  // better) and its commune.
  const couverture = (groupe: string[]) => {
    const tous = [...groupe, ...commune];
    const w = tous.reduce((s, m) => s + poids(m), 0);
    if (w === 0) return 0;
    const vus = tous.filter((m) => requete.mots.some((q) => ressemblance(q, m) >= MOT_TROUVE));
    return vus.reduce((s, m) => s + poids(m), 0) / w;
  };
  const partCandidat = Math.max(couverture(nom), lieuDit.length ? couverture(lieuDit) : 0);
  return Math.round((0.8 * partRequete + 0.2 * partCandidat) * 1000) / 1000;
}

// ---------------------------------------------------------------------------------------------------------------------
// Queries
// ---------------------------------------------------------------------------------------------------------------------

const COLONNES = `a.cle_ban, a.type, a.numero, a.suffixe, a.voie, a.code_voie, a.lieu_dit, a.code_postal, a.insee, a.commune,
  a.ancienne_commune_insee, a.ancienne_commune_nom, a.libelle, a.lat, a.lon, a.type_position, a.parcelles, a.certification`;
// As indexed by adresses_texte_trgm_hors_numeros (migration 008), to the letter.
const TEXTE = 'svc_texte_adresse(a.voie, a.lieu_dit, a.commune, a.code_postal)';
const RANG_TYPE: Record<TypeAdresse, number> = { numero: 0, voie: 1, lieu_dit: 2, commune: 3 };

const arrondi = (x: number, decimales = 6) => Math.round(x * 10 ** decimales) / 10 ** decimales;

function candidat(ligne: Ligne, extra: { score: number | null; distance_m: number | null }): Candidat {
  return {
    cle_ban: ligne.type === 'lieu_dit' ? null : ligne.cle_ban,
    libelle: ligne.libelle,
    type: ligne.type,
    numero: ligne.numero,
    suffixe: ligne.suffixe,
    voie: ligne.type === 'numero' || ligne.type === 'voie' ? ligne.voie : null,
    code_postal: ligne.code_postal,
    insee: ligne.insee,
    commune: ligne.commune,
    ancienne_commune: ligne.ancienne_commune_insee
      ? { insee: ligne.ancienne_commune_insee, nom: ligne.ancienne_commune_nom }
      : null,
    lat: arrondi(ligne.lat),
    lon: arrondi(ligne.lon),
    type_position: ligne.type_position,
    parcelles: ligne.type === 'numero' ? (ligne.parcelles ?? []) : null,
    score: extra.score,
    distance_m: extra.distance_m,
    certification: ligne.type === 'numero' ? ligne.certification : null,
  };
}

async function lireTexte(
  client: Queryable,
  dataset: Dataset,
  texte: string,
  codePostal: string | null,
  numero: number | null,
): Promise<Array<Ligne & { origine: 'lieu' | 'numero' }>> {
  const { rows } = await client.query<Ligne & { origine: 'lieu' | 'numero' }>(
    `WITH lieux AS (
       SELECT ${COLONNES}
         FROM adresses a
        WHERE a.dataset = $1 AND a.type <> 'numero' AND $2 <% ${TEXTE}
          AND ($3::text IS NULL OR a.code_postal = $3)
        -- The shorter label first among equals: fewer words the query did not ask for (the commune before its streets).
        ORDER BY word_similarity($2, ${TEXTE}) DESC, length(a.libelle), a.cle_ban
        LIMIT ${LIEUX_LUS}),
     numeros AS (
       SELECT ${COLONNES}
         FROM lieux l
         JOIN adresses a ON a.dataset = $1 AND a.insee = l.insee AND a.code_voie = l.code_voie AND a.numero = $4
        WHERE l.type = 'voie' AND a.type = 'numero' AND starts_with(a.cle_ban, l.cle_ban || '_')
          AND ($3::text IS NULL OR a.code_postal = $3)
       UNION ALL
       SELECT ${COLONNES}
         FROM lieux l
         JOIN adresses a ON a.dataset = $1 AND a.insee = l.insee AND a.lieu_dit = l.lieu_dit AND a.numero = $4
        WHERE l.type = 'lieu_dit' AND a.type = 'numero' AND ($3::text IS NULL OR a.code_postal = $3))
     SELECT 'lieu' AS origine, * FROM lieux
     UNION ALL
     SELECT DISTINCT ON (cle_ban) 'numero' AS origine, * FROM numeros`,
    [dataset, texte, codePostal, numero],
  );
  return rows;
}

/** Text search: streets, places and communes by trigrams, then the asked number on them, ranked by `scorer`. */
export async function rechercher(
  db: Db,
  dataset: Dataset,
  q: string,
  codePostal: string | null,
  max: number,
): Promise<Candidat[]> {
  const requete = analyser(q);
  if (requete.mots.length === 0) return [];
  const distinctifs = requete.mots.filter((m) => !MOTS_COMMUNS.has(m) && !MOTS_OUTILS.has(m));
  const texte = (distinctifs.length > 0 ? distinctifs : requete.mots).join(' ');
  // The trigram operator reads its threshold from a setting: set for this transaction only.
  const rows = await transaction(db, async (client) => {
    await client.query(`SET TRANSACTION READ ONLY; SET LOCAL pg_trgm.word_similarity_threshold = ${SEUIL_TRIGRAMMES}`);
    return lireTexte(client, dataset, texte, codePostal, requete.numero);
  });
  // A street or place that has the asked number gives way to it.
  const lieuDit = (insee: string, nom: string | null) => `${insee}|${nom}`;
  const avecNumero = new Set(
    rows
      .filter((r) => r.origine === 'numero')
      .flatMap((r) => [r.cle_ban.replace(/_\d{5}(?:_\w+)?$/, ''), lieuDit(r.insee, r.lieu_dit)]),
  );
  const vus = new Set<string>();
  const scored: Array<{ ligne: Ligne; score: number }> = [];
  for (const ligne of rows) {
    if (vus.has(ligne.cle_ban)) continue;
    vus.add(ligne.cle_ban);
    if (ligne.origine === 'lieu' && requete.numero !== null) {
      const cle = ligne.type === 'lieu_dit' ? lieuDit(ligne.insee, ligne.lieu_dit) : ligne.cle_ban;
      if (avecNumero.has(cle)) continue;
    }
    const score = scorer(requete, ligne);
    if (score >= SCORE_MIN) scored.push({ ligne, score });
  }
  scored.sort(
    (a, b) =>
      b.score - a.score ||
      RANG_TYPE[a.ligne.type] - RANG_TYPE[b.ligne.type] ||
      a.ligne.libelle.localeCompare(b.ligne.libelle, 'fr') ||
      (a.ligne.cle_ban < b.ligne.cle_ban ? -1 : 1),
  );
  return scored.slice(0, max).map(({ ligne, score }) => candidat(ligne, { score, distance_m: null }));
}

/** Reverse search: rows within 1 km, nearest first (numbers before streets at equal distance). */
export async function inverser(
  db: Queryable,
  dataset: Dataset,
  lat: number,
  lon: number,
  max: number,
): Promise<Candidat[]> {
  // The cube distance (`<->`, a chord) orders like the great-circle one and walks the GiST index nearest first; a
  // few more rows than asked let equal distances be reordered by type.
  const { rows } = await db.query<Ligne & { distance: number }>(
    `SELECT ${COLONNES}, earth_distance(ll_to_earth($2, $3), ll_to_earth(a.lat, a.lon)) AS distance
       FROM adresses a
      WHERE a.dataset = $1 AND a.type <> 'commune'
        AND earth_box(ll_to_earth($2, $3), $4) @> ll_to_earth(a.lat, a.lon)
      ORDER BY ll_to_earth(a.lat, a.lon) <-> ll_to_earth($2, $3)
      LIMIT $5`,
    [dataset, lat, lon, RAYON_INVERSE_M, max + 20],
  );
  return rows
    .map((ligne) => ({ ligne, distance: Math.round(ligne.distance) }))
    .filter((r) => r.distance <= RAYON_INVERSE_M)
    .sort(
      (a, b) =>
        a.distance - b.distance ||
        RANG_TYPE[a.ligne.type] - RANG_TYPE[b.ligne.type] ||
        (a.ligne.cle_ban < b.ligne.cle_ban ? -1 : 1),
    )
    .slice(0, max)
    .map(({ ligne, distance }) => candidat(ligne, { score: null, distance_m: distance }));
}

// ---------------------------------------------------------------------------------------------------------------------
// Sandbox
// ---------------------------------------------------------------------------------------------------------------------

let codesPostauxBacASable: Set<string> | undefined;

function codesPostauxDuBacASable(): Set<string> {
  codesPostauxBacASable ??= new Set(SANDBOX_COMMUNES.flatMap((insee) => communeByCode(insee)?.codesPostaux ?? []));
  return codesPostauxBacASable;
}

const horsBacASable = (detail: string) =>
  new ApiError('hors_bac_a_sable', `${detail} Les clés de test couvrent les communes ${SANDBOX_COMMUNES.join(', ')}.`);

async function presDuBacASable(db: Queryable, lat: number, lon: number): Promise<boolean> {
  const { rows } = await db.query(
    `SELECT 1 FROM adresses a
      WHERE a.dataset = 'sandbox' AND a.insee = ANY ($3::text[])
        AND earth_box(ll_to_earth($1, $2), $4) @> ll_to_earth(a.lat, a.lon)
        AND earth_distance(ll_to_earth($1, $2), ll_to_earth(a.lat, a.lon)) <= $4
      LIMIT 1`,
    [lat, lon, SANDBOX_COMMUNES, RAYON_BAC_A_SABLE_M],
  );
  return rows.length > 0;
}

// ---------------------------------------------------------------------------------------------------------------------
// Operations
// ---------------------------------------------------------------------------------------------------------------------

const DESCRIPTION_COMMUNE = `**Candidats.** Un candidat est un numéro (\`numero\`), une voie (\`voie\`), un lieu-dit (\`lieu_dit\`) ou une commune (\`commune\`) de la Base Adresse Nationale, importée depuis les fichiers \`adresses-XX.csv\`.
- \`cle_ban\` : clé du numéro (\`33234_0160_00012\`), de la voie (\`33234_0160\`) ou de la commune (code INSEE). Les lieux-dits (\`nom_ld\` du fichier) n'ont pas de clé dans la BAN : \`null\`.
- Voies, lieux-dits et communes sont dérivés des numéros : position = médiane des positions de leurs numéros, code postal = le plus fréquent.
- \`parcelles\` : parcelles cadastrales du numéro (identifiants de 14 caractères, colonne \`cad_parcelles\`) ; \`[]\` quand la base n'en donne aucune ; \`null\` pour une voie, un lieu-dit ou une commune, dont les parcelles ne sont pas lues.
- \`certification\` : \`true\` quand la commune a certifié le numéro dans sa Base Adresse Locale (\`certification_commune\` = 1), \`false\` sinon ; \`null\` hors numéro.
- \`type_position\` : type de position BAN du numéro (entrée, bâtiment, cage d'escalier, logement, parcelle, segment, service postal…) ; \`null\` hors numéro.
- \`ancienne_commune\` : commune déléguée ou ancienne commune de l'adresse quand elle diffère de la commune actuelle.
- Coordonnées WGS84, 6 décimales.

**Bac à sable.** Une clé pk_test_ lit le jeu figé (communes ${SANDBOX_COMMUNES.join(', ')}), sans débit.`;

const DESCRIPTION_RECHERCHE = `Géocodage d'une adresse en texte libre sur la Base Adresse Nationale : numéros, voies, lieux-dits et communes, du plus ressemblant au moins ressemblant.

**Recherche.** Le texte est plié (minuscules, sans accents, ponctuation ignorée). Les voies, lieux-dits et communes sont trouvés par trigrammes (pg_trgm) sur leur nom, leur commune et leur code postal : une faute de frappe, une lettre inversée ou un accent manquant ne les perdent pas ; les mots que partagent la plupart des adresses (rue, avenue, chemin, de, la…) ne comptent que dans le score. Un numéro en tête de \`q\` (« 12 », « 12 bis », « 12b ») est cherché **exactement** sur les voies et lieux-dits trouvés : une voie qui l'a est remplacée par ce numéro, une voie qui ne l'a pas reste candidate. Un code postal écrit dans \`q\` compte dans le score ; le paramètre \`code_postal\` filtre.

**Score** (0-1, 3 décimales) = 0,8 × part de la requête retrouvée dans le candidat + 0,2 × part du candidat retrouvée dans la requête. Chaque mot de la requête est comparé aux mots du candidat (voie ou lieu-dit, commune, ancienne commune) par distance d'édition (une inversion de deux lettres compte pour une faute) et pèse sa longueur (les petits mots « de », « la »… pèsent 1) ; le numéro pèse 3 (trouvé : 1, autre indice de répétition : 0,8), un code postal aussi (égal ou non). 1 = identique. Les candidats sous 0,35 ne sont pas servis ; à score égal, les numéros passent avant les voies, les voies avant les lieux-dits et les communes.

${DESCRIPTION_COMMUNE} Une recherche du bac à sable qui ne trouve rien répond 403 \`hors_bac_a_sable\`, sauf si \`code_postal\` est celui d'une commune du bac à sable (liste vide) ; un \`code_postal\` hors de ces communes répond 403 d'emblée.`;

const DESCRIPTION_INVERSE = `Géocodage inverse : numéros, voies et lieux-dits de la Base Adresse Nationale à moins de 1 km du point, le plus proche d'abord.

**Tri.** Distance du grand cercle (\`distance_m\`, mètres entiers) croissante ; à distance égale, les numéros avant les voies, les voies avant les lieux-dits. Les communes ne sont pas servies (leur position est un centre de leurs adresses, pas un lieu). Aucune adresse à moins de 1 km : liste vide.

${DESCRIPTION_COMMUNE} Un point à plus de 20 km de toute adresse du bac à sable répond 403 \`hors_bac_a_sable\`.`;

const COMMUN = {
  tool: 'resoudre_adresse',
  method: 'GET',
  credits: 0,
  unit: 'appel',
  scope: 'adresse',
  tier: 'usage',
  sandbox: true,
  cacheS: 86_400,
  timeoutS: 8,
  output: ResultatSchema,
} as const;

export const resoudreAdresse = defineOperation({
  ...COMMUN,
  path: '/adresses/recherche',
  summary: 'Trouver une adresse à partir d’un texte (géocodage)',
  description: DESCRIPTION_RECHERCHE,
  input: RechercheInputSchema,
  async handler(entree, ctx) {
    const sandbox = ctx.caller.sandbox;
    const codePostal = entree.code_postal ?? null;
    if (sandbox && codePostal && !codesPostauxDuBacASable().has(codePostal)) {
      throw horsBacASable(`Le code postal ${codePostal} est hors du bac à sable.`);
    }
    const candidats = await rechercher(
      ctx.services.db,
      sandbox ? 'sandbox' : 'live',
      entree.q,
      codePostal,
      entree.limite,
    );
    if (sandbox && candidats.length === 0 && !codePostal) {
      throw horsBacASable(`Aucune adresse du bac à sable ne ressemble à « ${entree.q} ».`);
    }
    return { mode: 'recherche' as const, candidats };
  },
});

export const resoudreAdresseInverse = defineOperation({
  ...COMMUN,
  variant: 'inverse',
  path: '/adresses/inverse',
  summary: 'Trouver les adresses les plus proches d’un point (géocodage inverse)',
  description: DESCRIPTION_INVERSE,
  input: InverseInputSchema,
  async handler(entree, ctx) {
    const sandbox = ctx.caller.sandbox;
    const db = ctx.services.db;
    const candidats = await inverser(db, sandbox ? 'sandbox' : 'live', entree.lat, entree.lon, entree.limite);
    if (sandbox && candidats.length === 0 && !(await presDuBacASable(db, entree.lat, entree.lon))) {
      throw horsBacASable(`Le point (${entree.lat}, ${entree.lon}) est à plus de 20 km des adresses du bac à sable.`);
    }
    return { mode: 'inverse' as const, candidats };
  },
});

export const adresseOperations = [resoudreAdresse, resoudreAdresseInverse];

/** A row of the address base as the operations on one address read it. */
export type AdresseBan = Ligne;

/** A BAN entry of the dataset by its key (number, street, place or commune; case and spaces ignored), or null. */
export async function adresseParCle(db: Queryable, dataset: Dataset, cleBan: string): Promise<AdresseBan | null> {
  const { rows } = await db.query<AdresseBan>(
    `SELECT ${COLONNES} FROM adresses a WHERE a.dataset = $1 AND a.cle_ban = $2`,
    [dataset, cleBan.trim().toLowerCase()],
  );
  return rows[0] ?? null;
}

/** The BAN entry of a key, else 404 adresse_introuvable, nothing debited: how the reads of one address begin. */
export async function adresseConnue(db: Queryable, dataset: Dataset, cleBan: string): Promise<AdresseBan> {
  const adresse = await adresseParCle(db, dataset, cleBan);
  if (!adresse) {
    throw new ApiError(
      'adresse_introuvable',
      `Aucune adresse de la Base Adresse Nationale n’a la clé « ${cleBan} » ; rien n’est débité.`,
    );
  }
  return adresse;
}
