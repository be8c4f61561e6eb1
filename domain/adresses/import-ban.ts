import path from 'node:path';
import type { PoolClient } from 'pg';
import type { Db } from '../../db/client.ts';
import { communeByCode, isInseeCode } from '../communes.ts';
import { attachBanKeys } from '../dvf/import.ts';
import { colonnesDe, csvRecords, lecteurDe, lignesDeDonnees } from '../import/csv.ts';
import { parLots } from '../import/ecriture.ts';
import { indexerNom, type NomIndexe } from './normaliser.ts';
import {
  exigerFichier,
  ImportError,
  importSource,
  MAX_REJETS_LISTES,
  nouveauRapport,
  type Dataset,
  type DatasetImportOptions,
  type ImportReport,
} from '../import/source.ts';

// The sandbox generator's test reads the files it writes with it.
export { splitCsvLine } from '../import/csv.ts';

/**
 * Importer of the Base Adresse Nationale, `adresses-XX.csv` (semicolon-separated, UTF-8, one number a line), plain or
 * gzipped. The file is read as a stream: memory stays flat whatever its size.
 *
 * Kept lines are staged in batches into a temporary table; from there one transaction writes the numbers and the rows
 * derived from them: one per street (BAN key of the street, median position of its numbers), one per lieu-dit
 * (`nom_ld`) and one per commune. Rows are upserted only when a column changed, and the BAN rows of the communes the
 * file covers that the file no longer has are deleted (a BAN file is complete for each commune it covers). Importing
 * the same file twice changes nothing. DVF sales of those communes imported before their addresses are then attached
 * to their BAN number.
 */

export interface BanImportOptions extends DatasetImportOptions {
  /** Lines per staging batch (5 000 by default). */
  batchSize?: number;
}

export interface BanImportReport extends ImportReport {
  /** DVF mutations of the file's communes newly attached to a BAN number. */
  ventesRattachees: number;
}

// Two imports into one dataset wait for each other (their deletions are per commune).
const VERROU = 726_354_008;
// Columns a line cannot do without; the others are read when present.
const REQUIRED = ['id', 'numero', 'nom_voie', 'code_insee', 'nom_commune', 'lon', 'lat'] as const;
// `33234_0160_00012`, `33234_0160_00012_bis`, `33001_b012_00006`, pseudo street codes of 6 characters.
const NUMBER_ID = /^((?:\d{2}|2[ab])\d{3})_([0-9a-z]{4,6})_(\d{5})(?:_([0-9a-z]+))?$/i;
const PARCELLE = /^(?:\d{2}|2[AB])\d{3}[0-9]{3}[0-9A-Z]{2}\d{4}$/;
// `75104_8316`: the FANTOIR code of the street, when the BAN knows it (some files add the RIVOLI key letter).
const ID_FANTOIR = /^(?:\d{2}|2[ab])\d{3}_([0-9a-z]{4})[a-z]?$/i;

// ---------------------------------------------------------------------------------------------------------------------
// Reading.
// ---------------------------------------------------------------------------------------------------------------------

interface Staged {
  ligne: number;
  cle: string;
  cle_voie: string;
  code_voie: string;
  numero: number;
  suffixe: string | null;
  voie: string;
  lieu_dit: string | null;
  code_postal: string | null;
  insee: string;
  commune: string;
  anc_insee: string | null;
  anc_nom: string | null;
  libelle: string;
  lat: number;
  lon: number;
  type_position: string | null;
  parcelles: string;
  certification: boolean | null;
  type_voie: string | null;
  nom_norm: string;
  noms_alt: string;
  recherche: string;
  ld_type: string | null;
  ld_nom: string | null;
  ld_recherche: string | null;
}

/**
 * The stored forms of a name (normaliser.ts), for the last name seen: the lines of a street follow each other, its
 * name is normalised once.
 */
