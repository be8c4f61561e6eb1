import { z } from 'zod';
import type { Queryable } from '../../db/client.ts';
import { adresseConnue, plier } from '../adresses/resoudre.ts';
import { defineOperation } from '../catalogue.ts';
import { absenceSource } from '../couverture.ts';
import { drapeaux, QualiteSchema, servedFromDataset, type Drapeau } from '../qualite.ts';
import type { Dataset } from '../platform/sandbox.ts';
import { departementOf } from '../communes.ts';

/**
 * societes_civiles: the civil companies (legal category 65xx, 6540 SCI first) domiciled at a BAN number, from the
 * SIRENE establishments attached to the number and the BODACC notices whose registered office is the number, with
 * each company's notices and whether it was there at the date of the address's last DPE. Managers and partners are
 * never named: they are not stored (see db/migrations/012_entreprises_permis.sql).
 */

const AVIS_PAR_SOCIETE = 50;
const SOURCE = 'SIRENE (Insee) et BODACC (DILA)';

/** Labels of the legal categories of civil companies (Insee, level III). */
const FORMES: Record<string, string> = {
  '6511': 'Société interprofessionnelle de soins ambulatoires',
  '6521': 'Société civile de placement collectif immobilier (SCPI)',
  '6532': 'Société civile d’intérêt collectif agricole (SICA)',
  '6533': 'Groupement agricole d’exploitation en commun (GAEC)',
  '6534': 'Groupement foncier agricole',
  '6535': 'Groupement agricole foncier',
  '6536': 'Groupement forestier',
  '6537': 'Groupement pastoral',
  '6538': 'Groupement foncier et rural',
  '6539': 'Société civile foncière',
  '6540': 'Société civile immobilière',
  '6541': 'Société civile immobilière de construction-vente',
  '6542': 'Société civile d’attribution',
  '6543': 'Société civile coopérative de construction',
  '6544': 'Société civile immobilière d’accession progressive à la propriété',
  '6551': 'Société civile coopérative de consommation',
  '6554': 'Société civile coopérative d’intérêt maritime',
  '6558': 'Société civile coopérative entre médecins',
  '6560': 'Autre société civile coopérative',
  '6561': 'Société civile professionnelle d’avocats',
  '6562': 'Société civile professionnelle d’avocats aux conseils',
  '6563': 'Société civile professionnelle d’avoués d’appel',
  '6564': 'Société civile professionnelle d’huissiers',
  '6565': 'Société civile professionnelle de notaires',
  '6566': 'Société civile professionnelle de commissaires-priseurs',
  '6567': 'Société civile professionnelle de greffiers de tribunal de commerce',
  '6568': 'Société civile professionnelle de conseils juridiques',
  '6569': 'Société civile professionnelle de commissaires aux comptes',
  '6571': 'Société civile professionnelle de médecins',
  '6572': 'Société civile professionnelle de dentistes',
  '6573': 'Société civile professionnelle d’infirmiers',
  '6574': 'Société civile professionnelle de masseurs-kinésithérapeutes',
  '6575': 'Société civile professionnelle de directeurs de laboratoire d’analyse médicale',
  '6576': 'Société civile professionnelle de vétérinaires',
  '6577': 'Société civile professionnelle de géomètres experts',
  '6578': 'Société civile professionnelle d’architectes',
  '6585': 'Autre société civile professionnelle',
  '6588': 'Société civile laitière',
  '6589': 'Société civile de moyens',
  '6595': 'Caisse locale de crédit mutuel',
  '6596': 'Caisse de crédit agricole mutuel',
  '6597': 'Société civile d’exploitation agricole',
  '6598': 'Exploitation agricole à responsabilité limitée',
  '6599': 'Autre société civile',
};

/** The label of a legal category: the civil companies' own, else the civil-company family. */
export function formeDe(categorie: string | null): string | null {
  if (categorie === null) return null;
  return FORMES[categorie] ?? (categorie.startsWith('65') ? 'Société civile' : null);
}

