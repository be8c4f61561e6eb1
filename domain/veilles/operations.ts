import { z } from 'zod';
import { transaction } from '../../db/client.ts';
import { defineOperation } from '../catalogue.ts';
import { nombre } from '../entrees.ts';
import { ApiError, invalidField } from '../errors.ts';
import { trouverAnnonce } from '../annonces/operations.ts';
import { CriteresSchema, type Criteres } from './criteres.ts';
import { DELAI_RESULTAT_S, lireResultats, NATURES, ResultatSchema, type Nature } from './resultats.ts';

/**
 * Watches and alerts: the specification names them (the webhook genres `veille.resultat` and `alerte.resultat`, "results
 * of watches and alerts created by the organisation through the API") but does not show their operations: these are
 * ours, small, documented in their descriptions. They are fanned out by domain/diffusion/repartir.ts.
 */

/** Watches and alerts of an organisation at once. */
export const MAX_VEILLES = 100;

const COMMON = {
  scope: 'flux',
  tier: 'data',
  // They follow the live data and deliver to webhooks, which the sandbox has neither of.
  sandbox: false,
  cacheS: 0,
} as const;

const VeilleSchema = z.object({
  id: z.uuid(),
  nature: z.enum(NATURES).describe('recherche : une veille ; annonce, adresse : une alerte.'),
  nom: z.string().nullable(),
  criteres: CriteresSchema.nullable().describe('Les critères d’une veille ; null pour une alerte.'),
  annonce_id: z.string().nullable().describe('L’annonce suivie par une alerte sur annonce.'),
  cle_ban: z.string().nullable().describe('L’adresse suivie par une alerte sur adresse.'),
  cree_le: z.iso.datetime(),
  resultats: z.number().int().describe('Résultats produits jusqu’ici (servis ou dans leurs 15 minutes).'),
});
type Veille = z.infer<typeof VeilleSchema>;

interface LigneVeille {
  id: string;
  nature: Nature;
  nom: string | null;
  criteres: Criteres;
  annonce_id: string | null;
  cle_ban: string | null;
  cree_le: Date;
  resultats: number;
}

const COLONNES = `v.id, v.nature, v.nom, v.criteres, v.annonce_id, v.cle_ban, v.cree_le,
  (SELECT count(*)::int FROM veilles_resultats r WHERE r.veille_id = v.id) AS resultats`;

function enVeille(l: LigneVeille): Veille {
  return {
    id: l.id,
    nature: l.nature,
    nom: l.nom,
    criteres: l.nature === 'recherche' ? l.criteres : null,
    annonce_id: l.annonce_id,
    cle_ban: l.cle_ban,
    cree_le: l.cree_le.toISOString(),
    resultats: l.resultats,
  };
}

const Nom = z
  .string()
  .trim()
  .min(1)
  .max(100)
  .optional()
  .describe('Un nom pour s’y retrouver (100 caractères au plus).');

const REGLES = `Une veille ou une alerte ne produit rien de ce qui est arrivé avant sa création. Chaque résultat est servi
**15 minutes après être apparu** (règle de la spécification) : lisible à \`GET /veilles/resultats\` et livré aux
abonnements webhook \`veille.resultat\` / \`alerte.resultat\` de l’organisation créés avant lui, 1 crédit par résultat
livré (tarif \`evenement\`). ${MAX_VEILLES} veilles et alertes au plus par organisation (409 \`conflit\` au-delà). Portée
\`flux\`, abonnement Data ; pas de bac à sable (elles suivent les données live).`;

/** Inserts a watch or an alert, within the organisation's allowance; its starting points are the journals' ends. */
async function creer(
  db: Parameters<typeof transaction>[0],
  organisationId: string,
  v: {
    nature: Nature;
    nom: string | null;
    criteres: Criteres | Record<string, never>;
    annonce_id?: string;
    cle_ban?: string;
  },
  maintenant: Date,
): Promise<Veille> {
  const row = await transaction(db, async (client) => {
    // The organisation's row serialises its creations: the count cannot be passed by two at once.
    await client.query('SELECT 1 FROM organisations WHERE id = $1 FOR UPDATE', [organisationId]);
    const n = await client.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM veilles WHERE organisation_id = $1 AND supprime_le IS NULL',
      [organisationId],
    );
    if (n.rows[0].n >= MAX_VEILLES) {
      throw new ApiError(
        'conflit',
        `${MAX_VEILLES} veilles et alertes au plus : supprimez-en une (POST /veilles/{id}) avant d’en créer une autre.`,
      );
    }
    const { rows } = await client.query<LigneVeille>(
      `INSERT INTO veilles (organisation_id, nature, nom, criteres, annonce_id, cle_ban, evenement_depart,
                            adresse_depart, cree_le)
       VALUES ($1, $2, $3, $4, $5, $6,
               (SELECT coalesce(max(id), 0) FROM annonces_evenements WHERE dataset = 'live'),
               (SELECT coalesce(max(id), 0) FROM journal_adresses WHERE dataset = 'live'), $7)
       RETURNING id, nature, nom, criteres, annonce_id, cle_ban, cree_le, 0 AS resultats`,
      [
        organisationId,
        v.nature,
        v.nom,
        JSON.stringify(v.criteres),
        v.annonce_id ?? null,
        v.cle_ban ?? null,
        maintenant,
      ],
    );
    return rows[0];
  });
  return enVeille(row);
}

