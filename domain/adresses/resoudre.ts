import { z } from 'zod';
import type { Queryable } from '../../db/client.ts';
import { defineOperation } from '../catalogue.ts';
import { absenceSource } from '../couverture.ts';
import { nombre } from '../entrees.ts';
import { ApiError } from '../errors.ts';
import { SANDBOX_COMMUNES, type Dataset } from '../platform/sandbox.ts';
import { distanceEdition, MOTS_OUTILS, normaliserNom, normaliserTexte, plier } from './normaliser.ts';
import { analyserRequete, communesDuCode, type Requete } from './requete.ts';
import { departementOf } from '../communes.ts';

/**
 * resoudre_adresse: geocoding over the address base (BAN numbers, streets, lieux-dits, communes) of the caller's
 * dataset. The query is read with the normalisation of the import (normaliser.ts, requete.ts): number, street type,
 * name, postal or INSEE codes, commune named. The text search is bound to the communes of those codes and of that
 * name: their streets and places found by trigrams (accents and typos tolerated) in one index scan over commune and
 * trigrams, then the asked number on them; the whole base only when nothing good is found there. Candidates are
 * ranked by a word-level score computed here, where the street type counts. The reverse search reads the nearest rows
 * around a point through the earthdistance index.
 */

type TypeAdresse = 'numero' | 'voie' | 'lieu_dit' | 'commune';

// Streets and places read before ranking are counted in svc_adresses_lieux (db/migrations/035): 40 by trigrams, enough
// for the right one to be among them when many names look alike to trigrams (`rue de la liberte` is in every other
// commune); 200, unsorted, when the whole base is searched by the words of the name.
// pg_trgm word similarity the query's name must reach against a street's or place's indexed text: in the communes the
// query names, and everywhere.
const SEUIL_LIE = 0.3;
const SEUIL_TRIGRAMMES = 0.4;
// A search bound to the communes of its codes or of the commune it names looks no further once a candidate there
// reaches this score.
const SCORE_LIE = 0.7;
// Candidates outside the communes of a postal or INSEE code given: their score is multiplied by this.
const HORS_CODE = 0.8;
// Candidates whose score falls below are not served.
const SCORE_MIN = 0.3;
// A word of the candidate counts as found in the query from this similarity on.
const MOT_TROUVE = 0.75;
const RAYON_INVERSE_M = 1000;
// Distance from the frozen sandbox data beyond which a reverse search is outside the sandbox.
const RAYON_BAC_A_SABLE_M = 20_000;

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
      'Adresse en texte libre (3-200 caractères) : « 12 rue de la Liberté Latresne », « 27 B BD DE CHARONNE 75011 PARIS » ; accents, abréviations et fautes tolérés.',
    ),
  code_postal: z
    .string()
    .regex(/^\d{5}$/, 'code postal de 5 chiffres')
    .optional()
    .describe('Ne garde que les candidats des communes de ce code postal (un code INSEE est lu aussi).'),
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
  limites: z.array(z.string()).describe('Pourquoi rien n’est trouvé, quand `candidats` est vide ; vide sinon.'),
});

// ---------------------------------------------------------------------------------------------------------------------
// Score
// ---------------------------------------------------------------------------------------------------------------------

export { plier, distanceEdition };

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

const INDICES: Record<string, string> = { b: 'bis', t: 'ter', q: 'quater' };
/** DVF writes B, T, Q for bis, ter, quater; the BAN writes bis, ter, or the letter. */
const indice = (s: string | null) => (s ? (INDICES[s] ?? s) : null);

// Types read as near: a `chemin rural` asked as `chemin` is half found, a `rue` asked as `boulevard` not at all.
const FAMILLES_DE_TYPES = [
  ['chemin', 'chemin rural', 'chemin vicinal', 'ancien chemin', 'petit chemin', 'sentier', 'sente'],
  ['route', 'ancienne route', 'nouvelle route', 'vieille route'],
  ['rue', 'grande rue', 'petite rue', 'ruelle'],
  ['avenue', 'petite avenue'],
  ['place', 'placette', 'square', 'parvis'],
  ['voie', 'voie communale'],
  ['zone', 'zone artisanale', 'zone industrielle', "zone d'activites", "zone d'amenagement concerte"],
  ['residence', 'immeuble', 'cite', 'lotissement', 'domaine'],
];
const FAMILLE = new Map(FAMILLES_DE_TYPES.flatMap((f, i) => f.map((t) => [t, i] as const)));

