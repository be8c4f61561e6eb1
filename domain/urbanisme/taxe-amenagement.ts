import { z } from 'zod';
import { QualiteSchema } from '../qualite.ts';
import { defineOperation } from '../catalogue.ts';
import { communeByCode, isCollectiviteOutreMer, isIleDeFrance, type Commune } from '../communes.ts';
import { ApiError, invalidField } from '../errors.ts';
import { constant, constantText } from '../../lib/json-bytes.ts';

// ---------------------------------------------------------------------------------------------------------------------
// Legal values. Every figure the estimate uses comes from this table or from the request: nothing else is a number.
// ---------------------------------------------------------------------------------------------------------------------

/** Text references, cited by every value and step that rests on them. */
const TEXTES = {
  institution:
    "CGI art. 1635 quater A (taxe instituée de plein droit dans les communes dotées d'un PLU ou d'un POS, sur délibération ailleurs)",
  operations: 'CGI art. 1635 quater B (opérations imposables, dont certains changements de destination)',
  exonerations: 'CGI art. 1635 quater D (exonérations de plein droit, dont les constructions de 5 m² ou moins)',
  faitGenerateur:
    "CGI art. 1635 quater F (fait générateur : date de l'autorisation ou de la non-opposition ; valeurs, taux et exonérations en vigueur à cette date)",
  exigibilite: "CGI art. 1635 quater G (taxe exigible à l'achèvement des opérations, au sens de l'article 1406 du CGI)",
  valeurForfaitaire:
    "CGI art. 1635 quater H, 1° (valeur forfaitaire par m² de surface de construction, actualisée au 1er janvier selon le dernier indice du coût de la construction de l'INSEE)",
  abattement:
    "CGI art. 1635 quater I, I-2° (abattement de 50 % sur les cent premiers m² des locaux d'habitation à usage d'habitation principale et de leurs annexes)",
  forfaits:
    'CGI art. 1635 quater J (valeurs forfaitaires des installations et aménagements : piscines au m², places de stationnement non comprises dans une surface close et couverte)',
  plafondStationnement:
    "CGI art. 1635 quater K (la commune ou l'EPCI peut porter par délibération la valeur d'une place de stationnement jusqu'à un plafond actualisé)",
  tauxVote:
    'CGI art. 1635 quater L (vote des taux, taux différents par secteur, taux de 1 % à défaut de délibération là où la taxe est instituée de plein droit)',
  tauxBornes:
    "CGI art. 1635 quater M (taux communal ou intercommunal de 1 % à 5 %, départemental de 2,5 % au plus, régional d'Île-de-France de 1 % au plus)",
  secteurs: "CGI art. 1635 quater N (taux communal porté jusqu'à 20 % dans certains secteurs par délibération motivée)",
  declaration: "CGI art. 1635 quater P (déclaration des éléments de la taxe dans les 90 jours de l'exigibilité)",
  recouvrement:
    "CGI art. 1679 octies (titre unique jusqu'à 1 500 €, sinon deux titres de moitié ; titre unique ou premier titre émis à compter de 90 jours après l'exigibilité, second titre six mois après le premier)",
  archeologie:
    "CGI art. 235 ter ZG (redevance d'archéologie préventive sur les opérations affectant le sous-sol soumises à autorisation ou déclaration : même assiette que la taxe d'aménagement, taux de 0,40 %)",
  actualisation2026:
    'Valeurs 2026 (actualisation au 1er janvier 2026, indice du coût de la construction en baisse de 4,06 %) publiées en janvier 2026 : 892 €/m² hors Île-de-France, 1 011 €/m² en Île-de-France, piscine 251 €/m², place de stationnement 2 928 € (plafond voté 5 857 €)',
  actualisation2025:
    'Valeurs 2025 (actualisation au 1er janvier 2025) : 930 €/m² hors Île-de-France, 1 054 €/m² en Île-de-France, piscine 262 €/m², place de stationnement 3 052 € (plafond voté 6 105 €)',
} as const;

type CleValeur =
  | 'valeur_forfaitaire_hors_idf'
  | 'valeur_forfaitaire_idf'
  | 'abattement_pct'
  | 'abattement_plafond_m2'
  | 'seuil_exoneration_m2'
  | 'piscine_m2'
  | 'stationnement_place'
  | 'stationnement_plafond_vote'
  | 'taux_communal_min_pct'
  | 'taux_communal_max_pct'
  | 'taux_communal_secteur_max_pct'
  | 'taux_departemental_max_pct'
  | 'taux_regional_idf_max_pct'
  | 'archeologie_pct'
  | 'seuil_titre_unique_eur'
  | 'delai_declaration_jours';

interface ValeurLegale {
  libelle: string;
  valeur: number;
  sources: string[];
  /** false: not re-read on a text dated for this year; the last confirmed figure is served and flagged. */
  confirmee: boolean;
}

interface Bareme {
  annee: number;
  /** Date from which the values apply. */
  enVigueurDu: string;
  /** Date on which the values were last checked against their sources. */
  verifieLe: string;
  valeurs: Record<CleValeur, ValeurLegale>;
}

/** Statutory values that do not move with the construction-cost index. */
const REGLES_STABLES: Omit<
  Record<CleValeur, ValeurLegale>,
  | 'valeur_forfaitaire_hors_idf'
  | 'valeur_forfaitaire_idf'
  | 'piscine_m2'
  | 'stationnement_place'
  | 'stationnement_plafond_vote'
