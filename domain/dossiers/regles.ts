import type { Queryable } from '../../db/client.ts';
import type { Regle } from '../plu/lecture.ts';
import { urbanismeAuPoint } from '../urbanisme/au-point.ts';
import { documentDuLien, LECTURE_VERSION } from '../urbanisme/lectures.ts';
import type { Nature } from './projet.ts';
import type { ProjetPlace, Site } from './site.ts';

/**
 * The zone's written rules as `lire_plu` read them (its readings cache), checked against the measured projects. A zone
 * whose rules were not read is said so, never guessed: its rules are « non vérifiées », with the reason.
 */

export interface ZoneDuSite {
  code: string;
  libelle: string | null;
  famille: string | null;
  type_document: string | null;
  document: string;
  reglement_url: string | null;
}

export type EtatRegles = 'lues' | 'non_lues' | 'scanne' | 'sans_reglement' | 'zone_absente' | 'lecture_echouee';

export interface ReglesDuSite {
  zone: ZoneDuSite | null;
  etat: EtatRegles;
  /** Why the rules are not checked, when they are not. */
  raison: string | null;
  regles: Regle[];
  /** A protected area (site patrimonial remarquable, abords of a monument, classified site) covering the parcel. */
  secteur_protege: string | null;
  servitudes: string[];
  lecture: { modele: string; extrait_le: string } | null;
}

export interface Verification {
  projet: string;
  theme: Regle['theme'];
  forme: Regle['forme'];
  statut: 'respectee' | 'non_respectee' | 'a_confirmer';
  exigence: string;
  valeur_exigee: number | null;
  valeur_mesuree: number | null;
  unite: string | null;
  resume: string;
  citation: string;
  article: string | null;
  page: number;
  lien: string | null;
  note: string | null;
}

const PROTEGES: Record<string, string> = {
  AC1: 'abords d’un monument historique (AC1)',
  AC2: 'site inscrit ou classé (AC2)',
  AC4: 'site patrimonial remarquable (AC4)',
};

/** The zone at the parcel, the protected areas covering it, and the cached reading of its rules. */
export async function reglesDuSite(db: Queryable, site: Site): Promise<ReglesDuSite> {
  const point = site.origine;
  const auPoint = await urbanismeAuPoint(db, 'live', point, { insee: site.parcelle.code_insee });
  const protections = auPoint.servitudes.filter((s) => s.distance_m === 0 && s.categorie && PROTEGES[s.categorie]);
  const base = {
    secteur_protege: protections.length ? PROTEGES[protections[0].categorie!] : null,
    servitudes: auPoint.servitudes.filter((s) => s.distance_m === 0).map((s) => `${s.categorie ?? '?'} : ${s.libelle}`),
    lecture: null,
    regles: [] as Regle[],
  };
  const z = auPoint.zones[0];
  if (!z) {
    return {
      ...base,
      zone: null,
      etat: 'zone_absente',
      raison:
        'Aucune zone de PLU ou PLUi publiée ne couvre la parcelle : les règles ne sont pas vérifiées (RNU, carte communale ou document non publié).',
    };
  }
  const zone: ZoneDuSite = {
    code: z.code,
    libelle: z.libelle,
    famille: z.famille,
    type_document: z.type_document,
    document: z.document,
    reglement_url: z.reglement_url,
  };
  const url = documentDuLien(z.reglement_url);
  if (!url) {
    return {
      ...base,
      zone,
      etat: 'sans_reglement',
      raison: `Aucun règlement écrit n’est publié pour la zone ${z.code} : les règles ne sont pas vérifiées ; consultez-le en mairie.`,
    };
  }
  const { rows } = await db.query<{
    scanne: boolean;
    contenu: { regles: Regle[] } | null;
    modele: string | null;
    extrait_le: Date | null;
  }>(
    `SELECT p.scanne, l.contenu, l.modele, l.extrait_le FROM reglements_pdf p
       LEFT JOIN lectures_plu l ON l.document_sha256 = p.sha256 AND l.zone = $2 AND l.version = $3
      WHERE p.url = $1`,
    [url, z.code, LECTURE_VERSION],
  );
  const r = rows[0];
  if (r?.scanne) {
    return {
      ...base,
      zone,
      etat: 'scanne',
      raison: `Le règlement de la zone ${z.code} est un PDF sans texte (numérisé) : les règles ne sont pas vérifiées.`,
    };
  }
  if (!r?.contenu) {
    return {
      ...base,
      zone,
      etat: 'non_lues',
      raison: `Le règlement de la zone ${z.code} n’a pas encore été lu (lire_plu le lit) : les règles ne sont pas vérifiées.`,
    };
  }
  return {
    ...base,
    zone,
    etat: 'lues',
    raison: null,
    regles: r.contenu.regles,
    lecture: { modele: r.modele!, extrait_le: new Date(r.extrait_le!).toISOString() },
  };
}

