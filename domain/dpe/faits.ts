import { z } from 'zod';
import type { Queryable } from '../../db/client.ts';
import { degreeCellsAround, metricCellIds, projectionOfDepartement } from '../../lib/geometrie.ts';
import { adresseParCle, type AdresseBan } from '../adresses/resoudre.ts';
import { defineOperation, selectable } from '../catalogue.ts';
import {
  dansCellules,
  drapeauxDeMutation,
  parNumero,
  surParcelles,
  PREMIER_MILLESIME_NUMERO,
} from '../dvf/operations.ts';
import { ApiError } from '../errors.ts';
import { drapeaux, QualiteSchema, servedFromDataset, type Drapeau, type Qualite } from '../qualite.ts';
import { CLASSES, type Classe, type DpeRow, numeroDeCle } from './import.ts';
import type { Dataset } from '../platform/sandbox.ts';
import { departementOf } from '../communes.ts';
import { absenceDvf } from '../couverture.ts';
import { annoncesAdresse, dernierReleve, enVenteAutour, SANS_ANNONCES, SOURCE_ANNONCES } from '../annonces/marche.ts';
import { TYPES_BIEN } from '../annonces/format.ts';
import { lireModele, lireScore } from '../pre-marche/lecture.ts';

// ---------------------------------------------------------------------------------------------------------------------
// Rules, each stated once (the description quotes them).
// ---------------------------------------------------------------------------------------------------------------------

/** First day letting a dwelling of this class is forbidden, mainland calendar (loi Climat et résilience, 2021). */
const INTERDICTION_LOCATION: Partial<Record<Classe, string>> = { G: '2025-01-01', F: '2028-01-01', E: '2034-01-01' };
/** Cells of the grid: side of `ilot` and of `cell4`, in projected metres. */
const PAS_ILOT_M = 100;
const PAS_CELL4_M = 10;
/** Radius of the `ilot` statistics around the address, and their period. */
const RAYON_ILOT_M = 100;
const ANS_ILOT = 5;
/** Sales of 2018-2020 are attached to a number by position only, within this distance (as ventes_adresse). */
const RAYON_POSITION_M = 15;
const MAX_MUTATIONS = 500;
const MAX_DPE = 1000;
/** A price median over fewer sales than this is flagged peu_d_observations. */
const MIN_OBSERVATIONS = 5;
/** Two DPEs of a flat describe the same dwelling when their living areas differ by at most this share. */
const ECART_SURFACE = 0.02;
const NATURES_VENTE = `('vente', 'vefa', 'adjudication', 'terrain_a_batir')`;
const NATURES_PRIX = `('vente', 'vefa', 'adjudication')`;
const SOURCE_DPE = 'Observatoire DPE (ADEME)';
const SOURCE_AUDIT = 'Audits énergétiques (ADEME)';
const SOURCE_DVF = 'DVF (DGFiP, Etalab)';
const SOURCE_COMMUNE = 'Découpage administratif (Etalab), DVF (DGFiP, Etalab)';
/** The listing group's rule (the description quotes it). */
const REGLE_ANNONCE =
  'Annonces rattachées au numéro BAN de l’adresse (l’adresse validée par un utilisateur pour l’annonce, sinon la position que le portail donne à l’adresse, à 15 m au plus du numéro) ; un bien (`bien_uid`) compte une fois quel que soit le nombre de ses annonces, sur plusieurs portails ou chez plusieurs agences. `n_actives` : biens dont une annonce rattachée est en ligne au dernier relevé ; `n_total` : tous les biens rattachés, en ligne, retirés ou en contrôle chez le portail. `derniere` : le bien vu le plus récemment à l’adresse (première vue la plus récente), par son annonce principale quand elle y est rattachée ; `agence` pour un vendeur professionnel seulement (nom, enseigne, SIREN) : un vendeur particulier n’est jamais nommé et aucune coordonnée n’est servie ; `lien` avec la portée lien_origine seulement (null sinon).';

/** Groups the specification names without fields, not served, and why (the description repeats it). */
const NON_SERVIS: Record<string, string> = {
  copropriete: 'aucune donnée de copropriété (registre national des copropriétés) n’est encore importée',
  permis: 'aucune autorisation d’urbanisme (Sitadel) n’est encore importée',
  societes_civiles: 'aucune société civile (SIRENE, BODACC) n’est encore importée',
};

// ---------------------------------------------------------------------------------------------------------------------
// Shapes.
// ---------------------------------------------------------------------------------------------------------------------

const dateAAAAMMJJ = (d: string) => z.string().describe(`${d} (AAAA-MM-JJ).`);
const ClasseSchema = z.enum(CLASSES);

const IdentiteSchema = z
  .object({
    cle_ban: z.string(),
    origine: z
      .enum(['ban', 'dpe'])
      .describe('ban : ligne de la Base Adresse Nationale ; dpe : adresse connue par un DPE seulement.'),
    adresse_numerotee: z.boolean().describe('La clé est celle d’un numéro (et non d’une voie).'),
    adresse: z.string().nullable(),
    numero: z.number().int().nullable(),
    rep: z.string().nullable().describe('Indice de répétition (bis, ter, a…).'),
    voie: z.string().nullable(),
    code_postal: z.string().nullable(),
    insee: z.string().nullable(),
    commune: z.string().nullable(),
    lieu_dit: z.string().nullable(),
    parcelles: z.array(z.string()).nullable().describe('Parcelles cadastrales du numéro ; null hors BAN.'),
    type_position: z.string().nullable(),
    lat: z.number().nullable(),
    lon: z.number().nullable(),
    ilot: z.string().nullable().describe('Maille de 100 m (`l93-100-<x>-<y>`).'),
    cell4: z.string().nullable().describe('Maille de 10 m (`l93-10-<x>-<y>`).'),
  })
  .describe('Identité de l’adresse.');

const BatimentSchema = z
  .object({
    type: z.enum(['maison', 'immeuble']).nullable(),
    surface_immeuble_m2: z.number().nullable(),
    periode: z.string().nullable().describe('Période de construction (avant 1948, 1948-1974…).'),
    annee: z.number().int().nullable(),
    niveaux: z.number().int().nullable(),
    appartements: z.number().int().nullable(),
  })
  .describe('Bâtiment, d’après les DPE de l’adresse.');

const DpeSchema = z
  .object({
    etiquette: ClasseSchema,
    ges: ClasseSchema.nullable(),
    conso_kwh_m2_an: z.number().nullable().describe('Énergie primaire, 5 usages (kWh/m²/an).'),
    ges_kg_m2_an: z.number().nullable().describe('Émissions, 5 usages (kg CO2e/m²/an).'),
    surface_m2: z.number().nullable(),
    chauffage_energie: z.string().nullable(),
    chauffage_installation: z.string().nullable().describe('individuel, collectif ou mixte (collectif-individuel).'),
    isolation_enveloppe: z.string().nullable().describe('très bonne, bonne, moyenne ou insuffisante.'),
    isolation_murs: z.string().nullable(),
    isolation_menuiseries: z.string().nullable(),
    ventilation: z.string().nullable(),
    methode: z.string().nullable(),
    numero: z.string(),
    etabli_le: dateAAAAMMJJ('Établissement du dernier DPE'),
    fin_validite: dateAAAAMMJJ('Fin de validité'),
    premier_le: dateAAAAMMJJ('Premier DPE connu à l’adresse'),
    jours_depuis: z.number().int().describe('Jours écoulés depuis l’établissement du dernier DPE.'),
    nb_total: z.number().int(),
    nb_12_mois: z.number().int(),
    nb_6_mois: z.number().int(),
    refait_pendant_validite: z.boolean(),
    historique: z.array(z.object({ date: z.string(), etiquette: ClasseSchema })).describe('Le plus récent d’abord.'),
    interdiction_location: z
      .string()
      .nullable()
      .describe('Premier jour d’interdiction de louer (métropole : G 2025-01-01, F 2028-01-01, E 2034-01-01).'),
    qualite: QualiteSchema,
  })
  .describe('Dernier DPE de l’adresse et son historique.');

