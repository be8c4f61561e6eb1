import { ApplicationFailure, Context } from '@temporalio/activity';
import { createHash } from 'node:crypto';
import type { Db } from '../db/client.ts';
import type { Piece } from '../domain/dossiers/dessins.ts';
import type { NoticeFaite } from '../domain/dossiers/dossier.ts';
import { cartoucheDe, conclure, dessiner, livrerFeuilles } from '../domain/dossiers/etude.ts';
import { fichiersNotice, redigerNotice } from '../domain/dossiers/notice.ts';
import { reglesDuSite, type ReglesDuSite } from '../domain/dossiers/regles.ts';
import {
  annotationsLocales,
  codesDesPieces,
  projetsDe,
  resultatDuDossier,
  type DessinsLivres,
  type EntreeDossier,
} from '../domain/dossiers/resultat.ts';
import { modeleDuSite, type Site } from '../domain/dossiers/site.ts';
import { signedLink, storageKey, type FileDelivery } from '../domain/documents/telechargement.ts';
import { ApiError } from '../domain/errors.ts';
import { servedSource } from '../domain/qualite.ts';
import { completeTask, failTask, TASK_RETENTION_DAYS } from '../domain/taches/taches.ts';
import { randomToken } from '../lib/crypto.ts';
import { ModelError, type Model } from '../lib/model.ts';
import { announceEnd, modelFailure, taskRow, type Semaphore } from './shared.ts';

const entreeDe = async (db: Db, tacheId: string) => (await taskRow(db, tacheId)).entree as unknown as EntreeDossier;

/** A refusal of the domain (unknown parcel, bad input) as a final failure whose type is the task's error code. */
function echecDomaine(error: unknown): unknown {
  if (error instanceof ApiError)
    return ApplicationFailure.create({ type: error.code, message: error.message, nonRetryable: true });
  return error;
}

async function stocker(files: FileDelivery, bytes: Uint8Array, type: string, nom: string, now: Date) {
  const id = randomToken(32);
  await files.storage.put(storageKey(id), bytes, type);
  const expire = new Date(Math.floor(now.getTime() / 1000) * 1000 + files.linkTtlS * 1000);
  return {
    url: signedLink(files, id, nom, expire),
    expire_le: expire.toISOString(),
    sha256: createHash('sha256').update(bytes).digest('hex'),
    taille_octets: bytes.byteLength,
  };
}