const sansAccents = (s: string) => s.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase();

/** The words a rule's `objets` use for each kind of project. */
const MOTS: Record<Nature, string[]> = {
  extension: ['extension'],
  annexe: ['annexe'],
  abri: ['abri', 'annexe'],
  garage: ['garage', 'annexe'],
  carport: ['carport', 'abri', 'annexe', 'auvent'],
  piscine: ['piscine', 'bassin'],
  terrasse: ['terrasse'],
  veranda: ['veranda', 'extension'],
  autre: [],
};

/** A rule applies to a project when it names no object, or names the project's kind. */
export function regleVise(regle: Regle, nature: Nature): boolean {
  if (regle.objets.length === 0) return true;
  const objets = regle.objets.map(sansAccents);
  return MOTS[nature].some((mot) => objets.some((o) => o.includes(mot)));
}

const metres = (v: number) => `${v.toLocaleString('fr-FR', { minimumFractionDigits: 2, maximumFractionDigits: 2 })} m`;

/** Each rule with a measurable form, checked against each project it applies to. */
export function verifier(regles: Regle[], site: Site): { verifications: Verification[]; non_mesurables: Regle[] } {
  const verifications: Verification[] = [];
  const nonMesurables: Regle[] = [];
  const empriseExistante = site.batiments.reduce((t, b) => t + b.emprise_m2, 0);
  const empriseProjets = site.projets.reduce((t, p) => t + p.mesures.emprise_m2, 0);
  for (const regle of regles) {
    let mesuree = false;
    for (const p of site.projets) {
      if (!regleVise(regle, p.projet.nature)) continue;
      const v = verifierUne(regle, p, { empriseExistante, empriseProjets, aireParcelle: site.parcelle.aire_m2, site });
      if (v) {
        verifications.push(v);
        mesuree = true;
      }
    }
    if (!mesuree && regle.forme !== 'non_reglemente') nonMesurables.push(regle);
  }
  return { verifications, non_mesurables: nonMesurables };
}

