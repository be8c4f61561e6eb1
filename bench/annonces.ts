/**
 * Listings benchmark (`npm run bench -- annonces`, or `node bench/annonces.ts`): the import of BENCH_ANNONCES portal
 * snapshots (1 000 000 by default) and the read of the event feed they make, against the service as `npm start` runs
 * it (bench/service.ts).
 *
 * The file: one JSON Lines file in the documented format (domain/annonces/format.ts), generated deterministically with
 * the realism of the sandbox's months of listings (domain/sandbox/parts/annonces.ts, whose generator is bound to its
 * five communes): a year of snapshots over the most populated communes of metropolitan France, listings in proportion
 * to population, each seen every week by its portal's crawler while it is online, each portal writing its own way
 * (portal_a the format's French names, portal_b English names with units in the text and a nested seller, portal_c
 * other French names and Unix times); price drops (some seen twice the same day), rises, suspensions, withdrawals
 * (listings end), reactivations, the same dwelling on a second portal at a price 1 % apart or by a second agency,
 * private sellers (their contacts in the text, masked by the importer) and agencies (with their SIREN, or a name to
 * look up in SIRENE); one line in a thousand a parking or a plot of land (rejected).
 *
 * Then, each in a process of its own: the communes (`npm run import -- communes -`), the snapshots with
 * `npm run import -- annonces <fichier>` (wall time, CPU of the importer and of PostgreSQL, peak RSS of the importer,
 * events written), the same file again (nothing to write: idempotence); then the load generator
 * (`node bench/annonces.ts --load`) reads `GET /api/v1/flux/annonces?limite=1000` with a Data-tier key, following
 * `curseur_suivant` page after page: the whole journal one request at a time, filtered by commune, département and
 * genre, and several readers at once each at its own place in the journal. Figures go to bench/RESULTS.md, section
 * "Listings and event feed".
 *
 * BENCH_ANNONCES_PROFIL=1 adds where the time goes: each statement of the first import timed inside the importer (a
 * module loaded with `--import` that wraps pg's `Client.query`), V8 profiles of that import and of the service (self
 * time by function, the service's over the reads only). A full run takes about two hours on a loaded 2-core machine
 * (the first import alone 96 minutes at 1 000 000 snapshots); BENCH_ANNONCES=50000 shows it working in ten minutes.
 * BENCH_ANNONCES_COPIE=<path> keeps a copy of the generated file there.
 */
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { toutesLesCommunes, type Commune } from '../domain/communes.ts';
import { seededRandom } from '../lib/random.ts';
import { machine, writeSection } from './results.ts';
import { startService } from './service.ts';

const SNAPSHOTS = Number(process.env.BENCH_ANNONCES ?? 1_000_000);
const COMMUNES = Number(process.env.BENCH_ANNONCES_COMMUNES ?? 1500);
const PROFIL = process.env.BENCH_ANNONCES_PROFIL === '1';
const SEED = 20_261_129;
/** The year of snapshots: November 2025 to October 2026. */
const DEBUT = Date.UTC(2025, 10, 1) / 1000;
const JOURS = 365;
const FIN = DEBUT + JOURS * 86_400;
const JOUR = 86_400;
const LIMITE = 1000;
const WARMUP = 20;
/** Requests at a time of the unfiltered reads after the first pass: several subscribers, each at its own place. */
const CONCURRENCES = [4, 8];
/** Requests of each filtered read (the filtered journal read again from its start when it is read to its end). */
const REQUETES_FILTREES = Number(process.env.BENCH_ANNONCES_REQUETES ?? 200);
/** One line in a thousand is a parking or a plot of land, spread evenly: the importer rejects it. */
const PART_HORS_LOGEMENT = 0.001;

type Rng = ReturnType<typeof seededRandom>;
type Portail = 'portal_a' | 'portal_b' | 'portal_c';
type Statut = 'actif' | 'retire' | 'masque';
type Classe = 'A' | 'B' | 'C' | 'D' | 'E' | 'F' | 'G';

const normal = (rng: Rng) => Math.sqrt(-2 * Math.log(1 - rng.next())) * Math.cos(2 * Math.PI * rng.next());
function weighted<T>(rng: Rng, choices: ReadonlyArray<readonly [T, number]>): T {
  const total = choices.reduce((s, [, w]) => s + w, 0);
  let x = rng.next() * total;
  for (const [v, w] of choices) {
    x -= w;
    if (x < 0) return v;
  }
  return choices.at(-1)![0];
}
const arrondiPrix = (prix: number) => Math.round(prix / 1000) * 1000;

// ---------------------------------------------------------------------------------------------------------------------
// The territory and the sellers.
// ---------------------------------------------------------------------------------------------------------------------

interface Lieu {
  commune: Commune;
  lat: number;
  lon: number;
  urbaine: boolean;
  prixM2: number;
  poids: number;
}

/**
 * The COMMUNES most populated served communes of metropolitan France (municipal arrondissements rather than Paris,
 * Lyon, Marseille as a whole), each with a made-up centre (the administrative split has none) within ~30 km of its
 * département's, and a price level (higher in large cities and Paris).
 */
function territoire(rng: Rng): Lieu[] {
  const toutes = [...toutesLesCommunes()];
  const parents = new Set(toutes.map((c) => c.communeParente).filter((c): c is string => c !== null));
  const choisies = toutes
    .filter((c) => c.departement.length === 2 && !parents.has(c.code) && c.population !== null && c.codesPostaux.length)
    .sort((a, b) => b.population! - a.population! || a.code.localeCompare(b.code))
    .slice(0, COMMUNES);
  const centres = new Map<string, { lat: number; lon: number; niveau: number }>();
  return choisies.map((c) => {
    if (!centres.has(c.departement)) {
      centres.set(c.departement, {
        lat: rng.between(43.3, 50.5),
        lon: rng.between(-1.2, 7),
        niveau: c.departement === '75' ? 10_000 : 2000 * Math.exp(0.3 * normal(rng)),
      });
    }
    const d = centres.get(c.departement)!;
    return {
      commune: c,
      lat: d.lat + rng.between(-0.3, 0.3),
      lon: d.lon + rng.between(-0.4, 0.4),
      urbaine: c.population! >= 20_000,
      prixM2: d.niveau * (c.population! / 30_000) ** 0.08 * Math.exp(0.12 * normal(rng)),
      poids: c.population! ** 0.9,
    };
  });
}

interface Vendeur {
  genre: 'pro' | 'particulier';
  nom: string | null;
  enseigne: string | null;
  siren: string | null;
  codePostal: string | null;
  telephone: string;
  email: string;
}

const ENSEIGNES = ['Habitat Conseil', 'Clés de France', 'Maisons et Toits', 'Pierre Immobilier', 'Foncia Fictive'];
const NOMS_AGENCE = ['IMMOBILIER', 'CABINET', 'ESPACE HABITAT', 'TRANSACTIONS', 'AGENCE CENTRALE', 'L’ADRESSE'];

function telephone(rng: Rng, prive: boolean): string {
  const d = `${prive ? '063998' : '019900'}${String(rng.int(10_000)).padStart(4, '0')}`;
  return rng.pick([`${d.slice(0, 2)} ${d.slice(2, 4)} ${d.slice(4, 6)} ${d.slice(6, 8)} ${d.slice(8)}`, d]);
}

