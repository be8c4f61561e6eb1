import { Alea } from '../alea.ts';
import { FICTIF, windows1252, type SandboxPart } from '../part.ts';
import type { CommuneDef, InseeSandbox, Territoire } from '../territoire.ts';

/**
 * Rent indicators ("carte des loyers") of the 2025 edition, in its layout and with its quirks: one file per type of
 * dwelling named as the publisher names them (with the year, which the importer reads there), every text field
 * quoted, decimal commas with the 15 significant digits R writes, Windows-1252, CRLF. The figures are drawn: the
 * commune's name says so (LIBGEO, a free field).
 */

/** The market of listings generated in a commune. */
interface Marche {
  /** Apartments, € per m² per month, charges included: the level the draws scatter around. */
  appartementM2: number;
  /** Houses' rent per m² against apartments'. */
  maisonsFacteur: number;
  /** Listings of the commune over the edition's years, apartments (all sizes) and houses. */
  annoncesAppartements: number;
  annoncesMaisons: number;
  /** Real EPCI of the commune (SIREN), as the file writes it. */
  epci: string;
}

/** Near the levels the real editions give these communes; listings where the real ones are (few in Abzac). */
const MARCHES: Record<InseeSandbox, Marche> = {
  '33234': {
    appartementM2: 12.4,
    maisonsFacteur: 0.87,
    annoncesAppartements: 150,
    annoncesMaisons: 170,
    epci: '243301439',
  },
  '33001': {
    appartementM2: 9.1,
    maisonsFacteur: 0.93,
    annoncesAppartements: 12,
    annoncesMaisons: 40,
    epci: '200070092',
  },
  '75111': {
    appartementM2: 30.5,
    maisonsFacteur: 0.9,
    annoncesAppartements: 4200,
    annoncesMaisons: 6,
    epci: '200054781',
  },
  '59350': {
    appartementM2: 16.2,
    maisonsFacteur: 0.8,
    annoncesAppartements: 5200,
    annoncesMaisons: 320,
    epci: '200093201',
  },
  '67482': {
    appartementM2: 14.6,
    maisonsFacteur: 0.85,
    annoncesAppartements: 4600,
    annoncesMaisons: 180,
    epci: '246700488',
  },
};

/** The four files of an edition: name, level of rent and listings of the type (T1-T2 dearer per m², T3+ cheaper). */
const FICHIERS: Array<{ nom: string; loyerM2: (m: Marche) => number; annonces: (m: Marche) => number }> = [
  { nom: 'pred-app-mef-dhup-2025.csv', loyerM2: (m) => m.appartementM2, annonces: (m) => m.annoncesAppartements },
  {
    nom: 'pred-app12-mef-dhup-2025.csv',
    loyerM2: (m) => m.appartementM2 * 1.13,
    annonces: (m) => m.annoncesAppartements * 0.55,
  },
  {
    nom: 'pred-app3-mef-dhup-2025.csv',
    loyerM2: (m) => m.appartementM2 * 0.9,
    annonces: (m) => m.annoncesAppartements * 0.45,
  },
  {
    nom: 'pred-mai-mef-dhup-2025.csv',
    loyerM2: (m) => m.appartementM2 * m.maisonsFacteur,
    annonces: (m) => m.annoncesMaisons,
  },
];

const ENTETE = [
  'id_zone',
  'INSEE_C',
  'LIBGEO',
  'EPCI',
  'DEP',
  'REG',
  'loypredm2',
  'lwr.IPm2',
  'upr.IPm2',
  'TYPPRED',
  'nbobs_com',
  'nbobs_mail',
  'R2_adj',
];

/**
 * The sandbox's stand-in for the source's choice of level: the commune's own model when it has at least this many
 * listings of the type, else the group of communes it belongs to.
 */
const ANNONCES_NIVEAU_COMMUNE = 100;

/** A number as the source writes it: R's 15 significant digits, decimal comma, unquoted. */
function decimal(n: number): string {
  return String(Number(n.toPrecision(15))).replace('.', ',');
}

const quote = (text: string) => `"${text.replace(/"/g, '""')}"`;

interface Ligne {
  idZone: string;
  champs: string[];
}

/** A commune's line of each file, drawn from its own stream in file order. */
function lignes(seed: number, c: CommuneDef): Ligne[] {
  const marche = MARCHES[c.insee];
  const alea = new Alea(seed, `loyers:${c.insee}`);
  // The group of communes of the model: the same for the four types, as the publisher's zones are.
  const idZone = String(alea.int(100, 2400));
  return FICHIERS.map((f) => {
    const annonces = Math.round(f.annonces(marche) * alea.between(0.85, 1.15));
    const commune = annonces >= ANNONCES_NIVEAU_COMMUNE;
    const loyer = f.loyerM2(marche) * Math.exp(0.03 * alea.normal());
    // Wider where the model borrows from the group, and skewed upwards, as the published intervals are.
    const bas = loyer * (1 - (commune ? alea.between(0.12, 0.18) : alea.between(0.2, 0.28)));
    const haut = loyer * (1 + (commune ? alea.between(0.14, 0.22) : alea.between(0.25, 0.35)));
    const maille = annonces + Math.round(alea.between(300, 2500));
    return {
      idZone,
      champs: [
        quote(idZone),
        quote(c.insee),
        quote(`${c.nom} ${FICTIF.loyer}`),
        quote(marche.epci),
        quote(c.departement),
        quote(c.region),
        decimal(loyer),
        decimal(bas),
        decimal(haut),
        quote(commune ? 'commune' : 'maille'),
        String(annonces),
        String(maille),
        decimal(alea.between(0.62, 0.86)),
      ],
    };
  });
}

function fichiers(seed: number, territoires: Territoire[]): Array<[string, Uint8Array]> {
  const parCommune = territoires.map((t) => lignes(seed, t.commune));
  return FICHIERS.map((f, i) => {
    // The publisher sorts by id_zone as text.
    const rangees = parCommune
      .map((l) => l[i])
      .sort((a, b) => (a.idZone < b.idZone ? -1 : a.idZone > b.idZone ? 1 : 0));
    const texte = [ENTETE.map(quote).join(';'), ...rangees.map((r) => r.champs.join(';'))].join('\r\n');
    return [f.nom, windows1252(`${texte}\r\n`)];
  });
}

export const loyersPart: SandboxPart<'loyers'> = { source: 'loyers', fichiers };
