/** What a DVF sale is once imported (a row of dvf_mutations), and what DVF covers. */

export type Nature = 'vente' | 'vefa' | 'terrain_a_batir' | 'adjudication' | 'echange' | 'expropriation';
export type TypeLocal = 'maison' | 'appartement' | 'dependance' | 'local';

export interface Lot {
  numero: string;
  carrez: number | null;
}
export interface Local {
  type: TypeLocal | null;
  surface_bati: number | null;
  pieces: number | null;
  id_parcelle: string;
  lots: Lot[];
}
export interface Terrain {
  id_parcelle: string;
  nature_culture: string | null;
  nature_culture_speciale: string | null;
  surface: number | null;
}

export interface Mutation {
  id_mutation: string;
  format: 'etalab' | 'dgfip';
  date_mutation: string;
  millesime: number;
  nature: Nature;
  nature_libelle: string;
  valeur_fonciere: number | null;
  adresse_numero: number | null;
  adresse_suffixe: string | null;
  adresse_voie: string | null;
  code_voie: string | null;
  code_postal: string | null;
  insee: string;
  commune: string | null;
  departement: string;
  lat: number | null;
  lon: number | null;
  parcelle_principale: string;
  parcelles: string[];
  volumes: string[];
  nb_dispositions: number;
  nb_lignes: number;
  locaux: Local[];
  terrains: Terrain[];
  nombre_lots: number;
  surface_terrain: number | null;
  types_locaux: TypeLocal[];
  logements: number;
  surface_logements: number | null;
  prix_m2: number | null;
  vente_en_bloc: boolean;
  avec_dependance: boolean;
  avec_local_pro: boolean;
  prix_atypique: boolean;
  surface_atypique: boolean;
  doublon_probable: boolean;
  motif: string | null;
}

/** Bounds of a plausible price per m² of dwellings (€/m²), outside which a sale is `prix_atypique`. */
export const PRIX_M2_PLAUSIBLE = { min: 200, max: 25_000 } as const;
/** Bounds of a plausible average surface per dwelling (m²), outside which a sale is `surface_atypique`. */
export const SURFACE_LOGEMENT_PLAUSIBLE = { min: 9, max: 1_000 } as const;