export function createDossierActivities(deps: {
  db: Db;
  model: Model | null;
  files?: FileDelivery;
  modelSlot: Semaphore;
}) {
  const { db } = deps;
  const exigerFichiers = () => {
    if (!deps.files) {
      throw ApplicationFailure.create({
        type: 'service_indisponible',
        message:
          'Le stockage des fichiers générés n’est pas configuré sur le worker : les plans ne peuvent être livrés.',
        nonRetryable: true,
      });
    }
    return deps.files;
  };

  return {
    async siteDossier(tacheId: string): Promise<Site> {
      const e = await entreeDe(db, tacheId);
      return modeleDuSite(db, e, projetsDe(e)).catch((error) => Promise.reject(echecDomaine(error)));
    },

    async reglesDossier(site: Site): Promise<ReglesDuSite> {
      return reglesDuSite(db, site);
    },

    /**
     * The lire_plu task that reads the zone of a dossier: in the dossier's organisation, nothing reserved (the dossier's
     * price covers it), its id derived from the dossier's so that a retried step finds it.
     */
    async lectureZoneDossier(args: { tacheId: string; site: Site }): Promise<string> {
      const task = await taskRow(db, args.tacheId);
      const id = `${args.tacheId}-plu`;
      const a = args.site.adresse;
      const entree = {
        lat: args.site.origine.lat,
        lon: args.site.origine.lon,
        ...(a && a.precision !== 'point'
          ? { adresse: { libelle: a.libelle, insee: args.site.parcelle.code_insee, precision: a.precision } }
          : {}),
      };
      await db.query(
        `INSERT INTO taches (id, operation, organisation_id, cle_id, entree, empreinte_entree, expire_le)
         VALUES ($1, 'lire_plu', $2, $3, $4, '', now() + make_interval(days => $5)) ON CONFLICT (id) DO NOTHING`,
        [id, task.organisation_id, task.cle_id, entree, TASK_RETENTION_DAYS],
      );
      return id;
    },

    async dessinsDossier(args: { tacheId: string; site: Site; regles: ReglesDuSite }): Promise<DessinsLivres> {
      const files = exigerFichiers();
      const e = await entreeDe(db, args.tacheId);
      const etude = conclure(args.site, args.regles, e);
      const codes = codesDesPieces(etude.formalite.formalite, e.maison_individuelle ?? true);
      const pieces: Piece[] = e.coupes === false ? ['plan_masse'] : ['plan_masse', 'coupe', 'facades'];
      const now = new Date();
      const dessins = await dessiner(
        etude,
        pieces,
        cartoucheDe(args.site, now),
        codes,
        annotationsLocales(args.site, e),
      );
      const feuilles = await livrerFeuilles(files, dessins.feuilles, now, 'dossier');
      return { coupes: dessins.coupes, facades: dessins.facades, feuilles };
    },

    async noticeDossier(args: { tacheId: string; site: Site; regles: ReglesDuSite }): Promise<NoticeFaite> {
      const files = exigerFichiers();
      if (!deps.model) {
        throw ApplicationFailure.create({
          type: 'modele_non_configure',
          message: 'Aucun modèle configuré (OPENAI_MODEL).',
          nonRetryable: true,
        });
      }
      const e = await entreeDe(db, args.tacheId);
      const etude = conclure(args.site, args.regles, e);
      const context = Context.current();
      const beat = setInterval(() => context.heartbeat(), 2000);
      try {
        const notice = await deps.modelSlot(() => redigerNotice(deps.model!, etude, context.cancellationSignal));
        const now = new Date();
        const { pdf, docx } = await fichiersNotice(notice, etude, now);
        return {
          etat: 'prete',
          terrain: notice.terrain,
          projet: notice.projet,
          chiffres_ecartes: notice.chiffres_ecartes,
          modele: notice.modele,
          raison: null,
          fichiers: {
            pdf: await stocker(files, pdf.bytes, pdf.contentType, 'notice-descriptive.pdf', now),
            docx: await stocker(files, docx.bytes, docx.contentType, 'notice-descriptive.docx', now),
          },
        };
      } catch (error) {
        if (error instanceof ModelError) throw modelFailure(error, `Modèle : ${error.message}`);
        throw error;
      } finally {
        clearInterval(beat);
      }
    },

    async terminerDossier(args: {
      tacheId: string;
      site: Site;
      regles: ReglesDuSite;
      dessins: DessinsLivres;
      notice: NoticeFaite;
    }): Promise<string[]> {
      const task = await taskRow(db, args.tacheId);
      const e = task.entree as unknown as EntreeDossier;
      const etude = conclure(args.site, args.regles, e);
      const resultat = await servedSource(db, 'live', resultatDuDossier(e, etude, args.dessins, args.notice));
      // The same dossier again within 24 h is not debited: its fingerprint leaves out dates and links.
      const { genere_le: _g, feuilles, notice, ...substance } = resultat;
      const fingerprint = createHash('sha256')
        .update(
          `preparer_dossier\0${JSON.stringify({ ...substance, feuilles: feuilles.map((f) => f.sha256), notice: notice.etat })}`,
        )
        .digest('base64url');
      await completeTask(db, args.tacheId, resultat, { debit: true, fingerprint });
      return announceEnd(db, args.tacheId);
    },

    async echouerDossier(args: { tacheId: string; code: string; detail: string }): Promise<string[]> {
      await failTask(db, args.tacheId, { code: args.code, detail: args.detail });
      return announceEnd(db, args.tacheId);
    },
  };
}
