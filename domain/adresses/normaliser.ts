/**
 * The one normalisation of address text, used when the BAN is imported (the names stored and indexed) and when a
 * query is read (domain/adresses/requete.ts): what the BAN, DVF, the cadastre and people write differently reads the
 * same once through it.
 *
 * - accents, case, hyphens and apostrophes: `Saint-Louis en l'Île` and `ST LOUIS EN L ILE` are `saint louis en l ile`
 *   (an elision written without its apostrophe, `D AUMALE`, is the same two words as `d'Aumale`);
 * - street types: the first words of a street name, full or abbreviated as AFNOR, FANTOIR and DVF write them (`BD`,
 *   `BLD`, `AV`, `R`, `PL`, `PAS`, `IMP`, `CHE`, `RTE`, `FG`, `RPT`, `ZA`…), are one type, apart from the name;
 * - abbreviations of the name's words wherever they stand: `ST`/`STE` (saint, sainte), `FG`/`FBG` (faubourg), titles
 *   (`GAL`/`GEN` général, `MAL` maréchal, `PDT` président, `DR` docteur…);
 * - ordinals and Roman numerals: `1ER`, `IER`, `PREMIER` are `1`; `HENRI IV` is `henri 4`, `11E` is `11`.
 */

/** Lower case, no accents, ligatures spelt out, other signs as spaces. */
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

/** Whether two words are at most one typo apart (a letter added, dropped, replaced, or two swapped), in linear time. */
export function uneFauteAuPlus(a: string, b: string): boolean {
  if (a === b) return true;
  const la = a.length;
  const lb = b.length;
  if (Math.abs(la - lb) > 1) return false;
  let i = 0;
  while (i < la && i < lb && a[i] === b[i]) i++;
  if (la === lb) {
    if (a.slice(i + 1) === b.slice(i + 1)) return true;
    return a[i] === b[i + 1] && a[i + 1] === b[i] && a.slice(i + 2) === b.slice(i + 2);
  }
  return la > lb ? a.slice(i + 1) === b.slice(i) : a.slice(i) === b.slice(i + 1);
}

/**
 * Street types: each type (its full name, folded) with the ways it is written, folded. The AFNOR NF Z 10-011 and
 * FANTOIR abbreviations, the full names and their common variants. A type of several words is matched before its
 * first word alone (`chemin rural` before `chemin`).
 */
const TYPES: Record<string, string[]> = {
  rue: ['r', 'rue', 'rues'],
  boulevard: ['bd', 'bld', 'blvd', 'bvd', 'boul', 'boulevard', 'boulevards'],
  avenue: ['av', 'ave', 'avn', 'avenue', 'avenues'],
  allee: ['all', 'al', 'allee', 'allees'],
  chemin: ['che', 'chem', 'ch', 'chemin', 'chemins'],
  'chemin rural': ['cr', 'chemin rural'],
  'chemin vicinal': ['cv', 'chemin vicinal'],
  'ancien chemin': ['acht', 'ancien chemin'],
  'petit chemin': ['pch', 'petit chemin'],
  impasse: ['imp', 'impasse'],
  place: ['pl', 'place', 'places'],
  placette: ['plte', 'placette'],
  passage: ['pas', 'psg', 'passage', 'passages'],
  passerelle: ['pass', 'passerelle'],
  quai: ['qu', 'qai', 'quai', 'quais'],
  route: ['rte', 'rt', 'route'],
  'ancienne route': ['art', 'ancienne route'],
  'nouvelle route': ['nte', 'nouvelle route'],
  'vieille route': ['vte', 'vieille route'],
  square: ['sq', 'squ', 'square'],
  cours: ['crs', 'cours'],
  cour: ['cour'],
  cite: ['cite', 'cites'],
  villa: ['vla', 'villa', 'villas'],
  village: ['vlge', 'village'],
  hameau: ['ham', 'hameau', 'hameaux'],
  'lieu dit': ['ld', 'lieu dit', 'lieudit'],
  lotissement: ['lot', 'lots', 'lotissement', 'lotissements'],
  residence: ['res', 'residence', 'residences'],
  parvis: ['prv', 'parvis'],
  montee: ['mte', 'montee'],
  descente: ['dsc', 'desc', 'descente'],
  rampe: ['rpe', 'rampe'],
  faubourg: ['fg', 'fbg', 'faubourg'],
  'rond point': ['rpt', 'rdpt', 'rd pt', 'rond point', 'rondpoint'],
  carrefour: ['car', 'carr', 'carrefour'],
  sente: ['sen', 'sente'],
  sentier: ['sent', 'sentier', 'sentiers'],
  ruelle: ['rle', 'ruelle'],
  venelle: ['ven', 'venelle'],
  traverse: ['tra', 'trav', 'traverse'],
  esplanade: ['esp', 'espl', 'esplanade'],
  promenade: ['prom', 'promenade'],
  terrasse: ['tsse', 'terr', 'terrasse', 'terrasses'],
  'terre plein': ['tpl', 'terre plein'],
  corniche: ['cor', 'corn', 'corniche'],
  chaussee: ['chs', 'chau', 'chaussee'],
  'grande rue': ['gr', 'grande rue', 'grand rue'],
  'petite rue': ['ptr', 'petite rue'],
  'petite avenue': ['pta', 'petite avenue'],
  'voie communale': ['vc', 'voie communale'],
  voie: ['voie', 'voies'],
  zone: ['zone'],
  'zone artisanale': ['za', 'zone artisanale'],
  'zone industrielle': ['zi', 'zone industrielle'],
  "zone d'activites": ['zae', 'zone d activite', 'zone d activites', 'zone activite', 'zone activites'],
  "zone d'amenagement concerte": ['zac', 'zone d amenagement concerte'],
  quartier: ['qua', 'quar', 'qrt', 'quartier'],
  domaine: ['dom', 'domaine'],
  clos: ['clos'],
  enclos: ['enc', 'enclos'],
  parc: ['parc'],
  mail: ['mail'],
  port: ['port'],
  porte: ['pte', 'porte'],
  pont: ['pont'],
  galerie: ['gal', 'galerie', 'galeries'],
  halle: ['hle', 'halle', 'halles'],
  marche: ['mar', 'marche'],
  plateau: ['plt', 'plateau'],
  plaine: ['pln', 'plaine'],
  cote: ['cote'],
  ecart: ['eca', 'ecart'],
  digue: ['dig', 'digue'],
  berge: ['ber', 'berge', 'berges'],
  rocade: ['roc', 'rocade'],
  escalier: ['esc', 'escalier'],
  jardin: ['jard', 'jardin', 'jardins'],
  immeuble: ['imm', 'immeuble', 'immeubles'],
};