function memoire(): (nom: string, autres: Array<string | null>) => NomIndexe {
  let cle = '';
  let dernier: NomIndexe | null = null;
  return (nom, autres) => {
    const k = `${nom}\u0000${autres.join('\u0000')}`;
    if (k !== cle || !dernier) {
      cle = k;
      dernier = indexerNom(nom, autres);
    }
    return dernier;
  };
}
const nomDeVoie = memoire();
const nomDeLieuDit = memoire();

function columnsOf(header: string[]): Map<string, number> {
  const columns = colonnesDe(header.map((n) => n.toLowerCase()));
  const missing = REQUIRED.filter((c) => !columns.has(c));
  if (missing.length > 0) {
    throw new ImportError(
      `En-tête BAN attendu (adresses-XX.csv, séparateur « ; ») : colonne(s) ${missing.join(', ')} absente(s). En-tête lu : ${header.join(';').slice(0, 200)}`,
    );
  }
  return columns;
}

/** The staged number of a line, or why the line is rejected. */
function stage(get: (name: string) => string | null, ligne: number): Staged | string {
  const id = get('id');
  if (!id) return 'id absent';
  const parts = NUMBER_ID.exec(id);
  if (!parts) return `id mal formé (${id.slice(0, 40)}) : commune_voie_numéro attendu, ex. 33234_0160_00012`;
  const insee = get('code_insee')?.toUpperCase();
  if (!insee) return 'code_insee absent';
  if (!isInseeCode(insee)) return `code INSEE invalide (${insee.slice(0, 20)})`;
  const commune = communeByCode(insee);
  if (!commune) return `code INSEE inconnu du découpage administratif (${insee})`;
  const numeroText = get('numero');
  const numero = numeroText !== null && /^\d{1,5}$/.test(numeroText) ? Number(numeroText) : NaN;
  if (!Number.isInteger(numero)) return `numéro invalide (${numeroText ?? 'absent'})`;
  const voie = get('nom_voie');
  if (!voie) return 'nom_voie absent';
  const latText = get('lat');
  const lonText = get('lon');
  const lat = latText === null ? NaN : Number(latText);
  const lon = lonText === null ? NaN : Number(lonText);
  if (
    !Number.isFinite(lat) ||
    !Number.isFinite(lon) ||
    Math.abs(lat) > 90 ||
    Math.abs(lon) > 180 ||
    (lat === 0 && lon === 0)
  )
    return `coordonnées invalides (lat ${latText ?? 'absente'}, lon ${lonText ?? 'absente'})`;
  const codePostal = get('code_postal');
  if (codePostal !== null && !/^\d{5}$/.test(codePostal)) return `code postal invalide (${codePostal.slice(0, 20)})`;
  const suffixe = get('rep')?.toLowerCase() ?? null;
  const nomCommune = get('nom_commune') ?? commune.nom;
  const ancInsee = get('code_insee_ancienne_commune')?.toUpperCase() ?? null;
  const certification = get('certification_commune');
  // Parcel ids that are not 14 characters of the cadastre are dropped, the address kept.
  const parcelles = (get('cad_parcelles') ?? '')
    .split('|')
    .map((p) => p.trim().toUpperCase())
    .filter((p) => PARCELLE.test(p));
  const numeroLabel = suffixe ? `${numero} ${suffixe}` : String(numero);
  // The aliases of a street are separated by `|` when it has several.
  const nom = nomDeVoie(voie, [get('nom_afnor'), ...(get('alias')?.split('|') ?? [])]);
  const lieuDit = get('nom_ld');
  const ld = lieuDit ? nomDeLieuDit(lieuDit, []) : null;
  const fantoir = ID_FANTOIR.exec(get('id_fantoir') ?? '');
  return {
    ligne,
    cle: id.toLowerCase(),
    cle_voie: `${parts[1]}_${parts[2]}`.toLowerCase(),
    // As FANTOIR and DVF write it (`0160`, `B012`): the join key of sales to numbers. The id of a street the BAN
    // named itself (`75104_js6yq4`) is not a FANTOIR code; its id_fantoir is, when it has one.
    code_voie: (fantoir?.[1] ?? parts[2]).toUpperCase(),
    numero,
    suffixe,
    voie,
    lieu_dit: lieuDit,
    code_postal: codePostal,
    insee,
    commune: nomCommune,
    anc_insee: ancInsee && ancInsee !== insee ? ancInsee : null,
    anc_nom: ancInsee && ancInsee !== insee ? get('nom_ancienne_commune') : null,
    libelle: [numeroLabel, voie, codePostal, nomCommune].filter(Boolean).join(' '),
    lat,
    lon,
    type_position: get('type_position'),
    parcelles: parcelles.join('|'),
    certification: certification === '1' ? true : certification === '0' ? false : null,
    type_voie: nom.type_voie,
    nom_norm: nom.nom_norm,
    noms_alt: nom.noms_alt.join('|'),
    recherche: nom.recherche,
    ld_type: ld?.type_voie ?? null,
    ld_nom: ld?.nom_norm ?? null,
    ld_recherche: ld?.recherche ?? null,
  };
}

