import { Alea, plusJours } from '../alea.ts';
import { FICTIF, type SandboxPart } from '../part.ts';
import { position, type InseeSandbox, type Numero, type Territoire } from '../territoire.ts';
import { societesDe, type Societe } from './sirene.ts';

/**
 * Listings: six months of portal snapshots (May to October 2025), one JSON Lines file a month, as the listings
 * importer reads them (domain/annonces/format.ts). Each listing is seen every week while it is online, so the months
 * carry what a feed is made of: new listings, price drops (one is seen twice in a day), withdrawals and reactivations,
 * a listing suspended by its portal for a week, the same dwelling on a second portal at a price 1 % apart, and a house
 * sold by two agencies. Sellers are private persons (never named: their descriptions carry a telephone and an e-mail,
 * which the importer masks) or agencies: the agency of each commune's SIRENE companies, half the time with its SIREN,
 * otherwise to be found in SIRENE by its name and postal code, and agencies SIRENE does not know.
 *
 * Each portal writes its own way: portal_a the format's French names, portal_b English names with units in the text
 * (« 250 000 € », « 45,5 m² », « T3 ») and a nested seller, portal_c other French names and Unix times. Identifiers are
 * from ranges real portals do not use in practice (portal_a 9 000 001…, portal_c 7 000 001…).
 */

/** By commune: how many dwellings are listed over the six months, and the €/m² they are priced around. */
const OFFRE: Record<InseeSandbox, { biens: number; prixM2: number }> = {
  '33234': { biens: 12, prixM2: 3800 },
  '33001': { biens: 8, prixM2: 2000 },
  '75111': { biens: 18, prixM2: 9900 },
  '59350': { biens: 16, prixM2: 3500 },
  // No DVF in Alsace-Moselle: the level of the rent indicators' city, for the listings to look like its market.
  '67482': { biens: 12, prixM2: 3800 },
};

const DEBUT = '2025-05-01';
const FIN = '2025-10-31';
const MOIS = ['2025-05', '2025-06', '2025-07', '2025-08', '2025-09', '2025-10'];
const CLASSES = ['A', 'B', 'C', 'D', 'E', 'F', 'G'] as const;
const POIDS_CLASSES = [2, 6, 16, 30, 24, 13, 9];

type Portail = 'portal_a' | 'portal_b' | 'portal_c';
type Statut = 'actif' | 'retire' | 'masque';

interface Vendeur {
  genre: 'pro' | 'particulier';
  nom: string | null;
  siren: string | null;
  codePostal: string | null;
  telephone: string;
  email: string;
}

/** One listing: a dwelling on one portal by one seller, and its life week by week. */
interface Annonce {
  portail: Portail;
  identifiant: string;
  numero: Numero;
  precision: 'adresse' | 'approchee' | 'centre_commune';
  lat: number;
  lon: number;
  type: 'appartement' | 'maison';
  surface: number;
  pieces: number;
  chambres: number;
  etage: number | null;
  terrain: number | null;
  dpe: (typeof CLASSES)[number];
  annee: number;
  vendeur: Vendeur;
  /** The price and the status from each day on, in order. */
  etats: Array<{ jour: string; prix: number; statut: Statut; heure: number }>;
  photos: number;
  premiereParution: string | null;
  description: string;
}

function arrondiPrix(prix: number): number {
  return Math.round(prix / 1000) * 1000;
}

/** A French-looking telephone of the range reserved for fiction (01 99 00…, 06 39 98…), in a writer's own style. */
function telephone(alea: Alea, prive: boolean): string {
  const n = prive ? `0639 98${alea.int(10, 99)}${alea.int(10, 99)}` : `0199 00${alea.int(10, 99)}${alea.int(10, 99)}`;
  const d = n.replace(' ', '');
  return alea.pick([
    `${d.slice(0, 2)} ${d.slice(2, 4)} ${d.slice(4, 6)} ${d.slice(6, 8)} ${d.slice(8)}`,
    `${d.slice(0, 2)}.${d.slice(2, 4)}.${d.slice(4, 6)} ${d.slice(6, 8)} ${d.slice(8)}`,
    d,
  ]);
}

