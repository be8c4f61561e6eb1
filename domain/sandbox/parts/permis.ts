import { Alea, plusJours } from '../alea.ts';
import { csv, type SandboxPart } from '../part.ts';
import { afnor, TYPES_VOIE, type InseeSandbox, type Territoire } from '../territoire.ts';
import { societesDe, type Societe } from './sirene.ts';

/** Permits (Sitadel, file of the authorisations creating dwellings) at BAN numbers, some filed by SIRENE companies. */

/** How many permits are filed in each commune. */
const PERMIS: Record<InseeSandbox, number> = { '33234': 10, '33001': 8, '75111': 8, '59350': 10, '67482': 10 };

const PERMIS_ENTETE =
  'REG_CODE,REG_LIBELLE,DEP_CODE,DEP_LIBELLE,COMM,TYPE_DAU,NUM_DAU,ETAT_DAU,DATE_REELLE_AUTORISATION,DATE_REELLE_DOC,DATE_REELLE_DAACT,CAT_DEM,APE_DEM,CJ_DEM,DENOM_DEM,SIREN_DEM,SIRET_DEM,CODPOST_DEM,LOCALITE_DEM,ADR_NUM_TER,ADR_TYPEVOIE_TER,ADR_LIBVOIE_TER,ADR_LIEUDIT_TER,ADR_LOCALITE_TER,ADR_CODPOST_TER,SEC_CADASTRE1,NUM_CADASTRE1,SEC_CADASTRE2,NUM_CADASTRE2,SEC_CADASTRE3,NUM_CADASTRE3,SUPERFICIE_TERRAIN,NATURE_PROJET_DECLAREE,NATURE_PROJET_COMPLETEE,DESTINATION_PRINCIPALE,NB_LGT_TOT_CREES,NB_LGT_IND_CREES,NB_LGT_COL_CREES,NB_LGT_1P,NB_LGT_2P,NB_LGT_3P,NB_LGT_4P,NB_LGT_5P,NB_LGT_6P_PLUS,NB_LGT_PRET_LOC_SOCIAL,NB_LGT_ACC_SOC_HORS_PTZ,NB_LGT_PTZ,SURF_HAB_AVANT,SURF_HAB_CREEE,SURF_HAB_DEMOLIE,SURF_LOC_CREEE,SURF_LOC_DEMOLIE,NB_LGT_DEMOLIS,AN_DEPOT'.split(
    ',',
  );

