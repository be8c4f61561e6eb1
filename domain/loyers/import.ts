import path from 'node:path';
import { reconstruireDerives } from '../marche/derives.ts';
import { ligneReanalyse, reanalyserCommunes } from '../annonces/reanalyse.ts';
import type { PoolClient } from 'pg';
import { transaction, type Db } from '../../db/client.ts';
import { codeInsee, csvRecords, lignesDeDonnees, nombre, separateurDe, texte } from '../import/csv.ts';
import { ligneEcriture, upsertParLots, type Lu, type Table } from '../import/ecriture.ts';
import {
  exigerFichier,
  ImportError,
  importSource,
  nouveauRapport,
  type Dataset,
  type DatasetImportOptions,
  type ImportReport,
  type Rejeter,
} from '../import/source.ts';
import { LIBELLES_TYPES, type TypeLogement } from './loyers.ts';

/**
 * Importer of the rent indicators by commune ("carte des loyers", data.gouv.fr, one dataset per edition: 2018, then
 * every year since 2022), one CSV per type of dwelling. What differs between editions, and how it is read:
 *
 * - The layout is recognised by its header, column by column, whatever their order: a column is known by its name
 *   compared without case or punctuation, under each name the editions gave it (`INSEE_C` since 2022, `INSEE` in
 *   2018; `nbobs_com` / `NBobs_commune`; `nbobs_mail` / `NBobs_maille`; `R2_adj` / `R2adj`). A header that lacks one
 *   of the columns stored is refused, saying which.
 * - The charset is told from the bytes (published in Windows-1252, copies circulate in UTF-8), quotes or none, `;`
 *   or another separator, CRLF or LF, a byte order mark or none; numbers with a decimal comma or a dot.
 * - INSEE codes the 2018 files wrote as integers (`1001`) are zero-padded to 5 characters; Corsica's `2A004` is
 *   text already.
 *
 * Neither the type of dwelling nor the year is written inside the file; both are read from its name, as the
 * publisher names the files:
 * - the type from a word of the name: `app` / `appartement(s)` → appartement; `app12`, `t1-t2`, `t1t2` →
 *   appartement_t1_t2; `app3`, `t3`, `t3plus` → appartement_t3_plus; `mai` / `maison(s)` → maison
 *   (`pred-app12-mef-dhup.csv`, `indicateurs-loyers-maisons.csv`). A name that says none, or two, is refused.
 * - the edition from a year written as a word of its own (20xx between non-alphanumerics) in the file's name, else in
 *   its folder's (the publisher's files all have the same names from one year to the next: `2025/pred-app-mef-dhup.csv`
 *   or `pred-app-mef-dhup-2025.csv`), else 2018 for the 2018 layout, the only edition published in it. Otherwise, or
 *   with two different years in one name, the file is refused, saying how to name it.
 *
 * An import replaces the editions and types its files are, each made equal to its file (rows upserted when they
 * changed, communes the file no longer has deleted), all files in one transaction: a refused file or a failure leaves
 * the table as it was. Importing the same files again changes nothing.
 */

const LOT = 1000;
// Two imports of rent indicators into one dataset wait for each other.
const VERROU = 726_354_019;

const TABLE: Table = {
  nom: 'loyers_communes',
  colonnes: [
    ['dataset', 'text'],
    ['insee', 'text'],
    ['type_logement', 'text'],
    ['edition', 'smallint'],
    ['commune', 'text'],
    ['epci', 'text'],
    ['id_zone', 'text'],
    ['loyer_m2', 'float8'],
    ['loyer_m2_bas', 'float8'],
    ['loyer_m2_haut', 'float8'],
    ['niveau_prediction', 'text'],
    ['nb_obs_commune', 'int'],
    ['nb_obs_maille', 'int'],
    ['r2_ajuste', 'float8'],
  ],
  cle: ['dataset', 'insee', 'type_logement', 'edition'],
};

/** A word of a name as compared: lower case, without accents. */
function sansAccents(text: string): string {
  return text
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase();
}

/** A column's name as compared: lower case, letters and digits only (`lwr.IPm2` → `lwripm2`, `R2_adj` → `r2adj`). */
const cleColonne = (nom: string) => sansAccents(nom).replace(/[^a-z0-9]/g, '');

/** The columns read, each under the names the editions gave it (compared as `cleColonne` writes them). */
const NOMS = {
  insee: ['inseec', 'insee'],
  loyer: ['loypredm2'],
  bas: ['lwripm2'],
  haut: ['upripm2'],
  niveau: ['typpred'],
  obsCommune: ['nbobscom', 'nbobscommune'],
  obsMaille: ['nbobsmail', 'nbobsmaille'],
  r2: ['r2adj'],
  commune: ['libgeo'],
  epci: ['epci'],
  zone: ['idzone'],
} as const;
type Colonne = keyof typeof NOMS;

