import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ImportError } from '../../../domain/import/source.ts';
import { dateDe, importZonageAbc, zonageAbcSource } from '../../../domain/zonage-abc/import.ts';
import { zoneAbc, zoneAbcDe } from '../../../domain/zonage-abc/zone.ts';
import { createTestDb } from '../../support/db.ts';

const ZONAGE = path.resolve('../shared/data/zonage_abc/zonage-abc-juillet-2024.csv');
const hasZonage = existsSync(ZONAGE);
const SKIP = hasZonage ? '' : ' (skipped: ../shared/data/zonage_abc absent)';

let db: Awaited<ReturnType<typeof createTestDb>>;
let dir: string;

beforeAll(async () => {
  db = await createTestDb();
  dir = await mkdtemp(path.join(tmpdir(), 'zonage-abc-'));
});
afterAll(async () => {
  await db?.drop();
  await rm(dir, { recursive: true, force: true });
});
beforeEach(async () => {
  await db.db.query('DELETE FROM zonage_abc');
});

async function fichier(nom: string, texte: string, charset: 'latin1' | 'utf8' = 'latin1'): Promise<string> {
  const chemin = path.join(dir, nom);
  await mkdir(path.dirname(chemin), { recursive: true });
  await writeFile(chemin, Buffer.from(texte, charset));
  return chemin;
}

async function zones(): Promise<Array<[string, string, string]>> {
  const { rows } = await db.db.query<{ insee: string; zone: string; le: string }>(
    `SELECT insee, zone, to_char(en_vigueur_le, 'YYYY-MM-DD') AS le FROM zonage_abc ORDER BY le, insee`,
  );
  return rows.map((r) => [r.le, r.insee, r.zone]);
}

describe('the real national list (July 2024, Windows-1252)', () => {
  it.skipIf(!hasZonage)(`imports every commune with the zone the file gives it${SKIP}`, async () => {
    const report = await zonageAbcSource.run(db.db, ZONAGE, { sandbox: false, onProgress: () => {} });
    // Read by this test apart from the importer.
    const texte = new TextDecoder('windows-1252').decode(await readFile(ZONAGE));
    const [entete, ...lignes] = texte.split('\r\n').filter((l) => l !== '');
    expect(entete).toBe('CODGEO;REG;DEP;LIBGEO;Zone en vigueur depuis le 5 juillet 2024;Reclassement juillet 2024');
    const fichierZones = new Map(lignes.map((l) => l.split(';')).map((c) => [c[0], c]));
    expect(report).toMatchObject({ lus: lignes.length, gardes: lignes.length, rejetes: [] });
    const parZone = (z: string) => [...fichierZones.values()].filter((c) => c[4] === z).length;
    const reclassees = [...fichierZones.values()].filter((c) => c[5] === 'Oui').length;
    expect(report.details).toEqual([
      'édition : en vigueur depuis le 2024-07-05 (colonne « Zone en vigueur depuis le 5 juillet 2024 »)',
      `communes : ${lignes.length} (${lignes.length} ajoutés, 0 modifiés, 0 inchangés), 0 retirées`,
      `par zone : Abis ${parZone('Abis')}, A ${parZone('A')}, B1 ${parZone('B1')}, B2 ${parZone('B2')}, C ${parZone('C')}`,
      `reclassées par cette édition : ${reclassees}`,
    ]);
    const { rows } = await db.db.query<{ insee: string; zone: string; commune: string; reclassement: boolean }>(
      `SELECT insee, zone, commune, reclassement FROM zonage_abc WHERE dataset = 'live'`,
    );
    expect(rows).toHaveLength(fichierZones.size);
    for (const r of rows) {
      const c = fichierZones.get(r.insee)!;
      expect([r.zone, r.commune, r.reclassement], r.insee).toEqual([c[4], c[3], c[5] === 'Oui']);
    }
  });

  it.skipIf(!hasZonage)(
    `answers zoneAbc for communes of the file, an arrondissement by its commune${SKIP}`,
    async () => {
      await importZonageAbc(db.db, ZONAGE);
      const zone = async (insee: string) => (await zoneAbc(db.db, 'live', insee))?.zone;
      expect(await zone('33234')).toBe('B1');
      expect(await zone('33001')).toBe('C');
      expect(await zone('30014')).toBe('C');
      expect(await zone('2A004')).toBe('A');
      expect(await zoneAbc(db.db, 'live', '01001')).toEqual({
        insee: '01001',
        insee_zonage: '01001',
        commune: "L'Abergement-Clémenciat",
        zone: 'C',
        en_vigueur_le: '2024-07-05',
        reclassement: false,
      });
      expect(await zoneAbc(db.db, 'live', '75111')).toMatchObject({
        insee: '75111',
        insee_zonage: '75056',
        commune: 'Paris',
        zone: 'Abis',
      });
      expect(await zoneAbc(db.db, 'live', '99999')).toBeNull();
      expect(await zoneAbc(db.db, 'sandbox', '33234')).toBeNull();
    },
  );

  it.skipIf(!hasZonage)(`changes nothing when imported again${SKIP}`, async () => {
    await importZonageAbc(db.db, ZONAGE);
    const again = await importZonageAbc(db.db, ZONAGE);
    expect(again.details[1]).toMatch(/^communes : (\d+) \(0 ajoutés, 0 modifiés, \1 inchangés\), 0 retirées$/);
  });
});

