/** Etalab "DVF géolocalisées" lines written by hand, for the cases the real samples do not have. */
export const HEADER =
  'id_mutation,date_mutation,numero_disposition,nature_mutation,valeur_fonciere,adresse_numero,adresse_suffixe,adresse_nom_voie,adresse_code_voie,code_postal,code_commune,nom_commune,code_departement,ancien_code_commune,ancien_nom_commune,id_parcelle,ancien_id_parcelle,numero_volume,lot1_numero,lot1_surface_carrez,lot2_numero,lot2_surface_carrez,lot3_numero,lot3_surface_carrez,lot4_numero,lot4_surface_carrez,lot5_numero,lot5_surface_carrez,nombre_lots,code_type_local,type_local,surface_reelle_bati,nombre_pieces_principales,code_nature_culture,nature_culture,code_nature_culture_speciale,nature_culture_speciale,surface_terrain,longitude,latitude';

/** An Etalab line from the fields that matter here; the others empty. */
export function etalab(f: {
  id: string;
  date?: string;
  nature?: string;
  valeur?: string;
  parcelle?: string;
  type?: string;
  surface?: string;
  terrain?: string;
  culture?: string;
  lot?: string;
  carrez?: string;
  lat?: string;
  lon?: string;
}): string {
  const codeType = { Maison: '1', Appartement: '2', Dépendance: '3' }[f.type ?? ''] ?? '';
  return [
    f.id,
    f.date ?? '2022-03-01',
    '000001',
    f.nature ?? 'Vente',
    f.valeur ?? '200000',
    '1',
    '',
    'RUE DE TEST',
    'A001',
    '33230',
    '33001',
    'Abzac',
    '33',
    '',
    '',
    f.parcelle ?? '33001000AB0001',
    '',
    '',
    f.lot ?? '',
    f.carrez ?? '',
    '',
    '',
    '',
    '',
    '',
    '',
    '',
    '',
    f.lot ? '1' : '0',
    codeType,
    f.type ?? '',
    f.surface ?? '',
    f.surface ? '3' : '',
    f.culture ?? '',
    f.culture ? 'sols' : '',
    '',
    '',
    f.terrain ?? '',
    f.lon ?? '-0.13',
    f.lat ?? '45.01',
  ].join(',');
}
