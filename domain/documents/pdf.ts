/**
 * The PDF of a document, laid out by hand on pdf-lib: pdf-lib draws, it does not flow text, so this file wraps lines,
 * breaks pages, repeats table headers and numbers the pages. DejaVu Sans is embedded (subset) because the standard
 * PDF fonts only know WinAnsi: œ, €, « », narrow no-break spaces and ☐ must come out as typed.
 */
import fontkit from '@pdf-lib/fontkit';
import { PageSizes, PDFDocument, rgb, type PDFFont, type PDFPage, type RGB } from 'pdf-lib';
import {
  addresseeLines,
  CHECKBOX,
  cleanText,
  columnWidths,
  FURNITURE,
  hasContents,
  headerFields,
  letterDateLine,
  numericColumns,
  paddedRows,
  plainOf,
  runsOf,
  sectionHeadings,
  sectionOrder,
  shortened,
  tableSize,
  type DocumentSource,
  type RenderOptions,
  type Run,
  type Section,
  type Tableau,
} from './document.ts';
import { dejaVuFiles } from './fonts.ts';

const INK = rgb(0.1, 0.1, 0.12);
const GREY = rgb(0.38, 0.4, 0.44);
const ACCENT = rgb(0.11, 0.27, 0.47);
const RULE = rgb(0.75, 0.78, 0.82);
const HEADER_FILL = rgb(0.86, 0.9, 0.95);
const ZEBRA = rgb(0.965, 0.97, 0.975);
const BOX_FILL = rgb(0.95, 0.96, 0.97);
const SHAPING_FEATURES = [
  'liga',
  'dlig',
  'clig',
  'rlig',
  'calt',
  'rclt',
  'ccmp',
  'locl',
  'kern',
  'mark',
  'mkmk',
  'curs',
];
/** Highlighter yellow behind to-complete marks. */
const MARK_FILL = rgb(1, 0.92, 0.45);

interface Piece {
  text: string;
  bold: boolean;
  mark: boolean;
  width: number;
}
interface Line {
  pieces: Piece[];
  width: number;
}
type Token =
  | { kind: 'word'; pieces: Omit<Piece, 'width'>[] }
  | { kind: 'space'; bold: boolean; mark: boolean }
  | { kind: 'break' };

interface TextStyle {
  size: number;
  color?: RGB;
  /** Line height as a multiple of the size. */
  leading?: number;
  align?: 'left' | 'right' | 'center';
}

/** Splits runs into words and spaces; only ASCII spaces and line breaks break a line (no-break spaces hold). */
function tokenize(runs: Run[]): Token[] {
  const tokens: Token[] = [];
  let word: Omit<Piece, 'width'>[] = [];
  const flush = () => {
    if (word.length) tokens.push({ kind: 'word', pieces: word });
    word = [];
  };
  for (const run of runs) {
    for (const part of run.text.split(/(\n| +)/)) {
      if (!part) continue;
      if (part === '\n') {
        flush();
        tokens.push({ kind: 'break' });
      } else if (part[0] === ' ') {
        flush();
        tokens.push({ kind: 'space', bold: run.bold, mark: run.mark });
      } else {
        word.push({ text: part, bold: run.bold, mark: run.mark });
      }
    }
  }
  flush();
  return glue(tokens);
}

/**
 * French typography holds some spaces even when the caller typed ordinary ones: none after « or before », :, ;, !, ?,
 * %, €, and none inside a number written in groups ("250 000", "06 12 34 56 78", "+33 5 56…"). Those spaces join
 * their words.
 */
function glue(tokens: Token[]): Token[] {
  const out: Token[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i];
    const previous = out[out.length - 1];
    const next = tokens[i + 1];
    if (token.kind === 'space' && previous?.kind === 'word' && next?.kind === 'word') {
      const before = previous.pieces.map((p) => p.text).join('');
      const after = next.pieces.map((p) => p.text).join('');
      const holds =
        /[«“‹]$/.test(before) ||
        /^(?:[»”›:;!?%€]|[-–—]$)/.test(after) ||
        (/(?:^|\D)\d{1,3}$/.test(before) && /^\d{2,3}(?!\d)/.test(after)) ||
        (/^\+\d{1,3}$/.test(before) && /^\d/.test(after));
      if (holds) {
        previous.pieces.push({ text: ' ', bold: token.bold, mark: token.mark }, ...next.pieces);
        i++;
        continue;
      }
    }
    out.push(token.kind === 'word' ? { kind: 'word', pieces: [...token.pieces] } : token);
  }
  return out;
}

