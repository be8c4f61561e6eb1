import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../../db/client.ts';
import { montant, mesure, lireReleve } from '../../../domain/annonces/format.ts';
import { importAnnonces } from '../../../domain/annonces/import.ts';
import { createTestDb } from '../../support/db.ts';
import { annonceDuPortail, appartement, evenementsDe, fichierReleves } from './support.ts';

const MAINTENANT = new Date('2025-11-01T00:00:00Z');

let testDb: Awaited<ReturnType<typeof createTestDb>>;
let db: Db;
let dir: string;

beforeAll(async () => {
  testDb = await createTestDb();
  db = testDb.db;
  dir = await mkdtemp(path.join(tmpdir(), 'annonces-import-'));
});
afterAll(async () => {
  await testDb?.drop();
  await rm(dir, { recursive: true, force: true });
});

const importer = (chemin: string | string[], dataset: 'live' | 'sandbox' = 'live') =>
  importAnnonces(db, chemin, { dataset, maintenant: MAINTENANT });

async function nombreEvenements(dataset = 'live'): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM annonces_evenements WHERE dataset = $1',
    [dataset],
  );
  return rows[0].n;
}

describe('values as portals write them', () => {
  it('reads prices and surfaces with units, spaces and either separator', () => {
    expect(montant('250 000 €')).toBe(250_000);
    expect(montant('250.000 €')).toBe(250_000);
    expect(montant('€250,000')).toBe(250_000);
    expect(montant('250k€')).toBe(250_000);
    expect(montant('1 250 000,50')).toBe(1_250_000.5);
    expect(montant('sur demande')).toBeNull();
    expect(mesure('45,5 m²')).toBe(45.5);
    expect(mesure('45.5m2')).toBe(45.5);
    expect(mesure('120')).toBe(120);
  });

  it('says why a line is rejected', () => {
    const lire = (texte: string) => lireReleve(1, texte, MAINTENANT);
    expect(lire('{"portail": "portal_a", "id": 1')).toMatch(/^JSON illisible/);
    expect(lire('[1, 2]')).toBe('un objet JSON est attendu sur chaque ligne');
    expect(lire('{"id": "1", "vu_le": "2025-03-01"}')).toMatch(/^portail absent/);
    expect(lire('{"portail": "portal_z", "id": "1", "vu_le": "2025-03-01"}')).toMatch(/^portail inconnu/);
    expect(lire('{"portail": "portal_a", "vu_le": "2025-03-01"}')).toMatch(/^identifiant absent/);
    expect(lire('{"portail": "portal_a", "id": "1"}')).toMatch(/^date du relevé absente/);
    expect(lire('{"portail": "portal_a", "id": "1", "vu_le": "hier"}')).toMatch(/^date du relevé illisible/);
    expect(lire('{"portail": "portal_a", "id": "1", "vu_le": "2025-03-01", "status": "zombie"}')).toMatch(
      /^statut inconnu/,
    );
    expect(lire('{"portail": "portal_a", "id": "1", "vu_le": "2025-03-01", "type": "parking"}')).toMatch(
      /^type hors logement/,
    );
  });
});

