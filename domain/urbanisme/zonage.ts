import type { Queryable } from '../../db/client.ts';
import type { Dataset } from '../platform/sandbox.ts';
import { boxAround, distanceToZoneM, type ZoneGeometry } from '../../lib/geometrie.ts';

/** Zones nearer than this to the point are named in `autres_zones`. */
export const AUTRES_ZONES_RAYON_M = 100;

// ---------------------------------------------------------------------------------------------------------------------
// Planning-document vocabulary.
// ---------------------------------------------------------------------------------------------------------------------

/**
 * The document type, from DOC_URBA TYPEDOC or else from the IDURBA (`<INSEE|SIREN>_<TYPE>_<AAAAMMJJ>[_<code>]`),
 * spelt as the CNIG standard does: PLU, PLUi, POS, CC, PSMV.
 */
export function typeDocument(typedoc: string | null | undefined, idurba: string): string | null {
  const raw = (typedoc?.trim() || idurba.split('_')[1] || '').toUpperCase();
  if (!raw) return null;
  if (raw.startsWith('PLUI')) return 'PLUi';
  return raw;
}

/** The INSEE code of a communal document (`30014_PLU_…`, Corsica `2A004_…`), null for an intercommunal one. */
export function inseeOfIdurba(idurba: string): string | null {
  return /^(\d[\dAB]\d{3})_/i.exec(idurba)?.[1]?.toUpperCase() ?? null;
}

/** The SIREN of the EPCI of an intercommunal document (`241800432_PLUi_…`). */
export function sirenOfIdurba(idurba: string): string | null {
  return /^(\d{9})_/.exec(idurba)?.[1] ?? null;
}

/** The approval date carried by the IDURBA itself (AAAA-MM-JJ), when it has one. */
export function dateOfIdurba(idurba: string): string | null {
  const digits = /_(\d{8})(?:_|$)/.exec(idurba)?.[1];
  return digits ? isoDate(digits) : null;
}

/**
 * A date of a DBF or GeoJSON attribute as AAAA-MM-JJ: AAAAMMJJ (the CNIG standard), ISO 8601, JJ/MM/AAAA, or a DBF
 * date field (read as a local Date). Null when absent or not a real calendar date.
 */
export function isoDate(value: unknown): string | null {
  let y: number;
  let m: number;
  let d: number;
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) return null;
    [y, m, d] = [value.getFullYear(), value.getMonth() + 1, value.getDate()];
  } else if (typeof value === 'string' || typeof value === 'number') {
    const text = String(value).trim();
    let match: RegExpExecArray | null;
    if ((match = /^(\d{4})(\d{2})(\d{2})$/.exec(text)) || (match = /^(\d{4})-(\d{2})-(\d{2})(?:[T ].*)?$/.exec(text))) {
      [y, m, d] = [Number(match[1]), Number(match[2]), Number(match[3])];
    } else if ((match = /^(\d{2})\/(\d{2})\/(\d{4})$/.exec(text))) {
      [y, m, d] = [Number(match[3]), Number(match[2]), Number(match[1])];
    } else {
      return null;
    }
  } else {
    return null;
  }
  const date = new Date(Date.UTC(y, m - 1, d));
  if (date.getUTCFullYear() !== y || date.getUTCMonth() !== m - 1 || date.getUTCDate() !== d || y < 1900) return null;
  return date.toISOString().slice(0, 10);
}

/** The page of a `…pdf#page=24` reference (NOMFIC or URLFIC), when it names one. */
export function pageOfReference(reference: string | null | undefined): number | null {
  const page = /#.*\bpage=(\d{1,5})\b/i.exec(reference ?? '')?.[1];
  return page && Number(page) > 0 ? Number(page) : null;
}

// ---------------------------------------------------------------------------------------------------------------------
// Queries.
// ---------------------------------------------------------------------------------------------------------------------

/** A zone near a point, as `zonesNear` finds it. */
export interface ZoneProche {
  id: number;
  code: string;
  libelle: string | null;
  /** TYPEZONE: U, AUc, AUs, A, N (the zone family). */
  famille: string | null;
  idurba: string;
  type_document: string | null;
  approuve_le: string | null;
  reglement_url: string | null;
  reglement_page: number | null;
  insee: string | null;
  siren: string | null;
  aire_m2: number;
  /** 0 when the zone covers the point. */
  distance_m: number;
}

