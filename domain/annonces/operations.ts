import { z } from 'zod';
import type { Queryable } from '../../db/client.ts';
import { rawJson } from '../../lib/json-bytes.ts';
import { defineOperation } from '../catalogue.ts';
import { nombre } from '../entrees.ts';
import { ApiError, invalidField } from '../errors.ts';
import type { Dataset } from '../platform/sandbox.ts';
import { QualiteSchema, servedFromDataset } from '../qualite.ts';
import { METHODES, SOUS_SCORES } from './analyse.ts';
import { REGLE_BIEN } from './biens.ts';
import {
  AnnonceListeSchema,
  AnnonceSchema,
  COLONNES_ANNONCE,
  evenementServi,
  fiche,
  lireAnnoncesEnListe,
  REGLE_DRAPEAUX,
  type Annonce,
  type LigneAnnonce,
} from './fiche.ts';
import { instant } from './format.ts';
import { cleLien } from './import.ts';
import { GENRES, lireEvenements, type FiltresEvenements } from './journal.ts';
import { REGLE_VENDEUR } from './vendeur.ts';

// ---------------------------------------------------------------------------------------------------------------------
// annonce
// ---------------------------------------------------------------------------------------------------------------------

/** Every object of a schema with all its fields optional, at any depth: what a `champs` selection may serve. */
function partielProfond(s: z.ZodType): z.ZodType {
  let out: z.ZodType = s;
  if (s instanceof z.ZodNullable) out = partielProfond(s.unwrap() as z.ZodType).nullable();
  else if (s instanceof z.ZodOptional) out = partielProfond(s.unwrap() as z.ZodType).optional();
  else if (s instanceof z.ZodObject) {
    out = z.object(
      Object.fromEntries(
        Object.entries(s.shape as Record<string, z.ZodType>).map(([k, v]) => [k, partielProfond(v).optional()]),
      ),
    );
  }
  return s.description ? out.describe(s.description) : out;
}

/** The objects inside a schema, by dotted path: where a `champs` path may go. */
function objetsDe(s: z.ZodType, chemin = '', out = new Map<string, string[]>()): Map<string, string[]> {
  let t = s;
  while (t instanceof z.ZodNullable || t instanceof z.ZodOptional) t = t.unwrap() as z.ZodType;
  if (t instanceof z.ZodObject) {
    const shape = t.shape as Record<string, z.ZodType>;
    out.set(chemin, Object.keys(shape));
    for (const [k, v] of Object.entries(shape)) objetsDe(v, chemin ? `${chemin}.${k}` : k, out);
  }
  return out;
}

const OBJETS = objetsDe(AnnonceSchema);
const MAX_CHAMPS = 60;

/** `champs` read into a sorted list of valid dotted paths (sorted: the response memory keys on the input). */
function lireChamps(value: string | string[] | undefined, ctx: z.RefinementCtx): string[] | null {
  if (value === undefined) return null;
  const liste = (Array.isArray(value) ? value : [value]).flatMap((v) => v.split(','));
  const chemins = [...new Set(liste.map((c) => c.trim()).filter(Boolean))];
  if (chemins.length > MAX_CHAMPS) {
    ctx.addIssue({ code: 'custom', message: `${MAX_CHAMPS} chemins au plus.` });
    return z.NEVER;
  }
  const fautes = chemins.filter((c) => {
    const i = c.lastIndexOf('.');
    return !OBJETS.get(i < 0 ? '' : c.slice(0, i))?.includes(c.slice(i + 1));
  });
  if (fautes.length > 0) {
    ctx.addIssue({
      code: 'custom',
      message: `Chemins inconnus : ${fautes.map((f) => `« ${f.slice(0, 60)} »`).join(', ')} (ex. analyse.score, dpe.etiquette, prix).`,
    });
    return z.NEVER;
  }
  return chemins.length > 0 ? chemins.sort() : null;
}

type Arbre = Map<string, Arbre | true>;