/** The agencies of each département: a few per ten thousand inhabitants, with a SIREN of their own. */
function agences(rng: Rng, lieux: Lieu[]): Map<string, Vendeur[]> {
  const parDepartement = new Map<string, Vendeur[]>();
  let numero = 0;
  for (const l of lieux) {
    const n = Math.max(1, Math.round(l.commune.population! / 8000));
    const liste = parDepartement.get(l.commune.departement) ?? [];
    for (let i = 0; i < n; i++) {
      numero++;
      liste.push({
        genre: 'pro',
        nom: `${rng.pick(NOMS_AGENCE)} ${l.commune.nom.toUpperCase()} ${numero}`,
        enseigne: rng.next() < 0.5 ? rng.pick(ENSEIGNES) : null,
        siren: String(800_000_000 + numero),
        codePostal: l.commune.codesPostaux[0],
        telephone: telephone(rng, false),
        email: `contact@agence-${numero}.exemple`,
      });
    }
    parDepartement.set(l.commune.departement, liste);
  }
  return parDepartement;
}

// ---------------------------------------------------------------------------------------------------------------------
// Listings and their lives.
// ---------------------------------------------------------------------------------------------------------------------

interface Etat {
  /** Unix seconds. */
  t: number;
  prix: number;
  statut: Statut;
}

interface Annonce {
  portail: Portail;
  identifiant: string;
  lieu: Lieu;
  codePostal: string;
  precision: 'adresse' | 'approchee' | 'centre_commune';
  lat: number;
  lon: number;
  type: 'appartement' | 'maison';
  neuf: boolean;
  surface: number;
  pieces: number;
  chambres: number;
  etage: number | null;
  nbEtages: number | null;
  terrain: number | null;
  dpe: Classe;
  conso: number;
  annee: number;
  vendeur: Vendeur;
  mandat: 'simple' | 'exclusif';
  photos: number;
  premiereParution: string | null;
  description: string;
  /** Seconds after midnight its crawler passes. */
  heure: number;
  etats: Etat[];
}

const CLASSES: Classe[] = ['A', 'B', 'C', 'D', 'E', 'F', 'G'];
const POIDS_CLASSES = [2, 6, 16, 30, 24, 13, 9];
const CONSO: Record<Classe, number> = { A: 60, B: 95, C: 150, D: 215, E: 290, F: 375, G: 470 };

const PHRASES_APPARTEMENT = [
  'Séjour lumineux donnant sur un balcon exposé sud-ouest.',
  'Cuisine indépendante aménagée et équipée, cellier attenant.',
  'Double vitrage, volets roulants électriques, chauffage individuel au gaz.',
  'Résidence sécurisée avec gardien, digicode et interphone.',
  'Proche des commerces, des écoles et des transports en commun, à quelques minutes à pied du centre.',
  'Parquet ancien, moulures et cheminée décorative dans le séjour.',
  'Cave et place de stationnement en sous-sol complètent ce bien.',
  'Copropriété bien entretenue, ravalement récent, faibles charges.',
  'Salle d’eau avec douche à l’italienne, WC séparés.',
];
const PHRASES_MAISON = [
  'Pièce de vie traversante ouverte sur une terrasse et le jardin arboré.',
  'Garage attenant avec porte motorisée, atelier et buanderie.',
  'Chauffage par pompe à chaleur, production d’eau chaude par ballon thermodynamique.',
  'Au calme d’une impasse, à proximité des écoles et des commerces du bourg.',
  'Suite parentale au rez-de-chaussée avec dressing et salle d’eau.',
  'Combles aménageables offrant une surface supplémentaire.',
  'Assainissement collectif, toiture refaite récemment.',
  'Cuisine équipée ouverte sur le séjour, cellier.',
];
const ETATS_TEXTE = ['', '', '', ' Bien à rénover, travaux à prévoir.', ' Entièrement rénové, prestations soignées.'];

function description(rng: Rng, a: Omit<Annonce, 'description' | 'etats' | 'photos' | 'premiereParution' | 'heure'>) {
  const phrases = a.type === 'appartement' ? PHRASES_APPARTEMENT : PHRASES_MAISON;
  const n = 2 + rng.int(6);
  const corps = Array.from({ length: n }, () => rng.pick(phrases)).join(' ');
  const tete =
    a.type === 'appartement'
      ? `À ${a.lieu.commune.nom}, appartement de ${a.pieces} pièces (${a.surface} m²) ${a.etage === 0 ? 'en rez-de-chaussée' : `au ${a.etage}e étage`}, ${a.chambres} chambre(s).`
      : `À ${a.lieu.commune.nom}, maison de ${a.pieces} pièces (${a.surface} m²) sur un terrain de ${a.terrain ?? 0} m², ${a.chambres} chambre(s).`;
  const texte = `${tete} ${corps}${rng.pick(ETATS_TEXTE)}`;
  if (a.vendeur.genre === 'pro') return `${texte} ${a.vendeur.nom} vous accompagne : ${a.vendeur.telephone}.`;
  // A private seller writes their contacts into the text: the importer masks them.
  return `${texte} Vente de particulier à particulier, appelez le ${a.vendeur.telephone} ou écrivez à ${a.vendeur.email}.`;
}

/** A listing's life: listed, seen weekly; drops, a rise, a suspension, withdrawn at its end, sometimes back. */
function vie(rng: Rng, debut: number, prix: number, heure: number): Etat[] {
  const etats: Etat[] = [{ t: debut + heure, prix, statut: 'actif' }];
  const a = (jours: number, h = heure) => debut + jours * JOUR + h;
  const duree = Math.round(Math.min(400, Math.max(10, Math.exp(Math.log(70) + 0.7 * normal(rng)))));
  let courant = prix;
  const evenement = weighted(rng, [
    ['rien', 45],
    ['baisses', 35],
    ['hausse', 5],
    ['masque', 5],
    ['reactivation', 10],
  ] as const);
  if (evenement === 'baisses' && duree > 20) {
    const j = 14 + rng.int(Math.min(duree - 15, 45));
    courant = arrondiPrix(courant * (1 - rng.between(0.03, 0.08)));
    etats.push({ t: a(j, 9 * 3600), prix: courant, statut: 'actif' });
    // A crawler that passes twice the day of a drop: one event.
    if (rng.next() < 0.1) etats.push({ t: a(j, 17 * 3600), prix: courant, statut: 'actif' });
    if (rng.next() < 0.4 && j + 21 < duree) {
      courant = arrondiPrix(courant * 0.96);
      etats.push({
        t: a(j + 21 + rng.int(Math.max(1, Math.min(25, duree - j - 21))), 9 * 3600),
        prix: courant,
        statut: 'actif',
      });
    }
  } else if (evenement === 'hausse' && duree > 15) {
    courant = arrondiPrix(courant * 1.03);
    etats.push({ t: a(10 + rng.int(duree - 14), 10 * 3600), prix: courant, statut: 'actif' });
  } else if (evenement === 'masque' && duree > 25) {
    const j = 14 + rng.int(duree - 24);
    etats.push({ t: a(j, 8 * 3600), prix: courant, statut: 'masque' });
    etats.push({ t: a(j + 7, 8 * 3600), prix: courant, statut: 'actif' });
  }
  etats.sort((x, y) => x.t - y.t);
  etats.push({ t: a(duree, 8 * 3600), prix: courant, statut: 'retire' });
  if (evenement === 'reactivation') {
    const j = duree + 14 + rng.int(17);
    etats.push({ t: a(j, 8 * 3600), prix: arrondiPrix(courant * 0.97), statut: 'actif' });
    etats.push({
      t: a(j + Math.round(Math.exp(Math.log(40) + 0.6 * normal(rng))), 8 * 3600),
      prix: arrondiPrix(courant * 0.97),
      statut: 'retire',
    });
  }
  return etats;
}

