import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One scripted answer of the model server. */
export type ModelReply =
  /** A structured answer: `json` serialised as the assistant message content. */
  | { json: unknown }
  /** Raw assistant content (e.g. malformed JSON); `finishReason` defaults to stop. */
  | { content: string; finishReason?: 'stop' | 'length' | 'content_filter' }
  | { refusal: string }
  /** Tool calls (arguments as an object, or as raw text to test malformed ones), with optional text beside. */
  | { toolCalls: Array<{ name: string; arguments: unknown; id?: string }>; content?: string }
  /** An HTTP error; `body` defaults to an OpenAI-shaped error. */
  | { status: number; body?: unknown; headers?: Record<string, string> }
  | { delayMs: number; then: ModelReply }
  /** Never answers: the client's time-out must end the call. */
  | { hang: true };

/** The body of a Chat Completions request, as the client sent it. */
export type ChatRequestBody = Record<string, any>;

export type ModelHandler = (body: ChatRequestBody) => ModelReply | Promise<ModelReply>;

export interface ModelServer {
  /** Base URL for the SDK, ending in /v1. */
  url: string;
  /** Every chat completion request body received, in order. */
  requests: ChatRequestBody[];
  /** Replies served first, in order, before the handler is asked. */
  enqueue(...replies: ModelReply[]): void;
  setHandler(handler: ModelHandler | undefined): void;
  close(): Promise<void>;
}

export const MODEL_SERVER_MODEL = 'modele-test';

/** Every text of a chat request's messages, joined: what a handler searches to build an answer from the prompt. */
export function promptText(body: ChatRequestBody): string {
  const messages: any[] = Array.isArray(body.messages) ? body.messages : [];
  return messages
    .flatMap((m) => (typeof m.content === 'string' ? [m.content] : Array.isArray(m.content) ? m.content : []))
    .map((part) => (typeof part === 'string' ? part : part?.type === 'text' ? part.text : ''))
    .join('\n');
}

/** The images of a chat request's user messages, decoded from their data URLs (what the model was shown). */
export function imagesOf(body: ChatRequestBody): Array<{ mime: string; bytes: Buffer }> {
  const messages: any[] = Array.isArray(body.messages) ? body.messages : [];
  return messages
    .filter((m) => m.role === 'user' && Array.isArray(m.content))
    .flatMap((m) => m.content)
    .filter((part: any) => part?.type === 'image_url' && typeof part.image_url?.url === 'string')
    .map((part: any) => {
      const m = /^data:([^;,]+);base64,(.*)$/s.exec(part.image_url.url);
      if (!m) throw new Error(`Image sans data URL base64 : ${String(part.image_url.url).slice(0, 40)}`);
      return { mime: m[1], bytes: Buffer.from(m[2], 'base64') };
    });
}

/**
 * A scripted OpenAI-compatible server on 127.0.0.1 (random port): POST /v1/chat/completions answers from the queue,
 * then from the handler, else 500; GET /v1/models lists one model. `script` fills the queue or sets the handler.
 */
