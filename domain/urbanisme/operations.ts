import { z } from 'zod';
import { adresseConnue, inverser, rechercher } from '../adresses/resoudre.ts';
import { defineOperation, type OperationContext } from '../catalogue.ts';
import { communeByCode } from '../communes.ts';
import { nombre } from '../entrees.ts';
import { ApiError, invalidField } from '../errors.ts';
import { Insee } from '../marche/entrees.ts';
import type { Dataset } from '../platform/sandbox.ts';
import { QualiteSchema, servedSource, type Qualite } from '../qualite.ts';
import {
  LIMITE_ZONE_M,
  MAX_ELEMENTS,
  RAYON_SERVITUDES_M,
  RAYON_SURCHARGES_M,
  urbanismeAuPoint,
  type UrbanismeAuPoint,
} from './au-point.ts';
import { documentsDeCommune, ETATS_DOCUMENT, type DocumentsCommune } from './documents.ts';
import type { EtatLecture } from './lectures.ts';

// ---------------------------------------------------------------------------------------------------------------------
// Shared pieces of the answers.
// ---------------------------------------------------------------------------------------------------------------------

const LectureSchema = z
  .object({
    etat: z.enum(['lue', 'non_lue', 'scanne', 'sans_reglement'] satisfies EtatLecture[]),
    lue_le: z.string().nullable().describe('Date de la lecture en cache (ISO 8601), quand lue.'),
    regles: z.number().int().nullable().describe('Règles gardées par la lecture, quand lue.'),
  })
  .describe(
    'État de la lecture du règlement écrit de la zone par lire_plu : lue (en cache : lire_plu la sert sans appel au modèle), non_lue, scanne (PDF sans texte), sans_reglement (aucun règlement écrit publié).',
  );

/** An act instituting an easement (CNIG SUP ACTE_SUP). */
const ActeSchema = z.object({
  nom: z.string().nullable(),
  reference: z.string().nullable(),
  date: z.string().nullable().describe('Date de la décision (AAAA-MM-JJ).'),
  fichier: z.string().nullable().describe('Fichier de l’acte, tel que le paquet le nomme.'),
  lien: z.string().nullable().describe('Le fichier, quand c’est une adresse web.'),
});

const SOURCE_URBANISME =
  'Géoportail de l’Urbanisme (standard CNIG : documents, zones, secteurs, prescriptions, informations), servitudes d’utilité publique (standard CNIG SUP), table des documents d’urbanisme en vigueur par commune';

const REGLE_EN_VIGUEUR = `Un document n'est pas en vigueur quand son état CNIG le dit en cours de procédure, arrêté, annulé, remplacé ou abrogé, quand sa date de fin de validité est passée, ou quand un document plus récent (autre qu'un PSMV, qui se superpose au PLU) couvre la même commune : la nouvelle édition d'un PLU, ou le PLUi qui a remplacé un PLU communal.`;

const REGLE_STATUT = `\`statut.code\` : \`zonage_publie\` (une zone ou un secteur de carte communale d'un document en vigueur couvre le point), \`rnu\` (la commune relève du règlement national d'urbanisme), \`document_non_publie\` (un document est en vigueur mais le Géoportail de l'Urbanisme ne le publie pas), \`hors_zonage\` (la commune a un document publié, mais aucune de ses zones ne couvre le point : un trou du plan, ou un point hors de la commune), \`indetermine\` (ni document publié importé ni ligne de la table des documents en vigueur pour la commune, ou commune du point inconnue) ; \`motif\` dit lequel et pourquoi, en une phrase. ${REGLE_EN_VIGUEUR}`;

/** The answer as served: labelled as demonstration data when it is, and its `source` said as its `qualite` says it. */
async function servi<T extends { source: string; qualite: Qualite }>(
  ctx: OperationContext,
  dataset: Dataset,
  reponse: T,
): Promise<T> {
  const etiquete = await servedSource(ctx.services.db, dataset, reponse);
  return { ...etiquete, source: etiquete.qualite.source };
}

// ---------------------------------------------------------------------------------------------------------------------
// urbanisme_adresse
// ---------------------------------------------------------------------------------------------------------------------

