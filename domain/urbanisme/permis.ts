import { z } from 'zod';
import type { Queryable } from '../../db/client.ts';
import { adresseConnue } from '../adresses/resoudre.ts';
import { defineOperation, type OperationContext } from '../catalogue.ts';
import { absenceSource } from '../couverture.ts';
import { jour } from '../entrees.ts';
import { ApiError } from '../errors.ts';
import { drapeaux, QualiteSchema, servedFromDataset, type Drapeau } from '../qualite.ts';
import type { Dataset } from '../platform/sandbox.ts';
import { departementOf } from '../communes.ts';

/**
 * permis_adresse: the authorisations of the national permits database (Sitadel) at a BAN number or on a cadastral
 * parcel, as imported by domain/urbanisme/import-permis.ts. Two paths, one tool: `/adresses/{cle_ban}/permis` and
 * `/parcelles/{id_parcelle}/permis` (variant `parcelle`).
 */

/** Authorisations served at most, the newest first. */
const MAX_PERMIS = 500;
const SOURCE =
  'Sitadel (SDES), liste des permis de construire et autres autorisations d’urbanisme : logements, locaux, permis de démolir, permis d’aménager';
const PARCELLE = /^(?:\d{2}|2[AB])\d{3}[0-9A-Z]{3}[0-9A-Z]{2}\d{4}$/;

const NATURES_DECLAREES: Record<string, string> = {
  '1': 'nouvelle construction',
  '2': 'travaux sur construction existante',
};
const NATURES_COMPLETEES: Record<string, string> = {
  '1': 'nouvelle construction',
  '2': 'extension',
};
const DESTINATIONS_LOCAUX: Record<string, string> = {
  '1': 'habitation',
  '2': 'hébergement hôtelier',
  '3': 'bureaux',
  '4': 'commerce et activités de service',
  '5': 'artisanat',
  '6': 'industrie',
  '7': 'exploitation agricole et forestière',
  '8': 'entrepôt',
  '9': 'équipements d’intérêt collectif et services publics',
};

// ---------------------------------------------------------------------------------------------------------------------
// Shapes.
// ---------------------------------------------------------------------------------------------------------------------

const entier = z.number().int().nullable();
const surface = z.number().nullable();

const PermisSchema = z.object({
  numero: z.string().describe('Numéro de l’autorisation (NUM_DAU, NUM_PA ou NUM_PD).'),
  type: z
    .enum(['PC', 'DP', 'PA', 'PD'])
    .describe('Permis de construire, déclaration préalable, permis d’aménager, de démolir.'),
  source: z
    .enum(['logements', 'locaux', 'demolir', 'amenager'])
    .describe('Fichier Sitadel : un projet mixte figure une fois dans chacun des fichiers logements et locaux.'),
  etat: z.object({
    code: z.string().nullable().describe('ETAT_DAU tel que publié.'),
    libelle: z.enum(['autorisee', 'annulee', 'commencee', 'achevee']).nullable(),
  }),
  depose_en: z.number().int().nullable().describe('Année de dépôt (AN_DEPOT, à défaut lue dans le numéro).'),
  autorise_le: z.string().nullable(),
  ouvert_le: z.string().nullable().describe('Ouverture de chantier déclarée (DATE_REELLE_DOC).'),
  acheve_le: z.string().nullable().describe('Achèvement déclaré (DATE_REELLE_DAACT).'),
  date_prevue: z.boolean().describe('true si l’une des dates est postérieure au jour de la réponse (date annoncée).'),
  nature: z.object({
    declaree: z.string().nullable().describe('NATURE_PROJET_DECLAREE (code).'),
    completee: z.string().nullable().describe('NATURE_PROJET_COMPLETEE (code).'),
    libelle: z.string().nullable(),
  }),
  destination: z
    .string()
    .nullable()
    .describe('Destination principale (libellé pour les locaux, sinon le code publié).'),
  logements: z
    .object({
      total: entier,
      individuels: entier,
      collectifs: entier,
      par_taille: z.object({ p1: entier, p2: entier, p3: entier, p4: entier, p5: entier, p6_et_plus: entier }),
      sociaux: entier,
      accession_sociale: entier,
      ptz: entier,
      demolis: entier,
    })
    .nullable()
    .describe('Fichier logements (et nombre de logements démolis quand il est publié) ; null sinon.'),
  surfaces: z.object({
    habitation_creee_m2: surface,
    habitation_demolie_m2: surface,
    locaux_crees_m2: surface,
    locaux_demolis_m2: surface,
  }),
  superficie_terrain_m2: surface.describe('null quand Sitadel ne la donne pas (0 dans le fichier).'),
  demandeur: z
    .object({
      denomination: z.string().nullable(),
      siren: z.string().nullable(),
      siret: z.string().nullable(),
      categorie_juridique: z.string().nullable(),
      code_ape: z.string().nullable(),
    })
    .nullable()
    .describe('Personne morale seulement ; null pour une personne physique, jamais nommée.'),
  terrain: z.object({
    commune: z.string(),
    numero: z.string().nullable(),
    voie: z.string().nullable(),
    lieu_dit: z.string().nullable(),
    code_postal: z.string().nullable(),
    localite: z.string().nullable(),
  }),
  parcelles: z.array(z.string()).describe('Parcelles du terrain (14 caractères).'),
  champs: z.record(z.string(), z.string()).describe('Les autres colonnes publiées non vides, par leur code Sitadel.'),
  rattachement: z
    .enum(['parcelle', 'adresse'])
    .describe(
      'parcelle : une parcelle du terrain est lue ; adresse : l’adresse déclarée du terrain est ce numéro BAN.',
    ),
});
type PermisItem = z.infer<typeof PermisSchema>;

