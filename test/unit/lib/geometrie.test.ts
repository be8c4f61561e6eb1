import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import {
  areaM2,
  bboxOf,
  boxAround,
  containsPoint,
  degreeCellOf,
  degreeCellSql,
  degreeCellsAround,
  distanceM,
  distanceToGeometryM,
  distanceToOutlineM,
  distanceToZoneM,
  fromWgs84,
  metricCellIds,
  METRES_PER_DEGREE,
  projectionOfDepartement,
  toWgs84,
  type ZoneGeometry,
} from '../../../lib/geometrie.ts';
import { rectangle, square } from '../../support/geometrie.ts';

/** The point `metres` from (lat, lon) towards `bearing` (degrees from north), on the plane tangent there. */
function offset(lat: number, lon: number, metres: number, bearing: number): { lat: number; lon: number } {
  const b = (bearing * Math.PI) / 180;
  return {
    lat: lat + (metres * Math.cos(b)) / METRES_PER_DEGREE,
    lon: lon + (metres * Math.sin(b)) / (METRES_PER_DEGREE * Math.cos((lat * Math.PI) / 180)),
  };
}

// One town of each territory served, and its département.
const TOWNS = {
  paris: { departement: '75', lat: 48.8566, lon: 2.3522 },
  brest: { departement: '29', lat: 48.3904, lon: -4.4861 },
  strasbourg: { departement: '67', lat: 48.5734, lon: 7.7521 },
  ajaccio: { departement: '2A', lat: 41.9192, lon: 8.7386 },
  lille: { departement: '59', lat: 50.6292, lon: 3.0573 },
  pointeAPitre: { departement: '971', lat: 16.2411, lon: -61.5331 },
  fortDeFrance: { departement: '972', lat: 14.6161, lon: -61.0588 },
  cayenne: { departement: '973', lat: 4.9224, lon: -52.3135 },
  saintDenis: { departement: '974', lat: -20.8823, lon: 55.4504 },
  saintPierre: { departement: '975', lat: 46.7811, lon: -56.1764 },
  mamoudzou: { departement: '976', lat: -12.7806, lon: 45.2279 },
} as const;
const METROPOLITAN = ['paris', 'brest', 'strasbourg', 'ajaccio', 'lille'] as const;

