import type { Db } from '../../db/client.ts';
import { isInseeCode } from '../communes.ts';
import { clesBan } from '../entreprises/rattachement.ts';
import { avecLotsJournalises } from '../flux/journal-adresses.ts';
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

/**
 * Importer of the national permits database: the four CSV files of "Liste des permis de construire et autres
 * autorisations d'urbanisme" (SDES, Sitadel), `;`-separated, plain or gzipped. Which file it is comes from its header:
 * `NUM_PA` (permis d'aménager), `NUM_PD` (permis de démolir), `NB_LGT_TOT_CREES` (housing: PC and DP creating
 * dwellings), else `SURF_LOC_CREEE` or `DESTINATION_PRINCIPALE` (non-residential premises). The DiDo export puts a
 * line of long labels above the line of column codes: the codes line is found among the first two. Columns are found
 * by name, in any case (older files wrote `Num_DAU`, `sec_cadastre1`).
 *
 * One row per authorisation and file, keyed by type and number (a PC and a DP may share a number); a mixed project
 * is in both the housing and the premises file, and keeps a row for each. Importing the same file twice changes
 * nothing. An authorisation new to the database whose land is a BAN number is a novelty of that address, journaled
 * with its batch (domain/flux/journal-adresses.ts).
 *
 * What is derived, and why:
 * - `etat`: ETAT_DAU 2 autorisée, 4 annulée, 5 commencée, 6 achevée (SDES dictionary); any other code is kept as
 *   `etat_code` only.
 * - Parcels: commune + `000` + section on 2 + number on 4 (the prefix of a merged commune is not in Sitadel).
 * - `superficie_terrain`: 0 means "not given" in Sitadel, stored as null.
 * - The applicant is kept only when it is a legal entity: a natural person (category "particulier", legal category
 *   1xxx, or no SIREN, legal category nor name, as Sitadel publishes them) keeps no applicant column at all, and the
 *   applicant's postal code and locality leave `champs` too. A name found for such an applicant is never stored.
 * - `champs`: every other non-empty column, by its code in the file.
 * - `cle_ban`: the BAN number of the land's address (see domain/entreprises/rattachement.ts).
 */

const LOT = 2000;

type Source = 'logements' | 'locaux' | 'demolir' | 'amenager';
type Type = 'PC' | 'DP' | 'PA' | 'PD';

const ETATS: Record<string, string> = { '2': 'autorisee', '4': 'annulee', '5': 'commencee', '6': 'achevee' };

/** Columns describing the applicant: in the `demandeur` columns for a legal entity, never kept for a person. */
const DEMANDEUR = ['DENOM_DEM', 'SIREN_DEM', 'SIRET_DEM', 'CJ_DEM', 'APE_DEM'];
/** Columns read into their own fields, not repeated in `champs`. */
const LUES = new Set([
  ...DEMANDEUR,
  'COMM',
  'TYPE_DAU',
  'NUM_DAU',
  'NUM_PA',
  'NUM_PD',
  'ADR_NUM_TER',
  'ADR_TYPEVOIE_TER',
  'ADR_LIBVOIE_TER',
  'ADR_LIEUDIT_TER',
  'ADR_LOCALITE_TER',
  'ADR_CODPOST_TER',
]);

const TABLE: Table = {
  nom: 'permis',
  colonnes: [
    ['dataset', 'text'],
    ['numero', 'text'],
    ['type', 'text'],
    ['source', 'text'],
    ['insee', 'text'],
    ['departement', 'text'],
    ['etat_code', 'text'],
    ['etat', 'text'],
    ['an_depot', 'smallint'],
    ['depot_le', 'date'],
    ['autorise_le', 'date'],
    ['ouvert_le', 'date'],
    ['acheve_le', 'date'],
    ['nature_declaree', 'text'],
    ['nature_completee', 'text'],
    ['destination', 'text'],
    ['logements_total', 'integer'],
    ['logements_individuels', 'integer'],
    ['logements_collectifs', 'integer'],
    ['logements_1p', 'integer'],
    ['logements_2p', 'integer'],
    ['logements_3p', 'integer'],
    ['logements_4p', 'integer'],
    ['logements_5p', 'integer'],
    ['logements_6p_plus', 'integer'],
    ['logements_sociaux', 'integer'],
    ['logements_accession_sociale', 'integer'],
    ['logements_ptz', 'integer'],
    ['logements_demolis', 'integer'],
    ['surface_habitation_creee', 'float8'],
    ['surface_habitation_demolie', 'float8'],
    ['surface_locaux_crees', 'float8'],
    ['surface_locaux_demolis', 'float8'],
    ['superficie_terrain', 'float8'],
    ['demandeur_personne_physique', 'boolean'],
    ['demandeur_denomination', 'text'],
    ['demandeur_siren', 'text'],
    ['demandeur_siret', 'text'],
    ['demandeur_categorie_juridique', 'text'],
    ['demandeur_ape', 'text'],
    ['terrain_numero', 'text'],
    ['terrain_voie', 'text'],
    ['terrain_lieu_dit', 'text'],
    ['terrain_code_postal', 'text'],
    ['terrain_localite', 'text'],
    ['parcelles', 'text[]'],
    ['champs', 'jsonb'],
    ['cle_ban', 'text'],
  ],
  cle: ['dataset', 'type', 'numero', 'source'],
  horodatage: 'maj_le',
};

