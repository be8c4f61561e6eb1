/**
 * Document generation, run by `node bench/documents.ts`; figures go to bench/RESULTS.md (section "Documents",
 * replaced on each run, the rest of the file kept).
 *
 * The document is the acceptance one: a 20-section report (two paragraphs with bold words and two bullets each)
 * whose eighth section holds a 200-row, 5-column table. Measured: one render at a time on the calling thread (median
 * of the runs, after warm-up), then the worker pool the operation uses, kept busy with as many documents at once as
 * it has threads.
 */
import os from 'node:os';
import { renderDocx, renderPdf } from '../domain/documents/generer.ts';
import { createRenderPool } from '../domain/documents/pool.ts';
import { rapportAcceptation } from '../test/unit/documents/outils-generation.ts';
import { machine, writeSection } from './results.ts';

const WARMUP = 3;
const RUNS = Number(process.env.BENCH_RUNS ?? 15);
const POOL_DOCS = 40;

const doc = rapportAcceptation();
const now = new Date();
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function sequential(render: () => Promise<Uint8Array>) {
  let size = 0;
  for (let i = 0; i < WARMUP; i++) size = (await render()).byteLength;
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const start = performance.now();
    await render();
    times.push(performance.now() - start);
  }
  const ms = median(times);
  return { ms, perSecond: 1000 / ms, size, min: Math.min(...times), max: Math.max(...times) };
}

const pdf = await sequential(() => renderPdf(doc, { now }));
const docx = await sequential(() => renderDocx(doc, { now }));

const threads = Math.max(1, Math.min(4, os.availableParallelism()));
const pool = createRenderPool(threads);
async function pooled(formatName: 'pdf' | 'docx') {
  // Threads started and warm before the clock runs.
  await Promise.all(Array.from({ length: threads * 2 }, () => pool.render(doc, formatName, now)));
  const start = performance.now();
  await Promise.all(Array.from({ length: POOL_DOCS }, () => pool.render(doc, formatName, now)));
  return (POOL_DOCS / (performance.now() - start)) * 1000;
}
const pdfPool = await pooled('pdf');
const docxPool = await pooled('docx');
await pool.close();

const cpus = os.cpus();
// Other work on the machine during the run shows here: the figures are only comparable at a similar load.
const busy =
  os.loadavg()[0] > cpus.length
    ? `The machine was busy with other work during this run (load above its ${cpus.length} cores): these figures are low bounds.`
    : '';
const load = os
  .loadavg()
  .map((l) => l.toFixed(1))
  .join(' / ');
const kib = (n: number) => `${Math.round(n / 1024)} KiB`;
const section = `Machine: ${machine()}; load average at the end of the run (1 / 5 / 15 min): ${load}.
Document: 20-section \`rapport\` (contents list, 2 paragraphs with bold words and 2 bullets per section, sources), a
200-row × 5-column table in section 8; PDF ${kib(pdf.size)}, DOCX ${kib(docx.size)}.

| measure | PDF (pdf-lib, DejaVu Sans subset) | DOCX (docx) |
| --- | --- | --- |
| one at a time, calling thread: median of ${RUNS} runs | ${pdf.ms.toFixed(0)} ms, **${pdf.perSecond.toFixed(1)} documents/s** | ${docx.ms.toFixed(0)} ms, **${docx.perSecond.toFixed(1)} documents/s** |
| one at a time: fastest / slowest run | ${pdf.min.toFixed(0)} / ${pdf.max.toFixed(0)} ms | ${docx.min.toFixed(0)} / ${docx.max.toFixed(0)} ms |
| worker pool of ${threads} thread(s) (file, texte, count), ${POOL_DOCS} documents at once | **${pdfPool.toFixed(1)} documents/s** | **${docxPool.toFixed(1)} documents/s** |

The operation renders in the worker pool, so the api's event loop stays free while a document is laid out; the pool
also writes the plain text (contacts masked) and counts the to-complete marks.${busy ? `\n\n${busy}` : ''}
`;

await writeSection('Documents', section);
