/**
 * Rows in PostgreSQL's binary COPY format (the documentation of COPY, "Binary Format"): PostgreSQL takes the values
 * as they are, without parsing text (numbers, dates, arrays), and the writer formats no number. Measured on the DVF
 * rows (bench/RESULTS.md), a third of PostgreSQL's COPY time. Values go into one growing buffer of its own (not from
 * Node's shared pool), which can change threads without a copy.
 */

/** The file header: signature, flags, header extension length. */
export const COPY_BINARY_HEADER = Buffer.concat([Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.alloc(8)]);
/** The file trailer: a field count of -1. */
export const COPY_BINARY_TRAILER = Buffer.from([0xff, 0xff]);

const TEXT_OID = 25;
/** Days from 1970-01-01 to 2000-01-01, PostgreSQL's date origin. */
const DAYS_TO_2000 = 10_957;

/** Strings up to this length are copied by hand when ASCII: Buffer.write costs a call to native code per value. */
const ASCII_A_LA_MAIN = 32;

/**
 * Numbers are written through a DataView, which the compiler turns into plain stores: Buffer's writeInt32BE and the
 * like check their arguments on every call (measured: a DataView store takes a third of their time).
 */
export class CopyBinaryWriter {
  bytes: Buffer;
  private view: DataView;
  end = 0;

  constructor(size = 1 << 16) {
    this.bytes = Buffer.allocUnsafeSlow(size);
    this.view = new DataView(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength);
  }

  /** Room for `n` more bytes. */
  reserve(n: number): void {
    if (this.end + n <= this.bytes.length) return;
    const larger = Buffer.allocUnsafeSlow(Math.max(this.bytes.length * 2, this.end + n));
    this.bytes.copy(larger, 0, 0, this.end);
    this.bytes = larger;
    this.view = new DataView(larger.buffer, larger.byteOffset, larger.byteLength);
  }

  /** Bytes already encoded (a header, a trailer, fields encoded elsewhere). */
  raw(bytes: Uint8Array): void {
    this.reserve(bytes.byteLength);
    this.bytes.set(bytes, this.end);
    this.end += bytes.byteLength;
  }

  /** The start of a row of `count` fields. */
  row(count: number): void {
    this.reserve(2);
    this.int16(count);
  }

  null(): void {
    this.reserve(4);
    this.int32(-1);
  }

  text(value: string | null): void {
    if (value === null) return this.null();
    // UTF-8 takes at most 3 bytes per UTF-16 unit.
    this.reserve(4 + value.length * 3);
    const start = this.end + 4;
    let written = 0;
    if (value.length <= ASCII_A_LA_MAIN) {
      for (; written < value.length; written++) {
        const c = value.charCodeAt(written);
        if (c > 0x7f) break;
        this.bytes[start + written] = c;
      }
    }
    if (written < value.length) written += this.bytes.write(value.slice(written), start + written);
    this.int32(written);
    this.end = start + written;
  }

  int2(value: number | null): void {
    if (value === null) return this.null();
    this.reserve(6);
    this.int32(2);
    this.int16(value);
  }

  int4(value: number | null): void {
    if (value === null) return this.null();
    this.reserve(8);
    this.int32(4);
    this.int32(value);
  }

  float8(value: number | null): void {
    if (value === null) return this.null();
    this.reserve(12);
    this.int32(8);
    this.view.setFloat64(this.end, value);
    this.end += 8;
  }

  bool(value: boolean): void {
    this.reserve(5);
    this.int32(1);
    this.bytes[this.end++] = value ? 1 : 0;
  }

  /** A date given as YYYY-MM-DD. */
  date(iso: string): void {
    const days =
      Date.UTC(Number(iso.slice(0, 4)), Number(iso.slice(5, 7)) - 1, Number(iso.slice(8, 10))) / 86_400_000 -
      DAYS_TO_2000;
    this.reserve(8);
    this.int32(4);
    this.int32(days);
  }

  /**
   * A numeric of `scale` decimals (at most 4), rounded: base-10000 digits, the integer part's first, then one for
   * the decimals.
   */
  numeric(value: number | null, scale: number): void {
    if (value === null) return this.null();
    const unit = 10 ** scale;
    const scaled = Math.round(Math.abs(value) * unit);
    let integer = Math.floor(scaled / unit);
    const fraction = scaled % unit;
    const digits: number[] = [];
    while (integer > 0) {
      digits.unshift(integer % 10_000);
      integer = Math.floor(integer / 10_000);
    }
    const weight = digits.length - 1;
    if (fraction > 0) digits.push(fraction * 10 ** (4 - scale));
    this.reserve(12 + digits.length * 2);
    this.int32(8 + digits.length * 2);
    this.int16(digits.length);
    this.int16(digits.length === 0 ? 0 : weight);
    this.int16(value < 0 && scaled > 0 ? 0x4000 : 0);
    this.int16(scale);
    for (const digit of digits) this.int16(digit);
  }

  /** A one-dimension text[] without nulls. */
  textArray(values: string[]): void {
    this.reserve(4);
    const start = this.end;
    this.end += 4;
    this.reserve(values.length === 0 ? 12 : 20);
    this.int32(values.length === 0 ? 0 : 1);
    this.int32(0);
    this.int32(TEXT_OID);
    if (values.length > 0) {
      this.int32(values.length);
      this.int32(1);
      for (const value of values) this.text(value);
    }
    this.view.setInt32(start, this.end - start - 4);
  }

  /** Big-endian integers at the end, room reserved. */
  private int16(value: number): void {
    this.view.setInt16(this.end, value);
    this.end += 2;
  }

  private int32(value: number): void {
    this.view.setInt32(this.end, value);
    this.end += 4;
  }

  /** What was written, as a view of the same memory. */
  take(): Uint8Array {
    return this.bytes.subarray(0, this.end);
  }
}
