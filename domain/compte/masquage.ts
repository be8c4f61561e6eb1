/**
 * Masking of contacts in texts written by third parties and served to others (reviews read by another
 * organisation): telephones, e-mail addresses, messaging contacts and civility-prefixed names become a mark.
 *
 * Detection reads a normalised view of the text, because people (and spammers) write contacts in every form a
 * reader still understands: no-break, narrow and zero-width spaces, fullwidth or Arabic-Indic digits, « (at) »,
 * « &#64; », accented domains, « MADAME ». Replacement happens on the text as written: every character of the view
 * remembers where it came from, and a mark covers whole words, so nothing around it (accents, punctuation, the
 * neighbouring words) changes and no word is ever cut in two (« jérô[courriel masqué] » was).
 *
 * Every pattern is bounded or scans once, so a long review costs time in proportion to its length.
 *
 * Out of scope: numbers written in letters (« zéro six douze… ») and contacts given as a riddle (« mon prénom, puis
 * point, puis le nom de la ville »), and names without a civility: nothing in « Martin » tells the neighbour from the
 * bakery.
 */

export type SorteCoordonnee = 'telephone' | 'courriel' | 'contact_web' | 'nom';

/** The marks served in place of a contact. */
export const MARQUES: Readonly<Record<SorteCoordonnee, string>> = {
  telephone: '[téléphone masqué]',
  courriel: '[courriel masqué]',
  contact_web: '[contact masqué]',
  nom: '[nom masqué]',
};

/** The rule in one sentence, for the description of every operation that serves a masked text. */
export const REGLE_DE_MASQUAGE =
  'Téléphones (français ou étrangers, quels que soient séparateurs, espaces insécables ou invisibles et chiffres Unicode), adresses e-mail (y compris « (at) », « [dot] », « @ » codé en entité HTML, domaine accentué, lien mailto), liens et pseudonymes de messagerie (wa.me, t.me, @pseudo) et noms précédés d’une civilité en toute casse (M., Mme, Mlle, Me, Dr, Monsieur, Madame, Maître, Docteur…, « M. et Mme Durand ») sont remplacés, mots entiers, par [téléphone masqué], [courriel masqué], [contact masqué] ou [nom masqué] ; restent une fonction (« M. le maire »), une civilité dans un nom de lieu (« rue du Docteur Roux »), les prix, surfaces, dates, codes postaux, codes INSEE ou IRIS et références cadastrales ; un numéro écrit en lettres n’est pas reconnu.';

/** A contact found in a text: offsets in the text as written (UTF-16 units, end excluded). */
export interface Coordonnee {
  debut: number;
  fin: number;
  sorte: SorteCoordonnee;
}

/**
 * A text with its contacts replaced by a mark. `marques` lets a caller that already serves other wording (the
 * documents say « [e-mail masqué] ») keep it while sharing the detection.
 */
export function masquerCoordonnees(texte: string, marques: Partial<Record<SorteCoordonnee, string>> = {}): string {
  let sortie = '';
  let apres = 0;
  for (const c of reperesCoordonnees(texte)) {
    sortie += texte.slice(apres, c.debut) + (marques[c.sorte] ?? MARQUES[c.sorte]);
    apres = c.fin;
  }
  return sortie + texte.slice(apres);
}