/** Every figure the table stores: a header without one of them is not a rent indicators file we know. */
const OBLIGATOIRES: Colonne[] = ['insee', 'loyer', 'bas', 'haut', 'niveau', 'obsCommune', 'obsMaille', 'r2'];
const ECRITES: Record<Colonne, string> = {
  insee: 'INSEE_C (INSEE)',
  loyer: 'loypredm2',
  bas: 'lwr.IPm2',
  haut: 'upr.IPm2',
  niveau: 'TYPPRED',
  obsCommune: 'nbobs_com (NBobs_commune)',
  obsMaille: 'nbobs_mail (NBobs_maille)',
  r2: 'R2_adj (R2adj)',
  commune: 'LIBGEO',
  epci: 'EPCI',
  zone: 'id_zone',
};

type Disposition = '2018' | 'depuis 2022';

interface Fichier {
  chemin: string;
  nom: string;
  type: TypeLogement;
  edition: number;
  disposition: Disposition;
  /** Where the edition was read: the file's name, its folder's, or its layout ("le nom du fichier"…). */
  editionLue: string;
}

/** The index of each known column of a header, or the columns missing. */
function colonnesDe(entete: string[]): { index: Partial<Record<Colonne, number>>; manquantes: Colonne[] } {
  const cles = entete.map(cleColonne);
  const index: Partial<Record<Colonne, number>> = {};
  for (const [colonne, noms] of Object.entries(NOMS) as Array<[Colonne, readonly string[]]>) {
    const i = cles.findIndex((c) => noms.includes(c));
    if (i >= 0) index[colonne] = i;
  }
  return { index, manquantes: OBLIGATOIRES.filter((c) => index[c] === undefined) };
}

const APPARTEMENT = new Set(['app', 'appt', 'appart', 'apparts', 'appartement', 'appartements']);
const T1_T2 = new Set(['app12', 't1t2', 't12']);
const T3_PLUS = new Set(['app3', 't3', 't3plus']);
const MAISON = new Set(['mai', 'maison', 'maisons']);

/** The type of dwelling a file's name says (rule in the comment at the top), or why it cannot be told. */
export function typeDuNom(nom: string): { type: TypeLogement } | { motif: string } {
  const mots = sansAccents(nom.replace(/\.csv(\.gz)?$/i, ''))
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
  const suite = `-${mots.join('-')}-`;
  const t12 = mots.some((m) => T1_T2.has(m)) || suite.includes('-t1-t2-');
  const t3 = mots.some((m) => T3_PLUS.has(m));
  const maison = mots.some((m) => MAISON.has(m));
  const appartement = t12 ? 'appartement_t1_t2' : t3 ? 'appartement_t3_plus' : null;
  const trouves = new Set<TypeLogement>();
  if (appartement) trouves.add(appartement);
  else if (mots.some((m) => APPARTEMENT.has(m))) trouves.add('appartement');
  if (maison) trouves.add('maison');
  if ((t12 && t3) || trouves.size > 1) {
    return { motif: `le nom « ${nom} » dit plusieurs types de logement : un fichier par type` };
  }
  const [type] = trouves;
  if (type) return { type };
  return {
    motif: `type de logement introuvable dans le nom « ${nom} » : il doit contenir app (appartements), app12 ou t1-t2 (appartements T1-T2), app3 ou t3 (T3 et plus) ou mai (maisons), comme les fichiers publiés (pred-app-mef-dhup.csv, indicateurs-loyers-maisons.csv…)`,
  };
}

const ANNEE = /(?:^|[^a-z0-9])(20\d{2})(?=[^a-z0-9]|$)/gi;

/** The edition of a file (rule in the comment at the top), and where it was read; or why it cannot be told. */
export function editionDe(
  chemin: string,
  disposition: Disposition,
): { edition: number; lue: string } | { motif: string } {
  const nom = path.basename(chemin).replace(/\.csv(\.gz)?$/i, '');
  const dossier = path.basename(path.dirname(path.resolve(chemin)));
  for (const [ou, texte] of [
    ['le nom du fichier', nom],
    ['le nom du dossier', dossier],
  ] as const) {
    const annees = new Set([...texte.matchAll(ANNEE)].map((m) => Number(m[1])));
    if (annees.size > 1) {
      return { motif: `plusieurs années dans ${ou} « ${texte} » (${[...annees].join(', ')}) : édition ambiguë` };
    }
    if (annees.size === 1) return { edition: [...annees][0], lue: ou };
  }
  if (disposition === '2018') return { edition: 2018, lue: 'la disposition de 2018' };
  return {
    motif: `année d’édition introuvable : ni le nom du fichier ni celui de son dossier ne la disent (ex. pred-app-mef-dhup-2025.csv, ou 2025/pred-app-mef-dhup.csv)`,
  };
}

