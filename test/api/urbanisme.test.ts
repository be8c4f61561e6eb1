import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importBan } from '../../domain/adresses/import-ban.ts';
import { windows1252 } from '../../domain/sandbox/part.ts';
import { LECTURE_VERSION } from '../../domain/urbanisme/lectures.ts';
import { importPaquetsGpu } from '../../domain/urbanisme/paquet-gpu.ts';
import { importStatutCommunes } from '../../domain/urbanisme/statut-communes-import.ts';
import { importSup } from '../../domain/urbanisme/sup-import.ts';
import { METRES_PER_DEGREE, type ZoneGeometry } from '../../lib/geometrie.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import { interiorPoint, square } from '../support/geometrie.ts';

// urbanisme_adresse and documents_urbanisme as a client calls them: real packages of ../shared/data (the PLU of
// Arpaillargues-et-Aureillac, two CNIG SUP packages) and a crafted one for what real samples do not show (a hole in a
// multipolygon, a boundary between two zones, a replaced edition, prescriptions of each shape), imported through the
// real importers; a table of documents in force for an RNU commune and one whose document is not published.

const SHARED = path.resolve(import.meta.dirname, '../../../shared/data');
const GPU = path.join(SHARED, 'gpu/30014_PLU_20171013');
const SUP = [
  path.join(SHARED, 'sup/110068012_PM3_28_20161104'),
  path.join(SHARED, 'sup/213000896_INT1_83044_20160130'),
];
const hasShared = existsSync(GPU) && SUP.every((p) => existsSync(p));
const SKIP = hasShared ? '' : ' (skipped: ../shared/data/gpu and sup are absent)';

let t: TestApp;
let cle: string;
let dir: string;
const get = (url: string) => t.call('GET', url.replace('/api/v1', ''), cle);

/** The point `metres` east of (lat, lon). */
const est = (p: { lat: number; lon: number }, metres: number) => ({
  lat: p.lat,
  lon: p.lon + metres / (METRES_PER_DEGREE * Math.cos((p.lat * Math.PI) / 180)),
});

// Latresne (33234), crafted: UA a square with a hole (the hole is no zone: a gap of the map), UB the square east of
// it sharing its edge, an older edition whose single zone covers both and must not answer.
const C = { lat: 44.78, lon: -0.49 };
const H = 0.002;
const feature = (properties: object, geometry: object) => ({ type: 'Feature', properties, geometry });
const collection = (features: object[]) => JSON.stringify({ type: 'FeatureCollection', features });

async function paquet(nom: string, couches: Record<string, object[]>): Promise<string> {
  const racine = path.join(dir, nom);
  await mkdir(racine, { recursive: true });
  for (const [couche, features] of Object.entries(couches)) {
    await writeFile(path.join(racine, `${couche}.geojson`), collection(features));
  }
  return racine;
}

const BAN_HEADER =
  'id;id_fantoir;numero;rep;nom_voie;code_postal;code_insee;nom_commune;code_insee_ancienne_commune;nom_ancienne_commune;x;y;lon;lat;type_position;alias;nom_ld;libelle_acheminement;nom_afnor;source_position;source_nom_voie;certification_commune;cad_parcelles';
const banLigne = (id: string, numero: number, voie: string, cp: string, insee: string, nom: string, p: object) => {
  const { lat, lon } = p as { lat: number; lon: number };
  return `${id};;${numero};;${voie};${cp};${insee};${nom};;;;;${lon};${lat};entrée;;;${nom.toUpperCase()};${voie.toUpperCase()};commune;commune;1;`;
};

