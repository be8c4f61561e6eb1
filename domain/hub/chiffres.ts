/**
 * The figure check of the Hub's answers (issue 14, item 4): every figure of `reponse` must be found in a tool result
 * or in the user's question at the precision it is written with; a figure no source supports is marked in the text
 * and counted, the way PLU quotations are checked. Pure logic: no database, no clock.
 *
 * The rules, as the API description states them:
 *
 * - **Precision.** A figure stands for every value that rounds to it at its last written digit: « 3 412 €/m² »
 *   covers 3 411,5 to 3 412,5 (a tool's 3411.87 supports it), « 12,3 % » covers 12,25 to 12,35, « 3,4 k€ » covers
 *   3 350 to 3 450 €. Both ends are included, so any rounding convention passes.
 * - **Trailing zeros.** Zeros that end an integer are not significant, but the first two digits always are:
 *   « 3 500 » covers 3 450 to 3 550 and « 3 000 » 2 950 to 3 050, so 3 412 supports neither (« 3,4 k€ » says that
 *   rounding). After « environ », « près de », « autour de », « de l'ordre de », « quelque », « presque »,
 *   « quasiment », « approximativement », « ~ » or « ≈ », every trailing zero is a rounding: « environ 3 000 € »
 *   covers 2 500 to 3 500.
 * - **Multipliers.** k€, M€, Md€, « mille », « million(s) », « milliard(s) » (« 1,2 million d'euros ») scale the
 *   written number, and the precision with it; the scaled value is compared (the written 1.2 alone is not: small
 *   decimals abound in the sources, coefficients and ratios, and would pass any amount in millions).
 * - **Percentages** match a source number as a percentage (12,3 for « 12,3 % ») or as a ratio (0.1234 for
 *   « 12 % »), at the precision shown.
 * - **Signs.** A figure written with a sign must match a source of that sign; a figure without one matches either
 *   sign, since French carries it in words (« une baisse de 3,2 % » for −3.2).
 * - **Units** are reported, not matched: a number is compared with every source number, since field names are no
 *   reliable unit. Dates are compared with dates only.
 * - **Dates** (« 1er mars 2025 », « 1 mars 2025 », « 2025-03-01 », « 01/03/2025 », « mars 2025 », « 03/2025 »,
 *   « T1 2025 », « 1er trimestre 2025 », a year alone) match a source date at their own precision: a day needs that
 *   day, a month any source date in that month, a year any source date in that year or the number itself
 *   (`annee: 2024`). A 4-digit integer from 1900 to 2100 written without unit, sign, decimals or grouping is a year.
 * - **Codes.** An integer of 5 digits or more written without grouping, or with a leading zero, and without unit
 *   (INSEE code, postal code, a count French typography would have grouped) is compared exactly, never as a
 *   rounding.
 * - **Not figures**: list and heading numbering (`1.`, `2)`, `## 3.`, `### 2.1`), footnote calls (`[1]`, `[^2]`),
 *   digits touching a letter or an underscore (`T3`, `R+2`, `2e`, `1er`, `UA10`, `14h30`, `2A004`, ids), article
 *   and number references (`L. 123-1`, `article 12`, `n° 5`, `p. 12`), tight chains that are not ranges (`123-1`,
 *   `2024-1234567`, `24/7`), URLs and link targets.
 * - **Ranges** (« 3 000 à 3 500 €/m² », « entre 12 et 15 % », « 2019-2024 ») are two figures, the first taking the
 *   unit of the second.
 * - **Sources** are every number reachable in the tool results (JSON numbers, numbers and dates inside strings, as
 *   French prose writes them too, digits of identifiers and of field names, array lengths) and in the question.
 * - **Limits.** The check reads numbers, not meanings: a figure passes when some source value supports it, whatever
 *   the field, so small integers and round figures pass easily against large results. What it guarantees is that a
 *   figure found in no source is never served unmarked. What the agent was given besides tools and question
 *   (investor profile, memory, `contexte`) counts only when passed among `resultats`.
 * - **Mark.** An unverified figure is followed by ` [non vérifié]`, after the emphasis that closes on it
 *   (`**3 500 €** [non vérifié]`): no pipe (tables hold), brackets that never form a link. A figure already
 *   followed by the mark is not marked again.
 *
 * French number forms read: grouping by space, U+00A0 or U+202F (« 1 234,5 »), decimal comma, decimal point
 * (« 3411.87 »; « 1.234.567 » with two groups or more is grouping), signs - and − and +.
 */