/** Where the contacts of a text are, in order, never overlapping, each widened to whole words. */
export function reperesCoordonnees(texte: string): Coordonnee[] {
  const vue = vueDeDetection(texte);
  const couvert = new Uint8Array(vue.texte.length);
  const trouves: Trouve[] = [];
  // In order of precedence: an e-mail may hold digits or look like a handle from its @ on ("jean @exemple.fr"),
  // a WhatsApp link holds a telephone.
  for (const chercher of [courriels, contactsWeb, telephones, noms]) {
    for (const t of chercher(vue.texte)) {
      if (couvert.subarray(t.debut, t.fin).includes(1)) continue;
      couvert.fill(1, t.debut, t.fin);
      trouves.push(t);
    }
  }
  const coordonnees = trouves
    .map((t) => ({
      debut: debutDeMot(texte, vue.debut[t.debut]),
      fin: finDeMot(texte, vue.fin[t.fin - 1]),
      sorte: t.sorte,
    }))
    .sort((a, b) => a.debut - b.debut);
  // Widened to whole words, two contacts may now touch or overlap ("M.Dupont0612345678"): one mark for both.
  const fusionnees: Coordonnee[] = [];
  for (const c of coordonnees) {
    const derniere = fusionnees.at(-1);
    if (derniere && c.debut < derniere.fin) derniere.fin = Math.max(derniere.fin, c.fin);
    else fusionnees.push(c);
  }
  return fusionnees;
}

// ---------------------------------------------------------------------------------------------------------------
// The detection view.

