import { CATEGORIES_SENSIBLES, categorieSensible, type CategorieSensible } from './donnees-sensibles.ts';
import { AVANT_UN_LIEU, reperesCoordonnees, type SorteCoordonnee } from './masquage.ts';

/** Texts served to others are masked by `masquage.ts`; re-exported for the callers that know it from here. */
export { masquerCoordonnees } from './masquage.ts';

/**
 * Rules of the account memory, shared by POST /compte/memoire and the Hub: what a fact is once normalised (for
 * deduplication), which facts are refused and why, and the two figures a fact may carry into the investor profile
 * (TMI and down payment). Pure logic: no database, no clock.
 *
 * The refusals are deliberately precise rather than broad: a false refusal loses an ordinary investment fact, so each
 * rule looks for a marker of the category (a personal statement, a number that validates, a capitalised name) and
 * not for a loose keyword that real-estate vocabulary also uses ("syndic", "porte condamnée", "exposé sud").
 * Sensitive categories (GDPR art. 9 and 10) live in `donnees-sensibles.ts`.
 */

/** Facts kept per account; beyond it, the oldest drop out. */
export const MEMOIRE_PLAFOND = 50;
export const FAIT_LONGUEUR_MIN = 3;
export const FAIT_LONGUEUR_MAX = 500;
/** Marginal income-tax brackets of the French scale. */
export const TMI_TRANCHES = [0, 11, 30, 41, 45] as const;
export type TrancheTmi = (typeof TMI_TRANCHES)[number];
/** Same bound as the profile field `apport_eur`. */
export const APPORT_MAX_EUR = 100_000_000;

export type CategorieRefus =
  | CategorieSensible
  | 'bancaire'
  | 'securite_sociale'
  | 'secret'
  | 'telephone'
  | 'courriel'
  | 'adresse_postale'
  | 'tiers_nomme';

export interface Refus {
  categorie: CategorieRefus;
  motif: string;
}

export const MOTIFS_REFUS: Record<CategorieRefus, string> = {
  sante:
    'Donnée de santé (maladie, handicap, addiction, grossesse, soins) : catégorie sensible (RGPD, art. 9), non conservée.',
  religion: 'Conviction religieuse ou philosophique : catégorie sensible (RGPD, art. 9), non conservée.',
  politique: 'Opinion politique : catégorie sensible (RGPD, art. 9), non conservée.',
  syndicat: 'Appartenance syndicale : catégorie sensible (RGPD, art. 9), non conservée.',
  orientation_sexuelle: 'Vie ou orientation sexuelle : catégorie sensible (RGPD, art. 9), non conservée.',
  origine: 'Origine raciale ou ethnique : catégorie sensible (RGPD, art. 9), non conservée.',
  genetique_biometrique: 'Donnée génétique ou biométrique : catégorie sensible (RGPD, art. 9), non conservée.',
  penal: 'Condamnation, infraction ou mesure pénale (RGPD, art. 10) : non conservée.',
  bancaire: 'Coordonnées bancaires (IBAN, numéro de carte ou de compte) : jamais conservées.',
  securite_sociale: 'Numéro de sécurité sociale : jamais conservé.',
  secret: 'Mot de passe ou code secret : jamais conservé.',
  telephone: 'Coordonnée (numéro de téléphone) : non conservée.',
  courriel: 'Coordonnée (adresse électronique) : non conservée.',
  adresse_postale: "Coordonnée (adresse postale d'une personne) : non conservée.",
  tiers_nomme: "Donnée d'un tiers nommé : seuls les faits qui vous concernent sont conservés, sans nommer personne.",
};

/** Two views of a text: `casse` keeps the case (capitalised names), `plie` is lower-cased; both without accents. */
interface Vues {
  casse: string;
  plie: string;
  /** The contacts the one masking of contacts finds in the text as written (domain/compte/masquage.ts). */
  contacts: SorteCoordonnee[];
}

