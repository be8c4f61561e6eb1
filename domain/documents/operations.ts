import { createHash } from 'node:crypto';
import { z } from 'zod';
import { randomToken } from '../../lib/crypto.ts';
import { defineOperation, type OperationContext, type Services } from '../catalogue.ts';
import { ApiError } from '../errors.ts';
import {
  DOCUMENT_FORMATS,
  DOCUMENT_TYPES,
  fileName,
  maskContacts,
  MIME_TYPES,
  plainOf,
  type DocumentSource,
} from './document.ts';
import { RenderAborted, sharedRenderPool, type Generated, type RenderPool } from './pool.ts';
import { signedLink, storageKey, type FileDelivery } from './telechargement.ts';

function documentServices(ctx: OperationContext): { files: FileDelivery; pool: RenderPool } {
  const services = ctx.services;
  if (!services.files) {
    throw new ApiError('service_indisponible', 'Le stockage des fichiers générés n’est pas configuré sur ce service.');
  }
  return { files: services.files, pool: services.renderPool ?? sharedRenderPool() };
}

// Bounds the specification leaves open, chosen so that one cell, bullet or paragraph stays readable on a page.
export const LIMITES = {
  titre: 4000,
  date: 200,
  sections: 20,
  paragraphes: 40,
  paragraphe: 20_000,
  puces: 40,
  puce: 4000,
  colonnes: 12,
  colonne: 200,
  lignes: 200,
  cellule: 1000,
  sources: 20,
  source: 2000,
} as const;

const text = (max: number) => z.string().max(max, `${max} caractères au plus.`);

const TableauSchema = z
  .strictObject({
    colonnes: z
      .array(text(LIMITES.colonne))
      .min(1, 'Une colonne au moins.')
      .max(LIMITES.colonnes, `${LIMITES.colonnes} colonnes au plus.`)
      .describe('En-têtes des colonnes (1 à 12), répétés en haut de chaque page que le tableau occupe.'),
    lignes: z
      .array(z.array(text(LIMITES.cellule)).max(LIMITES.colonnes, `${LIMITES.colonnes} cellules au plus.`))
      .max(LIMITES.lignes, `${LIMITES.lignes} lignes au plus.`)
      .describe('Lignes du tableau (200 au plus) ; une ligne plus courte que les colonnes est complétée à vide.'),
  })
  .superRefine((tableau, ctx) => {
    tableau.lignes.forEach((ligne, i) => {
      if (ligne.length > tableau.colonnes.length) {
        ctx.addIssue({
          code: 'custom',
          path: ['lignes', i],
          message: `${ligne.length} cellules pour ${tableau.colonnes.length} colonnes.`,
        });
      }
    });
  });

const SectionSchema = z
  .strictObject({
    titre: text(LIMITES.titre).optional().describe('Titre de la section (numéroté dans un rapport, un compte rendu).'),
    paragraphes: z
      .array(text(LIMITES.paragraphe))
      .max(LIMITES.paragraphes, `${LIMITES.paragraphes} paragraphes au plus.`)
      .optional(),
    puces: z
      .array(text(LIMITES.puce))
      .max(LIMITES.puces, `${LIMITES.puces} puces au plus.`)
      .optional()
      .describe('Liste à puces ; dans une check-list, chaque puce a sa case ☐.'),
    tableau: TableauSchema.optional(),
  })
  .refine(
    (s) => Boolean(s.titre?.trim() || s.paragraphes?.length || s.puces?.length || s.tableau),
    'Section vide : donnez un titre, des paragraphes, des puces ou un tableau.',
  );

