import { z } from 'zod';
import { defineOperation } from '../catalogue.ts';
import { communeByCode } from '../communes.ts';
import { masquerCoordonnees, REGLE_DE_MASQUAGE } from '../compte/masquage.ts';
import { nombre } from '../entrees.ts';
import { ApiError, invalidField } from '../errors.ts';
import { QualiteSchema, servedFromDataset } from '../qualite.ts';
import { Insee } from './entrees.ts';

/** Reviews of a commune by users: avis_zone (read) and avis_zone_publier (write). */

const PROFILS = ['proprietaire', 'locataire', 'investisseur', 'professionnel'] as const;
const Note = z.number().int().min(1).max(5);

const AvisOutput = z.object({
  insee: z.string(),
  commune: z.string().nullable(),
  moyennes: z.object({
    globale: z.number().nullable(),
    rentabilite: z.number().nullable(),
    qualite_de_vie: z.number().nullable(),
    demande_locative: z.number().nullable(),
    valorisation: z.number().nullable(),
    n: z.number().int(),
  }),
  avis: z.array(
    z.object({
      id: z.string(),
      notes: z.object({
        globale: Note,
        rentabilite: Note.nullable(),
        qualite_de_vie: Note.nullable(),
        demande_locative: Note.nullable(),
        valorisation: Note.nullable(),
      }),
      titre: z.string(),
      contenu: z.string(),
      profil_auteur: z.enum(PROFILS).nullable(),
      verifie: z.boolean(),
      votes_utiles: z.number().int(),
      cree_le: z.string(),
    }),
  ),
  limites: z.array(z.string()).describe('Pourquoi une moyenne est null : aucun avis, ou aucun qui donne cette note.'),
  qualite: QualiteSchema,
  curseur_suivant: z.string().nullable(),
});

interface LigneAvis {
  id: string;
  note: number;
  note_rentabilite: number | null;
  note_qualite_vie: number | null;
  note_demande_locative: number | null;
  note_valorisation: number | null;
  titre: string;
  contenu: string;
  profil: (typeof PROFILS)[number] | null;
  verifie: boolean;
  votes_utiles: number;
  cree_le: string;
}

const moyenne = (x: string | null) => (x === null ? null : Math.round(Number(x) * 10) / 10);

const DESCRIPTION_AVIS = `Avis d'utilisateurs sur une commune, triés par utilité puis date (\`tri=utiles\`, défaut) ou par date (\`tri=recents\`), \`limite\` (1-50, 20) par page et \`curseur_suivant\`. \`moyennes\` : moyenne par critère des avis qui le notent (null sans note), sur tous les avis de la commune, \`n\` leur nombre.

**Ce qui n'est jamais servi.** L'auteur (ni compte, ni nom) ; dans \`titre\` et \`contenu\`, stockés tels qu'écrits, les coordonnées sont masquées : ${REGLE_DE_MASQUAGE} \`verifie\` : faux tant que la plateforme ne vérifie pas les avis. Une commune inconnue : 404 \`commune_introuvable\` ; une commune sans avis : liste vide, moyennes null.`;