const AuditSchema = z
  .object({
    etabli_le: z.string(),
    nb: z.number().int(),
    cout_travaux_max: z.number().nullable().describe('Coût cumulé le plus élevé des scénarios du dernier audit (€).'),
    classe_visee: ClasseSchema.nullable(),
    pack_pre_vente: z.boolean().nullable(),
    qualite: QualiteSchema,
  })
  .describe('Audit énergétique.');

const VenteSchema = z.object({
  date: z.string(),
  prix: z.number().nullable(),
  type: z.enum(['maison', 'appartement', 'local', 'dependance']).nullable(),
  surface_m2: z.number().nullable(),
  prix_m2: z.number().nullable(),
});

const VentesSchema = z
  .object({
    n: z.number().int(),
    premiere_le: z.string().nullable(),
    derniere: VenteSchema.nullable(),
    historique: z
      .array(VenteSchema.extend({ nature: z.string() }))
      .describe('Mutations de l’adresse, la plus récente d’abord.'),
    vendu_apres_dpe: z.boolean().nullable().describe('Une vente le jour du dernier DPE ou après ; null sans DPE.'),
    qualite: QualiteSchema,
  })
  .describe('Ventes DVF de l’adresse.');

const IlotSchema = z
  .object({
    ventes_5a: z.number().int(),
    mediane_m2_5a: z.number().nullable(),
    derniere_vente_le: z.string().nullable(),
    anciennete_derniere_vente_j: z.number().int().nullable(),
    en_vente: z
      .boolean()
      .nullable()
      .describe(
        `Une annonce en ligne rattachée à un numéro BAN à ${RAYON_ILOT_M} m au plus ; null sans annonce détenue (voir limites).`,
      ),
    vente_directe: z
      .boolean()
      .nullable()
      .describe('Dont une annonce de vendeur particulier ; null sans annonce détenue (voir limites).'),
    copro: z.boolean().nullable().describe('Toujours null : aucune donnée de copropriété.'),
    lots_max: z.number().int().nullable().describe('Toujours null : aucune donnée de copropriété.'),
    sans_syndic: z.boolean().nullable().describe('Toujours null : aucune donnée de copropriété.'),
    qualite: QualiteSchema,
  })
  .describe('Voisinage : ventes à 100 m.');

const AnnonceSchema = z
  .object({
    n_actives: z
      .number()
      .int()
      .describe('Biens en vente à l’adresse : une de leurs annonces rattachées est en ligne au dernier relevé.'),
    n_total: z.number().int().describe('Biens dont une annonce a été rattachée à l’adresse, en ligne ou non.'),
    derniere: z
      .object({
        id: z.string().describe('Identifiant du service (GET /annonces/{id}).'),
        lien: z.string().nullable().describe('Lien d’origine ; servi avec la portée lien_origine seulement.'),
        statut: z.enum(['actif', 'retire', 'masque']),
        type: z.enum(TYPES_BIEN),
        parue_le: z.string().nullable().describe('Première parution (AAAA-MM-JJ).'),
        retire_le: z.string().nullable().describe('Retrait (AAAA-MM-JJ) ; null en ligne.'),
        prix: z.number().nullable(),
        surface: z.number().nullable(),
        prix_m2: z.number().nullable(),
        type_vendeur: z.enum(['pro', 'particulier', 'inconnu']),
        agence: z
          .object({ nom: z.string().nullable(), enseigne: z.string().nullable(), siren: z.string().nullable() })
          .nullable()
          .describe('Vendeur professionnel seulement ; null pour tout autre (jamais nommé).'),
      })
      .nullable()
      .describe('Le bien vu le plus récemment à l’adresse, par son annonce principale quand elle y est rattachée.'),
    qualite: QualiteSchema,
  })
  .describe('Rattachement aux annonces : les annonces rattachées au numéro BAN.');

const CommuneSchema = z
  .object({
    insee: z.string(),
    nom: z.string(),
    departement: z.string().nullable(),
    region: z.string().nullable(),
    epci: z.string().nullable().describe('SIREN de l’intercommunalité.'),
    epci_nom: z.string().nullable(),
    population: z.number().int().nullable(),
    codes_postaux: z.array(z.string()),
    ventes_12_mois: z.number().int().nullable(),
    mediane_m2_12_mois: z.number().nullable(),
    qualite: QualiteSchema,
  })
  .describe('Contexte communal.');

const PreMarcheSchema = z
  .object({
    audit_connu: z.boolean(),
    annees_detention_au_dpe: z.number().nullable(),
    dpe_valide_au_dpe: z.boolean(),
    nb_dpe_365j_avant: z.number().int(),
    sci_connue_au_dpe: z.boolean(),
    ventes_ilot_avant_dpe: z.number().int(),
    ventes_numero_avant_dpe: z.number().int(),
    copro_ilot: z.boolean(),
    surface_m2: z.number().nullable(),
    multiplicateur_age_dpe: z.number().nullable(),
    signaux: z.array(z.string()).describe('Les signaux du modèle présents au jour du dernier DPE.'),
    bande: z.string().nullable(),
    taux_bande_pct: z.number().nullable().describe('Taux de vente à 12 mois réel de la bande (exemples tenus).'),
    p_vente: z.number().nullable().describe('Probabilité calibrée (voir pre_marche_adresse) ; null hors périmètre.'),
    calcule_le: z.string(),
    qualite: QualiteSchema,
  })
  .describe(
    'Variables du modèle pré-marché au jour du dernier DPE individuel, lues dans ses scores (le même calcul que pre_marche_adresse).',
  );

const GROUPES = {
  identite: IdentiteSchema,
  batiment: BatimentSchema,
  dpe: DpeSchema,
  audit: AuditSchema,
  ventes: VentesSchema,
  ilot: IlotSchema,
  annonce: AnnonceSchema,
  commune: CommuneSchema,
  pre_marche: PreMarcheSchema,
} as const;
type Groupe = keyof typeof GROUPES;
const NOMS_GROUPES = Object.keys(GROUPES) as Groupe[];

type Identite = z.infer<typeof IdentiteSchema>;
type Batiment = z.infer<typeof BatimentSchema>;
type DpeGroupe = z.infer<typeof DpeSchema>;
type Audit = z.infer<typeof AuditSchema>;
type Ventes = z.infer<typeof VentesSchema>;
type Ilot = z.infer<typeof IlotSchema>;
type AnnonceGroupe = z.infer<typeof AnnonceSchema>;
type Commune = z.infer<typeof CommuneSchema>;

/** A group as published: `champs=groupe.colonne` serves only the columns asked, so none is required. */
const servi = <T extends z.ZodObject>(groupe: T) =>
  selectable(
    groupe,
    'Toutes ses colonnes sont servies quand le groupe est demandé entier (ou sans `champs`) ; avec `champs=groupe.colonne`, seules les colonnes demandées.',
  )
    .nullable()
    .optional();

