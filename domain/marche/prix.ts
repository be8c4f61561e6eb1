import type { Queryable } from '../../db/client.ts';
import type { Dataset } from '../platform/sandbox.ts';
import { drapeaux, type Drapeau, type Qualite } from '../qualite.ts';
import { COLONNES_LIGNE_PRIX, type LignePrix, type TypeLogement } from './agregats.ts';

/**
 * The price scale of a commune (prix_commune) from the aggregates of `marche_prix` and the neighbourhoods of
 * `marche_bassins`: the figures and the rules that make them, in one place (the operation's description quotes these
 * constants).
 */

export const TYPES_LOGEMENT: readonly TypeLogement[] = ['appartement', 'maison'];
export const SOURCE_DVF = 'DVF (DGFiP, Etalab)';

/** Recent sales (the vintage and the one before) from which the commune's own median is served as `mesure`. */
export const SEUIL_MESURE = 10;
/** Weight, in sales, of the neighbouring communes in the shrinkage: poids_local = n / (n + PRIOR_VENTES). */
export const PRIOR_VENTES = 10;
/** A year's figure on fewer sales than this is flagged (basse_confiance, peu_d_observations); it is served anyway. */
export const SEUIL_CONFIANCE = 5;
/** Neighbouring communes: those whose centre lies within this box around the commune's centre (about 15 km). */
export const VOISINAGE = { lat: 0.135, lon: 0.19 } as const;

const arrondi = (n: number | null, pas = 1) => (n === null ? null : Math.round(n / pas) * pas);
const pct = (a: number | null | undefined, b: number | null | undefined) =>
  a == null || b == null || b === 0 ? null : Math.round((a / b - 1) * 1000) / 10;

/** Half-width of the ~95 % interval of a median, in % of it: 1.58 × IQR / √n (McGill, Tukey & Larsen). */
function demiBande(median: number | null, p25: number | null, p75: number | null, n: number): number | null {
  if (median === null || p25 === null || p75 === null || n < 2 || median <= 0) return null;
  return Math.round(((1.58 * (p75 - p25)) / Math.sqrt(n) / median) * 1000) / 10;
}

/**
 * The neighbourhood of a commune for one type and vintage, what the shrinkage of the scale borrows: precomputed by
 * the rebuild of the derived tables (table marche_bassins) from the neighbours' yearly medians (resumerBassins).
 */
export interface Bassin {
  type: TypeLogement;
  annee: number;
  /** Neighbouring communes having sales of the type in the vintage. */
  nb_voisins: number;
  /** Their sales, never 0: a neighbourhood without sales has no summary. */
  n_ventes: number;
  /** Their medians weighted by their sales. */
  prix_m2: number;
}

/**
 * The neighbourhood per type and vintage from the yearly aggregates of each neighbouring commune (their `marche_prix`
 * rows of the whole year): only the rows of a type of dwelling with sales count. The rebuild runs it for every commune
 * of France over its tens of neighbours: hence a numeric key and no concatenated list.
 */
export function resumerBassins(
  voisins: ReadonlyArray<ReadonlyArray<Pick<LignePrix, 'type' | 'annee' | 'ventes' | 'prix_m2_median'>>>,
): Bassin[] {
  const parTypeAnnee = new Map<number, Omit<Bassin, 'prix_m2'> & { somme: number }>();
  for (const lignes of voisins) {
    for (const v of lignes) {
      if (v.type === 'global' || v.ventes <= 0 || v.prix_m2_median === null) continue;
      const cle = v.annee * 2 + (v.type === 'maison' ? 1 : 0);
      let b = parTypeAnnee.get(cle);
      if (!b) parTypeAnnee.set(cle, (b = { type: v.type, annee: v.annee, nb_voisins: 0, n_ventes: 0, somme: 0 }));
      b.nb_voisins += 1;
      b.n_ventes += v.ventes;
      b.somme += v.ventes * v.prix_m2_median;
    }
  }
  return [...parTypeAnnee.values()].map(({ somme, ...b }) => ({ ...b, prix_m2: somme / b.n_ventes }));
}

