import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import {
  chargerPhotos,
  createLimiteurParCle,
  decodagesCommences,
  PhotosRefusees,
  verifierLiens,
} from '../../../domain/estimation/photos.ts';
import { createOutboundHttp, sniffType, type OutboundHttp } from '../../../lib/outbound-http.ts';
import { pngTronque } from '../../support/png.ts';

/** A photo server in memory: a path's body, or the status it answers. */
function serveur(pages: Record<string, Buffer | number>): OutboundHttp & { lus: string[] } {
  const lus: string[] = [];
  return {
    lus,
    async request(req) {
      const chemin = new URL(req.url).pathname;
      lus.push(chemin);
      const page = pages[chemin] ?? 404;
      if (typeof page === 'number') return { status: page, headers: {}, body: Buffer.alloc(0), sniffedType: null };
      return { status: 200, headers: {}, body: page, sniffedType: sniffType(page) };
    },
    async checkUrl() {},
  };
}

async function refus(promise: Promise<unknown>): Promise<PhotosRefusees> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(PhotosRefusees);
    return error as PhotosRefusees;
  }
  throw new Error('refus attendu');
}

const petite = () =>
  sharp({ create: { width: 300, height: 200, channels: 3, background: { r: 10, g: 120, b: 60 } } })
    .png()
    .toBuffer();
const ENORME = pngTronque(6300, 6300);
const liens = (chemins: string[]) => chemins.map((c) => `https://photos.example${c}`);
const charger = (urls: string[], outbound: OutboundHttp) =>
  chargerPhotos(urls, { outbound, organisationId: 'org-a', decodages: createLimiteurParCle(2) });

describe('photo links refused without the network', () => {
  it('refuses private literals, loopback names, credentials and duplicates without resolving any name', async () => {
    const resolus: string[] = [];
    const outbound = createOutboundHttp({
      allowLoopback: false,
      resolve: async (nom) => {
        resolus.push(nom);
        return [{ address: '93.184.216.34', family: 4 }];
      },
    });
    const exfiltration = `https://${Buffer.from('solde=123456').toString('hex')}.exfil.example/a.jpg`;
    const e = await refus(
      verifierLiens(
        [
          exfiltration,
          'https://10.0.0.1/b.jpg',
          'https://localhost/c.jpg',
          'https://u:p@photos.example/d.jpg',
          exfiltration,
        ],
        outbound,
      ),
    );
    expect(e.refus).toEqual([
      { champ: 'photos[1]', message: 'La photo n° 2 n’est pas joignable (adresse publique https attendue).' },
      { champ: 'photos[2]', message: 'La photo n° 3 n’est pas joignable (adresse publique https attendue).' },
      { champ: 'photos[3]', message: expect.stringMatching(/^La photo n° 4 : .*identifiants/) },
      { champ: 'photos[4]', message: expect.stringMatching(/même lien que photos\[0\]/) },
    ]);
    expect(e.appels).toBe(0);
    expect(resolus).toEqual([]);
    await verifierLiens([exfiltration, 'https://photos.example/b.jpg'], outbound);
    expect(resolus).toEqual([]);
  });
});

