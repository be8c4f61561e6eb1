import { stat } from 'node:fs/promises';
import path from 'node:path';
import type { PoolClient } from 'pg';
import type { Db } from '../../db/client.ts';
import {
  ImportError,
  MAX_REJETS_LISTES,
  type Dataset,
  type ImportReport,
  type ImportSource,
} from '../import/source.ts';
import {
  aireDe,
  codeNomenclature,
  emprise,
  empreinteDe,
  formatDe,
  lireCouche,
  lireTable,
  listerFichiers,
  nettoyerGeometrie,
  nomDeCouche,
  refusMapInfo,
  regrouperEnPaquets,
  fusionnerObjets,
  texte,
  type Attributes,
  type Comptes,
  type Forme,
  type GeometrieObjet,
} from './couches.ts';
import {
  documentRow,
  documentsDesZones,
  ecrireDocuments,
  fusionnerZones,
  normaliserBaseUrl,
  preparerZonage,
  verrouillerFusion,
  type ZonageImportReport,
} from './zonage-import.ts';
import { inseeOfIdurba, isoDate, pageOfReference } from './zonage.ts';

/**
 * Importer of the whole upload package of a planning document (CNIG standard, Géoportail de l'Urbanisme), of any
 * year of the standard: DOC_URBA (the document: type, state, dates, files, site), ZONE_URBA (zones_urbanisme, by
 * zonage-import.ts), SECTEUR_CC (the sectors of a communal map), PRESCRIPTION_SURF/LIN/PCT and INFO_SURF/LIN/PCT
 * (surcharges_urbanisme), DOC_URBA_COM (the communes of a PLUi). Layers are shapefiles (in the coordinate system their
 * .prj declares, their DBF in the encoding of their .cpg or of their bytes) or GeoJSON; a package in MapInfo format is
 * refused with the ogr2ogr command that converts it. Layers are found by name whatever the prefix, suffix and case
 * (`30014_PRESCRIPTION_SURF_20171013.shp`, `SECTEUR_CC.shp`, `prescription_lin.geojson`); HABILLAGE layers (map
 * dressing) are not imported. Any layer may be missing.
 *
 * Which document a feature belongs to: its IDURBA; else the package's document (the single one of DOC_URBA, else of
 * DOC_URBA_COM, else the package folder's name when it is an IDURBA, `30014_PLU_20171013`); else, in the 2013 layout
 * whose layers carry INSEE and DATAPPRO, `<INSEE>_<DATAPPRO>`, the IDURBA of that layout. A feature whose IDURBA
 * names another document of the same commune or EPCI than the package's single one (a typing error of its date: real
 * packages have them) is attached to the package's document, and the report says how many were.
 *
 * Each package is merged in one transaction: its documents, then for each kind of layer it brings (zones, sectors,
 * prescriptions, information), the rows of its documents are replaced by the package's (upserted on a natural key:
 * the geometry's hash and its rank among identical ones; rows no longer in the package deleted); a kind of layer the
 * package does not bring is left as it is. Importing the same package again changes nothing.
 */

/** Files a folder gives the importer: the layers and tables of a package, and MapInfo layers (to refuse them). */
export const FICHIERS_GPU = /\.(shp|dbf|geojson|json|tab|mif)$/i;

type Couche = 'DOC_URBA_COM' | 'DOC_URBA' | 'ZONE_URBA' | 'SECTEUR_CC' | 'PRESCRIPTION' | 'INFO' | 'HABILLAGE';

const COUCHES: Array<[Couche, RegExp]> = [
  ['DOC_URBA_COM', /(^|_)DOC(UMENT)?_URBA_COM(_|$)/],
  ['DOC_URBA', /(^|_)DOC(UMENT)?_URBA(_|$)/],
  ['ZONE_URBA', /(^|_)ZONE_URBA(_|$)/],
  ['SECTEUR_CC', /(^|_)SECTEUR_CC(_|$)/],
  ['PRESCRIPTION', /(^|_)PRESCRIPTION_(SURF|LIN|PCT)(_|$)/],
  ['INFO', /(^|_)INFO(RMATION)?_(SURF|LIN|PCT)(_|$)/],
  ['HABILLAGE', /(^|_)HABILLAGE_/],
];

