import type { Db, Queryable } from '../../db/client.ts';
import { VENTE_UN_LOGEMENT, type TypeLogement } from '../marche/agregats.ts';
import { bareme, lireMarche, TYPES_LOGEMENT } from '../marche/prix.ts';
import type { Dataset } from '../platform/sandbox.ts';
import { ecrireFiche, type Mesure } from './backtest.ts';
import { mediane } from './valeur.ts';
import { departementOf } from '../communes.ts';

/**
 * The backtest of the `bareme_prix` sheet: the commune price scale (domain/marche/prix.ts, prix_commune) against
 * sales it never saw.
 *
 * Method. The sales of one dwelling of the latest vintage are held out (VENTES_MAX at most, a fixed pseudo-random
 * draw by mutation id); each is compared with the scale's price per m² of its commune and type for the vintage before,
 * which is built from earlier sales only (its commune's medians of that vintage and the one before, its neighbours'
 * of that vintage). Errors on the price per m²: median absolute error, shares within ±10 % and ±20 %, and the median
 * signed error (the drift of a year of market plus the mix of what sold), per type.
 */

export const VENTES_MAX = 3000;
/** Held-out sales a type needs before its measures are published. */
export const TYPE_MIN = 20;

const pct = (v: number) => Math.round(v * 1000) / 10;

export interface BacktestBareme {
  millesime_teste: number | null;
  mesure_le: string;
  perimetre: string;
  mesures: Mesure[];
  limites: string[];
}

/** Measures the scale on the held-out vintage; writes nothing. */
export async function mesurerBareme(db: Queryable, dataset: Dataset, now: Date): Promise<BacktestBareme> {
  const mesure_le = now.toISOString();
  const limites: string[] = [];
  const { rows: m } = await db.query<{ dernier: number | null; premier: number | null }>(
    `SELECT max(millesime)::int AS dernier, min(millesime)::int AS premier FROM dvf_millesimes
      WHERE dataset = $1 AND mutations > 0`,
    [dataset],
  );
  const { dernier, premier } = m[0];
  if (dernier === null || premier === null || premier === dernier) {
    limites.push(
      'Un seul millésime DVF (ou aucun) : pas de barème antérieur pour estimer le dernier, l’erreur du barème n’est pas mesurée.',
    );
    return { millesime_teste: null, mesure_le, perimetre: '', mesures: [], limites };
  }
  const { rows: tenues } = await db.query<{ insee: string; type: TypeLogement; prix_m2: number }>(
    `SELECT m.insee, CASE WHEN 'appartement' = ANY(m.types_locaux) THEN 'appartement' ELSE 'maison' END AS type,
            m.prix_m2
       FROM dvf_mutations m
      WHERE m.dataset = $1 AND m.millesime = $2 AND ${VENTE_UN_LOGEMENT}
      ORDER BY md5(m.id_mutation) LIMIT $3`,
    [dataset, dernier, VENTES_MAX],
  );
  const communes = [...new Set(tenues.map((t) => t.insee))].sort();
  const perimetre = `${communes.length} commune${communes.length > 1 ? 's' : ''}, barème ${dernier - 1} pour estimer les ventes ${dernier}`;
  const prix = new Map<string, number>();
  for (const insee of communes) {
    const marche = await lireMarche(db, dataset, insee, departementOf(insee));
    for (const item of bareme(marche, TYPES_LOGEMENT, null)) {
      if (item.millesime === dernier - 1 && item.prix_m2 !== null) prix.set(`${insee}|${item.type}`, item.prix_m2);
    }
  }
  const erreurs = new Map<TypeLogement, number[]>();
  let sansBareme = 0;
  for (const v of tenues) {
    const p = prix.get(`${v.insee}|${v.type}`);
    if (p === undefined) {
      sansBareme++;
      continue;
    }
    erreurs.set(v.type, [...(erreurs.get(v.type) ?? []), p / v.prix_m2 - 1]);
  }
  const mesures: Mesure[] = [];
  for (const type of TYPES_LOGEMENT) {
    const e = erreurs.get(type) ?? [];
    if (e.length < TYPE_MIN) {
      limites.push(
        `${type} : ${e.length} ventes ${dernier} estimées par le barème, moins de ${TYPE_MIN} : erreur non mesurée.`,
      );
      continue;
    }
    const abs = e.map(Math.abs);
    const commun = {
      type_bien: type,
      unite: 'pct',
      echantillon: e.length,
      perimetre: `${type} ; ${perimetre}`,
      hors_echantillon: true,
    };
    mesures.push(
      {
        ...commun,
        indicateur: 'erreur_absolue_mediane',
        libelle: 'Erreur absolue médiane du prix au m² du barème',
        valeur: pct(mediane(abs)!),
      },
      {
        ...commun,
        indicateur: 'part_10',
        libelle: 'Part des prix au m² à ±10 % du barème',
        valeur: pct(abs.filter((a) => a <= 0.1).length / abs.length),
      },
      {
        ...commun,
        indicateur: 'part_20',
        libelle: 'Part des prix au m² à ±20 % du barème',
        valeur: pct(abs.filter((a) => a <= 0.2).length / abs.length),
      },
      {
        ...commun,
        indicateur: 'biais_median',
        libelle: 'Écart médian barème / prix au m² (positif : le barème surestime)',
        valeur: pct(mediane(e)!),
      },
    );
  }
  if (sansBareme > 0) {
    limites.push(`${sansBareme} ventes ${dernier} dans une commune sans barème ${dernier - 1} du type : non estimées.`);
  }
  return { millesime_teste: dernier, mesure_le, perimetre, mesures, limites };
}

export async function backtestBareme(db: Db, dataset: Dataset, now: Date): Promise<BacktestBareme> {
  const b = await mesurerBareme(db, dataset, now);
  await ecrireFiche(db, dataset, 'bareme_prix', b.mesure_le, b.mesures, b.limites);
  return b;
}
