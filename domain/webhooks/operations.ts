import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { transaction, type Queryable } from '../../db/client.ts';
import { randomToken } from '../../lib/crypto.ts';
import { OutboundError } from '../../lib/outbound-http.ts';
import { defineOperation } from '../catalogue.ts';
import { ApiError, invalidField } from '../errors.ts';
import { buildDeliveryBody, sendDelivery } from './deliveries.ts';
import { SIGNATURE_GUIDE } from './signature.ts';

export const LISTING_GENRES = [
  'nouvelle',
  'analyse',
  'reanalyse',
  'baisse_prix',
  'hausse_prix',
  'retrait',
  'reactivation',
  'multi_agences',
] as const;
export const SUBSCRIBABLE_GENRES = [
  ...LISTING_GENRES,
  'tache.terminee',
  'tache.echouee',
  'veille.resultat',
  'alerte.resultat',
] as const;
export const PROPERTY_TYPES = ['apartment', 'house', 'immeuble'] as const;
const DELIVERY_STATUSES = ['a_livrer', 'en_cours', 'livree', 'echec', 'epuisee'] as const;
const LATEST_DELIVERIES = 20;

const COMMON = {
  credits: 0,
  unit: 'appel',
  scope: 'webhooks',
  tier: 'data',
  sandbox: false,
  cacheS: 0,
} as const;

const distinct = (values: readonly string[]) => new Set(values).size === values.length;

export const FiltresShape = {
  insee: z
    .array(
      z.string().regex(/^(\d{5}|2[AB]\d{3})$/, 'Code INSEE de commune attendu (5 caractères, ex. 33063 ou 2A004).'),
    )
    .min(1, 'Liste vide : omettez le filtre.')
    .max(50, '50 communes au plus.'),
  cp: z
    .array(z.string().regex(/^\d{5}$/, 'Code postal attendu (5 chiffres).'))
    .min(1, 'Liste vide : omettez le filtre.')
    .max(50, '50 codes postaux au plus.'),
  departement: z
    .array(
      z
        .string()
        .regex(/^(0[1-9]|1\d|2[1-9AB]|[3-8]\d|9[0-5]|97[1-6])$/, 'Code de département attendu (ex. 33, 2A, 974).'),
    )
    .min(1, 'Liste vide : omettez le filtre.')
    .max(20, '20 départements au plus.'),
  type_bien: z
    .array(z.enum(PROPERTY_TYPES, { message: 'Valeurs possibles : apartment, house, immeuble.' }))
    .min(1, 'Liste vide : omettez le filtre.')
    .max(3, '3 types au plus.')
    .refine(distinct, 'Type de bien en double.'),
  prix_min: z.number().int('Prix entier en euros attendu.').min(0, 'Prix positif ou nul attendu.'),
  prix_max: z.number().int('Prix entier en euros attendu.').min(0, 'Prix positif ou nul attendu.'),
};

/** The filters' fields, all optional: a subscription's, and the place, type and price of a watch's criteria. */
export const CHAMPS_FILTRES = {
  insee: FiltresShape.insee.optional(),
  cp: FiltresShape.cp.optional(),
  departement: FiltresShape.departement.optional(),
  type_bien: FiltresShape.type_bien.optional(),
  prix_min: FiltresShape.prix_min.optional(),
  prix_max: FiltresShape.prix_max.optional(),
};

/** The check that a price range is not reversed, as a `.refine` takes it. */
export const PRIX_ORDONNES: [
  (f: { prix_min?: number; prix_max?: number }) => boolean,
  { message: string; path: string[] },
] = [
  (f) => f.prix_min === undefined || f.prix_max === undefined || f.prix_min <= f.prix_max,
  { message: 'prix_max doit être supérieur ou égal à prix_min.', path: ['prix_max'] },
];

export const FiltresSchema = z
  .strictObject(CHAMPS_FILTRES)
  .refine(...PRIX_ORDONNES)
  .describe('Filtres des genres d’annonces, tous facultatifs et combinés par ET ; les valeurs d’une liste par OU.');

/** What the filters of a subscription (and the criteria of a watch) read of a listing event. */
export interface LieuAnnonce {
  insee: string | null;
  code_postal: string | null;
  departement: string | null;
  type: (typeof PROPERTY_TYPES)[number];
  prix: number | null;
}

