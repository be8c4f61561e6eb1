/**
 * The real Latresne PLU rules (83 pages), read from the shared data folder: never copied into the project. Tests that
 * need it skip, saying why, when the folder is absent.
 *
 * Page numbers are the PDF's (1 = first page of the file), as the API gives them. The printed page numbers, those of
 * the document's table of contents, are 4 lower: "ZONE UA ... 7" is PDF page 11.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { extractPages, type ExtractedText } from '../../../domain/plu/pdf-text.ts';

const DIR = path.resolve('../shared/data/plu_pdf');
export const LATRESNE_PDF = path.join(DIR, 'latresne_33234_reglement_first.pdf');
export const LATRESNE_PDFTOTEXT = path.join(DIR, 'DERIVED_latresne_33234_reglement_first.pdftotext-layout.txt');
export const IMAGE_ONLY_PDF = path.join(DIR, 'DERIVED_latresne_33234_p14-16_image_only.pdf');

export const hasLatresne = existsSync(LATRESNE_PDF);
export const SKIP_REASON = '(skipped: ../shared/data/plu_pdf absent)';

let extracted: Promise<ExtractedText> | null = null;

/** Extracted once per test file. */
export function latresne(): Promise<ExtractedText> {
  extracted ??= extractPages(readFileSync(LATRESNE_PDF));
  return extracted;
}

/** The zones' chapters in PDF pages (printed pages 7-16 for UA, and so on). */
export const LATRESNE_CHAPTERS: Record<string, { first: number; last: number }> = {
  UA: { first: 11, last: 20 },
  UB: { first: 21, last: 30 },
  UC: { first: 31, last: 40 },
  UE: { first: 41, last: 46 },
  UX: { first: 47, last: 54 },
  '1AU': { first: 55, last: 64 },
  A: { first: 65, last: 72 },
  N: { first: 73, last: 80 },
};
