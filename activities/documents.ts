import { ApplicationFailure, Context } from '@temporalio/activity';
import { transaction, type Db } from '../db/client.ts';
import {
  InvalidDocument,
  prepareFiles,
  readDocuments,
  type FichierEntree,
  type PreparedDocument,
} from '../domain/documents/lecture.ts';
import { completeTask, failTask, markRunning } from '../domain/taches/taches.ts';
import { modelFailure, taskRow, type Semaphore } from './shared.ts';
import { ModelError, type Model } from '../lib/model.ts';
import type { OutboundHttp } from '../lib/outbound-http.ts';

export interface DocumentActivityDeps {
  db: Db;
  model: Model | null;
  outbound: OutboundHttp;
  /** The worker's bound on model readings at once (activities/shared.ts). */
  modelSlot: Semaphore;
  /** The model sees images (images, PDFs without text read as page images). Default true. */
  modelSeesImages?: boolean;
}

interface LectureEntree {
  fichiers: FichierEntree[];
  question: string;
}

// Fixed messages: a model server's own error text may quote the request, i.e. the documents, and failure messages
// end up in Temporal's history and the worker's logs.
const MODEL_MESSAGES: Record<ModelError['kind'], string> = {
  delai: 'Le modèle n’a pas répondu à temps.',
  indisponible: 'Le modèle est momentanément indisponible.',
  reponse_invalide: 'La réponse du modèle est inexploitable.',
  refus: 'Le modèle a refusé de lire ces documents.',
  configuration: 'Le modèle a refusé la requête (modèle non configuré ou format non pris en charge).',
};

/** Failures of the reading become Temporal failures whose type is the task's stable `erreur.code`. */
function asFailure(error: unknown): unknown {
  if (error instanceof ApplicationFailure) return error;
  if (error instanceof InvalidDocument) {
    return ApplicationFailure.create({
      type: error.code,
      message: error.message,
      nonRetryable: !error.retryable,
      details: [error.champ],
    });
  }
  if (error instanceof ModelError) return modelFailure(error, MODEL_MESSAGES[error.kind]);
  if ((error as Error)?.name === 'AbortError') return error;
  // Anything else (database, pdfjs, sharp): its message may carry content; its kind is enough to investigate.
  const kind = [(error as Error)?.name, (error as { code?: string })?.code].filter(Boolean).join(' ');
  return ApplicationFailure.create({
    type: 'erreur_interne',
    message: `Erreur interne pendant la lecture des documents${kind ? ` (${kind})` : ''}.`,
    nonRetryable: false,
  });
}

/** Runs `work` while heartbeating: the worker is seen alive, and a cancellation reaches `signal`. */
async function heartbeating<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const context = Context.current();
  const beat = setInterval(() => context.heartbeat(), 2000);
  try {
    return await work(context.cancellationSignal);
  } catch (error) {
    throw asFailure(error);
  } finally {
    clearInterval(beat);
  }
}

interface PreparedRow {
  rang: number;
  nom: string;
  type: 'pdf' | 'image';
  format: PreparedDocument['format'];
  taille_octets: number;
  nb_pages: number | null;
  pages: string[] | null;
  scanne: boolean;
  images: PreparedDocument['images'];
  notes: string[];
}

/**
 * The activities of `lireDocument` (workflows/lire-document.ts). They take and return task ids only: the files live
 * in the task row's input, the prepared documents in `lectures_documents`, the result in the task row, so no
 * document content goes through Temporal.
 */
export function createDocumentActivities(deps: DocumentActivityDeps) {
  const { db, modelSlot } = deps;
  const vision = deps.modelSeesImages ?? true;

  return {
    /** Fetches, recognises and prepares the files of the task; returns how many documents were prepared. */
    async preparerDocuments(tacheId: string): Promise<number> {
      if (!deps.model) {
        throw ApplicationFailure.nonRetryable(
          'Aucun modèle configuré (OPENAI_MODEL) : la lecture de documents est impossible.',
          'modele_non_configure',
        );
      }
      await markRunning(db, tacheId);
      const task = await taskRow(db, tacheId);
      const entree = task.entree as unknown as LectureEntree;
      const docs = await heartbeating((signal) =>
        prepareFiles(entree.fichiers ?? [], { outbound: deps.outbound, signal, renderScanned: vision }),
      );
      await transaction(db, async (tx) => {
        // A retried preparation replaces what an earlier attempt left.
        await tx.query('DELETE FROM lectures_documents WHERE tache_id = $1', [tacheId]);
        for (const doc of docs) {
          await tx.query(
            `INSERT INTO lectures_documents (tache_id, rang, nom, type, format, taille_octets, nb_pages, pages, scanne,
                                             images, notes)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
            [
              tacheId,
              doc.rang,
              doc.nom,
              doc.type,
              doc.format,
              doc.taille_octets,
              doc.nb_pages,
              doc.pages === null ? null : JSON.stringify(doc.pages),
              doc.scanne,
              JSON.stringify(doc.images),
              JSON.stringify(doc.notes),
            ],
          );
        }
      });
      return docs.length;
    },

    /** The model reading of the prepared documents; the result goes straight into the task row. */
    async lireDocumentsPrepares(tacheId: string): Promise<void> {
      const task = await taskRow(db, tacheId);
      if (task.statut === 'terminee' || task.statut === 'echouee') return;
      if (!deps.model) {
        throw ApplicationFailure.nonRetryable('Aucun modèle configuré (OPENAI_MODEL).', 'modele_non_configure');
      }
      const model = deps.model;
      const { rows } = await db.query<PreparedRow>(
        `SELECT rang, nom, type, format, taille_octets, nb_pages, pages, scanne, images, notes
           FROM lectures_documents WHERE tache_id = $1 ORDER BY rang`,
        [tacheId],
      );
      if (rows.length === 0) {
        throw ApplicationFailure.nonRetryable('Documents préparés absents.', 'entree_invalide');
      }
      const entree = task.entree as unknown as LectureEntree;
      const resultat = await heartbeating((signal) =>
        modelSlot(() => readDocuments({ docs: rows, question: entree.question, model, signal, vision })),
      );
      // Synchronous operation: the request bills when it answers, the task itself debits nothing.
      await completeTask(db, tacheId, resultat, { debit: false, fingerprint: null });
    },

    /** Ends the task in failure; `champ` is the request field at fault, put before the detail. */
    async echouerLectureDocument(args: {
      tacheId: string;
      code: string;
      detail: string;
      champ: string | null;
    }): Promise<void> {
      const detail = args.champ ? `${args.champ} : ${args.detail}` : args.detail;
      await failTask(db, args.tacheId, { code: args.code, detail });
    },

    /** Deletes the prepared documents of the task: nothing of them is kept after the reading. */
    async effacerDocumentsPrepares(tacheId: string): Promise<void> {
      await db.query('DELETE FROM lectures_documents WHERE tache_id = $1', [tacheId]);
    },
  };
}

export type DocumentActivities = ReturnType<typeof createDocumentActivities>;
