import { stat } from 'node:fs/promises';
import path from 'node:path';
import type { PoolClient } from 'pg';
import type { Db } from '../../db/client.ts';
import { upsert, type Table } from '../import/ecriture.ts';
import {
  ImportError,
  importSource,
  MAX_REJETS_LISTES,
  type Dataset,
  type DatasetImportOptions,
  type ImportReport,
} from '../import/source.ts';
import {
  aireDe,
  booleen,
  champ,
  emprise,
  empreinteDe,
  formatDe,
  fusionnerObjets,
  identifiant,
  lireCouche,
  lireTable,
  listerFichiers,
  nettoyerGeometrie,
  nomDeCouche,
  nombre,
  refusMapInfo,
  regrouperEnPaquets,
  texte,
  type Attributes,
  type Comptes,
  type Forme,
} from './couches.ts';
import { isoDate } from './zonage.ts';

/**
 * Importer of public-utility easements (servitudes d'utilité publique) in the CNIG SUP standard, 2013 to 2016b and
 * the Géoportail's downloads: per package, the tables SERVITUDE (the easement: category AC1, PM1, I4, T7..., names,
 * manager, dates), ACTE_SUP (the acts that institute them), SERVITUDE_ACTE_SUP (which act for which easement),
 * GESTIONNAIRE_SUP (the managing body), and the layers <CAT>_GENERATEUR_SUP_S/L/P (what generates the easement) and
 * <CAT>_ASSIETTE_SUP_S/L/P (the area it burdens), surfaces, lines or points.
 *
 * Packages differ: field names in upper, lower or camel case (`IDGEN`, `idgen`, `IdGen`), identifiers as numbers
 * (IDSUP 35.00, IdSup 35) or text (`Int1-213000896-1360`), DBFs with or without `.cpg`. Names are matched whatever
 * their case, identifiers read as text (35.00 is `35`), so that the joins hold. An assiette reaches its easement
 * through its generator (IDGEN), or its own IDSUP when its layer has one; its category is its easement's, else its
 * layer's field (`suptype`, `categorie`), else its layer's name (PM3_ASSIETTE_SUP_S), else the package's name.
 *
 * A package (`110068012_PM3_28_20161104`: manager's SIREN, category, territory, date) is keyed without its date: a
 * newer edition of a package replaces the older. Each package is merged in one transaction: what it holds replaces
 * what was stored under its key (rows upserted when they changed, rows it no longer has deleted), so importing it
 * again changes nothing.
 */

/** Files a folder gives the importer: tables, layers, and MapInfo layers (to refuse them). */
export const FICHIERS_SUP = /\.(shp|dbf|geojson|json|tab|mif)$/i;

/** `110068012_PM3_28_20161104`: the name of a SUP package (manager SIREN, category, territory, date). */
const NOM_LOT = /^(\d{9})_([A-Za-z0-9]+)_([A-Za-z0-9]+)_(\d{8})$/;

type CoucheSup = 'SERVITUDE_ACTE' | 'ACTE' | 'GESTIONNAIRE' | 'SERVITUDE' | 'GENERATEUR' | 'ASSIETTE';

const COUCHES: Array<[CoucheSup, RegExp]> = [
  ['SERVITUDE_ACTE', /(^|_)SERVITUDE_ACTE_SUP(_|$)/],
  ['ACTE', /(^|_)ACTE_SUP(_|$)/],
  ['GESTIONNAIRE', /(^|_)GESTIONNAIRE_SUP(_|$)/],
  ['SERVITUDE', /(^|_)SERVITUDE(_|$)/],
  ['GENERATEUR', /(^|_)GENERATEUR_SUP(_[SLP])?(_|$)/],
  ['ASSIETTE', /(^|_)ASSIETTE_SUP(_[SLP])?(_|$)/],
];

/** The SUP table or layer a file holds, from its name; null for any other file. */
export function coucheSup(fichier: string): CoucheSup | null {
  const nom = nomDeCouche(fichier);
  return COUCHES.find(([, motif]) => motif.test(nom))?.[0] ?? null;
}

/** The category a layer's name starts with (`PM3_ASSIETTE_SUP_S_028`, `INT1_GENERATEUR_SUP_S`). */
function categorieDuNom(fichier: string): string | null {
  return /^([A-Z]{1,4}\d{0,2}[A-Z]?)_(ASSIETTE|GENERATEUR)_/.exec(nomDeCouche(fichier))?.[1] ?? null;
}

