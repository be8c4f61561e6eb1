import { z } from 'zod';
import { defineOperation } from '../catalogue.ts';
import { departementOf } from '../communes.ts';
import { absenceDvf } from '../couverture.ts';
import { jour, nombre } from '../entrees.ts';
import { invalidField } from '../errors.ts';
import { liveIsDemonstration, QualiteSchema, servedFromDataset, SOURCE_DEMONSTRATION } from '../qualite.ts';
import {
  GENRES,
  lireJournal,
  sourceDe,
  type EvenementLu,
  type FiltresJournal,
  type Genre,
} from './journal-adresses.ts';

/**
 * flux_adresses: the journal of address novelties (domain/flux/journal-adresses.ts) read with a cursor. The cursor
 * carries the last id read and the filters, signed: resent later, it reads only what entered since.
 */

const MAX_CODES = 20;

// ---------------------------------------------------------------------------------------------------------------------
// Shapes.
// ---------------------------------------------------------------------------------------------------------------------

const CLASSE = z.enum(['A', 'B', 'C', 'D', 'E', 'F', 'G']);

const DETAILS = {
  dpe: z.object({
    numero_dpe: z.string().describe('Numéro ADEME du DPE (13 caractères).'),
    etiquette: CLASSE.describe('Étiquette énergie.'),
    ges: CLASSE.nullable().describe('Étiquette climat (gaz à effet de serre).'),
    type_batiment: z.enum(['maison', 'appartement', 'immeuble']).nullable(),
    surface_m2: z.number().nullable().describe('Surface habitable du logement (m²).'),
    remplace: z.string().nullable().describe('Numéro du DPE que celui-ci annule et remplace.'),
  }),
  audit: z.object({
    numero_audit: z.string(),
    numero_dpe: z.string().nullable().describe('DPE audité.'),
    classe_initiale: CLASSE.nullable(),
    classe_visee: CLASSE.nullable().describe('Meilleure classe atteinte par les étapes finales des scénarios.'),
    cout_travaux_max: z.number().nullable().describe('Coût cumulé le plus élevé des scénarios (€).'),
  }),
  permis: z.object({
    type: z
      .enum(['PC', 'DP', 'PA', 'PD'])
      .describe('Permis de construire, déclaration préalable, d’aménager, de démolir.'),
    numero: z.string(),
    etat: z.enum(['autorisee', 'annulee', 'commencee', 'achevee']).nullable(),
    autorise_le: z.string().nullable(),
    depose_le: z.string().nullable(),
    logements_crees: z.number().int().nullable(),
    surface_habitation_creee_m2: z.number().nullable(),
    surface_locaux_crees_m2: z.number().nullable(),
    demandeur: z
      .object({ denomination: z.string().nullable(), siren: z.string().nullable() })
      .nullable()
      .describe('Personne morale seulement ; null pour une personne physique, jamais nommée.'),
  }),
  societe_civile: z.object({
    avis: z.string().describe('Identifiant BODACC de l’avis.'),
    denomination: z.string().nullable(),
    siren: z.string().nullable(),
    forme: z.string().nullable().describe('Forme juridique écrite dans l’avis.'),
    famille: z.enum([
      'creation',
      'modification',
      'transfert',
      'radiation',
      'procedure',
      'depot_comptes',
      'vente',
      'autre',
    ]),
    type: z.enum(['initial', 'rectificatif', 'annulation']),
    resume: z
      .string()
      .describe(
        'Résumé tiré des seuls champs codés de l’avis : ni gérant, ni associé, ni personne physique n’y figure.',
      ),
  }),
  vente: z.object({
    id_mutation: z.string(),
    nature: z.string().describe('vente, vefa, terrain_a_batir, adjudication, echange, expropriation.'),
    prix: z.number().nullable().describe('Valeur foncière (€).'),
    types: z.array(z.string()).describe('Types des locaux de la mutation : appartement, maison, dependance, local.'),
    logements: z.number().int(),
    surface_logements_m2: z.number().nullable(),
    prix_m2: z.number().nullable().describe('Valeur foncière sur la surface des logements.'),
  }),
} satisfies Record<Genre, z.ZodObject>;

const COMMUN = {
  id: z.string().describe('Identifiant de l’événement, croissant dans l’ordre du flux.'),
  cle_ban: z.string().describe('Clé BAN de l’adresse (numéro, à défaut voie).'),
  insee: z.string(),
  code_postal: z.string().nullable(),
  date_source: z.string().describe('Date donnée par la source (AAAA-MM-JJ) : voir chaque genre.'),
  entree_le: z.string().describe('Entrée au journal (ISO 8601).'),
  source: z.string().describe('Source publique.'),
};

