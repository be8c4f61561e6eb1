import { Alea } from '../alea.ts';
import { csv, type SandboxPart } from '../part.ts';
import {
  afnor,
  metresDuCentre,
  parcelle,
  position,
  type InseeSandbox,
  type Numero,
  type Territoire,
  type Voie,
} from '../territoire.ts';

/** DVF géolocalisées (Etalab): the sales of each commune, at the BAN numbers and on the parcels of the territory. */

type TypeVente = 'appartement' | 'appartement_cave' | 'bloc' | 'maison' | 'vefa' | 'terrain' | 'dependance';

/** The market generated in a commune. */
interface Marche {
  /** Median €/m² of dwellings by year, 2018 to 2025. */
  prixM2: number[];
  /** €/m² of building land. */
  prixTerrainM2: number;
  /**
   * Mutations over the eight vintages: about a third of the commune's real volume (DVF 2018-2025), enough for the
   * latest half-year to be estimated from the years before and the estimate's range to be measured (GET /modeles).
   */
  mutations: number;
  ventes: Array<readonly [TypeVente, number]>;
}

export const ANNEES = [2018, 2019, 2020, 2021, 2022, 2023, 2024, 2025];

/** By commune; null where DVF does not publish. The pre-market history (parts/pre-marche.ts) prices its sales on it. */
export const MARCHES: Record<InseeSandbox, Marche | null> = {
  '33234': {
    prixM2: [3000, 3200, 3400, 3700, 3950, 3900, 3800, 3800],
    prixTerrainM2: 180,
    mutations: 700,
    ventes: [
      ['maison', 75],
      ['appartement', 12],
      ['terrain', 8],
      ['vefa', 5],
    ],
  },
  '33001': {
    prixM2: [1500, 1600, 1700, 1900, 2050, 2050, 2000, 2000],
    prixTerrainM2: 45,
    mutations: 300,
    ventes: [
      ['maison', 85],
      ['terrain', 10],
      ['appartement', 5],
    ],
  },
  '75111': {
    prixM2: [9800, 10500, 10900, 10800, 10700, 10200, 9700, 9700],
    prixTerrainM2: 0,
    mutations: 2400,
    ventes: [
      ['appartement', 62],
      ['appartement_cave', 25],
      ['bloc', 3],
      ['dependance', 10],
    ],
  },
  '59350': {
    prixM2: [3200, 3400, 3550, 3700, 3800, 3700, 3550, 3500],
    prixTerrainM2: 400,
    mutations: 2000,
    ventes: [
      ['appartement', 48],
      ['appartement_cave', 10],
      ['bloc', 2],
      ['maison', 30],
      ['vefa', 5],
      ['dependance', 5],
    ],
  },
  // Alsace-Moselle: sales are published by the land register of the courts, not in DVF.
  '67482': null,
};

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

/**
 * How a dwelling's €/m² is drawn: a hedonic model of log price, not the estimator's own rule. The commune's level of
 * the year; the type (flats dearer than houses in a city, cheaper in a village); the quarter (in a city split in IRIS,
 * each quadrant has its level) and the street within it, and a gradient that makes the centre dearer; the surface
 * (small dwellings sell dearer per m²); the condition, which DVF does not record (to renovate, standard, renovated);
 * and a lognormal error for all the rest (floor, view, the buyer's haste). Comparables share the first effects and not
 * the last two: those are what an estimate from DVF cannot see, and what its measured range must cover.
 */
const EFFETS = {
  quartier: 0.1,
  voie: 0.05,
  /** Log €/m² lost from the centre to the edge of the commune. */
  gradient: 0.08,
  /** Elasticity of the €/m² to the surface. */
  surface: -0.12,
  etat: [
    [-0.15, 20],
    [0, 60],
    [0.08, 20],
  ] as ReadonlyArray<readonly [number, number]>,
  bruit: 0.1,
} as const;

