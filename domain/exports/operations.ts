import { z } from 'zod';
import { defineOperation } from '../catalogue.ts';
import { ApiError } from '../errors.ts';
import { jour } from '../entrees.ts';
import { TYPES_CONTENU, nomDonnees, type Perimetre } from './construire.ts';
import { FORMATS_EXPORT, JEUX_EXPORT, RETRAIT_PARTICULIERS } from './editions.ts';
import { adresseFichier, DUREE_LIEN_S } from './telechargement.ts';

/**
 * Exports: `exports` lists the checked editions an organisation's contract opens (the datasets of its perimeter, set
 * through the admin API, `PUT /admin/v1/organisations/{id}/exports`) and the common sample editions; and
 * `exports_telecharger` answers 302 to a file of an edition through an address valid 15 minutes, each download
 * logged. Contract tier, REST only (never a tool of the Hub or MCP), free.
 */

const API = '/api/v1';
const Jeu = z.enum(JEUX_EXPORT).describe('Jeu de données exporté.');
const Format = z.enum(FORMATS_EXPORT);
const FICHIERS = ['donnees', 'dictionnaire', 'fiche_qualite'] as const;

const PERIMETRE_ADMIN =
  'Le périmètre de contrat d’une organisation (les jeux dont l’export est ouvert) se règle par l’API d’administration : `PUT /admin/v1/organisations/{id}/exports` avec `{"jeux": […], "motif": "…"}` ouvre les jeux nommés et ferme les autres ; chaque ouverture et fermeture reste datée (`GET /admin/v1/organisations/{id}/exports` en donne l’historique).';

const EditionSchema = z.object({
  jeu: Jeu,
  date: z.string().describe('Jour de l’édition (AAAA-MM-JJ).'),
  format: Format,
  taille_octets: z.number().int().nullable(),
  lignes: z.number().int().nullable(),
  sha256: z.string().nullable().describe('SHA-256 (hexadécimal) du fichier de données.'),
  dictionnaire: z.boolean().describe('Un dictionnaire des données (colonnes, types, sens) accompagne l’édition.'),
  fiche_qualite: z
    .boolean()
    .describe(
      'Une fiche qualité (lignes, nuls par colonne, période, dates des sources, retrait) accompagne l’édition.',
    ),
  perimetre: z
    .enum(['contrat', 'echantillon'])
    .describe('contrat : le fichier complet ouvert par le contrat ; echantillon : le territoire de démonstration.'),
  genere_le: z.string().nullable(),
  telechargement: z.string().describe('Chemin de téléchargement (exports_telecharger).'),
});

interface LigneEdition {
  id: string;
  jeu: z.infer<typeof Jeu>;
  date: string;
  format: z.infer<typeof Format>;
  perimetre: Perimetre;
  taille_octets: string | null;
  lignes: string | null;
  sha256: string | null;
  genere_le: Date;
  taille_dictionnaire: string | null;
  taille_fiche_qualite: string | null;
  sha256_dictionnaire: string | null;
  sha256_fiche_qualite: string | null;
}

const nombreOuNull = (v: string | number | null) => (v === null ? null : Number(v));

/** The datasets the organisation's contract opens for export now. */
async function perimetreDe(db: { query: (sql: string, params: unknown[]) => Promise<{ rows: any[] }> }, org: string) {
  const { rows } = await db.query(
    'SELECT jeu FROM exports_droits WHERE organisation_id = $1 AND ferme_le IS NULL ORDER BY jeu',
    [org],
  );
  return rows.map((r: { jeu: string }) => r.jeu);
}