// ---------------------------------------------------------------------------------------------------------------------
// Database.
// ---------------------------------------------------------------------------------------------------------------------

const STAGING = `seq int, ligne int, cle text, cle_voie text, code_voie text, numero int, suffixe text, voie text,
  lieu_dit text, code_postal text, insee text, commune text, anc_insee text, anc_nom text, libelle text,
  lat float8, lon float8, type_position text, parcelles text, certification boolean, type_voie text, nom_norm text,
  noms_alt text, recherche text, ld_type text, ld_nom text, ld_recherche text`;
const STAGING_TYPES = STAGING.split(',').map((c) => c.trim().split(/\s+/));

/** Columns of `adresses` written by the import, in order (besides `dataset`). */
const COLUMNS = [
  'cle_ban',
  'type',
  'numero',
  'suffixe',
  'voie',
  'code_voie',
  'lieu_dit',
  'code_postal',
  'insee',
  'commune',
  'ancienne_commune_insee',
  'ancienne_commune_nom',
  'libelle',
  'lat',
  'lon',
  'type_position',
  'parcelles',
  'certification',
  'source',
  'type_voie',
  'nom_norm',
  'noms_alt',
  'recherche',
] as const;
const COMPARED = COLUMNS.filter((c) => c !== 'cle_ban');

/** One batch into the staging table: one array per column, a single statement. */
async function writeBatch(client: PoolClient, batch: Staged[], firstSeq: number): Promise<void> {
  const arrays = STAGING_TYPES.map(([name]) =>
    name === 'seq' ? batch.map((_, i) => firstSeq + i) : batch.map((row) => row[name as keyof Staged]),
  );
  await client.query(
    `INSERT INTO pg_temp.ban_lot SELECT * FROM unnest(${STAGING_TYPES.map(([, type], i) => `$${i + 1}::${type}[]`).join(', ')})`,
    arrays,
  );
}

// Medians of the positions of a group's numbers, componentwise: a point on the street even when it bends.
const MEDIANE = `percentile_cont(0.5) WITHIN GROUP (ORDER BY lat) AS lat,
                 percentile_cont(0.5) WITHIN GROUP (ORDER BY lon) AS lon`;

// Every number of the street in the same former commune.
const SEULE_ANCIENNE = 'count(DISTINCT anc_insee) = 1 AND count(anc_insee) = count(*)';

