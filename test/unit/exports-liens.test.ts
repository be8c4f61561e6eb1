import { describe, expect, it } from 'vitest';
import type { FileDelivery } from '../../domain/documents/telechargement.ts';
import { adresseFichier, servirFichierExport } from '../../domain/exports/telechargement.ts';
import { createS3Storage, type FileStorage } from '../../lib/storage.ts';

// The address of an edition's file: pre-signed by the bucket for 15 minutes when the files are in S3; a signed link of
// this API otherwise, which a tampered part or an expiry refuses.

const NOW = new Date('2026-03-02T08:00:00.400Z');
const EXPIRE = new Date('2026-03-02T08:15:00.000Z');
const FICHIER = {
  perimetre: 'contrat' as const,
  jeu: 'dvf_adresse',
  date: '2026-03-02',
  nom: 'donnees.parquet',
  contentType: 'application/vnd.apache.parquet',
};

describe('the address of an edition file', () => {
  it('is the bucket’s pre-signed address, valid 900 seconds, when the storage is S3', () => {
    const delivery: FileDelivery = {
      storage: createS3Storage({
        endpoint: 'https://s3.example.test',
        bucket: 'editions',
        region: 'fr-par',
        accessKeyId: 'AKIDEXAMPLE',
        secretAccessKey: 'secret',
      }),
      secret: 'x',
      baseUrl: null,
      linkTtlS: 60,
    };
    const url = new URL(adresseFichier(delivery, FICHIER, EXPIRE, NOW));
    expect(url.origin + url.pathname).toBe(
      'https://s3.example.test/editions/exports/contrat/dvf_adresse/2026-03-02/donnees.parquet',
    );
    expect(url.searchParams.get('X-Amz-Expires')).toBe('900');
    expect(url.searchParams.get('X-Amz-Date')).toBe('20260302T080000Z');
    expect(url.searchParams.get('response-content-disposition')).toBe(
      'attachment; filename="dvf_adresse-2026-03-02-donnees.parquet"',
    );
    expect(url.searchParams.get('X-Amz-Signature')).toMatch(/^[0-9a-f]{64}$/);
  });

  it('is a signed link of this API otherwise, refused once altered or expired', async () => {
    const octets = new Uint8Array([1, 2, 3]);
    const storage: FileStorage = {
      kind: 'dossier',
      put: async () => {},
      get: async (key) =>
        key === 'exports/contrat/dvf_adresse/2026-03-02/donnees.parquet'
          ? { bytes: octets, contentType: 'application/vnd.apache.parquet' }
          : null,
      delete: async () => {},
    };
    const delivery: FileDelivery = {
      storage,
      secret: 'secret-des-liens',
      baseUrl: 'https://api.example.test',
      linkTtlS: 60,
    };
    const lien = new URL(adresseFichier(delivery, FICHIER, EXPIRE, NOW));
    expect(lien.pathname).toBe('/api/v1/exports/fichiers/contrat/dvf_adresse/2026-03-02/donnees.parquet');
    const params = {
      perimetre: 'contrat',
      jeu: 'dvf_adresse',
      date: '2026-03-02',
      nom: 'donnees.parquet',
      expire: lien.searchParams.get('expire'),
      signature: lien.searchParams.get('signature'),
    };
    const servi = await servirFichierExport(delivery, params, NOW);
    expect(servi.body).toEqual(octets);
    expect(servi.headers['Cache-Control']).toBe('private, max-age=900');
    for (const altere of [
      { ...params, perimetre: 'echantillon' },
      { ...params, date: '2026-03-01' },
      { ...params, nom: 'donnees.csv.gz' },
      { ...params, expire: String(Number(params.expire) + 3600) },
      { ...params, nom: '../../secret' },
    ]) {
      await expect(servirFichierExport(delivery, altere, NOW)).rejects.toMatchObject({ code: 'ressource_absente' });
    }
    await expect(servirFichierExport(delivery, params, EXPIRE)).rejects.toThrow(/expiré/);
    expect((await servirFichierExport(delivery, params, new Date(EXPIRE.getTime() - 1))).body).toEqual(octets);
  });
});
