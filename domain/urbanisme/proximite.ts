import { createHash } from 'node:crypto';
import type { Queryable } from '../../db/client.ts';
import { boxAround, distanceToGeometryM, type Geometry } from '../../lib/geometrie.ts';
import type { Dataset } from '../platform/sandbox.ts';

/** What to read of a planning layer (a table of db/migrations/004_zonage.sql or 034, with geometry and box). */
export interface Couche {
  /** The columns, the layer table being `t`; `t.geometrie` among them. */
  colonnes: string;
  /** The layer table as `t`, and its joins. */
  depuis: string;
  /** More conditions; their parameters, in `params`, are numbered from $5. */
  conditions?: string;
  params?: unknown[];
}

/** The name each distinct statement is prepared under, by its text: the same text, the same name on every connection. */
const noms = new Map<string, string>();
function nomDe(text: string): string {
  let nom = noms.get(text);
  if (!nom) {
    nom = `pres_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
    noms.set(text, nom);
  }
  return nom;
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
  if (dataset !== 'live' && dataset !== 'sandbox') throw new TypeError(`jeu de données inconnu : ${String(dataset)}`);
  // A margin of 10 % on the box: the equirectangular metres are approximate, the exact filter below decides.
  const box = boxAround(lat, lon, rayonM * 1.1);
  // Prepared (named), one statement per layer and dataset: planning the join with the documents and the rule in force
  // cost about 1 ms a statement, more than running it (bench/RESULTS.md, "Urbanism point lookup"). The dataset is
  // written in the text, not passed: the plan kept for every call must know it, or a layer's index on (dataset, ...)
  // looks selective and is read whole beside the box's (a BitmapAnd over every row of the dataset). The box's
  // selectivity is a constant whatever its corners, so the plan kept is the one each call would get.
  const text = `SELECT ${couche.colonnes} FROM ${couche.depuis}
      WHERE t.dataset = '${dataset}'
        AND box(point(t.bbox_xmin, t.bbox_ymin), point(t.bbox_xmax, t.bbox_ymax)) && box(point($1, $2), point($3, $4))
        ${couche.conditions ? `AND ${couche.conditions}` : ''}`;
  const { rows } = await db.query<R>({
    name: nomDe(text),
    text,
    values: [box.xmin, box.ymin, box.xmax, box.ymax, ...(couche.params ?? [])],
  });
  const proches: Array<R & { distance_m: number }> = [];
  for (const row of rows) {
    const distance = distanceToGeometryM(row.geometrie as Geometry, lon, lat);
    if (distance <= rayonM) proches.push({ ...row, distance_m: distance });
  }
  return proches;
}