beforeAll(async () => {
  t = await createTestApp();
  cle = (await t.organisation({ acces: 'usage' })).cle;
  dir = await mkdtemp(path.join(tmpdir(), 'urbanisme-'));
  const ua: ZoneGeometry = {
    type: 'MultiPolygon',
    coordinates: [[square(C.lon, C.lat, H), square(C.lon, C.lat, H / 4)], [square(C.lon, C.lat + 4 * H, H / 2)]],
  };
  const ub = square(C.lon + 2 * H, C.lat, H);
  const doc = { idurba: '33234_PLU_20240601', datappro: '20240601' };
  await importPaquetsGpu(t.db, [
    await paquet('33234_PLU_20170123', {
      ZONE_URBA: [
        feature(
          { idurba: '33234_PLU_20170123', libelle: 'UX', typezone: 'U', datappro: '20170123' },
          { type: 'Polygon', coordinates: [square(C.lon, C.lat, 10 * H)] },
        ),
      ],
    }),
    await paquet('33234_PLU_20240601', {
      ZONE_URBA: [
        feature(
          {
            ...doc,
            libelle: 'UA',
            libelong: 'Centre ancien',
            typezone: 'U',
            urlfic: 'https://plu.example.fr/r.pdf#page=7',
          },
          ua,
        ),
        feature({ ...doc, libelle: 'UB', typezone: 'U' }, { type: 'Polygon', coordinates: [ub] }),
      ],
      PRESCRIPTION_SURF: [
        feature(
          { ...doc, libelle: 'Espace boisé classé', txt: 'EBC', typepsc: '01', stypepsc: '00' },
          { type: 'Polygon', coordinates: [square(C.lon + H / 2, C.lat + H / 2, H / 4)] },
        ),
      ],
      PRESCRIPTION_LIN: [
        feature(
          { ...doc, libelle: 'Linéaire commercial à préserver', typepsc: '22', stypepsc: '01' },
          {
            type: 'LineString',
            coordinates: [
              [C.lon - H, C.lat - H / 2],
              [C.lon + H, C.lat - H / 2],
            ],
          },
        ),
      ],
      INFO_PCT: [
        feature(
          { ...doc, libelle: 'Site archéologique', typeinf: '04', stypeinf: '00' },
          { type: 'Point', coordinates: [est(C, 500).lon, C.lat] },
        ),
      ],
    }),
  ]);
  if (hasShared) {
    await importPaquetsGpu(t.db, GPU);
    await importSup(t.db, SUP);
  }
  // The table of documents in force: Aillas under the national rules, Ambarès with a communal map not published.
  const table = path.join(dir, 'documents-33.csv');
  await writeFile(
    table,
    windows1252(
      [
        'Code INSEE;Nom de la commune;Document en vigueur;État du document;Date d’approbation;Publié GPU',
        '33002;Aillas;RNU;;;',
        '33003;Ambarès-et-Lagrave;Carte communale;opposable;2010-03-01;non',
      ].join('\r\n') + '\r\n',
    ),
  );
  await importStatutCommunes(t.db, table);
  const ban = path.join(dir, 'ban.csv');
  await writeFile(
    ban,
    [
      BAN_HEADER,
      banLigne('33002_0001_00001', 1, 'Route du Bourg', '33124', '33002', 'Aillas', { lat: 44.47, lon: -0.07 }),
      banLigne('33234_0001_00002', 2, 'Rue du Centre', '33360', '33234', 'Latresne', {
        lat: C.lat + H / 2,
        lon: C.lon - H / 2,
      }),
    ].join('\n') + '\n',
  );
  await importBan(t.db, ban);
}, 120_000);

