import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Operation, Services } from '../domain/catalogue.ts';
import type { Admission, Invocation, Pipeline } from '../domain/invoke.ts';
import { bearer } from '../domain/platform/authenticate.ts';
import { rateLimitHeaders } from './problems.ts';

export { pathParams } from '../domain/catalogue.ts';

export const API_PREFIX = '/api/v1';

declare module 'fastify' {
  interface FastifyRequest {
    admission?: Admission;
  }
}

/** The flat input of an operation from the request: path parameters, then query (GET) or JSON body. */
function rawInput(operation: Operation, request: FastifyRequest): unknown {
  const params = request.params as Record<string, string>;
  if (operation.method === 'GET') return { ...(request.query as object), ...params };
  // No body at all is an empty object; a body that is JSON `null`, a list or a scalar is left for the pipeline to
  // refuse. A path parameter also sent in the body would be ambiguous: the path wins.
  const body = request.body === undefined ? {} : request.body;
  return typeof body === 'object' && body !== null && !Array.isArray(body) ? { ...body, ...params } : body;
}

/** The ETags of an If-None-Match header (weak ones compared as strong: a GET of the same answer). */
function ifNoneMatch(request: FastifyRequest): string[] {
  const header = request.headers['if-none-match'];
  if (request.method !== 'GET' || !header) return [];
  return header.split(',').map((tag) => tag.trim().replace(/^W\//, ''));
}

/**
 * Registers every operation of the catalogue as a route over the pipeline (domain/invoke.ts): the checks of the
 * error table run on the request's headers, before the body is read (Fastify's parser then checks the body); the
 * rest runs on the input. Only HTTP is here: status, headers, ETag / 304, Location, Accept.
 */
export function registerOperations(
  app: FastifyInstance,
  deps: { operations: Operation[]; pipeline: Pipeline; services: Services },
) {
  for (const operation of deps.operations) {
    app.route({
      method: operation.method,
      url: API_PREFIX + operation.path.replace(/\{(\w+)\}/g, ':$1'),
      onRequest: async (request) => {
        request.admission = await deps.pipeline.admit(bearer(request.headers.authorization), operation, request.id);
      },
      handler: async (request, reply) => {
        const answer = await deps.pipeline.run(request.admission!, rawInput(operation, request), {
          idempotencyKey: request.headers['idempotency-key'],
          known: ifNoneMatch(request),
        });
        return send(answer, request, reply, deps.services);
      },
    });
  }
}

async function send(answer: Invocation, request: FastifyRequest, reply: FastifyReply, services: Services) {
  // The output is read only where the answer needs it (a task's location, another representation): from the response
  // memory it is parsed back from bytes.
  const { operation, credits } = answer;
  reply.headers({
    ETag: answer.fingerprint,
    'Svc-Donnees-Du': answer.dataDate,
    'Svc-Age-Donnees': answer.dataAgeS,
    ...rateLimitHeaders(answer.rate),
    'Cache-Control': operation.cacheS > 0 ? `private, max-age=${operation.cacheS}` : 'no-store',
    'Svc-Credits-Debites': credits.debites,
  });
  if (credits.restants !== null) reply.header('Svc-Credits-Restants', credits.restants);
  if (answer.unchanged) return reply.code(304).send();
  if (operation.task) {
    // Starting a task answers 202 whatever `attendre` did: a client tells an ended task by `tache.statut`, and the
    // envelope then carries `resultat` or `erreur`. Reading a task (GET) answers 200.
    if (request.method === 'POST') {
      reply.code(202).header('Location', (answer.output as { tache: { resultat_url: string } }).tache.resultat_url);
    }
  } else if (operation.redirect) {
    reply.code(302).header('Location', operation.redirect(answer.output));
  } else if (operation.representation?.wanted(request.headers.accept, answer.output)) {
    const file = await operation.representation.read(services, answer.output);
    return reply.code(200).headers(file.headers).send(Buffer.from(file.bytes));
  }
  // The body's memory goes back to the pipeline's pool once its last byte has left (not when the connection is cut
  // before: Node may still hold it then, and the collector takes it).
  if (answer.release) reply.raw.once('finish', answer.release);
  return reply.type('application/json; charset=utf-8').send(answer.body);
}
