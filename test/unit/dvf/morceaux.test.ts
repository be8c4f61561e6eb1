import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../../db/client.ts';
import { importBan } from '../../../domain/adresses/import-ban.ts';
import { importDvf } from '../../../domain/dvf/import.ts';
import { fichiersDesChemins } from '../../../domain/import/cli.ts';
import { createTestDb } from '../../support/db.ts';
import { etalab, HEADER } from './fixtures.ts';

/** Sources published in pieces (DVF per commune and year, the BAN per département), imported in one command. */

const PARIS = path.resolve('../shared/data/dvf/paris_75103_75104_2024_2025');
const hasParis = existsSync(PARIS);
const SKIP = hasParis ? '' : ' (skipped: ../shared/data/dvf absent)';

let db: Db;
let url: string;
let drop: () => Promise<void>;
let dir: string;

beforeAll(async () => {
  ({ db, url, drop } = await createTestDb());
  dir = await mkdtemp(path.join(tmpdir(), 'morceaux-'));
});
afterAll(async () => {
  await drop?.();
  await rm(dir, { recursive: true, force: true });
});

const run = promisify(execFile);
const cli = (...args: string[]) =>
  run(process.execPath, ['scripts/import.ts', ...args], { env: { ...process.env, DATABASE_URL: url } });

async function compte(dataset: string) {
  const { rows } = await db.query<{ millesime: number; n: number }>(
    `SELECT millesime, count(*)::int AS n FROM dvf_mutations WHERE dataset = $1 GROUP BY 1 ORDER BY 1`,
    [dataset],
  );
  return rows;
}

describe('the paths of a source published in pieces', () => {
  it('takes files as they are, a folder’s files of the source’s names at any depth, and globs, sorted, each once', async () => {
    const racine = path.join(dir, 'chemins');
    await mkdir(path.join(racine, '2024', '33'), { recursive: true });
    for (const f of [
      '2024/33/33001.csv',
      '2024/33/33234.csv.gz',
      '2024/lisez-moi.txt.pdf',
      '2024/2.csv',
      '2024/10.csv',
    ])
      await writeFile(path.join(racine, f), '');
    const dvf = /\.(csv|txt)(\.gz)?$/i;
    expect(await fichiersDesChemins([path.join(racine, '2024')], dvf)).toEqual(
      ['2024/2.csv', '2024/10.csv', '2024/33/33001.csv', '2024/33/33234.csv.gz'].map((f) => path.join(racine, f)),
    );
    expect(await fichiersDesChemins([path.join(racine, '2024/*.csv'), path.join(racine, '2024/2.csv')], dvf)).toEqual(
      ['2024/2.csv', '2024/10.csv'].map((f) => path.join(racine, f)),
    );
    await expect(fichiersDesChemins([path.join(racine, 'absent')], dvf)).rejects.toThrow(/chemin introuvable/);
    await mkdir(path.join(racine, 'vide'));
    await expect(fichiersDesChemins([path.join(racine, 'vide')], dvf)).rejects.toThrow(/aucun fichier à importer/);
  });
});

