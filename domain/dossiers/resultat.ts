import type { AnnotationLocale, Piece } from './dessins.ts';
import { donneesCerfa, manquantsDe, piecesDuDossier, type NoticeFaite } from './dossier.ts';
import { blocsDuSite, questionsDe, type Dessins, type Etude, type FeuilleLivree, type OptionsEtude } from './etude.ts';
import { repereAutour } from './geometrie-locale.ts';
import { MENTION, qualiteDe } from './operations.ts';
import type { Lieu, Projet } from './projet.ts';
import type { Site } from './site.ts';

/**
 * The dossier task's input as stored, and its result as served: the study's blocks, the rules checked, the formality,
 * the pieces in the bordereau's order, what is missing and the form's data. The workflow's activities compute the
 * parts; this is the one place they are put together.
 */

/** The input of a dossier task, as the operation stored it. */
export interface EntreeDossier extends Lieu, OptionsEtude {
  projets: Projet[];
  coupes?: boolean;
  recul_limites_m?: number;
  distance_min_batiments_m?: number;
  distance_max_maison_m?: number;
  annotations?: Array<
    Omit<AnnotationLocale, 'position' | 'trace'> & { position_wgs84?: number[]; trace_wgs84?: number[][] }
  >;
}

export interface DessinsLivres {
  coupes: Dessins['coupes'];
  facades: Dessins['facades'];
  feuilles: FeuilleLivree[];
}

/** The projects with the dossier's own defaults (the applicant's setback for projects placed from a boundary). */
export function projetsDe(e: EntreeDossier): Projet[] {
  return e.projets.map((p) =>
    p.distance_limite_m === undefined &&
    e.recul_limites_m !== undefined &&
    (p.ancrage === 'depuis_limite' || p.ancrage === undefined)
      ? { ...p, distance_limite_m: e.recul_limites_m }
      : p,
  );
}

/** The applicant's annotations in the site's local frame. */
export function annotationsLocales(site: Site, e: EntreeDossier): AnnotationLocale[] {
  const repere = repereAutour(site.origine.lat, site.origine.lon);
  const local = (p: unknown) =>
    Array.isArray(p) && p.length === 2 && typeof p[0] === 'number' && typeof p[1] === 'number'
      ? repere.versLocal(p[0], p[1])
      : null;
  return (e.annotations ?? []).map((a) => ({
    ...a,
    position: local(a.position_wgs84),
    trace: (a.trace_wgs84 ?? []).map(local).filter((p): p is NonNullable<typeof p> => p !== null),
  }));
}

/** The codes the sheets carry in their title block, from the bordereau of the formality. */
export function codesDesPieces(formalite: string, mi: boolean): Partial<Record<Piece, string>> {
  if (formalite === 'aucune') return {};
  const permis = formalite !== 'declaration_prealable';
  const p = permis ? (mi ? 'PCMI' : 'PC') : mi ? 'DPMI' : 'DP';
  return { plan_masse: `${p}2`, coupe: `${p}3`, facades: `${p}${permis ? 5 : 4}` };
}

export function resultatDuDossier(e: EntreeDossier, etude: Etude, dessins: DessinsLivres, notice: NoticeFaite) {
  const f = etude.formalite;
  const mi = e.maison_individuelle ?? true;
  const pieces = piecesDuDossier(f.formalite, mi, etude, e.coupes === false ? null : dessins, dessins.feuilles, notice);
  const constats = [...etude.constats];
  for (const p of etude.site.projets) {
    const libres = p.mesures.distances_batiments.filter((d) => d.distance_m >= 0.05).map((d) => d.distance_m);
    if (e.distance_min_batiments_m !== undefined && libres.some((d) => d < e.distance_min_batiments_m!)) {
      constats.push(
        `${p.libelle} : à ${Math.min(...libres)} m d’un bâtiment existant, moins que les ${e.distance_min_batiments_m} m demandés.`,
      );
    }
    if (e.distance_max_maison_m !== undefined && !p.mesures.accole_batiment) {
      const principal = etude.site.batiments.find((b) => b.principal);
      const d = principal
        ? p.mesures.distances_batiments.find((x) => x.batiment === principal.numero)?.distance_m
        : undefined;
      if (d !== undefined && d > e.distance_max_maison_m)
        constats.push(`${p.libelle} : à ${d} m de la maison, plus que les ${e.distance_max_maison_m} m demandés.`);
    }
  }
  const limites = [
    'Seul un certificat d’urbanisme engage la commune ; les règles vérifiées sont celles du règlement écrit lu, sans les orientations d’aménagement ni les servitudes.',
    'Repère local en Lambert-93 : le nord des plans est le nord du quadrillage.',
    'Pas d’archive ZIP : elle se constitue dans le Hub à partir des liens des pièces.',
  ];
  const sansPosition = (e.annotations ?? []).filter((a) => !a.position_wgs84 && !a.trace_wgs84?.length).length;
  if (sansPosition)
    limites.push(`${sansPosition} annotation(s) sans position ni tracé : non reportée(s) sur le plan de masse.`);
  return {
    ...blocsDuSite(etude, dessins),
    zone: etude.regles.zone,
    regles: {
      etat: etude.regles.etat,
      raison: etude.regles.raison,
      lecture: etude.regles.lecture,
      verifications: etude.verifications,
      non_mesurables: etude.non_mesurables,
    },
    alertes: etude.alertes,
    refus: etude.refus,
    formalite: {
      retenue: f.formalite,
      declaree: e.formalite ?? null,
      correction: etude.ecart_formalite,
      cerfa: f.cerfa,
      decisions: f.decisions,
      architecte: f.architecte,
    },
    pieces,
    manquants: manquantsDe(pieces, etude),
    donnees_cerfa: donneesCerfa(etude, { demandeur: e.demandeur ?? 'personne_physique', maison_individuelle: mi }),
    coupes: dessins.coupes,
    facades: dessins.facades,
    feuilles: dessins.feuilles,
    notice,
    faits_manquants: etude.faits_manquants,
    questions: questionsDe(etude),
    constats,
    sources: [
      'Cadastre Etalab : parcelles et bâtiments',
      'Géoportail de l’Urbanisme : zonage, servitudes ; règlement lu par lire_plu',
      'Code de l’urbanisme, articles R.420-1, R.421-1 à R.421-25 et R.431-2',
    ],
    limites,
    mention: MENTION,
    genere_le: new Date().toISOString(),
    qualite: qualiteDe(etude, 'Cadastre Etalab et règlement du PLU lu par lire_plu'),
  };
}

export type ResultatDossier = ReturnType<typeof resultatDuDossier>;
