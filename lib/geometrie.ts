import proj4 from 'proj4';

/**
 * The geometry every domain that places things on the map shares (urbanism zones, IRIS, the cadastre, estimation, DVF
 * and DPE cells, dossiers): plain arithmetic on WGS84 degrees, and the projections France publishes coordinates in.
 * No PostGIS (DESIGN.md section 8): the database only prefilters, by bounding box or grid cell, and the exact tests
 * are here.
 *
 * Longitudes are compared as plain numbers, so no outline may cross the antimeridian: none of the territories served
 * does (metropolitan France and Corsica, Guadeloupe, Martinique, Guyane, Réunion, Mayotte, Saint-Pierre-et-Miquelon,
 * Saint-Barthélemy, Saint-Martin). Distances and areas are equirectangular on the mean sphere around the point or the
 * outline: good to well under a metre over the few kilometres they serve, wrong across a continent.
 */

/** [longitude, latitude] in WGS84 degrees (extra ordinates, e.g. Z, are ignored). */
export type Position = number[];
export type PolygonCoordinates = Position[][];
/** A GeoJSON Polygon or MultiPolygon: an outer ring then its holes, for each polygon. */
export type ZoneGeometry =
  { type: 'Polygon'; coordinates: PolygonCoordinates } | { type: 'MultiPolygon'; coordinates: PolygonCoordinates[] };
export interface LatLon {
  lat: number;
  lon: number;
}
export interface BoundingBox {
  xmin: number;
  ymin: number;
  xmax: number;
  ymax: number;
}

// ---------------------------------------------------------------------------------------------------------------------
// The Earth, and distances between points.
// ---------------------------------------------------------------------------------------------------------------------

/** Mean Earth radius (IUGG): the sphere every distance and area of this module is measured on. */
export const EARTH_RADIUS_M = 6_371_008.8;
/** One degree of latitude on that sphere (about 111.2 km). */
export const METRES_PER_DEGREE = (Math.PI / 180) * EARTH_RADIUS_M;

const radians = (degrees: number) => (degrees * Math.PI) / 180;

/** Great-circle distance in metres between two points (haversine, exact on the sphere at any range). */
export function distanceM(a: LatLon, b: LatLon): number {
  const h =
    Math.sin(radians(b.lat - a.lat) / 2) ** 2 +
    Math.cos(radians(a.lat)) * Math.cos(radians(b.lat)) * Math.sin(radians(b.lon - a.lon) / 2) ** 2;
  return 2 * EARTH_RADIUS_M * Math.asin(Math.min(1, Math.sqrt(h)));
}

/**
 * Half-sides in degrees of the box that reaches `metres` north, south, east and west of a point at `lat`. The cosine
 * is floored so that a box near a pole stays finite (it then spans every longitude, which is what is meant).
 */
function halfSidesDeg(lat: number, metres: number, metresPerDegree: number): { dLat: number; dLon: number } {
  const dLat = metres / metresPerDegree;
  return { dLat, dLon: dLat / Math.max(0.01, Math.cos(radians(lat))) };
}

/** The box that holds every point within `radiusM` of a point: what a bounding-box prefilter asks the database for. */
export function boxAround(lat: number, lon: number, radiusM: number): BoundingBox {
  const { dLat, dLon } = halfSidesDeg(lat, radiusM, METRES_PER_DEGREE);
  return { xmin: lon - dLon, ymin: lat - dLat, xmax: lon + dLon, ymax: lat + dLat };
}

// ---------------------------------------------------------------------------------------------------------------------
// Polygons and multipolygons with holes.
// ---------------------------------------------------------------------------------------------------------------------

function polygonsOf(geometry: ZoneGeometry): PolygonCoordinates[] {
  return geometry.type === 'Polygon' ? [geometry.coordinates] : geometry.coordinates;
}

/**
 * A point this near an edge, in degrees (about 0.1 mm), is on it. Outlines are stored to 1e-7° (1 cm) at best: two
 * points nearer than that are one place written twice, and an exact test would put a point that lies on a diagonal
 * edge in or out by the rounding of its decimals.
 */
const ON_EDGE_DEG = 1e-9;

function onSegment(lon: number, lat: number, a: Position, b: Position): boolean {
  const [ax, ay] = a;
  const [bx, by] = b;
  if (lon < Math.min(ax, bx) - ON_EDGE_DEG || lon > Math.max(ax, bx) + ON_EDGE_DEG) return false;
  if (lat < Math.min(ay, by) - ON_EDGE_DEG || lat > Math.max(ay, by) + ON_EDGE_DEG) return false;
  // Twice the area of the triangle over the length of the edge: the distance from the point to the edge's line.
  const length = Math.hypot(bx - ax, by - ay);
  return Math.abs((bx - ax) * (lat - ay) - (by - ay) * (lon - ax)) <= ON_EDGE_DEG * Math.max(length, ON_EDGE_DEG);
}

