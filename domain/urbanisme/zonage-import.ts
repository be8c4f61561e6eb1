import { MAX_REJETS_LISTES, type Dataset } from '../import/source.ts';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open as openFile, readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { PoolClient } from 'pg';
import proj4 from 'proj4';
import * as shapefile from 'shapefile';
import type { Db } from '../../db/client.ts';
import { areaM2, bboxOf, type Position, type ZoneGeometry } from '../../lib/geometrie.ts';
import { dateOfIdurba, inseeOfIdurba, isoDate, pageOfReference, sirenOfIdurba, typeDocument } from './zonage.ts';

/**
 * Importer of the Géoportail de l'Urbanisme zoning (CNIG standard): a GPU upload folder (ZONE_URBA shapefile, with
 * DOC_URBA when present) or a GeoJSON FeatureCollection with the same attributes, in WGS84.
 *
 * Features are streamed into a staging table in batches, then merged in one transaction: the zones of every document
 * (IDURBA) the import brings are replaced by the imported ones (upsert on a natural key, zones no longer in the file
 * deleted), so importing the same file twice changes nothing and a reader never sees a half-imported document.
 */

export class ZonageImportError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ZonageImportError';
  }
}

export interface ZonageImportOptions {
  /** 'live' (default) or 'sandbox' (the frozen dataset of pk_test_ keys). */
  dataset?: Dataset;
  /**
   * Where the document's files are published. A zone whose URLFIC is empty gets `reglement_url` = NOMFIC resolved
   * against this URL (`https://example.org/du/30014/` + `30014_reglement_20171013.pdf#page=24`); without it such a
   * zone has no URL (its page is still kept). The GPU upload package itself never says where its PDFs will live.
   */
  baseUrl?: string;
  /** Features per staging batch (500 by default). */
  batchSize?: number;
  /**
   * The IDURBA of zones that carry none, when the source does not tell it (a GeoJSON layer of a package whose folder,
   * DOC_URBA or DOC_URBA_COM names the document).
   */
  idurbaParDefaut?: string | null;
  /** Called after each batch with the running counts. */
  onProgress?: (progress: { lus: number; gardes: number }) => void;
}

export interface ZonageImportReport {
  source: string;
  format: 'shapefile' | 'geojson';
  /** Features read. */
  lus: number;
  /** Features kept (written or already identical). */
  gardes: number;
  /**
   * Features refused, with why; `ligne` is the 1-based record number in ZONE_URBA or the feature's 1-based rank in
   * the FeatureCollection. The first 1 000 are listed; `lus - gardes` is the full count.
   */
  rejetes: Array<{ ligne: number; motif: string }>;
  /** IDURBA of the documents the import brought (DOC_URBA rows and documents of kept zones), sorted. */
  documents: string[];
  /** What the merge did to the stored zones of these documents. */
  zones: { ajoutees: number; modifiees: number; inchangees: number; supprimees: number };
}

// Bounds a batch by the size of its outlines too: one parameter of a few megabytes at most.
const MAX_OCTETS_PAR_LOT = 8_000_000;
// Zones of a dataset are merged one import at a time.
const VERROU_FUSION = 726_354_004;
// ~1 cm: more digits would be noise of the reprojection, and identical files must give identical hashes.
const DECIMALES = 1e7;

// ---------------------------------------------------------------------------------------------------------------------
// Coordinate systems.
// ---------------------------------------------------------------------------------------------------------------------

/** From the source's coordinates to WGS84 [longitude, latitude]; null when they are WGS84 already. */
export type Reprojection = ((x: number, y: number) => [number, number]) | null;

const LAMBERT_93 =
  '+proj=lcc +lat_0=46.5 +lon_0=3 +lat_1=49 +lat_2=44 +x_0=700000 +y_0=6600000 +ellps=GRS80 +towgs84=0,0,0,0,0,0,0 +units=m +no_defs';

function converter(definition: string): Reprojection {
  const forward = proj4(definition, 'WGS84').forward;
  return (x, y) => forward([x, y]) as [number, number];
}

function near(value: number | undefined, expected: number): boolean {
  return value !== undefined && Math.abs(value - expected) < 1e-6 * Math.max(1, Math.abs(expected));
}

/**
 * The reprojection to WGS84 that a `.prj` (ESRI or OGC WKT) describes: Lambert-93 (EPSG:2154, metropolitan France),
 * UTM on GRS80/WGS84 (the overseas departments), or geographic RGF93/WGS84 (none needed). Anything else is refused:
 * a wrong guess would put every zone in the wrong place.
 */
