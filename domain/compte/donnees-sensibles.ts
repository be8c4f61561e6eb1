/**
 * Special categories of personal data (GDPR art. 9) and data on offences and convictions (art. 10), as people write
 * them in French. Input is the text lower-cased and without accents, as `memoire-regles` folds it.
 *
 * The rule is about facts on a person (the user or someone close), not about places or property features:
 * "je vais à la mosquée", "ma fille est handicapée", "j'ai fait de la prison" are refused; "près de la mosquée",
 * "rue de la Synagogue", "logement accessible PMR pour ma mère", "près d'un hôpital", "trafic de drogue dans le
 * quartier", "porte condamnée", "maison avec dépendance" are kept. Hence three kinds of rules per category:
 *  - `pratiques`: a person's practice or care, read on the whole text ("je fréquente la synagogue", "hospitalisée
 *    en psychiatrie"), because the place it names would otherwise be taken for a location;
 *  - `termes`: words that only ever describe a person (diseases, faiths, parties, unions), read once places and
 *    jobs are set aside, so that "hôpital psychiatrique" near the flat or "infirmière en oncologie" say nothing;
 *  - `attributs`: words that also describe things ("sourd", "aveugle", "PMR", "noir", "toxicomanes" in a street),
 *    refused only when said of a person: "je suis …", "ma mère est …", "mon fils …", "ancien …".
 * Nationality, social origin, marital status, age and smoking are not in these categories and are kept.
 */

export type CategorieSensible =
  | 'sante'
  | 'religion'
  | 'politique'
  | 'syndicat'
  | 'orientation_sexuelle'
  | 'origine'
  | 'genetique_biometrique'
  | 'penal';

export const CATEGORIES_SENSIBLES: readonly CategorieSensible[] = [
  'sante',
  'religion',
  'politique',
  'syndicat',
  'orientation_sexuelle',
  'origine',
  'genetique_biometrique',
  'penal',
];

/** Word edges: a letter or digit may not touch the word; an apostrophe, a hyphen or a space may. */
const G = '(?<![a-z0-9])';
const D = '(?![a-z0-9])';

function mots(...formes: string[]): string {
  return `${G}(?:${formes.join('|')})${D}`;
}

/** Masculine singular to all four forms: "depressif" covers dépressive, dépressifs, dépressives. */
function accords(mot: string): string {
  const regles: [RegExp, string][] = [
    [/eux$/, 'eu(?:x|se|ses)'],
    [/if$/, 'i(?:f|ve)s?'],
    [/ien$/, 'ien(?:ne)?s?'],
    [/el$/, 'el(?:le)?s?'],
    [/on$/, 'on(?:ne)?s?'],
    [/er$/, '(?:er|ere)s?'],
    [/al$/, 'a(?:l|le|les|ux)'],
    [/eur$/, 'eu(?:r|rs|se|ses)'],
    [/is$/, 'is(?:se|ses)?'],
    // Without accents "handicapé" and "malade" end alike: both get -ee, the feminine of the participle.
    [/e$/, 'ee?s?'],
  ];
  for (const [fin, formes] of regles) if (fin.test(mot)) return mot.replace(fin, formes);
  return `${mot}(?:e|s|es)?`;
}

function adjectifs(...liste: string[]): string {
  return mots(...liste.map(accords));
}

// ---------------------------------------------------------------------------------------------------------------
// Who a fact is about.

const PROCHES =
  '(?:mari|femme|epou(?:x|se)|conjointe?|compagnon|compagne|concubine?|partenaire|copain|copine|fiancee?|pere|mere|papa|maman|parents?|fils|filles?|enfants?|bebes?|ados?|adolescente?s?|frere|soeur|freres|soeurs|grand-pere|grand-mere|grands-parents|beau-pere|belle-mere|beau-frere|belle-soeur|oncle|tante|cousine?|neveu|niece|petit-fils|petite-fille|petits-enfants|aine|ainee|cadette?|famille|proches?)';
/** People met in a purchase, not relatives: "le voisin est alcoolique" is a fact about a person too. */
const AUTRES_PERSONNES =
  '(?:voisine?s?|locataires?|colocataires?|proprietaires?|vendeu(?:r|se)s?|acheteu(?:r|se)s?|bailleu(?:r|resse)s?|gardien(?:ne)?s?|concierges?|associee?s?|collegues?|patron(?:ne)?s?|amie?s?|meilleure? amie?)';
const COPULE =
  '(?:suis|es|est|sommes|etes|sont|etais|etait|etions|etaient|serai|sera|serons|seront|serait|reste|restons|restent|deviens|devient|devenue?s?|suis devenue?|est devenue?|sont devenue?s|ai ete|a ete|avons ete|ont ete|vis|vit|vivons|vivent|me deplace|se deplace|nous deplacons|se deplacent|circule|circulons|suis nee?|est nee?|sommes nee?s|sont nee?s)';
/**
 * A person the attribute is said of: a pronoun with a verb of being, someone close ("ma mère", "mon fils de 12 ans
 * est", "mon père, qui est"), or "ancien"/"ex-". A bare "est" is not enough: "la façade est aveugle".
 */
const SUJET = [
  `${G}(?:je|nous|on|il|elle|ils|elles|qui) (?:ne |n')?${COPULE}${D}`,
  `${G}j'${COPULE}${D}`,
  `${G}(?:jsuis|j'suis|chuis|chui|jsui)${D}`,
  `${G}(?:mon|ma|mes|notre|nos|son|sa|ses|leur|leurs|un|une|l') ?(?:(?:petit|petite|jeune|grand|grande|vieux|vieille|beau|belle|demi|ex)[ -])?${PROCHES}${D}(?:,? qui)?(?: [a-z0-9'-]+){0,4}? ${COPULE}${D}`,
  `${G}(?:mon|ma|mes|notre|nos|son|sa|ses|leur|leurs|le|la|l'|les|un|une|ce|cette) ?${AUTRES_PERSONNES}${D}(?:,? qui)?(?: [a-z0-9'-]+){0,2}? ${COPULE}${D}`,
  `${G}(?:mon|ma|mes|notre|nos|son|sa|ses|leur|leurs|un|une|l') ?(?:(?:petit|petite|jeune|grand|grande|vieux|vieille|beau|belle|demi|ex)[ -])?${PROCHES}${D}`,
].join('|');