/** The layer of prescriptions or information a file holds, as the standard names it: PRESCRIPTION_SURF, INFO_PCT. */
function coucheSurcharge(fichier: string): string | null {
  const m = /(^|_)(PRESCRIPTION|INFO)(RMATION)?_(SURF|LIN|PCT)(_|$)/.exec(nomDeCouche(fichier));
  return m ? `${m[2]}_${m[4]}` : null;
}

/** The CNIG layer a file holds, from its name; null for a file of no known layer. */
export function coucheGpu(fichier: string): Couche | null {
  const nom = nomDeCouche(fichier);
  return COUCHES.find(([, motif]) => motif.test(nom))?.[0] ?? null;
}

/** `30014_PLU_20171013`, `241800432_PLUi_20200128`, `50545_CC_20130902_A`: the name of an upload package. */
const NOM_PAQUET = /^(\d[\dAB]\d{3}|\d{9})_([A-Za-z]+)_(\d{8})(_[A-Za-z0-9]+)?$/;

export interface GpuImportOptions {
  dataset?: Dataset;
  /** Where the documents' files are published: a NOMFIC becomes baseUrl + NOMFIC (see zonage-import.ts). */
  baseUrl?: string;
  batchSize?: number;
  onProgress?: (progress: { lus: number; gardes: number }) => void;
}

interface Paquet {
  racine: string;
  nom: string;
  /** Every file under the root: the siblings (.prj, .cpg) of the layers. */
  tous: string[];
  couches: Map<Couche, string[]>;
  mapinfo: string[];
  ignores: string[];
}

/** The packages of the given files and folders: grouped, classified, MapInfo ones refused before anything is read. */
async function planifier(chemins: string[]): Promise<Paquet[]> {
  const donnes: string[] = [];
  for (const chemin of chemins) {
    const info = await stat(chemin).catch(() => null);
    if (!info) throw new ImportError(`chemin introuvable : ${path.resolve(chemin)}`);
    if (info.isDirectory()) donnes.push(...(await listerFichiers(chemin)).filter((f) => FICHIERS_GPU.test(f)));
    else donnes.push(path.resolve(chemin));
  }
  const estNomDePaquet = (nom: string) => NOM_PAQUET.test(nom);
  const groupes = regrouperEnPaquets(donnes, estNomDePaquet);
  const paquets: Paquet[] = [];
  for (const [racine, fichiers] of groupes) {
    const tous = await listerFichiers(racine).catch(() => fichiers);
    const paquet: Paquet = { racine, nom: path.basename(racine), tous, couches: new Map(), mapinfo: [], ignores: [] };
    // The package's tables describe its documents whichever of its layers were given (`gpu …/ZONE_URBA.shp`).
    const siens = regrouperEnPaquets(tous, estNomDePaquet).get(racine) ?? [];
    const tables = siens.filter(
      (f) => !fichiers.includes(f) && formatDe(f, tous) === 'dbf' && /^DOC_URBA/.test(coucheGpu(f) ?? ''),
    );
    // A layer published both as a shapefile and as GeoJSON is read once, from the shapefile.
    const formats = new Map<string, string>();
    for (const f of fichiers) {
      const format = formatDe(f, tous);
      if (format === 'shapefile' || !formats.has(nomDeCouche(f))) formats.set(nomDeCouche(f), format);
    }
    for (const fichier of [...fichiers, ...tables]) {
      const format = formatDe(fichier, tous);
      if (format === 'autre' || (format === 'geojson' && formats.get(nomDeCouche(fichier)) === 'shapefile')) continue;
      const couche = coucheGpu(fichier);
      if (format === 'mapinfo') {
        if (couche && couche !== 'HABILLAGE') paquet.mapinfo.push(fichier);
        continue;
      }
      // A lone file of no known name, given alone, is a ZONE_URBA layer (what `import -- gpu zones.geojson` did).
      const lue = couche ?? (donnes.length === 1 && format !== 'dbf' ? 'ZONE_URBA' : null);
      if (!lue || lue === 'HABILLAGE' || (format === 'dbf') !== (lue === 'DOC_URBA' || lue === 'DOC_URBA_COM')) {
        paquet.ignores.push(fichier);
        continue;
      }
      paquet.couches.set(lue, [...(paquet.couches.get(lue) ?? []), fichier]);
    }
    // A layer in MapInfo only: the package cannot be read whole.
    const manquantes = paquet.mapinfo.filter((f) => !paquet.couches.has(coucheGpu(f)!));
    if (manquantes.length > 0) throw refusMapInfo(racine, manquantes);
    paquets.push(paquet);
  }
  return paquets;
}

