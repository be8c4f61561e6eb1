import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FileDelivery } from '../../domain/documents/telechargement.ts';
import { importAnnonces } from '../../domain/annonces/import.ts';
import { importDvf } from '../../domain/dvf/import.ts';
import { construireEdition, controleVolume } from '../../domain/exports/construire.ts';
import { EDITIONS, JEUX_EXPORT, sourceEdition, type JeuExport } from '../../domain/exports/editions.ts';
import { estDisponible, jeuNomme, type JeuDisponible, type TypeColonne } from '../../domain/jeux/registre.ts';
import { createFolderStorage } from '../../lib/storage.ts';
import { ADMIN_TOKEN, createTestApp, type TestApp } from '../support/app.ts';
import { appartement, fichierReleves } from '../unit/annonces/support.ts';

// Exports as a contract client uses them: an edition of the real DVF sample of Abzac built, listed with its SHA-256,
// downloaded through the 302 to a link that works for 15 minutes (the service's clock, injected) and not after; the
// perimeter set through the admin API; the tier, the perimeter and the volume check refusing what they must.

const ABZAC = path.resolve(import.meta.dirname, '../../../shared/data/dvf/dvf_geoloc_2021_33001_abzac_sample.csv');
const hasAbzac = existsSync(ABZAC);
const SKIP = hasAbzac ? '' : ' (skipped: ../shared/data/dvf is absent)';

let t: TestApp;
let dir: string;
let files: FileDelivery;
let horloge = new Date('2026-03-02T08:00:00Z');
let contrat: { id: string; cle: string };
let autre: { id: string; cle: string };
let usage: { id: string; cle: string };
/** A usage-tier client reading the same datasets through lire_jeu. */
let lecteur: { id: string; cle: string };

/** Mutations of the sample: one row per id_mutation. */
const mutationsAbzac = () =>
  new Set(
    readFileSync(ABZAC, 'utf8')
      .trim()
      .split('\n')
      .slice(1)
      .map((l) => l.split(',')[0]),
  ).size;

const perimetre = (id: string, jeux: string[], motif?: string) =>
  t.app.inject({
    method: 'PUT',
    url: `/admin/v1/organisations/${id}/exports`,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    payload: JSON.stringify({ jeux, ...(motif ? { motif } : {}) }),
  });

/** Follows a Location of this API (a path under /api/v1, no key: the signature is the credential). */
const suivre = (location: string) => t.app.inject({ method: 'GET', url: location });

/** The rows of a stored Parquet file, read by DuckDB (`$F` in `sql` is the file). */
async function lireParquet(cle: string, sql = 'SELECT * FROM $F'): Promise<Array<Record<string, unknown>>> {
  const stored = await files.storage.get(cle);
  const fichier = path.join(dir, `lu-${Math.random().toString(36).slice(2)}.parquet`);
  await writeFile(fichier, stored!.bytes);
  const instance = await DuckDBInstance.create(':memory:');
  const duck = await instance.connect();
  try {
    return (await duck.runAndReadAll(sql.replace('$F', `read_parquet('${fichier}')`))).getRowObjectsJson();
  } finally {
    duck.closeSync();
    instance.closeSync();
  }
}

/** The Parquet schema of a stored file: its columns' names and DuckDB types, in order. */
async function schemaParquet(cle: string): Promise<Array<[string, string]>> {
  const rows = await lireParquet(cle, 'DESCRIBE SELECT * FROM $F');
  return rows.map((r) => [r.column_name as string, r.column_type as string]);
}

/** A value as lire_jeu's JSON and DuckDB's read of the file both give it, by the column's type. */
function valeur(type: TypeColonne, v: unknown): unknown {
  if (v === null || v === undefined) return null;
  if (type === 'entier') return Number(v);
  if (type === 'json') return typeof v === 'string' ? JSON.parse(v) : v;
  if (type === 'horodatage') {
    return new Date(
      String(v)
        .replace(' ', 'T')
        .replace(/([+-]\d\d)$/, '$1:00'),
    ).toISOString();
  }
  return v;
}

