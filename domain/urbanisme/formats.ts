import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import path from 'node:path';
import proj4 from 'proj4';
import { LAMBERT_93 } from '../../lib/geometrie.ts';
import { ImportError } from '../import/source.ts';

/**
 * The file formats of planning layers, below any layer: the coordinate system a `.prj` or a GeoJSON `crs` declares,
 * the text encoding of a DBF (its `.cpg`, else its bytes), and a streaming reader of GeoJSON FeatureCollections.
 * couches.ts reads layers and tables with them; the IRIS importer streams its GeoJSON with them. What they refuse
 * (an unknown projection, code page or malformed GeoJSON) makes the whole file unusable: an ImportError.
 */

/** Attributes of a feature or a table row, as the file gives them. */
export type Attributes = Record<string, unknown>;

// ---------------------------------------------------------------------------------------------------------------------
// Coordinate systems.
// ---------------------------------------------------------------------------------------------------------------------

/** From the source's coordinates to WGS84 [longitude, latitude]; null when they are WGS84 already. */
export type Reprojection = ((x: number, y: number) => [number, number]) | null;

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
    new ImportError(
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
  throw new ImportError(
    `Système de coordonnées GeoJSON non géré (${name}) : seuls WGS84 (RFC 7946) et Lambert-93 (EPSG:2154) le sont.`,
  );
}

/** From Lambert-93 (EPSG:2154): what a shapefile without `.prj` is taken to be when its extent fits. */
export function reprojectionLambert93(): Reprojection {
  return converter(LAMBERT_93);
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
    throw new ImportError(`Encodage du fichier .cpg inconnu : « ${cpg.trim()} ».`);
  }
}

/**
 * Without a `.cpg`: UTF-8 if the records of the DBF are valid UTF-8 (plain ASCII is both), else Windows-1252, the
 * historical code page of French shapefiles. The records only: the binary header (counts, lengths) is no text, and a
 * byte of it above 0x7F would pass a UTF-8 file for Windows-1252. All of them: a first accent may come late.
 */
export async function sniffDbfEncoding(file: string): Promise<string> {
  const handle = await open(file, 'r');
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
// GeoJSON.
// ---------------------------------------------------------------------------------------------------------------------

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
        if (c !== '{') throw new ImportError(`${path.basename(file)} n’est pas un objet GeoJSON.`);
        started = true;
      }
      switch (c) {
        case '"':
          if (inFeatures && depth === 2) {
            throw new ImportError(`${path.basename(file)} : élément non objet dans le tableau features.`);
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
            throw new ImportError(`${path.basename(file)} : élément non objet dans le tableau features.`);
          }
      }
      if (depth < 0) throw new ImportError(`${path.basename(file)} : JSON mal formé.`);
    }
    if (capture) {
      capture.push(chunk.slice(captureStart));
      captureStart = 0;
    }
  }
  if (depth !== 0 || inString) throw new ImportError(`${path.basename(file)} : JSON tronqué.`);
  if (rootType !== null && rootType !== 'FeatureCollection') {
    throw new ImportError(`${path.basename(file)} : ${rootType} au lieu d’une FeatureCollection.`);
  }
  if (!sawFeatures) throw new ImportError(`${path.basename(file)} : FeatureCollection sans tableau features.`);
}
