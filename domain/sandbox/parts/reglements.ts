import { PDFDocument, StandardFonts } from 'pdf-lib';
import type { LectureModele } from '../../plu/lecture.ts';
import { FICTIF, type Fichiers, type SandboxPart } from '../part.ts';
import { COMMUNES } from '../territoire.ts';
import { PLU, reglementDemonstration, ZONES } from './gpu.ts';

/**
 * The written rules of each commune's planning document, as a PDF whose zone chapters stand at the pages its zones'
 * NOMFIC/URLFIC name (`#page=7`), and their reading: the answers a model gives lire_plu, one line a zone
 * (`lectures-plu.jsonl`), each rule quoted word for word from its page. The importer (domain/plu/import-lectures.ts)
 * checks every quotation against the PDF's text as lire_plu checks a model's, and puts the readings in lire_plu's
 * cache: so that the demonstration's dossiers and PLU readings have rules with their quotations and pages without a
 * model, as a zone already read has. The rules are fictitious, and the documents say so on every page.
 */

/** A rule of a zone: its article, heading and sentence, and what a reader takes from it. */
interface RegleEcrite {
  article: number;
  intitule: string;
  phrase: string;
  lue: Omit<LectureModele['regles'][number], 'citation' | 'page' | 'article' | 'resume' | 'secteurs'>;
}

const regle = (
  theme: LectureModele['regles'][number]['theme'],
  forme: LectureModele['regles'][number]['forme'],
  valeur: number | null,
  unite: string | null,
  autres: Partial<LectureModele['regles'][number]> = {},
): RegleEcrite['lue'] => ({
  theme,
  forme,
  valeur,
  unite,
  objets: [],
  exceptions: null,
  diviseur: null,
  minimum_m: null,
  conditions: null,
  mesure: null,
  portee: 'generale',
  ...autres,
});

/** The rules of a zone by its family (typezone) and density: fictitious values of the usual orders. */
function reglesDe(code: string): RegleEcrite[] {
  const z = ZONES[code];
  const naturelle = z.typezone === 'A' || z.typezone === 'N';
  const dense = /^(UA|UG|UCO|UA1|UCA4)$/.test(code);
  const hauteur = naturelle ? 7 : dense ? 12 : code === '1AU' || code === 'UC' || code === 'UAR' ? 7 : 9;
  const emprise = dense ? 70 : code === 'UC' || code === '1AU' || code === 'UAR' ? 40 : 50;
  const retrait = naturelle ? 5 : dense ? 3 : 4;
  const regles: RegleEcrite[] = [
    dense
      ? {
          article: 7,
          intitule: 'Implantation des constructions par rapport aux limites séparatives',
          phrase: `Les constructions sont implantées soit sur une ou plusieurs limites séparatives, soit en retrait d’au moins ${retrait} mètres de ces limites.`,
          lue: regle('limites_separatives', 'limite_ou_recul', retrait, 'm'),
        }
      : {
          article: 7,
          intitule: 'Implantation des constructions par rapport aux limites séparatives',
          phrase: `Les constructions sont implantées à une distance des limites séparatives au moins égale à ${retrait} mètres.`,
          lue: regle('limites_separatives', 'distance_min', retrait, 'm'),
        },
    {
      article: 7,
      intitule: 'Piscines',
      phrase: 'Les bassins des piscines sont implantés à 2 mètres au moins des limites séparatives.',
      lue: regle('piscines', 'distance_min', 2, 'm', { objets: ['piscines'], portee: 'specifique' }),
    },
    {
      article: 10,
      intitule: 'Hauteur maximale des constructions',
      phrase: `La hauteur maximale des constructions est fixée à ${hauteur} mètres au faîtage.`,
      lue: regle('hauteur', 'plafond', hauteur, 'm', { mesure: 'au faîtage' }),
    },
    {
      article: 10,
      intitule: 'Hauteur des annexes',
      phrase: 'La hauteur des annexes isolées ne peut excéder 3,50 mètres au faîtage.',
      lue: regle('annexes', 'plafond', 3.5, 'm', { objets: ['annexes'], mesure: 'au faîtage', portee: 'specifique' }),
    },
  ];
  if (naturelle) {
    regles.push({
      article: 9,
      intitule: 'Emprise au sol',
      phrase:
        'Seules sont admises les extensions des habitations existantes, dans la limite de 30 % de leur emprise au sol à la date d’approbation du plan.',
      lue: regle('emprise_sol', 'qualitatif', 30, '%', { objets: ['extensions'], portee: 'specifique' }),
    });
  } else {
    regles.push({
      article: 9,
      intitule: 'Emprise au sol',
      phrase: `L’emprise au sol des constructions ne peut excéder ${emprise} % de la superficie du terrain.`,
      lue: regle('emprise_sol', 'pourcentage_max', emprise, '%'),
    });
  }
  return regles;
}