> = {
  abattement_pct: {
    libelle: 'Abattement résidence principale (%)',
    valeur: 50,
    sources: [TEXTES.abattement],
    confirmee: true,
  },
  abattement_plafond_m2: {
    libelle: "Surface d'habitation principale bénéficiant de l'abattement (m², premiers m² du logement)",
    valeur: 100,
    sources: [TEXTES.abattement],
    confirmee: true,
  },
  seuil_exoneration_m2: {
    libelle: 'Surface de construction exonérée de plein droit (m², au plus)',
    valeur: 5,
    sources: [TEXTES.exonerations],
    confirmee: true,
  },
  taux_communal_min_pct: {
    libelle: 'Taux communal ou intercommunal minimal (%)',
    valeur: 1,
    sources: [TEXTES.tauxBornes, TEXTES.tauxVote],
    confirmee: true,
  },
  taux_communal_max_pct: {
    libelle: 'Taux communal ou intercommunal maximal hors secteur majoré (%)',
    valeur: 5,
    sources: [TEXTES.tauxBornes],
    confirmee: true,
  },
  taux_communal_secteur_max_pct: {
    libelle: 'Taux communal maximal dans un secteur à taux majoré (%)',
    valeur: 20,
    sources: [TEXTES.secteurs],
    confirmee: true,
  },
  taux_departemental_max_pct: {
    libelle: 'Taux départemental maximal (%)',
    valeur: 2.5,
    sources: [TEXTES.tauxBornes],
    confirmee: true,
  },
  taux_regional_idf_max_pct: {
    libelle: 'Taux régional maximal, Île-de-France seulement (%)',
    valeur: 1,
    sources: [TEXTES.tauxBornes],
    confirmee: true,
  },
  archeologie_pct: {
    libelle: "Taux de la redevance d'archéologie préventive (%)",
    valeur: 0.4,
    sources: [TEXTES.archeologie],
    // A statutory rate, stable for years, but not re-read on a text dated 2026.
    confirmee: false,
  },
  seuil_titre_unique_eur: {
    libelle: 'Montant payé en une fois, au plus (€)',
    valeur: 1500,
    sources: [TEXTES.recouvrement],
    confirmee: true,
  },
  delai_declaration_jours: {
    libelle: "Délai de déclaration après l'achèvement (jours)",
    valeur: 90,
    sources: [TEXTES.declaration, TEXTES.exigibilite],
    confirmee: true,
  },
};

/** The values of each year, newest first. Add a row each January when the new values are published. */
const BAREMES: readonly Bareme[] = [
  {
    annee: 2026,
    enVigueurDu: '2026-01-01',
    verifieLe: '2026-11-21',
    valeurs: {
      valeur_forfaitaire_hors_idf: {
        libelle: 'Valeur forfaitaire par m² de surface taxable, hors Île-de-France (€/m²)',
        valeur: 892,
        sources: [TEXTES.valeurForfaitaire, TEXTES.actualisation2026],
        confirmee: true,
      },
      valeur_forfaitaire_idf: {
        libelle: 'Valeur forfaitaire par m² de surface taxable, Île-de-France (€/m²)',
        valeur: 1011,
        sources: [TEXTES.valeurForfaitaire, TEXTES.actualisation2026],
        confirmee: true,
      },
      piscine_m2: {
        libelle: 'Valeur forfaitaire par m² de bassin de piscine (€/m²)',
        valeur: 251,
        sources: [TEXTES.forfaits, TEXTES.actualisation2026],
        confirmee: true,
      },
      stationnement_place: {
        libelle: 'Valeur forfaitaire par place de stationnement extérieure (€/place)',
        valeur: 2928,
        sources: [TEXTES.forfaits, TEXTES.actualisation2026],
        confirmee: true,
      },
      stationnement_plafond_vote: {
        libelle: 'Valeur par place de stationnement que la commune ou l’EPCI peut voter, au plus (€/place)',
        valeur: 5857,
        sources: [TEXTES.plafondStationnement, TEXTES.actualisation2026],
        confirmee: true,
      },
      ...REGLES_STABLES,
    },
  },
  {
    annee: 2025,
    enVigueurDu: '2025-01-01',
    verifieLe: '2026-11-21',
    valeurs: {
      valeur_forfaitaire_hors_idf: {
        libelle: 'Valeur forfaitaire par m² de surface taxable, hors Île-de-France (€/m²)',
        valeur: 930,
        sources: [TEXTES.valeurForfaitaire, TEXTES.actualisation2025],
        confirmee: true,
      },
      valeur_forfaitaire_idf: {
        libelle: 'Valeur forfaitaire par m² de surface taxable, Île-de-France (€/m²)',
        valeur: 1054,
        sources: [TEXTES.valeurForfaitaire, TEXTES.actualisation2025],
        confirmee: true,
      },
      piscine_m2: {
        libelle: 'Valeur forfaitaire par m² de bassin de piscine (€/m²)',
        valeur: 262,
        sources: [TEXTES.forfaits, TEXTES.actualisation2025],
        confirmee: true,
      },
      stationnement_place: {
        libelle: 'Valeur forfaitaire par place de stationnement extérieure (€/place)',
        valeur: 3052,
        sources: [TEXTES.forfaits, TEXTES.actualisation2025],
        confirmee: true,
      },
      stationnement_plafond_vote: {
        libelle: 'Valeur par place de stationnement que la commune ou l’EPCI peut voter, au plus (€/place)',
        valeur: 6105,
        sources: [TEXTES.plafondStationnement, TEXTES.actualisation2025],
        confirmee: true,
      },
      ...REGLES_STABLES,
    },
  },
];

/** The values in force in a year: that year's row, else the newest older row, else the oldest row we hold. */
export function baremeDe(annee: number): Bareme {
  return BAREMES.find((b) => b.annee <= annee) ?? BAREMES[BAREMES.length - 1];
}

// ---------------------------------------------------------------------------------------------------------------------
// Schemas
// ---------------------------------------------------------------------------------------------------------------------

const TYPES_TRAVAUX = [
  'construction_nouvelle',
  'travaux_existant',
  'transformation_garage',
  'piscine',
  'cloture',
  'mur',
  'aspect_exterieur',
  'pompe_a_chaleur',
  'ravalement',
  'changement_destination',
  'division',
  'demolition',
] as const;
type TypeTravaux = (typeof TYPES_TRAVAUX)[number];

const FORMALITES = [
  'aucune',
  'declaration_prealable',
  'permis_de_construire',
  'permis_d_amenager',
  'permis_de_demolir',
] as const;

/** Works that create no taxable surface nor taxable installation. */
const SANS_ASSIETTE: readonly TypeTravaux[] = ['cloture', 'mur', 'aspect_exterieur', 'pompe_a_chaleur', 'ravalement'];
/** Works whose tax depends on facts this estimate does not take, and why. */
const POURQUOI_HORS_CALCUL: Partial<Record<TypeTravaux, string>> = {
  changement_destination:
    "Un changement de destination n'est taxé que s'il fait passer un local exonéré (agricole par exemple) à une destination taxable, et sur la seule surface concernée : ce service ne connaît pas la destination d'origine ni son régime.",
  division:
    'Une division foncière ou un lotissement ne crée pas de surface taxable : la taxe est due par les constructions édifiées ensuite sur les lots, à estimer chacune comme construction nouvelle.',
  demolition:
    "La démolition elle-même n'est pas taxée ; la reconstruction qui la suit l'est, sauf exonération de la reconstruction à l'identique d'un bâtiment détruit ou démoli que ce service ne peut vérifier. Décrire la reconstruction comme construction nouvelle pour en estimer le montant.",
};
/** Works taxed on the surface they create: the surface is needed. */
const AVEC_SURFACE: readonly TypeTravaux[] = ['construction_nouvelle', 'travaux_existant', 'transformation_garage'];

