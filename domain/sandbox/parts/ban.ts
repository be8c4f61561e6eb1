import { Alea } from '../alea.ts';
import type { SandboxPart } from '../part.ts';
import { afnor, lambert93, type Territoire } from '../territoire.ts';

/** BAN: every number of the territory, as adresses-XX.csv writes it. */

const BAN_ENTETE =
  'id,id_fantoir,numero,rep,nom_voie,code_postal,code_insee,nom_commune,code_insee_ancienne_commune,nom_ancienne_commune,x,y,lon,lat,type_position,alias,nom_ld,libelle_acheminement,nom_afnor,source_position,source_nom_voie,certification_commune,cad_parcelles'.split(
    ',',
  );

function banCsv(seed: number, territoires: Territoire[]): string {
  const alea = new Alea(seed, 'ban:fichier');
  const lignes = [BAN_ENTETE.join(';')];
  for (const t of territoires) {
    for (const n of t.numeros) {
      const v = n.voie;
      const { x, y } = lambert93(n.lat, n.lon);
      lignes.push(
        [
          n.cle,
          `${t.commune.insee}_${v.code}`,
          n.numero,
          n.rep,
          v.nom,
          v.codePostal,
          t.commune.insee,
          t.commune.nom,
          '',
          '',
          x,
          y,
          n.lon.toFixed(6),
          n.lat.toFixed(6),
          alea.chance(0.85) ? 'entrée' : 'bâtiment',
          '',
          v.lieuDit ?? '',
          t.commune.acheminement,
          afnor(v.nom),
          'commune',
          'commune',
          alea.chance(0.9) ? '1' : '0',
          n.parcelles.join('|'),
        ].join(';'),
      );
    }
  }
  return `${lignes.join('\n')}\n`;
}

export const banPart: SandboxPart<'ban'> = {
  source: 'ban',
  fichiers: (seed, territoires) => [['adresses-bac-a-sable.csv', banCsv(seed, territoires)]],
};
