/**
 * The scale-based adjustments of an estimate (`ajustements`, `source: bareme`): one line per nature, each with its
 * documented percentage. The figures are the usual orders of magnitude of French valuation practice (floor and lift,
 * condition, exposure, annexes, land, energy class); they are published in the operation's description, and the sum
 * is bounded so that the scale never moves a value more than the comparables say.
 */

export type Etat = 'a_renover' | 'travaux' | 'correct' | 'renove' | 'neuf';
export type Exposition =
  'nord' | 'sud' | 'est' | 'ouest' | 'sud_est' | 'sud_ouest' | 'nord_est' | 'nord_ouest' | 'traversant';
export type ClasseDpe = 'A' | 'B' | 'C' | 'D' | 'E' | 'F' | 'G';

export interface Caracteristiques {
  type: 'appartement' | 'maison';
  etage?: number;
  etages_immeuble?: number;
  ascenseur?: boolean;
  terrain_m2?: number;
  dpe?: ClasseDpe;
  etat?: Etat;
  exposition?: Exposition;
  annexes?: { parking?: number; garage?: boolean; cave?: boolean; balcon_m2?: number; terrasse_m2?: number };
}

export interface Ajustement {
  nature: 'etage' | 'etat' | 'exposition' | 'annexes' | 'terrain' | 'dpe';
  libelle: string;
  pct: number;
  motif: string | null;
  source: 'bareme' | 'ia';
}

/** The sum of the scale's lines is bounded: beyond, the comparables, not the scale, must carry the difference. */
export const PLAFOND_BAREME_PCT = 20;

export const BAREME_ETAT: Record<Etat, number> = { a_renover: -15, travaux: -8, correct: 0, renove: 5, neuf: 10 };
export const BAREME_DPE: Record<ClasseDpe, number> = { A: 3, B: 3, C: 0, D: 0, E: -2, F: -5, G: -8 };
const EXPOSITION_FAVORABLE = new Set<Exposition>(['sud', 'sud_est', 'sud_ouest', 'traversant']);

/** The documented scale, as the operation's description prints it. */
export const BAREME_TEXTE = [
  'étage (appartement) : rez-de-chaussée −5 % ; 3e étage et plus sans ascenseur −5 % ; 4e étage et plus avec ascenseur +3 %',
  `état : à rénover ${BAREME_ETAT.a_renover} %, travaux ${BAREME_ETAT.travaux} %, correct 0, rénové +${BAREME_ETAT.renove} %, neuf +${BAREME_ETAT.neuf} %`,
  'exposition : nord −3 % ; sud, sud-est, sud-ouest ou traversant +2 % ; autres 0',
  'annexes : parking +2 % par place (2 au plus), garage +3 %, cave +1 %, balcon +2 %, terrasse +4 %, 8 % au plus',
  'terrain (maison) : moins de 200 m² −3 %, 1 000 m² et plus +3 %',
  'classe DPE : A ou B +3 %, E −2 %, F −5 %, G −8 %, C ou D 0',
  `somme bornée à ±${PLAFOND_BAREME_PCT} %`,
].join(' ; ');

/** The scale's lines for what the caller gave; nothing given, nothing adjusted. */
export function ajustementsBareme(c: Caracteristiques): Ajustement[] {
  const lignes: Ajustement[] = [];
  const ligne = (nature: Ajustement['nature'], libelle: string, pct: number, motif: string) => {
    if (pct !== 0) lignes.push({ nature, libelle, pct, motif, source: 'bareme' });
  };
  if (c.type === 'appartement' && c.etage !== undefined) {
    let pct = 0;
    if (c.etage <= 0) pct = -5;
    else if (c.etage >= 3 && c.ascenseur === false) pct = -5;
    else if (c.etage >= 4 && c.ascenseur === true) pct = 3;
    ligne(
      'etage',
      'Étage et ascenseur',
      pct,
      `étage ${c.etage}${c.ascenseur === undefined ? '' : c.ascenseur ? ', ascenseur' : ', sans ascenseur'}`,
    );
  }
  if (c.etat) ligne('etat', 'État du bien', BAREME_ETAT[c.etat], `état ${c.etat}`);
  if (c.exposition) {
    const pct = c.exposition === 'nord' ? -3 : EXPOSITION_FAVORABLE.has(c.exposition) ? 2 : 0;
    ligne('exposition', 'Exposition', pct, `exposition ${c.exposition}`);
  }
  if (c.annexes) {
    const a = c.annexes;
    const parts: string[] = [];
    let pct = 0;
    if (a.parking) {
      pct += 2 * Math.min(2, a.parking);
      parts.push(`${a.parking} parking`);
    }
    if (a.garage) {
      pct += 3;
      parts.push('garage');
    }
    if (a.cave) {
      pct += 1;
      parts.push('cave');
    }
    if (a.balcon_m2) {
      pct += 2;
      parts.push(`balcon ${a.balcon_m2} m²`);
    }
    if (a.terrasse_m2) {
      pct += 4;
      parts.push(`terrasse ${a.terrasse_m2} m²`);
    }
    ligne('annexes', 'Annexes', Math.min(8, pct), parts.join(', '));
  }
  if (c.type === 'maison' && c.terrain_m2 !== undefined) {
    const pct = c.terrain_m2 < 200 ? -3 : c.terrain_m2 >= 1000 ? 3 : 0;
    ligne('terrain', 'Terrain', pct, `terrain ${c.terrain_m2} m²`);
  }
  if (c.dpe) ligne('dpe', 'Classe énergétique', BAREME_DPE[c.dpe], `DPE ${c.dpe}`);
  return lignes;
}

/** The total of the lines, bounded by the cap. */
export function totalAjustements(lignes: Ajustement[]): number {
  const somme = lignes.reduce((s, l) => s + l.pct, 0);
  return Math.max(-PLAFOND_BAREME_PCT, Math.min(PLAFOND_BAREME_PCT, somme));
}
