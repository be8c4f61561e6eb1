/**
 * The generated Etalab "DVF géolocalisées" file of the benchmarks (bench/dvf.ts, bench/jeux.ts): `rows` lines,
 * deterministic (seed DVF_SEED), realistic mutations of 1 to 4 lines over DVF_COMMUNES real communes with made-up
 * centres: flats with lots and dependencies, houses times their land subdivisions, land, business premises; 2 % of
 * mutations without coordinates, one line in ten thousand with an impossible date (rejected by the importer).
 */
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { seededRandom } from '../lib/random.ts';
import { communesReelles } from './communes.ts';

/** Real communes the mutations are drawn over, uniformly. */
export const DVF_COMMUNES = 300;
export const DVF_SEED = 20_261_122;

const generator = seededRandom;
type Rng = ReturnType<typeof generator>;

export interface Commune {
  code: string;
  nom: string;
  cp: string;
  lat: number;
  lon: number;
}

/** Real communes of metropolitan France outside Alsace-Moselle, every n-th by code; a made-up centre. */
function communes(rng: Rng): Commune[] {
  return communesReelles(DVF_COMMUNES).map((c) => ({
    code: c.code,
    nom: c.nom,
    cp: c.cp,
    lat: 43.3 + rng.next() * 6,
    lon: -1 + rng.next() * 7,
  }));
}

/** The columns of an Etalab "DVF géolocalisées" file, in order. */
const COLONNES = [
  'id_mutation',
  'date_mutation',
  'numero_disposition',
  'nature_mutation',
  'valeur_fonciere',
  'adresse_numero',
  'adresse_suffixe',
  'adresse_nom_voie',
  'adresse_code_voie',
  'code_postal',
  'code_commune',
  'nom_commune',
  'code_departement',
  'ancien_code_commune',
  'ancien_nom_commune',
  'id_parcelle',
  'ancien_id_parcelle',
  'numero_volume',
  'lot1_numero',
  'lot1_surface_carrez',
  'lot2_numero',
  'lot2_surface_carrez',
  'lot3_numero',
  'lot3_surface_carrez',
  'lot4_numero',
  'lot4_surface_carrez',
  'lot5_numero',
  'lot5_surface_carrez',
  'nombre_lots',
  'code_type_local',
  'type_local',
  'surface_reelle_bati',
  'nombre_pieces_principales',
  'code_nature_culture',
  'nature_culture',
  'code_nature_culture_speciale',
  'nature_culture_speciale',
  'surface_terrain',
  'longitude',
  'latitude',
] as const;
export type ColonneEtalab = (typeof COLONNES)[number];

export const HEADER = COLONNES.join(',');

/**
 * A line of an Etalab file from its named fields, in the file's order: a field not given is empty, a text holding a
 * comma or a quote is quoted (bench/estimation.ts writes its own mutations with it too).
 */
