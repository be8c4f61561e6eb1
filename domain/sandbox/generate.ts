import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import proj4 from 'proj4';
import { mulberry32 } from '../../lib/random.ts';

/**
 * The frozen sandbox territory, generated: five real communes (`SANDBOX_COMMUNES`) with fictitious streets, numbers,
 * sales, DPE, permits, companies and notices placed around their real centres, written in the official formats so
 * that the real importers load them (domain/sandbox/load.ts). Everything derives from one seed through a small PRNG:
 * the same seed gives the same bytes, so the sandbox served to pk_test_ keys is frozen.
 *
 * Coherence between the files, which the importers rely on:
 * - BAN numbers carry their cadastral parcels; DVF sales, permits and SIRENE establishments use those numbers, street
 *   codes and parcels, so that each importer attaches them to the same BAN keys.
 * - DPE rows name their BAN key (`Identifiant__BAN`); audits name their DPE.
 * - SCI are SIRENE legal units with their seat at a BAN number; their BODACC notices carry their SIREN and seat.
 * - Strasbourg (67482) is Alsace-Moselle: addresses, DPE, permits and companies, but no DVF sale.
 *
 * Fictitious on purpose, and said so where a format has a free field: company names end with « (FICTIVE) », IRIS
 * names with « (contour fictif) », zoning labels with « (zonage fictif) ». Identifiers are drawn from ranges the
 * real files do not use in practice (street codes Z001…, mutation numbers from 9 000 001, SIREN 999…, DPE numbers
 * with S in fifth place), so that a real import into the same dataset overwrites nothing of it by accident.
 *
 * No natural person is named anywhere: street names are of places and things, sole traders are written without any
 * name (as SIRENE publishes a unit under partial diffusion), permits filed by private persons have no applicant,
 * and notices name companies only.
 */

/** The seed of the frozen sandbox (Latresne's INSEE code; any fixed value would do). */
export const SANDBOX_SEED = 33_234;

/** Marks of fictitious content in free fields. */
export const FICTIF = {
  societe: '(FICTIVE)',
  iris: '(contour fictif)',
  zonage: '(zonage fictif)',
} as const;

/** Sources of the generated files, in the order they must be imported (BAN first: others attach to it). */
export const SANDBOX_SOURCES = ['ban', 'dvf', 'dpe', 'permis', 'sirene', 'bodacc', 'iris', 'gpu'] as const;
export type SandboxSource = (typeof SANDBOX_SOURCES)[number];
/** Paths of the generated files by source, each list in import order (DPE before audits, units before establishments). */
export type SandboxFiles = Record<SandboxSource, string[]>;

// ---------------------------------------------------------------------------------------------------------------------
// Randomness.
// ---------------------------------------------------------------------------------------------------------------------

/** FNV-1a: the label of a stream of draws, hashed into its seed. */
function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/**
 * Draws of one labelled stream. Each commune and each file draws from streams of its own, so that adding draws to
 * one part of the generator leaves the other files as they were.
 */
class Alea {
  readonly #next: () => number;

  constructor(seed: number, label: string) {
    this.#next = mulberry32((seed ^ fnv1a(label)) >>> 0);
  }

  next(): number {
    return this.#next();
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  between(min: number, max: number): number {
    return min + this.next() * (max - min);
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)];
  }

  weighted<T>(items: ReadonlyArray<readonly [T, number]>): T {
    const total = items.reduce((s, [, w]) => s + w, 0);
    let r = this.next() * total;
    for (const [item, w] of items) {
      r -= w;
      if (r < 0) return item;
    }
    return items[items.length - 1][0];
  }

  /** A standard normal draw (Box-Muller). */
  normal(): number {
    const u = 1 - this.next();
    const v = this.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }

  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [items[i], items[j]] = [items[j], items[i]];
    }
    return items;
  }

  /** A day in [from, to] (AAAA-MM-JJ). */
  day(from: string, to: string): string {
    const a = Date.parse(`${from}T00:00:00Z`) / 86_400_000;
    const b = Date.parse(`${to}T00:00:00Z`) / 86_400_000;
    return isoDay(this.int(a, b));
  }
}

function isoDay(days: number): string {
  return new Date(days * 86_400_000).toISOString().slice(0, 10);
}

function plusJours(iso: string, jours: number): string {
  return isoDay(Date.parse(`${iso}T00:00:00Z`) / 86_400_000 + jours);
}

function plusAns(iso: string, ans: number): string {
  return `${Number(iso.slice(0, 4)) + ans}${iso.slice(4)}`;
}

// ---------------------------------------------------------------------------------------------------------------------
// The five communes: real codes, names and centres, and what is generated there.
// ---------------------------------------------------------------------------------------------------------------------

type TypeVente = 'appartement' | 'appartement_cave' | 'bloc' | 'maison' | 'vefa' | 'terrain' | 'dependance';

interface CommuneDef {
  insee: string;
  /** As the BAN and DVF write it. */
  nom: string;
  /** Upper case, as the BAN's libelle_acheminement and SIRENE write it. */
  acheminement: string;
  sireneCommune: string;
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
  /** Median €/m² of dwellings by year, 2018 to 2025; null where DVF does not publish (Alsace-Moselle). */
  prixM2: number[] | null;
  /** €/m² of building land. */
  prixTerrainM2: number;
  mutations: number;
  ventes: Array<readonly [TypeVente, number]>;
  dpe: number;
  /** Weights of the DPE classes A to G. */
  classes: number[];
  permis: number;
  sci: number;
  promoteur: boolean;
  tribunal: string;
  greffe: string;
  iris: { type: 'H' | 'Z'; quartiers: Array<[code: string, nom: string]> };
  plu: { idurba: string; prefixe: string; date: string; grille: string[] };
}

const ANNEES = [2018, 2019, 2020, 2021, 2022, 2023, 2024, 2025];

