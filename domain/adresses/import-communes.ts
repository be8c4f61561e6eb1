import { existsSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { PoolClient } from 'pg';
import { transaction, type Db } from '../../db/client.ts';
import { DECOUPAGE, estCommuneServie, isInseeCode, type CommuneDecoupage } from '../communes.ts';
import { upsert } from '../import/ecriture.ts';
import {
  ImportError,
  importSource,
  nouveauRapport,
  type Dataset,
  type DatasetImportOptions,
  type ImportReport,
} from '../import/source.ts';
import { SANDBOX_COMMUNES } from '../platform/sandbox.ts';

/**
 * Importer of the administrative split: communes (current ones and the municipal arrondissements of Paris, Lyon and
 * Marseille), EPCI with their members, départements and régions from `@etalab/decoupage-administratif`, postal codes
 * completed by `codes-postaux`. The data ships with the npm packages: the path is `-` (or the package name), or a
 * folder holding a newer `communes.json`, `epci.json`, `departements.json` and `regions.json` of the same format.
 *
 * Every table of the dataset is made equal to the source: rows upserted only when a column changed, rows the source
 * no longer has (a commune merged into another) deleted, all in one transaction. Importing twice changes nothing.
 */

const POSTAL_PACKAGE = 'codes-postaux';
// Two imports of the administrative split into one dataset wait for each other.
const VERROU = 726_354_007;

interface RawEpci {
  code: string;
  nom: string;
  type?: string;
  membres: Array<{ code: string }>;
}

interface RawDivision {
  code: string;
  nom: string;
  region?: string;
}

interface CommuneRow {
  insee: string;
  nom: string;
  type: 'commune-actuelle' | 'arrondissement-municipal';
  departement: string;
  region: string;
  epci: string | null;
  commune_parente: string | null;
  codes_postaux: string[];
  population: number | null;
  lat: number | null;
  lon: number | null;
}

interface EpciRow {
  siren: string;
  nom: string;
  nature: string | null;
  membres: string[];
}

interface Counts {
  ajoutees: number;
  modifiees: number;
  inchangees: number;
  supprimees: number;
}

function readJson<T>(file: string): T {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as T;
  } catch (error) {
    throw new ImportError(`${file} illisible : ${(error as Error).message}`);
  }
}

/** Where the four files are: the installed package, or a folder given on the command line. */
function dataFolder(chemin: string): { folder: string; label: string } {
  const require = createRequire(import.meta.url);
  if (chemin === '-' || chemin === DECOUPAGE || path.basename(chemin) === '-') {
    const file = require.resolve(`${DECOUPAGE}/data/communes.json`);
    const version = (require(`${DECOUPAGE}/package.json`) as { version: string }).version;
    return { folder: path.dirname(file), label: `${DECOUPAGE} ${version}` };
  }
  const folder = existsSync(chemin) && statSync(chemin).isFile() ? path.dirname(chemin) : chemin;
  const missing = ['communes.json', 'epci.json', 'departements.json', 'regions.json'].filter(
    (f) => !existsSync(path.join(folder, f)),
  );
  if (missing.length > 0) {
    throw new ImportError(
      `${folder} : ${missing.join(', ')} introuvable(s). Chemin attendu : « - » (données du paquet ${DECOUPAGE} installé) ou un dossier data/ de ce paquet.`,
    );
  }
  return { folder, label: folder };
}

