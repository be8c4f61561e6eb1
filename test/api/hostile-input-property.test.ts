import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { pathParams } from '../../api/operation-routes.ts';
import { parseInput, type Operation } from '../../domain/catalogue.ts';
import { ERRORS } from '../../domain/errors.ts';
import { OPERATIONS } from '../../domain/operations.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import { startModelServer, type ModelServer } from '../support/model-server.ts';
import { createRuntime } from '../support/runtime.ts';

// For every operation of the catalogue and every parameter its input schema declares (path, query, body, at any
// depth), hostile values are sent in place of a valid one: no answer may be a 5xx, every refusal is a problem+json
// with a stable code and French messages, and nothing is debited but what a served answer says it debited. A new
// operation is covered as soon as it is in the catalogue.

type Schema = Record<string, any>;
type Path = Array<string | number>;

/** Zod's English words: none may reach a client. */
const ENGLISH = /\b(Invalid|expected|received|Too (small|big)|Unrecognized|Required)\b/;

/** Texts tried, in order, where a baseline needs one: the first its field accepts. */
const TEXTES = [
  '33063_0105_00012',
  '33063000AB0123',
  '2021-06-15',
  '33063',
  // An IRIS code (prix_iris: the commune and four digits).
  '330630101',
  // A list of communes (comparer_communes: 2 to 10 codes).
  '33063,33001',
  '33',
  // Never resolves (RFC 6761): a document reading stops at the address, before any task waits for a worker.
  'https://document.invalid/bail.pdf',
  'Quel est le montant du loyer ?',
  'Bordeaux',
  randomUUID(),
  'aGVsbG8=',
];

// Hostile values of a JSON body. INFINI stands for the JSON text 1e400, which JSON.parse reads as Infinity.
const INFINI = '\u0001infini';
const HOSTILES_CORPS: unknown[] = [
  'a\u0000b',
  'a\ud800b',
  '\udfff',
  ' ',
  '',
  '0x10',
  '1e400',
  INFINI,
  5e-324,
  -5e-324,
  1e308,
  -1e308,
  null,
  true,
  [],
  ['a\u0000b'],
  [5e-324],
  {},
  'x'.repeat(100_000),
];
// Hostile values of a path or query parameter, as written in the URL (already encoded); a list repeats the key.
const HOSTILES_URL: Array<string | string[]> = [
  'a%00b',
  'a%ED%A0%80b',
  '%FF',
  '%20',
  '',
  '0x10',
  '1e400',
  '-1e400',
  '5e-324',
  '-5e-324',
  '1e308',
  'Infinity',
  'NaN',
  'x'.repeat(5000),
  ['1', '2'],
];

function inputSchema(operation: Operation): Schema {
  return z.toJSONSchema(operation.input, { io: 'input', unrepresentable: 'any' }) as Schema;
}

/** The schema itself, or its first alternative that is not null. */
function concrete(schema: Schema): Schema {
  if (!schema.anyOf) return schema;
  return concrete(schema.anyOf.find((s: Schema) => s.type !== 'null') ?? schema.anyOf[0]);
}

function textFits(schema: Schema, text: string): boolean {
  if (schema.minLength !== undefined && text.length < schema.minLength) return false;
  if (schema.maxLength !== undefined && text.length > schema.maxLength) return false;
  if (schema.pattern && !new RegExp(schema.pattern).test(text)) return false;
  if (schema.format === 'uri' && !/^https?:/.test(text)) return false;
  return true;
}

/** A valid-looking value for `schema`: its default or first choice, else a plain value within its bounds. */
function example(schema: Schema, texte = 0): unknown {
  const s = concrete(schema);
  if (s.default !== undefined) return s.default;
  if (s.const !== undefined) return s.const;
  if (s.enum) return s.enum[0];
  switch (s.type) {
    case 'string': {
      const fitting = TEXTES.filter((t) => textFits(s, t));
      return fitting[texte % Math.max(1, fitting.length)] ?? 'x'.repeat(Math.max(1, s.minLength ?? 1));
    }
    case 'integer':
    case 'number': {
      const low = s.minimum ?? (s.exclusiveMinimum === undefined ? 1 : s.exclusiveMinimum + 1);
      return Math.min(Math.max(1, low), s.maximum ?? Infinity);
    }
    case 'boolean':
      return true;
    case 'array':
      return Array.from({ length: Math.max(1, s.minItems ?? 0) }, () => example(s.items ?? {}));
    case 'object':
      return Object.fromEntries((s.required ?? []).map((k: string) => [k, example(s.properties[k])]));
    default:
      return 'x';
  }
}

function schemaAt(schema: Schema, path: Path): Schema | undefined {
  let s: Schema | undefined = concrete(schema);
  for (const key of path) {
    if (!s) return undefined;
    s = typeof key === 'number' ? s.items : s.properties?.[key];
    if (s) s = concrete(s);
  }
  return s;
}

function getAt(value: unknown, path: Path): unknown {
  return path.reduce<any>((v, k) => (v === null || typeof v !== 'object' ? undefined : v[k]), value);
}

