import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import type { PoolClient } from 'pg';
import * as shapefile from 'shapefile';
import { areaM2, type BoundingBox, type Position } from '../../lib/geometrie.ts';
import { ImportError, type Dataset } from '../import/source.ts';
import {
  encodingOfCpg,
  reprojectionLambert93,
  reprojectionOfCrs,
  reprojectionOfPrj,
  sniffDbfEncoding,
  streamFeatureCollection,
  type Attributes,
  type Reprojection,
} from './formats.ts';

/**
 * The vector layers of the planning, easement and cadastre packages, read alike whatever their year or producer: a
 * shapefile (.shp + .dbf, its .prj for the coordinate system, its .cpg for the DBF's encoding) or a GeoJSON file (plain
 * or gzipped), and DBF tables alone (DOC_URBA, SERVITUDE...). Attribute names are lower-cased, so that `IDURBA`,
 * `IdGen` and `idgen` are one field; values keep the type the file gives (a DBF numeric field gives a number), and the
 * helpers below read them as the standard means them (a type code of two digits, an identifier as text).
 *
 * A DBF without `.cpg` is read in the encoding its bytes show: UTF-8 when they decode as UTF-8, else Windows-1252.
 * Geometries are reprojected to WGS84 (Lambert-93, UTM, or whatever `.prj` formats.ts knows), rounded to
 * ~1 cm, and checked: a feature whose geometry cannot be read is rejected with its reason, never the whole layer.
 */

export type { Attributes };

/** How a feature lies on the map: what point reads do with it (inside a surface, near a line or a point). */
export type Forme = 'surface' | 'ligne' | 'point';

export type GeometrieObjet =
  | { type: 'Polygon'; coordinates: Position[][] }
  | { type: 'MultiPolygon'; coordinates: Position[][][] }
  | { type: 'LineString'; coordinates: Position[] }
  | { type: 'MultiLineString'; coordinates: Position[][] }
  | { type: 'Point'; coordinates: Position }
  | { type: 'MultiPoint'; coordinates: Position[] };

/** A feature read from a layer, before its geometry is checked; `ligne` is its 1-based rank in the layer. */
export interface ObjetLu {
  ligne: number;
  proprietes: Attributes;
  geometrie: unknown;
  reprojection: Reprojection;
}

/** A feature, or why one could not be read at all. */
export type Lecture = ObjetLu | { ligne: number; motif: string };

// ~1 cm: more digits would be noise of the reprojection, and identical files must give identical hashes.
const DECIMALES = 1e7;

// ---------------------------------------------------------------------------------------------------------------------
// Files.
// ---------------------------------------------------------------------------------------------------------------------

/** The files under `dir`, at most `profondeur` levels down, sorted. */
export async function listerFichiers(dir: string, profondeur = 4): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const files: string[] = [];
  for (const entry of entries) {
    const full = path.join(dir, entry.name);
    if (entry.isFile()) files.push(full);
    else if (entry.isDirectory() && profondeur > 1) files.push(...(await listerFichiers(full, profondeur - 1)));
  }
  return files.sort();
}

/** The file beside `file` with the same base name and extension `ext`, whatever the case of either. */
export function voisin(fichiers: readonly string[], fichier: string, ext: string): string | null {
  const base = fichier.slice(0, -path.extname(fichier).length).toLowerCase();
  return fichiers.find((f) => f.toLowerCase() === `${base}.${ext}`) ?? null;
}

/**
 * The name of a layer as the standards spell it: the base name without extension (`.json.gz` included), upper case,
 * dashes, dots and spaces as underscores (`zone-urba.geojson` is ZONE_URBA).
 */
export function nomDeCouche(fichier: string): string {
  return path
    .basename(fichier)
    .replace(/(\.(geo)?json)?(\.gz)?$|\.[^.]+$/i, '')
    .toUpperCase()
    .replace(/[\s.-]+/g, '_');
}

/** The kinds of files a package is made of. */
export type FormatFichier = 'shapefile' | 'geojson' | 'dbf' | 'mapinfo' | 'autre';