/** Numbers and the rows derived from them, in `pg_temp.ban_final` (same columns as `adresses`, without dataset). */
async function derive(client: PoolClient): Promise<void> {
  await client.query(`CREATE TEMP TABLE ban_final (LIKE adresses INCLUDING DEFAULTS)`);
  await client.query(`ALTER TABLE pg_temp.ban_final DROP COLUMN dataset`);
  const cols = COLUMNS.join(', ');
  await client.query(
    `INSERT INTO pg_temp.ban_final (${cols})
     SELECT cle, 'numero', numero, suffixe, voie, code_voie, lieu_dit, code_postal, insee, commune, anc_insee, anc_nom,
            libelle, lat, lon, type_position, coalesce(string_to_array(NULLIF(parcelles, ''), '|'), '{}'),
            certification, 'ban', NULL, NULL, NULL, NULL
       FROM pg_temp.ban_lot`,
  );
  // A street: the most frequent of each attribute among its numbers (a street may cross a postal code boundary), the
  // former commune only when all its numbers share it.
  await client.query(
    `INSERT INTO pg_temp.ban_final (${cols})
     SELECT cle_voie, 'voie', NULL, NULL, voie, code_voie, NULL, code_postal, insee, commune, anc_insee, anc_nom,
            concat_ws(' ', voie, code_postal, commune), lat, lon, NULL, NULL, NULL, 'ban',
            type_voie, nom_norm, coalesce(string_to_array(NULLIF(noms_alt, ''), '|'), '{}'), recherche
       FROM (SELECT cle_voie,
                    mode() WITHIN GROUP (ORDER BY voie) AS voie,
                    mode() WITHIN GROUP (ORDER BY type_voie) AS type_voie,
                    mode() WITHIN GROUP (ORDER BY nom_norm) AS nom_norm,
                    mode() WITHIN GROUP (ORDER BY noms_alt) AS noms_alt,
                    mode() WITHIN GROUP (ORDER BY recherche) AS recherche,
                    min(code_voie) AS code_voie,
                    mode() WITHIN GROUP (ORDER BY code_postal) AS code_postal,
                    mode() WITHIN GROUP (ORDER BY insee) AS insee,
                    mode() WITHIN GROUP (ORDER BY commune) AS commune,
                    CASE WHEN ${SEULE_ANCIENNE} THEN min(anc_insee) END AS anc_insee,
                    CASE WHEN ${SEULE_ANCIENNE} THEN min(anc_nom) END AS anc_nom,
                    ${MEDIANE}
               FROM pg_temp.ban_lot GROUP BY cle_voie) v`,
  );
  // A lieu-dit of the numbers that carry one, unless it only repeats their street name (a number on a lieu-dit has
  // its name as nom_voie). The file gives it no key: ours is not of the BAN shape and is never served as cle_ban.
  await client.query(
    `INSERT INTO pg_temp.ban_final (${cols})
     SELECT 'ld:' || insee || ':' || left(md5(plie), 12), 'lieu_dit', NULL, NULL, NULL, NULL, lieu_dit, code_postal,
            insee, commune, NULL, NULL, concat_ws(' ', lieu_dit, code_postal, commune), lat, lon,
            NULL, NULL, NULL, 'ban', ld_type, ld_nom, '{}', ld_recherche
       FROM (SELECT insee, svc_plier(lieu_dit) AS plie,
                    mode() WITHIN GROUP (ORDER BY lieu_dit) AS lieu_dit,
                    mode() WITHIN GROUP (ORDER BY ld_type) AS ld_type,
                    mode() WITHIN GROUP (ORDER BY ld_nom) AS ld_nom,
                    mode() WITHIN GROUP (ORDER BY ld_recherche) AS ld_recherche,
                    mode() WITHIN GROUP (ORDER BY code_postal) AS code_postal,
                    mode() WITHIN GROUP (ORDER BY commune) AS commune,
                    ${MEDIANE}
               FROM pg_temp.ban_lot
              WHERE lieu_dit IS NOT NULL AND svc_plier(lieu_dit) <> svc_plier(voie)
              GROUP BY insee, svc_plier(lieu_dit)) l`,
  );
  await client.query(
    `INSERT INTO pg_temp.ban_final (${cols})
     SELECT insee, 'commune', NULL, NULL, NULL, NULL, NULL, code_postal, insee, commune, NULL, NULL,
            concat_ws(' ', code_postal, commune), lat, lon, NULL, NULL, NULL, 'ban', NULL, NULL, NULL, NULL
       FROM (SELECT insee,
                    mode() WITHIN GROUP (ORDER BY code_postal) AS code_postal,
                    mode() WITHIN GROUP (ORDER BY commune) AS commune,
                    ${MEDIANE}
               FROM pg_temp.ban_lot GROUP BY insee) c`,
  );
  await client.query(`ALTER TABLE pg_temp.ban_final ADD PRIMARY KEY (cle_ban)`);
  await client.query(`ANALYZE pg_temp.ban_final`);
}