/** The listing's type as the filters name it. */
export const TYPE_FILTRE = { appartement: 'apartment', maison: 'house', immeuble: 'immeuble' } as const;

/**
 * The filters' semantics, in one place: every filter given must pass (AND), a list passes on any of its values (OR);
 * an unknown place or price passes no filter on it.
 */
export function passeFiltres(f: z.infer<typeof FiltresSchema>, lieu: LieuAnnonce): boolean {
  const dans = (liste: readonly string[] | undefined, v: string | null) =>
    liste === undefined || (v !== null && liste.includes(v));
  return (
    dans(f.insee, lieu.insee) &&
    dans(f.cp, lieu.code_postal) &&
    dans(f.departement, lieu.departement) &&
    dans(f.type_bien, lieu.type) &&
    (f.prix_min === undefined || (lieu.prix !== null && lieu.prix >= f.prix_min)) &&
    (f.prix_max === undefined || (lieu.prix !== null && lieu.prix <= f.prix_max))
  );
}

const FiltresOutputSchema = z.object({
  insee: z.array(z.string()).optional(),
  cp: z.array(z.string()).optional(),
  departement: z.array(z.string()).optional(),
  type_bien: z.array(z.enum(PROPERTY_TYPES)).optional(),
  prix_min: z.number().int().optional(),
  prix_max: z.number().int().optional(),
});

export const DeliverySummarySchema = z.object({
  id: z.uuid().describe('Identifiant de la livraison (en-tête Svc-Livraison, champ id du corps).'),
  le: z.iso.datetime().describe('Moment où l’événement est survenu et la livraison a été créée.'),
  genre: z.string(),
  statut: z.enum(DELIVERY_STATUSES),
  tentatives: z.number().int(),
  reponse: z.number().int().nullable().describe('Dernier code HTTP reçu ; null si aucune réponse.'),
});

export const WebhookSchema = z.object({
  id: z.uuid(),
  url: z.string(),
  genres: z.array(z.string()),
  filtres: FiltresOutputSchema,
  actif: z.boolean(),
  echecs_consecutifs: z.number().int(),
  coupe_le: z.iso.datetime().nullable(),
  motif_coupure: z.string().nullable(),
  cree_le: z.iso.datetime(),
  dernieres_livraisons: z
    .array(DeliverySummarySchema)
    .describe('Les 20 dernières livraisons, la plus récente d’abord.'),
});
export type Webhook = z.infer<typeof WebhookSchema>;

const IdSchema = z.object({ id: z.uuid({ message: 'Identifiant d’abonnement attendu (uuid).' }) });

interface WebhookRow {
  id: string;
  url: string;
  genres: string[];
  filtres: Webhook['filtres'];
  actif: boolean;
  echecs_consecutifs: number;
  coupe_le: Date | null;
  motif_coupure: string | null;
  cree_le: Date;
}

interface DeliveryRow {
  id: string;
  webhook_id: string;
  le: Date;
  genre: string;
  statut: (typeof DELIVERY_STATUSES)[number];
  tentatives: number;
  reponse: number | null;
}

const WEBHOOK_COLUMNS = 'id, url, genres, filtres, actif, echecs_consecutifs, coupe_le, motif_coupure, cree_le';

function toWebhook(row: WebhookRow, deliveries: DeliveryRow[]): Webhook {
  return {
    id: row.id,
    url: row.url,
    genres: row.genres,
    filtres: row.filtres,
    actif: row.actif,
    echecs_consecutifs: row.echecs_consecutifs,
    coupe_le: row.coupe_le?.toISOString() ?? null,
    motif_coupure: row.motif_coupure,
    cree_le: row.cree_le.toISOString(),
    dernieres_livraisons: deliveries.map((d) => ({
      id: d.id,
      le: d.le.toISOString(),
      genre: d.genre,
      statut: d.statut,
      tentatives: d.tentatives,
      reponse: d.reponse,
    })),
  };
}

