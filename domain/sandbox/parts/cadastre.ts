import { gzipSync } from 'node:zlib';
import { Alea } from '../alea.ts';
import { featureCollection, type SandboxPart } from '../part.ts';
import { rectangle, type Territoire } from '../territoire.ts';

/**
 * The cadastre of each commune in the Etalab format (`cadastre-<insee>-parcelles.json.gz`, `-batiments.json.gz`): the
 * parcels every BAN number of the territory carries, as small plots around it, and a building on the first parcel of
 * each number. As the Etalab files write them: the number of a parcel not zero-padded (`37`), `contenance` in m²
 * (missing on one parcel per commune), gzipped FeatureCollections of one feature a line. Sizes are drawn from streams
 * of their own.
 */

function parcelles(seed: number, t: Territoire): { parcelles: object[]; batiments: object[] } {
  const c = t.commune;
  const alea = new Alea(seed, `cadastre:${c.insee}`);
  const cote = c.urbaine ? 8 : 16;
  const out: object[] = [];
  const batiments: object[] = [];
  for (const [k, n] of t.numeros.entries()) {
    const { est, nord } = metres(c, n.lat, n.lon);
    n.parcelles.forEach((id, j) => {
      const x = est + j * cote;
      const ring = rectangle(c, x - cote / 2, nord - cote / 2, x + cote / 2, nord + cote / 2);
      const contenance = Math.round(cote * cote * alea.between(0.95, 1.05));
      out.push({
        type: 'Feature',
        id,
        geometry: { type: 'Polygon', coordinates: [ring] },
        properties: {
          id,
          commune: c.insee,
          prefixe: id.slice(5, 8),
          section: id.slice(8, 10),
          numero: String(Number(id.slice(10))),
          // One parcel of each commune without its area, as in the real files.
          ...(k === 3 && j === 0 ? {} : { contenance }),
          arpente: alea.chance(0.2),
          created: '2017-04-05',
          updated: '2024-01-15',
        },
      });
      if (j === 0) {
        const b = cote * alea.between(0.25, 0.4);
        batiments.push({
          type: 'Feature',
          geometry: { type: 'Polygon', coordinates: [rectangle(c, x - b, nord - b, x + b, nord + b)] },
          properties: {
            type: alea.chance(0.1) ? '02' : '01',
            nom: null,
            commune: c.insee,
            created: '2017-04-05',
            updated: '2024-01-15',
          },
        });
      }
    });
  }
  return { parcelles: out, batiments };
}

const METRES_PAR_DEGRE = 111_320;

/** Metres east and north of the commune's centre (the inverse of territoire.ts `position`). */
function metres(c: Territoire['commune'], lat: number, lon: number): { est: number; nord: number } {
  return {
    est: (lon - c.lon) * METRES_PAR_DEGRE * Math.cos((c.lat * Math.PI) / 180),
    nord: (lat - c.lat) * METRES_PAR_DEGRE,
  };
}

/** Gzipped as published; gzip writes no time, so the same seed gives the same bytes. */
export const cadastrePart: SandboxPart<'cadastre'> = {
  source: 'cadastre',
  fichiers: (seed, territoires) =>
    territoires.flatMap((t) => {
      const { parcelles: p, batiments: b } = parcelles(seed, t);
      const nom = `cadastre-${t.commune.insee}`;
      return [
        [`${nom}-parcelles.json.gz`, gzipSync(featureCollection(nom, p), { level: 9 })],
        [`${nom}-batiments.json.gz`, gzipSync(featureCollection(nom, b), { level: 9 })],
      ] as Array<[string, Uint8Array]>;
    }),
};
