import { z } from 'zod';
import type { Queryable } from '../../db/client.ts';
import { defineOperation, type OperationContext, type Territoire } from '../catalogue.ts';
import { nombre } from '../entrees.ts';
import { ApiError, invalidField } from '../errors.ts';
import { createMemory } from '../platform/memoire.ts';
import { agregerLac, editionFraiche } from './lac.ts';
import type { Dataset } from '../platform/sandbox.ts';
import { QualiteSchema, servedFromDataset, type Qualite } from '../qualite.ts';
import {
  castDe,
  DELAIS_BASE,
  dansCreneauLourd,
  filtresBruts,
  filtreSql,
  FILTRES_MAX,
  lireFiltres,
  Parametres,
  sousDelai,
  valeurServie,
  type Filtre,
} from './requete.ts';
import {
  colonne,
  estDisponible,
  groupable,
  JEUX,
  jeuNomme,
  mesurable,
  NOMS_JEUX,
  OPERATEURS,
  operateursDe,
  ordreSql,
  sourceSql,
  type Colonne,
  type JeuDisponible,
} from './registre.ts';

/**
 * The Datasets domain: `jeux` (the list), `schema_jeu` (a dataset's schema), `lire_jeu` (filtered rows, keyset
 * cursors) and `agreger_jeu` (groups and measures), all read from the registry (domain/jeux/registre.ts): a dataset
 * is declared once, and what a client may filter, sort, group and measure is what its declaration says.
 */

const Jeu = z.enum(NOMS_JEUX).describe('Nom du jeu de données (voir GET /jeux).');
const TypeSchema = z.enum(['texte', 'entier', 'nombre', 'booleen', 'date', 'horodatage', 'json']);
const NatureSchema = z
  .enum(['calcule_svc', 'public_brut'])
  .describe(
    'calcule_svc : calculé par le service (1 crédit par ligne) ; public_brut : donnée publique (1 crédit par 10 lignes).',
  );
const BaseSchema = z
  .enum(['servie', 'lac'])
  .describe('servie : la base PostgreSQL du service ; lac : une édition Parquet fraîche du jeu lue par DuckDB.');
const ColonneSchema = z.object({ nom: z.string(), type: TypeSchema });

// ---------------------------------------------------------------------------------------------------------------------
// What the database says of a dataset: its volume (the planner's estimate) and the date of its data, kept a while.
// ---------------------------------------------------------------------------------------------------------------------

const memoires = new WeakMap<
  Queryable,
  ReturnType<typeof createMemory<{ volume: number | null; date: string | null }>>
>();

async function etatJeu(db: Queryable, jeu: JeuDisponible, dataset: Dataset) {
  let memoire = memoires.get(db);
  if (!memoire) {
    memoire = createMemory({ ttlMs: 60_000, refreshMs: 30_000, max: 200 });
    memoires.set(db, memoire);
  }
  return memoire.get(`${dataset}|${jeu.nom}`, async () => {
    const { depuis, conditions } = sourceSql(jeu, dataset);
    let volume: number | null;
    if (jeu.volume) {
      volume = (await db.query<{ v: number | null }>(jeu.volume.replaceAll('{dataset}', dataset))).rows[0]?.v ?? null;
    } else {
      // The planner's estimate of the whole dataset: a figure without a scan, even for millions of rows.
      const plan = await db.query<{ 'QUERY PLAN': Array<{ Plan: { 'Plan Rows': number } }> }>(
        `EXPLAIN (FORMAT JSON) SELECT 1 FROM ${depuis} WHERE ${conditions.join(' AND ')}`,
      );
      volume = plan.rows[0]?.['QUERY PLAN'][0]?.Plan['Plan Rows'] ?? null;
    }
    let date: string | null = null;
    if (jeu.donnees_du) {
      const r = await db.query<{ d: string | null }>(jeu.donnees_du.replaceAll('{dataset}', dataset));
      date = r.rows[0]?.d ?? null;
    }
    return { volume: volume === null ? null : Math.round(volume), date };
  });
}

/** The dataset named, available, or the refusal that says why it is not served. */
function jeuServi(nom: string): JeuDisponible {
  const jeu = jeuNomme(nom)!;
  if (!estDisponible(jeu)) {
    throw new ApiError('ressource_absente', `Le jeu ${nom} n’est pas servi : ${jeu.indisponible} Rien n’est débité.`);
  }
  return jeu;
}

