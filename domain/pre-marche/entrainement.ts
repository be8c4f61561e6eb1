import type { PoolClient } from 'pg';
import { transaction, type Db } from '../../db/client.ts';
import { copyFrom } from '../../lib/pg-copy.ts';
import { departementOf } from '../communes.ts';
import { absenceDvf } from '../couverture.ts';
import { ecrireFiche, type Mesure } from '../estimation/backtest.ts';
import type { Dataset } from '../platform/sandbox.ts';
import { lireHistorique, type Historique } from './historique.ts';
import { aire, ajusterLogistique, probabilite, tolerancePct } from './regression.ts';
import {
  joursEntre,
  NB_SIGNAUX,
  plusJours,
  SIGNAUX,
  signauxDe,
  variablesAu,
  vendueEntre,
  type AdresseHistorique,
  type DpeEvenement,
  type Variables,
} from './signaux.ts';

/**
 * The training run of the pre-market model, and the rebuild of its derived tables (db/migrations/037_pre_marche.sql).
 *
 * Examples. Every individual DPE (a flat or a house, not replaced by another) at a BAN key of a département DVF
 * covers, whose 12 months end before the last DVF sale held: its signals as of its day (signaux.ts, nothing later),
 * and whether a DVF sale is recorded at the address within HORIZON_JOURS from that day.
 *
 * Held out. The addresses are split by a hash of their key: PART_CONTROLE of them never enter the fit; the calibration
 * bands' real rates, the AUC and the cohorts are measured on them only.
 *
 * Model. An L2-regularised logistic regression on the 0/1 signals (regression.ts). A signal is `stable` when the two
 * halves of the training addresses give its coefficient the same sign, and `retenu` when it is stable, present in
 * SIGNAL_MIN training examples at least, and its coefficient is at least Z_MIN standard errors from 0 (the kind of
 * dwelling, group `bien`, is kept whenever frequent enough: it is structure, not a signal to select); the model is
 * fitted again on the retained signals alone (`coefficients_ajustes`), and that fit scores. The index of an example
 * is the sum of its adjusted coefficients.
 *
 * Bands. Cut at the quintiles of the training examples' index (equal values kept together), per type of dwelling
 * and for all; a band with fewer than BANDE_MIN held-out examples is merged into its neighbour. Each band publishes
 * its held-out real sale rate (`taux_vente_12m_pct`) beside the model's mean prediction for the same examples and the
 * tolerance between them (regression.ts, tolerancePct). The probability served (`p_vente`) is the band's real rate,
 * times the measured fall of that rate as the DPE ages without a sale (`decroissance`): never a raw model output.
 */

export const HORIZON_JOURS = 365;
export const PART_CONTROLE = 0.3;
export const NB_BANDES = 5;
export const BANDE_MIN = 30;
export const SIGNAL_MIN = 30;
export const Z_MIN = 1.5;
export const LAMBDA = 1;
/** Training examples a model needs at all (else every score is hors_perimetre, and the sheet says why). */
export const EXEMPLES_MIN = 200;
/** Age buckets of the DPE (days) whose 12-month sale rate is measured. */
export const AGES: ReadonlyArray<readonly [number, number]> = [
  [0, 90],
  [90, 180],
  [180, 365],
  [365, 730],
];
/**
 * The mandate window: how open the address still is to a mandate, by the age of its DPE. A decision of the service
 * (the specification names it without a rule): a seller orders the DPE just before listing; past 3 months the
 * mandate has usually been signed.
 */
export const FENETRES = [
  { jusqua: 90, valeur: 1, libelle: 'ouverte : DPE de moins de 3 mois, mise en vente imminente' },
  { jusqua: 180, valeur: 0.6, libelle: 'en cours : DPE de 3 à 6 mois' },
  { jusqua: 365, valeur: 0.3, libelle: 'tardive : DPE de 6 à 12 mois' },
  { jusqua: Infinity, valeur: 0.1, libelle: 'passée : DPE de plus d’un an' },
] as const;
export const TYPES_CALIBRES = ['tous', 'maison', 'appartement'] as const;
const LETTRES = 'ABCDEFGHIJ';

export function fenetreDe(ageJours: number): { valeur: number; libelle: string } {
  const f = FENETRES.find((x) => ageJours < x.jusqua) ?? FENETRES[FENETRES.length - 1];
  return { valeur: f.valeur, libelle: f.libelle };
}

/** FNV-1a of a key: the split of the addresses, the same from one run to the next. */
function empreinte(cle: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < cle.length; i++) h = Math.imul(h ^ cle.charCodeAt(i), 0x01000193);
  return h >>> 0;
}
export const estControle = (cle: string) => empreinte(cle) % 1000 < PART_CONTROLE * 1000;

