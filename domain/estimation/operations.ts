import { z } from 'zod';
import type { Db, Queryable } from '../../db/client.ts';
import { rechercher } from '../adresses/resoudre.ts';
import { defineOperation } from '../catalogue.ts';
import { communeByCode, departementOf, isOutreMer } from '../communes.ts';
import { ApiError, type ErrorCode, type FieldError } from '../errors.ts';
import { loyerCommune, type LoyerCommune, type TypeLogement } from '../loyers/loyers.ts';
import { SANDBOX_COMMUNES, type Dataset } from '../platform/sandbox.ts';
import { QualiteSchema, servedFromDataset, servedSource } from '../qualite.ts';
import { runSyncTask, SyncTaskFailed } from '../taches/taches.ts';
import {
  APPUI_MIN_CARACTERES,
  BORNES_TEXTE,
  LIMITE_CHAMPS_TEXTE_NON_LUS,
  PLAFOND_TOTAL_PCT,
  repli,
  VisionSchema,
  type EstimationAffinee,
} from './affinage.ts';
import { ajustementsBareme, BAREME_TEXTE, PLAFOND_BAREME_PCT, totalAjustements, type ClasseDpe } from './bareme.ts';
import { modelesOperations } from './modeles.ts';
import {
  DECODAGES_PAR_ORGANISATION,
  MAX_PHOTOS,
  PHOTO_COTE_MAX,
  PHOTO_MAX_OCTETS,
  PHOTO_MAX_PIXELS,
  PhotosRefusees,
  PIXELS_PAR_APPEL,
  verifierLiens,
  type PhotoRefus,
} from './photos.ts';
import { sortieDpe, SortieSchema } from './sortie.ts';
import {
  BANDE_SURFACE,
  COMMUNE_MIN,
  COMPARABLES_MIN,
  COMPARABLES_VISES,
  DEMI_LARGEUR_PAR_DEFAUT,
  demiLargeur,
  mediane,
  RAYONS_M,
  valeurBrute,
} from './valeur.ts';
import { absenceDvf } from '../couverture.ts';
import { annoncesComparables, regleComparables, SOURCE_ANNONCES } from '../annonces/marche.ts';

// ---------------------------------------------------------------------------------------------------------------------
// Shapes.
// ---------------------------------------------------------------------------------------------------------------------

const ETATS = ['a_renover', 'travaux', 'correct', 'renove', 'neuf'] as const;
const EXPOSITIONS = [
  'nord',
  'sud',
  'est',
  'ouest',
  'sud_est',
  'sud_ouest',
  'nord_est',
  'nord_ouest',
  'traversant',
] as const;
const CLASSES = ['A', 'B', 'C', 'D', 'E', 'F', 'G'] as const;

/** The fields of both estimations (estimer_bien_affine adds `photos`). */
const EstimationChamps = z.object({
  type: z.enum(['appartement', 'maison']),
  surface: z.number().min(9).max(2000).describe('Surface habitable (m²), 9-2000.'),
  adresse: z.string().trim().min(5).max(160).optional().describe('Adresse telle qu’on l’écrit.'),
  code_postal: z
    .string()
    .regex(/^\d{5}$/, 'Code postal : 5 chiffres.')
    .optional(),
  insee: z
    .string()
    .transform((v) => v.trim().toUpperCase())
    .pipe(z.string().regex(/^(?:\d{2}|2[AB])\d{3}$/, 'Code INSEE de commune : 5 caractères.'))
    .optional()
    .describe('Commune (code INSEE), quand il n’y a pas d’adresse.'),
  pieces: z.number().int().min(1).max(30).optional(),
  chambres: z.number().int().min(0).max(20).optional(),
  etage: z.number().int().min(-1).max(40).optional().describe('0 : rez-de-chaussée.'),
  etages_immeuble: z.number().int().min(0).max(60).optional(),
  ascenseur: z.boolean().optional(),
  terrain_m2: z.number().min(0).max(100_000).optional(),
  dpe: z.enum(CLASSES).optional(),
  annee_construction: z.number().int().min(1700).max(2030).optional(),
  prix_demande: z.number().int().min(10_000).max(50_000_000).optional().describe('Prix demandé (€).'),
  loyer_pratique: z
    .number()
    .gt(0)
    .max(100_000)
    .optional()
    .describe('Loyer mensuel pratiqué (€) ; remplace le loyer estimé.'),
  etat: z.enum(ETATS).optional(),
  qualites: z.array(z.string().max(200)).max(20).optional(),
  description: z.string().max(1200).optional(),
  exposition: z.enum(EXPOSITIONS).optional(),
  annexes: z
    .object({
      parking: z.number().int().min(0).max(3).optional(),
      garage: z.boolean().optional(),
      cave: z.boolean().optional(),
      balcon_m2: z.number().min(0).max(200).optional(),
      terrasse_m2: z.number().min(0).max(500).optional(),
    })
    .optional(),
  equipements: z.array(z.string().max(100)).max(60).optional(),
});
const lieuDonne = [
  (e: { adresse?: string; insee?: string }) => e.adresse !== undefined || e.insee !== undefined,
  { message: 'adresse ou insee est obligatoire.', path: ['adresse'] },
] as [(e: { adresse?: string; insee?: string }) => boolean, { message: string; path: string[] }];