export const exportsListe = defineOperation({
  tool: 'exports',
  method: 'GET',
  path: '/exports',
  summary: 'Éditions des fichiers complets ouvertes par le contrat',
  description: `Les éditions des jeux du périmètre du contrat de l’organisation (fichiers complets, \`perimetre: contrat\`) et les éditions communes (\`perimetre: echantillon\` : les lignes du territoire de démonstration), les plus récentes d’abord. Seules les éditions dont le volume a été contrôlé avant envoi sont listées : une édition vide, ou dont le nombre de lignes a baissé de plus de moitié depuis la précédente, est retenue. Chaque édition est écrite en Parquet (types explicites) et en CSV compressé (gzip), avec son dictionnaire et sa fiche qualité. Un jeu dont le service ne tient pas les données (diffusion, coproprietes, indice_travaux) ou dont le format ne se produit pas ici (tuiles pmtiles) n’a pas d’édition : il n’est jamais listé. ${PERIMETRE_ADMIN}`,
  credits: 0,
  unit: 'appel',
  scope: 'exports',
  tier: 'contrat',
  sandbox: false,
  cacheS: 300,
  cacheParOrganisation: true,
  timeoutS: 5,
  restOnly: true,
  input: z.object({ jeu: Jeu.optional().describe('Seulement les éditions de ce jeu.') }),
  output: z.object({
    editions: z.array(EditionSchema).describe('Éditions, les plus récentes d’abord.'),
    duree_lien_s: z.number().int().describe('Durée de validité d’une adresse de téléchargement (secondes).'),
    retrait_particuliers: z.string().describe('Retrait des particuliers appliqué à chaque ligne de chaque édition.'),
  }),
  handler: async (input, ctx) => {
    const db = ctx.services.db;
    const jeux = await perimetreDe(db, ctx.caller.organisationId);
    const { rows } = await db.query<LigneEdition>(
      `SELECT id, jeu, date::text AS date, format, perimetre, taille_octets, lignes, sha256, genere_le
         FROM exports_editions
        WHERE statut = 'listee' AND ($1::text IS NULL OR jeu = $1)
          AND (perimetre = 'echantillon' OR jeu = ANY($2::text[]))
        ORDER BY date DESC, genere_le DESC, jeu, perimetre, format
        LIMIT 1000`,
      [input.jeu ?? null, jeux],
    );
    return {
      editions: rows.map((r) => ({
        jeu: r.jeu,
        date: r.date,
        format: r.format,
        taille_octets: nombreOuNull(r.taille_octets),
        lignes: nombreOuNull(r.lignes),
        sha256: r.sha256,
        dictionnaire: true,
        fiche_qualite: true,
        perimetre: r.perimetre,
        genere_le: r.genere_le.toISOString(),
        telechargement: `${API}/exports/${r.jeu}/${r.date}?format=${encodeURIComponent(r.format)}${
          r.perimetre === 'echantillon' && jeux.includes(r.jeu) ? '&perimetre=echantillon' : ''
        }`,
      })),
      duree_lien_s: DUREE_LIEN_S,
      retrait_particuliers: RETRAIT_PARTICULIERS,
    };
  },
});