export type TypeChiffre = 'eur' | 'eur_m2' | 'm2' | 'pct' | 'date' | 'nombre';
export type PrecisionDate = 'jour' | 'mois' | 'trimestre' | 'annee';

interface Emplacement {
  /** As written in the text, unit included (« 3 412 €/m² »). */
  texte: string;
  /** Offsets in the text (UTF-16 code units), `fin` excluded. */
  debut: number;
  fin: number;
}

export interface ChiffreNombre extends Emplacement {
  type: Exclude<TypeChiffre, 'date'>;
  /** Value in euros, m², percent or units, multiplier and sign applied (« −3,4 k€ » → −3400). */
  valeur: number;
  /** The number as written, sign applied, before its multiplier (« 3,4 k€ » → 3.4). */
  ecrit: number;
  /** 1, or 1e3 (k€, mille), 1e6 (M€, million), 1e9 (Md€, milliard). */
  multiplicateur: number;
  /** Digits written after the decimal separator. */
  decimales: number;
  /** Unit of the last significant digit, in the unit of `valeur` (100 for « 3 500 », 0.1 for « 12,3 % »). */
  pas: number;
  /** The sign as written: 0 when none. */
  signe: -1 | 0 | 1;
  /** Compared exactly, never as a rounding (5 digits or more without grouping, or a leading zero). */
  code: boolean;
}

export interface ChiffreDate extends Emplacement {
  type: 'date';
  /** 'AAAA-MM-JJ', 'AAAA-MM', 'AAAA-Tn', 'AAAA', or '--MM-JJ' for a day written without its year. */
  date: string;
  precision: PrecisionDate;
}

export type Chiffre = ChiffreNombre | ChiffreDate;

export interface SourcesChiffres {
  question: string;
  /** Outputs of the operations the agent called, as they returned them. */
  resultats: readonly unknown[];
}

export interface IndexSources {
  /** Every number of the sources, ascending. */
  readonly nombres: Float64Array;
  /** Date keys: 'AAAA', 'AAAA-MM', 'AAAA-Tn', 'AAAA-MM-JJ', '--MM-JJ'. */
  readonly dates: ReadonlySet<string>;
}

export interface VerificationChiffres {
  /** The answer, each unverified figure followed by MARQUE_NON_VERIFIE. */
  texte: string;
  /** Figures found in the answer. */
  chiffres: number;
  /** Figures no source supports (marked in `texte`). */
  non_verifies: number;
  /** The unverified figures as written, in order. */
  liste_non_verifies: string[];
}

/** Square brackets that never form a link (no destination follows), no pipe: Markdown tables and emphasis hold. */
export const MARQUE_NON_VERIFIE = ' [non vérifié]';

const ESPACE = '[ \\u00a0\\u202f\\u2009]';
const MOIS: Record<string, number> = {
  janvier: 1,
  janv: 1,
  fevrier: 2,
  fevr: 2,
  fev: 2,
  mars: 3,
  avril: 4,
  avr: 4,
  mai: 5,
  juin: 6,
  juillet: 7,
  juil: 7,
  aout: 8,
  septembre: 9,
  sept: 9,
  octobre: 10,
  oct: 10,
  novembre: 11,
  nov: 11,
  decembre: 12,
  dec: 12,
};
const NOMS_MOIS =
  'janvier|f[ée]vrier|mars|avril|mai|juin|juillet|ao[uû]t|septembre|octobre|novembre|d[ée]cembre|' +
  'janv\\.|f[ée]vr?\\.|avr\\.|juil\\.|sept\\.|oct\\.|nov\\.|d[ée]c\\.';
const RANG_TRIMESTRE = '1er|1ᵉʳ|premier|[234](?:e|ème|eme|ᵉ)|deuxième|second|troisième|quatrième';

/**
 * Dates, longest forms first; each alternative has its own groups. What may not precede a date is checked after the
 * match (debutDeDate): a lookbehind at the head of each alternative makes the scan four times slower.
 */
