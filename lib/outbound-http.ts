import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/**
 * The one client for every outbound HTTP call (webhook deliveries, document and photo URLs, PDF fetching). A URL comes
 * from a customer, so every call is treated as a possible SSRF: https only, every resolved address must be public, the
 * address actually connected is checked again, redirects are never followed, time and size are bounded.
 */

export type OutboundReason =
  'url_invalide' | 'schema_interdit' | 'adresse_interdite' | 'dns' | 'connexion' | 'delai' | 'trop_lourd';

export class OutboundError extends Error {
  readonly reason: OutboundReason;
  /** HTTP status already received when the failure came after the headers (a body over the size cap). */
  readonly status: number | null;
  /**
   * For the server's logs only, never for a customer: what `message` deliberately does not say (the address a name
   * resolved to, the resolver's or the socket's error code).
   */
  readonly detail: string;

  constructor(
    reason: OutboundReason,
    message: string,
    extra: { status?: number; cause?: unknown; detail?: string } = {},
  ) {
    super(message, { cause: extra.cause });
    this.name = 'OutboundError';
    this.reason = reason;
    this.status = extra.status ?? null;
    this.detail = extra.detail ?? message;
  }
}

/**
 * The one message for every host we will not or cannot reach: private, reserved or loopback address, a name that does
 * not resolve or has no address, a connection refused or never established. Telling them apart would let a customer
 * map our network (which internal names exist, which answer); the difference goes to `detail`, for our logs.
 */
export function unreachableMessage(host: string): string {
  return `Connexion impossible : l’hôte « ${host} » n’est pas joignable (seules les adresses publiques d’Internet le sont, jamais une adresse privée, locale ou réservée).`;
}

export type SniffedType = 'pdf' | 'jpeg' | 'png' | 'webp' | 'json' | 'html' | 'text' | null;

export interface OutboundRequest {
  method: string;
  url: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Whole exchange, DNS to last byte. Default 10 s. */
  timeoutMs?: number;
  /** DNS, TCP and TLS handshake. Default 5 s. */
  connectTimeoutMs?: number;
  /** Largest response body accepted. Default 10 MiB. */
  maxBytes?: number;
  signal?: AbortSignal;
}

export interface OutboundResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** Type recognised from the bytes themselves: the declared Content-Type is never trusted. */
  sniffedType: SniffedType;
}

export interface OutboundHttp {
  /** One request, never redirected: a 3xx is returned as is. Throws `OutboundError`. */
  request(req: OutboundRequest): Promise<OutboundResponse>;
  /**
   * Checks a URL as `request` would (scheme, DNS, every address), without connecting. Throws `OutboundError`. With
   * `resolve: false`, only what needs no name resolution: the scheme, credentials, a loopback name, a literal address.
   */
  checkUrl(url: string, options?: { timeoutMs?: number; resolve?: boolean }): Promise<void>;
}

export interface ResolvedAddress {
  address: string;
  family: number;
}

export interface OutboundOptions {
  /** Development and tests only: loopback becomes reachable, over http or https. Nothing else private, ever. */
  allowLoopback: boolean;
  userAgent?: string;
  /** Extra trusted certificates (a test server's self-signed one); the system store otherwise. */
  ca?: string | Buffer;
  /** Name resolution, replaceable so tests can play DNS rebinding. Default: the system resolver (getaddrinfo). */
  resolve?: (hostname: string) => Promise<ResolvedAddress[]>;
}

const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;
const DEFAULT_MAX_BYTES = 10 * 1024 * 1024;
const DEFAULT_DNS_TIMEOUT_MS = 3_000;
const DEFAULT_USER_AGENT = 'svc-immobilier-api/1.2';

// Not globally reachable (RFC 6890 and its updates). Loopback is listed apart because one setting opens it.
const FORBIDDEN = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  FORBIDDEN.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 96], // unspecified and the deprecated IPv4-compatible form
  ['::ffff:0:0:0', 96], // SIIT translated addresses
  ['64:ff9b:1::', 48], // local-use NAT64
  ['100::', 64], // discard
  ['2001::', 23], // IETF protocol assignments, Teredo included
  ['2001:db8::', 32], // documentation
  ['3fff::', 20], // documentation
  ['5f00::', 16], // SRv6 SIDs
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
] as const) {
  FORBIDDEN.addSubnet(network, prefix, 'ipv6');
}
// Outside 2000::/3 nothing is global unicast.
const GLOBAL_UNICAST_V6 = new BlockList();
GLOBAL_UNICAST_V6.addSubnet('2000::', 3, 'ipv6');

