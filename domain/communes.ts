import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

/** A commune (or a municipal arrondissement of Paris, Lyon, Marseille) as served by every domain. */
export interface Commune {
  /** INSEE code, 5 characters (2A/2B in Corsica). */
  code: string;
  nom: string;
  departement: string;
  region: string;
  codesPostaux: string[];
  population: number | null;
  /** For a municipal arrondissement (75111), the code of its commune (75056); null otherwise. */
  communeParente: string | null;
}

/** The package of the administrative split the communes come from (the communes importer reads it too). */
export const DECOUPAGE = '@etalab/decoupage-administratif';

/** A commune of the package's `communes.json`, as written there. */
export interface CommuneDecoupage {
  code: string;
  nom: string;
  type: string;
  departement?: string;
  region?: string;
  codesPostaux?: string[];
  population?: number;
  /** Parent commune of a municipal arrondissement. */
  commune?: string;
  /** New commune of a delegated or associated commune. */
  chefLieu?: string;
  centre?: { type: string; coordinates: [number, number] };
}

/**
 * Whether a commune of the package is served as one: a current commune or a municipal arrondissement. Delegated and
 * associated communes reuse the codes of current communes or name communes that no longer exist.
 */
export function estCommuneServie<C extends { type: string }>(
  c: C,
): c is C & { type: 'commune-actuelle' | 'arrondissement-municipal' } {
  return c.type === 'commune-actuelle' || c.type === 'arrondissement-municipal';
}

const INSEE_CODE = /^(?:\d{2}|2[AB])\d{3}$/;

/** Île-de-France départements: the regional share of some taxes and the Île-de-France values depend on them. */
const ILE_DE_FRANCE = new Set(['75', '77', '78', '91', '92', '93', '94', '95']);

/** Overseas départements and regions (DROM): Guadeloupe, Martinique, Guyane, La Réunion, Mayotte. */
const OUTRE_MER = new Set(['971', '972', '973', '974', '976']);

/**
 * Overseas collectivities with their own tax codes (Saint-Pierre-et-Miquelon 975, Saint-Barthélemy 977, Saint-Martin
 * 978, Pacific 984-989): national local taxes and most national datasets do not cover them.
 */
const COLLECTIVITES_OUTRE_MER = new Set(['975', '977', '978', '984', '986', '987', '988', '989']);

let byCode: Map<string, Commune> | undefined;
let anciennes: Array<{ nom: string; commune: string }> = [];

// The file is 8 MB: it is read on first use only, and only the fields we serve are kept.
function load(): Map<string, Commune> {
  if (byCode) return byCode;
  const require = createRequire(import.meta.url);
  const path = require.resolve(`${DECOUPAGE}/data/communes.json`);
  const rows = JSON.parse(readFileSync(path, 'utf8')) as CommuneDecoupage[];
  const map = new Map<string, Commune>();
  const autres: typeof anciennes = [];
  for (const row of rows) {
    if (!estCommuneServie(row)) {
      if (row.chefLieu) autres.push({ nom: row.nom, commune: row.chefLieu });
      continue;
    }
    if (!row.departement || !row.region) continue;
    map.set(row.code, {
      code: row.code,
      nom: row.nom,
      departement: row.departement,
      region: row.region,
      codesPostaux: row.codesPostaux ?? [],
      population: row.population ?? null,
      communeParente: row.type === 'arrondissement-municipal' ? (row.commune ?? null) : null,
    });
  }
  byCode = map;
  anciennes = autres.filter((a) => map.has(a.commune));
  return map;
}

/** Every served commune (current communes and municipal arrondissements). */
export function toutesLesCommunes(): Iterable<Commune> {
  return load().values();
}

/** Delegated and associated communes by their name, each with the served commune it now belongs to. */
export function anciennesCommunes(): ReadonlyArray<{ nom: string; commune: string }> {
  load();
  return anciennes;
}

/** Whether a string has the shape of an INSEE commune code (not whether the commune exists). */
export function isInseeCode(code: string): boolean {
  return INSEE_CODE.test(code.toUpperCase());
}

/** The current commune or municipal arrondissement with this INSEE code, or null when there is none. */
export function communeByCode(code: string): Commune | null {
  const normalised = code.trim().toUpperCase();
  if (!INSEE_CODE.test(normalised)) return null;
  return load().get(normalised) ?? null;
}

export function isIleDeFrance(departement: string): boolean {
  return ILE_DE_FRANCE.has(departement);
}

/** Overseas département (971-974, 976). Saint-Pierre-et-Miquelon (975) is a collectivity, not a département. */
export function isOutreMer(departement: string): boolean {
  return OUTRE_MER.has(departement);
}

export function isCollectiviteOutreMer(departement: string): boolean {
  return COLLECTIVITES_OUTRE_MER.has(departement);
}

/** Département of an INSEE code: three characters overseas (97x), two elsewhere (2A, 2B in Corsica). */
export function departementOf(insee: string): string {
  return insee.startsWith('97') ? insee.slice(0, 3) : insee.slice(0, 2);
}
