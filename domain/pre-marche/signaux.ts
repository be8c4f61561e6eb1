/**
 * The signals of the pre-market model, as of a DPE's day: ONE computation for the training examples (every DPE whose
 * 12 months are known), for the scores served (the latest DPE of each address) and for faits_adresse's pre_marche
 * group. Pure: it is given the address's dated events and reads none dated after the DPE (see `variablesAu`).
 */

export interface DpeEvenement {
  numero: string;
  date: string;
  type: 'maison' | 'appartement';
  surface: number | null;
  etiquette: string;
  copro: boolean;
  periode: string | null;
  chauffage: string | null;
}

export interface AdresseHistorique {
  cle: string;
  /** The street's key (`<insee>_<voie>`): the block whose sales are counted. */
  rue: string;
  insee: string;
  codePostal: string | null;
  adresse: string | null;
  commune: string | null;
  lat: number | null;
  lon: number | null;
  /** Individual DPE that no other replaces, oldest first. */
  dpe: DpeEvenement[];
  audits: Array<{ date: string; pack: boolean | null }>;
  /** DVF sales at the address (sale, VEFA, auction), oldest first. */
  ventes: Array<{ date: string; prix: number | null }>;
  /** Civil companies known at the address, with the first date they are known there. */
  societes: Array<{
    denomination: string;
    siren: string | null;
    forme: string | null;
    debut: string | null;
    dernier_avis: string | null;
    le: string | null;
  }>;
  permis: Array<{ date: string; type: string }>;
}

/** What the street's sales are looked up in: sorted dates per street key. */
export type VentesParRue = Map<string, string[]>;

/** Days a former DPE stays valid (10 years) and the window of the recent sales of the block. */
const VALIDITE_DPE_ANS = 10;
const FENETRE_ILOT_JOURS = 365;
const FENETRE_PERMIS_JOURS = 3 * 365;
const ECART_SURFACE = 0.02;

export interface Variables {
  audit_connu: boolean;
  annees_detention_au_dpe: number | null;
  dpe_valide_au_dpe: boolean;
  nb_dpe_365j_avant: number;
  sci_connue_au_dpe: boolean;
  ventes_ilot_avant_dpe: number;
  ventes_numero_avant_dpe: number;
  copro_ilot: boolean;
  surface_m2: number | null;
  multiplicateur_age_dpe: number | null;
}

/** The model's signals, in the order of its coefficients: each a 0/1 column. */
export const SIGNAUX = [
  { signal: 'audit_connu', groupe: 'audit', libelle: 'audit énergétique établi au plus tard le jour du DPE' },
  {
    signal: 'dpe_valide_au_dpe',
    groupe: 'dpe',
    libelle: 'DPE refait alors qu’un DPE du même logement était encore valide',
  },
  { signal: 'passoire', groupe: 'dpe', libelle: 'DPE classé F ou G' },
  { signal: 'detention_moins_2_ans', groupe: 'detention', libelle: 'vendu moins de 2 ans avant le DPE' },
  { signal: 'detention_2_5_ans', groupe: 'detention', libelle: 'dernière vente 2 à 5 ans avant le DPE' },
  { signal: 'detention_5_ans_plus', groupe: 'detention', libelle: 'dernière vente 5 ans ou plus avant le DPE' },
  { signal: 'sci_connue_au_dpe', groupe: 'sci', libelle: 'société civile connue à l’adresse avant le DPE' },
  { signal: 'ventes_ilot_3', groupe: 'voisinage', libelle: '3 ventes ou plus dans la rue dans les 12 mois avant' },
  { signal: 'ventes_numero_3', groupe: 'adresse', libelle: '3 ventes ou plus au numéro avant le DPE' },
  { signal: 'permis_3_ans', groupe: 'permis', libelle: 'autorisation d’urbanisme à l’adresse dans les 3 ans avant' },
  { signal: 'copro', groupe: 'copropriete', libelle: 'copropriété immatriculée (numéro dans un DPE de l’adresse)' },
  { signal: 'appartement', groupe: 'bien', libelle: 'appartement (référence : maison)' },
  { signal: 'petite_surface', groupe: 'bien', libelle: 'logement de moins de 40 m²' },
] as const;
export type Signal = (typeof SIGNAUX)[number]['signal'];
export const NB_SIGNAUX = SIGNAUX.length;