export const veillesCreer = defineOperation({
  ...COMMON,
  tool: 'veilles_creer',
  method: 'POST',
  effect: 'ajout',
  path: '/veilles',
  credits: 0,
  unit: 'appel',
  timeoutS: 4,
  summary: 'Créer une veille (recherche enregistrée sur les annonces)',
  errors: ['conflit'],
  description: `Une veille est une recherche enregistrée sur les annonces : ses résultats sont ses **nouvelles
correspondances**, chaque annonce servie (l’annonce principale de son bien, en ligne) qui se met à passer les critères,
une seule fois par annonce : à sa parution, à son retour en ligne, quand une baisse la fait entrer sous \`prix_max\`,
quand son analyse (score, rendement) change. Les critères se lisent sur l’annonce au moment où l’événement est diffusé.

**Critères** (\`criteres\`, combinés par ET ; une liste vaut l’une de ses valeurs) : les filtres des abonnements webhook
(\`insee\` ≤ 50, \`cp\` ≤ 50, \`departement\` ≤ 20, \`type_bien\` apartment|house|immeuble, \`prix_min\`, \`prix_max\`)
et \`surface_min\`, \`surface_max\` (m²), \`score_min\` (0-100), \`rendement_min\` (rendement brut %, de l’analyse). Au
moins un lieu (\`insee\`, \`cp\` ou \`departement\`) : sans lieu, c’est le flux lui-même (\`GET /flux/annonces\`). Une
valeur inconnue de l’annonce (surface, score) ne passe aucune borne portant sur elle.

${REGLES}`,
  input: z.object({ nom: Nom, criteres: CriteresSchema }),
  output: z.object({ veille: VeilleSchema }),
  async handler(input, ctx) {
    return {
      veille: await creer(
        ctx.services.db,
        ctx.caller.organisationId,
        { nature: 'recherche', nom: input.nom ?? null, criteres: input.criteres },
        ctx.services.now(),
      ),
    };
  },
});

export const alertesCreer = defineOperation({
  ...COMMON,
  tool: 'alertes_creer',
  method: 'POST',
  effect: 'ajout',
  path: '/alertes',
  credits: 0,
  unit: 'appel',
  timeoutS: 4,
  summary: 'Créer une alerte sur une annonce ou une adresse',
  description: `Une alerte suit **une annonce** (\`annonce\` : son identifiant de service,
\`<portail>:<identifiant>\` ou le lien du portail, comme pour \`GET /annonces/{id}\`) ou **une adresse** (\`cle_ban\` :
un numéro de la BAN), exactement l’un des deux.

- Sur une annonce : ses baisses et hausses de prix, son retrait, son retour en ligne, l’arrivée d’une autre agence ou
  d’un autre portail pour son bien (genres \`baisse_prix\`, \`hausse_prix\`, \`retrait\`, \`reactivation\`,
  \`multi_agences\` du flux des annonces).
- Sur une adresse : les nouveautés du journal des adresses à ce numéro (nouveau DPE, audit, permis, avis d’une société
  civile, vente DVF : \`GET /flux/adresses\`), et les annonces rattachées à ce numéro qui paraissent, baissent, sont
  retirées ou reviennent.

Une annonce inconnue : 404 \`ressource_absente\` ; une clé BAN qui n’est pas un numéro connu : 404
\`adresse_introuvable\`. Rien n’est débité à la création.

${REGLES}`,
  errors: ['ressource_absente', 'adresse_introuvable', 'conflit'],
  input: z
    .object({
      nom: Nom,
      annonce: z
        .string()
        .trim()
        .min(1)
        .max(500)
        .optional()
        .describe(
          'L’annonce suivie, comme pour GET /annonces/{id} : identifiant de service, `<portail>:<identifiant>` ou lien du portail.',
        ),
      cle_ban: z
        .string()
        .trim()
        .min(1)
        .max(100)
        .transform((v) => v.toLowerCase())
        .optional()
        .describe('Clé BAN du numéro suivi (ex. 75111_3514_00203).'),
    })
    .refine((a) => (a.annonce === undefined) !== (a.cle_ban === undefined), {
      message: 'Exactement l’un des deux : annonce ou cle_ban.',
      path: ['annonce'],
    }),
  output: z.object({ veille: VeilleSchema }),
  async handler(input, ctx) {
    const { db } = ctx.services;
    let annonceId: string | undefined;
    if (input.annonce !== undefined) {
      const a = await trouverAnnonce(db, 'live', input.annonce);
      if (!a) throw new ApiError('ressource_absente', `Aucune annonce ne répond à « ${input.annonce} ».`);
      annonceId = a.id;
    } else {
      const { rowCount } = await db.query(
        `SELECT 1 FROM adresses WHERE dataset = 'live' AND cle_ban = $1 AND type = 'numero'`,
        [input.cle_ban],
      );
      if (rowCount === 0) {
        throw new ApiError('adresse_introuvable', `La clé ${input.cle_ban} n’est pas un numéro connu de la BAN.`);
      }
    }
    return {
      veille: await creer(
        db,
        ctx.caller.organisationId,
        {
          nature: input.annonce !== undefined ? 'annonce' : 'adresse',
          nom: input.nom ?? null,
          criteres: {},
          annonce_id: annonceId,
          cle_ban: input.cle_ban,
        },
        ctx.services.now(),
      ),
    };
  },
});

