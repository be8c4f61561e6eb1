import type { Db, Queryable } from '../../db/client.ts';
import { toWgs84 } from '../../lib/geometrie.ts';
import { isInseeCode } from '../communes.ts';
import { colonnesDe, csvRecords, dateIso, lecteurDe, lignesDeDonnees, nombre, separateurDe } from '../import/csv.ts';
import { ligneEcriture, upsertParLots, type Lu, type Table } from '../import/ecriture.ts';
import {
  exigerFichier,
  ImportError,
  importSource,
  nouveauRapport,
  type Dataset,
  type DatasetImportOptions,
  type ImportReport,
} from '../import/source.ts';
import { clesBan } from './rattachement.ts';

/**
 * Importer of the SIRENE v3 stock files (Insee): legal units (`StockUniteLegale`, one unit a row) or establishments
 * (`StockEtablissement`, one establishment a row), recognised by their header, comma-separated, plain or gzipped,
 * columns found by name (the Etalab geocoded establishment files, with `longitude`, `latitude`, `geo_id`, are read
 * too). Rows are upserted by batches: importing the same file twice changes nothing.
 *
 * Privacy. A legal unit of category 1xxx is a sole trader, a natural person: neither its names (`nomUniteLegale`,
 * `nomUsageUniteLegale`, `prenom*`, `pseudonyme*`, `sexe*`) nor its usual names are stored, and `denomination` stays
 * null. An establishment's sign and usual name are kept only when its unit is known to be a legal entity (a sole
 * trader's sign is often their name); importing units blanks those of sole traders whatever the order of imports.
 * The address complement is never kept: it often reads « chez M. X », naming a manager or the person domiciled.
 *
 * Civil companies are legal category 65xx (6540: SCI): every unit is kept, civil ones are flagged `societe_civile`.
 * A ceased unit (closed establishment) has `cesse_le` (`ferme_le`) = `dateDebut`, the start of its current period.
 */

const LOT = 2000;

const COLONNES_UL = ['siren', 'categorieJuridiqueUniteLegale', 'etatAdministratifUniteLegale'];
const COLONNES_ETAB = ['siren', 'nic', 'siret', 'etatAdministratifEtablissement'];

const UNITES: Table = {
  nom: 'unites_legales',
  colonnes: [
    ['dataset', 'text'],
    ['siren', 'text'],
    ['denomination', 'text'],
    ['sigle', 'text'],
    ['categorie_juridique', 'text'],
    ['personne_physique', 'boolean'],
    ['societe_civile', 'boolean'],
    ['ape', 'text'],
    ['nomenclature_ape', 'text'],
    ['etat', 'text'],
    ['cree_le', 'date'],
    ['cesse_le', 'date'],
    ['diffusion_partielle', 'boolean'],
    ['purgee', 'boolean'],
    ['tranche_effectif', 'text'],
    ['categorie_entreprise', 'text'],
    ['nic_siege', 'text'],
    ['dernier_traitement', 'timestamp'],
  ],
  cle: ['dataset', 'siren'],
  horodatage: 'maj_le',
};

const ETABLISSEMENTS: Table = {
  nom: 'etablissements',
  colonnes: [
    ['dataset', 'text'],
    ['siret', 'text'],
    ['siren', 'text'],
    ['nic', 'text'],
    ['siege', 'boolean'],
    ['etat', 'text'],
    ['cree_le', 'date'],
    ['ferme_le', 'date'],
    ['enseigne', 'text'],
    ['ape', 'text'],
    ['diffusion_partielle', 'boolean'],
    ['numero', 'text'],
    ['indice_repetition', 'text'],
    ['type_voie', 'text'],
    ['voie', 'text'],
    ['code_postal', 'text'],
    ['insee', 'text'],
    ['commune', 'text'],
    ['lat', 'float8'],
    ['lon', 'float8'],
    ['cle_ban', 'text'],
    ['dernier_traitement', 'timestamp'],
  ],
  cle: ['dataset', 'siret'],
  horodatage: 'maj_le',
};

