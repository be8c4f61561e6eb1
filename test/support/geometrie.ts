import type { BoundingBox, Position } from '../../lib/geometrie.ts';

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