export function ligneEtalab(champs: Partial<Record<ColonneEtalab, string | number>>): string {
  return COLONNES.map((c) => {
    const v = champs[c];
    if (v === undefined) return '';
    const texte = String(v);
    return /[",]/.test(texte) ? `"${texte.replaceAll('"', '""')}"` : texte;
  }).join(',');
}
const VOIES = [
  'RUE DE LA GARE',
  'AVENUE JEAN JAURES',
  'CHEMIN DU MOULIN',
  'RUE VICTOR HUGO',
  'ALLEE DES PINS',
  'LE BOURG',
];
const CULTURES: Array<[string, string]> = [
  ['S', 'sols'],
  ['J', 'jardins'],
  ['T', 'terres'],
  ['P', 'prés'],
  ['AG', "terrains d'agrément"],
];
const LOCAUX = {
  maison: ['1', 'Maison'],
  appartement: ['2', 'Appartement'],
  dependance: ['3', 'Dépendance'],
  local: ['4', 'Local industriel. commercial ou assimilé'],
} as const;

interface Line {
  type?: keyof typeof LOCAUX;
  surface?: number;
  pieces?: number;
  lot?: string;
  carrez?: number;
  culture?: [string, string];
  terrain?: number;
  parcelle: string;
}

/** One mutation: 1 to 4 lines, as DVF writes them (a parcel's locals times its land subdivisions). */
function mutation(rng: Rng, parcelle: () => string): { lines: Line[]; valeur: number; nature: string } {
  const kind = rng.next();
  if (kind < 0.42) {
    const p = parcelle();
    const surface = 18 + rng.int(100);
    const lines: Line[] = [
      {
        type: 'appartement',
        surface,
        pieces: 1 + Math.floor(surface / 25),
        lot: String(1 + rng.int(300)),
        carrez: surface - rng.int(3),
        parcelle: p,
      },
    ];
    if (rng.next() < 0.35) lines.push({ type: 'dependance', lot: String(301 + rng.int(100)), parcelle: p });
    const vefa = rng.next() < 0.1;
    return {
      lines,
      valeur: Math.round(surface * rng.between(1500, 6500)),
      nature: vefa ? "Vente en l'état futur d'achèvement" : 'Vente',
    };
  }
  if (kind < 0.8) {
    const p = parcelle();
    const surface = 60 + rng.int(140);
    const subdivisions = Array.from({ length: 1 + rng.int(2) }, () => ({
      culture: rng.pick(CULTURES),
      terrain: 100 + rng.int(2000),
    }));
    const locaux: Line[] = [{ type: 'maison', surface, pieces: 2 + Math.floor(surface / 30), parcelle: p }];
    if (rng.next() < 0.5) locaux.push({ type: 'dependance', parcelle: p });
    const lines = locaux.flatMap((l) => subdivisions.map((s) => ({ ...l, ...s })));
    return { lines, valeur: Math.round(surface * rng.between(1000, 4500)), nature: 'Vente' };
  }
  if (kind < 0.93) {
    const lines = Array.from({ length: 1 + rng.int(3) }, () => ({
      culture: rng.pick(CULTURES),
      terrain: 200 + rng.int(5000),
      parcelle: parcelle(),
    }));
    const batir = rng.next() < 0.3;
    return { lines, valeur: 5000 + rng.int(150_000), nature: batir ? 'Vente terrain à bâtir' : 'Vente' };
  }
  const p = parcelle();
  const surface = 40 + rng.int(400);
  return {
    lines: [{ type: 'local', surface, pieces: 0, parcelle: p }],
    valeur: Math.round(surface * rng.between(600, 3000)),
    nature: rng.next() < 0.05 ? 'Adjudication' : 'Vente',
  };
}

export interface Point {
  lat: number;
  lon: number;
}

export async function genererDvf(
  file: string,
  rows: number,
): Promise<{ bytes: number; mutations: number; points: Point[]; list: Commune[] }> {
  const rng = generator(DVF_SEED);
  const list = communes(rng);
  const out = createWriteStream(file);
  const write = async (text: string) => {
    if (!out.write(text)) await once(out, 'drain');
  };
  await write(`${HEADER}\n`);
  let written = 0;
  let mutations = 0;
  const points: Point[] = [];
  let buffer = '';
  while (written < rows) {
    const c = rng.pick(list);
    const year = 2021 + rng.int(4);
    const date = `${year}-${String(1 + rng.int(12)).padStart(2, '0')}-${String(1 + rng.int(28)).padStart(2, '0')}`;
    const id = `${year}-${mutations + 1}`;
    const section = `${String.fromCharCode(65 + rng.int(26))}${String.fromCharCode(65 + rng.int(26))}`;
    const parcelle = () => `${c.code}000${section}${String(1 + rng.int(9999)).padStart(4, '0')}`;
    const { lines, valeur, nature } = mutation(rng, parcelle);
    // Within ~3 km of the centre; 2 % of mutations without coordinates, as real files have some.
    const lat = c.lat + (rng.next() - 0.5) * 0.05;
    const lon = c.lon + (rng.next() - 0.5) * 0.07;
    const situee = rng.next() >= 0.02;
    const voie = rng.pick(VOIES);
    const numero = 1 + rng.int(120);
    if (mutations % 1000 === 0) points.push({ lat, lon });
    for (const l of lines) {
      if (written >= rows) break;
      // One line in ten thousand is broken (an impossible date), to be rejected with its reason.
      const broken = rng.next() < 0.0001;
      const [code, libelle] = l.type ? LOCAUX[l.type] : ['', ''];
      buffer += `${ligneEtalab({
        id_mutation: id,
        date_mutation: broken ? `${year}-02-31` : date,
        numero_disposition: '000001',
        nature_mutation: nature,
        valeur_fonciere: valeur,
        adresse_numero: numero,
        adresse_nom_voie: voie,
        adresse_code_voie: String(1 + rng.int(900)).padStart(4, '0'),
        code_postal: c.cp,
        code_commune: c.code,
        nom_commune: c.nom,
        code_departement: c.code.slice(0, 2),
        id_parcelle: l.parcelle,
        lot1_numero: l.lot,
        lot1_surface_carrez: l.carrez,
        nombre_lots: l.lot ? 1 : 0,
        code_type_local: code,
        type_local: libelle,
        surface_reelle_bati: l.surface,
        nombre_pieces_principales: l.pieces,
        code_nature_culture: l.culture?.[0],
        nature_culture: l.culture?.[1],
        surface_terrain: l.terrain,
        longitude: situee ? lon.toFixed(6) : undefined,
        latitude: situee ? lat.toFixed(6) : undefined,
      })}\n`;
      written++;
    }
    mutations++;
    if (buffer.length > 1 << 20) {
      await write(buffer);
      buffer = '';
    }
  }
  await write(buffer);
  out.end();
  await once(out, 'finish');
  return { bytes: (await stat(file)).size, mutations, points, list };
}
