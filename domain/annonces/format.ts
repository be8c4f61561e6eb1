/**
 * The snapshot format of listings: JSON Lines, one snapshot a line, each the state of one listing on one portal at
 * one moment. What a line may say, under which names, and how each value is read, is written here once; the importer
 * (import.ts) applies the snapshots, and its module comment tells what a snapshot does to a listing.
 *
 * A line is a JSON object. Keys are compared folded (case, accents and punctuation ignored: `Prix`, `prix`, `PRIX`
 * are one key), and each field is found under the first of its names present (ALIAS). Required: the portal, the
 * portal's identifier of the listing and the time of the snapshot; a line without one of them, or that is not a JSON
 * object, is rejected with its reason. Every other field is optional: a field absent (or null, or empty) keeps what
 * earlier snapshots said, and a field present but unreadable (a price of « sur demande ») is left out and counted in
 * the import's report.
 *
 * | field | names (first found wins) | read as |
 * |---|---|---|
 * | portail | portail, portal, source, site, plateforme | `portal_a`, `portal_b`, `portal_c` (also `a`, `PORTAL-A`) |
 * | identifiant | id, identifiant, listing_id, id_annonce, annonce_id, ref, reference | text or number; `portal_a:123` also gives the portal |
 * | lien | lien, url, link, permalink, href | text |
 * | vu_le | vu_le, seen_at, scraped_at, crawled_at, date_releve, releve_le, observed_at, date | ISO 8601, AAAA-MM-JJ, JJ/MM/AAAA, Unix seconds or milliseconds |
 * | statut | statut, status, etat, state | actif (active, online, published…), retire (withdrawn, removed, expired, sold, vendu…), masque (suspended, under_review, moderation, hidden…); actif when absent |
 * | type | type, type_bien, property_type, categorie, category, nature | appartement (apartment, flat, studio, loft, duplex…), maison (house, villa, pavillon…), immeuble (building); another kind of property (land, parking, shop) is rejected |
 * | neuf_ancien | neuf_ancien, etat_construction, neuf, new_build, programme_neuf | neuf / ancien, or a boolean « neuf » |
 * | prix | prix, price, prix_eur, prix_vente, montant, price_eur | euros: 250000, « 250 000 € », « 250.000 € », « €250,000 », « 250k€ » |
 * | prix_m2_portail | prix_m2, prix_m2_portail, price_per_m2, price_m2 | €/m², as the portal writes it (never served as `prix_m2`) |
 * | surface | surface, surface_m2, surface_habitable, living_area, area, sqm, superficie | m²: 45.5, « 45,5 m² » |
 * | pieces | pieces, rooms, nb_pieces, nombre_pieces, room_count | integer, « T3 », « F3 », « 3 pièces », studio = 1 |
 * | chambres | chambres, bedrooms, nb_chambres | integer |
 * | etage | etage, floor, niveau | integer, « RDC » = 0, « 3e » |
 * | nb_etages | nb_etages, nombre_etages, floors, building_floors | integer |
 * | salles_de_bain, salles_d_eau | salles_de_bain, bathrooms, sdb ; salles_d_eau, shower_rooms | integers |
 * | terrain | terrain_m2, terrain, surface_terrain, land, land_area, lot_size | m² as the portal writes it (`terrain_portail_m2`) |
 * | jardin_privatif_m2 | jardin_privatif_m2, jardin_m2, garden_area | m² |
 * | annee_construction | annee_construction, year_built, construction_year | year |
 * | dpe | dpe, dpe_classe, classe_energie, energy_class, etiquette_dpe; or an object {classe, valeur…} | letter A-G; « NS »/« non soumis » and « vierge » set `ges_statut` |
 * | conso_kwh_m2_an | conso_kwh_m2_an, dpe_valeur, conso_energie, energy_consumption | kWh/m²/an |
 * | ges, ges_kg_m2_an | ges, ges_classe, ghg_class ; ges_kg_m2_an, ges_valeur, ghg_emissions | letter A-G ; kg CO₂/m²/an |
 * | equipements | equipements, equipment, features, amenities, options | object of booleans and texts, or list of labels (`["ascenseur", "balcony"]`); top-level booleans too (`ascenseur: true`) |
 * | details_portail | details_portail, details, portal_details (or top level) | prix_hors_honoraires, honoraires (€, or « 5 % » of the price), honoraires_a_charge (acquereur/vendeur), taxe_fonciere, charges_copro_annuelles (or charges_mensuelles × 12), budget_energie_min/max, lots_copro, procedure_copro, en_copro |
 * | type_vendeur | type_vendeur, seller_type, vendeur_type, annonceur_type, publisher_type | pro (agence, professional, mandataire…), particulier (private, owner, pap…); without it, pro when a SIREN or a mandate is given, else inconnu |
 * | annonceur | annonceur, vendeur, seller, agence, agency, advertiser (or flat agence_nom, siren…) | nom (name), enseigne (brand, reseau), siren (or the first 9 digits of a SIRET), mandat (simple / exclusif), telephone (phone), email, code_postal: kept for a professional only |
 * | titre, description | titre, title ; description, texte, desc, body | text |
 * | photos | photos, images, pictures, photo_urls | list of links (or of objects with `url`) |
 * | position | position, location, geo, coordonnees (object {lat, lon/lng}, GeoJSON point, or `[lat, lon]`), or top-level lat/latitude and lon/lng/longitude | WGS84 |
 * | precision | precision, position_precision, geo_precision, accuracy | adresse (exact, rooftop…), approchee (approximate, quartier…), centre_commune (city…), inconnue; approchee when coordinates come without it |
 * | commune, code_postal, insee | commune, ville, city ; code_postal, cp, postcode, zip ; insee, code_insee, citycode | texts; the INSEE code is found from the postal code (and the name) when absent |
 * | premiere_parution | premiere_parution, first_published, published_at, date_publication, date_parution | date; when absent, the first snapshot's day, said estimated |
 */

