import path from 'node:path';
import type { Db } from '../../db/client.ts';
import { plier } from '../adresses/resoudre.ts';
import { colonnesDe, csvRecords, dateIso, lecteurDe, lignesDeDonnees, separateurDe, texte } from '../import/csv.ts';
import { ligneEcriture, upsertParLots, type Lu, type Table } from '../import/ecriture.ts';
import {
  exigerFichier,
  ImportError,
  importSource,
  nouveauRapport,
  type Dataset,
  type DatasetImportOptions,
  type ImportReport,
} from '../import/source.ts';
import { avecLotsJournalises } from '../flux/journal-adresses.ts';
import { avisDuFichier, champsAvis, formeDe, type FormeFichier } from './bodacc-xml.ts';
import { clesBan } from './rattachement.ts';

/**
 * Importer of BODACC notices: the DILA open-data export of the `annonces-commerciales` dataset (CSV, `;`, one notice a
 * row, JSON objects inside the columns listepersonnes, listeetablissements, jugement, acte, modificationsgenerales,
 * radiationaurcs, depot, parutionavisprecedent), recognised by its header, plain or gzipped; and the DILA bulletins in
 * their source format (XML of every family, or its `.taz` archive: bodacc-xml.ts), each notice turned into the
 * export's fields so that one reading applies to both. Notices are upserted by
 * their id: importing the same file twice changes nothing. A notice new to the database about a civil company whose
 * seat is a BAN number is a novelty of that address, journaled with its batch (domain/flux/journal-adresses.ts).
 *
 * Privacy. A notice about a natural person (a person of `typePersonne` pp, or persons that cannot be read) keeps no
 * name: neither `commercant` nor the persons, nor their address; `porte_sur_personne_physique` says so. No notice
 * keeps a free text (administration, descriptif, commentaire, complementJugement, activity), where managers and
 * partners are named: `resume` is rebuilt from coded fields only (kind of registration, judgment, removal, filing;
 * legal form, capital, dates) and, for modifications, from the subjects the text touches (administration, capital,
 * seat...), never from its words.
 */

const LOT = 1000;
const REQUISES = ['id', 'dateparution', 'familleavis'];

const AVIS: Table = {
  nom: 'avis_bodacc',
  colonnes: [
    ['dataset', 'text'],
    ['id', 'text'],
    ['publication', 'text'],
    ['parution', 'text'],
    ['numero_annonce', 'integer'],
    ['date_parution', 'date'],
    ['type_avis', 'text'],
    ['famille', 'text'],
    ['famille_libelle', 'text'],
    ['categorie', 'text'],
    ['date_effet', 'date'],
    ['tribunal', 'text'],
    ['ville', 'text'],
    ['cp', 'text'],
    ['departement', 'text'],
    ['denomination', 'text'],
    ['forme_juridique', 'text'],
    ['sirens', 'text[]'],
    ['porte_sur_personne_physique', 'boolean'],
    ['societe_civile', 'boolean'],
    ['siege_numero', 'text'],
    ['siege_voie', 'text'],
    ['siege_code_postal', 'text'],
    ['siege_ville', 'text'],
    ['cle_ban', 'text'],
    ['resume', 'text'],
    ['avis_precedent', 'text'],
  ],
  cle: ['dataset', 'id'],
  horodatage: 'maj_le',
};

export type CategorieAvis =
  'creation' | 'modification' | 'transfert' | 'radiation' | 'procedure' | 'depot_comptes' | 'vente' | 'autre';

type Objet = Record<string, unknown>;

/** A JSON column: the object, null when empty, undefined when unreadable. */
function json(value: string | null): Objet | null | undefined {
  if (value === null) return null;
  try {
    const parsed = JSON.parse(value) as unknown;
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Objet) : undefined;
  } catch {
    return undefined;
  }
}

function liste(value: unknown): Objet[] {
  if (Array.isArray(value)) return value.filter((v): v is Objet => v !== null && typeof v === 'object');
  return value !== null && typeof value === 'object' ? [value as Objet] : [];
}

function chaine(value: unknown): string | null {
  if (typeof value === 'number') return String(value);
  return typeof value === 'string' ? texte(value) : null;
}