/** Where a point stands to one ring, by ray casting: on its outline, or inside or outside it. */
function sideOfRing(ring: Position[], lon: number, lat: number): 'edge' | 'inside' | 'outside' {
  let inside = false;
  for (let i = 0, j = ring.length - 1; i < ring.length; j = i++) {
    if (onSegment(lon, lat, ring[j], ring[i])) return 'edge';
    const [xi, yi] = ring[i];
    const [xj, yj] = ring[j];
    if (yi > lat !== yj > lat && lon < ((xj - xi) * (lat - yi)) / (yj - yi) + xi) inside = !inside;
  }
  return inside ? 'inside' : 'outside';
}

/**
 * Point in (Multi)Polygon: inside an outer ring and in none of its holes, or on any ring's outline. Outlines are
 * closed: a point on an edge or a vertex (of the outer ring or of a hole) is inside, so that `containsPoint` agrees
 * with `distanceToZoneM` (0 on the outline), and an address on the line between two zones belongs to both rather
 * than to neither.
 */
export function containsPoint(geometry: ZoneGeometry, lon: number, lat: number): boolean {
  return polygonsOf(geometry).some(([outer, ...holes]) => {
    if (outer === undefined) return false;
    const side = sideOfRing(outer, lon, lat);
    if (side !== 'inside') return side === 'edge';
    return holes.every((hole) => sideOfRing(hole, lon, lat) !== 'inside');
  });
}

/** Shortest distance in metres from the point to a set of paths (each a list of positions joined in order). */
function distanceToPathsM(paths: Iterable<Position[]>, lon: number, lat: number): number {
  const kx = METRES_PER_DEGREE * Math.cos(radians(lat));
  const ky = METRES_PER_DEGREE;
  let best = Infinity;
  for (const path of paths) {
    // A path of one position is a point: its own "segment" of length 0.
    for (let i = path.length > 1 ? 1 : 0; i < path.length; i++) {
      // Segment in metres, with the point as origin.
      const ax = (path[Math.max(0, i - 1)][0] - lon) * kx;
      const ay = (path[Math.max(0, i - 1)][1] - lat) * ky;
      const bx = (path[i][0] - lon) * kx;
      const by = (path[i][1] - lat) * ky;
      const dx = bx - ax;
      const dy = by - ay;
      const length2 = dx * dx + dy * dy;
      const t = length2 === 0 ? 0 : Math.max(0, Math.min(1, -(ax * dx + ay * dy) / length2));
      const d = Math.hypot(ax + t * dx, ay + t * dy);
      if (d < best) best = d;
    }
  }
  return best;
}

/** Shortest distance in metres from the point to the outline of the geometry (holes included). */
export function distanceToOutlineM(geometry: ZoneGeometry, lon: number, lat: number): number {
  return distanceToPathsM(polygonsOf(geometry).flat(), lon, lat);
}

/** Distance in metres from the point to the zone: 0 inside it or on its outline. */
export function distanceToZoneM(geometry: ZoneGeometry, lon: number, lat: number): number {
  return containsPoint(geometry, lon, lat) ? 0 : distanceToOutlineM(geometry, lon, lat);
}

/** Any GeoJSON geometry the planning layers carry: surfaces, lines (a linear prescription, a pipeline) or points. */
export type Geometry =
  | ZoneGeometry
  | { type: 'LineString'; coordinates: Position[] }
  | { type: 'MultiLineString'; coordinates: Position[][] }
  | { type: 'Point'; coordinates: Position }
  | { type: 'MultiPoint'; coordinates: Position[] };

/**
 * Distance in metres from the point to any geometry: 0 inside a surface or on its outline, else to the nearest edge,
 * line segment or point.
 */
export function distanceToGeometryM(geometry: Geometry, lon: number, lat: number): number {
  switch (geometry.type) {
    case 'Polygon':
    case 'MultiPolygon':
      return distanceToZoneM(geometry, lon, lat);
    case 'LineString':
      return distanceToPathsM([geometry.coordinates], lon, lat);
    case 'MultiLineString':
      return distanceToPathsM(geometry.coordinates, lon, lat);
    case 'Point':
      return distanceToPathsM([[geometry.coordinates]], lon, lat);
    case 'MultiPoint':
      return distanceToPathsM(
        geometry.coordinates.map((p) => [p]),
        lon,
        lat,
      );
  }
}

