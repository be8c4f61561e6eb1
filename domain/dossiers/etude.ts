import { createHash } from 'node:crypto';
import type { Queryable } from '../../db/client.ts';
import { randomToken } from '../../lib/crypto.ts';
import { signedLink, storageKey, type FileDelivery } from '../documents/telechargement.ts';
import {
  dessinerCoupe,
  dessinerFacades,
  dessinerPlanMasse,
  mesurerCoupe,
  mesurerFacades,
  type AnnotationLocale,
  type Cartouche,
  type Dessin,
  type Coupe,
  type Echelle,
  type Facade,
  type FeuilleDessinee,
  type Piece,
} from './dessins.ts';
import { comparerDeclaree, formaliteDerivee, type FormaliteDerivee } from './formalite.ts';
import { cm, repereAutour, type Anneau } from './geometrie-locale.ts';
import type { Formalite, Lieu, Projet } from './projet.ts';
import { alertesDe, refusDe, reglesDuSite, verifier, type ReglesDuSite, type Verification } from './regles.ts';
import { modeleDuSite, type Site } from './site.ts';

/**
 * The study of a site and its projects, shared by `coupes_facades` and `preparer_dossier`: the site model, the rules
 * checked, the formality derived, and the drawings measured then drawn. Pure over the database; the sheets' storage
 * is the caller's (the request's, or the dossier's activity).
 */

export interface OptionsEtude {
  demandeur?: 'personne_physique' | 'exploitation_agricole' | 'societe';
  maison_individuelle?: boolean;
  formalite?: Formalite;
  surface_plancher_creee_m2?: number;
  surface_plancher_totale_apres_travaux_m2?: number;
  emprise_au_sol_totale_apres_travaux_m2?: number;
}

export interface Etude {
  site: Site;
  regles: ReglesDuSite;
  verifications: Verification[];
  non_mesurables: string[];
  alertes: string[];
  refus: { raison: string; a_confirmer: boolean } | null;
  formalite: FormaliteDerivee;
  ecart_formalite: string | null;
  faits_manquants: string[];
  constats: string[];
}

export async function etudier(db: Queryable, lieu: Lieu, projets: Projet[], options: OptionsEtude): Promise<Etude> {
  const site = await modeleDuSite(db, lieu, projets);
  const regles = await reglesDuSite(db, site);
  return conclure(site, regles, options);
}

/** The study once the site and its rules are known (the dossier's workflow reads the rules in a step of its own). */
export function conclure(site: Site, regles: ReglesDuSite, options: OptionsEtude): Etude {
  const { verifications, non_mesurables } = verifier(regles.regles, site);
  const faits_manquants = [...site.faits_manquants];
  const existant = site.batiments.filter((b) => !b.leger).reduce((t, b) => t + b.emprise_m2, 0);
  if (options.surface_plancher_totale_apres_travaux_m2 === undefined && site.batiments.length > 0) {
    faits_manquants.push(
      'Surface de plancher existante non donnée (surface_plancher_totale_apres_travaux_m2) : prise égale à l’emprise au sol des bâtiments du cadastre, un seul niveau supposé.',
    );
  }
  const zoneU =
    regles.zone !== null &&
    /^U/i.test(regles.zone.famille ?? regles.zone.code) &&
    /PLU/i.test(regles.zone.type_document ?? 'PLU');
  const formalite = formaliteDerivee(
    site.projets.map((p) => ({
      libelle: p.libelle,
      nature: p.projet.nature,
      emprise_m2: p.mesures.emprise_m2,
      surface_plancher_m2:
        site.projets.length === 1 && options.surface_plancher_creee_m2 !== undefined
          ? options.surface_plancher_creee_m2
          : p.mesures.surface_plancher_m2,
      bassin_m2: p.mesures.bassin_m2,
      hauteur_m: p.mesures.hauteur_m,
      hauteur_couverture_m: p.projet.hauteur_couverture_m ?? null,
      sur_existant:
        p.projet.nature === 'extension' ||
        p.projet.nature === 'veranda' ||
        (p.mesures.accole_batiment && p.projet.nature !== 'piscine' && p.projet.nature !== 'terrasse'),
    })),
    {
      zone_urbaine_plu: zoneU,
      secteur_protege: regles.secteur_protege,
      demandeur: options.demandeur ?? 'personne_physique',
      surface_plancher_existante_m2: existant,
      surface_plancher_totale_declaree_m2: options.surface_plancher_totale_apres_travaux_m2 ?? null,
      emprise_existante_m2: site.batiments.reduce((t, b) => t + b.emprise_m2, 0),
      emprise_totale_declaree_m2: options.emprise_au_sol_totale_apres_travaux_m2 ?? null,
      maison_individuelle: options.maison_individuelle ?? true,
    },
  );
  if (regles.zone === null) {
    faits_manquants.push(
      'Aucune zone de PLU au point : le seuil de 40 m² des extensions en zone urbaine n’est pas appliqué (20 m²).',
    );
  }
  return {
    site,
    regles,
    verifications,
    non_mesurables: non_mesurables.map(
      (r) =>
        `${r.resume} (${r.article ? `article ${r.article}, ` : ''}page ${r.page}) : règle sans mesure vérifiable ici, à confirmer.`,
    ),
    alertes: alertesDe(verifications),
    refus: refusDe(verifications),
    formalite,
    ecart_formalite: comparerDeclaree(options.formalite, formalite),
    faits_manquants,
    constats: [...site.constats],
  };
}