const PermisOutput = z.object({
  cle_ban: z.string().nullable(),
  id_parcelle: z.string().nullable(),
  insee: z.string(),
  parcelles: z.array(z.string()).describe('Parcelles lues : celles du numéro BAN, ou la parcelle demandée.'),
  permis: z.array(PermisSchema).describe('Les plus récentes d’abord.'),
  limites: z.array(z.string()).describe('Pourquoi la liste est vide : Sitadel non importé là, ou aucune autorisation.'),
  qualite: QualiteSchema,
});
type PermisSortie = z.infer<typeof PermisOutput>;

const depuis = jour.optional().describe('Autorisations délivrées à partir de cette date (AAAA-MM-JJ).');

const AdresseInput = z.object({
  cle_ban: z.string().min(1).max(100).describe('Clé BAN d’un numéro (ex. 33234_0160_00012).'),
  depuis,
});

const ParcelleInput = z.object({
  id_parcelle: z
    .string()
    .transform((v) => v.trim().toUpperCase())
    .pipe(z.string().regex(PARCELLE, 'Parcelle cadastrale : 14 caractères (INSEE, préfixe, section, numéro).'))
    .describe('Parcelle cadastrale, 14 caractères (ex. 33234000AB0123).'),
});

// ---------------------------------------------------------------------------------------------------------------------
// Reading.
// ---------------------------------------------------------------------------------------------------------------------

interface PermisRow {
  numero: string;
  type: PermisItem['type'];
  source: PermisItem['source'];
  insee: string;
  etat_code: string | null;
  etat: PermisItem['etat']['libelle'];
  an_depot: number | null;
  depot_le: string | null;
  autorise_le: string | null;
  ouvert_le: string | null;
  acheve_le: string | null;
  nature_declaree: string | null;
  nature_completee: string | null;
  destination: string | null;
  logements_total: number | null;
  logements_individuels: number | null;
  logements_collectifs: number | null;
  logements_1p: number | null;
  logements_2p: number | null;
  logements_3p: number | null;
  logements_4p: number | null;
  logements_5p: number | null;
  logements_6p_plus: number | null;
  logements_sociaux: number | null;
  logements_accession_sociale: number | null;
  logements_ptz: number | null;
  logements_demolis: number | null;
  surface_habitation_creee: number | null;
  surface_habitation_demolie: number | null;
  surface_locaux_crees: number | null;
  surface_locaux_demolis: number | null;
  superficie_terrain: number | null;
  demandeur_personne_physique: boolean;
  demandeur_denomination: string | null;
  demandeur_siren: string | null;
  demandeur_siret: string | null;
  demandeur_categorie_juridique: string | null;
  demandeur_ape: string | null;
  terrain_numero: string | null;
  terrain_voie: string | null;
  terrain_lieu_dit: string | null;
  terrain_code_postal: string | null;
  terrain_localite: string | null;
  parcelles: string[];
  champs: Record<string, string>;
  par_parcelle: boolean;
}

