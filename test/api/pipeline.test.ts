import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../support/app.ts';
import { operationsEssai } from '../support/operations-essai.ts';

// A small catalogue of its own exercises the generic pipeline: every rule here holds for every operation.
const { toutes: OPS } = operationsEssai('essai', 'essai');

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ operations: OPS });
});
afterAll(async () => t?.close());

const get = (url: string, cle?: string, headers: Record<string, string> = {}) =>
  t.app.inject({
    method: 'GET',
    url: `/api/v1${url}`,
    headers: { ...(cle ? { authorization: `Bearer ${cle}` } : {}), ...headers },
  });
const post = (url: string, cle: string | undefined, payload: string, headers: Record<string, string> = {}) =>
  t.app.inject({
    method: 'POST',
    url: `/api/v1${url}`,
    headers: { 'content-type': 'application/json', ...(cle ? { authorization: `Bearer ${cle}` } : {}), ...headers },
    payload,
  });

function expectProblem(res: Awaited<ReturnType<typeof get>>, status: number, code: string) {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  const body = res.json();
  expect(body).toMatchObject({ status, code, type: `/docs/erreurs#${code}` });
  expect(body.title).toBeTruthy();
  expect(body.detail).toBeTruthy();
  expect(body.requete).toBe(res.headers['svc-requete']);
  return body;
}