/** Postal codes by commune from `codes-postaux`; those of a delegated or associated commune go to its new commune. */
function postalCodes(raw: CommuneDecoupage[]): { byCommune: Map<string, Set<string>>; unknown: number; label: string } {
  const require = createRequire(import.meta.url);
  const entries = require(`${POSTAL_PACKAGE}/codes-postaux.json`) as Array<{ codePostal: string; codeCommune: string }>;
  const version = (require(`${POSTAL_PACKAGE}/package.json`) as { version: string }).version;
  const parentOf = new Map<string, string>();
  for (const c of raw) {
    if ((c.type === 'commune-deleguee' || c.type === 'commune-associee') && c.chefLieu)
      parentOf.set(c.code, c.chefLieu);
  }
  const current = new Set(raw.filter(estCommuneServie).map((c) => c.code));
  const byCommune = new Map<string, Set<string>>();
  let unknown = 0;
  for (const { codePostal, codeCommune } of entries) {
    const insee = current.has(codeCommune) ? codeCommune : parentOf.get(codeCommune);
    if (!insee || !current.has(insee)) {
      unknown++;
      continue;
    }
    let set = byCommune.get(insee);
    if (!set) byCommune.set(insee, (set = new Set()));
    set.add(codePostal);
  }
  return { byCommune, unknown, label: `${POSTAL_PACKAGE} ${version}` };
}

/**
 * Upserts `rows` into `table` (changed rows only) and deletes the rows of the dataset the source no longer has.
 * `record` lists the columns with their SQL types, the key first.
 */
async function sync(
  client: PoolClient,
  table: 'communes' | 'epci' | 'departements' | 'regions',
  record: string,
  rows: object[],
  dataset: Dataset,
): Promise<Counts> {
  const colonnes = record.split(',').map((c) => c.trim().split(/\s+/) as [string, string]);
  const key = colonnes[0][0];
  const e = await upsert(
    client,
    { nom: table, colonnes: [['dataset', 'text'], ...colonnes], cle: ['dataset', key] },
    rows.map((r) => ({ dataset, ...r })),
  );
  const deleted = await client.query(`DELETE FROM ${table} WHERE dataset = $1 AND NOT (${key} = ANY ($2::text[]))`, [
    dataset,
    rows.map((r) => (r as Record<string, string>)[key]),
  ]);
  return {
    ...e,
    inchangees: rows.length - e.ajoutees - e.modifiees,
    supprimees: deleted.rowCount ?? 0,
  };
}

function line(label: string, n: number, c: Counts): string {
  return `${label.padEnd(13)}: ${n} (${c.ajoutees} ajoutées, ${c.modifiees} modifiées, ${c.inchangees} inchangées, ${c.supprimees} supprimées)`;
}

/**
 * Imports the administrative split into `dataset`. The sandbox dataset holds the frozen communes only
 * (`SANDBOX_COMMUNES`), with their EPCI, départements and régions: a pk_test_ key sees nothing else.
 */
