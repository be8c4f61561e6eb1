import { z } from 'zod';
import type { Queryable } from '../../db/client.ts';
import { containsPoint } from '../../lib/geometrie.ts';
import { defineOperation } from '../catalogue.ts';
import { ApiError, invalidField } from '../errors.ts';
import type { Dataset } from '../platform/sandbox.ts';
import { drapeaux, QualiteSchema, servedFromDataset, type Qualite } from '../qualite.ts';
import type { ContourIris } from '../territoire/import-iris.ts';
import { VENTE_UN_LOGEMENT, type TypeLogement } from './agregats.ts';
import { ARRONDISSEMENTS, Insee } from './entrees.ts';
import { raisonSansPrix, type Indicateurs } from './indicateurs.ts';
import { PRIOR_VENTES, SEUIL_CONFIANCE, SEUIL_MESURE, SOURCE_DVF, TYPES_LOGEMENT } from './prix.ts';

/**
 * prix_iris: the price of a quarter (IRIS) from the sales inside its outline, shrunk towards its commune's scale
 * price. Computed by the rebuild of the derived tables (derives.ts) into `marche_iris`; a read is two indexed lookups.
 */

const quantile = (tri: number[], q: number) => {
  if (tri.length === 0) return null;
  const pos = (tri.length - 1) * q;
  const bas = Math.floor(pos);
  const haut = Math.ceil(pos);
  return tri[bas] + (tri[haut] - tri[bas]) * (pos - bas);
};

interface Vente {
  insee: string;
  type: TypeLogement;
  millesime: number;
  prix_m2: number;
  lat: number;
  lon: number;
}

/** The IRIS item of a type from its sales and the commune's price: the rule of the operation's description. */
export function itemIris(
  ventes: Vente[],
  type: TypeLogement,
  millesime: number,
  commune: { prix_m2: number | null; demi_bande_pct: number | null } | null,
) {
  const recentes = ventes.filter((v) => v.type === type).map((v) => v.prix_m2);
  const n = ventes.filter((v) => v.type === type && v.millesime === millesime).length;
  const nr = recentes.length;
  const prixCommune = commune?.prix_m2 ?? null;
  if (nr === 0 && prixCommune === null) return null;
  const tri = recentes.sort((a, b) => a - b);
  const local = quantile(tri, 0.5);
  let label: 'mesure' | 'estime' | null;
  let poids: number | null;
  let prix: number | null;
  if (nr >= SEUIL_MESURE || (prixCommune === null && local !== null)) {
    label = 'mesure';
    poids = 1;
    prix = local;
  } else if (prixCommune !== null) {
    label = 'estime';
    poids = nr / (nr + PRIOR_VENTES);
    prix = poids * (local ?? 0) + (1 - poids) * prixCommune;
  } else {
    label = null;
    poids = null;
    prix = null;
  }
  let bande: number | null = null;
  const p25 = quantile(tri, 0.25);
  const p75 = quantile(tri, 0.75);
  if (nr >= SEUIL_CONFIANCE && local && p25 !== null && p75 !== null) {
    const nEff = label === 'estime' ? nr + PRIOR_VENTES : nr;
    bande = Math.round(((1.58 * (p75 - p25)) / Math.sqrt(nEff) / local) * 1000) / 10;
  } else bande = commune?.demi_bande_pct ?? null;
  return {
    type,
    millesime,
    prix_m2: prix === null ? null : Math.round(prix),
    label,
    n_ventes: n,
    n_ventes_recentes: nr,
    poids_local: poids === null ? null : Math.round(poids * 1000) / 1000,
    prix_m2_local: local === null ? null : Math.round(local),
    prix_m2_commune: prixCommune,
    demi_bande_pct: bande,
  };
}

/**
 * Rebuilds `marche_iris` for `dataset` (inside the rebuild's transaction), one département at a time so that only one
 * département's outlines and sales are held at once. Returns the rows written.
 */
