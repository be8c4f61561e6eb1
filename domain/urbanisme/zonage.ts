import type { Queryable } from '../../db/client.ts';
import type { Dataset } from '../platform/sandbox.ts';
import type { ZoneGeometry } from '../../lib/geometrie.ts';
import { pres } from './proximite.ts';

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

/**
 * CNIG `ETAT` codes of a document that does not apply: not yet (01 en cours de procédure, 02 arrêté) or no longer
 * (04 annulé, 05 remplacé, 06 abrogé).
 */
const ETATS_HORS_VIGUEUR = `('01', '02', '04', '05', '06')`;

/**
 * SQL: the document `d` (a row of documents_urbanisme) is in force. Not when its state says it is still in procedure, or
 * was annulled, replaced or repealed; not when its end of validity has passed (a DATEFIN no later than the approval, which real packages
 * write, is no end); not when a later document in force (other than a PSMV, which overlays the PLU rather than
 * replacing it) covers one of its communes: the newer edition of a PLU, or the PLUi that took over a communal PLU,
 * each published under its own IDURBA, leave the older one imported beside them.
 */
export function documentEnVigueur(d: string): string {
  return `(${d}.etat IS NULL OR ${d}.etat NOT IN ${ETATS_HORS_VIGUEUR})
    AND NOT coalesce(${d}.datefin > ${d}.datappro AND ${d}.datefin <= current_date, false)
    AND NOT EXISTS (
      SELECT 1 FROM documents_urbanisme_communes c
        JOIN documents_urbanisme_communes nc ON nc.dataset = c.dataset AND nc.insee = c.insee AND nc.idurba <> c.idurba
        JOIN documents_urbanisme n ON n.dataset = nc.dataset AND n.idurba = nc.idurba
       WHERE c.dataset = ${d}.dataset AND c.idurba = ${d}.idurba AND n.datappro > ${d}.datappro
         AND coalesce(n.typedoc, '') <> 'PSMV' AND coalesce(${d}.typedoc, '') <> 'PSMV'
         AND (n.etat IS NULL OR n.etat NOT IN ${ETATS_HORS_VIGUEUR}))`;
}

/**
 * SQL: the join of a feature `t` of a planning layer (a table with `dataset` and `idurba`) to its document `d`, the
 * feature kept only when its document is in force (`documentEnVigueur`). Row by row, by the document's key: (dataset,
 * idurba) is the key of documents_urbanisme, so the LIMIT drops nothing; it keeps the planner from flattening the
 * join into a hash of every document in force, which it prefers because it estimates the features of a box at a
 * constant 0.5 % of the layer when there are a handful (measured on 1 000 000 features: bench/RESULTS.md, "Urbanism
 * point lookup").
 */
export function documentEnVigueurDe(t: string): string {
  return `JOIN LATERAL (
      SELECT d.* FROM documents_urbanisme d
       WHERE d.dataset = ${t}.dataset AND d.idurba = ${t}.idurba AND ${documentEnVigueur('d')}
       LIMIT 1) d ON true`;
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
 * Zones of the documents in force within `rayonM` of a point, nearest first (covering zones, smallest first, then by
 * distance).
 */
export async function zonesNear(
  db: Queryable,
  { lat, lon, dataset, rayonM = AUTRES_ZONES_RAYON_M }: { lat: number; lon: number; dataset: Dataset; rayonM?: number },
): Promise<ZoneProche[]> {
  const rows = await pres<ZoneRow>(db, dataset, { lat, lon }, rayonM, {
    colonnes: `t.id, t.idurba, t.libelle, t.libelong, t.typezone, t.reglement_url, t.reglement_page, t.insee, t.siren,
               t.aire_m2, t.geometrie, to_char(coalesce(t.datappro, d.datappro), 'YYYY-MM-DD') AS approuve_le, d.typedoc`,
    depuis: `zones_urbanisme t ${documentEnVigueurDe('t')}`,
  });
  const near: ZoneProche[] = rows.map((row) => ({
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
    distance_m: row.distance_m,
  }));
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
