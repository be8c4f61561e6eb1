import type { Queryable } from '../../db/client.ts';
import type { Dataset } from '../platform/sandbox.ts';
import { BANDE_MIN, HORIZON_JOURS, PART_CONTROLE, SIGNAL_MIN, Z_MIN } from './entrainement.ts';
import { SIGNAUX } from './signaux.ts';

/** The pre_marche sheet of GET /modeles: what the last training run measured, read from its tables. */

export const METHODE_PRE_MARCHE = `Régression logistique pénalisée (L2) de la vente DVF dans les ${HORIZON_JOURS} jours qui suivent un DPE individuel, sur des signaux datés avant ce DPE (${SIGNAUX.map((s) => s.signal).join(', ')}). Exemples : les DPE dont les 12 mois suivants sont couverts par DVF, hors Alsace-Moselle et Mayotte. ${Math.round(PART_CONTROLE * 100)} % des adresses, tirées par empreinte de leur clé, sont tenues hors de l'ajustement : calibration, AUC et cohortes sont mesurées sur elles seules. Un signal est retenu s'il garde son signe sur les deux moitiés de l'apprentissage, porte sur ${SIGNAL_MIN} exemples au moins et dépasse ${Z_MIN} erreur type ; le modèle est réajusté sur les retenus. Bandes : quintiles de l'indice d'apprentissage, fusionnées sous ${BANDE_MIN} exemples tenus.`;

const ORDRE = new Map(SIGNAUX.map((s, i) => [s.signal as string, i]));

export async function lireFichePreMarche(db: Queryable, dataset: Dataset) {
  const [bandes, coefficients, decroissance, modele] = await Promise.all([
    db.query<{
      type_bien: string;
      bande: string;
      indice_min: number;
      indice_max: number;
      n: number;
      taux_vente_12m_pct: number;
      taux_predit_pct: number;
      tolerance_pct: number;
      calcule_le: Date;
    }>(
      `SELECT type_bien, bande, indice_min, indice_max, n, taux_vente_12m_pct, taux_predit_pct, tolerance_pct, calcule_le
         FROM pre_marche_bandes WHERE dataset = $1 ORDER BY type_bien <> 'tous', type_bien, rang`,
      [dataset],
    ),
    db.query<{
      signal: string;
      groupe: string;
      n_dvf: number;
      taux_dvf_pct: number | null;
      lift_dvf: number | null;
      coefficient: number;
      coefficient_ajuste: number;
      stable: boolean;
      retenu: boolean;
      calcule_le: Date;
    }>(
      `SELECT signal, groupe, n_dvf, taux_dvf_pct, lift_dvf, coefficient, coefficient_ajuste, stable, retenu, calcule_le
         FROM pre_marche_coefficients WHERE dataset = $1`,
      [dataset],
    ),
    db.query<{
      age_min_jours: number;
      age_max_jours: number;
      n: number;
      taux_vente_12m_pct: number;
      multiplicateur: number;
      calcule_le: Date;
    }>(
      `SELECT age_min_jours, age_max_jours, n, taux_vente_12m_pct, multiplicateur, calcule_le
         FROM pre_marche_decroissance WHERE dataset = $1 ORDER BY age_min_jours`,
      [dataset],
    ),
    db.query<{ calcule_le: Date; cohortes: Array<Record<string, unknown>> }>(
      `SELECT calcule_le, cohortes FROM pre_marche_modele WHERE dataset = $1`,
      [dataset],
    ),
  ]);
  const iso = (d: Date) => d.toISOString();
  const coefs = coefficients.rows.sort((a, b) => (ORDRE.get(a.signal) ?? 99) - (ORDRE.get(b.signal) ?? 99));
  const coefficient = (c: (typeof coefs)[number], valeur: number) => ({
    type_bien: 'tous',
    signal: c.signal,
    groupe: c.groupe,
    n_dvf: c.n_dvf,
    taux_dvf_pct: c.taux_dvf_pct,
    lift_dvf: c.lift_dvf,
    n_mise_en_vente: null,
    taux_mise_en_vente_pct: null,
    lift_mise_en_vente: null,
    stable: c.stable,
    retenu: c.retenu,
    coefficient: valeur,
    calcule_le: iso(c.calcule_le),
  });
  const m = modele.rows[0];
  return {
    calibration: bandes.rows.map((b) => ({ ...b, calcule_le: iso(b.calcule_le) })),
    coefficients: coefs.map((c) => coefficient(c, c.coefficient)),
    coefficients_ajustes: coefs.filter((c) => c.retenu).map((c) => coefficient(c, c.coefficient_ajuste)),
    decroissance: decroissance.rows.map((d) => ({ ...d, calcule_le: iso(d.calcule_le) })),
    cohortes: m
      ? m.cohortes.map((c) => ({
          ...(c as {
            semaine: string;
            type_bien: string;
            cohorte: string;
            seuil_score: number;
            n_haut: number;
            mise_en_vente_haut_pct: number | null;
            mise_en_vente_base_pct: number | null;
            lift_mise_en_vente: number | null;
            n_haut_dvf: number;
            vendu_haut_pct: number | null;
            vendu_base_pct: number | null;
            lift_vendu: number | null;
          }),
          calcule_le: iso(m.calcule_le),
        }))
      : [],
  };
}
