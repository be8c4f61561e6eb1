import type { Queryable } from '../../db/client.ts';
import { formeDe } from '../entreprises/societes-civiles.ts';
import type { Dataset } from '../platform/sandbox.ts';
import type { AdresseHistorique, DpeEvenement, VentesParRue } from './signaux.ts';

/**
 * The dated events of every address with an individual DPE, read once per training run in a few sequential scans
 * (DPE, audits, DVF sales, civil companies, permits), grouped by BAN key: the training and the scores then work in
 * memory, never one query per address.
 */

export interface Historique {
  adresses: Map<string, AdresseHistorique>;
  ventesParRue: VentesParRue;
  /** The latest DPE held (the date of the data) and the latest DVF sale. */
  referenceLe: string | null;
  dvfJusquAu: string | null;
  /** Keys known to the BAN as numbers (a house there is positioned: fiabilite mesure). */
  banNumeros: Set<string>;
}

const rueDe = (cle: string) => cle.split('_').slice(0, 2).join('_');

export async function lireHistorique(db: Queryable, dataset: Dataset): Promise<Historique> {
  const adresses = new Map<string, AdresseHistorique>();
  const { rows: dpe } = await db.query<{
    cle_ban: string;
    numero_dpe: string;
    date: string;
    type_batiment: 'maison' | 'appartement';
    surface_m2: number | null;
    etiquette: string;
    copro: boolean;
    periode_construction: string | null;
    chauffage_energie: string | null;
    insee: string | null;
    code_postal: string | null;
    adresse: string | null;
    commune: string | null;
    lat: number | null;
    lon: number | null;
  }>(
    `SELECT d.cle_ban, d.numero_dpe, to_char(d.etabli_le, 'YYYY-MM-DD') AS date, d.type_batiment, d.surface_m2,
            d.etiquette, d.immatriculation_copropriete IS NOT NULL AS copro, d.periode_construction,
            d.chauffage_energie, d.insee, d.code_postal, d.adresse, d.commune, d.lat, d.lon
       FROM dpe d
      WHERE d.dataset = $1 AND d.cle_ban IS NOT NULL AND d.type_batiment IN ('maison', 'appartement')
        AND NOT EXISTS (SELECT 1 FROM dpe r WHERE r.dataset = d.dataset AND r.numero_dpe_remplace = d.numero_dpe)
      ORDER BY d.cle_ban, d.etabli_le, d.numero_dpe`,
    [dataset],
  );
  let referenceLe: string | null = null;
  for (const r of dpe) {
    let a = adresses.get(r.cle_ban);
    if (!a) {
      a = {
        cle: r.cle_ban,
        rue: rueDe(r.cle_ban),
        insee: r.insee ?? r.cle_ban.slice(0, 5).toUpperCase(),
        codePostal: r.code_postal,
        adresse: r.adresse,
        commune: r.commune,
        lat: r.lat,
        lon: r.lon,
        dpe: [],
        audits: [],
        ventes: [],
        societes: [],
        permis: [],
      };
      adresses.set(r.cle_ban, a);
    }
    // The latest DPE's own words for the address (rows come oldest first).
    a.adresse = r.adresse ?? a.adresse;
    a.codePostal = r.code_postal ?? a.codePostal;
    a.commune = r.commune ?? a.commune;
    if (r.lat !== null && r.lon !== null) [a.lat, a.lon] = [r.lat, r.lon];
    const e: DpeEvenement = {
      numero: r.numero_dpe,
      date: r.date,
      type: r.type_batiment,
      surface: r.surface_m2,
      etiquette: r.etiquette,
      copro: r.copro,
      periode: r.periode_construction,
      chauffage: r.chauffage_energie,
    };
    a.dpe.push(e);
    if (referenceLe === null || r.date > referenceLe) referenceLe = r.date;
  }

  const { rows: audits } = await db.query<{ cle: string; date: string; pack: boolean | null }>(
    `SELECT coalesce(a.cle_ban, d.cle_ban) AS cle, to_char(a.etabli_le, 'YYYY-MM-DD') AS date,
            a.pack_pre_vente AS pack
       FROM dpe_audits a LEFT JOIN dpe d ON d.dataset = a.dataset AND d.numero_dpe = a.numero_dpe
      WHERE a.dataset = $1 AND coalesce(a.cle_ban, d.cle_ban) IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM dpe_audits r WHERE r.dataset = a.dataset AND r.numero_audit_remplace = a.numero_audit)
      ORDER BY 1, 2`,
    [dataset],
  );
  for (const x of audits) adresses.get(x.cle)?.audits.push({ date: x.date, pack: x.pack });

  // Every sale with a key counts for its street; those of an address with a DPE also for the address.
  const ventesParRue: VentesParRue = new Map();
  const { rows: ventes } = await db.query<{ cle_ban: string; date: string; prix: number | null }>(
    `SELECT cle_ban, to_char(date_mutation, 'YYYY-MM-DD') AS date, valeur_fonciere::float8 AS prix
       FROM dvf_mutations
      WHERE dataset = $1 AND cle_ban IS NOT NULL AND nature IN ('vente', 'vefa', 'adjudication')
      ORDER BY cle_ban, date_mutation, id_mutation`,
    [dataset],
  );
  let dvfJusquAu: string | null = null;
  for (const v of ventes) {
    adresses.get(v.cle_ban)?.ventes.push({ date: v.date, prix: v.prix });
    const rue = rueDe(v.cle_ban);
    let liste = ventesParRue.get(rue);
    if (!liste) ventesParRue.set(rue, (liste = []));
    liste.push(v.date);
    if (dvfJusquAu === null || v.date > dvfJusquAu) dvfJusquAu = v.date;
  }
  for (const liste of ventesParRue.values()) liste.sort();
  // The last sale of the dataset, sold at a key or not: the end of what DVF says.
  const { rows: fin } = await db.query<{ d: string | null }>(
    `SELECT to_char(max(derniere_mutation), 'YYYY-MM-DD') AS d FROM dvf_millesimes WHERE dataset = $1`,
    [dataset],
  );
  dvfJusquAu = fin[0]?.d ?? dvfJusquAu;

  // Civil companies at the address: SIRENE establishments of a 65xx unit, and BODACC notices placing the seat there.
  // Managers and partners are not stored (db/migrations/012_entreprises_permis.sql): nothing here can name them.
  const { rows: societes } = await db.query<{
    cle: string;
    siren: string | null;
    denomination: string | null;
    categorie: string | null;
    forme: string | null;
    debut: string | null;
    dernier_avis: string | null;
    le: string | null;
  }>(
    `WITH sirene AS (
       SELECT e.cle_ban AS cle, u.siren, u.denomination, u.categorie_juridique AS categorie, NULL::text AS forme,
              to_char(min(e.cree_le), 'YYYY-MM-DD') AS debut
         FROM etablissements e JOIN unites_legales u ON u.dataset = e.dataset AND u.siren = e.siren
        WHERE e.dataset = $1 AND e.cle_ban IS NOT NULL AND u.societe_civile
        GROUP BY e.cle_ban, u.siren, u.denomination, u.categorie_juridique),
     avis AS (
       SELECT a.cle_ban AS cle, a.sirens[1] AS siren, a.denomination, a.forme_juridique AS forme,
              to_char(min(coalesce(a.date_effet, a.date_parution)), 'YYYY-MM-DD') AS debut,
              (array_agg(a.categorie ORDER BY a.date_parution DESC, a.id DESC))[1] AS dernier_avis,
              to_char(max(a.date_parution), 'YYYY-MM-DD') AS le
         FROM avis_bodacc a
        WHERE a.dataset = $1 AND a.cle_ban IS NOT NULL AND a.societe_civile AND NOT a.porte_sur_personne_physique
        GROUP BY a.cle_ban, a.sirens[1], a.denomination, a.forme_juridique)
     SELECT coalesce(s.cle, v.cle) AS cle, coalesce(s.siren, v.siren) AS siren,
            coalesce(s.denomination, v.denomination) AS denomination, s.categorie, v.forme,
            CASE WHEN s.debut IS NULL THEN v.debut WHEN v.debut IS NULL THEN s.debut ELSE least(s.debut, v.debut) END AS debut,
            v.dernier_avis, v.le
       FROM sirene s FULL JOIN avis v ON v.cle = s.cle AND v.siren = s.siren
      ORDER BY 1, 3`,
    [dataset],
  );
  for (const s of societes) {
    adresses.get(s.cle)?.societes.push({
      denomination: s.denomination ?? '(dénomination non publiée)',
      siren: s.siren,
      forme: formeDe(s.categorie) ?? s.forme,
      debut: s.debut,
      dernier_avis: s.dernier_avis,
      le: s.le,
    });
  }

  const { rows: permis } = await db.query<{ cle_ban: string; date: string; type: string }>(
    `SELECT cle_ban, to_char(autorise_le, 'YYYY-MM-DD') AS date, type
       FROM permis WHERE dataset = $1 AND cle_ban IS NOT NULL AND autorise_le IS NOT NULL
      ORDER BY cle_ban, autorise_le`,
    [dataset],
  );
  for (const p of permis) adresses.get(p.cle_ban)?.permis.push({ date: p.date, type: p.type });

  const { rows: ban } = await db.query<{ cle_ban: string }>(
    `SELECT a.cle_ban FROM adresses a
      WHERE a.dataset = $1 AND a.type = 'numero'
        AND EXISTS (SELECT 1 FROM dpe d WHERE d.dataset = a.dataset AND d.cle_ban = a.cle_ban)`,
    [dataset],
  );
  return { adresses, ventesParRue, referenceLe, dvfJusquAu, banNumeros: new Set(ban.map((r) => r.cle_ban)) };
}
