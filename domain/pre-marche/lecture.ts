import type { Queryable } from '../../db/client.ts';
import type { Dataset } from '../platform/sandbox.ts';
import { SIGNAUX } from './signaux.ts';
import type { Score } from './entrainement.ts';

/**
 * Reads of the derived tables (db/migrations/037_pre_marche.sql): the model of a dataset, and the rows of addresses
 * with their listing read at the request (listings change with every import of snapshots, the scores with the
 * training run).
 */

export interface ModeleLu {
  calcule_le: string;
  reference_le: string;
  dvf_jusqu_au: string | null;
  base_pct: number;
  haut_pct: number | null;
  n_controle: number;
  perimetre: string;
  coefficients: Array<{
    signal: string;
    groupe: string;
    coefficient: number;
    coefficient_ajuste: number;
    lift_dvf: number | null;
    n_dvf: number;
    taux_dvf_pct: number | null;
    retenu: boolean;
  }>;
  bandes: Array<{
    type_bien: string;
    bande: string;
    rang: number;
    n: number;
    indice_min: number;
    indice_max: number;
    taux_vente_12m_pct: number;
  }>;
}

export async function lireModele(db: Queryable, dataset: Dataset): Promise<ModeleLu | null> {
  const { rows } = await db.query<Omit<ModeleLu, 'coefficients' | 'bandes'> & { calcule_le: Date }>(
    `SELECT calcule_le, to_char(reference_le, 'YYYY-MM-DD') AS reference_le,
            to_char(dvf_jusqu_au, 'YYYY-MM-DD') AS dvf_jusqu_au, base_pct, haut_pct, n_controle, perimetre
       FROM pre_marche_modele WHERE dataset = $1`,
    [dataset],
  );
  const m = rows[0];
  if (!m) return null;
  const [coefficients, bandes] = await Promise.all([
    db.query<ModeleLu['coefficients'][number]>(
      `SELECT signal, groupe, coefficient, coefficient_ajuste, lift_dvf, n_dvf, taux_dvf_pct, retenu
         FROM pre_marche_coefficients WHERE dataset = $1`,
      [dataset],
    ),
    db.query<ModeleLu['bandes'][number]>(
      `SELECT type_bien, bande, rang, n, indice_min, indice_max, taux_vente_12m_pct
         FROM pre_marche_bandes WHERE dataset = $1 ORDER BY type_bien, rang`,
      [dataset],
    ),
  ]);
  const ordre = new Map(SIGNAUX.map((s, i) => [s.signal as string, i]));
  return {
    ...m,
    calcule_le: m.calcule_le.toISOString(),
    coefficients: coefficients.rows.sort((a, b) => (ordre.get(a.signal) ?? 99) - (ordre.get(b.signal) ?? 99)),
    bandes: bandes.rows,
  };
}

/**
 * A row of pre_marche_scores as the operations read it: the score as the training wrote it (its DPE number and count
 * are not read back; a stored type or label may be wider than a trained one), with when it was computed.
 */
export type LigneScore = Omit<Score, 'numero_dpe' | 'nb_dpe' | 'type_bien' | 'etiquette'> & {
  type_bien: 'maison' | 'appartement' | 'immeuble' | 'autre';
  etiquette: string | null;
  calcule_le: Date;
  /** Read at the request: a listing online attached to the address's BAN number. */
  en_vente: boolean;
};

export const COLONNES_SCORE = `s.cle_ban, s.insee, s.code_postal, s.adresse, s.commune, s.lat, s.lon, s.type_bien,
  to_char(s.dpe_le, 'YYYY-MM-DD') AS dpe_le, s.etiquette, s.periode_construction, s.chauffage, s.surface_m2,
  to_char(s.audit_le, 'YYYY-MM-DD') AS audit_le, s.pack_pre_vente, s.variables, s.signaux, s.indice, s.bande,
  s.p_vente, s.lift, s.fenetre, s.priorite, s.vendue_depuis, to_char(s.derniere_vente_le, 'YYYY-MM-DD') AS derniere_vente_le,
  s.derniere_vente_prix, s.hors_perimetre, s.societes, s.permis, s.logements, s.frise, s.fiabilite, s.calcule_le,
  EXISTS (SELECT 1 FROM annonces a WHERE a.dataset = s.dataset AND a.cle_ban = s.cle_ban AND a.statut = 'actif')
    AS en_vente`;

export async function lireScore(db: Queryable, dataset: Dataset, cle: string): Promise<LigneScore | null> {
  const { rows } = await db.query<LigneScore>(
    `SELECT ${COLONNES_SCORE} FROM pre_marche_scores s WHERE s.dataset = $1 AND s.cle_ban = $2`,
    [dataset, cle],
  );
  return rows[0] ?? null;
}

export interface AnnonceAdresse {
  cle_ban: string;
  id: string;
  lien: string | null;
  parue_le: string | null;
  prix: number | null;
  type_vendeur: 'pro' | 'particulier' | 'inconnu';
  annonceur: { nom: string | null; enseigne: string | null; siren: string | null } | null;
  actif: boolean;
}

/** The latest listing seen at each of these addresses (the property first seen last), one query for a page. */
export async function dernieresAnnonces(
  db: Queryable,
  dataset: Dataset,
  cles: string[],
): Promise<Map<string, AnnonceAdresse>> {
  if (cles.length === 0) return new Map();
  const { rows } = await db.query<AnnonceAdresse>(
    `SELECT DISTINCT ON (cle_ban) cle_ban, id, lien, to_char(premiere_parution, 'YYYY-MM-DD') AS parue_le, prix,
            type_vendeur, annonceur, statut = 'actif' AS actif
       FROM annonces WHERE dataset = $1 AND cle_ban = ANY($2::text[])
      ORDER BY cle_ban, entree_le DESC, id`,
    [dataset, cles],
  );
  return new Map(rows.map((r) => [r.cle_ban, r]));
}
