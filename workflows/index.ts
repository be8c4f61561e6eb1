// Every workflow of the service, one per file; the worker bundles this module.
export { lireDocument } from './lire-document.ts';
export { lirePlu } from './lire-plu.ts';
export { livrerWebhook } from './livrer-webhook.ts';
export { conversationHub } from './conversation-hub.ts';
export { estimerBienAffine } from './estimer-bien-affine.ts';
export { recalibrerModeles } from './recalibrer-modeles.ts';
export { construireEditions } from './construire-editions.ts';
export { livrerAbonnement } from './livrer-abonnement.ts';
export { preparerDossier } from './preparer-dossier.ts';