export function reprojectionOfPrj(wkt: string): Reprojection {
  const text = wkt.trim();
  const kind = /^\s*(\w+)\s*\[/.exec(text)?.[1]?.toUpperCase();
  const name = /^\s*\w+\s*\[\s*"([^"]*)"/.exec(text)?.[1] ?? kind ?? '?';
  const semiMajor = Number(/SPHEROID\s*\[\s*"[^"]*"\s*,\s*([\d.]+)/i.exec(text)?.[1]);
  const ellipsoidOk = near(semiMajor, 6_378_137);
  const refuse = (why: string) =>
    new ZonageImportError(
      `Projection non gérée (${name}) : ${why}. Sont gérés Lambert-93 (EPSG:2154), UTM (départements d'outre-mer) et les coordonnées géographiques RGF93/WGS84 ; reprojetez le fichier (par exemple ogr2ogr -t_srs EPSG:2154).`,
    );
  if (kind === 'GEOGCS' || kind === 'GEOGCRS') {
    if (!ellipsoidOk) throw refuse('ellipsoïde autre que GRS80/WGS84');
    return null;
  }
  if (kind !== 'PROJCS' && kind !== 'PROJCRS') throw refuse('WKT illisible');
  if (!ellipsoidOk) throw refuse('ellipsoïde autre que GRS80/WGS84');
  const parameters = new Map<string, number>();
  for (const match of text.matchAll(/PARAMETER\s*\[\s*"([^"]+)"\s*,\s*(-?[\d.eE+-]+)/gi)) {
    parameters.set(match[1].toLowerCase().replace(/[^a-z0-9]/g, ''), Number(match[2]));
  }
  const p = (...names: string[]) => names.map((n) => parameters.get(n)).find((v) => v !== undefined);
  const projection = /PROJECTION\s*\[\s*"([^"]+)"/i.exec(text)?.[1]?.toLowerCase() ?? '';
  if (projection.startsWith('lambert_conformal_conic')) {
    const parallels = [p('standardparallel1'), p('standardparallel2')].sort();
    const lambert93 =
      near(parallels[0], 44) &&
      near(parallels[1], 49) &&
      near(p('latitudeoforigin', 'latitudeoffalseorigin'), 46.5) &&
      near(p('centralmeridian', 'longitudeoffalseorigin'), 3) &&
      near(p('falseeasting', 'eastingatfalseorigin'), 700_000) &&
      near(p('falsenorthing', 'northingatfalseorigin'), 6_600_000);
    if (lambert93) return converter(LAMBERT_93);
    throw refuse('conique conforme autre que Lambert-93 (coniques CC ou Lambert zones non gérées)');
  }
  if (projection === 'transverse_mercator') {
    const lon0 = p('centralmeridian', 'longitudeofnaturalorigin');
    const northing = p('falsenorthing');
    const zone = lon0 === undefined ? NaN : (lon0 + 183) / 6;
    const utm =
      Number.isInteger(zone) &&
      zone >= 1 &&
      zone <= 60 &&
      near(p('scalefactor', 'scalefactoratnaturalorigin'), 0.9996) &&
      near(p('falseeasting'), 500_000) &&
      (near(northing, 0) || near(northing, 10_000_000)) &&
      near(p('latitudeoforigin', 'latitudeofnaturalorigin') ?? 0, 0);
    if (utm) return converter(`+proj=utm +zone=${zone}${near(northing, 0) ? '' : ' +south'} +ellps=GRS80 +units=m`);
    throw refuse('Mercator transverse autre que UTM');
  }
  throw refuse(`projection ${projection || 'inconnue'}`);
}

/** The reprojection a GeoJSON `crs` member (GeoJSON 2008) names; none means WGS84, as RFC 7946 says. */
export function reprojectionOfCrs(crs: unknown): Reprojection {
  const name = String((crs as { properties?: { name?: unknown } } | null)?.properties?.name ?? '');
  if (!name || /CRS84|EPSG:{1,2}(4326|4171)$/i.test(name)) return null;
  if (/EPSG:{1,2}2154$/i.test(name)) return converter(LAMBERT_93);
  throw new ZonageImportError(
    `Système de coordonnées GeoJSON non géré (${name}) : seuls WGS84 (RFC 7946) et Lambert-93 (EPSG:2154) le sont.`,
  );
}

// ---------------------------------------------------------------------------------------------------------------------
// DBF text encoding.
// ---------------------------------------------------------------------------------------------------------------------

/** The TextDecoder label of a `.cpg` (ESRI code page file): 1252, ANSI 1252, UTF-8, 65001, 8859-1, 8859-15... */
export function encodingOfCpg(cpg: string): string {
  const text = cpg
    .trim()
    .toLowerCase()
    .replace(/^ansi\s*/, '');
  let label = text;
  if (/^(utf-?8|65001)$/.test(text)) label = 'utf-8';
  else if (/^(cp|windows-?)?1252$/.test(text)) label = 'windows-1252';
  else if (/^(iso-?)?8859-?1$|^88591$|^latin-?1$/.test(text)) label = 'iso-8859-1';
  else if (/^(iso-?)?8859-?15$|^885915$/.test(text)) label = 'iso-8859-15';
  try {
    return new TextDecoder(label).encoding;
  } catch {
    throw new ZonageImportError(`Encodage du fichier .cpg inconnu : « ${cpg.trim()} ».`);
  }
}

/**
 * Without a `.cpg`: UTF-8 if the records of the DBF are valid UTF-8 (plain ASCII is both), else Windows-1252, the
 * historical code page of French shapefiles. The records only: the binary header (counts, lengths) is no text, and a
 * byte of it above 0x7F would pass a UTF-8 file for Windows-1252. All of them: a first accent may come late.
 */