const SurchargeSchema = z.object({
  libelle: z.string(),
  type_code: z.string().nullable().describe('Code CNIG (TYPEPSC, TYPEINF), deux chiffres : 01 espace boisé classé…'),
  sous_type: z.string().nullable(),
  forme: z.enum(['surface', 'ligne', 'point']),
  document: z.string().describe('IDURBA du document.'),
  lien: z.string().nullable().describe('Fichier de la prescription ou de l’information, quand publié.'),
  distance_m: z.number().nullable().describe('null : une surface qui couvre le point ; sinon la distance en mètres.'),
});

const UrbanismeAdresseOutput = z.object({
  cle_ban: z.string().nullable(),
  adresse: z.object({
    libelle: z.string(),
    insee: z.string().nullable(),
    precision: z.enum(['numero', 'voie', 'lieu_dit', 'point', 'autre']),
    lat: z.number(),
    lon: z.number(),
  }),
  statut: z.object({
    code: z.enum(['zonage_publie', 'rnu', 'document_non_publie', 'hors_zonage', 'indetermine']),
    motif: z.string(),
  }),
  commune_rnu: z.boolean().nullable(),
  zones: z.array(
    z.object({
      code: z.string(),
      libelle: z.string().nullable(),
      famille: z
        .string()
        .nullable()
        .describe('TYPEZONE : U, AUc, AUs, A, N ; pour un secteur de carte communale, TYPESECT (01, 02, 03, 99).'),
      document: z.string().describe('IDURBA du document.'),
      type_document: z.string().nullable(),
      approuve_le: z.string().nullable(),
      reglement_url: z.string().nullable(),
      lecture: LectureSchema,
    }),
  ),
  prescriptions: z.array(SurchargeSchema),
  informations: z.array(SurchargeSchema),
  servitudes: z.array(
    z.object({
      categorie: z.string().nullable().describe('Catégorie de servitude : AC1, PM1, I4, T7…'),
      libelle: z.string(),
      gestionnaire: z.string().nullable().describe('Service gestionnaire (un organisme, jamais une personne).'),
      acte: ActeSchema.nullable().describe('L’acte qui institue la servitude (le plus récent quand plusieurs).'),
      lien: z.string().nullable().describe('Lien de l’acte, quand son fichier est publié à une adresse web.'),
      distance_m: z.number().describe('0 : l’assiette de la servitude couvre le point ; sinon la distance en mètres.'),
    }),
  ),
  constats: z.array(z.string()),
  limites: z.array(z.string()),
  source: z.string(),
  qualite: QualiteSchema,
});
type UrbanismeAdresseSortie = z.infer<typeof UrbanismeAdresseOutput>;

const DESCRIPTION_ADRESSE = `L'urbanisme à une adresse (clé BAN, ou texte \`q\` avec \`code_postal\`) ou à un point (\`lat\`, \`lon\`) : la zone du PLU, du PLUi ou le secteur de la carte communale qui couvre le point, avec le lien de son règlement et l'état de sa lecture ; les prescriptions et informations qui couvrent le point ou passent à moins de ${RAYON_SURCHARGES_M} m ; les servitudes d'utilité publique dont l'assiette couvre le point ou passe à moins de ${RAYON_SERVITUDES_M} m, avec leur acte ; les constats utiles ; et toujours un statut explicite quand aucune zone n'est servie. Le règlement n'est pas lu ici : \`zones[].lecture\` dit s'il l'a été par lire_plu (qui le sert alors depuis son cache).

${REGLE_STATUT}

Décisions :
- **Zones** : toutes celles des documents en vigueur qui couvrent le point (un PSMV sur son PLU, des zones superposées), la plus petite d'abord ; un point sur le trait entre deux zones appartient aux deux. Un secteur de carte communale y figure avec \`type_document\` CC, \`famille\` son TYPESECT et \`lecture.etat\` sans_reglement (une carte communale n'a pas de règlement par secteur : le règlement national s'y applique).
- **Prescriptions, informations** : \`distance_m\` null quand une surface couvre le point ; les lignes et les points ont toujours leur distance (0 sur eux). Les ${MAX_ELEMENTS} plus proches de chaque liste au plus (\`limites\` le dit).
- **Servitudes** : une par servitude (l'assiette la plus proche) ; \`distance_m\` 0 quand son assiette couvre le point ; \`acte\` l'acte qui l'institue ; \`lien\` son fichier quand c'est une adresse web, sinon null (le nom du fichier est dans \`acte.fichier\`). Les servitudes abrogées ne sont pas servies.
- **Constats** : plusieurs zones, point à moins de ${LIMITE_ZONE_M} m d'une autre zone (en limite), zone agricole, naturelle ou à urbaniser fermée, espace boisé classé, emplacement réservé, patrimoine protégé, OAP, et les servitudes qui changent un projet (AC1, AC2, AC4, PM1, PM3, I4, T7, INT1) quand elles couvrent le point.
- **Point** : celui de l'adresse BAN (\`cle_ban\`), de la meilleure adresse trouvée pour \`q\` (et \`code_postal\`), ou \`lat\`/\`lon\` tels quels ; une seule de ces trois façons (refusée champ par champ sinon) ; adresse inconnue : 404 \`adresse_introuvable\`, rien n'est débité. Pour un point, la commune est celle du document communal qui le couvre, sinon celle de l'adresse BAN la plus proche (à moins de 1 km ; \`limites\` le dit).
- \`source\` : les sources lues ; \`qualite.n\` le nombre de zones servies.`;

