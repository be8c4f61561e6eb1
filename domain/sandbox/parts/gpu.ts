import { fromWgs84 } from '../../../lib/geometrie.ts';
import { Alea } from '../alea.ts';
import { FICTIF, type SandboxPart } from '../part.ts';
import { ecrireDbf, shapefile, type ChampDbf, type ObjetShp } from '../shapefile.ts';
import { COMMUNES, position, rectangle, type CommuneDef, type InseeSandbox } from '../territoire.ts';

/**
 * The planning package of each commune as the Géoportail de l'Urbanisme takes it (CNIG standard 2017): a folder
 * named after the document (`33234_PLU_20170123/`) holding DOC_URBA and DOC_URBA_COM tables and the ZONE_URBA,
 * PRESCRIPTION_SURF/LIN/PCT and INFO_SURF/PCT shapefiles in Lambert-93. The zones are a grid of three by three around
 * each centre, drawn from the centres alone; prescriptions and information are placed by draws of their own.
 *
 * The packages differ as real ones do: DBFs in Windows-1252 or UTF-8, with or without the `.cpg` that says so, and
 * TYPEPSC of the line prescriptions in a numeric field (its leading zero lost) in two of them.
 */

/**
 * By commune: the planning document (IDURBA, prefix of its files, approval date), the zones of the grid row by row
 * from the north-west, and how its DBFs are encoded.
 */
export const PLU: Record<
  InseeSandbox,
  {
    idurba: string;
    prefixe: string;
    date: string;
    insee: string;
    grille: string[];
    encodage: 'utf-8' | 'windows-1252';
    cpg: boolean;
  }
> = {
  '33234': {
    idurba: '33234_PLU_20170123',
    prefixe: '33234',
    date: '20170123',
    insee: '33234',
    grille: ['N', 'A', '1AU', 'UC', 'UA', 'UB', 'A', 'UB', 'N'],
    encodage: 'windows-1252',
    cpg: true,
  },
  '33001': {
    idurba: '33001_PLU_20130627',
    prefixe: '33001',
    date: '20130627',
    insee: '33001',
    grille: ['A', 'N', 'A', 'UB', 'UA', 'UB', 'N', '1AU', 'A'],
    encodage: 'windows-1252',
    cpg: false,
  },
  '75111': {
    idurba: '75056_PLU_20241120',
    prefixe: '75056',
    date: '20241120',
    insee: '75056',
    grille: ['UG', 'UG', 'UV', 'UG', 'UG', 'UG', 'UGSU', 'UG', 'UG'],
    encodage: 'utf-8',
    cpg: true,
  },
  '59350': {
    idurba: '200093201_PLUi_20191212',
    prefixe: '200093201',
    date: '20191212',
    insee: '59350',
    grille: ['UAR', 'UCO', 'UAR', 'UE', 'UCO', 'UAR', 'UAR', 'UCO', 'NL'],
    encodage: 'utf-8',
    cpg: false,
  },
  '67482': {
    idurba: '246700488_PLUi_20161216',
    prefixe: '246700488',
    date: '20161216',
    insee: '67482',
    grille: ['UB2', 'UA1', 'N1', 'UCA4', 'UA1', 'UB2', 'UX3', 'UB2', 'UCA4'],
    encodage: 'windows-1252',
    cpg: true,
  },
};

export const ZONES: Record<string, { libelong: string; typezone: string; destdomi: string; page: number }> = {
  UA: { libelong: 'Zone urbaine du centre ancien', typezone: 'U', destdomi: '01', page: 7 },
  UB: { libelong: 'Zone urbaine de première couronne', typezone: 'U', destdomi: '01', page: 17 },
  UC: { libelong: 'Zone urbaine pavillonnaire', typezone: 'U', destdomi: '01', page: 27 },
  '1AU': { libelong: 'Zone à urbaniser à court terme', typezone: 'AUc', destdomi: '01', page: 51 },
  A: { libelong: 'Zone agricole', typezone: 'A', destdomi: '00', page: 61 },
  N: { libelong: 'Zone naturelle et forestière', typezone: 'N', destdomi: '00', page: 69 },
  UG: { libelong: 'Zone urbaine générale', typezone: 'U', destdomi: '01', page: 12 },
  UGSU: { libelong: 'Zone urbaine de grands services urbains', typezone: 'U', destdomi: '06', page: 88 },
  UV: { libelong: 'Zone urbaine verte', typezone: 'U', destdomi: '00', page: 104 },
  UCO: { libelong: 'Zone urbaine de centralité', typezone: 'U', destdomi: '01', page: 21 },
  UAR: { libelong: 'Zone urbaine résidentielle', typezone: 'U', destdomi: '01', page: 45 },
  UE: { libelong: 'Zone urbaine économique', typezone: 'U', destdomi: '02', page: 73 },
  NL: { libelong: 'Zone naturelle de loisirs', typezone: 'N', destdomi: '00', page: 130 },
  UA1: { libelong: 'Zone urbaine des centres anciens', typezone: 'U', destdomi: '01', page: 15 },
  UB2: { libelong: 'Zone urbaine mixte de faubourg', typezone: 'U', destdomi: '01', page: 39 },
  UCA4: { libelong: 'Zone urbaine d’habitat collectif', typezone: 'U', destdomi: '01', page: 58 },
  UX3: { libelong: 'Zone urbaine d’activités', typezone: 'U', destdomi: '02', page: 96 },
  N1: { libelong: 'Zone naturelle de protection des espaces', typezone: 'N', destdomi: '00', page: 140 },
};

