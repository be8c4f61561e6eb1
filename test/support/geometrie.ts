import type { BoundingBox, Position, ZoneGeometry } from '../../lib/geometrie.ts';

/** The closed ring of a box, counter-clockwise from its south-west corner. */
export function rectangle({ xmin, ymin, xmax, ymax }: BoundingBox): Position[] {
  return [
    [xmin, ymin],
    [xmax, ymin],
    [xmax, ymax],
    [xmin, ymax],
    [xmin, ymin],
  ];
}

/** The closed ring of a square `half` units either side of a centre (degrees, or projected metres). */
export function square(x: number, y: number, half: number): Position[] {
  return rectangle({ xmin: x - half, ymin: y - half, xmax: x + half, ymax: y + half });
}

/**
 * A point surely inside the zone: on a horizontal line through the middle of its largest polygon, the middle of the
 * widest stretch that lies inside (between the first two crossings of the rings, and so on).
 */
export function interiorPoint(geometry: ZoneGeometry): { lon: number; lat: number } {
  const polygons = geometry.type === 'Polygon' ? [geometry.coordinates] : geometry.coordinates;
  const span = (ring: Position[]) => Math.max(...ring.map((p) => p[1])) - Math.min(...ring.map((p) => p[1]));
  const polygon = polygons.reduce((a, b) => (span(b[0]) > span(a[0]) ? b : a));
  const ys = polygon[0].map((p) => p[1]);
  const lat = (Math.min(...ys) + Math.max(...ys)) / 2 + 1.234e-7;
  const crossings: number[] = [];
  for (const ring of polygon) {
    for (let i = 1; i < ring.length; i++) {
      const [[x1, y1], [x2, y2]] = [ring[i - 1], ring[i]];
      if (y1 > lat !== y2 > lat) crossings.push(x1 + ((lat - y1) * (x2 - x1)) / (y2 - y1));
    }
  }
  crossings.sort((a, b) => a - b);
  let best = { lon: NaN, width: -1 };
  for (let i = 0; i + 1 < crossings.length; i += 2) {
    const width = crossings[i + 1] - crossings[i];
    if (width > best.width) best = { lon: (crossings[i] + crossings[i + 1]) / 2, width };
  }
  return { lon: best.lon, lat };
}
