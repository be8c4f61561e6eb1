/**
 * The market of a commune in a month, from the mandates of its agencies: each agency's share, the leader's share and
 * the Herfindahl-Hirschman index (the sum of the squared shares, 0 when the mandates are scattered among many
 * agencies, 1 when a single agency holds them all). Pure: the rebuild computes it once per commune and month.
 */

/** Below this many mandates in a commune's month, its shares say little: `peu_d_observations`. */
export const MANDATS_MIN = 10;

export interface PartAgence {
  vendeur: string;
  mandats: number;
}

export interface Marche {
  mandats_total: number;
  n_agences: number;
  /** Share of each seller, in percent (rounded to 0.1), by seller. */
  parts_pct: Map<string, number>;
  part_leader_pct: number | null;
  /** 0-1, rounded to 0.0001; null without mandates. */
  hhi: number | null;
}

const arrondi = (x: number, pas: number) => Math.round(x / pas) * pas;

export function marcheDe(agences: PartAgence[]): Marche {
  const total = agences.reduce((s, a) => s + a.mandats, 0);
  const parts_pct = new Map<string, number>();
  if (total === 0) return { mandats_total: 0, n_agences: 0, parts_pct, part_leader_pct: null, hhi: null };
  let hhi = 0;
  let leader = 0;
  for (const a of agences) {
    const part = a.mandats / total;
    hhi += part * part;
    leader = Math.max(leader, part);
    parts_pct.set(a.vendeur, Number(arrondi(part * 100, 0.1).toFixed(1)));
  }
  return {
    mandats_total: total,
    n_agences: agences.length,
    parts_pct,
    part_leader_pct: Number(arrondi(leader * 100, 0.1).toFixed(1)),
    hhi: Number(arrondi(hhi, 0.0001).toFixed(4)),
  };
}

/** The median of numbers (the mean of the two middle ones for an even count), or null for none. */
export function mediane(valeurs: number[]): number | null {
  if (valeurs.length === 0) return null;
  const v = [...valeurs].sort((a, b) => a - b);
  const m = Math.floor(v.length / 2);
  return v.length % 2 === 1 ? v[m]! : (v[m - 1]! + v[m]!) / 2;
}
