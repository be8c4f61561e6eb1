import type { PoolClient } from 'pg';
import { transaction, type Db, type Queryable } from '../../db/client.ts';
import { communeByCode } from '../communes.ts';
import type { LoyerCommune, TypeLogement as TypeLoyer } from '../loyers/loyers.ts';
import { natureLoyer } from '../loyers/loyers.ts';
import type { Dataset } from '../platform/sandbox.ts';
import { COLONNES_LIGNE_PRIX, type LignePrix, type TypeLogement } from './agregats.ts';
import { ARRONDISSEMENTS } from './entrees.ts';
import { calculerIndicateurs, type Indicateurs, type Sources } from './indicateurs.ts';
import { reconstruireIris } from './iris.ts';
import { resumerBassins, VOISINAGE, type Bassin } from './prix.ts';
import { reconstruireSecteurs } from './secteur.ts';

/**
 * The derived tables of palmares_communes, comparer_communes, prix_iris and secteur (db/migrations/024) and the
 * neighbourhoods of prix_commune's scale (026): rebuilt whole for a dataset after each DVF, DPE, rent, A/B/C zoning or
 * IRIS import, in one transaction, from the aggregates of `marche_prix` and the reference tables, with the rules of
 * the market sheet (calculerIndicateurs).
 */

/** The tables these rebuilds write, each with a `dataset` column. */
export const TABLES_MARCHE = [
  'marche_indicateurs',
  'marche_classement',
  'marche_derives',
  'marche_iris',
  'marche_secteur',
  'marche_bassins',
] as const;

/** The loan assumption of the cash-flow: documented in palmares_communes's description. */
export const CREDIT = {
  /** Nominal yearly rate. */
  taux: 0.035,
  annees: 20,
  /** Notary fees and guarantee, financed with the price (no down payment). */
  frais: 0.08,
  /** Share of the rent left to the owner's charges: property tax, non-recoverable charges, vacancy, management. */
  charges: 0.25,
} as const;

export const METHODE_CASHFLOW = `cash-flow mensuel par m² = loyer d’annonce prédit × (1 − ${CREDIT.charges * 100} % de charges, taxe foncière, vacance et gestion) − mensualité d’un prêt de ${CREDIT.annees} ans à ${(CREDIT.taux * 100).toFixed(1).replace('.', ',')} % (taux nominal, amortissable, mensualités constantes) finançant le prix de référence au m² plus ${CREDIT.frais * 100} % de frais, sans apport ; appartements, à défaut maisons`;

/** Monthly payment per euro borrowed. */
const MENSUALITE = (() => {
  const t = CREDIT.taux / 12;
  const n = CREDIT.annees * 12;
  return t / (1 - (1 + t) ** -n);
})();

export function cashflowM2Mois(loyerM2: number | null, prixM2: number | null): number | null {
  if (loyerM2 === null || prixM2 === null || prixM2 <= 0) return null;
  return Math.round((loyerM2 * (1 - CREDIT.charges) - prixM2 * (1 + CREDIT.frais) * MENSUALITE) * 100) / 100;
}

/** The expected-price model of sous-evaluees, per type: ln(prix) = a + b ln(loyer) + c ln(population). */
export interface ModelePrix {
  type: TypeLogement;
  n: number;
  coefficients: { constante: number; ln_loyer: number; ln_population: number } | null;
  r2: number | null;
}

/** Fewer communes than this and no model is fitted: the residual is null. */
export const MIN_COMMUNES_MODELE = 8;

