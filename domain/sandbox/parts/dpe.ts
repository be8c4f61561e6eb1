import { Alea, plusAns, plusJours } from '../alea.ts';
import { csv, type SandboxPart } from '../part.ts';
import { lambert93, round, type InseeSandbox, type Territoire } from '../territoire.ts';

/** DPE (ADEME open data, « DPE Logements existants ») at the BAN numbers of the territory, and energy audits. */

/** By commune: how many DPE, and the weights of the classes A to G. */
const DIAGNOSTICS: Record<InseeSandbox, { nombre: number; classes: number[] }> = {
  '33234': { nombre: 30, classes: [6, 12, 25, 28, 15, 8, 6] },
  '33001': { nombre: 30, classes: [3, 8, 18, 28, 20, 13, 10] },
  '75111': { nombre: 45, classes: [2, 4, 12, 25, 25, 17, 15] },
  '59350': { nombre: 40, classes: [2, 5, 15, 30, 25, 13, 10] },
  '67482': { nombre: 40, classes: [3, 6, 18, 32, 22, 11, 8] },
};

const DPE_ENTETE =
  'N°DPE,Date_réception_DPE,Date_établissement_DPE,Date_visite_diagnostiqueur,Modèle_DPE,N°_DPE_remplacé,Date_fin_validité_DPE,Version_DPE,N°_DPE_immeuble_associé,Méthode_application_DPE,N°_immatriculation_copropriété,Etiquette_GES,Etiquette_DPE,Type_bâtiment,Année_construction,Période_construction,Surface_habitable_logement,Surface_habitable_immeuble,Nombre_niveau_immeuble,Nombre_appartement,Adresse_brute,Nom__commune_(BAN),Code_INSEE_(BAN),N°_voie_(BAN),Identifiant__BAN,Adresse_(BAN),Code_postal_(BAN),Score_BAN,Nom__rue_(BAN),Coordonnée_cartographique_X_(BAN),Coordonnée_cartographique_Y_(BAN),Code_département_(BAN),Conso_5_usages_par_m²_é_primaire,Emission_GES_5_usages_par_m²,Type_énergie_principale_chauffage,Type_installation_chauffage,Qualité_isolation_enveloppe,Qualité_isolation_murs,Qualité_isolation_menuiseries,Type_ventilation'.split(
    ',',
  );

const AUDIT_ENTETE =
  'n_audit,id_etape,categorie_scenario,etape_travaux,date_etablissement_audit,date_fin_validite_audit,n_audit_remplace,numero_dpe,classe_bilan_dpe,cout_travaux,couts_cumules_travaux'.split(
    ',',
  );

const CLASSES = ['A', 'B', 'C', 'D', 'E', 'F', 'G'] as const;
/** Primary energy (kWh/m²/year) and emissions (kg CO₂/m²/year) of each class, bounds included. */
const CONSO = [
  [45, 70],
  [71, 110],
  [111, 180],
  [181, 250],
  [251, 330],
  [331, 420],
  [421, 620],
];
const EMISSIONS = [
  [1, 6],
  [7, 11],
  [12, 30],
  [31, 50],
  [51, 70],
  [71, 100],
  [101, 140],
];
const PERIODES: Array<[string, number, number]> = [
  ['avant 1948', 1850, 1947],
  ['1948-1974', 1948, 1974],
  ['1975-1977', 1975, 1977],
  ['1978-1982', 1978, 1982],
  ['1983-1988', 1983, 1988],
  ['1989-2000', 1989, 2000],
  ['2001-2005', 2001, 2005],
  ['2006-2012', 2006, 2012],
  ['2013-2021', 2013, 2021],
];
const ISOLATION = ['très bonne', 'bonne', 'moyenne', 'insuffisante'];
const VENTILATIONS = [
  'Ventilation par ouverture des fenêtres',
  "Ventilation par entrées d'air hautes et basses",
  'VMC SF Auto réglable de 1982 à 2000',
  'VMC SF Hygro B après 2012',
  'VMC DF individuelle avec échangeur à partir de 2013',
];

interface DpeGenere {
  numero: string;
  classe: number;
  etabli: string;
  type: 'appartement' | 'maison';
  surface: number;
  insee: string;
}

