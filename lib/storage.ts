/**
 * Where generated files live: a folder under DATA_DIR by default, an S3-compatible bucket when configured (AWS S3,
 * MinIO, Scaleway, OVHcloud, Cloudflare R2…). The interface is the few calls the service needs, so the S3 side is a
 * small Signature V4 client over node:crypto and fetch rather than the AWS SDK.
 */
import { createHash, createHmac } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { copyFile, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from './config.ts';
import { randomToken } from './crypto.ts';

export interface StoredFile {
  bytes: Uint8Array;
  contentType: string;
}

export interface FileStorage {
  /** Which backend: the download route redirects to the bucket for `s3`, serves the bytes itself for `dossier`. */
  readonly kind: 'dossier' | 's3';
  put(key: string, bytes: Uint8Array, contentType: string): Promise<void>;
  /**
   * Stores a file of the local disk without holding it in memory (export editions of hundreds of megabytes). Folder
   * storage only; elsewhere the caller reads it and calls `put`.
   */
  putFile?(key: string, file: string, contentType: string): Promise<void>;
  /** The file, or null when there is none under this key. */
  get(key: string): Promise<StoredFile | null>;
  /** The file as a stream with its size, or null (folder storage only: a bucket's files go by pre-signed address). */
  open?(key: string): Promise<{ stream: NodeJS.ReadableStream; size: number; contentType: string } | null>;
  /** Removes the file; removing an absent file is not an error. */
  delete(key: string): Promise<void>;
  /**
   * Files under a prefix with their write time, for purges. Folder storage only: a bucket expires its objects itself
   * with a lifecycle rule, which needs no process of ours to be running.
   */
  list?(prefix: string): AsyncIterable<{ key: string; modifiedAt: Date }>;
  /**
   * A pre-signed GET address of the bucket (S3 only), so that downloads go from the bucket to the client without
   * passing through the API.
   */
  presignGet?(key: string, options: PresignOptions): string;
}

export interface PresignOptions {
  expiresS: number;
  /** Served as the response's Content-Disposition and Content-Type (the bucket honours `response-*` parameters). */
  contentDisposition?: string;
  contentType?: string;
  now?: Date;
}

const SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const MAX_SEGMENTS = 8;

/**
 * Keys are chosen by the service (a prefix and a random token), never by a client; still, anything that could leave
 * the folder or collide with our side files (`..`, absolute paths, `~`) is refused outright.
 */
export function assertSafeKey(key: string): void {
  const segments = key.split('/');
  const safe =
    segments.length <= MAX_SEGMENTS && segments.every((s) => SEGMENT.test(s) && !s.includes('..') && s !== '.');
  if (!safe) throw new Error(`Clé de stockage refusée : ${JSON.stringify(key.slice(0, 80))}`);
}

// ---------------------------------------------------------------------------------------------------------------
// Folder.

/** `~` never appears in a key, so side files (content type, writes in progress) cannot collide with a file. */
const META_SUFFIX = '~meta';

/** The type kept in a file's side file; a file without its side file stays readable, as bytes of unknown type. */
async function contentTypeOf(file: string): Promise<string> {
  try {
    return (JSON.parse(await readFile(file + META_SUFFIX, 'utf8')) as { contentType: string }).contentType;
  } catch {
    return 'application/octet-stream';
  }
}

const TMP_MARK = '~tmp';

async function writeAtomically(file: string, data: Uint8Array | string): Promise<void> {
  // A reader never sees half a file: write aside, then rename (atomic within one file system).
  const tmp = `${file}${TMP_MARK}${randomToken(8)}`;
  await writeFile(tmp, data);
  await rename(tmp, file);
}

/** Files under `dir` (e.g. `DATA_DIR/fichiers`), the content type kept in a side file next to each. */
export function createFolderStorage(dir: string): FileStorage {
  const root = path.resolve(dir);
  const fileOf = (key: string) => {
    assertSafeKey(key);
    return path.join(root, ...key.split('/'));
  };
  return {
    kind: 'dossier',
    async put(key, bytes, contentType) {
      const file = fileOf(key);
      await mkdir(path.dirname(file), { recursive: true });
      await writeAtomically(file + META_SUFFIX, JSON.stringify({ contentType }));
      await writeAtomically(file, bytes);
    },
    async putFile(key, source, contentType) {
      const file = fileOf(key);
      await mkdir(path.dirname(file), { recursive: true });
      await writeAtomically(file + META_SUFFIX, JSON.stringify({ contentType }));
      // Copied aside, then renamed: a reader never sees half a file.
      const tmp = `${file}${TMP_MARK}${randomToken(8)}`;
      await copyFile(source, tmp);
      await rename(tmp, file);
    },
    async open(key) {
      const file = fileOf(key);
      let size: number;
      try {
        size = (await stat(file)).size;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw error;
      }
      return { stream: createReadStream(file), size, contentType: await contentTypeOf(file) };
    },
    async get(key) {
      const file = fileOf(key);
      let bytes: Buffer;
      try {
        bytes = await readFile(file);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw error;
      }
      return {
        bytes: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength),
        contentType: await contentTypeOf(file),
      };
    },
    async delete(key) {
      const file = fileOf(key);
      await rm(file, { force: true });
      await rm(file + META_SUFFIX, { force: true });
    },
    async *list(prefix) {
      const base = prefix.replace(/\/+$/, '');
      if (base) assertSafeKey(base);
      const start = base ? path.join(root, ...base.split('/')) : root;
      const walk = async function* (
        dirPath: string,
        keyPrefix: string,
      ): AsyncGenerator<{ key: string; modifiedAt: Date }> {
        let entries;
        try {
          entries = await readdir(dirPath, { withFileTypes: true });
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
          throw error;
        }
        for (const entry of entries) {
          if (entry.name.includes('~')) continue;
          const key = keyPrefix ? `${keyPrefix}/${entry.name}` : entry.name;
          const full = path.join(dirPath, entry.name);
          if (entry.isDirectory()) yield* walk(full, key);
          else if (entry.isFile()) yield { key, modifiedAt: (await stat(full)).mtime };
        }
      };
      yield* walk(start, base);
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// S3-compatible bucket, AWS Signature Version 4.

export interface S3Options {
  /** e.g. https://s3.fr-par.scw.cloud or http://127.0.0.1:9000 (MinIO). */
  endpoint: string;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** false (default): path-style `endpoint/bucket/key`, which every S3-compatible server accepts. */
  virtualHosted?: boolean;
  /** Per-request time-out. */
  timeoutMs?: number;
}

const sha256Hex = (data: Uint8Array | string) => createHash('sha256').update(data).digest('hex');
const hmac = (key: Uint8Array | string, data: string) => createHmac('sha256', key).update(data).digest();

/** RFC 3986 encoding as Signature V4 wants it: everything but unreserved characters, `/` kept in paths. */
function uriEncode(text: string, keepSlash = false): string {
  const encoded = encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return keepSlash ? encoded.replace(/%2F/g, '/') : encoded;
}

/** `20130524T000000Z` and `20130524`. */
function amzDates(now: Date): { amzDate: string; day: string } {
  const amzDate = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
  return { amzDate, day: amzDate.slice(0, 8) };
}

export interface SignInput {
  method: string;
  url: URL;
  /** Lower-case names; `host` is added. */
  headers: Record<string, string>;
  payloadHash: string;
  now: Date;
}

/**
 * The Signature V4 of a request (header form): canonical request, string to sign, derived key. Exported for the
 * tests, which check it against reference signatures.
 */
export function signV4(
  options: Pick<S3Options, 'region' | 'accessKeyId' | 'secretAccessKey'>,
  input: SignInput,
): { authorization: string; amzDate: string } {
  const { amzDate, day } = amzDates(input.now);
  const headers: Record<string, string> = { ...input.headers, host: input.url.host, 'x-amz-date': amzDate };
  const names = Object.keys(headers)
    .map((n) => n.toLowerCase())
    .sort();
  const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  const canonicalHeaders = names.map((n) => `${n}:${lower[n].trim().replace(/\s+/g, ' ')}\n`).join('');
  const signedHeaders = names.join(';');
  const canonicalRequest = [
    input.method,
    input.url.pathname,
    canonicalQuery(input.url.searchParams),
    canonicalHeaders,
    signedHeaders,
    input.payloadHash,
  ].join('\n');
  const scope = `${day}/${options.region}/s3/aws4_request`;
  const signature = signatureOf(options, day, `AWS4-HMAC-SHA256\n${amzDate}\n${scope}\n${sha256Hex(canonicalRequest)}`);
  return {
    amzDate,
    authorization: `AWS4-HMAC-SHA256 Credential=${options.accessKeyId}/${scope}, SignedHeaders=${signedHeaders}, Signature=${signature}`,
  };
}

function canonicalQuery(params: URLSearchParams): string {
  return [...params]
    .map(([k, v]) => [uriEncode(k), uriEncode(v)])
    .sort(([a, av], [b, bv]) => (a < b ? -1 : a > b ? 1 : av < bv ? -1 : av > bv ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
}

function signatureOf(options: Pick<S3Options, 'region' | 'secretAccessKey'>, day: string, stringToSign: string) {
  const kDate = hmac(`AWS4${options.secretAccessKey}`, day);
  const kSigning = hmac(hmac(hmac(kDate, options.region), 's3'), 'aws4_request');
  return createHmac('sha256', kSigning).update(stringToSign).digest('hex');
}

/** The pre-signed GET address of an object (query-string form of Signature V4, signed header `host` only). */
export function presignS3Get(
  options: Pick<S3Options, 'region' | 'accessKeyId' | 'secretAccessKey'>,
  objectUrl: URL,
  presign: PresignOptions,
): string {
  const { amzDate, day } = amzDates(presign.now ?? new Date());
  const scope = `${day}/${options.region}/s3/aws4_request`;
  const url = new URL(objectUrl);
  url.search = '';
  const params = url.searchParams;
  params.set('X-Amz-Algorithm', 'AWS4-HMAC-SHA256');
  params.set('X-Amz-Credential', `${options.accessKeyId}/${scope}`);
  params.set('X-Amz-Date', amzDate);
  params.set('X-Amz-Expires', String(presign.expiresS));
  params.set('X-Amz-SignedHeaders', 'host');
  if (presign.contentDisposition) params.set('response-content-disposition', presign.contentDisposition);
  if (presign.contentType) params.set('response-content-type', presign.contentType);
  const canonicalRequest = [
    'GET',
    url.pathname,
    canonicalQuery(params),
    `host:${url.host}\n`,
    'host',
    'UNSIGNED-PAYLOAD',
  ].join('\n');
  const signature = signatureOf(options, day, `AWS4-HMAC-SHA256\n${amzDate}\n${scope}\n${sha256Hex(canonicalRequest)}`);
  // Rebuilt by hand: URLSearchParams would encode spaces as `+`, which the bucket would not read as signed.
  return `${url.origin}${url.pathname}?${canonicalQuery(params)}&X-Amz-Signature=${signature}`;
}

export function createS3Storage(options: S3Options): FileStorage {
  const endpoint = new URL(options.endpoint);
  const objectUrl = (key: string) => {
    assertSafeKey(key);
    const keyPath = uriEncode(key, true);
    if (options.virtualHosted) return new URL(`${endpoint.protocol}//${options.bucket}.${endpoint.host}/${keyPath}`);
    return new URL(`${endpoint.origin}/${uriEncode(options.bucket)}/${keyPath}`);
  };
  const timeoutMs = options.timeoutMs ?? 15_000;

  // Plain fetch, not the outbound client: the bucket is the operator's own endpoint (often a private address, e.g.
  // MinIO on the same network), not an address a client gave us.
  async function send(method: 'PUT' | 'GET' | 'DELETE', key: string, body?: Uint8Array, contentType?: string) {
    const url = objectUrl(key);
    const payloadHash = sha256Hex(body ?? '');
    const headers: Record<string, string> = { 'x-amz-content-sha256': payloadHash };
    if (contentType) headers['content-type'] = contentType;
    const { authorization, amzDate } = signV4(options, { method, url, headers, payloadHash, now: new Date() });
    return fetch(url, {
      method,
      headers: { ...headers, 'x-amz-date': amzDate, authorization },
      body,
      signal: AbortSignal.timeout(timeoutMs),
    });
  }
  const failure = async (what: string, response: Response) => {
    // The bucket's error code (NoSuchBucket, AccessDenied, SignatureDoesNotMatch…) says what to fix; no secret in it.
    const text = await response.text().catch(() => '');
    const code = /<Code>([^<]{1,100})<\/Code>/.exec(text)?.[1] ?? '';
    return new Error(`Stockage S3 : ${what} a échoué (HTTP ${response.status}${code ? `, ${code}` : ''}).`);
  };

  return {
    kind: 's3',
    async put(key, bytes, contentType) {
      const response = await send('PUT', key, bytes, contentType);
      if (!response.ok) throw await failure(`l’écriture de ${key}`, response);
      await response.body?.cancel();
    },
    async get(key) {
      const response = await send('GET', key);
      if (response.status === 404) {
        await response.body?.cancel();
        return null;
      }
      if (!response.ok) throw await failure(`la lecture de ${key}`, response);
      return {
        bytes: new Uint8Array(await response.arrayBuffer()),
        contentType: response.headers.get('content-type') ?? 'application/octet-stream',
      };
    },
    async delete(key) {
      const response = await send('DELETE', key);
      if (!response.ok && response.status !== 404) throw await failure(`la suppression de ${key}`, response);
      await response.body?.cancel();
    },
    presignGet(key, presign) {
      return presignS3Get(options, objectUrl(key), presign);
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------

/**
 * The bucket when STORAGE_S3_ENDPOINT is set (then bucket and both keys are required), else `DATA_DIR/fichiers`.
 * Several api instances on several machines need the bucket: a folder is only shared by processes of one machine.
 */
export function storageFromConfig(config: Config): FileStorage {
  if (!config.STORAGE_S3_ENDPOINT) return createFolderStorage(path.join(config.DATA_DIR, 'fichiers'));
  // loadConfig refuses an endpoint without its bucket and keys.
  return createS3Storage({
    endpoint: config.STORAGE_S3_ENDPOINT,
    bucket: config.STORAGE_S3_BUCKET!,
    region: config.STORAGE_S3_REGION,
    accessKeyId: config.STORAGE_S3_ACCESS_KEY_ID!,
    secretAccessKey: config.STORAGE_S3_SECRET_ACCESS_KEY!,
    virtualHosted: config.STORAGE_S3_VIRTUAL_HOSTED,
  });
}