const FaitsOutput = z.object({
  cle_ban: z.string(),
  identite: servi(IdentiteSchema),
  batiment: servi(BatimentSchema),
  dpe: servi(DpeSchema),
  audit: servi(AuditSchema),
  ventes: servi(VentesSchema),
  ilot: servi(IlotSchema),
  annonce: servi(AnnonceSchema),
  commune: servi(CommuneSchema),
  pre_marche: servi(PreMarcheSchema),
  limites: z.array(z.string()).describe('Pourquoi un groupe est null ou incomplet.'),
});
type Faits = z.infer<typeof FaitsOutput>;

/** `champs` read into a sorted list of `groupe` and `groupe.colonne` (sorted: the response cache keys on it). */
function lireChamps(value: string | undefined, ctx: z.RefinementCtx): string[] | null {
  if (value === undefined) return null;
  const noms = [
    ...new Set(
      value
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    ),
  ];
  const fautes: string[] = [];
  for (const nom of noms) {
    const [groupe, colonne, ...reste] = nom.split('.');
    if (NON_SERVIS[groupe]) {
      fautes.push(`« ${nom} » : groupe non servi (${NON_SERVIS[groupe]})`);
    } else if (!(groupe in GROUPES)) {
      fautes.push(`« ${nom} » : groupe inconnu`);
    } else if (colonne !== undefined && (reste.length > 0 || !(colonne in GROUPES[groupe as Groupe].shape))) {
      fautes.push(`« ${nom} » : colonne inconnue du groupe ${groupe}`);
    }
  }
  if (fautes.length > 0) {
    ctx.addIssue({
      code: 'custom',
      message: `${fautes.join(' ; ')}. Groupes servis : ${NOMS_GROUPES.join(', ')} ; colonnes : groupe.colonne (ex. dpe.etiquette).`,
    });
    return z.NEVER;
  }
  return noms.length > 0 ? noms.sort() : null;
}

const FaitsInput = z.object({
  cle_ban: z
    .string()
    .trim()
    .min(1)
    .max(100)
    .transform((v) => v.toLowerCase())
    .describe('Clé BAN du numéro (ex. 75111_3514_00203) ou de la voie.'),
  champs: z
    .string()
    .max(2000)
    .optional()
    .transform(lireChamps)
    .describe(
      `Groupes (${NOMS_GROUPES.join(', ')}) ou colonnes (groupe.colonne, ex. dpe.etiquette) à servir, séparés par des virgules ; tout par défaut.`,
    ),
});

// ---------------------------------------------------------------------------------------------------------------------
// Dates and the grid.
// ---------------------------------------------------------------------------------------------------------------------

const JOUR_MS = 86_400_000;
const jourDe = (d: Date) => d.toISOString().slice(0, 10);
const joursEntre = (de: string, a: string) =>
  Math.round((Date.parse(`${a}T00:00:00Z`) - Date.parse(`${de}T00:00:00Z`)) / JOUR_MS);

/** The same day `mois` months earlier (the last day of a shorter month). */
function moisAvant(jour: string, mois: number): string {
  const [a, m, j] = jour.split('-').map(Number);
  const total = a * 12 + (m - 1) - mois;
  const annee = Math.floor(total / 12);
  const moisCible = (total % 12) + 1;
  const dernier = new Date(Date.UTC(annee, moisCible, 0)).getUTCDate();
  return `${annee}-${String(moisCible).padStart(2, '0')}-${String(Math.min(j, dernier)).padStart(2, '0')}`;
}

/**
 * The cells of a position: square metric cells of 100 m (`ilot`) and 10 m (`cell4`) in the projection of its
 * commune's area (Lambert-93 in metropolitan France and Corsica, the UTM zone of each overseas département), the
 * same size anywhere in the country.
 */
export function cellules(lat: number, lon: number, insee: string): { ilot: string; cell4: string } {
  const [ilot, cell4] = metricCellIds(projectionOfDepartement(departementOf(insee)), lat, lon, [
    PAS_ILOT_M,
    PAS_CELL4_M,
  ]);
  return { ilot, cell4 };
}

const arrondi = (x: number | null, decimales = 0) =>
  x === null ? null : Math.round(x * 10 ** decimales) / 10 ** decimales;

// ---------------------------------------------------------------------------------------------------------------------
// Reading.
// ---------------------------------------------------------------------------------------------------------------------

/** A DPE as the groups read it: the stored row, and whether a later DPE replaced it. */
type DpeLigne = Pick<
  DpeRow,
  | 'numero_dpe'
  | 'rattachement_incertain'
  | 'adresse'
  | 'voie'
  | 'code_postal'
  | 'insee'
  | 'commune'
  | 'lat'
  | 'lon'
  | 'etabli_le'
  | 'fin_validite'
  | 'etiquette'
  | 'ges'
  | 'conso_kwh_m2_an'
  | 'ges_kg_m2_an'
  | 'surface_m2'
  | 'type_batiment'
  | 'surface_immeuble_m2'
  | 'niveaux'
  | 'appartements'
  | 'periode_construction'
  | 'annee_construction'
  | 'chauffage_energie'
  | 'chauffage_installation'
  | 'isolation_enveloppe'
  | 'isolation_murs'
  | 'isolation_menuiseries'
  | 'ventilation'
  | 'modele'
  | 'methode'
  | 'numero_dpe_remplace'
> & { remplace: boolean };

const DPE_COLONNES = `d.numero_dpe, d.rattachement_incertain, d.adresse, d.voie, d.code_postal, d.insee, d.commune, d.lat, d.lon,
  to_char(d.etabli_le, 'YYYY-MM-DD') AS etabli_le, to_char(d.fin_validite, 'YYYY-MM-DD') AS fin_validite, d.etiquette,
  d.ges, d.conso_kwh_m2_an, d.ges_kg_m2_an, d.surface_m2, d.type_batiment, d.surface_immeuble_m2, d.niveaux,
  d.appartements, d.periode_construction, d.annee_construction, d.chauffage_energie, d.chauffage_installation,
  d.isolation_enveloppe, d.isolation_murs, d.isolation_menuiseries, d.ventilation, d.modele, d.methode,
  d.numero_dpe_remplace,
  EXISTS (SELECT 1 FROM dpe r WHERE r.dataset = d.dataset AND r.numero_dpe_remplace = d.numero_dpe) AS remplace`;

async function lireDpe(db: Queryable, dataset: Dataset, cle: string): Promise<DpeLigne[]> {
  const { rows } = await db.query<DpeLigne>(
    `SELECT ${DPE_COLONNES} FROM dpe d WHERE d.dataset = $1 AND d.cle_ban = $2
      ORDER BY d.etabli_le DESC, d.numero_dpe DESC LIMIT ${MAX_DPE}`,
    [dataset, cle],
  );
  return rows;
}

/** The DPE a number names, wherever it was attached (the DPE a newer one replaces may sit at another key). */
async function dpeParNumero(db: Queryable, dataset: Dataset, numero: string): Promise<DpeLigne | null> {
  const { rows } = await db.query<DpeLigne>(
    `SELECT ${DPE_COLONNES} FROM dpe d WHERE d.dataset = $1 AND d.numero_dpe = $2`,
    [dataset, numero],
  );
  return rows[0] ?? null;
}

// ---------------------------------------------------------------------------------------------------------------------
// Groups.
// ---------------------------------------------------------------------------------------------------------------------