type AddressClass = 'public' | 'loopback' | 'interdite';

function ipv6Groups(address: string): number[] | null {
  let canonical: string;
  try {
    // The URL parser canonicalises every IPv6 spelling (embedded dotted quads included) to hexadecimal groups.
    canonical = new URL(`http://[${address.split('%')[0]}]/`).hostname.slice(1, -1);
  } catch {
    return null;
  }
  const [head, tail] = canonical.includes('::') ? canonical.split('::') : [canonical, ''];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t].map((g) => parseInt(g, 16));
  return groups.length === 8 && groups.every((g) => g >= 0 && g <= 0xffff) ? groups : null;
}

function ipv4From(high: number, low: number): string {
  return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
}

/** Where an IP address leads: the public Internet, this machine, or somewhere we never go. */
export function classifyAddress(address: string): AddressClass {
  const family = isIP(address.split('%')[0]);
  if (family === 4) {
    if (address.startsWith('127.')) return 'loopback';
    return FORBIDDEN.check(address, 'ipv4') ? 'interdite' : 'public';
  }
  if (family !== 6) return 'interdite';
  const g = ipv6Groups(address);
  if (!g) return 'interdite';
  const zero = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zero(0, 7) && g[7] === 1) return 'loopback';
  // IPv4-mapped: the socket really reaches that IPv4 address, loopback included.
  if (zero(0, 5) && g[5] === 0xffff) return classifyAddress(ipv4From(g[6], g[7]));
  // NAT64 and 6to4 carry an IPv4 destination: fine when public (DNS64 networks need it), never a way in.
  if (g[0] === 0x64 && g[1] === 0xff9b && zero(2, 6)) {
    return classifyAddress(ipv4From(g[6], g[7])) === 'public' ? 'public' : 'interdite';
  }
  if (g[0] === 0x2002) return classifyAddress(ipv4From(g[1], g[2])) === 'public' ? 'public' : 'interdite';
  const canonical = g.map((x) => x.toString(16)).join(':');
  if (!GLOBAL_UNICAST_V6.check(canonical, 'ipv6') || FORBIDDEN.check(canonical, 'ipv6')) return 'interdite';
  return 'public';
}

const JPEG = [0xff, 0xd8, 0xff];
const PNG = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

function startsWith(buf: Buffer, bytes: number[], at = 0): boolean {
  return buf.length >= at + bytes.length && bytes.every((b, i) => buf[at + i] === b);
}

/** Content type recognised from the bytes, or null when unknown (binary of another kind, empty body). */
export function sniffType(body: Buffer): SniffedType {
  if (body.length === 0) return null;
  // A PDF may carry a few bytes of garbage before its header; readers accept it within the first KiB.
  if (body.subarray(0, 1024).includes('%PDF-')) return 'pdf';
  if (startsWith(body, JPEG)) return 'jpeg';
  if (startsWith(body, PNG)) return 'png';
  if (body.toString('latin1', 0, 4) === 'RIFF' && body.toString('latin1', 8, 12) === 'WEBP') return 'webp';
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    return null;
  }
  const trimmed = text.replace(/^\uFEFF/, '').trimStart();
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    try {
      JSON.parse(trimmed);
      return 'json';
    } catch {
      // Looks like JSON but is not: plain text below.
    }
  }
  if (/^(<!--[\s\S]*?-->\s*)*<(!doctype\s+html|html|head|body)[\s>]/i.test(trimmed)) return 'html';
  return /[\u0000-\u0008\u000B\u000E-\u001F\u007F]/.test(text.slice(0, 4096)) ? null : 'text';
}

interface Target {
  url: URL;
  /** Host name without IPv6 brackets. */
  host: string;
  /** http is allowed (loopback setting): every address must then be loopback. */
  loopbackOnly: boolean;
}

function isLoopbackName(host: string): boolean {
  const name = host.toLowerCase().replace(/\.$/, '');
  return (
    name === 'localhost' || name.endsWith('.localhost') || (isIP(host) !== 0 && classifyAddress(host) === 'loopback')
  );
}

