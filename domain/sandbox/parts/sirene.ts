import { Alea } from '../alea.ts';
import { csv, FICTIF, type SandboxPart } from '../part.ts';
import {
  afnor,
  round,
  TYPES_VOIE,
  type CommuneDef,
  type InseeSandbox,
  type Numero,
  type Territoire,
} from '../territoire.ts';

/** Companies: SIRENE legal units and establishments, with their seats at BAN numbers of the territory. */

/** By commune: how many SCI, whether a developer is there, and the commune's name as SIRENE writes it. */
const ENTREPRISES: Record<InseeSandbox, { sci: number; promoteur: boolean; libelleCommune: string }> = {
  '33234': { sci: 4, promoteur: false, libelleCommune: 'LATRESNE' },
  '33001': { sci: 3, promoteur: false, libelleCommune: 'ABZAC' },
  '75111': { sci: 5, promoteur: true, libelleCommune: 'PARIS 11' },
  '59350': { sci: 4, promoteur: true, libelleCommune: 'LILLE' },
  '67482': { sci: 4, promoteur: true, libelleCommune: 'STRASBOURG' },
};

const NOMS_SCI = [
  'SCI LES GLYCINES',
  'SCI DU MOULIN',
  'SCI LES TROIS CHENES',
  'SCI DES COTEAUX',
  'SCI LA FONTAINE',
  'SCI DU CANAL',
  'SCI LES ATELIERS',
  'SCI LE BEFFROI',
  'SCI DES REMPARTS',
  'SCI LA HALLE',
  'SCI LES VIGNES',
  "SCI L'ARSENAL",
  'SCI DU PONT NEUF',
  'SCI LES TILLEULS',
  'SCI DES LILAS',
  'SCI BEL AIR',
  'SCI LES PINS',
  'SCI DU PARC',
  'SCI LA SOURCE',
  'SCI DES ARTISANS',
  'SCI LE GRENIER',
  'SCI DES PRES',
  'SCI LES ACACIAS',
  'SCI DE LA GARE',
];

const UL_ENTETE =
  'siren,statutDiffusionUniteLegale,unitePurgeeUniteLegale,dateCreationUniteLegale,sigleUniteLegale,sexeUniteLegale,prenom1UniteLegale,prenom2UniteLegale,prenom3UniteLegale,prenom4UniteLegale,prenomUsuelUniteLegale,pseudonymeUniteLegale,identifiantAssociationUniteLegale,trancheEffectifsUniteLegale,anneeEffectifsUniteLegale,dateDernierTraitementUniteLegale,nombrePeriodesUniteLegale,categorieEntreprise,anneeCategorieEntreprise,dateDebut,etatAdministratifUniteLegale,nomUniteLegale,nomUsageUniteLegale,denominationUniteLegale,denominationUsuelle1UniteLegale,denominationUsuelle2UniteLegale,denominationUsuelle3UniteLegale,categorieJuridiqueUniteLegale,activitePrincipaleUniteLegale,nomenclatureActivitePrincipaleUniteLegale,nicSiegeUniteLegale,economieSocialeSolidaireUniteLegale,caractereEmployeurUniteLegale'.split(
    ',',
  );

const ETAB_ENTETE =
  'siren,nic,siret,statutDiffusionEtablissement,dateCreationEtablissement,trancheEffectifsEtablissement,anneeEffectifsEtablissement,activitePrincipaleRegistreMetiersEtablissement,dateDernierTraitementEtablissement,etablissementSiege,nombrePeriodesEtablissement,complementAdresseEtablissement,numeroVoieEtablissement,indiceRepetitionEtablissement,typeVoieEtablissement,libelleVoieEtablissement,codePostalEtablissement,libelleCommuneEtablissement,libelleCommuneEtrangerEtablissement,distributionSpecialeEtablissement,codeCommuneEtablissement,codeCedexEtablissement,libelleCedexEtablissement,codePaysEtrangerEtablissement,libellePaysEtrangerEtablissement,complementAdresse2Etablissement,numeroVoie2Etablissement,indiceRepetition2Etablissement,typeVoie2Etablissement,libelleVoie2Etablissement,codePostal2Etablissement,libelleCommune2Etablissement,libelleCommuneEtranger2Etablissement,distributionSpeciale2Etablissement,codeCommune2Etablissement,codeCedex2Etablissement,libelleCedex2Etablissement,codePaysEtranger2Etablissement,libellePaysEtranger2Etablissement,dateDebut,etatAdministratifEtablissement,enseigne1Etablissement,enseigne2Etablissement,enseigne3Etablissement,denominationUsuelleEtablissement,activitePrincipaleEtablissement,nomenclatureActivitePrincipaleEtablissement,caractereEmployeurEtablissement,longitude,latitude,geo_score,geo_type,geo_adresse,geo_id,geo_ligne,geo_l4,geo_l5'.split(
    ',',
  );

