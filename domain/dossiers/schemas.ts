import { z } from 'zod';
import { QualiteSchema } from '../qualite.ts';
import { COTES, FORMALITES, NATURES } from './projet.ts';

/** The response blocks `coupes_facades` and `preparer_dossier` share. */

const Point = z.tuple([z.number(), z.number()]);
const Cote = z.enum(COTES);

export const AdresseSchema = z
  .object({ libelle: z.string(), lat: z.number(), lon: z.number(), precision: z.string() })
  .nullable()
  .describe('Adresse géocodée ; null quand la parcelle est donnée par `idu`.');

export const ParcelleSchema = z.object({
  idu: z.string(),
  section: z.string(),
  numero: z.string(),
  commune: z.string().nullable(),
  code_insee: z.string(),
  contour: z.array(Point).describe('Contour [lon, lat] (WGS84).'),
  contenance_m2: z.number().nullable().describe('Contenance cadastrale (m²), null quand le cadastre ne la donne pas.'),
  aire_m2: z.number().describe('Aire mesurée du contour en Lambert-93 (m²).'),
  limites: z.array(
    z.object({
      cote: Cote,
      nature: z
        .enum(['separative', 'voie'])
        .describe(
          'separative : bordée par une autre parcelle ; voie : aucune parcelle au-delà (voie ou domaine public présumés).',
        ),
      longueur_m: z.number(),
    }),
  ),
});

export const BatimentSchema = z.object({
  numero: z.number().int(),
  emprise_m2: z.number(),
  leger: z.boolean().describe('Bâti léger du cadastre (abri, serre).'),
  principal: z.boolean().describe('Le plus grand bâtiment en dur : celui auquel `accole_batiment` accole.'),
  contour: z.array(Point),
});

export const ProjetMesureSchema = z.object({
  libelle: z.string(),
  nature: z.enum(NATURES),
  cote: Cote.describe('Côté d’ancrage : la façade principale y fait face.'),
  contour_wgs84: z.array(Point),
  emprise_m2: z.number().describe('Emprise au sol (R.420-1), nulle pour une terrasse de plain-pied.'),
  surface_plancher_m2: z
    .number()
    .describe(
      'Surface de plancher créée : emprise, murs compris (majorant), d’une construction close de plus de 1,80 m.',
    ),
  bassin_m2: z.number().nullable(),
  hauteur_m: z.number(),
  altitudes_ngf: z
    .object({ terrain_m: z.number(), plancher_m: z.number(), sommet_m: z.number() })
    .nullable()
    .describe('Altitudes NGF, quand `altitude_terrain_m` est donnée.'),
  toiture: z
    .object({
      type: z.enum(['plate', 'un_pan', 'deux_pans']),
      hauteur_murs_m: z.number(),
      hauteur_faitage_m: z.number(),
      pente_deg: z.number().nullable(),
    })
    .nullable(),
  ouvertures: z.number().int(),
  distances_limites: z.array(z.object({ cote: Cote, nature: z.enum(['separative', 'voie']), distance_m: z.number() })),
  distance_limite_separative_min_m: z.number().nullable(),
  distance_voie_min_m: z.number().nullable(),
  distances_batiments: z.array(z.object({ batiment: z.number().int(), distance_m: z.number() })),
  accole_batiment: z.boolean(),
  hors_parcelle: z.boolean(),
});

