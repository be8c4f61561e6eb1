import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { z } from 'zod';
import type { Config } from './config.ts';

/** A part of a user message: text, or an image the model can see (when it can). */
export type ModelPart = { type: 'text'; text: string } | { type: 'image'; mime: string; base64: string };

export interface ModelRequest<T> {
  system: string;
  user: string | ModelPart[];
  /** The structured output asked for (json_schema, strict). */
  schema: z.ZodType<T>;
  schemaName: string;
  signal?: AbortSignal;
  timeoutMs?: number;
}

/** A message of a conversation with tools, as Chat Completions takes it. */
export type ModelMessage = OpenAI.Chat.Completions.ChatCompletionMessageParam;

/** A tool the model may call: its name, what it does, its arguments as JSON Schema. */
export interface ModelTool {
  name: string;
  description: string;
  parameters: JsonSchema;
}

/** A call the model asks for; `arguments` as it wrote them (JSON text, to be validated). */
export interface ModelToolCall {
  id: string;
  name: string;
  arguments: string;
}

export interface ConversationRequest {
  messages: ModelMessage[];
  tools: ModelTool[];
  /** false: the model must answer now, without calling a tool. */
  toolsAllowed: boolean;
  signal?: AbortSignal;
  timeoutMs?: number;
}

/** One turn of the model: its text, and the tool calls it asks for (several at once allowed). */
export interface ModelTurn {
  content: string | null;
  toolCalls: ModelToolCall[];
}

/** An OpenAI-compatible model, reached through the openai SDK (Chat Completions, structured outputs). */
export interface Model {
  /** The model name, as reported in results (`lecture.modele`). */
  name: string;
  complete<T>(request: ModelRequest<T>): Promise<T>;
  /** A turn of a conversation with tools (the Hub's agent). */
  converse(request: ConversationRequest): Promise<ModelTurn>;
}

export type ModelErrorKind = 'delai' | 'indisponible' | 'reponse_invalide' | 'refus' | 'configuration';

/** A failure of the model: `retryable` says whether trying again later can succeed (timeouts, 5xx, 429). */
export class ModelError extends Error {
  readonly kind: ModelErrorKind;
  readonly retryable: boolean;
  /** How long the server asked to wait before trying again (Retry-After of a 429 or 503), when it said. */
  readonly retryAfterMs: number | null;
  constructor(
    kind: ModelErrorKind,
    message: string,
    retryable: boolean,
    options?: { cause?: unknown; retryAfterMs?: number | null },
  ) {
    super(message, options);
    this.name = 'ModelError';
    this.kind = kind;
    this.retryable = retryable;
    this.retryAfterMs = options?.retryAfterMs ?? null;
  }
}

/** A JSON Schema document, as plain data. */
export type JsonSchema = { [keyword: string]: unknown };

// Keywords a strict-mode grammar cannot honour or that are meaningless once every property is required. They are
// dropped rather than refused because the zod schema validates the answer afterwards anyway.
const DROPPED_KEYWORDS = new Set([
  '$schema',
  '$id',
  '$comment',
  'default',
  'examples',
  'readOnly',
  'writeOnly',
  'minLength',
  'maxLength',
  'minProperties',
  'maxProperties',
  'uniqueItems',
  'contentEncoding',
  'contentMediaType',
]);

// Constructs strict mode cannot express at all: dropping them would change what the schema means.
const REFUSED_KEYWORDS = new Set([
  'allOf',
  'not',
  'if',
  'then',
  'else',
  'patternProperties',
  'propertyNames',
  'dependencies',
  'dependentRequired',
  'dependentSchemas',
  'unevaluatedProperties',
  'unevaluatedItems',
  'contains',
  'minContains',
  'maxContains',
  'prefixItems',
  'additionalItems',
]);

/** The string formats OpenAI's strict mode documents; others are dropped (zod still checks them). */
const STRICT_FORMATS = new Set(['date-time', 'time', 'date', 'duration', 'email', 'hostname', 'ipv4', 'ipv6', 'uuid']);

const TYPE_KEYWORDS = ['type', 'anyOf', 'enum', '$ref'];