class Writer {
  readonly pdf: PDFDocument;
  readonly pages: PDFPage[] = [];
  page!: PDFPage;
  y = 0;
  readonly pageWidth: number;
  readonly pageHeight: number;
  readonly left: number;
  readonly right: number;
  readonly top: number;
  readonly bottom: number;
  private readonly regular: PDFFont;
  private readonly bold: PDFFont;
  // Widths at size 1, per font: the same words come back again and again (table cells, headers).
  private readonly widths = [new Map<string, number>(), new Map<string, number>()];

  constructor(pdf: PDFDocument, regular: PDFFont, bold: PDFFont, landscape: boolean, margin: number) {
    this.pdf = pdf;
    this.regular = regular;
    this.bold = bold;
    const [w, h] = PageSizes.A4;
    [this.pageWidth, this.pageHeight] = landscape ? [h, w] : [w, h];
    this.left = margin;
    this.right = this.pageWidth - margin;
    this.top = this.pageHeight - margin;
    this.bottom = margin + 14;
  }

  get contentWidth() {
    return this.right - this.left;
  }

  font(bold: boolean) {
    return bold ? this.bold : this.regular;
  }

  width(text: string, bold: boolean, size: number): number {
    const cache = this.widths[bold ? 1 : 0];
    let w = cache.get(text);
    if (w === undefined) {
      w = this.font(bold).widthOfTextAtSize(text, 100) / 100;
      cache.set(text, w);
    }
    return w * size;
  }

  newPage() {
    this.page = this.pdf.addPage([this.pageWidth, this.pageHeight]);
    this.pages.push(this.page);
    this.y = this.top;
  }

  /** Starts a new page unless `height` still fits on this one. */
  ensure(height: number) {
    if (this.y - height < this.bottom) this.newPage();
  }

  /** Lines of at most `maxWidth`; a word longer than a line is cut where it must. */
  wrap(runs: Run[], maxWidth: number, size: number): Line[] {
    const lines: Line[] = [];
    let line: Line = { pieces: [], width: 0 };
    let space: { bold: boolean; mark: boolean } | null = null;
    const push = () => {
      lines.push(line);
      line = { pieces: [], width: 0 };
      space = null;
    };
    const add = (piece: Omit<Piece, 'width'>, width: number) => {
      line.pieces.push({ ...piece, width });
      line.width += width;
    };
    for (const token of tokenize(runs)) {
      if (token.kind === 'break') push();
      else if (token.kind === 'space') {
        if (line.pieces.length) space = { bold: token.bold, mark: token.mark };
      } else {
        const widths = token.pieces.map((p) => this.width(p.text, p.bold, size));
        const wordWidth = widths.reduce((a, b) => a + b, 0);
        const spaceWidth = space ? this.width(' ', space.bold, size) : 0;
        if (line.pieces.length && line.width + spaceWidth + wordWidth > maxWidth) push();
        else if (space) add({ text: ' ', ...space }, spaceWidth);
        space = null;
        if (wordWidth <= maxWidth - line.width) token.pieces.forEach((p, i) => add(p, widths[i]));
        else this.cutWord(token.pieces, maxWidth, size, add, push);
      }
    }
    lines.push(line);
    return lines;
  }

