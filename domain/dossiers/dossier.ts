import type { Dessins, Etude, FeuilleLivree } from './etude.ts';
import { nomFormalite } from './formalite.ts';
import type { Formalite } from './projet.ts';

/**
 * The dossier as filed: the form the formality calls for, its pieces in the bordereau's order with their codes and
 * states, what is missing, and the data to carry into the form. The bordereau is the form's own (cerfa 13703 for a
 * declaration about a house, 13406 for a house permit; DP and PC codes for the others).
 */

export type EtatPiece = 'prete' | 'a_produire_par_une_operation' | 'a_fournir_par_le_demandeur';

export interface PieceDossier {
  code: string;
  titre: string;
  role: string;
  etat: EtatPiece;
  operation: string | null;
  feuilles: number[];
  url: string | null;
  /** What the applicant or the operation needs to produce the piece. */
  faits: string[];
}

export interface NoticeFaite {
  etat: 'prete' | 'a_fournir_par_le_demandeur';
  terrain: string[];
  projet: string[];
  chiffres_ecartes: number;
  modele: string | null;
  raison: string | null;
  fichiers: { pdf: FichierLivre; docx: FichierLivre } | null;
}

export interface FichierLivre {
  url: string;
  expire_le: string;
  sha256: string;
  taille_octets: number;
}

const photo = (quoi: string) => [`Photographie ${quoi}, avec l’angle de prise de vue reporté sur le plan de masse.`];

/** The pieces of the bordereau in its order; `dessins` null when the dossier was asked without drawings. */
export function piecesDuDossier(
  formalite: Formalite,
  maisonIndividuelle: boolean,
  etude: Etude,
  dessins: Pick<Dessins, 'coupes' | 'facades'> | null,
  feuilles: FeuilleLivree[],
  notice: NoticeFaite,
): PieceDossier[] {
  if (formalite === 'aucune') return [];
  const permis = formalite !== 'declaration_prealable';
  const prefixe = permis ? (maisonIndividuelle ? 'PCMI' : 'PC') : maisonIndividuelle ? 'DPMI' : 'DP';
  const dessinee = (piece: FeuilleLivree['piece']) => feuilles.filter((f) => f.piece === piece);
  const prete = (
    code: string,
    titre: string,
    role: string,
    piece: FeuilleLivree['piece'],
    absente: string,
  ): PieceDossier => {
    const fs = dessinee(piece);
    return fs.length
      ? {
          code,
          titre,
          role,
          etat: 'prete',
          operation: null,
          feuilles: fs.map((f) => f.numero),
          url: fs[0].url,
          faits: [],
        }
      : {
          code,
          titre,
          role,
          etat: 'a_fournir_par_le_demandeur',
          operation: null,
          feuilles: [],
          url: null,
          faits: [absente],
        };
  };
  const aFournir = (code: string, titre: string, role: string, faits: string[]): PieceDossier => ({
    code,
    titre,
    role,
    etat: 'a_fournir_par_le_demandeur',
    operation: null,
    feuilles: [],
    url: null,
    faits,
  });
  const sansDessins =
    dessins === null
      ? 'Dessins non demandés (coupes: false).'
      : 'Aucun projet ne se prête à ce dessin (piscine ou terrasse sans façade).';
  const p = etude.site.parcelle;
  const pieces: PieceDossier[] = [
    aFournir(`${prefixe}1`, 'Plan de situation du terrain', 'Situe le terrain dans la commune.', [
      `Extrait du plan cadastral ou de la carte IGN montrant la parcelle ${p.section} ${Number(p.numero)} de ${p.commune ?? p.code_insee}.`,
    ]),
    prete(
      `${prefixe}2`,
      'Plan de masse des constructions à édifier ou à modifier',
      'Montre l’implantation du projet, ses dimensions et ses distances aux limites.',
      'plan_masse',
      sansDessins,
    ),
    prete(
      `${prefixe}3`,
      'Plan en coupe du terrain et de la construction',
      'Montre l’implantation par rapport au profil du terrain.',
      'coupe',
      sansDessins,
    ),
  ];
  const noticePiece: PieceDossier =
    notice.etat === 'prete'
      ? {
          code: '',
          titre: 'Notice décrivant le terrain et le projet',
          role: 'Décrit le terrain, le projet, ses matériaux et son insertion.',
          etat: 'prete',
          operation: null,
          feuilles: [],
          url: notice.fichiers?.pdf.url ?? null,
          faits: [],
        }
      : aFournir(
          '',
          'Notice décrivant le terrain et le projet',
          'Décrit le terrain, le projet, ses matériaux et son insertion.',
          [
            notice.raison ?? 'Notice non rédigée.',
            'Faits à y reprendre : superficie du terrain, constructions existantes, dimensions, hauteur et implantation de chaque projet, matériaux et couleurs.',
          ],
        );
  const facades = prete(
    `${prefixe}${permis ? 5 : 4}`,
    'Plan des façades et des toitures',
    'Montre l’aspect extérieur, les ouvertures et la toiture.',
    'facades',
    sansDessins,
  );
  if (permis) {
    pieces.push({ ...noticePiece, code: `${prefixe}4` }, facades);
  } else {
    pieces.push(
      facades,
      aFournir(
        `${prefixe}5`,
        'Représentation de l’aspect extérieur de la construction',
        'Montre les modifications de l’aspect extérieur.',
        ['Photomontage ou croquis du bâtiment existant avec le projet.'],
      ),
    );
  }
  pieces.push(
    aFournir(`${prefixe}6`, 'Document graphique d’insertion du projet', 'Situe le projet dans son environnement.', [
      'Photomontage du projet dans son environnement, depuis la voie.',
    ]),
    aFournir(
      `${prefixe}7`,
      'Photographie de l’environnement proche',
      'Situe le terrain dans son environnement proche.',
      photo('du terrain et de ses abords'),
    ),
    aFournir(
      `${prefixe}8`,
      'Photographie de l’environnement lointain',
      'Situe le terrain dans le paysage lointain.',
      photo('du paysage lointain'),
    ),
  );
  if (!permis)
    pieces.push({
      ...noticePiece,
      code: 'NOTICE',
      role: `${noticePiece.role} Complément : le bordereau de la déclaration ne l’exige pas, elle aide l’instruction.`,
    });
  pieces.push({
    code: 'TAXES',
    titre: 'Déclaration des éléments nécessaires au calcul des impositions',
    role: 'Surfaces taxables et piscine pour la taxe d’aménagement.',
    etat: 'a_produire_par_une_operation',
    operation: 'taxe_amenagement',
    feuilles: [],
    url: null,
    faits: [
      `surface taxable créée : ${etude.formalite.surface_plancher_creee_m2} m²`,
      ...etude.site.projets
        .filter((x) => x.mesures.bassin_m2 !== null)
        .map((x) => `piscine : ${x.mesures.bassin_m2} m²`),
    ],
  });
  return pieces;
}