/**
 * The JSON Schema `schema` adapted to OpenAI structured outputs in strict mode: every object closed
 * (`additionalProperties: false`) with all its properties required, optional properties made nullable, `const` as a
 * one-value `enum`, `oneOf` as `anyOf`, unsupported keywords dropped. Throws on what strict mode cannot express
 * (open objects and records, tuples, intersections, untyped values, a root that is not an object).
 */
export function toStrictJsonSchema(schema: JsonSchema): JsonSchema {
  const strict = strictNode(schema, '#');
  if (strict.type !== 'object') {
    throw new Error('Schéma strict : la racine doit être un objet (type "object", sans anyOf).');
  }
  return strict;
}

function strictNode(node: unknown, path: string): JsonSchema {
  if (!isRecord(node)) throw new Error(`Schéma strict : ${path} n'est pas un schéma objet.`);
  if ('anyOf' in node && 'oneOf' in node) throw new Error(`Schéma strict : ${path} combine anyOf et oneOf.`);
  if (node.additionalProperties !== undefined && node.additionalProperties !== false) {
    throw new Error(
      `Schéma strict : ${path} est un objet ouvert ou un dictionnaire, que le mode strict n'accepte pas.`,
    );
  }
  const out: JsonSchema = {};
  const supportedFormat = typeof node.format === 'string' && STRICT_FORMATS.has(node.format);
  for (const [keyword, value] of Object.entries(node)) {
    if (DROPPED_KEYWORDS.has(keyword)) continue;
    if (REFUSED_KEYWORDS.has(keyword)) {
      throw new Error(`Schéma strict : ${path} utilise « ${keyword} », que le mode strict n'accepte pas.`);
    }
    switch (keyword) {
      case 'format':
        if (supportedFormat) out.format = value;
        break;
      case 'pattern':
        // zod derives a pattern from each format: JS-specific regexes that some grammar engines reject.
        if (node.format === undefined) out.pattern = value;
        break;
      case 'minimum':
      case 'maximum':
        // zod bounds every integer by the safe-integer range: noise for the model.
        if (Math.abs(value as number) !== Number.MAX_SAFE_INTEGER) out[keyword] = value;
        break;
      case 'const':
        out.enum = [value];
        break;
      case 'anyOf':
      case 'oneOf':
        out.anyOf = asArray(value, path, keyword).map((branch, i) => strictNode(branch, `${path}/${keyword}/${i}`));
        break;
      case 'items':
        if (Array.isArray(value))
          throw new Error(`Schéma strict : ${path} est un tuple, que le mode strict n'accepte pas.`);
        out.items = strictNode(value, `${path}/items`);
        break;
      case 'properties':
      case 'definitions':
      case '$defs':
        if (!isRecord(value)) throw new Error(`Schéma strict : ${path}/${keyword} n'est pas un objet.`);
        out[keyword] = Object.fromEntries(
          Object.entries(value).map(([name, child]) => [name, strictNode(child, `${path}/${keyword}/${name}`)]),
        );
        break;
      case 'required':
      case 'additionalProperties':
        break;
      default:
        out[keyword] = value;
    }
  }
  if (isObjectSchema(node)) {
    const properties = (out.properties ?? {}) as Record<string, JsonSchema>;
    const required = new Set(Array.isArray(node.required) ? (node.required as string[]) : []);
    out.properties = Object.fromEntries(
      Object.entries(properties).map(([name, child]) => [name, required.has(name) ? child : nullable(child)]),
    );
    out.required = Object.keys(properties);
    out.additionalProperties = false;
  }
  if (!TYPE_KEYWORDS.some((keyword) => keyword in out)) {
    throw new Error(`Schéma strict : ${path} ne dit pas son type (valeur libre), que le mode strict n'accepte pas.`);
  }
  return out;
}

function isObjectSchema(node: JsonSchema): boolean {
  return node.type === 'object' || (Array.isArray(node.type) && node.type.includes('object')) || 'properties' in node;
}