/** When a listing's crawler sees it: each change, and every week between changes while it is not withdrawn. */
function vues(a: Annonce): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  a.etats.forEach((e, i) => {
    if (e.t >= FIN) return;
    out.push([e.t, i]);
    if (e.statut === 'retire') return;
    const suivant = Math.min(a.etats[i + 1]?.t ?? FIN, FIN);
    const jour = Math.floor(e.t / JOUR) * JOUR;
    for (let t = jour + 7 * JOUR + a.heure; t < suivant; t += 7 * JOUR) out.push([t, i]);
  });
  return out;
}

interface Genere {
  annonces: Annonce[];
  /** [time, listing, state] of every snapshot, in time order. */
  vues: Array<[number, number, number]>;
  biens: number;
  doublonsPortail: number;
  doublonsAgence: number;
  particuliers: number;
  prosAvecSiren: number;
  prosSansSiren: number;
  parCommune: Map<string, number>;
  parDepartement: Map<string, number>;
}

function generer(rng: Rng, lieux: Lieu[], cible: number): Genere {
  const parDepartement = agences(rng, lieux);
  const cumul: number[] = [];
  let total = 0;
  for (const l of lieux) cumul.push((total += l.poids));
  const tirerLieu = () => {
    const x = rng.next() * total;
    let lo = 0;
    let hi = cumul.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumul[mid] < x) lo = mid + 1;
      else hi = mid;
    }
    return lieux[lo];
  };
  const sequence = { portal_a: 0, portal_b: 0, portal_c: 0 };
  const identifiant = (p: Portail) =>
    p === 'portal_a'
      ? String(9_000_001 + sequence.portal_a++)
      : p === 'portal_b'
        ? `b${(0x5a0000 + sequence.portal_b++).toString(16)}`
        : String(7_000_001 + sequence.portal_c++);
  const out: Genere = {
    annonces: [],
    vues: [],
    biens: 0,
    doublonsPortail: 0,
    doublonsAgence: 0,
    particuliers: 0,
    prosAvecSiren: 0,
    prosSansSiren: 0,
    parCommune: new Map(),
    parDepartement: new Map(),
  };
  const ajouter = (a: Annonce) => {
    const i = out.annonces.push(a) - 1;
    for (const [t, e] of vues(a)) {
      if (out.vues.length >= cible) break;
      out.vues.push([t, i, e]);
    }
    if (a.vendeur.genre === 'particulier') out.particuliers++;
    else if (a.vendeur.siren) out.prosAvecSiren++;
    else out.prosSansSiren++;
    const c = a.lieu.commune;
    out.parCommune.set(c.code, (out.parCommune.get(c.code) ?? 0) + 1);
    out.parDepartement.set(c.departement, (out.parDepartement.get(c.departement) ?? 0) + 1);
  };
  while (out.vues.length < cible) {
    const lieu = tirerLieu();
    const c = lieu.commune;
    const type = rng.next() < (lieu.urbaine ? 0.8 : 0.25) ? 'appartement' : 'maison';
    const surface =
      type === 'appartement'
        ? Math.round(Math.min(200, Math.max(12, 55 * Math.exp(0.4 * normal(rng)))) * 10) / 10
        : Math.round(Math.min(400, Math.max(45, 110 * Math.exp(0.3 * normal(rng)))));
    const pieces = Math.max(1, Math.min(9, Math.round(surface / (type === 'appartement' ? 22 : 25))));
    const dpe = weighted(
      rng,
      CLASSES.map((k, i) => [k, POIDS_CLASSES[i]] as const),
    );
    const neuf = rng.next() < 0.05;
    const prix = arrondiPrix(
      lieu.prixM2 * (type === 'maison' ? 0.85 : 1) * (dpe >= 'F' ? 0.88 : 1) * Math.exp(0.15 * normal(rng)) * surface,
    );
    const precision = weighted(rng, [
      ['adresse', 55],
      ['approchee', 35],
      ['centre_commune', 10],
    ] as const);
    // Within ~2 km of the centre; approximate positions are off by up to ~80 m.
    const lat = lieu.lat + (precision === 'centre_commune' ? 0 : rng.between(-0.018, 0.018));
    const lon = lieu.lon + (precision === 'centre_commune' ? 0 : rng.between(-0.025, 0.025));
    const pro = rng.next() < 0.65;
    let vendeur: Vendeur;
    if (pro) {
      const agence = rng.pick(parDepartement.get(c.departement)!);
      // Half the listings give the agency's SIREN; otherwise the importer looks its name up in SIRENE.
      const avecSiren = rng.next() < 0.5;
      vendeur = { ...agence, siren: avecSiren ? agence.siren : null };
    } else {
      vendeur = {
        genre: 'particulier',
        nom: null,
        enseigne: null,
        siren: null,
        codePostal: null,
        telephone: telephone(rng, true),
        email: `vendeur.${out.annonces.length}@exemple.fr`,
      };
    }
    const portail = weighted(rng, [
      ['portal_a', 50],
      ['portal_b', 30],
      ['portal_c', 20],
    ] as const);
    const etage = type === 'appartement' ? rng.int(7) : null;
    const base = {
      portail,
      identifiant: identifiant(portail),
      lieu,
      codePostal: rng.pick(c.codesPostaux),
      precision,
      lat: Math.round(lat * 1e6) / 1e6,
      lon: Math.round(lon * 1e6) / 1e6,
      type,
      neuf,
      surface,
      pieces,
      chambres: Math.max(0, pieces - 1),
      etage,
      nbEtages: etage === null ? null : etage + rng.int(4),
      terrain: type === 'maison' ? 150 + rng.int(1500) : null,
      dpe,
      conso: Math.round(CONSO[dpe] * rng.between(0.85, 1.15)),
      annee: neuf ? 2026 : 1900 + rng.int(120),
      vendeur,
      mandat: rng.next() < 0.3 ? 'exclusif' : 'simple',
    } as const;
    // Listed on a day of the year, or up to two months before it: a listing online when the year starts is first seen
    // by the year's first crawl, in the state it is in then.
    const debut = DEBUT + (rng.int(JOURS + 60) - 60) * JOUR;
    const heure = (6 + rng.int(14)) * 3600 + rng.int(60) * 60;
    let etats = vie(rng, debut, prix, heure);
    if (debut < DEBUT) {
      const alors = etats.filter((e) => e.t < DEBUT).at(-1)!;
      etats = etats.filter((e) => e.t >= DEBUT);
      if (alors.statut !== 'retire') etats.unshift({ ...alors, t: DEBUT + 5 * 3600 });
    }
    if (etats.length === 0) continue;
    const annonce: Annonce = {
      ...base,
      etats,
      heure,
      photos: rng.int(21),
      premiereParution: portail === 'portal_a' ? new Date(debut * 1000).toISOString().slice(0, 10) : null,
      description: description(rng, base),
    };
    out.biens++;
    ajouter(annonce);

    // The same dwelling elsewhere: on another portal at a price 1 % apart (one in five), or a house in the country by a
    // second agency on the same portal at 2 % (one in seven).
    const double =
      rng.next() < 0.2 ? 'portail' : !lieu.urbaine && type === 'maison' && rng.next() < 0.15 ? 'agence' : null;
    if (double && annonce.etats[0].statut === 'actif') {
      const autre: Portail =
        double === 'agence'
          ? portail
          : portail === 'portal_a'
            ? 'portal_b'
            : portail === 'portal_b'
              ? 'portal_c'
              : 'portal_a';
      const debut2 = annonce.etats[0].t + (2 + rng.int(19)) * JOUR;
      const alors = annonce.etats.filter((e) => e.t <= debut2).at(-1)!;
      const facteur = double === 'portail' ? 1.01 : 1.02;
      const heure2 = (6 + rng.int(14)) * 3600;
      const etats = [
        { ...alors, t: Math.floor(debut2 / JOUR) * JOUR + heure2 },
        ...annonce.etats.filter((e) => e.t > debut2),
      ].map((e) => ({ ...e, prix: arrondiPrix(e.prix * facteur) }));
      if (etats[0].statut !== 'actif' || etats[0].t >= FIN) continue;
      const agence2 = double === 'agence' ? rng.pick(parDepartement.get(c.departement)!) : null;
      const second: Annonce = {
        ...annonce,
        portail: autre,
        identifiant: identifiant(autre),
        vendeur: agence2 ?? annonce.vendeur,
        heure: heure2,
        etats,
        premiereParution: null,
      };
      second.description = description(rng, second);
      if (double === 'portail') out.doublonsPortail++;
      else out.doublonsAgence++;
      ajouter(second);
    }
  }
  out.vues.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  return out;
}

