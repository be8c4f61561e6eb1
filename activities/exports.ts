import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Db } from '../db/client.ts';
import type { FileDelivery } from '../domain/documents/telechargement.ts';
import { construireEdition, type Perimetre } from '../domain/exports/construire.ts';
import type { JeuExport } from '../domain/exports/editions.ts';
import { rafraichirLac } from '../domain/jeux/lac.ts';

/** What one edition's build returns to the workflow: its outcome, not its files. */
export interface ResumeEdition {
  jeu: JeuExport;
  perimetre: Perimetre;
  date: string;
  statut: 'listee' | 'retenue' | 'non_produite';
  raison: string | null;
  lignes: number | null;
}

export function createExportsActivities({
  db,
  files,
  lac,
}: {
  db: Db;
  files?: FileDelivery;
  lac?: { dossier: string; stabiliteMs?: number };
}) {
  return {
    /**
     * The lake editions of the large datasets that are stale (domain/jeux/lac.ts), which agreger_jeu then reads with
     * DuckDB. A worker without the lake's folder builds none, and says so.
     */
    async rafraichirLac(): Promise<{ fait: boolean; jeux: Array<{ jeu: string; lignes: number | null }> }> {
      if (!lac) return { fait: false, jeux: [] };
      const jeux = await rafraichirLac(db, lac.dossier, {
        stabiliteMs: lac.stabiliteMs,
        battement: () => Context.current().heartbeat(),
      });
      return { fait: true, jeux };
    },
    /** Builds, checks, stores and records one edition (domain/exports/construire.ts); a rerun replaces the day's. */
    async construireEditionExport({
      jeu,
      perimetre,
    }: {
      jeu: JeuExport;
      perimetre: Perimetre;
    }): Promise<ResumeEdition> {
      if (!files) {
        throw ApplicationFailure.create({
          type: 'stockage_absent',
          message: 'Aucun stockage de fichiers configuré pour ce worker : les éditions ne peuvent être gardées.',
          nonRetryable: true,
        });
      }
      // A country's table takes minutes: heartbeats say the activity is alive.
      const battement = setInterval(() => Context.current().heartbeat(), 5_000);
      try {
        const r = await construireEdition({ db, storage: files.storage, jeu, perimetre });
        return { jeu, perimetre, date: r.date, statut: r.statut, raison: r.raison, lignes: r.lignes };
      } finally {
        clearInterval(battement);
      }
    },
  };
}