export async function reconstruireIris(
  client: Queryable,
  dataset: Dataset,
  communes: Map<string, Indicateurs>,
): Promise<number> {
  await client.query('DELETE FROM marche_iris WHERE dataset = $1', [dataset]);
  const { rows: vintages } = await client.query<{ m: number | null }>(
    'SELECT max(millesime)::int AS m FROM dvf_millesimes WHERE dataset = $1',
    [dataset],
  );
  const millesime = vintages[0]?.m ?? null;
  const { rows: deps } = await client.query<{ dep: string }>(
    `SELECT DISTINCT CASE WHEN insee LIKE '97%' THEN left(insee, 3) ELSE left(insee, 2) END AS dep
       FROM iris WHERE dataset = $1`,
    [dataset],
  );
  let ecrites = 0;
  for (const { dep } of deps) {
    const { rows: contours } = await client.query<Omit<ContourIris, 'nom'>>(
      `SELECT code, insee, geometrie, bbox_xmin, bbox_ymin, bbox_xmax, bbox_ymax FROM iris
        WHERE dataset = $1 AND insee LIKE $2 || '%'`,
      [dataset, dep],
    );
    const ventes =
      millesime === null
        ? []
        : (
            await client.query<Vente>(
              `SELECT m.insee, CASE WHEN 'appartement' = ANY(m.types_locaux) THEN 'appartement' ELSE 'maison' END AS type,
                      m.millesime, m.prix_m2::float8 AS prix_m2, m.lat, m.lon
                 FROM dvf_mutations m
                WHERE m.dataset = $1 AND m.insee = ANY($2) AND m.millesime >= $3 AND m.lat IS NOT NULL
                  AND ${VENTE_UN_LOGEMENT}`,
              [dataset, [...new Set(contours.map((c) => c.insee))], millesime - 1],
            )
          ).rows;
    const parInsee = new Map<string, Vente[]>();
    for (const v of ventes) parInsee.set(v.insee, [...(parInsee.get(v.insee) ?? []), v]);
    const lignes: Array<Record<string, unknown>> = [];
    for (const c of contours) {
      const dedans = (parInsee.get(c.insee) ?? []).filter(
        (v) =>
          v.lon >= c.bbox_xmin &&
          v.lon <= c.bbox_xmax &&
          v.lat >= c.bbox_ymin &&
          v.lat <= c.bbox_ymax &&
          containsPoint(c.geometrie, v.lon, v.lat),
      );
      const indic = communes.get(c.insee);
      for (const type of TYPES_LOGEMENT) {
        const p = indic?.prix[type] ?? null;
        const annee = millesime ?? p?.millesime ?? null;
        if (annee === null) continue;
        const item = itemIris(dedans, type, annee, p ? { prix_m2: p.prix_m2, demi_bande_pct: p.demi_bande_pct } : null);
        if (item) lignes.push({ ...item, code_iris: c.code, insee: c.insee });
      }
    }
    if (lignes.length === 0) continue;
    const { rowCount } = await client.query(
      `INSERT INTO marche_iris (dataset, code_iris, insee, type, millesime, prix_m2, label, n_ventes, n_ventes_recentes,
                                poids_local, prix_m2_local, prix_m2_commune, demi_bande_pct)
       SELECT $1, code_iris, insee, type, millesime, prix_m2, label, n_ventes, n_ventes_recentes, poids_local,
              prix_m2_local, prix_m2_commune, demi_bande_pct
         FROM json_to_recordset($2::json) AS r(code_iris text, insee text, type text, millesime smallint, prix_m2 float8,
              label text, n_ventes integer, n_ventes_recentes integer, poids_local float8, prix_m2_local float8,
              prix_m2_commune float8, demi_bande_pct float8)`,
      [dataset, JSON.stringify(lignes)],
    );
    ecrites += rowCount ?? 0;
  }
  return ecrites;
}

// ---------------------------------------------------------------------------------------------------------------
// The operation.
// ---------------------------------------------------------------------------------------------------------------

const PrixType = z
  .object({
    prix_m2: z.number().nullable().describe('Prix du quartier (€/m²).'),
    label: z.enum(['mesure', 'estime']).nullable(),
    n_ventes: z.number().int().describe('Ventes du type dans le quartier sur le millésime.'),
    n_ventes_recentes: z.number().int().describe('Ventes du type dans le quartier sur le millésime et le précédent.'),
    poids_local: z.number().nullable().describe('Part du prix portée par les ventes du quartier (0-1).'),
    prix_m2_commune: z.number().nullable().describe('Prix de référence de la commune (barème de prix_commune).'),
    demi_bande_pct: z.number().nullable(),
    millesime: z.number().int(),
    qualite: QualiteSchema,
  })
  .nullable();

const PrixIrisOutput = z.object({
  donnees: z.array(
    z.object({
      code_iris: z.string(),
      nom: z.string().nullable(),
      insee: z.string().nullable(),
      appartement: PrixType,
      maison: PrixType,
      donnees_du: z.string().nullable(),
      geometrie: z
        .object({ type: z.enum(['Polygon', 'MultiPolygon']), coordinates: z.array(z.unknown()) })
        .optional()
        .describe('Contour GeoJSON (WGS84) du quartier, avec geometrie=true.'),
    }),
  ),
  limites: z.array(z.string()).describe('Pourquoi un prix est null : commune sans prix, type sans vente ni prix.'),
});
type PrixIris = z.infer<typeof PrixIrisOutput>;

