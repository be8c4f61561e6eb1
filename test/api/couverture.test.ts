import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { effectOf, operationId, type Operation } from '../../domain/catalogue.ts';
import { OPERATIONS } from '../../domain/operations.ts';
import { loadSandbox } from '../../domain/sandbox/load.ts';
import { createTestApp, type TestApp } from '../support/app.ts';

// Coverage said, everywhere: an answer whose main list is empty or whose figures are null says why, in `limites` or
// in a `qualite.drapeaux` above what is missing (not in DVF: Alsace-Moselle, Mayotte; nothing there; outside the
// imported data). Every read operation is called on the demonstration territory with an input that yields data and
// with inputs that yield nothing; what the first serves and the others do not is what must be explained, by
// something the first does not say. An error answer explains itself in its problem's `detail`, and bills nothing.

type Entree = Record<string, unknown>;

/** Per operationId: an input the demonstration answers with data, then inputs that yield nothing. */
const CAS: Record<string, { plein: Entree; vides: Entree[] }> = {
  resoudre_adresse: {
    plein: { q: '11 rue des Pins Latresne' },
    vides: [
      { q: 'zzqx wvkj' },
      { q: '3 rue de la Canebière 13001 Marseille' },
      { q: 'rue des Pins', code_postal: '13001' },
    ],
  },
  // A listing of the demonstration, then one no portal has; the feed of a commune, then places and a time without.
  annonce: { plein: { id: 'portal_a:9000001' }, vides: [{ id: 'portal_a:0000000' }] },
  flux_annonces: { plein: { insee: '33234' }, vides: [{ insee: '13201' }, { depuis: '2099-01-01' }] },
  resoudre_adresse_inverse: { plein: { lat: 44.782339, lon: -0.498405 }, vides: [{ lat: 43.2965, lon: 5.3698 }] },
  faits_adresse: { plein: { cle_ban: '33234_z008_00018_ter' }, vides: [{ cle_ban: '67482_z001_00001' }] },
  ventes_adresse: { plein: { cle_ban: '75111_z025_00010' }, vides: [{ cle_ban: '67482_z001_00001' }] },
  ventes_adresse_parcelle: {
    plein: { id_parcelle: '33001000BP0402' },
    vides: [{ id_parcelle: '67482000AB0001' }, { id_parcelle: '13201000AB0001' }],
  },
  ventes: {
    plein: { insee: '33234' },
    vides: [
      { insee: '67482' },
      { insee: '97611' },
      { insee: '13201' },
      { lat: 43.2965, lon: 5.3698, rayon_m: 500 },
      { insee: '33234', depuis: '2031-01-01' },
    ],
  },
  ventes_mutation: { plein: { id_mutation: '2021-9000001' }, vides: [{ id_mutation: '2021-0000000' }] },
  estimer_bien: {
    plein: { type: 'appartement', surface: 45, insee: '75111' },
    vides: [
      { type: 'appartement', surface: 45, insee: '67482' },
      { type: 'appartement', surface: 45, insee: '97611' },
      { type: 'appartement', surface: 45, insee: '13201' },
    ],
  },
  commune: { plein: { insee: '33234' }, vides: [{ insee: '67482' }, { insee: '97611' }, { insee: '13201' }] },
  comparer_communes: { plein: { insee: '33234,33001' }, vides: [{ insee: '67482,97611,13201' }] },
  palmares_communes: {
    plein: { indicateur: 'prix-bas', departement: '33' },
    vides: [
      { indicateur: 'prix-bas', departement: '67' },
      { indicateur: 'prix-bas', departement: '976' },
      { indicateur: 'prix-bas', departement: '13' },
    ],
  },
  prix_commune: { plein: { insee: '33001' }, vides: [{ insee: '67482' }, { insee: '97611' }, { insee: '13201' }] },
  prix_iris: { plein: { code_iris: '332340000' }, vides: [{ code_iris: '674820201' }, { code_iris: '132010101' }] },
  prix_iris_commune: {
    plein: { insee: '33234' },
    vides: [{ insee: '67482' }, { insee: '97611' }, { insee: '13201' }],
  },
  secteur: { plein: { cp: '59000' }, vides: [{ cp: '97600' }, { cp: '13001' }] },
  ventes_commune: {
    plein: { insee: '33001' },
    vides: [{ insee: '67482' }, { insee: '97611' }, { insee: '13201' }],
  },
  ventes_commune_code_postal: { plein: { code_postal: '75011' }, vides: [{ code_postal: '13001' }] },
  avis_zone: { plein: { insee: '33001' }, vides: [{ insee: '13201' }, { insee: '67482' }] },
  permis_adresse: {
    plein: { cle_ban: '33001_z015_00002' },
    vides: [{ cle_ban: '67482_z001_00001' }, { cle_ban: '75111_z025_00010' }],
  },
  permis_adresse_parcelle: { plein: { id_parcelle: '33001000AD0397' }, vides: [{ id_parcelle: '13201000AB0001' }] },
  societes_civiles: { plein: { cle_ban: '33001_z003_00012' }, vides: [{ cle_ban: '67482_z001_00001' }] },
  // The demonstration's agencies: Latresne's, then places and names with none (404 ressource_absente, said); a
  // commune's market, then a commune and a month without agency.
  agences: { plein: { insee: '33234' }, vides: [{ insee: '13201' }, { enseigne: 'zzqx' }] },
  agences_siren: { plein: { siren: '999675622' }, vides: [{ siren: '000000000' }] },
  agences_commune: { plein: { insee: '33234' }, vides: [{ insee: '13201' }, { insee: '33234', mois: '2020-01' }] },
  // The demonstration's journal: a commune of the territory, then places and a time it has no novelty of.
  flux_adresses: {
    plein: { insee: '33234' },
    vides: [{ insee: '13201' }, { cp: '13001' }, { depuis: '2099-01-01' }],
  },
  // The demonstration's planning packages and easements cover its communes; Marseille 1er is outside them.
  urbanisme_adresse: { plein: { cle_ban: '33234_z008_00018_ter' }, vides: [{ cle_ban: '13201_z001_00001' }] },
  urbanisme_adresse_point: { plein: { lat: 44.782339, lon: -0.498405 }, vides: [{ lat: 43.2965, lon: 5.3698 }] },
  documents_urbanisme: { plein: { insee: '33234' }, vides: [{ insee: '13201' }] },
  // Pre-market: Alsace-Moselle is outside the calibrated perimeter; Marseille is outside the imported data.
  pre_marche_adresse: { plein: { cle_ban: '33234_z011_00010' }, vides: [{ cle_ban: '67482_z001_00002' }] },
  pre_marche_zone: { plein: { insee: '33234' }, vides: [{ insee: '67482' }, { insee: '13201' }] },
  // A parcel of the demonstration, then a point no imported parcel lies under: the 404 explains itself.
  coupes_facades: {
    plein: {
      adresse: '11 rue des Pins Latresne',
      code_postal: '33360',
      projets: [{ nature: 'abri', largeur_m: 2, profondeur_m: 2 }],
    },
    vides: [{ lat: 43.2965, lon: 5.3698, projets: [{ nature: 'abri', largeur_m: 2, profondeur_m: 2 }] }],
  },
  // Computed from the law's values wherever the commune is: only an unknown commune yields nothing.
  taxe_amenagement: {
    plein: { insee: '33234', surface_taxable_creee_m2: 120, residence_principale: true },
    vides: [{ insee: '99999', surface_taxable_creee_m2: 120, residence_principale: true }],
  },
};