const COLONNES = `p.numero, p.type, p.source, p.insee, p.etat_code, p.etat, p.an_depot,
  to_char(p.depot_le, 'YYYY-MM-DD') AS depot_le, to_char(p.autorise_le, 'YYYY-MM-DD') AS autorise_le,
  to_char(p.ouvert_le, 'YYYY-MM-DD') AS ouvert_le, to_char(p.acheve_le, 'YYYY-MM-DD') AS acheve_le,
  p.nature_declaree, p.nature_completee, p.destination, p.logements_total, p.logements_individuels,
  p.logements_collectifs, p.logements_1p, p.logements_2p, p.logements_3p, p.logements_4p, p.logements_5p,
  p.logements_6p_plus, p.logements_sociaux, p.logements_accession_sociale, p.logements_ptz, p.logements_demolis,
  p.surface_habitation_creee, p.surface_habitation_demolie, p.surface_locaux_crees, p.surface_locaux_demolis,
  p.superficie_terrain, p.demandeur_personne_physique, p.demandeur_denomination, p.demandeur_siren,
  p.demandeur_siret, p.demandeur_categorie_juridique, p.demandeur_ape, p.terrain_numero, p.terrain_voie,
  p.terrain_lieu_dit, p.terrain_code_postal, p.terrain_localite, p.parcelles, p.champs`;

// Newest first: by authorisation, else filing date, else year of filing.
const ORDRE = `coalesce(p.autorise_le, p.depot_le, make_date(p.an_depot, 1, 1)) DESC NULLS LAST, p.type, p.numero, p.source`;

function aujourdHui(ctx: OperationContext): string {
  return ctx.services.now().toISOString().slice(0, 10);
}

function itemDe(row: PermisRow, aujourdhui: string): PermisItem {
  const dates = [row.autorise_le, row.ouvert_le, row.acheve_le, row.depot_le].filter((d): d is string => d !== null);
  const avecLogements =
    row.source === 'logements' ||
    [row.logements_total, row.logements_individuels, row.logements_collectifs, row.logements_demolis].some(
      (v) => v !== null,
    );
  const natureLibelle =
    (row.nature_completee ? NATURES_COMPLETEES[row.nature_completee] : undefined) ??
    (row.nature_declaree ? NATURES_DECLAREES[row.nature_declaree] : undefined) ??
    null;
  const destination =
    row.destination === null
      ? null
      : row.source === 'locaux'
        ? (DESTINATIONS_LOCAUX[row.destination] ?? row.destination)
        : row.destination;
  return {
    numero: row.numero,
    type: row.type,
    source: row.source,
    etat: { code: row.etat_code, libelle: row.etat },
    depose_en: row.an_depot,
    autorise_le: row.autorise_le,
    ouvert_le: row.ouvert_le,
    acheve_le: row.acheve_le,
    date_prevue: dates.some((d) => d > aujourdhui),
    nature: { declaree: row.nature_declaree, completee: row.nature_completee, libelle: natureLibelle },
    destination,
    logements: avecLogements
      ? {
          total: row.logements_total,
          individuels: row.logements_individuels,
          collectifs: row.logements_collectifs,
          par_taille: {
            p1: row.logements_1p,
            p2: row.logements_2p,
            p3: row.logements_3p,
            p4: row.logements_4p,
            p5: row.logements_5p,
            p6_et_plus: row.logements_6p_plus,
          },
          sociaux: row.logements_sociaux,
          accession_sociale: row.logements_accession_sociale,
          ptz: row.logements_ptz,
          demolis: row.logements_demolis,
        }
      : null,
    surfaces: {
      habitation_creee_m2: row.surface_habitation_creee,
      habitation_demolie_m2: row.surface_habitation_demolie,
      locaux_crees_m2: row.surface_locaux_crees,
      locaux_demolis_m2: row.surface_locaux_demolis,
    },
    superficie_terrain_m2: row.superficie_terrain,
    demandeur: row.demandeur_personne_physique
      ? null
      : {
          denomination: row.demandeur_denomination,
          siren: row.demandeur_siren,
          siret: row.demandeur_siret,
          categorie_juridique: row.demandeur_categorie_juridique,
          code_ape: row.demandeur_ape,
        },
    terrain: {
      commune: row.insee,
      numero: row.terrain_numero,
      voie: row.terrain_voie,
      lieu_dit: row.terrain_lieu_dit,
      code_postal: row.terrain_code_postal,
      localite: row.terrain_localite,
    },
    parcelles: row.parcelles,
    champs: row.champs,
    rattachement: row.par_parcelle ? 'parcelle' : 'adresse',
  };
}

