import { z } from 'zod';
import type { Queryable } from '../../db/client.ts';
import { adresseParCle } from '../adresses/resoudre.ts';
import { defineOperation, type OperationContext } from '../catalogue.ts';
import { communeByCode, departementOf } from '../communes.ts';
import { absenceDvf } from '../couverture.ts';
import { nombre } from '../entrees.ts';
import { ApiError, invalidField } from '../errors.ts';
import { Insee } from '../marche/entrees.ts';
import type { Dataset } from '../platform/sandbox.ts';
import { QualiteSchema, servedFromDataset, type Qualite } from '../qualite.ts';
import { AGES, BANDE_MIN, FENETRES, HORIZON_JOURS, PART_CONTROLE, fenetreDe } from './entrainement.ts';
import {
  COLONNES_SCORE,
  dernieresAnnonces,
  lireModele,
  lireScore,
  type AnnonceAdresse,
  type LigneScore,
  type ModeleLu,
} from './lecture.ts';
import { joursEntre, SIGNAUX } from './signaux.ts';

// ---------------------------------------------------------------------------------------------------------------------
// Rules, said once (the descriptions quote them).
// ---------------------------------------------------------------------------------------------------------------------

/** A DPE older than this is not listed by pre_marche_zone (the specification's 24 months). */
const DPE_ZONE_JOURS = 730;
const DPE_RECENT_JOURS = 90;
const MAX_COMMUNES = 40;
const SOURCE =
  'DPE et audits énergétiques (ADEME), DVF (DGFiP, Etalab), SIRENE (Insee), BODACC (DILA), Sitadel (SDES), annonces des portails';
const NON_CALIBRE =
  'Aucun modèle pré-marché n’est calibré sur ces données : `npm run modeles` (ou le recalibrage planifié après un import DVF) l’entraîne et le mesure.';
const SANS_DPE =
  'Aucun DPE individuel (maison ou appartement) n’est connu à cette adresse : le modèle part du DPE, obligatoire avant une vente.';

const REGLE_MODELE = `**Modèle.** Probabilité qu'une vente DVF soit enregistrée à l'adresse dans les ${HORIZON_JOURS} jours qui suivent son DPE, estimée par une régression logistique (pénalisée L2) sur des signaux datés **strictement antérieurs** au jour du DPE (l'audit : au plus tard ce jour-là) : ${SIGNAUX.map((s) => `\`${s.signal}\` (${s.libelle})`).join(', ')}. Exemples d'apprentissage : chaque DPE individuel de l'historique dont les 12 mois suivants sont couverts par DVF ; ${Math.round(PART_CONTROLE * 100)} % des adresses (par empreinte de la clé) sont tenues hors de l'ajustement et servent seules à mesurer. Un signal est retenu quand les deux moitiés de l'apprentissage lui donnent le même signe, qu'il est assez fréquent et que son coefficient dépasse 1,5 erreur type ; le modèle est réajusté sur les signaux retenus (\`coefficients_ajustes\` de GET /modeles/pre_marche) : \`indice\` est la somme de leurs coefficients présents à l'adresse.

**Bandes et probabilité.** Les bandes (A la plus haute) coupent l'indice aux quintiles des exemples d'apprentissage (valeurs égales gardées ensemble ; une bande de moins de ${BANDE_MIN} exemples tenus est fusionnée), par type de bien quand il a assez d'exemples tenus, sinon pour tous. \`bande.taux_vente_12m_pct\` : la part **réelle** des exemples tenus de la bande vendus dans les 12 mois. \`p_vente\` est ce taux réel (jamais une sortie brute du modèle), multiplié par \`variables.multiplicateur_age_dpe\` : la baisse mesurée de ce taux quand le DPE vieillit sans vente (${AGES.map(([a, b]) => `${a}-${b} j`).join(', ')}). \`lift\` : \`p_vente\` / taux de base des exemples tenus. Le modèle est entraîné et mesuré par \`npm run modeles\` et par le workflow \`recalibrerModeles\` après chaque import DVF ; GET /modeles/pre_marche publie coefficients, bandes (taux réel et prédit, tolérance), décroissance et cohortes.

**Fenêtre de mandat et priorité.** Décision du service (la spécification la nomme sans règle), selon l'âge du DPE compté à la date des données (le DPE le plus récent détenu) : ${FENETRES.map((f) => `${f.valeur} (${f.libelle})`).join(' ; ')}. \`priorite\` = \`p_vente\` × \`fenetre_mandat.valeur\`.