/** Territories named by filters (eq, in), which a pk_test_ key may only ask inside the frozen sandbox. */
function territoiresFiltres(input: { jeu: string } & Record<string, unknown>): Territoire[] {
  const jeu = jeuNomme(input.jeu);
  if (!jeu || !estDisponible(jeu)) return [];
  const out: Territoire[] = [];
  for (const f of filtresBruts(input).filtres) {
    const c = colonne(jeu, f.colonne);
    if (!c?.territoire || (f.operateur !== 'eq' && f.operateur !== 'in')) continue;
    const valeurs = Array.isArray(f.valeur) ? f.valeur : String(f.valeur).split(',');
    for (const v of valeurs) {
      const code = String(v).trim();
      if (code === '') continue;
      if (c.territoire === 'commune') out.push({ commune: code });
      else if (c.territoire === 'code_postal') out.push({ code_postal: code });
      else if (c.territoire === 'departement') out.push({ departement: code });
      else out.push({ iris: code });
    }
  }
  return out;
}

const CHAMPS_CONNUS = new Set(['jeu', 'filtre', 'champs', 'limite', 'curseur', 'grouper', 'mesures', 'limite_groupes']);

/** A field that is neither the operation's nor a filter: refused, rather than silently ignored. */
function refuserInconnus(input: Record<string, unknown>, propres: string[]) {
  const inconnus = Object.keys(input).filter(
    (k) => !propres.includes(k) && !/^filtre\[[^\]]*\]\[[^\]]*\]$/.test(k) && input[k] !== undefined,
  );
  if (inconnus.length > 0) {
    throw new ApiError('parametres_invalides', `Paramètres inconnus : ${inconnus.join(', ')}.`, {
      erreurs: inconnus.map((champ) => ({
        champ,
        emplacement: 'requete' as const,
        message: CHAMPS_CONNUS.has(champ)
          ? 'Paramètre d’une autre opération des jeux.'
          : 'Paramètre inconnu : les filtres s’écrivent filtre[colonne][operateur]=valeur.',
      })),
    });
  }
}

function qualiteJeu(jeu: JeuDisponible, n: number, donneesDu: string | null, methode: string): Qualite {
  return {
    n,
    provenance: 'mesure',
    incertitude: null,
    drapeaux: [],
    methode,
    donnees_du: donneesDu,
    source: jeu.source,
  };
}

/** The Paris evening window, by the service's clock (injectable). */
const creneau = (ctx: OperationContext) => dansCreneauLourd(ctx.services.now(), ctx.services.creneauLourd);

// ---------------------------------------------------------------------------------------------------------------------
// jeux, schema_jeu
// ---------------------------------------------------------------------------------------------------------------------

const DECISIONS = `Décisions (non montrées par la spécification) :
- \`GET /jeux\` et \`GET /jeux/{jeu}/schema\` : 0 crédit, portée \`jeux\`, palier usage, bac à sable oui.
- Un jeu dont le domaine ne tient pas de données dans ce service est listé \`disponible: false\` avec sa \`raison\` ; \`lire_jeu\` et \`agreger_jeu\` le refusent en 404 \`ressource_absente\` (rien n’est débité). Rien n’est simulé.
- Les clés de tri ne sont jamais vides (une colonne de départage au besoin) : le curseur porte leurs valeurs, et « vide en dernier » n’a pas lieu d’être.`;

const ResumeJeuSchema = z.object({
  jeu: z.string(),
  titre: z.string(),
  description: z.string(),
  nature: NatureSchema,
  disponible: z.boolean(),
  raison: z.string().nullable().describe('Pourquoi le jeu n’est pas servi ; null quand il l’est.'),
  large: z.boolean().describe('true : lire_jeu demande un filtre sur une colonne indexée.'),
  creneau_lourd: z.boolean().describe('true : pas de lecture entre 20 h 30 et minuit, heure de Paris.'),
  cle_tri: z.array(z.string()),
});

function resume(nom: string): z.infer<typeof ResumeJeuSchema> {
  const jeu = jeuNomme(nom)!;
  const dispo = estDisponible(jeu);
  return {
    jeu: jeu.nom,
    titre: jeu.titre,
    description: jeu.description,
    nature: jeu.nature,
    disponible: dispo,
    raison: dispo ? null : jeu.indisponible,
    large: dispo ? jeu.large : false,
    creneau_lourd: dispo ? jeu.creneau_lourd : false,
    cle_tri: dispo ? jeu.cle_tri : [],
  };
}

