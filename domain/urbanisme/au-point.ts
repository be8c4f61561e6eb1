import type { Queryable } from '../../db/client.ts';
import type { Dataset } from '../platform/sandbox.ts';
import { lienWeb, SECTEURS_CC } from './documents.ts';
import { cleLecture, etatsLecture, type LectureZone } from './lectures.ts';
import { pres } from './proximite.ts';
import { situationUrbanisme, statutAuPoint, type StatutPoint } from './statut-communes.ts';
import { AUTRES_ZONES_RAYON_M, dateOfIdurba, documentEnVigueurDe, zonesNear } from './zonage.ts';

/**
 * Urbanism at a point: the zones (or communal-map sectors) of the documents in force that cover it, the prescriptions
 * and information laid over the zoning at or near it, the public-utility easements whose burdened area (assiette)
 * covers it or lies near, the planning status of its commune, and the facts worth knowing. What `urbanisme_adresse`
 * serves; nothing here reads rules (the zone's rules link and reading state are given, `lire_plu` reads them).
 */

/** Prescriptions and information this near the point are listed, with their distance. */
export const RAYON_SURCHARGES_M = 50;
/** Easements whose assiette lies this near the point are listed, with their distance. */
export const RAYON_SERVITUDES_M = 200;
/** A point this near the outline of another zone is on the boundary between them. */
export const LIMITE_ZONE_M = 3;
/** At most this many prescriptions, information or easements are listed, the nearest. */
export const MAX_ELEMENTS = 50;

/** Prescriptions (CNIG TYPEPSC) whose presence on the point changes what may be built, and what it means. */
const CONSTATS_PRESCRIPTION: Record<string, string> = {
  '01': 'un espace boisé classé couvre le point : défrichement interdit, construction très restreinte',
  '05': 'un emplacement réservé couvre le point : la collectivité peut en demander l’acquisition',
  '07': 'un élément de patrimoine ou de paysage protégé est sur le point : sa démolition ou sa modification est encadrée',
  '15': 'le point est dans un secteur où des risques naturels ou technologiques justifient des règles particulières',
  '18': 'le point est dans un secteur d’orientations d’aménagement et de programmation (OAP) : le projet doit être compatible avec elles',
};

/** Easement categories (CNIG SUP) whose assiette covering the point changes a project, and what it means. */
const CONSTATS_SERVITUDE: Record<string, string> = {
  AC1: 'le point est aux abords d’un monument historique (AC1) : travaux soumis à l’avis de l’Architecte des Bâtiments de France',
  AC2: 'le point est dans un site inscrit ou classé (AC2) : travaux soumis à déclaration ou autorisation',
  AC4: 'le point est dans un site patrimonial remarquable (AC4) : travaux soumis à l’avis de l’Architecte des Bâtiments de France',
  PM1: 'le point est dans un plan de prévention des risques naturels (PM1) : ses règles s’ajoutent à celles du PLU',
  PM3: 'le point est dans un plan de prévention des risques technologiques (PM3) : ses règles s’ajoutent à celles du PLU',
  I4: 'le point est sous une ligne électrique ou à ses abords (I4) : distances et hauteurs encadrées',
  T7: 'le point est dans une zone de dégagement aéronautique (T7) : hauteur des constructions encadrée',
  INT1: 'le point est au voisinage d’un cimetière (INT1) : constructions et puits encadrés à moins de 100 m',
};

export interface ZoneAuPoint {
  code: string;
  libelle: string | null;
  famille: string | null;
  document: string;
  type_document: string | null;
  approuve_le: string | null;
  reglement_url: string | null;
  lecture: LectureZone;
}

export interface Surcharge {
  libelle: string;
  type_code: string | null;
  sous_type: string | null;
  forme: 'surface' | 'ligne' | 'point';
  document: string;
  lien: string | null;
  /** null: a surface covering the point. */
  distance_m: number | null;
}

export interface ServitudeAuPoint {
  categorie: string | null;
  libelle: string;
  gestionnaire: string | null;
  acte: {
    nom: string | null;
    reference: string | null;
    date: string | null;
    fichier: string | null;
    lien: string | null;
  } | null;
  lien: string | null;
  /** 0: its assiette covers the point. */
  distance_m: number;
}