// ---------------------------------------------------------------------------------------------------------------------
// Snapshots as each portal writes them (the sandbox's spellings).
// ---------------------------------------------------------------------------------------------------------------------

function releve(a: Annonce, t: number, etat: Etat): object {
  const vu = new Date(t * 1000).toISOString().replace('.000Z', 'Z');
  const statut = etat.statut;
  const hote = a.portail.replace('_', '-');
  const lien = `https://www.${hote}.example/annonces/${a.identifiant}`;
  const photos = Array.from(
    { length: a.photos },
    (_, i) => `https://img.${hote}.example/${a.identifiant}/${i + 1}.jpg`,
  );
  const v = a.vendeur;
  const c = a.lieu.commune;
  if (a.portail === 'portal_b') {
    return {
      source: 'portal_b',
      listing_id: a.identifiant,
      url: lien,
      seen_at: vu,
      status: { actif: 'online', retire: 'removed', masque: 'under_review' }[statut],
      property_type: a.type === 'appartement' ? 'Apartment' : 'House',
      new_build: a.neuf,
      price: `${etat.prix.toLocaleString('fr-FR').replace(/\u202f/g, ' ')} €`,
      living_area: `${String(a.surface).replace('.', ',')} m²`,
      rooms: `T${a.pieces}`,
      bedrooms: a.chambres,
      floor: a.etage === 0 ? 'RDC' : a.etage,
      building_floors: a.nbEtages,
      land_area: a.terrain === null ? undefined : `${a.terrain} m²`,
      energy_class: a.dpe,
      energy_consumption: a.conso,
      year_built: a.annee,
      features:
        a.type === 'maison'
          ? ['garden', 'garage']
          : a.etage !== null && a.etage >= 3
            ? ['elevator', 'cellar']
            : ['cellar'],
      postcode: a.codePostal,
      city: c.nom,
      location: { lat: a.lat, lng: a.lon },
      accuracy: { adresse: 'rooftop', approchee: 'approximate', centre_commune: 'city' }[a.precision],
      seller_type: v.genre === 'pro' ? 'agency' : 'private',
      seller:
        v.genre === 'pro'
          ? { name: v.nom, brand: v.enseigne, siren: v.siren, phone: v.telephone, email: v.email, mandate: a.mandat }
          : undefined,
      title: `${a.type === 'appartement' ? 'Apartment' : 'House'} ${a.pieces} rooms ${a.surface} m²`,
      description: a.description,
      images: photos,
    };
  }
  if (a.portail === 'portal_c') {
    return {
      portail: 'portal_c',
      identifiant: Number(a.identifiant),
      date_releve: t,
      etat: { actif: 'en_ligne', retire: 'expiree', masque: 'suspendue' }[statut],
      nature: a.type,
      programme_neuf: a.neuf,
      prix_eur: etat.prix,
      surface_m2: a.surface,
      nb_pieces: `${a.pieces} pièces`,
      nb_chambres: a.chambres,
      niveau: a.etage,
      surface_terrain: a.terrain,
      classe_energie: a.dpe,
      dpe_valeur: a.conso,
      cp: a.codePostal,
      code_insee: c.code,
      lat: a.lat,
      lon: a.lon,
      position_precision: a.precision,
      type_vendeur: v.genre === 'pro' ? 'professionnel' : 'particulier',
      agence_nom: v.genre === 'pro' ? v.nom : undefined,
      siren: v.genre === 'pro' ? (v.siren ?? undefined) : undefined,
      telephone: v.genre === 'pro' ? v.telephone : undefined,
      texte: a.description,
      photo_urls: photos,
      lien,
    };
  }
  return {
    portail: 'portal_a',
    id: a.identifiant,
    lien,
    vu_le: vu,
    statut,
    type: a.type,
    neuf_ancien: a.neuf ? 'neuf' : 'ancien',
    prix: etat.prix,
    surface: a.surface,
    pieces: a.pieces,
    chambres: a.chambres,
    etage: a.etage,
    nb_etages: a.nbEtages,
    terrain_m2: a.terrain,
    dpe: { classe: a.dpe, valeur: a.conso },
    annee_construction: a.annee,
    equipements: a.type === 'maison' ? { jardin: true, garage: true } : { ascenseur: (a.etage ?? 0) >= 3, cave: true },
    details_portail:
      a.type === 'appartement'
        ? { charges_copro_annuelles: Math.round(a.surface * 30), taxe_fonciere: Math.round(a.surface * 14) }
        : { taxe_fonciere: Math.round(a.surface * 11) },
    code_postal: a.codePostal,
    insee: c.code,
    position: { lat: a.lat, lon: a.lon },
    precision: a.precision,
    type_vendeur: v.genre,
    annonceur:
      v.genre === 'pro'
        ? {
            nom: v.nom,
            enseigne: v.enseigne,
            siren: v.siren,
            mandat: a.mandat,
            telephone: v.telephone,
            email: v.email,
            code_postal: v.codePostal,
          }
        : undefined,
    titre: `${a.type === 'appartement' ? 'Appartement' : 'Maison'} ${a.pieces} pièces ${a.surface} m²`,
    description: a.description,
    photos,
    premiere_parution: a.premiereParution,
  };
}

