import { createHash } from 'node:crypto';
import type { Db } from '../../db/client.ts';
import type { Model } from '../../lib/model.ts';
import type { OutboundHttp } from '../../lib/outbound-http.ts';
import { LECTURE_VERSION } from '../urbanisme/lectures.ts';
import { findZoning, type ZoningResult } from '../urbanisme/zonage.ts';
import { servedSource } from '../qualite.ts';
import {
  readZoneRules,
  selectRules,
  THEMES,
  type NatureProjet,
  type ReadZoneRulesResult,
  type Theme,
} from './lecture.ts';
import { extractPages, isScanned } from './pdf-text.ts';

/** Rules PDFs are fetched again after this long (a commune may publish a modified rules document). */
const PDF_REFRESH_HOURS = 24;
export const PDF_MAX_BYTES = 60 * 2 ** 20;

/** A task failure with a stable code (the task's `erreur.code`) and whether retrying can mend it. */
export class PluError extends Error {
  readonly code: string;
  readonly retryable: boolean;
  constructor(code: string, message: string, retryable = false) {
    super(message);
    this.name = 'PluError';
    this.code = code;
    this.retryable = retryable;
  }
}

export interface PluInput {
  lat?: number;
  lon?: number;
  /** The BAN address the point comes from, when the client gave an address rather than a point. */
  adresse?: { libelle: string; insee: string; precision: LieuPlu['adresse']['precision'] };
  themes?: Theme[];
  nature_projet?: NatureProjet;
}

export interface LieuPlu {
  adresse: {
    libelle: string;
    insee: string | null;
    precision: 'numero' | 'voie' | 'lieu_dit' | 'point' | 'autre';
    lat: number;
    lon: number;
  };
  zone: ZoningResult['zone'] | null;
  autresZones: string[];
  /** The rules PDF, without its `#page=` fragment (the same PDF serves every zone). */
  reglementUrl: string | null;
}

export interface DocumentLu {
  id: number;
  sha256: string;
  nbPages: number;
  scanne: boolean;
}

export interface LectureFaite {
  documentSha256: string;
  zone: string;
  depuisCache: boolean;
}

/** Step 1: the zone of the point and its rules document. */
export async function locate(db: Db, input: PluInput): Promise<LieuPlu> {
  if (input.lat === undefined || input.lon === undefined) {
    throw new PluError('entree_invalide', 'Un point (lat, lon) est requis.');
  }
  const found = await findZoning(db, { lat: input.lat, lon: input.lon, dataset: 'live' });
  return {
    adresse: {
      libelle: input.adresse?.libelle ?? `Point ${input.lat.toFixed(6)}, ${input.lon.toFixed(6)}`,
      insee: input.adresse?.insee ?? found?.insee ?? null,
      precision: input.adresse?.precision ?? 'point',
      lat: input.lat,
      lon: input.lon,
    },
    zone: found?.zone ?? null,
    autresZones: found?.autres_zones ?? [],
    reglementUrl: found?.reglement_url ? found.reglement_url.split('#')[0] : null,
  };
}

/** Step 2: the rules PDF, fetched through the outbound client and read page by page; kept for the quotation check. */
export async function loadRules(deps: { db: Db; outbound: OutboundHttp }, url: string): Promise<DocumentLu> {
  // A name of the special-use domain .invalid (RFC 6761) never resolves: a document held under one (the
  // demonstration's, domain/sandbox/parts/reglements.ts) is kept as it is, never fetched again.
  const jamaisRecupere = URL.canParse(url) && new URL(url).hostname.endsWith('.invalid');
  const { rows } = await deps.db.query(
    `SELECT id, sha256, nb_pages, scanne FROM reglements_pdf
      WHERE url = $1 AND (recupere_le > now() - make_interval(hours => $2) OR $3)`,
    [url, PDF_REFRESH_HOURS, jamaisRecupere],
  );
  if (rows[0])
    return { id: Number(rows[0].id), sha256: rows[0].sha256, nbPages: rows[0].nb_pages, scanne: rows[0].scanne };
  let response;
  try {
    response = await deps.outbound.request({ method: 'GET', url, maxBytes: PDF_MAX_BYTES, timeoutMs: 60_000 });
  } catch (error) {
    const reason = (error as { reason?: string }).reason;
    // Network faults may pass; a forbidden address, a bad URL or an oversized file will not.
    const retryable = reason === 'dns' || reason === 'connexion' || reason === 'delai';
    throw new PluError('document_inaccessible', `Règlement inaccessible : ${(error as Error).message}`, retryable);
  }
  if (response.status >= 500) throw new PluError('document_inaccessible', `Règlement : HTTP ${response.status}`, true);
  if (response.status !== 200) throw new PluError('document_inaccessible', `Règlement : HTTP ${response.status}`);
  if (response.sniffedType !== 'pdf')
    throw new PluError('document_inaccessible', 'Le règlement publié n’est pas un PDF.');
  const sha256 = createHash('sha256').update(response.body).digest('hex');
  const { pages, pageCount } = await extractPages(new Uint8Array(response.body));
  const scanne = isScanned(pages);
  const saved = await deps.db.query(
    `INSERT INTO reglements_pdf (url, sha256, taille_octets, pages, nb_pages, scanne) VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (url) DO UPDATE SET sha256 = EXCLUDED.sha256, taille_octets = EXCLUDED.taille_octets,
       pages = EXCLUDED.pages, nb_pages = EXCLUDED.nb_pages, scanne = EXCLUDED.scanne, recupere_le = now()
     RETURNING id`,
    [url, sha256, response.body.length, JSON.stringify(pages), pageCount, scanne],
  );
  return { id: Number(saved.rows[0].id), sha256, nbPages: pageCount, scanne };
}

