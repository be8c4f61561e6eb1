import path from 'node:path';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { ImportError, MAX_REJETS_LISTES, type Dataset } from '../import/source.ts';
import { foldMutation, idOf } from './fold.ts';
import type { Format, Ligne } from './formats.ts';
import { groups, type Part } from './lines.ts';
import { createBatch, type Transfert } from './rows.ts';

/**
 * The reading runs in worker threads: parsing and folding never delay the database's next statement, so both work at
 * once, and the readers split the file's mutations between them (Part). The workers are this same module, started
 * with WORKER in their workerData.
 */

const MUTATIONS_PAR_LOT = 10_000;
// Mutations whose lines are split in the file, regrouped by a second reading; beyond this, the file is not grouped.
const MAX_SCINDEES = 200_000;

/** Split mutations: a Bloom filter of the ids already written (16 MiB, whatever the file's size). */
function createBloom(bits = 1 << 27) {
  const words = new Uint32Array(bits >>> 5);
  const mask = bits - 1;
  const hashes = (text: string): [number, number] => {
    let h1 = 0x811c9dc5;
    let h2 = 0x01000193 ^ text.length;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      h1 = Math.imul(h1 ^ c, 0x01000193);
      h2 = Math.imul(h2 ^ c, 0x5bd1e995);
      h2 ^= h2 >>> 15;
    }
    return [h1 >>> 0, (h2 | 1) >>> 0];
  };
  return {
    /** Adds `text`; true when it was (probably) there already. */
    testAndAdd(text: string): boolean {
      const [a, b] = hashes(text);
      let present = true;
      for (let k = 0; k < 4; k++) {
        const bit = (a + Math.imul(k, b)) & mask;
        const word = bit >>> 5;
        const flag = 1 << (bit & 31);
        if ((words[word] & flag) === 0) {
          present = false;
          words[word] |= flag;
        }
      }
      return present;
    },
  };
}

/** What the reading of a file gives, besides its batches. */
interface Lecture {
  format: 'etalab' | 'dgfip';
  formatLibelle: string;
  lus: number;
  gardes: number;
  rejetes: Array<{ ligne: number; motif: string }>;
  mutations: number;
  scindees: number;
  sansCoordonnees: number;
  insees: string[];
  /** What the file has of each vintage, in order. */
  millesimes: Millesime[];
}

/** A vintage's mutations in a file: how many, the first and last dates (as dvf_millesimes has them). */
interface Millesime {
  millesime: number;
  mutations: number;
  premiere: string;
  derniere: string;
}

/**
 * Reads the files one after the other, groups their lines, folds the mutations and hands them out in batches (`emit`
 * resolves when the batch is written: the reader never runs more than that batch ahead). A mutation whose lines are
 * in two files is regrouped like one whose lines are apart in one file.
 */