/** The attribute said of a person, with at most three words between ("je suis une personne à mobilité réduite"). */
function ditDUnePersonne(attributs: string): string {
  // After an article the word is a noun, not said of anyone: "il est nécessaire d'exclure le blanc".
  return `(?:(?:${SUJET})(?: (?!et |mais |car )[a-z'-]+){0,3}? (?<!${G}(?:le|la|les|l'|du|des|de|d'|au|aux) )|${G}(?:ancien|ancienne|anciens|anciennes|ex)[ -])${attributs}`;
}

// ---------------------------------------------------------------------------------------------------------------
// Places and jobs set aside before `termes` and `attributs` are read.

const NOMS_DE_LIEU =
  "(?:quartiers?|secteur|ecoles?|colleges?|lycees?|universite|institut|institution|etablissements?|hopital|hopitaux|clinique|chu|centre|centres|maison|maisons|cabinet|service|unite|foyer|boucherie|epicerie|restaurants?|commerces?|magasins?|supermarche|boutique|cimetiere|carre|eglises?|temples?|cathedrale|chapelle|basilique|mosquees?|synagogues?|paroisse|presbytere|couvent|edifice|batiment|lieux?|ville|villes|village|commune|communes|banlieue|mairie|municipalite|aire|terrain|camp|prison|maison d'arret|tribunal|club|bar|bars|plage|marche|creche|residence|ehpad|cmp|hp|local|siege|permanence|bourse du travail)";
const ARTICLE = "(?:la |le |les |l'|un |une |des |du |de |d'|au |aux |ce |cet |cette |ces )";
const MOT_LIBRE = "(?!(?:et|mais|car|ou|je|j'|nous|il|elle|qui|pour|avec|depuis|parce)\\b)[a-z0-9'-]+";
const QUALIFICATIF = `(?!(?:le|la|les|l'|un|une|des|du|de|d'|au|aux|en|a|ce|cet|cette|ces|mon|ma|mes|son|sa|ses|notre|nos|leur|leurs|depuis|pendant|tous|toutes|chaque)\\b)${MOT_LIBRE}`;
const SEJOUR = String.raw`(?<!\b(?:suis|es|est|sommes|etes|sont|etais|etait|etaient|ete|vis|vit|vivons|vivent|reste|restee?|sejour|sejourne|admise?|placee?|internee?|entree?|retournee?|scolarisee?|accueillie?|hebergee?|soignee?|suivie?|passe(?: [a-z0-9'-]+){1,3}) (?:en|dans|dans un|dans une|dans le|dans la|a l'|a la|au) ?)`;
const PROXIMITE =
  "(?:pres|proche|a cote|a proximite|non loin|pas loin|en face|autour|aux abords|en bordure|le long|a deux pas|a quelques (?:pas|minutes|metres)|a \\d+ ?(?:m|km|metres|minutes?|min)(?: a pied| en voiture)?) (?:de |du |des |d')|(?:face a|derriere|devant|vue sur|donne sur|donnant sur|jouxte|jouxtant|en plein) ";
const VOIE =
  '(?:rue|avenue|av|boulevard|bd|place|allee|impasse|quai|square|chemin|route|passage|parvis|faubourg|cite|lotissement|ruelle|venelle|sentier|promenade|esplanade|carrefour|rond-point|pont|parc|station|metro|gare)';

const LIEUX = [
  // Public bodies, like places: "la ville est dirigée par un maire écologiste" (but "je suis maire RN" is refused)
  new RegExp(
    `${G}(?:un|une|le|la|l'|les|des|du|au|aux|notre|leur|cette|ce) ?(?:maires?|mairie|municipalite|majorite|opposition|equipe municipale|conseil (?:municipal|departemental|regional)|gouvernement|deputee?s?|senat(?:eur|rice)s?|elue?s?|ville|commune|region|departement|presidente?)(?: ${QUALIFICATIF}){1,3}`,
    'g',
  ),
  // "près de l'église du village", "à deux pas d'un centre de dialyse"
  new RegExp(`(?:${PROXIMITE})${ARTICLE}?${MOT_LIBRE}(?: (?:du |de la |de l'|des |de |d')?${MOT_LIBRE}){0,2}`, 'g'),
  // "rue de la Synagogue", "avenue du Docteur Roux"; "placé en garde à vue" is no square, accents being gone.
  new RegExp(
    `${G}${VOIE} (?!(?:en|sous|dans|a|au|aupres|par|chez)\\b)(?:du |de la |de l'|des |de |d'|la |le |les )?${MOT_LIBRE}(?: ${MOT_LIBRE})?`,
    'g',
  ),
  // "aire d'accueil des gens du voyage", "ascenseur de shabbat": equipment, not people (before the
  // rule below takes "aire d'accueil" alone)
  new RegExp(
    String.raw`${G}(?:(?:aires?|terrains?|camps?|stationnements?)(?: d'accueil| de stationnement)? (?:des|de|pour les|pour) gens du voyage|ascenseurs? (?:de |du )?shabbat)${D}`,
    'g',
  ),
  // "école catholique", "quartier juif", "boucherie halal", "hôpital psychiatrique", "centre de dialyse"; not the
  // "prison" of "sort de prison le mois prochain", which no qualifier follows, nor a place someone stays in
  // ("je suis en centre de désintoxication", "ma mère est en maison de retraite médicalisée").
  new RegExp(`${SEJOUR}${G}${NOMS_DE_LIEU} (?:(?:de |du |des |d'|de la |de l')(?:la |l')?)?${QUALIFICATIF}`, 'g'),
  // Property features: "logement accessible PMR", "adapté aux fauteuils roulants", "serrure à empreintes digitales"
  new RegExp(
    String.raw`${G}(?:accessibles?|adaptee?s?|amenagee?s?|aux normes|normes?|conformes?|acces|parking|stationnement|places?|ascenseur|toilettes|wc|salles? de bains?|douche|rampe|chambres?|logements?|appartements?|studios?|maisons?|rez-de-chaussee|plain-pied)(?: [a-z'-]+){0,3}? (?:pmr|handicap\w*|fauteuils? roulants?|(?:personnes? )?(?:a )?mobilite reduite|personnes? (?:agees|dependantes|handicapees|en situation de handicap)|seniors)${D}`,
    'g',
  ),
  new RegExp(String.raw`${G}(?:passeports?|cartes? d'identite|titres? de sejour|photos?) biometriques?${D}`, 'g'),
  new RegExp(
    String.raw`${G}(?:serrures?|portes?|portails?|acces|badges?|lecteurs?|systemes?|controle d'acces|digicodes?)(?: [a-z'-]+){0,2} (?:biometriques?|a empreintes?(?: digitales?)?|a reconnaissance (?:faciale|digitale|vocale))${D}`,
    'g',
  ),
];

