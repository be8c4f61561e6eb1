import type { LightMyRequestResponse } from 'fastify';
import { createServer, type Server } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCOPES } from '../../domain/catalogue.ts';
import { construireEdition } from '../../domain/exports/construire.ts';
import { OPERATIONS } from '../../domain/operations.ts';
import { EXEMPLES, type ContexteExemple, type Entree } from '../../domain/sandbox/exemples.ts';
import { loadSandbox } from '../../domain/sandbox/load.ts';
import { createFolderStorage } from '../../lib/storage.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import { contractOf } from '../support/contrat.ts';
import { schemaReply, startModelServer, type ModelServer } from '../support/model-server.ts';
import { createRuntime } from '../support/runtime.ts';

// What the description promises is what is served. Every operation of the catalogue is called with its examples
// (domain/sandbox/exemples.ts) over the generated territory, with every key and representation it admits, and every
// response (status, content type, headers, body) is checked against /api/v1/openapi.json by a JSON Schema 2020-12
// validator. An operation added to the catalogue is covered without touching this file.

let t: TestApp;
let runtime: Awaited<ReturnType<typeof createRuntime>>;
let model: ModelServer;
let receiver: Server;
let contrat: Awaited<ReturnType<typeof contractOf>>;
/** Where the worker stores the dossiers' sheets for the app's links. */
let fichiers: string | undefined;
let live: string;
let test: string;

const operationIdOf = (o: { tool: string; variant?: string }) => (o.variant ? `${o.tool}_${o.variant}` : o.tool);