/** The body of estimer_bien_affine without `photos`; the text fields are accepted, only the scale reads them. */
export const EstimationInput = EstimationChamps.refine(...lieuDonne);
type Entree = z.output<typeof EstimationInput>;

const VenteSchema = z.object({
  date: z.string(),
  type: z.enum(['appartement', 'maison']),
  surface_m2: z.number(),
  prix: z.number(),
  prix_m2: z.number(),
  distance_m: z.number().describe('Arrondie à 50 m.'),
  millesime: z.number().int(),
  adresse: z.string().nullable(),
  code_postal: z.string().nullable(),
  id_mutation: z.string().nullable(),
  lat: z.number().nullable(),
  lon: z.number().nullable(),
});

export const EstimationOutput = z.object({
  bien: z.object({
    type: z.enum(['appartement', 'maison']),
    surface_m2: z.number(),
    pieces: z.number().int().nullable(),
    commune: z.string(),
    code_postal: z.string().nullable(),
    insee: z.string().nullable(),
    origine: z.enum(['adresse', 'commune']),
  }),
  valeur: z.object({
    bas: z.number(),
    valeur: z.number(),
    haut: z.number(),
    prix_m2: z.number(),
    demi_largeur_pct: z.number(),
    qualite: QualiteSchema,
  }),
  niveau: z.object({
    nature: z.enum(['mesure', 'estime']),
    socle: z.enum(['comparables_dvf', 'iris', 'commune']),
    libelle: z.string(),
    ventes: z.number().int(),
    rayon_m: z.number().nullable(),
    millesime: z.number().int().nullable(),
    prix_m2_socle: z.number(),
    fiabilite: z.enum(['elevee', 'correcte', 'limitee']),
  }),
  comparables: z.object({
    n: z.number().int(),
    prix_m2_median: z.number().nullable(),
    millesimes: z.array(z.number().int()),
    ventes: z.array(VenteSchema),
  }),
  loyer: z
    .object({
      mensuel: z.number(),
      bas: z.number().nullable(),
      haut: z.number().nullable(),
      nature: z.enum(['observe_commune', 'predit_maille']),
      charges_comprises: z.boolean(),
      qualite: QualiteSchema,
    })
    .nullable(),
  rendement: z
    .object({
      sur: z.enum(['prix_demande', 'valeur_estimee']),
      prix: z.number(),
      loyer: z.enum(['pratique', 'estime']),
      loyer_mensuel: z.number(),
      brut_pct: z.number(),
      frais_notaire: z.number(),
      net_hors_travaux_pct: z.number(),
    })
    .nullable(),
  prix_demande: z
    .object({
      prix: z.number(),
      prix_m2: z.number(),
      ecart_pct: z.number(),
      position: z.enum(['sous_la_fourchette', 'dans_la_fourchette', 'au_dessus_de_la_fourchette']),
    })
    .nullable(),
  annonces_en_vente: z
    .object({
      n: z.number().int().describe('Biens comparables en ligne, chacun compté une fois.'),
      prix_m2_median: z.number().nullable(),
      part_moins_cheres_pct: z
        .number()
        .nullable()
        .describe('Part (%) de ces biens dont le prix au m² est sous celui de l’estimation (valeur.prix_m2).'),
    })
    .nullable()
    .describe('Annonces comparables en ligne ; null sans annonce comparable suivie (voir limites).'),
  baisses: z
    .object({
      biens: z.number().int().describe('Biens comparables dont une annonce a baissé de prix dans la fenêtre.'),
      annonces_suivies: z.number().int().describe('Biens comparables suivis dans la fenêtre.'),
      baisse_mediane_pct: z.number().nullable().describe('En valeur positive : 5 = 5 % de moins.'),
      prix_m2_median_apres_baisse: z.number().nullable(),
      fenetre_jours: z.number().int(),
    })
    .nullable(),
  retraits: z
    .object({
      biens: z.number().int().describe('Biens comparables retirés dans la fenêtre (plus aucune annonce en ligne).'),
      dernier_prix_m2_median: z.number().nullable(),
      fenetre_jours: z.number().int(),
    })
    .nullable(),
  dpe: z
    .object({
      classe: z.enum(CLASSES),
      interdiction_location: z.string().nullable(),
      mois_restants: z.number().int().nullable(),
      sortie: SortieSchema.nullable(),
    })
    .nullable(),
  ajustements: z.array(
    z.object({
      nature: z.string(),
      libelle: z.string(),
      pct: z.number(),
      motif: z.string().nullable(),
      source: z.enum(['bareme', 'ia']),
    }),
  ),
  affinage: z.object({ applique: z.boolean(), modele: z.string().nullable(), raison: z.string() }),
  vision: z.null(),
  limites: z.array(z.string()),
  sources: z.array(z.string()),
  mention: z.string(),
  calcule_le: z.string(),
});
type Sortie = z.infer<typeof EstimationOutput>;
export type EstimationSortie = Sortie;

/**
 * The deterministic estimate as computed, before it is served: with, not served, the asking prices per m² of the
 * comparable listings online, for estimer_bien_affine to place its refined value among them (affiner, repli drop
 * it, and so does estimer_bien: see servie).
 */