function ringAreaM2(ring: Position[], kx: number): number {
  let twice = 0;
  for (let i = 0, j = ring.length - 1; i < ring.length; j = i++) {
    twice += ring[j][0] * ring[i][1] - ring[i][0] * ring[j][1];
  }
  return (Math.abs(twice) / 2) * kx * METRES_PER_DEGREE;
}

/** Area in square metres (outer rings minus holes), equirectangular at the middle latitude of the geometry. */
export function areaM2(geometry: ZoneGeometry): number {
  const { ymin, ymax } = bboxOf(geometry);
  const kx = METRES_PER_DEGREE * Math.cos(radians((ymin + ymax) / 2));
  let total = 0;
  for (const [outer, ...holes] of polygonsOf(geometry)) {
    if (!outer) continue;
    total += ringAreaM2(outer, kx) - holes.reduce((sum, hole) => sum + ringAreaM2(hole, kx), 0);
  }
  return Math.max(0, total);
}

/** The bounding box of the geometry, in degrees (xmin/xmax are longitudes). */
export function bboxOf(geometry: ZoneGeometry): BoundingBox {
  let xmin = Infinity;
  let ymin = Infinity;
  let xmax = -Infinity;
  let ymax = -Infinity;
  for (const polygon of polygonsOf(geometry)) {
    // Holes lie inside their outer ring: the outer rings alone give the box.
    for (const [x, y] of polygon[0] ?? []) {
      if (x < xmin) xmin = x;
      if (x > xmax) xmax = x;
      if (y < ymin) ymin = y;
      if (y > ymax) ymax = y;
    }
  }
  return { xmin, ymin, xmax, ymax };
}

// ---------------------------------------------------------------------------------------------------------------------
// The degree grid of the radius searches over sales: cells of 0.005° a side, numbered row by row from the south-west
// corner of the world. An index of dvf_mutations is built on the SQL form (db/migrations/013_dvf_partitions.sql): the
// numbering must never change, or the index stops answering.
// ---------------------------------------------------------------------------------------------------------------------

const CELLS_PER_DEGREE = 200;
/** Cells in a row of the grid (360° × 200, and one spare): the id of cell (row, column) is row × 72001 + column. */
const CELLS_PER_ROW = 72_001;
/**
 * Metres in a degree of latitude as the grid's cover counts them: 110 km where earthdistance's sphere has 111.3, so
 * that the cells a little overreach the circle whose exact test is earth_distance.
 */
const GRID_METRES_PER_DEGREE = 110_000;

/** The grid cell of a position, in SQL over two columns of degrees: the expression the index is built on. */
export function degreeCellSql(latColumn: string, lonColumn: string): string {
  return `(floor((${latColumn} + 90) * ${CELLS_PER_DEGREE})::bigint * ${CELLS_PER_ROW} + floor((${lonColumn} + 180) * ${CELLS_PER_DEGREE})::bigint)`;
}

/** The grid cell of a position, as `degreeCellSql` computes it in the database. */
export function degreeCellOf(lat: number, lon: number): string {
  return String(Math.floor((lat + 90) * CELLS_PER_DEGREE) * CELLS_PER_ROW + Math.floor((lon + 180) * CELLS_PER_DEGREE));
}

