import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCOPES } from '../../../domain/catalogue.ts';
import { AnnonceListeSchema } from '../../../domain/annonces/fiche.ts';
import { importAnnonces } from '../../../domain/annonces/import.ts';
import { createTestApp, type TestApp } from '../../support/app.ts';
import { annonceDuPortail, appartement, fichierReleves } from './support.ts';

// `annonce` and `flux_annonces` over crafted snapshots, through the HTTP pipeline: look-ups, scopes, selection,
// privacy, billing; the feed's filters, cursor and `a_jour`.

const MAINTENANT = new Date('2025-11-01T00:00:00Z');

let t: TestApp;
let dir: string;
/** A key without lien_origine (the default), and one with every scope. */
let cle: string;
let cleLien: string;
let ids: Record<string, string>;

const importer = (chemin: string) => importAnnonces(t.db, chemin, { dataset: 'live', maintenant: MAINTENANT });

beforeAll(async () => {
  t = await createTestApp();
  dir = await mkdtemp(path.join(tmpdir(), 'annonces-operations-'));
  cle = (await t.organisation({ acces: 'data' })).cle;
  cleLien = (await t.organisation({ acces: 'data', portees: [...SCOPES] })).cle;
  await importer(
    await fichierReleves(dir, 'debut.jsonl', [
      // A professional's flat of Paris 11e, its drop, and the same flat on portal_b at 1 % more.
      appartement(),
      appartement({ vu_le: '2025-03-10T08:00:00Z', prix: 380_000 }),
      appartement({
        portail: 'portal_b',
        id: 'b-1001',
        lien: 'https://portal-b.example/v/b-1001',
        vu_le: '2025-03-11T08:00:00Z',
        prix: 383_800,
      }),
      // A private seller's house of Latresne.
      {
        portail: 'portal_c',
        id: 7001,
        vu_le: '2025-03-05T10:00:00Z',
        type: 'maison',
        prix: 320_000,
        surface: 110,
        pieces: 5,
        terrain: 800,
        dpe: 'F',
        insee: '33234',
        type_vendeur: 'particulier',
        description: 'Maison familiale, contact : 06.12.34 56 78, Mme Lefèvre.',
      },
      // A flat of Lille withdrawn.
      appartement({
        portail: 'portal_a',
        id: '2001',
        insee: '59350',
        code_postal: '59000',
        surface: 30,
        prix: 150_000,
      }),
      { portail: 'portal_a', id: '2001', vu_le: '2025-03-20T08:00:00Z', statut: 'withdrawn' },
    ]),
  );
  ids = {
    paris: (await annonceDuPortail(t.db, 'portal_a:1001')).id,
    doublon: (await annonceDuPortail(t.db, 'portal_b:b-1001')).id,
    maison: (await annonceDuPortail(t.db, 'portal_c:7001')).id,
    lille: (await annonceDuPortail(t.db, 'portal_a:2001')).id,
  };
}, 60_000);

afterAll(async () => {
  await t?.close();
  await rm(dir, { recursive: true, force: true });
});

const get = (url: string, key = cle, headers: Record<string, string> = {}) =>
  t.call('GET', url, key, undefined, headers);