export const avisZone = defineOperation({
  tool: 'avis_zone',
  texteTiers: true,
  method: 'GET',
  path: '/communes/{insee}/avis',
  summary: 'Avis d’utilisateurs sur une commune, sans identité d’auteur',
  description: DESCRIPTION_AVIS,
  credits: 1,
  unit: 'appel',
  scope: 'territoire',
  tier: 'usage',
  sandbox: true,
  territoires: (e: { insee: string }) => [{ commune: e.insee }],
  cacheS: 600,
  timeoutS: 3,
  errors: ['commune_introuvable'],
  input: z.object({
    insee: Insee,
    tri: z.enum(['utiles', 'recents']).default('utiles').describe('utiles (défaut) ou recents.'),
    limite: nombre(z.number().int().min(1).max(50).default(20)).describe('Avis par page (1-50).'),
    curseur: z.string().min(1).max(1024).optional().describe('curseur_suivant de la page précédente.'),
  }),
  output: AvisOutput,
  handler: servedFromDataset(async (e, ctx, dataset) => {
    const commune = communeByCode(e.insee);
    if (!commune)
      throw new ApiError('commune_introuvable', `Aucune commune n’a le code ${e.insee} ; rien n’est débité.`);
    const db = ctx.services.db;
    const scope = `avis|${dataset}|${e.insee}|${e.tri}`;
    type Position = [number, string, string];
    let apres: Position | null = null;
    if (e.curseur) {
      apres = ctx.services.cursors.decode<Position>(scope, e.curseur);
      if (!Array.isArray(apres) || apres.length !== 3) {
        throw invalidField('curseur', 'Curseur invalide : altéré, ou émis pour une autre recherche.', 'requete');
      }
    }
    const params: unknown[] = [dataset, e.insee];
    let where = '';
    if (apres && e.tri === 'utiles') {
      params.push(apres[0], apres[1], apres[2]);
      where = 'AND (votes_utiles, cree_le, id) < ($3::int, $4::timestamptz, $5::uuid)';
    } else if (apres) {
      params.push(apres[1], apres[2]);
      where = 'AND (cree_le, id) < ($3::timestamptz, $4::uuid)';
    }
    // Qualified: the served `cree_le` (text, to the second) would otherwise be what ORDER BY sorts on.
    const ordre = e.tri === 'utiles' ? 'a.votes_utiles DESC, a.cree_le DESC, a.id DESC' : 'a.cree_le DESC, a.id DESC';
    params.push(e.limite + 1);
    const [page, stats] = await Promise.all([
      db.query<LigneAvis & { instant: string }>(
        `SELECT id, note, note_rentabilite, note_qualite_vie, note_demande_locative, note_valorisation, titre, contenu,
                profil, verifie, votes_utiles, to_char(cree_le AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS cree_le,
                cree_le::text AS instant
           FROM avis_communes a WHERE dataset = $1 AND insee = $2 ${where}
          ORDER BY ${ordre} LIMIT $${params.length}`,
        params,
      ),
      db.query<Record<string, string | null>>(
        `SELECT count(*)::int AS n, avg(note) AS globale, avg(note_rentabilite) AS rentabilite,
                avg(note_qualite_vie) AS qualite_de_vie, avg(note_demande_locative) AS demande_locative,
                avg(note_valorisation) AS valorisation
           FROM avis_communes WHERE dataset = $1 AND insee = $2`,
        [dataset, e.insee],
      ),
    ]);
    const lignes = page.rows.slice(0, e.limite);
    const derniere = lignes.at(-1);
    const s = stats.rows[0];
    const n = Number(s.n);
    const moyennes = {
      globale: moyenne(s.globale),
      rentabilite: moyenne(s.rentabilite),
      qualite_de_vie: moyenne(s.qualite_de_vie),
      demande_locative: moyenne(s.demande_locative),
      valorisation: moyenne(s.valorisation),
    };
    const sansNote = Object.entries(moyennes).flatMap(([note, v]) => (v === null ? [note] : []));
    const limites =
      n === 0
        ? [
            `Aucun avis publié sur ${commune.nom} : les avis sont ceux que les utilisateurs publient (avis_zone_publier).`,
          ]
        : sansNote.length > 0
          ? [`${sansNote.join(', ')} : aucun avis de la commune ne donne cette note (facultative).`]
          : [];
    return {
      insee: e.insee,
      commune: commune.nom,
      moyennes: { ...moyennes, n },
      limites,
      avis: lignes.map((a) => ({
        id: a.id,
        notes: {
          globale: a.note,
          rentabilite: a.note_rentabilite,
          qualite_de_vie: a.note_qualite_vie,
          demande_locative: a.note_demande_locative,
          valorisation: a.note_valorisation,
        },
        titre: masquerCoordonnees(a.titre),
        contenu: masquerCoordonnees(a.contenu),
        profil_auteur: a.profil,
        verifie: a.verifie,
        votes_utiles: a.votes_utiles,
        cree_le: a.cree_le,
      })),
      qualite: {
        n,
        provenance: null,
        incertitude: null,
        drapeaux: n > 0 && n < 5 ? ['peu_d_observations' as const] : [],
        methode: 'Avis déclaratifs d’utilisateurs, non vérifiés ; moyennes sur tous les avis de la commune.',
        donnees_du: null,
        source: 'avis des utilisateurs',
      },
      curseur_suivant:
        page.rows.length > e.limite && derniere
          ? ctx.services.cursors.encode(scope, [derniere.votes_utiles, derniere.instant, derniere.id])
          : null,
    };
  }),
});

