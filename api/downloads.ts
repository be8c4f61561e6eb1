import type { FastifyInstance } from 'fastify';
import type { Services } from '../domain/catalogue.ts';
import { genererDocument } from '../domain/documents/operations.ts';
import { DOWNLOAD_ROUTE, purgeExpiredFiles, serveDownload } from '../domain/documents/telechargement.ts';
import { ApiError } from '../domain/errors.ts';
import type { ExtraPaths } from './openapi.ts';
import { API_PREFIX } from './operation-routes.ts';

const PURGE_EVERY_MS = 3_600_000;

/** The signed download links of generated files: no key (the signature is the credential), outside the catalogue. */
export const DOWNLOAD_PATHS = {
  [API_PREFIX + DOWNLOAD_ROUTE]: {
    get: {
      operationId: 'telecharger_document',
      summary: 'Télécharger un document généré (lien signé)',
      description:
        'Le lien `fichier.url` rendu par `generer_document`, valable jusqu’à `fichier.expire_le`. Sans clé d’API : la signature tient lieu de droit. Gratuit : le document a été payé à sa génération. Un lien altéré, expiré ou dont le fichier est effacé répond 404 `ressource_absente`.',
      tags: ['documents'],
      security: [],
      parameters: [
        { name: 'id', in: 'path', required: true, schema: { type: 'string' } },
        { name: 'nom', in: 'path', required: true, schema: { type: 'string' } },
        { name: 'expire', in: 'query', required: true, schema: { type: 'string' } },
        { name: 'signature', in: 'query', required: true, schema: { type: 'string' } },
      ],
      responses: {
        '200': {
          description: 'Le fichier.',
          content: {
            'application/pdf': { schema: { type: 'string', contentMediaType: 'application/pdf' } },
            'application/vnd.openxmlformats-officedocument.wordprocessingml.document': {
              schema: {
                type: 'string',
                contentMediaType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
              },
            },
          },
        },
        '302': { description: 'Stockage S3 : redirection vers une adresse pré-signée d’une minute.' },
        '404': {
          description: 'Problème : `ressource_absente`.',
          content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Probleme' } } },
        },
      },
      'x-svc-credits': 0,
      'x-svc-unite': 'appel',
      // The link itself checks no key: its palier is the one it takes to obtain it, generer_document's.
      'x-svc-palier-minimal': genererDocument.tier,
    },
  },
} satisfies ExtraPaths;

export function registerDownloads(app: FastifyInstance, services: Services) {
  app.get<{ Params: { id: string; nom: string }; Querystring: { expire?: string; signature?: string } }>(
    API_PREFIX + DOWNLOAD_ROUTE.replace('{id}', ':id').replace('{nom}', ':nom'),
    async (request, reply) => {
      if (!services.files) throw new ApiError('ressource_absente', 'Aucun fichier n’est servi ici.');
      const result = await serveDownload(services.files, { ...request.params, ...request.query });
      reply.code(result.status).headers(result.headers);
      return result.status === 200 ? reply.send(Buffer.from(result.body)) : reply.send();
    },
  );
  if (services.files) {
    const files = services.files;
    // Files are kept as long as their link is valid: the expired ones are removed every hour.
    const timer = setInterval(() => void purgeExpiredFiles(files).catch(() => {}), PURGE_EVERY_MS).unref();
    app.addHook('onClose', async () => clearInterval(timer));
  }
}