describe('a crafted sequence of snapshots', () => {
  let evenements: Awaited<ReturnType<typeof evenementsDe>>;
  let id: string;

  beforeAll(async () => {
    const chemin = await fichierReleves(dir, 'sequence.jsonl', [
      appartement(),
      // A drop, then back up, then the same drop again the same day: one drop event.
      appartement({ vu_le: '2025-03-10T08:00:00Z', prix: 380_000 }),
      appartement({ vu_le: '2025-03-10T11:00:00Z', prix: 400_000 }),
      appartement({ vu_le: '2025-03-10T15:00:00Z', prix: 380_000 }),
      // Withdrawn: a partial snapshot, the rest kept.
      { portal: 'portal_a', listing_id: 1001, seen_at: '2025-03-20T09:00:00Z', status: 'removed' },
      appartement({ vu_le: '2025-04-01T09:00:00Z', prix: 380_000 }),
    ]);
    const report = await importer(chemin);
    expect(report.rejetes).toEqual([]);
    id = (await annonceDuPortail(db, 'portal_a:1001')).id;
    evenements = await evenementsDe(db, id);
  });

  it('writes each genre where it should, in order, with increasing ids', () => {
    expect(evenements.map((e) => e.genre)).toEqual([
      'nouvelle',
      'baisse_prix',
      'hausse_prix',
      'retrait',
      'reactivation',
      'analyse',
    ]);
    const ids = evenements.map((e) => Number(e.id));
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
  });

  it('fills before and after for the genres they concern', () => {
    const [nouvelle, baisse, hausse, retrait, reactivation, analyse] = evenements;
    expect(nouvelle.avant).toBeNull();
    expect(nouvelle.apres).toMatchObject({ prix: 400_000, actif: true, detecte_le: '2025-03-01T09:00:00.000Z' });
    expect(baisse.avant).toMatchObject({ prix: 400_000, detecte_le: '2025-03-01T09:00:00.000Z', score: null });
    expect(baisse.apres).toMatchObject({ prix: 380_000, ecart_pct: -5, detecte_le: '2025-03-10T08:00:00.000Z' });
    expect(hausse.apres).toMatchObject({ prix: 400_000, ecart_pct: 5.3 });
    expect(retrait.avant).toMatchObject({ actif: true });
    expect(retrait.apres).toMatchObject({ actif: false, detecte_le: '2025-03-20T09:00:00.000Z', prix: null });
    expect(reactivation.avant).toMatchObject({ actif: false, detecte_le: '2025-03-20T09:00:00.000Z' });
    expect(reactivation.apres).toMatchObject({ actif: true });
    expect(analyse.apres).toMatchObject({ analyse_le: '2025-04-01T09:00:00.000Z' });
    expect(analyse.apres.score).not.toBeUndefined();
  });

  it('keeps what a partial snapshot does not say', async () => {
    const a = await annonceDuPortail(db, 'portal_a:1001');
    expect(a).toMatchObject({ statut: 'actif', surface: 40, pieces: 2, prix: 380_000, releves: 6, insee: '75111' });
    expect(a.retire_le).toBeNull();
  });

  it('changes nothing when the same file is imported again, nor for an older snapshot', async () => {
    const avant = await nombreEvenements();
    const report = await importer(path.join(dir, 'sequence.jsonl'));
    expect(report.rejetes).toEqual([]);
    const ancien = await fichierReleves(dir, 'ancien.jsonl', [appartement({ vu_le: '2025-02-01T00:00:00Z', prix: 1 })]);
    await importer(ancien);
    expect(await nombreEvenements()).toBe(avant);
    expect((await annonceDuPortail(db, 'portal_a:1001')).prix).toBe(380_000);
  });
});

describe('a listing its portal suspends', () => {
  it('goes to masque and back without event; one first seen suspended gets its nouvelle when it comes online', async () => {
    const chemin = await fichierReleves(dir, 'masque.jsonl', [
      appartement({ id: '1501', surface: 150 }),
      appartement({ id: '1501', surface: 150, vu_le: '2025-03-05T09:00:00Z', statut: 'under_review' }),
      appartement({ id: '1502', surface: 160, vu_le: '2025-03-05T09:00:00Z', statut: 'suspended' }),
    ]);
    await importer(chemin);
    const masquee = await annonceDuPortail(db, 'portal_a:1501');
    expect(masquee.statut).toBe('masque');
    expect((await evenementsDe(db, masquee.id)).map((e) => e.genre)).toEqual(['nouvelle', 'analyse']);
    expect((await annonceDuPortail(db, 'portal_a:1502')).statut).toBe('masque');

    await importer(
      await fichierReleves(dir, 'demasque.jsonl', [
        appartement({ id: '1501', surface: 150, vu_le: '2025-03-12T09:00:00Z' }),
        appartement({ id: '1502', surface: 160, vu_le: '2025-03-12T09:00:00Z' }),
      ]),
    );
    expect((await annonceDuPortail(db, 'portal_a:1501')).statut).toBe('actif');
    // Nothing the analysis reads changed: no reanalysis either.
    expect((await evenementsDe(db, masquee.id)).map((e) => e.genre)).toEqual(['nouvelle', 'analyse']);
    const seconde = await annonceDuPortail(db, 'portal_a:1502');
    expect((await evenementsDe(db, seconde.id)).map((e) => e.genre)).toEqual(['analyse', 'nouvelle']);
  });
});