export interface ItemBareme {
  type: TypeLogement;
  millesime: number;
  prix_m2: number | null;
  label: 'mesure' | 'estime' | null;
  n_ventes: number;
  n_ventes_recentes: number;
  nb_voisins: number;
  n_ventes_bassin: number;
  poids_local: number | null;
  dominance: number | null;
  demi_bande_pct: number | null;
  prix_m2_local: number | null;
  qualite: Qualite;
}

export interface Marche {
  lignes: LignePrix[];
  departement: LignePrix[];
  bassins: Bassin[];
  donneesDu: string | null;
}

/**
 * What the scale of a commune is made of, in two reads: the years of the commune and of its département (two ranges
 * of marche_prix's primary key), then its neighbourhood (one range of marche_bassins's) with the date of the sales.
 */
export async function lireMarche(db: Queryable, dataset: Dataset, insee: string, departement: string): Promise<Marche> {
  const [prix, voisinage] = await Promise.all([
    db.query<LignePrix & { niveau: 'commune' | 'departement' }>(
      `SELECT niveau, ${COLONNES_LIGNE_PRIX}
         FROM marche_prix
        WHERE dataset = $1 AND trimestre = 0
          AND ((niveau = 'commune' AND code = $2) OR (niveau = 'departement' AND code = $3))
        ORDER BY type, annee`,
      [dataset, insee, departement],
    ),
    // One row at least (the date), with the neighbourhood's rows when there are any.
    db.query<{ donnees_du: string | null } & { [K in keyof Bassin]: Bassin[K] | null }>(
      `SELECT d.donnees_du, b.type, b.annee, b.nb_voisins, b.n_ventes, b.prix_m2
         FROM (SELECT to_char(max(derniere_mutation), 'YYYY-MM-DD') AS donnees_du FROM dvf_millesimes
                WHERE dataset = $1) d
         LEFT JOIN marche_bassins b ON b.dataset = $1 AND b.insee = $2`,
      [dataset, insee],
    ),
  ]);
  const annees = (niveau: 'commune' | 'departement') =>
    prix.rows.filter((l) => l.niveau === niveau).map(({ niveau: _, ...l }) => l);
  return {
    lignes: annees('commune'),
    departement: annees('departement'),
    bassins: voisinage.rows.filter((b): b is typeof b & Bassin => b.type !== null).map(({ donnees_du: _, ...b }) => b),
    donneesDu: voisinage.rows[0]?.donnees_du ?? null,
  };
}

const annuelle = (lignes: LignePrix[], type: LignePrix['type'], annee: number) =>
  lignes.find((l) => l.type === type && l.annee === annee && l.trimestre === 0);

const METHODE_BAREME = `Médiane des prix au m² des ventes d'un seul logement (vente, VEFA, adjudication ; ni vente en bloc, ni local professionnel, ni prix ou surface hors bornes) du millésime. mesure : au moins ${SEUIL_MESURE} ventes du type sur le millésime et le précédent ; estime : sinon, rétrécissement vers la moyenne des médianes des communes voisines (centre à moins de ~15 km ; centre médian de ses ventes géolocalisées pour une commune dont le découpage administratif ne donne pas le centre) pondérée par leurs ventes, poids local n / (n + ${PRIOR_VENTES}).`;

