import type { Queryable } from '../../db/client.ts';
import { boxAround, distanceToGeometryM, type Geometry } from '../../lib/geometrie.ts';
import type { Dataset } from '../platform/sandbox.ts';

/** What to read of a planning layer (a table of db/migrations/004_zonage.sql or 034, with geometry and box). */
export interface Couche {
  /** The columns, the layer table being `t`; `t.geometrie` among them. */
  colonnes: string;
  /** The layer table as `t`, and its joins. */
  depuis: string;
  /** More conditions; their parameters, in `params`, are numbered from $6. */
  conditions?: string;
  params?: unknown[];
}

/**
 * The features of a layer within `rayonM` of a point, with their distance in metres (0: the point is inside a surface,
 * on its outline, or on a line or a point), in no particular order. The bounding boxes prefilter in SQL (the GiST
 * index on the box: the expression must be spelt as the index is), the exact distance is computed here.
 */
export async function pres<R extends { geometrie: unknown }>(
  db: Queryable,
  dataset: Dataset,
  { lat, lon }: { lat: number; lon: number },
  rayonM: number,
  couche: Couche,
): Promise<Array<R & { distance_m: number }>> {
  if (!Number.isFinite(lat) || !Number.isFinite(lon)) throw new TypeError('lat et lon doivent être des nombres');
  // A margin of 10 % on the box: the equirectangular metres are approximate, the exact filter below decides.
  const box = boxAround(lat, lon, rayonM * 1.1);
  const { rows } = await db.query<R>(
    `SELECT ${couche.colonnes} FROM ${couche.depuis}
      WHERE t.dataset = $1
        AND box(point(t.bbox_xmin, t.bbox_ymin), point(t.bbox_xmax, t.bbox_ymax)) && box(point($2, $3), point($4, $5))
        ${couche.conditions ? `AND ${couche.conditions}` : ''}`,
    [dataset, box.xmin, box.ymin, box.xmax, box.ymax, ...(couche.params ?? [])],
  );
  const proches: Array<R & { distance_m: number }> = [];
  for (const row of rows) {
    const distance = distanceToGeometryM(row.geometrie as Geometry, lon, lat);
    if (distance <= rayonM) proches.push({ ...row, distance_m: distance });
  }
  return proches;
}