describe('authentication, in the order of the error table', () => {
  it('answers cle_absente without a header and cle_invalide for an unknown, revoked or expired key', async () => {
    expectProblem(await get('/essai/echo/abc'), 401, 'cle_absente');
    expectProblem(await get('/essai/echo/abc', 'pk_live_' + 'x'.repeat(32)), 401, 'cle_invalide');
    expectProblem(await get('/essai/echo/abc', 'nimportequoi'), 401, 'cle_invalide');
    const org = await t.organisation();
    expect((await get('/essai/echo/abc', org.cle)).statusCode).toBe(200);
    expect((await t.admin('POST', `/cles/${org.cleId}/revocation`)).status).toBe(200);
    expectProblem(await get('/essai/echo/abc', org.cle), 401, 'cle_invalide');
    const expired = await t.admin('POST', `/organisations/${org.id}/cles`, { mode: 'live', expire_le: '2020-01-01' });
    expectProblem(await get('/essai/echo/abc', expired.body.cle), 401, 'cle_invalide');
  });

  it('checks suspension before scope, scope before tier, tier before sandbox, sandbox before credits', async () => {
    // A suspended organisation whose key lacks the scope: suspension is said first.
    const a = await t.organisation({ acces: 'usage' }, { portees: ['compte'] });
    await t.admin('PATCH', `/organisations/${a.id}`, { statut: 'suspendue' });
    expectProblem(await get('/essai/contrat/abc', a.cle), 403, 'organisation_suspendue');
    await t.admin('PATCH', `/organisations/${a.id}`, { statut: 'active' });
    // Lacking scope and tier: scope first.
    expectProblem(await get('/essai/contrat/abc', a.cle), 403, 'portee_insuffisante');
    // Tier too low for a sandbox key on an operation without sandbox: tier first.
    const test = await t.admin('POST', `/organisations/${a.id}/cles`, { mode: 'test' });
    expectProblem(await get('/essai/contrat/abc', test.body.cle), 403, 'palier_insuffisant');
    // Sandbox key, no sandbox for the operation, no credits left: sandbox first.
    await t.admin('POST', `/organisations/${a.id}/credits`, { credits: -500, motif: 'épuisement pour le test' });
    expectProblem(await post('/essai/ecrire', test.body.cle, '{"texte":"ab"}'), 403, 'hors_bac_a_sable');
    // The live key of the same organisation, with the scope: now the credits are said.
    const live = await t.admin('POST', `/organisations/${a.id}/cles`, { mode: 'live', plafond_mensuel: 0 });
    expectProblem(await post('/essai/ecrire', live.body.cle, '{"texte":"ab"}'), 402, 'credits_insuffisants');
    // Credits back, but the key's monthly cap is 0.
    await t.admin('POST', `/organisations/${a.id}/credits`, { credits: 10, motif: 'recharge' });
    expectProblem(await post('/essai/ecrire', live.body.cle, '{"texte":"ab"}'), 429, 'plafond_cle');
  });

  it('refuses an organisation key on an operation that needs a personal account', async () => {
    const org = await t.organisation();
    const body = expectProblem(await get('/essai/personnel/abc', org.cle), 403, 'portee_insuffisante');
    expect(body.detail).toMatch(/compte personnel/);
    const perso = await t.admin('POST', `/organisations/${org.id}/cles`, { mode: 'live', personnelle: true });
    expect((await get('/essai/personnel/abc', perso.body.cle)).statusCode).toBe(200);
  });

  it('limits the organisation per minute with quota_minute, RateLimit headers and Retry-After', async () => {
    const org = await t.organisation({ quota_minute: 3 });
    for (let i = 0; i < 3; i++) {
      const res = await get(`/essai/echo/abc?n=${i}`, org.cle);
      expect(res.statusCode).toBe(200);
      expect(Number(res.headers['ratelimit-remaining'])).toBe(2 - i);
      expect(res.headers['ratelimit-limit']).toBe('3');
    }
    const res = await get('/essai/echo/abc?n=9', org.cle);
    expectProblem(res, 429, 'quota_minute');
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('authenticates before reading the body', async () => {
    expectProblem(await post('/essai/ecrire', undefined, '{pas du json'), 401, 'cle_absente');
  });
});

describe('body and parameters', () => {
  it('answers type_contenu, corps_illisible, corps_trop_lourd and parametres_invalides field by field', async () => {
    const org = await t.organisation();
    expectProblem(
      await post('/essai/ecrire', org.cle, 'texte=ab', { 'content-type': 'text/plain' }),
      415,
      'type_contenu',
    );
    expectProblem(await post('/essai/ecrire', org.cle, '{"texte": "ab",'), 400, 'corps_illisible');
    const big = JSON.stringify({ texte: 'x'.repeat(1_100_000) });
    expectProblem(await post('/essai/ecrire', org.cle, big), 413, 'corps_trop_lourd');
    const bad = expectProblem(
      await post('/essai/ecrire', org.cle, '{"texte":"a","nombre":1.5,"inconnu":1}'),
      400,
      'parametres_invalides',
    );
    expect(bad.erreurs.map((e: { champ: string }) => e.champ).sort()).toEqual(['(corps)', 'nombre', 'texte']);
    expect(bad.erreurs.every((e: { emplacement: string }) => e.emplacement === 'corps')).toBe(true);
    const q = expectProblem(await get('/essai/echo/ab?n=-1', org.cle), 400, 'parametres_invalides');
    expect(q.erreurs).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ champ: 'id', emplacement: 'chemin' }),
        expect.objectContaining({ champ: 'n', emplacement: 'requete' }),
      ]),
    );
  });

  it('answers delai_depasse past the time-out and erreur_interne without internals, debiting nothing', async () => {
    const org = await t.organisation({ acces: 'usage' });
    expectProblem(await post('/essai/lent', org.cle, '{}'), 504, 'delai_depasse');
    const res = await post('/essai/panne', org.cle, '{}');
    const body = expectProblem(res, 500, 'erreur_interne');
    expect(res.body).not.toMatch(/postgres|motdepasse|10\.0\.0\.3/);
    expect(body.detail).toContain(body.requete);
    const releve = await t.admin('GET', `/organisations/${org.id}/releve`);
    expect(releve.body.mouvements.map((m: { genre: string }) => m.genre)).toEqual(['ouverture']);
    expect(releve.body.solde.gratuits).toBe(500);
  });

  it('answers unknown routes with a problem too', async () => {
    expectProblem(await get('/nulle/part'), 404, 'route_inconnue');
    const org = await t.organisation();
    expectProblem(await get(`/essai/echo/${'x'.repeat(1500)}`, org.cle), 400, 'parametres_invalides');
    const query = await t.app.inject({ method: 'QUERY' as 'GET', url: '/api/v1/essai/echo/abc' });
    expect(query.statusCode).toBeLessThan(500);
    expect(query.headers['content-type']).toMatch(/^application\/problem\+json/);
  });
});