// ---------------------------------------------------------------------------------------------------------------------
// Shapes.
// ---------------------------------------------------------------------------------------------------------------------

const FAMILLES = [
  'creation',
  'modification',
  'transfert',
  'radiation',
  'procedure',
  'depot_comptes',
  'vente',
  'autre',
] as const;

const AvisSchema = z.object({
  id: z.string().describe('Identifiant BODACC de l’avis (lettre de publication, parution, numéro d’annonce).'),
  date: z.string().describe('Date de parution (AAAA-MM-JJ).'),
  famille: z
    .enum(FAMILLES)
    .describe(
      'creation (immatriculation), modification, transfert (du siège, vers ou depuis l’adresse), radiation, procedure (procédure collective, conciliation), depot_comptes, vente, autre.',
    ),
  type: z.enum(['initial', 'rectificatif', 'annulation']),
  resume: z
    .string()
    .describe('Résumé tiré des seuls champs codés de l’avis : ni gérant, ni associé, ni personne physique n’y figure.'),
});

const SocieteSchema = z.object({
  denomination: z.string(),
  siren: z.string().nullable().describe('SIREN de l’avis ou de SIRENE ; null quand rien ne le donne.'),
  siren_rapproche: z
    .boolean()
    .describe('true : les avis ne donnaient pas le SIREN, trouvé par la dénomination et le code postal du siège.'),
  forme: z.string().nullable().describe('Libellé de la catégorie juridique (SIRENE), à défaut la forme de l’avis.'),
  categorie_juridique: z.string().nullable(),
  creee_le: z.string().nullable().describe('Création (SIRENE), à défaut date de l’avis d’immatriculation.'),
  radiee_le: z
    .string()
    .nullable()
    .describe('Cessation (SIRENE), à défaut date de l’avis de radiation ; null si active.'),
  avis: z
    .array(AvisSchema)
    .describe(`Avis BODACC de la société, les plus récents d’abord (au plus ${AVIS_PAR_SOCIETE}).`),
  presente_avant_dernier_dpe: z
    .boolean()
    .nullable()
    .describe(
      'true : connue à l’adresse à la date du dernier DPE (et pas radiée avant) ; false : arrivée après, ou radiée avant ; null : pas de DPE à l’adresse ou aucune date de présence.',
    ),
});
type Societe = z.infer<typeof SocieteSchema>;

const SortieSchema = z.object({
  cle_ban: z.string(),
  adresse: z.object({ libelle: z.string(), code_postal: z.string().nullable(), insee: z.string() }),
  n: z.number().int().min(0).describe('Nombre de sociétés civiles servies.'),
  societes: z.array(SocieteSchema),
  dernier_dpe_le: z
    .string()
    .nullable()
    .describe('Date du DPE le plus récent de l’adresse, repère de presente_avant_dernier_dpe.'),
  limites: z.array(z.string()),
  qualite: QualiteSchema,
});
type Sortie = z.infer<typeof SortieSchema>;

const InputSchema = z.object({
  cle_ban: z.string().min(1).max(100).describe('Clé BAN d’un numéro (ex. 33234_0160_00012).'),
});

// ---------------------------------------------------------------------------------------------------------------------
// Reading.
// ---------------------------------------------------------------------------------------------------------------------

interface EtabRow {
  siren: string;
  etab_cree_le: string | null;
  etab_ferme_le: string | null;
}

interface UniteRow {
  siren: string;
  denomination: string | null;
  categorie_juridique: string | null;
  societe_civile: boolean;
  personne_physique: boolean;
  etat: string | null;
  cree_le: string | null;
  cesse_le: string | null;
  traite_le: string | null;
}

interface AvisRow {
  id: string;
  date_parution: string;
  date_effet: string | null;
  type_avis: string | null;
  categorie: (typeof FAMILLES)[number];
  denomination: string | null;
  forme_juridique: string | null;
  sirens: string[];
  societe_civile: boolean;
  siege_code_postal: string | null;
  cp: string | null;
  cle_ban: string | null;
  resume: string;
}