interface ZoneRow {
  id: number;
  idurba: string;
  libelle: string;
  libelong: string | null;
  typezone: string | null;
  reglement_url: string | null;
  reglement_page: number | null;
  insee: string | null;
  siren: string | null;
  aire_m2: number;
  geometrie: ZoneGeometry;
  approuve_le: string | null;
  typedoc: string | null;
}

/**
 * Zones within `rayonM` of a point, nearest first (covering zones, smallest first, then by distance). The bounding
 * boxes prefilter in SQL (GiST index on the box), the exact distance is computed here.
 */
export async function zonesNear(
  db: Queryable,
  { lat, lon, dataset, rayonM = AUTRES_ZONES_RAYON_M }: { lat: number; lon: number; dataset: Dataset; rayonM?: number },
): Promise<ZoneProche[]> {
  if (!Number.isFinite(lat) || !Number.isFinite(lon)) throw new TypeError('lat et lon doivent être des nombres');
  // A margin of 10 % on the box: the equirectangular metres are approximate, the exact filter below decides.
  const box = boxAround(lat, lon, rayonM * 1.1);
  const { rows } = await db.query<ZoneRow>(
    `SELECT z.id, z.idurba, z.libelle, z.libelong, z.typezone, z.reglement_url, z.reglement_page, z.insee, z.siren,
            z.aire_m2, z.geometrie, to_char(coalesce(z.datappro, d.datappro), 'YYYY-MM-DD') AS approuve_le,
            d.typedoc
       FROM zones_urbanisme z
       JOIN documents_urbanisme d ON d.dataset = z.dataset AND d.idurba = z.idurba
      WHERE z.dataset = $1
        AND box(point(z.bbox_xmin, z.bbox_ymin), point(z.bbox_xmax, z.bbox_ymax)) && box(point($2, $3), point($4, $5))`,
    [dataset, box.xmin, box.ymin, box.xmax, box.ymax],
  );
  const near: ZoneProche[] = [];
  for (const row of rows) {
    const distance = distanceToZoneM(row.geometrie, lon, lat);
    if (distance > rayonM) continue;
    near.push({
      id: Number(row.id),
      code: row.libelle,
      libelle: row.libelong,
      famille: row.typezone,
      idurba: row.idurba,
      type_document: typeDocument(row.typedoc, row.idurba),
      approuve_le: row.approuve_le ?? dateOfIdurba(row.idurba),
      reglement_url: row.reglement_url,
      reglement_page: row.reglement_page,
      insee: row.insee,
      siren: row.siren,
      aire_m2: row.aire_m2,
      distance_m: distance,
    });
  }
  // Overlapping zones happen (a sector drawn over its zone): the smallest one is the most specific.
  return near.sort((a, b) => a.distance_m - b.distance_m || a.aire_m2 - b.aire_m2 || a.id - b.id);
}

export interface ZoningResult {
  zone: {
    code: string;
    libelle: string | null;
    type_document: string | null;
    document: string;
    approuve_le: string | null;
  };
  /** Codes of the other zones within 100 m of the point (the zone's own code excluded), sorted. */
  autres_zones: string[];
  /** URLFIC, else NOMFIC under the import's base URL, else the document's rules file; with its `#page=` if any. */
  reglement_url: string | null;
  reglement_page: number | null;
  /** TYPEZONE of the zone (U, AUc, AUs, A, N): the `famille` of urbanisme_adresse. */
  famille: string | null;
  idurba: string;
  /** INSEE code of a communal document; null for an intercommunal one (PLUi), whose IDURBA carries a SIREN. */
  insee: string | null;
}

/** The zone covering a point (the smallest when several do), or null when no imported zone covers it. */
export async function findZoning(
  db: Queryable,
  { lat, lon, dataset }: { lat: number; lon: number; dataset: Dataset },
): Promise<ZoningResult | null> {
  const near = await zonesNear(db, { lat, lon, dataset, rayonM: AUTRES_ZONES_RAYON_M });
  const zone = near.find((z) => z.distance_m === 0);
  if (!zone) return null;
  const autres = new Set(near.filter((z) => z.code !== zone.code).map((z) => z.code));
  return {
    zone: {
      code: zone.code,
      libelle: zone.libelle,
      type_document: zone.type_document,
      document: zone.idurba,
      approuve_le: zone.approuve_le,
    },
    autres_zones: [...autres].sort((a, b) => a.localeCompare(b, 'fr')),
    reglement_url: zone.reglement_url,
    reglement_page: zone.reglement_page,
    famille: zone.famille,
    idurba: zone.idurba,
    insee: zone.insee,
  };
}
