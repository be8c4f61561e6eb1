import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createHash } from 'node:crypto';
import { parseInput, priceOf, type Operation, type Services } from '../domain/catalogue.ts';
import { ApiError, type FieldError } from '../domain/errors.ts';
import { debit } from '../domain/platform/ledger.ts';
import { liveIsDemonstration } from '../domain/qualite.ts';
import type { Authenticated, Authenticator } from './authenticate.ts';
import { fieldErrors } from './problems.ts';

export const API_PREFIX = '/api/v1';

declare module 'fastify' {
  interface FastifyRequest {
    svc?: Authenticated;
  }
}

/** Path parameter names of a catalogue path (`/webhooks/{id}/test` → ['id']). */
export function pathParams(path: string): string[] {
  return [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
}

function locator(operation: Operation) {
  const inPath = new Set(pathParams(operation.path));
  return (field: string): FieldError['emplacement'] =>
    inPath.has(field) ? 'chemin' : operation.method === 'GET' ? 'requete' : 'corps';
}

/** The flat input of an operation from the request: path parameters, then query (GET) or JSON body. */
function rawInput(operation: Operation, request: FastifyRequest): unknown {
  const params = request.params as Record<string, string>;
  if (operation.method === 'GET') return { ...(request.query as object), ...params };
  // No body at all is an empty object; a body that is JSON `null`, a list or a scalar is not an object.
  const body = request.body === undefined ? {} : request.body;
  if (typeof body !== 'object' || Array.isArray(body) || body === null) {
    throw new ApiError('parametres_invalides', 'Le corps doit être un objet JSON.', {
      erreurs: [{ champ: '(corps)', emplacement: 'corps', message: 'objet JSON attendu' }],
    });
  }
  // A path parameter also sent in the body would be ambiguous: the path wins.
  return { ...(body as object), ...params };
}

function idempotencyKey(request: FastifyRequest): string | undefined {
  const key = request.headers['idempotency-key'];
  if (key === undefined) return undefined;
  if (typeof key !== 'string' || !/^[\x21-\x7e]{1,255}$/.test(key)) {
    throw new ApiError('parametres_invalides', 'Idempotency-Key : 1 à 255 caractères ASCII visibles.', {
      erreurs: [{ champ: 'Idempotency-Key', emplacement: 'entete', message: '1 à 255 caractères ASCII visibles' }],
    });
  }
  return key;
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : 1));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The operation's time-out; for a task, counted after the wait the client asked for (`attendre`). */
function timeoutMsOf(operation: Operation, input: unknown): number {
  const wait = operation.task ? Number((input as { attendre?: number }).attendre ?? 0) : 0;
  return (operation.timeoutS + wait) * 1000;
}