function dpeDe(
  seed: number,
  t: Territoire,
  sequence: { n: number },
): { lignes: Array<Record<string, string | number>>; dpe: DpeGenere[] } {
  const c = t.commune;
  const diagnostics = DIAGNOSTICS[c.insee];
  const alea = new Alea(seed, `dpe:${c.insee}`);
  // Every class in every commune, then the commune's own mix.
  const classes = alea.shuffle([0, 1, 2, 3, 4, 5, 6]);
  while (classes.length < diagnostics.nombre)
    classes.push(alea.weighted(diagnostics.classes.map((w, i) => [i, w] as const)));
  const lignes: Array<Record<string, string | number>> = [];
  const dpe: DpeGenere[] = [];
  for (const [k, classe] of classes.entries()) {
    const n = alea.pick(t.numeros);
    const v = n.voie;
    const type: 'appartement' | 'maison' = c.urbaine
      ? alea.chance(0.85)
        ? 'appartement'
        : 'maison'
      : alea.chance(0.85)
        ? 'maison'
        : 'appartement';
    // Audits are due for F and G houses sold since April 2023: those DPE are dated after it.
    const etabli = classe >= 5 ? alea.day('2023-04-01', '2025-10-31') : alea.day('2021-07-01', '2025-10-31');
    const periodeIndex = classe >= 5 ? alea.int(0, 2) : classe <= 1 ? alea.int(6, 8) : alea.int(0, 7);
    const [periode, de, a] = PERIODES[periodeIndex];
    const surface =
      type === 'appartement'
        ? Math.round(alea.between(classe >= 5 ? 14 : 25, classe >= 5 ? 55 : 95) * 10) / 10
        : Math.round(alea.between(70, 170) * 10) / 10;
    const ges = alea.int(0, classe);
    const conso = alea.int(CONSO[classe][0], CONSO[classe][1]);
    const emissions = alea.int(EMISSIONS[ges][0], EMISSIONS[ges][1]);
    const energie =
      ges <= 1 && classe >= 3
        ? 'Électricité'
        : c.insee === '75111' && alea.chance(0.2)
          ? 'Réseau de Chauffage urbain'
          : !c.urbaine && classe >= 5
            ? alea.pick(['Fioul domestique', 'Électricité', 'Bois – Bûches'])
            : alea.pick(['Gaz naturel', 'Électricité', 'Gaz naturel']);
    const isolation = (decalage: number) => ISOLATION[Math.max(0, Math.min(3, Math.floor(classe / 2) + decalage))];
    const numero = `${etabli.slice(2, 4)}${c.departement}S${String(++sequence.n).padStart(7, '0')}${'ABCDEFGHJKLMNPRSTUVWXYZ'[alea.int(0, 22)]}`;
    const numeroTexte = `${n.numero}${n.rep ? ` ${n.rep}` : ''}`;
    const { x, y } = lambert93(n.lat, n.lon);
    // A few diagnosticians typed another number than the one the observatory geocoded, and one score is weak: the
    // importer must flag those attachments as uncertain.
    const tape = k === 3 && c.urbaine ? `${n.numero + 2} ${v.nom}` : `${numeroTexte} ${v.nom}`;
    const score = k === 4 && c.insee === '67482' ? 0.42 : round(alea.between(0.82, 0.99), 2);
    const immeuble = type === 'appartement';
    lignes.push({
      'N°DPE': numero,
      Date_réception_DPE: plusJours(etabli, alea.int(0, 3)),
      Date_établissement_DPE: etabli,
      Date_visite_diagnostiqueur: plusJours(etabli, -alea.int(0, 10)),
      Modèle_DPE: 'DPE 3CL 2021 méthode logement',
      Date_fin_validité_DPE: plusJours(plusAns(etabli, 10), -1),
      Version_DPE: '2.4',
      Méthode_application_DPE: immeuble ? 'dpe appartement individuel' : 'dpe maison individuelle',
      Etiquette_GES: CLASSES[ges],
      Etiquette_DPE: CLASSES[classe],
      Type_bâtiment: type,
      Année_construction: alea.int(de, a),
      Période_construction: periode,
      Surface_habitable_logement: surface,
      Surface_habitable_immeuble: immeuble ? alea.int(6, 40) * 60 : '',
      Nombre_niveau_immeuble: immeuble ? alea.int(3, 7) : 1,
      Nombre_appartement: immeuble ? alea.int(6, 40) : 1,
      Adresse_brute: `${tape} ${v.codePostal} ${c.acheminement}`,
      'Nom__commune_(BAN)': c.nom,
      'Code_INSEE_(BAN)': c.insee,
      'N°_voie_(BAN)': n.numero,
      Identifiant__BAN: n.cle,
      'Adresse_(BAN)': `${numeroTexte} ${v.nom} ${v.codePostal} ${c.nom}`,
      'Code_postal_(BAN)': v.codePostal,
      Score_BAN: score,
      'Nom__rue_(BAN)': v.nom,
      'Coordonnée_cartographique_X_(BAN)': x,
      'Coordonnée_cartographique_Y_(BAN)': y,
      'Code_département_(BAN)': c.departement,
      'Conso_5_usages_par_m²_é_primaire': conso,
      'Emission_GES_5_usages_par_m²': emissions,
      Type_énergie_principale_chauffage: energie,
      Type_installation_chauffage: immeuble && alea.chance(0.4) ? 'collectif' : 'individuel',
      Qualité_isolation_enveloppe: isolation(0),
      Qualité_isolation_murs: isolation(alea.int(-1, 1)),
      Qualité_isolation_menuiseries: isolation(alea.int(-1, 1)),
      Type_ventilation: VENTILATIONS[Math.max(0, Math.min(4, 4 - Math.floor(classe * 0.7) + alea.int(-1, 0)))],
    });
    dpe.push({ numero, classe, etabli, type, surface, insee: c.insee });
  }
  return { lignes, dpe };
}