const METHODE_IRIS = `Ventes d'un seul logement (vente, VEFA, adjudication ; ni bloc, ni local professionnel, ni prix ou surface hors bornes) situées dans le contour du quartier, millésime et précédent. mesure : au moins ${SEUIL_MESURE} ventes récentes, médiane du quartier ; estime : poids_local × médiane du quartier + (1 − poids_local) × prix de la commune, poids_local = n / (n + ${PRIOR_VENTES}).`;

interface LigneIris {
  code: string;
  nom: string | null;
  insee: string;
  geometrie?: PrixIris['donnees'][number]['geometrie'];
  type: TypeLogement | null;
  millesime: number | null;
  prix_m2: number | null;
  label: 'mesure' | 'estime' | null;
  n_ventes: number | null;
  n_ventes_recentes: number | null;
  poids_local: number | null;
  prix_m2_commune: number | null;
  demi_bande_pct: number | null;
}

async function lire(
  db: Queryable,
  dataset: Dataset,
  par: 'code' | 'insee',
  valeur: string,
  geometrie: boolean,
): Promise<PrixIris['donnees'] | null> {
  const [{ rows }, date] = await Promise.all([
    db.query<LigneIris>(
      `SELECT i.code, i.nom, i.insee, ${geometrie ? 'i.geometrie,' : ''} p.type, p.millesime, p.prix_m2, p.label,
              p.n_ventes, p.n_ventes_recentes, p.poids_local, p.prix_m2_commune, p.demi_bande_pct
         FROM iris i
         LEFT JOIN marche_iris p ON p.dataset = i.dataset AND p.code_iris = i.code
        WHERE i.dataset = $1 AND i.${par} = $2
        ORDER BY i.code, p.type`,
      [dataset, valeur],
    ),
    db.query<{ d: string | null }>(
      `SELECT to_char(max(derniere_mutation), 'YYYY-MM-DD') AS d FROM dvf_millesimes WHERE dataset = $1`,
      [dataset],
    ),
  ]);
  if (rows.length === 0) return null;
  const donneesDu = date.rows[0]?.d ?? null;
  const parCode = new Map<string, PrixIris['donnees'][number]>();
  for (const r of rows) {
    let item = parCode.get(r.code);
    if (!item) {
      item = { code_iris: r.code, nom: r.nom, insee: r.insee, appartement: null, maison: null, donnees_du: donneesDu };
      if (geometrie && r.geometrie) item.geometrie = r.geometrie;
      parCode.set(r.code, item);
    }
    if (r.type && r.millesime !== null) {
      const n = r.n_ventes_recentes ?? 0;
      const qualite: Qualite = {
        n,
        provenance: r.label,
        incertitude:
          r.demi_bande_pct === null || r.prix_m2 === null
            ? null
            : {
                demi_largeur_pct: r.demi_bande_pct,
                bas: Math.round(r.prix_m2 * (1 - r.demi_bande_pct / 100)),
                haut: Math.round(r.prix_m2 * (1 + r.demi_bande_pct / 100)),
              },
        drapeaux: drapeaux(n < SEUIL_CONFIANCE ? ['peu_d_observations'] : []),
        methode: METHODE_IRIS,
        donnees_du: donneesDu,
        source: `${SOURCE_DVF} ; contours IRIS (Insee, IGN)`,
      };
      item[r.type] = {
        prix_m2: r.prix_m2,
        label: r.label,
        n_ventes: r.n_ventes ?? 0,
        n_ventes_recentes: n,
        poids_local: r.poids_local,
        prix_m2_commune: r.prix_m2_commune,
        demi_bande_pct: r.demi_bande_pct,
        millesime: r.millesime,
        qualite,
      };
    }
  }
  return [...parCode.values()];
}

/** Why prices are null: a commune without any (raisonSansPrix), else the types some quartiers lack. */
async function limitesIris(db: Queryable, dataset: Dataset, donnees: PrixIris['donnees']): Promise<string[]> {
  const limites: string[] = [];
  const communes = [...new Set(donnees.map((d) => d.insee).filter((c) => c !== null))];
  for (const insee of communes) {
    const siens = donnees.filter((d) => d.insee === insee);
    if (siens.every((d) => !d.appartement && !d.maison)) {
      limites.push(`${insee} : ${await raisonSansPrix(db, dataset, insee)}`);
      continue;
    }
    for (const type of ['appartement', 'maison'] as const) {
      const sans = siens.filter((d) => !d[type]).length;
      if (sans > 0) {
        limites.push(
          `${insee} : ${type} null dans ${sans} quartier(s) sur ${siens.length}, sans vente de ce type dans le quartier ni prix de la commune.`,
        );
      }
    }
  }
  return limites;
}