const METIERS =
  '(?:medecin|docteur|infirmiere?|aide-soignante?|aide soignante?|psychiatre|pedopsychiatre|psychologue|psy|psychotherapeute|psychanalyste|chirurgien(?:ne)?|oncologue|cancerologue|cardiologue|neurologue|addictologue|diabetologue|pneumologue|gynecologue|pediatre|kine|kinesitherapeute|pharmacien(?:ne)?|sage-femme|dentiste|orthophoniste|ergotherapeute|educat(?:eur|rice)(?: specialisee?)?|auxiliaire de vie|aide a domicile|interne|externe|praticien(?:ne)? hospitalier|cadre de sante|ambulanci(?:er|ere)|chercheu(?:r|se)|avocate?|juge|magistrate?|greffiere?|surveillante? penitentiaire|gardien de prison|policiere?|gendarme)';
const METIER = new RegExp(
  `${G}(?:je suis|j'etais|je travaille comme|je bosse comme|j'exerce comme|en tant que|metier d'|metier de|profession de|poste d'|poste de)(?: un| une)?(?: ancien| ancienne)? ${METIERS}(?: (?:en|au|aux|a|dans|de|du|des|d'|pour|specialisee?|hospitaliere?|liberale?|penaliste)(?: ${MOT_LIBRE}){1,3})?`,
  'g',
);
const TRAVAIL = new RegExp(
  `${G}(?:je |nous |j')?(?:travaille|travaillons|bosse|bossons|exerce|exercons|suis employee?|suis salariee?|fais un stage)(?: (?:en|au|aux|a|dans|chez|pour|a l'|a la))(?: ${MOT_LIBRE}){1,4}`,
  'g',
);

function sansLieuxNiMetiers(texte: string): string {
  let reste = texte.replace(METIER, ' ').replace(TRAVAIL, ' ');
  for (const lieu of LIEUX) reste = reste.replace(lieu, ' ');
  return reste;
}

// ---------------------------------------------------------------------------------------------------------------
// Categories.

interface Regles {
  pratiques?: string[];
  termes?: string[];
  attributs?: string[];
}