export const PORTAILS = ['portal_a', 'portal_b', 'portal_c'] as const;
export type Portail = (typeof PORTAILS)[number];
export const STATUTS = ['actif', 'retire', 'masque'] as const;
export type Statut = (typeof STATUTS)[number];
export const TYPES_BIEN = ['appartement', 'maison', 'immeuble'] as const;
export type TypeBien = (typeof TYPES_BIEN)[number];
export const PRECISIONS = ['adresse', 'approchee', 'centre_commune', 'inconnue'] as const;
export type Precision = (typeof PRECISIONS)[number];
export const TYPES_VENDEUR = ['pro', 'particulier', 'inconnu'] as const;
export type TypeVendeur = (typeof TYPES_VENDEUR)[number];
export const CLASSES = ['A', 'B', 'C', 'D', 'E', 'F', 'G'] as const;
export type Classe = (typeof CLASSES)[number];

export interface Dpe {
  etiquette: Classe | null;
  conso_kwh_m2_an: number | null;
  ges: Classe | null;
  ges_kg_m2_an: number | null;
  ges_statut: 'non_soumis' | 'vierge' | null;
}

export const EQUIPEMENTS_BOOLEENS = [
  'ascenseur',
  'balcon',
  'cave',
  'parking',
  'meuble',
  'terrasse',
  'jardin',
  'piscine',
  'garage',
  'cuisine_equipee',
  'visite_virtuelle',
] as const;
export const EQUIPEMENTS_TEXTES = ['orientation', 'chauffage', 'chauffage_mode'] as const;
export type Equipements = Record<(typeof EQUIPEMENTS_BOOLEENS)[number], boolean | null> &
  Record<(typeof EQUIPEMENTS_TEXTES)[number], string | null> & { liste: string[] };

export const DETAILS_NOMBRES = [
  'prix_hors_honoraires',
  'honoraires',
  'taxe_fonciere',
  'charges_copro_annuelles',
  'budget_energie_min',
  'budget_energie_max',
  'lots_copro',
] as const;
export type DetailsPortail = Record<(typeof DETAILS_NOMBRES)[number], number | null> & {
  honoraires_a_charge: 'acquereur' | 'vendeur' | null;
  procedure_copro: boolean | null;
  en_copro: boolean | null;
};

/** A professional seller as a snapshot names them. */
export interface AnnonceurLu {
  nom: string | null;
  enseigne: string | null;
  siren: string | null;
  mandat: 'simple' | 'exclusif' | null;
  telephone: string | null;
  email: string | null;
  code_postal: string | null;
}

/** The fields of a listing a snapshot may give; each is absent when the snapshot does not give it. */
export interface Champs {
  type: TypeBien;
  neuf_ancien: 'neuf' | 'ancien';
  commune: string;
  code_postal: string;
  insee: string;
  lat: number;
  lon: number;
  precision_position: Precision;
  prix: number;
  prix_m2_portail: number;
  surface: number;
  pieces: number;
  chambres: number;
  etage: number;
  nb_etages: number;
  salles_de_bain: number;
  salles_d_eau: number;
  terrain_portail_m2: number;
  jardin_privatif_m2: number;
  annee_construction: number;
  titre: string;
  description: string;
  photos: string[];
  premiere_parution: string;
  dpe: Partial<Dpe>;
  equipements: Partial<Equipements>;
  details_portail: Partial<DetailsPortail>;
}

/** One snapshot, read. */
export interface Releve {
  /** The line of the file (1-based). */
  ligne: number;
  portail: Portail;
  identifiant: string;
  lien: string | null;
  /** ISO 8601 instant. */
  vuLe: string;
  statut: Statut;
  /** As the snapshot declares it (or a professional when it gives a SIREN or a mandate); null when it says nothing. */
  typeVendeur: TypeVendeur | null;
  /** The seller's identity as given (kept by the importer for a professional only). */
  annonceur: AnnonceurLu | null;
  champs: Partial<Champs>;
  /** Fields present but unreadable, left out. */
  illisibles: string[];
  /** The line as sent (kept for a professional only: `inclure=brut`). */
  brut: Record<string, unknown>;
}

// ---------------------------------------------------------------------------------------------------------------------
// Names.
// ---------------------------------------------------------------------------------------------------------------------

/** A key or a word as compared: lower case, no accents, runs of anything but letters and digits as one `_`. */
export function plier(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
}

