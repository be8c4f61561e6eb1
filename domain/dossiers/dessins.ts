import fontkit from '@pdf-lib/fontkit';
import { degrees, PDFDocument, rgb, type PDFFont, type PDFPage } from 'pdf-lib';
import { dejaVuFiles } from '../documents/fonts.ts';
import { aretes, boite, cm, type Anneau, type Pt } from './geometrie-locale.ts';
import type { Cote, Ouverture, Projet } from './projet.ts';
import type { ProjetPlace, Site } from './site.ts';

/**
 * The drawings of a dossier, measured first and drawn after: every figure written on a sheet is a figure of the JSON
 * (`coupes`, `facades`), formatted the same way (« 2,00 m »), so that the sheets and the answer cannot disagree.
 * Sheets are landscape A4 or A3 at 1/100, 1/200 or 1/500: the largest scale at which the drawing fits, A4 before A3.
 */

export type Echelle = '1/100' | '1/200' | '1/500';
export type Piece = 'plan_masse' | 'coupe' | 'facades';

export interface Coupe {
  projet: string;
  sens: 'perpendiculaire_au_cote' | 'parallele_au_cote' | 'nord_sud' | 'est_ouest';
  /** From which end to which: the ends are the parcel's boundaries along the cut. */
  de: Cote;
  vers: Cote;
  longueur_m: number;
  terrain_naturel: { altitude_ngf_m: number | null; plat: boolean; profil: Array<[number, number]> };
  projet_profil: Array<[number, number]>;
  niveau_plancher_m: number;
  altitude_plancher_ngf_m: number | null;
  hauteur_max_sol_m: number;
  altitude_max_ngf_m: number | null;
  hauteur_max_autorisee_m: number | null;
  distances_limites: Array<{ cote: Cote; distance_m: number }>;
  /** The existing buildings the cut crosses: from and to (m from the `de` boundary); their height is not known. */
  batiments: Array<{ numero: number; de_m: number; a_m: number }>;
  deblai_m3: number;
  remblai_m3: number;
  feuille: number | null;
}

export interface Facade {
  projet: string;
  orientation: Cote;
  largeur_m: number;
  hauteur_murs_m: number;
  hauteur_faitage_m: number;
  toiture: 'plate' | 'un_pan' | 'deux_pans';
  pente_toiture_deg: number | null;
  pignon: boolean;
  ouvertures: Array<{
    type: Ouverture['type'];
    libelle: string | null;
    position_m: number;
    largeur_m: number;
    hauteur_m: number;
    allege_m: number;
  }>;
  materiaux: { murs: string | null; toiture: string | null; menuiseries: string | null };
  feuille: number | null;
}

export interface FeuilleDessinee {
  numero: number;
  piece: Piece;
  titre: string;
  echelle: Echelle;
  format: 'A4' | 'A3';
  bytes: Uint8Array;
  /** Every text written on the sheet, in order (what `pdftotext` reads back). */
  textes: string[];
}

export interface Cartouche {
  adresse: string;
  parcelle: string;
  date: string;
  code: string | null;
}

const MM = 72 / 25.4;
const FORMATS = { A4: [297, 210], A3: [420, 297] } as const;
const ECHELLES = [100, 200, 500] as const;
const MARGE_MM = 10;
const CARTOUCHE_MM = 32;

export const metres = (v: number) =>
  `${v.toLocaleString('fr-FR', { minimumFractionDigits: 2, maximumFractionDigits: 2 }).replace(/\u202f/g, ' ')} m`;
const m2 = (v: number) => `${v.toLocaleString('fr-FR', { maximumFractionDigits: 2 }).replace(/\u202f/g, ' ')} m²`;

/** The largest scale, A4 first, at which `largeurM` × `hauteurM` fits the drawing area. */
export function choisirEchelle(
  largeurM: number,
  hauteurM: number,
): { echelle: number; format: 'A4' | 'A3'; tient: boolean } {
  for (const echelle of ECHELLES) {
    for (const format of ['A4', 'A3'] as const) {
      const [w, h] = FORMATS[format];
      const dispoL = w - 2 * MARGE_MM;
      const dispoH = h - 2 * MARGE_MM - CARTOUCHE_MM;
      if ((largeurM * 1000) / echelle <= dispoL && (hauteurM * 1000) / echelle <= dispoH)
        return { echelle, format, tient: true };
    }
  }
  return { echelle: 500, format: 'A3', tient: false };
}

/** A sheet drawn: its PDF, every text written on it, its scale and format. */
export interface Dessin {
  bytes: Uint8Array;
  textes: string[];
  echelle: number;
  format: 'A4' | 'A3';
  tient: boolean;
}

interface Toile {
  doc: PDFDocument;
  page: PDFPage;
  font: PDFFont;
  gras: PDFFont;
  textes: string[];
  /** Paper point of a model point (metres). */
  vers: (p: Pt) => Pt;
  echelle: number;
  format: 'A4' | 'A3';
  /** false: the drawing is larger than an A3 at 1/500, and runs off the sheet. */
  tient: boolean;
}