/** Ordinary least squares with 3 parameters (normal equations, Gaussian elimination). */
export function ajuster(
  x: Array<[number, number]>,
  y: number[],
): { beta: [number, number, number]; r2: number } | null {
  const n = y.length;
  if (n < MIN_COMMUNES_MODELE) return null;
  const a = [
    [0, 0, 0, 0],
    [0, 0, 0, 0],
    [0, 0, 0, 0],
  ];
  for (let k = 0; k < n; k++) {
    const v = [1, x[k][0], x[k][1]];
    for (let i = 0; i < 3; i++) {
      for (let j = 0; j < 3; j++) a[i][j] += v[i] * v[j];
      a[i][3] += v[i] * y[k];
    }
  }
  // A constant column (all communes of one population, one rent): a ridge on the slopes keeps the system solvable.
  for (let i = 1; i < 3; i++) a[i][i] += 1e-6 * n;
  for (let c = 0; c < 3; c++) {
    let p = c;
    for (let r = c + 1; r < 3; r++) if (Math.abs(a[r][c]) > Math.abs(a[p][c])) p = r;
    [a[c], a[p]] = [a[p], a[c]];
    if (Math.abs(a[c][c]) < 1e-12) return null;
    for (let r = 0; r < 3; r++) {
      if (r === c) continue;
      const f = a[r][c] / a[c][c];
      for (let j = c; j < 4; j++) a[r][j] -= f * a[c][j];
    }
  }
  const beta: [number, number, number] = [a[0][3] / a[0][0], a[1][3] / a[1][1], a[2][3] / a[2][2]];
  const moyenne = y.reduce((s, v) => s + v, 0) / n;
  let sse = 0;
  let sst = 0;
  for (let k = 0; k < n; k++) {
    const pred = beta[0] + beta[1] * x[k][0] + beta[2] * x[k][1];
    sse += (y[k] - pred) ** 2;
    sst += (y[k] - moyenne) ** 2;
  }
  return { beta, r2: sst > 0 ? 1 - sse / sst : 0 };
}

export const METHODE_RESIDUEL = `prix_residuel_pct = (prix de référence / prix attendu − 1) × 100, appartements à défaut maisons ; prix attendu = exp(a + b ln(loyer d’annonce prédit) + c ln(population)), régression linéaire (moindres carrés) ajustée à chaque reconstruction, par type, sur les communes du jeu de données dont le prix est mesuré (label mesure) et qui ont un loyer et une population ; pas de modèle sous ${MIN_COMMUNES_MODELE} communes (null). Une commune est sous-évaluée quand son prix est sous ce que son loyer et sa taille prédisent`;

/** A row of marche_indicateurs, named as its columns. */
export interface LigneIndicateurs {
  insee: string;
  commune: string | null;
  code_postal: string | null;
  departement: string;
  region: string | null;
  population: number | null;
  transactions: number;
  prix_m2_appartement: number | null;
  prix_m2_maison: number | null;
  prix_m2_logement: number | null;
  loyer_m2_appartement: number | null;
  loyer_m2_maison: number | null;
  loyer_m2_predit: number | null;
  rendement_brut_appartement_pct: number | null;
  rendement_brut_maison_pct: number | null;
  cashflow_m2_mois: number | null;
  prix_residuel_pct: number | null;
  evolution_3_ans_pct: number | null;
  passoires_dpe_fg_pct: number | null;
  dpe_n: number;
  zone_abc: string | null;
  score_attractivite: number | null;
}

/** The row of a commune from its indicators (the residual is set once the model is fitted). */
export function ligneDe(i: Indicateurs): LigneIndicateurs {
  const pa = i.prix.appartement;
  const pm = i.prix.maison;
  let logement: number | null = null;
  if (pa?.prix_m2 != null && pm?.prix_m2 != null) {
    const wa = pa.n_ventes_recentes;
    const wm = pm.n_ventes_recentes;
    logement = wa + wm > 0 ? (pa.prix_m2 * wa + pm.prix_m2 * wm) / (wa + wm) : (pa.prix_m2 + pm.prix_m2) / 2;
    logement = Math.round(logement);
  } else logement = pa?.prix_m2 ?? pm?.prix_m2 ?? null;
  const la = i.loyers.appartement?.loyer_m2 ?? null;
  const lm = i.loyers.maison?.loyer_m2 ?? null;
  const cashflow =
    pa?.prix_m2 != null && la !== null ? cashflowM2Mois(la, pa.prix_m2) : cashflowM2Mois(lm, pm?.prix_m2 ?? null);
  return {
    insee: i.insee,
    commune: i.commune?.nom ?? null,
    code_postal: i.commune?.codesPostaux[0] ?? null,
    departement: i.commune?.departement ?? i.insee.slice(0, i.insee.startsWith('97') ? 3 : 2),
    region: i.commune?.region ?? null,
    population: i.commune?.population ?? null,
    transactions: i.transactions3Ans,
    prix_m2_appartement: pa?.prix_m2 ?? null,
    prix_m2_maison: pm?.prix_m2 ?? null,
    prix_m2_logement: logement,
    loyer_m2_appartement: la,
    loyer_m2_maison: lm,
    loyer_m2_predit: la ?? lm,
    rendement_brut_appartement_pct: i.rendement.appartement,
    rendement_brut_maison_pct: i.rendement.maison,
    cashflow_m2_mois: cashflow,
    prix_residuel_pct: null,
    evolution_3_ans_pct: i.evolution3Ans,
    passoires_dpe_fg_pct: i.dpe?.passoires_pct ?? null,
    dpe_n: i.dpe?.n ?? 0,
    zone_abc: i.zone,
    score_attractivite: i.score,
  };
}