function identiteBan(a: AdresseBan): Identite {
  const lat = arrondi(a.lat, 6)!;
  const lon = arrondi(a.lon, 6)!;
  return {
    cle_ban: a.cle_ban,
    origine: 'ban',
    adresse_numerotee: a.type === 'numero',
    adresse: a.libelle,
    numero: a.numero,
    rep: a.suffixe,
    voie: a.type === 'numero' || a.type === 'voie' ? a.voie : null,
    code_postal: a.code_postal,
    insee: a.insee,
    commune: a.commune,
    lieu_dit: a.lieu_dit,
    parcelles: a.type === 'numero' ? (a.parcelles ?? []) : null,
    type_position: a.type_position,
    lat,
    lon,
    ...cellules(lat, lon, a.insee),
  };
}

function identiteDpe(cle: string, dpes: DpeLigne[]): Identite {
  const d = dpes[0];
  const place = dpes.find((x) => x.lat !== null && x.lon !== null);
  const insee = d.insee ?? cle.slice(0, 5).toUpperCase();
  const suffixe = /^[^_]+_[^_]+_\d{5}_([0-9a-z]+)$/.exec(cle)?.[1] ?? null;
  const numero = numeroDeCle(cle);
  return {
    cle_ban: cle,
    origine: 'dpe',
    adresse_numerotee: numero !== null,
    adresse: d.adresse,
    numero,
    rep: suffixe,
    voie: d.voie,
    code_postal: d.code_postal,
    insee,
    commune: d.commune,
    lieu_dit: null,
    parcelles: null,
    type_position: null,
    lat: place?.lat ?? null,
    lon: place?.lon ?? null,
    ...(place ? cellules(place.lat!, place.lon!, insee) : { ilot: null, cell4: null }),
  };
}

/** DPEs that no other DPE replaces, newest first: the diagnoses of the address. */
const actifs = (dpes: DpeLigne[]) => dpes.filter((d) => !d.remplace);

function batimentDe(dpes: DpeLigne[]): Batiment | null {
  const liste = actifs(dpes);
  if (liste.length === 0) return null;
  const premier = <T>(f: (d: DpeLigne) => T | null): T | null => {
    for (const d of liste) {
      const v = f(d);
      if (v !== null) return v;
    }
    return null;
  };
  return {
    type: premier((d) => (d.type_batiment === null ? null : d.type_batiment === 'maison' ? 'maison' : 'immeuble')),
    // An apartment DPE often repeats the flat's area as the building's (2375E4029206L: 21.9 m² for 19 flats): only a
    // building area larger than the dwelling's is read as the building's.
    surface_immeuble_m2: premier((d) =>
      d.surface_immeuble_m2 !== null &&
      (d.type_batiment !== 'appartement' || d.surface_immeuble_m2 > (d.surface_m2 ?? 0))
        ? d.surface_immeuble_m2
        : null,
    ),
    periode: premier((d) => d.periode_construction),
    annee: premier((d) => d.annee_construction),
    niveaux: premier((d) => d.niveaux),
    appartements: premier((d) => d.appartements),
  };
}

function memeLogement(a: DpeLigne, b: DpeLigne): boolean {
  if (a.type_batiment === 'maison' && b.type_batiment === 'maison') return true;
  if (a.surface_m2 === null || b.surface_m2 === null) return false;
  return Math.abs(a.surface_m2 - b.surface_m2) <= Math.max(1, ECART_SURFACE * Math.max(a.surface_m2, b.surface_m2));
}

async function dpeDe(
  db: Queryable,
  dataset: Dataset,
  dpes: DpeLigne[],
  insee: string | null,
  aujourdhui: string,
): Promise<DpeGroupe | null> {
  const liste = actifs(dpes);
  const d = liste[0];
  if (!d) return null;
  // The DPE it replaces, or an earlier one of the same dwelling, still valid the day the latest was established.
  let remplace = d.numero_dpe_remplace ? (dpes.find((x) => x.numero_dpe === d.numero_dpe_remplace) ?? null) : null;
  if (d.numero_dpe_remplace && !remplace) remplace = await dpeParNumero(db, dataset, d.numero_dpe_remplace);
  const refait =
    (remplace !== null && remplace.fin_validite > d.etabli_le) ||
    dpes.some(
      (p) =>
        p.numero_dpe !== d.numero_dpe &&
        p.etabli_le <= d.etabli_le &&
        p.fin_validite > d.etabli_le &&
        memeLogement(p, d),
    );
  const depuis12 = moisAvant(aujourdhui, 12);
  const depuis6 = moisAvant(aujourdhui, 6);
  const outreMer = (insee ?? '').startsWith('97');
  return {
    etiquette: d.etiquette,
    ges: d.ges,
    conso_kwh_m2_an: d.conso_kwh_m2_an,
    ges_kg_m2_an: d.ges_kg_m2_an,
    surface_m2: d.surface_m2,
    chauffage_energie: d.chauffage_energie,
    chauffage_installation: d.chauffage_installation,
    isolation_enveloppe: d.isolation_enveloppe,
    isolation_murs: d.isolation_murs,
    isolation_menuiseries: d.isolation_menuiseries,
    ventilation: d.ventilation,
    methode: d.methode ?? d.modele,
    numero: d.numero_dpe,
    etabli_le: d.etabli_le,
    fin_validite: d.fin_validite,
    premier_le: liste[liste.length - 1].etabli_le,
    jours_depuis: Math.max(0, joursEntre(d.etabli_le, aujourdhui)),
    nb_total: liste.length,
    nb_12_mois: liste.filter((x) => x.etabli_le >= depuis12 && x.etabli_le <= aujourdhui).length,
    nb_6_mois: liste.filter((x) => x.etabli_le >= depuis6 && x.etabli_le <= aujourdhui).length,
    refait_pendant_validite: refait,
    historique: liste.map((x) => ({ date: x.etabli_le, etiquette: x.etiquette })),
    interdiction_location: outreMer ? null : (INTERDICTION_LOCATION[d.etiquette] ?? null),
    qualite: {
      n: liste.length,
      provenance: 'mesure',
      incertitude: null,
      drapeaux: drapeaux([
        ...(d.rattachement_incertain ? (['rattachement_incertain'] as const) : []),
        ...(d.fin_validite < aujourdhui ? (['donnee_ancienne'] as const) : []),
      ]),
      methode:
        'Dernier DPE établi à l’adresse (date d’établissement la plus récente), les DPE remplacés par un autre écartés ; énergie primaire et émissions 5 usages par m² (méthode 3CL).',
      donnees_du: d.etabli_le,
      source: SOURCE_DPE,
    },
  };
}

interface AuditLigne {
  numero_audit: string;
  etabli_le: string;
  fin_validite: string | null;
  cout_travaux_max: number | null;
  classe_visee: Classe | null;
  pack_pre_vente: boolean | null;
  etapes: number;
  remplace: boolean;
}

