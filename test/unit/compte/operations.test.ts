import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../../../db/client.ts';
import type { OperationContext } from '../../../domain/catalogue.ts';
import { MEMOIRE_PLAFOND } from '../../../domain/compte/memoire-regles.ts';
import {
  memoire,
  memoireAjouter,
  profilInvestisseur,
  profilInvestisseurModifier,
  validerAdresse,
} from '../../../domain/compte/operations.ts';
import { ApiError } from '../../../domain/errors.ts';
import { createTestDb } from '../../support/db.ts';

let test: Awaited<ReturnType<typeof createTestDb>>;
let db: Db;
let organisationId: string;
let horloge: Date;

beforeAll(async () => {
  test = await createTestDb();
  db = test.db;
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO organisations (nom, acces, portees, quota_minute) VALUES ('Org', 'usage', '{compte}', 100) RETURNING id`,
  );
  organisationId = rows[0].id;
});
afterAll(async () => {
  await test.drop();
});

async function nouveauCompte(): Promise<OperationContext> {
  const { rows } = await db.query<{ id: string }>('INSERT INTO comptes (organisation_id) VALUES ($1) RETURNING id', [
    organisationId,
  ]);
  return {
    caller: { organisationId, cleId: randomUUID(), compteId: rows[0].id, sandbox: false, portees: [] },
    requestId: 'r',
    signal: new AbortController().signal,
    services: { db, now: () => horloge, outbound: {} as never, cursors: {} as never },
  };
}

let ctx: OperationContext;
beforeEach(async () => {
  horloge = new Date('2025-03-01T10:00:00Z');
  ctx = await nouveauCompte();
});

/** Runs an operation as the pipeline would: input parsed by its schema, output checked against its schema. */
async function appeler<I, O>(
  op: {
    input: { parse(v: unknown): I };
    output: { parse(v: unknown): O };
    handler(i: I, c: OperationContext): Promise<O>;
  },
  brut: unknown,
  c: OperationContext = ctx,
): Promise<O> {
  const sortie = await op.handler(op.input.parse(brut), c);
  return op.output.parse(sortie);
}

const ajouter = (faits: string[], c: OperationContext = ctx) => appeler(memoireAjouter, { faits }, c);
const patcher = (corps: unknown) => appeler(profilInvestisseurModifier, corps);

async function erreur(promesse: Promise<unknown>): Promise<ApiError> {
  const e = await promesse.then(
    () => null,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(ApiError);
  return e as ApiError;
}

describe('memoire_ajouter and memoire', () => {
  it('starts empty', async () => {
    expect(await appeler(memoire, {})).toEqual({
      faits: [],
      total: 0,
      plafond: MEMOIRE_PLAFOND,
      tmi_pct: null,
      apport_eur: null,
    });
  });

  it('retains ordinary facts, refuses others with their reason, and lists newest first', async () => {
    const r = await ajouter([
      'Je cherche un T2 à Bordeaux',
      "J'ai un diabète de type 2",
      'Appelez-moi au 06 12 34 56 78',
      'M. Dupont, le vendeur, accepte de baisser',
      'Je préfère l’ancien',
    ]);
    expect(r.retenus).toEqual(['Je cherche un T2 à Bordeaux', 'Je préfère l’ancien']);
    expect(r.refus.map((x) => x.fait)).toEqual([
      "J'ai un diabète de type 2",
      'Appelez-moi au 06 12 34 56 78',
      'M. Dupont, le vendeur, accepte de baisser',
    ]);
    expect(r.refus[0].motif).toMatch(/santé/);
    expect(r.refus[1].motif).toMatch(/téléphone/);
    expect(r.refus[2].motif).toMatch(/tiers/);
    expect(r.faits.map((f) => f.fait)).toEqual(['Je préfère l’ancien', 'Je cherche un T2 à Bordeaux']);
    expect(r.faits[0].date).toBe('2025-03-01T10:00:00.000Z');
    expect(r.total).toBe(2);

    const lu = await appeler(memoire, {});
    expect(lu.faits).toEqual(r.faits);
  });

  it('keeps one copy of a fact said twice, whatever its case, accents or final punctuation', async () => {
    await ajouter(['Je préfère l’ancien.']);
    horloge = new Date('2025-03-02T10:00:00Z');
    const r = await ajouter(["je prefere l'ancien", 'Budget 200 000 €', 'budget 200000€ !']);
    expect(r.retenus).toEqual(['Budget 200 000 €']);
    expect(r.deja_connu).toEqual(["je prefere l'ancien", 'budget 200000€ !']);
    expect(r.total).toBe(2);
    // Said again, the fact moves up (in the order of the call) with the date it was last said, in its first wording.
    expect(r.faits).toEqual([
      { fait: 'Budget 200 000 €', date: '2025-03-02T10:00:00.000Z' },
      { fait: 'Je préfère l’ancien.', date: '2025-03-02T10:00:00.000Z' },
    ]);
  });

  it('drops the oldest facts beyond the ceiling and says which', async () => {
    for (let i = 0; i < MEMOIRE_PLAFOND; i += 5) {
      await ajouter([0, 1, 2, 3, 4].map((k) => `Critère numéro ${i + k}`));
    }
    // Repeating fact 0 protects it: fact 1 and 2 are now the oldest.
    const r = await ajouter(['critère numéro 0', 'Je cherche à Lille', 'Je cherche à Lyon']);
    expect(r.oublies).toEqual(['Critère numéro 1', 'Critère numéro 2']);
    expect(r.total).toBe(MEMOIRE_PLAFOND);
    expect(r.faits).toHaveLength(MEMOIRE_PLAFOND);
    expect(r.faits.slice(0, 3).map((f) => f.fait)).toEqual([
      'Je cherche à Lyon',
      'Je cherche à Lille',
      'Critère numéro 0',
    ]);
    expect(r.faits.at(-1)?.fait).toBe('Critère numéro 3');
  });

  it('fills the investor profile with a recognised TMI and down payment, creating the profile', async () => {
    expect((await appeler(profilInvestisseur, {})).existe).toBe(false);
    const r = await ajouter(['TMI 30 %', '50k€ d’apport', 'Je cherche un T3']);
    expect(r).toMatchObject({ tmi_pct: 30, apport_eur: 50_000 });
    expect(r.retenus).toHaveLength(3);
    const profil = await appeler(profilInvestisseur, {});
    expect(profil).toMatchObject({ existe: true, tmi_pct: 30, apport_eur: 50_000, strategie: null, villes: [] });

    // Later statements win; other fields of the profile stay.
    await patcher({ strategie: 'patrimoine' });
    const r2 = await ajouter(['Je suis dans la tranche à 41%']);
    expect(r2).toMatchObject({ tmi_pct: 41, apport_eur: 50_000 });
    expect(await appeler(profilInvestisseur, {})).toMatchObject({ strategie: 'patrimoine', tmi_pct: 41 });
    expect(await appeler(memoire, {})).toMatchObject({ tmi_pct: 41, apport_eur: 50_000 });
  });

  it('takes no figure from a refused fact', async () => {
    const r = await ajouter(['Paul Martin, mon associé, a un apport de 30 000 €']);
    expect(r.refus).toHaveLength(1);
    expect(r.apport_eur).toBeNull();
    expect((await appeler(profilInvestisseur, {})).existe).toBe(false);
  });

  it('keeps one fact when the same fact is added concurrently', async () => {
    const resultats = await Promise.all(Array.from({ length: 6 }, () => ajouter(['Je vise la Rochelle'])));
    expect(resultats.flatMap((r) => r.retenus)).toEqual(['Je vise la Rochelle']);
    expect(resultats.flatMap((r) => r.deja_connu)).toHaveLength(5);
    expect((await appeler(memoire, {})).total).toBe(1);
  });

  it('keeps each account to its own memory', async () => {
    await ajouter(['Je cherche à Brest']);
    const autre = await nouveauCompte();
    expect((await appeler(memoire, {}, autre)).total).toBe(0);
  });

  it('refuses an empty list, more than 5 facts, and a too long fact', () => {
    expect(memoireAjouter.input.safeParse({ faits: [] }).success).toBe(false);
    expect(memoireAjouter.input.safeParse({ faits: Array(6).fill('Je cherche à Brest') }).success).toBe(false);
    expect(memoireAjouter.input.safeParse({ faits: ['x'.repeat(501)] }).success).toBe(false);
    expect(memoireAjouter.input.safeParse({ faits: ['ok'], autre: 1 }).success).toBe(false);
  });
});

describe('profil_investisseur and profil_investisseur_modifier', () => {
  it('reads as empty while no profile exists', async () => {
    const p = await appeler(profilInvestisseur, {});
    expect(p).toMatchObject({
      existe: false,
      strategie: null,
      regions: [],
      types: [],
      partout: null,
      objectifs: { nb_biens: null, horizon_ans: null, revenu_mensuel: null },
      profil_pro: null,
      cree_le: null,
      maj_le: null,
    });
    expect(Object.values(p.notifications).every((v) => v === null)).toBe(true);
  });

  it('creates the profile and then changes only the fields supplied', async () => {
    const cree = await patcher({
      strategie: 'cashflow',
      budget_total: 300_000,
      villes: ['Bordeaux', 'Pessac', 'bordeaux'],
      departements: ['33', '2a'],
      types: ['appartement'],
      objectifs: { nb_biens: 3, horizon_ans: 10 },
      notifications: { baisses: true },
      profil_pro: { metier: 'Infirmier', secteurs: ['santé'] },
    });
    expect(cree).toMatchObject({
      existe: true,
      strategie: 'cashflow',
      villes: ['Bordeaux', 'Pessac'],
      departements: ['33', '2A'],
      objectifs: { nb_biens: 3, horizon_ans: 10, revenu_mensuel: null },
      profil_pro: { metier: 'Infirmier', reseau: null, secteurs: ['santé'] },
      cree_le: '2025-03-01T10:00:00.000Z',
    });
    expect(cree.notifications.baisses).toBe(true);

    horloge = new Date('2025-04-01T10:00:00Z');
    const modifie = await patcher({
      budget_total: null,
      objectifs: { revenu_mensuel: 2000 },
      villes: [],
      dpe_max: 'D',
    });
    expect(modifie).toMatchObject({
      strategie: 'cashflow',
      budget_total: null,
      villes: [],
      departements: ['33', '2A'],
      types: ['appartement'],
      dpe_max: 'D',
      objectifs: { nb_biens: 3, horizon_ans: 10, revenu_mensuel: 2000 },
      profil_pro: { metier: 'Infirmier' },
      cree_le: '2025-03-01T10:00:00.000Z',
      maj_le: '2025-04-01T10:00:00.000Z',
    });
    expect(modifie.notifications.baisses).toBe(true);
    expect(await appeler(profilInvestisseur, {})).toEqual(modifie);

    expect((await patcher({ profil_pro: null })).profil_pro).toBeNull();
  });

  it('leaves maj_le alone when nothing changes', async () => {
    await patcher({ strategie: 'mixte' });
    horloge = new Date('2025-05-01T10:00:00Z');
    expect((await patcher({ strategie: 'mixte' })).maj_le).toBe('2025-03-01T10:00:00.000Z');
  });

  it('refuses a minimum surface above the maximum, also against the stored value', async () => {
    const e = await erreur(patcher({ surface_min: 80, surface_max: 40 }));
    expect(e.code).toBe('parametres_invalides');
    expect(e.erreurs?.[0].champ).toBe('surface_min');
    expect((await appeler(profilInvestisseur, {})).existe).toBe(false);

    await patcher({ surface_max: 60 });
    expect((await erreur(patcher({ surface_min: 70 }))).erreurs?.[0].champ).toBe('surface_min');
    expect((await erreur(patcher({ budget_total: 100_000, budget_par_bien: 150_000 }))).erreurs?.[0].champ).toBe(
      'budget_par_bien',
    );
    expect((await patcher({ surface_min: 60 })).surface_min).toBe(60);
  });

  it('validates the bounds of the body and refuses unknown fields', () => {
    const ok = (corps: unknown) => profilInvestisseurModifier.input.safeParse(corps).success;
    expect(ok({ tmi_pct: 30 })).toBe(true);
    expect(ok({ tmi_pct: null })).toBe(true);
    expect(ok({ tmi_pct: 25 })).toBe(false);
    expect(ok({ budget_total: 100_000_001 })).toBe(false);
    expect(ok({ budget_total: 1.5 })).toBe(false);
    expect(ok({ apport_pct: null })).toBe(false);
    expect(ok({ rendement_min: 5.5 })).toBe(true);
    expect(ok({ rendement_min: 100 })).toBe(false);
    expect(ok({ types: ['appartement', 'maison', 'maison'] })).toBe(false);
    expect(ok({ departements: ['20'] })).toBe(false);
    expect(ok({ villes: Array(51).fill('Lyon') })).toBe(false);
    expect(ok({ objectifs: { nb_biens: 1001 } })).toBe(false);
    expect(ok({ objectifs: { inconnu: 1 } })).toBe(false);
    expect(ok({ profil_pro: { metier: 'x'.repeat(81) } })).toBe(false);
    expect(ok({ strategie: 'speculation' })).toBe(false);
    expect(ok({ budjet_total: 1 })).toBe(false);
  });
});

describe('valider_adresse', () => {
  const annonce = 'portal_a:123456';

  it('stores one address per listing, the latest replacing the previous', async () => {
    const premiere = await appeler(validerAdresse, {
      id: annonce,
      libelle: '12 rue des Lilas, 33000 Bordeaux',
      lat: 44.84,
      lon: -0.58,
      precision: 'numero',
      confiance: 'Façade reconnue sur les photos',
    });
    expect(premiere).toMatchObject({ enregistre: true, id: annonce, libelle: '12 rue des Lilas, 33000 Bordeaux' });
    expect(premiere.note).toMatch(/première/);

    horloge = new Date('2025-03-05T10:00:00Z');
    const autre = await nouveauCompte();
    const seconde = await appeler(validerAdresse, { id: annonce, libelle: '14 rue des Lilas, 33000 Bordeaux' }, autre);
    expect(seconde.note).toMatch(/remplace celle validée le 2025-03-01/);

    const { rows } = await db.query('SELECT * FROM adresses_validees WHERE annonce_id = $1', [annonce]);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      libelle: '14 rue des Lilas, 33000 Bordeaux',
      lat: null,
      lon: null,
      precision: null,
      confiance: null,
      compte_id: autre.caller.compteId,
      organisation_id: organisationId,
    });
    expect(rows[0].valide_le.toISOString()).toBe('2025-03-05T10:00:00.000Z');
  });

  it('never tells another organisation when the address it replaces was validated', async () => {
    const id = 'portal_c:777';
    await appeler(validerAdresse, { id, libelle: '5 rue des Lilas, 33000 Bordeaux' });
    horloge = new Date('2025-03-09T10:00:00Z');
    const { rows } = await db.query<{ id: string }>(
      `INSERT INTO organisations (nom, acces, portees, quota_minute) VALUES ('Autre', 'usage', '{compte}', 100) RETURNING id`,
    );
    const compte = await db.query<{ id: string }>('INSERT INTO comptes (organisation_id) VALUES ($1) RETURNING id', [
      rows[0].id,
    ]);
    const autre: OperationContext = {
      ...ctx,
      caller: { ...ctx.caller, organisationId: rows[0].id, compteId: compte.rows[0].id, cleId: randomUUID() },
    };
    const note = (await appeler(validerAdresse, { id, libelle: '7 rue des Lilas, 33000 Bordeaux' }, autre)).note;
    expect(note).toBe('Adresse enregistrée ; elle remplace une validation antérieure.');
    expect(note).not.toMatch(/\d{4}-\d{2}-\d{2}/);
  });

  it('refuses a latitude without longitude and personal data in the shared cache', async () => {
    const base = { id: 'portal_b:abc', libelle: '3 place du Docteur Roux, 75015 Paris' };
    expect((await erreur(appeler(validerAdresse, { ...base, lat: 48.8 }))).erreurs?.[0].champ).toBe('lon');
    const tel = await erreur(appeler(validerAdresse, { ...base, confiance: 'Confirmé au 06 12 34 56 78' }));
    expect(tel.erreurs?.[0].champ).toBe('confiance');
    const nom = await erreur(appeler(validerAdresse, { ...base, confiance: 'Confirmé par Mme Martin, la vendeuse' }));
    expect(nom.erreurs?.[0].message).toMatch(/tiers/);
    const mail = await erreur(appeler(validerAdresse, { ...base, libelle: 'chez vendeur@example.fr' }));
    expect(mail.erreurs?.[0].champ).toBe('libelle');
    expect((await appeler(validerAdresse, base)).enregistre).toBe(true);
  });

  it('checks the bounds of the path and body', () => {
    const ok = (v: unknown) => validerAdresse.input.safeParse(v).success;
    expect(ok({ id: 'ab', libelle: '12 rue X, Paris' })).toBe(false);
    expect(ok({ id: 'abc', libelle: 'abcd' })).toBe(false);
    expect(ok({ id: 'abc', libelle: '12 rue X', lat: 91, lon: 0 })).toBe(false);
    expect(ok({ id: 'abc', libelle: '12 rue X', precision: 'quartier' })).toBe(false);
    expect(ok({ id: 'abc', libelle: '12 rue X', confiance: 'x'.repeat(121) })).toBe(false);
  });
});