describe('annonce', () => {
  it('is found by service id, by portal id and by portal link, and bills 3 credits', async () => {
    const parId = await get(`/annonces/${ids.paris}`);
    expect(parId.statusCode, parId.body).toBe(200);
    expect(parId.json()).toMatchObject({ id: ids.paris, source: 'portal_a', statut: 'actif', prix: 380_000 });
    expect(parId.json().credits.debites).toBe(3);
    const parPortail = await get('/annonces/portal_a:1001');
    expect(parPortail.json().id).toBe(ids.paris);
    const lien = encodeURIComponent('https://portal-a.example/annonces/1001/?utm_source=x');
    const parLien = await get(`/annonces/${lien}`);
    expect(parLien.statusCode, parLien.body).toBe(200);
    expect(parLien.json().id).toBe(ids.paris);
  });

  it('serves the portal id and link only with the scope lien_origine', async () => {
    const sans = (await get(`/annonces/${ids.paris}`)).json();
    expect([sans.id_portail, sans.lien]).toEqual([null, null]);
    expect(sans.limites.join(' ')).toMatch(/lien_origine/);
    const avec = (await get(`/annonces/${ids.paris}`, cleLien)).json();
    expect(avec.id_portail).toBe('portal_a:1001');
    expect(avec.lien).toBe('https://www.portal-a.example/annonces/1001');
  });

  it('debits nothing for an absent listing, nor for one not analysed yet', async () => {
    const avant = (await get(`/annonces/${ids.maison}`)).json().credits.restants;
    const absente = await get('/annonces/portal_a:0000000');
    expect(absente.statusCode).toBe(404);
    expect(absente.json().code).toBe('ressource_absente');
    await t.db.query(`UPDATE annonces SET resultat_analyse = NULL WHERE id = $1`, [ids.lille]);
    const pasAnalysee = await get(`/annonces/${ids.lille}`);
    expect(pasAnalysee.statusCode).toBe(404);
    expect(pasAnalysee.json().code).toBe('annonce_non_analysee');
    expect(pasAnalysee.headers['retry-after']).toBe('30');
    // The next listing served costs its 3 credits: the refusals in between cost none.
    const apres = (await get(`/annonces/${ids.doublon}`)).json().credits;
    expect(apres).toEqual({ debites: 3, restants: avant - 3 });
  });

  it('serves a private seller unnamed, without contacts, and a professional as published', async () => {
    const maison = (await get(`/annonces/${ids.maison}`)).json();
    expect(maison.annonceur).toEqual({
      type_vendeur: 'particulier',
      nom: null,
      enseigne: null,
      siren: null,
      mandat: null,
      telephone: null,
      email: null,
    });
    expect(maison.description).toBe('Maison familiale, contact : [téléphone masqué], [nom masqué].');
    const pro = (await get(`/annonces/${ids.paris}`)).json();
    expect(pro.annonceur).toMatchObject({ type_vendeur: 'pro', nom: 'AGENCE DU CANAL', siren: '552100554' });
  });

  it('computes what the portal does not: prix_m2, the DPE calendar, the property, the analysis', async () => {
    const maison = (await get(`/annonces/${ids.maison}`)).json();
    expect(maison.prix_m2).toBe(Math.round(320_000 / 110));
    expect(maison.dpe).toMatchObject({ etiquette: 'F', interdiction_location: '2028-01-01' });
    expect(maison.dpe.mois_restants).toBeGreaterThanOrEqual(0);
    expect(maison.premiere_parution).toEqual({ date: '2025-03-05', estimee: true });
    expect(maison.terrain_suspect).toBe(false);
    const a = maison.analyse;
    expect(Object.keys(a.sous_scores).sort()).toEqual(
      [
        'etat',
        'fiscalite',
        'localisation',
        'marche',
        'potentiel',
        'qualite_annonce',
        'rentabilite',
        'risques',
        'transport',
      ].sort(),
    );
    expect(a.sous_scores.transport).toBeNull();
    expect(a.limites.join(' ')).toMatch(/transport/);
    // No price scale nor rent in this database: no score, and said why.
    expect(a.score).toBeNull();
    expect(a.limites.join(' ')).toMatch(/score : ni le marché ni la rentabilité/);
    expect(a.negociation.cible_min).toBeGreaterThanOrEqual(0.6 * 320_000);
    expect(a.negociation.cible_min).toBeLessThanOrEqual(320_000);
    const doublon = (await get(`/annonces/${ids.doublon}`)).json();
    expect(doublon.bien_uid).toBe((await annonceDuPortail(t.db, 'portal_a:1001')).bien_uid);
    expect(doublon.principale).toBe(false);
    expect(doublon.qualite.drapeaux).toContain('doublon_probable');
  });

  it('serves only the dotted paths asked with champs, and raw data for a professional with inclure=brut', async () => {
    const res = await get(`/annonces/${ids.paris}?champs=analyse.negociation.cible_min,dpe.etiquette,prix`);
    expect(res.statusCode, res.body).toBe(200);
    const { credits, ...corps } = res.json();
    expect(corps).toEqual({
      id: ids.paris,
      prix: 380_000,
      dpe: { etiquette: 'D' },
      analyse: { negociation: { cible_min: expect.any(Number) } },
    });
    expect(credits.debites).toBe(3);
    const inconnu = await get(`/annonces/${ids.paris}?champs=analyse.inconnu`);
    expect(inconnu.statusCode).toBe(400);
    const brut = (await get(`/annonces/${ids.paris}?inclure=brut`)).json();
    expect(brut.brut).toMatchObject({ portail: 'portal_a', id: '1001', prix: 380_000 });
    const prive = (await get(`/annonces/${ids.maison}?inclure=brut`)).json();
    expect(prive.brut).toBeNull();
  });

  it('has a batch variant, each element served and billed as its own call', async () => {
    const res = await t.call('POST', '/annonces/lot', cle, {
      elements: [{ id: ids.maison, champs: 'prix' }, { id: 'portal_b:inconnue' }],
    });
    expect(res.statusCode, res.body).toBe(200);
    const [servie, absente] = res.json().elements;
    expect(servie).toMatchObject({ statut: 200, resultat: { id: ids.maison, prix: 320_000 } });
    expect(absente).toMatchObject({ statut: 404, erreur: { code: 'ressource_absente' } });
  });

  it('answers 304 to a client holding the same sheet, debiting nothing', async () => {
    const premier = await get(`/annonces/${ids.paris}`);
    const encore = await get(`/annonces/${ids.paris}`, cle, { 'if-none-match': String(premier.headers.etag) });
    expect(encore.statusCode).toBe(304);
    expect(encore.headers['svc-credits-debites']).toBe('0');
  });
});

