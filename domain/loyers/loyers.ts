import type { Queryable } from '../../db/client.ts';
import type { Dataset } from '../platform/sandbox.ts';

/**
 * The rent indicators ("carte des loyers", ministry of housing with ANIL): per commune, type of dwelling and edition,
 * the predicted listing rent per m² of a typical unfurnished dwelling of the private stock, charges included, per
 * month, with the prediction interval the source publishes beside it. Imported by `import.ts` into `loyers_communes`;
 * read here by the domains that serve a rent (Estimation's `loyer` block, the Communes market).
 */

/** The four files of an edition, one type of dwelling each (the 2018 edition has the first and the last only). */
export const TYPES_LOGEMENT = ['appartement', 'appartement_t1_t2', 'appartement_t3_plus', 'maison'] as const;
export type TypeLogement = (typeof TYPES_LOGEMENT)[number];

export const LIBELLES_TYPES: Record<TypeLogement, string> = {
  appartement: 'appartements',
  appartement_t1_t2: 'appartements T1-T2',
  appartement_t3_plus: 'appartements T3 et plus',
  maison: 'maisons',
};

/** What the figure says of the commune: measured on its own listings, or borrowed from a group of communes. */
export type NatureLoyer = 'observe_commune' | 'predit_maille';

/**
 * The rule of `nature`. The source predicts at the level of the commune (TYPPRED `commune`) only when the commune's own
 * listings are enough for its model; otherwise at the level of a group of communes (`maille`, since 2022; `epci` in
 * 2018), even when the commune has a few listings of its own. So: `observe_commune` when TYPPRED is `commune` and
 * `nbobs_com` does not say the commune has no listing (0); `predit_maille` for any other level. An absent count does
 * not contradict the level the source gives.
 */
export function natureLoyer(niveauPrediction: string, nbObsCommune: number | null): NatureLoyer {
  return niveauPrediction === 'commune' && nbObsCommune !== 0 ? 'observe_commune' : 'predit_maille';
}

/** A commune's rent indicator for one type of dwelling, as the domains read it. */
export interface LoyerCommune {
  insee: string;
  /** The commune's name as the file writes it (LIBGEO). */
  commune: string | null;
  type_logement: TypeLogement;
  /** The year of the edition (2018, 2022…2025). */
  edition: number;
  /** Predicted rent, € per m² per month, charges included (loypredm2). */
  loyer_m2: number;
  /** Bounds of the prediction interval, € per m² per month (lwr.IPm2, upr.IPm2). */
  bas_m2: number;
  haut_m2: number;
  nature: NatureLoyer;
  /** TYPPRED as written, lower case: commune, maille, epci. */
  niveau_prediction: string;
  /** Listings of the commune, and of the group of communes the model was fitted on (nbobs_com, nbobs_mail). */
  nb_obs_commune: number | null;
  nb_obs_maille: number | null;
  /** Adjusted R² of the model (R2_adj). */
  r2_ajuste: number | null;
}

type Ligne = Omit<LoyerCommune, 'nature'>;

const COLONNES = `insee, commune, type_logement, edition, loyer_m2, loyer_m2_bas AS bas_m2, loyer_m2_haut AS haut_m2,
                  niveau_prediction, nb_obs_commune, nb_obs_maille, r2_ajuste`;

const avecNature = (l: Ligne): LoyerCommune => ({ ...l, nature: natureLoyer(l.niveau_prediction, l.nb_obs_commune) });

/**
 * The rent of `type` in the commune `insee` (a municipal arrondissement of Paris, Lyon or Marseille is a commune of
 * its own here, as in the source) from the latest edition that has it, or null. One indexed read.
 */
export async function loyerCommune(
  db: Queryable,
  dataset: Dataset,
  insee: string,
  type: TypeLogement,
): Promise<LoyerCommune | null> {
  const { rows } = await db.query<Ligne>(
    `SELECT ${COLONNES} FROM loyers_communes
      WHERE dataset = $1 AND insee = $2 AND type_logement = $3
      ORDER BY edition DESC LIMIT 1`,
    [dataset, insee, type],
  );
  return rows[0] ? avecNature(rows[0]) : null;
}

/** Every type of dwelling the commune has, each from the latest edition that has it. One indexed read. */
export async function loyersCommune(
  db: Queryable,
  dataset: Dataset,
  insee: string,
): Promise<Partial<Record<TypeLogement, LoyerCommune>>> {
  const { rows } = await db.query<Ligne>(
    `SELECT DISTINCT ON (type_logement) ${COLONNES} FROM loyers_communes
      WHERE dataset = $1 AND insee = $2
      ORDER BY type_logement, edition DESC`,
    [dataset, insee],
  );
  return Object.fromEntries(rows.map((l) => [l.type_logement, avecNature(l)]));
}