async function nouvelleToile(emprise: { xmin: number; xmax: number; ymin: number; ymax: number }): Promise<Toile> {
  const largeur = emprise.xmax - emprise.xmin;
  const hauteur = emprise.ymax - emprise.ymin;
  const { echelle, format, tient } = choisirEchelle(largeur, hauteur);
  const doc = await PDFDocument.create();
  doc.registerFontkit(fontkit);
  const fichiers = dejaVuFiles();
  const font = await doc.embedFont(fichiers.regular, { subset: true });
  const gras = await doc.embedFont(fichiers.bold, { subset: true });
  const [w, h] = FORMATS[format];
  const page = doc.addPage([w * MM, h * MM]);
  const k = (1000 / echelle) * MM; // paper points per metre
  const zone = {
    x: MARGE_MM * MM,
    y: (MARGE_MM + CARTOUCHE_MM) * MM,
    w: (w - 2 * MARGE_MM) * MM,
    h: (h - 2 * MARGE_MM - CARTOUCHE_MM) * MM,
  };
  const ox = zone.x + (zone.w - largeur * k) / 2;
  const oy = zone.y + (zone.h - hauteur * k) / 2;
  return {
    doc,
    page,
    font,
    gras,
    textes: [],
    vers: (p) => ({ x: ox + (p.x - emprise.xmin) * k, y: oy + (p.y - emprise.ymin) * k }),
    echelle,
    format,
    tient,
  };
}

const NOIR = rgb(0, 0, 0);
const GRIS = rgb(0.55, 0.55, 0.55);
const GRIS_CLAIR = rgb(0.85, 0.85, 0.85);
const ROUGE = rgb(0.8, 0.15, 0.1);
const ROSE = rgb(0.98, 0.85, 0.82);
const BLEU = rgb(0.2, 0.35, 0.75);

function texte(
  t: Toile,
  s: string,
  p: Pt,
  taille = 7,
  options: { gras?: boolean; centre?: boolean; couleur?: ReturnType<typeof rgb>; angle?: number } = {},
) {
  const font = options.gras ? t.gras : t.font;
  const x = options.centre ? p.x - font.widthOfTextAtSize(s, taille) / 2 : p.x;
  t.page.drawText(s, {
    x,
    y: p.y,
    size: taille,
    font,
    color: options.couleur ?? NOIR,
    rotate: options.angle ? degrees(options.angle) : undefined,
  });
  t.textes.push(s);
}

function ligne(t: Toile, a: Pt, b: Pt, epaisseur = 0.6, couleur = NOIR, tirets?: number[]) {
  t.page.drawLine({ start: a, end: b, thickness: epaisseur, color: couleur, dashArray: tirets });
}

function polygone(
  t: Toile,
  points: Pt[],
  options: { trait?: number; couleur?: ReturnType<typeof rgb>; fond?: ReturnType<typeof rgb>; tirets?: number[] } = {},
) {
  if (points.length < 2) return;
  const H = t.page.getHeight();
  const path =
    points.map((p, i) => `${i === 0 ? 'M' : 'L'} ${p.x.toFixed(2)} ${(H - p.y).toFixed(2)}`).join(' ') + ' Z';
  t.page.drawSvgPath(path, {
    x: 0,
    y: H,
    borderWidth: options.trait ?? 0.6,
    borderColor: options.couleur ?? NOIR,
    color: options.fond,
    borderDashArray: options.tirets,
  });
}

/** A dimension line between two paper points, its figure in the middle. */
function cote(t: Toile, a: Pt, b: Pt, valeur: string, couleur = BLEU) {
  ligne(t, a, b, 0.5, couleur);
  const dx = b.x - a.x;
  const dy = b.y - a.y;
  const l = Math.hypot(dx, dy) || 1;
  const nx = (-dy / l) * 2.5;
  const ny = (dx / l) * 2.5;
  for (const p of [a, b]) ligne(t, { x: p.x - nx, y: p.y - ny }, { x: p.x + nx, y: p.y + ny }, 0.5, couleur);
  texte(t, valeur, { x: (a.x + b.x) / 2 + nx * 1.2, y: (a.y + b.y) / 2 + ny * 1.2 }, 7, { centre: true, couleur });
}

function cartouche(t: Toile, titre: string, c: Cartouche) {
  const W = t.page.getWidth();
  const x = W - MARGE_MM * MM - 120 * MM;
  const y = MARGE_MM * MM;
  t.page.drawRectangle({ x, y, width: 120 * MM, height: (CARTOUCHE_MM - 4) * MM, borderColor: NOIR, borderWidth: 0.8 });
  const lignes = [
    `${titre}${c.code ? ` — ${c.code}` : ''}`,
    `Adresse : ${c.adresse}`,
    `Parcelle : ${c.parcelle}`,
    `Échelle : 1/${t.echelle} — Format ${t.format}`,
    `Date : ${c.date}`,
  ];
  lignes.forEach((s, i) =>
    texte(t, s, { x: x + 3 * MM, y: y + (CARTOUCHE_MM - 9 - i * 4.6) * MM }, i === 0 ? 9 : 7.5, { gras: i === 0 }),
  );
}