const GenererDocumentInput = z.strictObject({
  type: z.enum(DOCUMENT_TYPES, {
    message: 'Types possibles : rapport, lettre, compte_rendu, checklist, note, comparatif.',
  }),
  titre: z
    .string()
    .min(1, 'Titre obligatoire.')
    .max(LIMITES.titre, `${LIMITES.titre} caractères au plus.`)
    .refine((t) => t.trim().length > 0, 'Titre vide.')
    .describe('Titre du document ; l’objet d’une lettre ou d’une note.'),
  sous_titre: text(LIMITES.titre).optional().describe('Sous-titre ; les participants d’un compte rendu.'),
  destinataire: text(LIMITES.titre)
    .optional()
    .describe('Destinataire, une ligne par retour à la ligne (bloc d’adresse d’une lettre).'),
  date: text(LIMITES.date)
    .optional()
    .describe('AAAA-MM-JJ (affichée « 14 mars 2025 ») ou libellé libre ; absente : le jour de la génération.'),
  sections: z
    .array(SectionSchema)
    .min(1, 'Une section au moins.')
    .max(LIMITES.sections, `${LIMITES.sections} sections au plus.`),
  sources: z
    .array(text(LIMITES.source))
    .max(LIMITES.sources, `${LIMITES.sources} sources au plus.`)
    .optional()
    .describe('Sources, numérotées [1], [2]… en fin de document.'),
  format: z.enum(DOCUMENT_FORMATS, { message: 'Formats possibles : pdf, docx.' }).default('pdf'),
});

const GenererDocumentOutput = z.object({
  type: z.enum(DOCUMENT_TYPES),
  titre: z.string().describe('Titre en texte brut (sans astérisques), coordonnées masquées.'),
  format: z.enum(DOCUMENT_FORMATS),
  type_fichier: z.string().describe('Type MIME du fichier.'),
  nom_fichier: z.string().describe('Nom de fichier proposé, tiré du titre.'),
  taille_octets: z.number().int().min(1),
  sections: z.number().int().min(1).describe('Nombre de sections.'),
  a_completer: z.number().int().min(0).describe('Nombre de marques « à compléter » (voir la description).'),
  texte: z.string().describe('Le document en texte brut, téléphones et e-mails masqués (le fichier les garde).'),
  fichier: z
    .object({
      url: z.string().describe('Lien de téléchargement signé, sans clé d’API, valable jusqu’à `expire_le`.'),
      expire_le: z.string().describe('Fin de validité du lien (ISO 8601) ; le fichier est effacé après.'),
      sha256: z.string().describe('Empreinte SHA-256 (hex) du fichier.'),
    })
    .describe('Le fichier généré.'),
});

export type GenererDocumentResultat = z.infer<typeof GenererDocumentOutput>;

