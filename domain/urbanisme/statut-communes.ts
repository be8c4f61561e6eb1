import type { Queryable } from '../../db/client.ts';
import { communeByCode } from '../communes.ts';
import type { Dataset } from '../platform/sandbox.ts';
import { documentEnVigueur } from './zonage.ts';

/**
 * The planning status of a commune, from what was imported: the planning packages of the Géoportail de l'Urbanisme
 * (documents_urbanisme and the communes each covers) and the table of communes and their document in force
 * (communes_urbanisme, statut-communes-import.ts). The urbanism operations serve it:
 *
 * - `documents_publies`: a published document in force (zonage.ts, documentEnVigueur) covers the commune (an imported package: its IDURBA, DOC_URBA_COM, the
 *   INSEE of its layers, or a PLUi of the commune's EPCI whose package names no communes); at a point, `zonage_publie`
 *   when one of its zones (or sectors) covers the point, `hors_zonage` when none does;
 * - `rnu`: no published document, and the table says the national rules apply (RNU, or a lapsed POS);
 * - `document_non_publie`: no published document, and the table says one is in force (CC, PLU, PLUi, POS, PSMV)
 *   that the Géoportail does not publish;
 * - `indetermine`: neither (the table is not imported, or does not list the commune), or the table says the document
 *   is published on the Géoportail while its package was not imported here.
 *
 * A municipal arrondissement (Paris, Lyon, Marseille) reads its commune's documents and row too.
 */

export type StatutCommune = 'documents_publies' | 'rnu' | 'document_non_publie' | 'indetermine';
export type StatutPoint = 'zonage_publie' | 'hors_zonage' | 'rnu' | 'document_non_publie' | 'indetermine';

export interface DocumentCommune {
  idurba: string;
  type_document: string | null;
  etat: string | null;
  approuve_le: string | null;
  siren: string | null;
  /** Not annulled, replaced, repealed or past its end (documentEnVigueur): only these make the status. */
  en_vigueur: boolean;
}

export interface SituationUrbanisme {
  insee: string;
  code: StatutCommune;
  motif: string;
  /** The published documents covering the commune (those in force and those they replaced), most recent first. */
  documents: DocumentCommune[];
  /** The commune's row of the table of documents in force, when imported. */
  en_vigueur: {
    insee: string;
    type_document: string;
    etat: string | null;
    approuve_le: string | null;
    idurba: string | null;
    publie_gpu: boolean | null;
  } | null;
}

const NOMS: Record<string, string> = {
  RNU: 'règlement national d’urbanisme',
  CC: 'carte communale',
  PLU: 'PLU',
  PLUi: 'PLUi',
  POS: 'POS',
  PSMV: 'PSMV',
};

/** The planning status of a commune (rules in the comment at the top). Two indexed reads. */
export async function situationUrbanisme(db: Queryable, dataset: Dataset, insee: string): Promise<SituationUrbanisme> {
  const parente = communeByCode(insee)?.communeParente;
  const codes = parente ? [insee, parente] : [insee];
  const { rows: documents } = await db.query<DocumentCommune>(
    `SELECT d.idurba, d.typedoc AS type_document, d.etat, to_char(d.datappro, 'YYYY-MM-DD') AS approuve_le, d.siren,
            ${documentEnVigueur('d')} AS en_vigueur
       FROM documents_urbanisme d
      WHERE d.dataset = $1
        AND (d.insee = ANY ($2::text[])
             OR EXISTS (SELECT 1 FROM documents_urbanisme_communes c
                         WHERE c.dataset = d.dataset AND c.idurba = d.idurba AND c.insee = ANY ($2::text[]))
             OR (d.siren IS NOT NULL
                 AND d.siren IN (SELECT epci FROM communes WHERE dataset = $1 AND insee = ANY ($2::text[]))
                 AND NOT EXISTS (SELECT 1 FROM documents_urbanisme_communes c
                                  WHERE c.dataset = d.dataset AND c.idurba = d.idurba)))
      ORDER BY d.datappro DESC NULLS LAST, d.idurba`,
    [dataset, codes],
  );
  const { rows } = await db.query<NonNullable<SituationUrbanisme['en_vigueur']>>(
    `SELECT insee, type_document, etat, to_char(approuve_le, 'YYYY-MM-DD') AS approuve_le, idurba, publie_gpu
       FROM communes_urbanisme WHERE dataset = $1 AND insee = ANY ($2::text[])
      ORDER BY insee = $3 DESC LIMIT 1`,
    [dataset, codes, insee],
  );
  const enVigueur = rows[0] ?? null;
  const base = { insee, documents, en_vigueur: enVigueur };
  const enForce = documents.filter((d) => d.en_vigueur);
  if (enForce.length > 0) {
    const liste = enForce.map((d) => `${d.idurba}${d.type_document ? ` (${d.type_document})` : ''}`).join(', ');
    return { ...base, code: 'documents_publies', motif: `document publié sur le Géoportail de l’Urbanisme : ${liste}` };
  }
  if (!enVigueur) {
    return {
      ...base,
      code: 'indetermine',
      motif: 'aucun document publié importé, et la table des documents en vigueur ne dit rien de la commune',
    };
  }
  const date = enVigueur.approuve_le ? ` approuvé le ${enVigueur.approuve_le}` : '';
  if (enVigueur.type_document === 'RNU') {
    return { ...base, code: 'rnu', motif: 'la commune relève du règlement national d’urbanisme (RNU)' };
  }
  if (enVigueur.publie_gpu) {
    return {
      ...base,
      code: 'indetermine',
      motif: `${NOMS[enVigueur.type_document]}${date} publié sur le Géoportail de l’Urbanisme, mais non importé ici`,
    };
  }
  return {
    ...base,
    code: 'document_non_publie',
    motif: `${NOMS[enVigueur.type_document]}${date} en vigueur, non publié sur le Géoportail de l’Urbanisme`,
  };
}

/** The status at a point of the commune: whether a zone (or a communal map's sector) of its documents covers it. */
export function statutAuPoint(
  situation: Pick<SituationUrbanisme, 'code' | 'motif'>,
  zoneCouvrante: boolean,
): { code: StatutPoint; motif: string } {
  if (situation.code !== 'documents_publies') return { code: situation.code, motif: situation.motif };
  return zoneCouvrante
    ? { code: 'zonage_publie', motif: situation.motif }
    : { code: 'hors_zonage', motif: 'aucune zone des documents publiés de la commune ne couvre ce point' };
}