describe('bad lines', () => {
  it('are rejected with their reasons, the good ones imported', async () => {
    const chemin = await fichierReleves(dir, 'mauvaises.jsonl', [
      appartement({ id: '2001', surface: 60 }),
      '{"portail": "portal_a", "id": "2002", ',
      '"une chaîne"',
      { portail: 'portal_a', vu_le: '2025-03-01T00:00:00Z' },
      appartement({ id: '2003', type: 'terrain' }),
      // A first sight without a type.
      { portail: 'portal_a', id: '2004', vu_le: '2025-03-01T00:00:00Z', prix: 100_000 },
      '',
      appartement({ id: '2005', vu_le: '2031-01-01T00:00:00Z' }),
    ]);
    const report = await importer(chemin);
    expect(report.lus).toBe(7);
    expect(report.gardes).toBe(1);
    expect(report.rejetes.map((r) => [r.ligne, r.motif.replace(/^mauvaises\.jsonl : /, '').slice(0, 30)])).toEqual([
      [2, 'JSON illisible (Expected doubl'],
      [3, 'un objet JSON est attendu sur '],
      [4, 'identifiant absent (id, identi'],
      [5, 'type hors logement « terrain »'],
      [6, 'portal_a:2004 : première vue d'],
      [8, 'date du relevé dans le futur ('],
    ]);
    expect(await annonceDuPortail(db, 'portal_a:2001')).toBeDefined();
    expect(await annonceDuPortail(db, 'portal_a:2004')).toBeUndefined();
  });
});

describe('a real-life-shaped file', () => {
  it('reads other spellings, units, nested objects and missing fields, gzipped', async () => {
    const chemin = await fichierReleves(dir, 'portal-b.jsonl.gz', [
      {
        source: 'PORTAL-B',
        listing_id: 'b-77',
        url: 'https://portal-b.example/fr/vente/b-77?utm=x',
        scraped_at: '14/03/2025 10:30',
        status: 'online',
        property_type: 'House',
        price: '250 000 €',
        living_area: '95,5 m²',
        rooms: 'T4',
        bedrooms: '3',
        land_area: '600 m²',
        energy_class: 'E',
        ghg_class: 'C',
        features: ['Garden', 'garage', 'Piscine chauffée'],
        postcode: '33360',
        city: 'LATRESNE',
        location: { lat: '44.78', lng: '-0.49' },
        seller_type: 'private',
        seller: { name: 'Jean Dupont', phone: '06 12 34 56 78' },
        details: { taxe_fonciere: '1 200 €', charges_mensuelles: null },
      },
      {
        portail: 'portal_c',
        identifiant: 42,
        date_releve: 1741946400,
        nature: 'appartement',
        prix_eur: 180000,
        surface_m2: 52,
        nb_pieces: '3 pièces',
        etage: 'RDC',
        cp: '59000',
        ville: 'Lille',
        // A price under two names, one unreadable: the readable one is taken. No readable count of bedrooms.
        prix: 'sur demande',
        chambres: 'plusieurs',
      },
    ]);
    const report = await importer(chemin);
    expect(report.rejetes).toEqual([]);
    expect(report.details.join('\n')).toMatch(/champs illisibles laissés de côté : chambres ×1/);
    const b = await annonceDuPortail(db, 'portal_b:b-77');
    expect(b).toMatchObject({
      type: 'maison',
      prix: 250_000,
      surface: 95.5,
      pieces: 4,
      chambres: 3,
      terrain_portail_m2: 600,
      insee: '33234',
      commune: 'Latresne',
      departement: '33',
      precision_position: 'approchee',
      lien_cle: 'portal-b.example/fr/vente/b-77',
      type_vendeur: 'particulier',
      annonceur: null,
      premiere_parution_estimee: true,
    });
    expect(b.dpe).toMatchObject({ etiquette: 'E', ges: 'C' });
    expect(b.equipements).toMatchObject({ jardin: true, garage: true });
    expect(b.equipements.liste).toContain('Piscine chauffée');
    expect(b.details_portail).toMatchObject({ taxe_fonciere: 1200 });
    // 10:30 in Paris is 09:30 UTC in March.
    expect(b.vu_le.toISOString()).toBe('2025-03-14T09:30:00.000Z');
    const c = await annonceDuPortail(db, 'portal_c:42');
    expect(c).toMatchObject({
      type: 'appartement',
      prix: 180_000,
      pieces: 3,
      etage: 0,
      insee: '59350',
      chambres: null,
    });
    expect(c.precision_position).toBe('inconnue');
  });
});

