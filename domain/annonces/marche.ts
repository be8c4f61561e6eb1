import type { Queryable } from '../../db/client.ts';
import { PRIX_M2_PLAUSIBLE } from '../dvf/mutation.ts';
import type { Dataset } from '../platform/sandbox.ts';
import type { Annonceur } from './vendeur.ts';

/**
 * What the listings say of a market, for the operations of other domains: the private sellers of a postal code
 * (secteur), the listings online beside an estimate, their price drops and withdrawals (estimer_bien), the listings
 * of an address (faits_adresse). Read from `annonces` and its journal with indexed look-ups (db/migrations/029, 032).
 *
 * A property (`bien_uid`, biens.ts) counts once, whatever the number of its listings on several portals or by several
 * agencies. A private seller is never named: nothing here reads or serves a seller's identity but a professional's
 * name, brand and SIREN; titles are served as stored (a non-professional's contacts masked at import).
 *
 * Durations and windows are counted on the dates of the data, not on the request's: a listing's time online runs from
 * its first publication to its latest snapshot (as the analysis's `jours_en_ligne`), and the windows of drops and
 * withdrawals end at the latest snapshot applied to the dataset's listings. A frozen dataset answers the same forever.
 */

export const SOURCE_ANNONCES = 'Annonces des portails immobiliers (relevés importés par le service)';
export const SANS_ANNONCES = 'aucune annonce n’est importée dans ces données';

const JOUR_MS = 86_400_000;

const mediane = (valeurs: number[]): number | null => {
  if (valeurs.length === 0) return null;
  const v = [...valeurs].sort((a, b) => a - b);
  const m = v.length >> 1;
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
};
const entier = (v: number | null) => (v === null ? null : Math.round(v));
const un = (v: number) => Math.round(v * 10) / 10;
const jourDe = (d: Date) => d.toISOString().slice(0, 10);

/** Days from a first publication (a day) to a snapshot: the analysis's `jours_en_ligne`. */
export function joursEnLigne(premiereParution: string | null, vuLe: Date): number | null {
  if (!premiereParution) return null;
  return Math.max(0, Math.floor((vuLe.getTime() - Date.parse(`${premiereParution}T00:00:00Z`)) / JOUR_MS));
}

/** The latest snapshot applied to the dataset's listings (the date of the listings data), or null when it has none. */
export async function dernierReleve(db: Queryable, dataset: Dataset): Promise<Date | null> {
  const { rows } = await db.query<{ le: Date | null }>('SELECT max(vu_le) AS le FROM annonces WHERE dataset = $1', [
    dataset,
  ]);
  return rows[0]?.le ?? null;
}

// ---------------------------------------------------------------------------------------------------------------------
// Beside an estimate: the comparable listings online, their drops, the withdrawals.
// ---------------------------------------------------------------------------------------------------------------------

/** The window of the drops and of the withdrawals, in days before the latest snapshot of the dataset. */
export const FENETRE_BAISSES_JOURS = 90;
export const FENETRE_RETRAITS_JOURS = 90;

/** The comparability rule, with the surface band the estimate gives (its DVF comparables'). */
export function regleComparables(bande: number): string {
  return `Annonces comparables : même commune (INSEE), même type (appartement ou maison), surface à ±${Math.round(bande * 100)} % de celle du bien, prix au m² plausible (${PRIX_M2_PLAUSIBLE.min}-${PRIX_M2_PLAUSIBLE.max} €) ; un bien (\`bien_uid\`) compte une fois, quel que soit le nombre de ses annonces sur plusieurs portails ou chez plusieurs agences. Les fenêtres se terminent au relevé le plus récent des annonces détenues (la date des données, non celle de la requête). \`annonces_en_vente\` : les biens comparables en ligne, chacun au prix de son annonce principale (celle que le flux sert) ; \`prix_m2_median\` : médiane de leurs prix au m² ; \`part_moins_cheres_pct\` : part de ces biens dont le prix au m² est sous celui de l'estimation (\`valeur.prix_m2\`). \`baisses\` : \`annonces_suivies\` = biens comparables suivis dans les ${FENETRE_BAISSES_JOURS} derniers jours (en ligne, en contrôle chez le portail, ou retirés dans la fenêtre) ; \`biens\` = ceux dont une annonce a baissé de prix dans la fenêtre (événements \`baisse_prix\` du journal) ; pour chacun, l'annonce dont la baisse est la plus récente, du prix avant sa première baisse de la fenêtre au prix après sa dernière : \`baisse_mediane_pct\` (en valeur positive : 5 = 5 % de moins) et \`prix_m2_median_apres_baisse\`. \`retraits\` : biens comparables retirés dans les ${FENETRE_RETRAITS_JOURS} derniers jours (toutes leurs annonces retirées, la dernière dans la fenêtre) ; \`dernier_prix_m2_median\` : médiane du dernier prix au m² affiché. Null les trois quand aucune annonce comparable n'est suivie, et \`limites\` le dit ; une médiane sans bien derrière elle est null, dite aussi.`;
}

