/**
 * Text of a PDF, page by page, with pdfjs-dist (legacy build: it runs in Node without a DOM).
 *
 * Lines are rebuilt from the positions of the text items rather than from the content stream order: Word puts the
 * running header and footer first in the stream, and a quotation that runs over a page break must read the end of one
 * page's body, then the start of the next one, in visual order.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { getDocument, VerbosityLevel } from 'pdfjs-dist/legacy/build/pdf.mjs';

export interface ExtractOptions {
  /** Read only the first pages (the page count is still the document's). */
  maxPages?: number;
  signal?: AbortSignal;
}

export interface ExtractedText {
  /** Text of each page read, in order (index 0 = page 1); '' for a page without text. */
  pages: string[];
  /** Pages in the document. */
  pageCount: number;
}

/**
 * Below these, a document counts as scanned: a title or a page number stamped over images yields a few characters
 * per page, a text PDF of rules yields thousands (the Latresne rules: about 2 700 per page on average).
 */
export const SCANNED_MAX_TOTAL_CHARS = 200;
export const SCANNED_MAX_CHARS_PER_PAGE = 20;

// Non-embedded standard fonts (Arial in Word PDFs) make pdfjs look for its own font data, and warn without it.
const STANDARD_FONTS = path.join(
  path.dirname(fileURLToPath(import.meta.resolve('pdfjs-dist/package.json'))),
  'standard_fonts',
  path.sep,
);

interface Item {
  str: string;
  x: number;
  y: number;
  width: number;
  size: number;
}

export async function extractPages(bytes: Uint8Array, options: ExtractOptions = {}): Promise<ExtractedText> {
  const { signal } = options;
  signal?.throwIfAborted();
  // pdfjs transfers (and so empties) the buffer it is given: the caller keeps its own.
  const task = getDocument({
    data: new Uint8Array(bytes),
    standardFontDataUrl: STANDARD_FONTS,
    verbosity: VerbosityLevel.ERRORS,
    useSystemFonts: false,
    disableFontFace: true,
    stopAtErrors: false,
  });
  try {
    const doc = await task.promise;
    const pageCount = doc.numPages;
    const last = Math.min(pageCount, options.maxPages ?? pageCount);
    const pages: string[] = [];
    for (let n = 1; n <= last; n++) {
      signal?.throwIfAborted();
      const page = await doc.getPage(n);
      const content = await page.getTextContent();
      pages.push(layoutLines(content.items));
      page.cleanup();
    }
    return { pages, pageCount };
  } finally {
    await task.destroy();
  }
}

/** True when the document has (almost) no extractable text: fewer than 200 characters in all, or 20 per page. */
export function isScanned(pages: string[]): boolean {
  let total = 0;
  for (const page of pages) total += page.replace(/\s+/g, '').length;
  return total < SCANNED_MAX_TOTAL_CHARS || total < SCANNED_MAX_CHARS_PER_PAGE * Math.max(1, pages.length);
}

function layoutLines(raw: readonly unknown[]): string {
  const items: Item[] = [];
  for (const entry of raw) {
    const it = entry as { str?: string; transform?: number[]; width?: number };
    if (typeof it.str !== 'string' || it.str === '' || !it.transform) continue;
    const [a, b, c, d, x, y] = it.transform;
    items.push({
      str: it.str,
      x,
      y,
      width: it.width ?? 0,
      size: Math.max(Math.hypot(c, d), Math.hypot(a, b), 1),
    });
  }
  if (items.length === 0) return '';
  // Top of the page first; the sort is stable, so items at the same height keep their stream order.
  items.sort((p, q) => q.y - p.y);
  const lines: Item[][] = [];
  let current: Item[] = [];
  let lineY = 0;
  let lineSize = 0;
  for (const item of items) {
    // Half a font size tolerates superscripts (footnote calls) and baseline jitter, yet separates lines.
    if (current.length > 0 && Math.abs(item.y - lineY) <= 0.5 * Math.max(item.size, lineSize)) {
      current.push(item);
      lineSize = Math.max(lineSize, item.size);
      continue;
    }
    if (current.length > 0) lines.push(current);
    current = [item];
    lineY = item.y;
    lineSize = item.size;
  }
  lines.push(current);

  let out = '';
  for (const line of lines) {
    line.sort((p, q) => p.x - q.x);
    const size = Math.max(...line.map((item) => item.size));
    const base = Math.min(...line.map((item) => item.y));
    let text = '';
    let end = -Infinity;
    for (const item of line) {
      // A raised small number is a footnote call ("R 111-2¹"): glued to the text it would corrupt the article number
      // a quotation repeats. Square and cubic metres keep their exponent.
      const raised = item.size < 0.8 * size && item.y - base > 0.2 * size;
      if (raised && /^\s*\d{1,3}\s*$/.test(item.str) && !(/[mM]$/.test(text) && /^\s*[23]\s*$/.test(item.str))) {
        continue;
      }
      const gap = item.x - end;
      if (text !== '' && gap > 0.15 * item.size && !/\s$/.test(text) && !/^\s/.test(item.str)) text += ' ';
      text += item.str;
      end = Math.max(end, item.x + item.width);
    }
    text = text.replace(/[ \t\u00a0]+/g, ' ').trim();
    if (text !== '') out += text + '\n';
  }
  return out;
}
