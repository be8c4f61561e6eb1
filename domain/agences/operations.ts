import { z } from 'zod';
import { plier } from '../adresses/normaliser.ts';
import { defineOperation, type OperationContext } from '../catalogue.ts';
import { communeByCode } from '../communes.ts';
import { nombre } from '../entrees.ts';
import { ApiError, invalidField } from '../errors.ts';
import { Insee } from '../marche/entrees.ts';
import type { Dataset } from '../platform/sandbox.ts';
import { QualiteSchema, servedFromDataset, type Qualite } from '../qualite.ts';
import { APE_AGENCES, NON_DIFFUSE } from './derive.ts';
import { MANDATS_MIN } from './marche.ts';

/**
 * The Companies and agencies domain: `agences` (an agency's sheet by SIREN, or the agencies of a place, a brand, a
 * network) and `agences_commune` (a commune's agencies month by month, with market shares and concentration). Both
 * read the derived tables of db/migrations/036_agences.sql, rebuilt after the imports (domain/agences/derive.ts),
 * with a few indexed look-ups.
 */

const SOURCE = 'SIRENE (Insee), BODACC (DILA), annonces des portails (relevés)';
const AVIS_MAX = 20;
const MOIS_MAX = 24;
const Mois = z.string().regex(/^\d{4}-(0[1-9]|1[0-2])$/, 'Mois AAAA-MM.');

// ---------------------------------------------------------------------------------------------------------------------
// Shapes.
// ---------------------------------------------------------------------------------------------------------------------

const EtablissementSchema = z.object({
  siret: z.string(),
  siege: z.boolean().nullable(),
  adresse: z
    .string()
    .nullable()
    .describe('Numéro et voie ; null quand l’unité ou l’établissement est en diffusion partielle (ou sans adresse).'),
  code_postal: z.string().nullable(),
  commune: z.string().nullable(),
  insee: z.string().nullable(),
  tranche_effectif: z
    .string()
    .nullable()
    .describe('Tranche d’effectif SIRENE de l’unité, servie pour son siège ; null pour les autres établissements.'),
  cree_le: z.string().nullable(),
  actif: z.boolean(),
});

const ReseauSchema = z.object({
  enseigne: z
    .string()
    .nullable()
    .describe('Marque ou réseau sous lequel les annonces paraissent (à défaut, leur nom).'),
  nom_commercial: z.string().nullable().describe('Nom de l’annonceur le plus fréquent sous cette enseigne.'),
  identifiant_portail: z
    .string()
    .nullable()
    .describe('Toujours null : les relevés des portails ne portent pas d’identifiant d’annonceur.'),
  commune_principale: z.string().nullable(),
  departement_principal: z.string().nullable(),
  nb_annonces: z.number().int(),
  rapprochement: z
    .enum(['siren_annonce', 'sirene_nom_code_postal'])
    .describe(
      'Comment les annonces sont rattachées au SIREN : donné par l’annonce, ou trouvé dans SIRENE par le nom et le code postal (un seul SIREN actif concordant).',
    ),
  calcule_le: z.string().describe('Date du rapprochement (ISO 8601).'),
});

const DomaineSchema = z.object({
  domaine: z.string(),
  genre: z.enum(['propre', 'heberge']).describe('heberge : une messagerie grand public (gmail.com, orange.fr…).'),
  source: z.string(),
  observations: z.number().int().describe('Annonces qui donnent une adresse de ce domaine.'),
});

const ContactsSchema = z
  .object({
    telephone: z.string().nullable(),
    email: z.string().nullable().describe('Seulement une adresse publiée par l’agence dans ses annonces.'),
    site: z.string().nullable(),
    origine: z.enum(['published', 'desc_extracted', 'site_legal']).nullable(),
    retirees: z
      .boolean()
      .describe('true : des coordonnées sont connues mais ne peuvent être servies (aucune ne l’est).'),
  })
  .nullable();

const ActiviteCommuneSchema = z.object({
  insee: z.string(),
  enseigne: z.string().nullable(),
  mandats: z.number().int(),
  exclusifs: z.number().int(),
  duree_mediane_j: z.number().nullable(),
  part_baisses_pct: z.number().nullable(),
});

