import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyAddress, createOutboundHttp, OutboundError, sniffType } from '../../lib/outbound-http.ts';

async function rejection(promise: Promise<unknown>): Promise<OutboundError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(OutboundError);
    return error as OutboundError;
  }
  throw new Error('expected a refusal');
}

const hits: string[] = [];
const server = http.createServer((req, res) => {
  hits.push(req.url ?? '');
  if (req.url === '/json') {
    res.setHeader('Content-Type', 'text/plain');
    res.end('{"ok":true}');
  } else if (req.url === '/redirect') {
    res.writeHead(302, { Location: '/target' });
    res.end();
  } else if (req.url === '/big') {
    res.end(Buffer.alloc(200_000, 'a'));
  } else if (req.url === '/big-chunked') {
    res.write(Buffer.alloc(50_000, 'a'));
    setTimeout(() => res.end(Buffer.alloc(50_000, 'a')), 20);
  } else if (req.url === '/silent') {
    // Never answers: the caller's time-out must end the call.
  } else if (req.url === '/echo') {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => res.end(JSON.stringify({ method: req.method, body, ua: req.headers['user-agent'] })));
  } else {
    res.end('ok');
  }
});
let base: string;
let port: number;

let tlsDir: string;
let tlsServer: https.Server;
let cert: Buffer;
let tlsPort: number;

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;

  tlsDir = mkdtempSync(path.join(tmpdir(), 'outbound-tls-'));
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
    '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1',
    '-keyout', path.join(tlsDir, 'key.pem'), '-out', path.join(tlsDir, 'cert.pem'),
  ], { stdio: 'ignore' }); // prettier-ignore
  cert = readFileSync(path.join(tlsDir, 'cert.pem'));
  tlsServer = https.createServer({ key: readFileSync(path.join(tlsDir, 'key.pem')), cert }, (_req, res) =>
    res.end('%PDF-1.7\n'),
  );
  await new Promise<void>((resolve) => tlsServer.listen(0, '127.0.0.1', resolve));
  tlsPort = (tlsServer.address() as AddressInfo).port;
});

afterAll(async () => {
  server.closeAllConnections();
  tlsServer.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await new Promise((resolve) => tlsServer.close(resolve));
  rmSync(tlsDir, { recursive: true, force: true });
});