function categorie(value: unknown): string | null {
  return texte(value)?.toUpperCase().replace(/\s+/g, '') ?? null;
}

interface Lot {
  racine: string;
  /** The folder or file it was read from, as named. */
  dossier: string;
  lot: string;
  gestionnaire: string | null;
  categorie: string | null;
  territoire: string | null;
  date: string | null;
  tous: string[];
  couches: Map<CoucheSup, string[]>;
}

async function planifier(chemins: string[]): Promise<Lot[]> {
  const donnes: string[] = [];
  for (const chemin of chemins) {
    const info = await stat(chemin).catch(() => null);
    if (!info) throw new ImportError(`chemin introuvable : ${path.resolve(chemin)}`);
    if (info.isDirectory()) donnes.push(...(await listerFichiers(chemin)).filter((f) => FICHIERS_SUP.test(f)));
    else donnes.push(path.resolve(chemin));
  }
  const lots: Lot[] = [];
  for (const [racine, fichiers] of regrouperEnPaquets(donnes, (nom) => NOM_LOT.test(nom))) {
    const tous = await listerFichiers(racine).catch(() => fichiers);
    // A lone layer file (a download of the Géoportail) is a package of its own, named after it.
    const seul = donnes.length === 1 && !NOM_LOT.test(path.basename(racine));
    const dossier = seul ? nomDeCouche(fichiers[0]) : path.basename(racine);
    const nom = NOM_LOT.exec(dossier);
    const lot: Lot = {
      racine,
      dossier,
      lot: nom ? `${nom[1]}_${nom[2].toUpperCase()}_${nom[3].toUpperCase()}` : dossier,
      gestionnaire: nom?.[1] ?? null,
      categorie: nom ? nom[2].toUpperCase() : null,
      territoire: nom ? nom[3].toUpperCase() : null,
      date: nom ? isoDate(nom[4]) : null,
      tous,
      couches: new Map(),
    };
    const mapinfo: string[] = [];
    // A layer published both as a shapefile and as GeoJSON is read once, from the shapefile.
    const shapefiles = new Set(fichiers.filter((f) => formatDe(f, tous) === 'shapefile').map(nomDeCouche));
    for (const fichier of fichiers) {
      const format = formatDe(fichier, tous);
      const couche = coucheSup(fichier);
      if (!couche || format === 'autre') continue;
      if (format === 'geojson' && shapefiles.has(nomDeCouche(fichier))) continue;
      if (format === 'mapinfo') {
        mapinfo.push(fichier);
        continue;
      }
      const table = couche !== 'GENERATEUR' && couche !== 'ASSIETTE';
      if (table !== (format === 'dbf')) continue;
      lot.couches.set(couche, [...(lot.couches.get(couche) ?? []), fichier]);
    }
    const manquantes = mapinfo.filter((f) => !lot.couches.has(coucheSup(f)!));
    if (manquantes.length > 0) throw refusMapInfo(racine, manquantes);
    if (lot.couches.size > 0) lots.push(lot);
  }
  if (lots.length === 0) {
    throw new ImportError(
      `aucune table ni couche du standard SUP (SERVITUDE, ACTE_SUP, *_GENERATEUR_SUP_*, *_ASSIETTE_SUP_*) dans ${chemins.join(', ')}`,
    );
  }
  return lots;
}

// ---------------------------------------------------------------------------------------------------------------------
// Tables.
// ---------------------------------------------------------------------------------------------------------------------

const SERVITUDES: Table = {
  nom: 'sup_servitudes',
  colonnes: [
    ['dataset', 'text'],
    ['lot', 'text'],
    ['idsup', 'text'],
    ['categorie', 'text'],
    ['nomsup', 'text'],
    ['nomsuplitt', 'text'],
    ['descriptio', 'text'],
    ['idgest', 'text'],
    ['gestionnaire', 'text'],
    ['idintgest', 'text'],
    ['datemaj', 'date'],
    ['echnum', 'integer'],
    ['validegest', 'boolean'],
    ['estabroge', 'boolean'],
    ['modeprod', 'text'],
    ['quiprod', 'text'],
    ['docsource', 'text'],
  ],
  cle: ['dataset', 'lot', 'idsup'],
  horodatage: 'maj_le',
};

