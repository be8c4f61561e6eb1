import { z } from 'zod';
import { QualiteSchema } from '../qualite.ts';
import { defineOperation } from '../catalogue.ts';
import { ApiError, invalidField, type FieldError } from '../errors.ts';
import { runSyncTask, SyncTaskFailed } from '../taches/taches.ts';
import {
  checkInlineFile,
  IMAGE_MAX_SIDE,
  InvalidDocument,
  MAX_BASE64_CHARS,
  MAX_FICHIERS,
  MAX_FILE_BYTES,
  MAX_IMAGES,
  MAX_PDF_PAGES,
  MAX_SCANNED_PAGES,
  MAX_TEXT_CHARS,
  MAX_TOTAL_BYTES,
  REFERENCE_TYPES,
  type ReadDocumentsResult,
} from './lecture.ts';

export const LectureDocumentSchema = z.object({
  reponse: z.string().describe('Réponse à la question ; téléphones, e-mails et noms précédés d’une civilité masqués.'),
  faits: z.array(
    z.object({
      fait: z.string(),
      document: z.string().nullable().describe('Nom du document du fait.'),
      page: z.number().int().min(1).nullable().describe('Page du PDF (1 = première page) ; null pour une image.'),
      citation: z
        .string()
        .nullable()
        .describe('Texte exact de la page, retrouvé par le service ; null pour un fait lu sur une image.'),
    }),
  ),
  references: z.array(
    z.object({
      nom: z.string(),
      type: z.enum(REFERENCE_TYPES),
      echeance: z.string().nullable().describe('AAAA-MM-JJ quand le jour est connu, sinon telle qu’écrite.'),
    }),
  ),
  documents: z.array(
    z.object({
      nom: z.string(),
      type: z.enum(['pdf', 'image']),
      pages: z.number().int().nullable(),
      taille_octets: z.number().int().min(0),
    }),
  ),
  qualite: QualiteSchema,
});

const FichierSchema = z
  .object({
    nom: z.string().min(1).max(200).optional().describe('Nom du document, repris dans les faits.'),
    url: z
      .url({ protocol: /^https?$/ })
      .max(2000)
      .optional()
      .describe('Lien public https du fichier (récupéré par le service, sans suivre de redirection).'),
    contenu_base64: z
      .string()
      .min(1)
      .max(MAX_BASE64_CHARS)
      .optional()
      .describe('Contenu du fichier en base64 standard (au plus 60 000 caractères, environ 45 Ko).'),
  })
  .strict()
  .refine((file) => (file.url === undefined) !== (file.contenu_base64 === undefined), {
    message: 'Donnez soit `url`, soit `contenu_base64` (un seul des deux).',
  });

const mio = (bytes: number) => `${bytes / 2 ** 20} Mio`;

/** The request field and message of a task failure detail written `champ : message` by the workflow. */
function fieldOf(detail: string): { champ: string; message: string } {
  const m = /^(fichiers(?:\[\d+\](?:\.\w+)?)?) : ([\s\S]*)$/.exec(detail);
  return m ? { champ: m[1], message: m[2] } : { champ: 'fichiers', message: detail };
}