/** A copy of `value` with `path` set, parents made from the schema's examples when absent. */
function setAt(schema: Schema, value: unknown, path: Path, leaf: unknown): any {
  const copy = structuredClone(value) as any;
  let node = copy;
  path.forEach((key, i) => {
    if (i === path.length - 1) {
      node[key] = leaf;
      return;
    }
    if (node[key] === null || typeof node[key] !== 'object') {
      const s = schemaAt(schema, path.slice(0, i + 1));
      node[key] = concrete(s ?? {}).type === 'array' ? [] : {};
    }
    node = node[key];
  });
  return copy;
}

/** Every parameter path of a schema: properties at any depth, a list's first item. */
function paths(schema: Schema, prefix: Path = []): Path[] {
  const s = concrete(schema);
  if (s.type === 'object' && s.properties) {
    return Object.entries(s.properties).flatMap(([k, sub]) => [
      [...prefix, k],
      ...paths(sub as Schema, [...prefix, k]),
    ]);
  }
  if (s.type === 'array' && s.items) return [[...prefix, 0], ...paths(s.items, [...prefix, 0])];
  return [];
}

/** What travels: a GET's parameters are texts. */
function wire(operation: Operation, input: Record<string, unknown>): Record<string, unknown> {
  if (operation.method !== 'GET') return input;
  return Object.fromEntries(Object.entries(input).map(([k, v]) => [k, Array.isArray(v) ? v.map(String) : String(v)]));
}

/**
 * The smallest input the schema accepts: required fields from their examples, then, for each field the schema
 * refuses, the next text that fits, and for an object refused as a whole (one field of two, say) one more of its
 * optional fields. Null when none is found: the operation is then probed from an incomplete input.
 */
function baseline(operation: Operation, schema: Schema): Record<string, unknown> | null {
  let input = example(schema) as Record<string, unknown>;
  const texte = new Map<string, number>();
  for (let round = 0; round < 40; round++) {
    const parsed = parseInput(operation, wire(operation, input));
    if (parsed.success) return input;
    let changed = false;
    for (const issue of parsed.error.issues) {
      const path = issue.path as Path;
      const current = getAt(input, path);
      const s = schemaAt(schema, path);
      if (typeof current === 'string' && s) {
        const id = path.join('.');
        const next = (texte.get(id) ?? 0) + 1;
        if (next > TEXTES.length) continue;
        texte.set(id, next);
        input = setAt(schema, input, path, example(s, next));
        changed = true;
      } else if (current === undefined && s) {
        // An optional field a rule of the whole input asks for (« adresse ou insee »): given.
        input = setAt(schema, input, path, example(s));
        changed = true;
      } else if (current !== null && typeof current === 'object' && !Array.isArray(current) && s?.properties) {
        const missing = Object.keys(s.properties).find((k) => !(k in (current as object)));
        if (missing === undefined) continue;
        input = setAt(schema, input, [...path, missing], example(s.properties[missing]));
        changed = true;
      }
    }
    if (!changed) return null;
  }
  return null;
}

/** The baseline with every optional number of the top level given too (a point needs its lat and its lon). */
function withNumbers(operation: Operation, schema: Schema, base: Record<string, unknown>) {
  const s = concrete(schema);
  let input = base;
  for (const [k, sub] of Object.entries<Schema>(s.properties ?? {})) {
    const type = concrete(sub).type;
    if (!(k in input) && (type === 'number' || type === 'integer')) input = { ...input, [k]: example(sub) };
  }
  return input !== base && parseInput(operation, wire(operation, input)).success ? input : null;
}

interface Probe {
  operation: Operation;
  parametre: string;
  hostile: string;
  method: Operation['method'];
  url: string;
  payload?: string;
}

function encode(value: unknown): string {
  return encodeURIComponent(String(value));
}

/** The request of `input`, where the value at `hostile` (if any) is written as it is (already encoded). */
function request(operation: Operation, input: Record<string, unknown>, hostile?: { key: string; raw: unknown }) {
  const inPath = new Set(pathParams(operation.path));
  const valueOf = (k: string) => (hostile?.key === k ? hostile.raw : encode(input[k]));
  const path = operation.path.replace(/\{(\w+)\}/g, (_, k: string) => String(valueOf(k) ?? ''));
  if (operation.method !== 'GET') {
    const body = Object.fromEntries(Object.entries(input).filter(([k]) => !inPath.has(k)));
    return { url: `/api/v1${path}`, payload: JSON.stringify(body).replaceAll(JSON.stringify(INFINI), '1e400') };
  }
  const query = Object.keys(input)
    .filter((k) => !inPath.has(k))
    .flatMap((k) => {
      const v = hostile?.key === k ? hostile.raw : (input[k] as unknown);
      const raw = hostile?.key === k;
      return (Array.isArray(v) ? v : [v]).map((x) => `${k}=${raw ? String(x) : encode(x)}`);
    });
  return { url: `/api/v1${path}${query.length ? `?${query.join('&')}` : ''}` };
}

