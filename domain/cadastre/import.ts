import path from 'node:path';
import type { PoolClient } from 'pg';
import type { Db } from '../../db/client.ts';
import {
  exigerFichier,
  ImportError,
  importSource,
  nouveauRapport,
  type Dataset,
  type DatasetImportOptions,
  type ImportReport,
} from '../import/source.ts';
import {
  aireDe,
  booleen,
  codeNomenclature,
  emprise,
  empreinteDe,
  fusionnerObjets,
  lireCouche,
  nettoyerGeometrie,
  nombre,
  texte,
  type Attributes,
} from '../urbanisme/couches.ts';
import { isoDate } from '../urbanisme/zonage.ts';

/**
 * Importer of the cadastre in the Etalab format (cadastre.data.gouv.fr): `cadastre-<commune>-parcelles.json.gz` and
 * `cadastre-<commune>-batiments.json.gz` (or the département's, `cadastre-91-parcelles.json.gz`), GeoJSON
 * FeatureCollections in WGS84, gzipped or not, streamed feature by feature.
 *
 * Parcels (`cadastre_parcelles`) are keyed by their 14-character id (INSEE 5 + prefix 3 + section 2 + number 4), read
 * from the feature's `id` or properties, else composed from `commune`, `prefixe`, `section`, `numero`; the number is
 * kept on four digits as in the id (the files write `37` for `0037`), the section on two (`A` is `0A`). `contenance`
 * (m²) may be missing: the parcel is kept without it. Buildings (`cadastre_batiments`) have no identifier: they are
 * keyed, per commune, by their outline.
 *
 * A file replaces what is stored of the communes it holds (upserts of what changed, rows of those communes the file
 * no longer has deleted), in one transaction: importing the same file again changes nothing. Other Etalab layers
 * (sections, feuilles, lieux-dits...) are refused by name.
 */

/** Files a folder gives the importer: the Etalab parcels and buildings of a commune or a département. */
export const FICHIERS_CADASTRE = /^cadastre-[0-9][0-9AB]\d{0,3}-(parcelles|batiments)\.json(\.gz)?$/i;

type Couche = 'parcelles' | 'batiments';

const ID_PARCELLE = /^(\d[\dAB]\d{3})(\d{3})([0-9A-Z]{2})(\d{4})$/;
// Parcels of a dataset are merged one file at a time.
const VERROU = 726_354_035;
const LOT = 1000;

/** The layer a file holds, from its name (`…-parcelles.json.gz`); null when its name does not say. */
function coucheDuNom(fichier: string): Couche | 'autre' | null {
  const m =
    /-(parcelles|batiments|sections|feuilles|communes|lieux_dits|subdivisions_fiscales|prefixes_sections)\.json(\.gz)?$/i.exec(
      path.basename(fichier),
    );
  if (!m) return null;
  const c = m[1].toLowerCase();
  return c === 'parcelles' || c === 'batiments' ? c : 'autre';
}

/** A parcel's fields, or why it is refused. */
export function parcelleDe(p: Attributes):
  | {
      id: string;
      commune: string;
      prefixe: string;
      section: string;
      numero: string;
    }
  | string {
  const brut = texte(p.id)?.toUpperCase() ?? null;
  const lu = brut ? ID_PARCELLE.exec(brut) : null;
  if (lu) return { id: brut!, commune: lu[1], prefixe: lu[2], section: lu[3], numero: lu[4] };
  const commune = texte(p.commune)?.toUpperCase().padStart(5, '0') ?? null;
  const prefixe = (texte(p.prefixe) ?? '000').padStart(3, '0');
  const section = texte(p.section)?.toUpperCase().padStart(2, '0') ?? null;
  const numero = texte(p.numero)?.padStart(4, '0') ?? null;
  const id = commune && section && numero ? `${commune}${prefixe}${section}${numero}` : null;
  const compose = id ? ID_PARCELLE.exec(id) : null;
  if (!id || !compose) {
    return brut
      ? `identifiant de parcelle invalide (${brut})`
      : 'identifiant de parcelle absent (ni id, ni commune, section et numéro)';
  }
  return { id, commune: compose[1], prefixe: compose[2], section: compose[3], numero: compose[4] };
}

const BBOX = 'bbox_xmin float8, bbox_ymin float8, bbox_xmax float8, bbox_ymax float8';
const CHAMPS_PARCELLES = `seq int, id text, commune text, prefixe text, section text, numero text, contenance int,
  arpente boolean, cree_le date, modifie_le date, geometrie jsonb, ${BBOX}`;
const CHAMPS_BATIMENTS = `seq int, commune text, empreinte text, type text, nom text, cree_le date, modifie_le date,
  geometrie jsonb, ${BBOX}, aire_m2 float8`;
