/**
 * Urbanism point lookup benchmark (`npm run bench -- urbanisme`, or `node bench/urbanisme.ts`): BENCH_URBANISME
 * planning features (1 000 000 by default) generated deterministically over 600 real communes with made-up centres and
 * COPied into the live dataset of the service as `npm start` runs it (bench/service.ts):
 * - planning documents: a PLU per commune, some communes grouped under a PLUi, some with a communal map (CC); a few
 *   with an older edition (or the communal PLU a PLUi replaced) still imported beside the newer one, a revision in
 *   procedure, or a PSMV over the PLU's centre: what the "in force" rule of domain/urbanisme/zonage.ts sorts out;
 * - zones (sectors for a CC) tiling each commune: cells of a jittered lattice whose shared edges are the same
 *   polylines on both sides (20 to 200 vertices a zone), some with a hole that is a gap of the map, an enclave zone
 *   or the island of a neighbouring zone (a multipolygon); the older editions tile the same land with larger zones;
 * - prescriptions and information laid over them: surfaces (protected woods, reserved plots, development
 *   orientations, archaeology, noise corridors, the pre-emption right over the built-up area), lines (shopfronts,
 *   hedges, alignments) and points (protected buildings, trees, archaeological sites);
 * - public-utility easements (packages, easements, acts, assiettes): monument circles and irregular surroundings,
 *   cemetery circles, power-line and pipeline corridors, flood-risk areas, catchment areas, alignments, radio circles;
 * - cadastre parcels, which the lookup does not read but which share the database with it.
 * Then `GET /api/v1/urbanisme?lat=&lon=` with a key of an organisation of access 'usage', the load generator in a
 * process of its own (`node bench/urbanisme.ts --load`), every request a new point (the service keeps answers 24 h in
 * memory by input), one at a time then four at a time; and `urbanismeAuPoint` alone in this process on the same
 * points, each of its statements timed; beside them, the floor of a debited read through the same pipeline
 * (`taxe_amenagement`, one at a time). Figures go to bench/RESULTS.md, section "Urbanism point lookup".
 *
 * BENCH_URBANISME=50000 shows it working in a few minutes.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createDb, type Db, type Queryable } from '../db/client.ts';
import { inverser } from '../domain/adresses/resoudre.ts';
import { copyFrom } from '../lib/pg-copy.ts';
import { urbanismeAuPoint } from '../domain/urbanisme/au-point.ts';
import { areaM2, bboxOf, METRES_PER_DEGREE, type Geometry, type Position } from '../lib/geometrie.ts';
import { mulberry32, seededRandom } from '../lib/random.ts';
import { communesReelles } from './communes.ts';
import { machine, writeSection } from './results.ts';
import { startService } from './service.ts';

const FEATURES = Number(process.env.BENCH_URBANISME ?? 1_000_000);
const COMMUNES = 600;
const SEED = 20_261_130;
/** The mix of the features: zones and sectors, prescriptions and information, easement assiettes; parcels the rest. */
const PART_ZONES = 0.35;
const PART_SURCHARGES = 0.25;
const PART_ASSIETTES = 0.05;
const WARMUP = 100;
const REQUESTS = Number(process.env.BENCH_URBANISME_REQUESTS ?? 2000);
// One request at a time (a lookup's own latency), then four (lookups queueing on the 2 cores).
const CONCURRENCES = [1, 4];
/** Where the requests fall: inside the lattice of a commune, in a hole of its map, or outside every zone. */
const PART_POINTS_TROUS = 0.05;
const PART_POINTS_DEHORS = 0.1;
const TARGET_P95_MS = 20;
/** Requests of the floor measured beside: a cheap debited read through the same pipeline. */
const PLANCHER = 500;

type Rng = ReturnType<typeof seededRandom>;
/** A position in metres east and north of the commune's centre. */
type Pt = [number, number];

// ---------------------------------------------------------------------------------------------------------------------
// The plan: communes, their documents and how many features of each kind they get.
// ---------------------------------------------------------------------------------------------------------------------

interface Document {
  idurba: string;
  typedoc: 'PLU' | 'PLUi' | 'POS' | 'CC' | 'PSMV';
  etat: string;
  datappro: string | null;
  insee: string | null;
  siren: string | null;
  communes: string[];
  /** What the benchmark made it for, as the section counts them. */
  role: 'en_vigueur' | 'remplace' | 'en_procedure' | 'psmv';
}

/** A hole of a cell: a gap of the map, an enclave zone of its own, or an island of the zone next to it. */
interface Trou {
  i: number;
  j: number;
  sorte: 'vide' | 'enclave' | 'ilot';
}

interface Commune {
  code: string;
  nom: string;
  departement: string;
  lat: number;
  lon: number;
  /** Metres in a degree of longitude at the centre. */
  mLon: number;
  /** The lattice: `nx` by `ny` cells of `cote` metres, centred on the centre. */
  cote: number;
  nx: number;
  ny: number;
  seed: number;
  sorte: 'PLU' | 'PLUi' | 'CC';
  /** The document in force over the commune (its own PLU or CC, or its PLUi) and its date (AAAAMMJJ). */
  document: string;
  date: string;
  siren: string | null;
  /** An older edition still imported (or the communal PLU a PLUi replaced), a revision in procedure, a PSMV. */
  ancien: string | null;
  enProcedure: string | null;
  psmv: string | null;
  trous: Trou[];
  zones: number;
  surcharges: number;
  assiettes: number;
  parcelles: number;
}

const iso = (aaaammjj: string) => `${aaaammjj.slice(0, 4)}-${aaaammjj.slice(4, 6)}-${aaaammjj.slice(6, 8)}`;
const dateEntre = (rng: Rng, debut: number, fin: number) =>
  `${debut + rng.int(fin - debut + 1)}${String(1 + rng.int(12)).padStart(2, '0')}${String(1 + rng.int(28)).padStart(2, '0')}`;

/** A standard normal draw (Box-Muller): commune sizes are log-normal, as real ones are. */
const normale = (rng: Rng) => Math.sqrt(-2 * Math.log(1 - rng.next())) * Math.cos(2 * Math.PI * rng.next());

/** Splits `total` in proportion to `poids`, the parts summing to `total` exactly. */
function repartir(total: number, poids: number[]): number[] {
  const somme = poids.reduce((a, b) => a + b, 0);
  let cumul = 0;
  let avant = 0;
  return poids.map((p) => {
    cumul += p;
    const jusque = Math.round((total * cumul) / somme);
    const part = jusque - avant;
    avant = jusque;
    return part;
  });
}

/** Cells whose hole is of each kind: an enclave is a zone more, an island goes to the zone next to it. */
const PART_CELLULES_TROUEES = 0.06;

/**
 * The communes on a lattice of sites about 0.22° of latitude by 0.28° of longitude apart over metropolitan France (no two
 * maps can meet: the largest spans about 17 km), away from the places the live dataset already holds (the
 * demonstration territory); their documents and budgets of features.
 */
function planifier(occupes: Array<{ lat: number; lon: number; code: string | null }>): {
  communes: Commune[];
  documents: Document[];
} {
  const rng = seededRandom(SEED);
  const reelles = communesReelles(COMMUNES + 40);
  const cotes = Math.ceil(Math.sqrt(COMMUNES * 1.15));
  const sites: Array<{ lat: number; lon: number }> = [];
  for (let r = 0; r < cotes; r++) {
    for (let k = 0; k < cotes; k++) {
      const lat = 43.3 + (r * 6) / cotes + rng.between(-0.04, 0.04);
      const lon = -1 + (k * 7.5) / cotes + rng.between(-0.05, 0.05);
      if (occupes.some((o) => Math.abs(o.lat - lat) < 0.3 && Math.abs(o.lon - lon) < 0.4)) continue;
      sites.push({ lat, lon });
    }
  }
  const pris = new Set(occupes.map((o) => o.code));
  const choisies = reelles.filter((c) => !pris.has(c.code)).slice(0, COMMUNES);
  if (sites.length < choisies.length) throw new Error(`${sites.length} sites pour ${choisies.length} communes`);

  // Sizes: log-normal weights, capped so that the largest map stays well inside its site.
  const poids = choisies.map(() => Math.min(4, Math.exp(0.6 * normale(rng))));
  const zonesVisees = repartir(Math.round(FEATURES * PART_ZONES), poids);
  const surcharges = repartir(Math.round(FEATURES * PART_SURCHARGES), poids);
  const assiettes = repartir(Math.round(FEATURES * PART_ASSIETTES), poids);

  const documents: Document[] = [];
  const communes: Commune[] = [];
  let groupe: { siren: string; date: string; reste: number; doc: Document } | null = null;
  let epci = 0;
  choisies.forEach((reelle, n) => {
    const site = sites[n]!;
    const code = reelle.code;
    const tirage = rng.next();
    let sorte: Commune['sorte'] = tirage < 0.12 ? 'CC' : 'PLU';
    // About a quarter of the PLU communes are grouped, by runs of 3 to 7, under a PLUi.
    if (sorte === 'PLU' && !groupe && rng.next() < 0.07) {
      const siren = `24${String(1_000_000 + ++epci * 7919).padStart(7, '0')}`;
      const date = dateEntre(rng, 2016, 2024);
      const doc: Document = {
        idurba: `${siren}_PLUi_${date}`,
        typedoc: 'PLUi',
        etat: '03',
        datappro: date,
        insee: null,
        siren,
        communes: [],
        role: 'en_vigueur',
      };
      documents.push(doc);
      groupe = { siren, date, reste: 3 + rng.int(5), doc };
    }
    let document: string;
    let date: string;
    let siren: string | null = null;
    if (sorte === 'PLU' && groupe) {
      sorte = 'PLUi';
      document = groupe.doc.idurba;
      date = groupe.date;
      siren = groupe.siren;
      groupe.doc.communes.push(code);
      if (--groupe.reste === 0) groupe = null;
    } else {
      date = dateEntre(rng, sorte === 'CC' ? 2005 : 2012, 2024);
      document = `${code}_${sorte}_${date}`;
      documents.push({
        idurba: document,
        typedoc: sorte === 'CC' ? 'CC' : 'PLU',
        etat: '03',
        datappro: date,
        insee: code,
        siren: null,
        communes: [code],
        role: 'en_vigueur',
      });
    }
    // The older edition a newer one (or the PLUi) replaced, still imported beside it, under its own IDURBA: its
    // state says in force (most packages never change it) or replaced.
    let ancien: string | null = null;
    if (sorte !== 'CC' && rng.next() < 0.07) {
      const typedoc = rng.next() < 0.3 ? 'POS' : 'PLU';
      const dateAncien = dateEntre(rng, 1998, Number(date.slice(0, 4)) - 1);
      ancien = `${code}_${typedoc}_${dateAncien}`;
      documents.push({
        idurba: ancien,
        typedoc,
        etat: rng.next() < 0.7 ? '03' : '05',
        datappro: dateAncien,
        insee: code,
        siren: null,
        communes: [code],
        role: 'remplace',
      });
    }
    // A revision published while in procedure (01): not in force, and it does not hide the document in force.
    let enProcedure: string | null = null;
    if (sorte === 'PLU' && rng.next() < 0.02) {
      const dateRevision = dateEntre(rng, 2025, 2026);
      enProcedure = `${code}_PLU_${dateRevision}`;
      documents.push({
        idurba: enProcedure,
        typedoc: 'PLU',
        etat: '01',
        datappro: null,
        insee: code,
        siren: null,
        communes: [code],
        role: 'en_procedure',
      });
    }

    const cote = rng.between(130, 320);
    const aspect = rng.between(0.7, 1.4);
    const trouees = PART_CELLULES_TROUEES * 0.5;
    const extra = (ancien ? 1 / 4 : 0) + (enProcedure ? 1 / 9 : 0);
    let psmv: string | null = null;
    let visees = zonesVisees[n]!;
    // A PSMV over the centre of a few towns: zones over the PLU's, the two documents both in force.
    if (sorte === 'PLU' && visees >= 60 && rng.next() < 0.03) {
      const datePsmv = dateEntre(rng, 2000, 2024);
      psmv = `${code}_PSMV_${datePsmv}`;
      documents.push({
        idurba: psmv,
        typedoc: 'PSMV',
        etat: '03',
        datappro: datePsmv,
        insee: code,
        siren: null,
        communes: [code],
        role: 'psmv',
      });
      visees -= 9;
    }
    const cellules = Math.max(9, Math.round(visees / (1 + trouees + extra)));
    const nx = Math.max(3, Math.round(Math.sqrt(cellules * aspect)));
    const ny = Math.max(3, Math.round(cellules / nx));
    const trous: Trou[] = [];
    for (let j = 0; j < ny; j++) {
      for (let i = 0; i < nx; i++) {
        if (rng.next() >= PART_CELLULES_TROUEES) continue;
        const t = rng.next();
        trous.push({ i, j, sorte: t < 0.25 ? 'vide' : t < 0.75 ? 'enclave' : 'ilot' });
      }
    }
    const zones =
      nx * ny +
      trous.filter((t) => t.sorte === 'enclave').length +
      (ancien ? Math.ceil(nx / 2) * Math.ceil(ny / 2) : 0) +
      (enProcedure ? Math.ceil(nx / 3) * Math.ceil(ny / 3) : 0) +
      (psmv ? 9 : 0);
    communes.push({
      code,
      nom: reelle.nom,
      departement: reelle.departement,
      lat: site.lat,
      lon: site.lon,
      mLon: METRES_PER_DEGREE * Math.cos((site.lat * Math.PI) / 180),
      cote,
      nx,
      ny,
      seed: SEED + 1000 * (n + 1),
      sorte,
      document,
      date,
      siren,
      ancien,
      enProcedure,
      psmv,
      trous,
      zones,
      surcharges: surcharges[n]!,
      assiettes: assiettes[n]!,
      parcelles: 0,
    });
  });
  // Parcels take the rest, so that the features add up to FEATURES exactly.
  const faits = communes.reduce((s, c) => s + c.zones + c.surcharges + c.assiettes, 0);
  repartir(FEATURES - faits, poids).forEach((p, n) => (communes[n]!.parcelles = Math.max(0, p)));
  return { communes, documents };
}

