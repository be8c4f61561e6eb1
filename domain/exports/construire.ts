import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { transaction, type Db } from '../../db/client.ts';
import { ecrireFichiers, TYPE_DUCKDB, type FichierEcrit, type FormatFichier } from '../../lib/parquet.ts';
import type { FileStorage } from '../../lib/storage.ts';
import { EDITIONS, sourceEdition, type ColonneExport, type JeuExport } from './editions.ts';

/**
 * Building an edition: its rows (those of its registry dataset, or of its own SELECT: sourceEdition) written by DuckDB
 * in each of its formats (one snapshot of the database for all of them), its data dictionary and its quality sheet,
 * its volume checked, its files stored through the storage of the documents (folder or bucket), and its rows recorded
 * in exports_editions. An edition whose volume is implausible is recorded `retenue` with its reason and never listed.
 */

export type Perimetre = 'contrat' | 'echantillon';

/** A fall of the row count beyond this share of the previous edition's holds the edition back. */
export const BAISSE_MAX = 0.5;

/** The storage prefix of the editions. */
export const EXPORTS_PREFIX = 'exports';

export const TYPES_CONTENU: Record<FormatFichier | 'json', string> = {
  parquet: 'application/vnd.apache.parquet',
  'csv.gz': 'application/gzip',
  json: 'application/json',
};

export interface ResultatEdition {
  jeu: JeuExport;
  date: string;
  perimetre: Perimetre;
  statut: 'listee' | 'retenue' | 'non_produite';
  raison: string | null;
  lignes: number | null;
  formats: Array<{ format: FormatFichier } & FichierEcrit>;
}

/** The storage key of a file of an edition. */
export const cleFichier = (perimetre: Perimetre, jeu: string, date: string, nom: string) =>
  `${EXPORTS_PREFIX}/${perimetre}/${jeu}/${date}/${nom}`;

export const nomDonnees = (format: FormatFichier) => `donnees.${format}`;

/** The day of an edition, AAAA-MM-JJ in UTC. */
export const jourEdition = (now: Date) => now.toISOString().slice(0, 10);

/** The dataset an edition reads: the live data for contracts, the frozen demonstration territory for the sample. */
const datasetDe = (perimetre: Perimetre) => (perimetre === 'contrat' ? 'live' : 'sandbox');

interface Qualite {
  lignes: number;
  nuls: Record<string, number>;
  periode: { colonne: string; de: string | null; a: string | null } | null;
}

/** Counts read back from the written file by DuckDB: the file's own row count, its nulls per column, its date range. */
async function qualiteDuFichier(
  fichier: string,
  colonnes: ColonneExport[],
  date: string | undefined,
): Promise<Qualite> {
  const instance = await DuckDBInstance.create(':memory:', { threads: '2', memory_limit: '256MB' });
  const duck = await instance.connect();
  try {
    const q = (nom: string) => `"${nom}"`;
    const nuls = colonnes.map((c, i) => `count(*) - count(${q(c.nom)}) AS n${i}`);
    const periode = date ? [`min(${q(date)})::VARCHAR AS de`, `max(${q(date)})::VARCHAR AS a`] : [];
    const reader = await duck.runAndReadAll(
      `SELECT count(*) AS lignes, ${[...nuls, ...periode].join(', ')} FROM read_parquet('${fichier.replaceAll("'", "''")}')`,
    );
    const row = reader.getRowObjectsJson()[0] as Record<string, string | number | null>;
    return {
      lignes: Number(row.lignes),
      nuls: Object.fromEntries(colonnes.map((c, i) => [c.nom, Number(row[`n${i}`])])),
      periode: date
        ? { colonne: date, de: (row.de as string | null) ?? null, a: (row.a as string | null) ?? null }
        : null,
    };
  } finally {
    duck.closeSync();
    instance.closeSync();
  }
}

/**
 * The volume check: an empty edition, one that holds more rows than its source, or one that fell by more than half
 * from the previous listed edition is held back, with its reason.
 */
