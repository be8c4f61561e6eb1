/**
 * ADEME CSV fixtures written by the tests. The header is a selection of the real columns of the open-data export
 * « DPE Logements existants (depuis juillet 2021) » (dpe-v2-logements-existants), with their exact names and in the
 * export's quoting style: the importer finds its columns by name, so a selection reads like the full file.
 */
export const ENTETE_ADEME = [
  'N°DPE',
  'Date_réception_DPE',
  'Date_établissement_DPE',
  'Date_fin_validité_DPE',
  'Modèle_DPE',
  'N°_DPE_remplacé',
  'Méthode_application_DPE',
  'Etiquette_GES',
  'Etiquette_DPE',
  'Type_bâtiment',
  'Année_construction',
  'Période_construction',
  'Surface_habitable_logement',
  'Surface_habitable_immeuble',
  'Nombre_niveau_immeuble',
  'Nombre_appartement',
  'Adresse_brute',
  'Nom__commune_(BAN)',
  'Code_INSEE_(BAN)',
  'N°_voie_(BAN)',
  'Identifiant__BAN',
  'Adresse_(BAN)',
  'Code_postal_(BAN)',
  'Score_BAN',
  'Nom__rue_(BAN)',
  'Coordonnée_cartographique_X_(BAN)',
  'Coordonnée_cartographique_Y_(BAN)',
  'Conso_5_usages_par_m²_é_primaire',
  'Emission_GES_5_usages_par_m²',
  'Type_énergie_principale_chauffage',
  'Type_installation_chauffage',
  'Qualité_isolation_enveloppe',
  'Qualité_isolation_murs',
  'Qualité_isolation_menuiseries',
  'Type_ventilation',
] as const;

export type LigneAdeme = Partial<Record<(typeof ENTETE_ADEME)[number], string | number>>;

const quote = (v: string | number | undefined) => (v === undefined ? '' : `"${String(v).replace(/"/g, '""')}"`);

/** A CSV in the export's style: every field quoted, comma-separated, LF. */
export function csvAdeme(lignes: LigneAdeme[]): string {
  return [ENTETE_ADEME.map(quote).join(','), ...lignes.map((l) => ENTETE_ADEME.map((c) => quote(l[c])).join(','))]
    .join('\n')
    .concat('\n');
}

/** A flat of Latresne (33234) in the export's wording; override what a test needs. */
export function appartementLatresne(over: LigneAdeme): LigneAdeme {
  return {
    Date_réception_DPE: over['Date_établissement_DPE'],
    Modèle_DPE: 'DPE 3CL 2021 méthode logement',
    Méthode_application_DPE: 'dpe appartement individuel',
    Type_bâtiment: 'appartement',
    Année_construction: 1965,
    Période_construction: '1948-1974',
    Surface_habitable_logement: 45,
    Surface_habitable_immeuble: 1200,
    Nombre_niveau_immeuble: 5,
    Nombre_appartement: 40,
    Adresse_brute: '12 Route de Bordeaux, bâtiment B',
    'Nom__commune_(BAN)': 'Latresne',
    'Code_INSEE_(BAN)': '33234',
    'N°_voie_(BAN)': 12,
    Identifiant__BAN: '33234_0160_00012',
    'Adresse_(BAN)': '12 Route de Bordeaux 33360 Latresne',
    'Code_postal_(BAN)': '33360',
    Score_BAN: 0.92,
    'Nom__rue_(BAN)': 'Route de Bordeaux',
    'Coordonnée_cartographique_X_(BAN)': 423100.5,
    'Coordonnée_cartographique_Y_(BAN)': 6415300.2,
    Type_énergie_principale_chauffage: 'Électricité',
    Type_installation_chauffage: 'individuel',
    Qualité_isolation_enveloppe: 'insuffisante',
    Qualité_isolation_murs: 'insuffisante',
    Qualité_isolation_menuiseries: 'moyenne',
    Type_ventilation: 'Ventilation par ouverture des fenêtres',
    ...over,
  };
}