async function readMutations(
  sources: string[],
  part: Part,
  batch: ReturnType<typeof createBatch>,
  emit: (transfert: Transfert) => Promise<void>,
): Promise<Lecture> {
  const lecture: Lecture = {
    format: 'etalab',
    formatLibelle: '',
    lus: 0,
    gardes: 0,
    rejetes: [],
    mutations: 0,
    scindees: 0,
    sansCoordonnees: 0,
    insees: [],
    millesimes: [],
  };
  let format: Format | null = null;
  const libelles: string[] = [];
  const onFormat = (f: Format) => {
    format = f;
    if (libelles.length === 0) lecture.format = f.nom;
    if (!libelles.includes(f.libelle)) libelles.push(f.libelle);
    lecture.formatLibelle = libelles.join(' + ');
  };
  // Several files: a rejected line says which file it is in.
  let fichier = '';
  const insees = new Set<string>();
  const millesimes = new Map<number, Millesime>();
  const bloom = createBloom();
  const scindees = new Set<string>();
  let pending: Promise<void> = Promise.resolve();
  let failure: unknown = null;
  // The next batch is folded while this one is written; an error is kept and raised at the next batch.
  const flush = async (oublier?: string[]) => {
    await pending;
    if (failure) throw failure;
    if (batch.size === 0 && !oublier) return;
    pending = emit(batch.take(oublier, lecture.lus, lecture.gardes)).catch((error: unknown) => {
      failure = error;
    });
  };
  const stage = (lines: Ligne[]) => {
    const mutation = foldMutation(lines, format!.nom);
    lecture.mutations++;
    if (mutation.lat === null) lecture.sansCoordonnees++;
    insees.add(mutation.insee);
    const v = millesimes.get(mutation.millesime);
    const date = mutation.date_mutation;
    if (!v)
      millesimes.set(mutation.millesime, {
        millesime: mutation.millesime,
        mutations: 1,
        premiere: date,
        derniere: date,
      });
    else {
      v.mutations++;
      if (date < v.premiere) v.premiere = date;
      if (date > v.derniere) v.derniere = date;
    }
    batch.add(mutation);
  };
  const onLine = (line: Ligne | { ligne: number; motif: string }) => {
    lecture.lus++;
    if ('motif' in line) {
      if (lecture.rejetes.length < MAX_REJETS_LISTES) lecture.rejetes.push({ ...line, motif: fichier + line.motif });
    } else lecture.gardes++;
  };
  // Lines of one file, then of the next: `format` is each file's own.
  const toutes = async function* (onF: (f: Format) => void, onL: typeof onLine) {
    for (const source of sources) {
      fichier = sources.length > 1 ? `${path.basename(source)} : ` : '';
      yield* groups(source, onF, onL, part);
    }
  };

  for await (const done of toutes(onFormat, onLine)) {
    for (const lines of done) {
      const id = idOf(lines);
      // Seen before in this file: its lines are not all consecutive, the second reading regroups them all.
      if (bloom.testAndAdd(id) || scindees.has(id)) {
        scindees.add(id);
        if (scindees.size > MAX_SCINDEES) {
          throw new ImportError(
            `Plus de ${MAX_SCINDEES} mutations ont leurs lignes dispersées dans le fichier : triez-le par mutation (id_mutation, ou document et date pour le fichier DGFiP) avant de l’importer.`,
          );
        }
        continue;
      }
      stage(lines);
      if (batch.size >= MUTATIONS_PAR_LOT) await flush();
    }
  }
  await flush();

  if (scindees.size > 0) {
    // Second reading: every line of the split mutations, whatever their place; only those are kept in memory.
    // The same filter, replayed in the same order, tells which of them the first reading wrote (their first part).
    const replay = createBloom();
    const dejaEcrites = new Set<string>();
    const collected = new Map<string, Ligne[]>();
    for await (const done of toutes(
      (f) => (format = f),
      () => {},
    )) {
      for (const lines of done) {
        const id = idOf(lines);
        const vu = replay.testAndAdd(id);
        if (!scindees.has(id)) continue;
        if (!vu && !collected.has(id)) dejaEcrites.add(id);
        collected.set(id, [...(collected.get(id) ?? []), ...lines]);
      }
    }
    // The first batch of whole mutations goes with the ids whose first part was written.
    let oublier: string[] | undefined = [...dejaEcrites];
    for (const lines of collected.values()) {
      stage(lines);
      if (batch.size >= MUTATIONS_PAR_LOT) {
        await flush(oublier);
        oublier = undefined;
      }
    }
    await flush(oublier);
    // Counted once: a mutation whose first part was written is rewritten whole, not added again.
    lecture.mutations -= dejaEcrites.size;
    lecture.scindees = scindees.size;
  }
  await flush();
  lecture.insees = [...insees];
  lecture.millesimes = [...millesimes.values()].sort((a, b) => a.millesime - b.millesime);
  return lecture;
}

const WORKER = 'svc-dvf-lecture';
/**
 * Readers of one file. Two: parsing is the longest part of an import, and measured on 2 cores (bench/RESULTS.md),
 * two readers and the database's COPY keep both busy where one reader left the second core waiting.
 */
export const LECTEURS = 2;

type Message =
  | { type: 'lot'; lot: Transfert }
  | { type: 'fin'; lecture: Lecture }
  | { type: 'erreur'; message: string; importError: boolean };

