/**
 * The document as the caller supplies it, and what both renderers (PDF and Word) share: the cleaning of the text, the
 * inline marks (bold between double asterisks, to-complete marks), the page furniture of each type, the plain text
 * with contact details masked, and the widths of table columns. Pure logic: no I/O, no clock (the date of the day is
 * passed in).
 */
import { MARQUES, reperesCoordonnees } from '../compte/masquage.ts';

export const DOCUMENT_TYPES = ['rapport', 'lettre', 'compte_rendu', 'checklist', 'note', 'comparatif'] as const;
export type DocumentType = (typeof DOCUMENT_TYPES)[number];
export const DOCUMENT_FORMATS = ['pdf', 'docx'] as const;
export type DocumentFormat = (typeof DOCUMENT_FORMATS)[number];

export const MIME_TYPES: Record<DocumentFormat, string> = {
  pdf: 'application/pdf',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
};

export interface Tableau {
  colonnes: string[];
  lignes: string[][];
}

export interface Section {
  titre?: string;
  paragraphes?: string[];
  puces?: string[];
  tableau?: Tableau;
}

export interface DocumentSource {
  type: DocumentType;
  titre: string;
  sous_titre?: string;
  destinataire?: string;
  date?: string;
  sections: Section[];
  sources?: string[];
}

export interface RenderOptions {
  /** The day a document without `date` is dated (letters, reports…); today when absent. */
  now?: Date;
}

// ---------------------------------------------------------------------------------------------------------------
// Text cleaning.

/**
 * What a file can carry: composed Unicode (NFC, so that "é" typed as e + accent shows as one letter in any font),
 * line breaks as `\n`, no control characters (invalid in Word's XML, invisible in a PDF), no lone surrogates.
 */
export function cleanText(text: string): string {
  return text
    .normalize('NFC')
    .replace(/\r\n?/g, '\n')
    .replace(/\t/g, ' ')
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\ufffe\uffff]/g, '')
    .replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '');
}

// ---------------------------------------------------------------------------------------------------------------
// Inline marks.

/** A piece of text with one style. */
export interface Run {
  text: string;
  bold: boolean;
  /** A to-complete mark: highlighted in the file so that it is seen before the document is sent. */
  mark: boolean;
}

/** Markdown's rule: `**` opens before a non-space and closes after one, so "5 ** 2" or a lone `**` stay as written. */
const BOLD = /\*\*(?=\S)([\s\S]*?\S)\*\*/g;

/**
 * To-complete marks. Each occurrence counts one in `a_completer` and is highlighted in the file:
 * - a bracket (`[…]`, `(…)`, `<…>`) holding "à compléter", "à préciser", "à renseigner", "à définir", "à confirmer" or
 *   "à remplir", in any case, with or without accents, with or without more words: `[à compléter]`, `[A COMPLETER]`,
 *   `(surface à préciser)`, `[À COMPLÉTER : prix net vendeur]`;
 * - the same words in capitals without brackets: `À COMPLÉTER`;
 * - a template field left in place: `{{nom_du_client}}`;
 * - a blank to fill in by hand: three underscores or more, `______`;
 * - a run of X standing for a value: `XXX`, `XX/XX/XXXX`, `xxx €`.
 * `[…]` alone is not one: in French it marks a cut in a quotation.
 */
const TO_COMPLETE_WORDS = String.raw`(?:compl[eé]ter|pr[eé]ciser|renseigner|d[eé]finir|confirmer|remplir)`;
const MARKS: RegExp[] = [
  new RegExp(
    String.raw`[\[(<][^\[\]()<>\n]{0,80}?(?<!\p{L})[aà]\s+${TO_COMPLETE_WORDS}(?!\p{L})[^\[\]()<>\n]{0,200}[\])>]`,
    'giu',
  ),
  /(?<!\p{L})[AÀ] (?:COMPL[EÉ]TER|PR[EÉ]CISER|RENSEIGNER|D[EÉ]FINIR|CONFIRMER|REMPLIR)(?!\p{L})/gu,
  /\{\{[^{}\n]{1,200}\}\}/g,
  /_{3,}/g,
  /(?<![\p{L}\p{N}])(?:[Xx]{2,}(?:[/.-][Xx]{2,})+|[Xx]{3,})(?![\p{L}\p{N}])/gu,
];