const COLONNES_PARCELLES = [
  'commune',
  'prefixe',
  'section',
  'numero',
  'contenance',
  'arpente',
  'cree_le',
  'modifie_le',
  'geometrie',
  'bbox_xmin',
  'bbox_ymin',
  'bbox_xmax',
  'bbox_ymax',
];

async function fusionnerParcelles(
  client: PoolClient,
  dataset: Dataset,
  communes: string[],
): Promise<{ ajoutees: number; modifiees: number; supprimees: number }> {
  const cols = COLONNES_PARCELLES;
  // The deletion below is an anti-join the planner may run as a nested loop (the stored table's statistics lag behind
  // an import): the staged ids are indexed, so that each probe is one lookup.
  await client.query('CREATE INDEX ON pg_temp.cadastre_parcelles_lot (id)');
  await client.query('ANALYZE pg_temp.cadastre_parcelles_lot');
  const { rows } = await client.query<{ ajoutee: boolean }>(
    `INSERT INTO cadastre_parcelles AS t (dataset, id, ${cols.join(', ')})
     SELECT $1, id, ${cols.join(', ')} FROM pg_temp.cadastre_parcelles_lot ORDER BY seq
     ON CONFLICT (dataset, id) DO UPDATE SET ${cols.map((c) => `${c} = excluded.${c}`).join(', ')}, maj_le = now()
     WHERE (${cols.map((c) => `t.${c}`).join(', ')}) IS DISTINCT FROM (${cols.map((c) => `excluded.${c}`).join(', ')})
     RETURNING (xmax = 0) AS ajoutee`,
    [dataset],
  );
  const supprimees = await client.query(
    `DELETE FROM cadastre_parcelles t
      WHERE t.dataset = $1 AND t.commune = ANY ($2::text[])
        AND NOT EXISTS (SELECT 1 FROM pg_temp.cadastre_parcelles_lot l WHERE l.id = t.id)`,
    [dataset, communes],
  );
  const ajoutees = rows.filter((r) => r.ajoutee).length;
  return { ajoutees, modifiees: rows.length - ajoutees, supprimees: supprimees.rowCount ?? 0 };
}