**Hors périmètre.** L'Alsace-Moselle et Mayotte ne sont pas dans DVF : aucun exemple ne peut y être mesuré, \`hors_perimetre\` le dit et aucune probabilité n'est servie ; de même tant qu'aucun modèle n'est calibré sur les données.`;

// ---------------------------------------------------------------------------------------------------------------------
// Shapes.
// ---------------------------------------------------------------------------------------------------------------------

const PrecisionSchema = z
  .object({
    base_pct: z.number().nullable().describe('Taux de vente à 12 mois de tous les exemples tenus.'),
    haut_pct: z.number().nullable().describe('Taux réel de la bande la plus haute (tous types).'),
    description: z.string(),
    mesure_le: z.string().nullable().describe('Date de l’entraînement et de la mesure (ISO 8601).'),
  })
  .describe('Ce que valent les probabilités : mesuré sur l’historique tenu hors de l’ajustement.');

const FriseSchema = z.object({
  date: z.string(),
  type: z.enum(['dpe', 'audit', 'vente', 'sci', 'permis', 'copro', 'annonce']),
  libelle: z.string(),
  detail: z.string().nullable(),
  apres_dpe: z.boolean().describe('Daté après le dernier DPE de l’adresse.'),
});

const AdresseItemSchema = z.object({
  rang: z.number().int().describe('Rang dans le classement par priorité (1 : le premier) ; 1 pour une adresse seule.'),
  cle_ban: z.string(),
  adresse: z.string().nullable(),
  commune: z.string().nullable(),
  code_postal: z.string().nullable(),
  insee: z.string(),
  lat: z.number().nullable(),
  lon: z.number().nullable(),
  type_bien: z.enum(['maison', 'appartement', 'immeuble', 'autre']),
  dpe: z.string().nullable().describe('Étiquette du dernier DPE (A-G).'),
  periode_construction: z.string().nullable(),
  chauffage: z.string().nullable().describe('Énergie principale de chauffage.'),
  dpe_le: z.string(),
  age_dpe_jours: z.number().int().describe('Jours du DPE à la date des données (le DPE le plus récent détenu).'),
  audit_le: z.string().nullable(),
  pack_pre_vente: z.boolean().describe('Audit et DPE établis à 31 jours au plus l’un de l’autre.'),
  p_vente: z.number().describe('Probabilité calibrée : taux réel de la bande × multiplicateur d’âge du DPE.'),
  lift: z.number().nullable(),
  fiabilite: z.enum(['mesure', 'indicatif']).describe('mesure : maison positionnée dans la BAN ; sinon indicatif.'),
  raisons: z.array(z.string()),
  fenetre_mandat: z.object({ valeur: z.number(), libelle: z.string() }),
  priorite: z.number().describe('p_vente × fenetre_mandat.valeur : l’ordre du classement.'),
  deja_en_vente: z.boolean().describe('Une annonce en ligne est rattachée au numéro BAN de l’adresse.'),
  annonce: z
    .object({
      id: z.string(),
      lien: z.string().nullable().describe('Servi avec la portée lien_origine seulement.'),
      parue_le: z.string().nullable(),
      prix: z.number().nullable(),
      type_vendeur: z.enum(['pro', 'particulier', 'inconnu']),
      agence: z
        .object({ nom: z.string().nullable(), enseigne: z.string().nullable(), siren: z.string().nullable() })
        .nullable()
        .describe('Vendeur professionnel seulement : un particulier n’est jamais nommé.'),
    })
    .nullable(),
  derniere_vente: z.object({ date: z.string(), prix: z.number().nullable() }).nullable(),
  annees_detention: z
    .number()
    .nullable()
    .describe('Années de la dernière vente au DPE ; null sans vente connue avant.'),
  societes_civiles: z.array(
    z.object({
      denomination: z.string(),
      siren: z.string().nullable().describe('Quand SIRENE ou un avis BODACC le donne.'),
      forme: z.string().nullable(),
      dernier_avis: z.string().nullable().describe('Famille du dernier avis BODACC (creation, modification…).'),
      le: z.string().nullable().describe('Date du dernier avis.'),
    }),
  ),
  permis: z.object({ n: z.number().int(), dernier_le: z.string(), type: z.string() }).nullable(),
  copro: z
    .object({ lots: z.number().int().nullable(), syndic: z.string().nullable() })
    .nullable()
    .describe('Toujours null : aucun registre des copropriétés n’est importé.'),
  logements: z.object({ nombre: z.number().int(), source: z.enum(['dpe', 'copropriete', 'maison']) }),
  frise: z.array(FriseSchema).describe('Événements datés de l’adresse, du plus ancien au plus récent.'),
});
type AdresseItem = z.infer<typeof AdresseItemSchema>;

const BandeSchema = z.object({
  bande: z.string(),
  n: z.number().int().describe('Exemples tenus de la bande.'),
  indice_min: z.number(),
  indice_max: z.number(),
  taux_vente_12m_pct: z.number().describe('Part réelle des exemples tenus de la bande vendus dans les 12 mois.'),
});

const VariablesSchema = z.object({
  audit_connu: z.boolean(),
  annees_detention_au_dpe: z.number().nullable(),
  dpe_valide_au_dpe: z.boolean(),
  nb_dpe_365j_avant: z.number().int(),
  sci_connue_au_dpe: z.boolean(),
  ventes_ilot_avant_dpe: z.number().int().describe('Ventes DVF de la rue dans les 12 mois avant le DPE.'),
  ventes_numero_avant_dpe: z.number().int(),
  copro_ilot: z.boolean(),
  surface_m2: z.number().nullable(),
  multiplicateur_age_dpe: z.number().nullable(),
});

// ---------------------------------------------------------------------------------------------------------------------
// The address item.
// ---------------------------------------------------------------------------------------------------------------------

function precisionDe(m: ModeleLu | null): z.infer<typeof PrecisionSchema> {
  return {
    base_pct: m?.base_pct ?? null,
    haut_pct: m?.haut_pct ?? null,
    description: m
      ? `Mesuré sur ${m.n_controle} DPE tenus hors de l’ajustement (${m.perimetre}) : ${m.base_pct} % vendus dans les 12 mois, ${m.haut_pct ?? '-'} % dans la bande la plus haute.`
      : NON_CALIBRE,
    mesure_le: m?.calcule_le ?? null,
  };
}

function raisonsDe(l: LigneScore, m: ModeleLu, age: number): string[] {
  const present = new Set(l.signaux);
  const raisons = m.coefficients
    .filter((c) => present.has(c.signal) && c.coefficient_ajuste !== 0)
    .sort((a, b) => Math.abs(b.coefficient_ajuste) - Math.abs(a.coefficient_ajuste))
    .map((c) => {
      const s = SIGNAUX.find((x) => x.signal === c.signal)!;
      const signe = c.coefficient_ajuste > 0 ? '+' : '';
      return `${s.libelle[0].toUpperCase()}${s.libelle.slice(1)} : coefficient ${signe}${c.coefficient_ajuste.toFixed(2)}, ${c.taux_dvf_pct ?? '-'} % des DPE qui l’avaient suivis d’une vente dans les 12 mois (${c.n_dvf} exemples).`;
    });
  const b = m.bandes.find((x) => x.bande === l.bande && (x.type_bien === l.type_bien || x.type_bien === 'tous'));
  if (b) {
    raisons.push(
      `Bande ${b.bande} : ${b.taux_vente_12m_pct} % des ${b.n} DPE tenus de cette bande suivis d’une vente dans les 12 mois (base ${m.base_pct} %).`,
    );
  }
  raisons.push(`DPE de ${age} jours : fenêtre de mandat ${fenetreDe(age).libelle}.`);
  return raisons;
}

function itemDe(
  l: LigneScore,
  m: ModeleLu,
  annonce: AnnonceAdresse | undefined,
  rang: number,
  lienOrigine: boolean,
): AdresseItem {
  const age = Math.max(0, joursEntre(l.dpe_le, m.reference_le));
  const frise = [...l.frise] as AdresseItem['frise'];
  if (annonce?.parue_le) {
    frise.push({
      date: annonce.parue_le,
      type: 'annonce',
      libelle: annonce.actif ? 'Annonce en ligne' : 'Annonce (retirée)',
      detail: annonce.prix !== null ? `${annonce.prix} €` : null,
      apres_dpe: annonce.parue_le > l.dpe_le,
    });
    frise.sort((a, b) => a.date.localeCompare(b.date) || a.type.localeCompare(b.type));
  }
  return {
    rang,
    cle_ban: l.cle_ban,
    adresse: l.adresse,
    commune: l.commune,
    code_postal: l.code_postal,
    insee: l.insee,
    lat: l.lat,
    lon: l.lon,
    type_bien: l.type_bien,
    dpe: l.etiquette,
    periode_construction: l.periode_construction,
    chauffage: l.chauffage,
    dpe_le: l.dpe_le,
    age_dpe_jours: age,
    audit_le: l.audit_le,
    pack_pre_vente: l.pack_pre_vente,
    p_vente: l.p_vente!,
    lift: l.lift,
    fiabilite: l.fiabilite,
    raisons: raisonsDe(l, m, age),
    fenetre_mandat: fenetreDe(age),
    priorite: l.priorite!,
    deja_en_vente: l.en_vente,
    annonce: annonce
      ? {
          id: annonce.id,
          lien: lienOrigine ? annonce.lien : null,
          parue_le: annonce.parue_le,
          prix: annonce.prix,
          type_vendeur: annonce.type_vendeur,
          // A professional only: a private seller's identity is not even stored.
          agence:
            annonce.type_vendeur === 'pro' && annonce.annonceur
              ? { nom: annonce.annonceur.nom, enseigne: annonce.annonceur.enseigne, siren: annonce.annonceur.siren }
              : null,
        }
      : null,
    derniere_vente: l.derniere_vente_le ? { date: l.derniere_vente_le, prix: l.derniere_vente_prix } : null,
    annees_detention: l.variables.annees_detention_au_dpe,
    societes_civiles: l.societes,
    permis: l.permis,
    copro: null,
    logements: l.logements,
    frise,
  };
}

function qualiteDe(m: ModeleLu | null, n: number | null, drapeaux: Qualite['drapeaux'] = []): Qualite {
  return {
    n,
    provenance: m ? 'mesure' : null,
    incertitude: null,
    drapeaux,
    methode: m
      ? `Régression logistique sur des signaux datés avant le DPE ; probabilité = taux réel de la bande mesuré sur ${m.n_controle} DPE tenus.`
      : NON_CALIBRE,
    donnees_du: m?.reference_le ?? null,
    source: SOURCE,
  };
}

// ---------------------------------------------------------------------------------------------------------------------
// pre_marche_adresse
// ---------------------------------------------------------------------------------------------------------------------

const AdresseOutput = z.object({
  cle_ban: z.string(),
  hors_perimetre: z.string().nullable().describe('Pourquoi aucune probabilité n’est servie ; null dans le périmètre.'),
  adresse: AdresseItemSchema.nullable(),
  bande: BandeSchema.nullable(),
  indice: z.number().nullable(),
  coefficients: z
    .array(
      z.object({
        signal: z.string(),
        groupe: z.string(),
        coefficient: z.number(),
        lift_dvf: z.number().nullable(),
        n_dvf: z.number().int(),
      }),
    )
    .describe('Les coefficients retenus des signaux présents à l’adresse (leur somme est l’indice).'),
  variables: VariablesSchema.nullable(),
  precision: PrecisionSchema,
  limites: z.array(z.string()).describe('Pourquoi rien n’est servi : la raison de hors_perimetre, répétée.'),
  qualite: QualiteSchema,
  calcule_le: z.string().nullable().describe('Entraînement du modèle et calcul des scores (ISO 8601).'),
});

export const preMarcheAdresse = defineOperation({
  tool: 'pre_marche_adresse',
  method: 'GET',
  path: '/adresses/{cle_ban}/pre-marche',
  summary: 'Probabilité calibrée de vente à 12 mois d’une adresse, ses raisons et sa frise',
  description: `Probabilité calibrée qu'une vente DVF soit enregistrée à l'adresse dans les 12 mois, à partir de son dernier DPE : indice des coefficients mesurés, bande de calibration et son taux de vente réel, lift, fenêtre de mandat et priorité, fiabilité, raisons chiffrées, coefficients, variables datées, frise des événements, sociétés civiles avec leur SIREN quand SIRENE ou le BODACC le donne. **10 crédits.**