const ALIAS = {
  portail: ['portail', 'portal', 'source', 'site', 'plateforme'],
  identifiant: ['id', 'identifiant', 'listing_id', 'id_annonce', 'annonce_id', 'ref', 'reference'],
  lien: ['lien', 'url', 'link', 'permalink', 'href'],
  vu_le: ['vu_le', 'seen_at', 'scraped_at', 'crawled_at', 'date_releve', 'releve_le', 'observed_at', 'date'],
  statut: ['statut', 'status', 'etat', 'state'],
  type: ['type', 'type_bien', 'property_type', 'categorie', 'category', 'nature'],
  neuf_ancien: ['neuf_ancien', 'etat_construction', 'neuf', 'new_build', 'programme_neuf'],
  prix: ['prix', 'price', 'prix_eur', 'prix_vente', 'montant', 'price_eur'],
  prix_m2_portail: ['prix_m2', 'prix_m2_portail', 'price_per_m2', 'price_m2'],
  surface: ['surface', 'surface_m2', 'surface_habitable', 'living_area', 'area', 'sqm', 'superficie'],
  pieces: ['pieces', 'rooms', 'nb_pieces', 'nombre_pieces', 'room_count'],
  chambres: ['chambres', 'bedrooms', 'nb_chambres'],
  etage: ['etage', 'floor', 'niveau'],
  nb_etages: ['nb_etages', 'nombre_etages', 'floors', 'building_floors'],
  salles_de_bain: ['salles_de_bain', 'bathrooms', 'sdb'],
  salles_d_eau: ['salles_d_eau', 'shower_rooms'],
  terrain_portail_m2: ['terrain_m2', 'terrain', 'surface_terrain', 'land', 'land_area', 'lot_size'],
  jardin_privatif_m2: ['jardin_privatif_m2', 'jardin_m2', 'garden_area'],
  annee_construction: ['annee_construction', 'year_built', 'construction_year'],
  dpe: ['dpe', 'dpe_classe', 'classe_energie', 'energy_class', 'etiquette_dpe'],
  conso_kwh_m2_an: ['conso_kwh_m2_an', 'dpe_valeur', 'conso_energie', 'energy_consumption'],
  ges: ['ges', 'ges_classe', 'ghg_class'],
  ges_kg_m2_an: ['ges_kg_m2_an', 'ges_valeur', 'ghg_emissions'],
  equipements: ['equipements', 'equipment', 'features', 'amenities', 'options'],
  details: ['details_portail', 'details', 'portal_details'],
  type_vendeur: ['type_vendeur', 'seller_type', 'vendeur_type', 'annonceur_type', 'publisher_type'],
  annonceur: ['annonceur', 'vendeur', 'seller', 'agence', 'agency', 'advertiser'],
  titre: ['titre', 'title'],
  description: ['description', 'texte', 'desc', 'body'],
  photos: ['photos', 'images', 'pictures', 'photo_urls'],
  position: ['position', 'location', 'geo', 'coordonnees'],
  lat: ['lat', 'latitude'],
  lon: ['lon', 'lng', 'long', 'longitude'],
  precision: ['precision', 'position_precision', 'geo_precision', 'accuracy'],
  commune: ['commune', 'ville', 'city'],
  code_postal: ['code_postal', 'cp', 'postcode', 'zip', 'postal_code'],
  insee: ['insee', 'code_insee', 'citycode'],
  premiere_parution: ['premiere_parution', 'first_published', 'published_at', 'date_publication', 'date_parution'],
  // The seller, inside its object or flat at the top level.
  nom: ['nom', 'name', 'raison_sociale', 'agence_nom', 'agency_name', 'nom_agence'],
  enseigne: ['enseigne', 'brand', 'reseau', 'network', 'marque'],
  siren: ['siren', 'siret'],
  mandat: ['mandat', 'mandate', 'type_mandat', 'mandate_type'],
  telephone: ['telephone', 'phone', 'tel', 'telephone_pro'],
  email: ['email', 'mail', 'courriel', 'e_mail'],
  // Details of the portal, inside their object or flat.
  prix_hors_honoraires: ['prix_hors_honoraires', 'prix_hors_frais', 'price_excluding_fees', 'prix_net_vendeur'],
  honoraires: ['honoraires', 'frais_agence', 'agency_fees', 'fees'],
  honoraires_a_charge: ['honoraires_a_charge', 'fees_paid_by', 'charge_honoraires'],
  taxe_fonciere: ['taxe_fonciere', 'property_tax'],
  charges_copro_annuelles: [
    'charges_copro_annuelles',
    'charges_annuelles',
    'charges',
    'charges_copropriete',
    'condo_fees',
    'annual_charges',
  ],
  charges_mensuelles: ['charges_mensuelles', 'monthly_charges'],
  budget_energie_min: ['budget_energie_min', 'energy_cost_min'],
  budget_energie_max: ['budget_energie_max', 'energy_cost_max'],
  lots_copro: ['lots_copro', 'nb_lots', 'lots', 'copro_lots'],
  procedure_copro: ['procedure_copro', 'procedure_en_cours', 'syndic_procedure'],
  en_copro: ['en_copro', 'copropriete', 'condominium', 'is_condo'],
} as const;
type Nom = keyof typeof ALIAS;

/** An object's values by folded key (the first key of a fold wins). */
type Plie = Map<string, unknown>;

function plie(objet: Record<string, unknown>): Plie {
  const m: Plie = new Map();
  for (const [k, v] of Object.entries(objet)) {
    const cle = plier(k);
    if (!m.has(cle)) m.set(cle, v);
  }
  return m;
}

const vide = (v: unknown) => v === undefined || v === null || (typeof v === 'string' && v.trim() === '');

/** The value of a field under its first name present, or undefined. */
function valeur(o: Plie | null, nom: Nom): unknown {
  if (!o) return undefined;
  for (const alias of ALIAS[nom]) {
    const v = o.get(alias);
    if (!vide(v)) return v;
  }
  return undefined;
}

/** Every value a field is given under its names, in the order of its names: the first readable one is taken. */
class Parmi {
  readonly valeurs: unknown[];
  constructor(v: unknown[]) {
    this.valeurs = v;
  }
}

function valeurs(o: Plie, nom: Nom): Parmi {
  return new Parmi(ALIAS[nom].map((alias) => o.get(alias)).filter((v) => !vide(v)));
}

const estObjet = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

// ---------------------------------------------------------------------------------------------------------------------
// Values.
// ---------------------------------------------------------------------------------------------------------------------

/** Unreadable: the field is left out, and counted. */
const ILLISIBLE = Symbol('illisible');

/**
 * A decimal number written with thousands separators or a decimal comma. `milliers`: a run of groups of three after
 * a dot or a comma is thousands (« 250.000 », « 250,000 »), as prices are written; a surface's dot is decimal.
 */
function decimal(token: string, milliers: boolean): number | null {
  let t = token;
  const point = t.includes('.');
  const virgule = t.includes(',');
  if (point && virgule) {
    const decimale = t.lastIndexOf('.') > t.lastIndexOf(',') ? '.' : ',';
    t = t.replaceAll(decimale === '.' ? ',' : '.', '').replace(decimale, '.');
  } else if (virgule || point) {
    const sep = virgule ? ',' : '.';
    const groupes = new RegExp(`^\\d{1,3}(?:\\${sep}\\d{3})+$`);
    if ((milliers || virgule) && groupes.test(t) && (milliers || t.split(sep).length > 2)) t = t.replaceAll(sep, '');
    else if (t.split(sep).length === 2) t = t.replace(sep, '.');
    else return null;
  }
  const n = Number(t);
  return Number.isFinite(n) ? n : null;
}