  private cutWord(
    pieces: Omit<Piece, 'width'>[],
    maxWidth: number,
    size: number,
    add: (p: Omit<Piece, 'width'>, w: number) => void,
    push: () => void,
  ) {
    for (const piece of pieces) {
      let chunk = '';
      let lineWidth = 0;
      for (const char of piece.text) {
        const w = this.width(chunk + char, piece.bold, size);
        if (lineWidth + w > maxWidth && (chunk || lineWidth > 0)) {
          if (chunk) add({ ...piece, text: chunk }, this.width(chunk, piece.bold, size));
          push();
          lineWidth = 0;
          chunk = char;
        } else chunk += char;
      }
      if (chunk) {
        const w = this.width(chunk, piece.bold, size);
        add({ ...piece, text: chunk }, w);
        lineWidth += w;
      }
    }
  }

  /** Draws one line with its baseline at `baseline`; neighbouring pieces of one style go out as one text. */
  drawLine(line: Line, x: number, baseline: number, style: TextStyle, boxWidth: number) {
    const align = style.align ?? 'left';
    let cursor =
      align === 'right' ? x + boxWidth - line.width : align === 'center' ? x + (boxWidth - line.width) / 2 : x;
    const segments: Piece[] = [];
    for (const piece of line.pieces) {
      const last = segments[segments.length - 1];
      if (last && last.bold === piece.bold && last.mark === piece.mark) {
        last.text += piece.text;
        last.width += piece.width;
      } else segments.push({ ...piece });
    }
    for (const segment of segments) {
      if (segment.mark) {
        this.page.drawRectangle({
          x: cursor - 0.5,
          y: baseline - style.size * 0.28,
          width: segment.width + 1,
          height: style.size * 1.2,
          color: MARK_FILL,
        });
      }
      this.page.drawText(segment.text, {
        x: cursor,
        y: baseline,
        size: style.size,
        font: this.font(segment.bold),
        color: style.color ?? INK,
      });
      cursor += segment.width;
    }
  }

  /** A block of text from the cursor down, breaking pages between lines. Returns the page of its first line. */
  text(runs: Run[], style: TextStyle, x = this.left, width = this.right - x): number {
    const leading = style.size * (style.leading ?? 1.4);
    const lines = this.wrap(runs, width, style.size);
    let firstPage = -1;
    for (const line of lines) {
      this.ensure(leading);
      if (firstPage < 0) firstPage = this.pages.length - 1;
      this.y -= leading;
      this.drawLine(line, x, this.y + leading * 0.28, style, width);
    }
    return firstPage;
  }

  rule(color = RULE, thickness = 0.8) {
    this.page.drawLine({
      start: { x: this.left, y: this.y },
      end: { x: this.right, y: this.y },
      thickness,
      color,
    });
  }
}

// ---------------------------------------------------------------------------------------------------------------

interface Sizes {
  body: number;
  small: number;
  heading: number;
  title: number;
  gap: number;
}

function sizesOf(doc: DocumentSource): Sizes {
  return FURNITURE[doc.type].compact
    ? { body: 9.5, small: 8, heading: 11, title: 15, gap: 5 }
    : { body: 10.5, small: 8.5, heading: 13, title: 21, gap: 8 };
}

const labelRuns = (label: string, value: string): Run[] => [
  { text: `${label} : `, bold: true, mark: false },
  ...runsOf(value),
];