/** The scale: for each type and each vintage the commune or its neighbours have, the price and how it was made. */
export function bareme(m: Marche, types: readonly TypeLogement[], donneesDu: string | null): ItemBareme[] {
  const annees = [...new Set([...m.lignes, ...m.bassins].map((l) => l.annee))].sort((a, b) => a - b);
  const items: ItemBareme[] = [];
  for (const type of types) {
    for (const annee of annees) {
      const local = annuelle(m.lignes, type, annee);
      const precedente = annuelle(m.lignes, type, annee - 1);
      const tous = annuelle(m.lignes, 'global', annee);
      const voisinage = m.bassins.find((b) => b.type === type && b.annee === annee);
      const n = local?.ventes ?? 0;
      const recentes = n + (precedente?.ventes ?? 0);
      const nBassin = voisinage?.n_ventes ?? 0;
      if (n === 0 && nBassin === 0) continue;
      const bassin = voisinage?.prix_m2 ?? null;
      const prixLocal = local?.prix_m2_median ?? null;
      let label: ItemBareme['label'];
      let prix: number | null;
      let poids: number;
      if (recentes >= SEUIL_MESURE || bassin === null) {
        // Enough sales, or no neighbour to borrow from: the commune's own median, however few its sales (flagged).
        label = n > 0 ? 'mesure' : null;
        prix = prixLocal;
        poids = 1;
      } else {
        label = 'estime';
        poids = n / (n + PRIOR_VENTES);
        prix = poids * (prixLocal ?? 0) + (1 - poids) * bassin;
      }
      // The dispersion measured in the commune, else in the département; over the sales the figure stands on.
      const dep = annuelle(m.departement, type, annee);
      const dispersion = local && n >= SEUIL_CONFIANCE ? local : (dep ?? local);
      const nEffectif = label === 'estime' ? n + PRIOR_VENTES : n;
      const bande = dispersion
        ? demiBande(dispersion.prix_m2_median, dispersion.prix_m2_p25, dispersion.prix_m2_p75, nEffectif)
        : null;
      const prixArrondi = arrondi(prix);
      const flags: Drapeau[] = [];
      if (n < SEUIL_CONFIANCE) flags.push('peu_d_observations');
      items.push({
        type,
        millesime: annee,
        prix_m2: prixArrondi,
        label,
        n_ventes: n,
        n_ventes_recentes: recentes,
        nb_voisins: voisinage?.nb_voisins ?? 0,
        n_ventes_bassin: nBassin,
        poids_local: label === null ? null : Math.round(poids * 1000) / 1000,
        dominance: tous && tous.ventes > 0 ? Math.round((n / tous.ventes) * 1000) / 1000 : null,
        demi_bande_pct: bande,
        prix_m2_local: arrondi(prixLocal),
        qualite: {
          n,
          provenance: label,
          incertitude:
            bande === null || prixArrondi === null
              ? null
              : {
                  demi_largeur_pct: bande,
                  bas: arrondi(prixArrondi * (1 - bande / 100)),
                  haut: arrondi(prixArrondi * (1 + bande / 100)),
                },
          drapeaux: drapeaux(flags),
          methode: METHODE_BAREME,
          donnees_du: donneesDu,
          source: SOURCE_DVF,
        },
      });
    }
  }
  return items;
}

/** A year of the commune: medians, counts, extremes and low-confidence flags by type. */
export function serie(lignes: LignePrix[]) {
  const annees = [...new Set(lignes.filter((l) => l.trimestre === 0).map((l) => l.annee))].sort((a, b) => a - b);
  return annees
    .map((annee) => {
      const a = annuelle(lignes, 'appartement', annee);
      const m = annuelle(lignes, 'maison', annee);
      const g = annuelle(lignes, 'global', annee);
      const faible = (l: LignePrix | undefined) => (l && l.ventes > 0 ? l.ventes < SEUIL_CONFIANCE : null);
      return {
        annee,
        prix_m2_appartement: arrondi(a?.prix_m2_median ?? null),
        prix_m2_maison: arrondi(m?.prix_m2_median ?? null),
        prix_m2_global: arrondi(g?.prix_m2_median ?? null),
        transactions: g?.ventes ?? 0,
        transactions_appartement: a?.ventes ?? 0,
        transactions_maison: m?.ventes ?? 0,
        min_appartement: arrondi(a?.prix_m2_min ?? null),
        max_appartement: arrondi(a?.prix_m2_max ?? null),
        min_maison: arrondi(m?.prix_m2_min ?? null),
        max_maison: arrondi(m?.prix_m2_max ?? null),
        basse_confiance_appartement: faible(a),
        basse_confiance_maison: faible(m),
      };
    })
    .filter((s) => s.transactions > 0);
}

/** Change of the median between the last year and 1, 3 and 5 years before, in % (null when a year is missing). */
function variations(lignes: LignePrix[], type: LignePrix['type'], derniere: number) {
  const median = (annee: number) => {
    const l = annuelle(lignes, type, annee);
    return l && l.ventes > 0 ? l.prix_m2_median : null;
  };
  const fin = median(derniere);
  return {
    un_an: pct(fin, median(derniere - 1)),
    trois_ans: pct(fin, median(derniere - 3)),
    cinq_ans: pct(fin, median(derniere - 5)),
  };
}

