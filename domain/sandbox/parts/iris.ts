import { featureCollection, FICTIF, type SandboxPart } from '../part.ts';
import { COMMUNES, rectangle, type InseeSandbox } from '../territoire.ts';

/** IRIS outlines: the commune whole, or four quadrants around its centre. */

/** By commune: the IRIS type (H: habitat, Z: commune not split) and its quarters, code and name. */
const IRIS: Record<InseeSandbox, { type: 'H' | 'Z'; quartiers: Array<[code: string, nom: string]> }> = {
  '33234': { type: 'Z', quartiers: [['0000', 'Latresne']] },
  '33001': { type: 'Z', quartiers: [['0000', 'Abzac']] },
  '75111': {
    type: 'H',
    quartiers: [
      ['4101', 'République'],
      ['4201', 'Folie-Méricourt'],
      ['4301', 'Bastille'],
      ['4401', 'Roquette'],
    ],
  },
  '59350': {
    type: 'H',
    quartiers: [
      ['0101', 'Vieux-Lille'],
      ['0201', 'Centre'],
      ['0301', 'Wazemmes'],
      ['0401', 'Fives'],
    ],
  },
  '67482': {
    type: 'H',
    quartiers: [
      ['0201', 'Cronenbourg'],
      ['0401', 'Robertsau'],
      ['0601', 'Montagne Verte'],
      ['0801', 'Neudorf'],
    ],
  },
};

function irisGeojson(): string {
  const features = COMMUNES.flatMap((c) => {
    const iris = IRIS[c.insee];
    const d = c.rayonM * 1.25;
    // Quadrants in the order north-west, north-east, south-west, south-east.
    const cadres: Array<[number, number, number, number]> =
      iris.quartiers.length === 1
        ? [[-d, -d, d, d]]
        : [
            [-d, 0, 0, d],
            [0, 0, d, d],
            [-d, -d, 0, 0],
            [0, -d, d, 0],
          ];
    return iris.quartiers.map(([code, nom], i) => ({
      type: 'Feature',
      properties: {
        INSEE_COM: c.insee,
        NOM_COM: c.nom,
        IRIS: code,
        CODE_IRIS: `${c.insee}${code}`,
        NOM_IRIS: `${nom} ${FICTIF.iris}`,
        TYP_IRIS: iris.type,
      },
      geometry: { type: 'Polygon', coordinates: [rectangle(c, ...cadres[i])] },
    }));
  });
  return featureCollection('contours_iris_bac_a_sable', features);
}

/** Drawn from the centres alone: the same for every seed. */
export const irisPart: SandboxPart<'iris'> = {
  source: 'iris',
  fichiers: () => [['contours-iris.geojson', irisGeojson()]],
};
