import { createHash } from 'node:crypto';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import type { PoolClient } from 'pg';
import type { Db } from '../../db/client.ts';
import { areaM2, bboxOf, type ZoneGeometry } from '../../lib/geometrie.ts';
import { ImportError, MAX_REJETS_LISTES, type Dataset } from '../import/source.ts';
import {
  lireCouche,
  lireTable,
  listerFichiers,
  nettoyerGeometrie,
  texte,
  type Attributes,
  type Lecture,
  type ObjetLu,
} from './couches.ts';
import { dateOfIdurba, inseeOfIdurba, isoDate, pageOfReference, sirenOfIdurba, typeDocument } from './zonage.ts';

/**
 * Importer of the Géoportail de l'Urbanisme zoning (CNIG standard): a GPU upload folder (ZONE_URBA shapefile, with
 * DOC_URBA when present) or a GeoJSON FeatureCollection with the same attributes, in WGS84.
 *
 * Features are streamed into a staging table in batches, then merged in one transaction: the zones of every document
 * (IDURBA) the import brings are replaced by the imported ones (upsert on a natural key, zones no longer in the file
 * deleted), so importing the same file twice changes nothing and a reader never sees a half-imported document.
 */

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

// ---------------------------------------------------------------------------------------------------------------------
// Sources: a GPU folder (shapefile) or a GeoJSON file, read by couches.ts (attribute names lower-cased).
// ---------------------------------------------------------------------------------------------------------------------

export type Documents = Map<string, Attributes>;

interface Source {
  format: ZonageImportReport['format'];
  documents: Documents;
  /** IDURBA to assume for zones without one (the folder's name or a single DOC_URBA document). */
  defaultIdurba: string | null;
  features(): AsyncGenerator<Lecture>;
}

const IDURBA_NOM = /^(\d[\dAB]\d{3}|\d{9})_[A-Za-z]+_\d{8}(_[A-Za-z0-9]+)?$/;

async function openSource(source: string): Promise<Source> {
  const info = await stat(source).catch(() => null);
  if (!info) throw new ImportError(`Source introuvable : ${source} (ni dossier GPU ni fichier GeoJSON).`);
  if (info.isFile()) {
    if (/\.(geo)?json$/i.test(source)) return geojsonSource(source);
    if (/\.shp$/i.test(source)) return shapefileSource(await listerFichiers(path.dirname(source), 1), source);
    throw new ImportError(`Format non reconnu : ${source} (attendu un dossier GPU, un .shp ou un .geojson).`);
  }
  // Three levels down, as this importer has always searched (couches.ts looks four down for whole packages).
  const files = await listerFichiers(source, 3);
  const shps = files.filter((f) => /\.shp$/i.test(f));
  const zoneShps = shps.filter((f) => /zone_urba/i.test(path.basename(f)));
  const candidates = zoneShps.length > 0 ? zoneShps : shps;
  if (candidates.length === 1) return shapefileSource(files, candidates[0], path.basename(source));
  if (candidates.length > 1) {
    throw new ImportError(
      `Plusieurs couches ZONE_URBA dans ${source} : ${candidates.map((f) => path.basename(f)).join(', ')} ; importez-les une à une.`,
    );
  }
  const geojsons = files.filter((f) => /\.(geo)?json$/i.test(f));
  const zoneGeojsons = geojsons.filter((f) => /zone_urba/i.test(path.basename(f)));
  if (zoneGeojsons.length === 1 || geojsons.length === 1) return geojsonSource(zoneGeojsons[0] ?? geojsons[0]);
  throw new ImportError(`Aucune couche ZONE_URBA (.shp ou .geojson) dans ${source}.`);
}

async function readDocUrba(files: string[]): Promise<Documents> {
  const documents: Documents = new Map();
  // DOC_URBA, not DOC_URBA_COM (the communes of the document), which sorts after it and may come alone.
  const dbf = files.find((f) => /doc(ument)?_urba(?!_com)[^/]*\.dbf$/i.test(path.basename(f)));
  if (!dbf) return documents;
  for await (const { proprietes: row } of lireTable(dbf, files)) {
    const idurba = texte(row.idurba);
    if (!idurba) continue;
    // A document may come on several rows (one per reference map, TYPEREF): the first value given wins.
    const known = documents.get(idurba) ?? {};
    for (const [key, value] of Object.entries(row)) if (known[key] == null && value != null) known[key] = value;
    documents.set(idurba, known);
  }
  return documents;
}

