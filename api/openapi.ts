import { readFileSync } from 'node:fs';
import {
  batchPath,
  CreditsSchema,
  effectOf,
  LOT_MAX,
  operationId,
  pathParams,
  priceText,
  type Operation,
  type Tier,
} from '../domain/catalogue.ts';
import { ERRORS, type ErrorCode } from '../domain/errors.ts';
import { OPERATIONS_A_VENIR } from '../domain/operations.ts';
import { jsonSchema, servedSchema, type JsonSchema } from '../domain/json-schema.ts';
import { API_PREFIX } from './operation-routes.ts';
import { ProblemSchema } from './problems.ts';

const DESCRIPTION = readFileSync(new URL('./description.md', import.meta.url), 'utf8');

const integerHeader = (description: string) => ({ description, schema: { type: 'integer' } });
const SERVED_HEADERS = {
  ETag: { description: 'Empreinte de la réponse (If-None-Match → 304 non débité).', schema: { type: 'string' } },
  'Svc-Credits-Debites': integerHeader('Crédits débités par cet appel.'),
  'Svc-Credits-Restants': integerHeader('Crédits encore utilisables ce mois (absent dans le bac à sable).'),
  'Svc-Donnees-Du': { description: 'Date des données servies (ISO 8601).', schema: { type: 'string' } },
  'Svc-Age-Donnees': integerHeader('Âge des données servies, en secondes.'),
  'RateLimit-Limit': integerHeader('Appels permis par minute à l’organisation.'),
  'RateLimit-Remaining': integerHeader('Appels restant dans la minute en cours.'),
  'RateLimit-Reset': integerHeader('Secondes avant la minute suivante.'),
  'Svc-Requete': { description: 'Identifiant de la requête.', schema: { type: 'string' } },
};

/** The error codes an operation can answer, from what it declares: the common set plus its own. */
export function errorCodesOf(operation: Operation): ErrorCode[] {
  const codes: ErrorCode[] = [
    'parametres_invalides',
    'cle_absente',
    'cle_invalide',
    'organisation_suspendue',
    'portee_insuffisante',
    'palier_insuffisant',
    'quota_minute',
    'delai_depasse',
    'erreur_interne',
    'service_indisponible',
    // Refusals of the HTTP parser, before any route: any request may get them.
    'requete_illisible',
    'requete_trop_lente',
    'entetes_trop_lourds',
  ];
  if (operation.method !== 'GET') codes.push('type_contenu', 'corps_illisible', 'corps_trop_lourd');
  codes.push('hors_bac_a_sable');
  if (operation.credits > 0) codes.push('credits_insuffisants', 'plafond_cle');
  if (operation.task) codes.push('conflit', 'ressource_absente');
  return [...new Set([...codes, ...(operation.errors ?? [])])];
}