// ---------------------------------------------------------------------------------------------------------------------
// Shapes, in metres around the commune's centre, then in degrees.
// ---------------------------------------------------------------------------------------------------------------------

/** A seed from a commune's seed and integers: the same lattice corner or edge from whichever cell asks for it. */
const melange = (...n: number[]) =>
  n.reduce((h, x) => Math.imul(h ^ (x + 0x9e3779b9 + (h << 6) + (h >>> 2)), 0x85ebca6b) >>> 0, 0x2545f491);

/**
 * The jittered lattice of a commune. Corners move by up to 15 % of a cell; an edge between two corners is a polyline
 * of 4 to 49 inner vertices swaying by up to 5 % of a cell, less near its ends (so that edges meeting at a corner
 * never cross), and is the same polyline for both cells it separates: the zones tile the land with no gap or overlap.
 */
class Maillage {
  readonly c: Commune;
  private readonly aretes = new Map<number, Pt[]>();

  constructor(c: Commune) {
    this.c = c;
  }

  coin(i: number, j: number): Pt {
    const r = mulberry32(melange(this.c.seed, 1, i, j));
    const s = this.c.cote;
    return [(i - this.c.nx / 2) * s + (r() - 0.5) * 0.3 * s, (j - this.c.ny / 2) * s + (r() - 0.5) * 0.3 * s];
  }

  /** The edge from corner (i, j) east (`est`) or north: the start corner and the inner vertices, not the end. */
  private arete(est: boolean, i: number, j: number): Pt[] {
    const cle = (est ? 1 : 0) + 2 * (i + (this.c.nx + 1) * j);
    const connue = this.aretes.get(cle);
    if (connue) return connue;
    const r = mulberry32(melange(this.c.seed, est ? 2 : 3, i, j));
    const a = this.coin(i, j);
    const b = est ? this.coin(i + 1, j) : this.coin(i, j + 1);
    const k = 4 + Math.floor(45 * r() ** 3);
    const [dx, dy] = [b[0] - a[0], b[1] - a[1]];
    const l = Math.hypot(dx, dy);
    const [nx, ny] = [-dy / l, dx / l];
    const amplitude = 0.05 * this.c.cote;
    const points: Pt[] = [a];
    for (let m = 1; m <= k; m++) {
      const t = m / (k + 1);
      const d = amplitude * Math.sin(Math.PI * t) * (2 * r() - 1);
      points.push([a[0] + t * dx + d * nx, a[1] + t * dy + d * ny]);
    }
    this.aretes.set(cle, points);
    return points;
  }

  /** The outline of the cells [i0, i1) × [j0, j1), counter-clockwise, closed. */
  anneau(i0: number, j0: number, i1: number, j1: number): Pt[] {
    const ring: Pt[] = [];
    for (let i = i0; i < i1; i++) ring.push(...this.arete(true, i, j0));
    for (let j = j0; j < j1; j++) ring.push(...this.arete(false, i1, j));
    for (let i = i1 - 1; i >= i0; i--) {
      const e = this.arete(true, i, j1);
      ring.push(this.coin(i + 1, j1), ...e.slice(1).reverse());
    }
    for (let j = j1 - 1; j >= j0; j--) {
      const e = this.arete(false, i0, j);
      ring.push(this.coin(i0, j + 1), ...e.slice(1).reverse());
    }
    ring.push(ring[0]!);
    return ring;
  }
}

/** The hole of a cell: a jagged ring of 12 to 40 vertices around the cell's middle, counter-clockwise, closed. */
function anneauDuTrou(c: Commune, i: number, j: number): { centre: Pt; rayon: number; anneau: Pt[] } {
  const r = mulberry32(melange(c.seed, 7, i, j));
  const s = c.cote;
  const centre: Pt = [
    (i + 0.5 - c.nx / 2) * s + (r() - 0.5) * 0.1 * s,
    (j + 0.5 - c.ny / 2) * s + (r() - 0.5) * 0.1 * s,
  ];
  const rayon = (0.1 + 0.1 * r()) * s;
  const m = 12 + Math.floor(28 * r());
  const anneau: Pt[] = [];
  for (let k = 0; k < m; k++) {
    const a = (2 * Math.PI * k) / m;
    const d = rayon * (0.85 + 0.3 * r());
    anneau.push([centre[0] + d * Math.cos(a), centre[1] + d * Math.sin(a)]);
  }
  anneau.push(anneau[0]!);
  return { centre, rayon, anneau };
}

/** A star-shaped blob of `m` vertices around a point (radius ±25 %): woods, plots, risk areas. */
function tache(rng: Rng, [cx, cy]: Pt, rayon: number, m: number, allongement = 1, angle = 0): Pt[] {
  const out: Pt[] = [];
  const [co, si] = [Math.cos(angle), Math.sin(angle)];
  for (let k = 0; k < m; k++) {
    const a = (2 * Math.PI * k) / m;
    const d = rayon * (0.75 + 0.5 * rng.next());
    const [x, y] = [d * Math.cos(a) * allongement, d * Math.sin(a)];
    out.push([cx + x * co - y * si, cy + x * si + y * co]);
  }
  out.push(out[0]!);
  return out;
}

/** A regular polygon: the circles of easements (around a monument, a cemetery, a transmitter). */
function cercle([cx, cy]: Pt, rayon: number, m: number): Pt[] {
  const out: Pt[] = [];
  for (let k = 0; k < m; k++) {
    const a = (2 * Math.PI * k) / m;
    out.push([cx + rayon * Math.cos(a), cy + rayon * Math.sin(a)]);
  }
  out.push(out[0]!);
  return out;
}

/** A rectangle of `l` by `h` metres turned by `angle`, each side cut in `decoupe` parts. */
function rectangle([cx, cy]: Pt, l: number, h: number, angle: number, decoupe = 1): Pt[] {
  const coins: Pt[] = [
    [-l / 2, -h / 2],
    [l / 2, -h / 2],
    [l / 2, h / 2],
    [-l / 2, h / 2],
  ];
  const [co, si] = [Math.cos(angle), Math.sin(angle)];
  const out: Pt[] = [];
  for (let k = 0; k < 4; k++) {
    const [a, b] = [coins[k]!, coins[(k + 1) % 4]!];
    for (let m = 0; m < decoupe; m++) {
      const t = m / decoupe;
      const [x, y] = [a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1])];
      out.push([cx + x * co - y * si, cy + x * si + y * co]);
    }
  }
  out.push(out[0]!);
  return out;
}

/** A line of `m` vertices and about `longueur` metres, turning by up to 20° at each vertex: a road, a hedge, a wire. */
function trace(rng: Rng, [x0, y0]: Pt, longueur: number, m: number): Pt[] {
  let cap = rng.next() * 2 * Math.PI;
  const pas = longueur / Math.max(1, m - 1);
  const out: Pt[] = [[x0, y0]];
  for (let k = 1; k < m; k++) {
    cap += ((rng.next() - 0.5) * Math.PI) / 4.5;
    const [x, y] = out[k - 1]!;
    out.push([x + pas * Math.cos(cap), y + pas * Math.sin(cap)]);
  }
  return out;
}

/** The band of `demiLargeur` metres on each side of a line: a power-line or pipeline corridor, a noise sector. */
function couloir(ligne: Pt[], demiLargeur: number): Pt[] {
  const normale = (k: number): Pt => {
    const [a, b] = [ligne[Math.max(0, k - 1)]!, ligne[Math.min(ligne.length - 1, k + 1)]!];
    const l = Math.hypot(b[0] - a[0], b[1] - a[1]) || 1;
    return [-(b[1] - a[1]) / l, (b[0] - a[0]) / l];
  };
  const gauche = ligne.map((p, k) => {
    const n = normale(k);
    return [p[0] + demiLargeur * n[0], p[1] + demiLargeur * n[1]] as Pt;
  });
  const droite = ligne.map((p, k) => {
    const n = normale(k);
    return [p[0] - demiLargeur * n[0], p[1] - demiLargeur * n[1]] as Pt;
  });
  const out = [...droite, ...gauche.reverse()];
  out.push(out[0]!);
  return out;
}

/** Degrees to 1e-7 (1 cm), as the importers keep them. */
const arrondi7 = (x: number) => Math.round(x * 1e7) / 1e7;
const enDegres = (c: Commune, pts: Pt[]): Position[] =>
  pts.map(([x, y]) => [arrondi7(c.lon + x / c.mLon), arrondi7(c.lat + y / METRES_PER_DEGREE)]);

interface Forme {
  json: string;
  empreinte: string;
  bbox: { xmin: number; ymin: number; xmax: number; ymax: number };
  aire: number | null;
  sommets: number;
}

/**
 * The GeoJSON of a shape, its box, its area (surfaces) and the hash the importers key features by
 * (domain/urbanisme/couches.ts `empreinteDe`: the type, then the coordinates as JSON).
 */
