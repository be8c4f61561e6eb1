import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERRORS } from '../../domain/errors.ts';
import { createTestApp, type TestApp } from '../support/app.ts';

// What a visitor sees is what the browser draws from the script, not the HTML the server sends: the pages are opened
// in a real headless Chromium (the one from the distribution; CHROMIUM_BIN points elsewhere).
const CHROMIUM = [process.env.CHROMIUM_BIN, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find(
  (bin): bin is string => !!bin && existsSync(bin),
);
const NO_CHROMIUM = 'no Chromium installed (/usr/bin/chromium, or set CHROMIUM_BIN): the pages cannot be rendered';

// The specification's error table lives beside the project (../shared), not in it: a clone without it skips that check.
const OVERVIEW = path.resolve('../shared/spec/overview.md');
const hasOverview = existsSync(OVERVIEW);

let t: TestApp | undefined;
let base = '';
let profiles = '';

beforeAll(async () => {
  if (!CHROMIUM) return;
  t = await createTestApp();
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  profiles = await mkdtemp(path.join(tmpdir(), 'svc-chromium-'));
});
afterAll(async () => {
  await t?.close();
  if (profiles) await rm(profiles, { recursive: true, force: true });
});

/** The DOM once the page's scripts have run (virtual time waits for the description to be fetched and drawn). */
async function renderedDom(url: string): Promise<string> {
  const profile = await mkdtemp(path.join(profiles, 'p-'));
  const { stdout } = await promisify(execFile)(
    CHROMIUM!,
    [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-dev-shm-usage',
      '--no-first-run',
      `--user-data-dir=${profile}`,
      '--virtual-time-budget=30000',
      '--dump-dom',
      url,
    ],
    { timeout: 90_000, maxBuffer: 50 * 2 ** 20 },
  );
  return stdout;
}

const unescapeHtml = (text: string) =>
  text.replace(
    /&(amp|lt|gt|quot|#39);/g,
    (_m, e: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" })[e]!,
  );
// The text as read: blocks apart, inline markup (code, links) within the sentence.
const textOf = (html: string) =>
  unescapeHtml(html.replace(/<\/?(?:div|p|dl|dt|dd|li|tr|td|th|h\d)\b[^>]*>/g, ' ').replace(/<[^>]*>/g, ''))
    .replace(/\s+/g, ' ')
    .trim();

describe('the documentation in a real browser', () => {
  it('/docs draws every operation of the description and no warning or error box', async (ctx) => {
    if (!CHROMIUM) ctx.skip(NO_CHROMIUM);
    const dom = await renderedDom(`${base}/docs`);
    const boxes = [...dom.matchAll(/class="(?:errors-wrapper|error-wrapper|errors|loading-container)"[\s\S]{0,400}/g)];
    expect(boxes.map((m) => textOf(m[0].replace(/^[^>]*>/, '')))).toEqual([]);
    expect(dom).not.toContain('Failed to load API definition');
    // Swagger UI draws the declared dialect in place of its warning only when it accepts it: proof the header is drawn.
    expect(dom).toContain('class="info__jsonschemadialect"');

    const doc = (await (await fetch(`${base}/api/v1/openapi.json`)).json()) as { paths: Record<string, object> };
    const described = Object.entries(doc.paths).flatMap(([p, item]) =>
      Object.keys(item).map((method) => `${method.toUpperCase()} ${p}`),
    );
    // Each operation is a block `opblock opblock-<method>` whose path is in `data-path` (Swagger UI 5 only draws the
    // blocks in view past 150 tags and operations: the description is far from it).
    const drawn = [...dom.matchAll(/<div class="opblock opblock-(\w+)[^"]*"[^>]*>[\s\S]*?data-path="([^"]*)"/g)].map(
      (m) => `${m[1].toUpperCase()} ${unescapeHtml(m[2])}`,
    );
    expect(described.length).toBeGreaterThan(0);
    expect([...drawn].sort()).toEqual([...described].sort());
  }, 120_000);

  // The errors page as reached from a real problem: its `type`, resolved against the server, opened in the browser.
  let errorsPage: Promise<string> | undefined;
  const errorsDom = () =>
    (errorsPage ??= (async () => {
      const problem = await fetch(`${base}/api/v1/compte/memoire`);
      expect(problem.status).toBe(401);
      const { type } = (await problem.json()) as { type: string };
      expect(type).toBe('/docs/erreurs#cle_absente');
      return renderedDom(new URL(type, base).href);
    })());
  /** The text of a code's block, found by the anchor a problem's `type` ends with. */
  const block = (dom: string, code: string) => {
    const m = dom.match(new RegExp(`<div class="opblock[^"]*" id="${code}">([\\s\\S]*?)</dl>`));
    return m ? textOf(m[1]) : null;
  };

  it('/docs/erreurs, where a problem’s `type` points, has each code at its anchor with what to do', async (ctx) => {
    if (!CHROMIUM) ctx.skip(NO_CHROMIUM);
    const dom = await errorsDom();
    expect(dom).toContain('<html lang="fr"');
    // The same stylesheet as /docs.
    expect(dom).toContain('href="/docs/assets/swagger-ui.css"');
    for (const [code, e] of Object.entries(ERRORS)) {
      const text = block(dom, code);
      expect(text, `#${code}`).not.toBeNull();
      for (const part of [String(e.status), e.title, e.when, e.debit, e.action]) {
        expect(text, `#${code}`).toContain(part.replaceAll('`', ''));
      }
    }
    expect(block(dom, 'quota_minute')).toMatch(/Quand .*Débit Rien n’est débité.*Que faire Attendre .*RateLimit-Reset/);
  }, 120_000);

  it.skipIf(!hasOverview)(
    `/docs/erreurs has every code of the specification’s error table${hasOverview ? '' : ' (skipped: ../shared/spec/overview.md absent)'}`,
    async (ctx) => {
      if (!CHROMIUM) ctx.skip(NO_CHROMIUM);
      const table = readFileSync(OVERVIEW, 'utf8').split('\n## Errors')[1].split('\n## ')[0];
      const specCodes = [...table.matchAll(/^\| (\d{3}) \| ([a-z_]+) \|/gm)].map((m) => [m[2], m[1]] as const);
      expect(specCodes.length).toBeGreaterThan(10);
      const dom = await errorsDom();
      for (const [code, status] of specCodes) expect(block(dom, code), `#${code}`).toMatch(new RegExp(`^${status} `));
    },
    120_000,
  );
});