function describeValue(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 40 ? `${text.slice(0, 37)}…` : text;
}

function probes(operation: Operation): Probe[] {
  const schema = inputSchema(operation);
  const inPath = new Set(pathParams(operation.path));
  const minimal = baseline(operation, schema) ?? (example(schema) as Record<string, unknown>);
  const bases = [minimal, withNumbers(operation, schema, minimal)].filter((b) => b !== null);
  const out: Probe[] = [];
  for (const base of bases) {
    for (const path of paths(schema)) {
      const key = String(path[0]);
      const inUrl = inPath.has(key) || operation.method === 'GET';
      if (inUrl && path.length > 1) continue;
      const hostiles = inUrl ? HOSTILES_URL.filter((h) => !(inPath.has(key) && Array.isArray(h))) : HOSTILES_CORPS;
      for (const hostile of hostiles) {
        const input = inUrl ? { ...wire(operation, base), [key]: '' } : setAt(schema, base, path, hostile);
        const req = request(operation, input, inUrl ? { key, raw: hostile } : undefined);
        out.push({
          operation,
          parametre: path.join('.'),
          hostile: describeValue(hostile),
          method: operation.method,
          ...req,
        });
      }
    }
  }
  return out;
}

let t: TestApp;
let runtime: Awaited<ReturnType<typeof createRuntime>>;
let model: ModelServer;
let org: { id: string; cle: string };
let cle: string;

beforeAll(async () => {
  // The task engine as in production (without a worker: a task accepted stays waiting), so that a task operation
  // goes as far as its input lets it.
  runtime = await createRuntime();
  // No evening window: what is checked here is the answer to hostile input, at whatever hour the suite runs.
  t = await createTestApp({ services: { tasks: runtime.engine, hub: runtime.hub, creneauLourd: null } });
  // The Hub answers within the request: its worker runs, with a model that answers at once, without tools.
  model = await startModelServer(() => ({ content: 'Réponse du modèle de test.' }));
  await runtime.startWorker(t.db, model.url, t.app.pipeline);
  org = await t.organisation({ acces: 'contrat', quota_minute: 1_000_000 });
  // A personal key reaches every operation, the account's ones included.
  cle = (await t.admin('POST', `/organisations/${org.id}/cles`, { mode: 'live', personnelle: true })).body.cle;
});
afterAll(async () => {
  await runtime?.close();
  await t?.close();
  await model?.close();
});

describe('hostile values in every parameter of every operation', () => {
  it('start from an input each operation accepts, so that the hostile value is the only fault of a request', () => {
    const without = (OPERATIONS as Operation[])
      .filter((operation) => baseline(operation, inputSchema(operation)) === null)
      .map((operation) => `${operation.tool} ${operation.path}`);
    // An operation listed here has a field no text of TEXTES satisfies: add one that does.
    expect(without).toEqual([]);
  });

  it('never answer a 5xx, always a problem+json in French, and debit only what a served answer says', async () => {
    const all = (OPERATIONS as Operation[]).flatMap(probes);
    expect(all.length).toBeGreaterThan(1000);
    const failures: string[] = [];
    let debitedByAnswers = 0;
    let next = 0;
    const worker = async () => {
      while (next < all.length) {
        const probe = all[next++];
        const res = await t.app.inject({
          method: probe.method,
          url: probe.url,
          headers: {
            authorization: `Bearer ${cle}`,
            ...(probe.payload === undefined ? {} : { 'content-type': 'application/json' }),
          },
          ...(probe.payload === undefined ? {} : { payload: probe.payload }),
        });
        const where = `${probe.operation.tool} ${probe.method} ${probe.operation.path} ${probe.parametre}=${probe.hostile}`;
        const debited = Number(res.headers['svc-credits-debites'] ?? 0);
        if (res.statusCode < 400) {
          debitedByAnswers += probe.operation.task ? 0 : debited;
          continue;
        }
        const body = res.headers['content-type']?.startsWith('application/problem+json') ? res.json() : null;
        const code = body?.code as keyof typeof ERRORS | undefined;
        if (res.statusCode >= 500) failures.push(`${where} → ${res.statusCode} ${res.body.slice(0, 200)}`);
        else if (!body || !code || ERRORS[code]?.status !== res.statusCode) {
          failures.push(`${where} → ${res.statusCode} not a problem: ${res.body.slice(0, 200)}`);
        } else if (debited !== 0) failures.push(`${where} → ${res.statusCode} debited ${debited}`);
        else {
          const english = [body.detail, ...(body.erreurs ?? []).map((e: { message: string }) => e.message)].find((m) =>
            ENGLISH.test(m),
          );
          if (english) failures.push(`${where} → message in English: ${english}`);
        }
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    expect(failures).toEqual([]);
    const { rows } = await t.db.query<{ debits: number }>(
      `SELECT coalesce(-sum(credits), 0)::int AS debits FROM mouvements WHERE organisation_id = $1 AND genre = 'debit'`,
      [org.id],
    );
    expect(rows[0].debits).toBe(debitedByAnswers);
  }, 90_000);
});
