/** What a client reads about one code on /docs/erreurs, in French; backquoted words are shown as code. */
export interface ErrorDoc {
  status: number;
  title: string;
  /** When it happens. */
  when: string;
  /** Whether anything was debited (a failure never is: said per code because some have more to tell). */
  debit: string;
  /** What the client should do. */
  action: string;
}

const NOTHING_DEBITED = 'Rien n’est débité.';

/**
 * The stable error codes of the API, each with its HTTP status, French title and the text of its anchor on
 * /docs/erreurs (where every problem's `type` points). One error class carries them all; the API turns it into
 * application/problem+json (api/problems.ts), the tools into an `erreur` object.
 */
export const ERRORS = {
  parametres_invalides: {
    status: 400,
    title: 'Paramètres invalides',
    when: 'Un paramètre (chemin, requête, corps ou en-tête) manque ou ne passe pas son contrôle : valeur hors bornes, format inattendu, curseur altéré ou émis pour une autre liste. Le champ `erreurs` détaille chaque champ fautif.',
    debit: NOTHING_DEBITED,
    action:
      'Corriger la requête d’après `erreurs` (`champ`, `emplacement`, `message`) puis la renvoyer : renvoyée telle quelle, elle échouera de nouveau.',
  },
  corps_illisible: {
    status: 400,
    title: 'Corps illisible',
    when: 'Le corps n’est pas un JSON lisible : syntaxe fautive, corps vide, longueur incohérente avec `Content-Length`. Opérations avec corps seulement.',
    debit: NOTHING_DEBITED,
    action: 'Envoyer un objet JSON valide, encodé en UTF-8.',
  },
  type_contenu: {
    status: 415,
    title: 'Type de contenu non accepté',
    when: 'Le corps n’est pas envoyé en `application/json`, ou l’en-tête `Content-Type` manque. Opérations avec corps seulement.',
    debit: NOTHING_DEBITED,
    action: 'Envoyer l’en-tête `Content-Type: application/json` avec un corps JSON.',
  },
  corps_trop_lourd: {
    status: 413,
    title: 'Corps trop lourd',
    when: 'Le corps dépasse la taille admise (1 Mio par défaut ; le `detail` donne la limite), refusé dès l’en-tête `Content-Length`.',
    debit: NOTHING_DEBITED,
    action: 'Alléger le corps : découper un lot en plusieurs appels, raccourcir le texte envoyé.',
  },
  requete_illisible: {
    status: 400,
    title: 'Requête HTTP illisible',
    when: 'Le serveur HTTP ne peut pas lire la requête elle-même, avant toute route : `Content-Length` négatif, répété ou donné avec `Transfer-Encoding`, découpage du corps invalide, en-tête mal formé. La connexion est fermée.',
    debit: NOTHING_DEBITED,
    action:
      'Corriger le client HTTP ou le mandataire qui forme la requête ; une bibliothèque HTTP courante ne produit pas ces requêtes.',
  },
  entetes_trop_lourds: {
    status: 431,
    title: 'En-têtes trop lourds',
    when: 'La ligne de requête (chemin et paramètres compris) et les en-têtes dépassent ensemble la taille admise (16 Kio). La connexion est fermée.',
    debit: NOTHING_DEBITED,
    action:
      'Raccourcir le chemin, les paramètres ou les en-têtes (cookies compris) ; un long contenu va dans un corps JSON.',
  },
  requete_trop_lente: {
    status: 408,
    title: 'Requête trop lente',
    when: 'La requête (en-têtes et corps) n’est pas arrivée en entier dans le délai admis (30 s par défaut ; le `detail` le donne) : client bloqué ou connexion trop lente. La connexion est fermée.',
    debit: NOTHING_DEBITED,
    action:
      'Renvoyer la requête d’un trait, sur une nouvelle connexion ; un corps volumineux demande un débit suffisant.',
  },
  cle_absente: {
    status: 401,
    title: 'Clé absente',
    when: 'L’en-tête `Authorization` manque.',
    debit: NOTHING_DEBITED,
    action:
      'Envoyer `Authorization: Bearer <clé>` avec une clé `pk_live_…` (données réelles) ou `pk_test_…` (bac à sable).',
  },
  cle_invalide: {
    status: 401,
    title: 'Clé invalide',
    when: 'La clé est inconnue, révoquée ou expirée, ou l’en-tête n’a pas la forme `Bearer <clé>`.',
    debit: NOTHING_DEBITED,
    action:
      'Vérifier la clé (copiée en entier, sans espace). Révoquée ou expirée, elle ne reviendra pas : en demander une nouvelle à l’administrateur de l’organisation.',
  },
  organisation_suspendue: {
    status: 403,
    title: 'Organisation suspendue',
    when: 'L’organisation de la clé est suspendue : toutes ses clés sont refusées.',
    debit: NOTHING_DEBITED,
    action: 'Contacter le service pour lever la suspension ; réessayer d’ici là ne sert à rien.',
  },
  portee_insuffisante: {
    status: 403,
    title: 'Portée insuffisante',
    when: 'La portée de l’opération (`x-svc-portee`) n’est pas ouverte à la clé ou à l’organisation ; ou l’opération demande une clé personnelle (attachée à un compte) et la clé est celle d’une organisation. Le `detail` dit lequel.',
    debit: NOTHING_DEBITED,
    action: 'Appeler avec une clé qui a cette portée (ou une clé personnelle), ou demander l’ouverture de la portée.',
  },
  palier_insuffisant: {
    status: 403,
    title: 'Palier insuffisant',
    when: 'L’accès de l’organisation est sous le palier de l’opération (`x-svc-palier-minimal` : `data` ou `contrat`).',
    debit: NOTHING_DEBITED,
    action:
      'Souscrire l’abonnement Data (palier `data`) ou un contrat (palier `contrat`) ; sinon s’en tenir aux opérations du palier `usage`.',
  },
  hors_bac_a_sable: {
    status: 403,
    title: 'Hors du bac à sable',
    when: 'Une clé `pk_test_` appelle une opération sans bac à sable (`x-svc-bac-a-sable` faux), ou demande une entrée hors du jeu figé d’une opération qui en a un.',
    debit: NOTHING_DEBITED,
    action: 'Appeler avec une clé `pk_live_` (données réelles, débitées), ou rester dans les entrées du jeu figé.',
  },
  credits_insuffisants: {
    status: 402,
    title: 'Crédits insuffisants',
    when: 'Les crédits encore utilisables ce mois (gratuits, inclus, facturables sous le plafond de dépense) ne couvrent pas le prix de l’appel, ou la réservation d’une tâche.',
    debit: 'Rien n’est débité ni réservé.',
    action:
      'Recharger les crédits : relever le plafond de dépense mensuel de l’organisation ou souscrire l’abonnement Data ; les crédits inclus reviennent au mois civil suivant. `Svc-Credits-Restants` (et `credits.restants`) de chaque réponse servie dit ce qui reste.',
  },
  plafond_cle: {
    status: 429,
    title: 'Plafond mensuel de la clé atteint',
    when: 'Le plafond mensuel de crédits fixé à cette clé est atteint ; les autres clés de l’organisation n’en sont pas affectées.',
    debit: NOTHING_DEBITED,
    action:
      'Attendre le mois civil suivant (heure de Paris), faire relever le plafond de la clé, ou appeler avec une autre clé de l’organisation. Réessayer plus tôt échouera de même.',
  },
  quota_minute: {
    status: 429,
    title: 'Quota par minute atteint',
    when: 'L’organisation a fait, dans la minute civile en cours, tous les appels qui lui sont permis par minute (`RateLimit-Limit`).',
    debit: 'Rien n’est débité, et l’appel refusé ne compte pas dans le quota.',
    action:
      'Attendre le nombre de secondes donné par `RateLimit-Reset` (aussi en `Retry-After`), puis réessayer. Pour ne plus l’atteindre, étaler les appels en suivant `RateLimit-Remaining`.',
  },
  ressource_absente: {
    status: 404,
    title: 'Ressource absente',
    when: 'La ressource demandée n’existe pas ou plus : aucune vente trouvée, tâche inconnue, d’une autre organisation ou expirée, abonnement webhook inconnu, lien de téléchargement altéré ou expiré…',
    debit: 'Rien n’est débité : une ressource absente n’est jamais facturée.',
    action:
      'Vérifier l’identifiant. Une tâche expirée (`expire_le` passé) ou un lien de téléchargement expiré ne revient pas : relancer l’opération qui les produit.',
  },
  adresse_introuvable: {
    status: 404,
    title: 'Adresse introuvable',
    when: 'L’adresse donnée (clé BAN, texte ou point) ne correspond à aucune adresse connue.',
    debit: 'Rien n’est débité : une ressource absente n’est jamais facturée.',
    action:
      'Vérifier ou compléter l’adresse (numéro, code postal, commune), ou obtenir d’abord sa clé BAN par `resoudre_adresse`.',
  },
  commune_introuvable: {
    status: 404,
    title: 'Commune introuvable',
    when: 'Le code INSEE est bien formé mais ne désigne aucune commune connue (code postal donné à la place du code INSEE, commune disparue par fusion…).',
    debit: 'Rien n’est débité : une ressource absente n’est jamais facturée.',
    action: 'Donner le code INSEE (5 caractères) de la commune actuelle, pas son code postal.',
  },
  annonce_non_analysee: {
    status: 404,
    title: 'Annonce pas encore analysée',
    when: 'L’annonce est connue mais son analyse n’est pas encore calculée : elle l’est à la fin de l’import qui l’a fait entrer, quelques instants après.',
    debit: 'Rien n’est débité : une annonce absente ou pas encore analysée n’est jamais facturée.',
    action: 'Réessayer après le délai de l’en-tête `Retry-After` ; la même demande aboutira une fois l’analyse écrite.',
  },
  route_inconnue: {
    status: 404,
    title: 'Route inconnue',
    when: 'Aucune route ne correspond au chemin demandé.',
    debit: NOTHING_DEBITED,
    action: 'Vérifier le chemin (préfixe `/api/v1`) dans la description OpenAPI.',
  },
  methode_non_permise: {
    status: 405,
    title: 'Méthode non permise',
    when: 'La méthode HTTP n’est pas celle de l’opération servie à ce chemin.',
    debit: NOTHING_DEBITED,
    action: 'Appeler avec la méthode que donne la description OpenAPI pour ce chemin.',
  },
  conflit: {
    status: 409,
    title: 'Conflit',
    when: 'La requête contredit l’état présent : une `Idempotency-Key` déjà employée pour une autre requête, ou tous les abonnements webhook permis par l’offre déjà pris.',
    debit: 'Rien n’est débité ; la tâche ou l’abonnement existant reste tel quel.',
    action:
      'Prendre une nouvelle `Idempotency-Key` pour une requête nouvelle ; pour les webhooks, supprimer un abonnement ou demander une extension de l’offre.',
  },
  charge_globale: {
    status: 503,
    title: 'Charge globale',
    when: 'L’API est surchargée, pour tous les clients.',
    debit: NOTHING_DEBITED,
    action: 'Réessayer plus tard en espaçant les essais (1 s, 2 s, 4 s…).',
  },
  creneau_reserve: {
    status: 503,
    title: 'Créneau réservé',
    when: 'Entre 20 h 30 et minuit (heure de Paris), un agrégat de jeu de données n’est servi que s’il est déjà en mémoire, et un jeu marqué `creneau_lourd` n’est pas lu.',
    debit: NOTHING_DEBITED,
    action: 'Réessayer après minuit (heure de Paris), ou demander cet agrégat plus tôt dans la journée.',
  },
  service_indisponible: {
    status: 503,
    title: 'Service indisponible',
    when: 'Le service ou l’une de ses dépendances (moteur des tâches, stockage des fichiers, modèle de lecture) est momentanément indisponible ; ou une lecture de jeu de données est trop large pour le délai de la base.',
    debit: NOTHING_DEBITED,
    action:
      'Réessayer plus tard en espaçant les essais (1 s, 2 s, 4 s…) ; pour une lecture trop large, resserrer les filtres.',
  },
  delai_depasse: {
    status: 504,
    title: 'Délai dépassé',
    when: 'Le calcul dépasse le délai de l’opération (`x-svc-delai-s`) ; il est abandonné.',
    debit: NOTHING_DEBITED,
    action:
      'Réessayer avec une demande plus étroite : filtres resserrés, `limite` plus petite, document plus court. Réessayer à l’identique a peu de chances d’aboutir.',
  },
  erreur_interne: {
    status: 500,
    title: 'Erreur interne',
    when: 'Une faute du service. Le `detail` ne montre rien d’interne mais donne la référence de la requête.',
    debit: 'Rien n’est servi ni débité ; les crédits réservés par une tâche sont rendus.',
    action:
      'Réessayer une fois ; si l’erreur revient, la signaler au support avec l’identifiant `requete` (aussi en en-tête `Svc-Requete`).',
  },
} as const satisfies Record<string, ErrorDoc>;

