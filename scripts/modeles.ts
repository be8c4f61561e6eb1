import { recalibrerModeles } from '../domain/estimation/recalibrer.ts';
import { avecBaseDeDonnees, codeDeSortie, lireArguments } from '../domain/import/cli.ts';
import { ImportError } from '../domain/import/source.ts';
import { exitWith } from './exit.ts';

/**
 * `npm run modeles -- [--sandbox]`: the backtests behind GET /modeles. Rebuilds the departmental price index, estimates
 * the held-out most recent DVF vintage from the earlier ones and writes the `estimation` sheet's measures (and the
 * calibrated half-width estimer_bien serves), then the `travaux` sheet (exit costs on held-out audits) and the
 * `bareme_prix` sheet (the commune scale on held-out sales), and trains the pre-market model (its scores and its
 * `pre_marche` sheet, domain/pre-marche/entrainement.ts). A DVF import starts the same work as a Temporal workflow
 * (recalibrerModeles) when TEMPORAL_ADDRESS is set; this command runs it in place.
 */

const USAGE = `Usage : npm run modeles -- [--sandbox]

Mesure les modèles sur les données importées (backtest) et publie leurs fiches (GET /modeles).

Options :
  --sandbox     les données du bac à sable au lieu des données live
  -h, --help    cette aide`;

async function main(): Promise<number> {
  const { values } = lireArguments(
    {
      options: {
        sandbox: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    },
    USAGE,
  );
  const dataset = values.sandbox ? 'sandbox' : 'live';
  return avecBaseDeDonnees(async (db) => {
    const debut = performance.now();
    const r = await recalibrerModeles(db, dataset);
    const duree = ((performance.now() - debut) / 1000).toFixed(1);
    const b = r.estimation;
    console.log(`Modèles mesurés (${dataset}) en ${duree} s`);
    console.log(
      `estimation : ${b.perimetre || 'rien à mesurer'} ; ${b.estimees} ventes estimées, ${b.non_estimees} non estimées, ${(r.durees_ms.estimation / 1000).toFixed(1)} s`,
    );
    for (const g of b.groupes) {
      console.log(
        `  ${g.type_bien} / ${g.socle} : n ${g.n}, erreur absolue médiane ${g.erreur_absolue_mediane_pct} %, ±10 % ${g.part_10_pct} %, ±20 % ${g.part_20_pct} %, demi-largeur ${g.demi_largeur_80_pct ?? '-'} %, couverture ${g.couverture_pct ?? '-'} %`,
      );
    }
    if (b.ensemble)
      console.log(`  ensemble : couverture ${b.ensemble.couverture_pct} % sur ${b.ensemble.n_controle} ventes`);
    for (const l of b.limites) console.log(`  limite : ${l}`);
    const p = r.pre_marche;
    console.log(
      `pre_marche : ${p.perimetre || 'rien à mesurer'} ; ${p.n_entrainement} exemples d’apprentissage, ${p.n_controle} tenus, base ${p.base_pct ?? '-'} %, bande haute ${p.haut_pct ?? '-'} %, AUC ${p.auc ?? '-'} ; ${p.adresses} adresses notées (${p.hors_perimetre} hors périmètre), ${(r.durees_ms.pre_marche / 1000).toFixed(1)} s`,
    );
    for (const b of p.bandes.filter((x) => x.type_bien === 'tous')) {
      console.log(
        `  bande ${b.bande} : n ${b.n}, réel ${b.taux_vente_12m_pct} %, prédit ${b.taux_predit_pct} %, tolérance ±${b.tolerance_pct}`,
      );
    }
    for (const l of p.limites) console.log(`  limite : ${l}`);
    for (const [nom, fiche] of [
      ['travaux', r.travaux],
      ['bareme_prix', r.bareme_prix],
    ] as const) {
      console.log(`${nom} : ${fiche.perimetre || 'rien à mesurer'}, ${(r.durees_ms[nom] / 1000).toFixed(1)} s`);
      for (const m of fiche.mesures)
        console.log(`  ${m.libelle}${m.type_bien ? ` (${m.type_bien})` : ''} : ${m.valeur} % (n ${m.echantillon})`);
      for (const l of fiche.limites) console.log(`  limite : ${l}`);
    }
    return 0;
  });
}

await exitWith(await codeDeSortie(main, 'mesure interrompue', (error) => error instanceof ImportError));