/** The 9-digit SIRENs of `registre` (`894670793,894 670 793`, or a JSON array) and of the persons' registrations. */
function sirensDe(registre: string | null, personnes: Objet[]): string[] {
  const bruts: string[] = [];
  if (registre) {
    let valeurs: unknown = null;
    if (registre.startsWith('[')) {
      try {
        valeurs = JSON.parse(registre);
      } catch {
        valeurs = null;
      }
    }
    bruts.push(...(Array.isArray(valeurs) ? valeurs.map(String) : registre.split(',')));
  }
  for (const p of personnes) {
    const immat = p.numeroImmatriculation as Objet | undefined;
    const n = chaine(immat?.numeroIdentification);
    if (n) bruts.push(n);
  }
  const out = new Set<string>();
  for (const b of bruts) {
    const digits = b.replace(/\D/g, '');
    if (digits.length === 9) out.add(digits);
  }
  return [...out];
}

/** Subjects a modification's text touches, named in our words (the text itself is never kept). */
const SUJETS: Array<[RegExp, string]> = [
  [/transfert|siege|adresse/, 'siège'],
  [/administration|gerant|gerance|dirigeant|president|directeur|associe|commissaire/, 'administration'],
  [/capital/, 'capital'],
  [/denomination|raison sociale|nom commercial|enseigne/, 'dénomination'],
  [/forme juridique|transformation/, 'forme juridique'],
  [/activite|objet social/, 'activité'],
  [/dissolution|liquidation amiable/, 'dissolution'],
  [/cloture|exercice/, 'exercice social'],
];

function sujets(...textes: Array<string | null>): string[] {
  const t = plier(textes.filter(Boolean).join(' '));
  return SUJETS.filter(([re]) => re.test(t)).map(([, label]) => label);
}

function categorieDe(famille: string | null, textes: Array<string | null>): CategorieAvis {
  const f = plier(famille ?? '');
  const transfert = /transfert/.test(plier(textes.filter(Boolean).join(' ')));
  if (f === 'creation' || f === 'immatriculation') return transfert ? 'transfert' : 'creation';
  if (f === 'modification') return transfert ? 'transfert' : 'modification';
  if (f === 'radiation') return 'radiation';
  if (f === 'collective' || f === 'conciliation' || f.startsWith('retablissement')) return 'procedure';
  if (f === 'dpc' || f.startsWith('depot')) return 'depot_comptes';
  if (f === 'vente') return 'vente';
  return 'autre';
}

/** A date in a JSON field (AAAA-MM-JJ, JJ/MM/AAAA, AAAAMMJJ), or null. */
function dateDe(value: unknown): string | null {
  const d = dateIso(chaine(value));
  return d ?? null;
}

function capitalDe(personne: Objet | undefined): string | null {
  const capital = personne?.capital as Objet | undefined;
  const montant = chaine(capital?.montantCapital);
  if (!montant || !/^[\d\s.,]+$/.test(montant)) return null;
  return `capital ${montant} ${chaine(capital?.devise) ?? 'EUR'}`;
}

/** A controlled-vocabulary label: kept only when short and free of what would be a free text. */
function libelle(value: unknown): string | null {
  const t = chaine(value);
  if (!t || t.length > 160 || /[:;]/.test(t)) return null;
  return t.replace(/\s+/g, ' ').replace(/\.$/, '');
}

interface Avis extends Lu {
  adresse: { numero: string | null; voie: string | null; codePostal: string | null } | null;
  jsonIllisible: boolean;
}