function echelleGraphique(t: Toile) {
  const pas = t.echelle <= 100 ? 1 : t.echelle <= 200 ? 2 : 5;
  const k = (1000 / t.echelle) * MM;
  const x0 = MARGE_MM * MM;
  const y0 = (MARGE_MM + 6) * MM;
  for (let i = 0; i < 5; i++) {
    t.page.drawRectangle({
      x: x0 + i * pas * k,
      y: y0,
      width: pas * k,
      height: 1.5 * MM,
      color: i % 2 ? rgb(1, 1, 1) : NOIR,
      borderColor: NOIR,
      borderWidth: 0.4,
    });
  }
  texte(t, '0', { x: x0, y: y0 + 2.5 * MM }, 6, { centre: true });
  texte(t, `${5 * pas} m`, { x: x0 + 5 * pas * k, y: y0 + 2.5 * MM }, 6, { centre: true });
}

function nord(t: Toile) {
  const W = t.page.getWidth();
  const H = t.page.getHeight();
  const c = { x: W - (MARGE_MM + 8) * MM, y: H - (MARGE_MM + 14) * MM };
  polygone(
    t,
    [
      { x: c.x, y: c.y + 9 * MM },
      { x: c.x - 3 * MM, y: c.y },
      { x: c.x, y: c.y + 2.5 * MM },
      { x: c.x + 3 * MM, y: c.y },
    ],
    { fond: NOIR, trait: 0.5 },
  );
  texte(t, 'N', { x: c.x, y: c.y + 10.5 * MM }, 9, { centre: true, gras: true });
}

/** Closest points between a ring and a segment (the dimension line of a distance). */
function plusProches(anneau: Anneau, a: Pt, b: Pt): [Pt, Pt] {
  let best: [Pt, Pt] = [anneau[0], a];
  let d = Infinity;
  const proj = (p: Pt, u: Pt, v: Pt): Pt => {
    const dx = v.x - u.x;
    const dy = v.y - u.y;
    const l2 = dx * dx + dy * dy;
    const s = l2 === 0 ? 0 : Math.max(0, Math.min(1, ((p.x - u.x) * dx + (p.y - u.y) * dy) / l2));
    return { x: u.x + s * dx, y: u.y + s * dy };
  };
  const essayer = (p: Pt, q: Pt) => {
    const e = Math.hypot(p.x - q.x, p.y - q.y);
    if (e < d) {
      d = e;
      best = [p, q];
    }
  };
  for (const [u, v] of aretes(anneau)) {
    essayer(proj(a, u, v), a);
    essayer(proj(b, u, v), b);
    essayer(u, proj(u, a, b));
    essayer(v, proj(v, a, b));
  }
  return best;
}

/** What the applicant marks on the plot plan (trees, accesses, parking, networks, photo viewpoints), in the local frame. */
export interface AnnotationLocale {
  type: 'arbre' | 'acces' | 'stationnement' | 'reseau' | 'vue_photo';
  position: Pt | null;
  trace: Pt[];
  etat?: 'conserve' | 'abattu' | 'plante';
  diametre_m?: number;
  azimut_deg?: number;
  nature?: 'vehicule' | 'pieton';
  largeur_m?: number;
  longueur_m?: number;
  reseau?: 'eau' | 'electricite' | 'assainissement';
  numero?: number;
  piece?: 'proche' | 'lointain';
}

const ETAT_ARBRE = { conserve: 'conservé', abattu: 'abattu', plante: 'planté' } as const;

function annoter(t: Toile, a: AnnotationLocale) {
  const VERT = rgb(0.1, 0.5, 0.2);
  if (a.type === 'reseau' && a.trace.length > 1) {
    for (let i = 1; i < a.trace.length; i++)
      ligne(t, t.vers(a.trace[i - 1]), t.vers(a.trace[i]), 0.8, BLEU, [5, 2, 1, 2]);
    texte(t, `Réseau ${a.reseau ?? ''}`.trim(), t.vers(a.trace[0]), 6, { couleur: BLEU });
    return;
  }
  if (!a.position) return;
  const p = t.vers(a.position);
  const k = (1000 / t.echelle) * MM;
  if (a.type === 'arbre') {
    const r = Math.max(0.5, (a.diametre_m ?? 2) / 2) * k;
    t.page.drawCircle({
      x: p.x,
      y: p.y,
      size: r,
      borderColor: VERT,
      borderWidth: 0.8,
      borderDashArray: a.etat === 'abattu' ? [2, 2] : undefined,
    });
    texte(t, `Arbre${a.etat ? ` ${ETAT_ARBRE[a.etat]}` : ''}`, { x: p.x + r + 1, y: p.y }, 6, { couleur: VERT });
  } else if (a.type === 'stationnement') {
    const l = (a.largeur_m ?? 2.5) * k;
    const h = (a.longueur_m ?? 5) * k;
    t.page.drawRectangle({ x: p.x - l / 2, y: p.y - h / 2, width: l, height: h, borderColor: GRIS, borderWidth: 0.6 });
    texte(t, 'Stationnement', { x: p.x, y: p.y }, 6, { centre: true });
  } else if (a.type === 'acces') {
    t.page.drawCircle({ x: p.x, y: p.y, size: 2, color: NOIR });
    texte(
      t,
      `Accès ${a.nature === 'pieton' ? 'piéton' : a.nature === 'vehicule' ? 'véhicule' : ''}`.trim(),
      { x: p.x + 3, y: p.y + 1 },
      6,
    );
  } else if (a.type === 'vue_photo') {
    // The viewpoint and its direction: azimuth from the north, clockwise.
    const az = ((a.azimut_deg ?? 0) * Math.PI) / 180;
    const bout = { x: p.x + Math.sin(az) * 18, y: p.y + Math.cos(az) * 18 };
    t.page.drawCircle({ x: p.x, y: p.y, size: 2, borderColor: ROUGE, borderWidth: 0.8 });
    ligne(t, p, bout, 0.8, ROUGE);
    texte(
      t,
      `Photo ${a.numero ?? ''}${a.piece ? ` (${a.piece})` : ''}`.replace('  ', ' '),
      { x: p.x + 3, y: p.y - 7 },
      6,
      { couleur: ROUGE },
    );
  }
}