function typeTrouve(demande: string, type: string | null): number {
  if (type === demande) return 1;
  if (type !== null && FAMILLE.has(type) && FAMILLE.get(type) === FAMILLE.get(demande)) return 0.5;
  return 0;
}

function ressemblance(a: string, b: string): number {
  if (a === b) return 1;
  // Digits are exact: 33360 is not 33361.
  if (/\d/.test(a) || /\d/.test(b)) return 0;
  // A word cut short, as the 26 or 32 characters of DVF and AFNOR names cut them (`HOSPIT`, `BRETONNERI`).
  if (a.length >= 4 && b.startsWith(a)) return 0.9;
  return Math.max(0, 1 - distanceEdition(a, b) / Math.max(a.length, b.length));
}

const poids = (mot: string) => (MOTS_OUTILS.has(mot) ? 1 : mot.length);
const POIDS_NUMERO = 3;
const POIDS_TYPE = 3;
const POIDS_CODE = 3;
const POIDS_COMMUNE = 4;

/** What a candidate is compared on: its number, its type and names (canonical words), its commune. */
export interface Compare {
  type: TypeAdresse;
  numero: number | null;
  suffixe: string | null;
  /** Street type of the street or place (normaliser.ts). */
  typeVoie: string | null;
  /** Its names, canonical words: the BAN name, its other forms, the lieu-dit of a number. */
  noms: string[][];
  /** The names it is shown by (a number's street, not its lieu-dit); `noms` when absent. */
  affiches?: string[][];
  insee: string;
  code_postal: string | null;
  commune: string;
  ancienne_commune_nom: string | null;
}

/**
 * Score 0-1 of a candidate: 0.8 × the share of the query found in the candidate + 0.2 × the share of the candidate
 * found in the query. The query counts its number (weight 3: found 1, another repetition index 0.8), its street type
 * (3: the same 1, a near type such as chemin rural for chemin 0.5, another 0), each word of the name (its length, 1
 * for `de`, `la`…, compared with the candidate's names by edit distance, a word cut short found at 0.9), each postal
 * or INSEE code (3: the candidate's commune has it) and the commune named (4). The candidate counts its type (3) and
 * the words of the name that matches best. Outside the communes of a code given: × 0.8.
 */
export function scorer(requete: Requete, c: Compare): number {
  const communeMots = [...normaliserTexte(c.commune), ...normaliserTexte(c.ancienne_commune_nom ?? '')];
  const nomMots = c.type === 'commune' ? [communeMots] : c.noms;
  const affiches = c.type === 'commune' ? nomMots : (c.affiches ?? c.noms);
  // The type's words too: a type the query misspelt beyond recognition (`graned rue`) is still near them.
  const motsCandidat = [
    ...nomMots.flat(),
    ...(c.type !== 'commune' && c.typeVoie ? c.typeVoie.split(' ') : []),
    ...(requete.commune ? [] : communeMots),
  ];
  let trouve = 0;
  let total = 0;
  if (requete.numero !== null) {
    total += POIDS_NUMERO;
    if (c.numero === requete.numero) trouve += POIDS_NUMERO * (indice(c.suffixe) === indice(requete.suffixe) ? 1 : 0.8);
  }
  const typeDemande = requete.type !== null && requete.type !== 'lieu dit' ? requete.type : null;
  if (typeDemande) {
    total += POIDS_TYPE;
    trouve += POIDS_TYPE * typeTrouve(typeDemande, c.type === 'commune' ? null : c.typeVoie);
  }
  for (const mot of requete.mots) {
    total += poids(mot);
    trouve += poids(mot) * motsCandidat.reduce((m, x) => Math.max(m, ressemblance(mot, x)), 0);
  }
  for (const code of requete.codes) {
    total += POIDS_CODE;
    if (code === c.code_postal || communesDuCode(code).includes(c.insee)) trouve += POIDS_CODE;
  }
  if (requete.commune) {
    total += POIDS_COMMUNE;
    if (requete.commune.insee.includes(c.insee)) trouve += POIDS_COMMUNE;
  }
  const partRequete = total > 0 ? trouve / total : 0;

  // The candidate's own words, in the name it is shown by that reads best.
  const demandes = [...requete.mots, ...(requete.commune?.mots ?? [])];
  const vu = (mot: string) => demandes.some((q) => ressemblance(q, mot) >= MOT_TROUVE);
  const partCandidat = Math.max(
    0,
    ...affiches.map((mots) => {
      let w = 0;
      let found = 0;
      if (c.type !== 'commune' && c.typeVoie) {
        w += POIDS_TYPE;
        if (typeDemande) found += POIDS_TYPE * typeTrouve(typeDemande, c.typeVoie);
      }
      for (const m of mots) {
        w += poids(m);
        if (vu(m)) found += poids(m);
      }
      return w > 0 ? found / w : 0;
    }),
  );
  let score = 0.8 * partRequete + 0.2 * partCandidat;
  if (requete.communesDesCodes.length > 0 && !requete.communesDesCodes.includes(c.insee)) score *= HORS_CODE;
  return Math.round(score * 1000) / 1000;
}