const comparables = (jeu: JeuDisponible, lignes: Array<Record<string, unknown>>) =>
  lignes.map((l) => Object.fromEntries(jeu.colonnes.map((c) => [c.nom, valeur(c.type, l[c.nom])])));

/** Every row lire_jeu serves for `requete`, page after page. */
async function lireJeu(requete: string): Promise<Array<Record<string, unknown>>> {
  const lignes: Array<Record<string, unknown>> = [];
  let curseur: string | null = null;
  do {
    const res = await t.call(
      'GET',
      `${requete}&limite=100${curseur ? `&curseur=${encodeURIComponent(curseur)}` : ''}`,
      lecteur.cle,
    );
    expect(res.statusCode, res.body).toBe(200);
    lignes.push(...res.json().lignes);
    curseur = res.json().curseur_suivant;
  } while (curseur);
  return lignes;
}

/**
 * An edition of a registry dataset is that dataset: the file's columns are the registry's (names and types, in
 * order) and its rows are those lire_jeu serves, in the same order.
 */
async function attendreMemeJeu(jeu: JeuExport, cle: string, requete: string) {
  const edition = EDITIONS.get(jeu)!;
  expect(edition.produite && 'registre' in edition, jeu).toBe(true);
  const registre = jeuNomme((edition as { registre: string }).registre)!;
  expect(estDisponible(registre)).toBe(true);
  const declare = registre as JeuDisponible;
  const TYPES: Record<TypeColonne, string> = {
    texte: 'VARCHAR',
    entier: 'BIGINT',
    nombre: 'DOUBLE',
    booleen: 'BOOLEAN',
    date: 'DATE',
    horodatage: 'TIMESTAMP WITH TIME ZONE',
    json: 'JSON',
  };
  expect(await schemaParquet(cle)).toEqual(declare.colonnes.map((c) => [c.nom, TYPES[c.type]]));
  const fichier = comparables(declare, await lireParquet(cle));
  const servies = comparables(declare, await lireJeu(requete));
  expect(fichier.length).toBeGreaterThan(0);
  expect(fichier).toEqual(servies);
  return fichier;
}

async function compterParquet(bytes: Buffer): Promise<number> {
  const fichier = path.join(dir, `relu-${Math.random().toString(36).slice(2)}.parquet`);
  await writeFile(fichier, bytes);
  const instance = await DuckDBInstance.create(':memory:');
  const duck = await instance.connect();
  try {
    const rows = (await duck.runAndReadAll(`SELECT count(*) AS n FROM read_parquet('${fichier}')`)).getRowObjectsJson();
    return Number(rows[0]!.n);
  } finally {
    duck.closeSync();
    instance.closeSync();
  }
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'svc-exports-test-'));
  files = {
    storage: createFolderStorage(path.join(dir, 'fichiers')),
    secret: Buffer.alloc(32, 7),
    baseUrl: null,
    linkTtlS: 3600,
  };
  t = await createTestApp({ services: { files, now: () => horloge } });
  if (hasAbzac) {
    await importDvf(t.db, ABZAC);
    await importDvf(t.db, ABZAC, { dataset: 'sandbox' });
    for (const perimetre of ['contrat', 'echantillon'] as const) {
      const r = await construireEdition({
        db: t.db,
        storage: files.storage,
        jeu: 'dvf_adresse',
        perimetre,
        now: horloge,
      });
      expect(r.statut, r.raison ?? '').toBe('listee');
    }
  }
  contrat = await t.organisation({ acces: 'contrat' });
  autre = await t.organisation({ acces: 'contrat' });
  usage = await t.organisation({ acces: 'usage' });
  lecteur = await t.organisation({ acces: 'usage', quota_minute: 100_000 });
  await t.admin('POST', `/organisations/${lecteur.id}/credits`, { credits: 5000, motif: 'lectures des jeux' });
}, 120_000);

