/**
 * The fonts of the documents. The PDF embeds DejaVu Sans, so it looks the same everywhere. The Word file names Arial:
 * every Word has it, and LibreOffice shows Liberation Sans instead, which has the same widths. A Debian machine without
 * Liberation shows DejaVu Sans (fontconfig's default sans-serif), which is about 10 % wider. The Word file's table
 * columns are sized for the wider of the two fonts, so that a word fits its column whichever font the reader sees.
 */
import fontkit, { type Font } from '@pdf-lib/fontkit';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { StandardFontEmbedder } from 'pdf-lib';

/** DejaVu's font files, from npm: the same on every machine. */
export const DEJAVU_DIR = path.join(
  path.dirname(createRequire(import.meta.url).resolve('dejavu-fonts-ttf/package.json')),
  'ttf',
);
let fontFiles: { regular: Uint8Array; bold: Uint8Array } | undefined;
/** Read once per process: 1.4 MB that every PDF embeds a subset of. */
export function dejaVuFiles() {
  fontFiles ??= {
    regular: readFileSync(path.join(DEJAVU_DIR, 'DejaVuSans.ttf')),
    bold: readFileSync(path.join(DEJAVU_DIR, 'DejaVuSans-Bold.ttf')),
  };
  return fontFiles;
}

interface Metrics {
  /** Arial's widths: Helvetica's, which Arial was drawn to match. Only for the characters of WinAnsi. */
  arial: StandardFontEmbedder;
  dejaVu: Font;
  /** Width at size 1 of each character met so far. */
  widths: Map<string, number>;
}
let metrics: [Metrics, Metrics] | undefined;

function metricsOf(bold: boolean): Metrics {
  metrics ??= [false, true].map((b) => ({
    arial: StandardFontEmbedder.for(
      (b ? 'Helvetica-Bold' : 'Helvetica') as Parameters<typeof StandardFontEmbedder.for>[0],
    ),
    dejaVu: fontkit.create(b ? dejaVuFiles().bold : dejaVuFiles().regular),
    widths: new Map<string, number>(),
  })) as [Metrics, Metrics];
  return metrics[bold ? 1 : 0];
}

/**
 * Width of a text at size 1 in the wider of Arial and DejaVu Sans, character by character. Kerning is left out: its
 * pairs narrow far more than they widen, and the renderers apply it or not by their own settings.
 */
export function widestWidthAt1(text: string, bold: boolean): number {
  const m = metricsOf(bold);
  let total = 0;
  for (const char of text) {
    let w = m.widths.get(char);
    if (w === undefined) {
      const dejaVu = m.dejaVu.glyphForCodePoint(char.codePointAt(0)!).advanceWidth / m.dejaVu.unitsPerEm;
      let arial = 0;
      try {
        arial = m.arial.widthOfTextAtSize(char, 1);
      } catch {
        // Not in WinAnsi (☐, narrow no-break space…): Arial's width is not known, DejaVu's stands for both.
      }
      w = Math.max(dejaVu, arial);
      m.widths.set(char, w);
    }
    total += w;
  }
  return total;
}