async function latestDeliveries(db: Queryable, webhookIds: string[]): Promise<Map<string, DeliveryRow[]>> {
  const byWebhook = new Map<string, DeliveryRow[]>(webhookIds.map((id) => [id, []]));
  if (webhookIds.length === 0) return byWebhook;
  // One index range per subscription (LATERAL ... LIMIT), however long its history.
  const { rows } = await db.query<DeliveryRow>(
    `SELECT l.* FROM unnest($1::uuid[]) AS w(id)
       CROSS JOIN LATERAL (
         SELECT id, rang, webhook_id, le, genre, statut, tentatives, reponse FROM livraisons
          WHERE webhook_id = w.id ORDER BY le DESC, rang DESC LIMIT ${LATEST_DELIVERIES}) l
      ORDER BY l.le DESC, l.rang DESC`,
    [webhookIds],
  );
  for (const row of rows) byWebhook.get(row.webhook_id)?.push(row);
  return byWebhook;
}

function absent(): ApiError {
  return new ApiError('ressource_absente', 'Aucun abonnement webhook de votre organisation ne porte cet identifiant.');
}

const DELIVERY_DOC = `
### Livraisons
Chaque livraison est un \`POST\` JSON vers l’URL, avec les en-têtes \`Content-Type: application/json\`,
\`Svc-Signature: t=<secondes Unix>,v1=<HMAC-SHA256 hexadécimal de "<t>.<corps brut>">\` (clé : le secret),
\`Svc-Livraison\` (identifiant de la livraison, le même à chaque tentative : dédoublonnez avec) et \`Svc-Genre\`.

Le corps a toujours la même forme, test compris :

\`\`\`json
{ "id": "<uuid de la livraison>", "genre": "baisse_prix", "le": "2025-01-31T08:00:00.000Z", "donnees": { } }
\`\`\`

\`le\` est le moment où l’événement est survenu (UTC). \`donnees\` : l’événement du flux d’annonces pour les genres
d’annonces ; la tâche pour \`tache.terminee\` et \`tache.echouee\` ; le résultat de la veille ou de l’alerte pour
\`veille.resultat\` et \`alerte.resultat\` ; \`{ "webhook_id", "message" }\` pour \`test\`.

**Crédits et ordre.** Chaque événement d’annonce et chaque résultat de veille ou d’alerte reçu est débité 1 crédit
(tarif \`evenement\`, opération \`livraison_webhook\` du relevé, \`requete\` : l’identifiant de la livraison), une seule
fois, au moment où l’abonné répond 2xx ; une livraison qui échoue pour de bon ne coûte rien. Sans crédits, rien n’est
envoyé : la tentative est comptée dans la livraison (reprise au même calendrier) mais pas contre l’abonnement. Les
fins de tâches ne coûtent rien. Un abonnement ne reçoit aucun événement écrit avant sa création. Les événements
d’annonces et les résultats partent par la file de l’abonnement, dans l’ordre où ils sont venus, un à la fois ; après
un échec, la file attend la reprise de cette livraison avant d’envoyer la suite (un abonné en panne est sondé, pas
inondé), et reprend dans l’ordre. Les événements d’annonces portent l’annonce au format liste, sans \`id_portail\` ni
\`lien\` (la portée lien_origine est celle d’une clé, pas d’un abonnement).

Seule une réponse 2xx dans les 10 secondes vaut réception ; les redirections ne sont jamais suivies (un 3xx est un
échec). Après un échec, nouvelles tentatives 1 min, 5 min, 30 min, 2 h puis 12 h plus tard, chacune signée à nouveau
avec un horodatage frais. Chaque tentative échouée compte dans \`echecs_consecutifs\`, une réussite le remet à 0 ;
le 50ᵉ échec consécutif coupe l’abonnement (\`actif\` false, \`coupe_le\`, \`motif_coupure\`) : plus rien n’est
envoyé jusqu’à un test réussi (\`POST /webhooks/{id}/test\`).

L’adresse est contrôlée à nouveau à chaque tentative, sur l’adresse IP réellement jointe : un nom qui se met à
désigner une adresse privée fait échouer la livraison.`;