afterAll(async () => {
  await t?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the export perimeter, set through the admin API', () => {
  it('opens the datasets named, closes the others, and keeps each change dated', async () => {
    const ouvert = await perimetre(contrat.id, ['dvf_adresse', 'dpe'], 'contrat C-12');
    expect(ouvert.statusCode, ouvert.body).toBe(200);
    expect(ouvert.json()).toMatchObject({ jeux: ['dpe', 'dvf_adresse'], ouverts: ['dpe', 'dvf_adresse'], fermes: [] });
    const ferme = await perimetre(contrat.id, ['dvf_adresse'], 'avenant 1');
    expect(ferme.json()).toMatchObject({ jeux: ['dvf_adresse'], ouverts: [], fermes: ['dpe'] });
    const lu = await t.admin('GET', `/organisations/${contrat.id}/exports`);
    expect(lu.body.historique.find((h: any) => h.jeu === 'dpe')).toMatchObject({
      motif_ouverture: 'contrat C-12',
      motif_fermeture: 'avenant 1',
    });
    expect(lu.body.historique.find((h: any) => h.jeu === 'dpe').ferme_le).not.toBeNull();
  });

  it('refuses an unknown dataset field by field, and an unknown organisation', async () => {
    const res = await perimetre(contrat.id, ['dvf_adresse', 'inconnu']);
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('parametres_invalides');
    expect(JSON.stringify(res.json().erreurs)).toContain('jeux');
    const absente = await perimetre('00000000-0000-4000-8000-000000000000', ['dvf_adresse']);
    expect(absente.statusCode).toBe(404);
  });
});