export async function startModelServer(script?: ModelReply[] | ModelHandler): Promise<ModelServer> {
  const queue: ModelReply[] = Array.isArray(script) ? [...script] : [];
  let handler: ModelHandler | undefined = typeof script === 'function' ? script : undefined;
  const requests: ChatRequestBody[] = [];
  const timers = new Set<NodeJS.Timeout>();
  let counter = 0;

  const sendJson = (
    res: http.ServerResponse,
    status: number,
    payload: unknown,
    headers: Record<string, string> = {},
  ) => {
    if (res.destroyed) return;
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(payload));
  };

  const errorBody = (message: string, type: string, code: string | null = null) => ({
    error: { message, type, param: null, code },
  });

  const completion = (body: ChatRequestBody, message: Record<string, unknown>, finishReason: string) => ({
    id: `chatcmpl-test-${++counter}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: typeof body.model === 'string' ? body.model : MODEL_SERVER_MODEL,
    choices: [{ index: 0, message: { role: 'assistant', ...message }, logprobs: null, finish_reason: finishReason }],
    usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 },
  });

  const serve = (res: http.ServerResponse, body: ChatRequestBody, reply: ModelReply): void => {
    if ('hang' in reply) return;
    if ('delayMs' in reply) {
      const timer = setTimeout(() => {
        timers.delete(timer);
        serve(res, body, reply.then);
      }, reply.delayMs);
      timers.add(timer);
      return;
    }
    if ('status' in reply) {
      const type =
        reply.status === 429 ? 'rate_limit_exceeded' : reply.status >= 500 ? 'server_error' : 'invalid_request_error';
      sendJson(res, reply.status, reply.body ?? errorBody(`Erreur simulée ${reply.status}`, type), reply.headers);
      return;
    }
    if ('toolCalls' in reply) {
      const tool_calls = reply.toolCalls.map((call, i) => ({
        id: call.id ?? `call_${counter + 1}_${i + 1}`,
        type: 'function',
        function: {
          name: call.name,
          arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
        },
      }));
      sendJson(res, 200, completion(body, { content: reply.content ?? null, refusal: null, tool_calls }, 'tool_calls'));
      return;
    }
    if ('refusal' in reply) {
      sendJson(res, 200, completion(body, { content: null, refusal: reply.refusal }, 'stop'));
      return;
    }
    const content = 'json' in reply ? JSON.stringify(reply.json) : reply.content;
    const finishReason = 'finishReason' in reply && reply.finishReason ? reply.finishReason : 'stop';
    sendJson(res, 200, completion(body, { content, refusal: null }, finishReason));
  };

  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (req.method === 'GET' && url.pathname === '/v1/models') {
      sendJson(res, 200, {
        object: 'list',
        data: [{ id: MODEL_SERVER_MODEL, object: 'model', created: 0, owned_by: 'tests' }],
      });
      return;
    }
    if (req.method !== 'POST' || url.pathname !== '/v1/chat/completions') {
      sendJson(
        res,
        404,
        errorBody(`${req.method} ${url.pathname} : inconnu du serveur de test`, 'invalid_request_error'),
      );
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      let body: ChatRequestBody;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        sendJson(res, 400, errorBody('Corps de requête JSON illisible', 'invalid_request_error'));
        return;
      }
      requests.push(body);
      const queued = queue.shift();
      const next: Promise<ModelReply> = queued
        ? Promise.resolve(queued)
        : handler
          ? Promise.resolve().then(() => handler!(body))
          : Promise.resolve({
              status: 500,
              body: errorBody(
                'Serveur de modèle de test : aucune réponse prévue (file vide, pas de handler)',
                'server_error',
                'no_scripted_reply',
              ),
            });
      next.then(
        (reply) => serve(res, body, reply),
        (error: unknown) =>
          sendJson(res, 500, errorBody(`Handler du serveur de test en échec : ${error}`, 'server_error')),
      );
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    enqueue: (...replies) => void queue.push(...replies),
    setHandler: (next) => void (handler = next),
    close: async () => {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      // Hanging replies keep their sockets open: close() would wait for them forever.
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

type Schema = Record<string, any>;

/** The least instance of a strict JSON schema: one item per list, the first value of an enum, null where allowed. */
function leastOf(schema: Schema, root: Schema): unknown {
  if (typeof schema.$ref === 'string') {
    const target = schema.$ref
      .replace(/^#\/?/, '')
      .split('/')
      .filter(Boolean)
      .reduce((node: Schema, key: string) => node[key.replaceAll('~1', '/').replaceAll('~0', '~')], root);
    return leastOf(target, root);
  }
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  const branches: Schema[] | undefined = schema.anyOf ?? schema.oneOf;
  if (branches) return leastOf(branches.find((b) => b.type === 'null') ?? branches[0], root);
  const types: string[] = Array.isArray(schema.type) ? schema.type : [schema.type];
  if (types.includes('null')) return null;
  switch (types[0]) {
    case 'object':
      return Object.fromEntries(
        Object.entries(schema.properties ?? {}).map(([k, v]) => [k, leastOf(v as Schema, root)]),
      );
    case 'array':
      return Array.from({ length: Math.max(1, schema.minItems ?? 0) }, () => leastOf(schema.items ?? {}, root));
    case 'number':
    case 'integer':
      return schema.minimum ?? schema.exclusiveMinimum ?? 0;
    case 'boolean':
      return false;
    default:
      return 'Texte du modèle de test.';
  }
}

/**
 * A model that answers any structured-output request with the least instance of its JSON schema: every reading runs
 * to its end, whatever the operation asks, without a script written for it.
 */
export function schemaReply(body: ChatRequestBody): ModelReply {
  const schema = body.response_format?.json_schema?.schema as Schema | undefined;
  return schema ? { json: leastOf(schema, schema) } : { content: 'Texte du modèle de test.' };
}
