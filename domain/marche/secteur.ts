import { z } from 'zod';
import type { Queryable } from '../../db/client.ts';
import { defineOperation } from '../catalogue.ts';
import { ApiError } from '../errors.ts';
import type { Dataset } from '../platform/sandbox.ts';
import { absenceSource } from '../couverture.ts';
import { drapeaux, QualiteSchema, servedFromDataset } from '../qualite.ts';
import { adressesEnVente, particuliersSecteur, REGLE_PARTICULIERS, SOURCE_ANNONCES } from '../annonces/marche.ts';
import { communeByCode } from '../communes.ts';
import { communesDuCodePostal } from '../entreprises/rattachement.ts';
import { SEUIL_CONFIANCE } from './prix.ts';
import { communeDuCodePostal } from './ventes.ts';

/**
 * secteur: the pure pre-market of a postal code, from the DPE and the sales, precomputed into `marche_secteur` by the
 * rebuild of the derived tables (derives.ts), less the addresses with a listing online (read at the request, the
 * listings change with every import of snapshots); and the private sellers' listings (domain/annonces/marche.ts).
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
        `Adresses avec un DPE individuel de moins de ${FENETRE_JOURS} jours, ni en vente (aucune annonce en ligne rattachée à l’adresse) ni vendues depuis le DPE.`,
      ),
    passoires: z.number().int().describe('Dont DPE F ou G.'),
    qualite: QualiteSchema,
  }),
  particuliers: z
    .object({
      echelle: z
        .enum(['secteur', 'departement'])
        .describe('departement : aucun bien de particulier du code postal n’est en ligne depuis plus de 50 jours.'),
      n_plus_50_jours: z.number().int(),
      duree_moyenne_jours: z.number().int().nullable(),
      n_avec_baisse: z.number().int(),
      annonces: z
        .array(
          z.object({
            id: z.string().describe('Identifiant du service (GET /annonces/{id}).'),
            lien: z.string().nullable().describe('Lien d’origine ; servi avec la portée lien_origine seulement.'),
            titre: z.string().nullable().describe('Tel que stocké : coordonnées masquées à l’import.'),
            prix: z.number().nullable(),
            surface: z.number().nullable(),
            commune: z.string().nullable(),
            parue_depuis_jours: z.number().int().nullable(),
            derniere_baisse_le: z.string().nullable().describe('Jour (AAAA-MM-JJ) de la dernière baisse de prix.'),
            type_vendeur: z.literal('particulier'),
          }),
        )
        .nullable()
        .describe('Avec detail=true : un élément par bien, sans nom ni coordonnées du vendeur ; null sinon.'),
      qualite: QualiteSchema,
    })
    .nullable()
    .describe(
      'Annonces en ligne de vendeurs particuliers ; null quand le service ne détient aucune annonce (voir limites).',
    ),
  limites: z.array(z.string()),
  calcule_le: z.string().nullable().describe('Date de la reconstruction des agrégats (ISO 8601).'),
});

const DESCRIPTION = `Le pré-marché d'un code postal : les adresses dont un logement vient de faire établir son DPE et qui ne sont ni en vente ni vendues depuis, et la part de passoires parmi elles. Lu sur un agrégat recalculé après chaque import DPE ou DVF (une lecture indexée), dont les adresses en vente sont retirées à la lecture ; et les annonces en ligne des vendeurs particuliers.

**Règle de \`pre_marche_pur\`.** Adresses BAN du code postal ayant un DPE **individuel** (un appartement ou une maison, non un immeuble entier) établi dans les ${FENETRE_JOURS} jours qui précèdent le DPE le plus récent détenu (la date des données, non celle de la requête : une base figée répond toujours pareil), sans vente DVF à l'adresse à la date du DPE ou après. \`passoires\` : celles dont ce DPE (le plus récent de l'adresse dans la fenêtre) est F ou G. Un DPE non rattaché à une adresse BAN n'est pas compté.

**« Ni en vente ».** Sont aussi écartées, à la lecture, les adresses auxquelles une annonce en ligne (statut actif au dernier relevé, tout vendeur) du code postal est rattachée par son numéro BAN (adresse validée par un utilisateur, ou position donnée à l'adresse par le portail à 15 m au plus d'un numéro). Une annonce sans numéro BAN (position approchée, au centre de la commune) ne peut écarter aucune adresse : \`limites\` le rappelle. \`qualite.methode\` dit combien d'adresses sont écartées pour chaque raison.

**\`particuliers\`.** ${REGLE_PARTICULIERS} Null quand le service ne détient aucune annonce (dit dans \`limites\`). Aucun nom ni contact de vendeur n'est jamais servi.

**Code postal.** Le code postal désigne sa commune la plus peuplée (\`commune\`, \`departement\`) ; un code postal qu'aucune commune n'a : 404 \`commune_introuvable\`, rien n'est débité.`;

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
      .describe('true : les annonces de particuliers, sans nom ni contact du vendeur.'),
  }),
  output: SecteurOutput,
  dataDate: (o) => o.pre_marche_pur.qualite.donnees_du,
  handler: servedFromDataset(async (e, ctx, dataset) => {
    const commune = communeDuCodePostal(e.cp);
    if (!commune) {
      throw new ApiError('commune_introuvable', `Aucune commune n’a le code postal ${e.cp} ; rien n’est débité.`);
    }
    return lireSecteur(ctx.services.db, dataset, e.cp, commune.nom, commune.departement, {
      detail: e.detail,
      lienOrigine: ctx.caller.portees.includes('lien_origine'),
    });
  }),
});

async function lireSecteur(
  db: Queryable,
  dataset: Dataset,
  cp: string,
  nom: string,
  departement: string,
  options: { detail: boolean; lienOrigine: boolean },
) {
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
  const departements = [
    ...new Set([departement, ...communesDuCodePostal(cp).map((c) => communeByCode(c)?.departement ?? departement)]),
  ];
  const { particuliers, limites: limitesParticuliers } = await particuliersSecteur(
    db,
    dataset,
    { cp, departement, departements },
    options,
  );
  const limites: string[] = [];
  // « Ni en vente »: the addresses counted whose BAN number has a listing online, set aside at the reading.
  let enVente = { n: 0, passoires: 0, sans_numero: 0 };
  if (!particuliers) {
    limites.push(
      '« Ni en vente » n’est pas vérifié sur les annonces (aucune importée) : seules les adresses vendues depuis le DPE (DVF) sont écartées.',
    );
  } else if (r?.reference_le && r.n) {
    enVente = await adressesEnVente(
      db,
      dataset,
      { cp, departements },
      { referenceLe: r.reference_le, jours: FENETRE_JOURS },
    );
  }
  if (enVente.sans_numero > 0) {
    limites.push(
      `pre_marche_pur : ${enVente.sans_numero} annonce(s) en ligne du ${cp} ne sont rattachées à aucun numéro BAN (position approchée ou au centre de la commune) : elles n’écartent aucune adresse, et n peut compter des adresses qu’elles mettent en vente.`,
    );
  }
  const n = Math.max(0, (r?.n ?? 0) - enVente.n);
  const passoires = Math.max(0, (r?.passoires ?? 0) - enVente.passoires);
  if (!r?.calcule_le) limites.unshift('Aucun agrégat calculé pour ces données : importer DPE et DVF.');
  else if (!r.dpe_recents) {
    limites.unshift(
      (await absenceSource(db, dataset, 'dpe', departement)) ??
        `Aucun DPE individuel d’une adresse du ${cp} établi dans les ${FENETRE_JOURS} jours avant le ${r.reference_le ?? 'DPE le plus récent'}.`,
    );
  }
  limites.push(...limitesParticuliers);
  return {
    cp,
    commune: nom,
    departement,
    pre_marche_pur: {
      n,
      passoires,
      qualite: {
        n: r?.dpe_recents ?? 0,
        provenance: r?.reference_le ? ('mesure' as const) : null,
        incertitude: null,
        drapeaux: drapeaux(n < SEUIL_CONFIANCE ? ['peu_d_observations'] : []),
        methode: `Adresses BAN avec un DPE individuel (appartement ou maison) établi dans les ${FENETRE_JOURS} jours avant le ${r?.reference_le ?? 'DPE le plus récent'} ; ${r?.vendues_depuis ?? 0} sur ${r?.dpe_recents ?? 0} écartées car vendues depuis (DVF)${particuliers ? `, ${enVente.n} car une annonce en ligne est rattachée à leur numéro BAN` : ''}.`,
        donnees_du: r?.reference_le ?? null,
        source: particuliers
          ? `DPE (ADEME) ; DVF (DGFiP, Etalab) ; ${SOURCE_ANNONCES}`
          : 'DPE (ADEME) ; DVF (DGFiP, Etalab)',
      },
    },
    particuliers: particuliers
      ? {
          echelle: particuliers.echelle,
          n_plus_50_jours: particuliers.n_plus_50_jours,
          duree_moyenne_jours: particuliers.duree_moyenne_jours,
          n_avec_baisse: particuliers.n_avec_baisse,
          annonces: particuliers.annonces,
          qualite: {
            n: particuliers.n,
            provenance: 'mesure' as const,
            incertitude: null,
            drapeaux: drapeaux(particuliers.n < SEUIL_CONFIANCE ? ['peu_d_observations'] : []),
            methode: `Biens en ligne de vendeurs particuliers ${particuliers.echelle === 'secteur' ? `du code postal ${cp}` : `du département ${departement}`}, chacun compté une fois ; durée en ligne de la première parution au dernier relevé.`,
            donnees_du: particuliers.releve_le,
            source: SOURCE_ANNONCES,
          },
        }
      : null,
    limites,
    calcule_le: r?.calcule_le ?? null,
  };
}
