import { createHash, randomBytes, type Hash } from 'node:crypto';

/**
 * JSON in UTF-8, as answers are sent, hashed and kept. Most of some answers is the same for every request (legal
 * values, sources, rules, hypotheses: 85 % of a `taxe_amenagement` answer); `constant` and `constantText` mark such
 * a part so that it is serialised, encoded and hashed once, and `jsonBytes` copies its bytes into each answer, and its
 * digest into the answer's digest input, instead of doing that work again (on this machine serialising, encoding and
 * hashing cost about 8 µs per KB of French text).
 */

// Encoding a long string into a buffer surely large enough and copying the bytes out costs half of what Buffer.from
// does (which measures the UTF-8 length in one pass, then encodes in another).
let scratch = Buffer.allocUnsafeSlow(64 * 1024);
const DIGEST_LENGTH = 32;

/** A constant part: its JSON bytes, and the SHA-256 of those bytes (what stands for them in a digest). */
interface Part {
  bytes: Buffer;
  digest: Buffer;
}
/** JSON text made elsewhere (rawJson), spliced into the answer as if serialised in place. */
interface RawPart {
  text: string;
}
const partOf = (json: string): Part => {
  const bytes = Buffer.from(json);
  return { bytes, digest: createHash('sha256').update(bytes).digest() };
};

// Every constant part, by the constant (objects), and every constant text, by its content.
const objectParts = new WeakMap<object, Part>();
const textParts = new Map<string, Part>();
// The constant parts met by the serialisation under way (null outside jsonBytes: a constant then serialises as the
// plain value it is, wherever else it goes: the Hub's prompts, MCP, logs).
let met: Array<Part | RawPart> | null = null;
// A constant stands in the JSON text as a string no answer can otherwise hold: a NUL and this process's own nonce.
const MARK = `\u0000${randomBytes(8).toString('hex')}:`;
const MARKED = new RegExp(`"\\\\u0000${MARK.slice(1)}(\\d+)"`, 'g');

/**
 * Marks `value` (an object or array, never changed afterwards: it is frozen) as a constant part of answers: its JSON
 * bytes are made now, once. The value stays a plain value for every other use.
 */
export function constant<T extends object>(value: T): T {
  objectParts.set(value, partOf(JSON.stringify(value)));
  Object.defineProperty(value, 'toJSON', {
    value(this: T) {
      if (!met) return this;
      met.push(objectParts.get(this)!);
      return MARK + (met.length - 1);
    },
  });
  return deepFreeze(value);
}

/**
 * Marks a text as a constant part of answers where it is a field of the answer itself (a rule, a formula): its JSON
 * bytes are made once, and any equal text in that place is copied in as bytes. A string has no toJSON, so deeper
 * texts are constant only within a constant object or array.
 */
export function constantText(text: string): string {
  textParts.set(text, partOf(JSON.stringify(text)));
  return text;
}

/**
 * A value already written as JSON text elsewhere (PostgreSQL writes a feed page's thousand listings as JSON: parsing
 * them into objects only to serialise them again cost the api most of a page), standing in an answer for the value
 * that text holds: `jsonBytes` copies the text in as if it had serialised the value there (the answer's digest is
 * that of its text, as for any other part of the answer); anything else that reads it (JSON.stringify elsewhere, the
 * Hub, MCP, a property read) meets the value itself, parsed once on first use. `text` must be one JSON value.
 */
