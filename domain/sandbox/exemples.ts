import { PDFDocument, StandardFonts } from 'pdf-lib';

/**
 * Calls of the operations that the generated territory answers with a success: its keys, parcels, mutations and
 * communes (the same seed makes the same territory, loaded as the sandbox and as the demonstration live data). The
 * contract test (test/api/contrat.test.ts) makes each of them and checks every response against the published
 * description: an operation added to the catalogue is covered by adding its calls here, keyed by operationId. An
 * operation without an entry is called once with `{}`.
 *
 * An input is flat, as the tool's: path parameters, then the query string (GET) or the JSON body. A call that needs
 * something made first (a subscription, a task) is a function of the context.
 */
export type Entree = Record<string, unknown>;

export interface ContexteExemple {
  /** A URL whose receiver answers 2xx to anything: where webhooks are delivered. */
  recepteur: string;
  /** Calls another operation, expecting a success checked like any other, and gives its JSON body. */
  appeler(operationId: string, entree: Entree): Promise<any>;
}

export type Exemple = Entree | ((ctx: ContexteExemple) => Promise<Entree>);

/** A number with a DPE, an energy audit and sales: every group of faits_adresse is served. */
const ADRESSE_COMPLETE = '33234_z008_00018_ter';
/** A number with neither zone rules document nor model reading: lire_plu ends at once, `non_publie`. */
const ADRESSE_PLU = '33234_z018_00011';
/** A number of Strasbourg (Alsace-Moselle, no DVF): `ventes` and `ilot` are null, and said why. */
const ADRESSE_SANS_DVF = '67482_z001_00001';

/** A one-page PDF with text, as a client sends a document to read. */
async function bail(): Promise<string> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const page = doc.addPage([300, 200]);
  page.drawText('Bail commercial', { x: 20, y: 160, size: 12, font });
  page.drawText('Le loyer annuel est de 12 000 euros hors charges.', { x: 20, y: 130, size: 9, font });
  return Buffer.from(await doc.save()).toString('base64');
}

/** A 15 m² extension against the south facade of the house, with its roof and an opening. */
const EXTENSION = {
  nature: 'extension',
  largeur_m: 5,
  profondeur_m: 3,
  ancrage: 'accole_batiment',
  cote: 'sud',
  hauteur_m: 3,
  toiture: 'un_pan',
  ouvertures: [{ type: 'baie', facade: 'sud', largeur_m: 2.4 }],
};

const webhook = async ({ recepteur, appeler }: ContexteExemple) =>
  (await appeler('webhooks_creer', { url: `${recepteur}/svc`, genres: ['tache.terminee'] })).webhook.id as string;

/** A conversation of the Hub: a question asked, then the conversation listed. */
async function conversation(appeler: ContexteExemple['appeler']): Promise<string> {
  await appeler('question_hub', { question: 'Que sait-on de Latresne ?' });
  return (await appeler('conversations_hub', {})).conversations[0].id;
}

