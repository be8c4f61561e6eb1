/**
 * A small pool of worker threads for rendering. Laying out a long report takes a few hundred milliseconds of pure
 * CPU; done on the api's event loop it would hold every other request for that long. The pool also makes the
 * operation's time-out real: a render still running when it fires is stopped by terminating its thread.
 */
import os from 'node:os';
import { Worker } from 'node:worker_threads';
import type { DocumentFormat, DocumentSource } from './document.ts';
import type { Generated, RenderJob, RenderReply } from './render-worker.ts';

export type { Generated };

interface Job {
  id: number;
  message: RenderJob;
  resolve: (generated: Generated) => void;
  reject: (error: Error) => void;
  signal?: AbortSignal;
  onAbort?: () => void;
}

interface Slot {
  worker: Worker;
  job: Job | null;
}

export class RenderAborted extends Error {
  constructor() {
    super('Rendu interrompu.');
    this.name = 'RenderAborted';
  }
}

export interface RenderPool {
  /** The file with its plain text and to-complete count (see render-worker.ts). */
  render(doc: DocumentSource, format: DocumentFormat, now: Date, signal?: AbortSignal): Promise<Generated>;
  close(): Promise<void>;
}

/** `size` threads at most, started on first use; jobs beyond them wait in order. */
export function createRenderPool(size = Math.max(1, Math.min(4, os.availableParallelism()))): RenderPool {
  const slots: Slot[] = [];
  const queue: Job[] = [];
  let nextId = 1;
  let closed = false;

  const finish = (slot: Slot) => {
    const job = slot.job;
    slot.job = null;
    if (job?.onAbort) job.signal?.removeEventListener('abort', job.onAbort);
    // An idle thread must not keep the process alive; a busy one must (a script awaiting its result).
    slot.worker.unref();
    return job;
  };

  const spawn = (): Slot => {
    const worker = new Worker(new URL('./render-worker.ts', import.meta.url));
    const slot: Slot = { worker, job: null };
    worker.on('message', (reply: RenderReply) => {
      const job = finish(slot);
      if (!job || job.id !== reply.id) return;
      if ('error' in reply) job.reject(new Error(reply.error));
      else job.resolve({ bytes: reply.bytes, texte: reply.texte, aCompleter: reply.aCompleter });
      dispatch();
    });
    const drop = (error: Error) => {
      const index = slots.indexOf(slot);
      if (index >= 0) slots.splice(index, 1);
      finish(slot)?.reject(error);
      dispatch();
    };
    worker.on('error', drop);
    worker.on('exit', (code) => drop(new Error(`Le fil de rendu s’est arrêté (code ${code}).`)));
    worker.unref();
    slots.push(slot);
    return slot;
  };

  const dispatch = () => {
    while (queue.length > 0 && !closed) {
      const slot = slots.find((s) => !s.job) ?? (slots.length < size ? spawn() : undefined);
      if (!slot) return;
      const job = queue.shift()!;
      slot.job = job;
      slot.worker.ref();
      if (job.signal) {
        job.onAbort = () => {
          // The thread is in the middle of a layout it cannot be asked to stop: it goes, a fresh one will come.
          finish(slot)?.reject(new RenderAborted());
          const index = slots.indexOf(slot);
          if (index >= 0) slots.splice(index, 1);
          void slot.worker.terminate();
          dispatch();
        };
        job.signal.addEventListener('abort', job.onAbort, { once: true });
      }
      slot.worker.postMessage(job.message);
    }
  };

  return {
    render(doc, format, now, signal) {
      if (closed) return Promise.reject(new Error('Pool de rendu fermé.'));
      if (signal?.aborted) return Promise.reject(new RenderAborted());
      return new Promise<Generated>((resolve, reject) => {
        const id = nextId++;
        const job: Job = { id, message: { id, doc, format, now: now.toISOString() }, resolve, reject, signal };
        queue.push(job);
        if (signal) {
          // Still waiting for a thread: leave the queue.
          const leave = () => {
            const index = queue.indexOf(job);
            if (index >= 0) {
              queue.splice(index, 1);
              reject(new RenderAborted());
            }
          };
          signal.addEventListener('abort', leave, { once: true });
        }
        dispatch();
      });
    },
    async close() {
      closed = true;
      for (const job of queue.splice(0)) job.reject(new Error('Pool de rendu fermé.'));
      await Promise.all(slots.splice(0).map((s) => s.worker.terminate()));
    },
  };
}

let shared: RenderPool | undefined;
/** The process's pool, shared by every call of the operation. */
export function sharedRenderPool(): RenderPool {
  shared ??= createRenderPool();
  return shared;
}