function description(alea: Alea, a: Omit<Annonce, 'description' | 'etats' | 'photos' | 'premiereParution'>): string {
  const lieu = a.numero.voie.nom;
  const etat = alea.weighted([
    ['', 60],
    [' Bien à rénover, travaux à prévoir.', 20],
    [' Entièrement rénové, prestations soignées.', 20],
  ] as const);
  const corps =
    a.type === 'appartement'
      ? `Appartement de ${a.pieces} pièces (${a.surface} m²) ${a.etage === 0 ? 'en rez-de-chaussée' : `au ${a.etage}e étage`}, ${lieu}. ${a.chambres} chambre(s), séjour lumineux.${etat}`
      : `Maison de ${a.pieces} pièces (${a.surface} m²) sur un terrain de ${a.terrain ?? 0} m², ${lieu}. ${a.chambres} chambre(s), garage.${etat}`;
  if (a.vendeur.genre === 'pro') return `${corps} ${a.vendeur.nom} vous accompagne : ${a.vendeur.telephone}.`;
  // A private seller writes their contacts into the text: the importer masks them.
  return `${corps} Vente de particulier à particulier, appelez le ${a.vendeur.telephone} ou écrivez à ${a.vendeur.email}.`;
}

/** The listings of one commune over the six months, the duplicates of its dwellings on other portals included. */
function annoncesDe(
  seed: number,
  t: Territoire,
  agence: Societe,
  sequence: { a: number; b: number; c: number },
): Annonce[] {
  const c = t.commune;
  const alea = new Alea(seed, `annonces:${c.insee}`);
  const offre = OFFRE[c.insee];
  const out: Annonce[] = [];
  const identifiant = (portail: Portail) =>
    portail === 'portal_a'
      ? String(9_000_001 + sequence.a++)
      : portail === 'portal_b'
        ? `b${(0x5a000 + sequence.b++).toString(16)}`
        : String(7_000_001 + sequence.c++);
  for (let k = 0; k < offre.biens; k++) {
    const numero = alea.pick(t.numeros);
    const type: 'appartement' | 'maison' = c.urbaine
      ? alea.chance(0.85)
        ? 'appartement'
        : 'maison'
      : alea.chance(0.8)
        ? 'maison'
        : 'appartement';
    const surface =
      type === 'appartement' ? Math.round(alea.between(18, 105) * 10) / 10 : Math.round(alea.between(70, 175));
    const pieces = Math.max(1, Math.min(7, Math.round(surface / (type === 'appartement' ? 22 : 25))));
    // One house of the territory writes its living area as its land: the importer flags it.
    const terrain =
      type === 'maison' ? (k === 1 && !c.urbaine ? Math.round(surface * 0.9) : alea.int(250, 1400)) : null;
    const dpe = CLASSES[alea.weighted(POIDS_CLASSES.map((w, i) => [i, w] as const))];
    const prixM2 = offre.prixM2 * Math.exp(0.12 * alea.normal()) * (dpe >= 'F' ? 0.88 : 1);
    const prix = arrondiPrix(prixM2 * surface);
    // The first listing of each commune stands at its address: its copy on another portal is recognised as it.
    const precision =
      k === 0
        ? 'adresse'
        : alea.weighted([
            ['adresse', 55],
            ['approchee', 35],
            ['centre_commune', 10],
          ] as const);
    const ici =
      precision === 'adresse'
        ? { lat: numero.lat, lon: numero.lon }
        : precision === 'approchee'
          ? { lat: numero.lat + alea.between(-0.0007, 0.0007), lon: numero.lon + alea.between(-0.0007, 0.0007) }
          : position(c, 0, 0);
    const pro = alea.chance(0.65);
    const vendeur: Vendeur = pro
      ? alea.chance(0.5)
        ? {
            genre: 'pro',
            nom: agence.denomination,
            // Half the time the listing gives the SIREN; otherwise the importer finds it in SIRENE.
            siren: alea.chance(0.5) ? agence.siren : null,
            codePostal: agence.siege?.voie.codePostal ?? c.codePostal(0, 0),
            telephone: telephone(alea, false),
            email: `contact@agence-${c.insee}.exemple`,
          }
        : {
            genre: 'pro',
            nom: `${alea.pick(['IMMOBILIER', 'CABINET', 'ESPACE HABITAT', 'TRANSACTIONS'])} ${c.acheminement} ${FICTIF.societe}`,
            siren: null,
            codePostal: null,
            telephone: telephone(alea, false),
            email: `contact@cabinet-${c.insee}-${k}.exemple`,
          }
      : {
          genre: 'particulier',
          nom: null,
          siren: null,
          codePostal: null,
          telephone: telephone(alea, true),
          email: `vendeur.${c.insee}.${k}@exemple.fr`,
        };
    const portail: Portail =
      k === 0
        ? 'portal_a'
        : alea.weighted([
            ['portal_a', 50],
            ['portal_b', 30],
            ['portal_c', 20],
          ] as const);
    const base = {
      portail,
      identifiant: identifiant(portail),
      numero,
      precision,
      ...ici,
      type,
      surface,
      pieces,
      chambres: Math.max(0, pieces - 1),
      etage: type === 'appartement' ? alea.int(0, 6) : null,
      terrain,
      dpe,
      annee: alea.int(1900, 2018),
      vendeur,
    };
    // Its life: listed on a day of the six months, seen weekly, with what happens to listings.
    const debut = k === 0 ? DEBUT : alea.day(DEBUT, '2025-09-15');
    const etats: Annonce['etats'] = [{ jour: debut, prix, statut: 'actif', heure: alea.int(6, 20) }];
    const evenement =
      k === 0
        ? 'baisses'
        : alea.weighted([
            ['rien', 35],
            ['baisses', 30],
            ['retrait', 15],
            ['reactivation', 10],
            ['hausse', 5],
            ['masque', 5],
          ] as const);
    const jour = (apres: number) => plusJours(debut, apres);
    if (evenement === 'baisses') {
      const j = alea.int(14, 50);
      const baisse = arrondiPrix(prix * (1 - alea.between(0.03, 0.08)));
      etats.push({ jour: jour(j), prix: baisse, statut: 'actif', heure: 9 });
      // The first listing of each commune is seen twice the day of its drop: one event.
      if (k === 0) etats.push({ jour: jour(j), prix: baisse, statut: 'actif', heure: 17 });
      if (alea.chance(0.4)) {
        etats.push({ jour: jour(j + alea.int(21, 45)), prix: arrondiPrix(baisse * 0.96), statut: 'actif', heure: 9 });
      }
    } else if (evenement === 'hausse') {
      etats.push({ jour: jour(alea.int(10, 40)), prix: arrondiPrix(prix * 1.03), statut: 'actif', heure: 10 });
    } else if (evenement === 'retrait' || evenement === 'reactivation') {
      const j = alea.int(21, 70);
      etats.push({ jour: jour(j), prix, statut: 'retire', heure: 8 });
      if (evenement === 'reactivation') {
        etats.push({ jour: jour(j + alea.int(14, 30)), prix: arrondiPrix(prix * 0.97), statut: 'actif', heure: 8 });
      }
    } else if (evenement === 'masque') {
      const j = alea.int(14, 40);
      etats.push({ jour: jour(j), prix, statut: 'masque', heure: 8 });
      etats.push({ jour: jour(j + 7), prix, statut: 'actif', heure: 8 });
    }
    const annonce: Annonce = {
      ...base,
      etats: etats.filter((e) => e.jour <= FIN).sort((x, y) => x.jour.localeCompare(y.jour) || x.heure - y.heure),
      photos: alea.int(0, 12),
      premiereParution: portail === 'portal_a' ? debut : null,
      description: description(alea, base),
    };
    out.push(annonce);

    // The same dwelling elsewhere: on a second portal at a price 1 % apart, or by a second agency.
    const double =
      k === 0 || alea.chance(0.2) ? 'portail' : !c.urbaine && type === 'maison' && alea.chance(0.15) ? 'agence' : null;
    if (double) {
      const autrePortail: Portail =
        double === 'agence'
          ? portail
          : portail === 'portal_a'
            ? 'portal_b'
            : portail === 'portal_b'
              ? 'portal_c'
              : 'portal_a';
      const debut2 = plusJours(debut, alea.int(2, 20));
      const facteur = double === 'portail' ? 1.01 : 1.02;
      // Listed later, then living the first listing's life at its own price.
      const alors = annonce.etats.filter((e) => e.jour <= debut2).at(-1)!;
      const etats2 = [{ ...alors, jour: debut2, heure: 12 }, ...annonce.etats.filter((e) => e.jour > debut2)]
        .filter((e) => e.jour <= FIN)
        .map((e) => ({ ...e, prix: arrondiPrix(e.prix * facteur) }));
      const second: Annonce = {
        ...annonce,
        portail: autrePortail,
        identifiant: identifiant(autrePortail),
        vendeur:
          double === 'agence'
            ? {
                genre: 'pro',
                nom: `AGENCE DU BOURG ${c.acheminement} ${FICTIF.societe}`,
                siren: null,
                codePostal: null,
                telephone: telephone(alea, false),
                email: `bourg-${c.insee}@agence.exemple`,
              }
            : annonce.vendeur,
        etats: etats2,
        premiereParution: null,
      };
      second.description = description(alea, second);
      if (second.etats.length > 0 && second.etats[0].statut === 'actif') out.push(second);
    }
  }
  return out;
}