const TaxeAmenagementInputSchema = z.object({
  insee: z
    .string()
    .regex(/^(?:\d{2}|2[AaBb])\d{3}$/, 'Code INSEE de la commune : 5 caractères, 2A ou 2B en Corse')
    .describe('Code INSEE de la commune (arrondissement municipal accepté : 75111, 69383, 13205)'),
  type_travaux: z
    .enum(TYPES_TRAVAUX)
    .nullish()
    .describe(
      'Nature des travaux ; par défaut construction_nouvelle si une surface est donnée, piscine pour un bassin seul',
    ),
  formalite: z.enum(FORMALITES).nullish().describe("Formalité d'urbanisme ; aucune : rien n'est dû"),
  surface_taxable_creee_m2: z.number().min(0).max(100_000).nullish().describe('Surface taxable créée (m²)'),
  surface_taxable_existante_m2: z
    .number()
    .min(0)
    .max(100_000)
    .nullish()
    .describe("Surface taxable existante (m²) : limite l'abattement d'une extension de résidence principale"),
  residence_principale: z
    .boolean()
    .nullish()
    .describe('Habitation principale : abattement de 50 % sur les 100 premiers m²'),
  piscine_m2: z.number().min(0).max(10_000).nullish().describe('Surface du bassin de piscine (m²)'),
  places_exterieures: z
    .number()
    .int()
    .min(0)
    .max(10_000)
    .nullish()
    .describe('Places de stationnement extérieures créées'),
  affecte_sous_sol: z
    .boolean()
    .nullish()
    .describe("Les travaux affectent le sous-sol (fondations, terrassement) : redevance d'archéologie préventive"),
  taux_communal_pct: z
    .number()
    .min(0)
    .max(20)
    .nullish()
    .describe('Taux communal ou intercommunal voté (%) ; 0 si la taxe n’est pas instituée'),
  taux_departemental_pct: z.number().min(0).max(2.5).nullish().describe('Taux départemental voté (%)'),
});

const SourcesSchema = z.array(z.string());

const TaxeAmenagementOutputSchema = z.object({
  insee: z.string(),
  statut: z.enum(['estimee', 'non_due', 'hors_calcul', 'faits_manquants']),
  regle: z.string(),
  annee_valeurs: z.number().int(),
  a_jour_le: z.string(),
  formule: z.string(),
  valeurs: z.array(z.object({ libelle: z.string(), valeur: z.number(), sources: SourcesSchema })),
  assiette: z.array(
    z.object({ libelle: z.string(), calcul: z.string(), min: z.number(), max: z.number(), sources: SourcesSchema }),
  ),
  assiette_min: z.number().nullable(),
  assiette_max: z.number().nullable(),
  parts: z.array(
    z.object({
      part: z.enum(['communale', 'departementale', 'regionale']),
      libelle: z.string(),
      taux: z.number().nullable(),
      taux_min: z.number(),
      taux_max: z.number(),
      montant_min: z.number(),
      montant_max: z.number(),
      source: z.string(),
      a_confirmer: z.boolean(),
    }),
  ),
  total_min: z.number().nullable(),
  total_max: z.number().nullable(),
  abattement_residence_principale: z.boolean(),
  archeologie: z
    .object({
      statut: z.enum(['due', 'si_sous_sol', 'non_due']),
      taux_pct: z.number(),
      montant_min: z.number(),
      montant_max: z.number(),
      regle: z.string(),
      sources: SourcesSchema,
    })
    .nullable(),
  faits_manquants: z.array(z.string()),
  notes: z.array(z.string()),
  a_confirmer: z.boolean(),
  declaration: z.array(z.object({ etape: z.string(), sources: SourcesSchema })),
  fiscalite_locale: z
    .object({
      departement: z.number().nullable(),
      ile_de_france: z.number().nullable(),
      secteurs: z.object({ min: z.number().nullable(), max: z.number().nullable() }).nullable(),
      code_hors_bareme: z.string().nullable(),
      taux_annee_suivante: z
        .object({
          annee: z.number().int(),
          min: z.number().nullable(),
          max: z.number().nullable(),
          provisoire: z.boolean(),
        })
        .nullable(),
      exoneration_abris_pct: z
        .object({ communale: z.number().nullable(), departementale: z.number().nullable() })
        .nullable(),
      stationnement_vote_eur: z.number().nullable(),
    })
    .nullable(),
  hypotheses: z.array(z.string()),
  sources: SourcesSchema,
  limites: z.array(z.string()),
  qualite: QualiteSchema,
});

type Entree = z.output<typeof TaxeAmenagementInputSchema>;
type Sortie = z.output<typeof TaxeAmenagementOutputSchema>;
type Ligne = Sortie['assiette'][number];
type Part = Sortie['parts'][number];

// ---------------------------------------------------------------------------------------------------------------------
// Estimate
// ---------------------------------------------------------------------------------------------------------------------

const REGLE = constantText(
  "Taxe d'aménagement (CGI art. 1635 quater A et suivants) : assiette forfaitaire (surface taxable × valeur forfaitaire de l'année, forfaits des piscines et des places de stationnement) multipliée par les taux votés par la commune ou l'EPCI, le département et, en Île-de-France, la région. Redevance d'archéologie préventive (CGI art. 235 ter ZG) sur la même assiette si les travaux affectent le sous-sol.",
);