export async function importCommunes(
  db: Db,
  chemin: string,
  options: DatasetImportOptions = {},
): Promise<ImportReport> {
  const dataset = options.dataset ?? 'live';
  const { folder, label } = dataFolder(chemin);
  const raw = readJson<CommuneDecoupage[]>(path.join(folder, 'communes.json'));
  const rawEpci = readJson<RawEpci[]>(path.join(folder, 'epci.json'));
  const rawDepartements = readJson<RawDivision[]>(path.join(folder, 'departements.json'));
  const rawRegions = readJson<RawDivision[]>(path.join(folder, 'regions.json'));
  if (!Array.isArray(raw) || !Array.isArray(rawEpci) || !Array.isArray(rawDepartements) || !Array.isArray(rawRegions))
    throw new ImportError(`${folder} : fichiers du découpage administratif attendus (tableaux JSON).`);
  const postal = postalCodes(raw);
  const { report, rejeter } = nouveauRapport(`${label} + ${postal.label}`);

  const epciOf = new Map<string, string>();
  for (const e of rawEpci) for (const m of e.membres ?? []) epciOf.set(m.code, e.code);
  const sandboxSet = new Set<string>(SANDBOX_COMMUNES);

  const communes: CommuneRow[] = [];
  let ignorees = 0;
  for (const [index, c] of raw.entries()) {
    // Delegated and associated communes are not communes of their own (their postal codes went to their new commune).
    if (!estCommuneServie(c)) {
      ignorees++;
      continue;
    }
    if (dataset === 'sandbox' && !sandboxSet.has(c.code)) continue;
    report.lus++;
    const ligne = index + 1;
    if (typeof c.code !== 'string' || !isInseeCode(c.code)) {
      rejeter(ligne, `code INSEE invalide (${String(c.code)})`);
      continue;
    }
    if (!c.nom) {
      rejeter(ligne, `${c.code} : nom absent`);
      continue;
    }
    if (!c.departement || !c.region) {
      rejeter(ligne, `${c.code} : département ou région absent`);
      continue;
    }
    const parente = c.type === 'arrondissement-municipal' ? (c.commune ?? null) : null;
    const codes = new Set([...(c.codesPostaux ?? []), ...(postal.byCommune.get(c.code) ?? [])]);
    // The package has no centre today; one is read if a later release brings it as a GeoJSON point.
    const centre = c.centre?.type === 'Point' ? c.centre.coordinates : null;
    communes.push({
      insee: c.code,
      nom: c.nom,
      type: c.type,
      departement: c.departement,
      region: c.region,
      // A municipal arrondissement belongs to the EPCI of its commune.
      epci: epciOf.get(c.code) ?? (parente ? (epciOf.get(parente) ?? null) : null),
      commune_parente: parente,
      codes_postaux: [...codes].filter((cp) => /^\d{5}$/.test(cp)).sort(),
      population: Number.isInteger(c.population) ? c.population! : null,
      lat: centre ? centre[1] : null,
      lon: centre ? centre[0] : null,
    });
    report.gardes++;
  }
  options.onProgress?.({ lus: report.lus, gardes: report.gardes });

  const kept = new Set(communes.map((c) => c.insee));
  const epci: EpciRow[] = rawEpci
    .filter((e) => dataset === 'live' || e.membres.some((m) => kept.has(m.code)))
    .map((e) => ({ siren: e.code, nom: e.nom, nature: e.type ?? null, membres: e.membres.map((m) => m.code).sort() }));
  const usedDepartements = new Set(communes.map((c) => c.departement));
  const departements = rawDepartements
    .filter((d) => dataset === 'live' || usedDepartements.has(d.code))
    .map((d) => ({ code: d.code, nom: d.nom, region: d.region ?? null }));
  const usedRegions = new Set(communes.map((c) => c.region));
  const regions = rawRegions
    .filter((r) => dataset === 'live' || usedRegions.has(r.code))
    .map((r) => ({ code: r.code, nom: r.nom }));

  const [rc, dc, ec, cc] = await transaction(db, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [VERROU, dataset]);
    return [
      await sync(client, 'regions', 'code text, nom text', regions, dataset),
      await sync(client, 'departements', 'code text, nom text, region text', departements, dataset),
      await sync(client, 'epci', 'siren text, nom text, nature text, membres text[]', epci, dataset),
      await sync(
        client,
        'communes',
        `insee text, nom text, type text, departement text, region text, epci text, commune_parente text,
         codes_postaux text[], population int, lat float8, lon float8`,
        communes,
        dataset,
      ),
    ];
  });
  const arrondissements = communes.filter((c) => c.type === 'arrondissement-municipal').length;
  report.details.push(
    line('communes', communes.length, cc),
    `  dont ${arrondissements} arrondissements municipaux ; ${ignorees} communes déléguées ou associées non importées ; ${communes.filter((c) => c.codes_postaux.length === 0).length} sans code postal`,
    line('EPCI', epci.length, ec),
    line('départements', departements.length, dc),
    line('régions', regions.length, rc),
    `codes postaux : ${postal.unknown} entrées de ${POSTAL_PACKAGE} sans commune connue, ignorées`,
  );
  return report;
}

/** The `communes` source of the importers' CLI. */
export const communesSource = importSource(
  'communes',
  `communes, arrondissements municipaux, EPCI, départements et régions (paquets ${DECOUPAGE} et ${POSTAL_PACKAGE}) ; chemin « - »`,
  importCommunes,
);