interface Exemple {
  adresse: AdresseHistorique;
  dpe: DpeEvenement;
  x: number[];
  y: 0 | 1;
  controle: boolean;
  moitie: 0 | 1;
}

export interface Coefficient {
  signal: string;
  groupe: string;
  n_dvf: number;
  taux_dvf_pct: number | null;
  lift_dvf: number | null;
  coefficient: number;
  coefficient_ajuste: number;
  erreur_type: number | null;
  stable: boolean;
  retenu: boolean;
}

export interface Bande {
  type_bien: string;
  bande: string;
  rang: number;
  indice_min: number;
  indice_max: number;
  n: number;
  ventes: number;
  taux_vente_12m_pct: number;
  taux_predit_pct: number;
  tolerance_pct: number;
}

export interface Decroissance {
  age_min_jours: number;
  age_max_jours: number;
  n: number;
  taux_vente_12m_pct: number;
  multiplicateur: number;
}

export interface Cohorte {
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
}

export interface Entrainement {
  dataset: Dataset;
  mesure_le: string;
  reference_le: string | null;
  dvf_jusqu_au: string | null;
  n_entrainement: number;
  n_controle: number;
  base_pct: number | null;
  haut_pct: number | null;
  auc: number | null;
  intercept: number | null;
  coefficients: Coefficient[];
  bandes: Bande[];
  decroissance: Decroissance[];
  cohortes: Cohorte[];
  perimetre: string;
  limites: string[];
  /** Addresses scored (rows of pre_marche_scores), and of them outside the calibrated perimeter. */
  adresses: number;
  hors_perimetre: number;
  /** Time of each phase of the run (ms): reading the history, fitting and measuring, scoring, writing. */
  durees_ms: { lecture: number; mesure: number; scores: number; ecriture: number };
}

const pct = (x: number) => Math.round(x * 1000) / 10;
const arrondi = (x: number, d = 3) => Math.round(x * 10 ** d) / 10 ** d;

/** The examples of the history: every DPE whose 12 months are known, outside Alsace-Moselle and Mayotte. */
export function exemplesDe(h: Historique): Exemple[] {
  const out: Exemple[] = [];
  if (!h.dvfJusquAu) return out;
  const derniere = plusJours(h.dvfJusquAu, -HORIZON_JOURS + 1);
  for (const a of h.adresses.values()) {
    if (absenceDvf(departementOf(a.insee)) !== null) continue;
    const controle = estControle(a.cle);
    const moitie = ((empreinte(a.cle) >>> 12) & 1) as 0 | 1;
    for (const dpe of a.dpe) {
      if (dpe.date > derniere) continue;
      const v = variablesAu(a, dpe, h.ventesParRue);
      out.push({
        adresse: a,
        dpe,
        x: signauxDe(v, dpe, a),
        y: vendueEntre(a, dpe.date, HORIZON_JOURS) ? 1 : 0,
        controle,
        moitie,
      });
    }
  }
  return out;
}

function ajuster(exemples: Exemple[], colonnes: number[]) {
  const k = colonnes.length;
  const x = new Float64Array(exemples.length * k);
  const y = new Float64Array(exemples.length);
  exemples.forEach((e, i) => {
    colonnes.forEach((c, j) => (x[i * k + j] = e.x[c]));
    y[i] = e.y;
  });
  const f = ajusterLogistique(x, y, k, { lambda: LAMBDA });
  // Back to the full list of signals, 0 for those not fitted.
  const coefficients = new Array<number>(NB_SIGNAUX).fill(0);
  const erreurs = new Array<number | null>(NB_SIGNAUX).fill(null);
  colonnes.forEach((c, j) => {
    coefficients[c] = f.coefficients[j];
    erreurs[c] = f.erreurs[j + 1];
  });
  return { intercept: f.intercept, coefficients, erreurs };
}

const indiceDe = (coefficients: number[], x: number[]) => {
  let s = 0;
  for (let j = 0; j < x.length; j++) s += coefficients[j] * x[j];
  return Math.round(s * 1000) / 1000;
};

/** The band of an index among a type's bands (highest first): the first whose lower bound it reaches. */
export function bandeDe<B extends { indice_min: number; rang: number }>(bandes: B[], indice: number): B | null {
  if (bandes.length === 0) return null;
  const triees = [...bandes].sort((a, b) => a.rang - b.rang);
  return triees.find((b) => indice >= b.indice_min) ?? triees[triees.length - 1];
}

