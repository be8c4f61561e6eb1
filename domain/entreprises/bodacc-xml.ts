import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import path from 'node:path';
import { TextDecoder } from 'node:util';
import { createGunzip } from 'node:zlib';
import { ImportError } from '../import/source.ts';

/**
 * The DILA open-data bulletins of the BODACC in their source format, read as a stream: one XML bulletin, or the
 * `.taz` archive that carries it (a gzipped tar, despite its name; a plain tar is read too), never extracted to disk
 * nor held whole in memory. Each notice (`avis`, or `annonce` in the procedures' bulletins) is handed over as a small
 * tree of elements once its closing tag is read; the bulletin's family comes from its root element.
 *
 * Families (root element, publication letter):
 * - `RCS-A_IMMAT` (BODACC A: registrations, creations, sales of businesses): read from the real bulletin
 *   RCS-A_BXA20200072 (schema Bodacc_A_RCI_sor_v100.xsd).
 * - `RCS_B_REDIFF` (BODACC B: modifications, removals), `PCL_REDIFF` (BODACC A: insolvency proceedings, notices
 *   `annonces/annonce` whose persons stand in the notice itself, dates in words), `Bilan_XML_Rediff` (BODACC C:
 *   filings of accounts, the company's fields in the notice itself): no sample of theirs was at hand; they are read
 *   from the element names of the DILA schemas (`modificationsGenerales`, `radiationAuRCS` with `radiationPM` « O » or
 *   `radiationPP/dateCessationActivitePP`, `jugement` or `jugementAnnule`, `depot`, `siegeSocial`,
 *   `numeroIdentificationRCS`, `parutionAvisPrecedent`…), whatever the spelling of their root beyond its prefix
 *   (`RCS-B` or `RCS_B`). `Divers_XML_Rediff` (miscellaneous notices: a title and a free text) is refused, said so.
 *
 * The XML reader knows what these bulletins use: elements, text, CDATA, comments, the five predefined entities and
 * character references. A DOCTYPE is skipped and no other entity is expanded (nothing is fetched, nothing grows).
 */

export type FamilleBulletin = 'RCS-A' | 'RCS-B' | 'PCL' | 'BILAN';

/** A parsed element: its name, its child elements in order, its own text. */
export interface Noeud {
  nom: string;
  enfants: Noeud[];
  texte: string;
}

export interface Bulletin {
  /** The file, and inside an archive the entry. */
  source: string;
  famille: FamilleBulletin;
  racine: string;
  parution: string | null;
  dateParution: string | null;
}

export interface AvisXml {
  bulletin: Bulletin;
  /** 1-based rank of the notice in its bulletin. */
  rang: number;
  avis: Noeud | null;
  /** Why the notice could not be read (then `avis` is null). */
  erreur?: string;
}

/** A notice larger than this is not one: refused rather than held in memory. */
const AVIS_MAX_CARACTERES = 2_000_000;

export function familleDeRacine(racine: string): FamilleBulletin | null {
  // The schemas write RCS-A_IMMAT and RCS_B_REDIFF, the bulletins of some years RCS_A_IMMAT and RCS-B_REDIFF.
  const r = racine.toUpperCase();
  if (/^RCS[-_]A/.test(r)) return 'RCS-A';
  if (/^RCS[-_]B/.test(r)) return 'RCS-B';
  if (r.startsWith('PCL')) return 'PCL';
  if (r.startsWith('BILAN')) return 'BILAN';
  return null;
}

export const LETTRE_PUBLICATION: Record<FamilleBulletin, 'A' | 'B' | 'C'> = {
  'RCS-A': 'A',
  'RCS-B': 'B',
  PCL: 'A',
  BILAN: 'C',
};

const ENTITES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

