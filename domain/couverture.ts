import type { Queryable } from '../db/client.ts';

/**
 * Coverage said: why a source serves nothing for a place, when the reason is the data's and not the place's. DVF
 * does not cover Alsace-Moselle and Mayotte; otherwise a source is imported département by département, and a
 * département it has no row of is outside the imported data. An answer with an empty list or null figures puts
 * this sentence in its `limites`; when the département is imported, the absence is the place's own, and the
 * operation says so in its own words.
 */

export const ALSACE_MOSELLE = ['57', '67', '68'] as const;

/** Why DVF has nothing for a département, or null when it covers it. */
export function absenceDvf(departement: string): string | null {
  if ((ALSACE_MOSELLE as readonly string[]).includes(departement)) {
    return 'Alsace-Moselle (Moselle 57, Bas-Rhin 67, Haut-Rhin 68) n’est pas dans DVF : les ventes y sont publiées au livre foncier, tenu par les tribunaux, et non par la DGFiP. Aucune vente n’est servie pour ces départements.';
  }
  if (departement === '976') {
    return 'Mayotte (976) n’est pas dans DVF : la DGFiP n’y publie pas les valeurs foncières.';
  }
  return null;
}

/** The imported sources read by commune, each with the indexed column that places a row in its département. */
const SOURCES = {
  ban: {
    nom: 'de la Base Adresse Nationale (BAN)',
    table: 'adresses',
    colonne: 'insee',
    effet: 'aucune adresse n’y est servie',
  },
  dvf: { nom: 'DVF', table: 'dvf_mutations', colonne: 'insee', effet: 'aucune vente n’y est servie' },
  dpe: { nom: 'DPE (ADEME)', table: 'marche_dpe', colonne: 'insee', effet: 'aucun diagnostic n’y est servi' },
  permis: {
    nom: 'Sitadel',
    table: 'permis',
    colonne: 'insee',
    effet: 'aucune autorisation d’urbanisme n’y est servie',
  },
  sirene: { nom: 'SIRENE', table: 'etablissements', colonne: 'code_postal', effet: 'aucune société n’y est servie' },
} as const;
export type SourceImportee = keyof typeof SOURCES;

/**
 * The bounds of a département's codes in a column (INSEE codes, or postal codes for SIRENE): [first, next), so that
 * the (dataset, column) index is read as a range. Corsica's postal codes start with 20, its INSEE codes with 2A/2B.
 */
function bornes(departement: string, colonne: string): [string, string] {
  const prefixe = colonne === 'code_postal' && /^2[AB]$/i.test(departement) ? '20' : departement.toUpperCase();
  const suivant = prefixe.slice(0, -1) + String.fromCharCode(prefixe.charCodeAt(prefixe.length - 1) + 1);
  return [prefixe, suivant];
}

/**
 * Why `source` serves nothing in `departement` because of the data, or null when the département is imported:
 * not published there (DVF), or no row of the source in it.
 */
export async function absenceSource(
  db: Queryable,
  /** The dataset read, `live` or `sandbox` (platform/sandbox.ts, which this ground floor of the domain does not import). */
  dataset: string,
  source: SourceImportee,
  departement: string,
): Promise<string | null> {
  if (source === 'dvf') {
    const raison = absenceDvf(departement);
    if (raison) return raison;
  }
  const { nom, table, colonne, effet } = SOURCES[source];
  const [de, a] = bornes(departement, colonne);
  const { rows } = await db.query(
    `SELECT 1 FROM ${table} WHERE dataset = $1 AND ${colonne} >= $2 AND ${colonne} < $3 LIMIT 1`,
    [dataset, de, a],
  );
  return rows.length > 0
    ? null
    : `Les données ${nom} ne sont pas importées pour le département ${departement} : ${effet}.`;
}
