import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Operation } from '../../../domain/catalogue.ts';
import { ajuster, ligneDe, residuels } from '../../../domain/marche/derives.ts';
import { calculerIndicateurs } from '../../../domain/marche/indicateurs.ts';
import { marcheOperations } from '../../../domain/marche/operations.ts';
import { loadSandbox } from '../../../domain/sandbox/load.ts';
import { createTestApp, type TestApp } from '../../support/app.ts';

// palmares_communes and comparer_communes on the generated territory, as a pk_test_ key sees them: every figure is
// checked against the commune's own sheet and price scale, or recomputed from them.

let t: TestApp;
let cle: string;

beforeAll(async () => {
  t = await createTestApp({ operations: marcheOperations as Operation[] });
  await loadSandbox(t.db, { dataset: 'sandbox' });
  const org = await t.organisation({ acces: 'usage' });
  cle = (await t.admin('POST', `/organisations/${org.id}/cles`, { mode: 'test' })).body.cle;
}, 180_000);
afterAll(async () => {
  await t?.close();
});

const get = async (url: string) => {
  const res = await t.call('GET', url, cle);
  return { status: res.statusCode, body: res.json() };
};

interface Donnee {
  rang: number;
  insee: string;
  departement: string;
  region: string | null;
  transactions: number;
  population: number | null;
  valeur_indicateur: number;
  prix_m2_appartement: number | null;
  prix_m2_maison: number | null;
  rendement_brut_appartement_pct: number | null;
  rendement_brut_maison_pct: number | null;
  loyer_m2_predit: number | null;
  prix_residuel_pct: number | null;
}

/** The commune's price of housing as the ranking documents it, from its price scale alone. */
async function prixLogement(insee: string): Promise<number | null> {
  const { body } = await get(`/communes/${insee}/prix`);
  const dernier = (type: string) =>
    body.bareme.filter((b: { type: string; prix_m2: number | null }) => b.type === type && b.prix_m2 !== null).at(-1);
  const a = dernier('appartement');
  const m = dernier('maison');
  if (a && m) {
    const w = a.n_ventes_recentes + m.n_ventes_recentes;
    return Math.round(
      w > 0 ? (a.prix_m2 * a.n_ventes_recentes + m.prix_m2 * m.n_ventes_recentes) / w : (a.prix_m2 + m.prix_m2) / 2,
    );
  }
  return (a ?? m)?.prix_m2 ?? null;
}

