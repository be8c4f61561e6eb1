import type { Queryable } from '../../db/client.ts';
import { containsPoint, type ZoneGeometry } from '../../lib/geometrie.ts';
import { rechercher } from '../adresses/resoudre.ts';
import { communeByCode } from '../communes.ts';
import { ApiError, invalidField } from '../errors.ts';
import {
  aire,
  anneauDe,
  aretes,
  boite,
  centroide,
  cm,
  dedans,
  distanceAnneauSegment,
  distanceAnneaux,
  distancePointSegment,
  normaliser,
  rectangle,
  repereAutour,
  type Anneau,
  type Pt,
  type Repere,
} from './geometrie-locale.ts';
import type { Cote, Lieu, Nature, Projet } from './projet.ts';

/**
 * The site model: the parcel (by `idu`, or the one under the point or the address), its neighbours and buildings from
 * the cadastre in a local metric frame, and each project placed and measured in it. Everything the rules, the
 * formality and the drawings need is computed here once; they only read it.
 */

export interface Limite {
  cote: Cote;
  /** separative: shared with a neighbouring parcel; voie: no parcel beyond (a road or public land, presumed). */
  nature: 'separative' | 'voie';
  a: Pt;
  b: Pt;
  longueur_m: number;
}

export interface Batiment {
  numero: number;
  anneau: Anneau;
  emprise_m2: number;
  leger: boolean;
  principal: boolean;
}

export interface MesuresProjet {
  emprise_m2: number;
  surface_plancher_m2: number;
  /** Piscine: area of the basin (m²); null otherwise. */
  bassin_m2: number | null;
  hauteur_m: number;
  /** Shortest distance to the boundaries of each side and nature. */
  distances_limites: Array<{ cote: Cote; nature: Limite['nature']; distance_m: number }>;
  distance_limite_separative_min_m: number | null;
  distance_voie_min_m: number | null;
  distances_batiments: Array<{ batiment: number; distance_m: number }>;
  accole_batiment: boolean;
  hors_parcelle: boolean;
}

export interface ProjetPlace {
  index: number;
  projet: Projet;
  libelle: string;
  anneau: Anneau;
  /** The side the project is anchored on (its main facade faces it). */
  cote: Cote;
  mesures: MesuresProjet;
}

export interface Site {
  origine: { lat: number; lon: number };
  adresse: { libelle: string; lat: number; lon: number; precision: string } | null;
  parcelle: {
    idu: string;
    section: string;
    numero: string;
    commune: string | null;
    code_insee: string;
    contour: Array<[number, number]>;
    contenance_m2: number | null;
    aire_m2: number;
    anneau: Anneau;
  };
  limites: Limite[];
  voisines: Array<{ idu: string; anneau: Anneau }>;
  batiments: Batiment[];
  projets: ProjetPlace[];
  altitude_terrain_m: number | null;
  faits_manquants: string[];
  constats: string[];
}

interface ParcelleRow {
  id: string;
  commune: string;
  section: string;
  numero: string;
  contenance: number | null;
  geometrie: ZoneGeometry;
  bbox_xmin: number;
  bbox_ymin: number;
  bbox_xmax: number;
  bbox_ymax: number;
}

const COLONNES = 'id, commune, section, numero, contenance, geometrie, bbox_xmin, bbox_ymin, bbox_xmax, bbox_ymax';
/** A parcel within this much of a boundary (degrees, about 1 m) is its neighbour. */
const MARGE_VOISINES_DEG = 0.00001;
/** A boundary is shared with a neighbour when the neighbour's outline passes this close to its middle (m). */
const TOLERANCE_MITOYENNE_M = 0.5;

async function parcelleAuPoint(db: Queryable, lat: number, lon: number): Promise<ParcelleRow | null> {
  const { rows } = await db.query<ParcelleRow>(
    `SELECT ${COLONNES} FROM cadastre_parcelles
      WHERE dataset = 'live' AND box(point(bbox_xmin, bbox_ymin), point(bbox_xmax, bbox_ymax)) @> point($1, $2)`,
    [lon, lat],
  );
  return rows.find((r) => containsPoint(r.geometrie, lon, lat)) ?? null;
}