/** The header of a file, its layout, type and edition; throws an ImportError that says what is wrong. */
async function identifier(chemin: string): Promise<Fichier> {
  await exigerFichier(chemin);
  const nom = path.basename(chemin);
  let entete: string[];
  {
    await using records = csvRecords(chemin, separateurDe, { encodage: 'auto' });
    const premiere = await records.next();
    if (premiere.done) throw new ImportError(`${chemin} est vide : en-tête des indicateurs de loyers attendu.`);
    entete = premiere.value.champs;
  }
  const { index, manquantes } = colonnesDe(entete);
  if (manquantes.length > 0) {
    throw new ImportError(
      `${chemin} : en-tête non reconnu comme celui des indicateurs de loyers (carte des loyers) : colonne(s) ${manquantes.map((c) => ECRITES[c]).join(', ')} absente(s). Attendues : ${OBLIGATOIRES.map((c) => ECRITES[c]).join(', ')}. En-tête lu : ${entete.join(';').slice(0, 200)}`,
    );
  }
  // 2018 named the code column INSEE, the later editions INSEE_C.
  const disposition: Disposition = cleColonne(entete[index.insee!]) === 'insee' ? '2018' : 'depuis 2022';
  const type = typeDuNom(nom);
  if ('motif' in type) throw new ImportError(`${chemin} : ${type.motif}.`);
  const edition = editionDe(chemin, disposition);
  if ('motif' in edition) throw new ImportError(`${chemin} : ${edition.motif}.`);
  return { chemin, nom, type: type.type, edition: edition.edition, disposition, editionLue: edition.lue };
}

/** A count: an integer of 0 or more, null when empty; a string says why it cannot be read. */
function compte(valeur: string | null, colonne: string): number | null | string {
  const n = nombre(valeur);
  if (n === null) return null;
  return Number.isInteger(n) && n >= 0 ? n : `${colonne} illisible (${valeur})`;
}

/** The row of a record, or why it is rejected. */
function loyerDe(
  lire: (colonne: Colonne) => string | null,
  fichier: Fichier,
  dataset: Dataset,
): Record<string, unknown> | string {
  const brut = lire('insee');
  const insee = codeInsee(brut);
  if (insee === null) return `code INSEE absent ou invalide (${brut ?? 'vide'})`;
  const figures = (['loyer', 'bas', 'haut'] as const).map((colonne) => {
    const v = nombre(lire(colonne));
    if (v === null) return `${ECRITES[colonne]} absent`;
    return v > 0 ? v : `${ECRITES[colonne]} illisible (${lire(colonne)})`;
  });
  const motif = figures.find((f) => typeof f === 'string');
  if (motif !== undefined) return motif;
  const [loyer, bas, haut] = figures as number[];
  if (!(bas <= loyer && loyer <= haut)) return `intervalle incohérent : ${loyer} hors de [${bas}, ${haut}]`;
  const niveau = lire('niveau')?.toLowerCase() ?? null;
  if (niveau === null) return 'TYPPRED absent';
  if (!/^[a-z][a-z_ -]*$/.test(niveau)) return `TYPPRED illisible (${niveau})`;
  const obsCommune = compte(lire('obsCommune'), ECRITES.obsCommune);
  if (typeof obsCommune === 'string') return obsCommune;
  const obsMaille = compte(lire('obsMaille'), ECRITES.obsMaille);
  if (typeof obsMaille === 'string') return obsMaille;
  const r2 = nombre(lire('r2'));
  if (Number.isNaN(r2)) return `${ECRITES.r2} illisible (${lire('r2')})`;
  return {
    dataset,
    insee,
    type_logement: fichier.type,
    edition: fichier.edition,
    commune: lire('commune'),
    epci: lire('epci'),
    id_zone: lire('zone'),
    loyer_m2: loyer,
    loyer_m2_bas: bas,
    loyer_m2_haut: haut,
    niveau_prediction: niveau,
    nb_obs_commune: obsCommune,
    nb_obs_maille: obsMaille,
    r2_ajuste: r2,
  };
}