// Day arithmetic on AAAA-MM-JJ strings without Date objects: the training run does it millions of times (civil
// calendar to day numbers and back, H. Hinnant's algorithms).
const pad = (n: number) => (n < 10 ? `0${n}` : `${n}`);
export function numeroJour(jour: string): number {
  const a = Number(jour.slice(0, 4));
  const m = Number(jour.slice(5, 7));
  const j = Number(jour.slice(8, 10));
  const y = m <= 2 ? a - 1 : a;
  const ere = Math.floor(y / 400);
  const ae = y - ere * 400;
  const ja = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + j - 1;
  return ere * 146_097 + ae * 365 + Math.floor(ae / 4) - Math.floor(ae / 100) + ja - 719_468;
}
export function jourDeNumero(n: number): string {
  const z = n + 719_468;
  const ere = Math.floor(z / 146_097);
  const je = z - ere * 146_097;
  const ae = Math.floor((je - Math.floor(je / 1460) + Math.floor(je / 36_524) - Math.floor(je / 146_096)) / 365);
  const ja = je - (365 * ae + Math.floor(ae / 4) - Math.floor(ae / 100));
  const mp = Math.floor((5 * ja + 2) / 153);
  const j = ja - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  return `${ae + ere * 400 + (m <= 2 ? 1 : 0)}-${pad(m)}-${pad(j)}`;
}
export const joursEntre = (de: string, a: string) => numeroJour(a) - numeroJour(de);
export const plusJours = (jour: string, n: number) => jourDeNumero(numeroJour(jour) + n);

/** How many of the sorted dates fall in [de, a) (strings AAAA-MM-JJ compare as dates). */
export function compterEntre(dates: readonly string[], de: string, a: string): number {
  const borne = (x: string) => {
    let lo = 0;
    let hi = dates.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (dates[mid] < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  return Math.max(0, borne(a) - borne(de));
}

function memeLogement(a: DpeEvenement, b: DpeEvenement): boolean {
  if (a.type === 'maison' && b.type === 'maison') return true;
  if (a.surface === null || b.surface === null) return false;
  return Math.abs(a.surface - b.surface) <= Math.max(1, ECART_SURFACE * Math.max(a.surface, b.surface));
}

/**
 * The variables of an address as of the day of `dpe`. Strictly before that day: the other DPE, the sales (of the
 * address and of its street), the civil companies, the permits. On the day or before: the audit (the pre-sale pack's
 * audit is often made at the DPE's visit). Nothing dated later is read: a training example never sees its future.
 */
export function variablesAu(a: AdresseHistorique, dpe: DpeEvenement, ventesParRue: VentesParRue): Variables {
  const t = dpe.date;
  const anterieurs = a.dpe.filter((d) => d.date < t && d.numero !== dpe.numero);
  const finValidite = (d: DpeEvenement) => `${Number(d.date.slice(0, 4)) + VALIDITE_DPE_ANS}${d.date.slice(4)}`;
  const ventesAvant = a.ventes.filter((v) => v.date < t);
  const derniere = ventesAvant.at(-1);
  return {
    audit_connu: a.audits.some((x) => x.date <= t),
    annees_detention_au_dpe: derniere ? Math.round((joursEntre(derniere.date, t) / 365.25) * 10) / 10 : null,
    dpe_valide_au_dpe: anterieurs.some((d) => finValidite(d) > t && memeLogement(d, dpe)),
    nb_dpe_365j_avant: anterieurs.filter((d) => joursEntre(d.date, t) <= 365).length,
    sci_connue_au_dpe: a.societes.some((s) => s.debut !== null && s.debut < t),
    ventes_ilot_avant_dpe: compterEntre(ventesParRue.get(a.rue) ?? [], plusJours(t, -FENETRE_ILOT_JOURS), t),
    ventes_numero_avant_dpe: ventesAvant.length,
    copro_ilot: a.dpe.some((d) => d.date <= t && d.copro),
    surface_m2: dpe.surface,
    multiplicateur_age_dpe: null,
  };
}

/** The 0/1 signals of the variables, in the order of SIGNAUX. */
export function signauxDe(v: Variables, dpe: DpeEvenement, a: AdresseHistorique): number[] {
  const t = dpe.date;
  // Counted in days, not from the rounded years served: 730 days are 2 years to the day.
  const derniere = a.ventes.filter((x) => x.date < t).at(-1);
  const jours = derniere ? joursEntre(derniere.date, t) : null;
  const valeurs: Record<Signal, boolean> = {
    audit_connu: v.audit_connu,
    dpe_valide_au_dpe: v.dpe_valide_au_dpe,
    passoire: dpe.etiquette === 'F' || dpe.etiquette === 'G',
    detention_moins_2_ans: jours !== null && jours <= 730,
    detention_2_5_ans: jours !== null && jours > 730 && jours <= 1826,
    detention_5_ans_plus: jours !== null && jours > 1826,
    sci_connue_au_dpe: v.sci_connue_au_dpe,
    ventes_ilot_3: v.ventes_ilot_avant_dpe >= 3,
    ventes_numero_3: v.ventes_numero_avant_dpe >= 3,
    permis_3_ans: a.permis.some((p) => p.date < t && joursEntre(p.date, t) <= FENETRE_PERMIS_JOURS),
    copro: v.copro_ilot,
    appartement: dpe.type === 'appartement',
    petite_surface: dpe.surface !== null && dpe.surface < 40,
  };
  return SIGNAUX.map((s) => (valeurs[s.signal] ? 1 : 0));
}

/** Whether a DVF sale is recorded at the address in [de, de + jours). */
export function vendueEntre(a: AdresseHistorique, de: string, jours: number): boolean {
  const fin = plusJours(de, jours);
  return a.ventes.some((v) => v.date >= de && v.date < fin);
}
