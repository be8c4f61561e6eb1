import { ImportError } from '../import/source.ts';
import { type Lot, type Nature, type TypeLocal } from './mutation.ts';
import { departementOf } from '../communes.ts';

/**
 * The two formats of DVF files, the Etalab "DVF géolocalisées" CSV (comma, 40 columns) and the raw DGFiP file (`|`,
 * decimal commas, dd/mm/yyyy), recognised by their header, columns found by name: what a line says, as a `Ligne`.
 */

const INSEE = /^(?:\d{2}|2[AB])\d{3}$/;
const PARCELLE = /^(?:\d{2}|2[AB])\d{3}[0-9A-Z]{3}[0-9A-Z]{2}\d{4}$/;

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

export interface Ligne {
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

/** A line that cannot be read: given as rejected, with why. */
export class Rejet extends Error {}

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

/**
 * The FANTOIR street code on 4 characters, as the BAN writes it (`0730`): the DVF API's export drops leading zeros
 * (`730`), and sales are attached to BAN numbers by this code.
 */
function codeVoie(raw: string | undefined): string | null {
  const code = texte(raw)?.toUpperCase() ?? null;
  return code && /^\d{1,3}$/.test(code) ? code.padStart(4, '0') : code;
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
export interface Format {
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
        codeVoie: codeVoie(f[i.codeVoie]),
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
        codeVoie: codeVoie(at(f, 'code_voie')),
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
export function formatOf(header: string): Format {
  const line = header.replace(/^\uFEFF/, '');
  if (line.includes('|') && plier(line).includes('valeur fonciere')) return dgfipFormat(line.split('|'));
  const csv = splitCsv(line) ?? [];
  if (csv.map((c) => c.trim().toLowerCase()).includes('id_mutation')) return etalabFormat(csv);
  throw new ImportError(
    `Format DVF non reconnu : l’en-tête n’est ni celui des DVF géolocalisées d’Etalab (id_mutation,date_mutation,…) ni celui du fichier DGFiP brut (Code service CH|… ou Identifiant de document|…, séparateur |). Début lu : « ${line.slice(0, 80)} ».`,
  );
}