describe('privacy', () => {
  it('keeps no identity nor contact of a private seller, and a professional as published', async () => {
    const chemin = await fichierReleves(dir, 'vendeurs.jsonl', [
      appartement({
        id: '3001',
        surface: 70,
        type_vendeur: 'particulier',
        annonceur: { nom: 'Marie Martin', telephone: '06.12.34 56 78', email: 'marie@exemple.fr' },
        titre: 'Appel au 06.12.34 56 78',
        description: 'Particulier vend T2. Appelez-moi au 06.12.34 56 78 ou marie.martin@exemple.fr, Mme Martin.',
      }),
      appartement({
        id: '3002',
        surface: 80,
        description: 'Agence du Canal, 01 43 00 00 00, contact@agence-canal.fr.',
      }),
    ]);
    await importer(chemin);
    const particulier = await annonceDuPortail(db, 'portal_a:3001');
    expect(particulier.annonceur).toBeNull();
    expect(particulier.brut).toBeNull();
    expect(particulier.vendeur_cle).toBe('particulier');
    expect(particulier.description).toBe(
      'Particulier vend T2. Appelez-moi au [téléphone masqué] ou [courriel masqué], [nom masqué].',
    );
    expect(particulier.titre).toBe('Appel au [téléphone masqué]');
    const { rows } = await db.query(`SELECT a::text AS t FROM annonces a WHERE id = $1`, [particulier.id]);
    expect(rows[0].t).not.toMatch(/Martin|06\.12|marie/);

    const pro = await annonceDuPortail(db, 'portal_a:3002');
    expect(pro.annonceur).toMatchObject({
      nom: 'AGENCE DU CANAL',
      siren: '552100554',
      siren_origine: 'annonce',
      mandat: 'exclusif',
      telephone: '01 43 00 00 00',
    });
    expect(pro.description).toContain('01 43 00 00 00');
    expect(pro.brut).toMatchObject({ id: '3002' });
  });

  it('finds a professional’s SIREN in SIRENE by name and postal code', async () => {
    await db.query(
      `INSERT INTO unites_legales (dataset, siren, denomination, personne_physique, societe_civile, etat)
       VALUES ('live', '999000011', 'AGENCE DES TANNEURS', false, false, 'A'),
              ('live', '999000029', 'AGENCE DES TANNEURS', false, false, 'A')`,
    );
    await db.query(
      `INSERT INTO etablissements (dataset, siret, siren, nic, etat, code_postal)
       VALUES ('live', '99900001100011', '999000011', '00011', 'A', '75011'),
              ('live', '99900002900012', '999000029', '00012', 'A', '59000')`,
    );
    const chemin = await fichierReleves(dir, 'sirene.jsonl', [
      appartement({ id: '4001', surface: 90, annonceur: { nom: 'Agence des Tanneurs', mandat: 'simple' } }),
      appartement({ id: '4002', surface: 100, annonceur: { nom: 'Agence des Lilas', mandat: 'simple' } }),
    ]);
    await importer(chemin);
    expect((await annonceDuPortail(db, 'portal_a:4001')).annonceur).toMatchObject({
      siren: '999000011',
      siren_origine: 'sirene',
    });
    expect((await annonceDuPortail(db, 'portal_a:4002')).annonceur).toMatchObject({ siren: null });
  });
});