describe('DVF in pieces', () => {
  it('imports several files, plain and gzipped, as one import: a new vintage appears whole, a mutation split between two files is one', async () => {
    const pieces = path.join(dir, 'dvf-2022');
    await mkdir(pieces);
    // 2022-2 has a line in each file.
    await writeFile(
      path.join(pieces, 'dvf_33001_a.csv'),
      [
        HEADER,
        etalab({ id: '2022-1', type: 'Maison', surface: '100' }),
        etalab({ id: '2022-2', type: 'Maison', surface: '80' }),
      ].join('\n'),
    );
    await writeFile(
      path.join(pieces, 'dvf_33001_b.csv.gz'),
      gzipSync(
        [
          HEADER,
          etalab({ id: '2022-2', type: 'Dépendance', parcelle: '33001000AB0002' }),
          etalab({ id: '2023-1', type: 'Maison', surface: '90', date: '2023-02-01' }),
          'ligne,cassée',
        ].join('\n'),
      ),
    );
    const report = await importDvf(db, await fichiersDesChemins([pieces], /\.csv(\.gz)?$/));
    expect(report).toMatchObject({
      lus: 5,
      gardes: 4,
      mutations: { lues: 3, ajoutees: 3 },
      millesimes: [2022, 2023],
      scindees: 1,
    });
    expect(report.source).toMatch(/^2 fichiers, de .*dvf_33001_a\.csv à .*dvf_33001_b\.csv\.gz$/);
    expect(report.rejetes).toEqual([{ ligne: 4, motif: expect.stringMatching(/^dvf_33001_b\.csv\.gz : 2 champs/) }]);
    const { rows } = await db.query(
      `SELECT nb_lignes, parcelles FROM dvf_mutations WHERE dataset = 'live' AND id_mutation = '2022-2'`,
    );
    expect(rows).toEqual([{ nb_lignes: 2, parcelles: ['33001000AB0001', '33001000AB0002'] }]);
    expect(await compte('live')).toEqual([
      { millesime: 2022, n: 2 },
      { millesime: 2023, n: 1 },
    ]);
  });

  it(
    `imports the 4 real files of Paris 3e and 4e (2 communes, 2 years) as a folder in one command${SKIP}`,
    {
      skip: !hasParis,
      timeout: 120_000,
    },
    async () => {
      const { stdout } = await cli('dvf', PARIS, '--sandbox');
      expect(stdout).toContain('4 fichiers à importer.');
      expect(stdout).toMatch(/rejetés\s*: 0/);
      expect(stdout).toMatch(/millésimes : 2024, 2025/);
      const vintages = await compte('sandbox');
      expect(vintages.map((v) => v.millesime)).toEqual([2024, 2025]);
      // A sale of lots in both arrondissements is in both communes' files: one mutation.
      expect(stdout).toMatch(/lignes non consécutives : 4 mutations regroupées/);
      // Imported again, through a glob: nothing added (mutations regrouped are rewritten, domain/dvf/import.ts).
      const { stdout: again } = await cli('dvf', path.join(PARIS, 'dvf_*.csv.gz'), '--sandbox');
      expect(again).toMatch(/mutations : 3353 \(0 ajoutées/);
      expect(await compte('sandbox')).toEqual(vintages);
    },
  );
});

describe('the BAN in pieces', () => {
  it('imports a folder of département files, each complete for its communes, and names the file of a rejected line', async () => {
    const ban = path.join(dir, 'ban');
    await mkdir(ban);
    const entete = 'id;numero;rep;nom_voie;code_postal;code_insee;nom_commune;lon;lat';
    await writeFile(
      path.join(ban, 'adresses-33.csv'),
      [entete, '33001_0105_00002;2;;Rue du Petreau;33230;33001;Abzac;-0.1241;45.0141'].join('\n'),
    );
    await writeFile(
      path.join(ban, 'adresses-64.csv.gz'),
      gzipSync(
        [
          entete,
          '64260_0730_00001;1;;Boulevard de la Mer;64700;64260;Hendaye;-1.77;43.37',
          '64260_0730_00003;3;;Boulevard de la Mer;64700;64260;Hendaye;;',
        ].join('\n'),
      ),
    );
    await writeFile(path.join(ban, 'notes.txt'), 'pas une adresse');
    const report = await importBan(db, await fichiersDesChemins([ban], /^adresses-.*\.csv(\.gz)?$/));
    expect(report).toMatchObject({ lus: 3, gardes: 2 });
    expect(report.rejetes).toEqual([{ ligne: 3, motif: expect.stringMatching(/^adresses-64\.csv\.gz : coordonnées/) }]);
    expect(report.details[0]).toMatch(/^numéros +: 2 \(2 ajoutés/);
    expect(report.details[3]).toMatch(/^communes +: 2 /);
    const { rows } = await db.query(`SELECT cle_ban FROM adresses WHERE type = 'voie' ORDER BY 1`);
    expect(rows.map((r) => r.cle_ban)).toEqual(['33001_0105', '64260_0730']);
  });
});
