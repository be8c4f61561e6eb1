import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { PoolClient } from 'pg';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importDpe } from '../../../domain/dpe/import.ts';
import { importDvf } from '../../../domain/dvf/import.ts';
import { importBodacc } from '../../../domain/entreprises/import-bodacc.ts';
import { journaliser } from '../../../domain/flux/journal-adresses.ts';
import { importPermis } from '../../../domain/urbanisme/import-permis.ts';
import { createTestApp, type TestApp } from '../../support/app.ts';
import { appartementLatresne, csvAdeme } from '../dpe/fixtures.ts';
import { etalab, HEADER } from '../dvf/fixtures.ts';
import { ADRESSES, insererAdresses, nomsDansLaBase } from '../entreprises/support.ts';

// The journal of address novelties written by the real importers, and GET /flux/adresses reading it with its cursor.

/** The BAN number DVF's hand-written lines point at (Abzac, street A001, number 1: test/unit/dvf/fixtures.ts). */
const ABZAC_1 = '33001_a001_00001';

const SITADEL = [
  'COMM;TYPE_DAU;NUM_DAU;ETAT_DAU;DATE_REELLE_AUTORISATION;CAT_DEM;SIREN_DEM;DENOM_DEM;CJ_DEM;ADR_NUM_TER;ADR_TYPEVOIE_TER;ADR_LIBVOIE_TER;ADR_CODPOST_TER;NB_LGT_TOT_CREES;SURF_HAB_CREEE',
  // A house built by an SCI at 12 rue de la Liberté.
  '33234;PC;0332342200012;6;2022-03-15;40;912345678;SCI DES TILLEULS;6540;12;RUE;DE LA LIBERTE;33360;1;112',
  // An extension by a private person at 14 rue de la Liberté: the name stands for a leak in the file.
  '33234;DP;0332342300045;2;2023-05-10;10;;DUPONT JEAN-MICHEL;;14;R;DE LA LIBERTE;33360;1;35',
  // A land address the BAN does not have: no novelty of an address.
  '33234;PC;0332342400099;2;2024-01-10;40;912345678;SCI DES TILLEULS;6540;99;RUE;INCONNUE;33360;2;150',
].join('\n');

const BODACC_COLONNES = ['id', 'publicationavis', 'parution', 'dateparution', 'numeroannonce', 'typeavis'];
const BODACC_COLONNES_SUITE = ['familleavis', 'familleavis_lib', 'cp', 'registre', 'commercant', 'listepersonnes'];

