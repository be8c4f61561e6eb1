import { describe, expect, it } from 'vitest';
import {
  analyserFait,
  classerFait,
  coordonneesDans,
  extraireApport,
  extraireTmi,
  normaliserFait,
  type CategorieRefus,
} from '../../../domain/compte/memoire-regles.ts';

describe('normaliserFait', () => {
  it('makes one key of a fact written with other case, accents, spacing or final punctuation', () => {
    const cle = normaliserFait('Je préfère l’ancien.');
    expect(normaliserFait("je prefere l'ancien")).toBe(cle);
    expect(normaliserFait('  JE PRÉFÈRE   L’ANCIEN !!! ')).toBe(cle);
    expect(normaliserFait('« Je préfère l’ancien »')).toBe(cle);
    expect(normaliserFait('- Je\u00a0préfère l’ancien…')).toBe(cle);
  });

  it('ignores spaces inside numbers and before French punctuation', () => {
    expect(normaliserFait('Budget 200 000 €')).toBe(normaliserFait('budget 200000€'));
    expect(normaliserFait('TMI : 30 %')).toBe(normaliserFait('tmi: 30%'));
  });

  it('keeps different facts apart', () => {
    expect(normaliserFait('Je cherche un T2 à Bordeaux')).not.toBe(normaliserFait('Je cherche un T3 à Bordeaux'));
    expect(normaliserFait('budget 200 000 €')).not.toBe(normaliserFait('budget 250 000 €'));
  });
});

describe('classerFait: ordinary investment facts are retained', () => {
  const retenus = [
    'Je cherche un T2 à Bordeaux',
    'budget 200 000 €',
    "Je préfère l'ancien",
    'Je vise une rentabilité brute de 7 % minimum',
    'Je veux investir en LMNP dans une ville étudiante',
    "J'habite à Lyon et je veux investir à moins d'une heure",
    'Je suis fonctionnaire, en CDI depuis 2015',
    'Je suis marié, deux enfants',
    'Mon frère veut investir avec moi',
    'Pas de rez-de-chaussée ni de travaux lourds',
    'Je cherche une maison avec jardin exposé sud',
    'Je veux éviter les copropriétés avec un syndic bénévole',
    'Le syndicat des copropriétaires doit voter le ravalement',
    'Je préfère les biens où la porte du grenier n’est pas condamnée',
    'Je vote pour le ravalement à la prochaine AG',
    'Parquet et cheminée d’origine, j’adore',
    'Je suis en profession libérale',
    'Je veux un bien près de la rue Gay-Lussac',
    'Je cherche autour de Saint-Malo',
    'Le PLU impose un sursis à statuer dans ce secteur, je veux l’éviter',
    'Je privilégie les biens avec un DPE D minimum',
    'Je cherche un local proche d’une maison de santé',
    'Je veux déléguer la gestion à une agence',
    'Objectif : 1 500 € de revenus mensuels dans 10 ans',
    'Je cherche un immeuble de rapport à Saint-Étienne',
    'Mes enfants sont étudiants à Rennes',
    'Je vise le 12 rue Sainte-Catherine pour un local commercial',
    'Un appartement rue du Docteur Roux m’intéresse',
    'Je veux une résidence avec digicode et ascenseur',
    'Ma femme et moi voulons acheter en SCI',
    'Je veux un bien loué avec un bail de 3 ans',
    'Je suis originaire de Bretagne et je connais bien Rennes',
    'Je travaille chez Airbus à Toulouse',
    'Les fenêtres condamnées ne me dérangent pas',
    'Je veux une santé financière solide de la copropriété',
    'Je suis dans la tranche à 30 %',
    'Apport de 50 000 €',
  ];
  it.each(retenus)('%s', (fait) => {
    expect(classerFait(fait)).toBeNull();
  });
});