describe('point in polygon', () => {
  const outer = square(2, 46, 0.01);
  const hole = square(2, 46, 0.002);
  const withHole: ZoneGeometry = { type: 'Polygon', coordinates: [outer, hole] };

  it('puts a point in a hole outside, and one between the hole and the outer ring inside', () => {
    expect(containsPoint(withHole, 2.001, 46.001)).toBe(false);
    expect(containsPoint(withHole, 2.005, 46.005)).toBe(true);
    expect(containsPoint(withHole, 2.02, 46)).toBe(false);
  });

  it('finds a point in any polygon of a multipolygon, an island in a hole included', () => {
    const multi: ZoneGeometry = {
      type: 'MultiPolygon',
      coordinates: [[outer, hole], [square(2.1, 46, 0.001)], [square(2, 46, 0.0005)]],
    };
    expect(containsPoint(multi, 2.1, 46)).toBe(true);
    expect(containsPoint(multi, 2.05, 46)).toBe(false);
    // In the hole of the first polygon, on the island of the third.
    expect(containsPoint(multi, 2, 46)).toBe(true);
    expect(containsPoint(multi, 2.001, 46.001)).toBe(false);
  });

  it('counts a point on an edge or a vertex, of the outer ring or of a hole, as inside', () => {
    // Every side of the square, and each corner: ray casting alone says in on some, out on others.
    for (const [lon, lat] of [[1.99, 46], [2.01, 46], [2, 45.99], [2, 46.01], ...outer]) {
      expect(containsPoint(withHole, lon, lat), `${lon} ${lat}`).toBe(true);
    }
    expect(containsPoint(withHole, 2.002, 46.001)).toBe(true);
    expect(containsPoint(withHole, 2.002, 46.002)).toBe(true);
    // A diagonal edge whose midpoint is not exact in binary.
    const triangle: ZoneGeometry = {
      type: 'Polygon',
      coordinates: [
        [
          [0.1, 0.1],
          [0.7, 0.3],
          [0.2, 0.9],
          [0.1, 0.1],
        ],
      ],
    };
    expect(containsPoint(triangle, 0.4, 0.2)).toBe(true);
    expect(containsPoint(triangle, 0.45, 0.6)).toBe(true);
    // A millionth of a degree (about 10 cm) off the edge is off it.
    expect(containsPoint(withHole, 2.010001, 46)).toBe(false);
    expect(containsPoint(withHole, 2.001999, 46.001)).toBe(false);
    expect(containsPoint(triangle, 0.4, 0.199999)).toBe(false);
  });

  it('agrees with the distance to the zone: 0 exactly where the point is inside', () => {
    for (const [lon, lat] of [
      [2.01, 46.003],
      [2.002, 46],
      [2.005, 46.005],
    ]) {
      expect(distanceToZoneM(withHole, lon, lat)).toBe(0);
    }
    expect(distanceToZoneM(withHole, 2.001, 46.001)).toBeGreaterThan(0);
  });

  it('reads outlines overseas, south of the equator and west of Greenwich, and ignores a Z ordinate', () => {
    for (const { lat, lon } of Object.values(TOWNS)) {
      const zone: ZoneGeometry = {
        type: 'Polygon',
        coordinates: [square(lon, lat, 0.01).map(([x, y]) => [x, y, 12.5])],
      };
      expect(containsPoint(zone, lon + 0.009, lat - 0.009)).toBe(true);
      expect(containsPoint(zone, lon + 0.011, lat)).toBe(false);
      expect(containsPoint(zone, lon, lat + 0.011)).toBe(false);
    }
  });
});

