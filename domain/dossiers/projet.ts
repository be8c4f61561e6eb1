import { z } from 'zod';

/**
 * The project object the specification shares between `coupes_facades` and `preparer_dossier`, and the location
 * fields both take. Bounds are the specification's; the descriptions say how each field is used here.
 */

export const NATURES = [
  'extension',
  'annexe',
  'abri',
  'garage',
  'carport',
  'piscine',
  'terrasse',
  'veranda',
  'autre',
] as const;
export type Nature = (typeof NATURES)[number];
export const COTES = ['nord', 'sud', 'est', 'ouest'] as const;
export type Cote = (typeof COTES)[number];
export const FORMALITES = [
  'aucune',
  'declaration_prealable',
  'permis_de_construire',
  'permis_d_amenager',
  'permis_de_demolir',
] as const;
export type Formalite = (typeof FORMALITES)[number];

// JSON bodies carry numbers as numbers: no text-to-number reading as for query strings.
const num = (schema: z.ZodNumber) => schema;
const texte = (max: number) => z.string().max(max);

export const OuvertureSchema = z.strictObject({
  type: z.enum(['porte', 'fenetre', 'baie', 'porte_garage']),
  facade: z.enum(COTES).describe('Façade qui porte l’ouverture, par son orientation.'),
  largeur_m: num(z.number().min(0).max(20)).optional().describe('Largeur (m) ; défaut selon le type.'),
  hauteur_m: num(z.number().min(0).max(10)).optional().describe('Hauteur (m) ; défaut selon le type.'),
  position_m: num(z.number().min(0).max(500))
    .optional()
    .describe(
      'Distance (m) du bord gauche de la façade vue de l’extérieur au bord gauche de l’ouverture ; défaut : centrée.',
    ),
  allege_m: num(z.number().min(0).max(10)).optional().describe('Hauteur d’allège (m) ; 0 pour une porte.'),
  libelle: texte(40).optional(),
  materiau: texte(60).optional(),
  couleur: texte(40).optional(),
});
export type Ouverture = z.infer<typeof OuvertureSchema>;

export const ProjetSchema = z
  .strictObject({
    nature: z.enum(NATURES),
    libelle: texte(60).optional(),
    largeur_m: num(z.number().min(0.5).max(200))
      .optional()
      .describe('Dimension le long du côté d’ancrage (m) ; obligatoire sans `contour_wgs84`.'),
    profondeur_m: num(z.number().min(0.5).max(200))
      .optional()
      .describe('Dimension perpendiculaire au côté d’ancrage (m) ; obligatoire sans `contour_wgs84`.'),
    hauteur_m: num(z.number().min(0).max(50))
      .optional()
      .describe(
        'Hauteur au-dessus du terrain naturel (m) ; défaut : `hauteur_faitage_m`, sinon `hauteur_murs_m`, sinon 2,5 m (0 pour une piscine ou une terrasse).',
      ),
    ancrage: z
      .enum(['accole_batiment', 'depuis_limite', 'auto', 'libre'])
      .optional()
      .describe(
        'accole_batiment : contre la façade `cote` du bâtiment principal ; depuis_limite : à `distance_limite_m` de la limite du côté `cote` ; libre : au centre de la parcelle ; auto (défaut) : accolé pour une extension ou une véranda quand un bâtiment existe, sinon depuis la limite si `distance_limite_m` est donnée, sinon libre.',
      ),
    cote: z.enum(COTES).optional().describe('Côté d’ancrage ; défaut sud.'),
    distance_limite_m: num(z.number().min(0).max(500)).optional(),
    decalage_m: num(z.number().min(-500).max(500))
      .optional()
      .describe('Glissement (m) le long du côté, vers l’est ou le nord quand positif.'),
    calage: z.enum(['centre', 'extremite_ouest_sud', 'extremite_est_nord']).optional(),
    hauteur_couverture_m: num(z.number().min(0).max(10))
      .optional()
      .describe('Piscine : hauteur de la couverture au-dessus du sol (m) ; absente : non couverte.'),
    demontable: z.boolean().optional(),
    contour_wgs84: z
      .array(z.tuple([num(z.number().min(-180).max(180)), num(z.number().min(-90).max(90))]))
      .min(4)
      .max(5)
      .optional()
      .describe('Contour [lon, lat] (4 sommets, ou 5 s’il est fermé) : remplace l’ancrage.'),
    sens_coupe: z.enum(['perpendiculaire_au_cote', 'parallele_au_cote', 'nord_sud', 'est_ouest']).optional(),
    facades: z.enum(['principale_et_laterale', 'toutes']).optional(),
    profondeur_bassin_m: num(z.number().min(0).max(10)).optional(),
    niveau_margelle_m: num(z.number().min(-10).max(10)).optional(),
    largeur_margelle_m: num(z.number().min(0).max(5)).optional(),
    largeur_plage_m: num(z.number().min(0).max(50)).optional(),
    niveau_terrasse_m: num(z.number().min(-10).max(10)).optional(),
    niveau_plancher_m: num(z.number().min(-10).max(10)).optional(),
    toiture: z.enum(['plate', 'un_pan', 'deux_pans']).optional(),
    hauteur_murs_m: num(z.number().min(0).max(50)).optional(),
    hauteur_faitage_m: num(z.number().min(0).max(50)).optional(),
    pente_toiture_deg: num(z.number().min(0).max(90)).optional(),
    sens_faitage: z.enum(['parallele_au_cote', 'perpendiculaire_au_cote']).optional(),
    pan_haut: z.enum(['cote_reference', 'cote_oppose']).optional(),
    materiaux: z
      .strictObject({ murs: texte(60).optional(), toiture: texte(60).optional(), menuiseries: texte(60).optional() })
      .optional(),
    ouvertures: z.array(OuvertureSchema).max(30).optional(),
  })
  .superRefine((p, ctx) => {
    if (!p.contour_wgs84 && (p.largeur_m === undefined || p.profondeur_m === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: [p.largeur_m === undefined ? 'largeur_m' : 'profondeur_m'],
        message: 'Donnez largeur_m et profondeur_m, ou contour_wgs84.',
      });
    }
  });
export type Projet = z.infer<typeof ProjetSchema>;

/** Where the project stands: a parcel, an address or a point (the first given, in this order). */
export const LieuSchema = {
  adresse: z.string().min(5).max(200).optional().describe('Adresse en texte (géocodée sur la BAN).'),
  code_postal: z
    .string()
    .regex(/^\d{5}$/)
    .optional(),
  idu: z
    .string()
    .min(14)
    .max(24)
    .optional()
    .describe('Identifiant de la parcelle (14 caractères : INSEE, préfixe, section, numéro).'),
  lat: num(z.number().min(-90).max(90)).optional(),
  lon: num(z.number().min(-180).max(180)).optional(),
  altitude_terrain_m: num(z.number().min(-500).max(5000))
    .optional()
    .describe(
      'Altitude NGF du terrain naturel (m) ; absente : terrain plat sans altitude, dit dans `faits_manquants`.',
    ),
};
export type Lieu = {
  adresse?: string;
  code_postal?: string;
  idu?: string;
  lat?: number;
  lon?: number;
  altitude_terrain_m?: number;
};
