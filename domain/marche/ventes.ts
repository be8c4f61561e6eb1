import { z } from 'zod';
import type { Queryable } from '../../db/client.ts';
import { defineOperation, type OperationContext } from '../catalogue.ts';
import { type Commune, communeByCode, departementOf, toutesLesCommunes } from '../communes.ts';
import { ApiError, invalidField } from '../errors.ts';
import type { Dataset } from '../platform/sandbox.ts';
import { drapeaux, QualiteSchema, servedFromDataset, type Qualite } from '../qualite.ts';
import { raisonSansPrix } from './indicateurs.ts';
import { lirePrix, type LignePrix, type TypeLogement } from './agregats.ts';
import { ARRONDISSEMENTS, Insee } from './entrees.ts';
import { SEUIL_CONFIANCE, SOURCE_DVF } from './prix.ts';
import { absenceDvf } from '../couverture.ts';

/** ventes_commune: DVF volumes and prices of a commune by quarter and year, and its sales velocity. */

const METHODE_VENTES =
  'Ventes (vente, VEFA, adjudication) d’un seul logement au prix au m² lisible (ni bloc, ni local professionnel, ni prix ou surface hors bornes) ; prix au m² médian.';
const METHODE_VELOCITE =
  'Lignes DVF d’appartements et de maisons des ventes (vente, VEFA, adjudication) de l’année, un local par ligne, non les mutations.';

const nul = <T extends z.ZodType>(t: T) => t.nullable();

const VentesCommuneOutput = z.object({
  commune: z.object({ insee: z.string(), nom: z.string().nullable(), code_postal: z.string().nullable() }),
  par_trimestre: z.array(
    z.object({
      trimestre: z.string().describe('AAAA-Tn.'),
      debut: z.string().describe('Premier jour du trimestre (AAAA-MM-JJ).'),
      ventes: z.number().int(),
      appartements: nul(z.number().int()),
      maisons: nul(z.number().int()),
      prix_m2_median: nul(z.number()).describe('€/m².'),
      qualite: QualiteSchema,
    }),
  ),
  par_annee: z.array(
    z.object({
      annee: z.number().int(),
      transactions_appartements: nul(z.number().int()),
      transactions_maisons: nul(z.number().int()),
      transactions_total: z.number().int(),
      prix_m2_appartement: nul(z.number()),
      prix_m2_maison: nul(z.number()),
      prix_m2_global: nul(z.number()),
      min_appartement: nul(z.number()),
      max_appartement: nul(z.number()),
      min_maison: nul(z.number()),
      max_maison: nul(z.number()),
      basse_confiance_appartement: nul(z.boolean()),
      basse_confiance_maison: nul(z.boolean()),
      qualite: QualiteSchema,
    }),
  ),
  velocite: z
    .object({
      code_postal: z.string().nullable(),
      par_annee: z.array(z.object({ annee: z.number().int(), ventes: z.number().int() })),
      evolution_volume_pct: nul(z.number()),
      lecture: z.string(),
      qualite: QualiteSchema,
    })
    .nullable(),
  limites: z.array(z.string()),
});
type VentesCommune = z.infer<typeof VentesCommuneOutput>;

/** Served communes with arrondissements are left out: a postal code of Paris is read in its arrondissement. */
let parCodePostal: Map<string, Commune> | undefined;

/** The most populated commune (or arrondissement) of a postal code, from the administrative split. */
export function communeDuCodePostal(codePostal: string): Commune | null {
  if (!parCodePostal) {
    parCodePostal = new Map();
    for (const c of toutesLesCommunes()) {
      if (ARRONDISSEMENTS[c.code]) continue;
      for (const cp of c.codesPostaux) {
        const deja = parCodePostal.get(cp);
        if (!deja || (c.population ?? -1) > (deja.population ?? -1)) parCodePostal.set(cp, c);
      }
    }
  }
  return parCodePostal.get(codePostal) ?? null;
}

const arrondi = (n: number | null | undefined) => (n == null ? null : Math.round(n));

function qualite(n: number, methode: string, donneesDu: string | null): Qualite {
  return {
    n,
    provenance: n > 0 ? 'mesure' : null,
    incertitude: null,
    drapeaux: drapeaux(n > 0 && n < SEUIL_CONFIANCE ? ['peu_d_observations'] : []),
    methode,
    donnees_du: donneesDu,
    source: SOURCE_DVF,
  };
}

/** The years of the data that are whole: their vintage runs into December. */
async function lireMillesimes(db: Queryable, dataset: Dataset) {
  const { rows } = await db.query<{ millesime: number; derniere: string }>(
    `SELECT millesime, to_char(derniere_mutation, 'YYYY-MM-DD') AS derniere FROM dvf_millesimes WHERE dataset = $1`,
    [dataset],
  );
  return {
    completes: new Set(rows.filter((r) => r.derniere.slice(5, 7) === '12').map((r) => r.millesime)),
    donneesDu: rows.reduce<string | null>((d, r) => (d === null || r.derniere > d ? r.derniere : d), null),
  };
}