const ACTES: Table = {
  nom: 'sup_actes',
  colonnes: [
    ['dataset', 'text'],
    ['lot', 'text'],
    ['idacte', 'text'],
    ['nomacte', 'text'],
    ['reference', 'text'],
    ['typeacte', 'text'],
    ['fichier', 'text'],
    ['decision', 'text'],
    ['datedecis', 'date'],
    ['datepub', 'date'],
    ['aplan', 'boolean'],
  ],
  cle: ['dataset', 'lot', 'idacte'],
  horodatage: 'maj_le',
};

const LOTS: Table = {
  nom: 'sup_lots',
  colonnes: [
    ['dataset', 'text'],
    ['lot', 'text'],
    ['dossier', 'text'],
    ['gestionnaire_siren', 'text'],
    ['categorie', 'text'],
    ['territoire', 'text'],
    ['date_lot', 'date'],
  ],
  cle: ['dataset', 'lot'],
  horodatage: 'maj_le',
};

const BBOX = 'bbox_xmin float8, bbox_ymin float8, bbox_xmax float8, bbox_ymax float8';
const CHAMPS_GENERATEURS = `seq int, lot text, empreinte text, idgen text, idsup text, categorie text, nomgen text,
  typegen text, modegenere text, srcgeogen text, datesrcgen text, refbdext text, idbdext text, forme text,
  geometrie jsonb, ${BBOX}, aire_m2 float8`;
const CHAMPS_ASSIETTES = `seq int, lot text, empreinte text, idass text, idgen text, idsup text, categorie text,
  nomass text, typeass text, modegeoass text, paramcalc float8, srcgeoass text, datesrcass text, forme text,
  geometrie jsonb, ${BBOX}, aire_m2 float8`;
const COLONNES_GENERATEURS = [
  'idgen',
  'idsup',
  'categorie',
  'nomgen',
  'typegen',
  'modegenere',
  'srcgeogen',
  'datesrcgen',
  'refbdext',
  'idbdext',
] as const;
const COLONNES_ASSIETTES = [
  'idass',
  'idgen',
  'idsup',
  'categorie',
  'nomass',
  'typeass',
  'modegeoass',
  'paramcalc',
  'srcgeoass',
  'datesrcass',
] as const;

const LOT_ECRITURE = 1000;
const MAX_OCTETS_PAR_LOT = 8_000_000;
// Packages of a dataset are merged one at a time.
const VERROU = 726_354_034;

interface Lecture {
  servitudes: Map<string, Record<string, unknown>>;
  actes: Map<string, Record<string, unknown>>;
  liens: Set<string>;
  /** IDGEN -> its easement and category, for the assiettes. */
  generateurs: Map<string, { idsup: string | null; categorie: string | null }>;
  formes: Record<'generateur' | 'assiette', Record<Forme, number>>;
  categories: Map<string, number>;
}