/** The check digit that makes `digits` + it pass the Luhn test (SIREN and SIRET are Luhn numbers). */
function luhn(digits: string): string {
  for (let d = 0; d <= 9; d++) {
    const text = digits + d;
    let sum = 0;
    for (let i = 0; i < text.length; i++) {
      let n = Number(text[text.length - 1 - i]);
      if (i % 2 === 1) {
        n *= 2;
        if (n > 9) n -= 9;
      }
      sum += n;
    }
    if (sum % 10 === 0) return String(d);
  }
  throw new Error('unreachable');
}

type GenreSociete = 'sci' | 'agence' | 'promoteur' | 'entrepreneur';

export interface Societe {
  genre: GenreSociete;
  siren: string;
  siret: string;
  nic: string;
  denomination: string | null;
  forme: string;
  categorie: string;
  ape: string;
  creeLe: string;
  cesseLe: string | null;
  capital: number;
  siege: Numero | null;
  commune: CommuneDef;
}

/**
 * The companies of the territory, which permits and BODACC notices name too. Pure: each part that names them draws
 * them again, the same.
 */
export function societesDe(seed: number, territoires: Territoire[]): Societe[] {
  const alea = new Alea(seed, 'sirene');
  const noms = alea.shuffle([...NOMS_SCI]);
  const sirens = new Set<string>();
  const siren = () => {
    for (;;) {
      const base = `999${String(alea.int(0, 99_999)).padStart(5, '0')}`;
      const s = base + luhn(base);
      if (!sirens.has(s)) {
        sirens.add(s);
        return s;
      }
    }
  };
  const out: Societe[] = [];
  let ceased = false;
  for (const t of territoires) {
    const c = t.commune;
    const { sci, promoteur } = ENTREPRISES[c.insee];
    const genres: GenreSociete[] = [
      ...Array<GenreSociete>(sci).fill('sci'),
      'agence',
      ...(promoteur ? (['promoteur'] as const) : []),
      'entrepreneur',
      'entrepreneur',
    ];
    for (const genre of genres) {
      const s = siren();
      const nicBase = `000${alea.int(1, 3)}`;
      const nic = nicBase + luhn(s + nicBase);
      const creeLe = genre === 'sci' ? alea.day('2010-01-01', '2024-06-30') : alea.day('2003-01-01', '2022-12-31');
      // One SCI of the territory was dissolved: a ceased unit, a closed seat and a removal notice.
      const cesse = genre === 'sci' && !ceased && c.insee === '59350' ? alea.day('2023-01-01', '2024-12-31') : null;
      if (cesse) ceased = true;
      const definition = {
        sci: {
          denomination: `${noms.pop()} ${FICTIF.societe}`,
          forme: 'Société civile immobilière',
          categorie: '6540',
          ape: '68.20B',
        },
        agence: {
          denomination: `AGENCE IMMOBILIERE ${afnor(alea.pick(t.voies).libelle)} ${FICTIF.societe}`,
          forme: 'Société à responsabilité limitée',
          categorie: '5499',
          ape: '68.31Z',
        },
        promoteur: {
          denomination: `${c.acheminement} HABITAT PROMOTION ${FICTIF.societe}`,
          forme: 'Société par actions simplifiée',
          categorie: '5710',
          ape: '41.10A',
        },
        // A sole trader: a natural person, written without any name.
        entrepreneur: {
          denomination: null,
          forme: 'Entrepreneur individuel',
          categorie: '1000',
          ape: alea.pick(['68.31Z', '43.32A', '71.11Z']),
        },
      }[genre];
      out.push({
        genre,
        siren: s,
        siret: s + nic,
        nic,
        ...definition,
        creeLe,
        cesseLe: cesse,
        capital:
          genre === 'sci' ? alea.pick([1000, 1500, 2000, 5000, 10_000, 150_000]) : alea.pick([7500, 10_000, 50_000]),
        siege: genre === 'entrepreneur' ? null : alea.pick(t.numeros),
        commune: c,
      });
    }
  }
  // Two more agencies a commune: professionals the listings name (« CABINET <commune> (FICTIVE) »…), which the
  // listings importer finds in SIRENE by name and postal code, so that the agencies have an activity to serve. Drawn
  // from a stream of their own, after the others: the companies above keep their SIREN and everything drawn from it.
  const cabinets = new Alea(seed, 'sirene:cabinets');
  for (const t of territoires) {
    const c = t.commune;
    for (const nom of ['CABINET', 'TRANSACTIONS']) {
      let s: string;
      do {
        const base = `999${String(cabinets.int(0, 99_999)).padStart(5, '0')}`;
        s = base + luhn(base);
      } while (sirens.has(s));
      sirens.add(s);
      const nicBase = `000${cabinets.int(1, 3)}`;
      const nic = nicBase + luhn(s + nicBase);
      out.push({
        genre: 'agence',
        siren: s,
        siret: s + nic,
        nic,
        denomination: `${nom} ${c.acheminement} ${FICTIF.societe}`,
        forme: 'Société à responsabilité limitée',
        categorie: '5499',
        ape: '68.31Z',
        creeLe: cabinets.day('2005-01-01', '2021-12-31'),
        cesseLe: null,
        capital: cabinets.pick([7500, 10_000, 50_000]),
        siege: cabinets.pick(t.numeros),
        commune: c,
      });
    }
  }
  return out;
}