export type EstimationCalculee = Sortie & { prix_m2_annonces?: number[] };

/** The estimate as served: without what only the refinement reads. */
export function servie<T extends Sortie>(e: T & { prix_m2_annonces?: number[] }): T {
  const { prix_m2_annonces: _, ...reste } = e;
  return reste as unknown as T;
}

// ---------------------------------------------------------------------------------------------------------------------
// Around the value.
// ---------------------------------------------------------------------------------------------------------------------

const SOURCE_DVF = 'DVF (DGFiP, Etalab)';
const SOURCE_LOYERS = 'Carte des loyers (ministère du Logement, ANIL)';
export const FRAIS_NOTAIRE = 0.08;
/** Share of the rent left after charges, vacancy and management: the spec's 85 %. */
const PART_NETTE = 0.85;
/** First day letting of a class is forbidden (mainland calendar of the Climate and Resilience Act). */
export const INTERDICTIONS: Partial<Record<ClasseDpe, string>> = {
  G: '2025-01-01',
  F: '2028-01-01',
  E: '2034-01-01',
};
const MENTION =
  'Estimation indicative calculée à partir des ventes publiées (DVF) ; elle ne remplace ni une expertise ni un avis de valeur d’un professionnel.';

const arrondi = (v: number, pas: number) => Math.round(v / pas) * pas;
const un = (v: number) => Math.round(v * 10) / 10;

/** Full months from `now` to `date` (0 when already in force). */
export function moisRestants(now: Date, date: string): number {
  const d = new Date(`${date}T00:00:00Z`);
  let mois = (d.getUTCFullYear() - now.getUTCFullYear()) * 12 + (d.getUTCMonth() - now.getUTCMonth());
  if (d.getUTCDate() < now.getUTCDate()) mois -= 1;
  return Math.max(0, mois);
}

function typeLoyer(e: Entree): TypeLogement[] {
  if (e.type === 'maison') return ['maison'];
  if (e.pieces === undefined) return ['appartement'];
  return [e.pieces <= 2 ? 'appartement_t1_t2' : 'appartement_t3_plus', 'appartement'];
}

async function loyerDe(db: Queryable, dataset: Dataset, insee: string, e: Entree): Promise<LoyerCommune | null> {
  for (const type of typeLoyer(e)) {
    const l = await loyerCommune(db, dataset, insee, type);
    if (l) return l;
  }
  return null;
}

// ---------------------------------------------------------------------------------------------------------------------
// Where.
// ---------------------------------------------------------------------------------------------------------------------

interface Localisation {
  insee: string;
  commune: string;
  code_postal: string | null;
  lat: number | null;
  lon: number | null;
  origine: 'adresse' | 'commune';
}

async function localiser(db: Db, dataset: Dataset, e: Entree): Promise<Localisation> {
  if (e.adresse !== undefined) {
    const [c] = await rechercher(db, dataset, e.adresse, e.code_postal ?? null, 1);
    if (c && (c.type === 'numero' || c.type === 'voie' || c.type === 'lieu_dit')) {
      return {
        insee: c.insee,
        commune: c.commune,
        code_postal: c.code_postal,
        lat: c.lat,
        lon: c.lon,
        origine: 'adresse',
      };
    }
    if (e.insee === undefined && !(c && c.type === 'commune')) {
      // A test key's address that the frozen set does not hold is outside it, not absent from the BAN.
      if (dataset === 'sandbox') {
        throw new ApiError(
          'hors_bac_a_sable',
          `Aucune adresse du bac à sable ne répond à « ${e.adresse} » : les clés de test couvrent les communes ${SANDBOX_COMMUNES.join(', ')}.`,
        );
      }
      throw new ApiError(
        'adresse_introuvable',
        `L’adresse « ${e.adresse} » n’est pas trouvée dans la Base Adresse Nationale ; donnez insee pour une estimation à l’échelle de la commune. Rien n’est débité.`,
      );
    }
    if (c && e.insee === undefined) {
      return {
        insee: c.insee,
        commune: c.commune,
        code_postal: c.code_postal,
        lat: null,
        lon: null,
        origine: 'commune',
      };
    }
  }
  const insee = e.insee!;
  const { rows } = await db.query<{ nom: string; lat: number | null; lon: number | null; codes_postaux: string[] }>(
    `SELECT nom, lat, lon, codes_postaux FROM communes WHERE dataset = $1 AND insee = $2`,
    [dataset, insee],
  );
  const connue = rows[0] ?? null;
  const decoupage = communeByCode(insee);
  if (!connue && !decoupage) {
    throw new ApiError('commune_introuvable', `Aucune commune n’a le code ${insee} ; rien n’est débité.`);
  }
  return {
    insee,
    commune: connue?.nom ?? decoupage!.nom,
    code_postal: e.code_postal ?? connue?.codes_postaux[0] ?? null,
    // A commune's centre is not the dwelling's place: the commune's scale, not comparables around its town hall.
    lat: null,
    lon: null,
    origine: 'commune',
  };
}

// ---------------------------------------------------------------------------------------------------------------------
// The estimate.
// ---------------------------------------------------------------------------------------------------------------------