const DATE = new RegExp(
  [
    // ISO day, a time after it allowed.
    `(?<ia>\\d{4})-(?<im>\\d{2})-(?<ij>\\d{2})(?:[T ]\\d{2}:\\d{2}(?::\\d{2}(?:\\.\\d+)?)?(?:Z|[+-]\\d{2}:?\\d{2})?)?(?![\\p{N}])`,
    // The API's quarters: AAAA-Tn.
    `(?<qa>\\d{4})-T(?<qn>[1-4])(?![\\p{L}\\p{N}_])`,
    // ISO month.
    `(?<ma>\\d{4})-(?<mm>\\d{2})(?![\\p{N}-])`,
    // JJ/MM/AAAA, JJ.MM.AAAA.
    `(?<nj>\\d{1,2})[/.](?<nm>\\d{1,2})[/.](?<na>\\d{4})(?![\\p{N}/])`,
    // MM/AAAA.
    `(?<sm>\\d{1,2})\\/(?<sa>\\d{4})(?![\\p{N}/])`,
    // [1er | JJ] mois [AAAA]: one of the two at least, checked after the match.
    `(?:(?<fj>1er|1ᵉʳ|\\d{1,2})${ESPACE}+)?(?<fm>${NOMS_MOIS})(?![\\p{L}])(?:${ESPACE}+(?<fa>\\d{4})(?![\\p{N}]))?`,
    // T1 2025, 1er trimestre 2025, deuxième trimestre de 2025.
    `(?:T(?<tn>[1-4])|(?<tr>${RANG_TRIMESTRE})${ESPACE}+trimestre)(?:${ESPACE}+(?:de${ESPACE}+|d['’])?|-)(?<ta>\\d{4})(?![\\p{N}])`,
  ].join('|'),
  'giu',
);

const AVANT_DATE = /[\p{L}\p{N}_]/u;

/** A date starts a word; ISO forms not after a hyphen, numeric forms not after a slash, a point or a comma. */
function debutDeDate(vue: string, debut: number, g: Record<string, string | undefined>): boolean {
  const avant = vue[debut - 1];
  if (avant === undefined) return true;
  if (AVANT_DATE.test(avant)) return false;
  if (g.ia || g.qa || g.ma) return avant !== '-';
  if (g.na || g.sa) return !'/.,'.includes(avant);
  return true;
}

/** What every date holds (4 digits or a month's name): most texts skip the date expression at this cost. */
const INDICE_DATE = /\d{4}|janv|f[ée]vr?|mars|avr|mai|juin|juil|ao[uû]t|sept|oct|nov|d[ée]c/i;

/**
 * An integer part: grouped by spaces (each group of exactly 3 digits), grouped by points (two groups at least, so
 * that « 1.234 » stays a decimal), or plain.
 */
const ENTIER = `\\d{1,3}(?:${ESPACE}\\d{3})+(?!\\d)|\\d{1,3}(?:\\.\\d{3}){2,}(?![\\d.])|\\d+`;
const NUM = `(?:${ENTIER})(?:[,.]\\d+)?`;
/**
 * A number, with its sign, and the tight chain that may follow it (« 2019-2024 », « 123-1 », « 24/7 »). Never
 * inside a word: not after a letter, a digit or an underscore, nor after one of those and a joining sign (« R+2 »,
 * « L.123 »).
 */
const NOMBRE = new RegExp(
  `(?<![\\p{L}\\p{M}\\p{N}_]|[\\p{L}\\p{N}_][-+−‐/.,])([-+−](?=\\d))?(${NUM})((?:[-‐/]${NUM})*)`,
  'gu',
);
const MAILLON = new RegExp(`([-‐/])(${NUM})`, 'gu');

const PAS_LETTRE = '(?![\\p{L}\\p{N}])';
const EUROS = `(?:€|EUR${PAS_LETTRE}|euros?${PAS_LETTRE})`;
const UNITE = new RegExp(
  `${ESPACE}?(?:` +
    `(?<mc>k|K|M|Md|Mds|Mrd|Mrds)${ESPACE}?${EUROS}` +
    `|(?<mm>mille|millions?|milliards?)${PAS_LETTRE}(?<me>${ESPACE}+(?:d['’]${ESPACE}?|de${ESPACE}+)?${EUROS})?` +
    `|(?<e>${EUROS})` +
    `|(?<s>m²|m2${PAS_LETTRE}|mètres?${ESPACE}carrés?${PAS_LETTRE})` +
    `|(?<p>%|pour${ESPACE}?cent${PAS_LETTRE}|pourcents?${PAS_LETTRE})` +
    `)`,
  'uy',
);
/** A unit written against its number (« 65m² », « 12% », « 3,4k€ »): the letter after it is no identifier. */
const UNITE_COLLEE = new RegExp(`(?:k|K|M|Md|Mds|Mrd|Mrds)?${EUROS}|m²|m2${PAS_LETTRE}`, 'uy');
const PAR_M2 = new RegExp(
  `${ESPACE}?(?:\\/|par|le|du)${ESPACE}?(?:m²|m2${PAS_LETTRE}|mètre${ESPACE}carré${PAS_LETTRE})`,
  'uy',
);
const MULTIPLICATEURS: Record<string, number> = {
  k: 1e3,
  mille: 1e3,
  m: 1e6,
  million: 1e6,
  millions: 1e6,
  md: 1e9,
  mds: 1e9,
  mrd: 1e9,
  mrds: 1e9,
  milliard: 1e9,
  milliards: 1e9,
};