const ActiviteSchema = z
  .object({
    mois: z.string().nullable().describe('Dernier mois calculé (AAAA-MM).'),
    mandats: z.number().int(),
    exclusifs: z.number().int(),
    communes: z.array(ActiviteCommuneSchema),
    annonces_actives: z.number().int(),
    annonces_par_commune: z.array(
      z.object({ commune: z.string().nullable(), code_postal: z.string().nullable(), nb_annonces: z.number().int() }),
    ),
    qualite: QualiteSchema,
  })
  .nullable();

const AvisSchema = z.object({
  id: z.string(),
  date: z.string().describe('Date de parution (AAAA-MM-JJ).'),
  famille: z.string().nullable().describe('Famille telle que publiée (creation, immatriculation, modification…).'),
  famille_libelle: z.string().nullable(),
  categorie: z
    .string()
    .describe('creation, modification, transfert, radiation, procedure, depot_comptes, vente, autre.'),
  type: z.string().nullable().describe('annonce (avis initial), rectificatif, annulation.'),
  numero_annonce: z.number().int().nullable(),
  parution: z.string().nullable(),
  tribunal: z.string().nullable(),
  ville: z.string().nullable(),
  cp: z.string().nullable(),
  departement: z.string().nullable(),
  denomination: z.string().nullable().describe('La personne morale de l’avis ; null pour une personne physique.'),
  sirens: z.array(z.string()),
  porte_sur_personne_physique: z.boolean(),
  date_effet: z.string().nullable(),
  contenu: z
    .string()
    .describe('Résumé tiré des seuls champs codés de l’avis : ni dirigeant, ni associé, ni personne physique nommés.'),
});

const AgenceSchema = z.object({
  siren: z.string(),
  denomination: z.string().nullable().describe('null pour un entrepreneur individuel (jamais nommé).'),
  enseigne: z.string().nullable(),
  sigle: z.string().nullable(),
  categorie_juridique: z.string().nullable(),
  ape: z.string().nullable(),
  entrepreneur_individuel: z.boolean(),
  diffusion_partielle: z.boolean().describe('true : l’adresse n’est pas servie (ni noms ni coordonnées des annonces).'),
  etablissements: z.array(EtablissementSchema),
  reseaux: z.array(ReseauSchema),
  domaines: z.array(DomaineSchema),
  contacts_pro: ContactsSchema,
  activite: ActiviteSchema,
  avis_bodacc: z
    .array(AvisSchema)
    .describe(`Les ${AVIS_MAX} derniers avis BODACC de l’unité, les plus récents d’abord.`),
});
type Agence = z.infer<typeof AgenceSchema>;

const AgencesOutput = z.object({
  donnees: z.array(AgenceSchema).describe('Par SIREN croissant.'),
  curseur_suivant: z.string().nullable(),
  donnees_du: z.string().nullable().describe('Date du dernier relevé d’annonces pris en compte (AAAA-MM-JJ).'),
  limites: z.array(z.string()),
  qualite: QualiteSchema,
});
type AgencesSortie = z.infer<typeof AgencesOutput>;

// ---------------------------------------------------------------------------------------------------------------------
// Reading.
// ---------------------------------------------------------------------------------------------------------------------

interface LigneAgence {
  siren: string;
  denomination: string | null;
  sigle: string | null;
  categorie_juridique: string | null;
  ape: string | null;
  entrepreneur_individuel: boolean;
  diffusion_partielle: boolean;
  tranche_effectif: string | null;
  reseaux: Agence['reseaux'];
  domaines: Agence['domaines'];
  contacts_pro: Agence['contacts_pro'];
  activite: Agence['activite'];
  etablissements: Array<{
    siret: string;
    siege: boolean | null;
    etat: string | null;
    cree_le: string | null;
    enseigne: string | null;
    diffusion_partielle: boolean;
    numero: string | null;
    indice_repetition: string | null;
    type_voie: string | null;
    voie: string | null;
    code_postal: string | null;
    commune: string | null;
    insee: string | null;
  }>;
  avis: Array<Omit<Agence['avis_bodacc'][number], 'sirens'> & { sirens: string[] }>;
}