export async function dessinerPlanMasse(
  site: Site,
  c: Cartouche,
  annotations: AnnotationLocale[] = [],
): Promise<Dessin> {
  const points = [...site.parcelle.anneau, ...site.projets.flatMap((p) => p.anneau)];
  const b = boite(points);
  const marge = Math.max(3, (b.xmax - b.xmin) * 0.08);
  const emprise = { xmin: b.xmin - marge, xmax: b.xmax + marge, ymin: b.ymin - marge, ymax: b.ymax + marge };
  const t = await nouvelleToile(emprise);
  const dansEmprise = (p: Pt) =>
    p.x >= emprise.xmin && p.x <= emprise.xmax && p.y >= emprise.ymin && p.y <= emprise.ymax;
  for (const v of site.voisines) {
    for (const [p, q] of aretes(v.anneau)) {
      const seg = clipper(p, q, emprise);
      if (seg) ligne(t, t.vers(seg[0]), t.vers(seg[1]), 0.4, GRIS, [2, 2]);
    }
  }
  polygone(t, site.parcelle.anneau.map(t.vers), { trait: 1.6 });
  for (const bat of site.batiments) {
    polygone(t, bat.anneau.map(t.vers), { fond: GRIS_CLAIR, trait: 0.6 });
    const cb = boite(bat.anneau);
    texte(
      t,
      `Existant ${bat.numero} (${m2(bat.emprise_m2)})`,
      t.vers({ x: (cb.xmin + cb.xmax) / 2, y: (cb.ymin + cb.ymax) / 2 }),
      6,
      { centre: true },
    );
  }
  for (const p of site.projets) {
    polygone(t, p.anneau.map(t.vers), { fond: ROSE, couleur: ROUGE, trait: 1.2 });
    const pb = boite(p.anneau);
    const centre = t.vers({ x: (pb.xmin + pb.xmax) / 2, y: (pb.ymin + pb.ymax) / 2 });
    texte(t, p.libelle, { x: centre.x, y: centre.y + 2 }, 7, { centre: true, gras: true, couleur: ROUGE });
    texte(
      t,
      `${metres(cm(pb.xmax - pb.xmin))} × ${metres(cm(pb.ymax - pb.ymin))}`,
      { x: centre.x, y: centre.y - 7 },
      6,
      { centre: true, couleur: ROUGE },
    );
    // One dimension per side and nature: the figure is the JSON's distance of that side.
    for (const d of p.mesures.distances_limites) {
      const segments = site.limites.filter((l) => l.cote === d.cote && l.nature === d.nature);
      let paire: [Pt, Pt] | null = null;
      let meilleure = Infinity;
      for (const l of segments) {
        const [u, v] = plusProches(p.anneau, l.a, l.b);
        const e = Math.hypot(u.x - v.x, u.y - v.y);
        if (e < meilleure) {
          meilleure = e;
          paire = [u, v];
        }
      }
      if (paire && d.distance_m > 0.01 && dansEmprise(paire[1]))
        cote(t, t.vers(paire[0]), t.vers(paire[1]), metres(d.distance_m));
    }
  }
  const pc = boite(site.parcelle.anneau);
  texte(
    t,
    `Parcelle ${site.parcelle.section} ${Number(site.parcelle.numero)} — ${m2(site.parcelle.aire_m2)}`,
    t.vers({ x: pc.xmin, y: pc.ymax + 0.6 }),
    7,
    { gras: true },
  );
  for (const a of annotations) annoter(t, a);
  nord(t);
  echelleGraphique(t);
  cartouche(t, 'Plan de masse', c);
  return { bytes: await t.doc.save(), textes: t.textes, echelle: t.echelle, format: t.format, tient: t.tient };
}

/** Liang–Barsky: the part of a segment inside a box, or null. */
function clipper(p: Pt, q: Pt, e: { xmin: number; xmax: number; ymin: number; ymax: number }): [Pt, Pt] | null {
  let t0 = 0;
  let t1 = 1;
  const dx = q.x - p.x;
  const dy = q.y - p.y;
  for (const [pp, qq] of [
    [-dx, p.x - e.xmin],
    [dx, e.xmax - p.x],
    [-dy, p.y - e.ymin],
    [dy, e.ymax - p.y],
  ]) {
    if (pp === 0) {
      if (qq < 0) return null;
    } else {
      const r = qq / pp;
      if (pp < 0) t0 = Math.max(t0, r);
      else t1 = Math.min(t1, r);
    }
  }
  if (t0 > t1) return null;
  return [
    { x: p.x + t0 * dx, y: p.y + t0 * dy },
    { x: p.x + t1 * dx, y: p.y + t1 * dy },
  ];
}

