import type { Queryable } from '../../db/client.ts';
import { masquerCoordonnees } from '../compte/masquage.ts';
import type { Dataset } from '../platform/sandbox.ts';
import { plier, type AnnonceurLu, type TypeVendeur } from './format.ts';

/**
 * The seller of a listing, under rule 11 of the specification: a private individual selling is never named and no
 * contact of theirs is served. The importer applies it before anything is stored: for a seller that is not declared
 * professional (private, or unknown: nothing says they are not a private person), no identity is kept at all, and the
 * title and description are stored with their contacts masked (masquerCoordonnees, the service's one masker). A
 * professional seller is kept with name, brand, SIREN (given, or found in SIRENE), mandate and the professional
 * contacts the listing publishes.
 */

/** A professional seller as stored and served. */
export interface Annonceur {
  nom: string | null;
  enseigne: string | null;
  siren: string | null;
  /** Where the SIREN comes from: the listing, or SIRENE matched by name and postal code. */
  siren_origine: 'annonce' | 'sirene' | null;
  mandat: 'simple' | 'exclusif' | null;
  telephone: string | null;
  email: string | null;
}

export const REGLE_VENDEUR =
  'Un vendeur particulier n’est jamais nommé et aucune de ses coordonnées n’est gardée ni servie : son identité n’est pas enregistrée, et les téléphones, courriels, liens de messagerie et noms précédés d’une civilité de son titre et de sa description sont masqués à l’import. Il en va de même d’un vendeur dont le portail ne dit pas qu’il est professionnel (`inconnu`). Un professionnel est servi avec son nom, son enseigne, son SIREN (donné par l’annonce, sinon trouvé dans SIRENE par son nom ou son enseigne et le code postal : un seul SIREN actif doit concorder), son mandat et les coordonnées professionnelles que l’annonce publie.';

/** A text of a listing as stored: masked unless the seller is a professional, whose text is published as it is. */
export function texteGarde(texte: string | null, typeVendeur: TypeVendeur): string | null {
  if (texte === null) return null;
  return typeVendeur === 'pro' ? texte : masquerCoordonnees(texte);
}

/**
 * Who sells, for counting the agencies of one property (`multi_agences`): a professional's SIREN, else their folded
 * brand or name; `particulier` and `inconnu` for the others (never a name).
 */
export function cleVendeur(typeVendeur: TypeVendeur, annonceur: Annonceur | null): string {
  if (typeVendeur !== 'pro') return typeVendeur;
  const nom = annonceur?.enseigne ?? annonceur?.nom;
  return annonceur?.siren ?? (nom ? `nom:${plier(nom)}` : 'pro');
}

/** The professional seller after a snapshot: what it says over what was known. */
export function annonceurApres(avant: Annonceur | null, lu: AnnonceurLu | null): Annonceur {
  const base: Annonceur = avant ?? {
    nom: null,
    enseigne: null,
    siren: null,
    siren_origine: null,
    mandat: null,
    telephone: null,
    email: null,
  };
  if (!lu) return base;
  const siren = lu.siren ?? (base.siren_origine === 'annonce' ? base.siren : null);
  const renomme = (lu.nom ?? base.nom) !== base.nom || (lu.enseigne ?? base.enseigne) !== base.enseigne;
  return {
    nom: lu.nom ?? base.nom,
    enseigne: lu.enseigne ?? base.enseigne,
    // A SIREN found in SIRENE stays as long as the name it was found by.
    siren: siren ?? (renomme ? null : base.siren),
    siren_origine: siren ? 'annonce' : renomme ? null : base.siren_origine,
    mandat: lu.mandat ?? base.mandat,
    telephone: lu.telephone ?? base.telephone,
    email: lu.email ?? base.email,
  };
}

/** A professional seller to find in SIRENE: their name and brand, at a postal code. */
export interface RechercheSirene {
  noms: Array<string | null>;
  codePostal: string | null;
}

/** The look-up a professional seller needs: none when their SIREN is known or nothing names them. */
export function rechercheSirene(annonceur: Annonceur, codePostal: string | null): RechercheSirene | null {
  if (annonceur.siren || !(annonceur.nom || annonceur.enseigne)) return null;
  return { noms: [annonceur.nom, annonceur.enseigne], codePostal };
}

/**
 * The SIREN of each professional seller from SIRENE: active legal units (no natural person) whose name or an
 * establishment's sign is the seller's name or brand (folded), with an active establishment at the postal code. Null
 * unless exactly one unit fits. One statement for them all: the importer asks for a whole batch's at once.
 */
export async function sirensDeSirene(
  db: Queryable,
  dataset: Dataset,
  recherches: RechercheSirene[],
): Promise<Array<string | null>> {
  const out = recherches.map((): string | null => null);
  const lues = recherches.flatMap(({ noms, codePostal }, i) => {
    const plies = [...new Set(noms.filter((n): n is string => !!n).map((n) => n.trim()))];
    return plies.length > 0 && codePostal ? [{ i, noms: plies, code_postal: codePostal }] : [];
  });
  if (lues.length === 0) return out;
  const { rows } = await db.query<{ i: number; siren: string }>(
    `SELECT k.i, s.siren
       FROM jsonb_to_recordset($2::jsonb) AS k(i int, noms text[], code_postal text)
      CROSS JOIN LATERAL (
            SELECT min(d.siren) AS siren
              FROM (SELECT DISTINCT u.siren
                      FROM etablissements e
                      JOIN unites_legales u ON u.dataset = e.dataset AND u.siren = e.siren
                     WHERE e.dataset = $1 AND e.code_postal = k.code_postal AND e.etat = 'A' AND u.etat = 'A'
                       AND NOT u.personne_physique
                       AND (svc_plier(u.denomination) = ANY(SELECT svc_plier(x) FROM unnest(k.noms) x)
                            OR svc_plier(e.enseigne) = ANY(SELECT svc_plier(x) FROM unnest(k.noms) x))
                     LIMIT 2) d
            HAVING count(*) = 1) s`,
    [dataset, JSON.stringify(lues)],
  );
  for (const { i, siren } of rows) out[i] = siren;
  return out;
}