function operationObject(operation: Operation) {
  const inPath = new Set(pathParams(operation.path));
  const input = jsonSchema(operation.input, 'input');
  const properties = (input.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((input.required ?? []) as string[]);
  const parameters = Object.entries(properties)
    .filter(([name]) => inPath.has(name) || operation.method === 'GET')
    .map(([name, schema]) => ({
      name,
      in: inPath.has(name) ? 'path' : 'query',
      required: inPath.has(name) || required.has(name),
      description: typeof schema.description === 'string' ? schema.description : undefined,
      // An object in a query string (the datasets' `filtre`) is written `filtre[colonne][operateur]=valeur`.
      ...(!inPath.has(name) && schema.type === 'object' ? { style: 'deepObject', explode: true } : {}),
      schema,
    }));
  let requestBody: unknown;
  if (operation.method !== 'GET') {
    const bodyProps = Object.fromEntries(Object.entries(properties).filter(([name]) => !inPath.has(name)));
    const bodyRequired = [...required].filter((name) => !inPath.has(name));
    requestBody = {
      required: bodyRequired.length > 0,
      content: {
        'application/json': {
          schema: {
            ...input,
            properties: bodyProps,
            ...(bodyRequired.length ? { required: bodyRequired } : { required: undefined }),
          },
        },
      },
    };
  }
  const served: Record<string, unknown> = {
    'application/json': { schema: jsonSchema(servedSchema(operation), 'output') },
  };
  for (const type of operation.representation?.types ?? []) {
    served[type] = { schema: { type: 'string', contentMediaType: type } };
  }
  const responses: Record<string, unknown> = {};
  if (operation.task && operation.method === 'POST') {
    responses['202'] = {
      description:
        'Tâche acceptée : lire `Location` (ou `tache.resultat_url`), ou attendre le webhook. Toujours 202, même quand la tâche a fini pendant `attendre` : `tache.statut` le dit, et l’enveloppe porte alors `resultat` (`terminee`) ou `erreur` (`echouee`).',
      headers: {
        ...SERVED_HEADERS,
        Location: { description: 'Chemin du résultat de la tâche.', schema: { type: 'string' } },
      },
      content: served,
    };
  } else if (operation.redirect) {
    responses['302'] = {
      description: 'Redirection vers l’adresse du fichier (`Location`) ; le corps JSON décrit ce qui est servi.',
      headers: {
        ...SERVED_HEADERS,
        Location: {
          description: 'Adresse pré-signée du fichier, valable jusqu’à `expire_le`.',
          schema: { type: 'string' },
        },
      },
      content: served,
    };
  } else {
    responses['200'] = {
      description: operation.task
        ? 'État de la tâche : `resultat` rempli une fois `terminee`, `erreur` si `echouee`.'
        : 'Réponse servie.',
      headers: SERVED_HEADERS,
      content: served,
    };
  }
  if (operation.method === 'GET') {
    responses['304'] = { description: 'Non modifiée depuis l’ETag envoyé en If-None-Match ; rien n’est débité.' };
  }
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of errorCodesOf(operation)) {
    const status = ERRORS[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  for (const [status, codes] of [...byStatus].sort(([a], [b]) => a - b)) {
    responses[String(status)] = {
      description: `Problème : ${codes.map((c) => `\`${c}\``).join(', ')}.`,
      content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Probleme' } } },
    };
  }
  const meta = [
    `**Outil** \`${operation.tool}\` · **Crédits** ${priceText(operation)} · **Portée** \`${operation.scope}\` · **Palier** \`${operation.tier}\``,
    `**Bac à sable** ${operation.sandbox ? 'oui' : 'non'} · **Cache** ${operation.cacheS > 0 ? `${operation.cacheS} s` : 'jamais'} · **Délai** ${operation.timeoutS} s${operation.personalKey ? ' · **Clé personnelle requise**' : ''}`,
  ].join('  \n');
  return {
    operationId: operationId(operation),
    'x-svc-outil': operation.tool,
    summary: operation.summary,
    description: `${meta}\n\n${operation.description}`,
    tags: [operation.scope],
    security: [{ cle: [] }],
    ...(parameters.length ? { parameters } : {}),
    ...(requestBody ? { requestBody } : {}),
    responses,
    'x-svc-credits': operation.credits,
    'x-svc-unite': operation.unit,
    'x-svc-palier-minimal': operation.tier,
    'x-svc-portee': operation.scope,
    'x-svc-bac-a-sable': operation.sandbox,
    'x-svc-cache-s': operation.cacheS,
    'x-svc-delai-s': operation.timeoutS,
    'x-svc-cle-personnelle': operation.personalKey ?? false,
    'x-svc-effet': effectOf(operation),
  };
}

/**
 * The batch variant of an operation declared with `lot` (api/lots.ts): not an operation of the catalogue of its own
 * (no `x-svc-outil`), each element being a call of the operation, at its price.
 */
function batchOperationObject(operation: Operation) {
  const element = jsonSchema(operation.input, 'input');
  const result = jsonSchema(operation.output, 'output');
  const problem = { $ref: '#/components/schemas/Probleme' };
  const codes = errorCodesOf({ ...operation, method: 'POST' }).filter(
    (code) => !['credits_insuffisants', 'plafond_cle', 'quota_minute', 'delai_depasse'].includes(code),
  );
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) byStatus.set(ERRORS[code].status, [...(byStatus.get(ERRORS[code].status) ?? []), code]);
  const responses: Record<string, unknown> = {
    '200': {
      description: 'Un élément de réponse par élément demandé, dans leur ordre.',
      content: {
        'application/json': {
          schema: {
            type: 'object',
            required: ['elements', 'credits'],
            properties: {
              elements: {
                type: 'array',
                items: {
                  type: 'object',
                  required: ['statut', 'resultat', 'erreur'],
                  properties: {
                    statut: { type: 'integer', description: 'Le statut HTTP qu’aurait l’élément seul.' },
                    resultat: { anyOf: [result, { type: 'null' }], description: 'Sa réponse, sans bloc credits.' },
                    erreur: { anyOf: [problem, { type: 'null' }], description: 'Son problème, en cas de refus.' },
                  },
                },
              },
              credits: jsonSchema(CreditsSchema, 'output'),
            },
          },
        },
      },
    },
  };
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
    responses[String(status)] = {
      description: `Lot refusé en entier : ${list.map((c) => `\`${c}\``).join(', ')}.`,
      content: { 'application/problem+json': { schema: problem } },
    };
  }
  return {
    operationId: `${operationId(operation)}_lot`,
    summary: `Lot : ${operation.summary}`,
    description: `Jusqu’à ${LOT_MAX} appels de \`${operation.tool}\` en une requête : \`{"elements": [ … ]}\`, chaque élément étant l’entrée de l’opération (paramètres de chemin, de requête ou champs du corps, en un objet). Chaque élément est servi comme un appel à lui seul : mêmes contrôles de crédits, de plafond et de quota, même prix (${priceText(operation)}), même règle des 24 h, sous le délai de l’opération (${operation.timeoutS} s), quatre à la fois ; la réponse garde leur ordre, avec pour chacun le statut qu’il aurait eu seul, son résultat ou son problème. \`credits.debites\` est la somme des éléments. Le lot n’est refusé en entier que pour ce qui le concerne : la clé, la portée, le palier et le bac à sable de l’opération, un corps illisible, mal formé ou de plus de ${LOT_MAX} éléments. Le lot n’est pas un outil MCP : un client MCP envoie plusieurs \`tools/call\` dans un même lot JSON-RPC.`,
    tags: [operation.scope],
    security: [{ cle: [] }],
    requestBody: {
      required: true,
      content: {
        'application/json': {
          schema: {
            type: 'object',
            required: ['elements'],
            additionalProperties: false,
            properties: { elements: { type: 'array', minItems: 1, maxItems: LOT_MAX, items: element } },
          },
        },
      },
    },
    responses,
    'x-svc-credits': operation.credits,
    'x-svc-unite': operation.unit,
    'x-svc-palier-minimal': operation.tier,
    'x-svc-portee': operation.scope,
  };
}