function bandesDe(
  type: string,
  entrainement: Array<{ indice: number }>,
  controle: Array<{ indice: number; p: number; y: number }>,
): Bande[] {
  if (entrainement.length === 0 || controle.length < BANDE_MIN) return [];
  const valeurs = entrainement.map((e) => e.indice).sort((a, b) => a - b);
  // Lower bounds at the quintiles, equal indices kept in one band.
  let bornes = [
    ...new Set(
      Array.from({ length: NB_BANDES - 1 }, (_, i) => valeurs[Math.floor(((i + 1) * valeurs.length) / NB_BANDES)]),
    ),
  ];
  bornes = [valeurs[0], ...bornes.filter((b) => b > valeurs[0])];
  // Highest first; each band [min, next min).
  let tranches = bornes
    .map((min, i) => ({ min, max: i + 1 < bornes.length ? bornes[i + 1] : valeurs[valeurs.length - 1] }))
    .reverse();
  const membres = (min: number, max: number, dernier: boolean) =>
    controle.filter((c) => c.indice >= min && (dernier || c.indice < max || min === max));
  // A band too thin to measure is merged into the one below (the lowest into the one above).
  for (;;) {
    const comptes = tranches.map((t, i) => membres(t.min, t.max, i === 0).length);
    const mince = comptes.findIndex((n) => n < BANDE_MIN);
    if (mince < 0 || tranches.length === 1) break;
    const voisin = mince + 1 < tranches.length ? mince + 1 : mince - 1;
    const [haut, bas] = voisin > mince ? [mince, voisin] : [voisin, mince];
    tranches.splice(haut, 2, { min: tranches[bas].min, max: tranches[haut].max });
  }
  tranches = tranches.map((t, i) => ({ ...t, min: i === tranches.length - 1 ? Math.min(t.min, valeurs[0]) : t.min }));
  return tranches.map((t, i) => {
    // Control examples below the lowest bound belong to the lowest band.
    const m = controle.filter(
      (c) => c.indice >= (i === tranches.length - 1 ? -Infinity : t.min) && (i === 0 || c.indice < tranches[i - 1].min),
    );
    const ventes = m.reduce((s, c) => s + c.y, 0);
    const predit = m.reduce((s, c) => s + c.p, 0) / Math.max(m.length, 1);
    return {
      type_bien: type,
      bande: LETTRES[i],
      rang: i,
      indice_min: t.min,
      indice_max: t.max,
      n: m.length,
      ventes,
      taux_vente_12m_pct: pct(ventes / Math.max(m.length, 1)),
      taux_predit_pct: pct(predit),
      tolerance_pct: tolerancePct(predit, m.length),
    };
  });
}

function trimestre(jour: string): { cohorte: string; semaine: string } {
  const annee = Number(jour.slice(0, 4));
  const t = Math.floor((Number(jour.slice(5, 7)) - 1) / 3);
  // The ISO week of the quarter's first day.
  const debut = new Date(Date.UTC(annee, t * 3, 1));
  const jeudi = new Date(debut);
  jeudi.setUTCDate(debut.getUTCDate() + 3 - ((debut.getUTCDay() + 6) % 7));
  const an = jeudi.getUTCFullYear();
  const semaine =
    1 +
    Math.floor(
      (jeudi.getTime() - Date.UTC(an, 0, 4)) / (7 * 86_400_000) +
        ((new Date(Date.UTC(an, 0, 4)).getUTCDay() + 6) % 7) / 7,
    );
  return { cohorte: `${annee}-T${t + 1}`, semaine: `${an}-W${String(semaine).padStart(2, '0')}` };
}

/** Trains and measures the model on `dataset`, and rebuilds its tables and its sheet. */
export async function entrainerPreMarche(db: Db, dataset: Dataset, now = new Date()): Promise<Entrainement> {
  const mesure_le = now.toISOString();
  let t = performance.now();
  const tour = () => {
    const d = Math.round(performance.now() - t);
    t = performance.now();
    return d;
  };
  const h = await lireHistorique(db, dataset);
  const lecture = tour();
  const r = mesurer(h, dataset, mesure_le);
  const mesure = tour();
  const scores = scorer(h, r);
  r.adresses = scores.length;
  r.hors_perimetre = scores.filter((s) => s.hors_perimetre !== null).length;
  const notes = tour();
  await transaction(db, async (client) => ecrire(client, dataset, r, scores));
  // Planner statistics and the visibility map of the rewritten table: the sector's counts are index-only reads.
  await db.query('VACUUM (ANALYZE) pre_marche_scores');
  await ecrireFiche(db, dataset, 'pre_marche', mesure_le, mesuresDe(r), r.limites);
  r.durees_ms = { lecture, mesure, scores: notes, ecriture: tour() };
  return r;
}

