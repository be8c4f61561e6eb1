import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../../db/client.ts';
import { migrate } from '../../../db/migrate.ts';
import { createTestDb } from '../../support/db.ts';

let db: Db;
let drop: () => Promise<void>;

beforeAll(async () => {
  ({ db, drop } = await createTestDb('012_entreprises_permis.sql'));
});
afterAll(async () => drop());

describe('migration 013, DVF partitions', () => {
  it('moves the stored sales into one partition per dataset and vintage, with the indexes', async () => {
    const insert = (dataset: string, id: string, date: string) =>
      db.query(
        `INSERT INTO dvf_mutations (dataset, id_mutation, format, date_mutation, millesime, nature, nature_libelle,
           insee, departement, parcelles, nb_dispositions, nb_lignes, locaux, terrains, nombre_lots, logements,
           vente_en_bloc, avec_dependance, avec_local_pro, prix_atypique, surface_atypique, doublon_probable)
         VALUES ($1, $2, 'etalab', $3, extract(year FROM $3::date), 'vente', 'Vente', '33001', '33', '{33001000AB0001}',
           1, 1, '[]', '[]', 0, 0, false, false, false, false, false, false)`,
        [dataset, id, date],
      );
    await insert('live', '2021-1', '2021-03-01');
    await insert('live', '2021-2', '2021-04-01');
    await insert('live', '2022-1', '2022-05-01');
    await insert('sandbox', '2021-1', '2021-03-01');

    expect(await migrate(db, '013_dvf_partitions.sql')).toEqual(['013_dvf_partitions.sql']);

    const { rows } = await db.query(
      `SELECT c.relname AS nom, (SELECT count(*)::int FROM pg_index x WHERE x.indrelid = c.oid) AS index,
              (SELECT count(*)::int FROM dvf_mutations m WHERE m.tableoid = c.oid) AS ventes
         FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'dvf_mutations'::regclass ORDER BY 1`,
    );
    expect(rows).toEqual([
      { nom: 'dvf_mutations_live_2021', index: 7, ventes: 2 },
      { nom: 'dvf_mutations_live_2022', index: 7, ventes: 1 },
      { nom: 'dvf_mutations_sandbox_2021', index: 7, ventes: 1 },
    ]);
    // The same id twice in a dataset is still refused.
    await expect(
      db.query(
        `INSERT INTO dvf_mutations SELECT * FROM dvf_mutations WHERE dataset = 'live' AND id_mutation = '2021-1'`,
      ),
    ).rejects.toThrow(/duplicate key/);
  });
});