describe('distances in metres', () => {
  it('measures between two points on the mean sphere', () => {
    expect(distanceM({ lat: 45, lon: 3 }, { lat: 46, lon: 3 })).toBeCloseTo(METRES_PER_DEGREE, 6);
    expect(distanceM({ lat: 0, lon: 3 }, { lat: 0, lon: 4 })).toBeCloseTo(METRES_PER_DEGREE, 6);
    expect(distanceM(TOWNS.paris, TOWNS.paris)).toBe(0);
    // Paris to Saint-Denis de La Réunion, about 9 365 km.
    expect(distanceM(TOWNS.paris, TOWNS.saintDenis) / 1000).toBeCloseTo(9365, -1);
  });

  it('measures from a point to the outline and to the zone, holes included', () => {
    for (const { lat, lon } of Object.values(TOWNS)) {
      const zone: ZoneGeometry = { type: 'Polygon', coordinates: [square(lon, lat, 0.01), square(lon, lat, 0.002)] };
      // 250 m north of the north side, on its middle: the nearest point of the outline is straight south.
      const north = offset(lat + 0.01, lon, 250, 0);
      expect(distanceToZoneM(zone, north.lon, north.lat)).toBeCloseTo(250, 1);
      expect(distanceToOutlineM(zone, north.lon, north.lat)).toBeCloseTo(250, 1);
      // 80 m east of the hole's east side, inside the zone: 0 to the zone, 80 m to its outline.
      const inside = offset(lat, lon + 0.002, 80, 90);
      expect(distanceToZoneM(zone, inside.lon, inside.lat)).toBe(0);
      expect(distanceToOutlineM(zone, inside.lon, inside.lat)).toBeCloseTo(80, 1);
      // The centre of the hole is outside: the distance to the zone is that to the hole's nearest side.
      const toSide = distanceM({ lat, lon }, { lat, lon: lon + 0.002 });
      expect(distanceToZoneM(zone, lon, lat)).toBeCloseTo(toSide, 1);
    }
  });

  it('takes the nearest polygon of a multipolygon', () => {
    const multi: ZoneGeometry = {
      type: 'MultiPolygon',
      coordinates: [[square(2, 46, 0.001)], [square(2.01, 46, 0.001)]],
    };
    const between = offset(46, 2.009, 100, 270);
    expect(distanceToZoneM(multi, between.lon, between.lat)).toBeCloseTo(100, 1);
  });

  it('measures to lines and points as to surfaces (a linear prescription, a protected tree)', () => {
    for (const { lat, lon } of Object.values(TOWNS)) {
      const east = offset(lat, lon, 500, 90);
      const line = {
        type: 'LineString' as const,
        coordinates: [
          [lon, lat],
          [east.lon, east.lat],
        ],
      };
      // 40 m north of the line's middle, then 30 m beyond its east end: to the segment, then to its end.
      const above = offset(lat, (lon + east.lon) / 2, 40, 0);
      expect(distanceToGeometryM(line, above.lon, above.lat)).toBeCloseTo(40, 1);
      const beyond = offset(east.lat, east.lon, 30, 90);
      expect(distanceToGeometryM(line, beyond.lon, beyond.lat)).toBeCloseTo(30, 1);
      const multiLine = {
        type: 'MultiLineString' as const,
        coordinates: [line.coordinates, [[beyond.lon, beyond.lat]]],
      };
      expect(distanceToGeometryM(multiLine, beyond.lon, beyond.lat)).toBe(0);
      const tree = offset(lat, lon, 12, 180);
      expect(distanceToGeometryM({ type: 'Point', coordinates: [tree.lon, tree.lat] }, lon, lat)).toBeCloseTo(12, 1);
      const trees = {
        type: 'MultiPoint' as const,
        coordinates: [
          [east.lon, east.lat],
          [tree.lon, tree.lat],
        ],
      };
      expect(distanceToGeometryM(trees, lon, lat)).toBeCloseTo(12, 1);
      // A surface: 0 inside, to its outline outside.
      const zone: ZoneGeometry = { type: 'Polygon', coordinates: [square(lon, lat, 0.001)] };
      expect(distanceToGeometryM(zone, lon, lat)).toBe(0);
      expect(distanceToGeometryM(zone, above.lon, above.lat)).toBe(distanceToZoneM(zone, above.lon, above.lat));
    }
  });
});

describe('areas and boxes', () => {
  it('measures a square kilometre, less its holes, and adds the polygons of a multipolygon', () => {
    for (const { lat, lon } of Object.values(TOWNS)) {
      const km = rectangle(boxAround(lat, lon, 500));
      const hole = rectangle(boxAround(lat, lon, 100));
      expect(areaM2({ type: 'Polygon', coordinates: [km] }) / 1e6).toBeCloseTo(1, 3);
      expect(areaM2({ type: 'Polygon', coordinates: [km, hole] }) / 1e6).toBeCloseTo(0.96, 3);
      const elsewhere = rectangle(boxAround(lat + 0.1, lon, 500));
      expect(areaM2({ type: 'MultiPolygon', coordinates: [[km, hole], [elsewhere]] }) / 1e6).toBeCloseTo(1.96, 2);
    }
  });

  it('boxes a geometry by its outer rings, and boxes the circle around a point', () => {
    const multi: ZoneGeometry = {
      type: 'MultiPolygon',
      coordinates: [
        [
          rectangle({ xmin: 55.44, ymin: -20.89, xmax: 55.46, ymax: -20.87 }),
          rectangle({ xmin: 55.448, ymin: -20.882, xmax: 55.452, ymax: -20.878 }),
        ],
        [rectangle({ xmin: 55.499, ymin: -20.901, xmax: 55.501, ymax: -20.899 })],
      ],
    };
    expect(bboxOf(multi)).toEqual({ xmin: 55.44, ymin: -20.901, xmax: 55.501, ymax: -20.87 });
    for (const { lat, lon } of Object.values(TOWNS)) {
      const box = boxAround(lat, lon, 300);
      expect(distanceM({ lat, lon }, { lat: box.ymax, lon })).toBeCloseTo(300, 3);
      expect(distanceM({ lat, lon }, { lat: box.ymin, lon })).toBeCloseTo(300, 3);
      expect(distanceM({ lat, lon }, { lat, lon: box.xmax })).toBeCloseTo(300, 1);
      expect(distanceM({ lat, lon }, { lat, lon: box.xmin })).toBeCloseTo(300, 1);
    }
  });
});