const nombre = new Intl.NumberFormat('fr-FR', { maximumFractionDigits: 2 });
// Half the numbers an answer formats are the year's values, the same in every answer: each positive number is
// formatted once and remembered (a bounded memory: surfaces and amounts vary from one request to the next).
const formes = new Map<number, string>();
const fmt = (x: number): string => {
  if (!(x > 0)) return nombre.format(x);
  let forme = formes.get(x);
  if (forme === undefined) {
    if (formes.size >= 4096) formes.clear();
    formes.set(x, (forme = nombre.format(x)));
  }
  return forme;
};
const centimes = (x: number): number => Math.round(x * 100) / 100;
// toFixed first: a product such as 76 328 × 1,3 % must not fall on the wrong side of a half-euro by float noise.
const montant = (assiette: number, tauxPct: number): number =>
  Math.round(Number(((assiette * tauxPct) / 100).toFixed(6)));

// Made once: building a DateTimeFormat costs more than the whole estimate.
const anneeParis = new Intl.DateTimeFormat('fr-FR', { timeZone: 'Europe/Paris', year: 'numeric' });
// Formatting a date costs a tenth of the estimate: the year is read once per hour (Paris's offsets are whole hours).
let anneeLue = { heure: Number.NaN, annee: 0 };

function anneeAParis(date: Date): number {
  const heure = Math.floor(date.getTime() / 3_600_000);
  if (heure !== anneeLue.heure) anneeLue = { heure, annee: Number(anneeParis.format(date)) };
  return anneeLue.annee;
}

interface Contexte {
  insee: string;
  commune: Commune;
  idf: boolean;
  bareme: Bareme;
  annee: number;
}

function v(ctx: Contexte, cle: CleValeur): number {
  return ctx.bareme.valeurs[cle].valeur;
}

function valeurForfaitaire(ctx: Contexte): ValeurLegale {
  return ctx.bareme.valeurs[ctx.idf ? 'valeur_forfaitaire_idf' : 'valeur_forfaitaire_hors_idf'];
}

function listeValeurs(ctx: Contexte): Sortie['valeurs'] {
  const cles: CleValeur[] = [
    ctx.idf ? 'valeur_forfaitaire_idf' : 'valeur_forfaitaire_hors_idf',
    'abattement_pct',
    'abattement_plafond_m2',
    'seuil_exoneration_m2',
    'piscine_m2',
    'stationnement_place',
    'stationnement_plafond_vote',
    'taux_communal_min_pct',
    'taux_communal_max_pct',
    'taux_communal_secteur_max_pct',
    'taux_departemental_max_pct',
    ...(ctx.idf ? (['taux_regional_idf_max_pct'] as const) : []),
    'archeologie_pct',
    'seuil_titre_unique_eur',
    'delai_declaration_jours',
  ];
  return cles.map((cle) => {
    const { libelle, valeur, sources } = ctx.bareme.valeurs[cle];
    return { libelle: `${libelle}, ${ctx.bareme.annee}`, valeur, sources };
  });
}

function formule(ctx: Contexte): string {
  const taux = ctx.idf
    ? 'taux communal ou intercommunal + taux départemental + taux régional'
    : 'taux communal ou intercommunal + taux départemental';
  return (
    `Taxe = assiette × (${taux}) ; assiette = surface taxable × ${fmt(valeurForfaitaire(ctx).valeur)} €/m² ` +
    `(50 % sur les 100 premiers m² d'une résidence principale) + m² de bassin × ${fmt(v(ctx, 'piscine_m2'))} € ` +
    `+ places extérieures × ${fmt(v(ctx, 'stationnement_place'))} € ; archéologie préventive = assiette × ` +
    `${fmt(v(ctx, 'archeologie_pct'))} % si le sous-sol est affecté.`
  );
}

function limitesCommunes(ctx: Contexte): string[] {
  const limites = [
    "Estimation indicative : seul l'avis d'imposition émis par l'administration fiscale fixe le montant dû.",
    "Les taux et exonérations facultatives votés localement (commune ou EPCI, département, région) ne sont pas connus de ce service : un taux n'est appliqué que s'il est fourni, sinon la part est donnée en fourchette sur le barème légal ; aucune exonération facultative (abris de jardin, logements aidés, etc.) n'est déduite.",
    `Secteurs à taux majoré : la commune peut voter jusqu'à ${fmt(v(ctx, 'taux_communal_secteur_max_pct'))} % dans certains secteurs ; la fourchette s'arrête à ${fmt(v(ctx, 'taux_communal_max_pct'))} %, fournir le taux voté si le terrain est dans un tel secteur.`,
    "Là où la taxe n'est pas instituée (commune sans PLU ni POS n'ayant pas délibéré), la part communale est nulle : la fourchette suppose la taxe instituée.",
    `Places de stationnement : la commune ou l'EPCI peut avoir porté la valeur par place jusqu'à ${fmt(v(ctx, 'stationnement_plafond_vote'))} € ; l'estimation retient la valeur légale de ${fmt(v(ctx, 'stationnement_place'))} €.`,
    "Le régime d'acomptes des projets de grande surface et les régimes des certificats d'urbanisme (valeurs, taux et exonérations figés jusqu'à 18 mois s'ils sont plus favorables) ne sont pas modélisés.",
  ];
  for (const valeur of Object.values(ctx.bareme.valeurs)) {
    if (!valeur.confirmee) {
      limites.push(
        `${valeur.libelle} : ${fmt(valeur.valeur)}, dernière valeur confirmée, non revérifiée sur un texte daté de ${ctx.bareme.annee}.`,
      );
    }
  }
  if (ctx.bareme.annee < ctx.annee) {
    limites.push(
      `Les valeurs de ${ctx.annee} ne sont pas encore intégrées : celles de ${ctx.bareme.annee} sont appliquées, le montant réel suivra l'actualisation au 1er janvier ${ctx.annee}.`,
    );
  }
  return limites;
}

function sourcesCommunes(): string[] {
  return [
    TEXTES.institution,
    TEXTES.operations,
    TEXTES.exonerations,
    TEXTES.faitGenerateur,
    TEXTES.exigibilite,
    TEXTES.valeurForfaitaire,
    TEXTES.abattement,
    TEXTES.forfaits,
    TEXTES.plafondStationnement,
    TEXTES.tauxVote,
    TEXTES.tauxBornes,
    TEXTES.secteurs,
    TEXTES.declaration,
    TEXTES.recouvrement,
    TEXTES.archeologie,
  ];
}

const PAIEMENT_ATTENDU = {
  inconnu: '',
  une_fois: ' Au vu de l’estimation, un paiement en une fois est attendu.',
  deux_fois: ' Au vu de l’estimation, un paiement en deux fois est attendu.',
  selon_taux: ' Selon les taux réellement votés, le paiement se fera en une ou en deux fois.',
} as const;