/** Strict mode has no optional properties: the model answers null instead, turned back into an absence before zod. */
function nullable(schema: JsonSchema): JsonSchema {
  if (allowsNull(schema, undefined)) return schema;
  const primitive = ['string', 'number', 'integer', 'boolean'];
  if (typeof schema.type === 'string' && primitive.includes(schema.type)) {
    const out: JsonSchema = { ...schema, type: [schema.type, 'null'] };
    if (Array.isArray(schema.enum)) out.enum = [...schema.enum, null];
    return out;
  }
  if (Array.isArray(schema.anyOf)) return { ...schema, anyOf: [...schema.anyOf, { type: 'null' }] };
  const { description, title, ...rest } = schema;
  return {
    anyOf: [rest, { type: 'null' }],
    ...(description === undefined ? {} : { description }),
    ...(title === undefined ? {} : { title }),
  };
}

function allowsNull(schema: unknown, root: JsonSchema | undefined, seen = new Set<unknown>()): boolean {
  if (!isRecord(schema) || seen.has(schema)) return false;
  seen.add(schema);
  if (schema.type === 'null' || (Array.isArray(schema.type) && schema.type.includes('null'))) return true;
  if (Array.isArray(schema.enum) && schema.enum.includes(null)) return true;
  if ('const' in schema && schema.const === null) return true;
  if (root && typeof schema.$ref === 'string') return allowsNull(resolveRef(schema.$ref, root), root, seen);
  return [schema.anyOf, schema.oneOf].some(
    (branches) => Array.isArray(branches) && branches.some((b) => allowsNull(b, root, seen)),
  );
}

/**
 * `value` (a model's answer to the strict form of `schema`) with the nulls of optional, non-nullable properties
 * removed, so that zod sees them absent, as the original schema means.
 */
export function dropNullOptionals(value: unknown, schema: JsonSchema): unknown {
  return dropNulls(value, schema, schema, 0);
}

function dropNulls(value: unknown, schema: unknown, root: JsonSchema, depth: number): unknown {
  if (depth > 64 || value === null || typeof value !== 'object') return value;
  const candidates = flattenBranches(schema, root, new Set());
  if (Array.isArray(value)) {
    const items = candidates.find((c) => isRecord(c.items))?.items;
    return items === undefined ? value : value.map((item) => dropNulls(item, items, root, depth + 1));
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  const shape = candidates.find((c) => isRecord(c.properties) && keys.every((k) => k in (c.properties as object)));
  if (!shape) return value;
  const properties = shape.properties as Record<string, unknown>;
  const required = new Set(Array.isArray(shape.required) ? shape.required : []);
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const child = record[key];
    if (child === null && !required.has(key) && !allowsNull(properties[key], root)) continue;
    out[key] = dropNulls(child, properties[key], root, depth + 1);
  }
  return out;
}

function flattenBranches(schema: unknown, root: JsonSchema, seen: Set<unknown>): JsonSchema[] {
  if (!isRecord(schema) || seen.has(schema)) return [];
  seen.add(schema);
  if (typeof schema.$ref === 'string') return flattenBranches(resolveRef(schema.$ref, root), root, seen);
  const branches = [schema.anyOf, schema.oneOf].flatMap((b) => (Array.isArray(b) ? b : []));
  return [schema, ...branches.flatMap((branch) => flattenBranches(branch, root, seen))];
}

function resolveRef(ref: string, root: JsonSchema): unknown {
  if (!ref.startsWith('#')) return undefined;
  const tokens = ref
    .slice(1)
    .split('/')
    .filter(Boolean)
    .map((t) => decodeURIComponent(t).replaceAll('~1', '/').replaceAll('~0', '~'));
  let node: unknown = root;
  for (const token of tokens) node = isRecord(node) ? node[token] : undefined;
  return node;
}

function isRecord(value: unknown): value is JsonSchema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function asArray(value: unknown, path: string, keyword: string): unknown[] {
  if (!Array.isArray(value)) throw new Error(`Schéma strict : ${path}/${keyword} n'est pas une liste.`);
  return value;
}

interface ResponseSchemas {
  /** Sent to the model. */
  strict: JsonSchema;
  /** What zod accepts, to read the model's nulls back. */
  input: JsonSchema;
}

const schemaCache = new WeakMap<z.ZodType, ResponseSchemas>();