export const avisZonePublier = defineOperation({
  tool: 'avis_zone_publier',
  method: 'POST',
  path: '/communes/{insee}/avis',
  summary: 'Publier son avis sur une commune (un par compte et commune)',
  description: `Publie l'avis du compte de la clé sur une commune. **Un avis par compte et par commune** : un second répond 409 \`conflit\`, le premier reste tel quel. Les textes sont conservés tels qu'écrits et servis par avis_zone sans l'auteur, coordonnées et noms précédés d'une civilité masqués selon la règle décrite par avis_zone. Clé rattachée à un compte personnel. Commune inconnue : 404 \`commune_introuvable\`.`,
  credits: 0,
  unit: 'appel',
  scope: 'territoire',
  tier: 'usage',
  sandbox: false,
  cacheS: 0,
  timeoutS: 5,
  personalKey: true,
  effect: 'ajout',
  errors: ['commune_introuvable', 'conflit'],
  input: z.object({
    insee: Insee,
    note: Note.describe('Note globale, 1-5.'),
    note_rentabilite: Note.optional(),
    note_qualite_vie: Note.optional(),
    note_demande_locative: Note.optional(),
    note_valorisation: Note.optional(),
    titre: z.string().trim().min(3).max(200),
    contenu: z.string().trim().min(10).max(5000),
    profil: z.enum(PROFILS).optional(),
  }),
  output: z.object({
    id: z.string(),
    insee: z.string(),
    commune: z.string().nullable(),
    cree_le: z.string().nullable(),
  }),
  handler: async (e, ctx) => {
    const compteId = ctx.caller.compteId;
    if (!compteId) {
      throw new ApiError('portee_insuffisante', 'Cette opération demande une clé rattachée à un compte personnel.');
    }
    const commune = communeByCode(e.insee);
    if (!commune) throw new ApiError('commune_introuvable', `Aucune commune n’a le code ${e.insee}.`);
    const { rows } = await ctx.services.db.query<{ id: string; cree_le: string }>(
      `INSERT INTO avis_communes (dataset, insee, compte_id, note, note_rentabilite, note_qualite_vie,
                                  note_demande_locative, note_valorisation, titre, contenu, profil)
       VALUES ('live', $1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
       ON CONFLICT (dataset, compte_id, insee) DO NOTHING
       RETURNING id, to_char(cree_le AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS cree_le`,
      [
        e.insee,
        compteId,
        e.note,
        e.note_rentabilite ?? null,
        e.note_qualite_vie ?? null,
        e.note_demande_locative ?? null,
        e.note_valorisation ?? null,
        e.titre,
        e.contenu,
        e.profil ?? null,
      ],
    );
    if (!rows[0]) {
      throw new ApiError(
        'conflit',
        `Ce compte a déjà publié un avis sur ${commune.nom} (${e.insee}) : un avis par compte et par commune.`,
      );
    }
    return { id: rows[0].id, insee: e.insee, commune: commune.nom, cree_le: rows[0].cree_le };
  },
});
