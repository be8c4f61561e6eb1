import { createHash } from 'node:crypto';
import type { Db, Queryable } from '../../db/client.ts';
import { transaction } from '../../db/client.ts';
import { communeByCode, departementOf, isOutreMer } from '../communes.ts';
import { FRAIS_NOTAIRE, INTERDICTIONS, moisRestants } from '../estimation/operations.ts';
import { indicateurs } from '../marche/indicateurs.ts';
import type { Dataset } from '../platform/sandbox.ts';
import type { Classe, DetailsPortail, Dpe, Precision, TypeBien } from './format.ts';
import { ecrireEvenements, verrouillerJournal, type NouvelEvenement } from './journal.ts';

/**
 * The analysis of a listing (the `analyse` block): deterministic, computed by the server alone from what it holds (the
 * listing, its price history and property, the commune's DVF price scale, the rent indicators, the commune's market
 * indicators), never by a model. Its date is the time of the snapshot it reads (`analyse_le` = the listing's `vu_le`),
 * so the same listing in the same market always gets the same analysis.
 *
 * Each sub-score is on 0-100 (higher is better for the buyer), or null when its inputs are missing, said in `limites`.
 * Their methods are METHODES below, published in the operation's description. It is recomputed where its inputs
 * changed (their fingerprint, `analyse_empreinte`): after a listings import for the listings it touched, and after an
 * import of what it reads of the commune (DVF sales, rents, DPE: reanalyse.ts) for the active listings of the communes
 * concerned. The first analysis writes an `analyse` event, each later one a `reanalyse` event (with the score before
 * and after).
 */

export const SOUS_SCORES = [
  'localisation',
  'transport',
  'rentabilite',
  'potentiel',
  'etat',
  'marche',
  'fiscalite',
  'risques',
  'qualite_annonce',
] as const;
export type SousScore = (typeof SOUS_SCORES)[number];

/** Weights of the sub-scores in `score` (they add up to 100; the missing ones are left out and the rest rescaled). */
const POIDS: Record<SousScore, number> = {
  localisation: 15,
  transport: 5,
  rentabilite: 20,
  potentiel: 10,
  etat: 10,
  marche: 20,
  fiscalite: 5,
  risques: 10,
  qualite_annonce: 5,
};

/** Share of the rent left after charges, vacancy and management: the one estimer_bien uses. */
const PART_NETTE = 0.85;
const POINTS_DPE: Record<Classe, number> = { A: 100, B: 90, C: 75, D: 60, E: 40, F: 20, G: 5 };
const MOTS_TRAVAUX =
  /\b(?:a renover|travaux a prevoir|a rafraichir|gros travaux|a restaurer|renovation complete a prevoir|a remettre au gout du jour)\b/;
const MOTS_RENOVE =
  /\b(?:refait a neuf|refaite a neuf|entierement renove|entierement renovee|renovation recente|recemment renove|recemment renovee|renove en \d{4}|renovee en \d{4})\b/;

