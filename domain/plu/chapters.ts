/**
 * Where a zone's chapter lies in a PLU rules document, from its headings.
 *
 * Recognised: zone headings ("CHAPITRE 1 - ZONE UA", "DISPOSITIONS APPLICABLES A LA ZONE UA", "ZONE UA - Centre
 * bourg"), article headings of the old 1-14 layout ("ARTICLE UA10 :", "Article UA 1", "ARTICLES 1AU1 :") and of the
 * new layout ("UA1 - Destinations", "UA 2.3 : Hauteur"), and part headings ("TITRE III", "ANNEXES", "LEXIQUE") that
 * close a chapter. A zone code is a token of its own: "UA" is neither "UAa" nor "1AU", "A" is neither "AU" nor "1AU".
 * Pages that look like a table of contents (dot leaders) or a list of zones (three zones or more) are not headings.
 */
import type { PageRange } from './citations.ts';

type Heading =
  | { kind: 'zone'; code: string; line: number }
  | { kind: 'article'; code: string; line: number }
  | { kind: 'part'; line: number }
  /** `titled`: under a TITRE/CHAPITRE number, a part of its own (a bare "Dispositions générales" may be a section). */
  | { kind: 'general'; line: number; titled: boolean };

/** Case-insensitive keyword, for regexes that must stay case-sensitive on the zone code. */
const ci = (word: string) =>
  word
    .split('')
    .map((ch) => (/[a-z]/i.test(ch) ? `[${ch.toUpperCase()}${ch.toLowerCase()}]` : ch))
    .join('');

// A zone code: optional leading digit (1AU), 1-4 capitals, optional digits (UB1), optional small-letter sector
// suffix (UAa, 1AUh). Codes start with a capital or a digit: "zone de bruit" names no zone.
const CODE = String.raw`(\d?[A-Z]{1,4}\d{0,2}[a-z]{0,3})(?![A-Za-z0-9])`;
// In an article heading the digits after the code are the article number.
const ARTICLE_CODE = String.raw`(\d?[A-Z]{1,4}[a-z]{0,3})`;
const NUMBERING = String.raw`(?:[IVX]+|\d+|${ci('premier')}|${ci('unique')})`;

const ZONE_HEADING = new RegExp(
  String.raw`^(?:${ci('titre')}\s+${NUMBERING}\s*[-:.]?\s*)?(?:${ci('chapitre')}\s+${NUMBERING}\s*[-:.]?\s*)?` +
    String.raw`(?:(?:${ci('les')}\s+)?(?:${ci('dispositions')}|${ci('regle')}[sS]?|${ci('reglement')})\s+` +
    String.raw`(?:${ci('applicable')}[sS]?|${ci('propres')}|${ci('specifiques')}|${ci('particulieres')})\s+` +
    String.raw`(?:${ci('a')}|${ci('aux')})\s+(?:${ci('la')}\s+|${ci('les')}\s+)?)?` +
    String.raw`${ci('zone')}[sS]?\s+${CODE}\s*(?:$|[-:(,.;]|${ci('et')}\b)`,
);
// "CHAPITRE 2 - UB" without the word ZONE.
const CHAPTER_HEADING = new RegExp(String.raw`^${ci('chapitre')}\s+${NUMBERING}\s*[-:.]?\s*${CODE}\s*(?:$|[-:(,.;])`);
const ARTICLE_HEADING = new RegExp(String.raw`^${ci('article')}[sS]?\s+${ARTICLE_CODE}\s*[-.]?\s*(\d{1,2})(?!\d)`);
const NEW_LAYOUT_HEADING = new RegExp(String.raw`^${ARTICLE_CODE}\s*-?\s*(\d{1,2})(?:\.\d{1,2})*\s*[-:.]\s+\S`);
const PART_HEADING = /^(?:TITRE\s+(?:[IVX]+|\d+)\b|(?:ANNEXES?|LEXIQUE|GLOSSAIRE)\s*$)/;
const GENERAL_HEADING = /^(?:(?:TITRE|CHAPITRE)\s+(?:[IVX]+|\d+|PREMIER)\s*[-:.]?\s*)?DISPOSITIONS\s+GENERALES\s*$/;
const TOC_LINE = /(?:\.\s?){4,}\s*\d+\s*$|…{2,}/;

// Words that follow "zone" without being a code (or are the codes of legal articles: L, R, D).
const NOT_CODES = new Set(['DE', 'DU', 'DES', 'LA', 'LE', 'LES', 'ET', 'EN', 'UN', 'UNE', 'SUR', 'AUX', 'D', 'L', 'R']);