/** Zero-width characters all become this one in the view; the patterns accept it wherever a reader would not see it. */
const INVISIBLE = '\u200b';
const INVISIBLES = /[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/u;

interface Vue {
  texte: string;
  /** For each UTF-16 unit of the view, where its source starts and ends in the text as written. */
  debut: number[];
  fin: number[];
}

/**
 * The text as a reader understands it: NFKC (fullwidth letters and signs), accents dropped, every decimal digit of
 * any script as an ASCII digit, every space as a space, every invisible character as one zero-width space, every
 * dash as a hyphen, and the HTML entities that hide an @ or a dot decoded.
 */
function vueDeDetection(texte: string): Vue {
  let vue = '';
  const debut: number[] = [];
  const fin: number[] = [];
  for (let i = 0; i < texte.length;) {
    let source = texte.codePointAt(i)!;
    let longueur = source > 0xffff ? 2 : 1;
    if (source === 0x26) {
      const entite = decoderEntite(texte, i);
      if (entite) [source, longueur] = entite;
    }
    const v = caractereDeVue(source);
    for (let k = 0; k < v.length; k++) {
      debut.push(i);
      fin.push(i + longueur);
    }
    vue += v;
    i += longueur;
  }
  return { texte: vue, debut, fin };
}

const ENTITE = /&(?:#(\d{1,7});?|#[xX]([0-9a-fA-F]{1,6});?|([a-zA-Z]{2,8});)/y;
const ENTITES_NOMMEES: Record<string, number> = {
  commat: 0x40,
  period: 0x2e,
  nbsp: 0xa0,
  plus: 0x2b,
  lpar: 0x28,
  rpar: 0x29,
  lsqb: 0x5b,
  rsqb: 0x5d,
  sol: 0x2f,
  lowbar: 0x5f,
  hyphen: 0x2010,
};

function decoderEntite(texte: string, i: number): [source: number, longueur: number] | null {
  ENTITE.lastIndex = i;
  const m = ENTITE.exec(texte);
  if (!m) return null;
  const source = m[1] ? Number(m[1]) : m[2] ? parseInt(m[2], 16) : ENTITES_NOMMEES[m[3]];
  if (source === undefined || source > 0x10ffff || (source >= 0xd800 && source <= 0xdfff)) return null;
  return [source, m[0].length];
}

const CACHE_VUE = new Map<number, string>();

function caractereDeVue(source: number): string {
  if (source < 0x80) return source <= 0x20 ? ' ' : String.fromCharCode(source);
  let v = CACHE_VUE.get(source);
  if (v === undefined) {
    v = convertir(String.fromCodePoint(source));
    CACHE_VUE.set(source, v);
  }
  return v;
}

function convertir(c: string): string {
  if (INVISIBLES.test(c)) return INVISIBLE;
  if (/\s/u.test(c)) return ' ';
  if (/\p{Nd}/u.test(c)) return String(valeurDuChiffre(c.codePointAt(0)!));
  if (/[\p{Pd}\u2212]/u.test(c)) return '-';
  if (/[’‘ʼ′`´]/u.test(c)) return "'";
  if (/[·‧⋅]/u.test(c)) return '.';
  const compatible = c.normalize('NFKC');
  // "²", "½", "①" are numbers but no digits: "45 m²" must not read "45 m2", the start of something longer.
  if (/[0-9]/.test(compatible)) return c;
  return compatible.normalize('NFD').replace(/\p{M}/gu, '');
}

/** Unicode encodes every decimal digit in runs from 0 to 9, so a digit's value is its rank in its run. */
function valeurDuChiffre(source: number): number {
  let zero = source;
  while (/\p{Nd}/u.test(String.fromCodePoint(zero - 1))) zero--;
  return (source - zero) % 10;
}

const DANS_UN_MOT = /[\p{L}\p{N}\p{M}_\u00ad\u200b-\u200d\u2060\ufeff]/u;

function debutDeMot(texte: string, i: number): number {
  while (i > 0) {
    const bas = texte.charCodeAt(i - 1);
    const haut = i >= 2 ? texte.charCodeAt(i - 2) : 0;
    const paire = bas >= 0xdc00 && bas <= 0xdfff && haut >= 0xd800 && haut <= 0xdbff;
    const debut = paire ? i - 2 : i - 1;
    if (!DANS_UN_MOT.test(String.fromCodePoint(texte.codePointAt(debut)!))) break;
    i = debut;
  }
  return i;
}

function finDeMot(texte: string, i: number): number {
  while (i < texte.length) {
    const suivant = texte.codePointAt(i)!;
    if (!DANS_UN_MOT.test(String.fromCodePoint(suivant))) break;
    i += suivant > 0xffff ? 2 : 1;
  }
  return i;
}

// ---------------------------------------------------------------------------------------------------------------
// The patterns, on the view.

interface Trouve {
  debut: number;
  fin: number;
  sorte: SorteCoordonnee;
}

const Z = String.raw`\u200b`;
const PONCTUATION_FINALE = /[.,;:!?)\]}>»"']+$/u;

/** Messaging links (WhatsApp, Telegram, Signal, Messenger…) and social handles: a contact whatever follows. */
const CONTACT_WEB = new RegExp(
  [
    String.raw`(?<![\p{L}\p{N}.\-])(?:https?:\/\/)?(?:www\.)?(?:wa\.me|(?:api|chat|web)\.whatsapp\.com|whatsapp\.com|t\.me|telegram\.(?:me|dog)|m\.me|signal\.me|line\.me|viber\.com|skype\.com)\/[^\s<>"]{0,200}`,
    String.raw`(?<![\p{L}\p{N}])(?:whatsapp|viber|skype|tg|sgnl|callto):\/{0,2}[^\s<>"]{1,200}`,
    String.raw`(?<![\p{L}\p{N}._%+\-@'])@[a-z0-9_](?:[a-z0-9_.]{0,28}[a-z0-9_])?(?![\p{L}\p{N}@])`,
  ].join('|'),
  'giu',
);

function contactsWeb(vue: string): Trouve[] {
  return [...vue.matchAll(CONTACT_WEB)].map((m) => ({
    debut: m.index,
    fin: m.index + m[0].replace(PONCTUATION_FINALE, '').length,
    sorte: 'contact_web',
  }));
}

const LOCAL = new RegExp(String.raw`[\p{L}\p{N}._%+\-'${Z}]`, 'u');
const AROBASE = String.raw`(?:[ ${Z}]{0,2}@[ ${Z}]{0,2}|[ ${Z}]{0,2}[(\[{<][ ${Z}]{0,2}(?:at|arobase|a|@)[ ${Z}]{0,2}[)\]}>][ ${Z}]{0,2}|[ ${Z}]{1,2}(?:at|arobase)[ ${Z}]{1,2})`;
const POINT = String.raw`(?:${Z}{0,2}\.${Z}{0,2}|[ ${Z}]{0,2}[(\[{<][ ${Z}]{0,2}(?:dot|point|pt|\.)[ ${Z}]{0,2}[)\]}>][ ${Z}]{0,2}|[ ${Z}]{1,2}(?:dot|point)[ ${Z}]{1,2})`;
const ETIQUETTE = String.raw`[\p{L}\p{N}${Z}](?:[\p{L}\p{N}\-${Z}]{0,61}[\p{L}\p{N}])?`;
const DOMAINE_HAUT = String.raw`(?:xn--[a-z0-9-]{1,59}|\p{L}{2,24})(?![\p{L}\p{N}])`;
/** From the @ on: searching from the local part would try every letter of a long word as its start. */
const AROBASE_ET_DOMAINE = new RegExp(
  `${AROBASE}${ETIQUETTE}(?:${POINT}${ETIQUETTE}){0,8}${POINT}${DOMAINE_HAUT}`,
  'giu',
);
const MAILTO = /mailto:[ \u200b]{0,2}$/i;

function courriels(vue: string): Trouve[] {
  const trouves: Trouve[] = [];
  for (const m of vue.matchAll(AROBASE_ET_DOMAINE)) {
    let debut = m.index;
    while (debut > 0 && LOCAL.test(vue[debut - 1])) debut--;
    if (debut === m.index) continue;
    const mailto = MAILTO.exec(vue.slice(Math.max(0, debut - 10), debut));
    trouves.push({ debut: debut - (mailto?.[0].length ?? 0), fin: m.index + m[0].length, sorte: 'courriel' });
  }
  return trouves;
}

// Telephones. Read as runs of digits ("groups") and the separators between them, then judged on the digits and
// on the shape of the groups: "06 12 34 56 78" is a telephone, "01000 01100" two postal codes, "01/02/2025 12" a
// date and a number.

interface Groupe {
  debut: number;
  fin: number;
  chiffres: string;
  /** Index of the "+" written before the group, or -1. */
  plus: number;
}

/** A number followed by a unit is an amount, a surface or a share, never a telephone. */
const UNITE_APRES = /^[ \u200b]{0,2}(?:€|%|\$|£|k€|m²|m2(?![\p{L}\p{N}])|eur(?:os?)?(?!\p{L}))/iu;
/** Ten digits with a group of four or more read as a telephone only in these shapes; others are dates or lists. */
const FORMES_NATIONALES = new Set(['10', '2,8', '2,4,4', '4,2,2,2', '4,3,3', '4,6', '3,3,4']);

function estChiffre(vue: string, i: number): boolean {
  const c = vue.charCodeAt(i);
  return c >= 0x30 && c <= 0x39;
}

function groupesDeChiffres(vue: string): Groupe[] {
  const groupes: Groupe[] = [];
  for (let i = 0; i < vue.length;) {
    if (!estChiffre(vue, i)) {
      i++;
      continue;
    }
    // A zero-width space inside a number joins it: "06\u200b12\u200b34" is one run.
    let j = i;
    let fin = i;
    let chiffres = '';
    while (j < vue.length && (estChiffre(vue, j) || vue[j] === INVISIBLE)) {
      if (vue[j] !== INVISIBLE) {
        chiffres += vue[j];
        fin = j + 1;
      }
      j++;
    }
    groupes.push({ debut: i, fin, chiffres, plus: plusAvant(vue, i) });
    i = j;
  }
  return groupes;
}

/** Between two groups of one number: up to two signs among . / _ ( ) -, each with up to three spaces around. */
function separateur(vue: string, debut: number, fin: number): boolean {
  let signes = 0;
  let espaces = 0;
  for (let k = debut; k < fin; k++) {
    const c = vue[k];
    if (c === ' ' || c === INVISIBLE) {
      if (++espaces > 3) return false;
    } else if ('./_()-'.includes(c)) {
      if (++signes > 2) return false;
      espaces = 0;
    } else {
      return false;
    }
  }
  return true;
}

function plusAvant(vue: string, i: number): number {
  let k = i - 1;
  if (vue[k] === ' ' || vue[k] === INVISIBLE) k--;
  return vue[k] === '+' && !/[\p{L}\p{N}]/u.test(vue[k - 1] ?? '') ? k : -1;
}

type Forme = 'francais' | 'etranger' | null;

/** "les 09 10 11 12 13 mars", "lots 01 02 03 04 05": numbers that count up are a list, not a telephone. */
function suiteDeNombres(chiffres: string, longueurs: number[]): boolean {
  if (longueurs.length !== 5 || longueurs.some((l) => l !== 2)) return false;
  const nombres = chiffres.match(/\d\d/g)!.map(Number);
  return nombres.every((x, k) => k === 0 || x === nombres[k - 1] + 1);
}

function formeDeTelephone(chiffres: string, plus: boolean, longueurs: number[]): Forme {
  // Without a "+", a telephone starts with 0 (national, or 00 international) or 33 (French, as WhatsApp writes it).
  if (!plus && chiffres[0] !== '0' && !chiffres.startsWith('33')) return null;
  if (!plus && /^0[1-9]\d{8}$/.test(chiffres)) {
    if (suiteDeNombres(chiffres, longueurs)) return null;
    return longueurs.every((l) => l <= 3) || FORMES_NATIONALES.has(longueurs.join(',')) ? 'francais' : null;
  }
  if (plus && /^330?[1-9]\d{8}$/.test(chiffres)) return 'francais';
  if (!plus && /^00330?[1-9]\d{8}$/.test(chiffres)) return 'francais';
  // "33612345678" is how WhatsApp and many forms write a French mobile.
  if (!plus && /^33[1-9]\d{8}$/.test(chiffres) && (longueurs.length === 1 || longueurs[0] === 2)) return 'francais';
  // "+12 500 000" is a rise in euros: groups of three after the first are thousands.
  const milliers = longueurs.length > 1 && longueurs.slice(1).every((l) => l === 3);
  if (plus && /^[1-9]\d{7,14}$/.test(chiffres) && !milliers) return 'etranger';
  if (!plus && /^00[1-9]\d{7,13}$/.test(chiffres) && !milliers) return 'etranger';
  return null;
}

const AUCUNE: readonly number[] = [];

/**
 * Digit runs can be read as telephones in several ways ("+44 20 7946 0958 / 06 12 34 56 78" also reads
 * "+44 20 7946" then "0958 06 12 34"): the reading kept is the one that masks the most digits, so that no piece of a
 * number is left behind.
 */
function telephones(vue: string): Trouve[] {
  const groupes = groupesDeChiffres(vue);
  const n = groupes.length;
  const cumul = [0];
  for (const g of groupes) cumul.push(cumul.at(-1)! + g.chiffres.length);
  const separe = groupes.map((g, k) => k + 1 < n && separateur(vue, g.fin, groupes[k + 1].debut));
  const lectures: (readonly number[])[] = groupes.map((_, i) => {
    const plus = groupes[i].plus >= 0;
    // Most numbers of a review (prices, surfaces, years) start with neither +, 0 nor 33: no telephone starts there.
    if (!plus && groupes[i].chiffres[0] !== '0' && groupes[i].chiffres[0] !== '3') return AUCUNE;
    const fins: number[] = [];
    const longueurs: number[] = [];
    let chiffres = '';
    for (let j = i; j < n && cumul[j + 1] - cumul[i] <= 15 && (j === i || separe[j - 1]); j++) {
      longueurs.push(groupes[j].chiffres.length);
      chiffres += groupes[j].chiffres;
      if (chiffres.length < 8) continue;
      const apres = vue.slice(groupes[j].fin, groupes[j].fin + 8);
      if (formeDeTelephone(chiffres, plus, longueurs) && !UNITE_APRES.test(apres)) fins.push(j);
    }
    return fins;
  });
  // Best coverage from each group to the end, computed backwards; ties go to the longer reading.
  const couverture = new Array<number>(n + 1).fill(0);
  const choix = new Array<number>(n).fill(-1);
  for (let i = n - 1; i >= 0; i--) {
    couverture[i] = couverture[i + 1];
    for (const j of lectures[i]) {
      const total = cumul[j + 1] - cumul[i] + couverture[j + 1];
      if (total >= couverture[i]) {
        couverture[i] = total;
        choix[i] = j;
      }
    }
  }
  const trouves: Trouve[] = [];
  for (let i = 0; i < n;) {
    const j = choix[i];
    if (j < 0) {
      i++;
      continue;
    }
    const debut = groupes[i].plus >= 0 ? groupes[i].plus : groupes[i].debut;
    trouves.push({ debut, fin: groupes[j].fin, sorte: 'telephone' });
    i = j + 1;
  }
  return trouves;
}

// Civility-prefixed names. The view has no accents ("Maître" reads "Maitre") but keeps the case: a name is
// capitalised, which is what tells « Monsieur Dupont » from « monsieur le maire ».

/** Any case: "Madame", "MADAME", "madame". */
function sansCasse(mot: string): string {
  return [...mot].map((c) => (/\p{L}/u.test(c) ? `[${c.toLowerCase()}${c.toUpperCase()}]` : c)).join('');
}

const LONGUES = ['monsieur', 'madame', 'mademoiselle', 'maitre', 'docteur', 'professeur'].map(sansCasse);
const LONGUES_PLURIELLES = ['messieurs', 'mesdames'].map(sansCasse);
const COURTES = [...['mme', 'mlle'].map(sansCasse), 'M[Ee]', 'D[Rr]', 'P[Rr]', 'M[Rr][Ss]?'];
const COURTES_PLURIELLES = ['mmes', 'mlles'].map(sansCasse);
const ESPACE = `[ ${Z}]`;

/** A civility and the space after it; "M." and "MM." need their dot ("M" alone is a letter). */
function civilites(longues: string[], courtes: string[], pointees: string[]): string {
  return [
    `(?:${longues.join('|')})${ESPACE}{1,3}`,
    `(?:${courtes.join('|')})(?:\\.${ESPACE}{0,3}|${ESPACE}{1,3})`,
    `(?<!\\d${ESPACE}{0,2})(?:${pointees.join('|')})\\.${ESPACE}{0,3}`,
  ].join('|');
}

const CIVILITE = civilites([...LONGUES, ...LONGUES_PLURIELLES], [...COURTES, ...COURTES_PLURIELLES], ['M', 'MM']);
const CIVILITE_PLURIELLE = civilites(LONGUES_PLURIELLES, COURTES_PLURIELLES, ['MM']);
const ET = String.raw`(?:[Ee][Tt]|&)`;

/**
 * Capitalised words after a civility that are no name: articles, pronouns, functions ("M. le Maire", "Madame la
 * Présidente": a function names no one), place words, and the civilities themselves ("Monsieur Madame").
 */
const PAS_UN_NOM = [
  ...['le', 'la', 'les', 'de', 'du', 'des', 'en', 'et', 'ou', 'a', 'au', 'aux', 'dans', 'sur', 'pour', 'par'],
  ...['avec', 'chez', 'sans', 'mais', 'donc', 'car', 'ni', 'qui', 'que', 'quoi', 'ce', 'cet', 'cette', 'ces'],
  ...['je', 'tu', 'il', 'elle', 'on', 'nous', 'vous', 'ils', 'elles', 'mon', 'ma', 'mes', 'ton', 'ta', 'tes'],
  ...['son', 'sa', 'ses', 'notre', 'nos', 'votre', 'vos', 'leur', 'leurs', 'un', 'une', 'est', 'sont', 'etait'],
  ...['a', 'ont', 'fait', 'dit', 'tres', 'bien', 'pas', 'plus', 'saint', 'sainte', 'st', 'ste'],
  ...['maire', 'adjoint', 'adjointe', 'prefet', 'prefete', 'president', 'presidente', 'directeur', 'directrice'],
  ...['notaire', 'cure', 'abbe', 'juge', 'depute', 'deputee', 'senateur', 'senatrice', 'ministre', 'conseiller'],
  ...['conseillere', 'commissaire', 'proprietaire', 'locataire', 'agent', 'gerant', 'gerante', 'syndic'],
  ...['ouvrage', 'oeuvre', 'œuvre', 'monsieur', 'madame', 'mademoiselle', 'messieurs', 'mesdames', 'maitre'],
  ...['docteur', 'professeur', 'mme', 'mmes', 'mlle', 'mlles', 'me', 'dr', 'pr', 'mr', 'mrs', 'm', 'mm'],
];
const MOT_DU_NOM = String.raw`(?!(?:${PAS_UN_NOM.map(sansCasse).join('|')})(?![\p{L}\p{M}'\-]|\.\p{L}))\p{Lu}(?:\.(?!\p{L})|[\p{L}\p{M}]{0,40}(?:['\-]\p{L}[\p{L}\p{M}]{0,40}){0,3})`;
/** "de La Fontaine", "d'Artagnan", "van Gogh", "Le Goff": a particle joins the next capitalised word to the name. */
const PARTICULE = String.raw`(?:[Dd]e${ESPACE}+[Ll]a|[Dd]e${ESPACE}+[Ll]'|[Dd]e|[Dd]u|[Dd]es|[Dd]'|[Vv]an(?:${ESPACE}+[Dd]e[rn]?)?|[Vv]on|[Ll]e|[Ll]a)`;
const NOM = String.raw`(?:${PARTICULE}${ESPACE}{0,2})?${MOT_DU_NOM}(?:${ESPACE}{1,2}(?:${PARTICULE}${ESPACE}{0,2})?${MOT_DU_NOM}){0,3}`;
const NOM_CIVIL = new RegExp(
  String.raw`(?<![\p{L}\p{N}])(?:(?:${CIVILITE_PLURIELLE})${NOM}(?:${ESPACE}{1,3}${ET}${ESPACE}{1,3}${NOM})?|(?:${CIVILITE})(?:${ET}${ESPACE}{1,3}(?:${CIVILITE})){0,2}${NOM})`,
  'gu',
);

/** "rue du Docteur Roux", "lycée Professeur Calmette": a civility inside a place name names no one we talk about. */
export const AVANT_UN_LIEU =
  /(?:^|[\s\u200b(])(?:rue|avenue|av\.?|bd|boulevard|place|allee|impasse|quai|square|cours|chemin|pont|lycee|college|ecole|hopital|clinique|centre|institut|residence|stade|parc|groupe scolaire|station|metro|gare)(?:[\s\u200b]+(?:du|de la|de l'|des|de))?[\s\u200b]*$/i;

/** "IL ME DIT" is the pronoun shouted, not Maître Dit: an upper-case "ME" after an upper-case word is no civility. */
function pronomCrie(vue: string, debut: number): boolean {
  return (
    /^ME[ \u200b]/.test(vue.slice(debut, debut + 3)) &&
    /\p{Lu}{2,}[ \u200b]+$/u.test(vue.slice(Math.max(0, debut - 30), debut))
  );
}

function noms(vue: string): Trouve[] {
  const trouves: Trouve[] = [];
  for (const m of vue.matchAll(NOM_CIVIL)) {
    if (AVANT_UN_LIEU.test(vue.slice(Math.max(0, m.index - 30), m.index)) || pronomCrie(vue, m.index)) continue;
    trouves.push({ debut: m.index, fin: m.index + m[0].replace(/['-]+$/, '').length, sorte: 'nom' });
  }
  return trouves;
}