/** Title, subtitle and the header fields; compte rendu and note show their fields in a shaded box. */
function titleBlock(w: Writer, doc: DocumentSource, options: RenderOptions, s: Sizes) {
  const furniture = FURNITURE[doc.type];
  // A note is headed by the word itself, as a memo is; other types by a small label above their title.
  const labelSize = doc.type === 'note' ? s.title : s.small + 0.5;
  w.text([{ text: furniture.label.toUpperCase(), bold: true, mark: false }], { size: labelSize, color: ACCENT });
  w.y -= 4;
  if (doc.type !== 'note') {
    w.text(runsOf(doc.titre, true), { size: s.title, leading: 1.25 });
    if (doc.sous_titre && doc.type !== 'compte_rendu') {
      w.y -= 3;
      w.text(runsOf(doc.sous_titre), { size: s.body + 2, color: GREY });
    }
  }
  w.y -= s.gap;
  w.rule(ACCENT, 1.2);
  w.y -= s.gap;

  const fields: Run[][] = headerFields(doc, options).map((f) => labelRuns(f.label, f.value));
  if (doc.type === 'compte_rendu' && doc.sous_titre) fields.splice(1, 0, runsOf(doc.sous_titre));
  if (doc.type === 'note' && doc.sous_titre) fields.push(runsOf(doc.sous_titre));
  const boxed = doc.type === 'compte_rendu' || doc.type === 'note';
  const pad = boxed ? 8 : 0;
  const style: TextStyle = { size: s.body, color: boxed ? INK : GREY };
  const leading = style.size * 1.4;
  const lines = fields.flatMap((f) => w.wrap(f, w.contentWidth - 2 * pad, style.size));
  const height = lines.length * leading + 2 * pad;
  w.ensure(Math.min(height, w.top - w.bottom));
  // A header block longer than the page (a destinataire of thousands of characters) runs on without its shading.
  if (boxed && height <= w.y - w.bottom) {
    w.page.drawRectangle({ x: w.left, y: w.y - height, width: w.contentWidth, height, color: BOX_FILL });
    w.y -= pad;
  }
  for (const line of lines) {
    w.ensure(leading);
    w.y -= leading;
    w.drawLine(line, w.left + pad, w.y + leading * 0.28, style, w.contentWidth - 2 * pad);
  }
  w.y -= pad + s.gap * 2;
}

/** The letter: no sender block (the caller supplies none), addressee top right, place and date, object. */
function letterBlock(w: Writer, doc: DocumentSource, options: RenderOptions, s: Sizes) {
  const x = w.left + w.contentWidth * 0.52;
  w.y -= 50;
  for (const line of addresseeLines(doc)) w.text(runsOf(line), { size: s.body }, x);
  w.y -= 30;
  w.text(runsOf(letterDateLine(doc, options)), { size: s.body, align: 'right' });
  w.y -= 26;
  w.text(labelRuns('Objet', doc.titre), { size: s.body });
  if (doc.sous_titre) w.text(runsOf(doc.sous_titre), { size: s.body, color: GREY });
  w.y -= 20;
}

interface ContentsEntry {
  page: number;
  baseline: number;
  section: number;
}

/** The contents list; page numbers are written once the sections are laid out. */
function contentsBlock(w: Writer, doc: DocumentSource, s: Sizes): ContentsEntry[] {
  w.y -= s.gap;
  w.text([{ text: 'Sommaire', bold: true, mark: false }], { size: s.heading, color: ACCENT });
  w.y -= s.gap / 2;
  const entries: ContentsEntry[] = [];
  const headings = sectionHeadings(doc);
  const leading = s.body * 1.55;
  headings.forEach((heading, section) => {
    if (!heading) return;
    const lines = w.wrap(runsOf(heading), w.contentWidth - 40, s.body);
    lines.forEach((line, i) => {
      w.ensure(leading);
      w.y -= leading;
      const baseline = w.y + leading * 0.28;
      w.drawLine(line, w.left, baseline, { size: s.body }, w.contentWidth - 40);
      if (i === lines.length - 1) entries.push({ page: w.pages.length - 1, baseline, section });
    });
  });
  return entries;
}

function heading(w: Writer, text: string, s: Sizes): number {
  const leading = s.heading * 1.3;
  // Keep the heading with the first lines that follow it.
  w.ensure(leading * 2 + s.body * 1.4 * 3);
  w.y -= s.gap * 1.5;
  return w.text(runsOf(text, true), { size: s.heading, leading: 1.3, color: ACCENT });
}

function bullets(w: Writer, items: string[], boxes: boolean, s: Sizes) {
  const indent = boxes ? 18 : 16;
  for (const item of items) {
    const leading = s.body * 1.4;
    const lines = w.wrap(runsOf(item), w.contentWidth - indent, s.body);
    lines.forEach((line, i) => {
      w.ensure(leading);
      w.y -= leading;
      const baseline = w.y + leading * 0.28;
      if (i === 0) {
        const mark = boxes ? CHECKBOX : '•';
        w.page.drawText(mark, {
          x: w.left + (boxes ? 0 : 5),
          y: baseline,
          size: boxes ? s.body + 2 : s.body,
          font: w.font(false),
          color: boxes ? INK : ACCENT,
        });
      }
      w.drawLine(line, w.left + indent, baseline, { size: s.body }, w.contentWidth - indent);
    });
    w.y -= boxes ? s.gap * 0.6 : s.gap * 0.3;
  }
  w.y -= s.gap * 0.7;
}