describe('palmares_communes in the sandbox', () => {
  it('ranks the Gironde communes by lowest price, with methode and the thresholds applied', async () => {
    // The acceptance call of the issue, as a new user makes it.
    const { status, body } = await get('/communes/palmares?indicateur=prix-bas&departement=33');
    expect(status, JSON.stringify(body)).toBe(200);
    expect(body.indicateur).toBe('prix-bas');
    expect(body.maille).toEqual({ niveau: 'departement', code: '33', nom: 'Gironde' });
    expect(body.methode).toMatch(/pondérée par les ventes récentes/);
    expect(body.filtres_appliques).toEqual([
      'departement = 33 (Gironde)',
      'transactions >= 5 (seuil par défaut des indicateurs de prix)',
    ]);
    const donnees: Donnee[] = body.donnees;
    expect(donnees.map((d) => d.insee).sort()).toEqual(['33001', '33234']);
    expect(donnees.map((d) => d.rang)).toEqual([1, 2]);
    for (const d of donnees) {
      expect(d.departement).toBe('33');
      expect(d.transactions).toBeGreaterThanOrEqual(5);
      expect(d.valeur_indicateur, d.insee).toBe(await prixLogement(d.insee));
    }
    const valeurs = donnees.map((d) => d.valeur_indicateur);
    expect(valeurs).toEqual([...valeurs].sort((a, b) => a - b));
    // A threshold given replaces the default, and is what filtres_appliques says.
    const seuil = Math.max(...donnees.map((d) => d.transactions));
    const haut = await get(`/communes/palmares?indicateur=prix-bas&departement=33&transactions_min=${seuil}`);
    expect(haut.body.filtres_appliques).toContain(`transactions >= ${seuil}`);
    expect(haut.body.donnees.map((d: Donnee) => d.insee)).toEqual(
      donnees.filter((d) => d.transactions >= seuil).map((d) => d.insee),
    );
  });

  it('pages with a cursor bound to its search, ranks counting from the first page', async () => {
    const tout = (await get('/communes/palmares?indicateur=prix-eleve&transactions_min=0')).body.donnees as Donnee[];
    expect(tout.length).toBeGreaterThanOrEqual(3);
    const p1 = await get('/communes/palmares?indicateur=prix-eleve&transactions_min=0&limite=2');
    expect(p1.body.donnees.map((d: Donnee) => d.insee)).toEqual(tout.slice(0, 2).map((d) => d.insee));
    expect(p1.body.curseur_suivant).toEqual(expect.any(String));
    const p2 = await get(
      `/communes/palmares?indicateur=prix-eleve&transactions_min=0&limite=2&curseur=${encodeURIComponent(p1.body.curseur_suivant)}`,
    );
    expect(p2.body.donnees.map((d: Donnee) => [d.rang, d.insee])).toEqual(
      tout.slice(2, 4).map((d, k) => [k + 3, d.insee]),
    );
    // The same cursor for another indicator is refused.
    const autre = await get(
      `/communes/palmares?indicateur=prix-bas&transactions_min=0&limite=2&curseur=${encodeURIComponent(p1.body.curseur_suivant)}`,
    );
    expect(autre.status).toBe(400);
  });

  it('gross yield: a year of rent over the price, as the market sheet says', async () => {
    const { body } = await get('/communes/palmares?indicateur=rendement-locatif&transactions_min=0');
    expect(body.donnees.length).toBeGreaterThan(0);
    for (const d of body.donnees as Donnee[]) {
      const fiche = (await get(`/communes/${d.insee}`)).body;
      expect(d.valeur_indicateur).toBe(fiche.rendement_brut_pct.appartement ?? fiche.rendement_brut_pct.maison);
    }
    const valeurs = body.donnees.map((d: Donnee) => d.valeur_indicateur);
    expect(valeurs).toEqual([...valeurs].sort((a: number, b: number) => b - a));
  });

  it('cash-flow: the documented loan of 20 years at 3.5 % with 8 % fees, 25 % of the rent for charges', async () => {
    const { body } = await get('/communes/palmares?indicateur=cashflow-positif&transactions_min=0');
    expect(body.methode).toMatch(/20 ans à 3,5 %/);
    expect(body.filtres_appliques).toContain('cash-flow mensuel par m² > 0 €');
    const mensualite = 0.035 / 12 / (1 - (1 + 0.035 / 12) ** -240);
    const brut = (await get('/communes/palmares?indicateur=rendement-locatif&transactions_min=0')).body.donnees;
    for (const d of brut as Donnee[]) {
      const prix = d.prix_m2_appartement ?? d.prix_m2_maison!;
      const loyer = d.loyer_m2_predit!;
      const cashflow = Math.round((loyer * 0.75 - prix * 1.08 * mensualite) * 100) / 100;
      const classee = body.donnees.find((c: Donnee) => c.insee === d.insee);
      // Ranked exactly when positive, with that value.
      if (cashflow > 0) expect(classee?.valeur_indicateur, d.insee).toBeCloseTo(cashflow, 1);
      else expect(classee, d.insee).toBeUndefined();
    }
  });

  it('filters by région (name or short name) and by population, and says so', async () => {
    const r = await get('/communes/palmares?indicateur=prix-bas&region=nouvelle%20aquitaine&transactions_min=0');
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.maille).toEqual({ niveau: 'region', code: '75', nom: 'Nouvelle-Aquitaine' });
    expect(r.body.donnees.every((d: Donnee) => d.region === '75')).toBe(true);
    const big = await get('/communes/palmares?indicateur=prix-bas&population_min=10000000&transactions_min=0');
    expect(big.body.donnees).toEqual([]);
    expect(big.body.filtres_appliques).toContain('population >= 10000000');
    expect(big.body.credits.debites).toBe(0);
    expect((await get('/communes/palmares?indicateur=prix-bas&region=IDF&departement=33')).status).toBe(400);
    expect((await get('/communes/palmares?indicateur=prix-bas&region=Atlantide')).status).toBe(400);
    expect((await get('/communes/palmares?indicateur=inconnu')).status).toBe(400);
  });

  it('pinel-a keeps the communes of zones A bis and A; peu-de-passoires needs no sale but 10 DPE', async () => {
    const tous = (await get('/communes/palmares?indicateur=meilleur-rendement&transactions_min=0')).body
      .donnees as Array<Donnee & { zone_abc: string | null }>;
    const pinel = await get('/communes/palmares?indicateur=pinel-a&transactions_min=0');
    expect(pinel.body.filtres_appliques).toContain('zone A/B/C : Abis ou A');
    const attendues = tous.filter((d) => d.zone_abc === 'Abis' || d.zone_abc === 'A').map((d) => d.insee);
    expect(attendues.length).toBeGreaterThan(0);
    expect(pinel.body.donnees.map((d: Donnee) => d.insee).sort()).toEqual(attendues.sort());
    const passoires = await get('/communes/palmares?indicateur=peu-de-passoires');
    expect(passoires.body.filtres_appliques).toEqual(['au moins 10 DPE']);
    const valeurs = passoires.body.donnees.map((d: Donnee & { passoires_dpe_fg_pct: number }) => {
      expect(d.valeur_indicateur).toBe(d.passoires_dpe_fg_pct);
      return d.valeur_indicateur;
    });
    expect(valeurs.length).toBeGreaterThan(0);
    expect(valeurs).toEqual([...valeurs].sort((a: number, b: number) => a - b));
    // Strasbourg has no sale (Alsace-Moselle) but its DPE: ranked here, nowhere a price is needed.
    expect(passoires.body.donnees.map((d: Donnee) => d.insee)).toContain('67482');
    expect(tous.map((d) => d.insee)).not.toContain('67482');
  });

  it('sous-evaluees: only communes priced below the model, the most under first, the model in methode', async () => {
    const { body } = await get('/communes/palmares?indicateur=sous-evaluees&transactions_min=0');
    expect(body.status ?? 200).toBe(200);
    expect(body.methode).toMatch(/ln\(prix\)|pas de modèle/);
    for (const d of body.donnees as Donnee[]) {
      expect(d.valeur_indicateur).toBeLessThan(0);
      expect(d.valeur_indicateur).toBe(d.prix_residuel_pct);
    }
  });
});

