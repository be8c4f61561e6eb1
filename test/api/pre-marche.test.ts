import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCOPES } from '../../domain/catalogue.ts';
import { loadSandbox } from '../../domain/sandbox/load.ts';
import { PROPENSIONS } from '../../domain/sandbox/parts/pre-marche.ts';
import { createTestApp, type TestApp } from '../support/app.ts';

// The pre-market as a user meets it on the demonstration territory (the generated sandbox loaded into the live
// data, as `npm start` does: the pre-market has no sandbox of its own). Its history was drawn with KNOWN sale
// propensities per signal (domain/sandbox/parts/pre-marche.ts): the model, trained by the load like `npm run
// modeles`, must find their order, and each band's real rate on the held-out addresses must stand within the
// published tolerance of what the model predicted for them.

let t: TestApp;
let cle: string;
let cleLien: string;
const get = (url: string, key = cle) => t.call('GET', url, key);

beforeAll(async () => {
  t = await createTestApp();
  await loadSandbox(t.db, { dataset: 'live' });
  // Data access: 100 000 included credits, a page of 50 addresses costs 500.
  cle = (await t.organisation()).cle;
  cleLien = (await t.organisation({ portees: [...SCOPES] })).cle;
}, 240_000);
afterAll(async () => {
  await t?.close();
});

interface Coefficient {
  signal: string;
  coefficient: number;
  retenu: boolean;
}

describe('the model, measured (GET /modeles/pre_marche)', () => {
  it('recovers the order of the propensities the history was drawn with', async () => {
    const res = await get('/modeles/pre_marche');
    expect(res.statusCode, res.body).toBe(200);
    const fiche = res.json().modeles[0];
    const coefficients = new Map<string, Coefficient>(fiche.coefficients.map((c: Coefficient) => [c.signal, c]));
    const plantes = Object.entries(PROPENSIONS) as Array<[string, number]>;
    // Every pair of signals drawn at least 1 log-odds apart comes out in the same order; the sandbox's few
    // thousand examples resolve no finer.
    let paires = 0;
    for (const [a, pa] of plantes) {
      for (const [b, pb] of plantes) {
        if (pa - pb < 1) continue;
        paires++;
        expect(coefficients.get(a)!.coefficient, `${a} (${pa}) > ${b} (${pb})`).toBeGreaterThan(
          coefficients.get(b)!.coefficient,
        );
      }
    }
    expect(paires).toBeGreaterThanOrEqual(4);
    // The strong signals are retained, and the one drawn negative keeps its sign.
    expect(coefficients.get('audit_connu')!.retenu).toBe(true);
    expect(coefficients.get('dpe_valide_au_dpe')!.retenu).toBe(true);
    expect(coefficients.get('detention_moins_2_ans')!.coefficient).toBeLessThan(0);
    // Adjusted coefficients: the retained signals only.
    expect(fiche.coefficients_ajustes.length).toBeGreaterThan(0);
    expect(fiche.coefficients_ajustes.every((c: Coefficient) => c.retenu)).toBe(true);
  });

  it('publishes bands whose real rate on held-out history agrees with the prediction within the tolerance', async () => {
    const fiche = (await get('/modeles/pre_marche')).json().modeles[0];
    const tous = fiche.calibration.filter((b: { type_bien: string }) => b.type_bien === 'tous');
    expect(tous.length).toBeGreaterThanOrEqual(3);
    for (const b of tous) {
      expect(b.n, b.bande).toBeGreaterThanOrEqual(30);
      expect(Math.abs(b.taux_vente_12m_pct - b.taux_predit_pct), `bande ${b.bande}`).toBeLessThanOrEqual(
        b.tolerance_pct,
      );
      expect(b.calcule_le).toMatch(/^\d{4}-\d{2}-\d{2}T/);
    }
    // The top band sells clearly more than the bottom one: the ranking means something.
    expect(tous[0].taux_vente_12m_pct).toBeGreaterThan(tous[tous.length - 1].taux_vente_12m_pct + 15);
    const mesures = new Map(fiche.mesures.map((m: { indicateur: string }) => [m.indicateur, m]));
    for (const indicateur of ['taux_base', 'taux_bande_haute', 'auc', 'ecart_calibration_max']) {
      const m = mesures.get(indicateur) as { mesure_le: string; echantillon: number; hors_echantillon: boolean };
      expect(m, indicateur).toBeDefined();
      expect(m.mesure_le).toMatch(/^\d{4}-/);
      expect(m.hors_echantillon).toBe(true);
      expect(m.echantillon).toBeGreaterThan(100);
    }
    expect((mesures.get('auc') as { valeur: number }).valeur).toBeGreaterThan(0.6);
    expect((mesures.get('bandes_dans_la_tolerance') as { valeur: number }).valeur).toBe(100);
    expect(fiche.decroissance[0].multiplicateur).toBe(1);
    expect(fiche.cohortes.length).toBeGreaterThan(0);
  });
});