/** Fits the expected-price model per type on the measured communes, and sets each commune's residual. */
export function residuels(lignes: Array<{ ligne: LigneIndicateurs; i: Indicateurs }>): ModelePrix[] {
  const modeles: ModelePrix[] = [];
  const parType = new Map<TypeLogement, (l: LigneIndicateurs) => number | null>();
  for (const type of ['appartement', 'maison'] as const) {
    const loyer = (l: LigneIndicateurs) => (type === 'appartement' ? l.loyer_m2_appartement : l.loyer_m2_maison);
    const prix = (l: LigneIndicateurs) => (type === 'appartement' ? l.prix_m2_appartement : l.prix_m2_maison);
    const utilisable = (l: LigneIndicateurs) => loyer(l) !== null && prix(l) !== null && (l.population ?? 0) > 0;
    const echantillon = lignes.filter(({ ligne, i }) => utilisable(ligne) && i.prix[type]?.label === 'mesure');
    const fit = ajuster(
      echantillon.map(({ ligne }) => [Math.log(loyer(ligne)!), Math.log(ligne.population!)]),
      echantillon.map(({ ligne }) => Math.log(prix(ligne)!)),
    );
    modeles.push({
      type,
      n: echantillon.length,
      coefficients: fit ? { constante: fit.beta[0], ln_loyer: fit.beta[1], ln_population: fit.beta[2] } : null,
      r2: fit ? Math.round(fit.r2 * 1000) / 1000 : null,
    });
    parType.set(type, (l) => {
      if (!fit || !utilisable(l)) return null;
      const attendu = Math.exp(fit.beta[0] + fit.beta[1] * Math.log(loyer(l)!) + fit.beta[2] * Math.log(l.population!));
      return Math.round((prix(l)! / attendu - 1) * 1000) / 10;
    });
  }
  for (const { ligne } of lignes) {
    ligne.prix_residuel_pct = parType.get('appartement')!(ligne) ?? parType.get('maison')!(ligne);
  }
  return modeles;
}

// ---------------------------------------------------------------------------------------------------------------
// The rankings.
// ---------------------------------------------------------------------------------------------------------------

export const INDICATEURS = [
  'rendement-locatif',
  'cashflow-positif',
  'pinel-a',
  'prix-bas',
  'prix-eleve',
  'peu-de-passoires',
  'score-svc',
  'sous-evaluees',
  'meilleur-rendement',
  'sous-evaluees-et-rendement',
] as const;
export type Indicateur = (typeof INDICATEURS)[number];

const meilleurRendement = (l: LigneIndicateurs) =>
  l.rendement_brut_appartement_pct === null && l.rendement_brut_maison_pct === null
    ? null
    : Math.max(l.rendement_brut_appartement_pct ?? -Infinity, l.rendement_brut_maison_pct ?? -Infinity);

/** Fewer DPE than this and a commune's F/G share is not ranked (peu-de-passoires). */
export const MIN_DPE_PASSOIRES = 10;

export interface DefinitionIndicateur {
  libelle: string;
  /** desc: the highest value first. */
  sens: 'asc' | 'desc';
  valeur: (l: LigneIndicateurs) => number | null;
  /** The condition a commune meets to be ranked, said in filtres_appliques. */
  condition?: { test: (l: LigneIndicateurs) => boolean; libelle: string };
  /** Whether the indicator rests on DVF prices (the default threshold of transactions applies). */
  surPrix: boolean;
  methode: string;
}