export const jeux = defineOperation({
  tool: 'jeux',
  method: 'GET',
  path: '/jeux',
  summary: 'Les jeux de données : nom, nature, disponibilité',
  description: `Les ${JEUX.length} jeux de données de la spécification, dans son ordre : titre, description, nature (\`calcule_svc\` : 1 crédit par ligne lue ; \`public_brut\` : 1 crédit par 10 lignes), disponibilité (et sa raison), taille (\`large\` : un filtre sur une colonne indexée est exigé), créneau lourd, clé de tri. Le détail d’un jeu : \`GET /jeux/{jeu}/schema\`.

${DECISIONS}`,
  credits: 0,
  unit: 'appel',
  scope: 'jeux',
  tier: 'usage',
  sandbox: true,
  cacheS: 300,
  timeoutS: 3,
  input: z.object({}),
  output: z.object({ jeux: z.array(ResumeJeuSchema) }),
  handler: async () => ({ jeux: JEUX.map((j) => resume(j.nom)) }),
});

const SchemaSortie = ResumeJeuSchema.extend({
  base: BaseSchema.describe(
    'Où ses agrégats sont calculés maintenant : lac (une édition Parquet fraîche, DuckDB) ou servie (PostgreSQL). lire_jeu lit toujours la base servie.',
  ),
  colonnes: z.array(
    z.object({
      nom: z.string(),
      type: TypeSchema,
      description: z.string().nullable(),
      operateurs: z.array(z.enum(OPERATEURS)).describe('Opérateurs de filtre permis (vide : non filtrable).'),
      indexee: z
        .boolean()
        .describe('Un index porte la colonne : un filtre sur elle satisfait l’exigence des jeux larges.'),
      groupable: z.boolean().describe('Peut servir de clé de `grouper`.'),
      mesurable: z.boolean().describe('Numérique : somme, moyenne, médiane, quantiles, min, max.'),
    }),
  ),
  retrait_particuliers: z.string().nullable(),
  volume_jeu: z.number().nullable().describe('Lignes du jeu estimées par le planificateur (pas un compte exact).'),
  donnees_du: z.string().nullable(),
  source: z.string().nullable(),
});

export const schemaJeu = defineOperation({
  tool: 'schema_jeu',
  method: 'GET',
  path: '/jeux/{jeu}/schema',
  summary: 'Le schéma d’un jeu : colonnes, types, filtres, index, tri',
  description: `Le schéma d’un jeu de données : ses colonnes dans l’ordre (nom, type parmi texte, entier, nombre, booleen, date, horodatage, json ; les opérateurs de filtre permis ; indexée ; groupable ; mesurable), sa clé de tri, \`large\`, \`creneau_lourd\`, \`nature\`, \`base\`, le volume estimé, la date des données et le retrait des particuliers. Un jeu indisponible est décrit avec sa raison, sans colonnes.

${DECISIONS}`,
  credits: 0,
  unit: 'appel',
  scope: 'jeux',
  tier: 'usage',
  sandbox: true,
  cacheS: 300,
  timeoutS: 3,
  input: z.object({ jeu: Jeu }),
  output: SchemaSortie,
  dataDate: (o) => o.donnees_du,
  handler: servedFromDataset(async (e, ctx, dataset) => {
    const jeu = jeuNomme(e.jeu)!;
    if (!estDisponible(jeu)) {
      return {
        ...resume(e.jeu),
        base: 'servie' as const,
        colonnes: [],
        retrait_particuliers: null,
        volume_jeu: null,
        donnees_du: null,
        source: null,
      };
    }
    const etat = await etatJeu(ctx.services.db, jeu, dataset);
    const lac = jeu.large ? await editionFraiche(ctx.services.db, jeu.nom, dataset) : null;
    return {
      ...resume(e.jeu),
      base: lac ? ('lac' as const) : ('servie' as const),
      colonnes: jeu.colonnes.map((c) => ({
        nom: c.nom,
        type: c.type,
        description: c.description ?? null,
        operateurs: [...operateursDe(c)],
        indexee: c.indexee ?? false,
        groupable: groupable(c),
        mesurable: mesurable(c),
      })),
      retrait_particuliers: jeu.retrait,
      volume_jeu: etat.volume,
      donnees_du: etat.date,
      source: jeu.source,
    };
  }),
});

// ---------------------------------------------------------------------------------------------------------------------
// lire_jeu
// ---------------------------------------------------------------------------------------------------------------------