export interface Dessins {
  coupes: Coupe[];
  facades: Facade[];
  feuilles: FeuilleDessinee[];
}

/** The sheets asked for: plot plan, a section per project, the facades of each closed project. */
export async function dessiner(
  etude: Etude,
  pieces: Piece[],
  cartouche: Cartouche,
  codes: Partial<Record<Piece, string>> = {},
  annotations: AnnotationLocale[] = [],
): Promise<Dessins> {
  const { site } = etude;
  const feuilles: FeuilleDessinee[] = [];
  const ajouter = (piece: Piece, titre: string, d: Dessin) => {
    if (!d.tient) {
      etude.constats.push(
        `${titre} : le dessin dépasse un A3 au 1/500 et sort de la feuille ; il est à découper en plusieurs feuilles.`,
      );
    }
    feuilles.push({
      numero: feuilles.length + 1,
      piece,
      titre,
      echelle: `1/${d.echelle}` as Echelle,
      format: d.format,
      bytes: d.bytes,
      textes: d.textes,
    });
    return feuilles.length;
  };
  if (pieces.includes('plan_masse')) {
    ajouter(
      'plan_masse',
      'Plan de masse',
      await dessinerPlanMasse(site, { ...cartouche, code: codes.plan_masse ?? null }, annotations),
    );
  }
  const plafond = plafondHauteur(etude.verifications);
  const coupes: Coupe[] = [];
  const facades: Facade[] = [];
  for (const p of site.projets) {
    if (pieces.includes('coupe')) {
      const coupe = mesurerCoupe(site, p, plafond.get(p.libelle) ?? null);
      coupe.feuille = ajouter(
        'coupe',
        `Coupe — ${p.libelle}`,
        await dessinerCoupe(coupe, { ...cartouche, code: codes.coupe ?? null }),
      );
      coupes.push(coupe);
    }
    if (pieces.includes('facades')) {
      const fs = mesurerFacades(p, etude.constats);
      if (fs.length) {
        const n = ajouter(
          'facades',
          `Façades — ${p.libelle}`,
          await dessinerFacades(fs, { ...cartouche, code: codes.facades ?? null }),
        );
        for (const f of fs) f.feuille = n;
        facades.push(...fs);
      }
    }
  }
  return { coupes, facades, feuilles };
}

/** The height ceiling of the zone for each project, from the height rules checked (the lowest). */
function plafondHauteur(verifications: Verification[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const v of verifications) {
    if (v.theme === 'hauteur' && v.forme === 'plafond' && v.valeur_exigee !== null) {
      out.set(v.projet, Math.min(out.get(v.projet) ?? Infinity, v.valeur_exigee));
    }
  }
  return out;
}

export function cartoucheDe(site: Site, now: Date): Cartouche {
  const p = site.parcelle;
  return {
    adresse: site.adresse?.libelle ?? `${p.commune ?? p.code_insee}, parcelle ${p.section} ${Number(p.numero)}`,
    parcelle: `${p.commune ?? p.code_insee} — section ${p.section} n° ${Number(p.numero)} (${p.idu})`,
    date: now.toLocaleDateString('fr-FR', { timeZone: 'Europe/Paris' }),
    code: null,
  };
}

export interface FeuilleLivree {
  numero: number;
  piece: Piece;
  titre: string;
  echelle: Echelle;
  format: 'A4' | 'A3';
  url: string;
  expire_le: string;
  sha256: string;
  taille_octets: number;
}