export const DEFINITIONS: Record<Indicateur, DefinitionIndicateur> = {
  'rendement-locatif': {
    libelle: 'Rendement locatif brut le plus élevé',
    sens: 'desc',
    valeur: (l) => l.rendement_brut_appartement_pct ?? l.rendement_brut_maison_pct,
    surPrix: true,
    methode: 'valeur : rendement brut des appartements (à défaut des maisons), en %',
  },
  'cashflow-positif': {
    libelle: 'Cash-flow positif à crédit',
    sens: 'desc',
    valeur: (l) => l.cashflow_m2_mois,
    condition: { test: (l) => (l.cashflow_m2_mois ?? 0) > 0, libelle: 'cash-flow mensuel par m² > 0 €' },
    surPrix: true,
    methode:
      'valeur : cash-flow mensuel en € par m², du plus élevé au plus bas ; seules les communes où il est positif',
  },
  'pinel-a': {
    libelle: 'Zones A bis et A (investissement locatif neuf), par rendement',
    sens: 'desc',
    valeur: (l) => l.rendement_brut_appartement_pct ?? l.rendement_brut_maison_pct,
    condition: { test: (l) => l.zone_abc === 'Abis' || l.zone_abc === 'A', libelle: 'zone A/B/C : Abis ou A' },
    surPrix: true,
    methode:
      'communes en zone Abis ou A du zonage A/B/C en vigueur (l’arrondissement lit la zone de sa commune), classées par rendement brut des appartements (à défaut des maisons) ; valeur : ce rendement en %',
  },
  'prix-bas': {
    libelle: 'Prix au m² les plus bas',
    sens: 'asc',
    valeur: (l) => l.prix_m2_logement,
    surPrix: true,
    methode:
      'valeur : prix de référence au m² des logements (€/m²), moyenne des prix du barème des appartements et des maisons pondérée par les ventes récentes de chaque type (le seul type présent sinon)',
  },
  'prix-eleve': {
    libelle: 'Prix au m² les plus élevés',
    sens: 'desc',
    valeur: (l) => l.prix_m2_logement,
    surPrix: true,
    methode:
      'valeur : prix de référence au m² des logements (€/m²), moyenne des prix du barème des appartements et des maisons pondérée par les ventes récentes de chaque type (le seul type présent sinon)',
  },
  'peu-de-passoires': {
    libelle: 'Part de passoires thermiques (DPE F et G) la plus faible',
    sens: 'asc',
    valeur: (l) => l.passoires_dpe_fg_pct,
    condition: { test: (l) => l.dpe_n >= MIN_DPE_PASSOIRES, libelle: `au moins ${MIN_DPE_PASSOIRES} DPE` },
    surPrix: false,
    methode:
      'valeur : part des DPE F et G parmi les DPE de la commune (un DPE remplacé par un plus récent n’est pas compté), en %',
  },
  'score-svc': {
    libelle: 'Score d’attractivité le plus élevé',
    sens: 'desc',
    valeur: (l) => l.score_attractivite,
    surPrix: true,
    methode: 'valeur : score_attractivite (0-100)',
  },
  'sous-evaluees': {
    libelle: 'Communes sous-évaluées',
    sens: 'asc',
    valeur: (l) => l.prix_residuel_pct,
    condition: { test: (l) => (l.prix_residuel_pct ?? 0) < 0, libelle: 'prix_residuel_pct < 0' },
    surPrix: true,
    methode: 'valeur : prix_residuel_pct, de la plus sous-évaluée à la moins',
  },
  'meilleur-rendement': {
    libelle: 'Meilleur rendement brut, appartements ou maisons',
    sens: 'desc',
    valeur: meilleurRendement,
    surPrix: true,
    methode: 'valeur : le plus élevé des rendements bruts des appartements et des maisons, en %',
  },
  'sous-evaluees-et-rendement': {
    libelle: 'Communes sous-évaluées, par rendement',
    sens: 'desc',
    valeur: meilleurRendement,
    condition: { test: (l) => (l.prix_residuel_pct ?? 0) < 0, libelle: 'prix_residuel_pct < 0' },
    surPrix: true,
    methode:
      'communes sous-évaluées (prix_residuel_pct < 0) classées par le plus élevé de leurs rendements bruts ; valeur : ce rendement en %',
  },
};