export const webhooksCreer = defineOperation({
  ...COMMON,
  tool: 'webhooks_creer',
  method: 'POST',
  effect: 'ajout',
  path: '/webhooks',
  timeoutS: 4,
  summary: 'Abonner une URL aux événements',
  description: `Abonne une URL https aux événements du flux d’annonces, à la fin des opérations asynchrones de
l’organisation et aux résultats de ses veilles et alertes. Répond le \`webhook\`, son \`secret\` de signature
(\`whsec_\` suivi de 32 caractères, **montré cette seule fois**) et \`signature\`, la marche à suivre pour vérifier
une livraison.

### Règles
- \`url\` : https, 500 caractères au plus, sans identifiants ; une adresse IP écrite doit être publique : boucle
  locale, réseaux privés (10/8, 172.16/12, 192.168/16), lien local et métadonnées de nuage (169.254/16), CGNAT
  (100.64/10), multicast, plages réservées et leurs équivalents IPv6 (::1, fc00::/7, fe80::/10, formes IPv4 dans
  IPv6) sont refusés. Refus : 400 \`parametres_invalides\` sur \`url\`. Un nom n'est pas résolu à la création (le
  service ne résout pas un nom pour le seul plaisir d'un refus : ce serait un canal vers un serveur de noms) : à
  chaque livraison, **chacune** de ses adresses doit être publique, sinon la livraison échoue sans rien envoyer.
- \`genres\` : 1 à 10, distincts, parmi ${SUBSCRIBABLE_GENRES.join(', ')}. \`test\` n’est pas abonnable.
- \`filtres\` : pour les genres d’annonces seulement (${LISTING_GENRES.join(', ')}) ; clés \`insee\` (≤ 50),
  \`cp\` (≤ 50), \`departement\` (≤ 20), \`type_bien\` (≤ 3 parmi apartment, house, immeuble), \`prix_min\`,
  \`prix_max\` (euros, entiers ≥ 0, \`prix_min\` ≤ \`prix_max\`), toute autre clé est refusée. Listes non vides ;
  les filtres se combinent par ET, les valeurs d’une même liste par OU. Des filtres sans aucun genre d’annonces sont
  refusés (400 sur \`filtres\`) : ils ne filtreraient rien.
- Le nombre d’abonnements est limité par l’offre (\`max\` de \`GET /webhooks\`) ; au-delà, **409 \`conflit\`** :
  supprimez un abonnement ou demandez une extension. Les abonnements supprimés ne comptent plus.
${DELIVERY_DOC}`,
  errors: ['conflit'],
  input: z.object({
    url: z.string().trim().min(1, 'URL https attendue.').max(500, '500 caractères au plus.'),
    genres: z
      .array(z.enum(SUBSCRIBABLE_GENRES, { message: `Genres possibles : ${SUBSCRIBABLE_GENRES.join(', ')}.` }))
      .min(1, 'Au moins un genre.')
      .max(10, '10 genres au plus.')
      .refine(distinct, 'Genre en double.'),
    filtres: FiltresSchema.optional(),
  }),
  output: z.object({
    webhook: WebhookSchema,
    secret: z.string().describe('Secret de signature des livraisons, montré cette seule fois.'),
    signature: z.string().describe('Comment vérifier une livraison, pas à pas.'),
  }),
  async handler(input, ctx) {
    const { db, outbound, now } = ctx.services;
    try {
      await outbound.checkUrl(input.url, { resolve: false });
    } catch (error) {
      if (error instanceof OutboundError) throw invalidField('url', error.message);
      throw error;
    }
    const filtres = input.filtres ?? {};
    if (
      Object.keys(filtres).length > 0 &&
      !input.genres.some((g) => (LISTING_GENRES as readonly string[]).includes(g))
    ) {
      throw invalidField(
        'filtres',
        `Les filtres ne s’appliquent qu’aux genres d’annonces (${LISTING_GENRES.join(', ')}).`,
      );
    }
    const secret = `whsec_${randomToken(32)}`;
    const organisationId = ctx.caller.organisationId;
    const row = await transaction(db, async (client) => {
      // The organisation row is the lock: two concurrent creations cannot both take the last place.
      const org = await client.query<{ max_webhooks: number }>(
        'SELECT max_webhooks FROM organisations WHERE id = $1 FOR UPDATE',
        [organisationId],
      );
      const max = org.rows[0]?.max_webhooks ?? 0;
      const count = await client.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM webhooks WHERE organisation_id = $1 AND supprime_le IS NULL',
        [organisationId],
      );
      if (count.rows[0].n >= max) {
        throw new ApiError(
          'conflit',
          max === 0
            ? 'Votre offre ne comprend pas d’abonnement webhook.'
            : `Votre offre permet ${max} abonnement(s) webhook, tous utilisés : supprimez-en un (POST /webhooks/{id}) ou demandez une extension.`,
        );
      }
      const inserted = await client.query<WebhookRow>(
        `INSERT INTO webhooks (organisation_id, url, genres, filtres, secret, cree_le)
         VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${WEBHOOK_COLUMNS}`,
        [organisationId, input.url, input.genres, JSON.stringify(filtres), secret, now()],
      );
      return inserted.rows[0];
    });
    return { webhook: toWebhook(row, []), secret, signature: SIGNATURE_GUIDE };
  },
});