/** What a file is: a layer (.shp, .geojson, .json), a table (.dbf not beside a .shp), a MapInfo layer, or else. */
export function formatDe(fichier: string, fichiers: readonly string[]): FormatFichier {
  const ext = path.extname(fichier).toLowerCase();
  if (ext === '.shp') return 'shapefile';
  if (/\.(geo)?json(\.gz)?$/i.test(fichier)) return 'geojson';
  if (ext === '.dbf') return voisin(fichiers, fichier, 'shp') ? 'autre' : 'dbf';
  if (ext === '.tab' || ext === '.mif') return 'mapinfo';
  return 'autre';
}

/**
 * The sentence that refuses a package published in MapInfo format (TAB or MIF/MID, which the CNIG standard allows):
 * its layers are not read here, and the conversion to run is named.
 */
export function refusMapInfo(dossier: string, couches: string[]): ImportError {
  const sortie = `${dossier.replace(/[/\\]+$/, '')}-shp`;
  return new ImportError(
    `${dossier} est au format MapInfo (${couches.map((c) => path.basename(c)).join(', ')}), qui n’est pas lu ici : convertissez-le d’abord en shapefile avec ogr2ogr -f "ESRI Shapefile" -lco ENCODING=UTF-8 "${sortie}" "${dossier}", puis importez "${sortie}".`,
  );
}

/** Subfolders of an upload package (CNIG): their files belong to the package of the folder above them. */
const SOUS_DOSSIERS =
  /^(donnees_geographiques|pieces_ecrites|actes|annexes|metadonnees|reglement|rapport_de_presentation)$/i;

/**
 * Groups files into packages: a file belongs to the nearest folder above it whose name is a package's
 * (`estNomDePaquet`), else to its own folder (the folder above for a standard subfolder: Donnees_geographiques...).
 * Packages in the order of their first file.
 */
export function regrouperEnPaquets(
  fichiers: readonly string[],
  estNomDePaquet: (nom: string) => boolean,
): Map<string, string[]> {
  const paquets = new Map<string, string[]>();
  for (const fichier of fichiers) {
    let racine: string | null = null;
    let dir = path.dirname(fichier);
    for (let i = 0; i < 4 && dir !== path.dirname(dir); i++, dir = path.dirname(dir)) {
      if (estNomDePaquet(path.basename(dir))) {
        racine = dir;
        break;
      }
    }
    if (!racine) {
      racine = path.dirname(fichier);
      if (SOUS_DOSSIERS.test(path.basename(racine))) racine = path.dirname(racine);
    }
    const liste = paquets.get(racine) ?? [];
    liste.push(fichier);
    paquets.set(racine, liste);
  }
  return paquets;
}

// ---------------------------------------------------------------------------------------------------------------------
// Reading.
// ---------------------------------------------------------------------------------------------------------------------

/** The encoding of a DBF: what its `.cpg` says, else what its bytes show (UTF-8, else Windows-1252). */
export async function encodageDbf(dbf: string, fichiers: readonly string[]): Promise<string> {
  const cpg = voisin(fichiers, dbf, 'cpg');
  try {
    return cpg ? encodingOfCpg(await readFile(cpg, 'latin1')) : await sniffDbfEncoding(dbf);
  } catch (error) {
    throw new ImportError(`${path.basename(dbf)} : ${(error as Error).message}`);
  }
}

/** The text of a file, plain or gzipped (told by its first bytes), as UTF-8 chunks. */
export async function texteDuFichier(fichier: string): Promise<AsyncIterable<string>> {
  const head = Buffer.alloc(2);
  const handle = await open(fichier, 'r');
  try {
    await handle.read(head, 0, 2, 0);
  } finally {
    await handle.close();
  }
  let flux: Readable = createReadStream(fichier, { highWaterMark: 1 << 16 });
  if (head[0] === 0x1f && head[1] === 0x8b) flux = flux.pipe(createGunzip());
  flux.setEncoding('utf8');
  return flux as AsyncIterable<string>;
}

/** Rows of a DBF table, attribute names lower-cased, `ligne` their 1-based rank. */
export async function* lireTable(
  dbf: string,
  fichiers: readonly string[],
): AsyncGenerator<{ ligne: number; proprietes: Attributes }> {
  const encoding = await encodageDbf(dbf, fichiers);
  let table;
  try {
    table = await shapefile.openDbf(createReadStream(dbf), { encoding });
  } catch (error) {
    throw new ImportError(`Table illisible (${path.basename(dbf)}) : ${(error as Error).message}`);
  }
  let ligne = 0;
  try {
    for (;;) {
      let r;
      try {
        r = await table.read();
      } catch (error) {
        throw new ImportError(
          `Table illisible après la ligne ${ligne} (${path.basename(dbf)}) : ${(error as Error).message}`,
        );
      }
      if (r.done) break;
      yield { ligne: ++ligne, proprietes: minuscules(r.value) };
    }
  } finally {
    await table.cancel().catch(() => {});
  }
}