const DESCRIPTION = `Met en forme un document à partir des sections fournies, **sans modèle de langue** : tout le contenu vient de l’appelant, rien n’est ajouté ni reformulé. Fichier PDF (par défaut) ou Word (\`format: "docx"\`).

**Mise en page par type.** Page A4, police DejaVu Sans incorporée au PDF (œ, €, « », espaces fines et ☐ rendus tels quels), Arial dans le fichier Word ; pied de page « titre — Page n / N » ; sections sans titre rendues sans intertitre.
- \`rapport\` : bandeau de titre (type, titre, sous-titre, date, destinataire « À l’attention de »), sommaire avec numéros de page à partir de 3 sections titrées (le contenu commence alors page 2), sections numérotées.
- \`lettre\` : pas de bloc expéditeur (l’appelant n’en fournit pas) ; bloc destinataire en haut à droite (\`destinataire\`, une ligne par retour à la ligne), ligne de date alignée à droite (« le 14 mars 2025 », ou le libellé fourni tel quel s’il commence par un lieu : « Bordeaux, le 14 mars 2025 »), ligne « Objet : » avec le titre, puis \`sous_titre\` (références) ; sections non numérotées ; sources sous « Références ».
- \`compte_rendu\` : encadré « Réunion du <date> », \`sous_titre\` (les participants), « Diffusion : <destinataire> » ; sections numérotées (points de l’ordre du jour).
- \`checklist\` : une case ☐ devant chaque puce.
- \`note\` : format resserré (marges, corps et espacements réduits) ; en-tête « NOTE » puis encadré À / Date / Objet (le titre).
- \`comparatif\` : pages A4 à l’italienne ; dans chaque section le tableau vient en premier, le commentaire ensuite.

**Texte.** Un texte entre doubles astérisques (\`**ainsi**\`) est en gras, dans les deux formats ; un \`**\` isolé reste tel quel. Un retour à la ligne dans un paragraphe est un saut de ligne. Au PDF, les espaces de la typographie française ne coupent pas la ligne (après «, avant », :, ;, !, ?, %, €, et dans « 250 000 »). Les caractères de contrôle sont retirés, le texte normalisé en Unicode NFC.

**Tableaux.** 1 à 12 colonnes, 200 lignes au plus, cellules de 1 000 caractères au plus ; une ligne plus courte que les colonnes est complétée à vide, une ligne plus longue est refusée (400). Largeurs de colonnes tirées du contenu (le mot le plus long d’abord), colonnes de nombres alignées à droite, lignes alternées grisées. Sur plusieurs pages, la ligne d’en-tête est répétée en haut de chaque page ; une ligne n’est coupée entre deux pages que si elle est plus haute qu’une page.

**Marques à compléter (\`a_completer\`).** Chaque occurrence compte 1 et est surlignée en jaune dans le fichier :
- un crochet, une parenthèse ou un chevron contenant « à compléter », « à préciser », « à renseigner », « à définir », « à confirmer » ou « à remplir », en majuscules ou non, avec ou sans accents, avec ou sans autres mots : \`[à compléter]\`, \`[A COMPLETER]\`, \`(surface à préciser)\`, \`[À COMPLÉTER : prix net vendeur]\` ;
- les mêmes mots en capitales sans crochets : \`À COMPLÉTER\` ;
- un champ de modèle resté en place : \`{{nom_du_client}}\` ;
- un blanc à remplir : trois soulignés ou plus, \`______\` ;
- une valeur en X : \`XXX\`, \`XX/XX/XXXX\`.
\`[…]\` seul n’en est pas une (coupure dans une citation). Tous les textes comptent : titre, sous-titre, destinataire, date, sections, tableaux, sources.

**\`texte\`.** Le document en texte brut dans l’ordre de lecture (astérisques retirés, tableau en lignes « cellule | cellule », cases ☐), **téléphones et e-mails remplacés** par « [téléphone masqué] » et « [e-mail masqué] » (même détection que la mémoire du compte). Le fichier, lui, garde le contenu fourni tel quel. Le \`titre\` et le \`nom_fichier\` de la réponse sont masqués de même.

**Fichier.** Conservé sous un identifiant aléatoire (dossier du service, ou stockage compatible S3 s’il est configuré) et remis par un **lien signé** \`fichier.url\` : \`GET /api/v1/documents/fichiers/{id}/{nom_fichier}?expire=…&signature=…\`, sans clé d’API (le lien est le seul secret : ne le diffusez qu’à qui doit lire le document), valable jusqu’à \`fichier.expire_le\` (1 h par défaut), après quoi le fichier est effacé. Le PDF s’ouvre dans le navigateur, le fichier Word se télécharge ; avec le stockage S3 le lien redirige (302) vers une adresse pré-signée d’une minute. Un lien altéré, expiré ou dont le fichier a été effacé répond 404 \`ressource_absente\`. Avec l’en-tête \`Accept: application/pdf\` (format pdf) ou \`Accept: ${MIME_TYPES.docx}\` (format docx), la réponse est directement le fichier (mêmes en-têtes de crédits, \`Content-Disposition\` avec le nom) au lieu du JSON.

**Facturation.** 2 crédits par document généré ; chaque appel produit un nouveau fichier et un nouveau lien. Rien n’est débité si la génération échoue ou dépasse 15 s.`;