${REGLE_MODELE}

Décisions :
- Lu dans la table dérivée des scores (une lecture indexée) : l'annonce et \`deja_en_vente\` sont lues à la requête (les annonces changent à chaque relevé).
- Clé inconnue de la BAN et de tout DPE : 404 \`adresse_introuvable\`, rien n'est débité. Adresse connue sans DPE individuel : 200, \`hors_perimetre\` le dit, \`adresse\` null.
- Hors périmètre (Alsace-Moselle, Mayotte, aucun modèle calibré) : la raison est servie à la place de l'adresse, de la bande et des variables.
- \`coefficients\` : les coefficients retenus des signaux présents à l'adresse, avec leur lift et leur effectif d'apprentissage.
- \`frise\` : DPE, audits, ventes, sociétés civiles (première date connue à l'adresse), autorisations d'urbanisme, copropriété (premier DPE portant une immatriculation), dernière annonce ; \`apres_dpe\` vrai quand l'événement suit le dernier DPE.
- \`copro\` est toujours null (aucun registre des copropriétés importé) ; \`logements\` : 1 pour une maison, sinon les logements distincts (surface) diagnostiqués à l'adresse (\`source\` dpe).
- Aucun gérant ni associé de société civile n'est nommé ; un vendeur particulier n'est jamais nommé.`,
  credits: 10,
  unit: 'appel',
  scope: 'pre_marche',
  tier: 'usage',
  sandbox: false,
  cacheS: 6 * 3600,
  timeoutS: 20,
  errors: ['adresse_introuvable'],
  input: z.object({
    cle_ban: z
      .string()
      .trim()
      .min(1)
      .max(100)
      .transform((v) => v.toLowerCase())
      .describe('Clé BAN du numéro (ex. 33234_z008_00018).'),
  }),
  output: AdresseOutput,
  dataDate: (o) => o.qualite.donnees_du,
  handler: servedFromDataset(async (e, ctx, dataset) => {
    const db = ctx.services.db;
    const [m, ligne] = await Promise.all([lireModele(db, dataset), lireScore(db, dataset, e.cle_ban)]);
    const vide = (raison: string) => ({
      cle_ban: e.cle_ban,
      hors_perimetre: raison,
      adresse: null,
      bande: null,
      indice: null,
      coefficients: [],
      variables: null,
      precision: precisionDe(m),
      limites: [raison],
      qualite: qualiteDe(m, null),
      calcule_le: m?.calcule_le ?? null,
    });
    if (!ligne) {
      const ban = await adresseParCle(db, dataset, e.cle_ban);
      if (!ban) {
        const { rows } = await db.query('SELECT 1 FROM dpe WHERE dataset = $1 AND cle_ban = $2 LIMIT 1', [
          dataset,
          e.cle_ban,
        ]);
        if (rows.length === 0) {
          throw new ApiError(
            'adresse_introuvable',
            `Ni la Base Adresse Nationale ni aucun DPE ne connaissent la clé « ${e.cle_ban} » ; rien n’est débité.`,
          );
        }
      }
      const horsDvf = ban ? absenceDvf(departementOf(ban.insee)) : null;
      return vide(horsDvf ?? (m ? SANS_DPE : NON_CALIBRE));
    }
    if (ligne.hors_perimetre || !m || ligne.p_vente === null) return vide(ligne.hors_perimetre ?? NON_CALIBRE);
    const annonces = await dernieresAnnonces(db, dataset, [ligne.cle_ban]);
    const item = itemDe(ligne, m, annonces.get(ligne.cle_ban), 1, ctx.caller.portees.includes('lien_origine'));
    const bande =
      m.bandes.find((b) => b.bande === ligne.bande && b.type_bien === ligne.type_bien) ??
      m.bandes.find((b) => b.bande === ligne.bande && b.type_bien === 'tous')!;
    const present = new Set(ligne.signaux);
    return {
      cle_ban: ligne.cle_ban,
      hors_perimetre: null,
      adresse: item,
      bande: {
        bande: bande.bande,
        n: bande.n,
        indice_min: bande.indice_min,
        indice_max: bande.indice_max,
        taux_vente_12m_pct: bande.taux_vente_12m_pct,
      },
      indice: ligne.indice,
      coefficients: m.coefficients
        .filter((c) => present.has(c.signal) && c.retenu)
        .map((c) => ({
          signal: c.signal,
          groupe: c.groupe,
          coefficient: c.coefficient_ajuste,
          lift_dvf: c.lift_dvf,
          n_dvf: c.n_dvf,
        })),
      variables: ligne.variables,
      precision: precisionDe(m),
      limites: [],
      qualite: qualiteDe(m, bande.n, item.fiabilite === 'indicatif' ? ['rattachement_incertain'] : []),
      calcule_le: m.calcule_le,
    };
  }),
});