describe('credits', () => {
  it('debits a priced call, shows it in the block and the headers, and explains it in the statement', async () => {
    const org = await t.organisation({ acces: 'usage' });
    const res = await get('/essai/echo/abc?n=5', org.cle);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ id: 'abc', n: 5, credits: { debites: 2, restants: 498 } });
    expect(res.headers).toMatchObject({ 'svc-credits-debites': '2', 'svc-credits-restants': '498' });
    for (const h of ['etag', 'svc-donnees-du', 'svc-age-donnees', 'ratelimit-reset', 'svc-requete']) {
      expect(res.headers[h], h).toBeDefined();
    }
    // The identical response within 24 h is not debited.
    const again = await get('/essai/echo/abc?n=5', org.cle);
    expect(again.json().credits).toEqual({ debites: 0, restants: 498 });
    // 304 on If-None-Match, not debited.
    const notModified = await get('/essai/echo/abc?n=5', org.cle, { 'if-none-match': res.headers.etag as string });
    expect(notModified.statusCode).toBe(304);
    expect(notModified.headers['svc-credits-debites']).toBe('0');
    // An absent resource is not debited.
    expectProblem(await get('/essai/echo/absent', org.cle), 404, 'ressource_absente');
    const releve = await t.admin('GET', `/organisations/${org.id}/releve`);
    expect(releve.body.mouvements).toEqual([
      expect.objectContaining({
        genre: 'debit',
        credits: -2,
        operation: 'echo_essai',
        requete: res.headers['svc-requete'],
      }),
      expect.objectContaining({ genre: 'ouverture', credits: 500 }),
    ]);
    expect(releve.body.solde.restants).toBe(498);
  });

  it('prices per element returned', async () => {
    const org = await t.organisation({ acces: 'usage' });
    expect((await get('/essai/liste?n=7', org.cle)).json().credits).toEqual({ debites: 7, restants: 493 });
    expect((await get('/essai/liste?n=0', org.cle)).json().credits).toEqual({ debites: 0, restants: 493 });
  });

  it('never overspends: 100 concurrent calls with 10 credits left debit exactly 10', async () => {
    const org = await t.organisation({ acces: 'usage', quota_minute: 1000 });
    await t.admin('POST', `/organisations/${org.id}/credits`, { credits: -490, motif: 'il en reste 10' });
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        post('/essai/ecrire', org.cle, JSON.stringify({ texte: 'x'.repeat(i + 2) })),
      ),
    );
    const served = results.filter((r) => r.statusCode === 200);
    expect(served).toHaveLength(10);
    expect(results.filter((r) => r.statusCode === 402)).toHaveLength(90);
    expect(results.every((r) => r.statusCode === 200 || r.json().code === 'credits_insuffisants')).toBe(true);
    const { rows } = await t.db.query(
      `SELECT sum(credits)::int AS total, count(*) FILTER (WHERE genre = 'debit')::int AS debits
         FROM mouvements WHERE organisation_id = $1`,
      [org.id],
    );
    expect(rows[0]).toEqual({ total: 0, debits: 10 });
  });

  it('holds a key’s monthly cap under concurrent calls: 20 at once with 3 credits of cap left serve exactly 3', async () => {
    const org = await t.organisation({ acces: 'usage', quota_minute: 1000 });
    const cle = await t.admin('POST', `/organisations/${org.id}/cles`, { mode: 'live', plafond_mensuel: 5 });
    expect((await post('/essai/ecrire', cle.body.cle, '{"texte":"ab"}')).statusCode).toBe(200);
    expect((await post('/essai/ecrire', cle.body.cle, '{"texte":"abc"}')).statusCode).toBe(200);
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        post('/essai/ecrire', cle.body.cle, JSON.stringify({ texte: 'y'.repeat(i + 10) })),
      ),
    );
    expect(results.filter((r) => r.statusCode === 200)).toHaveLength(3);
    expect(results.every((r) => r.statusCode === 200 || r.json().code === 'plafond_cle')).toBe(true);
    const { rows } = await t.db.query(
      `SELECT count(*)::int AS debits FROM mouvements WHERE cle_id = $1 AND genre = 'debit'`,
      [cle.body.id],
    );
    expect(rows[0]).toEqual({ debits: 5 });
  });

  it('bills a Data subscription from its included credits, then free credits', async () => {
    const org = await t.organisation({ acces: 'data' });
    const res = await get('/essai/echo/abc?n=1', org.cle);
    expect(res.json().credits).toEqual({ debites: 2, restants: 100_498 });
    const releve = await t.admin('GET', `/organisations/${org.id}/releve`);
    expect(releve.body.mouvements[0]).toMatchObject({
      genre: 'debit',
      pools: { inclus: -2, gratuits: 0, factures: 0 },
    });
    expect(releve.body.mouvements.map((m: { genre: string }) => m.genre)).toContain('inclus_mensuel');
  });

  it('bills beyond the free credits only under the spend cap', async () => {
    const org = await t.organisation({ acces: 'usage', plafond_depense_eur: 0.01 });
    // 0.01 € at 0.005 € per credit: 2 billable credits on top of the 500 free ones.
    expect((await get('/essai/echo/abc?n=1', org.cle)).json().credits).toEqual({ debites: 2, restants: 500 });
  });
});

