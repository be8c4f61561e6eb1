import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { z } from 'zod';
import { ApiError, ERRORS, type ErrorCode, type RateFigures } from '../domain/errors.ts';
import { newRequestId } from '../domain/invoke.ts';

export const PROBLEM_TYPE = 'application/problem+json';

/** The problem+json body (RFC 9457 members, the stable `code`, the request id, and the field-by-field detail). */
export const ProblemSchema = z.object({
  type: z.string().describe('Référence de la documentation du code (`/docs/erreurs#<code>`).'),
  title: z.string(),
  status: z.number().int(),
  detail: z.string(),
  instance: z.string().describe('Chemin de la requête.'),
  code: z.string().describe('Code stable, à utiliser dans le code client.'),
  requete: z.string().describe('Identifiant de la requête, aussi dans l’en-tête Svc-Requete.'),
  erreurs: z
    .array(
      z.object({
        champ: z.string(),
        emplacement: z.enum(['chemin', 'requete', 'corps', 'entete']),
        message: z.string(),
      }),
    )
    .optional()
    .describe('Détail champ par champ (400 parametres_invalides).'),
});

/** The organisation's per-minute figures as the RateLimit-* headers of every served answer. */
export function rateLimitHeaders(rate: RateFigures) {
  return { 'RateLimit-Limit': rate.limit, 'RateLimit-Remaining': rate.remaining, 'RateLimit-Reset': rate.resetS };
}

export function problemBody(request: Pick<FastifyRequest, 'id' | 'url'>, error: ApiError) {
  return {
    type: `/docs/erreurs#${error.code}`,
    title: ERRORS[error.code].title,
    status: error.status,
    detail: error.message,
    instance: request.url.split('?')[0],
    code: error.code,
    requete: request.id,
    ...(error.erreurs ? { erreurs: error.erreurs } : {}),
  };
}

export function sendProblem(request: FastifyRequest, reply: FastifyReply, error: ApiError) {
  if (error.headers) reply.headers(error.headers);
  if (error.rate) reply.headers({ 'Retry-After': error.rate.resetS, ...rateLimitHeaders(error.rate) });
  // Also set here: errors of the router itself happen before any hook has run.
  reply.header('Svc-Requete', request.id);
  return reply.code(error.status).type(PROBLEM_TYPE).send(problemBody(request, error));
}

// Fastify's own errors at the body-reading stage, mapped to the stable codes.
const FASTIFY_CODES: Record<string, { code: ErrorCode; detail: string }> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: {
    code: 'type_contenu',
    detail: 'Le corps doit être envoyé en application/json.',
  },
  FST_ERR_ROUTE_MISSING_CONTENT_TYPE: { code: 'type_contenu', detail: 'En-tête Content-Type absent.' },
  FST_ERR_BAD_URL: { code: 'parametres_invalides', detail: 'Chemin de requête mal formé.' },
  FST_ERR_MAX_PARAM_LENGTH: { code: 'parametres_invalides', detail: 'Paramètre de chemin trop long.' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { code: 'corps_illisible', detail: 'Longueur de corps incohérente.' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { code: 'corps_illisible', detail: 'Le corps JSON est vide.' },
  FST_ERR_CTP_INVALID_JSON_BODY: { code: 'corps_illisible', detail: 'Le corps n’est pas un JSON lisible.' },
};

/** The one error handler: every failure leaves as problem+json; a 5xx never shows internals. */
export function handleError(error: FastifyError, request: FastifyRequest, reply: FastifyReply, bodyLimit: number) {
  if (error instanceof ApiError) {
    if (error.code === 'erreur_interne' && error.cause) request.log.error({ err: error.cause }, 'erreur interne');
    return sendProblem(request, reply, error);
  }
  const known = error.code ? FASTIFY_CODES[error.code] : undefined;
  if (known) return sendProblem(request, reply, new ApiError(known.code, known.detail));
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return sendProblem(
      request,
      reply,
      new ApiError('corps_trop_lourd', `Le corps dépasse la taille admise (${bodyLimit} octets).`),
    );
  }
  if (error instanceof SyntaxError && error.statusCode === 400) {
    return sendProblem(request, reply, new ApiError('corps_illisible', 'Le corps n’est pas un JSON lisible.'));
  }
  if (error.code?.startsWith('FST_') && error.statusCode && error.statusCode < 500) {
    // Any other refusal of the framework itself is a bad request, said as a problem like the others (its own
    // message is English: its code tells the rest).
    return sendProblem(request, reply, new ApiError('parametres_invalides', `Requête refusée (${error.code}).`));
  }
  request.log.error({ err: error }, 'erreur interne');
  return sendProblem(
    request,
    reply,
    new ApiError('erreur_interne', `Erreur du service ; rien n’a été débité. Référence : ${request.id}.`),
  );
}

