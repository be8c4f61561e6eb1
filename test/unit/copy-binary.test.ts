import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../db/client.ts';
import { copyFrom } from '../../lib/pg-copy.ts';
import { COPY_BINARY_HEADER, COPY_BINARY_TRAILER, CopyBinaryWriter } from '../../lib/copy-binary.ts';
import { createTestDb } from '../support/db.ts';

let db: Db;
let drop: () => Promise<void>;

beforeAll(async () => {
  ({ db, drop } = await createTestDb());
});
afterAll(async () => drop());

describe('COPY in binary format', () => {
  it('gives PostgreSQL back every value as written', async () => {
    const rows: Array<[string | null, number | null, number | null, number | null, string, boolean, string[]]> = [
      ['Allée des Châtaigniers « 𝄞 »', 0, 1, 0.1 + 0.2, '2021-01-06', true, ['33001000AB0001', '33001000AB0002']],
      [null, 0.05, -32_768, -1.5e-7, '1999-12-31', false, []],
      ['tab\tet\nligne', 12_345_678.9, 32_767, 45.014097, '2000-01-01', true, ['é']],
      ['', 9_999_999_999_999.99, null, null, '2024-02-29', false, ['']],
      ['négatif', -1_234.56, 7, 1e300, '2025-12-31', true, ['a', 'b', 'c']],
      ['nul', null, 0, 0, '2018-01-01', false, []],
    ];
    const client = await db.connect();
    try {
      await client.query(
        `CREATE TEMP TABLE binaire (t text, n numeric(15, 2), s smallint, f double precision, d date, b boolean,
           a text[])`,
      );
      const w = new CopyBinaryWriter(16);
      w.raw(COPY_BINARY_HEADER);
      for (const [t, n, s, f, d, b, a] of rows) {
        w.row(7);
        w.text(t);
        w.numeric(n, 2);
        w.int2(s);
        w.float8(f);
        w.date(d);
        w.bool(b);
        w.textArray(a);
      }
      w.raw(COPY_BINARY_TRAILER);
      expect(await copyFrom(client, 'COPY binaire FROM STDIN WITH (FORMAT binary)', [Buffer.from(w.take())])).toBe(6);
      const { rows: back } = await client.query(
        `SELECT t, n::text AS n, s, f, to_char(d, 'YYYY-MM-DD') AS d, b, a FROM binaire`,
      );
      expect(back).toEqual(
        rows.map(([t, n, s, f, d, b, a]) => ({ t, n: n === null ? null : n.toFixed(2), s, f, d, b, a })),
      );
    } finally {
      client.release();
    }
  });
});