export const genererDocument = defineOperation({
  tool: 'generer_document',
  method: 'POST',
  // Each call stores a new file behind a new link.
  effect: 'ajout',
  path: '/documents',
  summary: 'Générer un document PDF ou Word (rapport, lettre, compte rendu, check-list, note, comparatif)',
  description: DESCRIPTION,
  credits: 2,
  unit: 'appel',
  scope: 'documents',
  tier: 'usage',
  sandbox: false,
  cacheS: 0,
  timeoutS: 15,
  errors: ['service_indisponible'],
  input: GenererDocumentInput,
  output: GenererDocumentOutput,
  representation: {
    types: [MIME_TYPES.pdf, MIME_TYPES.docx],
    wanted: (accept, output) => wantsFile(accept, output),
    read: (services, output) => readGeneratedFile(services, output),
  },
  async handler(input, ctx) {
    const { files, pool } = documentServices(ctx);
    const { format, ...source } = input;
    const doc: DocumentSource = source;
    const now = ctx.services.now();
    let generated: Generated;
    try {
      generated = await pool.render(doc, format, now, ctx.signal);
    } catch (error) {
      // The pipeline has already answered 504 when the time-out stopped the render.
      if (error instanceof RenderAborted)
        throw new ApiError('delai_depasse', 'Génération interrompue (délai dépassé).');
      throw error;
    }
    const { bytes } = generated;
    const id = randomToken(32);
    try {
      await files.storage.put(storageKey(id), bytes, MIME_TYPES[format]);
    } catch {
      throw new ApiError('service_indisponible', 'Le stockage des fichiers ne répond pas ; rien n’a été débité.');
    }
    const nom = fileName(doc, format);
    const expiresAt = new Date(Math.floor(now.getTime() / 1000) * 1000 + files.linkTtlS * 1000);
    return {
      type: doc.type,
      titre: maskContacts(plainOf(doc.titre)),
      format,
      type_fichier: MIME_TYPES[format],
      nom_fichier: nom,
      taille_octets: bytes.byteLength,
      sections: doc.sections.length,
      a_completer: generated.aCompleter,
      texte: generated.texte,
      fichier: {
        url: signedLink(files, id, nom, expiresAt),
        expire_le: expiresAt.toISOString(),
        sha256: createHash('sha256').update(bytes).digest('hex'),
      },
    };
  },
});

export const documentOperations = [genererDocument];

// ---------------------------------------------------------------------------------------------------------------
// Content negotiation, for the route to wire.

/** q-value of a media type in an Accept header (0 when absent; wildcards do not count: JSON is the default). */
function quality(accept: string, type: string): number {
  let best = 0;
  for (const range of accept.split(',')) {
    const [media, ...params] = range.trim().split(';');
    if (media.trim().toLowerCase() !== type) continue;
    const q = params.map((p) => /^\s*q\s*=\s*([\d.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
    best = Math.max(best, q === undefined ? 1 : Math.min(1, Number(q) || 0));
  }
  return best;
}

/**
 * True when the client asked for the file itself: its Accept names the file's type, at least as high as
 * application/json. The route then sends `readGeneratedFile` instead of the JSON.
 */
export function wantsFile(accept: string | undefined, output: Pick<GenererDocumentResultat, 'type_fichier'>): boolean {
  if (!accept) return false;
  const file = quality(accept, output.type_fichier);
  return file > 0 && file >= quality(accept, 'application/json');
}

/** The bytes and headers of a document just generated, from its `fichier.url`. */
export async function readGeneratedFile(
  services: Services,
  output: Pick<GenererDocumentResultat, 'fichier' | 'nom_fichier' | 'type_fichier'>,
): Promise<{ bytes: Uint8Array; headers: Record<string, string> }> {
  const files = services.files;
  const id = /\/documents\/fichiers\/([A-Za-z0-9]{32})\//.exec(output.fichier.url)?.[1];
  const file = files && id ? await files.storage.get(storageKey(id)) : null;
  if (!file) throw new ApiError('service_indisponible', 'Le fichier généré n’a pas pu être relu.');
  const pdf = output.type_fichier === MIME_TYPES.pdf;
  return {
    bytes: file.bytes,
    headers: {
      'Content-Type': output.type_fichier,
      'Content-Length': String(file.bytes.byteLength),
      'Content-Disposition': `${pdf ? 'inline' : 'attachment'}; filename="${output.nom_fichier}"`,
      'X-Content-Type-Options': 'nosniff',
    },
  };
}
