import { z } from 'zod';
import { invalidField } from '../errors.ts';
import { APPORT_MAX_EUR, TMI_TRANCHES } from './memoire-regles.ts';

/**
 * The investor profile: its shape as served (GET /compte/profil), the body that modifies it field by field
 * (PATCH /compte/profil) and the pure merge of one into the other. Stored as one jsonb document per account.
 */

export const STRATEGIES = ['cashflow', 'patrimoine', 'mixte', 'lcd'] as const;
export const TYPES_BIEN = ['appartement', 'maison'] as const;
export const TOLERANCES_TRAVAUX = ['aucun', 'legers', 'moderes', 'lourds'] as const;
export const CLASSES_DPE = ['A', 'B', 'C', 'D', 'E', 'F', 'G'] as const;
export const NOTIFICATIONS = [
  'par_courrier_electronique',
  'tableau_de_bord',
  'baisses',
  'negociation',
  'comparables',
  'apres_travaux',
  'tendances_zone',
] as const;
type Notification = (typeof NOTIFICATIONS)[number];

const nombre = z.number().nullable();
const NotificationsSchema = z.object({
  par_courrier_electronique: z.boolean().nullable(),
  tableau_de_bord: z.boolean().nullable(),
  baisses: z.boolean().nullable(),
  negociation: z.boolean().nullable(),
  comparables: z.boolean().nullable(),
  apres_travaux: z.boolean().nullable(),
  tendances_zone: z.boolean().nullable(),
});

/** The profile's fields as stored and served, without `existe` and the dates. */
export const ProfilDonneesSchema = z.object({
  strategie: z.enum(STRATEGIES).nullable(),
  budget_total: nombre,
  budget_par_bien: nombre,
  apport_pct: nombre,
  apport_eur: nombre,
  regions: z.array(z.string()),
  villes: z.array(z.string()),
  departements: z.array(z.string()),
  partout: z.boolean().nullable().describe('true : toute la France.'),
  types: z.array(z.enum(TYPES_BIEN)),
  surface_min: nombre,
  surface_max: nombre,
  pieces_min: nombre,
  dpe_max: z.enum(CLASSES_DPE).nullable(),
  tolerance_travaux: z.enum(TOLERANCES_TRAVAUX).nullable(),
  rendement_min: nombre,
  score_min: nombre,
  objectifs: z.object({ nb_biens: nombre, horizon_ans: nombre, revenu_mensuel: nombre }),
  tmi_pct: nombre,
  profil_pro: z
    .object({ metier: z.string().nullable(), reseau: z.string().nullable(), secteurs: z.array(z.string()) })
    .nullable(),
  notifications: NotificationsSchema,
});
export type ProfilDonnees = z.infer<typeof ProfilDonneesSchema>;

export const ProfilInvestisseurSchema = z.object({
  existe: z.boolean().describe('false tant que le compte n’a pas de profil : les autres champs sont alors vides.'),
  ...ProfilDonneesSchema.shape,
  cree_le: z.string().nullable(),
  maj_le: z.string().nullable(),
});
export type ProfilInvestisseur = z.infer<typeof ProfilInvestisseurSchema>;

/** What an unset field reads as: null, an empty list, or an object whose members are null. */
export const PROFIL_VIDE: ProfilDonnees = {
  strategie: null,
  budget_total: null,
  budget_par_bien: null,
  apport_pct: null,
  apport_eur: null,
  regions: [],
  villes: [],
  departements: [],
  partout: null,
  types: [],
  surface_min: null,
  surface_max: null,
  pieces_min: null,
  dpe_max: null,
  tolerance_travaux: null,
  rendement_min: null,
  score_min: null,
  objectifs: { nb_biens: null, horizon_ans: null, revenu_mensuel: null },
  tmi_pct: null,
  profil_pro: null,
  notifications: Object.fromEntries(NOTIFICATIONS.map((n) => [n, null])) as Record<Notification, null>,
};

const PROFIL_PRO_VIDE = { metier: null, reseau: null, secteurs: [] };

/** A stored document read back: fields added to the shape after it was written read as unset. */
export function lireDonnees(stocke: unknown): ProfilDonnees {
  const d = (stocke ?? {}) as Partial<ProfilDonnees>;
  return ProfilDonneesSchema.parse({
    ...PROFIL_VIDE,
    ...d,
    objectifs: { ...PROFIL_VIDE.objectifs, ...d.objectifs },
    notifications: { ...PROFIL_VIDE.notifications, ...d.notifications },
    profil_pro: d.profil_pro ? { ...PROFIL_PRO_VIDE, ...(d.profil_pro as object) } : null,
  });
}

// ---------------------------------------------------------------------------------------------------------------
// The modification body.

const montant = z.int('Nombre entier d’euros attendu.').min(0).max(APPORT_MAX_EUR);
const libelles = (max: number, longueur: number) =>
  z
    .array(z.string().trim().min(1, 'Texte vide.').max(longueur, `${longueur} caractères au plus.`))
    .max(max, `${max} éléments au plus.`);
const DEPARTEMENT = /^(0[1-9]|1\d|2[1-9AB]|[3-8]\d|9[0-5]|97[1-6])$/;
const notification = z.boolean().nullable().optional();