function forme(g: Geometry): Forme {
  const coordonnees = JSON.stringify(g.coordinates);
  const empreinte = createHash('sha256').update(g.type).update(coordonnees).digest('hex').slice(0, 32);
  const surface = g.type === 'Polygon' || g.type === 'MultiPolygon';
  // bboxOf reads the first ring of each polygon: a line is a ring as far as its box goes, a point a ring of one.
  const bbox =
    g.type === 'Polygon' || g.type === 'MultiPolygon'
      ? bboxOf(g)
      : g.type === 'LineString' || g.type === 'MultiPoint'
        ? bboxOf({ type: 'Polygon', coordinates: [g.coordinates] })
        : g.type === 'MultiLineString'
          ? bboxOf({ type: 'MultiPolygon', coordinates: g.coordinates.map((l) => [l]) })
          : bboxOf({ type: 'Polygon', coordinates: [[g.coordinates]] });
  const sommets =
    g.type === 'Point'
      ? 1
      : g.type === 'LineString' || g.type === 'MultiPoint'
        ? g.coordinates.length
        : g.type === 'MultiLineString' || g.type === 'Polygon'
          ? g.coordinates.reduce((s, r) => s + r.length, 0)
          : g.coordinates.reduce((s, p) => s + p.reduce((t, r) => t + r.length, 0), 0);
  return {
    json: `{"type":"${g.type}","coordinates":${coordonnees}}`,
    empreinte,
    bbox,
    aire: surface ? areaM2(g) : null,
    sommets,
  };
}

/** Natural keys as the importers write them: the hash, then the rank among identical shapes of the same scope. */
function cles() {
  const vues = new Map<string, number>();
  return (portee: string, f: Forme) => {
    const k = `${portee}\u0000${f.empreinte}`;
    const n = (vues.get(k) ?? 0) + 1;
    vues.set(k, n);
    return `${f.empreinte}-${n}`;
  };
}

// ---------------------------------------------------------------------------------------------------------------------
// Rows, in COPY's text format.
// ---------------------------------------------------------------------------------------------------------------------

type Valeur = string | number | boolean | null;
const champ = (v: Valeur) =>
  v === null
    ? '\\N'
    : typeof v === 'string'
      ? v.replace(/[\\\t\n\r]/g, (ch) => JSON.stringify(ch).slice(1, -1))
      : String(v);
const ligne = (valeurs: Valeur[]) => valeurs.map(champ).join('\t') + '\n';

/** Lines gathered in chunks of about 1 MiB, each handed to COPY as it is made. */
function* parPaquets(lignes: Iterable<string>): Generator<string> {
  let paquet = '';
  for (const l of lignes) {
    paquet += l;
    if (paquet.length >= 1 << 20) {
      yield paquet;
      paquet = '';
    }
  }
  if (paquet) yield paquet;
}

interface Compte {
  lignes: number;
  octets: number;
  sommets: number;
}
const compte = (): Compte => ({ lignes: 0, octets: 0, sommets: 0 });
const boite = (f: Forme) => [f.bbox.xmin, f.bbox.ymin, f.bbox.xmax, f.bbox.ymax];

// ---------------------------------------------------------------------------------------------------------------------
// Zones and sectors.
// ---------------------------------------------------------------------------------------------------------------------

interface ZoneType {
  libelong: string;
  typezone: string;
  destdomi: string;
  page: number;
}
const ZONES: Record<string, ZoneType> = {
  UA: { libelong: 'Zone urbaine du centre ancien', typezone: 'U', destdomi: '01', page: 7 },
  UB: { libelong: 'Zone urbaine de première couronne', typezone: 'U', destdomi: '01', page: 17 },
  UC: { libelong: 'Zone urbaine pavillonnaire', typezone: 'U', destdomi: '01', page: 27 },
  UD: { libelong: 'Zone urbaine peu dense', typezone: 'U', destdomi: '01', page: 35 },
  UE: { libelong: 'Zone urbaine d’équipements collectifs', typezone: 'U', destdomi: '06', page: 41 },
  UX: { libelong: 'Zone urbaine d’activités économiques', typezone: 'U', destdomi: '02', page: 45 },
  '1AU': { libelong: 'Zone à urbaniser à court terme', typezone: 'AUc', destdomi: '01', page: 51 },
  '1AUx': { libelong: 'Zone à urbaniser à vocation d’activités', typezone: 'AUc', destdomi: '02', page: 55 },
  '2AU': { libelong: 'Zone à urbaniser fermée', typezone: 'AUs', destdomi: '01', page: 58 },
  A: { libelong: 'Zone agricole', typezone: 'A', destdomi: '00', page: 61 },
  Ap: { libelong: 'Zone agricole protégée', typezone: 'A', destdomi: '00', page: 65 },
  N: { libelong: 'Zone naturelle et forestière', typezone: 'N', destdomi: '00', page: 69 },
  Nh: { libelong: 'Secteur de taille et de capacité d’accueil limitées', typezone: 'N', destdomi: '00', page: 73 },
  Nj: { libelong: 'Zone naturelle de jardins', typezone: 'N', destdomi: '00', page: 75 },
  NL: { libelong: 'Zone naturelle de loisirs', typezone: 'N', destdomi: '00', page: 77 },
  // An older edition's codes (a POS's NA, NB, NC, ND), and a PSMV's.
  NA: { libelong: 'Zone d’urbanisation future', typezone: 'AUs', destdomi: '01', page: 30 },
  NB: { libelong: 'Zone naturelle partiellement bâtie', typezone: 'N', destdomi: '00', page: 36 },
  NC: { libelong: 'Zone de richesses agricoles', typezone: 'A', destdomi: '00', page: 40 },
  ND: { libelong: 'Zone naturelle protégée', typezone: 'N', destdomi: '00', page: 46 },
  US1: { libelong: 'Secteur sauvegardé : îlots anciens', typezone: 'U', destdomi: '01', page: 9 },
  US2: { libelong: 'Secteur sauvegardé : abords', typezone: 'U', destdomi: '01', page: 31 },
};

/** The zone code of a place from its distance to the centre (0 at the centre, about 1 at the map's edge). */
function codeZone(rng: Rng, rho: number, ancien = false): string {
  const d = rho + (rng.next() - 0.5) * 0.15;
  const t = rng.next();
  if (ancien) return d < 0.35 ? 'UA' : d < 0.6 ? (t < 0.6 ? 'UC' : 'NA') : t < 0.5 ? 'NC' : t < 0.8 ? 'ND' : 'NB';
  if (d < 0.15) return 'UA';
  if (d < 0.32) return t < 0.85 ? 'UB' : 'UE';
  if (d < 0.52) return t < 0.6 ? 'UC' : t < 0.75 ? 'UD' : t < 0.88 ? 'UX' : 'UE';
  if (d < 0.64) return t < 0.5 ? '1AU' : t < 0.65 ? '1AUx' : '2AU';
  return t < 0.45 ? 'A' : t < 0.55 ? 'Ap' : t < 0.9 ? 'N' : 'Nh';
}

const rho = (c: Commune, [x, y]: Pt) => Math.hypot(x / ((c.nx * c.cote) / 2), y / ((c.ny * c.cote) / 2));
const milieu = (c: Commune, i0: number, j0: number, i1: number, j1: number): Pt => [
  ((i0 + i1) / 2 - c.nx / 2) * c.cote,
  ((j0 + j1) / 2 - c.ny / 2) * c.cote,
];

/** A zone (or sector) as both layers need it: document, code, shape. */
interface ZoneDessinee {
  idurba: string;
  code: string;
  polygones: Pt[][][];
}

/**
 * The zones of a commune's documents: the lattice's cells under the document in force (holes, enclaves and islands
 * as planned), 2×2 blocks under the older edition, 3×3 under a revision in procedure, the 9 middle cells under a PSMV.
 */
function* zonesDessinees(c: Commune, rng: Rng): Generator<ZoneDessinee> {
  const m = new Maillage(c);
  const trous = new Map(c.trous.map((t) => [t.i + t.j * c.nx, t]));
  // Islands: the hole of a cell given to the cell west of it (east on the first column).
  const ilots = new Map<number, Pt[][]>();
  for (const t of c.trous) {
    if (t.sorte !== 'ilot') continue;
    const voisine = (t.i > 0 ? t.i - 1 : t.i + 1) + t.j * c.nx;
    ilots.set(voisine, [...(ilots.get(voisine) ?? []), anneauDuTrou(c, t.i, t.j).anneau]);
  }
  for (let j = 0; j < c.ny; j++) {
    for (let i = 0; i < c.nx; i++) {
      const exterieur = m.anneau(i, j, i + 1, j + 1);
      const trou = trous.get(i + j * c.nx);
      const code = codeZone(rng, rho(c, milieu(c, i, j, i + 1, j + 1)));
      const polygones: Pt[][][] = [trou ? [exterieur, anneauDuTrou(c, i, j).anneau.slice().reverse()] : [exterieur]];
      for (const ilot of ilots.get(i + j * c.nx) ?? []) polygones.push([ilot]);
      yield { idurba: c.document, code, polygones };
      if (trou?.sorte === 'enclave') {
        yield { idurba: c.document, code: rng.pick(['UE', 'Nj', 'NL']), polygones: [[anneauDuTrou(c, i, j).anneau]] };
      }
    }
  }
  const blocs = function* (idurba: string, pas: number, ancien: boolean) {
    for (let j = 0; j < c.ny; j += pas) {
      for (let i = 0; i < c.nx; i += pas) {
        const [i1, j1] = [Math.min(c.nx, i + pas), Math.min(c.ny, j + pas)];
        const code = codeZone(rng, rho(c, milieu(c, i, j, i1, j1)), ancien);
        yield { idurba, code, polygones: [[m.anneau(i, j, i1, j1)]] };
      }
    }
  };
  if (c.ancien) yield* blocs(c.ancien, 2, c.ancien.includes('_POS_'));
  if (c.enProcedure) yield* blocs(c.enProcedure, 3, false);
  if (c.psmv) {
    const [i0, j0] = [Math.floor(c.nx / 2) - 1, Math.floor(c.ny / 2) - 1];
    for (let j = j0; j < j0 + 3; j++) {
      for (let i = i0; i < i0 + 3; i++) {
        yield {
          idurba: c.psmv,
          code: i === i0 + 1 && j === j0 + 1 ? 'US1' : 'US2',
          polygones: [[m.anneau(i, j, i + 1, j + 1)]],
        };
      }
    }
  }
}

const polygone = (c: Commune, polygones: Pt[][][]): Geometry =>
  polygones.length === 1
    ? { type: 'Polygon', coordinates: polygones[0]!.map((r) => enDegres(c, r)) }
    : { type: 'MultiPolygon', coordinates: polygones.map((p) => p.map((r) => enDegres(c, r))) };

const COLONNES_ZONES = `dataset, idurba, cle, libelle, libelong, typezone, destdomi, nomfic, urlfic, reglement_url, reglement_page,
  datappro, datvalid, insee, siren, geometrie, bbox_xmin, bbox_ymin, bbox_xmax, bbox_ymax, aire_m2`;
const COLONNES_SECTEURS = `dataset, idurba, cle, libelle, typesect, fermreco, destdomi, nomfic, urlfic, fichier_url, insee,
  datappro, datvalid, geometrie, bbox_xmin, bbox_ymin, bbox_xmax, bbox_ymax, aire_m2`;