const evenement = <G extends Genre>(genre: G) =>
  z.object({ ...COMMUN, genre: z.literal(genre), detail: DETAILS[genre] as (typeof DETAILS)[G] });

const EvenementSchema = z
  .discriminatedUnion('genre', [
    evenement('dpe'),
    evenement('audit'),
    evenement('permis'),
    evenement('societe_civile'),
    evenement('vente'),
  ])
  .describe('Une nouveauté à une adresse ; `genre` dit la forme de `detail`.');

const SortieSchema = z.object({
  evenements: z.array(EvenementSchema).describe('Dans l’ordre du journal.'),
  a_jour: z.boolean().describe('true : rien d’autre à lire pour l’instant.'),
  qualite: QualiteSchema,
  curseur_suivant: z
    .string()
    .describe('Toujours donné, même sur la dernière page : renvoyé plus tard, il ne lit que ce qui est entré depuis.'),
  limites: z.array(z.string()),
});
type Sortie = z.infer<typeof SortieSchema>;

/** A repeated query parameter (or a list, or comma-separated values): absent when empty. */
function liste<T extends z.ZodType>(element: T, max: number) {
  return z.preprocess((value) => {
    if (value === undefined) return undefined;
    const valeurs = (Array.isArray(value) ? value : [value]).flatMap((v: unknown) =>
      typeof v === 'string' ? v.split(',').map((x) => x.trim()) : [v],
    );
    const gardees = valeurs.filter((v) => v !== '');
    return gardees.length === 0 ? undefined : gardees;
  }, z.array(element).max(max).optional());
}

// A day, or a day and a time (seconds, fractions and offset optional), as ISO 8601 and PostgreSQL read them.
const INSTANT =
  /^(\d{4}-\d{2}-\d{2})(?:[T ](?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:\.\d{1,6})?)?(?:Z|[+-](?:[01]\d|2[0-3]):?[0-5]\d)?)?$/i;

const EntreeSchema = z.object({
  depuis: z
    .string()
    .trim()
    .max(40)
    .refine((v) => INSTANT.test(v) && jour.safeParse(v.slice(0, 10)).success, {
      message: 'Date AAAA-MM-JJ ou horodatage ISO 8601 (AAAA-MM-JJTHH:MM[:SS][Z|±HH:MM]) attendu.',
    })
    .optional()
    .describe(
      'Entrées au journal à partir de cet instant : une date (depuis minuit, heure de Paris) ou un horodatage ISO 8601 (heure de Paris sans décalage).',
    ),
  genres: liste(z.enum(GENRES), GENRES.length).describe(
    'Genres retenus (paramètre répété, ou valeurs séparées par des virgules) ; tous sans lui.',
  ),
  insee: liste(
    z
      .string()
      .transform((v) => v.toUpperCase())
      .pipe(z.string().regex(/^(?:\d{2}|2[AB])\d{3}$/, 'Code INSEE de commune : 5 caractères (2A/2B en Corse).')),
    MAX_CODES,
  ).describe(`Communes (codes INSEE, ${MAX_CODES} au plus).`),
  cp: liste(z.string().regex(/^\d{5}$/, 'Code postal : 5 chiffres.'), MAX_CODES).describe(
    `Codes postaux (${MAX_CODES} au plus).`,
  ),
  limite: nombre(z.number().int().min(1).max(1000).default(100)).describe('Événements par page (1-1000).'),
  curseur: z.string().min(1).max(1024).optional().describe('curseur_suivant d’une lecture précédente.'),
});
type Entree = z.output<typeof EntreeSchema>;

/** What a cursor carries: the last id read and the filters it reads with. */
interface Position {
  id: number;
  filtres: FiltresJournal;
}

const triees = <T extends string>(valeurs: T[] | undefined): T[] => [...new Set(valeurs ?? [])].sort();

function filtresDe(e: Entree): FiltresJournal {
  return { genres: triees(e.genres), insee: triees(e.insee), cp: triees(e.cp), depuis: e.depuis ?? null };
}

const aucunFiltre = (f: FiltresJournal) =>
  f.genres.length === 0 && f.insee.length === 0 && f.cp.length === 0 && f.depuis === null;

// ---------------------------------------------------------------------------------------------------------------------
// Operation.
// ---------------------------------------------------------------------------------------------------------------------

const LIMITES = [
  'Nouveautés rattachées à une clé de la BAN seulement : un DPE que l’observatoire n’a pas géocodé, une vente que DVF ne place à aucun numéro, une autorisation dont l’adresse du terrain n’est pas retrouvée dans la BAN n’y figurent pas.',
  'Une nouveauté est une ligne nouvelle dans la base, écrite au journal par l’import qui l’apporte : une ligne déjà connue que la source corrige n’en est pas une, et les données importées avant l’ouverture du journal n’y sont pas.',
];