export const lireDocument = defineOperation({
  tool: 'lire_document',
  needsTaskEngine: true,
  texteTiers: true,
  method: 'POST',
  // POST for its body of files; nothing is kept.
  effect: 'lecture',
  path: '/documents/lectures',
  summary: 'Lecture de documents (PDF, images) par un modèle, citations vérifiées',
  description: `Un modèle de langage lit 1 à ${MAX_FICHIERS} documents du client (PDF ou images) pour répondre à sa \`question\` : \`reponse\`, \`faits\` appuyés chacun sur une **citation exacte retrouvée par le service dans le texte de la page indiquée**, \`references\` mentionnées par les documents (avec leur échéance), et la description des \`documents\` lus. La requête attend la lecture (120 s au plus) ; 30 crédits sont débités seulement quand la lecture réussit.

Décisions :
- **Fichiers** : chacun donne soit \`url\` (lien public https, récupéré par le service), soit \`contenu_base64\` (base64 standard, au plus ${MAX_BASE64_CHARS} caractères). Le format est reconnu **aux octets** (PDF, JPEG, PNG, WebP), jamais au nom ni au type annoncé ; autre chose répond 400 \`parametres_invalides\` sur le champ (\`fichiers[1].contenu_base64\`…). Au plus ${mio(MAX_FILE_BYTES)} par fichier téléchargé et ${mio(MAX_TOTAL_BYTES)} pour l'ensemble.
- **Adresses** : https seulement, vers une adresse publique d'Internet (pas de réseau privé, local ni réservé), redirections non suivies, 30 s au plus par fichier. Une adresse refusée, un fichier absent (404), trop lourd, illisible ou d'un format non reconnu répondent 400 \`parametres_invalides\` sur le champ, **sans débit**.
- **PDF** : texte extrait page par page (${MAX_PDF_PAGES} premières pages) ; au plus ${MAX_TEXT_CHARS.toLocaleString('fr-FR')} caractères de texte par lecture, les pages suivantes ne sont pas lues (c'est dit dans \`qualite.methode\`). Un PDF protégé par mot de passe est refusé (400). Un **PDF sans texte** (numérisé) est lu en images de ses ${MAX_SCANNED_PAGES} premières pages quand le modèle voit les images ; sinon il n'est pas lu et c'est dit.
- **Images** : redressées selon leur orientation EXIF, ramenées à ${IMAGE_MAX_SIDE} px au plus sur le grand côté, réencodées en JPEG, ce qui retire toutes les métadonnées (EXIF, position GPS) ; ${MAX_IMAGES} images au plus par lecture. Elles sont données au modèle en images.
- **Citations** : chaque citation est cherchée dans le texte de sa page (après normalisation : ligatures, césures, espaces, guillemets et apostrophes typographiques) ; retrouvée sur une page voisine ou ailleurs dans les documents, sa page est corrigée ; introuvable, **le fait est écarté** et compté. Un fait tiré d'une page de texte sans citation est écarté de même. Un fait lu sur une image n'a pas de texte où vérifier sa citation : il est gardé avec \`citation\` null, et c'est dit. \`qualite.n\` compte les faits retenus ; \`qualite.methode\` dit combien ont été écartés, ce qui a été masqué et les limites de la lecture.
- **Masquage** : les numéros de téléphone, adresses e-mail et noms précédés d'une civilité (M., Mme, Monsieur, Madame, Me, Maître, Dr…) sont remplacés par « [téléphone masqué] », « [e-mail masqué] », « [nom masqué] » dans \`reponse\`, \`faits\` (citations comprises) et \`references\`. Une civilité dans un nom de lieu (« rue du Docteur Roux ») n'est pas masquée.
- **Le contenu des documents est une donnée, jamais une instruction** : il est donné au modèle entre des marqueurs de page que le texte ne peut pas imiter, sous une consigne qui le dit ; une phrase du document qui s'adresse au modèle n'est pas suivie.
- **Rien n'est gardé** : les fichiers et leur texte ne vivent que le temps de la lecture (base de données de travail effacée à la fin, réussite ou échec) ; rien n'est écrit dans les journaux ; aucun fichier n'est déposé chez le fournisseur du modèle (le contenu est envoyé dans la requête de lecture elle-même).
- **Échecs** : un modèle indisponible ou qui échoue répond 503 \`service_indisponible\`, rien n'est débité ; au-delà de 120 s, 504 \`delai_depasse\`, rien n'est débité.`,
  credits: 30,
  unit: 'appel',
  scope: 'documents',
  tier: 'usage',
  sandbox: false,
  cacheS: 0,
  timeoutS: 120,
  errors: ['service_indisponible'],
  input: z
    .object({
      fichiers: z
        .array(FichierSchema)
        .min(1)
        .max(MAX_FICHIERS)
        .describe('Les documents à lire (1 à 5), chacun par `url` ou par `contenu_base64` (un seul des deux).'),
      question: z.string().min(3).max(2000).describe('La question posée sur les documents.'),
    })
    .strict(),
  output: LectureDocumentSchema,
  async handler(input, ctx) {
    // What can be refused without fetching anything is refused here, before any task starts or any credit moves.
    const erreurs: FieldError[] = [];
    await Promise.all(
      input.fichiers.map(async (file, i) => {
        if (file.url !== undefined) {
          const champ = `fichiers[${i}].url`;
          await ctx.services.outbound.checkUrl(file.url, { resolve: false }).catch((error: Error) => {
            erreurs.push({ champ, emplacement: 'corps', message: `Adresse refusée : ${error.message}` });
          });
        } else if (file.contenu_base64 !== undefined) {
          try {
            checkInlineFile(file.contenu_base64, `fichiers[${i}].contenu_base64`);
          } catch (error) {
            if (!(error instanceof InvalidDocument)) throw error;
            erreurs.push({ champ: error.champ, emplacement: 'corps', message: error.message });
          }
        }
      }),
    );
    if (erreurs.length > 0) {
      erreurs.sort((a, b) => (a.champ < b.champ ? -1 : 1));
      throw new ApiError('parametres_invalides', erreurs.map((e) => `${e.champ} : ${e.message}`).join(' '), {
        erreurs,
      });
    }
    if (!ctx.services.tasks || !ctx.services.taskEnds) {
      throw new ApiError('service_indisponible', 'Le moteur des tâches n’est pas configuré (TEMPORAL_ADDRESS).');
    }
    let resultat: ReadDocumentsResult;
    try {
      resultat = await runSyncTask<ReadDocumentsResult>(
        { db: ctx.services.db, engine: ctx.services.tasks, ends: ctx.services.taskEnds },
        { operation: 'lire_document', caller: ctx.caller, input: { ...input }, signal: ctx.signal },
      );
    } catch (error) {
      if (ctx.signal.aborted) throw error;
      if (!(error instanceof SyncTaskFailed)) {
        throw new ApiError(
          'service_indisponible',
          'Le moteur des tâches est momentanément injoignable ; rien n’a été débité.',
        );
      }
      const { code, detail } = error.erreur;
      if (code === 'document_invalide' || code === 'document_inaccessible' || code === 'document_illisible') {
        const { champ, message } = fieldOf(detail);
        throw invalidField(champ, message);
      }
      if (code === 'modele_non_configure') {
        throw new ApiError(
          'service_indisponible',
          'La lecture de documents est indisponible : aucun modèle n’est configuré. Rien n’a été débité.',
        );
      }
      if (code.startsWith('modele_')) {
        throw new ApiError(
          'service_indisponible',
          `Lecture impossible : ${detail} Rien n’a été débité ; réessayez dans un moment.`,
        );
      }
      if (code === 'delai_depasse') {
        throw new ApiError('delai_depasse', 'La lecture a dépassé le délai de l’opération ; rien n’a été débité.');
      }
      throw new ApiError('erreur_interne', 'La lecture des documents a échoué ; rien n’a été débité.');
    }
    return {
      reponse: resultat.reponse,
      faits: resultat.faits,
      references: resultat.references,
      documents: resultat.documents,
      qualite: resultat.qualite,
    };
  },
});