async function parcelleParId(db: Queryable, idu: string): Promise<ParcelleRow | null> {
  const { rows } = await db.query<ParcelleRow>(
    `SELECT ${COLONNES} FROM cadastre_parcelles WHERE dataset = 'live' AND id = $1`,
    [idu],
  );
  return rows[0] ?? null;
}

/** The parcel of the request and the address it comes from (404 when neither the address nor the parcel is known). */
export async function localiser(
  db: Queryable,
  lieu: Lieu,
): Promise<{ parcelle: ParcelleRow; adresse: Site['adresse'] }> {
  if (lieu.idu) {
    const idu = lieu.idu.toUpperCase();
    const parcelle = await parcelleParId(db, idu);
    if (!parcelle) throw new ApiError('ressource_absente', `Aucune parcelle ${idu} au cadastre.`);
    return { parcelle, adresse: null };
  }
  if ((lieu.lat === undefined) !== (lieu.lon === undefined)) {
    throw invalidField(lieu.lat === undefined ? 'lat' : 'lon', 'lat et lon vont ensemble.');
  }
  if (lieu.lat !== undefined && lieu.lon !== undefined) {
    const parcelle = await parcelleAuPoint(db, lieu.lat, lieu.lon);
    if (!parcelle) {
      throw new ApiError('ressource_absente', `Aucune parcelle du cadastre sous le point (${lieu.lat}, ${lieu.lon}).`);
    }
    return {
      parcelle,
      adresse: { libelle: `Point ${lieu.lat}, ${lieu.lon}`, lat: lieu.lat, lon: lieu.lon, precision: 'point' },
    };
  }
  if (!lieu.adresse)
    throw invalidField('idu', 'Donnez une parcelle (idu), une adresse (adresse) ou un point (lat, lon).');
  const [trouvee] = await rechercher(db, 'live', lieu.adresse, lieu.code_postal ?? null, 1);
  if (!trouvee) throw new ApiError('adresse_introuvable', `Aucune adresse ne correspond à « ${lieu.adresse} ».`);
  const adresse = {
    libelle: trouvee.libelle,
    lat: trouvee.lat,
    lon: trouvee.lon,
    precision: trouvee.type === 'commune' ? 'autre' : trouvee.type,
  };
  // The parcel under the address's position, else the first the BAN gives for the number.
  const parcelle =
    (await parcelleAuPoint(db, trouvee.lat, trouvee.lon)) ??
    (trouvee.parcelles?.[0] ? await parcelleParId(db, trouvee.parcelles[0]) : null);
  if (!parcelle) throw new ApiError('ressource_absente', `Aucune parcelle du cadastre sous « ${trouvee.libelle} ».`);
  return { parcelle, adresse };
}

/** The side an outward normal faces. */
function coteDe(nx: number, ny: number): Cote {
  return Math.abs(nx) > Math.abs(ny) ? (nx > 0 ? 'est' : 'ouest') : ny > 0 ? 'nord' : 'sud';
}

const DIRECTION: Record<Cote, Pt> = {
  nord: { x: 0, y: 1 },
  sud: { x: 0, y: -1 },
  est: { x: 1, y: 0 },
  ouest: { x: -1, y: 0 },
};

/** Measured height of a project: given, else its ridge or walls, else a default said in `faits_manquants`. */
function hauteurDe(p: Projet, manquants: string[], libelle: string): number {
  const h = p.hauteur_m ?? p.hauteur_faitage_m ?? p.hauteur_murs_m;
  if (h !== undefined) return h;
  if (p.nature === 'piscine' || p.nature === 'terrasse')
    return p.nature === 'terrasse' ? Math.max(0, p.niveau_terrasse_m ?? 0) : 0;
  manquants.push(`${libelle} : hauteur non donnée, 2,50 m retenus pour les mesures et les dessins.`);
  return 2.5;
}

