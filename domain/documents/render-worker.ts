/**
 * A worker thread of the render pool (pool.ts): lays out documents and writes their plain text away from the event
 * loop of the api, which keeps answering other requests while a 200-row table is set.
 */
import { parentPort } from 'node:worker_threads';
import { countToComplete, plainText, type DocumentFormat, type DocumentSource } from './document.ts';
import { render } from './generer.ts';

export interface RenderJob {
  id: number;
  doc: DocumentSource;
  format: DocumentFormat;
  now: string;
}

/** The file, and what the response says of it: the plain text (contacts masked) and the to-complete count. */
export interface Generated {
  bytes: Uint8Array;
  texte: string;
  aCompleter: number;
}

export type RenderReply = ({ id: number } & Generated) | { id: number; error: string };

parentPort?.on('message', async (job: RenderJob) => {
  try {
    const now = new Date(job.now);
    const file = await render(job.doc, job.format, { now });
    // A copy of its own: Word's bytes may sit in Node's shared buffer pool, which must not be transferred.
    const bytes = file.bytes.slice();
    // Masking contacts in a long text is work too (up to seconds for a body full of figures): done here as well.
    const reply: RenderReply = {
      id: job.id,
      bytes,
      texte: plainText(job.doc, { now }),
      aCompleter: countToComplete(job.doc),
    };
    parentPort!.postMessage(reply, [bytes.buffer]);
  } catch (error) {
    parentPort!.postMessage({
      id: job.id,
      error: error instanceof Error ? error.message : String(error),
    } satisfies RenderReply);
  }
});