describe('flux_annonces', () => {
  const lire = async (query: string, key = cle) => {
    const res = await get(`/flux/annonces${query}`, key);
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  };

  it('serves the events in write order, each debited, with a cursor even on the last page', async () => {
    const tout = await lire('?limite=1000');
    const genres = tout.evenements.map(
      (e: any) =>
        `${e.annonce_id === ids.paris ? 'paris' : e.annonce_id === ids.doublon ? 'doublon' : e.annonce_id === ids.maison ? 'maison' : 'lille'}:${e.genre}`,
    );
    // Write order: the file's, whatever the snapshots' times.
    expect(genres.slice(0, 7)).toEqual([
      'paris:nouvelle',
      'paris:baisse_prix',
      'doublon:nouvelle',
      'paris:multi_agences',
      'maison:nouvelle',
      'lille:nouvelle',
      'lille:retrait',
    ]);
    expect(genres.slice(7).every((g: string) => g.endsWith(':analyse'))).toBe(true);
    const numeros = tout.evenements.map((e: any) => Number(e.id));
    expect([...numeros].sort((a, b) => a - b)).toEqual(numeros);
    expect(tout.a_jour).toBe(true);
    expect(tout.curseur_suivant).toEqual(expect.any(String));
    expect(tout.credits.debites).toBe(tout.evenements.length);
  });

  it('serves the listing in the list format, null for a duplicate, the portal link only with lien_origine', async () => {
    const { evenements } = await lire('?genres=nouvelle&limite=1000', cleLien);
    const paris = evenements.find((e: any) => e.annonce_id === ids.paris);
    expect(Object.keys(paris.annonce)).toHaveLength(26);
    expect(paris.annonce).toMatchObject({ id_portail: 'portal_a:1001', prix: 380_000, prix_m2: 9500, dpe: 'D' });
    expect(evenements.find((e: any) => e.annonce_id === ids.doublon).annonce).toBeNull();
    const sans = (await lire('?genres=nouvelle&limite=1000')).evenements.find((e: any) => e.annonce_id === ids.paris);
    expect([sans.annonce.id_portail, sans.annonce.lien]).toEqual([null, null]);
    const maison = evenements.find((e: any) => e.annonce_id === ids.maison).annonce;
    expect(maison.annonceur).toEqual({ type_vendeur: 'particulier', nom: null, enseigne: null, siren: null });
  });

  it('serves each listing as its sheet says, field by field, in the order of the list format', async () => {
    // The list format is written by PostgreSQL, the sheet by the api: the same listing must read the same in both.
    const { evenements } = await lire('?limite=1000', cleLien);
    // The listings with a sheet (a test above took Lille's analysis away: it has none).
    const servies = evenements.filter((e: any) => e.annonce && e.annonce.id !== ids.lille);
    expect(new Set(servies.map((e: any) => e.annonce.id))).toEqual(new Set([ids.paris, ids.maison]));
    for (const { annonce: l } of servies) {
      const sheet = await get(`/annonces/${l.id}`, cleLien);
      expect(sheet.statusCode, sheet.body).toBe(200);
      const f = sheet.json();
      expect(l).toStrictEqual({
        id: f.id,
        id_portail: f.id_portail,
        lien: f.lien,
        source: f.source,
        statut: f.statut,
        type: f.type,
        commune: f.commune,
        code_postal: f.code_postal,
        insee: f.insee,
        departement: f.departement,
        lat: f.position?.lat ?? null,
        lon: f.position?.lon ?? null,
        precision_coordonnees: f.position?.precision ?? l.precision_coordonnees,
        prix: f.prix,
        surface: f.surface,
        pieces: f.pieces,
        prix_m2: f.prix_m2,
        dpe: f.dpe.etiquette,
        score: f.analyse.score,
        rendement_brut: f.analyse.rendement_brut_pct,
        rendement_net: f.analyse.rendement_net_pct,
        etat_visuel: null,
        premiere_parution: f.premiere_parution.date,
        type_vendeur: f.type_vendeur,
        annonceur: {
          type_vendeur: f.annonceur.type_vendeur,
          nom: f.annonceur.nom,
          enseigne: f.annonceur.enseigne,
          siren: f.annonceur.siren,
        },
        drapeaux: f.qualite.drapeaux,
      });
      expect(Object.keys(l)).toEqual(Object.keys(AnnonceListeSchema.shape));
    }
    // Old enough to be flagged by both: the snapshots are of March 2025.
    expect(
      servies.every((e: any) => e.annonce.statut !== 'actif' || e.annonce.drapeaux.includes('donnee_ancienne')),
    ).toBe(true);
  });

  it('combines its filters with AND', async () => {
    const { evenements } = await lire('?genres=nouvelle&genres=retrait&departement=59');
    expect(evenements.map((e: any) => e.genre)).toEqual(['nouvelle', 'retrait']);
    expect(evenements.every((e: any) => e.annonce_id === ids.lille)).toBe(true);
    expect((await lire('?genres=nouvelle&cp=75011')).evenements.map((e: any) => e.annonce_id)).toEqual([
      ids.paris,
      ids.doublon,
    ]);
    expect((await lire('?insee=33234&insee=59350&genres=retrait')).evenements).toHaveLength(1);
    // The events that happened from then on: the duplicate came online on the 11th, the others before.
    expect((await lire('?depuis=2025-03-11&genres=nouvelle')).evenements.map((e: any) => e.annonce_id)).toEqual([
      ids.doublon,
    ]);
    const vide = await lire('?insee=13201');
    expect(vide.evenements).toEqual([]);
    expect(vide.credits.debites).toBe(0);
    expect(vide.limites.join(' ')).toMatch(/Aucun événement ne passe ces filtres/);
  });

  it('pages with its cursor, and resent after an import reads only what came since', async () => {
    const tout = (await lire('?limite=1000')).evenements.map((e: any) => e.id);
    const lus: string[] = [];
    let page = await lire('?limite=3');
    expect(page.a_jour).toBe(false);
    for (;;) {
      lus.push(...page.evenements.map((e: any) => e.id));
      if (page.a_jour) break;
      page = await lire(`?limite=3&curseur=${encodeURIComponent(page.curseur_suivant)}`);
    }
    expect(lus).toEqual(tout);
    const fin = page.curseur_suivant;
    // Nothing new yet: an empty page, nothing debited, said so.
    const rien = await lire(`?limite=3&curseur=${encodeURIComponent(fin)}`);
    expect(rien).toMatchObject({ evenements: [], a_jour: true });
    expect(rien.credits.debites).toBe(0);
    expect(rien.limites.join(' ')).toMatch(/Rien de nouveau/);

    await importer(
      await fichierReleves(dir, 'suite.jsonl', [appartement({ vu_le: '2025-04-02T08:00:00Z', prix: 370_000 })]),
    );
    const suite = await lire(`?limite=3&curseur=${encodeURIComponent(fin)}`);
    expect(suite.evenements.map((e: any) => [e.annonce_id, e.genre])).toEqual([
      [ids.paris, 'baisse_prix'],
      [ids.paris, 'reanalyse'],
    ]);
    expect(suite.evenements[0].apres).toMatchObject({ prix: 370_000, ecart_pct: -2.6 });
    expect(suite.a_jour).toBe(true);
  });

  it('refuses a cursor sent with other filters, or altered', async () => {
    const { curseur_suivant } = await lire('?genres=retrait');
    const autre = await get(`/flux/annonces?genres=nouvelle&curseur=${encodeURIComponent(curseur_suivant)}`);
    expect(autre.statusCode).toBe(400);
    expect(autre.json().erreurs[0].champ).toBe('curseur');
    const altere = await get(`/flux/annonces?genres=retrait&curseur=${encodeURIComponent(`x${curseur_suivant}`)}`);
    expect(altere.statusCode).toBe(400);
  });

  it('is for the Data subscription', async () => {
    const usage = (await t.organisation({ acces: 'usage' })).cle;
    const res = await get('/flux/annonces', usage);
    expect(res.statusCode).toBe(403);
    expect(res.json().code).toBe('palier_insuffisant');
  });
});