async function send(operationId: string, entree: Entree, headers: Record<string, string>) {
  const { method, url, body } = contrat.request(contrat.described(operationId), entree);
  return t.app.inject({
    method,
    url,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
}

/** A call expected to succeed, and to be what the description says. */
async function served(
  operationId: string,
  entree: Entree,
  cle: string,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  const res = await send(operationId, entree, { authorization: `Bearer ${cle}`, ...headers });
  const what = `${operationId} ${JSON.stringify(entree).slice(0, 200)} ${JSON.stringify(headers)}`;
  const redirection = res.statusCode === 302 && contrat.described(operationId).op.responses['302'] !== undefined;
  expect(
    (res.statusCode >= 200 && res.statusCode < 300) || redirection,
    `${what} : ${res.statusCode} ${res.body.slice(0, 500)}`,
  ).toBe(true);
  contrat.expectDescribed(operationId, res, what);
  return res;
}

beforeAll(async () => {
  runtime = await createRuntime();
  // One file storage for the app and the worker: the dossiers' sheets the worker stores, the app's links serve.
  fichiers = await mkdtemp(path.join(tmpdir(), 'svc-contrat-fichiers-'));
  const files = {
    storage: createFolderStorage(fichiers),
    secret: 'secret-des-liens-du-contrat-0123456789',
    baseUrl: null,
    linkTtlS: 3600,
  };
  // No evening window: the examples answer as described at whatever hour the suite runs (test/api/jeux.test.ts
  // tests the window with a clock).
  t = await createTestApp({ services: { tasks: runtime.engine, hub: runtime.hub, files, creneauLourd: null } });
  model = await startModelServer(schemaReply);
  await runtime.startWorker(t.db, model.url, t.app.pipeline, files);
  await loadSandbox(t.db, { dataset: 'sandbox' });
  await loadSandbox(t.db, { dataset: 'live' });
  // The sample edition of the communes, which the examples of exports and exports_telecharger list and download.
  await construireEdition({ db: t.db, storage: files.storage, jeu: 'communes', perimetre: 'echantillon' });
  receiver = createServer((req, res) => req.resume().on('end', () => res.writeHead(204).end()));
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const org = await t.organisation({ acces: 'contrat', portees: [...SCOPES] }, { personnelle: true });
  live = org.cle;
  test = (await t.admin('POST', `/organisations/${org.id}/cles`, { mode: 'test' })).body.cle;
  contrat = await contractOf(t.app);
}, 120_000);

afterAll(async () => {
  await runtime?.close();
  await t?.close();
  await model?.close();
  receiver?.close();
  if (fichiers) await rm(fichiers, { recursive: true, force: true });
});

describe('every operation serves what the description promises', () => {
  for (const operation of OPERATIONS) {
    const operationId = operationIdOf(operation);
    it(`${operationId}: its examples, with every key and representation it admits`, async () => {
      const { method, op } = contrat.described(operationId);
      const contexte: ContexteExemple = {
        recepteur: `http://127.0.0.1:${(receiver.address() as { port: number }).port}`,
        appeler: async (id, entree) => (await served(id, entree, live)).json(),
      };
      const success = op.responses['200'] ?? op.responses['202'] ?? op.responses['302'];
      const representations = Object.keys(success.content).filter((type) => type !== 'application/json');
      // A pk_test_ key too where the operation has a sandbox: the frozen territory holds the same examples.
      const cles = op['x-svc-bac-a-sable'] ? [live, test] : [live];
      for (const exemple of EXEMPLES[operationId] ?? [{}]) {
        const entree = typeof exemple === 'function' ? await exemple(contexte) : exemple;
        for (const cle of cles) {
          const res = await served(operationId, entree, cle);
          // A redirection hands out a fresh address each time (exports_telecharger): never the same answer.
          if (method === 'get' && !op.responses['302']) {
            const again = await send(operationId, entree, {
              authorization: `Bearer ${cle}`,
              'if-none-match': res.headers.etag as string,
            });
            expect(again.statusCode, `${operationId} If-None-Match`).toBe(304);
            contrat.expectDescribed(operationId, again, `${operationId} If-None-Match`);
          }
        }
        for (const type of representations) await served(operationId, entree, live, { accept: type });
      }
    }, 120_000);
  }

  it('has examples of operations of the catalogue only', () => {
    expect(Object.keys(EXEMPLES).filter((id) => !OPERATIONS.some((o) => operationIdOf(o) === id))).toEqual([]);
  });

  it('answers a call without a key with a described problem, for every operation', async () => {
    for (const operation of OPERATIONS) {
      const operationId = operationIdOf(operation);
      const { path, method } = contrat.described(operationId);
      const res = await t.app.inject({ method: method.toUpperCase() as 'GET', url: path.replace(/[{}]/g, '') });
      expect(res.json().code, operationId).toBe('cle_absente');
      contrat.expectDescribed(operationId, res, `${operationId} sans clé`);
    }
  });

  it('answers 202 to a POST that starts a task, with the result when the task ended within `attendre`', async () => {
    const starts = OPERATIONS.filter((o) => o.task && o.method === 'POST').map(operationIdOf);
    expect(starts.length).toBeGreaterThan(0);
    for (const operationId of starts) {
      for (const exemple of EXEMPLES[operationId] ?? [{}]) {
        if (typeof exemple === 'function') continue;
        const res = await served(operationId, { ...exemple, attendre: 30 }, live);
        expect(res.statusCode, operationId).toBe(202);
        expect(res.headers.location).toBe(res.json().tache.resultat_url);
        expect(res.json().tache.statut, operationId).toBe('terminee');
        expect(res.json().resultat, operationId).not.toBeNull();
      }
    }
  });
});

describe('a selection of columns', () => {
  it('serves `identite: {lat}` for champs=dpe,identite.lat, valid against the description', async () => {
    const { cle_ban } = EXEMPLES.faits_adresse![0] as { cle_ban: string };
    const body = (await served('faits_adresse', { cle_ban, champs: 'dpe,identite.lat' }, live)).json();
    expect(Object.keys(body).sort()).toEqual(['cle_ban', 'credits', 'dpe', 'identite', 'limites']);
    expect(Object.keys(body.identite)).toEqual(['lat']);
    expect(body.dpe.etiquette).toMatch(/^[A-G]$/);
  });
});