export interface AnnoncesEnVente {
  n: number;
  prix_m2_median: number | null;
  part_moins_cheres_pct: number | null;
}
export interface Baisses {
  biens: number;
  annonces_suivies: number;
  baisse_mediane_pct: number | null;
  prix_m2_median_apres_baisse: number | null;
  fenetre_jours: number;
}
export interface Retraits {
  biens: number;
  dernier_prix_m2_median: number | null;
  fenetre_jours: number;
}

export interface MarcheAnnonces {
  annonces_en_vente: AnnoncesEnVente | null;
  baisses: Baisses | null;
  retraits: Retraits | null;
  /** The asking prices per m² of the comparable properties online, ascending (to place another estimate among them). */
  prix_m2_en_vente: number[];
  /** Whether a listing was read (the source is then named). */
  lues: boolean;
  limites: string[];
}

/** The share (%) of asking prices per m² below an estimate's price per m², or null without any. */
export function partMoinsCheres(prixM2: number[], prixM2Estimation: number): number | null {
  if (prixM2.length === 0) return null;
  return un((prixM2.filter((p) => p < prixM2Estimation).length / prixM2.length) * 100);
}

interface LigneComparable {
  id: string;
  bien_uid: string;
  principale: boolean;
  statut: 'actif' | 'retire' | 'masque';
  prix: number;
  surface: number;
  retire_le: Date | null;
  /** For a withdrawn listing: whether another listing of its property is still on the market. */
  bien_sur_le_marche: boolean | null;
}

/** One listing per property: its main listing when it is among them, else the first by identifier. */
function parBien<T extends { id: string; bien_uid: string; principale: boolean }>(lignes: T[]): T[] {
  const choisies = new Map<string, T>();
  for (const l of [...lignes].sort((a, b) => (a.id < b.id ? -1 : 1))) {
    const deja = choisies.get(l.bien_uid);
    if (!deja || (l.principale && !deja.principale)) choisies.set(l.bien_uid, l);
  }
  return [...choisies.values()];
}

/**
 * The comparable listings of an estimated dwelling (regleComparables): online, their drops and withdrawals within the
 * windows. Two look-ups: the listings by (dataset, insee, type, surface), their drops by (dataset, annonce_id, genre).
 */