/** The sheets of the agencies `where` selects, by ascending SIREN, each with its establishments and notices. */
async function lireAgences(
  ctx: OperationContext,
  dataset: Dataset,
  where: string,
  params: unknown[],
  limite: number,
): Promise<LigneAgence[]> {
  const p = params.length;
  const { rows } = await ctx.services.db.query<LigneAgence>(
    `SELECT g.siren, g.denomination, g.sigle, g.categorie_juridique, g.ape, g.entrepreneur_individuel,
            g.diffusion_partielle, u.tranche_effectif, g.reseaux, g.domaines, g.contacts_pro, g.activite,
            coalesce(e.liste, '[]') AS etablissements, coalesce(b.liste, '[]') AS avis
       FROM agences g
       LEFT JOIN unites_legales u ON u.dataset = g.dataset AND u.siren = g.siren
       LEFT JOIN LATERAL (
             SELECT jsonb_agg(jsonb_build_object(
                      'siret', x.siret, 'siege', x.siege, 'etat', x.etat, 'cree_le', to_char(x.cree_le, 'YYYY-MM-DD'),
                      'enseigne', x.enseigne, 'diffusion_partielle', x.diffusion_partielle, 'numero', x.numero,
                      'indice_repetition', x.indice_repetition, 'type_voie', x.type_voie, 'voie', x.voie,
                      'code_postal', x.code_postal, 'commune', x.commune, 'insee', x.insee)
                    ORDER BY x.siege DESC NULLS LAST, x.etat, x.siret) AS liste
               FROM etablissements x WHERE x.dataset = g.dataset AND x.siren = g.siren) e ON true
       LEFT JOIN LATERAL (
             SELECT jsonb_agg(jsonb_build_object(
                      'id', a.id, 'date', to_char(a.date_parution, 'YYYY-MM-DD'), 'famille', a.famille,
                      'famille_libelle', a.famille_libelle, 'categorie', a.categorie, 'type', a.type_avis,
                      'numero_annonce', a.numero_annonce, 'parution', a.parution, 'tribunal', a.tribunal,
                      'ville', a.ville, 'cp', a.cp, 'departement', a.departement, 'denomination', a.denomination,
                      'sirens', a.sirens, 'porte_sur_personne_physique', a.porte_sur_personne_physique,
                      'date_effet', to_char(a.date_effet, 'YYYY-MM-DD'), 'contenu', a.resume)
                    ORDER BY a.date_parution DESC, a.id DESC) AS liste
               FROM (SELECT * FROM avis_bodacc a
                      WHERE a.dataset = g.dataset AND a.sirens @> ARRAY[g.siren]
                      ORDER BY a.date_parution DESC, a.id DESC LIMIT ${AVIS_MAX}) a) b ON true
      WHERE g.dataset = $1 AND ${where}
      ORDER BY g.siren
      LIMIT $${p + 2}`,
    [dataset, ...params, limite],
  );
  return rows;
}

/** An agency as served: a partially diffused unit or establishment has no address, a sole trader no name. */
function agenceServie(l: LigneAgence): Agence {
  const cache = l.entrepreneur_individuel && l.diffusion_partielle;
  const signe = l.etablissements.find((e) => e.siege && e.enseigne)?.enseigne ?? null;
  return {
    siren: l.siren,
    denomination: l.denomination,
    enseigne: cache ? null : (l.reseaux[0]?.enseigne ?? signe),
    sigle: l.sigle,
    categorie_juridique: l.categorie_juridique,
    ape: l.ape,
    entrepreneur_individuel: l.entrepreneur_individuel,
    diffusion_partielle: l.diffusion_partielle,
    etablissements: l.etablissements.map((e) => {
      const sansAdresse = l.diffusion_partielle || e.diffusion_partielle;
      const rue = [e.numero, e.indice_repetition, e.type_voie, e.voie].filter(Boolean).join(' ');
      return {
        siret: e.siret,
        siege: e.siege,
        adresse: sansAdresse || !e.voie ? null : rue,
        code_postal: e.code_postal,
        commune: e.commune,
        insee: e.insee,
        tranche_effectif: e.siege ? l.tranche_effectif : null,
        cree_le: e.cree_le,
        actif: e.etat === 'A',
      };
    }),
    reseaux: l.reseaux,
    domaines: l.domaines,
    contacts_pro: l.contacts_pro,
    activite: l.activite,
    avis_bodacc: l.avis,
  };
}

