import { isAscii } from 'node:buffer';
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { TextDecoder } from 'node:util';
import { createGunzip } from 'node:zlib';
import { isInseeCode } from '../communes.ts';
import type { ImportReport, Rejeter } from './source.ts';

/**
 * The CSV reader of the importers (BAN, DPE, Sitadel, SIRENE, BODACC): a file, plain or gzipped, is read as a stream
 * of records, chunk by chunk, so memory stays flat whatever its size. Fields follow RFC 4180: a field that starts
 * with a quote is quoted, may hold separators, doubled quotes and line breaks (BODACC puts JSON with line breaks in
 * its columns); a quote inside an unquoted field is kept as it is. A UTF-8 byte order mark and CRLF line ends are
 * dropped. The text is UTF-8, or, with `encodage: 'auto'`, UTF-8 or Windows-1252 as the bytes tell (see `morceaux`).
 */

/**
 * How a file's bytes become text. `auto` is for sources published in Windows-1252 whose copies circulate re-encoded
 * in UTF-8 (the rent indicators, the A/B/C zoning): the reader cannot be told which one it gets.
 */
export type Encodage = 'utf-8' | 'auto';

export interface CsvRecord {
  /** The physical line the record starts on (1 = first line). */
  ligne: number;
  champs: string[];
  /** The record is the first line alone of a quote that never closed (see MAX_ENREGISTREMENT). */
  guillemetOuvert?: true;
}

/**
 * Characters a quoted field may span before its opening quote is taken for a stray one: its line then comes alone,
 * flagged, and the lines after it are read again, so one bad line never swallows the rest of the file.
 */
const MAX_ENREGISTREMENT = 1 << 20;

/**
 * The charset of a chunk that is not ASCII alone: UTF-8 when it is valid UTF-8, else Windows-1252; null when it cannot
 * be told yet, its only non-ASCII bytes being the start of a character cut at its end (UTF-8, or a Windows-1252
 * letter such as é, 0xE9, which starts a UTF-8 sequence too): the next chunk tells.
 */
function charsetDe(octets: Uint8Array, fin: boolean): 'utf-8' | 'windows-1252' | null {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(octets, { stream: !fin });
  } catch {
    return 'windows-1252';
  }
  if (fin) return 'utf-8';
  // The bytes of a character possibly cut at the end: from its lead byte (0b11xxxxxx), at most 3 bytes back.
  let debut = octets.length;
  for (let i = octets.length - 1; i >= Math.max(0, octets.length - 3); i--) {
    if (octets[i] >= 0xc0) {
      debut = i;
      break;
    }
    if (octets[i] < 0x80) break;
  }
  return isAscii(octets.subarray(0, debut)) ? null : 'utf-8';
}

/**
 * The text of a (possibly gzipped) file, chunk by chunk, read only as fast as it is consumed. With `auto`, the
 * charset is told on the first chunk that is not ASCII alone (1 MiB, or the whole of a smaller file): UTF-8 if it is
 * valid UTF-8 (a byte order mark included), else Windows-1252, whose every byte is a character. Windows-1252 text
 * that is valid UTF-8 over a whole chunk does not occur in practice: each of its accented letters would have to be
 * one of À-ô followed by a symbol of 0x80-0xBF. Invalid UTF-8 after that chunk becomes U+FFFD rather than stopping
 * the import.
 */
