import { Alea, plusJours } from '../alea.ts';
import { csv, type SandboxPart } from '../part.ts';
import type { InseeSandbox } from '../territoire.ts';
import { societesDe, type Societe } from './sirene.ts';

/**
 * BODACC notices: those of the SCI of SIRENE (DILA export « annonces-commerciales »), and the agencies' filings of
 * accounts (a DILA bulletin in its source format).
 */

/** By commune: the court that publishes the notices of its companies, and the registry they are registered at. */
const GREFFES: Record<InseeSandbox, { tribunal: string; greffe: string }> = {
  '33234': { tribunal: 'Greffe du Tribunal de Commerce de Bordeaux', greffe: 'Bordeaux' },
  '33001': { tribunal: 'Greffe du Tribunal de Commerce de Libourne', greffe: 'Libourne' },
  '75111': { tribunal: 'Greffe du Tribunal de Commerce de Paris', greffe: 'Paris' },
  '59350': { tribunal: 'Greffe du Tribunal de Commerce de Lille Métropole', greffe: 'Lille Métropole' },
  // The trade register of Alsace-Moselle is kept by the judicial court, not by a commercial court.
  '67482': { tribunal: 'Tribunal Judiciaire de Strasbourg', greffe: 'Strasbourg' },
};

const BODACC_ENTETE =
  'id,publicationavis,publicationavis_facette,parution,dateparution,numeroannonce,typeavis,typeavis_lib,familleavis,familleavis_lib,numerodepartement,departement_nom_officiel,region_code,region_nom_officiel,tribunal,commercant,ville,registre,cp,pdf_parution_subfolder,listepersonnes,listeetablissements,jugement,acte,modificationsgenerales,divers,depot,listeprecedentexploitant,listeprecedentproprietaire,parutionavisprecedent,radiationaurcs'.split(
    ',',
  );

function bodaccCsv(seed: number, societes: Societe[]): string {
  const alea = new Alea(seed, 'bodacc');
  const avis: Array<{ date: string; ligne: Record<string, string | number> }> = [];
  let numeroAnnonce = 9000;
  for (const s of societes) {
    if (s.genre !== 'sci' || !s.siege) continue;
    const n = s.siege;
    const c = s.commune;
    const greffe = GREFFES[c.insee];
    const sirenEspace = `${s.siren.slice(0, 3)} ${s.siren.slice(3, 6)} ${s.siren.slice(6)}`;
    const personne = {
      personne: {
        typePersonne: 'pm',
        numeroImmatriculation: { numeroIdentification: sirenEspace, codeRCS: 'RCS', nomGreffeImmat: greffe.greffe },
        denomination: s.denomination,
        formeJuridique: s.forme,
        capital: { montantCapital: String(s.capital), devise: 'EUR' },
        adresseSiegeSocial: {
          numeroVoie: `${n.numero}${n.rep ? ` ${n.rep}` : ''}`,
          typeVoie: n.voie.type.toLowerCase(),
          nomVoie: n.voie.libelle,
          codePostal: n.voie.codePostal,
          ville: c.nom,
          pays: 'France',
        },
      },
    };
    const commun = (date: string, publication: 'A' | 'B') => {
      const annee = date.slice(0, 4);
      const jour = Math.floor((Date.parse(`${date}T00:00:00Z`) - Date.parse(`${annee}-01-01T00:00:00Z`)) / 86_400_000);
      const parution = `${annee}${String(Math.min(250, Math.floor((jour * 250) / 365) + 1)).padStart(4, '0')}`;
      const numero = ++numeroAnnonce;
      return {
        id: `${publication}${parution}${numero}`,
        publicationavis: publication,
        publicationavis_facette: `Bodacc ${publication}`,
        parution,
        dateparution: date,
        numeroannonce: numero,
        typeavis: 'annonce',
        typeavis_lib: 'Avis initial',
        numerodepartement: c.departement,
        departement_nom_officiel: c.departementNom,
        region_code: c.region,
        region_nom_officiel: c.regionNom,
        tribunal: greffe.tribunal,
        commercant: s.denomination ?? '',
        ville: c.nom,
        registre: `${s.siren},${sirenEspace}`,
        cp: n.voie.codePostal,
        listepersonnes: JSON.stringify(personne),
      };
    };
    const creation = plusJours(s.creeLe, alea.int(8, 30));
    avis.push({
      date: creation,
      ligne: {
        ...commun(creation, 'A'),
        familleavis: 'creation',
        familleavis_lib: 'Créations',
        listeetablissements: JSON.stringify({
          etablissement: {
            origineFonds: 'Création',
            qualiteEtablissement: 'Siège et établissement principal',
            activite: 'Acquisition, administration et gestion de biens immobiliers',
          },
        }),
        acte: JSON.stringify({
          creation: {
            categorieCreation: "Immatriculation d'une personne morale suite à création",
            dateCommencementActivite: s.creeLe,
          },
          dateImmatriculation: plusJours(s.creeLe, alea.int(1, 6)),
        }),
      },
    });
    const apres = plusJours(creation, 200);
    if (alea.chance(0.45) && apres < '2025-09-30') {
      const date = alea.day(apres, '2025-09-30');
      if (!s.cesseLe || date < s.cesseLe) {
        avis.push({
          date,
          ligne: {
            ...commun(date, 'B'),
            familleavis: 'modification',
            familleavis_lib: 'Modifications diverses',
            // A subject only: the text of a real notice would name the managers.
            modificationsgenerales: JSON.stringify({
              descriptif: alea.pick([
                'Modification survenue sur le capital.',
                "Modification survenue sur l'administration.",
              ]),
            }),
          },
        });
      }
    }
    if (s.cesseLe) {
      const date = plusJours(s.cesseLe, alea.int(15, 60));
      avis.push({
        date,
        ligne: {
          ...commun(date, 'B'),
          familleavis: 'radiation',
          familleavis_lib: 'Radiations',
          radiationaurcs: JSON.stringify({
            radiationPM: "Radiation d'une personne morale",
            dateCessationActivitePM: s.cesseLe,
          }),
        },
      });
    }
  }
  avis.sort((a, b) => a.date.localeCompare(b.date) || String(a.ligne.id).localeCompare(String(b.ligne.id)));
  return csv(
    BODACC_ENTETE,
    avis.map((a) => a.ligne),
    ';',
  );
}