describe('refusals before any connection', () => {
  const strict = createOutboundHttp({ allowLoopback: false });
  const local = createOutboundHttp({ allowLoopback: true });

  it('refuses http, other schemes and malformed URLs', async () => {
    expect((await rejection(strict.request({ method: 'GET', url: 'http://example.com/' }))).reason).toBe(
      'schema_interdit',
    );
    expect((await rejection(strict.checkUrl('ftp://example.com/'))).reason).toBe('schema_interdit');
    expect((await rejection(strict.checkUrl('pas une url'))).reason).toBe('url_invalide');
    expect((await rejection(strict.checkUrl('https://user:pw@example.com/'))).reason).toBe('url_invalide');
    // Even with loopback allowed, http is for loopback only, and refused before any DNS.
    const error = await rejection(local.checkUrl('http://example.com/'));
    expect(error.reason).toBe('schema_interdit');
    expect(error.message).toMatch(/https/);
  });

  it.each([
    'https://10.0.0.1/',
    'https://169.254.169.254/latest/meta-data/',
    'https://[::1]/',
    'https://127.0.0.1/',
    'https://2130706433/', // 127.0.0.1 written as one number
    'https://[::ffff:127.0.0.1]/',
    'https://[::ffff:a9fe:a9fe]/', // 169.254.169.254, IPv4-mapped
    'https://100.64.0.1/',
    'https://172.31.255.255/',
    'https://192.168.1.1/',
    'https://0.0.0.0/',
    'https://224.0.0.1/',
    'https://[fd00::1]/',
    'https://[fe80::1]/',
    'https://[64:ff9b::a00:1]/', // NAT64 towards 10.0.0.1
  ])('refuses %s without loopback allowed', async (url) => {
    const error = await rejection(strict.request({ method: 'GET', url }));
    expect(error.reason).toBe('adresse_interdite');
    expect(error.message).toMatch(/publiques/);
  });

  it('refuses a host name resolving to 127.0.0.1', async () => {
    expect((await rejection(strict.checkUrl('https://localhost/'))).reason).toBe('adresse_interdite');
    expect((await rejection(strict.request({ method: 'GET', url: `https://localhost:${tlsPort}/` }))).reason).toBe(
      'adresse_interdite',
    );
  });

  it('never says what a refused name resolves to', async () => {
    const client = createOutboundHttp({
      allowLoopback: false,
      resolve: async () => [{ address: '10.20.30.40', family: 4 }],
    });
    const error = await rejection(client.checkUrl('https://interne.example:39555/'));
    expect(error.reason).toBe('adresse_interdite');
    expect(error.message).toContain('« interne.example »');
    expect(error.message).not.toMatch(/10\.20\.30\.40/);
    expect((await rejection(strict.checkUrl('https://localhost/'))).message).not.toMatch(/127\.0\.0\.1|::1/);
  });

  it('keeps private ranges closed when loopback is allowed', async () => {
    expect((await rejection(local.checkUrl('https://10.0.0.1/'))).reason).toBe('adresse_interdite');
    expect((await rejection(local.checkUrl('https://169.254.169.254/'))).reason).toBe('adresse_interdite');
  });

  it('checks every resolved address, not just the first', async () => {
    const client = createOutboundHttp({
      allowLoopback: false,
      resolve: async () => [
        { address: '93.184.216.34', family: 4 },
        { address: '192.168.0.10', family: 4 },
      ],
    });
    expect((await rejection(client.checkUrl('https://mixed.example/'))).reason).toBe('adresse_interdite');
  });

  it('checks the address connected to: a name rebinding to loopback after the check gets nothing', async () => {
    let calls = 0;
    const client = createOutboundHttp({
      allowLoopback: false,
      resolve: async () => [{ address: calls++ === 0 ? '93.184.216.34' : '127.0.0.1', family: 4 }],
    });
    await client.checkUrl(`https://rebind.example:${tlsPort}/`);
    const error = await rejection(client.request({ method: 'GET', url: `https://rebind.example:${tlsPort}/` }));
    expect(error.reason).toBe('adresse_interdite');
  });

  it('checks without resolving when asked: the scheme, credentials, a literal address, a loopback name', async () => {
    const resolved: string[] = [];
    const client = createOutboundHttp({
      allowLoopback: false,
      resolve: async (name) => {
        resolved.push(name);
        return [{ address: '10.0.0.1', family: 4 }];
      },
    });
    const offline = (url: string) => client.checkUrl(url, { resolve: false });
    expect((await rejection(offline('https://10.0.0.1/'))).reason).toBe('adresse_interdite');
    expect((await rejection(offline('https://localhost/'))).reason).toBe('adresse_interdite');
    expect((await rejection(offline('http://example.com/'))).reason).toBe('schema_interdit');
    expect((await rejection(offline('https://u:p@example.com/'))).reason).toBe('url_invalide');
    // A name is not looked up, so a name leading somewhere private passes this check (the request refuses it).
    await offline('https://interne.example/');
    expect(resolved).toEqual([]);
  });

  it('says the same of a private address, a name that does not resolve and a refused connection', async () => {
    const client = createOutboundHttp({
      allowLoopback: false,
      resolve: async (name) => {
        if (name === 'interne.example') return [{ address: '10.20.30.40', family: 4 }];
        if (name === 'vide.example') return [];
        throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
      },
    });
    const local = createOutboundHttp({ allowLoopback: true });
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const errors = [
      await rejection(client.request({ method: 'GET', url: 'https://interne.example/' })),
      await rejection(client.request({ method: 'GET', url: 'https://absent.example/' })),
      await rejection(client.checkUrl('https://vide.example/')),
      await rejection(client.request({ method: 'GET', url: 'https://10.20.30.40/' })),
      await rejection(local.request({ method: 'GET', url: `https://127.0.0.1:${closedPort}/` })),
    ];
    const messages = errors.map((e) => e.message.replace(/« [^»]+ »/, '« hôte »'));
    expect(new Set(messages)).toEqual(
      new Set([
        'Connexion impossible : l’hôte « hôte » n’est pas joignable (seules les adresses publiques d’Internet le sont, jamais une adresse privée, locale ou réservée).',
      ]),
    );
    // What the customer is not told is kept for the server's log.
    expect(errors.map((e) => e.reason)).toEqual(['adresse_interdite', 'dns', 'dns', 'adresse_interdite', 'connexion']);
    expect(errors[0].detail).toMatch(/10\.20\.30\.40/);
    expect(errors[1].detail).toMatch(/ENOTFOUND/);
    expect(errors[4].detail).toMatch(/ECONNREFUSED/);
  });

  it('reports a name that does not resolve', async () => {
    const client = createOutboundHttp({
      allowLoopback: false,
      resolve: async () => {
        throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
      },
    });
    expect((await rejection(client.checkUrl('https://nowhere.example/'))).reason).toBe('dns');
  });
});