// ---------------------------------------------------------------------------------------------------------------------
// Queries
// ---------------------------------------------------------------------------------------------------------------------

const COLONNES = `a.cle_ban, a.type, a.numero, a.suffixe, a.voie, a.code_voie, a.lieu_dit, a.code_postal, a.insee, a.commune,
  a.ancienne_commune_insee, a.ancienne_commune_nom, a.libelle, a.lat, a.lon, a.type_position, a.parcelles, a.certification`;
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

/** A row read by the text search: for a number, the type and names of the street or place it was found on. */
interface LigneLue extends Ligne {
  origine: 'lieu' | 'numero' | 'commune';
  /** The street or place a number was found on (its cle_ban). */
  lieu: string | null;
  type_voie: string | null;
  nom_norm: string | null;
  noms_alt: string[] | null;
}

interface Recherche {
  /** Communes searched (INSEE codes); null: all. */
  communes: string[] | null;
  /**
   * How streets and places are found: by trigrams of `texte` (typos tolerated, the nearest first), by its words
   * written exactly (any order: what the whole base can afford), or as the streets of `type` in the communes.
   */
  mode: 'trigrammes' | 'mots' | 'type';
  texte: string;
  type: string | null;
  numero: number | null;
  /** pg_trgm word similarity the trigrams must reach: SEUIL_LIE in the communes a query names, else SEUIL_TRIGRAMMES. */
  seuil: number;
}

/**
 * Streets and places by trigrams of their indexed text (type, name, other forms), in the communes searched when some
 * are, then the asked number on them, and the communes searched themselves: one call of svc_adresses_lieux
 * (db/migrations/035_adresses_recherche_rapide.sql), one round trip. The function sets the trigram threshold and
 * generic plans for its own statements, planned once per connection.
 */
async function lire(db: Queryable, dataset: Dataset, r: Recherche): Promise<LigneLue[]> {
  const { rows } = await db.query<LigneLue>({
    name: 'resoudre_adresse_lieux',
    text: 'SELECT * FROM svc_adresses_lieux($1, $2, $3, $4, $5, $6, $7)',
    values: [dataset, r.texte, r.type, r.numero, r.communes, r.mode, r.seuil],
  });
  return rows;
}

/** What a row read is compared on. */
function compare(ligne: LigneLue): Compare {
  const stockes =
    ligne.nom_norm !== null
      ? [ligne.nom_norm.split(' ').filter(Boolean), ...(ligne.noms_alt ?? []).map((alt) => alt.split(' '))]
      : [];
  let typeVoie = ligne.type_voie;
  let noms = stockes;
  let affiches = stockes;
  if (ligne.type === 'numero') {
    // A number found on its lieu-dit is shown by its street: its type and name are the street's, the lieu-dit's
    // name only one more it answers to (`22 Les Écus` for 22 Route de Cénac in the lieu-dit Les Écus).
    if (ligne.lieu?.startsWith('ld:')) {
      const propre = normaliserNom(ligne.voie ?? '');
      typeVoie = propre.type;
      affiches = [propre.mots];
    }
    noms = ligne.lieu_dit ? [...affiches, normaliserNom(ligne.lieu_dit).mots] : affiches;
  }
  return {
    type: ligne.type,
    numero: ligne.numero,
    suffixe: ligne.suffixe,
    typeVoie,
    noms: noms.length > 0 ? noms : [[]],
    affiches: affiches.length > 0 ? affiches : [[]],
    insee: ligne.insee,
    code_postal: ligne.code_postal,
    commune: ligne.commune,
    ancienne_commune_nom: ligne.ancienne_commune_nom,
  };
}

