import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Operation } from '../../../domain/catalogue.ts';
import { masquerCoordonnees } from '../../../domain/compte/memoire-regles.ts';
import { marcheOperations } from '../../../domain/marche/operations.ts';
import { createTestApp, type TestApp } from '../../support/app.ts';

let t: TestApp;
let org: { id: string; cle: string };

/** A key attached to a new personal account of the organisation: reviews are published by accounts. */
async function clePersonnelle(): Promise<string> {
  const res = await t.admin('POST', `/organisations/${org.id}/cles`, { mode: 'live', personnelle: true });
  expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
  return res.body.cle as string;
}

beforeAll(async () => {
  t = await createTestApp({ operations: marcheOperations as Operation[] });
  org = await t.organisation({ acces: 'usage' });
});
afterAll(async () => {
  await t?.close();
});

const avis = (insee: string, corps: Record<string, unknown>, cle: string) =>
  t.call('POST', `/communes/${insee}/avis`, cle, corps);

describe('masquerCoordonnees', () => {
  it('masks e-mails, telephones and civility-prefixed names, keeps the rest as written', () => {
    expect(
      masquerCoordonnees(
        'Écrire à Jean.Martin@Exemple.fr ou au 06 12 34 56 78, demander Mme Dupré, rue du Docteur Roux.',
      ),
    ).toBe('Écrire à [courriel masqué] ou au [téléphone masqué], demander [nom masqué], rue du Docteur Roux.');
  });
});

describe('avis_zone_publier and avis_zone', () => {
  it('publishes one review per account and commune, and serves it masked, without its author', async () => {
    const cle = await clePersonnelle();
    const premier = await avis(
      '33234',
      {
        note: 4,
        note_rentabilite: 5,
        titre: 'Village calme',
        contenu: 'Bonne demande locative ; contactez-moi : paul@exemple.fr, M. Durand connaît le marché.',
        profil: 'investisseur',
      },
      cle,
    );
    expect(premier.statusCode, premier.body).toBe(200);
    expect(premier.json()).toMatchObject({ insee: '33234', commune: 'Latresne' });

    const second = await avis('33234', { note: 1, titre: 'Encore', contenu: 'Un second avis du même compte.' }, cle);
    expect(second.statusCode).toBe(409);
    expect(second.json().code).toBe('conflit');

    // Another account of the same organisation may review the same commune.
    const autre = await avis(
      '33234',
      { note: 2, note_rentabilite: 3, titre: 'Cher', contenu: 'Les prix ont beaucoup monté ici.' },
      await clePersonnelle(),
    );
    expect(autre.statusCode).toBe(200);

    const lu = await t.call('GET', '/communes/33234/avis?tri=recents', org.cle);
    expect(lu.statusCode, lu.body).toBe(200);
    const body = lu.json();
    expect(body.moyennes).toMatchObject({ globale: 3, rentabilite: 4, qualite_de_vie: null, n: 2 });
    expect(body.avis.map((a: { titre: string }) => a.titre)).toEqual(['Cher', 'Village calme']);
    const ecrit = body.avis[1];
    expect(ecrit.contenu).toBe(
      'Bonne demande locative ; contactez-moi : [courriel masqué], [nom masqué] connaît le marché.',
    );
    expect(ecrit).toMatchObject({ profil_auteur: 'investisseur', verifie: false, votes_utiles: 0 });
    expect(JSON.stringify(body)).not.toMatch(/compte|paul@|Durand/);
    // Stored as written.
    const { rows } = await t.db.query(`SELECT contenu FROM avis_communes WHERE titre = 'Village calme'`);
    expect(rows[0].contenu).toContain('paul@exemple.fr');
  });

  it('pages by cursor in the order asked', async () => {
    const page1 = (await t.call('GET', '/communes/33234/avis?tri=recents&limite=1', org.cle)).json();
    expect(page1.avis).toHaveLength(1);
    expect(page1.curseur_suivant).not.toBeNull();
    const page2 = (
      await t.call(
        'GET',
        `/communes/33234/avis?tri=recents&limite=1&curseur=${encodeURIComponent(page1.curseur_suivant)}`,
        org.cle,
      )
    ).json();
    expect(page2.avis.map((a: { titre: string }) => a.titre)).toEqual(['Village calme']);
    expect(page2.curseur_suivant).toBeNull();
  });

  it('refuses an organisation key (no personal account) and an unknown commune', async () => {
    const sansCompte = await avis('33234', { note: 3, titre: 'Titre', contenu: 'Un contenu assez long.' }, org.cle);
    expect(sansCompte.statusCode).toBe(403);
    const inconnue = await t.call('GET', '/communes/99999/avis', org.cle);
    expect(inconnue.statusCode).toBe(404);
  });
});
