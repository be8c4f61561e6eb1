import type { Queryable } from '../../../db/client.ts';

/**
 * Shared by the company, permit and IRIS tests: a few BAN numbers of Latresne (33234) as the BAN importer writes them,
 * and a search of a name in every table of the database.
 */

export const ADRESSES = {
  /** 12 Rue de la Liberté, on parcel AB 123. */
  liberte12: '33234_0160_00012',
  /** 14 Rue de la Liberté, no parcel known. */
  liberte14: '33234_0160_00014',
  /** 3 Avenue de la Libération, the civil companies' seat. */
  liberation3: '33234_0200_00003',
  /** A street key (not a number). */
  rueLiberte: '33234_0160',
};

export async function insererAdresses(db: Queryable): Promise<void> {
  await db.query(
    `INSERT INTO adresses (dataset, cle_ban, type, numero, suffixe, voie, code_voie, code_postal, insee, commune, libelle,
                           lat, lon, parcelles, source)
     VALUES ('live', '33234_0160_00012', 'numero', 12, NULL, 'Rue de la Liberté', '0160', '33360', '33234', 'Latresne',
             '12 Rue de la Liberté 33360 Latresne', 44.7801, -0.4969, '{33234000AB0123}', 'ban'),
            ('live', '33234_0160_00014', 'numero', 14, NULL, 'Rue de la Liberté', '0160', '33360', '33234', 'Latresne',
             '14 Rue de la Liberté 33360 Latresne', 44.7802, -0.4968, '{}', 'ban'),
            ('live', '33234_0160_00014_bis', 'numero', 14, 'bis', 'Rue de la Liberté', '0160', '33360', '33234',
             'Latresne', '14 bis Rue de la Liberté 33360 Latresne', 44.7803, -0.4967, '{}', 'ban'),
            ('live', '33234_0200_00003', 'numero', 3, NULL, 'Avenue de la Libération', '0200', '33360', '33234',
             'Latresne', '3 Avenue de la Libération 33360 Latresne', 44.7811, -0.4951, '{33234000AC0007}', 'ban'),
            ('live', '33234_0160', 'voie', NULL, NULL, 'Rue de la Liberté', '0160', '33360', '33234', 'Latresne',
             'Rue de la Liberté 33360 Latresne', 44.7801, -0.4969, NULL, 'ban')`,
  );
}

/** `table.colonne` of every text found to contain one of `noms` (case-insensitive), across all tables. */
export async function nomsDansLaBase(db: Queryable, noms: string[]): Promise<string[]> {
  const { rows: tables } = await db.query<{ nom: string }>(
    `SELECT quote_ident(table_name) AS nom FROM information_schema.tables
      WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`,
  );
  const trouves: string[] = [];
  for (const { nom } of tables) {
    for (const n of noms) {
      const { rows } = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${nom} t WHERE t::text ILIKE '%' || $1 || '%'`,
        [n],
      );
      if (rows[0].n > 0) trouves.push(`${nom}: ${n}`);
    }
  }
  return trouves;
}
