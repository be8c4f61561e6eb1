/**
 * CI smoke of the embedded default: through the admin API, an organisation with every scope and a personal key;
 * one authenticated call and one task (Temporal workflow run by the worker) must succeed. Prints `SVC_CLE=<key>` for the schemathesis run that follows.
 */
import { SCOPES } from '../domain/catalogue.ts';
import { extractPages } from '../domain/plu/pdf-text.ts';

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
// Dossier building on the demonstration territory, as a new user tries it (issue #33's acceptance): a 15 m²
// extension at an address gives a declaration with its DPMI pieces in order, a plot plan and a section whose text
// holds the scale and the distance to the boundary, and the zone's rules checked with their quotations.
const auth = { authorization: `Bearer ${key.cle}`, 'content-type': 'application/json' };
const [adresse] = (
  await call('GET', `/api/v1/adresses/recherche?q=${encodeURIComponent('3 Chemin des Prés Latresne')}`, auth)
).candidats;
const dossier = await call('POST', '/api/v1/urbanisme/dossiers', auth, {
  adresse: adresse.libelle,
  attendre: 60,
  projets: [
    { nature: 'extension', largeur_m: 5, profondeur_m: 3, ancrage: 'accole_batiment', cote: 'sud', hauteur_m: 3 },
  ],
});
// Its time-out is 150 s: followed to its end, whatever a busy machine makes of the first `attendre`.
for (let i = 0; i < 3 && dossier.tache?.statut === 'en_cours'; i++) {
  Object.assign(dossier, await call('GET', `${dossier.tache.resultat_url}?attendre=60`, auth));
}
const r = dossier.resultat;
const pieces = r?.pieces?.map((p: { code: string }) => p.code) ?? [];
const verifiees = r?.regles?.verifications?.filter((v: { citation?: string }) => v.citation) ?? [];
if (
  dossier.tache?.statut !== 'terminee' ||
  r.formalite.cerfa.numero !== '13703' ||
  pieces.slice(0, 4).join() !== 'DPMI1,DPMI2,DPMI3,DPMI4' ||
  r.regles.etat !== 'lues' ||
  verifiees.length === 0
)
  throw new Error(`demonstration dossier: ${JSON.stringify(dossier).slice(0, 2000)}`);
for (const piece of r.pieces.filter((p: { code: string }) => p.code === 'DPMI2' || p.code === 'DPMI3')) {
  const pdf = await fetch(new URL(piece.url, base));
  const text = pdf.ok ? (await extractPages(new Uint8Array(await pdf.arrayBuffer()))).pages.join(' ') : '';
  // The scale of the sheet, and the distance to a boundary (plot plan) or to both (section), as drawn.
  if (piece.etat !== 'prete' || !/Échelle : 1\/\d+/.test(text) || !/\d+,\d\d m/.test(text))
    throw new Error(`demonstration dossier ${piece.code}: ${pdf.status} ${text.slice(0, 500)}`);
}
console.log(`SVC_CLE=${key.cle}`);