async function auditDe(
  db: Queryable,
  dataset: Dataset,
  cle: string,
  dpes: DpeLigne[],
  aujourdhui: string,
): Promise<Audit | null> {
  const { rows } = await db.query<AuditLigne>(
    `SELECT a.numero_audit, to_char(a.etabli_le, 'YYYY-MM-DD') AS etabli_le,
            to_char(a.fin_validite, 'YYYY-MM-DD') AS fin_validite, a.cout_travaux_max, a.classe_visee,
            a.pack_pre_vente, a.etapes,
            EXISTS (SELECT 1 FROM dpe_audits r WHERE r.dataset = a.dataset AND r.numero_audit_remplace = a.numero_audit)
              AS remplace
       FROM dpe_audits a
      WHERE a.dataset = $1 AND (a.cle_ban = $2 OR a.numero_dpe = ANY ($3::text[]))
      ORDER BY a.etabli_le DESC, a.numero_audit DESC
      LIMIT 200`,
    [dataset, cle, dpes.map((d) => d.numero_dpe)],
  );
  const liste = rows.filter((r) => !r.remplace);
  const a = liste[0];
  if (!a) return null;
  return {
    etabli_le: a.etabli_le,
    nb: liste.length,
    cout_travaux_max: a.cout_travaux_max === null ? null : Number(a.cout_travaux_max),
    classe_visee: a.classe_visee,
    pack_pre_vente: a.pack_pre_vente,
    qualite: {
      n: liste.length,
      provenance: 'mesure',
      incertitude: null,
      drapeaux: drapeaux(a.fin_validite !== null && a.fin_validite < aujourdhui ? ['donnee_ancienne'] : []),
      methode:
        'Dernier audit établi à l’adresse (clé BAN de l’audit, ou de son DPE) ; coût : le plus élevé des coûts cumulés de ses scénarios ; classe visée : la meilleure de ses étapes finales.',
      donnees_du: a.etabli_le,
      source: SOURCE_AUDIT,
    },
  };
}

/** Whether DVF can say anything about a commune: the reason it cannot, or null. */
async function absenceVentes(db: Queryable, dataset: Dataset, insee: string): Promise<string | null> {
  const raison = absenceDvf(departementOf(insee));
  if (raison) return raison;
  const { rows } = await db.query('SELECT 1 FROM dvf_mutations WHERE dataset = $1 AND insee = $2 LIMIT 1', [
    dataset,
    insee,
  ]);
  return rows.length === 0 ? `Aucune vente DVF n’est chargée pour la commune ${insee}.` : null;
}

interface MutationLigne {
  id_mutation: string;
  date: string;
  nature: string;
  valeur_fonciere: number | null;
  types_locaux: string[];
  surface_logements: number | null;
  prix_m2: number | null;
  prix_atypique: boolean;
  surface_atypique: boolean;
  vente_en_bloc: boolean;
  doublon_probable: boolean;
  rattachement: 'numero' | 'parcelle' | 'position';
}

const TYPES_PRIORITE = ['maison', 'appartement', 'local', 'dependance'] as const;
const typeDe = (m: MutationLigne) => TYPES_PRIORITE.find((t) => m.types_locaux.includes(t)) ?? null;

const MUTATION_COLONNES = `m.id_mutation, to_char(m.date_mutation, 'YYYY-MM-DD') AS date, m.nature, m.valeur_fonciere,
  m.types_locaux, m.surface_logements, m.prix_m2, m.prix_atypique, m.surface_atypique, m.vente_en_bloc,
  m.doublon_probable`;

async function ventesDe(
  db: Queryable,
  dataset: Dataset,
  id: Identite,
  ban: AdresseBan | null,
  dernierDpe: string | null,
): Promise<{ ventes: Ventes | null; limite: string | null }> {
  if (id.numero === null || id.insee === null) {
    return { ventes: null, limite: 'ventes : les ventes se lisent par numéro, pas pour une voie.' };
  }
  // The rules of ventes_adresse: from 2021 by the attached key, or the number's parcels; 2018-2020 by position only.
  // An address known only from its DPE has no sale attached to its key: its sales by street code and number.
  const codeVoie = ban?.code_voie ?? id.cle_ban.split('_')[1]?.toUpperCase() ?? null;
  const params: unknown[] = [dataset, id.cle_ban, id.insee, codeVoie, id.numero, id.rep ?? '', id.parcelles ?? []];
  let sql = `SELECT ${MUTATION_COLONNES}, CASE WHEN m.cle_ban = $2 OR ${parNumero(3)} THEN 'numero' ELSE 'parcelle' END AS rattachement
      FROM dvf_mutations m
     WHERE m.dataset = $1 AND m.millesime >= ${PREMIER_MILLESIME_NUMERO}
       AND (m.cle_ban = $2${ban ? '' : ` OR ${parNumero(3)}`} OR ${surParcelles(7)})`;
  if (id.lat !== null && id.lon !== null) {
    params.push(id.lat, id.lon, RAYON_POSITION_M, degreeCellsAround(id.lat, id.lon, RAYON_POSITION_M));
    sql += `
    UNION ALL
    SELECT ${MUTATION_COLONNES}, 'position' AS rattachement
      FROM dvf_mutations m
     WHERE m.dataset = $1 AND m.millesime BETWEEN 2018 AND ${PREMIER_MILLESIME_NUMERO - 1}
       AND ${dansCellules(11)}
       AND earth_distance(ll_to_earth($8, $9), ll_to_earth(m.lat, m.lon)) <= $10`;
  }
  const { rows } = await db.query<MutationLigne>(
    `${sql} ORDER BY date DESC, id_mutation DESC LIMIT ${MAX_MUTATIONS + 1}`,
    params,
  );
  const liste = rows.slice(0, MAX_MUTATIONS);
  const vente = (m: MutationLigne) => ({
    date: m.date,
    prix: m.valeur_fonciere === null ? null : Number(m.valeur_fonciere),
    type: typeDe(m),
    surface_m2: m.surface_logements,
    prix_m2: m.prix_m2,
  });
  const d = liste[0];
  const flags: Drapeau[] = d ? drapeauxDeMutation(d) : [];
  if (liste.some((m) => m.rattachement === 'position')) flags.push('rattachement_incertain');
  return {
    ventes: {
      n: liste.length,
      premiere_le: liste.length ? liste[liste.length - 1].date : null,
      derniere: d ? vente(d) : null,
      historique: liste.map((m) => ({ ...vente(m), nature: m.nature })),
      vendu_apres_dpe: dernierDpe === null ? null : liste.some((m) => m.date >= dernierDpe),
      qualite: {
        n: liste.length,
        provenance: 'mesure',
        incertitude: null,
        drapeaux: drapeaux(flags),
        methode: `Mutations DVF rattachées comme par ventes_adresse : depuis ${PREMIER_MILLESIME_NUMERO} par la clé BAN, le code de voie et le numéro, ou les parcelles du numéro ; 2018-${PREMIER_MILLESIME_NUMERO - 1} par position, à ${RAYON_POSITION_M} m au plus. Drapeaux : ceux de la dernière vente, et rattachement_incertain si une vente l’est par position.`,
        donnees_du: d?.date ?? null,
        source: SOURCE_DVF,
      },
    },
    limite: rows.length > MAX_MUTATIONS ? `ventes : ${MAX_MUTATIONS} mutations au plus, les plus récentes.` : null,
  };
}

/** The price-per-m² filter of medians: a priced sale of one or more dwellings, not in bulk, not atypical. */
const POUR_MEDIANE = `m.nature IN ${NATURES_PRIX} AND m.logements >= 1 AND NOT m.vente_en_bloc AND NOT m.prix_atypique
  AND m.prix_m2 IS NOT NULL`;

