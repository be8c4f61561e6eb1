import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../../db/client.ts';
import { importCadastre, parcelleDe } from '../../../domain/cadastre/import.ts';
import { ImportError } from '../../../domain/import/source.ts';
import { createTestDb } from '../../support/db.ts';

const EPINAY = path.resolve('../shared/data/cadastre/cadastre-91216-parcelles.json.gz');
const hasCadastre = existsSync(EPINAY);
const SKIP = hasCadastre ? '' : ' (skipped: ../shared/data/cadastre absent)';

let db: Db;
let drop: () => Promise<void>;
let dir: string;

beforeAll(async () => {
  ({ db, drop } = await createTestDb());
  dir = await mkdtemp(path.join(tmpdir(), 'cadastre-'));
});

afterAll(async () => {
  await drop();
  await rm(dir, { recursive: true, force: true });
});

function square(lon: number, lat: number, half: number): number[][] {
  return [
    [lon - half, lat - half],
    [lon + half, lat - half],
    [lon + half, lat + half],
    [lon - half, lat + half],
    [lon - half, lat - half],
  ];
}

async function collection(nom: string, features: object[], gzip = false): Promise<string> {
  const fichier = path.join(dir, nom);
  const texte = JSON.stringify({ type: 'FeatureCollection', features });
  await writeFile(fichier, gzip ? gzipSync(texte) : texte);
  return fichier;
}

async function parcelles(commune: string): Promise<string[]> {
  const { rows } = await db.query<{ r: string }>(
    `SELECT row_to_json(t)::text AS r FROM cadastre_parcelles t WHERE commune = $1 ORDER BY id`,
    [commune],
  );
  return rows.map((r) => r.r);
}

describe('Etalab parcels', () => {
  it.skipIf(!hasCadastre)(`imports the parcels of Épinay-sur-Orge, gzipped, streamed${SKIP}`, async () => {
    const report = await importCadastre(db, EPINAY);
    expect(report).toMatchObject({ lus: 4241, gardes: 4241, rejetes: [] });
    expect(report.details[0]).toBe(
      'cadastre-91216-parcelles.json.gz : parcelles 4241 (4241 ajoutées, 0 modifiées, 0 inchangées, 0 supprimées)',
    );
    const { rows } = await db.query(
      `SELECT id, commune, prefixe, section, numero, contenance, arpente, to_char(cree_le, 'YYYY-MM-DD') AS cree_le,
              geometrie ->> 'type' AS type, bbox_ymin, bbox_xmin
         FROM cadastre_parcelles WHERE id IN ('91216000AB0037', '91216000AC0389') ORDER BY id`,
    );
    // `numero` written 37 in the file: kept on four digits, as in the id. AC0389 has no `contenance`: kept without.
    expect(rows[0]).toMatchObject({
      id: '91216000AB0037',
      commune: '91216',
      prefixe: '000',
      section: 'AB',
      numero: '0037',
      type: 'Polygon',
    });
    expect(rows[0].contenance).toBeGreaterThan(0);
    expect(rows[1]).toMatchObject({
      id: '91216000AC0389',
      numero: '0389',
      contenance: null,
      arpente: true,
      cree_le: '2017-04-05',
    });
    // Essonne, south of Paris: about 48.67 N 2.32 E.
    expect(rows[0].bbox_ymin).toBeCloseTo(48.68, 1);
    expect(rows[0].bbox_xmin).toBeCloseTo(2.33, 1);
    const { rows: n } = await db.query(
      `SELECT count(*)::int AS n, count(contenance)::int AS c FROM cadastre_parcelles`,
    );
    expect(n[0]).toEqual({ n: 4241, c: 4240 });
  });

  it.skipIf(!hasCadastre)(`changes nothing when the same file is imported again${SKIP}`, async () => {
    const avant = await parcelles('91216');
    const report = await importCadastre(db, EPINAY);
    expect(report.details[0]).toBe(
      'cadastre-91216-parcelles.json.gz : parcelles 4241 (0 ajoutées, 0 modifiées, 4241 inchangées, 0 supprimées)',
    );
    expect(await parcelles('91216')).toEqual(avant);
  });

  it('composes the id from its parts, pads section and number, and rejects what names no parcel', async () => {
    expect(parcelleDe({ commune: '33234', prefixe: '0', section: 'A', numero: 12 })).toEqual({
      id: '33234000' + '0A0012',
      commune: '33234',
      prefixe: '000',
      section: '0A',
      numero: '0012',
    });
    const fichier = await collection('cadastre-33234-parcelles.json', [
      {
        type: 'Feature',
        properties: { commune: '33234', section: 'AB', numero: '12', contenance: 410 },
        geometry: { type: 'Polygon', coordinates: [square(-0.49, 44.78, 0.0001)] },
      },
      {
        type: 'Feature',
        id: 'n’importe quoi',
        properties: {},
        geometry: { type: 'Polygon', coordinates: [square(-0.49, 44.78, 0.0001)] },
      },
      {
        type: 'Feature',
        properties: { id: '33234000AB0013' },
        geometry: {
          type: 'LineString',
          coordinates: [
            [-0.49, 44.78],
            [-0.48, 44.78],
          ],
        },
      },
      {
        type: 'Feature',
        properties: { id: '33234000AB0012' },
        geometry: { type: 'Polygon', coordinates: [square(-0.48, 44.78, 0.0001)] },
      },
    ]);
    const report = await importCadastre(db, fichier, { dataset: 'sandbox' });
    expect(report).toMatchObject({
      lus: 4,
      gardes: 1,
      rejetes: [
        { ligne: 2, motif: 'identifiant de parcelle invalide (N’IMPORTE QUOI)' },
        { ligne: 3, motif: 'géométrie LineString (surface attendue)' },
        { ligne: 4, motif: 'parcelle 33234000AB0012 déjà lue (objet 1)' },
      ],
    });
  });

  it('replaces the parcels of the communes a file holds', async () => {
    const parcelle = (numero: string, lon: number) => ({
      type: 'Feature',
      id: `33999000AB${numero}`,
      properties: {
        id: `33999000AB${numero}`,
        commune: '33999',
        prefixe: '000',
        section: 'AB',
        numero: String(Number(numero)),
      },
      geometry: { type: 'Polygon', coordinates: [square(lon, 45, 0.0001)] },
    });
    await importCadastre(
      db,
      await collection('cadastre-33999-parcelles.json.gz', [parcelle('0001', 1), parcelle('0002', 1.01)], true),
    );
    const report = await importCadastre(
      db,
      await collection('cadastre-33999-parcelles.json.gz', [parcelle('0001', 1.001)], true),
    );
    expect(report.details[0]).toBe(
      'cadastre-33999-parcelles.json.gz : parcelles 1 (0 ajoutées, 1 modifiées, 0 inchangées, 1 supprimées)',
    );
    expect((await parcelles('33999')).map((r) => JSON.parse(r).id)).toEqual(['33999000AB0001']);
  });
});