export const METHODES: Record<SousScore | 'score' | 'negociation' | 'verdict' | 'profil', string> = {
  score: `Moyenne des sous-scores disponibles pondérée (localisation ${POIDS.localisation}, transport ${POIDS.transport}, rentabilité ${POIDS.rentabilite}, potentiel ${POIDS.potentiel}, état ${POIDS.etat}, marché ${POIDS.marche}, fiscalité ${POIDS.fiscalite}, risques ${POIDS.risques}, qualité de l’annonce ${POIDS.qualite_annonce}), les poids des sous-scores null retirés ; null quand ni le marché ni la rentabilité ne peuvent être notés (le score ne reposerait que sur le texte de l’annonce).`,
  localisation:
    'Score d’attractivité de la commune (indicateurs du marché des communes : moyenne du rendement brut des appartements, de l’évolution des prix sur 3 ans et de la part de DPE hors F et G, chacun sur 0-100) ; à l’échelle de la commune, ni quartier ni rue. null sans indicateur.',
  transport: 'Toujours null : le service ne détient aucune donnée de desserte (gares, lignes, temps de trajet).',
  rentabilite: `Rendement net hors travaux = ${PART_NETTE * 100} % du loyer annuel estimé / (prix + ${FRAIS_NOTAIRE * 100} % de frais de notaire), le loyer étant le loyer d’annonce prédit de la commune (carte des loyers, charges comprises, T1-T2 ou T3 et plus selon les pièces, maison) × la surface ; 0 % → 0, 6 % ou plus → 100. null sans loyer de la commune, sans prix ou sans surface.`,
  potentiel:
    'Moyenne des composantes disponibles : évolution des prix de la commune sur 3 ans (−20 % → 0, +20 % → 100) ; pour une maison, terrain rapporté à la surface habitable (0 → 0, 5 fois ou plus → 100 ; terrain suspect écarté). null sans composante.',
  etat: 'Points de la classe DPE (A 100, B 90, C 75, D 60, E 40, F 20, G 5 ; un logement neuf sans DPE 95), puis −25 quand le texte annonce des travaux (« à rénover », « travaux à prévoir », « à rafraîchir »…) et +15 quand il annonce une rénovation (« refait à neuf », « entièrement rénové »…), borné à 0-100 ; 50 avant ces corrections quand il n’y a pas de DPE mais que le texte parle de l’état. null sans DPE ni mention de l’état. Les photos ne sont pas lues (`etat_visuel` null).',
  marche:
    'Écart du prix au m² (prix / surface) à la référence DVF de la commune pour le type (dernier millésime du barème de prix_commune : médiane des ventes d’un logement, estimée par les communes voisines quand les ventes sont peu nombreuses) : 50 − 2,5 × écart en %, borné à 0-100 (−20 % → 100, au prix → 50, +20 % → 0). null sans barème (Alsace-Moselle, Mayotte, DVF non importé, immeuble entier), sans prix ou sans surface.',
  fiscalite:
    'Poids de la taxe foncière dans le loyer annuel estimé : 5 % ou moins → 100, 25 % ou plus → 0, linéaire entre les deux. Le régime fiscal (micro-foncier, réel, LMNP) dépend du profil de l’investisseur et n’est pas noté. null sans taxe foncière ou sans loyer.',
  risques:
    'Part de 100, retranchée : calendrier d’interdiction de location de la classe DPE en métropole (G −50, F −35, E −15), procédure en cours dans la copropriété −30, charges annoncées suspectes −10, terrain suspect −10 ; borné à 0-100. Les risques naturels et technologiques ne sont pas détenus. null sans DPE ni information de copropriété.',
  qualite_annonce:
    'Complétude de l’annonce, sur 100 : prix 10, surface 10, pièces 5, chambres 5, DPE 15, photos 15 (7 de 1 à 4 photos), description 15 (7 de 80 à 299 caractères), position à l’adresse 10 (approchée 5), année de construction 5, taxe foncière 5, charges de copropriété 5 (comptées d’office pour une maison).',
  profil:
    '`travaux` quand l’état est noté sous 40 ou le DPE est F ou G ; sinon `rendement` dès 7 % de rendement brut ; sinon `patrimonial` quand la localisation est notée 60 ou plus ; sinon `equilibre` (null sans score).',
  verdict:
    'Selon le score : `excellente_affaire` dès 75, `bonne_affaire` dès 60, `correct` dès 45, `peu_interessant` en deçà ; null sans score. `recommandation` le dit en une phrase avec ses deux raisons principales.',
  negociation:
    'Décote visée = 3 % + la moitié de l’écart au-dessus de la référence de la commune + 2 % dès 90 jours en ligne (et 2 % de plus dès 180) + 4 % pour un DPE F ou G (2 % pour E) + 3 % quand le texte annonce des travaux + 1 % quand plusieurs agences vendent le bien − 2 % quand le prix a déjà baissé de 5 % ou plus ; bornée à 0-40 %. `cible_min` = prix × (1 − décote), arrondi à la centaine et borné entre 60 % et 100 % du prix ; `cible_max` = prix × (1 − décote / 2) ; `prix_reference` = référence de la commune × surface ; `arguments` : les leviers qui fondent la décote.',
};

/** What the analysis of one listing reads. */
export interface EntreesAnalyse {
  type: TypeBien;
  neuf: boolean;
  prix: number | null;
  surface: number | null;
  pieces: number | null;
  chambres: number | null;
  terrain_m2: number | null;
  terrain_suspect: boolean | null;
  dpe: Pick<Dpe, 'etiquette' | 'ges_statut'>;
  details: Partial<DetailsPortail> & { charges_suspectes: boolean | null };
  description: string | null;
  photos: number;
  precision: Precision;
  annee_construction: number | null;
  /** Days between the first publication and the snapshot analysed. */
  jours_en_ligne: number | null;
  /** The first price seen, and the price changes since, oldest first. */
  prix_initial: number | null;
  changements_prix: Array<{ le: string; prix: number }>;
  nb_agences: number;
  nb_portails: number;
  departement: string | null;
  /** The snapshot analysed (ISO 8601). */
  le: string;
}

/** What the analysis reads of the listing's commune. */
export interface ContexteCommune {
  reference: { prix_m2: number; millesime: number; label: 'mesure' | 'estime' | null; n_ventes: number } | null;
  raison_sans_reference: string | null;
  loyer: { loyer_m2: number; nature: string; edition: number; type: string } | null;
  score_commune: number | null;
  evolution_3_ans: number | null;
}