function avis(v: Record<string, unknown>): string {
  const csv = (x: unknown) => {
    if (x === undefined || x === null) return '';
    const texte = typeof x === 'string' ? x : JSON.stringify(x);
    return /[;"\n]/.test(texte) ? `"${texte.replace(/"/g, '""')}"` : texte;
  };
  const commun = { publicationavis: 'A', typeavis: 'annonce', cp: '33360', familleavis: 'creation' };
  return [...BODACC_COLONNES, ...BODACC_COLONNES_SUITE].map((c) => csv({ ...commun, ...v }[c])).join(';');
}

const SIEGE = { numeroVoie: '3', typeVoie: 'av', nomVoie: 'de la Libération', codePostal: '33360', ville: 'Latresne' };

const BODACC = [
  [...BODACC_COLONNES, ...BODACC_COLONNES_SUITE].join(';'),
  // A civil company registering at 3 avenue de la Libération: a novelty of that address.
  avis({
    id: 'A202400100001',
    parution: '20240010',
    dateparution: '2024-01-16',
    numeroannonce: 1,
    registre: '912345678',
    commercant: 'SCI DES TILLEULS',
    listepersonnes: {
      personne: {
        typePersonne: 'pm',
        denomination: 'SCI DES TILLEULS',
        formeJuridique: 'Société civile immobilière',
        administration: 'Gérant : MARTIN Paul',
        adresseSiegeSocial: SIEGE,
      },
    },
  }),
  // A commercial company at the same seat: not a civil company.
  avis({
    id: 'A202400100002',
    parution: '20240010',
    dateparution: '2024-01-16',
    numeroannonce: 2,
    registre: '923456789',
    commercant: 'BOULANGERIE DU PORT',
    listepersonnes: {
      personne: {
        typePersonne: 'pm',
        denomination: 'BOULANGERIE DU PORT',
        formeJuridique: 'Société à responsabilité limitée',
        adresseSiegeSocial: SIEGE,
      },
    },
  }),
  // A natural person: never named, never a novelty.
  avis({
    id: 'A202400100003',
    parution: '20240010',
    dateparution: '2024-01-16',
    numeroannonce: 3,
    commercant: 'LEROY Claire',
    listepersonnes: { personne: { typePersonne: 'pp', nom: 'LEROY', prenom: 'Claire' } },
  }),
].join('\n');

const DPE = csvAdeme([
  appartementLatresne({
    'N°DPE': '2433E0000001A',
    Date_établissement_DPE: '2024-03-01',
    Etiquette_DPE: 'F',
    Etiquette_GES: 'E',
    Identifiant__BAN: ADRESSES.liberte12,
  }),
  // Not geocoded by the observatory: no address, no novelty.
  appartementLatresne({
    'N°DPE': '2433E0000002B',
    Date_établissement_DPE: '2024-03-02',
    Etiquette_DPE: 'D',
    Identifiant__BAN: '',
  }),
]);

const AUDITS = [
  'n_audit,id_etape,categorie_scenario,etape_travaux,date_etablissement_audit,date_fin_validite_audit,n_audit_remplace,numero_dpe,classe_bilan_dpe,cout_travaux,couts_cumules_travaux',
  'A2433000001X,1,état initial,état initial,2024-03-20,2029-03-20,,2433E0000001A,F,,',
  'A2433000001X,2,scénario principal en une étape,étape finale,2024-03-20,2029-03-20,,2433E0000001A,C,30000,30000',
].join('\n');

const DVF = [
  HEADER,
  etalab({ id: '2024-1', date: '2024-02-01', valeur: '250000', type: 'Maison', surface: '100' }),
  etalab({ id: '2024-2', date: '2024-02-20', valeur: '180000', type: 'Appartement', surface: '60' }),
].join('\n');

let t: TestApp;
let cle: string;
let dir: string;
const fichiers: Record<string, string> = {};

async function ecrire(nom: string, contenu: string): Promise<string> {
  const fichier = path.join(dir, nom);
  await writeFile(fichier, contenu);
  return fichier;
}

/** Every file imported once, in the order of the brief: DPE, audits, DVF, permits, BODACC. */
async function importerTout(): Promise<void> {
  await importDpe(t.db, fichiers.dpe!, { aujourdhui: '2026-01-01' });
  await importDpe(t.db, fichiers.audits!);
  await importDvf(t.db, fichiers.dvf!);
  await importPermis(t.db, fichiers.permis!);
  await importBodacc(t.db, fichiers.bodacc!);
}

async function lire(query: string, key = cle) {
  const res = await t.call('GET', `/flux/adresses${query ? `?${query}` : ''}`, key);
  expect(res.statusCode, res.body).toBe(200);
  return res;
}

// Answers are kept a minute (cacheS 60) once a request is repeated: every full read asks a page size of its own, so
// that none of them is served from memory while the journal grows between them.
let lectures = 0;

/** Every event after the cursor (from the start without one), page after page, and the last cursor. */
async function toutLire(curseur?: string, filtres = ''): Promise<{ evenements: any[]; curseur: string }> {
  const evenements: any[] = [];
  for (;;) {
    const params = new URLSearchParams(filtres);
    params.set('limite', String(1000 - lectures++));
    if (curseur) params.set('curseur', curseur);
    const body = (await lire(params.toString())).json();
    evenements.push(...body.evenements);
    curseur = body.curseur_suivant;
    if (body.a_jour) return { evenements, curseur: curseur! };
  }
}

async function nombreAuJournal(): Promise<number> {
  return (await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM journal_adresses`)).rows[0]!.n;
}

beforeAll(async () => {
  t = await createTestApp();
  dir = await mkdtemp(path.join(tmpdir(), 'flux-adresses-'));
  await insererAdresses(t.db);
  await t.db.query(
    `INSERT INTO adresses (dataset, cle_ban, type, numero, suffixe, voie, code_voie, code_postal, insee, commune, libelle,
                           lat, lon, parcelles, source)
     VALUES ('live', $1, 'numero', 1, NULL, 'Rue de Test', 'A001', '33230', '33001', 'Abzac',
             '1 Rue de Test 33230 Abzac', 45.01, -0.13, '{33001000AB0001}', 'ban')`,
    [ABZAC_1],
  );
  fichiers.dpe = await ecrire('dpe.csv', DPE);
  fichiers.audits = await ecrire('audits.csv', AUDITS);
  fichiers.dvf = await ecrire('dvf.csv', DVF);
  fichiers.permis = await ecrire('permis.csv', SITADEL);
  fichiers.bodacc = await ecrire('bodacc.csv', BODACC);
  cle = (await t.organisation()).cle;
  await importerTout();
}, 120_000);

afterAll(async () => {
  await t?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('the journal written by the importers', () => {
  it('holds one novelty per new row tied to a BAN key, in the order of the imports', async () => {
    const { evenements } = await toutLire();
    expect(evenements.map((e) => [e.genre, e.cle_ban])).toEqual([
      ['dpe', ADRESSES.liberte12],
      ['audit', ADRESSES.liberte12],
      ['vente', ABZAC_1],
      ['vente', ABZAC_1],
      ['permis', ADRESSES.liberte12],
      ['permis', ADRESSES.liberte14],
      ['societe_civile', ADRESSES.liberation3],
    ]);
    const ids = evenements.map((e) => BigInt(e.id));
    expect(ids).toEqual([...ids].sort((a, b) => (a < b ? -1 : 1)));
  });

  it('serves each genre with its date at the source, its detail and its public source', async () => {
    const { evenements } = await toutLire();
    const par = (genre: string) => evenements.filter((e) => e.genre === genre);
    expect(par('dpe')[0]).toMatchObject({
      insee: '33234',
      code_postal: '33360',
      date_source: '2024-03-01',
      detail: { numero_dpe: '2433E0000001A', etiquette: 'F', ges: 'E', type_batiment: 'appartement', surface_m2: 45 },
      source: 'Observatoire DPE (ADEME)',
    });
    expect(par('audit')[0]).toMatchObject({
      date_source: '2024-03-20',
      detail: { numero_audit: 'A2433000001X', numero_dpe: '2433E0000001A', classe_initiale: 'F', classe_visee: 'C' },
      source: 'Audits énergétiques (ADEME)',
    });
    expect(par('vente').map((e) => [e.date_source, e.detail.id_mutation, e.detail.prix, e.detail.types])).toEqual([
      ['2024-02-01', '2024-1', 250000, ['maison']],
      ['2024-02-20', '2024-2', 180000, ['appartement']],
    ]);
    expect(par('vente')[0]).toMatchObject({ insee: '33001', code_postal: '33230', source: 'DVF (DGFiP, Etalab)' });
    expect(par('permis').map((e) => [e.date_source, e.detail.type, e.detail.numero, e.detail.demandeur])).toEqual([
      ['2022-03-15', 'PC', '0332342200012', { denomination: 'SCI DES TILLEULS', siren: '912345678' }],
      ['2023-05-10', 'DP', '0332342300045', null],
    ]);
    expect(par('societe_civile')[0]).toMatchObject({
      date_source: '2024-01-16',
      detail: { avis: 'A202400100001', denomination: 'SCI DES TILLEULS', siren: '912345678', famille: 'creation' },
      source: 'BODACC (DILA)',
    });
    for (const e of evenements) expect(Date.parse(e.entree_le), e.id).not.toBeNaN();
  });

  it('names no private person', async () => {
    expect(await nomsDansLaBase(t.db, ['DUPONT', 'LEROY', 'MARTIN'])).not.toContainEqual(
      expect.stringMatching(/^journal_adresses/),
    );
  });

  it('writes nothing again when the same files are imported again', async () => {
    const avant = await nombreAuJournal();
    const { curseur } = await toutLire();
    await importerTout();
    expect(await nombreAuJournal()).toBe(avant);
    expect((await toutLire(curseur)).evenements).toEqual([]);
  });
});

describe('GET /flux/adresses', () => {
  it('pages with a signed cursor, given even on the last page, that later reads only what came since', async () => {
    const premiere = (await lire('limite=3')).json();
    expect(premiere.evenements).toHaveLength(3);
    expect(premiere.a_jour).toBe(false);
    const suite = (await lire(`limite=100&curseur=${encodeURIComponent(premiere.curseur_suivant)}`)).json();
    expect(suite.evenements).toHaveLength(4);
    expect(BigInt(suite.evenements[0].id)).toBeGreaterThan(BigInt(premiere.evenements[2].id));
    expect(suite.a_jour).toBe(true);
    expect(suite.curseur_suivant).toEqual(expect.any(String));

    const rien = (await lire(`curseur=${encodeURIComponent(suite.curseur_suivant)}`)).json();
    expect(rien.evenements).toEqual([]);
    expect(rien.a_jour).toBe(true);
    expect(rien.limites[0]).toMatch(/Rien de nouveau depuis ce curseur/);

    // A new DPE at 14 rue de la Liberté: the cursor resent reads it, and it alone.
    const nouveau = await ecrire(
      'dpe-2.csv',
      csvAdeme([
        appartementLatresne({
          'N°DPE': '2433E0000003C',
          Date_établissement_DPE: '2024-04-01',
          Etiquette_DPE: 'C',
          Identifiant__BAN: ADRESSES.liberte14,
        }),
      ]),
    );
    await importDpe(t.db, nouveau, { aujourdhui: '2026-01-01' });
    const depuis = (await lire(`curseur=${encodeURIComponent(rien.curseur_suivant)}`)).json();
    expect(depuis.evenements.map((e: any) => [e.genre, e.detail.numero_dpe])).toEqual([['dpe', '2433E0000003C']]);
    expect(depuis.a_jour).toBe(true);
  });

  it('combines its filters with AND, and says why a read serves nothing', async () => {
    const dpeLatresne = await toutLire(undefined, 'genres=dpe&genres=audit&insee=33234');
    expect(new Set(dpeLatresne.evenements.map((e) => e.genre))).toEqual(new Set(['dpe', 'audit']));
    expect(dpeLatresne.evenements.every((e) => e.insee === '33234')).toBe(true);

    const parCp = await toutLire(undefined, 'cp=33230');
    expect(parCp.evenements.map((e) => e.genre)).toEqual(['vente', 'vente']);
    // Comma-separated values are the repeated parameter's.
    const virgules = await toutLire(undefined, 'genres=vente,permis&cp=33230,33360');
    expect(new Set(virgules.evenements.map((e) => e.genre))).toEqual(new Set(['vente', 'permis']));

    const aucune = (await lire('genres=vente&insee=33234')).json();
    expect(aucune.evenements).toEqual([]);
    expect(aucune.limites[0]).toMatch(/Aucune nouveauté au journal pour ces filtres \(genres vente ; communes 33234\)/);
    expect(aucune.qualite.n).toBe(0);

    const alsace = (await lire('insee=67482')).json();
    expect(alsace.limites.join(' ')).toMatch(/Alsace-Moselle/);

    const futur = (await lire('depuis=2099-01-01')).json();
    expect(futur.evenements).toEqual([]);
    const passe = await toutLire(undefined, 'depuis=2000-01-01T00:00:00Z');
    expect(passe.evenements.length).toBe(await nombreAuJournal());
  });

  it('refuses a cursor altered, or resent with other filters', async () => {
    const { curseur_suivant } = (await lire('genres=dpe&limite=1')).json();
    const autres = await t.call(
      'GET',
      `/flux/adresses?genres=vente&curseur=${encodeURIComponent(curseur_suivant)}`,
      cle,
    );
    expect(autres.statusCode).toBe(400);
    expect(autres.json().erreurs[0].champ).toBe('curseur');
    const altere = await t.call('GET', `/flux/adresses?curseur=${encodeURIComponent(`x${curseur_suivant}`)}`, cle);
    expect(altere.statusCode).toBe(400);
    // Resent alone, it keeps its filters.
    const seul = (await lire(`curseur=${encodeURIComponent(curseur_suivant)}`)).json();
    expect(seul.evenements.every((e: any) => e.genre === 'dpe')).toBe(true);
  });

  it('debits 1 credit per event delivered, nothing for an empty page', async () => {
    const { cle: neuve } = await t.organisation();
    const page = await lire('limite=4', neuve);
    expect(page.json().evenements).toHaveLength(4);
    expect(page.json().credits.debites).toBe(4);
    expect(page.headers['svc-credits-debites']).toBe('4');
    const vide = await lire('genres=vente&insee=33234', neuve);
    expect(vide.json().credits.debites).toBe(0);
  });

  it('is for the Data subscription', async () => {
    const { cle: usage } = await t.organisation({ acces: 'usage' });
    const res = await t.call('GET', '/flux/adresses', usage);
    expect(res.statusCode).toBe(403);
    expect(res.json().code).toBe('palier_insuffisant');
  });
});

describe('concurrent writers', () => {
  /** A DPE row at 12 rue de la Liberté, written by `client` in its transaction. */
  async function dpe(client: PoolClient, numero: string) {
    await client.query(
      `INSERT INTO dpe (dataset, numero_dpe, format, cle_ban, rattachement_incertain, insee, code_postal, etabli_le,
                        fin_validite, fin_validite_calculee, etiquette)
       VALUES ('live', $1, 'csv_ademe', $2, false, '33234', '33360', '2024-05-01', '2034-05-01', true, 'B')`,
      [numero, ADRESSES.liberte12],
    );
  }

  it('never lets a reader move past an id that a writer still in flight could commit', async () => {
    const { curseur: debut } = await toutLire();
    const a = await t.db.connect();
    const b = await t.db.connect();
    try {
      const pidB = (await b.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      await a.query('BEGIN');
      await b.query('BEGIN');
      await dpe(a, '2433E0000010A');
      await dpe(b, '2433E0000011B');
      // A appends first and keeps its transaction open; B's append must wait for A's end before it draws its id
      // (had it drawn a bigger one and committed first, a reader would move past A's for good).
      await journaliser(a, 'dpe', 'live', ['2433E0000010A']);
      let bAjoute = false;
      const ajoutB = journaliser(b, 'dpe', 'live', ['2433E0000011B']).then(() => (bAjoute = true));
      for (;;) {
        const { rows } = await t.db.query(
          `SELECT 1 FROM pg_locks WHERE pid = $1 AND locktype = 'advisory' AND NOT granted`,
          [pidB],
        );
        if (rows.length > 0 || bAjoute) break;
      }
      expect(bAjoute, 'B appended while A was in flight').toBe(false);
      // Nothing committed yet: nothing to read.
      const avant = await toutLire(debut);
      expect(avant.evenements).toEqual([]);

      await a.query('COMMIT');
      await ajoutB;
      // A is there; B has drawn its id but not committed: the reader moves past A only, and B is still ahead.
      const apresA = await toutLire(avant.curseur);
      expect(apresA.evenements.map((e) => e.detail.numero_dpe)).toEqual(['2433E0000010A']);

      await b.query('COMMIT');
      const apresB = await toutLire(apresA.curseur);
      expect(apresB.evenements.map((e) => e.detail.numero_dpe)).toEqual(['2433E0000011B']);
    } finally {
      await a.query('ROLLBACK').catch(() => {});
      await b.query('ROLLBACK').catch(() => {});
      a.release();
      b.release();
    }
  });

  it('delivers every event exactly once to a reader following imports that run at once', async () => {
    const { curseur: debut } = await toutLire();
    const { rows: avant } = await t.db.query<{ id: number }>('SELECT max(id) AS id FROM journal_adresses');
    // Four Sitadel files of 30 authorisations each, at 12 and 14 rue de la Liberté, imported together.
    const imports = Array.from({ length: 4 }, async (_, i) => {
      const lignes = Array.from(
        { length: 30 },
        (_, j) =>
          `33234;PC;03323425${i}${String(j).padStart(4, '0')};2;2025-01-${String(j + 1).padStart(2, '0')};40;912345678;SCI DES TILLEULS;6540;${j % 2 ? 12 : 14};RUE;DE LA LIBERTE;33360;1;90`,
      );
      const fichier = await ecrire(`permis-${i}.csv`, [SITADEL.split('\n')[0], ...lignes].join('\n'));
      await importPermis(t.db, fichier);
    });
    const lus: any[] = [];
    let curseur = debut;
    let fini = false;
    const termine = Promise.all(imports).then(() => (fini = true));
    while (!fini) {
      const page = await toutLire(curseur);
      lus.push(...page.evenements);
      curseur = page.curseur;
    }
    await termine;
    lus.push(...(await toutLire(curseur)).evenements);
    const { rows } = await t.db.query<{ id: number }>('SELECT id FROM journal_adresses WHERE id > $1 ORDER BY id', [
      avant[0]!.id,
    ]);
    expect(rows).toHaveLength(120);
    expect(lus.map((e) => e.id)).toEqual(rows.map((r) => String(r.id)));
  });
});
