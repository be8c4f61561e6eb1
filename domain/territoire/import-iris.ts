import { reconstruireDerives } from '../marche/derives.ts';
import type { Db } from '../../db/client.ts';
import { isInseeCode } from '../communes.ts';
import { codePadded } from '../import/csv.ts';
import { ligneEcriture, upsertParLots, type Lu, type Table } from '../import/ecriture.ts';
import {
  exigerFichier,
  ImportError,
  importSource,
  nouveauRapport,
  type Dataset,
  type DatasetImportOptions,
  type ImportReport,
} from '../import/source.ts';
import { areaM2, bboxOf, toWgs84, type Position, type ZoneGeometry } from '../../lib/geometrie.ts';
import { streamFeatureCollection } from '../urbanisme/formats.ts';

/**
 * Importer of IRIS outlines (Insee's sub-communal units): a GeoJSON FeatureCollection, WGS84 (RFC 7946, or a `crs`
 * naming CRS84/EPSG:4326) or Lambert-93 (EPSG:2154, reprojected), read feature by feature without holding the file.
 *
 * The code is 9 characters, commune then IRIS number. Files disagree on how they write it: IGN's CONTOURS-IRIS as
 * `CODE_IRIS` text, others as an integer (`dcomiris` 674820101, with `depcom` 67482 and `iris` 101), which loses the
 * leading zero of départements 01-09: integers are left-padded to 9 (communes to 5), and a code is rebuilt from
 * commune and IRIS number when only those are given. Outlines are upserted by code: importing the same file twice
 * changes nothing.
 */

const LOT = 200;

const TABLE: Table = {
  nom: 'iris',
  colonnes: [
    ['dataset', 'text'],
    ['code', 'text'],
    ['nom', 'text'],
    ['insee', 'text'],
    ['type', 'text'],
    ['geometrie', 'jsonb'],
    ['bbox_xmin', 'float8'],
    ['bbox_ymin', 'float8'],
    ['bbox_xmax', 'float8'],
    ['bbox_ymax', 'float8'],
    ['aire_m2', 'float8'],
  ],
  cle: ['dataset', 'code'],
  horodatage: 'maj_le',
};

/** Projected coordinates to WGS84, null for a point outside the area of the projection. */
type Reprojection = ((p: Position) => Position | null) | null;

function reprojectionDe(crs: unknown): Reprojection {
  const name = String((crs as { properties?: { name?: unknown } } | null)?.properties?.name ?? '');
  if (!name || /CRS84|EPSG:{1,2}(4326|4171)$/i.test(name)) return null;
  if (/EPSG:{1,2}2154$/i.test(name)) {
    return (p) => {
      const w = toWgs84('l93', p[0], p[1]);
      return w && [Math.round(w.lon * 1e7) / 1e7, Math.round(w.lat * 1e7) / 1e7];
    };
  }
  throw new ImportError(
    `Système de coordonnées GeoJSON non géré (${name}) : seuls WGS84 (RFC 7946) et Lambert-93 (EPSG:2154) le sont.`,
  );
}

function premier(props: Record<string, unknown>, names: string[]): unknown {
  for (const n of names) if (props[n] !== undefined && props[n] !== null && props[n] !== '') return props[n];
  return undefined;
}

/** An IRIS outline as the `iris` table holds it: its box, to read what may lie inside, and its outline, to keep it. */
export interface ContourIris {
  code: string;
  nom: string | null;
  insee: string;
  geometrie: ZoneGeometry;
  bbox_xmin: number;
  bbox_ymin: number;
  bbox_xmax: number;
  bbox_ymax: number;
}

function geometrieDe(geometry: unknown, reprojection: Reprojection): ZoneGeometry | string {
  const g = geometry as { type?: unknown; coordinates?: unknown } | null;
  if (!g || (g.type !== 'Polygon' && g.type !== 'MultiPolygon')) {
    return `géométrie ${String(g?.type ?? 'absente')} au lieu d’un Polygon ou MultiPolygon`;
  }
  const polygones = (g.type === 'Polygon' ? [g.coordinates] : g.coordinates) as unknown;
  if (!Array.isArray(polygones) || polygones.length === 0) return 'coordonnées absentes';
  const lus: Position[][][] = [];
  for (const polygone of polygones) {
    if (!Array.isArray(polygone) || polygone.length === 0) return 'polygone vide';
    const anneaux: Position[][] = [];
    for (const anneau of polygone) {
      if (!Array.isArray(anneau) || anneau.length < 4) return 'anneau de moins de 4 points';
      const points: Position[] = [];
      for (const point of anneau) {
        if (!Array.isArray(point) || typeof point[0] !== 'number' || typeof point[1] !== 'number') {
          return 'point mal formé';
        }
        const p = reprojection ? reprojection(point) : [point[0], point[1]];
        if (!p) return `coordonnées Lambert-93 (${point[0]}, ${point[1]}) hors de la France métropolitaine`;
        if (!Number.isFinite(p[0]) || !Number.isFinite(p[1]) || Math.abs(p[0]) > 180 || Math.abs(p[1]) > 90) {
          return `coordonnées hors WGS84 (${point[0]}, ${point[1]}) : un fichier en Lambert-93 doit le dire (crs EPSG:2154)`;
        }
        points.push(p);
      }
      anneaux.push(points);
    }
    lus.push(anneaux);
  }
  return g.type === 'Polygon' ? { type: 'Polygon', coordinates: lus[0] } : { type: 'MultiPolygon', coordinates: lus };
}

