/**
 * Street names for the address benchmark, drawn the way France names its streets, so that they share words as real
 * ones do: the type first (Rue in about two streets in five, Chemin one in seven, Impasse, Allée, Route…), then a
 * name: the names every village has (de l'Église, du Moulin, de la Mairie…), the people most streets are named after
 * (Charles de Gaulle, Pasteur, Victor Hugo, Jean Jaurès, Jean Moulin…), saints, dates (du 8 Mai 1945), other
 * communes (Route de Latresne) and people of the most frequent French first names and surnames; lieux-dits without
 * type; and, as in real communes, a name given to several streets of different types (Rue and Place de la Gare,
 * Rue and Boulevard Saint-Martin). The weights approximate the shares of the national address base; the words are
 * real French words and names, so that trigrams collide as they do in real data.
 */

type Poids<T> = Array<[T, number]>;

export const TYPES: Poids<string> = [
  ['Rue', 38],
  ['Chemin', 14],
  ['Impasse', 9],
  ['Allée', 7],
  ['Route', 6],
  ['Avenue', 4],
  ['Place', 3.5],
  ['Lotissement', 1.5],
  ['Résidence', 1.2],
  ['Boulevard', 1],
  ['Hameau', 1],
  ['Passage', 0.7],
  ['Cité', 0.6],
  ['Sentier', 0.6],
  ['Clos', 0.6],
  ['Ruelle', 0.5],
  ['Square', 0.4],
  ['Montée', 0.4],
  ['Domaine', 0.4],
  ['Quartier', 0.4],
  ['Quai', 0.3],
  ['Cours', 0.3],
  ['Villa', 0.3],
  ['Voie', 0.3],
  ['Rond-Point', 0.3],
  ['Traverse', 0.3],
  ['Parc', 0.3],
  ['Sente', 0.2],
  ['Cour', 0.2],
  ['Faubourg', 0.15],
  ['Promenade', 0.15],
  ['Esplanade', 0.1],
  ['Mail', 0.1],
  ['Venelle', 0.1],
];

/** AFNOR abbreviations of the types above, as DVF and the cadastre write them. */
export const AFNOR: Record<string, string> = {
  Rue: 'RUE',
  Chemin: 'CHE',
  Impasse: 'IMP',
  Allée: 'ALL',
  Route: 'RTE',
  Avenue: 'AV',
  Place: 'PL',
  Lotissement: 'LOT',
  Résidence: 'RES',
  Boulevard: 'BD',
  Hameau: 'HAM',
  Passage: 'PAS',
  Cité: 'CITE',
  Sentier: 'SENT',
  Clos: 'CLOS',
  Ruelle: 'RLE',
  Square: 'SQ',
  Montée: 'MTE',
  Domaine: 'DOM',
  Quartier: 'QUA',
  Quai: 'QUAI',
  Cours: 'CRS',
  Villa: 'VLA',
  Voie: 'VOIE',
  'Rond-Point': 'RPT',
  Traverse: 'TRA',
  Parc: 'PARC',
  Sente: 'SEN',
  Cour: 'COUR',
  Faubourg: 'FG',
  Promenade: 'PROM',
  Esplanade: 'ESP',
  Mail: 'MAIL',
  Venelle: 'VEN',
};

export const COMMUNS: Poids<string> = [
  ["de l'Église", 10],
  ['du Moulin', 8],
  ['de la Mairie', 7],
  ['du Château', 6],
  ['des Écoles', 5],
  ['de la Gare', 5],
  ['de la Fontaine', 5],
  ['du Stade', 4],
  ['Principale', 4],
  ['des Jardins', 4],
  ['de la Paix', 3],
  ['du Lavoir', 3],
  ['des Vignes', 3],
  ['du Puits', 3],
  ['de la Poste', 3],
  ['de la Croix', 3],
  ['des Prés', 3],
  ['des Lilas', 3],
  ['des Tilleuls', 3],
  ['des Acacias', 3],
  ['des Chênes', 3],
  ['du Bourg', 3],
  ['de la République', 3],
  ['du 8 Mai 1945', 3],
  ['du Four', 2],
  ['de la Forge', 2],
  ['des Peupliers', 2],
  ['des Érables', 2],
  ['du Calvaire', 2],
  ['de Bellevue', 2],
  ['du Parc', 3],
  ['des Sports', 2],
  ["de l'Europe", 2],
  ['de la Liberté', 2],
  ['du 11 Novembre 1918', 2],
  ['du 19 Mars 1962', 2],
  ['Neuve', 2],
  ['de la Chapelle', 2],
  ['du Pont', 2],
  ['des Champs', 2],
  ['des Pins', 2],
  ['du Bois', 2],
  ['du 14 Juillet', 1],
  ['du Centre', 1],
  ['des Rosiers', 1],
  ['des Roses', 1],
  ['des Mimosas', 1],
  ['des Bleuets', 1],
  ['des Cerisiers', 1],
  ['des Pommiers', 1],
  ['des Noyers', 1],
  ['du Marais', 1],
  ['de la Rivière', 1],
  ['du Port', 1],
  ['de la Plage', 1],
  ['de la Vallée', 1],
  ['du Coteau', 1],
  ['des Sablons', 1],
  ['des Prairies', 1],
  ['des Bruyères', 1],
  ['des Genêts', 1],
  ['de la Forêt', 1],
  ['des Sources', 1],
  ['du Ruisseau', 1],
  ['de la Colline', 1],
  ['du Plateau', 1],
  ['des Vergers', 1],
  ['du Soleil', 1],
  ['des Alouettes', 1],
  ['des Hirondelles', 1],
  ['des Mésanges', 1],
  ['des Coquelicots', 1],
  ['des Violettes', 1],
  ['des Marronniers', 1],
  ['des Platanes', 1],
  ['des Saules', 1],
  ['des Bouleaux', 1],
  ['des Frênes', 1],
  ['de la Garenne', 1],
  ['des Glycines', 1],
  ['du Cimetière', 1],
  ['de la Halle', 1],
  ['du Presbytère', 1],
  ['des Tanneurs', 0.5],
  ['des Remparts', 0.5],
  ['du Four à Chaux', 0.5],
];