interface MergeCounts {
  parType: Record<string, { total: number; ajoutees: number; modifiees: number }>;
  supprimees: number;
  /** The communes the file covers (INSEE codes). */
  communes: string[];
}

async function merge(client: PoolClient, dataset: Dataset): Promise<MergeCounts> {
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [VERROU, dataset]);
    // Rows of other sources (an address known from a DPE only) are never overwritten.
    const upserted = await client.query<{ type: string; ajoutees: number; modifiees: number }>(
      `WITH up AS (
         INSERT INTO adresses AS a (dataset, ${COLUMNS.join(', ')})
         SELECT $1, ${COLUMNS.join(', ')} FROM pg_temp.ban_final
         ON CONFLICT (dataset, cle_ban) DO UPDATE SET ${COMPARED.map((c) => `${c} = excluded.${c}`).join(', ')}
         WHERE a.source = 'ban'
           AND (${COMPARED.map((c) => `a.${c}`).join(', ')}) IS DISTINCT FROM (${COMPARED.map((c) => `excluded.${c}`).join(', ')})
         RETURNING a.type, (xmax = 0) AS ajoutee)
       SELECT type, count(*) FILTER (WHERE ajoutee)::int AS ajoutees,
              count(*) FILTER (WHERE NOT ajoutee)::int AS modifiees
         FROM up GROUP BY type`,
      [dataset],
    );
    const totals = await client.query<{ type: string; n: number }>(
      'SELECT type, count(*)::int AS n FROM pg_temp.ban_final GROUP BY type',
    );
    // The communes as a list: a subquery here made the planner, misled by fresh rows, compare every pair.
    const communes = await client.query<{ insee: string }>(
      `SELECT cle_ban AS insee FROM pg_temp.ban_final WHERE type = 'commune'`,
    );
    const insees = communes.rows.map((r) => r.insee);
    const deleted = await client.query(
      `DELETE FROM adresses a
        WHERE a.dataset = $1 AND a.source = 'ban' AND a.insee = ANY ($2::text[])
          AND NOT EXISTS (SELECT 1 FROM pg_temp.ban_final f WHERE f.cle_ban = a.cle_ban)`,
      [dataset, insees],
    );
    await client.query('COMMIT');
    const parType: MergeCounts['parType'] = {};
    for (const { type, n } of totals.rows) parType[type] = { total: n, ajoutees: 0, modifiees: 0 };
    for (const r of upserted.rows) Object.assign(parType[r.type], { ajoutees: r.ajoutees, modifiees: r.modifiees });
    return { parType, supprimees: deleted.rowCount ?? 0, communes: insees };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// The import.
// ---------------------------------------------------------------------------------------------------------------------

interface Fichier {
  report: ImportReport;
  merged: MergeCounts;
  ventesRattachees: number;
  parcellesIgnorees: number;
}