interface Item {
  rang: number;
  cle_ban: string;
  p_vente: number;
  priorite: number;
  fenetre_mandat: { valeur: number };
  deja_en_vente: boolean;
  dpe_le: string;
  raisons: string[];
  frise: Array<{ date: string; type: string; apres_dpe: boolean }>;
  insee: string;
  age_dpe_jours: number;
}

describe('pre_marche_zone (GET /pre-marche)', () => {
  it('ranks the addresses of Latresne by priority, with probabilities, reasons and timelines', async () => {
    const res = await get('/pre-marche?insee=33234&limite=50');
    expect(res.statusCode, res.body).toBe(200);
    const r = res.json();
    const adresses: Item[] = r.adresses;
    expect(adresses.length).toBeGreaterThan(5);
    expect(res.headers['svc-credits-debites']).toBe(String(10 * adresses.length));
    expect(r.secteur.communes).toEqual([{ insee: '33234', commune: 'Latresne' }]);
    for (const [i, a] of adresses.entries()) {
      expect(a.rang).toBe(i + 1);
      expect(a.insee).toBe('33234');
      expect(a.priorite).toBeCloseTo(a.p_vente * a.fenetre_mandat.valeur, 3);
      if (i > 0) expect(a.priorite).toBeLessThanOrEqual(adresses[i - 1].priorite);
      expect(a.age_dpe_jours).toBeLessThan(730);
      expect(a.raisons.length).toBeGreaterThan(0);
      expect(a.frise.some((e) => e.type === 'dpe' && e.date === a.dpe_le)).toBe(true);
      for (const e of a.frise) expect(e.apres_dpe).toBe(e.date > a.dpe_le);
      // Excluded by default: on sale, or sold since the DPE.
      expect(a.deja_en_vente).toBe(false);
      expect(a.frise.some((e) => e.type === 'vente' && e.date >= a.dpe_le)).toBe(false);
    }
    // Every band served beside its real rate: the first item's band is one of the published ones.
    const fiche = (await get('/modeles/pre_marche')).json().modeles[0];
    const premier = (await get(`/adresses/${adresses[0].cle_ban}/pre-marche`)).json();
    expect(
      fiche.calibration.some(
        (b: { bande: string; taux_vente_12m_pct: number }) =>
          b.bande === premier.bande.bande && b.taux_vente_12m_pct === premier.bande.taux_vente_12m_pct,
      ),
    ).toBe(true);
    const c = r.comptage;
    expect(adresses.length).toBe(Math.min(c.prospectables, 50));
    expect(c.adresses_dpe_24m).toBeGreaterThanOrEqual(c.prospectables + c.hors_perimetre);
    expect(c.dpe_moins_90j).toBeLessThanOrEqual(c.adresses_dpe_24m);
    expect(c.hors_perimetre).toBe(0);
    expect(r.precision.base_pct).toBeGreaterThan(0);
    expect(r.precision.mesure_le).toBe(fiche.cohortes[0].calcule_le);
  });

  it('keeps the addresses on sale or sold since their DPE when asked, and counts them either way', async () => {
    const toutes = async (filtre: string) => {
      const lues: Item[] = [];
      let r = (await get(`/pre-marche?insee=33234&limite=50${filtre}`)).json();
      lues.push(...r.adresses);
      while (r.curseur_suivant) {
        r = (
          await get(`/pre-marche?insee=33234&limite=50${filtre}&curseur=${encodeURIComponent(r.curseur_suivant)}`)
        ).json();
        lues.push(...r.adresses);
      }
      return { lues, comptage: r.comptage };
    };
    const defaut = await toutes('');
    const tout = await toutes('&inclure_deja_en_vente=true');
    expect(tout.comptage).toEqual(defaut.comptage);
    const c = defaut.comptage;
    expect(c.vendues_depuis + c.deja_en_vente).toBeGreaterThan(0);
    expect(defaut.lues.length).toBe(c.prospectables);
    expect(tout.lues.length).toBe(c.adresses_dpe_24m - c.hors_perimetre);
    const mises = tout.lues.filter(
      (a) => a.deja_en_vente || a.frise.some((e) => e.type === 'vente' && e.date >= a.dpe_le),
    );
    expect(mises.length).toBe(tout.lues.length - defaut.lues.length);
  });

  it('reads page by page with a signed cursor that follows the ranking', async () => {
    const toutes: Item[] = (await get('/pre-marche?cp=33360&limite=50')).json().adresses;
    const lues: Item[] = [];
    let url = '/pre-marche?cp=33360&limite=4';
    for (let pages = 0; pages < 4; pages++) {
      const r = (await get(url)).json();
      lues.push(...r.adresses);
      if (!r.curseur_suivant) break;
      url = `/pre-marche?cp=33360&limite=4&curseur=${encodeURIComponent(r.curseur_suivant)}`;
    }
    expect(lues.map((a) => [a.rang, a.cle_ban])).toEqual(toutes.slice(0, lues.length).map((a) => [a.rang, a.cle_ban]));
    const premiere = (await get('/pre-marche?cp=33360&limite=4')).json();
    const autre = await get(`/pre-marche?insee=33234&limite=4&curseur=${encodeURIComponent(premiere.curseur_suivant)}`);
    expect(autre.statusCode).toBe(400);
    expect(autre.json().erreurs[0].champ).toBe('curseur');
  });

  it('reads a radius and a list of communes by name, and says which names it did not find', async () => {
    const r = (await get('/pre-marche?communes=Latresne,Abzac,Nulle-Part-Sur-Mer&limite=10')).json();
    expect(r.secteur.communes.map((c: { insee: string }) => c.insee).sort()).toEqual(['33001', '33234']);
    expect(r.secteur.introuvables).toEqual(['Nulle-Part-Sur-Mer']);
    const autour = (await get('/pre-marche?lat=44.7808&lon=-0.4942&rayon_km=1&limite=10')).json();
    expect(autour.secteur.centre).toEqual({ lat: 44.7808, lon: -0.4942, rayon_km: 1 });
    expect(autour.adresses.length).toBeGreaterThan(0);
    expect(autour.adresses.every((a: Item) => a.insee === '33234')).toBe(true);
    // An intercommunality by its SIREN: its member communes, Latresne among them.
    const { rows } = await t.db.query<{ epci: string }>(
      `SELECT epci FROM communes WHERE dataset = 'live' AND insee = '33234'`,
    );
    const parEpci = (await get(`/pre-marche?epci=${rows[0].epci}&limite=5`)).json();
    expect(parEpci.secteur.intercommunalite.code).toBe(rows[0].epci);
    expect(parEpci.secteur.communes.map((c: { insee: string }) => c.insee)).toContain('33234');
    expect(parEpci.comptage.adresses_dpe_24m).toBeGreaterThanOrEqual(
      (await get('/pre-marche?insee=33234&limite=1')).json().comptage.adresses_dpe_24m,
    );
  });

  it('says Alsace-Moselle is outside the calibrated perimeter, and refuses bad sectors clearly', async () => {
    const r = (await get('/pre-marche?insee=67482')).json();
    expect(r.adresses).toEqual([]);
    expect(r.comptage.hors_perimetre).toBeGreaterThan(0);
    expect(r.limites.join(' ')).toMatch(/Alsace-Moselle/);
    const deux = await get('/pre-marche?insee=33234&cp=33360');
    expect(deux.statusCode).toBe(400);
    expect(deux.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(deux.json().code).toBe('parametres_invalides');
    const inconnue = await get('/pre-marche?insee=99999');
    expect(inconnue.statusCode).toBe(404);
    expect(inconnue.json().code).toBe('commune_introuvable');
    expect(inconnue.headers['svc-credits-debites']).toBeUndefined();
  });
});

describe('pre_marche_adresse (GET /adresses/{cle_ban}/pre-marche)', () => {
  it('serves an address with its band, its variables, its coefficients and its civil companies', async () => {
    const top = (await get('/pre-marche?insee=33234&limite=1')).json().adresses[0] as Item;
    const res = await get(`/adresses/${top.cle_ban}/pre-marche`, cleLien);
    expect(res.statusCode, res.body).toBe(200);
    const r = res.json();
    expect(res.headers['svc-credits-debites']).toBe('10');
    expect(r.hors_perimetre).toBeNull();
    expect(r.adresse.cle_ban).toBe(top.cle_ban);
    expect(r.adresse.p_vente).toBe(top.p_vente);
    // The probability is the band's real rate, times the measured fall with the DPE's age.
    expect(r.adresse.p_vente).toBeCloseTo((r.bande.taux_vente_12m_pct / 100) * r.variables.multiplicateur_age_dpe, 3);
    expect(r.indice).toBeCloseTo(
      r.coefficients.reduce((s: number, c: { coefficient: number }) => s + c.coefficient, 0),
      2,
    );
    expect(r.precision.base_pct).toBeGreaterThan(0);
    expect(Object.keys(r.adresse)).toHaveLength(31);
    // faits_adresse's pre_marche group is the same computation.
    const faits = (await get(`/adresses/${top.cle_ban}/faits?champs=pre_marche`)).json();
    const { signaux, bande, taux_bande_pct, p_vente, calcule_le, qualite, ...variables } = faits.pre_marche;
    expect(variables).toEqual(r.variables);
    expect([bande, taux_bande_pct, p_vente]).toEqual([r.bande.bande, r.bande.taux_vente_12m_pct, r.adresse.p_vente]);
    expect(signaux.length).toBeGreaterThanOrEqual(r.coefficients.length);
    expect(calcule_le).toBe(r.calcule_le);
    expect(qualite.n).toBe(r.bande.n);
  });

  it('serves the civil companies at an address with their SIREN, and no manager', async () => {
    const { rows } = await t.db.query<{ cle_ban: string }>(
      `SELECT cle_ban FROM pre_marche_scores WHERE dataset = 'live' AND jsonb_array_length(societes) > 0
          AND hors_perimetre IS NULL LIMIT 1`,
    );
    expect(rows.length).toBe(1);
    const r = (await get(`/adresses/${rows[0].cle_ban}/pre-marche`)).json();
    expect(r.adresse.societes_civiles.length).toBeGreaterThan(0);
    for (const s of r.adresse.societes_civiles) {
      expect(s.denomination).toMatch(/\(FICTIVE\)/);
      expect(s.siren).toMatch(/^\d{9}$/);
      expect(Object.keys(s).sort()).toEqual(['denomination', 'dernier_avis', 'forme', 'le', 'siren']);
    }
    expect(r.adresse.frise.some((e: { type: string }) => e.type === 'sci')).toBe(true);
  });

  it('serves the reason instead of a probability outside the perimeter, and 404 for an unknown key', async () => {
    const { rows } = await t.db.query<{ cle_ban: string }>(
      `SELECT cle_ban FROM pre_marche_scores WHERE dataset = 'live' AND insee = '67482' LIMIT 1`,
    );
    const r = (await get(`/adresses/${rows[0].cle_ban}/pre-marche`)).json();
    expect(r.hors_perimetre).toMatch(/Alsace-Moselle/);
    expect([r.adresse, r.bande, r.indice, r.variables]).toEqual([null, null, null, null]);
    const inconnue = await get('/adresses/33234_zzzz_09999/pre-marche');
    expect(inconnue.statusCode).toBe(404);
    expect(inconnue.json().code).toBe('adresse_introuvable');
  });
});