const SANTE: Regles = {
  pratiques: [
    String.raw`\bhospitalis\w*`,
    String.raw`\binternement\b|\b(?:ai|a|avons|ont) ete internee?s?\b`,
    String.raw`\b(?:sejour|sejourne|suivie?s?|soignee?s?|traitee?s?|admise?s?|passe \w+(?: \w+)?) (?:a l'|a la |au |en |dans (?:un |une |le |la |l')?|par (?:un |une |le |la |mon |ma )?)(?:hopital|hp|clinique|service|unite|centre|cmp|psychiatrie|oncologie|addictologie|cancerologie|psychiatre|psychologue|psy|oncologue|neurologue|cardiologue|addictologue|specialiste|maison de repos|centre de reeducation|reeducation|dialyse)\b`,
    String.raw`\b(?:mon|ma|mes|notre|son|sa|leur) (?:psychiatre|pedopsychiatre|psychologue|psy|psychotherapeute|oncologue|cancerologue|neurologue|cardiologue|addictologue|diabetologue|pneumologue|nephrologue|rhumatologue|hematologue|endocrinologue|orthophoniste|kine|kinesitherapeute|therapeute|traitement|medecin traitant|chimio|handicap|invalidite|maladie|pathologie|diagnostic medical|dossier medical|ordonnance)\b`,
    String.raw`\b(?:je vois|je consulte|je suis suivie?|consulte|voit|vois) (?:un |une |le |la |mon |ma )?(?:psychiatre|psychologue|psy|therapeute|oncologue|addictologue|specialiste)\b`,
    String.raw`\b(?:suis|es|est|sommes|sont|etais|etait|ete|vis|vit|admise?|placee?|internee?|scolarisee?|accueillie?|hebergee?) (?:en|a l'|au|dans un|dans une) (?:hp|hopital psychiatrique|clinique psychiatrique|psychiatrie|cure|centre de desintox\w*|centre de reeducation|reeducation|maison de repos|ime|itep|sessad|ulis|esat|foyer medicalise|foyer de vie|ehpad|maison de retraite medicalisee|soins palliatifs|unite de soins)\b`,
    String.raw`\bcuratelle\b|\bhabilitation familiale\b`,
    String.raw`\bmi-?temps therapeutique\b|\b(?:arret|conge) (?:de )?(?:maladie|longue duree|longue maladie)\b|\barret de travail\b|\baccident du travail\b`,
  ],
  termes: [
    String.raw`\b(?:ma|mon|sa|son|leur|notre|nos|mes) (?:etat de )?sante\b`,
    String.raw`\betat de sante\b|\bsante (?:fragile|mentale|precaire|psychique)\b`,
    String.raw`\b(?:problemes?|soucis?|raisons?|ennuis) de sante\b`,
    String.raw`\b(?:je suis|nous sommes|suis|sommes) en (?:\w+ )?sante\b(?! financiere)`,
    mots(
      'maladies?',
      'cancer\\w*',
      'tumeurs?',
      'leucemie',
      'lymphome',
      'melanome',
      'metastases?',
      'chimio\\w*',
      'radiotherapie',
      'oncologie',
      'remission',
      'diabet\\w*',
      'insulin\\w*',
      'hernies? discales?',
      'grabataires?',
      'tritherapie',
      'antiretroviraux',
      'sous (?:oxygene|morphine|perfusion|cortisone|corticoides|anticoagulants|lithium|levothyrox|chimio\\w*|dialyse|tritherapie|assistance respiratoire)',
      'hypertension',
      'hypertendue?s?',
      'cholesterol',
      'cardiaques?',
      'infarctus',
      'avc',
      'accident vasculaire\\w*',
      'pacemaker',
      'alzheimer',
      'parkinson',
      'demence',
      'senile',
      'scleroses?',
      'charcot',
      'epilep\\w*',
      'asthm\\w*',
      'mucoviscidose',
      'myopath\\w*',
      'hemophil\\w*',
      'drepanocytose',
      'lupus',
      'crohn',
      'polyarthrite',
      'spondylarthrite',
      'fibromyalgi\\w*',
      'endometriose',
      'arthrose',
      'osteoporose',
      'rhumatismes?',
      'hepatites?',
      'cirrhose',
      'vih',
      'hiv',
      'sida',
      'seropositi(?:f|ve)s?',
      'seropos?',
      'herpes',
      'tuberculose',
      'dialyse\\w*',
      'transplant\\w*',
      "greffes? (?:de |du |d')?(?:rein|foie|coeur|poumons?|moelle|cornee|organe)",
      'insuffisance (?:renale|cardiaque|respiratoire|hepatique)',
      'bpco',
      'apnee du sommeil',
      'migraines?',
      'obesite',
      'obeses?',
      'surpoids',
      'anorexi\\w*',
      'boulimi\\w*',
      'allergi\\w*',
      'coeliaque',
      'intolerante?s? (?:au|a la) (?:gluten|lactose)',
      'intolerance (?:au|a la) (?:gluten|lactose)',
      "problemes? (?:de dos|de coeur|cardiaques?|respiratoires?|de hanche|de genoux?|de mobilite|d'audition|auditifs?|de vue|de vision|de thyroide|psychologiques?|psychiques?|neurologiques?)",
      'convalescence',
      'post-?operatoire',
      "(?:me remets|se remet|remise?|relevee?) d'(?:une operation|une maladie|un cancer|un avc|une chimio\\w*|un infarctus)",
      "operee?s? (?:du|de la|des|d'un|d'une) (?!sud|nord|est|ouest)",
      'handicaps? (?:moteurs?|mental|mentaux|psychiques?|visuels?|auditifs?|physiques?|cognitifs?|lourds?|invisibles?|de \\d+ ?%)',
      'en situation de handicap',
      '(?:ai|a|avons|ont|avec) un handicap',
      'invalidite',
      'rqth',
      'aah',
      'mdph',
      'ald',
      'affection de longue duree',
      'longue maladie',
      "carte (?:d'invalidite|mobilite inclusion|de priorite|handicap)",
      "perte d'autonomie",
      'autis\\w*',
      'asperger',
      'trisomi\\w*',
      'tdah',
      'hyperacti(?:f|ve)s?',
      'dyslexi\\w*',
      'dyspraxi\\w*',
      'surdite',
      'malentendante?s?',
      'malvoyante?s?',
      'non-?voyante?s?',
      'cecite',
      'paraplegi\\w*',
      'tetraplegi\\w*',
      'hemiplegi\\w*',
      'appareil auditif',
      'protheses? (?:auditives?|de hanche|de genou)',
      'depressions?',
      'depressi(?:f|ve)s?',
      'burn[ -]?out',
      'paranoia\\w*',
      'bi-?polai?r\\w*',
      'sch?[iy]zo\\w*',
      'skizo\\w*',
      'psychoses?',
      'psychotiques?',
      'psychiatr\\w*',
      "(?:j'ai|ai|a|avons|ont|avec|mes|ses|des|un) (?:des |un )?tocs?",
      'troubles? obsessionnels? compulsifs?',
      "troubles? (?:bipolaires?|psychiques?|psychiatriques?|mentaux|mental|anxieux|obsessionnels?|alimentaires?|de l'humeur|de la personnalite|du comportement|de l'attention|du spectre autistique|autistiques?|cognitifs?|neurologiques?)",
      'anxiete generalisee',
      "crises? d'angoisse",
      'attaques? de panique',
      'phobie sociale',
      'agoraphob\\w*',
      'claustrophob\\w*',
      'stress post-?traumatique',
      'ptsd',
      'sspt',
      'suicid\\w*',
      'psychotherapie',
      'antidepresseurs?',
      'anxiolytiques?',
      'neuroleptiques?',
      'somniferes?',
      'xanax',
      'prozac',
      'lexomil',
      'methadone',
      'subutex',
      'medicaments?',
      'sous traitement',
      "traitement (?:medical|medicamenteux|lourd|de fond|a vie|hormonal|antidepresseur|psychiatrique|contre (?:le|la|l'|les|mon|ma))",
      'grossesse',
      'accouch\\w*',
      'fausse couche',
      'pma',
      'fiv',
      'infertil\\w*',
      'sterilite',
      'ivg',
      'covid long',
      'groupe sanguin',
      // Addiction: the words that only ever name it; "alcool" or "drogue" alone also describe streets and bars.
      'alcoo?lisme',
      'alcoo?lo',
      'toxicomanie',
      'addictions?',
      'addictolog\\w*',
      'sevrage',
      'desintox\\w*',
      'alcooliques anonymes',
      'narcotiques anonymes',
      'joueu(?:r|se) (?:compulsi(?:f|ve)|pathologique)',
      "abus d'alcool",
    ),
    String.raw`\b(?:je|il|elle|nous|ils|elles) (?:me |se |nous )?(?:drogue|droguent|droguons|bois trop|boit trop|bois beaucoup|boit beaucoup)\b`,
    // Said of a person only: "le quartier a des problèmes de drogue" is about the street.
    String.raw`\b(?:mon|mes|son|ses|leur|leurs|notre|nos|j'ai|j'avais|il a|elle a|nous avons|ils ont|elles ont)(?: eu)?(?: des| un| de gros| de graves)? (?:problemes?|soucis) (?:d'alcool|avec l'alcool|de boisson|avec la boisson|de drogues?|avec la drogue|d'addiction)\b`,
    String.raw`\b(?:arrete|arreter|j'ai arrete|a arrete) (?:de boire|l'alcool|la drogue|les drogues)\b`,
    String.raw`\b(?:consomm\w*|prends?|prend|prenons|pris|fume|fumons|fument|fumer|dependance|dependante?s?|addictions?|addicte?s?|accros?|usage|usagers?) (?:a |aux |au |a la |a l'|de |de la |de l'|des |du |d'|l'|la |le |les |un |une )?(?:drogues?|cannabis|shit|herbe|joints?|cocaine|coke|heroine|crack|ecstasy|mdma|ketamine|opiaces?|opioides?|amphetamines?|lsd|alcool|jeux? d'argent|somniferes|anxiolytiques|antidepresseurs|medicaments|traitement)\b`,
    String.raw`\b(?:j'ai|il a|elle a|ai|a|avec|atteinte? d'|atteinte? de) (?:une |la )?(?:sep|sla)\b`,
    // "atteint de …", "je souffre de …" said of a person name an illness whatever its name.
    `(?:${SUJET})(?: [a-z'-]+){0,2}? atteinte?s? (?:de|d'|du|des|par)${D}`,
    String.raw`\b(?:je|j'|il|elle|nous|ils|elles|qui) ?(?:souffre|souffrons|souffrent|souffrait|souffrais|ai souffert|a souffert) (?:de|d'|du|des)\b(?! (?:la |l')?(?:bruit|humidite|chaleur|froid|solitude|isolement|nuisances?|voisin\w*|pollution))`,
    String.raw`\b(?:suis|est|sont|sommes|etais|etait) (?:\w+ )?enceinte\b|\benceinte de \d|\btombee enceinte\b`,
    String.raw`\b(?:attend|attends|attendons|attendent) (?:un |notre |mon |leur |des )(?:bebe|enfant|heureux evenement|jumeaux|deuxieme|troisieme|second)\b`,
    String.raw`\b(?:j'ai|il a|elle a|nous avons|ils ont|ai|a) (?:eu |attrape )?(?:le |la )?covid\b`,
  ],
  attributs: [
    ditDUnePersonne(
      adjectifs(
        'malade',
        'handicape',
        'handicappe',
        'alcoolique',
        'alcolique',
        'toxicomane',
        'toxico',
        'drogue',
        'addict',
        'accro',
        'dependant',
        'invalide',
        'aveugle',
        'sourd',
        'muet',
        'paralyse',
        'ampute',
        'pmr',
        'greffe',
        'opere',
        'diagnostique',
        'deprime',
        'interne',
        'dialyse',
        'alite',
        'non vaccine',
        'vaccine',
      ),
    ),
    ditDUnePersonne(String.raw`(?:une personne |un homme |une femme )?(?:a )?mobilite reduite${D}`),
    ditDUnePersonne(String.raw`en fauteuil(?: roulant)?${D}`),
    // A commune may be "sous tutelle" of the prefect; a person under guardianship is so for a health reason.
    ditDUnePersonne(String.raw`(?:placee?s? |mise?s? )?sous tutelle${D}`),
    ditDUnePersonne(String.raw`en (?:ehpad|maison de retraite medicalisee|institution|foyer medicalise|esat)${D}`),
  ],
};

