import { isAscii, isUtf8 } from 'node:buffer';
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { TextDecoder } from 'node:util';
import { createGunzip } from 'node:zlib';
import { ImportError } from '../import/source.ts';
import { formatOf, Rejet, type Format, type Ligne } from './formats.ts';

/** Reading: lines in constant memory, UTF-8 or Windows-1252, LF or CRLF, split between readers, grouped by mutation. */

/** The file's bytes, gunzipped when it is gzipped (Etalab publishes `.csv.gz`). */
async function bytesOf(file: string): Promise<Readable> {
  const head = Buffer.alloc(2);
  const handle = await open(file, 'r');
  try {
    await handle.read(head, 0, 2, 0);
  } finally {
    await handle.close();
  }
  const raw = createReadStream(file, { highWaterMark: 1 << 16 });
  if (head[0] !== 0x1f || head[1] !== 0x8b) return raw;
  const gunzip = createGunzip({ chunkSize: 1 << 16 });
  raw.on('error', (error) => gunzip.destroy(error));
  return raw.pipe(gunzip);
}

/**
 * The file's bytes in chunks of whole lines (the last one may lack its end of line), read 64 KiB at a time: the
 * lines of a chunk are parsed together and stay alive until folded, and with chunks of 1 MiB the garbage collector
 * kept copying them (a sixth of the reading, measured).
 */
async function* wholeLines(file: string): AsyncGenerator<Buffer> {
  let rest: Buffer | null = null;
  for await (const chunk of (await bytesOf(file)) as AsyncIterable<Buffer>) {
    const bytes: Buffer = rest ? Buffer.concat([rest, chunk]) : chunk;
    const end: number = bytes.lastIndexOf(10) + 1;
    rest = end < bytes.length ? bytes.subarray(end) : null;
    if (end > 0) yield bytes.subarray(0, end);
  }
  if (rest) yield rest;
}

/**
 * Which lines a reader parses: readers split a file's lines between them by the hash of their owner fields
 * (Format.proprietaire), so that all the lines of a mutation go to the same reader and each line to exactly one.
 */
export interface Part {
  index: number;
  of: number;
}

const FNV_BASE = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
const isSpace = (byte: number) => byte === 0x20 || (byte >= 0x09 && byte <= 0x0d);

/**
 * FNV-1a (a cheap, well-spread hash) of a line's owner fields (Format.proprietaire), trimmed, joined by '|', read
 * from its bytes without decoding them: the same value as `ownerOfFields` for a line without quotes.
 */
function ownerHash(bytes: Uint8Array, start: number, end: number, format: Format): number {
  const owners = format.proprietaire;
  let h = FNV_BASE;
  let wanted = 0;
  let field = 0;
  let fieldStart = start;
  for (let i = start; i <= end && wanted < owners.length; i++) {
    if (i < end && bytes[i] !== format.separateur) continue;
    if (field === owners[wanted]) {
      if (wanted > 0) h = Math.imul(h ^ 0x7c, FNV_PRIME);
      let s = fieldStart;
      let e = i;
      while (s < e && isSpace(bytes[s])) s++;
      while (e > s && isSpace(bytes[e - 1])) e--;
      for (let k = s; k < e; k++) h = Math.imul(h ^ bytes[k], FNV_PRIME);
      wanted++;
    }
    field++;
    fieldStart = i + 1;
  }
  // Owner fields past the end of the line are empty.
  for (; wanted < owners.length; wanted++) if (wanted > 0) h = Math.imul(h ^ 0x7c, FNV_PRIME);
  return h >>> 0;
}

/** The same hash from a line's fields (for a line with quotes: its fields are known only once it is split). */
function ownerOfFields(fields: string[], format: Format): number {
  const owner = Buffer.from(format.proprietaire.map((i) => (fields[i] ?? '').trim()).join('|'));
  let h = FNV_BASE;
  for (const byte of owner) h = Math.imul(h ^ byte, FNV_PRIME);
  return h >>> 0;
}