export interface Analyse {
  score: number | null;
  sous_scores: Record<SousScore, number | null>;
  profil: 'travaux' | 'rendement' | 'patrimonial' | 'equilibre' | null;
  verdict: 'excellente_affaire' | 'bonne_affaire' | 'correct' | 'peu_interessant' | null;
  recommandation: string | null;
  forces: string[];
  faiblesses: string[];
  leviers: string[];
  negociation: {
    cible_min: number | null;
    cible_max: number | null;
    decote_pct: number | null;
    prix_reference: number | null;
    arguments: string[];
  };
  prix_m2: number | null;
  reference_commune: { prix_m2: number; millesime: number; label: 'mesure' | 'estime' | null; n_ventes: number } | null;
  ecart_reference_pct: number | null;
  loyer: { mensuel: number; loyer_m2: number; nature: string; edition: number } | null;
  rendement_brut_pct: number | null;
  rendement_net_pct: number | null;
  budget_total: number | null;
  etat_visuel: number | null;
  jours_en_ligne: number | null;
  historique_prix: Array<{ le: string; prix: number }>;
  interdiction_location: string | null;
  mois_restants: number | null;
  limites: string[];
  analyse_le: string;
}

const borne = (x: number) => Math.max(0, Math.min(100, x));
const un = (x: number) => Math.round(x * 10) / 10;
const entier = (x: number) => Math.round(x);
const euros = (x: number) =>
  `${Math.round(x)
    .toLocaleString('fr-FR')
    .replace(/\u202f/g, ' ')} €`;
const pct = (x: number) => `${un(x).toLocaleString('fr-FR')} %`;

