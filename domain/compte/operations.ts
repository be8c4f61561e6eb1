import { z } from 'zod';
import { transaction, type Queryable } from '../../db/client.ts';
import { defineOperation, type OperationContext } from '../catalogue.ts';
import { ApiError, invalidField } from '../errors.ts';
import {
  analyserFait,
  classerFait,
  coordonneesDans,
  FAIT_LONGUEUR_MAX,
  FAIT_LONGUEUR_MIN,
  MEMOIRE_PLAFOND,
  TMI_TRANCHES,
} from './memoire-regles.ts';
import {
  appliquerModification,
  lireDonnees,
  PROFIL_VIDE,
  ProfilInvestisseurSchema,
  ProfilModificationSchema,
  type ProfilDonnees,
  type ProfilInvestisseur,
  type ProfilModification,
} from './profil.ts';

const COMMON = {
  credits: 0,
  unit: 'appel',
  scope: 'compte',
  tier: 'usage',
  sandbox: false,
  cacheS: 0,
  personalKey: true,
} as const;

/** The pipeline guarantees a personal account for `personalKey` operations; this only narrows the type. */
function compteDe(ctx: OperationContext): string {
  const { compteId } = ctx.caller;
  if (!compteId)
    throw new ApiError('portee_insuffisante', 'Cette opération demande une clé rattachée à un compte personnel.');
  return compteId;
}

/**
 * Serialises the writes of one account (memory and profile): concurrent calls wait for each other instead of racing
 * on the ceiling or on a profile being created. NO KEY UPDATE leaves the rows that reference the account free.
 */