function etapesDeclaration(ctx: Contexte, totalMin: number | null, totalMax: number | null): Sortie['declaration'] {
  const seuil = v(ctx, 'seuil_titre_unique_eur');
  const attendu: keyof typeof PAIEMENT_ATTENDU =
    totalMin === null || totalMax === null
      ? 'inconnu'
      : totalMax <= seuil
        ? 'une_fois'
        : totalMin > seuil
          ? 'deux_fois'
          : 'selon_taux';
  return partieFixe(`declaration|${ctx.bareme.annee}|${attendu}`, () => etapes(ctx, attendu));
}

function etapes(ctx: Contexte, attendu: keyof typeof PAIEMENT_ATTENDU): Sortie['declaration'] {
  const paiement =
    `Paiement sur titre de perception : un titre unique si le montant n'excède pas ${fmt(v(ctx, 'seuil_titre_unique_eur'))} €, sinon deux titres ` +
    "de moitié chacun ; le titre unique ou le premier est émis à compter de 90 jours après l'achèvement, le second six mois après le premier." +
    PAIEMENT_ATTENDU[attendu];
  return [
    {
      etape:
        "Rien n'est payé au dépôt de la demande : la taxe est calculée avec les valeurs, taux et exonérations en vigueur à la date de l'autorisation (ou de la non-opposition à la déclaration préalable).",
      sources: [TEXTES.faitGenerateur],
    },
    {
      etape: `Dans les ${fmt(v(ctx, 'delai_declaration_jours'))} jours suivant l'achèvement des travaux, déclarer les éléments de la taxe depuis l'espace sécurisé du site impots.gouv.fr (service « Gérer mes biens immobiliers »).`,
      sources: [TEXTES.exigibilite, TEXTES.declaration],
    },
    { etape: paiement, sources: [TEXTES.recouvrement] },
    {
      etape:
        "La redevance d'archéologie préventive, si les travaux affectent le sous-sol, est établie sur la même assiette et à la même date que la taxe d'aménagement.",
      sources: [TEXTES.archeologie],
    },
  ];
}

function qualite(ctx: Contexte, totalMin: number | null, totalMax: number | null): Sortie['qualite'] {
  let incertitude: Sortie['qualite']['incertitude'] = null;
  if (totalMin !== null && totalMax !== null) {
    const milieu = (totalMin + totalMax) / 2;
    incertitude = {
      demi_largeur_pct: milieu > 0 ? Math.round(((totalMax - totalMin) / 2 / milieu) * 1000) / 10 : 0,
      bas: totalMin,
      haut: totalMax,
    };
  }
  return {
    n: null,
    provenance: 'estime',
    incertitude,
    drapeaux: ctx.bareme.annee < ctx.annee ? ['donnee_ancienne'] : [],
    methode:
      "Barème légal de l'année appliqué aux surfaces et équipements déclarés ; taux fournis, sinon bornes légales en fourchette.",
    donnees_du: ctx.bareme.enVigueurDu,
    source: `CGI art. 1635 quater A à 1635 quater P, 1679 octies et 235 ter ZG ; valeurs forfaitaires ${ctx.bareme.annee}`,
  };
}

// The parts of an answer that follow from the year's scale alone (values, formula, sources, limits, the declaration's
// steps: 10 of the 14 KB of an answer): made, serialised and encoded once each, not for every new request.
const partiesFixes = new Map<string, unknown>();
function partieFixe<T extends object | string>(cle: string, faire: () => T): T {
  if (!partiesFixes.has(cle)) {
    const partie = faire();
    partiesFixes.set(cle, typeof partie === 'string' ? constantText(partie) : constant(partie));
  }
  return partiesFixes.get(cle) as T;
}

// Lists of texts (sources, hypotheses, notes) are the same from one answer to the next but for a few: each distinct
// list is a constant part, found by its content. A note may quote the request's figures, so the memory is bounded.
const listes = new Map<string, string[]>();
function textes(liste: readonly string[]): string[] {
  const cle = liste.join('\n');
  let fixe = listes.get(cle);
  if (fixe === undefined) {
    if (listes.size >= 1024) listes.clear();
    listes.set(cle, (fixe = constant([...liste])));
  }
  return fixe;
}

/** The fields every answer carries, whatever its status. */
function reponse(ctx: Contexte, partiel: Partial<Sortie> & Pick<Sortie, 'statut'>): Sortie {
  const { notes = [], hypotheses = [], ...reste } = partiel;
  const totalMin = partiel.total_min ?? null;
  const totalMax = partiel.total_max ?? null;
  return {
    insee: ctx.insee,
    regle: REGLE,
    annee_valeurs: ctx.bareme.annee,
    a_jour_le: ctx.bareme.verifieLe,
    formule: partieFixe(`formule|${ctx.bareme.annee}|${ctx.idf}`, () => formule(ctx)),
    valeurs: partieFixe(`valeurs|${ctx.bareme.annee}|${ctx.idf}`, () => listeValeurs(ctx)),
    assiette: [],
    assiette_min: null,
    assiette_max: null,
    parts: [],
    total_min: null,
    total_max: null,
    abattement_residence_principale: false,
    archeologie: null,
    faits_manquants: [],
    notes: textes(notes),
    a_confirmer: false,
    declaration: [],
    fiscalite_locale: null,
    hypotheses: textes(hypotheses),
    sources: partieFixe('sources', sourcesCommunes),
    limites: partieFixe(`limites|${ctx.bareme.annee}|${ctx.annee}`, () => limitesCommunes(ctx)),
    qualite: qualite(ctx, totalMin, totalMax),
    ...reste,
  };
}

function nonDue(ctx: Contexte, notes: string[]): Sortie {
  return reponse(ctx, {
    statut: 'non_due',
    assiette_min: 0,
    assiette_max: 0,
    total_min: 0,
    total_max: 0,
    archeologie: {
      statut: 'non_due',
      taux_pct: v(ctx, 'archeologie_pct'),
      montant_min: 0,
      montant_max: 0,
      regle: "Sans opération taxable, la redevance d'archéologie préventive n'est pas due non plus.",
      sources: textes([TEXTES.archeologie]),
    },
    notes,
  });
}