describe('properties across portals', () => {
  it('merges one flat on two portals at prices 1 % apart, and says so once', async () => {
    const chemin = await fichierReleves(dir, 'doublons.jsonl', [
      appartement({ id: '5001', prix: 300_000, surface: 50, etage: 2, position: { lat: 48.86, lon: 2.37 } }),
      appartement({
        portail: 'portal_b',
        id: 'x5001',
        vu_le: '2025-03-02T09:00:00Z',
        prix: 303_000,
        surface: 50.4,
        etage: 2,
        position: { lat: 48.86005, lon: 2.37005 },
        annonceur: { nom: 'AGENCE DU CANAL', siren: '552100554' },
      }),
    ]);
    await importer(chemin);
    const a = await annonceDuPortail(db, 'portal_a:5001');
    const b = await annonceDuPortail(db, 'portal_b:x5001');
    expect(b.bien_uid).toBe(a.bien_uid);
    expect([a.principale, b.principale]).toEqual([true, false]);
    const multi = (await evenementsDe(db, a.id)).filter((e) => e.genre === 'multi_agences');
    expect(multi).toHaveLength(1);
    expect(multi[0].avant).toMatchObject({ nb_portails: 1, nb_agences: 1, prix_min: 300_000 });
    expect(multi[0].apres).toMatchObject({ nb_portails: 2, nb_agences: 1, prix_min: 300_000, prix_max: 303_000 });
  });

  it('attaches a listing to its BAN number, by its position or by the address a user validated, and merges on it', async () => {
    await db.query(
      `INSERT INTO adresses (dataset, cle_ban, type, numero, voie, insee, commune, libelle, lat, lon, source)
       VALUES ('live', '75111_z099_00007', 'numero', 7, 'Rue des Essais', '75111', 'Paris 11e Arrondissement',
               '7 Rue des Essais 75011 Paris', 48.8612, 2.3712, 'test')`,
    );
    // The same flat: on portal_a at its address; on portal_c at the commune's centre, whose address a user validated.
    await db.query(
      `INSERT INTO adresses_validees (annonce_id, libelle, lat, lon, precision, valide_le)
       VALUES ('portal_c:8002', '7 Rue des Essais 75011 Paris', 48.86121, 2.37121, 'numero', now())`,
    );
    const chemin = await fichierReleves(dir, 'ban.jsonl', [
      appartement({ id: '8001', surface: 64, prix: 640_000, position: { lat: 48.86122, lon: 2.3712 } }),
      appartement({
        portail: 'portal_c',
        id: '8002',
        surface: 64,
        prix: 645_000,
        position: { lat: 48.8591, lon: 2.38 },
        precision: 'centre_commune',
      }),
    ]);
    await importer(chemin);
    const a = await annonceDuPortail(db, 'portal_a:8001');
    const c = await annonceDuPortail(db, 'portal_c:8002');
    expect([a.cle_ban, c.cle_ban]).toEqual(['75111_z099_00007', '75111_z099_00007']);
    expect(c.bien_uid).toBe(a.bien_uid);
  });

  it('keeps apart two flats of one building: different surfaces, or different floors', async () => {
    const immeuble = { position: { lat: 48.855, lon: 2.385 }, prix: 350_000 };
    const chemin = await fichierReleves(dir, 'voisins.jsonl', [
      appartement({ id: '6001', ...immeuble, surface: 45, etage: 1 }),
      appartement({ portail: 'portal_b', id: 'y6002', ...immeuble, surface: 62, etage: 1 }),
      appartement({ portail: 'portal_c', id: '6003', ...immeuble, surface: 45, etage: 4 }),
    ]);
    await importer(chemin);
    const biens = await Promise.all(
      ['portal_a:6001', 'portal_b:y6002', 'portal_c:6003'].map(async (i) => (await annonceDuPortail(db, i)).bien_uid),
    );
    expect(new Set(biens).size).toBe(3);
  });
});