// ---------------------------------------------------------------------------------------------------------------------
// pre_marche_zone
// ---------------------------------------------------------------------------------------------------------------------

interface Secteur {
  libelle: string;
  communes: Array<{ insee: string; commune: string }>;
  intercommunalite: { code: string; nom: string; extrait_le: string | null } | null;
  code_postal: string | null;
  centre: { lat: number; lon: number; rayon_km: number } | null;
  introuvables: string[];
}

const ZoneInput = z.object({
  insee: Insee.optional(),
  communes: z
    .string()
    .min(1)
    .max(2000)
    .optional()
    .describe(`Communes séparées par des virgules : noms ou codes INSEE, ${MAX_COMMUNES} au plus.`),
  cp: z
    .string()
    .trim()
    .regex(/^\d{5}$/, 'Code postal : 5 chiffres.')
    .optional()
    .describe('Code postal (5 chiffres).'),
  epci: z.string().trim().min(2).max(120).optional().describe('Intercommunalité : SIREN de 9 chiffres ou nom.'),
  lat: nombre(z.number().min(-90).max(90).optional()).describe('Latitude WGS84 du centre (avec lon).'),
  lon: nombre(z.number().min(-180).max(180).optional()).describe('Longitude WGS84 du centre (avec lat).'),
  rayon_km: nombre(z.number().min(0.3).max(15).optional()).describe(
    'Rayon autour de lat/lon (0,3-15 km, 2 par défaut).',
  ),
  type_bien: z.enum(['maison', 'appartement', 'tous']).default('tous').describe('maison, appartement ou tous.'),
  inclure_deja_en_vente: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true')
    .describe('true : garde les adresses déjà en vente ou vendues depuis le DPE (écartées par défaut).'),
  limite: nombre(z.number().int().min(1).max(50).default(20)).describe('Adresses par page (1-50).'),
  curseur: z.string().min(1).max(1024).optional().describe('`curseur_suivant` d’une page précédente, mêmes filtres.'),
});
type ZoneEntree = z.output<typeof ZoneInput>;

