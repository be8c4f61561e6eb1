import type { FastifyInstance } from 'fastify';
import type { Services } from '../domain/catalogue.ts';
import { genererDocument } from '../domain/documents/operations.ts';
import { DOWNLOAD_ROUTE, purgeExpiredFiles, serveDownload } from '../domain/documents/telechargement.ts';
import { ApiError } from '../domain/errors.ts';
import { exportsTelecharger } from '../domain/exports/operations.ts';
import { ROUTE_FICHIER_EXPORT, servirFichierExport } from '../domain/exports/telechargement.ts';
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
  [API_PREFIX + ROUTE_FICHIER_EXPORT]: {
    get: {
      operationId: 'telecharger_fichier_export',
      summary: 'Télécharger un fichier d’édition (lien signé)',
      description:
        'L’adresse où `exports_telecharger` redirige quand les fichiers sont gardés dans un dossier (sans stockage S3), valable 15 minutes (`expire_le`). Sans clé d’API : la signature tient lieu de droit. Gratuit. Un lien altéré, expiré ou dont le fichier est effacé répond 404 `ressource_absente`.',
      tags: ['exports'],
      security: [],
      parameters: [
        { name: 'perimetre', in: 'path', required: true, schema: { type: 'string', enum: ['contrat', 'echantillon'] } },
        { name: 'jeu', in: 'path', required: true, schema: { type: 'string' } },
        { name: 'date', in: 'path', required: true, schema: { type: 'string' } },
        { name: 'nom', in: 'path', required: true, schema: { type: 'string' } },
        { name: 'expire', in: 'query', required: true, schema: { type: 'string' } },
        { name: 'signature', in: 'query', required: true, schema: { type: 'string' } },
      ],
      responses: {
        '200': {
          description: 'Le fichier : Parquet, CSV compressé (gzip) ou JSON (dictionnaire, fiche qualité).',
          content: {
            'application/vnd.apache.parquet': {
              schema: { type: 'string', contentMediaType: 'application/vnd.apache.parquet' },
            },
            'application/gzip': { schema: { type: 'string', contentMediaType: 'application/gzip' } },
            'application/json': { schema: { type: 'object' } },
          },
        },
        '404': {
          description: 'Problème : `ressource_absente`.',
          content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Probleme' } } },
        },
      },
      'x-svc-credits': 0,
      'x-svc-unite': 'appel',
      'x-svc-palier-minimal': exportsTelecharger.tier,
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
  app.get<{ Params: Record<string, string>; Querystring: { expire?: string; signature?: string } }>(
    API_PREFIX + ROUTE_FICHIER_EXPORT.replace(/\{(\w+)\}/g, ':$1'),
    async (request, reply) => {
      if (!services.files) throw new ApiError('ressource_absente', 'Aucun fichier n’est servi ici.');
      // The service's clock, so that the 15 minutes of a link are those its address announced.
      const served = await servirFichierExport(services.files, { ...request.params, ...request.query }, services.now());
      const body = served.body instanceof Uint8Array ? Buffer.from(served.body) : served.body;
      return reply.code(200).headers(served.headers).send(body);
    },
  );
  if (services.files) {
    const files = services.files;
    // Files are kept as long as their link is valid: the expired ones are removed every hour.
    const timer = setInterval(() => void purgeExpiredFiles(files).catch(() => {}), PURGE_EVERY_MS).unref();
    app.addHook('onClose', async () => clearInterval(timer));
  }
}