export async function sniffDbfEncoding(file: string): Promise<string> {
  const handle = await openFile(file, 'r');
  try {
    const header = Buffer.alloc(12);
    await handle.read(header, 0, 12, 0);
    let position = header.readUInt16LE(8);
    const decoder = new TextDecoder('utf-8', { fatal: true });
    const buffer = Buffer.alloc(1 << 20);
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
      if (bytesRead === 0) break;
      decoder.decode(buffer.subarray(0, bytesRead), { stream: true });
      position += bytesRead;
    }
    decoder.decode();
    return 'utf-8';
  } catch {
    return 'windows-1252';
  } finally {
    await handle.close();
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Sources: a GPU folder (shapefile) or a GeoJSON file, both giving features with lower-cased attribute names.
// ---------------------------------------------------------------------------------------------------------------------

export type Attributes = Record<string, unknown>;
interface RawFeature {
  ligne: number;
  properties: Attributes;
  geometry: unknown;
  reprojection: Reprojection;
}
export type Documents = Map<string, Attributes>;

interface Source {
  format: ZonageImportReport['format'];
  documents: Documents;
  /** IDURBA to assume for zones without one (the folder's name or a single DOC_URBA document). */
  defaultIdurba: string | null;
  features(): AsyncGenerator<RawFeature | { ligne: number; motif: string }>;
}

function lowerKeys(record: Attributes | null | undefined): Attributes {
  const out: Attributes = {};
  for (const [key, value] of Object.entries(record ?? {})) out[key.toLowerCase()] = value;
  return out;
}

async function listFiles(dir: string, depth = 3): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const files: string[] = [];
  for (const entry of entries) {
    const full = path.join(dir, entry.name);
    if (entry.isFile()) files.push(full);
    else if (entry.isDirectory() && depth > 1) files.push(...(await listFiles(full, depth - 1)));
  }
  return files.sort();
}

/** The file beside `file` with the same base name and extension `ext`, whatever the case of either. */
function sibling(files: string[], file: string, ext: string): string | null {
  const base = file.slice(0, -path.extname(file).length).toLowerCase();
  return files.find((f) => f.toLowerCase() === `${base}.${ext}`) ?? null;
}

const IDURBA_NOM = /^(\d[\dAB]\d{3}|\d{9})_[A-Za-z]+_\d{8}(_[A-Za-z0-9]+)?$/;

async function openSource(source: string): Promise<Source> {
  const info = await stat(source).catch(() => null);
  if (!info) throw new ZonageImportError(`Source introuvable : ${source} (ni dossier GPU ni fichier GeoJSON).`);
  if (info.isFile()) {
    if (/\.(geo)?json$/i.test(source)) return geojsonSource(source);
    if (/\.shp$/i.test(source)) return shapefileSource(await listFiles(path.dirname(source), 1), source);
    throw new ZonageImportError(`Format non reconnu : ${source} (attendu un dossier GPU, un .shp ou un .geojson).`);
  }
  const files = await listFiles(source);
  const shps = files.filter((f) => /\.shp$/i.test(f));
  const zoneShps = shps.filter((f) => /zone_urba/i.test(path.basename(f)));
  const candidates = zoneShps.length > 0 ? zoneShps : shps;
  if (candidates.length === 1) return shapefileSource(files, candidates[0], path.basename(source));
  if (candidates.length > 1) {
    throw new ZonageImportError(
      `Plusieurs couches ZONE_URBA dans ${source} : ${candidates.map((f) => path.basename(f)).join(', ')} ; importez-les une à une.`,
    );
  }
  const geojsons = files.filter((f) => /\.(geo)?json$/i.test(f));
  const zoneGeojsons = geojsons.filter((f) => /zone_urba/i.test(path.basename(f)));
  if (zoneGeojsons.length === 1 || geojsons.length === 1) return geojsonSource(zoneGeojsons[0] ?? geojsons[0]);
  throw new ZonageImportError(`Aucune couche ZONE_URBA (.shp ou .geojson) dans ${source}.`);
}

async function readDocUrba(files: string[]): Promise<Documents> {
  const documents: Documents = new Map();
  // DOC_URBA, not DOC_URBA_COM (the communes of the document), which sorts after it and may come alone.
  const dbf = files.find((f) => /doc(ument)?_urba(?!_com)[^/]*\.dbf$/i.test(path.basename(f)));
  if (!dbf) return documents;
  const cpg = sibling(files, dbf, 'cpg');
  const encoding = cpg ? encodingOfCpg(await readFile(cpg, 'latin1')) : await sniffDbfEncoding(dbf);
  const table = await shapefile.openDbf(createReadStream(dbf), { encoding });
  for (let r = await table.read(); !r.done; r = await table.read()) {
    const row = lowerKeys(r.value);
    const idurba = text(row.idurba);
    if (!idurba) continue;
    // A document may come on several rows (one per reference map, TYPEREF): the first value given wins.
    const known = documents.get(idurba) ?? {};
    for (const [key, value] of Object.entries(row)) if (known[key] == null && value != null) known[key] = value;
    documents.set(idurba, known);
  }
  return documents;
}

