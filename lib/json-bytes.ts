import { randomUUID } from 'node:crypto';

/**
 * JSON in UTF-8, as answers are sent, hashed and kept. Most of some answers is the same for every request (legal
 * values, sources, limits: 70 % of a `taxe_amenagement` answer); `constant` marks such a part so that it is
 * serialised and encoded once, and `jsonBytes` copies its bytes into each answer instead of serialising and encoding
 * it again (on this machine both cost about 4 µs per KB of French text).
 */

// Encoding a long string into a buffer surely large enough and copying the bytes out costs half of what Buffer.from
// does (which measures the UTF-8 length in one pass, then encodes in another).
let scratch = Buffer.allocUnsafeSlow(64 * 1024);

// The bytes of every constant, by the constant.
const bytesOf = new WeakMap<object, Buffer>();
// The constant parts met by the serialisation under way (null outside jsonBytes: a constant then serialises as the
// plain value it is, wherever else it goes: the Hub's prompts, MCP, logs).
let met: Buffer[] | null = null;
// A constant stands in the JSON text as a string no answer can otherwise hold: a NUL and this process's own nonce.
const MARK = `\u0000${randomUUID()}:`;
const MARKED = new RegExp(`"\\\\u0000${MARK.slice(1)}(\\d+)"`, 'g');

/**
 * Marks `value` (an object or array, never changed afterwards: it is frozen) as a constant part of answers: its JSON
 * bytes are made now, once. The value stays a plain value for every other use.
 */
export function constant<T extends object>(value: T): T {
  bytesOf.set(value, Buffer.from(JSON.stringify(value)));
  Object.defineProperty(value, 'toJSON', {
    value(this: T) {
      if (!met) return this;
      met.push(bytesOf.get(this)!);
      return MARK + (met.length - 1);
    },
  });
  return deepFreeze(value);
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
 * has none). Constants sit there in most answers; JSON.stringify then meets no toJSON, which would send the whole
 * answer down its slow path (a deeper constant still marks itself through its toJSON).
 */
function marked(value: unknown, parts: Buffer[]): unknown {
  if (typeof value !== 'object' || value === null || Object.getPrototypeOf(value) !== Object.prototype) return value;
  let copy: Record<string, unknown> | null = null;
  for (const key in value) {
    const field = (value as Record<string, unknown>)[key];
    const bytes = typeof field === 'object' && field !== null ? bytesOf.get(field) : undefined;
    if (bytes === undefined) continue;
    copy ??= { ...value };
    copy[key] = MARK + parts.length;
    parts.push(bytes);
  }
  return copy ?? value;
}

/**
 * `value` as JSON in UTF-8, the bytes of its constant parts copied in, in one new buffer. With `room`, the buffer is
 * the answer's own (from `take`, never a slice of Node's shared pool) and has at least that many bytes free past the
 * JSON, in the same memory, for the caller to finish the answer in place: every buffer made per answer weighs on the
 * garbage collector (V8 starts a full collection for each 64 MB of them), so an answer is better made in one than
 * copied into another.
 */
export function jsonBytes(value: unknown, room = 0, take: (size: number) => Buffer = Buffer.allocUnsafeSlow): Buffer {
  const parts: Buffer[] = [];
  let text: string;
  met = parts;
  try {
    text = JSON.stringify(marked(value, parts));
  } finally {
    met = null;
  }
  // The text between the marks encoded one piece after the other into the scratch, then every piece, encoded text
  // and constant bytes, copied once into the answer.
  if (text.length * 3 > scratch.length) scratch = Buffer.allocUnsafeSlow(text.length * 3);
  const pieces: Buffer[] = [];
  let from = 0;
  let at = 0;
  const encode = (to: number) => {
    const length = scratch.write(from === 0 && to === text.length ? text : text.slice(from, to), at);
    pieces.push(scratch.subarray(at, at + length));
    at += length;
  };
  if (parts.length > 0) {
    for (const m of text.matchAll(MARKED)) {
      encode(m.index);
      pieces.push(parts[Number(m[1])]!);
      from = m.index + m[0].length;
    }
  }
  encode(text.length);
  let length = 0;
  for (const piece of pieces) length += piece.length;
  const bytes = room > 0 ? take(length + room) : Buffer.allocUnsafe(length);
  let offset = 0;
  for (const piece of pieces) offset += piece.copy(bytes, offset);
  return room > 0 ? bytes.subarray(0, length) : bytes;
}