// ---------------------------------------------------------------------------------------------------------------
// Sections.

const AXE: Record<Cote, Pt> = {
  nord: { x: 0, y: 1 },
  sud: { x: 0, y: -1 },
  est: { x: 1, y: 0 },
  ouest: { x: -1, y: 0 },
};
const OPPOSE: Record<Cote, Cote> = { nord: 'sud', sud: 'nord', est: 'ouest', ouest: 'est' };

/** Parameters where the line (o + s·u) crosses a ring's edges, sorted. */
function traversees(anneau: Anneau, o: Pt, u: Pt): number[] {
  const ss: number[] = [];
  for (const [a, b] of aretes(anneau)) {
    const ex = b.x - a.x;
    const ey = b.y - a.y;
    const den = u.x * ey - u.y * ex;
    if (Math.abs(den) < 1e-12) continue;
    const s = ((a.x - o.x) * ey - (a.y - o.y) * ex) / den;
    const r = ((a.x - o.x) * u.y - (a.y - o.y) * u.x) / den;
    if (r >= -1e-9 && r <= 1 + 1e-9) ss.push(s);
  }
  return ss.sort((x, y) => x - y);
}

/** Roof and walls of a project, from its fields (see Facade). */
export function volumes(
  p: Projet,
  hauteur: number,
  portee: number,
): { murs: number; faitage: number; toiture: Facade['toiture']; pente: number | null } {
  const toiture = p.toiture ?? 'plate';
  if (toiture === 'plate')
    return { murs: p.hauteur_murs_m ?? hauteur, faitage: p.hauteur_murs_m ?? hauteur, toiture, pente: null };
  const pente = p.pente_toiture_deg ?? null;
  const faitage = p.hauteur_faitage_m ?? hauteur;
  const course = toiture === 'deux_pans' ? portee / 2 : portee;
  const murs =
    p.hauteur_murs_m ??
    Math.max(
      0,
      faitage - (pente !== null ? Math.tan((pente * Math.PI) / 180) * course : Math.min(faitage * 0.3, course * 0.58)),
    );
  return {
    murs: cm(murs),
    faitage: cm(faitage),
    toiture,
    pente: pente ?? cm((Math.atan((faitage - murs) / (course || 1)) * 180) / Math.PI),
  };
}

/** The span a roof slopes over (across its ridge), the same for the sections and every facade of a project. */
function porteeToiture(p: ProjetPlace): number {
  const b = boite(p.anneau);
  const [le, travers] =
    GAUCHE[p.cote].axe === 'x' ? [b.xmax - b.xmin, b.ymax - b.ymin] : [b.ymax - b.ymin, b.xmax - b.xmin];
  return (p.projet.sens_faitage ?? 'parallele_au_cote') === 'parallele_au_cote' ? travers : le;
}