const METHODE =
  'Par adresse : les autorisations dont une parcelle est une parcelle du numéro BAN (rattachement parcelle), puis celles dont l’adresse déclarée du terrain est ce numéro (même commune, même numéro et indice, même voie une fois les noms pliés ; rattachement adresse). Par parcelle : celles qui la citent. Parcelles Sitadel = commune + 000 + section + numéro (au plus trois par autorisation).';

function qualiteDe(permis: PermisItem[], tronque: boolean, aujourdhui: string): PermisSortie['qualite'] {
  const flags: Drapeau[] = [];
  if (permis.some((p) => p.date_prevue)) flags.push('date_estimee');
  // The newest event already past: announced dates say nothing of how fresh the data is.
  const passees = permis
    .flatMap((p) => [p.autorise_le, p.ouvert_le, p.acheve_le])
    .filter((d): d is string => d !== null && d <= aujourdhui);
  return {
    n: permis.length,
    provenance: 'mesure',
    incertitude: null,
    drapeaux: drapeaux(flags),
    methode: tronque ? `${METHODE} Au plus ${MAX_PERMIS} autorisations, les plus récentes.` : METHODE,
    donnees_du: passees.length > 0 ? passees.reduce((a, b) => (a > b ? a : b)) : null,
    source: SOURCE,
  };
}

async function lire(
  db: Queryable,
  dataset: Dataset,
  cleBan: string | null,
  parcelles: string[],
  depuisLe: string | null,
): Promise<PermisRow[]> {
  const { rows } = await db.query<PermisRow>(
    `SELECT ${COLONNES}, (p.parcelles && $3::text[]) AS par_parcelle
       FROM permis p
      WHERE p.dataset = $1 AND (p.cle_ban = $2 OR p.parcelles && $3::text[])
        AND ($4::date IS NULL OR p.autorise_le >= $4::date
             OR (p.autorise_le IS NULL AND p.an_depot >= extract(year FROM $4::date)))
      ORDER BY ${ORDRE}
      LIMIT ${MAX_PERMIS + 1}`,
    [dataset, cleBan, parcelles, depuisLe],
  );
  return rows;
}

async function sortie(
  db: Queryable,
  dataset: Dataset,
  base: Pick<PermisSortie, 'cle_ban' | 'id_parcelle' | 'insee' | 'parcelles'>,
  rows: PermisRow[],
  depuisLe: string | null,
  aujourdhui: string,
): Promise<PermisSortie> {
  const permis = rows.slice(0, MAX_PERMIS).map((r) => itemDe(r, aujourdhui));
  const limites =
    permis.length > 0
      ? []
      : [
          (await absenceSource(db, dataset, 'permis', departementOf(base.insee))) ??
            `Aucune autorisation Sitadel ne cite ${base.cle_ban ? 'ce numéro ni ses parcelles' : 'cette parcelle'}${depuisLe ? ` depuis le ${depuisLe}` : ''}.`,
        ];
  return { ...base, permis, limites, qualite: qualiteDe(permis, rows.length > MAX_PERMIS, aujourdhui) };
}

// ---------------------------------------------------------------------------------------------------------------------
// Operations.
// ---------------------------------------------------------------------------------------------------------------------