const FiltreSchema = z
  .record(z.string(), z.record(z.string(), z.unknown()))
  .optional()
  .describe(
    `Filtres \`filtre[colonne][operateur]=valeur\` (${FILTRES_MAX} au plus, combinés par ET) : eq, in (valeurs séparées par des virgules), lt, lte, gt, gte, entre (deux bornes séparées par une virgule, comprises), prefixe (texte), nul (true : vide ; false : renseigné). Colonnes et opérateurs permis : le schéma du jeu. Par un outil : un objet {colonne: {operateur: valeur}}.`,
  );

const LireSortie = z.object({
  jeu: z.string(),
  titre: z.string(),
  base: BaseSchema,
  nature: NatureSchema,
  colonnes: z.array(ColonneSchema).describe('Colonnes servies, dans l’ordre du schéma.'),
  cle_tri: z.array(z.string()),
  lignes: z
    .array(z.record(z.string(), z.unknown()))
    .describe(
      'Les lignes, par clé de tri croissante. Les jeux d’annonces peuvent porter les champs vendeur_* d’un professionnel ; jamais d’un particulier.',
    ),
  n: z.number().int(),
  volume_jeu: z.number().nullable().describe('Volume du jeu estimé à sa déclaration (pas le compte filtré).'),
  donnees_du: z.string().nullable(),
  retrait_particuliers: z.string(),
  qualite: QualiteSchema,
  curseur_suivant: z.string().nullable(),
});
type LireSortie = z.infer<typeof LireSortie>;

const LIRE_CHAMPS = ['jeu', 'filtre', 'champs', 'limite', 'curseur'];

