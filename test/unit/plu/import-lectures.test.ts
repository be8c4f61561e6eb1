import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../../db/client.ts';
import { importLecturesPlu } from '../../../domain/plu/import-lectures.ts';
import { reglementsPart } from '../../../domain/sandbox/parts/reglements.ts';
import { LECTURE_VERSION } from '../../../domain/urbanisme/lectures.ts';
import { createTestDb } from '../../support/db.ts';

// Readings put in lire_plu's cache from a folder: every quotation checked against the PDF's text, as a model's are.

let t: Awaited<ReturnType<typeof createTestDb>>;
let db: Db;
let dir: string;
let lignes: Array<Record<string, any>>;

beforeAll(async () => {
  t = await createTestDb();
  db = t.db;
  dir = await mkdtemp(path.join(tmpdir(), 'svc-lectures-'));
  // The demonstration's documents of Latresne, and its readings.
  for (const [nom, contenu] of await reglementsPart.fichiers(0, [])) {
    await writeFile(path.join(dir, path.basename(nom)), contenu);
  }
  const jsonl = await readFile(path.join(dir, 'lectures-plu.jsonl'), 'utf8');
  lignes = jsonl
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
}, 60_000);
afterAll(async () => {
  await t?.drop();
  await rm(dir, { recursive: true, force: true });
});

const ecrire = (l: Array<Record<string, any> | string>) =>
  writeFile(
    path.join(dir, 'lectures-plu.jsonl'),
    l.map((x) => (typeof x === 'string' ? x : JSON.stringify(x))).join('\n'),
  );

describe('importLecturesPlu', () => {
  it('keeps a quotation the page holds, discards and counts one it does not, and rejects what it cannot check', async () => {
    const ua = lignes.find((l) => l.zone === 'UA' && l.fichier.startsWith('33234'))!;
    const inventee = {
      ...ua.regles[0],
      citation: 'Les constructions sont implantées à 12 mètres au moins des limites séparatives.',
    };
    await ecrire([
      { ...ua, regles: [...ua.regles, inventee] },
      { ...ua, zone: 'UZ' },
      { ...ua, fichier: '../ailleurs.pdf' },
      { ...ua, fichier: 'absent.pdf' },
      { ...ua, url: 'http://exemple.fr/r.pdf' },
      '{ pas du json',
    ]);
    const r = await importLecturesPlu(db, dir);
    expect(r).toMatchObject({ lus: 6, gardes: 1 });
    expect(r.rejetes.map((x) => [x.ligne, x.motif.split(' : ')[0]])).toEqual([
      [2, 'zone UZ'],
      [3, 'fichier'],
      [4, 'absent.pdf'],
      [5, 'url'],
      [6, 'JSON invalide'],
    ]);
    expect(r.details).toContain('citations écartées (introuvables dans le texte du PDF) : 1');
    const { rows } = await db.query(
      `SELECT l.contenu, l.modele FROM lectures_plu l JOIN reglements_pdf p ON p.sha256 = l.document_sha256
        WHERE p.url = $1 AND l.zone = 'UA' AND l.version = $2`,
      [ua.url, LECTURE_VERSION],
    );
    expect(rows[0].modele).toBe('demonstration');
    expect(rows[0].contenu.citations_ecartees).toBe(1);
    expect(rows[0].contenu.regles.map((x: { citation: string }) => x.citation)).toEqual(
      expect.arrayContaining(ua.regles.map((x: { citation: string }) => x.citation)),
    );
    expect(rows[0].contenu.regles.map((x: { citation: string }) => x.citation)).not.toContain(inventee.citation);
  });

  it('changes nothing when the same folder is imported again', async () => {
    await ecrire(lignes);
    await importLecturesPlu(db, dir);
    const avant = (await db.query('SELECT row_to_json(l)::text AS r FROM lectures_plu l ORDER BY 1')).rows;
    const r = await importLecturesPlu(db, dir);
    expect(r.gardes).toBe(lignes.length);
    expect((await db.query('SELECT row_to_json(l)::text AS r FROM lectures_plu l ORDER BY 1')).rows).toEqual(avant);
  });
});