function avisDe(get: (n: string) => string | null, dataset: Dataset, ligne: number): Avis | string {
  const id = get('id');
  if (!id || !/^[A-Z0-9]{6,20}$/i.test(id)) return `id invalide (${id?.slice(0, 30) ?? 'absent'})`;
  const dateParution = dateIso(get('dateparution'));
  if (!dateParution) return `dateparution invalide (${get('dateparution')?.slice(0, 20) ?? 'absente'})`;
  const numeroTexte = get('numeroannonce');
  const numeroAnnonce = numeroTexte !== null && /^\d{1,9}$/.test(numeroTexte) ? Number(numeroTexte) : null;

  let jsonIllisible = false;
  const lire = (name: string): Objet | null => {
    const v = json(get(name));
    if (v === undefined) {
      jsonIllisible = true;
      return null;
    }
    return v;
  };
  const listePersonnes = lire('listepersonnes');
  const personnes = liste(listePersonnes?.personne);
  const etablissements = liste(lire('listeetablissements')?.etablissement);
  const jugement = lire('jugement');
  const acte = lire('acte');
  const modifications = lire('modificationsgenerales');
  const radiation = lire('radiationaurcs');
  const depot = lire('depot');
  const precedent = lire('parutionavisprecedent');

  // Unreadable or absent persons: handled as a natural person, so that nothing named is kept.
  const physique = personnes.length === 0 || personnes.some((p) => plier(chaine(p.typePersonne) ?? '') !== 'pm');
  const morale = physique ? undefined : personnes[0];
  const denomination = morale ? (chaine(morale.denomination) ?? get('commercant')) : null;
  const forme = morale ? chaine(morale.formeJuridique) : null;
  const formePliee = plier(`${forme ?? ''} ${denomination ?? ''}`);
  const civile =
    !physique &&
    (/societe civile|groupement foncier|groupement forestier|groupement agricole/.test(formePliee) ||
      /^(sci|scm|scp|scpi|sccv|gfa|gaec)\b/.test(formePliee) ||
      /^(sci|scm|scpi|sccv)\b/.test(plier(denomination ?? '')));

  const famille = get('familleavis');
  const creation = liste(acte?.creation)[0];
  const vente = liste(acte?.vente)[0];
  const textesTransfert = [
    chaine(modifications?.descriptif),
    chaine(creation?.categorieCreation),
    chaine(acte?.descriptif),
  ];
  const categorie = categorieDe(famille, textesTransfert);

  const parts: string[] = [];
  let dateEffet: string | null = null;
  switch (categorie) {
    case 'creation':
    case 'transfert': {
      const cat = libelle(creation?.categorieCreation);
      dateEffet = dateDe(acte?.dateImmatriculation) ?? dateDe(creation?.dateCommencementActivite);
      if (categorie === 'transfert' && plier(famille ?? '') === 'modification') {
        parts.push('Transfert du siège');
      } else {
        parts.push(cat ?? (categorie === 'transfert' ? 'Immatriculation suite à transfert' : 'Immatriculation'));
      }
      break;
    }
    case 'modification': {
      const s = sujets(chaine(modifications?.descriptif), chaine(acte?.descriptif));
      parts.push(s.length > 0 ? `Modification : ${s.join(', ')}` : 'Modification');
      dateEffet = dateDe(modifications?.dateEffet) ?? dateDe(modifications?.dateCommencementActivite);
      break;
    }
    case 'radiation': {
      // The export writes radiationPM as a flag (« O »): a label is a sentence, not a code.
      const etiquette = [libelle(radiation?.radiationPM), libelle(radiation?.radiationPP)].find(
        (l) => l && l.length > 3,
      );
      parts.push(etiquette ?? 'Radiation du registre');
      dateEffet = dateDe(radiation?.dateCessationActivitePM) ?? dateDe(radiation?.dateCessationActivitePP);
      break;
    }
    case 'procedure': {
      parts.push(libelle(jugement?.nature) ?? libelle(jugement?.famille) ?? 'Procédure collective');
      dateEffet = dateDe(jugement?.date);
      break;
    }
    case 'depot_comptes': {
      parts.push(libelle(depot?.typeDepot) ?? 'Dépôt des comptes');
      dateEffet = dateDe(depot?.dateCloture);
      if (dateEffet) parts.push(`clôture de l’exercice au ${dateEffet}`);
      break;
    }
    case 'vente': {
      parts.push(libelle(vente?.categorieVente) ?? 'Vente ou cession');
      break;
    }
    default:
      parts.push(libelle(get('familleavis_lib')) ?? 'Avis');
  }
  if (!physique) {
    if (forme && forme.length <= 120) parts.push(forme);
    const capital = capitalDe(morale);
    if (capital) parts.push(capital);
  } else {
    parts.push('personne physique (non nommée)');
  }
  if (dateEffet && categorie !== 'depot_comptes') parts.push(`date d’effet ${dateEffet}`);
  const typeAvis = get('typeavis');
  if (typeAvis && plier(typeAvis) !== 'annonce')
    parts.unshift(plier(typeAvis).startsWith('rectif') ? 'Rectificatif' : 'Annulation');

  const seat = (morale?.adresseSiegeSocial ?? liste(etablissements[0]?.adresse)[0]) as Objet | undefined;
  const siege =
    !physique && seat
      ? {
          numero: chaine(seat.numeroVoie),
          voie: [chaine(seat.typeVoie), chaine(seat.nomVoie)].filter(Boolean).join(' ') || null,
          codePostal: chaine(seat.codePostal),
          ville: chaine(seat.ville) ?? chaine(seat.localite),
        }
      : null;

  const pub = chaine(precedent?.nomPublication);
  const parutionPrecedente = chaine(precedent?.numeroParution);
  const annoncePrecedente = chaine(precedent?.numeroAnnonce);
  const cp = get('cp');
  return {
    ligne,
    jsonIllisible,
    adresse: siege ? { numero: siege.numero, voie: siege.voie, codePostal: siege.codePostal ?? cp } : null,
    row: {
      dataset,
      id: id.toUpperCase(),
      publication: get('publicationavis'),
      parution: get('parution'),
      numero_annonce: numeroAnnonce,
      date_parution: dateParution,
      type_avis: typeAvis,
      famille,
      famille_libelle: get('familleavis_lib'),
      categorie,
      date_effet: dateEffet,
      tribunal: get('tribunal'),
      ville: get('ville'),
      cp: cp && /^\d{5}$/.test(cp) ? cp : null,
      departement: get('numerodepartement'),
      denomination,
      forme_juridique: forme,
      sirens: sirensDe(get('registre'), personnes),
      porte_sur_personne_physique: physique,
      societe_civile: civile,
      siege_numero: siege?.numero ?? null,
      siege_voie: siege?.voie ?? null,
      siege_code_postal: siege?.codePostal ?? null,
      siege_ville: siege?.ville ?? null,
      cle_ban: null,
      resume: `${parts.join(' ; ')}.`,
      avis_precedent:
        pub && parutionPrecedente && annoncePrecedente && /^\d+$/.test(annoncePrecedente)
          ? `${pub.trim().slice(-1).toUpperCase()}${parutionPrecedente}${Number(annoncePrecedente)}`
          : null,
    },
  };
}

