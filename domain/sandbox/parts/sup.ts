import { fromWgs84 } from '../../../lib/geometrie.ts';
import { Alea } from '../alea.ts';
import { FICTIF, type SandboxPart } from '../part.ts';
import { ecrireDbf, shapefile, type ChampDbf, type ObjetShp, type ValeurDbf } from '../shapefile.ts';
import { COMMUNES, position, type CommuneDef } from '../territoire.ts';

/**
 * Public-utility easements in the CNIG SUP standard: three packages, one per category, each with one easement in
 * every commune of the sandbox: AC1 (the protection perimeter of a historic monument: a 500 m circle around it),
 * PM1 (a natural-risk prevention plan: a flood zone) and I4 (an overhead power line and its corridor). As real
 * packages do, they differ: identifiers numeric (AC1) or text, layer fields in camel case (AC1) or lower case, DBFs in
 * UTF-8 with a `.cpg` (AC1), without one (PM1), or in Windows-1252 (I4). Places are drawn by streams of their own.
 */

type Anneau = Array<[number, number]>;

function l93(c: CommuneDef, est: number, nord: number): [number, number] {
  const { lat, lon } = position(c, est, nord);
  const { x, y } = fromWgs84('l93', lat, lon);
  return [Math.round(x * 100) / 100, Math.round(y * 100) / 100];
}

/** A closed polygon of 32 sides approximating a circle of `rayon` m around a point m east and north of the centre. */
function cercle(c: CommuneDef, est: number, nord: number, rayon: number): Anneau {
  const points: Anneau = [];
  for (let i = 0; i <= 32; i++) {
    const a = (2 * Math.PI * (i % 32)) / 32;
    points.push(l93(c, est + rayon * Math.cos(a), nord + rayon * Math.sin(a)));
  }
  return points;
}

const C = (nom: string, longueur: number): ChampDbf => ({ nom, type: 'C', longueur });
const N = (nom: string, longueur: number, decimales = 0): ChampDbf => ({ nom, type: 'N', longueur, decimales });

interface Categorie {
  code: string;
  dossier: string;
  gestionnaire: { id: ValeurDbf; nom: string };
  numerique: boolean;
  /** Field names of the layers: camel case (IdGen), or lower case (idgen). */
  casse: 'camel' | 'minuscules';
  encodage: 'utf-8' | 'windows-1252';
  cpg: boolean;
  nomsuplitt: string;
  typeacte: string;
  decision: string;
  date: string;
  forme: { generateur: 'point' | 'ligne' | 'polygone'; assiette: 'polygone' };
  typegen: string;
  typeass: string;
  modegeoass: string;
  paramcalc: number | null;
}

const CATEGORIES: Categorie[] = [
  {
    code: 'AC1',
    dossier: '999000101_AC1_FR_20240115',
    gestionnaire: { id: 1, nom: 'Unité départementale de l’architecture et du patrimoine (fictive)' },
    numerique: true,
    casse: 'camel',
    encodage: 'utf-8',
    cpg: true,
    nomsuplitt: 'Périmètre de protection d’un monument historique',
    typeacte: 'Arrêté de classement',
    decision: 'Création',
    date: '19620315',
    forme: { generateur: 'point', assiette: 'polygone' },
    typegen: 'Monument historique classé',
    typeass: 'Périmètre de protection de 500 m',
    modegeoass: 'Zone tampon',
    paramcalc: 500,
  },
  {
    code: 'PM1',
    dossier: '999000102_PM1_FR_20230601',
    gestionnaire: { id: 'DDT-999000102', nom: 'Direction départementale des territoires (fictive)' },
    numerique: false,
    casse: 'minuscules',
    encodage: 'utf-8',
    cpg: false,
    nomsuplitt: 'Plan de prévention des risques naturels prévisibles d’inondation',
    typeacte: 'Arrêté préfectoral',
    decision: 'Approbation',
    date: '20110912',
    forme: { generateur: 'polygone', assiette: 'polygone' },
    typegen: 'Périmètre réglementé du PPR',
    typeass: 'Zone rouge d’aléa fort',
    modegeoass: 'Digitalisation',
    paramcalc: null,
  },
  {
    code: 'I4',
    dossier: '999000103_I4_FR_20220301',
    gestionnaire: { id: 'RTE-999000103', nom: 'Gestionnaire du réseau de transport d’électricité (fictif)' },
    numerique: false,
    casse: 'minuscules',
    encodage: 'windows-1252',
    cpg: true,
    nomsuplitt: 'Servitude relative à l’établissement des canalisations électriques',
    typeacte: 'Déclaration d’utilité publique',
    decision: 'Création',
    date: '19870604',
    forme: { generateur: 'ligne', assiette: 'polygone' },
    typegen: 'Ligne aérienne 225 kV',
    typeass: 'Bande de servitude de 30 m',
    modegeoass: 'Zone tampon',
    paramcalc: 30,
  },
];