const RELIGION: Regles = {
  pratiques: [
    String.raw`\b(?:je|nous|on|j'|il|elle)\b[^,.;:!?]{0,20}\b(?:vais|allons|va|vont|frequente|frequentons|frequentent|me rends|nous rendons|se rend|prie|prions|prient|assiste|assistons)\b[^,.;:!?]{0,12}\b(?:eglise|mosquee|synagogue|temple|paroisse|messe|culte|offices?|prieres?|catechisme|ashram|pagode)\b`,
    String.raw`\b(?:mon|ma|mes|notre|nos|son|sa|leur) (?:eglise|paroisse|mosquee|synagogue|temple|communaute (?:religieuse|juive|musulmane|chretienne|catholique|protestante|evangelique)|cure|imam|rabbin|pasteur|pretre|aumonier|religion|croyance|confession|culte)\b`,
    String.raw`\b(?:fais|faisons|fait|font) partie (?:de la |d'une |de l')communaute (?:religieuse|juive|musulmane|chretienne|catholique|protestante|evangelique)\b`,
  ],
  termes: [
    adjectifs(
      'catholique',
      'catho',
      'chretien',
      'musulman',
      'islamique',
      'israelite',
      'protestant',
      'evangelique',
      'evangeliste',
      'pentecotiste',
      'adventiste',
      'anglican',
      'lutherien',
      'calviniste',
      'copte',
      'mormon',
      'bouddhiste',
      'hindou',
      'taoiste',
      'chiite',
      'sunnite',
      'salafiste',
      'hassidique',
      'athee',
      'agnostique',
      'croyant',
      'non-croyant',
      'religieux',
      'maconnique',
      'scientologue',
    ),
    mots(
      'juif',
      'juive',
      'juifs',
      'juives',
      'judaisme',
      'islam',
      'protestantisme',
      'catholicisme',
      'christianisme',
      'bouddhisme',
      'hindouisme',
      'atheisme',
      'scientologie',
      'religions?',
      'sikhs?',
      'soufis?',
      'loubavitch',
      'temoins? de jehovah',
      'franc-?macon\\w*',
      'francs-?macons',
      'kippa',
      'hijab',
      'niqab',
      'burqa',
      'burkini',
      'halal',
      'casher',
      'kasher',
      'premiere communion',
      'bar-?mitsva',
      'bar-?mitzvah',
      "bapteme(?! de l'air| de plongee)",
      'catechisme',
      'shabbat',
      '(?:yom )?kippour',
      'libres?[ -]penseu(?:r|se)s?',
    ),
    String.raw`\bpratiquante?s?\b(?! (?:le|la|les|l'|du|de|des|d'|un|une)\b)`,
    String.raw`\b(?:crois|croit|croyons) en dieu\b|\bje prie\b|\bnous prions\b|\bmessage de dieu\b`,
    String.raw`\b(?:porte|portent|portons|porter) (?:le |la |une |un )?(?:voile|kippa|foulard islamique|croix|turban sikh)\b|\bvoilees?\b`,
    String.raw`\b(?:je|nous|on|j'|il|elle)\b[^,.;:!?]{0,15}\b(?:fais|faisons|fait|observe|observons|respecte|respectons|jeune|jeunons|celebre|celebrons|fete|fetons|pratique|pratiquons|mange|mangeons)\b[^,.;:!?]{0,10}\b(?:ramadan|careme|shabbat|sabbat|kippour|aid|pessah|hanoucca|halal|casher|kasher)\b`,
    String.raw`\bconverti(?:e|s|es)? (?:a l'|au |a la )?(?:islam|catholicisme|judaisme|christianisme|bouddhisme|protestantisme)\b|\b(?:me suis|s'est|nous sommes) converti`,
  ],
  // "Jean-Baptiste" is a first name, "orthodoxe" also means conventional.
  attributs: [ditDUnePersonne(adjectifs('orthodoxe', 'baptiste', 'methodiste', 'presbyterien', 'quaker', 'amish'))],
};