const ENTETE_2023 =
  'CODGEO;LIBGEO;Zonage en vigueur au 1er octobre 2023;Reclassement éventuel à la demande de la commune';

describe('files as the real world writes them', () => {
  it('reads another edition’s header in UTF-8 with a byte order mark, CRLF, zones and codes as people write them', async () => {
    const chemin = await fichier(
      'zonage.csv',
      `\uFEFF${ENTETE_2023}\r\n1001;L'Abergement-Clémenciat;c;\r\n75056;Paris;A bis;\r\n33234;Latresne;Zone B1;Oui\r\n33001;Abzac;b2;Non\r\n`,
      'utf8',
    );
    const report = await importZonageAbc(db.db, chemin);
    expect(report).toMatchObject({ lus: 4, gardes: 4, rejetes: [] });
    expect(report.details[0]).toBe(
      'édition : en vigueur depuis le 2023-10-01 (colonne « Zonage en vigueur au 1er octobre 2023 »)',
    );
    expect(await zones()).toEqual([
      ['2023-10-01', '01001', 'C'],
      ['2023-10-01', '33001', 'B2'],
      ['2023-10-01', '33234', 'B1'],
      ['2023-10-01', '75056', 'Abis'],
    ]);
    expect(await zoneAbc(db.db, 'live', '01001')).toMatchObject({
      commune: "L'Abergement-Clémenciat",
      reclassement: null,
    });
    expect(await zoneAbc(db.db, 'live', '33234')).toMatchObject({ reclassement: true });
  });

  it('serves the latest edition that lists a commune, and keeps the earlier ones', async () => {
    await importZonageAbc(
      db.db,
      await fichier('a/zonage-2023.csv', `${ENTETE_2023}\r\n33234;Latresne;B2;\r\n33001;Abzac;C;\r\n`),
    );
    await importZonageAbc(
      db.db,
      await fichier(
        'b/zonage-2024.csv',
        'CODGEO;REG;DEP;LIBGEO;Zone en vigueur depuis le 5 juillet 2024;Reclassement juillet 2024\r\n33234;75;33;Latresne;B1;Oui\r\n',
      ),
    );
    expect(await zoneAbc(db.db, 'live', '33234')).toMatchObject({
      zone: 'B1',
      en_vigueur_le: '2024-07-05',
      reclassement: true,
    });
    expect(await zoneAbc(db.db, 'live', '33001')).toMatchObject({ zone: 'C', en_vigueur_le: '2023-10-01' });
  });

  it('takes the date from the file’s name when the column says none', async () => {
    const chemin = await fichier('zonage-abc-5-septembre-2025.csv', 'INSEE;Zonage ABC\r\n33234;B1\r\n');
    const report = await importZonageAbc(db.db, chemin);
    expect(report.details[0]).toBe('édition : en vigueur depuis le 2025-09-05 (colonne « Zonage ABC »)');
    await expect(
      importZonageAbc(db.db, await fichier('zonage-abc.csv', 'INSEE;Zonage ABC\r\n33234;B1\r\n')),
    ).rejects.toThrow(/date d’entrée en vigueur introuvable/);
  });

  it('refuses a header without a zone column, or with two in force, and writes nothing', async () => {
    const sansZone = await fichier('sans-zone-2024-07-05.csv', 'CODGEO;LIBGEO;Tension\r\n33234;Latresne;forte\r\n');
    const erreur = await importZonageAbc(db.db, sansZone).catch((e: unknown) => e);
    expect(erreur).toBeInstanceOf(ImportError);
    expect((erreur as Error).message).toContain(
      'en-tête non reconnu comme celui du zonage A/B/C : colonne de la zone absente',
    );
    const deux = await fichier(
      'deux.csv',
      'CODGEO;Zone en vigueur depuis le 5 juillet 2024;Zone en vigueur depuis le 1er octobre 2023\r\n33234;B1;B2\r\n',
    );
    await expect(importZonageAbc(db.db, deux)).rejects.toThrow(/plusieurs colonnes de zone en vigueur/);
    // The former edition beside the one in force: the one in force is read.
    const ancienne = await fichier(
      'avec-ancienne.csv',
      'CODGEO;Zonage précédent;Zone en vigueur depuis le 5 juillet 2024\r\n33234;B2;B1\r\n',
    );
    await importZonageAbc(db.db, ancienne);
    expect(await zones()).toEqual([['2024-07-05', '33234', 'B1']]);
  });

  it('rejects a row of an unknown zone or without one, and keeps the others', async () => {
    const chemin = await fichier(
      'zonage-abc-juillet-2024.csv',
      `${ENTETE_2023}\r\n33234;Latresne;B1;\r\n33001;Abzac;D;\r\n33002;Aillas;;\r\n3300X;Nulle part;C;\r\n33234;Latresne;B2;\r\n`,
    );
    const report = await importZonageAbc(db.db, chemin);
    expect(report).toMatchObject({ lus: 5, gardes: 1 });
    expect(report.rejetes).toEqual([
      { ligne: 3, motif: 'zone « D » inconnue (attendues : Abis, A, B1, B2, C)' },
      { ligne: 4, motif: 'zone absente (attendues : Abis, A, B1, B2, C)' },
      { ligne: 5, motif: 'code commune absent ou invalide (3300X)' },
      { ligne: 6, motif: 'commune 33234 déjà lue ligne 2' },
    ]);
  });

  it('replaces an edition imported again: communes no longer listed deleted', async () => {
    await importZonageAbc(db.db, await fichier('v1/z.csv', `${ENTETE_2023}\r\n33234;L;B2;\r\n33001;A;C;\r\n`));
    const report = await importZonageAbc(db.db, await fichier('v2/z.csv', `${ENTETE_2023}\r\n33234;L;B1;\r\n`));
    expect(report.details[1]).toBe('communes : 1 (0 ajoutés, 1 modifiés, 0 inchangés), 1 retirées');
    expect(await zones()).toEqual([['2023-10-01', '33234', 'B1']]);
    await expect(importZonageAbc(db.db, await fichier('v3/z.csv', `${ENTETE_2023}\r\n33234;L;Z;\r\n`))).rejects.toThrow(
      /aucune commune lisible/,
    );
    expect(await zones()).toEqual([['2023-10-01', '33234', 'B1']]);
  });
});

