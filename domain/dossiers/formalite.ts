import type { Formalite, Nature } from './projet.ts';

/**
 * The formality the Code de l'urbanisme sets for a project, derived from the measured project, never taken from the
 * request: each decision cites the article that makes it. Thresholds (m², m) are the code's, compared with `>` or `≤`
 * as the articles write them (« inférieure ou égale à », « supérieure à »).
 */

export const SEUIL_DISPENSE_M2 = 5;
export const SEUIL_DECLARATION_M2 = 20;
/** Extensions in an urban zone of a PLU (R.421-14 b), R.421-17 f)). */
export const SEUIL_EXTENSION_ZONE_U_M2 = 40;
export const SEUIL_ARCHITECTE_M2 = 150;
export const BASSIN_DISPENSE_M2 = 10;
export const BASSIN_DECLARATION_M2 = 100;
export const COUVERTURE_PISCINE_M = 1.8;
export const HAUTEUR_DISPENSE_M = 12;

export interface ProjetMesure {
  libelle: string;
  nature: Nature;
  emprise_m2: number;
  surface_plancher_m2: number;
  bassin_m2: number | null;
  hauteur_m: number;
  hauteur_couverture_m: number | null;
  /** Works on an existing construction (an extension, or a construction set against the house). */
  sur_existant: boolean;
}

export interface ContexteFormalite {
  /** The project stands in an urban zone (U) of a PLU or PLUi. */
  zone_urbaine_plu: boolean;
  /** A protected area covers the parcel (site patrimonial remarquable, abords or site classé): its label. */
  secteur_protege: string | null;
  demandeur: 'personne_physique' | 'exploitation_agricole' | 'societe';
  /** Floor area (m²) of the existing constructions of the unit before the works. */
  surface_plancher_existante_m2: number;
  /** Floor area after works, when the applicant states it. */
  surface_plancher_totale_declaree_m2: number | null;
  emprise_existante_m2: number;
  emprise_totale_declaree_m2: number | null;
  maison_individuelle: boolean;
}

export interface Decision {
  projet: string;
  formalite: Formalite;
  article: string;
  motif: string;
}

export interface FormaliteDerivee {
  formalite: Formalite;
  cerfa: { numero: string; intitule: string } | null;
  decisions: Decision[];
  /** The decision that sets the dossier's formality (the most demanding one). */
  decisive: Decision;
  architecte: { obligatoire: boolean; article: string; motif: string };
  surface_plancher_creee_m2: number;
  surface_plancher_totale_m2: number;
  emprise_creee_m2: number;
  emprise_totale_m2: number;
}

const RANG: Record<Formalite, number> = {
  aucune: 0,
  declaration_prealable: 1,
  permis_de_demolir: 1,
  permis_de_construire: 2,
  permis_d_amenager: 2,
};

const m2 = (v: number) => `${v.toLocaleString('fr-FR', { maximumFractionDigits: 2 })} m²`;
const m = (v: number) => `${v.toLocaleString('fr-FR', { maximumFractionDigits: 2 })} m`;