export type ErrorCode = keyof typeof ERRORS;

/** A field-by-field detail of a 400 parametres_invalides. */
export interface FieldError {
  champ: string;
  emplacement: 'chemin' | 'requete' | 'corps' | 'entete';
  message: string;
}

/** An organisation's per-minute figures: on every served answer, and on a quota_minute refusal. */
export interface RateFigures {
  limit: number;
  remaining: number;
  /** Seconds until the quota is whole again. */
  resetS: number;
}

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly erreurs?: FieldError[];
  /** The quota a quota_minute refusal ran into: every transport tells the client when to come back. */
  readonly rate?: RateFigures;
  readonly headers?: Record<string, string | number>;

  constructor(
    code: ErrorCode,
    detail: string,
    extra: {
      erreurs?: FieldError[];
      rate?: RateFigures;
      headers?: Record<string, string | number>;
      /** The fault behind an erreur_interne, for the log only. */
      cause?: unknown;
    } = {},
  ) {
    super(detail, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.name = 'ApiError';
    this.code = code;
    this.status = ERRORS[code].status;
    this.erreurs = extra.erreurs;
    this.rate = extra.rate;
    this.headers = extra.headers;
  }
}

/** Shorthand for a 400 on one field, the most frequent business refusal. */
export function invalidField(
  champ: string,
  message: string,
  emplacement: FieldError['emplacement'] = 'corps',
): ApiError {
  return new ApiError('parametres_invalides', message, { erreurs: [{ champ, emplacement, message }] });
}