describe(`exports and exports_telecharger${SKIP}`, () => {
  it.skipIf(!hasAbzac)('lists the contract edition, follows the 302, and the file has the listed SHA-256', async () => {
    await perimetre(contrat.id, ['dvf_adresse']);
    const liste = await t.call('GET', '/exports?jeu=dvf_adresse', contrat.cle);
    expect(liste.statusCode, liste.body).toBe(200);
    const body = liste.json();
    expect(body.duree_lien_s).toBe(900);
    expect(body.retrait_particuliers).toMatch(/particulier/);
    expect(body.credits.debites).toBe(0);
    const edition = body.editions.find((e: any) => e.perimetre === 'contrat' && e.format === 'parquet');
    expect(edition).toMatchObject({ jeu: 'dvf_adresse', date: '2026-03-02', dictionnaire: true, fiche_qualite: true });
    expect(edition.lignes).toBe(mutationsAbzac());
    expect(edition.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(body.editions.map((e: any) => `${e.perimetre} ${e.format}`).sort()).toEqual([
      'contrat csv.gz',
      'contrat parquet',
      'echantillon csv.gz',
      'echantillon parquet',
    ]);

    const res = await t.call('GET', edition.telechargement.replace('/api/v1', ''), contrat.cle);
    expect(res.statusCode, res.body).toBe(302);
    const location = res.headers.location as string;
    expect(res.json()).toMatchObject({
      jeu: 'dvf_adresse',
      date: '2026-03-02',
      format: 'parquet',
      fichier: 'donnees',
      perimetre: 'contrat',
      sha256: edition.sha256,
      lignes: edition.lignes,
      expire_le: '2026-03-02T08:15:00.000Z',
      url: location,
    });
    const fichier = await suivre(location);
    expect(fichier.statusCode, fichier.body).toBe(200);
    expect(fichier.headers['content-type']).toBe('application/vnd.apache.parquet');
    expect(createHash('sha256').update(fichier.rawPayload).digest('hex')).toBe(edition.sha256);
    expect(fichier.rawPayload.byteLength).toBe(edition.taille_octets);
    expect(await compterParquet(fichier.rawPayload)).toBe(edition.lignes);

    // 14 min 59 s later the link still works; at 15 minutes it no longer does.
    horloge = new Date(horloge.getTime() + 899_000);
    expect((await suivre(location)).statusCode).toBe(200);
    horloge = new Date(horloge.getTime() + 1_000);
    const expire = await suivre(location);
    expect(expire.statusCode).toBe(404);
    expect(expire.json().code).toBe('ressource_absente');
    expect(expire.json().detail).toMatch(/expiré/);
    // An altered link opens nothing either.
    const altere = await suivre(location.replace('donnees.parquet', 'donnees.csv.gz'));
    expect(altere.statusCode).toBe(404);
    horloge = new Date('2026-03-02T08:00:00Z');
  });

  it.skipIf(!hasAbzac)('serves the dictionary and the quality sheet, and logs each download', async () => {
    const dico = await t.call('GET', '/exports/dvf_adresse/2026-03-02?fichier=dictionnaire', contrat.cle);
    expect(dico.statusCode).toBe(302);
    const lu = await suivre(dico.headers.location as string);
    expect(createHash('sha256').update(lu.rawPayload).digest('hex')).toBe(dico.json().sha256);
    expect(lu.json().colonnes.map((c: any) => c.nom)).toContain('valeur_fonciere');
    // Each column's meaning is the registry's description of it: never an empty entry.
    const mutations = jeuNomme('mutations') as JeuDisponible;
    expect(lu.json().colonnes.map((c: any) => [c.nom, c.type, c.sens])).toEqual(
      mutations.colonnes.map((c) => [c.nom, c.type, c.description]),
    );
    for (const c of lu.json().colonnes) expect(c.sens.trim(), c.nom).not.toBe('');
    const fiche = await t.call('GET', '/exports/dvf_adresse/2026-03-02?fichier=fiche_qualite', contrat.cle);
    const qualite = (await suivre(fiche.headers.location as string)).json();
    expect(qualite).toMatchObject({ lignes: mutationsAbzac(), lignes_source: mutationsAbzac() });
    expect(qualite.periode.de.slice(0, 4)).toBe('2021');
    expect(qualite.nuls_par_colonne.id_mutation).toBe(0);
    expect(qualite.controle.statut).toBe('listee');
    const csv = await t.call('GET', '/exports/dvf_adresse/2026-03-02?format=csv.gz', contrat.cle);
    expect(csv.statusCode).toBe(302);
    const gz = await suivre(csv.headers.location as string);
    expect(createHash('sha256').update(gz.rawPayload).digest('hex')).toBe(csv.json().sha256);

    const { rows } = await t.db.query(
      `SELECT t.fichier, e.format, e.perimetre FROM exports_telechargements t JOIN exports_editions e ON e.id = t.edition_id
        WHERE t.organisation_id = $1 ORDER BY t.id`,
      [contrat.id],
    );
    expect(rows.map((r) => `${r.fichier} ${r.format} ${r.perimetre}`)).toEqual([
      'donnees parquet contrat',
      'dictionnaire parquet contrat',
      'fiche_qualite parquet contrat',
      'donnees csv.gz contrat',
    ]);
  });

  it.skipIf(!hasAbzac)('dvf_adresse is the mutations dataset: its columns, and the rows lire_jeu serves', async () => {
    const fichier = await attendreMemeJeu(
      'dvf_adresse',
      'exports/contrat/dvf_adresse/2026-03-02/donnees.parquet',
      '/jeux/mutations?filtre[code_commune][eq]=33001',
    );
    expect(fichier).toHaveLength(mutationsAbzac());
  });

  it.skipIf(!hasAbzac)('opens only the sample outside the perimeter, and says so for the contract file', async () => {
    const liste = (await t.call('GET', '/exports', autre.cle)).json();
    expect(new Set(liste.editions.map((e: any) => e.perimetre))).toEqual(new Set(['echantillon']));
    const echantillon = await t.call('GET', '/exports/dvf_adresse/2026-03-02', autre.cle);
    expect(echantillon.statusCode).toBe(302);
    expect(echantillon.json().perimetre).toBe('echantillon');
    const horsPerimetre = await t.call('GET', '/exports/dvf_adresse/2026-03-02?perimetre=contrat', autre.cle);
    expect(horsPerimetre.statusCode).toBe(404);
    expect(horsPerimetre.json().code).toBe('ressource_absente');
    expect(horsPerimetre.json().detail).toMatch(/périmètre/);
    const absente = await t.call('GET', '/exports/dvf_adresse/2020-01-01', contrat.cle);
    expect(absente.statusCode).toBe(404);
    expect(absente.json().detail).toMatch(/Aucune édition/);
    const pmtiles = await t.call('GET', '/exports/tuiles/2026-03-02?format=pmtiles', contrat.cle);
    expect(pmtiles.statusCode).toBe(404);
  });

  it('refuses a usage-tier key with the tier problem, and bad parameters field by field', async () => {
    for (const url of ['/exports', '/exports/dvf_adresse/2026-03-02']) {
      const res = await t.call('GET', url, usage.cle);
      expect(res.statusCode, url).toBe(403);
      expect(res.json().code).toBe('palier_insuffisant');
    }
    const mauvais = await t.call('GET', '/exports/cadastre/2026-13-02', contrat.cle);
    expect(mauvais.statusCode).toBe(400);
    expect(
      mauvais
        .json()
        .erreurs.map((e: any) => e.champ)
        .sort(),
    ).toEqual(['date', 'jeu']);
    // Days the calendar or PostgreSQL does not have: refused as such, never a server error.
    for (const jour of ['2025-02-30', '0000-01-01']) {
      const res = await t.call('GET', `/exports/dvf_adresse/${jour}`, contrat.cle);
      expect(res.statusCode, jour).toBe(400);
      expect(res.json().erreurs.map((e: any) => e.champ)).toEqual(['date']);
    }
  });

  it('is not a tool of the Hub nor of MCP', async () => {
    const mcp = await t.app.inject({
      method: 'POST',
      url: '/mcp',
      headers: {
        authorization: `Bearer ${contrat.cle}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      payload: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });
    expect(mcp.statusCode, mcp.body).toBe(200);
    const outils = mcp.body.includes('"tools"') ? mcp.body : '';
    expect(outils).toContain('"tools"');
    expect(outils).not.toMatch(/"name":"exports/);
  });
});

describe('the removal of private individuals, in the rows of the files', () => {
  /** Builds the day's contract edition of `jeu`; gives the key of a file of it. */
  async function construire(jeu: 'annonces' | 'societes_civiles') {
    const r = await construireEdition({ db: t.db, storage: files.storage, jeu, perimetre: 'contrat', now: horloge });
    expect(r.statut, r.raison ?? '').toBe('listee');
    return (nom: string) => `exports/contrat/${jeu}/2026-03-02/${nom}`;
  }

  const lireJson = async (cle: string) => JSON.parse(Buffer.from((await files.storage.get(cle))!.bytes).toString());

  it('a private seller’s listing is never named nor reachable, and is the row lire_jeu serves', async () => {
    const ici = {
      insee: '33001',
      code_postal: '33230',
      position: { lat: 45.0135, lon: -0.1262 },
      precision: 'adresse',
    };
    const releves = [
      appartement({
        ...ici,
        id: '1',
        prix: 250_000,
        premiere_parution: '2026-02-20',
        type_vendeur: 'particulier',
        annonceur: { nom: 'Jean Dupont', telephone: '06 12 34 56 78', email: 'jean.dupont@example.org' },
        titre: 'Maison de M. Dupont',
        description: 'Appelez M. Dupont au 06 12 34 56 78 ou jean.dupont@example.org.',
      }),
      appartement({ ...ici, id: '2', prix: 150_000, premiere_parution: '2026-02-21' }),
    ];
    const r = await importAnnonces(t.db, await fichierReleves(dir, 'releves.jsonl', releves), {
      maintenant: new Date('2026-03-01T00:00:00Z'),
    });
    expect(r.rejetes).toEqual([]);
    const cle = await construire('annonces');
    const rows = await attendreMemeJeu('annonces', cle('donnees.parquet'), '/jeux/annonces?filtre[insee][eq]=33001');
    const particulier = rows.find((r) => r.type_vendeur === 'particulier')!;
    const pro = rows.find((r) => r.type_vendeur === 'pro')!;
    expect(rows).toHaveLength(2);
    expect([particulier.vendeur_nom, particulier.vendeur_telephone, particulier.vendeur_email]).toEqual([
      null,
      null,
      null,
    ]);
    expect([pro.vendeur_nom, pro.vendeur_telephone]).toEqual(['AGENCE DU CANAL', '01 43 00 00 00']);
    // Not named, no contact, anywhere in the row (its title and description masked at import, as lire_jeu has them).
    expect(JSON.stringify(rows)).not.toMatch(/Dupont|06 12 34|jean\./i);
    // Its position is served, as for every listing by the list format and lire_jeu.
    expect(particulier).toMatchObject({ lat: 45.0135, lon: -0.1262, precision_position: 'adresse' });
    const dico = await lireJson(cle('dictionnaire.json'));
    expect(dico.retrait_particuliers).toMatch(/particulier/);
    for (const c of dico.colonnes) expect(c.sens.trim(), c.nom).not.toBe('');
  });

  it('SIRENE units that asked not to be diffused, or purged, are not in the civil companies', async () => {
    await t.db.query(`INSERT INTO unites_legales (dataset, siren, denomination, categorie_juridique, personne_physique,
        societe_civile, diffusion_partielle, purgee, etat, ape, nic_siege)
      VALUES ('live', '111111111', 'SCI DES PINS', '6540', false, true, false, false, 'A', '68.20B', '00011'),
             ('live', '222222222', 'SCI MARTIN FAMILLE', '6540', false, true, true, false, 'A', '68.20B', '00012'),
             ('live', '333333333', 'SCI PURGEE', '6540', false, true, false, true, 'C', '68.20B', NULL),
             ('live', '444444444', 'SARL AUTRE', '5499', false, false, false, false, 'A', '68.31Z', NULL)`);
    await t.db.query(`INSERT INTO etablissements (dataset, siret, siren, nic, diffusion_partielle, code_postal, insee,
        commune)
      VALUES ('live', '11111111100011', '111111111', '00011', false, '33230', '33001', 'ABZAC'),
             ('live', '22222222200012', '222222222', '00012', true, '33230', '33001', 'ABZAC')`);
    const cle = await construire('societes_civiles');
    const rows = await lireParquet(cle('donnees.parquet'));
    expect(rows.map((r) => [r.siren, r.denomination])).toEqual([['111111111', 'SCI DES PINS']]);
    // The file's row is the one lire_jeu serves for sirene_immobilier, whose other units the file withholds.
    const sirene = jeuNomme('sirene_immobilier') as JeuDisponible;
    const servies = await lireJeu('/jeux/sirene_immobilier?filtre[siren][in]=111111111,222222222,333333333,444444444');
    expect(servies.map((l) => l.siren)).toEqual(['111111111', '222222222', '333333333', '444444444']);
    expect(comparables(sirene, rows)).toEqual(comparables(sirene, servies.slice(0, 1)));
    // The seat of a unit in partial diffusion is served nowhere, lire_jeu included.
    expect(servies.map((l) => l.siege_code_postal)).toEqual(['33230', null, null, null]);
    expect((await schemaParquet(cle('donnees.parquet'))).map(([nom]) => nom)).toEqual(
      sirene.colonnes.map((c) => c.nom),
    );
    const fiche = await lireJson(cle('fiche_qualite.json'));
    expect(fiche).toMatchObject({ lignes: 1, lignes_source: 3, lignes_retirees: 2 });
    expect(fiche.retrait_particuliers).toMatch(/diffusion partielle/);
  });
});

describe(`editions: what is built, checked and held back${SKIP}`, () => {
  it('declares every dataset of the specification once, and each one not produced with its reason', () => {
    expect([...EDITIONS.keys()]).toEqual([...JEUX_EXPORT]);
    for (const e of EDITIONS.values()) {
      if (!e.produite) expect(e.raison.length, e.jeu).toBeGreaterThan(20);
      else expect(sourceEdition(e, 'live').retrait.length, e.jeu).toBeGreaterThan(10);
    }
  });

  it('gives every column of every edition a meaning, and an edition of the registry its columns', () => {
    for (const e of EDITIONS.values()) {
      if (!e.produite) continue;
      const source = sourceEdition(e, 'sandbox');
      for (const c of source.colonnes) expect(c.sens.trim(), `${e.jeu}.${c.nom}`).not.toBe('');
      if (e.colonneDate)
        expect(
          source.colonnes.map((c) => c.nom),
          e.jeu,
        ).toContain(e.colonneDate);
      if (!('registre' in e)) continue;
      const registre = jeuNomme(e.registre) as JeuDisponible;
      expect(
        source.colonnes.map((c) => [c.nom, c.type, c.sens]),
        e.jeu,
      ).toEqual(registre.colonnes.map((c) => [c.nom, c.type, c.description]));
    }
  });

  it('holds back an empty edition and one whose volume fell by more than half', async () => {
    expect(controleVolume(0, 0, null)).toMatch(/vide/);
    expect(controleVolume(40, 100, { date: '2026-03-01', lignes: 100 })).toMatch(/baisse de 60 %/);
    expect(controleVolume(60, 100, { date: '2026-03-01', lignes: 100 })).toBeNull();
    const vide = await construireEdition({
      db: t.db,
      storage: files.storage,
      jeu: 'audits',
      perimetre: 'contrat',
      now: horloge,
    });
    expect(vide).toMatchObject({ statut: 'retenue', lignes: 0 });
    await perimetre(contrat.id, ['dvf_adresse', 'audits']);
    const liste = (await t.call('GET', '/exports?jeu=audits', contrat.cle)).json();
    expect(liste.editions).toEqual([]);
    const refus = await t.call('GET', '/exports/audits/2026-03-02', contrat.cle);
    expect(refus.statusCode).toBe(404);
    expect(refus.json().detail).toMatch(/retenue/);
  });

  it.skipIf(!hasAbzac)('holds back the next day’s edition when most rows are gone', async () => {
    await t.db.query(
      `DELETE FROM dvf_mutations WHERE dataset = 'live' AND id_mutation IN (
         SELECT id_mutation FROM dvf_mutations WHERE dataset = 'live' ORDER BY id_mutation LIMIT 40)`,
    );
    const lendemain = new Date('2026-03-03T08:00:00Z');
    const r = await construireEdition({
      db: t.db,
      storage: files.storage,
      jeu: 'dvf_adresse',
      perimetre: 'contrat',
      now: lendemain,
    });
    expect(r.statut).toBe('retenue');
    expect(r.raison).toMatch(/baisse de \d+ %/);
    const { rows } = await t.db.query(
      `SELECT date::text AS date, statut FROM exports_editions WHERE jeu = 'dvf_adresse' AND perimetre = 'contrat'
        AND format = 'parquet' ORDER BY date`,
    );
    expect(rows).toEqual([
      { date: '2026-03-02', statut: 'listee' },
      { date: '2026-03-03', statut: 'retenue' },
    ]);
  });
});
