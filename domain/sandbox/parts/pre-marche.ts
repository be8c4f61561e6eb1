import { Alea, plusAns, plusJours } from '../alea.ts';
import { csv, type SandboxPart } from '../part.ts';
import { afnor, lambert93, type InseeSandbox, type Numero, type Territoire } from '../territoire.ts';
import { dpePart } from './dpe.ts';
import { ANNEES, dvfPart, MARCHES } from './dvf.ts';

/**
 * The pre-market history of the sandbox: DPE (with the audits of some) dated from July 2021, and the DVF sales that
 * follow some of them, drawn with KNOWN propensities per signal, so that a test can check that the pre-market model
 * (domain/pre-marche/) recovers their order and that its calibration bands are honest.
 *
 * Each history DPE is drawn in date order; its signals are those the model computes from the data, as of that day
 * (the earlier DPE of the address, generated or from parts/dpe.ts; the sales at the address in the two years before,
 * from parts/dvf.ts and from this history); then a sale at the address within the next 12 months is drawn with the
 * probability sigmoid(BASE + Σ PROPENSIONS[signal]). The sales of parts/dvf.ts, drawn at random numbers, still happen
 * on top: they are the noise a real market has (a building's other flats, sales no signal foretells).
 *
 * Written as two more files of the DPE source and one more of the DVF source, loaded by the same importers.
 */

/** Log-odds of the drawn sale, without any signal. */
export const BASE_LOGIT = -1.6;
/** Log-odds added by each signal when present (the order the model must recover). */
export const PROPENSIONS = {
  audit_connu: 2.6,
  dpe_valide_au_dpe: 1.6,
  passoire: 0.6,
  detention_moins_2_ans: -1.2,
} as const;

/**
 * Per commune with DVF, the most random sales (parts/dvf.ts, 2018-2025) a number may have to carry history DPE: the
 * city's buildings sell every year whatever their DPE say. Strasbourg (Alsace-Moselle, no DVF) has none: nothing
 * would measure them.
 */
/** Share of houses among the history's dwellings, as parts/dvf.ts sells them (Paris 11e sells no house). */
const PART_MAISONS: Partial<Record<InseeSandbox, number>> = { '33234': 0.85, '33001': 0.85, '75111': 0, '59350': 0.3 };
const CALME: Partial<Record<InseeSandbox, number>> = { '33234': 4, '33001': 2, '75111': 3, '59350': 3 };
/**
 * Share of those numbers that carry history. The estimate's departmental index is a median over the département's
 * sales of each year: the history keeps Latresne and Abzac in about the proportion of parts/dvf.ts (7 to 3), or the
 * index would move with the mix rather than with prices.
 */
const PART_NUMEROS: Partial<Record<InseeSandbox, number>> = { '33234': 1, '33001': 0.35, '75111': 1, '59350': 1 };
// DPE of the former method (before July 2021) are part of the history: the observatory publishes them too.
const DEBUT = '2018-07-01';
const FIN_DPE = '2025-10-31';
/**
 * The history's last sale: the end of 2024. The estimate's backtest (GET /modeles/estimation) holds the 2025 vintage
 * out and measures itself on parts/dvf.ts's sales of it; the history adds comparables before it, not cases to it.
 * DPE of the first half of 2024 thus see fewer sales in their 12 months: the training sees it as the data says it.
 */
const FIN_DVF = '2024-12-31';
const CLASSES = ['A', 'B', 'C', 'D', 'E', 'F', 'G'] as const;
const POIDS_CLASSES = [3, 7, 18, 28, 20, 13, 11];
const CONSO = [55, 90, 150, 220, 290, 380, 480];
const PERIODES = ['avant 1948', '1948-1974', '1975-1977', '1989-2000', '2006-2012', '2013-2021'];

const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));
const jours = (de: string, a: string) => Math.round((Date.parse(a) - Date.parse(de)) / 86_400_000);

function lignesCsv(texte: string): Array<Record<string, string>> {
  const [entete, ...lignes] = texte.trimEnd().split('\n');
  const noms = entete.split(',');
  return lignes.map((l) => {
    const valeurs: string[] = [];
    let courant = '';
    let guillemets = false;
    for (const ch of l) {
      if (ch === '"') guillemets = !guillemets;
      else if (ch === ',' && !guillemets) {
        valeurs.push(courant);
        courant = '';
      } else courant += ch;
    }
    valeurs.push(courant);
    return Object.fromEntries(noms.map((n, i) => [n, valeurs[i] ?? '']));
  });
}

interface DpeConnu {
  date: string;
  type: 'maison' | 'appartement';
  surface: number;
}

export interface DpeHistorique extends DpeConnu {
  numero: string;
  n: Numero;
  classe: number;
  audit: string | null;
  signaux: Array<keyof typeof PROPENSIONS>;
  vente: string | null;
}