async function* morceaux(file: string, encodage: Encodage): AsyncGenerator<string> {
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
  if (encodage === 'utf-8') {
    input.setEncoding('utf8');
    yield* input as AsyncIterable<string>;
    return;
  }
  let decodeur: TextDecoder | null = null;
  // A chunk whose charset the next one tells, kept until then.
  let enAttente: Buffer | null = null;
  for await (const lu of input as AsyncIterable<Buffer>) {
    let chunk = lu;
    if (decodeur === null) {
      if (enAttente) chunk = Buffer.concat([enAttente, chunk]);
      enAttente = null;
      // ASCII reads the same in both charsets: nothing to decide yet.
      if (isAscii(chunk)) {
        yield chunk.toString('latin1');
        continue;
      }
      const charset = charsetDe(chunk, false);
      if (charset === null) {
        enAttente = chunk;
        continue;
      }
      decodeur = new TextDecoder(charset);
    }
    yield decodeur.decode(chunk, { stream: true });
  }
  // The file ended on a chunk still waiting: told whole (at the end, charsetDe always tells).
  if (enAttente) {
    decodeur = new TextDecoder(charsetDe(enAttente, true)!);
    yield decodeur.decode(enAttente, { stream: true });
  }
  const reste = decodeur?.decode() ?? '';
  if (reste) yield reste;
}

/** A record being parsed: the fields done, the field under way, and whether a quote is open at the end of its text. */
interface Analyse {
  champs: string[];
  champ: string;
  guillemets: boolean;
}

/** Goes on parsing `text` into `a`. A quote opens a quoted field only as its first character. */
function analyser(text: string, separator: string, a: Analyse): void {
  let i = 0;
  while (i < text.length) {
    if (a.guillemets) {
      const q = text.indexOf('"', i);
      if (q === -1) {
        a.champ += text.slice(i);
        return;
      }
      a.champ += text.slice(i, q);
      if (text[q + 1] === '"') {
        a.champ += '"';
        i = q + 2;
      } else {
        a.guillemets = false;
        i = q + 1;
      }
      continue;
    }
    const ch = text[i++];
    if (ch === '"' && a.champ.length === 0) a.guillemets = true;
    else if (ch === separator) {
      a.champs.push(a.champ);
      a.champ = '';
    } else a.champ += ch;
  }
}

/** Fields of one CSV line or record (a quote left open runs to its end). */
export function splitCsvLine(text: string, separator = ';'): string[] {
  if (!text.includes('"')) return text.split(separator);
  const a: Analyse = { champs: [], champ: '', guillemets: false };
  analyser(text, separator, a);
  a.champs.push(a.champ);
  return a.champs;
}

/**
 * The records of a CSV file. `separator` is the separator, or a function that tells it from the first line; `encodage`
 * its charset (UTF-8 unless said). Lines without quotes take a fast path (a plain split), which is nearly all of them
 * in the SIRENE and Sitadel files.
 */
export async function* csvRecords(
  file: string,
  separator: string | ((firstLine: string) => string),
  { encodage = 'utf-8' }: { encodage?: Encodage } = {},
): AsyncGenerator<CsvRecord> {
  let sep = typeof separator === 'string' ? separator : '';
  // The record still open: its lines with their numbers (read again if its quote never closes), their length.
  let ouvert: { lignes: Array<[number, string]>; taille: number; analyse: Analyse } | null = null;

  const lire = function* (numero: number, line: string): Generator<CsvRecord> {
    if (ouvert === null) {
      if (!line.includes('"')) {
        yield { ligne: numero, champs: line.split(sep) };
        return;
      }
      const analyse: Analyse = { champs: [], champ: '', guillemets: false };
      analyser(line, sep, analyse);
      if (analyse.guillemets) {
        ouvert = { lignes: [[numero, line]], taille: line.length, analyse };
        return;
      }
      analyse.champs.push(analyse.champ);
      yield { ligne: numero, champs: analyse.champs };
      return;
    }
    const { lignes, analyse } = ouvert;
    lignes.push([numero, line]);
    ouvert.taille += line.length + 1;
    analyse.champ += '\n';
    analyser(line, sep, analyse);
    if (!analyse.guillemets) {
      ouvert = null;
      analyse.champs.push(analyse.champ);
      yield { ligne: lignes[0][0], champs: analyse.champs };
    } else if (ouvert.taille > MAX_ENREGISTREMENT) yield* abandonner();
  };
  // The open quote was a stray one: its line alone, then the lines after it read again.
  const abandonner = function* (): Generator<CsvRecord> {
    const [[debut, premiere], ...suivantes] = ouvert!.lignes;
    ouvert = null;
    yield { ligne: debut, champs: splitCsvLine(premiere, sep), guillemetOuvert: true };
    for (const [numero, line] of suivantes) yield* lire(numero, line);
  };

  let n = 0;
  const ligne = function* (raw: string): Generator<CsvRecord> {
    n++;
    let line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (n === 1) {
      line = line.replace(/^\uFEFF/, '');
      if (typeof separator !== 'string') sep = separator(line);
    }
    yield* lire(n, line);
  };
  let rest = '';
  for await (const chunk of morceaux(file, encodage)) {
    const parts = (rest + chunk).split('\n');
    rest = parts.pop()!;
    for (const part of parts) yield* ligne(part);
  }
  if (rest.length > 0) yield* ligne(rest);
  while (ouvert !== null) yield* abandonner();
}