function traitement(alea: Alea): string {
  return `${alea.day('2024-01-01', '2025-10-31')}T${String(alea.int(0, 23)).padStart(2, '0')}:${String(alea.int(0, 59)).padStart(2, '0')}:${String(alea.int(0, 59)).padStart(2, '0')}`;
}

function unitesCsv(seed: number, societes: Societe[]): string {
  const alea = new Alea(seed, 'sirene:unites');
  const lignes = societes.map((s) => {
    const personne = s.genre === 'entrepreneur';
    return {
      siren: s.siren,
      // Partial diffusion: how SIRENE publishes sole traders who refused it, with no name and no address.
      statutDiffusionUniteLegale: personne ? 'P' : 'O',
      dateCreationUniteLegale: s.creeLe,
      trancheEffectifsUniteLegale: s.genre === 'sci' || personne ? 'NN' : alea.pick(['01', '02', '03']),
      dateDernierTraitementUniteLegale: traitement(alea),
      nombrePeriodesUniteLegale: s.cesseLe ? 2 : 1,
      categorieEntreprise: 'PME',
      anneeCategorieEntreprise: '2022',
      dateDebut: s.cesseLe ?? s.creeLe,
      etatAdministratifUniteLegale: s.cesseLe ? 'C' : 'A',
      denominationUniteLegale: s.denomination ?? '',
      categorieJuridiqueUniteLegale: s.categorie,
      activitePrincipaleUniteLegale: s.ape,
      nomenclatureActivitePrincipaleUniteLegale: 'NAFRev2',
      nicSiegeUniteLegale: s.nic,
      economieSocialeSolidaireUniteLegale: 'N',
      caractereEmployeurUniteLegale: 'N',
    };
  });
  return csv(UL_ENTETE, lignes, ',');
}

function etablissementsCsv(seed: number, societes: Societe[]): string {
  const alea = new Alea(seed, 'sirene:etablissements');
  const lignes = societes.map((s) => {
    const n = s.siege;
    const adresse: Record<string, string | number> = n
      ? {
          numeroVoieEtablissement: n.numero,
          indiceRepetitionEtablissement: n.rep === 'bis' ? 'B' : n.rep === 'ter' ? 'T' : '',
          typeVoieEtablissement: TYPES_VOIE[n.voie.type],
          libelleVoieEtablissement: afnor(n.voie.libelle),
          codePostalEtablissement: n.voie.codePostal,
          longitude: n.lon.toFixed(6),
          latitude: n.lat.toFixed(6),
          geo_score: round(alea.between(0.9, 0.99), 2),
          geo_type: 'housenumber',
          geo_adresse: `${n.numero}${n.rep ? ` ${n.rep}` : ''} ${n.voie.nom} ${n.voie.codePostal} ${s.commune.nom}`,
          geo_id: n.cle,
          geo_ligne: 'G',
          geo_l4: afnor(`${n.numero}${n.rep ? ` ${n.rep}` : ''} ${n.voie.nom}`),
        }
      : { codePostalEtablissement: s.commune.codePostal(0, 0) };
    return {
      siren: s.siren,
      nic: s.nic,
      siret: s.siret,
      statutDiffusionEtablissement: s.genre === 'entrepreneur' ? 'P' : 'O',
      dateCreationEtablissement: s.creeLe,
      dateDernierTraitementEtablissement: traitement(alea),
      etablissementSiege: 'true',
      nombrePeriodesEtablissement: s.cesseLe ? 2 : 1,
      ...adresse,
      libelleCommuneEtablissement: ENTREPRISES[s.commune.insee].libelleCommune,
      codeCommuneEtablissement: s.commune.insee,
      dateDebut: s.cesseLe ?? s.creeLe,
      etatAdministratifEtablissement: s.cesseLe ? 'F' : 'A',
      activitePrincipaleEtablissement: s.ape,
      nomenclatureActivitePrincipaleEtablissement: 'NAFRev2',
      caractereEmployeurEtablissement: 'N',
    };
  });
  return csv(ETAB_ENTETE, lignes, ',');
}

export const sirenePart: SandboxPart<'sirene'> = {
  source: 'sirene',
  fichiers: (seed, territoires) => {
    const societes = societesDe(seed, territoires);
    return [
      ['StockUniteLegale.csv', unitesCsv(seed, societes)],
      ['StockEtablissement.csv', etablissementsCsv(seed, societes)],
    ];
  },
};