function plierTexte(t: string): string {
  return t.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase().replace(/['’]/g, ' ');
}

/** The DPE deadline of a class in mainland France as of a day; null for A-D, no DPE, or overseas. */
export function calendrierDpe(
  etiquette: Classe | null,
  departement: string | null,
  le: Date,
): { interdiction_location: string | null; mois_restants: number | null } {
  const interdiction = etiquette && departement && !isOutreMer(departement) ? (INTERDICTIONS[etiquette] ?? null) : null;
  return { interdiction_location: interdiction, mois_restants: interdiction ? moisRestants(le, interdiction) : null };
}

/** The analysis of one listing: a pure function of its inputs. */
export function analyser(e: EntreesAnalyse, c: ContexteCommune): Analyse {
  const limites: string[] = [];
  const texte = plierTexte(`${e.description ?? ''}`);
  const travaux = MOTS_TRAVAUX.test(texte);
  const renove = MOTS_RENOVE.test(texte);
  const le = new Date(e.le);
  const { interdiction_location, mois_restants } = calendrierDpe(e.dpe.etiquette, e.departement, le);

  const prixM2 = e.prix !== null && e.surface ? Math.round(e.prix / e.surface) : null;
  const ref = c.reference;
  const ecart = prixM2 !== null && ref ? un((prixM2 / ref.prix_m2 - 1) * 100) : null;
  const loyerMensuel = c.loyer && e.surface ? Math.round(c.loyer.loyer_m2 * e.surface) : null;
  const budget = e.prix !== null ? Math.round(e.prix * (1 + FRAIS_NOTAIRE)) : null;
  const brut = loyerMensuel !== null && e.prix ? un(((12 * loyerMensuel) / e.prix) * 100) : null;
  const net = loyerMensuel !== null && budget ? un(((PART_NETTE * 12 * loyerMensuel) / budget) * 100) : null;

  // Sub-scores.
  const s: Record<SousScore, number | null> = {
    localisation: c.score_commune === null ? null : entier(borne(c.score_commune)),
    transport: null,
    rentabilite: net === null ? null : entier(borne((net / 6) * 100)),
    potentiel: null,
    etat: null,
    marche: ecart === null ? null : entier(borne(50 - 2.5 * ecart)),
    fiscalite: null,
    risques: null,
    qualite_annonce: 0,
  };
  const terrainRatio =
    e.type === 'maison' && e.terrain_m2 !== null && e.surface && !e.terrain_suspect ? e.terrain_m2 / e.surface : null;
  const potentiels = [
    c.evolution_3_ans === null ? null : borne(((c.evolution_3_ans + 20) / 40) * 100),
    terrainRatio === null ? null : borne((terrainRatio / 5) * 100),
  ].filter((x): x is number => x !== null);
  s.potentiel = potentiels.length ? entier(potentiels.reduce((a, b) => a + b, 0) / potentiels.length) : null;

  const baseEtat = e.dpe.etiquette ? POINTS_DPE[e.dpe.etiquette] : e.neuf ? 95 : travaux || renove ? 50 : null;
  s.etat = baseEtat === null ? null : entier(borne(baseEtat - (travaux ? 25 : 0) + (renove ? 15 : 0)));

  const tf = e.details.taxe_fonciere ?? null;
  s.fiscalite = tf !== null && loyerMensuel ? entier(borne(((0.25 - tf / (12 * loyerMensuel)) / 0.2) * 100)) : null;

  const copro = e.details.procedure_copro ?? null;
  if (e.dpe.etiquette || copro !== null || e.details.charges_suspectes !== null) {
    let r = 100;
    if (interdiction_location) r -= { G: 50, F: 35, E: 15 }[e.dpe.etiquette as 'E' | 'F' | 'G'];
    if (copro) r -= 30;
    if (e.details.charges_suspectes) r -= 10;
    if (e.terrain_suspect) r -= 10;
    s.risques = entier(borne(r));
  }

  let q = 0;
  if (e.prix !== null) q += 10;
  if (e.surface !== null) q += 10;
  if (e.pieces !== null) q += 5;
  if (e.chambres !== null) q += 5;
  if (e.dpe.etiquette || e.dpe.ges_statut) q += 15;
  q += e.photos >= 5 ? 15 : e.photos > 0 ? 7 : 0;
  const longueur = e.description?.length ?? 0;
  q += longueur >= 300 ? 15 : longueur >= 80 ? 7 : 0;
  q += e.precision === 'adresse' ? 10 : e.precision === 'approchee' ? 5 : 0;
  if (e.annee_construction !== null) q += 5;
  if (tf !== null) q += 5;
  if (e.type === 'maison' || e.details.charges_copro_annuelles != null) q += 5;
  s.qualite_annonce = q;

  // Why a sub-score is null.
  if (s.localisation === null) limites.push('localisation : la commune n’a pas d’indicateurs de marché.');
  limites.push('transport : aucune donnée de desserte détenue.');
  if (s.rentabilite === null) {
    limites.push(
      c.loyer === null
        ? 'rentabilite : pas de loyer de référence pour la commune (carte des loyers non importée ou sans ce type).'
        : 'rentabilite : prix ou surface absents de l’annonce.',
    );
  }
  if (s.marche === null) {
    limites.push(
      ref === null
        ? `marche : ${c.raison_sans_reference ?? 'pas de barème de prix pour la commune et ce type.'}`
        : 'marche : prix ou surface absents de l’annonce.',
    );
  }
  if (s.potentiel === null) limites.push('potentiel : ni évolution des prix de la commune ni terrain connu.');
  if (s.etat === null) limites.push('etat : ni DPE ni mention de l’état dans le texte ; les photos ne sont pas lues.');
  if (s.fiscalite === null) limites.push('fiscalite : taxe foncière ou loyer de référence inconnus.');
  if (s.risques === null) limites.push('risques : ni DPE ni information de copropriété.');
  limites.push('risques naturels et technologiques (Géorisques) : non détenus.');
  limites.push('comparables DVF à l’adresse : non lus ici (estimer_bien les lit).');

  // The score.
  let score: number | null = null;
  if (s.marche !== null || s.rentabilite !== null) {
    let somme = 0;
    let poids = 0;
    for (const k of SOUS_SCORES) {
      if (s[k] === null) continue;
      somme += s[k]! * POIDS[k];
      poids += POIDS[k];
    }
    score = entier(somme / poids);
  } else {
    limites.push('score : ni le marché ni la rentabilité ne peuvent être notés.');
  }

  // Price history.
  const historique = e.changements_prix;
  const dernier = historique.at(-1)?.prix ?? e.prix;
  const baisseCumulee =
    e.prix_initial && dernier !== null && dernier < e.prix_initial ? un((1 - dernier / e.prix_initial) * 100) : 0;
  const baisses = historique.filter(
    (h, i) => h.prix < (i === 0 ? (e.prix_initial ?? Infinity) : historique[i - 1].prix),
  );

  // Levers, strengths, weaknesses.
  const leviers: string[] = [];
  if (ecart !== null && ecart > 5) leviers.push(`Prix au m² ${pct(ecart)} au-dessus de la référence de la commune.`);
  if (e.jours_en_ligne !== null && e.jours_en_ligne >= 90) leviers.push(`En ligne depuis ${e.jours_en_ligne} jours.`);
  if (baisses.length > 0) {
    leviers.push(`Prix déjà baissé ${baisses.length} fois (−${pct(baisseCumulee)} depuis le premier prix).`);
  }
  if (interdiction_location) {
    leviers.push(
      `Classe ${e.dpe.etiquette} : location interdite ${mois_restants === 0 ? 'depuis' : 'à partir du'} ${interdiction_location}.`,
    );
  }
  if (travaux) leviers.push('Travaux annoncés dans la description.');
  if (e.details.charges_suspectes)
    leviers.push('Charges de copropriété à vérifier : le montant annuel semble mensuel.');
  if (copro) leviers.push('Procédure en cours dans la copropriété.');
  if (e.nb_agences >= 2) leviers.push(`Bien proposé par ${e.nb_agences} vendeurs.`);

  const forces: string[] = [];
  const faiblesses: string[] = [];
  const dire = (note: number | null, force: string, faiblesse: string) => {
    if (note === null) return;
    if (note >= 65) forces.push(force);
    else if (note <= 35) faiblesses.push(faiblesse);
  };
  if (ecart !== null && ref) {
    const position = `Prix au m² ${ecart <= 0 ? `${pct(-ecart)} sous` : `${pct(ecart)} au-dessus de`} la référence DVF de la commune (${euros(ref.prix_m2)}/m², ${ref.millesime}).`;
    dire(s.marche, position, position);
  }
  if (net !== null) {
    dire(
      s.rentabilite,
      `Rendement net hors travaux estimé à ${pct(net)} (brut ${pct(brut!)}).`,
      `Rendement net hors travaux faible : ${pct(net)} (brut ${pct(brut!)}).`,
    );
  }
  if (s.localisation !== null) {
    dire(
      s.localisation,
      `Commune attractive (${s.localisation}/100).`,
      `Commune peu attractive (${s.localisation}/100).`,
    );
  }
  if (s.etat !== null) {
    const dpe = e.dpe.etiquette ? `DPE ${e.dpe.etiquette}` : 'sans DPE';
    dire(
      s.etat,
      `Bon état énergétique (${dpe}${renove ? ', rénové' : ''}).`,
      `État à reprendre (${dpe}${travaux ? ', travaux annoncés' : ''}).`,
    );
  }
  if (s.potentiel !== null) {
    const parts: string[] = [];
    if (c.evolution_3_ans !== null) {
      parts.push(
        `prix de la commune ${c.evolution_3_ans >= 0 ? 'en hausse' : 'en baisse'} de ${pct(Math.abs(c.evolution_3_ans))} sur 3 ans`,
      );
    }
    if (terrainRatio !== null)
      parts.push(
        `terrain de ${Math.round(e.terrain_m2!)} m² (${un(terrainRatio).toLocaleString('fr-FR')} fois la surface)`,
      );
    const texte = `Potentiel : ${parts.join(' ; ')}.`;
    dire(s.potentiel, texte, texte);
  }
  if (s.risques !== null && s.risques <= 35) faiblesses.push('Risques relevés (calendrier DPE, copropriété, charges).');
  if (s.qualite_annonce <= 40) faiblesses.push(`Annonce incomplète (${s.qualite_annonce}/100).`);
  else if (s.qualite_annonce >= 85) forces.push(`Annonce complète (${s.qualite_annonce}/100).`);

  // Negotiation.
  let negociation: Analyse['negociation'] = {
    cible_min: null,
    cible_max: null,
    decote_pct: null,
    prix_reference: ref && e.surface ? Math.round((ref.prix_m2 * e.surface) / 100) * 100 : null,
    arguments: leviers,
  };
  if (e.prix !== null) {
    let d = 3;
    if (ecart !== null && ecart > 0) d += ecart / 2;
    if (e.jours_en_ligne !== null && e.jours_en_ligne >= 90) d += 2;
    if (e.jours_en_ligne !== null && e.jours_en_ligne >= 180) d += 2;
    if (e.dpe.etiquette === 'F' || e.dpe.etiquette === 'G') d += 4;
    else if (e.dpe.etiquette === 'E') d += 2;
    if (travaux) d += 3;
    if (e.nb_agences >= 2) d += 1;
    if (baisseCumulee >= 5) d -= 2;
    d = un(Math.max(0, Math.min(40, d)));
    const min = Math.max(0.6 * e.prix, Math.min(e.prix, Math.round((e.prix * (1 - d / 100)) / 100) * 100));
    negociation = {
      ...negociation,
      cible_min: min,
      cible_max: Math.round((e.prix * (1 - d / 200)) / 100) * 100,
      decote_pct: d,
    };
  }

  // Profile, verdict, recommendation.
  let profil: Analyse['profil'] = null;
  let verdict: Analyse['verdict'] = null;
  let recommandation: string | null = null;
  if (score !== null) {
    profil =
      (s.etat !== null && s.etat < 40) || e.dpe.etiquette === 'F' || e.dpe.etiquette === 'G'
        ? 'travaux'
        : brut !== null && brut >= 7
          ? 'rendement'
          : s.localisation !== null && s.localisation >= 60
            ? 'patrimonial'
            : 'equilibre';
    verdict =
      score >= 75 ? 'excellente_affaire' : score >= 60 ? 'bonne_affaire' : score >= 45 ? 'correct' : 'peu_interessant';
    // Two reasons, never twice the same subject (a weakness and a lever may both be the price per m²).
    const sujet = (r: string) => r.split(' ').slice(0, 3).join(' ');
    const raisons: string[] = [];
    for (const r of [...(score >= 60 ? forces : faiblesses), ...leviers]) {
      if (raisons.length < 2 && !raisons.some((x) => sujet(x) === sujet(r))) raisons.push(r.replace(/\.$/, ''));
    }
    const action =
      score >= 70
        ? 'Visiter rapidement'
        : score >= 55
          ? 'Visiter et négocier'
          : score >= 45
            ? 'Négocier fermement avant de visiter'
            : 'Passer son chemin, sauf projet particulier';
    recommandation = `${action} (score ${score}/100${negociation.cible_min !== null ? `, offre à partir de ${euros(negociation.cible_min)}` : ''})${raisons.length ? ` : ${raisons.join(' ; ')}` : ''}.`;
  }

  return {
    score,
    sous_scores: s,
    profil,
    verdict,
    recommandation,
    forces,
    faiblesses,
    leviers,
    negociation,
    prix_m2: prixM2,
    reference_commune: ref,
    ecart_reference_pct: ecart,
    loyer:
      c.loyer && loyerMensuel !== null
        ? { mensuel: loyerMensuel, loyer_m2: c.loyer.loyer_m2, nature: c.loyer.nature, edition: c.loyer.edition }
        : null,
    rendement_brut_pct: brut,
    rendement_net_pct: net,
    budget_total: budget,
    etat_visuel: null,
    jours_en_ligne: e.jours_en_ligne,
    historique_prix: historique,
    interdiction_location,
    mois_restants,
    limites,
    analyse_le: e.le,
  };
}

/**
 * The fingerprint of an analysis's inputs: the analysis is computed again only when it changes. The days online
 * count in steps (under 90, under 180, beyond), the thresholds the analysis reads them by, so that a new snapshot of
 * an unchanged listing does not make a new analysis every day.
 */
export function empreinte(e: EntreesAnalyse, c: ContexteCommune): string {
  const jours = e.jours_en_ligne === null ? null : e.jours_en_ligne < 90 ? 0 : e.jours_en_ligne < 180 ? 1 : 2;
  const { le, jours_en_ligne: _, ...stables } = e;
  const interdiction = calendrierDpe(e.dpe.etiquette, e.departement, new Date(le)).mois_restants === 0;
  return createHash('sha256')
    .update(JSON.stringify({ v: 1, stables, jours, interdiction, c }))
    .digest('base64url')
    .slice(0, 22);
}

// ---------------------------------------------------------------------------------------------------------------------
// Reading the context, and the pass after an import.
// ---------------------------------------------------------------------------------------------------------------------

/** The commune's context of a listing of `type` with `pieces` rooms, from its market indicators. */
export async function contexteCommune(
  db: Queryable,
  dataset: Dataset,
  insee: string | null,
  type: TypeBien,
  pieces: number | null,
  cache: Map<string, Awaited<ReturnType<typeof indicateurs>>>,
): Promise<ContexteCommune> {
  if (!insee) {
    return {
      reference: null,
      raison_sans_reference: 'commune de l’annonce inconnue.',
      loyer: null,
      score_commune: null,
      evolution_3_ans: null,
    };
  }
  if (!cache.has(insee)) cache.set(insee, await indicateurs(db, dataset, insee));
  const i = cache.get(insee)!;
  const item = type === 'immeuble' ? null : (i?.prix[type] ?? null);
  const reference =
    item && item.prix_m2 !== null
      ? { prix_m2: item.prix_m2, millesime: item.millesime, label: item.label, n_ventes: item.n_ventes }
      : null;
  const typesLoyer =
    type === 'maison'
      ? (['maison'] as const)
      : pieces !== null && type === 'appartement'
        ? ([pieces <= 2 ? 'appartement_t1_t2' : 'appartement_t3_plus', 'appartement'] as const)
        : (['appartement'] as const);
  const l = typesLoyer.map((t) => i?.loyers[t]).find((x) => x !== undefined) ?? null;
  return {
    reference,
    raison_sans_reference: reference
      ? null
      : type === 'immeuble'
        ? 'pas de barème DVF pour un immeuble entier.'
        : (i?.absence ??
          'aucune vente DVF de ce type dans la commune ni chez ses voisines sur les millésimes détenus.'),
    loyer: l ? { loyer_m2: l.loyer_m2, nature: l.nature, edition: l.edition, type: l.type_logement } : null,
    score_commune: i?.score ?? null,
    evolution_3_ans: i?.evolution3Ans ?? null,
  };
}

interface LigneAnalyse {
  id: string;
  bien_uid: string;
  type: TypeBien;
  neuf_ancien: string | null;
  prix: number | null;
  surface: number | null;
  pieces: number | null;
  chambres: number | null;
  terrain_portail_m2: number | null;
  dpe: Dpe;
  details_portail: Partial<DetailsPortail>;
  description: string | null;
  photos: string[];
  precision_position: Precision;
  annee_construction: number | null;
  premiere_parution: string | null;
  vu_le: Date;
  insee: string | null;
  code_postal: string | null;
  departement: string | null;
  analyse: Analyse | null;
  analyse_empreinte: string | null;
}

/** A house whose land is smaller than its living area: the portal most likely wrote one for the other. */
export function terrainSuspect(type: TypeBien, terrain: number | null, surface: number | null): boolean | null {
  if (type !== 'maison' || terrain === null || surface === null) return null;
  return terrain < surface;
}

/**
 * Yearly condominium charges that look monthly: under 6 € per m² and year (real charges run from about 15 to 60), or
 * under 600 € a year when the surface is unknown.
 */
export function chargesSuspectes(
  type: TypeBien,
  details: Partial<DetailsPortail>,
  surface: number | null,
): boolean | null {
  const charges = details.charges_copro_annuelles ?? null;
  if (charges === null || (type !== 'appartement' && details.en_copro !== true)) return null;
  return surface ? charges / surface < 6 : charges < 600;
}

const JOUR_MS = 86_400_000;

/** Listings analysed in one transaction. */
const LOT_ANALYSE = 200;

/**
 * Analyses the listings `ids` again where their inputs changed, and writes the events: `analyse` the first time,
 * `reanalyse` after. Returns how many analyses were written and events appended.
 *
 * Called after each import that changes the inputs: the listings importer for the listings it touched, the importers
 * of what the analysis reads of the commune (reanalyse.ts) for the active listings of the communes they changed; they
 * may run at once. So each batch reads the listings and their commune's context, compares the fingerprints and writes
 * in one transaction that holds the journal's lock from its first statement (journal.ts, as the listings importer
 * does): two passes never both write the `reanalyse` of one change, nor does a pass that read a listing before a
 * snapshot changed it write its analysis over the newer one. The context is read under the lock too, and kept for the
 * batch only: an importer commits its data before its own pass takes the lock, so whichever pass comes last has read
 * it.
 */
export async function analyserAnnonces(
  db: Db,
  dataset: Dataset,
  ids: string[],
): Promise<{ analysees: number; evenements: number }> {
  let analysees = 0;
  let evenements = 0;
  for (let i = 0; i < ids.length; i += LOT_ANALYSE) {
    const lot = ids.slice(i, i + LOT_ANALYSE);
    const fait = await transaction(db, async (client) => {
      await verrouillerJournal(client, dataset);
      return analyserLot(client, dataset, lot);
    });
    analysees += fait.analysees;
    evenements += fait.evenements;
  }
  return { analysees, evenements };
}

/**
 * `client` for a reader that sends its statements at once (the commune's indicators read their tables in parallel):
 * one after the other, as one connection takes them. On the pool they would need more connections than the one this
 * batch holds, and a caller holding the others would leave it waiting.
 */
function enSerie(client: Queryable): Queryable {
  let file: Promise<unknown> = Promise.resolve();
  const query = (...args: unknown[]) => {
    const suite = file.then(() => (client.query as (...a: unknown[]) => Promise<unknown>)(...args));
    file = suite.catch(() => {});
    return suite;
  };
  return { query } as Queryable;
}

/** One batch of analyserAnnonces, in its transaction, under the journal's lock. */
async function analyserLot(
  client: Queryable,
  dataset: Dataset,
  lot: string[],
): Promise<{ analysees: number; evenements: number }> {
  const cache = new Map<string, Awaited<ReturnType<typeof indicateurs>>>();
  const lecteur = enSerie(client);
  const { rows } = await client.query<LigneAnalyse>(
    `SELECT id, bien_uid, type, neuf_ancien, prix, surface, pieces, chambres, terrain_portail_m2, dpe,
            details_portail, description, photos, precision_position, annee_construction,
            to_char(premiere_parution, 'YYYY-MM-DD') AS premiere_parution, vu_le, insee, code_postal, departement,
            resultat_analyse AS analyse, analyse_empreinte
       FROM annonces WHERE dataset = $1 AND id = ANY($2::text[]) ORDER BY id`,
    [dataset, lot],
  );
  if (rows.length === 0) return { analysees: 0, evenements: 0 };
  const historiques = await client.query<{ annonce_id: string; le: Date; avant: number | null; apres: number }>(
    `SELECT annonce_id, le, (avant->>'prix')::float8 AS avant, (apres->>'prix')::float8 AS apres
       FROM annonces_evenements
      WHERE dataset = $1 AND annonce_id = ANY($2::text[]) AND genre IN ('baisse_prix', 'hausse_prix')
      ORDER BY id`,
    [dataset, lot],
  );
  const biens = await client.query<{ bien_uid: string; nb_agences: number; nb_portails: number }>(
    `SELECT bien_uid, count(DISTINCT vendeur_cle) FILTER (WHERE statut = 'actif')::int AS nb_agences,
            count(DISTINCT portail) FILTER (WHERE statut = 'actif')::int AS nb_portails
       FROM annonces WHERE dataset = $1 AND bien_uid = ANY($2::text[]) GROUP BY bien_uid`,
    [dataset, [...new Set(rows.map((r) => r.bien_uid))]],
  );
  const ecrire: Array<{ id: string; analyse: Analyse; empreinte: string }> = [];
  const nouveaux: NouvelEvenement[] = [];
  for (const r of rows) {
    const changements = historiques.rows.filter((h) => h.annonce_id === r.id);
    const bien = biens.rows.find((b) => b.bien_uid === r.bien_uid);
    const terrainS = terrainSuspect(r.type, r.terrain_portail_m2, r.surface);
    const entrees: EntreesAnalyse = {
      type: r.type,
      neuf: r.neuf_ancien === 'neuf',
      prix: r.prix,
      surface: r.surface,
      pieces: r.pieces,
      chambres: r.chambres,
      terrain_m2: terrainS ? null : r.terrain_portail_m2,
      terrain_suspect: terrainS,
      dpe: { etiquette: r.dpe.etiquette ?? null, ges_statut: r.dpe.ges_statut ?? null },
      details: { ...r.details_portail, charges_suspectes: chargesSuspectes(r.type, r.details_portail, r.surface) },
      description: r.description,
      photos: r.photos.length,
      precision: r.precision_position,
      annee_construction: r.annee_construction,
      jours_en_ligne: r.premiere_parution
        ? Math.max(0, Math.floor((r.vu_le.getTime() - Date.parse(`${r.premiere_parution}T00:00:00Z`)) / JOUR_MS))
        : null,
      prix_initial: changements[0]?.avant ?? r.prix,
      changements_prix: changements.map((h) => ({ le: h.le.toISOString(), prix: h.apres })),
      nb_agences: Math.max(1, bien?.nb_agences ?? 1),
      nb_portails: Math.max(1, bien?.nb_portails ?? 1),
      departement: r.departement ?? (r.insee ? (communeByCode(r.insee)?.departement ?? departementOf(r.insee)) : null),
      le: r.vu_le.toISOString(),
    };
    const contexte = await contexteCommune(lecteur, dataset, r.insee, r.type, r.pieces, cache);
    const signe = empreinte(entrees, contexte);
    if (signe === r.analyse_empreinte) continue;
    const analyse = analyser(entrees, contexte);
    ecrire.push({ id: r.id, analyse, empreinte: signe });
    const ou = { annonceId: r.id, insee: r.insee, codePostal: r.code_postal, departement: r.departement };
    if (!r.analyse) {
      nouveaux.push({
        ...ou,
        genre: 'analyse',
        le: analyse.analyse_le,
        avant: null,
        apres: { analyse_le: analyse.analyse_le, score: analyse.score },
      });
    } else {
      nouveaux.push({
        ...ou,
        genre: 'reanalyse',
        le: analyse.analyse_le,
        avant: { analyse_le: r.analyse.analyse_le, score: r.analyse.score },
        apres: { analyse_le: analyse.analyse_le, score: analyse.score },
      });
    }
  }
  if (ecrire.length === 0) return { analysees: 0, evenements: 0 };
  await client.query(
    `UPDATE annonces a SET resultat_analyse = r.resultat, analyse_empreinte = r.empreinte, analyse_le = r.analyse_le
       FROM jsonb_to_recordset($2::jsonb) AS r(id text, resultat jsonb, empreinte text, analyse_le timestamptz)
      WHERE a.dataset = $1 AND a.id = r.id`,
    [
      dataset,
      JSON.stringify(
        ecrire.map((x) => ({
          id: x.id,
          resultat: x.analyse,
          empreinte: x.empreinte,
          analyse_le: x.analyse.analyse_le,
        })),
      ),
    ],
  );
  await ecrireEvenements(client, dataset, nouveaux);
  return { analysees: ecrire.length, evenements: nouveaux.length };
}