export const webhooksLister = defineOperation({
  ...COMMON,
  tool: 'webhooks',
  method: 'GET',
  path: '/webhooks',
  timeoutS: 4,
  summary: 'Lister les abonnements webhook',
  description: `Les abonnements de l’organisation, du plus ancien au plus récent, **sans leur secret** (montré
seulement à la création), avec leur état (\`actif\`, \`echecs_consecutifs\`, \`coupe_le\`, \`motif_coupure\`) et
leurs 20 dernières livraisons, la plus récente d’abord. Dans une livraison, \`le\` est le moment où l’événement est
survenu, \`tentatives\` le nombre de tentatives faites, \`reponse\` le dernier code HTTP reçu (null si aucune
réponse) ; \`id\` est celui de l’en-tête \`Svc-Livraison\`. Les abonnements supprimés n’apparaissent plus.
\`max\` est le nombre d’abonnements permis par l’offre.`,
  input: z.object({}),
  output: z.object({
    webhooks: z.array(WebhookSchema),
    max: z.number().int().describe('Nombre d’abonnements permis par l’offre.'),
  }),
  async handler(_input, ctx) {
    const { db } = ctx.services;
    const organisationId = ctx.caller.organisationId;
    const [org, subscriptions] = await Promise.all([
      db.query<{ max_webhooks: number }>('SELECT max_webhooks FROM organisations WHERE id = $1', [organisationId]),
      db.query<WebhookRow>(
        `SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE organisation_id = $1 AND supprime_le IS NULL ORDER BY cree_le, id`,
        [organisationId],
      ),
    ]);
    const deliveries = await latestDeliveries(
      db,
      subscriptions.rows.map((w) => w.id),
    );
    return {
      webhooks: subscriptions.rows.map((w) => toWebhook(w, deliveries.get(w.id) ?? [])),
      max: org.rows[0]?.max_webhooks ?? 0,
    };
  },
});

export const webhooksSupprimer = defineOperation({
  ...COMMON,
  tool: 'webhooks_supprimer',
  method: 'POST',
  effect: 'ecriture',
  path: '/webhooks/{id}',
  timeoutS: 4,
  summary: 'Supprimer un abonnement webhook',
  description: `Supprime l’abonnement et annule ses livraisons en attente (\`a_livrer\`, \`en_cours\`, \`echec\`) :
aucune nouvelle tentative n’est faite ; seule une tentative déjà partie au moment de la suppression peut encore
arriver. Le secret est effacé, l’abonnement n’apparaît plus dans \`GET /webhooks\` et libère sa place dans \`max\`.
Le corps est un objet JSON vide (\`{}\`). Un identifiant inconnu, déjà supprimé ou d’une autre organisation répond
404 \`ressource_absente\`.`,
  errors: ['ressource_absente'],
  input: IdSchema,
  output: z.object({ id: z.uuid(), supprime: z.boolean() }),
  async handler(input, ctx) {
    const { db, now } = ctx.services;
    const at = now();
    const deleted = await transaction(db, async (client) => {
      const { rowCount } = await client.query(
        `UPDATE webhooks SET supprime_le = $3, secret = NULL
          WHERE id = $1 AND organisation_id = $2 AND supprime_le IS NULL`,
        [input.id, ctx.caller.organisationId, at],
      );
      if (rowCount === 0) return false;
      await client.query(
        `UPDATE livraisons SET statut = 'annulee', maj_le = $2
          WHERE webhook_id = $1 AND statut IN ('a_livrer', 'en_cours', 'echec')`,
        [input.id, at],
      );
      return true;
    });
    if (!deleted) throw absent();
    return { id: input.id, supprime: true };
  },
});

