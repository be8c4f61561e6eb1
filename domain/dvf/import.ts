import { isAscii, isUtf8 } from 'node:buffer';
import { createHash, hash } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { TextDecoder } from 'node:util';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import type { Connection, PoolClient, Submittable } from 'pg';
import type { Db } from '../../db/client.ts';
import { ImportError, MAX_REJETS_LISTES, type Dataset, type ImportSource } from '../import/source.ts';
import { COPY_BINARY_HEADER, COPY_BINARY_TRAILER, CopyBinaryWriter } from '../../lib/copy-binary.ts';

/**
 * Importer of DVF sales: the Etalab "DVF géolocalisées" CSV (comma, 40 columns) and the raw DGFiP file (`|`, decimal
 * commas, CRLF, dd/mm/yyyy), recognised by their header, columns found by name.
 *
 * The file is streamed: lines are grouped into mutations as they come (a mutation's lines are consecutive in both
 * formats; a mutation whose lines come back later is caught by a Bloom filter and regrouped in a second reading of the
 * file, limited to those mutations), each mutation folded into one row with its recomputed fields, and rows written
 * in batches of 10 000. The table is partitioned by dataset and vintage (db/migrations/013_dvf_partitions.sql): a
 * vintage the dataset does not have yet is COPied into a table of its own without indexes, attached (its indexes
 * then built in one sorted pass each) when the whole file is read, so that it appears whole or not at all. In a
 * vintage already there, the batch's ids are looked up, new mutations are COPied straight into the table, known ones
 * COPied to a staging table and updated only where what the file says of them changed. Importing the same file
 * again writes nothing. Imports of one dataset take a lock and run one at a time; the database writes a batch while
 * the next one is parsed.
 *
 * What is computed per mutation, and why:
 * - Lines of the Etalab file are the product of a parcel's locals by its land subdivisions (a house on a parcel of
 *   three crop types comes on three lines). A local is counted once per parcel and disposition: the number of equal
 *   locals is the most times they appear alongside one subdivision (two flats of 56 m² next to one subdivision are
 *   two flats, as DVF writes one line per local). Equal locals with the same lot numbers are one local (a lot is sold
 *   once); equal locals without lots cannot be told apart from a duplicated line: they are counted, and the mutation
 *   is flagged `doublon_probable`. The raw file's `Identifiant local` makes all this exact when present.
 * - `surface_logements`: sum of the built surfaces of the flats and houses so counted; `prix_m2` = valeur foncière /
 *   surface_logements, to the cent (the price of everything sold, dependencies and business premises included: the
 *   indicators say when that is the case).
 * - `vente_en_bloc`: two dwellings or more; `avec_dependance`, `avec_local_pro`: a dependency, business premises.
 * - `prix_atypique`: a price per m² outside 200-25 000 €/m² (below, no dwelling sells in France, even in rural areas;
 *   above, the dearest Paris sales), or a value of 1 € or less (symbolic price, placeholder).
 * - `surface_atypique`: an average under 9 m² per dwelling (the legal minimum of a dwelling) or over 1 000 m².
 * - `motif`: the first reason why the price per m² should not be read as the price of one dwelling, or null.
 */

export type Nature = 'vente' | 'vefa' | 'terrain_a_batir' | 'adjudication' | 'echange' | 'expropriation';
export type TypeLocal = 'maison' | 'appartement' | 'dependance' | 'local';

export interface Lot {
  numero: string;
  carrez: number | null;
}
export interface Local {
  type: TypeLocal | null;
  surface_bati: number | null;
  pieces: number | null;
  id_parcelle: string;
  lots: Lot[];
}
export interface Terrain {
  id_parcelle: string;
  nature_culture: string | null;
  nature_culture_speciale: string | null;
  surface: number | null;
}

/** Bounds of a plausible price per m² of dwellings (€/m²), outside which a sale is `prix_atypique`. */
export const PRIX_M2_PLAUSIBLE = { min: 200, max: 25_000 } as const;
/** Bounds of a plausible average surface per dwelling (m²), outside which a sale is `surface_atypique`. */
export const SURFACE_LOGEMENT_PLAUSIBLE = { min: 9, max: 1_000 } as const;

export const ALSACE_MOSELLE = ['57', '67', '68'] as const;

/** Why DVF has nothing for a département, or null when it covers it. */
export function absenceDvf(departement: string): string | null {
  if ((ALSACE_MOSELLE as readonly string[]).includes(departement)) {
    return 'Alsace-Moselle (Moselle 57, Bas-Rhin 67, Haut-Rhin 68) n’est pas dans DVF : les ventes y sont publiées au livre foncier, tenu par les tribunaux, et non par la DGFiP. Aucune vente n’est servie pour ces départements.';
  }
  if (departement === '976') {
    return 'Mayotte (976) n’est pas dans DVF : la DGFiP n’y publie pas les valeurs foncières.';
  }
  return null;
}

/** Département of an INSEE code: three characters overseas (97x), two elsewhere (2A, 2B in Corsica). */
export function departementOf(insee: string): string {
  return insee.startsWith('97') ? insee.slice(0, 3) : insee.slice(0, 2);
}

const MUTATIONS_PAR_LOT = 10_000;
// Mutations whose lines are split in the file, regrouped by a second reading; beyond this, the file is not grouped.
const MAX_SCINDEES = 200_000;
const INSEE = /^(?:\d{2}|2[AB])\d{3}$/;
const PARCELLE = /^(?:\d{2}|2[AB])\d{3}[0-9A-Z]{3}[0-9A-Z]{2}\d{4}$/;

// ---------------------------------------------------------------------------------------------------------------------
// Vocabulary of the two formats.
// ---------------------------------------------------------------------------------------------------------------------

