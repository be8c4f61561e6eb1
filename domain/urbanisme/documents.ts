import type { Queryable } from '../../db/client.ts';
import type { Dataset } from '../platform/sandbox.ts';
import { cleLecture, etatsLecture, type LectureZone } from './lectures.ts';
import { situationUrbanisme, type StatutCommune } from './statut-communes.ts';
import { typeDocument } from './zonage.ts';

/**
 * The planning documents of a commune as `documents_urbanisme` serves them: every imported document that covers it
 * (in force or replaced), the zones of those in force with the reading state of their rules, communal-map sectors,
 * and the public-utility easements of the commune with their acts.
 */

/** CNIG `ETAT` of a document, by code. */
const ETATS: Record<string, string> = {
  '01': 'en_cours_de_procedure',
  '02': 'arrete',
  '03': 'opposable',
  '04': 'annule',
  '05': 'remplace',
  '06': 'abroge',
  '07': 'approuve',
  '08': 'partiellement_annule',
};
export const ETATS_DOCUMENT = Object.values(ETATS) as [string, ...string[]];

/** CNIG SECTEUR_CC TYPESECT: what a communal map's sector allows. */
export const SECTEURS_CC: Record<string, string> = {
  '01': 'secteur ouvert à la construction',
  '02': 'secteur réservé aux activités',
  '03': 'secteur non ouvert à la construction (sauf exceptions)',
  '99': 'autre secteur',
};