export const CELEBRES: Poids<string> = [
  ['Charles de Gaulle', 6],
  ['du Général de Gaulle', 6],
  ['Victor Hugo', 6],
  ['Pasteur', 5],
  ['Jean Jaurès', 5],
  ['Jean Moulin', 5],
  ['Jules Ferry', 4],
  ['Louis Pasteur', 3],
  ['Gambetta', 3],
  ['du Général Leclerc', 3],
  ['du Maréchal Foch', 3],
  ['Anatole France', 3],
  ['Émile Zola', 3],
  ['Georges Clemenceau', 3],
  ['Aristide Briand', 3],
  ['Jean de la Fontaine', 2],
  ['Paul Bert', 2],
  ['Marie Curie', 2],
  ['Pierre et Marie Curie', 2],
  ['Antoine de Saint-Exupéry', 2],
  ['Voltaire', 2],
  ['François Mitterrand', 2],
  ['Molière', 2],
  ['Jacques Prévert', 2],
  ['Carnot', 2],
  ['Léon Gambetta', 1],
  ['du Maréchal Leclerc', 1],
  ['Jean Monnet', 1],
  ['Jean Mermoz', 1],
  ["d'Alsace-Lorraine", 1],
  ['Édouard Herriot', 1],
  ['Salvador Allende', 1],
  ['Albert Camus', 1],
  ['George Sand', 1],
  ['Paul Éluard', 1],
  ['Henri Barbusse', 1],
  ['Guy Môquet', 1],
  ['Pablo Picasso', 1],
  ['Frédéric Mistral', 1],
  ['Alphonse Daudet', 1],
  ['Gustave Eiffel', 1],
  ['Louis Blériot', 1],
  ['Roland Garros', 1],
  ['Jean Zay', 1],
  ['René Cassin', 1],
  ['Simone Veil', 1],
  ['Henri IV', 1],
  ['Louis XIV', 0.5],
  ['Albert 1er', 0.5],
  ['du Président Wilson', 1],
  ['du Docteur Schweitzer', 1],
  ['Ambroise Paré', 1],
  ['Denis Papin', 1],
  ['Lamartine', 1],
  ['Racine', 1],
  ['Corneille', 1],
  ['Rabelais', 1],
  ['Montaigne', 1],
  ['Chateaubriand', 1],
  ['Jean-Jacques Rousseau', 1],
  ['Diderot', 1],
  ['Condorcet', 1],
  ['Danton', 1],
  ['Mirabeau', 1],
  ['Lafayette', 1],
  ['Thiers', 1],
  ['Colbert', 1],
  ['Vauban', 1],
  ['Kléber', 1],
  ['Hoche', 1],
  ['Marceau', 1],
  ['du Maréchal Joffre', 1],
  ['du Maréchal de Lattre de Tassigny', 1],
  ['Marcel Pagnol', 1],
  ['du Commandant Charcot', 0.5],
  ['Jean Giono', 0.5],
  ['Colette', 0.5],
];

export const PRENOMS = (
  'Jean Pierre Louis Paul Jacques Henri Georges André René Marcel Joseph François Charles Émile Albert Eugène Jules ' +
  'Édouard Gustave Victor Auguste Alfred Léon Lucien Maurice Robert Roger Raymond Michel Marie Jeanne Marguerite ' +
  'Louise Suzanne Germaine Hélène Madeleine Simone Lucie Anne Claude Gabriel Antoine Nicolas Étienne Philippe Félix ' +
  'Camille Alexandre Théodore Ernest Fernand Gaston Clément Adrien Julien Arthur Raoul Yvonne Berthe Juliette'
).split(' ');