const COMMUN_URBANISME_ADRESSE = {
  tool: 'urbanisme_adresse',
  method: 'GET',
  summary: 'Urbanisme à une adresse ou à un point : zone, prescriptions, servitudes, statut',
  description: DESCRIPTION_ADRESSE,
  credits: 2,
  unit: 'appel',
  scope: 'urbanisme',
  tier: 'usage',
  sandbox: false,
  cacheS: 86_400,
  timeoutS: 8,
  output: UrbanismeAdresseOutput,
} as const;

const PRECISION = { numero: 'numero', voie: 'voie', lieu_dit: 'lieu_dit', commune: 'autre' } as const;

/** The answer at a point, the address's or the caller's. */
async function reponseAuPoint(
  ctx: OperationContext,
  dataset: Dataset,
  adresse: UrbanismeAdresseSortie['adresse'] & { cle_ban: string | null },
): Promise<UrbanismeAdresseSortie> {
  const db = ctx.services.db;
  const u: UrbanismeAuPoint = await urbanismeAuPoint(db, dataset, adresse, {
    insee: adresse.insee,
    communeProche: async () => (await inverser(db, dataset, adresse.lat, adresse.lon, 1))[0]?.insee ?? null,
  });
  const { cle_ban, ...lieu } = adresse;
  const sources = [
    u.documents.length > 0 ? `documents ${u.documents.join(', ')}` : null,
    u.lots_servitudes.length > 0 ? `servitudes ${u.lots_servitudes.join(', ')}` : null,
  ].filter(Boolean);
  const source = `${SOURCE_URBANISME}${sources.length > 0 ? ` (${sources.join(' ; ')})` : ''}`;
  return servi(ctx, dataset, {
    cle_ban,
    adresse: { ...lieu, insee: lieu.insee ?? u.insee },
    statut: u.statut,
    commune_rnu: u.commune_rnu,
    zones: u.zones,
    prescriptions: u.prescriptions,
    informations: u.informations,
    servitudes: u.servitudes,
    constats: u.constats,
    limites: u.limites,
    source,
    qualite: {
      n: u.zones.length,
      provenance: u.zones.length > 0 ? 'mesure' : null,
      incertitude: null,
      drapeaux: [],
      methode:
        'Point dans les polygones des zones (trous et multipolygones compris), distances en mètres aux surfaces, lignes et points des prescriptions et des assiettes de servitudes.',
      donnees_du: u.zones.map((z) => z.approuve_le).reduce<string | null>((a, b) => (b && (!a || b > a) ? b : a), null),
      source,
    },
  });
}

export const urbanismeAdresse = defineOperation({
  ...COMMUN_URBANISME_ADRESSE,
  errors: ['adresse_introuvable'],
  path: '/adresses/{cle_ban}/urbanisme',
  input: z.object({
    cle_ban: z.string().min(1).max(100).describe('Clé BAN d’un numéro, d’une voie ou d’un lieu-dit.'),
  }),
  handler: async (e, ctx) => {
    const dataset: Dataset = ctx.caller.sandbox ? 'sandbox' : 'live';
    const a = await adresseConnue(ctx.services.db, dataset, e.cle_ban);
    return reponseAuPoint(ctx, dataset, {
      cle_ban: a.cle_ban,
      libelle: a.libelle,
      insee: a.insee,
      precision: PRECISION[a.type],
      lat: a.lat,
      lon: a.lon,
    });
  },
});