async function calcul(ctx: OperationContext, dataset: Dataset) {
  const { rows } = await ctx.services.db.query<{ dernier_mois: string | null; donnees_du: string | null }>(
    `SELECT dernier_mois, to_char(donnees_du, 'YYYY-MM-DD') AS donnees_du FROM agences_calculs WHERE dataset = $1`,
    [dataset],
  );
  return rows[0] ?? null;
}

const DESCRIPTION_AGENCES = `Les agences immobilières : la fiche d'une agence par son SIREN (\`/agences/{siren}\`), ou les agences d'un lieu (\`insee\`, \`cp\`, \`departement\`), d'une enseigne (\`enseigne\`, contenu dans le nom, insensible à la casse et aux accents) ou d'un réseau (\`reseau\`, contenu dans une marque sous laquelle ses annonces paraissent), filtres combinés par ET, par SIREN croissant, \`limite\` (1-50, 10 par défaut) par page et \`curseur_suivant\`. 2 crédits par agence servie. Aucune agence : 404 \`ressource_absente\`, rien n'est débité.

Décisions (non montrées par la spécification) :
- **Agence** : une unité légale SIRENE dont l'activité principale (de l'unité ou d'un de ses établissements) est ${APE_AGENCES.join(', ')} (68.31Z agences immobilières ; 68.32A administration de biens, qui vend et loue aussi ; 70.3A et 70.3C, leurs codes NAF rév. 1 encore portés par des unités cessées avant 2008), ou une unité que des annonces désignent comme vendeur professionnel par son SIREN. Ni les SCI de gestion (68.20A/B), ni les marchands de biens (68.10Z). Une unité absente de SIRENE importé n'a pas de fiche.
- **Lieu** : une agence est d'une commune, d'un code postal ou d'un département quand un de ses établissements actifs y est (tous ses établissements si aucun n'est actif), ou quand elle y a des annonces.
- **Entrepreneur individuel** : une personne physique, jamais nommée (\`denomination\` null : SIRENE importé ne garde pas son nom). En \`diffusion_partielle\`, ni adresse d'établissement, ni enseigne, ni domaine, ni nom ou coordonnée tirés de ses annonces : \`reseaux[].enseigne\` null, \`contacts_pro.retirees\` true ; dans agences_commune il paraît sous « ${NON_DIFFUSE} ». L'adresse d'un établissement en diffusion partielle n'est jamais servie.
- **reseaux** : les marques (à défaut les noms d'annonceur) sous lesquelles paraissent les annonces rattachées au SIREN, avec le rapprochement (\`siren_annonce\`, \`sirene_nom_code_postal\`) et sa date.
- **domaines** : les domaines des courriels publiés dans ses annonces, \`propre\` ou \`heberge\` (messagerie grand public).
- **contacts_pro** : le téléphone et le courriel les plus fréquents publiés par l'agence dans ses annonces (\`published\`), à défaut un téléphone lu dans le texte de ses annonces (\`desc_extracted\`) ; \`site\` null (aucun site n'est lu). null quand aucune coordonnée n'est connue.
- **activite** : le dernier mois calculé : mandats en portefeuille (biens distincts en ligne au moins un jour du mois, quel que soit le nombre de portails), exclusifs, par commune (durée médiane en ligne, part des biens baissés), annonces en ligne par commune.
- **avis_bodacc** : les ${AVIS_MAX} derniers avis BODACC portant son SIREN (le sujet de l'avis, ou le précédent propriétaire d'un fonds vendu) ; \`contenu\` est rebâti des champs codés seulement.
- **etablissements[].tranche_effectif** : la tranche de l'unité, servie sur son siège (SIRENE importé ne garde pas celle des établissements).`;