export async function annoncesComparables(
  db: Queryable,
  dataset: Dataset,
  bien: { insee: string; type: 'appartement' | 'maison'; surface: number; bande: number },
  prixM2Estimation: number,
): Promise<MarcheAnnonces> {
  const vide = (limite: string): MarcheAnnonces => ({
    annonces_en_vente: null,
    baisses: null,
    retraits: null,
    prix_m2_en_vente: [],
    lues: false,
    limites: [limite],
  });
  const releve = await dernierReleve(db, dataset);
  if (!releve) return vide(`annonces_en_vente, baisses, retraits : null, ${SANS_ANNONCES}.`);
  const fenetre = Math.max(FENETRE_BAISSES_JOURS, FENETRE_RETRAITS_JOURS);
  const debut = (jours: number) => new Date(releve.getTime() - jours * JOUR_MS);
  const { rows } = await db.query<LigneComparable>(
    `SELECT a.id, a.bien_uid, a.principale, a.statut, a.prix, a.surface, a.retire_le,
            CASE WHEN a.statut = 'retire' THEN EXISTS (
              SELECT 1 FROM annonces b
               WHERE b.dataset = a.dataset AND b.bien_uid = a.bien_uid AND b.statut IN ('actif', 'masque'))
            END AS bien_sur_le_marche
       FROM annonces a
      WHERE a.dataset = $1 AND a.insee = $2 AND a.type = $3 AND a.surface BETWEEN $4 AND $5
        AND a.prix > 0 AND a.prix / a.surface BETWEEN $6 AND $7
        AND (a.statut <> 'retire' OR a.retire_le >= $8)`,
    [
      dataset,
      bien.insee,
      bien.type,
      bien.surface * (1 - bien.bande),
      bien.surface * (1 + bien.bande),
      PRIX_M2_PLAUSIBLE.min,
      PRIX_M2_PLAUSIBLE.max,
      debut(fenetre),
    ],
  );
  const jour = jourDe(releve);
  const quoi = `${bien.type === 'maison' ? 'maisons' : 'appartements'} de ${Math.round(bien.surface * (1 - bien.bande))} à ${Math.round(bien.surface * (1 + bien.bande))} m² de la commune ${bien.insee}`;
  // Followed in the window of the drops: online, under control, or withdrawn within it.
  const debutBaisses = debut(FENETRE_BAISSES_JOURS);
  const suivies = rows.filter((r) => r.statut !== 'retire' || r.retire_le! >= debutBaisses);
  if (rows.length === 0) {
    return vide(
      `annonces_en_vente, baisses, retraits : null, aucune annonce comparable (${quoi}) en ligne ni retirée dans les ${fenetre} jours avant le ${jour}.`,
    );
  }
  const limites: string[] = [];

  // Online: one per property, at its main listing's price.
  const enLigne = parBien(rows.filter((r) => r.statut === 'actif'));
  const prixM2EnVente = enLigne.map((r) => r.prix / r.surface).sort((a, b) => a - b);
  const enVente: AnnoncesEnVente = {
    n: enLigne.length,
    prix_m2_median: entier(mediane(prixM2EnVente)),
    part_moins_cheres_pct: partMoinsCheres(prixM2EnVente, prixM2Estimation),
  };
  if (enVente.n === 0) {
    limites.push(
      `annonces_en_vente : aucune annonce comparable (${quoi}) en ligne au ${jour} ; prix_m2_median et part_moins_cheres_pct null.`,
    );
  }

  // Drops within the window, per listing then per property.
  const parId = new Map(rows.map((r) => [r.id, r]));
  const { rows: evenements } = await db.query<{ annonce_id: string; le: Date; avant: number; apres: number }>(
    `SELECT annonce_id, le, (avant->>'prix')::float8 AS avant, (apres->>'prix')::float8 AS apres
       FROM annonces_evenements
      WHERE dataset = $1 AND annonce_id = ANY($2::text[]) AND genre = 'baisse_prix' AND le >= $3 AND le <= $4
      ORDER BY id`,
    [dataset, suivies.map((r) => r.id), debutBaisses, releve],
  );
  const parAnnonce = new Map<string, { avant: number; apres: number; le: Date }>();
  for (const e of evenements) {
    if (!(e.avant > 0) || !(e.apres > 0)) continue;
    const deja = parAnnonce.get(e.annonce_id);
    parAnnonce.set(e.annonce_id, { avant: deja?.avant ?? e.avant, apres: e.apres, le: e.le });
  }
  const baisseParBien = new Map<string, { id: string; avant: number; apres: number; le: Date; surface: number }>();
  for (const [id, b] of parAnnonce) {
    const l = parId.get(id)!;
    const deja = baisseParBien.get(l.bien_uid);
    if (!deja || b.le > deja.le || (b.le.getTime() === deja.le.getTime() && id > deja.id)) {
      baisseParBien.set(l.bien_uid, { id, ...b, surface: l.surface });
    }
  }
  const baisses = [...baisseParBien.values()];
  const nSuivis = new Set(suivies.map((r) => r.bien_uid)).size;
  const baissesBloc: Baisses = {
    biens: baisses.length,
    annonces_suivies: nSuivis,
    baisse_mediane_pct: baisses.length ? un(mediane(baisses.map((b) => (1 - b.apres / b.avant) * 100))!) : null,
    prix_m2_median_apres_baisse: entier(mediane(baisses.map((b) => b.apres / b.surface))),
    fenetre_jours: FENETRE_BAISSES_JOURS,
  };
  if (baisses.length === 0) {
    limites.push(
      `baisses : aucune baisse de prix parmi les ${nSuivis} biens comparables suivis dans les ${FENETRE_BAISSES_JOURS} jours avant le ${jour} ; baisse_mediane_pct et prix_m2_median_apres_baisse null.`,
    );
  }

  // Withdrawn within the window, and none of the property's listings on the market any more.
  const debutRetraits = debut(FENETRE_RETRAITS_JOURS);
  const retraitParBien = new Map<string, LigneComparable>();
  for (const r of rows) {
    if (r.statut !== 'retire' || r.bien_sur_le_marche || r.retire_le! < debutRetraits || r.retire_le! > releve)
      continue;
    const deja = retraitParBien.get(r.bien_uid);
    if (
      !deja ||
      r.retire_le! > deja.retire_le! ||
      (r.retire_le!.getTime() === deja.retire_le!.getTime() && r.id > deja.id)
    ) {
      retraitParBien.set(r.bien_uid, r);
    }
  }
  const retraits = [...retraitParBien.values()];
  const retraitsBloc: Retraits = {
    biens: retraits.length,
    dernier_prix_m2_median: entier(mediane(retraits.map((r) => r.prix / r.surface))),
    fenetre_jours: FENETRE_RETRAITS_JOURS,
  };
  if (retraits.length === 0) {
    limites.push(
      `retraits : aucun bien comparable retiré dans les ${FENETRE_RETRAITS_JOURS} jours avant le ${jour} ; dernier_prix_m2_median null.`,
    );
  }
  return {
    annonces_en_vente: enVente,
    baisses: baissesBloc,
    retraits: retraitsBloc,
    prix_m2_en_vente: prixM2EnVente,
    lues: true,
    limites,
  };
}