/** A link the client can follow: a web address, not a file name of the package. */
export const lienWeb = (texte: string | null) => (texte && /^https?:\/\//i.test(texte) ? texte : null);

export interface DocumentsCommune {
  statut: { code: StatutCommune; motif: string };
  documents: Array<{
    id: string;
    type: string | null;
    etat: string | null;
    en_vigueur: boolean;
    procedure: string | null;
    approuve_le: string | null;
    valide_le: string | null;
    fin_le: string | null;
    reglement_url: string | null;
    epci_siren: string | null;
    lecture: { zones: number; zones_lues: number; derniere_le: string | null };
  }>;
  zones: Array<{
    code: string;
    libelle: string | null;
    famille: string | null;
    document: string;
    reglement_url: string | null;
    lecture: LectureZone;
  }>;
  secteurs: Array<{
    code: string;
    libelle: string | null;
    type_code: string | null;
    document: string;
    fichier_url: string | null;
  }>;
  servitudes: Array<{
    categorie: string | null;
    libelle: string;
    gestionnaire: string | null;
    actes: Array<{
      nom: string | null;
      reference: string | null;
      date: string | null;
      fichier: string | null;
      lien: string | null;
    }>;
  }>;
  limites: string[];
}

interface DocumentRow {
  idurba: string;
  typedoc: string | null;
  etat: string | null;
  nomproc: string | null;
  approuve_le: string | null;
  valide_le: string | null;
  fin_le: string | null;
  urlreg: string | null;
  siren: string | null;
}

export async function documentsDeCommune(db: Queryable, dataset: Dataset, insee: string): Promise<DocumentsCommune> {
  const situation = await situationUrbanisme(db, dataset, insee);
  const enVigueur = new Set(situation.documents.filter((d) => d.en_vigueur).map((d) => d.idurba));
  const ids = situation.documents.map((d) => d.idurba);
  const [documents, zones, secteurs] = await Promise.all([
    db.query<DocumentRow>(
      `SELECT idurba, typedoc, etat, nomproc, to_char(datappro, 'YYYY-MM-DD') AS approuve_le,
              to_char(datvalid, 'YYYY-MM-DD') AS valide_le,
              CASE WHEN datefin > datappro THEN to_char(datefin, 'YYYY-MM-DD') END AS fin_le, urlreg, siren
         FROM documents_urbanisme WHERE dataset = $1 AND idurba = ANY ($2::text[])`,
      [dataset, ids],
    ),
    db.query<{
      idurba: string;
      libelle: string;
      libelong: string | null;
      typezone: string | null;
      reglement_url: string | null;
    }>(
      `SELECT DISTINCT ON (idurba, libelle, reglement_url) idurba, libelle, libelong, typezone, reglement_url
         FROM zones_urbanisme WHERE dataset = $1 AND idurba = ANY ($2::text[])
        ORDER BY idurba, libelle, reglement_url, id`,
      [dataset, [...enVigueur]],
    ),
    db.query<{ idurba: string; libelle: string; typesect: string | null; fichier_url: string | null }>(
      `SELECT DISTINCT ON (idurba, libelle, typesect) idurba, libelle, typesect, fichier_url
         FROM secteurs_cc WHERE dataset = $1 AND idurba = ANY ($2::text[])
        ORDER BY idurba, libelle, typesect, id`,
      [dataset, [...enVigueur]],
    ),
  ]);
  const lectures = await etatsLecture(
    db,
    zones.rows.map((z) => ({ code: z.libelle, reglement_url: z.reglement_url })),
  );
  const zonesServies = zones.rows
    .map((z) => ({
      code: z.libelle,
      libelle: z.libelong,
      famille: z.typezone,
      document: z.idurba,
      reglement_url: z.reglement_url,
      lecture: lectures.get(cleLecture(z.libelle, z.reglement_url))!,
    }))
    .sort((a, b) => a.document.localeCompare(b.document) || a.code.localeCompare(b.code, 'fr', { numeric: true }));
  const parId = new Map(documents.rows.map((d) => [d.idurba, d]));
  const servitudes = await servitudesDeCommune(db, dataset, insee, [...enVigueur]);
  const limites: string[] = [];
  if (situation.documents.length === 0)
    limites.push(`Aucun document d’urbanisme publié importé pour la commune : ${situation.motif}.`);
  if (servitudes.length === 0) {
    limites.push(
      'Aucune servitude d’utilité publique importée ne touche la commune (les servitudes viennent des paquets CNIG SUP importés, catégorie par catégorie).',
    );
  }
  limites.push(
    'Servitudes : celles dont une assiette rencontre l’emprise rectangulaire des adresses de la commune ; une servitude d’une commune voisine proche de la limite peut y figurer.',
  );
  return {
    statut: { code: situation.code, motif: situation.motif },
    documents: situation.documents.map((s) => {
      const d = parId.get(s.idurba)!;
      const siennes = zonesServies.filter((z) => z.document === s.idurba);
      const lues = siennes.filter((z) => z.lecture.etat === 'lue');
      return {
        id: s.idurba,
        type: typeDocument(d.typedoc, d.idurba),
        etat: d.etat ? (ETATS[d.etat] ?? null) : null,
        en_vigueur: s.en_vigueur,
        procedure: d.nomproc,
        approuve_le: d.approuve_le,
        valide_le: d.valide_le,
        fin_le: d.fin_le,
        reglement_url: lienWeb(d.urlreg),
        epci_siren: d.siren,
        lecture: {
          zones: siennes.length,
          zones_lues: lues.length,
          derniere_le: lues.map((z) => z.lecture.lue_le!).reduce<string | null>((a, b) => (!a || b > a ? b : a), null),
        },
      };
    }),
    zones: zonesServies,
    secteurs: secteurs.rows.map((s) => ({
      code: s.libelle,
      libelle: s.typesect ? (SECTEURS_CC[s.typesect] ?? null) : null,
      type_code: s.typesect,
      document: s.idurba,
      fichier_url: s.fichier_url,
    })),
    servitudes,
    limites,
  };
}

/**
 * The easements of a commune: those of a package published for the commune itself, and those with an assiette whose
 * box meets the extent of the commune's BAN addresses (its arrondissements' for Paris, Lyon and Marseille), or, with
 * no address imported, of its documents' zones. Repealed easements are left out.
 */
async function servitudesDeCommune(
  db: Queryable,
  dataset: Dataset,
  insee: string,
  documents: string[],
): Promise<DocumentsCommune['servitudes']> {
  const { rows } = await db.query<{
    categorie: string | null;
    libelle: string;
    gestionnaire: string | null;
    actes: Array<{ nom: string | null; reference: string | null; date: string | null; fichier: string | null }> | null;
  }>(
    `WITH emprise AS (
       SELECT coalesce(
                (SELECT box(point(min(lon), min(lat)), point(max(lon), max(lat))) FROM adresses
                  WHERE dataset = $1 AND (insee = $2 OR insee IN (SELECT insee FROM communes
                                                                   WHERE dataset = $1 AND commune_parente = $2))
                 HAVING count(*) > 0),
                (SELECT box(point(min(bbox_xmin), min(bbox_ymin)), point(max(bbox_xmax), max(bbox_ymax)))
                   FROM zones_urbanisme WHERE dataset = $1 AND idurba = ANY ($3::text[]) HAVING count(*) > 0)) AS b),
     touchees AS (
       SELECT DISTINCT t.lot, t.idsup FROM sup_assiettes t, emprise e
        WHERE t.dataset = $1 AND e.b IS NOT NULL
          AND box(point(t.bbox_xmin, t.bbox_ymin), point(t.bbox_xmax, t.bbox_ymax)) && e.b
       UNION
       SELECT s.lot, s.idsup FROM sup_servitudes s JOIN sup_lots l ON l.dataset = s.dataset AND l.lot = s.lot
        WHERE s.dataset = $1 AND l.territoire = $2)
     SELECT s.categorie, coalesce(s.nomsuplitt, s.nomsup, s.categorie, s.idsup) AS libelle, s.gestionnaire,
            (SELECT json_agg(json_build_object('nom', a.nomacte, 'reference', a.reference,
                                               'date', to_char(a.datedecis, 'YYYY-MM-DD'), 'fichier', a.fichier)
                             ORDER BY a.datedecis DESC NULLS LAST, a.idacte)
               FROM sup_servitudes_actes sa
               JOIN sup_actes a ON a.dataset = sa.dataset AND a.lot = sa.lot AND a.idacte = sa.idacte
              WHERE sa.dataset = s.dataset AND sa.lot = s.lot AND sa.idsup = s.idsup) AS actes
       FROM touchees t JOIN sup_servitudes s ON s.dataset = $1 AND s.lot = t.lot AND s.idsup = t.idsup
      WHERE s.estabroge IS NOT TRUE
      ORDER BY s.categorie NULLS LAST, libelle, s.lot, s.idsup`,
    [dataset, insee, documents],
  );
  return rows.map((r) => ({
    categorie: r.categorie,
    libelle: r.libelle,
    gestionnaire: r.gestionnaire,
    actes: (r.actes ?? []).map((a) => ({ ...a, lien: lienWeb(a.fichier) })),
  }));
}