/** Reads one file into its edition and type, in the import's transaction; says what it did in `report`. */
async function importerFichier(
  client: PoolClient,
  fichier: Fichier,
  dataset: Dataset,
  report: ImportReport,
  rejeterDuFichier: Rejeter,
  onProgress: DatasetImportOptions['onProgress'],
  communes: Set<string>,
): Promise<void> {
  await using records = csvRecords(fichier.chemin, separateurDe, { encodage: 'auto' });
  const premiere = await records.next();
  // Read a moment ago by `identifier`: only a file changed in between is empty now.
  if (premiere.done) throw new ImportError(`${fichier.chemin} est vide.`);
  const entete = premiere.value.champs;
  const { index } = colonnesDe(entete);
  const gardesAvant = report.gardes;
  const lignes = new Map<string, number>();
  const lots = upsertParLots<Lu>(client, {
    table: TABLE,
    taille: LOT,
    cle: (l) => l.row.insee as string,
    report,
    rejeter: rejeterDuFichier,
    onProgress,
  });
  for await (const { ligne, champs } of lignesDeDonnees(records, entete.length, report, rejeterDuFichier)) {
    const lire = (colonne: Colonne) => (index[colonne] === undefined ? null : texte(champs[index[colonne]]));
    const row = loyerDe(lire, fichier, dataset);
    if (typeof row === 'string') {
      rejeterDuFichier(ligne, row);
      continue;
    }
    // One figure per commune: a second line of the same code is an error of the file, not a correction.
    const avant = lignes.get(row.insee as string);
    if (avant !== undefined) {
      rejeterDuFichier(ligne, `commune ${String(row.insee)} déjà lue ligne ${avant}`);
      continue;
    }
    lignes.set(row.insee as string, ligne);
    await lots.garder({ ligne, row });
  }
  const ecriture = await lots.terminer();
  // A file none of whose rows could be read would empty its edition: more likely a wrong file than a withdrawal.
  if (lignes.size === 0) {
    throw new ImportError(`${fichier.chemin} : aucune commune lisible ; rien n’est importé.`);
  }
  const { rowCount, rows: retirees } = await client.query<{ insee: string }>(
    `DELETE FROM loyers_communes
      WHERE dataset = $1 AND edition = $2 AND type_logement = $3 AND NOT (insee = ANY ($4::text[]))
      RETURNING insee`,
    [dataset, fichier.edition, fichier.type, [...lignes.keys()]],
  );
  // The communes whose rents this file may have changed: those it gives, those it withdrew.
  for (const insee of lignes.keys()) communes.add(insee);
  for (const { insee } of retirees) communes.add(insee);
  report.details.push(
    `${fichier.nom} : ${LIBELLES_TYPES[fichier.type]}, édition ${fichier.edition} (lue dans ${fichier.editionLue}), disposition ${fichier.disposition}`,
    `  ${ligneEcriture('communes', report.gardes - gardesAvant, ecriture)}, ${rowCount ?? 0} retirées`,
  );
}

/**
 * Imports rent indicator files into `dataset`: each replaces its edition and type (rules in the comment at the top),
 * all in one transaction. Every file is identified before anything is written.
 */
export async function importLoyers(
  db: Db,
  sources: string | string[],
  options: DatasetImportOptions = {},
): Promise<ImportReport> {
  const dataset = options.dataset ?? 'live';
  const chemins = typeof sources === 'string' ? [sources] : sources;
  if (chemins.length === 0) throw new ImportError('aucun fichier d’indicateurs de loyers à importer.');
  const fichiers: Fichier[] = [];
  for (const chemin of chemins) {
    const fichier = await identifier(chemin);
    const meme = fichiers.find((f) => f.type === fichier.type && f.edition === fichier.edition);
    if (meme) {
      throw new ImportError(
        `${meme.chemin} et ${chemin} sont tous deux les ${LIBELLES_TYPES[fichier.type]} de l’édition ${fichier.edition} : un seul fichier par type et par édition.`,
      );
    }
    fichiers.push(fichier);
  }
  const { report, rejeter } = nouveauRapport(
    chemins.length === 1 ? chemins[0] : `${chemins.length} fichiers, de ${chemins[0]} à ${chemins.at(-1)}`,
  );
  const communes = new Set<string>();
  await transaction(db, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [VERROU, dataset]);
    for (const fichier of fichiers) {
      const rejeterDuFichier: Rejeter =
        fichiers.length === 1 ? rejeter : (ligne, motif) => rejeter(ligne, `${fichier.nom} : ${motif}`);
      await importerFichier(client, fichier, dataset, report, rejeterDuFichier, options.onProgress, communes);
    }
  });
  // Yields, cash-flows and the expected-price model of the Communes market read the rents (domain/marche/derives.ts).
  await reconstruireDerives(db, dataset);
  // So does the analysis of the listings of those communes (domain/annonces/reanalyse.ts).
  report.details.push(ligneReanalyse(await reanalyserCommunes(db, dataset, communes)));
  return report;
}

/** The `loyers` source of the importers' CLI. */
export const loyersSource = importSource(
  'loyers',
  'indicateurs de loyers par commune (carte des loyers) : un CSV par type de logement (pred-app-mef-dhup.csv, indicateurs-loyers-maisons.csv…), toutes éditions ; l’année dans le nom du fichier ou de son dossier (2018 : dite par la disposition) ; plusieurs fichiers ou un dossier en un import',
  importLoyers,
  /\.csv(\.gz)?$/i,
);
