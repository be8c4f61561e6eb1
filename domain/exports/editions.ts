import type { ColonneFichier, FormatFichier, ParametreSql, TypeColonne } from '../../lib/parquet.ts';
import { sourceComplete } from '../jeux/registre.ts';
import type { Dataset } from '../platform/sandbox.ts';

/**
 * The export editions, each dataset of the specification's enum declared once, with its formats. An edition that is
 * the rows of a dataset of the registry (domain/jeux/registre.ts) names it (`registre`) and takes from it its columns,
 * their types and meaning (the data dictionary), its SQL, its order and its removal of private individuals: the file
 * is what lire_jeu serves, every row of it, and one declaration says what a row is. Only an edition the registry has
 * no dataset for declares its own SELECT and columns, saying why. A dataset whose data this service does not hold,
 * or whose format cannot be produced here, is declared `produite: false` with its reason: it is never built, never
 * listed, never faked.
 */

export const JEUX_EXPORT = [
  'annonces',
  'evenements_prix',
  'diffusion',
  'biens',
  'adresses',
  'dvf_adresse',
  'dpe',
  'audits',
  'coproprietes',
  'permis',
  'societes_civiles',
  'pre_marche',
  'communes',
  'iris',
  'urbanisme',
  'agences',
  'indice_travaux',
  'barometre',
  'tuiles',
] as const;
export type JeuExport = (typeof JEUX_EXPORT)[number];

export const FORMATS_EXPORT = ['parquet', 'csv.gz', 'geoparquet', 'pmtiles'] as const;
export type FormatExport = (typeof FORMATS_EXPORT)[number];

export interface ColonneExport extends ColonneFichier {
  /** What the column means, as the dictionary says it. */
  sens: string;
}

interface EditionCommune {
  jeu: JeuExport;
  produite: true;
  titre: string;
  /** The public sources behind the rows. */
  source: string;
  formats: FormatFichier[];
  /** A date column of the file whose range the quality sheet gives. */
  colonneDate?: string;
  /** One row: the dates of the source (latest import, vintages), for the quality sheet; `$1` is the dataset. */
  datesSource?: string;
}

/** An edition that is the rows of a registry dataset, or a subset of them. */
export interface EditionDuRegistre extends EditionCommune {
  /** The registry dataset whose rows, columns, order and removal of private individuals the file is. */
  registre: string;
  /** Conditions written like the dataset's own, keeping the edition's rows: a subset, never more. */
  conditions?: string[];
  /**
   * Rows the file withholds on top of the registry's removal, with the reason the dictionary gives: the quality sheet
   * counts them as removed.
   */
  retraitLignes?: { conditions: string[]; motif: string };
}

/** An edition of rows the registry has no dataset for: its own SELECT and columns. */
export interface EditionPropre extends EditionCommune {
  colonnes: ColonneExport[];
  /** The rows of the file, `$1` being the dataset. */
  select: string;
  /** The rows the source holds for the dataset before the removal of private individuals (the volume check). */
  compte: string;
  /** The removal of private individuals applied to every row, in words (dictionary and quality sheet). */
  retrait: string;
}

export type EditionProduite = EditionDuRegistre | EditionPropre;

export interface EditionNonProduite {
  jeu: JeuExport;
  produite: false;
  raison: string;
}

export type EditionDeclaree = EditionProduite | EditionNonProduite;

/** The general rule, served by `exports` as `retrait_particuliers`. */
export const RETRAIT_PARTICULIERS =
  'Aucune ligne n’identifie un particulier : un vendeur particulier n’est jamais nommé et aucune de ses coordonnées n’est exportée (celles de son titre et de sa description sont masquées à l’import ; photos et lien jamais exportés) ; demandeurs de permis personnes physiques jamais nommés ; unités SIRENE en diffusion partielle, purgées ou entrepreneurs individuels retirées des sociétés civiles ; gérants et associés jamais exportés. Les fichiers appliquent le retrait des jeux de données (GET /jeux) ; chaque édition dit dans son dictionnaire et sa fiche qualité le retrait qu’elle applique.';