/**
 * A table across as many pages as it needs: the header row is repeated at the top of each page, a row moves whole to
 * the next page when it fits there, and only a row taller than a page is split between pages.
 */
function table(w: Writer, tableau: Tableau, s: Sizes) {
  const columns = tableau.colonnes.length;
  const pad = 3.5;
  const size = tableSize(tableau, s.body, w.contentWidth, (text, bold) => w.width(text, bold, 1), pad);
  const leading = size * 1.3;
  const widths = columnWidths(tableau, w.contentWidth, (text, bold) => w.width(text, bold, size), pad);
  const xs = widths.map((_, j) => w.left + widths.slice(0, j).reduce((a, b) => a + b, 0));
  const cellLines = (row: string[], bold: boolean) =>
    row.map((cell, j) => w.wrap(runsOf(cell, bold), widths[j] - 2 * pad, size));
  const header = cellLines(tableau.colonnes, true);
  const headerHeight = Math.max(...header.map((l) => l.length)) * leading + 2 * pad;
  const numeric = numericColumns(tableau);

  const drawRow = (lines: Line[][], from: number, count: number, fill: RGB | undefined, bold: boolean) => {
    const height = count * leading + 2 * pad;
    for (let j = 0; j < columns; j++) {
      w.page.drawRectangle({
        x: xs[j],
        y: w.y - height,
        width: widths[j],
        height,
        color: fill,
        borderColor: RULE,
        borderWidth: 0.5,
      });
      lines[j].slice(from, from + count).forEach((line, i) => {
        const baseline = w.y - pad - (i + 1) * leading + leading * 0.28;
        const align = numeric[j] ? 'right' : 'left';
        w.drawLine(line, xs[j] + pad, baseline, { size, color: bold ? ACCENT : INK, align }, widths[j] - 2 * pad);
      });
    }
    w.y -= height;
  };
  const drawHeader = () => drawRow(header, 0, Math.max(...header.map((l) => l.length)), HEADER_FILL, true);

  w.y -= s.gap * 0.5;
  w.ensure(headerHeight + leading + 2 * pad);
  drawHeader();
  const fullPage = w.top - w.bottom - headerHeight;
  paddedRows(tableau).forEach((row, r) => {
    const lines = cellLines(row, false);
    const rowLines = Math.max(1, ...lines.map((l) => l.length));
    const fill = r % 2 === 1 ? ZEBRA : undefined;
    let from = 0;
    let freshPage = false;
    while (from < rowLines) {
      const room = Math.floor((w.y - w.bottom - 2 * pad) / leading);
      const left = rowLines - from;
      const fitsOnFreshPage = left * leading + 2 * pad <= fullPage;
      if (room >= left || (room >= 2 && !fitsOnFreshPage) || freshPage) {
        // On a fresh page at least one line goes out, whatever the header took: the loop always moves on.
        const count = Math.max(1, Math.min(room, left));
        drawRow(lines, from, count, fill, false);
        from += count;
      }
      if (from < rowLines) {
        w.newPage();
        drawHeader();
        freshPage = true;
      }
    }
  });
  w.y -= s.gap * 1.5;
}

function section(w: Writer, doc: DocumentSource, sec: Section, title: string | null, s: Sizes): number {
  const page = title ? heading(w, title, s) : w.pages.length - 1;
  for (const part of sectionOrder(doc)) {
    if (part === 'paragraphes') {
      for (const p of sec.paragraphes ?? []) {
        if (!cleanText(p).trim()) continue;
        w.text(runsOf(p), { size: s.body });
        w.y -= s.gap;
      }
    } else if (part === 'puces' && sec.puces?.length) {
      bullets(w, sec.puces, FURNITURE[doc.type].boxes, s);
    } else if (part === 'tableau' && sec.tableau) {
      table(w, sec.tableau, s);
    }
  }
  return page;
}