describe('the degree grid of radius searches', () => {
  it('keeps the cells the index of dvf_mutations was built with', () => {
    // Frozen: the ids stored in the index; a change here would make every radius search miss its sales.
    expect(degreeCellOf(48.8566, 2.3522)).toBe('1999576241');
    expect(degreeCellsAround(48.8566, 2.3522, 300)).toEqual([
      '1999504239',
      '1999504240',
      '1999504241',
      '1999576240',
      '1999576241',
      '1999576242',
    ]);
    expect(degreeCellsAround(45.02227, -0.14995, 50)).toEqual(['1944350973', '1944350974']);
    expect(degreeCellsAround(-20.8789, 55.4481, 1000)).toHaveLength(25);
    expect(degreeCellSql('m.lat', 'm.lon')).toBe(
      '(floor((m.lat + 90) * 200)::bigint * 72001 + floor((m.lon + 180) * 200)::bigint)',
    );
  });

  it('covers every point of the circle, overseas too', () => {
    for (const { lat, lon } of Object.values(TOWNS)) {
      for (const radius of [50, 300, 3000]) {
        const cells = new Set(degreeCellsAround(lat, lon, radius));
        for (let bearing = 0; bearing < 360; bearing += 15) {
          const p = offset(lat, lon, radius, bearing);
          expect(cells.has(degreeCellOf(p.lat, p.lon)), `${lat} ${lon} ${radius} m ${bearing}°`).toBe(true);
        }
      }
    }
  });

  it('numbers a position as the database does', async () => {
    const client = new pg.Client({ connectionString: inject('databaseUrl') });
    await client.connect();
    try {
      // Towns, and positions on the lines between cells, where a floor could go either way.
      const points = [...Object.values(TOWNS), { lat: 45.005, lon: -0.15 }, { lat: -12.78, lon: 45.225 }];
      for (const { lat, lon } of points) {
        const { rows } = await client.query<{ cell: string }>(
          `SELECT ${degreeCellSql('$1::float8', '$2::float8')}::text AS cell`,
          [lat, lon],
        );
        expect(rows[0].cell, `${lat} ${lon}`).toBe(degreeCellOf(lat, lon));
      }
    } finally {
      await client.end();
    }
  });
});