/** The measures of the sheet (GET /modeles/pre_marche, `mesures`). */
function mesuresDe(r: Entrainement): Mesure[] {
  if (r.base_pct === null) return [];
  const commun = { perimetre: r.perimetre, hors_echantillon: true, echantillon: r.n_controle };
  const tous = r.bandes.filter((b) => b.type_bien === 'tous');
  const ecarts = tous.map((b) => Math.abs(b.taux_vente_12m_pct - b.taux_predit_pct));
  const mesures: Mesure[] = [
    {
      ...commun,
      indicateur: 'taux_base',
      libelle: 'Taux de vente à 12 mois de tous les exemples tenus',
      valeur: r.base_pct,
      unite: 'pct',
    },
  ];
  if (r.haut_pct !== null)
    mesures.push({
      ...commun,
      indicateur: 'taux_bande_haute',
      libelle: 'Taux de vente à 12 mois de la bande la plus haute',
      valeur: r.haut_pct,
      unite: 'pct',
    });
  if (r.auc !== null)
    mesures.push({
      ...commun,
      indicateur: 'auc',
      libelle: 'Aire sous la courbe ROC (exemples tenus)',
      valeur: r.auc,
      unite: 'auc',
    });
  if (ecarts.length) {
    mesures.push({
      ...commun,
      indicateur: 'ecart_calibration_max',
      libelle: 'Plus grand écart, en points, entre le taux réel et le taux prédit d’une bande',
      valeur: Math.round(Math.max(...ecarts) * 10) / 10,
      unite: 'points',
    });
    mesures.push({
      ...commun,
      indicateur: 'bandes_dans_la_tolerance',
      libelle: 'Part des bandes dont le taux réel est dans la tolérance du taux prédit',
      valeur: pct(
        tous.filter((b) => Math.abs(b.taux_vente_12m_pct - b.taux_predit_pct) <= b.tolerance_pct).length / tous.length,
      ),
      unite: 'pct',
    });
  }
  return mesures;
}