/** Keeps the paths asked (a path inside a null object leaves it null), always with `id`. */
function projeter(valeur: Record<string, unknown>, champs: string[] | null): Record<string, unknown> {
  if (champs === null) return valeur;
  const arbre: Arbre = new Map([['id', true]]);
  for (const chemin of champs) {
    const parts = chemin.split('.');
    let noeud = arbre;
    for (const [i, p] of parts.entries()) {
      const existant = noeud.get(p);
      if (existant === true) break;
      if (i === parts.length - 1) noeud.set(p, true);
      else {
        const suivant: Arbre = existant ?? new Map();
        noeud.set(p, suivant);
        noeud = suivant;
      }
    }
  }
  const couper = (v: unknown, a: Arbre): unknown => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    const o = v as Record<string, unknown>;
    return Object.fromEntries(
      [...a].filter(([k]) => k in o).map(([k, sous]) => [k, sous === true ? o[k] : couper(o[k], sous)]),
    );
  };
  return couper(valeur, arbre) as Record<string, unknown>;
}

/** A listing by service identifier, `<portail>:<identifiant>`, or portal link. */
export async function trouverAnnonce(db: Queryable, dataset: Dataset, id: string): Promise<LigneAnnonce | null> {
  let where: string;
  let params: unknown[];
  const portail = /^(portal_[abc]):(.+)$/.exec(id);
  if (/^https?:\/\//i.test(id)) {
    where = 'lien_cle = $2';
    params = [cleLien(id)];
  } else if (portail) {
    where = 'portail = $2 AND identifiant = $3';
    params = [portail[1], portail[2]];
  } else {
    where = 'id = $2';
    params = [id];
  }
  const { rows } = await db.query<LigneAnnonce>(
    `SELECT ${COLONNES_ANNONCE} FROM annonces WHERE dataset = $1 AND ${where} ORDER BY vu_le DESC LIMIT 1`,
    [dataset, ...params],
  );
  return rows[0] ?? null;
}

const AnnonceInput = z.object({
  id: z
    .string()
    .trim()
    .min(3, '3 caractères au moins.')
    .max(200, '200 caractères au plus.')
    .describe(
      'Identifiant du service (an_…), `<portail>:<identifiant>` (portal_a:1234567, portal_b:<identifiant>, portal_c:<nombre>) ou lien de l’annonce chez le portail (encodé dans le chemin).',
    ),
  inclure: z
    .enum(['brut'])
    .optional()
    .describe('`brut` : ajoute le dernier relevé du portail (vendeur professionnel).'),
  champs: z
    .union([z.string().max(4000), z.array(z.string().max(300)).max(MAX_CHAMPS)])
    .optional()
    .transform(lireChamps)
    .describe(
      'Chemins pointés à servir (ex. `analyse.score,dpe.etiquette`), virgules ou paramètre répété ; tout par défaut.',
    ),
});

const AnnonceServie = (partielProfond(AnnonceSchema) as z.ZodObject)
  .extend({ id: AnnonceSchema.shape.id })
  .describe(
    'La fiche de l’annonce. Toutes ses rubriques sont servies sans `champs` ; avec `champs`, seules celles demandées, avec `id`.',
  );

