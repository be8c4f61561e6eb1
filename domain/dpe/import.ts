import { reconstruireDpeCommunes } from '../marche/agregats.ts';
import { reconstruireDerives } from '../marche/derives.ts';
import { ligneReanalyse, reanalyserCommunes } from '../annonces/reanalyse.ts';
import { open, readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { PoolClient } from 'pg';
import { transaction, type Db } from '../../db/client.ts';
import { projectionOfDepartement, toWgs84 } from '../../lib/geometrie.ts';
import { colonnesDe, csvRecords, lignesDeDonnees, separateurDe, type CsvRecord } from '../import/csv.ts';
import { parLots, upsert, type Lots, type Table } from '../import/ecriture.ts';
import {
  ImportError,
  importSource,
  rejeteur,
  type Dataset,
  type DatasetImportOptions,
  type ImportReport,
} from '../import/source.ts';
import { departementOf } from '../communes.ts';
import { journaliser, nouvellesReferences } from '../flux/journal-adresses.ts';

/**
 * Importer of energy-performance diagnoses (DPE) of dwellings, attached to BAN keys, and of energy audits:
 * - the ADEME observatory XML (`<dpe>` with `numero_dpe`, `administratif`, `logement`…): one file, or a folder of them
 *   (every `*.xml` directly inside, in name order);
 * - the ADEME open-data CSV « DPE Logements existants (depuis juillet 2021) », with its French column names
 *   (`N°DPE`, `Date_établissement_DPE`, `Etiquette_DPE`, `Identifiant__BAN`…) or the snake_case names of its later
 *   editions (`numero_dpe`, `identifiant_ban`…): columns are found by a folded name (accents, case and punctuation
 *   ignored), separator `,` or `;` (or tab) read from the header, read by the importers' CSV reader (quoted fields,
 *   plain or gzipped);
 * - the ADEME audit open-data CSV (one row per scenario step: `n_audit`, `date_etablissement_audit`, `numero_dpe`,
 *   `classe_bilan_dpe`, `categorie_scenario`, `etape_travaux`, `cout_travaux`, `couts_cumules_travaux`…), folded into
 *   one row per audit.
 *
 * Files are streamed (a CSV record at a time; an XML file is one DPE, read whole, a folder one file at a time): memory
 * stays flat whatever the size. Rows are upserted in batches by (dataset, numero_dpe) and written only when a column
 * changed: importing the same data again changes nothing. A row without number, without a class A-G, or without a
 * valid date of establishment is rejected with its reason. The DPE and audits new to the database are novelties of
 * their address, appended to its journal in the transaction that writes them (domain/flux/journal-adresses.ts).
 *
 * Nothing personal is read: the owner (`nom_proprietaire`, `adresse_proprietaire`, consent block), the diagnostician
 * (`diagnostiqueur` names, contacts, certification) and the dwelling's complements (floor, flat reference, residence
 * name) are never extracted; the XML reader only opens the elements listed below, the CSV reader only the columns of
 * COLONNES_DPE.
 */

export const CLASSES = ['A', 'B', 'C', 'D', 'E', 'F', 'G'] as const;
export type Classe = (typeof CLASSES)[number];

const LOT = 1000;
const MAX_XML_OCTETS = 32 << 20;
/** Legal validity of a DPE established since July 2021 (Code de la construction, art. D126-19). */
const VALIDITE_ANS = 10;
/** Under this BAN geocoding score the observatory's attachment is treated as uncertain. */
const SCORE_BAN_SUR = 0.5;
/** Audit and DPE established at most this many days apart form a pre-sale pack. */
const PACK_JOURS = 31;
const NUMERO_DPE = /^[0-9A-Z]{13}$/;
// Numbers (33234_0160_00012, …_bis) and streets (33234_0160) of the BAN.
const CLE_BAN = /^(?:\d{2}|2[ab])\d{3}_[0-9a-z]{4,6}(?:_\d{5}(?:_[0-9a-z]+)?)?$/;

/** One DPE as written to the `dpe` table (dates AAAA-MM-JJ). */
export interface DpeRow {
  numero_dpe: string;
  format: 'xml' | 'csv_ademe';
  cle_ban: string | null;
  ban_score: number | null;
  rattachement_incertain: boolean;
  adresse: string | null;
  voie: string | null;
  code_postal: string | null;
  insee: string | null;
  commune: string | null;
  lat: number | null;
  lon: number | null;
  etabli_le: string;
  fin_validite: string;
  fin_validite_calculee: boolean;
  etiquette: Classe;
  ges: Classe | null;
  conso_kwh_m2_an: number | null;
  ges_kg_m2_an: number | null;
  surface_m2: number | null;
  type_batiment: 'maison' | 'appartement' | 'immeuble' | null;
  surface_immeuble_m2: number | null;
  niveaux: number | null;
  appartements: number | null;
  periode_construction: string | null;
  annee_construction: number | null;
  chauffage_energie: string | null;
  chauffage_installation: string | null;
  isolation_enveloppe: string | null;
  isolation_murs: string | null;
  isolation_menuiseries: string | null;
  ventilation: string | null;
  modele: string | null;
  methode: string | null;
  numero_dpe_remplace: string | null;
  numero_dpe_immeuble: string | null;
  immatriculation_copropriete: string | null;
}

// ---------------------------------------------------------------------------------------------------------------------
// ADEME enumerations (observatory data model, as published with the Open3CL engine, src/enums.js). The CSV carries
// the labels; the XML their ids: both are written with the CSV's wording, so the two sources read the same.
// ---------------------------------------------------------------------------------------------------------------------

const PERIODES: Record<string, string> = {
  1: 'avant 1948',
  2: '1948-1974',
  3: '1975-1977',
  4: '1978-1982',
  5: '1983-1988',
  6: '1989-2000',
  7: '2001-2005',
  8: '2006-2012',
  9: '2013-2021',
  10: 'après 2021',
};

const ENERGIES: Record<string, string> = {
  1: 'Électricité',
  2: 'Gaz naturel',
  3: 'Fioul domestique',
  4: 'Bois – Bûches',
  5: 'Bois – Granulés (pellets) ou briquettes',
  6: 'Bois – Plaquettes forestières',
  7: 'Bois – Plaquettes d’industrie',
  8: 'Réseau de Chauffage urbain',
  9: 'Propane',
  10: 'Butane',
  11: 'Charbon',
  12: "Électricité d'origine renouvelable utilisée dans le bâtiment",
  13: 'GPL',
  14: 'Autre combustible fossile',
  15: 'Réseau de Froid Urbain',
};

// enum_type_installation_id: a multi-building collective installation is collective for the dwelling.
const INSTALLATIONS: Record<string, string> = {
  1: 'individuel',
  2: 'collectif',
  3: 'collectif',
  4: 'mixte (collectif-individuel)',
};

const QUALITES_ISOLATION: Record<string, string> = { 1: 'très bonne', 2: 'bonne', 3: 'moyenne', 4: 'insuffisante' };

const MODELES: Record<string, string> = {
  1: 'DPE 3CL 2021 méthode logement',
  2: 'DPE neuf logement : RT2012',
  3: 'DPE neuf logement : RE2020',
};

const VENTILATIONS: Record<string, string> = {
  1: 'Ventilation par ouverture des fenêtres',
  2: "Ventilation par entrées d'air hautes et basses",
  3: 'VMC SF Auto réglable avant 1982',
  4: 'VMC SF Auto réglable de 1982 à 2000',
  5: 'VMC SF Auto réglable de 2001 à 2012',
  6: 'VMC SF Auto réglable après 2012',
  7: 'VMC SF Hygro A avant 2001',
  8: 'VMC SF Hygro A de 2001 à 2012',
  9: 'VMC SF Hygro A après 2012',
  10: 'VMC SF Gaz avant 2001',
  11: 'VMC SF Gaz de 2001 à 2012',
  12: 'VMC SF Gaz après 2012',
  13: 'VMC SF Hygro B avant 2001',
  14: 'VMC SF Hygro B de 2001 à 2012',
  15: 'VMC SF Hygro B après 2012',
  16: 'VMC Basse pression Auto-réglable',
  17: 'VMC Basse pression Hygro A',
  18: 'VMC Basse pression Hygro B',
  19: 'VMC DF individuelle avec échangeur avant 2013',
  20: 'VMC DF individuelle avec échangeur à partir de 2013',
  21: 'VMC DF collective avec échangeur avant 2013',
  22: 'VMC DF collective avec échangeur à partir de 2013',
  23: 'VMC DF sans échangeur avant 2013',
  24: 'VMC DF sans échangeur après 2012',
  25: 'Ventilation naturelle par conduit',
  26: 'Ventilation hybride avant 2001',
  27: 'Ventilation hybride de 2001 à 2012',
  28: 'Ventilation hybride après 2012',
  29: "Ventilation hybride avec entrées d'air hygro avant 2001",
  30: "Ventilation hybride avec entrées d'air hygro de 2001 à 2012",
  31: "Ventilation hybride avec entrées d'air hygro après 2012",
  32: 'Ventilation mécanique sur conduit existant avant 2013',
  33: 'Ventilation mécanique sur conduit existant à partir de 2013',
  34: "Ventilation naturelle par conduit avec entrées d'air hygro",
  35: 'Puits climatique sans échangeur avant 2013',
  36: 'Puits climatique sans échangeur à partir de 2013',
  37: 'Puits climatique avec échangeur avant 2013',
  38: 'Puits climatique avec échangeur à partir de 2013',
};

/** enum_methode_application_dpe_log_id: the kind of dwelling the DPE describes, and its wording. */
function methodeApplication(id: number): { type: DpeRow['type_batiment']; libelle: string } | null {
  if (!Number.isInteger(id) || id < 1 || id > 40) return null;
  const chauffage = (c: string) =>
    c === 'm' ? 'mixte (collectif-individuel)' : c === 'c' ? 'collectif' : 'individuel';
  // [kind, heating, hot water] of ids 2-13 and 26-40, from the ADEME table.
  const cas: Record<number, [string, string, string]> = {
    2: ['appartement', 'i', 'i'],
    3: ['appartement', 'c', 'i'],
    4: ['appartement', 'i', 'c'],
    5: ['appartement', 'c', 'c'],
    6: ['immeuble', 'i', 'i'],
    7: ['immeuble', 'c', 'i'],
    8: ['immeuble', 'i', 'c'],
    9: ['immeuble', 'c', 'c'],
    10: ['appartement (données immeuble)', 'i', 'i'],
    11: ['appartement (données immeuble)', 'c', 'i'],
    12: ['appartement (données immeuble)', 'i', 'c'],
    13: ['appartement (données immeuble)', 'c', 'c'],
    26: ['immeuble', 'm', 'm'],
    27: ['immeuble', 'm', 'i'],
    28: ['immeuble', 'm', 'c'],
    29: ['immeuble', 'i', 'm'],
    30: ['immeuble', 'c', 'm'],
    31: ['appartement', 'm', 'i'],
    32: ['appartement', 'm', 'c'],
    33: ['appartement (données immeuble)', 'm', 'i'],
    34: ['appartement (données immeuble)', 'm', 'c'],
    35: ['appartement', 'm', 'm'],
    36: ['appartement', 'i', 'm'],
    37: ['appartement', 'c', 'm'],
    38: ['appartement (données immeuble)', 'm', 'm'],
    39: ['appartement (données immeuble)', 'i', 'm'],
    40: ['appartement (données immeuble)', 'c', 'm'],
  };
  if (id === 1) return { type: 'maison', libelle: 'DPE maison individuelle' };
  const etude: Record<number, [NonNullable<DpeRow['type_batiment']>, string]> = {
    14: ['maison', 'RT2012'],
    15: ['appartement', 'RT2012'],
    16: ['appartement', 'RT2012'],
    17: ['immeuble', 'RT2012'],
    18: ['maison', 'RE2020'],
    19: ['appartement', 'RE2020'],
    20: ['appartement', 'RE2020'],
    21: ['immeuble', 'RE2020'],
    22: ['appartement', 'RT2012'],
    23: ['appartement', 'RT2012'],
    24: ['appartement', 'RE2020'],
    25: ['appartement', 'RE2020'],
  };
  if (etude[id]) {
    const [type, reglement] = etude[id];
    return { type, libelle: `DPE issu d'une étude thermique réglementaire ${reglement} : ${type}` };
  }
  const [genre, ch, ecs] = cas[id];
  return {
    type: genre === 'immeuble' ? 'immeuble' : 'appartement',
    libelle: `DPE ${genre} chauffage ${chauffage(ch)} ECS ${chauffage(ecs)}`,
  };
}

// ---------------------------------------------------------------------------------------------------------------------
// Values.
// ---------------------------------------------------------------------------------------------------------------------

function clean(value: string | null | undefined): string | null {
  const v = value?.replace(/\s+/g, ' ').trim();
  return v ? v : null;
}

function nombre(value: string | null | undefined): number | null {
  const v = clean(value);
  if (v === null) return null;
  const n = Number(v.includes('.') ? v : v.replace(',', '.'));
  return Number.isFinite(n) ? n : null;
}

function positif(value: string | null | undefined): number | null {
  const n = nombre(value);
  return n !== null && n > 0 ? n : null;
}

function entier(value: string | null | undefined, min: number, max: number): number | null {
  const n = nombre(value);
  return n !== null && Number.isInteger(n) && n >= min && n <= max ? n : null;
}

/** AAAA-MM-JJ of `2023-11-24`, `2023-11-24T…` or `24/11/2023`, or null when it is not a real date. */
export function dateIso(value: string | null | undefined): string | null {
  const v = clean(value);
  if (!v) return null;
  let m = /^(\d{4})-(\d{2})-(\d{2})(?:$|[T ])/.exec(v);
  let iso: string | null = m ? `${m[1]}-${m[2]}-${m[3]}` : null;
  if (!iso) {
    m = /^(\d{2})\/(\d{2})\/(\d{4})$/.exec(v);
    if (m) iso = `${m[3]}-${m[2]}-${m[1]}`;
  }
  if (!iso) return null;
  const d = new Date(`${iso}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().startsWith(iso) ? iso : null;
}

function plusAns(iso: string, ans: number): string {
  const d = new Date(`${iso}T00:00:00Z`);
  d.setUTCFullYear(d.getUTCFullYear() + ans);
  return d.toISOString().slice(0, 10);
}

function classe(value: string | null | undefined): Classe | null {
  const v = clean(value)?.toUpperCase();
  return v && (CLASSES as readonly string[]).includes(v) ? (v as Classe) : null;
}

/** The number of a BAN number key (`75111_3514_00203` → 203), null for a street key. */
export function numeroDeCle(cle: string | null): number | null {
  const m = cle ? /^[^_]+_[^_]+_(\d{5})(?:_|$)/.exec(cle) : null;
  return m ? Number(m[1]) : null;
}

function numeroTape(adresse: string | null): number | null {
  const m = adresse ? /^\s*(\d{1,5})(?!\d)/.exec(adresse) : null;
  return m ? Number(m[1]) : null;
}

/**
 * Whether the observatory's BAN key may not be the dwelling's: a geocoding score under 0.5, or a key whose number
 * differs from the number the diagnostician typed (2325E0263102J: typed « 24 Rue des deux Princesses », key …_00020).
 */
function rattachementIncertain(score: number | null, cle: string | null, adresseTapee: string | null): boolean {
  if (score !== null && score < SCORE_BAN_SUR) return true;
  const n = numeroDeCle(cle);
  const t = numeroTape(adresseTapee);
  return n !== null && t !== null && n !== t;
}

function cleBan(value: string | null): string | null {
  const v = clean(value)?.toLowerCase() ?? null;
  return v && CLE_BAN.test(v) ? v : null;
}

const premiereMajuscule = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** Checks common to both formats; the row, or why it is rejected. */
function valider(
  brut: Omit<DpeRow, 'etabli_le' | 'fin_validite' | 'fin_validite_calculee' | 'etiquette' | 'numero_dpe'> & {
    numero: string | null;
    etabli: string | null;
    fin: string | null;
    etiquette: string | null;
  },
  aujourdhui: string,
): DpeRow | string {
  const { numero, etabli, fin, etiquette: etiquetteBrute, ...reste } = brut;
  if (!numero) return 'numéro de DPE absent';
  const numeroDpe = numero.toUpperCase();
  if (!NUMERO_DPE.test(numeroDpe)) return `numéro de DPE invalide (${numero.slice(0, 30)}) : 13 caractères attendus`;
  if (!clean(etiquetteBrute)) return `${numeroDpe} : étiquette DPE absente`;
  const etiquette = classe(etiquetteBrute);
  if (!etiquette) return `${numeroDpe} : étiquette DPE invalide (${etiquetteBrute!.slice(0, 10)}) : A à G attendu`;
  if (!clean(etabli)) return `${numeroDpe} : date d’établissement absente`;
  const etabliLe = dateIso(etabli);
  if (!etabliLe) return `${numeroDpe} : date d’établissement invalide (${etabli!.slice(0, 30)})`;
  // The DPE exists since November 2006; a later date than today is a typing error of the source.
  if (etabliLe < '2006-11-01' || etabliLe > aujourdhui) {
    return `${numeroDpe} : date d’établissement hors de la période possible (${etabliLe})`;
  }
  const finDonnee = dateIso(fin);
  return {
    ...reste,
    numero_dpe: numeroDpe,
    etabli_le: etabliLe,
    fin_validite: finDonnee && finDonnee > etabliLe ? finDonnee : plusAns(etabliLe, VALIDITE_ANS),
    fin_validite_calculee: !(finDonnee && finDonnee > etabliLe),
    etiquette,
  };
}

/**
 * Position of a DPE from a `lat,lon` point or else its BAN coordinates, projected in the metric system of the
 * commune's area; BAN coordinates that fall outside that area are not read.
 */
function position(
  insee: string | null,
  x: number | null,
  y: number | null,
  geopoint: string | null,
): { lat: number | null; lon: number | null } {
  const point = geopoint ? /^\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*$/.exec(geopoint) : null;
  if (point) {
    const lat = Number(point[1]);
    const lon = Number(point[2]);
    if (Math.abs(lat) <= 90 && Math.abs(lon) <= 180 && !(lat === 0 && lon === 0)) return { lat, lon };
  }
  if (insee && x !== null && y !== null) {
    const p = toWgs84(projectionOfDepartement(departementOf(insee)), x, y);
    if (p) return { lat: Math.round(p.lat * 1e6) / 1e6, lon: Math.round(p.lon * 1e6) / 1e6 };
  }
  return { lat: null, lon: null };
}

// ---------------------------------------------------------------------------------------------------------------------
// XML: a minimal tag reader. The observatory XML has no namespaces, no repeated nesting of the elements read here,
// and its text is entity-escaped: finding an element's first occurrence inside its parent is enough, and never reads
// an element it was not asked for.
// ---------------------------------------------------------------------------------------------------------------------

const ouvertures = new Map<string, RegExp>();
function ouverture(tag: string): RegExp {
  let re = ouvertures.get(tag);
  if (!re) {
    re = new RegExp(`<${tag}(?:\\s[^>]*)?(/?)>`, 'g');
    ouvertures.set(tag, re);
  }
  return re;
}

/** The inner XML of every `tag` element of `xml` (not nested in one another), in order. */
export function elements(xml: string, tag: string): string[] {
  const re = ouverture(tag);
  const out: string[] = [];
  re.lastIndex = 0;
  for (let m = re.exec(xml); m; m = re.exec(xml)) {
    if (m[1] === '/') {
      out.push('');
      continue;
    }
    const fin = xml.indexOf(`</${tag}>`, re.lastIndex);
    if (fin < 0) break;
    out.push(xml.slice(re.lastIndex, fin));
    re.lastIndex = fin + tag.length + 3;
  }
  return out;
}

function element(xml: string | null, tag: string): string | null {
  if (xml === null) return null;
  const re = ouverture(tag);
  re.lastIndex = 0;
  const m = re.exec(xml);
  if (!m) return null;
  if (m[1] === '/') return '';
  const fin = xml.indexOf(`</${tag}>`, re.lastIndex);
  return fin < 0 ? null : xml.slice(re.lastIndex, fin);
}

const ENTITES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

function decoder(inner: string): string {
  const cdata = /^\s*<!\[CDATA\[([\s\S]*)\]\]>\s*$/.exec(inner);
  if (cdata) return cdata[1];
  return inner.replace(/&(#x[0-9a-f]+|#\d+|amp|lt|gt|quot|apos);/gi, (_, e: string) => {
    if (e[0] === '#') {
      const code = e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
      return Number.isFinite(code) && code <= 0x10ffff ? String.fromCodePoint(code) : '';
    }
    return ENTITES[e.toLowerCase()];
  });
}

/** Decoded text at a path of elements (`'administratif', 'date_etablissement_dpe'`), or null. */
export function texte(xml: string | null, ...chemin: string[]): string | null {
  let courant = xml;
  for (const tag of chemin) courant = element(courant, tag);
  return courant === null ? null : clean(decoder(courant));
}

/** The main heating: the generator with the largest heating consumption, and the type of its installation. */
function chauffagePrincipal(logement: string): { energie: string | null; installation: string | null } {
  let best: { conso: number; energie: string | null; installation: string | null } | null = null;
  for (const installation of elements(
    element(logement, 'installation_chauffage_collection') ?? '',
    'installation_chauffage',
  )) {
    const typeInstallation =
      INSTALLATIONS[texte(installation, 'donnee_entree', 'enum_type_installation_id') ?? ''] ?? null;
    for (const generateur of elements(
      element(installation, 'generateur_chauffage_collection') ?? '',
      'generateur_chauffage',
    )) {
      const energie = ENERGIES[texte(generateur, 'donnee_entree', 'enum_type_energie_id') ?? ''] ?? null;
      const conso = nombre(texte(generateur, 'donnee_intermediaire', 'conso_ch')) ?? -1;
      if (!best || conso > best.conso) best = { conso, energie, installation: typeInstallation };
    }
    if (!best) best = { conso: -1, energie: null, installation: typeInstallation };
  }
  return { energie: best?.energie ?? null, installation: best?.installation ?? null };
}

/** The DPE of one observatory XML document, or why it is refused. */
export function lireXml(xml: string, aujourdhui = new Date().toISOString().slice(0, 10)): DpeRow | string {
  const racine = element(xml, 'dpe');
  if (racine === null) return 'document XML sans élément <dpe> : ce n’est pas un DPE de l’observatoire ADEME';
  const logement = element(racine, 'logement') ?? element(racine, 'logement_neuf');
  if (logement === null) {
    return element(racine, 'tertiaire') !== null
      ? `${texte(racine, 'numero_dpe') ?? 'DPE'} : DPE tertiaire, hors du périmètre (logements)`
      : `${texte(racine, 'numero_dpe') ?? 'DPE'} : ni <logement> ni <logement_neuf>`;
  }
  const administratif = element(racine, 'administratif');
  // The dwelling's address only: adresse_proprietaire and the owner's consent block are never opened.
  const bien = element(element(element(administratif, 'geolocalisation'), 'adresses'), 'adresse_bien');
  const generale = element(logement, 'caracteristique_generale');
  const sortie = element(logement, 'sortie');
  const isolation = element(sortie, 'qualite_isolation');
  const cle = cleBan(texte(bien, 'ban_id'));
  const insee = clean(texte(bien, 'ban_citycode'))?.toUpperCase() ?? cle?.slice(0, 5).toUpperCase() ?? null;
  const score = nombre(texte(bien, 'ban_score'));
  const methode = methodeApplication(nombre(texte(generale, 'enum_methode_application_dpe_log_id')) ?? NaN);
  const chauffage = chauffagePrincipal(logement);
  const ventilation = texte(
    logement,
    'ventilation_collection',
    'ventilation',
    'donnee_entree',
    'enum_type_ventilation_id',
  );
  return valider(
    {
      numero: texte(racine, 'numero_dpe'),
      etabli: texte(administratif, 'date_etablissement_dpe'),
      fin: texte(administratif, 'date_fin_validite_dpe'),
      etiquette: texte(sortie, 'ep_conso', 'classe_bilan_dpe'),
      format: 'xml',
      cle_ban: cle,
      ban_score: score,
      rattachement_incertain: cle !== null && rattachementIncertain(score, cle, texte(bien, 'adresse_brut')),
      adresse: texte(bien, 'ban_label'),
      voie: texte(bien, 'ban_street'),
      code_postal: texte(bien, 'ban_postcode'),
      insee,
      commune: texte(bien, 'ban_city'),
      ...position(insee, nombre(texte(bien, 'ban_x')), nombre(texte(bien, 'ban_y')), null),
      ges: classe(texte(sortie, 'emission_ges', 'classe_emission_ges')),
      conso_kwh_m2_an: nombre(texte(sortie, 'ep_conso', 'ep_conso_5_usages_m2')),
      ges_kg_m2_an: nombre(texte(sortie, 'emission_ges', 'emission_ges_5_usages_m2')),
      surface_m2: positif(texte(generale, 'surface_habitable_logement')),
      type_batiment: methode?.type ?? null,
      surface_immeuble_m2: positif(texte(generale, 'surface_habitable_immeuble')),
      niveaux: entier(texte(generale, 'nombre_niveau_immeuble'), 1, 200),
      appartements: entier(texte(generale, 'nombre_appartement'), 1, 100_000),
      periode_construction: PERIODES[texte(generale, 'enum_periode_construction_id') ?? ''] ?? null,
      annee_construction: entier(texte(generale, 'annee_construction'), 1000, 2100),
      chauffage_energie: chauffage.energie,
      chauffage_installation: chauffage.installation,
      isolation_enveloppe: QUALITES_ISOLATION[texte(isolation, 'qualite_isol_enveloppe') ?? ''] ?? null,
      isolation_murs: QUALITES_ISOLATION[texte(isolation, 'qualite_isol_mur') ?? ''] ?? null,
      isolation_menuiseries: QUALITES_ISOLATION[texte(isolation, 'qualite_isol_menuiserie') ?? ''] ?? null,
      ventilation: VENTILATIONS[ventilation ?? ''] ?? null,
      modele: MODELES[texte(administratif, 'enum_modele_dpe_id') ?? ''] ?? null,
      methode: methode ? premiereMajuscule(methode.libelle) : null,
      numero_dpe_remplace: texte(administratif, 'dpe_a_remplacer')?.toUpperCase() ?? null,
      numero_dpe_immeuble: texte(administratif, 'dpe_immeuble_associe')?.toUpperCase() ?? null,
      immatriculation_copropriete: texte(administratif, 'geolocalisation', 'immatriculation_copropriete'),
    },
    aujourdhui,
  );
}

// ---------------------------------------------------------------------------------------------------------------------
// CSV.
// ---------------------------------------------------------------------------------------------------------------------

/** A column name folded: `Conso_5_usages_par_m²_é_primaire` → `conso_5_usages_par_m2_e_primaire`. */
export function nomColonne(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
}

/** The columns read from the ADEME DPE CSV, by folded name: the 2021 French names first, the later snake_case ones. */
const COLONNES_DPE = {
  numero: ['n_dpe', 'numero_dpe'],
  etabli: ['date_etablissement_dpe'],
  fin: ['date_fin_validite_dpe'],
  etiquette: ['etiquette_dpe'],
  ges: ['etiquette_ges'],
  conso: ['conso_5_usages_par_m2_e_primaire', 'conso_5_usages_par_m2_ep'],
  emissions: ['emission_ges_5_usages_par_m2'],
  surface: ['surface_habitable_logement'],
  surface_immeuble: ['surface_habitable_immeuble'],
  cle_ban: ['identifiant_ban'],
  score: ['score_ban'],
  insee: ['code_insee_ban'],
  code_postal: ['code_postal_ban'],
  adresse: ['adresse_ban'],
  commune: ['nom_commune_ban'],
  voie: ['nom_rue_ban'],
  adresse_brute: ['adresse_brute', 'adresse_brut'],
  x: ['coordonnee_cartographique_x_ban'],
  y: ['coordonnee_cartographique_y_ban'],
  geopoint: ['geopoint'],
  periode: ['periode_construction'],
  annee: ['annee_construction'],
  type: ['type_batiment'],
  niveaux: ['nombre_niveau_immeuble'],
  appartements: ['nombre_appartement'],
  energie: ['type_energie_principale_chauffage'],
  installation: ['type_installation_chauffage'],
  iso_enveloppe: ['qualite_isolation_enveloppe'],
  iso_murs: ['qualite_isolation_murs'],
  iso_menuiseries: ['qualite_isolation_menuiseries'],
  ventilation: ['type_ventilation'],
  modele: ['modele_dpe'],
  methode: ['methode_application_dpe', 'methode_du_dpe'],
  remplace: ['n_dpe_remplace', 'numero_dpe_remplace'],
  immeuble: ['n_dpe_immeuble_associe', 'numero_dpe_immeuble_associe'],
  copro: ['n_immatriculation_copropriete', 'numero_immatriculation_copropriete'],
} as const;

const COLONNES_AUDIT = {
  numero: ['n_audit', 'numero_audit'],
  remplace: ['n_audit_remplace', 'numero_audit_remplace'],
  etabli: ['date_etablissement_audit'],
  fin: ['date_fin_validite_audit'],
  numero_dpe: ['numero_dpe', 'n_dpe'],
  cle_ban: ['identifiant_ban'],
  classe: ['classe_bilan_dpe', 'etiquette_dpe'],
  scenario: ['categorie_scenario'],
  etape: ['etape_travaux'],
  cout: ['cout_travaux'],
  cumul: ['couts_cumules_travaux'],
} as const;

type Colonnes<K extends string> = Partial<Record<K, number>>;

function colonnes<K extends string>(noms: string[], table: Record<K, readonly string[]>): Colonnes<K> {
  const index = colonnesDe(noms);
  const out: Colonnes<K> = {};
  for (const [cle, alias] of Object.entries(table) as Array<[K, readonly string[]]>) {
    const i = alias.map((a) => index.get(a)).find((x) => x !== undefined);
    if (i !== undefined) out[cle] = i;
  }
  return out;
}

function champ<K extends string>(fields: string[], cols: Colonnes<K>, k: K): string | null {
  const i = cols[k];
  return i === undefined ? null : clean(fields[i]);
}

const TYPES_BATIMENT = new Set(['maison', 'appartement', 'immeuble']);

function ligneDpe(fields: string[], cols: Colonnes<keyof typeof COLONNES_DPE>, aujourdhui: string): DpeRow | string {
  const get = (k: keyof typeof COLONNES_DPE) => champ(fields, cols, k);
  const cle = cleBan(get('cle_ban'));
  const insee = get('insee')?.toUpperCase() ?? cle?.slice(0, 5).toUpperCase() ?? null;
  const score = nombre(get('score'));
  const type = get('type')?.toLowerCase() ?? null;
  const lower = (k: keyof typeof COLONNES_DPE) => get(k)?.toLowerCase() ?? null;
  return valider(
    {
      numero: get('numero'),
      etabli: get('etabli'),
      fin: get('fin'),
      etiquette: get('etiquette'),
      format: 'csv_ademe',
      cle_ban: cle,
      ban_score: score,
      rattachement_incertain: cle !== null && rattachementIncertain(score, cle, get('adresse_brute')),
      adresse: get('adresse'),
      voie: get('voie'),
      code_postal: get('code_postal'),
      insee,
      commune: get('commune'),
      ...position(insee, nombre(get('x')), nombre(get('y')), get('geopoint')),
      ges: classe(get('ges')),
      conso_kwh_m2_an: nombre(get('conso')),
      ges_kg_m2_an: nombre(get('emissions')),
      surface_m2: positif(get('surface')),
      type_batiment: type && TYPES_BATIMENT.has(type) ? (type as DpeRow['type_batiment']) : null,
      surface_immeuble_m2: positif(get('surface_immeuble')),
      niveaux: entier(get('niveaux'), 1, 200),
      appartements: entier(get('appartements'), 1, 100_000),
      periode_construction: lower('periode'),
      annee_construction: entier(get('annee'), 1000, 2100),
      chauffage_energie: get('energie'),
      chauffage_installation: lower('installation'),
      isolation_enveloppe: lower('iso_enveloppe'),
      isolation_murs: lower('iso_murs'),
      isolation_menuiseries: lower('iso_menuiseries'),
      ventilation: get('ventilation'),
      modele: get('modele'),
      methode: get('methode'),
      numero_dpe_remplace: get('remplace')?.toUpperCase() ?? null,
      numero_dpe_immeuble: get('immeuble')?.toUpperCase() ?? null,
      immatriculation_copropriete: get('copro'),
    },
    aujourdhui,
  );
}

interface EtapeAudit {
  numero_audit: string;
  numero_audit_remplace: string | null;
  numero_dpe: string | null;
  cle_ban: string | null;
  etabli_le: string;
  fin_validite: string | null;
  classe: Classe | null;
  genre: 'initial' | 'final' | 'intermediaire';
  cout: number | null;
}

function ligneAudit(fields: string[], cols: Colonnes<keyof typeof COLONNES_AUDIT>): EtapeAudit | string {
  const get = (k: keyof typeof COLONNES_AUDIT) => champ(fields, cols, k);
  const numero = get('numero');
  if (!numero) return 'numéro d’audit absent';
  if (numero.length > 40) return `numéro d’audit invalide (${numero.slice(0, 40)}…)`;
  const etabli = get('etabli');
  const etabliLe = dateIso(etabli);
  if (!etabliLe)
    return `${numero} : date d’établissement de l’audit ${etabli ? `invalide (${etabli.slice(0, 30)})` : 'absente'}`;
  const scenario = nomColonne(get('scenario') ?? '');
  const etape = nomColonne(get('etape') ?? '');
  const genre =
    scenario.includes('initial') || etape.includes('initial')
      ? 'initial'
      : etape.includes('final')
        ? 'final'
        : 'intermediaire';
  const cumul = nombre(get('cumul'));
  const cout = nombre(get('cout'));
  return {
    numero_audit: numero.toUpperCase(),
    numero_audit_remplace: get('remplace')?.toUpperCase() ?? null,
    numero_dpe: get('numero_dpe')?.toUpperCase() ?? null,
    cle_ban: cleBan(get('cle_ban')),
    etabli_le: etabliLe,
    fin_validite: dateIso(get('fin')),
    classe: classe(get('classe')),
    genre,
    cout: cumul !== null && cumul >= 0 ? cumul : cout !== null && cout >= 0 ? cout : null,
  };
}

// ---------------------------------------------------------------------------------------------------------------------
// Database.
// ---------------------------------------------------------------------------------------------------------------------

const TYPES_DPE: Record<keyof DpeRow, string> = {
  numero_dpe: 'text',
  format: 'text',
  cle_ban: 'text',
  ban_score: 'float8',
  rattachement_incertain: 'boolean',
  adresse: 'text',
  voie: 'text',
  code_postal: 'text',
  insee: 'text',
  commune: 'text',
  lat: 'float8',
  lon: 'float8',
  etabli_le: 'date',
  fin_validite: 'date',
  fin_validite_calculee: 'boolean',
  etiquette: 'text',
  ges: 'text',
  conso_kwh_m2_an: 'float8',
  ges_kg_m2_an: 'float8',
  surface_m2: 'float8',
  type_batiment: 'text',
  surface_immeuble_m2: 'float8',
  niveaux: 'smallint',
  appartements: 'integer',
  periode_construction: 'text',
  annee_construction: 'smallint',
  chauffage_energie: 'text',
  chauffage_installation: 'text',
  isolation_enveloppe: 'text',
  isolation_murs: 'text',
  isolation_menuiseries: 'text',
  ventilation: 'text',
  modele: 'text',
  methode: 'text',
  numero_dpe_remplace: 'text',
  numero_dpe_immeuble: 'text',
  immatriculation_copropriete: 'text',
};
const TABLE_DPE: Table = {
  nom: 'dpe',
  colonnes: [['dataset', 'text'], ...Object.entries(TYPES_DPE)],
  cle: ['dataset', 'numero_dpe'],
  horodatage: 'importe_le',
};

interface Compte {
  ajoutes: number;
  modifies: number;
  inchanges: number;
}

/**
 * The DPE kept, upserted by batches; in a batch, the last row of a number wins (one upsert cannot touch a row twice).
 * A batch and its novelties (the DPE new to the database, compared by number before the write) are one transaction.
 */
function lotsDpe(db: Db, dataset: Dataset, report: DpeImportReport, options: DpeImportOptions): Lots<DpeRow> {
  return parLots<DpeRow>(
    LOT,
    async (lot) => {
      const uniques = new Map(lot.map((row) => [row.numero_dpe, { dataset, ...row }]));
      const e = await transaction(db, async (client) => {
        const nouveaux = await nouvellesReferences(client, 'dpe', dataset, [...uniques.keys()]);
        const ecriture = await upsert(client, TABLE_DPE, [...uniques.values()]);
        report.nouveautes += await journaliser(client, 'dpe', dataset, nouveaux);
        return ecriture;
      });
      report.dpe.ajoutes += e.ajoutees;
      report.dpe.modifies += e.modifiees;
      report.dpe.inchanges += uniques.size - e.ajoutees - e.modifiees;
    },
    () => options.onProgress?.({ lus: report.lus, gardes: report.gardes }),
  );
}

async function garder(report: DpeImportReport, lots: Lots<DpeRow>, row: DpeRow): Promise<void> {
  report.gardes++;
  if (row.cle_ban === null) report.sansCleBan++;
  if (row.rattachement_incertain) report.rattachementIncertain++;
  if (row.fin_validite_calculee) report.finValiditeCalculee++;
  await lots.ajouter(row);
}

/**
 * Links audits to their DPE once both are known: the BAN key of the audited DPE when the audit source gives none,
 * and the pre-sale pack flag (audit and DPE at most 31 days apart). Only rows whose value changes are written. An
 * audit that so gets its first BAN key is a novelty of that address, journaled in the same transaction.
 */
async function lierAudits(db: Db, dataset: Dataset, report: DpeImportReport): Promise<number> {
  return transaction(db, async (client) => {
    // The statement's parts read one snapshot: `adressees` are the audits without a key before the update.
    const { rows } = await client.query<{ liees: number; adressees: string[] }>(
      `WITH adressees AS (
         SELECT a.numero_audit FROM dpe_audits a JOIN dpe d ON d.dataset = a.dataset AND d.numero_dpe = a.numero_dpe
          WHERE a.dataset = $1 AND a.cle_ban IS NULL AND d.cle_ban IS NOT NULL),
       liees AS (
         UPDATE dpe_audits a
            SET cle_ban = coalesce(a.cle_ban, d.cle_ban),
                pack_pre_vente = abs(a.etabli_le - d.etabli_le) <= ${PACK_JOURS},
                importe_le = now()
           FROM dpe d
          WHERE a.dataset = $1 AND d.dataset = a.dataset AND d.numero_dpe = a.numero_dpe
            AND ((a.cle_ban IS NULL AND d.cle_ban IS NOT NULL)
                 OR a.pack_pre_vente IS DISTINCT FROM (abs(a.etabli_le - d.etabli_le) <= ${PACK_JOURS}))
         RETURNING 1)
       SELECT (SELECT count(*)::int FROM liees) AS liees,
              coalesce((SELECT array_agg(numero_audit) FROM adressees), '{}') AS adressees`,
      [dataset],
    );
    report.nouveautes += await journaliser(client, 'audit', dataset, rows[0].adressees);
    return rows[0].liees;
  });
}

// ---------------------------------------------------------------------------------------------------------------------
// Imports.
// ---------------------------------------------------------------------------------------------------------------------

export interface DpeImportOptions extends DatasetImportOptions {
  /** The day after which a date of establishment is refused (today by default). */
  aujourdhui?: string;
}

export interface DpeImportReport extends ImportReport {
  format: 'xml' | 'csv_ademe' | 'csv_audit';
  dpe: Compte;
  audits: Compte;
  sansCleBan: number;
  rattachementIncertain: number;
  finValiditeCalculee: number;
  /** DPE and audits new to the database appended to the journal of address novelties. */
  nouveautes: number;
}

function rapportDpe(source: string, format: DpeImportReport['format']): DpeImportReport {
  return {
    source,
    format,
    lus: 0,
    gardes: 0,
    rejetes: [],
    details: [],
    dpe: { ajoutes: 0, modifies: 0, inchanges: 0 },
    audits: { ajoutes: 0, modifies: 0, inchanges: 0 },
    sansCleBan: 0,
    rattachementIncertain: 0,
    finValiditeCalculee: 0,
    nouveautes: 0,
  };
}

/** The text of an XML file in the encoding its prolog declares (UTF-8 unless it says Latin-1 or Windows-1252). */
function decoderXml(octets: Buffer): string {
  const prologue = octets.subarray(0, 200).toString('latin1');
  const declare = /<\?xml[^>]*encoding=["']([\w-]+)["']/i.exec(prologue)?.[1]?.toLowerCase();
  const latin = declare === 'iso-8859-1' || declare === 'latin1' || declare === 'windows-1252' || declare === 'cp1252';
  return new TextDecoder(latin ? 'windows-1252' : 'utf-8').decode(octets);
}

async function importerXml(db: Db, fichiers: string[], report: DpeImportReport, options: DpeImportOptions) {
  const aujourdhui = options.aujourdhui ?? new Date().toISOString().slice(0, 10);
  const rejeter = rejeteur(report);
  const lots = lotsDpe(db, options.dataset ?? 'live', report, options);
  for (const [i, fichier] of fichiers.entries()) {
    report.lus++;
    const nom = path.basename(fichier);
    const taille = (await stat(fichier)).size;
    if (taille > MAX_XML_OCTETS) {
      rejeter(i + 1, `${nom} : ${taille} octets, un DPE XML en fait quelques dizaines de milliers`);
      continue;
    }
    const row = lireXml(decoderXml(await readFile(fichier)), aujourdhui);
    if (typeof row === 'string') rejeter(i + 1, `${nom} : ${row}`);
    else await garder(report, lots, row);
  }
  await lots.vider();
}

async function importerCsvDpe(
  db: Db,
  records: AsyncIterable<CsvRecord>,
  cols: Colonnes<keyof typeof COLONNES_DPE>,
  largeur: number,
  report: DpeImportReport,
  options: DpeImportOptions,
) {
  const aujourdhui = options.aujourdhui ?? new Date().toISOString().slice(0, 10);
  const rejeter = rejeteur(report);
  const lots = lotsDpe(db, options.dataset ?? 'live', report, options);
  for await (const { ligne, champs } of lignesDeDonnees(records, largeur, report, rejeter)) {
    const row = ligneDpe(champs, cols, aujourdhui);
    if (typeof row === 'string') rejeter(ligne, row);
    else await garder(report, lots, row);
  }
  await lots.vider();
}

const ETAPES = `numero_audit text, numero_audit_remplace text, numero_dpe text, cle_ban text, etabli_le date,
  fin_validite date, classe text, genre text, cout numeric`;

async function importerCsvAudit(
  db: Db,
  records: AsyncIterable<CsvRecord>,
  cols: Colonnes<keyof typeof COLONNES_AUDIT>,
  largeur: number,
  report: DpeImportReport,
  options: DpeImportOptions,
) {
  const dataset = options.dataset ?? 'live';
  const rejeter = rejeteur(report);
  // Steps of one audit may be anywhere in the file: they are staged, then folded by SQL in one transaction.
  const client: PoolClient = await db.connect();
  try {
    await client.query(`CREATE TEMP TABLE IF NOT EXISTS audit_etapes (${ETAPES})`);
    await client.query('TRUNCATE pg_temp.audit_etapes');
    const lots = parLots<EtapeAudit>(
      LOT,
      async (lot) => {
        await client.query(
          `INSERT INTO pg_temp.audit_etapes SELECT * FROM jsonb_to_recordset($1::jsonb) AS r(${ETAPES})`,
          [JSON.stringify(lot)],
        );
      },
      () => options.onProgress?.({ lus: report.lus, gardes: report.gardes }),
    );
    for await (const { ligne, champs } of lignesDeDonnees(records, largeur, report, rejeter)) {
      const etape = ligneAudit(champs, cols);
      if (typeof etape === 'string') {
        rejeter(ligne, etape);
        continue;
      }
      report.gardes++;
      await lots.ajouter(etape);
    }
    await lots.vider();
    const comparees = [
      'numero_dpe',
      'numero_audit_remplace',
      'etabli_le',
      'fin_validite',
      'cout_travaux_max',
      'classe_initiale',
      'classe_visee',
      'etapes',
    ];
    await client.query('BEGIN');
    // cle_ban: the source's, else the one already linked from the audited DPE (kept, so a re-import is a no-op).
    const { rows } = await client.query<{ ajoutes: number; modifies: number; total: number; nouveaux: string[] }>(
      `WITH audits AS (
         SELECT numero_audit, max(cle_ban) AS cle_ban, max(numero_dpe) AS numero_dpe,
                max(numero_audit_remplace) AS numero_audit_remplace, min(etabli_le) AS etabli_le,
                max(fin_validite) AS fin_validite, round(max(cout), 2) AS cout_travaux_max,
                min(classe) FILTER (WHERE genre = 'initial') AS classe_initiale,
                coalesce(min(classe) FILTER (WHERE genre = 'final'), min(classe) FILTER (WHERE genre = 'intermediaire'))
                  AS classe_visee,
                count(*)::int AS etapes
           FROM pg_temp.audit_etapes GROUP BY numero_audit),
       up AS (
         INSERT INTO dpe_audits AS a (dataset, numero_audit, cle_ban, ${comparees.join(', ')})
         SELECT $1, numero_audit, cle_ban, ${comparees.join(', ')} FROM audits
         ON CONFLICT (dataset, numero_audit) DO UPDATE
            SET cle_ban = coalesce(excluded.cle_ban, a.cle_ban), ${comparees.map((c) => `${c} = excluded.${c}`).join(', ')},
                importe_le = now()
          WHERE (coalesce(excluded.cle_ban, a.cle_ban), ${comparees.map((c) => `excluded.${c}`).join(', ')})
                IS DISTINCT FROM (a.cle_ban, ${comparees.map((c) => `a.${c}`).join(', ')})
         RETURNING numero_audit, (xmax = 0) AS ajoute)
       SELECT count(*) FILTER (WHERE ajoute)::int AS ajoutes, count(*) FILTER (WHERE NOT ajoute)::int AS modifies,
              (SELECT count(*)::int FROM audits) AS total,
              coalesce(array_agg(numero_audit) FILTER (WHERE ajoute), '{}') AS nouveaux
         FROM up`,
      [dataset],
    );
    // The audits the upsert inserted are the novelties (an audit without a BAN key of its own or of its DPE yet
    // becomes one when lierAudits gives it one).
    report.nouveautes += await journaliser(client, 'audit', dataset, rows[0].nouveaux);
    await client.query('COMMIT');
    report.audits.ajoutes = rows[0].ajoutes;
    report.audits.modifies = rows[0].modifies;
    report.audits.inchanges = rows[0].total - rows[0].ajoutes - rows[0].modifies;
    await client.query('DROP TABLE pg_temp.audit_etapes');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

async function importerCsv(db: Db, fichier: string, options: DpeImportOptions): Promise<DpeImportReport> {
  let sep = ',';
  await using records = csvRecords(fichier, (premiere) => (sep = separateurDe(premiere, [',', ';', '\t'])));
  const premier = await records.next();
  if (premier.done || premier.value.guillemetOuvert) throw new ImportError(`Fichier vide ou illisible : ${fichier}`);
  const entete = premier.value.champs;
  const noms = entete.map(nomColonne);
  // An audit export also names its DPE (numero_dpe): its own number decides first.
  const audit = colonnes(noms, COLONNES_AUDIT);
  if (audit.numero !== undefined && audit.etabli !== undefined) {
    const report = rapportDpe(fichier, 'csv_audit');
    await importerCsvAudit(db, records, audit, noms.length, report, options);
    return report;
  }
  const dpe = colonnes(noms, COLONNES_DPE);
  if (dpe.numero !== undefined && dpe.etiquette !== undefined && dpe.etabli !== undefined) {
    const report = rapportDpe(fichier, 'csv_ademe');
    await importerCsvDpe(db, records, dpe, noms.length, report, options);
    return report;
  }
  throw new ImportError(
    `En-tête non reconnu : ni l’export ADEME des DPE (N°DPE, Date_établissement_DPE, Etiquette_DPE…) ni celui des audits (n_audit, date_etablissement_audit…). En-tête lu : ${entete.join(sep).slice(0, 200)}`,
  );
}

async function estXml(fichier: string): Promise<boolean> {
  if (/\.xml$/i.test(fichier)) return true;
  if (/\.(csv|txt|tsv)(\.gz)?$/i.test(fichier)) return false;
  const handle = await open(fichier, 'r');
  try {
    const head = Buffer.alloc(64);
    const { bytesRead } = await handle.read(head, 0, 64, 0);
    return head
      .subarray(0, bytesRead)
      .toString('utf8')
      .replace(/^\uFEFF/, '')
      .trimStart()
      .startsWith('<');
  } finally {
    await handle.close();
  }
}

/** Imports a folder of DPE XML files, one XML file, or an ADEME CSV (DPE or audits) into `dataset`. */
export async function importDpe(db: Db, source: string, options: DpeImportOptions = {}): Promise<DpeImportReport> {
  const dataset = options.dataset ?? 'live';
  const info = await stat(source).catch(() => null);
  if (!info) throw new ImportError(`Introuvable : ${source}`);
  let report: DpeImportReport;
  if (info.isDirectory()) {
    const fichiers = (await readdir(source))
      .filter((f) => /\.xml$/i.test(f))
      .sort()
      .map((f) => path.join(source, f));
    if (fichiers.length === 0) throw new ImportError(`Aucun fichier .xml dans le dossier ${source}`);
    report = rapportDpe(source, 'xml');
    await importerXml(db, fichiers, report, options);
  } else if (await estXml(source)) {
    report = rapportDpe(source, 'xml');
    await importerXml(db, [source], report, options);
  } else {
    report = await importerCsv(db, source, options);
  }
  const liees = await lierAudits(db, dataset, report);
  // The Communes market reads the share of F and G labels per commune from its aggregate, never from raw DPE.
  await reconstruireDpeCommunes(db, dataset);
  await reconstruireDerives(db, dataset);
  // The listings' analysis reads that share (their commune's attractiveness): every commune's may have moved, as
  // above, and the fingerprints tell which listings really changed (domain/annonces/reanalyse.ts).
  const reanalyse = await reanalyserCommunes(db, dataset, 'toutes');
  const c = report.format === 'csv_audit' ? report.audits : report.dpe;
  const libelle = {
    xml: 'DPE XML (observatoire ADEME)',
    csv_ademe: 'CSV ADEME des DPE',
    csv_audit: 'CSV ADEME des audits',
  };
  report.details = [
    `format    : ${libelle[report.format]}`,
    `${report.format === 'csv_audit' ? 'audits' : 'DPE'}       : ${c.ajoutes} ajoutés, ${c.modifies} modifiés, ${c.inchanges} inchangés`,
    ...(report.format === 'csv_audit'
      ? []
      : [
          `sans clé BAN : ${report.sansCleBan}`,
          `rattachement BAN incertain : ${report.rattachementIncertain}`,
          `fin de validité calculée (établissement + ${VALIDITE_ANS} ans) : ${report.finValiditeCalculee}`,
        ]),
    `audits liés à leur DPE : ${liees}`,
    `nouveautés au journal des adresses : ${report.nouveautes}`,
    ligneReanalyse(reanalyse),
  ];
  options.onProgress?.({ lus: report.lus, gardes: report.gardes });
  return report;
}

/** The `dpe` source of the importers' CLI. */
export const dpeSource = importSource(
  'dpe',
  'DPE des logements : XML de l’observatoire ADEME (un fichier ou un dossier), CSV ADEME « DPE Logements existants » ou CSV ADEME des audits',
  importDpe,
);
