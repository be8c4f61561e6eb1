import type { PoolClient } from 'pg';
import { transaction, type Db, type Queryable } from '../../db/client.ts';
import type { Dataset } from '../platform/sandbox.ts';

/**
 * The aggregates of the Communes market (table `marche_prix`, db/migrations/022_marche_communes.sql): rebuilt from
 * `dvf_mutations` after each DVF import for the communes it read and their départements, so that a read of a
 * commune's prices is one range of the primary key.
 */

export type TypeLogement = 'appartement' | 'maison';

/**
 * The sales a price per m² of housing is measured on: a sale (vente, VEFA, adjudication) of exactly one dwelling
 * whose price per m² DVF lets us read as that dwelling's: no business premises, a plausible price and surface (the
 * flags of the DVF importer, domain/dvf/fold.ts). Not `motif IS NULL`: that also sets aside a probable duplicate,
 * which with one dwelling can only be a repeated dependency, and the price per m² counts dwellings only. A dependency
 * (garage, cellar) sold with the dwelling stays: that is how dwellings are sold.
 */
export const VENTE_UN_LOGEMENT = `m.logements = 1 AND m.prix_m2 IS NOT NULL AND NOT m.prix_atypique
  AND NOT m.surface_atypique AND NOT m.avec_local_pro AND m.nature IN ('vente', 'vefa', 'adjudication')`;

/** The statistics of a group of sales, named as the table's columns. */
const STATISTIQUES = `count(*)::int,
  percentile_cont(0.5) WITHIN GROUP (ORDER BY prix_m2),
  percentile_cont(0.25) WITHIN GROUP (ORDER BY prix_m2),
  percentile_cont(0.75) WITHIN GROUP (ORDER BY prix_m2),
  min(prix_m2), max(prix_m2)`;

const COLONNES = `dataset, niveau, code, type, annee, trimestre, ventes, prix_m2_median, prix_m2_p25, prix_m2_p75,
  prix_m2_min, prix_m2_max`;

/**
 * The dwellings of one type among a mutation's locals: all of them (`logements`) when the other type is absent, none
 * when this one is, and the locals' JSON read only for a mutation with both. Reading the JSON of every mutation was
 * half of the rebuild (2.3 s of 4.7 s on 100,000 mutations; 0.2 s this way, same counts).
 */
const LOGEMENTS_DU_TYPE = (type: TypeLogement, autre: TypeLogement) =>
  `CASE WHEN NOT ('${autre}' = ANY(m.types_locaux)) THEN m.logements
        WHEN NOT ('${type}' = ANY(m.types_locaux)) THEN 0
        ELSE (SELECT count(*) FROM json_array_elements(m.locaux::json) l WHERE l->>'type' = '${type}') END`;

/**
 * Rebuilds the aggregates of `dataset` for these communes and for the départements they belong to, in one
 * transaction (readers see the old figures or the new ones, never half). A département is recomputed whole from its
 * sales: a median does not compose from its communes' medians. Returns the rows written.
 */
