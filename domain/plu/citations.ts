/**
 * Checking that a quotation given by the model is really in the PDF text.
 *
 * Both sides go through the same normalisation, so a quotation counts whatever the typography the model or the PDF
 * used: compatibility forms (NFKC: ligatures ﬁ ﬂ, fullwidth forms), œ/æ spelt out, soft hyphens and zero-width
 * characters dropped, typographic quotes and apostrophes unified, dashes unified, case folded, and all whitespace
 * removed (line breaks, double spaces, "12 m" against "12m", spaces before French punctuation). A hyphen between two
 * letters is dropped too: a word split at a line end ("construc-\ntions") then reads as the whole word, and a compound
 * ("rez-de-chaussée") reads the same whether or not a line break fell on its hyphen. Accents are kept: "égout" and
 * "egout" differ.
 */

export interface PageRange {
  first: number;
  last: number;
}

export interface QuotationMatch {
  found: boolean;
  /** Page where the quotation starts (1-based), null when not found. */
  page: number | null;
  /**
   * Found, but to be confirmed: outside the given page ranges (the zone's chapter) when ranges are given; without
   * ranges, away from the stated page and its neighbours.
   */
  aConfirmer: boolean;
}

export interface QuotationIndex {
  readonly pageCount: number;
  /**
   * Looks for a quotation: on the stated page, then its neighbours (±1, and across the page breaks around it), then
   * within `scope` (the zone's chapter), then anywhere in the document.
   */
  locate(
    citation: string,
    statedPage: number | null | undefined,
    scope?: PageRange | readonly PageRange[],
  ): QuotationMatch;
}

/** Shorter quotations (normalised characters, whitespace removed) prove nothing: a few words occur anywhere. */
export const MIN_QUOTATION_CHARS = 20;
/** With an ellipsis, each kept part must be this long; shorter parts are ignored. */
const MIN_SEGMENT_CHARS = 10;
/** The parts of an elided quotation must lie within their own length plus this many characters. */
const MAX_ELISION_CHARS = 1500;

const DOUBLE_QUOTES = /[\u2033\u201c\u201d\u201e\u201f\u00ab\u00bb\u2039\u203a\u02ba\u3003]/g;
const APOSTROPHES = /[\u2018\u2019\u201a\u201b\u2032\u0060\u00b4\u02bc\u02b9\u02bb]/g;
const DASHES = /[\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63]/g;
// Soft hyphen, zero-width characters, bullets (private-use glyphs of Symbol/Wingdings fonts included).
const INVISIBLE =
  /[\u00ad\u200b-\u200d\u2060\ufeff\u2022\u2023\u2043\u2219\u25a0\u25a1\u25aa\u25ab\u25cf\u25e6\u27a2\u2794\u2713\u2714\p{Co}]/gu;