export function mesurerCoupe(site: Site, p: ProjetPlace, plafond: number | null): Coupe {
  const sens = p.projet.sens_coupe ?? 'perpendiculaire_au_cote';
  const versCote: Cote =
    sens === 'nord_sud'
      ? 'sud'
      : sens === 'est_ouest'
        ? 'est'
        : sens === 'perpendiculaire_au_cote'
          ? p.cote
          : p.cote === 'nord' || p.cote === 'sud'
            ? 'est'
            : 'nord';
  const u = AXE[versCote];
  const b = boite(p.anneau);
  const o = { x: (b.xmin + b.xmax) / 2, y: (b.ymin + b.ymax) / 2 };
  const sp = traversees(site.parcelle.anneau, o, u);
  const proj = p.anneau.map((pt) => (pt.x - o.x) * u.x + (pt.y - o.y) * u.y);
  const pa = Math.min(...proj);
  const pb = Math.max(...proj);
  // The parcel's boundaries on either side of the project along the cut.
  const avant = sp.filter((s) => s <= pa + 1e-6);
  const apres = sp.filter((s) => s >= pb - 1e-6);
  const s0 = avant.length ? avant[avant.length - 1] : Math.min(pa, sp[0] ?? pa);
  const s1 = apres.length ? apres[0] : Math.max(pb, sp[sp.length - 1] ?? pb);
  const longueur = cm(s1 - s0);
  const x0 = cm(pa - s0);
  const x1 = cm(pb - s0);
  const m = p.mesures;
  const plancher = p.projet.niveau_plancher_m ?? 0;
  let profil: Array<[number, number]>;
  let deblai = 0;
  let remblai = 0;
  if (p.projet.nature === 'piscine') {
    const prof = p.projet.profondeur_bassin_m ?? 1.5;
    const margelle = p.projet.niveau_margelle_m ?? 0;
    profil = [
      [x0, margelle],
      [x0, -prof],
      [x1, -prof],
      [x1, margelle],
    ];
    deblai = (m.bassin_m2 ?? 0) * prof;
  } else {
    const v = volumes(p.projet, m.hauteur_m, porteeToiture(p));
    const faitageCoupe =
      v.toiture === 'deux_pans' &&
      (p.projet.sens_faitage ?? 'parallele_au_cote') ===
        (sens === 'perpendiculaire_au_cote' ? 'parallele_au_cote' : 'perpendiculaire_au_cote');
    const haut = [] as Array<[number, number]>;
    if (v.toiture === 'plate') haut.push([x0, v.faitage], [x1, v.faitage]);
    else if (v.toiture === 'deux_pans' && faitageCoupe)
      haut.push([x0, v.murs], [cm((x0 + x1) / 2), v.faitage], [x1, v.murs]);
    else if (v.toiture === 'un_pan' && sens === 'perpendiculaire_au_cote') {
      const hautCote = (p.projet.pan_haut ?? 'cote_oppose') === 'cote_reference';
      haut.push([x0, hautCote ? v.murs : v.faitage], [x1, hautCote ? v.faitage : v.murs]);
    } else haut.push([x0, v.faitage], [x1, v.faitage]);
    profil = [[x0, plancher], ...haut, [x1, plancher]];
    if (plancher > 0) remblai = m.emprise_m2 * plancher;
    if (plancher < 0) deblai = m.emprise_m2 * -plancher;
  }
  const alt = site.altitude_terrain_m;
  return {
    projet: p.libelle,
    sens,
    de: OPPOSE[versCote],
    vers: versCote,
    longueur_m: longueur,
    terrain_naturel: {
      altitude_ngf_m: alt,
      plat: true,
      profil: [
        [0, 0],
        [longueur, 0],
      ],
    },
    projet_profil: profil.map(([x, z]) => [cm(x), cm(z)]),
    niveau_plancher_m: plancher,
    altitude_plancher_ngf_m: alt === null ? null : cm(alt + plancher),
    hauteur_max_sol_m: cm(Math.max(...profil.map(([, z]) => z), 0)),
    altitude_max_ngf_m: alt === null ? null : cm(alt + Math.max(...profil.map(([, z]) => z), 0)),
    hauteur_max_autorisee_m: plafond,
    batiments: site.batiments.flatMap((b) => {
      const ts = traversees(b.anneau, o, u);
      if (ts.length < 2) return [];
      const de = Math.max(0, ts[0] - s0);
      const a = Math.min(longueur, ts[ts.length - 1] - s0);
      return a > de ? [{ numero: b.numero, de_m: cm(de), a_m: cm(a) }] : [];
    }),
    distances_limites: [
      { cote: OPPOSE[versCote], distance_m: x0 },
      { cote: versCote, distance_m: cm(longueur - x1) },
    ],
    deblai_m3: cm(deblai),
    remblai_m3: cm(remblai),
    feuille: null,
  };
}