/** Reads a package: its tables into memory, its layers into the staging tables. */
async function lire(
  client: PoolClient,
  lot: Lot,
  dataset: Dataset,
  report: ImportReport,
  onProgress: DatasetImportOptions['onProgress'],
): Promise<Lecture> {
  const rejeter = (fichier: string, ligne: number, motif: string) => {
    if (report.rejetes.length < MAX_REJETS_LISTES) {
      report.rejetes.push({ ligne, motif: `${path.basename(fichier)} : ${motif}` });
    }
  };
  const lecture: Lecture = {
    servitudes: new Map(),
    actes: new Map(),
    liens: new Set(),
    generateurs: new Map(),
    formes: { generateur: { surface: 0, ligne: 0, point: 0 }, assiette: { surface: 0, ligne: 0, point: 0 } },
    categories: new Map(),
  };
  const gestionnaires = new Map<string, string>();
  for (const fichier of lot.couches.get('GESTIONNAIRE') ?? []) {
    for await (const { ligne, proprietes: p } of lireTable(fichier, lot.tous)) {
      report.lus++;
      const id = identifiant(p.idgest);
      const nom = texte(p.nomgest);
      if (!id || !nom) {
        rejeter(fichier, ligne, id ? 'NOMGEST absent' : 'IDGEST absent');
        continue;
      }
      report.gardes++;
      gestionnaires.set(id, nom);
    }
  }
  for (const fichier of lot.couches.get('SERVITUDE') ?? []) {
    for await (const { ligne, proprietes: p } of lireTable(fichier, lot.tous)) {
      report.lus++;
      const idsup = identifiant(p.idsup);
      if (!idsup) {
        rejeter(fichier, ligne, 'IDSUP absent');
        continue;
      }
      if (lecture.servitudes.has(idsup)) {
        rejeter(fichier, ligne, `IDSUP ${idsup} déjà lu`);
        continue;
      }
      const idgest = identifiant(p.idgest);
      const echnum = nombre(p.echnum);
      report.gardes++;
      lecture.servitudes.set(idsup, {
        dataset,
        lot: lot.lot,
        idsup,
        categorie: categorie(p.categorie) ?? categorie(p.suptype) ?? lot.categorie,
        nomsup: texte(p.nomsup),
        nomsuplitt: texte(champ(p, 'nomsuplitt', 'nomsupcour')),
        descriptio: texte(champ(p, 'descriptio', 'description')),
        idgest,
        gestionnaire: (idgest && gestionnaires.get(idgest)) ?? null,
        idintgest: texte(p.idintgest),
        datemaj: isoDate(p.datemaj),
        echnum: echnum === null ? null : Math.round(echnum),
        validegest: booleen(p.validegest),
        estabroge: booleen(p.estabroge),
        modeprod: texte(p.modeprod),
        quiprod: texte(p.quiprod),
        docsource: texte(p.docsource),
      });
    }
  }
  for (const fichier of lot.couches.get('ACTE') ?? []) {
    for await (const { ligne, proprietes: p } of lireTable(fichier, lot.tous)) {
      report.lus++;
      const idacte = identifiant(p.idacte);
      if (!idacte) {
        rejeter(fichier, ligne, 'IDACTE absent');
        continue;
      }
      if (lecture.actes.has(idacte)) {
        rejeter(fichier, ligne, `IDACTE ${idacte} déjà lu`);
        continue;
      }
      report.gardes++;
      lecture.actes.set(idacte, {
        dataset,
        lot: lot.lot,
        idacte,
        nomacte: texte(p.nomacte),
        reference: texte(p.reference),
        typeacte: texte(p.typeacte),
        fichier: texte(p.fichier),
        decision: texte(p.decision),
        datedecis: isoDate(p.datedecis),
        datepub: isoDate(p.datepub),
        aplan: booleen(p.aplan),
      });
    }
  }
  for (const fichier of lot.couches.get('SERVITUDE_ACTE') ?? []) {
    for await (const { ligne, proprietes: p } of lireTable(fichier, lot.tous)) {
      report.lus++;
      const idsup = identifiant(p.idsup);
      const idacte = identifiant(p.idacte);
      if (!idsup || !idacte) {
        rejeter(fichier, ligne, idsup ? 'IDACTE absent' : 'IDSUP absent');
        continue;
      }
      report.gardes++;
      lecture.liens.add(`${idsup}\u0000${idacte}`);
    }
  }

  let seq = 0;
  for (const couche of ['GENERATEUR', 'ASSIETTE'] as const) {
    const staging = couche === 'GENERATEUR' ? 'sup_generateurs_lot' : 'sup_assiettes_lot';
    const champs = couche === 'GENERATEUR' ? CHAMPS_GENERATEURS : CHAMPS_ASSIETTES;
    let paquet: object[] = [];
    let octets = 0;
    const vider = async () => {
      if (paquet.length === 0) return;
      await client.query(`INSERT INTO pg_temp.${staging} SELECT * FROM jsonb_to_recordset($1::jsonb) AS r(${champs})`, [
        JSON.stringify(paquet),
      ]);
      paquet = [];
      octets = 0;
      onProgress?.({ lus: report.lus, gardes: report.gardes });
    };
    for (const fichier of lot.couches.get(couche) ?? []) {
      const duNom = categorieDuNom(fichier);
      for await (const objet of lireCouche(fichier, lot.tous)) {
        report.lus++;
        if ('motif' in objet) {
          rejeter(fichier, objet.ligne, objet.motif);
          continue;
        }
        const p: Attributes = objet.proprietes;
        const lue = nettoyerGeometrie(objet.geometrie, objet.reprojection);
        if (typeof lue === 'string') {
          rejeter(fichier, objet.ligne, lue);
          continue;
        }
        const idgen = identifiant(p.idgen);
        const generateur = idgen ? lecture.generateurs.get(idgen) : undefined;
        const idsup = identifiant(p.idsup) ?? generateur?.idsup ?? null;
        const servitude = idsup ? lecture.servitudes.get(idsup) : undefined;
        const cat =
          (servitude?.categorie as string | null | undefined) ??
          generateur?.categorie ??
          categorie(champ(p, 'suptype', 'categorie', 'typesup')) ??
          duNom ??
          lot.categorie;
        const b = emprise(lue.geometrie);
        const geometrie = {
          empreinte: empreinteDe(lue.geometrie),
          forme: lue.forme,
          geometrie: lue.geometrie,
          bbox_xmin: b.xmin,
          bbox_ymin: b.ymin,
          bbox_xmax: b.xmax,
          bbox_ymax: b.ymax,
          aire_m2: aireDe(lue.geometrie),
        };
        if (couche === 'GENERATEUR') {
          if (idgen && !lecture.generateurs.has(idgen)) lecture.generateurs.set(idgen, { idsup, categorie: cat });
          paquet.push({
            seq: ++seq,
            lot: lot.lot,
            idgen,
            idsup,
            categorie: cat,
            nomgen: texte(p.nomgen),
            typegen: texte(p.typegen),
            modegenere: texte(p.modegenere),
            srcgeogen: texte(p.srcgeogen),
            datesrcgen: texte(p.datesrcgen),
            refbdext: texte(p.refbdext),
            idbdext: texte(p.idbdext),
            ...geometrie,
          });
        } else {
          paquet.push({
            seq: ++seq,
            lot: lot.lot,
            idass: identifiant(p.idass),
            idgen,
            idsup,
            categorie: cat,
            nomass: texte(p.nomass),
            typeass: texte(p.typeass),
            modegeoass: texte(p.modegeoass),
            paramcalc: nombre(p.paramcalc),
            srcgeoass: texte(p.srcgeoass),
            datesrcass: texte(p.datesrcass),
            ...geometrie,
          });
          if (cat) lecture.categories.set(cat, (lecture.categories.get(cat) ?? 0) + 1);
        }
        report.gardes++;
        lecture.formes[couche === 'GENERATEUR' ? 'generateur' : 'assiette'][lue.forme]++;
        octets += JSON.stringify(lue.geometrie.coordinates).length;
        if (paquet.length >= LOT_ECRITURE || octets >= MAX_OCTETS_PAR_LOT) await vider();
      }
    }
    await vider();
  }
  return lecture;
}