/**
 * Read operations whose answers are not the territory's coverage, and why: what the caller's own account holds, the
 * list of models, and tasks (a task that finds nothing fails with its problem, as its direct call would).
 */
const HORS_COUVERTURE: Record<string, string> = {
  memoire: 'la mémoire du compte appelant',
  profil_investisseur: 'le profil du compte appelant',
  webhooks: 'les abonnements de l’organisation',
  veilles: 'les veilles et alertes de l’organisation',
  resultats_veilles: 'les résultats des veilles et alertes de l’organisation',
  conversations_hub: 'les conversations de la clé',
  conversations_hub_lire: 'une conversation de la clé',
  modeles: 'la liste des modèles, sans territoire',
  modeles_modele: 'un modèle, sans territoire',
  lire_document: 'une tâche sur les documents fournis',
  estimer_bien_affine: 'une tâche : son échec porte le problème de estimer_bien',
  exports: 'les éditions du périmètre de contrat de l’organisation, sans territoire',
  exports_telecharger: 'un fichier d’une édition, sans territoire (une édition absente : 404 qui le dit)',
  jeux: 'la liste des jeux de données, sans territoire',
  schema_jeu: 'le schéma d’un jeu, sans territoire',
  lire_jeu: 'des lignes filtrées par le client : une page vide est la réponse à ses filtres',
  agreger_jeu: 'des groupes des lignes filtrées par le client : aucun groupe est la réponse à ses filtres',
};

let t: TestApp;
let live: string;

function requete(operation: Operation, entree: Entree): { url: string; body?: Entree } {
  const query = new URLSearchParams();
  const body: Entree = {};
  for (const [k, v] of Object.entries(entree)) {
    if (operation.path.includes(`{${k}}`)) continue;
    if (operation.method === 'GET') query.set(k, String(v));
    else body[k] = v;
  }
  const chemin = operation.path.replace(/\{(\w+)\}/g, (_: string, k: string) => encodeURIComponent(String(entree[k])));
  return { url: query.size > 0 ? `${chemin}?${query}` : chemin, ...(operation.method === 'GET' ? {} : { body }) };
}