async function shapefileSource(files: string[], shp: string, folderName?: string): Promise<Source> {
  const dbf = sibling(files, shp, 'dbf');
  if (!dbf) throw new ZonageImportError(`Fichier .dbf absent à côté de ${path.basename(shp)} : attributs illisibles.`);
  const prj = sibling(files, shp, 'prj');
  const cpg = sibling(files, shp, 'cpg');
  const encoding = cpg ? encodingOfCpg(await readFile(cpg, 'latin1')) : await sniffDbfEncoding(dbf);
  const documents = await readDocUrba(files);
  let reprojection: Reprojection;
  if (prj) {
    reprojection = reprojectionOfPrj(await readFile(prj, 'latin1'));
  } else {
    // The GPU requires a .prj; without one, Lambert-93 is assumed only if the extent of the layer fits it.
    const header = await shapefile.openShp(createReadStream(shp));
    const [xmin, ymin, xmax, ymax] = header.bbox;
    await header.cancel();
    if (!(xmin >= -400_000 && xmax <= 1_700_000 && ymin >= 5_900_000 && ymax <= 7_300_000)) {
      throw new ZonageImportError(
        `Fichier .prj absent à côté de ${path.basename(shp)} et emprise hors Lambert-93 : projection inconnue.`,
      );
    }
    reprojection = converter(LAMBERT_93);
  }
  const single = documents.size === 1 ? [...documents.keys()][0] : null;
  return {
    format: 'shapefile',
    documents,
    defaultIdurba: single ?? (folderName && IDURBA_NOM.test(folderName) ? folderName : null),
    async *features() {
      let layer;
      try {
        layer = await shapefile.open(createReadStream(shp), createReadStream(dbf), { encoding });
      } catch (error) {
        throw new ZonageImportError(`Shapefile illisible (${path.basename(shp)}) : ${(error as Error).message}`, {
          cause: error,
        });
      }
      let ligne = 0;
      try {
        for (;;) {
          let result;
          try {
            result = await layer.read();
          } catch (error) {
            throw new ZonageImportError(
              `Shapefile illisible après l'enregistrement ${ligne} (${path.basename(shp)}) : ${(error as Error).message}`,
              { cause: error },
            );
          }
          if (result.done) break;
          ligne++;
          yield {
            ligne,
            properties: lowerKeys(result.value.properties),
            geometry: result.value.geometry,
            reprojection,
          };
        }
      } finally {
        await layer.cancel().catch(() => {});
      }
    },
  };
}

async function geojsonSource(file: string): Promise<Source> {
  return {
    format: 'geojson',
    documents: new Map(),
    defaultIdurba: null,
    async *features() {
      let reprojection: Reprojection = null;
      for await (const item of streamFeatureCollection(file)) {
        if ('crs' in item) {
          reprojection = reprojectionOfCrs(item.crs);
          continue;
        }
        if ('motif' in item) {
          yield item;
          continue;
        }
        const feature = item.feature as { type?: unknown; properties?: Attributes; geometry?: unknown } | null;
        if (!feature || typeof feature !== 'object' || feature.type !== 'Feature') {
          yield { ligne: item.ligne, motif: 'élément du tableau features qui n’est pas une Feature' };
          continue;
        }
        yield {
          ligne: item.ligne,
          properties: lowerKeys(feature.properties),
          geometry: feature.geometry,
          reprojection,
        };
      }
    },
  };
}

/**
 * Streams the features of a GeoJSON FeatureCollection without holding the file: a small scanner follows strings and
 * nesting, cuts each element of the root `features` array and parses it alone. The root `crs` member (when it comes
 * before the features, as writers put it) is handed over too.
 */