export interface Historique {
  dpe: DpeHistorique[];
  ventes: Array<{ date: string; n: Numero; surface: number; type: 'maison' | 'appartement'; prix: number }>;
}

const cache = new Map<number, Historique>();

/**
 * A sale's price on the market parts/dvf.ts draws (the commune's level that year, the type, the surface's
 * elasticity, about the mean of its places and conditions, a lognormal error), so that the estimate's backtest, which
 * reads these sales too, measures the same market.
 */
function prixDe(t: Territoire, type: 'maison' | 'appartement', surface: number, date: string, bruit: number): number {
  const marche = MARCHES[t.commune.insee]!;
  const niveau = marche.prixM2[ANNEES.indexOf(Number(date.slice(0, 4)))];
  const urbaine = t.commune.urbaine;
  const typeEffet = type === 'maison' ? (urbaine ? -0.1 : 0) : urbaine ? 0 : -0.1;
  const log = typeEffet - 0.05 - 0.12 * Math.log(surface / (type === 'maison' ? 110 : 55)) + 0.1 * bruit;
  return Math.round((niveau * Math.exp(log) * surface) / 100) * 100;
}

/** The history of the seed (the two parts of this file draw it once). */
export function historique(seed: number, territoires: Territoire[]): Historique {
  const deja = cache.get(seed);
  if (deja) return deja;
  // What the other parts put at each address, as the model will read it.
  const ventesAvant = new Map<string, string[]>();
  for (const l of lignesCsv(String(dvfPart.fichiers(seed, territoires)[0][1]))) {
    if (!l.adresse_numero || !/^Vente/.test(l.nature_mutation)) continue;
    const rep = l.adresse_suffixe === 'B' ? '_bis' : l.adresse_suffixe === 'T' ? '_ter' : '';
    const cle = `${l.code_commune}_${l.adresse_code_voie.toLowerCase()}_${l.adresse_numero.padStart(5, '0')}${rep}`;
    ventesAvant.set(cle, [...(ventesAvant.get(cle) ?? []), l.date_mutation]);
  }
  const dpeAvant = new Map<string, DpeConnu[]>();
  for (const l of lignesCsv(String(dpePart.fichiers(seed, territoires)[0][1]))) {
    const cle = l.Identifiant__BAN;
    dpeAvant.set(cle, [
      ...(dpeAvant.get(cle) ?? []),
      {
        date: l.Date_établissement_DPE,
        type: l.Type_bâtiment === 'maison' ? 'maison' : 'appartement',
        surface: Number(l.Surface_habitable_logement),
      },
    ]);
  }
  const sortie: Historique = { dpe: [], ventes: [] };
  let sequence = 0;
  for (const t of territoires) {
    const calme = CALME[t.commune.insee];
    if (calme === undefined) continue;
    const alea = new Alea(seed, `pre-marche:${t.commune.insee}`);
    // Numbers the random sales of parts/dvf.ts leave quiet: there, a sale is mostly the one the signals foretell.
    const numeros = t.numeros.filter(
      (n) => (ventesAvant.get(n.cle) ?? []).length <= calme && alea.chance(PART_NUMEROS[t.commune.insee]!),
    );
    // Each number's DPE, a year and more apart: a sale drawn for one never falls in another's 12 months.
    const tirages: Array<{ date: string; n: Numero }> = [];
    for (const n of numeros) {
      for (let date = plusJours(DEBUT, alea.int(0, 700)); date <= FIN_DPE; date = plusJours(date, alea.int(380, 800))) {
        tirages.push({ date, n });
      }
    }
    tirages.sort((a, b) => a.date.localeCompare(b.date) || a.n.cle.localeCompare(b.n.cle));
    const logements = new Map<string, DpeConnu[]>();
    const audits = new Map<string, string[]>();
    for (const { date, n } of tirages) {
      const connus = [...(dpeAvant.get(n.cle) ?? []), ...(logements.get(n.cle) ?? [])].filter((d) => d.date < date);
      let type: 'maison' | 'appartement' = alea.chance(PART_MAISONS[t.commune.insee]!) ? 'maison' : 'appartement';
      let surface = type === 'maison' ? Math.round(alea.between(70, 170)) : Math.round(alea.between(20, 95));
      // Half the DPE of an address already diagnosed redo one of its dwellings (a house has only one).
      const maison = connus.find((d) => d.type === 'maison');
      if (maison || (connus.length > 0 && alea.chance(0.5))) {
        const refait = maison ?? alea.pick(connus);
        type = refait.type;
        surface = refait.surface;
      }
      const classe = alea.weighted(POIDS_CLASSES.map((w, i) => [i, w] as const));
      // Signals as the model reads them (domain/pre-marche/signaux.ts).
      const valide = connus.some(
        (d) =>
          (d.type === 'maison' && type === 'maison') ||
          Math.abs(d.surface - surface) <= Math.max(1, 0.02 * Math.max(d.surface, surface)),
      );
      const passoire = classe >= 5;
      // The pre-sale pack: an audit of an F or G house, at the DPE's visit or a few days before it.
      const audit = passoire && type === 'maison' && alea.chance(0.6) ? plusJours(date, -alea.int(0, 10)) : null;
      if (audit) audits.set(n.cle, [...(audits.get(n.cle) ?? []), audit]);
      const auditConnu = (audits.get(n.cle) ?? []).some((a) => a <= date);
      const ventes = (ventesAvant.get(n.cle) ?? []).filter((v) => v < date);
      const derniere = ventes.sort().at(-1);
      const signaux: DpeHistorique['signaux'] = [];
      if (auditConnu) signaux.push('audit_connu');
      if (valide) signaux.push('dpe_valide_au_dpe');
      if (passoire) signaux.push('passoire');
      if (derniere && jours(derniere, date) <= 730) signaux.push('detention_moins_2_ans');
      const p = sigmoid(BASE_LOGIT + signaux.reduce((somme, x) => somme + PROPENSIONS[x], 0));
      const vendue = alea.chance(p);
      const venteLe = plusJours(date, alea.int(20, 360));
      const numero = `${date.slice(2, 4)}${t.commune.departement}S9${String(++sequence).padStart(6, '0')}X`;
      const d: DpeHistorique = {
        numero,
        n,
        date,
        type,
        surface,
        classe,
        audit,
        signaux,
        vente: vendue && venteLe <= FIN_DVF ? venteLe : null,
      };
      sortie.dpe.push(d);
      logements.set(n.cle, [...(logements.get(n.cle) ?? []), { date, type, surface }]);
      if (d.vente) {
        const prix = prixDe(t, type, surface, d.vente, alea.normal());
        sortie.ventes.push({ date: d.vente, n, surface, type, prix });
        ventesAvant.set(n.cle, [...(ventesAvant.get(n.cle) ?? []), d.vente]);
      }
    }
  }
  cache.set(seed, sortie);
  return sortie;
}