function sansAccents(texte: string): string {
  return texte
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .replace(/œ/g, 'oe')
    .replace(/Œ/g, 'OE')
    .replace(/æ/g, 'ae')
    .replace(/Æ/g, 'AE')
    .replace(/[’‘ʼ`´]/g, "'")
    .replace(/[\s\u00a0\u202f]+/g, ' ')
    .trim();
}

function vues(texte: string): Vues {
  const casse = sansAccents(texte);
  return { casse, plie: casse.toLowerCase(), contacts: reperesCoordonnees(texte).map((c) => c.sorte) };
}

/** The text as stored and shown: whitespace collapsed, trimmed, wording and case kept. */
export function nettoyerFait(fait: string): string {
  return fait.replace(/[\s\u00a0\u202f]+/g, ' ').trim();
}

/**
 * Deduplication key: "Je préfère l'ancien." and "je prefere l’ancien" are one fact. Case, accents, typographic
 * apostrophes, spacing (also inside numbers and before French punctuation: "200 000 €" = "200000€", "TMI : 30 %" =
 * "TMI: 30%"), wrapping quotes, a leading bullet and the final punctuation do not make a new fact.
 */
export function normaliserFait(fait: string): string {
  return sansAccents(fait)
    .toLowerCase()
    .replace(/(\d) (?=\d)/g, '$1')
    .replace(/ (?=[%€:;!?,.)])/g, '')
    .replace(/^[-•*–—]\s*/, '')
    .replace(/^["'«»“”\s]+|["'«»“”\s]+$/g, '')
    .replace(/[\s.!?;:,…]+$/, '')
    .replace(/^["'«»“”\s]+|["'«»“”\s]+$/g, '')
    .trim();
}

// ---------------------------------------------------------------------------------------------------------------
// Secrets and identifiers.

const SECRET = new RegExp(
  [
    String.raw`\b(?:mots? de passe|mdp|password|passwd|code pin|code secret|code confidentiel|identifiants? de connexion)\b`,
    String.raw`\b(?:digicode|code (?:de la )?(?:porte|portail|d'acces|d'entree))\s*(?::|est|=)?\s*[0-9a-z]*\d{3,}`,
  ].join('|'),
);

function chiffres(texte: string): string {
  return texte.replace(/\D/g, '');
}

function luhnValide(numero: string): boolean {
  let somme = 0;
  for (let i = 0; i < numero.length; i++) {
    let d = Number(numero[numero.length - 1 - i]);
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    somme += d;
  }
  return somme % 10 === 0;
}

function ibanValide(iban: string): boolean {
  const reordonne = iban.slice(4) + iban.slice(0, 4);
  let reste = 0;
  for (const c of reordonne) {
    const valeur = /\d/.test(c) ? c : String(c.charCodeAt(0) - 55);
    for (const d of valeur) reste = (reste * 10 + Number(d)) % 97;
  }
  return reste === 1;
}

function bancaire({ casse, plie }: Vues): boolean {
  const majuscules = casse.toUpperCase();
  const motCleBancaire = /\b(?:iban|rib|bic|swift|bancaire|virement|compte)\b/.test(plie);
  for (const m of majuscules.matchAll(/\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b/g)) {
    const iban = m[0].replace(/ /g, '');
    if (iban.length >= 14 && (ibanValide(iban) || motCleBancaire)) return true;
  }
  const motCleCarte = /\b(?:carte|cb|visa|mastercard|amex|american express)\b/.test(plie);
  // A SIRET is 14 digits that pass Luhn too: a company number is no bank detail.
  const siret = /\bsire[tn]\b/.test(plie);
  for (const m of plie.matchAll(/(?<![\d])\d(?:[ -]?\d){12,18}(?![\d])/g)) {
    const numero = chiffres(m[0]);
    if ((luhnValide(numero) && !siret) || motCleCarte) return true;
  }
  if (/\b(?:cryptogramme|cvv|cvc)\b/.test(plie)) return true;
  return (
    /\b(?:numero|n°|no) de (?:compte|carte)\b[^\d]{0,20}\d{5,}/.test(plie) ||
    /\b(?:iban|rib)\b\s*(?::|est|=)/.test(plie)
  );
}

function nirValide(nir: string): boolean {
  const corps = nir.slice(0, 13).replace(/2A/i, '19').replace(/2B/i, '18');
  const cle = Number(nir.slice(13));
  return 97 - Number(BigInt(corps) % 97n) === cle;
}

function securiteSociale({ plie }: Vues): boolean {
  const motCle = /\b(?:securite sociale|secu|nir|carte vitale|numero d'assure)\b/.test(plie);
  const nir = /(?<![\d])[12] ?\d{2} ?(?:0[1-9]|1[0-2]|[2-9]\d) ?(?:\d{2}|2a|2b) ?\d{3} ?\d{3}(?: ?\d{2})?(?![\d])/g;
  for (const m of plie.matchAll(nir)) {
    const valeur = m[0].replace(/ /g, '').toUpperCase();
    if (motCle || (valeur.length === 15 && nirValide(valeur))) return true;
  }
  return motCle && /\d(?:[ .]?\d){12,14}/.test(plie);
}

// ---------------------------------------------------------------------------------------------------------------
// Contact details.

const NUMERO_DE_VOIE = String.raw`\b\d{1,4} ?(?:bis|ter)?,? (?:rue|avenue|av|boulevard|bd|chemin|impasse|allee|place|quai|route|cours|square|passage|lotissement|residence|voie|sentier|cite|hameau|lieu-dit|lieudit|rond-point|esplanade|promenade|villa|parvis|faubourg|mail)\b`;
const MARQUEUR_DOMICILE = String.raw`\b(?:j'habite|habite|habitons|habitent|habitez|habitait|je vis|vivons|vit|vivent|je reside|reside|residons|domiciliee?s?|domicile|demeurant|demeure|mon adresse|notre adresse|son adresse|leur adresse|adresse personnelle|(?:ma|notre|sa|leur) residence principale|chez moi|chez nous|chez (?:mon|ma|mes|lui|elle|eux))\b`;
const ADRESSE_DE_PERSONNE = new RegExp(
  `${MARQUEUR_DOMICILE}.{0,60}${NUMERO_DE_VOIE}|${NUMERO_DE_VOIE}.{0,60}${MARQUEUR_DOMICILE}`,
);
const ADRESSE_DECLAREE =
  /\b(?:mon|notre|son|leur) adresse (?!e-?mail|mail|electronique|courriel|ip\b)(?:(?:postale|personnelle|perso) )?(?::|est|=|c'est) ?\S/;

// ---------------------------------------------------------------------------------------------------------------
// Named third parties.

const RELATIONS =
  '(?:frere|soeur|pere|mere|fils|fille|femme|mari|epouse|epoux|conjointe?|compagnon|compagne|concubine?|partenaire|amie?|copain|copine|associee?|collegue|voisine?|oncle|tante|cousine?|neveu|niece|grand-pere|grand-mere|beau-pere|belle-mere|beau-frere|belle-soeur|gendre|bru|belle-fille|beau-fils|petit-fils|petite-fille|filleule?|parrain|marraine|enfant|fiancee?|ex|locataire)s?';
const POSSESSIFS = '(?:[Mm]on|[Mm]a|[Mm]es|[Nn]otre|[Nn]os|[Ss]on|[Ss]a|[Ss]es|[Ll]eurs?)';
const ADJECTIFS =
  '(?:(?:petit|petite|grand|grande|meilleur|meilleure|ancien|ancienne|futur|future|nouveau|nouvelle|jeune|cher|chere|demi-frere|demi-soeur) )?';
/** Capitalised words that start place names or clauses, not people: "mon frère, En ce moment ..." is no name. */
const PAS_UN_NOM =
  "(?!(?:La|Le|Les|L'|De|Du|Des|D'|En|Et|A|Au|Aux|Dans|Sur|Pour|Avec|Chez|Saint|Sainte|St|Ste|Mais|Je|Il|Elle|On|Nous|Vous|Ils|Elles)\\b)";
const NOM = `${PAS_UN_NOM}[A-Z][A-Za-z'-]+`;

const RELATION_PUIS_NOM = new RegExp(
  `(?<![A-Za-z])${POSSESSIFS} ${ADJECTIFS}${RELATIONS}\\b ?,? ?(?:(?:qui )?s'appell(?:e|ent) |(?:nommee?|prenommee?|appelee?) )?${NOM}`,
);
const NOM_PUIS_RELATION = new RegExp(
  `(?<![A-Za-z])${NOM} [A-Z][A-Za-z'-]+ ?,? ?(?:qui est |est |c'est )?(?:mon|ma|notre|son|sa|leur) ${ADJECTIFS}${RELATIONS}\\b`,
);
const CIVILITE = new RegExp(
  `(?<![A-Za-z])(?:M\\.|MM\\.|Mr\\.?|Mrs\\.?|Mme\\.?|Mmes|Mlle\\.?|Mlles|[Mm]onsieur|[Mm]adame|[Mm]ademoiselle|[Mm]aitre|Me|Dr\\.?|[Dd]octeur|Pr\\.?|[Pp]rofesseur) ${NOM}`,
  'g',
);
function tiersNomme({ casse }: Vues): boolean {
  if (RELATION_PUIS_NOM.test(casse) || NOM_PUIS_RELATION.test(casse)) return true;
  for (const m of casse.matchAll(CIVILITE)) {
    if (!AVANT_UN_LIEU.test(casse.slice(Math.max(0, m.index - 25), m.index))) return true;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------------------------

/** Checked in this order: the first category found is the reason given. */
const REGLES: { categories: readonly CategorieRefus[]; trouve: (v: Vues) => CategorieRefus | null }[] = [
  si('securite_sociale', securiteSociale),
  si('bancaire', bancaire),
  si('secret', ({ plie }) => SECRET.test(plie)),
  { categories: CATEGORIES_SENSIBLES, trouve: ({ plie }) => categorieSensible(plie) },
  si('courriel', ({ contacts }) => contacts.includes('courriel')),
  // A messaging link (wa.me, t.me) reaches the person as a telephone does.
  si('telephone', ({ contacts }) => contacts.includes('telephone') || contacts.includes('contact_web')),
  si('adresse_postale', ({ plie }) => ADRESSE_DE_PERSONNE.test(plie) || ADRESSE_DECLAREE.test(plie)),
  si('tiers_nomme', tiersNomme),
];

function si(categorie: CategorieRefus, trouve: (v: Vues) => boolean) {
  return { categories: [categorie], trouve: (v: Vues) => (trouve(v) ? categorie : null) };
}

function refuser(texte: string, categories: readonly CategorieRefus[] | null): Refus | null {
  const v = vues(texte);
  for (const regle of REGLES) {
    if (categories && !regle.categories.some((c) => categories.includes(c))) continue;
    const categorie = regle.trouve(v);
    if (categorie) return { categorie, motif: MOTIFS_REFUS[categorie] };
  }
  return null;
}

/** Why a candidate fact may not be kept, or null when it may. */
export function classerFait(fait: string): Refus | null {
  return refuser(fait, null);
}

/** Telephone numbers and e-mail addresses only: for texts that are addresses of places, where street names may carry a civility. */
export function coordonneesDans(texte: string): Refus | null {
  return refuser(texte, ['courriel', 'telephone']);
}

// ---------------------------------------------------------------------------------------------------------------
// Figures carried into the investor profile.

const SUITE_DE_NOMBRE = String.raw`(?![\d]|[ .]\d{3})\s*(?:%|pour ?cent)?`;
const TMI_MOTIFS = [
  new RegExp(String.raw`\btmi\b[^\d%,;.]{0,25}?(\d{1,2})${SUITE_DE_NOMBRE}`),
  new RegExp(
    String.raw`\b(?:taux|tranche) marginale?(?: d'imposition| d'impot| de l'impot| fiscale| d'ir)?[^\d%,;.]{0,15}?(\d{1,2})${SUITE_DE_NOMBRE}`,
  ),
  new RegExp(
    String.raw`\btranche (?:d'imposition|d'impot|de l'impot|fiscale|d'ir)[^\d%,;.]{0,15}?(\d{1,2})${SUITE_DE_NOMBRE}`,
  ),
  /\b(?:dans la|en) tranche (?:a |de |des )?(\d{1,2}) ?(?:%|pour ?cent)/,
  /\bimposee?s? (?:a|dans la tranche (?:a|de|des)) (\d{1,2}) ?(?:%|pour ?cent)/,
];
const NON_IMPOSABLE =
  /\b(?:je ne suis pas|nous ne sommes pas|je suis non|nous sommes non|foyer non|foyer fiscal non|on n'est pas) imposables?\b/;

/** The marginal tax bracket stated in a fact (0, 11, 30, 41 or 45), or null. A rate off the scale is not a TMI. */
export function extraireTmi(fait: string): TrancheTmi | null {
  const { plie } = vues(fait);
  for (const motif of TMI_MOTIFS) {
    const m = motif.exec(plie);
    if (!m) continue;
    const valeur = Number(m[1]);
    if ((TMI_TRANCHES as readonly number[]).includes(valeur)) return valeur as TrancheTmi;
  }
  return NON_IMPOSABLE.test(plie) ? 0 : null;
}

const MONTANT =
  /(?<![\d,.])(\d{1,3}(?:[ .]\d{3})+(?!\d)|\d+)(?:,(\d+)|\.(\d{1,2})(?!\d))? ?(keur|k|millions?|mille|m(?= ?€| ?eur| |$))? ?(€|euros?(?![a-z])|eur(?![a-z]))? ?(%|pour ?cent)?/g;
const APPORT_APRES = /^ ?(?:d'|en |comme |de |pour )?(?:mon |l'|un |notre )?apports?\b/;
const APPORT_AVANT = /\b(?:apports?(?: personnel)?|j'apporte|apporter(?:ai|ons)?|apporterons)\b/g;
/** A clause boundary: an amount after it belongs to another statement ("apport de 20 %, budget 200 000 €"). */
const FIN_DE_PROPOSITION = /[;!?]|, |\. |\b(?:et|budget|prix|mais|loyer|revenus?|salaire)\b/;
const SANS_APPORT = /\b(?:sans|pas d'|aucun|zero|0 ?€? d') ?apport\b/;

function valeurMontant(m: RegExpExecArray | RegExpMatchArray): number | null {
  const [, entier, decimalesVirgule, decimalesPoint, multiplicateur, devise, pourcent] = m;
  if (pourcent) return null;
  const decimales = decimalesVirgule ?? decimalesPoint ?? '';
  let valeur = Number(`${entier.replace(/[ .]/g, '')}.${decimales || '0'}`);
  if (multiplicateur === 'k' || multiplicateur === 'keur' || multiplicateur === 'mille') valeur *= 1_000;
  else if (multiplicateur) valeur *= 1_000_000;
  if (!multiplicateur && !devise && valeur < 1_000) return null;
  valeur = Math.round(valeur);
  return valeur <= APPORT_MAX_EUR ? valeur : null;
}

/** The down payment in euros stated in a fact ("apport de 50 000 €", "50k€ d'apport", "sans apport" = 0), or null. */
export function extraireApport(fait: string): number | null {
  const { plie } = vues(fait);
  const motsCles = [...plie.matchAll(APPORT_AVANT)];
  for (const m of plie.matchAll(MONTANT)) {
    const valeur = valeurMontant(m);
    if (valeur === null) continue;
    if (APPORT_APRES.test(plie.slice(m.index + m[0].length))) return valeur;
    const precede = motsCles.some((k) => {
      const fin = k.index + k[0].length;
      if (fin > m.index || m.index - fin > 40) return false;
      return !FIN_DE_PROPOSITION.test(plie.slice(fin, m.index));
    });
    if (precede) return valeur;
  }
  return SANS_APPORT.test(plie) ? 0 : null;
}

export interface FaitAnalyse {
  /** As stored and shown. */
  texte: string;
  /** Deduplication key. */
  cle: string;
  refus: Refus | null;
  /** Null for a refused fact: nothing of it is kept, not even a figure. */
  tmi_pct: TrancheTmi | null;
  apport_eur: number | null;
}

export function analyserFait(fait: string): FaitAnalyse {
  const texte = nettoyerFait(fait);
  const refus = classerFait(texte);
  return {
    texte,
    cle: normaliserFait(texte),
    refus,
    tmi_pct: refus ? null : extraireTmi(texte),
    apport_eur: refus ? null : extraireApport(texte),
  };
}