function verifierUne(
  regle: Regle,
  p: ProjetPlace,
  c: { empriseExistante: number; empriseProjets: number; aireParcelle: number; site: Site },
): Verification | null {
  const m = p.mesures;
  const base = {
    projet: p.libelle,
    theme: regle.theme,
    forme: regle.forme,
    resume: regle.resume,
    citation: regle.citation,
    article: regle.article,
    page: regle.page,
    lien: regle.lien,
  };
  const fin = (
    ok: boolean,
    exigence: string,
    exigee: number | null,
    mesure: number | null,
    unite: string | null,
    note: string | null = null,
  ): Verification => ({
    ...base,
    statut: regle.a_confirmer ? 'a_confirmer' : ok ? 'respectee' : 'non_respectee',
    exigence,
    valeur_exigee: exigee,
    valeur_mesuree: mesure,
    unite,
    note: regle.a_confirmer ? 'Citation trouvée hors du chapitre de la zone : la règle est à confirmer.' : note,
  });
  const distance = (d: number | null, quoi: string) => {
    if (d === null) return null;
    if (regle.forme === 'distance_min' && regle.valeur !== null) {
      return fin(d >= regle.valeur - 0.005, `${quoi} d’au moins ${metres(regle.valeur)}`, regle.valeur, d, 'm');
    }
    if (regle.forme === 'formule_hauteur' && regle.diviseur) {
      const exigee = Math.round(Math.max(m.hauteur_m / regle.diviseur, regle.minimum_m ?? 0) * 100) / 100;
      return fin(
        d >= exigee - 0.005,
        `${quoi} d’au moins H/${regle.diviseur}${regle.minimum_m ? ` et ${metres(regle.minimum_m)}` : ''}, soit ${metres(exigee)} pour ${metres(m.hauteur_m)} de hauteur`,
        exigee,
        d,
        'm',
      );
    }
    if (regle.forme === 'limite_ou_recul') {
      const recul = regle.valeur ?? regle.minimum_m;
      if (recul === null) return null;
      return fin(
        d < 0.05 || d >= recul - 0.005,
        `${quoi} nulle (sur la limite) ou d’au moins ${metres(recul)}`,
        recul,
        d,
        'm',
      );
    }
    return null;
  };
  switch (regle.theme) {
    case 'limites_separatives':
    case 'piscines':
      if (regle.theme === 'piscines' && regle.forme !== 'distance_min' && regle.forme !== 'limite_ou_recul') break;
      return distance(m.distance_limite_separative_min_m, 'distance aux limites séparatives');
    case 'voies':
      return distance(m.distance_voie_min_m, 'recul depuis la voie');
    case 'entre_constructions': {
      const ds = m.distances_batiments.map((b) => b.distance_m).filter((d) => d >= 0.05);
      return ds.length ? distance(Math.min(...ds), 'distance aux constructions existantes') : null;
    }
    case 'hauteur':
      if (
        regle.forme === 'plafond' &&
        regle.valeur !== null &&
        (regle.unite === null || /^m(etres?|ètres?)?$/i.test(regle.unite))
      ) {
        return fin(
          m.hauteur_m <= regle.valeur + 0.005,
          `hauteur d’au plus ${metres(regle.valeur)}`,
          regle.valeur,
          m.hauteur_m,
          'm',
        );
      }
      break;
    case 'emprise_sol':
      if (regle.forme === 'pourcentage_max' && regle.valeur !== null && c.aireParcelle > 0) {
        const pct = Math.round(((c.empriseExistante + c.empriseProjets) / c.aireParcelle) * 1000) / 10;
        return fin(
          pct <= regle.valeur + 0.05,
          `emprise au sol de ${regle.valeur} % de la parcelle au plus (existant et projets)`,
          regle.valeur,
          pct,
          '%',
        );
      }
      if (regle.forme === 'plafond' && regle.valeur !== null && /m²|m2/.test(regle.unite ?? '')) {
        const total = Math.round((c.empriseExistante + c.empriseProjets) * 100) / 100;
        return fin(
          total <= regle.valeur + 0.005,
          `emprise au sol de ${regle.valeur} m² au plus`,
          regle.valeur,
          total,
          'm²',
        );
      }
      break;
    case 'annexes':
      if (regle.forme === 'plafond' && regle.valeur !== null) {
        if (/m²|m2/.test(regle.unite ?? '')) {
          return fin(
            m.emprise_m2 <= regle.valeur + 0.005,
            `emprise d’au plus ${regle.valeur} m²`,
            regle.valeur,
            m.emprise_m2,
            'm²',
          );
        }
        return fin(
          m.hauteur_m <= regle.valeur + 0.005,
          `hauteur d’au plus ${metres(regle.valeur)}`,
          regle.valeur,
          m.hauteur_m,
          'm',
        );
      }
      return distance(m.distance_limite_separative_min_m, 'distance aux limites séparatives');
    default:
      break;
  }
  if (regle.forme === 'interdit' && regle.objets.length > 0) {
    return fin(false, 'construction interdite par le règlement', null, null, null);
  }
  return null;
}

/** The refusal a rule forbidding the project makes, if any. */
export function refusDe(verifications: Verification[]): { raison: string; a_confirmer: boolean } | null {
  const interdit = verifications.find((v) => v.forme === 'interdit' && v.statut !== 'respectee');
  if (!interdit) return null;
  return {
    raison: `${interdit.projet} : ${interdit.resume} (« ${interdit.citation} », ${interdit.article ? `article ${interdit.article}, ` : ''}page ${interdit.page}).`,
    a_confirmer: interdit.statut === 'a_confirmer',
  };
}

/** The alerts of the sketch: each rule not met, with its quotation, article and page. */
export function alertesDe(verifications: Verification[]): string[] {
  return verifications
    .filter((v) => v.statut === 'non_respectee')
    .map(
      (v) =>
        `${v.projet} : ${v.exigence} exigée, ${v.valeur_mesuree === null ? 'non mesurable' : `${v.valeur_mesuree.toLocaleString('fr-FR')} ${v.unite ?? ''}`.trim()} mesurés — « ${v.citation} » (${v.article ? `article ${v.article}, ` : ''}page ${v.page}).`,
    );
}
