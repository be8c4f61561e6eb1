import type { ColonneFichier, FormatFichier, TypeColonne } from '../../lib/parquet.ts';

/**
 * The export editions, each dataset of the specification's enum declared once: its source SELECT over the tables the
 * domains hold, its columns with their type and meaning (the data dictionary), the removal of private individuals
 * applied to every row, and its formats. A dataset whose data this service does not hold, or whose format cannot be
 * produced here, is declared `produite: false` with its reason: it is never built, never listed, never faked.
 *
 * Every SELECT takes the dataset (`live` for the contract editions, `sandbox` for the common sample) as `$1`, and
 * yields the columns of `colonnes` in their order.
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

export interface EditionProduite {
  jeu: JeuExport;
  produite: true;
  titre: string;
  /** The public sources behind the rows. */
  source: string;
  formats: FormatFichier[];
  colonnes: ColonneExport[];
  /** The rows of the file, `$1` being the dataset. */
  select: string;
  /** The rows the source holds for the dataset before the removal of private individuals (the volume check). */
  compte: string;
  /** The removal of private individuals applied to every row, in words (dictionary and quality sheet). */
  retrait: string;
  /** A date column whose range the quality sheet gives. */
  colonneDate?: string;
  /** One row: the dates of the source (latest import, vintages), for the quality sheet. */
  datesSource?: string;
}

export interface EditionNonProduite {
  jeu: JeuExport;
  produite: false;
  raison: string;
}

export type EditionDeclaree = EditionProduite | EditionNonProduite;

/** The general rule, served by `exports` as `retrait_particuliers`. */
export const RETRAIT_PARTICULIERS =
  'Aucune ligne n’identifie un particulier : ni nom, ni coordonnée, ni adresse d’un vendeur particulier (annonces : position, clé BAN, titre, description, photos et lien retirés quand le vendeur n’est pas un professionnel) ; demandeurs de permis personnes physiques retirés ; unités SIRENE en diffusion partielle, purgées ou entrepreneurs individuels retirées ; gérants et associés jamais exportés. Chaque édition dit dans son dictionnaire et sa fiche qualité le retrait qu’elle applique.';

const c = (nom: string, type: TypeColonne, sens: string): ColonneExport => ({ nom, type, sens });

const POSITION = [c('lat', 'nombre', 'Latitude WGS84 (degrés).'), c('lon', 'nombre', 'Longitude WGS84 (degrés).')];

const DEUX_FORMATS: FormatFichier[] = ['parquet', 'csv.gz'];

