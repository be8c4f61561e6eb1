import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import type { PoolClient } from 'pg';
import type { Db, Queryable } from '../../db/client.ts';
import { transaction } from '../../db/client.ts';
import { communeByCode } from '../communes.ts';
import { communesDuCodePostal } from '../entreprises/rattachement.ts';
import {
  ImportError,
  importSource,
  nouveauRapport,
  type Dataset,
  type DatasetImportOptions,
  type ImportReport,
  type Rejeter,
} from '../import/source.ts';
import { analyserAnnonces } from './analyse.ts';
import type { ColonnesAnnonce } from './fiche.ts';
import {
  adressesValidees,
  candidatsBiens,
  derniereValidee,
  memeBien,
  nouveauBienUid,
  numerosProches,
  pistesBan,
  rattacherBan,
  type AdresseValidee,
  type Candidat,
  type PointBan,
  type RechercheCandidats,
  type Signature,
} from './biens.ts';
import {
  jourParis,
  lireReleve,
  plier,
  type Champs,
  type Dpe,
  type Precision,
  type Releve,
  type Statut,
  type TypeBien,
  type TypeVendeur,
} from './format.ts';
import { ecrireEvenements, verrouillerJournal, type Genre, type NouvelEvenement } from './journal.ts';
import {
  annonceurApres,
  cleVendeur,
  rechercheSirene,
  sirensDeSirene,
  texteGarde,
  type Annonceur,
  type RechercheSirene,
} from './vendeur.ts';

/**
 * Importer of listings: portal snapshots in JSON Lines (the format, field by field, is in format.ts), plain or
 * gzipped (`.jsonl`, `.jsonl.gz`, `.ndjson`), one file, several, or folders of them, read in name order and streamed
 * a line at a time. `npm run import -- annonces <fichier.jsonl[.gz]|dossier…>`.
 *
 * What a snapshot does. Each line is the state of one listing (a portal and its identifier) at one moment (`vu_le`).
 * A snapshot no later than the last one applied to its listing changes nothing: importing a file again, or an older
 * file after a newer one, writes nothing and no event. Otherwise the snapshot updates the listing: every field it gives
 * replaces the known value, a field it does not give keeps it (a withdrawal may be just the portal, the identifier, the
 * time and `statut`). A listing seen for the first time must give its type; it gets a service identifier (random, so
 * that it tells nothing of the portal's) and a property (`bien_uid`, biens.ts). The seller is kept under the privacy
 * rule of vendeur.ts: a non-professional's identity is never stored and their texts are masked before they are.
 *
 * Events (journal.ts), in the order the snapshots are read, in the import's transactions, each batch under the
 * journal's lock:
 * - `nouvelle`: the first snapshot that shows the listing online (a listing first seen withdrawn or under control
 *   gets it when it comes online);
 * - `baisse_prix`, `hausse_prix`: the price changed, with the old and new price and the change in %; one event a day
 *   (Paris) and a new price: the same drop seen twice that day, by two snapshots, is one event;
 * - `retrait`: online → withdrawn (`retire`); `reactivation`: withdrawn → online. A listing goes to `masque` when its
 *   portal marks it suspended or under review (`statut` suspended, under_review, moderation, hidden…: control under
 *   way) and back when it shows it again, without event: the feed serves it as null meanwhile;
 * - `multi_agences`: after a batch, a property gained an agency or a portal and now has at least two of either;
 *   written on the property's main listing, with the counts and price range before and after;
 * - `analyse`, `reanalyse`: after the import, for the listings it touched whose analysis inputs changed (analyse.ts).
 * Events are never rewritten.
 *
 * Rejected, with the reason in the report: a line that is not a JSON object, without portal, identifier or time, with
 * a status or a type it cannot read, a kind of property that is no dwelling, a first snapshot without type.
 */

/** Snapshots applied in one transaction. */
const LOT = 500;
/** Lines longer than this are no snapshot (a whole file on one line, a binary file). */
const MAX_LIGNE = 1 << 20;
export const FICHIERS_ANNONCES = /\.(?:jsonl|ndjson|json)(?:\.gz)?$/i;

/** A listing as the importer reads and writes it: dates as the database's text, what keeps its events once. */
interface Ligne extends ColonnesAnnonce {
  lien_cle: string | null;
  dpe: Dpe;
  vendeur_cle: string;
  entree_le: string;
  vu_le: string;
  prix_le: string | null;
  retire_le: string | null;
  maj_le: string;
  nouvelle_ecrite: boolean;
}