describe('projections', () => {
  it('gives each département the projection its data is published in', () => {
    expect(['75', '2A', '2B', '29', '67'].map(projectionOfDepartement)).toEqual(['l93', 'l93', 'l93', 'l93', 'l93']);
    expect(['971', '972', '977', '978'].map(projectionOfDepartement)).toEqual(['utm20n', 'utm20n', 'utm20n', 'utm20n']);
    expect(['973', '974', '975', '976'].map(projectionOfDepartement)).toEqual(['utm22n', 'utm40s', 'utm21n', 'utm38s']);
  });

  it('places Lambert-93 as the IGN defines it', () => {
    // The origin of the projection: 3° E, 46.5° N is x 700 000, y 6 600 000.
    const origin = fromWgs84('l93', 46.5, 3);
    expect(origin.x).toBeCloseTo(700_000, 3);
    expect(origin.y).toBeCloseTo(6_600_000, 3);
    // ban_x 654691.23, ban_y 6861342.37 of a DPE export: the Faubourg Saint-Antoine in Paris.
    const paris = toWgs84('l93', 654_691.23, 6_861_342.37)!;
    expect(paris.lat).toBeCloseTo(48.8505, 3);
    expect(paris.lon).toBeCloseTo(2.3826, 3);
    // Latresne, south-east of Bordeaux: 44.7816 N, 0.4945 W is 423 652 E, 6 415 278 N.
    const latresne = fromWgs84('l93', 44.7816, -0.4945);
    expect(Math.abs(latresne.x - 423_652)).toBeLessThan(10);
    expect(Math.abs(latresne.y - 6_415_278)).toBeLessThan(10);
  });

  it('goes from WGS84 to Lambert-93 and back within a centimetre in metropolitan France and Corsica', () => {
    for (const name of METROPOLITAN) {
      const { lat, lon } = TOWNS[name];
      for (const [dLat, dLon] of [
        [0, 0],
        [0.123456, -0.654321],
        [-0.5, 0.5],
      ]) {
        const start = { lat: lat + dLat, lon: lon + dLon };
        const { x, y } = fromWgs84('l93', start.lat, start.lon);
        const back = toWgs84('l93', x, y)!;
        expect(distanceM(start, back), name).toBeLessThan(0.01);
        const again = fromWgs84('l93', back.lat, back.lon);
        expect(Math.hypot(again.x - x, again.y - y), name).toBeLessThan(0.01);
      }
    }
  });

  it('projects each overseas département in its UTM zone, within a centimetre both ways', () => {
    const overseas = ['pointeAPitre', 'fortDeFrance', 'cayenne', 'saintDenis', 'saintPierre', 'mamoudzou'] as const;
    for (const name of overseas) {
      const { departement, lat, lon } = TOWNS[name];
      const projection = projectionOfDepartement(departement);
      const { x, y } = fromWgs84(projection, lat, lon);
      // UTM: eastings within a few hundred km of the 500 000 m of the central meridian; northings from the equator,
      // plus 10 000 km south of it.
      expect(Math.abs(x - 500_000), name).toBeLessThan(350_000);
      expect(y, name).toBeCloseTo((lat >= 0 ? 0 : 10_000_000) + lat * METRES_PER_DEGREE, -5);
      const back = toWgs84(projection, x, y)!;
      expect(distanceM({ lat, lon }, back), name).toBeLessThan(0.01);
    }
    // On the central meridian of each zone (63° W, 57° W, 51° W, 45° E, 57° E) the easting is 500 000 m.
    const meridians = [
      ['utm20n', 16, -63],
      ['utm21n', 47, -57],
      ['utm22n', 4, -51],
      ['utm38s', -12.8, 45],
      ['utm40s', -21, 57],
    ] as const;
    for (const [projection, lat, lon] of meridians) {
      expect(fromWgs84(projection, lat, lon).x, projection).toBeCloseTo(500_000, 3);
    }
  });

  it('refuses coordinates that land outside the area of the projection they are read in', () => {
    const paris = fromWgs84('l93', TOWNS.paris.lat, TOWNS.paris.lon);
    expect(toWgs84('utm40s', paris.x, paris.y)).toBeNull();
    expect(toWgs84('utm20n', paris.x, paris.y)).toBeNull();
    const reunion = fromWgs84('utm40s', TOWNS.saintDenis.lat, TOWNS.saintDenis.lon);
    expect(toWgs84('l93', reunion.x, reunion.y)).toBeNull();
    expect(toWgs84('utm38s', reunion.x, reunion.y)).toBeNull();
    // x and y swapped.
    expect(toWgs84('l93', paris.y, paris.x)).toBeNull();
  });

  it('names nested metric cells in the projection of the area', () => {
    const { lat, lon } = toWgs84('l93', 654_691.23, 6_861_342.37)!;
    expect(metricCellIds('l93', lat, lon, [100, 10])).toEqual(['l93-100-6546-68613', 'l93-10-65469-686134']);
    const { x, y } = fromWgs84('utm40s', TOWNS.saintDenis.lat, TOWNS.saintDenis.lon);
    expect(metricCellIds('utm40s', TOWNS.saintDenis.lat, TOWNS.saintDenis.lon, [100, 10])).toEqual([
      `utm40s-100-${Math.floor(x / 100)}-${Math.floor(y / 100)}`,
      `utm40s-10-${Math.floor(x / 10)}-${Math.floor(y / 10)}`,
    ]);
  });
});