/** Audits of some F and G dwellings: an initial state and one or two scenarios of works, one row per step. */
function auditsDe(seed: number, dpe: DpeGenere[]): Array<Record<string, string | number>> {
  const alea = new Alea(seed, 'audits');
  const lignes: Array<Record<string, string | number>> = [];
  let sequence = 0;
  for (const d of dpe) {
    if (d.classe < 5 || !alea.chance(0.7)) continue;
    // Half are the pre-sale pack (audit within a month of its DPE), the others come later.
    const etabli = alea.chance(0.5) ? plusJours(d.etabli, alea.int(0, 20)) : plusJours(d.etabli, alea.int(35, 200));
    const numero = `A${etabli.slice(2, 4)}${d.insee.slice(0, 2)}S${String(++sequence).padStart(6, '0')}${'ABCDEFGHJKLMNPRSTUVWXYZ'[alea.int(0, 22)]}`;
    const commun = {
      n_audit: numero,
      date_etablissement_audit: etabli,
      date_fin_validite_audit: plusAns(etabli, 5),
      numero_dpe: d.numero,
    };
    const parM2 = d.type === 'maison' ? alea.between(300, 520) : alea.between(350, 700);
    const premiere = Math.round((d.surface * parM2 * 0.55) / 100) * 100;
    const finale = Math.round((d.surface * parM2 * 0.45) / 100) * 100;
    let etape = 0;
    lignes.push({
      ...commun,
      id_etape: ++etape,
      categorie_scenario: 'état initial',
      etape_travaux: 'état initial',
      classe_bilan_dpe: CLASSES[d.classe],
    });
    lignes.push({
      ...commun,
      id_etape: ++etape,
      categorie_scenario: 'scénario principal en deux étapes',
      etape_travaux: 'première étape',
      classe_bilan_dpe: CLASSES[alea.int(3, 4)],
      cout_travaux: premiere,
      couts_cumules_travaux: premiere,
    });
    lignes.push({
      ...commun,
      id_etape: ++etape,
      categorie_scenario: 'scénario principal en deux étapes',
      etape_travaux: 'étape finale',
      classe_bilan_dpe: CLASSES[alea.int(1, 2)],
      cout_travaux: finale,
      couts_cumules_travaux: premiere + finale,
    });
    if (alea.chance(0.5)) {
      const unique = Math.round((premiere + finale) * alea.between(0.85, 0.95));
      lignes.push({
        ...commun,
        id_etape: ++etape,
        categorie_scenario: 'scénario en une étape',
        etape_travaux: 'étape finale',
        classe_bilan_dpe: 'C',
        cout_travaux: unique,
        couts_cumules_travaux: unique,
      });
    }
  }
  return lignes;
}

export const dpePart: SandboxPart<'dpe'> = {
  source: 'dpe',
  fichiers: (seed, territoires) => {
    const sequence = { n: 0 };
    const dpe = territoires.map((t) => dpeDe(seed, t, sequence));
    return [
      [
        'dpe-logements-existants.csv',
        csv(
          DPE_ENTETE,
          dpe.flatMap((d) => d.lignes),
          ',',
        ),
      ],
      [
        'audits-energetiques.csv',
        csv(
          AUDIT_ENTETE,
          auditsDe(
            seed,
            dpe.flatMap((d) => d.dpe),
          ),
          ',',
        ),
      ],
    ];
  },
};