function fiabilite(socle: string, ventes: number, rayon: number | null): Sortie['niveau']['fiabilite'] {
  if (socle !== 'comparables_dvf') return 'limitee';
  if (ventes >= COMPARABLES_VISES && rayon !== null && rayon <= 1000) return 'elevee';
  return ventes >= COMPARABLES_VISES ? 'correcte' : 'limitee';
}

/** The deterministic estimate, as estimer_bien serves it (and estimer_bien_affine starts from). */
export async function estimer(db: Db, dataset: Dataset, e: Entree, now: Date): Promise<EstimationCalculee> {
  const lieu = await localiser(db, dataset, e);
  const departement = departementOf(lieu.insee);
  const sansDvf = absenceDvf(departement);
  if (sansDvf) {
    throw new ApiError(
      'ressource_absente',
      `${sansDvf} Aucune estimation n’est possible à ${lieu.commune} (${lieu.insee}) faute de ventes publiées ; rien n’est débité.`,
    );
  }
  const brute = await valeurBrute(db, dataset, lieu, e.type, e.surface);
  if (!brute) {
    throw new ApiError(
      'ressource_absente',
      `Trop peu de ventes DVF ${e.type === 'maison' ? 'de maisons' : 'd’appartements'} autour de ce bien et dans la commune de ${lieu.commune} (${lieu.insee}) pour l’estimer ; rien n’est débité.`,
    );
  }
  const limites: string[] = [];
  const ajustements = ajustementsBareme({ ...e, dpe: e.dpe as ClasseDpe | undefined });
  const total = totalAjustements(ajustements);
  const largeur = await demiLargeur(db, dataset, e.type, brute.socle);
  const prixM2 = brute.prix_m2_socle * (1 + total / 100);
  const valeur = arrondi(prixM2 * e.surface, 1000);
  const bas = arrondi(valeur * (1 - largeur.pct / 100), 1000);
  const haut = arrondi(valeur * (1 + largeur.pct / 100), 1000);

  if (brute.socle === 'commune') {
    limites.push(
      lieu.origine === 'adresse'
        ? `Moins de ${COMPARABLES_MIN} ventes comparables à ${RAYONS_M[RAYONS_M.length - 1]} m de l’adresse : valeur tirée du prix médian de la commune (socle commune), sans tenir compte de l’emplacement.`
        : 'Sans adresse localisée, la valeur vient du prix médian de la commune (socle commune).',
    );
  }
  if (brute.socle === 'iris') {
    limites.push(
      `Moins de ${COMPARABLES_MIN} ventes comparables à ${RAYONS_M[RAYONS_M.length - 1]} m de l’adresse : valeur tirée du prix médian de l’IRIS (socle iris), toutes surfaces.`,
    );
  }
  if (!largeur.calibree) {
    limites.push(
      `Fourchette non calibrée : le backtest (npm run modeles) n’a pas encore mesuré l’erreur de ce socle ; demi-largeur par défaut de ${largeur.pct} %, plus large que prudent.`,
    );
  }
  if (!brute.indexe) {
    limites.push('Indice départemental des prix non calculé : les prix des ventes ne sont pas ramenés à aujourd’hui.');
  }
  const annonces = await annoncesComparables(
    db,
    dataset,
    { insee: lieu.insee, type: e.type, surface: e.surface, bande: BANDE_SURFACE },
    Math.round(prixM2),
  );
  limites.push(...annonces.limites);
  if (e.description || e.qualites?.length || e.equipements?.length) {
    limites.push(LIMITE_CHAMPS_TEXTE_NON_LUS);
  }

  // Rent and yield.
  const l = await loyerDe(db, dataset, lieu.insee, e);
  const loyer: Sortie['loyer'] = l
    ? {
        mensuel: Math.round(l.loyer_m2 * e.surface),
        bas: Math.round(l.bas_m2 * e.surface),
        haut: Math.round(l.haut_m2 * e.surface),
        nature: l.nature,
        charges_comprises: true,
        qualite: {
          n: l.nb_obs_commune ?? l.nb_obs_maille,
          provenance: 'estime',
          incertitude: {
            demi_largeur_pct: null,
            bas: Math.round(l.bas_m2 * e.surface),
            haut: Math.round(l.haut_m2 * e.surface),
          },
          drapeaux: l.nature === 'predit_maille' ? ['peu_d_observations'] : [],
          methode: `Loyer prédit au m² (${l.loyer_m2} €/m², édition ${l.edition}, niveau ${l.niveau_prediction}) × surface.`,
          donnees_du: `${l.edition}-01-01`,
          source: SOURCE_LOYERS,
        },
      }
    : null;
  if (!l) limites.push('Aucun indicateur de loyer pour cette commune : loyer null.');
  const loyerMensuel = e.loyer_pratique ?? loyer?.mensuel ?? null;
  const prixRendement = e.prix_demande ?? valeur;
  const frais = Math.round(prixRendement * FRAIS_NOTAIRE);
  const rendement: Sortie['rendement'] =
    loyerMensuel !== null
      ? {
          sur: e.prix_demande !== undefined ? 'prix_demande' : 'valeur_estimee',
          prix: prixRendement,
          loyer: e.loyer_pratique !== undefined ? 'pratique' : 'estime',
          loyer_mensuel: loyerMensuel,
          brut_pct: un(((12 * loyerMensuel) / prixRendement) * 100),
          frais_notaire: frais,
          net_hors_travaux_pct: un(((PART_NETTE * 12 * loyerMensuel) / (prixRendement + frais)) * 100),
        }
      : null;

  const prixDemande: Sortie['prix_demande'] =
    e.prix_demande !== undefined
      ? {
          prix: e.prix_demande,
          prix_m2: Math.round(e.prix_demande / e.surface),
          ecart_pct: un(((e.prix_demande - valeur) / valeur) * 100),
          position:
            e.prix_demande < bas
              ? 'sous_la_fourchette'
              : e.prix_demande > haut
                ? 'au_dessus_de_la_fourchette'
                : 'dans_la_fourchette',
        }
      : null;

  let dpe: Sortie['dpe'] = null;
  if (e.dpe) {
    const outreMer = isOutreMer(departement);
    const interdiction = outreMer ? null : (INTERDICTIONS[e.dpe] ?? null);
    dpe = {
      classe: e.dpe,
      interdiction_location: interdiction,
      mois_restants: interdiction ? moisRestants(now, interdiction) : null,
      sortie:
        ['E', 'F', 'G'].includes(e.dpe) && !outreMer
          ? await sortieDpe(db, dataset, e.dpe as 'E' | 'F' | 'G', lieu.insee, e.surface)
          : null,
    };
    if (outreMer)
      limites.push('Outre-mer : le calendrier d’interdiction de location de la métropole ne s’applique pas.');
  }

  const ventes = brute.comparables.map((c) => ({
    date: c.date,
    type: c.type,
    surface_m2: c.surface_m2,
    prix: c.prix,
    prix_m2: c.prix_m2,
    distance_m: c.distance_m,
    millesime: c.millesime,
    adresse: c.adresse,
    code_postal: c.code_postal,
    id_mutation: c.id_mutation,
    lat: c.lat,
    lon: c.lon,
  }));
  const libelle =
    brute.socle === 'comparables_dvf'
      ? `${brute.ventes} ventes comparables à ${brute.rayon_m} m au plus (surface ±${BANDE_SURFACE * 100} %)`
      : brute.socle === 'iris'
        ? `Prix médian des ${e.type === 'maison' ? 'maisons' : 'appartements'} vendus dans l’IRIS ${brute.iris!.nom ?? brute.iris!.code} (${brute.ventes} ventes)`
        : `Prix médian des ${e.type === 'maison' ? 'maisons' : 'appartements'} vendus à ${lieu.commune} (${brute.ventes} ventes)`;
  const drapeaux: Array<'peu_d_observations'> = brute.ventes < COMPARABLES_VISES ? ['peu_d_observations'] : [];

  return {
    bien: {
      type: e.type,
      surface_m2: e.surface,
      pieces: e.pieces ?? null,
      commune: lieu.commune,
      code_postal: lieu.code_postal,
      insee: lieu.insee,
      origine: lieu.origine,
    },
    valeur: {
      bas,
      valeur,
      haut,
      prix_m2: Math.round(prixM2),
      demi_largeur_pct: largeur.pct,
      qualite: {
        n: brute.ventes,
        provenance: brute.nature,
        incertitude: { demi_largeur_pct: largeur.pct, bas, haut },
        drapeaux,
        methode: largeur.calibree
          ? `Médiane des prix au m² indexés × surface, ajustée par le barème ; demi-largeur mesurée par le backtest du ${largeur.mesure_le} (${largeur.echantillon} ventes) pour couvrir 80 % des prix.`
          : `Médiane des prix au m² indexés × surface, ajustée par le barème ; demi-largeur par défaut (${DEMI_LARGEUR_PAR_DEFAUT[brute.socle]} %), non calibrée.`,
        donnees_du: brute.comparables.reduce<string | null>((d, c) => (d === null || c.date > d ? c.date : d), null),
        source: SOURCE_DVF,
      },
    },
    niveau: {
      nature: brute.nature,
      socle: brute.socle,
      libelle,
      ventes: brute.ventes,
      rayon_m: brute.rayon_m,
      millesime: brute.millesime,
      prix_m2_socle: Math.round(brute.prix_m2_socle),
      fiabilite: fiabilite(brute.socle, brute.ventes, brute.rayon_m),
    },
    comparables: {
      n: ventes.length,
      prix_m2_median: ventes.length ? Math.round(mediane(ventes.map((v) => v.prix_m2))!) : null,
      millesimes: brute.millesimes,
      ventes,
    },
    loyer,
    rendement,
    prix_demande: prixDemande,
    annonces_en_vente: annonces.annonces_en_vente,
    baisses: annonces.baisses,
    retraits: annonces.retraits,
    dpe,
    ajustements,
    affinage: {
      applique: false,
      modele: null,
      raison: 'Estimation déterministe : comparables et barème, sans modèle (estimer_bien_affine l’affine).',
    },
    vision: null,
    limites,
    sources: [
      SOURCE_DVF,
      ...(loyer ? [SOURCE_LOYERS] : []),
      ...(dpe?.sortie ? ['Audits énergétiques (ADEME)'] : []),
      ...(annonces.lues ? [SOURCE_ANNONCES] : []),
    ],
    mention: MENTION,
    calcule_le: now.toISOString(),
    prix_m2_annonces: annonces.prix_m2_en_vente,
  };
}