/** The date part of an IDURBA, and the prefix of its files (INSEE or SIREN). */
const dateDe = (idurba: string) => idurba.split('_')[2] ?? null;
const prefixeDe = (idurba: string) => idurba.split('_')[0]!;
/** The rules file of a document as the Géoportail serves it. */
const reglementDe = (idurba: string) =>
  `https://data.geopf.fr/annexes/gpu/documents/DU_${prefixeDe(idurba)}/${createHash('md5').update(idurba).digest('hex')}/${prefixeDe(idurba)}_reglement_${dateDe(idurba)}.pdf`;

function* lignesZones(communes: Commune[], n: Compte, cle: ReturnType<typeof cles>): Generator<string> {
  for (const c of communes) {
    if (c.sorte === 'CC') continue;
    const rng = seededRandom(c.seed + 1);
    for (const z of zonesDessinees(c, rng)) {
      const f = forme(polygone(c, z.polygones));
      const type = ZONES[z.code]!;
      // Most zones link their chapter of the rules; some documents publish no rules file per zone.
      const url = rng.next() < 0.9 ? `${reglementDe(z.idurba)}#page=${type.page}` : null;
      const date = dateDe(z.idurba);
      const siren = z.idurba.includes('_PLUi_') ? prefixeDe(z.idurba) : null;
      n.lignes++;
      n.sommets += f.sommets;
      n.octets += f.json.length;
      yield ligne([
        'live',
        z.idurba,
        cle(z.idurba, f),
        z.code,
        type.libelong,
        type.typezone,
        type.destdomi,
        null,
        url,
        url,
        url ? type.page : null,
        // A revision in procedure is not approved yet.
        date && z.idurba !== c.enProcedure ? iso(date) : null,
        null,
        siren ? null : c.code,
        siren,
        f.json,
        ...boite(f),
        f.aire,
      ]);
    }
  }
}

const SECTEURS: Record<string, { typesect: string; destdomi: string }> = {
  C: { typesect: '01', destdomi: '01' },
  Ca: { typesect: '02', destdomi: '02' },
  NC: { typesect: '03', destdomi: '00' },
};