/** The files of a BODACC import a folder holds: DILA bulletins (XML, archives) and CSV exports. */
export const FICHIERS_BODACC = /(^(RCS-[AB]|PCL|BILAN)[_-].*\.(taz|tar|tgz|tar\.gz|xml)$)|(\.csv(\.gz)?$)/i;

/** A CSV export: its records after a header checked to be the export's, or an ImportError. */
async function ouvrirCsv(file: string) {
  const records = csvRecords(file, separateurDe);
  const premiere = await records.next();
  if (premiere.done) {
    await records.return(undefined);
    throw new ImportError(`${file} est vide : en-tête BODACC attendu.`);
  }
  const entete = premiere.value.champs;
  const colonnes = colonnesDe(entete.map((c) => c.toLowerCase()));
  const manquantes = REQUISES.filter((c) => !colonnes.has(c));
  if (manquantes.length > 0) {
    await records.return(undefined);
    throw new ImportError(
      `En-tête BODACC attendu (export « annonces-commerciales » de la DILA, séparateur « ; ») : colonne(s) ${manquantes.join(', ')} absente(s). En-tête lu : ${entete.join(';').slice(0, 200)}`,
    );
  }
  return { records, entete, colonnes };
}

/** Checks, before anything is written, that every file is a bulletin, an archive of bulletins or an export. */
async function verifier(file: string, forme: FormeFichier): Promise<void> {
  if (forme === 'inconnue') {
    throw new ImportError(
      `${file} : ni bulletin BODACC de la DILA (XML, archive .taz), ni export CSV « annonces-commerciales ».`,
    );
  }
  if (forme === 'csv') {
    const { records } = await ouvrirCsv(file);
    await records.return(undefined);
    return;
  }
  // The root element (and the archive around it) is read, then the reading stops.
  const avis = avisDuFichier(file);
  await avis.next();
  await avis.return(undefined);
}

/**
 * Imports BODACC notices into `dataset`: DILA bulletins in their source format (an XML bulletin of any family, or
 * its `.taz` archive, read as a stream: bodacc-xml.ts) and CSV exports of `annonces-commerciales`, one file or
 * several at once. Every file is checked before anything is written (an ImportError says which one is unusable); a
 * bad notice is rejected with its reason, its file and its rank (the line a CSV notice starts on). Notices are
 * upserted by their id, the same for a notice read from a bulletin and from the export: importing again changes
 * nothing.
 */