// ---------------------------------------------------------------------------------------------------------------------
// Staging.
// ---------------------------------------------------------------------------------------------------------------------

const BBOX = 'bbox_xmin float8, bbox_ymin float8, bbox_xmax float8, bbox_ymax float8';
const CHAMPS_SURCHARGES = `seq int, idurba text, nature text, couche text, empreinte text, libelle text, txt text, type text,
  sous_type text, nomfic text, urlfic text, fichier_url text, fichier_page int, insee text, datvalid date, forme text,
  geometrie jsonb, ${BBOX}, aire_m2 float8`;
const CHAMPS_SECTEURS = `seq int, idurba text, empreinte text, libelle text, typesect text, fermreco text,
  destdomi text, nomfic text, urlfic text, fichier_url text, insee text, datappro date, datvalid date, geometrie jsonb,
  ${BBOX}, aire_m2 float8`;
const COLONNES_SURCHARGES = [
  'libelle',
  'txt',
  'type',
  'sous_type',
  'nomfic',
  'urlfic',
  'fichier_url',
  'fichier_page',
  'insee',
  'datvalid',
] as const;
const COLONNES_SECTEURS = [
  'libelle',
  'typesect',
  'fermreco',
  'destdomi',
  'nomfic',
  'urlfic',
  'fichier_url',
  'insee',
  'datappro',
  'datvalid',
] as const;

const MAX_OCTETS_PAR_LOT = 8_000_000;

