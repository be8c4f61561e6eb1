import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATIONS, OPERATIONS_A_VENIR } from '../../domain/operations.ts';
import { createTestApp, type TestApp } from '../support/app.ts';

// The specification's catalogue lives beside the project (../shared), not in it: a clone without it skips that check.
const CATALOGUE = path.resolve('../shared/spec/catalogue.json');
const hasCatalogue = existsSync(CATALOGUE);

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t?.close());

describe('the OpenAPI description', () => {
  it('is served without a key, 3.1.0 / 2020-12 / 1.2.0, one operation per catalogue entry with its metadata', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' });
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.openapi).toBe('3.1.0');
    // OpenAPI 3.1's own dialect, JSON Schema 2020-12 with the OAS vocabulary: the URI Swagger UI accepts silently.
    expect(doc.jsonSchemaDialect).toBe('https://spec.openapis.org/oas/3.1/dialect/base');
    expect(doc.info.version).toBe('1.2.0');
    // The catalogue's operations (the download links of generated files are the one route outside it).
    const ops = (Object.values(doc.paths).flatMap((p) => Object.values(p as object)) as Record<string, any>[]).filter(
      (o) => o['x-svc-outil'],
    );
    expect(ops.map((o) => o.operationId).sort()).toEqual(
      OPERATIONS.map((o) => (o.variant ? `${o.tool}_${o.variant}` : o.tool)).sort(),
    );
    expect(new Set(ops.map((o) => o.operationId)).size).toBe(ops.length);
    for (const op of ops) {
      expect(op['x-svc-credits'], op.operationId).toBeTypeOf('number');
      expect(['usage', 'data', 'contrat']).toContain(op['x-svc-palier-minimal']);
      for (const [status, response] of Object.entries(op.responses as Record<string, any>)) {
        if (Number(status) >= 400)
          expect(Object.keys(response.content), `${op.operationId} ${status}`).toEqual(['application/problem+json']);
      }
    }
  });

  it('states a price and a tier on every operation of every path, routes outside the catalogue included', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    const methods = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
    const operations = Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([p, item]) =>
      Object.entries(item)
        .filter(([method]) => methods.includes(method))
        .map(([method, op]) => ({ route: `${method.toUpperCase()} ${p}`, op })),
    );
    expect(operations.length).toBeGreaterThan(OPERATIONS.length);
    for (const { route, op } of operations) {
      expect(Number.isInteger(op['x-svc-credits']) && op['x-svc-credits'] >= 0, `${route} x-svc-credits`).toBe(true);
      expect(['usage', 'data', 'contrat'], `${route} x-svc-palier-minimal`).toContain(op['x-svc-palier-minimal']);
    }
    // The signed link of a generated document costs nothing (the document was paid for when generated) and is open to
    // whoever may generate one.
    const download = doc.paths['/api/v1/documents/fichiers/{id}/{nom}'].get;
    expect(download['x-svc-credits']).toBe(0);
    expect(download['x-svc-palier-minimal']).toBe(OPERATIONS.find((o) => o.tool === 'generer_document')!.tier);
  });

  it.skipIf(!hasCatalogue)(
    `agrees with ../shared/spec/catalogue.json on its metadata${hasCatalogue ? '' : ' (skipped: ../shared/spec absent)'}`,
    () => {
      const catalogue = JSON.parse(readFileSync(CATALOGUE, 'utf8')) as {
        operations: Array<Record<string, any> & { tool: string | null; paths: string[] }>;
      };
      const spec = new Map(catalogue.operations.filter((o) => o.tool).map((o) => [o.tool, o]));
      // Operations the catalogue shows only in part (tool null, `partly_shown`): their tool, price, path and time-out
      // were decided in the tracker (issue 16: `commune`, and `comparer_communes`, which has no path there) and are
      // written in their description. What the catalogue does give (path, scope, tier) is still compared.
      const enPartie = catalogue.operations.filter((o) => o.partly_shown);
      const DECIDEES = new Map([['comparer_communes', enPartie.find((o) => /comparison/.test(o.what ?? ''))]]);
      for (const op of OPERATIONS) {
        const partielle =
          !spec.has(op.tool) && (enPartie.find((o) => o.paths.includes(op.path)) ?? DECIDEES.get(op.tool));
        if (partielle) {
          expect({ scope: op.scope, tier: op.tier }, op.tool).toEqual({ scope: partielle.scope, tier: partielle.tier });
          continue;
        }
        // An operation the specification implies without naming it (watches and alerts) has nothing here to agree
        // with: its name is said in the description's "Noms choisis" (the next test checks it).
        if (!spec.has(op.tool)) continue;
        const s = spec.get(op.tool);
        // An operation the specification names only (credits, unit and path "not shown") carries our documented
        // decision: only what the specification gives is compared.
        expect({ credits: op.credits, unit: op.unit, path: op.path }, op.tool).toEqual({
          credits: s!.credits ?? op.credits,
          unit: s!.unit ?? op.unit,
          path: s!.paths.length === 0 || s!.paths.includes(op.path) ? op.path : s!.paths,
        });
        if (s!.method) expect(op.method, op.tool).toBe(s!.method);
        if (s!.scope) expect(op.scope, op.tool).toBe(s!.scope);
        if (s!.tier) expect(op.tier, op.tool).toBe(s!.tier);
        if (s!.sandbox !== null) expect(op.sandbox, op.tool).toBe(s!.sandbox);
        if (s!.timeout_s) expect(op.timeoutS, op.tool).toBe(s!.timeout_s);
        if ('personal_key' in s!) expect(op.personalKey ?? false, op.tool).toBe(s!.personal_key);
      }
    },
  );

  it.skipIf(!hasCatalogue)(
    `serves every operation of ../shared/spec/catalogue.json or lists it as not yet served${hasCatalogue ? '' : ' (skipped: ../shared/spec absent)'}`,
    async () => {
      const catalogue = JSON.parse(readFileSync(CATALOGUE, 'utf8')) as {
        operations: Array<{ tool: string | null; method: string | null; paths: string[]; partly_shown?: boolean }>;
      };
      const servies = new Set(OPERATIONS.flatMap((o) => [o.tool, `${o.method} ${o.path}`]));
      const aVenir = new Set(OPERATIONS_A_VENIR.flatMap((o) => [o.outil, `${o.methode} ${o.chemin}`]));
      const manquantes = catalogue.operations.filter((o) => {
        // The parts the catalogue shows only in part were decided in the tracker: `commune`, `comparer_communes`.
        if (o.partly_shown) return false;
        const noms = [o.tool, ...o.paths.map((p) => `${o.method} ${p}`)].filter((n): n is string => n !== null);
        return !noms.some((n) => servies.has(n) || aVenir.has(n));
      });
      expect(manquantes.map((o) => o.tool ?? o.paths[0])).toEqual([]);
      // Nothing both served and listed as to come; and the description says what is to come.
      expect(OPERATIONS_A_VENIR.filter((o) => servies.has(o.outil) || servies.has(`${o.methode} ${o.chemin}`))).toEqual(
        [],
      );
      const doc = (await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json();
      for (const o of OPERATIONS_A_VENIR) expect(doc.info.description).toContain(`\`${o.outil}\``);
      // The names chosen for operations the catalogue does not name are said in the description.
      const nommees = new Set(catalogue.operations.map((o) => o.tool));
      for (const o of OPERATIONS.filter((o) => !nommees.has(o.tool))) {
        expect(doc.info.description, o.tool).toMatch(new RegExp(`Noms choisis[^]*\`${o.tool}\``));
      }
    },
  );

  it('lints clean with Redocly', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    const dir = await mkdtemp(path.join(tmpdir(), 'svc-openapi-'));
    try {
      const file = path.join(dir, 'openapi.json');
      await writeFile(file, JSON.stringify(doc));
      const bin = path.resolve('node_modules/.bin/redocly');
      const run = await promisify(execFile)(bin, ['lint', file, '--format', 'json', '--extends', 'recommended'], {
        maxBuffer: 20 * 2 ** 20,
      }).catch((error: { stdout: string }) => ({ stdout: error.stdout }));
      const report = JSON.parse(run.stdout);
      const errors = report.problems.filter((p: { severity: string }) => p.severity === 'error');
      expect(errors.map((p: { ruleId: string; message: string }) => `${p.ruleId}: ${p.message}`)).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('serves a browsable docs page and the error codes page', async () => {
    const page = await t.app.inject({ method: 'GET', url: '/docs' });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('/api/v1/openapi.json');
    const asset = await t.app.inject({ method: 'GET', url: '/docs/assets/swagger-ui-bundle.js' });
    expect(asset.statusCode).toBe(200);
    const errors = await t.app.inject({ method: 'GET', url: '/docs/erreurs' });
    expect(errors.body).toContain('id="credits_insuffisants"');
  });
});