/** How close the words of the name shown are to the query's, in their order: what tells `Vieux Ruisseau` from `Ruisseau Vieux`. */
function ordre(requete: Requete, c: Compare): number {
  const q = requete.mots.join(' ');
  return Math.max(
    ...(c.affiches ?? c.noms).map((mots) => {
      const nom = mots.join(' ');
      return 1 - distanceEdition(q, nom) / Math.max(1, q.length, nom.length);
    }),
  );
}

/** The rows read, scored: a street or place that has the asked number gives way to it. */
function classer(requete: Requete, rows: LigneLue[]): Classe[] {
  const avecNumero = new Set(rows.filter((r) => r.origine === 'numero').map((r) => r.lieu));
  const vus = new Set<string>();
  const scored: Classe[] = [];
  for (const ligne of rows) {
    if (vus.has(ligne.cle_ban)) continue;
    vus.add(ligne.cle_ban);
    if (ligne.origine === 'lieu' && avecNumero.has(ligne.cle_ban)) continue;
    const c = compare(ligne);
    const score = scorer(requete, c);
    if (score >= SCORE_MIN) scored.push({ ligne, score, ordre: ordre(requete, c) });
  }
  return scored;
}

interface Classe {
  ligne: Ligne;
  score: number;
  ordre: number;
}

/** The communes a search is bound to: those of the codes and of the commune named, within those of `code_postal`. */
function communesLiees(requete: Requete, filtre: string[] | null): string[] | null {
  const codes = requete.communesDesCodes;
  const nommees = requete.commune?.insee ?? [];
  let liees: string[] | null = null;
  if (codes.length > 0 && nommees.length > 0) {
    const les2 = codes.filter((c) => nommees.includes(c));
    liees = les2.length > 0 ? les2 : [...new Set([...codes, ...nommees])];
  } else if (codes.length > 0) liees = codes;
  else if (nommees.length > 0) liees = nommees;
  if (!filtre) return liees;
  const dansFiltre = liees?.filter((c) => filtre.includes(c)) ?? [];
  return dansFiltre.length > 0 ? dansFiltre : filtre;
}

/**
 * The streets, places and communes of the communes a search is bound to, scored; then, when none there reaches
 * SCORE_LIE, those of everywhere (within `code_postal` only): the streets and places that have every word of the name,
 * written as asked, or when none, those the trigrams of the name find (misspelt, or followed by a commune not
 * recognised). One round trip a reading: a search bound to its communes usually stops after the first.
 */
async function trouver(
  db: Queryable,
  dataset: Dataset,
  requete: Requete,
  liees: string[] | null,
  filtre: string[] | null,
  nom: string,
): Promise<Classe[]> {
  const { numero, type } = requete;
  let found: Classe[] = [];
  if (liees) {
    const mode = nom ? 'trigrammes' : 'type';
    const rows = await lire(db, dataset, { communes: liees, mode, texte: nom, type, numero, seuil: SEUIL_LIE });
    found = classer(requete, rows);
    if (found.some((f) => f.score >= SCORE_LIE)) return found;
  }
  if (!nom) return found;
  const partout = { communes: filtre, texte: nom, type, numero, seuil: SEUIL_TRIGRAMMES };
  let ailleurs = classer(requete, await lire(db, dataset, { ...partout, mode: 'mots' }));
  if (ailleurs.length === 0) ailleurs = classer(requete, await lire(db, dataset, { ...partout, mode: 'trigrammes' }));
  const deja = new Set(found.map((f) => f.ligne.cle_ban));
  return [...found, ...ailleurs.filter((f) => !deja.has(f.ligne.cle_ban))];
}

/**
 * Text search: bound to the communes of the codes and of the commune named (or of `code_postal`), the streets,
 * places and communes there, then, when nothing there reaches SCORE_LIE, everywhere (within `code_postal` only).
 */
