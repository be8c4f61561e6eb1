import type { FastifyInstance, FastifyRequest } from 'fastify';
import { batchPath, LOT_MAX, type Operation } from '../domain/catalogue.ts';
import { ApiError } from '../domain/errors.ts';
import { newRequestId, type Admission, type Pipeline } from '../domain/invoke.ts';
import { accessRefusal, bearer } from '../domain/platform/authenticate.ts';
import { API_PREFIX } from './operation-routes.ts';
import { problemBody, rateLimitHeaders } from './problems.ts';

/** Elements of one batch served at once: their order is kept whatever order they end in. */
const EN_MEME_TEMPS = 4;

/**
 * The credits left after a batch: elements end in any order, and a batch only debits, so the lowest balance an
 * element saw is the one after the last debit.
 */
const plusBas = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.min(a, b));

/** One element of a batch's answer: the status it would get alone, its result or its problem. */
export interface ElementDeLot {
  statut: number;
  resultat: unknown;
  erreur: ReturnType<typeof problemBody> | null;
}

/**
 * An element as the operation reads it: a GET operation's input comes from a query string, so a number or a boolean
 * given in JSON is read as the query would give it.
 */
function entreeDe(operation: Operation, element: unknown): unknown {
  if (operation.method !== 'GET' || typeof element !== 'object' || element === null || Array.isArray(element)) {
    return element;
  }
  return Object.fromEntries(
    Object.entries(element).map(([k, v]) => [k, typeof v === 'number' || typeof v === 'boolean' ? String(v) : v]),
  );
}

/**
 * The batch variants (`lot` in a declaration): `POST <path>/lot` with `{"elements": [ … ]}`, 1 to LOT_MAX elements,
 * each the operation's flat input (path parameters, query or body fields), served in order as its own call through the
 * pipeline: its own checks of credits, cap and quota, its own price, the 24-hour rule, its own status. The batch as a
 * whole is refused only for what concerns it: the key, the scope, tier and sandbox of the operation, an unreadable or
 * malformed body, its size.
 */
export function registerBatches(app: FastifyInstance, deps: { operations: Operation[]; pipeline: Pipeline }) {
  for (const operation of deps.operations.filter((o) => o.lot)) {
    app.post(API_PREFIX + batchPath(operation), {
      onRequest: async (request) => {
        const refused = accessRefusal(await deps.pipeline.rights(bearer(request.headers.authorization)), operation);
        if (refused) throw refused;
      },
      handler: async (request, reply) => {
        const elements = elementsDe(request);
        const credential = bearer(request.headers.authorization);
        const reponses: ElementDeLot[] = new Array(elements.length);
        let debites = 0;
        let restants: number | null = null;
        let rate: Admission['rate'] | null = null;
        let suivant = 0;
        const servir = async () => {
          for (let i = suivant++; i < elements.length; i = suivant++) {
            const requete = newRequestId();
            try {
              const admission = await deps.pipeline.admit(credential, operation, requete);
              rate = admission.rate;
              restants = plusBas(restants, admission.restants);
              const answer = await deps.pipeline.run(admission, entreeDe(operation, elements[i]));
              debites += answer.credits.debites;
              restants = plusBas(restants, answer.credits.restants);
              reponses[i] = { statut: 200, resultat: answer.output, erreur: null };
            } catch (error) {
              const refus = error as ApiError;
              reponses[i] = {
                statut: refus.status,
                resultat: null,
                erreur: problemBody({ id: requete, url: request.url }, refus),
              };
            }
          }
        };
        await Promise.all(Array.from({ length: Math.min(EN_MEME_TEMPS, elements.length) }, servir));
        reply.header('Svc-Credits-Debites', debites);
        if (restants !== null) reply.header('Svc-Credits-Restants', restants);
        if (rate) reply.headers(rateLimitHeaders(rate));
        return reply.type('application/json').send({ elements: reponses, credits: { debites, restants } });
      },
    });
  }
}

/** The batch's elements, or a refusal of the whole batch when its body is not `{"elements": [1 to LOT_MAX items]}`. */
function elementsDe(request: FastifyRequest): unknown[] {
  const body = request.body as { elements?: unknown } | undefined;
  const elements = body && typeof body === 'object' && !Array.isArray(body) ? body.elements : undefined;
  if (!Array.isArray(elements) || elements.length < 1 || elements.length > LOT_MAX) {
    const message = `une liste de 1 à ${LOT_MAX} éléments est attendue`;
    throw new ApiError('parametres_invalides', `Le corps doit être {"elements": [ … ]} : ${message}.`, {
      erreurs: [{ champ: 'elements', emplacement: 'corps', message }],
    });
  }
  const extra = Object.keys(body as object).filter((k) => k !== 'elements');
  if (extra.length > 0) {
    throw new ApiError('parametres_invalides', `Champ(s) inconnu(s) : ${extra.join(', ')}.`, {
      erreurs: extra.map((champ) => ({ champ, emplacement: 'corps' as const, message: 'champ inconnu' })),
    });
  }
  return elements;
}