/**
 * The data records after a header `largeur` fields wide, as an importer reads them: blank lines skipped, every other
 * counted in `report.lus`, and one that cannot be read (a quote never closed, another width) rejected.
 */
export async function* lignesDeDonnees(
  records: AsyncIterable<CsvRecord>,
  largeur: number,
  report: ImportReport,
  rejeter: Rejeter,
): AsyncGenerator<CsvRecord> {
  for await (const record of records) {
    const { ligne, champs } = record;
    if (!record.guillemetOuvert && champs.length === 1 && champs[0].trim() === '') continue;
    report.lus++;
    if (record.guillemetOuvert) rejeter(ligne, 'guillemet non refermé : enregistrement illisible');
    else if (champs.length !== largeur) rejeter(ligne, `${champs.length} colonnes au lieu de ${largeur}`);
    else yield record;
  }
}

/** The separator a header line uses: the most frequent of `candidates` outside quotes (the first on a tie). */
export function separateurDe(header: string, candidates = [';', ',', '\t', '|']): string {
  const outside = header.replace(/"[^"]*"/g, '');
  let best = candidates[0];
  let most = -1;
  for (const candidate of candidates) {
    const count = outside.split(candidate).length - 1;
    if (count > most) {
      best = candidate;
      most = count;
    }
  }
  return best;
}

/** Columns of a header by name (trimmed; the first of a repeated name): name to index. */
export function colonnesDe(champs: string[]): Map<string, number> {
  const map = new Map<string, number>();
  champs.forEach((name, i) => {
    if (!map.has(name.trim())) map.set(name.trim(), i);
  });
  return map;
}

/** The fields of a record by column name: trimmed, null when empty or when the header has no such column. */
export function lecteurDe(colonnes: Map<string, number>, champs: string[]): (name: string) => string | null {
  return (name) => {
    const i = colonnes.get(name);
    return i === undefined ? null : texte(champs[i]);
  };
}

/** A trimmed field, or null when empty. */
export function texte(value: string | undefined | null): string | null {
  const v = value?.trim();
  return v ? v : null;
}

/**
 * A code read from text or from an integer, left-padded to `width` digits; null when it is neither. Files that went
 * through a spreadsheet or a numeric column lose leading zeros (IRIS `dcomiris`, the 2018 rent indicators' INSEE).
 */
export function codePadded(value: unknown, width: number): string | null {
  if (typeof value === 'number') {
    return Number.isInteger(value) && value >= 0 && String(value).length <= width
      ? String(value).padStart(width, '0')
      : null;
  }
  if (typeof value !== 'string') return null;
  const v = value.trim().toUpperCase();
  if (/^\d+$/.test(v) && v.length <= width) return v.padStart(width, '0');
  return v.length === width ? v : null;
}

/** A commune's INSEE code as a file writes it (`1001` for 01001, `2A004`), 5 characters; null when not one. */
export function codeInsee(value: string | null): string | null {
  const code = codePadded(value, 5);
  return code !== null && isInseeCode(code) ? code : null;
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
