import { fromWgs84, toWgs84, type ZoneGeometry } from '../../lib/geometrie.ts';

/**
 * Plane geometry in the dossier's local frame: metres of Lambert-93 (EPSG:2154) from an origin, x towards grid east,
 * y towards grid north. Distances, areas and drawings are measured here, never on degrees; the drawings' north arrow
 * is the grid north (within 3° of the true north in metropolitan France).
 */

export interface Pt {
  x: number;
  y: number;
}
/** A ring without its closing point, counter-clockwise. */
export type Anneau = Pt[];

export interface Repere {
  origine: { lat: number; lon: number };
  versLocal(lon: number, lat: number): Pt;
  versWgs84(p: Pt): [number, number];
}

export function repereAutour(lat: number, lon: number): Repere {
  const o = fromWgs84('l93', lat, lon);
  return {
    origine: { lat, lon },
    versLocal(lo, la) {
      const p = fromWgs84('l93', la, lo);
      return { x: p.x - o.x, y: p.y - o.y };
    },
    versWgs84(p) {
      const w = toWgs84('l93', p.x + o.x, p.y + o.y)!;
      return [w.lon, w.lat];
    },
  };
}

export function aireSignee(a: Anneau): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) {
    const p = a[i];
    const q = a[(i + 1) % a.length];
    s += p.x * q.y - q.x * p.y;
  }
  return s / 2;
}

export const aire = (a: Anneau) => Math.abs(aireSignee(a));

/** The ring counter-clockwise, without a repeated closing point. */
export function normaliser(points: Pt[]): Anneau {
  const a = points.slice();
  if (a.length > 1 && a[0].x === a[a.length - 1].x && a[0].y === a[a.length - 1].y) a.pop();
  return aireSignee(a) < 0 ? a.reverse() : a;
}

/** The outer ring of the largest polygon of a (Multi)Polygon, in the local frame. */
export function anneauDe(geometrie: ZoneGeometry, repere: Repere): Anneau {
  const polygones = geometrie.type === 'Polygon' ? [geometrie.coordinates] : geometrie.coordinates;
  let meilleur: Anneau = [];
  for (const poly of polygones) {
    const a = normaliser(poly[0].map(([lon, lat]) => repere.versLocal(lon, lat)));
    if (aire(a) > aire(meilleur)) meilleur = a;
  }
  return meilleur;
}

export function centroide(a: Anneau): Pt {
  const s = aireSignee(a);
  if (Math.abs(s) < 1e-9)
    return { x: a.reduce((t, p) => t + p.x, 0) / a.length, y: a.reduce((t, p) => t + p.y, 0) / a.length };
  let cx = 0;
  let cy = 0;
  for (let i = 0; i < a.length; i++) {
    const p = a[i];
    const q = a[(i + 1) % a.length];
    const f = p.x * q.y - q.x * p.y;
    cx += (p.x + q.x) * f;
    cy += (p.y + q.y) * f;
  }
  return { x: cx / (6 * s), y: cy / (6 * s) };
}

export function boite(points: Pt[]) {
  return {
    xmin: Math.min(...points.map((p) => p.x)),
    xmax: Math.max(...points.map((p) => p.x)),
    ymin: Math.min(...points.map((p) => p.y)),
    ymax: Math.max(...points.map((p) => p.y)),
  };
}

export function dedans(a: Anneau, p: Pt): boolean {
  let inside = false;
  for (let i = 0, j = a.length - 1; i < a.length; j = i++) {
    const pi = a[i];
    const pj = a[j];
    if (pi.y > p.y !== pj.y > p.y && p.x < ((pj.x - pi.x) * (p.y - pi.y)) / (pj.y - pi.y) + pi.x) inside = !inside;
  }
  return inside;
}

export function distancePointSegment(p: Pt, a: Pt, b: Pt): number {
  const dx = b.x - a.x;
  const dy = b.y - a.y;
  const l2 = dx * dx + dy * dy;
  const t = l2 === 0 ? 0 : Math.max(0, Math.min(1, ((p.x - a.x) * dx + (p.y - a.y) * dy) / l2));
  return Math.hypot(p.x - a.x - t * dx, p.y - a.y - t * dy);
}

function orient(a: Pt, b: Pt, c: Pt) {
  return (b.x - a.x) * (c.y - a.y) - (b.y - a.y) * (c.x - a.x);
}

function secants(a: Pt, b: Pt, c: Pt, d: Pt): boolean {
  const o1 = orient(a, b, c);
  const o2 = orient(a, b, d);
  const o3 = orient(c, d, a);
  const o4 = orient(c, d, b);
  return o1 * o2 < 0 && o3 * o4 < 0;
}

export function distanceSegments(a: Pt, b: Pt, c: Pt, d: Pt): number {
  if (secants(a, b, c, d)) return 0;
  return Math.min(
    distancePointSegment(a, c, d),
    distancePointSegment(b, c, d),
    distancePointSegment(c, a, b),
    distancePointSegment(d, a, b),
  );
}

export const aretes = (a: Anneau): Array<[Pt, Pt]> => a.map((p, i) => [p, a[(i + 1) % a.length]]);

/** Shortest distance between two rings' outlines, 0 when they touch, cross or one lies inside the other. */
export function distanceAnneaux(a: Anneau, b: Anneau): number {
  if (dedans(a, b[0]) || dedans(b, a[0])) return 0;
  let best = Infinity;
  for (const [p, q] of aretes(a)) for (const [r, s] of aretes(b)) best = Math.min(best, distanceSegments(p, q, r, s));
  return best;
}

/** Shortest distance from a ring to a segment (0 when the segment crosses or enters the ring). */
export function distanceAnneauSegment(a: Anneau, s: [Pt, Pt]): number {
  if (dedans(a, s[0]) || dedans(a, s[1])) return 0;
  return Math.min(...aretes(a).map(([p, q]) => distanceSegments(p, q, s[0], s[1])));
}

export function rectangle(xmin: number, ymin: number, xmax: number, ymax: number): Anneau {
  return [
    { x: xmin, y: ymin },
    { x: xmax, y: ymin },
    { x: xmax, y: ymax },
    { x: xmin, y: ymax },
  ];
}

/**
 * Rounded to the centimetre, as every measure is served and drawn; first to the micrometre, so that the noise of the
 * projection (8.99999999 m for 9 m) does not fall on the wrong side of a half centimetre.
 */
export const cm = (v: number) => Math.round(Math.round(v * 1e6) / 1e4) / 100;