/** Non-overlapping to-complete marks of a text, in order (at one position the longest wins). */
export function findMarks(text: string): Array<{ start: number; end: number }> {
  const found: Array<{ start: number; end: number }> = [];
  for (const pattern of MARKS) {
    for (const m of text.matchAll(pattern)) found.push({ start: m.index, end: m.index + m[0].length });
  }
  found.sort((a, b) => a.start - b.start || b.end - a.end);
  const kept: typeof found = [];
  for (const mark of found) if (!kept.length || mark.start >= kept[kept.length - 1].end) kept.push(mark);
  return kept;
}

function withMarks(text: string, bold: boolean, out: Run[]) {
  let at = 0;
  for (const { start, end } of findMarks(text)) {
    if (start > at) out.push({ text: text.slice(at, start), bold, mark: false });
    out.push({ text: text.slice(start, end), bold, mark: true });
    at = end;
  }
  if (at < text.length) out.push({ text: text.slice(at), bold, mark: false });
}

/** The styled runs of a supplied text: bold between double asterisks (or all bold for titles), marks highlighted. */
export function runsOf(text: string, allBold = false): Run[] {
  const clean = cleanText(text);
  const runs: Run[] = [];
  let at = 0;
  for (const m of clean.matchAll(BOLD)) {
    if (m.index > at) withMarks(clean.slice(at, m.index), allBold, runs);
    withMarks(m[1], true, runs);
    at = m.index + m[0].length;
  }
  if (at < clean.length) withMarks(clean.slice(at), allBold, runs);
  return runs;
}

/** The text without the bold markers, as it reads. */
export function plainOf(text: string): string {
  return cleanText(text).replace(BOLD, '$1');
}

/** The text, or as much of it as fits followed by an ellipsis (the footer's title). */
export function shortened(text: string, fits: (text: string) => boolean): string {
  if (fits(text)) return text;
  const chars = [...text];
  while (chars.length > 1 && !fits(`${chars.join('')}…`)) chars.pop();
  return `${chars.join('').trimEnd()}…`;
}

// ---------------------------------------------------------------------------------------------------------------
// Dates and per-type furniture.

const MONTHS = [
  'janvier',
  'février',
  'mars',
  'avril',
  'mai',
  'juin',
  'juillet',
  'août',
  'septembre',
  'octobre',
  'novembre',
  'décembre',
];

/** "1er mars 2025", "14 juillet 2025": the French long date. */
export function frenchDate(year: number, month: number, day: number): string {
  return `${day === 1 ? '1er' : day} ${MONTHS[month - 1]} ${year}`;
}

/** The day in Paris, whatever the server's time zone. */
export function parisDay(now: Date): { year: number; month: number; day: number } {
  const parts = new Intl.DateTimeFormat('en-CA', {
    timeZone: 'Europe/Paris',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
  }).formatToParts(now);
  const get = (type: string) => Number(parts.find((p) => p.type === type)?.value);
  return { year: get('year'), month: get('month'), day: get('day') };
}

/**
 * The date as shown: an ISO day (`2025-03-14`, or the day of a timestamp) becomes "14 mars 2025"; any other text is
 * the caller's wording ("Bordeaux, le 14 mars 2025", "semaine 12") and is kept; none: the day of generation.
 */