/** Writes the file: the snapshots in time order, `horsLogement` parkings and plots of land spread among them. */
async function ecrireFichier(file: string, g: Genere, rng: Rng, horsLogement: number): Promise<number> {
  const out = createWriteStream(file);
  let buffer = '';
  let ecrits = 0;
  for (const [k, [t, i, e]] of g.vues.entries()) {
    const a = g.annonces[i];
    buffer += JSON.stringify(releve(a, t, a.etats[e])) + '\n';
    if (Math.floor(((k + 1) * horsLogement) / g.vues.length) > ecrits) {
      ecrits++;
      buffer +=
        JSON.stringify({
          portail: 'portal_a',
          id: `P${ecrits}`,
          vu_le: new Date(t * 1000).toISOString(),
          type: rng.pick(['parking', 'terrain']),
          prix: 5000 + rng.int(80_000),
          insee: a.lieu.commune.code,
        }) + '\n';
    }
    if (buffer.length > 1 << 20) {
      if (!out.write(buffer)) await once(out, 'drain');
      buffer = '';
    }
  }
  out.write(buffer);
  out.end();
  await once(out, 'finish');
  return (await stat(file)).size;
}

// ---------------------------------------------------------------------------------------------------------------------
// Processes: CPU, waits and memory (Linux: /proc).
// ---------------------------------------------------------------------------------------------------------------------

/** A process's name, parent and fields of /proc/<pid>/stat from the state on (0-based: 0 name, 1 state, 2 ppid…). */
function statDe(pid: number): string[] | null {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return [s.slice(s.indexOf('(') + 1, s.lastIndexOf(')')), ...s.slice(s.lastIndexOf(')') + 2).split(' ')];
  } catch {
    return null;
  }
}

function processus(): Map<number, string[]> {
  const out = new Map<number, string[]>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const s = statDe(Number(d));
    if (s) out.set(Number(d), s);
  }
  return out;
}

/** The service's PostgreSQL server: the `postgres` process among the service's descendants whose parent is not one. */
function postmasterDe(racine: number): number | null {
  const tous = processus();
  const descend = (pid: number) => {
    for (let p = Number(tous.get(pid)?.[2]); p; p = Number(tous.get(p)?.[2])) if (p === racine) return true;
    return false;
  };
  for (const [pid, s] of tous) {
    if (s[0] === 'postgres' && tous.get(Number(s[2]))?.[0] !== 'postgres' && descend(pid)) return pid;
  }
  return null;
}

/** The service's worker: the Node processes it started (the api runs in the service's own). */
const workerDe = (service: number) => () =>
  [...processus()]
    .filter(([pid, s]) => {
      if (Number(s[2]) !== service) return false;
      try {
        return readlinkSync(`/proc/${pid}/exe`) === process.execPath;
      } catch {
        return false;
      }
    })
    .map(([pid]) => pid);

/** The server and its backends. */
const postgres = (postmaster: number | null) => () =>
  postmaster === null
    ? []
    : [...processus()].filter(([pid, s]) => pid === postmaster || Number(s[2]) === postmaster).map(([pid]) => pid);

/** CPU seconds of processes so far, the children they reaped included (a backend that ended, in its server's). */
function cpuDe(pids: number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    const s = statDe(pid);
    if (s) ticks += Number(s[12]) + Number(s[13]) + Number(s[14]) + Number(s[15]);
  }
  return ticks / 100;
}

/** Seconds on a CPU and waiting for one (run queue) of a process, its threads summed. */
function schedstat(pid: number): [number, number] | null {
  let run = 0;
  let wait = 0;
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const [r, w] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ').map(Number);
      run += r;
      wait += w;
    }
  } catch {
    return null;
  }
  return [run / 1e9, wait / 1e9];
}

/**
 * Follows the time on a CPU and waiting for one of a changing set of processes, sampled every half second: a process
 * there at the start counts from then, one that comes later from its start (one that ends loses its last half second).
 */
function suivre(pids: () => number[]) {
  const initiaux = new Set(pids());
  const vus = new Map<number, { debut: [number, number]; fin: [number, number] }>();
  const echantillon = () => {
    for (const pid of pids()) {
      const s = schedstat(pid);
      if (!s) continue;
      const v = vus.get(pid);
      if (v) v.fin = s;
      else vus.set(pid, { debut: initiaux.has(pid) ? s : [0, 0], fin: s });
    }
  };
  echantillon();
  const timer = setInterval(echantillon, 500);
  return {
    fin(): { cpuS: number; attenteS: number } {
      clearInterval(timer);
      echantillon();
      let cpuS = 0;
      let attenteS = 0;
      for (const v of vus.values()) {
        cpuS += v.fin[0] - v.debut[0];
        attenteS += v.fin[1] - v.debut[1];
      }
      return { cpuS, attenteS };
    },
  };
}

/**
 * Loaded into the importer with `--import` when profiling: times each statement it sends to PostgreSQL, from the call
 * to the rows parsed (round trip and execution), by its text; written as JSON to SONDE_SORTIE at exit.
 */
function sonde(): string {
  const pg = pathToFileURL(createRequire(import.meta.url).resolve('pg')).href;
  const code = `
import { writeFileSync } from 'node:fs';
const pg = (await import(${JSON.stringify(pg)})).default;
const query = pg.Client.prototype.query;
const stats = new Map();
pg.Client.prototype.query = function (config, values, callback) {
  const texte = typeof config === 'string' ? config : config && config.text;
  const cle = String(texte ?? '?').replace(/\\s+/g, ' ').trim().slice(0, 110);
  const t0 = performance.now();
  const noter = () => {
    const s = stats.get(cle) ?? [0, 0];
    s[0]++;
    s[1] += performance.now() - t0;
    stats.set(cle, s);
  };
  const args = [...arguments];
  const rappel = args.findIndex((a) => typeof a === 'function');
  if (rappel >= 0) {
    const f = args[rappel];
    args[rappel] = function (...r) { noter(); return f.apply(this, r); };
    return query.apply(this, args);
  }
  const r = query.apply(this, args);
  if (r && typeof r.then === 'function') r.then(noter, noter);
  return r;
};
process.on('exit', () => writeFileSync(process.env.SONDE_SORTIE, JSON.stringify([...stats])));
`;
  return `data:text/javascript,${encodeURIComponent(code)}`;
}

interface Execution {
  stdout: string;
  wallS: number;
  /** User + system CPU of the importer's process, in s. */
  cpuS: number;
  /** Its time waiting for a CPU (run queue), in s. */
  attenteS: number;
  /** Peak resident size of the importer's process, in MiB. */
  rssMio: number;
  pg: { cpuS: number; attenteS: number };
  /** CPU of the service's worker meanwhile (its loop that fans the journal's events out), in s. */
  workerCpuS: number;
}

/**
 * Runs the importers' CLI (`npm run import -- …` runs `node scripts/import.ts …`) in its own process, measured; under
 * the V8 profiler and the statements' probe when `profil` names a folder.
 */