async function importerFichier(
  db: Db,
  fichier: string,
  dataset: Dataset,
  report: ImportReport,
  rejeter: (ligne: number, motif: string) => void,
  onProgress: DatasetImportOptions['onProgress'],
): Promise<void> {
  await exigerFichier(fichier);
  const nom = path.basename(fichier);
  const duNom = coucheDuNom(fichier);
  if (duNom === 'autre') {
    throw new ImportError(`${nom} : couche du cadastre non importée (seules les parcelles et les bâtiments le sont).`);
  }
  let couche: Couche | null = duNom;
  // The commune of buildings without a `commune` property: the one of a commune's file name.
  const communeDuNom = /^cadastre-(\d[\dAB]\d{3})-/i.exec(nom)?.[1]?.toUpperCase() ?? null;
  const staging = (c: Couche) => (c === 'parcelles' ? 'cadastre_parcelles_lot' : 'cadastre_batiments_lot');
  const client = await db.connect();
  try {
    await client.query('DROP TABLE IF EXISTS pg_temp.cadastre_parcelles_lot, pg_temp.cadastre_batiments_lot');
    await client.query(`CREATE TEMP TABLE cadastre_parcelles_lot (${CHAMPS_PARCELLES})`);
    await client.query(`CREATE TEMP TABLE cadastre_batiments_lot (${CHAMPS_BATIMENTS}, cle text)`);
    const communes = new Set<string>();
    const lues = new Map<string, number>();
    let lot: object[] = [];
    let seq = 0;
    const vider = async () => {
      if (lot.length === 0 || !couche) return;
      const champs = couche === 'parcelles' ? CHAMPS_PARCELLES : CHAMPS_BATIMENTS;
      await client.query(
        `INSERT INTO pg_temp.${staging(couche)} SELECT * FROM jsonb_to_recordset($1::jsonb) AS r(${champs})`,
        [JSON.stringify(lot)],
      );
      lot = [];
      onProgress?.({ lus: report.lus, gardes: report.gardes });
    };
    for await (const objet of lireCouche(fichier, [fichier])) {
      report.lus++;
      if ('motif' in objet) {
        rejeter(objet.ligne, objet.motif);
        continue;
      }
      const p = objet.proprietes;
      // A file whose name does not say its layer: parcels have a section and a number.
      couche ??= p.section !== undefined || p.numero !== undefined ? 'parcelles' : 'batiments';
      const lue = nettoyerGeometrie(objet.geometrie, objet.reprojection);
      if (typeof lue === 'string') {
        rejeter(objet.ligne, lue);
        continue;
      }
      if (lue.geometrie.type !== 'Polygon' && lue.geometrie.type !== 'MultiPolygon') {
        rejeter(objet.ligne, `géométrie ${lue.geometrie.type} (surface attendue)`);
        continue;
      }
      const b = emprise(lue.geometrie);
      const boite = { bbox_xmin: b.xmin, bbox_ymin: b.ymin, bbox_xmax: b.xmax, bbox_ymax: b.ymax };
      const dates = { cree_le: isoDate(p.created), modifie_le: isoDate(p.updated) };
      if (couche === 'parcelles') {
        const parcelle = parcelleDe(p);
        if (typeof parcelle === 'string') {
          rejeter(objet.ligne, parcelle);
          continue;
        }
        const avant = lues.get(parcelle.id);
        if (avant !== undefined) {
          rejeter(objet.ligne, `parcelle ${parcelle.id} déjà lue (objet ${avant})`);
          continue;
        }
        lues.set(parcelle.id, objet.ligne);
        communes.add(parcelle.commune);
        const contenance = nombre(p.contenance);
        lot.push({
          seq: ++seq,
          ...parcelle,
          contenance: contenance === null ? null : Math.round(contenance),
          arpente: booleen(p.arpente),
          ...dates,
          geometrie: lue.geometrie,
          ...boite,
        });
      } else {
        const commune = texte(p.commune)?.toUpperCase().padStart(5, '0') ?? communeDuNom;
        if (!commune || !/^\d[\dAB]\d{3}$/.test(commune)) {
          rejeter(objet.ligne, 'commune absente (ni propriété commune, ni nom de fichier de commune)');
          continue;
        }
        communes.add(commune);
        lot.push({
          seq: ++seq,
          commune,
          empreinte: empreinteDe(lue.geometrie),
          type: codeNomenclature(p.type),
          nom: texte(p.nom),
          ...dates,
          geometrie: lue.geometrie,
          ...boite,
          aire_m2: aireDe(lue.geometrie),
        });
      }
      report.gardes++;
      if (lot.length >= LOT) await vider();
    }
    await vider();
    // A file none of whose features could be read would empty its communes: more likely a wrong file.
    if (communes.size === 0) {
      throw new ImportError(`${nom} : aucun objet lisible (${report.lus} lus) ; rien n’est importé.`);
    }
    const liste = [...communes].sort();
    await client.query('BEGIN');
    try {
      await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [VERROU, dataset]);
      if (couche === 'parcelles') {
        const e = await fusionnerParcelles(client, dataset, liste);
        report.details.push(
          `${nom} : parcelles ${lues.size} (${e.ajoutees} ajoutées, ${e.modifiees} modifiées, ${lues.size - e.ajoutees - e.modifiees} inchangées, ${e.supprimees} supprimées)`,
        );
      } else {
        const e = await fusionnerObjets(client, dataset, {
          staging: 'cadastre_batiments_lot',
          cible: 'cadastre_batiments',
          partition: ['commune'],
          colonnes: ['type', 'nom', 'cree_le', 'modifie_le'],
          extra: [],
          portee: { colonne: 'commune', valeurs: liste },
        });
        report.details.push(
          `${nom} : bâtiments ${e.ajoutees + e.modifiees + e.inchangees} (${e.ajoutees} ajoutés, ${e.modifiees} modifiés, ${e.inchangees} inchangés, ${e.supprimees} supprimés)`,
        );
      }
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    }
    report.details.push(
      `  communes : ${liste.length > 10 ? `${liste.length} (${liste.slice(0, 10).join(', ')}, …)` : liste.join(', ')}`,
    );
  } finally {
    await client
      .query('DROP TABLE IF EXISTS pg_temp.cadastre_parcelles_lot, pg_temp.cadastre_batiments_lot')
      .catch(() => {});
    client.release();
  }
}

/** Imports Etalab cadastre files (parcels, buildings) into the dataset, one transaction per file. */
export async function importCadastre(
  db: Db,
  fichiers: string | string[],
  options: DatasetImportOptions = {},
): Promise<ImportReport> {
  const liste = Array.isArray(fichiers) ? fichiers : [fichiers];
  const { report, rejeter } = nouveauRapport(liste.join(' '));
  for (const fichier of liste) {
    const nom = path.basename(fichier);
    await importerFichier(
      db,
      fichier,
      options.dataset ?? 'live',
      report,
      (ligne, motif) => rejeter(ligne, liste.length > 1 ? `${nom} : ${motif}` : motif),
      options.onProgress,
    );
  }
  return report;
}

/** The `cadastre` source of the importers' CLI. */
export const cadastreSource = importSource(
  'cadastre',
  'cadastre Etalab : cadastre-<commune|département>-parcelles.json(.gz) et -batiments.json(.gz) ; fichiers, dossiers, motifs',
  importCadastre,
  FICHIERS_CADASTRE,
);