const MARGE = 56;
const TAILLE = 10;
const INTERLIGNE = 14;
const LARGEUR_LIGNE = 92;

/** Words to lines of at most LARGEUR_LIGNE characters (Helvetica 10 on A4 within the margins). */
function lignes(texte: string): string[] {
  const out: string[] = [];
  let ligne = '';
  for (const mot of texte.split(' ')) {
    if (ligne && ligne.length + 1 + mot.length > LARGEUR_LIGNE) {
      out.push(ligne);
      ligne = mot;
    } else ligne = ligne ? `${ligne} ${mot}` : mot;
  }
  if (ligne) out.push(ligne);
  return out;
}

/** One commune's rules document (bytes) and its readings. */
async function reglement(c: (typeof COMMUNES)[number]) {
  const plu = PLU[c.insee];
  const zones = [...new Set(plu.grille)].sort((a, b) => ZONES[a].page - ZONES[b].page);
  const pdf = await PDFDocument.create({ updateMetadata: false });
  const police = await pdf.embedFont(StandardFonts.Helvetica);
  const grasse = await pdf.embedFont(StandardFonts.HelveticaBold);
  // Standard fonts write WinAnsi: the few characters outside it are written as their nearest.
  const winAnsi = (s: string) => s.replace(/[\u202f\u00a0]/g, ' ');
  const pages = Math.max(...zones.map((z) => ZONES[z].page)) + 1;
  const contenu = new Map<number, Array<{ texte: string; gras?: boolean }>>();
  contenu.set(1, [
    { texte: `Plan local d’urbanisme de ${c.nom} ${FICTIF.zonage}`, gras: true },
    { texte: `Règlement écrit, document ${plu.idurba}. Document fictif de démonstration : ses règles n’existent pas.` },
  ]);
  const lectures: Array<{ zone: string; lecture: LectureModele }> = [];
  zones.forEach((code, i) => {
    const page = ZONES[code].page;
    const blocs: Array<{ texte: string; gras?: boolean }> = [
      { texte: `CHAPITRE ${i + 1} - ZONE ${code}`, gras: true },
      { texte: `${ZONES[code].libelong} ${FICTIF.zonage}` },
    ];
    const lues: LectureModele['regles'] = [];
    let article = 0;
    for (const r of reglesDe(code).sort((a, b) => a.article - b.article)) {
      if (r.article !== article) {
        blocs.push({ texte: `Article ${r.article} - ${r.intitule}`, gras: true });
        article = r.article;
      }
      blocs.push({ texte: r.phrase });
      lues.push({
        ...r.lue,
        secteurs: [],
        citation: r.phrase,
        page,
        article: `${code} ${r.article}`,
        resume: r.phrase,
      });
    }
    contenu.set(page, blocs);
    lectures.push({ zone: code, lecture: { regles: lues, definitions: [], renvois: [] } });
  });
  // Closes the last zone's chapter, as a real document's annexes do.
  contenu.set(pages, [
    { texte: 'ANNEXES', gras: true },
    { texte: 'Liste des emplacements réservés (document fictif).' },
  ]);
  for (let n = 1; n <= pages; n++) {
    const feuille = pdf.addPage([595.28, 841.89]);
    let y = 841.89 - MARGE;
    for (const bloc of contenu.get(n) ?? []) {
      for (const ligne of lignes(winAnsi(bloc.texte))) {
        feuille.drawText(ligne, { x: MARGE, y, size: TAILLE, font: bloc.gras ? grasse : police });
        y -= INTERLIGNE;
      }
      y -= INTERLIGNE / 2;
    }
    // Every page has text, as a real document's: one mostly blank would be taken for a scan.
    if (!contenu.has(n))
      feuille.drawText('(page sans disposition dans ce document de démonstration)', {
        x: MARGE,
        y,
        size: TAILLE,
        font: police,
      });
    feuille.drawText(`${plu.idurba} ${FICTIF.zonage} - page ${n}`, { x: MARGE, y: 30, size: 8, font: police });
  }
  return { octets: await pdf.save({ useObjectStreams: false }), lectures };
}

/** `reglements/<document>.pdf` by commune, then the readings of all of them (`reglements/lectures-plu.jsonl`). */
export const reglementsPart: SandboxPart<'reglements', Promise<Fichiers>> = {
  source: 'reglements',
  fichiers: async () => {
    const fichiers: Fichiers = [];
    const lignesLectures: string[] = [];
    for (const c of COMMUNES) {
      const { url, fichier } = reglementDemonstration(c.insee);
      const { octets, lectures } = await reglement(c);
      fichiers.push([`reglements/${fichier}`, octets]);
      for (const { zone, lecture } of lectures) {
        lignesLectures.push(JSON.stringify({ url, fichier, zone, modele: 'demonstration', ...lecture }));
      }
    }
    fichiers.push(['reglements/lectures-plu.jsonl', `${lignesLectures.join('\n')}\n`]);
    return fichiers;
  },
};