/**
 * Where the demonstration's rules document of a commune is published (parts/reglements.ts writes it, and its
 * readings): under a name of the special-use domain `.invalid` (RFC 6761), which never resolves, so that nothing
 * fictitious can ever be fetched or taken for a real document.
 */
export function reglementDemonstration(insee: InseeSandbox): { url: string; fichier: string } {
  const plu = PLU[insee];
  const fichier = `${plu.prefixe}_reglement_${plu.date}.pdf`;
  return { url: `https://demonstration.invalid/reglements/${fichier}`, fichier };
}

type Anneau = Array<[number, number]>;

/** Lambert-93 metres of WGS84 positions, to the centimetre. */
function l93(anneau: Anneau): Anneau {
  return anneau.map(([lon, lat]) => {
    const { x, y } = fromWgs84('l93', lat, lon);
    return [Math.round(x * 100) / 100, Math.round(y * 100) / 100];
  });
}

/** A point m east and north of the centre, in Lambert-93. */
function point(c: CommuneDef, est: number, nord: number): [number, number] {
  const { lat, lon } = position(c, est, nord);
  return l93([[lon, lat]])[0];
}

const TEXTE = (nom: string, longueur = 254): ChampDbf => ({ nom, type: 'C', longueur });
const CHAMPS_ZONE = [
  'LIBELLE',
  'LIBELONG',
  'TYPEZONE',
  'DESTDOMI',
  'NOMFIC',
  'URLFIC',
  'IDURBA',
  'DATAPPRO',
  'DATVALID',
];
const CHAMPS_DOC = [
  'IDURBA',
  'TYPEDOC',
  'ETAT',
  'NOMPROC',
  'DATAPPRO',
  'DATEFIN',
  'SIREN',
  'NOMREG',
  'URLREG',
  'NOMPLAN',
  'URLPLAN',
  'SITEWEB',
  'TYPEREF',
  'DATEREF',
];

/** The fields of a prescription or information layer; its type code numeric (as some producers write it) or text. */
function champsSurcharge(type: 'TYPEPSC' | 'TYPEINF', numerique: boolean): ChampDbf[] {
  const sous = type === 'TYPEPSC' ? 'STYPEPSC' : 'STYPEINF';
  return [
    TEXTE('LIBELLE'),
    TEXTE('TXT', 10),
    numerique ? { nom: type, type: 'N', longueur: 11 } : TEXTE(type, 2),
    TEXTE(sous, 2),
    TEXTE('NOMFIC', 80),
    TEXTE('URLFIC'),
    TEXTE('IDURBA', 30),
    TEXTE('DATVALID', 8),
  ];
}