describe('requests with loopback allowed', () => {
  const client = createOutboundHttp({ allowLoopback: true, userAgent: 'svc-test/1' });

  it('reaches a local http server and sniffs the type from the bytes', async () => {
    const res = await client.request({ method: 'GET', url: `${base}/json` });
    expect(res.status).toBe(200);
    expect(res.body.toString()).toBe('{"ok":true}');
    expect(res.sniffedType).toBe('json');
  });

  it('sends the method, body and user agent', async () => {
    const res = await client.request({ method: 'POST', url: `${base}/echo`, body: 'bonjour' });
    expect(JSON.parse(res.body.toString())).toEqual({ method: 'POST', body: 'bonjour', ua: 'svc-test/1' });
  });

  it('reaches localhost by name over http', async () => {
    const res = await client.request({ method: 'GET', url: `http://localhost:${port}/` });
    expect(res.body.toString()).toBe('ok');
  });

  it('returns a 302 as is and never follows it', async () => {
    hits.length = 0;
    const res = await client.request({ method: 'GET', url: `${base}/redirect` });
    expect(res.status).toBe(302);
    expect(res.headers.location).toBe('/target');
    expect(hits).toEqual(['/redirect']);
  });

  it('caps the response size, declared or streamed', async () => {
    const declared = await rejection(client.request({ method: 'GET', url: `${base}/big`, maxBytes: 1000 }));
    expect(declared.reason).toBe('trop_lourd');
    expect(declared.status).toBe(200);
    const streamed = await rejection(client.request({ method: 'GET', url: `${base}/big-chunked`, maxBytes: 60_000 }));
    expect(streamed.reason).toBe('trop_lourd');
    const within = await client.request({ method: 'GET', url: `${base}/big`, maxBytes: 200_000 });
    expect(within.body.length).toBe(200_000);
  });

  it('times out a server that never answers', async () => {
    const started = Date.now();
    const error = await rejection(client.request({ method: 'GET', url: `${base}/silent`, timeoutMs: 300 }));
    expect(error.reason).toBe('delai');
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('bounds name resolution by the connection time-out', async () => {
    const slow = createOutboundHttp({ allowLoopback: true, resolve: () => new Promise(() => {}) });
    const started = Date.now();
    const error = await rejection(slow.request({ method: 'GET', url: 'https://hang.example/', connectTimeoutMs: 200 }));
    expect(error.reason).toBe('dns');
    expect(error.detail).toMatch(/200 ms/);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('stops when the caller aborts', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const error = await rejection(client.request({ method: 'GET', url: `${base}/silent`, signal: controller.signal }));
    expect(error.reason).toBe('delai');
  });

  it('reports a refused connection', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const error = await rejection(client.request({ method: 'GET', url: `http://127.0.0.1:${closedPort}/` }));
    expect(error.reason).toBe('connexion');
  });

  it('verifies TLS certificates: a self-signed one only passes when trusted', async () => {
    const error = await rejection(client.request({ method: 'GET', url: `https://localhost:${tlsPort}/` }));
    expect(error.reason).toBe('connexion');
    const trusting = createOutboundHttp({ allowLoopback: true, ca: cert });
    const res = await trusting.request({ method: 'GET', url: `https://localhost:${tlsPort}/` });
    expect(res.status).toBe(200);
    expect(res.sniffedType).toBe('pdf');
  });
});

describe('address classification and sniffing', () => {
  it('classifies addresses', () => {
    expect(classifyAddress('93.184.216.34')).toBe('public');
    expect(classifyAddress('2606:2800:220:1:248:1893:25c8:1946')).toBe('public');
    expect(classifyAddress('::ffff:93.184.216.34')).toBe('public');
    expect(classifyAddress('64:ff9b::5db8:d822')).toBe('public');
    expect(classifyAddress('127.0.0.2')).toBe('loopback');
    expect(classifyAddress('::1')).toBe('loopback');
    expect(classifyAddress('::ffff:127.0.0.1')).toBe('loopback');
    for (const a of [
      '10.1.2.3',
      '172.16.0.1',
      '169.254.169.254',
      '100.127.255.255',
      '255.255.255.255',
      '::',
      'fc00::1',
    ]) {
      expect(classifyAddress(a), a).toBe('interdite');
    }
    expect(classifyAddress('2002:a00:1::1')).toBe('interdite'); // 6to4 towards 10.0.0.1
    expect(classifyAddress('172.32.0.1')).toBe('public');
  });

  it('sniffs types from bytes', () => {
    expect(sniffType(Buffer.from('%PDF-1.4\n...'))).toBe('pdf');
    expect(sniffType(Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0]))).toBe('jpeg');
    expect(sniffType(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0]))).toBe('png');
    expect(sniffType(Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(4), Buffer.from('WEBPVP8 ')]))).toBe('webp');
    expect(sniffType(Buffer.from(' [1, 2]'))).toBe('json');
    expect(sniffType(Buffer.from('<!DOCTYPE html><html></html>'))).toBe('html');
    expect(sniffType(Buffer.from('Bonjour, déjà là'))).toBe('text');
    expect(sniffType(Buffer.from('{pas du json'))).toBe('text');
    expect(sniffType(Buffer.from([0, 1, 2, 0xfe]))).toBe(null);
    expect(sniffType(Buffer.alloc(0))).toBe(null);
  });
});