function permisCsv(seed: number, territoires: Territoire[], societes: Societe[]): string {
  const lignes: Array<Record<string, string | number>> = [];
  for (const t of territoires) {
    const c = t.commune;
    const alea = new Alea(seed, `permis:${c.insee}`);
    const demandeurs = societes.filter((s) => s.commune === c && (s.genre === 'sci' || s.genre === 'promoteur'));
    for (let k = 0; k < PERMIS[c.insee]; k++) {
      const n = alea.pick(t.numeros);
      const v = n.voie;
      const an = alea.int(2019, 2025);
      const depot = alea.day(`${an}-01-02`, an === 2025 ? '2025-06-30' : `${an}-12-31`);
      const autorise = plusJours(depot, alea.int(45, 120));
      const ouvert = alea.chance(0.75) ? plusJours(autorise, alea.int(60, 300)) : null;
      const acheve = ouvert && alea.chance(0.6) ? plusJours(ouvert, alea.int(300, 700)) : null;
      const limite = (d: string | null) => (d && d <= '2025-09-30' ? d : null);
      const [doc, daact] = [limite(ouvert), limite(ouvert) ? limite(acheve) : null];
      const collectif = c.urbaine && alea.chance(0.6);
      const societe = collectif || alea.chance(0.3) ? (demandeurs.length ? alea.pick(demandeurs) : null) : null;
      const type = collectif || alea.chance(0.7) ? 'PC' : 'DP';
      const logements = collectif ? alea.int(4, 36) : 1;
      const parPieces = [0, 0, 0, 0, 0, 0];
      for (let i = 0; i < logements; i++) parPieces[collectif ? alea.int(0, 4) : alea.int(2, 5)]++;
      const surface = collectif ? logements * alea.int(48, 66) : alea.int(85, 160);
      const sections = n.parcelles.map((p) => ({
        section: p.slice(8, 10).replace(/^0/, ''),
        numero: String(Number(p.slice(10))),
      }));
      lignes.push({
        REG_CODE: c.region,
        REG_LIBELLE: c.regionNom,
        DEP_CODE: c.departement,
        DEP_LIBELLE: c.departementNom,
        COMM: c.insee,
        TYPE_DAU: type,
        // Commune on 6 (département on 3), year of filing on 2, order number: orders from 90 000 are not used by the
        // real instruction services.
        NUM_DAU: `0${c.insee.slice(0, 2)}${c.insee.slice(2)}${String(an).slice(2)}${90_000 + k + 1}`,
        ETAT_DAU: daact ? 6 : doc ? 5 : 2,
        DATE_REELLE_AUTORISATION: autorise,
        DATE_REELLE_DOC: doc ?? '',
        DATE_REELLE_DAACT: daact ?? '',
        // A private person: the category alone (10), never a name; the applicant's postcode and town are published.
        CAT_DEM: societe ? (societe.genre === 'sci' ? 30 : 40) : 10,
        APE_DEM: societe?.ape.replace('.', '') ?? '',
        CJ_DEM: societe?.categorie ?? '',
        DENOM_DEM: societe?.denomination ?? '',
        SIREN_DEM: societe?.siren ?? '',
        SIRET_DEM: societe?.siret ?? '',
        CODPOST_DEM: societe?.siege?.voie.codePostal ?? v.codePostal,
        LOCALITE_DEM: c.acheminement,
        ADR_NUM_TER: `${n.numero}${n.rep === 'bis' ? ' B' : n.rep === 'ter' ? ' T' : ''}`,
        ADR_TYPEVOIE_TER: TYPES_VOIE[v.type],
        ADR_LIBVOIE_TER: afnor(v.libelle),
        ADR_LIEUDIT_TER: v.lieuDit ? afnor(v.lieuDit) : '',
        ADR_LOCALITE_TER: c.acheminement,
        ADR_CODPOST_TER: v.codePostal,
        SEC_CADASTRE1: sections[0].section,
        NUM_CADASTRE1: sections[0].numero,
        SEC_CADASTRE2: sections[1]?.section ?? '',
        NUM_CADASTRE2: sections[1]?.numero ?? '',
        SUPERFICIE_TERRAIN: collectif ? alea.int(400, 2500) : c.urbaine ? alea.int(150, 500) : alea.int(500, 1800),
        NATURE_PROJET_DECLAREE: type === 'PC' ? 1 : 2,
        NATURE_PROJET_COMPLETEE: type === 'PC' ? 1 : 2,
        DESTINATION_PRINCIPALE: 1,
        NB_LGT_TOT_CREES: logements,
        NB_LGT_IND_CREES: collectif ? 0 : logements,
        NB_LGT_COL_CREES: collectif ? logements : 0,
        NB_LGT_1P: parPieces[0],
        NB_LGT_2P: parPieces[1],
        NB_LGT_3P: parPieces[2],
        NB_LGT_4P: parPieces[3],
        NB_LGT_5P: parPieces[4],
        NB_LGT_6P_PLUS: parPieces[5],
        NB_LGT_PRET_LOC_SOCIAL: collectif ? Math.floor(logements * 0.25) : 0,
        NB_LGT_ACC_SOC_HORS_PTZ: 0,
        NB_LGT_PTZ: !collectif && alea.chance(0.3) ? 1 : 0,
        SURF_HAB_AVANT: type === 'DP' ? alea.int(70, 140) : 0,
        SURF_HAB_CREEE: surface,
        SURF_HAB_DEMOLIE: 0,
        SURF_LOC_CREEE: 0,
        SURF_LOC_DEMOLIE: 0,
        NB_LGT_DEMOLIS: 0,
        AN_DEPOT: an,
      });
    }
  }
  return csv(PERMIS_ENTETE, lignes, ';');
}

export const permisPart: SandboxPart<'permis'> = {
  source: 'permis',
  fichiers: (seed, territoires) => [
    ['sitadel-logements.csv', permisCsv(seed, territoires, societesDe(seed, territoires))],
  ],
};