const ZoneOutput = z.object({
  secteur: z.object({
    libelle: z.string(),
    communes: z.array(z.object({ insee: z.string(), commune: z.string() })),
    intercommunalite: z
      .object({ code: z.string(), nom: z.string(), extrait_le: z.string().nullable() })
      .nullable()
      .describe('extrait_le : date du calcul des scores, qui a lu le rattachement des communes.'),
    code_postal: z.string().nullable(),
    centre: z.object({ lat: z.number(), lon: z.number(), rayon_km: z.number() }).nullable(),
    introuvables: z.array(z.string()).describe('Communes demandées qu’aucune commune ne porte.'),
  }),
  type_bien: z.enum(['maison', 'appartement', 'tous']),
  comptage: z.object({
    adresses_dpe_24m: z
      .number()
      .int()
      .describe('Adresses du secteur dont le dernier DPE individuel a moins de 24 mois.'),
    dpe_moins_90j: z.number().int(),
    avec_pack: z.number().int().describe('Dont audit et DPE à 31 jours au plus (pack pré-vente).'),
    deja_en_vente: z.number().int().describe('Dont une annonce en ligne est rattachée à l’adresse.'),
    vendues_depuis: z.number().int().describe('Dont une vente DVF date du DPE ou d’après.'),
    hors_perimetre: z.number().int().describe('Dont hors du périmètre calibré (Alsace-Moselle, Mayotte).'),
    prospectables: z
      .number()
      .int()
      .describe('Ni en vente, ni vendues depuis, dans le périmètre : celles classées par défaut.'),
  }),
  precision: PrecisionSchema,
  adresses: z.array(AdresseItemSchema),
  curseur_suivant: z.string().nullable(),
  limites: z.array(z.string()),
  qualite: QualiteSchema,
  calcule_le: z.string().nullable(),
});
type ZoneSortie = z.infer<typeof ZoneOutput>;

async function communesParNoms(
  db: Queryable,
  dataset: Dataset,
  noms: string[],
): Promise<{ trouvees: Array<{ insee: string; commune: string }>; introuvables: string[] }> {
  const trouvees: Array<{ insee: string; commune: string }> = [];
  const introuvables: string[] = [];
  for (const nom of noms) {
    if (/^(?:\d{2}|2[AB])\d{3}$/i.test(nom)) {
      const c = communeByCode(nom.toUpperCase());
      if (c) trouvees.push({ insee: c.code, commune: c.nom });
      else introuvables.push(nom);
      continue;
    }
    const { rows } = await db.query<{ insee: string; nom: string }>(
      `SELECT insee, nom FROM communes WHERE dataset = $1 AND svc_plier(nom) = svc_plier($2)
        ORDER BY population DESC NULLS LAST, insee LIMIT 1`,
      [dataset, nom],
    );
    if (rows[0]) trouvees.push({ insee: rows[0].insee, commune: rows[0].nom });
    else introuvables.push(nom);
  }
  return { trouvees, introuvables };
}

