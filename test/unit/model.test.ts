import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createOpenAiModel,
  dropNullOptionals,
  type JsonSchema,
  type Model,
  ModelError,
  modelFromConfig,
  toStrictJsonSchema,
} from '../../lib/model.ts';
import { type ModelServer, promptText, startModelServer } from '../support/model-server.ts';

const Lecture = z.object({
  zone: z.string(),
  hauteur_max_m: z.number().nullable(),
  citations: z.array(z.object({ page: z.number().int(), texte: z.string() })),
  remarque: z.string().optional(),
});

const request = {
  system: 'Tu lis un règlement.',
  user: 'Page 1 : hauteur 12 m.',
  schema: Lecture,
  schemaName: 'lecture',
};

async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a failure');
}

async function modelError(promise: Promise<unknown>): Promise<ModelError> {
  const error = await failure(promise);
  expect(error).toBeInstanceOf(ModelError);
  return error as ModelError;
}

describe('createOpenAiModel against the scripted server', () => {
  let server: ModelServer;
  let model: Model;

  beforeAll(async () => {
    server = await startModelServer();
    model = createOpenAiModel({ baseURL: server.url, model: 'modele-test' });
  });
  afterEach(() => {
    server.setHandler(undefined);
    server.requests.length = 0;
  });
  afterAll(() => server.close());

  it('sends a strict json_schema request and returns the validated answer', async () => {
    server.enqueue({ json: { zone: 'UA', hauteur_max_m: 12, citations: [{ page: 1, texte: 'hauteur 12 m' }] } });
    const parts = [
      { type: 'text' as const, text: 'Que dit cette page ?' },
      { type: 'image' as const, mime: 'image/png', base64: 'iVBORw0KGgo=' },
    ];
    const answer = await model.complete({ ...request, user: parts });
    expect(answer).toEqual({ zone: 'UA', hauteur_max_m: 12, citations: [{ page: 1, texte: 'hauteur 12 m' }] });
    expect(model.name).toBe('modele-test');

    const body = server.requests[0];
    expect(body.model).toBe('modele-test');
    expect(body.response_format.type).toBe('json_schema');
    expect(body.response_format.json_schema).toMatchObject({ name: 'lecture', strict: true });
    const schema = body.response_format.json_schema.schema;
    expect(schema.additionalProperties).toBe(false);
    expect(schema.required).toEqual(['zone', 'hauteur_max_m', 'citations', 'remarque']);
    expect(schema.properties.remarque).toEqual({ type: ['string', 'null'] });
    expect(body.messages[0]).toEqual({ role: 'system', content: 'Tu lis un règlement.' });
    expect(body.messages[1].content).toEqual([
      { type: 'text', text: 'Que dit cette page ?' },
      { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
    ]);
  });

  it('reads a null optional field back as absent', async () => {
    server.enqueue({ json: { zone: 'UB', hauteur_max_m: null, citations: [], remarque: null } });
    const answer = await model.complete(request);
    expect(answer).toEqual({ zone: 'UB', hauteur_max_m: null, citations: [] });
    expect('remarque' in answer).toBe(false);
  });

  it('answers computed from the prompt by a handler', async () => {
    server.setHandler((body) => {
      const quote = /hauteur \d+ m/.exec(promptText(body))?.[0] ?? '';
      return { json: { zone: 'UA', hauteur_max_m: 12, citations: [{ page: 1, texte: quote }], remarque: 'vu' } };
    });
    const answer = await model.complete(request);
    expect(answer.citations[0].texte).toBe('hauteur 12 m');
    expect(answer.remarque).toBe('vu');
  });

  it('malformed JSON is an invalid answer, retryable', async () => {
    server.enqueue({ content: '{"zone": "UA", ' });
    const error = await modelError(model.complete(request));
    expect(error).toMatchObject({ kind: 'reponse_invalide', retryable: true });
  });

  it('an answer that does not match the schema is an invalid answer, without its content in the message', async () => {
    server.enqueue({ json: { zone: 'texte secret du document', hauteur_max_m: 'douze', citations: [] } });
    const error = await modelError(model.complete(request));
    expect(error).toMatchObject({ kind: 'reponse_invalide', retryable: true });
    expect(error.message).toContain('hauteur_max_m');
    expect(error.message).not.toContain('texte secret');
  });

  it('a refusal is final', async () => {
    server.enqueue({ refusal: 'Je ne peux pas aider.' });
    const error = await modelError(model.complete(request));
    expect(error).toMatchObject({ kind: 'refus', retryable: false });
  });

  it.each([500, 503, 429])('HTTP %i is an unavailability, retryable, tried once (no SDK retries)', async (status) => {
    server.enqueue({ status });
    const error = await modelError(model.complete(request));
    expect(error).toMatchObject({ kind: 'indisponible', retryable: true });
    expect(server.requests).toHaveLength(1);
  });

  it.each([400, 401, 404, 422])('HTTP %i is a configuration error, not retryable', async (status) => {
    server.enqueue({ status });
    const error = await modelError(model.complete(request));
    expect(error).toMatchObject({ kind: 'configuration', retryable: false });
  });

  it('an empty queue without handler answers a clear 500', async () => {
    const error = await modelError(model.complete(request));
    expect(error).toMatchObject({ kind: 'indisponible' });
    expect(error.message).toContain('aucune réponse prévue');
  });

  it('a server that never answers ends in a retryable time-out', async () => {
    server.enqueue({ hang: true });
    const started = Date.now();
    const error = await modelError(model.complete({ ...request, timeoutMs: 300 }));
    expect(error).toMatchObject({ kind: 'delai', retryable: true });
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('the default time-out of the model applies too', async () => {
    const quick = createOpenAiModel({ baseURL: server.url, model: 'modele-test', timeoutMs: 200 });
    server.enqueue({ delayMs: 2_000, then: { json: {} } });
    const error = await modelError(quick.complete(request));
    expect(error.kind).toBe('delai');
  });

  it('a delayed answer within the time-out arrives', async () => {
    server.enqueue({ delayMs: 50, then: { json: { zone: 'N', hauteur_max_m: null, citations: [] } } });
    await expect(model.complete({ ...request, timeoutMs: 5_000 })).resolves.toMatchObject({ zone: 'N' });
  });

  it('an abort propagates quickly as an AbortError, not a ModelError', async () => {
    server.enqueue({ hang: true });
    const controller = new AbortController();
    const started = Date.now();
    setTimeout(() => controller.abort(), 50);
    const error = await failure(model.complete({ ...request, signal: controller.signal }));
    expect(error).not.toBeInstanceOf(ModelError);
    expect((error as Error).name).toBe('AbortError');
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('an already aborted signal sends nothing', async () => {
    const error = await failure(model.complete({ ...request, signal: AbortSignal.abort() }));
    expect((error as Error).name).toBe('AbortError');
    expect(server.requests).toHaveLength(0);
  });

  it('a schema strict mode cannot express is a configuration error, nothing sent', async () => {
    const error = await modelError(
      model.complete({ ...request, schema: z.object({ libre: z.record(z.string(), z.number()) }), schemaName: 'x' }),
    );
    expect(error).toMatchObject({ kind: 'configuration', retryable: false });
    expect(server.requests).toHaveLength(0);
  });

  it('an unreachable server is an unavailability', async () => {
    const closed = await startModelServer();
    const url = closed.url;
    await closed.close();
    const error = await modelError(createOpenAiModel({ baseURL: url, model: 'm' }).complete(request));
    expect(error).toMatchObject({ kind: 'indisponible', retryable: true });
  });

  it('the server lists its model', async () => {
    const res = await fetch(`${server.url}/models`);
    expect(await res.json()).toMatchObject({ object: 'list', data: [{ id: 'modele-test' }] });
  });
});

describe('modelFromConfig', () => {
  it('is null without OPENAI_MODEL', () => {
    expect(modelFromConfig({})).toBeNull();
    expect(modelFromConfig({ OPENAI_BASE_URL: 'http://127.0.0.1:1/v1', OPENAI_API_KEY: 'k' })).toBeNull();
  });

  it('works key-less against a local server', async () => {
    const server = await startModelServer([{ json: { zone: 'A', hauteur_max_m: 3, citations: [] } }]);
    try {
      const model = modelFromConfig({ OPENAI_BASE_URL: server.url, OPENAI_MODEL: 'local' })!;
      expect(model.name).toBe('local');
      await expect(model.complete(request)).resolves.toMatchObject({ zone: 'A' });
      expect(server.requests[0].model).toBe('local');
    } finally {
      await server.close();
    }
  });
});

describe('toStrictJsonSchema', () => {
  const strict = (schema: z.ZodType) => toStrictJsonSchema(z.toJSONSchema(schema, { target: 'draft-7', io: 'input' }));

  it('closes nested objects and requires every property', () => {
    const out = strict(
      z.object({ a: z.object({ b: z.object({ c: z.string() }) }), d: z.array(z.object({ e: z.number() })) }),
    );
    expect(out).toEqual({
      type: 'object',
      properties: {
        a: {
          type: 'object',
          properties: {
            b: { type: 'object', properties: { c: { type: 'string' } }, required: ['c'], additionalProperties: false },
          },
          required: ['b'],
          additionalProperties: false,
        },
        d: {
          type: 'array',
          items: {
            type: 'object',
            properties: { e: { type: 'number' } },
            required: ['e'],
            additionalProperties: false,
          },
        },
      },
      required: ['a', 'd'],
      additionalProperties: false,
    });
  });

  it('makes optional fields nullable and leaves nullable ones as they are', () => {
    const out = strict(
      z.object({
        s: z.string().optional(),
        n: z.number().nullable(),
        both: z.string().nullable().optional(),
        o: z.object({ x: z.boolean() }).optional(),
        l: z.array(z.string()).optional(),
        e: z.enum(['a', 'b']).optional(),
        d: z.number().default(3),
      }),
    ) as any;
    expect(out.required).toEqual(['s', 'n', 'both', 'o', 'l', 'e', 'd']);
    expect(out.properties.s).toEqual({ type: ['string', 'null'] });
    expect(out.properties.n).toEqual({ type: ['number', 'null'] });
    expect(out.properties.both).toEqual({ type: ['string', 'null'] });
    expect(out.properties.o).toEqual({
      anyOf: [
        { type: 'object', properties: { x: { type: 'boolean' } }, required: ['x'], additionalProperties: false },
        { type: 'null' },
      ],
    });
    expect(out.properties.l).toEqual({ anyOf: [{ type: 'array', items: { type: 'string' } }, { type: 'null' }] });
    expect(out.properties.e).toEqual({ type: ['string', 'null'], enum: ['a', 'b', null] });
    expect(out.properties.d).toEqual({ type: ['number', 'null'] });
  });

  it('keeps enums, turns literals into one-value enums and discriminated unions into anyOf', () => {
    const out = strict(
      z.object({
        e: z.enum(['UA', 'UB']),
        u: z.discriminatedUnion('k', [z.object({ k: z.literal('a'), v: z.number() }), z.object({ k: z.literal('b') })]),
      }),
    ) as any;
    expect(out.properties.e).toEqual({ type: 'string', enum: ['UA', 'UB'] });
    expect(out.properties.u.oneOf).toBeUndefined();
    expect(out.properties.u.anyOf[0]).toEqual({
      type: 'object',
      properties: { k: { type: 'string', enum: ['a'] }, v: { type: 'number' } },
      required: ['k', 'v'],
      additionalProperties: false,
    });
  });

  it('drops what strict mode rejects and keeps descriptions and supported constraints', () => {
    const out = strict(
      z.object({
        s: z.string().min(2).max(10).describe('un code'),
        p: z.string().regex(/^[A-Z]+$/),
        mail: z.email(),
        id: z.string().cuid(),
        i: z.number().int(),
        pct: z.number().min(0).max(100),
        arr: z.array(z.string()).min(1).max(3),
      }),
    ) as any;
    expect(out.$schema).toBeUndefined();
    expect(out.properties.s).toEqual({ type: 'string', description: 'un code' });
    expect(out.properties.p).toEqual({ type: 'string', pattern: '^[A-Z]+$' });
    expect(out.properties.mail).toEqual({ type: 'string', format: 'email' });
    expect(out.properties.id).toEqual({ type: 'string' });
    expect(out.properties.i).toEqual({ type: 'integer' });
    expect(out.properties.pct).toEqual({ type: 'number', minimum: 0, maximum: 100 });
    expect(out.properties.arr).toEqual({ type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 3 });
  });

  it('keeps recursive definitions, strict too', () => {
    const Node: z.ZodType<{ nom: string; enfants: unknown[] }> = z.object({
      nom: z.string(),
      get enfants() {
        return z.array(Node);
      },
    });
    const out = strict(z.object({ a: Node, b: Node })) as any;
    const [definition] = Object.values(out.definitions) as any[];
    expect(definition).toMatchObject({ required: ['nom', 'enfants'], additionalProperties: false });
    expect(out.properties.a.$ref).toMatch(/^#\/definitions\//);
  });

  it('refuses what strict mode cannot express', () => {
    expect(() => strict(z.object({ r: z.record(z.string(), z.number()) }))).toThrow(/dictionnaire/);
    expect(() => strict(z.object({ t: z.tuple([z.string(), z.number()]) }))).toThrow(/tuple/);
    const allOf = { type: 'object', properties: { i: { allOf: [{ type: 'string' }, { minLength: 2 }] } } };
    expect(() => toStrictJsonSchema(allOf)).toThrow(/allOf/);
    const open = { type: 'object', properties: { o: { type: 'object', properties: {}, additionalProperties: true } } };
    expect(() => toStrictJsonSchema(open)).toThrow(/ouvert/);
    expect(() => strict(z.object({ x: z.unknown() }))).toThrow(/type/);
    expect(() => strict(z.array(z.string()))).toThrow(/racine/);
    expect(() => strict(z.union([z.object({ a: z.string() }), z.object({ b: z.string() })]))).toThrow(/racine/);
  });

  it('does not touch its input', () => {
    const input: JsonSchema = { type: 'object', properties: { a: { type: 'string' } } };
    toStrictJsonSchema(input);
    expect(input).toEqual({ type: 'object', properties: { a: { type: 'string' } } });
  });
});

describe('dropNullOptionals', () => {
  const schema = z.object({
    a: z.string().optional(),
    b: z.string().nullable(),
    c: z.string().nullable().optional(),
    list: z.array(z.object({ x: z.number().optional(), y: z.number() })),
    u: z
      .union([z.object({ k: z.literal('p'), opt: z.string().optional() }), z.object({ k: z.literal('q') })])
      .optional(),
  });
  const input = z.toJSONSchema(schema, { target: 'draft-7', io: 'input' }) as JsonSchema;

  it('removes the nulls strict mode forced on optional fields, at any depth, and keeps meaningful ones', () => {
    const value = dropNullOptionals(
      {
        a: null,
        b: null,
        c: null,
        list: [
          { x: null, y: 1 },
          { x: 2, y: null },
        ],
        u: { k: 'p', opt: null },
      },
      input,
    );
    expect(value).toEqual({ b: null, c: null, list: [{ y: 1 }, { x: 2, y: null }], u: { k: 'p' } });
    expect(schema.safeParse(dropNullOptionals({ a: null, b: 'x', c: null, list: [], u: null }, input)).success).toBe(
      true,
    );
  });
});