const ENTIERS: Array<[colonne: string, champ: string]> = [
  ['logements_total', 'NB_LGT_TOT_CREES'],
  ['logements_individuels', 'NB_LGT_IND_CREES'],
  ['logements_collectifs', 'NB_LGT_COL_CREES'],
  ['logements_1p', 'NB_LGT_1P'],
  ['logements_2p', 'NB_LGT_2P'],
  ['logements_3p', 'NB_LGT_3P'],
  ['logements_4p', 'NB_LGT_4P'],
  ['logements_5p', 'NB_LGT_5P'],
  ['logements_6p_plus', 'NB_LGT_6P_PLUS'],
  ['logements_sociaux', 'NB_LGT_PRET_LOC_SOCIAL'],
  ['logements_accession_sociale', 'NB_LGT_ACC_SOC_HORS_PTZ'],
  ['logements_ptz', 'NB_LGT_PTZ'],
  ['logements_demolis', 'NB_LGT_DEMOLIS'],
];
const SURFACES: Array<[colonne: string, champ: string]> = [
  ['surface_habitation_creee', 'SURF_HAB_CREEE'],
  ['surface_habitation_demolie', 'SURF_HAB_DEMOLIE'],
  ['surface_locaux_crees', 'SURF_LOC_CREEE'],
  ['surface_locaux_demolis', 'SURF_LOC_DEMOLIE'],
];

function sourceDe(colonnes: Map<string, number>): Source | null {
  if (colonnes.has('NUM_PA')) return 'amenager';
  if (colonnes.has('NUM_PD')) return 'demolir';
  if (!colonnes.has('COMM') || !colonnes.has('NUM_DAU')) return null;
  if (colonnes.has('NB_LGT_TOT_CREES')) return 'logements';
  if (colonnes.has('SURF_LOC_CREEE') || colonnes.has('DESTINATION_PRINCIPALE')) return 'locaux';
  return null;
}

/** Whether the applicant is a natural person, from what Sitadel publishes of them. */
export function demandeurPersonnePhysique(
  categorie: string | null,
  cj: string | null,
  siren: string | null,
  denom: string | null,
): boolean {
  if (categorie !== null && (categorie === '10' || /particulier|personne physique/i.test(categorie))) return true;
  if (cj !== null && cj.startsWith('1')) return true;
  return siren === null && cj === null && denom === null;
}

/** The 14-character parcel of a Sitadel section and number in a commune, or null when they do not make one. */
export function parcelleSitadel(insee: string, section: string | null, numero: string | null): string | null {
  if (!section || !numero) return null;
  const s = section.trim().toUpperCase().replace(/\s+/g, '');
  const n = numero.trim().replace(/\s+/g, '');
  if (!/^[0-9A-Z]{1,2}$/.test(s) || !/^\d{1,4}$/.test(n) || Number(n) === 0) return null;
  return `${insee}000${s.padStart(2, '0')}${n.padStart(4, '0')}`;
}