const PARTIS_SANS_EQUIVOQUE = mots(
  'lfi',
  'france insoumise',
  'insoumise?s?',
  'eelv',
  'europe ecologie',
  'pcf',
  'lrem',
  'ump',
  'nupes',
  'nouveau front populaire',
  'rassemblement national',
  'front national',
  'parti (?:socialiste|communiste|radical|de gauche|animaliste|pirate)',
  'les republicains',
  'lutte ouvriere',
  'nouveau parti anticapitaliste',
  'debout la france',
  'gilets? jaunes?',
);
/** Names that are also ordinary words or other acronyms (RN = route nationale, PS = post-scriptum, Renaissance). */
const PARTIS_EQUIVOQUES =
  '(?:rn|fn|ps|lr|lo|udi|npa|modem|renaissance|ensemble|horizons|reconquete|en marche|les ecologistes|ecolos?|place publique|generations?|patriotes|upr|lfi|eelv|pcf)';
const POLITICIENS =
  '(?:macron|le pen|marine|bardella|melenchon|zemmour|marechal|ciotti|retailleau|wauquiez|hollande|sarkozy|faure|glucksmann|roussel|tondelier|ruffin|attal|bayrou|hidalgo|dupont-aignan|poutou|arthaud|hamon|jadot|pecresse|fillon|chirac|mitterrand|philippe|darmanin|valls|royal|bertrand)';
const MARQUEUR_POLITIQUE =
  "(?:militante?s?|milite|militons|adherente?s?|adhere|adherons|encartee?s?|membre|membres|sympathisante?s?|electeur|electrice|electeurs|electrices|electorat|votant|vote|votes|votons|votez|votent|votais|votait|voterai|voterons|voter|supporter|partisane?s?|fan|pro|proche|candidate?|elue?s?|soutiens|soutient|soutenons|je suis|nous sommes|on est|j'ai toujours ete)";

const POLITIQUE: Regles = {
  // Read on the whole text: "proche du RN" is no place, whatever "proche de" says elsewhere; "RN 7" is a road.
  pratiques: [
    PARTIS_SANS_EQUIVOQUE,
    `${G}${MARQUEUR_POLITIQUE}(?: (?:a|au|aux|du|de|des|d'|la|le|les|chez|pour|en|a la|de la|pour la|pour le|toujours|depuis toujours|idees|valeurs|positions|theses|liste|listes))*[ ']${PARTIS_EQUIVOQUES}${D}(?! ?\\d)`,
    `${G}(?:vote|votes|votons|votais|votait|voterai|voterons|voter|electeur|electrice|electeurs|soutiens|soutient|soutenons|supporter|fan|partisane?|sympathisante?|pro|anti|je suis pour|je suis contre|nous sommes pour)(?: (?:pour|de|du|a|toujours|depuis toujours))*[ -]${POLITICIENS}${D}`,
  ],
  termes: [
    String.raw`\b(?:opinions?|engagement|sensibilite|idees|convictions?|orientation|appartenance|affiliation|bord|couleur|famille) politiques?\b|\bparti politique\b|\bengagee?s? politiquement\b`,
    // An office says nothing of an opinion ("je suis conseiller municipal"), the party it is held for does.
    `${G}(?:elue?s?|conseill(?:er|ere)s?|maire|adjointe?|deputee?|senat(?:eur|rice)|candidate?)(?: (?:municipale?|regionale?|departementale?|communautaire|europeenne?|local|locale|d'opposition|de la majorite))?(?: (?:du|de|sur la liste|pour le|pour la|de la|sous l'etiquette))* ${PARTIS_EQUIVOQUES}${D}`,
    String.raw`\b(?:je |nous |j'ai |ai |avons )?(?:vote|votons|votais|voterai|voterons|votera) (?:toujours |souvent |plutot |traditionnellement |systematiquement |depuis toujours |en general )?(?:a gauche|a droite|au centre|a l'extreme|blanc|nul|pour la gauche|pour la droite|pour l'extreme)`,
    String.raw`\b(?:suis|sommes|est|sont|etais|plutot|resolument|clairement|toujours ete|homme|femme|sensibilite|idees|valeurs|convictions?|opinions?|bord) (?:plutot |tres |resolument |clairement |profondement |bien )?(?:de|a) (?:gauche|droite|l'extreme (?:gauche|droite)|l'ultra-?(?:gauche|droite)|extreme (?:gauche|droite))\b`,
    String.raw`\bextreme[ -](?:gauche|droite)\b|\bultra-?(?:gauche|droite)\b`,
    adjectifs(
      'communiste',
      'socialiste',
      'gaulliste',
      'macroniste',
      'lepeniste',
      'melenchoniste',
      'zemmouriste',
      'trotskiste',
      'maoiste',
      'marxiste',
      'leniniste',
      'anarchiste',
      'libertaire',
      'royaliste',
      'monarchiste',
      'bonapartiste',
      'souverainiste',
      'nationaliste',
      'fasciste',
      'facho',
      'neo-nazi',
      'gauchiste',
      'anticapitaliste',
      'altermondialiste',
      'centriste',
      'ecologiste',
    ),
    String.raw`\b(?:je|nous|j') ?(?:milite|militons|manifeste|manifestons|vais aux manifs|participe aux manifestations)\b`,
  ],
  attributs: [
    ditDUnePersonne(
      String.raw`(?:militante?s?|engagee?s?|ecolos?)${D}(?! (?:associati\w+|pour le logement|pour les locataires|de l'immobilier))`,
    ),
  ],
};

const SYNDICATS = mots(
  'cgt',
  'cfdt',
  'cftc',
  'cfe-?cgc',
  'cgc',
  'unsa',
  'fsu',
  'snes',
  'snuipp',
  'sgen',
  'snalc',
  'snj',
  'unef',
  'fnsea',
  'force ouvriere',
  'confederation paysanne',
  'union syndicale solidaires',
  'sud[ -](?:rail|ptt|sante|education|solidaires|aerien|travail|culture|industrie|collectivites|commerces?|chimie|energie|etudiant|poste|sociaux)',
);
const MARQUEUR_SYNDICAL =
  '(?:syndiquee?s?|adherente?s?|adhere|adherons|delegue|deleguee|delegues|militante?s?|membre|membres|elue?s?|representante?s?|encartee?s?|cotise|cotisons|mandatee?s?)';