afterAll(async () => {
  await t?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('urbanisme_adresse', () => {
  it.skipIf(!hasShared)(
    `answers inside a zone of a real PLU with its document, and debits 2 credits${SKIP}`,
    async () => {
      const { rows } = await t.db.query<{ libelle: string; geometrie: ZoneGeometry }>(
        `SELECT libelle, geometrie FROM zones_urbanisme WHERE idurba = '30014_PLU_20171013' ORDER BY aire_m2 DESC LIMIT 1`,
      );
      const p = interiorPoint(rows[0].geometrie);
      const res = await get(`/api/v1/urbanisme?lat=${p.lat}&lon=${p.lon}`);
      expect(res.statusCode).toBe(200);
      expect(res.headers['svc-credits-debites']).toBe('2');
      const body = res.json();
      expect(body.statut.code).toBe('zonage_publie');
      expect(body.adresse).toMatchObject({ precision: 'point', insee: '30014', lat: p.lat, lon: p.lon });
      expect(body.zones[0]).toMatchObject({
        code: rows[0].libelle,
        document: '30014_PLU_20171013',
        type_document: 'PLU',
        approuve_le: '2017-10-13',
        lecture: { etat: 'sans_reglement' },
      });
      expect(body.commune_rnu).toBe(false);
      expect(body.source).toMatch(/30014_PLU_20171013/);
    },
  );

  it.skipIf(!hasShared)(`says why no zone answers outside every zone${SKIP}`, async () => {
    const { rows } = await t.db.query<{ xmax: number; ymin: number; ymax: number }>(
      `SELECT max(bbox_xmax) AS xmax, min(bbox_ymin) AS ymin, max(bbox_ymax) AS ymax
         FROM zones_urbanisme WHERE idurba = '30014_PLU_20171013'`,
    );
    // Far east of the commune's zoning, where nothing is imported: the commune itself is unknown.
    const loin = await get(`/api/v1/urbanisme?lat=${(rows[0].ymin + rows[0].ymax) / 2}&lon=${rows[0].xmax + 0.05}`);
    expect(loin.statusCode).toBe(200);
    expect(loin.json().zones).toEqual([]);
    expect(loin.json().statut).toMatchObject({ code: 'indetermine', motif: expect.stringMatching(/commune du point/) });
    expect(loin.json().commune_rnu).toBeNull();
  });

  it('takes the zone of the edition in force, not the replaced one, and reads holes and boundaries', async () => {
    const centre = await get(`/api/v1/urbanisme?lat=${C.lat + H / 2}&lon=${C.lon - H / 2}`);
    expect(centre.statusCode).toBe(200);
    expect(centre.json().zones.map((z: { code: string }) => z.code)).toEqual(['UA']);
    expect(centre.json().zones[0]).toMatchObject({
      document: '33234_PLU_20240601',
      libelle: 'Centre ancien',
      famille: 'U',
      approuve_le: '2024-06-01',
      reglement_url: 'https://plu.example.fr/r.pdf#page=7',
      lecture: { etat: 'non_lue', lue_le: null, regles: null },
    });
    // The hole of UA: no zone of the edition in force (the older one, replaced, covers it and is not served).
    const trou = await get(`/api/v1/urbanisme?lat=${C.lat}&lon=${C.lon}`);
    expect(trou.json().zones).toEqual([]);
    expect(trou.json().statut).toEqual({
      code: 'hors_zonage',
      motif: 'aucune zone des documents publiés de la commune ne couvre ce point',
    });
    expect(trou.json().constats).toContainEqual(
      expect.stringMatching(
        /^aucune zone ne couvre le point ; la plus proche, UA \(33234_PLU_20240601\), est à 3\d(\.\d)? m$/,
      ),
    );
    // The second polygon of the multipolygon.
    const nord = await get(`/api/v1/urbanisme?lat=${C.lat + 4 * H}&lon=${C.lon}`);
    expect(nord.json().zones.map((z: { code: string }) => z.code)).toEqual(['UA']);
    // On the edge between UA and UB: both, and said.
    const limite = await get(`/api/v1/urbanisme?lat=${C.lat + H / 3}&lon=${C.lon + H}`);
    expect(
      limite
        .json()
        .zones.map((z: { code: string }) => z.code)
        .sort(),
    ).toEqual(['UA', 'UB']);
    expect(limite.json().constats.join(' ')).toMatch(/plusieurs zones couvrent le point \(U[AB], U[AB]\)/);
    // Two metres inside UB, near UA: on the boundary.
    const pres = await get(`/api/v1/urbanisme?lat=${C.lat + H / 3}&lon=${est({ lat: C.lat, lon: C.lon + H }, 1).lon}`);
    expect(pres.json().zones.map((z: { code: string }) => z.code)).toEqual(['UB']);
    expect(pres.json().constats.join(' ')).toMatch(/en limite de zone, à moins de 3 m de UA/);
  });

  it('lists prescriptions covering the point (distance null) and those near it with their distance', async () => {
    const p = { lat: C.lat + H / 2, lon: C.lon + H / 2 };
    const body = (await get(`/api/v1/urbanisme?lat=${p.lat}&lon=${p.lon}`)).json();
    expect(body.prescriptions).toEqual([
      expect.objectContaining({ libelle: 'Espace boisé classé', type_code: '01', forme: 'surface', distance_m: null }),
    ]);
    expect(body.constats.join(' ')).toMatch(/espace boisé classé couvre le point/);
    // 20 m north of the commercial line: listed at 20 m, covering nothing.
    const ligne = { lat: C.lat - H / 2 + 20 / METRES_PER_DEGREE, lon: C.lon };
    const pres = (await get(`/api/v1/urbanisme?lat=${ligne.lat}&lon=${ligne.lon}`)).json();
    const lineaire = pres.prescriptions.find((x: { type_code: string }) => x.type_code === '22');
    expect(lineaire).toMatchObject({ forme: 'ligne', sous_type: '01', document: '33234_PLU_20240601' });
    expect(lineaire.distance_m).toBeCloseTo(20, 0);
    // The archaeological site 500 m east is beyond 50 m: not listed.
    expect(pres.informations).toEqual([]);
  });

  it('answers an address by its BAN key and by its text, the commune from the address', async () => {
    const parCle = await get('/api/v1/adresses/33234_0001_00002/urbanisme');
    expect(parCle.statusCode).toBe(200);
    expect(parCle.json()).toMatchObject({
      cle_ban: '33234_0001_00002',
      adresse: { insee: '33234', precision: 'numero' },
      statut: { code: 'zonage_publie' },
    });
    const parTexte = await get(
      `/api/v1/urbanisme?q=${encodeURIComponent('2 rue du Centre Latresne')}&code_postal=33360`,
    );
    expect(parTexte.statusCode).toBe(200);
    expect(parTexte.json().cle_ban).toBe('33234_0001_00002');
    expect(parTexte.json().zones).toEqual(parCle.json().zones);
    const inconnue = await get('/api/v1/adresses/33234_9999_00001/urbanisme');
    expect(inconnue.statusCode).toBe(404);
    expect(inconnue.json().code).toBe('adresse_introuvable');
    expect(inconnue.headers['svc-credits-debites'] ?? '0').toBe('0');
  });

  it('says rnu for an address of a commune under the national rules', async () => {
    const res = await get('/api/v1/adresses/33002_0001_00001/urbanisme');
    expect(res.json()).toMatchObject({
      zones: [],
      statut: { code: 'rnu', motif: expect.stringMatching(/règlement national d’urbanisme/) },
      commune_rnu: true,
    });
  });

  it('refuses a point and an address together, and half a point, field by field', async () => {
    const deux = await get(`/api/v1/urbanisme?lat=44.78&lon=-0.49&q=${encodeURIComponent('2 rue du Centre')}`);
    expect(deux.statusCode).toBe(400);
    expect(deux.json().code).toBe('parametres_invalides');
    expect(JSON.stringify(deux.json())).toMatch(/"q"/);
    const demi = await get('/api/v1/urbanisme?lat=44.78');
    expect(demi.statusCode).toBe(400);
    expect(JSON.stringify(demi.json())).toMatch(/"lon"/);
    const rien = await get('/api/v1/urbanisme');
    expect(rien.statusCode).toBe(400);
  });

  it.skipIf(!hasShared)(
    `gives the easements of real CNIG SUP packages, with their act and distance${SKIP}`,
    async () => {
      const { rows } = await t.db.query<{ geometrie: ZoneGeometry; categorie: string }>(
        `SELECT geometrie, categorie FROM sup_assiettes WHERE categorie = 'INT1' LIMIT 1`,
      );
      const dedans = interiorPoint(rows[0].geometrie);
      const body = (await get(`/api/v1/urbanisme?lat=${dedans.lat}&lon=${dedans.lon}`)).json();
      expect(body.servitudes).toEqual([
        expect.objectContaining({
          categorie: 'INT1',
          libelle: 'INT1_Cimetiere_comps_sup',
          gestionnaire: 'Commune de Comps',
          acte: expect.objectContaining({ date: '2016-01-30', fichier: 'INT1_Acte_act.pdf' }),
          lien: null,
          distance_m: 0,
        }),
      ]);
      expect(body.constats.join(' ')).toMatch(/cimetière \(INT1\)/);
      // 150 m beyond the assiette's eastern edge: listed with its distance.
      const { rows: b } = await t.db.query<{ xmax: number; ymin: number; ymax: number }>(
        `SELECT bbox_xmax AS xmax, bbox_ymin AS ymin, bbox_ymax AS ymax FROM sup_assiettes WHERE categorie = 'INT1'`,
      );
      const bord = { lat: (b[0].ymin + b[0].ymax) / 2, lon: b[0].xmax };
      const dehors = est(bord, 150);
      const loin = (await get(`/api/v1/urbanisme?lat=${dehors.lat}&lon=${dehors.lon}`)).json();
      expect(loin.servitudes).toHaveLength(1);
      expect(loin.servitudes[0].distance_m).toBeGreaterThanOrEqual(150);
      expect(loin.servitudes[0].distance_m).toBeLessThan(200);
    },
  );
});

describe('documents_urbanisme', () => {
  it('lists the documents, the replaced one said so, and the reading state of each zone', async () => {
    // A reading of UA in the cache: what lire_plu would have left.
    await t.db.query(
      `INSERT INTO reglements_pdf (url, sha256, taille_octets, pages, nb_pages, scanne)
       VALUES ('https://plu.example.fr/r.pdf', 'abc', 10, '[]', 1, false)`,
    );
    await t.db.query(
      `INSERT INTO lectures_plu (document_sha256, zone, version, contenu, modele, extrait_le)
       VALUES ('abc', 'UA', $1, '{"regles": [{}, {}, {}]}', 'essai', '2026-11-01T10:00:00Z')`,
      [LECTURE_VERSION],
    );
    const res = await get('/api/v1/communes/33234/urbanisme');
    expect(res.statusCode).toBe(200);
    expect(res.headers['svc-credits-debites']).toBe('2');
    const body = res.json();
    expect(body).toMatchObject({
      insee: '33234',
      commune: 'Latresne',
      statut: { code: 'documents_publies' },
      commune_rnu: false,
    });
    expect(body.documents.map((d: { id: string; en_vigueur: boolean }) => [d.id, d.en_vigueur])).toEqual([
      ['33234_PLU_20240601', true],
      ['33234_PLU_20170123', false],
    ]);
    expect(Object.keys(body.documents[0])).toHaveLength(11);
    expect(body.documents[0]).toMatchObject({
      type: 'PLU',
      approuve_le: '2024-06-01',
      epci_siren: null,
      lecture: { zones: 2, zones_lues: 1, derniere_le: '2026-11-01T10:00:00Z' },
    });
    expect(body.zones).toEqual([
      expect.objectContaining({ code: 'UA', lecture: { etat: 'lue', lue_le: '2026-11-01T10:00:00Z', regles: 3 } }),
      expect.objectContaining({ code: 'UB', lecture: { etat: 'sans_reglement', lue_le: null, regles: null } }),
    ]);
    // The point in UA now says its zone was read.
    const auPoint = (await get(`/api/v1/urbanisme?lat=${C.lat + H / 2}&lon=${C.lon - H / 2}`)).json();
    expect(auPoint.zones[0].lecture).toEqual({ etat: 'lue', lue_le: '2026-11-01T10:00:00Z', regles: 3 });
  });

  it('says rnu, document_non_publie and indetermine, and refuses an unknown commune', async () => {
    expect((await get('/api/v1/communes/33002/urbanisme')).json()).toMatchObject({
      statut: { code: 'rnu' },
      commune_rnu: true,
      documents: [],
    });
    const cc = (await get('/api/v1/communes/33003/urbanisme')).json();
    expect(cc.statut).toMatchObject({ code: 'document_non_publie', motif: expect.stringMatching(/carte communale/) });
    expect(cc.commune_rnu).toBe(false);
    expect(cc.limites.join(' ')).toMatch(/Aucun document d’urbanisme publié importé/);
    const rien = (await get('/api/v1/communes/33010/urbanisme')).json();
    expect(rien).toMatchObject({ statut: { code: 'indetermine' }, commune_rnu: null });
    const inconnue = await get('/api/v1/communes/33999/urbanisme');
    expect(inconnue.statusCode).toBe(404);
    expect(inconnue.json().code).toBe('commune_introuvable');
  });

  it.skipIf(!hasShared)(
    `gives a real commune its document, zones and no easement where none is imported${SKIP}`,
    async () => {
      const body = (await get('/api/v1/communes/30014/urbanisme')).json();
      expect(body.documents).toEqual([
        expect.objectContaining({ id: '30014_PLU_20171013', type: 'PLU', etat: 'opposable', en_vigueur: true }),
      ]);
      expect(body.zones.length).toBeGreaterThan(10);
      expect(body.servitudes).toEqual([]);
      expect(body.limites.join(' ')).toMatch(/Aucune servitude d’utilité publique importée/);
    },
  );
});