// ---------------------------------------------------------------------------------------------------------------------
// Merge.
// ---------------------------------------------------------------------------------------------------------------------

async function remplacerTable(
  client: PoolClient,
  table: Table,
  lot: string,
  dataset: Dataset,
  lignes: Array<Record<string, unknown>>,
  cle: string,
): Promise<Comptes> {
  const comptes: Comptes = { ajoutees: 0, modifiees: 0, inchangees: 0, supprimees: 0 };
  for (let i = 0; i < lignes.length; i += LOT_ECRITURE) {
    const e = await upsert(client, table, lignes.slice(i, i + LOT_ECRITURE));
    comptes.ajoutees += e.ajoutees;
    comptes.modifiees += e.modifiees;
  }
  comptes.inchangees = lignes.length - comptes.ajoutees - comptes.modifiees;
  const { rowCount } = await client.query(
    `DELETE FROM ${table.nom} WHERE dataset = $1 AND lot = $2 AND NOT (${cle} = ANY ($3::text[]))`,
    [dataset, lot, lignes.map((l) => l[cle])],
  );
  comptes.supprimees = rowCount ?? 0;
  return comptes;
}

function resume(label: string, c: Comptes): string {
  return `${label} ${c.ajoutees + c.modifiees + c.inchangees} (${c.ajoutees} ajoutés, ${c.modifiees} modifiés, ${c.inchangees} inchangés, ${c.supprimees} supprimés)`;
}

function formes(f: Record<Forme, number>): string {
  return `${f.surface} surfaces, ${f.ligne} lignes, ${f.point} points`;
}