const PAS_UN_SYNDICAT_DE_SALARIES =
  "(?! (?:des coproprietaires|de (?:la )?copro\\w*|intercommunal|mixte|d'initiative|des eaux|d'energie|de communes|de quartier))";

const SYNDICAT: Regles = {
  termes: [
    SYNDICATS,
    adjectifs('syndique', 'syndicaliste'),
    String.raw`\bsyndicalisme\b|\bmandat syndical\b|\bsection syndicale\b|\b(?:carte|cotisation) syndicale\b`,
    String.raw`\b(?:delegue|deleguee|delegues|representante?s?|elue?s?|responsable|militante?s?|permanente?s?) (?:du personnel )?syndica(?:l|le|ux|les)\b`,
    `${G}${MARQUEUR_SYNDICAL}(?: (?:a|au|chez|de|du|a la))? (?:fo|sud)${D}`,
    `\\b(?:mon|ma|notre|nos) syndicat${PAS_UN_SYNDICAT_DE_SALARIES}\\b`,
    `${G}${MARQUEUR_SYNDICAL}${D}[^,.;:!?]{0,25}\\bsyndicat${PAS_UN_SYNDICAT_DE_SALARIES}\\b`,
  ],
};

const ORIENTATION_SEXUELLE: Regles = {
  termes: [
    adjectifs('homosexuel', 'heterosexuel', 'bisexuel', 'pansexuel', 'asexuel', 'transsexuel', 'homoparental'),
    mots(
      'lesbiennes?',
      'lgbt\\w*',
      'queers?',
      'transgenres?',
      'non-?binaires?',
      'intersexes?',
      'orientation sexuelle',
      'vie sexuelle',
      'sexualite',
      'coming-?out',
      'libertine?s?',
      'echangistes?',
      'polyamour\\w*',
      'polyamoureu\\w*',
      'deux mamans',
      'deux papas',
    ),
    String.raw`(?<![\w-])gays?(?![\w-])`,
    String.raw`\b(?:couple|sommes|est|sont|mariee?s|pacsee?s) (?:de |d')?(?:deux )?(?:hommes|femmes)\b`,
    String.raw`\bcouple (?:homo|gay|de lesbiennes|lesbien|de meme sexe)\b|\bde meme sexe\b`,
    String.raw`\b(?:je suis un homme|en tant qu'homme)\b[^.;]{0,40}\b(?:mon mari|mon compagnon|mon copain|mon fiance|mon epoux|mon conjoint)\b`,
    String.raw`\b(?:je suis une femme|en tant que femme)\b[^.;]{0,40}\b(?:ma femme|ma compagne|ma copine|ma fiancee|mon epouse|ma conjointe)\b`,
  ],
  attributs: [
    ditDUnePersonne(String.raw`(?:un |une )?(?:homo|hetero|bi|trans)(?![\w-])`),
    String.raw`\b(?:femme|homme|personne|fille|garcon|fils|ado) trans(?![\w-])`,
  ],
};

/** "d'origine modeste": a social origin is not an ethnic one. */
const ORIGINE_NON_ETHNIQUE =
  '(?:modeste|sociale|ouvriere|bourgeoise|paysanne|populaire|rurale|urbaine|aisee|humble|controlee|inconnue|certifiee|garantie|est|et|du|de|des)';

const ORIGINE: Regles = {
  termes: [
    String.raw`\borigines? (?:ethniques?|raciales?)\b|\bethnies?\b|\bethniques?\b|\bcouleur de (?:ma |sa |leur )?peau\b|\bpeau (?:noire|mate|foncee|metisse|basanee)\b`,
    `\\b(?:je|j'|nous|on|mon|ma|mes|notre|nos|son|sa|ses|leur|leurs|famille|parents|pere|mere|issue?s?)\\b[^,.;:!?]{0,40}\\bd'origines? (?!${ORIGINE_NON_ETHNIQUE}\\b)[a-z-]+`,
    String.raw`\b(?:j'ai|nous avons|il a|elle a|ai|a) des origines\b|\b(?:mes|nos|ses|leurs) origines\b|\b(?:mon|notre|son|leur) pays d'origine\b`,
    adjectifs(
      'racise',
      'metis',
      'maghrebin',
      'tzigane',
      'tsigane',
      'manouche',
      'gitan',
      'yeniche',
      'beur',
      'rebeu',
      'renoi',
      'babtou',
    ),
    String.raw`\bgens du voyage\b|\bminorites? visibles?\b|\bissue?s? de l'immigration\b|\b(?:enfant|enfants|fils|fille|filles|petit-fils|petite-fille|petits-enfants) d'immigres\b|\bpieds?-noirs?\b|\b(?:ma|sa|notre|leur) race\b|\brace (?:noire|blanche|arabe|jaune)\b`,
  ],
  attributs: [
    ditDUnePersonne(
      adjectifs(
        'noir',
        'black',
        'blanc',
        'arabe',
        'asiatique',
        'africain',
        'antillais',
        'caribeen',
        'kabyle',
        'berbere',
        'caucasien',
        'eurasien',
        'immigre',
        'rom',
      ),
    ),
  ],
};

const GENETIQUE_BIOMETRIQUE: Regles = {
  termes: [
    mots(
      'genetiques?',
      'genome',
      'caryotype',
      'brca[12]?',
      "porteu(?:r|se) (?:sain|saine|du gene|d'un gene|d'une mutation|d'une anomalie)",
      'biometri\\w*',
      'empreintes? (?:digitales?|palmaires?|vocales?|retiniennes?)',
      "releve d'empreintes",
    ),
    String.raw`\b(?:mon|ma|mes|notre|nos|son|sa|ses|leur|leurs) (?:adn|empreintes?|iris|genes?|visage scanne)\b|\btests? (?:adn|de paternite)\b|\banalyses? (?:adn|de mon adn|de sang)\b|\breconnaissance faciale de (?:mon|ma|mes)\b`,
  ],
};