/** Type of works when the caller gave none: a surface means a construction, a basin alone means a pool. */
function typeDeduit(entree: Entree): TypeTravaux {
  if (entree.type_travaux) return entree.type_travaux;
  if (entree.formalite === 'permis_de_demolir') return 'demolition';
  if (entree.surface_taxable_creee_m2 == null && entree.piscine_m2 != null) return 'piscine';
  return 'construction_nouvelle';
}

/**
 * Surface of the creation that receives the main-residence allowance, at best (lowest tax) and at worst. An
 * extension only gets what the existing dwelling leaves of the first 100 m².
 */
function surfaceAbattue(
  ctx: Contexte,
  type: TypeTravaux,
  surface: number,
  entree: Entree,
): { auMieux: number; auPire: number } {
  if (entree.residence_principale === false) return { auMieux: 0, auPire: 0 };
  const plafond = v(ctx, 'abattement_plafond_m2');
  const extension = type === 'travaux_existant' || type === 'transformation_garage';
  const existante = entree.surface_taxable_existante_m2;
  const disponibleAuMieux = extension && existante != null ? Math.max(0, plafond - existante) : plafond;
  const auMieux = Math.min(surface, disponibleAuMieux);
  if (entree.residence_principale == null) return { auMieux, auPire: 0 };
  if (extension && existante == null) return { auMieux, auPire: 0 };
  return { auMieux, auPire: auMieux };
}