/** What building a file of an edition needs, whatever its declaration. */
export interface SourceEdition {
  /** The rows of the file, in order, with `params`. */
  select: string;
  /** The rows before the removal of private individuals (the volume check), with `params`. */
  compte: string;
  params: ParametreSql[];
  colonnes: ColonneExport[];
  retrait: string;
}

/**
 * The rows, columns and removal of an edition for `dataset`. A registry column without a description would be an
 * empty entry of the dictionary: refused here, as a date column the file does not have.
 */
export function sourceEdition(edition: EditionProduite, dataset: Dataset): SourceEdition {
  let source: SourceEdition;
  if ('registre' in edition) {
    const retenues = edition.conditions ?? [];
    const { sql, colonnes, retrait } = sourceComplete(edition.registre, dataset, [
      ...retenues,
      ...(edition.retraitLignes?.conditions ?? []),
    ]);
    source = {
      select: sql,
      compte: sourceComplete(edition.registre, dataset, retenues).compte,
      params: [],
      colonnes: colonnes.map(({ nom, type, description }) => {
        if (!description?.trim()) {
          throw new Error(
            `Colonne ${edition.registre}.${nom} sans description : le dictionnaire n’aurait pas son sens.`,
          );
        }
        return { nom, type, sens: description };
      }),
      retrait: [retrait, edition.retraitLignes?.motif].filter(Boolean).join(' '),
    };
  } else {
    const { select, compte, colonnes, retrait } = edition;
    source = { select, compte, params: [dataset], colonnes, retrait };
  }
  const date = edition.colonneDate;
  if (date && !source.colonnes.some((c) => c.nom === date && (c.type === 'date' || c.type === 'horodatage'))) {
    throw new Error(`Édition ${edition.jeu} : colonneDate ${date} n’est pas une colonne date du fichier.`);
  }
  return source;
}

const c = (nom: string, type: TypeColonne, sens: string): ColonneExport => ({ nom, type, sens });

const POSITION = [c('lat', 'nombre', 'Latitude WGS84 (degrés).'), c('lon', 'nombre', 'Longitude WGS84 (degrés).')];

const DEUX_FORMATS: FormatFichier[] = ['parquet', 'csv.gz'];

