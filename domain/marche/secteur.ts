import { z } from 'zod';
import type { Queryable } from '../../db/client.ts';
import { defineOperation } from '../catalogue.ts';
import { ApiError } from '../errors.ts';
import type { Dataset } from '../platform/sandbox.ts';
import { absenceSource } from '../couverture.ts';
import { drapeaux, QualiteSchema, servedFromDataset } from '../qualite.ts';
import { SEUIL_CONFIANCE } from './prix.ts';
import { communeDuCodePostal } from './ventes.ts';

/**
 * secteur: the pure pre-market of a postal code, from the DPE and the sales, precomputed into `marche_secteur` by the
 * rebuild of the derived tables (derives.ts). No listing domain yet: `particuliers` is null, said in `limites`.
 */

/** The window of the recent DPE, in days before the latest DPE of the dataset. */
export const FENETRE_JOURS = 90;

/**
 * Rebuilds `marche_secteur` for `dataset` (inside the rebuild's transaction): per postal code, the BAN addresses with
 * an individual DPE (a flat or a house, not a whole building) established in the last FENETRE_JOURS days of the data,
 * and of those, the ones with no DVF sale at the address on or after the DPE's date.
 */
export async function reconstruireSecteurs(client: Queryable, dataset: Dataset): Promise<number> {
  await client.query('DELETE FROM marche_secteur WHERE dataset = $1', [dataset]);
  const { rowCount } = await client.query(
    `WITH reference AS (SELECT max(etabli_le) AS le FROM dpe WHERE dataset = $1),
     recents AS (
       SELECT DISTINCT ON (d.cle_ban) d.cle_ban, d.code_postal, d.etabli_le, d.etiquette
         FROM dpe d, reference r
        WHERE d.dataset = $1 AND d.cle_ban IS NOT NULL AND d.code_postal IS NOT NULL
          AND d.type_batiment IN ('maison', 'appartement') AND d.etabli_le > r.le - ${FENETRE_JOURS}
        ORDER BY d.cle_ban, d.etabli_le DESC, d.numero_dpe DESC),
     lues AS (
       SELECT x.*, EXISTS (SELECT 1 FROM dvf_mutations m
                            WHERE m.dataset = $1 AND m.cle_ban = x.cle_ban AND m.date_mutation >= x.etabli_le) AS vendue
         FROM recents x)
     INSERT INTO marche_secteur (dataset, code_postal, n, passoires, dpe_recents, vendues_depuis, reference_le)
     SELECT $1, code_postal, count(*) FILTER (WHERE NOT vendue),
            count(*) FILTER (WHERE NOT vendue AND etiquette IN ('F', 'G')), count(*), count(*) FILTER (WHERE vendue),
            (SELECT le FROM reference)
       FROM lues GROUP BY code_postal`,
    [dataset],
  );
  return rowCount ?? 0;
}

const SecteurOutput = z.object({
  cp: z.string(),
  commune: z.string().nullable().describe('La commune la plus peuplée du code postal.'),
  departement: z.string(),
  pre_marche_pur: z.object({
    n: z
      .number()
      .int()
      .describe(
        `Adresses avec un DPE individuel de moins de ${FENETRE_JOURS} jours, ni en vente ni vendues depuis le DPE.`,
      ),
    passoires: z.number().int().describe('Dont DPE F ou G.'),
    qualite: QualiteSchema,
  }),
  particuliers: z
    .object({
      echelle: z.enum(['secteur', 'departement']),
      n_plus_50_jours: z.number().int(),
      duree_moyenne_jours: z.number().nullable(),
      n_avec_baisse: z.number().int(),
      annonces: z.array(z.record(z.string(), z.unknown())).nullable(),
      qualite: QualiteSchema,
    })
    .nullable()
    .describe('Annonces de vendeurs particuliers : null tant que le service ne détient pas d’annonces (voir limites).'),
  limites: z.array(z.string()),
  calcule_le: z.string().nullable().describe('Date de la reconstruction des agrégats (ISO 8601).'),
});