/**
 * Parsed lines of the file that are this reader's part, in order, with the header's format; quoted CSV fields
 * spanning lines are joined, blank lines skipped, bad lines given as rejections. Lines are found in the file's bytes
 * and only this reader's are decoded: the lines of the other readers cost a search for their end and a hash.
 */
async function* parsedLines(
  file: string,
  onFormat: (format: Format) => void,
  part: Part,
): AsyncGenerator<Array<Ligne | { ligne: number; motif: string }>> {
  let format: Format | null = null;
  let decoder: TextDecoder | null = null;
  let pending: string | null = null;
  let pendingLine = 0;
  let number = 0;
  for await (const bytes of wholeLines(file)) {
    // Older DGFiP files are in Windows-1252: told on the first chunk of whole lines that is not ASCII alone (ASCII
    // reads the same in both), wherever it comes in the file.
    if (!decoder && !isAscii(bytes)) decoder = new TextDecoder(isUtf8(bytes) ? 'utf-8' : 'windows-1252');
    const text = (start: number, end: number) =>
      decoder && decoder.encoding !== 'utf-8'
        ? decoder.decode(bytes.subarray(start, end))
        : bytes.toString('utf8', start, end);
    const out: Array<Ligne | { ligne: number; motif: string }> = [];
    let quote = bytes.indexOf(0x22);
    for (let start = 0, next = 0; start < bytes.length; start = next) {
      const newline = bytes.indexOf(10, start);
      next = newline < 0 ? bytes.length : newline + 1;
      let end = newline < 0 ? bytes.length : newline;
      if (end > start && bytes[end - 1] === 13) end--;
      number++;
      // A blank line is skipped (a line of other spaces than ASCII ones is checked decoded).
      const blank = end === start || ((isSpace(bytes[start]) || bytes[start] > 0x7f) && !text(start, end).trim());
      if (!format) {
        if (blank) continue;
        format = formatOf(text(start, end));
        onFormat(format);
        continue;
      }
      if (quote >= 0 && quote < start) quote = bytes.indexOf(0x22, start);
      let ligne = number;
      let fields: string[] | null = null;
      if (pending !== null || (format.guillemets && quote >= 0 && quote < end)) {
        // Quotes: the line is split to know where it ends. A quoted field that goes on past the end of the line:
        // every reader joins it to the next, to agree on lines.
        const line: string = pending === null ? text(start, end) : `${pending}\n${text(start, end)}`;
        if (pending !== null) ligne = pendingLine;
        pending = null;
        fields = format.split(line);
        if (!fields) {
          pending = line;
          pendingLine = ligne;
          continue;
        }
        if (part.of > 1 && ownerOfFields(fields, format) % part.of !== part.index) continue;
      } else {
        if (blank) continue;
        if (part.of > 1 && ownerHash(bytes, start, end, format) % part.of !== part.index) continue;
        fields = format.split(text(start, end))!;
      }
      if (fields.length !== format.champs) {
        out.push({ ligne, motif: `${fields.length} champs au lieu de ${format.champs}` });
        continue;
      }
      try {
        out.push(format.parse(fields, ligne));
      } catch (error) {
        if (!(error instanceof Rejet)) throw error;
        out.push({ ligne, motif: error.message });
      }
    }
    yield out;
  }
  if (pending !== null && part.index === 0) {
    yield [{ ligne: pendingLine, motif: 'guillemet non fermé en fin de fichier' }];
  }
  if (!format) throw new ImportError(`Fichier vide : ${file}.`);
}

/** Consecutive lines with the same key, as groups. */
export async function* groups(
  file: string,
  onFormat: (format: Format) => void,
  onLine: (line: Ligne | { ligne: number; motif: string }) => void,
  part: Part,
): AsyncGenerator<Ligne[][]> {
  let current: Ligne[] = [];
  for await (const parsed of parsedLines(file, onFormat, part)) {
    const done: Ligne[][] = [];
    for (const line of parsed) {
      onLine(line);
      if ('motif' in line) continue;
      if (current.length > 0 && current[0].cle !== line.cle) {
        done.push(current);
        current = [];
      }
      current.push(line);
    }
    if (done.length) yield done;
  }
  if (current.length) yield [current];
}