function estimer(entree: Entree, ctx: Contexte): Sortie {
  const type = typeDeduit(entree);
  const hypotheses: string[] = [];
  const notes: string[] = [];

  if (!entree.type_travaux) {
    hypotheses.push(
      type === 'piscine'
        ? 'Type de travaux non précisé : un bassin seul est traité comme une piscine.'
        : 'Type de travaux non précisé : le projet est traité comme une construction nouvelle.',
    );
  }

  if (isCollectiviteOutreMer(ctx.commune.departement)) {
    return reponse(ctx, {
      statut: 'hors_calcul',
      notes: [
        `${ctx.commune.nom} relève d'une collectivité d'outre-mer dotée de sa propre fiscalité : la taxe d'aménagement du code général des impôts ne s'y applique pas, la taxe locale éventuelle n'est pas calculée ici.`,
      ],
      hypotheses,
    });
  }

  if (entree.formalite === 'aucune') {
    return nonDue(ctx, [
      "Travaux dispensés de toute formalité d'urbanisme : la taxe d'aménagement n'est pas due.",
      "Si les travaux exigent en réalité une déclaration préalable ou un permis, la taxe est due, y compris lorsqu'ils sont réalisés sans autorisation (taxation d'office à l'achèvement).",
    ]);
  }

  if (SANS_ASSIETTE.includes(type)) {
    return nonDue(ctx, [
      `Les travaux de type ${type} ne créent ni surface taxable ni installation taxable : la taxe d'aménagement n'est pas due.`,
      'Si le projet crée aussi une surface close et couverte, une piscine ou des places de stationnement, le décrire avec le type correspondant.',
    ]);
  }

  const horsCalcul = POURQUOI_HORS_CALCUL[type];
  if (horsCalcul) {
    return reponse(ctx, {
      statut: 'hors_calcul',
      notes: [horsCalcul],
      hypotheses,
      declaration: etapesDeclaration(ctx, null, null),
      a_confirmer: true,
    });
  }

  const manquants: string[] = [];
  if (AVEC_SURFACE.includes(type) && entree.surface_taxable_creee_m2 == null)
    manquants.push('surface_taxable_creee_m2');
  if (type === 'piscine' && entree.piscine_m2 == null) manquants.push('piscine_m2');
  if (manquants.length > 0) {
    return reponse(ctx, {
      statut: 'faits_manquants',
      faits_manquants: manquants,
      notes: [
        type === 'piscine'
          ? 'La surface du bassin est nécessaire pour estimer la taxe d’une piscine.'
          : 'La surface taxable créée (surface close et couverte de plus de 1,80 m de hauteur sous plafond) est nécessaire pour estimer la taxe.',
      ],
      hypotheses,
      declaration: etapesDeclaration(ctx, null, null),
      a_confirmer: true,
    });
  }

  if (entree.formalite === 'permis_de_demolir') {
    notes.push(
      "Le permis de démolir ne rend pas la taxe exigible ; elle l'est pour la construction décrite, qui relève de sa propre autorisation.",
    );
  }
  if (entree.formalite == null) {
    hypotheses.push(
      'Formalité non précisée : le projet est supposé soumis à déclaration préalable ou à permis, ce qui rend la taxe due.',
    );
  }
  hypotheses.push(
    `Autorisation délivrée en ${ctx.annee} : les valeurs et taux sont ceux de la date de l'autorisation (fait générateur).`,
    'La surface taxable fournie est la somme des surfaces de plancher closes et couvertes de plus de 1,80 m de hauteur sous plafond, mesurées au nu intérieur des façades, vides et trémies déduits.',
  );

  // --- Assiette
  const assiette: Ligne[] = [];
  const vf = valeurForfaitaire(ctx);
  const vfM2 = vf.valeur;
  const abattementPct = v(ctx, 'abattement_pct');
  const surface = entree.surface_taxable_creee_m2 ?? 0;
  let abattementApplique = false;

  if (surface > 0 && surface <= v(ctx, 'seuil_exoneration_m2')) {
    notes.push(
      `Construction de ${fmt(surface)} m² : ${fmt(v(ctx, 'seuil_exoneration_m2'))} m² ou moins, exonérée de plein droit.`,
    );
  } else if (surface > 0) {
    const { auMieux, auPire } = surfaceAbattue(ctx, type, surface, entree);
    const sourcesSurface = textes([...vf.sources, ...(auMieux > 0 ? [TEXTES.abattement] : [])]);
    if (auMieux === auPire) {
      if (auMieux > 0) {
        const montantAbattu = centimes(auMieux * vfM2 * (abattementPct / 100));
        assiette.push({
          libelle: 'Surface taxable avec abattement résidence principale',
          calcul: `${fmt(auMieux)} m² × ${fmt(vfM2)} € × ${fmt(abattementPct)} % = ${fmt(montantAbattu)} €`,
          min: montantAbattu,
          max: montantAbattu,
          sources: textes([...vf.sources, TEXTES.abattement]),
        });
        abattementApplique = true;
      }
      const plein = surface - auMieux;
      if (plein > 0) {
        const montantPlein = centimes(plein * vfM2);
        assiette.push({
          libelle: auMieux > 0 ? 'Surface taxable au-delà des 100 premiers m²' : 'Surface taxable',
          calcul: `${fmt(plein)} m² × ${fmt(vfM2)} € = ${fmt(montantPlein)} €`,
          min: montantPlein,
          max: montantPlein,
          sources: textes(vf.sources),
        });
      }
    } else {
      const min = centimes(auMieux * vfM2 * (abattementPct / 100) + (surface - auMieux) * vfM2);
      const max = centimes(surface * vfM2);
      assiette.push({
        libelle: 'Surface taxable (abattement résidence principale incertain)',
        calcul:
          `min : ${fmt(auMieux)} m² × ${fmt(vfM2)} € × ${fmt(abattementPct)} %` +
          (surface > auMieux ? ` + ${fmt(surface - auMieux)} m² × ${fmt(vfM2)} €` : '') +
          ` = ${fmt(min)} € ; max : ${fmt(surface)} m² × ${fmt(vfM2)} € = ${fmt(max)} €`,
        min,
        max,
        sources: sourcesSurface,
      });
      if (entree.residence_principale == null) {
        hypotheses.push(
          "Usage non précisé : le minimum retient l'abattement de la résidence principale, le maximum ne le retient pas.",
        );
      } else {
        hypotheses.push(
          "Surface existante non précisée : le minimum suppose que l'abattement n'a pas été consommé par le logement existant, le maximum qu'il l'a été (logement existant de 100 m² ou plus).",
        );
      }
    }
  }

  const piscine = entree.piscine_m2 ?? 0;
  if (piscine > 0) {
    const valeur = v(ctx, 'piscine_m2');
    const total = centimes(piscine * valeur);
    assiette.push({
      libelle: 'Piscine (bassin)',
      calcul: `${fmt(piscine)} m² × ${fmt(valeur)} € = ${fmt(total)} €`,
      min: total,
      max: total,
      sources: textes(ctx.bareme.valeurs.piscine_m2.sources),
    });
  }

  const places = entree.places_exterieures ?? 0;
  if (places > 0) {
    const valeur = v(ctx, 'stationnement_place');
    const total = centimes(places * valeur);
    assiette.push({
      libelle: 'Places de stationnement extérieures',
      calcul: `${fmt(places)} place${places > 1 ? 's' : ''} × ${fmt(valeur)} € = ${fmt(total)} €`,
      min: total,
      max: total,
      sources: textes(ctx.bareme.valeurs.stationnement_place.sources),
    });
  }

  const assietteMin = centimes(assiette.reduce((s, l) => s + l.min, 0));
  const assietteMax = centimes(assiette.reduce((s, l) => s + l.max, 0));
  if (assietteMax === 0) {
    return nonDue(ctx, [
      ...notes,
      "Le projet ne crée ni surface taxable au-delà du seuil d'exonération, ni piscine, ni place de stationnement extérieure : rien n'est dû.",
    ]);
  }

  // --- Shares
  const parts: Part[] = [];
  const part = (
    nom: Part['part'],
    libelle: string,
    taux: number | null | undefined,
    bornes: [number, number],
    source: string,
  ): void => {
    const connu = taux != null;
    const [tMin, tMax] = connu ? [taux, taux] : bornes;
    parts.push({
      part: nom,
      libelle,
      taux: connu ? taux : null,
      taux_min: tMin,
      taux_max: tMax,
      montant_min: montant(assietteMin, tMin),
      montant_max: montant(assietteMax, tMax),
      source,
      a_confirmer: !connu,
    });
  };
  part(
    'communale',
    "Part communale ou intercommunale (financement des équipements publics de la commune ou de l'EPCI)",
    entree.taux_communal_pct,
    [v(ctx, 'taux_communal_min_pct'), v(ctx, 'taux_communal_max_pct')],
    entree.taux_communal_pct != null ? 'Taux fourni par le demandeur' : TEXTES.tauxBornes,
  );
  part(
    'departementale',
    'Part départementale (espaces naturels sensibles, CAUE)',
    entree.taux_departemental_pct,
    [0, v(ctx, 'taux_departemental_max_pct')],
    entree.taux_departemental_pct != null ? 'Taux fourni par le demandeur' : TEXTES.tauxBornes,
  );
  if (ctx.idf) {
    part(
      'regionale',
      "Part régionale (région d'Île-de-France)",
      null,
      [0, v(ctx, 'taux_regional_idf_max_pct')],
      TEXTES.tauxBornes,
    );
    notes.push(
      "Commune d'Île-de-France : valeur forfaitaire francilienne et part régionale, donnée en fourchette sur le barème légal car ce service ne détient pas le taux voté par la région.",
    );
  }
  if (entree.taux_communal_pct === 0) {
    notes.push('Taux communal de 0 % : taxe non instituée ou exonération totale votée, la part communale est nulle.');
  }

  const totalMin = parts.reduce((s, p) => s + p.montant_min, 0);
  const totalMax = parts.reduce((s, p) => s + p.montant_max, 0);

  // --- Preventive archaeology
  const tauxArcheo = v(ctx, 'archeologie_pct');
  const archeoStatut =
    entree.affecte_sous_sol === true ? 'due' : entree.affecte_sous_sol === false ? 'non_due' : 'si_sous_sol';
  const archeologie: NonNullable<Sortie['archeologie']> = {
    statut: archeoStatut,
    taux_pct: tauxArcheo,
    montant_min: archeoStatut === 'non_due' ? 0 : montant(assietteMin, tauxArcheo),
    montant_max: archeoStatut === 'non_due' ? 0 : montant(assietteMax, tauxArcheo),
    regle:
      archeoStatut === 'due'
        ? `Due : travaux affectant le sous-sol, assiette de la taxe d'aménagement × ${fmt(tauxArcheo)} %.`
        : archeoStatut === 'non_due'
          ? "Non due : les travaux n'affectent pas le sous-sol."
          : `Due seulement si les travaux affectent le sous-sol (fondations, terrassement) ; montant indiqué pour ce cas : assiette × ${fmt(tauxArcheo)} %.`,
    sources: textes([TEXTES.archeologie]),
  };
  notes.push(
    "Les totaux portent sur la taxe d'aménagement seule ; la redevance d'archéologie préventive est chiffrée à part.",
  );

  const aConfirmer =
    parts.some((p) => p.a_confirmer) ||
    archeoStatut === 'si_sous_sol' ||
    assietteMin !== assietteMax ||
    ctx.bareme.annee < ctx.annee;

  return reponse(ctx, {
    statut: 'estimee',
    assiette,
    assiette_min: assietteMin,
    assiette_max: assietteMax,
    parts,
    total_min: totalMin,
    total_max: totalMax,
    abattement_residence_principale:
      abattementApplique || (entree.residence_principale === true && assietteMin < assietteMax),
    archeologie,
    notes,
    a_confirmer: aConfirmer,
    declaration: etapesDeclaration(ctx, totalMin, totalMax),
    hypotheses,
  });
}