// ---------------------------------------------------------------------------------------------------------------------
// secteur: the private sellers of a postal code.
// ---------------------------------------------------------------------------------------------------------------------

/** A private seller's listing online this long or longer (strictly more days) counts in n_plus_50_jours. */
export const JOURS_LONGTEMPS = 50;
/** Listings served with detail=true, the longest online first. */
export const ANNONCES_DETAIL_MAX = 100;

export const REGLE_PARTICULIERS = `Annonces en ligne (statut actif au dernier relevé) de vendeurs déclarés particuliers par leur portail (\`type_vendeur\` particulier : un vendeur \`inconnu\` n'y est pas compté), un bien (\`bien_uid\`) compté une fois quel que soit le nombre de ses annonces. Durée en ligne d'un bien : de la première parution de ses annonces au dernier relevé (comme \`jours_en_ligne\` de l'analyse d'une annonce), la plus longue de ses annonces. \`echelle\` secteur : les annonces du code postal ; departement quand aucun bien de particulier du code postal n'est en ligne depuis plus de ${JOURS_LONGTEMPS} jours : les chiffres sont alors ceux du département. \`n_plus_50_jours\` : biens en ligne depuis plus de ${JOURS_LONGTEMPS} jours ; \`duree_moyenne_jours\` : moyenne des durées en ligne de tous les biens, arrondie au jour ; \`n_avec_baisse\` : biens dont une annonce a baissé de prix depuis sa parution (événements \`baisse_prix\`). \`annonces\` (detail=true seulement, sinon null) : un élément par bien, son annonce principale quand elle en est (sinon la plus ancienne), les plus longtemps en ligne d'abord, ${ANNONCES_DETAIL_MAX} au plus ; \`titre\` tel que stocké (coordonnées masquées à l'import), \`lien\` avec la portée lien_origine seulement (null sinon) ; ni nom, ni téléphone, ni courriel, ni description.`;

export interface AnnonceParticulier {
  id: string;
  lien: string | null;
  titre: string | null;
  prix: number | null;
  surface: number | null;
  commune: string | null;
  parue_depuis_jours: number | null;
  derniere_baisse_le: string | null;
  type_vendeur: 'particulier';
}

export interface Particuliers {
  echelle: 'secteur' | 'departement';
  n_plus_50_jours: number;
  duree_moyenne_jours: number | null;
  n_avec_baisse: number;
  annonces: AnnonceParticulier[] | null;
  /** For the quality block: properties counted, the latest snapshot read. */
  n: number;
  releve_le: string | null;
}