/** The most frequent surnames of France. */
export const NOMS = (
  'Martin Bernard Dubois Thomas Robert Richard Petit Durand Leroy Moreau Simon Laurent Lefebvre Michel Garcia David ' +
  'Bertrand Roux Vincent Fournier Morel Girard André Lefèvre Mercier Dupont Lambert Bonnet François Martinez ' +
  'Legrand Garnier Faure Rousseau Blanc Guérin Muller Henry Roussel Nicolas Perrin Morin Mathieu Clément Gauthier ' +
  'Dumont Lopez Fontaine Chevalier Robin Masson Sanchez Gérard Boyer Denis Lemaire Duval Joly Gautier Roger Roche ' +
  'Roy Noël Meyer Lucas Meunier Perez Marchand Dufour Blanchard Barbier Brun Dumas Brunet Schmitt Leroux Colin ' +
  'Fernandez Renard Arnaud Rolland Caron Aubert Giraud Leclerc Vidal Bourgeois Renaud Lemoine Picard Gaillard ' +
  'Philippe Leclercq Lacroix Fabre Dupuis Olivier Rodriguez Hubert Guillot Rivière Guillaume Adam Rey Moulin ' +
  'Gonzalez Berger Lecomte Ménard Fleury Deschamps Carpentier Julien Benoît Maillard Marchal Aubry Vasseur Renault ' +
  'Jacquet Collet Prévost Poirier Charpentier Royer Huet Baron Dupuy Pons Lainé Carré Breton Rémy Schneider Perrot ' +
  'Guyot Barre Marty Cousin'
).split(' ');

const TITRES = [
  'du Docteur',
  'du Général',
  'du Commandant',
  'du Capitaine',
  "de l'Abbé",
  'du Professeur',
  'du Colonel',
];

const SAINTS = (
  'Martin Jean Pierre Jacques Michel Nicolas Louis Joseph Georges Laurent Éloi Roch Vincent Hilaire Germain Denis ' +
  'Antoine Paul André Julien Marc Sébastien Blaise Exupère Fiacre Honoré'
).split(' ');
const SAINTES =
  'Anne Marie Catherine Barbe Geneviève Marguerite Thérèse Claire Odile Madeleine Agnès Cécile Jeanne'.split(' ');

const NOMS_DE_LIEUX = (
  'Champ Pré Bois Moulin Mas Clos Grange Borde Croix Fontaine Puy Mont Roche Côte Combe Vigne Lande Bruyère Chêne ' +
  'Orme Noyer Pin Marais Étang Gué Pont Four Tuilerie Forge Ferme Maison Cabane Bastide Métairie Garenne Plaine ' +
  'Pièce Terre Vallon Colombier Pigeonnier Buisson Ruisseau Source'
).split(' ');
const FEMININS = new Set(
  'Grange Borde Croix Fontaine Roche Côte Combe Vigne Lande Bruyère Tuilerie Forge Ferme Maison Cabane Bastide Métairie Garenne Plaine Pièce Terre Source'.split(
    ' ',
  ),
);
const ADJECTIFS = ['Grand', 'Petit', 'Haut', 'Bas', 'Vieux', 'Neuf', 'Blanc', 'Rouge', 'Vert', 'Long', 'Rond'];
const ADJECTIFS_F: Record<string, string> = {
  Grand: 'Grande',
  Petit: 'Petite',
  Haut: 'Haute',
  Bas: 'Basse',
  Vieux: 'Vieille',
  Neuf: 'Neuve',
  Blanc: 'Blanche',
  Rouge: 'Rouge',
  Vert: 'Verte',
  Long: 'Longue',
  Rond: 'Ronde',
};

/** A seeded random source (bench and test data only). */
export interface Hasard {
  next(): number;
  int(n: number): number;
  pick<T>(list: readonly T[]): T;
}

export function tirer<T>(hasard: Hasard, poids: Poids<T>): T {
  const total = poids.reduce((s, [, p]) => s + p, 0);
  let x = hasard.next() * total;
  for (const [v, p] of poids) {
    x -= p;
    if (x < 0) return v;
  }
  return poids[poids.length - 1][0];
}

const VOYELLE = /^[aeiouyhâàéèêîïôûAEIOUYHÂÀÉÈÊÎÏÔÛ]/;

/** `de` + a commune's name, with its article: de Latresne, d'Abzac, du Haillan, des Églisottes, de la Brède. */
export function deLieu(nom: string): string {
  if (nom.startsWith('Le ')) return `du ${nom.slice(3)}`;
  if (nom.startsWith('Les ')) return `des ${nom.slice(4)}`;
  if (nom.startsWith('La ')) return `de la ${nom.slice(3)}`;
  if (nom.startsWith("L'")) return `de l'${nom.slice(2)}`;
  return VOYELLE.test(nom) ? `d'${nom}` : `de ${nom}`;
}