function mesurer(h: Historique, dataset: Dataset, mesure_le: string): Entrainement {
  const limites: string[] = [
    'Le taux de mise en vente (annonces) n’est pas mesuré : seules les ventes DVF servent de résultat ; les champs *_mise_en_vente sont null.',
    'Aucun registre des copropriétés n’est importé : copro.lots et copro.syndic sont null, le signal copro vient du numéro d’immatriculation écrit dans les DPE.',
  ];
  const r: Entrainement = {
    dataset,
    mesure_le,
    reference_le: h.referenceLe,
    dvf_jusqu_au: h.dvfJusquAu,
    n_entrainement: 0,
    n_controle: 0,
    base_pct: null,
    haut_pct: null,
    auc: null,
    intercept: null,
    coefficients: [],
    bandes: [],
    decroissance: [],
    cohortes: [],
    perimetre: '',
    limites,
    adresses: 0,
    hors_perimetre: 0,
    durees_ms: { lecture: 0, mesure: 0, scores: 0, ecriture: 0 },
  };
  const exemples = exemplesDe(h);
  const entrainement = exemples.filter((e) => !e.controle);
  const controle = exemples.filter((e) => e.controle);
  r.n_entrainement = entrainement.length;
  r.n_controle = controle.length;
  const ventesEntrainement = entrainement.reduce((s, e) => s + e.y, 0);
  if (entrainement.length < EXEMPLES_MIN || controle.length < BANDE_MIN || ventesEntrainement === 0) {
    limites.unshift(
      `Aucun modèle calibré : ${entrainement.length} exemples d’entraînement et ${controle.length} tenus (DPE individuels dont les 12 mois suivants sont couverts par DVF), il en faut ${EXEMPLES_MIN} et ${BANDE_MIN}.`,
    );
    return r;
  }
  const premier = exemples.reduce((m, e) => (e.dpe.date < m ? e.dpe.date : m), exemples[0].dpe.date);
  const dernier = exemples.reduce((m, e) => (e.dpe.date > m ? e.dpe.date : m), exemples[0].dpe.date);
  r.perimetre = `DPE individuels établis du ${premier} au ${dernier}, ventes DVF jusqu’au ${h.dvfJusquAu} ; ${r.n_controle} exemples tenus (adresses jamais vues par l’ajustement)`;

  const tous = SIGNAUX.map((_, j) => j);
  const complet = ajuster(entrainement, tous);
  const moitieA = ajuster(
    entrainement.filter((e) => e.moitie === 0),
    tous,
  );
  const moitieB = ajuster(
    entrainement.filter((e) => e.moitie === 1),
    tous,
  );
  const baseEntrainement = ventesEntrainement / entrainement.length;
  const stats = SIGNAUX.map((s, j) => {
    const avec = entrainement.filter((e) => e.x[j] === 1);
    const ventes = avec.reduce((t, e) => t + e.y, 0);
    const stable = Math.sign(moitieA.coefficients[j]) === Math.sign(moitieB.coefficients[j]);
    const se = complet.erreurs[j];
    // The dwelling's own kind (flat, small) is structure, not a signal to select: kept whenever frequent enough, so
    // that each kind's base rate is its own.
    const retenu =
      avec.length >= SIGNAL_MIN &&
      (s.groupe === 'bien' || (stable && se !== null && Math.abs(complet.coefficients[j]) >= Z_MIN * se));
    return { s, j, n: avec.length, ventes, stable, retenu, se };
  });
  const retenus = stats.filter((x) => x.retenu).map((x) => x.j);
  const ajuste = ajuster(entrainement, retenus);
  r.intercept = ajuste.intercept;
  r.coefficients = stats.map(({ s, j, n, ventes, stable, retenu, se }) => ({
    signal: s.signal,
    groupe: s.groupe,
    n_dvf: n,
    taux_dvf_pct: n > 0 ? pct(ventes / n) : null,
    lift_dvf: n > 0 && baseEntrainement > 0 ? arrondi(ventes / n / baseEntrainement, 2) : null,
    coefficient: arrondi(complet.coefficients[j]),
    coefficient_ajuste: arrondi(ajuste.coefficients[j]),
    erreur_type: se === null ? null : arrondi(se),
    stable,
    retenu,
  }));
  const coefs = r.coefficients.map((c) => c.coefficient_ajuste);
  const noter = (e: Exemple) => {
    const indice = indiceDe(coefs, e.x);
    return { indice, p: probabilite({ intercept: ajuste.intercept, coefficients: coefs }, e.x), y: e.y, e };
  };
  const notesEntrainement = entrainement.map(noter);
  const notesControle = controle.map(noter);
  r.base_pct = pct(notesControle.reduce((s, c) => s + c.y, 0) / notesControle.length);
  r.auc = (() => {
    const a = aire(
      notesControle.map((c) => c.indice),
      notesControle.map((c) => c.y),
    );
    return a === null ? null : arrondi(a, 3);
  })();
  for (const type of TYPES_CALIBRES) {
    const garde = (n: { e: Exemple }) => type === 'tous' || n.e.dpe.type === type;
    const ctrl = notesControle.filter(garde);
    // A type is calibrated apart only when it has enough held-out examples for two bands.
    if (type !== 'tous' && ctrl.length < 2 * BANDE_MIN) {
      limites.push(
        `Type ${type} : ${ctrl.length} exemples tenus, pas de bandes propres (les bandes de tous les types servent).`,
      );
      continue;
    }
    r.bandes.push(...bandesDe(type, notesEntrainement.filter(garde), ctrl));
  }
  const hautes = r.bandes.filter((b) => b.type_bien === 'tous' && b.rang === 0);
  r.haut_pct = hautes[0]?.taux_vente_12m_pct ?? null;

  // How the chance falls as the DPE ages unsold: every example whose later window is covered by DVF.
  for (const [de, a] of AGES) {
    const vus = exemples.filter(
      (e) =>
        plusJours(e.dpe.date, de + HORIZON_JOURS) <= plusJours(h.dvfJusquAu!, 1) &&
        !vendueEntre(e.adresse, e.dpe.date, de),
    );
    if (vus.length < BANDE_MIN) {
      limites.push(
        `Décroissance ${de}-${a} jours : ${vus.length} exemples, non mesurée (le multiplicateur de l’âge précédent sert).`,
      );
      continue;
    }
    const ventes = vus.filter((e) => vendueEntre(e.adresse, plusJours(e.dpe.date, de), HORIZON_JOURS)).length;
    const taux = ventes / vus.length;
    const reference = r.decroissance[0] ? r.decroissance[0].taux_vente_12m_pct / 100 : taux;
    r.decroissance.push({
      age_min_jours: de,
      age_max_jours: a,
      n: vus.length,
      taux_vente_12m_pct: pct(taux),
      multiplicateur: reference > 0 ? arrondi(taux / reference, 2) : 1,
    });
  }

  // Cohorts: the held-out examples by quarter of their DPE, the top band against the whole cohort.
  const bandesTous = r.bandes.filter((b) => b.type_bien === 'tous');
  const haute = bandesTous[0];
  if (haute) {
    const parCohorte = new Map<string, { semaine: string; notes: typeof notesControle }>();
    for (const n of notesControle) {
      const { cohorte, semaine } = trimestre(n.e.dpe.date);
      const c = parCohorte.get(cohorte) ?? { semaine, notes: [] };
      c.notes.push(n);
      parCohorte.set(cohorte, c);
    }
    for (const [cohorte, { semaine, notes }] of [...parCohorte].sort(([a], [b]) => a.localeCompare(b))) {
      const hauts = notes.filter((n) => bandeDe(bandesTous, n.indice)?.rang === 0);
      const vendu = (l: typeof notes) => (l.length ? pct(l.reduce((s, n) => s + n.y, 0) / l.length) : null);
      const vh = vendu(hauts);
      const vb = vendu(notes);
      r.cohortes.push({
        semaine,
        type_bien: 'tous',
        cohorte,
        seuil_score: haute.indice_min,
        n_haut: hauts.length,
        mise_en_vente_haut_pct: null,
        mise_en_vente_base_pct: null,
        lift_mise_en_vente: null,
        n_haut_dvf: hauts.length,
        vendu_haut_pct: vh,
        vendu_base_pct: vb,
        lift_vendu: vh !== null && vb ? arrondi(vh / vb, 2) : null,
      });
    }
  }
  return r;
}