export const CoupeSchema = z.object({
  projet: z.string(),
  sens: z.enum(['perpendiculaire_au_cote', 'parallele_au_cote', 'nord_sud', 'est_ouest']),
  de: Cote,
  vers: Cote,
  longueur_m: z.number().describe('Longueur de la coupe d’une limite de la parcelle à l’autre.'),
  terrain_naturel: z.object({
    altitude_ngf_m: z.number().nullable(),
    plat: z.boolean(),
    profil: z.array(Point).describe('[abscisse m, niveau m] depuis la limite `de`.'),
  }),
  projet_profil: z.array(Point),
  niveau_plancher_m: z.number(),
  altitude_plancher_ngf_m: z.number().nullable(),
  hauteur_max_sol_m: z.number().describe('Hauteur maximale du projet au-dessus du terrain naturel.'),
  altitude_max_ngf_m: z.number().nullable(),
  hauteur_max_autorisee_m: z.number().nullable().describe('Plafond de hauteur du règlement lu, tracé sur la coupe.'),
  distances_limites: z
    .array(z.object({ cote: Cote, distance_m: z.number() }))
    .describe('Distances le long de la coupe, cotées sur la feuille.'),
  batiments: z
    .array(z.object({ numero: z.number().int(), de_m: z.number(), a_m: z.number() }))
    .describe(
      'Bâtiments existants que la coupe traverse, depuis la limite `de` ; leur hauteur n’est pas connue du cadastre.',
    ),
  deblai_m3: z.number(),
  remblai_m3: z.number(),
  feuille: z.number().int().nullable(),
});

export const FacadeSchema = z.object({
  projet: z.string(),
  orientation: Cote,
  largeur_m: z.number(),
  hauteur_murs_m: z.number(),
  hauteur_faitage_m: z.number(),
  toiture: z.enum(['plate', 'un_pan', 'deux_pans']),
  pente_toiture_deg: z.number().nullable(),
  pignon: z.boolean(),
  ouvertures: z.array(
    z.object({
      type: z.enum(['porte', 'fenetre', 'baie', 'porte_garage']),
      libelle: z.string().nullable(),
      position_m: z.number(),
      largeur_m: z.number(),
      hauteur_m: z.number(),
      allege_m: z.number(),
    }),
  ),
  materiaux: z.object({
    murs: z.string().nullable(),
    toiture: z.string().nullable(),
    menuiseries: z.string().nullable(),
  }),
  feuille: z.number().int().nullable(),
});

export const FeuilleSchema = z.object({
  numero: z.number().int(),
  piece: z.enum(['plan_masse', 'coupe', 'facades']),
  titre: z.string(),
  echelle: z.enum(['1/100', '1/200', '1/500']),
  format: z.enum(['A4', 'A3']),
  url: z.string().describe('Lien de téléchargement signé du PDF, sans clé d’API, valable jusqu’à `expire_le`.'),
  expire_le: z.string(),
  sha256: z.string(),
  taille_octets: z.number().int(),
});

export const VerificationSchema = z.object({
  projet: z.string(),
  theme: z.string(),
  forme: z.string(),
  statut: z.enum(['respectee', 'non_respectee', 'a_confirmer']),
  exigence: z.string(),
  valeur_exigee: z.number().nullable(),
  valeur_mesuree: z.number().nullable(),
  unite: z.string().nullable(),
  resume: z.string(),
  citation: z.string().describe('Texte exact du règlement (citation vérifiée par lire_plu).'),
  article: z.string().nullable(),
  page: z.number().int(),
  lien: z.string().nullable(),
  note: z.string().nullable(),
});

export const RefusSchema = z.object({ raison: z.string(), a_confirmer: z.boolean() }).nullable();
export const FormaliteEnum = z.enum(FORMALITES);
export const QuestionSchema = z.object({ champ: z.string(), question: z.string() });
export { QualiteSchema };

const FichierSchema = z.object({
  url: z.string(),
  expire_le: z.string(),
  sha256: z.string(),
  taille_octets: z.number().int(),
});

export const PieceSchema = z.object({
  code: z.string().describe('Code du bordereau (DPMI2, PCMI4…) ; NOTICE et TAXES pour les compléments.'),
  titre: z.string(),
  role: z.string(),
  etat: z
    .enum(['prete', 'a_produire_par_une_operation', 'a_fournir_par_le_demandeur'])
    .describe(
      'prete : dessinée ici, avec son lien ; a_produire_par_une_operation : par `operation` ; a_fournir_par_le_demandeur : photos, insertion, plan de situation.',
    ),
  operation: z.string().nullable(),
  feuilles: z.array(z.number().int()).describe('Numéros des feuilles de `feuilles` qui forment la pièce.'),
  url: z.string().nullable(),
  faits: z.array(z.string()).describe('Ce qu’il faut pour produire la pièce.'),
});