// ---------------------------------------------------------------------------------------------------------------------
// Operation
// ---------------------------------------------------------------------------------------------------------------------

const DESCRIPTION = `Estimation indicative de la taxe d'aménagement d'un projet (seul l'avis d'imposition fixe le montant) : parts communale, départementale et, en Île-de-France, régionale ; abattement de la résidence principale ; forfaits des piscines et des places de stationnement ; redevance d'archéologie préventive ; déclaration et paiement. Chaque valeur cite son texte.

**Valeurs légales.** Table datée par année (valeur forfaitaire par m² hors Île-de-France et en Île-de-France, piscine, place de stationnement et son plafond voté, bornes des taux, taux de l'archéologie préventive, seuils). L'année est celle de la date du jour à Paris ; si ses valeurs ne sont pas encore intégrées, celles de la dernière année connue sont servies, \`annee_valeurs\` le dit et \`qualite.drapeaux\` contient \`donnee_ancienne\`. Une valeur non revérifiée sur un texte daté de l'année est signalée dans \`limites\`.

**Décisions là où la spécification se tait.**
- Taux : un taux fourni est appliqué tel quel (la part a \`taux\` = \`taux_min\` = \`taux_max\`). Sinon la part est une fourchette sur le barème légal, \`a_confirmer\` vrai : communal 1 % à 5 % (les secteurs majorés jusqu'à 20 % ne sont pas dans la fourchette : fournir le taux), départemental 0 % à 2,5 %, régional d'Île-de-France 0 % à 1 % (aucun champ d'entrée pour ce taux). Un taux communal strictement entre 0 et 1 % est refusé (400) : un taux voté vaut au moins 1 %, 0 signifie taxe non instituée.
- \`total_min\` / \`total_max\` : taxe d'aménagement seule (somme des parts). La redevance d'archéologie préventive est chiffrée à part dans \`archeologie\` : \`due\` si \`affecte_sous_sol\` est vrai, \`non_due\` s'il est faux, \`si_sous_sol\` s'il est absent (les montants sont alors ceux du cas où elle est due).
- Montants arrondis à l'euro par part ; lignes d'assiette au centime.
- Abattement de 50 % sur les 100 premiers m² d'une résidence principale. Pour une extension (\`travaux_existant\`, \`transformation_garage\`), seule la part des 100 m² que le logement existant n'occupe pas est abattue (\`surface_taxable_existante_m2\`). Usage ou surface existante inconnus : l'assiette devient une fourchette (minimum avec abattement, maximum sans).
- Places de stationnement : valeur légale par place ; le plafond que la commune peut voter est cité dans \`valeurs\` et \`limites\`, pas appliqué.
- Construction de 5 m² ou moins : exonérée de plein droit, non comptée.
- Type de travaux absent : \`construction_nouvelle\` si une surface est donnée, \`piscine\` pour un bassin seul. Formalité absente : une autorisation est supposée requise (hypothèse).
- Statuts : \`non_due\` pour \`formalite\` = \`aucune\`, pour les travaux sans assiette (clôture, mur, aspect extérieur, pompe à chaleur, ravalement) et quand rien de taxable n'est créé ; \`hors_calcul\` pour changement de destination (taxé seulement depuis une destination exonérée), division (la taxe vient des constructions futures), démolition ou permis de démolir (la reconstruction peut être exonérée), et pour les collectivités d'outre-mer à fiscalité propre (975, 977, 978, 984-989) ; \`faits_manquants\` quand la surface d'une construction ou le bassin d'une piscine manque (liste dans \`faits_manquants\`) ; \`estimee\` sinon.
- \`fiscalite_locale\` (taux départemental et régional votés, fourchette des secteurs, code hors barème, taux de l'année suivante, exonérations des abris, valeur de place votée) est \`null\` : ce service ne détient pas les délibérations locales et n'en invente pas.
- Bac à sable : même calcul, limité aux communes du jeu figé.
`;

export const taxeAmenagement = defineOperation({
  tool: 'taxe_amenagement',
  method: 'POST',
  effect: 'lecture',
  path: '/fiscal/taxe-amenagement',
  summary: "Estimer la taxe d'aménagement d'un projet",
  description: DESCRIPTION,
  credits: 1,
  unit: 'appel',
  scope: 'urbanisme',
  tier: 'usage',
  sandbox: true,
  territoires: (e: { insee: string }) => [{ commune: e.insee }],
  cacheS: 86_400,
  timeoutS: 2,
  input: TaxeAmenagementInputSchema,
  output: TaxeAmenagementOutputSchema,
  errors: ['commune_introuvable'],
  dataDate: (sortie) => sortie.qualite.donnees_du,
  async handler(entree, ctx) {
    const insee = entree.insee.toUpperCase();
    const commune = communeByCode(insee);
    if (!commune) {
      throw new ApiError(
        'commune_introuvable',
        `Aucune commune ni arrondissement municipal actuel n'a le code ${insee}.`,
      );
    }
    const tauxCommunal = entree.taux_communal_pct;
    if (tauxCommunal != null && tauxCommunal > 0 && tauxCommunal < 1) {
      throw invalidField(
        'taux_communal_pct',
        "Un taux communal voté vaut au moins 1 % (jusqu'à 5 %, 20 % dans un secteur majoré) ; 0 si la taxe n'est pas instituée.",
      );
    }
    const annee = anneeAParis(ctx.services.now());
    return estimer(entree, {
      insee,
      commune,
      idf: isIleDeFrance(commune.departement),
      bareme: baremeDe(annee),
      annee,
    });
  },
});