const COMMUN_AGENCES = {
  tool: 'agences',
  method: 'GET',
  summary: 'Agences immobilières : fiche par SIREN, ou agences d’un lieu, d’une enseigne, d’un réseau',
  description: DESCRIPTION_AGENCES,
  credits: 2,
  unit: 'element',
  scope: 'entreprises',
  tier: 'usage',
  sandbox: true,
  cacheS: 6 * 3600,
  timeoutS: 15,
  texteTiers: true,
  output: AgencesOutput,
  units: (o: AgencesSortie) => o.donnees.length,
  dataDate: (o: AgencesSortie) => o.donnees_du,
} as const;

function reponse(
  lignes: LigneAgence[],
  donneesDu: string | null,
  curseur: string | null,
  limites: string[],
): AgencesSortie {
  return {
    donnees: lignes.map(agenceServie),
    curseur_suivant: curseur,
    donnees_du: donneesDu,
    limites,
    qualite: {
      n: lignes.length,
      provenance: 'mesure',
      incertitude: null,
      drapeaux: [],
      methode:
        'Unités SIRENE d’activité immobilière, leurs établissements, leurs avis BODACC, et ce que disent leurs annonces (tables dérivées recalculées après chaque import).',
      donnees_du: donneesDu,
      source: SOURCE,
    } satisfies Qualite,
  };
}

export const agencesSiren = defineOperation({
  ...COMMUN_AGENCES,
  variant: 'siren',
  errors: ['ressource_absente'],
  path: '/agences/{siren}',
  input: z.object({
    siren: z
      .string()
      .transform((v) => v.replace(/\s/g, ''))
      .pipe(z.string().regex(/^\d{9}$/, 'SIREN : 9 chiffres.'))
      .describe('SIREN de l’agence (9 chiffres ; les espaces sont ignorés).'),
  }),
  handler: servedFromDataset(async (e, ctx, dataset) => {
    const [lignes, c] = await Promise.all([
      lireAgences(ctx, dataset, 'g.siren = $2', [e.siren], 1),
      calcul(ctx, dataset),
    ]);
    if (lignes.length === 0) {
      throw new ApiError(
        'ressource_absente',
        `Aucune agence immobilière de SIREN ${e.siren} (ni activité ${APE_AGENCES.join(', ')} dans SIRENE importé, ni annonces qui la désignent) ; rien n’est débité.`,
      );
    }
    return reponse(lignes, c?.donnees_du ?? null, null, []);
  }),
});