const CLOS: ReadonlySet<Nature> = new Set(['extension', 'veranda', 'annexe', 'abri', 'garage', 'autre']);
/** Height under which a level creates no floor area (R.111-22: « hauteur sous plafond … supérieure à 1,80 m »). */
export const HAUTEUR_PLANCHER_MIN_M = 1.8;
/** A terrace no higher than this above the ground is « de plain-pied »: no footprint. */
export const TERRASSE_PLAIN_PIED_M = 0.6;

function mesurer(
  anneau: Anneau,
  p: Projet,
  hauteur: number,
  parcelle: Anneau,
  limites: Limite[],
  batiments: Batiment[],
): MesuresProjet {
  const empreinte = aire(anneau);
  const terrasseBasse = p.nature === 'terrasse' && (p.niveau_terrasse_m ?? 0) <= TERRASSE_PLAIN_PIED_M;
  const emprise = terrasseBasse ? 0 : empreinte;
  const plancher = CLOS.has(p.nature) && hauteur >= HAUTEUR_PLANCHER_MIN_M ? empreinte : 0;
  const parCote = new Map<string, { cote: Cote; nature: Limite['nature']; distance_m: number }>();
  for (const l of limites) {
    const d = distanceAnneauSegment(anneau, [l.a, l.b]);
    const cle = `${l.cote}/${l.nature}`;
    const avant = parCote.get(cle);
    if (!avant || d < avant.distance_m) parCote.set(cle, { cote: l.cote, nature: l.nature, distance_m: d });
  }
  const distances = [...parCote.values()].map((d) => ({ ...d, distance_m: cm(d.distance_m) }));
  const min = (nature: Limite['nature']) => {
    const ds = distances.filter((d) => d.nature === nature).map((d) => d.distance_m);
    return ds.length ? Math.min(...ds) : null;
  };
  const distancesBatiments = batiments.map((b) => ({
    batiment: b.numero,
    distance_m: cm(distanceAnneaux(anneau, b.anneau)),
  }));
  return {
    emprise_m2: cm(emprise),
    surface_plancher_m2: cm(plancher),
    bassin_m2: p.nature === 'piscine' ? cm(empreinte) : null,
    hauteur_m: cm(hauteur),
    distances_limites: distances,
    distance_limite_separative_min_m: min('separative'),
    distance_voie_min_m: min('voie'),
    distances_batiments: distancesBatiments,
    accole_batiment: distancesBatiments.some((d) => d.distance_m < 0.05),
    hors_parcelle: anneau.some(
      (pt) =>
        !dedans(parcelle, pt) && Math.min(...aretes(parcelle).map(([a, b]) => distancePointSegment(pt, a, b))) > 0.01,
    ),
  };
}

/** Distance from a ring to the boundaries of one side. */
function distanceAuCote(anneau: Anneau, limites: Limite[], cote: Cote): number | null {
  const ds = limites.filter((l) => l.cote === cote).map((l) => distanceAnneauSegment(anneau, [l.a, l.b]));
  return ds.length ? Math.min(...ds) : null;
}

