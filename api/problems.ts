import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { ApiError, ERRORS, type ErrorCode, type FieldError } from '../domain/errors.ts';

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

export function problemBody(request: FastifyRequest, error: ApiError) {
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
  // Also set here: errors of the router itself happen before any hook has run.
  reply.header('Svc-Requete', request.id);
  return reply.code(error.status).type(PROBLEM_TYPE).send(problemBody(request, error));
}

/** Turns a zod failure into the field-by-field detail of a 400. */
export function fieldErrors(error: z.ZodError, locate: (field: string) => FieldError['emplacement']): FieldError[] {
  return error.issues.map((issue) => {
    const champ = issue.path
      .map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`))
      .join('');
    return { champ: champ || '(corps)', emplacement: locate(String(issue.path[0] ?? '')), message: issue.message };
  });
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
  if (error instanceof ApiError) return sendProblem(request, reply, error);
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
    // Any other refusal of the framework itself is a bad request, said as a problem like the others.
    return sendProblem(request, reply, new ApiError('parametres_invalides', 'Requête refusée : ' + error.message));
  }
  request.log.error({ err: error }, 'erreur interne');
  return sendProblem(
    request,
    reply,
    new ApiError('erreur_interne', `Erreur du service ; rien n’a été débité. Référence : ${request.id}.`),
  );
}

export function registerProblemHandlers(app: FastifyInstance, bodyLimit: number) {
  app.setErrorHandler((error: FastifyError, request, reply) => handleError(error, request, reply, bodyLimit));
  app.setNotFoundHandler((request, reply) =>
    sendProblem(
      request,
      reply,
      new ApiError('route_inconnue', `Aucune route ${request.method} ${request.url.split('?')[0]}.`),
    ),
  );
}