export function displayDate(doc: DocumentSource, options: RenderOptions): { text: string; supplied: boolean } {
  const date = doc.date === undefined ? '' : cleanText(doc.date).trim();
  const iso = /^(\d{4})-(\d{2})-(\d{2})(?:[T ][\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)?$/.exec(date);
  if (iso) {
    const [year, month, day] = [Number(iso[1]), Number(iso[2]), Number(iso[3])];
    if (month >= 1 && month <= 12 && day >= 1 && day <= 31)
      return { text: frenchDate(year, month, day), supplied: true };
  }
  if (date) return { text: date, supplied: true };
  const today = parisDay(options.now ?? new Date());
  return { text: frenchDate(today.year, today.month, today.day), supplied: false };
}

/** How a letter's date line reads: "le 14 mars 2025", or the caller's own line when it already says more. */
export function letterDateLine(doc: DocumentSource, options: RenderOptions): string {
  const { text } = displayDate(doc, options);
  return /^\d/.test(text) ? `le ${text}` : text;
}

export interface Furniture {
  /** The type as a professional names it, shown above the title. */
  label: string;
  /** Sections numbered 1., 2., … */
  numbered: boolean;
  /** A contents list after the title block (reports of three sections or more). */
  contents: boolean;
  /** Landscape pages. */
  landscape: boolean;
  /** Each section's table before its paragraphs and bullets. */
  tableFirst: boolean;
  /** A box ☐ before each bullet. */
  boxes: boolean;
  /** Tighter type and spacing. */
  compact: boolean;
  /** Label of the addressee in the header block ("À", "Diffusion"…); the letter has its own block. */
  addresseeLabel: string;
  sourcesTitle: string;
}

export const FURNITURE: Record<DocumentType, Furniture> = {
  rapport: {
    label: 'Rapport',
    numbered: true,
    contents: true,
    landscape: false,
    tableFirst: false,
    boxes: false,
    compact: false,
    addresseeLabel: 'À l’attention de',
    sourcesTitle: 'Sources',
  },
  lettre: {
    label: 'Lettre',
    numbered: false,
    contents: false,
    landscape: false,
    tableFirst: false,
    boxes: false,
    compact: false,
    addresseeLabel: '',
    sourcesTitle: 'Références',
  },
  compte_rendu: {
    label: 'Compte rendu',
    numbered: true,
    contents: false,
    landscape: false,
    tableFirst: false,
    boxes: false,
    compact: false,
    addresseeLabel: 'Diffusion',
    sourcesTitle: 'Documents et sources',
  },
  checklist: {
    label: 'Check-list',
    numbered: false,
    contents: false,
    landscape: false,
    tableFirst: false,
    boxes: true,
    compact: false,
    addresseeLabel: 'Pour',
    sourcesTitle: 'Sources',
  },
  note: {
    label: 'Note',
    numbered: false,
    contents: false,
    landscape: false,
    tableFirst: false,
    boxes: false,
    compact: true,
    addresseeLabel: 'À',
    sourcesTitle: 'Sources',
  },
  comparatif: {
    label: 'Comparatif',
    numbered: false,
    contents: false,
    landscape: true,
    tableFirst: true,
    boxes: false,
    compact: false,
    addresseeLabel: 'À l’attention de',
    sourcesTitle: 'Sources',
  },
};

export const CHECKBOX = '☐';

/** Reports of fewer sections than this need no contents list. */
export const CONTENTS_MIN_SECTIONS = 3;

export function hasContents(doc: DocumentSource): boolean {
  return FURNITURE[doc.type].contents && doc.sections.filter((s) => s.titre?.trim()).length >= CONTENTS_MIN_SECTIONS;
}

/** "3. Titre" for numbered types; the number counts titled sections only. */
export function sectionHeadings(doc: DocumentSource): Array<string | null> {
  let n = 0;
  return doc.sections.map((s) => {
    const titre = s.titre === undefined ? '' : s.titre.trim();
    if (!titre) return null;
    n++;
    return FURNITURE[doc.type].numbered ? `${n}. ${titre}` : titre;
  });
}

/** Lines of the addressee block (the caller separates them with line breaks). */
export function addresseeLines(doc: DocumentSource): string[] {
  if (!doc.destinataire) return [];
  return cleanText(doc.destinataire)
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
}

/** The header fields under the title, per type (the letter lays out its own blocks). */
export function headerFields(doc: DocumentSource, options: RenderOptions): Array<{ label: string; value: string }> {
  const furniture = FURNITURE[doc.type];
  const fields: Array<{ label: string; value: string }> = [];
  const date = displayDate(doc, options).text;
  const addressee = addresseeLines(doc).join(', ');
  if (doc.type === 'note') {
    if (addressee) fields.push({ label: 'À', value: addressee });
    fields.push({ label: 'Date', value: date });
    fields.push({ label: 'Objet', value: doc.titre });
    return fields;
  }
  fields.push({ label: doc.type === 'compte_rendu' ? 'Réunion du' : 'Date', value: date });
  if (addressee) fields.push({ label: furniture.addresseeLabel, value: addressee });
  return fields;
}

/** A section's blocks in reading order: the comparatif shows its table before the commentary. */
export function sectionOrder(doc: DocumentSource): Array<'paragraphes' | 'puces' | 'tableau'> {
  return FURNITURE[doc.type].tableFirst ? ['tableau', 'paragraphes', 'puces'] : ['paragraphes', 'puces', 'tableau'];
}

// ---------------------------------------------------------------------------------------------------------------
// Tables.

/** Rows padded to the number of columns (a shorter row leaves its last cells empty). */
export function paddedRows(tableau: Tableau): string[][] {
  const n = tableau.colonnes.length;
  return tableau.lignes.map((row) => (row.length >= n ? row.slice(0, n) : [...row, ...Array(n - row.length).fill('')]));
}

/** Width of a text in the unit of the caller (points for the PDF, twentieths of a point for Word). */
export type Measure = (text: string, bold: boolean) => number;

/**
 * Widths of the columns from their content, filling `available`: each column wants room for its longest word (so
 * that "Rendement" is not cut) and for a typical cell on one line; when everything cannot fit, the longest words are
 * served first, then the rest is shared. Shared by both formats so that the PDF and the Word file look alike.
 */
export function columnWidths(tableau: Tableau, available: number, measure: Measure, padding: number): number[] {
  const rows = paddedRows(tableau);
  const n = tableau.colonnes.length;
  // Beyond these, a word is cut or a cell wraps rather than starving the other columns.
  const wordCap = available / Math.min(n, 4);
  const cellCap = (available / n) * 2.2;
  const longest = longestWords(tableau, measure);
  const minimum: number[] = [];
  const desired: number[] = [];
  for (let j = 0; j < n; j++) {
    const cellWidths = [tableau.colonnes[j], ...rows.map((r) => r[j])].map((text, i) => {
      const plain = plainOf(text).trim().replace(/\s+/g, ' ');
      return plain ? measure(plain, i === 0) : 0;
    });
    cellWidths.sort((a, b) => a - b);
    // The 90th percentile: one very long cell should not take the room of the others.
    const typical = cellWidths[Math.min(cellWidths.length - 1, Math.floor(cellWidths.length * 0.9))];
    minimum.push(Math.min(longest[j], wordCap) + 2 * padding);
    desired.push(Math.max(minimum[j], Math.min(typical, cellCap) + 2 * padding));
  }
  const sum = (list: number[]) => list.reduce((a, b) => a + b, 0);
  const [sumMin, sumDesired] = [sum(minimum), sum(desired)];
  if (sumDesired <= available) return desired.map((d) => (d * available) / sumDesired);
  if (sumMin <= available) {
    const share = (available - sumMin) / (sumDesired - sumMin);
    return minimum.map((m, j) => m + (desired[j] - m) * share);
  }
  return minimum.map((m) => (m * available) / sumMin);
}

/** Width of the longest word of each column, header (bold) included. */
export function longestWords(tableau: Tableau, measure: Measure): number[] {
  const rows = paddedRows(tableau);
  return tableau.colonnes.map((header, j) => {
    let longest = 0;
    [header, ...rows.map((r) => r[j])].forEach((text, i) => {
      for (const word of plainOf(text).split(/[\s]+/)) if (word) longest = Math.max(longest, measure(word, i === 0));
    });
    return longest;
  });
}

/**
 * Type size of a table: the body size less a step for wide tables, and smaller still (down to 6 pt) when the longest
 * words of all columns would not fit side by side.
 */
export function tableSize(tableau: Tableau, body: number, available: number, measureAt1: Measure, padding: number) {
  const n = tableau.colonnes.length;
  const size = n > 8 ? body - 3 : n > 5 ? body - 1.5 : body - 1;
  const words = longestWords(tableau, measureAt1).reduce(
    (a, b) => a + Math.min(b * size, available / Math.min(n, 4)),
    0,
  );
  const room = available - 2 * padding * n;
  return words <= room ? size : Math.max(6, (size * room) / words);
}

/** Columns whose filled cells are all figures are right-aligned, header included. */
export function numericColumns(tableau: Tableau): boolean[] {
  return tableau.colonnes.map((_, j) => {
    const cells = tableau.lignes.map((r) => r[j] ?? '').filter((c) => c.trim());
    return cells.length > 0 && cells.every(isNumeric);
  });
}

/** Figures read better right-aligned: amounts, surfaces, percentages, dates. */
const FIGURE =
  /^[-+−]?\d[\d\s\u00a0\u202f.,/:-]*(?:\s?(?:%|€|\$|£|m²|m³|m|km|ha|k€|M€|€\/m²|€\/an|€\/mois|€ HT|€ TTC|HT|TTC|ans?|mois|j|h|pts?))?$/;
export function isNumeric(text: string): boolean {
  const t = plainOf(text).trim();
  return t.length <= 30 && FIGURE.test(t);
}

// ---------------------------------------------------------------------------------------------------------------
// Plain text, contact details, counts.

/** Every supplied text of the document, in reading order (used for counts). */
function* allTexts(doc: DocumentSource): Generator<string> {
  yield doc.titre;
  if (doc.sous_titre) yield doc.sous_titre;
  if (doc.destinataire) yield doc.destinataire;
  if (doc.date) yield doc.date;
  for (const s of doc.sections) {
    if (s.titre) yield s.titre;
    yield* s.paragraphes ?? [];
    yield* s.puces ?? [];
    if (s.tableau) {
      yield* s.tableau.colonnes;
      for (const row of s.tableau.lignes) yield* row;
    }
  }
  yield* doc.sources ?? [];
}

/** Number of to-complete marks (see MARKS) over every supplied text. */
export function countToComplete(doc: DocumentSource): number {
  let count = 0;
  for (const text of allTexts(doc)) count += findMarks(plainOf(text)).length;
  return count;
}

/** The documents' own wording of the masks (the shared detection, domain/compte/masquage.ts, writes others). */
export const MASKS = { telephone: '[téléphone masqué]', courriel: '[e-mail masqué]' } as const;

/**
 * Telephones, e-mail addresses and messaging contacts replaced by a mention, as the one masking of contacts finds
 * them (domain/compte/masquage.ts): names are the client's own words in a document it writes, and are kept.
 */
export function maskContacts(text: string): string {
  let out = '';
  let at = 0;
  for (const c of reperesCoordonnees(text)) {
    if (c.sorte === 'nom') continue;
    out += text.slice(at, c.debut) + (c.sorte === 'contact_web' ? MARQUES.contact_web : MASKS[c.sorte]);
    at = c.fin;
  }
  return out + text.slice(at);
}

/**
 * The `texte` of the response: the document as plain text in reading order (bold markers removed, a table as rows
 * of cells separated by " | ", a checklist's boxes as ☐), telephones and e-mails masked. The file keeps them.
 */
export function plainText(doc: DocumentSource, options: RenderOptions = {}): string {
  const furniture = FURNITURE[doc.type];
  const blocks: string[] = [];
  // A note shows its title as the « Objet » of its header block.
  const head: string[] = [furniture.label.toUpperCase()];
  if (doc.type !== 'note') head.push(plainOf(doc.titre));
  if (doc.sous_titre) head.push(plainOf(doc.sous_titre));
  blocks.push(head.join('\n'));
  if (doc.type === 'lettre') {
    const addressee = addresseeLines(doc).map(plainOf);
    if (addressee.length) blocks.push(addressee.join('\n'));
    blocks.push(plainOf(letterDateLine(doc, options)));
  } else {
    blocks.push(
      headerFields(doc, options)
        .map((f) => `${f.label} : ${plainOf(f.value)}`)
        .join('\n'),
    );
  }
  const headings = sectionHeadings(doc);
  doc.sections.forEach((section, i) => {
    const lines: string[] = [];
    if (headings[i]) lines.push(plainOf(headings[i]!));
    for (const part of sectionOrder(doc)) {
      if (part === 'paragraphes') for (const p of section.paragraphes ?? []) if (p.trim()) lines.push(plainOf(p));
      if (part === 'puces') {
        for (const b of section.puces ?? []) lines.push(`${furniture.boxes ? CHECKBOX : '-'} ${plainOf(b)}`);
      }
      if (part === 'tableau' && section.tableau) {
        lines.push(section.tableau.colonnes.map(plainOf).join(' | '));
        for (const row of paddedRows(section.tableau)) lines.push(row.map(plainOf).join(' | '));
      }
    }
    if (lines.length) blocks.push(lines.join('\n'));
  });
  if (doc.sources?.length) {
    blocks.push([furniture.sourcesTitle, ...doc.sources.map((s, i) => `[${i + 1}] ${plainOf(s)}`)].join('\n'));
  }
  return blocks
    .map((block) =>
      block
        .split('\n')
        .map((line) => maskContacts(line))
        .join('\n'),
    )
    .join('\n\n');
}

/** The file name: the title as a slug (accents dropped, contacts masked first), or the type when nothing is left. */
export function fileName(doc: DocumentSource, format: DocumentFormat): string {
  const slug = maskContacts(plainOf(doc.titre))
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .replace(/œ/g, 'oe')
    .replace(/Œ/g, 'OE')
    .replace(/æ/gi, 'ae')
    .toLowerCase()
    .replace(/\[(?:telephone|e-mail) masque\]/g, '')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 60)
    .replace(/-+$/, '');
  return `${slug || doc.type.replace('_', '-')}.${format}`;
}
