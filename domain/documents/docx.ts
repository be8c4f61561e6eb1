/**
 * The Word file of a document, with the `docx` package. Word does the flowing itself, so this file only states the
 * structure: heading styles (the navigation pane and a later table of contents use them), real bullets, tables of
 * fixed column widths whose first row repeats on each page, page numbers as fields, to-complete marks highlighted.
 */
import {
  AlignmentType,
  Bookmark,
  BorderStyle,
  Document,
  Footer,
  HeadingLevel,
  InternalHyperlink,
  Packer,
  PageNumber,
  PageOrientation,
  Paragraph,
  ShadingType,
  Tab,
  Table,
  TableCell,
  TableLayoutType,
  TableRow,
  TabStopType,
  TextRun,
  WidthType,
  type ParagraphChild,
} from 'docx';
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
  type Tableau,
} from './document.ts';
import { widestWidthAt1 } from './fonts.ts';

/** A4 in twentieths of a point. */
const A4 = { width: 11906, height: 16838 };
/** See fonts.ts for the fonts a reader sees instead, and how the tables allow for them. */
const FONT = 'Arial';
const ACCENT = '1C4578';
const GREY = '5F656F';
/** Twips between a table cell's edge and its text. */
const CELL_MARGIN = 70;

interface Layout {
  contentWidth: number;
  margin: number;
  body: number;
}

/** Half-points, as Word counts type sizes. */
const half = (points: number) => Math.round(points * 2);

function textRuns(runs: Run[], style: { size?: number; color?: string; bold?: boolean } = {}): TextRun[] {
  const out: TextRun[] = [];
  for (const run of runs) {
    // Word has no line break inside a text: each `\n` becomes a break before the next piece.
    run.text.split('\n').forEach((part, i) => {
      if (!part && i === 0) return;
      out.push(
        new TextRun({
          text: part,
          break: i > 0 ? 1 : undefined,
          bold: run.bold || style.bold || undefined,
          highlight: run.mark ? 'yellow' : undefined,
          size: style.size === undefined ? undefined : half(style.size),
          color: style.color,
        }),
      );
    });
  }
  return out;
}

const label = (text: string): TextRun => new TextRun({ text: `${text} : `, bold: true });

function titleBlock(doc: DocumentSource, options: RenderOptions, layout: Layout): Paragraph[] {
  const furniture = FURNITURE[doc.type];
  const out: Paragraph[] = [
    new Paragraph({
      children: [
        new TextRun({
          text: furniture.label.toUpperCase(),
          bold: true,
          color: ACCENT,
          size: half(doc.type === 'note' ? 15 : 9),
        }),
      ],
      spacing: { after: 60 },
    }),
  ];
  if (doc.type !== 'note') {
    out.push(
      new Paragraph({
        heading: HeadingLevel.TITLE,
        children: textRuns(runsOf(doc.titre, true), { size: furniture.compact ? 15 : 21, color: '1A1A1F' }),
        spacing: { after: 80 },
      }),
    );
    if (doc.sous_titre && doc.type !== 'compte_rendu') {
      out.push(new Paragraph({ children: textRuns(runsOf(doc.sous_titre), { size: layout.body + 2, color: GREY }) }));
    }
  }
  const fields: ParagraphChild[][] = headerFields(doc, options).map((f) => [
    label(f.label),
    ...textRuns(runsOf(f.value)),
  ]);
  if (doc.type === 'compte_rendu' && doc.sous_titre) fields.splice(1, 0, textRuns(runsOf(doc.sous_titre)));
  if (doc.type === 'note' && doc.sous_titre) fields.push(textRuns(runsOf(doc.sous_titre)));
  const boxed = doc.type === 'compte_rendu' || doc.type === 'note';
  fields.forEach((children, i) => {
    out.push(
      new Paragraph({
        children,
        shading: boxed ? { type: ShadingType.CLEAR, fill: 'F2F4F7', color: 'auto' } : undefined,
        border: i === 0 ? { top: { style: BorderStyle.SINGLE, size: 12, color: ACCENT, space: 8 } } : undefined,
        spacing: { before: i === 0 ? 160 : 0, after: i === fields.length - 1 ? 320 : 40 },
      }),
    );
  });
  return out;
}