/** A project's rectangle, placed by its anchoring (see ProjetSchema). */
function placer(
  p: Projet,
  parcelle: Anneau,
  limites: Limite[],
  principal: Batiment | null,
  repere: Repere,
  constats: string[],
  libelle: string,
): { anneau: Anneau; cote: Cote } {
  const cote: Cote = p.cote ?? 'sud';
  if (p.contour_wgs84)
    return { anneau: normaliser(p.contour_wgs84.map(([lon, lat]) => repere.versLocal(lon, lat))), cote };
  const largeur = p.largeur_m!;
  const profondeur = p.profondeur_m!;
  const d = DIRECTION[cote];
  const horizontal = d.y !== 0; // the facade runs along x for nord/sud
  let ancrage = p.ancrage ?? 'auto';
  if (ancrage === 'auto') {
    ancrage =
      principal && (p.nature === 'extension' || p.nature === 'veranda')
        ? 'accole_batiment'
        : p.distance_limite_m !== undefined
          ? 'depuis_limite'
          : 'libre';
  }
  if (ancrage === 'accole_batiment' && !principal) {
    constats.push(`${libelle} : aucun bâtiment sur la parcelle auquel l’accoler ; placé au centre de la parcelle.`);
    ancrage = 'libre';
  }
  const ref = boite(ancrage === 'accole_batiment' ? principal!.anneau : parcelle);
  // Span along the facade: the reference's, then the calage and the shift.
  const [tmin, tmax] = horizontal ? [ref.xmin, ref.xmax] : [ref.ymin, ref.ymax];
  const calage = p.calage ?? 'centre';
  let t0 =
    calage === 'extremite_ouest_sud'
      ? tmin
      : calage === 'extremite_est_nord'
        ? tmax - largeur
        : (tmin + tmax) / 2 - largeur / 2;
  t0 += p.decalage_m ?? 0;
  if (ancrage === 'libre') {
    const c = centroide(parcelle);
    const [u0, v0] = horizontal ? [c.x, c.y] : [c.y, c.x];
    const tt = calage === 'centre' ? u0 - largeur / 2 + (p.decalage_m ?? 0) : t0;
    return { anneau: orienter(horizontal, tt, tt + largeur, v0 - profondeur / 2, v0 + profondeur / 2), cote };
  }
  // Across: from the reference face outward (against the building) or inward (from the boundary).
  const face = { nord: ref.ymax, sud: ref.ymin, est: ref.xmax, ouest: ref.xmin }[cote];
  const sens = cote === 'nord' || cote === 'est' ? 1 : -1;
  let v0: number;
  let v1: number;
  if (ancrage === 'accole_batiment') {
    [v0, v1] = sens > 0 ? [face, face + profondeur] : [face - profondeur, face];
  } else {
    const recul = p.distance_limite_m ?? 0;
    [v0, v1] = sens > 0 ? [face - recul - profondeur, face - recul] : [face + recul, face + recul + profondeur];
  }
  let anneau = orienter(horizontal, t0, t0 + largeur, v0, v1);
  if (ancrage === 'depuis_limite') {
    // The box's side is not the boundary when the parcel is skewed: slide until the measured distance is the asked one.
    const voulu = p.distance_limite_m ?? 0;
    for (let i = 0; i < 4; i++) {
      const mesure = distanceAuCote(anneau, limites, cote);
      if (mesure === null || Math.abs(mesure - voulu) < 0.005) break;
      const ecart = (mesure - voulu) * sens;
      anneau = anneau.map((pt) => (horizontal ? { x: pt.x, y: pt.y + ecart } : { x: pt.x + ecart, y: pt.y }));
    }
  }
  return { anneau, cote };
}

function orienter(horizontal: boolean, t0: number, t1: number, v0: number, v1: number): Anneau {
  return horizontal ? rectangle(t0, v0, t1, v1) : rectangle(v0, t0, v1, t1);
}

const NOM_NATURE: Record<Nature, string> = {
  extension: 'Extension',
  annexe: 'Annexe',
  abri: 'Abri de jardin',
  garage: 'Garage',
  carport: 'Carport',
  piscine: 'Piscine',
  terrasse: 'Terrasse',
  veranda: 'Véranda',
  autre: 'Construction',
};