async function importerLot(
  db: Db,
  lot: Lot,
  dataset: Dataset,
  report: ImportReport,
  onProgress: DatasetImportOptions['onProgress'],
): Promise<void> {
  const client = await db.connect();
  try {
    await client.query('DROP TABLE IF EXISTS pg_temp.sup_generateurs_lot, pg_temp.sup_assiettes_lot');
    await client.query(`CREATE TEMP TABLE sup_generateurs_lot (${CHAMPS_GENERATEURS}, cle text)`);
    await client.query(`CREATE TEMP TABLE sup_assiettes_lot (${CHAMPS_ASSIETTES}, cle text)`);
    const lecture = await lire(client, lot, dataset, report, onProgress);
    await client.query('BEGIN');
    try {
      await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [VERROU, dataset]);
      await upsert(client, LOTS, [
        {
          dataset,
          lot: lot.lot,
          dossier: lot.dossier,
          gestionnaire_siren: lot.gestionnaire,
          categorie: lot.categorie,
          territoire: lot.territoire,
          date_lot: lot.date,
        },
      ]);
      const servitudes = await remplacerTable(
        client,
        SERVITUDES,
        lot.lot,
        dataset,
        [...lecture.servitudes.values()],
        'idsup',
      );
      const actes = await remplacerTable(client, ACTES, lot.lot, dataset, [...lecture.actes.values()], 'idacte');
      const liens = [...lecture.liens].map((l) => l.split('\u0000'));
      await client.query(
        `INSERT INTO sup_servitudes_actes (dataset, lot, idsup, idacte)
         SELECT $1, $2, e ->> 0, e ->> 1 FROM jsonb_array_elements($3::jsonb) AS e
         ON CONFLICT DO NOTHING`,
        [dataset, lot.lot, JSON.stringify(liens)],
      );
      await client.query(
        `DELETE FROM sup_servitudes_actes s
          WHERE s.dataset = $1 AND s.lot = $2
            AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements($3::jsonb) AS e
                             WHERE e ->> 0 = s.idsup AND e ->> 1 = s.idacte)`,
        [dataset, lot.lot, JSON.stringify(liens)],
      );
      const portee = { colonne: 'lot', valeurs: [lot.lot] };
      const generateurs = await fusionnerObjets(client, dataset, {
        staging: 'sup_generateurs_lot',
        cible: 'sup_generateurs',
        partition: ['lot'],
        colonnes: COLONNES_GENERATEURS,
        extra: ['forme'],
        portee,
      });
      const assiettes = await fusionnerObjets(client, dataset, {
        staging: 'sup_assiettes_lot',
        cible: 'sup_assiettes',
        partition: ['lot'],
        colonnes: COLONNES_ASSIETTES,
        extra: ['forme'],
        portee,
      });
      await client.query('COMMIT');
      const categories = [...lecture.categories].sort(([a], [b]) => a.localeCompare(b));
      report.details.push(
        `paquet ${lot.dossier} (clé ${lot.lot}) : catégories ${categories.length ? categories.map(([c, n]) => `${c} (${n} assiettes)`).join(', ') : 'aucune assiette'}`,
        `  ${resume('servitudes', servitudes)} ; ${resume('actes', actes)} ; liens servitude-acte ${liens.length}`,
        `  ${resume(`générateurs (${formes(lecture.formes.generateur)})`, generateurs)}`,
        `  ${resume(`assiettes (${formes(lecture.formes.assiette)})`, assiettes)}`,
      );
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    }
  } finally {
    await client.query('DROP TABLE IF EXISTS pg_temp.sup_generateurs_lot, pg_temp.sup_assiettes_lot').catch(() => {});
    client.release();
  }
}

/**
 * Imports the SUP packages of `chemins` (package folders, folders of packages, files) into the dataset, one
 * transaction per package. Throws an ImportError before writing anything when a path is missing, nothing of the
 * standard is found, or a package is in MapInfo format; a row or feature that cannot be read is only rejected.
 */
export async function importSup(
  db: Db,
  chemins: string | string[],
  options: DatasetImportOptions = {},
): Promise<ImportReport> {
  const liste = Array.isArray(chemins) ? chemins : [chemins];
  const lots = await planifier(liste);
  const source = lots.map((l) => l.racine).join(' ');
  const report: ImportReport = { source, lus: 0, gardes: 0, rejetes: [], details: [] };
  for (const lot of lots) await importerLot(db, lot, options.dataset ?? 'live', report, options.onProgress);
  options.onProgress?.({ lus: report.lus, gardes: report.gardes });
  return report;
}

/** The `sup` source of the importers' CLI. */
export const supSource = importSource(
  'sup',
  'servitudes d’utilité publique (standard CNIG SUP) : SERVITUDE, ACTE_SUP, SERVITUDE_ACTE_SUP, GESTIONNAIRE_SUP, <CAT>_GENERATEUR_SUP_*, <CAT>_ASSIETTE_SUP_* en shapefile ou GeoJSON ; dossiers, fichiers, motifs',
  importSup,
  FICHIERS_SUP,
);