/** One file: read, staged, derived and merged in one transaction; its sales attached. */
async function importerFichier(
  db: Db,
  file: string,
  dataset: Dataset,
  options: BanImportOptions,
  progres: (lus: number, gardes: number) => void,
): Promise<Fichier> {
  await exigerFichier(file);
  const { report, rejeter } = nouveauRapport(file);
  await using records = csvRecords(file, ';');
  const premiere = await records.next();
  if (premiere.done) throw new ImportError(`${file} est vide : en-tête BAN attendu.`);
  const header = premiere.value.champs;
  const columns = columnsOf(header);

  const client = await db.connect();
  try {
    await client.query('DROP TABLE IF EXISTS pg_temp.ban_lot, pg_temp.ban_final');
    await client.query(`CREATE TEMP TABLE ban_lot (${STAGING})`);
    let seq = 0;
    let parcellesIgnorees = 0;
    const lots = parLots<Staged>(
      Math.max(1, options.batchSize ?? 5000),
      async (batch) => {
        await writeBatch(client, batch, seq);
        seq += batch.length;
      },
      () => progres(report.lus, report.gardes),
    );
    for await (const { ligne, champs } of lignesDeDonnees(records, header.length, report, rejeter)) {
      const get = lecteurDe(columns, champs);
      const staged = stage(get, ligne);
      if (typeof staged === 'string') {
        rejeter(ligne, staged);
        continue;
      }
      const declared = get('cad_parcelles');
      if (declared)
        parcellesIgnorees += declared.split('|').length - (staged.parcelles ? staged.parcelles.split('|').length : 0);
      report.gardes++;
      await lots.ajouter(staged);
    }
    await lots.vider();

    // A key seen twice: the first line wins, the others are rejected (found here, not in a Set of a million keys).
    const doubles = await client.query<{ ligne: number; cle: string; premiere: number; n: number }>(
      `WITH d AS (
         DELETE FROM pg_temp.ban_lot l USING (
           SELECT seq, cle, ligne, first_value(ligne) OVER (PARTITION BY cle ORDER BY seq) AS premiere,
                  row_number() OVER (PARTITION BY cle ORDER BY seq) AS rang
             FROM pg_temp.ban_lot) d
          WHERE d.seq = l.seq AND d.rang > 1
          RETURNING d.ligne, d.cle, d.premiere)
       SELECT ligne, cle, premiere, count(*) OVER ()::int AS n FROM d ORDER BY ligne LIMIT ${MAX_REJETS_LISTES}`,
    );
    for (const d of doubles.rows) rejeter(d.ligne, `id en double (${d.cle}, déjà ligne ${d.premiere})`);
    report.gardes -= doubles.rows[0]?.n ?? 0;
    report.rejetes.sort((a, b) => a.ligne - b.ligne);

    await derive(client);
    const merged = await merge(client, dataset);
    const written = Object.values(merged.parType).reduce((n, c) => n + c.ajoutees + c.modifiees, merged.supprimees);
    // Fresh statistics at once: the searches that follow would otherwise be planned on the table as it was.
    if (written > 0) await client.query('ANALYZE adresses');
    // The text search's GIN indexes take the new streets into a pending list, read through by every search until a
    // VACUUM or 4 MB of entries: a search took 12.6 ms in the database instead of 0.6 right after the BAN of Paris,
    // and the autovacuum never comes after a département imported into a national base (its threshold is a fifth of
    // the table). Merged here, in bulk: the first searches after an import are as fast as the later ones. The list
    // keeps the import fast (entries inserted one by one cost it 15 % more on a million lines). Like ANALYZE, left to
    // the autovacuum when the importer's role does not own the indexes.
    if (written > 0) {
      await client
        .query(
          `SELECT gin_clean_pending_list('adresses_recherche'::regclass),
                  gin_clean_pending_list('adresses_recherche_mots'::regclass)`,
        )
        .catch((error: unknown) => {
          if ((error as { code?: string }).code !== '42501') throw error;
        });
    }
    const ventesRattachees = await attachBanKeys(client, dataset, merged.communes);
    return { report, merged, ventesRattachees, parcellesIgnorees };
  } finally {
    await client.query('DROP TABLE IF EXISTS pg_temp.ban_lot, pg_temp.ban_final').catch(() => {});
    client.release();
  }
}