/** The letter: no sender block, the addressee top right (an envelope window's place), place and date, object. */
function letterBlock(doc: DocumentSource, options: RenderOptions, layout: Layout): Paragraph[] {
  const indent = Math.round(layout.contentWidth * 0.52);
  const out: Paragraph[] = [new Paragraph({ children: [], spacing: { after: 800 } })];
  for (const line of addresseeLines(doc)) {
    out.push(new Paragraph({ children: textRuns(runsOf(line)), indent: { left: indent } }));
  }
  out.push(
    new Paragraph({
      children: textRuns(runsOf(letterDateLine(doc, options))),
      alignment: AlignmentType.RIGHT,
      spacing: { before: 600, after: 480 },
    }),
  );
  out.push(new Paragraph({ children: [label('Objet'), ...textRuns(runsOf(doc.titre))] }));
  if (doc.sous_titre) out.push(new Paragraph({ children: textRuns(runsOf(doc.sous_titre), { color: GREY }) }));
  out.push(new Paragraph({ children: [], spacing: { after: 240 } }));
  return out;
}

const anchorOf = (section: number) => `section_${section + 1}`;

/** The contents, linked to the sections (page numbers are Word's to compute: it shows them in its own table). */
function contentsBlock(doc: DocumentSource): Paragraph[] {
  const out: Paragraph[] = [
    new Paragraph({ heading: HeadingLevel.HEADING_2, children: [new TextRun({ text: 'Sommaire', color: ACCENT })] }),
  ];
  sectionHeadings(doc).forEach((heading, i) => {
    if (!heading) return;
    out.push(
      new Paragraph({
        children: [new InternalHyperlink({ anchor: anchorOf(i), children: textRuns(runsOf(heading)) })],
        spacing: { after: 60 },
      }),
    );
  });
  out.push(new Paragraph({ children: [], pageBreakBefore: true }));
  return out;
}

function table(tableau: Tableau, layout: Layout): Table {
  // Word and LibreOffice flow the text, but with a fixed layout they cut a word that is wider than its column less
  // the cell margins: the columns are sized for the widest font the reader may see (fonts.ts), in twips, with half a
  // point to spare for widths rounded to the twip.
  const measureAt1 = (text: string, bold: boolean) => widestWidthAt1(text, bold) * 20;
  const padding = CELL_MARGIN + 5;
  // Down to a half-point, Word's step: a size rounded up would set the words wider than they were measured.
  const size = Math.floor(tableSize(tableau, layout.body, layout.contentWidth, measureAt1, padding) * 2) / 2;
  const measure = (text: string, bold: boolean) => measureAt1(text, bold) * size;
  const widths = columnWidths(tableau, layout.contentWidth, measure, padding).map(Math.floor);
  const right = numericColumns(tableau);
  const border = { style: BorderStyle.SINGLE, size: 4, color: 'BFC7D1' };
  const borders = { top: border, bottom: border, left: border, right: border };
  const cell = (text: string, j: number, header: boolean, fill?: string) =>
    new TableCell({
      width: { size: widths[j], type: WidthType.DXA },
      borders,
      shading: fill ? { type: ShadingType.CLEAR, fill, color: 'auto' } : undefined,
      margins: { top: 50, bottom: 50, left: CELL_MARGIN, right: CELL_MARGIN },
      children: [
        new Paragraph({
          alignment: right[j] ? AlignmentType.RIGHT : AlignmentType.LEFT,
          children: textRuns(runsOf(text, header), { size, color: header ? ACCENT : undefined }),
        }),
      ],
    });
  return new Table({
    width: { size: widths.reduce((a, b) => a + b, 0), type: WidthType.DXA },
    columnWidths: widths,
    layout: TableLayoutType.FIXED,
    rows: [
      // tableHeader: Word and LibreOffice repeat this row at the top of every page the table runs onto.
      new TableRow({
        tableHeader: true,
        cantSplit: true,
        children: tableau.colonnes.map((c, j) => cell(c, j, true, 'DCE6F2')),
      }),
      ...paddedRows(tableau).map(
        (row, r) =>
          new TableRow({ children: row.map((c, j) => cell(c, j, false, r % 2 === 1 ? 'F6F7F8' : undefined)) }),
      ),
    ],
  });
}