const EDITIONS_LISTE: EditionDeclaree[] = [
  {
    jeu: 'annonces',
    produite: true,
    titre: 'Annonces de vente relevées sur les portails',
    source: 'Relevés des portails d’annonces (annonces de vente)',
    formats: DEUX_FORMATS,
    colonnes: [
      c('id', 'texte', 'Identifiant de l’annonce (portail:identifiant).'),
      c('portail', 'texte', 'Portail relevé.'),
      c('statut', 'texte', 'actif, retire ou masque.'),
      c('type', 'texte', 'appartement, maison ou immeuble.'),
      c('neuf_ancien', 'texte', 'neuf ou ancien, null quand l’annonce ne le dit pas.'),
      c('commune', 'texte', 'Commune.'),
      c('code_postal', 'texte', 'Code postal.'),
      c('insee', 'texte', 'Code INSEE de la commune.'),
      c('precision_position', 'texte', 'adresse, approchee, centre_commune ou inconnue.'),
      c('cle_ban', 'texte', 'Clé BAN de l’adresse ; null pour un vendeur particulier.'),
      c('lat', 'nombre', 'Latitude WGS84 ; null pour un vendeur particulier.'),
      c('lon', 'nombre', 'Longitude WGS84 ; null pour un vendeur particulier.'),
      c('prix', 'nombre', 'Prix affiché (€).'),
      c('surface', 'nombre', 'Surface habitable (m²).'),
      c('pieces', 'entier', 'Pièces.'),
      c('chambres', 'entier', 'Chambres.'),
      c('etage', 'entier', 'Étage.'),
      c('annee_construction', 'entier', 'Année de construction annoncée.'),
      c('dpe', 'json', 'Étiquettes énergie et climat annoncées.'),
      c('type_vendeur', 'texte', 'pro, particulier ou inconnu.'),
      c('bien_uid', 'texte', 'Bien dédoublonné auquel l’annonce est rattachée.'),
      c('premiere_parution', 'date', 'Première parution.'),
      c('maj_le', 'horodatage', 'Dernier changement d’un champ servi.'),
    ],
    select: `SELECT id, portail, statut, type, neuf_ancien, commune, code_postal, insee, precision_position,
        CASE WHEN type_vendeur = 'pro' THEN cle_ban END, CASE WHEN type_vendeur = 'pro' THEN lat END,
        CASE WHEN type_vendeur = 'pro' THEN lon END, prix, surface, pieces, chambres, etage, annee_construction, dpe,
        type_vendeur, bien_uid, premiere_parution, maj_le
      FROM annonces WHERE dataset = $1 ORDER BY id`,
    compte: 'SELECT count(*) FROM annonces WHERE dataset = $1',
    retrait:
      'Titre, description, photos, lien et coordonnées de l’annonceur jamais exportés ; pour un vendeur qui n’est pas un professionnel, position et clé BAN retirées (l’adresse d’un particulier).',
    colonneDate: 'premiere_parution',
    datesSource: 'SELECT max(vu_le) AS dernier_releve FROM annonces WHERE dataset = $1',
  },
  {
    jeu: 'evenements_prix',
    produite: true,
    titre: 'Baisses et hausses de prix des annonces',
    source: 'Journal des annonces (événements baisse_prix et hausse_prix)',
    formats: DEUX_FORMATS,
    colonnes: [
      c('id', 'entier', 'Identifiant croissant de l’événement.'),
      c('annonce_id', 'texte', 'Annonce concernée.'),
      c('genre', 'texte', 'baisse_prix ou hausse_prix.'),
      c('le', 'horodatage', 'Moment du relevé qui a vu le changement.'),
      c('insee', 'texte', 'Code INSEE de la commune.'),
      c('code_postal', 'texte', 'Code postal.'),
      c('departement', 'texte', 'Département.'),
      c('prix_avant', 'nombre', 'Prix avant (€).'),
      c('prix_apres', 'nombre', 'Prix après (€).'),
    ],
    select: `SELECT id, annonce_id, genre, le, insee, code_postal, departement,
        (avant ->> 'prix')::double precision, (apres ->> 'prix')::double precision
      FROM annonces_evenements WHERE dataset = $1 AND genre IN ('baisse_prix', 'hausse_prix') ORDER BY id`,
    compte: `SELECT count(*) FROM annonces_evenements WHERE dataset = $1 AND genre IN ('baisse_prix', 'hausse_prix')`,
    retrait: 'Seuls le prix avant et après sont exportés : rien du vendeur.',
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
    colonnes: [
      c('bien_uid', 'texte', 'Identifiant du bien dédoublonné.'),
      c('type', 'texte', 'Type du bien (annonce principale).'),
      c('insee', 'texte', 'Code INSEE de la commune.'),
      c('code_postal', 'texte', 'Code postal.'),
      c('surface', 'nombre', 'Surface (annonce principale, m²).'),
      c('pieces', 'entier', 'Pièces (annonce principale).'),
      c('prix', 'nombre', 'Prix de l’annonce principale (€).'),
      c('annonces', 'entier', 'Annonces rattachées au bien.'),
      c('portails', 'entier', 'Portails distincts où il paraît.'),
      c('actif', 'booleen', 'Une annonce au moins est en ligne.'),
    ],
    select: `SELECT bien_uid, (array_agg(type ORDER BY principale DESC, id))[1], (array_agg(insee ORDER BY principale DESC, id))[1],
        (array_agg(code_postal ORDER BY principale DESC, id))[1], (array_agg(surface ORDER BY principale DESC, id))[1],
        (array_agg(pieces ORDER BY principale DESC, id))[1], (array_agg(prix ORDER BY principale DESC, id))[1],
        count(*), count(DISTINCT portail), bool_or(statut = 'actif')
      FROM annonces WHERE dataset = $1 GROUP BY bien_uid ORDER BY bien_uid`,
    compte: 'SELECT count(DISTINCT bien_uid) FROM annonces WHERE dataset = $1',
    retrait: 'Aucune adresse, position ni coordonnée : le bien est situé à la commune.',
  },
  {
    jeu: 'adresses',
    produite: true,
    titre: 'Adresses (Base Adresse Nationale)',
    source: 'Base Adresse Nationale (BAN)',
    formats: DEUX_FORMATS,
    colonnes: [
      c('cle_ban', 'texte', 'Clé d’interopérabilité BAN.'),
      c('type', 'texte', 'numero, voie, lieu_dit ou commune.'),
      c('numero', 'entier', 'Numéro.'),
      c('suffixe', 'texte', 'Indice de répétition.'),
      c('voie', 'texte', 'Nom de la voie.'),
      c('code_postal', 'texte', 'Code postal.'),
      c('insee', 'texte', 'Code INSEE de la commune.'),
      c('commune', 'texte', 'Commune.'),
      c('libelle', 'texte', 'Adresse complète.'),
      ...POSITION,
      c('type_position', 'texte', 'Type de position BAN.'),
      c('parcelles', 'json', 'Parcelles cadastrales de l’adresse.'),
      c('certification', 'booleen', 'Adresse certifiée par la commune.'),
    ],
    select: `SELECT cle_ban, type, numero, suffixe, voie, code_postal, insee, commune, libelle, lat, lon, type_position,
        to_json(parcelles), certification
      FROM adresses WHERE dataset = $1 ORDER BY cle_ban`,
    compte: 'SELECT count(*) FROM adresses WHERE dataset = $1',
    retrait: 'La BAN ne nomme aucune personne : rien à retirer.',
  },
  {
    jeu: 'dvf_adresse',
    produite: true,
    titre: 'Mutations DVF rattachées à l’adresse',
    source: 'Demandes de valeurs foncières (DGFiP, Etalab), rattachées à la BAN',
    formats: DEUX_FORMATS,
    colonnes: [
      c('id_mutation', 'texte', 'Identifiant de la mutation.'),
      c('date_mutation', 'date', 'Date de la mutation.'),
      c('nature', 'texte', 'Nature de la mutation.'),
      c('valeur_fonciere', 'nombre', 'Valeur foncière (€).'),
      c('adresse_numero', 'entier', 'Numéro.'),
      c('adresse_suffixe', 'texte', 'Indice de répétition.'),
      c('adresse_voie', 'texte', 'Voie.'),
      c('code_postal', 'texte', 'Code postal.'),
      c('insee', 'texte', 'Code INSEE de la commune.'),
      c('commune', 'texte', 'Commune.'),
      c('cle_ban', 'texte', 'Clé BAN de l’adresse rattachée.'),
      ...POSITION,
      c('parcelles', 'json', 'Parcelles de la mutation.'),
      c('nombre_lots', 'entier', 'Lots.'),
      c('types_locaux', 'json', 'Types des locaux.'),
      c('logements', 'entier', 'Logements.'),
      c('surface_logements', 'nombre', 'Surface des logements (m²).'),
      c('surface_terrain', 'nombre', 'Surface du terrain (m²).'),
      c('prix_m2', 'nombre', 'Prix au m² recalculé sur la surface des logements.'),
      c('vente_en_bloc', 'booleen', 'Vente de plusieurs logements.'),
      c('prix_atypique', 'booleen', 'Prix hors des bornes plausibles.'),
      c('millesime', 'entier', 'Millésime DVF.'),
    ],
    select: `SELECT id_mutation, date_mutation, nature, valeur_fonciere, adresse_numero, adresse_suffixe, adresse_voie,
        code_postal, insee, commune, cle_ban, lat, lon, to_json(parcelles), nombre_lots, to_json(types_locaux), logements,
        surface_logements, surface_terrain, prix_m2, vente_en_bloc, prix_atypique, millesime
      FROM dvf_mutations WHERE dataset = $1 ORDER BY date_mutation, id_mutation`,
    compte: 'SELECT count(*) FROM dvf_mutations WHERE dataset = $1',
    retrait: 'DVF ne publie ni le nom ni les coordonnées des parties : aucune colonne n’identifie une personne.',
    colonneDate: 'date_mutation',
    datesSource: `SELECT min(millesime) AS premier_millesime, max(millesime) AS dernier_millesime, max(importe_le) AS importe_le
      FROM dvf_mutations WHERE dataset = $1`,
  },
  {
    jeu: 'dpe',
    produite: true,
    titre: 'Diagnostics de performance énergétique des logements existants',
    source: 'DPE logements existants (ADEME)',
    formats: DEUX_FORMATS,
    colonnes: [
      c('numero_dpe', 'texte', 'Numéro ADEME du diagnostic.'),
      c('cle_ban', 'texte', 'Clé BAN rattachée.'),
      c('adresse', 'texte', 'Adresse du logement diagnostiqué.'),
      c('code_postal', 'texte', 'Code postal.'),
      c('insee', 'texte', 'Code INSEE de la commune.'),
      ...POSITION,
      c('etabli_le', 'date', 'Date d’établissement.'),
      c('fin_validite', 'date', 'Fin de validité.'),
      c('etiquette', 'texte', 'Étiquette énergie (A-G).'),
      c('ges', 'texte', 'Étiquette climat (A-G).'),
      c('conso_kwh_m2_an', 'nombre', 'Consommation (kWh/m²/an).'),
      c('ges_kg_m2_an', 'nombre', 'Émissions (kg CO2/m²/an).'),
      c('surface_m2', 'nombre', 'Surface (m²).'),
      c('type_batiment', 'texte', 'maison, appartement ou immeuble.'),
      c('periode_construction', 'texte', 'Période de construction.'),
      c('chauffage_energie', 'texte', 'Énergie du chauffage.'),
    ],
    select: `SELECT numero_dpe, cle_ban, adresse, code_postal, insee, lat, lon, etabli_le, fin_validite, etiquette, ges,
        conso_kwh_m2_an, ges_kg_m2_an, surface_m2, type_batiment, periode_construction, chauffage_energie
      FROM dpe WHERE dataset = $1 ORDER BY numero_dpe`,
    compte: 'SELECT count(*) FROM dpe WHERE dataset = $1',
    retrait:
      'L’ADEME ne publie ni propriétaire ni occupant ; le diagnostiqueur et le numéro d’immatriculation de copropriété ne sont pas exportés.',
    colonneDate: 'etabli_le',
    datesSource: 'SELECT max(importe_le) AS importe_le FROM dpe WHERE dataset = $1',
  },
  {
    jeu: 'audits',
    produite: true,
    titre: 'Audits énergétiques',
    source: 'Audits énergétiques (ADEME)',
    formats: DEUX_FORMATS,
    colonnes: [
      c('numero_audit', 'texte', 'Numéro de l’audit.'),
      c('cle_ban', 'texte', 'Clé BAN rattachée.'),
      c('numero_dpe', 'texte', 'DPE audité.'),
      c('etabli_le', 'date', 'Date d’établissement.'),
      c('fin_validite', 'date', 'Fin de validité.'),
      c('cout_travaux_max', 'nombre', 'Coût cumulé le plus haut des scénarios (€).'),
      c('classe_initiale', 'texte', 'Classe avant travaux.'),
      c('classe_visee', 'texte', 'Meilleure classe atteinte.'),
      c('pack_pre_vente', 'booleen', 'Audit réglementaire avant vente.'),
      c('etapes', 'entier', 'Étapes de travaux.'),
    ],
    select: `SELECT numero_audit, cle_ban, numero_dpe, etabli_le, fin_validite, cout_travaux_max, classe_initiale,
        classe_visee, pack_pre_vente, etapes
      FROM dpe_audits WHERE dataset = $1 ORDER BY numero_audit`,
    compte: 'SELECT count(*) FROM dpe_audits WHERE dataset = $1',
    retrait: 'Ni propriétaire ni auditeur : aucune colonne n’identifie une personne.',
    colonneDate: 'etabli_le',
  },
  {
    jeu: 'coproprietes',
    produite: false,
    raison: 'Le registre national des copropriétés n’est pas importé par ce service.',
  },
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
    titre: 'Sociétés civiles (SIRENE)',
    source: 'SIRENE (Insee), unités légales',
    formats: DEUX_FORMATS,
    colonnes: [
      c('siren', 'texte', 'SIREN.'),
      c('denomination', 'texte', 'Dénomination.'),
      c('sigle', 'texte', 'Sigle.'),
      c('categorie_juridique', 'texte', 'Catégorie juridique (65xx).'),
      c('ape', 'texte', 'Activité principale.'),
      c('etat', 'texte', 'A (active) ou C (cessée).'),
      c('cree_le', 'date', 'Création.'),
      c('cesse_le', 'date', 'Cessation.'),
    ],
    select: `SELECT siren, denomination, sigle, categorie_juridique, ape, etat, cree_le, cesse_le
      FROM unites_legales
      WHERE dataset = $1 AND societe_civile AND NOT personne_physique AND NOT diffusion_partielle AND NOT purgee
      ORDER BY siren`,
    compte: 'SELECT count(*) FROM unites_legales WHERE dataset = $1 AND societe_civile',
    retrait:
      'Unités en diffusion partielle (personnes qui ont demandé la non-diffusion), purgées ou personnes physiques retirées ; gérants et associés ne sont pas tenus, donc jamais exportés.',
    colonneDate: 'cree_le',
  },
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
    colonnes: [
      c('idurba', 'texte', 'Document d’urbanisme.'),
      c('libelle', 'texte', 'Code de la zone.'),
      c('libelong', 'texte', 'Libellé long.'),
      c('typezone', 'texte', 'U, AUc, AUs, A ou N.'),
      c('destdomi', 'texte', 'Destination dominante.'),
      c('datappro', 'date', 'Approbation.'),
      c('datvalid', 'date', 'Validation.'),
      c('insee', 'texte', 'Code INSEE.'),
      c('reglement_url', 'texte', 'Règlement écrit.'),
      c('aire_m2', 'nombre', 'Aire (m²).'),
      c('geometrie', 'json', 'Contour GeoJSON (WGS84).'),
    ],
    select: `SELECT idurba, libelle, libelong, typezone, destdomi, datappro, datvalid, insee, reglement_url, aire_m2,
        geometrie
      FROM zones_urbanisme WHERE dataset = $1 ORDER BY id`,
    compte: 'SELECT count(*) FROM zones_urbanisme WHERE dataset = $1',
    retrait: 'Zonage réglementaire : aucune personne.',
    colonneDate: 'datappro',
  },
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