/** The snapshot of a listing on a day, in its portal's own spelling. */
function releve(a: Annonce, jour: string, heure: number, etat: { prix: number; statut: Statut }): object {
  const vu = `${jour}T${String(heure).padStart(2, '0')}:00:00Z`;
  const statut = etat.statut;
  const lien = `https://www.${a.portail.replace('_', '-')}.example/annonces/${a.identifiant}`;
  const photos = Array.from(
    { length: a.photos },
    (_, i) => `https://img.${a.portail.replace('_', '-')}.example/${a.identifiant}/${i + 1}.jpg`,
  );
  const vendeur = a.vendeur;
  if (a.portail === 'portal_b') {
    return {
      source: 'portal_b',
      listing_id: a.identifiant,
      url: lien,
      seen_at: vu,
      status: { actif: 'online', retire: 'removed', masque: 'under_review' }[statut],
      property_type: a.type === 'appartement' ? 'Apartment' : 'House',
      price: `${etat.prix.toLocaleString('fr-FR').replace(/\u202f/g, ' ')} €`,
      living_area: `${String(a.surface).replace('.', ',')} m²`,
      rooms: `T${a.pieces}`,
      bedrooms: a.chambres,
      floor: a.etage === 0 ? 'RDC' : a.etage,
      land_area: a.terrain === null ? undefined : `${a.terrain} m²`,
      energy_class: a.dpe,
      year_built: a.annee,
      features:
        a.type === 'maison'
          ? ['garden', 'garage']
          : a.etage !== null && a.etage >= 3
            ? ['elevator', 'cellar']
            : ['cellar'],
      postcode: a.numero.voie.codePostal,
      city: a.numero.voie.commune.nom,
      location: { lat: a.lat, lng: a.lon },
      accuracy: { adresse: 'rooftop', approchee: 'approximate', centre_commune: 'city' }[a.precision],
      seller_type: vendeur.genre === 'pro' ? 'agency' : 'private',
      seller:
        vendeur.genre === 'pro'
          ? {
              name: vendeur.nom,
              siren: vendeur.siren,
              phone: vendeur.telephone,
              email: vendeur.email,
              mandate: 'simple',
            }
          : undefined,
      title: `${a.type === 'appartement' ? 'Apartment' : 'House'} ${a.pieces} rooms`,
      description: a.description,
      images: photos,
    };
  }
  if (a.portail === 'portal_c') {
    return {
      portail: 'portal_c',
      identifiant: Number(a.identifiant),
      date_releve: Math.floor(Date.parse(vu) / 1000),
      etat: { actif: 'en_ligne', retire: 'expiree', masque: 'suspendue' }[statut],
      nature: a.type,
      prix_eur: etat.prix,
      surface_m2: a.surface,
      nb_pieces: `${a.pieces} pièces`,
      nb_chambres: a.chambres,
      niveau: a.etage,
      surface_terrain: a.terrain,
      classe_energie: a.dpe,
      cp: a.numero.voie.codePostal,
      code_insee: a.numero.voie.commune.insee,
      lat: a.lat,
      lon: a.lon,
      position_precision: a.precision,
      type_vendeur: vendeur.genre === 'pro' ? 'professionnel' : 'particulier',
      agence_nom: vendeur.genre === 'pro' ? vendeur.nom : undefined,
      telephone: vendeur.genre === 'pro' ? vendeur.telephone : undefined,
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
    prix: etat.prix,
    surface: a.surface,
    pieces: a.pieces,
    chambres: a.chambres,
    etage: a.etage,
    terrain_m2: a.terrain,
    dpe: a.dpe,
    annee_construction: a.annee,
    equipements: a.type === 'maison' ? { jardin: true, garage: true } : { ascenseur: (a.etage ?? 0) >= 3, cave: true },
    details_portail:
      a.type === 'appartement'
        ? { charges_copro_annuelles: Math.round(a.surface * 30), taxe_fonciere: Math.round(a.surface * 14) }
        : { taxe_fonciere: Math.round(a.surface * 11) },
    code_postal: a.numero.voie.codePostal,
    insee: a.numero.voie.commune.insee,
    position: { lat: a.lat, lon: a.lon },
    precision: a.precision,
    type_vendeur: vendeur.genre,
    annonceur:
      vendeur.genre === 'pro'
        ? {
            nom: vendeur.nom,
            siren: vendeur.siren,
            mandat: 'exclusif',
            telephone: vendeur.telephone,
            email: vendeur.email,
            code_postal: vendeur.codePostal,
          }
        : undefined,
    titre: `${a.type === 'appartement' ? 'Appartement' : 'Maison'} ${a.pieces} pièces ${a.surface} m²`,
    description: a.description,
    photos,
    premiere_parution: a.premiereParution,
  };
}

/** Every snapshot of a listing: each change on its day, and a weekly one between changes while it is not withdrawn. */
function releves(a: Annonce): Array<{ vu: string; ligne: object }> {
  const out: Array<{ vu: string; ligne: object }> = [];
  const ajouter = (jour: string, heure: number, etat: { prix: number; statut: Statut }) =>
    out.push({ vu: `${jour}T${String(heure).padStart(2, '0')}`, ligne: releve(a, jour, heure, etat) });
  a.etats.forEach((etat, i) => {
    ajouter(etat.jour, etat.heure, etat);
    const suivant = a.etats[i + 1]?.jour ?? plusJours(FIN, 1);
    if (etat.statut === 'retire') return;
    for (let jour = plusJours(etat.jour, 7); jour < suivant && jour <= FIN; jour = plusJours(jour, 7)) {
      ajouter(jour, 7, etat);
    }
  });
  return out;
}

export const annoncesPart: SandboxPart<'annonces'> = {
  source: 'annonces',
  fichiers: (seed, territoires) => {
    const sequence = { a: 0, b: 0, c: 0 };
    // The companies as the SIRENE part draws them (over every commune at once): each commune's agency.
    const societes = societesDe(seed, territoires);
    const agenceDe = (t: Territoire) =>
      societes.find((s) => s.genre === 'agence' && s.commune.insee === t.commune.insee)!;
    const tous = territoires
      .flatMap((t) => annoncesDe(seed, t, agenceDe(t), sequence))
      .flatMap(releves)
      .sort((x, y) => x.vu.localeCompare(y.vu));
    return MOIS.map((mois) => [
      `annonces-${mois}.jsonl`,
      tous
        .filter((r) => r.vu.startsWith(mois))
        .map((r) => JSON.stringify(r.ligne))
        .join('\n') + '\n',
    ]);
  },
};