export function rawJson<T extends object>(text: string): T {
  let value: object | undefined;
  const parsed = () => (value ??= JSON.parse(text) as object);
  const toJSON = () => {
    if (!met) return parsed();
    met.push({ text });
    return MARK + (met.length - 1);
  };
  return new Proxy({} as T, {
    get: (_, key) => (key === 'toJSON' ? toJSON : Reflect.get(parsed(), key)),
    has: (_, key) => Reflect.has(parsed(), key),
    ownKeys: () => Reflect.ownKeys(parsed()),
    getOwnPropertyDescriptor: (_, key) => {
      const d = Reflect.getOwnPropertyDescriptor(parsed(), key);
      return d && { ...d, configurable: true };
    },
    getPrototypeOf: () => Reflect.getPrototypeOf(parsed()),
  });
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/**
 * `value` with the constants among its own fields replaced by their marks, in a shallow copy (`value` itself when it
 * has none). Constants sit there in most answers: JSON.stringify then meets no toJSON for them, and a constant text
 * (which has no toJSON) is found only there. A deeper constant object still marks itself through its toJSON.
 */
function marked(value: unknown, parts: Array<Part | RawPart>): unknown {
  if (typeof value !== 'object' || value === null || Object.getPrototypeOf(value) !== Object.prototype) return value;
  let copy: Record<string, unknown> | null = null;
  for (const key in value) {
    const field = (value as Record<string, unknown>)[key];
    const part =
      typeof field === 'string'
        ? textParts.get(field)
        : typeof field === 'object' && field !== null
          ? objectParts.get(field)
          : undefined;
    if (part === undefined) continue;
    copy ??= { ...value };
    copy[key] = MARK + parts.length;
    parts.push(part);
  }
  return copy ?? value;
}

/** How `jsonBytes` makes an answer. */
export interface JsonBytesOptions {
  /**
   * Bytes to leave free past the JSON, in the same memory, for the caller to finish the answer in place; the buffer
   * is then the answer's own (from `take`, never a slice of Node's shared pool). Every buffer made per answer weighs
   * on the garbage collector (V8 starts a full collection for each 64 MB of them), so an answer is better made in one
   * than copied into another.
   */
  room?: number;
  take?: (size: number) => Buffer;
  /**
   * Fed the answer's digest input: its bytes, each constant part replaced by a byte 0xFF (which UTF-8 never holds)
   * and that part's SHA-256. The same value gives the same input in any process, and hashing it costs the variable
   * bytes alone, not the whole answer (a constant part is a property of the operation: it marks the same parts in
   * every answer).
   */
  hash?: Hash;
}

/** `value` as JSON in UTF-8, the bytes of its constant parts copied in, in one new buffer. */
export function jsonBytes(
  value: unknown,
  { room = 0, take = Buffer.allocUnsafeSlow, hash }: JsonBytesOptions = {},
): Buffer {
  const parts: Array<Part | RawPart> = [];
  let text: string;
  met = parts;
  try {
    text = JSON.stringify(marked(value, parts));
  } finally {
    met = null;
  }
  // The text between the marks encoded one piece after the other into the scratch, each constant's digest after its
  // piece (the digest input is then the scratch's first bytes), then every piece, encoded text and constant bytes,
  // copied once into the answer.
  let rawLength = 0;
  for (const part of parts) if ('text' in part) rawLength += part.text.length;
  const needed = (text.length + rawLength) * 3 + parts.length * (DIGEST_LENGTH + 1);
  if (needed > scratch.length) scratch = Buffer.allocUnsafeSlow(needed);
  const pieces: Buffer[] = [];
  let from = 0;
  let at = 0;
  const write = (piece: string) => {
    const length = scratch.write(piece, at);
    pieces.push(scratch.subarray(at, at + length));
    at += length;
  };
  const encode = (to: number) => write(from === 0 && to === text.length ? text : text.slice(from, to));
  if (parts.length > 0) {
    for (const m of text.matchAll(MARKED)) {
      encode(m.index);
      const part = parts[Number(m[1])]!;
      from = m.index + m[0].length;
      // Raw text is the answer's own text: encoded and hashed with the rest.
      if ('text' in part) {
        write(part.text);
        continue;
      }
      pieces.push(part.bytes);
      scratch[at] = 0xff;
      at += 1 + part.digest.copy(scratch, at + 1);
    }
  }
  encode(text.length);
  hash?.update(scratch.subarray(0, at));
  let length = 0;
  for (const piece of pieces) length += piece.length;
  const bytes = room > 0 ? take(length + room) : Buffer.allocUnsafe(length);
  let offset = 0;
  for (const piece of pieces) offset += piece.copy(bytes, offset);
  return room > 0 ? bytes.subarray(0, length) : bytes;
}
