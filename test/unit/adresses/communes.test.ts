import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../../db/client.ts';
import { communesSource, importCommunes } from '../../../domain/adresses/import-communes.ts';
import { ImportError, type ImportReport } from '../../../domain/import/source.ts';
import { createTestDb } from '../../support/db.ts';

let db: Db;
let drop: () => Promise<void>;
let first: ImportReport;

beforeAll(async () => {
  ({ db, drop } = await createTestDb());
  first = await communesSource.run(db, '-', { sandbox: false, onProgress: () => {} });
}, 120_000);

afterAll(async () => drop());

async function snapshot(table: string, dataset = 'live') {
  const { rows } = await db.query(`SELECT xmin::text AS version, * FROM ${table} WHERE dataset = $1 ORDER BY 3`, [
    dataset,
  ]);
  return rows;
}

describe('the communes importer', () => {
  it('imports current communes and municipal arrondissements with their postal codes, EPCI, département, région', async () => {
    expect(first.lus).toBeGreaterThan(34_000);
    expect(first.gardes).toBe(first.lus);
    expect(first.rejetes).toEqual([]);
    expect(first.source).toMatch(/^@etalab\/decoupage-administratif \d.* \+ codes-postaux \d/);
    const latresne = (await db.query(`SELECT * FROM communes WHERE dataset = 'live' AND insee = '33234'`)).rows[0];
    expect(latresne).toMatchObject({
      nom: 'Latresne',
      type: 'commune-actuelle',
      departement: '33',
      region: '75',
      epci: '243301439',
      commune_parente: null,
      codes_postaux: ['33360'],
      lat: null,
      lon: null,
    });
    expect(latresne.population).toBeGreaterThan(3000);
    const epci = (await db.query(`SELECT * FROM epci WHERE dataset = 'live' AND siren = '243301439'`)).rows[0];
    expect(epci).toMatchObject({ nom: "CC des Portes de l'Entre-Deux-Mers", nature: 'CC' });
    expect(epci.membres).toContain('33234');
    expect(epci.membres).toEqual([...epci.membres].sort());

    const paris11 = (await db.query(`SELECT * FROM communes WHERE dataset = 'live' AND insee = '75111'`)).rows[0];
    expect(paris11).toMatchObject({
      nom: 'Paris 11e Arrondissement',
      type: 'arrondissement-municipal',
      commune_parente: '75056',
      codes_postaux: ['75011'],
      departement: '75',
      region: '11',
    });
    // The arrondissement belongs to the EPCI of Paris (Métropole du Grand Paris).
    const paris = (await db.query(`SELECT epci FROM communes WHERE dataset = 'live' AND insee = '75056'`)).rows[0];
    expect(paris11.epci).toBe(paris.epci);
    expect(paris.epci).not.toBeNull();

    // Delegated communes are not communes of their own.
    const types = await db.query(`SELECT DISTINCT type FROM communes WHERE dataset = 'live' ORDER BY type`);
    expect(types.rows.map((r) => r.type)).toEqual(['arrondissement-municipal', 'commune-actuelle']);
    const gironde = await db.query(`SELECT * FROM departements WHERE dataset = 'live' AND code = '33'`);
    expect(gironde.rows[0]).toMatchObject({ nom: 'Gironde', region: '75' });
    const region = await db.query(`SELECT * FROM regions WHERE dataset = 'live' AND code = '75'`);
    expect(region.rows[0]).toMatchObject({ nom: 'Nouvelle-Aquitaine' });
    expect(first.details.join('\n')).toMatch(
      /communes +: \d+ \(\d+ ajoutées, 0 modifiées, 0 inchangées, 0 supprimées\)/,
    );
  });

  it('completes the postal codes of the split with those of codes-postaux', async () => {
    // 12011: 12120 in the administrative split, 12410 too in codes-postaux (a distribution office of the commune).
    const { rows } = await db.query(`SELECT codes_postaux FROM communes WHERE dataset = 'live' AND insee = '12011'`);
    expect(rows[0].codes_postaux).toEqual(['12120', '12410']);
  });

  it('changes nothing when imported again', async () => {
    const before = await Promise.all(['communes', 'epci', 'departements', 'regions'].map((t) => snapshot(t)));
    const again = await importCommunes(db, '@etalab/decoupage-administratif');
    expect(
      again.details
        .filter((d) => / ajoutées/.test(d))
        .every((d) => /\(0 ajoutées, 0 modifiées, \d+ inchangées, 0 supprimées\)/.test(d)),
    ).toBe(true);
    const after = await Promise.all(['communes', 'epci', 'departements', 'regions'].map((t) => snapshot(t)));
    expect(after).toEqual(before);
  });

  it('writes the frozen communes only into the sandbox', async () => {
    const report = await importCommunes(db, '-', { dataset: 'sandbox' });
    expect(report.gardes).toBe(5);
    const communes = await snapshot('communes', 'sandbox');
    expect(communes.map((c) => c.insee).sort()).toEqual(['33001', '33234', '59350', '67482', '75111']);
    const epci = await snapshot('epci', 'sandbox');
    expect(epci.map((e) => e.siren)).toContain('243301439');
    expect(epci.length).toBeLessThanOrEqual(5);
  });

  it('deletes what the source no longer has, and reads a data folder of the package format', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'communes-'));
    try {
      await writeFile(
        path.join(dir, 'communes.json'),
        JSON.stringify([
          {
            code: '33234',
            nom: 'Latresne',
            type: 'commune-actuelle',
            departement: '33',
            region: '75',
            codesPostaux: ['33360'],
            population: 3800,
          },
          { code: '3323X', nom: 'Mauvais', type: 'commune-actuelle', departement: '33', region: '75' },
        ]),
      );
      await writeFile(path.join(dir, 'epci.json'), '[]');
      await writeFile(
        path.join(dir, 'departements.json'),
        JSON.stringify([{ code: '33', nom: 'Gironde', region: '75' }]),
      );
      await writeFile(path.join(dir, 'regions.json'), JSON.stringify([{ code: '75', nom: 'Nouvelle-Aquitaine' }]));
      const report = await importCommunes(db, dir);
      expect(report.rejetes).toEqual([{ ligne: 2, motif: 'code INSEE invalide (3323X)' }]);
      expect(report.lus - report.gardes).toBe(1);
      const communes = await snapshot('communes');
      expect(communes.map((c) => [c.insee, c.population, c.epci])).toEqual([['33234', 3800, null]]);
      expect(await snapshot('epci')).toEqual([]);
      expect(report.details.join('\n')).toMatch(/EPCI +: 0 \(0 ajoutées, 0 modifiées, 0 inchangées, \d+ supprimées\)/);
      await expect(importCommunes(db, path.join(dir, 'absent'))).rejects.toThrow(ImportError);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