export async function* streamFeatureCollection(
  file: string,
  /** The file's text when it is not read plainly from `file` (a gzipped file): `file` then only names it. */
  texte?: AsyncIterable<string>,
): AsyncGenerator<{ ligne: number; feature: unknown } | { ligne: number; motif: string } | { crs: unknown }> {
  let depth = 0;
  let inString = false;
  let escaped = false;
  let rootString = '';
  let lastRootString = '';
  let key: string | null = null;
  let rootType: string | null = null;
  let started = false;
  let inFeatures = false;
  let sawFeatures = false;
  let capture: string[] | null = null;
  let captureStart = -1;
  let captureKind: 'feature' | 'crs' = 'feature';
  let ligne = 0;
  const stream =
    texte ?? (createReadStream(file, { encoding: 'utf8', highWaterMark: 1 << 16 }) as AsyncIterable<string>);
  for await (const chunk of stream) {
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i];
      if (inString) {
        if (escaped) escaped = false;
        else if (c === '\\') escaped = true;
        else if (c === '"') {
          inString = false;
          if (depth === 1) {
            lastRootString = rootString;
            if (key === 'type') rootType = rootString;
          }
        } else if (depth === 1 && rootString.length < 64) rootString += c;
        continue;
      }
      if (!started) {
        if (c === '\uFEFF' || /\s/.test(c)) continue;
        if (c !== '{') throw new ZonageImportError(`${path.basename(file)} n’est pas un objet GeoJSON.`);
        started = true;
      }
      switch (c) {
        case '"':
          if (inFeatures && depth === 2) {
            throw new ZonageImportError(`${path.basename(file)} : élément non objet dans le tableau features.`);
          }
          inString = true;
          if (depth === 1) rootString = '';
          break;
        case ':':
          if (depth === 1) key = lastRootString;
          break;
        case ',':
          if (depth === 1) key = null;
          break;
        case '{':
        case '[':
          if (depth === 2 && inFeatures && c === '{') {
            capture = [];
            captureStart = i;
            captureKind = 'feature';
          } else if (depth === 1 && key === 'crs' && c === '{') {
            capture = [];
            captureStart = i;
            captureKind = 'crs';
          } else if (depth === 1 && key === 'features' && c === '[') {
            inFeatures = true;
            sawFeatures = true;
          }
          depth++;
          break;
        case '}':
        case ']':
          depth--;
          if (capture && c === '}' && depth === (captureKind === 'feature' ? 2 : 1)) {
            capture.push(chunk.slice(captureStart, i + 1));
            const json = capture.join('');
            capture = null;
            captureStart = -1;
            if (captureKind === 'crs') {
              yield { crs: JSON.parse(json) };
            } else {
              ligne++;
              let feature: unknown;
              try {
                feature = JSON.parse(json);
              } catch {
                yield { ligne, motif: 'JSON invalide' };
                break;
              }
              yield { ligne, feature };
            }
          } else if (inFeatures && depth === 1 && c === ']') {
            inFeatures = false;
          }
          break;
        default:
          if (inFeatures && depth === 2 && !/[\s,]/.test(c)) {
            throw new ZonageImportError(`${path.basename(file)} : élément non objet dans le tableau features.`);
          }
      }
      if (depth < 0) throw new ZonageImportError(`${path.basename(file)} : JSON mal formé.`);
    }
    if (capture) {
      capture.push(chunk.slice(captureStart));
      captureStart = 0;
    }
  }
  if (depth !== 0 || inString) throw new ZonageImportError(`${path.basename(file)} : JSON tronqué.`);
  if (rootType !== null && rootType !== 'FeatureCollection') {
    throw new ZonageImportError(`${path.basename(file)} : ${rootType} au lieu d’une FeatureCollection.`);
  }
  if (!sawFeatures) throw new ZonageImportError(`${path.basename(file)} : FeatureCollection sans tableau features.`);
}

// ---------------------------------------------------------------------------------------------------------------------
// One feature to one staging row.
// ---------------------------------------------------------------------------------------------------------------------

function text(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  const s = String(value).trim();
  return s === '' ? null : s;
}

function isUrl(value: string): boolean {
  return /^https?:\/\//i.test(value);
}

function resolveFile(reference: string | null, baseUrl: string | undefined): string | null {
  if (!reference) return null;
  if (isUrl(reference)) return reference;
  if (!baseUrl) return null;
  try {
    return new URL(reference, baseUrl).toString();
  } catch {
    return null;
  }
}

/** Rings closed, coordinates finite and reprojected, rounded to ~1 cm; else why the feature is rejected. */
function cleanGeometry(geometry: unknown, reprojection: Reprojection): ZoneGeometry | string {
  const g = geometry as { type?: unknown; coordinates?: unknown } | null;
  if (!g || typeof g !== 'object') return 'sans géométrie';
  if (g.type !== 'Polygon' && g.type !== 'MultiPolygon') return `géométrie ${String(g.type)} et non surfacique`;
  const polygons = (g.type === 'Polygon' ? [g.coordinates] : g.coordinates) as unknown[];
  if (!Array.isArray(polygons)) return 'géométrie sans coordonnées';
  const out: Position[][][] = [];
  for (const polygon of polygons) {
    if (!Array.isArray(polygon)) return 'géométrie mal formée';
    const rings: Position[][] = [];
    for (const [index, ring] of polygon.entries()) {
      if (!Array.isArray(ring)) return 'géométrie mal formée';
      const points: Position[] = [];
      for (const position of ring) {
        if (!Array.isArray(position)) return 'géométrie mal formée';
        let [x, y] = position as number[];
        if (!Number.isFinite(x) || !Number.isFinite(y)) return 'coordonnée non numérique';
        if (reprojection) [x, y] = reprojection(x, y);
        if (!(Math.abs(x) <= 180 && Math.abs(y) <= 90)) return 'coordonnées hors WGS84 (projection non déclarée ?)';
        points.push([Math.round(x * DECIMALES) / DECIMALES, Math.round(y * DECIMALES) / DECIMALES]);
      }
      const [first, last] = [points[0], points[points.length - 1]];
      if (first && (first[0] !== last[0] || first[1] !== last[1])) points.push([first[0], first[1]]);
      if (points.length < 4) {
        // A degenerate hole can be dropped; a degenerate outer ring leaves no polygon.
        if (index === 0) break;
        continue;
      }
      rings.push(points);
    }
    if (rings.length > 0) out.push(rings);
  }
  if (out.length === 0) return 'géométrie vide ou dégénérée';
  return out.length === 1 ? { type: 'Polygon', coordinates: out[0] } : { type: 'MultiPolygon', coordinates: out };
}

interface StagedZone {
  seq: number;
  idurba: string;
  empreinte: string;
  libelle: string;
  libelong: string | null;
  typezone: string | null;
  destdomi: string | null;
  nomfic: string | null;
  urlfic: string | null;
  reglement_url: string | null;
  reglement_page: number | null;
  datappro: string | null;
  datvalid: string | null;
  insee: string | null;
  siren: string | null;
  geometrie: ZoneGeometry;
  bbox_xmin: number;
  bbox_ymin: number;
  bbox_xmax: number;
  bbox_ymax: number;
  aire_m2: number;
}