const WHITESPACE = /\s+/g;
const INNER_HYPHEN = /(?<=\p{L})-+(?=\p{L})/gu;
const ELLIPSIS = /\[\.{3}\]|\(\.{3}\)|\.{3,}/;
const EDGE_PUNCTUATION = /^[.,;:!?"'\-*]+|[.,;:!?"'\-*]+$/g;

/** The comparison form of a text. Applied to pages and quotations alike. */
export function normalizeForComparison(text: string): string {
  return text
    .replace(DOUBLE_QUOTES, '"')
    .replace(APOSTROPHES, "'")
    .normalize('NFKC')
    .toLowerCase()
    .replace(/œ/g, 'oe')
    .replace(/æ/g, 'ae')
    .replace(DASHES, '-')
    .replace(INVISIBLE, '')
    .replace(WHITESPACE, '')
    .replace(INNER_HYPHEN, '');
}

/** The comparison form of a quotation, without the punctuation or quotes around it: a key for de-duplication. */
export function quotationKey(citation: string): string {
  return normalizeForComparison(citation).replace(EDGE_PUNCTUATION, '');
}

interface Needle {
  whole: string;
  /** Parts of an elided quotation ("… […] …"), else null. */
  segments: string[] | null;
}

function prepare(citation: string): Needle | null {
  const whole = quotationKey(citation);
  if (whole.length < MIN_QUOTATION_CHARS) return null;
  if (!ELLIPSIS.test(whole)) return { whole, segments: null };
  const segments = whole
    .split(new RegExp(ELLIPSIS.source, 'g'))
    .map((part) => part.replace(EDGE_PUNCTUATION, ''))
    .filter((part) => part.length >= MIN_SEGMENT_CHARS);
  const length = segments.reduce((sum, part) => sum + part.length, 0);
  if (length < MIN_QUOTATION_CHARS) return { whole, segments: null };
  return { whole, segments };
}

/** Start offset of the needle in `hay` at or after `from`, or -1. */
function find(hay: string, needle: Needle, from = 0): number {
  const direct = hay.indexOf(needle.whole, from);
  if (direct >= 0 || !needle.segments) return direct;
  const [head, ...rest] = needle.segments;
  const budget = needle.segments.reduce((sum, part) => sum + part.length, 0) + MAX_ELISION_CHARS;
  for (let start = hay.indexOf(head, from); start >= 0; start = hay.indexOf(head, start + 1)) {
    let cursor = start + head.length;
    let ok = true;
    for (const part of rest) {
      const at = hay.indexOf(part, cursor);
      if (at < 0) return -1;
      cursor = at + part.length;
      if (cursor - start > budget) {
        ok = false;
        break;
      }
    }
    if (ok) return start;
  }
  return -1;
}

/** Edge lines looked at for running headers and footers. */
const EDGE_LINES = 4;

function lineKey(line: string): string {
  return normalizeForComparison(line).replace(/\d+/g, '#');
}

/**
 * Each page's text without its running header and footer: those lines sit between the two halves of a quotation
 * that runs over a page break. A header line is one the page shares, from its top, with a page two pages away or
 * less (a chapter's own header, "Zone UA", often alternating between odd and even pages), or one on the edge of 30 %
 * of the pages (the document's header, footer, page number). Counting repeats over the whole document would not do:
 * PLU chapters repeat each other, and a section title or a rule that opens a page in every chapter is text.
 */
function bodiesOf(pageLines: string[][]): string[] {
  const keys = pageLines.map((lines) => lines.map(lineKey));
  // Neighbours compare exact lines: with numbers masked, "15.1 - Non réglementé." would match "16.1 - …" below it.
  const exact = pageLines.map((lines) => lines.map(normalizeForComparison));
  const counts = new Map<string, number>();
  for (const list of keys) {
    for (const key of new Set([...list.slice(0, EDGE_LINES), ...list.slice(-EDGE_LINES)])) {
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
  }
  const withText = keys.filter((list) => list.length > 0).length;
  const everywhere = new Set<string>();
  for (const [key, count] of counts) if (key !== '' && count >= 3 && count >= 0.3 * withText) everywhere.add(key);

  return keys.map((list, i) => {
    const own = exact[i];
    let top = 0;
    let bottom = 0;
    for (const j of [i - 2, i - 1, i + 1, i + 2]) {
      const other = exact[j];
      if (!other || other.length === 0) continue;
      let k = 0;
      while (k < EDGE_LINES && k < own.length && k < other.length && own[k] === other[k]) k++;
      top = Math.max(top, k);
      k = 0;
      while (k < EDGE_LINES && k < own.length && k < other.length && own.at(-1 - k) === other.at(-1 - k)) k++;
      bottom = Math.max(bottom, k);
    }
    let first = 0;
    while (first < list.length && first < EDGE_LINES && (first < top || everywhere.has(list[first]))) first++;
    let last = list.length;
    while (
      last > first &&
      list.length - last < EDGE_LINES &&
      (list.length - last < bottom || everywhere.has(list[last - 1]))
    ) {
      last--;
    }
    return normalizeForComparison(pageLines[i].slice(first, last).join('\n'));
  });
}

export function createQuotationIndex(pages: readonly string[]): QuotationIndex {
  const pageCount = pages.length;
  const pageLines = pages.map((page) => page.split('\n').filter((line) => line.trim() !== ''));
  const bodies = bodiesOf(pageLines);
  // 1-based arrays; index 0 unused.
  const full: string[] = [''];
  const pairs: string[] = [''];
  const bodyLength: number[] = [0];
  const starts: number[] = [0];
  let all = '';
  for (let p = 1; p <= pageCount; p++) {
    full.push(normalizeForComparison(pages[p - 1]));
    // The document-wide text joins the bodies, so that a quotation over any page break is found.
    starts.push(all.length);
    all += bodies[p - 1];
    bodyLength.push(bodies[p - 1].length);
    pairs.push(p < pageCount ? bodies[p - 1] + bodies[p] : '');
  }
  starts.push(all.length);

  const pageAt = (offset: number): number => {
    let lo = 1;
    let hi = pageCount;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid] <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };
  const valid = (p: number) => Number.isInteger(p) && p >= 1 && p <= pageCount;

  function near(needle: Needle, stated: number): number | null {
    if (find(full[stated], needle) >= 0) return stated;
    for (const p of [stated - 1, stated + 1]) if (valid(p) && find(full[p], needle) >= 0) return p;
    for (const p of [stated - 1, stated]) {
      if (!valid(p) || !valid(p + 1)) continue;
      const at = find(pairs[p], needle);
      if (at >= 0) return at < bodyLength[p] ? p : p + 1;
    }
    return null;
  }

  function within(needle: Needle, ranges: readonly PageRange[]): number | null {
    for (const range of ranges) {
      const first = Math.max(1, range.first);
      const last = Math.min(pageCount, range.last);
      if (first > last) continue;
      const at = find(all, needle, starts[first]);
      if (at >= 0 && at < starts[last + 1]) return pageAt(at);
    }
    return null;
  }

  return {
    pageCount,
    locate(citation, statedPage, scope) {
      const notFound: QuotationMatch = { found: false, page: null, aConfirmer: false };
      const needle = prepare(citation);
      if (!needle || pageCount === 0) return notFound;
      const ranges: readonly PageRange[] = scope === undefined ? [] : 'first' in scope ? [scope] : scope;
      const inScope = (p: number) => ranges.some((range) => p >= range.first && p <= range.last);
      const verdict = (page: number, close: boolean): QuotationMatch => ({
        found: true,
        page,
        aConfirmer: ranges.length > 0 ? !inScope(page) : !close,
      });

      let close: number | null = null;
      if (statedPage != null && valid(statedPage)) {
        close = near(needle, statedPage);
        if (close !== null && (ranges.length === 0 || inScope(close))) return verdict(close, true);
      }
      // Text repeated from one zone's chapter to the next: the occurrence within scope wins over a wrong page.
      const scoped = within(needle, ranges);
      if (scoped !== null) return verdict(scoped, false);
      if (close !== null) return verdict(close, true);
      const at = find(all, needle);
      return at >= 0 ? verdict(pageAt(at), false) : notFound;
    },
  };
}