export const urbanismePoint = defineOperation({
  ...COMMUN_URBANISME_ADRESSE,
  errors: ['adresse_introuvable'],
  variant: 'point',
  path: '/urbanisme',
  input: z.object({
    q: z.string().min(5).max(200).optional().describe('Adresse en texte (5-200 caractères), avec code_postal.'),
    code_postal: z
      .string()
      .regex(/^\d{5}$/, 'code postal de 5 chiffres')
      .optional()
      .describe('Code postal de l’adresse q.'),
    lat: nombre(z.number().min(-90).max(90)).optional().describe('Latitude WGS84 du point (avec lon).'),
    lon: nombre(z.number().min(-180).max(180)).optional().describe('Longitude WGS84 du point (avec lat).'),
  }),
  handler: async (e, ctx) => {
    const dataset: Dataset = ctx.caller.sandbox ? 'sandbox' : 'live';
    const point = e.lat !== undefined || e.lon !== undefined;
    if (point && e.q !== undefined)
      throw invalidField('q', 'Donnez une adresse (q) ou un point (lat, lon), pas les deux.');
    if (point && e.code_postal !== undefined)
      throw invalidField('code_postal', 'code_postal va avec q, pas avec un point.');
    if (point) {
      if (e.lat === undefined || e.lon === undefined) {
        throw invalidField(e.lat === undefined ? 'lat' : 'lon', 'lat et lon vont ensemble.');
      }
      return reponseAuPoint(ctx, dataset, {
        cle_ban: null,
        libelle: `Point ${e.lat.toFixed(6)}, ${e.lon.toFixed(6)}`,
        insee: null,
        precision: 'point',
        lat: e.lat,
        lon: e.lon,
      });
    }
    if (e.q === undefined) throw invalidField('q', 'Donnez une adresse (q, avec code_postal) ou un point (lat, lon).');
    const [trouvee] = await rechercher(ctx.services.db, dataset, e.q, e.code_postal ?? null, 1);
    if (!trouvee) {
      throw new ApiError('adresse_introuvable', `Aucune adresse ne correspond à « ${e.q} » ; rien n’est débité.`);
    }
    return reponseAuPoint(ctx, dataset, {
      cle_ban: trouvee.cle_ban,
      libelle: trouvee.libelle,
      insee: trouvee.insee,
      precision: PRECISION[trouvee.type],
      lat: trouvee.lat,
      lon: trouvee.lon,
    });
  },
});

// ---------------------------------------------------------------------------------------------------------------------
// documents_urbanisme
// ---------------------------------------------------------------------------------------------------------------------

const DocumentsUrbanismeOutput = z.object({
  insee: z.string(),
  commune: z.string().nullable(),
  statut: z.object({
    code: z.enum(['documents_publies', 'rnu', 'document_non_publie', 'indetermine']),
    motif: z.string(),
  }),
  commune_rnu: z.boolean().nullable(),
  documents: z.array(
    z.object({
      id: z.string().describe('IDURBA : <INSEE ou SIREN>_<type>_<AAAAMMJJ>[_<code>].'),
      type: z.string().nullable().describe('PLU, PLUi, POS, CC, PSMV.'),
      etat: z.enum(ETATS_DOCUMENT).nullable().describe('État CNIG du document.'),
      en_vigueur: z
        .boolean()
        .describe('Faux : annulé, remplacé, abrogé, échu, ou remplacé par un document plus récent.'),
      procedure: z
        .string()
        .nullable()
        .describe('Dernière procédure (NOMPROC) : E élaboration, R révision, M modification…'),
      approuve_le: z.string().nullable(),
      valide_le: z.string().nullable().describe('Date de validation de la publication (DATVALID).'),
      fin_le: z.string().nullable().describe('Fin de validité, quand le document en a une.'),
      reglement_url: z
        .string()
        .nullable()
        .describe('Règlement écrit du document entier, quand publié à une adresse web.'),
      epci_siren: z
        .string()
        .nullable()
        .describe('SIREN de l’intercommunalité d’un PLUi ; null pour un document communal.'),
      lecture: z
        .object({
          zones: z.number().int(),
          zones_lues: z.number().int(),
          derniere_le: z.string().nullable(),
        })
        .describe('Zones du document, combien ont leur règlement lu par lire_plu (en cache), la dernière lecture.'),
    }),
  ),
  zones: z.array(
    z.object({
      code: z.string(),
      libelle: z.string().nullable(),
      famille: z.string().nullable(),
      document: z.string(),
      reglement_url: z.string().nullable(),
      lecture: LectureSchema,
    }),
  ),
  secteurs: z.array(
    z.object({
      code: z.string(),
      libelle: z.string().nullable(),
      type_code: z.string().nullable(),
      document: z.string(),
      fichier_url: z.string().nullable(),
    }),
  ),
  servitudes: z.array(
    z.object({
      categorie: z.string().nullable(),
      libelle: z.string(),
      gestionnaire: z.string().nullable(),
      actes: z.array(ActeSchema),
    }),
  ),
  limites: z.array(z.string()),
  source: z.string(),
  qualite: QualiteSchema,
});