export const lireJeu = defineOperation({
  tool: 'lire_jeu',
  method: 'GET',
  path: '/jeux/{jeu}',
  summary: 'Lignes d’un jeu de données, filtrées, par clé de tri',
  description: `Les lignes d’un jeu de données, filtrées (\`filtre[colonne][operateur]=valeur\`, ${FILTRES_MAX} au plus, ET), triées par la clé de tri du jeu (seul tri), page par page (\`limite\` 1-1000, 100 par défaut ; \`curseur_suivant\`, qui porte les valeurs de la clé de tri de la dernière ligne). \`champs\` : les colonnes voulues (les colonnes de la clé de tri sont toujours servies). Chaque ligne passe le retrait des particuliers (\`retrait_particuliers\` le dit pour le jeu).

Prix : 1 crédit par tranche de 10 lignes d’un jeu \`public_brut\` (10 lignes : 1 crédit, 11 : 2) ; 1 crédit par ligne d’un jeu \`calcule_svc\`. Rien pour une page vide.

Refus :
- colonne ou opérateur inconnu, valeur hors du type de la colonne, plus de ${FILTRES_MAX} filtres, curseur altéré ou émis pour un autre jeu ou d’autres filtres : 400 \`parametres_invalides\`, champ par champ ;
- jeu \`large\` sans filtre (eq, in, entre, prefixe, lt…) sur une colonne indexée : 400 \`parametres_invalides\` sur \`filtre\` ;
- jeu \`creneau_lourd\` entre 20 h 30 et minuit (heure de Paris) : 503 \`creneau_reserve\` ;
- lecture trop large pour le délai de la base (${DELAIS_BASE.lectureMs / 1000} s) : 503 \`service_indisponible\`, resserrer les filtres ; rien n’est débité ;
- jeu indisponible : 404 \`ressource_absente\`.
- Clé pk_test_ : le jeu figé du bac à sable ; un filtre eq ou in sur une commune, un code postal, un département ou un IRIS hors de lui : 403 \`hors_bac_a_sable\`.

${DECISIONS}`,
  credits: 1,
  unit: '10_lignes',
  scope: 'jeux',
  tier: 'usage',
  sandbox: true,
  cacheS: 3600,
  timeoutS: 8,
  texteTiers: true,
  errors: ['ressource_absente', 'creneau_reserve', 'service_indisponible'],
  territoires: territoiresFiltres,
  input: z
    .object({
      jeu: Jeu,
      filtre: FiltreSchema,
      champs: z
        .string()
        .max(2000)
        .optional()
        .describe('Colonnes voulues, séparées par des virgules (toutes par défaut).'),
      limite: nombre(z.number().int().min(1).max(1000).default(100)).describe(
        'Lignes par page (1-1000, 100 par défaut).',
      ),
      curseur: z.string().min(1).max(1024).optional().describe('curseur_suivant de la page précédente.'),
    })
    .catchall(z.unknown()),
  output: LireSortie,
  // A computed dataset costs 1 credit a row: ten units of `10_lignes` per row (priceOf rounds tranches up).
  units: (o: LireSortie) => (o.nature === 'calcule_svc' ? o.n * 10 : o.n),
  dataDate: (o: LireSortie) => o.donnees_du,
  handler: servedFromDataset(async (e, ctx, dataset): Promise<LireSortie> => {
    const jeu = jeuServi(e.jeu);
    refuserInconnus(e, LIRE_CHAMPS);
    const filtres = lireFiltres(jeu, e);
    if (jeu.large && !filtres.some((f) => f.colonne.indexee && f.operateur !== 'nul')) {
      const indexees = jeu.colonnes.filter((c) => c.indexee).map((c) => c.nom);
      throw invalidField(
        'filtre',
        `Le jeu ${jeu.nom} est large : filtrez au moins une colonne indexée (${indexees.join(', ')}).`,
        'requete',
      );
    }
    const champs = lireChamps(jeu, e.champs);
    if (jeu.creneau_lourd && creneau(ctx)) {
      throw new ApiError(
        'creneau_reserve',
        `Le jeu ${jeu.nom} est lourd : il n’est pas lu entre 20 h 30 et minuit (heure de Paris). Réessayez après minuit ; rien n’est débité.`,
      );
    }
    const cle = jeu.cle_tri.map((nom) => colonne(jeu, nom)!);
    const portee = `lire_jeu|${dataset}|${jeu.nom}|${jeu.cle_tri.join(',')}|${signature(filtres)}`;
    let apres: unknown[] | null = null;
    if (e.curseur) {
      apres = ctx.services.cursors.decode<unknown[]>(portee, e.curseur);
      if (
        !Array.isArray(apres) ||
        apres.length !== cle.length ||
        apres.some((v) => v === null || typeof v === 'object')
      ) {
        throw invalidField(
          'curseur',
          'Curseur invalide : altéré, ou émis pour un autre jeu ou d’autres filtres.',
          'requete',
        );
      }
    }
    const p = new Parametres();
    const { depuis, conditions } = sourceSql(jeu, dataset);
    const where = [...conditions, ...filtres.map((f) => filtreSql(f, p))];
    if (apres) {
      const valeurs = cle.map((c, i) => p.ajouter(apres![i], null) + `::${castDe(c.type)}`);
      // The first key alone as well: an index on it bounds the scan; the row comparison is the exact position.
      where.push(`${cle[0]!.sql} >= ${valeurs[0]}`);
      where.push(`(${cle.map((c) => c.sql).join(', ')}) > (${valeurs.join(', ')})`);
    }
    const select = champs.map((c) => `${valeurServie(c)} AS "${c.nom}"`).join(', ');
    const sql = `SELECT ${select} FROM ${depuis} WHERE ${where.join(' AND ')} ORDER BY ${ordreSql(jeu)} LIMIT ${p.ajouter(e.limite + 1)}`;
    const [lignes, etat] = await Promise.all([
      sousDelai(ctx.services.db, DELAIS_BASE.lectureMs, sql, p.valeurs),
      etatJeu(ctx.services.db, jeu, dataset),
    ]);
    const page = lignes.slice(0, e.limite);
    const derniere = page.at(-1);
    const suivant =
      lignes.length > e.limite && derniere
        ? ctx.services.cursors.encode(
            portee,
            cle.map((c) => derniere[c.nom]),
          )
        : null;
    return {
      jeu: jeu.nom,
      titre: jeu.titre,
      base: 'servie',
      nature: jeu.nature,
      colonnes: champs.map((c) => ({ nom: c.nom, type: c.type })),
      cle_tri: jeu.cle_tri,
      lignes: page,
      n: page.length,
      volume_jeu: etat.volume,
      donnees_du: etat.date,
      retrait_particuliers: jeu.retrait,
      qualite: qualiteJeu(
        jeu,
        page.length,
        etat.date,
        'Lignes du jeu telles que déclarées au registre des jeux, filtrées et triées par la base du service.',
      ),
      curseur_suivant: suivant,
    };
  }),
});

/** The filters, canonical: a cursor is bound to them. */
function signature(filtres: Filtre[]): string {
  return JSON.stringify(
    filtres
      .map((f) => [f.colonne.nom, f.operateur, f.valeur])
      .sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1)),
  );
}

