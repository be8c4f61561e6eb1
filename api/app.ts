import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import pino from 'pino';
import type { Operation, Services } from '../domain/catalogue.ts';
import { OPERATIONS } from '../domain/operations.ts';
import { createPipeline, newRequestId, type Pipeline } from '../domain/invoke.ts';
import { createAccounts } from '../domain/platform/accounts.ts';
import { createTaskEnds } from '../domain/taches/fins.ts';
import type { Db } from '../db/client.ts';
import type { Config } from '../lib/config.ts';
import { registerAdmin } from './admin.ts';
import { registerDocs } from './docs.ts';
import { DOWNLOAD_PATHS, registerDownloads } from './downloads.ts';
import { createServices } from '../domain/services.ts';
import { MCP_PATHS, registerMcp } from './mcp.ts';
import { registerBatches } from './lots.ts';
import { createReadiness, type Readiness } from './readiness.ts';
import { buildOpenApi } from './openapi.ts';
import { API_PREFIX, registerOperations } from './operation-routes.ts';
import { clientErrorHandler, handleError, registerProblemHandlers, sendProblem } from './problems.ts';
import { ApiError } from '../domain/errors.ts';

declare module 'fastify' {
  interface FastifyInstance {
    pipeline: Pipeline;
  }
}

export interface AppDeps {
  config: Config;
  db: Db;
  operations?: Operation[];
  /** Overrides for tests (a fixed clock, a fake outbound client). */
  services?: Partial<Services>;
  /** What `/health` waits for; ready at once when absent. */
  readiness?: Readiness;
}

/**
 * One log line per request, written when it ends, with what was asked and what was answered, instead of Fastify's
 * two ("incoming request", then "request completed"): half the serialising per request, and the same facts.
 */
class OneLinePerRequest extends LogController {
  override incomingRequest() {}
  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply) {
    if (error)
      reply.log.error({ req: request, res: reply, err: error, responseTime: reply.elapsedTime }, 'request errored');
    else reply.log.info({ req: request, res: reply, responseTime: reply.elapsedTime }, 'request completed');
  }
}

/** The whole HTTP application; the process entry (api/main.ts) only configures and listens. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { config, db } = deps;
  const operations = deps.operations ?? OPERATIONS;
  const requestTimeoutMs = config.REQUEST_TIMEOUT_S * 1000;
  // Log lines are buffered and written to standard output by libuv's thread pool (pino's sync: false): a request
  // pays for serialising its lines, never for a write system call on the event loop. They leave in chunks of 8 KiB
  // or every 100 ms, whichever comes first: one write per line cost the event loop more than the line itself under
  // load. A clean stop writes what is left (onClose below); a process killed outright loses its last 100 ms of lines.
  const logs =
    config.LOG_LEVEL === 'silent'
      ? null
      : pino.destination({ dest: 1, sync: false, minLength: 8192, periodicFlush: 100 });
  const app = Fastify({
    logger: logs ? { level: config.LOG_LEVEL, stream: logs } : false,
    bodyLimit: config.BODY_LIMIT_BYTES,
    // A client that stalls while sending its headers or its body is cut (408) once the whole request has taken
    // longer than this; Node checks its connections every second, so the cut comes within one more second. Once
    // the request is received the bound no longer applies: a long operation answers in its own time.
    requestTimeout: requestTimeoutMs,
    http: {
      requestTimeout: requestTimeoutMs,
      headersTimeout: requestTimeoutMs,
      connectionsCheckingInterval: Math.min(1000, requestTimeoutMs),
    },
    clientErrorHandler: clientErrorHandler(config.REQUEST_TIMEOUT_S),
    genReqId: newRequestId,
    logController: new OneLinePerRequest(),
    requestIdHeader: false,
    return503OnClosing: true,
    // Long enough for every documented path parameter: the operation's own validation then says what is wrong.
    routerOptions: { maxParamLength: 1000 },
    // Errors of the router itself (bad URL, parameter too long) leave as problems like the others.
    frameworkErrors: (error, request, reply) => handleError(error, request, reply, config.BODY_LIMIT_BYTES),
  });
  // A callback, not an async function: a hook every request runs is spared a promise.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('Svc-Requete', request.id);
    done();
  });
  // The server is closed by then: every request's lines are in the buffer. One synchronous write, at the stop only.
  if (logs) app.addHook('onClose', async () => logs.flushSync());
  registerProblemHandlers(app, config.BODY_LIMIT_BYTES);
  // Bodies are JSON only: any other content type answers 415 type_contenu.
  app.removeContentTypeParser('text/plain');

  const taskEnds = createTaskEnds(db);
  // Before in-flight requests are awaited: a request waiting for a task's end answers at once with the task as it is.
  app.addHook('preClose', () => taskEnds.close());
  const services = await createServices(config, db, { taskEnds, ...deps.services });
  const accounts = createAccounts(db, { quotaMinute: config.DEFAULT_QUOTA_MINUTE });
  const pipeline = createPipeline({ operations, services, accounts });
  // The one pipeline of the app's operations, for the other adapters (MCP) and for tests calling `invoke`.
  app.decorate('pipeline', pipeline);
  app.addHook('onClose', () => pipeline.close());

  const readiness = deps.readiness ?? createReadiness();
  app.get('/health', async (request, reply) => {
    const attente = readiness.attente;
    if (attente) {
      reply.header('retry-after', '2');
      return sendProblem(request, reply, new ApiError('service_indisponible', `Chargement en cours : ${attente}.`));
    }
    await db.query('SELECT 1');
    return reply.send({ statut: 'ok' });
  });
  const openapi = buildOpenApi(operations, { ...DOWNLOAD_PATHS, ...MCP_PATHS });
  app.get(`${API_PREFIX}/openapi.json`, async () => openapi);
  registerDocs(app);
  registerDownloads(app, services);
  registerOperations(app, { operations, pipeline, services });
  registerBatches(app, { operations, pipeline });
  registerMcp(app, { operations, pipeline });
  if (config.ADMIN_TOKEN) {
    registerAdmin(app, {
      db,
      accounts,
      cursors: services.cursors,
      adminToken: config.ADMIN_TOKEN,
      onChange: () => pipeline.forget(),
    });
  }
  return app;
}
