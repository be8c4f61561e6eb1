import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../support/app.ts';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t?.close());

describe('account operations over HTTP', () => {
  it('need a personal key, keep memory per account, and feed the profile', async () => {
    const org = await t.organisation({ acces: 'usage' });
    expect((await t.call('GET', '/compte/memoire', org.cle)).json().code).toBe('portee_insuffisante');

    const perso = (await t.admin('POST', `/organisations/${org.id}/cles`, { mode: 'live', personnelle: true })).body;
    const added = await t.call('POST', '/compte/memoire', perso.cle, {
      faits: ['Je cherche un T2 à Bordeaux', 'Ma TMI est de 30 %', 'Mon numéro : 06 12 34 56 78'],
    });
    expect(added.statusCode, added.body).toBe(200);
    const body = added.json();
    expect(body.retenus).toEqual(['Je cherche un T2 à Bordeaux', 'Ma TMI est de 30 %']);
    expect(body.refus).toEqual([expect.objectContaining({ fait: 'Mon numéro : 06 12 34 56 78' })]);
    expect(body.tmi_pct).toBe(30);
    expect(body.credits).toEqual({ debites: 0, restants: 500 });

    const profil = await t.call('GET', '/compte/profil', perso.cle);
    expect(profil.json()).toMatchObject({ existe: true, tmi_pct: 30 });

    // Another personal account of the same organisation sees its own memory only.
    const other = (await t.admin('POST', `/organisations/${org.id}/cles`, { mode: 'live', personnelle: true })).body;
    expect((await t.call('GET', '/compte/memoire', other.cle)).json().total).toBe(0);
    // A rotated key attached to the same account keeps it.
    const rotated = (
      await t.admin('POST', `/organisations/${org.id}/cles`, { mode: 'live', compte_id: perso.compte_id })
    ).body;
    expect((await t.call('GET', '/compte/memoire', rotated.cle)).json().total).toBe(2);
  });

  it('refuses health, addiction, disability and political facts with the reason, and keeps places and features', async () => {
    const org = await t.organisation({ acces: 'usage' }, { personnelle: true });
    const sensibles = [
      'Je suis séropositif',
      'Je suis alcoolique',
      'Je suis bipolaire',
      "J'ai eu un AVC",
      'Je suis en fauteuil roulant',
      'Je suis schizophrène',
      'Je suis toxicomane',
      'Je suis militant LFI',
    ];
    const retenus = [
      'Je cherche un logement accessible PMR pour ma mère',
      "Je veux un appartement proche de l'église du village",
      'Je cherche rue de la Synagogue',
      'Je travaille dans la santé',
    ];
    const refus: { fait: string; motif: string }[] = [];
    for (const faits of [sensibles.slice(0, 5), [...sensibles.slice(5), ...retenus.slice(0, 2)], retenus.slice(2)]) {
      const reponse = await t.call('POST', '/compte/memoire', org.cle, { faits });
      expect(reponse.statusCode, reponse.body).toBe(200);
      refus.push(...reponse.json().refus);
    }
    expect(refus.map((r) => r.fait)).toEqual(sensibles);
    expect(refus.slice(0, 7).map((r) => r.motif)).toEqual(
      Array(7).fill(expect.stringMatching(/^Donnée de santé.*art\. 9/)),
    );
    expect(refus[7].motif).toMatch(/^Opinion politique.*art\. 9/);

    const memoire = (await t.call('GET', '/compte/memoire', org.cle)).json();
    expect(memoire.faits.map((f: { fait: string }) => f.fait).sort()).toEqual([...retenus].sort());
  });

  it('modifies the profile field by field with PATCH and refuses bounds and unknown fields', async () => {
    const org = await t.organisation({ acces: 'usage' }, { personnelle: true });
    const first = await t.call('PATCH', '/compte/profil', org.cle, { strategie: 'cashflow', surface_min: 30 });
    expect(first.json()).toMatchObject({ existe: true, strategie: 'cashflow', surface_min: 30 });
    const second = await t.call('PATCH', '/compte/profil', org.cle, { budget_total: 250000 });
    expect(second.json()).toMatchObject({ strategie: 'cashflow', surface_min: 30, budget_total: 250000 });
    const bad = await t.call('PATCH', '/compte/profil', org.cle, { surface_max: 20, inconnu: true });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().code).toBe('parametres_invalides');
    const crossed = await t.call('PATCH', '/compte/profil', org.cle, { surface_max: 20 });
    expect(crossed.statusCode).toBe(400);
    expect(crossed.json().erreurs[0].champ).toMatch(/surface/);
  });
});