/** Written form (folded, words joined by one space) → type. */
const FORMES_TYPE = new Map<string, string>();
for (const [type, formes] of Object.entries(TYPES)) for (const forme of formes) FORMES_TYPE.set(forme, type);
/** Longest written form of a type, in words. */
const MOTS_TYPE_MAX = Math.max(...[...FORMES_TYPE.keys()].map((f) => f.split(' ').length));

/** The types, as `type_voie` stores them. */
export const TYPES_VOIE = Object.keys(TYPES);

/**
 * Abbreviated words of a name, wherever they stand (not as a type: `GAL` first is a galerie, later a général). Only
 * abbreviations that cannot be read otherwise in a street name.
 */
const ABREVIATIONS: Record<string, string> = {
  st: 'saint',
  ste: 'sainte',
  sts: 'saints',
  stes: 'saintes',
  fg: 'faubourg',
  fbg: 'faubourg',
  gal: 'general',
  gen: 'general',
  mal: 'marechal',
  pdt: 'president',
  dr: 'docteur',
  prof: 'professeur',
  cdt: 'commandant',
  cmdt: 'commandant',
  cpt: 'capitaine',
  lt: 'lieutenant',
  lieut: 'lieutenant',
  sgt: 'sergent',
  mgr: 'monseigneur',
  gd: 'grand',
  gde: 'grande',
  vx: 'vieux',
  vve: 'veuve',
  premier: '1',
  premiere: '1',
};

/** Short grammatical words: articles, prepositions, elided `d` and `l`. */
export const MOTS_OUTILS = new Set('de du des la le les l d a au aux en et sur sous lez'.split(' '));

const ROMAINS: Record<string, number> = { i: 1, v: 5, x: 10, l: 50, c: 100 };
const ROMAIN = /^(?:x{0,3})(?:ix|iv|v?i{0,3})$/;

/** The value of a Roman numeral of 1 to 39 written in i, v and x, else null. */
function romain(mot: string): number | null {
  if (!mot || !ROMAIN.test(mot)) return null;
  let total = 0;
  for (let i = 0; i < mot.length; i++) {
    const v = ROMAINS[mot[i]];
    const next = ROMAINS[mot[i + 1]] ?? 0;
    total += v < next ? -v : v;
  }
  return total;
}

const ORDINAL = /^(\d+)(?:er|ere|re|e|eme|ieme|nd|nde)$/;
// `IER`, `IERE`, `IRE` (premier, première); `IIE`, `XVIE`, `XXEME`: not `VIE` nor `VER`, which are words.
const PREMIER_ROMAIN = /^i(?:er|ere|re)$/;
const ORDINAL_ROMAIN = /^([ivx]+)(?:e|eme)$/;

