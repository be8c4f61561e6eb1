import net from 'node:net';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineOperation, type Operation } from '../../domain/catalogue.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import { operationsEssai } from '../support/operations-essai.ts';

// Answers are made in memory lent by a pool and given back once sent (domain/invoke.ts, api/operation-routes.ts).
// Memory given back too early would be written over by the next answers while the socket still holds the bytes of
// the first ones: these tests make the socket hold them.
const { toutes: ESSAI } = operationsEssai('essai', 'essai');
// The echo of the test catalogue (1 credit an answer here), made large: a letter repeated.
const grand = defineOperation({
  ...ESSAI[0]!,
  tool: 'grand_essai',
  path: '/essai/grand/{lettre}',
  summary: 'Grand',
  description: 'Renvoie une lettre répétée.',
  credits: 1,
  input: z.object({ lettre: z.string().length(1), taille: z.coerce.number().int().min(1).max(900_000) }),
  output: z.object({ lettre: z.string(), texte: z.string() }),
  handler: async ({ lettre, taille }: { lettre: string; taille: number }) => ({ lettre, texte: lettre.repeat(taille) }),
});

let t: TestApp;
let port: number;
beforeAll(async () => {
  t = await createTestApp({ operations: [...ESSAI, grand] as Operation[] });
  port = Number(new URL(await t.app.listen({ host: '127.0.0.1', port: 0 })).port);
});
afterAll(async () => t?.close());

/**
 * Sends `requests` at once on one connection (HTTP/1.1 pipelining, the last one closing it), reads nothing for a
 * while, then every answer.
 */
function pipelined(requests: string[], pauseMs: number): Promise<Array<{ status: number; body: string }>> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.pause();
    socket.on('error', reject);
    socket.write(requests.join(''));
    setTimeout(() => socket.resume(), pauseMs);
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('end', () => resolve(parse(Buffer.concat(chunks))));
  });
}

function parse(bytes: Buffer): Array<{ status: number; body: string }> {
  const answers = [];
  let at = 0;
  for (;;) {
    const end = bytes.indexOf('\r\n\r\n', at);
    if (end < 0) return answers;
    const head = bytes.subarray(at, end).toString('latin1');
    const length = Number(/content-length: (\d+)/i.exec(head)?.[1]);
    if (bytes.length < end + 4 + length) return answers;
    answers.push({ status: Number(head.split(' ')[1]), body: bytes.subarray(end + 4, end + 4 + length).toString() });
    at = end + 4 + length;
  }
}

describe('answers made in lent memory', () => {
  it('keeps an answer whole while its socket holds it, whatever other clients are answered meanwhile', async () => {
    const org = await t.organisation({ acces: 'usage', quota_minute: 100_000 });
    await t.admin('POST', `/organisations/${org.id}/credits`, { credits: 10_000, motif: 'charge' });
    const request = (lettre: string, last = false) =>
      `GET /api/v1/essai/grand/${lettre}?taille=900000 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${org.cle}\r\n` +
      `${last ? 'Connection: close\r\n' : ''}\r\n`;
    // A client that does not read: the kernel takes a few MB of its answers, the server's process holds the next.
    const slow = 'abcdefghij'.split('');
    const held = pipelined(
      slow.map((l, i) => request(l, i === slow.length - 1)),
      1500,
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Meanwhile other clients are answered, in memory of the same size.
    for (const l of 'KLMNOPQRSTUVWXYZ'.split('')) {
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/essai/grand/${l}?taille=900000`, {
        headers: { authorization: `Bearer ${org.cle}` },
      });
      expect(((await res.json()) as { texte: string }).texte.replaceAll(l, '')).toBe('');
    }
    const answers = await held;
    expect(answers).toHaveLength(slow.length);
    answers.forEach((answer, i) => {
      expect(answer.status).toBe(200);
      const body = JSON.parse(answer.body);
      expect(body.lettre).toBe(slow[i]);
      expect(body.texte.length).toBe(900_000);
      expect(body.texte.replaceAll(slow[i]!, '')).toBe('');
      expect(body.credits.debites).toBe(1);
    });
  });

  it('gives each of 600 different answers, 32 at a time over HTTP, to its own request and debits each once', async () => {
    const org = await t.organisation({ acces: 'usage', quota_minute: 100_000 });
    await t.admin('POST', `/organisations/${org.id}/credits`, { credits: 10_000, motif: 'charge' });
    const requests = Array.from({ length: 600 }, (_, i) => ({
      id: `r${i}-${'abcdefghij'.repeat(1 + ((i * 37) % 90))}`,
      n: i % 1000,
    }));
    const answers: Array<{ id: string; n: number; body: any; debites: string | null }> = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next < requests.length) {
          const { id, n } = requests[next++]!;
          const res = await fetch(`http://127.0.0.1:${port}/api/v1/essai/echo/${id}?n=${n}`, {
            headers: { authorization: `Bearer ${org.cle}` },
          });
          expect(res.status).toBe(200);
          answers.push({ id, n, body: JSON.parse(await res.text()), debites: res.headers.get('svc-credits-debites') });
        }
      }),
    );
    expect(answers).toHaveLength(600);
    for (const a of answers) {
      expect(a.body).toMatchObject({ id: a.id, n: a.n, credits: { debites: 2 } });
      expect(a.debites).toBe('2');
    }
    // The balances the answers carry are each a different step of the ledger.
    expect(new Set(answers.map((a) => a.body.credits.restants)).size).toBe(600);
    const { rows } = await t.db.query(
      `SELECT count(*)::int AS n FROM mouvements WHERE organisation_id = $1 AND genre = 'debit'`,
      [org.id],
    );
    expect(rows[0].n).toBe(600);
  });
});