const ESPACES = /[\s\u00a0\u202f\u2009\u2007']/g;

/** Euros: a number, or text with spaces, separators, a currency and a `k` or `M` multiplier. */
export function montant(v: unknown): number | null {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (typeof v !== 'string') return null;
  const t = v
    .normalize('NFKC')
    .toLowerCase()
    .replace(ESPACES, '')
    .replace(/(?:\/|par)m(?:²|2)$/, '')
    .replace(/€|eur(?:os?)?|hai|fai|ttc/g, '');
  const m = /^([+-]?\d[\d.,]*)(k|m|mio)?$/.exec(t);
  if (!m) return null;
  const n = decimal(m[1], m[2] === undefined);
  if (n === null) return null;
  return m[2] === 'k' ? n * 1000 : m[2] ? n * 1_000_000 : n;
}

/** A measure (m², kWh/m²/an, kg/m²/an, a year): a number, or text with a unit; a dot is decimal. */
export function mesure(v: unknown): number | null {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (typeof v !== 'string') return null;
  const t = v.normalize('NFKC').toLowerCase().replace(ESPACES, '');
  const m = /^([+-]?\d[\d.,]*)(?:m²|m2|m\^2|sqm|mc|kwh.*|kg.*|m)?$/.exec(t);
  return m ? decimal(m[1], false) : null;
}

/** A count: a number, or « T3 », « F2 », « 3 pièces », « 2p », studio = 1. */
function compte(v: unknown): number | null {
  if (typeof v === 'number') return Number.isInteger(v) && v >= 0 ? v : null;
  if (typeof v !== 'string') return null;
  const t = plier(v);
  if (t === 'studio') return 1;
  const m = /^(?:t|f|type_)?(\d{1,3})(?:_?(?:pieces?|p|rooms?|chambres?|ch|pi))?$/.exec(t);
  return m ? Number(m[1]) : null;
}

/** A floor: a number, « RDC », « rez-de-chaussée », « 3e », « 3ème étage ». */
function etage(v: unknown): number | null {
  if (typeof v === 'number') return Number.isInteger(v) ? v : null;
  if (typeof v !== 'string') return null;
  const t = plier(v);
  if (/^(?:rdc|rez_de_chaussee|ground|ground_floor|0)$/.test(t)) return 0;
  const m = /^(-?\d{1,3})(?:_?(?:e|er|eme|ere|th|st|nd|rd))?(?:_?(?:etage|floor))?$/.exec(t);
  return m ? Number(m[1]) : null;
}

function booleen(v: unknown): boolean | null {
  if (typeof v === 'boolean') return v;
  if (typeof v === 'number') return v === 1 ? true : v === 0 ? false : null;
  if (typeof v !== 'string') return null;
  const t = plier(v);
  if (['oui', 'yes', 'true', 'vrai', '1', 'o', 'y'].includes(t)) return true;
  if (['non', 'no', 'false', 'faux', '0', 'n'].includes(t)) return false;
  return null;
}

function texte(v: unknown, max: number): string | null {
  if (typeof v === 'number') return String(v);
  if (typeof v !== 'string') return null;
  const t = v.trim();
  return t ? t.slice(0, max) : null;
}

const jourIso = (d: Date) => d.toISOString().slice(0, 10);

/** An instant: ISO 8601 (a day alone is its midnight UTC), JJ/MM/AAAA [HH:MM[:SS]], Unix seconds or milliseconds. */
export function instant(v: unknown): Date | null {
  if (typeof v === 'number') {
    if (!Number.isFinite(v) || v <= 0) return null;
    const d = new Date(v > 1e11 ? v : v * 1000);
    return Number.isNaN(d.getTime()) ? null : d;
  }
  if (typeof v !== 'string') return null;
  const t = v.trim();
  const fr = /^(\d{1,2})\/(\d{1,2})\/(\d{4})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2}))?)?$/.exec(t);
  let iso = t;
  if (fr) {
    const [, j, m, a, h, mi, s] = fr;
    const jour = `${a}-${m.padStart(2, '0')}-${j.padStart(2, '0')}`;
    // A day alone is its midnight UTC, as in ISO; a time is the portal's local time (see below).
    iso = h ? `${jour}T${h.padStart(2, '0')}:${mi}:${s ?? '00'}${offsetParis(jour)}` : `${jour}T00:00:00Z`;
  } else if (/^\d{4}-\d{2}-\d{2}$/.test(t)) {
    iso = `${t}T00:00:00Z`;
  } else if (/^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?$/.test(t)) {
    // A time without an offset is the portal's local time, Paris: written as UTC it would move events across days.
    iso = `${t.replace(' ', 'T')}${offsetParis(t.slice(0, 10))}`;
  } else if (!/^\d{4}-\d{2}-\d{2}T.+(?:Z|[+-]\d{2}:?\d{2})$/.test(t)) {
    return null;
  }
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return null;
  // No 31 April: the day written must be the day read.
  if (/^\d{4}-\d{2}-\d{2}T00:00:00Z$/.test(iso) && !d.toISOString().startsWith(iso.slice(0, 10))) return null;
  return d;
}

// Made once, not per snapshot: building a DateTimeFormat costs more than reading a snapshot's dates.
const HEURE_PARIS = new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Paris', hour: '2-digit', hour12: false });
const JOUR_PARIS = new Intl.DateTimeFormat('fr-CA', { timeZone: 'Europe/Paris' });

/** Paris's offset on a day (+01:00 in winter, +02:00 in summer). */
function offsetParis(jour: string): string {
  const midi = new Date(`${jour}T12:00:00Z`);
  if (Number.isNaN(midi.getTime())) return 'Z';
  const heure = Number(HEURE_PARIS.format(midi));
  return `+0${heure - 12}:00`;
}