describe('sandbox', () => {
  it('serves pk_test_ keys from the frozen set without debit, and refuses entries outside it', async () => {
    const org = await t.organisation({}, { mode: 'test' });
    const res = await get('/essai/echo/gel1', org.cle);
    expect(res.json().credits).toEqual({ debites: 0, restants: null });
    expect(res.headers['svc-credits-restants']).toBeUndefined();
    expectProblem(await get('/essai/echo/abc', org.cle), 403, 'hors_bac_a_sable');
  });
});

describe('admin API and cursors', () => {
  it('refuses a wrong admin token, pages the statement with cursors that cannot be tampered with', async () => {
    const wrong = await t.app.inject({
      method: 'GET',
      url: '/admin/v1/organisations/x',
      headers: { authorization: 'Bearer nope' },
    });
    expect(wrong.statusCode).toBe(401);
    const org = await t.organisation({ acces: 'usage' });
    for (let n = 0; n < 3; n++) await get(`/essai/echo/abc?n=${n}`, org.cle);
    const first = await t.admin('GET', `/organisations/${org.id}/releve?limite=2`);
    expect(first.body.mouvements).toHaveLength(2);
    const second = await t.admin(
      'GET',
      `/organisations/${org.id}/releve?limite=2&curseur=${first.body.curseur_suivant}`,
    );
    expect(second.body.mouvements).toHaveLength(2);
    expect(second.body.curseur_suivant).toBeNull();
    const tampered = first.body.curseur_suivant.replace(/^./, (c: string) => (c === 'e' ? 'f' : 'e'));
    const bad = await t.admin('GET', `/organisations/${org.id}/releve?curseur=${tampered}`);
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('parametres_invalides');
  });

  it('has no admin API when ADMIN_TOKEN is unset', async () => {
    const bare = await createTestApp({ operations: OPS, env: { ADMIN_TOKEN: '' } });
    try {
      const res = await bare.app.inject({
        method: 'GET',
        url: '/admin/v1/organisations/x',
        headers: { authorization: 'Bearer x' },
      });
      expect(res.statusCode).toBe(404);
    } finally {
      await bare.close();
    }
  });
});