const DPE_ENTETE =
  'N°DPE,Date_réception_DPE,Date_établissement_DPE,Modèle_DPE,Date_fin_validité_DPE,Version_DPE,Méthode_application_DPE,Etiquette_GES,Etiquette_DPE,Type_bâtiment,Période_construction,Surface_habitable_logement,Nombre_appartement,Nom__commune_(BAN),Code_INSEE_(BAN),N°_voie_(BAN),Identifiant__BAN,Adresse_(BAN),Code_postal_(BAN),Score_BAN,Nom__rue_(BAN),Coordonnée_cartographique_X_(BAN),Coordonnée_cartographique_Y_(BAN),Code_département_(BAN),Conso_5_usages_par_m²_é_primaire,Type_énergie_principale_chauffage,Type_installation_chauffage'.split(
    ',',
  );
const AUDIT_ENTETE =
  'n_audit,id_etape,categorie_scenario,etape_travaux,date_etablissement_audit,date_fin_validite_audit,numero_dpe,classe_bilan_dpe,cout_travaux,couts_cumules_travaux'.split(
    ',',
  );

function dpeCsv(h: Historique): string {
  return csv(
    DPE_ENTETE,
    h.dpe.map((d) => {
      const v = d.n.voie;
      const c = v.commune;
      const texte = `${d.n.numero}${d.n.rep ? ` ${d.n.rep}` : ''}`;
      const { x, y } = lambert93(d.n.lat, d.n.lon);
      return {
        'N°DPE': d.numero,
        Date_réception_DPE: d.date,
        Date_établissement_DPE: d.date,
        Modèle_DPE: 'DPE 3CL 2021 méthode logement',
        Date_fin_validité_DPE: plusJours(plusAns(d.date, 10), -1),
        Version_DPE: '2.4',
        Méthode_application_DPE: d.type === 'maison' ? 'dpe maison individuelle' : 'dpe appartement individuel',
        Etiquette_GES: CLASSES[Math.max(0, d.classe - 1)],
        Etiquette_DPE: CLASSES[d.classe],
        Type_bâtiment: d.type,
        Période_construction: PERIODES[(d.classe * 7 + d.surface) % PERIODES.length],
        Surface_habitable_logement: d.surface,
        Nombre_appartement: d.type === 'maison' ? 1 : 12,
        'Nom__commune_(BAN)': c.nom,
        'Code_INSEE_(BAN)': c.insee,
        'N°_voie_(BAN)': d.n.numero,
        Identifiant__BAN: d.n.cle,
        'Adresse_(BAN)': `${texte} ${v.nom} ${v.codePostal} ${c.nom}`,
        'Code_postal_(BAN)': v.codePostal,
        Score_BAN: 0.93,
        'Nom__rue_(BAN)': v.nom,
        'Coordonnée_cartographique_X_(BAN)': x,
        'Coordonnée_cartographique_Y_(BAN)': y,
        'Code_département_(BAN)': c.departement,
        'Conso_5_usages_par_m²_é_primaire': CONSO[d.classe],
        Type_énergie_principale_chauffage: d.classe >= 5 ? 'Fioul domestique' : 'Gaz naturel',
        Type_installation_chauffage: 'individuel',
      };
    }),
    ',',
  );
}