const DESCRIPTION_ANNONCE = `La fiche d'une annonce de vente : le bien, son prix (et \`prix_m2\` recalculé = prix / surface, à côté de \`prix_m2_portail\`), son DPE et son calendrier d'interdiction de location, ses équipements et détails, le vendeur, sa première parution, son bien dédoublonné et l'analyse du service. **3 crédits par appel réussi** ; rien n'est débité pour une annonce absente ou pas encore analysée.

**Identifiant.** \`id\` est l'identifiant du service (\`an_…\`), l'identifiant du portail \`<portail>:<identifiant>\` ou le lien de l'annonce chez le portail (comparé sans schéma, \`www.\`, paramètres ni fragment). Inconnu : 404 \`ressource_absente\`. Connu mais pas encore analysé (l'analyse est écrite à la fin de l'import qui fait entrer l'annonce) : 404 \`annonce_non_analysee\` avec \`Retry-After\`.

**Portée, palier, bac à sable, mémoire, délai.** Portée \`territoire\` (la donnée d'un bien à vendre sur un territoire, comme les opérations du marché des communes), palier \`usage\`. Bac à sable : oui, sur les annonces générées du territoire figé (une annonce hors de ce jeu y est simplement absente : 404). Jamais en mémoire (cache 0) : la fiche change à chaque relevé et dépend de la portée lien_origine de l'appelant, et sa lecture est une lecture indexée. Délai 5 s. Variante par lot : \`POST /annonces/lot\`.

**Portail.** \`id_portail\` et \`lien\` ne sont servis qu'avec la portée \`lien_origine\` (null sinon, et \`limites\` le dit). \`inclure=brut\` ajoute \`brut\`, le dernier relevé tel que le portail l'a envoyé, pour un vendeur professionnel seulement (null pour un autre).

**Sélection.** \`champs\` (virgules, ou paramètre répété ; 60 chemins au plus) choisit des rubriques (\`dpe\`) ou des chemins pointés à toute profondeur (\`analyse.score\`, \`analyse.sous_scores.marche\`) : seuls ceux-là sont servis, avec \`id\`. Un chemin inconnu répond 400. Le prix ne dépend pas de la sélection.

**Statut.** \`actif\` (en ligne), \`retire\` (retiré du portail), \`masque\` : le portail marque l'annonce suspendue ou en contrôle (statut suspended, under_review, moderation, hidden… dans son relevé) ; elle redevient \`actif\` au relevé qui la montre de nouveau. Une annonce masquée reste lisible ici, son statut le dit ; le flux ne la sert pas (\`annonce\` null).

**Vendeur.** ${REGLE_VENDEUR} \`annonceur\` a toujours sa forme : \`type_vendeur\`, et pour un non-professionnel tous ses autres champs null.

**Bien.** \`bien_uid\` : le bien dédoublonné. ${REGLE_BIEN} \`principale\` : l'annonce que le flux sert pour le bien (en ligne d'abord, puis retirée, masquée en dernier ; la plus ancienne).

**Champs calculés.** \`terrain_suspect\` : maison dont le terrain du portail est plus petit que la surface habitable (\`terrain_m2\` est alors null, \`terrain_portail_m2\` garde la valeur du portail). \`details_portail.charges_suspectes\` : charges annuelles de copropriété d'un appartement (ou d'un bien en copropriété) sous 6 € par m² et par an (sous 600 € sans surface), qui semblent mensuelles. \`premiere_parution\` : la date du portail (\`estimee\` false), sinon le jour du premier relevé (\`estimee\` true). \`dpe.interdiction_location\` : premier jour où la location de la classe est interdite, calendrier de métropole (G 2025-01-01, F 2028-01-01, E 2034-01-01), null de A à D, sans DPE et outre-mer ; \`mois_restants\` : mois entiers d'ici là au jour de la requête (0 quand elle est en vigueur). \`qualite\` : \`n\` relevés appliqués, \`donnees_du\` le dernier ; ses drapeaux : ${REGLE_DRAPEAUX}

**Analyse** (\`analyse\`, déterministe, calculée par le service seul au relevé \`analyse_le\`, recalculée après chaque import qui change ses entrées). Sous-scores sur 0-100, null sans leurs données (\`analyse.limites\` dit pourquoi) :
${SOUS_SCORES.map((k) => `- \`${k}\` : ${METHODES[k]}`).join('\n')}
- \`score\` : ${METHODES.score}
- \`profil\` : ${METHODES.profil}
- \`verdict\`, \`recommandation\` : ${METHODES.verdict}
- \`negociation\` : ${METHODES.negociation}
- \`forces\`, \`faiblesses\` : les sous-scores de 65 et plus, de 35 et moins, dits avec leur chiffre ; \`leviers\` : ce qui fonde une négociation (prix au-dessus de la référence, durée en ligne dès 90 jours, baisses passées, calendrier DPE, travaux annoncés, charges suspectes, procédure, plusieurs vendeurs).
- Autour : \`prix_m2\`, \`reference_commune\`, \`ecart_reference_pct\`, \`loyer\`, \`rendement_brut_pct\` (12 × loyer / prix), \`rendement_net_pct\`, \`budget_total\` (prix + 8 %), \`jours_en_ligne\` (de la première parution au relevé), \`historique_prix\`, \`interdiction_location\` et \`mois_restants\` au relevé. \`etat_visuel\` est null : les photos ne sont pas lues.`;