const METHODE =
  'Journal des nouveautés écrit par les imports (DPE et audits ADEME, Sitadel, BODACC, DVF) dans la transaction qui écrit la ligne (DVF : en fin d’import, une fois les ventes rattachées à la BAN) ; identifiants croissants, jamais réécrits.';

function libelleFiltres(f: FiltresJournal): string {
  const parts = [
    f.genres.length > 0 ? `genres ${f.genres.join(', ')}` : null,
    f.insee.length > 0 ? `communes ${f.insee.join(', ')}` : null,
    f.cp.length > 0 ? `codes postaux ${f.cp.join(', ')}` : null,
    f.depuis ? `entrées depuis ${f.depuis}` : null,
  ].filter((p) => p !== null);
  return parts.length > 0 ? parts.join(' ; ') : 'aucun filtre';
}

/** Why a read served nothing. */
function pourquoiRien(f: FiltresJournal, apres: number, dernier: number | null): string[] {
  if (dernier === null) return ['Le journal des nouveautés est vide : aucun import n’y a encore rien écrit.'];
  const raisons = [
    apres > 0
      ? `Rien de nouveau depuis ce curseur (${libelleFiltres(f)}) : renvoyez curseur_suivant plus tard.`
      : `Aucune nouveauté au journal pour ces filtres (${libelleFiltres(f)}).`,
  ];
  if (f.genres.length === 0 || f.genres.includes('vente')) {
    const absences = new Set(f.insee.map((insee) => absenceDvf(departementOf(insee))).filter((r) => r !== null));
    raisons.push(...absences);
  }
  return raisons;
}

const DESCRIPTION = `Nouveautés datées aux adresses de la Base Adresse Nationale, tirées d'un journal que chaque import écrit : nouveau DPE, nouvel audit énergétique, nouvelle autorisation d'urbanisme, nouvel avis d'une société civile domiciliée à l'adresse, nouvelle vente DVF. Chaque événement porte la clé BAN, la date à la source, le détail et la source publique. **1 crédit par événement livré** (une page vide ne coûte rien).

**Genres** (noms choisis ; \`genre\` dit la forme de \`detail\`) :
- \`dpe\` : un DPE nouveau dans la base (Observatoire DPE, ADEME) ; \`date_source\` = établissement ; \`detail\` : numero_dpe, etiquette, ges, type_batiment, surface_m2, remplace (DPE annulé et remplacé).
- \`audit\` : un audit énergétique nouveau (Audits énergétiques, ADEME), à sa clé BAN ou à celle du DPE audité (un audit dont le DPE arrive plus tard devient une nouveauté quand les deux sont liés) ; \`date_source\` = établissement ; \`detail\` : numero_audit, numero_dpe, classe_initiale, classe_visee, cout_travaux_max.
- \`permis\` : une autorisation d'urbanisme nouvelle (Sitadel, SDES), un projet mixte (fichiers logements et locaux) une seule fois ; \`date_source\` = autorisation, à défaut dépôt ; \`detail\` : type (PC, DP, PA, PD), numero, etat, autorise_le, depose_le, logements_crees, surface_habitation_creee_m2, surface_locaux_crees_m2, demandeur (personne morale seulement, sinon null).
- \`societe_civile\` : un avis BODACC nouveau (BODACC, DILA) d'une société civile (catégorie 65xx selon SIRENE, à défaut la forme écrite dans l'avis) dont le siège est à l'adresse ; \`date_source\` = parution ; \`detail\` : avis, denomination, siren, forme, famille (creation, modification, transfert, radiation, procedure, depot_comptes, vente, autre), type (initial, rectificatif, annulation), resume (tiré des seuls champs codés).
- \`vente\` : une mutation DVF nouvelle (DVF, DGFiP, Etalab), rattachée à un numéro BAN ; \`date_source\` = date de mutation ; \`detail\` : id_mutation, nature, prix (valeur foncière), types des locaux, logements, surface_logements_m2, prix_m2.

**Ce qui est une nouveauté.** Une ligne nouvelle dans la base, écrite au journal dans la transaction même de l'import qui l'apporte (DVF : dans une transaction de fin d'import, une fois les ventes rattachées à la BAN). Réimporter un fichier n'ajoute rien ; une ligne que la source corrige n'est pas une nouveauté ; une nouveauté sans clé BAN n'entre pas. Le journal ne réécrit jamais un événement.

**Lecture.** Les événements sont servis dans l'ordre du journal (\`id\` croissant, \`entree_le\` aussi), \`limite\` (1-1000, 100 par défaut) par page. \`curseur_suivant\` est **toujours** donné, même sur la dernière page ; renvoyé plus tard, il ne lit que ce qui est entré depuis. Il porte les filtres de la lecture : renvoyez-le seul, ou avec les mêmes filtres (d'autres filtres : 400 sur \`curseur\`). \`a_jour\` = true quand il ne reste rien à lire pour l'instant. Un événement entré au journal n'échappe jamais à un curseur déjà passé au-delà de lui : les imports écrivent le journal l'un après l'autre, chacun jusqu'à sa validation.

**Filtres** (combinés par ET) : \`genres\`, \`insee\` (${MAX_CODES} communes au plus), \`cp\` (${MAX_CODES} codes postaux au plus), répétés ou séparés par des virgules ; \`depuis\` : entrées au journal à partir d'une date (minuit, heure de Paris) ou d'un horodatage ISO 8601 (heure de Paris sans décalage).

**Vie privée.** Aucune personne physique n'est nommée : DVF n'a pas de nom, le demandeur d'une autorisation n'est servi que personne morale, seuls les avis BODACC de personnes morales entrent.

**Décisions.** Journal vide ou filtres sans résultat : 200 avec \`evenements\` vide, 0 crédit, la raison dans \`limites\`. Données de démonstration : \`source\` et \`qualite.source\` le disent.`;