function permisDe(
  get: (name: string) => string | null,
  noms: string[],
  source: Source,
  dataset: Dataset,
  ligne: number,
  ignorees: { parcelles: number },
): Lu | string {
  const numeroBrut = get(source === 'amenager' ? 'NUM_PA' : source === 'demolir' ? 'NUM_PD' : 'NUM_DAU');
  if (!numeroBrut) return 'numéro d’autorisation absent';
  const numero = numeroBrut.toUpperCase().replace(/\s+/g, '');
  if (!/^[0-9A-Z]{5,20}$/.test(numero)) return `numéro d’autorisation invalide (${numeroBrut.slice(0, 30)})`;
  const typeLu = get('TYPE_DAU')?.toUpperCase() ?? (source === 'amenager' ? 'PA' : source === 'demolir' ? 'PD' : null);
  if (typeLu === null) return 'TYPE_DAU absent';
  if (!['PC', 'DP', 'PA', 'PD'].includes(typeLu)) return `type d’autorisation inconnu (${typeLu.slice(0, 10)})`;
  const type = typeLu as Type;
  let insee = get('COMM')?.toUpperCase() ?? null;
  // Written as a number by some exports: 1004 for 01004.
  if (insee !== null && /^\d{4}$/.test(insee)) insee = insee.padStart(5, '0');
  if (!insee || !isInseeCode(insee)) return `code commune invalide (${get('COMM')?.slice(0, 10) ?? 'absent'})`;

  const dates: Record<string, string | null> = {};
  for (const [cle, champ] of [
    ['autorise_le', 'DATE_REELLE_AUTORISATION'],
    ['ouvert_le', 'DATE_REELLE_DOC'],
    ['acheve_le', 'DATE_REELLE_DAACT'],
    ['depot_le', 'DR_DEPOT'],
  ]) {
    const d = dateIso(get(champ));
    if (d === undefined) return `date invalide (${champ} = ${get(champ)?.slice(0, 20)})`;
    dates[cle] = d;
  }
  const anDepotTexte = get('AN_DEPOT');
  let anDepot = anDepotTexte !== null && /^\d{4}$/.test(anDepotTexte) ? Number(anDepotTexte) : null;
  // NUM_DAU: commune on 6, year of filing on 2, order number.
  if (anDepot === null && /^[0-9A-Z]{6}\d{2}/.test(numero) && numero.length >= 11) {
    anDepot = 2000 + Number(numero.slice(6, 8));
  }

  const row: Record<string, unknown> = {
    dataset,
    numero,
    type,
    source,
    insee,
    departement: get('DEP_CODE') ?? get('DEP'),
    etat_code: null,
    etat: null,
    an_depot: anDepot,
    ...dates,
    nature_declaree: get('NATURE_PROJET_DECLAREE') ?? get('NATURE_PROJET'),
    nature_completee: get('NATURE_PROJET_COMPLETEE'),
    destination: get('DESTINATION_PRINCIPALE'),
  };
  const etat = get('ETAT_DAU') ?? get('ETAT_PA') ?? get('ETAT_PD');
  row.etat_code = etat;
  row.etat = etat !== null ? (ETATS[etat.replace(/^0+/, '')] ?? null) : null;

  for (const [colonne, champ] of ENTIERS) {
    const n = nombre(get(champ));
    if (n !== null && (!Number.isFinite(n) || n < 0)) return `nombre invalide (${champ} = ${get(champ)?.slice(0, 20)})`;
    row[colonne] = n === null ? null : Math.round(n);
  }
  for (const [colonne, champ] of SURFACES) {
    const n = nombre(get(champ));
    if (n !== null && (!Number.isFinite(n) || n < 0))
      return `surface invalide (${champ} = ${get(champ)?.slice(0, 20)})`;
    row[colonne] = n;
  }
  const superficie = nombre(get('SUPERFICIE_TERRAIN'));
  if (superficie !== null && (!Number.isFinite(superficie) || superficie < 0)) {
    return `superficie invalide (SUPERFICIE_TERRAIN = ${get('SUPERFICIE_TERRAIN')?.slice(0, 20)})`;
  }
  row.superficie_terrain = superficie === 0 ? null : superficie;

  const categorie = get('CAT_DEM');
  const cj = get('CJ_DEM');
  const sirenBrut = get('SIREN_DEM')?.replace(/\s/g, '') ?? null;
  const denom = get('DENOM_DEM');
  const physique = demandeurPersonnePhysique(categorie, cj, sirenBrut, denom);
  const siretBrut = get('SIRET_DEM')?.replace(/\s/g, '') ?? null;
  row.demandeur_personne_physique = physique;
  row.demandeur_denomination = physique ? null : denom;
  row.demandeur_siren = !physique && sirenBrut && /^\d{9}$/.test(sirenBrut) ? sirenBrut : null;
  row.demandeur_siret = !physique && siretBrut && /^\d{14}$/.test(siretBrut) ? siretBrut : null;
  row.demandeur_categorie_juridique = physique ? null : cj;
  row.demandeur_ape = physique ? null : get('APE_DEM');

  let codePostal = get('ADR_CODPOST_TER');
  if (codePostal !== null && /^\d{4}$/.test(codePostal)) codePostal = codePostal.padStart(5, '0');
  row.terrain_numero = get('ADR_NUM_TER');
  row.terrain_voie = [get('ADR_TYPEVOIE_TER'), get('ADR_LIBVOIE_TER')].filter(Boolean).join(' ') || null;
  row.terrain_lieu_dit = get('ADR_LIEUDIT_TER');
  row.terrain_code_postal = codePostal;
  row.terrain_localite = get('ADR_LOCALITE_TER');

  const parcelles: string[] = [];
  for (const i of [1, 2, 3, 4, 5]) {
    const section = get(`SEC_CADASTRE${i}`);
    const num = get(`NUM_CADASTRE${i}`);
    if (!section && !num) continue;
    const p = parcelleSitadel(insee, section, num);
    if (p === null) ignorees.parcelles++;
    else if (!parcelles.includes(p)) parcelles.push(p);
  }
  row.parcelles = parcelles;

  const champs: Record<string, string> = {};
  for (const nom of noms) {
    if (LUES.has(nom) || /^SEC_CADASTRE|^NUM_CADASTRE/.test(nom)) continue;
    // An applicant's locality and postal code, or any other column of theirs, say where a private person lives.
    if (physique && nom.endsWith('_DEM') && nom !== 'CAT_DEM') continue;
    if (/(^|_)(NOM|PRENOM)(_|$)/.test(nom)) continue;
    const v = get(nom);
    if (v !== null) champs[nom] = v;
  }
  row.champs = champs;
  row.cle_ban = null;
  return { ligne, row };
}