async function verrouillerCompte(client: Queryable, compteId: string): Promise<void> {
  const { rowCount } = await client.query('SELECT 1 FROM comptes WHERE id = $1 FOR NO KEY UPDATE', [compteId]);
  if (!rowCount) throw new ApiError('ressource_absente', 'Le compte personnel de cette clé n’existe plus.');
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

// ---------------------------------------------------------------------------------------------------------------
// Investor profile.

interface LigneProfil {
  donnees: unknown;
  cree_le: Date;
  maj_le: Date;
}

function profilDepuis(ligne: LigneProfil | undefined): ProfilInvestisseur {
  if (!ligne) return { existe: false, ...PROFIL_VIDE, cree_le: null, maj_le: null };
  return { existe: true, ...lireDonnees(ligne.donnees), cree_le: iso(ligne.cree_le), maj_le: iso(ligne.maj_le) };
}

/** The account's investor profile, or the empty one (`existe` false). Also what the Hub puts in its context. */
export async function lireProfil(db: Queryable, compteId: string): Promise<ProfilInvestisseur> {
  const { rows } = await db.query<LigneProfil>(
    'SELECT donnees, cree_le, maj_le FROM profils_investisseur WHERE compte_id = $1',
    [compteId],
  );
  return profilDepuis(rows[0]);
}

/** Creates or modifies the profile; the caller holds the account lock. `maj_le` moves only when something changed. */
async function modifierProfil(
  client: Queryable,
  compteId: string,
  modification: ProfilModification,
  maintenant: Date,
): Promise<ProfilInvestisseur> {
  const { rows } = await client.query<LigneProfil>(
    'SELECT donnees, cree_le, maj_le FROM profils_investisseur WHERE compte_id = $1',
    [compteId],
  );
  const actuel: ProfilDonnees = rows[0] ? lireDonnees(rows[0].donnees) : PROFIL_VIDE;
  const suivant = appliquerModification(actuel, modification);
  if (rows[0] && JSON.stringify(suivant) === JSON.stringify(actuel)) return profilDepuis(rows[0]);
  const ecrit = await client.query<LigneProfil>(
    `INSERT INTO profils_investisseur (compte_id, donnees, cree_le, maj_le) VALUES ($1, $2, $3, $3)
     ON CONFLICT (compte_id) DO UPDATE SET donnees = EXCLUDED.donnees, maj_le = EXCLUDED.maj_le
     RETURNING donnees, cree_le, maj_le`,
    [compteId, JSON.stringify(suivant), maintenant],
  );
  return profilDepuis(ecrit.rows[0]);
}

const LISTES_VIDES =
  'Tant que le compte n’a pas de profil, `existe` vaut false, les champs simples valent null, les listes (`regions`, `villes`, `departements`, `types`) sont vides, `objectifs` et `notifications` ont tous leurs membres à null et `profil_pro` vaut null. Un champ jamais renseigné d’un profil existant se lit de la même façon.';

export const profilInvestisseur = defineOperation({
  ...COMMON,
  tool: 'profil_investisseur',
  method: 'GET',
  path: '/compte/profil',
  timeoutS: 3,
  summary: 'Lire le profil investisseur',
  description: [
    'Le profil investisseur du compte personnel de la clé : stratégie, budgets, apport, zones recherchées, critères du bien, objectifs, TMI, profil professionnel et préférences de notification.',
    '',
    LISTES_VIDES,
    '',
    'La TMI (`tmi_pct`) et l’apport (`apport_eur`) sont aussi renseignés par la mémoire du compte (POST /compte/memoire) quand un fait les énonce. `cree_le` et `maj_le` sont des horodatages ISO 8601 (null sans profil).',
  ].join('\n'),
  input: z.object({}),
  output: ProfilInvestisseurSchema,
  async handler(_input, ctx) {
    return lireProfil(ctx.services.db, compteDe(ctx));
  },
});

export const profilInvestisseurModifier = defineOperation({
  ...COMMON,
  tool: 'profil_investisseur_modifier',
  method: 'PATCH',
  effect: 'ecriture',
  path: '/compte/profil',
  timeoutS: 4,
  summary: 'Créer ou modifier le profil investisseur',
  description: [
    'Crée le profil s’il n’existe pas, puis le modifie champ par champ ; renvoie le profil complet à jour (même forme que GET /compte/profil).',
    '',
    '- **Méthode PATCH** : seuls les champs fournis changent ; un champ absent garde sa valeur.',
    '- `null` efface un champ qui l’accepte (`budget_total`, `budget_par_bien`, `apport_eur`, `surface_min`, `surface_max`, `pieces_min`, `dpe_max`, `rendement_min`, `score_min`, `tmi_pct`, les membres de `objectifs` et de `notifications`, `profil_pro` entier et ses membres `metier`, `reseau`).',
    '- Une liste fournie remplace la liste enregistrée (`[]` la vide) ; les doublons sont retirés, l’ordre est gardé.',
    '- `objectifs`, `notifications` et `profil_pro` se modifient membre par membre : `{"objectifs": {"nb_biens": 3}}` ne touche pas `horizon_ans`. Un `metier` ou `reseau` vide vaut null.',
    '- `departements` : codes officiels (01 à 95, 2A, 2B, 971 à 976) ; `regions` et `villes` : 100 caractères au plus par élément ; `secteurs` : 80.',
    `- \`tmi_pct\` : une tranche du barème, ${TMI_TRANCHES.join(', ')}.`,
    '- Cohérence : `surface_min` ne peut dépasser `surface_max`, ni `budget_par_bien` dépasser `budget_total` ; vérifiée quand l’un des deux champs est modifié (400 `parametres_invalides` sur le champ fourni).',
    '- Un champ inconnu est refusé (400), pour qu’une faute de frappe ne passe pas inaperçue.',
    '- `maj_le` ne change que si une valeur change.',
  ].join('\n'),
  input: ProfilModificationSchema,
  output: ProfilInvestisseurSchema,
  async handler(input, ctx) {
    const compteId = compteDe(ctx);
    return transaction(ctx.services.db, async (client) => {
      await verrouillerCompte(client, compteId);
      return modifierProfil(client, compteId, input, ctx.services.now());
    });
  },
});

// ---------------------------------------------------------------------------------------------------------------
// Account memory.

const FaitDateSchema = z.object({
  fait: z.string(),
  date: z.string().describe('Quand le fait a été retenu ou redit en dernier (ISO 8601).'),
});
const MemoireSchema = z.object({
  faits: z.array(FaitDateSchema).describe('Du plus récent au plus ancien.'),
  total: z.int(),
  plafond: z.int(),
  tmi_pct: z.number().nullable(),
  apport_eur: z.number().nullable(),
});
export type Memoire = z.infer<typeof MemoireSchema>;
const MemoireAjoutSchema = MemoireSchema.extend({
  retenus: z.array(z.string()),
  deja_connu: z.array(z.string()),
  refus: z.array(z.object({ fait: z.string(), motif: z.string() })),
  oublies: z.array(z.string()).describe('Faits sortis par le plafond, du plus ancien au plus récent.'),
});

/** The account's memory, newest first, with TMI and down payment from the profile. Also read by the Hub. */
export async function lireMemoire(db: Queryable, compteId: string): Promise<Memoire> {
  // One after the other: inside a transaction both run on the same client.
  const faits = await db.query<{ fait: string; retenu_le: Date }>(
    'SELECT fait, retenu_le FROM memoire_faits WHERE compte_id = $1 ORDER BY ordre DESC LIMIT $2',
    [compteId, MEMOIRE_PLAFOND],
  );
  const profil = await db.query<{ tmi_pct: number | null; apport_eur: number | null }>(
    `SELECT (donnees->>'tmi_pct')::numeric AS tmi_pct, (donnees->>'apport_eur')::numeric AS apport_eur
       FROM profils_investisseur WHERE compte_id = $1`,
    [compteId],
  );
  return {
    faits: faits.rows.map((r) => ({ fait: r.fait, date: r.retenu_le.toISOString() })),
    total: faits.rows.length,
    plafond: MEMOIRE_PLAFOND,
    tmi_pct: profil.rows[0]?.tmi_pct ?? null,
    apport_eur: profil.rows[0]?.apport_eur ?? null,
  };
}

const REGLES_MEMOIRE = [
  `- **Plafond** : ${MEMOIRE_PLAFOND} faits par compte ; au-delà, les plus anciens sortent (\`oublies\`).`,
  `- **Doublons** : deux faits identiques aux majuscules, accents, espaces et ponctuation finale près n’en font qu’un. Un fait déjà connu est gardé une fois, avec sa formulation d’origine, et remonte en tête (sa date devient celle où il a été redit) : le plafond fait sortir ce que personne n’a répété.`,
  '- **Refus** (avec le motif) : données sensibles sur une personne, l’utilisateur ou un proche (RGPD art. 9 et 10 : santé, y compris handicap, addiction, grossesse et soins ; convictions religieuses ou philosophiques ; opinions politiques ; appartenance syndicale ; vie et orientation sexuelles ; origine raciale ou ethnique ; données génétiques ou biométriques ; condamnations, infractions et mesures pénales), coordonnées bancaires, numéro de sécurité sociale, mots de passe ; coordonnées (téléphone, adresse électronique, adresse postale d’une personne) ; données d’un tiers nommé (« M. Dupont », « mon frère Jean »). Un fait refusé n’est pas conservé du tout, pas même une TMI ou un apport qu’il contiendrait.',
  '- Un lieu ou un équipement n’est pas une donnée sur une personne et reste permis : « près de la mosquée », « rue de la Synagogue », « logement accessible PMR pour ma mère », « près d’un hôpital », « porte condamnée », « maison avec dépendance ». La nationalité, l’origine sociale, la situation familiale et la profession (« infirmière en psychiatrie », « avocat pénaliste ») sont aussi permises.',
  '- **Profil** : une TMI reconnue (« TMI 30 % », « tranche marginale de 41 », « je ne suis pas imposable » = 0) ou un apport (« apport de 50 000 € », « 50k€ d’apport », « sans apport » = 0) renseigne `tmi_pct` ou `apport_eur` du profil investisseur, créé au besoin ; la phrase reste aussi en mémoire. Une valeur hors barème (TMI) ou un apport en pourcentage ne renseigne rien.',
].join('\n');

export const memoire = defineOperation({
  ...COMMON,
  tool: 'memoire',
  method: 'GET',
  path: '/compte/memoire',
  timeoutS: 3,
  summary: 'Lire la mémoire du compte',
  description: [
    'Les faits durables retenus sur l’utilisateur de la clé, du plus récent au plus ancien, avec la TMI et l’apport tels que le profil investisseur les porte (null s’ils sont inconnus). Le Hub lit les mêmes faits.',
    '',
    'Règles de la mémoire (voir POST /compte/memoire) :',
    '',
    REGLES_MEMOIRE,
  ].join('\n'),
  input: z.object({}),
  output: MemoireSchema,
  async handler(_input, ctx) {
    return lireMemoire(ctx.services.db, compteDe(ctx));
  },
});

export const memoireAjouter = defineOperation({
  ...COMMON,
  tool: 'memoire_ajouter',
  method: 'POST',
  // Deduplicated (the same facts again change nothing), and the ceiling pushes the oldest out: it sets, not adds.
  effect: 'ecriture',
  path: '/compte/memoire',
  timeoutS: 4,
  summary: 'Ajouter des faits à la mémoire du compte',
  description: [
    `Ajoute de 1 à 5 faits (${FAIT_LONGUEUR_MIN} à ${FAIT_LONGUEUR_MAX} caractères chacun) avec les règles du Hub, puis renvoie la mémoire à jour et le sort de chaque fait : \`retenus\`, \`deja_connu\`, \`refus\` (avec \`motif\`), \`oublies\`.`,
    '',
    REGLES_MEMOIRE,
    '',
    'Tout se fait en une transaction : deux ajouts simultanés du même fait n’en gardent qu’un.',
  ].join('\n'),
  input: z
    .object({
      faits: z
        .array(
          z
            .string()
            .trim()
            .min(FAIT_LONGUEUR_MIN, `${FAIT_LONGUEUR_MIN} caractères au moins.`)
            .max(FAIT_LONGUEUR_MAX, `${FAIT_LONGUEUR_MAX} caractères au plus.`),
        )
        .min(1, 'Au moins un fait.')
        .max(5, '5 faits au plus par appel.'),
    })
    .strict(),
  output: MemoireAjoutSchema,
  async handler(input, ctx) {
    const compteId = compteDe(ctx);
    const maintenant = ctx.services.now();
    const analyses = input.faits.map(analyserFait);
    const refus = analyses.filter((a) => a.refus).map((a) => ({ fait: a.texte, motif: a.refus!.motif }));
    const acceptes = analyses.filter((a) => !a.refus);

    return transaction(ctx.services.db, async (client) => {
      await verrouillerCompte(client, compteId);
      const retenus: string[] = [];
      const dejaConnu: string[] = [];
      const vus = new Set<string>();
      for (const fait of acceptes) {
        if (vus.has(fait.cle)) {
          dejaConnu.push(fait.texte);
          continue;
        }
        vus.add(fait.cle);
        const insere = await client.query(
          `INSERT INTO memoire_faits (compte_id, cle, fait, retenu_le) VALUES ($1, $2, $3, $4)
           ON CONFLICT (compte_id, cle) DO NOTHING`,
          [compteId, fait.cle, fait.texte, maintenant],
        );
        if (insere.rowCount) {
          retenus.push(fait.texte);
        } else {
          await client.query(
            `UPDATE memoire_faits SET ordre = nextval('memoire_faits_ordre'), retenu_le = $3
              WHERE compte_id = $1 AND cle = $2`,
            [compteId, fait.cle, maintenant],
          );
          dejaConnu.push(fait.texte);
        }
      }

      const sortis = await client.query<{ fait: string; ordre: number }>(
        `DELETE FROM memoire_faits WHERE compte_id = $1 AND ordre IN (
           SELECT ordre FROM memoire_faits WHERE compte_id = $1 ORDER BY ordre DESC OFFSET $2)
         RETURNING fait, ordre`,
        [compteId, MEMOIRE_PLAFOND],
      );
      const oublies = sortis.rows.sort((a, b) => a.ordre - b.ordre).map((r) => r.fait);

      // The last figure stated wins, whether its fact is new or already known: the user is saying it now.
      const modification: ProfilModification = {};
      for (const fait of acceptes) {
        if (fait.tmi_pct !== null) modification.tmi_pct = fait.tmi_pct;
        if (fait.apport_eur !== null) modification.apport_eur = fait.apport_eur;
      }
      if (Object.keys(modification).length > 0) await modifierProfil(client, compteId, modification, maintenant);

      return { ...(await lireMemoire(client, compteId)), retenus, deja_connu: dejaConnu, refus, oublies };
    });
  },
});

// ---------------------------------------------------------------------------------------------------------------
// Validated address of a listing.

const PRECISIONS = ['numero', 'rue', 'lieu_dit', 'commune'] as const;

export const validerAdresse = defineOperation({
  ...COMMON,
  tool: 'valider_adresse',
  method: 'POST',
  effect: 'ecriture',
  path: '/annonces/{id}/adresse-validee',
  timeoutS: 8,
  summary: 'Valider l’adresse d’une annonce',
  description: [
    'Enregistre l’adresse confirmée par l’utilisateur de la clé pour une annonce, dans le cache partagé des localisations : une adresse par annonce, la dernière validation remplace la précédente. Elle sert ensuite aux outils adresse_annonce et localiser_annonce (étape disque) et au Hub.',
    '',
    '- `id` est l’identifiant de l’annonce tel que donné dans le chemin (service ou `<portail>:<identifiant>`), espaces de bord retirés ; l’annonce n’a pas à être déjà connue du service.',
    '- `lat` et `lon` vont ensemble : l’un sans l’autre est refusé (400).',
    '- Le cache étant partagé, `libelle` ne doit contenir ni téléphone ni adresse électronique, et `confiance` (ce qui fonde la validation) ni donnée sensible, ni coordonnée, ni personne nommée : sinon 400 avec le motif.',
    '- Sont gardés avec l’adresse : le compte et l’organisation qui l’ont validée, et la date ; ils ne sont jamais servis à d’autres organisations.',
    '- `enregistre` vaut true quand l’adresse est enregistrée (toute erreur répond par un problème, rien n’est alors enregistré) ; `note` dit si elle est la première pour cette annonce ou si elle remplace une validation antérieure.',
  ].join('\n'),
  input: z
    .object({
      id: z.string().trim().min(3, '3 caractères au moins.').max(200, '200 caractères au plus.'),
      libelle: z.string().trim().min(5, '5 caractères au moins.').max(300, '300 caractères au plus.'),
      lat: z.number().min(-90).max(90).optional(),
      lon: z.number().min(-180).max(180).optional(),
      precision: z.enum(PRECISIONS).optional(),
      confiance: z.string().trim().max(120, '120 caractères au plus.').optional(),
    })
    .strict(),
  output: z.object({ enregistre: z.boolean(), id: z.string(), libelle: z.string(), note: z.string() }),
  async handler(input, ctx) {
    const compteId = compteDe(ctx);
    if ((input.lat === undefined) !== (input.lon === undefined)) {
      throw invalidField(input.lat === undefined ? 'lat' : 'lon', 'Donnez lat et lon ensemble, ou aucun des deux.');
    }
    const dansLibelle = coordonneesDans(input.libelle);
    if (dansLibelle) throw invalidField('libelle', `Libellé refusé : ${dansLibelle.motif}`);
    const dansConfiance = input.confiance ? classerFait(input.confiance) : null;
    if (dansConfiance) throw invalidField('confiance', `Texte refusé : ${dansConfiance.motif}`);

    const { rows } = await ctx.services.db.query<{ precedente: Date | null; precedente_organisation: string | null }>(
      `WITH avant AS (SELECT valide_le, organisation_id FROM adresses_validees WHERE annonce_id = $1)
       INSERT INTO adresses_validees
         (annonce_id, libelle, lat, lon, precision, confiance, compte_id, organisation_id, valide_le)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
       ON CONFLICT (annonce_id) DO UPDATE SET
         libelle = EXCLUDED.libelle, lat = EXCLUDED.lat, lon = EXCLUDED.lon, precision = EXCLUDED.precision,
         confiance = EXCLUDED.confiance, compte_id = EXCLUDED.compte_id, organisation_id = EXCLUDED.organisation_id,
         valide_le = EXCLUDED.valide_le
       RETURNING (SELECT valide_le FROM avant) AS precedente,
                 (SELECT organisation_id FROM avant)::text AS precedente_organisation`,
      [
        input.id,
        input.libelle,
        input.lat ?? null,
        input.lon ?? null,
        input.precision ?? null,
        input.confiance || null,
        compteId,
        ctx.caller.organisationId,
        ctx.services.now(),
      ],
    );
    const { precedente, precedente_organisation } = rows[0] ?? {};
    // The date of an earlier validation is the caller's own business only: another organisation's activity is never
    // served, not even when it was.
    const note = !precedente
      ? 'Adresse enregistrée : première validation pour cette annonce.'
      : precedente_organisation === String(ctx.caller.organisationId)
        ? `Adresse enregistrée ; elle remplace celle validée le ${precedente.toISOString().slice(0, 10)}.`
        : 'Adresse enregistrée ; elle remplace une validation antérieure.';
    return { enregistre: true, id: input.id, libelle: input.libelle, note };
  },
});

/** The account operations, in catalogue order. */
export const compteOperations = [
  validerAdresse,
  memoire,
  memoireAjouter,
  profilInvestisseur,
  profilInvestisseurModifier,
];