/** The version of the interface: the description's `info.version`, and the MCP server's. */
export const API_VERSION = '1.2.0';

/** Tags that are not scopes: the routes outside the catalogue. */
const TAGS: Record<string, string> = { mcp: 'Model Context Protocol : les opérations en outils.' };

/** A route outside the catalogue still states its price and tier, as every operation of the description does. */
export type ExtraPaths = Record<
  string,
  Record<string, Record<string, unknown> & { 'x-svc-credits': number; 'x-svc-palier-minimal': Tier }>
>;

/** The section of the description that lists the specification's operations not served yet. */
function aVenir(): string {
  if (OPERATIONS_A_VENIR.length === 0) return '';
  const lignes = OPERATIONS_A_VENIR.map((o) => `- \`${o.outil}\` (\`${o.methode} ${API_PREFIX}${o.chemin}\`)`);
  return `\n## Pas encore servies\n\nOpérations de la spécification que ce service ne sert pas encore (leur chemin répond 404) :\n\n${lignes.join('\n')}\n`;
}

/**
 * The OpenAPI 3.1.0 description, generated from the catalogue: one declaration per operation, no other source;
 * `extraPaths` are the few routes outside it (the signed download links of generated files).
 */
export function buildOpenApi(operations: Operation[], extraPaths: ExtraPaths = {}, serverUrl = '/') {
  const paths: Record<string, Record<string, unknown>> = { ...extraPaths };
  for (const operation of operations) {
    const path = API_PREFIX + operation.path;
    paths[path] ??= {};
    paths[path][operation.method.toLowerCase()] = operationObject(operation);
    if (operation.lot) paths[API_PREFIX + batchPath(operation)] = { post: batchOperationObject(operation) };
  }
  const extraTags = Object.values(extraPaths).flatMap((item) =>
    Object.values(item).flatMap((op) => (Array.isArray(op.tags) ? (op.tags as string[]) : [])),
  );
  return {
    openapi: '3.1.0',
    // OpenAPI 3.1's own dialect: JSON Schema 2020-12 plus the OAS vocabulary. Said explicitly with the very URI
    // renderers compare to; the bare 2020-12 meta-schema URI makes Swagger UI show every visitor a warning box.
    jsonSchemaDialect: 'https://spec.openapis.org/oas/3.1/dialect/base',
    info: {
      title: 'API des données immobilières',
      version: API_VERSION,
      description: `${DESCRIPTION}${aVenir()}`,
      license: { name: 'Propriétaire', identifier: 'LicenseRef-Proprietary' },
    },
    servers: [{ url: serverUrl }],
    tags: [...new Set([...operations.map((o) => o.scope), ...extraTags])]
      .sort()
      .map((name) => ({ name, description: TAGS[name] ?? `Portée \`${name}\`.` })),
    security: [{ cle: [] }],
    paths,
    components: {
      securitySchemes: {
        cle: {
          type: 'http',
          scheme: 'bearer',
          description: 'Clé d’API `pk_live_…` (données réelles) ou `pk_test_…` (bac à sable figé).',
        },
      },
      schemas: { Probleme: jsonSchema(ProblemSchema, 'output') },
    },
  };
}