/** What is missing before filing: the pieces to supply, the architect, the unchecked rules. */
export function manquantsDe(pieces: PieceDossier[], etude: Etude): string[] {
  const out = pieces
    .filter((p) => p.etat !== 'prete')
    .map((p) => `${p.code} ${p.titre}${p.operation ? ` (opération ${p.operation})` : ''}`);
  if (etude.formalite.architecte.obligatoire)
    out.push(`Projet architectural établi par un architecte (article ${etude.formalite.architecte.article}).`);
  if (etude.regles.etat !== 'lues' && etude.regles.raison) out.push(etude.regles.raison);
  return out;
}

export function donneesCerfa(etude: Etude, options: { demandeur: string; maison_individuelle: boolean }) {
  const { site, formalite } = etude;
  const p = site.parcelle;
  const cp = site.adresse?.libelle.match(/\b(\d{5})\b/)?.[1] ?? null;
  return {
    formulaire: formalite.cerfa?.numero ?? null,
    formalite: formalite.formalite,
    intitule_formalite: nomFormalite(formalite.formalite),
    demandeur: options.demandeur,
    maison_individuelle: options.maison_individuelle,
    terrain: {
      adresse: site.adresse?.libelle ?? null,
      code_postal: cp,
      commune: p.commune,
      code_insee: p.code_insee,
      parcelles: [
        {
          prefixe: p.idu.slice(5, 8),
          section: p.section,
          numero: p.numero,
          superficie_m2: p.contenance_m2 ?? p.aire_m2,
        },
      ],
      superficie_totale_m2: p.contenance_m2 ?? p.aire_m2,
    },
    nature_travaux: site.projets.map((x) => `${x.libelle} (${x.projet.nature})`),
    surface_plancher_existante_m2:
      Math.round((formalite.surface_plancher_totale_m2 - formalite.surface_plancher_creee_m2) * 100) / 100,
    surface_plancher_creee_m2: formalite.surface_plancher_creee_m2,
    surface_plancher_totale_m2: formalite.surface_plancher_totale_m2,
    emprise_creee_m2: formalite.emprise_creee_m2,
    emprise_totale_m2: formalite.emprise_totale_m2,
    architecte_obligatoire: formalite.architecte.obligatoire,
  };
}