function irisDe(feature: unknown, reprojection: Reprojection, dataset: Dataset, ligne: number): Lu | string {
  const f = feature as { type?: unknown; properties?: unknown; geometry?: unknown } | null;
  if (!f || f.type !== 'Feature') return 'élément autre qu’une Feature';
  const props = Object.fromEntries(
    Object.entries((f.properties ?? {}) as Record<string, unknown>).map(([k, v]) => [k.toLowerCase(), v]),
  );
  const communeBrute = premier(props, ['insee_com', 'depcom', 'code_insee', 'insee', 'codgeo_com', 'com']);
  let insee = communeBrute === undefined ? null : codePadded(communeBrute, 5);
  const codeBrut = premier(props, ['code_iris', 'dcomiris', 'iris_code', 'codgeo', 'code']);
  let code = codeBrut === undefined ? null : codePadded(codeBrut, 9);
  if (code === null && codeBrut === undefined && insee !== null) {
    const numero = premier(props, ['iris', 'num_iris']);
    const n = numero === undefined ? null : codePadded(numero, 4);
    if (n !== null) code = insee + n;
  }
  if (code === null) return `code IRIS absent ou invalide (${String(codeBrut ?? 'absent').slice(0, 20)})`;
  if (!/^(?:\d{2}|2[AB])\d{7}$/.test(code)) return `code IRIS invalide (${code})`;
  insee ??= code.slice(0, 5);
  if (!isInseeCode(insee)) return `code commune invalide (${insee})`;
  if (!code.startsWith(insee)) return `le code IRIS ${code} n’est pas dans la commune ${insee}`;
  const geometrie = geometrieDe(f.geometry, reprojection);
  if (typeof geometrie === 'string') return geometrie;
  const bbox = bboxOf(geometrie);
  const nom = premier(props, ['nom_iris', 'name', 'nom', 'libelle', 'lib_iris', 'libiris']);
  const type = premier(props, ['typ_iris', 'type_iris', 'typ']);
  return {
    ligne,
    row: {
      dataset,
      code,
      nom: nom === undefined ? null : String(nom).trim(),
      insee,
      type: type === undefined ? null : String(type).trim().toUpperCase(),
      geometrie,
      bbox_xmin: bbox.xmin,
      bbox_ymin: bbox.ymin,
      bbox_xmax: bbox.xmax,
      bbox_ymax: bbox.ymax,
      aire_m2: Math.round(areaM2(geometrie)),
    },
  };
}

/** Imports the IRIS outlines of a GeoJSON FeatureCollection into `dataset`; a bad feature is rejected with why. */
export async function importIris(db: Db, file: string, options: DatasetImportOptions = {}): Promise<ImportReport> {
  const dataset = options.dataset ?? 'live';
  await exigerFichier(file);
  const { report, rejeter } = nouveauRapport(file);
  let reprojection: Reprojection = null;
  const communes = new Set<string>();
  const lots = upsertParLots<Lu>(db, {
    table: TABLE,
    taille: LOT,
    cle: (l) => l.row.code as string,
    report,
    rejeter,
    onProgress: options.onProgress,
  });

  for await (const item of streamFeatureCollection(file)) {
    if ('crs' in item) {
      reprojection = reprojectionDe(item.crs);
      continue;
    }
    report.lus++;
    const lu = 'motif' in item ? item.motif : irisDe(item.feature, reprojection, dataset, item.ligne);
    if (typeof lu === 'string') {
      rejeter(item.ligne, lu);
      continue;
    }
    communes.add(lu.row.insee as string);
    await lots.garder(lu);
  }
  const ecriture = await lots.terminer();
  report.details.push(ligneEcriture('IRIS', report.gardes, ecriture), `communes : ${communes.size}`);
  // The quarter prices of the Communes market are made from these outlines (domain/marche/iris.ts).
  await reconstruireDerives(db, dataset);
  return report;
}

/** The `iris` source of the importers' CLI. */
export const irisSource = importSource(
  'iris',
  'contours IRIS (Insee/IGN) : GeoJSON FeatureCollection en WGS84 ou Lambert-93, codes texte ou entiers',
  importIris,
);