export const ProfilModificationSchema = z
  .object({
    strategie: z.enum(STRATEGIES).optional(),
    budget_total: montant.nullable().optional(),
    budget_par_bien: montant.nullable().optional(),
    apport_eur: montant.nullable().optional(),
    apport_pct: z.int().min(0).max(100).optional(),
    regions: libelles(50, 100).optional(),
    villes: libelles(50, 100).optional(),
    departements: z
      .array(
        z.string().trim().toUpperCase().regex(DEPARTEMENT, 'Code de département attendu (01 à 95, 2A, 2B, 971 à 976).'),
      )
      .max(50, '50 départements au plus.')
      .optional(),
    partout: z.boolean().optional(),
    types: z.array(z.enum(TYPES_BIEN)).max(2, '2 types au plus.').optional(),
    surface_min: z.int().min(0).max(10_000).nullable().optional(),
    surface_max: z.int().min(0).max(10_000).nullable().optional(),
    pieces_min: z.int().min(0).max(50).nullable().optional(),
    dpe_max: z.enum(CLASSES_DPE).nullable().optional(),
    tolerance_travaux: z.enum(TOLERANCES_TRAVAUX).optional(),
    rendement_min: z.number().min(0).max(99).nullable().optional(),
    score_min: z.int().min(0).max(100).nullable().optional(),
    objectifs: z
      .object({
        nb_biens: z.int().min(0).max(1000).nullable().optional(),
        horizon_ans: z.int().min(0).max(100).nullable().optional(),
        revenu_mensuel: z.int().min(0).max(1_000_000).nullable().optional(),
      })
      .strict()
      .optional(),
    tmi_pct: z
      .literal(TMI_TRANCHES, { error: 'Tranche marginale attendue : 0, 11, 30, 41 ou 45.' })
      .nullable()
      .optional(),
    profil_pro: z
      .object({
        metier: z.string().trim().max(80, '80 caractères au plus.').nullable().optional(),
        reseau: z.string().trim().max(80, '80 caractères au plus.').nullable().optional(),
        secteurs: libelles(20, 80).optional(),
      })
      .strict()
      .nullable()
      .optional(),
    notifications: z
      .object({
        par_courrier_electronique: notification,
        tableau_de_bord: notification,
        baisses: notification,
        negociation: notification,
        comparables: notification,
        apres_travaux: notification,
        tendances_zone: notification,
      })
      .strict()
      .optional(),
  })
  .strict();
export type ProfilModification = z.infer<typeof ProfilModificationSchema>;

/** Lists keep their order and lose repeats: "Bordeaux" twice is one city. */
function sansDoublons<T extends string>(valeurs: readonly T[]): T[] {
  const vus = new Set<string>();
  return valeurs.filter((v) => {
    const cle = v.toLocaleLowerCase('fr');
    if (vus.has(cle)) return false;
    vus.add(cle);
    return true;
  });
}

const videEnNull = (v: string | null) => (v === '' ? null : v);

/** Supplied members only, as a partial object: undefined means "unchanged". */
function definis<T extends object>(objet: T): Partial<T> {
  return Object.fromEntries(Object.entries(objet).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * Applies a modification: only supplied fields change, `null` clears a nullable field, a list replaces the list
 * (send [] to empty it), `objectifs` and `notifications` change member by member, `profil_pro` member by member
 * too while `null` removes it. Then checks what a user expects to hold together, on the pairs the modification
 * touches (a stored pair is never blamed on an unrelated change).
 */
export function appliquerModification(actuel: ProfilDonnees, m: ProfilModification): ProfilDonnees {
  const { objectifs, notifications, profil_pro, regions, villes, departements, types, ...simples } = m;
  const suivant: ProfilDonnees = { ...actuel, ...definis(simples) };
  if (regions) suivant.regions = sansDoublons(regions);
  if (villes) suivant.villes = sansDoublons(villes);
  if (departements) suivant.departements = sansDoublons(departements);
  if (types) suivant.types = sansDoublons(types);
  if (objectifs) suivant.objectifs = { ...actuel.objectifs, ...definis(objectifs) };
  if (notifications) suivant.notifications = { ...actuel.notifications, ...definis(notifications) };
  if (profil_pro === null) suivant.profil_pro = null;
  else if (profil_pro) {
    const base = actuel.profil_pro ?? PROFIL_PRO_VIDE;
    const { metier, reseau, secteurs } = profil_pro;
    suivant.profil_pro = {
      metier: metier === undefined ? base.metier : videEnNull(metier),
      reseau: reseau === undefined ? base.reseau : videEnNull(reseau),
      secteurs: secteurs === undefined ? base.secteurs : sansDoublons(secteurs),
    };
  }
  verifierCoherence(suivant, m);
  return suivant;
}

function verifierCoherence(p: ProfilDonnees, m: ProfilModification): void {
  const touche = (...champs: (keyof ProfilModification)[]) => champs.some((c) => m[c] !== undefined);
  if (touche('surface_min', 'surface_max') && p.surface_min !== null && p.surface_max !== null) {
    if (p.surface_min > p.surface_max) {
      throw invalidField(
        m.surface_min !== undefined ? 'surface_min' : 'surface_max',
        `La surface minimale (${p.surface_min} m²) dépasse la surface maximale (${p.surface_max} m²).`,
      );
    }
  }
  if (touche('budget_par_bien', 'budget_total') && p.budget_par_bien !== null && p.budget_total !== null) {
    if (p.budget_par_bien > p.budget_total) {
      throw invalidField(
        m.budget_par_bien !== undefined ? 'budget_par_bien' : 'budget_total',
        `Le budget par bien (${p.budget_par_bien} €) dépasse le budget total (${p.budget_total} €).`,
      );
    }
  }
}