/**
 * Imports a BAN `adresses-XX.csv` (or `.csv.gz`) into `dataset`, or several (the BAN publishes one per département),
 * one after the other, each in its transaction: a file is complete for the communes it covers. Throws ImportError,
 * with a French message, when a file is unusable as a whole (missing, not a BAN header); a bad line is only rejected,
 * with its reason and its line number in the file (the header is line 1), and the file's name when there are several.
 */
export async function importBan(
  db: Db,
  files: string | string[],
  options: BanImportOptions = {},
): Promise<BanImportReport> {
  const dataset = options.dataset ?? 'live';
  const liste = typeof files === 'string' ? [files] : files;
  if (liste.length === 0) throw new ImportError('Aucun fichier BAN à importer.');
  const total: BanImportReport = {
    source: liste.length === 1 ? liste[0] : `${liste.length} fichiers, de ${liste[0]} à ${liste.at(-1)}`,
    lus: 0,
    gardes: 0,
    rejetes: [],
    details: [],
    ventesRattachees: 0,
  };
  const parType: MergeCounts['parType'] = {};
  let supprimees = 0;
  let communes = 0;
  let parcellesIgnorees = 0;
  for (const file of liste) {
    const avant = { lus: total.lus, gardes: total.gardes };
    const f = await importerFichier(db, file, dataset, options, (lus, gardes) =>
      options.onProgress?.({ lus: avant.lus + lus, gardes: avant.gardes + gardes }),
    );
    total.lus += f.report.lus;
    total.gardes += f.report.gardes;
    const prefixe = liste.length > 1 ? `${path.basename(file)} : ` : '';
    for (const r of f.report.rejetes) {
      if (total.rejetes.length < MAX_REJETS_LISTES) total.rejetes.push({ ligne: r.ligne, motif: prefixe + r.motif });
    }
    for (const [type, c] of Object.entries(f.merged.parType)) {
      const t = (parType[type] ??= { total: 0, ajoutees: 0, modifiees: 0 });
      t.total += c.total;
      t.ajoutees += c.ajoutees;
      t.modifiees += c.modifiees;
    }
    supprimees += f.merged.supprimees;
    communes += f.merged.communes.length;
    parcellesIgnorees += f.parcellesIgnorees;
    total.ventesRattachees += f.ventesRattachees;
  }
  const line = (label: string, type: string) => {
    const c = parType[type] ?? { total: 0, ajoutees: 0, modifiees: 0 };
    return `${label.padEnd(10)}: ${c.total} (${c.ajoutees} ajoutés, ${c.modifiees} modifiés, ${c.total - c.ajoutees - c.modifiees} inchangés)`;
  };
  total.details.push(
    line('numéros', 'numero'),
    line('voies', 'voie'),
    line('lieux-dits', 'lieu_dit'),
    line('communes', 'commune'),
    `supprimés : ${supprimees} (absents du fichier, dans ses ${communes} communes)`,
    `ventes DVF rattachées à un numéro : ${total.ventesRattachees}`,
  );
  if (parcellesIgnorees > 0)
    total.details.push(`parcelles : ${parcellesIgnorees} identifiants hors format (14 caractères) ignorés`);
  options.onProgress?.({ lus: total.lus, gardes: total.gardes });
  return total;
}

/** The `ban` source of the importers' CLI. */
export const banSource = importSource(
  'ban',
  'adresses de la Base Adresse Nationale : adresses-XX.csv (séparateur « ; ») ou .csv.gz ; plusieurs fichiers, un dossier ou un motif (ban/adresses-*.csv.gz), un département après l’autre',
  importBan,
  /^adresses-.*\.csv(\.gz)?$/i,
);