export function ventesDe(
  lignes: LignePrix[],
  type: TypeLogement | undefined,
  completes: Set<number>,
  donneesDu: string | null,
): Pick<VentesCommune, 'par_trimestre' | 'par_annee'> & { velocite: Array<{ annee: number; ventes: number }> } {
  const de = (t: LignePrix['type'], annee: number, trimestre: number) =>
    lignes.find((l) => l.type === t && l.annee === annee && l.trimestre === trimestre);
  const voulu = (t: TypeLogement) => !type || type === t;
  const periodes = (trimestres: boolean) =>
    [
      ...new Map(
        lignes
          .filter((l) => l.type === 'global' && (trimestres ? l.trimestre > 0 : l.trimestre === 0))
          .map((l) => [`${l.annee}-${l.trimestre}`, l]),
      ).values(),
    ].sort((a, b) => a.annee - b.annee || a.trimestre - b.trimestre);

  // A quarter with dwellings sold but none at a readable price per m² is still a quarter of sales: listed.
  const par_trimestre = periodes(true).map((g) => {
    const a = de('appartement', g.annee, g.trimestre);
    const m = de('maison', g.annee, g.trimestre);
    const choisi = type ? (type === 'appartement' ? a : m) : g;
    const ventes = choisi?.ventes ?? 0;
    return {
      trimestre: `${g.annee}-T${g.trimestre}`,
      debut: `${g.annee}-${String((g.trimestre - 1) * 3 + 1).padStart(2, '0')}-01`,
      ventes,
      appartements: voulu('appartement') ? (a?.ventes ?? 0) : null,
      maisons: voulu('maison') ? (m?.ventes ?? 0) : null,
      prix_m2_median: arrondi(choisi?.prix_m2_median),
      qualite: qualite(ventes, METHODE_VENTES, donneesDu),
    };
  });

  const par_annee = periodes(false).map((g) => {
    const a = de('appartement', g.annee, 0);
    const m = de('maison', g.annee, 0);
    const faible = (l: LignePrix | undefined) => (l && l.ventes > 0 ? l.ventes < SEUIL_CONFIANCE : null);
    const total = type ? ((type === 'appartement' ? a : m)?.ventes ?? 0) : g.ventes;
    return {
      annee: g.annee,
      transactions_appartements: voulu('appartement') ? (a?.ventes ?? 0) : null,
      transactions_maisons: voulu('maison') ? (m?.ventes ?? 0) : null,
      transactions_total: total,
      prix_m2_appartement: voulu('appartement') ? arrondi(a?.prix_m2_median) : null,
      prix_m2_maison: voulu('maison') ? arrondi(m?.prix_m2_median) : null,
      prix_m2_global: type ? null : arrondi(g.prix_m2_median),
      min_appartement: voulu('appartement') ? arrondi(a?.prix_m2_min) : null,
      max_appartement: voulu('appartement') ? arrondi(a?.prix_m2_max) : null,
      min_maison: voulu('maison') ? arrondi(m?.prix_m2_min) : null,
      max_maison: voulu('maison') ? arrondi(m?.prix_m2_max) : null,
      basse_confiance_appartement: voulu('appartement') ? faible(a) : null,
      basse_confiance_maison: voulu('maison') ? faible(m) : null,
      qualite: qualite(total, METHODE_VENTES, donneesDu),
    };
  });

  const velocite = periodes(false)
    .filter((g) => completes.has(g.annee))
    .map((g) => ({
      annee: g.annee,
      ventes: (voulu('appartement') ? g.lignes_appartements : 0) + (voulu('maison') ? g.lignes_maisons : 0),
    }));
  return { par_trimestre, par_annee, velocite };
}

const LIMITES = [
  'Millésimes DVF détenus seulement ; le dernier trimestre d’un millésime en cours de publication peut être incomplet.',
];