/** Whether a legal category is a natural person's (1000: entrepreneur individuel). */
export function estPersonnePhysique(categorie: string | null): boolean {
  return categorie !== null && categorie.startsWith('1');
}

/** Whether a legal category is a civil company's (65xx). */
export function estSocieteCivile(categorie: string | null): boolean {
  return categorie !== null && categorie.startsWith('65');
}

type Get = (name: string) => string | null;

function horodatage(value: string | null): string | null | undefined {
  if (value === null) return null;
  if (/^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?$/.test(value)) return value.replace(' ', 'T');
  return undefined;
}

/** The creation date, the start of the current period and the last processing of a row, or why one is invalid. */
function dates(
  get: Get,
  creation: string,
  traitement: string,
): { creation: string | null; debut: string | null; traitement: string | null } | string {
  const lues: Record<string, string | null> = {};
  for (const champ of [creation, 'dateDebut']) {
    const d = dateIso(get(champ));
    if (d === undefined) return `date invalide (${champ} = ${get(champ)?.slice(0, 30)})`;
    lues[champ] = d;
  }
  const horodate = horodatage(get(traitement));
  if (horodate === undefined) return `date invalide (${traitement})`;
  return { creation: lues[creation], debut: lues.dateDebut, traitement: horodate };
}

function uniteDe(get: Get, dataset: Dataset, ligne: number): Lu | string {
  const siren = get('siren');
  if (!siren || !/^\d{9}$/.test(siren)) return `siren invalide (${siren?.slice(0, 20) ?? 'absent'})`;
  const categorie = get('categorieJuridiqueUniteLegale');
  if (categorie !== null && !/^\d{4}$/.test(categorie))
    return `catégorie juridique invalide (${categorie.slice(0, 10)})`;
  const etat = get('etatAdministratifUniteLegale');
  if (etat !== null && etat !== 'A' && etat !== 'C') return `état administratif inconnu (${etat.slice(0, 10)})`;
  const d = dates(get, 'dateCreationUniteLegale', 'dateDernierTraitementUniteLegale');
  if (typeof d === 'string') return d;
  // A unit without category but with a person's name and no denomination is a person too.
  const personne =
    estPersonnePhysique(categorie) ||
    (categorie === null && get('denominationUniteLegale') === null && get('nomUniteLegale') !== null);
  return {
    ligne,
    row: {
      dataset,
      siren,
      denomination: personne ? null : (get('denominationUniteLegale') ?? get('denominationUsuelle1UniteLegale')),
      sigle: personne ? null : get('sigleUniteLegale'),
      categorie_juridique: categorie,
      personne_physique: personne,
      societe_civile: estSocieteCivile(categorie),
      ape: get('activitePrincipaleUniteLegale'),
      nomenclature_ape: get('nomenclatureActivitePrincipaleUniteLegale'),
      etat,
      cree_le: d.creation,
      cesse_le: etat === 'C' ? d.debut : null,
      diffusion_partielle: (get('statutDiffusionUniteLegale') ?? 'O') !== 'O',
      purgee: get('unitePurgeeUniteLegale')?.toLowerCase() === 'true',
      tranche_effectif: get('trancheEffectifsUniteLegale'),
      categorie_entreprise: get('categorieEntreprise'),
      nic_siege: get('nicSiegeUniteLegale'),
      dernier_traitement: d.traitement,
    },
  };
}

interface LigneEtablissement extends Lu {
  enseigne: string | null;
  geoId: string | null;
}

function position(get: Get, insee: string | null): { lat: number | null; lon: number | null } | string {
  const lat = nombre(get('latitude'));
  const lon = nombre(get('longitude'));
  if (lat !== null && lon !== null) {
    if (!Number.isFinite(lat) || !Number.isFinite(lon) || Math.abs(lat) > 90 || Math.abs(lon) > 180) {
      return `coordonnées invalides (${get('latitude')}, ${get('longitude')})`;
    }
    return { lat, lon };
  }
  // Insee's own stock gives Lambert-93 in metropolitan France (other systems overseas, not read here).
  const x = nombre(get('coordonneeLambertAbscisseEtablissement'));
  const y = nombre(get('coordonneeLambertOrdonneeEtablissement'));
  if (x !== null && y !== null && Number.isFinite(x) && Number.isFinite(y) && insee && !insee.startsWith('97')) {
    const p = toWgs84('l93', x, y);
    if (p) return { lat: Math.round(p.lat * 1e6) / 1e6, lon: Math.round(p.lon * 1e6) / 1e6 };
  }
  return { lat: null, lon: null };
}