export interface UrbanismeAuPoint {
  insee: string | null;
  statut: { code: StatutPoint; motif: string };
  commune_rnu: boolean | null;
  zones: ZoneAuPoint[];
  prescriptions: Surcharge[];
  informations: Surcharge[];
  servitudes: ServitudeAuPoint[];
  constats: string[];
  limites: string[];
  /** The planning documents and easement packages the answer comes from. */
  documents: string[];
  lots_servitudes: string[];
}

const arrondi = (metres: number) => Math.round(metres * 10) / 10;

interface SecteurRow {
  id: string;
  idurba: string;
  libelle: string;
  typesect: string | null;
  fichier_url: string | null;
  approuve_le: string | null;
  insee: string | null;
  aire_m2: number;
  geometrie: unknown;
}

interface SurchargeRow {
  nature: 'prescription' | 'information';
  idurba: string;
  libelle: string;
  type: string | null;
  sous_type: string | null;
  forme: Surcharge['forme'];
  fichier_url: string | null;
  geometrie: unknown;
}

interface AssietteRow {
  lot: string;
  idsup: string | null;
  categorie: string | null;
  libelle: string;
  gestionnaire: string | null;
  nomacte: string | null;
  reference: string | null;
  datedecis: string | null;
  fichier: string | null;
  geometrie: unknown;
}

/** The commune of the point when the caller did not say: that of a communal document covering it, else none. */
function communeDesZones(zones: Array<{ insee: string | null; distance_m: number }>): string | null {
  const codes = new Set(zones.filter((z) => z.distance_m === 0 && z.insee).map((z) => z.insee!));
  return codes.size === 1 ? [...codes][0] : null;
}

/**
 * Urbanism at a point (rules of the comment at the top). `insee`: the commune of the address when the point is one;
 * else the commune of a communal document covering the point, else the caller's `communeProche` (the nearest BAN
 * address), said in `limites`.
 */
