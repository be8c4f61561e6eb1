import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../../db/client.ts';
import { dvfSource, importDvf } from '../../../domain/dvf/import.ts';
import { createTestDb } from '../../support/db.ts';
import { etalab, HEADER } from './fixtures.ts';

// The DVF importer commits its sales in batches and appends their novelties to the journal of address novelties in
// one more transaction at its end: an import that dies in between owes them, and the next import appends them.

/** The BAN number the fixtures' lines point at (Abzac, street A001, number 1). */
const ABZAC_1 = '33001_a001_00001';

let db: Db;
let drop: () => Promise<void>;
let dir: string;

async function fichier(nom: string, lignes: string[]): Promise<string> {
  const chemin = path.join(dir, nom);
  await writeFile(chemin, [HEADER, ...lignes].join('\n'));
  return chemin;
}

/** The sales in the journal, by mutation id. */
async function auJournal(): Promise<string[]> {
  const { rows } = await db.query<{ reference: string }>(
    `SELECT reference FROM journal_adresses WHERE dataset = 'live' AND genre = 'vente' ORDER BY reference`,
  );
  return rows.map((r) => r.reference);
}

async function vente(id: string) {
  const { rows } = await db.query(`SELECT id_mutation, cle_ban FROM dvf_mutations WHERE id_mutation = $1`, [id]);
  return rows[0];
}

async function attente(): Promise<number> {
  return (await db.query(`SELECT * FROM dvf_journal_attente`)).rowCount ?? 0;
}

/** A line of another commune than Abzac (33002), where the BAN has nothing: it is no novelty of an address. */
const ailleurs = (id: string) => etalab({ id, date: '2024-05-01' }).replaceAll('33001', '33002');

beforeAll(async () => {
  ({ db, drop } = await createTestDb());
  dir = await mkdtemp(path.join(tmpdir(), 'dvf-nouveautes-'));
  await db.query(
    `INSERT INTO adresses (dataset, cle_ban, type, numero, suffixe, voie, code_voie, code_postal, insee, commune, libelle,
                           lat, lon, parcelles, source)
     VALUES ('live', $1, 'numero', 1, NULL, 'Rue de Test', 'A001', '33230', '33001', 'Abzac',
             '1 Rue de Test 33230 Abzac', 45.01, -0.13, '{33001000AB0001}', 'ban')`,
    [ABZAC_1],
  );
  // The vintage 2024 there already, with its sales journaled: what follows enters an attached vintage, batch by batch.
  const premier = await importDvf(
    db,
    await fichier('2024-a.csv', [etalab({ id: '2024-1', date: '2024-02-01', type: 'Maison', surface: '100' })]),
  );
  expect(premier.nouveautes).toBe(1);
  expect(await auJournal()).toEqual(['2024-1']);
  expect(await attente()).toBe(0);
});

afterAll(async () => {
  await drop();
  await rm(dir, { recursive: true, force: true });
});

describe('an import that dies after its sales are committed', () => {
  it('leaves them owed to the journal, and the next import, of another commune, appends them once', async () => {
    const suite = await fichier('2024-b.csv', [
      etalab({ id: '2024-2', date: '2024-03-01', type: 'Appartement', surface: '50', valeur: '150000' }),
    ]);
    // Dies once its batch is written (the progress callback runs right after each batch's commit).
    await expect(
      importDvf(db, suite, {
        onProgress: () => {
          throw new Error('arrêt simulé');
        },
      }),
    ).rejects.toThrow('arrêt simulé');
    // The sale is there, not yet attached to the BAN nor journaled: the import says it owes it.
    expect(await vente('2024-2')).toMatchObject({ cle_ban: null });
    expect(await auJournal()).toEqual(['2024-1']);
    expect(await attente()).toBe(1);

    // The next import reads another commune: it attaches the sale to its number and journals it.
    const autre = await fichier('2024-c.csv', [ailleurs('2024-9')]);
    const reprise = await dvfSource.run(db, autre, { sandbox: false, onProgress: () => {} });
    expect(await vente('2024-2')).toMatchObject({ cle_ban: ABZAC_1 });
    expect(await auJournal()).toEqual(['2024-1', '2024-2']);
    expect(await attente()).toBe(0);
    expect(reprise.details).toContain(
      'nouveautés au journal des adresses : 1 (dont celles d’un import interrompu avant de les journaliser)',
    );

    // Once only: the file that died, imported again, and the other one, append nothing more.
    expect((await importDvf(db, suite)).nouveautes).toBe(0);
    expect((await importDvf(db, autre)).nouveautes).toBe(0);
    expect(await auJournal()).toEqual(['2024-1', '2024-2']);
  });
});

describe('an import whose journal transaction fails', () => {
  it('keeps them owed (the row’s deletion rolls back with the append): the next import appends them', async () => {
    // The append refused, as a crash at that moment would leave it: sales committed and attached, journal not.
    await db.query(`CREATE FUNCTION refuser() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN RAISE EXCEPTION 'journal indisponible'; END $$`);
    await db.query(`CREATE TRIGGER refuser BEFORE INSERT ON journal_adresses FOR EACH ROW EXECUTE FUNCTION refuser()`);
    const ventes = await fichier('2024-d.csv', [
      etalab({ id: '2024-3', date: '2024-04-01', type: 'Maison', surface: '90', valeur: '210000' }),
    ]);
    await expect(importDvf(db, ventes)).rejects.toThrow('journal indisponible');
    expect(await vente('2024-3')).toMatchObject({ cle_ban: ABZAC_1 });
    expect(await auJournal()).toEqual(['2024-1', '2024-2']);
    expect(await attente()).toBe(1);
    await db.query('DROP TRIGGER refuser ON journal_adresses');

    const reprise = await importDvf(db, await fichier('2024-e.csv', [ailleurs('2024-8')]));
    expect(reprise).toMatchObject({ reprise: true, nouveautes: 1 });
    expect(await auJournal()).toEqual(['2024-1', '2024-2', '2024-3']);
    expect(await attente()).toBe(0);
  });
});