function decoderEntites(t: string): string {
  if (!t.includes('&')) return t;
  return t.replace(/&(#x[0-9a-f]+|#\d+|\w+);/gi, (tout, e: string) => {
    if (e[0] === '#') {
      const code = e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
      return Number.isFinite(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : '';
    }
    return ENTITES[e] ?? tout;
  });
}

/**
 * A push parser of one bulletin: `ecrire` takes its text piece by piece and returns the notices closed in it. The
 * depth-1 element is the root, depth-2 elements its fields (`parution`, `dateParution`) and the list of notices,
 * depth-3 elements of that list the notices.
 */
export function lecteurBulletin(source: string) {
  let tampon = '';
  const pile: string[] = [];
  let bulletin: Bulletin | null = null;
  let champRacine: { nom: string; texte: string } | null = null;
  // The notice being read, and the open elements inside it.
  const courant: Noeud[] = [];
  let taille = 0;
  let rang = 0;
  let fini = false;

  const ouvrir = (nom: string): void => {
    const profondeur = pile.length + 1;
    if (profondeur === 1) {
      const famille = familleDeRacine(nom);
      if (/^divers/i.test(nom)) {
        throw new ImportError(
          `${source} : bulletin « ${nom} » (avis divers) : ses avis ne sont qu’un titre et un texte libre, où des personnes sont nommées ; il n’est pas importé.`,
        );
      }
      if (!famille) {
        throw new ImportError(
          `${source} : élément racine « ${nom} » inconnu ; attendus RCS-A_IMMAT, RCS_B_REDIFF, PCL_REDIFF ou Bilan_XML_Rediff (bulletins BODACC de la DILA).`,
        );
      }
      bulletin = { source, famille, racine: nom, parution: null, dateParution: null };
    } else if (profondeur === 2) {
      // Only the bulletin's own fields keep their text (the list's whitespace is not kept).
      champRacine = nom === 'parution' || nom === 'dateParution' ? { nom, texte: '' } : null;
    } else if (profondeur >= 3) {
      const n: Noeud = { nom, enfants: [], texte: '' };
      if (courant.length > 0) courant.at(-1)!.enfants.push(n);
      courant.push(n);
    }
    pile.push(nom);
  };

  const fermer = (nom: string, sortie: AvisXml[]): void => {
    const attendu = pile.pop();
    if (attendu !== nom) throw new Error(`balise fermante </${nom}> au lieu de </${attendu ?? '?'}>`);
    const profondeur = pile.length + 1;
    if (profondeur === 2 && champRacine && bulletin) {
      const v = champRacine.texte.trim();
      if (champRacine.nom === 'parution' && v) bulletin.parution = v;
      if (champRacine.nom === 'dateParution' && v) bulletin.dateParution = v;
      champRacine = null;
    } else if (profondeur >= 3) {
      const n = courant.pop()!;
      n.texte = n.texte.trim();
      if (profondeur === 3) {
        taille = 0;
        if (n.nom === 'avis' || n.nom === 'annonce') sortie.push({ bulletin: bulletin!, rang: ++rang, avis: n });
      }
    }
    if (profondeur === 1) fini = true;
  };

  const texte = (t: string): void => {
    if (courant.length > 0) {
      taille += t.length;
      if (taille > AVIS_MAX_CARACTERES) throw new Error(`avis de plus de ${AVIS_MAX_CARACTERES} caractères`);
      courant.at(-1)!.texte += decoderEntites(t);
    } else if (champRacine) champRacine.texte += decoderEntites(t);
  };

  return {
    get bulletin(): Bulletin | null {
      return bulletin;
    },
    get fini(): boolean {
      return fini;
    },
    ecrire(morceau: string): AvisXml[] {
      tampon += morceau;
      const sortie: AvisXml[] = [];
      let i = 0;
      for (;;) {
        const lt = tampon.indexOf('<', i);
        if (lt < 0) {
          // Text up to the end, but not a half entity: kept for the next piece.
          const amp = tampon.lastIndexOf('&');
          const fin = amp >= i && !tampon.slice(amp).includes(';') ? amp : tampon.length;
          texte(tampon.slice(i, fin));
          i = fin;
          break;
        }
        if (lt > i) texte(tampon.slice(i, lt));
        i = lt;
        if (tampon.startsWith('<!--', i)) {
          const fin = tampon.indexOf('-->', i + 4);
          if (fin < 0) break;
          i = fin + 3;
        } else if (tampon.startsWith('<![CDATA[', i)) {
          const fin = tampon.indexOf(']]>', i + 9);
          if (fin < 0) break;
          const brut = tampon.slice(i + 9, fin);
          if (courant.length > 0) courant.at(-1)!.texte += brut;
          else if (champRacine) champRacine.texte += brut;
          i = fin + 3;
        } else if (tampon.startsWith('<?', i)) {
          const fin = tampon.indexOf('?>', i + 2);
          if (fin < 0) break;
          i = fin + 2;
        } else if (tampon.startsWith('<!', i)) {
          // DOCTYPE, with or without an internal subset: skipped, its entities never expanded.
          const crochet = tampon.indexOf('[', i);
          const chevron = tampon.indexOf('>', i);
          if (chevron < 0) break;
          if (crochet >= 0 && crochet < chevron) {
            const fin = tampon.indexOf(']>', crochet);
            if (fin < 0) break;
            i = fin + 2;
          } else i = chevron + 1;
        } else {
          const fin = tampon.indexOf('>', i);
          if (fin < 0) break;
          const balise = tampon.slice(i + 1, fin);
          i = fin + 1;
          if (balise.startsWith('/')) fermer(balise.slice(1).trim(), sortie);
          else {
            const auto = balise.endsWith('/');
            const nom = /^[^\s/>]+/.exec(balise)?.[0];
            if (!nom) throw new Error(`balise illisible <${balise.slice(0, 40)}>`);
            ouvrir(nom);
            if (auto) fermer(nom, sortie);
          }
        }
      }
      tampon = tampon.slice(i);
      if (tampon.length > AVIS_MAX_CARACTERES) throw new Error('balise ou texte sans fin');
      return sortie;
    },
    terminer(): void {
      if (!fini) throw new Error(bulletin ? `bulletin tronqué (</${pile[0] ?? '?'}> manquant)` : 'aucun élément XML');
    },
  };
}

/** The encoding an XML declaration names (UTF-8 without one). */
function encodageDe(debut: Uint8Array): string {
  const decl = /^\s*<\?xml[^>]*encoding\s*=\s*["']([\w.-]+)["']/i.exec(
    Buffer.from(debut.subarray(0, 200)).toString('latin1'),
  );
  const e = decl?.[1]?.toLowerCase() ?? 'utf-8';
  return e === 'iso-8859-15' || e === 'latin9' ? 'iso-8859-15' : e;
}

/** Text of an XML byte stream, decoded in the encoding its declaration names. */
async function* texteXml(octets: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  let decodeur: TextDecoder | null = null;
  for await (const bloc of octets) {
    if (!decodeur) {
      try {
        decodeur = new TextDecoder(encodageDe(bloc), { fatal: false });
      } catch {
        throw new ImportError(`encodage XML non pris en charge : ${encodageDe(bloc)}`);
      }
    }
    yield decodeur.decode(bloc, { stream: true });
  }
  if (decodeur) yield decodeur.decode();
}

/**
 * The entries of a tar stream, one at a time, each as a stream of its bytes (which must be read, or skipped, before
 * the next entry comes): the 512-byte ustar headers, GNU long names, pax headers skipped.
 */
async function* entreesTar(
  octets: AsyncIterable<Uint8Array>,
): AsyncGenerator<{ nom: string; taille: number; octets: AsyncGenerator<Uint8Array> }> {
  const iterateur = octets[Symbol.asyncIterator]();
  let reste: Buffer = Buffer.alloc(0);
  let epuise = false;
  const lire = async (n: number): Promise<Buffer | null> => {
    while (reste.length < n && !epuise) {
      const r = await iterateur.next();
      if (r.done) epuise = true;
      else reste = Buffer.concat([reste, Buffer.from(r.value)]);
    }
    if (reste.length < n) return null;
    const out = reste.subarray(0, n);
    reste = reste.subarray(n);
    return out;
  };
  let nomLong: string | null = null;
  for (;;) {
    const entete = await lire(512);
    if (!entete || entete.every((b) => b === 0)) return;
    const champ = (de: number, long: number) =>
      entete
        .subarray(de, de + long)
        .toString('utf8')
        .replace(/\0.*$/s, '');
    const taille = parseInt(champ(124, 12).trim() || '0', 8);
    if (!Number.isFinite(taille) || taille < 0) throw new ImportError('archive tar illisible (taille d’une entrée)');
    const type = String.fromCharCode(entete[156] ?? 48);
    const prefixe = champ(257, 6).startsWith('ustar') ? champ(345, 155) : '';
    const nom = nomLong ?? (prefixe ? `${prefixe}/${champ(0, 100)}` : champ(0, 100));
    nomLong = null;
    const complet = Math.ceil(taille / 512) * 512;
    let lus = 0;
    // The entry's bytes, then its padding to 512, read from the shared stream.
    async function* corps(): AsyncGenerator<Uint8Array> {
      while (lus < taille) {
        const n = Math.min(65_536, taille - lus);
        const b = await lire(n);
        if (!b) throw new ImportError(`archive tar tronquée dans ${nom}`);
        lus += n;
        yield b;
      }
    }
    if (type === 'L') {
      const chunks: Uint8Array[] = [];
      for await (const c of corps()) chunks.push(c);
      nomLong = Buffer.concat(chunks).toString('utf8').replace(/\0.*$/s, '');
    } else if (type === '0' || type === '\0') {
      const flux = corps();
      yield { nom, taille, octets: flux };
      // Whatever the reader left of the entry is skipped.
      for await (const _ of flux) void _;
    } else {
      for await (const _ of corps()) void _;
    }
    if (complet > taille && !(await lire(complet - taille))) return;
  }
}

async function* fluxFichier(fichier: string): AsyncGenerator<Uint8Array> {
  for await (const b of createReadStream(fichier, { highWaterMark: 65_536 })) yield b as Buffer;
}

async function* degzip(octets: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  const gunzip = createGunzip();
  const ecrire = (async () => {
    try {
      for await (const b of octets) if (!gunzip.write(b)) await new Promise((r) => gunzip.once('drain', r));
      gunzip.end();
    } catch (error) {
      gunzip.destroy(error as Error);
    }
  })();
  for await (const b of gunzip) yield b as Buffer;
  await ecrire;
}

/** The first bytes of a stream, and the whole stream again (those bytes first). */
async function entamer(
  octets: AsyncIterable<Uint8Array>,
  n: number,
): Promise<{ debut: Buffer; flux: AsyncGenerator<Uint8Array> }> {
  const it = octets[Symbol.asyncIterator]();
  const lus: Buffer[] = [];
  let total = 0;
  let fin = false;
  while (total < n) {
    const r = await it.next();
    if (r.done) {
      fin = true;
      break;
    }
    lus.push(Buffer.from(r.value));
    total += r.value.length;
  }
  const debut = Buffer.concat(lus);
  async function* flux(): AsyncGenerator<Uint8Array> {
    if (debut.length > 0) yield debut;
    if (fin) return;
    for (;;) {
      const r = await it.next();
      if (r.done) return;
      yield r.value;
    }
  }
  return { debut, flux: flux() };
}

export type FormeFichier = 'xml' | 'archive' | 'csv' | 'inconnue';

/** What a file is, from its first bytes (and its name for a gzipped CSV). */
export async function formeDe(fichier: string): Promise<FormeFichier> {
  const f = await open(fichier, 'r');
  try {
    const b = Buffer.alloc(512);
    const { bytesRead } = await f.read(b, 0, 512, 0);
    const d = b.subarray(0, bytesRead);
    if (d[0] === 0x1f && d[1] === 0x8b) return /\.csv\.gz$/i.test(fichier) ? 'csv' : 'archive';
    if (d[0] === 0x1f && d[1] === 0x9d) return 'archive';
    if (d.length >= 262 && d.subarray(257, 262).toString('latin1') === 'ustar') return 'archive';
    const texte = d
      .toString('latin1')
      .replace(/^\uFEFF|^\xEF\xBB\xBF/, '')
      .trimStart();
    if (texte.startsWith('<')) return 'xml';
    return /\.csv(\.gz)?$/i.test(fichier) || texte.includes(';') ? 'csv' : 'inconnue';
  } finally {
    await f.close();
  }
}

/**
 * The notices of a bulletin file (XML) or archive (`.taz`, `.tar`, `.tar.gz`: every XML entry in it), in order. A
 * bulletin that cannot be read to its end yields, after the notices read, one entry whose `erreur` says why.
 */
export async function* avisDuFichier(fichier: string): AsyncGenerator<AvisXml> {
  const nom = path.basename(fichier);
  const { debut, flux } = await entamer(fluxFichier(fichier), 512);
  if (debut[0] === 0x1f && debut[1] === 0x9d) {
    throw new ImportError(
      `${nom} : archive compressée au format « compress » (.Z) : décompressez-la d’abord (uncompress, ou gzip -d), puis importez le .tar ou son XML.`,
    );
  }
  let octets: AsyncIterable<Uint8Array> = flux;
  let entame = debut;
  if (debut[0] === 0x1f && debut[1] === 0x8b) {
    const e = await entamer(degzip(flux), 512);
    octets = e.flux;
    entame = e.debut;
  }
  if (entame.length >= 262 && entame.subarray(257, 262).toString('latin1') === 'ustar') {
    let xml = 0;
    for await (const entree of entreesTar(octets)) {
      if (!/\.xml$/i.test(entree.nom)) continue;
      xml++;
      yield* avisDuXml(`${nom}:${entree.nom}`, entree.octets);
    }
    if (xml === 0) throw new ImportError(`${nom} : l’archive ne contient aucun fichier XML.`);
    return;
  }
  yield* avisDuXml(nom, octets);
}

async function* avisDuXml(source: string, octets: AsyncIterable<Uint8Array>): AsyncGenerator<AvisXml> {
  const lecteur = lecteurBulletin(source);
  let rangs = 0;
  try {
    for await (const morceau of texteXml(octets)) {
      for (const a of lecteur.ecrire(morceau)) {
        rangs = a.rang;
        yield a;
      }
    }
    lecteur.terminer();
  } catch (error) {
    if (error instanceof ImportError) throw error;
    const b = lecteur.bulletin;
    if (!b) throw new ImportError(`${source} : XML illisible (${(error as Error).message}).`);
    yield { bulletin: b, rang: rangs + 1, avis: null, erreur: `XML illisible : ${(error as Error).message}` };
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Reading a notice's tree.
// ---------------------------------------------------------------------------------------------------------------------

export const enfant = (n: Noeud | undefined, nom: string): Noeud | undefined => n?.enfants.find((e) => e.nom === nom);
export const enfantsNommes = (n: Noeud | undefined, nom: string): Noeud[] =>
  n?.enfants.filter((e) => e.nom === nom) ?? [];
/** The text at a path of child names, or null. */
export function valeur(n: Noeud | undefined, ...chemin: string[]): string | null {
  let c = n;
  for (const nom of chemin) c = enfant(c, nom);
  const t = c?.texte.replace(/\s+/g, ' ').trim();
  return t ? t : null;
}
/** Every descendant of that name, depth first. */
export function descendants(n: Noeud, nom: string): Noeud[] {
  return n.enfants.flatMap((e) => [...(e.nom === nom ? [e] : []), ...descendants(e, nom)]);
}

// ---------------------------------------------------------------------------------------------------------------------
// A notice as the fields of the DILA export: the one reading of notices (import-bodacc.ts) applies to both formats.
// ---------------------------------------------------------------------------------------------------------------------

const LIBELLES: Record<string, string> = {
  creation: 'Créations',
  immatriculation: 'Immatriculations',
  vente: 'Ventes et cessions',
  modification: 'Modifications diverses',
  radiation: 'Radiations',
  collective: 'Procédures collectives',
  conciliation: 'Procédures de conciliation',
  retablissement_professionnel: 'Procédures de rétablissement professionnel',
  dpc: 'Dépôts des comptes',
};

const MOIS_FR: Record<string, string> = {
  janvier: '01',
  fevrier: '02',
  mars: '03',
  avril: '04',
  mai: '05',
  juin: '06',
  juillet: '07',
  aout: '08',
  septembre: '09',
  octobre: '10',
  novembre: '11',
  decembre: '12',
};

/** A date as the procedures' bulletins write it (« 1er mars 2020 », « 12 février 2020 »), else as it is. */
function dateEnClair(t: string | null): string | null {
  if (!t) return null;
  const m = /^(\d{1,2})(?:er)?\s+([a-zéûè]+)\s+(\d{4})$/i.exec(
    t.normalize('NFD').replace(/\p{M}/gu, '').trim().toLowerCase(),
  );
  const mois = m ? MOIS_FR[m[2]!] : undefined;
  return m && mois ? `${m[3]}-${mois}-${m[1]!.padStart(2, '0')}` : t;
}

/** The bulletin's date as its years write it: AAAA-MM-JJ, JJ/MM/AAAA (read by the importer), AAAA/MM/JJ. */
function dateParution(t: string | null): string | null {
  const m = t ? /^(\d{4})\/(\d{2})\/(\d{2})$/.exec(t) : null;
  return m ? `${m[1]}-${m[2]}-${m[3]}` : t;
}

/** An address element (`adresse/france`, or `adresse` itself) as the export's address object. */
function adresseDe(n: Noeud | undefined): Record<string, string | null> | null {
  const a = enfant(n, 'france') ?? n;
  if (!a || a.enfants.length === 0) return null;
  return {
    numeroVoie: valeur(a, 'numeroVoie'),
    typeVoie: valeur(a, 'typeVoie'),
    nomVoie: valeur(a, 'nomVoie'),
    codePostal: valeur(a, 'codePostal'),
    ville: valeur(a, 'ville'),
    localite: valeur(a, 'localite'),
  };
}

const immatriculation = (n: Noeud | undefined): string | null =>
  valeur(n, 'numeroImmatriculation', 'numeroIdentification') ??
  valeur(n, 'numeroImmatriculation', 'numeroIdentificationRCS') ??
  valeur(n, 'numeroIdentificationRCS');

/**
 * The persons of a notice. A legal entity keeps what the export gives of it (name, form, registration, capital,
 * seat); a natural person only their kind and registration number: their names never leave this function.
 */
function personnesDe(avis: Noeud): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  const siege = (...n: Array<Noeud | undefined>) =>
    n
      .flatMap((x) => [enfant(x, 'adresse'), enfant(x, 'siegeSocial')])
      .map(adresseDe)
      .find((a) => a !== null) ?? null;
  // RCS-A and RCS-B: personnes/personne/(personneMorale|personnePhysique), registration, capital and address inside
  // the person or beside it.
  for (const p of enfantsNommes(enfant(avis, 'personnes'), 'personne')) {
    const morale = enfant(p, 'personneMorale');
    if (morale) {
      out.push({
        typePersonne: 'pm',
        denomination: valeur(morale, 'denomination'),
        formeJuridique: valeur(morale, 'formeJuridique'),
        numeroImmatriculation: { numeroIdentification: immatriculation(morale) ?? immatriculation(p) },
        capital: enfant(p, 'capital')
          ? { montantCapital: valeur(p, 'capital', 'montantCapital'), devise: valeur(p, 'capital', 'devise') }
          : undefined,
        adresseSiegeSocial: siege(p, morale),
      });
    } else {
      out.push({
        typePersonne: 'pp',
        numeroImmatriculation: {
          numeroIdentification: immatriculation(enfant(p, 'personnePhysique')) ?? immatriculation(p),
        },
      });
    }
  }
  // PCL: personneMorale / personnePhysique directly in the notice, registrations and address beside them.
  for (const morale of enfantsNommes(avis, 'personneMorale')) {
    out.push({
      typePersonne: 'pm',
      denomination: valeur(morale, 'denomination'),
      formeJuridique: valeur(morale, 'formeJuridique'),
      numeroImmatriculation: { numeroIdentification: immatriculation(morale) ?? immatriculation(avis) },
      adresseSiegeSocial: siege(avis),
    });
  }
  for (const physique of enfantsNommes(avis, 'personnePhysique')) {
    out.push({
      typePersonne: 'pp',
      numeroImmatriculation: { numeroIdentification: immatriculation(physique) ?? immatriculation(avis) },
    });
  }
  // BILAN: the company's own fields are the notice's.
  if (out.length === 0 && valeur(avis, 'denomination')) {
    out.push({
      typePersonne: 'pm',
      denomination: valeur(avis, 'denomination'),
      formeJuridique: valeur(avis, 'formeJuridique'),
      numeroImmatriculation: { numeroIdentification: immatriculation(avis) },
      adresseSiegeSocial: siege(avis),
    });
  }
  return out;
}

function familleDe(bulletin: Bulletin, avis: Noeud): string {
  switch (bulletin.famille) {
    case 'RCS-A': {
      const acte = enfant(avis, 'acte');
      if (enfant(acte, 'vente')) return 'vente';
      if (enfant(acte, 'immatriculation')) return 'immatriculation';
      return 'creation';
    }
    case 'RCS-B':
      return enfant(avis, 'radiationAuRCS') ? 'radiation' : 'modification';
    case 'PCL': {
      const f = (valeur(avis, 'jugement', 'famille') ?? '').normalize('NFD').replace(/\p{M}/gu, '').toLowerCase();
      if (f.includes('conciliation')) return 'conciliation';
      if (f.includes('retablissement')) return 'retablissement_professionnel';
      return 'collective';
    }
    case 'BILAN':
      return 'dpc';
  }
}

/**
 * The fields of the export `annonces-commerciales` for a notice of a bulletin, or why it cannot be read. Free texts
 * that name people (administration, activity, opposition, complementJugement) are left out here already; the
 * subjects of a modification are read from its text by the importer, which never keeps it.
 */
export function champsAvis(a: AvisXml): Record<string, string | null> | string {
  const { bulletin, avis } = a;
  if (!avis) return a.erreur ?? 'avis illisible';
  const numero = valeur(avis, 'numeroAnnonce');
  if (!numero || !/^\d{1,9}$/.test(numero))
    return `numeroAnnonce absent ou invalide (${numero?.slice(0, 20) ?? 'absent'})`;
  if (!bulletin.parution || !/^\d{8}$/.test(bulletin.parution)) {
    return `parution du bulletin absente ou invalide (${bulletin.parution?.slice(0, 20) ?? 'absente'})`;
  }
  const lettre = LETTRE_PUBLICATION[bulletin.famille];
  const famille = familleDe(bulletin, avis);
  const type = enfant(avis, 'typeAnnonce')?.enfants[0]?.nom ?? 'annonce';
  const personnes = personnesDe(avis);
  const etablissements = enfantsNommes(avis, 'etablissement').map((e) => ({
    adresse: adresseDe(enfant(e, 'adresse')),
  }));
  const acte = enfant(avis, 'acte');
  const creation = enfant(acte, 'creation') ?? enfant(acte, 'immatriculation');
  const vente = enfant(acte, 'vente');
  const modif = enfant(avis, 'modificationsGenerales');
  const radiation = enfant(avis, 'radiationAuRCS');
  const jugement = enfant(avis, 'jugement') ?? enfant(avis, 'jugementAnnule');
  const depot = enfant(avis, 'depot');
  const precedent = enfant(avis, 'parutionAvisPrecedent');
  const lieu =
    (personnes.find((p) => p.adresseSiegeSocial)?.adresseSiegeSocial as Record<string, string | null> | undefined) ??
    etablissements.find((e) => e.adresse)?.adresse ??
    adresseDe(enfant(avis, 'adresse'));
  // The registrations the notice carries: its subject's, and the former owner's of a business sold.
  const registres = [
    ...personnes.map((p) => (p.numeroImmatriculation as { numeroIdentification: string | null }).numeroIdentification),
    immatriculation(enfant(avis, 'precedentProprietairePM')),
    // PCL: one registration per person of the notice, in order.
    ...enfantsNommes(avis, 'numeroImmatriculation').map(
      (n) => valeur(n, 'numeroIdentificationRCS') ?? valeur(n, 'numeroIdentification'),
    ),
  ].filter((r): r is string => !!r);
  const json = (o: unknown) => (o === null || o === undefined ? null : JSON.stringify(o));
  return {
    id: `${lettre}${bulletin.parution}${Number(numero)}`,
    publicationavis: lettre,
    parution: bulletin.parution,
    dateparution: dateParution(bulletin.dateParution),
    numeroannonce: String(Number(numero)),
    typeavis: type === 'creation' ? 'annonce' : type,
    familleavis: famille,
    familleavis_lib: LIBELLES[famille] ?? null,
    numerodepartement: valeur(avis, 'numeroDepartement'),
    tribunal: valeur(avis, 'tribunal'),
    commercant: null,
    ville: lieu?.ville ?? lieu?.localite ?? null,
    cp: lieu?.codePostal ?? null,
    registre: registres.length > 0 ? registres.join(',') : null,
    listepersonnes: personnes.length > 0 ? json({ personne: personnes }) : null,
    listeetablissements: etablissements.length > 0 ? json({ etablissement: etablissements }) : null,
    acte: acte
      ? json({
          dateImmatriculation: descendants(acte, 'dateImmatriculation')[0]?.texte ?? null,
          creation: creation
            ? {
                categorieCreation:
                  valeur(creation, 'categorieCreation') ?? valeur(creation, 'categorieImmatriculation'),
                dateCommencementActivite: valeur(creation, 'dateCommencementActivite'),
              }
            : undefined,
          vente: vente ? { categorieVente: valeur(vente, 'categorieVente') } : undefined,
        })
      : null,
    modificationsgenerales: modif
      ? json({
          descriptif: valeur(modif, 'descriptif'),
          dateEffet: valeur(modif, 'dateEffet'),
          dateCommencementActivite: valeur(modif, 'dateCommencementActivite'),
        })
      : null,
    radiationaurcs: radiation
      ? json({
          // radiationPM is a flag (« O »), radiationPP holds the date the activity ceased: neither is a label.
          radiationPM: enfant(radiation, 'radiationPM') ? 'Radiation d’une personne morale' : null,
          radiationPP: enfant(radiation, 'radiationPP') ? 'Radiation d’une personne physique' : null,
          dateCessationActivitePM: valeur(radiation, 'dateCessationActivitePM'),
          dateCessationActivitePP:
            valeur(radiation, 'radiationPP', 'dateCessationActivitePP') ?? valeur(radiation, 'dateCessationActivitePP'),
        })
      : null,
    jugement: jugement
      ? json({
          famille: valeur(jugement, 'famille'),
          nature: valeur(jugement, 'nature'),
          date: dateEnClair(valeur(jugement, 'date')),
        })
      : null,
    depot: depot ? json({ typeDepot: valeur(depot, 'typeDepot'), dateCloture: valeur(depot, 'dateCloture') }) : null,
    parutionavisprecedent: precedent
      ? json({
          nomPublication: valeur(precedent, 'nomPublication'),
          numeroParution: valeur(precedent, 'numeroParution'),
          numeroAnnonce: valeur(precedent, 'numeroAnnonce'),
        })
      : null,
  };
}