const AVIS_COLONNES = `id, to_char(date_parution, 'YYYY-MM-DD') AS date_parution, to_char(date_effet, 'YYYY-MM-DD') AS date_effet,
  type_avis, categorie, denomination, forme_juridique, sirens, societe_civile, siege_code_postal, cp, cle_ban, resume`;

async function unites(db: Queryable, dataset: Dataset, sirens: string[]): Promise<Map<string, UniteRow>> {
  if (sirens.length === 0) return new Map();
  const { rows } = await db.query<UniteRow>(
    `SELECT siren, denomination, categorie_juridique, societe_civile, personne_physique, etat,
            to_char(cree_le, 'YYYY-MM-DD') AS cree_le, to_char(cesse_le, 'YYYY-MM-DD') AS cesse_le,
            to_char(dernier_traitement, 'YYYY-MM-DD') AS traite_le
       FROM unites_legales WHERE dataset = $1 AND siren = ANY($2::text[])`,
    [dataset, sirens],
  );
  return new Map(rows.map((r) => [r.siren, r]));
}

/** The SIREN of a civil company by its name and the postal code of its seat, when exactly one fits. */
async function sirenParNom(
  db: Queryable,
  dataset: Dataset,
  denomination: string,
  codePostal: string | null,
): Promise<string | null> {
  if (!codePostal) return null;
  const sirene = await db.query<{ siren: string }>(
    `SELECT DISTINCT u.siren
       FROM unites_legales u
       JOIN etablissements e ON e.dataset = u.dataset AND e.siren = u.siren
      WHERE u.dataset = $1 AND u.societe_civile AND svc_plier(u.denomination) = svc_plier($2)
        AND e.code_postal = $3
      LIMIT 2`,
    [dataset, denomination, codePostal],
  );
  if (sirene.rows.length === 1) return sirene.rows[0].siren;
  if (sirene.rows.length > 1) return null;
  const avis = await db.query<{ siren: string }>(
    `SELECT DISTINCT s AS siren
       FROM avis_bodacc a, unnest(a.sirens) AS s
      WHERE a.dataset = $1 AND svc_plier(a.denomination) = svc_plier($2) AND a.siege_code_postal = $3
      LIMIT 2`,
    [dataset, denomination, codePostal],
  );
  return avis.rows.length === 1 ? avis.rows[0].siren : null;
}

function typeAvis(type: string | null): Societe['avis'][number]['type'] {
  const t = plier(type ?? '');
  if (t.startsWith('rectif')) return 'rectificatif';
  if (t.startsWith('annul')) return 'annulation';
  return 'initial';
}

const min = (dates: Array<string | null>) =>
  dates.filter((d): d is string => d !== null).reduce<string | null>((a, b) => (a === null || b < a ? b : a), null);
const max = (dates: Array<string | null>) =>
  dates.filter((d): d is string => d !== null).reduce<string | null>((a, b) => (a === null || b > a ? b : a), null);

interface Groupe {
  siren: string | null;
  rapproche: boolean;
  etablissements: EtabRow[];
  avisIci: AvisRow[];
}