function sources(w: Writer, doc: DocumentSource, s: Sizes) {
  if (!doc.sources?.length) return;
  heading(w, FURNITURE[doc.type].sourcesTitle, s);
  doc.sources.forEach((source, i) => {
    const label = `[${i + 1}]`;
    const leading = s.small * 1.45;
    w.wrap(runsOf(source), w.contentWidth - 24, s.small).forEach((line, j) => {
      w.ensure(leading);
      w.y -= leading;
      const baseline = w.y + leading * 0.28;
      if (j === 0) w.page.drawText(label, { x: w.left, y: baseline, size: s.small, font: w.font(false), color: GREY });
      w.drawLine(line, w.left + 24, baseline, { size: s.small, color: GREY }, w.contentWidth - 24);
    });
    w.y -= 2;
  });
}

function footers(w: Writer, doc: DocumentSource, s: Sizes) {
  const total = w.pages.length;
  const title = plainOf(doc.titre).replace(/\s+/g, ' ').trim();
  const size = s.small - 0.5;
  const maxTitle = w.contentWidth * 0.6;
  const shown = shortened(title, (text) => w.width(text, false, size) <= maxTitle);
  const baseline = w.bottom - 26;
  w.pages.forEach((page, i) => {
    page.drawLine({
      start: { x: w.left, y: baseline + size + 4 },
      end: { x: w.right, y: baseline + size + 4 },
      thickness: 0.5,
      color: RULE,
    });
    page.drawText(shown, { x: w.left, y: baseline, size, font: w.font(false), color: GREY });
    const number = `Page ${i + 1} / ${total}`;
    page.drawText(number, {
      x: w.right - w.width(number, false, size),
      y: baseline,
      size,
      font: w.font(false),
      color: GREY,
    });
  });
}

/** The PDF of a document (A4; landscape for a comparatif). */
export async function renderPdf(doc: DocumentSource, options: RenderOptions = {}): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  pdf.registerFontkit(fontkit);
  const files = dejaVuFiles();
  // No OpenType shaping. Ligatures would turn "fi" into one glyph that copies and searches badly; the positioning
  // features (kern, mark) are lost anyway since pdf-lib writes glyphs without positions; and the text is NFC, so
  // nothing needs composing. Shaping off makes the layout about 40 % faster.
  const features = Object.fromEntries(SHAPING_FEATURES.map((f) => [f, false]));
  const regular = await pdf.embedFont(files.regular, { subset: true, features });
  const bold = await pdf.embedFont(files.bold, { subset: true, features });
  const furniture = FURNITURE[doc.type];
  const s = sizesOf(doc);
  const w = new Writer(pdf, regular, bold, furniture.landscape, furniture.compact ? 44 : 56);
  w.newPage();

  const now = options.now ?? new Date();
  pdf.setTitle(plainOf(doc.titre).slice(0, 500));
  pdf.setSubject(furniture.label);
  pdf.setLanguage('fr-FR');
  pdf.setCreator('svc — generer_document');
  pdf.setCreationDate(now);
  pdf.setModificationDate(now);

  let contents: ContentsEntry[] = [];
  if (doc.type === 'lettre') letterBlock(w, doc, options, s);
  else titleBlock(w, doc, options, s);
  if (hasContents(doc)) {
    contents = contentsBlock(w, doc, s);
    w.newPage();
  }
  const headings = sectionHeadings(doc);
  const pageOfSection = doc.sections.map((sec, i) => section(w, doc, sec, headings[i], s));
  sources(w, doc, s);

  for (const entry of contents) {
    const number = String(pageOfSection[entry.section] + 1);
    w.pages[entry.page].drawText(number, {
      x: w.right - w.width(number, false, s.body),
      y: entry.baseline,
      size: s.body,
      font: regular,
      color: INK,
    });
  }
  footers(w, doc, s);
  return pdf.save();
}