export const annonce = defineOperation({
  tool: 'annonce',
  method: 'GET',
  path: '/annonces/{id}',
  lot: true,
  summary: 'Fiche d’une annonce de vente et son analyse',
  description: DESCRIPTION_ANNONCE,
  credits: 3,
  unit: 'appel',
  scope: 'territoire',
  tier: 'usage',
  sandbox: true,
  cacheS: 0,
  timeoutS: 5,
  texteTiers: true,
  errors: ['ressource_absente', 'annonce_non_analysee'],
  input: AnnonceInput,
  output: AnnonceServie,
  dataDate: (o) => (typeof o.vu_le === 'string' ? o.vu_le : null),
  handler: servedFromDataset(async (e, ctx, dataset) => {
    const l = await trouverAnnonce(ctx.services.db, dataset, e.id);
    if (!l) {
      throw new ApiError('ressource_absente', `Aucune annonce ne répond à « ${e.id} » ; rien n’est débité.`);
    }
    if (!l.analyse) {
      throw new ApiError(
        'annonce_non_analysee',
        'Annonce connue, analyse pas encore écrite (elle l’est à la fin de l’import en cours) ; rien n’est débité.',
        { headers: { 'Retry-After': 30 } },
      );
    }
    const servie: Annonce = fiche(l, {
      lienOrigine: ctx.caller.portees.includes('lien_origine'),
      brut: e.inclure === 'brut',
      maintenant: ctx.services.now(),
    });
    return projeter(servie, e.champs) as z.infer<typeof AnnonceServie>;
  }),
});

// ---------------------------------------------------------------------------------------------------------------------
// flux_annonces
// ---------------------------------------------------------------------------------------------------------------------

/** A repeated query parameter (or a comma-separated one, or a JSON list), as a list of at most `max` values. */
function repete<T extends z.ZodType<string, string>>(valeur: T, max: number, description: string) {
  return z
    .union([z.string(), z.array(z.string())])
    .transform((v) =>
      (Array.isArray(v) ? v : [v])
        .flatMap((x) => x.split(','))
        .map((x) => x.trim())
        .filter(Boolean),
    )
    .pipe(z.array(valeur).max(max, `${max} valeurs au plus.`))
    .optional()
    .describe(description);
}

const Etat = z
  .object({
    prix: z.number().nullable(),
    ecart_pct: z.number().nullable(),
    detecte_le: z.string().nullable(),
    actif: z.boolean().nullable(),
    analyse_le: z.string().nullable(),
    score: z.number().nullable(),
    nb_agences: z.number().int().nullable(),
    nb_portails: z.number().int().nullable(),
    prix_min: z.number().nullable(),
    prix_max: z.number().nullable(),
  })
  .nullable();

const FluxInput = z.object({
  depuis: z
    .string()
    .max(40)
    .transform((v, ctx) => {
      const d = instant(v.trim());
      if (!d) {
        ctx.addIssue({ code: 'custom', message: 'Date (AAAA-MM-JJ) ou horodatage ISO 8601 attendu.' });
        return z.NEVER;
      }
      return d.toISOString();
    })
    .optional()
    .describe('Événements survenus depuis (`le` ≥ depuis) : date AAAA-MM-JJ ou ISO 8601.'),
  genres: repete(z.enum(GENRES), GENRES.length, `Genres (répétés) : ${GENRES.join(', ')}.`),
  insee: repete(
    z
      .string()
      .regex(/^(?:\d{2}|2[AB])\d{3}$/i, 'Code INSEE de 5 caractères.')
      .transform((v) => v.toUpperCase()),
    20,
    'Communes (codes INSEE, répétés), 20 au plus.',
  ),
  cp: repete(z.string().regex(/^\d{5}$/, 'Code postal de 5 chiffres.'), 20, 'Codes postaux (répétés), 20 au plus.'),
  departement: repete(
    z
      .string()
      .regex(/^(?:\d{2}|2[AB]|9[78]\d)$/i, 'Département : 01-95, 2A, 2B, 971-976.')
      .transform((v) => v.toUpperCase()),
    10,
    'Départements (répétés), 10 au plus.',
  ),
  limite: nombre(z.number().int().min(1).max(1000).default(100)).describe('Événements par page (1-1000).'),
  curseur: z
    .string()
    .min(1)
    .max(1024)
    .optional()
    .describe('`curseur_suivant` d’une lecture précédente, mêmes filtres.'),
});