/** Stores each sheet as the documents' files and gives its signed link. */
export async function livrerFeuilles(
  files: FileDelivery,
  feuilles: FeuilleDessinee[],
  now: Date,
  prefixe: string,
): Promise<FeuilleLivree[]> {
  const expire = new Date(Math.floor(now.getTime() / 1000) * 1000 + files.linkTtlS * 1000);
  return Promise.all(
    feuilles.map(async (f) => {
      const id = randomToken(32);
      await files.storage.put(storageKey(id), f.bytes, 'application/pdf');
      const nom = `${prefixe}-${f.numero}-${f.piece.replace('_', '-')}.pdf`;
      return {
        numero: f.numero,
        piece: f.piece,
        titre: f.titre,
        echelle: f.echelle,
        format: f.format,
        url: signedLink(files, id, nom, expire),
        expire_le: expire.toISOString(),
        sha256: createHash('sha256').update(f.bytes).digest('hex'),
        taille_octets: f.bytes.byteLength,
      };
    }),
  );
}

/** The site's blocks as served: parcel, buildings and measured projects, outlines back in WGS84. */
export function blocsDuSite(etude: Etude, dessins: Pick<Dessins, 'facades'> | null) {
  const { site } = etude;
  const repere = repereAutour(site.origine.lat, site.origine.lon);
  const wgs = (a: Anneau) =>
    a.map((pt) => repere.versWgs84(pt).map((v) => Math.round(v * 1e7) / 1e7) as [number, number]);
  const alt = site.altitude_terrain_m;
  return {
    adresse: site.adresse,
    origine: site.origine,
    parcelle: {
      idu: site.parcelle.idu,
      section: site.parcelle.section,
      numero: site.parcelle.numero,
      commune: site.parcelle.commune,
      code_insee: site.parcelle.code_insee,
      contour: wgs(site.parcelle.anneau),
      contenance_m2: site.parcelle.contenance_m2,
      aire_m2: site.parcelle.aire_m2,
      limites: site.limites.map((l) => ({ cote: l.cote, nature: l.nature, longueur_m: l.longueur_m })),
    },
    batiments: site.batiments.map((b) => ({
      numero: b.numero,
      emprise_m2: b.emprise_m2,
      leger: b.leger,
      principal: b.principal,
      contour: wgs(b.anneau),
    })),
    projets: site.projets.map((p) => {
      const facade = dessins?.facades.find((f) => f.projet === p.libelle);
      const plancher = p.projet.niveau_plancher_m ?? 0;
      return {
        libelle: p.libelle,
        nature: p.projet.nature,
        cote: p.cote,
        contour_wgs84: wgs(p.anneau),
        emprise_m2: p.mesures.emprise_m2,
        surface_plancher_m2: p.mesures.surface_plancher_m2,
        bassin_m2: p.mesures.bassin_m2,
        hauteur_m: p.mesures.hauteur_m,
        altitudes_ngf:
          alt === null
            ? null
            : { terrain_m: alt, plancher_m: cm(alt + plancher), sommet_m: cm(alt + p.mesures.hauteur_m) },
        toiture: facade
          ? {
              type: facade.toiture,
              hauteur_murs_m: facade.hauteur_murs_m,
              hauteur_faitage_m: facade.hauteur_faitage_m,
              pente_deg: facade.pente_toiture_deg,
            }
          : null,
        ouvertures: p.projet.ouvertures?.length ?? 0,
        distances_limites: p.mesures.distances_limites,
        distance_limite_separative_min_m: p.mesures.distance_limite_separative_min_m,
        distance_voie_min_m: p.mesures.distance_voie_min_m,
        distances_batiments: p.mesures.distances_batiments,
        accole_batiment: p.mesures.accole_batiment,
        hors_parcelle: p.mesures.hors_parcelle,
      };
    }),
  };
}

/** Questions whose answers would sharpen the study: each names the field that answers it. */
export function questionsDe(etude: Etude): Array<{ champ: string; question: string }> {
  const q: Array<{ champ: string; question: string }> = [];
  if (etude.site.altitude_terrain_m === null)
    q.push({
      champ: 'altitude_terrain_m',
      question: 'Quelle est l’altitude NGF du terrain naturel à l’emplacement du projet ?',
    });
  for (const p of etude.site.projets) {
    if (
      p.projet.hauteur_m === undefined &&
      p.projet.hauteur_faitage_m === undefined &&
      p.projet.hauteur_murs_m === undefined &&
      p.projet.nature !== 'piscine' &&
      p.projet.nature !== 'terrasse'
    ) {
      q.push({
        champ: `projets[${p.index}].hauteur_m`,
        question: `Quelle est la hauteur de « ${p.libelle} » au-dessus du terrain naturel ?`,
      });
    }
  }
  return q;
}