const TYPES_COLONNES: Record<keyof Ligne, string> = {
  id: 'text',
  portail: 'text',
  identifiant: 'text',
  lien: 'text',
  lien_cle: 'text',
  statut: 'text',
  type: 'text',
  neuf_ancien: 'text',
  commune: 'text',
  code_postal: 'text',
  insee: 'text',
  departement: 'text',
  region: 'text',
  lat: 'float8',
  lon: 'float8',
  precision_position: 'text',
  cle_ban: 'text',
  prix: 'float8',
  prix_m2_portail: 'float8',
  surface: 'float8',
  pieces: 'int',
  chambres: 'int',
  etage: 'int',
  nb_etages: 'int',
  salles_de_bain: 'int',
  salles_d_eau: 'int',
  terrain_portail_m2: 'float8',
  jardin_privatif_m2: 'float8',
  annee_construction: 'int',
  dpe: 'jsonb',
  equipements: 'jsonb',
  details_portail: 'jsonb',
  type_vendeur: 'text',
  annonceur: 'jsonb',
  vendeur_cle: 'text',
  titre: 'text',
  description: 'text',
  photos: 'text[]',
  premiere_parution: 'date',
  premiere_parution_estimee: 'boolean',
  entree_le: 'timestamptz',
  vu_le: 'timestamptz',
  prix_le: 'timestamptz',
  retire_le: 'timestamptz',
  maj_le: 'timestamptz',
  releves: 'int',
  nouvelle_ecrite: 'boolean',
  brut: 'jsonb',
  bien_uid: 'text',
};
const COLONNES = Object.keys(TYPES_COLONNES) as Array<keyof Ligne>;
/** Bookkeeping: a change of these alone is no change of the listing (`maj_le`). */
const TENUE = new Set<keyof Ligne>(['vu_le', 'releves', 'maj_le', 'nouvelle_ecrite', 'brut']);

const DPE_VIDE: Dpe = { etiquette: null, conso_kwh_m2_an: null, ges: null, ges_kg_m2_an: null, ges_statut: null };

const SIMPLES = [
  'neuf_ancien',
  'prix',
  'prix_m2_portail',
  'surface',
  'pieces',
  'chambres',
  'etage',
  'nb_etages',
  'salles_de_bain',
  'salles_d_eau',
  'terrain_portail_m2',
  'jardin_privatif_m2',
  'annee_construction',
] as const satisfies ReadonlyArray<keyof Champs & keyof Ligne>;

/** A portal link folded for look-ups: host without `www.`, in lower case, and path; no scheme, query or fragment. */
export function cleLien(lien: string | null): string | null {
  if (!lien) return null;
  try {
    const url = new URL(lien.trim());
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
    return `${url.hostname.toLowerCase().replace(/^www\./, '')}${url.pathname.replace(/\/+$/, '')}`;
  } catch {
    return null;
  }
}

/** A new listing's service identifier. */
function nouvelId(): string {
  return `an_${randomBytes(10).toString('hex')}`;
}