async function secteurDe(db: Queryable, dataset: Dataset, e: ZoneEntree, calculeLe: string | null): Promise<Secteur> {
  const modes = [
    e.insee !== undefined && 'insee',
    e.communes !== undefined && 'communes',
    e.cp !== undefined && 'cp',
    e.epci !== undefined && 'epci',
    (e.lat !== undefined || e.lon !== undefined) && 'lat',
  ].filter(Boolean) as string[];
  if (modes.length !== 1) {
    throw invalidField(
      modes[1] ?? 'insee',
      'Donnez un et un seul secteur : insee, communes, cp, epci, ou lat et lon (avec rayon_km).',
      'requete',
    );
  }
  if (e.rayon_km !== undefined && modes[0] !== 'lat') {
    throw invalidField('rayon_km', 'rayon_km va avec lat et lon.', 'requete');
  }
  const vide = { intercommunalite: null, code_postal: null, centre: null, introuvables: [] };
  if (e.insee !== undefined) {
    const c = communeByCode(e.insee);
    if (!c) throw new ApiError('commune_introuvable', `Aucune commune n’a le code ${e.insee} ; rien n’est débité.`);
    return { ...vide, libelle: c.nom, communes: [{ insee: c.code, commune: c.nom }] };
  }
  if (e.communes !== undefined) {
    const noms = [
      ...new Set(
        e.communes
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
      ),
    ];
    if (noms.length === 0 || noms.length > MAX_COMMUNES) {
      throw invalidField('communes', `De 1 à ${MAX_COMMUNES} communes, séparées par des virgules.`, 'requete');
    }
    const { trouvees, introuvables } = await communesParNoms(db, dataset, noms);
    if (trouvees.length === 0) {
      throw new ApiError('commune_introuvable', `Aucune des communes demandées n’est connue ; rien n’est débité.`);
    }
    return { ...vide, libelle: trouvees.map((c) => c.commune).join(', '), communes: trouvees, introuvables };
  }
  if (e.cp !== undefined) {
    const { rows } = await db.query<{ insee: string; nom: string }>(
      `SELECT insee, nom FROM communes WHERE dataset = $1 AND $2 = ANY(codes_postaux) AND type = 'commune-actuelle'
        ORDER BY insee`,
      [dataset, e.cp],
    );
    if (rows.length === 0) {
      throw new ApiError('commune_introuvable', `Aucune commune n’a le code postal ${e.cp} ; rien n’est débité.`);
    }
    return {
      ...vide,
      libelle: `Code postal ${e.cp}`,
      communes: rows.map((r) => ({ insee: r.insee, commune: r.nom })),
      code_postal: e.cp,
    };
  }
  if (e.epci !== undefined) {
    const { rows } = await db.query<{ siren: string; nom: string; membres: string[] }>(
      /^\d{9}$/.test(e.epci)
        ? `SELECT siren, nom, membres FROM epci WHERE dataset = $1 AND siren = $2`
        : `SELECT siren, nom, membres FROM epci WHERE dataset = $1 AND svc_plier(nom) LIKE '%' || svc_plier($2) || '%'
            ORDER BY length(nom), siren LIMIT 1`,
      [dataset, e.epci],
    );
    const x = rows[0];
    if (!x) {
      throw new ApiError(
        'commune_introuvable',
        `Aucune intercommunalité ne répond à « ${e.epci} » ; rien n’est débité.`,
      );
    }
    const { rows: membres } = await db.query<{ insee: string; nom: string }>(
      `SELECT insee, nom FROM communes WHERE dataset = $1 AND (epci = $2 OR insee = ANY($3::text[])) ORDER BY insee`,
      [dataset, x.siren, x.membres],
    );
    return {
      ...vide,
      libelle: x.nom,
      communes: membres.map((r) => ({ insee: r.insee, commune: r.nom })),
      intercommunalite: { code: x.siren, nom: x.nom, extrait_le: calculeLe },
    };
  }
  if (e.lat === undefined || e.lon === undefined) {
    throw invalidField(e.lat === undefined ? 'lat' : 'lon', 'lat et lon vont ensemble.', 'requete');
  }
  const rayon = e.rayon_km ?? 2;
  return {
    ...vide,
    libelle: `${rayon} km autour de ${e.lat.toFixed(5)}, ${e.lon.toFixed(5)}`,
    communes: [],
    centre: { lat: e.lat, lon: e.lon, rayon_km: rayon },
  };
}

interface PositionZone {
  priorite: number;
  cle: string;
  rang: number;
}