function paquet(seed: number, c: CommuneDef): Array<[string, Uint8Array | string]> {
  const plu = PLU[c.insee];
  const alea = new Alea(seed, `gpu:${c.insee}`);
  const dossier = `gpu/${plu.idurba}`;
  const nom = (couche: string) => `${dossier}/${plu.prefixe}_${couche}_${plu.date}`;
  const options = { encodage: plu.encodage, cpg: plu.cpg };
  const intercommunal = plu.idurba.includes('PLUi');
  const commun = { IDURBA: plu.idurba, DATVALID: plu.date };

  const d = c.rayonM * 1.25;
  const pas = (2 * d) / 3;
  const zones: ObjetShp[] = plu.grille.map((libelle, i) => {
    const ouest = -d + (i % 3) * pas;
    const nord = d - Math.floor(i / 3) * pas;
    const z = ZONES[libelle];
    return {
      parties: [l93(rectangle(c, ouest, nord - pas, ouest + pas, nord))],
      attributs: {
        ...commun,
        LIBELLE: libelle,
        LIBELONG: `${z.libelong} ${FICTIF.zonage}`,
        TYPEZONE: z.typezone,
        DESTDOMI: z.destdomi,
        NOMFIC: `${plu.prefixe}_reglement_${plu.date}.pdf#page=${z.page}`,
        URLFIC: `${reglementDemonstration(c.insee).url}#page=${z.page}`,
        DATAPPRO: plu.date,
      },
    };
  });

  // A rectangle of `l` by `h` m at a drawn place within the territory.
  const carre = (l: number, h: number): Anneau[] => {
    const est = alea.between(-0.8, 0.8) * c.rayonM;
    const nord = alea.between(-0.8, 0.8) * c.rayonM;
    return [l93(rectangle(c, est - l / 2, nord - h / 2, est + l / 2, nord + h / 2))];
  };
  const surcharge = (libelle: string, txt: string, type: string, sous: string) => ({
    ...commun,
    LIBELLE: `${libelle} ${FICTIF.zonage}`,
    TXT: txt,
    TYPEPSC: type,
    STYPEPSC: sous,
  });
  const prescriptionsSurf: ObjetShp[] = [
    {
      parties: carre(alea.between(150, 300), alea.between(100, 250)),
      attributs: surcharge('Espace boisé classé', 'EBC', '01', '01'),
    },
    {
      parties: carre(alea.between(20, 40), alea.between(60, 120)),
      attributs: surcharge(`Emplacement réservé n° ${alea.int(1, 30)} : élargissement de voirie`, 'ER', '05', '01'),
    },
  ];
  const x0 = alea.between(-0.6, 0.2) * c.rayonM;
  const y0 = alea.between(-0.6, 0.6) * c.rayonM;
  const longueur = alea.between(250, 600);
  const numerique = c.insee === '33234' || c.insee === '59350';
  const prescriptionsLin: ObjetShp[] = [
    {
      parties: [
        [point(c, x0, y0), point(c, x0 + longueur / 2, y0 + alea.between(-50, 50)), point(c, x0 + longueur, y0)],
      ],
      attributs: {
        ...surcharge('Implantation des constructions à l’alignement des voies', 'ALIGN', numerique ? '' : '15', '01'),
        TYPEPSC: numerique ? 15 : '15',
      },
    },
  ];
  const prescriptionsPct: ObjetShp[] = Array.from({ length: 3 }, () => ({
    parties: [[point(c, alea.between(-0.8, 0.8) * c.rayonM, alea.between(-0.8, 0.8) * c.rayonM)]],
    attributs: surcharge(
      'Patrimoine bâti à protéger pour des motifs d’ordre culturel, historique, architectural',
      'PB',
      '07',
      '01',
    ),
  }));
  const information = (libelle: string, type: string, sous: string) => ({
    ...commun,
    LIBELLE: `${libelle} ${FICTIF.zonage}`,
    TXT: '',
    TYPEINF: type,
    STYPEINF: sous,
  });
  const infoSurf: ObjetShp[] = [
    {
      parties: carre(alea.between(300, 600), alea.between(300, 600)),
      attributs: information('Zone de présomption de prescription archéologique', '16', '00'),
    },
  ];
  const infoPct: ObjetShp[] = [
    {
      parties: [[point(c, alea.between(-0.8, 0.8) * c.rayonM, alea.between(-0.8, 0.8) * c.rayonM)]],
      attributs: information('Site archéologique', '16', '00'),
    },
  ];

  const doc = {
    IDURBA: plu.idurba,
    TYPEDOC: intercommunal ? 'PLUi' : 'PLU',
    ETAT: '03',
    NOMPROC: 'R',
    DATAPPRO: plu.date,
    DATEFIN: '',
    SIREN: intercommunal ? plu.prefixe : '',
    NOMREG: `${plu.prefixe}_reglement_${plu.date}.pdf`,
    URLREG: reglementDemonstration(c.insee).url,
    NOMPLAN: `${plu.prefixe}_plan_zonage_${plu.date}.pdf`,
    URLPLAN: '',
    SITEWEB: '',
    TYPEREF: '01',
    DATEREF: plu.date,
  };
  return [
    [
      `${nom('DOC_URBA')}.dbf`,
      ecrireDbf(
        CHAMPS_DOC.map((n) => TEXTE(n, 80)),
        [doc],
        plu.encodage,
      ),
    ],
    [
      `${nom('DOC_URBA_COM')}.dbf`,
      ecrireDbf([TEXTE('IDURBA', 30), TEXTE('INSEE', 5)], [{ IDURBA: plu.idurba, INSEE: plu.insee }], plu.encodage),
    ],
    ...shapefile(
      nom('ZONE_URBA'),
      'polygone',
      CHAMPS_ZONE.map((n) => TEXTE(n)),
      zones,
      options,
    ),
    ...shapefile(nom('PRESCRIPTION_SURF'), 'polygone', champsSurcharge('TYPEPSC', false), prescriptionsSurf, options),
    ...shapefile(nom('PRESCRIPTION_LIN'), 'ligne', champsSurcharge('TYPEPSC', numerique), prescriptionsLin, options),
    ...shapefile(nom('PRESCRIPTION_PCT'), 'point', champsSurcharge('TYPEPSC', false), prescriptionsPct, options),
    ...shapefile(nom('INFO_SURF'), 'polygone', champsSurcharge('TYPEINF', false), infoSurf, options),
    ...shapefile(nom('INFO_PCT'), 'point', champsSurcharge('TYPEINF', numerique), infoPct, options),
  ];
}

/** Zones drawn from the centres alone; prescriptions and information from streams of their own (`gpu:<insee>`). */
export const gpuPart: SandboxPart<'gpu'> = {
  source: 'gpu',
  fichiers: (seed) => COMMUNES.flatMap((c) => paquet(seed, c)),
};