function responseSchemas(schema: z.ZodType): ResponseSchemas {
  let schemas = schemaCache.get(schema);
  if (!schemas) {
    // The model writes what zod then parses: its input side (before transforms and defaults).
    const input = z.toJSONSchema(schema, { target: 'draft-7', io: 'input' }) as JsonSchema;
    schemas = { strict: toStrictJsonSchema(input), input };
    schemaCache.set(schema, schemas);
  }
  return schemas;
}

export interface OpenAiModelOptions {
  /** Default: the SDK's (OpenAI's API). */
  baseURL?: string;
  /** Local servers usually need none: a placeholder is sent then. */
  apiKey?: string;
  model: string;
  /** Default time-out of one request, overridden per request by `ModelRequest.timeoutMs`. */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 120_000;
const PLACEHOLDER_API_KEY = 'sans-cle';

/** A `Model` over any OpenAI-compatible Chat Completions endpoint, with structured outputs in strict mode. */
export function createOpenAiModel(options: OpenAiModelOptions): Model {
  const defaultTimeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const client = new OpenAI({
    // null, not undefined: the SDK would otherwise read OPENAI_BASE_URL itself, behind the configuration's back.
    baseURL: options.baseURL ?? null,
    apiKey: options.apiKey ?? PLACEHOLDER_API_KEY,
    // Retries belong to Temporal, which sees every attempt and spaces them.
    maxRetries: 0,
    timeout: defaultTimeoutMs,
    // At debug level the SDK logs request bodies, i.e. document content: OPENAI_LOG must not turn that on.
    logLevel: 'warn',
  });
  const name = options.model;

  return {
    name,
    async complete<T>(request: ModelRequest<T>): Promise<T> {
      const { signal } = request;
      if (signal?.aborted) throw abortReason(signal);
      let schemas: ResponseSchemas;
      try {
        schemas = responseSchemas(request.schema);
      } catch (error) {
        const reason = `Schéma de réponse ${request.schemaName} inutilisable : ${errorText(error)}`;
        throw new ModelError('configuration', reason, false, { cause: error });
      }

      const timeout = request.timeoutMs ?? defaultTimeoutMs;
      let completion: OpenAI.Chat.Completions.ChatCompletion;
      try {
        completion = await client.chat.completions.create(
          {
            model: name,
            messages: [
              { role: 'system', content: request.system },
              {
                role: 'user',
                content: typeof request.user === 'string' ? request.user : request.user.map(toContentPart),
              },
            ],
            response_format: {
              type: 'json_schema',
              json_schema: { name: request.schemaName, strict: true, schema: schemas.strict },
            },
          },
          { signal, timeout },
        );
      } catch (error) {
        throw toModelError(error, signal, timeout);
      }

      const { choice, message } = answered(completion);
      const content = message?.content;
      if (typeof content !== 'string' || content.trim() === '') {
        throw invalid(`réponse vide (finish_reason ${choice?.finish_reason ?? 'absent'})`);
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(content);
      } catch (error) {
        const reason =
          choice?.finish_reason === 'length' ? 'réponse tronquée (finish_reason length)' : 'JSON illisible';
        throw invalid(reason, error);
      }
      const result = await request.schema.safeParseAsync(dropNullOptionals(parsed, schemas.input));
      if (!result.success) {
        // Paths and zod's messages only: the values may be document content.
        const issues = result.error.issues
          .slice(0, 5)
          .map((issue) => `${issue.path.join('.') || '(racine)'} : ${issue.message}`);
        throw invalid(`non conforme au schéma ${request.schemaName} (${issues.join(' ; ')})`, result.error);
      }
      return result.data;
    },

    async converse(request: ConversationRequest): Promise<ModelTurn> {
      const { signal } = request;
      if (signal?.aborted) throw abortReason(signal);
      const timeout = request.timeoutMs ?? defaultTimeoutMs;
      let completion: OpenAI.Chat.Completions.ChatCompletion;
      try {
        completion = await client.chat.completions.create(
          {
            model: name,
            messages: request.messages,
            ...(request.tools.length > 0
              ? {
                  tools: request.tools.map((t) => ({
                    type: 'function' as const,
                    function: { name: t.name, description: t.description, parameters: t.parameters },
                  })),
                  tool_choice: request.toolsAllowed ? ('auto' as const) : ('none' as const),
                  parallel_tool_calls: true,
                }
              : {}),
          },
          { signal, timeout },
        );
      } catch (error) {
        throw toModelError(error, signal, timeout);
      }
      const { choice, message } = answered(completion);
      const toolCalls = (message?.tool_calls ?? []).flatMap((call) =>
        call.type === 'function' ? [{ id: call.id, name: call.function.name, arguments: call.function.arguments }] : [],
      );
      const content = typeof message?.content === 'string' ? message.content : null;
      if (toolCalls.length === 0 && !content?.trim()) {
        throw invalid(`réponse vide (finish_reason ${choice?.finish_reason ?? 'absent'})`);
      }
      return { content, toolCalls };
    },
  };
}

/** The model named by the configuration, or null when none is (OPENAI_MODEL unset). */
export function modelFromConfig(
  config: Pick<Config, 'OPENAI_BASE_URL' | 'OPENAI_API_KEY' | 'OPENAI_MODEL'>,
): Model | null {
  if (!config.OPENAI_MODEL) return null;
  return createOpenAiModel({
    baseURL: config.OPENAI_BASE_URL,
    apiKey: config.OPENAI_API_KEY,
    model: config.OPENAI_MODEL,
  });
}

/** The completion's first choice, unless the model refused or its content filter blocked the answer. */
function answered(completion: OpenAI.Chat.Completions.ChatCompletion) {
  const choice = completion.choices?.[0];
  const message = choice?.message;
  if (message?.refusal) {
    throw new ModelError('refus', `Le modèle a refusé de répondre : ${message.refusal.slice(0, 300)}`, false);
  }
  if (choice?.finish_reason === 'content_filter') {
    throw new ModelError('refus', 'La réponse du modèle a été bloquée par son filtre de contenu.', false);
  }
  return { choice, message };
}

function toContentPart(part: ModelPart): OpenAI.Chat.Completions.ChatCompletionContentPart {
  return part.type === 'text'
    ? { type: 'text', text: part.text }
    : { type: 'image_url', image_url: { url: `data:${part.mime};base64,${part.base64}` } };
}

function invalid(reason: string, cause?: unknown): ModelError {
  return new ModelError('reponse_invalide', `Réponse du modèle inexploitable : ${reason}.`, true, { cause });
}

function toModelError(error: unknown, signal: AbortSignal | undefined, timeoutMs: number): unknown {
  // The caller's abort is no failure of the model: it propagates as fetch would propagate it.
  if (signal?.aborted) return abortReason(signal);
  if (error instanceof APIConnectionTimeoutError) {
    return new ModelError('delai', `Le modèle n’a pas répondu en ${timeoutMs} ms.`, true, { cause: error });
  }
  if (error instanceof APIUserAbortError) return new DOMException('Requête au modèle interrompue.', 'AbortError');
  if (error instanceof APIConnectionError) {
    return new ModelError('indisponible', `Modèle injoignable : ${error.message}`, true, { cause: error });
  }
  if (error instanceof APIError && typeof error.status === 'number') {
    const { status } = error;
    // Some servers quote the request in their errors: keep only the start.
    const detail = `(HTTP ${status}) : ${error.message.slice(0, 300)}`;
    if (status === 408) return new ModelError('delai', `Le modèle n’a pas répondu ${detail}`, true, { cause: error });
    // 409: OpenAI's lock conflicts, transient like 429 and 5xx.
    if (status === 409 || status === 429 || status >= 500) {
      return new ModelError('indisponible', `Modèle indisponible ${detail}`, true, {
        cause: error,
        retryAfterMs: retryAfterMs(error.headers),
      });
    }
    return new ModelError('configuration', `Requête refusée par le modèle ${detail}`, false, { cause: error });
  }
  return error;
}

/** Retry-After (seconds or an HTTP date) or OpenAI's retry-after-ms, in milliseconds; null when absent or unreadable. */
function retryAfterMs(headers: Headers | undefined): number | null {
  const ms = Number(headers?.get('retry-after-ms'));
  if (headers?.get('retry-after-ms') && Number.isFinite(ms) && ms >= 0) return ms;
  const value = headers?.get('retry-after');
  if (!value) return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - Date.now());
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason instanceof Error
    ? signal.reason
    : new DOMException('Requête au modèle interrompue.', 'AbortError');
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