async function ilotDe(
  db: Queryable,
  dataset: Dataset,
  id: Identite,
  aujourdhui: string,
  annonces: boolean,
): Promise<Ilot | null> {
  if (id.lat === null || id.lon === null) return null;
  const depuis = moisAvant(aujourdhui, 12 * ANS_ILOT);
  const enVente = annonces ? enVenteAutour(db, dataset, { lat: id.lat, lon: id.lon }, RAYON_ILOT_M) : null;
  const lecture = db.query<{ ventes: number; n: number; mediane: number | null; derniere: string | null }>(
    `SELECT count(*) FILTER (WHERE m.nature IN ${NATURES_VENTE} AND m.date_mutation >= $5)::int AS ventes,
            count(*) FILTER (WHERE ${POUR_MEDIANE} AND m.date_mutation >= $5)::int AS n,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY m.prix_m2)
              FILTER (WHERE ${POUR_MEDIANE} AND m.date_mutation >= $5) AS mediane,
            to_char(max(m.date_mutation) FILTER (WHERE m.nature IN ${NATURES_VENTE}), 'YYYY-MM-DD') AS derniere
       FROM dvf_mutations m
      WHERE m.dataset = $1 AND ${dansCellules(6)}
        AND earth_distance(ll_to_earth($2, $3), ll_to_earth(m.lat, m.lon)) <= $4
        AND m.date_mutation <= $7`,
    [dataset, id.lat, id.lon, RAYON_ILOT_M, depuis, degreeCellsAround(id.lat, id.lon, RAYON_ILOT_M), aujourdhui],
  );
  // Both read at once: the sales around, and the listings online around.
  const [{ rows }, autour] = await Promise.all([lecture, enVente]);
  const r = rows[0];
  return {
    ventes_5a: r.ventes,
    mediane_m2_5a: arrondi(r.mediane),
    derniere_vente_le: r.derniere,
    anciennete_derniere_vente_j: r.derniere ? joursEntre(r.derniere, aujourdhui) : null,
    en_vente: autour?.en_vente ?? null,
    vente_directe: autour?.vente_directe ?? null,
    copro: null,
    lots_max: null,
    sans_syndic: null,
    qualite: {
      n: r.n,
      provenance: 'mesure',
      incertitude: null,
      drapeaux: drapeaux(r.n < MIN_OBSERVATIONS ? ['peu_d_observations'] : []),
      methode: `Mutations DVF (ventes, VEFA, adjudications, terrains à bâtir) à ${RAYON_ILOT_M} m au plus du point de l’adresse, depuis le ${depuis} ; médiane des prix au m² des ventes d’un ou plusieurs logements, hors ventes en bloc et prix atypiques.${autour ? ` En vente : annonces en ligne rattachées aux numéros BAN à ${RAYON_ILOT_M} m au plus.` : ''}`,
      donnees_du: r.derniere,
      source: autour ? `${SOURCE_DVF} ; ${SOURCE_ANNONCES}` : SOURCE_DVF,
    },
  };
}

/** The listings attached to the address's BAN number (domain/annonces/marche.ts). */
async function annonceDe(db: Queryable, dataset: Dataset, cle: string, lienOrigine: boolean): Promise<AnnonceGroupe> {
  const a = await annoncesAdresse(db, dataset, cle, lienOrigine);
  return {
    n_actives: a.n_actives,
    n_total: a.n_total,
    derniere: a.derniere,
    qualite: {
      n: a.n_total,
      provenance: 'mesure',
      incertitude: null,
      drapeaux: [],
      methode:
        'Annonces rattachées au numéro BAN de l’adresse, un bien compté une fois quel que soit le nombre de ses annonces ; la règle est dans la description de l’opération.',
      donnees_du: a.releve_le,
      source: SOURCE_ANNONCES,
    },
  };
}

async function communeDe(db: Queryable, dataset: Dataset, insee: string): Promise<Commune | null> {
  const { rows } = await db.query<{
    insee: string;
    nom: string;
    departement: string | null;
    region: string | null;
    epci: string | null;
    epci_nom: string | null;
    population: number | null;
    codes_postaux: string[];
  }>(
    `SELECT c.insee, c.nom, c.departement, c.region, c.epci, e.nom AS epci_nom, c.population, c.codes_postaux
       FROM communes c LEFT JOIN epci e ON e.dataset = c.dataset AND e.siren = c.epci
      WHERE c.dataset = $1 AND c.insee = $2`,
    [dataset, insee],
  );
  const c = rows[0];
  if (!c) return null;
  const absence = await absenceVentes(db, dataset, insee);
  let stats: { fin: string | null; ventes: number | null; n: number; mediane: number | null } = {
    fin: null,
    ventes: null,
    n: 0,
    mediane: null,
  };
  if (!absence) {
    // The 12 months before the commune's newest sale: DVF is published months late, a window ending today would
    // read a half-empty year.
    const { rows: s } = await db.query<{ fin: string; ventes: number; n: number; mediane: number | null }>(
      `WITH fin AS (SELECT max(date_mutation) AS d FROM dvf_mutations WHERE dataset = $1 AND insee = $2)
       SELECT to_char(fin.d, 'YYYY-MM-DD') AS fin,
              count(*) FILTER (WHERE m.nature IN ${NATURES_PRIX})::int AS ventes,
              count(*) FILTER (WHERE ${POUR_MEDIANE})::int AS n,
              percentile_cont(0.5) WITHIN GROUP (ORDER BY m.prix_m2) FILTER (WHERE ${POUR_MEDIANE}) AS mediane
         FROM fin
         LEFT JOIN dvf_mutations m
           ON m.dataset = $1 AND m.insee = $2 AND m.date_mutation > fin.d - interval '12 months'
        GROUP BY fin.d`,
      [dataset, insee],
    );
    if (s[0]) stats = { fin: s[0].fin, ventes: s[0].ventes, n: s[0].n, mediane: arrondi(s[0].mediane) };
  }
  return {
    insee: c.insee,
    nom: c.nom,
    departement: c.departement,
    region: c.region,
    epci: c.epci,
    epci_nom: c.epci_nom,
    population: c.population,
    codes_postaux: c.codes_postaux,
    ventes_12_mois: stats.ventes,
    mediane_m2_12_mois: stats.mediane,
    qualite: {
      n: stats.n,
      provenance: 'mesure',
      incertitude: null,
      drapeaux: drapeaux(!absence && stats.n < MIN_OBSERVATIONS ? ['peu_d_observations'] : []),
      methode: absence
        ? `Découpage administratif ; ventes non servies : ${absence}`
        : 'Découpage administratif ; ventes et médiane des prix au m² des ventes de logements (hors ventes en bloc et prix atypiques) sur les 12 mois qui précèdent la vente la plus récente de la commune dans DVF.',
      donnees_du: stats.fin,
      source: SOURCE_COMMUNE,
    },
  };
}

/** The pre-market variables of the address: its row of the model's scores, the band's real rate beside its p. */
async function preMarcheDe(
  db: Queryable,
  dataset: Dataset,
  cle: string,
): Promise<{ groupe: z.infer<typeof PreMarcheSchema> | null; limite: string | null }> {
  const [ligne, modele] = await Promise.all([lireScore(db, dataset, cle), lireModele(db, dataset)]);
  if (!ligne) {
    return {
      groupe: null,
      limite: modele
        ? 'aucun DPE individuel à l’adresse : le modèle part du DPE.'
        : 'aucun modèle pré-marché calibré sur ces données (npm run modeles).',
    };
  }
  const bande =
    modele?.bandes.find((b) => b.bande === ligne.bande && b.type_bien === ligne.type_bien) ??
    modele?.bandes.find((b) => b.bande === ligne.bande && b.type_bien === 'tous');
  return {
    groupe: {
      ...ligne.variables,
      signaux: ligne.signaux,
      bande: ligne.bande,
      taux_bande_pct: bande?.taux_vente_12m_pct ?? null,
      p_vente: bande ? ligne.p_vente : null,
      calcule_le: ligne.calcule_le.toISOString(),
      qualite: {
        n: bande?.n ?? null,
        provenance: bande ? 'mesure' : null,
        incertitude: null,
        drapeaux: [],
        methode:
          'Modèle pré-marché (pre_marche_adresse) : variables au jour du dernier DPE, bande mesurée sur l’historique tenu.',
        donnees_du: ligne.dpe_le,
        source: 'Modèle pré-marché (DPE, audits, DVF, SIRENE, BODACC, Sitadel)',
      },
    },
    limite: ligne.hors_perimetre,
  };
}