/** The formality one project calls for, alone. */
export function decisionDuProjet(p: ProjetMesure, ctx: ContexteFormalite, totalApresTravauxM2: number): Decision {
  const d = (formalite: Formalite, article: string, motif: string): Decision => ({
    projet: p.libelle,
    formalite,
    article,
    motif,
  });
  if (p.nature === 'piscine') {
    const bassin = p.bassin_m2 ?? p.emprise_m2;
    const couverture = p.hauteur_couverture_m;
    if (couverture !== null && couverture >= COUVERTURE_PISCINE_M) {
      return d(
        'permis_de_construire',
        'R.421-1 et R.421-9 f)',
        `piscine dont la couverture s’élève à ${m(couverture)} au-dessus du sol (1,80 m ou plus)`,
      );
    }
    if (bassin > BASSIN_DECLARATION_M2) {
      return d('permis_de_construire', 'R.421-1 et R.421-9 f)', `bassin de ${m2(bassin)}, au-delà de 100 m²`);
    }
    if (bassin > BASSIN_DISPENSE_M2) {
      return d(
        'declaration_prealable',
        'R.421-9 f)',
        `bassin de ${m2(bassin)}, entre 10 et 100 m², ${couverture === null ? 'non couvert' : `couverture de ${m(couverture)}, sous 1,80 m`}`,
      );
    }
    if (ctx.secteur_protege) {
      return d(
        'declaration_prealable',
        'R.421-11',
        `bassin de ${m2(bassin)} en secteur protégé (${ctx.secteur_protege})`,
      );
    }
    return d('aucune', 'R.421-2 d)', `bassin de ${m2(bassin)}, 10 m² ou moins`);
  }
  const cree = Math.max(p.emprise_m2, p.surface_plancher_m2);
  if (p.nature === 'terrasse' && cree === 0) {
    return d('aucune', 'R.420-1', 'terrasse de plain-pied : elle ne crée ni emprise au sol ni surface de plancher');
  }
  const mesure = `${m2(cree)} d’emprise au sol ou de surface de plancher créées`;
  if (p.sur_existant) {
    if (cree <= SEUIL_DISPENSE_M2) {
      if (ctx.secteur_protege)
        return d(
          'declaration_prealable',
          'R.421-17-1',
          `${mesure}, sur une construction existante en secteur protégé (${ctx.secteur_protege})`,
        );
      return d('aucune', 'R.421-13', `${mesure} sur une construction existante, 5 m² ou moins`);
    }
    if (cree <= SEUIL_DECLARATION_M2)
      return d('declaration_prealable', 'R.421-17 f)', `${mesure}, entre 5 et 20 m², sur une construction existante`);
    if (ctx.zone_urbaine_plu && cree <= SEUIL_EXTENSION_ZONE_U_M2) {
      if (totalApresTravauxM2 > SEUIL_ARCHITECTE_M2) {
        return d(
          'permis_de_construire',
          'R.421-14 b)',
          `${mesure} en zone urbaine du PLU, mais ${m2(totalApresTravauxM2)} de surface totale après travaux, au-delà de 150 m²`,
        );
      }
      return d('declaration_prealable', 'R.421-17 f)', `${mesure}, entre 20 et 40 m², en zone urbaine du PLU`);
    }
    return d(
      'permis_de_construire',
      'R.421-14 b)',
      ctx.zone_urbaine_plu
        ? `${mesure}, au-delà de 40 m² en zone urbaine du PLU`
        : `${mesure}, au-delà de 20 m² hors zone urbaine d’un PLU`,
    );
  }
  if (cree <= SEUIL_DISPENSE_M2) {
    if (p.hauteur_m > HAUTEUR_DISPENSE_M)
      return d('declaration_prealable', 'R.421-9 c)', `${mesure} mais ${m(p.hauteur_m)} de hauteur, au-delà de 12 m`);
    if (ctx.secteur_protege)
      return d(
        'declaration_prealable',
        'R.421-11',
        `${mesure}, construction nouvelle en secteur protégé (${ctx.secteur_protege})`,
      );
    return d('aucune', 'R.421-2 a)', `${mesure}, 5 m² ou moins, et ${m(p.hauteur_m)} de hauteur, 12 m ou moins`);
  }
  if (cree <= SEUIL_DECLARATION_M2)
    return d('declaration_prealable', 'R.421-9 a)', `${mesure}, entre 5 et 20 m², construction nouvelle`);
  return d('permis_de_construire', 'R.421-1', `${mesure}, au-delà de 20 m², construction nouvelle`);
}

const CERFA: Record<string, { numero: string; intitule: string }> = {
  'declaration_prealable/mi': {
    numero: '13703',
    intitule:
      'Déclaration préalable — constructions et travaux non soumis à permis de construire portant sur une maison individuelle et/ou ses annexes',
  },
  'declaration_prealable/autre': {
    numero: '13404',
    intitule: 'Déclaration préalable — constructions, travaux, installations et aménagements non soumis à permis',
  },
  'permis_de_construire/mi': {
    numero: '13406',
    intitule: 'Demande de permis de construire pour une maison individuelle et/ou ses annexes',
  },
  'permis_de_construire/autre': {
    numero: '13409',
    intitule: 'Demande de permis de construire ou de permis d’aménager',
  },
  'permis_d_amenager/autre': { numero: '13409', intitule: 'Demande de permis de construire ou de permis d’aménager' },
  'permis_de_demolir/autre': { numero: '13405', intitule: 'Demande de permis de démolir' },
};

