import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FileDelivery } from '../../domain/documents/telechargement.ts';
import { importDvf } from '../../domain/dvf/import.ts';
import { construireEdition, controleVolume } from '../../domain/exports/construire.ts';
import { EDITIONS, JEUX_EXPORT } from '../../domain/exports/editions.ts';
import { createFolderStorage } from '../../lib/storage.ts';
import { ADMIN_TOKEN, createTestApp, type TestApp } from '../support/app.ts';

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
  async function lignes(jeu: 'annonces' | 'societes_civiles', sql: string) {
    const r = await construireEdition({ db: t.db, storage: files.storage, jeu, perimetre: 'contrat', now: horloge });
    expect(r.statut, r.raison ?? '').toBe('listee');
    const stored = await files.storage.get(`exports/contrat/${jeu}/2026-03-02/donnees.parquet`);
    const fichier = path.join(dir, `${jeu}.parquet`);
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

  it('a private seller’s listing is exported without position, BAN key, text or contact', async () => {
    await t.db
      .query(`INSERT INTO annonces (dataset, id, portail, identifiant, statut, type, precision_position, cle_ban,
        lat, lon, prix, type_vendeur, annonceur, titre, description, premiere_parution_estimee, entree_le, vu_le, maj_le,
        bien_uid)
      VALUES ('live', 'portal_a:1', 'portal_a', '1', 'actif', 'maison', 'adresse', '33001_0001_00001', 45.01, -0.12,
        250000, 'particulier', NULL, 'Maison de Jean Dupont', 'Appelez Jean au 06 12 34 56 78', false, now(), now(),
        now(), 'b1'),
             ('live', 'portal_a:2', 'portal_a', '2', 'actif', 'appartement', 'adresse', '33001_0002_00002', 45.02,
        -0.13, 150000, 'pro', '{"nom": "Agence du Centre"}', 'T3', 'Beau T3', false, now(), now(), now(), 'b2')`);
    const rows = await lignes('annonces', 'SELECT * FROM $F ORDER BY id');
    expect(rows.map((r) => [r.id, r.type_vendeur, r.cle_ban, r.lat])).toEqual([
      ['portal_a:1', 'particulier', null, null],
      ['portal_a:2', 'pro', '33001_0002_00002', 45.02],
    ]);
    const texte = JSON.stringify(rows);
    expect(texte).not.toMatch(/Dupont|06 12 34|Jean/);
    expect(Object.keys(rows[0]!)).not.toContain('description');
  });

  it('SIRENE units that asked not to be diffused, or purged, are not in the civil companies', async () => {
    await t.db.query(`INSERT INTO unites_legales (dataset, siren, denomination, categorie_juridique, personne_physique,
        societe_civile, diffusion_partielle, purgee, etat)
      VALUES ('live', '111111111', 'SCI DES PINS', '6540', false, true, false, false, 'A'),
             ('live', '222222222', 'SCI MARTIN FAMILLE', '6540', false, true, true, false, 'A'),
             ('live', '333333333', 'SCI PURGEE', '6540', false, true, false, true, 'C'),
             ('live', '444444444', 'SARL AUTRE', '5499', false, false, false, false, 'A')`);
    const rows = await lignes('societes_civiles', 'SELECT siren, denomination FROM $F');
    expect(rows).toEqual([{ siren: '111111111', denomination: 'SCI DES PINS' }]);
  });
});

describe(`editions: what is built, checked and held back${SKIP}`, () => {
  it('declares every dataset of the specification once, and each one not produced with its reason', () => {
    expect([...EDITIONS.keys()]).toEqual([...JEUX_EXPORT]);
    for (const e of EDITIONS.values()) {
      if (!e.produite) expect(e.raison.length, e.jeu).toBeGreaterThan(20);
      else expect(e.retrait.length, e.jeu).toBeGreaterThan(10);
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