// ---------------------------------------------------------------------------------------------------------------------
// estimer_bien
// ---------------------------------------------------------------------------------------------------------------------

const DESCRIPTION = `Estimation déterministe d'un logement (appartement ou maison) : valeur, fourchette calibrée, comparables DVF, loyer, rendement, échéance et coût de sortie DPE. Jumeau déterministe de \`estimer_bien_affine\` : même corps sans \`photos\` (les champs texte sont acceptés, seul le barème s'applique), même réponse avec \`affinage.applique\` false et \`vision\` null. Un calcul envoyé par POST : il ne modifie rien.

**Lieu.** \`adresse\` (écrite comme on l'écrit, avec \`code_postal\` pour lever une ambiguïté) est cherchée dans la Base Adresse Nationale ; à défaut \`insee\` donne la commune (\`bien.origine\` commune). Adresse introuvable sans \`insee\` : 404 \`adresse_introuvable\` (clé de test : 403 \`hors_bac_a_sable\`, comme une commune ou un code postal hors du bac à sable). Alsace-Moselle et Mayotte (hors DVF) : 404 \`ressource_absente\` dont le détail dit pourquoi ; rien n'est débité.

**Socle.** Ventes DVF simples (un seul logement, vente ou VEFA, sans motif d'écart : ni vente en bloc, ni échange, ni local professionnel, ni prix ou surface atypique) du même type, de surface à ±${BANDE_SURFACE * 100} %, des ${4} derniers millésimes, dans un rayon élargi par paliers (${RAYONS_M.join(', ')} m ; 3 km au plus) jusqu'à ${COMPARABLES_VISES} ventes (au moins ${COMPARABLES_MIN} au rayon maximal) : \`socle\` comparables_dvf, \`nature\` mesure. Les plus récents millésimes d'abord, puis les plus proches ; 30 au plus. Chaque prix est ramené au dernier millésime par l'indice départemental (rapport des médianes annuelles du prix au m² des ventes simples du département et du type, table dérivée reconstruite par \`npm run modeles\`). Faute de comparables : prix médian, toutes surfaces, des ventes simples du type dans l'IRIS de l'adresse (\`socle\` iris, ${COMMUNE_MIN} ventes au moins), sinon dans la commune (\`socle\` commune) ; \`nature\` estime. Distances arrondies à 50 m.

**Barème** (\`ajustements\`, \`source\` bareme, une ligne par nature) : ${BAREME_TEXTE}.

**Fourchette.** \`valeur\` = prix au m² du socle × (1 + ajustements) × surface, arrondie au millier. \`demi_largeur_pct\` : la demi-largeur qui a couvert 80 % des prix réels des ventes tenues hors échantillon au dernier backtest, pour ce type et ce socle (\`GET /modeles/estimation\`) ; tant qu'il n'a pas tourné : ${DEMI_LARGEUR_PAR_DEFAUT.comparables_dvf} % (comparables), ${DEMI_LARGEUR_PAR_DEFAUT.commune} % (commune), dit dans \`limites\`.

**Autour.** \`loyer\` : indicateur de loyer de la commune (carte des loyers, charges comprises ; T1-T2 ou T3+ selon \`pieces\`), \`nature\` observe_commune ou predit_maille, intervalle publié. \`rendement\` : sur \`prix_demande\` sinon la valeur estimée, loyer \`loyer_pratique\` sinon estimé ; brut = 12 × loyer / prix ; frais de notaire 8 % du prix ; net hors travaux = 85 % × 12 × loyer / (prix + frais). \`dpe\` : interdiction de location (G 2025, F 2028, E 2034, métropole), mois restants, et pour E/F/G le coût de sortie vers D, C, B tiré des audits énergétiques réglementaires (médiane, p25, p75 ; commune, puis département, puis national, \`niveau\` le dit). \`annonces_en_vente\`, \`baisses\`, \`retraits\` : lus sur les annonces détenues par le service. ${regleComparables(BANDE_SURFACE)}`;

