import { fromWgs84 } from '../../lib/geometrie.ts';
import type { SANDBOX_COMMUNES } from '../platform/sandbox.ts';
import { Alea } from './alea.ts';

/**
 * The ground every part of the sandbox stands on: five real communes (real codes, names and centres) with fictitious
 * streets and numbers around their centres, each number on its cadastral parcels. The parts place their rows at these
 * numbers, streets and parcels, so that each importer attaches them to the same BAN keys.
 */

/** A commune of the sandbox. What a part generates in each commune is a table of its own, keyed by this code. */
export type InseeSandbox = (typeof SANDBOX_COMMUNES)[number];

export interface CommuneDef {
  insee: InseeSandbox;
  /** As the BAN and DVF write it. */
  nom: string;
  /** Upper case, as the BAN's libelle_acheminement writes it. */
  acheminement: string;
  departement: string;
  departementNom: string;
  region: string;
  regionNom: string;
  /** Real centre (WGS84). */
  lat: number;
  lon: number;
  /** Radius of the generated territory around the centre (m). */
  rayonM: number;
  urbaine: boolean;
  codePostal: (estM: number, nordM: number) => string;
  voies: number;
}

export const COMMUNES: CommuneDef[] = [
  {
    insee: '33234',
    nom: 'Latresne',
    acheminement: 'LATRESNE',
    departement: '33',
    departementNom: 'Gironde',
    region: '75',
    regionNom: 'Nouvelle-Aquitaine',
    lat: 44.7808,
    lon: -0.4942,
    rayonM: 1500,
    urbaine: false,
    codePostal: () => '33360',
    voies: 28,
  },
  {
    insee: '33001',
    nom: 'Abzac',
    acheminement: 'ABZAC',
    departement: '33',
    departementNom: 'Gironde',
    region: '75',
    regionNom: 'Nouvelle-Aquitaine',
    lat: 45.0156,
    lon: -0.1275,
    rayonM: 1500,
    urbaine: false,
    codePostal: () => '33230',
    voies: 26,
  },
  {
    insee: '75111',
    nom: 'Paris 11e Arrondissement',
    acheminement: 'PARIS',
    departement: '75',
    departementNom: 'Paris',
    region: '11',
    regionNom: 'Île-de-France',
    lat: 48.8591,
    lon: 2.38,
    rayonM: 900,
    urbaine: true,
    codePostal: () => '75011',
    voies: 36,
  },
  {
    insee: '59350',
    nom: 'Lille',
    acheminement: 'LILLE',
    departement: '59',
    departementNom: 'Nord',
    region: '32',
    regionNom: 'Hauts-de-France',
    lat: 50.6311,
    lon: 3.0571,
    rayonM: 2000,
    urbaine: true,
    codePostal: (est, nord) => (est > 300 && nord > -300 ? '59800' : '59000'),
    voies: 34,
  },
  {
    insee: '67482',
    nom: 'Strasbourg',
    acheminement: 'STRASBOURG',
    departement: '67',
    departementNom: 'Bas-Rhin',
    region: '44',
    regionNom: 'Grand Est',
    lat: 48.5734,
    lon: 7.7521,
    rayonM: 2500,
    urbaine: true,
    codePostal: (est, nord) => (nord < -600 ? '67100' : est < -600 ? '67200' : '67000'),
    voies: 34,
  },
];

/** Street types: BAN wording and the abbreviation SIRENE and Sitadel write. */
export const TYPES_VOIE: Record<string, string> = {
  Rue: 'RUE',
  Avenue: 'AV',
  Boulevard: 'BD',
  Passage: 'PAS',
  Impasse: 'IMP',
  Place: 'PL',
  Cité: 'CITE',
  Villa: 'VLA',
  Quai: 'QUAI',
  Cours: 'CRS',
  Square: 'SQ',
  Route: 'RTE',
  Chemin: 'CHE',
  Allée: 'ALL',
};