const COMMUNES: CommuneDef[] = [
  {
    insee: '33234',
    nom: 'Latresne',
    acheminement: 'LATRESNE',
    sireneCommune: 'LATRESNE',
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
    prixM2: [3000, 3200, 3400, 3700, 3950, 3900, 3800, 3800],
    prixTerrainM2: 180,
    mutations: 60,
    ventes: [
      ['maison', 75],
      ['appartement', 12],
      ['terrain', 8],
      ['vefa', 5],
    ],
    dpe: 30,
    classes: [6, 12, 25, 28, 15, 8, 6],
    permis: 10,
    sci: 4,
    promoteur: false,
    tribunal: 'Greffe du Tribunal de Commerce de Bordeaux',
    greffe: 'Bordeaux',
    iris: { type: 'Z', quartiers: [['0000', 'Latresne']] },
    plu: {
      idurba: '33234_PLU_20170123',
      prefixe: '33234',
      date: '20170123',
      grille: ['N', 'A', '1AU', 'UC', 'UA', 'UB', 'A', 'UB', 'N'],
    },
  },
  {
    insee: '33001',
    nom: 'Abzac',
    acheminement: 'ABZAC',
    sireneCommune: 'ABZAC',
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
    prixM2: [1500, 1600, 1700, 1900, 2050, 2050, 2000, 2000],
    prixTerrainM2: 45,
    mutations: 50,
    ventes: [
      ['maison', 85],
      ['terrain', 10],
      ['appartement', 5],
    ],
    dpe: 30,
    classes: [3, 8, 18, 28, 20, 13, 10],
    permis: 8,
    sci: 3,
    promoteur: false,
    tribunal: 'Greffe du Tribunal de Commerce de Libourne',
    greffe: 'Libourne',
    iris: { type: 'Z', quartiers: [['0000', 'Abzac']] },
    plu: {
      idurba: '33001_PLU_20130627',
      prefixe: '33001',
      date: '20130627',
      grille: ['A', 'N', 'A', 'UB', 'UA', 'UB', 'N', '1AU', 'A'],
    },
  },
  {
    insee: '75111',
    nom: 'Paris 11e Arrondissement',
    acheminement: 'PARIS',
    sireneCommune: 'PARIS 11',
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
    prixM2: [9800, 10500, 10900, 10800, 10700, 10200, 9700, 9700],
    prixTerrainM2: 0,
    mutations: 120,
    ventes: [
      ['appartement', 62],
      ['appartement_cave', 25],
      ['bloc', 3],
      ['dependance', 10],
    ],
    dpe: 45,
    classes: [2, 4, 12, 25, 25, 17, 15],
    permis: 8,
    sci: 5,
    promoteur: true,
    tribunal: 'Greffe du Tribunal de Commerce de Paris',
    greffe: 'Paris',
    iris: {
      type: 'H',
      quartiers: [
        ['4101', 'République'],
        ['4201', 'Folie-Méricourt'],
        ['4301', 'Bastille'],
        ['4401', 'Roquette'],
      ],
    },
    plu: {
      idurba: '75056_PLU_20241120',
      prefixe: '75056',
      date: '20241120',
      grille: ['UG', 'UG', 'UV', 'UG', 'UG', 'UG', 'UGSU', 'UG', 'UG'],
    },
  },
  {
    insee: '59350',
    nom: 'Lille',
    acheminement: 'LILLE',
    sireneCommune: 'LILLE',
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
    prixM2: [3200, 3400, 3550, 3700, 3800, 3700, 3550, 3500],
    prixTerrainM2: 400,
    mutations: 100,
    ventes: [
      ['appartement', 48],
      ['appartement_cave', 10],
      ['bloc', 2],
      ['maison', 30],
      ['vefa', 5],
      ['dependance', 5],
    ],
    dpe: 40,
    classes: [2, 5, 15, 30, 25, 13, 10],
    permis: 10,
    sci: 4,
    promoteur: true,
    tribunal: 'Greffe du Tribunal de Commerce de Lille Métropole',
    greffe: 'Lille Métropole',
    iris: {
      type: 'H',
      quartiers: [
        ['0101', 'Vieux-Lille'],
        ['0201', 'Centre'],
        ['0301', 'Wazemmes'],
        ['0401', 'Fives'],
      ],
    },
    plu: {
      idurba: '200093201_PLUi_20191212',
      prefixe: '200093201',
      date: '20191212',
      grille: ['UAR', 'UCO', 'UAR', 'UE', 'UCO', 'UAR', 'UAR', 'UCO', 'NL'],
    },
  },
  {
    insee: '67482',
    nom: 'Strasbourg',
    acheminement: 'STRASBOURG',
    sireneCommune: 'STRASBOURG',
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
    // Alsace-Moselle: sales are published by the land register of the courts, not in DVF.
    prixM2: null,
    prixTerrainM2: 0,
    mutations: 0,
    ventes: [],
    dpe: 40,
    classes: [3, 6, 18, 32, 22, 11, 8],
    permis: 10,
    sci: 4,
    promoteur: true,
    // The trade register of Alsace-Moselle is kept by the judicial court, not by a commercial court.
    tribunal: 'Tribunal Judiciaire de Strasbourg',
    greffe: 'Strasbourg',
    iris: {
      type: 'H',
      quartiers: [
        ['0201', 'Cronenbourg'],
        ['0401', 'Robertsau'],
        ['0601', 'Montagne Verte'],
        ['0801', 'Neudorf'],
      ],
    },
    plu: {
      idurba: '246700488_PLUi_20161216',
      prefixe: '246700488',
      date: '20161216',
      grille: ['UB2', 'UA1', 'N1', 'UCA4', 'UA1', 'UB2', 'UX3', 'UB2', 'UCA4'],
    },
  },
];

// ---------------------------------------------------------------------------------------------------------------------
// Streets and numbers (BAN).
// ---------------------------------------------------------------------------------------------------------------------

