import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';
import type { ResumeEdition } from '../activities/exports.ts';
import type { Perimetre } from '../domain/exports/construire.ts';
import type { JeuExport } from '../domain/exports/editions.ts';

// One edition reads a whole table and writes its files: long, heartbeating; retried on a transient fault. A missing
// storage is permanent.
const { construireEditionExport, rafraichirLac } = proxyActivities<Activities>({
  startToCloseTimeout: '2 hours',
  heartbeatTimeout: '1 minute',
  retry: { initialInterval: '30 seconds', backoffCoefficient: 2, maximumAttempts: 3 },
});

export interface EditionsEntree {
  /** The datasets to build (those whose editions are produced: domain/exports/editions.ts, JEUX_PRODUITS). */
  jeux: JeuExport[];
  perimetres: Perimetre[];
}

/**
 * Builds the export editions of the day, one after the other (each reads a whole table: two at once would only
 * share the same two cores): daily by the Temporal Schedule `exports-editions` (lib/temporal.ts, planifierEditions)
 * and after each import (editionsApresImport). A dataset that fails does not stop the others: its failure is in the
 * summary, and the next run builds it again. Then the lake editions of the large datasets that are stale.
 */
export async function construireEditions({ jeux, perimetres }: EditionsEntree): Promise<{
  editions: ResumeEdition[];
  echecs: Array<{ jeu: JeuExport; perimetre: Perimetre; message: string }>;
  /** The large datasets' lake editions rebuilt (lignes) or still fresh (null); null when it could not be done. */
  lac: Array<{ jeu: string; lignes: number | null }> | null;
}> {
  const editions: ResumeEdition[] = [];
  const echecs: Array<{ jeu: JeuExport; perimetre: Perimetre; message: string }> = [];
  for (const jeu of jeux) {
    for (const perimetre of perimetres) {
      try {
        editions.push(await construireEditionExport({ jeu, perimetre }));
      } catch (error) {
        echecs.push({ jeu, perimetre, message: (error as Error).message });
      }
    }
  }
  // Then the lake, which agreger_jeu reads with DuckDB: the large datasets whose tables were written since.
  const lac = await rafraichirLac().then(
    (r) => (r.fait ? r.jeux : null),
    () => null,
  );
  return { editions, echecs, lac };
}