describe('classerFait: refused with the reason', () => {
  const refuses: [string, CategorieRefus][] = [
    ["J'ai un diabète de type 2", 'sante'],
    ['Je suis en arrêt maladie depuis mars', 'sante'],
    ['Ma fille est handicapée, il faut un ascenseur', 'sante'],
    ['Ma femme est enceinte de 5 mois', 'sante'],
    ['Pour raisons de santé je veux un rez-de-chaussée', 'sante'],
    ['Je suis musulman pratiquant', 'religion'],
    ['Nous sommes catholiques et voulons être près de notre paroisse', 'religion'],
    ['Je vote RN depuis toujours', 'politique'],
    ['Je suis de gauche, pas de défiscalisation Pinel pour moi', 'politique'],
    ['Je suis délégué syndical CGT', 'syndicat'],
    ['Je suis syndiqué à la CFDT', 'syndicat'],
    ['Je suis homosexuel et en couple', 'orientation_sexuelle'],
    ['Je suis d’origine maghrébine', 'origine'],
    ["J'ai été condamné pour fraude en 2018", 'penal'],
    ['Mon casier judiciaire n’est pas vierge', 'penal'],
    ['Mon IBAN est FR76 3000 6000 0112 3456 7890 189', 'bancaire'],
    ['Payez avec la carte 4111 1111 1111 1111', 'bancaire'],
    ['Le cryptogramme est 123', 'bancaire'],
    ['Mon numéro de sécu est 1 85 05 78 006 084 91', 'securite_sociale'],
    ['2 93 02 75 123 456 68', 'securite_sociale'],
    ['Mon mot de passe est Soleil2024', 'secret'],
    ['Le digicode est 4521B', 'secret'],
    ['Appelez-moi au 06 12 34 56 78', 'telephone'],
    ['Mon portable : +33 6 12 34 56 78', 'telephone'],
    ['Joignable au 01.45.67.89.10 le soir', 'telephone'],
    ['Mon mail : jean.dupont@example.fr', 'courriel'],
    ["J'habite au 12 rue des Lilas à Bordeaux", 'adresse_postale'],
    ['Notre adresse : 3 allée des Pins, 33600 Pessac', 'adresse_postale'],
    ['M. Dupont, le vendeur, accepte de baisser le prix', 'tiers_nomme'],
    ['Mme Martin est prête à vendre son T3', 'tiers_nomme'],
    ['Mon frère Jean veut acheter avec moi', 'tiers_nomme'],
    ['Paul Martin, mon associé, apporte 30 000 €', 'tiers_nomme'],
    ['Ma fille s’appelle Emma et étudie à Lille', 'tiers_nomme'],
    ['Mon notaire est Maître Lefèvre à Nantes', 'tiers_nomme'],
    ['Ma meilleure amie Sophie cherche aussi', 'tiers_nomme'],
  ];
  it.each(refuses)('%s → %s', (fait, categorie) => {
    const refus = classerFait(fait);
    expect(refus?.categorie).toBe(categorie);
    expect(refus?.motif).toMatch(/\w/);
  });

  it('gives French reasons naming the GDPR article for sensitive categories', () => {
    expect(classerFait('Je suis atteint d’un cancer')?.motif).toContain('art. 9');
    expect(classerFait('Il a fait de la prison')?.motif).toContain('art. 10');
  });
});

describe('coordonneesDans: for address labels', () => {
  it('lets a street named after a doctor through but not a phone number', () => {
    expect(coordonneesDans('12 rue du Docteur Roux, 75015 Paris')).toBeNull();
    expect(coordonneesDans('12 rue des Lilas, tél. 06 12 34 56 78')?.categorie).toBe('telephone');
  });
});

describe('extraireTmi', () => {
  it.each([
    ['TMI 30 %', 30],
    ['Je suis dans la tranche à 41%', 41],
    ['tranche marginale de 30', 30],
    ['Ma TMI est de 11 %', 11],
    ['TMI : 45%', 45],
    ['TMI à 0 %', 0],
    ["Taux marginal d'imposition de 30 %", 30],
    ['Je suis imposé à 41 %', 41],
    ['Je ne suis pas imposable', 0],
  ])('%s → %d', (fait, tmi) => {
    expect(extraireTmi(fait)).toBe(tmi);
  });

  it.each(['TMI 25 %', 'Je cherche un T2 à 30 minutes du centre', 'budget 300 000 €', 'tranche de travaux à 30 000 €'])(
    'no TMI in "%s"',
    (fait) => {
      expect(extraireTmi(fait)).toBeNull();
    },
  );
});

describe('extraireApport', () => {
  it.each([
    ['Apport de 50 000 €', 50_000],
    ['50k€ d’apport', 50_000],
    ['apport personnel: 80 000 euros', 80_000],
    ["J'ai un apport de 1,2 M€", 1_200_000],
    ['Apport 30000', 30_000],
    ['Apport de 10 % soit 25 000 €', 25_000],
    ['Budget 200 000 € dont 40 000 € d’apport', 40_000],
    ['Je peux apporter 35 000 euros', 35_000],
    ['Je cherche sans apport', 0],
    ["Je n'ai pas d'apport", 0],
    ['Apport de 50.000 €', 50_000],
  ])('%s → %d', (fait, apport) => {
    expect(extraireApport(fait)).toBe(apport);
  });

  it.each(['Apport de 20 %', 'Apport de 20 %, budget 200 000 €', 'budget 200 000 €', 'Je cherche un T2 de 45 m2'])(
    'no down payment in "%s"',
    (fait) => {
      expect(extraireApport(fait)).toBeNull();
    },
  );
});

describe('analyserFait', () => {
  it('extracts both figures of one retained fact', () => {
    const a = analyserFait('  TMI 30 %   et apport de 60 000 €  ');
    expect(a).toMatchObject({ texte: 'TMI 30 % et apport de 60 000 €', refus: null, tmi_pct: 30, apport_eur: 60_000 });
  });

  it('keeps nothing of a refused fact, not even its figures', () => {
    const a = analyserFait('Paul Martin, mon associé, apporte 30 000 €');
    expect(a.refus?.categorie).toBe('tiers_nomme');
    expect(a.apport_eur).toBeNull();
  });
});