/**
 * ZONE_URBA as a shapefile: its .dbf, .cpg and .prj beside it (the GPU requires a .prj; without one, Lambert-93 is
 * assumed only if the extent of the layer fits it), DOC_URBA anywhere among `files`.
 */
async function shapefileSource(files: string[], shp: string, folderName?: string): Promise<Source> {
  const documents = await readDocUrba(files);
  const single = documents.size === 1 ? [...documents.keys()][0] : null;
  return {
    format: 'shapefile',
    documents,
    defaultIdurba: single ?? (folderName && IDURBA_NOM.test(folderName) ? folderName : null),
    features: () => lireCouche(shp, files),
  };
}

function geojsonSource(file: string): Source {
  return { format: 'geojson', documents: new Map(), defaultIdurba: null, features: () => lireCouche(file, [file]) };
}

// ---------------------------------------------------------------------------------------------------------------------
// One feature to one staging row.
// ---------------------------------------------------------------------------------------------------------------------

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

/**
 * A zone's outline: a Polygon or MultiPolygon cleaned by couches.ts (reprojected, rounded to ~1 cm, rings closed,
 * degenerate parts dropped); else why the feature is rejected. Lines and points are refused before cleaning, so that
 * their reason is that they are no surface, whatever their coordinates.
 */
function surface(feature: ObjetLu): ZoneGeometry | string {
  const g = feature.geometrie as { type?: unknown } | null;
  if (!g || typeof g !== 'object') return 'sans géométrie';
  if (g.type !== 'Polygon' && g.type !== 'MultiPolygon') return `géométrie ${String(g.type)} et non surfacique`;
  const propre = nettoyerGeometrie(g, feature.reprojection);
  // A Polygon or MultiPolygon stays one when cleaned (a MultiPolygon of one part becomes a Polygon).
  return typeof propre === 'string' ? propre : (propre.geometrie as ZoneGeometry);
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
  feature: ObjetLu,
  source: Source,
  baseUrl: string | undefined,
): { zone: StagedZone; octets: number } | string {
  const p = feature.proprietes;
  const libelle = texte(p.libelle);
  if (!libelle) return 'LIBELLE absent';
  const idurba = texte(p.idurba) ?? source.defaultIdurba;
  if (!idurba) return 'IDURBA absent';
  const geometry = surface(feature);
  if (typeof geometry === 'string') return geometry;
  const doc = source.documents.get(idurba);
  const urlfic = texte(p.urlfic);
  const nomfic = texte(p.nomfic);
  const urlreg = texte(doc?.urlreg);
  const nomreg = texte(doc?.nomreg);
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
      libelong: texte(p.libelong),
      typezone: texte(p.typezone),
      destdomi: texte(p.destdomi),
      nomfic,
      urlfic,
      reglement_url: reglementUrl,
      reglement_page: pageOfReference(urlfic) ?? pageOfReference(nomfic) ?? pageOfReference(reglementUrl),
      datappro: isoDate(p.datappro),
      datvalid: isoDate(p.datvalid),
      insee: inseeOfIdurba(idurba),
      siren: sirenOfIdurba(idurba) ?? texte(doc?.siren),
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
    typedoc: typeOf(texte(doc?.typedoc), idurba, typeParDefaut),
    etat: texte(doc?.etat),
    nomproc: texte(doc?.nomproc),
    datappro: isoDate(doc?.datappro) ?? dateOfIdurba(idurba),
    datvalid: isoDate(doc?.datvalid) ?? datvalid,
    insee: inseeOfIdurba(idurba),
    siren: texte(doc?.siren) ?? sirenOfIdurba(idurba),
    nomreg: texte(doc?.nomreg),
    urlreg: texte(doc?.urlreg),
    datefin: isoDate(doc?.datefin),
    nomplan: texte(doc?.nomplan),
    urlplan: texte(doc?.urlplan),
    siteweb: texte(doc?.siteweb),
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
  if (!isUrl(baseUrl)) throw new ImportError(`URL de base invalide : ${baseUrl} (http ou https attendu).`);
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
 * `dataset`. Throws ImportError, with a French message, on what makes the whole source unusable (missing
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