function stage(
  feature: RawFeature,
  source: Source,
  baseUrl: string | undefined,
): { zone: StagedZone; octets: number } | string {
  const p = feature.properties;
  const libelle = text(p.libelle);
  if (!libelle) return 'LIBELLE absent';
  const idurba = text(p.idurba) ?? source.defaultIdurba;
  if (!idurba) return 'IDURBA absent';
  const geometry = cleanGeometry(feature.geometry, feature.reprojection);
  if (typeof geometry === 'string') return geometry;
  const doc = source.documents.get(idurba);
  const urlfic = text(p.urlfic);
  const nomfic = text(p.nomfic);
  const urlreg = text(doc?.urlreg);
  const nomreg = text(doc?.nomreg);
  const reglementUrl =
    resolveFile(urlfic, baseUrl) ??
    resolveFile(nomfic, baseUrl) ??
    resolveFile(urlreg, baseUrl) ??
    resolveFile(nomreg, baseUrl);
  const serialised = JSON.stringify(geometry.coordinates);
  const bbox = bboxOf(geometry);
  return {
    octets: serialised.length,
    zone: {
      seq: feature.ligne,
      idurba,
      empreinte: createHash('sha256').update(geometry.type).update(serialised).digest('hex').slice(0, 32),
      libelle,
      libelong: text(p.libelong),
      typezone: text(p.typezone),
      destdomi: text(p.destdomi),
      nomfic,
      urlfic,
      reglement_url: reglementUrl,
      reglement_page: pageOfReference(urlfic) ?? pageOfReference(nomfic) ?? pageOfReference(reglementUrl),
      datappro: isoDate(p.datappro),
      datvalid: isoDate(p.datvalid),
      insee: inseeOfIdurba(idurba),
      siren: sirenOfIdurba(idurba) ?? text(doc?.siren),
      geometrie: geometry,
      bbox_xmin: bbox.xmin,
      bbox_ymin: bbox.ymin,
      bbox_xmax: bbox.xmax,
      bbox_ymax: bbox.ymax,
      aire_m2: areaM2(geometry),
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------------
// Database.
// ---------------------------------------------------------------------------------------------------------------------

const ZONE_COLUMNS = [
  'libelle',
  'libelong',
  'typezone',
  'destdomi',
  'nomfic',
  'urlfic',
  'reglement_url',
  'reglement_page',
  'datappro',
  'datvalid',
  'insee',
  'siren',
] as const;

const STAGING_FIELDS = `idurba text, empreinte text, libelle text, libelong text, typezone text, destdomi text,
  nomfic text, urlfic text, reglement_url text, reglement_page int, datappro date, datvalid date, insee text,
  siren text, geometrie jsonb, bbox_xmin float8, bbox_ymin float8, bbox_xmax float8, bbox_ymax float8, aire_m2 float8`;
const BBOX_COLUMNS = 'bbox_xmin, bbox_ymin, bbox_xmax, bbox_ymax';

/** One batch into the staging table: a single statement, so a batch is written whole or not at all. */
async function writeBatch(client: PoolClient, batch: StagedZone[]): Promise<void> {
  await client.query(
    `INSERT INTO pg_temp.zonage_lot SELECT *, NULL FROM jsonb_to_recordset($1::jsonb) AS r(seq int, ${STAGING_FIELDS})`,
    [JSON.stringify(batch)],
  );
}

/** A row of documents_urbanisme. */
export interface DocumentRow {
  idurba: string;
  typedoc: string | null;
  etat: string | null;
  nomproc: string | null;
  datappro: string | null;
  datvalid: string | null;
  insee: string | null;
  siren: string | null;
  nomreg: string | null;
  urlreg: string | null;
  datefin: string | null;
  nomplan: string | null;
  urlplan: string | null;
  siteweb: string | null;
  depuis_doc_urba: boolean;
}

const DOCUMENT_COLUMNS = [
  'typedoc',
  'etat',
  'nomproc',
  'datappro',
  'datvalid',
  'insee',
  'siren',
  'nomreg',
  'urlreg',
  'datefin',
  'nomplan',
  'urlplan',
  'siteweb',
  'depuis_doc_urba',
] as const;

/**
 * The type of a document: DOC_URBA's TYPEDOC, else the type its IDURBA carries (`30014_PLU_20171013`), else
 * `parDefaut` (what the package's name or layers say): the IDURBA of the 2013 layout has none (`50545_20130902`).
 */
function typeOf(typedoc: string | null, idurba: string, parDefaut: string | null): string | null {
  if (typedoc) return typeDocument(typedoc, idurba);
  if (/^[A-Za-z]+$/.test(idurba.split('_')[1] ?? '')) return typeDocument(null, idurba);
  return parDefaut;
}

/**
 * The row of a document: from its DOC_URBA attributes (lower-cased names) when the package has them, else inferred
 * from its IDURBA; `datvalid` is the latest validation of its features, `typeParDefaut` the type to assume when
 * neither DOC_URBA nor the IDURBA says it.
 */
export function documentRow(
  idurba: string,
  doc: Attributes | undefined,
  datvalid: string | null,
  typeParDefaut: string | null = null,
): DocumentRow {
  return {
    idurba,
    typedoc: typeOf(text(doc?.typedoc), idurba, typeParDefaut),
    etat: text(doc?.etat),
    nomproc: text(doc?.nomproc),
    datappro: isoDate(doc?.datappro) ?? dateOfIdurba(idurba),
    datvalid: isoDate(doc?.datvalid) ?? datvalid,
    insee: inseeOfIdurba(idurba),
    siren: text(doc?.siren) ?? sirenOfIdurba(idurba),
    nomreg: text(doc?.nomreg),
    urlreg: text(doc?.urlreg),
    datefin: isoDate(doc?.datefin),
    nomplan: text(doc?.nomplan),
    urlplan: text(doc?.urlplan),
    siteweb: text(doc?.siteweb),
    depuis_doc_urba: doc !== undefined,
  };
}

/**
 * Writes documents in the caller's transaction. DOC_URBA rows are authoritative; a document inferred from features
 * never overwrites one that DOC_URBA described. An unchanged document is not rewritten.
 */
export async function ecrireDocuments(client: PoolClient, dataset: Dataset, rows: DocumentRow[]): Promise<void> {
  const documentRecord = `idurba text, ${DOCUMENT_COLUMNS.map((c) => `${c} ${c === 'depuis_doc_urba' ? 'boolean' : /^dat/.test(c) ? 'date' : 'text'}`).join(', ')}`;
  for (const depuisDocUrba of [true, false]) {
    await client.query(
      `INSERT INTO documents_urbanisme AS d (dataset, idurba, ${DOCUMENT_COLUMNS.join(', ')})
       SELECT $1, idurba, ${DOCUMENT_COLUMNS.join(', ')} FROM jsonb_to_recordset($2::jsonb) AS r(${documentRecord})
       ON CONFLICT (dataset, idurba) DO UPDATE SET ${DOCUMENT_COLUMNS.map((c) => `${c} = excluded.${c}`).join(', ')}, maj_le = now()
       WHERE ${depuisDocUrba ? '' : 'NOT d.depuis_doc_urba AND '}(${DOCUMENT_COLUMNS.map((c) => `d.${c}`).join(', ')}) IS DISTINCT FROM (${DOCUMENT_COLUMNS.map((c) => `excluded.${c}`).join(', ')})`,
      [dataset, JSON.stringify(rows.filter((r) => r.depuis_doc_urba === depuisDocUrba))],
    );
  }
}

/** The documents of the staged zones, with the latest validation date of each one's zones. */
export async function documentsDesZones(
  client: PoolClient,
): Promise<Array<{ idurba: string; datvalid: string | null }>> {
  const { rows } = await client.query<{ idurba: string; datvalid: string | null }>(
    `SELECT idurba, to_char(max(datvalid), 'YYYY-MM-DD') AS datvalid FROM pg_temp.zonage_lot GROUP BY idurba ORDER BY idurba`,
  );
  return rows;
}

/**
 * Merges the staged zones (pg_temp.zonage_lot) into zones_urbanisme, in the caller's transaction, under
 * VERROU_FUSION: the zones of every document they belong to are replaced by them. Their documents must be written.
 */
export async function fusionnerZones(client: PoolClient, dataset: Dataset): Promise<ZonageImportReport['zones']> {
  // Natural key: the outline's hash, numbered among identical outlines of the document in file order.
  await client.query(
    `UPDATE pg_temp.zonage_lot l SET cle = k.empreinte || '-' || k.n
       FROM (SELECT seq, empreinte, row_number() OVER (PARTITION BY idurba, empreinte ORDER BY seq) AS n
               FROM pg_temp.zonage_lot) k
      WHERE k.seq = l.seq`,
  );
  // The outline is part of the key: an unchanged key means an unchanged outline, only attributes are compared.
  const upserted = await client.query<{ ajoutee: boolean }>(
    `INSERT INTO zones_urbanisme AS z (dataset, idurba, cle, ${ZONE_COLUMNS.join(', ')}, geometrie, ${BBOX_COLUMNS}, aire_m2)
     SELECT $1, idurba, cle, ${ZONE_COLUMNS.join(', ')}, geometrie, ${BBOX_COLUMNS}, aire_m2
       FROM pg_temp.zonage_lot ORDER BY seq
     ON CONFLICT (dataset, idurba, cle) DO UPDATE SET ${ZONE_COLUMNS.map((c) => `${c} = excluded.${c}`).join(', ')}, maj_le = now()
     WHERE (${ZONE_COLUMNS.map((c) => `z.${c}`).join(', ')}) IS DISTINCT FROM (${ZONE_COLUMNS.map((c) => `excluded.${c}`).join(', ')})
     RETURNING (xmax = 0) AS ajoutee`,
    [dataset],
  );
  // Zones of the imported documents that the file no longer has.
  const deleted = await client.query(
    `DELETE FROM zones_urbanisme z
      WHERE z.dataset = $1
        AND z.idurba IN (SELECT DISTINCT idurba FROM pg_temp.zonage_lot)
        AND NOT EXISTS (SELECT 1 FROM pg_temp.zonage_lot l WHERE l.idurba = z.idurba AND l.cle = z.cle)`,
    [dataset],
  );
  const staged = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_temp.zonage_lot');
  const ajoutees = upserted.rows.filter((r) => r.ajoutee).length;
  return {
    ajoutees,
    modifiees: upserted.rows.length - ajoutees,
    inchangees: staged.rows[0].n - upserted.rows.length,
    supprimees: deleted.rowCount ?? 0,
  };
}

/** Takes the merge lock of a dataset's planning documents, for the caller's transaction. */
export async function verrouillerFusion(client: PoolClient, dataset: Dataset): Promise<void> {
  await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [VERROU_FUSION, dataset]);
}

async function merge(
  client: PoolClient,
  dataset: Dataset,
  documents: Documents,
): Promise<{ documents: string[]; zones: ZonageImportReport['zones'] }> {
  await client.query('BEGIN');
  try {
    await verrouillerFusion(client, dataset);
    const zoned = await documentsDesZones(client);
    const zonesDatvalid = new Map(zoned.map((r) => [r.idurba, r.datvalid]));
    await ecrireDocuments(client, dataset, [
      ...[...documents].map(([idurba, doc]) => documentRow(idurba, doc, zonesDatvalid.get(idurba) ?? null)),
      ...zoned.filter((r) => !documents.has(r.idurba)).map((r) => documentRow(r.idurba, undefined, r.datvalid)),
    ]);
    const zones = await fusionnerZones(client, dataset);
    await client.query('COMMIT');
    return { documents: [...new Set([...documents.keys(), ...zoned.map((r) => r.idurba)])].sort(), zones };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  }
}

/** The base URL of the documents' files, with the trailing slash URL resolution needs; throws when it is no URL. */
export function normaliserBaseUrl(baseUrl: string | undefined): string | undefined {
  if (!baseUrl) return undefined;
  if (!isUrl(baseUrl)) throw new ZonageImportError(`URL de base invalide : ${baseUrl} (http ou https attendu).`);
  // Without a trailing slash, URL resolution would replace the last path segment instead of appending to it.
  return baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`;
}

/**
 * Reads the zones of `source` and stages them, on `client`, into pg_temp.zonage_lot (created, or emptied when left
 * over): what `fusionnerZones` merges. The report counts the features read, kept and rejected; `documents` are the
 * DOC_URBA rows of the source.
 */
export async function preparerZonage(
  client: PoolClient,
  source: string,
  options: Omit<ZonageImportOptions, 'dataset'> = {},
): Promise<{ report: ZonageImportReport; documents: Documents }> {
  const batchSize = Math.max(1, options.batchSize ?? 500);
  const baseUrl = normaliserBaseUrl(options.baseUrl);
  const input = await openSource(source);
  input.defaultIdurba ??= options.idurbaParDefaut ?? null;
  const report: ZonageImportReport = {
    source,
    format: input.format,
    lus: 0,
    gardes: 0,
    rejetes: [],
    documents: [],
    zones: { ajoutees: 0, modifiees: 0, inchangees: 0, supprimees: 0 },
  };
  const reject = (ligne: number, motif: string) => {
    if (report.rejetes.length < MAX_REJETS_LISTES) report.rejetes.push({ ligne, motif });
  };
  await client.query('DROP TABLE IF EXISTS pg_temp.zonage_lot');
  await client.query(`CREATE TEMP TABLE zonage_lot (seq int PRIMARY KEY, ${STAGING_FIELDS}, cle text)`);
  let batch: StagedZone[] = [];
  let octets = 0;
  const flush = async () => {
    if (batch.length === 0) return;
    await writeBatch(client, batch);
    batch = [];
    octets = 0;
    options.onProgress?.({ lus: report.lus, gardes: report.gardes });
  };
  for await (const feature of input.features()) {
    report.lus++;
    if ('motif' in feature) {
      reject(feature.ligne, feature.motif);
      continue;
    }
    const staged = stage(feature, input, baseUrl);
    if (typeof staged === 'string') {
      reject(feature.ligne, staged);
      continue;
    }
    report.gardes++;
    batch.push(staged.zone);
    octets += staged.octets;
    if (batch.length >= batchSize || octets >= MAX_OCTETS_PAR_LOT) await flush();
  }
  await flush();
  return { report, documents: input.documents };
}

/**
 * Imports the zoning of `source` (a GPU upload folder, a ZONE_URBA .shp, or a GeoJSON FeatureCollection file) into
 * `dataset`. Throws ZonageImportError, with a French message, on what makes the whole source unusable (missing
 * files, unknown projection or encoding, unreadable file); a bad feature is only rejected, with its reason.
 */
export async function importZonage(
  db: Db,
  source: string,
  options: ZonageImportOptions = {},
): Promise<ZonageImportReport> {
  const dataset = options.dataset ?? 'live';
  normaliserBaseUrl(options.baseUrl);
  const client = await db.connect();
  try {
    const { report, documents } = await preparerZonage(client, source, options);
    const merged = await merge(client, dataset, documents);
    report.documents = merged.documents;
    report.zones = merged.zones;
    options.onProgress?.({ lus: report.lus, gardes: report.gardes });
    return report;
  } finally {
    await client.query('DROP TABLE IF EXISTS pg_temp.zonage_lot').catch(() => {});
    client.release();
  }
}