async function appeler(operation: Operation, entree: Entree) {
  const { url, body } = requete(operation, entree);
  return t.call(operation.method, url, live, body);
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The number of observations of a `qualite` block, or null. */
const observations = (value: Record<string, unknown>): number | null =>
  isObject(value.qualite) && typeof value.qualite.n === 'number' ? value.qualite.n : null;

/**
 * Paths (array indices as `[]`) that hold data: a figure, a group or a list not empty (a text or a date may be
 * null by nature: a site not opened yet), and a `qualite` block (`<path>.qualite.n`) with observations behind it.
 */
function servis(value: unknown, chemin = '', out = new Set<string>()): Set<string> {
  if (value === null || (Array.isArray(value) && value.length === 0)) return out;
  if (typeof value === 'number' || typeof value === 'object') out.add(chemin);
  if (Array.isArray(value)) for (const v of value) servis(v, `${chemin}[]`, out);
  else if (isObject(value)) {
    if ((observations(value) ?? 0) > 0) out.add(`${chemin}.qualite.n`);
    for (const [k, v] of Object.entries(value))
      if (k !== 'qualite' && k !== 'credits') servis(v, `${chemin}.${k}`, out);
  }
  return out;
}

/**
 * What the answer leaves null or empty where the full answer serves something, each with the flags of the `qualite`
 * blocks above it (the answer's own included).
 */
function manques(value: unknown, pleins: Set<string>, chemin = '', drapeaux: string[] = []): Array<[string, string[]]> {
  if (value === null || (Array.isArray(value) && value.length === 0))
    return pleins.has(chemin) ? [[chemin, drapeaux]] : [];
  if (Array.isArray(value)) return value.flatMap((v) => manques(v, pleins, `${chemin}[]`, drapeaux));
  if (!isObject(value)) return [];
  const qualite = value.qualite;
  const ici =
    isObject(qualite) && Array.isArray(qualite.drapeaux) ? [...drapeaux, ...(qualite.drapeaux as string[])] : drapeaux;
  // A value with no observation behind it, where the full answer has some.
  const sansObservation: Array<[string, string[]]> =
    observations(value) === 0 && pleins.has(`${chemin}.qualite.n`) ? [[`${chemin}.qualite.n`, ici]] : [];
  return [
    ...sansObservation,
    ...Object.entries(value).flatMap(([k, v]) =>
      k === 'qualite' || k === 'credits' ? [] : manques(v, pleins, `${chemin}.${k}`, ici),
    ),
  ];
}

const limites = (body: unknown): string[] =>
  isObject(body) && Array.isArray(body.limites) ? (body.limites as string[]) : [];

const lues = OPERATIONS.filter((o) => effectOf(o) === 'lecture' && !o.task && !o.ownCredits);

beforeAll(async () => {
  t = await createTestApp();
  await loadSandbox(t.db, { dataset: 'live' });
  live = (await t.organisation({ acces: 'contrat' }, { personnelle: true })).cle;
  // A review of Abzac, so that avis_zone has a full answer to compare with.
  const avis = await t.call('POST', '/communes/33001/avis', live, {
    note: 4,
    titre: 'Calme',
    contenu: 'Quartier calme et abordable.',
  });
  expect(avis.statusCode, avis.body).toBe(200);
}, 300_000);

afterAll(async () => {
  await t?.close();
});

describe('coverage said, everywhere', () => {
  it('has a case, or a reason not to, for every read operation', () => {
    const ids = lues.map(operationId);
    expect(ids.filter((id) => !(id in CAS) && !(id in HORS_COUVERTURE))).toEqual([]);
    expect(Object.keys(CAS).filter((id) => !ids.includes(id))).toEqual([]);
  });

  for (const [id, cas] of Object.entries(CAS)) {
    it(`${id}: an answer that yields nothing says why`, async () => {
      const operation = lues.find((o) => operationId(o) === id)!;
      const plein = await appeler(operation, cas.plein);
      expect(plein.statusCode, `${JSON.stringify(cas.plein)} ${plein.body.slice(0, 300)}`).toBeLessThan(300);
      const pleins = servis(plein.json());
      const generales = new Set(limites(plein.json()));
      for (const entree of cas.vides) {
        const res = await appeler(operation, entree);
        const quoi = `${id} ${JSON.stringify(entree)} → ${res.statusCode}`;
        const body = res.json();
        if (res.statusCode >= 400) {
          expect(res.statusCode, `${quoi} ${res.body}`).toBeLessThan(500);
          expect(res.headers['content-type'], quoi).toMatch(/^application\/problem\+json/);
          expect(String(body.detail ?? '').length, `${quoi} : detail`).toBeGreaterThan(20);
          continue;
        }
        const absents = manques(body, pleins);
        // The input yields nothing: otherwise this case proves nothing.
        expect(absents.length, `${quoi} : rien ne manque ${res.body.slice(0, 400)}`).toBeGreaterThan(0);
        const raisons = limites(body).filter((l) => !generales.has(l));
        for (const [chemin, drapeaux] of absents) {
          expect(
            raisons.length + drapeaux.length,
            `${quoi} : ${chemin} manque sans raison (limites ${JSON.stringify(limites(body))})`,
          ).toBeGreaterThan(0);
        }
      }
    });
  }
});