function minuscules(record: Attributes | null | undefined): Attributes {
  const out: Attributes = {};
  for (const [key, value] of Object.entries(record ?? {})) out[key.toLowerCase()] = value;
  return out;
}

/** The reprojection of a shapefile: its `.prj`, else Lambert-93 when the layer's extent fits it, else refused. */
async function reprojectionDuShapefile(shp: string, fichiers: readonly string[]): Promise<Reprojection> {
  const prj = voisin(fichiers, shp, 'prj');
  if (prj) {
    try {
      return reprojectionOfPrj(await readFile(prj, 'latin1'));
    } catch (error) {
      throw new ImportError(`${path.basename(prj)} : ${(error as Error).message}`);
    }
  }
  const header = await shapefile.openShp(createReadStream(shp));
  const [xmin, ymin, xmax, ymax] = header.bbox;
  await header.cancel();
  if (!(xmin >= -400_000 && xmax <= 1_700_000 && ymin >= 5_900_000 && ymax <= 7_300_000)) {
    throw new ImportError(
      `Fichier .prj absent à côté de ${path.basename(shp)} et emprise hors Lambert-93 : projection inconnue.`,
    );
  }
  return reprojectionLambert93();
}

/**
 * The features of a layer: a shapefile (its .dbf beside it, in the encoding of its .cpg or of its bytes) or a
 * GeoJSON FeatureCollection (plain or gzipped; WGS84, or Lambert-93 when its `crs` says so).
 */