function etablissementDe(get: Get, dataset: Dataset, ligne: number): LigneEtablissement | string {
  const siren = get('siren');
  const nic = get('nic');
  if (!siren || !/^\d{9}$/.test(siren)) return `siren invalide (${siren?.slice(0, 20) ?? 'absent'})`;
  if (!nic || !/^\d{5}$/.test(nic)) return `nic invalide (${nic?.slice(0, 20) ?? 'absent'})`;
  const siret = get('siret') ?? siren + nic;
  if (siret !== siren + nic) return `siret ${siret.slice(0, 20)} ≠ siren + nic`;
  const etat = get('etatAdministratifEtablissement');
  if (etat !== null && etat !== 'A' && etat !== 'F') return `état administratif inconnu (${etat.slice(0, 10)})`;
  const d = dates(get, 'dateCreationEtablissement', 'dateDernierTraitementEtablissement');
  if (typeof d === 'string') return d;
  let insee = get('codeCommuneEtablissement')?.toUpperCase() ?? null;
  if (insee !== null && !isInseeCode(insee)) insee = null;
  const codePostal = get('codePostalEtablissement');
  const pos = position(get, insee);
  if (typeof pos === 'string') return pos;
  const siege = get('etablissementSiege')?.toLowerCase();
  const geoType = get('geo_type');
  return {
    ligne,
    enseigne: get('enseigne1Etablissement') ?? get('denominationUsuelleEtablissement'),
    geoId: geoType === 'housenumber' ? (get('geo_id')?.toLowerCase() ?? null) : null,
    row: {
      dataset,
      siret,
      siren,
      nic,
      siege: siege === 'true' ? true : siege === 'false' ? false : null,
      etat,
      cree_le: d.creation,
      ferme_le: etat === 'F' ? d.debut : null,
      enseigne: null,
      ape: get('activitePrincipaleEtablissement'),
      diffusion_partielle: (get('statutDiffusionEtablissement') ?? 'O') !== 'O',
      numero: get('numeroVoieEtablissement'),
      indice_repetition: get('indiceRepetitionEtablissement'),
      type_voie: get('typeVoieEtablissement'),
      voie: get('libelleVoieEtablissement'),
      code_postal: codePostal && /^\d{5}$/.test(codePostal) ? codePostal : null,
      insee,
      commune: get('libelleCommuneEtablissement'),
      lat: pos.lat,
      lon: pos.lon,
      cle_ban: null,
      dernier_traitement: d.traitement,
    },
  };
}

/** Signs are kept for units known to be legal entities; BAN keys from the file's geocoding or by matching. */
async function completerEtablissements(db: Queryable, dataset: Dataset, lot: LigneEtablissement[]): Promise<number> {
  const sirens = [...new Set(lot.map((l) => l.row.siren as string))];
  const { rows } = await db.query<{ siren: string }>(
    'SELECT siren FROM unites_legales WHERE dataset = $1 AND siren = ANY($2::text[]) AND NOT personne_physique',
    [dataset, sirens],
  );
  const morales = new Set(rows.map((r) => r.siren));
  for (const l of lot) if (morales.has(l.row.siren as string)) l.row.enseigne = l.enseigne;

  const geoIds = lot.map((l) => l.geoId).filter((g): g is string => g !== null);
  const connues = new Set(
    geoIds.length === 0
      ? []
      : (
          await db.query<{ cle_ban: string }>(
            `SELECT cle_ban FROM adresses WHERE dataset = $1 AND type = 'numero' AND cle_ban = ANY($2::text[])`,
            [dataset, geoIds],
          )
        ).rows.map((r) => r.cle_ban),
  );
  const cles = await clesBan(
    db,
    dataset,
    lot.map((l) => ({
      insee: l.row.insee as string | null,
      codePostal: l.row.code_postal as string | null,
      numero: l.row.numero as string | null,
      suffixe: l.row.indice_repetition as string | null,
      voie: [l.row.type_voie, l.row.voie].filter(Boolean).join(' ') || null,
    })),
  );
  let rattaches = 0;
  lot.forEach((l, i) => {
    l.row.cle_ban = l.geoId && connues.has(l.geoId) ? l.geoId : cles[i];
    if (l.row.cle_ban) rattaches++;
  });
  return rattaches;
}