async function construire(
  db: Queryable,
  dataset: Dataset,
  cleBan: string,
  codePostal: string | null,
): Promise<{ societes: Societe[]; dernierDpe: string | null; sources: number; donneesDu: string | null }> {
  const etabs = await db.query<EtabRow>(
    `SELECT e.siren, to_char(e.cree_le, 'YYYY-MM-DD') AS etab_cree_le, to_char(e.ferme_le, 'YYYY-MM-DD') AS etab_ferme_le
       FROM etablissements e
       JOIN unites_legales u ON u.dataset = e.dataset AND u.siren = e.siren
      WHERE e.dataset = $1 AND e.cle_ban = $2 AND u.societe_civile`,
    [dataset, cleBan],
  );
  const avisIci = await db.query<AvisRow>(
    `SELECT ${AVIS_COLONNES} FROM avis_bodacc
      WHERE dataset = $1 AND cle_ban = $2 AND NOT porte_sur_personne_physique`,
    [dataset, cleBan],
  );
  const connues = await unites(db, dataset, [...new Set(avisIci.rows.flatMap((a) => a.sirens))]);

  const groupes = new Map<string, Groupe>();
  const groupe = (cle: string, siren: string | null, rapproche = false): Groupe => {
    let g = groupes.get(cle);
    if (!g) groupes.set(cle, (g = { siren, rapproche, etablissements: [], avisIci: [] }));
    return g;
  };
  for (const e of etabs.rows) groupe(e.siren, e.siren).etablissements.push(e);
  for (const a of avisIci.rows) {
    const unite = a.sirens.map((s) => connues.get(s)).find((u) => u !== undefined);
    // A notice's own words say "civil company"; SIRENE's category, when known, has the last word.
    const civile = unite ? unite.societe_civile : a.societe_civile;
    if (!civile) continue;
    let siren: string | null = a.sirens.find((s) => connues.get(s)?.societe_civile) ?? a.sirens[0] ?? null;
    let rapproche = false;
    if (siren === null && a.denomination) {
      siren = await sirenParNom(db, dataset, a.denomination, a.siege_code_postal ?? a.cp ?? codePostal);
      rapproche = siren !== null;
    }
    const cle = siren ?? `nom:${plier(a.denomination ?? a.id)}`;
    const g = groupe(cle, siren, rapproche);
    g.rapproche ||= rapproche;
    g.avisIci.push(a);
  }

  const sirens = [...groupes.values()].map((g) => g.siren).filter((s): s is string => s !== null);
  const fiches = await unites(db, dataset, sirens);
  const tousAvis = new Map<string, AvisRow[]>();
  if (sirens.length > 0) {
    const { rows } = await db.query<AvisRow>(
      `SELECT ${AVIS_COLONNES} FROM avis_bodacc
        WHERE dataset = $1 AND sirens && $2::text[] AND NOT porte_sur_personne_physique`,
      [dataset, sirens],
    );
    for (const a of rows) {
      for (const s of a.sirens) if (sirens.includes(s)) tousAvis.set(s, [...(tousAvis.get(s) ?? []), a]);
    }
  }
  const dpe = await db.query<{ le: string | null }>(
    `SELECT to_char(max(etabli_le), 'YYYY-MM-DD') AS le FROM dpe WHERE dataset = $1 AND cle_ban = $2`,
    [dataset, cleBan],
  );
  const dernierDpe = dpe.rows[0]?.le ?? null;

  let sources = 0;
  const datesDonnees: Array<string | null> = [];
  const societes: Societe[] = [];
  for (const g of groupes.values()) {
    const fiche = g.siren ? fiches.get(g.siren) : undefined;
    const parId = new Map<string, AvisRow>();
    for (const a of [...(g.siren ? (tousAvis.get(g.siren) ?? []) : []), ...g.avisIci]) parId.set(a.id, a);
    const avis = [...parId.values()].sort((a, b) =>
      a.date_parution !== b.date_parution ? (a.date_parution < b.date_parution ? 1 : -1) : a.id < b.id ? 1 : -1,
    );
    sources += g.etablissements.length + avis.length;
    datesDonnees.push(fiche?.traite_le ?? null, avis[0]?.date_parution ?? null);
    const dateAvis = (a: AvisRow) => a.date_effet ?? a.date_parution;
    const creations = avis.filter((a) => a.categorie === 'creation');
    const radiations = avis.filter((a) => a.categorie === 'radiation' && typeAvis(a.type_avis) !== 'annulation');
    const creeeLe = fiche?.cree_le ?? min(creations.map(dateAvis));
    const radieeLe = fiche ? (fiche.etat === 'C' ? fiche.cesse_le : null) : max(radiations.map(dateAvis));

    // At the address: from the establishment's creation or the first notice placing the seat here, until the
    // establishment closed or the company was removed.
    const debut = min([
      ...g.etablissements.map((e) => e.etab_cree_le),
      ...g.avisIci.map((a) =>
        a.categorie === 'creation' || a.categorie === 'transfert' ? dateAvis(a) : a.date_parution,
      ),
    ]);
    const fermetures = g.etablissements.map((e) => e.etab_ferme_le);
    const fin = min([
      radieeLe,
      g.etablissements.length > 0 && fermetures.every((f) => f !== null) ? max(fermetures) : null,
    ]);
    const presente =
      dernierDpe === null || debut === null ? null : debut <= dernierDpe && (fin === null || fin >= dernierDpe);

    societes.push({
      denomination:
        fiche?.denomination ?? avis.find((a) => a.denomination)?.denomination ?? '(dénomination non publiée)',
      siren: g.siren,
      siren_rapproche: g.rapproche,
      forme:
        formeDe(fiche?.categorie_juridique ?? null) ?? avis.find((a) => a.forme_juridique)?.forme_juridique ?? null,
      categorie_juridique: fiche?.categorie_juridique ?? null,
      creee_le: creeeLe,
      radiee_le: radieeLe,
      avis: avis.slice(0, AVIS_PAR_SOCIETE).map((a) => ({
        id: a.id,
        date: a.date_parution,
        famille: a.categorie,
        type: typeAvis(a.type_avis),
        resume: a.resume,
      })),
      presente_avant_dernier_dpe: presente,
    });
  }
  societes.sort(
    (a, b) =>
      Number(a.radiee_le !== null) - Number(b.radiee_le !== null) ||
      a.denomination.localeCompare(b.denomination, 'fr') ||
      (a.siren ?? '').localeCompare(b.siren ?? ''),
  );
  return { societes, dernierDpe, sources, donneesDu: max(datesDonnees) };
}