export function cerfaDe(formalite: Formalite, maisonIndividuelle: boolean) {
  if (formalite === 'aucune') return null;
  return CERFA[`${formalite}/${maisonIndividuelle ? 'mi' : 'autre'}`] ?? CERFA[`${formalite}/autre`] ?? null;
}

/** The dossier's formality: the most demanding of its projects', and whether an architect is required. */
export function formaliteDerivee(projets: ProjetMesure[], ctx: ContexteFormalite): FormaliteDerivee {
  const planchers = projets.reduce((t, p) => t + p.surface_plancher_m2, 0);
  const emprises = projets.reduce((t, p) => t + p.emprise_m2, 0);
  const totalPlancher = ctx.surface_plancher_totale_declaree_m2 ?? ctx.surface_plancher_existante_m2 + planchers;
  const totalEmprise = ctx.emprise_totale_declaree_m2 ?? ctx.emprise_existante_m2 + emprises;
  const decisions = projets.map((p) => decisionDuProjet(p, ctx, totalPlancher));
  const decisive = decisions.reduce((a, b) => (RANG[b.formalite] > RANG[a.formalite] ? b : a));
  const formalite = decisive.formalite;
  let architecte: FormaliteDerivee['architecte'];
  if (formalite !== 'permis_de_construire') {
    architecte = {
      obligatoire: false,
      article: 'R.431-1',
      motif: 'le recours à un architecte ne s’impose qu’à une demande de permis de construire',
    };
  } else if (ctx.demandeur === 'societe') {
    architecte = {
      obligatoire: true,
      article: 'R.431-1 et R.431-2',
      motif:
        'une personne morale n’entre pas dans la dispense de R.431-2, réservée aux personnes physiques et exploitations agricoles',
    };
  } else if (totalPlancher > SEUIL_ARCHITECTE_M2 || totalEmprise > SEUIL_ARCHITECTE_M2) {
    architecte = {
      obligatoire: true,
      article: 'R.431-2',
      motif: `${m2(Math.max(totalPlancher, totalEmprise))} de ${totalPlancher >= totalEmprise ? 'surface de plancher' : 'emprise au sol'} après travaux, au-delà de 150 m²`,
    };
  } else {
    architecte = {
      obligatoire: false,
      article: 'R.431-2',
      motif: `${m2(totalPlancher)} de surface de plancher et ${m2(totalEmprise)} d’emprise au sol après travaux, 150 m² ou moins, pour une personne physique ou une exploitation agricole`,
    };
  }
  return {
    formalite,
    cerfa: cerfaDe(formalite, ctx.maison_individuelle),
    decisions,
    decisive,
    architecte,
    surface_plancher_creee_m2: round(planchers),
    surface_plancher_totale_m2: round(totalPlancher),
    emprise_creee_m2: round(emprises),
    emprise_totale_m2: round(totalEmprise),
  };
}

const round = (v: number) => Math.round(v * 100) / 100;

const NOMS: Record<Formalite, string> = {
  aucune: 'aucune formalité',
  declaration_prealable: 'déclaration préalable',
  permis_de_construire: 'permis de construire',
  permis_d_amenager: 'permis d’aménager',
  permis_de_demolir: 'permis de démolir',
};
export const nomFormalite = (f: Formalite) => NOMS[f];

/** The declared formality compared with the derived one: null when they agree, else what corrects it and why. */
export function comparerDeclaree(declaree: Formalite | undefined, derivee: FormaliteDerivee): string | null {
  if (declaree === undefined || declaree === derivee.formalite) return null;
  const d = derivee.decisive;
  return `Formalité déclarée « ${NOMS[declaree]} » corrigée en « ${NOMS[derivee.formalite]} » (article ${d.article} du Code de l’urbanisme) : ${d.projet}, ${d.motif}.`;
}