export const preMarcheZone = defineOperation({
  tool: 'pre_marche_zone',
  method: 'GET',
  path: '/pre-marche',
  summary: 'Adresses d’un secteur au DPE de moins de 24 mois, classées par priorité de prospection',
  description: `Les adresses d'un secteur (commune, liste de communes, code postal, intercommunalité, ou point et rayon) dont le dernier DPE individuel a moins de 24 mois, classées par priorité de prospection (\`priorite\` = \`p_vente\` × fenêtre de mandat), avec le comptage du secteur. **10 crédits par adresse servie** (une page vide ne coûte rien).

${REGLE_MODELE}

Décisions :
- **Secteur** : un et un seul de \`insee\`, \`communes\` (noms ou codes INSEE séparés par des virgules, ${MAX_COMMUNES} au plus ; un nom désigne la commune la plus peuplée qui le porte ; les noms inconnus vont dans \`introuvables\`), \`cp\` (les communes qui ont ce code postal ; seules les adresses de ce code postal sont lues), \`epci\` (SIREN ou partie du nom), \`lat\`/\`lon\` avec \`rayon_km\` (2 par défaut). Aucune commune trouvée : 404 \`commune_introuvable\`, rien n'est débité.
- **24 mois** comptés à la date des données (le DPE le plus récent détenu), comme l'âge du DPE et la fenêtre de mandat : une base figée répond toujours pareil.
- **Écartées par défaut** : les adresses déjà en vente (annonce en ligne rattachée au numéro BAN, lue à la requête) ou vendues depuis le DPE (vente DVF à la date du DPE ou après) ; \`inclure_deja_en_vente=true\` les garde. Les adresses hors périmètre ne sont jamais classées (aucune probabilité) : \`comptage.hors_perimetre\` les compte.
- **Comptage** : sur tout le secteur et le type demandé, quel que soit \`inclure_deja_en_vente\` ; \`prospectables\` = dans le périmètre, ni en vente, ni vendues depuis.
- **Ordre** : \`priorite\` décroissante, puis clé BAN ; \`curseur_suivant\` (signé, lié aux filtres) reprend après la dernière adresse servie ; null sur la dernière page. Un curseur altéré ou renvoyé avec d'autres filtres : 400 sur \`curseur\`.
- Chaque adresse est l'élément de pre_marche_adresse (31 champs) ; \`rang\` continue d'une page à l'autre.`,
  credits: 10,
  unit: 'element',
  scope: 'pre_marche',
  tier: 'usage',
  sandbox: false,
  cacheS: 24 * 3600,
  timeoutS: 20,
  errors: ['commune_introuvable'],
  input: ZoneInput,
  output: ZoneOutput,
  units: (o: ZoneSortie) => o.adresses.length,
  dataDate: (o) => o.qualite.donnees_du,
  handler: servedFromDataset(async (e, ctx, dataset) => lireZone(ctx, dataset, e)),
});