export interface Score {
  cle_ban: string;
  insee: string;
  code_postal: string | null;
  adresse: string | null;
  commune: string | null;
  lat: number | null;
  lon: number | null;
  type_bien: 'maison' | 'appartement';
  numero_dpe: string;
  dpe_le: string;
  etiquette: string;
  periode_construction: string | null;
  chauffage: string | null;
  surface_m2: number | null;
  audit_le: string | null;
  pack_pre_vente: boolean;
  variables: Variables;
  signaux: string[];
  nb_dpe: number;
  indice: number | null;
  bande: string | null;
  p_vente: number | null;
  lift: number | null;
  fenetre: number;
  priorite: number | null;
  vendue_depuis: boolean;
  derniere_vente_le: string | null;
  derniere_vente_prix: number | null;
  hors_perimetre: string | null;
  societes: Array<{
    denomination: string;
    siren: string | null;
    forme: string | null;
    dernier_avis: string | null;
    le: string | null;
  }>;
  permis: { n: number; dernier_le: string; type: string } | null;
  logements: { nombre: number; source: 'dpe' | 'copropriete' | 'maison' };
  frise: Array<{ date: string; type: string; libelle: string; detail: string | null; apres_dpe: boolean }>;
  fiabilite: 'mesure' | 'indicatif';
}

/** The multiplier of a DPE's age: its bucket's, else the last measured bucket before it, else 1. */
export function multiplicateurDe(decroissance: Decroissance[], age: number): number {
  let m = 1;
  for (const d of decroissance) if (age >= d.age_min_jours) m = d.multiplicateur;
  return m;
}

function frise(a: AdresseHistorique, dpeLe: string): Score['frise'] {
  const evenements: Score['frise'] = [];
  const apres = (d: string) => d > dpeLe;
  for (const d of a.dpe) {
    evenements.push({
      date: d.date,
      type: 'dpe',
      libelle: `DPE ${d.etiquette}`,
      detail: `${d.type}${d.surface !== null ? `, ${d.surface} m²` : ''}`,
      apres_dpe: apres(d.date),
    });
  }
  for (const x of a.audits) {
    evenements.push({
      date: x.date,
      type: 'audit',
      libelle: 'Audit énergétique',
      detail: x.pack ? 'pack pré-vente (audit et DPE à 31 jours au plus)' : null,
      apres_dpe: apres(x.date),
    });
  }
  for (const v of a.ventes) {
    evenements.push({
      date: v.date,
      type: 'vente',
      libelle: 'Vente DVF',
      detail: v.prix !== null ? `${Math.round(v.prix)} €` : null,
      apres_dpe: apres(v.date),
    });
  }
  for (const s of a.societes) {
    if (s.debut)
      evenements.push({
        date: s.debut,
        type: 'sci',
        libelle: `Société civile : ${s.denomination}`,
        detail: s.siren ? `SIREN ${s.siren}` : null,
        apres_dpe: apres(s.debut),
      });
  }
  for (const p of a.permis) {
    evenements.push({
      date: p.date,
      type: 'permis',
      libelle: `Autorisation d’urbanisme (${p.type})`,
      detail: null,
      apres_dpe: apres(p.date),
    });
  }
  const copro = a.dpe.find((d) => d.copro);
  if (copro) {
    evenements.push({
      date: copro.date,
      type: 'copro',
      libelle: 'Copropriété immatriculée (numéro lu dans un DPE)',
      detail: null,
      apres_dpe: apres(copro.date),
    });
  }
  return evenements.sort((x, y) => x.date.localeCompare(y.date) || x.type.localeCompare(y.type));
}