function* lignesSecteurs(communes: Commune[], n: Compte, cle: ReturnType<typeof cles>): Generator<string> {
  for (const c of communes) {
    if (c.sorte !== 'CC') continue;
    const rng = seededRandom(c.seed + 1);
    for (const z of zonesDessinees(c, rng)) {
      const f = forme(polygone(c, z.polygones));
      // A communal map's sectors: building allowed around the village, activities at its edge, none beyond.
      const famille = ZONES[z.code]!.typezone;
      const libelle = famille === 'U' ? (z.code === 'UX' ? 'Ca' : 'C') : 'NC';
      const s = SECTEURS[libelle]!;
      n.lignes++;
      n.sommets += f.sommets;
      n.octets += f.json.length;
      yield ligne([
        'live',
        z.idurba,
        cle(z.idurba, f),
        libelle,
        s.typesect,
        null,
        s.destdomi,
        null,
        null,
        rng.next() < 0.5 ? `${reglementDe(z.idurba).replace('_reglement_', '_rapport_')}` : null,
        c.code,
        iso(c.date),
        null,
        f.json,
        ...boite(f),
        f.aire,
      ]);
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Prescriptions and information.
// ---------------------------------------------------------------------------------------------------------------------

interface SorteSurcharge {
  poids: number;
  nature: 'prescription' | 'information';
  forme: 'surface' | 'ligne' | 'point';
  type: string;
  sousType: string;
  libelle: string;
  txt: string;
  /** Near the centre (the town's own features) or anywhere on the map. */
  centre: boolean;
  dessin: (rng: Rng, p: Pt, c: Commune) => Pt[] | Pt[][];
}

const SURCHARGES: SorteSurcharge[] = [
  {
    poids: 12,
    nature: 'prescription',
    forme: 'surface',
    type: '01',
    sousType: '00',
    libelle: 'Espace boisé classé',
    txt: 'EBC',
    centre: false,
    dessin: (rng, p) => tache(rng, p, rng.between(40, 200), 15 + rng.int(66), rng.between(1, 2.5), rng.next() * 3),
  },
  {
    poids: 5,
    nature: 'prescription',
    forme: 'point',
    type: '01',
    sousType: '02',
    libelle: 'Arbre remarquable',
    txt: 'AR',
    centre: true,
    dessin: (_rng, p) => [p],
  },
  {
    poids: 10,
    nature: 'prescription',
    forme: 'surface',
    type: '05',
    sousType: '01',
    libelle: 'Emplacement réservé : élargissement de voirie',
    txt: 'ER',
    centre: true,
    dessin: (rng, p) => rectangle(p, rng.between(50, 300), rng.between(8, 20), rng.next() * Math.PI, 1 + rng.int(4)),
  },
  {
    poids: 10,
    nature: 'prescription',
    forme: 'point',
    type: '07',
    sousType: '01',
    libelle: 'Patrimoine bâti à protéger pour des motifs d’ordre culturel, historique, architectural',
    txt: 'PB',
    centre: true,
    dessin: (_rng, p) => [p],
  },
  {
    poids: 5,
    nature: 'prescription',
    forme: 'surface',
    type: '07',
    sousType: '02',
    libelle: 'Élément de paysage à protéger',
    txt: 'EP',
    centre: false,
    dessin: (rng, p) => tache(rng, p, rng.between(20, 80), 8 + rng.int(23)),
  },
  {
    poids: 4,
    nature: 'prescription',
    forme: 'surface',
    type: '18',
    sousType: '00',
    libelle: 'Orientation d’aménagement et de programmation',
    txt: 'OAP',
    centre: true,
    dessin: (rng, p) => tache(rng, p, rng.between(150, 400), 30 + rng.int(91), rng.between(1, 1.8), rng.next() * 3),
  },
  {
    poids: 10,
    nature: 'prescription',
    forme: 'ligne',
    type: '22',
    sousType: '01',
    libelle: 'Linéaire commercial à préserver',
    txt: 'LC',
    centre: true,
    dessin: (rng, p) => trace(rng, p, rng.between(50, 400), 2 + rng.int(11)),
  },
  {
    poids: 6,
    nature: 'prescription',
    forme: 'ligne',
    type: '15',
    sousType: '01',
    libelle: 'Implantation des constructions à l’alignement des voies',
    txt: 'ALIGN',
    centre: true,
    dessin: (rng, p) => trace(rng, p, rng.between(100, 500), 3 + rng.int(6)),
  },
  {
    poids: 8,
    nature: 'prescription',
    forme: 'ligne',
    type: '07',
    sousType: '03',
    libelle: 'Haie ou alignement d’arbres à protéger',
    txt: 'HAIE',
    centre: false,
    dessin: (rng, p) => trace(rng, p, rng.between(50, 300), 3 + rng.int(13)),
  },
  {
    poids: 6,
    nature: 'information',
    forme: 'surface',
    type: '16',
    sousType: '00',
    libelle: 'Zone de présomption de prescription archéologique',
    txt: 'ZPPA',
    centre: false,
    dessin: (rng, p) => tache(rng, p, rng.between(200, 600), 20 + rng.int(61), rng.between(1, 2), rng.next() * 3),
  },
  {
    poids: 4,
    nature: 'information',
    forme: 'point',
    type: '16',
    sousType: '00',
    libelle: 'Site archéologique',
    txt: 'SA',
    centre: false,
    dessin: (_rng, p) => [p],
  },
  {
    poids: 5,
    nature: 'information',
    forme: 'surface',
    type: '08',
    sousType: '00',
    libelle: 'Secteur affecté par le bruit d’une infrastructure de transport terrestre',
    txt: 'BRUIT',
    centre: false,
    dessin: (rng, p) => couloir(trace(rng, p, rng.between(1000, 3000), 10 + rng.int(21)), rng.between(50, 150)),
  },
  {
    poids: 2,
    nature: 'information',
    forme: 'surface',
    type: '04',
    sousType: '00',
    libelle: 'Zone d’aménagement concerté',
    txt: 'ZAC',
    centre: true,
    dessin: (rng, p) => tache(rng, p, rng.between(200, 500), 20 + rng.int(40), rng.between(1, 1.6), rng.next() * 3),
  },
  {
    poids: 4,
    nature: 'information',
    forme: 'surface',
    type: '99',
    sousType: '01',
    libelle: 'Zone humide identifiée',
    txt: 'ZH',
    centre: false,
    dessin: (rng, p) => tache(rng, p, rng.between(60, 250), 20 + rng.int(60), rng.between(1, 3), rng.next() * 3),
  },
];
const POIDS_SURCHARGES = SURCHARGES.reduce((s, k) => s + k.poids, 0);

/** A place on the map: anywhere, or near the centre (the town) for the town's own features. */
function lieu(rng: Rng, c: Commune, centre: boolean): Pt {
  const [X, Y] = [(c.nx * c.cote) / 2, (c.ny * c.cote) / 2];
  if (!centre) return [rng.between(-X, X), rng.between(-Y, Y)];
  const clamp = (v: number, m: number) => Math.max(-m, Math.min(m, v));
  return [clamp(normale(rng) * 0.3 * X, X), clamp(normale(rng) * 0.3 * Y, Y)];
}

const COLONNES_SURCHARGES = `dataset, idurba, nature, couche, cle, libelle, txt, type, sous_type, nomfic, urlfic, fichier_url,
  fichier_page, insee, datvalid, forme, geometrie, bbox_xmin, bbox_ymin, bbox_xmax, bbox_ymax, aire_m2`;

function* lignesSurcharges(communes: Commune[], n: Compte, cle: ReturnType<typeof cles>): Generator<string> {
  for (const c of communes) {
    const rng = seededRandom(c.seed + 2);
    const [X, Y] = [(c.nx * c.cote) / 2, (c.ny * c.cote) / 2];
    for (let k = 0; k < c.surcharges; k++) {
      let sorte: SorteSurcharge;
      let dessin: Pt[] | Pt[][];
      let libelle: string;
      // The pre-emption right over the built-up area first (a PLU's, not a communal map's): one large surface,
      // sometimes in two parts, under most of the requests.
      if (k === 0 && c.sorte !== 'CC') {
        sorte = {
          ...SURCHARGES[0]!,
          nature: 'information',
          type: '03',
          sousType: '00',
          libelle: 'Droit de préemption urbain',
          txt: 'DPU',
        };
        const principal = tache(rng, [0, 0], 0.6 * Math.min(X, Y), 120 + rng.int(81), X / Y);
        dessin =
          rng.next() < 0.3
            ? [principal, tache(rng, [0.8 * X, 0.7 * Y], 0.12 * Math.min(X, Y), 20 + rng.int(30))]
            : principal;
        libelle = sorte.libelle;
      } else {
        let t = rng.next() * POIDS_SURCHARGES;
        sorte = SURCHARGES.find((s) => (t -= s.poids) < 0) ?? SURCHARGES.at(-1)!;
        // A communal map has no prescriptions: its commune gets information only.
        if (c.sorte === 'CC' && sorte.nature === 'prescription') sorte = SURCHARGES[9]!;
        dessin = sorte.dessin(rng, lieu(rng, c, sorte.centre), c);
        libelle =
          sorte.type === '05'
            ? `Emplacement réservé n° ${1 + rng.int(60)} : ${rng.pick(['élargissement de voirie', 'équipement public', 'cheminement piéton', 'bassin de rétention'])}`
            : sorte.libelle;
      }
      const plusieurs = Array.isArray(dessin[0]![0]);
      const g: Geometry =
        sorte.forme === 'surface'
          ? plusieurs
            ? { type: 'MultiPolygon', coordinates: (dessin as Pt[][]).map((r) => [enDegres(c, r)]) }
            : { type: 'Polygon', coordinates: [enDegres(c, dessin as Pt[])] }
          : sorte.forme === 'ligne'
            ? { type: 'LineString', coordinates: enDegres(c, dessin as Pt[]) }
            : { type: 'Point', coordinates: enDegres(c, dessin as Pt[])[0]! };
      const f = forme(g);
      // A tenth of an older edition's prescriptions are still imported: the rule in force must set them aside.
      const idurba = c.ancien && rng.next() < 0.1 ? c.ancien : c.document;
      const couche = `${sorte.nature === 'prescription' ? 'PRESCRIPTION' : 'INFO'}_${{ surface: 'SURF', ligne: 'LIN', point: 'PCT' }[sorte.forme]}`;
      const fichier = rng.next() < 0.6 ? `${reglementDe(idurba).replace('_reglement_', '_annexes_')}` : null;
      n.lignes++;
      n.sommets += f.sommets;
      n.octets += f.json.length;
      yield ligne([
        'live',
        idurba,
        sorte.nature,
        couche,
        cle(`${idurba}\u0000${sorte.nature}`, f),
        libelle,
        sorte.txt,
        sorte.type,
        sorte.sousType,
        null,
        fichier,
        fichier,
        null,
        c.code,
        null,
        sorte.forme,
        f.json,
        ...boite(f),
        f.aire,
      ]);
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Public-utility easements.
// ---------------------------------------------------------------------------------------------------------------------

interface Categorie {
  categorie: string;
  poids: number;
  /** The manager's SIREN, name and how its packages are split: by département, or by commune (cemeteries). */
  siren: string;
  gestionnaire: string;
  parCommune?: boolean;
  nom: (rng: Rng, c: Commune) => string;
  acte: string;
  /** The assiettes of one easement: their shapes, form and how they were made. */
  assiettes: (
    rng: Rng,
    c: Commune,
  ) => Array<{ dessin: Pt[]; forme: 'surface' | 'ligne'; mode: string; param: number | null }>;
}

const SAINTS = ['Martin', 'Pierre', 'Jean', 'Étienne', 'Germain', 'Laurent', 'Denis', 'Rémi', 'Nicolas', 'Sulpice'];
const CATEGORIES: Categorie[] = [
  {
    categorie: 'AC1',
    poids: 25,
    siren: '110046018',
    gestionnaire: 'Unité départementale de l’architecture et du patrimoine',
    nom: (rng, c) =>
      rng.pick([
        `Église Saint-${rng.pick(SAINTS)}`,
        `Château de ${c.nom}`,
        'Croix de chemin',
        'Maison à pans de bois',
        'Lavoir',
        'Pont ancien',
      ]),
    acte: 'Arrêté d’inscription au titre des monuments historiques',
    assiettes: (rng, c) => {
      const p = lieu(rng, c, true);
      // Most monuments keep the 500 m circle; a fifth have surroundings drawn to the land (a PDA).
      return rng.next() < 0.8
        ? [{ dessin: cercle(p, 500, 64 + rng.int(57)), forme: 'surface', mode: 'Zone tampon', param: 500 }]
        : [
            {
              dessin: tache(rng, p, rng.between(200, 600), 40 + rng.int(111), rng.between(1, 1.6), rng.next() * 3),
              forme: 'surface',
              mode: 'Digitalisation',
              param: null,
            },
          ];
    },
  },
  {
    categorie: 'INT1',
    poids: 10,
    siren: '',
    gestionnaire: 'Commune',
    parCommune: true,
    nom: (_rng, c) => `Cimetière de ${c.nom}`,
    acte: 'Délibération du conseil municipal',
    assiettes: (rng, c) => [
      { dessin: cercle(lieu(rng, c, true), 100, 32 + rng.int(33)), forme: 'surface', mode: 'Zone tampon', param: 100 },
    ],
  },
  {
    categorie: 'I4',
    poids: 20,
    siren: '444619258',
    gestionnaire: 'RTE Réseau de transport d’électricité',
    nom: (rng) =>
      `Ligne ${rng.pick(['63', '90', '225', '400'])} kV ${rng.pick(['Nord', 'Sud', 'Est', 'Ouest'])} - ${rng.pick(SAINTS)}`,
    acte: 'Arrêté préfectoral de déclaration d’utilité publique',
    assiettes: (rng, c) => {
      // A wire across the map in 1 to 3 spans, each a line or the corridor around it.
      const out: Array<{ dessin: Pt[]; forme: 'surface' | 'ligne'; mode: string; param: number | null }> = [];
      let debut = lieu(rng, c, false);
      for (let k = 1 + rng.int(3); k > 0; k--) {
        const l = trace(rng, debut, rng.between(500, 2500), 5 + rng.int(26));
        debut = l.at(-1)!;
        out.push(
          rng.next() < 0.5
            ? { dessin: l, forme: 'ligne', mode: 'Digitalisation', param: null }
            : { dessin: couloir(l, rng.between(20, 50)), forme: 'surface', mode: 'Zone tampon', param: 30 },
        );
      }
      return out;
    },
  },
  {
    categorie: 'I3',
    poids: 10,
    siren: '440117620',
    gestionnaire: 'GRTgaz',
    nom: (rng) => `Canalisation de transport de gaz DN ${rng.pick(['100', '150', '300', '600'])}`,
    acte: 'Arrêté ministériel d’autorisation',
    assiettes: (rng, c) => {
      const l = trace(rng, lieu(rng, c, false), rng.between(800, 3000), 8 + rng.int(30));
      return [
        rng.next() < 0.6
          ? { dessin: l, forme: 'ligne', mode: 'Digitalisation', param: null }
          : { dessin: couloir(l, 10), forme: 'surface', mode: 'Zone tampon', param: 10 },
      ];
    },
  },
  {
    categorie: 'PM1',
    poids: 15,
    siren: '130010929',
    gestionnaire: 'Direction départementale des territoires',
    nom: (rng) =>
      `Plan de prévention du risque inondation de la vallée de la ${rng.pick(['Garonne', 'Loire', 'Marne', 'Saône', 'Vienne', 'Charente'])}`,
    acte: 'Arrêté préfectoral d’approbation du PPR',
    assiettes: (rng, c) => {
      // Risk areas along a valley: a few elongated surfaces, one per level of risk.
      const p = lieu(rng, c, false);
      const angle = rng.next() * Math.PI;
      return Array.from({ length: 2 + rng.int(4) }, () => ({
        dessin: tache(
          rng,
          [p[0] + rng.between(-400, 400), p[1] + rng.between(-400, 400)],
          rng.between(100, 400),
          50 + rng.int(151),
          rng.between(2, 4),
          angle,
        ),
        forme: 'surface' as const,
        mode: 'Digitalisation',
        param: null,
      }));
    },
  },
  {
    categorie: 'EL7',
    poids: 10,
    siren: '223300013',
    gestionnaire: 'Département',
    nom: (rng) => `Plan d’alignement de la route départementale ${1 + rng.int(999)}`,
    acte: 'Arrêté d’approbation du plan d’alignement',
    assiettes: (rng, c) => [
      {
        dessin: trace(rng, lieu(rng, c, true), rng.between(50, 300), 2 + rng.int(5)),
        forme: 'ligne',
        mode: 'Digitalisation',
        param: null,
      },
    ],
  },
  {
    categorie: 'PT2',
    poids: 5,
    siren: '130003403',
    gestionnaire: 'Agence nationale des fréquences',
    nom: (rng) => `Station radioélectrique n° ${10000 + rng.int(90000)}`,
    acte: 'Décret de servitudes radioélectriques',
    assiettes: (rng, c) => [
      {
        dessin: cercle(lieu(rng, c, false), rng.between(200, 800), 48 + rng.int(49)),
        forme: 'surface',
        mode: 'Zone tampon',
        param: null,
      },
    ],
  },
  {
    categorie: 'AS1',
    poids: 5,
    siren: '130007925',
    gestionnaire: 'Agence régionale de santé',
    nom: (rng) =>
      `Périmètre de protection du captage ${rng.pick(['de la source', 'du forage', 'du puits'])} n° ${1 + rng.int(20)}`,
    acte: 'Arrêté préfectoral de déclaration d’utilité publique',
    assiettes: (rng, c) => [
      {
        dessin: tache(rng, lieu(rng, c, false), rng.between(150, 400), 20 + rng.int(41)),
        forme: 'surface',
        mode: 'Digitalisation',
        param: null,
      },
    ],
  },
];
const POIDS_CATEGORIES = CATEGORIES.reduce((s, k) => s + k.poids, 0);

/** The package of a category over a commune's territory: its key (the name without its date), its folder. */
function lotDe(k: Categorie, c: Commune): { lot: string; siren: string; territoire: string } {
  // A commune's SIREN, made up from its code (Corsica's 2A/2B as 20).
  const siren = k.parCommune ? `21${c.code.replace(/[AB]/, '0')}00` : k.siren;
  const territoire = k.parCommune ? c.code : c.departement;
  return { lot: `${siren}_${k.categorie}_${territoire}`, siren, territoire };
}

const COLONNES_LOTS = 'dataset, lot, dossier, gestionnaire_siren, categorie, territoire, date_lot';
const COLONNES_SERVITUDES = `dataset, lot, idsup, categorie, nomsup, nomsuplitt, descriptio, idgest, gestionnaire, idintgest,
  datemaj, echnum, validegest, estabroge, modeprod, quiprod, docsource`;
const COLONNES_ACTES =
  'dataset, lot, idacte, nomacte, reference, typeacte, fichier, decision, datedecis, datepub, aplan';
const COLONNES_LIENS = 'dataset, lot, idsup, idacte';
const COLONNES_ASSIETTES = `dataset, lot, cle, idass, idgen, idsup, categorie, nomass, typeass, modegeoass, paramcalc,
  srcgeoass, datesrcass, forme, geometrie, bbox_xmin, bbox_ymin, bbox_xmax, bbox_ymax, aire_m2`;

/** Every package the communes can have, written before the assiettes that point to them. */
function lignesLots(communes: Commune[]): string[] {
  const vus = new Map<string, string>();
  for (const c of communes) {
    for (const k of CATEGORIES) {
      const { lot, siren, territoire } = lotDe(k, c);
      const date = dateEntre(seededRandom(melange(c.seed, k.poids)), 2014, 2024);
      if (!vus.has(lot))
        vus.set(lot, ligne(['live', lot, `${lot}_${date}`, siren, k.categorie, territoire, iso(date)]));
    }
  }
  return [...vus.values()];
}

/** The easements, their acts and links, gathered while their assiettes are written; COPied after them. */
interface Servitudes {
  servitudes: string[];
  actes: string[];
  liens: string[];
  abrogees: number;
}

function* lignesAssiettes(
  communes: Commune[],
  n: Compte,
  s: Servitudes,
  cle: ReturnType<typeof cles>,
): Generator<string> {
  const suivants = new Map<string, number>();
  for (const c of communes) {
    const rng = seededRandom(c.seed + 3);
    let reste = c.assiettes;
    while (reste > 0) {
      let t = rng.next() * POIDS_CATEGORIES;
      const k = CATEGORIES.find((x) => (t -= x.poids) < 0) ?? CATEGORIES.at(-1)!;
      const { lot } = lotDe(k, c);
      const numero = (suivants.get(lot) ?? 0) + 1;
      suivants.set(lot, numero);
      const idsup = String(numero);
      const nom = k.nom(rng, c);
      const abrogee = rng.next() < 0.03;
      if (abrogee) s.abrogees++;
      const gestionnaire = k.parCommune
        ? `Commune de ${c.nom}`
        : `${k.gestionnaire}${k.categorie === 'AC1' || k.categorie === 'PM1' ? ` (${c.departement})` : ''}`;
      s.servitudes.push(
        ligne([
          'live',
          lot,
          idsup,
          k.categorie,
          nom,
          nom,
          null,
          `G${k.siren || lot.slice(0, 9)}`,
          gestionnaire,
          null,
          iso(dateEntre(rng, 2015, 2024)),
          25_000,
          true,
          abrogee,
          'Numérisation',
          gestionnaire,
          null,
        ]),
      );
      // One or two acts, the newest the one served.
      for (let a = 1 + rng.int(2); a > 0; a--) {
        const idacte = `${idsup}-${a}`;
        const date = dateEntre(rng, 1920, 2023);
        const fichier =
          rng.next() < 0.5
            ? `https://www.geoportail-urbanisme.gouv.fr/api/sup/${lot}/${idacte}.pdf`
            : `${lot}_acte_${idacte}.pdf`;
        s.actes.push(
          ligne([
            'live',
            lot,
            idacte,
            k.acte,
            `${k.categorie}-${date.slice(0, 4)}-${numero}`,
            '01',
            fichier,
            null,
            iso(date),
            iso(date),
            a === 1,
          ]),
        );
        s.liens.push(ligne(['live', lot, idsup, idacte]));
      }
      for (const [rang, a] of k.assiettes(rng, c).slice(0, reste).entries()) {
        const g: Geometry =
          a.forme === 'surface'
            ? { type: 'Polygon', coordinates: [enDegres(c, a.dessin)] }
            : { type: 'LineString', coordinates: enDegres(c, a.dessin) };
        const f = forme(g);
        n.lignes++;
        n.sommets += f.sommets;
        n.octets += f.json.length;
        reste--;
        yield ligne([
          'live',
          lot,
          cle(lot, f),
          `${idsup}-A${rang + 1}`,
          `${idsup}-G`,
          idsup,
          k.categorie,
          nom,
          a.forme === 'surface' ? 'Périmètre' : 'Tracé',
          a.mode,
          a.param,
          'BD TOPO',
          '2021',
          a.forme,
          f.json,
          ...boite(f),
          f.aire,
        ]);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Cadastre parcels.
// ---------------------------------------------------------------------------------------------------------------------

const COLONNES_PARCELLES = `dataset, id, commune, prefixe, section, numero, contenance, arpente, cree_le, modifie_le,
  geometrie, bbox_xmin, bbox_ymin, bbox_xmax, bbox_ymax`;

function* lignesParcelles(communes: Commune[], n: Compte): Generator<string> {
  const lettres = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
  for (const c of communes) {
    const rng = seededRandom(c.seed + 4);
    for (let k = 0; k < c.parcelles; k++) {
      // Sections of up to 600 parcels, numbered from 1 in each (AA, AB...).
      const s = Math.floor(k / 600);
      const section = `${lettres[Math.floor(s / 26) % 26]}${lettres[s % 26]}`;
      const numero = String((k % 600) + 1).padStart(4, '0');
      const dessin = rectangle(
        lieu(rng, c, rng.next() < 0.6),
        rng.between(12, 45),
        rng.between(20, 70),
        rng.next() * Math.PI,
        1 + rng.int(2),
      );
      const f = forme({ type: 'Polygon', coordinates: [enDegres(c, dessin)] });
      n.lignes++;
      n.sommets += f.sommets;
      n.octets += f.json.length;
      yield ligne([
        'live',
        `${c.code}000${section}${numero}`,
        c.code,
        '000',
        section,
        numero,
        Math.round(f.aire!),
        true,
        iso(dateEntre(rng, 2005, 2015)),
        iso(dateEntre(rng, 2016, 2025)),
        f.json,
        ...boite(f),
      ]);
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// The load.
// ---------------------------------------------------------------------------------------------------------------------

async function copier(db: Db, table: string, colonnes: string, lignes: Iterable<string>): Promise<number> {
  const client = await db.connect();
  try {
    return await copyFrom(client, `COPY ${table} (${colonnes.replace(/\s+/g, ' ')}) FROM STDIN`, parPaquets(lignes));
  } finally {
    client.release();
  }
}

interface Chargement {
  secondes: number;
  vacuumS: number;
  tailleMo: number;
  tables: Record<'zones' | 'secteurs' | 'surcharges' | 'assiettes' | 'parcelles', Compte & { secondes: number }>;
  documents: Document[];
  servitudes: number;
  actes: number;
  lots: number;
  abrogees: number;
}

async function charger(db: Db, communes: Commune[], documents: Document[]): Promise<Chargement> {
  const t0 = performance.now();
  await copier(
    db,
    'documents_urbanisme',
    'dataset, idurba, typedoc, etat, nomproc, datappro, datvalid, insee, siren, nomreg, urlreg, depuis_doc_urba, datefin, nomplan, urlplan, siteweb',
    documents.map((d) =>
      ligne([
        'live',
        d.idurba,
        d.typedoc,
        d.etat,
        d.role === 'en_procedure' ? 'R' : 'E',
        d.datappro ? iso(d.datappro) : null,
        d.datappro ? iso(d.datappro) : null,
        d.insee,
        d.siren,
        `${prefixeDe(d.idurba)}_reglement_${dateDe(d.idurba)}.pdf`,
        reglementDe(d.idurba),
        true,
        null,
        `${prefixeDe(d.idurba)}_plan_zonage_${dateDe(d.idurba)}.pdf`,
        null,
        null,
      ]),
    ),
  );
  await copier(
    db,
    'documents_urbanisme_communes',
    'dataset, idurba, insee, origine',
    documents.flatMap((d) =>
      d.communes.map((insee) => ligne(['live', d.idurba, insee, d.typedoc === 'PLUi' ? 'doc_urba_com' : 'idurba'])),
    ),
  );
  // The table of documents in force by commune, as its importer leaves it: what the status of a point outside every
  // zone is read from.
  await copier(
    db,
    'communes_urbanisme',
    'dataset, insee, commune, type_document, etat, approuve_le, idurba, publie_gpu',
    communes.map((c) => ligne(['live', c.code, c.nom, c.sorte, 'opposable', iso(c.date), c.document, true])),
  );
  const lots = lignesLots(communes);
  await copier(db, 'sup_lots', COLONNES_LOTS, lots);

  const tables = {
    zones: { ...compte(), secondes: 0 },
    secteurs: { ...compte(), secondes: 0 },
    surcharges: { ...compte(), secondes: 0 },
    assiettes: { ...compte(), secondes: 0 },
    parcelles: { ...compte(), secondes: 0 },
  };
  const s: Servitudes = { servitudes: [], actes: [], liens: [], abrogees: 0 };
  const chrono = async (nom: keyof typeof tables, travail: () => Promise<unknown>) => {
    const t = performance.now();
    await travail();
    tables[nom].secondes = (performance.now() - t) / 1000;
    console.log(`  ${nom} : ${tables[nom].lignes} lignes en ${tables[nom].secondes.toFixed(1)} s`);
  };
  // Each layer COPied on its own connection at once: this process makes the rows while PostgreSQL backends parse
  // and index the chunks before.
  await Promise.all([
    chrono('zones', () => copier(db, 'zones_urbanisme', COLONNES_ZONES, lignesZones(communes, tables.zones, cles()))),
    chrono('secteurs', () =>
      copier(db, 'secteurs_cc', COLONNES_SECTEURS, lignesSecteurs(communes, tables.secteurs, cles())),
    ),
    chrono('surcharges', () =>
      copier(db, 'surcharges_urbanisme', COLONNES_SURCHARGES, lignesSurcharges(communes, tables.surcharges, cles())),
    ),
    chrono('assiettes', async () => {
      await copier(db, 'sup_assiettes', COLONNES_ASSIETTES, lignesAssiettes(communes, tables.assiettes, s, cles()));
      await copier(db, 'sup_servitudes', COLONNES_SERVITUDES, s.servitudes);
      await copier(db, 'sup_actes', COLONNES_ACTES, s.actes);
      await copier(db, 'sup_servitudes_actes', COLONNES_LIENS, s.liens);
    }),
    chrono('parcelles', () =>
      copier(db, 'cadastre_parcelles', COLONNES_PARCELLES, lignesParcelles(communes, tables.parcelles)),
    ),
  ]);
  const secondes = (performance.now() - t0) / 1000;
  // Statistics and the visibility map now, as after an import, rather than autovacuum's pass in the middle of the
  // measures.
  const t1 = performance.now();
  await db.query(
    `VACUUM (ANALYZE) documents_urbanisme, documents_urbanisme_communes, communes_urbanisme, zones_urbanisme,
       secteurs_cc, surcharges_urbanisme, sup_lots, sup_servitudes, sup_actes, sup_servitudes_actes, sup_assiettes,
       cadastre_parcelles`,
  );
  const vacuumS = (performance.now() - t1) / 1000;
  const { rows } = await db.query<{ octets: number }>(
    `SELECT sum(pg_total_relation_size(t))::float8 AS octets
       FROM unnest(ARRAY['zones_urbanisme', 'secteurs_cc', 'surcharges_urbanisme', 'sup_assiettes', 'cadastre_parcelles',
                         'documents_urbanisme', 'documents_urbanisme_communes', 'sup_servitudes', 'sup_actes',
                         'sup_servitudes_actes']::regclass[]) AS t`,
  );
  return {
    secondes,
    vacuumS,
    tailleMo: rows[0]!.octets / 2 ** 20,
    tables,
    documents,
    servitudes: s.servitudes.length,
    actes: s.actes.length,
    lots: lots.length,
    abrogees: s.abrogees,
  };
}

// ---------------------------------------------------------------------------------------------------------------------
// The points asked.
// ---------------------------------------------------------------------------------------------------------------------

interface PointDemande {
  lat: number;
  lon: number;
  ou: 'carte' | 'trou' | 'dehors';
}

/**
 * Distinct points over the communes: most anywhere inside a commune's lattice (a few land just outside its jittered
 * edge), some in a hole of its map that no zone fills, some 50 to 400 m outside every zone.
 */
function points(communes: Commune[], n: number): PointDemande[] {
  const rng = seededRandom(SEED + 5);
  const avecVides = communes.filter((c) => c.trous.some((t) => t.sorte === 'vide'));
  const vus = new Set<string>();
  const out: PointDemande[] = [];
  while (out.length < n) {
    const t = rng.next();
    let c = rng.pick(communes);
    let p: Pt;
    let ou: PointDemande['ou'];
    const [X, Y] = [(c.nx * c.cote) / 2, (c.ny * c.cote) / 2];
    if (t < PART_POINTS_TROUS && avecVides.length > 0) {
      c = rng.pick(avecVides);
      const vides = c.trous.filter((x) => x.sorte === 'vide');
      const trou = rng.pick(vides);
      const { centre, rayon } = anneauDuTrou(c, trou.i, trou.j);
      const [a, d] = [rng.next() * 2 * Math.PI, 0.6 * rayon * Math.sqrt(rng.next())];
      p = [centre[0] + d * Math.cos(a), centre[1] + d * Math.sin(a)];
      ou = 'trou';
    } else if (t < PART_POINTS_TROUS + PART_POINTS_DEHORS) {
      // Past the furthest the jittered edge can reach (20 % of a cell), then 50 to 400 m more.
      const marge = 0.2 * c.cote + rng.between(50, 400);
      const cote = rng.int(4);
      p =
        cote < 2
          ? [rng.between(-X, X), (cote === 0 ? -1 : 1) * (Y + marge)]
          : [(cote === 2 ? -1 : 1) * (X + marge), rng.between(-Y, Y)];
      ou = 'dehors';
    } else {
      p = [rng.between(-X, X), rng.between(-Y, Y)];
      ou = 'carte';
    }
    const lat = Number((c.lat + p[1] / METRES_PER_DEGREE).toFixed(6));
    const lon = Number((c.lon + p[0] / c.mLon).toFixed(6));
    const cle = `${lat},${lon}`;
    if (vus.has(cle)) continue;
    vus.add(cle);
    out.push({ lat, lon, ou });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------------
// Measures.
// ---------------------------------------------------------------------------------------------------------------------

/** A GET of a path, or a POST of a JSON body (the floor measured beside the lookup). */
type Requete = string | { chemin: string; corps: string };
interface LoadSpec {
  base: string;
  cle: string;
  file: string;
  concurrence: number;
}
interface LoadResult {
  n: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
  rps: number;
  statuts: Record<string, number>;
  /** Answers (200) with at least one zone, prescription or information, easement; by `statut.code`. */
  avecZones: number;
  avecSurcharges: number;
  avecServitudes: number;
  parStatut: Record<string, number>;
  /** Durations in ms by request, in the order of the file. */
  durees: number[];
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

/** Runs the load generator in its own process over the paths of a file; resolves with its figures. */
function charge(spec: LoadSpec): Promise<LoadResult> {
  const proc = spawn(process.execPath, [import.meta.filename, '--load', JSON.stringify(spec)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  proc.stdout.on('data', (chunk) => (out += chunk));
  return new Promise((resolve, reject) =>
    proc.once('exit', (code) =>
      code === 0 ? resolve(JSON.parse(out.trim())) : reject(new Error(`load: code ${code}`)),
    ),
  );
}

const loadAverage = () =>
  os
    .loadavg()
    .map((n) => n.toFixed(1))
    .join(' / ');

/** The statement of the lookup a query is, by the table it reads. */
function instruction(text: string): string {
  if (text.includes('FROM zones_urbanisme')) return 'zones (zones_urbanisme)';
  if (text.includes('FROM secteurs_cc')) return 'communal-map sectors (secteurs_cc)';
  if (text.includes('FROM surcharges_urbanisme')) return 'prescriptions and information (surcharges_urbanisme)';
  if (text.includes('FROM sup_assiettes')) return 'easements (sup_assiettes, acts)';
  if (text.includes('lectures_plu')) return 'readings of the zones’ rules (lectures_plu)';
  if (text.includes('FROM adresses')) return 'nearest address for the commune (adresses)';
  return 'status of the commune (documents, communes_urbanisme)';
}

interface Appel {
  texte: string;
  valeurs: unknown[];
  ms: number;
  lignes: number;
}

/** A pool whose queries are timed, each with its text, parameters and rows, for the lookup being measured. */
function chronometre(db: Db): { q: Queryable; appels: Appel[] } {
  const appels: Appel[] = [];
  const q = {
    query: async (config: any, valeurs?: unknown[]) => {
      const t = performance.now();
      const r = await db.query(config, valeurs);
      const texte = typeof config === 'string' ? config : config.text;
      appels.push({
        texte,
        valeurs: (typeof config === 'string' ? valeurs : config.values) ?? [],
        ms: performance.now() - t,
        lignes: r.rowCount ?? 0,
      });
      return r;
    },
  } as unknown as Queryable;
  return { q, appels };
}

async function main() {
  const chargeAvant = loadAverage();
  const service = await startService();
  const dataDir = path.dirname(service.logFile);
  // The running service's embedded PostgreSQL, found through its DATA_DIR as the importers' CLI finds it.
  const url = (await readFile(path.join(dataDir, 'postgres.url'), 'utf8')).trim();
  const db = createDb(url, 6);
  try {
    // Away from what the live dataset already holds (the demonstration territory): its places and communes.
    const { rows: occupes } = await db.query<{ lat: number; lon: number; code: string | null }>(
      `SELECT (bbox_ymin + bbox_ymax) / 2 AS lat, (bbox_xmin + bbox_xmax) / 2 AS lon, insee AS code
         FROM zones_urbanisme WHERE dataset = 'live'
       UNION ALL SELECT (bbox_ymin + bbox_ymax) / 2, (bbox_xmin + bbox_xmax) / 2, insee FROM surcharges_urbanisme WHERE dataset = 'live'
       UNION ALL SELECT (bbox_ymin + bbox_ymax) / 2, (bbox_xmin + bbox_xmax) / 2, NULL FROM sup_assiettes WHERE dataset = 'live'
       UNION ALL SELECT lat, lon, insee FROM adresses WHERE dataset = 'live' AND type = 'commune'
       UNION ALL SELECT 0, 0, insee FROM documents_urbanisme_communes WHERE dataset = 'live'
       UNION ALL SELECT 0, 0, insee FROM communes_urbanisme WHERE dataset = 'live'`,
    );
    const { communes, documents } = planifier(occupes);
    console.log(`plan : ${communes.length} communes, ${documents.length} documents`);
    const chargeAvantChargement = loadAverage();
    const chargement = await charger(db, communes, documents);
    const t = chargement.tables;
    const total = t.zones.lignes + t.secteurs.lignes + t.surcharges.lignes + t.assiettes.lignes + t.parcelles.lignes;
    console.log(
      `chargement : ${total} objets en ${chargement.secondes.toFixed(1)} s (${Math.round(total / chargement.secondes)} objets/s), VACUUM ANALYZE ${chargement.vacuumS.toFixed(1)} s, ${chargement.tailleMo.toFixed(0)} Mio`,
    );

    const org = await service.organisation({ acces: 'usage' });
    await service.admin('POST', `/organisations/${org.id}/credits`, { credits: 1_000_000, motif: 'bench' });
    const tous = points(communes, WARMUP + REQUESTS * CONCURRENCES.length);
    const chemins = tous.map((p) => `/api/v1/urbanisme?lat=${p.lat}&lon=${p.lon}`);
    const ecrire = async (nom: string, liste: Requete[], concurrence: number): Promise<LoadSpec> => {
      const f = path.join(dataDir, `urbanisme-${nom}.json`);
      await writeFile(f, JSON.stringify(liste));
      return { base: service.url, cle: org.cle, file: f, concurrence };
    };
    const chargeAvantRequetes = loadAverage();
    // Warm-up: the service's first requests (connections, JIT, plans), not measured.
    const chauffe = await charge(await ecrire('chauffe', chemins.slice(0, WARMUP), 1));
    if ((chauffe.statuts['200'] ?? 0) === 0) throw new Error(`chauffe : ${JSON.stringify(chauffe.statuts)}`);
    const mesures: Array<[number, LoadResult]> = [];
    for (const [i, c] of CONCURRENCES.entries()) {
      const part = chemins.slice(WARMUP + i * REQUESTS, WARMUP + (i + 1) * REQUESTS);
      const r = await charge(await ecrire(`c${c}`, part, c));
      console.log(`${c} à la fois : p50 ${r.p50.toFixed(1)} ms, p95 ${r.p95.toFixed(1)} ms, ${r.rps.toFixed(0)} req/s`);
      mesures.push([c, r]);
    }
    // The floor of a debited read on this machine at this time: taxe_amenagement (a computation on one commune's
    // rates, 1 credit), a new surface each time so that every answer is computed and debited, one at a time.
    const taxe = (n: number, depuis: number) =>
      Array.from({ length: n }, (_, i) => ({
        chemin: '/api/v1/fiscal/taxe-amenagement',
        corps: JSON.stringify({ insee: '33234', surface_taxable_creee_m2: 10 + (depuis + i) / 100 }),
      }));
    await charge(await ecrire('taxe-chauffe', taxe(50, 0), 1));
    const plancher = await charge(await ecrire('taxe', taxe(PLANCHER, 50), 1));
    console.log(`plancher (taxe_amenagement) : p50 ${plancher.p50.toFixed(1)} ms, p95 ${plancher.p95.toFixed(1)} ms`);
    const chargeApresRequetes = loadAverage();

    // The lookup alone, in this process, on the points asked one at a time (their pages now in the server's cache,
    // as they were for the service), with its statements timed.
    const { q, appels } = chronometre(db);
    const seuls = tous.slice(WARMUP, WARMUP + REQUESTS);
    for (const p of tous.slice(0, 20)) await urbanismeAuPoint(db, 'live', p, { insee: null });
    const enProcessus: Array<{ ms: number; appels: Appel[] }> = [];
    for (const p of seuls) {
      const avant = appels.length;
      const t0 = performance.now();
      await urbanismeAuPoint(q, 'live', p, {
        insee: null,
        communeProche: async () => (await inverser(q, 'live', p.lat, p.lon, 1))[0]?.insee ?? null,
      });
      enProcessus.push({ ms: performance.now() - t0, appels: appels.slice(avant) });
    }
    const tri = enProcessus.map((e) => e.ms).sort((a, b) => a - b);
    const parInstruction = new Map<string, { ms: number[]; lignes: number[] }>();
    for (const a of appels) {
      const k = instruction(a.texte);
      const s = parInstruction.get(k) ?? { ms: [], lignes: [] };
      s.ms.push(a.ms);
      s.lignes.push(a.lignes);
      parInstruction.set(k, s);
    }
    for (const s of parInstruction.values()) {
      s.ms.sort((a, b) => a - b);
      s.lignes.sort((a, b) => a - b);
    }
    // The statement with the highest p95, on the point where it was slowest: its plan, run again as the service runs
    // it (prepared: past PostgreSQL's first five custom plans, the generic plan it keeps), when its parameters can be
    // written as literals; else as a plain statement.
    const [pire] = [...parInstruction.entries()].sort((a, b) => percentile(b[1].ms, 95) - percentile(a[1].ms, 95));
    const pireAppel = appels.filter((a) => instruction(a.texte) === pire![0]).sort((a, b) => b.ms - a.ms)[0]!;
    const client = await db.connect();
    let plan: Array<{ 'QUERY PLAN': string }>;
    try {
      if (pireAppel.valeurs.every((v) => typeof v === 'number' || typeof v === 'string')) {
        await client.query(`PREPARE bench_pire AS ${pireAppel.texte}`);
        const args = pireAppel.valeurs
          .map((v) => (typeof v === 'number' ? String(v) : client.escapeLiteral(String(v))))
          .join(', ');
        const execute = `EXECUTE bench_pire${args ? `(${args})` : ''}`;
        for (let k = 0; k < 6; k++) await client.query(execute);
        plan = (await client.query(`EXPLAIN (ANALYZE, BUFFERS) ${execute}`)).rows;
        await client.query('DEALLOCATE bench_pire');
      } else {
        plan = (await client.query(`EXPLAIN (ANALYZE, BUFFERS) ${pireAppel.texte}`, pireAppel.valeurs)).rows;
      }
    } finally {
      client.release();
    }
    const explain = plan.map((r) => r['QUERY PLAN']).join('\n');
    console.log(`${pire![0]} (${pireAppel.ms.toFixed(1)} ms, ${pireAppel.lignes} lignes) :\n${explain}`);

    const [, seul] = mesures[0]!;
    const atteint = seul.p95 < TARGET_P95_MS;
    const ms = (x: number) => x.toFixed(1);
    const pc = (x: number, n: number) => `${((100 * x) / n).toFixed(0)} %`;
    const nombre = (x: number) => x.toLocaleString('en');
    const parRole = (r: Document['role']) => documents.filter((d) => d.role === r);
    const enVigueur = parRole('en_vigueur');
    const parOu = (ou: PointDemande['ou']) => seuls.filter((p) => p.ou === ou).length;
    const statuts = (r: LoadResult) =>
      Object.entries(r.statuts)
        .map(([s, k]) => `${k} × ${s}`)
        .join(', ');
    const lignesTableau = (nom: string, c: Compte & { secondes: number }, quoi: string) =>
      `| ${nom} | ${nombre(c.lignes)} | ${pc(c.lignes, total)} | ${quoi} | ${c.lignes ? (c.sommets / c.lignes).toFixed(0) : '–'} | ${(c.octets / 2 ** 20).toFixed(0)} | ${c.secondes.toFixed(1)} |`;
    const httpMoinsProcessus = (p: number) =>
      ms(
        percentile(
          seul.durees.slice().sort((a, b) => a - b),
          p,
        ) - percentile(tri, p),
      );

    await writeSection(
      'Urbanism point lookup',
      [
        `Machine: ${machine()}, the service's embedded PostgreSQL 18; the machine is shared with other work (another benchmark ran beside this one), so timings are indicative. Load average (1 / 5 / 15 min) at the start: ${chargeAvant}, before the load: ${chargeAvantChargement}, before the requests: ${chargeAvantRequetes}, at the end: ${chargeApresRequetes}.`,
        '',
        `Generated planning data (seed ${SEED}), ${nombre(total)} features in all, over ${communes.length} real communes with made-up centres (each mapped on a jittered lattice of 130-320 m cells, 3 to 17 km across), COPied into the live dataset of the running service (bench/service.ts) on one connection per table at once: **${chargement.secondes.toFixed(1)} s** (${nombre(Math.round(total / chargement.secondes))} features/s, documents, packages, easements and acts included), then \`VACUUM (ANALYZE)\` ${chargement.vacuumS.toFixed(1)} s; ${chargement.tailleMo.toFixed(0)} MiB of tables and indexes.`,
        '',
        '| layer | features | share | what | vertices (mean) | GeoJSON MiB | COPY s |',
        '|---|---|---|---|---|---|---|',
        lignesTableau(
          '`zones_urbanisme`',
          t.zones,
          'cells of the lattice under the document in force (6 % with a hole: a gap of the map, an enclave zone, or an island of the zone next door, a multipolygon), 2×2 blocks under a replaced edition, 3×3 under a revision in procedure, 9 cells under a PSMV',
        ),
        lignesTableau('`secteurs_cc`', t.secteurs, 'the same lattice for the communes with a communal map'),
        lignesTableau(
          '`surcharges_urbanisme`',
          t.surcharges,
          'prescriptions (protected woods, reserved plots, development orientations, protected buildings and trees, shopfronts, hedges, alignments) and information (the pre-emption right over the built-up area, archaeology, noise corridors, ZAC, wetlands): 51 % surfaces, 28 % lines, 21 % points by weight',
        ),
        lignesTableau(
          '`sup_assiettes`',
          t.assiettes,
          `easement assiettes: monument circles of 500 m and drawn surroundings (AC1), cemetery circles (INT1), power-line (I4) and gas (I3) lines and corridors, flood-risk areas (PM1), alignments (EL7), radio circles (PT2), catchments (AS1); ${nombre(chargement.servitudes)} easements (${chargement.abrogees} repealed) in ${nombre(chargement.lots)} packages, ${nombre(chargement.actes)} acts`,
        ),
        lignesTableau(
          '`cadastre_parcelles`',
          t.parcelles,
          'parcels (not read by the lookup; they share the database with it)',
        ),
        '',
        `Documents: ${documents.length} — in force: ${enVigueur.filter((d) => d.typedoc === 'PLU').length} communal PLU, ${enVigueur.filter((d) => d.typedoc === 'PLUi').length} PLUi over ${communes.filter((c) => c.sorte === 'PLUi').length} communes, ${enVigueur.filter((d) => d.typedoc === 'CC').length} communal maps, ${parRole('psmv').length} PSMV over their PLU; not in force but imported with their zones: ${parRole('remplace').length} older editions or communal PLU replaced by a PLUi (state 03 or 05; a tenth of their commune's prescriptions stay on them), ${parRole('en_procedure').length} revisions in procedure (state 01).`,
        '',
        `\`GET /api/v1/urbanisme?lat=&lon=\` through the service as \`npm start\` runs it (embedded Temporal, worker, logs to a file), with a key of an organisation of access \`usage\`, the load generator in its own process; every request a new point (the service keeps answers 24 h in memory by input), drawn over the communes: ${pc(parOu('carte'), seuls.length)} anywhere inside a commune's lattice (a few past its jittered edge), ${pc(parOu('trou'), seuls.length)} in a hole of the map no zone fills, ${pc(parOu('dehors'), seuls.length)} 50-400 m outside every zone. ${WARMUP} warm-up requests first; ${REQUESTS} requests one at a time, then ${REQUESTS} others ${CONCURRENCES[1]} at a time. Target p95 < ${TARGET_P95_MS} ms one at a time.`,
        '',
        '| at a time | n | req/s | p50 ms | p95 ms | p99 ms | max ms | statuses | with a zone | with a prescription or information | with an easement |',
        '|---|---|---|---|---|---|---|---|---|---|---|',
        ...mesures.map(
          ([c, r]) =>
            `| ${c} | ${r.n} | ${r.rps.toFixed(1)} | ${ms(r.p50)} | **${ms(r.p95)}** | ${ms(r.p99)} | ${ms(r.max)} | ${statuts(r)} | ${pc(r.avecZones, r.n)} | ${pc(r.avecSurcharges, r.n)} | ${pc(r.avecServitudes, r.n)} |`,
        ),
        '',
        `Status of the answers one at a time: ${Object.entries(seul.parStatut)
          .sort((a, b) => b[1] - a[1])
          .map(([s, k]) => `\`${s}\` ${pc(k, seul.n)}`)
          .join(', ')}.`,
        '',
        `\`urbanismeAuPoint\` alone, in the benchmark's process on the same database, on the ${seuls.length} points asked one at a time (after them: their pages in the server's cache as they were for the service), as the operation calls it (the nearest address asked when no communal zone covers the point): p50 ${ms(percentile(tri, 50))} ms, **p95 ${ms(percentile(tri, 95))} ms**, p99 ${ms(percentile(tri, 99))} ms, max ${ms(tri.at(-1)!)} ms. What HTTP and the pipeline (key, credits, answer memory, validation, logs) add: ${httpMoinsProcessus(50)} ms at p50, ${httpMoinsProcessus(95)} ms at p95. Its statements (the four layers at once, then the readings of the zones' rules, then the commune when no zone covers the point):`,
        '',
        '| statement | calls | p50 ms | p95 ms | max ms | rows p50 | rows p95 | rows max |',
        '|---|---|---|---|---|---|---|---|',
        ...[...parInstruction.entries()].map(
          ([k, s]) =>
            `| ${k} | ${s.ms.length} | ${ms(percentile(s.ms, 50))} | ${ms(percentile(s.ms, 95))} | ${ms(s.ms.at(-1)!)} | ${percentile(s.lignes, 50)} | ${percentile(s.lignes, 95)} | ${s.lignes.at(-1)} |`,
        ),
        '',
        `The floor of a debited read through the same pipeline, measured just after: \`taxe_amenagement\` (a computation on one commune's rates, 1 credit; every request a new surface, so every answer computed and debited, the debit committed before the answer leaves), ${plancher.n} one at a time: p50 ${ms(plancher.p50)} ms, p95 ${ms(plancher.p95)} ms.`,
        '',
        atteint
          ? `Target met: p95 ${ms(seul.p95)} ms one at a time; the lookup alone is ${ms(percentile(tri, 95))} ms at p95 in-process, the pipeline's floor ${ms(plancher.p95)} ms at p95.`
          : [
              `Target missed: p95 ${ms(seul.p95)} ms one at a time. The lookup alone is ${ms(percentile(tri, 95))} ms at p95 in-process, the pipeline's floor ${ms(plancher.p95)} ms at p95: ${percentile(tri, 95) > plancher.p95 ? 'the lookup dominates' : 'the pipeline (key, debit committed before the answer, logs) dominates, on a machine this loaded'}. The slowest statement of the lookup at p95 is ${pire![0]}; on the point where it took longest (${ms(pireAppel.ms)} ms, ${pireAppel.lignes} rows), its plan run again:`,
              '',
              '```',
              explain,
              '```',
            ].join('\n'),
      ].join('\n'),
    );
  } finally {
    await db.end().catch(() => {});
    await service.stop();
  }
}

if (process.argv[2] === '--load') {
  const spec = JSON.parse(process.argv[3]!) as LoadSpec;
  const chemins = JSON.parse(readFileSync(spec.file, 'utf8')) as Requete[];
  const durees: number[] = new Array(chemins.length);
  const corps: Array<string | null> = new Array(chemins.length).fill(null);
  const statuts: Record<string, number> = {};
  let suivant = 0;
  const debut = performance.now();
  await Promise.all(
    Array.from({ length: spec.concurrence }, async () => {
      while (suivant < chemins.length) {
        const k = suivant++;
        const t0 = performance.now();
        const r = chemins[k]!;
        const authorization = `Bearer ${spec.cle}`;
        const res =
          typeof r === 'string'
            ? await fetch(spec.base + r, { headers: { authorization } })
            : await fetch(spec.base + r.chemin, {
                method: 'POST',
                headers: { authorization, 'content-type': 'application/json' },
                body: r.corps,
              });
        const texte = await res.text();
        durees[k] = performance.now() - t0;
        statuts[res.status] = (statuts[res.status] ?? 0) + 1;
        if (res.status === 200) corps[k] = texte;
        else if (Object.values(statuts).reduce((a, b) => a + b, 0) - (statuts['200'] ?? 0) <= 3)
          console.error(`${JSON.stringify(r)} → ${res.status} ${texte.slice(0, 300)}`);
      }
    }),
  );
  const totalS = (performance.now() - debut) / 1000;
  // The answers are read once the clock has stopped: what they hold does not slow the requests.
  let avecZones = 0;
  let avecSurcharges = 0;
  let avecServitudes = 0;
  const parStatut: Record<string, number> = {};
  for (const texte of corps) {
    if (!texte) continue;
    const r = JSON.parse(texte);
    if (!r.zones) continue;
    if (r.zones.length > 0) avecZones++;
    if (r.prescriptions.length + r.informations.length > 0) avecSurcharges++;
    if (r.servitudes.length > 0) avecServitudes++;
    parStatut[r.statut.code] = (parStatut[r.statut.code] ?? 0) + 1;
  }
  const tri = durees.slice().sort((a, b) => a - b);
  const out: LoadResult = {
    n: tri.length,
    p50: percentile(tri, 50),
    p95: percentile(tri, 95),
    p99: percentile(tri, 99),
    max: tri.at(-1)!,
    rps: tri.length / totalS,
    statuts,
    avecZones,
    avecSurcharges,
    avecServitudes,
    parStatut,
    durees,
  };
  console.log(JSON.stringify(out));
} else {
  await main();
}