const EDITIONS_LISTE: EditionDeclaree[] = [
  {
    jeu: 'annonces',
    produite: true,
    titre: 'Annonces de vente en ligne relevées sur les portails',
    source: 'Relevés des portails d’annonces (annonces de vente)',
    formats: DEUX_FORMATS,
    // The listings online; suspended ones (masque) are served nowhere, withdrawn ones are annonces_archives, which
    // the specification's enum of exports does not name.
    registre: 'annonces',
    colonneDate: 'premiere_parution',
    datesSource: 'SELECT max(vu_le) AS dernier_releve FROM annonces WHERE dataset = $1',
  },
  {
    jeu: 'evenements_prix',
    produite: true,
    titre: 'Baisses et hausses de prix des annonces',
    source: 'Journal des annonces (événements baisse_prix et hausse_prix)',
    formats: DEUX_FORMATS,
    registre: 'evenements_prix',
    colonneDate: 'le',
  },
  {
    jeu: 'diffusion',
    produite: false,
    raison:
      'La diffusion des annonces (portails et agences par bien, multidiffusion) n’est pas tenue en table par ce service : seuls les événements multi_agences du journal en existent.',
  },
  {
    jeu: 'biens',
    produite: true,
    titre: 'Biens en vente dédoublonnés',
    source: 'Relevés des portails, annonces rapprochées par bien',
    formats: DEUX_FORMATS,
    registre: 'biens',
    colonneDate: 'premiere_parution',
  },
  {
    jeu: 'adresses',
    produite: true,
    titre: 'Adresses (Base Adresse Nationale)',
    source: 'Base Adresse Nationale (BAN), compléments du service',
    formats: DEUX_FORMATS,
    registre: 'adresses',
  },
  {
    jeu: 'dvf_adresse',
    produite: true,
    titre: 'Mutations DVF rattachées à l’adresse',
    source: 'Demandes de valeurs foncières (DGFiP, Etalab), rattachées à la BAN',
    formats: DEUX_FORMATS,
    registre: 'mutations',
    colonneDate: 'date_mutation',
    datesSource: `SELECT min(millesime) AS premier_millesime, max(millesime) AS dernier_millesime, max(importe_le) AS importe_le
      FROM dvf_mutations WHERE dataset = $1`,
  },
  {
    jeu: 'dpe',
    produite: true,
    titre: 'Diagnostics de performance énergétique des logements existants',
    source: 'DPE logements existants depuis juillet 2021 (ADEME)',
    formats: DEUX_FORMATS,
    // New dwellings and the DPE of the method before July 2021 are other datasets (dpe_neuf, dpe_ancien).
    registre: 'dpe_existant',
    colonneDate: 'etabli_le',
    datesSource: 'SELECT max(importe_le) AS importe_le FROM dpe WHERE dataset = $1',
  },
  {
    jeu: 'audits',
    produite: true,
    titre: 'Audits énergétiques',
    source: 'Audits énergétiques (ADEME)',
    formats: DEUX_FORMATS,
    registre: 'audits',
    colonneDate: 'etabli_le',
  },
  {
    jeu: 'coproprietes',
    produite: false,
    raison: 'Le registre national des copropriétés n’est pas importé par ce service.',
  },
  // Its own SELECT: the registry has one dataset per Sitadel file (permis_logements, _locaux, _demolir, _amenager);
  // this edition is the four in one file, with the file (`source`) as a column.
  {
    jeu: 'permis',
    produite: true,
    titre: 'Autorisations d’urbanisme (Sitadel)',
    source: 'Sitadel, base des permis de construire (SDES)',
    formats: DEUX_FORMATS,
    colonnes: [
      c('numero', 'texte', 'Numéro de l’autorisation.'),
      c('type', 'texte', 'PC, DP, PA ou PD.'),
      c('source', 'texte', 'logements, locaux, demolir ou amenager.'),
      c('insee', 'texte', 'Code INSEE de la commune.'),
      c('etat', 'texte', 'autorisee, annulee, commencee ou achevee.'),
      c('depot_le', 'date', 'Dépôt.'),
      c('autorise_le', 'date', 'Autorisation.'),
      c('ouvert_le', 'date', 'Ouverture du chantier.'),
      c('acheve_le', 'date', 'Achèvement.'),
      c('nature_declaree', 'texte', 'Nature des travaux déclarée.'),
      c('destination', 'texte', 'Destination principale.'),
      c('logements_total', 'entier', 'Logements créés.'),
      c('surface_habitation_creee', 'nombre', 'Surface d’habitation créée (m²).'),
      c('superficie_terrain', 'nombre', 'Superficie du terrain (m²).'),
      c('demandeur_denomination', 'texte', 'Personne morale demanderesse ; null pour une personne physique.'),
      c('demandeur_siren', 'texte', 'SIREN de la personne morale ; null pour une personne physique.'),
      c('terrain_voie', 'texte', 'Voie du terrain.'),
      c('terrain_code_postal', 'texte', 'Code postal du terrain.'),
      c('parcelles', 'json', 'Parcelles du terrain.'),
      c('cle_ban', 'texte', 'Clé BAN rattachée.'),
    ],
    select: `SELECT numero, type, source, insee, etat, depot_le, autorise_le, ouvert_le, acheve_le, nature_declaree,
        destination, logements_total, surface_habitation_creee, superficie_terrain,
        CASE WHEN NOT demandeur_personne_physique THEN demandeur_denomination END,
        CASE WHEN NOT demandeur_personne_physique THEN demandeur_siren END,
        terrain_voie, terrain_code_postal, to_json(parcelles), cle_ban
      FROM permis WHERE dataset = $1 ORDER BY numero`,
    compte: 'SELECT count(*) FROM permis WHERE dataset = $1',
    retrait:
      'Un demandeur personne physique n’est jamais exporté (dénomination et SIREN nuls) ; les champs bruts de Sitadel ne sont pas exportés.',
    colonneDate: 'autorise_le',
  },
  {
    jeu: 'societes_civiles',
    produite: true,
    titre: 'Sociétés civiles de l’immobilier (SIRENE)',
    source: 'SIRENE (Insee), unités légales',
    formats: DEUX_FORMATS,
    // The civil companies among the real-estate units (APE 68): the SCI this service reads, not the professional or
    // farming civil companies.
    registre: 'sirene_immobilier',
    conditions: ['u.societe_civile'],
    retraitLignes: {
      conditions: ['NOT u.personne_physique', 'NOT u.diffusion_partielle', 'NOT u.purgee'],
      motif:
        'Le fichier retire de plus les unités en diffusion partielle (qui ont demandé la non-diffusion : la dénomination d’une société civile familiale porte souvent un nom), purgées ou personnes physiques ; gérants et associés ne sont pas tenus, donc jamais exportés.',
    },
    colonneDate: 'cree_le',
  },
  // Its own SELECT: the pre-market scores are not a dataset of the registry.
  {
    jeu: 'pre_marche',
    produite: true,
    titre: 'Pré-marché : probabilité de vente à 12 mois par adresse',
    source: 'Calcul du service sur DPE, audits, DVF, SIRENE, BODACC, permis',
    formats: DEUX_FORMATS,
    colonnes: [
      c('cle_ban', 'texte', 'Clé BAN.'),
      c('insee', 'texte', 'Code INSEE de la commune.'),
      c('code_postal', 'texte', 'Code postal.'),
      c('adresse', 'texte', 'Adresse.'),
      c('commune', 'texte', 'Commune.'),
      ...POSITION,
      c('type_bien', 'texte', 'maison, appartement, immeuble ou autre.'),
      c('dpe_le', 'date', 'Date du dernier DPE.'),
      c('etiquette', 'texte', 'Étiquette énergie.'),
      c('surface_m2', 'nombre', 'Surface (m²).'),
      c('audit_le', 'date', 'Date du dernier audit.'),
      c('pack_pre_vente', 'booleen', 'DPE et audit rapprochés (avant une vente).'),
      c('indice', 'nombre', 'Indice des coefficients mesurés.'),
      c('bande', 'texte', 'Bande de calibration.'),
      c('p_vente', 'nombre', 'Probabilité calibrée de vente à 12 mois.'),
      c('lift', 'nombre', 'Rapport au taux de base.'),
      c('priorite', 'nombre', 'Priorité de prospection.'),
      c('vendue_depuis', 'booleen', 'Vente DVF depuis le DPE.'),
      c('derniere_vente_le', 'date', 'Dernière vente.'),
      c('fiabilite', 'texte', 'mesure ou indicatif.'),
      c('hors_perimetre', 'texte', 'Raison hors du périmètre calibré.'),
      c('calcule_le', 'horodatage', 'Calcul.'),
    ],
    select: `SELECT cle_ban, insee, code_postal, adresse, commune, lat, lon, type_bien, dpe_le, etiquette, surface_m2,
        audit_le, pack_pre_vente, indice, bande, p_vente, lift, priorite, vendue_depuis, derniere_vente_le, fiabilite,
        hors_perimetre, calcule_le
      FROM pre_marche_scores WHERE dataset = $1 ORDER BY cle_ban`,
    compte: 'SELECT count(*) FROM pre_marche_scores WHERE dataset = $1',
    retrait:
      'Ni propriétaire ni occupant ne sont tenus ; les sociétés civiles, la frise et les annonces liées ne sont pas exportées ici.',
    colonneDate: 'dpe_le',
  },
  // Its own SELECT: the communes joined to their market indicators, two datasets of the registry (communes,
  // marche_commune) in one file.
  {
    jeu: 'communes',
    produite: true,
    titre: 'Communes et indicateurs de marché',
    source: 'Découpage administratif (Etalab), indicateurs du service sur DVF, DPE, loyers',
    formats: DEUX_FORMATS,
    colonnes: [
      c('insee', 'texte', 'Code INSEE.'),
      c('nom', 'texte', 'Nom.'),
      c('type', 'texte', 'Type de commune.'),
      c('departement', 'texte', 'Département.'),
      c('region', 'texte', 'Région.'),
      c('epci', 'texte', 'SIREN de l’intercommunalité.'),
      c('codes_postaux', 'json', 'Codes postaux.'),
      c('population', 'entier', 'Population.'),
      ...POSITION,
      c('transactions', 'entier', 'Ventes de logements retenues pour les indicateurs.'),
      c('prix_m2_appartement', 'nombre', 'Prix médian au m² des appartements (€).'),
      c('prix_m2_maison', 'nombre', 'Prix médian au m² des maisons (€).'),
      c('loyer_m2_appartement', 'nombre', 'Loyer au m² des appartements (€/mois).'),
      c('rendement_brut_appartement_pct', 'nombre', 'Rendement brut des appartements (%).'),
      c('passoires_dpe_fg_pct', 'nombre', 'Part des DPE F et G (%).'),
    ],
    select: `SELECT c.insee, c.nom, c.type, c.departement, c.region, c.epci, to_json(c.codes_postaux), c.population, c.lat,
        c.lon, m.transactions, m.prix_m2_appartement, m.prix_m2_maison, m.loyer_m2_appartement,
        m.rendement_brut_appartement_pct, m.passoires_dpe_fg_pct
      FROM communes c LEFT JOIN marche_indicateurs m ON m.dataset = c.dataset AND m.insee = c.insee
      WHERE c.dataset = $1 ORDER BY c.insee`,
    compte: 'SELECT count(*) FROM communes WHERE dataset = $1',
    retrait: 'Données agrégées à la commune : aucune personne.',
  },
  // Its own SELECT: the IRIS outlines are not a dataset of the registry (prix_iris is their prices).
  {
    jeu: 'iris',
    produite: true,
    titre: 'IRIS (contours)',
    source: 'Contours IRIS (IGN, Insee)',
    formats: DEUX_FORMATS,
    colonnes: [
      c('code', 'texte', 'Code IRIS.'),
      c('nom', 'texte', 'Nom.'),
      c('insee', 'texte', 'Code INSEE de la commune.'),
      c('type', 'texte', 'Type d’IRIS.'),
      c('aire_m2', 'nombre', 'Aire (m²).'),
      c('geometrie', 'json', 'Contour GeoJSON (Polygon ou MultiPolygon, WGS84).'),
    ],
    select: 'SELECT code, nom, insee, type, aire_m2, geometrie FROM iris WHERE dataset = $1 ORDER BY code',
    compte: 'SELECT count(*) FROM iris WHERE dataset = $1',
    retrait: 'Contours statistiques : aucune personne.',
  },
  {
    jeu: 'urbanisme',
    produite: true,
    titre: 'Zonage des documents d’urbanisme',
    source: 'Géoportail de l’Urbanisme (ZONE_URBA)',
    formats: DEUX_FORMATS,
    registre: 'plu',
    colonneDate: 'datappro',
  },
  // Its own SELECT: one row per agency (SIRENE and the portals), where the registry's agences_commune is their
  // activity per commune and month.
  {
    jeu: 'agences',
    produite: true,
    titre: 'Agences immobilières',
    source: 'SIRENE (Insee), relevés des portails',
    formats: DEUX_FORMATS,
    colonnes: [
      c('siren', 'texte', 'SIREN.'),
      c('denomination', 'texte', 'Dénomination.'),
      c('sigle', 'texte', 'Sigle.'),
      c('categorie_juridique', 'texte', 'Catégorie juridique.'),
      c('ape', 'texte', 'Activité principale.'),
      c('motif', 'texte', 'ape (activité immobilière) ou annonces (annonceur rapproché).'),
      c('insee', 'json', 'Communes des établissements.'),
      c('codes_postaux', 'json', 'Codes postaux des établissements.'),
      c('reseaux', 'json', 'Enseignes et réseaux sous lesquels les annonces paraissent.'),
      c('calcule_le', 'horodatage', 'Calcul.'),
    ],
    select: `SELECT siren, denomination, sigle, categorie_juridique, ape, motif, to_json(insee), to_json(codes_postaux),
        reseaux, calcule_le
      FROM agences WHERE dataset = $1 AND NOT entrepreneur_individuel AND NOT diffusion_partielle ORDER BY siren`,
    compte: 'SELECT count(*) FROM agences WHERE dataset = $1',
    retrait:
      'Entrepreneurs individuels et unités en diffusion partielle retirés ; aucune coordonnée (téléphone, e-mail) exportée.',
  },
  {
    jeu: 'indice_travaux',
    produite: false,
    raison: 'Aucun indice du coût des travaux n’est tenu par ce service.',
  },
  // Its own SELECT: the price scales by commune and department are not a dataset of the registry.
  {
    jeu: 'barometre',
    produite: true,
    titre: 'Baromètre des prix au m² par commune et département',
    source: 'Calcul du service sur DVF',
    formats: DEUX_FORMATS,
    colonnes: [
      c('niveau', 'texte', 'commune ou departement.'),
      c('code', 'texte', 'Code INSEE ou du département.'),
      c('type', 'texte', 'appartement, maison ou global.'),
      c('annee', 'entier', 'Année.'),
      c('trimestre', 'entier', 'Trimestre (0 : l’année entière).'),
      c('ventes', 'entier', 'Ventes retenues.'),
      c('prix_m2_median', 'nombre', 'Prix médian au m² (€).'),
      c('prix_m2_p25', 'nombre', '1er quartile (€/m²).'),
      c('prix_m2_p75', 'nombre', '3e quartile (€/m²).'),
    ],
    select: `SELECT niveau, code, type, annee, trimestre, ventes, prix_m2_median, prix_m2_p25, prix_m2_p75
      FROM marche_prix WHERE dataset = $1 ORDER BY niveau, code, type, annee, trimestre`,
    compte: 'SELECT count(*) FROM marche_prix WHERE dataset = $1',
    retrait: 'Agrégats de ventes : aucune personne.',
  },
  {
    jeu: 'tuiles',
    produite: false,
    raison:
      'Les tuiles vectorielles (pmtiles) demandent un outil de tuilage que ce service n’embarque pas : elles ne sont pas produites.',
  },
];

export const EDITIONS: ReadonlyMap<JeuExport, EditionDeclaree> = new Map(EDITIONS_LISTE.map((e) => [e.jeu, e]));

/** The datasets whose editions are built. */
export const JEUX_PRODUITS = EDITIONS_LISTE.filter((e): e is EditionProduite => e.produite).map((e) => e.jeu);

/**
 * The editions an import changes, by importer (scripts/import.ts): built again after it. The others wait for the
 * daily run (the pre-market scores, for one, change with the recalibration that follows a DVF import, not with it).
 */
export const JEUX_PAR_SOURCE: Readonly<Record<string, JeuExport[]>> = {
  communes: ['communes'],
  ban: ['adresses'],
  dvf: ['dvf_adresse', 'barometre', 'communes'],
  dpe: ['dpe', 'audits', 'communes'],
  permis: ['permis'],
  sirene: ['societes_civiles', 'agences'],
  bodacc: ['agences'],
  annonces: ['annonces', 'evenements_prix', 'biens', 'agences'],
  iris: ['iris'],
  gpu: ['urbanisme'],
  loyers: ['communes'],
};