function cleanLine(line: string): string {
  return line
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .replace(/[\u2010-\u2015\u2212]/g, '-')
    .replace(/\s+/g, ' ')
    .trim();
}

function headingsOf(page: string): Heading[] {
  const lines = page
    .split('\n')
    .map(cleanLine)
    .filter((line) => line !== '');
  if (lines.filter((line) => TOC_LINE.test(line)).length >= 3) return [];
  const found: Heading[] = [];
  lines.forEach((line, index) => {
    if (TOC_LINE.test(line)) return;
    const zone = ZONE_HEADING.exec(line) ?? CHAPTER_HEADING.exec(line);
    if (zone && !NOT_CODES.has(zone[1].toUpperCase())) {
      found.push({ kind: 'zone', code: zone[1], line: index });
      return;
    }
    const article = ARTICLE_HEADING.exec(line) ?? NEW_LAYOUT_HEADING.exec(line);
    if (article && !NOT_CODES.has(article[1].toUpperCase())) {
      found.push({ kind: 'article', code: article[1], line: index });
      return;
    }
    const upper = line.toUpperCase();
    if (line.length <= 80 && GENERAL_HEADING.test(upper)) {
      found.push({ kind: 'general', line: index, titled: /^(?:TITRE|CHAPITRE)\b/.test(upper) });
    } else if (line.length <= 80 && PART_HEADING.test(line)) found.push({ kind: 'part', line: index });
  });
  // A page naming three zones or more is a list (table of contents, zoning overview), not a chapter start.
  const codes = new Set(found.flatMap((h) => ('code' in h ? [h.code.toUpperCase()] : [])));
  return codes.size >= 3 ? found.filter((h) => !('code' in h)) : found;
}

/** Headings of every page (index 0 = page 1). */
function allHeadings(pages: readonly string[]): Heading[][] {
  return pages.map(headingsOf);
}

const same = (a: string, b: string) => a.toUpperCase() === b.toUpperCase();

function chapterOf(headings: Heading[][], code: string): PageRange | null {
  const ofZone = (h: Heading) => 'code' in h && same(h.code, code);
  let start = headings.findIndex((page) => page.some((h) => h.kind === 'zone' && ofZone(h)));
  if (start < 0) start = headings.findIndex((page) => page.some((h) => h.kind === 'article' && ofZone(h)));
  if (start < 0) return null;
  const startLine = headings[start].find(ofZone)!.line;
  for (let p = start; p < headings.length; p++) {
    const list = headings[p].filter((h) => p > start || h.line > startLine);
    const closing = list.find(
      (h) => h.kind === 'part' || (h.kind === 'general' && h.titled) || ('code' in h && !same(h.code, code)),
    );
    if (!closing) continue;
    // The page stays in the chapter when the zone's own text comes before the next heading on it.
    const ownBefore = p === start || list.some((h) => ofZone(h) && h.line < closing.line);
    return { first: start + 1, last: ownBefore ? p + 1 : p };
  }
  return { first: start + 1, last: headings.length };
}

/**
 * The pages (1-based, inclusive) of a zone's chapter, or null. A sector without its own chapter ("UAa", "1AUh",
 * "UB1") gets its zone's chapter ("UA", "1AU", "UB").
 */
export function locateZoneChapter(pages: readonly string[], zoneCode: string): PageRange | null {
  const code = zoneCode.trim();
  if (code === '') return null;
  const headings = allHeadings(pages);
  const direct = chapterOf(headings, code);
  if (direct) return direct;
  const parent = code.replace(/[a-z]+$/, '').replace(/(?<=[A-Z])\d+$/, '');
  return parent !== code && parent !== '' ? chapterOf(headings, parent) : null;
}

/** The general provisions (pages 1-based, inclusive; ten at most), which apply to every zone, or null. */
export function locateGeneralProvisions(pages: readonly string[]): PageRange | null {
  const headings = allHeadings(pages);
  const start = headings.findIndex((page) => page.some((h) => h.kind === 'general'));
  if (start < 0) return null;
  const startLine = headings[start].find((h) => h.kind === 'general')!.line;
  let last = pages.length;
  for (let p = start; p < headings.length; p++) {
    const closing = headings[p].find((h) => (p > start || h.line > startLine) && h.kind !== 'general');
    if (closing) {
      last = p === start ? p + 1 : p;
      break;
    }
  }
  return { first: start + 1, last: Math.min(last, start + 10) };
}