export const METHODE_EVOLUTION = `Variation en % de la médiane annuelle du prix au m² entre la dernière année de ventes de la commune et 1, 3 et 5 ans plus tôt (null si l'une des deux années n'a pas de vente) ; tendance_5_ans : hausse ou baisse au-delà de ±5 % sur 5 ans (à défaut sur 3 ans), stable sinon ; confiance : haute dès 30 ventes la dernière année, moyenne dès 10, basse en deçà ; departement : les mêmes variations, toutes ventes du département.`;

export function evolution(m: Marche, donneesDu: string | null) {
  const annees = m.lignes.filter((l) => l.type === 'global' && l.trimestre === 0 && l.ventes > 0).map((l) => l.annee);
  if (annees.length === 0) return null;
  const derniere = Math.max(...annees);
  const global = variations(m.lignes, 'global', derniere);
  const recente = annuelle(m.lignes, 'global', derniere)?.ventes ?? 0;
  const troisAns = [0, 1, 2].reduce((s, k) => s + (annuelle(m.lignes, 'global', derniere - k)?.ventes ?? 0), 0);
  const reference = global.cinq_ans ?? global.trois_ans;
  const dep = variations(m.departement, 'global', derniere);
  return {
    appartement: variations(m.lignes, 'appartement', derniere),
    maison: variations(m.lignes, 'maison', derniere),
    global,
    tendance_5_ans: (reference === null ? null : reference > 5 ? 'hausse' : reference < -5 ? 'baisse' : 'stable') as
      'hausse' | 'baisse' | 'stable' | null,
    confiance: (recente >= 30 ? 'haute' : recente >= 10 ? 'moyenne' : 'basse') as 'haute' | 'moyenne' | 'basse',
    derniere_annee: derniere,
    transactions_annee_recente: recente,
    transactions_3_ans: troisAns,
    departement: { un_an: dep.un_an, trois_ans: dep.trois_ans },
    qualite: {
      n: troisAns,
      provenance: 'mesure' as const,
      incertitude: null,
      drapeaux: drapeaux(recente < SEUIL_CONFIANCE ? ['peu_d_observations'] : []),
      methode: METHODE_EVOLUTION,
      donnees_du: donneesDu,
      source: SOURCE_DVF,
    },
  };
}

/**
 * The département's yearly index per type: its median of the year over its median of its last year. Medians of
 * every one-dwelling sale of each year, not a repeat-sales index (DVF does not tie a dwelling's successive sales
 * together reliably): the mix of what sells each year moves it too.
 */
export function indiceDepartement(departement: string, lignes: LignePrix[]) {
  const out: Array<{ departement: string; type: TypeLogement; annee: number; coef: number; n_ventes: number }> = [];
  for (const type of TYPES_LOGEMENT) {
    const annees = lignes.filter((l) => l.type === type && l.trimestre === 0 && l.ventes > 0 && l.prix_m2_median);
    const base = annees.at(-1);
    if (!base?.prix_m2_median) continue;
    for (const l of annees) {
      out.push({
        departement,
        type,
        annee: l.annee,
        coef: Math.round((l.prix_m2_median! / base.prix_m2_median) * 10_000) / 10_000,
        n_ventes: l.ventes,
      });
    }
  }
  return out;
}

/** The commune's latest scale price of each type carried back over the years by the département's index. */
export function ligneIndexee(items: ItemBareme[], indice: ReturnType<typeof indiceDepartement>) {
  const dernier = (type: TypeLogement) => items.filter((i) => i.type === type && i.prix_m2 !== null).at(-1)?.prix_m2;
  const annees = [...new Set(indice.map((i) => i.annee))].sort((a, b) => a - b);
  return annees.map((annee) => {
    const valeur = (type: TypeLogement) => {
      const prix = dernier(type);
      const coef = indice.find((i) => i.type === type && i.annee === annee)?.coef;
      return prix == null || coef === undefined ? null : Math.round(prix * coef);
    };
    return { annee, prix_m2_appartement: valeur('appartement'), prix_m2_maison: valeur('maison') };
  });
}