const DESCRIPTION = `Toutes les autorisations d'urbanisme de la base nationale Sitadel (SDES) pour un numéro de la Base Adresse Nationale ou une parcelle cadastrale : permis de construire et déclarations préalables créant des logements ou des locaux, permis de démolir, permis d'aménager, les plus récentes d'abord.

**Rattachement.** Par adresse : les autorisations dont une parcelle est l'une des parcelles du numéro BAN (\`rattachement\` = \`parcelle\`), et celles dont l'adresse déclarée du terrain est ce numéro : même commune, même numéro et indice de répétition, même voie une fois les noms pliés (casse, accents, abréviations R, AV, BD, ST…) (\`rattachement\` = \`adresse\`). Une autorisation rattachée des deux façons compte comme \`parcelle\`. Par parcelle : celles qui la citent. Sitadel donne au plus trois parcelles par autorisation, sans préfixe de commune fusionnée (\`000\`) ; une parcelle redécoupée depuis ne se retrouve pas.

**Champs.** \`etat\` : code ETAT_DAU publié et son sens (2 autorisée, 4 annulée, 5 commencée, 6 achevée). \`depose_en\` : année de dépôt. \`date_prevue\` : vrai quand une date (autorisation, ouverture, achèvement, dépôt) est postérieure au jour de la réponse, comme une ouverture de chantier annoncée ; \`qualite.drapeaux\` porte alors \`date_estimee\`. \`superficie_terrain_m2\` : null quand Sitadel ne la donne pas (0 dans le fichier). \`logements\` : null hors du fichier logements. \`champs\` : toutes les autres colonnes publiées non vides, par leur code Sitadel.

**Vie privée.** \`demandeur\` n'est servi que pour une personne morale (dénomination, SIREN, SIRET, catégorie juridique, code APE) ; une personne physique n'est jamais nommée : \`demandeur\` est null et ni son nom ni sa localité ne sont conservés.

**Décisions.** Clé BAN inconnue : 404 \`adresse_introuvable\`, rien n'est débité. Clé d'une voie, d'un lieu-dit ou d'une commune : 404 \`ressource_absente\` (les autorisations se lisent par numéro ou par parcelle), rien n'est débité. Un numéro ou une parcelle sans autorisation répond 200 avec une liste vide. \`depuis\` (adresse) garde les autorisations délivrées à partir de cette date, et celles sans date d'autorisation déposées cette année-là ou après. Au plus ${MAX_PERMIS} autorisations.`;

const COMMUN = {
  tool: 'permis_adresse',
  texteTiers: true,
  method: 'GET',
  credits: 3,
  unit: 'appel',
  scope: 'adresse',
  tier: 'usage',
  sandbox: false,
  cacheS: 86_400,
  timeoutS: 15,
  description: DESCRIPTION,
  output: PermisOutput,
  dataDate: (o: PermisSortie) => o.qualite.donnees_du,
} as const;

export const permisAdresse = defineOperation({
  ...COMMUN,
  path: '/adresses/{cle_ban}/permis',
  summary: 'Autorisations d’urbanisme d’une adresse',
  errors: ['adresse_introuvable', 'ressource_absente'],
  input: AdresseInput,
  handler: servedFromDataset(async (entree, ctx, dataset) => {
    const db = ctx.services.db;
    const a = await adresseConnue(db, dataset, entree.cle_ban);
    if (a.type !== 'numero') {
      throw new ApiError(
        'ressource_absente',
        `« ${a.cle_ban} » n’est pas la clé d’un numéro : les autorisations se lisent par numéro ou par parcelle ; rien n’est débité.`,
      );
    }
    const parcelles = a.parcelles ?? [];
    const depuisLe = entree.depuis ?? null;
    const lues = await lire(db, dataset, a.cle_ban, parcelles, depuisLe);
    const base = { cle_ban: a.cle_ban, id_parcelle: null, insee: a.insee, parcelles };
    return sortie(db, dataset, base, lues, depuisLe, aujourdHui(ctx));
  }),
});

export const permisParcelle = defineOperation({
  ...COMMUN,
  variant: 'parcelle',
  path: '/parcelles/{id_parcelle}/permis',
  summary: 'Autorisations d’urbanisme d’une parcelle',
  input: ParcelleInput,
  handler: servedFromDataset(async (entree, ctx, dataset) => {
    const lues = await lire(ctx.services.db, dataset, null, [entree.id_parcelle], null);
    return sortie(
      ctx.services.db,
      dataset,
      {
        cle_ban: null,
        id_parcelle: entree.id_parcelle,
        insee: entree.id_parcelle.slice(0, 5),
        parcelles: [entree.id_parcelle],
      },
      lues,
      null,
      aujourdHui(ctx),
    );
  }),
});

/** The permit operations, for the catalogue. */
export const permisOperations = [permisAdresse, permisParcelle];