describe('the rules of zones and dates', () => {
  it('reads every spelling of the five zones, and nothing else', () => {
    expect(['Abis', 'A bis', 'ABIS', 'A-bis', 'a_bis', 'A', 'a', 'B1', 'b 1', 'Zone B2', 'C'].map(zoneAbcDe)).toEqual([
      'Abis',
      'Abis',
      'Abis',
      'Abis',
      'Abis',
      'A',
      'A',
      'B1',
      'B1',
      'B2',
      'C',
    ]);
    expect(['B3', 'D', 'zone', 'A+', ''].map(zoneAbcDe)).toEqual([null, null, null, null, null]);
  });

  it('reads the dates the editions write', () => {
    expect(dateDe('Zone en vigueur depuis le 5 juillet 2024')).toBe('2024-07-05');
    expect(dateDe('Zonage en vigueur au 1er octobre 2023')).toBe('2023-10-01');
    expect(dateDe('Zonage ABC en vigueur depuis le 26 juin 2026')).toBe('2026-06-26');
    expect(dateDe('Zonage en vigueur depuis le 5 septembre 2025')).toBe('2025-09-05');
    expect(dateDe('Zone (août 2014)')).toBe('2014-08-01');
    expect(dateDe('Zonage au 05/07/2024')).toBe('2024-07-05');
    expect(dateDe('zonage_abc_2024-07-05.csv')).toBe('2024-07-05');
    expect(dateDe('zonage-abc-juillet-2024.csv')).toBe('2024-07-01');
    expect(dateDe('Zone en vigueur depuis le 31 février 2024')).toBeNull();
    expect(dateDe('Zonage ABC 2024')).toBeNull();
  });
});