export async function importBodacc(
  db: Db,
  chemins: string | string[],
  options: DatasetImportOptions = {},
): Promise<ImportReport> {
  const dataset = options.dataset ?? 'live';
  const fichiers = Array.isArray(chemins) ? chemins : [chemins];
  for (const f of fichiers) await exigerFichier(f);
  const formes = await Promise.all(fichiers.map(formeDe));
  for (const [i, f] of fichiers.entries()) await verifier(f, formes[i]!);
  const plusieurs = fichiers.length > 1;
  const { report, rejeter } = nouveauRapport(plusieurs ? `${fichiers.length} fichiers` : fichiers[0]!);
  let physiques = 0;
  let civiles = 0;
  let rattaches = 0;
  let illisibles = 0;
  let bulletins = 0;
  const doublons = new Set<string>();
  // Each batch is one transaction with its novelties: the notices of civil companies new to the database.
  const { resultat: ecriture, nouveautes } = await avecLotsJournalises(
    db,
    'societe_civile',
    dataset,
    async (client, journal) => {
      const lots = upsertParLots<Avis>(client, {
        table: AVIS,
        taille: LOT,
        cle: (l) => l.row.id as string,
        report,
        rejeter,
        onProgress: options.onProgress,
        async completer(lot) {
          await journal.avant(lot.map((l) => l.row.id as string));
          const cles = await clesBan(
            client,
            dataset,
            lot.map((l) => (l.adresse ? { ...l.adresse } : {})),
          );
          lot.forEach((l, i) => {
            l.row.cle_ban = cles[i];
            if (cles[i]) rattaches++;
            if (l.row.porte_sur_personne_physique) physiques++;
            if (l.row.societe_civile) civiles++;
            if (l.jsonIllisible) illisibles++;
          });
        },
      });

      // Numbers run on across files, so that a rejection points at one notice; its reason names the file.
      let base = 0;
      const lus = new Map<string, string>();
      for (const [i, file] of fichiers.entries()) {
        const nom = path.basename(file);
        const prefixe = plusieurs ? `${nom} : ` : '';
        let dernier = 0;
        if (formes[i] === 'csv') {
          const { records, entete, colonnes } = await ouvrirCsv(file);
          try {
            const rejeterIci = (ligne: number, motif: string) => rejeter(ligne, `${prefixe}${motif}`);
            for await (const { ligne, champs } of lignesDeDonnees(records, entete.length, report, rejeterIci)) {
              dernier = ligne;
              const lu = avisDe(lecteurDe(colonnes, champs), dataset, base + ligne);
              if (typeof lu === 'string') rejeter(base + ligne, `${prefixe}${lu}`);
              else await lots.garder(lu);
            }
          } finally {
            await records.return(undefined);
          }
        } else {
          const sources = new Set<string>();
          for await (const a of avisDuFichier(file)) {
            // A bulletin met twice (an archive and its extracted XML side by side in a folder) is read once.
            const cle = `${a.bulletin.famille}|${a.bulletin.parution ?? a.bulletin.source}`;
            const deja = lus.get(cle);
            if (deja !== undefined && deja !== a.bulletin.source) {
              doublons.add(`${a.bulletin.source} (déjà lu dans ${deja})`);
              continue;
            }
            lus.set(cle, a.bulletin.source);
            report.lus++;
            dernier++;
            sources.add(a.bulletin.source);
            const ligne = base + dernier;
            const champs = champsAvis(a);
            const lu = typeof champs === 'string' ? champs : avisDe((n) => champs[n] ?? null, dataset, ligne);
            if (typeof lu === 'string') rejeter(ligne, `${a.bulletin.source}, avis n° ${a.rang} : ${lu}`);
            else await lots.garder(lu);
          }
          bulletins += sources.size;
        }
        base += dernier;
      }
      return lots.terminer();
    },
  );
  report.details.push(
    ...(bulletins > 0 ? [`bulletins XML de la DILA lus : ${bulletins}`] : []),
    ...[...doublons].map((d) => `bulletin lu deux fois, ignoré : ${d}`),
    ligneEcriture('avis', report.gardes, ecriture),
    `sur des personnes physiques (gardés sans nom) : ${physiques}`,
    `sur des sociétés civiles : ${civiles}`,
    `sièges rattachés à un numéro de la BAN : ${rattaches}`,
    `nouveautés au journal des adresses : ${nouveautes}`,
  );
  if (illisibles > 0) report.details.push(`avis dont une colonne JSON est illisible (lue comme vide) : ${illisibles}`);
  return report;
}

/** The `bodacc` source of the importers' CLI. */
export const bodaccSource = importSource(
  'bodacc',
  'annonces du BODACC : bulletins de la DILA (XML RCS-A, RCS-B, PCL, BILAN, ou leur archive .taz), export CSV « annonces-commerciales » (.csv, .csv.gz) ; plusieurs fichiers ou dossiers',
  importBodacc,
  FICHIERS_BODACC,
);
