import type { Queryable } from '../../db/client.ts';
import { type Commune, communeByCode, departementOf } from '../communes.ts';
import { absenceDvf, absenceSource } from '../couverture.ts';
import { loyersCommune, type LoyerCommune, type TypeLogement as TypeLoyer } from '../loyers/loyers.ts';
import type { Dataset } from '../platform/sandbox.ts';
import { zoneAbc } from '../zonage-abc/zone.ts';
import type { TypeLogement } from './agregats.ts';
import { bareme, evolution, lireMarche, TYPES_LOGEMENT, type ItemBareme, type Marche } from './prix.ts';

/**
 * The indicators of a commune shared by its market sheet (`commune`), the comparison and the rankings: each read from
 * an aggregate or a reference table (prices from `marche_prix`, rents from `loyers_communes`, F/G share from
 * `marche_dpe`, zone from `zonage_abc`), never from raw sales or DPE.
 */

export interface Indicateurs {
  commune: Commune | null;
  insee: string;
  prix: Record<TypeLogement, ItemBareme | null>;
  loyers: Partial<Record<TypeLoyer, LoyerCommune>>;
  rendement: Record<TypeLogement, number | null>;
  transactions: number;
  /** Sales counted in the price over the commune's latest 3 years of sales. */
  transactions3Ans: number;
  evolution3Ans: number | null;
  tendance: 'hausse' | 'baisse' | 'stable' | null;
  dpe: { n: number; passoires_pct: number | null; dernier: string | null } | null;
  zone: string | null;
  donneesDu: string | null;
  score: number | null;
  /** Why DVF has nothing there (Alsace-Moselle, Mayotte), or null. */
  absence: string | null;
}

/** Gross yield in %: a year of the predicted listing rent over the reference price. */
export const METHODE_RENDEMENT =
  'rendement brut = loyer d’annonce prédit (€/m²/mois, charges comprises, carte des loyers) × 12 / prix de référence au m² (barème DVF) × 100';

/**
 * score_attractivite, 0-100: the mean of the components the commune has, each on 0-100: the gross yield of flats
 * (else houses), 0 % → 0 and 10 % or more → 100; the 3-year price change, −20 % or less → 0 and +20 % or more → 100;
 * the share of DPE not F or G. Null without any component.
 */
export const METHODE_SCORE =
  'score_attractivite (0-100) : moyenne des composantes disponibles, chacune ramenée sur 0-100 : rendement brut des appartements (à défaut des maisons), 0 % → 0 et 10 % ou plus → 100 ; évolution des prix sur 3 ans, −20 % ou moins → 0 et +20 % ou plus → 100 ; part des DPE hors F et G. null sans aucune composante.';

const borne = (x: number) => Math.max(0, Math.min(100, x));

export function scoreAttractivite(
  rendement: number | null,
  evolution3Ans: number | null,
  passoiresPct: number | null,
): number | null {
  const parts = [
    rendement === null ? null : borne(rendement * 10),
    evolution3Ans === null ? null : borne(((evolution3Ans + 20) / 40) * 100),
    passoiresPct === null ? null : borne(100 - passoiresPct),
  ].filter((p): p is number => p !== null);
  return parts.length ? Math.round((parts.reduce((s, p) => s + p, 0) / parts.length) * 10) / 10 : null;
}

/** What the indicators of one commune are computed from: each read from an aggregate or a reference table. */
export interface Sources {
  marche: Marche;
  loyers: Partial<Record<TypeLoyer, LoyerCommune>>;
  zone: string | null;
  dpe: { dpe: number; passoires: number; dernier: string | null } | undefined;
}

/** The commune's indicators, or null when neither the administrative split nor the aggregates know the code. */
export async function indicateurs(db: Queryable, dataset: Dataset, insee: string): Promise<Indicateurs | null> {
  const commune = communeByCode(insee);
  const departement = commune?.departement ?? departementOf(insee);
  const [marche, loyers, zone, dpe] = await Promise.all([
    lireMarche(db, dataset, insee, departement),
    loyersCommune(db, dataset, insee),
    zoneAbc(db, dataset, insee),
    db.query<{ dpe: number; passoires: number; dernier: string | null }>(
      `SELECT dpe, passoires, to_char(dernier_dpe, 'YYYY-MM-DD') AS dernier FROM marche_dpe
        WHERE dataset = $1 AND insee = $2`,
      [dataset, insee],
    ),
  ]);
  if (!commune && marche.lignes.length === 0) return null;
  return calculerIndicateurs(insee, { marche, loyers, zone: zone?.zone ?? null, dpe: dpe.rows[0] });
}

/** Why a commune has no price: DVF absent or not imported for its département, else no sale of dwellings there. */
export async function raisonSansPrix(db: Queryable, dataset: Dataset, insee: string): Promise<string> {
  const departement = communeByCode(insee)?.departement ?? departementOf(insee);
  return (
    (await absenceSource(db, dataset, 'dvf', departement)) ??
    'Aucune vente DVF de logement dans la commune sur les millésimes détenus.'
  );
}

/**
 * The indicators of a commune from its sources: the market sheet reads them one commune at a time, the rebuild of
 * the rankings (derives.ts) for every commune at once, with the same rules.
 */
export function calculerIndicateurs(insee: string, { marche, loyers, zone, dpe: d }: Sources): Indicateurs {
  const commune = communeByCode(insee);
  const departement = commune?.departement ?? departementOf(insee);
  const absence = absenceDvf(departement);
  const items = absence ? [] : bareme(marche, TYPES_LOGEMENT, marche.donneesDu);
  const dernier = (type: TypeLogement) => items.filter((i) => i.type === type && i.prix_m2 !== null).at(-1) ?? null;
  const prix = { appartement: dernier('appartement'), maison: dernier('maison') };
  const rendementDe = (type: TypeLogement) => {
    const loyer = loyers[type]?.loyer_m2;
    const p = prix[type]?.prix_m2;
    return loyer == null || !p ? null : Math.round(((loyer * 12) / p) * 1000) / 10;
  };
  const rendement = { appartement: rendementDe('appartement'), maison: rendementDe('maison') };
  const evo = absence ? null : evolution(marche, marche.donneesDu);
  const passoires = d && d.dpe > 0 ? Math.round((d.passoires / d.dpe) * 1000) / 10 : null;
  const evolution3Ans = evo?.global.trois_ans ?? null;
  return {
    commune,
    insee,
    prix,
    loyers,
    rendement,
    transactions: evo?.transactions_annee_recente ?? 0,
    transactions3Ans: evo?.transactions_3_ans ?? 0,
    evolution3Ans,
    tendance:
      evo?.global.trois_ans == null ? null : evolution3Ans! > 5 ? 'hausse' : evolution3Ans! < -5 ? 'baisse' : 'stable',
    dpe: d ? { n: d.dpe, passoires_pct: passoires, dernier: d.dernier } : null,
    zone,
    donneesDu: marche.donneesDu,
    score: scoreAttractivite(rendement.appartement ?? rendement.maison, evolution3Ans, passoires),
    absence,
  };
}