/** The readings of the parts of a file, as the reading of the whole file. */
function merged(parts: Lecture[]): Lecture {
  const sum = (key: 'lus' | 'gardes' | 'mutations' | 'scindees' | 'sansCoordonnees') =>
    parts.reduce((total, p) => total + p[key], 0);
  return {
    format: parts[0].format,
    formatLibelle: parts[0].formatLibelle,
    lus: sum('lus'),
    gardes: sum('gardes'),
    rejetes: parts
      .flatMap((p) => p.rejetes)
      .sort((a, b) => a.ligne - b.ligne)
      .slice(0, MAX_REJETS_LISTES),
    mutations: sum('mutations'),
    scindees: sum('scindees'),
    sansCoordonnees: sum('sansCoordonnees'),
    insees: [...new Set(parts.flatMap((p) => p.insees))],
    millesimes: [
      ...Map.groupBy(
        parts.flatMap((p) => p.millesimes),
        (v) => v.millesime,
      ).values(),
    ]
      .map((of) => ({
        millesime: of[0].millesime,
        mutations: of.reduce((total, v) => total + v.mutations, 0),
        premiere: of.reduce((min, v) => (v.premiere < min ? v.premiere : min), of[0].premiere),
        derniere: of.reduce((max, v) => (v.derniere > max ? v.derniere : max), of[0].derniere),
      }))
      .sort((a, b) => a.millesime - b.millesime),
  };
}

/**
 * Reads `sources` in `lecteurs` worker threads; `write` gets their batches one at a time, with the lines read so far
 * by all of them. A reader waits for its batch to be written before it sends the next one.
 */
export function readInWorkers(
  sources: string[],
  lecteurs: number,
  dataset: Dataset,
  attached: Set<number>,
  write: (lot: Transfert) => Promise<void>,
): Promise<Lecture> {
  return new Promise((resolve, reject) => {
    const workers = Array.from(
      { length: lecteurs },
      (_, index) =>
        new Worker(new URL(import.meta.url), {
          workerData: {
            [WORKER]: true,
            sources,
            part: { index, of: lecteurs } satisfies Part,
            dataset,
            attached: [...attached],
          } satisfies LecteurData,
        }),
    );
    const progress = workers.map(() => ({ lus: 0, gardes: 0 }));
    const lectures: Lecture[] = [];
    let settled = false;
    let chain: Promise<void> = Promise.resolve();
    // Their ports would otherwise keep this process alive once the import is over.
    const stop = () => workers.forEach((worker) => void worker.terminate());
    // On a failure, batches still queued are not written, and the promise settles once the one being written is
    // done: the caller then cleans up after a writer that no longer moves.
    const fail = (error: unknown) => {
      if (settled) return;
      settled = true;
      stop();
      void chain.finally(() => reject(error));
    };
    workers.forEach((worker, index) => {
      worker.on('message', (message: Message) => {
        if (message.type === 'lot') {
          progress[index] = { lus: message.lot.lus, gardes: message.lot.gardes };
          const lus = progress.reduce((total, p) => total + p.lus, 0);
          const gardes = progress.reduce((total, p) => total + p.gardes, 0);
          chain = chain
            .then(() => (settled ? undefined : write({ ...message.lot, lus, gardes })))
            .then(() => worker.postMessage('ecrit'), fail);
        } else if (message.type === 'fin') {
          lectures.push(message.lecture);
          if (lectures.length < workers.length) return;
          chain.then(() => {
            if (settled) return;
            settled = true;
            stop();
            resolve(merged(lectures));
          }, fail);
        } else {
          fail(message.importError ? new ImportError(message.message) : new Error(message.message));
        }
      });
      worker.on('error', fail);
      worker.on('exit', (code) => {
        if (!settled) chain.then(() => fail(new Error(`lecture DVF interrompue (code ${code})`)), fail);
      });
    });
  });
}

/** What a reader is told: its files and part, and the dataset's vintages already there. */
interface LecteurData {
  [WORKER]: true;
  sources: string[];
  part: Part;
  dataset: Dataset;
  attached: number[];
}

async function runWorker({ sources, part, dataset, attached }: LecteurData): Promise<void> {
  const port = parentPort!;
  const written: Array<() => void> = [];
  port.on('message', () => written.shift()?.());
  try {
    const lecture = await readMutations(
      sources,
      part,
      createBatch(dataset, new Set(attached)),
      (lot) =>
        new Promise<void>((resolve) => {
          written.push(resolve);
          const message = { type: 'lot', lot } satisfies Message;
          port.postMessage(
            message,
            message.lot.nouvelles.map((n) => n.copie.buffer as ArrayBuffer),
          );
        }),
    );
    port.postMessage({ type: 'fin', lecture } satisfies Message);
  } catch (error) {
    port.postMessage({
      type: 'erreur',
      message: (error as Error).message ?? String(error),
      importError: error instanceof ImportError,
    } satisfies Message);
  } finally {
    port.removeAllListeners('message');
  }
}

if (!isMainThread && (workerData as Record<string, unknown> | null)?.[WORKER]) {
  void runWorker(workerData as LecteurData);
}