/** The site of a request: parcel, neighbours, buildings, boundaries, and the projects placed and measured. */
export async function modeleDuSite(db: Queryable, lieu: Lieu, projets: Projet[]): Promise<Site> {
  const { parcelle: row, adresse } = await localiser(db, lieu);
  const c = boite(
    row.geometrie.type === 'Polygon'
      ? row.geometrie.coordinates[0].map(([x, y]) => ({ x, y }))
      : row.geometrie.coordinates.flatMap((p) => p[0].map(([x, y]) => ({ x, y }))),
  );
  const repere = repereAutour((c.ymin + c.ymax) / 2, (c.xmin + c.xmax) / 2);
  const anneau = anneauDe(row.geometrie, repere);
  const m = MARGE_VOISINES_DEG;
  const [voisinesRows, batimentsRows] = await Promise.all([
    db.query<ParcelleRow>(
      `SELECT ${COLONNES} FROM cadastre_parcelles
        WHERE dataset = 'live' AND id <> $1
          AND box(point(bbox_xmin, bbox_ymin), point(bbox_xmax, bbox_ymax)) && box(point($2, $3), point($4, $5))`,
      [row.id, row.bbox_xmin - m, row.bbox_ymin - m, row.bbox_xmax + m, row.bbox_ymax + m],
    ),
    db.query<{ geometrie: ZoneGeometry; type: string | null }>(
      `SELECT geometrie, type FROM cadastre_batiments
        WHERE dataset = 'live' AND box(point(bbox_xmin, bbox_ymin), point(bbox_xmax, bbox_ymax)) && box(point($1, $2), point($3, $4))
        ORDER BY id`,
      [row.bbox_xmin, row.bbox_ymin, row.bbox_xmax, row.bbox_ymax],
    ),
  ]);
  const voisines = voisinesRows.rows.map((v) => ({ idu: v.id, anneau: anneauDe(v.geometrie, repere) }));
  const batiments: Batiment[] = batimentsRows.rows
    .map((b) => ({ anneau: anneauDe(b.geometrie, repere), leger: b.type === '02' }))
    .filter((b) => dedans(anneau, centroide(b.anneau)))
    .map((b, i) => ({
      numero: i + 1,
      anneau: b.anneau,
      emprise_m2: cm(aire(b.anneau)),
      leger: b.leger,
      principal: false,
    }));
  const principal = batiments.filter((b) => !b.leger).sort((a, b) => b.emprise_m2 - a.emprise_m2)[0] ?? null;
  if (principal) principal.principal = true;
  const limites: Limite[] = aretes(anneau).map(([a, b]) => {
    const dx = b.x - a.x;
    const dy = b.y - a.y;
    const milieu = { x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 };
    const mitoyenne = voisines.some((v) =>
      aretes(v.anneau).some(([p, q]) => distancePointSegment(milieu, p, q) <= TOLERANCE_MITOYENNE_M),
    );
    return {
      cote: coteDe(dy, -dx),
      nature: mitoyenne ? 'separative' : 'voie',
      a,
      b,
      longueur_m: cm(Math.hypot(dx, dy)),
    };
  });
  const faits_manquants: string[] = [];
  const constats: string[] = [];
  if (lieu.altitude_terrain_m === undefined) {
    faits_manquants.push(
      'Altitude du terrain naturel non donnée (aucun modèle d’élévation n’est disponible) : terrain supposé plat, niveaux relatifs au sol, sans altitude NGF.',
    );
  }
  if (limites.every((l) => l.nature === 'separative')) {
    constats.push(
      'Aucune limite de la parcelle ne donne sur une voie d’après le cadastre (parcelle enclavée ou voie privée cadastrée).',
    );
  }
  const places = projets.map((p, index) => {
    const libelle = p.libelle ?? `${NOM_NATURE[p.nature]}${projets.length > 1 ? ` ${index + 1}` : ''}`;
    const hauteur = hauteurDe(p, faits_manquants, libelle);
    const { anneau: a, cote } = placer(p, anneau, limites, principal, repere, constats, libelle);
    const mesures = mesurer(a, p, hauteur, anneau, limites, batiments);
    if (mesures.hors_parcelle)
      constats.push(
        `${libelle} : le projet ainsi placé déborde de la parcelle ; revoyez son ancrage ou ses dimensions.`,
      );
    return { index, projet: p, libelle, anneau: a, cote, mesures };
  });
  const commune = communeByCode(row.commune);
  return {
    origine: repere.origine,
    adresse,
    parcelle: {
      idu: row.id,
      section: row.section,
      numero: row.numero,
      commune: commune?.nom ?? null,
      code_insee: row.commune,
      contour: anneau.map((pt) => repere.versWgs84(pt)),
      contenance_m2: row.contenance,
      aire_m2: cm(aire(anneau)),
      anneau,
    },
    limites,
    voisines,
    batiments,
    projets: places,
    altitude_terrain_m: lieu.altitude_terrain_m ?? null,
    faits_manquants,
    constats,
  };
}