const FluxOutput = z.object({
  evenements: z.array(
    z.object({
      id: z.string().describe('Croissant dans l’ordre du flux.'),
      genre: z.enum(GENRES),
      le: z.string().describe('Quand c’est arrivé (ISO 8601) : le relevé qui l’a révélé, ou l’analyse.'),
      annonce_id: z.string(),
      avant: Etat,
      apres: Etat,
      annonce: AnnonceListeSchema.nullable().describe(
        'L’annonce aujourd’hui, au format liste ; null quand elle n’est plus servie (doublon d’une annonce d’un autre portail ou d’une autre agence, ou masquée).',
      ),
    }),
  ),
  a_jour: z.boolean().describe('Rien d’autre à lire pour l’instant.'),
  qualite: QualiteSchema,
  curseur_suivant: z.string().describe('Toujours donné, même en fin de flux : le renvoyer plus tard lit la suite.'),
  limites: z.array(z.string()).describe('Pourquoi la page est vide, quand elle l’est.'),
});
type FluxSortie = z.infer<typeof FluxOutput>;

interface PositionFlux {
  apres: number;
}

const DESCRIPTION_FLUX = `Les événements des annonces, dans l'ordre où ils ont été écrits : \`nouvelle\`, \`baisse_prix\`, \`hausse_prix\`, \`retrait\`, \`reactivation\`, \`multi_agences\`, \`analyse\`, \`reanalyse\`. **1 crédit par événement livré** (une page vide ne coûte rien) ; abonnement Data.

**Curseur.** \`curseur_suivant\` est toujours donné, même sur la dernière page : il porte le dernier identifiant lu et les filtres, signé ; renvoyé plus tard avec les mêmes filtres, il ne lit que ce qui est venu depuis (un curseur altéré, ou renvoyé avec d'autres filtres, répond 400 sur \`curseur\`). \`a_jour\` vrai : plus rien à lire pour l'instant. Les identifiants sont pris sous un verrou du journal par chaque import, dans sa transaction : un lecteur qui a lu jusqu'à l'identifiant N ne manquera jamais un identifiant plus petit écrit plus tard. Un événement n'est jamais réécrit.

**Filtres** (combinés par ET ; une liste vaut l'une de ses valeurs) : \`genres\` (répété), \`insee\` (20 au plus), \`cp\` (20 au plus), \`departement\` (10 au plus) — le lieu de l'annonce au moment de l'événement —, \`depuis\` (date ou ISO 8601 : événements survenus depuis). \`limite\` 1-1000 (100 par défaut).

**Événements.** \`le\` : le relevé du portail qui a révélé l'événement (pour \`analyse\` et \`reanalyse\`, le relevé analysé). \`avant\` et \`apres\` ont tous leurs champs, remplis selon le genre : \`nouvelle\` (après : prix, detecte_le, actif) ; \`baisse_prix\`, \`hausse_prix\` (avant : prix et son detecte_le ; après : prix, ecart_pct, detecte_le) — une seule par jour (Paris) et par nouveau prix ; \`retrait\` (avant : actif ; après : actif false, detecte_le) ; \`reactivation\` (avant : actif false et la date du retrait ; après : actif, detecte_le) ; \`multi_agences\` (nb_agences, nb_portails, prix_min, prix_max des annonces en ligne du bien, avant et après : le bien a gagné une agence ou un portail et en compte au moins deux ; écrit sur l'annonce principale du bien) ; \`analyse\` (après : analyse_le, score), \`reanalyse\` (analyse recalculée parce que ses entrées ont changé : prix, bien, marché de la commune, durée en ligne passant 90 ou 180 jours… ; avant et après : analyse_le, score). Une annonce passe à \`masque\` (portail qui la suspend) et en revient sans événement.

**Annonce** (\`annonce\`, format liste, 26 champs) : l'annonce telle qu'elle est à la lecture ; null quand elle n'est plus servie : doublon (une autre annonce de son bien est l'annonce principale), ou masquée. \`id_portail\` et \`lien\` : portée lien_origine seulement. \`score\`, \`rendement_brut\`, \`rendement_net\` : ceux de son analyse ; \`etat_visuel\` null (photos non lues) ; \`drapeaux\` : ${REGLE_DRAPEAUX}

**Source.** Relevés des portails (portal_a, portal_b, portal_c) importés en JSON Lines (\`npm run import -- annonces\`) : un relevé par ligne, l'état d'une annonce à un instant ; un relevé pas plus récent que le dernier appliqué ne change rien.`;