// Names of places and things only: no person (nor saint) is named, so that the privacy checks can look for names.
const LIBELLES_URBAINS = [
  'des Ateliers',
  'de la Fontaine',
  'du Marché',
  'des Tanneurs',
  'des Orfèvres',
  'de la Forge',
  'du Canal',
  'des Écoles',
  'de la Gare',
  'du Théâtre',
  'des Arts',
  'de la République',
  'de la Paix',
  'des Lilas',
  'du Commerce',
  'des Brasseurs',
  'des Tisserands',
  "de l'Horloge",
  'des Remparts',
  'du Pont',
  'de la Halle',
  'des Jardins',
  'du Moulin',
  'de la Liberté',
  'des Glycines',
  'du Four',
  'des Vignerons',
  "de l'Industrie",
  'des Carmes',
  'du Grenier',
  'de la Poste',
  'des Artisans',
  'de la Source',
  'des Rosiers',
  'du Parc',
  'des Peupliers',
  'du Beffroi',
  "de l'Arsenal",
  'des Bateliers',
  'de la Mairie',
  'des Verriers',
  'du Rempart Nord',
  'des Passementiers',
  'de la Filature',
];

const LIBELLES_RURAUX = [
  'des Vignes',
  'du Moulin',
  'de la Croix',
  'des Chênes',
  'du Stade',
  "de l'Église",
  'des Prés',
  'de la Fontaine',
  'du Lavoir',
  'des Acacias',
  'des Pins',
  'de la Palombière',
  'du Bourg',
  'des Sources',
  'de la Garenne',
  'des Coteaux',
  "du Château d'Eau",
  'de la Forêt',
  'des Écoliers',
  'du Port',
  'des Tilleuls',
  'de la Plaine',
  'des Bruyères',
  'des Noyers',
  'du Ruisseau',
  'des Cerisiers',
  'de la Gravière',
  'des Palus',
  'du Pressoir',
  'des Genêts',
];

const LIEUX_DITS = ['Le Bourg', 'Les Granges', 'La Lande', 'Les Tuileries', 'La Grave', 'Le Tertre', 'Bel Air'];

const SECTIONS =
  'AB AC AD AE AH AK AL AM AN AO AP AR AS AT AV AW AX AY AZ BA BC BD BE BH BI BK BL BM BN BO BP BR BS BT BV BW'.split(
    ' ',
  );

export interface Voie {
  commune: CommuneDef;
  /** Street code as FANTOIR and DVF write it (Z001); lower case in BAN keys. */
  code: string;
  type: string;
  libelle: string;
  nom: string;
  codePostal: string;
  section: string;
  lieuDit: string | null;
  numeros: Numero[];
  /** The first parcel number of its section after its numbers' (building land sold without a number takes those). */
  planLibre: number;
  /** Start of the street, m east and north of the centre. */
  x0: number;
  y0: number;
}

export interface Numero {
  voie: Voie;
  cle: string;
  numero: number;
  rep: '' | 'bis' | 'ter';
  lat: number;
  lon: number;
  parcelles: string[];
}

export interface Territoire {
  commune: CommuneDef;
  voies: Voie[];
  numeros: Numero[];
}

// Not lib/geometrie.ts's sphere: the frozen sandbox was drawn with this rounder figure, and another would move every
// generated point.
const METRES_PAR_DEGRE = 111_320;

export function position(c: CommuneDef, estM: number, nordM: number): { lat: number; lon: number } {
  const lat = c.lat + nordM / METRES_PAR_DEGRE;
  const lon = c.lon + estM / (METRES_PAR_DEGRE * Math.cos((c.lat * Math.PI) / 180));
  return { lat: round(lat, 6), lon: round(lon, 6) };
}

/** Metres from the centre of the commune to a point, on the same plane as `position`. */
export function metresDuCentre(c: CommuneDef, p: { lat: number; lon: number }): number {
  return Math.hypot(
    (p.lat - c.lat) * METRES_PAR_DEGRE,
    (p.lon - c.lon) * METRES_PAR_DEGRE * Math.cos((c.lat * Math.PI) / 180),
  );
}

export function round(n: number, decimals: number): number {
  const f = 10 ** decimals;
  return Math.round(n * f) / f;
}

export function parcelle(insee: string, section: string, plan: number): string {
  return `${insee}000${section}${String(plan).padStart(4, '0')}`;
}