const METHODE =
  'Sociétés civiles (catégorie juridique 65xx) dont un établissement SIRENE est à ce numéro BAN (même commune, numéro, indice et voie), ou dont un avis BODACC place le siège à ce numéro. Un avis sans SIREN est rapproché d’une unité SIRENE par sa dénomination pliée et le code postal du siège quand une seule correspond.';

// ---------------------------------------------------------------------------------------------------------------------
// Operation.
// ---------------------------------------------------------------------------------------------------------------------

const DESCRIPTION = `Sociétés civiles domiciliées à un numéro de la Base Adresse Nationale (SCI et autres sociétés civiles, catégorie juridique 65xx) : dénomination, SIREN, forme, dates de création et de radiation, avis BODACC datés (création, modification, transfert, radiation, procédure…) et présence à la date du dernier DPE de l'adresse.

**Qui est servi.** Une société civile dont un établissement SIRENE (siège ou non) est rattaché à ce numéro, ou dont un avis BODACC place le siège à ce numéro ; rattachement par la commune, le numéro, l'indice de répétition et la voie une fois les noms pliés. Une société radiée ou partie reste servie avec ses dates : l'historique de l'adresse compte.

**Champs.**
- \`siren\` : celui des avis ou de SIRENE. Un avis sans SIREN est rapproché par la dénomination (pliée) et le code postal du siège quand une seule unité SIRENE (ou un seul SIREN d'autres avis) correspond : \`siren_rapproche\` = true et \`qualite.drapeaux\` contient \`rattachement_incertain\` ; sinon \`siren\` est null.
- \`forme\` : libellé de la catégorie juridique SIRENE (6540 : Société civile immobilière…), à défaut la forme écrite dans l'avis.
- \`creee_le\` / \`radiee_le\` : SIRENE (création ; cessation = début de la période en cours d'une unité cessée), à défaut la date d'effet ou de parution des avis d'immatriculation / de radiation.
- \`avis\` : tous les avis BODACC de la société (par SIREN, à cette adresse ou ailleurs : un transfert de siège y figure), les plus récents d'abord, au plus ${AVIS_PAR_SOCIETE} ; \`famille\` : creation, modification, transfert, radiation, procedure, depot_comptes, vente, autre ; \`type\` : initial, rectificatif, annulation ; \`resume\` est reconstruit des seuls champs codés de l'avis (nature de l'immatriculation, du jugement, de la radiation ; forme ; capital ; objets d'une modification), jamais de son texte libre.
- \`presente_avant_dernier_dpe\` : true quand la société est connue à l'adresse (création de l'établissement, premier avis y plaçant le siège) au plus tard à la date du DPE le plus récent de l'adresse (\`dernier_dpe_le\`), sans avoir été radiée ni fermée avant ; false sinon ; null sans DPE à l'adresse ou sans date de présence.

**Vie privée.** Gérants et associés ne sont jamais nommés : ni le texte d'administration des avis ni aucun nom de personne physique n'est conservé ; un avis portant sur une personne physique n'est jamais servi ici.

**Décisions.** Clé BAN inconnue : 404 \`adresse_introuvable\`, rien n'est débité. Adresse sans société civile : 200 avec \`n\` = 0. Clé d'une voie, d'un lieu-dit ou d'une commune : 200 avec \`n\` = 0 et la raison dans \`limites\` (les sociétés sont rattachées aux numéros).`;