function auditsCsv(h: Historique): string {
  const lignes: Array<Record<string, string | number>> = [];
  let sequence = 0;
  for (const d of h.dpe) {
    if (!d.audit) continue;
    const commun = {
      n_audit: `A${d.audit.slice(2, 4)}${d.n.voie.commune.departement}S9${String(++sequence).padStart(5, '0')}X`,
      date_etablissement_audit: d.audit,
      date_fin_validite_audit: plusAns(d.audit, 5),
      numero_dpe: d.numero,
    };
    // No cost of works: these audits are the pre-market's signal, not prices. The exit costs and their backtest
    // (the `travaux` sheet) keep to parts/dpe.ts's audits, as they were.
    lignes.push({
      ...commun,
      id_etape: 1,
      categorie_scenario: 'état initial',
      etape_travaux: 'état initial',
      classe_bilan_dpe: CLASSES[d.classe],
    });
    lignes.push({
      ...commun,
      id_etape: 2,
      categorie_scenario: 'scénario en une étape',
      etape_travaux: 'étape finale',
      classe_bilan_dpe: 'C',
    });
  }
  return csv(AUDIT_ENTETE, lignes, ',');
}

const DVF_ENTETE =
  'id_mutation,date_mutation,numero_disposition,nature_mutation,valeur_fonciere,adresse_numero,adresse_suffixe,adresse_nom_voie,adresse_code_voie,code_postal,code_commune,nom_commune,code_departement,id_parcelle,nombre_lots,code_type_local,type_local,surface_reelle_bati,nombre_pieces_principales,code_nature_culture,nature_culture,surface_terrain,longitude,latitude'.split(
    ',',
  );

function dvfCsv(h: Historique): string {
  const ventes = [...h.ventes].sort((a, b) => a.date.localeCompare(b.date) || a.n.cle.localeCompare(b.n.cle));
  // Mutation numbers far above parts/dvf.ts's (from 9 000 001 each year): none is shared.
  const numeros = new Map<string, number>();
  return csv(
    DVF_ENTETE,
    ventes.map((v) => {
      const annee = v.date.slice(0, 4);
      const k = (numeros.get(annee) ?? 9_500_000) + 1;
      numeros.set(annee, k);
      const c = v.n.voie.commune;
      const maison = v.type === 'maison';
      return {
        id_mutation: `${annee}-${k}`,
        date_mutation: v.date,
        numero_disposition: '000001',
        nature_mutation: 'Vente',
        valeur_fonciere: v.prix,
        adresse_numero: v.n.numero,
        adresse_suffixe: v.n.rep === 'bis' ? 'B' : v.n.rep === 'ter' ? 'T' : '',
        adresse_nom_voie: afnor(v.n.voie.nom),
        adresse_code_voie: v.n.voie.code,
        code_postal: v.n.voie.codePostal,
        code_commune: c.insee,
        nom_commune: c.nom,
        code_departement: c.departement,
        id_parcelle: v.n.parcelles[0],
        nombre_lots: maison ? 0 : 1,
        code_type_local: maison ? 1 : 2,
        type_local: maison ? 'Maison' : 'Appartement',
        surface_reelle_bati: v.surface,
        nombre_pieces_principales: Math.max(1, Math.round(v.surface / 22)),
        code_nature_culture: maison ? 'S' : '',
        nature_culture: maison ? 'sols' : '',
        surface_terrain: maison ? (c.urbaine ? 250 : 900) : '',
        longitude: v.n.lon.toFixed(6),
        latitude: v.n.lat.toFixed(6),
      };
    }),
    ',',
  );
}

/** The history's DPE and audits (imported after parts/dpe.ts's files). */
export const preMarcheDpePart: SandboxPart<'dpe'> = {
  source: 'dpe',
  fichiers: (seed, territoires) => {
    const h = historique(seed, territoires);
    return [
      ['dpe-historique-pre-marche.csv', dpeCsv(h)],
      ['audits-historique-pre-marche.csv', auditsCsv(h)],
    ];
  },
};

/** The history's sales (imported after parts/dvf.ts's file). */
export const preMarcheDvfPart: SandboxPart<'dvf'> = {
  source: 'dvf',
  fichiers: (seed, territoires) => [['dvf-historique-pre-marche.csv', dvfCsv(historique(seed, territoires))]],
};