export async function dessinerCoupe(coupe: Coupe, c: Cartouche): Promise<Dessin> {
  const zs = coupe.projet_profil.map(([, z]) => z);
  const zmax = Math.max(...zs, coupe.hauteur_max_autorisee_m ?? 0, 1);
  const zmin = Math.min(...zs, 0);
  const emprise = { xmin: -2, xmax: coupe.longueur_m + 2, ymin: zmin - 2.5, ymax: zmax + 2 };
  const t = await nouvelleToile(emprise);
  const P = (x: number, z: number) => t.vers({ x, y: z });
  // Natural ground, the boundaries at both ends.
  ligne(t, P(-1.5, 0), P(coupe.longueur_m + 1.5, 0), 1.2, rgb(0.35, 0.25, 0.1));
  // Existing buildings the cut crosses: their footprint on the ground, their height unknown (the cadastre has none).
  for (const b of coupe.batiments) {
    t.page.drawRectangle({
      x: P(b.de_m, 0).x,
      y: P(0, -0.4).y,
      width: P(b.a_m, 0).x - P(b.de_m, 0).x,
      height: P(0, 0).y - P(0, -0.4).y,
      color: GRIS_CLAIR,
      borderColor: GRIS,
      borderWidth: 0.5,
    });
    ligne(t, P(b.de_m, 0), P(b.de_m, 2.5), 0.5, GRIS, [3, 2]);
    ligne(t, P(b.a_m, 0), P(b.a_m, 2.5), 0.5, GRIS, [3, 2]);
    texte(t, `Existant ${b.numero} (hauteur non relevée)`, { x: P((b.de_m + b.a_m) / 2, 0).x, y: P(0, 1.2).y }, 6, {
      centre: true,
      couleur: GRIS,
    });
  }
  const tn =
    coupe.terrain_naturel.altitude_ngf_m === null
      ? 'TN ±0,00 (terrain plat supposé)'
      : `TN ${metres(coupe.terrain_naturel.altitude_ngf_m).replace(' m', '')} NGF`;
  texte(t, tn, { x: P(-1.5, 0).x, y: P(0, 0).y + 3 }, 6.5);
  for (const [x, cote] of [
    [0, coupe.distances_limites[0].cote],
    [coupe.longueur_m, coupe.distances_limites[1].cote],
  ] as const) {
    ligne(t, P(x, zmin - 1), P(x, zmax + 1), 0.6, GRIS, [4, 2]);
    texte(t, `Limite ${cote}`, { x: P(x, 0).x, y: P(0, zmax + 1).y + 3 }, 6.5, { centre: true });
  }
  polygone(
    t,
    coupe.projet_profil.map(([x, z]) => P(x, z)),
    { fond: ROSE, couleur: ROUGE, trait: 1.2 },
  );
  const [x0] = coupe.projet_profil[0];
  const x1 = coupe.projet_profil[coupe.projet_profil.length - 1][0];
  texte(t, coupe.projet, { x: P((x0 + x1) / 2, 0).x, y: P(0, coupe.hauteur_max_sol_m / 2).y }, 7, {
    centre: true,
    gras: true,
    couleur: ROUGE,
  });
  // Distances to the boundaries, the height above the ground.
  const yCote = P(0, zmin - 1.2).y;
  if (coupe.distances_limites[0].distance_m > 0.01)
    cote(t, { x: P(0, 0).x, y: yCote }, { x: P(x0, 0).x, y: yCote }, metres(coupe.distances_limites[0].distance_m));
  if (coupe.distances_limites[1].distance_m > 0.01)
    cote(
      t,
      { x: P(x1, 0).x, y: yCote },
      { x: P(coupe.longueur_m, 0).x, y: yCote },
      metres(coupe.distances_limites[1].distance_m),
    );
  const xh = P(x1, 0).x + 6;
  if (coupe.hauteur_max_sol_m > 0)
    cote(
      t,
      { x: xh, y: P(0, 0).y },
      { x: xh, y: P(0, coupe.hauteur_max_sol_m).y },
      `H ${metres(coupe.hauteur_max_sol_m)}`,
    );
  if (coupe.hauteur_max_autorisee_m !== null) {
    ligne(
      t,
      P(0, coupe.hauteur_max_autorisee_m),
      P(coupe.longueur_m, coupe.hauteur_max_autorisee_m),
      0.6,
      ROUGE,
      [6, 3],
    );
    texte(
      t,
      `Hauteur maximale du PLU ${metres(coupe.hauteur_max_autorisee_m)}`,
      { x: P(0, 0).x + 2, y: P(0, coupe.hauteur_max_autorisee_m).y + 2 },
      6.5,
      { couleur: ROUGE },
    );
  }
  const bas = P(0, zmin - 2.2).y;
  texte(
    t,
    `Déblai ${coupe.deblai_m3.toLocaleString('fr-FR')} m³ — Remblai ${coupe.remblai_m3.toLocaleString('fr-FR')} m³`,
    { x: P(0, 0).x, y: bas },
    6.5,
  );
  echelleGraphique(t);
  cartouche(t, `Coupe ${coupe.de}-${coupe.vers} — ${coupe.projet}`, c);
  return { bytes: await t.doc.save(), textes: t.textes, echelle: t.echelle, format: t.format, tient: t.tient };
}

// ---------------------------------------------------------------------------------------------------------------
// Facades.

/** Seen from outside, the left end of each facade: the direction along it, and its span on the project's box. */
const GAUCHE: Record<Cote, { axe: 'x' | 'y'; depuis: 'min' | 'max' }> = {
  sud: { axe: 'x', depuis: 'min' },
  nord: { axe: 'x', depuis: 'max' },
  est: { axe: 'y', depuis: 'min' },
  ouest: { axe: 'y', depuis: 'max' },
};

const DEFAUTS: Record<Ouverture['type'], { l: number; h: number; allege: number }> = {
  porte: { l: 0.9, h: 2.15, allege: 0 },
  fenetre: { l: 1.0, h: 1.25, allege: 0.9 },
  baie: { l: 2.4, h: 2.15, allege: 0 },
  porte_garage: { l: 2.4, h: 2.0, allege: 0 },
};

const LATERALE: Record<Cote, Cote> = { sud: 'est', est: 'nord', nord: 'ouest', ouest: 'sud' };

export function mesurerFacades(p: ProjetPlace, constats: string[]): Facade[] {
  if (p.projet.nature === 'piscine' || p.projet.nature === 'terrasse') return [];
  const b = boite(p.anneau);
  const orientations: Cote[] =
    (p.projet.facades ?? 'principale_et_laterale') === 'toutes'
      ? [p.cote, LATERALE[p.cote], OPPOSE[p.cote], OPPOSE[LATERALE[p.cote]]]
      : [p.cote, LATERALE[p.cote]];
  const paralleleAuCote = (p.projet.sens_faitage ?? 'parallele_au_cote') === 'parallele_au_cote';
  return orientations.map((o) => {
    const largeur = cm(GAUCHE[o].axe === 'x' ? b.xmax - b.xmin : b.ymax - b.ymin);
    const principale = o === p.cote || o === OPPOSE[p.cote];
    // The span the roof slopes over: across the ridge.
    // The span the roof slopes over (across the ridge), the same for every facade of the project.
    const v = volumes(p.projet, p.mesures.hauteur_m, porteeToiture(p));
    // The facades across the slope show it: a gable under two slopes, a sloping top under one.
    const pignon =
      (v.toiture === 'deux_pans' && (principale ? !paralleleAuCote : paralleleAuCote)) ||
      (v.toiture === 'un_pan' && !principale);
    const ouvertures = (p.projet.ouvertures ?? [])
      .filter((ou) => ou.facade === o)
      .map((ou) => {
        const d = DEFAUTS[ou.type];
        const l = ou.largeur_m ?? d.l;
        const position = ou.position_m ?? cm((largeur - l) / 2);
        if (position + l > largeur + 0.005)
          constats.push(
            `${p.libelle} : l’ouverture ${ou.libelle ?? ou.type} de la façade ${o} dépasse la façade (${metres(largeur)}).`,
          );
        return {
          type: ou.type,
          libelle: ou.libelle ?? null,
          position_m: cm(position),
          largeur_m: cm(l),
          hauteur_m: cm(ou.hauteur_m ?? d.h),
          allege_m: cm(ou.allege_m ?? d.allege),
        };
      });
    return {
      projet: p.libelle,
      orientation: o,
      largeur_m: largeur,
      hauteur_murs_m: v.murs,
      hauteur_faitage_m: v.faitage,
      toiture: v.toiture,
      pente_toiture_deg: v.pente,
      pignon,
      ouvertures,
      materiaux: {
        murs: p.projet.materiaux?.murs ?? null,
        toiture: p.projet.materiaux?.toiture ?? null,
        menuiseries: p.projet.materiaux?.menuiseries ?? null,
      },
      feuille: null,
    };
  });
}

