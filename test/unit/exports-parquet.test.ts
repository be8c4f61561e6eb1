import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { avecParametres, ecrireParquet, type ColonneFichier } from '../../lib/parquet.ts';
import { createTestDb } from '../support/db.ts';

// lib/parquet.ts: rows of PostgreSQL written by DuckDB, read back by DuckDB with the same values, types and count.

let testDb: Awaited<ReturnType<typeof createTestDb>>;
let dir: string;

const COLONNES: ColonneFichier[] = [
  { nom: 'texte', type: 'texte' },
  { nom: 'entier', type: 'entier' },
  { nom: 'nombre', type: 'nombre' },
  { nom: 'booleen', type: 'booleen' },
  { nom: 'jour', type: 'date' },
  { nom: 'instant', type: 'horodatage' },
  { nom: 'donnees', type: 'json' },
];

beforeAll(async () => {
  testDb = await createTestDb('001_platform.sql');
  dir = await mkdtemp(path.join(tmpdir(), 'svc-parquet-test-'));
  await testDb.db
    .query(`CREATE TABLE essai (id int PRIMARY KEY, texte text, entier bigint, nombre numeric, booleen boolean,
    jour date, instant timestamptz, donnees jsonb)`);
  await testDb.db.query(`INSERT INTO essai VALUES
    (1, '01001', 9007199254740993, 1.5, true, '2024-02-29', '2024-01-02T10:00:00+01', '{"a": "x,\\"y"}'),
    (2, '', NULL, NULL, false, NULL, NULL, NULL),
    (3, NULL, -5, 0.1, NULL, '1900-01-01', '2000-01-01T00:00:00Z', '[1, 2]'),
    (4, E'deux\\nlignes, "guillemets" et \\\\', 0, 1e300, true, '2099-12-31', NULL, 'null')`);
  // Enough rows for several row groups and several COPY batches.
  await testDb.db.query(`INSERT INTO essai SELECT i, 'ligne ' || i, i, i / 7.0, i % 2 = 0, date '2020-01-01' + i % 1000,
    timestamptz '2020-01-01' + i * interval '1 minute', jsonb_build_object('i', i) FROM generate_series(5, 200000) i`);
});