export const webhooksTester = defineOperation({
  ...COMMON,
  tool: 'webhooks_tester',
  method: 'POST',
  // Each call sends a delivery.
  effect: 'ajout',
  path: '/webhooks/{id}/test',
  timeoutS: 15,
  summary: 'Envoyer une livraison de test',
  description: `Envoie tout de suite une livraison signée de genre \`test\`, une seule fois, sans nouvelle tentative,
avec 10 secondes pour répondre. Corps :
\`{ "id", "genre": "test", "le", "donnees": { "webhook_id", "message" } }\`, la forme de toutes les livraisons.
Le corps de la requête est un objet JSON vide (\`{}\`).

Réponse : \`id\` de la livraison de test (celui de l’en-tête \`Svc-Livraison\`), \`reussi\` (le destinataire a
répondu 2xx), \`statut_http\` (null si aucune réponse), \`duree_ms\`, \`erreur\` (la raison en clair, null en cas de
réussite) et \`reactive\`. Un test réussi sur un abonnement coupé le rétablit : \`actif\` true,
\`echecs_consecutifs\` 0, \`coupe_le\` et \`motif_coupure\` null, \`reactive\` true. Autrement, un test ne change
pas \`echecs_consecutifs\`. La livraison de test figure dans \`dernieres_livraisons\`. Un identifiant inconnu,
supprimé ou d’une autre organisation répond 404 \`ressource_absente\`.`,
  errors: ['ressource_absente'],
  input: IdSchema,
  output: z.object({
    id: z.uuid().describe('Identifiant de la livraison de test (en-tête Svc-Livraison).'),
    reussi: z.boolean(),
    statut_http: z.number().int().nullable(),
    duree_ms: z.number().int(),
    erreur: z.string().nullable(),
    reactive: z.boolean(),
  }),
  async handler(input, ctx) {
    const { db, outbound, now } = ctx.services;
    const { rows } = await db.query<{ url: string; secret: string }>(
      'SELECT url, secret FROM webhooks WHERE id = $1 AND organisation_id = $2 AND supprime_le IS NULL',
      [input.id, ctx.caller.organisationId],
    );
    const subscription = rows[0];
    if (!subscription) throw absent();

    const delivery = {
      id: randomUUID(),
      genre: 'test',
      le: now(),
      donnees: {
        webhook_id: input.id,
        message: 'Livraison de test : si la signature se vérifie avec votre secret, votre point de réception est prêt.',
      },
    };
    await db.query(
      `INSERT INTO livraisons (id, webhook_id, genre, statut, tentatives, le, maj_le, payload)
       VALUES ($1, $2, 'test', 'en_cours', 0, $3, $3, $4)`,
      [delivery.id, input.id, delivery.le, JSON.stringify(delivery.donnees)],
    );
    const result = await sendDelivery(outbound, {
      url: subscription.url,
      secret: subscription.secret,
      id: delivery.id,
      genre: delivery.genre,
      body: buildDeliveryBody(delivery),
      now: now(),
      signal: ctx.signal,
    });
    const at = now();
    await db.query(
      `UPDATE livraisons SET statut = $2, tentatives = 1, reponse = $3, erreur = $4, maj_le = $5
        WHERE id = $1 AND statut = 'en_cours'`,
      [delivery.id, result.reussi ? 'livree' : 'echec', result.statut_http, result.erreur, at],
    );
    let reactive = false;
    if (result.reussi) {
      const { rowCount } = await db.query(
        `UPDATE webhooks SET actif = true, echecs_consecutifs = 0, coupe_le = NULL, motif_coupure = NULL
          WHERE id = $1 AND NOT actif AND supprime_le IS NULL`,
        [input.id],
      );
      reactive = rowCount === 1;
    }
    return { id: delivery.id, ...result, reactive };
  },
});

export const webhookOperations = [webhooksCreer, webhooksLister, webhooksSupprimer, webhooksTester];