export async function urbanismeAuPoint(
  db: Queryable,
  dataset: Dataset,
  point: { lat: number; lon: number },
  commune: { insee: string | null; communeProche?: () => Promise<string | null> },
): Promise<UrbanismeAuPoint> {
  const [zonesProches, secteurs, surcharges, assiettes] = await Promise.all([
    zonesNear(db, { ...point, dataset, rayonM: AUTRES_ZONES_RAYON_M }),
    pres<SecteurRow>(db, dataset, point, LIMITE_ZONE_M, {
      colonnes: `t.id, t.idurba, t.libelle, t.typesect, t.fichier_url, t.insee, t.aire_m2, t.geometrie,
                 to_char(coalesce(t.datappro, d.datappro), 'YYYY-MM-DD') AS approuve_le`,
      depuis: `secteurs_cc t ${documentEnVigueurDe('t')}`,
    }),
    pres<SurchargeRow>(db, dataset, point, RAYON_SURCHARGES_M, {
      colonnes: `t.nature, t.idurba, t.libelle, t.type, t.sous_type, t.forme, t.fichier_url, t.geometrie`,
      depuis: `surcharges_urbanisme t ${documentEnVigueurDe('t')}`,
    }),
    pres<AssietteRow>(db, dataset, point, RAYON_SERVITUDES_M, {
      colonnes: `t.lot, t.idsup, coalesce(s.categorie, t.categorie) AS categorie, t.geometrie,
                 coalesce(s.nomsuplitt, s.nomsup, t.nomass, coalesce(s.categorie, t.categorie)) AS libelle,
                 s.gestionnaire, a.nomacte, a.reference, to_char(a.datedecis, 'YYYY-MM-DD') AS datedecis, a.fichier`,
      depuis: `sup_assiettes t
               LEFT JOIN sup_servitudes s ON s.dataset = t.dataset AND s.lot = t.lot AND s.idsup = t.idsup
               LEFT JOIN LATERAL (
                 SELECT a.* FROM sup_servitudes_actes sa
                   JOIN sup_actes a ON a.dataset = sa.dataset AND a.lot = sa.lot AND a.idacte = sa.idacte
                  WHERE sa.dataset = t.dataset AND sa.lot = t.lot AND sa.idsup = t.idsup
                  ORDER BY a.datedecis DESC NULLS LAST, a.idacte LIMIT 1) a ON true`,
      conditions: 's.estabroge IS NOT TRUE',
    }),
  ]);

  const constats: string[] = [];
  const limites: string[] = [];

  // Zones: those covering the point (all of them: overlapping documents, a PSMV over its PLU), then communal-map
  // sectors covering it. The nearest other zones tell whether the point lies on a boundary.
  const couvrantes = zonesProches.filter((z) => z.distance_m === 0);
  const secteursCouvrants = secteurs.filter((s) => s.distance_m === 0);
  const lectures = await etatsLecture(db, couvrantes);
  const zones: ZoneAuPoint[] = [
    ...couvrantes.map((z) => ({
      code: z.code,
      libelle: z.libelle,
      famille: z.famille,
      document: z.idurba,
      type_document: z.type_document,
      approuve_le: z.approuve_le,
      reglement_url: z.reglement_url,
      lecture: lectures.get(cleLecture(z.code, z.reglement_url))!,
    })),
    ...secteursCouvrants.map((s) => ({
      code: s.libelle,
      libelle: s.typesect ? (SECTEURS_CC[s.typesect] ?? null) : null,
      famille: s.typesect,
      document: s.idurba,
      type_document: 'CC',
      approuve_le: s.approuve_le ?? dateOfIdurba(s.idurba),
      reglement_url: s.fichier_url,
      // A communal map has no written rules per sector: the national rules apply inside its sectors.
      lecture: { etat: 'sans_reglement' as const, lue_le: null, regles: null },
    })),
  ];
  const codes = [...new Set(zones.map((z) => z.code))];
  if (codes.length > 1) {
    constats.push(
      `plusieurs zones couvrent le point (${codes.join(', ')}) : zones superposées ou point en limite, voir le plan de zonage`,
    );
  }
  const voisines = [
    ...zonesProches.filter((z) => z.distance_m > 0 && z.distance_m <= LIMITE_ZONE_M && !codes.includes(z.code)),
  ].map((z) => `${z.code} (${arrondi(z.distance_m)} m)`);
  if (voisines.length > 0 && zones.length > 0) {
    constats.push(
      `le point est en limite de zone, à moins de ${LIMITE_ZONE_M} m de ${[...new Set(voisines)].join(', ')} : la zone d’un terrain se lit sur le plan à la parcelle`,
    );
  }
  const plusProche = zonesProches.find((z) => z.distance_m > 0);
  if (zones.length === 0 && plusProche) {
    constats.push(
      `aucune zone ne couvre le point ; la plus proche, ${plusProche.code} (${plusProche.idurba}), est à ${arrondi(plusProche.distance_m)} m`,
    );
  }
  for (const z of zones) {
    if (z.famille === 'A' || z.famille === 'N') {
      constats.push(
        `zone ${z.code} ${z.famille === 'A' ? 'agricole' : 'naturelle'} : la construction y est limitée à ce que le règlement autorise`,
      );
    } else if (z.famille === 'AUs') {
      constats.push(`zone ${z.code} à urbaniser fermée (AUs) : ouverte par une évolution du document seulement`);
    }
  }

  // Prescriptions and information: surfaces covering the point (distance null), anything else within the radius.
  const surcharge = (r: SurchargeRow & { distance_m: number }): Surcharge => ({
    libelle: r.libelle,
    type_code: r.type,
    sous_type: r.sous_type,
    forme: r.forme,
    document: r.idurba,
    lien: r.fichier_url,
    distance_m: r.forme === 'surface' && r.distance_m === 0 ? null : arrondi(r.distance_m),
  });
  const parDistance = <T extends { distance_m: number | null; libelle: string }>(a: T, b: T) =>
    (a.distance_m ?? -1) - (b.distance_m ?? -1) || a.libelle.localeCompare(b.libelle, 'fr');
  const liste = <T extends { distance_m: number | null; libelle: string }>(items: T[], nom: string): T[] => {
    const tries = items.sort(parDistance);
    if (tries.length > MAX_ELEMENTS) {
      limites.push(`${nom} : les ${MAX_ELEMENTS} plus proches sur ${tries.length}.`);
    }
    return tries.slice(0, MAX_ELEMENTS);
  };
  const prescriptions = liste(surcharges.filter((r) => r.nature === 'prescription').map(surcharge), 'prescriptions');
  const informations = liste(surcharges.filter((r) => r.nature === 'information').map(surcharge), 'informations');
  for (const p of prescriptions) {
    const constat = p.type_code ? CONSTATS_PRESCRIPTION[p.type_code] : undefined;
    if (constat && (p.distance_m === null || p.distance_m === 0) && !constats.includes(constat)) constats.push(constat);
  }

  // Easements: one per easement (a package's IDSUP), at the distance of its nearest assiette.
  const parServitude = new Map<string, AssietteRow & { distance_m: number }>();
  for (const a of assiettes) {
    const cle = `${a.lot}\u0000${a.idsup ?? a.libelle}`;
    const connue = parServitude.get(cle);
    if (!connue || a.distance_m < connue.distance_m) parServitude.set(cle, a);
  }
  const servitudes = liste(
    [...parServitude.values()].map((a): ServitudeAuPoint => ({
      categorie: a.categorie,
      libelle: a.libelle,
      gestionnaire: a.gestionnaire,
      acte:
        a.nomacte || a.reference || a.datedecis || a.fichier
          ? { nom: a.nomacte, reference: a.reference, date: a.datedecis, fichier: a.fichier, lien: lienWeb(a.fichier) }
          : null,
      lien: lienWeb(a.fichier),
      distance_m: arrondi(a.distance_m),
    })),
    'servitudes',
  );
  for (const s of servitudes) {
    const constat = s.categorie ? CONSTATS_SERVITUDE[s.categorie] : undefined;
    if (constat && s.distance_m === 0 && !constats.includes(constat)) constats.push(constat);
  }

  // The status: a zone or sector covering the point says it all; otherwise the commune's status says why none does.
  let insee = commune.insee ?? communeDesZones(zonesProches);
  if (!insee && commune.communeProche) {
    insee = await commune.communeProche();
    if (insee)
      limites.push(`Commune du point : celle de l’adresse de la Base Adresse Nationale la plus proche (${insee}).`);
  }
  let statut: UrbanismeAuPoint['statut'];
  let communeRnu: boolean | null = null;
  if (zones.length > 0) {
    // Whatever the commune's row says (a point on a commune's edge, a PLUi whose package names no communes), the
    // zone found is what applies.
    const docs = [...new Set(zones.map((z) => `${z.document}${z.type_document ? ` (${z.type_document})` : ''}`))];
    statut = { code: 'zonage_publie', motif: `zonage publié sur le Géoportail de l’Urbanisme : ${docs.join(', ')}` };
    communeRnu = false;
  } else if (insee) {
    const situation = await situationUrbanisme(db, dataset, insee);
    communeRnu = situation.code === 'rnu' ? true : situation.code === 'indetermine' ? null : false;
    statut = statutAuPoint(situation, false);
  } else {
    statut = {
      code: 'indetermine',
      motif: 'la commune du point est inconnue : aucune adresse ni aucun document à proximité',
    };
  }
  if (zones.length === 0) limites.unshift(`Aucune zone servie : ${statut.motif}.`);
  limites.push(
    `Prescriptions et informations à moins de ${RAYON_SURCHARGES_M} m, servitudes d’utilité publique à moins de ${RAYON_SERVITUDES_M} m : celles des paquets importés seulement.`,
    'Le règlement de la zone n’est pas lu ici : son lien et l’état de sa lecture sont donnés ; lire_plu le lit.',
  );

  return {
    insee,
    statut,
    commune_rnu: communeRnu,
    zones,
    prescriptions,
    informations,
    servitudes,
    constats,
    limites,
    documents: [...new Set([...zones.map((z) => z.document), ...surcharges.map((s) => s.idurba)])].sort(),
    lots_servitudes: [...new Set(assiettes.map((a) => a.lot))].sort(),
  };
}