function sectionBlocks(doc: DocumentSource, layout: Layout): Array<Paragraph | Table> {
  const furniture = FURNITURE[doc.type];
  const headings = sectionHeadings(doc);
  const out: Array<Paragraph | Table> = [];
  doc.sections.forEach((section, i) => {
    const heading = headings[i];
    if (heading) {
      out.push(
        new Paragraph({
          heading: HeadingLevel.HEADING_1,
          keepNext: true,
          children: [
            new Bookmark({
              id: anchorOf(i),
              children: textRuns(runsOf(heading, true), { color: ACCENT, size: furniture.compact ? 11 : 13 }),
            }),
          ],
          spacing: { before: furniture.compact ? 160 : 280, after: 120 },
        }),
      );
    }
    for (const part of sectionOrder(doc)) {
      if (part === 'paragraphes') {
        for (const p of section.paragraphes ?? []) {
          if (!cleanText(p).trim()) continue;
          out.push(new Paragraph({ children: textRuns(runsOf(p)), spacing: { after: furniture.compact ? 80 : 140 } }));
        }
      } else if (part === 'puces') {
        for (const item of section.puces ?? []) {
          out.push(
            furniture.boxes
              ? new Paragraph({
                  // The box is a character, so that it prints, copies and reads as a box everywhere.
                  children: [
                    new TextRun({ text: `${CHECKBOX}\u00a0`, font: 'Segoe UI Symbol', size: half(layout.body + 2) }),
                    new TextRun({ children: [new Tab()] }),
                    ...textRuns(runsOf(item)),
                  ],
                  indent: { left: 400, hanging: 400 },
                  tabStops: [{ type: TabStopType.LEFT, position: 400 }],
                  spacing: { after: 100 },
                })
              : new Paragraph({ bullet: { level: 0 }, children: textRuns(runsOf(item)), spacing: { after: 60 } }),
          );
        }
      } else if (section.tableau) {
        out.push(table(section.tableau, layout));
        out.push(new Paragraph({ children: [], spacing: { after: 120 } }));
      }
    }
  });
  if (doc.sources?.length) {
    out.push(
      new Paragraph({
        heading: HeadingLevel.HEADING_1,
        keepNext: true,
        children: textRuns([{ text: furniture.sourcesTitle, bold: true, mark: false }], { color: ACCENT, size: 13 }),
        spacing: { before: 280, after: 120 },
      }),
    );
    doc.sources.forEach((source, i) => {
      out.push(
        new Paragraph({
          children: [
            new TextRun({ text: `[${i + 1}]`, color: GREY, size: half(layout.body - 2) }),
            new TextRun({ children: [new Tab()] }),
            ...textRuns(runsOf(source), { color: GREY, size: layout.body - 2 }),
          ],
          indent: { left: 480, hanging: 480 },
          tabStops: [{ type: TabStopType.LEFT, position: 480 }],
          spacing: { after: 40 },
        }),
      );
    });
  }
  return out;
}

/** The Word file (.docx) of a document (A4; landscape for a comparatif). */
export async function renderDocx(doc: DocumentSource, options: RenderOptions = {}): Promise<Uint8Array> {
  const furniture = FURNITURE[doc.type];
  const margin = furniture.compact ? 880 : 1134;
  const pageWidth = furniture.landscape ? A4.height : A4.width;
  const layout: Layout = { contentWidth: pageWidth - 2 * margin, margin, body: furniture.compact ? 9.5 : 10.5 };
  const title = plainOf(doc.titre).replace(/\s+/g, ' ').trim();
  const children: Array<Paragraph | Table> = [
    ...(doc.type === 'lettre' ? letterBlock(doc, options, layout) : titleBlock(doc, options, layout)),
    ...(hasContents(doc) ? contentsBlock(doc) : []),
    ...sectionBlocks(doc, layout),
  ];
  const footer = new Footer({
    children: [
      new Paragraph({
        tabStops: [{ type: TabStopType.RIGHT, position: layout.contentWidth }],
        border: { top: { style: BorderStyle.SINGLE, size: 4, color: 'BFC7D1', space: 4 } },
        children: [
          new TextRun({
            // The PDF's share of the line, so that the page number stays beside it whichever font the reader sees.
            text: shortened(title, (text) => widestWidthAt1(text, false) * 8 * 20 <= layout.contentWidth * 0.6),
            color: GREY,
            size: half(8),
          }),
          new TextRun({
            children: [new Tab(), 'Page ', PageNumber.CURRENT, ' / ', PageNumber.TOTAL_PAGES],
            color: GREY,
            size: half(8),
          }),
        ],
      }),
    ],
  });
  const document = new Document({
    title: title.slice(0, 500),
    subject: furniture.label,
    creator: 'svc — generer_document',
    styles: {
      default: {
        document: { run: { font: FONT, size: half(layout.body), language: { value: 'fr-FR' } } },
      },
    },
    sections: [
      {
        properties: {
          page: {
            size: {
              width: A4.width,
              height: A4.height,
              orientation: furniture.landscape ? PageOrientation.LANDSCAPE : PageOrientation.PORTRAIT,
            },
            margin: { top: margin, bottom: margin, left: margin, right: margin, footer: Math.round(margin / 2) },
          },
        },
        footers: { default: footer },
        children,
      },
    ],
  });
  return new Uint8Array(await Packer.toBuffer(document));
}
