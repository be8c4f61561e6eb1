import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importBodacc } from '../../../domain/entreprises/import-bodacc.ts';
import { ImportError } from '../../../domain/import/source.ts';
import { createTestDb } from '../../support/db.ts';

// The BODACC importer on the DILA bulletins in their source format: the real bulletin RCS-A_BXA20200072 of
// ../shared/data (its XML, and its .taz archive read as a stream), and bulletins of the other families written from
// the element names of the DILA schemas (no real sample of theirs was at hand: RCS-B modifications and removals, PCL
// proceedings, BILAN filings). Natural persons are never stored by name; companies' notices carry their SIREN.

const BODACC = path.resolve(import.meta.dirname, '../../../../shared/data/bodacc');
const XML = path.join(BODACC, 'RCS-A_BXA20200072.xml');
const TAZ = path.join(BODACC, 'RCS-A_BXA20200072.taz');
const hasShared = existsSync(XML) && existsSync(TAZ);
const SKIP = hasShared ? '' : ' (skipped: ../shared/data/bodacc is absent)';

let base: Awaited<ReturnType<typeof createTestDb>>;
let dir: string;

beforeAll(async () => {
  base = await createTestDb();
  dir = await mkdtemp(path.join(tmpdir(), 'bodacc-xml-'));
});
afterAll(async () => {
  await base?.drop();
  await rm(dir, { recursive: true, force: true });
});

const avis = async (id: string) =>
  (await base.db.query('SELECT * FROM avis_bodacc WHERE dataset = $1 AND id = $2', ['live', id])).rows[0];

