import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../support/app.ts';
import { contractOf } from '../support/contrat.ts';
import { IDU, importSite, pdftotext } from '../support/dossiers.ts';

// coupes_facades as a client calls it, on a Latresne parcel imported through the real cadastre and zoning importers:
// the measures of the JSON, and the same figures read back from the PDF sheets by poppler.

let t: TestApp;
let cle: string;
let contrat: Awaited<ReturnType<typeof contractOf>>;

beforeAll(async () => {
  t = await createTestApp();
  cle = (await t.organisation({ acces: 'usage' })).cle;
  await importSite(t.db);
  contrat = await contractOf(t.app);
}, 60_000);
afterAll(async () => {
  await t?.close();
});

const post = (body: unknown) => t.call('POST', '/urbanisme/coupes', cle, body);
const fichier = async (url: string) => {
  const res = await t.app.inject({ method: 'GET', url });
  expect(res.statusCode).toBe(200);
  return res.rawPayload;
};
const fr = (v: number) => `${v.toFixed(2).replace('.', ',')} m`;

describe('coupes_facades', () => {
  it('measures an extension against the house and draws its section and facades at scale, the sheets saying the JSON’s figures', async () => {
    const res = await post({
      idu: IDU,
      projets: [
        {
          nature: 'extension',
          largeur_m: 5,
          profondeur_m: 3,
          ancrage: 'accole_batiment',
          cote: 'sud',
          hauteur_m: 3,
          toiture: 'un_pan',
          materiaux: { murs: 'enduit gratté beige' },
          ouvertures: [{ type: 'baie', facade: 'sud', largeur_m: 2.4, position_m: 1.3 }],
        },
      ],
    });
    expect(res.statusCode, res.body).toBe(200);
    contrat.expectDescribed('coupes_facades', res);
    const body = res.json();
    expect(body.credits.debites).toBe(20);
    expect(body.parcelle).toMatchObject({
      idu: IDU,
      section: 'AB',
      code_insee: '33234',
      commune: 'Latresne',
      aire_m2: 600,
    });
    // The south boundary has no neighbour: a street; the other three are shared.
    expect(body.parcelle.limites.filter((l: any) => l.nature === 'voie').map((l: any) => l.cote)).toEqual(['sud']);
    const [projet] = body.projets;
    // House south face at y = -2, parcel south boundary at y = -15: 3 m deep extension leaves 10 m to the street.
    expect(projet).toMatchObject({
      emprise_m2: 15,
      surface_plancher_m2: 15,
      accole_batiment: true,
      distance_voie_min_m: 10,
    });
    expect(projet.distance_limite_separative_min_m).toBe(7.5);
    expect(body.faits_manquants.join(' ')).toMatch(/terrain supposé plat/);

    const [coupe] = body.coupes;
    expect(coupe).toMatchObject({
      de: 'nord',
      vers: 'sud',
      longueur_m: 30,
      hauteur_max_sol_m: 3,
      hauteur_max_autorisee_m: 7,
    });
    // The cut crosses the house, from 9 m (its north face) to 17 m (its south face) from the north boundary, within
    // the centimetre the cadastre's 7 decimals of a degree keep.
    expect(coupe.batiments).toHaveLength(1);
    expect(coupe.batiments[0].de_m).toBeCloseTo(9, 1);
    expect(coupe.batiments[0].a_m).toBeCloseTo(17, 1);
    expect(coupe.distances_limites).toEqual([
      { cote: 'nord', distance_m: 17 },
      { cote: 'sud', distance_m: 10 },
    ]);
    const sud = body.facades.find((f: any) => f.orientation === 'sud');
    expect(sud).toMatchObject({ largeur_m: 5, hauteur_faitage_m: 3 });
    expect(sud.ouvertures).toEqual([
      { type: 'baie', libelle: null, position_m: 1.3, largeur_m: 2.4, hauteur_m: 2.15, allege_m: 0 },
    ]);
    expect(body.formalite_derivee).toBe('declaration_prealable');

    expect(body.feuilles.map((f: any) => f.piece)).toEqual(['coupe', 'facades']);
    const feuilleCoupe = body.feuilles[0];
    // 34 m of section with its margins: 340 mm at 1/100, too long for an A4 (277 mm drawable), fits an A3.
    expect(feuilleCoupe).toMatchObject({ echelle: '1/100', format: 'A3' });
    const texteCoupe = pdftotext(await fichier(feuilleCoupe.url));
    expect(texteCoupe).toContain('Échelle : 1/100 — Format A3');
    expect(texteCoupe).toContain(`Parcelle : Latresne — section AB n° 12 (${IDU})`);
    for (const d of coupe.distances_limites) expect(texteCoupe).toContain(fr(d.distance_m));
    expect(texteCoupe).toContain(`H ${fr(coupe.hauteur_max_sol_m)}`);
    expect(texteCoupe).toContain(`Hauteur maximale du PLU ${fr(7)}`);
    expect(texteCoupe).toContain('Existant 1 (hauteur non relevée)');

    const texteFacades = pdftotext(await fichier(body.feuilles[1].url));
    expect(texteFacades).toContain(`Échelle : 1/${body.feuilles[1].echelle.slice(2)}`);
    for (const f of body.facades) {
      expect(texteFacades).toContain(`Façade ${f.orientation}`);
      expect(texteFacades).toContain(fr(f.largeur_m));
    }
    expect(texteFacades).toContain('Murs : enduit gratté beige');
  });

  it('places a pool from the west boundary and draws its section only', async () => {
    const res = await post({
      lat: 44.7816,
      lon: -0.4945,
      pieces: ['coupe'],
      projets: [
        {
          nature: 'piscine',
          largeur_m: 4,
          profondeur_m: 3,
          ancrage: 'depuis_limite',
          cote: 'ouest',
          distance_limite_m: 1.5,
          profondeur_bassin_m: 1.6,
          calage: 'extremite_ouest_sud',
        },
      ],
    });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    const [p] = body.projets;
    expect(p.distances_limites.find((d: any) => d.cote === 'ouest').distance_m).toBe(1.5);
    expect(p.bassin_m2).toBe(12);
    expect(body.formalite_derivee).toBe('declaration_prealable');
    expect(body.facades).toEqual([]);
    expect(body.coupes[0].deblai_m3).toBe(19.2);
    expect(body.feuilles.map((f: any) => f.piece)).toEqual(['coupe']);
    const texte = pdftotext(await fichier(body.feuilles[0].url));
    expect(texte).toContain('Déblai 19,2 m³');
    expect(texte).toContain(fr(1.5));
  });

  it('answers 404 for a parcel the cadastre does not have, without debit', async () => {
    const res = await post({ idu: '33234000ZZ9999', projets: [{ nature: 'abri', largeur_m: 2, profondeur_m: 2 }] });
    expect(res.statusCode).toBe(404);
    expect(res.json().code).toBe('ressource_absente');
    expect(res.headers['svc-credits-debites']).toBeUndefined();
  });

  it('refuses a project without its dimensions, field by field', async () => {
    const res = await post({ idu: IDU, projets: [{ nature: 'abri', largeur_m: 2 }] });
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('parametres_invalides');
    expect(JSON.stringify(res.json().erreurs)).toContain('profondeur_m');
  });
});