export function createOutboundHttp(options: OutboundOptions): OutboundHttp {
  const resolveName = options.resolve ?? ((hostname: string) => dnsLookup(hostname, { all: true }));
  const userAgent = options.userAgent ?? DEFAULT_USER_AGENT;

  function parseTarget(raw: string): Target {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new OutboundError('url_invalide', 'L’adresse n’est pas une URL absolue valide.');
    }
    if (url.username || url.password) {
      // Credentials in a URL end up in logs and listings; a receiver authenticates us by the signature instead.
      throw new OutboundError(
        'url_invalide',
        'L’adresse ne doit pas contenir d’identifiants (utilisateur:mot de passe@).',
      );
    }
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    if (!host) throw new OutboundError('url_invalide', 'L’adresse n’a pas de nom d’hôte.');
    if (url.protocol === 'https:') return { url, host, loopbackOnly: false };
    if (url.protocol === 'http:' && options.allowLoopback && isLoopbackName(host)) {
      return { url, host, loopbackOnly: true };
    }
    throw new OutboundError(
      'schema_interdit',
      url.protocol === 'http:'
        ? 'L’adresse doit être en https : http n’est pas accepté.'
        : `Schéma « ${url.protocol.replace(/:$/, '')} » refusé : seul https est accepté.`,
    );
  }

  function vet(target: Target, address: string): void {
    const kind = classifyAddress(address);
    // The name as the caller wrote it, never what it resolves to: a refusal must not map our network for a customer.
    if (kind === 'interdite' || (kind === 'loopback' && !options.allowLoopback)) {
      throw new OutboundError('adresse_interdite', unreachableMessage(target.host), {
        detail: `« ${target.host} » : adresse ${address} (${kind}) refusée.`,
      });
    }
    if (target.loopbackOnly && kind !== 'loopback') {
      throw new OutboundError('adresse_interdite', unreachableMessage(target.host), {
        detail: `« ${target.host} » : http vers ${address}, qui n’est pas la boucle locale.`,
      });
    }
  }

  async function resolveChecked(target: Target, timeoutMs: number): Promise<ResolvedAddress[]> {
    const literal = isIP(target.host);
    if (literal) {
      vet(target, target.host);
      return [{ address: target.host, family: literal }];
    }
    let timer: NodeJS.Timeout | undefined;
    let addresses: ResolvedAddress[];
    try {
      addresses = await Promise.race([
        resolveName(target.host),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () =>
              reject(
                new OutboundError('dns', unreachableMessage(target.host), {
                  detail: `« ${target.host} » : résolution sans réponse en ${timeoutMs} ms.`,
                }),
              ),
            timeoutMs,
          );
        }),
      ]);
    } catch (error) {
      if (error instanceof OutboundError) throw error;
      const code = (error as NodeJS.ErrnoException).code ?? 'erreur';
      throw new OutboundError('dns', unreachableMessage(target.host), {
        cause: error,
        detail: `« ${target.host} » ne se résout pas (${code}).`,
      });
    } finally {
      clearTimeout(timer);
    }
    if (addresses.length === 0) {
      throw new OutboundError('dns', unreachableMessage(target.host), {
        detail: `« ${target.host} » n’a aucune adresse.`,
      });
    }
    // Every address, not just the first: the connection may fall back to any of them.
    for (const { address } of addresses) vet(target, address);
    return addresses;
  }

  /** What can be refused without asking any resolver: a customer's name is only ever resolved to be reached. */
  function checkOffline(target: Target): void {
    if (isIP(target.host)) vet(target, target.host);
    else if (!options.allowLoopback && isLoopbackName(target.host)) {
      throw new OutboundError('adresse_interdite', unreachableMessage(target.host), {
        detail: `« ${target.host} » : nom de la boucle locale.`,
      });
    }
  }

  async function checkUrl(url: string, checkOptions: { timeoutMs?: number; resolve?: boolean } = {}): Promise<void> {
    const target = parseTarget(url);
    if (checkOptions.resolve === false) return checkOffline(target);
    await resolveChecked(target, checkOptions.timeoutMs ?? DEFAULT_DNS_TIMEOUT_MS);
  }

  function request(req: OutboundRequest): Promise<OutboundResponse> {
    const timeoutMs = req.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const connectTimeoutMs = Math.min(req.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS, timeoutMs);
    const maxBytes = req.maxBytes ?? DEFAULT_MAX_BYTES;
    let target: Target;
    try {
      target = parseTarget(req.url);
      checkOffline(target);
    } catch (error) {
      return Promise.reject(error);
    }
    if (req.signal?.aborted) return Promise.reject(new OutboundError('delai', 'Requête interrompue avant son envoi.'));

    // Resolution happens here, inside the connection: the addresses checked are the ones connected to, so a name
    // that answers differently between a check and the call (DNS rebinding) gains nothing.
    const lookup: LookupFunction = (_hostname, lookupOptions, callback) => {
      resolveChecked(target, connectTimeoutMs).then(
        (all) => {
          const wanted = lookupOptions.family === 4 || lookupOptions.family === 6 ? lookupOptions.family : 0;
          const usable = wanted ? all.filter((a) => a.family === wanted) : all;
          if (usable.length === 0) {
            callback(
              new OutboundError('dns', unreachableMessage(target.host), {
                detail: `« ${target.host} » n’a pas d’adresse IPv${wanted}.`,
              }),
              '',
              0,
            );
          } else if (lookupOptions.all) {
            callback(null, usable);
          } else {
            callback(null, usable[0].address, usable[0].family);
          }
        },
        (error: Error) => callback(error as NodeJS.ErrnoException, '', 0),
      );
    };

    const body = req.body === undefined ? undefined : Buffer.isBuffer(req.body) ? req.body : Buffer.from(req.body);
    const headers: Record<string, string> = { 'user-agent': userAgent, 'accept-encoding': 'identity' };
    for (const [name, value] of Object.entries(req.headers ?? {})) headers[name.toLowerCase()] = value;
    if (body) headers['content-length'] = String(body.length);

    const isHttps = target.url.protocol === 'https:';
    return new Promise<OutboundResponse>((resolve, reject) => {
      let settled = false;
      const timers: NodeJS.Timeout[] = [];
      const onAbort = () =>
        fail(new OutboundError('delai', 'Requête interrompue : le temps alloué à l’opération est écoulé.'));
      const finish = () => {
        settled = true;
        for (const t of timers) clearTimeout(t);
        req.signal?.removeEventListener('abort', onAbort);
      };
      const fail = (error: OutboundError) => {
        if (settled) return;
        finish();
        outgoing.destroy();
        reject(error);
      };

      const requestOptions: https.RequestOptions = {
        method: req.method,
        headers,
        lookup,
        // A fresh connection per call: a pooled socket would skip the lookup and its checks.
        agent: false,
      };
      if (isHttps && options.ca) requestOptions.ca = options.ca;
      const outgoing = (isHttps ? https : http).request(target.url, requestOptions);

      timers.push(
        setTimeout(() => fail(new OutboundError('delai', `Pas de réponse complète en ${timeoutMs} ms.`)), timeoutMs),
      );
      // A connection never established reads as any other unreachable host: its time-out is often the resolver's.
      const connectTimer = setTimeout(
        () =>
          fail(
            new OutboundError('connexion', unreachableMessage(target.host), {
              detail: `« ${target.host} » : connexion non établie en ${connectTimeoutMs} ms.`,
            }),
          ),
        connectTimeoutMs,
      );
      timers.push(connectTimer);
      req.signal?.addEventListener('abort', onAbort, { once: true });

      outgoing.on('socket', (socket) => {
        socket.once('connect', () => {
          // Defence in depth: whatever resolved, the peer we are talking to must be allowed.
          try {
            vet(target, socket.remoteAddress ?? '');
          } catch (error) {
            fail(error as OutboundError);
            return;
          }
          if (!isHttps) clearTimeout(connectTimer);
        });
        if (isHttps) socket.once('secureConnect', () => clearTimeout(connectTimer));
      });

      outgoing.on('error', (error: NodeJS.ErrnoException) => {
        if (error instanceof OutboundError) return fail(error);
        fail(connectionError(target.host, error));
      });

      outgoing.on('response', (res) => {
        const status = res.statusCode ?? 0;
        const tooBig = () =>
          new OutboundError('trop_lourd', `Réponse plus lourde que la limite de ${maxBytes} octets.`, { status });
        const declared = Number(res.headers['content-length']);
        if (Number.isFinite(declared) && declared > maxBytes) return fail(tooBig());
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxBytes) return fail(tooBig());
          chunks.push(chunk);
        });
        res.on('error', (error: NodeJS.ErrnoException) => fail(connectionError(target.host, error)));
        res.on('end', () => {
          if (settled) return;
          finish();
          const all = Buffer.concat(chunks);
          resolve({ status, headers: res.headers, body: all, sniffedType: sniffType(all) });
        });
      });

      outgoing.end(body);
    });
  }

  return { request, checkUrl };
}

function connectionError(host: string, error: NodeJS.ErrnoException): OutboundError {
  const code = error.code ?? error.message;
  const detail = `« ${host} » : ${code}.`;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NONAME' || code === 'EAI_FAIL') {
    return new OutboundError('dns', unreachableMessage(host), { cause: error, detail });
  }
  // A certificate is only ever checked once a public address answered: saying so maps nothing.
  if (/CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_VERIFY/i.test(code)) {
    return new OutboundError('connexion', `Certificat TLS de « ${host} » refusé (${code}).`, { cause: error, detail });
  }
  return new OutboundError('connexion', unreachableMessage(host), { cause: error, detail });
}