export const DossierResultSchema = z.object({
  adresse: AdresseSchema,
  origine: z.object({ lat: z.number(), lon: z.number() }),
  parcelle: ParcelleSchema,
  batiments: z.array(BatimentSchema),
  projets: z.array(ProjetMesureSchema),
  zone: z
    .object({
      code: z.string(),
      libelle: z.string().nullable(),
      famille: z.string().nullable(),
      type_document: z.string().nullable(),
      document: z.string(),
      reglement_url: z.string().nullable(),
    })
    .nullable(),
  regles: z.object({
    etat: z
      .enum(['lues', 'non_lues', 'scanne', 'sans_reglement', 'zone_absente', 'lecture_echouee'])
      .describe(
        'lues : règlement de la zone lu (cache de lire_plu) et vérifié ; sinon les règles ne sont pas vérifiées, `raison` dit pourquoi.',
      ),
    raison: z.string().nullable(),
    lecture: z.object({ modele: z.string(), extrait_le: z.string() }).nullable(),
    verifications: z.array(VerificationSchema),
    non_mesurables: z.array(z.string()),
  }),
  alertes: z.array(z.string()).describe('Règles non respectées par l’esquisse, avec citation, article et page.'),
  refus: RefusSchema,
  formalite: z.object({
    retenue: FormaliteEnum.describe('Formalité que le Code de l’urbanisme impose au projet.'),
    declaree: FormaliteEnum.nullable(),
    correction: z
      .string()
      .nullable()
      .describe('Pourquoi la formalité déclarée est corrigée, avec l’article qui décide.'),
    cerfa: z.object({ numero: z.string(), intitule: z.string() }).nullable(),
    decisions: z.array(
      z.object({ projet: z.string(), formalite: FormaliteEnum, article: z.string(), motif: z.string() }),
    ),
    architecte: z.object({ obligatoire: z.boolean(), article: z.string(), motif: z.string() }),
  }),
  pieces: z.array(PieceSchema).describe('Pièces dans l’ordre du bordereau.'),
  manquants: z.array(z.string()),
  donnees_cerfa: z.object({
    formulaire: z.string().nullable(),
    formalite: FormaliteEnum,
    intitule_formalite: z.string(),
    demandeur: z.string(),
    maison_individuelle: z.boolean(),
    terrain: z.object({
      adresse: z.string().nullable(),
      code_postal: z.string().nullable(),
      commune: z.string().nullable(),
      code_insee: z.string(),
      parcelles: z.array(
        z.object({ prefixe: z.string(), section: z.string(), numero: z.string(), superficie_m2: z.number() }),
      ),
      superficie_totale_m2: z.number(),
    }),
    nature_travaux: z.array(z.string()),
    surface_plancher_existante_m2: z.number(),
    surface_plancher_creee_m2: z.number(),
    surface_plancher_totale_m2: z.number(),
    emprise_creee_m2: z.number(),
    emprise_totale_m2: z.number(),
    architecte_obligatoire: z.boolean(),
  }),
  coupes: z.array(CoupeSchema),
  facades: z.array(FacadeSchema),
  feuilles: z.array(FeuilleSchema),
  notice: z.object({
    etat: z.enum(['prete', 'a_fournir_par_le_demandeur']),
    terrain: z.array(z.string()),
    projet: z.array(z.string()),
    chiffres_ecartes: z
      .number()
      .int()
      .describe('Chiffres du modèle absents des faits du dossier : leurs phrases retirées.'),
    modele: z.string().nullable(),
    raison: z.string().nullable(),
    fichiers: z.object({ pdf: FichierSchema, docx: FichierSchema }).nullable(),
  }),
  faits_manquants: z.array(z.string()),
  questions: z.array(QuestionSchema),
  constats: z.array(z.string()),
  sources: z.array(z.string()),
  limites: z.array(z.string()),
  mention: z.string(),
  genere_le: z.string(),
  qualite: QualiteSchema,
});
