import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../../lib/net.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertSafeKey, createFolderStorage, createS3Storage, presignS3Get, signV4 } from '../../../lib/storage.ts';

const bytes = (text: string) => new TextEncoder().encode(text);
const text = (data: Uint8Array) => new TextDecoder().decode(data);

describe('folder storage', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'svc-stockage-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('keeps bytes and content type, forgets deleted files, lists without its side files', async () => {
    const storage = createFolderStorage(dir);
    await storage.put('documents/Abc123', bytes('%PDF-1.7 bonjour'), 'application/pdf');
    await storage.put('documents/Def456', bytes('PK'), 'application/zip');
    const got = await storage.get('documents/Abc123');
    expect(got && text(got.bytes)).toBe('%PDF-1.7 bonjour');
    expect(got?.contentType).toBe('application/pdf');
    expect(await storage.get('documents/absent')).toBeNull();

    const listed: string[] = [];
    for await (const entry of storage.list!('documents')) listed.push(entry.key);
    expect(listed.sort()).toEqual(['documents/Abc123', 'documents/Def456']);

    await storage.delete('documents/Abc123');
    await storage.delete('documents/Abc123');
    expect(await storage.get('documents/Abc123')).toBeNull();
    expect(await readdir(path.join(dir, 'documents'))).not.toContain('Abc123~meta');
  });

  it('refuses keys that could leave the folder or collide with side files', async () => {
    const storage = createFolderStorage(dir);
    for (const key of ['../evasion', '/etc/passwd', 'a/../../b', 'a//b', '', 'a~meta', '.cache', 'a/./b', 'é']) {
      expect(() => assertSafeKey(key), key).toThrow(/Clé de stockage refusée/);
      await expect(storage.put(key, bytes('x'), 'text/plain'), key).rejects.toThrow(/Clé de stockage refusée/);
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------

/** The example credentials of AWS's Signature V4 documentation. */
const AWS_EXAMPLE = {
  region: 'us-east-1',
  accessKeyId: 'AKIAIOSFODNN7EXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
};
const may24 = new Date('2013-05-24T00:00:00Z');

describe('AWS Signature V4', () => {
  it('signs AWS’s documented GET Object example to the documented signature', () => {
    const { authorization } = signV4(AWS_EXAMPLE, {
      method: 'GET',
      url: new URL('https://examplebucket.s3.amazonaws.com/test.txt'),
      headers: {
        range: 'bytes=0-9',
        'x-amz-content-sha256': 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
      },
      payloadHash: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
      now: may24,
    });
    expect(authorization).toBe(
      'AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, ' +
        'SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, ' +
        'Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41',
    );
  });

  it('pre-signs AWS’s documented example URL to the documented signature', () => {
    const url = presignS3Get(AWS_EXAMPLE, new URL('https://examplebucket.s3.amazonaws.com/test.txt'), {
      expiresS: 86400,
      now: may24,
    });
    expect(url).toBe(
      'https://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256' +
        '&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request' +
        '&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host' +
        '&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404',
    );
  });

  // Reference values computed once with botocore 1.43 (S3SigV4Auth, S3SigV4QueryAuth) for the same inputs.
  it('signs a PUT and a pre-signed GET with response overrides as botocore does', () => {
    const region = { ...AWS_EXAMPLE, region: 'eu-west-3' };
    const body = bytes('%PDF-1.7 test');
    const payloadHash = 'eddc31937fbdaf708e866af0d20b9fb8c79dd001881c8a11e4c617f2882e779f';
    const { authorization } = signV4(region, {
      method: 'PUT',
      url: new URL('http://127.0.0.1:9000/documents-bucket/documents/Ab3'),
      headers: { 'content-type': 'application/pdf', 'x-amz-content-sha256': payloadHash },
      payloadHash,
      now: may24,
    });
    expect(body.byteLength).toBe(13);
    expect(authorization).toMatch(
      /SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date, Signature=4526197383cc7f1e99e4c9154d86425ba7b2a8154311cdc4ec00f70caf4f8ad1$/,
    );
    const url = presignS3Get(region, new URL('http://127.0.0.1:9000/documents-bucket/documents/Ab3'), {
      expiresS: 60,
      contentDisposition: 'inline; filename="etude-de-marche.pdf"',
      contentType: 'application/pdf',
      now: may24,
    });
    expect(url).toMatch(/&X-Amz-Signature=b0834be90bf5e61bde57f39c89c8cbe0b4d85bc7ed48c899196b39d5a5f32e16$/);
    expect(url).toContain('response-content-disposition=inline%3B%20filename%3D%22etude-de-marche.pdf%22');
  });
});

// ---------------------------------------------------------------------------------------------------------------

// moto's S3 server, when this machine has it, stands in for a bucket: it checks the plumbing (path-style addresses,
// content types, 404s, pre-signed GETs), not the signatures, which the reference values above cover.
const moto = spawnSync('moto_server', ['--help'], { stdio: 'ignore' }).status === 0;

describe.skipIf(!moto)('S3 storage against a local S3 server (skipped when moto_server is absent)', () => {
  let server: ChildProcess;
  let endpoint: string;
  beforeAll(async () => {
    const port = await freePort();
    endpoint = `http://127.0.0.1:${port}`;
    server = spawn('moto_server', ['-H', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
    for (let i = 0; i < 100; i++) {
      const up = await fetch(endpoint).then(
        () => true,
        () => false,
      );
      if (up) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    await fetch(`${endpoint}/fichiers`, { method: 'PUT' });
  });
  afterAll(() => {
    server?.kill();
  });

  it('puts, gets, pre-signs and deletes', async () => {
    const storage = createS3Storage({
      endpoint,
      bucket: 'fichiers',
      region: 'eu-west-3',
      accessKeyId: 'AKID',
      secretAccessKey: 's',
    });
    await storage.put('documents/Abc123', bytes('%PDF-1.7 bonjour'), 'application/pdf');
    const got = await storage.get('documents/Abc123');
    expect(got && text(got.bytes)).toBe('%PDF-1.7 bonjour');
    expect(got?.contentType).toBe('application/pdf');
    expect(await storage.get('documents/absent')).toBeNull();
    const presigned = await fetch(storage.presignGet!('documents/Abc123', { expiresS: 60 }));
    expect(presigned.status).toBe(200);
    expect(await presigned.text()).toBe('%PDF-1.7 bonjour');
    await storage.delete('documents/Abc123');
    expect(await storage.get('documents/Abc123')).toBeNull();
  });
});
