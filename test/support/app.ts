import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../../api/app.ts';
import type { Operation, Services } from '../../domain/catalogue.ts';
import { loadConfig } from '../../lib/config.ts';
import { createTestDb } from './db.ts';

export const ADMIN_TOKEN = 'adm_test_token_0123456789abcdef';

export interface TestApp {
  app: FastifyInstance;
  db: Awaited<ReturnType<typeof createTestDb>>['db'];
  /** The connection string of this test's database (for processes the test starts). */
  databaseUrl: string;
  /** An API call with a key: JSON body when `payload` is given. */
  call(
    method: 'GET' | 'POST' | 'PATCH',
    url: string,
    cle: string,
    payload?: unknown,
    headers?: Record<string, string>,
  ): Promise<LightMyRequestResponse>;
  /** Admin call helper: POST/PATCH/GET on /admin/v1 with the token. */
  admin(method: 'GET' | 'POST' | 'PATCH', url: string, payload?: unknown): Promise<{ status: number; body: any }>;
  /** A new organisation (default: access data, every scope but lien_origine) and a key of it. */
  organisation(
    org?: Record<string, unknown>,
    key?: Record<string, unknown>,
  ): Promise<{ id: string; cle: string; cleId: string }>;
  close(): Promise<void>;
}

/** The real application on a fresh database of its own, admin API on, outbound loopback allowed. */
export async function createTestApp(
  options: { operations?: Operation<any, any>[]; env?: Record<string, string>; services?: Partial<Services> } = {},
): Promise<TestApp> {
  const testDb = await createTestDb();
  // Generated files and anything else kept under DATA_DIR stay out of the working tree.
  const dataDir = await mkdtemp(path.join(tmpdir(), 'svc-test-data-'));
  const config = loadConfig({
    DATA_DIR: dataDir,
    ADMIN_TOKEN,
    LOG_LEVEL: 'silent',
    OUTBOUND_ALLOW_LOOPBACK: 'true',
    ...options.env,
  });
  const app = await buildApp({ config, db: testDb.db, operations: options.operations, services: options.services });
  await app.ready();
  const admin: TestApp['admin'] = async (method, url, payload) => {
    const res = await app.inject({
      method,
      url: `/admin/v1${url}`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      ...(payload === undefined ? {} : { payload: payload as object }),
    });
    return { status: res.statusCode, body: res.body ? res.json() : null };
  };
  return {
    app,
    call: (method, url, cle, payload, headers = {}) =>
      app.inject({
        method,
        url: `/api/v1${url}`,
        headers: {
          authorization: `Bearer ${cle}`,
          ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers,
        },
        ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
      }),
    db: testDb.db,
    databaseUrl: testDb.url,
    admin,
    async organisation(org = {}, key = {}) {
      const created = await admin('POST', '/organisations', { nom: 'Test', acces: 'data', ...org });
      if (created.status !== 201) throw new Error(`organisation: ${JSON.stringify(created.body)}`);
      const k = await admin('POST', `/organisations/${created.body.id}/cles`, { mode: 'live', ...key });
      if (k.status !== 201) throw new Error(`clé: ${JSON.stringify(k.body)}`);
      return { id: created.body.id, cle: k.body.cle, cleId: k.body.id };
    },
    async close() {
      await app.close();
      await testDb.drop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