const DESCRIPTION = `Prix au m² des quartiers IRIS (Insee), par type de logement, à partir des ventes DVF situées dans le contour du quartier, avec le prix de la commune à côté. Lu sur une table recalculée après chaque import DVF ou IRIS (deux lectures indexées).

**Règle.** Ventes retenues : celles de prix_commune (un seul logement, prix au m² lisible) géolocalisées dans le contour du quartier, sur le dernier millésime DVF détenu et le précédent (\`n_ventes_recentes\` ; \`n_ventes\` : le dernier millésime seul). \`label\` **mesure** dès ${SEUIL_MESURE} ventes récentes : \`prix_m2\` est leur médiane, \`poids_local\` 1. Sinon **estime** : \`prix_m2\` = poids_local × médiane du quartier + (1 − poids_local) × \`prix_m2_commune\`, \`poids_local\` = n / (n + ${PRIOR_VENTES}) (la part du prix portée par les ventes du quartier ; 0 sans vente). \`prix_m2_commune\` : dernier prix du barème de prix_commune pour le type (mesuré ou estimé). \`demi_bande_pct\` : 1,58 × écart interquartile / √n des ventes du quartier (dès ${SEUIL_CONFIANCE} ventes), sinon celle de la commune. Un type sans vente ni prix communal : null.

**Décisions.** \`GET /iris/{code_iris}\` : un quartier ; \`GET /communes/{insee}/iris\` : tous les quartiers de la commune (un arrondissement de Paris, Lyon ou Marseille a ses quartiers ; le code de la ville répond 400). 1 crédit par quartier servi. Code inconnu (aucun contour IRIS importé) : 404 \`ressource_absente\`, rien n'est débité. \`geometrie=true\` ajoute le contour GeoJSON (WGS84).`;

const COMMUN = {
  tool: 'prix_iris',
  method: 'GET',
  credits: 1,
  unit: 'element',
  scope: 'territoire',
  tier: 'usage',
  sandbox: true,
  cacheS: 86_400,
  timeoutS: 5,
  description: DESCRIPTION,
  output: PrixIrisOutput,
  units: (o: PrixIris) => o.donnees.length,
  dataDate: (o: PrixIris) => o.donnees[0]?.donnees_du ?? null,
} as const;

const Geometrie = z
  .enum(['true', 'false'])
  .default('false')
  .transform((v) => v === 'true')
  .describe('true : ajoute le contour GeoJSON de chaque quartier.');

export const prixIris = defineOperation({
  ...COMMUN,
  errors: ['ressource_absente'],
  path: '/iris/{code_iris}',
  territoires: (e: { code_iris: string }) => [{ iris: e.code_iris }],
  summary: 'Prix au m² d’un quartier IRIS, avec le prix de sa commune',
  input: z.object({
    code_iris: z
      .string()
      .trim()
      .toUpperCase()
      .regex(/^(?:\d{2}|2[AB])\d{7}$/, 'Code IRIS : 9 caractères (code INSEE de la commune puis 4 chiffres).')
      .describe('Code IRIS, 9 caractères.'),
    geometrie: Geometrie,
  }),
  handler: servedFromDataset(async (e, ctx, dataset) => {
    const donnees = await lire(ctx.services.db, dataset, 'code', e.code_iris, e.geometrie);
    if (!donnees) throw new ApiError('ressource_absente', `Aucun quartier IRIS n’a le code ${e.code_iris}.`);
    return { donnees, limites: await limitesIris(ctx.services.db, dataset, donnees) };
  }),
});

export const prixIrisCommune = defineOperation({
  ...COMMUN,
  errors: ['ressource_absente'],
  variant: 'commune',
  path: '/communes/{insee}/iris',
  territoires: (e: { insee: string }) => [{ commune: e.insee }],
  summary: 'Prix au m² des quartiers IRIS d’une commune',
  input: z.object({ insee: Insee, geometrie: Geometrie }),
  handler: servedFromDataset(async (e, ctx, dataset) => {
    const arrondissements = ARRONDISSEMENTS[e.insee];
    if (arrondissements) {
      throw invalidField('insee', `Cette ville se lit par arrondissement municipal (${arrondissements}).`, 'chemin');
    }
    const donnees = await lire(ctx.services.db, dataset, 'insee', e.insee, e.geometrie);
    if (!donnees) throw new ApiError('ressource_absente', `Aucun quartier IRIS importé pour la commune ${e.insee}.`);
    return { donnees, limites: await limitesIris(ctx.services.db, dataset, donnees) };
  }),
});