interface LigneParticulier {
  id: string;
  bien_uid: string;
  principale: boolean;
  lien: string | null;
  titre: string | null;
  prix: number | null;
  surface: number | null;
  commune: string | null;
  premiere_parution: string | null;
  vu_le: Date;
  entree_le: Date;
  derniere_baisse_le: Date | null;
}

async function lireParticuliers(
  db: Queryable,
  dataset: Dataset,
  departements: string[],
  cp: string | null,
): Promise<LigneParticulier[]> {
  const { rows } = await db.query<LigneParticulier>(
    `SELECT a.id, a.bien_uid, a.principale, a.lien, a.titre, a.prix, a.surface, a.commune,
            to_char(a.premiere_parution, 'YYYY-MM-DD') AS premiere_parution, a.vu_le, a.entree_le,
            (SELECT e.le FROM annonces_evenements e
              WHERE e.dataset = a.dataset AND e.annonce_id = a.id AND e.genre = 'baisse_prix'
              ORDER BY e.id DESC LIMIT 1) AS derniere_baisse_le
       FROM annonces a
      WHERE a.dataset = $1 AND a.statut = 'actif' AND a.departement = ANY($2::text[])
        AND ($3::text IS NULL OR a.code_postal = $3) AND a.type_vendeur = 'particulier'`,
    [dataset, departements, cp],
  );
  return rows;
}

interface BienParticulier {
  annonce: LigneParticulier;
  jours: number | null;
  derniereBaisse: Date | null;
}

function biensParticuliers(lignes: LigneParticulier[]): BienParticulier[] {
  const groupes = new Map<string, LigneParticulier[]>();
  for (const l of lignes) groupes.set(l.bien_uid, [...(groupes.get(l.bien_uid) ?? []), l]);
  return [...groupes.values()].map((annonces) => {
    const triees = [...annonces].sort(
      (a, b) =>
        Number(b.principale) - Number(a.principale) ||
        a.entree_le.getTime() - b.entree_le.getTime() ||
        (a.id < b.id ? -1 : 1),
    );
    const jours = annonces.map((a) => joursEnLigne(a.premiere_parution, a.vu_le)).filter((j) => j !== null);
    const baisses = annonces.map((a) => a.derniere_baisse_le).filter((d) => d !== null);
    return {
      annonce: triees[0],
      jours: jours.length ? Math.max(...jours) : null,
      derniereBaisse: baisses.length ? new Date(Math.max(...baisses.map((d) => d.getTime()))) : null,
    };
  });
}

/**
 * The `particuliers` block of secteur (REGLE_PARTICULIERS), or null when the dataset holds no listing (said in
 * `limites`, returned beside). `departements`: those of the postal code's communes (a listing's is its commune's).
 */
export async function particuliersSecteur(
  db: Queryable,
  dataset: Dataset,
  lieu: { cp: string; departement: string; departements: string[] },
  options: { detail: boolean; lienOrigine: boolean },
): Promise<{ particuliers: Particuliers | null; limites: string[] }> {
  const releve = await dernierReleve(db, dataset);
  if (!releve) return { particuliers: null, limites: [`particuliers : null, ${SANS_ANNONCES}.`] };
  const limites: string[] = [];
  let echelle: Particuliers['echelle'] = 'secteur';
  let biens = biensParticuliers(await lireParticuliers(db, dataset, lieu.departements, lieu.cp));
  const longtemps = (b: BienParticulier) => b.jours !== null && b.jours > JOURS_LONGTEMPS;
  if (!biens.some(longtemps)) {
    echelle = 'departement';
    limites.push(
      `particuliers : aucun bien de particulier du ${lieu.cp} en ligne depuis plus de ${JOURS_LONGTEMPS} jours (${biens.length} en ligne au total) ; chiffres du département ${lieu.departement}.`,
    );
    biens = biensParticuliers(await lireParticuliers(db, dataset, [lieu.departement], null));
    if (biens.length === 0) {
      limites.push(
        `particuliers : aucune annonce de particulier en ligne dans le département ${lieu.departement} au ${jourDe(releve)} ; duree_moyenne_jours null.`,
      );
    }
  }
  const jours = biens.map((b) => b.jours).filter((j) => j !== null);
  biens.sort((a, b) => (b.jours ?? -1) - (a.jours ?? -1) || (a.annonce.id < b.annonce.id ? -1 : 1));
  if (options.detail && biens.length > ANNONCES_DETAIL_MAX) {
    limites.push(
      `particuliers.annonces : les ${ANNONCES_DETAIL_MAX} biens en ligne depuis le plus longtemps, sur ${biens.length}.`,
    );
  }
  if (options.detail && !options.lienOrigine && biens.length > 0) {
    limites.push('particuliers.annonces : lien servi avec la portée lien_origine seulement.');
  }
  const releves = biens.map((b) => b.annonce.vu_le.getTime());
  return {
    particuliers: {
      echelle,
      n_plus_50_jours: biens.filter(longtemps).length,
      duree_moyenne_jours: jours.length ? Math.round(jours.reduce((s, j) => s + j, 0) / jours.length) : null,
      n_avec_baisse: biens.filter((b) => b.derniereBaisse !== null).length,
      annonces: options.detail
        ? biens.slice(0, ANNONCES_DETAIL_MAX).map((b) => ({
            id: b.annonce.id,
            lien: options.lienOrigine ? b.annonce.lien : null,
            titre: b.annonce.titre,
            prix: b.annonce.prix,
            surface: b.annonce.surface,
            commune: b.annonce.commune,
            parue_depuis_jours: b.jours,
            derniere_baisse_le: b.derniereBaisse ? jourDe(b.derniereBaisse) : null,
            type_vendeur: 'particulier' as const,
          }))
        : null,
      n: biens.length,
      releve_le: releves.length ? jourDe(new Date(Math.max(...releves))) : jourDe(releve),
    },
    limites,
  };
}