export const agences = defineOperation({
  ...COMMUN_AGENCES,
  path: '/agences',
  errors: ['ressource_absente'],
  territoires: (e: { insee?: string; cp?: string; departement?: string }) => [
    ...(e.insee ? [{ commune: e.insee }] : []),
    ...(e.cp ? [{ code_postal: e.cp }] : []),
    ...(e.departement ? [{ departement: e.departement }] : []),
  ],
  input: z.object({
    insee: Insee.optional(),
    cp: z
      .string()
      .regex(/^\d{5}$/, 'Code postal de 5 chiffres.')
      .optional()
      .describe('Code postal.'),
    departement: z
      .string()
      .transform((v) => v.trim().toUpperCase())
      .pipe(z.string().regex(/^(\d{2}|2[AB]|97\d)$/, 'Département : 2 caractères (2A/2B), 3 outre-mer.'))
      .optional()
      .describe('Code du département.'),
    enseigne: z.string().trim().min(2).max(80).optional().describe('Contenu dans le nom ou l’enseigne (2-80).'),
    reseau: z.string().trim().min(2).max(80).optional().describe('Contenu dans une marque de ses annonces (2-80).'),
    limite: nombre(z.number().int().min(1).max(50).default(10)).describe('Agences par page (1-50, 10 par défaut).'),
    curseur: z.string().min(1).max(1024).optional().describe('curseur_suivant de la page précédente.'),
  }),
  handler: servedFromDataset(async (e, ctx, dataset) => {
    const filtres = {
      insee: e.insee ?? null,
      cp: e.cp ?? null,
      departement: e.departement ?? null,
      enseigne: e.enseigne ? plier(e.enseigne) : null,
      reseau: e.reseau ? plier(e.reseau) : null,
    };
    if (Object.values(filtres).every((v) => v === null)) {
      throw invalidField(
        'insee',
        'Donnez un lieu (insee, cp ou departement), une enseigne ou un réseau ; ou un SIREN dans le chemin (/agences/{siren}).',
        'requete',
      );
    }
    for (const champ of ['enseigne', 'reseau'] as const) {
      if (e[champ] !== undefined && (filtres[champ] ?? '').length < 2) {
        throw invalidField(champ, 'Au moins deux lettres ou chiffres.', 'requete');
      }
    }
    const scope = `agences|${dataset}|${JSON.stringify(filtres)}`;
    let apres: string | null = null;
    if (e.curseur) {
      apres = ctx.services.cursors.decode<string>(scope, e.curseur);
      if (typeof apres !== 'string' || !/^\d{9}$/.test(apres)) {
        throw invalidField('curseur', 'Curseur invalide : altéré, ou émis pour d’autres filtres.', 'requete');
      }
    }
    const conditions: string[] = [];
    const params: unknown[] = [];
    const ajouter = (sql: (n: number) => string, valeur: unknown) => {
      params.push(valeur);
      conditions.push(sql(params.length + 1));
    };
    if (filtres.insee) ajouter((n) => `g.insee @> ARRAY[$${n}::text]`, filtres.insee);
    if (filtres.cp) ajouter((n) => `g.codes_postaux @> ARRAY[$${n}::text]`, filtres.cp);
    if (filtres.departement) ajouter((n) => `g.departements @> ARRAY[$${n}::text]`, filtres.departement);
    if (filtres.enseigne) ajouter((n) => `g.noms LIKE '%' || $${n} || '%'`, filtres.enseigne);
    if (filtres.reseau) ajouter((n) => `g.reseaux_noms LIKE '%' || $${n} || '%'`, filtres.reseau);
    if (apres) ajouter((n) => `g.siren > $${n}`, apres);
    const [lignes, c] = await Promise.all([
      lireAgences(ctx, dataset, conditions.join(' AND '), params, e.limite + 1),
      calcul(ctx, dataset),
    ]);
    if (lignes.length === 0) {
      const quoi = [
        filtres.insee && `la commune ${filtres.insee}`,
        filtres.cp && `le code postal ${filtres.cp}`,
        filtres.departement && `le département ${filtres.departement}`,
        e.enseigne && `l’enseigne « ${e.enseigne} »`,
        e.reseau && `le réseau « ${e.reseau} »`,
      ]
        .filter(Boolean)
        .join(', ');
      throw new ApiError(
        'ressource_absente',
        `Aucune agence immobilière ${apres ? 'après ce curseur ' : ''}pour ${quoi} dans SIRENE importé et les annonces ; rien n’est débité.`,
      );
    }
    const page = lignes.slice(0, e.limite);
    const suivant = lignes.length > e.limite ? ctx.services.cursors.encode(scope, page.at(-1)!.siren) : null;
    return reponse(page, c?.donnees_du ?? null, suivant, []);
  }),
});

// ---------------------------------------------------------------------------------------------------------------------
// agences_commune
// ---------------------------------------------------------------------------------------------------------------------

const AgencesCommuneOutput = z.object({
  insee: z.string(),
  commune: z.string().nullable(),
  par_mois: z
    .array(
      z.object({
        mois: z.string(),
        agences: z
          .array(
            z.object({
              enseigne: z.string().nullable(),
              siren: z.string().nullable(),
              mandats: z.number().int(),
              exclusifs: z.number().int(),
              part_exclusifs_pct: z.number().nullable(),
              part_marche_pct: z.number(),
              duree_mediane_j: z.number().nullable(),
              part_baisses_pct: z.number().nullable(),
            }),
          )
          .describe('Les plus présentes d’abord (mandats décroissants).'),
        n_agences: z.number().int(),
        mandats_total: z.number().int().nullable(),
        part_leader_pct: z.number().nullable(),
        hhi: z.number().nullable().describe('Indice de Herfindahl-Hirschman, de 0 (dispersé) à 1 (une seule agence).'),
        qualite: QualiteSchema,
      }),
    )
    .describe('Du plus récent au plus ancien.'),
  donnees_du: z.string().nullable(),
  limites: z.array(z.string()),
});