/** JSON with its keys sorted: a row read back from jsonb has its keys in another order than the row written. */
function canonique(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonique).join(',')}]`;
  if (v && typeof v === 'object') {
    const entrees = Object.entries(v).filter(([, x]) => x !== undefined);
    return `{${entrees
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([k, x]) => `${JSON.stringify(k)}:${canonique(x)}`)
      .join(',')}}`;
  }
  return JSON.stringify(v ?? null);
}

/** What a listing serves, to tell a change from a snapshot that only says it again. */
const servi = (l: Ligne) => canonique(Object.fromEntries(COLONNES.filter((c) => !TENUE.has(c)).map((c) => [c, l[c]])));

/** The commune of a listing: its INSEE code, else the one commune of its postal code (or the one it names). */
function communeDe(insee: string | null, codePostal: string | null, nom: string | null): string | null {
  if (insee) return insee;
  if (!codePostal) return null;
  const communes = communesDuCodePostal(codePostal);
  if (communes.length === 1) return communes[0];
  if (!nom) return null;
  const plie = plier(nom);
  const trouvees = communes.filter((c) => plier(communeByCode(c)?.nom ?? '') === plie);
  return trouvees.length === 1 ? trouvees[0] : null;
}

// ---------------------------------------------------------------------------------------------------------------------
// Reading the files.
// ---------------------------------------------------------------------------------------------------------------------

async function* lignesDe(fichier: string): AsyncGenerator<string> {
  const tete = Buffer.alloc(2);
  const handle = await open(fichier, 'r');
  try {
    await handle.read(tete, 0, 2, 0);
  } finally {
    await handle.close();
  }
  const brut = createReadStream(fichier);
  let entree: Readable = brut;
  if (tete[0] === 0x1f && tete[1] === 0x8b) {
    const gunzip = createGunzip();
    brut.on('error', (error) => gunzip.destroy(error));
    entree = brut.pipe(gunzip);
  }
  const lecteur = createInterface({ input: entree, crlfDelay: Infinity });
  let premiere = true;
  for await (const ligne of lecteur) {
    yield premiere ? ligne.replace(/^\uFEFF/, '') : ligne;
    premiere = false;
  }
}

async function fichiersDe(chemins: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const chemin of chemins) {
    const info = await stat(chemin).catch(() => null);
    if (!info) throw new ImportError(`Introuvable : ${chemin}`);
    if (info.isFile()) out.push(chemin);
    else {
      const trouves: string[] = [];
      const parcourir = async (dossier: string) => {
        for (const e of (await readdir(dossier, { withFileTypes: true })).sort((a, b) =>
          a.name.localeCompare(b.name),
        )) {
          const p = path.join(dossier, e.name);
          if (e.isDirectory()) await parcourir(p);
          else if (FICHIERS_ANNONCES.test(e.name)) trouves.push(p);
        }
      };
      await parcourir(chemin);
      if (trouves.length === 0) throw new ImportError(`Aucun fichier .jsonl, .jsonl.gz ou .ndjson dans ${chemin}`);
      out.push(...trouves);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------------
// Applying a batch.
// ---------------------------------------------------------------------------------------------------------------------

interface Compteurs {
  nouvelles: number;
  modifiees: number;
  inchangees: number;
  rejoignent: number;
  sirenes: number;
  evenements: Partial<Record<Genre, number>>;
  illisibles: Map<string, number>;
  touchees: Set<string>;
}

interface StatsBien {
  nb_agences: number;
  nb_portails: number;
  prix_min: number | null;
  prix_max: number | null;
}

/** A listing of a property, as the counts of `multi_agences` and the choice of its main listing read it. */
interface Membre {
  id: string;
  statut: Statut;
  vendeur_cle: string;
  portail: string;
  prix: number | null;
  entree_le: string;
  insee: string | null;
  code_postal: string | null;
  departement: string | null;
}

/** The listings of each property, by listing id (a property the database does not hold has none). */
async function membresDesBiens(
  client: Queryable,
  dataset: Dataset,
  biens: string[],
): Promise<Array<Map<string, Membre>>> {
  const { rows } = await client.query<Membre & { bien_uid: string }>(
    `SELECT bien_uid, id, statut, vendeur_cle, portail, prix,
            to_char(entree_le AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS entree_le,
            insee, code_postal, departement
       FROM annonces WHERE dataset = $1 AND bien_uid = ANY($2::text[])`,
    [dataset, biens],
  );
  const parBien = new Map(biens.map((b) => [b, new Map<string, Membre>()]));
  for (const { bien_uid, ...m } of rows) parBien.get(bien_uid)!.set(m.id, m);
  return biens.map((b) => parBien.get(b)!);
}

function statsDe(membres: Map<string, Membre>): StatsBien {
  const actifs = [...membres.values()].filter((m) => m.statut === 'actif');
  const prix = actifs.map((m) => m.prix).filter((p): p is number => p !== null);
  return {
    nb_agences: new Set(actifs.map((m) => m.vendeur_cle)).size,
    nb_portails: new Set(actifs.map((m) => m.portail)).size,
    prix_min: prix.length ? Math.min(...prix) : null,
    prix_max: prix.length ? Math.max(...prix) : null,
  };
}

const RANG_STATUT: Record<Statut, number> = { actif: 0, retire: 1, masque: 2 };

/** The listing the feed serves for a property: online first, then withdrawn, under control last; the oldest. */
function principaleDe(membres: Map<string, Membre>): Membre {
  return [...membres.values()].sort(
    (a, b) =>
      RANG_STATUT[a.statut] - RANG_STATUT[b.statut] || a.entree_le.localeCompare(b.entree_le) || (a.id < b.id ? -1 : 1),
  )[0];
}

const cleDe = (r: Releve) => `${r.portail}:${r.identifiant}`;

async function lireLignes(client: Queryable, dataset: Dataset, releves: Releve[]): Promise<Map<string, Ligne>> {
  const cles = new Map(releves.map((r) => [cleDe(r), r]));
  const dates = ['premiere_parution', 'entree_le', 'vu_le', 'prix_le', 'retire_le', 'maj_le'];
  // Instants as ISO 8601 in UTC, the way snapshots give them: compared and written back as they are.
  const { rows } = await client.query<Ligne>(
    `SELECT ${COLONNES.filter((c) => !dates.includes(c))
      .map((c) => `a.${c}`)
      .join(', ')},
            to_char(a.premiere_parution, 'YYYY-MM-DD') AS premiere_parution,
            ${dates
              .slice(1)
              .map((c) => `to_char(a.${c} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS ${c}`)
              .join(', ')}
       FROM unnest($2::text[], $3::text[]) AS k(portail, identifiant)
       JOIN annonces a ON a.dataset = $1 AND a.portail = k.portail AND a.identifiant = k.identifiant
        FOR UPDATE OF a`,
    [dataset, [...cles.values()].map((r) => r.portail), [...cles.values()].map((r) => r.identifiant)],
  );
  return new Map(rows.map((l) => [`${l.portail}:${l.identifiant}`, l]));
}

/** A price event of the journal, as the same drop seen twice in a day is told by. */
interface PrixEcrit {
  genre: Genre;
  prix: number | null;
  /** The day in Paris, as jourParis writes it. */
  jour: string;
}

/** The price events the journal holds for each listing. */
async function prixEcrits(client: Queryable, dataset: Dataset, ids: string[]): Promise<PrixEcrit[][]> {
  const { rows } = await client.query<PrixEcrit & { annonce_id: string }>(
    `SELECT annonce_id, genre, (apres->>'prix')::float8 AS prix,
            to_char((le AT TIME ZONE 'Europe/Paris')::date, 'YYYY-MM-DD') AS jour
       FROM annonces_evenements
      WHERE dataset = $1 AND annonce_id = ANY($2::text[]) AND genre IN ('baisse_prix', 'hausse_prix')`,
    [dataset, ids],
  );
  return ids.map((id) => rows.filter((e) => e.annonce_id === id));
}

/** Whether an event of this genre for this listing, that day (Paris) and at this new price, is already written. */
async function prixDejaVu(lot: Lot, ecrits: NouvelEvenement[], e: NouvelEvenement): Promise<boolean> {
  const jour = jourParis(e.le);
  const meme = (x: NouvelEvenement) =>
    x.annonceId === e.annonceId && x.genre === e.genre && x.apres?.prix === e.apres?.prix && jourParis(x.le) === jour;
  if (ecrits.some(meme)) return true;
  // A listing the database did not hold has no event in it yet.
  if (!lot.publiees.has(e.annonceId)) return false;
  const [journal] = await lot.lectures.prix.lire(lot.client, [e.annonceId]);
  return journal.some((x) => x.genre === e.genre && x.prix === e.apres?.prix && x.jour === jour);
}

const signature = (l: Ligne): Signature => ({
  insee: l.insee,
  type: l.type,
  cle_ban: l.cle_ban,
  lat: l.lat,
  lon: l.lon,
  precision_position: l.precision_position,
  surface: l.surface,
  pieces: l.pieces,
  etage: l.etage,
  prix: l.prix,
});

// ---------------------------------------------------------------------------------------------------------------------
// The look-ups, a batch at a time.
// ---------------------------------------------------------------------------------------------------------------------

/**
 * A look-up of the import, its answers kept by key: read for many keys in one statement ahead of the snapshots that
 * need them (one statement a snapshot and look-up, one round trip after the other, was what bounded the import), and
 * for a key the forecast missed when a snapshot asks for it. Either way the answer is the statement's: only the round
 * trips differ.
 */
interface ParLot<K, V> {
  prevoir(client: Queryable, cles: Iterable<K>): Promise<void>;
  lire(client: Queryable, cles: K[]): Promise<V[]>;
}

function parLot<K, V>(cle: (k: K) => string, lire: (client: Queryable, cles: K[]) => Promise<V[]>): ParLot<K, V> {
  const lues = new Map<string, V>();
  const prevoir = async (client: Queryable, cles: Iterable<K>) => {
    const manquantes = new Map<string, K>();
    for (const k of cles) if (!lues.has(cle(k))) manquantes.set(cle(k), k);
    if (manquantes.size === 0) return;
    const reponses = await lire(client, [...manquantes.values()]);
    [...manquantes.keys()].forEach((c, i) => lues.set(c, reponses[i]));
  };
  return {
    prevoir,
    async lire(client, cles) {
      await prevoir(client, cles);
      return cles.map((k) => lues.get(cle(k))!);
    },
  };
}

type Sirenes = ParLot<RechercheSirene, string | null>;

/** SIRENE's answers, kept for the whole import: the same agency comes back all along the file. */
const sirenesDe = (dataset: Dataset): Sirenes =>
  parLot(
    (r) => JSON.stringify([r.noms, r.codePostal]),
    (client, recherches) => sirensDeSirene(client, dataset, recherches),
  );

/**
 * What a batch's snapshots look up. Each but SIRENE is read again for every batch, the database's state of that
 * moment, as when each snapshot read its own: a BAN or an address validated since the last batch is seen.
 */
interface Lectures {
  validees: ParLot<string, AdresseValidee | null>;
  numeros: ParLot<PointBan, string | null>;
  sirenes: Sirenes;
  membres: ParLot<string, Map<string, Membre>>;
  candidats: ParLot<RechercheCandidats, Candidat[]>;
  prix: ParLot<string, PrixEcrit[]>;
}

/** A batch being applied: its transaction, its look-ups, the listings the database held before it. */
interface Lot {
  db: Db;
  client: PoolClient;
  dataset: Dataset;
  lectures: Lectures;
  /** Their service ids: only they can have an address validated under that id, or events. */
  publiees: Set<string>;
}

function lecturesDuLot(dataset: Dataset, sirenes: Sirenes): Lectures {
  return {
    validees: parLot((id) => id, adressesValidees),
    numeros: parLot(
      (p) => `${p.lat}|${p.lon}|${p.rayonM}`,
      (client, points) => numerosProches(client, dataset, points),
    ),
    sirenes,
    membres: parLot(
      (bien) => bien,
      (client, biens) => membresDesBiens(client, dataset, biens),
    ),
    candidats: parLot(
      (s) => JSON.stringify([s.insee, s.type, s.surface, s.vuLe]),
      (client, recherches) => candidatsBiens(client, dataset, recherches),
    ),
    prix: parLot(
      (id) => id,
      (client, ids) => prixEcrits(client, dataset, ids),
    ),
  };
}

/** A snapshot no later than the last one applied to its listing changes nothing. */
const perime = (avant: Pick<Ligne, 'vu_le'> | null, r: Releve) =>
  avant !== null && Date.parse(r.vuLe) <= Date.parse(avant.vu_le);

/** The identifiers an address may be validated under: the portal's, and the service's once the service served it. */
const idsValidation = (lot: Lot, id: string | undefined, r: Releve) =>
  id !== undefined && lot.publiees.has(id) ? [id, cleDe(r)] : [cleDe(r)];

/** What a listing is followed by through a batch to foresee its look-ups. */
type Suivie = Lieu & Pick<Ligne, 'vu_le' | 'type' | 'type_vendeur' | 'annonceur' | 'prix'>;

/**
 * Reads ahead, one statement per look-up, what the batch's snapshots will look up. It follows each listing through
 * the batch as the loop will (its place, its seller, its price, by the loop's own functions) but cannot know the
 * answers: it foresees a SIRENE look-up that a SIREN found earlier in the batch will spare (read for nothing), and
 * misses what only an answer leads to, such as the other listings of the stored property a new listing joins (read
 * when the loop asks).
 */
async function prevoirLot(lot: Lot, releves: Releve[], lignes: Map<string, Ligne>): Promise<void> {
  const { client, lectures } = lot;
  const suivies = new Map<string, Suivie>();
  const aRattacher: Array<{ lieu: Lieu; ids: string[] }> = [];
  const sirenes: RechercheSirene[] = [];
  const biens: string[] = [];
  const candidats: RechercheCandidats[] = [];
  const prix: string[] = [];
  for (const r of releves) {
    const cle = cleDe(r);
    const stockee = lignes.get(cle);
    const avant = suivies.get(cle) ?? stockee ?? null;
    const type = r.champs.type ?? avant?.type;
    if (perime(avant, r) || !type) continue;
    const lieu = lieuApres(avant, r.champs);
    const { typeVendeur, annonceur } = vendeurApres(avant, r);
    const recherche = annonceur && rechercheSirene(annonceur, codePostalVendeur(r, lieu));
    if (recherche) sirenes.push(recherche);
    aRattacher.push({ lieu, ids: idsValidation(lot, stockee?.id, r) });
    const prixApres = r.champs.prix ?? avant?.prix ?? null;
    if (stockee) {
      biens.push(stockee.bien_uid);
      if (avant && avant.prix !== null && prixApres !== null && prixApres !== avant.prix) prix.push(stockee.id);
    } else if (!avant) {
      candidats.push({ insee: lieu.insee, type, surface: r.champs.surface ?? null, vuLe: r.vuLe });
    }
    suivies.set(cle, { ...lieu, vu_le: r.vuLe, type, type_vendeur: typeVendeur, annonceur, prix: prixApres });
  }
  // The BAN numbers near the positions, once the validated addresses, whose positions come first, are known.
  await lectures.validees.prevoir(
    client,
    aRattacher.flatMap((a) => a.ids),
  );
  const points: PointBan[] = [];
  for (const { lieu, ids } of aRattacher) {
    const validee = derniereValidee(await lectures.validees.lire(client, ids));
    for (const piste of pistesBan(lieu, validee)) if ('point' in piste) points.push(piste.point);
  }
  await lectures.numeros.prevoir(client, points);
  await lectures.sirenes.prevoir(client, sirenes);
  await lectures.membres.prevoir(client, biens);
  await lectures.candidats.prevoir(client, candidats);
  await lectures.prix.prevoir(client, prix);
}

// ---------------------------------------------------------------------------------------------------------------------
// The snapshots of a batch, in order.
// ---------------------------------------------------------------------------------------------------------------------

async function appliquerLot(
  db: Db,
  dataset: Dataset,
  releves: Releve[],
  sirenes: Sirenes,
  rejeter: Rejeter,
  rapport: ImportReport,
  compteurs: Compteurs,
): Promise<void> {
  await transaction(db, async (client: PoolClient) => {
    // First the lock: two imports of one dataset apply their batches one after the other, each reading the state the
    // other left, and their events take ids in that order.
    await verrouillerJournal(client, dataset);
    const lignes = await lireLignes(client, dataset, releves);
    const lot: Lot = {
      db,
      client,
      dataset,
      lectures: lecturesDuLot(dataset, sirenes),
      publiees: new Set([...lignes.values()].map((l) => l.id)),
    };
    // Nothing is written before the batch's end: what is read ahead is what each snapshot would have read.
    await prevoirLot(lot, releves, lignes);
    const changees = new Map<string, Ligne>();
    const nouvelles: Ligne[] = [];
    const evenements: NouvelEvenement[] = [];
    const biens = new Map<string, Map<string, Membre>>();

    for (const r of releves) {
      const cle = cleDe(r);
      const avant = lignes.get(cle) ?? null;
      for (const champ of r.illisibles) compteurs.illisibles.set(champ, (compteurs.illisibles.get(champ) ?? 0) + 1);
      if (perime(avant, r)) {
        compteurs.inchangees++;
        continue;
      }
      const c = r.champs;
      const type = c.type ?? avant?.type;
      if (!type) {
        rejeter(r.ligne, `${cle} : première vue de l’annonce sans type (appartement, maison, immeuble)`);
        rapport.gardes--;
        continue;
      }
      const l = await suivante(lot, avant, r, type, compteurs);
      const ou = { annonceId: l.id, insee: l.insee, codePostal: l.code_postal, departement: l.departement };
      const ajouter = (e: Omit<NouvelEvenement, keyof typeof ou | 'le'>) => {
        evenements.push({ ...ou, le: r.vuLe, ...e });
        compteurs.evenements[e.genre] = (compteurs.evenements[e.genre] ?? 0) + 1;
      };

      if (!avant) {
        const signe = signature(l);
        const [enBase] = await lot.lectures.candidats.lire(client, [
          { insee: l.insee, type: l.type, surface: l.surface, vuLe: r.vuLe },
        ]);
        const candidats = [
          ...nouvelles.map((n) => ({ ...signature(n), bien_uid: n.bien_uid, entree_le: new Date(n.entree_le) })),
          ...enBase,
        ].sort((a, b) => a.entree_le.getTime() - b.entree_le.getTime());
        const trouve = candidats.find((k) => memeBien(signe, k));
        if (trouve) compteurs.rejoignent++;
        l.bien_uid = trouve?.bien_uid ?? nouveauBienUid();
        if (!trouve) biens.set(l.bien_uid, new Map());
        nouvelles.push(l);
      }
      let membres = biens.get(l.bien_uid);
      if (!membres) {
        [membres] = await lot.lectures.membres.lire(client, [l.bien_uid]);
        biens.set(l.bien_uid, membres);
      }
      const statsAvant = statsDe(membres);

      // In the order of the genres: nouvelle, the price, the status.
      if (!l.nouvelle_ecrite && l.statut === 'actif') {
        ajouter({ genre: 'nouvelle', avant: null, apres: { prix: l.prix, detecte_le: r.vuLe, actif: true } });
        l.nouvelle_ecrite = true;
      }
      if (avant && avant.prix !== null && l.prix !== null && l.prix !== avant.prix) {
        const e: NouvelEvenement = {
          ...ou,
          le: r.vuLe,
          genre: l.prix < avant.prix ? 'baisse_prix' : 'hausse_prix',
          avant: { prix: avant.prix, detecte_le: avant.prix_le },
          apres: {
            prix: l.prix,
            ecart_pct: Math.round((l.prix / avant.prix - 1) * 1000) / 10,
            detecte_le: r.vuLe,
          },
        };
        if (!(await prixDejaVu(lot, evenements, e))) ajouter(e);
      }
      if (avant?.statut === 'actif' && l.statut === 'retire') {
        ajouter({ genre: 'retrait', avant: { actif: true }, apres: { actif: false, detecte_le: r.vuLe } });
      }
      if (avant?.statut === 'retire' && l.statut === 'actif' && avant.nouvelle_ecrite) {
        ajouter({
          genre: 'reactivation',
          avant: { actif: false, detecte_le: avant.retire_le },
          apres: { actif: true, detecte_le: r.vuLe },
        });
      }

      // The property gained an agency or a portal, and has two of either now.
      membres.set(l.id, { ...l });
      const statsApres = statsDe(membres);
      const gagne = statsApres.nb_agences > statsAvant.nb_agences || statsApres.nb_portails > statsAvant.nb_portails;
      if (gagne && (statsApres.nb_agences >= 2 || statsApres.nb_portails >= 2)) {
        const p = principaleDe(membres);
        evenements.push({
          genre: 'multi_agences',
          le: r.vuLe,
          annonceId: p.id,
          insee: p.insee,
          codePostal: p.code_postal,
          departement: p.departement,
          avant: statsAvant,
          apres: statsApres,
        });
        compteurs.evenements.multi_agences = (compteurs.evenements.multi_agences ?? 0) + 1;
      }

      if (!avant) compteurs.nouvelles++;
      else if (servi(l) !== servi(avant)) compteurs.modifiees++;
      else {
        compteurs.inchangees++;
        l.maj_le = avant.maj_le;
      }
      lignes.set(cle, l);
      changees.set(cle, l);
      compteurs.touchees.add(l.id);
    }
    if (changees.size === 0) return;

    await client.query(
      `INSERT INTO annonces AS a (dataset, ${COLONNES.join(', ')})
       SELECT $1, ${COLONNES.join(', ')}
         FROM jsonb_to_recordset($2::jsonb) AS r(${COLONNES.map((c) => `${c} ${TYPES_COLONNES[c]}`).join(', ')})
       ON CONFLICT (dataset, id) DO UPDATE
          SET ${COLONNES.filter((c) => c !== 'id')
            .map((c) => `${c} = excluded.${c}`)
            .join(', ')}`,
      [dataset, JSON.stringify([...changees.values()])],
    );
    // The listing the feed serves for each property touched (principaleDe, in SQL).
    await client.query(
      `UPDATE annonces a SET principale = (a.id = p.id)
         FROM (SELECT DISTINCT ON (bien_uid) bien_uid, id FROM annonces
                WHERE dataset = $1 AND bien_uid = ANY($2::text[])
                ORDER BY bien_uid, CASE statut WHEN 'actif' THEN 0 WHEN 'retire' THEN 1 ELSE 2 END, entree_le, id) p
        WHERE a.dataset = $1 AND a.bien_uid = p.bien_uid AND a.principale IS DISTINCT FROM (a.id = p.id)`,
      [dataset, [...biens.keys()]],
    );
    await ecrireEvenements(client, dataset, evenements);
  });
}

/** The place of a listing. */
type Lieu = Pick<
  Ligne,
  'commune' | 'code_postal' | 'insee' | 'departement' | 'region' | 'lat' | 'lon' | 'precision_position'
>;

/** The place after a snapshot: what the snapshot says of the place replaces the place. */
function lieuApres(avant: Lieu | null, c: Partial<Champs>): Lieu {
  const ditLieu = c.insee ?? c.code_postal ?? c.commune ?? c.lat;
  const codePostal = c.code_postal ?? (ditLieu === undefined ? (avant?.code_postal ?? null) : null);
  const insee =
    ditLieu === undefined ? (avant?.insee ?? null) : communeDe(c.insee ?? null, codePostal, c.commune ?? null);
  const commune = insee ? communeByCode(insee) : null;
  const positionDite = c.lat !== undefined && c.lon !== undefined;
  const lat = positionDite ? c.lat! : (avant?.lat ?? null);
  const lon = positionDite ? c.lon! : (avant?.lon ?? null);
  const precision: Precision = positionDite
    ? (c.precision_position ?? 'approchee')
    : lat === null
      ? 'inconnue'
      : (c.precision_position ?? avant?.precision_position ?? 'approchee');
  return {
    commune: commune?.nom ?? c.commune ?? (ditLieu === undefined ? (avant?.commune ?? null) : null),
    code_postal: codePostal ?? (commune?.codesPostaux.length === 1 ? commune.codesPostaux[0] : null),
    insee,
    departement: commune?.departement ?? null,
    region: commune?.region ?? null,
    lat: precision === 'inconnue' ? null : lat,
    lon: precision === 'inconnue' ? null : lon,
    precision_position: precision,
  };
}

/** Who sells after a snapshot, before SIRENE is asked: a professional's identity, no one else's. */
function vendeurApres(
  avant: Pick<Ligne, 'type_vendeur' | 'annonceur'> | null,
  r: Releve,
): { typeVendeur: TypeVendeur; annonceur: Annonceur | null } {
  const typeVendeur: TypeVendeur = r.typeVendeur ?? avant?.type_vendeur ?? 'inconnu';
  return {
    typeVendeur,
    annonceur: typeVendeur === 'pro' ? annonceurApres(avant?.annonceur ?? null, r.annonceur) : null,
  };
}

/** Where a seller is looked for in SIRENE: the postal code they give, else the listing's, else its commune's first. */
const codePostalVendeur = (r: Releve, lieu: Lieu): string | null =>
  r.annonceur?.code_postal ??
  lieu.code_postal ??
  (lieu.insee ? communeByCode(lieu.insee)?.codesPostaux[0] : null) ??
  null;

/** The listing after a snapshot (its events aside). */
async function suivante(
  lot: Lot,
  avant: Ligne | null,
  r: Releve,
  type: TypeBien,
  compteurs: Compteurs,
): Promise<Ligne> {
  const c = r.champs;
  const simples = Object.fromEntries(SIMPLES.map((k) => [k, c[k] ?? avant?.[k] ?? null])) as Pick<
    Ligne,
    (typeof SIMPLES)[number]
  >;
  const lieu = lieuApres(avant, c);

  // Who sells.
  const { typeVendeur, annonceur: annonceurDit } = vendeurApres(avant, r);
  let annonceur = annonceurDit;
  const recherche = annonceur && rechercheSirene(annonceur, codePostalVendeur(r, lieu));
  if (annonceur && recherche) {
    const [trouve] = await lot.lectures.sirenes.lire(lot.client, [recherche]);
    if (trouve) {
      annonceur = { ...annonceur, siren: trouve, siren_origine: 'sirene' };
      compteurs.sirenes++;
    }
  }

  const premiere = c.premiere_parution ?? null;
  const lien = r.lien ?? avant?.lien ?? null;
  const l: Ligne = {
    id: avant?.id ?? nouvelId(),
    portail: r.portail,
    identifiant: r.identifiant,
    lien,
    lien_cle: cleLien(lien),
    statut: r.statut,
    type,
    ...simples,
    ...lieu,
    cle_ban: null,
    dpe: { ...DPE_VIDE, ...avant?.dpe, ...c.dpe },
    equipements: { ...avant?.equipements, ...c.equipements },
    details_portail: { ...avant?.details_portail, ...c.details_portail },
    type_vendeur: typeVendeur,
    annonceur,
    vendeur_cle: cleVendeur(typeVendeur, annonceur),
    titre: texteGarde(c.titre ?? avant?.titre ?? null, typeVendeur),
    description: texteGarde(c.description ?? avant?.description ?? null, typeVendeur),
    photos: c.photos ?? avant?.photos ?? [],
    premiere_parution: premiere ?? avant?.premiere_parution ?? jourParis(r.vuLe),
    premiere_parution_estimee: premiere ? false : (avant?.premiere_parution_estimee ?? true),
    entree_le: avant?.entree_le ?? r.vuLe,
    vu_le: r.vuLe,
    prix_le: simples.prix !== null && simples.prix !== avant?.prix ? r.vuLe : (avant?.prix_le ?? null),
    retire_le: r.statut === 'retire' ? (avant?.statut === 'retire' ? avant.retire_le : r.vuLe) : null,
    maj_le: r.vuLe,
    releves: (avant?.releves ?? 0) + 1,
    nouvelle_ecrite: avant?.nouvelle_ecrite ?? false,
    // A professional's snapshot as sent (inclure=brut); nothing of anyone else's.
    brut: typeVendeur === 'pro' ? r.brut : null,
    bien_uid: avant?.bien_uid ?? '',
  };
  // Read again at every batch: a user may have validated the listing's address since the last one.
  const validee = derniereValidee(await lot.lectures.validees.lire(lot.client, idsValidation(lot, l.id, r)));
  l.cle_ban = await rattacherBan(lot.db, lot.dataset, pistesBan(l, validee), async (point) => {
    const [cle] = await lot.lectures.numeros.lire(lot.client, [point]);
    return cle;
  });
  return l;
}

// ---------------------------------------------------------------------------------------------------------------------
// The import.
// ---------------------------------------------------------------------------------------------------------------------

export interface AnnoncesImportOptions extends DatasetImportOptions {
  /** Snapshots later than a day after this are refused (now by default). */
  maintenant?: Date;
}

/** Imports snapshot files (one, several, or folders) into `dataset`, then analyses what changed. */
export async function importAnnonces(
  db: Db,
  chemins: string | string[],
  options: AnnoncesImportOptions = {},
): Promise<ImportReport> {
  const dataset = options.dataset ?? 'live';
  const maintenant = options.maintenant ?? new Date();
  const liste = Array.isArray(chemins) ? chemins : [chemins];
  const fichiers = await fichiersDe(liste);
  const { report, rejeter } = nouveauRapport(liste.length === 1 ? liste[0] : `${fichiers.length} fichiers`);
  const compteurs: Compteurs = {
    nouvelles: 0,
    modifiees: 0,
    inchangees: 0,
    rejoignent: 0,
    sirenes: 0,
    evenements: {},
    illisibles: new Map(),
    touchees: new Set(),
  };
  const sirenes = sirenesDe(dataset);
  // Line numbers run on across files, so that a rejection points at one line; its reason names the file.
  let numero = 0;
  for (const fichier of fichiers) {
    const nom = path.basename(fichier);
    let lot: Releve[] = [];
    const vider = async () => {
      if (lot.length === 0) return;
      const plein = lot;
      lot = [];
      await appliquerLot(
        db,
        dataset,
        plein,
        sirenes,
        (ligne, motif) => rejeter(ligne, `${nom} : ${motif}`),
        report,
        compteurs,
      );
      options.onProgress?.({ lus: report.lus, gardes: report.gardes });
    };
    for await (const texte of lignesDe(fichier)) {
      numero++;
      if (texte.trim() === '') continue;
      report.lus++;
      if (texte.length > MAX_LIGNE) {
        rejeter(numero, `${nom} : ligne de ${texte.length} caractères, un relevé en fait quelques milliers`);
        continue;
      }
      const releve = lireReleve(numero, texte, maintenant);
      if (typeof releve === 'string') {
        rejeter(numero, `${nom} : ${releve}`);
        continue;
      }
      report.gardes++;
      lot.push(releve);
      if (lot.length >= LOT) await vider();
    }
    await vider();
  }
  report.rejetes.sort((a, b) => a.ligne - b.ligne);
  const analyse = await analyserAnnonces(db, dataset, [...compteurs.touchees]);
  // The analysis's events, `analyse` and `reanalyse` together.
  if (analyse.evenements) compteurs.evenements.analyse = analyse.evenements;
  const genres = Object.entries(compteurs.evenements)
    .map(([g, n]) => `${g === 'analyse' ? 'analyse/reanalyse' : g} ${n}`)
    .join(', ');
  const totalEvenements = Object.values(compteurs.evenements).reduce((s, n) => s + n, 0);
  report.details = [
    `fichiers  : ${fichiers.length}`,
    `annonces  : ${compteurs.nouvelles} nouvelles, ${compteurs.modifiees} modifiées, ${compteurs.inchangees} relevés sans changement`,
    `biens     : ${compteurs.rejoignent} annonces rattachées au bien d’une autre annonce`,
    `SIREN     : ${compteurs.sirenes} trouvés dans SIRENE par le nom et le code postal`,
    `analyses  : ${analyse.analysees} calculées`,
    `événements : ${totalEvenements}${genres ? ` (${genres})` : ''}`,
    ...(compteurs.illisibles.size > 0
      ? [
          `champs illisibles laissés de côté : ${[...compteurs.illisibles]
            .map(([champ, n]) => `${champ} ×${n}`)
            .join(', ')}`,
        ]
      : []),
  ];
  options.onProgress?.({ lus: report.lus, gardes: report.gardes });
  return report;
}

/** The `annonces` source of the importers' CLI. */
export const annoncesSource = importSource(
  'annonces',
  'Annonces de vente : relevés des portails (portal_a, portal_b, portal_c) en JSON Lines (.jsonl, .jsonl.gz), fichiers ou dossiers',
  importAnnonces,
  FICHIERS_ANNONCES,
);