function resoudre(reference: string | null, baseUrl: string | undefined): string | null {
  if (!reference) return null;
  if (/^https?:\/\//i.test(reference)) return reference;
  if (!baseUrl) return null;
  try {
    return new URL(reference, baseUrl).toString();
  } catch {
    return null;
  }
}

function geometrieEtBoite(geometrie: GeometrieObjet) {
  const b = emprise(geometrie);
  return {
    empreinte: empreinteDe(geometrie),
    geometrie,
    bbox_xmin: b.xmin,
    bbox_ymin: b.ymin,
    bbox_xmax: b.xmax,
    bbox_ymax: b.ymax,
    aire_m2: aireDe(geometrie),
  };
}

/** The AAAAMMJJ of a date, for the IDURBA of the 2013 layout. */
function aaaammjj(value: unknown): string | null {
  return isoDate(value)?.replaceAll('-', '') ?? null;
}

interface EtatPaquet {
  paquet: Paquet;
  docUrba: Map<string, Attributes>;
  docUrbaCom: Array<{ idurba: string; insee: string }>;
  defaut: string | null;
  typeDuNom: string | null;
  /** Features whose IDURBA was another document of the package's commune, by that IDURBA. */
  rattaches: Map<string, number>;
  /** (idurba, insee) read in the layers' INSEE fields. */
  communesDesCouches: Set<string>;
  /** datvalid max per document, over sectors and surcharges. */
  datvalid: Map<string, string>;
  formes: Record<'prescription' | 'information' | 'secteur', Record<Forme, number>>;
}

/** DOC_URBA rows by IDURBA: a document may come on several rows (one per reference map), the first value given wins. */
async function lireDocUrba(fichiers: string[], tous: string[]): Promise<Map<string, Attributes>> {
  const documents = new Map<string, Attributes>();
  for (const fichier of fichiers) {
    for await (const { proprietes } of lireTable(fichier, tous)) {
      const idurba = texte(proprietes.idurba);
      if (!idurba) continue;
      const connu = documents.get(idurba) ?? {};
      for (const [k, v] of Object.entries(proprietes)) if (connu[k] == null && v != null) connu[k] = v;
      documents.set(idurba, connu);
    }
  }
  return documents;
}

async function lireDocUrbaCom(fichiers: string[], tous: string[]): Promise<Array<{ idurba: string; insee: string }>> {
  const liens: Array<{ idurba: string; insee: string }> = [];
  for (const fichier of fichiers) {
    for await (const { proprietes } of lireTable(fichier, tous)) {
      const idurba = texte(proprietes.idurba);
      const insee = texte(proprietes.insee)?.padStart(5, '0').toUpperCase();
      if (idurba && insee && /^\d[\dAB]\d{3}$/.test(insee)) liens.push({ idurba, insee });
    }
  }
  return liens;
}

/**
 * Reads the layers other than ZONE_URBA into the staging tables; returns what the merge needs. Rejected features go
 * into the report with their layer's file name.
 */
async function preparerCouches(
  client: PoolClient,
  etat: EtatPaquet,
  report: ImportReport,
  options: { baseUrl?: string; batchSize: number; onProgress?: GpuImportOptions['onProgress'] },
): Promise<void> {
  const { paquet } = etat;
  const rejeter = (fichier: string, ligne: number, motif: string) => {
    if (report.rejetes.length < MAX_REJETS_LISTES)
      report.rejetes.push({ ligne, motif: `${path.basename(fichier)} : ${motif}` });
  };
  let seq = 0;
  for (const couche of ['SECTEUR_CC', 'PRESCRIPTION', 'INFO'] as const) {
    const table = couche === 'SECTEUR_CC' ? 'paquet_secteurs' : 'paquet_surcharges';
    const champs = couche === 'SECTEUR_CC' ? CHAMPS_SECTEURS : CHAMPS_SURCHARGES;
    const nature = couche === 'PRESCRIPTION' ? 'prescription' : couche === 'INFO' ? 'information' : 'secteur';
    let lot: object[] = [];
    let octets = 0;
    const vider = async () => {
      if (lot.length === 0) return;
      await client.query(`INSERT INTO pg_temp.${table} SELECT * FROM jsonb_to_recordset($1::jsonb) AS r(${champs})`, [
        JSON.stringify(lot),
      ]);
      lot = [];
      octets = 0;
      options.onProgress?.({ lus: report.lus, gardes: report.gardes });
    };
    for (const fichier of paquet.couches.get(couche) ?? []) {
      const nomCouche = coucheSurcharge(fichier);
      for await (const objet of lireCouche(fichier, paquet.tous)) {
        report.lus++;
        if ('motif' in objet) {
          rejeter(fichier, objet.ligne, objet.motif);
          continue;
        }
        const p = objet.proprietes;
        const insee = texte(p.insee)?.padStart(5, '0').toUpperCase() ?? null;
        let idurba = texte(p.idurba);
        if (!idurba) {
          const date = aaaammjj(p.datappro);
          idurba = etat.defaut ?? (insee && date ? `${insee}_${date}` : null);
        } else if (
          etat.defaut &&
          idurba !== etat.defaut &&
          etat.docUrba.size <= 1 &&
          !etat.docUrba.has(idurba) &&
          idurba.split('_')[0] === etat.defaut.split('_')[0]
        ) {
          etat.rattaches.set(idurba, (etat.rattaches.get(idurba) ?? 0) + 1);
          idurba = etat.defaut;
        }
        if (!idurba) {
          rejeter(fichier, objet.ligne, 'IDURBA absent, et le paquet ne nomme pas son document (ni DOC_URBA ni nom)');
          continue;
        }
        const libelle = texte(p.libelle) ?? (couche === 'SECTEUR_CC' ? null : texte(p.txt));
        if (!libelle) {
          rejeter(fichier, objet.ligne, 'LIBELLE absent');
          continue;
        }
        const lue = nettoyerGeometrie(objet.geometrie, objet.reprojection);
        if (typeof lue === 'string') {
          rejeter(fichier, objet.ligne, lue);
          continue;
        }
        if (couche === 'SECTEUR_CC' && lue.forme !== 'surface') {
          rejeter(fichier, objet.ligne, `géométrie ${lue.geometrie.type} pour un secteur (surface attendue)`);
          continue;
        }
        const urlfic = texte(p.urlfic);
        const nomfic = texte(p.nomfic);
        const fichierUrl = resoudre(urlfic, options.baseUrl) ?? resoudre(nomfic, options.baseUrl);
        const datvalid = isoDate(p.datvalid);
        if (datvalid && datvalid > (etat.datvalid.get(idurba) ?? '')) etat.datvalid.set(idurba, datvalid);
        if (insee && /^\d[\dAB]\d{3}$/.test(insee)) etat.communesDesCouches.add(`${idurba}\u0000${insee}`);
        const commun = { seq: ++seq, idurba, libelle, nomfic, urlfic, fichier_url: fichierUrl, insee, datvalid };
        const ligne =
          couche === 'SECTEUR_CC'
            ? {
                ...commun,
                typesect: codeNomenclature(p.typesect),
                fermreco: texte(p.fermreco),
                destdomi: codeNomenclature(p.destdomi),
                datappro: isoDate(p.datappro),
                ...geometrieEtBoite(lue.geometrie),
              }
            : {
                ...commun,
                nature,
                couche: nomCouche,
                txt: texte(p.txt),
                type: codeNomenclature(couche === 'PRESCRIPTION' ? p.typepsc : p.typeinf),
                sous_type: codeNomenclature(couche === 'PRESCRIPTION' ? p.stypepsc : p.stypeinf),
                fichier_page: pageOfReference(urlfic) ?? pageOfReference(nomfic) ?? pageOfReference(fichierUrl),
                forme: lue.forme,
                ...geometrieEtBoite(lue.geometrie),
              };
        report.gardes++;
        etat.formes[nature][lue.forme]++;
        lot.push(ligne);
        octets += JSON.stringify(lue.geometrie.coordinates).length;
        if (lot.length >= options.batchSize || octets >= MAX_OCTETS_PAR_LOT) await vider();
      }
    }
    await vider();
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Merge.
// ---------------------------------------------------------------------------------------------------------------------

const PRIORITE_LIEN = { doc_urba_com: 0, idurba: 1, couche: 2 } as const;

/** The communes of the package's documents, replaced (those of DOC_URBA_COM only when the package has that table). */
async function ecrireCommunes(
  client: PoolClient,
  dataset: Dataset,
  etat: EtatPaquet,
  documents: string[],
): Promise<string[]> {
  const liens = new Map<string, keyof typeof PRIORITE_LIEN>();
  const ajouter = (idurba: string, insee: string, origine: keyof typeof PRIORITE_LIEN) => {
    const k = `${idurba}\u0000${insee}`;
    const avant = liens.get(k);
    if (!avant || PRIORITE_LIEN[origine] < PRIORITE_LIEN[avant]) liens.set(k, origine);
  };
  for (const { idurba, insee } of etat.docUrbaCom)
    if (documents.includes(idurba)) ajouter(idurba, insee, 'doc_urba_com');
  for (const idurba of documents) {
    const insee = inseeOfIdurba(idurba);
    if (insee) ajouter(idurba, insee, 'idurba');
  }
  for (const k of etat.communesDesCouches) {
    const [idurba, insee] = k.split('\u0000');
    ajouter(idurba, insee, 'couche');
  }
  const rows = [...liens].map(([k, origine]) => {
    const [idurba, insee] = k.split('\u0000');
    return { idurba, insee, origine };
  });
  await client.query(
    `INSERT INTO documents_urbanisme_communes AS c (dataset, idurba, insee, origine)
     SELECT $1, idurba, insee, origine FROM jsonb_to_recordset($2::jsonb) AS r(idurba text, insee text, origine text)
     ON CONFLICT (dataset, idurba, insee) DO UPDATE SET origine = excluded.origine, maj_le = now()
     WHERE c.origine IS DISTINCT FROM excluded.origine`,
    [dataset, JSON.stringify(rows)],
  );
  const garder = etat.paquet.couches.has('DOC_URBA_COM') ? '' : `AND c.origine <> 'doc_urba_com'`;
  await client.query(
    `DELETE FROM documents_urbanisme_communes c
      WHERE c.dataset = $1 AND c.idurba = ANY ($2::text[]) ${garder}
        AND NOT EXISTS (SELECT 1 FROM jsonb_to_recordset($3::jsonb) AS r(idurba text, insee text)
                         WHERE r.idurba = c.idurba AND r.insee = c.insee)`,
    [dataset, documents, JSON.stringify(rows)],
  );
  return [...new Set(rows.map((r) => r.insee))].sort();
}

function ligneComptes(label: string, c: Comptes): string {
  return `${label} : ${c.ajoutees} ajoutées, ${c.modifiees} modifiées, ${c.inchangees} inchangées, ${c.supprimees} supprimées`;
}

function ligneFormes(f: Record<Forme, number>): string {
  return `${f.surface} surfaces, ${f.ligne} lignes, ${f.point} points`;
}

/** Imports one package, in one transaction; its report lines go into `report.details`. */
async function importerPaquet(
  db: Db,
  paquet: Paquet,
  report: ImportReport,
  options: { dataset: Dataset; baseUrl?: string; batchSize: number; onProgress?: GpuImportOptions['onProgress'] },
): Promise<void> {
  const dataset = options.dataset;
  const docUrba = await lireDocUrba(paquet.couches.get('DOC_URBA') ?? [], paquet.tous);
  const docUrbaCom = await lireDocUrbaCom(paquet.couches.get('DOC_URBA_COM') ?? [], paquet.tous);
  const idurbasCom = [...new Set(docUrbaCom.map((l) => l.idurba))];
  const nomPaquet = NOM_PAQUET.exec(paquet.nom);
  const etat: EtatPaquet = {
    paquet,
    docUrba,
    docUrbaCom,
    defaut:
      docUrba.size === 1
        ? [...docUrba.keys()][0]
        : docUrba.size === 0 && idurbasCom.length === 1
          ? idurbasCom[0]
          : docUrba.size === 0 && nomPaquet
            ? paquet.nom
            : null,
    typeDuNom: nomPaquet ? nomPaquet[2] : null,
    rattaches: new Map(),
    communesDesCouches: new Set(),
    datvalid: new Map(),
    formes: {
      prescription: { surface: 0, ligne: 0, point: 0 },
      information: { surface: 0, ligne: 0, point: 0 },
      secteur: { surface: 0, ligne: 0, point: 0 },
    },
  };
  const zonesLues = paquet.couches.get('ZONE_URBA') ?? [];
  const client = await db.connect();
  try {
    let zonage: ZonageImportReport | null = null;
    if (zonesLues.length > 0) {
      // A shapefile is read from the package's root (DOC_URBA found wherever it is, the folder's name as default
      // IDURBA); a GeoJSON layer as the file it is.
      const source = formatDe(zonesLues[0], paquet.tous) === 'shapefile' ? paquet.racine : zonesLues[0];
      const lus = report.lus;
      const gardes = report.gardes;
      ({ report: zonage } = await preparerZonage(client, source, {
        baseUrl: options.baseUrl,
        batchSize: options.batchSize,
        idurbaParDefaut: etat.defaut,
        onProgress: (p) => options.onProgress?.({ lus: lus + p.lus, gardes: gardes + p.gardes }),
      }));
      report.lus += zonage.lus;
      report.gardes += zonage.gardes;
      const nom = path.basename(zonesLues[0]);
      for (const r of zonage.rejetes) {
        if (report.rejetes.length < MAX_REJETS_LISTES)
          report.rejetes.push({ ligne: r.ligne, motif: `${nom} : ${r.motif}` });
      }
    }
    await client.query('DROP TABLE IF EXISTS pg_temp.paquet_surcharges, pg_temp.paquet_secteurs');
    await client.query(`CREATE TEMP TABLE paquet_surcharges (${CHAMPS_SURCHARGES}, cle text)`);
    await client.query(`CREATE TEMP TABLE paquet_secteurs (${CHAMPS_SECTEURS}, cle text)`);
    await preparerCouches(client, etat, report, options);

    await client.query('BEGIN');
    try {
      await verrouillerFusion(client, dataset);
      const zoned = zonage ? await documentsDesZones(client) : [];
      const secteurs = await client.query<{ idurba: string }>('SELECT DISTINCT idurba FROM pg_temp.paquet_secteurs');
      const surcharges = await client.query<{ idurba: string }>(
        'SELECT DISTINCT idurba FROM pg_temp.paquet_surcharges',
      );
      const avecSecteurs = new Set(secteurs.rows.map((r) => r.idurba));
      const avecZones = new Set(zoned.map((r) => r.idurba));
      for (const { idurba, datvalid } of zoned) {
        if (datvalid && datvalid > (etat.datvalid.get(idurba) ?? '')) etat.datvalid.set(idurba, datvalid);
      }
      const documents = [
        ...new Set([
          ...docUrba.keys(),
          ...idurbasCom,
          ...avecZones,
          ...avecSecteurs,
          ...surcharges.rows.map((r) => r.idurba),
        ]),
      ].sort();
      // The type no DOC_URBA nor IDURBA says: a document with sectors and no zones is a communal map.
      const typeDe = (idurba: string) => (avecSecteurs.has(idurba) && !avecZones.has(idurba) ? 'CC' : etat.typeDuNom);
      const rows = documents.map((idurba) =>
        documentRow(idurba, docUrba.get(idurba), etat.datvalid.get(idurba) ?? null, typeDe(idurba)),
      );
      await ecrireDocuments(client, dataset, rows);
      const zones = zonage ? await fusionnerZones(client, dataset) : null;
      const secteursEcrits = paquet.couches.has('SECTEUR_CC')
        ? await fusionnerObjets(client, dataset, {
            staging: 'paquet_secteurs',
            cible: 'secteurs_cc',
            partition: ['idurba'],
            colonnes: COLONNES_SECTEURS,
            extra: [],
            portee: { colonne: 'idurba', valeurs: documents },
          })
        : null;
      const couchesLues = [
        ...new Set(
          [...(paquet.couches.get('PRESCRIPTION') ?? []), ...(paquet.couches.get('INFO') ?? [])].map((f) =>
            coucheSurcharge(f)!,
          ),
        ),
      ];
      const surchargesEcrites =
        couchesLues.length > 0
          ? await fusionnerObjets(client, dataset, {
              staging: 'paquet_surcharges',
              cible: 'surcharges_urbanisme',
              partition: ['idurba', 'nature'],
              colonnes: COLONNES_SURCHARGES,
              extra: ['forme', 'couche'],
              portee: { colonne: 'idurba', valeurs: documents },
              filtre: { colonne: 'couche', valeurs: couchesLues },
            })
          : null;
      const communes = await ecrireCommunes(client, dataset, etat, documents);
      await client.query('COMMIT');

      const types = rows.map((r) => `${r.idurba} (${r.typedoc ?? 'type inconnu'})`);
      report.details.push(`paquet ${paquet.nom} : ${documents.length ? types.join(', ') : 'aucun document'}`);
      if (zones) report.details.push(`  ${ligneComptes('zones', zones)}`);
      if (secteursEcrits) {
        report.details.push(
          `  ${ligneComptes(`secteurs de carte communale (${etat.formes.secteur.surface})`, secteursEcrits)}`,
        );
      }
      if (surchargesEcrites) {
        report.details.push(
          `  prescriptions : ${ligneFormes(etat.formes.prescription)} ; informations : ${ligneFormes(etat.formes.information)}`,
          `  ${ligneComptes('prescriptions et informations', surchargesEcrites)}`,
        );
      }
      report.details.push(`  communes : ${communes.length ? communes.join(', ') : 'aucune'}`);
      for (const [idurba, n] of etat.rattaches) {
        report.details.push(
          `  ${n} objet(s) portant l’IDURBA ${idurba}, inconnu du paquet, rattaché(s) à son document ${etat.defaut}`,
        );
      }
      if (paquet.ignores.length > 0) {
        report.details.push(`  fichiers non importés : ${paquet.ignores.map((f) => path.basename(f)).join(', ')}`);
      }
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    }
  } finally {
    await client
      .query('DROP TABLE IF EXISTS pg_temp.paquet_surcharges, pg_temp.paquet_secteurs, pg_temp.zonage_lot')
      .catch(() => {});
    client.release();
  }
}

/**
 * Imports the planning packages of `chemins` (package folders, folders of packages, layer files) into the dataset,
 * one transaction per package. Throws an ImportError before writing anything when a path is missing or a package is
 * in MapInfo format; a feature that cannot be read is only rejected, with its layer and reason.
 */
export async function importPaquetsGpu(
  db: Db,
  chemins: string | string[],
  options: GpuImportOptions = {},
): Promise<ImportReport> {
  const liste = Array.isArray(chemins) ? chemins : [chemins];
  const baseUrl = normaliserBaseUrl(options.baseUrl);
  const paquets = await planifier(liste);
  const source = paquets.map((p) => p.racine).join(' ');
  const report: ImportReport = { source, lus: 0, gardes: 0, rejetes: [], details: [] };
  if (paquets.every((p) => p.couches.size === 0)) {
    throw new ImportError(
      `aucune couche du standard CNIG (ZONE_URBA, SECTEUR_CC, PRESCRIPTION_*, INFO_*, DOC_URBA) dans ${liste.join(', ')}`,
    );
  }
  for (const paquet of paquets) {
    if (paquet.couches.size === 0) {
      report.details.push(`${paquet.nom} : aucune couche du standard, rien d’importé`);
      continue;
    }
    await importerPaquet(db, paquet, report, {
      dataset: options.dataset ?? 'live',
      baseUrl,
      batchSize: Math.max(1, options.batchSize ?? 500),
      onProgress: options.onProgress,
    });
  }
  options.onProgress?.({ lus: report.lus, gardes: report.gardes });
  return report;
}

const options = ({ sandbox, baseUrl, onProgress }: Parameters<ImportSource['run']>[2]): GpuImportOptions => ({
  dataset: sandbox ? 'sandbox' : 'live',
  baseUrl,
  onProgress,
});

/** The `gpu` source of the importers' CLI. */
export const gpuSource: ImportSource = {
  name: 'gpu',
  description:
    'paquets du Géoportail de l’Urbanisme (CNIG) : DOC_URBA, ZONE_URBA, SECTEUR_CC, PRESCRIPTION_*, INFO_*, DOC_URBA_COM, en shapefile (.shp/.dbf/.prj/.cpg) ou GeoJSON ; dossiers, fichiers, motifs',
  run: (db, chemin, o) => importPaquetsGpu(db, chemin, options(o)),
  morceaux: { fichiers: FICHIERS_GPU, run: (db, chemins, o) => importPaquetsGpu(db, chemins, options(o)) },
};
