import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';

type Json = Record<string, any>;

/** An operation of the published description: its path template, its method and its OpenAPI object. */
export interface Described {
  path: string;
  method: 'get' | 'post' | 'patch';
  op: Json;
}

const DOC_ID = 'https://svc.test/openapi.json';

/**
 * The description the app publishes at /api/v1/openapi.json, and checks against it by a JSON Schema 2020-12
 * validator (ajv, formats included): what a request may send, what a response may be.
 */
export async function contractOf(app: FastifyInstance) {
  const doc = (await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json() as Json;
  const ajv = new Ajv2020({ allErrors: true, strict: true });
  // A CommonJS module: its function is `default` under TypeScript's view and at run time alike.
  ajvFormats.default(ajv);
  // Registered whole, so that its `$ref`s resolve; its OpenAPI fields are not JSON Schema keywords.
  ajv.addVocabulary(Object.keys(doc));
  ajv.addSchema(doc, DOC_ID);
  const validators = new Map<string, ValidateFunction>();

  /** A validator of the schema at these keys of the description. */
  function validatorAt(...keys: string[]): ValidateFunction {
    const pointer = keys.map((k) => encodeURIComponent(k.replaceAll('~', '~0').replaceAll('/', '~1'))).join('/');
    let validate = validators.get(pointer);
    if (!validate) {
      validate = ajv.compile({ $ref: `${DOC_ID}#/${pointer}` });
      validators.set(pointer, validate);
    }
    return validate;
  }

  function expectValid(validate: ValidateFunction, value: unknown, what: string) {
    const ok = validate(value);
    const errors = ok
      ? []
      : validate.errors!.map((e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`);
    expect(errors, what).toEqual([]);
  }

  function described(operationId: string): Described {
    for (const [path, item] of Object.entries(doc.paths as Json)) {
      for (const [method, op] of Object.entries(item as Json)) {
        if ((op as Json).operationId === operationId) return { path, method: method as Described['method'], op };
      }
    }
    throw new Error(`${operationId} absent de la description`);
  }

  /**
   * The request of a flat input (the tool's), laid out as the description says: path and query parameters by their
   * `in`, every other field in the JSON body; each value checked against its published schema.
   */
  function request({ path, method, op }: Described, entree: Record<string, unknown>) {
    const parameters: Json[] = op.parameters ?? [];
    const query = new URLSearchParams();
    const body: Record<string, unknown> = {};
    let url = path;
    for (const [name, value] of Object.entries(entree)) {
      const i = parameters.findIndex((p) => p.name === name);
      if (i >= 0) {
        expectValid(
          validatorAt('paths', path, method, 'parameters', String(i), 'schema'),
          value,
          `${op.operationId} : paramètre ${name}`,
        );
        if (parameters[i].in === 'path') url = url.replace(`{${name}}`, encodeURIComponent(String(value)));
        else if (parameters[i].style === 'deepObject') {
          // `filtre[colonne][operateur]=valeur`, as the description's deepObject says.
          const poser = (cle: string, v: unknown): void => {
            if (typeof v === 'object' && v !== null) for (const [k, x] of Object.entries(v)) poser(`${cle}[${k}]`, x);
            else query.set(cle, String(v));
          };
          poser(name, value);
        } else query.set(name, String(value));
      } else {
        expect(op.requestBody, `${op.operationId} : ${name} n’est ni un paramètre ni un champ du corps`).toBeDefined();
        body[name] = value;
      }
    }
    expect(url, `${op.operationId} : paramètre de chemin manquant`).not.toMatch(/[{}]/);
    if (op.requestBody) {
      expectValid(
        validatorAt('paths', path, method, 'requestBody', 'content', 'application/json', 'schema'),
        body,
        `${op.operationId} : corps ${JSON.stringify(body).slice(0, 300)}`,
      );
    }
    return {
      method: method.toUpperCase() as 'GET' | 'POST' | 'PATCH',
      url: query.size > 0 ? `${url}?${query}` : url,
      body: op.requestBody ? body : undefined,
    };
  }

  /** The response is one the description promises for the operation: status, content type, headers and body. */
  function expectDescribed(operationId: string, res: LightMyRequestResponse, what = operationId) {
    const { path, method, op } = described(operationId);
    const status = String(res.statusCode);
    const response = op.responses[status] as Json | undefined;
    expect(response, `${what} : statut ${status} non décrit (${res.body.slice(0, 300)})`).toBeDefined();
    for (const [name, header] of Object.entries((response!.headers ?? {}) as Json)) {
      const value = res.headers[name.toLowerCase()];
      if (name === 'Location') expect(value, `${what} : en-tête Location`).toBeTypeOf('string');
      if (value === undefined) continue;
      expectValid(
        validatorAt('paths', path, method, 'responses', status, 'headers', name, 'schema'),
        header.schema.type === 'integer' ? Number(value) : value,
        `${what} : en-tête ${name} = ${value}`,
      );
    }
    if (!response!.content) {
      expect(res.body, `${what} : pas de corps décrit`).toBe('');
      return;
    }
    const type = String(res.headers['content-type']).split(';')[0].trim();
    expect(Object.keys(response!.content), `${what} : type ${type}`).toContain(type);
    if (!type.endsWith('json')) return;
    expectValid(
      validatorAt('paths', path, method, 'responses', status, 'content', type, 'schema'),
      res.json(),
      `${what} : corps ${res.body.slice(0, 2000)}`,
    );
  }

  return { doc, described, request, expectDescribed };
}