/** Rows of avis_bodacc whose text holds `nom` (case-insensitive). */
async function lignesAvec(nom: string): Promise<number> {
  const { rows } = await base.db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM avis_bodacc a WHERE a::text ILIKE '%' || $1 || '%'`,
    [nom],
  );
  return rows[0]!.n;
}

// A modification and a removal (BODACC B), from the element names of the DILA schema: the registration beside the
// person, the seat in siegeSocial, a removal's date inside radiationPP, a comment naming someone.
const RCS_B = `<?xml version="1.0" encoding="ISO-8859-1"?>
<RCS_B_REDIFF>
  <parution>20200073</parution>
  <dateParution>2020-04-11</dateParution>
  <listeAvis>
    <avis>
      <typeAnnonce><annonce/></typeAnnonce>
      <numeroAnnonce>12</numeroAnnonce>
      <numeroDepartement>33</numeroDepartement>
      <tribunal>GREFFE DU TRIBUNAL DE COMMERCE DE BORDEAUX</tribunal>
      <personnes><personne><personneMorale>
        <denomination>AGENCE DES QUAIS</denomination><formeJuridique>Société à responsabilité limitée</formeJuridique>
      </personneMorale>
      <numeroImmatriculation><numeroIdentificationRCS>882 720 899</numeroIdentificationRCS><codeRCS>RCS</codeRCS><nomGreffeImmat>Bordeaux</nomGreffeImmat></numeroImmatriculation>
      <siegeSocial><numeroVoie>3</numeroVoie><typeVoie>rue</typeVoie><nomVoie>des Chartrons</nomVoie><codePostal>33000</codePostal><ville>Bordeaux</ville></siegeSocial>
      </personne></personnes>
      <modificationsGenerales>
        <descriptif>Modification de l'administration : Gérant : DUPLESSIX Hélène nommée en remplacement de GRANDCOIN Marc</descriptif>
        <dateEffet>2020-03-15</dateEffet>
      </modificationsGenerales>
    </avis>
    <avis>
      <typeAnnonce><annonce/></typeAnnonce>
      <numeroAnnonce>13</numeroAnnonce>
      <numeroDepartement>33</numeroDepartement>
      <tribunal>GREFFE DU TRIBUNAL DE COMMERCE DE BORDEAUX</tribunal>
      <personnes><personne><personnePhysique>
        <numeroImmatriculation><numeroIdentification>512 345 672</numeroIdentification></numeroImmatriculation>
        <nom>VERMANDOIS</nom><prenom>Jacqueline</prenom><nomCommercial>CHEZ JACQUELINE</nomCommercial>
      </personnePhysique>
      <adresse><france><numeroVoie>8</numeroVoie><nomVoie>Impasse du Lavoir</nomVoie><codePostal>33360</codePostal><ville>Latresne</ville></france></adresse>
      </personne></personnes>
      <radiationAuRCS><radiationPP><dateCessationActivitePP>2020-02-29</dateCessationActivitePP></radiationPP><commentaire>Radiation à la demande de Mme VERMANDOIS</commentaire></radiationAuRCS>
    </avis>
    <avis>
      <typeAnnonce><annonce/></typeAnnonce>
      <numeroDepartement>33</numeroDepartement>
    </avis>
  </listeAvis>
</RCS_B_REDIFF>
`;

// Insolvency proceedings (BODACC A, PCL_REDIFF: annonces/annonce, persons directly in the notice, dates in words).
const PCL = `<?xml version="1.0" encoding="UTF-8"?>
<PCL_REDIFF>
  <parution>20200074</parution>
  <dateParution>2020-04-14</dateParution>
  <annonces>
    <annonce>
      <typeAnnonce><annonce/></typeAnnonce>
      <numeroAnnonce>2001</numeroAnnonce>
      <numeroDepartement>33</numeroDepartement>
      <tribunal>TRIBUNAL DE COMMERCE DE BORDEAUX</tribunal>
      <personneMorale><denomination>AGENCE DES QUAIS</denomination><formeJuridique>SARL</formeJuridique></personneMorale>
      <numeroImmatriculation><numeroIdentificationRCS>882 720 899</numeroIdentificationRCS><codeRCS>RCS</codeRCS></numeroImmatriculation>
      <adresse><france><codePostal>33000</codePostal><ville>Bordeaux</ville></france></adresse>
      <jugement>
        <famille>Jugement d'ouverture</famille>
        <nature>Jugement d'ouverture d'une procédure de redressement judiciaire</nature>
        <date>1er mars 2020</date>
        <complementJugement>Mandataire judiciaire : Maître ARNAUDIN Pierre</complementJugement>
      </jugement>
    </annonce>
    <annonce>
      <typeAnnonce><rectificatif/></typeAnnonce>
      <numeroAnnonce>2002</numeroAnnonce>
      <numeroDepartement>33</numeroDepartement>
      <personnePhysique><nom>BELLEFONDS</nom><prenom>Odile</prenom></personnePhysique>
      <numeroImmatriculation><numeroIdentificationRCS>498 765 432</numeroIdentificationRCS></numeroImmatriculation>
      <adresse><france><codePostal>33360</codePostal><ville>Latresne</ville></france></adresse>
      <jugement><famille>Jugement de clôture</famille><nature>Clôture pour insuffisance d'actif</nature><date>12 février 2020</date></jugement>
      <parutionAvisPrecedent><nomPublication>BODACC A</nomPublication><numeroParution>20200010</numeroParution><numeroAnnonce>77</numeroAnnonce></parutionAvisPrecedent>
    </annonce>
  </annonces>
</PCL_REDIFF>
`;

// Filings of accounts (BODACC C): the company's fields in the notice itself.
const BILAN = `<?xml version="1.0" encoding="UTF-8"?>
<Bilan_XML_Rediff>
  <parution>20200075</parution>
  <dateParution>2020-04-15</dateParution>
  <listeAvis>
    <avis>
      <typeAnnonce><annonce/></typeAnnonce>
      <numeroAnnonce>501</numeroAnnonce>
      <numeroDepartement>33</numeroDepartement>
      <tribunal>GREFFE DU TRIBUNAL DE COMMERCE DE BORDEAUX</tribunal>
      <numeroImmatriculation><numeroIdentificationRCS>882 720 899</numeroIdentificationRCS><codeRCS>RCS</codeRCS></numeroImmatriculation>
      <denomination>AGENCE DES QUAIS</denomination><formeJuridique>SARL</formeJuridique>
      <adresse><france><codePostal>33000</codePostal><ville>Bordeaux</ville></france></adresse>
      <depot><dateCloture>2019-12-31</dateCloture><typeDepot>Comptes annuels et rapports</typeDepot></depot>
    </avis>
  </listeAvis>
</Bilan_XML_Rediff>
`;

describe('BODACC bulletins of the DILA', () => {
  it(`imports the real RCS-A bulletin from its XML: every notice, SIRENs without spaces, no natural person by name${SKIP}`, async () => {
    if (!hasShared) return;
    const r = await importBodacc(base.db, XML);
    expect(r.rejetes).toEqual([]);
    expect([r.lus, r.gardes]).toEqual([295, 295]);
    // Notice 139: SAJJ, a company « exploitation d'une agence immobilière », SIREN written « 882 720 899 ».
    const sajj = await avis('A20200072139');
    expect(sajj).toMatchObject({
      publication: 'A',
      parution: '20200072',
      numero_annonce: 139,
      famille: 'creation',
      categorie: 'creation',
      denomination: 'SAJJ',
      sirens: ['882720899'],
      porte_sur_personne_physique: false,
    });
    expect(sajj.date_parution.toISOString().slice(0, 10)).toBe('2020-04-10');
    // Notice 1: the sale of a business; the former owner's SIREN reaches the notice too.
    expect(await avis('A202000721')).toMatchObject({ famille: 'vente', categorie: 'vente', sirens: ['827556382'] });
    // Notice 2: a natural person (Sandra CHAILLAN, trading as BRAIN PROUD ENTREPRISE): kept, never named.
    const pp = await avis('A202000722');
    expect(pp).toMatchObject({ porte_sur_personne_physique: true, denomination: null, sirens: ['882779366'] });
    expect(pp.resume).toContain('personne physique (non nommée)');
    for (const nom of ['CHAILLAN', 'Sandra', 'BRAIN PROUD', 'PIPITONE', 'MENZIES', 'GOLKHOSRAVI', 'Gérant']) {
      expect(await lignesAvec(nom), nom).toBe(0);
    }
  });

  it(`reads the .taz archive as a stream: the same notices, and importing again changes nothing${SKIP}`, async () => {
    if (!hasShared) return;
    const avant = (await base.db.query(`SELECT id, resume, sirens, maj_le FROM avis_bodacc ORDER BY id`)).rows;
    const r = await importBodacc(base.db, TAZ);
    expect([r.lus, r.gardes, r.rejetes.length]).toEqual([295, 295, 0]);
    expect(r.details).toContain('avis : 295 (0 ajoutés, 0 modifiés, 295 inchangés)');
    const apres = (await base.db.query(`SELECT id, resume, sirens, maj_le FROM avis_bodacc ORDER BY id`)).rows;
    expect(apres).toEqual(avant);
    // The archive and its XML side by side (as in the DILA's folders once extracted): the bulletin is read once.
    const deux = await importBodacc(base.db, [TAZ, XML]);
    expect([deux.lus, deux.gardes, deux.rejetes.length]).toEqual([295, 295, 0]);
    expect(deux.details.some((d) => d.startsWith('bulletin lu deux fois, ignoré : RCS-A_BXA20200072.xml'))).toBe(true);
  });

  it('reads the other families (RCS-B, PCL, BILAN) from several files at once, with reasons for what it rejects', async () => {
    const b = path.join(dir, 'RCS-B_BXB20200073.xml');
    // The RCS-B bulletin in its declared encoding, and the PCL one as a gzipped tar of its XML.
    await writeFile(b, Buffer.from(RCS_B, 'latin1'));
    const pcl = path.join(dir, 'PCL_BXA20200074.taz');
    await writeFile(pcl, gzipSync(tar('PCL_BXA20200074.xml', Buffer.from(PCL))));
    const bilan = path.join(dir, 'BILAN_BXC20200075.xml');
    await writeFile(bilan, BILAN);
    const r = await importBodacc(base.db, [b, pcl, bilan]);
    expect([r.lus, r.gardes]).toEqual([6, 5]);
    expect(r.rejetes).toEqual([
      { ligne: 3, motif: 'RCS-B_BXB20200073.xml, avis n° 3 : numeroAnnonce absent ou invalide (absent)' },
    ]);

    expect(await avis('B2020007312')).toMatchObject({
      famille: 'modification',
      categorie: 'modification',
      denomination: 'AGENCE DES QUAIS',
      sirens: ['882720899'],
      siege_code_postal: '33000',
      resume: 'Modification : administration ; Société à responsabilité limitée ; date d’effet 2020-03-15.',
    });
    expect(await avis('B2020007313')).toMatchObject({
      famille: 'radiation',
      categorie: 'radiation',
      porte_sur_personne_physique: true,
      denomination: null,
      siege_voie: null,
      sirens: ['512345672'],
      resume: 'Radiation d’une personne physique ; personne physique (non nommée) ; date d’effet 2020-02-29.',
    });
    const ouverture = await avis('A202000742001');
    expect(ouverture).toMatchObject({ famille: 'collective', categorie: 'procedure', sirens: ['882720899'] });
    expect(ouverture.date_effet.toISOString().slice(0, 10)).toBe('2020-03-01');
    expect(ouverture.resume).toContain('redressement judiciaire');
    expect(await avis('A202000742002')).toMatchObject({
      type_avis: 'rectificatif',
      porte_sur_personne_physique: true,
      avis_precedent: 'A2020001077',
    });
    const depot = await avis('C20200075501');
    expect(depot).toMatchObject({ famille: 'dpc', categorie: 'depot_comptes', sirens: ['882720899'] });
    expect(depot.resume).toContain('clôture de l’exercice au 2019-12-31');
    for (const nom of [
      'DUPLESSIX',
      'GRANDCOIN',
      'VERMANDOIS',
      'Jacqueline',
      'CHEZ JACQUELINE',
      'ARNAUDIN',
      'BELLEFONDS',
      'Odile',
    ]) {
      expect(await lignesAvec(nom), nom).toBe(0);
    }
  });

  it('refuses, before writing anything, a file that is no bulletin, naming it', async () => {
    const autre = path.join(dir, 'RCS-A_autre.xml');
    await writeFile(autre, '<?xml version="1.0"?><catalogue><livre/></catalogue>');
    const bon = path.join(dir, 'BILAN_BXC20200099.xml');
    await writeFile(bon, BILAN.replace('20200075', '20200099'));
    await expect(importBodacc(base.db, [bon, autre])).rejects.toThrow(ImportError);
    await expect(importBodacc(base.db, [bon, autre])).rejects.toThrow(/catalogue.*RCS-A_IMMAT/);
    expect(await avis('C20200099501')).toBeUndefined();
    // Miscellaneous notices are a title and a free text: refused, said so.
    const divers = path.join(dir, 'DIV_BXA20200100.xml');
    await writeFile(
      divers,
      '<?xml version="1.0"?><Divers_XML_Rediff><parution>20200100</parution></Divers_XML_Rediff>',
    );
    await expect(importBodacc(base.db, divers)).rejects.toThrow(/avis divers.*n’est pas importé/);
  });

  it('says where a bulletin cut short stops, keeping the notices read before', async () => {
    const tronque = path.join(dir, 'BILAN_BXC20200098.xml');
    const texte = BILAN.replace('20200075', '20200098');
    await writeFile(tronque, texte.slice(0, texte.indexOf('</listeAvis>')));
    const r = await importBodacc(base.db, tronque);
    expect([r.lus, r.gardes]).toEqual([2, 1]);
    expect(r.rejetes[0]!.motif).toMatch(/avis n° 2 : XML illisible : bulletin tronqué/);
    expect(await avis('C20200098501')).toBeDefined();
  });
});

/** A one-file ustar archive, as tar writes it. */
function tar(nom: string, contenu: Buffer): Buffer {
  const entete = Buffer.alloc(512);
  entete.write(nom, 0, 'utf8');
  entete.write('0000644\0', 100);
  entete.write('0000000\0', 108);
  entete.write('0000000\0', 116);
  entete.write(`${contenu.length.toString(8).padStart(11, '0')}\0`, 124);
  entete.write('00000000000\0', 136);
  entete.write('        ', 148);
  entete.write('0', 156);
  entete.write('ustar\0', 257);
  entete.write('00', 263);
  let somme = 0;
  for (const b of entete) somme += b;
  entete.write(`${somme.toString(8).padStart(6, '0')}\0 `, 148);
  const bourrage = Buffer.alloc((512 - (contenu.length % 512)) % 512);
  return Buffer.concat([entete, contenu, bourrage, Buffer.alloc(1024)]);
}