/** A route's path as a pattern of the request paths it serves (`/webhooks/:id` → `/webhooks/[^/]+`). */
function pathPattern(url: string): RegExp {
  const segments = url.split('/').map((segment) => {
    if (segment.startsWith(':')) return '[^/]+';
    if (segment === '*') return '.*';
    return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  });
  return new RegExp(`^${segments.join('/')}$`);
}

export function registerProblemHandlers(app: FastifyInstance, bodyLimit: number) {
  app.setErrorHandler((error: FastifyError, request, reply) => handleError(error, request, reply, bodyLimit));
  // The methods of every path, to tell a known path asked with another method (405) from an unknown path (404).
  const routes: Array<{ pattern: RegExp; methods: string[] }> = [];
  app.addHook('onRoute', (route) => {
    routes.push({ pattern: pathPattern(route.url), methods: [route.method].flat() });
  });
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0];
    const allowed = [...new Set(routes.filter((r) => r.pattern.test(path)).flatMap((r) => r.methods))].sort();
    if (allowed.length > 0) {
      const allow = allowed.join(', ');
      return sendProblem(
        request,
        reply,
        new ApiError('methode_non_permise', `Méthode ${request.method} non permise sur ${path} : ${allow}.`, {
          headers: { Allow: allow },
        }),
      );
    }
    return sendProblem(request, reply, new ApiError('route_inconnue', `Aucune route ${request.method} ${path}.`));
  });
}

/** The stable code of a refusal of Node's HTTP parser, or of a request not received within the time-out. */
function clientProblem(error: { code?: string }, requestTimeoutS: number): ApiError {
  switch (error.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new ApiError(
        'requete_trop_lente',
        `Requête (en-têtes et corps) non reçue en entier dans les ${requestTimeoutS} s admises : connexion fermée.`,
      );
    case 'HPE_HEADER_OVERFLOW':
      return new ApiError('entetes_trop_lourds', 'La ligne de requête et les en-têtes dépassent la taille admise.');
    case 'HPE_INVALID_CONTENT_LENGTH':
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
      return new ApiError(
        'requete_illisible',
        'En-tête Content-Length invalide, répété, ou donné avec Transfer-Encoding.',
      );
    case 'HPE_INVALID_TRANSFER_ENCODING':
    case 'HPE_INVALID_CHUNK_SIZE':
      return new ApiError('requete_illisible', 'Transfer-Encoding ou découpage du corps invalide.');
    default:
      return new ApiError('requete_illisible', 'Requête HTTP mal formée.');
  }
}

/**
 * Fastify's `clientErrorHandler`: what Node's HTTP server refuses before any route runs (malformed request, headers
 * too large, request not received in time) is answered as a problem too, then the connection is closed.
 */
export function clientErrorHandler(requestTimeoutS: number) {
  return (error: Error & { code?: string; rawPacket?: unknown }, socket: Socket) => {
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    // Like Node's own handler: nothing is written once a response has begun on this connection (a 401 sent before
    // the body was read, say): a second status line would corrupt it.
    const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (!socket.writable || inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    const problem = clientProblem(error, requestTimeoutS);
    // The request line, when the parser got that far: its path is the problem's `instance`.
    const raw = Buffer.isBuffer(error.rawPacket) ? error.rawPacket.toString('latin1') : '';
    const target = /^[A-Z]+ (\/[^\s?]*)/.exec(raw)?.[1] ?? '/';
    const id = newRequestId();
    const body = JSON.stringify(problemBody({ id, url: target }, problem));
    const head = [
      `HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status]}`,
      `Content-Type: ${PROBLEM_TYPE}; charset=utf-8`,
      `Content-Length: ${Buffer.byteLength(body)}`,
      `Svc-Requete: ${id}`,
      'Connection: close',
    ];
    socket.end(`${head.join('\r\n')}\r\n\r\n${body}`, () => socket.destroy());
  };
}