function plier(text: string): string {
  return text
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[’`]/g, "'")
    .replace(/\s+/g, ' ')
    .trim();
}

const NATURES: Record<string, Nature> = {
  vente: 'vente',
  "vente en l'etat futur d'achevement": 'vefa',
  'vente terrain a batir': 'terrain_a_batir',
  adjudication: 'adjudication',
  echange: 'echange',
  expropriation: 'expropriation',
};

const TYPES_PAR_CODE: Record<string, TypeLocal> = {
  '1': 'maison',
  '2': 'appartement',
  '3': 'dependance',
  '4': 'local',
};
const TYPES_PAR_LIBELLE: Record<string, TypeLocal> = {
  maison: 'maison',
  appartement: 'appartement',
  dependance: 'dependance',
  'local industriel. commercial ou assimile': 'local',
};

/** Labels of the crop codes (the raw file gives codes only), as Etalab words them. */
const CULTURES: Record<string, string> = {
  AB: 'terrains a bâtir',
  AG: "terrains d'agrément",
  B: 'bois',
  BF: 'futaies feuillues',
  BM: 'futaies mixtes',
  BO: 'oseraies',
  BP: 'peupleraies',
  BR: 'futaies résineuses',
  BS: 'taillis sous futaie',
  BT: 'taillis simples',
  CA: 'carrières',
  CH: 'chemin de fer',
  E: 'eaux',
  J: 'jardins',
  L: 'landes',
  LB: 'landes boisées',
  P: 'prés',
  PA: 'pâtures',
  PC: 'pacages',
  PE: "prés d'embouche",
  PH: 'herbages',
  PP: 'prés plantes',
  S: 'sols',
  T: 'terres',
  TP: 'terres plantées',
  VE: 'vergers',
  VI: 'vignes',
};

const SUFFIXES: Record<string, string> = { B: 'bis', T: 'ter', Q: 'quater' };

/** DVF's B/T/Q column: bis, ter, quater, or the letter itself in lower case. */
function suffixe(raw: string): string | null {
  const s = raw.trim().toUpperCase();
  if (!s) return null;
  return SUFFIXES[s] ?? s.toLowerCase();
}

// ---------------------------------------------------------------------------------------------------------------------
// Lines.
// ---------------------------------------------------------------------------------------------------------------------

interface Ligne {
  ligne: number;
  /** Grouping key: Etalab's id_mutation, or the raw file's document, date, nature, value and département. */
  cle: string;
  idMutation: string | null;
  date: string;
  nature: Nature;
  natureLibelle: string;
  valeur: number | null;
  disposition: string;
  numero: number | null;
  suffixe: string | null;
  voie: string | null;
  codeVoie: string | null;
  codePostal: string | null;
  insee: string;
  commune: string | null;
  departement: string;
  parcelle: string;
  volume: string | null;
  lots: Lot[];
  nombreLots: number;
  typeLocal: TypeLocal | null;
  identifiantLocal: string | null;
  surfaceBati: number | null;
  pieces: number | null;
  cultureCode: string | null;
  culture: string | null;
  speciale: string | null;
  surfaceTerrain: number | null;
  lat: number | null;
  lon: number | null;
}

class Rejet extends Error {}

function nombre(raw: string | undefined, champ: string, decimalComma: boolean): number | null {
  const text = (raw ?? '').trim();
  if (!text) return null;
  const value = Number(decimalComma ? text.replace(/\s/g, '').replace(',', '.') : text);
  if (!Number.isFinite(value) || value < 0) throw new Rejet(`${champ} illisible : « ${text} »`);
  return value;
}

function entier(raw: string | undefined, champ: string, decimalComma: boolean): number | null {
  const value = nombre(raw, champ, decimalComma);
  return value === null ? null : Math.round(value);
}

function texte(raw: string | undefined): string | null {
  const text = (raw ?? '').trim();
  return text ? text : null;
}

// A file holds a few hundred distinct dates and natures over millions of lines: each is checked once.
const DATES = new Map<string, string>();
const NATURES_LUES = new Map<string, Nature>();
const MAX_MEMO = 100_000;

function dateIso(raw: string, format: 'iso' | 'fr'): string {
  const known = DATES.get(raw);
  if (known) return known;
  const date = checkDate(raw, format);
  if (DATES.size > MAX_MEMO) DATES.clear();
  DATES.set(raw, date);
  return date;
}

function checkDate(raw: string, format: 'iso' | 'fr'): string {
  const text = raw.trim();
  const m = format === 'iso' ? /^(\d{4})-(\d{2})-(\d{2})$/.exec(text) : /^(\d{2})\/(\d{2})\/(\d{4})$/.exec(text);
  if (!m) throw new Rejet(`date de mutation illisible : « ${text} »`);
  const [y, mo, d] = format === 'iso' ? [m[1], m[2], m[3]] : [m[3], m[2], m[1]];
  const date = new Date(`${y}-${mo}-${d}T00:00:00Z`);
  if (Number.isNaN(date.getTime()) || date.getUTCDate() !== Number(d)) {
    throw new Rejet(`date de mutation invalide : « ${text} »`);
  }
  return `${y}-${mo}-${d}`;
}

function nature(raw: string): Nature {
  const known = NATURES_LUES.get(raw);
  if (known) return known;
  const found = NATURES[plier(raw)];
  if (found && NATURES_LUES.size < MAX_MEMO) NATURES_LUES.set(raw, found);
  if (!found)
    throw new Rejet(raw.trim() ? `nature de mutation inconnue : « ${raw.trim()} »` : 'nature de mutation absente');
  return found;
}

function typeLocal(code: string | undefined, libelle: string | undefined): TypeLocal | null {
  const c = (code ?? '').trim();
  if (c) {
    const t = TYPES_PAR_CODE[c];
    if (!t) throw new Rejet(`code type local inconnu : « ${c} »`);
    return t;
  }
  const l = plier(libelle ?? '');
  if (!l) return null;
  const t = TYPES_PAR_LIBELLE[l];
  if (!t) throw new Rejet(`type de local inconnu : « ${libelle} »`);
  return t;
}

function coordonnee(raw: string | undefined, max: number): number | null {
  const text = (raw ?? '').trim();
  if (!text) return null;
  const value = Number(text);
  return Number.isFinite(value) && Math.abs(value) <= max ? value : null;
}

type Colonnes = Record<string, number>;

/** A parser of one format: its columns (found by name in the header) and how a line becomes a `Ligne`. */
interface Format {
  nom: 'etalab' | 'dgfip';
  libelle: string;
  champs: number;
  split(line: string): string[] | null;
  /** The byte between fields: ',' or '|'. */
  separateur: number;
  /** Whether fields may be quoted (RFC 4180), and so hold the separator or an end of line. */
  guillemets: boolean;
  /**
   * The fields that decide which reader parses a line (Part), in increasing order: a part of the grouping key, the
   * same for every line of a mutation, and there on any line, so that one reader has it.
   */
  proprietaire: number[];
  parse(f: string[], ligne: number): Ligne;
}

const ETALAB_REQUIS = [
  'id_mutation',
  'date_mutation',
  'nature_mutation',
  'valeur_fonciere',
  'code_commune',
  'id_parcelle',
] as const;

/** Splits a CSV record (RFC 4180 quotes); null when a quoted field goes on past the end of the line. */
function splitCsv(line: string): string[] | null {
  if (!line.includes('"')) return line.split(',');
  const out: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quoted) {
      if (c === '"') {
        if (line[i + 1] === '"') {
          field += '"';
          i++;
        } else quoted = false;
      } else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      out.push(field);
      field = '';
    } else field += c;
  }
  if (quoted) return null;
  out.push(field);
  return out;
}

function etalabFormat(header: string[]): Format {
  const col: Colonnes = Object.fromEntries(header.map((name, i) => [name.trim().toLowerCase(), i]));
  const missing = ETALAB_REQUIS.filter((name) => col[name] === undefined);
  if (missing.length)
    throw new ImportError(`Colonnes absentes de l’en-tête DVF géolocalisées : ${missing.join(', ')}.`);
  // Column positions resolved once (-1: absent, read as undefined), not looked up by name on every line.
  const c = (name: string) => col[name] ?? -1;
  const i = {
    id: c('id_mutation'),
    date: c('date_mutation'),
    disposition: c('numero_disposition'),
    nature: c('nature_mutation'),
    valeur: c('valeur_fonciere'),
    numero: c('adresse_numero'),
    suffixe: c('adresse_suffixe'),
    voie: c('adresse_nom_voie'),
    codeVoie: c('adresse_code_voie'),
    codePostal: c('code_postal'),
    commune: c('code_commune'),
    nomCommune: c('nom_commune'),
    departement: c('code_departement'),
    parcelle: c('id_parcelle'),
    volume: c('numero_volume'),
    nombreLots: c('nombre_lots'),
    codeType: c('code_type_local'),
    type: c('type_local'),
    surface: c('surface_reelle_bati'),
    pieces: c('nombre_pieces_principales'),
    codeCulture: c('code_nature_culture'),
    culture: c('nature_culture'),
    codeSpeciale: c('code_nature_culture_speciale'),
    speciale: c('nature_culture_speciale'),
    terrain: c('surface_terrain'),
    lon: c('longitude'),
    lat: c('latitude'),
    lots: [1, 2, 3, 4, 5].map((k) => [c(`lot${k}_numero`), c(`lot${k}_surface_carrez`)] as const),
  };
  return {
    nom: 'etalab',
    libelle: `DVF géolocalisées (Etalab, CSV, ${header.length} colonnes)`,
    champs: header.length,
    split: splitCsv,
    separateur: 0x2c,
    guillemets: true,
    proprietaire: [i.id],
    parse(f, ligne) {
      const idMutation = (f[i.id] ?? '').trim();
      if (!idMutation) throw new Rejet('id_mutation absent');
      const insee = (f[i.commune] ?? '').trim().toUpperCase().padStart(5, '0');
      if (!INSEE.test(insee)) throw new Rejet(`code commune invalide : « ${f[i.commune]} »`);
      const parcelle = (f[i.parcelle] ?? '').trim().toUpperCase();
      if (!PARCELLE.test(parcelle)) throw new Rejet(`identifiant de parcelle invalide : « ${parcelle} »`);
      const lots: Lot[] = [];
      for (let k = 0; k < 5; k++) {
        const numero = texte(f[i.lots[k][0]]);
        if (numero) lots.push({ numero, carrez: nombre(f[i.lots[k][1]], `lot${k + 1}_surface_carrez`, false) });
      }
      const cultureCode = texte(f[i.codeCulture]);
      const natureLibelle = (f[i.nature] ?? '').trim();
      return {
        ligne,
        cle: idMutation,
        idMutation,
        date: dateIso(f[i.date] ?? '', 'iso'),
        nature: nature(natureLibelle),
        natureLibelle,
        valeur: nombre(f[i.valeur], 'valeur_fonciere', false),
        disposition: (f[i.disposition] ?? '').trim(),
        numero: entier(f[i.numero], 'adresse_numero', false),
        suffixe: suffixe(f[i.suffixe] ?? ''),
        voie: texte(f[i.voie]),
        codeVoie: texte(f[i.codeVoie])?.toUpperCase() ?? null,
        codePostal: texte(f[i.codePostal])?.padStart(5, '0') ?? null,
        insee,
        commune: texte(f[i.nomCommune]),
        departement: texte(f[i.departement])?.toUpperCase() ?? departementOf(insee),
        parcelle,
        volume: texte(f[i.volume]),
        lots,
        nombreLots: entier(f[i.nombreLots], 'nombre_lots', false) ?? 0,
        typeLocal: typeLocal(f[i.codeType], f[i.type]),
        identifiantLocal: null,
        surfaceBati: nombre(f[i.surface], 'surface_reelle_bati', false),
        pieces: entier(f[i.pieces], 'nombre_pieces_principales', false),
        cultureCode,
        culture: texte(f[i.culture]) ?? (cultureCode ? (CULTURES[cultureCode] ?? cultureCode) : null),
        speciale: texte(f[i.speciale]) ?? texte(f[i.codeSpeciale]),
        surfaceTerrain: nombre(f[i.terrain], 'surface_terrain', false),
        lat: coordonnee(f[i.lat], 90),
        lon: coordonnee(f[i.lon], 180),
      };
    },
  };
}

/** Raw DGFiP header names, folded (lower case, no accent), to the names used below. */
const DGFIP_NOMS: Record<string, string> = {
  'code service ch': 'service',
  'identifiant de document': 'service',
  'reference document': 'document',
  'no disposition': 'disposition',
  'date mutation': 'date',
  'nature mutation': 'nature',
  'valeur fonciere': 'valeur',
  'no voie': 'numero',
  'b/t/q': 'btq',
  'type de voie': 'type_voie',
  'code voie': 'code_voie',
  voie: 'voie',
  'code postal': 'code_postal',
  commune: 'commune',
  'code departement': 'departement',
  'code commune': 'code_commune',
  'prefixe de section': 'prefixe',
  section: 'section',
  'no plan': 'plan',
  'no volume': 'volume',
  '1er lot': 'lot1',
  'surface carrez du 1er lot': 'carrez1',
  '2eme lot': 'lot2',
  'surface carrez du 2eme lot': 'carrez2',
  '3eme lot': 'lot3',
  'surface carrez du 3eme lot': 'carrez3',
  '4eme lot': 'lot4',
  'surface carrez du 4eme lot': 'carrez4',
  '5eme lot': 'lot5',
  'surface carrez du 5eme lot': 'carrez5',
  'nombre de lots': 'nombre_lots',
  'code type local': 'code_type_local',
  'type local': 'type_local',
  'identifiant local': 'identifiant_local',
  'surface reelle bati': 'surface_bati',
  'nombre pieces principales': 'pieces',
  'nature culture': 'culture',
  'nature culture speciale': 'speciale',
  'surface terrain': 'surface_terrain',
};
const DGFIP_REQUIS = ['date', 'nature', 'valeur', 'departement', 'code_commune', 'section', 'plan'] as const;

function dgfipFormat(header: string[]): Format {
  const col: Colonnes = {};
  header.forEach((name, i) => {
    const key = DGFIP_NOMS[plier(name)];
    if (key && col[key] === undefined) col[key] = i;
  });
  const missing = DGFIP_REQUIS.filter((name) => col[name] === undefined);
  if (missing.length) throw new ImportError(`Colonnes absentes de l’en-tête DGFiP : ${missing.join(', ')}.`);
  const at = (f: string[], name: string) => (col[name] === undefined ? undefined : f[col[name]]);
  return {
    nom: 'dgfip',
    libelle: `fichier DGFiP brut (séparateur |, ${header.length} colonnes, en-tête « ${header[0]}|… »)`,
    champs: header.length,
    split: (line) => line.split('|'),
    separateur: 0x7c,
    guillemets: false,
    proprietaire: [col.date, col.valeur].sort((a, b) => a - b),
    parse(f, ligne) {
      const dep = (at(f, 'departement') ?? '').trim().toUpperCase();
      const code = (at(f, 'code_commune') ?? '').trim();
      if (!/^(?:\d{2,3}|2[AB])$/.test(dep) || !/^\d{1,3}$/.test(code)) {
        throw new Rejet(`commune illisible : département « ${dep} », commune « ${code} »`);
      }
      // Overseas, the département has three characters and the commune code repeats the third (971 + 101 → 97101).
      const insee =
        dep.length === 3 ? dep.slice(0, 2) + code.padStart(3, '0') : dep.padStart(2, '0') + code.padStart(3, '0');
      const section = (at(f, 'section') ?? '').trim().toUpperCase();
      const plan = (at(f, 'plan') ?? '').trim();
      const prefixe = (at(f, 'prefixe') ?? '').trim() || '000';
      const parcelle = `${insee}${prefixe.padStart(3, '0')}${section.padStart(2, '0')}${plan.padStart(4, '0')}`;
      if (!PARCELLE.test(parcelle)) throw new Rejet(`parcelle illisible : section « ${section} », plan « ${plan} »`);
      const lots: Lot[] = [];
      for (let k = 1; k <= 5; k++) {
        const numero = texte(at(f, `lot${k}`));
        if (numero) lots.push({ numero, carrez: nombre(at(f, `carrez${k}`), `Surface Carrez du lot ${k}`, true) });
      }
      const cultureCode = texte(at(f, 'culture'))?.toUpperCase() ?? null;
      const natureLibelle = (at(f, 'nature') ?? '').trim();
      const date = dateIso(at(f, 'date') ?? '', 'fr');
      const valeurTexte = (at(f, 'valeur') ?? '').trim();
      const typeVoie = texte(at(f, 'type_voie'));
      const voie = texte(at(f, 'voie'));
      return {
        ligne,
        cle: [at(f, 'service') ?? '', at(f, 'document') ?? '', date, natureLibelle, valeurTexte, dep].join('|'),
        idMutation: null,
        date,
        nature: nature(natureLibelle),
        natureLibelle,
        valeur: nombre(valeurTexte, 'Valeur fonciere', true),
        disposition: (at(f, 'disposition') ?? '').trim(),
        numero: entier(at(f, 'numero'), 'No voie', true),
        suffixe: suffixe(at(f, 'btq') ?? ''),
        voie: voie ? [typeVoie, voie].filter(Boolean).join(' ') : null,
        codeVoie: texte(at(f, 'code_voie'))?.toUpperCase() ?? null,
        codePostal: texte(at(f, 'code_postal'))?.padStart(5, '0') ?? null,
        insee,
        commune: texte(at(f, 'commune')),
        departement: dep.length === 1 ? dep.padStart(2, '0') : dep,
        parcelle,
        volume: texte(at(f, 'volume')),
        lots,
        nombreLots: entier(at(f, 'nombre_lots'), 'Nombre de lots', true) ?? 0,
        typeLocal: typeLocal(at(f, 'code_type_local'), at(f, 'type_local')),
        identifiantLocal: texte(at(f, 'identifiant_local')),
        surfaceBati: nombre(at(f, 'surface_bati'), 'Surface reelle bati', true),
        pieces: entier(at(f, 'pieces'), 'Nombre pieces principales', true),
        cultureCode,
        culture: cultureCode ? (CULTURES[cultureCode] ?? cultureCode) : null,
        speciale: texte(at(f, 'speciale')),
        surfaceTerrain: nombre(at(f, 'surface_terrain'), 'Surface terrain', true),
        lat: null,
        lon: null,
      };
    },
  };
}

/** The format a header line announces, or an ImportError that says what was expected. */
function formatOf(header: string): Format {
  const line = header.replace(/^\uFEFF/, '');
  if (line.includes('|') && plier(line).includes('valeur fonciere')) return dgfipFormat(line.split('|'));
  const csv = splitCsv(line) ?? [];
  if (csv.map((c) => c.trim().toLowerCase()).includes('id_mutation')) return etalabFormat(csv);
  throw new ImportError(
    `Format DVF non reconnu : l’en-tête n’est ni celui des DVF géolocalisées d’Etalab (id_mutation,date_mutation,…) ni celui du fichier DGFiP brut (Code service CH|… ou Identifiant de document|…, séparateur |). Début lu : « ${line.slice(0, 80)} ».`,
  );
}

// ---------------------------------------------------------------------------------------------------------------------
// Reading: lines in constant memory, UTF-8 or Windows-1252, LF or CRLF.
// ---------------------------------------------------------------------------------------------------------------------

/**
 * The file's bytes in chunks of whole lines (the last one may lack its end of line), read 64 KiB at a time: the
 * lines of a chunk are parsed together and stay alive until folded, and with chunks of 1 MiB the garbage collector
 * kept copying them (a sixth of the reading, measured).
 */
async function* wholeLines(file: string): AsyncGenerator<Buffer> {
  let rest: Buffer | null = null;
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 16 }) as AsyncIterable<Buffer>) {
    const bytes: Buffer = rest ? Buffer.concat([rest, chunk]) : chunk;
    const end: number = bytes.lastIndexOf(10) + 1;
    rest = end < bytes.length ? bytes.subarray(end) : null;
    if (end > 0) yield bytes.subarray(0, end);
  }
  if (rest) yield rest;
}

/**
 * Which lines a reader parses: readers split a file's lines between them by the hash of their owner fields
 * (Format.proprietaire), so that all the lines of a mutation go to the same reader and each line to exactly one.
 */
interface Part {
  index: number;
  of: number;
}

const FNV_BASE = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
const isSpace = (byte: number) => byte === 0x20 || (byte >= 0x09 && byte <= 0x0d);

/**
 * FNV-1a (a cheap, well-spread hash) of a line's owner fields (Format.proprietaire), trimmed, joined by '|', read
 * from its bytes without decoding them: the same value as `ownerOfFields` for a line without quotes.
 */
function ownerHash(bytes: Uint8Array, start: number, end: number, format: Format): number {
  const owners = format.proprietaire;
  let h = FNV_BASE;
  let wanted = 0;
  let field = 0;
  let fieldStart = start;
  for (let i = start; i <= end && wanted < owners.length; i++) {
    if (i < end && bytes[i] !== format.separateur) continue;
    if (field === owners[wanted]) {
      if (wanted > 0) h = Math.imul(h ^ 0x7c, FNV_PRIME);
      let s = fieldStart;
      let e = i;
      while (s < e && isSpace(bytes[s])) s++;
      while (e > s && isSpace(bytes[e - 1])) e--;
      for (let k = s; k < e; k++) h = Math.imul(h ^ bytes[k], FNV_PRIME);
      wanted++;
    }
    field++;
    fieldStart = i + 1;
  }
  // Owner fields past the end of the line are empty.
  for (; wanted < owners.length; wanted++) if (wanted > 0) h = Math.imul(h ^ 0x7c, FNV_PRIME);
  return h >>> 0;
}

/** The same hash from a line's fields (for a line with quotes: its fields are known only once it is split). */
function ownerOfFields(fields: string[], format: Format): number {
  const owner = Buffer.from(format.proprietaire.map((i) => (fields[i] ?? '').trim()).join('|'));
  let h = FNV_BASE;
  for (const byte of owner) h = Math.imul(h ^ byte, FNV_PRIME);
  return h >>> 0;
}

/**
 * Parsed lines of the file that are this reader's part, in order, with the header's format; quoted CSV fields
 * spanning lines are joined, blank lines skipped, bad lines given as rejections. Lines are found in the file's bytes
 * and only this reader's are decoded: the lines of the other readers cost a search for their end and a hash.
 */
async function* parsedLines(
  file: string,
  onFormat: (format: Format) => void,
  part: Part,
): AsyncGenerator<Array<Ligne | { ligne: number; motif: string }>> {
  let format: Format | null = null;
  let decoder: TextDecoder | null = null;
  let pending: string | null = null;
  let pendingLine = 0;
  let number = 0;
  for await (const bytes of wholeLines(file)) {
    // Older DGFiP files are in Windows-1252: told on the first chunk of whole lines that is not ASCII alone (ASCII
    // reads the same in both), wherever it comes in the file.
    if (!decoder && !isAscii(bytes)) decoder = new TextDecoder(isUtf8(bytes) ? 'utf-8' : 'windows-1252');
    const text = (start: number, end: number) =>
      decoder && decoder.encoding !== 'utf-8'
        ? decoder.decode(bytes.subarray(start, end))
        : bytes.toString('utf8', start, end);
    const out: Array<Ligne | { ligne: number; motif: string }> = [];
    let quote = bytes.indexOf(0x22);
    for (let start = 0, next = 0; start < bytes.length; start = next) {
      const newline = bytes.indexOf(10, start);
      next = newline < 0 ? bytes.length : newline + 1;
      let end = newline < 0 ? bytes.length : newline;
      if (end > start && bytes[end - 1] === 13) end--;
      number++;
      // A blank line is skipped (a line of other spaces than ASCII ones is checked decoded).
      const blank = end === start || ((isSpace(bytes[start]) || bytes[start] > 0x7f) && !text(start, end).trim());
      if (!format) {
        if (blank) continue;
        format = formatOf(text(start, end));
        onFormat(format);
        continue;
      }
      if (quote >= 0 && quote < start) quote = bytes.indexOf(0x22, start);
      let ligne = number;
      let fields: string[] | null = null;
      if (pending !== null || (format.guillemets && quote >= 0 && quote < end)) {
        // Quotes: the line is split to know where it ends. A quoted field that goes on past the end of the line:
        // every reader joins it to the next, to agree on lines.
        const line: string = pending === null ? text(start, end) : `${pending}\n${text(start, end)}`;
        if (pending !== null) ligne = pendingLine;
        pending = null;
        fields = format.split(line);
        if (!fields) {
          pending = line;
          pendingLine = ligne;
          continue;
        }
        if (part.of > 1 && ownerOfFields(fields, format) % part.of !== part.index) continue;
      } else {
        if (blank) continue;
        if (part.of > 1 && ownerHash(bytes, start, end, format) % part.of !== part.index) continue;
        fields = format.split(text(start, end))!;
      }
      if (fields.length !== format.champs) {
        out.push({ ligne, motif: `${fields.length} champs au lieu de ${format.champs}` });
        continue;
      }
      try {
        out.push(format.parse(fields, ligne));
      } catch (error) {
        if (!(error instanceof Rejet)) throw error;
        out.push({ ligne, motif: error.message });
      }
    }
    yield out;
  }
  if (pending !== null && part.index === 0) {
    yield [{ ligne: pendingLine, motif: 'guillemet non fermé en fin de fichier' }];
  }
  if (!format) throw new ImportError(`Fichier vide : ${file}.`);
}

/** Consecutive lines with the same key, as groups. */
async function* groups(
  file: string,
  onFormat: (format: Format) => void,
  onLine: (line: Ligne | { ligne: number; motif: string }) => void,
  part: Part,
): AsyncGenerator<Ligne[][]> {
  let current: Ligne[] = [];
  for await (const parsed of parsedLines(file, onFormat, part)) {
    const done: Ligne[][] = [];
    for (const line of parsed) {
      onLine(line);
      if ('motif' in line) continue;
      if (current.length > 0 && current[0].cle !== line.cle) {
        done.push(current);
        current = [];
      }
      current.push(line);
    }
    if (done.length) yield done;
  }
  if (current.length) yield [current];
}

// ---------------------------------------------------------------------------------------------------------------------
// A mutation from its lines.
// ---------------------------------------------------------------------------------------------------------------------

export interface Mutation {
  id_mutation: string;
  format: 'etalab' | 'dgfip';
  date_mutation: string;
  millesime: number;
  nature: Nature;
  nature_libelle: string;
  valeur_fonciere: number | null;
  adresse_numero: number | null;
  adresse_suffixe: string | null;
  adresse_voie: string | null;
  code_voie: string | null;
  code_postal: string | null;
  insee: string;
  commune: string | null;
  departement: string;
  lat: number | null;
  lon: number | null;
  parcelle_principale: string;
  parcelles: string[];
  volumes: string[];
  nb_dispositions: number;
  nb_lignes: number;
  locaux: Local[];
  terrains: Terrain[];
  nombre_lots: number;
  surface_terrain: number | null;
  types_locaux: TypeLocal[];
  logements: number;
  surface_logements: number | null;
  prix_m2: number | null;
  vente_en_bloc: boolean;
  avec_dependance: boolean;
  avec_local_pro: boolean;
  prix_atypique: boolean;
  surface_atypique: boolean;
  doublon_probable: boolean;
  motif: string | null;
}

const round2 = (n: number) => Math.round(n * 100) / 100;
const isLogement = (t: TypeLocal | null) => t === 'maison' || t === 'appartement';

/** The id of a raw DGFiP mutation: its grouping key and first parcel, hashed (the file has no id). */
function idDgfip(lines: Ligne[]): string {
  const parcelle = lines.reduce((min, l) => (l.parcelle < min ? l.parcelle : min), lines[0].parcelle);
  const hash = createHash('sha256').update(lines[0].cle).update('|').update(parcelle).digest('hex').slice(0, 16);
  return `${lines[0].date.slice(0, 4)}-D${hash}`;
}

function idOf(lines: Ligne[]): string {
  return lines[0].idMutation ?? idDgfip(lines);
}

/** A disposition's parcel: its land subdivisions, and its distinct locals with their count beside each subdivision. */
interface Bloc {
  disposition: string;
  parcelle: string;
  /** A line of each distinct subdivision, and the subdivision. */
  terrains: Array<{ ligne: Ligne; terrain: Terrain }>;
  /** A line of each distinct local; its count per subdivision line (null: the lines without land). */
  locaux: Array<{ ligne: Ligne; local: Local; lots: number; n: Array<{ terrain: Ligne | null; n: number }> }>;
}

const aDuTerrain = (l: Ligne) => l.cultureCode !== null || l.surfaceTerrain !== null;
/** One land subdivision: same culture, special culture and surface. */
const memeTerrain = (a: Ligne | null, b: Ligne | null) =>
  a === b ||
  (a !== null &&
    b !== null &&
    a.cultureCode === b.cultureCode &&
    a.speciale === b.speciale &&
    a.surfaceTerrain === b.surfaceTerrain);
/** One local: the same identifier, or without one, the same volume, type, surface, rooms and lots. */
function memeLocal(a: Ligne, b: Ligne): boolean {
  if (a.identifiantLocal !== null || b.identifiantLocal !== null) return a.identifiantLocal === b.identifiantLocal;
  if (
    a.volume !== b.volume ||
    a.typeLocal !== b.typeLocal ||
    a.surfaceBati !== b.surfaceBati ||
    a.pieces !== b.pieces ||
    a.nombreLots !== b.nombreLots ||
    a.lots.length !== b.lots.length
  ) {
    return false;
  }
  for (let i = 0; i < a.lots.length; i++) {
    if (a.lots[i].numero !== b.lots[i].numero || a.lots[i].carrez !== b.lots[i].carrez) return false;
  }
  return true;
}

/**
 * Folds the lines of one mutation into one row, with the recomputed fields (see the top of this file). Lines are
 * compared field by field (the lists of a mutation are short: a scan, without building keys or maps).
 */
export function foldMutation(lines: Ligne[], format: 'etalab' | 'dgfip'): Mutation {
  const first = lines[0];
  const parcelles: string[] = [];
  const volumes: string[] = [];
  const dispositions: string[] = [];
  const blocs: Bloc[] = [];
  for (const l of lines) {
    if (!dispositions.includes(l.disposition)) dispositions.push(l.disposition);
    if (!parcelles.includes(l.parcelle)) parcelles.push(l.parcelle);
    if (l.volume && !volumes.includes(l.volume)) volumes.push(l.volume);
    let bloc = blocs.find((b) => b.disposition === l.disposition && b.parcelle === l.parcelle);
    if (!bloc) {
      bloc = { disposition: l.disposition, parcelle: l.parcelle, terrains: [], locaux: [] };
      blocs.push(bloc);
    }
    const terrain = aDuTerrain(l) ? l : null;
    if (terrain && !bloc.terrains.some((t) => memeTerrain(t.ligne, terrain))) {
      bloc.terrains.push({
        ligne: l,
        terrain: {
          id_parcelle: l.parcelle,
          nature_culture: l.culture,
          nature_culture_speciale: l.speciale,
          surface: l.surfaceTerrain,
        },
      });
    }
    if (l.typeLocal || l.identifiantLocal || l.lots.length > 0 || l.nombreLots > 0) {
      let local = bloc.locaux.find((x) => memeLocal(x.ligne, l));
      if (!local) {
        local = {
          ligne: l,
          local: {
            type: l.typeLocal,
            surface_bati: l.surfaceBati,
            pieces: l.pieces,
            id_parcelle: l.parcelle,
            lots: l.lots,
          },
          lots: l.nombreLots,
          n: [],
        };
        bloc.locaux.push(local);
      }
      // A local known by its identifier is one local, however many lines carry it.
      if (!l.identifiantLocal) {
        const count = local.n.find((c) => memeTerrain(c.terrain, terrain));
        if (count) count.n++;
        else local.n.push({ terrain, n: 1 });
      }
    }
  }
  const locaux: Local[] = [];
  const terrains: Terrain[] = [];
  let nombreLots = 0;
  let doublonProbable = false;
  for (const bloc of blocs) {
    for (const t of bloc.terrains) terrains.push(t.terrain);
    for (const { local, lots, n } of bloc.locaux) {
      let count = 1;
      if (local.lots.length === 0) for (const c of n) if (c.n > count) count = c.n;
      if (count > 1) doublonProbable = true;
      for (let i = 0; i < count; i++) locaux.push(local);
      nombreLots += lots * count;
    }
  }
  const logements = locaux.filter((l) => isLogement(l.type));
  const surfaceSum = logements.reduce((s, l) => s + (l.surface_bati ?? 0), 0);
  const surfaceLogements = logements.length > 0 && surfaceSum > 0 ? round2(surfaceSum) : null;
  const valeur = first.valeur;
  const prixM2 = valeur !== null && valeur > 0 && surfaceLogements !== null ? round2(valeur / surfaceLogements) : null;
  const types = [...new Set(locaux.map((l) => l.type).filter((t): t is TypeLocal => t !== null))];
  const venteEnBloc = logements.length >= 2;
  const avecLocalPro = types.includes('local');
  const symbolique = valeur !== null && valeur <= 1;
  const prixAtypique =
    symbolique || (prixM2 !== null && (prixM2 < PRIX_M2_PLAUSIBLE.min || prixM2 > PRIX_M2_PLAUSIBLE.max));
  const moyenne = surfaceLogements !== null ? surfaceLogements / logements.length : null;
  const surfaceAtypique =
    logements.length > 0 &&
    (moyenne === null || moyenne < SURFACE_LOGEMENT_PLAUSIBLE.min || moyenne > SURFACE_LOGEMENT_PLAUSIBLE.max);

  let motif: string | null = null;
  if (valeur === null) motif = 'valeur foncière absente';
  else if (logements.length === 0) motif = 'aucun logement : pas de prix au m²';
  else if (surfaceLogements === null) motif = 'surface des logements absente : pas de prix au m²';
  else if (first.nature === 'echange') motif = 'échange : la valeur n’est pas un prix de marché';
  else if (first.nature === 'expropriation') motif = 'expropriation : la valeur est une indemnité';
  else if (symbolique) motif = 'prix symbolique (1 € ou moins)';
  else if (prixAtypique) {
    motif = `prix au m² hors des bornes plausibles (${PRIX_M2_PLAUSIBLE.min} à ${PRIX_M2_PLAUSIBLE.max} €/m²)`;
  } else if (surfaceAtypique) {
    motif = `surface moyenne par logement hors des bornes plausibles (${SURFACE_LOGEMENT_PLAUSIBLE.min} à ${SURFACE_LOGEMENT_PLAUSIBLE.max} m²)`;
  } else if (doublonProbable) {
    motif = 'locaux identiques sur plusieurs lignes : doublon probable, la surface peut être comptée deux fois';
  } else if (venteEnBloc) motif = `vente en bloc de ${logements.length} logements : prix au m² moyen de l’ensemble`;
  else if (avecLocalPro) motif = 'le prix comprend un local professionnel';

  // The address and position of the main line: the first dwelling, else the first local, else a line with a street.
  const principale =
    lines.find((l) => isLogement(l.typeLocal)) ?? lines.find((l) => l.typeLocal) ?? lines.find((l) => l.voie) ?? first;
  const situee =
    principale.lat !== null && principale.lon !== null
      ? principale
      : lines.find((l) => l.lat !== null && l.lon !== null);
  const surfaceTerrain = terrains.reduce((s, t) => s + (t.surface ?? 0), 0);

  return {
    id_mutation: idOf(lines),
    format,
    date_mutation: first.date,
    millesime: Number(first.date.slice(0, 4)),
    nature: first.nature,
    nature_libelle: first.natureLibelle,
    valeur_fonciere: valeur,
    adresse_numero: principale.numero,
    adresse_suffixe: principale.suffixe,
    adresse_voie: principale.voie,
    code_voie: principale.codeVoie,
    code_postal: principale.codePostal,
    insee: principale.insee,
    commune: principale.commune,
    departement: principale.departement,
    lat: situee?.lat ?? null,
    lon: situee?.lon ?? null,
    parcelle_principale: principale.parcelle,
    parcelles,
    volumes,
    nb_dispositions: dispositions.length,
    nb_lignes: lines.length,
    locaux,
    terrains,
    nombre_lots: nombreLots,
    surface_terrain: terrains.some((t) => t.surface !== null) ? round2(surfaceTerrain) : null,
    types_locaux: types,
    logements: logements.length,
    surface_logements: surfaceLogements,
    prix_m2: prixM2,
    vente_en_bloc: venteEnBloc,
    avec_dependance: types.includes('dependance'),
    avec_local_pro: avecLocalPro,
    prix_atypique: prixAtypique,
    surface_atypique: surfaceAtypique,
    doublon_probable: doublonProbable,
    motif,
  };
}

// ---------------------------------------------------------------------------------------------------------------------
// COPY FROM STDIN over node-postgres (no extra dependency): a Submittable fed from an iterable of chunks.
// ---------------------------------------------------------------------------------------------------------------------

interface CopyConnection {
  query(text: string): void;
  sendCopyFromChunk(chunk: Buffer): void;
  endCopyFrom(): void;
  sendCopyFail(message: string): void;
  stream: NodeJS.WritableStream & { writableNeedDrain?: boolean };
}

class CopyFromStdin implements Submittable {
  readonly finished: Promise<number>;
  private settle!: (error: Error | null) => void;
  private rowCount = 0;
  private failed: Error | null = null;

  private readonly text: string;
  private readonly source: Iterable<Buffer | string> | AsyncIterable<Buffer | string>;

  constructor(text: string, source: Iterable<Buffer | string> | AsyncIterable<Buffer | string>) {
    this.text = text;
    this.source = source;
    this.finished = new Promise((resolve, reject) => {
      this.settle = (error) => (error ? reject(error) : resolve(this.rowCount));
    });
  }

  submit(connection: Connection): void {
    (connection as unknown as CopyConnection).query(this.text);
  }

  handleCopyInResponse(connection: CopyConnection): void {
    void this.pump(connection);
  }

  private async pump(connection: CopyConnection): Promise<void> {
    try {
      for await (const chunk of this.source) {
        if (this.failed) return;
        connection.sendCopyFromChunk(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
        // The socket's own buffer bounds memory: wait for it to drain before the next chunk.
        if (connection.stream.writableNeedDrain) await once(connection.stream, 'drain');
      }
      connection.endCopyFrom();
    } catch (error) {
      connection.sendCopyFail(String((error as Error).message ?? error));
    }
  }

  handleCommandComplete(message: { text?: string }): void {
    this.rowCount = Number(/(\d+)\s*$/.exec(message.text ?? '')?.[1] ?? 0);
  }

  handleReadyForQuery(): void {
    this.settle(this.failed);
  }

  handleError(error: Error): void {
    // The server answers ReadyForQuery after an error, but the client no longer routes it to this query.
    this.failed = error;
    this.settle(error);
  }

  handleRowDescription(): void {}
  handleDataRow(): void {}
  handlePortalSuspended(): void {}
  handleEmptyQuery(): void {}
  handleCopyData(): void {}
}

/** Runs `COPY … FROM STDIN` on `client` with the given chunks; resolves with the number of rows copied. */
export function copyFrom(
  client: PoolClient,
  sql: string,
  chunks: Iterable<Buffer | string> | AsyncIterable<Buffer | string>,
): Promise<number> {
  const copy = new CopyFromStdin(sql, chunks);
  client.query(copy);
  return copy.finished;
}

// ---------------------------------------------------------------------------------------------------------------------
// Staging and merge.
// ---------------------------------------------------------------------------------------------------------------------

/** Columns written from the file, in COPY order (copyLine writes them in this order). */
const COLONNES: Array<[keyof Mutation, string]> = [
  ['id_mutation', 'text'],
  ['format', 'text'],
  ['date_mutation', 'date'],
  ['millesime', 'smallint'],
  ['nature', 'text'],
  ['nature_libelle', 'text'],
  ['valeur_fonciere', 'numeric(15,2)'],
  ['adresse_numero', 'integer'],
  ['adresse_suffixe', 'text'],
  ['adresse_voie', 'text'],
  ['code_voie', 'text'],
  ['code_postal', 'text'],
  ['insee', 'text'],
  ['commune', 'text'],
  ['departement', 'text'],
  ['lat', 'double precision'],
  ['lon', 'double precision'],
  ['parcelle_principale', 'text'],
  ['parcelles', 'text[]'],
  ['volumes', 'text[]'],
  ['nb_dispositions', 'smallint'],
  ['nb_lignes', 'integer'],
  ['locaux', 'text'],
  ['terrains', 'text'],
  ['nombre_lots', 'integer'],
  ['surface_terrain', 'double precision'],
  ['types_locaux', 'text[]'],
  ['logements', 'smallint'],
  ['surface_logements', 'double precision'],
  ['prix_m2', 'double precision'],
  ['vente_en_bloc', 'boolean'],
  ['avec_dependance', 'boolean'],
  ['avec_local_pro', 'boolean'],
  ['prix_atypique', 'boolean'],
  ['surface_atypique', 'boolean'],
  ['doublon_probable', 'boolean'],
  ['motif', 'text'],
];
const NOMS = COLONNES.map(([name]) => name);
// Kept by an update when the file has no position: the BAN number's position found since.
const POSITION = new Set(['lat', 'lon']);

/** The CopyBinaryWriter method that writes each type of COLONNES. */
const ECRITURES: Record<string, keyof CopyBinaryWriter> = {
  text: 'text',
  date: 'date',
  smallint: 'int2',
  integer: 'int4',
  'numeric(15,2)': 'numeric',
  'double precision': 'float8',
  'text[]': 'textArray',
  boolean: 'bool',
};

/**
 * Writes the columns of COLONNES of a mutation in COPY's binary format (fields only, without a row's field count).
 * Generated from COLONNES as straight code, one read of a named property per column: a loop over closures reading
 * `m[name]` made every read a lookup by name, a tenth of the readers' time (bench/RESULTS.md). locaux and terrains
 * are written as JSON text (db/migrations/013_dvf_partitions.sql).
 */
const encodeFields = new Function(
  'w',
  'm',
  COLONNES.map(([name, type]) => {
    const ecriture = ECRITURES[type];
    if (!ecriture) throw new Error(`type de colonne sans écriture binaire : ${type}`);
    if (name === 'locaux' || name === 'terrains') return `w.text(JSON.stringify(m.${name}));`;
    return `w.${ecriture}(m.${name}${type === 'numeric(15,2)' ? ', 2' : ''});`;
  }).join('\n'),
) as (w: CopyBinaryWriter, m: Mutation) => void;

/**
 * The fingerprint of a mutation's encoded columns: a re-import looks up the stored ones and writes only the
 * mutations whose columns changed. 96 bits of SHA-1 (a collision would only leave one changed mutation unwritten,
 * at odds of 2^-96).
 */
function empreinte(fields: Uint8Array): string {
  return hash('sha1', fields, 'base64url').slice(0, 16);
}

const STAGING = `CREATE TEMP TABLE dvf_lot (${COLONNES.map(([n, t]) => `${n} ${t}`).join(', ')}, empreinte text) ON COMMIT PRESERVE ROWS`;
// New mutations go straight into the table (or a new vintage's own): the same columns, the dataset first, the
// position's source and the fingerprint last.
const copyInto = (table: string) =>
  `COPY ${table} (dataset, ${NOMS.join(', ')}, position_source, empreinte) FROM STDIN WITH (FORMAT binary)`;
/** A row of copyInto: the dataset, the mutation's encoded columns (written by `fields`), its position's source, its
 * fingerprint (of those columns); returns the fingerprint. */
function writeRow(w: CopyBinaryWriter, dataset: Dataset, situee: boolean, fields: () => void): string {
  w.row(COLONNES.length + 3);
  w.text(dataset);
  const start = w.end;
  fields();
  const fingerprint = empreinte(w.bytes.subarray(start, w.end));
  w.text(situee ? 'dvf' : null);
  w.text(fingerprint);
  return fingerprint;
}
/** The partition of a vintage (db/migrations/013_dvf_partitions.sql). */
const partition = (dataset: Dataset, millesime: number) => `dvf_mutations_${dataset}_${millesime}`;
const COMPARES = NOMS.filter((n) => n !== 'id_mutation' && !POSITION.has(n));
/**
 * Mutations already stored whose fingerprint changed: rewritten. A position taken from the BAN since is kept while
 * the file still has none.
 */
const MISE_A_JOUR = `
UPDATE dvf_mutations m SET
  ${COMPARES.map((n) => `${n} = l.${n}`).join(', ')},
  lat = CASE WHEN l.lat IS NULL AND m.position_source = 'ban' THEN m.lat ELSE l.lat END,
  lon = CASE WHEN l.lat IS NULL AND m.position_source = 'ban' THEN m.lon ELSE l.lon END,
  position_source = CASE WHEN l.lat IS NULL AND m.position_source = 'ban' THEN 'ban'
                         WHEN l.lat IS NULL THEN NULL ELSE 'dvf' END,
  empreinte = l.empreinte,
  importe_le = now()
FROM pg_temp.dvf_lot l
WHERE m.dataset = $1 AND m.id_mutation = l.id_mutation AND m.millesime = l.millesime`;
// Imports of one dataset run one at a time: a batch's new mutations are those absent when it is written.
const VERROU_IMPORT = 726_354_009;

/** A mutation `m` without a BAN number: none attached yet, or one the BAN no longer has. */
const sansNumeroBan = (m: string) =>
  `(${m}.cle_ban IS NULL OR NOT EXISTS (SELECT 1 FROM adresses x WHERE x.dataset = ${m}.dataset AND x.cle_ban = ${m}.cle_ban))`;
/** The columns an attachment to the BAN address `a` sets: its key, and its position where the file had none. */
const RATTACHEMENT = `cle_ban = a.cle_ban,
            lat = CASE WHEN m.position_source = 'dvf' THEN m.lat ELSE a.lat END,
            lon = CASE WHEN m.position_source = 'dvf' THEN m.lon ELSE a.lon END,
            position_source = CASE WHEN m.position_source = 'dvf' THEN 'dvf' ELSE 'ban' END`;

/**
 * Attaches BAN numbers to the mutations of these communes that have none (or one the BAN has removed since): same
 * street code and number (and suffix), else the only BAN number on the mutation's main parcel. A mutation without
 * coordinates takes the number's position. The BAN importer writes street codes as DVF does (`0105`, `B012`) and the
 * repetition index in lower case (`bis`, `ter`, `a`): DVF's B/T/Q is read as bis/ter/quater, a BAN letter `b`
 * matches it too. Reads find the sales of a number by this key alone (db/migrations/014_dvf_numero_par_cle.sql).
 */
export async function attachBanKeys(db: Pick<Db, 'query'>, dataset: Dataset, insees: string[]): Promise<number> {
  if (insees.length === 0) return 0;
  const byNumber = await db.query(
    `UPDATE dvf_mutations m
        SET ${RATTACHEMENT}
       FROM adresses a
      WHERE m.dataset = $1 AND m.insee = ANY($2) AND ${sansNumeroBan('m')} AND m.adresse_numero IS NOT NULL
        AND a.dataset = m.dataset AND a.insee = m.insee AND a.type = 'numero' AND a.numero = m.adresse_numero
        AND a.code_voie = m.code_voie
        AND coalesce(lower(a.suffixe), '') IN (coalesce(m.adresse_suffixe, ''), left(coalesce(m.adresse_suffixe, ''), 1))`,
    [dataset, insees],
  );
  const byParcel = await db.query(
    `UPDATE dvf_mutations m
        SET ${RATTACHEMENT}
       FROM (SELECT m2.id_mutation, min(a2.cle_ban) AS cle_ban
               FROM dvf_mutations m2
               JOIN adresses a2 ON a2.dataset = m2.dataset AND a2.insee = m2.insee AND a2.type = 'numero'
                               AND a2.parcelles @> ARRAY[m2.parcelle_principale]
              WHERE m2.dataset = $1 AND m2.insee = ANY($2) AND ${sansNumeroBan('m2')}
              GROUP BY m2.id_mutation
             HAVING count(*) = 1) u
       JOIN adresses a ON a.dataset = $1 AND a.cle_ban = u.cle_ban
      WHERE m.dataset = $1 AND m.id_mutation = u.id_mutation`,
    [dataset, insees],
  );
  return (byNumber.rowCount ?? 0) + (byParcel.rowCount ?? 0);
}

// ---------------------------------------------------------------------------------------------------------------------
// Split mutations: a Bloom filter of the ids already written (16 MiB, whatever the file's size).
// ---------------------------------------------------------------------------------------------------------------------

function createBloom(bits = 1 << 27) {
  const words = new Uint32Array(bits >>> 5);
  const mask = bits - 1;
  const hashes = (text: string): [number, number] => {
    let h1 = 0x811c9dc5;
    let h2 = 0x01000193 ^ text.length;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      h1 = Math.imul(h1 ^ c, 0x01000193);
      h2 = Math.imul(h2 ^ c, 0x5bd1e995);
      h2 ^= h2 >>> 15;
    }
    return [h1 >>> 0, (h2 | 1) >>> 0];
  };
  return {
    /** Adds `text`; true when it was (probably) there already. */
    testAndAdd(text: string): boolean {
      const [a, b] = hashes(text);
      let present = true;
      for (let k = 0; k < 4; k++) {
        const bit = (a + Math.imul(k, b)) & mask;
        const word = bit >>> 5;
        const flag = 1 << (bit & 31);
        if ((words[word] & flag) === 0) {
          present = false;
          words[word] |= flag;
        }
      }
      return present;
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------------
// The import.
// ---------------------------------------------------------------------------------------------------------------------

export interface DvfImportOptions {
  dataset?: Dataset;
  /** Worker threads that read the file (LECTEURS by default). */
  lecteurs?: number;
  onProgress?: (progress: { lus: number; gardes: number }) => void;
}

export interface DvfImportReport {
  source: string;
  format: 'etalab' | 'dgfip';
  formatLibelle: string;
  /** Data lines read (header excluded), kept, and the first rejected with why. */
  lus: number;
  gardes: number;
  rejetes: Array<{ ligne: number; motif: string }>;
  mutations: { lues: number; ajoutees: number; modifiees: number; inchangees: number };
  /** Mutations whose lines were not consecutive in the file, regrouped by a second reading. */
  scindees: number;
  /** Mutations without coordinates in the file. */
  sansCoordonnees: number;
  /** Mutations newly attached to a BAN number. */
  rattacheesBan: number;
  millesimes: number[];
}

/** Imports a DVF file (Etalab geolocated CSV or raw DGFiP) into `dataset`; see the top of this file. */
export async function importDvf(db: Db, source: string, options: DvfImportOptions = {}): Promise<DvfImportReport> {
  const dataset = options.dataset ?? 'live';
  const info = await stat(source).catch(() => null);
  if (!info?.isFile()) throw new ImportError(`Fichier DVF introuvable : ${source}.`);
  const report: DvfImportReport = {
    source,
    format: 'etalab',
    formatLibelle: '',
    lus: 0,
    gardes: 0,
    rejetes: [],
    mutations: { lues: 0, ajoutees: 0, modifiees: 0, inchangees: 0 },
    scindees: 0,
    sansCoordonnees: 0,
    rattacheesBan: 0,
    millesimes: [],
  };
  const client = await db.connect();
  let writer: Writer | null = null;
  try {
    await client.query('SELECT pg_advisory_lock($1, hashtext($2))', [VERROU_IMPORT, dataset]);
    // The batches' commits do not wait for the disk: after a crash, an import is run again anyway (new vintages
    // are only visible once attached, a commit that waits). Hundreds of waits saved.
    await client.query('SET synchronous_commit = off');
    await client.query('DROP TABLE IF EXISTS pg_temp.dvf_lot');
    await client.query(STAGING);
    const attached = new Set((await vintagePartitions(client, dataset)).keys());
    const dejaLa = new Set(attached);
    writer = createWriter(db, client, dataset, attached, report);
    const lecture = await readInWorkers(source, options.lecteurs ?? LECTEURS, dataset, attached, async (lot) => {
      if (lot.oublier) await writer!.forget(lot.oublier);
      await writer!.write(lot);
      report.lus = lot.lus;
      report.gardes = lot.gardes;
      options.onProgress?.({ lus: report.lus, gardes: report.gardes });
    });
    Object.assign(report, {
      format: lecture.format,
      formatLibelle: lecture.formatLibelle,
      lus: lecture.lus,
      gardes: lecture.gardes,
      rejetes: lecture.rejetes,
      scindees: lecture.scindees,
      sansCoordonnees: lecture.sansCoordonnees,
      millesimes: lecture.millesimes.map((v) => v.millesime),
    });
    await writer.attach();
    report.mutations.lues = lecture.mutations;
    // Mutations regrouped by the second reading were written twice: they may count as modified although unchanged.
    report.mutations.inchangees = Math.max(
      0,
      report.mutations.lues - report.mutations.ajoutees - report.mutations.modifiees,
    );
    report.rattacheesBan = await attachBanKeys(client, dataset, lecture.insees);
    if (lecture.millesimes.length > 0) {
      const changed = report.mutations.ajoutees + report.mutations.modifiees > 0;
      // A vintage new to the dataset holds what the file has of it: its figures are the readers' (counting them
      // again would read it whole). Unless mutations were regrouped by a second reading: they were counted twice.
      const nouveaux = lecture.scindees ? [] : lecture.millesimes.filter((v) => !dejaLa.has(v.millesime));
      const comptes = lecture.millesimes.filter((v) => !nouveaux.includes(v));
      await client.query(
        `INSERT INTO dvf_millesimes AS d (dataset, millesime, mutations, premiere_mutation, derniere_mutation)
         SELECT dataset, millesime, count(*), min(date_mutation), max(date_mutation)
           FROM dvf_mutations WHERE dataset = $1 AND millesime = ANY($2) GROUP BY dataset, millesime
         UNION ALL
         SELECT $1, * FROM unnest($4::smallint[], $5::integer[], $6::date[], $7::date[])
         ON CONFLICT (dataset, millesime) DO UPDATE SET
           mutations = excluded.mutations, premiere_mutation = excluded.premiere_mutation,
           derniere_mutation = excluded.derniere_mutation, importe_le = now()
         WHERE $3 OR (d.mutations, d.premiere_mutation, d.derniere_mutation)
                     IS DISTINCT FROM (excluded.mutations, excluded.premiere_mutation, excluded.derniere_mutation)`,
        [
          dataset,
          comptes.map((v) => v.millesime),
          changed,
          nouveaux.map((v) => v.millesime),
          nouveaux.map((v) => v.mutations),
          nouveaux.map((v) => v.premiere),
          nouveaux.map((v) => v.derniere),
        ],
      );
    }
    options.onProgress?.({ lus: report.lus, gardes: report.gardes });
    return report;
  } finally {
    await writer?.discard().catch(() => {});
    await client.query('DROP TABLE IF EXISTS pg_temp.dvf_lot').catch(() => {});
    await client.query('SELECT pg_advisory_unlock($1, hashtext($2))', [VERROU_IMPORT, dataset]).catch(() => {});
    await client.query('RESET synchronous_commit').catch(() => {});
    client.release();
  }
}

/** The attached partitions of `dataset`'s vintages: vintage → table name. */
export async function vintagePartitions(db: Pick<Db, 'query'>, dataset: Dataset): Promise<Map<number, string>> {
  const { rows } = await db.query<{ relname: string }>(
    `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = 'dvf_mutations'::regclass`,
  );
  const partitions = new Map<number, string>();
  for (const { relname } of rows) {
    const millesime = Number(relname.slice(relname.lastIndexOf('_') + 1));
    if (relname === partition(dataset, millesime)) partitions.set(millesime, relname);
  }
  return partitions;
}

/**
 * Empties the sales of `dataset`: its vintages' partitions dropped, so that the next import of each loads it whole
 * again (the fast way), and its vintages forgotten.
 */
export async function emptyDvf(db: Pick<Db, 'query'>, dataset: Dataset): Promise<void> {
  for (const table of (await vintagePartitions(db, dataset)).values()) await db.query(`DROP TABLE ${table}`);
  await db.query('DELETE FROM dvf_millesimes WHERE dataset = $1', [dataset]);
}

type Writer = ReturnType<typeof createWriter>;

/**
 * Writes the batches of one import. A vintage the dataset has no partition for is COPied into a table of its own,
 * without indexes, and attached by `attach()` at the end: PostgreSQL then builds its indexes in one sorted pass each
 * (bench/RESULTS.md says what it saves), and it appears whole. In a vintage already there, new mutations are COPied
 * straight into the table and known ones staged and updated where they changed; which are new is first guessed (all,
 * until a batch meets a known one: a first import looks nothing up), then looked up by primary key for every
 * following batch.
 */
function createWriter(db: Db, client: PoolClient, dataset: Dataset, attached: Set<number>, report: DvfImportReport) {
  /** COPY data of `rows`, with `write` for each. */
  const copyData = (rows: Staged[], write: (w: CopyBinaryWriter, m: Staged) => void) => {
    const w = new CopyBinaryWriter(rows.length * 1024);
    w.raw(COPY_BINARY_HEADER);
    for (const m of rows) write(w, m);
    w.raw(COPY_BINARY_TRAILER);
    return slices(w.take());
  };
  /** Vintages new to the dataset, loaded into tables of their own until `attach()`. */
  const fresh = new Set<number>();
  let lookUp = false;

  const writeFresh = async (millesime: number, copie: Uint8Array) => {
    const table = partition(dataset, millesime);
    if (!fresh.has(millesime)) {
      // A table of that name not attached is what an import that died left: nothing anyone reads.
      await client.query(`DROP TABLE IF EXISTS ${table}`);
      // The CHECK lets ATTACH know the rows belong there without reading them again.
      await client.query(
        `CREATE TABLE ${table} (LIKE dvf_mutations INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
           CHECK (dataset = '${dataset}' AND millesime = ${millesime}))`,
      );
      fresh.add(millesime);
    }
    report.mutations.ajoutees += await copyFrom(client, copyInto(table), slices(copie));
  };

  const writeKnown = async (batch: Staged[]) => {
    const copyNew = (rows: Staged[]) =>
      copyFrom(
        client,
        copyInto('dvf_mutations'),
        copyData(rows, (w, m) => writeRow(w, dataset, m.situee, () => w.raw(m.row))),
      );
    if (!lookUp) {
      try {
        report.mutations.ajoutees += await copyNew(batch);
        return;
      } catch (error) {
        // A known mutation in the batch: the COPY was rolled back whole; look ids up from now on.
        if ((error as { code?: string }).code !== '23505') throw error;
        lookUp = true;
      }
    }
    // One probe of the primary key per id (in its vintage's partition), whatever the statistics say: those of a table
    // being filled are stale enough for the planner to read the whole dataset for every batch (measured: 4.3 s of
    // lookups to re-import 171 000 mutations, 0.5 s this way).
    const rows = await withNestedLoops(
      async () =>
        (
          await client.query<{ id_mutation: string; empreinte: string }>(
            `SELECT m.id_mutation, m.empreinte FROM unnest($2::text[], $3::smallint[]) AS i(id, millesime)
               JOIN dvf_mutations m ON m.dataset = $1 AND m.id_mutation = i.id AND m.millesime = i.millesime`,
            [dataset, batch.map((m) => m.id), batch.map((m) => m.millesime)],
          )
        ).rows,
    );
    const stored = new Map(rows.map((r) => [r.id_mutation, r.empreinte]));
    const nouvelles = batch.filter((m) => !stored.has(m.id));
    if (nouvelles.length > 0) report.mutations.ajoutees += await copyNew(nouvelles);
    // Unchanged mutations (same fingerprint) cost nothing more than the lookup.
    const changees = batch.filter((m) => stored.has(m.id) && stored.get(m.id) !== m.empreinte);
    if (changees.length === 0) return;
    await client.query('TRUNCATE pg_temp.dvf_lot');
    await copyFrom(
      client,
      'COPY pg_temp.dvf_lot FROM STDIN WITH (FORMAT binary)',
      copyData(changees, (w, m) => {
        w.row(COLONNES.length + 1);
        w.raw(m.row);
        w.text(m.empreinte);
      }),
    );
    report.mutations.modifiees += await withNestedLoops(
      async () => (await client.query(MISE_A_JOUR, [dataset])).rowCount ?? 0,
    );
  };

  /** Runs `work` in a transaction that probes indexes row by row (no hash, merge or bitmap plan). */
  const withNestedLoops = async <T>(work: () => Promise<T>): Promise<T> => {
    await client.query('BEGIN');
    try {
      await client.query(
        'SET LOCAL enable_hashjoin = off; SET LOCAL enable_mergejoin = off; SET LOCAL enable_bitmapscan = off',
      );
      const result = await work();
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    }
  };

  return {
    async write(lot: Transfert) {
      for (const { millesime, copie } of lot.nouvelles) await writeFresh(millesime, copie);
      if (lot.connues.length > 0) await writeKnown(lot.connues);
    },
    /** Removes from the new vintages the parts of split mutations written by the first reading: rewritten whole. */
    async forget(ids: string[]) {
      for (const millesime of fresh) {
        const { rowCount } = await client.query(
          `DELETE FROM ${partition(dataset, millesime)} WHERE id_mutation = ANY($1)`,
          [ids],
        );
        report.mutations.ajoutees -= rowCount ?? 0;
      }
    },
    /**
     * Indexes the new vintages and attaches them, all in one transaction. Their indexes are those of the table
     * (read from the catalogue, so declared in the migrations only), built three at a time once the reading is over:
     * a build waits on its writes now and then, and a third one keeps both cores busy meanwhile (measured: 1.7 s
     * instead of 1.9 s with two, bench/RESULTS.md). ATTACH then finds them built. The planner's statistics of the new
     * partitions come from autovacuum, which analyses a table that has just been filled; until then it knows their
     * sizes.
     */
    async attach() {
      if (fresh.size === 0) return;
      const vintages = [...fresh].sort((a, b) => a - b);
      const { rows } = await client.query<{ primaire: boolean; definition: string }>(
        `SELECT indisprimary AS primaire, pg_get_indexdef(indexrelid) AS definition
           FROM pg_index WHERE indrelid = 'dvf_mutations'::regclass ORDER BY indexrelid`,
      );
      const builds = vintages.flatMap((millesime) => {
        const table = partition(dataset, millesime);
        return rows.map(({ primaire, definition }) => {
          const name = primaire ? `${table}_pkey` : '';
          const create = definition.replace(
            /^CREATE (UNIQUE )?INDEX \S+ ON ONLY \S+ /,
            (_, unique: string | undefined) => `CREATE ${unique ?? ''}INDEX ${name} ON ${table} `,
          );
          return primaire
            ? [create, `ALTER TABLE ${table} ADD CONSTRAINT ${name} PRIMARY KEY USING INDEX ${name}`]
            : [create];
        });
      });
      // The import's connection and up to two more, leaving one of the pool free: a connection its caller holds
      // meanwhile must not leave these waiting for it.
      const others = await Promise.all(
        Array.from({ length: Math.max(0, Math.min(2, (db.options.max ?? 10) - 2)) }, () => db.connect()),
      );
      try {
        const build = async (connection: PoolClient) => {
          for (let next = builds.shift(); next; next = builds.shift()) {
            await connection.query('BEGIN');
            try {
              // Sorts in memory up to this (PostgreSQL's default, 64 MB, spills a vintage's sorts to disk); no
              // parallel workers of PostgreSQL's own beside these builds.
              await connection.query(
                `SET LOCAL maintenance_work_mem = '256MB'; SET LOCAL max_parallel_maintenance_workers = 0`,
              );
              for (const statement of next) await connection.query(statement);
              await connection.query('COMMIT');
            } catch (error) {
              await connection.query('ROLLBACK').catch(() => {});
              builds.length = 0;
              throw error;
            }
          }
        };
        // All settle before the connections go back to the pool; the first failure is raised.
        const outcomes = await Promise.allSettled([client, ...others].map(build));
        for (const outcome of outcomes) if (outcome.status === 'rejected') throw outcome.reason;
      } finally {
        for (const other of others) other.release();
      }
      await client.query('BEGIN');
      try {
        await client.query('SET LOCAL synchronous_commit = on');
        for (const millesime of vintages) {
          await client.query(
            `ALTER TABLE dvf_mutations ATTACH PARTITION ${partition(dataset, millesime)}
               FOR VALUES FROM ('${dataset}', ${millesime}) TO ('${dataset}', ${millesime + 1})`,
          );
        }
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      }
      for (const millesime of vintages) {
        fresh.delete(millesime);
        attached.add(millesime);
      }
    },
    /** Drops what an import that failed loaded into new vintages: it never appeared. */
    async discard() {
      for (const millesime of fresh) await client.query(`DROP TABLE IF EXISTS ${partition(dataset, millesime)}`);
      fresh.clear();
    },
  };
}

/** A mutation ready to be looked up and written: its id and vintage, its encoded columns and their fingerprint. */
interface Staged {
  id: string;
  millesime: number;
  row: Uint8Array;
  empreinte: string;
  situee: boolean;
}

/** What the reading of a file gives, besides its batches. */
interface Lecture {
  format: 'etalab' | 'dgfip';
  formatLibelle: string;
  lus: number;
  gardes: number;
  rejetes: Array<{ ligne: number; motif: string }>;
  mutations: number;
  scindees: number;
  sansCoordonnees: number;
  insees: string[];
  /** What the file has of each vintage, in order. */
  millesimes: Millesime[];
}

/** A vintage's mutations in a file: how many, the first and last dates (as dvf_millesimes has them). */
interface Millesime {
  millesime: number;
  mutations: number;
  premiere: string;
  derniere: string;
}

/**
 * A batch as it goes from a reader to the writer: the mutations of vintages new to the dataset as COPY data, ready
 * to send (their bytes change hands, they are not copied), the others one by one, for the writer to look them up.
 */
interface Transfert {
  nouvelles: Array<{ millesime: number; copie: Uint8Array }>;
  connues: Staged[];
  /** Split mutations: what the first reading wrote of them goes before they are written whole. */
  oublier?: string[];
  lus: number;
  gardes: number;
}

/**
 * The batch a reader fills, for a dataset whose vintages `attached` are there already. A mutation of a new vintage
 * is written as binary COPY data straight into that vintage's buffer, its fingerprint hashed from its bytes there:
 * nothing of it is kept but those bytes. The others are kept one by one, encoded.
 */
function createBatch(dataset: Dataset, attached: Set<number>) {
  let writers = new Map<number, CopyBinaryWriter>();
  let connues: Staged[] = [];
  let size = 0;
  return {
    get size() {
      return size;
    },
    add(m: Mutation) {
      size++;
      const situee = m.lat !== null;
      if (attached.has(m.millesime)) {
        const w = new CopyBinaryWriter(1024);
        encodeFields(w, m);
        const row = w.take();
        connues.push({ id: m.id_mutation, millesime: m.millesime, row, situee, empreinte: empreinte(row) });
        return;
      }
      let w = writers.get(m.millesime);
      if (!w) {
        writers.set(m.millesime, (w = new CopyBinaryWriter(1 << 20)));
        w.raw(COPY_BINARY_HEADER);
      }
      const writer = w;
      writeRow(writer, dataset, situee, () => encodeFields(writer, m));
    },
    /** The batch's transfer; the batch starts again empty. */
    take(oublier: string[] | undefined, lus: number, gardes: number): Transfert {
      const nouvelles = [...writers].map(([millesime, w]) => {
        w.raw(COPY_BINARY_TRAILER);
        return { millesime, copie: w.take() };
      });
      const transfert = { nouvelles, connues, oublier, lus, gardes };
      writers = new Map();
      connues = [];
      size = 0;
      return transfert;
    },
  };
}

/**
 * Reads the file, groups its lines, folds the mutations and hands them out in batches (`emit` resolves when the
 * batch is written: the reader never runs more than that batch ahead).
 */
async function readMutations(
  source: string,
  part: Part,
  batch: ReturnType<typeof createBatch>,
  emit: (transfert: Transfert) => Promise<void>,
): Promise<Lecture> {
  const lecture: Lecture = {
    format: 'etalab',
    formatLibelle: '',
    lus: 0,
    gardes: 0,
    rejetes: [],
    mutations: 0,
    scindees: 0,
    sansCoordonnees: 0,
    insees: [],
    millesimes: [],
  };
  let format: Format | null = null;
  const onFormat = (f: Format) => {
    format = f;
    lecture.format = f.nom;
    lecture.formatLibelle = f.libelle;
  };
  const insees = new Set<string>();
  const millesimes = new Map<number, Millesime>();
  const bloom = createBloom();
  const scindees = new Set<string>();
  let pending: Promise<void> = Promise.resolve();
  let failure: unknown = null;
  // The next batch is folded while this one is written; an error is kept and raised at the next batch.
  const flush = async (oublier?: string[]) => {
    await pending;
    if (failure) throw failure;
    if (batch.size === 0 && !oublier) return;
    pending = emit(batch.take(oublier, lecture.lus, lecture.gardes)).catch((error: unknown) => {
      failure = error;
    });
  };
  const stage = (lines: Ligne[]) => {
    const mutation = foldMutation(lines, format!.nom);
    lecture.mutations++;
    if (mutation.lat === null) lecture.sansCoordonnees++;
    insees.add(mutation.insee);
    const v = millesimes.get(mutation.millesime);
    const date = mutation.date_mutation;
    if (!v)
      millesimes.set(mutation.millesime, {
        millesime: mutation.millesime,
        mutations: 1,
        premiere: date,
        derniere: date,
      });
    else {
      v.mutations++;
      if (date < v.premiere) v.premiere = date;
      if (date > v.derniere) v.derniere = date;
    }
    batch.add(mutation);
  };
  const onLine = (line: Ligne | { ligne: number; motif: string }) => {
    lecture.lus++;
    if ('motif' in line) {
      if (lecture.rejetes.length < MAX_REJETS_LISTES) lecture.rejetes.push(line);
    } else lecture.gardes++;
  };

  for await (const done of groups(source, onFormat, onLine, part)) {
    for (const lines of done) {
      const id = idOf(lines);
      // Seen before in this file: its lines are not all consecutive, the second reading regroups them all.
      if (bloom.testAndAdd(id) || scindees.has(id)) {
        scindees.add(id);
        if (scindees.size > MAX_SCINDEES) {
          throw new ImportError(
            `Plus de ${MAX_SCINDEES} mutations ont leurs lignes dispersées dans le fichier : triez-le par mutation (id_mutation, ou document et date pour le fichier DGFiP) avant de l’importer.`,
          );
        }
        continue;
      }
      stage(lines);
      if (batch.size >= MUTATIONS_PAR_LOT) await flush();
    }
  }
  await flush();

  if (scindees.size > 0) {
    // Second reading: every line of the split mutations, whatever their place; only those are kept in memory.
    // The same filter, replayed in the same order, tells which of them the first reading wrote (their first part).
    const replay = createBloom();
    const dejaEcrites = new Set<string>();
    const collected = new Map<string, Ligne[]>();
    for await (const done of groups(
      source,
      () => {},
      () => {},
      part,
    )) {
      for (const lines of done) {
        const id = idOf(lines);
        const vu = replay.testAndAdd(id);
        if (!scindees.has(id)) continue;
        if (!vu && !collected.has(id)) dejaEcrites.add(id);
        collected.set(id, [...(collected.get(id) ?? []), ...lines]);
      }
    }
    // The first batch of whole mutations goes with the ids whose first part was written.
    let oublier: string[] | undefined = [...dejaEcrites];
    for (const lines of collected.values()) {
      stage(lines);
      if (batch.size >= MUTATIONS_PAR_LOT) {
        await flush(oublier);
        oublier = undefined;
      }
    }
    await flush(oublier);
    // Counted once: a mutation whose first part was written is rewritten whole, not added again.
    lecture.mutations -= dejaEcrites.size;
    lecture.scindees = scindees.size;
  }
  await flush();
  lecture.insees = [...insees];
  lecture.millesimes = [...millesimes.values()].sort((a, b) => a.millesime - b.millesime);
  return lecture;
}

// ---------------------------------------------------------------------------------------------------------------------
// The reading runs in worker threads: parsing and folding never delay the database's next statement, so both work at
// once, and the readers split the file's mutations between them (Part). The workers are this same module, started
// with WORKER in their workerData.
// ---------------------------------------------------------------------------------------------------------------------

const WORKER = 'svc-dvf-lecture';
/**
 * Readers of one file. Two: parsing is the longest part of an import, and measured on 2 cores (bench/RESULTS.md),
 * two readers and the database's COPY keep both busy where one reader left the second core waiting.
 */
const LECTEURS = 2;

type Message =
  | { type: 'lot'; lot: Transfert }
  | { type: 'fin'; lecture: Lecture }
  | { type: 'erreur'; message: string; importError: boolean };

/** The readings of the parts of a file, as the reading of the whole file. */
function merged(parts: Lecture[]): Lecture {
  const sum = (key: 'lus' | 'gardes' | 'mutations' | 'scindees' | 'sansCoordonnees') =>
    parts.reduce((total, p) => total + p[key], 0);
  return {
    format: parts[0].format,
    formatLibelle: parts[0].formatLibelle,
    lus: sum('lus'),
    gardes: sum('gardes'),
    rejetes: parts
      .flatMap((p) => p.rejetes)
      .sort((a, b) => a.ligne - b.ligne)
      .slice(0, MAX_REJETS_LISTES),
    mutations: sum('mutations'),
    scindees: sum('scindees'),
    sansCoordonnees: sum('sansCoordonnees'),
    insees: [...new Set(parts.flatMap((p) => p.insees))],
    millesimes: [
      ...Map.groupBy(
        parts.flatMap((p) => p.millesimes),
        (v) => v.millesime,
      ).values(),
    ]
      .map((of) => ({
        millesime: of[0].millesime,
        mutations: of.reduce((total, v) => total + v.mutations, 0),
        premiere: of.reduce((min, v) => (v.premiere < min ? v.premiere : min), of[0].premiere),
        derniere: of.reduce((max, v) => (v.derniere > max ? v.derniere : max), of[0].derniere),
      }))
      .sort((a, b) => a.millesime - b.millesime),
  };
}

/**
 * Reads `source` in `lecteurs` worker threads; `write` gets their batches one at a time, with the lines read so far by
 * all of them. A reader waits for its batch to be written before it sends the next one.
 */
function readInWorkers(
  source: string,
  lecteurs: number,
  dataset: Dataset,
  attached: Set<number>,
  write: (lot: Transfert) => Promise<void>,
): Promise<Lecture> {
  return new Promise((resolve, reject) => {
    const workers = Array.from(
      { length: lecteurs },
      (_, index) =>
        new Worker(new URL(import.meta.url), {
          workerData: {
            [WORKER]: true,
            source,
            part: { index, of: lecteurs } satisfies Part,
            dataset,
            attached: [...attached],
          } satisfies LecteurData,
        }),
    );
    const progress = workers.map(() => ({ lus: 0, gardes: 0 }));
    const lectures: Lecture[] = [];
    let settled = false;
    let chain: Promise<void> = Promise.resolve();
    // Their ports would otherwise keep this process alive once the import is over.
    const stop = () => workers.forEach((worker) => void worker.terminate());
    // On a failure, batches still queued are not written, and the promise settles once the one being written is
    // done: the caller then cleans up after a writer that no longer moves.
    const fail = (error: unknown) => {
      if (settled) return;
      settled = true;
      stop();
      void chain.finally(() => reject(error));
    };
    workers.forEach((worker, index) => {
      worker.on('message', (message: Message) => {
        if (message.type === 'lot') {
          progress[index] = { lus: message.lot.lus, gardes: message.lot.gardes };
          const lus = progress.reduce((total, p) => total + p.lus, 0);
          const gardes = progress.reduce((total, p) => total + p.gardes, 0);
          chain = chain
            .then(() => (settled ? undefined : write({ ...message.lot, lus, gardes })))
            .then(() => worker.postMessage('ecrit'), fail);
        } else if (message.type === 'fin') {
          lectures.push(message.lecture);
          if (lectures.length < workers.length) return;
          chain.then(() => {
            if (settled) return;
            settled = true;
            stop();
            resolve(merged(lectures));
          }, fail);
        } else {
          fail(message.importError ? new ImportError(message.message) : new Error(message.message));
        }
      });
      worker.on('error', fail);
      worker.on('exit', (code) => {
        if (!settled) chain.then(() => fail(new Error(`lecture DVF interrompue (code ${code})`)), fail);
      });
    });
  });
}

/** What a reader is told: its file and part, and the dataset's vintages already there. */
interface LecteurData {
  [WORKER]: true;
  source: string;
  part: Part;
  dataset: Dataset;
  attached: number[];
}

async function runWorker({ source, part, dataset, attached }: LecteurData): Promise<void> {
  const port = parentPort!;
  const written: Array<() => void> = [];
  port.on('message', () => written.shift()?.());
  try {
    const lecture = await readMutations(
      source,
      part,
      createBatch(dataset, new Set(attached)),
      (lot) =>
        new Promise<void>((resolve) => {
          written.push(resolve);
          const message = { type: 'lot', lot } satisfies Message;
          port.postMessage(
            message,
            message.lot.nouvelles.map((n) => n.copie.buffer as ArrayBuffer),
          );
        }),
    );
    port.postMessage({ type: 'fin', lecture } satisfies Message);
  } catch (error) {
    port.postMessage({
      type: 'erreur',
      message: (error as Error).message ?? String(error),
      importError: error instanceof ImportError,
    } satisfies Message);
  } finally {
    port.removeAllListeners('message');
  }
}

if (!isMainThread && (workerData as Record<string, unknown> | null)?.[WORKER]) {
  void runWorker(workerData as LecteurData);
}

/** COPY data in slices of 1 MiB (views of the same bytes): the socket's buffer is waited for between them. */
function* slices(bytes: Uint8Array): Generator<Buffer> {
  for (let start = 0; start < bytes.byteLength; start += 1 << 20) {
    yield Buffer.from(bytes.buffer, bytes.byteOffset + start, Math.min(1 << 20, bytes.byteLength - start));
  }
}

/** The `dvf` source of the importers' CLI. */
export const dvfSource: ImportSource = {
  name: 'dvf',
  description:
    'ventes DVF : CSV « DVF géolocalisées » d’Etalab (40 colonnes) ou fichier brut de la DGFiP (ValeursFoncieres-AAAA.txt, séparateur |)',
  async run(db, chemin, { sandbox, onProgress }) {
    const report = await importDvf(db, chemin, { dataset: sandbox ? 'sandbox' : 'live', onProgress });
    const m = report.mutations;
    return {
      source: report.source,
      lus: report.lus,
      gardes: report.gardes,
      rejetes: report.rejetes,
      details: [
        `format    : ${report.formatLibelle}`,
        `mutations : ${m.lues} (${m.ajoutees} ajoutées, ${m.modifiees} modifiées, ${m.inchangees} inchangées)`,
        `millésimes : ${report.millesimes.join(', ') || 'aucun'}`,
        `sans coordonnées dans le fichier : ${report.sansCoordonnees} mutations`,
        `rattachées à un numéro BAN : ${report.rattacheesBan}`,
        ...(report.scindees
          ? [`lignes non consécutives : ${report.scindees} mutations regroupées en seconde lecture`]
          : []),
      ],
    };
  },
};
