import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { ERRORS, type ErrorCode } from '../domain/errors.ts';

const SWAGGER_DIR = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
};

const HEAD = `<meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">`;

const PAGE = `<!doctype html>
<html lang="fr">
<head>${HEAD}<title>API des données immobilières — documentation</title></head>
<body><div id="ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script>window.ui = SwaggerUIBundle({ url: '/api/v1/openapi.json', dom_id: '#ui', deepLinking: true });</script>
</body></html>`;

function escapeHtml(text: string): string {
  return text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
}

/** The texts of domain/errors.ts: backquoted words become code, and another error code a link to its anchor. */
function inline(text: string): string {
  return escapeHtml(text).replace(/`([^`]+)`/g, (_match, word: string) =>
    word in ERRORS ? `<a href="#${word}"><code>${word}</code></a>` : `<code>${word}</code>`,
  );
}

// The look of /docs: Swagger UI's own stylesheet and classes (a code is drawn like an operation, its status as the
// method badge), plus what a static page needs that Swagger UI draws with script.
const ERRORS_STYLE = `<style>
body { margin: 0; }
.swagger-ui .info .description p { font-size: 14px; margin: 10px 0; }
.swagger-ui .opblock { scroll-margin-top: 16px; }
.swagger-ui .opblock:target { box-shadow: 0 0 0 3px #3b4151; }
.swagger-ui .opblock .opblock-summary { cursor: default; }
.swagger-ui .opblock .opblock-summary-path { padding: 0 10px; }
.swagger-ui .opblock .opblock-summary-path a { color: #3b4151; text-decoration: none; }
.swagger-ui .erreur { display: grid; grid-template-columns: 9em 1fr; gap: 8px 16px; margin: 0; padding: 12px 20px 16px;
  border-top: 1px solid rgba(59, 65, 81, .2); color: #3b4151; font-family: sans-serif; font-size: 14px; line-height: 1.5; }
.swagger-ui .erreur dt { font-weight: 700; }
.swagger-ui .erreur dd { margin: 0; }
.swagger-ui .sommaire { border-collapse: collapse; margin: 0 0 40px; width: 100%; }
.swagger-ui table.sommaire tbody tr td { border-bottom: 1px solid rgba(59, 65, 81, .2); color: #3b4151; font-family: sans-serif;
  font-size: 14px; padding: 6px 10px 6px 0; vertical-align: middle; }
.swagger-ui table.sommaire tbody tr td:first-child { font-weight: 700; width: 4em; }
.swagger-ui table.sommaire tbody tr td:nth-child(2) { width: 20em; }
</style>`;

const codes = Object.entries(ERRORS) as [ErrorCode, (typeof ERRORS)[ErrorCode]][];

const ERRORS_PAGE = `<!doctype html>
<html lang="fr">
<head>${HEAD}<title>Codes d’erreur — API des données immobilières</title>${ERRORS_STYLE}</head>
<body><div class="swagger-ui"><div class="wrapper">
<section class="information-container"><div class="info">
<h1 class="title">Codes d’erreur</h1>
<div class="description"><div class="markdown">
<p><a href="/docs">← Documentation de l’API</a></p>
<p>Chaque refus est servi en <code>application/problem+json</code>, en français : <code>type</code> renvoie à l’ancre
de son code sur cette page, <code>code</code> est stable (c’est lui que le code client doit tester), <code>detail</code>
précise le cas et <code>requete</code> identifie l’appel (aussi en en-tête <code>Svc-Requete</code>). Une tâche
<code>echouee</code> porte les mêmes codes dans <code>erreur.code</code>.</p>
<p>Un échec n’est jamais débité.</p>
</div></div>
</div></section>
<table class="sommaire markdown"><thead><tr><th>HTTP</th><th>Code</th><th>Titre</th></tr></thead><tbody>
${codes
  .map(
    ([code, e]) =>
      `<tr><td>${e.status}</td><td><a href="#${code}"><code>${code}</code></a></td><td>${escapeHtml(e.title)}</td></tr>`,
  )
  .join('\n')}
</tbody></table>
${codes
  .map(
    ([code, e]) => `<div class="opblock ${e.status >= 500 ? 'opblock-delete' : 'opblock-put'}" id="${code}">
<div class="opblock-summary"><span class="opblock-summary-method">${e.status}</span>
<span class="opblock-summary-path"><a href="#${code}">${code}</a></span>
<div class="opblock-summary-description">${escapeHtml(e.title)}</div></div>
<dl class="erreur markdown"><dt>Quand</dt><dd>${inline(e.when)}</dd><dt>Débit</dt><dd>${inline(e.debit)}</dd>
<dt>Que faire</dt><dd>${inline(e.action)}</dd></dl>
</div>`,
  )
  .join('\n')}
</div></div></body></html>`;

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