/** The columns served: those asked (all by default), plus the sort key's, in schema order. */
function lireChamps(jeu: JeuDisponible, champs: string | undefined): Colonne[] {
  if (!champs) return jeu.colonnes;
  const noms = champs
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const inconnus = noms.filter((nom) => !colonne(jeu, nom));
  if (inconnus.length > 0) {
    throw invalidField('champs', `Colonnes inconnues du jeu ${jeu.nom} : ${inconnus.join(', ')}.`, 'requete');
  }
  const voulus = new Set([...noms, ...jeu.cle_tri]);
  return jeu.colonnes.filter((c) => voulus.has(c.nom));
}

// ---------------------------------------------------------------------------------------------------------------------
// agreger_jeu
// ---------------------------------------------------------------------------------------------------------------------

const FONCTIONS = ['nombre', 'somme', 'moyenne', 'mediane', 'quantile', 'min', 'max'] as const;
type Fonction = (typeof FONCTIONS)[number];
const ALIAS: Record<string, Fonction> = { count: 'nombre', sum: 'somme', avg: 'moyenne', median: 'mediane' };
const GROUPER_MAX = 3;
const MESURES_MAX = 10;
/** Under this many rows a group is flagged, never hidden. */
const PEU = 5;

interface Mesure {
  nom: string;
  fonction: Fonction;
  colonne: Colonne;
  q: number | null;
}

function lireMesures(jeu: JeuDisponible, texte: string | undefined): Mesure[] {
  if (!texte) return [];
  const parties = texte
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (parties.length > MESURES_MAX) {
    throw invalidField('mesures', `${parties.length} mesures : ${MESURES_MAX} au plus.`, 'requete');
  }
  const mesures: Mesure[] = [];
  const fautes: string[] = [];
  for (const partie of parties) {
    const [f, nom, q, ...reste] = partie.split(':');
    const fonction = ALIAS[f ?? ''] ?? (FONCTIONS as readonly string[]).find((x) => x === f);
    const c = nom ? colonne(jeu, nom) : undefined;
    if (!fonction) {
      fautes.push(`${partie} : fonction inconnue (${FONCTIONS.join(', ')} ; count, sum, avg, median).`);
    } else if (!c) {
      fautes.push(`${partie} : colonne inconnue du jeu ${jeu.nom}.`);
    } else if (fonction !== 'nombre' && !mesurable(c)) {
      fautes.push(`${partie} : ${c.nom} n’est pas numérique (seul nombre s’y applique).`);
    } else if (reste.length > 0 || (fonction === 'quantile') !== (q !== undefined)) {
      fautes.push(`${partie} : quantile:colonne:q (q entre 0 et 1) ; les autres fonctions : fonction:colonne.`);
    } else if (fonction === 'quantile' && !(/^(0(\.\d+)?|1(\.0+)?)$/.test(q!) && Number(q) >= 0 && Number(q) <= 1)) {
      fautes.push(`${partie} : q entre 0 et 1 (ex. 0.9).`);
    } else {
      const qn = fonction === 'quantile' ? Number(q) : null;
      mesures.push({
        nom: qn === null ? `${fonction}_${c.nom}` : `${fonction}_${c.nom}_${q}`,
        fonction,
        colonne: c,
        q: qn,
      });
    }
  }
  if (fautes.length > 0) throw invalidField('mesures', fautes.join(' '), 'requete');
  return mesures;
}

function mesureSql(m: Mesure, p: Parametres): string {
  const x = `(${m.colonne.sql})`;
  switch (m.fonction) {
    case 'nombre':
      return `count(${x})`;
    case 'somme':
      return `sum(${x})::float8`;
    case 'moyenne':
      return `avg(${x})::float8`;
    case 'mediane':
      return `percentile_cont(0.5) WITHIN GROUP (ORDER BY ${x}::float8)`;
    case 'quantile':
      return `percentile_cont(${p.ajouter(m.q, 'nombre')}) WITHIN GROUP (ORDER BY ${x}::float8)`;
    case 'min':
      return `min(${x})::float8`;
    case 'max':
      return `max(${x})::float8`;
  }
}