/**
 * Of the addresses counted by pre_marche_pur for a postal code (recent individual DPE, the latest of the window at
 * this postal code, no sale since), those with a listing online attached to their BAN number: « ni en vente ». Also
 * the listings online of the postal code attached to no number, which can set aside no address.
 */
export async function adressesEnVente(
  db: Queryable,
  dataset: Dataset,
  lieu: { cp: string; departements: string[] },
  fenetre: { referenceLe: string; jours: number },
): Promise<{ n: number; passoires: number; sans_numero: number }> {
  const { rows } = await db.query<{ n: number; passoires: number; sans_numero: number }>(
    `WITH actives AS (
       SELECT a.cle_ban FROM annonces a
        WHERE a.dataset = $1 AND a.statut = 'actif' AND a.departement = ANY($3::text[]) AND a.code_postal = $2),
     recents AS (
       SELECT DISTINCT ON (d.cle_ban) d.cle_ban, d.code_postal, d.etabli_le, d.etiquette
         FROM (SELECT DISTINCT cle_ban FROM actives WHERE cle_ban IS NOT NULL) l
         JOIN dpe d ON d.dataset = $1 AND d.cle_ban = l.cle_ban
        WHERE d.code_postal IS NOT NULL AND d.type_batiment IN ('maison', 'appartement')
          AND d.etabli_le > $4::date - $5::int
        ORDER BY d.cle_ban, d.etabli_le DESC, d.numero_dpe DESC)
     SELECT count(*)::int AS n, count(*) FILTER (WHERE x.etiquette IN ('F', 'G'))::int AS passoires,
            (SELECT count(*) FROM actives WHERE cle_ban IS NULL)::int AS sans_numero
       FROM recents x
      WHERE x.code_postal = $2
        AND NOT EXISTS (SELECT 1 FROM dvf_mutations m
                         WHERE m.dataset = $1 AND m.cle_ban = x.cle_ban AND m.date_mutation >= x.etabli_le)`,
    [dataset, lieu.cp, lieu.departements, fenetre.referenceLe, fenetre.jours],
  );
  return rows[0] ?? { n: 0, passoires: 0, sans_numero: 0 };
}

// ---------------------------------------------------------------------------------------------------------------------
// faits_adresse: the listings of an address.
// ---------------------------------------------------------------------------------------------------------------------

/** The listings read at an address, at most (the newest first). */
const ANNONCES_ADRESSE_MAX = 200;

export interface DerniereAnnonce {
  id: string;
  lien: string | null;
  statut: 'actif' | 'retire' | 'masque';
  type: 'appartement' | 'maison' | 'immeuble';
  parue_le: string | null;
  retire_le: string | null;
  prix: number | null;
  surface: number | null;
  prix_m2: number | null;
  type_vendeur: 'pro' | 'particulier' | 'inconnu';
  agence: { nom: string | null; enseigne: string | null; siren: string | null } | null;
}

