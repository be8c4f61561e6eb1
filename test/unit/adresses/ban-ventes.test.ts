import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../../db/client.ts';
import { importBan } from '../../../domain/adresses/import-ban.ts';
import { importDvf } from '../../../domain/dvf/import.ts';
import { createTestDb } from '../../support/db.ts';
import { etalab, HEADER } from '../dvf/fixtures.ts';

let db: Db;
let drop: () => Promise<void>;
let dir: string;

beforeAll(async () => {
  ({ db, drop } = await createTestDb());
  dir = await mkdtemp(path.join(tmpdir(), 'ban-ventes-'));
});
afterAll(async () => {
  await drop();
  await rm(dir, { recursive: true, force: true });
});

describe('a BAN import after the DVF sales of its communes', () => {
  it('attaches the sales imported before to their BAN number, and says how many', async () => {
    // 1 RUE DE TEST (voie A001), Abzac: the fixture's address of every sale.
    const dvf = path.join(dir, 'dvf.csv');
    await writeFile(dvf, [HEADER, etalab({ id: '2022-1', type: 'Maison', surface: '100' })].join('\n'));
    await importDvf(db, dvf);
    const cle = async () =>
      (await db.query(`SELECT cle_ban FROM dvf_mutations WHERE dataset = 'live' AND id_mutation = '2022-1'`)).rows[0]
        .cle_ban;
    expect(await cle()).toBeNull();

    const ban = path.join(dir, 'adresses-33.csv');
    await writeFile(
      ban,
      [
        'id;numero;rep;nom_voie;code_postal;code_insee;nom_commune;lon;lat',
        '33001_a001_00001;1;;Rue de Test;33230;33001;Abzac;-0.13;45.01',
        '33001_a001_00003;3;;Rue de Test;33230;33001;Abzac;-0.1302;45.0101',
      ].join('\n'),
    );
    const report = await importBan(db, ban);
    expect(report.ventesRattachees).toBe(1);
    expect(report.details).toContain('ventes DVF rattachées à un numéro : 1');
    expect(await cle()).toBe('33001_a001_00001');

    const again = await importBan(db, ban);
    expect(again.ventesRattachees).toBe(0);
    expect(await cle()).toBe('33001_a001_00001');
  });
});