// ---------------------------------------------------------------------------------------------------------------------
// Selection.
// ---------------------------------------------------------------------------------------------------------------------

/** Keeps the asked groups, and of a group asked by column only those columns (a null group stays null). */
function projeter(faits: Faits, champs: string[] | null): Faits {
  if (champs === null) return faits;
  const out: Faits = { cle_ban: faits.cle_ban, limites: faits.limites };
  const parGroupe = new Map<Groupe, Set<string> | 'tout'>();
  for (const nom of champs) {
    const [groupe, colonne] = nom.split('.') as [Groupe, string | undefined];
    if (colonne === undefined) parGroupe.set(groupe, 'tout');
    else {
      const courant = parGroupe.get(groupe);
      if (courant !== 'tout') parGroupe.set(groupe, (courant ?? new Set()).add(colonne));
    }
  }
  const sortie = out as Record<string, unknown>;
  for (const [groupe, colonnes] of parGroupe) {
    const valeur = faits[groupe] as Record<string, unknown> | null | undefined;
    sortie[groupe] =
      colonnes === 'tout' || !valeur
        ? (valeur ?? null)
        : Object.fromEntries(Object.entries(valeur).filter(([k]) => colonnes.has(k)));
  }
  return out;
}

function dateDesDonnees(faits: Faits): string | null {
  const dates = [faits.dpe, faits.audit, faits.ventes, faits.ilot, faits.annonce, faits.commune, faits.pre_marche]
    .map((g) => (g as { qualite?: Qualite } | null | undefined)?.qualite?.donnees_du ?? null)
    .filter((d): d is string => d !== null);
  return dates.length ? dates.sort().at(-1)! : null;
}

// ---------------------------------------------------------------------------------------------------------------------
// The operation.
// ---------------------------------------------------------------------------------------------------------------------

const DESCRIPTION = `Tout ce que le service sait d'une adresse de la Base Adresse Nationale, en groupes : identité, bâtiment, dernier DPE et son historique, audit énergétique, ventes DVF de l'adresse, voisinage (îlot de 100 m), annonces rattachées et contexte communal. **5 crédits par appel.**

**Clé.** \`cle_ban\` est la clé BAN d'un numéro (\`75111_3514_00203\`, \`…_00012_bis\`) ou d'une voie. Une clé que ni la BAN importée ni aucun DPE ne connaît répond 404 \`adresse_introuvable\`, rien n'est débité. Une adresse connue répond 200 et coûte 5 crédits même quand la plupart des groupes sont null.

**Groupes.** Chaque groupe est null quand rien n'est connu ; \`limites\` dit pourquoi quand la raison n'est pas l'absence de donnée (Alsace-Moselle, clé de voie…).
- \`identite\` : la ligne BAN (\`origine\` = \`ban\`) ; à défaut, l'adresse telle que l'observatoire DPE l'a géocodée (\`origine\` = \`dpe\` : libellé BAN du DPE, numéro et indice lus dans la clé, position du DPE, ni parcelles ni type de position). \`ilot\` et \`cell4\` : mailles carrées de 100 m et de 10 m, le point projeté dans le système métrique de sa zone (Lambert-93 en métropole et en Corse, la zone UTM de chaque département d'outre-mer) et arrondi à la maille inférieure : \`l93-100-6546-68613\` est la maille dont le coin sud-ouest est x 654 600, y 6 861 300. Les mailles sont emboîtées et stables d'un import à l'autre.
- \`batiment\` : pour chaque colonne, la valeur du DPE le plus récent qui la donne. \`type\` : \`maison\` (DPE de maison), \`immeuble\` (DPE d'appartement ou d'immeuble : le bâtiment est collectif). \`surface_immeuble_m2\` d'un DPE d'appartement n'est lue que si elle dépasse la surface du logement (les logiciels y recopient souvent celle du logement).
- \`dpe\` : le dernier DPE seulement (date d'établissement la plus récente ; un DPE qu'un autre remplace est écarté partout). \`fin_validite\` : celle de la source, sinon établissement + 10 ans. \`nb_12_mois\`, \`nb_6_mois\` : DPE établis depuis le même jour 12 (6) mois plus tôt ; \`jours_depuis\` : jours depuis l'établissement du dernier. \`refait_pendant_validite\` : le dernier DPE a été établi alors qu'un DPE du même logement était encore valide (le DPE qu'il remplace, ou un DPE antérieur de l'adresse : une maison, ou un logement de même surface à 2 % près). \`interdiction_location\` : calendrier de métropole, G 2025-01-01, F 2028-01-01, E 2034-01-01 ; null de A à D et outre-mer (971-976, autre calendrier). \`qualite\` : \`n\` = DPE de l'adresse, \`rattachement_incertain\` quand le géocodage de l'observatoire est douteux (score BAN sous 0,5, ou clé dont le numéro diffère du numéro saisi par le diagnostiqueur), \`donnee_ancienne\` quand le dernier DPE n'est plus valide.
- \`audit\` : le dernier audit énergétique de l'adresse (clé BAN de l'audit, ou de son DPE) ; \`cout_travaux_max\` : le plus élevé des coûts cumulés de ses scénarios ; \`classe_visee\` : la meilleure classe de ses étapes finales ; \`pack_pre_vente\` : audit et DPE audité établis à 31 jours au plus l'un de l'autre (le dossier qu'un vendeur commande avant la mise en vente), null tant que le DPE audité n'est pas importé.
- \`ventes\` : mutations DVF de l'adresse, rattachées comme par ventes_adresse (depuis 2021 par la clé, le code de voie et le numéro, ou les parcelles ; 2018-2020 par position à 15 m, drapeau \`rattachement_incertain\`). \`type\` d'une mutation : maison, sinon appartement, sinon local, sinon dépendance ; \`surface_m2\` : surface bâtie des logements ; \`prix_m2\` : recalculé par DVF. \`vendu_apres_dpe\` : une mutation le jour du dernier DPE ou après (null sans DPE). Au plus ${MAX_MUTATIONS} mutations.
- \`ilot\` : mutations DVF à ${RAYON_ILOT_M} m au plus du point de l'adresse (un cercle, pas la maille, pour ne pas couper les voisins au bord d'une maille). \`ventes_5a\` : ventes, VEFA, adjudications et terrains à bâtir depuis le même jour ${ANS_ILOT} ans plus tôt ; \`mediane_m2_5a\` : médiane des prix au m² des ventes d'un ou plusieurs logements sur la même période, hors ventes en bloc et prix atypiques (drapeau \`peu_d_observations\` sous ${MIN_OBSERVATIONS} ventes) ; \`derniere_vente_le\` : la plus récente, sans limite de date. \`en_vente\` : une annonce en ligne (statut actif au dernier relevé) est rattachée à un numéro BAN à ${RAYON_ILOT_M} m au plus du point de l'adresse (une annonce sans numéro, à position approchée ou au centre de la commune, n'est pas placée) ; \`vente_directe\` : l'une d'elles est d'un vendeur particulier ; null les deux quand le service ne détient aucune annonce (dit dans \`limites\`). \`copro\`, \`lots_max\` et \`sans_syndic\` sont toujours null (aucune donnée de copropriété).
- \`annonce\` (rattachement aux annonces) : ${REGLE_ANNONCE} Null pour une clé de voie (une annonce se rattache à un numéro) et quand le service ne détient aucune annonce, dit dans \`limites\`.
- \`commune\` (contexte communal) : commune du découpage administratif (départements, région, intercommunalité, population, codes postaux) et marché DVF : \`ventes_12_mois\` et \`mediane_m2_12_mois\` sur les 12 mois qui précèdent la vente la plus récente de la commune (DVF paraît avec plusieurs mois de retard).
- \`pre_marche\` : les variables du modèle pré-marché au jour du dernier DPE individuel de l'adresse (audit connu, années de détention, DPE encore valide refait, DPE des 365 jours avant, société civile connue, ventes de la rue dans les 12 mois avant et du numéro avant, copropriété immatriculée, surface, multiplicateur d'âge du DPE), ses signaux, sa bande avec le taux de vente réel de la bande et \`p_vente\` : lus dans les scores que l'entraînement du modèle écrit (le même calcul que pre_marche_adresse). Null sans DPE individuel ou sans modèle calibré (\`limites\` le dit) ; \`p_vente\` et la bande null hors périmètre (Alsace-Moselle, Mayotte).

**Groupes non servis.** La spécification nomme d'autres groupes ; faute de données derrière eux, ils ne sont pas servis et \`champs\` les refuse (400) : ${Object.entries(
  NON_SERVIS,
)
  .map(([g, r]) => `\`${g}\` (${r})`)
  .join(' ; ')}.

