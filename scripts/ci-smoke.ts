/**
 * CI smoke of the embedded default: through the admin API, an organisation with every scope and a personal key;
 * one authenticated call and one task (Temporal workflow run by the worker) must succeed. Prints `SVC_CLE=<key>` for the schemathesis run that follows.
 */
import { SCOPES } from '../domain/catalogue.ts';

const [base, adminToken] = process.argv.slice(2);
if (!base || !adminToken) throw new Error('usage: ci-smoke.ts <base url> <admin token>');
const admin = { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' };

async function call(method: string, url: string, headers: Record<string, string>, body?: unknown) {
  const res = await fetch(base + url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${url} → ${res.status} ${text}`);
  return JSON.parse(text);
}

const org = await call('POST', '/admin/v1/organisations', admin, {
  nom: 'CI schemathesis',
  acces: 'contrat',
  portees: [...SCOPES],
  quota_minute: 1_000_000,
  plafond_depense_eur: 1000,
});
const key = await call('POST', `/admin/v1/organisations/${org.id}/cles`, admin, { mode: 'live', personnelle: true });
const profile = await call('GET', '/api/v1/compte/profil', { authorization: `Bearer ${key.cle}` });
if (!('existe' in profile) || !('credits' in profile))
  throw new Error(`unexpected profile: ${JSON.stringify(profile)}`);
// A long operation end to end: the api starts a workflow, the worker runs it, `attendre` returns its end.
const task = await call(
  'POST',
  '/api/v1/urbanisme/reglements',
  { authorization: `Bearer ${key.cle}`, 'content-type': 'application/json' },
  { lat: 45.5, lon: 1.5, attendre: 30 },
);
if (task.tache?.statut !== 'terminee') throw new Error(`task not ended: ${JSON.stringify(task)}`);
console.log(`SVC_CLE=${key.cle}`);