const AgregerSortie = z.object({
  jeu: z.string(),
  titre: z.string(),
  base: BaseSchema,
  nature: NatureSchema,
  grouper: z.array(z.string()),
  mesures: z.array(
    z.object({
      nom: z.string().describe('Clé de la mesure dans chaque groupe (fonction_colonne, et _q pour un quantile).'),
      fonction: z.enum(FONCTIONS),
      colonne: z.string(),
      q: z.number().nullable(),
    }),
  ),
  groupes: z
    .array(
      z.object({
        cles: z.record(z.string(), z.unknown()).describe('Valeurs des colonnes de grouper (null : vide).'),
        n: z.number().int().min(0),
        mesures: z.record(z.string(), z.number().nullable()),
        drapeaux: z.array(z.string()).describe(`peu_d_observations : moins de ${PEU} lignes (le groupe est servi).`),
      }),
    )
    .describe('Les groupes les plus nombreux d’abord, à égalité par clés croissantes.'),
  n_groupes: z.number().int().describe('Groupes au total, servis ou non.'),
  tronque: z.boolean().describe('true : plus de groupes que limite_groupes.'),
  donnees_du: z.string().nullable(),
  qualite: QualiteSchema,
});

export const agregerJeu = defineOperation({
  tool: 'agreger_jeu',
  method: 'GET',
  path: '/jeux/{jeu}/agregats',
  summary: 'Agrégats d’un jeu de données : comptes et mesures par groupe',
  description: `Le nombre de lignes (\`n\`) et des mesures par groupe d’au plus ${GROUPER_MAX} colonnes groupables (\`grouper\`, séparées par des virgules ; sans grouper, un seul groupe), sur les lignes que les filtres gardent (\`filtre\`, comme lire_jeu). \`mesures\` : au plus ${MESURES_MAX} \`fonction:colonne\` séparées par des virgules : nombre (valeurs renseignées), somme, moyenne, mediane, quantile (\`quantile:colonne:0.9\`), min, max ; alias count, sum, avg, median. Médiane et quantiles continus (interpolés, percentile_cont). Les groupes les plus nombreux d’abord (à égalité, par clés croissantes, vides en dernier), \`limite_groupes\` (1-1000, 100 par défaut) ; \`tronque\` dit qu’il y en a d’autres. Aucun seuil ne cache un groupe : sous ${PEU} lignes il porte \`peu_d_observations\`.

Entre 20 h 30 et minuit (heure de Paris), un agrégat n’est servi que s’il est déjà en mémoire (la mémoire des réponses garde, 6 heures, un agrégat demandé une deuxième fois) : sinon 503 \`creneau_reserve\`. Agrégat trop lourd pour le délai de la base (${DELAIS_BASE.agregatMs / 1000} s) : 503 \`service_indisponible\`. \`base\` : \`lac\` quand le jeu est large et que son édition Parquet est fraîche (aucune ligne de ses tables écrite depuis sa construction, et le jeu déclaré comme il l’était alors ; un import la rend périmée, au plus 10 s après sa fin, une version du service qui change la déclaration du jeu aussi) : DuckDB l'agrège, avec les mêmes définitions (médiane et quantiles continus, mêmes groupes, même ordre) ; sinon \`servie\` (PostgreSQL du service). Un jeu large n’exige pas de filtre indexé ici (l’agrégat est borné par le délai de la base et le créneau du soir).

${DECISIONS}`,
  credits: 5,
  unit: 'appel',
  scope: 'jeux',
  tier: 'usage',
  sandbox: true,
  cacheS: 6 * 3600,
  timeoutS: 20,
  errors: ['ressource_absente', 'creneau_reserve', 'service_indisponible'],
  territoires: territoiresFiltres,
  input: z
    .object({
      jeu: Jeu,
      grouper: z
        .string()
        .max(500)
        .optional()
        .describe(`Colonnes groupables séparées par des virgules (${GROUPER_MAX} au plus).`),
      mesures: z
        .string()
        .max(2000)
        .optional()
        .describe(`fonction:colonne séparées par des virgules (${MESURES_MAX} au plus) ; quantile:colonne:q.`),
      filtre: FiltreSchema,
      limite_groupes: nombre(z.number().int().min(1).max(1000).default(100)).describe(
        'Groupes servis au plus (1-1000, 100 par défaut).',
      ),
    })
    .catchall(z.unknown()),
  output: AgregerSortie,
  dataDate: (o) => o.donnees_du,
  handler: servedFromDataset(async (e, ctx, dataset) => {
    const jeu = jeuServi(e.jeu);
    refuserInconnus(e, ['jeu', 'grouper', 'mesures', 'filtre', 'limite_groupes']);
    const noms = (e.grouper ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    if (noms.length > GROUPER_MAX) {
      throw invalidField('grouper', `${noms.length} colonnes : ${GROUPER_MAX} au plus.`, 'requete');
    }
    const fautes = noms.filter((nom) => {
      const c = colonne(jeu, nom);
      return !c || !groupable(c);
    });
    if (fautes.length > 0 || new Set(noms).size !== noms.length) {
      throw invalidField(
        'grouper',
        `Colonnes non groupables ou inconnues du jeu ${jeu.nom} : ${fautes.join(', ') || '(répétée)'} ; groupables : ${jeu.colonnes
          .filter(groupable)
          .map((c) => c.nom)
          .join(', ')}.`,
        'requete',
      );
    }
    const cles = noms.map((nom) => colonne(jeu, nom)!);
    const mesures = lireMesures(jeu, e.mesures);
    const filtres = lireFiltres(jeu, e);
    // The pipeline serves what it already holds without calling this handler: reaching it in the evening window is
    // a miss of the memory.
    if (creneau(ctx)) {
      throw new ApiError(
        'creneau_reserve',
        'Entre 20 h 30 et minuit (heure de Paris), un agrégat n’est servi que s’il est déjà en mémoire ; celui-ci ne l’est pas. Réessayez après minuit ; rien n’est débité.',
      );
    }
    const p = new Parametres();
    const { depuis, conditions } = sourceSql(jeu, dataset, 'agregat');
    const where = [...conditions, ...filtres.map((f) => filtreSql(f, p))];
    const select = [
      ...cles.map((c, i) => `${valeurServie(c)} AS k${i}`),
      'count(*) AS n',
      ...mesures.map((m, i) => `${mesureSql(m, p)} AS m${i}`),
      'count(*) OVER () AS total',
    ];
    const groupBy = cles.length > 0 ? `GROUP BY ${cles.map((_, i) => i + 1).join(', ')}` : '';
    const ordre = ['count(*) DESC', ...cles.map((_, i) => `k${i} ASC NULLS LAST`)].join(', ');
    const sql = `SELECT ${select.join(', ')} FROM ${depuis} WHERE ${where.join(' AND ')} ${groupBy} ORDER BY ${ordre} LIMIT ${p.ajouter(e.limite_groupes)}`;
    const etat = await etatJeu(ctx.services.db, jeu, dataset);
    // A large dataset is aggregated on its lake edition while it is fresh (same numbers, tested), else here.
    const lac = jeu.large ? await editionFraiche(ctx.services.db, jeu.nom, dataset) : null;
    const lignes = lac
      ? await agregerLac({ fichier: lac.fichier, cles, mesures, filtres, limite: e.limite_groupes })
      : await sousDelai<Record<string, unknown>>(ctx.services.db, DELAIS_BASE.agregatMs, sql, p.valeurs);
    const total = Number(lignes[0]?.total ?? 0);
    const groupes = lignes.map((l) => {
      const n = Number(l.n);
      return {
        cles: Object.fromEntries(cles.map((c, i) => [c.nom, l[`k${i}`] ?? null])),
        n,
        mesures: Object.fromEntries(
          mesures.map((m, i) => [m.nom, l[`m${i}`] === null || l[`m${i}`] === undefined ? null : Number(l[`m${i}`])]),
        ),
        drapeaux: n < PEU ? ['peu_d_observations'] : [],
      };
    });
    const lignesTotal = groupes.reduce((s, g) => s + g.n, 0);
    return {
      jeu: jeu.nom,
      titre: jeu.titre,
      base: lac ? ('lac' as const) : ('servie' as const),
      nature: jeu.nature,
      grouper: noms,
      mesures: mesures.map((m) => ({ nom: m.nom, fonction: m.fonction, colonne: m.colonne.nom, q: m.q })),
      groupes,
      n_groupes: total,
      tronque: total > groupes.length,
      donnees_du: etat.date,
      qualite: {
        ...qualiteJeu(
          jeu,
          lignesTotal,
          etat.date,
          lac
            ? `Agrégats calculés par DuckDB sur l’édition Parquet du jeu (données du ${lac.donnees_du}) ; médiane et quantiles continus (quantile_cont).`
            : 'Agrégats calculés par PostgreSQL sur les lignes du jeu (registre des jeux) ; médiane et quantiles continus (percentile_cont).',
        ),
        drapeaux: groupes.some((g) => g.n < PEU) ? ['peu_d_observations' as const] : [],
      },
    };
  }),
});

/** The operations of this domain, for the catalogue. */
export const jeuxOperations = [jeux, schemaJeu, lireJeu, agregerJeu];