async function importer(
  args: string[],
  env: NodeJS.ProcessEnv,
  postmaster: number | null,
  worker: () => number[],
  profil: string | null,
): Promise<Execution> {
  const root = path.resolve(import.meta.dirname, '..');
  const node = [
    ...(profil ? ['--cpu-prof', `--cpu-prof-dir=${profil}`, '--cpu-prof-interval=5000', '--import', sonde()] : []),
    'scripts/import.ts',
    ...args,
  ];
  const childEnv = profil ? { ...env, SONDE_SORTIE: path.join(profil, 'requetes.json') } : env;
  // /usr/bin/time when there is one: the peak RSS and the CPU of the process to its end.
  const time = existsSync('/usr/bin/time');
  const mesures = path.join(os.tmpdir(), `svc-bench-annonces-time-${process.pid}`);
  const pgCpu0 = cpuDe(postgres(postmaster)());
  const workerCpu0 = cpuDe(worker());
  const pgSuivi = suivre(postgres(postmaster));
  const t0 = performance.now();
  const child = time
    ? spawn('/usr/bin/time', ['-f', '%M %U %S', '-o', mesures, process.execPath, ...node], { cwd: root, env: childEnv })
    : spawn(process.execPath, node, { cwd: root, env: childEnv });
  const importeur = () => {
    if (!time) return [child.pid!];
    try {
      return readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8')
        .trim()
        .split(/\s+/)
        .filter(Boolean)
        .map(Number);
    } catch {
      return [];
    }
  };
  const suivi = suivre(importeur);
  let stdout = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => process.stderr.write(chunk));
  // Without /usr/bin/time: the process's own high-water mark and CPU, sampled.
  let hwm = 0;
  let cpu = 0;
  const sampler = setInterval(() => {
    if (time) return;
    try {
      hwm = Math.max(hwm, Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? 0));
      cpu = cpuDe([child.pid!]);
    } catch {
      // Ended meanwhile.
    }
  }, 200);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearInterval(sampler);
  const wallS = (performance.now() - t0) / 1000;
  const { attenteS } = suivi.fin();
  const pg = { cpuS: cpuDe(postgres(postmaster)()) - pgCpu0, attenteS: pgSuivi.fin().attenteS };
  const workerCpuS = cpuDe(worker()) - workerCpu0;
  const temps = time ? await readFile(mesures, 'utf8').finally(() => rm(mesures, { force: true })) : '';
  if (code !== 0) throw new Error(`import ${args.join(' ')} : code ${code}\n${stdout}`);
  if (time) {
    const [kib, user, sys] = temps.trim().split('\n').at(-1)!.split(' ').map(Number);
    hwm = kib;
    cpu = user + sys;
  }
  return { stdout, wallS, cpuS: cpu, attenteS, rssMio: hwm / 1024, pg, workerCpuS };
}

/**
 * Self time by function of a V8 CPU profile, the largest first, in seconds; only the samples taken between `de` and
 * `a` (µs of the monotonic clock, process.hrtime's) when they are given.
 */
function tempsParFonction(fichier: string, de = -Infinity, a = Infinity): Array<{ nom: string; s: number }> {
  const profil = JSON.parse(readFileSync(fichier, 'utf8')) as {
    nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number } }>;
    startTime: number;
    samples: number[];
    timeDeltas: number[];
  };
  const noeuds = new Map(profil.nodes.map((n) => [n.id, n.callFrame]));
  const racine = path.resolve(import.meta.dirname, '..') + '/';
  const temps = new Map<string, number>();
  let instant = profil.startTime;
  profil.samples.forEach((id, i) => {
    const dt = profil.timeDeltas[i] ?? 0;
    instant += dt;
    if (instant < de || instant > a) return;
    const f = noeuds.get(id)!;
    const source = f.url
      .replace(/^file:\/\//, '')
      .replace(racine, '')
      .replace(/^.*node_modules\//, '');
    const nom = f.url.startsWith('data:')
      ? `${f.functionName} (the bench's probe of statements)`
      : f.url
        ? `${f.functionName || '(anonyme)'} ${source}:${f.lineNumber + 1}`
        : f.functionName;
    temps.set(nom, (temps.get(nom) ?? 0) + dt);
  });
  return [...temps].sort((x, y) => y[1] - x[1]).map(([nom, us]) => ({ nom, s: us / 1e6 }));
}

// ---------------------------------------------------------------------------------------------------------------------
// The load generator.
// ---------------------------------------------------------------------------------------------------------------------

interface LoadSpec {
  url: string;
  cle: string;
  /** The filters, as a query string without `limite` and `curseur`. */
  filtres: string;
  /** `parcours`: one reader from the start to the end of the journal, its cursors returned; `charge`: `lecteurs`
   * readers at once, each from its own cursor, reading the journal again from its start when they reach its end. */
  mode: 'parcours' | 'charge';
  requetes: number;
  departs: Array<string | null>;
}

interface LoadResult {
  latences: number[];
  octets: number[];
  evenements: number;
  statuts: Record<string, number>;
  dureeS: number;
  curseurs: string[];
}

async function charger(spec: LoadSpec): Promise<LoadResult> {
  const r: LoadResult = { latences: [], octets: [], evenements: 0, statuts: {}, dureeS: 0, curseurs: [] };
  let envoyees = 0;
  const debut = performance.now();
  const lecteur = async (depart: string | null) => {
    let curseur = depart;
    while (envoyees < spec.requetes) {
      envoyees++;
      const q = `${spec.filtres ? `${spec.filtres}&` : ''}limite=${LIMITE}${curseur ? `&curseur=${encodeURIComponent(curseur)}` : ''}`;
      const t0 = performance.now();
      const res = await fetch(`${spec.url}/api/v1/flux/annonces?${q}`, {
        headers: { authorization: `Bearer ${spec.cle}` },
      });
      const corps = await res.arrayBuffer();
      r.latences.push(performance.now() - t0);
      r.octets.push(corps.byteLength);
      r.statuts[res.status] = (r.statuts[res.status] ?? 0) + 1;
      if (res.status !== 200) {
        if (r.statuts[res.status] <= 3) console.error(`${res.status} ${new TextDecoder().decode(corps).slice(0, 300)}`);
        continue;
      }
      // What the reader needs of the page, found in its text: a parse of the whole JSON would take CPU from the
      // service on this machine's two cores.
      const texte = new TextDecoder().decode(corps);
      r.evenements += texte.split('"genre":"').length - 1;
      const aJour = /"a_jour":true/.test(texte);
      const suivant = /"curseur_suivant":"([^"]+)"/.exec(texte.slice(texte.lastIndexOf('"curseur_suivant"')))![1];
      if (spec.mode === 'parcours') {
        r.curseurs.push(suivant);
        if (aJour) break;
      }
      curseur = aJour ? null : suivant;
    }
  };
  await Promise.all(spec.departs.map(lecteur));
  r.dureeS = (performance.now() - debut) / 1000;
  return r;
}

function enfant(spec: LoadSpec): Promise<LoadResult> {
  const proc = spawn(process.execPath, [import.meta.filename, '--load'], { stdio: ['pipe', 'pipe', 'inherit'] });
  proc.stdin.end(JSON.stringify(spec));
  let out = '';
  proc.stdout.on('data', (chunk) => (out += chunk));
  return new Promise((resolve, reject) =>
    proc.once('exit', (code) =>
      code === 0 ? resolve(JSON.parse(out) as LoadResult) : reject(new Error(`générateur de charge : code ${code}`)),
    ),
  );
}

// ---------------------------------------------------------------------------------------------------------------------
// The benchmark.
// ---------------------------------------------------------------------------------------------------------------------

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
const loadAverage = () =>
  os
    .loadavg()
    .map((n) => n.toFixed(1))
    .join(' / ');
const en = (n: number) => n.toLocaleString('en');

interface Mesure extends LoadResult {
  /** CPU of the service's process (the api) and of PostgreSQL during the run, and the api's wait for a CPU, in s. */
  apiCpuS: number;
  apiAttenteS: number;
  pgCpuS: number;
}

async function main() {
  // Profiles outside the service's DATA_DIR, which goes with its stop (the service writes its own then).
  const profilDir = PROFIL ? await mkdtemp(path.join(os.tmpdir(), 'svc-bench-annonces-profil-')) : null;
  try {
    await mesurer(profilDir);
  } finally {
    if (profilDir) await rm(profilDir, { recursive: true, force: true });
  }
}