export const exportsTelecharger = defineOperation({
  tool: 'exports_telecharger',
  method: 'GET',
  path: '/exports/{jeu}/{date}',
  summary: 'Télécharger un fichier d’une édition (redirection 302)',
  description: `Redirige (302) vers le fichier de données d’une édition, son dictionnaire ou sa fiche qualité, par une adresse pré-signée valable 15 minutes (\`expire_le\`) : celle du stockage S3 quand les fichiers y sont, sinon un lien signé de cette API servi sans clé. Le corps JSON décrit le fichier servi, avec l’adresse (\`url\`) pour un client qui ne suit pas les redirections. Chaque téléchargement est journalisé (organisation, clé, édition, fichier, moment). Une édition du jeu de votre contrat est servie de préférence à l’échantillon du même jour ; \`perimetre=echantillon\` demande l’échantillon. Une édition absente, retenue par son contrôle de volume, ou d’un jeu hors du périmètre du contrat répond 404 \`ressource_absente\`, le \`detail\` disant lequel. ${PERIMETRE_ADMIN}`,
  credits: 0,
  unit: 'appel',
  scope: 'exports',
  tier: 'contrat',
  sandbox: false,
  cacheS: 0,
  timeoutS: 5,
  restOnly: true,
  errors: ['ressource_absente'],
  input: z.object({
    jeu: Jeu,
    // A day of the calendar (no 30 February), of a year PostgreSQL knows (not 0000).
    date: jour.describe('Jour de l’édition (AAAA-MM-JJ).'),
    format: Format.default('parquet').describe('Format du fichier de données (parquet par défaut).'),
    fichier: z.enum(FICHIERS).default('donnees').describe('donnees (par défaut), dictionnaire ou fiche_qualite.'),
    perimetre: z
      .enum(['contrat', 'echantillon'])
      .optional()
      .describe('Sans lui : l’édition du contrat quand le jeu est dans son périmètre, sinon l’échantillon.'),
  }),
  output: z.object({
    jeu: Jeu,
    date: z.string(),
    format: Format,
    fichier: z.enum(FICHIERS),
    perimetre: z.enum(['contrat', 'echantillon']),
    taille_octets: z.number().int().nullable(),
    lignes: z
      .number()
      .int()
      .nullable()
      .describe('Lignes du fichier de données ; null pour le dictionnaire et la fiche.'),
    sha256: z.string().nullable().describe('SHA-256 (hexadécimal) du fichier servi.'),
    expire_le: z.string().describe('Fin de validité de l’adresse (ISO 8601).'),
    url: z.string().describe('L’adresse de la redirection (en-tête Location).'),
  }),
  redirect: (output) => output.url,
  handler: async (input, ctx) => {
    const { db, files } = ctx.services;
    if (!files) throw new ApiError('service_indisponible', 'Aucun stockage de fichiers n’est configuré ici.');
    const jeux = await perimetreDe(db, ctx.caller.organisationId);
    // The contract's edition when the dataset is in its perimeter, else (or when asked) the common sample.
    const perimetre: Perimetre = input.perimetre ?? (jeux.includes(input.jeu) ? 'contrat' : 'echantillon');
    if (perimetre === 'contrat' && !jeux.includes(input.jeu)) {
      throw new ApiError(
        'ressource_absente',
        `Le jeu ${input.jeu} n’est pas dans le périmètre d’export de votre contrat : seules ses éditions d’échantillon vous sont ouvertes.`,
      );
    }
    const { rows } = await db.query<LigneEdition & { statut: string; raison: string | null }>(
      `SELECT id, jeu, date::text AS date, format, perimetre, statut, raison, taille_octets, lignes, sha256, genere_le,
              taille_dictionnaire, taille_fiche_qualite, sha256_dictionnaire, sha256_fiche_qualite
         FROM exports_editions WHERE jeu = $1 AND date = $2 AND format = $3 AND perimetre = $4`,
      [input.jeu, input.date, input.format, perimetre],
    );
    const edition = rows[0];
    if (!edition || edition.statut !== 'listee') {
      let detail = edition
        ? `L’édition ${input.jeu} du ${input.date} (${input.format}) est retenue par son contrôle : ${edition.raison}`
        : `Aucune édition ${input.jeu} du ${input.date} au format ${input.format} : GET /exports liste celles qui vous sont ouvertes.`;
      if (!edition && !jeux.includes(input.jeu)) {
        const { rowCount } = await db.query(
          `SELECT 1 FROM exports_editions WHERE jeu = $1 AND date = $2 AND perimetre = 'contrat' AND statut = 'listee'`,
          [input.jeu, input.date],
        );
        if (rowCount) {
          detail = `Le jeu ${input.jeu} n’est pas dans le périmètre d’export de votre contrat : seules ses éditions d’échantillon vous sont ouvertes.`;
        }
      }
      throw new ApiError('ressource_absente', detail);
    }
    const now = ctx.services.now();
    const expireLe = new Date(Math.floor(now.getTime() / 1000) * 1000 + DUREE_LIEN_S * 1000);
    const donnees = input.fichier === 'donnees';
    const nom = donnees
      ? nomDonnees(edition.format as 'parquet' | 'csv.gz')
      : input.fichier === 'dictionnaire'
        ? 'dictionnaire.json'
        : 'fiche_qualite.json';
    const url = adresseFichier(
      files,
      {
        perimetre: edition.perimetre,
        jeu: edition.jeu,
        date: edition.date,
        nom,
        contentType: donnees ? TYPES_CONTENU[edition.format as 'parquet' | 'csv.gz'] : TYPES_CONTENU.json,
      },
      expireLe,
      now,
    );
    await db.query(
      `INSERT INTO exports_telechargements (organisation_id, cle_id, edition_id, fichier, requete, le, expire_le)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [ctx.caller.organisationId, ctx.caller.cleId, edition.id, input.fichier, ctx.requestId, now, expireLe],
    );
    return {
      jeu: edition.jeu,
      date: edition.date,
      format: edition.format,
      fichier: input.fichier,
      perimetre: edition.perimetre,
      taille_octets: nombreOuNull(
        donnees
          ? edition.taille_octets
          : input.fichier === 'dictionnaire'
            ? edition.taille_dictionnaire
            : edition.taille_fiche_qualite,
      ),
      lignes: donnees ? nombreOuNull(edition.lignes) : null,
      sha256: donnees
        ? edition.sha256
        : input.fichier === 'dictionnaire'
          ? edition.sha256_dictionnaire
          : edition.sha256_fiche_qualite,
      expire_le: expireLe.toISOString(),
      url,
    };
  },
});

/** The operations of this domain, for the catalogue. */
export const exportsOperations = [exportsListe, exportsTelecharger];