export const veillesLister = defineOperation({
  ...COMMON,
  tool: 'veilles',
  method: 'GET',
  path: '/veilles',
  credits: 0,
  unit: 'appel',
  timeoutS: 4,
  summary: 'Lister les veilles et alertes',
  description: `Les veilles et alertes de l’organisation, de la plus ancienne à la plus récente, avec le nombre de
résultats produits par chacune ; \`max\` : ${MAX_VEILLES}. Les supprimées n’apparaissent plus.`,
  input: z.object({}),
  output: z.object({ veilles: z.array(VeilleSchema), max: z.number().int() }),
  async handler(_input, ctx) {
    const { rows } = await ctx.services.db.query<LigneVeille>(
      `SELECT ${COLONNES} FROM veilles v WHERE v.organisation_id = $1 AND v.supprime_le IS NULL ORDER BY v.cree_le, v.id`,
      [ctx.caller.organisationId],
    );
    return { veilles: rows.map(enVeille), max: MAX_VEILLES };
  },
});

export const veillesSupprimer = defineOperation({
  ...COMMON,
  tool: 'veilles_supprimer',
  method: 'POST',
  effect: 'ecriture',
  path: '/veilles/{id}',
  credits: 0,
  unit: 'appel',
  timeoutS: 4,
  summary: 'Supprimer une veille ou une alerte',
  description: `Supprime la veille ou l’alerte : elle ne produit plus rien ; ses résultats pas encore servis (dans
leurs 15 minutes) sont retirés et leurs livraisons annulées ; ceux déjà servis restent lisibles à leur place dans
\`GET /veilles/resultats\`. Le corps est un objet JSON vide (\`{}\`), comme pour \`POST /webhooks/{id}\`. Un
identifiant inconnu, déjà supprimé ou d’une autre organisation : 404 \`ressource_absente\`.`,
  errors: ['ressource_absente'],
  input: z.object({ id: z.uuid({ message: 'Identifiant de veille ou d’alerte attendu (uuid).' }) }),
  output: z.object({ id: z.uuid(), supprime: z.boolean() }),
  async handler(input, ctx) {
    const { db, now } = ctx.services;
    const at = now();
    const supprime = await transaction(db, async (client) => {
      const { rowCount } = await client.query(
        'UPDATE veilles SET supprime_le = $3 WHERE id = $1 AND organisation_id = $2 AND supprime_le IS NULL',
        [input.id, ctx.caller.organisationId, at],
      );
      if (rowCount === 0) return false;
      const retires = await client.query<{ id: string }>(
        'DELETE FROM veilles_resultats WHERE veille_id = $1 AND disponible_le > $2 RETURNING id::text',
        [input.id, at],
      );
      await client.query(
        `UPDATE livraisons l SET statut = 'annulee', maj_le = $2
           FROM webhooks w
          WHERE w.id = l.webhook_id AND w.organisation_id = $3 AND l.evenement = ANY($1::text[])
            AND l.statut IN ('a_livrer', 'en_cours', 'echec')`,
        [retires.rows.map((r) => `resultat:${r.id}`), at, ctx.caller.organisationId],
      );
      return true;
    });
    if (!supprime)
      throw new ApiError(
        'ressource_absente',
        'Aucune veille ni alerte de votre organisation ne porte cet identifiant.',
      );
    return { id: input.id, supprime: true };
  },
});