/** The grid cells that cover the box of a circle: a bigint[] parameter for `degreeCellSql(…) = ANY($n)`. */
export function degreeCellsAround(lat: number, lon: number, radiusM: number): string[] {
  const { dLat, dLon } = halfSidesDeg(lat, radiusM, GRID_METRES_PER_DEGREE);
  const out: string[] = [];
  const rowFirst = Math.floor((lat - dLat + 90) * CELLS_PER_DEGREE);
  const rowLast = Math.floor((lat + dLat + 90) * CELLS_PER_DEGREE);
  const columnFirst = Math.floor((lon - dLon + 180) * CELLS_PER_DEGREE);
  const columnLast = Math.floor((lon + dLon + 180) * CELLS_PER_DEGREE);
  for (let row = rowFirst; row <= rowLast; row++) {
    for (let column = columnFirst; column <= columnLast; column++) out.push(String(row * CELLS_PER_ROW + column));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------------
// Projections: the metric systems French public data is published in. Lambert-93 (RGF93, EPSG:2154) covers
// metropolitan France and Corsica; each overseas département has its legal UTM zone on GRS80, which the x and y of
// the BAN and DPE files are in: Guadeloupe, Martinique, Saint-Barthélemy and Saint-Martin UTM 20N (RGAF09,
// EPSG:5490), Saint-Pierre-et-Miquelon 21N (RGSPM06, EPSG:4467), Guyane 22N (RGFG95, EPSG:2972), Mayotte 38S (RGM04,
// EPSG:4471), Réunion 40S (RGR92, EPSG:2975). These frames are taken as WGS84 (a null datum shift: they differ from it
// by well under a metre). Other French territories (the Pacific, the southern lands) have no projection here.
// ---------------------------------------------------------------------------------------------------------------------

const GRS80_ON_WGS84 = '+ellps=GRS80 +towgs84=0,0,0,0,0,0,0 +units=m +no_defs';

/** The proj4 definition of Lambert-93 (EPSG:2154). */
export const LAMBERT_93 = `+proj=lcc +lat_0=46.5 +lon_0=3 +lat_1=49 +lat_2=44 +x_0=700000 +y_0=6600000 ${GRS80_ON_WGS84}`;

/**
 * Each projection, and the WGS84 box [latMin, latMax, lonMin, lonMax] of the area it serves. The keys are written into
 * the ids of metric cells: never rename them.
 */
const PROJECTIONS = {
  l93: { definition: LAMBERT_93, area: [41, 51.5, -5.5, 10] },
  utm20n: { definition: `+proj=utm +zone=20 ${GRS80_ON_WGS84}`, area: [14, 18.5, -63.5, -60.5] },
  utm21n: { definition: `+proj=utm +zone=21 ${GRS80_ON_WGS84}`, area: [46.5, 47.5, -57, -56] },
  utm22n: { definition: `+proj=utm +zone=22 ${GRS80_ON_WGS84}`, area: [2, 6, -55, -51] },
  utm38s: { definition: `+proj=utm +zone=38 +south ${GRS80_ON_WGS84}`, area: [-13.2, -12.5, 44.9, 45.5] },
  utm40s: { definition: `+proj=utm +zone=40 +south ${GRS80_ON_WGS84}`, area: [-21.5, -20.8, 55.1, 56] },
} as const;
export type Projection = keyof typeof PROJECTIONS;

/** The projection of a département's data (`departementOf` of its INSEE code: '33', '2A', '974'). */
export function projectionOfDepartement(departement: string): Projection {
  switch (departement) {
    case '971':
    case '972':
    case '977':
    case '978':
      return 'utm20n';
    case '975':
      return 'utm21n';
    case '973':
      return 'utm22n';
    case '974':
      return 'utm40s';
    case '976':
      return 'utm38s';
    default:
      return 'l93';
  }
}

const converters = new Map<Projection, proj4.Converter>();
function converter(projection: Projection): proj4.Converter {
  let c = converters.get(projection);
  if (!c) {
    c = proj4(PROJECTIONS[projection].definition, 'WGS84');
    converters.set(projection, c);
  }
  return c;
}

/**
 * WGS84 of projected metres, unrounded, or null when they land outside the area the projection serves: coordinates
 * read in a wrong system (Lambert-93 taken for UTM, a swapped x and y) are refused rather than placed elsewhere.
 */
export function toWgs84(projection: Projection, x: number, y: number): LatLon | null {
  const [lon, lat] = converter(projection).forward([x, y]);
  const [latMin, latMax, lonMin, lonMax] = PROJECTIONS[projection].area;
  return lat >= latMin && lat <= latMax && lon >= lonMin && lon <= lonMax ? { lat, lon } : null;
}

/** Projected metres of a WGS84 position. */
export function fromWgs84(projection: Projection, lat: number, lon: number): { x: number; y: number } {
  const [x, y] = converter(projection).inverse([lon, lat]);
  return { x, y };
}

/**
 * Square cells of fixed sides in metres around a position, in the projection of its area, one id per side: the
 * point's projected coordinates floored to the side. Cells of one projection nest (a 10 m cell lies in one 100 m
 * cell) and are stable across imports; `l93-100-6546-68613` is the 100 m Lambert-93 cell whose south-west corner is
 * x 654 600, y 6 861 300.
 */
export function metricCellIds(projection: Projection, lat: number, lon: number, sidesM: number[]): string[] {
  const { x, y } = fromWgs84(projection, lat, lon);
  return sidesM.map((side) => `${projection}-${side}-${Math.floor(x / side)}-${Math.floor(y / side)}`);
}