export function controleVolume(
  lignes: number,
  lignesSource: number,
  precedente: { date: string; lignes: number } | null,
): string | null {
  if (lignes === 0) return 'Édition vide : la source n’a aucune ligne exportable.';
  if (lignes > lignesSource) return `Plus de lignes (${lignes}) que la source n’en a (${lignesSource}).`;
  if (precedente && precedente.lignes > 0 && lignes < precedente.lignes * (1 - BAISSE_MAX)) {
    const baisse = Math.round((1 - lignes / precedente.lignes) * 100);
    return `Volume en baisse de ${baisse} % sur l’édition du ${precedente.date} (${precedente.lignes} lignes, ${lignes} maintenant) : retenue jusqu’à vérification.`;
  }
  return null;
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const dateTexte = (v: unknown) => (v instanceof Date ? v.toISOString() : v === null || v === undefined ? null : v);

export interface ConstruireOptions {
  db: Db;
  storage: FileStorage;
  jeu: JeuExport;
  perimetre: Perimetre;
  now?: Date;
  /** Progress lines (the command prints them). */
  log?: (ligne: string) => void;
}

/** Builds, checks, stores and records one edition of `jeu` for `perimetre`, dated the day of `now`. */
export async function construireEdition(options: ConstruireOptions): Promise<ResultatEdition> {
  const { db, storage, jeu, perimetre, log = () => {} } = options;
  const now = options.now ?? new Date();
  const date = jourEdition(now);
  const declaree = EDITIONS.get(jeu)!;
  if (!declaree.produite) {
    return { jeu, date, perimetre, statut: 'non_produite', raison: declaree.raison, lignes: null, formats: [] };
  }
  const edition = declaree;
  const dataset = datasetDe(perimetre);
  const source = sourceEdition(edition, dataset);
  const travail = await mkdtemp(path.join(tmpdir(), `svc-export-${jeu}-`));
  try {
    // One snapshot for every format, the source count and the source dates: the files agree with each other.
    const { ecrits, lignesSource, datesSource } = await transaction(db, async (client) => {
      await client.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
      const started = performance.now();
      const sorties = edition.formats.map((format) => ({ format, fichier: path.join(travail, nomDonnees(format)) }));
      const fichiers = await ecrireFichiers({
        db: client,
        sql: source.select,
        params: source.params,
        colonnes: source.colonnes,
        sorties,
      });
      const ecrits = sorties.map((s, i) => ({ ...s, ...fichiers[i]! }));
      log(
        `${jeu} ${perimetre} ${edition.formats.join(' + ')} : ${ecrits[0]?.lignes ?? 0} lignes en ${Math.round(performance.now() - started)} ms`,
      );
      const lignesSource = Number((await client.query(source.compte, source.params)).rows[0].count);
      const datesSource = edition.datesSource
        ? Object.fromEntries(
            Object.entries((await client.query(edition.datesSource, [dataset])).rows[0] ?? {}).map(([k, v]) => [
              k,
              dateTexte(v),
            ]),
          )
        : null;
      return { ecrits, lignesSource, datesSource };
    });

    const parquet = ecrits.find((e) => e.format === 'parquet')!;
    const qualite = await qualiteDuFichier(parquet.fichier, source.colonnes, edition.colonneDate);
    const { rows: precedentes } = await db.query(
      `SELECT date::text AS date, lignes FROM exports_editions
        WHERE jeu = $1 AND perimetre = $2 AND format = 'parquet' AND statut = 'listee' AND date < $3
        ORDER BY date DESC LIMIT 1`,
      [jeu, perimetre, date],
    );
    const precedente = precedentes[0] ? { date: precedentes[0].date, lignes: Number(precedentes[0].lignes) } : null;
    let raison = controleVolume(parquet.lignes, lignesSource, precedente);
    // The file read back must hold every row the database sent, in every format.
    if (!raison && qualite.lignes !== parquet.lignes) {
      raison = `Le fichier relu contient ${qualite.lignes} lignes, la base en a envoyé ${parquet.lignes}.`;
    }
    if (!raison && ecrits.some((e) => e.lignes !== parquet.lignes)) {
      raison = 'Les formats de l’édition n’ont pas le même nombre de lignes.';
    }
    const statut = raison ? 'retenue' : 'listee';

    const dictionnaire = {
      jeu,
      titre: edition.titre,
      source: edition.source,
      perimetre,
      date,
      retrait_particuliers: source.retrait,
      colonnes: source.colonnes.map((c) => ({
        nom: c.nom,
        type: c.type,
        type_fichier: TYPE_DUCKDB[c.type],
        sens: c.sens,
      })),
    };
    const ficheQualite = {
      jeu,
      date,
      perimetre,
      lignes: parquet.lignes,
      lignes_source: lignesSource,
      lignes_retirees: Math.max(0, lignesSource - parquet.lignes),
      nuls_par_colonne: qualite.nuls,
      periode: qualite.periode,
      dates_source: datesSource,
      retrait_particuliers: source.retrait,
      controle: {
        statut,
        raison,
        edition_precedente: precedente,
        baisse_max_pct: BAISSE_MAX * 100,
      },
      fichiers: ecrits.map((e) => ({
        format: e.format,
        lignes: e.lignes,
        taille_octets: e.taille_octets,
        sha256: e.sha256,
      })),
      genere_le: now.toISOString(),
    };
    const octetsDictionnaire = Buffer.from(JSON.stringify(dictionnaire, null, 2));
    const octetsFiche = Buffer.from(JSON.stringify(ficheQualite, null, 2));
    const cleDictionnaire = cleFichier(perimetre, jeu, date, 'dictionnaire.json');
    const cleFiche = cleFichier(perimetre, jeu, date, 'fiche_qualite.json');

    // Files first, rows after: a listed edition always has its files (a failure in between leaves files unlisted).
    await storage.put(cleDictionnaire, octetsDictionnaire, TYPES_CONTENU.json);
    await storage.put(cleFiche, octetsFiche, TYPES_CONTENU.json);
    for (const e of ecrits) {
      const cle = cleFichier(perimetre, jeu, date, nomDonnees(e.format));
      if (storage.putFile) await storage.putFile(cle, e.fichier, TYPES_CONTENU[e.format]);
      else await storage.put(cle, await readFile(e.fichier), TYPES_CONTENU[e.format]);
    }
    for (const e of ecrits) {
      await db.query(
        `INSERT INTO exports_editions (jeu, date, format, perimetre, statut, raison, lignes, lignes_source, taille_octets,
           sha256, cle_donnees, cle_dictionnaire, cle_fiche_qualite, taille_dictionnaire, taille_fiche_qualite,
           sha256_dictionnaire, sha256_fiche_qualite, dictionnaire, fiche_qualite, genere_le)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)
         ON CONFLICT (jeu, date, format, perimetre) DO UPDATE SET statut = excluded.statut, raison = excluded.raison,
           lignes = excluded.lignes, lignes_source = excluded.lignes_source, taille_octets = excluded.taille_octets,
           sha256 = excluded.sha256, cle_donnees = excluded.cle_donnees, cle_dictionnaire = excluded.cle_dictionnaire,
           cle_fiche_qualite = excluded.cle_fiche_qualite, taille_dictionnaire = excluded.taille_dictionnaire,
           taille_fiche_qualite = excluded.taille_fiche_qualite, sha256_dictionnaire = excluded.sha256_dictionnaire,
           sha256_fiche_qualite = excluded.sha256_fiche_qualite, dictionnaire = excluded.dictionnaire,
           fiche_qualite = excluded.fiche_qualite, genere_le = excluded.genere_le`,
        [
          jeu,
          date,
          e.format,
          perimetre,
          statut,
          raison,
          e.lignes,
          lignesSource,
          e.taille_octets,
          e.sha256,
          cleFichier(perimetre, jeu, date, nomDonnees(e.format)),
          cleDictionnaire,
          cleFiche,
          octetsDictionnaire.byteLength,
          octetsFiche.byteLength,
          sha256(octetsDictionnaire),
          sha256(octetsFiche),
          JSON.stringify(dictionnaire),
          JSON.stringify(ficheQualite),
          now,
        ],
      );
    }
    log(`${jeu} ${perimetre} ${date} : ${statut}${raison ? ` (${raison})` : ''}`);
    return {
      jeu,
      date,
      perimetre,
      statut,
      raison,
      lignes: parquet.lignes,
      formats: ecrits.map(({ format, lignes, taille_octets, sha256 }) => ({ format, lignes, taille_octets, sha256 })),
    };
  } finally {
    await rm(travail, { recursive: true, force: true });
  }
}
