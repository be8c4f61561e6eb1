import { createReadStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import type { Queryable } from '../../db/client.ts';
import { ImportError, type ImportReport } from '../import/source.ts';

/**
 * What the importers of permits, SIRENE, BODACC and IRIS share: a streaming CSV reader that honours quoted fields
 * spanning lines (BODACC puts JSON with line breaks in its columns), idempotent batched upserts that say what they
 * added and changed, and the bookkeeping of rejected rows.
 */

export type Dataset = 'live' | 'sandbox';

/** Rejected rows listed in a report at most; the count is always complete (`lus - gardes`). */
export const MAX_REJETS_LISTES = 1000;

/** Throws an ImportError unless `file` is a readable file. */
export async function exigerFichier(file: string): Promise<void> {
  const info = await stat(file).catch(() => null);
  if (!info?.isFile()) throw new ImportError(`fichier introuvable : ${file}`);
}

/** A fresh report and the function that records a rejected row in it. */
export function nouveauRapport(source: string): {
  report: ImportReport;
  rejeter: (ligne: number, motif: string) => void;
} {
  const report: ImportReport = { source, lus: 0, gardes: 0, rejetes: [], details: [] };
  return {
    report,
    rejeter(ligne, motif) {
      if (report.rejetes.length < MAX_REJETS_LISTES) report.rejetes.push({ ligne, motif });
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------------
// CSV.
// ---------------------------------------------------------------------------------------------------------------------

/** The text of a (possibly gzipped) file, chunk by chunk, read only as fast as it is consumed. */
async function* chunks(file: string): AsyncGenerator<string> {
  const head = Buffer.alloc(2);
  const handle = await open(file, 'r');
  try {
    await handle.read(head, 0, 2, 0);
  } finally {
    await handle.close();
  }
  const raw = createReadStream(file, { highWaterMark: 1 << 20 });
  let input: Readable = raw;
  if (head[0] === 0x1f && head[1] === 0x8b) {
    const gunzip = createGunzip();
    raw.on('error', (error) => gunzip.destroy(error));
    input = raw.pipe(gunzip);
  }
  input.setEncoding('utf8');
  yield* input as AsyncIterable<string>;
}

/** Fields of one complete CSV record (quotes honoured, doubled quotes unescaped). */
export function splitRecord(text: string, separator: string): string[] {
  if (!text.includes('"')) return text.split(separator);
  const out: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else field += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === separator) {
      out.push(field);
      field = '';
    } else field += ch;
  }
  out.push(field);
  return out;
}

function quotes(text: string): number {
  let n = 0;
  for (let i = text.indexOf('"'); i !== -1; i = text.indexOf('"', i + 1)) n++;
  return n;
}

/** Lines a quoted field may span before its opening quote is taken for a stray one. */
const MAX_LIGNES_PAR_ENREGISTREMENT = 500;

/**
 * The records of a CSV file with the physical line each starts on (1 = first line). A record whose quotes are not
 * balanced at the end of a line goes on over the next lines: a quoted field may hold line breaks. Lines without quotes
 * take a fast path (a plain split), which is nearly all of them in the SIRENE and Sitadel files. A quote left open
 * for more than 500 lines is taken for a stray one: its line comes alone (and fails the column count), and the
 * lines after it are read again, so one bad line never swallows the rest of the file.
 */
export async function* csvRecords(
  file: string,
  separator: string | ((firstLine: string) => string),
): AsyncGenerator<{ ligne: number; champs: string[] }> {
  let sep = typeof separator === 'string' ? separator : null;
  let rest = '';
  let n = 0;
  // The lines of a record still open, with their numbers, and the quotes counted so far.
  let pending: Array<[number, string]> = [];
  let pendingQuotes = 0;
  const lire = function* (numero: number, line: string): Generator<{ ligne: number; champs: string[] }> {
    if (pending.length > 0) {
      pending.push([numero, line]);
      pendingQuotes += quotes(line);
      if (pendingQuotes % 2 === 0) {
        const text = pending.map(([, l]) => l).join('\n');
        const debut = pending[0][0];
        pending = [];
        yield { ligne: debut, champs: splitRecord(text, sep!) };
      } else if (pending.length > MAX_LIGNES_PAR_ENREGISTREMENT) {
        const [[debut, premiere], ...suivantes] = pending;
        pending = [];
        yield { ligne: debut, champs: splitRecord(premiere, sep!) };
        for (const [k, l] of suivantes) yield* lire(k, l);
      }
      return;
    }
    if (!line.includes('"')) {
      yield { ligne: numero, champs: line.split(sep!) };
      return;
    }
    const q = quotes(line);
    if (q % 2 === 0) {
      yield { ligne: numero, champs: splitRecord(line, sep!) };
      return;
    }
    pending = [[numero, line]];
    pendingQuotes = q;
  };
  const handle = function* (raw: string): Generator<{ ligne: number; champs: string[] }> {
    n++;
    let line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (n === 1) line = line.replace(/^\uFEFF/, '');
    if (sep === null) sep = (separator as (firstLine: string) => string)(line);
    yield* lire(n, line);
  };
  for await (const chunk of chunks(file)) {
    const parts = (rest + chunk).split('\n');
    rest = parts.pop()!;
    for (const part of parts) yield* handle(part);
  }
  if (rest.length > 0) yield* handle(rest);
  // A quote still open at the end of the file was a stray one too.
  while (pending.length > 0) {
    const [[debut, premiere], ...suivantes] = pending;
    pending = [];
    yield { ligne: debut, champs: splitRecord(premiere, sep ?? ';') };
    for (const [k, l] of suivantes) yield* lire(k, l);
  }
}

/** The separator a header line uses: the most frequent of `;`, `,`, tab and `|` outside quotes. */
export function separateurDe(header: string): string {
  const outside = header.replace(/"[^"]*"/g, '');
  let best = ';';
  let most = -1;
  for (const candidate of [';', ',', '\t', '|']) {
    const count = outside.split(candidate).length - 1;
    if (count > most) {
      best = candidate;
      most = count;
    }
  }
  return best;
}

/** Columns of a header by name (trimmed, upper case for Sitadel, as written otherwise): name to index. */
export function colonnesDe(champs: string[], casse: 'majuscules' | 'telle_quelle' = 'telle_quelle') {
  const map = new Map<string, number>();
  champs.forEach((name, i) => {
    const key = casse === 'majuscules' ? name.trim().toUpperCase() : name.trim();
    if (!map.has(key)) map.set(key, i);
  });
  return map;
}

/** A trimmed field, or null when empty. */
export function texte(value: string | undefined | null): string | null {
  const v = value?.trim();
  return v ? v : null;
}

/** A number written with a dot or a decimal comma, or null; NaN when the field is not a number. */
export function nombre(value: string | undefined | null): number | null {
  const v = texte(value);
  if (v === null) return null;
  const n = Number(v.replace(/\s/g, '').replace(',', '.'));
  return Number.isFinite(n) ? n : NaN;
}

/**
 * A date as AAAA-MM-JJ from AAAA-MM-JJ (optionally followed by a time), JJ/MM/AAAA or AAAAMMJJ; null when empty,
 * undefined when present but not a real date.
 */
export function dateIso(value: string | undefined | null): string | null | undefined {
  const v = texte(value);
  if (v === null) return null;
  let y: string, m: string, d: string;
  let match = /^(\d{4})-(\d{2})-(\d{2})(?:[T ][\d:.]+Z?)?$/.exec(v);
  if (match) [, y, m, d] = match;
  else if ((match = /^(\d{2})\/(\d{2})\/(\d{4})$/.exec(v))) [, d, m, y] = match;
  else if ((match = /^(\d{4})(\d{2})(\d{2})$/.exec(v))) [, y, m, d] = match;
  else return undefined;
  const iso = `${y}-${m}-${d}`;
  const date = new Date(`${iso}T00:00:00Z`);
  if (Number.isNaN(date.getTime()) || !date.toISOString().startsWith(iso)) return undefined;
  return iso;
}

// ---------------------------------------------------------------------------------------------------------------------
// Upserts.
// ---------------------------------------------------------------------------------------------------------------------

export interface Table {
  nom: string;
  /** Every column written, with its SQL type (dataset included). */
  colonnes: Array<[nom: string, type: string]>;
  /** The conflict target (primary key). */
  cle: string[];
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
  const { rows } = await db.query<Ecriture>(
    `WITH up AS (
       INSERT INTO ${table.nom} AS t (${noms.join(', ')})
       SELECT ${noms.join(', ')} FROM jsonb_to_recordset($1::jsonb) AS r(${types})
       ON CONFLICT (${table.cle.join(', ')}) DO UPDATE
          SET ${compares.map((c) => `${c} = excluded.${c}`).join(', ')}, maj_le = now()
        WHERE (${compares.map((c) => `t.${c}`).join(', ')}) IS DISTINCT FROM (${compares.map((c) => `excluded.${c}`).join(', ')})
       RETURNING (xmax = 0) AS ajoutee)
     SELECT count(*) FILTER (WHERE ajoutee)::int AS ajoutees, count(*) FILTER (WHERE NOT ajoutee)::int AS modifiees
       FROM up`,
    [JSON.stringify(lignes)],
  );
  return rows[0];
}

/**
 * Keeps the last row of each key in a batch (a later line of the file wins, as it would in a later batch) and
 * reports the earlier ones.
 */
export function dedoublonner<T extends { ligne: number }>(
  lot: T[],
  cle: (row: T) => string,
  rejeter: (ligne: number, motif: string) => void,
): T[] {
  const parCle = new Map<string, T>();
  for (const row of lot) {
    const k = cle(row);
    const avant = parCle.get(k);
    if (avant) rejeter(avant.ligne, `même clé que la ligne ${row.ligne} (${k}), qui l’emporte`);
    parCle.set(k, row);
  }
  return [...parCle.values()];
}

/** The report line of a table written in batches. */
export function ligneEcriture(label: string, total: number, e: Ecriture): string {
  return `${label} : ${total} (${e.ajoutees} ajoutés, ${e.modifiees} modifiés, ${total - e.ajoutees - e.modifiees} inchangés)`;
}