describe('photos: every check that needs no decoding, for every link, before any decoding', () => {
  it('refuses on a link answering 404 among huge photos: only that link is named, nothing decoded', async () => {
    const outbound = serveur(Object.fromEntries([0, 1].map((i) => [`/enorme-${i}.png`, ENORME])));
    const avant = decodagesCommences();
    const e = await refus(charger(liens(['/enorme-0.png', '/enorme-1.png', '/absente.jpg']), outbound));
    expect(e.refus).toEqual([
      { champ: 'photos[2]', message: 'La photo n° 3 est inaccessible : le serveur a répondu HTTP 404.' },
    ]);
    expect(outbound.lus.sort()).toEqual(['/absente.jpg', '/enorme-0.png', '/enorme-1.png']);
    expect(decodagesCommences()).toBe(avant);
    // Three links fetched: three calls in the organisation's rate.
    expect(e.appels).toBe(3);
  });

  it('refuses a photo over 25 Mpx by its header, with its number and dimensions, before decoding any', async () => {
    const outbound = serveur({ '/salon.png': await petite(), '/enorme.png': ENORME });
    const avant = decodagesCommences();
    const e = await refus(charger(liens(['/salon.png', '/enorme.png']), outbound));
    expect(e.refus.map((r) => [r.champ, r.message.replace(/\s/gu, ' ')])).toEqual([
      [
        'photos[1]',
        'La photo n° 2 fait 6 300 × 6 300 pixels (39,7 Mpx) : 25 Mpx au plus ; réduisez-la avant de l’envoyer.',
      ],
    ]);
    expect(decodagesCommences()).toBe(avant);
    expect(e.appels).toBe(2);
  });

  it('decodes a photo of exactly 25 Mpx; a decoding that fails counts its pixels in the rate', async () => {
    const outbound = serveur({ '/salon.png': await petite(), '/limite.png': pngTronque(5000, 5000) });
    const avant = decodagesCommences();
    const e = await refus(charger(liens(['/salon.png', '/limite.png']), outbound));
    expect(e.refus).toEqual([
      { champ: 'photos[1]', message: 'La photo n° 2 est illisible (fichier corrompu ou tronqué).' },
    ]);
    expect(decodagesCommences() - avant).toBe(2);
    // Two links fetched, 25 + 0.06 million pixels decoded: 2 + 26 calls.
    expect(e.appels).toBe(28);
  });

  it('prepares readable photos as JPEG within 1024 px', async () => {
    const grande = await sharp({ create: { width: 3000, height: 2000, channels: 3, background: '#808080' } })
      .webp()
      .toBuffer();
    const photos = await charger(
      liens(['/a.webp', '/b.png']),
      serveur({ '/a.webp': grande, '/b.png': await petite() }),
    );
    const tailles = await Promise.all(
      photos.map(async (p) => {
        const m = await sharp(Buffer.from(p.base64, 'base64')).metadata();
        return [p.mime, m.format, m.width, m.height];
      }),
    );
    expect(tailles).toEqual([
      ['image/jpeg', 'jpeg', 1024, 683],
      ['image/jpeg', 'jpeg', 300, 200],
    ]);
  });

  it('words a private address, a name that does not resolve and a refused connection alike; the log tells', async () => {
    const outbound = createOutboundHttp({
      allowLoopback: false,
      resolve: async (nom) => {
        if (nom === 'interne.example') return [{ address: '10.20.30.40', family: 4 }];
        throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
      },
    });
    const e = await refus(charger(['https://interne.example/a.jpg', 'https://absent.example/b.jpg'], outbound));
    expect(e.refus.map((r) => r.message.replace(/n° \d/, 'n° N'))).toEqual([
      'La photo n° N n’est pas joignable (adresse publique https attendue).',
      'La photo n° N n’est pas joignable (adresse publique https attendue).',
    ]);
    expect(e.journal.join('\n')).toMatch(/photos\[0\] adresse_interdite : .*10\.20\.30\.40/);
    expect(e.journal.join('\n')).toMatch(/photos\[1\] dns : .*ENOTFOUND/);
  });
});

describe('decodings at once per organisation', () => {
  /** A piece of work that runs until `fin()` is called, and says when it started. */
  function travail(journal: string[], nom: string) {
    let fin!: () => void;
    const fini = new Promise<void>((resolve) => (fin = resolve));
    return {
      fin: () => fin(),
      run: async () => {
        journal.push(nom);
        await fini;
        return nom;
      },
    };
  }
  const tour = () => new Promise((resolve) => setImmediate(resolve));

  it('runs two at a time for one organisation, in order; another organisation does not wait', async () => {
    const limiter = createLimiteurParCle(2);
    const commences: string[] = [];
    const a = ['a1', 'a2', 'a3', 'a4'].map((n) => travail(commences, n));
    const resultats = a.map((t) => limiter('org-a', t.run));
    await tour();
    expect(commences).toEqual(['a1', 'a2']);

    const b = travail(commences, 'b1');
    const rb = limiter('org-b', b.run);
    await tour();
    expect(commences).toEqual(['a1', 'a2', 'b1']);

    a[1].fin();
    await tour();
    expect(commences).toEqual(['a1', 'a2', 'b1', 'a3']);
    // A newcomer while org-a is full waits behind those already waiting.
    const a5 = travail(commences, 'a5');
    const r5 = limiter('org-a', a5.run);
    a[0].fin();
    await tour();
    expect(commences).toEqual(['a1', 'a2', 'b1', 'a3', 'a4']);
    for (const t of [...a, a5, b]) t.fin();
    expect(await Promise.all([...resultats, r5, rb])).toEqual(['a1', 'a2', 'a3', 'a4', 'a5', 'b1']);
  });

  it('gives the place back when a piece of work fails, and drops a waiter whose request gave up', async () => {
    const limiter = createLimiteurParCle(1);
    const commences: string[] = [];
    const echec = limiter('org-a', async () => {
      commences.push('echec');
      await tour();
      throw new Error('illisible');
    });
    const abandon = new AbortController();
    const abandonne = limiter('org-a', async () => void commences.push('abandonne'), abandon.signal);
    const suivant = limiter('org-a', async () => void commences.push('suivant'));
    abandon.abort();
    await expect(abandonne).rejects.toThrow();
    await expect(echec).rejects.toThrow('illisible');
    await suivant;
    expect(commences).toEqual(['echec', 'suivant']);
  });
});
