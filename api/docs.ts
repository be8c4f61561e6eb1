import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { ERRORS } from '../domain/errors.ts';

const SWAGGER_DIR = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
};

const PAGE = `<!doctype html>
<html lang="fr">
<head><meta charset="utf-8"><title>API des données immobilières — documentation</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css"></head>
<body><div id="ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script>window.ui = SwaggerUIBundle({ url: '/api/v1/openapi.json', dom_id: '#ui', deepLinking: true });</script>
</body></html>`;

function escapeHtml(text: string): string {
  return text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
}

const ERRORS_PAGE = `<!doctype html>
<html lang="fr"><head><meta charset="utf-8"><title>Codes d’erreur</title></head>
<body><h1>Codes d’erreur</h1><p>Chaque erreur est servie en <code>application/problem+json</code> avec un <code>code</code> stable.</p>
<table><thead><tr><th>HTTP</th><th>code</th><th>titre</th></tr></thead><tbody>
${Object.entries(ERRORS)
  .map(
    ([code, e]) =>
      `<tr id="${code}"><td>${e.status}</td><td><code>${code}</code></td><td>${escapeHtml(e.title)}</td></tr>`,
  )
  .join('\n')}
</tbody></table></body></html>`;

/** A browsable documentation page over the generated description, served from the package: no CDN needed. */
export function registerDocs(app: FastifyInstance) {
  app.get('/docs', async (_request, reply) => reply.type('text/html; charset=utf-8').send(PAGE));
  app.get('/docs/erreurs', async (_request, reply) => reply.type('text/html; charset=utf-8').send(ERRORS_PAGE));
  app.get<{ Params: { file: string } }>('/docs/assets/:file', async (request, reply) => {
    const type = ASSETS[request.params.file];
    if (!type) return reply.callNotFound();
    reply.header('Cache-Control', 'public, max-age=86400');
    return reply.type(type).send(await readFile(path.join(SWAGGER_DIR, request.params.file)));
  });
}