export async function dessinerFacades(facades: Facade[], c: Cartouche): Promise<Dessin> {
  const ecart = 3;
  const largeurTotale = facades.reduce((t, f) => t + f.largeur_m, 0) + ecart * (facades.length - 1);
  const hmax = Math.max(...facades.map((f) => f.hauteur_faitage_m), 1);
  const t = await nouvelleToile({ xmin: -1.5, xmax: largeurTotale + 2.5, ymin: -2, ymax: hmax + 2 });
  const P = (x: number, z: number) => t.vers({ x, y: z });
  let x = 0;
  for (const f of facades) {
    ligne(t, P(x - 1, 0), P(x + f.largeur_m + 1, 0), 1.2, rgb(0.35, 0.25, 0.1));
    const contour: Array<[number, number]> = [
      [x, 0],
      [x + f.largeur_m, 0],
    ];
    if (f.toiture === 'plate') contour.push([x + f.largeur_m, f.hauteur_faitage_m], [x, f.hauteur_faitage_m]);
    else if (f.pignon && f.toiture === 'deux_pans')
      contour.push(
        [x + f.largeur_m, f.hauteur_murs_m],
        [x + f.largeur_m / 2, f.hauteur_faitage_m],
        [x, f.hauteur_murs_m],
      );
    else if (f.pignon) contour.push([x + f.largeur_m, f.hauteur_murs_m], [x, f.hauteur_faitage_m]);
    else
      contour.push(
        [x + f.largeur_m, f.hauteur_murs_m],
        [x + f.largeur_m, f.hauteur_faitage_m],
        [x, f.hauteur_faitage_m],
        [x, f.hauteur_murs_m],
      );
    polygone(
      t,
      contour.map(([a, z]) => P(a, z)),
      { fond: ROSE, couleur: ROUGE, trait: 1.1 },
    );
    if (f.toiture !== 'plate' && !f.pignon)
      ligne(t, P(x, f.hauteur_murs_m), P(x + f.largeur_m, f.hauteur_murs_m), 0.5, ROUGE);
    for (const o of f.ouvertures) {
      polygone(
        t,
        [
          P(x + o.position_m, o.allege_m),
          P(x + o.position_m + o.largeur_m, o.allege_m),
          P(x + o.position_m + o.largeur_m, o.allege_m + o.hauteur_m),
          P(x + o.position_m, o.allege_m + o.hauteur_m),
        ],
        { fond: rgb(1, 1, 1), trait: 0.6 },
      );
    }
    texte(t, `Façade ${f.orientation}`, { x: P(x + f.largeur_m / 2, 0).x, y: P(0, f.hauteur_faitage_m).y + 10 }, 8, {
      centre: true,
      gras: true,
    });
    cote(t, { x: P(x, 0).x, y: P(0, -1).y }, { x: P(x + f.largeur_m, 0).x, y: P(0, -1).y }, metres(f.largeur_m));
    cote(
      t,
      { x: P(x, 0).x - 6, y: P(0, 0).y },
      { x: P(x, 0).x - 6, y: P(0, f.hauteur_faitage_m).y },
      metres(f.hauteur_faitage_m),
    );
    const mat = [
      f.materiaux.murs && `Murs : ${f.materiaux.murs}`,
      f.materiaux.toiture && `Toiture : ${f.materiaux.toiture}`,
      f.materiaux.menuiseries && `Menuiseries : ${f.materiaux.menuiseries}`,
    ].filter(Boolean) as string[];
    mat.forEach((s, i) => texte(t, s, { x: P(x, 0).x, y: P(0, -1.6).y - i * 8 }, 6));
    x += f.largeur_m + ecart;
  }
  echelleGraphique(t);
  cartouche(t, `Façades — ${facades[0]?.projet ?? ''}`, c);
  return { bytes: await t.doc.save(), textes: t.textes, echelle: t.echelle, format: t.format, tient: t.tient };
}