/** Streets of a commune: straight, starting near the centre, numbered odd on the left and even on the right. */
export function territoire(seed: number, c: CommuneDef): Territoire {
  const alea = new Alea(seed, `ban:${c.insee}`);
  const libelles = alea.shuffle([...(c.urbaine ? LIBELLES_URBAINS : LIBELLES_RURAUX)]).slice(0, c.voies);
  const types = c.urbaine
    ? ([
        ['Rue', 60],
        ['Avenue', 8],
        ['Boulevard', 5],
        ['Passage', 8],
        ['Impasse', 6],
        ['Cité', 3],
        ['Villa', 3],
        ['Quai', 2],
        ['Cours', 3],
        ['Square', 2],
      ] as const)
    : ([
        ['Route', 14],
        ['Chemin', 34],
        ['Rue', 26],
        ['Allée', 12],
        ['Impasse', 10],
      ] as const);
  const sections = alea.shuffle([...SECTIONS]);
  const voies: Voie[] = [];
  const numeros: Numero[] = [];
  const espacement = c.urbaine ? [10, 18] : [20, 45];
  libelles.forEach((libelle, i) => {
    // The first street of a commune is its main place.
    const type = i === 0 ? 'Place' : alea.weighted(types);
    const r = Math.sqrt(alea.next()) * c.rayonM * 0.5;
    const angle = alea.between(0, 2 * Math.PI);
    const x0 = r * Math.cos(angle);
    const y0 = r * Math.sin(angle);
    const direction = alea.between(0, 2 * Math.PI);
    const voie: Voie = {
      commune: c,
      code: `Z${String(i + 1).padStart(3, '0')}`,
      type,
      libelle,
      nom: `${type} ${libelle}`,
      codePostal: c.codePostal(x0, y0),
      section: sections[i % sections.length],
      lieuDit: !c.urbaine && alea.chance(0.3) ? alea.pick(LIEUX_DITS) : null,
      numeros: [],
      planLibre: 0,
      x0,
      y0,
    };
    const count = type === 'Place' ? alea.int(4, 8) : c.urbaine ? alea.int(6, 14) : alea.int(5, 12);
    let plan = alea.int(10, 400);
    const pas = alea.between(espacement[0], espacement[1]);
    let numero = 0;
    for (let k = 0; k < count; k++) {
      // Odd and even alternately, with the gaps of real streets.
      numero += alea.chance(0.2) ? 3 : 1;
      const cote = numero % 2 === 1 ? 1 : -1;
      const along = Math.ceil(numero / 2) * pas;
      const ex = x0 + along * Math.cos(direction) + cote * 7 * Math.cos(direction + Math.PI / 2);
      const ny = y0 + along * Math.sin(direction) + cote * 7 * Math.sin(direction + Math.PI / 2);
      const reps: Array<'' | 'bis' | 'ter'> = [''];
      if (alea.chance(0.06)) reps.push('bis');
      if (reps.length === 2 && alea.chance(0.2)) reps.push('ter');
      for (const [j, rep] of reps.entries()) {
        const pos = position(c, ex + j * 3 * Math.cos(direction), ny + j * 3 * Math.sin(direction));
        const parcelles = [parcelle(c.insee, voie.section, plan)];
        plan++;
        if (alea.chance(0.1)) parcelles.push(parcelle(c.insee, voie.section, plan++));
        const n: Numero = {
          voie,
          cle: `${c.insee}_${voie.code.toLowerCase()}_${String(numero).padStart(5, '0')}${rep ? `_${rep}` : ''}`,
          numero,
          rep,
          ...pos,
          parcelles,
        };
        voie.numeros.push(n);
        numeros.push(n);
      }
    }
    voie.planLibre = plan + 5;
    voies.push(voie);
  });
  return { commune: c, voies, numeros };
}

/** Upper case without accents, as AFNOR addresses (BAN nom_afnor, DVF, SIRENE) are written. */
export function afnor(text: string): string {
  return text
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/'/g, ' ')
    .toUpperCase();
}

/** Lambert-93 coordinates as the BAN and DPE files write them: metres to the centimetre. */
export function lambert93(lat: number, lon: number): { x: string; y: string } {
  const { x, y } = fromWgs84('l93', lat, lon);
  return { x: x.toFixed(2), y: y.toFixed(2) };
}

type Anneau = Array<[number, number]>;

/** The closed ring of a rectangle given in m east and north of the centre. */
export function rectangle(c: CommuneDef, ouest: number, sud: number, est: number, nord: number): Anneau {
  const p = (x: number, y: number): [number, number] => {
    const { lat, lon } = position(c, x, y);
    return [lon, lat];
  };
  return [p(ouest, sud), p(est, sud), p(est, nord), p(ouest, nord), p(ouest, sud)];
}