export interface AnnoncesAdresse {
  n_actives: number;
  n_total: number;
  derniere: DerniereAnnonce | null;
  releve_le: string | null;
}

interface LigneAdresse {
  id: string;
  bien_uid: string;
  principale: boolean;
  lien: string | null;
  statut: DerniereAnnonce['statut'];
  type: DerniereAnnonce['type'];
  premiere_parution: string | null;
  retire_le: string | null;
  prix: number | null;
  surface: number | null;
  type_vendeur: DerniereAnnonce['type_vendeur'];
  annonceur: Annonceur | null;
  entree_le: Date;
  vu_le: Date;
}

/**
 * The listings attached to a BAN number: properties on the market and ever listed there, and the latest listed (the
 * property first seen last, by its main listing when it is attached here).
 */
export async function annoncesAdresse(
  db: Queryable,
  dataset: Dataset,
  cleBan: string,
  lienOrigine: boolean,
): Promise<AnnoncesAdresse> {
  const { rows } = await db.query<LigneAdresse>(
    `SELECT id, bien_uid, principale, lien, statut, type, to_char(premiere_parution, 'YYYY-MM-DD') AS premiere_parution,
            to_char(retire_le AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS retire_le, prix, surface, type_vendeur,
            annonceur, entree_le, vu_le
       FROM annonces WHERE dataset = $1 AND cle_ban = $2
      ORDER BY entree_le DESC, id LIMIT ${ANNONCES_ADRESSE_MAX}`,
    [dataset, cleBan],
  );
  const biens = new Map<string, LigneAdresse[]>();
  for (const r of rows) biens.set(r.bien_uid, [...(biens.get(r.bien_uid) ?? []), r]);
  const actives = [...biens.values()].filter((ls) => ls.some((l) => l.statut === 'actif')).length;
  // The property first seen last (rows come newest first), by its main listing when attached here.
  const dernierBien = rows[0] ? biens.get(rows[0].bien_uid)! : null;
  const d = dernierBien ? (dernierBien.find((l) => l.principale) ?? dernierBien[0]) : null;
  const vus = rows.map((r) => r.vu_le.getTime());
  return {
    n_actives: actives,
    n_total: biens.size,
    derniere: d
      ? {
          id: d.id,
          lien: lienOrigine ? d.lien : null,
          statut: d.statut,
          type: d.type,
          parue_le: d.premiere_parution,
          retire_le: d.retire_le,
          prix: d.prix,
          surface: d.surface,
          prix_m2: d.prix !== null && d.surface ? Math.round(d.prix / d.surface) : null,
          type_vendeur: d.type_vendeur,
          // A professional only: a private seller's identity is not even stored.
          agence:
            d.type_vendeur === 'pro' && d.annonceur
              ? { nom: d.annonceur.nom, enseigne: d.annonceur.enseigne, siren: d.annonceur.siren }
              : null,
        }
      : null,
    releve_le: vus.length ? jourDe(new Date(Math.max(...vus))) : null,
  };
}

/**
 * Listings online at the BAN numbers within `rayonM` of a point (listings attached to a number: validated addresses,
 * or positions given to the address by the portal): whether there is one, and one of a private seller.
 */
export async function enVenteAutour(
  db: Queryable,
  dataset: Dataset,
  point: { lat: number; lon: number },
  rayonM: number,
): Promise<{ en_vente: boolean; vente_directe: boolean }> {
  const { rows } = await db.query<{ en_vente: boolean; vente_directe: boolean }>(
    `SELECT count(*) > 0 AS en_vente, count(*) FILTER (WHERE a.type_vendeur = 'particulier') > 0 AS vente_directe
       FROM adresses n
       JOIN annonces a ON a.dataset = n.dataset AND a.cle_ban = n.cle_ban AND a.statut = 'actif'
      WHERE n.dataset = $1 AND n.type = 'numero'
        AND earth_box(ll_to_earth($2, $3), $4) @> ll_to_earth(n.lat, n.lon)
        AND earth_distance(ll_to_earth($2, $3), ll_to_earth(n.lat, n.lon)) <= $4`,
    [dataset, point.lat, point.lon, rayonM],
  );
  return rows[0] ?? { en_vente: false, vente_directe: false };
}