export const fluxAdresses = defineOperation({
  tool: 'flux_adresses',
  method: 'GET',
  path: '/flux/adresses',
  summary: 'Nouveautés aux adresses (DPE, audits, permis, sociétés civiles, ventes)',
  description: DESCRIPTION,
  credits: 1,
  unit: 'evenement',
  scope: 'flux',
  tier: 'data',
  sandbox: false,
  cacheS: 60,
  timeoutS: 4,
  // Company names and notice summaries are third-party text.
  texteTiers: true,
  input: EntreeSchema,
  output: SortieSchema,
  units: (o: Sortie) => o.evenements.length,
  dataDate: (o: Sortie) => o.qualite.donnees_du,
  handler: servedFromDataset(async (e, ctx, dataset): Promise<Sortie> => {
    const db = ctx.services.db;
    const scope = `flux_adresses|${dataset}`;
    let filtres = filtresDe(e);
    let apres = 0;
    if (e.curseur) {
      const position = ctx.services.cursors.decode<Position>(scope, e.curseur);
      if (!position || !Number.isSafeInteger(position.id) || typeof position.filtres !== 'object') {
        throw invalidField('curseur', 'Curseur invalide : altéré, ou émis par une autre opération.', 'requete');
      }
      if (!aucunFiltre(filtres) && JSON.stringify(filtres) !== JSON.stringify(position.filtres)) {
        throw invalidField(
          'curseur',
          'Ce curseur a été émis pour d’autres filtres : renvoyez-le seul, ou avec les filtres de sa lecture.',
          'requete',
        );
      }
      filtres = position.filtres;
      apres = position.id;
    }

    const { evenements: lus, dernier } = await lireJournal(db, dataset, apres, filtres, e.limite + 1);
    const page = lus.slice(0, e.limite);
    const aJour = lus.length <= e.limite;
    // Past a page that is not full, the whole journal as it is now has been read: the cursor moves to its end.
    const suivant = aJour ? Math.max(apres, dernier ?? 0) : page.at(-1)!.id;
    const demonstration = dataset === 'live' && (await liveIsDemonstration(db));
    const evenements = page.map((ev: EvenementLu) => ({
      id: String(ev.id),
      genre: ev.genre,
      cle_ban: ev.cle_ban,
      insee: ev.insee,
      code_postal: ev.code_postal,
      date_source: ev.date_source,
      entree_le: ev.entree_le.toISOString(),
      detail: ev.detail,
      source: demonstration ? SOURCE_DEMONSTRATION : ev.source,
    })) as unknown as Sortie['evenements'];
    const genres = filtres.genres.length > 0 ? filtres.genres : [...GENRES];
    return {
      evenements,
      a_jour: aJour,
      qualite: {
        n: evenements.length,
        provenance: 'mesure',
        incertitude: null,
        drapeaux: [],
        methode: METHODE,
        donnees_du: page.at(-1)?.entree_le.toISOString() ?? null,
        source: genres.map(sourceDe).join(', '),
      },
      curseur_suivant: ctx.services.cursors.encode(scope, { id: suivant, filtres } satisfies Position),
      limites: evenements.length > 0 ? LIMITES : [...pourquoiRien(filtres, apres, dernier), ...LIMITES],
    };
  }),
});

/** The feed operations of this module, for the catalogue. */
export const fluxAdressesOperations = [fluxAdresses];