afterAll(async () => {
  await testDb?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function relire(fichier: string, lecture: string, sql: string) {
  const instance = await DuckDBInstance.create(':memory:');
  const duck = await instance.connect();
  try {
    return (await duck.runAndReadAll(sql.replace('$F', `${lecture}('${fichier}')`))).getRowObjectsJson();
  } finally {
    duck.closeSync();
    instance.closeSync();
  }
}

const SELECT = 'SELECT texte, entier, nombre, booleen, jour, instant, donnees FROM essai WHERE id >= $1 ORDER BY id';

describe('ecrireParquet', () => {
  it('writes Parquet with the declared types, and DuckDB reads back the same rows', async () => {
    const fichier = path.join(dir, 'essai.parquet');
    const ecrit = await ecrireParquet({ db: testDb.db, sql: SELECT, params: [1], colonnes: COLONNES, fichier });
    expect(ecrit.lignes).toBe(200_000);
    const bytes = await readFile(fichier);
    expect(ecrit.taille_octets).toBe(bytes.byteLength);
    expect(ecrit.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));

    const types = await relire(fichier, 'read_parquet', 'DESCRIBE SELECT * FROM $F');
    expect(types.map((t) => `${t.column_name}:${t.column_type}`)).toEqual([
      'texte:VARCHAR',
      'entier:BIGINT',
      'nombre:DOUBLE',
      'booleen:BOOLEAN',
      'jour:DATE',
      'instant:TIMESTAMP WITH TIME ZONE',
      'donnees:JSON',
    ]);
    const [compte] = await relire(fichier, 'read_parquet', 'SELECT count(*) AS n, sum(entier) AS s FROM $F');
    expect(Number(compte!.n)).toBe(200_000);
    // The first four rows as written: the empty text is not null, the null text is; 2^53 + 1 is exact; the instant
    // is in UTC; JSON null is not SQL null.
    const premieres = await relire(
      fichier,
      'read_parquet',
      "SELECT texte, entier::VARCHAR AS entier, nombre, booleen, jour::VARCHAR AS jour, strftime(instant AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S') AS instant, donnees::VARCHAR AS donnees FROM $F LIMIT 4",
    );
    expect(premieres).toEqual([
      {
        texte: '01001',
        entier: '9007199254740993',
        nombre: 1.5,
        booleen: true,
        jour: '2024-02-29',
        instant: '2024-01-02T09:00:00',
        donnees: '{"a": "x,\\"y"}',
      },
      { texte: '', entier: null, nombre: null, booleen: false, jour: null, instant: null, donnees: null },
      {
        texte: null,
        entier: '-5',
        nombre: 0.1,
        booleen: null,
        jour: '1900-01-01',
        instant: '2000-01-01T00:00:00',
        donnees: '[1, 2]',
      },
      {
        texte: 'deux\nlignes, "guillemets" et \\',
        entier: '0',
        nombre: 1e300,
        booleen: true,
        jour: '2099-12-31',
        instant: null,
        donnees: 'null',
      },
    ]);
    const derniere = await relire(fichier, 'read_parquet', 'SELECT texte, nombre FROM $F WHERE entier = 199999');
    expect(derniere).toEqual([{ texte: 'ligne 199999', nombre: 199999 / 7 }]);
  });

  it('writes csv.gz with a header, the same count, and keeps a parameter with quotes out of the SQL text', async () => {
    const fichier = path.join(dir, 'essai.csv.gz');
    const ecrit = await ecrireParquet({
      db: testDb.db,
      sql: 'SELECT texte, entier, nombre, booleen, jour, instant, donnees FROM essai WHERE texte = $1 OR id = $2',
      params: ["l'x'); DROP TABLE essai; --", 3],
      colonnes: COLONNES,
      fichier,
      format: 'csv.gz',
    });
    expect(ecrit.lignes).toBe(1);
    const rows = await relire(fichier, 'read_csv', 'SELECT entier, jour::VARCHAR AS jour FROM $F');
    expect(rows).toEqual([{ entier: '-5', jour: '1900-01-01' }]);
    const { rows: restantes } = await testDb.db.query('SELECT count(*)::int AS n FROM essai');
    expect(restantes[0].n).toBe(200_000);
  });

  it('writes a file of no row, and refuses a column name that is not an identifier', async () => {
    const vide = await ecrireParquet({
      db: testDb.db,
      sql: SELECT,
      params: [1_000_000],
      colonnes: COLONNES,
      fichier: path.join(dir, 'vide.parquet'),
    });
    expect(vide.lignes).toBe(0);
    const [n] = await relire(path.join(dir, 'vide.parquet'), 'read_parquet', 'SELECT count(*) AS n FROM $F');
    expect(Number(n!.n)).toBe(0);
    await expect(
      ecrireParquet({
        db: testDb.db,
        sql: 'SELECT 1',
        colonnes: [{ nom: 'a"; DROP', type: 'entier' }],
        fichier: path.join(dir, 'x.parquet'),
      }),
    ).rejects.toThrow(/Nom de colonne refusé/);
  });

  it('quotes parameters as literals PostgreSQL reads back as the same values', async () => {
    const sql = avecParametres('SELECT $1::text AS a, $2::text AS b, $10::text[] AS c, $4::int + $5 AS d', [
      "a'b\\",
      null,
      1,
      2,
      3,
      4,
      5,
      6,
      7,
      ['x', 'y"z', null],
    ]);
    const { rows } = await testDb.db.query(sql);
    expect(rows).toEqual([{ a: "a'b\\", b: null, c: ['x', 'y"z', null], d: 5 }]);
    expect(() => avecParametres('SELECT $3', [1])).toThrow(/absent/);
  });
});