/** The bulletin of filed accounts (BODACC C) of the sandbox: its date, its number. */
const BILAN = { parution: '20250135', date: '2025-07-16' };

const xml = (t: string) => t.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/**
 * The agencies' filings of their 2024 accounts, as the DILA publishes them: one BODACC C bulletin in its source
 * format (Bilan_XML_Rediff, the company's fields in the notice itself, SIREN written with spaces), read by the same
 * importer as the real bulletins.
 */
function bilanXml(seed: number, societes: Societe[]): string {
  const alea = new Alea(seed, 'bodacc:bilans');
  const avis = societes
    .filter((s) => s.genre === 'agence' && s.siege)
    .map((s, i) => {
      const n = s.siege!;
      const greffe = GREFFES[s.commune.insee];
      const sirenEspace = `${s.siren.slice(0, 3)} ${s.siren.slice(3, 6)} ${s.siren.slice(6)}`;
      return `    <avis>
      <typeAnnonce><annonce/></typeAnnonce>
      <numeroAnnonce>${i + 1}</numeroAnnonce>
      <numeroDepartement>${s.commune.departement}</numeroDepartement>
      <tribunal>${xml(greffe.tribunal)}</tribunal>
      <numeroImmatriculation>
        <numeroIdentificationRCS>${sirenEspace}</numeroIdentificationRCS>
        <codeRCS>RCS</codeRCS>
        <nomGreffeImmat>${xml(greffe.greffe)}</nomGreffeImmat>
      </numeroImmatriculation>
      <denomination>${xml(s.denomination ?? '')}</denomination>
      <formeJuridique>${xml(s.forme)}</formeJuridique>
      <adresse>
        <france>
          <numeroVoie>${n.numero}${n.rep ? ` ${n.rep}` : ''}</numeroVoie>
          <typeVoie>${xml(n.voie.type.toLowerCase())}</typeVoie>
          <nomVoie>${xml(n.voie.libelle)}</nomVoie>
          <codePostal>${n.voie.codePostal}</codePostal>
          <ville>${xml(s.commune.nom)}</ville>
        </france>
      </adresse>
      <depot>
        <dateCloture>2024-12-31</dateCloture>
        <typeDepot>${alea.pick(['Comptes annuels et rapports', 'Comptes annuels (avec déclaration de confidentialité)'])}</typeDepot>
      </depot>
    </avis>`;
    });
  return `<?xml version="1.0" encoding="utf-8"?>
<Bilan_XML_Rediff>
  <parution>${BILAN.parution}</parution>
  <dateParution>${BILAN.date}</dateParution>
  <listeAvis>
${avis.join('\n')}
  </listeAvis>
</Bilan_XML_Rediff>
`;
}

export const bodaccPart: SandboxPart<'bodacc'> = {
  source: 'bodacc',
  fichiers: (seed, territoires) => [
    ['bodacc-annonces-commerciales.csv', bodaccCsv(seed, societesDe(seed, territoires))],
    [`BILAN_BXC${BILAN.parution}.xml`, bilanXml(seed, societesDe(seed, territoires))],
  ],
};