export async function* lireCouche(fichier: string, fichiers: readonly string[]): AsyncGenerator<Lecture> {
  if (formatDe(fichier, fichiers) === 'geojson') {
    let reprojection: Reprojection = null;
    for await (const item of streamFeatureCollection(fichier, await texteDuFichier(fichier))) {
      if ('crs' in item) {
        reprojection = reprojectionOfCrs(item.crs);
        continue;
      }
      if ('motif' in item) {
        yield item;
        continue;
      }
      const feature = item.feature as { type?: unknown; id?: unknown; properties?: Attributes; geometry?: unknown };
      if (!feature || typeof feature !== 'object' || feature.type !== 'Feature') {
        yield { ligne: item.ligne, motif: 'élément du tableau features qui n’est pas une Feature' };
        continue;
      }
      const proprietes = minuscules(feature.properties);
      // The feature's own id (the Etalab cadastre's parcel id), when its properties do not repeat it.
      if (feature.id !== undefined && proprietes.id === undefined) proprietes.id = feature.id;
      yield { ligne: item.ligne, proprietes, geometrie: feature.geometry, reprojection };
    }
    return;
  }
  const dbf = voisin(fichiers, fichier, 'dbf');
  if (!dbf) throw new ImportError(`Fichier .dbf absent à côté de ${path.basename(fichier)} : attributs illisibles.`);
  const encoding = await encodageDbf(dbf, fichiers);
  const reprojection = await reprojectionDuShapefile(fichier, fichiers);
  let layer;
  try {
    layer = await shapefile.open(createReadStream(fichier), createReadStream(dbf), { encoding });
  } catch (error) {
    throw new ImportError(`Shapefile illisible (${path.basename(fichier)}) : ${(error as Error).message}`);
  }
  let ligne = 0;
  try {
    for (;;) {
      let result;
      try {
        result = await layer.read();
      } catch (error) {
        throw new ImportError(
          `Shapefile illisible après l'enregistrement ${ligne} (${path.basename(fichier)}) : ${(error as Error).message}`,
        );
      }
      if (result.done) break;
      ligne++;
      yield { ligne, proprietes: minuscules(result.value.properties), geometrie: result.value.geometry, reprojection };
    }
  } finally {
    await layer.cancel().catch(() => {});
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Geometry.
// ---------------------------------------------------------------------------------------------------------------------

const FORMES: Record<GeometrieObjet['type'], Forme> = {
  Polygon: 'surface',
  MultiPolygon: 'surface',
  LineString: 'ligne',
  MultiLineString: 'ligne',
  Point: 'point',
  MultiPoint: 'point',
};

type Lue<T> = T | string;

function position(p: unknown, reprojection: Reprojection): Lue<Position> {
  if (!Array.isArray(p)) return 'géométrie mal formée';
  let [x, y] = p as number[];
  if (typeof x !== 'number' || typeof y !== 'number' || !Number.isFinite(x) || !Number.isFinite(y)) {
    return 'coordonnée non numérique';
  }
  if (reprojection) [x, y] = reprojection(x, y);
  if (!(Math.abs(x) <= 180 && Math.abs(y) <= 90)) return 'coordonnées hors WGS84 (projection non déclarée ?)';
  return [Math.round(x * DECIMALES) / DECIMALES, Math.round(y * DECIMALES) / DECIMALES];
}

function positions(list: unknown, reprojection: Reprojection): Lue<Position[]> {
  if (!Array.isArray(list)) return 'géométrie mal formée';
  const out: Position[] = [];
  for (const p of list) {
    const read = position(p, reprojection);
    if (typeof read === 'string') return read;
    out.push(read);
  }
  return out;
}

/** Rings closed; a degenerate hole dropped, a degenerate outer ring drops its polygon. */
function polygone(rings: unknown, reprojection: Reprojection): Lue<Position[][] | null> {
  if (!Array.isArray(rings)) return 'géométrie mal formée';
  const out: Position[][] = [];
  for (const [index, ring] of rings.entries()) {
    const points = positions(ring, reprojection);
    if (typeof points === 'string') return points;
    const [first, last] = [points[0], points[points.length - 1]];
    if (first && (first[0] !== last[0] || first[1] !== last[1])) points.push([first[0], first[1]]);
    if (points.length < 4) {
      if (index === 0) return null;
      continue;
    }
    out.push(points);
  }
  return out.length > 0 ? out : null;
}

/** A line of two distinct points at least; null when degenerate. */
function ligne(list: unknown, reprojection: Reprojection): Lue<Position[] | null> {
  const points = positions(list, reprojection);
  if (typeof points === 'string') return points;
  return points.some((p) => p[0] !== points[0][0] || p[1] !== points[0][1]) ? points : null;
}

/**
 * A feature's geometry, reprojected to WGS84, rounded to ~1 cm, rings closed, degenerate parts dropped, with its
 * shape; else why the feature is rejected. Points, lines and surfaces, single or multiple.
 */
export function nettoyerGeometrie(
  geometry: unknown,
  reprojection: Reprojection,
): { geometrie: GeometrieObjet; forme: Forme } | string {
  const g = geometry as { type?: unknown; coordinates?: unknown } | null;
  if (!g || typeof g !== 'object') return 'sans géométrie';
  const type = g.type as GeometrieObjet['type'];
  if (!(type in FORMES)) return `géométrie ${String(g.type)} non gérée`;
  if (!Array.isArray(g.coordinates)) return 'géométrie sans coordonnées';
  const vide = 'géométrie vide ou dégénérée';
  let geometrie: GeometrieObjet;
  switch (type) {
    case 'Point': {
      const p = position(g.coordinates, reprojection);
      if (typeof p === 'string') return p;
      geometrie = { type, coordinates: p };
      break;
    }
    case 'MultiPoint': {
      const ps = positions(g.coordinates, reprojection);
      if (typeof ps === 'string') return ps;
      if (ps.length === 0) return vide;
      geometrie = { type, coordinates: ps };
      break;
    }
    case 'LineString': {
      const l = ligne(g.coordinates, reprojection);
      if (typeof l === 'string') return l;
      if (!l) return vide;
      geometrie = { type, coordinates: l };
      break;
    }
    case 'MultiLineString': {
      const lines: Position[][] = [];
      for (const part of g.coordinates) {
        const l = ligne(part, reprojection);
        if (typeof l === 'string') return l;
        if (l) lines.push(l);
      }
      if (lines.length === 0) return vide;
      geometrie = { type, coordinates: lines };
      break;
    }
    case 'Polygon': {
      const p = polygone(g.coordinates, reprojection);
      if (typeof p === 'string') return p;
      if (!p) return vide;
      geometrie = { type, coordinates: p };
      break;
    }
    case 'MultiPolygon': {
      const polygons: Position[][][] = [];
      for (const part of g.coordinates) {
        const p = polygone(part, reprojection);
        if (typeof p === 'string') return p;
        if (p) polygons.push(p);
      }
      if (polygons.length === 0) return vide;
      geometrie =
        polygons.length === 1 ? { type: 'Polygon', coordinates: polygons[0] } : { type, coordinates: polygons };
      break;
    }
  }
  return { geometrie, forme: FORMES[geometrie.type] };
}

/** Every position of a geometry (the outer rings alone for surfaces: holes lie inside them). */
function* sommets(g: GeometrieObjet): Generator<Position> {
  switch (g.type) {
    case 'Point':
      yield g.coordinates;
      break;
    case 'MultiPoint':
    case 'LineString':
      yield* g.coordinates;
      break;
    case 'MultiLineString':
      for (const l of g.coordinates) yield* l;
      break;
    case 'Polygon':
      yield* g.coordinates[0] ?? [];
      break;
    case 'MultiPolygon':
      for (const p of g.coordinates) yield* p[0] ?? [];
      break;
  }
}

/** The bounding box of any geometry, in degrees: what the GiST index of the box prefilters on. */
export function emprise(g: GeometrieObjet): BoundingBox {
  let xmin = Infinity;
  let ymin = Infinity;
  let xmax = -Infinity;
  let ymax = -Infinity;
  for (const [x, y] of sommets(g)) {
    if (x < xmin) xmin = x;
    if (x > xmax) xmax = x;
    if (y < ymin) ymin = y;
    if (y > ymax) ymax = y;
  }
  return { xmin, ymin, xmax, ymax };
}

/** The area of a surface in m², null for lines and points. */
export function aireDe(g: GeometrieObjet): number | null {
  return g.type === 'Polygon' || g.type === 'MultiPolygon' ? areaM2(g) : null;
}

/** A hash of the geometry (its type and rounded coordinates): the stable part of a feature's natural key. */
export function empreinteDe(g: GeometrieObjet): string {
  return createHash('sha256').update(g.type).update(JSON.stringify(g.coordinates)).digest('hex').slice(0, 32);
}

// ---------------------------------------------------------------------------------------------------------------------
// Values as the standards mean them, whatever type the file gave them.
// ---------------------------------------------------------------------------------------------------------------------

/** A text value, trimmed; null when empty. Numbers as written (an integral one without decimals). */
export function texte(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : null;
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString().slice(0, 10);
  const s = String(value).trim();
  return s === '' ? null : s;
}

/**
 * A code of a CNIG nomenclature (TYPEPSC, STYPEPSC, TYPEINF, TYPESECT...): two digits, whether the DBF field is text
 * (`07`) or numeric (7, the leading zero lost), or the text as written when it is not a number.
 */
export function codeNomenclature(value: unknown): string | null {
  const t = texte(value);
  if (t === null) return null;
  return /^\d$/.test(t) ? `0${t}` : t;
}

/**
 * An identifier (IDSUP, IDACTE, IDGEN...) as text, whatever its field's type: a numeric one without its decimals
 * (`35.00` read as 35 gives `35`), a text one trimmed.
 */
export function identifiant(value: unknown): string | null {
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : null;
  const t = texte(value);
  if (t === null) return null;
  return /^-?\d+\.0*$/.test(t) ? t.replace(/\.0*$/, '') : t;
}

/** A number, from a numeric field or a text one (decimal comma allowed); null when none. */
export function nombre(value: unknown): number | null {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  const t = texte(value);
  if (t === null) return null;
  const n = Number(t.replace(',', '.'));
  return Number.isFinite(n) ? n : null;
}

/** A yes/no field: T/F, Y/N, O/N, oui/non, true/false, 1/0 (a DBF logical field gives a boolean). */
export function booleen(value: unknown): boolean | null {
  if (typeof value === 'boolean') return value;
  const t = texte(value)?.toLowerCase();
  if (t === undefined || t === null) return null;
  if (['t', 'y', 'o', 'oui', 'vrai', 'true', '1'].includes(t)) return true;
  if (['f', 'n', 'non', 'faux', 'false', '0'].includes(t)) return false;
  return null;
}

/** The first of several names a field goes by (`nomsuplitt`, `nomsupcour`...) that has a value. */
export function champ(p: Attributes, ...noms: string[]): unknown {
  for (const nom of noms) {
    const v = p[nom];
    if (v !== null && v !== undefined && !(typeof v === 'string' && v.trim() === '')) return v;
  }
  return null;
}

// ---------------------------------------------------------------------------------------------------------------------
// Merge of staged features.
// ---------------------------------------------------------------------------------------------------------------------

/** What a merge did to the stored rows. */
export interface Comptes {
  ajoutees: number;
  modifiees: number;
  inchangees: number;
  supprimees: number;
}

/**
 * Merges the features staged in `pg_temp.<staging>` (columns `seq`, `empreinte`, `cle` empty, and the target's) into
 * `cible`, in the caller's transaction. Natural key: the geometry's hash, numbered among identical geometries of the
 * same `partition` (document, nature; package) in file order: an unchanged key means an unchanged geometry, so only
 * `colonnes` are compared, and a row is rewritten only when one differs. The rows of the `portee` (the documents or
 * packages imported; of the layers read, when `filtre` says them) that the staging no longer has are deleted.
 */
export async function fusionnerObjets(
  client: PoolClient,
  dataset: Dataset,
  o: {
    staging: string;
    cible: string;
    partition: string[];
    colonnes: readonly string[];
    /** Written when a row is added, never compared (they follow from the key: the shape of the geometry). */
    extra: string[];
    portee: { colonne: string; valeurs: string[] };
    /** Only the rows whose column has one of these values are replaced (the layers read). */
    filtre?: { colonne: string; valeurs: string[] };
  },
): Promise<Comptes> {
  const cle = o.partition.join(', ');
  await client.query(
    `UPDATE pg_temp.${o.staging} l SET cle = k.empreinte || '-' || k.n
       FROM (SELECT seq, empreinte, row_number() OVER (PARTITION BY ${cle}, empreinte ORDER BY seq) AS n
               FROM pg_temp.${o.staging}) k
      WHERE k.seq = l.seq`,
  );
  // The deletion below is an anti-join the planner may run as a nested loop (the stored table's statistics lag behind
  // an import): the staged keys are indexed, so that each probe is one lookup.
  await client.query(`CREATE INDEX ON pg_temp.${o.staging} (${cle}, cle)`);
  await client.query(`ANALYZE pg_temp.${o.staging}`);
  const colonnes = [...o.colonnes];
  const toutes = [
    ...o.partition,
    'cle',
    ...colonnes,
    ...o.extra,
    'geometrie',
    'bbox_xmin',
    'bbox_ymin',
    'bbox_xmax',
    'bbox_ymax',
    'aire_m2',
  ];
  const upserted = await client.query<{ ajoutee: boolean }>(
    `INSERT INTO ${o.cible} AS t (dataset, ${toutes.join(', ')})
     SELECT $1, ${toutes.join(', ')} FROM pg_temp.${o.staging} ORDER BY seq
     ON CONFLICT (dataset, ${cle}, cle) DO UPDATE SET ${colonnes.map((c) => `${c} = excluded.${c}`).join(', ')}, maj_le = now()
     WHERE (${colonnes.map((c) => `t.${c}`).join(', ')}) IS DISTINCT FROM (${colonnes.map((c) => `excluded.${c}`).join(', ')})
     RETURNING (xmax = 0) AS ajoutee`,
    [dataset],
  );
  const filtre = o.filtre ? `AND t.${o.filtre.colonne} = ANY ($3::text[])` : '';
  const deleted = await client.query(
    `DELETE FROM ${o.cible} t
      WHERE t.dataset = $1 AND t.${o.portee.colonne} = ANY ($2::text[]) ${filtre}
        AND NOT EXISTS (SELECT 1 FROM pg_temp.${o.staging} l
                         WHERE ${o.partition.map((c) => `l.${c} = t.${c}`).join(' AND ')} AND l.cle = t.cle)`,
    o.filtre ? [dataset, o.portee.valeurs, o.filtre.valeurs] : [dataset, o.portee.valeurs],
  );
  const staged = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_temp.${o.staging}`);
  const ajoutees = upserted.rows.filter((r) => r.ajoutee).length;
  return {
    ajoutees,
    modifiees: upserted.rows.length - ajoutees,
    inchangees: staged.rows[0].n - upserted.rows.length,
    supprimees: deleted.rowCount ?? 0,
  };
}