interface PositionResultats {
  apres: number;
}

const ResultatsOutput = z.object({
  resultats: z.array(ResultatSchema),
  a_jour: z.boolean().describe('Rien d’autre de servi pour l’instant.'),
  prochain_le: z
    .string()
    .nullable()
    .describe('Quand le prochain résultat déjà apparu sera servi (ses 15 minutes) ; null si aucun n’attend.'),
  curseur_suivant: z.string().describe('Toujours donné : le renvoyer plus tard lit la suite.'),
});
type ResultatsSortie = z.infer<typeof ResultatsOutput>;

export const resultatsVeilles = defineOperation({
  ...COMMON,
  tool: 'resultats_veilles',
  method: 'GET',
  path: '/veilles/resultats',
  credits: 1,
  unit: 'evenement',
  timeoutS: 6,
  summary: 'Lire les résultats des veilles et alertes',
  description: `Les résultats des veilles et alertes de l’organisation dans l’ordre où ils sont apparus, au format
\`resultats_veilles\` (le même que les \`donnees\` des livraisons \`veille.resultat\` et \`alerte.resultat\`). **1 crédit
par résultat servi** (une page vide ne coûte rien).

Un résultat est servi ${DELAI_RESULTAT_S / 60} minutes après être apparu (\`disponible_le\`) : \`prochain_le\` dit quand
le suivant le sera. \`curseur_suivant\` est toujours donné ; renvoyé plus tard (avec le même filtre \`veille\`), il ne lit
que ce qui a été servi depuis ; un curseur altéré ou d’un autre filtre : 400 sur \`curseur\`.

**Format \`resultats_veilles\`** : \`id\` (croissant), \`genre\` (\`veille.resultat\` | \`alerte.resultat\`),
\`veille_id\`, \`nature\`, \`le\` (l’événement), \`apparu_le\`, \`disponible_le\`, \`evenement\` (\`journal\` annonces |
adresses, son \`id\` et son \`genre\` dans ce flux, \`avant\`/\`apres\` pour une annonce, \`date_source\`, \`detail\`,
\`source\` pour une adresse), \`annonce\` (format liste, telle qu’au moment où le résultat est apparu ; sans
\`id_portail\` ni \`lien\`), \`cle_ban\`. Aucun vendeur particulier n’y est jamais nommé.`,
  input: z.object({
    veille: z
      .uuid({ message: 'Identifiant de veille ou d’alerte attendu (uuid).' })
      .optional()
      .describe('Les résultats de cette veille ou alerte seulement.'),
    limite: nombre(z.number().int().min(1).max(1000).default(100)).describe('Résultats par page (1-1000).'),
    curseur: z.string().min(1).max(1024).optional().describe('`curseur_suivant` d’une lecture précédente.'),
  }),
  output: ResultatsOutput,
  units: (o: ResultatsSortie) => o.resultats.length,
  async handler(input, ctx): Promise<ResultatsSortie> {
    const scope = `resultats_veilles|${ctx.caller.organisationId}|${input.veille ?? ''}`;
    let apres = 0;
    if (input.curseur) {
      const position = ctx.services.cursors.decode<PositionResultats>(scope, input.curseur);
      if (!position || !Number.isSafeInteger(position.apres)) {
        throw invalidField('curseur', 'Curseur invalide : altéré, ou émis pour un autre filtre.', 'requete');
      }
      apres = position.apres;
    }
    const page = await lireResultats(ctx.services.db, ctx.caller.organisationId, {
      apres,
      limite: input.limite,
      veilleId: input.veille ?? null,
      maintenant: ctx.services.now(),
    });
    const dernier = page.resultats.at(-1);
    return {
      resultats: page.resultats,
      a_jour: !page.reste,
      prochain_le: page.prochain,
      curseur_suivant: ctx.services.cursors.encode(scope, {
        apres: dernier ? Number(dernier.id) : apres,
      } satisfies PositionResultats),
    };
  },
});

export const veillesOperations = [veillesCreer, alertesCreer, veillesLister, veillesSupprimer, resultatsVeilles];