export const societesCiviles = defineOperation({
  tool: 'societes_civiles',
  texteTiers: true,
  method: 'GET',
  path: '/adresses/{cle_ban}/societes-civiles',
  summary: 'Sociétés civiles domiciliées à une adresse',
  description: DESCRIPTION,
  credits: 3,
  unit: 'appel',
  scope: 'adresse',
  tier: 'usage',
  sandbox: false,
  cacheS: 86_400,
  timeoutS: 15,
  errors: ['adresse_introuvable'],
  input: InputSchema,
  output: SortieSchema,
  dataDate: (o: Sortie) => o.qualite.donnees_du,
  handler: servedFromDataset(async (entree, ctx, dataset): Promise<Sortie> => {
    const db = ctx.services.db;
    const a = await adresseConnue(db, dataset, entree.cle_ban);
    const adresse = { libelle: a.libelle, code_postal: a.code_postal, insee: a.insee };
    const limites: string[] = [
      'Sociétés rattachées par l’adresse déclarée (établissement SIRENE, siège dans les avis BODACC) : une adresse écrite autrement que dans la BAN peut manquer.',
    ];
    // The companies are attached to numbers: the key of a street, a place or a commune has none.
    const numero = a.type === 'numero';
    if (!numero) {
      limites.unshift('Clé d’une voie, d’un lieu-dit ou d’une commune : les sociétés sont rattachées aux numéros.');
    }
    const { societes, dernierDpe, sources, donneesDu } = numero
      ? await construire(db, dataset, a.cle_ban, a.code_postal)
      : { societes: [], dernierDpe: null, sources: 0, donneesDu: null };
    if (numero && societes.length === 0) {
      limites.unshift(
        (await absenceSource(db, dataset, 'sirene', departementOf(a.insee))) ??
          'Aucune société civile n’a d’établissement SIRENE ni de siège BODACC déclaré à ce numéro.',
      );
    }
    if (dernierDpe === null && societes.length > 0) {
      limites.push('Aucun DPE connu à cette adresse : presente_avant_dernier_dpe est null.');
    }
    const flags: Drapeau[] = societes.some((s) => s.siren_rapproche) ? ['rattachement_incertain'] : [];
    return {
      cle_ban: a.cle_ban,
      adresse,
      n: societes.length,
      societes,
      dernier_dpe_le: dernierDpe,
      limites,
      qualite: {
        n: sources,
        provenance: 'mesure',
        incertitude: null,
        drapeaux: drapeaux(flags),
        methode: METHODE,
        donnees_du: donneesDu,
        source: SOURCE,
      },
    };
  }),
});

/** The company operations of this module, for the catalogue. */
export const societesCivilesOperations = [societesCiviles];