/** The ranking rows of a commune: one per indicator it has a value for and whose condition it meets. */
export function classements(l: LigneIndicateurs) {
  const out: Array<{ indicateur: Indicateur; cle: number; valeur: number }> = [];
  for (const indicateur of INDICATEURS) {
    const d = DEFINITIONS[indicateur];
    const v = d.valeur(l);
    if (v === null || !Number.isFinite(v) || (d.condition && !d.condition.test(l))) continue;
    out.push({ indicateur, cle: d.sens === 'asc' ? v : -v, valeur: v });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// The rebuild.
// ---------------------------------------------------------------------------------------------------------------

type Executant = Db | PoolClient;

async function enTransaction<T>(db: Executant, work: (client: Queryable) => Promise<T>): Promise<T> {
  if ('release' in db) {
    await db.query('BEGIN');
    try {
      const r = await work(db);
      await db.query('COMMIT');
      return r;
    } catch (error) {
      await db.query('ROLLBACK');
      throw error;
    }
  }
  return transaction(db, work);
}

interface LignePrixCode extends LignePrix {
  code: string;
}

/** Neighbours by a grid of the box of VOISINAGE: the communes whose centre lies in the box around a centre. */
function grille(centres: Array<{ insee: string; lat: number; lon: number }>) {
  const cle = (a: number, b: number) => `${a}|${b}`;
  const cases = new Map<string, typeof centres>();
  for (const c of centres) {
    const k = cle(Math.floor(c.lat / VOISINAGE.lat), Math.floor(c.lon / VOISINAGE.lon));
    const l = cases.get(k);
    if (l) l.push(c);
    else cases.set(k, [c]);
  }
  return (lat: number, lon: number, insee: string) => {
    const out: string[] = [];
    const i0 = Math.floor(lat / VOISINAGE.lat);
    const j0 = Math.floor(lon / VOISINAGE.lon);
    for (let i = i0 - 1; i <= i0 + 1; i++) {
      for (let j = j0 - 1; j <= j0 + 1; j++) {
        for (const c of cases.get(cle(i, j)) ?? []) {
          if (
            c.insee !== insee &&
            c.lat >= lat - VOISINAGE.lat &&
            c.lat <= lat + VOISINAGE.lat &&
            c.lon >= lon - VOISINAGE.lon &&
            c.lon <= lon + VOISINAGE.lon
          ) {
            out.push(c.insee);
          }
        }
      }
    }
    return out;
  };
}

const grouper = <T, K>(rows: T[], cle: (r: T) => K) => {
  const m = new Map<K, T[]>();
  for (const r of rows) {
    const l = m.get(cle(r));
    if (l) l.push(r);
    else m.set(cle(r), [r]);
  }
  return m;
};

/** Reads every source of the indicators of `dataset` and computes every commune's row. */
export async function calculerTout(db: Queryable, dataset: Dataset) {
  // One query after another: inside the rebuild's transaction they share one connection.
  const prix = await db.query<LignePrixCode>(
    `SELECT code, ${COLONNES_LIGNE_PRIX} FROM marche_prix WHERE dataset = $1 AND niveau = 'commune' AND trimestre = 0
        ORDER BY code, type, annee`,
    [dataset],
  );
  const deps = await db.query<LignePrixCode>(
    `SELECT code, ${COLONNES_LIGNE_PRIX} FROM marche_prix WHERE dataset = $1 AND niveau = 'departement' AND trimestre = 0
        ORDER BY code, type, annee`,
    [dataset],
  );
  // A commune's centre as the administrative split gives it, else the centre of its sales (marche_centres).
  const centres = await db.query<{ insee: string; lat: number; lon: number }>(
    `SELECT insee, lat, lon FROM communes WHERE dataset = $1 AND lat IS NOT NULL AND lon IS NOT NULL
     UNION ALL
     SELECT s.insee, s.lat, s.lon FROM marche_centres s
      WHERE s.dataset = $1 AND NOT EXISTS (SELECT 1 FROM communes c WHERE c.dataset = s.dataset AND c.insee = s.insee
                                                                     AND c.lat IS NOT NULL AND c.lon IS NOT NULL)`,
    [dataset],
  );
  const loyers = await db.query<Omit<LoyerCommune, 'nature'>>(
    `SELECT DISTINCT ON (insee, type_logement) insee, commune, type_logement, edition, loyer_m2,
              loyer_m2_bas AS bas_m2, loyer_m2_haut AS haut_m2, niveau_prediction, nb_obs_commune, nb_obs_maille,
              r2_ajuste
         FROM loyers_communes WHERE dataset = $1 ORDER BY insee, type_logement, edition DESC`,
    [dataset],
  );
  const zones = await db.query<{ insee: string; zone: string }>(
    `SELECT DISTINCT ON (insee) insee, zone FROM zonage_abc WHERE dataset = $1 ORDER BY insee, en_vigueur_le DESC`,
    [dataset],
  );
  const dpe = await db.query<{ insee: string; dpe: number; passoires: number; dernier: string | null }>(
    `SELECT insee, dpe, passoires, to_char(dernier_dpe, 'YYYY-MM-DD') AS dernier FROM marche_dpe WHERE dataset = $1`,
    [dataset],
  );
  const date = await db.query<{ d: string | null }>(
    `SELECT to_char(max(derniere_mutation), 'YYYY-MM-DD') AS d FROM dvf_millesimes WHERE dataset = $1`,
    [dataset],
  );
  const donneesDu = date.rows[0]?.d ?? null;
  const parCode = grouper(prix.rows, (r) => r.code);
  const parDep = grouper(deps.rows, (r) => r.code);
  const loyersParInsee = grouper(loyers.rows, (r) => r.insee);
  const zoneDe = new Map(zones.rows.map((z) => [z.insee, z.zone]));
  const dpeDe = new Map(dpe.rows.map((d) => [d.insee, d]));
  const voisinsDe = grille(centres.rows);
  // Every commune with a centre, sales of its own or not: one without any is still estimated from its neighbours.
  const bassins = new Map<string, Bassin[]>();
  for (const c of centres.rows) {
    const bassin = resumerBassins(voisinsDe(c.lat, c.lon, c.insee).map((v) => parCode.get(v) ?? []));
    if (bassin.length > 0) bassins.set(c.insee, bassin);
  }
  const codes = new Set<string>([...parCode.keys(), ...loyersParInsee.keys(), ...dpeDe.keys()]);
  const lignes: Array<{ ligne: LigneIndicateurs; i: Indicateurs }> = [];
  for (const insee of codes) {
    // Paris, Lyon and Marseille are read by arrondissement: the city's own code (a rent file may list it) is not ranked.
    if (ARRONDISSEMENTS[insee]) continue;
    const commune = communeByCode(insee);
    const propres = parCode.get(insee) ?? [];
    if (!commune && propres.length === 0) continue;
    const departement = commune?.departement ?? insee.slice(0, 2);
    const sources: Sources = {
      marche: {
        lignes: propres,
        departement: parDep.get(departement) ?? [],
        bassins: bassins.get(insee) ?? [],
        donneesDu,
      },
      loyers: Object.fromEntries(
        (loyersParInsee.get(insee) ?? []).map((l) => [
          l.type_logement,
          { ...l, nature: natureLoyer(l.niveau_prediction, l.nb_obs_commune) },
        ]),
      ) as Partial<Record<TypeLoyer, LoyerCommune>>,
      zone: zoneDe.get(insee) ?? (commune?.communeParente ? (zoneDe.get(commune.communeParente) ?? null) : null),
      dpe: dpeDe.get(insee),
    };
    const i = calculerIndicateurs(insee, sources);
    lignes.push({ ligne: ligneDe(i), i });
  }
  const modeles = residuels(lignes);
  return { lignes, modeles, donneesDu, bassins };
}

const COLONNES_INDICATEURS = [
  'insee',
  'commune',
  'code_postal',
  'departement',
  'region',
  'population',
  'transactions',
  'prix_m2_appartement',
  'prix_m2_maison',
  'prix_m2_logement',
  'loyer_m2_appartement',
  'loyer_m2_maison',
  'loyer_m2_predit',
  'rendement_brut_appartement_pct',
  'rendement_brut_maison_pct',
  'cashflow_m2_mois',
  'prix_residuel_pct',
  'evolution_3_ans_pct',
  'passoires_dpe_fg_pct',
  'dpe_n',
  'zone_abc',
  'score_attractivite',
] as const satisfies ReadonlyArray<keyof LigneIndicateurs>;

const TYPES_SQL: Record<(typeof COLONNES_INDICATEURS)[number], string> = {
  insee: 'text',
  commune: 'text',
  code_postal: 'text',
  departement: 'text',
  region: 'text',
  population: 'integer',
  transactions: 'integer',
  dpe_n: 'integer',
  zone_abc: 'text',
  prix_m2_appartement: 'float8',
  prix_m2_maison: 'float8',
  prix_m2_logement: 'float8',
  loyer_m2_appartement: 'float8',
  loyer_m2_maison: 'float8',
  loyer_m2_predit: 'float8',
  rendement_brut_appartement_pct: 'float8',
  rendement_brut_maison_pct: 'float8',
  cashflow_m2_mois: 'float8',
  prix_residuel_pct: 'float8',
  evolution_3_ans_pct: 'float8',
  passoires_dpe_fg_pct: 'float8',
  score_attractivite: 'float8',
};

/** Rows written in one statement: a JSON array read by json_to_recordset. */
const LOT = 5000;

/** Replaces the dataset's neighbourhoods (marche_bassins) by these; returns the rows written. */
async function ecrireBassins(client: Queryable, dataset: Dataset, bassins: Map<string, Bassin[]>) {
  await client.query('DELETE FROM marche_bassins WHERE dataset = $1', [dataset]);
  const lignes = [...bassins].flatMap(([insee, liste]) => liste.map((b) => ({ insee, ...b })));
  for (let k = 0; k < lignes.length; k += LOT) {
    await client.query(
      `INSERT INTO marche_bassins (dataset, insee, type, annee, nb_voisins, n_ventes, prix_m2)
       SELECT $1, insee, type, annee, nb_voisins, n_ventes, prix_m2
         FROM json_to_recordset($2::json) AS r(insee text, type text, annee smallint, nb_voisins integer,
                                               n_ventes integer, prix_m2 float8)`,
      [dataset, JSON.stringify(lignes.slice(k, k + LOT))],
    );
  }
  return lignes.length;
}

/**
 * Rebuilds every derived table of the Communes market for `dataset` in one transaction: readers see the old
 * rankings or the new ones, never half. Returns the rows written per table.
 */
export async function reconstruireDerives(db: Executant, dataset: Dataset) {
  return enTransaction(db, async (client) => {
    const { lignes, modeles, donneesDu, bassins } = await calculerTout(client, dataset);
    await client.query('DELETE FROM marche_indicateurs WHERE dataset = $1', [dataset]);
    await client.query('DELETE FROM marche_classement WHERE dataset = $1', [dataset]);
    const definition = COLONNES_INDICATEURS.map((c) => `${c} ${TYPES_SQL[c]}`).join(', ');
    let classees = 0;
    for (let k = 0; k < lignes.length; k += LOT) {
      const lot = lignes.slice(k, k + LOT).map((l) => l.ligne);
      await client.query(
        `INSERT INTO marche_indicateurs (dataset, ${COLONNES_INDICATEURS.join(', ')})
         SELECT $1, ${COLONNES_INDICATEURS.join(', ')} FROM json_to_recordset($2::json) AS r(${definition})`,
        [dataset, JSON.stringify(lot)],
      );
      const rangs = lot.flatMap((l) =>
        classements(l).map((c) => ({
          ...c,
          insee: l.insee,
          departement: l.departement,
          region: l.region,
          population: l.population,
          transactions: l.transactions,
        })),
      );
      classees += rangs.length;
      await client.query(
        `INSERT INTO marche_classement (dataset, indicateur, insee, departement, region, population, transactions, cle,
                                        valeur)
         SELECT $1, indicateur, insee, departement, region, population, transactions, cle, valeur
           FROM json_to_recordset($2::json) AS r(indicateur text, insee text, departement text, region text,
                                                 population integer, transactions integer, cle float8, valeur float8)`,
        [dataset, JSON.stringify(rangs)],
      );
    }
    await client.query(
      `INSERT INTO marche_derives (dataset, modele_prix, donnees_du, calcule_le) VALUES ($1, $2, $3, now())
       ON CONFLICT (dataset) DO UPDATE SET modele_prix = excluded.modele_prix, donnees_du = excluded.donnees_du,
                                           calcule_le = excluded.calcule_le`,
      [dataset, JSON.stringify(modeles), donneesDu],
    );
    const voisinages = await ecrireBassins(client, dataset, bassins);
    const prixCommune = new Map(lignes.map(({ i }) => [i.insee, i]));
    const iris = await reconstruireIris(client, dataset, prixCommune);
    const secteurs = await reconstruireSecteurs(client, dataset);
    return { indicateurs: lignes.length, classement: classees, bassins: voisinages, iris, secteurs };
  });
}