function paquet(seed: number, cat: Categorie): Array<[string, Uint8Array | string]> {
  const alea = new Alea(seed, `sup:${cat.code}`);
  const id = (prefixe: string, n: number): ValeurDbf => (cat.numerique ? n : `${cat.code}-${prefixe}-${n}`);
  const champ = (nom: string) => (cat.casse === 'camel' ? nom : nom.toLowerCase());
  const ident = (nom: string) => (cat.numerique ? N(nom, 10) : C(nom, 40));
  const servitudes: Array<Record<string, ValeurDbf>> = [];
  const actes: Array<Record<string, ValeurDbf>> = [];
  const liens: Array<Record<string, ValeurDbf>> = [];
  const generateurs: ObjetShp[] = [];
  const assiettes: ObjetShp[] = [];
  COMMUNES.forEach((c, i) => {
    const n = i + 1;
    const est = alea.between(-0.6, 0.6) * c.rayonM;
    const nord = alea.between(-0.6, 0.6) * c.rayonM;
    const idsup = id('SUP', n);
    servitudes.push({
      IDSUP: idsup,
      IDGEST: cat.gestionnaire.id,
      NOMSUP: `${cat.code}_${c.insee}_sup`,
      NOMSUPLITT: `${cat.nomsuplitt} ${FICTIF.servitude}`,
      CATEGORIE: cat.code,
      IDINTGEST: '',
      DESCRIPTIO: `${c.nom} ${FICTIF.servitude}`,
      DATEMAJ: cat.date,
      ECHNUM: 5000,
      VALIDEGEST: 'T',
      OBSVALIDAT: '',
      ESTABROGE: 'F',
      MODEPROD: 'numérisation',
      QUIPROD: cat.gestionnaire.nom,
      DOCSOURCE: '',
    });
    actes.push({
      IDACTE: id('ACT', n),
      NOMACTE: `${cat.code}_${c.insee}_act`,
      REFERENCE: `${alea.int(1, 999)}/${cat.date.slice(0, 4)}`,
      TYPEACTE: cat.typeacte,
      FICHIER: `${cat.code}_${c.insee}_act.pdf`,
      DECISION: cat.decision,
      DATEDECIS: cat.date,
      DATEPUB: '',
      APLAN: 'F',
    });
    liens.push({ IDSUP: idsup, IDACTE: id('ACT', n) });
    const idgen = id('GEN', n);
    let generateur: Array<Array<[number, number]>>;
    let assiette: Array<Array<[number, number]>>;
    if (cat.forme.generateur === 'point') {
      generateur = [[l93(c, est, nord)]];
      assiette = [cercle(c, est, nord, cat.paramcalc ?? 500)];
    } else if (cat.forme.generateur === 'ligne') {
      // A straight line across the territory, and its corridor.
      const x0 = -c.rayonM;
      const x1 = c.rayonM;
      const pente = alea.between(-0.3, 0.3);
      const demi = (cat.paramcalc ?? 30) / 2;
      generateur = [[l93(c, x0, nord + pente * x0), l93(c, x1, nord + pente * x1)]];
      assiette = [
        [
          l93(c, x0, nord + pente * x0 - demi),
          l93(c, x1, nord + pente * x1 - demi),
          l93(c, x1, nord + pente * x1 + demi),
          l93(c, x0, nord + pente * x0 + demi),
          l93(c, x0, nord + pente * x0 - demi),
        ],
      ];
    } else {
      const l = alea.between(300, 700);
      const h = alea.between(100, 250);
      const rect = (m: number): Array<[number, number]> => [
        l93(c, est - l / 2 - m, nord - h / 2 - m),
        l93(c, est + l / 2 + m, nord - h / 2 - m),
        l93(c, est + l / 2 + m, nord + h / 2 + m),
        l93(c, est - l / 2 - m, nord + h / 2 + m),
        l93(c, est - l / 2 - m, nord - h / 2 - m),
      ];
      generateur = [rect(100)];
      assiette = [rect(0)];
    }
    generateurs.push({
      parties: generateur,
      attributs: {
        [champ('IdGen')]: idgen,
        [champ('IdSup')]: idsup,
        [champ('nomGen')]: `${cat.code}_${c.insee}_gen`,
        [champ('typeGen')]: cat.typegen,
        [champ('modeGenere')]: 'Digitalisation',
        [champ('srcGeoGen')]: 'BD TOPO',
        [champ('dateSrcGen')]: cat.date,
      },
    });
    assiettes.push({
      parties: assiette,
      attributs: {
        [champ('IdAss')]: id('ASS', n),
        [champ('IdGen')]: idgen,
        [champ('nomAss')]: `${cat.code}_${c.insee}_ass`,
        [champ('typeAss')]: cat.typeass,
        [champ('modeGeoAss')]: cat.modegeoass,
        [champ('paramCalc')]: cat.paramcalc,
        [champ('srcGeoAss')]: 'BD TOPO',
        [champ('dateSrcAss')]: cat.date,
      },
    });
  });
  const dossier = `sup/${cat.dossier}`;
  const table = (nom: string, champs: ChampDbf[], lignes: Array<Record<string, ValeurDbf>>): [string, Uint8Array] => [
    `${dossier}/${nom}.dbf`,
    ecrireDbf(champs, lignes, cat.encodage),
  ];
  const champsGenerateur = [
    ident(champ('IdGen')),
    ident(champ('IdSup')),
    C(champ('nomGen'), 100),
    C(champ('typeGen'), 40),
    C(champ('modeGenere'), 50),
    C(champ('srcGeoGen'), 30),
    C(champ('dateSrcGen'), 8),
  ];
  const champsAssiette = [
    ident(champ('IdAss')),
    ident(champ('IdGen')),
    C(champ('nomAss'), 100),
    C(champ('typeAss'), 40),
    C(champ('modeGeoAss'), 25),
    N(champ('paramCalc'), 10),
    C(champ('srcGeoAss'), 30),
    C(champ('dateSrcAss'), 8),
  ];
  const options = { encodage: cat.encodage, cpg: cat.cpg };
  return [
    table(
      'SERVITUDE',
      [
        ident('IDSUP'),
        cat.numerique ? N('IDGEST', 4) : C('IDGEST', 20),
        C('NOMSUP', 100),
        C('NOMSUPLITT', 120),
        C('CATEGORIE', 10),
        C('IDINTGEST', 25),
        C('DESCRIPTIO', 150),
        C('DATEMAJ', 8),
        N('ECHNUM', 8),
        C('VALIDEGEST', 1),
        C('OBSVALIDAT', 254),
        C('ESTABROGE', 1),
        C('MODEPROD', 25),
        C('QUIPROD', 80),
        C('DOCSOURCE', 80),
      ],
      servitudes,
    ),
    table(
      'ACTE_SUP',
      [
        ident('IDACTE'),
        C('NOMACTE', 100),
        C('REFERENCE', 50),
        C('TYPEACTE', 50),
        C('FICHIER', 254),
        C('DECISION', 25),
        C('DATEDECIS', 8),
        C('DATEPUB', 8),
        C('APLAN', 1),
      ],
      actes,
    ),
    table('SERVITUDE_ACTE_SUP', [ident('IDSUP'), ident('IDACTE')], liens),
    table(
      'GESTIONNAIRE_SUP',
      [cat.numerique ? N('IDGEST', 4) : C('IDGEST', 20), C('NOMGEST', 80), C('ADRESSE', 80)],
      [{ IDGEST: cat.gestionnaire.id, NOMGEST: cat.gestionnaire.nom, ADRESSE: '' }],
    ),
    ...shapefile(
      `${dossier}/${cat.code}_GENERATEUR_SUP_${cat.forme.generateur === 'point' ? 'P' : cat.forme.generateur === 'ligne' ? 'L' : 'S'}`,
      cat.forme.generateur,
      champsGenerateur,
      generateurs,
      options,
    ),
    ...shapefile(`${dossier}/${cat.code}_ASSIETTE_SUP_S`, 'polygone', champsAssiette, assiettes, options),
  ];
}

/** Drawn from streams of their own (`sup:<category>`). */
export const supPart: SandboxPart<'sup'> = {
  source: 'sup',
  fichiers: (seed) => CATEGORIES.flatMap((cat) => paquet(seed, cat)),
};