/** Street types: BAN wording and the abbreviation SIRENE and Sitadel write. */
const TYPES_VOIE: Record<string, string> = {
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

interface Voie {
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
  /** The next free parcel number of its section (land sold without a number takes one). */
  planLibre: number;
  /** Start of the street, m east and north of the centre. */
  x0: number;
  y0: number;
}

interface Numero {
  voie: Voie;
  cle: string;
  numero: number;
  rep: '' | 'bis' | 'ter';
  lat: number;
  lon: number;
  parcelles: string[];
}

interface Territoire {
  commune: CommuneDef;
  voies: Voie[];
  numeros: Numero[];
}

const METRES_PAR_DEGRE = 111_320;

function position(c: CommuneDef, estM: number, nordM: number): { lat: number; lon: number } {
  const lat = c.lat + nordM / METRES_PAR_DEGRE;
  const lon = c.lon + estM / (METRES_PAR_DEGRE * Math.cos((c.lat * Math.PI) / 180));
  return { lat: round(lat, 6), lon: round(lon, 6) };
}

function round(n: number, decimals: number): number {
  const f = 10 ** decimals;
  return Math.round(n * f) / f;
}

function parcelle(insee: string, section: string, plan: number): string {
  return `${insee}000${section}${String(plan).padStart(4, '0')}`;
}

/** Streets of a commune: straight, starting near the centre, numbered odd on the left and even on the right. */
function territoire(seed: number, c: CommuneDef): Territoire {
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
function afnor(text: string): string {
  return text
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/'/g, ' ')
    .toUpperCase();
}

const LAMBERT_93 =
  '+proj=lcc +lat_0=46.5 +lon_0=3 +lat_1=49 +lat_2=44 +x_0=700000 +y_0=6600000 +ellps=GRS80 +towgs84=0,0,0,0,0,0,0 +units=m +no_defs';
const versLambert93 = proj4('WGS84', LAMBERT_93);

function lambert93(lat: number, lon: number): { x: string; y: string } {
  const [x, y] = versLambert93.forward([lon, lat]);
  return { x: x.toFixed(2), y: y.toFixed(2) };
}

const BAN_ENTETE =
  'id,id_fantoir,numero,rep,nom_voie,code_postal,code_insee,nom_commune,code_insee_ancienne_commune,nom_ancienne_commune,x,y,lon,lat,type_position,alias,nom_ld,libelle_acheminement,nom_afnor,source_position,source_nom_voie,certification_commune,cad_parcelles'.split(
    ',',
  );

function banCsv(seed: number, territoires: Territoire[]): string {
  const alea = new Alea(seed, 'ban:fichier');
  const lignes = [BAN_ENTETE.join(';')];
  for (const t of territoires) {
    for (const n of t.numeros) {
      const v = n.voie;
      const { x, y } = lambert93(n.lat, n.lon);
      lignes.push(
        [
          n.cle,
          `${t.commune.insee}_${v.code}`,
          n.numero,
          n.rep,
          v.nom,
          v.codePostal,
          t.commune.insee,
          t.commune.nom,
          '',
          '',
          x,
          y,
          n.lon.toFixed(6),
          n.lat.toFixed(6),
          alea.chance(0.85) ? 'entrée' : 'bâtiment',
          '',
          v.lieuDit ?? '',
          t.commune.acheminement,
          afnor(v.nom),
          'commune',
          'commune',
          alea.chance(0.9) ? '1' : '0',
          n.parcelles.join('|'),
        ].join(';'),
      );
    }
  }
  return `${lignes.join('\n')}\n`;
}

// ---------------------------------------------------------------------------------------------------------------------
// CSV.
// ---------------------------------------------------------------------------------------------------------------------

function champCsv(value: string | number, separateur: string): string {
  const text = String(value);
  return text.includes(separateur) || text.includes('"') || text.includes('\n')
    ? `"${text.replace(/"/g, '""')}"`
    : text;
}

function csv(entete: readonly string[], lignes: Array<Record<string, string | number>>, separateur: string): string {
  const out = [entete.map((c) => champCsv(c, separateur)).join(separateur)];
  for (const l of lignes) out.push(entete.map((c) => champCsv(l[c] ?? '', separateur)).join(separateur));
  return `${out.join('\n')}\n`;
}

// ---------------------------------------------------------------------------------------------------------------------
// DVF géolocalisées (Etalab).
// ---------------------------------------------------------------------------------------------------------------------

const DVF_ENTETE =
  'id_mutation,date_mutation,numero_disposition,nature_mutation,valeur_fonciere,adresse_numero,adresse_suffixe,adresse_nom_voie,adresse_code_voie,code_postal,code_commune,nom_commune,code_departement,ancien_code_commune,ancien_nom_commune,id_parcelle,ancien_id_parcelle,numero_volume,lot1_numero,lot1_surface_carrez,lot2_numero,lot2_surface_carrez,lot3_numero,lot3_surface_carrez,lot4_numero,lot4_surface_carrez,lot5_numero,lot5_surface_carrez,nombre_lots,code_type_local,type_local,surface_reelle_bati,nombre_pieces_principales,code_nature_culture,nature_culture,code_nature_culture_speciale,nature_culture_speciale,surface_terrain,longitude,latitude'.split(
    ',',
  );

const NATURE_VENTE = 'Vente';
const NATURE_VEFA = "Vente en l'état futur d'achèvement";
const NATURE_TERRAIN = 'Vente terrain à bâtir';

interface Mutation {
  date: string;
  insee: string;
  ordre: number;
  lignes: Array<Record<string, string | number>>;
}

/** Lot numbers already sold in a building: a lot is one flat, sold again under the same number. */
function nouveauLot(alea: Alea, pris: Map<string, number[]>, cle: string): number {
  const lots = pris.get(cle) ?? [];
  // A flat already sold in this building is sold again one time in five: resales are part of DVF.
  if (lots.length > 0 && alea.chance(0.2)) return alea.pick(lots);
  let lot = alea.int(1, 180);
  while (lots.includes(lot)) lot++;
  lots.push(lot);
  pris.set(cle, lots);
  return lot;
}

function mutationsDe(seed: number, t: Territoire): Mutation[] {
  const c = t.commune;
  if (!c.prixM2) return [];
  const alea = new Alea(seed, `dvf:${c.insee}`);
  const lotsPris = new Map<string, number[]>();
  const out: Mutation[] = [];
  for (let k = 0; k < c.mutations; k++) {
    const annee = alea.weighted(ANNEES.map((a, i) => [a, i === 7 ? 0.5 : i === 3 || i === 4 ? 1.1 : 1] as const));
    // DVF publishes a year's first half in the autumn: 2025 stops at the end of June.
    const date = alea.day(`${annee}-01-02`, annee === 2025 ? '2025-06-30' : `${annee}-12-31`);
    const type = alea.weighted(c.ventes);
    const prix = c.prixM2[ANNEES.indexOf(annee)] * Math.exp(0.12 * alea.normal());
    const n = alea.pick(t.numeros);
    const v = n.voie;
    const lon = (n.lon + (alea.next() - 0.5) * 0.00008).toFixed(6);
    const lat = (n.lat + (alea.next() - 0.5) * 0.00006).toFixed(6);
    const base: Record<string, string | number> = {
      date_mutation: date,
      numero_disposition: '000001',
      nature_mutation: NATURE_VENTE,
      adresse_numero: n.numero,
      adresse_suffixe: n.rep === 'bis' ? 'B' : n.rep === 'ter' ? 'T' : '',
      adresse_nom_voie: afnor(v.nom),
      adresse_code_voie: v.code,
      code_postal: v.codePostal,
      code_commune: c.insee,
      nom_commune: c.nom,
      code_departement: c.departement,
      id_parcelle: n.parcelles[0],
      nombre_lots: 0,
      longitude: lon,
      latitude: lat,
    };
    const lignes: Array<Record<string, string | number>> = [];
    let valeur: number;
    if (type === 'appartement' || type === 'appartement_cave' || type === 'bloc' || type === 'vefa') {
      const vefa = type === 'vefa';
      const logements = type === 'bloc' ? 2 : 1;
      const lots: Array<{ numero: number; carrez: string }> = [];
      const apparts: Array<{ surface: number; pieces: number }> = [];
      for (let i = 0; i < logements; i++) {
        const pieces = alea.weighted([
          [1, 18],
          [2, 32],
          [3, 28],
          [4, 15],
          [5, 7],
        ] as const);
        const surface = Math.max(
          14,
          Math.round((16 + pieces * 17) * (c.insee === '75111' ? 0.85 : 1) * alea.between(0.85, 1.2)),
        );
        // Two equal flats with the same lots would read as one line twice: the second is made a little larger.
        apparts.push({ surface: apparts.some((a) => a.surface === surface) ? surface + 3 : surface, pieces });
        let lot = nouveauLot(alea, lotsPris, n.cle);
        while (lots.some((l) => l.numero === lot)) lot++;
        lots.push({ numero: lot, carrez: (apparts[i].surface * alea.between(0.95, 0.99)).toFixed(2) });
      }
      const cave = type === 'appartement_cave' ? { numero: alea.int(200, 260), carrez: '' } : null;
      if (cave) lots.push(cave);
      const surfaceTotale = apparts.reduce((s, a) => s + a.surface, 0);
      valeur = Math.round((prix * surfaceTotale * (vefa ? 1.15 : 1) * (cave ? 1.02 : 1)) / 100) * 100;
      const lotColonnes: Record<string, string | number> = { nombre_lots: lots.length };
      lots.forEach((l, i) => {
        lotColonnes[`lot${i + 1}_numero`] = l.numero;
        lotColonnes[`lot${i + 1}_surface_carrez`] = l.carrez;
      });
      for (const a of apparts) {
        lignes.push({
          ...base,
          ...lotColonnes,
          nature_mutation: vefa ? NATURE_VEFA : NATURE_VENTE,
          code_type_local: 2,
          type_local: 'Appartement',
          surface_reelle_bati: a.surface,
          nombre_pieces_principales: a.pieces,
        });
      }
      if (cave) {
        lignes.push({
          ...base,
          ...lotColonnes,
          code_type_local: 3,
          type_local: 'Dépendance',
          nombre_pieces_principales: 0,
        });
      }
    } else if (type === 'maison') {
      const pieces = alea.int(3, 7);
      const surface = Math.round((55 + pieces * 15) * alea.between(0.85, 1.2));
      const terrain = c.urbaine ? alea.int(120, 450) : alea.int(450, 1800);
      valeur = Math.round((prix * surface) / 100) * 100;
      const maison = {
        ...base,
        code_type_local: 1,
        type_local: 'Maison',
        surface_reelle_bati: surface,
        nombre_pieces_principales: pieces,
      };
      // A parcel of two land uses gives one line per use, the house repeated on each, as Etalab publishes it.
      if (!c.urbaine && alea.chance(0.4)) {
        const jardin = Math.round(terrain * alea.between(0.3, 0.6));
        lignes.push({ ...maison, code_nature_culture: 'S', nature_culture: 'sols', surface_terrain: terrain - jardin });
        lignes.push({ ...maison, code_nature_culture: 'J', nature_culture: 'jardins', surface_terrain: jardin });
      } else {
        lignes.push({ ...maison, code_nature_culture: 'S', nature_culture: 'sols', surface_terrain: terrain });
      }
      if (alea.chance(0.25)) {
        lignes.push({
          ...base,
          code_type_local: 3,
          type_local: 'Dépendance',
          nombre_pieces_principales: 0,
          code_nature_culture: 'S',
          nature_culture: 'sols',
          surface_terrain: terrain,
        });
      }
    } else if (type === 'terrain') {
      // Building land: a new parcel of the street's section, without a number.
      const surface = alea.int(400, 1500);
      valeur = Math.round((c.prixTerrainM2 * surface * Math.exp(0.15 * alea.normal())) / 100) * 100;
      const pos = position(c, v.x0 + alea.between(-40, 40), v.y0 + alea.between(-40, 40));
      lignes.push({
        ...base,
        nature_mutation: NATURE_TERRAIN,
        adresse_numero: '',
        adresse_suffixe: '',
        id_parcelle: parcelle(c.insee, v.section, v.planLibre++),
        code_nature_culture: 'AB',
        nature_culture: 'terrains a bâtir',
        surface_terrain: surface,
        longitude: pos.lon.toFixed(6),
        latitude: pos.lat.toFixed(6),
      });
    } else {
      // A parking space or a cellar sold alone: no dwelling, no price per m².
      const lot = alea.int(300, 420);
      valeur = Math.round((c.insee === '75111' ? alea.int(22_000, 38_000) : alea.int(9_000, 18_000)) / 100) * 100;
      lignes.push({
        ...base,
        lot1_numero: lot,
        nombre_lots: 1,
        code_type_local: 3,
        type_local: 'Dépendance',
        nombre_pieces_principales: 0,
      });
    }
    for (const l of lignes) l.valeur_fonciere = valeur;
    out.push({ date, insee: c.insee, ordre: k, lignes });
  }
  return out;
}

function dvfCsv(seed: number, territoires: Territoire[]): string {
  const mutations = territoires.flatMap((t) => mutationsDe(seed, t));
  mutations.sort((a, b) => a.date.localeCompare(b.date) || a.insee.localeCompare(b.insee) || a.ordre - b.ordre);
  const numeros = new Map<string, number>();
  const lignes: Array<Record<string, string | number>> = [];
  for (const m of mutations) {
    const annee = m.date.slice(0, 4);
    // Etalab numbers mutations per year; real files stay far below 9 000 000.
    const n = (numeros.get(annee) ?? 9_000_000) + 1;
    numeros.set(annee, n);
    for (const l of m.lignes) lignes.push({ id_mutation: `${annee}-${n}`, ...l });
  }
  return csv(DVF_ENTETE, lignes, ',');
}

// ---------------------------------------------------------------------------------------------------------------------
// DPE (ADEME open data, « DPE Logements existants ») and energy audits.
// ---------------------------------------------------------------------------------------------------------------------

const DPE_ENTETE =
  'N°DPE,Date_réception_DPE,Date_établissement_DPE,Date_visite_diagnostiqueur,Modèle_DPE,N°_DPE_remplacé,Date_fin_validité_DPE,Version_DPE,N°_DPE_immeuble_associé,Méthode_application_DPE,N°_immatriculation_copropriété,Etiquette_GES,Etiquette_DPE,Type_bâtiment,Année_construction,Période_construction,Surface_habitable_logement,Surface_habitable_immeuble,Nombre_niveau_immeuble,Nombre_appartement,Adresse_brute,Nom__commune_(BAN),Code_INSEE_(BAN),N°_voie_(BAN),Identifiant__BAN,Adresse_(BAN),Code_postal_(BAN),Score_BAN,Nom__rue_(BAN),Coordonnée_cartographique_X_(BAN),Coordonnée_cartographique_Y_(BAN),Code_département_(BAN),Conso_5_usages_par_m²_é_primaire,Emission_GES_5_usages_par_m²,Type_énergie_principale_chauffage,Type_installation_chauffage,Qualité_isolation_enveloppe,Qualité_isolation_murs,Qualité_isolation_menuiseries,Type_ventilation'.split(
    ',',
  );

const AUDIT_ENTETE =
  'n_audit,id_etape,categorie_scenario,etape_travaux,date_etablissement_audit,date_fin_validite_audit,n_audit_remplace,numero_dpe,classe_bilan_dpe,cout_travaux,couts_cumules_travaux'.split(
    ',',
  );

const CLASSES = ['A', 'B', 'C', 'D', 'E', 'F', 'G'] as const;
/** Primary energy (kWh/m²/year) and emissions (kg CO₂/m²/year) of each class, bounds included. */
const CONSO = [
  [45, 70],
  [71, 110],
  [111, 180],
  [181, 250],
  [251, 330],
  [331, 420],
  [421, 620],
];
const EMISSIONS = [
  [1, 6],
  [7, 11],
  [12, 30],
  [31, 50],
  [51, 70],
  [71, 100],
  [101, 140],
];
const PERIODES: Array<[string, number, number]> = [
  ['avant 1948', 1850, 1947],
  ['1948-1974', 1948, 1974],
  ['1975-1977', 1975, 1977],
  ['1978-1982', 1978, 1982],
  ['1983-1988', 1983, 1988],
  ['1989-2000', 1989, 2000],
  ['2001-2005', 2001, 2005],
  ['2006-2012', 2006, 2012],
  ['2013-2021', 2013, 2021],
];
const ISOLATION = ['très bonne', 'bonne', 'moyenne', 'insuffisante'];
const VENTILATIONS = [
  'Ventilation par ouverture des fenêtres',
  "Ventilation par entrées d'air hautes et basses",
  'VMC SF Auto réglable de 1982 à 2000',
  'VMC SF Hygro B après 2012',
  'VMC DF individuelle avec échangeur à partir de 2013',
];

interface DpeGenere {
  numero: string;
  classe: number;
  etabli: string;
  type: 'appartement' | 'maison';
  surface: number;
  insee: string;
}

function dpeDe(
  seed: number,
  t: Territoire,
  sequence: { n: number },
): { lignes: Array<Record<string, string | number>>; dpe: DpeGenere[] } {
  const c = t.commune;
  const alea = new Alea(seed, `dpe:${c.insee}`);
  // Every class in every commune, then the commune's own mix.
  const classes = alea.shuffle([0, 1, 2, 3, 4, 5, 6]);
  while (classes.length < c.dpe) classes.push(alea.weighted(c.classes.map((w, i) => [i, w] as const)));
  const lignes: Array<Record<string, string | number>> = [];
  const dpe: DpeGenere[] = [];
  for (const [k, classe] of classes.entries()) {
    const n = alea.pick(t.numeros);
    const v = n.voie;
    const type: 'appartement' | 'maison' = c.urbaine
      ? alea.chance(0.85)
        ? 'appartement'
        : 'maison'
      : alea.chance(0.85)
        ? 'maison'
        : 'appartement';
    // Audits are due for F and G houses sold since April 2023: those DPE are dated after it.
    const etabli = classe >= 5 ? alea.day('2023-04-01', '2025-10-31') : alea.day('2021-07-01', '2025-10-31');
    const periodeIndex = classe >= 5 ? alea.int(0, 2) : classe <= 1 ? alea.int(6, 8) : alea.int(0, 7);
    const [periode, de, a] = PERIODES[periodeIndex];
    const surface =
      type === 'appartement'
        ? Math.round(alea.between(classe >= 5 ? 14 : 25, classe >= 5 ? 55 : 95) * 10) / 10
        : Math.round(alea.between(70, 170) * 10) / 10;
    const ges = alea.int(0, classe);
    const conso = alea.int(CONSO[classe][0], CONSO[classe][1]);
    const emissions = alea.int(EMISSIONS[ges][0], EMISSIONS[ges][1]);
    const energie =
      ges <= 1 && classe >= 3
        ? 'Électricité'
        : c.insee === '75111' && alea.chance(0.2)
          ? 'Réseau de Chauffage urbain'
          : !c.urbaine && classe >= 5
            ? alea.pick(['Fioul domestique', 'Électricité', 'Bois – Bûches'])
            : alea.pick(['Gaz naturel', 'Électricité', 'Gaz naturel']);
    const isolation = (decalage: number) => ISOLATION[Math.max(0, Math.min(3, Math.floor(classe / 2) + decalage))];
    const numero = `${etabli.slice(2, 4)}${c.departement}S${String(++sequence.n).padStart(7, '0')}${'ABCDEFGHJKLMNPRSTUVWXYZ'[alea.int(0, 22)]}`;
    const numeroTexte = `${n.numero}${n.rep ? ` ${n.rep}` : ''}`;
    const { x, y } = lambert93(n.lat, n.lon);
    // A few diagnosticians typed another number than the one the observatory geocoded, and one score is weak: the
    // importer must flag those attachments as uncertain.
    const tape = k === 3 && c.urbaine ? `${n.numero + 2} ${v.nom}` : `${numeroTexte} ${v.nom}`;
    const score = k === 4 && c.insee === '67482' ? 0.42 : round(alea.between(0.82, 0.99), 2);
    const immeuble = type === 'appartement';
    lignes.push({
      'N°DPE': numero,
      Date_réception_DPE: plusJours(etabli, alea.int(0, 3)),
      Date_établissement_DPE: etabli,
      Date_visite_diagnostiqueur: plusJours(etabli, -alea.int(0, 10)),
      Modèle_DPE: 'DPE 3CL 2021 méthode logement',
      Date_fin_validité_DPE: plusJours(plusAns(etabli, 10), -1),
      Version_DPE: '2.4',
      Méthode_application_DPE: immeuble ? 'dpe appartement individuel' : 'dpe maison individuelle',
      Etiquette_GES: CLASSES[ges],
      Etiquette_DPE: CLASSES[classe],
      Type_bâtiment: type,
      Année_construction: alea.int(de, a),
      Période_construction: periode,
      Surface_habitable_logement: surface,
      Surface_habitable_immeuble: immeuble ? alea.int(6, 40) * 60 : '',
      Nombre_niveau_immeuble: immeuble ? alea.int(3, 7) : 1,
      Nombre_appartement: immeuble ? alea.int(6, 40) : 1,
      Adresse_brute: `${tape} ${v.codePostal} ${c.acheminement}`,
      'Nom__commune_(BAN)': c.nom,
      'Code_INSEE_(BAN)': c.insee,
      'N°_voie_(BAN)': n.numero,
      Identifiant__BAN: n.cle,
      'Adresse_(BAN)': `${numeroTexte} ${v.nom} ${v.codePostal} ${c.nom}`,
      'Code_postal_(BAN)': v.codePostal,
      Score_BAN: score,
      'Nom__rue_(BAN)': v.nom,
      'Coordonnée_cartographique_X_(BAN)': x,
      'Coordonnée_cartographique_Y_(BAN)': y,
      'Code_département_(BAN)': c.departement,
      'Conso_5_usages_par_m²_é_primaire': conso,
      'Emission_GES_5_usages_par_m²': emissions,
      Type_énergie_principale_chauffage: energie,
      Type_installation_chauffage: immeuble && alea.chance(0.4) ? 'collectif' : 'individuel',
      Qualité_isolation_enveloppe: isolation(0),
      Qualité_isolation_murs: isolation(alea.int(-1, 1)),
      Qualité_isolation_menuiseries: isolation(alea.int(-1, 1)),
      Type_ventilation: VENTILATIONS[Math.max(0, Math.min(4, 4 - Math.floor(classe * 0.7) + alea.int(-1, 0)))],
    });
    dpe.push({ numero, classe, etabli, type, surface, insee: c.insee });
  }
  return { lignes, dpe };
}

/** Audits of some F and G dwellings: an initial state and one or two scenarios of works, one row per step. */
function auditsDe(seed: number, dpe: DpeGenere[]): Array<Record<string, string | number>> {
  const alea = new Alea(seed, 'audits');
  const lignes: Array<Record<string, string | number>> = [];
  let sequence = 0;
  for (const d of dpe) {
    if (d.classe < 5 || !alea.chance(0.7)) continue;
    // Half are the pre-sale pack (audit within a month of its DPE), the others come later.
    const etabli = alea.chance(0.5) ? plusJours(d.etabli, alea.int(0, 20)) : plusJours(d.etabli, alea.int(35, 200));
    const numero = `A${etabli.slice(2, 4)}${d.insee.slice(0, 2)}S${String(++sequence).padStart(6, '0')}${'ABCDEFGHJKLMNPRSTUVWXYZ'[alea.int(0, 22)]}`;
    const commun = {
      n_audit: numero,
      date_etablissement_audit: etabli,
      date_fin_validite_audit: plusAns(etabli, 5),
      numero_dpe: d.numero,
    };
    const parM2 = d.type === 'maison' ? alea.between(300, 520) : alea.between(350, 700);
    const premiere = Math.round((d.surface * parM2 * 0.55) / 100) * 100;
    const finale = Math.round((d.surface * parM2 * 0.45) / 100) * 100;
    let etape = 0;
    lignes.push({
      ...commun,
      id_etape: ++etape,
      categorie_scenario: 'état initial',
      etape_travaux: 'état initial',
      classe_bilan_dpe: CLASSES[d.classe],
    });
    lignes.push({
      ...commun,
      id_etape: ++etape,
      categorie_scenario: 'scénario principal en deux étapes',
      etape_travaux: 'première étape',
      classe_bilan_dpe: CLASSES[alea.int(3, 4)],
      cout_travaux: premiere,
      couts_cumules_travaux: premiere,
    });
    lignes.push({
      ...commun,
      id_etape: ++etape,
      categorie_scenario: 'scénario principal en deux étapes',
      etape_travaux: 'étape finale',
      classe_bilan_dpe: CLASSES[alea.int(1, 2)],
      cout_travaux: finale,
      couts_cumules_travaux: premiere + finale,
    });
    if (alea.chance(0.5)) {
      const unique = Math.round((premiere + finale) * alea.between(0.85, 0.95));
      lignes.push({
        ...commun,
        id_etape: ++etape,
        categorie_scenario: 'scénario en une étape',
        etape_travaux: 'étape finale',
        classe_bilan_dpe: 'C',
        cout_travaux: unique,
        couts_cumules_travaux: unique,
      });
    }
  }
  return lignes;
}

// ---------------------------------------------------------------------------------------------------------------------
// Companies: SIRENE legal units and establishments.
// ---------------------------------------------------------------------------------------------------------------------

const NOMS_SCI = [
  'SCI LES GLYCINES',
  'SCI DU MOULIN',
  'SCI LES TROIS CHENES',
  'SCI DES COTEAUX',
  'SCI LA FONTAINE',
  'SCI DU CANAL',
  'SCI LES ATELIERS',
  'SCI LE BEFFROI',
  'SCI DES REMPARTS',
  'SCI LA HALLE',
  'SCI LES VIGNES',
  "SCI L'ARSENAL",
  'SCI DU PONT NEUF',
  'SCI LES TILLEULS',
  'SCI DES LILAS',
  'SCI BEL AIR',
  'SCI LES PINS',
  'SCI DU PARC',
  'SCI LA SOURCE',
  'SCI DES ARTISANS',
  'SCI LE GRENIER',
  'SCI DES PRES',
  'SCI LES ACACIAS',
  'SCI DE LA GARE',
];

const UL_ENTETE =
  'siren,statutDiffusionUniteLegale,unitePurgeeUniteLegale,dateCreationUniteLegale,sigleUniteLegale,sexeUniteLegale,prenom1UniteLegale,prenom2UniteLegale,prenom3UniteLegale,prenom4UniteLegale,prenomUsuelUniteLegale,pseudonymeUniteLegale,identifiantAssociationUniteLegale,trancheEffectifsUniteLegale,anneeEffectifsUniteLegale,dateDernierTraitementUniteLegale,nombrePeriodesUniteLegale,categorieEntreprise,anneeCategorieEntreprise,dateDebut,etatAdministratifUniteLegale,nomUniteLegale,nomUsageUniteLegale,denominationUniteLegale,denominationUsuelle1UniteLegale,denominationUsuelle2UniteLegale,denominationUsuelle3UniteLegale,categorieJuridiqueUniteLegale,activitePrincipaleUniteLegale,nomenclatureActivitePrincipaleUniteLegale,nicSiegeUniteLegale,economieSocialeSolidaireUniteLegale,caractereEmployeurUniteLegale'.split(
    ',',
  );

const ETAB_ENTETE =
  'siren,nic,siret,statutDiffusionEtablissement,dateCreationEtablissement,trancheEffectifsEtablissement,anneeEffectifsEtablissement,activitePrincipaleRegistreMetiersEtablissement,dateDernierTraitementEtablissement,etablissementSiege,nombrePeriodesEtablissement,complementAdresseEtablissement,numeroVoieEtablissement,indiceRepetitionEtablissement,typeVoieEtablissement,libelleVoieEtablissement,codePostalEtablissement,libelleCommuneEtablissement,libelleCommuneEtrangerEtablissement,distributionSpecialeEtablissement,codeCommuneEtablissement,codeCedexEtablissement,libelleCedexEtablissement,codePaysEtrangerEtablissement,libellePaysEtrangerEtablissement,complementAdresse2Etablissement,numeroVoie2Etablissement,indiceRepetition2Etablissement,typeVoie2Etablissement,libelleVoie2Etablissement,codePostal2Etablissement,libelleCommune2Etablissement,libelleCommuneEtranger2Etablissement,distributionSpeciale2Etablissement,codeCommune2Etablissement,codeCedex2Etablissement,libelleCedex2Etablissement,codePaysEtranger2Etablissement,libellePaysEtranger2Etablissement,dateDebut,etatAdministratifEtablissement,enseigne1Etablissement,enseigne2Etablissement,enseigne3Etablissement,denominationUsuelleEtablissement,activitePrincipaleEtablissement,nomenclatureActivitePrincipaleEtablissement,caractereEmployeurEtablissement,longitude,latitude,geo_score,geo_type,geo_adresse,geo_id,geo_ligne,geo_l4,geo_l5'.split(
    ',',
  );

/** The check digit that makes `digits` + it pass the Luhn test (SIREN and SIRET are Luhn numbers). */
function luhn(digits: string): string {
  for (let d = 0; d <= 9; d++) {
    const text = digits + d;
    let sum = 0;
    for (let i = 0; i < text.length; i++) {
      let n = Number(text[text.length - 1 - i]);
      if (i % 2 === 1) {
        n *= 2;
        if (n > 9) n -= 9;
      }
      sum += n;
    }
    if (sum % 10 === 0) return String(d);
  }
  throw new Error('unreachable');
}

type GenreSociete = 'sci' | 'agence' | 'promoteur' | 'entrepreneur';

interface Societe {
  genre: GenreSociete;
  siren: string;
  siret: string;
  nic: string;
  denomination: string | null;
  forme: string;
  categorie: string;
  ape: string;
  creeLe: string;
  cesseLe: string | null;
  capital: number;
  siege: Numero | null;
  commune: CommuneDef;
}

function societesDe(seed: number, territoires: Territoire[]): Societe[] {
  const alea = new Alea(seed, 'sirene');
  const noms = alea.shuffle([...NOMS_SCI]);
  const sirens = new Set<string>();
  const siren = () => {
    for (;;) {
      const base = `999${String(alea.int(0, 99_999)).padStart(5, '0')}`;
      const s = base + luhn(base);
      if (!sirens.has(s)) {
        sirens.add(s);
        return s;
      }
    }
  };
  const out: Societe[] = [];
  let ceased = false;
  for (const t of territoires) {
    const c = t.commune;
    const genres: GenreSociete[] = [
      ...Array<GenreSociete>(c.sci).fill('sci'),
      'agence',
      ...(c.promoteur ? (['promoteur'] as const) : []),
      'entrepreneur',
      'entrepreneur',
    ];
    for (const genre of genres) {
      const s = siren();
      const nicBase = `000${alea.int(1, 3)}`;
      const nic = nicBase + luhn(s + nicBase);
      const creeLe = genre === 'sci' ? alea.day('2010-01-01', '2024-06-30') : alea.day('2003-01-01', '2022-12-31');
      // One SCI of the territory was dissolved: a ceased unit, a closed seat and a removal notice.
      const cesse = genre === 'sci' && !ceased && c.insee === '59350' ? alea.day('2023-01-01', '2024-12-31') : null;
      if (cesse) ceased = true;
      const definition = {
        sci: {
          denomination: `${noms.pop()} ${FICTIF.societe}`,
          forme: 'Société civile immobilière',
          categorie: '6540',
          ape: '68.20B',
        },
        agence: {
          denomination: `AGENCE IMMOBILIERE ${afnor(alea.pick(t.voies).libelle)} ${FICTIF.societe}`,
          forme: 'Société à responsabilité limitée',
          categorie: '5499',
          ape: '68.31Z',
        },
        promoteur: {
          denomination: `${c.acheminement} HABITAT PROMOTION ${FICTIF.societe}`,
          forme: 'Société par actions simplifiée',
          categorie: '5710',
          ape: '41.10A',
        },
        // A sole trader: a natural person, written without any name.
        entrepreneur: {
          denomination: null,
          forme: 'Entrepreneur individuel',
          categorie: '1000',
          ape: alea.pick(['68.31Z', '43.32A', '71.11Z']),
        },
      }[genre];
      out.push({
        genre,
        siren: s,
        siret: s + nic,
        nic,
        ...definition,
        creeLe,
        cesseLe: cesse,
        capital:
          genre === 'sci' ? alea.pick([1000, 1500, 2000, 5000, 10_000, 150_000]) : alea.pick([7500, 10_000, 50_000]),
        siege: genre === 'entrepreneur' ? null : alea.pick(t.numeros),
        commune: c,
      });
    }
  }
  return out;
}

function traitement(alea: Alea): string {
  return `${alea.day('2024-01-01', '2025-10-31')}T${String(alea.int(0, 23)).padStart(2, '0')}:${String(alea.int(0, 59)).padStart(2, '0')}:${String(alea.int(0, 59)).padStart(2, '0')}`;
}

function unitesCsv(seed: number, societes: Societe[]): string {
  const alea = new Alea(seed, 'sirene:unites');
  const lignes = societes.map((s) => {
    const personne = s.genre === 'entrepreneur';
    return {
      siren: s.siren,
      // Partial diffusion: how SIRENE publishes sole traders who refused it, with no name and no address.
      statutDiffusionUniteLegale: personne ? 'P' : 'O',
      dateCreationUniteLegale: s.creeLe,
      trancheEffectifsUniteLegale: s.genre === 'sci' || personne ? 'NN' : alea.pick(['01', '02', '03']),
      dateDernierTraitementUniteLegale: traitement(alea),
      nombrePeriodesUniteLegale: s.cesseLe ? 2 : 1,
      categorieEntreprise: 'PME',
      anneeCategorieEntreprise: '2022',
      dateDebut: s.cesseLe ?? s.creeLe,
      etatAdministratifUniteLegale: s.cesseLe ? 'C' : 'A',
      denominationUniteLegale: s.denomination ?? '',
      categorieJuridiqueUniteLegale: s.categorie,
      activitePrincipaleUniteLegale: s.ape,
      nomenclatureActivitePrincipaleUniteLegale: 'NAFRev2',
      nicSiegeUniteLegale: s.nic,
      economieSocialeSolidaireUniteLegale: 'N',
      caractereEmployeurUniteLegale: 'N',
    };
  });
  return csv(UL_ENTETE, lignes, ',');
}

function etablissementsCsv(seed: number, societes: Societe[]): string {
  const alea = new Alea(seed, 'sirene:etablissements');
  const lignes = societes.map((s) => {
    const n = s.siege;
    const adresse: Record<string, string | number> = n
      ? {
          numeroVoieEtablissement: n.numero,
          indiceRepetitionEtablissement: n.rep === 'bis' ? 'B' : n.rep === 'ter' ? 'T' : '',
          typeVoieEtablissement: TYPES_VOIE[n.voie.type],
          libelleVoieEtablissement: afnor(n.voie.libelle),
          codePostalEtablissement: n.voie.codePostal,
          longitude: n.lon.toFixed(6),
          latitude: n.lat.toFixed(6),
          geo_score: round(alea.between(0.9, 0.99), 2),
          geo_type: 'housenumber',
          geo_adresse: `${n.numero}${n.rep ? ` ${n.rep}` : ''} ${n.voie.nom} ${n.voie.codePostal} ${s.commune.nom}`,
          geo_id: n.cle,
          geo_ligne: 'G',
          geo_l4: afnor(`${n.numero}${n.rep ? ` ${n.rep}` : ''} ${n.voie.nom}`),
        }
      : { codePostalEtablissement: s.commune.codePostal(0, 0) };
    return {
      siren: s.siren,
      nic: s.nic,
      siret: s.siret,
      statutDiffusionEtablissement: s.genre === 'entrepreneur' ? 'P' : 'O',
      dateCreationEtablissement: s.creeLe,
      dateDernierTraitementEtablissement: traitement(alea),
      etablissementSiege: 'true',
      nombrePeriodesEtablissement: s.cesseLe ? 2 : 1,
      ...adresse,
      libelleCommuneEtablissement: s.commune.sireneCommune,
      codeCommuneEtablissement: s.commune.insee,
      dateDebut: s.cesseLe ?? s.creeLe,
      etatAdministratifEtablissement: s.cesseLe ? 'F' : 'A',
      activitePrincipaleEtablissement: s.ape,
      nomenclatureActivitePrincipaleEtablissement: 'NAFRev2',
      caractereEmployeurEtablissement: 'N',
    };
  });
  return csv(ETAB_ENTETE, lignes, ',');
}

// ---------------------------------------------------------------------------------------------------------------------
// BODACC notices of the SCI (DILA export « annonces-commerciales »).
// ---------------------------------------------------------------------------------------------------------------------

const BODACC_ENTETE =
  'id,publicationavis,publicationavis_facette,parution,dateparution,numeroannonce,typeavis,typeavis_lib,familleavis,familleavis_lib,numerodepartement,departement_nom_officiel,region_code,region_nom_officiel,tribunal,commercant,ville,registre,cp,pdf_parution_subfolder,listepersonnes,listeetablissements,jugement,acte,modificationsgenerales,divers,depot,listeprecedentexploitant,listeprecedentproprietaire,parutionavisprecedent,radiationaurcs'.split(
    ',',
  );

function bodaccCsv(seed: number, societes: Societe[]): string {
  const alea = new Alea(seed, 'bodacc');
  const avis: Array<{ date: string; ligne: Record<string, string | number> }> = [];
  let numeroAnnonce = 9000;
  for (const s of societes) {
    if (s.genre !== 'sci' || !s.siege) continue;
    const n = s.siege;
    const c = s.commune;
    const sirenEspace = `${s.siren.slice(0, 3)} ${s.siren.slice(3, 6)} ${s.siren.slice(6)}`;
    const personne = {
      personne: {
        typePersonne: 'pm',
        numeroImmatriculation: { numeroIdentification: sirenEspace, codeRCS: 'RCS', nomGreffeImmat: c.greffe },
        denomination: s.denomination,
        formeJuridique: s.forme,
        capital: { montantCapital: String(s.capital), devise: 'EUR' },
        adresseSiegeSocial: {
          numeroVoie: `${n.numero}${n.rep ? ` ${n.rep}` : ''}`,
          typeVoie: n.voie.type.toLowerCase(),
          nomVoie: n.voie.libelle,
          codePostal: n.voie.codePostal,
          ville: c.nom,
          pays: 'France',
        },
      },
    };
    const commun = (date: string, publication: 'A' | 'B') => {
      const annee = date.slice(0, 4);
      const jour = Math.floor((Date.parse(`${date}T00:00:00Z`) - Date.parse(`${annee}-01-01T00:00:00Z`)) / 86_400_000);
      const parution = `${annee}${String(Math.min(250, Math.floor((jour * 250) / 365) + 1)).padStart(4, '0')}`;
      const numero = ++numeroAnnonce;
      return {
        id: `${publication}${parution}${numero}`,
        publicationavis: publication,
        publicationavis_facette: `Bodacc ${publication}`,
        parution,
        dateparution: date,
        numeroannonce: numero,
        typeavis: 'annonce',
        typeavis_lib: 'Avis initial',
        numerodepartement: c.departement,
        departement_nom_officiel: c.departementNom,
        region_code: c.region,
        region_nom_officiel: c.regionNom,
        tribunal: c.tribunal,
        commercant: s.denomination ?? '',
        ville: c.nom,
        registre: `${s.siren},${sirenEspace}`,
        cp: n.voie.codePostal,
        listepersonnes: JSON.stringify(personne),
      };
    };
    const creation = plusJours(s.creeLe, alea.int(8, 30));
    avis.push({
      date: creation,
      ligne: {
        ...commun(creation, 'A'),
        familleavis: 'creation',
        familleavis_lib: 'Créations',
        listeetablissements: JSON.stringify({
          etablissement: {
            origineFonds: 'Création',
            qualiteEtablissement: 'Siège et établissement principal',
            activite: 'Acquisition, administration et gestion de biens immobiliers',
          },
        }),
        acte: JSON.stringify({
          creation: {
            categorieCreation: "Immatriculation d'une personne morale suite à création",
            dateCommencementActivite: s.creeLe,
          },
          dateImmatriculation: plusJours(s.creeLe, alea.int(1, 6)),
        }),
      },
    });
    const apres = plusJours(creation, 200);
    if (alea.chance(0.45) && apres < '2025-09-30') {
      const date = alea.day(apres, '2025-09-30');
      if (!s.cesseLe || date < s.cesseLe) {
        avis.push({
          date,
          ligne: {
            ...commun(date, 'B'),
            familleavis: 'modification',
            familleavis_lib: 'Modifications diverses',
            // A subject only: the text of a real notice would name the managers.
            modificationsgenerales: JSON.stringify({
              descriptif: alea.pick([
                'Modification survenue sur le capital.',
                "Modification survenue sur l'administration.",
              ]),
            }),
          },
        });
      }
    }
    if (s.cesseLe) {
      const date = plusJours(s.cesseLe, alea.int(15, 60));
      avis.push({
        date,
        ligne: {
          ...commun(date, 'B'),
          familleavis: 'radiation',
          familleavis_lib: 'Radiations',
          radiationaurcs: JSON.stringify({
            radiationPM: "Radiation d'une personne morale",
            dateCessationActivitePM: s.cesseLe,
          }),
        },
      });
    }
  }
  avis.sort((a, b) => a.date.localeCompare(b.date) || String(a.ligne.id).localeCompare(String(b.ligne.id)));
  return csv(
    BODACC_ENTETE,
    avis.map((a) => a.ligne),
    ';',
  );
}

// ---------------------------------------------------------------------------------------------------------------------
// Permits (Sitadel, file of the authorisations creating dwellings).
// ---------------------------------------------------------------------------------------------------------------------

const PERMIS_ENTETE =
  'REG_CODE,REG_LIBELLE,DEP_CODE,DEP_LIBELLE,COMM,TYPE_DAU,NUM_DAU,ETAT_DAU,DATE_REELLE_AUTORISATION,DATE_REELLE_DOC,DATE_REELLE_DAACT,CAT_DEM,APE_DEM,CJ_DEM,DENOM_DEM,SIREN_DEM,SIRET_DEM,CODPOST_DEM,LOCALITE_DEM,ADR_NUM_TER,ADR_TYPEVOIE_TER,ADR_LIBVOIE_TER,ADR_LIEUDIT_TER,ADR_LOCALITE_TER,ADR_CODPOST_TER,SEC_CADASTRE1,NUM_CADASTRE1,SEC_CADASTRE2,NUM_CADASTRE2,SEC_CADASTRE3,NUM_CADASTRE3,SUPERFICIE_TERRAIN,NATURE_PROJET_DECLAREE,NATURE_PROJET_COMPLETEE,DESTINATION_PRINCIPALE,NB_LGT_TOT_CREES,NB_LGT_IND_CREES,NB_LGT_COL_CREES,NB_LGT_1P,NB_LGT_2P,NB_LGT_3P,NB_LGT_4P,NB_LGT_5P,NB_LGT_6P_PLUS,NB_LGT_PRET_LOC_SOCIAL,NB_LGT_ACC_SOC_HORS_PTZ,NB_LGT_PTZ,SURF_HAB_AVANT,SURF_HAB_CREEE,SURF_HAB_DEMOLIE,SURF_LOC_CREEE,SURF_LOC_DEMOLIE,NB_LGT_DEMOLIS,AN_DEPOT'.split(
    ',',
  );

function permisCsv(seed: number, territoires: Territoire[], societes: Societe[]): string {
  const lignes: Array<Record<string, string | number>> = [];
  for (const t of territoires) {
    const c = t.commune;
    const alea = new Alea(seed, `permis:${c.insee}`);
    const demandeurs = societes.filter((s) => s.commune === c && (s.genre === 'sci' || s.genre === 'promoteur'));
    for (let k = 0; k < c.permis; k++) {
      const n = alea.pick(t.numeros);
      const v = n.voie;
      const an = alea.int(2019, 2025);
      const depot = alea.day(`${an}-01-02`, an === 2025 ? '2025-06-30' : `${an}-12-31`);
      const autorise = plusJours(depot, alea.int(45, 120));
      const ouvert = alea.chance(0.75) ? plusJours(autorise, alea.int(60, 300)) : null;
      const acheve = ouvert && alea.chance(0.6) ? plusJours(ouvert, alea.int(300, 700)) : null;
      const limite = (d: string | null) => (d && d <= '2025-09-30' ? d : null);
      const [doc, daact] = [limite(ouvert), limite(ouvert) ? limite(acheve) : null];
      const collectif = c.urbaine && alea.chance(0.6);
      const societe = collectif || alea.chance(0.3) ? (demandeurs.length ? alea.pick(demandeurs) : null) : null;
      const type = collectif || alea.chance(0.7) ? 'PC' : 'DP';
      const logements = collectif ? alea.int(4, 36) : 1;
      const parPieces = [0, 0, 0, 0, 0, 0];
      for (let i = 0; i < logements; i++) parPieces[collectif ? alea.int(0, 4) : alea.int(2, 5)]++;
      const surface = collectif ? logements * alea.int(48, 66) : alea.int(85, 160);
      const sections = n.parcelles.map((p) => ({
        section: p.slice(8, 10).replace(/^0/, ''),
        numero: String(Number(p.slice(10))),
      }));
      lignes.push({
        REG_CODE: c.region,
        REG_LIBELLE: c.regionNom,
        DEP_CODE: c.departement,
        DEP_LIBELLE: c.departementNom,
        COMM: c.insee,
        TYPE_DAU: type,
        // Commune on 6 (département on 3), year of filing on 2, order number: orders from 90 000 are not used by the
        // real instruction services.
        NUM_DAU: `0${c.insee.slice(0, 2)}${c.insee.slice(2)}${String(an).slice(2)}${90_000 + k + 1}`,
        ETAT_DAU: daact ? 6 : doc ? 5 : 2,
        DATE_REELLE_AUTORISATION: autorise,
        DATE_REELLE_DOC: doc ?? '',
        DATE_REELLE_DAACT: daact ?? '',
        // A private person: the category alone (10), never a name; the applicant's postcode and town are published.
        CAT_DEM: societe ? (societe.genre === 'sci' ? 30 : 40) : 10,
        APE_DEM: societe?.ape.replace('.', '') ?? '',
        CJ_DEM: societe?.categorie ?? '',
        DENOM_DEM: societe?.denomination ?? '',
        SIREN_DEM: societe?.siren ?? '',
        SIRET_DEM: societe?.siret ?? '',
        CODPOST_DEM: societe?.siege?.voie.codePostal ?? v.codePostal,
        LOCALITE_DEM: c.acheminement,
        ADR_NUM_TER: `${n.numero}${n.rep === 'bis' ? ' B' : n.rep === 'ter' ? ' T' : ''}`,
        ADR_TYPEVOIE_TER: TYPES_VOIE[v.type],
        ADR_LIBVOIE_TER: afnor(v.libelle),
        ADR_LIEUDIT_TER: v.lieuDit ? afnor(v.lieuDit) : '',
        ADR_LOCALITE_TER: c.acheminement,
        ADR_CODPOST_TER: v.codePostal,
        SEC_CADASTRE1: sections[0].section,
        NUM_CADASTRE1: sections[0].numero,
        SEC_CADASTRE2: sections[1]?.section ?? '',
        NUM_CADASTRE2: sections[1]?.numero ?? '',
        SUPERFICIE_TERRAIN: collectif ? alea.int(400, 2500) : c.urbaine ? alea.int(150, 500) : alea.int(500, 1800),
        NATURE_PROJET_DECLAREE: type === 'PC' ? 1 : 2,
        NATURE_PROJET_COMPLETEE: type === 'PC' ? 1 : 2,
        DESTINATION_PRINCIPALE: 1,
        NB_LGT_TOT_CREES: logements,
        NB_LGT_IND_CREES: collectif ? 0 : logements,
        NB_LGT_COL_CREES: collectif ? logements : 0,
        NB_LGT_1P: parPieces[0],
        NB_LGT_2P: parPieces[1],
        NB_LGT_3P: parPieces[2],
        NB_LGT_4P: parPieces[3],
        NB_LGT_5P: parPieces[4],
        NB_LGT_6P_PLUS: parPieces[5],
        NB_LGT_PRET_LOC_SOCIAL: collectif ? Math.floor(logements * 0.25) : 0,
        NB_LGT_ACC_SOC_HORS_PTZ: 0,
        NB_LGT_PTZ: !collectif && alea.chance(0.3) ? 1 : 0,
        SURF_HAB_AVANT: type === 'DP' ? alea.int(70, 140) : 0,
        SURF_HAB_CREEE: surface,
        SURF_HAB_DEMOLIE: 0,
        SURF_LOC_CREEE: 0,
        SURF_LOC_DEMOLIE: 0,
        NB_LGT_DEMOLIS: 0,
        AN_DEPOT: an,
      });
    }
  }
  return csv(PERMIS_ENTETE, lignes, ';');
}

// ---------------------------------------------------------------------------------------------------------------------
// Outlines: IRIS and zoning, squares and grids around the centres.
// ---------------------------------------------------------------------------------------------------------------------

type Anneau = Array<[number, number]>;

/** The closed ring of a rectangle given in m east and north of the centre. */
function rectangle(c: CommuneDef, ouest: number, sud: number, est: number, nord: number): Anneau {
  const p = (x: number, y: number): [number, number] => {
    const { lat, lon } = position(c, x, y);
    return [lon, lat];
  };
  return [p(ouest, sud), p(est, sud), p(est, nord), p(ouest, nord), p(ouest, sud)];
}

/** A FeatureCollection with one feature a line, as GDAL writes them: small, and readable in a diff. */
function featureCollection(nom: string, features: object[]): string {
  return `{"type":"FeatureCollection","name":${JSON.stringify(nom)},"features":[\n${features.map((f) => JSON.stringify(f)).join(',\n')}\n]}\n`;
}

function irisGeojson(): string {
  const features = COMMUNES.flatMap((c) => {
    const d = c.rayonM * 1.25;
    // Quadrants in the order north-west, north-east, south-west, south-east.
    const cadres: Array<[number, number, number, number]> =
      c.iris.quartiers.length === 1
        ? [[-d, -d, d, d]]
        : [
            [-d, 0, 0, d],
            [0, 0, d, d],
            [-d, -d, 0, 0],
            [0, -d, d, 0],
          ];
    return c.iris.quartiers.map(([code, nom], i) => ({
      type: 'Feature',
      properties: {
        INSEE_COM: c.insee,
        NOM_COM: c.nom,
        IRIS: code,
        CODE_IRIS: `${c.insee}${code}`,
        NOM_IRIS: `${nom} ${FICTIF.iris}`,
        TYP_IRIS: c.iris.type,
      },
      geometry: { type: 'Polygon', coordinates: [rectangle(c, ...cadres[i])] },
    }));
  });
  return featureCollection('contours_iris_bac_a_sable', features);
}

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
    const d = c.rayonM * 1.25;
    const pas = (2 * d) / 3;
    const approuve = c.plu.date;
    return c.plu.grille.map((libelle, i) => {
      const ligne = Math.floor(i / 3);
      const colonne = i % 3;
      const ouest = -d + colonne * pas;
      const nord = d - ligne * pas;
      const z = ZONES[libelle];
      return {
        type: 'Feature',
        properties: {
          IDURBA: c.plu.idurba,
          LIBELLE: libelle,
          LIBELONG: `${z.libelong} ${FICTIF.zonage}`,
          TYPEZONE: z.typezone,
          DESTDOMI: z.destdomi,
          NOMFIC: `${c.plu.prefixe}_reglement_${approuve}.pdf#page=${z.page}`,
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

// ---------------------------------------------------------------------------------------------------------------------
// The files.
// ---------------------------------------------------------------------------------------------------------------------

/**
 * Writes the sandbox files into `dir` (created if needed) and returns their paths by source. The same seed writes
 * the same bytes.
 */
export async function generateSandbox(dir: string, { seed }: { seed: number }): Promise<SandboxFiles> {
  await mkdir(dir, { recursive: true });
  const territoires = COMMUNES.map((c) => territoire(seed, c));
  const sequence = { n: 0 };
  const dpe = territoires.map((t) => dpeDe(seed, t, sequence));
  const societes = societesDe(seed, territoires);
  const contenus: Record<SandboxSource, Array<[nom: string, contenu: string]>> = {
    ban: [['adresses-bac-a-sable.csv', banCsv(seed, territoires)]],
    dvf: [['dvf-geolocalisees.csv', dvfCsv(seed, territoires)]],
    dpe: [
      [
        'dpe-logements-existants.csv',
        csv(
          DPE_ENTETE,
          dpe.flatMap((d) => d.lignes),
          ',',
        ),
      ],
      [
        'audits-energetiques.csv',
        csv(
          AUDIT_ENTETE,
          auditsDe(
            seed,
            dpe.flatMap((d) => d.dpe),
          ),
          ',',
        ),
      ],
    ],
    permis: [['sitadel-logements.csv', permisCsv(seed, territoires, societes)]],
    sirene: [
      ['StockUniteLegale.csv', unitesCsv(seed, societes)],
      ['StockEtablissement.csv', etablissementsCsv(seed, societes)],
    ],
    bodacc: [['bodacc-annonces-commerciales.csv', bodaccCsv(seed, societes)]],
    iris: [['contours-iris.geojson', irisGeojson()]],
    gpu: [['zone-urba.geojson', zonageGeojson()]],
  };
  const fichiers = {} as SandboxFiles;
  for (const source of SANDBOX_SOURCES) {
    fichiers[source] = [];
    for (const [nom, contenu] of contenus[source]) {
      const fichier = path.join(dir, nom);
      await writeFile(fichier, contenu, 'utf8');
      fichiers[source].push(fichier);
    }
  }
  return fichiers;
}