/** The score of every address with an individual DPE, from its latest DPE (the same signals as the examples). */
export function scorer(h: Historique, r: Entrainement): Score[] {
  const scores: Score[] = [];
  const coefs = r.coefficients.map((c) => c.coefficient_ajuste);
  const parType = new Map<string, Bande[]>();
  for (const b of r.bandes) parType.set(b.type_bien, [...(parType.get(b.type_bien) ?? []), b]);
  const nonCalibre = r.bandes.length === 0 ? (r.limites[0] ?? 'Aucun modèle calibré sur ces données.') : null;
  for (const a of h.adresses.values()) {
    const dpe = a.dpe[a.dpe.length - 1];
    const v = variablesAu(a, dpe, h.ventesParRue);
    const x = signauxDe(v, dpe, a);
    const age = h.referenceLe ? Math.max(0, joursEntre(dpe.date, h.referenceLe)) : 0;
    const hors = absenceDvf(departementOf(a.insee)) ?? nonCalibre;
    const indice = hors ? null : indiceDe(coefs, x);
    const bandes = parType.get(dpe.type) ?? parType.get('tous') ?? [];
    const bande = indice === null ? null : bandeDe(bandes, indice);
    const multiplicateur = multiplicateurDe(r.decroissance, age);
    v.multiplicateur_age_dpe = hors ? null : multiplicateur;
    const p = bande ? Math.min(0.99, (bande.taux_vente_12m_pct / 100) * multiplicateur) : null;
    const fenetre = fenetreDe(age);
    const audit = a.audits.filter((x2) => x2.date <= plusJours(dpe.date, 31)).at(-1) ?? null;
    const derniere = a.ventes.at(-1) ?? null;
    const dernierPermis = a.permis.at(-1);
    const logementsDpe = new Set(a.dpe.map((d) => (d.type === 'maison' ? 'maison' : `${d.surface}`))).size;
    scores.push({
      cle_ban: a.cle,
      insee: a.insee,
      code_postal: a.codePostal,
      adresse: a.adresse,
      commune: a.commune,
      lat: a.lat,
      lon: a.lon,
      type_bien: dpe.type,
      numero_dpe: dpe.numero,
      dpe_le: dpe.date,
      etiquette: dpe.etiquette,
      periode_construction: dpe.periode,
      chauffage: dpe.chauffage,
      surface_m2: dpe.surface,
      audit_le: audit?.date ?? null,
      pack_pre_vente: audit !== null && Math.abs(joursEntre(audit.date, dpe.date)) <= 31,
      variables: v,
      signaux: SIGNAUX.filter((_, j) => x[j] === 1).map((s) => s.signal),
      nb_dpe: a.dpe.length,
      indice,
      bande: bande?.bande ?? null,
      p_vente: p === null ? null : Math.round(p * 1000) / 1000,
      lift: p !== null && r.base_pct ? arrondi(p / (r.base_pct / 100), 2) : null,
      fenetre: fenetre.valeur,
      priorite: p === null ? null : Math.round(p * fenetre.valeur * 10_000) / 10_000,
      vendue_depuis: a.ventes.some((s) => s.date >= dpe.date),
      derniere_vente_le: derniere?.date ?? null,
      derniere_vente_prix: derniere?.prix ?? null,
      hors_perimetre: hors,
      societes: a.societes.map(({ denomination, siren, forme, dernier_avis, le }) => ({
        denomination,
        siren,
        forme,
        dernier_avis,
        le,
      })),
      permis: dernierPermis ? { n: a.permis.length, dernier_le: dernierPermis.date, type: dernierPermis.type } : null,
      logements:
        dpe.type === 'maison' ? { nombre: 1, source: 'maison' } : { nombre: Math.max(1, logementsDpe), source: 'dpe' },
      frise: frise(a, dpe.date),
      fiabilite: dpe.type === 'maison' && h.banNumeros.has(a.cle) ? 'mesure' : 'indicatif',
    });
  }
  return scores;
}

/** A value in COPY's text format: \\N for null, backslash, tab and line breaks escaped. */
function champCopy(v: string | number | boolean | null): string {
  if (v === null) return '\\N';
  if (typeof v !== 'string') return String(v);
  if (!/[\\\t\n\r]/.test(v)) return v;
  return v.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n').replace(/\r/g, '\\r');
}

/** Lines grouped in chunks of a few thousand: COPY's messages. */
function* paquets(lignes: Iterable<string>): Generator<string> {
  let paquet: string[] = [];
  for (const l of lignes) {
    paquet.push(l);
    if (paquet.length >= 2000) {
      yield paquet.join('');
      paquet = [];
    }
  }
  if (paquet.length) yield paquet.join('');
}