export const estimerBien = defineOperation({
  tool: 'estimer_bien',
  method: 'POST',
  path: '/estimations',
  summary: 'Estimation déterministe d’un logement',
  description: DESCRIPTION,
  credits: 10,
  unit: 'appel',
  scope: 'estimation',
  tier: 'usage',
  sandbox: true,
  territoires: (e: { insee?: string; code_postal?: string }) => [
    ...(e.insee ? [{ commune: e.insee }] : []),
    ...(e.code_postal ? [{ code_postal: e.code_postal }] : []),
  ],
  cacheS: 86_400,
  computedAt: 'calcule_le',
  lot: true,
  timeoutS: 15,
  effect: 'lecture',
  errors: ['ressource_absente', 'adresse_introuvable', 'commune_introuvable'],
  input: EstimationInput,
  output: EstimationOutput,
  dataDate: (o: Sortie) => o.valeur.qualite.donnees_du,
  handler: servedFromDataset(async (e, ctx, dataset) => {
    return servie(await estimer(ctx.services.db, dataset, e, ctx.services.now()));
  }),
});

// ---------------------------------------------------------------------------------------------------------------------
// estimer_bien_affine
// ---------------------------------------------------------------------------------------------------------------------

const DESCRIPTION_AFFINEE = `La même estimation que \`estimer_bien\` (mêmes comparables, barème, fourchette calibrée, loyer, rendement, DPE : voir sa description), **affinée par un modèle de langage** qui lit l'état, les qualités, la description, l'exposition, les annexes, les équipements et les photos du logement. Le service garde le modèle en main : il borne, vérifie et peut toujours répondre sans lui. La requête attend le résultat (45 s au plus). Un calcul envoyé par POST : il ne modifie rien et ne garde rien.

**Photos** (\`photos\`, ${MAX_PHOTOS} liens au plus) : liens publics **https** vers une adresse publique d'Internet (ni réseau privé, ni local, ni réservé), lus pendant l'appel, **redirections non suivies**, ${PHOTO_MAX_OCTETS.toLocaleString('fr-FR')} octets (1,6 Mo) au plus chacune, JPEG, PNG ou WebP **reconnus aux octets** (jamais à l'extension ni au type annoncé), **${PHOTO_MAX_PIXELS / 1_000_000} millions de pixels au plus** (largeur × hauteur de l'en-tête de l'image). Chaque lien est lu une seule fois ; un même lien donné deux fois est refusé. Chaque photo est redressée, ramenée à ${PHOTO_COTE_MAX} px au plus et réencodée en JPEG, ce qui retire toutes ses métadonnées (EXIF, position GPS), puis donnée au modèle dans la requête elle-même : **jamais stockée** (ni base de données, ni disque, ni historique des tâches) **ni renvoyée**.

**Ordre des contrôles des photos** : tout ce qui peut refuser sans décoder d'image passe d'abord, pour **tous** les liens ; un refus s'arrête à la première étape qui refuse et cite toutes les photos refusées à cette étape.
1. Sans réseau, avant toute tâche : https, pas d'identifiants dans le lien, adresse IP écrite en clair publique, pas deux fois le même lien. Aucun nom n'est résolu à cette étape : un nom donné n'est jamais résolu pour formuler un refus.
2. Tous les liens lus, ensemble : le nom et chacune de ses adresses publics, réponse HTTP 200, 1,6 Mo au plus, type reconnu aux premiers octets.
3. Toutes les en-têtes lues : ${PHOTO_MAX_PIXELS / 1_000_000} Mpx au plus (dimensions lues sans décoder un pixel ; au-delà, la photo est refusée avec son numéro et ses dimensions).
4. Alors seulement le décodage : **${DECODAGES_PAR_ORGANISATION} photos à la fois au plus par organisation** sur un même processus de traitement ; les suivantes attendent leur tour, sans retarder celles des autres organisations.

Un refus répond **400 \`parametres_invalides\`** sur le champ (\`photos[2]\`…), sans débit ; plus de ${MAX_PHOTOS} liens aussi. Un hôte que le service ne joint pas (adresse privée, locale ou réservée, nom qui ne se résout pas, connexion refusée ou jamais établie) reçoit toujours le même message, « La photo n° 3 n’est pas joignable (adresse publique https attendue). » : une réponse ne dit jamais si un nom se résout.

**Quota par minute** : un refus n'est pas débité, mais le travail qu'il a coûté compte dans le quota par minute de l'organisation. Un refus aux étapes 2 à 4 compte, en plus de l'appel lui-même, **un appel par lien lu et un par tranche entamée de ${(PIXELS_PAR_APPEL / 1_000_000).toLocaleString('fr-FR')} million de pixels décodés** ; le quota de la minute épuisé, les appels suivants répondent 429 \`quota_minute\` jusqu'à la minute suivante (ce qui dépasse n'est pas reporté). Un refus à l'étape 1 ne compte que pour lui-même.

**Ce que le modèle propose** : des lignes \`ajustements\` (\`source\` ia) avec \`nature\`, \`pct\`, \`motif\`, et \`vision\` {equipements, constats}. **Ce que le service en garde** :
- une nature admise, chacune **bornée à son intervalle** : ${BORNES_TEXTE} ; au-delà, la ligne est ramenée à la borne ;
- une ligne par nature : une nature déjà comptée par le barème (l'état déclaré par exemple) ou déjà donnée est écartée ;
- **ancrage** : chaque ligne doit s'appuyer sur un extrait recopié de \`description\`, \`qualites\` ou \`equipements\`, ou sur un constat ou un équipement vu sur les photos ; l'extrait (${APPUI_MIN_CARACTERES} lettres ou chiffres au moins, comparé sans accents ni ponctuation, par mots entiers) introuvable, la ligne est **écartée** ; le motif publié cite cet appui ;
- **plafond total** : la somme de toutes les lignes (barème, lui-même borné à ±${PLAFOND_BAREME_PCT} %, et modèle) est bornée à ±${PLAFOND_TOTAL_PCT} % ; au-delà, les lignes du modèle sont réduites ensemble ;
- \`constats\` et \`equipements\` de \`vision\` ne portent **ni prix ni pourcentage** : un constat qui donne un montant, un prix ou un pourcentage est retiré.

Tout ce qui est borné, écarté ou retiré est dit dans \`affinage.raison\` et \`limites\`. La valeur, la fourchette (même demi-largeur calibrée), la position du prix demandé, le rendement sur la valeur estimée et \`annonces_en_vente.part_moins_cheres_pct\` (les annonces comparables en ligne placées face au prix au m² affiné) sont recalculés avec les lignes retenues. \`vision\` est null sans photo.

**Repli** : modèle absent, indisponible, trop lent ou réponse inexploitable (ou moteur des tâches injoignable) : l'estimation déterministe est servie (\`affinage.applique\` false, \`affinage.raison\` dit pourquoi) et **10 crédits** sont débités (le prix de \`estimer_bien\`), pas 30. 30 crédits quand le modèle a répondu, même si le service a écarté toutes ses lignes. Adresse introuvable ou données absentes : mêmes réponses que \`estimer_bien\`, rien n'est débité.`;