const DESCRIPTION = `Le pré-marché d'un code postal : les adresses dont un logement vient de faire établir son DPE et qui ne sont ni en vente ni vendues depuis, et la part de passoires parmi elles. Lu sur un agrégat recalculé après chaque import DPE ou DVF (une lecture indexée).

**Règle de \`pre_marche_pur\`.** Adresses BAN du code postal ayant un DPE **individuel** (un appartement ou une maison, non un immeuble entier) établi dans les ${FENETRE_JOURS} jours qui précèdent le DPE le plus récent détenu (la date des données, non celle de la requête : une base figée répond toujours pareil), sans vente DVF à l'adresse à la date du DPE ou après. \`passoires\` : celles dont ce DPE (le plus récent de l'adresse dans la fenêtre) est F ou G. Un DPE non rattaché à une adresse BAN n'est pas compté.

**Décisions.** \`particuliers\` : null, le service ne détient pas encore d'annonces (le domaine des annonces viendra) ; « ni en vente » ne peut donc pas encore être vérifié sur les annonces, seules les ventes DVF sont écartées : les deux sont dits dans \`limites\`. \`detail=true\` ne change rien tant qu'il n'y a pas d'annonces. Aucun nom ni contact de vendeur n'est jamais servi. Le code postal désigne sa commune la plus peuplée (\`commune\`, \`departement\`) ; un code postal qu'aucune commune n'a : 404 \`commune_introuvable\`, rien n'est débité.`;

export const secteur = defineOperation({
  tool: 'secteur',
  method: 'GET',
  path: '/codes-postaux/{cp}/secteur',
  summary: 'Pré-marché d’un code postal : DPE récents ni en vente ni vendus depuis',
  description: DESCRIPTION,
  credits: 2,
  unit: 'appel',
  scope: 'territoire',
  tier: 'usage',
  sandbox: false,
  cacheS: 6 * 3600,
  timeoutS: 8,
  errors: ['commune_introuvable'],
  input: z.object({
    cp: z
      .string()
      .trim()
      .regex(/^\d{5}$/, 'Code postal : 5 chiffres.')
      .describe('Code postal (5 chiffres).'),
    detail: z
      .enum(['true', 'false'])
      .default('false')
      .transform((v) => v === 'true')
      .describe('true : les annonces de particuliers, sans nom ni contact (aucune tant que le service n’en détient).'),
  }),
  output: SecteurOutput,
  dataDate: (o) => o.pre_marche_pur.qualite.donnees_du,
  handler: servedFromDataset(async (e, ctx, dataset) => {
    const commune = communeDuCodePostal(e.cp);
    if (!commune) {
      throw new ApiError('commune_introuvable', `Aucune commune n’a le code postal ${e.cp} ; rien n’est débité.`);
    }
    return lireSecteur(ctx.services.db, dataset, e.cp, commune.nom, commune.departement);
  }),
});

async function lireSecteur(db: Queryable, dataset: Dataset, cp: string, nom: string, departement: string) {
  const { rows } = await db.query<{
    n: number | null;
    passoires: number | null;
    dpe_recents: number | null;
    vendues_depuis: number | null;
    reference_le: string | null;
    calcule_le: string | null;
  }>(
    `SELECT s.n, s.passoires, s.dpe_recents, s.vendues_depuis, to_char(s.reference_le, 'YYYY-MM-DD') AS reference_le,
            to_char(d.calcule_le AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS calcule_le
       FROM marche_derives d LEFT JOIN marche_secteur s ON s.dataset = d.dataset AND s.code_postal = $2
      WHERE d.dataset = $1`,
    [dataset, cp],
  );
  const r = rows[0];
  const n = r?.n ?? 0;
  const limites = [
    'particuliers : null, le service ne détient pas encore d’annonces de vendeurs particuliers.',
    '« Ni en vente » n’est pas vérifié sur les annonces (aucune détenue) : seules les adresses vendues depuis le DPE (DVF) sont écartées.',
  ];
  if (!r?.calcule_le) limites.unshift('Aucun agrégat calculé pour ces données : importer DPE et DVF.');
  else if (!r.dpe_recents) {
    limites.unshift(
      (await absenceSource(db, dataset, 'dpe', departement)) ??
        `Aucun DPE individuel d’une adresse du ${cp} établi dans les ${FENETRE_JOURS} jours avant le ${r.reference_le ?? 'DPE le plus récent'}.`,
    );
  }
  return {
    cp,
    commune: nom,
    departement,
    pre_marche_pur: {
      n,
      passoires: r?.passoires ?? 0,
      qualite: {
        n: r?.dpe_recents ?? 0,
        provenance: r?.reference_le ? ('mesure' as const) : null,
        incertitude: null,
        drapeaux: drapeaux(n < SEUIL_CONFIANCE ? ['peu_d_observations'] : []),
        methode: `Adresses BAN avec un DPE individuel (appartement ou maison) établi dans les ${FENETRE_JOURS} jours avant le ${r?.reference_le ?? 'DPE le plus récent'} ; ${r?.vendues_depuis ?? 0} sur ${r?.dpe_recents ?? 0} écartées car vendues depuis (DVF).`,
        donnees_du: r?.reference_le ?? null,
        source: 'DPE (ADEME) ; DVF (DGFiP, Etalab)',
      },
    },
    particuliers: null,
    limites,
    calcule_le: r?.calcule_le ?? null,
  };
}