async function mesurer(profilDir: string | null) {
  const chargeAvant = loadAverage();
  const rng = seededRandom(SEED);
  const racine = path.resolve(import.meta.dirname, '..');
  const service = await startService(
    profilDir ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${profilDir}/service --cpu-prof-interval=5000` } : {},
  );
  const dataDir = path.dirname(service.logFile);
  let lectures: [bigint, bigint] = [0n, 0n];
  let resultat: (() => Promise<void>) | null = null;
  try {
    let t = performance.now();
    const lieux = territoire(rng);
    const horsLogement = Math.round(SNAPSHOTS * PART_HORS_LOGEMENT);
    const g = generer(rng, lieux, SNAPSHOTS - horsLogement);
    const file = path.join(dataDir, 'annonces-bench.jsonl');
    const bytes = await ecrireFichier(file, g, rng, horsLogement);
    // Kept for experiments by hand (the service's folder goes with it).
    if (process.env.BENCH_ANNONCES_COPIE) await copyFile(file, process.env.BENCH_ANNONCES_COPIE);
    const lignes = g.vues.length + horsLogement;
    const generationS = (performance.now() - t) / 1000;
    console.log(
      `fichier : ${lignes} relevés, ${g.annonces.length} annonces, ${(bytes / 2 ** 20).toFixed(0)} Mio en ${generationS.toFixed(1)} s`,
    );
    const cliEnv = service.cliEnv;
    const postmaster = postmasterDe(service.pid);
    const worker = workerDe(service.pid);
    t = performance.now();
    await promisify(execFile)(process.execPath, ['scripts/import.ts', 'communes', '-'], { cwd: racine, env: cliEnv });
    const communesS = (performance.now() - t) / 1000;
    const chargeImport = loadAverage();
    const importProfil = profilDir ? path.join(profilDir, 'import') : null;
    if (importProfil) await mkdir(importProfil);
    const premier = await importer(['annonces', file], cliEnv, postmaster, worker, importProfil);
    console.log(premier.stdout);
    const second = await importer(['annonces', file], cliEnv, postmaster, worker, null);
    console.log(second.stdout);
    const chargeApresImport = loadAverage();

    // The feed, with a Data-tier key (every scope but lien_origine: `flux` included) and credits for every event read.
    const org = await service.organisation({ acces: 'data' });
    await service.admin('POST', `/organisations/${org.id}/credits`, { credits: 1_000_000_000, motif: 'bench' });
    const pg = postgres(postmaster);
    const lire = async (filtres: string, mode: LoadSpec['mode'], requetes: number, departs: Array<string | null>) => {
      const api0 = cpuDe([service.pid]);
      const pg0 = cpuDe(pg());
      const api = suivre(() => [service.pid]);
      const r = await enfant({ url: service.url, cle: org.cle, filtres, mode, requetes, departs });
      return {
        ...r,
        apiCpuS: cpuDe([service.pid]) - api0,
        apiAttenteS: api.fin().attenteS,
        pgCpuS: cpuDe(pg()) - pg0,
      } satisfies Mesure;
    };
    const chargeAvantLecture = loadAverage();
    await lire('', 'charge', WARMUP, [null]);
    lectures = [process.hrtime.bigint() / 1000n, 0n];
    const parcours = await lire('', 'parcours', 1_000_000, [null]);
    const pages = parcours.curseurs.length;
    const departsDe = (c: number) =>
      Array.from({ length: c }, (_, i) => (i === 0 ? null : parcours.curseurs[Math.floor((i * pages) / c) - 1]));
    const concurrents: Array<[number, Mesure]> = [];
    for (const c of CONCURRENCES) concurrents.push([c, await lire('', 'charge', Math.max(pages, 100), departsDe(c))]);
    const premierDe = <K>(m: Map<K, number>) => [...m].sort((x, y) => y[1] - x[1])[0]![0];
    const commune = premierDe(g.parCommune);
    const departement = premierDe(g.parDepartement);
    const nomCommune = lieux.find((l) => l.commune.code === commune)!.commune.nom;
    const filtres: Array<[string, string]> = [
      [`insee=${commune}`, `\`insee=${commune}\` (${nomCommune}: the commune with the most listings)`],
      [`departement=${departement}`, `\`departement=${departement}\` (the département with the most listings)`],
      ['genres=baisse_prix,hausse_prix', '`genres=baisse_prix,hausse_prix`'],
      [
        `departement=${departement}&genres=retrait,reactivation`,
        `\`departement=${departement}&genres=retrait,reactivation\``,
      ],
    ];
    const filtrees: Array<[string, Mesure]> = [];
    for (const [q, nom] of filtres) filtrees.push([nom, await lire(q, 'charge', REQUETES_FILTREES, [null])]);
    lectures[1] = process.hrtime.bigint() / 1000n;
    const chargeApres = loadAverage();

    // Written once the service has stopped, when it has written its profile.
    resultat = async () => {
      const ms = (x: number) => x.toFixed(1);
      const ligne = (nom: string, c: number, r: Mesure) => {
        const s = [...r.latences].sort((x, y) => x - y);
        const o = [...r.octets].sort((x, y) => x - y);
        const n = s.length;
        return `| ${nom} | ${c} | ${n} | ${(r.evenements / n).toFixed(0)} | ${(n / r.dureeS).toFixed(1)} | ${en(Math.round(r.evenements / r.dureeS))} | ${ms(percentile(s, 50))} | **${ms(percentile(s, 95))}** | ${ms(percentile(s, 99))} | ${ms(s.at(-1)!)} | ${((r.apiCpuS / n) * 1000).toFixed(0)} / ${((r.pgCpuS / n) * 1000).toFixed(0)} / ${((r.apiAttenteS / n) * 1000).toFixed(0)} | ${(percentile(o, 50) / 1024).toFixed(0)} / ${(o.at(-1)! / 1024).toFixed(0)} | ${Object.entries(
          r.statuts,
        )
          .map(([k, x]) => `${k}: ${x}`)
          .join(', ')} |`;
      };
      const champ = (out: string, nom: string) =>
        new RegExp(`^\\s*${nom}\\s*: (.*)$`, 'm').exec(out)?.[1]?.trim() ?? '?';
      const evenements = (out: string) => Number(/^\s*événements : (\d+)/m.exec(out)?.[1] ?? NaN);
      const ecrits = evenements(premier.stdout);
      const rate = (e: Execution) => en(Math.round(lignes / e.wallS));
      const cpu = (e: Execution) =>
        `${e.cpuS.toFixed(0)} s / ${e.pg.cpuS.toFixed(0)} s / ${e.workerCpuS.toFixed(0)} s | ${e.attenteS.toFixed(0)} s / ${e.pg.attenteS.toFixed(0)} s`;
      const profilImport = importProfil
        ? tempsParFonction(
            path.join(
              importProfil,
              readdirSync(importProfil).find((f) => f.endsWith('.cpuprofile'))!,
            ),
          )
        : null;
      const requetes = importProfil
        ? (
            JSON.parse(readFileSync(path.join(importProfil, 'requetes.json'), 'utf8')) as Array<
              [string, [number, number]]
            >
          )
            .map(([sql, [n, msTotal]]) => ({ sql, n, s: msTotal / 1000 }))
            .sort((x, y) => y.s - x.s)
        : null;
      const serviceProfil = profilDir
        ? readdirSync(path.join(profilDir, 'service')).find((f) => f.includes(`.${service.pid}.`))
        : undefined;
      const profilLectures = serviceProfil
        ? tempsParFonction(path.join(profilDir!, 'service', serviceProfil), Number(lectures[0]), Number(lectures[1]))
        : null;
      const tableau = (titre: string, lignesProfil: Array<{ nom: string; s: number }>, n = 15) => {
        const total = lignesProfil.reduce((x, f) => x + f.s, 0);
        return [
          titre.replace('TOTAL', total.toFixed(0)),
          '',
          '| function | self s | share |',
          '| --- | --- | --- |',
          ...lignesProfil
            .slice(0, n)
            .map(
              (f) =>
                `| \`${f.nom.replace(/\|/g, '\\|')}\` | ${f.s.toFixed(1)} | ${((f.s / total) * 100).toFixed(1)} % |`,
            ),
          '',
        ];
      };
      await writeSection(
        'Listings and event feed',
        [
          `Machine: ${machine()}; the service as \`npm start\` runs it (bench/service.ts: embedded PostgreSQL 18, Temporal dev server, worker, logs to a file). A shared machine (a fuzzing campaign may run beside): load average (1 / 5 / 15 min) ${chargeAvant} at the start, ${chargeImport} before the imports, ${chargeApresImport} after them, ${chargeAvantLecture} before the reads, ${chargeApres} after.${PROFIL ? " Run with BENCH_ANNONCES_PROFIL=1: the first import and the service under the V8 profiler (a sample every 5 ms), the importer's statements timed." : ''}`,
          '',
          `Generated JSON Lines file (seed ${SEED}; the format of domain/annonces/format.ts in the sandbox's three portal spellings): **${en(lignes)} snapshots**, ${(bytes / 2 ** 20).toFixed(0)} MiB, a year (November 2025 to October 2026) in time order, over the ${lieux.length} most populated communes of metropolitan France (listings in proportion to population, made-up centres). ${en(g.annonces.length)} listings of ${en(g.biens)} dwellings (${en(g.doublonsPortail)} also on a second portal at +1 %, ${en(g.doublonsAgence)} country houses by a second agency at +2 %), each seen weekly by its portal's crawler while online (${(g.vues.length / g.annonces.length).toFixed(1)} snapshots a listing): 35 % with a price drop (10 % of drops seen twice that day, 40 % dropped again), 5 % a rise, 5 % suspended a week, every listing withdrawn at the end of its life (median 70 days) and 10 % back online later; sellers: ${en(g.particuliers)} private (contacts in the text), ${en(g.prosAvecSiren)} agencies giving their SIREN, ${en(g.prosSansSiren)} naming themselves only (looked up in SIRENE, empty here); ${horsLogement} parkings and plots (rejected). Generated in ${generationS.toFixed(1)} s. The communes imported first (\`npm run import -- communes -\`, ${communesS.toFixed(1)} s); no BAN, so the attachment of a listing given at its address looks in an empty table.`,
          '',
          `\`npm run import -- annonces <fichier>\` (what it runs, \`node scripts/import.ts\`, in a process of its own against the running service's database; ${existsSync('/usr/bin/time') ? 'its CPU and peak RSS by /usr/bin/time' : 'its CPU and peak RSS sampled in /proc'}; on-CPU and run-queue times from /proc; PostgreSQL's are its server's and every backend's, the worker's too, whose loop fans the journal's new events out every second):`,
          '',
          "| import | wall | snapshots/s | CPU importer / PostgreSQL / service's worker | waiting for a CPU, importer / PostgreSQL | peak RSS | written |",
          '| --- | --- | --- | --- | --- | --- | --- |',
          `| first, into an empty journal | ${premier.wallS.toFixed(1)} s | **${rate(premier)}** | ${cpu(premier)} | ${premier.rssMio.toFixed(0)} MiB | ${champ(premier.stdout, 'annonces')}; ${champ(premier.stdout, 'biens')}; **${en(ecrits)} events** (${champ(premier.stdout, 'événements').replace(/^\d+ \((.*)\)$/, '$1')}); ${champ(premier.stdout, 'rejetés')} rejected |`,
          `| the same file again | ${second.wallS.toFixed(1)} s | ${rate(second)} | ${cpu(second)} | ${second.rssMio.toFixed(0)} MiB | ${champ(second.stdout, 'annonces')}; **${evenements(second.stdout) === 0 ? 'no event' : `${evenements(second.stdout)} EVENTS (not idempotent)`}** |`,
          '',
          ...(requetes
            ? [
                `The first import's statements (timed in the importer from the call to the rows read: round trip and execution; ${en(requetes.reduce((x, q) => x + q.n, 0))} statements, ${requetes.reduce((x, q) => x + q.s, 0).toFixed(0)} s of its ${premier.wallS.toFixed(0)} s):`,
                '',
                '| statement | calls | s | ms a call |',
                '| --- | --- | --- | --- |',
                ...requetes
                  .slice(0, 12)
                  .map(
                    (q) =>
                      `| \`${q.sql.replace(/\|/g, '\\|')}…\` | ${en(q.n)} | ${q.s.toFixed(1)} | ${((q.s / q.n) * 1000).toFixed(2)} |`,
                  ),
                '',
              ]
            : []),
          ...(profilImport
            ? tableau(
                "Where the first import's process spends its time (V8 profile, self time by function, TOTAL s sampled; `(idle)`: waiting, for PostgreSQL's answers or for a CPU):",
                profilImport,
              )
            : []),
          `\`GET /api/v1/flux/annonces?limite=${LIMITE}\` over HTTP with a Data-tier key, the load generator in a process of its own following \`curseur_suivant\` page after page, after ${WARMUP} warm-up pages: the whole journal one request at a time (${en(parcours.evenements)} events${parcours.evenements === ecrits ? ', every event the import wrote' : `; the import wrote ${en(ecrits)}`}); then ${CONCURRENCES.join(' and ')} readers at once, each from its own place in the journal (spread evenly, on from the start when at its end), ${Math.max(pages, 100)} pages in all; then filtered reads one request at a time, from the start of the journal and again from it when at its end (${REQUETES_FILTREES} requests each). Sizes: the JSON as served (no compression). CPU a request: the service's process (api) and PostgreSQL, on CPU, and the api's wait for a CPU, each divided by the requests. Target p95 < 50 ms.`,
          '',
          '| read | at a time | requests | events a page | req/s | events/s | p50 ms | p95 ms | p99 ms | max ms | ms a request: api CPU / PG CPU / api waiting | KiB a page, p50 / max | statuses |',
          '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
          ligne('whole journal, no filter', 1, parcours),
          ...concurrents.map(([c, r]) => ligne('no filter, readers at their own place', c, r)),
          ...filtrees.map(([nom, r]) => ligne(nom, 1, r)),
          '',
          ...(profilLectures
            ? tableau(
                "Where the service's process spends its time during the reads (V8 profile, self time by function, TOTAL s sampled):",
                profilLectures,
              )
            : []),
        ].join('\n'),
      );
    };
  } finally {
    await service.stop();
  }
  await resultat?.();
}

if (process.argv[2] === '--load') {
  let input = '';
  for await (const chunk of process.stdin) input += chunk;
  process.stdout.write(JSON.stringify(await charger(JSON.parse(input) as LoadSpec)));
} else {
  await main();
}