const DESCRIPTION_COMMUNE = `Les agences actives d'une commune mois par mois, d'après les annonces : enseigne, SIREN (null pour un professionnel que SIRENE ne connaît pas), mandats, exclusifs, durée médiane en ligne, part des biens baissés, part de marché ; le nombre d'agences, le total des mandats, la part du leader et l'indice de concentration (HHI). \`mois\` (AAAA-MM) un mois ; \`depuis\` (AAAA-MM) tous les mois depuis, ${MOIS_MAX} au plus (les plus récents) ; par défaut le dernier mois calculé. Aucune agence sur la période : 404 \`ressource_absente\`, rien n'est débité.

Décisions (non montrées par la spécification) :
- **Mandat** : un bien (dédoublonné entre portails) qu'un professionnel met en vente ; il compte dans chaque mois où il est en ligne au moins un jour (mandats en portefeuille), dans la commune de l'annonce. Un bien vendu par deux agences est un mandat de chacune. **exclusifs** : ceux que le portail dit exclusifs.
- **duree_mediane_j** : médiane des jours en ligne des mandats du mois, de la première parution au retrait ou à la fin du mois ; **part_baisses_pct** : part des mandats dont une baisse de prix a été vue avant la fin du mois.
- **part_marche_pct** = mandats de l'agence / mandats du mois ; **part_leader_pct** la plus grande ; **hhi** = somme des carrés des parts (entre 0 et 1), null sans mandat.
- **Agence** : le SIREN de l'annonceur (donné, ou trouvé dans SIRENE par son nom et son code postal), sinon son nom ; un entrepreneur individuel que SIRENE ne diffuse pas paraît sous « ${NON_DIFFUSE} ».
- \`qualite.drapeaux\` porte \`peu_d_observations\` sous ${MANDATS_MIN} mandats dans le mois. Un mois sans mandat dans la commune est servi vide (\`n_agences\` 0).
- Commune inconnue : 404 \`commune_introuvable\`.`;