const PENAL: Regles = {
  pratiques: [
    String.raw`\b(?:passe|fait|faire|fais|sort|sors|sorti|sortie|sortir|purge|purger|enferme|enfermee?|incarceree?|detenue?|envoye|envoyee) (?:\w+ ){0,4}?(?:en |a la |de la |de |dans une |dans la )?(?:prison|taule|zonzon|maison d'arret|detention|centre de detention|centre penitentiaire|quartier de haute securite|cellule)\b`,
    // Read before places are set aside, for the court is also a building: "jugé au tribunal correctionnel".
    String.raw`\b(?:jugee?s?|comparu|comparais|comparait|comparaitre|passe|passer|passee?|convoquee?s?|poursuivie?s?|renvoyee?s?|cite|citee?) (?:\w+ ){0,2}?(?:devant |au |aux |en )?(?:le |la |les )?(?:tribunal correctionnel|correctionnelle|assises|cour d'assises|juge d'instruction|tribunal de police|tribunal pour enfants|juge des enfants)\b`,
    String.raw`\b(?:ete|suis|est|sommes|sont) (?:arretee?s?|interpellee?s?) par (?:la police|les policiers|les gendarmes|la gendarmerie|la douane)\b`,
  ],
  termes: [
    String.raw`\bcasier judiciaire\b|\bcasier (?:vierge|charge)\b|\bantecedents (?:judiciaires|penaux)\b|\bextrait de casier\b`,
    String.raw`\b(?:j'ai|il a|elle a|ils ont|elles ont|nous avons|on a|qui a) ete condamnee?s?\b(?! (?:a payer|a verser|a rembourser|aux depens|aux prud|par le tribunal de commerce|au civil))`,
    String.raw`\b(?:je suis|nous sommes|il est|elle est) condamnee?s?\b`,
    String.raw`\bcondamnee?s? (?:pour (?:fraude|vol|escroquerie|violences?|abus|recel|trafic|agression|homicide|meurtre|viol|harcelement|diffamation|detournement|blanchiment|faux|usage de faux|banqueroute|travail dissimule|outrage|conduite|delit|crime|stupefiants|deal)|a \d+ (?:ans|mois|jours)|a une peine|a de la prison|a la prison|a perpetuite|au penal|avec sursis|par le tribunal correctionnel|aux assises|en correctionnelle)\b`,
    String.raw`\b(?:ma|sa|leur|notre|une|des|la|sa) condamnations? (?:penales?|pour|a \d+|avec sursis|a une peine)|\bcondamnations? penales?\b|\b(?:ma|sa|leur) condamnation\b`,
    mots(
      'prisons?',
      'incarcer\\w*',
      'detention provisoire',
      'garde a vue',
      'mise? en examen',
      'mis en examen',
      'controle judiciaire',
      'bracelet electronique',
      'avec sursis',
      "sursis (?:probatoire|simple|avec mise a l'epreuve)",
      "travaux d'interet general",
      'tig',
      'liberte conditionnelle',
      'liberation conditionnelle',
      'sous main de justice',
      "peine (?:de prison|d'emprisonnement|de \\d+ (?:ans|mois))",
      'infractions? penales?',
      'tribunal correctionnel',
      "cour d'assises",
      'fichee?s? s',
      'alcool au volant',
      "conduite (?:en etat d'ivresse|en etat alcoolique|sous stupefiants|sous l'emprise|sans permis)",
      'delit de fuite',
      'interdiction de gerer',
      'interdite?s? de gerer',
      'interdiction (?:de sejour|du territoire)',
      'reclusion',
      'grand banditisme',
      'passe judiciaire',
      'passe (?:de )?delinquant',
      'inculpee?s?',
      'inculpation',
      'taulards?',
    ),
    String.raw`\b(?:du|en|mon|ma|sous|de) sursis\b(?! a statuer)`,
    String.raw`\b(?:en|sous) (?:liberte |liberation )?conditionnelle\b`,
    String.raw`\b(?:j'ai|il a|elle a|ai|a|avoir|ont) (?:un |deja un |pas de |un petit )?casier\b(?! (?:a|de|pour|du|dans) )`,
    String.raw`\b(?:suis|est|ete|etait|place|placee|mise?) en detention\b`,
    String.raw`\b(?:commis|auteur d'|auteure d'|coupable d'|coupable de|accusee? d'|accusee? de|poursuivie?s? pour|mise? en cause pour|reconnue? coupable (?:de|d'))\s?(?:un |une |des |de |d')?(?:delits?|crimes?|infractions?|vols?|fraudes?|escroquerie|agression|viol|meurtre|violences?|abus|recel|trafic|harcelement|detournement|blanchiment|faux|outrage|homicide)\b`,
    String.raw`\bplainte (?:deposee )?contre (?:moi|nous|mon|ma|lui|elle)\b|\bporte plainte contre (?:moi|nous)\b`,
  ],
  attributs: [ditDUnePersonne(adjectifs('detenu', 'prisonnier', 'delinquant', 'repris de justice', 'ex-detenu'))],
};

interface Categorie {
  categorie: CategorieSensible;
  pratiques: RegExp | null;
  lexique: RegExp | null;
}

function compiler(categorie: CategorieSensible, regles: Regles): Categorie {
  const lexique = [...(regles.termes ?? []), ...(regles.attributs ?? [])];
  return {
    categorie,
    pratiques: regles.pratiques?.length ? new RegExp(regles.pratiques.join('|')) : null,
    lexique: lexique.length ? new RegExp(lexique.join('|')) : null,
  };
}

/**
 * Checked in this order, the first found is the reason: a union named with "militant" is a union before a party,
 * a genetic disease is health.
 */
const CATEGORIES: Categorie[] = [
  compiler('sante', SANTE),
  compiler('religion', RELIGION),
  compiler('syndicat', SYNDICAT),
  compiler('politique', POLITIQUE),
  compiler('orientation_sexuelle', ORIENTATION_SEXUELLE),
  compiler('origine', ORIGINE),
  compiler('genetique_biometrique', GENETIQUE_BIOMETRIQUE),
  compiler('penal', PENAL),
];

/** The sensitive category a fact falls in, or null. `plie`: lower-cased, without accents. */
export function categorieSensible(plie: string): CategorieSensible | null {
  // "A.V.C." is "avc"; the spaces let the word edges match at both ends.
  const texte = ` ${plie.replace(/\b(?:[a-z]\.){2,}/g, (sigle) => sigle.replace(/\./g, ''))} `;
  for (const c of CATEGORIES) if (c.pratiques?.test(texte)) return c.categorie;
  const sansLieux = sansLieuxNiMetiers(texte);
  for (const c of CATEGORIES) if (c.lexique?.test(sansLieux)) return c.categorie;
  return null;
}