/**
 * Imports one Sitadel file (housing, premises, demolition or development permits) into `dataset`. Throws ImportError
 * when the file is unusable as a whole (missing, no Sitadel header); a bad row is rejected with its reason and line.
 */
export async function importPermis(db: Db, file: string, options: DatasetImportOptions = {}): Promise<ImportReport> {
  const dataset = options.dataset ?? 'live';
  await exigerFichier(file);
  const { report, rejeter } = nouveauRapport(file);
  await using records = csvRecords(file, separateurDe);
  const codes = (champs: string[]) => champs.map((c) => c.trim().toUpperCase());
  const premiere = await records.next();
  if (premiere.done) throw new ImportError(`${file} est vide : en-tête Sitadel attendu.`);
  let noms = codes(premiere.value.champs);
  let source = sourceDe(colonnesDe(noms));
  if (source === null) {
    // The DiDo export's line of long labels comes first; the codes follow.
    const lu = premiere.value.champs.join(';').slice(0, 200);
    const seconde = await records.next();
    if (seconde.done) {
      throw new ImportError(
        `En-tête Sitadel attendu : COMM, NUM_DAU (ou NUM_PA, NUM_PD) et les colonnes de l’un des quatre fichiers. En-tête lu : ${lu}`,
      );
    }
    noms = codes(seconde.value.champs);
    source = sourceDe(colonnesDe(noms));
    if (source === null) {
      throw new ImportError(
        `En-tête Sitadel attendu (liste des permis de construire et autres autorisations d’urbanisme, séparateur « ; ») : COMM et NUM_DAU avec NB_LGT_TOT_CREES (logements) ou SURF_LOC_CREEE (locaux), ou NUM_PA (permis d’aménager), ou NUM_PD (permis de démolir). En-tête lu : ${lu}`,
      );
    }
  }
  const colonnes = colonnesDe(noms);
  const ignorees = { parcelles: 0 };
  let physiques = 0;
  let rattaches = 0;
  // Each batch is one transaction with its novelties: the authorisations new to the database.
  const { resultat: ecriture, nouveautes } = await avecLotsJournalises(
    db,
    'permis',
    dataset,
    async (client, journal) => {
      const lots = upsertParLots<Lu>(client, {
        table: TABLE,
        taille: LOT,
        cle: (l) => `${l.row.type} ${l.row.numero}`,
        report,
        rejeter,
        onProgress: options.onProgress,
        async completer(lot) {
          await journal.avant(lot.map((l) => `${l.row.type} ${l.row.numero}`));
          const cles = await clesBan(
            client,
            dataset,
            lot.map((l) => ({
              insee: l.row.insee as string,
              codePostal: l.row.terrain_code_postal as string | null,
              numero: l.row.terrain_numero as string | null,
              voie: l.row.terrain_voie as string | null,
            })),
          );
          lot.forEach((l, i) => {
            l.row.cle_ban = cles[i];
            if (cles[i]) rattaches++;
            if (l.row.demandeur_personne_physique) physiques++;
          });
        },
      });

      for await (const { ligne, champs } of lignesDeDonnees(records, noms.length, report, rejeter)) {
        const lu = permisDe(lecteurDe(colonnes, champs), noms, source, dataset, ligne, ignorees);
        if (typeof lu === 'string') rejeter(ligne, lu);
        else await lots.garder(lu);
      }
      return lots.terminer();
    },
  );
  report.details.push(
    `fichier : ${source}`,
    ligneEcriture('autorisations', report.gardes, ecriture),
    `demandées par une personne physique (demandeur non gardé) : ${physiques}`,
    `terrains rattachés à un numéro de la BAN : ${rattaches}`,
    `nouveautés au journal des adresses : ${nouveautes}`,
  );
  if (ignorees.parcelles > 0) {
    report.details.push(`références cadastrales ignorées (section ou numéro hors format) : ${ignorees.parcelles}`);
  }
  return report;
}

/** The `permis` source of the importers' CLI. */
export const permisSource = importSource(
  'permis',
  'autorisations d’urbanisme Sitadel (SDES) : fichier logements, locaux, permis de démolir ou permis d’aménager (CSV « ; »), ou .csv.gz',
  importPermis,
);
