/**
 * The stable error codes of the API, each with its HTTP status and French title. One error class carries them all;
 * the API turns it into application/problem+json (api/problems.ts), the tools into an `erreur` object.
 */
export const ERRORS = {
  parametres_invalides: { status: 400, title: 'Paramètres invalides' },
  corps_illisible: { status: 400, title: 'Corps illisible' },
  type_contenu: { status: 415, title: 'Type de contenu non accepté' },
  corps_trop_lourd: { status: 413, title: 'Corps trop lourd' },
  requete_illisible: { status: 400, title: 'Requête HTTP illisible' },
  entetes_trop_lourds: { status: 431, title: 'En-têtes trop lourds' },
  requete_trop_lente: { status: 408, title: 'Requête trop lente' },
  cle_absente: { status: 401, title: 'Clé absente' },
  cle_invalide: { status: 401, title: 'Clé invalide' },
  organisation_suspendue: { status: 403, title: 'Organisation suspendue' },
  portee_insuffisante: { status: 403, title: 'Portée insuffisante' },
  palier_insuffisant: { status: 403, title: 'Palier insuffisant' },
  hors_bac_a_sable: { status: 403, title: 'Hors du bac à sable' },
  credits_insuffisants: { status: 402, title: 'Crédits insuffisants' },
  plafond_cle: { status: 429, title: 'Plafond mensuel de la clé atteint' },
  quota_minute: { status: 429, title: 'Quota par minute atteint' },
  ressource_absente: { status: 404, title: 'Ressource absente' },
  adresse_introuvable: { status: 404, title: 'Adresse introuvable' },
  commune_introuvable: { status: 404, title: 'Commune introuvable' },
  route_inconnue: { status: 404, title: 'Route inconnue' },
  methode_non_permise: { status: 405, title: 'Méthode non permise' },
  conflit: { status: 409, title: 'Conflit' },
  charge_globale: { status: 503, title: 'Charge globale' },
  service_indisponible: { status: 503, title: 'Service indisponible' },
  delai_depasse: { status: 504, title: 'Délai dépassé' },
  erreur_interne: { status: 500, title: 'Erreur interne' },
} as const;

export type ErrorCode = keyof typeof ERRORS;

/** A field-by-field detail of a 400 parametres_invalides. */
export interface FieldError {
  champ: string;
  emplacement: 'chemin' | 'requete' | 'corps' | 'entete';
  message: string;
}

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly erreurs?: FieldError[];
  readonly headers?: Record<string, string | number>;

  constructor(
    code: ErrorCode,
    detail: string,
    extra: { erreurs?: FieldError[]; headers?: Record<string, string | number> } = {},
  ) {
    super(detail);
    this.name = 'ApiError';
    this.code = code;
    this.status = ERRORS[code].status;
    this.erreurs = extra.erreurs;
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