const PhotoUrl = z
  .url({ protocol: /^https$/, error: 'Lien https attendu (URL absolue commençant par https://).' })
  .max(2000);

export const EstimationAffineeOutput = EstimationOutput.extend({ vision: VisionSchema.nullable() });

/** Refused photos as the customer reads them: field by field, then what it cost. */
function refusPhotos(refus: PhotoRefus[], suite: string): ApiError {
  const erreurs: FieldError[] = refus.map((r) => ({ champ: r.champ, emplacement: 'corps', message: r.message }));
  return new ApiError('parametres_invalides', `${refus.map((r) => `${r.champ} : ${r.message}`).join(' ')} ${suite}`, {
    erreurs,
  });
}

/** The failures of the refinement's task that are the deterministic estimate's own refusals. */
const REFUS_DETERMINISTES = new Set<string>(['adresse_introuvable', 'ressource_absente', 'commune_introuvable']);

export const estimerBienAffine = defineOperation({
  tool: 'estimer_bien_affine',
  needsTaskEngine: true,
  method: 'POST',
  path: '/estimations/affinees',
  summary: 'Estimation d’un logement affinée par un modèle (photos, description), bornée par le service',
  description: DESCRIPTION_AFFINEE,
  credits: 30,
  unit: 'appel',
  scope: 'estimation',
  tier: 'usage',
  sandbox: false,
  cacheS: 0,
  computedAt: 'calcule_le',
  timeoutS: 45,
  effect: 'lecture',
  errors: ['ressource_absente', 'adresse_introuvable', 'commune_introuvable'],
  input: EstimationChamps.extend({
    photos: z
      .array(PhotoUrl)
      .max(MAX_PHOTOS, `${MAX_PHOTOS} photos au plus.`)
      .optional()
      .describe(`Liens https publics de photos (JPEG, PNG, WebP ; ${MAX_PHOTOS} au plus, 1,6 Mo chacune).`),
  }).refine(...lieuDonne),
  output: EstimationAffineeOutput,
  price: (o: EstimationAffinee) => (o.affinage.applique ? 30 : estimerBien.credits),
  dataDate: (o: EstimationAffinee) => o.valeur.qualite.donnees_du,
  async handler(input, ctx): Promise<EstimationAffinee> {
    const photos = input.photos ?? [];
    // Step 1 (domain/estimation/photos.ts): refused before any task starts, any name is looked up or any credit moves.
    try {
      await verifierLiens(photos, ctx.services.outbound);
    } catch (error) {
      if (!(error instanceof PhotosRefusees)) throw error;
      throw refusPhotos(error.refus, 'Rien n’a été lu ni débité.');
    }
    const { db } = ctx.services;
    const deterministe = async (raison: string) =>
      repli(
        await servedSource(db, 'live', await estimer(db, 'live', input, ctx.services.now())),
        raison,
        photos.length,
      );
    if (!ctx.services.tasks || !ctx.services.taskEnds) {
      return deterministe(
        'Le moteur des tâches n’est pas configuré (TEMPORAL_ADDRESS) : le modèle n’a pas été appelé.',
      );
    }
    try {
      return await runSyncTask<EstimationAffinee>(
        { db, engine: ctx.services.tasks, ends: ctx.services.taskEnds },
        { operation: 'estimer_bien_affine', caller: ctx.caller, input: { ...input }, signal: ctx.signal },
      );
    } catch (error) {
      if (ctx.signal.aborted) throw error;
      if (!(error instanceof SyncTaskFailed)) {
        return deterministe('Le moteur des tâches est momentanément injoignable : le modèle n’a pas été appelé.');
      }
      const { code, detail } = error.erreur;
      if (code === 'photo_invalide') {
        const refus = detail.split('\n').map((ligne) => {
          const m = /^(photos\[\d+\]) : ([\s\S]*)$/.exec(ligne);
          return { champ: m?.[1] ?? 'photos', message: m?.[2] ?? ligne };
        });
        throw refusPhotos(
          refus,
          'Rien n’a été débité ; la lecture des photos compte dans le quota par minute de l’organisation.',
        );
      }
      if (REFUS_DETERMINISTES.has(code)) throw new ApiError(code as ErrorCode, detail);
      if (code === 'delai_depasse') {
        throw new ApiError('delai_depasse', 'L’estimation affinée a dépassé son délai ; rien n’a été débité.');
      }
      throw new ApiError('erreur_interne', 'L’estimation affinée a échoué ; rien n’a été débité.');
    }
  },
});

export const estimationOperations = [estimerBien, estimerBienAffine, ...modelesOperations];