describe('Etalab buildings', () => {
  it('imports buildings keyed by outline per commune, and again without change', async () => {
    const batiment = (lon: number, type: string | number) => ({
      type: 'Feature',
      properties: { type, nom: null, commune: '33234', created: '2017-04-05', updated: '2024-01-15' },
      geometry: { type: 'Polygon', coordinates: [square(lon, 44.78, 0.00005)] },
    });
    const fichier = await collection(
      'cadastre-33234-batiments.json.gz',
      [batiment(-0.49, '01'), batiment(-0.489, 2)],
      true,
    );
    const premier = await importCadastre(db, fichier);
    expect(premier).toMatchObject({ lus: 2, gardes: 2, rejetes: [] });
    expect(premier.details[0]).toBe(
      'cadastre-33234-batiments.json.gz : bâtiments 2 (2 ajoutés, 0 modifiés, 0 inchangés, 0 supprimés)',
    );
    const { rows } = await db.query(`SELECT type, commune, aire_m2 FROM cadastre_batiments ORDER BY id`);
    expect(rows.map((r) => r.type)).toEqual(['01', '02']);
    expect(rows[0].aire_m2).toBeGreaterThan(50);
    const second = await importCadastre(db, fichier);
    expect(second.details[0]).toBe(
      'cadastre-33234-batiments.json.gz : bâtiments 2 (0 ajoutés, 0 modifiés, 2 inchangés, 0 supprimés)',
    );
  });

  it('refuses the other Etalab layers by name', async () => {
    const fichier = await collection('cadastre-33234-sections.json', []);
    await expect(importCadastre(db, fichier)).rejects.toBeInstanceOf(ImportError);
    await expect(importCadastre(db, fichier)).rejects.toThrow(/seules les parcelles et les bâtiments/);
  });
});