/** The lasting effects of a commune's places: one draw per IRIS quadrant and per street, from a stream of their own. */
function effetsDeLieux(seed: number, t: Territoire): { quartier: (n: Numero) => number; voie: Map<Voie, number> } {
  const alea = new Alea(seed, `dvf-lieux:${t.commune.insee}`);
  const quadrants = [0, 1, 2, 3].map(() => (t.commune.urbaine ? EFFETS.quartier * alea.normal() : 0));
  const voie = new Map(t.voies.map((v) => [v, EFFETS.voie * alea.normal()] as const));
  const c = t.commune;
  return {
    quartier: (n) => {
      // The quadrants of the sandbox's IRIS (parts/iris.ts): north-west, north-east, south-west, south-east.
      const q = (n.lat >= c.lat ? 0 : 2) + (n.lon >= c.lon ? 1 : 0);
      return quadrants[q] - EFFETS.gradient * Math.min(1, metresDuCentre(c, n) / c.rayonM);
    },
    voie,
  };
}

function mutationsDe(seed: number, t: Territoire): Mutation[] {
  const c = t.commune;
  const marche = MARCHES[c.insee];
  if (!marche) return [];
  const alea = new Alea(seed, `dvf:${c.insee}`);
  const lieux = effetsDeLieux(seed, t);
  /** €/m² of a dwelling of this type and surface at this number, that year. */
  const prixLogement = (niveau: number, n: Numero, type: 'appartement' | 'maison', surface: number) => {
    const typeEffet = type === 'maison' ? (c.urbaine ? -0.1 : 0) : c.urbaine ? 0 : -0.1;
    const reference = type === 'maison' ? 110 : 55;
    const log =
      typeEffet +
      lieux.quartier(n) +
      (lieux.voie.get(n.voie) ?? 0) +
      EFFETS.surface * Math.log(surface / reference) +
      alea.weighted(EFFETS.etat) +
      EFFETS.bruit * alea.normal();
    return niveau * Math.exp(log);
  };
  const lotsPris = new Map<string, number[]>();
  // Parcels taken by building land, street by street: the territory is shared with the other parts, never changed.
  const plansPris = new Map<Voie, number>();
  const out: Mutation[] = [];
  for (let k = 0; k < marche.mutations; k++) {
    const annee = alea.weighted(ANNEES.map((a, i) => [a, i === 7 ? 0.5 : i === 3 || i === 4 ? 1.1 : 1] as const));
    // DVF publishes a year's first half in the autumn: 2025 stops at the end of June.
    const date = alea.day(`${annee}-01-02`, annee === 2025 ? '2025-06-30' : `${annee}-12-31`);
    const type = alea.weighted(marche.ventes);
    const niveau = marche.prixM2[ANNEES.indexOf(annee)];
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
      const prix = apparts.reduce((s, a) => s + prixLogement(niveau, n, 'appartement', a.surface) * a.surface, 0);
      valeur = Math.round((prix * (vefa ? 1.15 : 1) * (cave ? 1.02 : 1)) / 100) * 100;
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
      valeur = Math.round((prixLogement(niveau, n, 'maison', surface) * surface) / 100) * 100;
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
      const plan = plansPris.get(v) ?? v.planLibre;
      plansPris.set(v, plan + 1);
      const surface = alea.int(400, 1500);
      valeur = Math.round((marche.prixTerrainM2 * surface * Math.exp(0.15 * alea.normal())) / 100) * 100;
      const pos = position(c, v.x0 + alea.between(-40, 40), v.y0 + alea.between(-40, 40));
      lignes.push({
        ...base,
        nature_mutation: NATURE_TERRAIN,
        adresse_numero: '',
        adresse_suffixe: '',
        id_parcelle: parcelle(c.insee, v.section, plan),
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

export const dvfPart: SandboxPart<'dvf'> = {
  source: 'dvf',
  fichiers: (seed, territoires) => [['dvf-geolocalisees.csv', dvfCsv(seed, territoires)]],
};
