import type { Queryable } from '../../db/client.ts';
import type { ImportReport, Rejeter } from './source.ts';

/**
 * How the importers write: rows gathered in batches (one statement a batch, memory bounded by the batch), and
 * idempotent upserts that say what they added and changed.
 */

export interface Lots<T> {
  /** Adds a row; the batch is written as soon as it is full. */
  ajouter(row: T): Promise<void>;
  /** Writes the rows left. */
  vider(): Promise<void>;
}

/** Rows handed to `ecrire` `taille` at a time, in the order added; `apres` runs after every batch written. */
export function parLots<T>(taille: number, ecrire: (lot: T[]) => Promise<void>, apres?: () => void): Lots<T> {
  let lot: T[] = [];
  const vider = async () => {
    if (lot.length === 0) return;
    const plein = lot;
    lot = [];
    await ecrire(plein);
    apres?.();
  };
  return {
    async ajouter(row) {
      lot.push(row);
      if (lot.length >= taille) await vider();
    },
    vider,
  };
}

export interface Table {
  nom: string;
  /** Every column written, with its SQL type (dataset included). */
  colonnes: Array<[nom: string, type: string]>;
  /** The conflict target (primary key). */
  cle: string[];
  /** The column set to now() when a row changes, if the table has one. */
  horodatage?: string;
}

export interface Ecriture {
  ajoutees: number;
  modifiees: number;
}

/**
 * Upserts rows (objects keyed by column name) in one statement: new rows are inserted, known rows updated only when a
 * column differs, so importing the same file again writes nothing. Rows with the same key in one batch must have been
 * deduplicated by the caller (PostgreSQL refuses to update a row twice in one statement).
 */
export async function upsert(db: Queryable, table: Table, lignes: Array<Record<string, unknown>>): Promise<Ecriture> {
  if (lignes.length === 0) return { ajoutees: 0, modifiees: 0 };
  const noms = table.colonnes.map(([nom]) => nom);
  const compares = noms.filter((nom) => !table.cle.includes(nom));
  const types = table.colonnes.map(([nom, type]) => `${nom} ${type}`).join(', ');
  const sets = compares.map((c) => `${c} = excluded.${c}`);
  if (table.horodatage) sets.push(`${table.horodatage} = now()`);
  const { rows } = await db.query<Ecriture>(
    `WITH up AS (
       INSERT INTO ${table.nom} AS t (${noms.join(', ')})
       SELECT ${noms.join(', ')} FROM jsonb_to_recordset($1::jsonb) AS r(${types})
       ON CONFLICT (${table.cle.join(', ')}) DO UPDATE
          SET ${sets.join(', ')}
        WHERE (${compares.map((c) => `t.${c}`).join(', ')}) IS DISTINCT FROM (${compares.map((c) => `excluded.${c}`).join(', ')})
       RETURNING (xmax = 0) AS ajoutee)
     SELECT count(*) FILTER (WHERE ajoutee)::int AS ajoutees, count(*) FILTER (WHERE NOT ajoutee)::int AS modifiees
       FROM up`,
    [JSON.stringify(lignes)],
  );
  return rows[0];
}

/** The report line of a table written in batches. */
export function ligneEcriture(label: string, total: number, e: Ecriture): string {
  return `${label} : ${total} (${e.ajoutees} ajoutés, ${e.modifiees} modifiés, ${total - e.ajoutees - e.modifiees} inchangés)`;
}

/** A row read from a file: where it was, and the columns to write. */
export interface Lu {
  ligne: number;
  row: Record<string, unknown>;
}

/**
 * The rows an importer keeps, counted in `report.gardes` and upserted into `table` by batches. In a batch, rows of
 * one key are deduplicated: the later line wins (as it would in a later batch), the earlier is rejected and no longer
 * counted as kept. `completer` finishes the rows of a batch (BAN keys, counts) before they are written; progress is
 * said after each batch. `terminer` writes the rest and puts the rejections back in line order.
 */
export function upsertParLots<T extends Lu>(
  db: Queryable,
  options: {
    table: Table;
    taille: number;
    cle: (l: T) => string;
    report: ImportReport;
    rejeter: Rejeter;
    completer?: (lot: T[]) => Promise<void>;
    onProgress?: (progress: { lus: number; gardes: number }) => void;
  },
): { garder(l: T): Promise<void>; terminer(): Promise<Ecriture> } {
  const { table, cle, report, rejeter, completer, onProgress } = options;
  const ecriture: Ecriture = { ajoutees: 0, modifiees: 0 };
  const lots = parLots<T>(
    options.taille,
    async (lot) => {
      const parCle = new Map<string, T>();
      for (const l of lot) {
        const k = cle(l);
        const avant = parCle.get(k);
        if (avant) rejeter(avant.ligne, `même clé que la ligne ${l.ligne} (${k}), qui l’emporte`);
        parCle.set(k, l);
      }
      const uniques = [...parCle.values()];
      report.gardes -= lot.length - uniques.length;
      await completer?.(uniques);
      const e = await upsert(
        db,
        table,
        uniques.map((l) => l.row),
      );
      ecriture.ajoutees += e.ajoutees;
      ecriture.modifiees += e.modifiees;
    },
    () => onProgress?.({ lus: report.lus, gardes: report.gardes }),
  );
  return {
    async garder(l) {
      report.gardes++;
      await lots.ajouter(l);
    },
    async terminer() {
      await lots.vider();
      report.rejetes.sort((a, b) => a.ligne - b.ligne);
      onProgress?.({ lus: report.lus, gardes: report.gardes });
      return ecriture;
    },
  };
}