/**
 * One word of a name in its canonical form: abbreviation spelt out, ordinal or Roman numeral as digits. `precedent`
 * is the word before it: a single-letter numeral (`V`, `X`, `I`) is one only after a name (`Charles V`), not as an
 * initial or a word of its own.
 */
function motCanonique(mot: string, precedent: string | undefined): string {
  const abrege = ABREVIATIONS[mot];
  if (abrege) return abrege;
  const ordinal = ORDINAL.exec(mot);
  if (ordinal) return String(Number(ordinal[1]));
  if (PREMIER_ROMAIN.test(mot)) return '1';
  const ordinalRomain = mot === 'vie' ? null : ORDINAL_ROMAIN.exec(mot);
  if (ordinalRomain) {
    const n = romain(ordinalRomain[1]);
    if (n !== null) return String(n);
  }
  if (/^\d+$/.test(mot)) return String(Number(mot));
  if (mot.length >= 2 || (precedent && /^[a-z]{3,}$/.test(precedent) && !MOTS_OUTILS.has(precedent))) {
    const n = romain(mot);
    if (n !== null) return String(n);
  }
  return mot;
}

/** Words in their canonical form (see motCanonique); `notre dame` written `ND` becomes two words. */
export function motsCanoniques(mots: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < mots.length; i++) {
    if (mots[i] === 'nd') out.push('notre', 'dame');
    else out.push(motCanonique(mots[i], mots[i - 1]));
  }
  return out;
}

/** The street type written at the start of `mots` (folded words) and how many words it takes, or null. */
export function typeEnTete(mots: string[]): { type: string; longueur: number } | null {
  for (let n = Math.min(MOTS_TYPE_MAX, mots.length); n >= 1; n--) {
    const type = FORMES_TYPE.get(mots.slice(0, n).join(' '));
    // A type alone is a name (`Le Port`, `Grande Rue`): the type of `Grande Rue` is grande rue, its name empty; but
    // `R` or `LOT` alone is not a street.
    if (type && (n < mots.length || n > 1 || mots[0].length > 3)) return { type, longueur: n };
  }
  return null;
}

/** Whether a folded word is a written form of a street type (`bd`, `rue`, `imp`). */
export function estFormeDeType(mot: string): boolean {
  return FORMES_TYPE.has(mot);
}

/** A street or place name as stored and compared: its type (null when it has none) and its words without it. */
export interface NomNormalise {
  type: string | null;
  mots: string[];
}

/** `Boulevard de Charonne`, `BD DE CHARONNE` → { type: 'boulevard', mots: ['de', 'charonne'] }. */
export function normaliserNom(nom: string): NomNormalise {
  const plies = plier(nom).split(' ').filter(Boolean);
  const enTete = typeEnTete(plies);
  return {
    type: enTete?.type ?? null,
    mots: motsCanoniques(enTete ? plies.slice(enTete.longueur) : plies),
  };
}

/** Text in canonical words (commune names, free text): folded, abbreviations spelt out, numerals as digits. */
export function normaliserTexte(text: string): string[] {
  return motsCanoniques(plier(text).split(' ').filter(Boolean));
}

/** What the BAN import stores of a street or place name (db/migrations/017_adresses_normalisees.sql). */
export interface NomIndexe {
  type_voie: string | null;
  /** Canonical words of the name, without its type. */
  nom_norm: string;
  /** The other forms of the name that say more (`nom_afnor`, `alias`), canonical, without their type. */
  noms_alt: string[];
  /**
   * What the search indexes read: type, name and other forms, canonical words. Not the commune: the search is bound
   * to communes apart, and a commune's name in every one of its streets would make them all look like a street
   * named after it (`Rue de Lille` searched in Saint-André and Lille).
   */
  recherche: string;
}

/** The stored forms of a name and of its other forms (abbreviated AFNOR name, aliases). */
export function indexerNom(nom: string, autres: Array<string | null>): NomIndexe {
  const principal = normaliserNom(nom);
  const nomNorm = principal.mots.join(' ');
  const alt = new Set<string>();
  for (const autre of autres) {
    if (!autre) continue;
    const mots = normaliserNom(autre).mots.join(' ');
    if (mots && mots !== nomNorm) alt.add(mots);
  }
  const noms_alt = [...alt];
  return {
    type_voie: principal.type,
    nom_norm: nomNorm,
    noms_alt,
    recherche: [principal.type, nomNorm, ...noms_alt].filter(Boolean).join(' '),
  };
}