/**
 * Imports a SIRENE stock file of legal units or of establishments into `dataset`. Throws ImportError when the file is
 * unusable as a whole (missing, neither header); a bad row is rejected with its reason and line number.
 */
export async function importSirene(db: Db, file: string, options: DatasetImportOptions = {}): Promise<ImportReport> {
  const dataset = options.dataset ?? 'live';
  await exigerFichier(file);
  const { report, rejeter } = nouveauRapport(file);
  await using records = csvRecords(file, separateurDe);
  const premiere = await records.next();
  if (premiere.done) throw new ImportError(`${file} est vide : en-tête SIRENE attendu.`);
  const entete = premiere.value.champs;
  const colonnes = colonnesDe(entete);
  const unites = COLONNES_UL.every((c) => colonnes.has(c));
  if (!unites && !COLONNES_ETAB.every((c) => colonnes.has(c))) {
    throw new ImportError(
      `En-tête SIRENE attendu : StockUniteLegale (${COLONNES_UL.join(', ')}…) ou StockEtablissement (${COLONNES_ETAB.join(', ')}…). En-tête lu : ${entete.join(',').slice(0, 200)}`,
    );
  }
  let civiles = 0;
  let personnes = 0;
  let rattaches = 0;
  let avecAdresse = 0;
  const lots = upsertParLots<Lu>(db, {
    table: unites ? UNITES : ETABLISSEMENTS,
    taille: LOT,
    cle: (l) => String(l.row.siret ?? l.row.siren),
    report,
    rejeter,
    onProgress: options.onProgress,
    async completer(lot) {
      if (unites) {
        const physiques = lot.filter((l) => l.row.personne_physique).map((l) => l.row.siren as string);
        civiles += lot.filter((l) => l.row.societe_civile).length;
        personnes += physiques.length;
        if (physiques.length > 0) {
          await db.query(
            `UPDATE etablissements SET enseigne = NULL, maj_le = now()
              WHERE dataset = $1 AND siren = ANY($2::text[]) AND enseigne IS NOT NULL`,
            [dataset, physiques],
          );
        }
      } else {
        const etabs = lot as LigneEtablissement[];
        rattaches += await completerEtablissements(db, dataset, etabs);
        avecAdresse += etabs.filter((l) => l.row.numero && l.row.voie).length;
      }
    },
  });

  for await (const { ligne, champs } of lignesDeDonnees(records, entete.length, report, rejeter)) {
    const get = lecteurDe(colonnes, champs);
    const lu = unites ? uniteDe(get, dataset, ligne) : etablissementDe(get, dataset, ligne);
    if (typeof lu === 'string') rejeter(ligne, lu);
    else await lots.garder(lu);
  }
  const ecriture = await lots.terminer();
  if (unites) {
    report.details.push(
      ligneEcriture('unités légales', report.gardes, ecriture),
      `sociétés civiles (catégorie 65xx) : ${civiles}`,
      `entrepreneurs individuels (catégorie 1xxx), gardés sans nom : ${personnes}`,
    );
  } else {
    report.details.push(
      ligneEcriture('établissements', report.gardes, ecriture),
      `rattachés à un numéro de la BAN : ${rattaches} (sur ${avecAdresse} avec numéro et voie)`,
    );
  }
  return report;
}

/** The `sirene` source of the importers' CLI. */
export const sireneSource = importSource(
  'sirene',
  'SIRENE (Insee), fichier stock des unités légales (StockUniteLegale) ou des établissements (StockEtablissement), CSV ou .csv.gz',
  importSirene,
);