export async function reconstruireMarche(
  client: PoolClient,
  dataset: Dataset,
  insees: readonly string[],
): Promise<number> {
  if (insees.length === 0) return 0;
  await client.query('BEGIN');
  try {
    const { rows } = await client.query<{ departement: string }>(
      `SELECT DISTINCT departement FROM dvf_mutations WHERE dataset = $1 AND insee = ANY($2)`,
      [dataset, insees],
    );
    const departements = rows.map((r) => r.departement);
    await client.query(
      `DELETE FROM marche_prix WHERE dataset = $1
          AND ((niveau = 'commune' AND code = ANY($2)) OR (niveau = 'departement' AND code = ANY($3)))`,
      [dataset, insees, departements],
    );
    // Where the communes' sales are: their centre when the administrative split gives none (027_marche_centres).
    await client.query(`DELETE FROM marche_centres WHERE dataset = $1 AND insee = ANY($2)`, [dataset, insees]);
    await client.query(
      `INSERT INTO marche_centres (dataset, insee, lat, lon, mutations)
       SELECT $1, insee, percentile_cont(0.5) WITHIN GROUP (ORDER BY lat),
              percentile_cont(0.5) WITHIN GROUP (ORDER BY lon), count(*)::int
         FROM dvf_mutations
        WHERE dataset = $1 AND insee = ANY($2) AND lat IS NOT NULL AND lon IS NOT NULL
        GROUP BY insee`,
      [dataset, insees],
    );
    let ecrites = 0;
    for (const [niveau, colonne, codes] of [
      ['commune', 'insee', insees],
      ['departement', 'departement', departements],
    ] as const) {
      if (codes.length === 0) continue;
      // Year by type, year all types, quarter by type, quarter all types: one reading of the sales.
      const prix = await client.query(
        `INSERT INTO marche_prix (${COLONNES})
         SELECT $1, '${niveau}', code, coalesce(type, 'global'), annee, coalesce(trimestre, 0), ${STATISTIQUES}
           FROM (SELECT m.${colonne} AS code, m.millesime AS annee, extract(quarter FROM m.date_mutation)::smallint AS trimestre,
                        CASE WHEN 'appartement' = ANY(m.types_locaux) THEN 'appartement' ELSE 'maison' END AS type,
                        m.prix_m2
                   FROM dvf_mutations m
                  WHERE m.dataset = $1 AND m.${colonne} = ANY($2) AND ${VENTE_UN_LOGEMENT}) v
          GROUP BY GROUPING SETS ((code, type, annee), (code, annee), (code, type, annee, trimestre), (code, annee, trimestre))`,
        [dataset, codes],
      );
      ecrites += prix.rowCount ?? 0;
    }
    // The rows of dwellings sold (one per local) for the velocity, whatever the sale's price per m² says.
    const lignes = await client.query(
      `INSERT INTO marche_prix AS p (dataset, niveau, code, type, annee, trimestre, ventes, lignes_appartements,
                                     lignes_maisons)
       SELECT $1, 'commune', insee, 'global', annee, coalesce(trimestre, 0), 0, sum(apparts)::int, sum(maisons)::int
         FROM (SELECT m.insee, m.millesime AS annee, extract(quarter FROM m.date_mutation)::smallint AS trimestre,
                      ${LOGEMENTS_DU_TYPE('appartement', 'maison')} AS apparts,
                      ${LOGEMENTS_DU_TYPE('maison', 'appartement')} AS maisons
                 FROM dvf_mutations m
                WHERE m.dataset = $1 AND m.insee = ANY($2) AND m.logements > 0
                  AND m.nature IN ('vente', 'vefa', 'adjudication')) v
        GROUP BY GROUPING SETS ((insee, annee), (insee, annee, trimestre))
       ON CONFLICT (dataset, niveau, code, type, annee, trimestre) DO UPDATE
          SET lignes_appartements = excluded.lignes_appartements, lignes_maisons = excluded.lignes_maisons`,
      [dataset, insees],
    );
    ecrites += lignes.rowCount ?? 0;
    await client.query('COMMIT');
    return ecrites;
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  }
}

/** The columns of a row of `marche_prix` as read (LignePrix). */
export const COLONNES_LIGNE_PRIX = `type, annee, trimestre, ventes, prix_m2_median, prix_m2_p25, prix_m2_p75, prix_m2_min,
  prix_m2_max, lignes_appartements, lignes_maisons`;

/** A row of `marche_prix` as read. */
export interface LignePrix {
  type: TypeLogement | 'global';
  annee: number;
  trimestre: number;
  ventes: number;
  prix_m2_median: number | null;
  prix_m2_p25: number | null;
  prix_m2_p75: number | null;
  prix_m2_min: number | null;
  prix_m2_max: number | null;
  lignes_appartements: number;
  lignes_maisons: number;
}

/**
 * Every aggregate of a commune (or a département): one range of the primary key. `annuel`: the years only (the
 * price scale reads no quarter; a quarter of the primary key's range is then skipped in the index).
 */
export async function lirePrix(
  db: Queryable,
  dataset: Dataset,
  niveau: 'commune' | 'departement',
  code: string,
  annuel = false,
): Promise<LignePrix[]> {
  const { rows } = await db.query<LignePrix>(
    `SELECT ${COLONNES_LIGNE_PRIX}
       FROM marche_prix WHERE dataset = $1 AND niveau = $2 AND code = $3 ${annuel ? 'AND trimestre = 0' : ''}
      ORDER BY type, annee, trimestre`,
    [dataset, niveau, code],
  );
  return rows;
}

/**
 * Rebuilds the share of F and G labels of every commune of `dataset` from its DPE (a DPE another one replaces is left
 * out), in one transaction: called at the end of each DPE import. One pass over the dataset's DPE, cheaper than
 * knowing which communes an import touched (a DPE can move between communes when re-geocoded).
 */
export async function reconstruireDpeCommunes(db: Db, dataset: Dataset): Promise<number> {
  return transaction(db, async (client) => {
    await client.query('DELETE FROM marche_dpe WHERE dataset = $1', [dataset]);
    const { rowCount } = await client.query(
      `INSERT INTO marche_dpe (dataset, insee, dpe, passoires, dernier_dpe)
       SELECT $1, d.insee, count(*), count(*) FILTER (WHERE d.etiquette IN ('F', 'G')), max(d.etabli_le)
         FROM dpe d
        WHERE d.dataset = $1 AND d.insee IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM dpe r WHERE r.dataset = d.dataset AND r.numero_dpe_remplace = d.numero_dpe)
        GROUP BY d.insee`,
      [dataset],
    );
    return rowCount ?? 0;
  });
}