/**
 * Step 3: the reading of a zone by the model, every quotation checked against the page text. A zone already read
 * in the same document (same content) comes from the readings cache without any model call.
 */
export async function readZone(
  deps: { db: Db; model: Model | null; signal?: AbortSignal },
  document: DocumentLu,
  zone: string,
): Promise<LectureFaite> {
  const cached = await deps.db.query(
    'SELECT 1 FROM lectures_plu WHERE document_sha256 = $1 AND zone = $2 AND version = $3',
    [document.sha256, zone, LECTURE_VERSION],
  );
  if (cached.rowCount) return { documentSha256: document.sha256, zone, depuisCache: true };
  if (!deps.model) {
    throw new PluError('modele_non_configure', 'Aucun modèle configuré (OPENAI_MODEL) : la lecture est impossible.');
  }
  const { rows } = await deps.db.query('SELECT pages, url FROM reglements_pdf WHERE id = $1', [document.id]);
  const result = await readZoneRules({
    pages: rows[0].pages,
    zoneCode: zone,
    themes: [...THEMES],
    model: deps.model,
    signal: deps.signal,
    documentUrl: rows[0].url,
  });
  await deps.db.query(
    `INSERT INTO lectures_plu (document_sha256, zone, version, contenu, modele) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (document_sha256, zone, version) DO NOTHING`,
    [document.sha256, zone, LECTURE_VERSION, JSON.stringify(result), deps.model.name],
  );
  return { documentSha256: document.sha256, zone, depuisCache: false };
}

/**
 * Step 4: the task's result, and whether it is debited (nothing is debited when there was nothing to read). The
 * zoning read is the live one: labelled as the demonstration while the live data is the generated territory.
 */
export async function buildResult(...args: Parameters<typeof resultOf>) {
  const { debit, resultat } = await resultOf(...args);
  return { debit, resultat: await servedSource(args[0], 'live', resultat) };
}

async function resultOf(
  db: Db,
  input: PluInput,
  lieu: LieuPlu,
  document: DocumentLu | null,
  lecture: LectureFaite | null,
) {
  const themes = input.themes?.length ? THEMES.filter((t) => input.themes!.includes(t)) : [...THEMES];
  const filtre = { themes, nature_projet: input.nature_projet ?? null };
  const base = {
    adresse: lieu.adresse,
    zone: lieu.zone ?? { code: null, libelle: null, type_document: null, document: null, approuve_le: null },
    autres_zones: lieu.autresZones,
    reglement_url: lieu.reglementUrl,
    filtre,
  };
  const none = { regles: [], definitions: [], renvois: [], citations_ecartees: 0, lecture: null };
  const limites = ['Seul un certificat d’urbanisme engage la commune : ces règles sont une lecture indicative.'];
  const qualite = (n: number | null, drapeaux: string[] = []) => ({
    n,
    provenance: n === null ? null : ('mesure' as const),
    incertitude: null,
    drapeaux,
    methode: 'Lecture du règlement écrit par un modèle de langage ; chaque citation vérifiée dans le texte du PDF.',
    donnees_du: lieu.zone?.approuve_le ?? null,
    source: lieu.reglementUrl ?? 'Géoportail de l’Urbanisme',
  });
  if (!lieu.zone) {
    return {
      debit: false,
      resultat: {
        ...base,
        statut: 'zone_absente' as const,
        message:
          'Aucune zone de PLU ou PLUi publiée ne couvre ce point (commune au RNU, carte communale ou document non publié).',
        ...none,
        non_trouve: themes.map((theme) => ({ theme, raison: 'aucune zone au point' })),
        limites,
        qualite: qualite(null),
      },
    };
  }
  if (!lieu.reglementUrl || !document) {
    const message = 'Aucun règlement écrit n’est publié pour cette zone : rien à lire.';
    return {
      debit: false,
      resultat: {
        ...base,
        statut: 'non_publie' as const,
        message,
        ...none,
        non_trouve: themes.map((theme) => ({ theme, raison: message })),
        limites: [...limites, 'Sans règlement publié, consultez-le en mairie.'],
        qualite: qualite(null),
      },
    };
  }
  if (document.scanne || !lecture) {
    const message = 'Le règlement est un PDF sans texte (numérisé) : aucune règle n’est affirmée.';
    return {
      debit: false,
      resultat: {
        ...base,
        statut: 'scanne' as const,
        message,
        ...none,
        lecture: { modele: null, extrait_le: null, pages_pdf: document.nbPages, depuis_cache: false },
        non_trouve: themes.map((theme) => ({ theme, raison: message })),
        limites: [...limites, 'Un règlement numérisé n’est pas lu : consultez-le en mairie ou sur le Géoportail.'],
        qualite: qualite(null),
      },
    };
  }
  const { rows } = await db.query(
    'SELECT contenu, modele, extrait_le FROM lectures_plu WHERE document_sha256 = $1 AND zone = $2 AND version = $3',
    [lecture.documentSha256, lecture.zone, LECTURE_VERSION],
  );
  const lu = rows[0].contenu as ReadZoneRulesResult;
  const selected = selectRules(lu, themes, filtre.nature_projet);
  return {
    debit: true,
    resultat: {
      ...base,
      statut: 'lu' as const,
      message: null,
      regles: selected.regles,
      definitions: lu.definitions,
      renvois: lu.renvois,
      non_trouve: selected.non_trouve,
      citations_ecartees: lu.citations_ecartees,
      lecture: {
        modele: rows[0].modele,
        extrait_le: new Date(rows[0].extrait_le).toISOString(),
        pages_pdf: document.nbPages,
        depuis_cache: lecture.depuisCache,
      },
      limites,
      qualite: qualite(selected.regles.length, selected.regles.length < 3 ? ['peu_d_observations'] : []),
    },
  };
}