/** The calendar day of an instant in Paris (AAAA-MM-JJ): price changes are deduplicated by it. */
export function jourParis(d: Date | string): string {
  return JOUR_PARIS.format(new Date(d));
}

function dateJour(v: unknown): string | null {
  const d = instant(v);
  return d ? jourIso(d) : null;
}

/** A word of a closed list, by folded synonyms. */
function mot<T extends string>(v: unknown, table: Record<string, T>): T | null {
  if (typeof v !== 'string' && typeof v !== 'number') return null;
  return table[plier(String(v))] ?? null;
}

function table<T extends string>(entrees: Record<T, string[]>): Record<string, T> {
  const out: Record<string, T> = {};
  for (const [valeurCible, synonymes] of Object.entries(entrees) as Array<[T, string[]]>) {
    for (const s of [valeurCible, ...synonymes]) out[plier(s)] = valeurCible;
  }
  return out;
}

const PORTAIL = table<Portail>({
  portal_a: ['a', 'portala', 'portal-a'],
  portal_b: ['b', 'portalb', 'portal-b'],
  portal_c: ['c', 'portalc', 'portal-c'],
});

const STATUT = table<Statut>({
  actif: [
    'active',
    'online',
    'en_ligne',
    'publie',
    'publiee',
    'published',
    'disponible',
    'available',
    'live',
    'visible',
  ],
  retire: [
    'retiree',
    'withdrawn',
    'removed',
    'offline',
    'hors_ligne',
    'expired',
    'expire',
    'expiree',
    'sold',
    'vendu',
    'vendue',
    'archived',
    'archive',
    'archivee',
    'deleted',
    'supprime',
    'supprimee',
    'inactive',
    'inactif',
    'closed',
    'off',
  ],
  masque: [
    'masquee',
    'suspended',
    'suspendu',
    'suspendue',
    'under_review',
    'en_controle',
    'controle',
    'moderation',
    'en_moderation',
    'pending_review',
    'hidden',
    'blocked',
    'bloque',
    'bloquee',
    'review',
  ],
});

const TYPE = table<TypeBien>({
  appartement: ['appart', 'apartment', 'flat', 'studio', 'loft', 'duplex', 'triplex', 'chambre', 'appartements'],
  maison: ['house', 'villa', 'pavillon', 'mas', 'longere', 'chalet', 'ferme', 'propriete', 'bastide', 'maisons'],
  immeuble: ['building', 'immeuble_de_rapport', 'immeubles'],
});

/** Kinds of property that are no dwelling: their listings are not ours to serve. */
const HORS_LOGEMENT = new Set(
  [
    'terrain',
    'land',
    'parking',
    'garage',
    'box',
    'local',
    'local_commercial',
    'commerce',
    'bureau',
    'bureaux',
    'office',
    'shop',
    'entrepot',
    'cave',
    'fonds_de_commerce',
    'viager',
  ].map(plier),
);

const VENDEUR = table<TypeVendeur>({
  pro: ['professionnel', 'professional', 'agence', 'agency', 'agent', 'mandataire', 'promoteur', 'notaire', 'reseau'],
  particulier: ['private', 'prive', 'owner', 'proprietaire', 'individual', 'pap', 'particular', 'particuliers'],
  inconnu: ['unknown', 'autre', 'other'],
});

const PRECISION = table<Precision>({
  adresse: ['address', 'exact', 'exacte', 'rooftop', 'numero', 'housenumber', 'precise'],
  approchee: ['approximate', 'approx', 'approximative', 'quartier', 'rue', 'street', 'floue', 'blurred', 'zone'],
  centre_commune: ['commune', 'city', 'town', 'municipality', 'ville', 'city_center', 'centre_ville'],
  inconnue: ['unknown', 'none'],
});

const MANDAT = table<'simple' | 'exclusif'>({
  simple: ['non_exclusif', 'classique', 'standard'],
  exclusif: ['exclusive', 'exclusivite', 'exclusivity', 'semi_exclusif'],
});

const CHARGE = table<'acquereur' | 'vendeur'>({
  acquereur: ['acheteur', 'buyer', 'acquereurs', 'charge_acquereur'],
  vendeur: ['seller', 'charge_vendeur'],
});

const NEUF = table<'neuf' | 'ancien'>({ neuf: ['new', 'vefa', 'programme_neuf'], ancien: ['old', 'existing'] });

const EQUIPEMENT = table<(typeof EQUIPEMENTS_BOOLEENS)[number]>({
  ascenseur: ['elevator', 'lift'],
  balcon: ['balcony', 'balcons'],
  cave: ['cellar', 'basement'],
  parking: ['place_de_parking', 'stationnement', 'parking_space'],
  meuble: ['furnished', 'meublee'],
  terrasse: ['terrace'],
  jardin: ['garden'],
  piscine: ['pool', 'swimming_pool'],
  garage: ['box'],
  cuisine_equipee: ['fitted_kitchen', 'equipped_kitchen', 'cuisine_amenagee'],
  visite_virtuelle: ['virtual_tour', 'visite_3d'],
});
const EQUIPEMENT_TEXTE = table<(typeof EQUIPEMENTS_TEXTES)[number]>({
  orientation: ['exposure', 'exposition'],
  chauffage: ['heating'],
  chauffage_mode: ['mode_chauffage', 'heating_mode', 'heating_type'],
});

// ---------------------------------------------------------------------------------------------------------------------
// A line.
// ---------------------------------------------------------------------------------------------------------------------

/** Plausible bounds: a value outside them is unreadable (a price of 1 €, a surface of 0). */
const BORNES = {
  prix: [1_000, 200_000_000],
  surface: [1, 20_000],
  terrain: [0, 10_000_000],
  prix_m2: [10, 100_000],
} as const;
const dans = (n: number | null, [min, max]: readonly [number, number]) => n !== null && n >= min && n <= max;