export async function rechercher(
  db: Queryable,
  dataset: Dataset,
  q: string,
  codePostal: string | null,
  max: number,
): Promise<Candidat[]> {
  const requete = analyserRequete(q);
  const filtre = codePostal ? communesDuCode(codePostal) : null;
  if (filtre && filtre.length === 0) return [];
  const liees = communesLiees(requete, filtre);
  const distinctifs = requete.mots.filter((m) => !MOTS_OUTILS.has(m));
  const nom = (distinctifs.length > 0 ? distinctifs : requete.mots).join(' ');
  if (!nom && !requete.type && !liees) return [];
  const scored = await trouver(db, dataset, requete, liees, filtre, nom);
  scored.sort(
    (a, b) =>
      b.score - a.score ||
      b.ordre - a.ordre ||
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
  // Prepared: planning it cost as much as running it.
  const { rows } = await db.query<Ligne & { distance: number }>({
    name: 'resoudre_adresse_inverse',
    text: `SELECT ${COLONNES}, earth_distance(ll_to_earth($2, $3), ll_to_earth(a.lat, a.lon)) AS distance
       FROM adresses a
      WHERE a.dataset = $1 AND a.type <> 'commune'
        AND earth_box(ll_to_earth($2, $3), $4) @> ll_to_earth(a.lat, a.lon)
      ORDER BY ll_to_earth(a.lat, a.lon) <-> ll_to_earth($2, $3)
      LIMIT $5`,
    values: [dataset, lat, lon, RAYON_INVERSE_M, max + 20],
  });
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

**Recherche.** \`q\` est lu comme l'écrivent les fichiers et les gens, avec la normalisation même de l'import de la BAN : majuscules, accents, tirets et apostrophes ignorés (« D AUMALE » = « d'Aumale », « ST LOUIS EN L ILE » = « Saint-Louis-en-l'Île ») ; types de voie écrits en entier ou abrégés comme l'AFNOR, le cadastre et DVF les abrègent (BD, BLD, AV, R, PL, PAS, IMP, VLA, CITE, SQ, QU, ALL, CHE, CHEM, RTE, FG, FBG, CRS, RPT, SEN, SENT, HAM, LD, ZA, ZI, RES, PRV, MTE…) ; ST, STE, FG et les titres abrégés (GAL, MAL, PDT, DR…) ; ordinaux et chiffres romains (1ER, IER, PREMIER = 1 ; HENRI IV = Henri 4). **Le type de voie compte** : un boulevard n'est pas une rue.

**Communes.** Un code postal ou un code INSEE écrit dans \`q\`, ou le nom d'une commune à la fin de \`q\` (à une faute près ; « Paris », « Paris 11e », une commune déléguée), **lie la recherche à ses communes** : leurs voies et lieux-dits y sont cherchés par trigrammes (pg_trgm : une faute de frappe, une lettre inversée ne les perdent pas). Les autres communes ne sont lues qu'à défaut, quand aucun candidat des communes liées n'atteint 0,7, ou quand \`q\` ne donne ni code ni commune reconnue : leurs voies et lieux-dits qui ont tous les mots du nom, écrits tels quels (200 au plus, sans ordre entre eux avant le score), sinon ceux que les trigrammes trouvent ; hors des communes d'un code donné, leur score est multiplié par 0,8. Le paramètre \`code_postal\` filtre : seules les communes de ce code (postal, ou INSEE) sont lues. Un numéro en tête (« 12 », « 12 bis », « 12B », « 12 B BD … ») est cherché **exactement** sur les voies et lieux-dits trouvés : une voie qui l'a est remplacée par ce numéro, une voie qui ne l'a pas reste candidate.

**Score** (0-1, 3 décimales) = 0,8 × part de la requête retrouvée dans le candidat + 0,2 × part du candidat retrouvée dans la requête. La requête compte son numéro (poids 3 : trouvé 1, autre indice de répétition 0,8 ; B, T, Q valent bis, ter, quater), son type de voie (3 : le même 1, un type voisin, chemin rural pour chemin, 0,5, un autre 0), chaque mot du nom (sa longueur, 1 pour « de », « la »…) comparé aux noms du candidat (nom BAN, nom AFNOR, alias, lieu-dit d'un numéro) par distance d'édition (une inversion de deux lettres est une faute ; un mot coupé, « HOSPIT » pour « Hospitalières », vaut 0,9), chaque code postal ou INSEE (3 : la commune du candidat l'a) et la commune nommée (4). Le candidat compte son type (3) et les mots du nom sous lequel il est servi. 1 = identique. Les candidats sous 0,3 ne sont pas servis ; à score égal, celui dont les mots sont dans l'ordre de la requête, puis les numéros avant les voies, les voies avant les lieux-dits et les communes.

${DESCRIPTION_COMMUNE} Une recherche du bac à sable qui ne trouve rien répond 403 \`hors_bac_a_sable\`, sauf si \`code_postal\` est celui d'une commune du bac à sable (liste vide) ; un \`code_postal\` hors de ces communes répond 403 d'emblée.`;

const DESCRIPTION_INVERSE = `Géocodage inverse : numéros, voies et lieux-dits de la Base Adresse Nationale à moins de 1 km du point, le plus proche d'abord.

**Tri.** Distance du grand cercle (\`distance_m\`, mètres entiers) croissante ; à distance égale, les numéros avant les voies, les voies avant les lieux-dits. Les communes ne sont pas servies (leur position est un centre de leurs adresses, pas un lieu). Aucune adresse à moins de 1 km : liste vide.

${DESCRIPTION_COMMUNE} Un point à plus de 20 km de toute adresse du bac à sable répond 403 \`hors_bac_a_sable\`.`;

/**
 * Why a search found nothing: the communes it names (its codes, the commune at its end, `code_postal`) whose
 * département the imported BAN does not cover, else nothing resembles the query well enough.
 */
async function rienTrouve(db: Queryable, sandbox: boolean, q: string, codePostal: string | null): Promise<string[]> {
  const filtre = codePostal ? communesDuCode(codePostal) : null;
  if (filtre?.length === 0) return [`Aucune commune n’a le code postal ${codePostal}.`];
  const liees = communesLiees(analyserRequete(q), filtre) ?? [];
  const departements = [...new Set(liees.map(departementOf))];
  const horsPerimetre = await Promise.all(
    departements.map((d) => absenceSource(db, sandbox ? 'sandbox' : 'live', 'ban', d)),
  );
  const raisons = horsPerimetre.filter((r) => r !== null);
  return raisons.length > 0 && raisons.length === departements.length
    ? raisons
    : [
        `Aucune adresse de la BAN importée ne ressemble assez à « ${q} »${codePostal ? ` dans le code postal ${codePostal}` : ''} (score 0,3 au moins).`,
      ];
}

/** Why no address is within 1 km of a point: how far the nearest imported one is (the BAN may not be imported there). */
async function rienAutour(db: Queryable, dataset: Dataset, lat: number, lon: number): Promise<string> {
  const { rows } = await db.query<{ libelle: string; distance: number }>(
    `SELECT libelle, earth_distance(ll_to_earth($2, $3), ll_to_earth(lat, lon)) AS distance FROM adresses
      WHERE dataset = $1 AND type <> 'commune' ORDER BY ll_to_earth(lat, lon) <-> ll_to_earth($2, $3) LIMIT 1`,
    [dataset, lat, lon],
  );
  const plusProche = rows[0];
  const km = plusProche ? Math.round(plusProche.distance / 100) / 10 : null;
  return plusProche
    ? `Aucune adresse de la BAN importée à moins de ${RAYON_INVERSE_M / 1000} km du point ; la plus proche, « ${plusProche.libelle} », est à ${String(km).replace('.', ',')} km : la BAN de cette zone n’est peut-être pas importée.`
    : 'Aucune adresse de la BAN n’est importée.';
}

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
  // People geocode files, as with the BAN's CSV endpoint.
  lot: true,
  summary: 'Trouver une adresse à partir d’un texte (géocodage)',
  description: DESCRIPTION_RECHERCHE,
  input: RechercheInputSchema,
  territoires: (entree) => (entree.code_postal ? [{ code_postal: entree.code_postal }] : []),
  async handler(entree, ctx) {
    const sandbox = ctx.caller.sandbox;
    const codePostal = entree.code_postal ?? null;
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
    const limites = candidats.length > 0 ? [] : await rienTrouve(ctx.services.db, sandbox, entree.q, codePostal);
    return { mode: 'recherche' as const, candidats, limites };
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
    const limites =
      candidats.length > 0 ? [] : [await rienAutour(db, sandbox ? 'sandbox' : 'live', entree.lat, entree.lon)];
    return { mode: 'inverse' as const, candidats, limites };
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