export const agencesCommune = defineOperation({
  tool: 'agences_commune',
  method: 'GET',
  path: '/communes/{insee}/agences',
  summary: 'Agences actives d’une commune mois par mois : mandats, parts de marché, concentration',
  description: DESCRIPTION_COMMUNE,
  credits: 3,
  unit: 'appel',
  scope: 'entreprises',
  tier: 'usage',
  sandbox: true,
  territoires: (e: { insee: string }) => [{ commune: e.insee }],
  cacheS: 6 * 3600,
  timeoutS: 5,
  texteTiers: true,
  errors: ['ressource_absente', 'commune_introuvable'],
  input: z.object({
    insee: Insee,
    mois: Mois.optional().describe('Un mois (AAAA-MM).'),
    depuis: Mois.optional().describe(`Tous les mois depuis celui-ci (AAAA-MM), ${MOIS_MAX} au plus.`),
  }),
  output: AgencesCommuneOutput,
  dataDate: (o) => o.donnees_du,
  handler: servedFromDataset(async (e, ctx, dataset) => {
    const commune = communeByCode(e.insee);
    if (!commune) {
      throw new ApiError('commune_introuvable', `Aucune commune n’a le code ${e.insee} ; rien n’est débité.`);
    }
    if (e.mois && e.depuis) throw invalidField('depuis', 'Donnez mois ou depuis, pas les deux.', 'requete');
    const c = await calcul(ctx, dataset);
    const dernier = c?.dernier_mois ?? null;
    if (!dernier) {
      throw new ApiError(
        'ressource_absente',
        'Aucune annonce importée : l’activité des agences n’est pas calculée ; rien n’est débité.',
      );
    }
    const limites: string[] = [];
    let mois: string[];
    if (e.mois) mois = [e.mois];
    else if (e.depuis) {
      mois = [];
      for (let m = dernier; m >= e.depuis;) {
        mois.push(m);
        const [a, n] = m.split('-').map(Number) as [number, number];
        m = n === 1 ? `${a - 1}-12` : `${a}-${String(n - 1).padStart(2, '0')}`;
      }
      if (mois.length > MOIS_MAX) {
        limites.push(`${mois.length} mois depuis ${e.depuis} : les ${MOIS_MAX} plus récents sont servis.`);
        mois = mois.slice(0, MOIS_MAX);
      }
    } else mois = [dernier];
    if (mois.some((m) => m > dernier)) {
      limites.push(
        `Le dernier mois calculé est ${dernier} (dernier relevé d’annonces) : les mois suivants sont vides.`,
      );
    }
    const db = ctx.services.db;
    const [marches, activite] = await Promise.all([
      db.query<{
        mois: string;
        n_agences: number;
        mandats_total: number;
        part_leader_pct: number | null;
        hhi: number | null;
      }>(
        `SELECT mois, n_agences, mandats_total, part_leader_pct, hhi FROM agences_marche
          WHERE dataset = $1 AND insee = $2 AND mois = ANY($3::text[])`,
        [dataset, e.insee, mois],
      ),
      db.query<{
        mois: string;
        enseigne: string | null;
        siren: string | null;
        mandats: number;
        exclusifs: number;
        duree_mediane_j: number | null;
        part_baisses_pct: number | null;
        part_marche_pct: number;
      }>(
        `SELECT mois, enseigne, siren, mandats, exclusifs, duree_mediane_j, part_baisses_pct, part_marche_pct
           FROM agences_activite WHERE dataset = $1 AND insee = $2 AND mois = ANY($3::text[])
          ORDER BY mandats DESC, exclusifs DESC, vendeur`,
        [dataset, e.insee, mois],
      ),
    ]);
    if (activite.rows.length === 0) {
      throw new ApiError(
        'ressource_absente',
        `Aucune agence active à ${commune.nom} (${e.insee}) ${mois.length === 1 ? `en ${mois[0]}` : `de ${mois.at(-1)} à ${mois[0]}`} d’après les annonces importées ; rien n’est débité.`,
      );
    }
    const vides = mois.filter((m) => !marches.rows.some((r) => r.mois === m));
    if (vides.length > 0) limites.push(`Aucun mandat d’agence à ${commune.nom} en ${vides.join(', ')}.`);
    return {
      insee: e.insee,
      commune: commune.nom,
      par_mois: mois.map((m) => {
        const marche = marches.rows.find((r) => r.mois === m);
        const agencesMois = activite.rows.filter((r) => r.mois === m);
        const total = marche?.mandats_total ?? 0;
        return {
          mois: m,
          agences: agencesMois.map((a) => ({
            enseigne: a.enseigne,
            siren: a.siren,
            mandats: a.mandats,
            exclusifs: a.exclusifs,
            part_exclusifs_pct: Math.round((1000 * a.exclusifs) / a.mandats) / 10,
            part_marche_pct: a.part_marche_pct,
            duree_mediane_j: a.duree_mediane_j,
            part_baisses_pct: a.part_baisses_pct,
          })),
          n_agences: marche?.n_agences ?? 0,
          mandats_total: marche ? total : 0,
          part_leader_pct: marche?.part_leader_pct ?? null,
          hhi: marche?.hhi ?? null,
          qualite: {
            n: total,
            provenance: 'mesure' as const,
            incertitude: null,
            drapeaux: total < MANDATS_MIN ? ['peu_d_observations' as const] : [],
            methode:
              'Mandats en portefeuille du mois (biens distincts en ligne au moins un jour), parts de marché et HHI calculés après chaque import d’annonces.',
            donnees_du: c?.donnees_du ?? null,
            source: 'annonces des portails (relevés), SIRENE (Insee)',
          },
        };
      }),
      donnees_du: c?.donnees_du ?? null,
      limites,
    };
  }),
});

/** The operations of this domain, for the catalogue. */
export const agencesOperations = [agencesCommune, agences, agencesSiren];