export const documentsUrbanisme = defineOperation({
  tool: 'documents_urbanisme',
  method: 'GET',
  path: '/communes/{insee}/urbanisme',
  summary: 'Documents d’urbanisme d’une commune : documents, zones et état de leur lecture, secteurs, servitudes',
  description: `Les documents d'urbanisme d'une commune (PLU, PLUi, carte communale, POS, PSMV), en vigueur ou remplacés, avec leur identifiant, type, état, dates et lien ; le statut de la commune (documents publiés, RNU, document non publié) ; les zones des documents en vigueur avec le lien de leur règlement et l'état de sa lecture par lire_plu ; les secteurs de carte communale ; les servitudes d'utilité publique avec leurs actes. Un arrondissement municipal de Paris, Lyon ou Marseille lit les documents de sa commune.

\`statut.code\` : \`documents_publies\` (un document en vigueur publié sur le Géoportail de l'Urbanisme couvre la commune), \`rnu\`, \`document_non_publie\`, et \`indetermine\` quand rien ne permet de le dire (ni paquet importé, ni ligne de la table des documents en vigueur) : une quatrième valeur, plutôt qu'un statut affirmé sans donnée. ${REGLE_EN_VIGUEUR}

Décisions (non montrées par la spécification) :
- \`documents\` (11 champs) : \`id\` (IDURBA), \`type\`, \`etat\` (nomenclature CNIG en clair), \`en_vigueur\`, \`procedure\`, \`approuve_le\`, \`valide_le\`, \`fin_le\`, \`reglement_url\`, \`epci_siren\`, \`lecture\` (zones du document, zones lues, dernière lecture) ; les plus récents d'abord.
- \`zones\` : une par code de zone et document en vigueur, avec \`lecture\` (lue, non_lue, scanne, sans_reglement) ; \`secteurs\` : ceux des cartes communales en vigueur.
- \`servitudes\` : celles dont une assiette rencontre l'emprise des adresses de la commune (ou, sans adresse importée, de ses zones), et celles des paquets publiés pour la commune elle-même ; abrogées exclues ; chacune avec tous ses actes.
- Commune inconnue : 404 \`commune_introuvable\`, rien n'est débité.`,
  credits: 2,
  unit: 'appel',
  scope: 'urbanisme',
  tier: 'usage',
  sandbox: false,
  cacheS: 86_400,
  timeoutS: 6,
  errors: ['commune_introuvable'],
  input: z.object({ insee: Insee }),
  output: DocumentsUrbanismeOutput,
  handler: async (e, ctx) => {
    const commune = communeByCode(e.insee);
    if (!commune)
      throw new ApiError('commune_introuvable', `Aucune commune n’a le code ${e.insee} ; rien n’est débité.`);
    const dataset: Dataset = ctx.caller.sandbox ? 'sandbox' : 'live';
    const d: DocumentsCommune = await documentsDeCommune(ctx.services.db, dataset, e.insee);
    return servi(ctx, dataset, {
      insee: e.insee,
      commune: commune.nom,
      statut: d.statut,
      commune_rnu: d.statut.code === 'rnu' ? true : d.statut.code === 'indetermine' ? null : false,
      documents: d.documents,
      zones: d.zones,
      secteurs: d.secteurs,
      servitudes: d.servitudes,
      limites: d.limites,
      source: SOURCE_URBANISME,
      qualite: {
        n: d.documents.length,
        provenance: d.documents.length > 0 ? 'mesure' : null,
        incertitude: null,
        drapeaux: [],
        methode:
          'Documents importés des paquets du Géoportail de l’Urbanisme et des servitudes, table des documents en vigueur.',
        donnees_du: d.documents[0]?.approuve_le ?? null,
        source: SOURCE_URBANISME,
      },
    });
  },
});

/** The urbanism operations of this file, for the catalogue. */
export const urbanismeOperations = [urbanismeAdresse, urbanismePoint, documentsUrbanisme];