async function lireZone(ctx: OperationContext, dataset: Dataset, e: ZoneEntree): Promise<ZoneSortie> {
  const db = ctx.services.db;
  const m = await lireModele(db, dataset);
  const secteur = await secteurDe(db, dataset, e, m?.calcule_le ?? null);
  const filtres = {
    insee: secteur.communes.map((c) => c.insee).sort(),
    cp: secteur.code_postal,
    centre: secteur.centre,
    type_bien: e.type_bien,
    inclure: e.inclure_deja_en_vente,
  };
  const scope = `pre_marche_zone|${dataset}|${JSON.stringify(filtres)}`;
  let apres: PositionZone | null = null;
  if (e.curseur) {
    apres = ctx.services.cursors.decode<PositionZone>(scope, e.curseur);
    if (
      !apres ||
      typeof apres.priorite !== 'number' ||
      typeof apres.cle !== 'string' ||
      !Number.isInteger(apres.rang)
    ) {
      throw invalidField('curseur', 'Curseur invalide : altéré, ou émis pour d’autres filtres.', 'requete');
    }
  }
  const limites: string[] = [];
  const horsDvf = [
    ...new Set(secteur.communes.map((c) => absenceDvf(departementOf(c.insee))).filter((x) => x !== null)),
  ];
  limites.push(...horsDvf);
  if (!m) {
    limites.push(NON_CALIBRE);
    return {
      secteur,
      type_bien: e.type_bien,
      comptage: {
        adresses_dpe_24m: 0,
        dpe_moins_90j: 0,
        avec_pack: 0,
        deja_en_vente: 0,
        vendues_depuis: 0,
        hors_perimetre: 0,
        prospectables: 0,
      },
      precision: precisionDe(null),
      adresses: [],
      curseur_suivant: null,
      limites,
      qualite: qualiteDe(null, 0),
      calcule_le: null,
    };
  }
  // The sector's rows: by commune (and postal code), or by distance; DPE under 24 months at the date of the data.
  const params: unknown[] = [dataset, m.reference_le, DPE_ZONE_JOURS];
  const p = (v: unknown) => {
    params.push(v);
    return `$${params.length}`;
  };
  let lieu: string;
  if (secteur.centre) {
    const rayon = p(secteur.centre.rayon_km * 1000);
    const point = `ll_to_earth(${p(secteur.centre.lat)}, ${p(secteur.centre.lon)})`;
    lieu = `earth_box(${point}, ${rayon}) @> ll_to_earth(s.lat, s.lon)
        AND earth_distance(${point}, ll_to_earth(s.lat, s.lon)) <= ${rayon}`;
  } else if (secteur.code_postal) {
    lieu = `s.code_postal = ${p(secteur.code_postal)}`;
  } else if (filtres.insee.length === 1) {
    // One commune: the ranking index is walked in order and the page read stops at its last row.
    lieu = `s.insee = ${p(filtres.insee[0])}`;
  } else {
    lieu = `s.insee = ANY(${p(filtres.insee)}::text[])`;
  }
  const type = e.type_bien === 'tous' ? '' : `AND s.type_bien = ${p(e.type_bien)}`;
  const base = `FROM pre_marche_scores s
     WHERE s.dataset = $1 AND ${lieu} ${type} AND s.dpe_le > $2::date - $3::int`;
  const enVente = `EXISTS (SELECT 1 FROM annonces a WHERE a.dataset = s.dataset AND a.cle_ban = s.cle_ban AND a.statut = 'actif')`;
  // The counts: those of the scores from their own index (no listing read), then the addresses on sale, from the
  // sector's listings online (a few hundred) to their scores, rather than one probe of the listings per address.
  const [{ rows: c }, { rows: v }] = await Promise.all([
    db.query<Omit<ZoneSortie['comptage'], 'deja_en_vente' | 'prospectables'> & { candidats: number }>(
      `SELECT count(*)::int AS adresses_dpe_24m,
              count(*) FILTER (WHERE s.dpe_le > $2::date - ${DPE_RECENT_JOURS})::int AS dpe_moins_90j,
              count(*) FILTER (WHERE s.pack_pre_vente)::int AS avec_pack,
              count(*) FILTER (WHERE s.vendue_depuis)::int AS vendues_depuis,
              count(*) FILTER (WHERE s.priorite IS NULL)::int AS hors_perimetre,
              count(*) FILTER (WHERE s.priorite IS NOT NULL AND NOT s.vendue_depuis)::int AS candidats
         ${base}`,
      params,
    ),
    (() => {
      const params2 = [...params];
      const annonces = secteur.centre
        ? null
        : secteur.code_postal
          ? `a.code_postal = $${params2.push(secteur.code_postal)}`
          : `a.insee = ANY($${params2.push(filtres.insee)}::text[])`;
      return db.query<{ deja_en_vente: number; candidats: number }>(
        annonces
          ? `SELECT count(*)::int AS deja_en_vente,
                    count(*) FILTER (WHERE s.priorite IS NOT NULL AND NOT s.vendue_depuis)::int AS candidats
               FROM (SELECT DISTINCT a.cle_ban FROM annonces a
                      WHERE a.dataset = $1 AND a.statut = 'actif' AND a.cle_ban IS NOT NULL AND ${annonces}) l
               JOIN pre_marche_scores s ON s.dataset = $1 AND s.cle_ban = l.cle_ban
              WHERE ${lieu} ${type} AND s.dpe_le > $2::date - $3::int`
          : `SELECT count(*)::int AS deja_en_vente,
                    count(*) FILTER (WHERE s.priorite IS NOT NULL AND NOT s.vendue_depuis)::int AS candidats
               ${base} AND ${enVente}`,
        params2,
      );
    })(),
  ]);
  const comptage: ZoneSortie['comptage'] = {
    adresses_dpe_24m: c[0].adresses_dpe_24m,
    dpe_moins_90j: c[0].dpe_moins_90j,
    avec_pack: c[0].avec_pack,
    deja_en_vente: v[0].deja_en_vente,
    vendues_depuis: c[0].vendues_depuis,
    hors_perimetre: c[0].hors_perimetre,
    prospectables: c[0].candidats - v[0].candidats,
  };
  const garder = e.inclure_deja_en_vente ? '' : `AND NOT s.vendue_depuis AND NOT ${enVente}`;
  const reprise = apres ? `AND (s.priorite, s.cle_ban) < (${p(apres.priorite)}::float8, ${p(apres.cle)}::text)` : '';
  const { rows } = await db.query<LigneScore>(
    `SELECT ${COLONNES_SCORE} ${base} AND s.priorite IS NOT NULL ${garder} ${reprise}
      ORDER BY s.priorite DESC NULLS LAST, s.cle_ban DESC LIMIT ${p(e.limite + 1)}`,
    params,
  );
  const page = rows.slice(0, e.limite);
  const annonces = await dernieresAnnonces(
    db,
    dataset,
    page.map((r) => r.cle_ban),
  );
  const lien = ctx.caller.portees.includes('lien_origine');
  const depart = apres?.rang ?? 0;
  const adresses = page.map((l, i) => itemDe(l, m, annonces.get(l.cle_ban), depart + i + 1, lien));
  const dernier = page.at(-1);
  if (adresses.length === 0) {
    limites.push(
      comptage.adresses_dpe_24m === 0
        ? 'Aucune adresse du secteur n’a de DPE individuel de moins de 24 mois dans les données.'
        : apres
          ? 'Plus aucune adresse après le curseur.'
          : 'Toutes les adresses du secteur sont en vente, vendues depuis leur DPE ou hors périmètre (voir comptage ; inclure_deja_en_vente=true garde les premières).',
    );
  }
  return {
    secteur,
    type_bien: e.type_bien,
    comptage,
    precision: precisionDe(m),
    adresses,
    curseur_suivant:
      rows.length > e.limite && dernier
        ? ctx.services.cursors.encode(scope, {
            priorite: dernier.priorite!,
            cle: dernier.cle_ban,
            rang: depart + page.length,
          } satisfies PositionZone)
        : null,
    limites,
    qualite: qualiteDe(m, comptage.adresses_dpe_24m),
    calcule_le: m.calcule_le,
  };
}

/** The pre-market operations, for the catalogue. */
export const preMarcheOperations = [preMarcheAdresse, preMarcheZone];