export const EXEMPLES: Partial<Record<string, Exemple[]>> = {
  resoudre_adresse: [{ q: '11 rue des Pins Latresne' }, { q: 'rue des Pins', code_postal: '33360', limite: 3 }],
  resoudre_adresse_inverse: [{ lat: 44.782339, lon: -0.498405 }],
  // A private seller's house (the first listing of Latresne), and a professional's: raw data, and a selection.
  annonce: [
    { id: 'portal_a:9000001' },
    { id: 'portal_a:9000002', inclure: 'brut' },
    { id: 'portal_a:9000002', champs: 'analyse.score,analyse.sous_scores.marche,dpe,annonceur.siren' },
  ],
  // Served from the live data (no sandbox): the demonstration's events from the start; two genres of two communes.
  flux_annonces: [{}, { genres: ['baisse_prix', 'nouvelle'], insee: ['33234', '75111'], limite: 5 }],
  valider_adresse: [
    {
      id: 'portal_a:1234567',
      libelle: '11 Rue des Pins 33360 Latresne',
      lat: 44.782339,
      lon: -0.498405,
      precision: 'numero',
      confiance: 'Façade reconnue sur les photos',
    },
  ],
  memoire_ajouter: [{ faits: ['Je cherche un T2 à Bordeaux', 'Ma TMI est de 30 %', 'Mon numéro : 06 12 34 56 78'] }],
  // Read after a write, so that the lists served are not empty.
  memoire: [
    async ({ appeler }) => {
      await appeler('memoire_ajouter', { faits: ['Mon apport est de 40 000 €'] });
      return {};
    },
  ],
  profil_investisseur_modifier: [{ strategie: 'cashflow', surface_min: 30, budget_total: 250_000 }],
  profil_investisseur: [
    async ({ appeler }) => {
      await appeler('profil_investisseur_modifier', { villes: ['Bordeaux'], dpe_max: 'D' });
      return {};
    },
  ],
  generer_document: [
    {
      type: 'rapport',
      titre: 'Visite du 11 rue des Pins',
      date: '2025-03-14',
      sections: [
        { titre: 'Le bien', paragraphes: ['Maison de **4 pièces**, surface [à compléter].'] },
        { titre: 'Points à vérifier', puces: ['Toiture', 'Assainissement'] },
        { tableau: { colonnes: ['Poste', 'Montant'], lignes: [['Prix', '250 000 €']] } },
      ],
      sources: ['DVF (DGFiP, Etalab)'],
    },
    { type: 'lettre', titre: 'Offre d’achat', sections: [{ paragraphes: ['Madame, Monsieur,'] }], format: 'docx' },
  ],
  lire_document: [
    async () => ({
      fichiers: [{ nom: 'bail.pdf', contenu_base64: await bail() }],
      question: 'Quel est le loyer annuel ?',
    }),
  ],
  faits_adresse: [
    { cle_ban: ADRESSE_COMPLETE },
    { cle_ban: ADRESSE_SANS_DVF },
    // Selections: whole groups and single columns, every group reduced at once.
    { cle_ban: ADRESSE_COMPLETE, champs: 'dpe,identite.lat' },
    {
      cle_ban: ADRESSE_COMPLETE,
      champs: 'identite.lat,batiment.type,dpe.etiquette,audit.nb,ventes.derniere,ilot.ventes_5a,commune.nom',
    },
  ],
  // Abzac: a commune with sales; Paris 11e: an arrondissement; Strasbourg: Alsace-Moselle, empty scale.
  avis_zone_publier: [
    {
      insee: '33001',
      note: 4,
      note_rentabilite: 5,
      titre: 'Calme et abordable',
      contenu: 'Bon rendement, écrire à jean@exemple.fr pour visiter.',
      profil: 'investisseur',
    },
  ],
  // avis_zone_publier comes first in the catalogue: the live key then reads its review (masked).
  avis_zone: [{ insee: '33001' }, { insee: '33001', tri: 'recents', limite: 1 }],
  commune: [{ insee: '33234' }, { insee: '75111' }, { insee: '67482' }],
  // 99999 is no commune: listed in `introuvables`, not billed.
  comparer_communes: [{ insee: '33234,33001,99999' }, { insee: '75111,59350' }],
  prix_commune: [{ insee: '33001' }, { insee: '75111', type: 'appartement' }, { insee: '67482' }],
  // The acceptance ranking of the issue; a ranking read page by page; one with every filter.
  palmares_communes: [
    { indicateur: 'prix-bas', departement: '33' },
    { indicateur: 'rendement-locatif', limite: 2, transactions_min: 0 },
    { indicateur: 'peu-de-passoires', region: 'Nouvelle-Aquitaine', population_min: 1000 },
    { indicateur: 'sous-evaluees' },
  ],
  prix_iris: [{ code_iris: '332340000' }, { code_iris: '332340000', geometrie: 'true' }],
  prix_iris_commune: [{ insee: '33234' }, { insee: '75111', geometrie: 'true' }],
  // Served from the live data (no sandbox): the demonstration territory in the contract test.
  secteur: [{ cp: '59000' }, { cp: '33360', detail: 'true' }],
  // Served from the live data (no sandbox): the demonstration territory in the contract test.
  ventes_commune: [{ insee: '33001' }, { insee: '75111', type: 'appartement' }, { insee: '67482' }],
  ventes_commune_code_postal: [{ code_postal: '33360' }],
  ventes_adresse: [{ cle_ban: '75111_z025_00010' }],
  ventes_adresse_parcelle: [{ id_parcelle: '33001000BP0402' }],
  ventes: [{ insee: '33234' }, { lat: 44.782339, lon: -0.498405, rayon_m: 500, type: 'maison', limite: 5 }],
  ventes_mutation: [{ id_mutation: '2021-9000001' }],
  modeles: [{}],
  modeles_modele: [{ modele: 'estimation' }, { modele: 'pre_marche' }],
  estimer_bien: [
    // A house among the sales of Latresne, class F: comparables, rent, yield on the asking price, exit cost.
    {
      type: 'maison',
      surface: 110,
      adresse: '11 rue des Pins Latresne',
      dpe: 'F',
      prix_demande: 350_000,
      etat: 'correct',
    },
    // A flat of Paris 11e known by its commune only: the commune's scale.
    { type: 'appartement', surface: 45, insee: '75111', pieces: 2, etage: 4, ascenseur: true, annexes: { cave: true } },
  ],
  // The same house read by the model (no photo: `vision` null); the scripted model's lines are checked by the server.
  estimer_bien_affine: [
    {
      type: 'maison',
      surface: 110,
      adresse: '11 rue des Pins Latresne',
      dpe: 'F',
      description: 'Maison lumineuse, cuisine équipée refaite en 2022, double vitrage.',
    },
  ],
  // The demonstration's novelties from the start; those of one commune, two genres, a page of five.
  flux_adresses: [{}, { genres: ['dpe', 'vente'], insee: ['33234'], limite: 5 }],
  permis_adresse: [{ cle_ban: '33001_z015_00002' }],
  // Urbanism: an address of Latresne inside its PLU; a point, and the same address as text; the commune's documents.
  urbanisme_adresse: [{ cle_ban: '33234_z008_00018_ter' }],
  urbanisme_adresse_point: [
    { lat: 44.782339, lon: -0.498405 },
    { q: '11 rue des Pins Latresne', code_postal: '33360' },
  ],
  documents_urbanisme: [{ insee: '33234' }],
  permis_adresse_parcelle: [{ id_parcelle: '33001000AD0397' }],
  societes_civiles: [{ cle_ban: '33001_z003_00012' }],
  // Pre-market, from the live data (no sandbox): a scored house with its civil company, an address of Strasbourg
  // (outside the calibrated perimeter); Latresne's ranking, a postal code's houses, a radius.
  pre_marche_adresse: [{ cle_ban: '33234_z011_00010' }, { cle_ban: ADRESSE_COMPLETE }, { cle_ban: '67482_z001_00002' }],
  pre_marche_zone: [
    { insee: '33234' },
    { cp: '33360', type_bien: 'maison', limite: 5, inclure_deja_en_vente: 'true' },
    { lat: 44.7808, lon: -0.4942, rayon_km: 1 },
  ],
  // Agencies: those of Latresne (two with listings), a page of a département, a brand; a sheet by SIREN (CABINET
  // LATRESNE, found in SIRENE by the listings importer); a commune's market, one month and months since May.
  agences: [{ insee: '33234' }, { departement: '33', limite: 2 }, { enseigne: 'cabinet', reseau: 'latresne' }],
  agences_siren: [{ siren: '999675622' }],
  agences_commune: [{ insee: '33234' }, { insee: '75111', depuis: '2025-05' }],
  // The sample edition of the communes (the contract test builds it over the frozen territory), then its files.
  exports: [{}, { jeu: 'communes' }],
  exports_telecharger: [
    async ({ appeler }) => {
      const edition = (await appeler('exports', { jeu: 'communes' })).editions[0];
      return { jeu: edition.jeu, date: edition.date };
    },
    async ({ appeler }) => {
      const edition = (await appeler('exports', { jeu: 'communes' })).editions[0];
      return { jeu: edition.jeu, date: edition.date, format: 'csv.gz', fichier: 'fiche_qualite' };
    },
  ],
  // Datasets: the list, schemas (one unavailable), filtered reads of light datasets (heavy ones are not read in the
  // evening window) and an aggregate of Latresne's listings.
  jeux: [{}],
  schema_jeu: [{ jeu: 'dvf' }, { jeu: 'annonces' }, { jeu: 'lovac' }],
  lire_jeu: [
    { jeu: 'communes', filtre: { insee: { in: '33234,33001' } } },
    { jeu: 'annonces', filtre: { insee: { eq: '33234' } }, champs: 'prix,surface,type_vendeur,vendeur_nom', limite: 5 },
    { jeu: 'permis_logements', filtre: { insee: { eq: '33234' } }, limite: 5 },
  ],
  agreger_jeu: [
    {
      jeu: 'annonces',
      grouper: 'type',
      mesures: 'mediane:prix,quantile:prix_m2:0.9',
      filtre: { insee: { eq: '33234' } },
    },
  ],
  question_hub: [{ question: 'Que valent les maisons à Latresne ?', contexte: { insee: '33234' } }],
  conversations_hub: [
    async ({ appeler }) => {
      await appeler('question_hub', { question: 'Quel est le marché à Latresne ?' });
      return {};
    },
  ],
  conversations_hub_lire: [async ({ appeler }) => ({ id: await conversation(appeler) })],
  conversations_hub_question: [
    async ({ appeler }) => ({ id: await conversation(appeler), question: 'Et pour un appartement ?' }),
  ],
  lire_plu: [
    { cle_ban: ADRESSE_PLU, attendre: 30 },
    { lat: 44.782339, lon: -0.498405, themes: ['hauteur'] },
  ],
  resultat_lire_plu: [
    async ({ appeler }) => ({
      tache: (await appeler('lire_plu', { cle_ban: ADRESSE_PLU, nature_projet: 'piscine' })).tache.id,
      attendre: 30,
    }),
  ],
  // The parcel under a number of Latresne: an extension against its house, then a pool placed from a boundary.
  coupes_facades: [
    { adresse: '11 rue des Pins Latresne', code_postal: '33360', projets: [EXTENSION] },
    {
      lat: 44.782339,
      lon: -0.498405,
      pieces: ['coupe'],
      projets: [{ nature: 'piscine', largeur_m: 4, profondeur_m: 2.5, ancrage: 'libre', profondeur_bassin_m: 1.5 }],
    },
  ],
  preparer_dossier: [
    { adresse: '11 rue des Pins Latresne', code_postal: '33360', projets: [EXTENSION], attendre: 30 },
    {
      lat: 44.782339,
      lon: -0.498405,
      formalite: 'aucune',
      coupes: false,
      projets: [{ ...EXTENSION, profondeur_m: 9 }],
    },
  ],
  resultat_preparer_dossier: [
    async ({ appeler }) => ({
      tache: (await appeler('preparer_dossier', { adresse: '11 rue des Pins Latresne', projets: [EXTENSION] })).tache
        .id,
      attendre: 30,
    }),
  ],
  taxe_amenagement: [
    { insee: '33234', surface_taxable_creee_m2: 120, residence_principale: true },
    { insee: '33234', type_travaux: 'piscine', piscine_m2: 32 },
  ],
  webhooks_creer: [
    async ({ recepteur }) => ({
      url: `${recepteur}/svc`,
      genres: ['baisse_prix', 'tache.terminee'],
      filtres: { insee: ['33234'], prix_max: 400_000 },
    }),
  ],
  // Listed after a test delivery, so that `dernieres_livraisons` is not empty.
  webhooks: [
    async (ctx) => {
      await ctx.appeler('webhooks_tester', { id: await webhook(ctx) });
      return {};
    },
  ],
  webhooks_tester: [async (ctx) => ({ id: await webhook(ctx) })],
  webhooks_supprimer: [async (ctx) => ({ id: await webhook(ctx) })],
  // Watches and alerts follow the live data: the demonstration's listings and addresses.
  veilles_creer: [{ nom: 'Latresne', criteres: { insee: ['33234'], type_bien: ['house'], prix_max: 400_000 } }],
  alertes_creer: [{ annonce: 'portal_a:9000001' }, { cle_ban: ADRESSE_COMPLETE, nom: 'La maison d’en face' }],
  veilles_supprimer: [
    async ({ appeler }) => ({ id: (await appeler('veilles_creer', { criteres: { departement: ['33'] } })).veille.id }),
  ],
};