/** A lieu-dit's name: Le Grand Champ, La Croix Blanche, Les Granges, or a real place name. */
function lieuDit(h: Hasard, lieux: readonly string[]): string {
  if (h.next() < 0.35) return h.pick(lieux);
  const nom = h.pick(NOMS_DE_LIEUX);
  const feminin = FEMININS.has(nom);
  const adj = h.next() < 0.5 ? h.pick(ADJECTIFS) : null;
  const accorde = adj && feminin ? ADJECTIFS_F[adj] : adj;
  if (h.next() < 0.25) return `Les ${nom}s`;
  const article = feminin ? 'La' : 'Le';
  if (!accorde) return VOYELLE.test(nom) ? `L'${nom}` : `${article} ${nom}`;
  return h.next() < 0.5 ? `${article} ${accorde} ${nom}` : `${article} ${nom} ${accorde}`;
}

/** The name after the type. `lieux`: real place names (the communes around). */
export function nomDeVoie(h: Hasard, lieux: readonly string[]): string {
  const x = h.next();
  if (x < 0.3) return tirer(h, COMMUNS);
  if (x < 0.48) return tirer(h, CELEBRES);
  if (x < 0.62) {
    const personne = `${h.pick(PRENOMS)} ${h.pick(NOMS)}`;
    return h.next() < 0.15 ? `${h.pick(TITRES)} ${personne}` : personne;
  }
  if (x < 0.72) {
    const saint = h.next() < 0.7 ? `Saint-${h.pick(SAINTS)}` : `Sainte-${h.pick(SAINTES)}`;
    return h.next() < 0.1 ? `du Faubourg ${saint}` : saint;
  }
  if (x < 0.9) return deLieu(h.pick(lieux));
  return deLieu(lieuDit(h, lieux));
}

/**
 * The streets of a commune: `n` distinct names, type and name, a few lieux-dits without type, and, as in real communes,
 * a name given to two streets of different types (Rue and Place de la Gare) for about one street in ten; otherwise a
 * name once per commune (the real BAN of Paris: 14 % of an arrondissement's streets share their name with another of
 * it). The same names come back from one commune to the next, as `de l'Église` does in thousands of them.
 */
export function voiesDeCommune(h: Hasard, n: number, lieux: readonly string[]): string[] {
  const noms = new Set<string>();
  const out: string[] = [];
  let essais = 0;
  while (out.length < n && essais++ < n * 20) {
    if (h.next() < 0.08) {
      const ld = lieuDit(h, lieux);
      if (noms.has(ld)) continue;
      noms.add(ld);
      out.push(ld);
      continue;
    }
    if (h.next() < 0.004) {
      if (noms.has('Grande Rue')) continue;
      noms.add('Grande Rue');
      out.push('Grande Rue');
      continue;
    }
    const type = tirer(h, TYPES);
    const nom = nomDeVoie(h, lieux);
    if (noms.has(nom)) continue;
    noms.add(nom);
    out.push(`${type} ${nom}`);
    // Rue and Place de la Gare; Rue and Boulevard Saint-Martin.
    if (out.length < n && h.next() < 0.1) {
      const autre = tirer(h, TYPES);
      if (autre !== type) out.push(`${autre} ${nom}`);
    }
  }
  return out;
}

const ABREGES: Array<[RegExp, string]> = [
  [/\bSAINTE\b/g, 'STE'],
  [/\bSAINT\b/g, 'ST'],
  [/\bGENERAL\b/g, 'GAL'],
  [/\bMARECHAL\b/g, 'MAL'],
  [/\bDOCTEUR\b/g, 'DR'],
  [/\bPRESIDENT\b/g, 'PDT'],
  [/\bFAUBOURG\b/g, 'FG'],
];

/**
 * A street name as DVF writes it, from FANTOIR: the AFNOR type, then the name in upper case without accents nor
 * apostrophes (elisions as `D ANJOU`), on 26 characters at most: a longer name has its saints and titles abbreviated,
 * then is cut (`STE CROIX DE LA BRETONNERI`).
 */
export function commeDvf(voie: string): string {
  const type = TYPES.map(([t]) => t)
    .sort((a, b) => b.length - a.length)
    .find((t) => voie.startsWith(`${t} `));
  let nom = (type ? voie.slice(type.length) : voie)
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .toUpperCase()
    .replace(/['-]/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  for (const [mot, abrege] of ABREGES) if (nom.length > 26) nom = nom.replace(mot, abrege);
  nom = nom.slice(0, 26).trim();
  return [type ? AFNOR[type] : null, nom].filter(Boolean).join(' ');
}