export const fluxAnnonces = defineOperation({
  tool: 'flux_annonces',
  method: 'GET',
  path: '/flux/annonces',
  summary: 'Flux des événements des annonces (nouvelles, baisses, retraits…)',
  description: DESCRIPTION_FLUX,
  credits: 1,
  unit: 'evenement',
  scope: 'flux',
  tier: 'data',
  sandbox: false,
  cacheS: 0,
  timeoutS: 6,
  input: FluxInput,
  output: FluxOutput,
  // From `qualite`, not from `evenements`: the events are JSON text until the answer is written (rawJson).
  units: (o: FluxSortie) => o.qualite.n ?? 0,
  dataDate: (o: FluxSortie) => o.qualite.donnees_du,
  handler: servedFromDataset(async (e, ctx, dataset): Promise<FluxSortie> => {
    const db = ctx.services.db;
    const filtres: FiltresEvenements = {
      genres: e.genres,
      insee: e.insee,
      codesPostaux: e.cp,
      departements: e.departement,
      depuis: e.depuis,
    };
    // The cursor is bound to the dataset and the filters, each list sorted: the same filters in another order are the
    // same reading.
    const lie = Object.fromEntries(
      Object.entries(filtres)
        .filter(([, v]) => v !== undefined && (!Array.isArray(v) || v.length > 0))
        .map(([k, v]) => [k, Array.isArray(v) ? [...new Set(v as string[])].sort() : v])
        .sort(([a], [b]) => (a < b ? -1 : 1)),
    );
    const scope = `flux_annonces|${dataset}|${JSON.stringify(lie)}`;
    let apres = 0;
    if (e.curseur) {
      const position = ctx.services.cursors.decode<PositionFlux>(scope, e.curseur);
      if (!position || typeof position.apres !== 'number' || !Number.isSafeInteger(position.apres)) {
        throw invalidField('curseur', 'Curseur invalide : altéré, ou émis pour d’autres filtres.', 'requete');
      }
      apres = position.apres;
    }
    const page = await lireEvenements(db, dataset, apres, filtres, e.limite);
    const annonces = await lireAnnoncesEnListe(
      db,
      dataset,
      page.evenements.map((ev) => ev.annonce_id),
      { lienOrigine: ctx.caller.portees.includes('lien_origine'), maintenant: ctx.services.now() },
    );
    const lus = page.evenements;
    const evenements = rawJson<FluxSortie['evenements']>(
      `[${lus.map((ev) => evenementServi(ev, annonces.get(ev.annonce_id))).join(',')}]`,
    );
    const limites: string[] = [];
    if (lus.length === 0) {
      const filtre = Object.keys(lie).length > 0;
      limites.push(
        page.reprise === 0
          ? 'Le journal des annonces est vide : aucun relevé de portail n’a été importé.'
          : filtre
            ? `Aucun événement ne passe ces filtres ${apres > 0 ? 'depuis le curseur' : 'dans le journal'} (filtres combinés par ET).`
            : 'Rien de nouveau depuis le curseur : renvoyer curseur_suivant plus tard.',
      );
    }
    return {
      evenements,
      a_jour: !page.reste,
      qualite: {
        n: lus.length,
        provenance: lus.length > 0 ? 'mesure' : null,
        incertitude: null,
        drapeaux: [],
        methode:
          'Journal des événements des annonces, en ajout seul, lu par identifiant croissant ; un événement par changement constaté entre deux relevés d’une annonce.',
        donnees_du: lus.at(-1)?.le ?? null,
        source: 'Relevés des portails (portal_a, portal_b, portal_c)',
      },
      curseur_suivant: ctx.services.cursors.encode(scope, { apres: page.reprise } satisfies PositionFlux),
      limites,
    };
  }),
});

/** The operations of listings, for the catalogue. */
export const annoncesOperations = [annonce, fluxAnnonces];