describe('comparer_communes in the sandbox', () => {
  it('carries the indicators of palmares_communes, names the best and lists 99999 as unknown', async () => {
    const { status, body } = await get('/communes/comparaison?insee=33234,33001,99999');
    expect(status, JSON.stringify(body)).toBe(200);
    expect(body.introuvables).toEqual(['99999']);
    expect(body.communes.map((c: Donnee) => c.insee)).toEqual(['33234', '33001']);
    const palmares = (await get('/communes/palmares?indicateur=prix-bas&departement=33&transactions_min=0')).body
      .donnees as Donnee[];
    for (const c of body.communes as Donnee[]) {
      const p = palmares.find((d) => d.insee === c.insee);
      if (p) {
        const { rang: _r, valeur_indicateur: _v, ...indicateurs } = p;
        expect(c).toEqual(indicateurs);
      }
    }
    const [latresne, abzac] = body.communes as Donnee[];
    const plusBas = (a: number | null, b: number | null) =>
      a === null && b === null ? null : b === null || (a !== null && a <= b) ? '33234' : '33001';
    expect(body.meilleure_par_indicateur.prix_maison_le_plus_bas).toBe(
      plusBas(latresne.prix_m2_maison, abzac.prix_m2_maison),
    );
    expect(body.meilleure_par_indicateur.prix_appartement_le_plus_bas).toBe(
      plusBas(latresne.prix_m2_appartement, abzac.prix_m2_appartement),
    );
    expect(body.credits).toBeDefined();
  });
});

describe('the expected-price model', () => {
  it('recovers the coefficients of a log-linear relation, and refuses too few communes', () => {
    const x: Array<[number, number]> = [];
    const y: number[] = [];
    for (let k = 0; k < 40; k++) {
      const lnLoyer = Math.log(8 + (k % 7));
      const lnPop = Math.log(500 + 997 * k);
      x.push([lnLoyer, lnPop]);
      y.push(2 + 1.5 * lnLoyer + 0.1 * lnPop + (k % 2 ? 0.01 : -0.01));
    }
    const fit = ajuster(x, y)!;
    expect(fit.beta[1]).toBeCloseTo(1.5, 1);
    expect(fit.beta[2]).toBeCloseTo(0.1, 1);
    expect(fit.r2).toBeGreaterThan(0.99);
    expect(ajuster(x.slice(0, 5), y.slice(0, 5))).toBeNull();
  });

  it('sets a negative residual on a commune priced below what its rent and size predict', () => {
    // Nine communes on ln(prix) = 1 + 1.2 ln(loyer) + 0.05 ln(population), a tenth at 70 % of its expected price.
    const lignes = Array.from({ length: 10 }, (_, k) => {
      const loyer = 8 + k;
      const population = 1000 * (k + 1);
      const attendu = Math.exp(1 + 1.2 * Math.log(loyer) + 0.05 * Math.log(population));
      const prix = Math.round(k === 9 ? attendu * 0.7 : attendu);
      const i = calculerIndicateurs('33001', {
        marche: { lignes: [], departement: [], bassins: [], donneesDu: null },
        loyers: {},
        zone: null,
        dpe: undefined,
      });
      const item = { prix_m2: prix, label: 'mesure' as const } as NonNullable<typeof i.prix.appartement>;
      const ligne = { ...ligneDe(i), population, loyer_m2_appartement: loyer, prix_m2_appartement: prix };
      return { ligne, i: { ...i, prix: { appartement: item, maison: null } } };
    });
    const [modele] = residuels(lignes);
    expect(modele).toMatchObject({ type: 'appartement', n: 10 });
    expect(lignes[9].ligne.prix_residuel_pct).toBeLessThan(-15);
    for (const { ligne } of lignes.slice(0, 9)) expect(ligne.prix_residuel_pct).toBeGreaterThan(-15);
  });
});