async function withTimeout<T>(
  operation: Operation,
  timeoutMs: number,
  run: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      reject(
        new ApiError(
          'delai_depasse',
          `Le calcul dépasse le délai de l’opération (${operation.timeoutS} s) ; rien n’a été débité.`,
        ),
      );
    }, timeoutMs);
  });
  try {
    return await Promise.race([run(controller.signal), expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** A result with its serialised payload (without `credits`) and its fingerprint, the ETag. */
interface Result {
  output: unknown;
  payload: string;
  etag: string;
}

function toResult(operation: Operation, output: unknown): Result {
  const payload = JSON.stringify(output);
  const digest = createHash('sha256').update(operation.tool).update('\0').update(payload).digest('base64url');
  return { output, payload, etag: `"${digest.slice(0, 27)}"` };
}

/** Results kept in memory for the operation's cache duration (never for personal or organisation-bound data). */
function createResponseCache() {
  const entries = new Map<string, { result: Result; until: number }>();
  return {
    get(id: string) {
      const hit = entries.get(id);
      if (hit && hit.until > Date.now()) return hit.result;
      if (hit) entries.delete(id);
      return undefined;
    },
    set(id: string, result: Result, seconds: number) {
      if (entries.size > 20_000) entries.clear();
      entries.set(id, { result, until: Date.now() + seconds * 1000 });
    },
  };
}

const DAY_MS = 86_400_000;

/**
 * Responses this process already served (and billed) per organisation, by fingerprint: an identical response within
 * 24 h is not debited, and knowing it here spares the ledger a round trip. The ledger (reponses_servies) stays the
 * reference for what other instances served.
 */
function createServedMemory() {
  const served = new Map<string, number>();
  return {
    seen: (id: string, now: number) => (served.get(id) ?? 0) > now - DAY_MS,
    note(id: string, now: number) {
      if (served.size > 200_000) served.clear();
      served.set(id, now);
    },
  };
}

/**
 * Registers every operation of the catalogue as a route, with the pipeline of DESIGN.md section 3: authentication
 * (onRequest, before the body is read), body checks (Fastify's parser), parameters, the handler under its time-out,
 * then ETag / 304, billing and the headers of every served response.
 */
export function registerOperations(
  app: FastifyInstance,
  deps: { operations: Operation[]; auth: Authenticator; services: Services; sharedCache: (op: Operation) => boolean },
) {
  const cache = createResponseCache();
  const served = createServedMemory();
  for (const operation of deps.operations) {
    const locate = locator(operation);
    app.route({
      method: operation.method,
      url: API_PREFIX + operation.path.replace(/\{(\w+)\}/g, ':$1'),
      onRequest: async (request) => {
        request.svc = await deps.auth.authenticate(request, operation);
      },
      handler: async (request, reply) => {
        const svc = request.svc!;
        const parsed = parseInput(operation, rawInput(operation, request));
        if (!parsed.success) {
          const erreurs = fieldErrors(parsed.error, locate);
          throw new ApiError(
            'parametres_invalides',
            `Paramètres invalides : ${erreurs.map((e) => e.champ).join(', ')}.`,
            {
              erreurs,
            },
          );
        }
        const input = parsed.data;
        // Live answers kept while the live data was the demonstration are never served once it is gone.
        const donnees = svc.caller.sandbox
          ? 'test'
          : (await liveIsDemonstration(deps.services.db))
            ? 'demonstration'
            : 'live';
        const cacheId =
          operation.cacheS > 0 && deps.sharedCache(operation)
            ? `${operation.tool}|${donnees}|${canonical(input)}`
            : null;
        let result = cacheId ? cache.get(cacheId) : undefined;
        if (!result) {
          const output = await withTimeout(operation, timeoutMsOf(operation, input), (signal) =>
            operation.handler(input, {
              caller: svc.caller,
              requestId: request.id,
              idempotencyKey: idempotencyKey(request),
              signal,
              services: deps.services,
            }),
          );
          result = toResult(operation, output);
          if (cacheId) cache.set(cacheId, result, operation.cacheS);
        }
        return serve(operation, result, request, reply, { ...deps, served });
      },
    });
  }
}

async function serve(
  operation: Operation,
  { output, payload, etag }: Result,
  request: FastifyRequest,
  reply: FastifyReply,
  deps: { auth: Authenticator; services: Services; served: ReturnType<typeof createServedMemory> },
) {
  const svc = request.svc!;
  const now = deps.services.now();
  const dataDate = operation.dataDate?.(output as never) ?? now.toISOString();
  const ageS = Math.max(0, Math.floor((now.getTime() - Date.parse(dataDate)) / 1000)) || 0;
  reply.headers({
    ETag: etag,
    'Svc-Donnees-Du': dataDate,
    'Svc-Age-Donnees': ageS,
    'RateLimit-Limit': svc.rate.limit,
    'RateLimit-Remaining': svc.rate.remaining,
    'RateLimit-Reset': svc.rate.resetS,
    'Cache-Control': operation.cacheS > 0 ? `private, max-age=${operation.cacheS}` : 'no-store',
  });

  const ifNoneMatch = request.headers['if-none-match'];
  if (
    request.method === 'GET' &&
    ifNoneMatch &&
    ifNoneMatch.split(',').some((t) => t.trim().replace(/^W\//, '') === etag)
  ) {
    reply.headers({ 'Svc-Credits-Debites': 0 });
    if (svc.restants !== null) reply.header('Svc-Credits-Restants', svc.restants);
    return reply.code(304).send();
  }

  if (operation.task) {
    // The envelope carries the task's own credits: reserved at its start, settled by the task itself.
    const { credits, tache } = output as {
      credits: { debites: number; restants: number | null };
      tache: { resultat_url: string };
    };
    reply.header('Svc-Credits-Debites', credits.debites);
    if (credits.restants !== null) reply.header('Svc-Credits-Restants', credits.restants);
    // Starting a task answers 202 whatever `attendre` did: a client tells an ended task by `tache.statut`, and the
    // envelope then carries `resultat` or `erreur`. Reading a task (GET) answers 200.
    if (request.method === 'POST') reply.header('Location', tache.resultat_url);
    return reply
      .code(request.method === 'POST' ? 202 : 200)
      .type('application/json; charset=utf-8')
      .send(payload);
  }

  let debites = 0;
  let restants = svc.restants;
  const price = svc.caller.sandbox ? 0 : priceOf(operation, output);
  const servedId = `${svc.caller.organisationId}|${etag}`;
  if (price > 0 && !deps.served.seen(servedId, now.getTime())) {
    const result = await debit(deps.services.db, {
      organisationId: svc.caller.organisationId,
      cleId: svc.caller.cleId,
      genre: 'debit',
      credits: price,
      operation: operation.tool,
      requete: request.id,
      empreinte: etag,
    });
    if (result.issue === 'credits_insuffisants') {
      throw new ApiError(
        'credits_insuffisants',
        `Il reste ${result.restants} crédits ; cette réponse en coûte ${price}.`,
      );
    }
    if (result.issue === 'plafond_cle') {
      throw new ApiError('plafond_cle', 'Plafond mensuel de la clé atteint.');
    }
    debites = result.debites;
    restants = result.restants;
    deps.served.note(servedId, now.getTime());
    deps.auth.noteDebit(svc.caller.organisationId, svc.caller.cleId, debites, restants);
  }
  reply.header('Svc-Credits-Debites', debites);
  if (restants !== null) reply.header('Svc-Credits-Restants', restants);
  if (operation.representation?.wanted(request.headers.accept, output)) {
    const file = await operation.representation.read(deps.services, output);
    return reply.code(200).headers(file.headers).send(Buffer.from(file.bytes));
  }
  const credits = JSON.stringify({ debites, restants });
  const body = payload === '{}' ? `{"credits":${credits}}` : `${payload.slice(0, -1)},"credits":${credits}}`;
  return reply.code(200).type('application/json; charset=utf-8').send(body);
}
