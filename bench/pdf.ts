/**
 * PDF text and quotation checks on the real Latresne PLU rules (83 pages), run by `node bench/pdf.ts`; figures go to
 * bench/RESULTS.md (section "PDF text and quotations", replaced on each run, the rest of the file kept).
 *
 * Extraction: the whole document, 5 runs, median pages per second. Quotations: 2 000 passages cut from the page text
 * (stated page right, off by one, or unknown) and 2 000 invented ones (a real passage with a number or a word
 * changed: the worst case, as each one is searched on its page, the neighbours, the chapter and then everywhere).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { machine, writeSection } from './results.ts';
import { locateZoneChapter } from '../domain/plu/chapters.ts';
import { createQuotationIndex, MIN_QUOTATION_CHARS, normalizeForComparison } from '../domain/plu/citations.ts';
import { extractPages } from '../domain/plu/pdf-text.ts';
import { seededRandom } from '../lib/random.ts';

const PDF = path.resolve('../shared/data/plu_pdf/latresne_33234_reglement_first.pdf');
const RUNS = 5;
const QUOTATIONS = 2000;

if (!existsSync(PDF)) {
  console.error(`PDF benchmark skipped: ${PDF} absent (run from the project folder, next to ../shared/data).`);
  process.exit(0);
}
const bytes = readFileSync(PDF);

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const round = (n: number) => Math.round(n);

// Extraction.
const extractionMs: number[] = [];
let pages: string[] = [];
for (let run = 0; run < RUNS; run++) {
  const start = performance.now();
  pages = (await extractPages(bytes)).pages;
  extractionMs.push(performance.now() - start);
}
const extractionMedian = median(extractionMs);
const pagesPerSecond = (pages.length / extractionMedian) * 1000;

// Index and chapters.
let start = performance.now();
const index = createQuotationIndex(pages);
const indexMs = performance.now() - start;
start = performance.now();
const zones = ['UA', 'UB', 'UC', 'UE', 'UX', '1AU', 'A', 'N'];
const chapters = zones.map((zone) => locateZoneChapter(pages, zone));
const chaptersMs = performance.now() - start;

// Deterministic quotations.
const { next: random, pick } = seededRandom(20171);
const textPages = pages.flatMap((page, i) => (page.replace(/\s/g, '').length > 400 ? [i + 1] : []));
const chapterOf = (page: number) => chapters.find((c) => c && page >= c.first && page <= c.last) ?? undefined;

interface Case {
  citation: string;
  stated: number | null;
  page: number;
}
const real: Case[] = [];
while (real.length < QUOTATIONS) {
  const page = pick(textPages);
  // Body lines only: a model quotes rules, not the running header, the footer or the dot leaders of the contents.
  const lines = pages[page - 1]
    .split('\n')
    .slice(2, -3)
    .filter((line) => !/\.{4,}/.test(line));
  const first = Math.floor(random() * lines.length);
  const text = lines.slice(first, first + 4).join('\n');
  const length = 40 + Math.floor(random() * 200);
  const from = Math.floor(random() * Math.max(1, text.length - length));
  const citation = text.slice(from, from + length);
  if (normalizeForComparison(citation).length < MIN_QUOTATION_CHARS + 10) continue;
  const roll = random();
  const stated = roll < 0.7 ? page : roll < 0.9 ? page + (random() < 0.5 ? -1 : 1) : null;
  real.push({ citation, stated, page });
}
const invented: Case[] = real.map(({ citation, stated, page }) => {
  // A changed number, or a word swapped for one the document does not use there.
  const changed = /\d/.test(citation)
    ? citation.replace(/\d+/, (n) => String(Number(n) + 7))
    : citation.replace(/\p{L}{4,}/u, 'quarantaine');
  return { citation: changed === citation ? `${citation} zyxw` : changed, stated, page };
});

function check(cases: Case[]) {
  let found = 0;
  const begin = performance.now();
  for (const c of cases) if (index.locate(c.citation, c.stated, chapterOf(c.page)).found) found++;
  const ms = performance.now() - begin;
  return { found, ms, perSecond: (cases.length / ms) * 1000 };
}
// One warm-up pass, then the measured ones.
check(real);
check(invented);
const realRun = check(real);
const inventedRun = check(invented);
const total = realRun.ms + inventedRun.ms;
const mixedPerSecond = ((real.length + invented.length) / total) * 1000;

const section = `Machine: ${machine()}.
Document: Latresne PLU rules, ${pages.length} pages, ${round(bytes.length / 1024)} KiB, ${pages.join('').length} characters extracted.

| measure | value |
| --- | --- |
| text extraction, whole document (median of ${RUNS} runs) | ${round(extractionMedian)} ms, **${round(pagesPerSecond)} pages/s** |
| extraction runs | ${extractionMs.map((ms) => round(ms)).join(', ')} ms |
| quotation index (normalised pages, page bodies) | ${indexMs.toFixed(1)} ms |
| chapters of the ${zones.length} zones | ${chaptersMs.toFixed(1)} ms |
| quotations from the text: found | ${realRun.found} / ${real.length} |
| quotations from the text: checks/s | ${round(realRun.perSecond)} |
| invented quotations: found | ${inventedRun.found} / ${invented.length} |
| invented quotations: checks/s (searched down to the whole document) | ${round(inventedRun.perSecond)} |
| both together: checks/s | **${round(mixedPerSecond)}** |

Quotations from the text: random passages of 40-240 characters from the body lines (line breaks included), stated
page right (70 %), off by one (20 %) or unknown (10 %), checked against the zone's chapter. Invented: the same passages with a number
or a word changed.
`;

await writeSection('PDF text and quotations', section);