**Ventes absentes.** L'Alsace-Moselle (57, 67, 68) et Mayotte ne sont pas dans DVF : \`ventes\` et \`ilot\` y sont null et \`limites\` l'explique ; de même quand DVF n'est pas chargé pour la commune, et pour une clé de voie (les ventes se lisent par numéro).

**Sélection.** \`champs\` (séparés par des virgules) choisit des groupes (\`dpe\`) ou des colonnes (\`dpe.etiquette\`) : seuls ceux-là sont servis, avec \`cle_ban\` et \`limites\` ; un groupe null reste null. Un groupe demandé par colonnes ne porte que celles-là (\`champs=identite.lat\` sert \`identite: {lat}\`) : c'est pourquoi le schéma publié décrit toutes les colonnes de chaque groupe sans en exiger aucune ; un groupe demandé entier, ou sans \`champs\`, les a toutes. Un nom inconnu, ou celui d'un groupe non servi, répond 400 \`parametres_invalides\` sur \`champs\`. Le prix ne dépend pas de la sélection.

**Dates.** Les durées (\`jours_depuis\`, \`nb_12_mois\`, \`ventes_5a\`, \`anciennete_derniere_vente_j\`…) sont comptées au jour de la requête (UTC). Aucune donnée personnelle : ni propriétaire ni diagnostiqueur ne sont lus dans les DPE.`;

export const faitsAdresse = defineOperation({
  tool: 'faits_adresse',
  method: 'GET',
  path: '/adresses/{cle_ban}/faits',
  lot: true,
  summary: 'Faits d’une adresse : identité, bâtiment, DPE, audit, ventes, voisinage, annonces',
  description: DESCRIPTION,
  credits: 5,
  unit: 'appel',
  scope: 'adresse',
  tier: 'usage',
  sandbox: false,
  cacheS: 86_400,
  timeoutS: 6,
  errors: ['adresse_introuvable'],
  input: FaitsInput,
  output: FaitsOutput,
  dataDate: dateDesDonnees,
  handler: servedFromDataset(async (entree, ctx, dataset) => {
    const db = ctx.services.db;
    const cle = entree.cle_ban;
    const aujourdhui = jourDe(ctx.services.now());
    const [ban, dpes] = await Promise.all([adresseParCle(db, dataset, cle), lireDpe(db, dataset, cle)]);
    if (!ban && dpes.length === 0) {
      throw new ApiError(
        'adresse_introuvable',
        `Ni la Base Adresse Nationale ni aucun DPE ne connaissent la clé « ${cle} » ; rien n’est débité.`,
      );
    }
    const voulu = (g: Groupe) => entree.champs === null || entree.champs.some((c) => c === g || c.startsWith(`${g}.`));
    const identite = ban ? identiteBan(ban) : identiteDpe(cle, dpes);
    const dernierDpe = actifs(dpes)[0]?.etabli_le ?? null;
    const insee = identite.insee;
    const limites: string[] = [];
    // Sales and the neighbourhood are read where DVF says something: not in Alsace-Moselle, not where it is not loaded.
    const absence = insee && (voulu('ventes') || voulu('ilot')) ? await absenceVentes(db, dataset, insee) : null;
    if (absence) limites.push(`ventes, ilot : ${absence}`);
    const dvf = insee !== null && absence === null;
    // Listings: whether the dataset holds any (the group and the neighbourhood's en_vente are null otherwise).
    const avecAnnonces = voulu('annonce') || voulu('ilot') ? (await dernierReleve(db, dataset)) !== null : false;
    const sansAnnonces = [
      ...(voulu('annonce') ? ['annonce'] : []),
      ...(voulu('ilot') && dvf && identite.lat !== null ? ['ilot.en_vente', 'ilot.vente_directe'] : []),
    ];
    if (!avecAnnonces && sansAnnonces.length > 0) limites.push(`${sansAnnonces.join(', ')} : null, ${SANS_ANNONCES}.`);
    if (avecAnnonces && voulu('annonce') && !identite.adresse_numerotee) {
      limites.push('annonce : une annonce se rattache à un numéro, pas à une voie.');
    }
    const lienOrigine = ctx.caller.portees.includes('lien_origine');
    const [dpe, audit, ventes, ilot, annonce, commune, preMarche] = await Promise.all([
      voulu('dpe') ? dpeDe(db, dataset, dpes, insee, aujourdhui) : null,
      voulu('audit') ? auditDe(db, dataset, cle, dpes, aujourdhui) : null,
      voulu('ventes') && dvf ? ventesDe(db, dataset, identite, ban, dernierDpe) : null,
      voulu('ilot') && dvf ? ilotDe(db, dataset, identite, aujourdhui, avecAnnonces) : null,
      voulu('annonce') && avecAnnonces && identite.adresse_numerotee ? annonceDe(db, dataset, cle, lienOrigine) : null,
      voulu('commune') && insee ? communeDe(db, dataset, insee) : null,
      voulu('pre_marche') ? preMarcheDe(db, dataset, cle) : null,
    ]);
    if (voulu('pre_marche') && preMarche?.limite) limites.push(`pre_marche : ${preMarche.limite}`);
    if (annonce?.derniere && !lienOrigine) {
      limites.push('annonce.derniere.lien : servi avec la portée lien_origine seulement.');
    }
    if (ventes?.limite) limites.push(ventes.limite);
    if (voulu('ilot') && dvf && identite.lat === null) limites.push('ilot : position de l’adresse inconnue.');
    if (voulu('commune') && !commune) {
      limites.push(`commune : ${insee ?? 'commune inconnue'} absente du découpage administratif importé.`);
    }
    return projeter(
      {
        cle_ban: cle,
        identite,
        batiment: batimentDe(dpes),
        dpe,
        audit,
        ventes: ventes?.ventes ?? null,
        ilot,
        annonce,
        commune,
        pre_marche: preMarche?.groupe ?? null,
        limites,
      },
      entree.champs,
    );
  }),
});