async function ecrire(client: PoolClient, dataset: Dataset, r: Entrainement, scores: Score[]): Promise<void> {
  for (const table of [
    'pre_marche_modele',
    'pre_marche_coefficients',
    'pre_marche_bandes',
    'pre_marche_decroissance',
    'pre_marche_scores',
  ]) {
    await client.query(`DELETE FROM ${table} WHERE dataset = $1`, [dataset]);
  }
  const le = r.mesure_le;
  if (r.reference_le) {
    await client.query(
      `INSERT INTO pre_marche_modele (dataset, calcule_le, reference_le, dvf_jusqu_au, intercept, n_entrainement,
                                      n_controle, base_pct, haut_pct, auc, perimetre, cohortes, limites)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
      [
        dataset,
        le,
        r.reference_le,
        r.dvf_jusqu_au,
        r.intercept ?? 0,
        r.n_entrainement,
        r.n_controle,
        r.base_pct ?? 0,
        r.haut_pct,
        r.auc,
        r.perimetre,
        JSON.stringify(r.cohortes),
        r.limites,
      ],
    );
  }
  await client.query(
    `INSERT INTO pre_marche_coefficients
       SELECT $1, c.signal, c.groupe, c.n_dvf, c.taux_dvf_pct, c.lift_dvf, c.coefficient, c.coefficient_ajuste,
              c.erreur_type, c.stable, c.retenu, $2
         FROM jsonb_to_recordset($3::jsonb) AS c(signal text, groupe text, n_dvf int, taux_dvf_pct float8,
              lift_dvf float8, coefficient float8, coefficient_ajuste float8, erreur_type float8, stable boolean,
              retenu boolean)`,
    [dataset, le, JSON.stringify(r.coefficients)],
  );
  await client.query(
    `INSERT INTO pre_marche_bandes
       SELECT $1, b.type_bien, b.bande, b.rang, b.indice_min, b.indice_max, b.n, b.ventes, b.taux_vente_12m_pct,
              b.taux_predit_pct, b.tolerance_pct, $2
         FROM jsonb_to_recordset($3::jsonb) AS b(type_bien text, bande text, rang int, indice_min float8,
              indice_max float8, n int, ventes int, taux_vente_12m_pct float8, taux_predit_pct float8, tolerance_pct float8)`,
    [dataset, le, JSON.stringify(r.bandes)],
  );
  await client.query(
    `INSERT INTO pre_marche_decroissance
       SELECT $1, d.age_min_jours, d.age_max_jours, d.n, d.taux_vente_12m_pct, d.multiplicateur, $2
         FROM jsonb_to_recordset($3::jsonb) AS d(age_min_jours int, age_max_jours int, n int,
              taux_vente_12m_pct float8, multiplicateur float8)`,
    [dataset, le, JSON.stringify(r.decroissance)],
  );
  const epci = await client.query<{ insee: string; epci: string | null }>(
    `SELECT insee, epci FROM communes WHERE dataset = $1 AND insee = ANY($2::text[])`,
    [dataset, [...new Set(scores.map((s) => s.insee))]],
  );
  const epciDe = new Map(epci.rows.map((x) => [x.insee, x.epci]));
  // COPY, not INSERT: a country is a million rows, each with its timeline.
  const lignes = function* () {
    for (const s of scores) {
      yield `${[
        dataset,
        s.cle_ban,
        s.insee,
        s.code_postal,
        epciDe.get(s.insee) ?? null,
        s.adresse,
        s.commune,
        s.lat,
        s.lon,
        s.type_bien,
        s.numero_dpe,
        s.dpe_le,
        s.etiquette,
        s.periode_construction,
        s.chauffage,
        s.surface_m2,
        s.audit_le,
        s.pack_pre_vente,
        JSON.stringify(s.variables),
        `{${s.signaux.join(',')}}`,
        s.nb_dpe,
        s.indice,
        s.bande,
        s.p_vente,
        s.lift,
        s.fenetre,
        s.priorite,
        s.vendue_depuis,
        s.derniere_vente_le,
        s.derniere_vente_prix,
        s.hors_perimetre,
        JSON.stringify(s.societes),
        s.permis === null ? null : JSON.stringify(s.permis),
        JSON.stringify(s.logements),
        JSON.stringify(s.frise),
        s.fiabilite,
        le,
      ]
        .map(champCopy)
        .join('\t')}\n`;
    }
  };
  await copyFrom(
    client,
    `COPY pre_marche_scores (dataset, cle_ban, insee, code_postal, epci, adresse, commune, lat, lon, type_bien,
            numero_dpe, dpe_le, etiquette, periode_construction, chauffage, surface_m2, audit_le, pack_pre_vente,
            variables, signaux, nb_dpe, indice, bande, p_vente, lift, fenetre, priorite, vendue_depuis,
            derniere_vente_le, derniere_vente_prix, hors_perimetre, societes, permis, logements, frise, fiabilite,
            calcule_le) FROM STDIN`,
    paquets(lignes()),
  );
}