async function servir(
  ctx: OperationContext,
  dataset: Dataset,
  insee: string,
  type: TypeLogement | undefined,
  codePostal: string | null,
): Promise<VentesCommune> {
  const arrondissements = ARRONDISSEMENTS[insee];
  if (arrondissements) {
    throw invalidField('insee', `Cette ville se lit par arrondissement municipal (${arrondissements}).`, 'chemin');
  }
  const commune = communeByCode(insee);
  const db = ctx.services.db;
  const [lignes, millesimes] = await Promise.all([
    lirePrix(db, dataset, 'commune', insee),
    lireMillesimes(db, dataset),
  ]);
  if (!commune && lignes.length === 0) {
    throw new ApiError('commune_introuvable', `Aucune commune n’a le code ${insee} ; rien n’est débité.`);
  }
  const cp = codePostal ?? commune?.codesPostaux[0] ?? null;
  const limites = [...LIMITES];
  const absence = absenceDvf(commune?.departement ?? departementOf(insee));
  const { par_trimestre, par_annee, velocite } = absence
    ? { par_trimestre: [], par_annee: [], velocite: [] }
    : ventesDe(lignes, type, millesimes.completes, millesimes.donneesDu);
  if (absence) limites.unshift(absence);
  else if (lignes.length === 0) limites.unshift(await raisonSansPrix(db, dataset, insee));
  let vitesse: VentesCommune['velocite'] = null;
  if (velocite.length > 0) {
    const premiere = velocite[0];
    const derniere = velocite.at(-1)!;
    const evolution =
      velocite.length > 1 && premiere.ventes > 0
        ? Math.round((derniere.ventes / premiere.ventes - 1) * 1000) / 10
        : null;
    vitesse = {
      code_postal: cp,
      par_annee: velocite,
      evolution_volume_pct: evolution,
      lecture:
        evolution === null
          ? `${derniere.ventes} lignes DVF de logements vendus en ${derniere.annee} ; une seule année complète, pas d’évolution.`
          : `Volume ${evolution > 0 ? 'en hausse' : evolution < 0 ? 'en baisse' : 'stable'} de ${Math.abs(evolution)} % entre ${premiere.annee} et ${derniere.annee} (${premiere.ventes} → ${derniere.ventes} lignes DVF de logements vendus).`,
      qualite: qualite(
        velocite.reduce((s, v) => s + v.ventes, 0),
        METHODE_VELOCITE,
        millesimes.donneesDu,
      ),
    };
  }
  return {
    commune: { insee, nom: commune?.nom ?? null, code_postal: cp },
    par_trimestre,
    par_annee,
    velocite: vitesse,
    limites,
  };
}

const DESCRIPTION = `Volumes et prix DVF d'une commune par trimestre et par année, et la vélocité de son marché, par code INSEE ou par code postal (la commune la plus peuplée du code, d'après le découpage administratif ; un code postal de Paris, Lyon ou Marseille désigne son arrondissement le plus peuplé). Lu sur les agrégats recalculés après chaque import DVF.

**Comptes.** \`ventes\`, \`transactions_*\` : ventes (vente, VEFA, adjudication) d'un seul logement dont le prix au m² se lit comme celui du logement (ni vente en bloc, ni local professionnel, ni prix ou surface hors bornes) ; \`prix_m2_median\`, \`prix_m2_*\` : leur médiane (€/m²), \`min_*\` / \`max_*\` leurs extrêmes. \`basse_confiance_*\` vrai sous ${SEUIL_CONFIANCE} ventes dans l'année (null : aucune vente du type) : rien n'est masqué. \`type\` : les chiffres de l'autre type sont null, \`ventes\` et \`transactions_total\` ne comptent que ce type, \`prix_m2_global\` null.

**Vélocité** (\`velocite\`) : lignes DVF d'appartements et de maisons de toutes les ventes de l'année (un local par ligne, non les mutations ; une vente en bloc de 10 appartements compte 10), années complètes seulement (millésime publié jusqu'en décembre) ; \`evolution_volume_pct\` de la première à la dernière année complète ; \`code_postal\` : celui demandé, sinon le premier de la commune ; null sans année complète.

**Décisions.** Paris (75056), Lyon (69123), Marseille (13055) : par arrondissement, leur code de commune répond 400. Alsace-Moselle et Mayotte (absents de DVF) et commune sans vente : 200, listes vides, la raison dans \`limites\`. Code INSEE ou code postal inconnu : 404 \`commune_introuvable\`, rien n'est débité.`;

const COMMUN = {
  tool: 'ventes_commune',
  method: 'GET',
  credits: 2,
  unit: 'appel',
  scope: 'territoire',
  tier: 'usage',
  sandbox: false,
  cacheS: 86_400,
  timeoutS: 8,
  description: DESCRIPTION,
  output: VentesCommuneOutput,
  dataDate: (o: VentesCommune) => o.par_annee.at(-1)?.qualite.donnees_du ?? null,
} as const;

const Type = z.enum(['appartement', 'maison']).optional().describe('appartement ou maison ; les deux par défaut.');

export const ventesCommune = defineOperation({
  ...COMMUN,
  errors: ['commune_introuvable'],
  path: '/communes/{insee}/ventes',
  summary: 'Volumes et prix DVF d’une commune par trimestre et par année',
  input: z.object({ insee: Insee, type: Type }),
  handler: servedFromDataset((e, ctx, dataset) => servir(ctx, dataset, e.insee, e.type, null)),
});

export const ventesCodePostal = defineOperation({
  ...COMMUN,
  errors: ['commune_introuvable'],
  variant: 'code_postal',
  path: '/codes-postaux/{code_postal}/ventes',
  summary: 'Volumes et prix DVF de la commune la plus peuplée d’un code postal',
  input: z.object({
    code_postal: z
      .string()
      .trim()
      .regex(/^\d{5}$/, 'Code postal : 5 chiffres.')
      .describe('Code postal (5 chiffres).'),
    type: Type,
  }),
  handler: servedFromDataset(async (e, ctx, dataset) => {
    const commune = communeDuCodePostal(e.code_postal);
    if (!commune) {
      throw new ApiError(
        'commune_introuvable',
        `Aucune commune n’a le code postal ${e.code_postal} ; rien n’est débité.`,
      );
    }
    return servir(ctx, dataset, commune.code, e.type, e.code_postal);
  }),
});
