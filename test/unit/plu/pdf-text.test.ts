import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createQuotationIndex } from '../../../domain/plu/citations.ts';
import { extractPages, isScanned } from '../../../domain/plu/pdf-text.ts';
import { hasLatresne, IMAGE_ONLY_PDF, LATRESNE_PDF, LATRESNE_PDFTOTEXT, latresne, SKIP_REASON } from './latresne.ts';

const collapse = (line: string) => line.replace(/\s+/g, ' ').trim();

describe.skipIf(!hasLatresne)(`PDF text of the Latresne rules ${hasLatresne ? '' : SKIP_REASON}`, () => {
  it('reads the 83 pages, one newline-terminated line per visual line', async () => {
    const { pages, pageCount } = await latresne();
    expect(pageCount).toBe(83);
    expect(pages).toHaveLength(83);
    for (const page of pages) if (page !== '') expect(page.endsWith('\n')).toBe(true);
    // The cover is an image; the blank versos have no text.
    expect(pages[0]).toBe('');
    expect(pages[9]).toBe('');
    expect(isScanned(pages)).toBe(false);
  });

  it('puts the UA chapter heading on PDF page 11 (printed page 7)', async () => {
    const { pages } = await latresne();
    expect(pages[10].split('\n')).toContain('CHAPITRE 1 - ZONE UA');
    expect(pages[10].split('\n')).toContain('ARTICLE UA1 : OCCUPATIONS ET UTILISATIONS DU SOL INTERDITES');
    expect(pages[10]).toMatch(/-7-\n$/);
  });

  it('gives the same lines as pdftotext, whitespace aside', async () => {
    const { pages } = await latresne();
    const reference = readFileSync(LATRESNE_PDFTOTEXT, 'utf8').split('\f');
    for (const n of [15, 40, 70]) {
      const ours = new Set(pages[n - 1].split('\n').map(collapse));
      const theirs = reference[n - 1]
        .split('\n')
        .map(collapse)
        .filter((line) => line !== '');
      expect(theirs.length).toBeGreaterThan(10);
      expect(theirs.filter((line) => !ours.has(line))).toEqual([]);
    }
    // Whole pages: identical without whitespace, except where a footnote call is left out ("R 111-2¹ du code").
    const squeeze = (text: string) => text.normalize('NFKC').replace(/\s+/g, '');
    const differing = pages.flatMap((page, i) => (squeeze(page) === squeeze(reference[i]) ? [] : [i + 1]));
    expect(differing).toEqual([11, 21, 31, 41, 55, 65, 73]);
    expect(pages[10]).toContain("en application de l'article R 111-2 du code de l'urbanisme.");
  });

  it('locates the UA height rule on its real page', async () => {
    const { pages } = await latresne();
    const index = createQuotationIndex(pages);
    const match = index.locate('La hauteur maximale des constructions nouvelles est fixée à 12m au faîtage', null);
    expect(match).toMatchObject({ found: true, page: 15 });
    expect(pages[14]).toContain('ARTICLE UA10 : HAUTEUR MAXIMALE DES CONSTRUCTIONS');
  });

  it('reads only the first pages when asked, and leaves the caller its buffer', async () => {
    const bytes = new Uint8Array(readFileSync(LATRESNE_PDF));
    const length = bytes.length;
    const { pages, pageCount } = await extractPages(bytes, { maxPages: 3 });
    expect(pageCount).toBe(83);
    expect(pages).toHaveLength(3);
    expect(pages[2]).toContain('SOMMAIRE');
    expect(bytes.length).toBe(length);
  });

  it('stops when aborted', async () => {
    const controller = new AbortController();
    controller.abort(new Error('stop'));
    await expect(extractPages(readFileSync(LATRESNE_PDF), { signal: controller.signal })).rejects.toThrow('stop');
  });
});

describe.skipIf(!existsSync(IMAGE_ONLY_PDF))(`image-only PDF ${existsSync(IMAGE_ONLY_PDF) ? '' : SKIP_REASON}`, () => {
  it('has pages without text and counts as scanned', async () => {
    const { pages, pageCount } = await extractPages(readFileSync(IMAGE_ONLY_PDF));
    expect(pageCount).toBe(3);
    expect(pages).toEqual(['', '', '']);
    expect(isScanned(pages)).toBe(true);
  });
});

describe('isScanned', () => {
  it('needs 200 characters in all and 20 per page on average', () => {
    expect(isScanned([])).toBe(true);
    expect(isScanned(['PLU DE LATRESNE\n-3-\n', '', ''])).toBe(true);
    expect(isScanned(['x'.repeat(150)])).toBe(true);
    expect(isScanned(['x'.repeat(250)])).toBe(false);
    // A title over 40 rasterised pages: 300 characters, under 20 a page.
    expect(isScanned(Array.from({ length: 40 }, (_, i) => (i === 0 ? 'x'.repeat(300) : '')))).toBe(true);
  });

  it('refuses bytes that are not a PDF', async () => {
    await expect(extractPages(new TextEncoder().encode('not a pdf at all'))).rejects.toThrow();
  });
});
