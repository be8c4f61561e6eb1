import { featureCollection, FICTIF, type SandboxPart } from '../part.ts';
import { COMMUNES, rectangle, type InseeSandbox } from '../territoire.ts';

/** Zoning of the Géoportail de l'Urbanisme (ZONE_URBA): a grid of three by three zones around each centre. */

/**
 * By commune: the planning document (IDURBA, prefix of its files, approval date) and the zones of the grid, row by
 * row from the north-west.
 */
const PLU: Record<InseeSandbox, { idurba: string; prefixe: string; date: string; grille: string[] }> = {
  '33234': {
    idurba: '33234_PLU_20170123',
    prefixe: '33234',
    date: '20170123',
    grille: ['N', 'A', '1AU', 'UC', 'UA', 'UB', 'A', 'UB', 'N'],
  },
  '33001': {
    idurba: '33001_PLU_20130627',
    prefixe: '33001',
    date: '20130627',
    grille: ['A', 'N', 'A', 'UB', 'UA', 'UB', 'N', '1AU', 'A'],
  },
  '75111': {
    idurba: '75056_PLU_20241120',
    prefixe: '75056',
    date: '20241120',
    grille: ['UG', 'UG', 'UV', 'UG', 'UG', 'UG', 'UGSU', 'UG', 'UG'],
  },
  '59350': {
    idurba: '200093201_PLUi_20191212',
    prefixe: '200093201',
    date: '20191212',
    grille: ['UAR', 'UCO', 'UAR', 'UE', 'UCO', 'UAR', 'UAR', 'UCO', 'NL'],
  },
  '67482': {
    idurba: '246700488_PLUi_20161216',
    prefixe: '246700488',
    date: '20161216',
    grille: ['UB2', 'UA1', 'N1', 'UCA4', 'UA1', 'UB2', 'UX3', 'UB2', 'UCA4'],
  },
};

const ZONES: Record<string, { libelong: string; typezone: string; destdomi: string; page: number }> = {
  UA: { libelong: 'Zone urbaine du centre ancien', typezone: 'U', destdomi: '01', page: 7 },
  UB: { libelong: 'Zone urbaine de première couronne', typezone: 'U', destdomi: '01', page: 17 },
  UC: { libelong: 'Zone urbaine pavillonnaire', typezone: 'U', destdomi: '01', page: 27 },
  '1AU': { libelong: 'Zone à urbaniser à court terme', typezone: 'AUc', destdomi: '01', page: 51 },
  A: { libelong: 'Zone agricole', typezone: 'A', destdomi: '00', page: 61 },
  N: { libelong: 'Zone naturelle et forestière', typezone: 'N', destdomi: '00', page: 69 },
  UG: { libelong: 'Zone urbaine générale', typezone: 'U', destdomi: '01', page: 12 },
  UGSU: { libelong: 'Zone urbaine de grands services urbains', typezone: 'U', destdomi: '06', page: 88 },
  UV: { libelong: 'Zone urbaine verte', typezone: 'U', destdomi: '00', page: 104 },
  UCO: { libelong: 'Zone urbaine de centralité', typezone: 'U', destdomi: '01', page: 21 },
  UAR: { libelong: 'Zone urbaine résidentielle', typezone: 'U', destdomi: '01', page: 45 },
  UE: { libelong: 'Zone urbaine économique', typezone: 'U', destdomi: '02', page: 73 },
  NL: { libelong: 'Zone naturelle de loisirs', typezone: 'N', destdomi: '00', page: 130 },
  UA1: { libelong: 'Zone urbaine des centres anciens', typezone: 'U', destdomi: '01', page: 15 },
  UB2: { libelong: 'Zone urbaine mixte de faubourg', typezone: 'U', destdomi: '01', page: 39 },
  UCA4: { libelong: 'Zone urbaine d’habitat collectif', typezone: 'U', destdomi: '01', page: 58 },
  UX3: { libelong: 'Zone urbaine d’activités', typezone: 'U', destdomi: '02', page: 96 },
  N1: { libelong: 'Zone naturelle de protection des espaces', typezone: 'N', destdomi: '00', page: 140 },
};

function zonageGeojson(): string {
  const features = COMMUNES.flatMap((c) => {
    const plu = PLU[c.insee];
    const d = c.rayonM * 1.25;
    const pas = (2 * d) / 3;
    const approuve = plu.date;
    return plu.grille.map((libelle, i) => {
      const ligne = Math.floor(i / 3);
      const colonne = i % 3;
      const ouest = -d + colonne * pas;
      const nord = d - ligne * pas;
      const z = ZONES[libelle];
      return {
        type: 'Feature',
        properties: {
          IDURBA: plu.idurba,
          LIBELLE: libelle,
          LIBELONG: `${z.libelong} ${FICTIF.zonage}`,
          TYPEZONE: z.typezone,
          DESTDOMI: z.destdomi,
          NOMFIC: `${plu.prefixe}_reglement_${approuve}.pdf#page=${z.page}`,
          URLFIC: '',
          DATAPPRO: approuve,
          DATVALID: approuve,
        },
        geometry: { type: 'Polygon', coordinates: [rectangle(c, ouest, nord - pas, ouest + pas, nord)] },
      };
    });
  });
  return featureCollection('zone_urba_bac_a_sable', features);
}

/** Drawn from the centres alone: the same for every seed. */
export const gpuPart: SandboxPart<'gpu'> = {
  source: 'gpu',
  fichiers: () => [['zone-urba.geojson', zonageGeojson()]],
};