function classe(v: unknown): Classe | 'non_soumis' | 'vierge' | null {
  if (typeof v !== 'string') return null;
  const t = v.trim().toUpperCase();
  const p = plier(t);
  if (['ns', 'non_soumis', 'not_applicable', 'exempt'].includes(p)) return 'non_soumis';
  if (['vierge', 'vi', 'blank', 'en_cours', 'nc', 'n_c', 'non_communique'].includes(p)) return 'vierge';
  const m = /^([A-G])(?![A-Z])/.exec(t);
  return m ? (m[1] as Classe) : null;
}

/** The SIREN of a text: 9 digits, or the first 9 of a 14-digit SIRET, spaces ignored. */
function siren(v: unknown): string | null {
  const t = String(v ?? '').replace(/[\s.]/g, '');
  if (/^\d{9}$/.test(t)) return t;
  if (/^\d{14}$/.test(t)) return t.slice(0, 9);
  return null;
}

/** Reads one line; a string is the reason it is rejected. */
export function lireReleve(ligne: number, texteLigne: string, maintenant: Date): Releve | string {
  let brut: unknown;
  try {
    brut = JSON.parse(texteLigne);
  } catch (error) {
    return `JSON illisible (${(error as Error).message.slice(0, 120)})`;
  }
  if (!estObjet(brut)) return 'un objet JSON est attendu sur chaque ligne';
  const o = plie(brut);
  const illisibles: string[] = [];
  /** The value of a field read by `lire`; unreadable values are left out and named. */
  function lu<T>(nom: string, v: unknown, lire: (v: unknown) => T | null): T | undefined {
    const candidats = v instanceof Parmi ? v.valeurs : vide(v) ? [] : [v];
    if (candidats.length === 0) return undefined;
    for (const candidat of candidats) {
      const r = lire(candidat);
      if (r !== null) return r;
    }
    illisibles.push(nom);
    return undefined;
  }

  // Identity: the portal, its identifier, the time.
  let identifiant = texte(valeur(o, 'identifiant'), 200);
  let portail = mot(valeur(o, 'portail'), PORTAIL);
  if (identifiant) {
    const prefixe = /^(portal_[abc]):(.+)$/i.exec(identifiant);
    if (prefixe) {
      const dit = PORTAIL[plier(prefixe[1])]!;
      if (portail && portail !== dit) return `identifiant « ${identifiant} » d’un autre portail que ${portail}`;
      portail = dit;
      identifiant = prefixe[2].trim();
    }
  }
  if (!valeur(o, 'portail') && !portail) return 'portail absent (portail, portal, source)';
  if (!portail)
    return `portail inconnu « ${String(valeur(o, 'portail')).slice(0, 40)} » (portal_a, portal_b, portal_c)`;
  if (!identifiant) return 'identifiant absent (id, identifiant, listing_id)';
  const vu = valeur(o, 'vu_le');
  if (vu === undefined) return 'date du relevé absente (vu_le, seen_at, scraped_at)';
  const vuLe = instant(vu);
  if (!vuLe) return `date du relevé illisible « ${String(vu).slice(0, 40)} »`;
  if (vuLe.getTime() > maintenant.getTime() + 86_400_000) return `date du relevé dans le futur (${vuLe.toISOString()})`;
  const statutBrut = valeur(o, 'statut');
  const statut = statutBrut === undefined ? 'actif' : mot(statutBrut, STATUT);
  if (!statut) return `statut inconnu « ${String(statutBrut).slice(0, 40)} » (actif, retire, masque)`;

  const champs: Partial<Champs> = {};
  const typeBrut = valeur(o, 'type');
  if (typeBrut !== undefined) {
    const type = mot(typeBrut, TYPE);
    if (!type) {
      const hors = typeof typeBrut === 'string' && HORS_LOGEMENT.has(plier(typeBrut));
      return hors
        ? `type hors logement « ${typeBrut} » : seuls appartements, maisons et immeubles sont servis`
        : `type inconnu « ${String(typeBrut).slice(0, 40)} » (appartement, maison, immeuble)`;
    }
    champs.type = type;
  }
  const neuf = valeur(o, 'neuf_ancien');
  const lireNeuf = (v: unknown) => mot(v, NEUF) ?? (booleen(v) === null ? null : booleen(v) ? 'neuf' : 'ancien');
  const na = lu('neuf_ancien', neuf, lireNeuf);
  if (na) champs.neuf_ancien = na;

  const assigner = <K extends keyof Champs>(cle: K, v: Champs[K] | undefined) => {
    if (v !== undefined) champs[cle] = v;
  };
  const prix = lu('prix', valeurs(o, 'prix'), (v) => {
    const n = montant(v);
    return dans(n, BORNES.prix) ? Math.round(n!) : null;
  });
  assigner('prix', prix);
  assigner(
    'prix_m2_portail',
    lu('prix_m2_portail', valeurs(o, 'prix_m2_portail'), (v) => {
      const n = montant(v);
      return dans(n, BORNES.prix_m2) ? n : null;
    }),
  );
  assigner(
    'surface',
    lu('surface', valeurs(o, 'surface'), (v) => {
      const n = mesure(v);
      return dans(n, BORNES.surface) ? Math.round(n! * 100) / 100 : null;
    }),
  );
  assigner('pieces', lu('pieces', valeurs(o, 'pieces'), compte));
  assigner('chambres', lu('chambres', valeurs(o, 'chambres'), compte));
  assigner('etage', lu('etage', valeurs(o, 'etage'), etage));
  assigner('nb_etages', lu('nb_etages', valeurs(o, 'nb_etages'), compte));
  assigner('salles_de_bain', lu('salles_de_bain', valeurs(o, 'salles_de_bain'), compte));
  assigner('salles_d_eau', lu('salles_d_eau', valeurs(o, 'salles_d_eau'), compte));
  const surfaceTerrain = (v: unknown) => {
    const n = mesure(v);
    return dans(n, BORNES.terrain) ? n : null;
  };
  assigner('terrain_portail_m2', lu('terrain_portail_m2', valeurs(o, 'terrain_portail_m2'), surfaceTerrain));
  assigner('jardin_privatif_m2', lu('jardin_privatif_m2', valeurs(o, 'jardin_privatif_m2'), surfaceTerrain));
  assigner(
    'annee_construction',
    lu('annee_construction', valeurs(o, 'annee_construction'), (v) => {
      const n = mesure(v);
      return n !== null && Number.isInteger(n) && n >= 1000 && n <= maintenant.getUTCFullYear() + 5 ? n : null;
    }),
  );
  assigner(
    'titre',
    lu('titre', valeurs(o, 'titre'), (v) => texte(v, 300)),
  );
  assigner(
    'description',
    lu('description', valeurs(o, 'description'), (v) => texte(v, 20_000)),
  );
  assigner(
    'photos',
    lu('photos', valeurs(o, 'photos'), (v) => {
      if (!Array.isArray(v)) return null;
      const liens = v
        .map((p) => (estObjet(p) ? (p.url ?? p.href ?? p.src) : p))
        .filter((p): p is string => typeof p === 'string' && /^https?:\/\//i.test(p.trim()))
        .map((p) => p.trim().slice(0, 1000));
      return liens.slice(0, 100);
    }),
  );
  assigner('premiere_parution', lu('premiere_parution', valeurs(o, 'premiere_parution'), dateJour));

  // Where.
  assigner(
    'commune',
    lu('commune', valeurs(o, 'commune'), (v) => texte(v, 120)),
  );
  assigner(
    'code_postal',
    lu('code_postal', valeurs(o, 'code_postal'), (v) => {
      const t = String(v).trim().padStart(5, '0');
      return /^\d{5}$/.test(t) ? t : null;
    }),
  );
  assigner(
    'insee',
    lu('insee', valeurs(o, 'insee'), (v) => {
      const t = String(v).trim().toUpperCase().padStart(5, '0');
      return /^(?:\d{2}|2[AB])\d{3}$/.test(t) ? t : null;
    }),
  );
  const position = lirePosition(o);
  if (position === ILLISIBLE) illisibles.push('position');
  else if (position) {
    champs.lat = position.lat;
    champs.lon = position.lon;
  }
  const precision =
    valeur(o, 'precision') ??
    valeur(
      estObjet(valeur(o, 'position')) ? plie(valeur(o, 'position') as Record<string, unknown>) : null,
      'precision',
    );
  if (precision !== undefined) {
    const p = lu('precision', precision, (v) => mot(v, PRECISION));
    if (p) champs.precision_position = p;
  } else if (position && position !== ILLISIBLE) {
    // Coordinates without a word on them never claim the address.
    champs.precision_position = 'approchee';
  }

  // Energy.
  const dpeObjet = valeur(o, 'dpe');
  const d = estObjet(dpeObjet) ? plie(dpeObjet) : null;
  const dpe: Partial<Dpe> = {};
  const etiquette = d ? (d.get('classe') ?? d.get('etiquette') ?? d.get('lettre') ?? d.get('class')) : dpeObjet;
  if (!vide(etiquette)) {
    const c = classe(etiquette);
    if (c === null) illisibles.push('dpe');
    else if (c === 'non_soumis' || c === 'vierge') {
      dpe.etiquette = null;
      dpe.ges_statut = c;
    } else dpe.etiquette = c;
  }
  const conso = valeur(o, 'conso_kwh_m2_an') ?? d?.get('valeur') ?? d?.get('conso') ?? d?.get('value');
  const c = lu('conso_kwh_m2_an', conso, mesure);
  if (c !== undefined) dpe.conso_kwh_m2_an = c;
  const gesBrut = valeur(o, 'ges') ?? d?.get('ges');
  if (!vide(gesBrut)) {
    const g = estObjet(gesBrut) ? classe(gesBrut.classe ?? gesBrut.etiquette) : classe(gesBrut);
    if (g === null) illisibles.push('ges');
    else if (g === 'non_soumis' || g === 'vierge') dpe.ges_statut = g;
    else dpe.ges = g;
  }
  const gesValeur = lu('ges_kg_m2_an', valeurs(o, 'ges_kg_m2_an') ?? d?.get('ges_valeur'), mesure);
  if (gesValeur !== undefined) dpe.ges_kg_m2_an = gesValeur;
  if (Object.keys(dpe).length > 0) champs.dpe = dpe;

  const equipements = lireEquipements(o, valeur(o, 'equipements'));
  if (equipements) champs.equipements = equipements;
  const details = lireDetails(o, prix ?? null, illisibles);
  if (Object.keys(details).length > 0) champs.details_portail = details;

  // The seller.
  const annonceurBrut = valeur(o, 'annonceur');
  const a = estObjet(annonceurBrut) ? plie(annonceurBrut) : null;
  const champVendeur = (nom: Nom) => valeur(a, nom) ?? valeur(o, nom);
  const annonceur: AnnonceurLu = {
    nom: texte(valeur(a, 'nom') ?? (typeof annonceurBrut === 'string' ? annonceurBrut : valeur(o, 'nom')), 200),
    enseigne: texte(champVendeur('enseigne'), 200),
    siren: siren(champVendeur('siren')),
    mandat: mot(champVendeur('mandat'), MANDAT),
    telephone: texte(champVendeur('telephone'), 40),
    email: texte(champVendeur('email'), 200),
    code_postal: (() => {
      const cp = texte(valeur(a, 'code_postal'), 10);
      return cp && /^\d{5}$/.test(cp) ? cp : null;
    })(),
  };
  const vendeurBrut = valeur(o, 'type_vendeur') ?? valeur(a, 'type_vendeur');
  let typeVendeur = mot(vendeurBrut, VENDEUR);
  if (!typeVendeur) {
    if (vendeurBrut !== undefined) illisibles.push('type_vendeur');
    // Only a professional has a SIREN or a mandate to show.
    typeVendeur = annonceur.siren || annonceur.mandat ? 'pro' : null;
  }
  const aUnAnnonceur = Object.values(annonceur).some((v) => v !== null);

  return {
    ligne,
    portail,
    identifiant,
    lien: texte(valeur(o, 'lien'), 1000),
    vuLe: vuLe.toISOString(),
    statut,
    typeVendeur,
    annonceur: aUnAnnonceur ? annonceur : null,
    champs,
    illisibles,
    brut,
  };
}

function lirePosition(o: Plie): { lat: number; lon: number } | null | typeof ILLISIBLE {
  const p = valeur(o, 'position');
  let lat: unknown;
  let lon: unknown;
  if (Array.isArray(p) && p.length === 2) [lat, lon] = p;
  else if (estObjet(p)) {
    const q = plie(p);
    if (Array.isArray(q.get('coordinates'))) [lon, lat] = q.get('coordinates') as unknown[];
    else {
      lat = valeur(q, 'lat');
      lon = valeur(q, 'lon');
    }
  } else if (typeof p === 'string' && /^-?[\d.]+\s*,\s*-?[\d.]+$/.test(p.trim())) {
    [lat, lon] = p.split(',');
  } else if (p === undefined) {
    lat = valeur(o, 'lat');
    lon = valeur(o, 'lon');
  } else return ILLISIBLE;
  if (vide(lat) && vide(lon)) return null;
  const la = typeof lat === 'string' ? Number(lat.trim()) : lat;
  const lo = typeof lon === 'string' ? Number(lon.trim()) : lon;
  if (typeof la !== 'number' || typeof lo !== 'number' || !Number.isFinite(la) || !Number.isFinite(lo))
    return ILLISIBLE;
  if (Math.abs(la) > 90 || Math.abs(lo) > 180 || (la === 0 && lo === 0)) return ILLISIBLE;
  return { lat: Math.round(la * 1e6) / 1e6, lon: Math.round(lo * 1e6) / 1e6 };
}

function lireEquipements(o: Plie, v: unknown): Partial<Equipements> | null {
  const out: Partial<Equipements> = {};
  const liste = new Set<string>();
  const noter = (nom: string, valeurEquipement: unknown) => {
    const b = EQUIPEMENT[plier(nom)];
    const t = EQUIPEMENT_TEXTE[plier(nom)];
    if (b) {
      const oui = valeurEquipement === undefined ? true : booleen(valeurEquipement);
      if (oui !== null) out[b] = oui;
      if (oui) liste.add(b);
    } else if (t) {
      const x = texte(valeurEquipement, 80);
      if (x) out[t] = x;
    } else if (valeurEquipement === undefined || booleen(valeurEquipement) === true) {
      const libre = texte(nom, 60);
      if (libre) liste.add(libre);
    }
  };
  if (Array.isArray(v)) {
    for (const item of v) if (typeof item === 'string') noter(item, undefined);
  } else if (estObjet(v)) {
    for (const [k, x] of Object.entries(v)) noter(k, x);
  }
  // Equipment flat at the top level (`ascenseur: true`, `heating: "gaz"`), unless its object says it already.
  const dejaDits = new Set(estObjet(v) ? Object.keys(v).map(plier) : []);
  for (const [cle, x] of o) {
    if ((EQUIPEMENT[cle] || EQUIPEMENT_TEXTE[cle]) && !vide(x) && !dejaDits.has(cle)) noter(cle, x);
  }
  if (liste.size > 0) out.liste = [...liste].slice(0, 50);
  return Object.keys(out).length > 0 ? out : null;
}

function lireDetails(o: Plie, prix: number | null, illisibles: string[]): Partial<DetailsPortail> {
  const brut = valeur(o, 'details');
  const d = estObjet(brut) ? plie(brut) : null;
  const champ = (nom: Nom) => valeur(d, nom) ?? valeur(o, nom);
  const out: Partial<DetailsPortail> = {};
  const euros = (nom: (typeof DETAILS_NOMBRES)[number], v: unknown) => {
    if (vide(v)) return;
    const n = montant(v);
    if (n === null || n < 0) illisibles.push(nom);
    else out[nom] = Math.round(n * 100) / 100;
  };
  euros('prix_hors_honoraires', champ('prix_hors_honoraires'));
  const honoraires = champ('honoraires');
  if (typeof honoraires === 'string' && honoraires.includes('%')) {
    // « 5 % » of the price: euros when the price is known.
    const pct = mesure(honoraires.replace('%', ''));
    if (pct !== null && prix !== null) out.honoraires = Math.round((prix * pct) / 100);
    else illisibles.push('honoraires');
  } else euros('honoraires', honoraires);
  const charge = champ('honoraires_a_charge');
  if (!vide(charge)) {
    const c = mot(charge, CHARGE);
    if (c) out.honoraires_a_charge = c;
    else illisibles.push('honoraires_a_charge');
  }
  euros('taxe_fonciere', champ('taxe_fonciere'));
  euros('charges_copro_annuelles', champ('charges_copro_annuelles'));
  if (out.charges_copro_annuelles === undefined) {
    const mensuelles = champ('charges_mensuelles');
    const n = vide(mensuelles) ? null : montant(mensuelles);
    if (n !== null && n >= 0) out.charges_copro_annuelles = Math.round(n * 12 * 100) / 100;
    else if (!vide(mensuelles)) illisibles.push('charges_mensuelles');
  }
  euros('budget_energie_min', champ('budget_energie_min'));
  euros('budget_energie_max', champ('budget_energie_max'));
  const lots = champ('lots_copro');
  if (!vide(lots)) {
    const n = compte(lots);
    if (n === null) illisibles.push('lots_copro');
    else out.lots_copro = n;
  }
  for (const nom of ['procedure_copro', 'en_copro'] as const) {
    const v = champ(nom);
    if (vide(v)) continue;
    const b = booleen(v);
    if (b === null) illisibles.push(nom);
    else out[nom] = b;
  }
  return out;
}