/** Words after which a number is a reference, not a quantity: « article 12 », « n° 5 », « p. 12 », « L. 123-1 ». */
const REFERENCE_AVANT =
  /(?:n[°º]|\bno\.|\bnum(?:éro)?s?\.?|\bart(?:icle)?s?\.?|\balinéas?|\bp\.|\bpages?)[ \u00a0\u202f]*$/iu;
const CODE_LEGAL_AVANT = /(?<![\p{L}])[LRD]\.[ \u00a0\u202f]*$/u;
const APPROXIMATION_AVANT =
  /(?:\benviron|\bprès de|\bpres de|\bautour de|\bde l['’]ordre de|\bquelque|\bpresque|\bquasiment|\bapproximativement|~|≈)[ \u00a0\u202f]*$/iu;
const LETTRE = /[\p{L}\p{M}_]/u;
const LIAISON_INTERVALLE = /^[ \u00a0\u202f\u2009]*(?:à|au|-|‐|–|—|et)[ \u00a0\u202f\u2009]*$/u;
const DEBUT_INTERVALLE = /(?:\bentre|\bde|\bd['’])[ \u00a0\u202f]*$/iu;

/** Spans read as no figure at all. Each is blanked with spaces, so offsets stay those of the text. */
const MASQUES: Array<[indice: RegExp, masque: RegExp]> = [
  [/:\/\/|www\./i, /\bhttps?:\/\/[^\s<>()\]]+|\bwww\.[^\s<>()\]]+/giu],
  // A link's destination (its text is read).
  [/\]\(/, /(?<=\])\([^)\n]*\)/gu],
  // Footnote and source calls.
  [/\[/, /\[\^?\d{1,3}\]/gu],
];
/** Numbered list items (« 1. », « 2) », « **3.** ») and headings (« ## 2.1 »): the number, not the prefix, is blanked. */
const NUMEROTATIONS = [
  /^([ \t]*(?:>[ \t]*)*(?:[-*+][ \t]+)?(?:#{1,6}[ \t]+)?(?:\*\*|__)?)(\d{1,3}[.)])(?=[ \t]|\*\*|__|$)/gmu,
  /^([ \t]*(?:>[ \t]*)*#{1,6}[ \t]+(?:\*\*|__)?)(\d{1,3}(?:\.\d{1,3})+\.?)(?=[ \t]|\*\*|__|$)/gmu,
];

interface Brut {
  debut: number;
  fin: number;
  signe: -1 | 0 | 1;
  entier: string;
  decimales: string;
  groupe: boolean;
  unite: Exclude<TypeChiffre, 'date' | 'nombre'> | null;
  multiplicateur: number;
  environ: boolean;
}

interface Lecture {
  chiffres: Chiffre[];
  /** Digit runs of what was read as no figure (identifiers, references): sources count them verbatim. */
  identifiants: number[];
}

/** The text with the given spans (in order, apart) turned into spaces. */
function blanchir(vue: string, spans: ReadonlyArray<readonly [number, number]>): string {
  if (spans.length === 0) return vue;
  let resultat = '';
  let curseur = 0;
  for (const [debut, fin] of spans) {
    resultat += vue.slice(curseur, debut) + ' '.repeat(fin - debut);
    curseur = fin;
  }
  return resultat + vue.slice(curseur);
}

function masquer(texte: string): string {
  let vue = texte;
  for (const [indice, masque] of MASQUES) {
    if (indice.test(vue)) vue = vue.replace(masque, (m) => ' '.repeat(m.length));
  }
  for (const numerotation of NUMEROTATIONS) {
    vue = vue.replace(numerotation, (_m, avant: string, numero: string) => avant + ' '.repeat(numero.length));
  }
  return vue;
}

const deux = (n: number) => String(n).padStart(2, '0');

function cleMois(mot: string): number | undefined {
  const sansAccent = mot.toLowerCase().normalize('NFD').replace(/\p{M}/gu, '').replace(/\.$/, '');
  return MOIS[sansAccent];
}

function rangTrimestre(mot: string): number {
  const m = mot.toLowerCase();
  if (m.startsWith('1') || m === 'premier') return 1;
  if (m.startsWith('2') || m === 'deuxième' || m === 'second') return 2;
  if (m.startsWith('3') || m === 'troisième') return 3;
  return 4;
}

function dateValide(annee: number, mois: number, jour?: number): boolean {
  return annee >= 1000 && mois >= 1 && mois <= 12 && (jour === undefined || (jour >= 1 && jour <= 31));
}

/** The date a match stands for, or null when the match is no date (« mars » alone, a 13th month). */
function dateDe(g: Record<string, string | undefined>): Pick<ChiffreDate, 'date' | 'precision'> | null {
  if (g.ia) {
    const [a, m, j] = [Number(g.ia), Number(g.im), Number(g.ij)];
    return dateValide(a, m, j) ? { date: `${g.ia}-${g.im}-${g.ij}`, precision: 'jour' } : null;
  }
  if (g.qa) return { date: `${g.qa}-T${g.qn}`, precision: 'trimestre' };
  if (g.ma) return dateValide(Number(g.ma), Number(g.mm)) ? { date: `${g.ma}-${g.mm}`, precision: 'mois' } : null;
  if (g.na) {
    const [a, m, j] = [Number(g.na), Number(g.nm), Number(g.nj)];
    return dateValide(a, m, j) ? { date: `${g.na}-${deux(m)}-${deux(j)}`, precision: 'jour' } : null;
  }
  if (g.sa) {
    const [a, m] = [Number(g.sa), Number(g.sm)];
    return dateValide(a, m) ? { date: `${g.sa}-${deux(m)}`, precision: 'mois' } : null;
  }
  if (g.fm) {
    const mois = cleMois(g.fm);
    if (mois === undefined || (!g.fj && !g.fa)) return null;
    // Abbreviations are months only with a year: « sept » is also seven.
    if (!g.fa && g.fm.endsWith('.')) return null;
    if (!g.fj) return { date: `${g.fa}-${deux(mois)}`, precision: 'mois' };
    const jour = /^\d+$/.test(g.fj) ? Number(g.fj) : 1;
    if (jour < 1 || jour > 31) return null;
    return { date: g.fa ? `${g.fa}-${deux(mois)}-${deux(jour)}` : `--${deux(mois)}-${deux(jour)}`, precision: 'jour' };
  }
  if (g.ta) return { date: `${g.ta}-T${g.tn ?? rangTrimestre(g.tr!)}`, precision: 'trimestre' };
  return null;
}

function chiffresDe(texte: string): string[] {
  return texte.match(/\d+/g) ?? [];
}

function brut(vue: string, debut: number, signe: string | undefined, ecrit: string): Brut {
  const pointsDeMilliers = /^\d{1,3}(?:\.\d{3}){2,}/.test(ecrit);
  const [entierEcrit, decimales = ''] = pointsDeMilliers ? ecrit.replace(/\./g, '').split(',') : ecrit.split(/[,.]/);
  return {
    debut,
    fin: debut + (signe?.length ?? 0) + ecrit.length,
    signe: signe === undefined ? 0 : signe === '+' ? 1 : -1,
    entier: entierEcrit.replace(/\D/g, ''),
    decimales,
    groupe: pointsDeMilliers || /\D/.test(entierEcrit),
    unite: null,
    multiplicateur: 1,
    environ: APPROXIMATION_AVANT.test(vue.slice(Math.max(0, debut - 24), debut)),
  };
}

/** Reads the unit after a number and extends it over the unit. */
function lireUnite(vue: string, nombre: Brut): void {
  UNITE.lastIndex = nombre.fin;
  const u = UNITE.exec(vue);
  if (!u?.groups) return;
  const g = u.groups;
  let fin = nombre.fin + u[0].length;
  if (g.p) nombre.unite = 'pct';
  else if (g.s) nombre.unite = 'm2';
  else {
    const mot = (g.mc ?? g.mm)?.toLowerCase();
    if (mot) nombre.multiplicateur = MULTIPLICATEURS[mot];
    if (g.mc || g.me || g.e) {
      nombre.unite = 'eur';
      PAR_M2.lastIndex = fin;
      const m2 = PAR_M2.exec(vue);
      if (m2) {
        nombre.unite = 'eur_m2';
        fin += m2[0].length;
      }
    }
  }
  nombre.fin = fin;
}

/** « 2019-2024 », « 12-15 % », « 3 000-3 500 € » are ranges; « 123-1 », « 2024-1234567 » are not. */
function estIntervalle(a: Brut, b: Brut): boolean {
  const zeroEnTete = (n: Brut) => n.entier.length > 1 && n.entier.startsWith('0');
  if (zeroEnTete(a) || zeroEnTete(b)) return false;
  const va = Number(`${a.entier}.${a.decimales || '0'}`);
  const vb = Number(`${b.entier}.${b.decimales || '0'}`);
  return va > 0 && va < vb && vb <= 10 * va;
}

const estAnnee = (n: Brut) =>
  n.unite === null &&
  n.multiplicateur === 1 &&
  n.signe === 0 &&
  n.decimales === '' &&
  !n.groupe &&
  n.entier.length === 4 &&
  Number(n.entier) >= 1900 &&
  Number(n.entier) <= 2100;

function finir(texte: string, n: Brut): Chiffre {
  const emplacement = { texte: texte.slice(n.debut, n.fin), debut: n.debut, fin: n.fin };
  if (estAnnee(n)) return { ...emplacement, type: 'date', date: n.entier, precision: 'annee' };
  const code =
    n.unite === null &&
    n.multiplicateur === 1 &&
    n.signe === 0 &&
    n.decimales === '' &&
    !n.groupe &&
    (n.entier.length >= 5 || (n.entier.length >= 2 && n.entier.startsWith('0')));
  let exposant = -n.decimales.length;
  if (n.decimales === '' && !code) {
    // The leading digit never counts as a trailing zero (« 0 », « 10 »).
    const zeros = n.entier.length - 1 - n.entier.slice(1).replace(/0+$/, '').length;
    exposant = n.environ ? zeros : Math.min(zeros, Math.max(0, n.entier.length - 2));
  }
  const chiffresSignificatifs = (n.entier + n.decimales).replace(/^0+(?=\d)/, '');
  const signe = n.signe < 0 ? '-' : '';
  const ecrit = Number(`${signe}${chiffresSignificatifs}e${-n.decimales.length}`);
  const echelle = Math.round(Math.log10(n.multiplicateur));
  return {
    ...emplacement,
    type: n.unite ?? 'nombre',
    // Through the decimal notation, so that « 3,4 k€ » is 3400 exactly.
    valeur: Number(`${signe}${chiffresSignificatifs}e${echelle - n.decimales.length}`),
    ecrit,
    multiplicateur: n.multiplicateur,
    decimales: n.decimales.length,
    pas: Number(`1e${exposant + echelle}`),
    signe: n.signe,
    code,
  };
}

/**
 * The figures of a text, and the digits of what was not read as a figure. Sources skip the masks: a URL or a list
 * number in a tool result only adds numbers that support nothing by mistake.
 */
function lire(texte: string, masques: boolean): Lecture {
  const identifiants: number[] = [];
  const chiffres: Chiffre[] = [];
  let vue = masques ? masquer(texte) : texte;

  DATE.lastIndex = 0;
  const datees: Array<[number, number]> = [];
  for (let m = INDICE_DATE.test(vue) ? DATE.exec(vue) : null; m; m = DATE.exec(vue)) {
    if (!debutDeDate(vue, m.index, m.groups!)) {
      DATE.lastIndex = m.index + 1;
      continue;
    }
    const date = dateDe(m.groups!);
    if (!date) continue;
    const fin = m.index + m[0].length;
    chiffres.push({ texte: texte.slice(m.index, fin), debut: m.index, fin, type: 'date', ...date });
    datees.push([m.index, fin]);
  }
  vue = blanchir(vue, datees);

  const bruts: Brut[] = [];
  NOMBRE.lastIndex = 0;
  for (let m = NOMBRE.exec(vue); m; m = NOMBRE.exec(vue)) {
    const [tout, signe, premier, chaine] = m;
    const avant = vue.slice(Math.max(0, m.index - 16), m.index);
    const apres = m.index + tout.length;
    UNITE_COLLEE.lastIndex = apres;
    if (
      REFERENCE_AVANT.test(avant) ||
      CODE_LEGAL_AVANT.test(avant) ||
      // A letter against the number: « 2e », « 14h30 », « 3D », but not a unit written against it (« 65m² »).
      (apres < vue.length && LETTRE.test(vue[apres]) && !UNITE_COLLEE.test(vue))
    ) {
      identifiants.push(...chiffresDe(tout).map(Number));
      continue;
    }
    const a = brut(vue, m.index, signe, premier);
    if (chaine) {
      const maillons = [...chaine.matchAll(MAILLON)];
      const debutB = a.fin + 1;
      const b = maillons.length === 1 ? brut(vue, debutB, undefined, maillons[0][2]) : null;
      if (!b || maillons[0][1] === '/' || !estIntervalle(a, b)) {
        identifiants.push(...chiffresDe(tout).map(Number));
        continue;
      }
      b.environ = a.environ;
      lireUnite(vue, b);
      bruts.push(a, b);
      continue;
    }
    lireUnite(vue, a);
    bruts.push(a);
  }

  // The first figure of a range takes the unit of the second: « 3 000 à 3 500 €/m² », « entre 12 et 15 % ».
  for (let i = bruts.length - 2; i >= 0; i--) {
    const [a, b] = [bruts[i], bruts[i + 1]];
    if (a.unite !== null || a.multiplicateur !== 1 || (b.unite === null && b.multiplicateur === 1)) continue;
    const entre = vue.slice(a.fin, b.debut);
    if (!LIAISON_INTERVALLE.test(entre)) continue;
    // « en 2023 et 3 500 € » keeps its year; « de 2000 à 2500 € » and « 2000-2500 € » are a range.
    if (estAnnee(a) && entre !== '-' && !DEBUT_INTERVALLE.test(vue.slice(Math.max(0, a.debut - 10), a.debut))) {
      continue;
    }
    a.unite = b.unite;
    a.multiplicateur = b.multiplicateur;
  }
  for (const n of bruts) chiffres.push(finir(texte, n));
  chiffres.sort((x, y) => x.debut - y.debut);
  return { chiffres, identifiants };
}

/** The figures of a text, in order of position: what the check looks at, exposed for its tests. */
export function extraireChiffres(texte: string): Chiffre[] {
  return lire(texte, true).chiffres;
}

function clesDate(date: string, cles: Set<string>): void {
  const jour = /^(\d{4})-(\d{2})-(\d{2})$/.exec(date);
  const mois = jour ?? /^(\d{4})-(\d{2})$/.exec(date);
  if (mois) {
    const [, a, m] = mois;
    cles
      .add(a)
      .add(`${a}-${m}`)
      .add(`${a}-T${Math.ceil(Number(m) / 3)}`);
    if (jour) cles.add(date).add(`--${m}-${jour[3]}`);
    return;
  }
  const trimestre = /^(\d{4})-T[1-4]$/.exec(date);
  if (trimestre) cles.add(trimestre[1]);
  cles.add(date);
}

/** The dates of the API's outputs: ISO day or timestamp, month, quarter (`2024-T1`). */
const DATE_ISO =
  /^(\d{4}-(?:\d{2}(?:-\d{2})?|T[1-4]))(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;
const NOMBRE_SEUL = /^[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?$/;
const CHIFFRE = /\d/;
/** A string without spaces, signs of French numbers or dates: an identifier or a code. */
const JETON = /^[\p{L}\p{N}_\-/.:#]+$/u;
/** Digits against a letter or an underscore: « UA10 », « 33063_0123 », « T3 ». */
const CHIFFRES_COLLES = /(?<=[\p{L}_])\d+|\d+(?=[\p{L}_])/gu;
/** JSON nesting beyond any operation's output: a guard, not a limit met in practice. */
const PROFONDEUR_MAX = 64;

/**
 * Collects every number and date of the sources once: JSON numbers, numbers and dates written in strings (ISO,
 * plain, or French prose through the same reading as the answer), digits of identifiers and field names
 * (`taux_vente_12m_pct` supports « 12 mois »), array lengths (a list of 12 sales supports « 12 ventes »).
 */
export function indexerSources(sources: SourcesChiffres): IndexSources {
  const nombres: number[] = [];
  const dates = new Set<string>();
  const lus = new Set<string>();
  // Field names repeat in every item of a list: each is read once.
  const cles = new Set<string>();

  const lireTexte = (s: string) => {
    if (lus.has(s) || !CHIFFRE.test(s)) return;
    lus.add(s);
    const iso = DATE_ISO.exec(s);
    if (iso) return clesDate(iso[1], dates);
    if (NOMBRE_SEUL.test(s)) {
      nombres.push(Number(s));
      return;
    }
    // An identifier (« 33063_0123_00012 », « 2024-1234567 », « AB0123 »): its digits, verbatim.
    if (JETON.test(s)) {
      for (const m of chiffresDe(s)) nombres.push(Number(m));
      return;
    }
    const { chiffres, identifiants } = lire(s, false);
    for (const c of chiffres) {
      if (c.type === 'date') {
        clesDate(c.date, dates);
        if (c.precision === 'annee') nombres.push(Number(c.date));
      } else {
        nombres.push(c.valeur);
      }
    }
    nombres.push(...identifiants);
    for (const m of s.matchAll(CHIFFRES_COLLES)) nombres.push(Number(m[0]));
  };
  const lireCle = (cle: string) => {
    if (cles.has(cle)) return;
    cles.add(cle);
    for (const m of chiffresDe(cle)) nombres.push(Number(m));
  };
  const parcourir = (valeur: unknown, profondeur: number): void => {
    if (typeof valeur === 'number') {
      if (Number.isFinite(valeur)) nombres.push(valeur);
    } else if (typeof valeur === 'string') {
      lireTexte(valeur);
    } else if (typeof valeur === 'bigint') {
      nombres.push(Number(valeur));
    } else if (valeur !== null && typeof valeur === 'object' && profondeur < PROFONDEUR_MAX) {
      if (Array.isArray(valeur)) {
        nombres.push(valeur.length);
        for (const element of valeur) parcourir(element, profondeur + 1);
      } else {
        const objet = valeur as Record<string, unknown>;
        for (const cle of Object.keys(objet)) {
          lireCle(cle);
          parcourir(objet[cle], profondeur + 1);
        }
      }
    }
  };

  lireTexte(sources.question);
  parcourir(sources.resultats, 0);
  return { nombres: new Float64Array(nombres).sort(), dates };
}

/** Whether some source number lies within `demi` of `centre` (both ends included). */
function couvert(nombres: Float64Array, centre: number, demi: number): boolean {
  // Float noise only: 0.1234 × 100 is not 12.34 in binary.
  const marge = demi * 1e-9 + Math.abs(centre) * 1e-12;
  const bas = centre - demi - marge;
  let lo = 0;
  let hi = nombres.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (nombres[mid] < bas) lo = mid + 1;
    else hi = mid;
  }
  return lo < nombres.length && nombres[lo] <= centre + demi + marge;
}

/** Whether a source supports a figure at the precision it is written with. */
export function estVerifie(chiffre: Chiffre, index: IndexSources): boolean {
  if (chiffre.type === 'date') {
    if (index.dates.has(chiffre.date)) return true;
    return chiffre.precision === 'annee' && couvert(index.nombres, Number(chiffre.date), 0);
  }
  const demi = chiffre.code ? 0 : chiffre.pas / 2;
  const cibles: Array<[number, number]> = [[chiffre.valeur, demi]];
  if (chiffre.type === 'pct') cibles.push([chiffre.valeur / 100, demi / 100]);
  return cibles.some(
    ([centre, d]) => couvert(index.nombres, centre, d) || (chiffre.signe === 0 && couvert(index.nombres, -centre, d)),
  );
}

const FERMETURE_EMPHASE = /^(?:\*{1,3}|_{1,3}|~~)(?![\p{L}\p{N}])/u;

/** Where the mark goes: right after the figure, after the emphasis that closes on it (« **3 500 €** »). */
function apresFigure(texte: string, fin: number): number {
  const fermeture = FERMETURE_EMPHASE.exec(texte.slice(fin, fin + 4));
  return fermeture ? fin + fermeture[0].length : fin;
}

/**
 * Checks every figure of an answer against the sources and marks those no source supports. The sources are indexed
 * once per call; to check several answers against the same sources, use indexerSources and verifierAvecIndex.
 */
export function verifierChiffres(reponse: string, sources: SourcesChiffres): VerificationChiffres {
  return verifierAvecIndex(reponse, indexerSources(sources));
}

export function verifierAvecIndex(reponse: string, index: IndexSources): VerificationChiffres {
  const chiffres = extraireChiffres(reponse);
  const nonVerifies = chiffres.filter((c) => !estVerifie(c, index));
  let texte = '';
  let curseur = 0;
  for (const c of nonVerifies) {
    const place = apresFigure(reponse, c.fin);
    if (place < curseur) continue;
    texte += reponse.slice(curseur, place);
    curseur = place;
    // Marked already (a checked answer checked again): once is enough.
    if (reponse.startsWith(MARQUE_NON_VERIFIE, place)) continue;
    texte += MARQUE_NON_VERIFIE;
    // « ] » right before « ( » or « [ » would make a link of the mark.
    if (reponse[place] === '(' || reponse[place] === '[') texte += ' ';
  }
  texte += reponse.slice(curseur);
  return {
    texte,
    chiffres: chiffres.length,
    non_verifies: nonVerifies.length,
    liste_non_verifies: nonVerifies.map((c) => c.texte),
  };
}
