import { describe, expect, it } from 'vitest';
import {
  countToComplete,
  DOCUMENT_TYPES,
  fileName,
  maskContacts,
  plainText,
  type DocumentSource,
} from '../../../domain/documents/document.ts';
import { renderDocx, renderPdf } from '../../../domain/documents/generer.ts';
import { createRenderPool, RenderAborted } from '../../../domain/documents/pool.ts';
import {
  libreOffice,
  pdfFonts,
  pdfInfo,
  pdfText,
  pdfWords,
  pdfXml,
  rapportAcceptation,
  squash,
} from './outils-generation.ts';

const now = new Date('2025-03-01T10:00:00Z');
/** Pages of a pdftotext reading (form feed between pages, one after the last). */
const pagesOf = (text: string) => text.split('\f').slice(0, -1);

describe('acceptance: a 20-section report with a 200-row table', () => {
  const doc = rapportAcceptation();
  const table = doc.sections[7].tableau!;

  it('PDF: pdftotext holds every section title and every table row, accents exact, header repeated on each page of the table', async () => {
    const pdf = await renderPdf(doc, { now });
    const text = await pdfText(pdf);
    doc.sections.forEach((section, i) => expect(text).toContain(`${i + 1}. ${section.titre}`));
    for (const exact of ['Étude de marché : Bordeaux-Caudéran, cœur de quartier', '« maisons d’œuvre »', '3,2 %']) {
      expect(text).toContain(exact);
    }
    expect(text).toContain('4070 €/m²');

    const pages = pagesOf(await pdfText(pdf, true)).map((page) => page.split('\n').map(squash));
    const lines = pages.flat();
    for (const row of table.lignes) expect(lines).toContain(squash(row.join(' ')));
    const header = squash(table.colonnes.join(' '));
    const tablePages = pages.filter((page) => page.some((line) => line.startsWith('Lot n°')));
    expect(tablePages.length).toBeGreaterThanOrEqual(3);
    for (const page of tablePages) expect(page).toContain(header);
    // Page numbers on every page, total included.
    pages.forEach((page, i) => expect(page.join('\n')).toContain(`Page ${i + 1} / ${pages.length}`));
    // The contents list gives the page each section starts on.
    const contentsLine = pages[0].find((line) => line.startsWith('9. Évolution n°9'))!;
    const page9 = pages.findIndex((page, i) => i > 0 && page.some((line) => line.startsWith('9. Évolution n°9')));
    expect(contentsLine.endsWith(` ${page9 + 1}`)).toBe(true);
  });

  it('PDF: the words between double asterisks are set in the bold font, the rest is not', async () => {
    const xml = squash(await pdfXml(await renderPdf(doc, { now })));
    for (let s = 0; s < 20; s++) expect(xml).toContain(`<b>${4000 + s * 10} €/m²</b>`);
    expect(xml).toContain('<b>ligne D</b>');
    expect(xml).not.toMatch(/<b>[^<]*Sur un an/);
    expect(xml).not.toContain('**');
  });

  it('DOCX: LibreOffice reads every section title and row, the bold words bold, and repeats the header row on each page', async () => {
    const docx = await renderDocx(doc, { now });
    const [html, pdf] = await Promise.all([libreOffice(docx, 'html', 'html'), libreOffice(docx, 'pdf', 'pdf')]);
    const page = squash(html.toString('utf8'));
    for (let s = 0; s < 20; s++) expect(page).toMatch(new RegExp(`<b>${4000 + s * 10} €/m²</b>`));
    expect(page).toContain('<b>ligne D</b>');
    expect(page).not.toContain('**');
    expect(page).not.toMatch(/<b>[^<]*Sur un an/);

    const pages = pagesOf(await pdfText(pdf, true)).map((p) => p.split('\n').map(squash));
    const lines = pages.flat();
    doc.sections.forEach((section, i) => expect(lines).toContain(`${i + 1}. ${section.titre}`));
    for (const row of table.lignes) expect(lines).toContain(squash(row.join(' ')));
    const header = squash(table.colonnes.join(' '));
    const tablePages = pages.filter((p) => p.some((line) => line.startsWith('Lot n°')));
    expect(tablePages.length).toBeGreaterThanOrEqual(3);
    for (const p of tablePages) expect(p).toContain(header);
    pages.forEach((p, i) => expect(p.join('\n')).toContain(`Page ${i + 1} / ${pages.length}`));
  }, 120_000);
});

// ---------------------------------------------------------------------------------------------------------------

const courrier = (type: DocumentSource['type']): DocumentSource => ({
  type,
  titre: 'Proposition d’achat — appartement T3, 14 **rue des Lilas**',
  sous_titre: 'Participants : Mme Durand (vendeuse), M. Petit (acquéreur)',
  destinataire: 'Madame Claire Durand\n8 allée des Tilleuls\n33200 Bordeaux',
  date: '2025-03-01',
  sections: [
    {
      titre: 'Contexte',
      paragraphes: ['Le prix demandé de 245 000 € me paraît cohérent ; je vous propose 232 000 € net vendeur.'],
    },
    { titre: 'Points à vérifier', puces: ['Diagnostic de performance énergétique', 'Procès-verbaux des AG'] },
    {
      titre: 'Comparaison',
      paragraphes: ['Le bien A offre le meilleur rapport qualité-prix.'],
      tableau: { colonnes: ['Critère', 'Bien A', 'Bien B'], lignes: [['Prix', '245 000 €', '259 000 €']] },
    },
  ],
  sources: ['DVF 2024, Etalab'],
});

describe('every type has the layout a professional expects', () => {
  it('renders all six types in both formats, read back by poppler and LibreOffice', async () => {
    const docs = DOCUMENT_TYPES.map(courrier);
    const pdfs = await Promise.all(docs.map((d) => renderPdf(d, { now })));
    const docxs = await Promise.all(docs.map((d) => renderDocx(d, { now })));
    const readBack = await Promise.all(docxs.map((d) => libreOffice(d, 'pdf', 'pdf')));
    for (const [i, type] of DOCUMENT_TYPES.entries()) {
      for (const bytes of [pdfs[i], readBack[i]]) {
        const text = squash(await pdfText(bytes, true));
        expect(text, type).toContain('Proposition d’achat — appartement T3, 14 rue des Lilas');
        expect(text, type).toContain('232 000 € net vendeur');
        expect(text, type).toContain('Prix 245 000 € 259 000 €');
        expect(text, type).toContain('Page 1 / ');
        const info = await pdfInfo(bytes);
        expect(info.width > info.height, type).toBe(type === 'comparatif');
      }
      // The PDF carries its fonts: it reads the same on a machine that has none of them.
      const fonts = await pdfFonts(pdfs[i]);
      expect(fonts.length, type).toBeGreaterThan(0);
      for (const font of fonts)
        expect(font, type).toEqual({ name: expect.stringMatching(/^DejaVuSans/), embedded: true });
    }
  }, 120_000);

  it('lettre: addressee block top right, date line on the right, object line, no section numbers', async () => {
    const pdf = await renderPdf(courrier('lettre'), { now });
    const { width, words } = await pdfWords(pdf);
    const word = (text: string) => words.find((w) => w.text === text)!;
    expect(word('Madame').xMin).toBeGreaterThan(width / 2);
    expect(word('Tilleuls').xMin).toBeGreaterThan(width / 2);
    // The date line ends at the right margin, below the addressee block.
    expect(word('2025').xMax).toBeGreaterThan(width * 0.85);
    expect(word('2025').yMin).toBeGreaterThan(word('33200').yMin);
    const text = await pdfText(pdf);
    expect(text).toMatch(/Objet : Proposition d’achat/);
    expect(text.indexOf('le 1er mars 2025')).toBeLessThan(text.indexOf('Objet :'));
    expect(text).not.toContain('1. Contexte');
    expect(text).toContain('Références');
  });

  it('lettre: a place-and-date line is kept as written, a missing date is the day of generation', async () => {
    const placed = await pdfText(await renderPdf({ ...courrier('lettre'), date: 'Bordeaux, le 3 mars 2025' }, { now }));
    expect(placed).toContain('Bordeaux, le 3 mars 2025');
    const undated = await pdfText(await renderPdf({ ...courrier('lettre'), date: undefined }, { now }));
    expect(undated).toContain('le 1er mars 2025');
  });

  it('checklist: a box before each bullet', async () => {
    const text = await pdfText(await renderPdf(courrier('checklist'), { now }));
    expect(text).toMatch(/☐\s+Diagnostic de performance énergétique/);
    expect(text).toMatch(/☐\s+Procès-verbaux des AG/);
    expect(plainText(courrier('checklist'), { now })).toContain('☐ Procès-verbaux des AG');
  });

  it('comparatif: the table comes before the commentary of its section', async () => {
    const text = squash(await pdfText(await renderPdf(courrier('comparatif'), { now }), true));
    expect(text.indexOf('Critère Bien A Bien B')).toBeGreaterThan(0);
    expect(text.indexOf('Critère Bien A Bien B')).toBeLessThan(text.indexOf('Le bien A offre'));
    const rapport = squash(await pdfText(await renderPdf(courrier('rapport'), { now }), true));
    expect(rapport.indexOf('Critère Bien A Bien B')).toBeGreaterThan(rapport.indexOf('Le bien A offre'));
  });

  it('compte rendu: meeting date, participants and distribution in the header, numbered points', async () => {
    const text = squash(await pdfText(await renderPdf(courrier('compte_rendu'), { now })));
    expect(text).toContain('COMPTE RENDU');
    expect(text).toContain('Réunion du : 1er mars 2025 Participants : Mme Durand (vendeuse), M. Petit (acquéreur)');
    expect(text).toContain('Diffusion : Madame Claire Durand, 8 allée des Tilleuls, 33200 Bordeaux');
    expect(text).toContain('1. Contexte');
    expect(text).toContain('3. Comparaison');
  });

  it('note: memo header À / Date / Objet, compact', async () => {
    const note = await renderPdf(courrier('note'), { now });
    const text = squash(await pdfText(note));
    expect(text).toMatch(
      /^NOTE À : Madame Claire Durand, 8 allée des Tilleuls, 33200 Bordeaux Date : 1er mars 2025 Objet :/,
    );
    const xml = await pdfXml(note);
    const left = (m: RegExpExecArray | null) => Number(m![1]);
    const noteMargin = left(/<text top="\d+" left="(\d+)"[^>]*>(?:<b>)?NOTE/.exec(xml));
    const rapportMargin = left(
      /<text top="\d+" left="(\d+)"[^>]*>(?:<b>)?RAPPORT/.exec(
        await pdfXml(await renderPdf(courrier('rapport'), { now })),
      ),
    );
    expect(noteMargin).toBeLessThan(rapportMargin);
  });

  it('rapport: a contents list, numbered sections, a sources section', async () => {
    const text = squash(await pdfText(await renderPdf(courrier('rapport'), { now })));
    expect(text).toMatch(/Sommaire 1\. Contexte 2 2\. Points à vérifier 2 3\. Comparaison 2/);
    expect(text).toContain('Sources [1] DVF 2024, Etalab');
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe('tables', () => {
  const wide: DocumentSource = {
    type: 'rapport',
    titre: 'Tableau de 12 colonnes',
    sections: [
      {
        titre: 'Données',
        tableau: {
          colonnes: Array.from({ length: 12 }, (_, j) => `Champ${j + 1}`),
          lignes: Array.from({ length: 200 }, (_, i) => Array.from({ length: 12 }, (_, j) => `L${i + 1}C${j + 1}`)),
        },
      },
    ],
  };

  it('12 columns × 200 rows span pages in both formats, every row kept, the header row at the top of each page', async () => {
    const [pdf, docx] = await Promise.all([renderPdf(wide, { now }), renderDocx(wide, { now })]);
    // The Word file read with the machine's fonts, and with DejaVu alone (a Debian without Arial's look-alike
    // Liberation Sans), where its Arial comes out in the wider DejaVu Sans: each header word must still fit its column.
    const [machine, dejaVu] = await Promise.all([
      libreOffice(docx, 'pdf', 'pdf'),
      libreOffice(docx, 'pdf', 'pdf', { dejaVuOnly: true }),
    ]);
    expect(new Set((await pdfFonts(dejaVu)).map((f) => f.name))).toEqual(new Set(['DejaVuSans', 'DejaVuSans-Bold']));
    const header = squash(wide.sections[0].tableau!.colonnes.join(' '));
    for (const bytes of [pdf, machine, dejaVu]) {
      const pages = pagesOf(await pdfText(bytes, true)).map((p) => p.split('\n').map(squash).filter(Boolean));
      const lines = pages.flat();
      for (const row of wide.sections[0].tableau!.lignes) expect(lines).toContain(row.join(' '));
      const withRows = pages.filter((p) => p.some((l) => /^L\d+C1 /.test(l)));
      expect(withRows.length).toBeGreaterThanOrEqual(4);
      for (const page of withRows) {
        // The header is the first line of the table on every page it runs onto.
        const first = page.findIndex((l) => /^L\d+C1 /.test(l));
        expect(page[first - 1]).toBe(header);
      }
    }
  }, 120_000);

  it('a row taller than a page is split across pages without losing a word', async () => {
    const words = (j: number) => Array.from({ length: 150 }, (_, k) => `m${j}x${k}`).join(' ');
    const tall: DocumentSource = {
      type: 'comparatif',
      titre: 'Ligne très haute',
      sections: [
        {
          tableau: {
            colonnes: ['A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'I', 'J', 'K', 'L'],
            lignes: [Array.from({ length: 12 }, (_, j) => words(j))],
          },
        },
      ],
    };
    const pdf = await renderPdf(tall, { now });
    expect((await pdfInfo(pdf)).pages).toBeGreaterThan(1);
    const found = new Set((await pdfText(pdf)).split(/\s+/));
    for (let j = 0; j < 12; j++) for (let k = 0; k < 150; k++) expect(found.has(`m${j}x${k}`)).toBe(true);
  });

  it('a short row is padded, figures are right-aligned', async () => {
    const doc: DocumentSource = {
      type: 'note',
      titre: 'Loyers',
      sections: [{ tableau: { colonnes: ['Lot', 'Loyer', 'Note'], lignes: [['T2', '650 €', 'ok'], ['T3']] } }],
    };
    const { words } = await pdfWords(await renderPdf(doc, { now }));
    const word = (text: string) => words.find((w) => w.text === text)!;
    // The figure ends where its header ends: both flush right in their column; text stays flush left.
    expect(Math.abs(word('€').xMax - word('Loyer').xMax)).toBeLessThan(1);
    expect(Math.abs(word('T2').xMin - word('Lot').xMin)).toBeLessThan(1);
    expect(Math.abs(word('ok').xMin - word('Note').xMin)).toBeLessThan(1);
    expect(plainText(doc, { now })).toContain('T3 |  | ');
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe('a_completer and texte', () => {
  it('counts every kind of to-complete mark, and nothing else', () => {
    const doc: DocumentSource = {
      type: 'lettre',
      titre: 'Offre pour le lot {{numero_lot}}',
      date: 'XX/XX/XXXX',
      sections: [
        {
          paragraphes: [
            'Prix : [à compléter] ; surface (surface à préciser) ; notaire [A COMPLETER].',
            'Signature : ______ le ___',
            'Montant : XXX €. Réponse À COMPLÉTER avant vendredi.',
            // Not marks: a cut in a quotation, a century, a king, bold, an underscore in a name.
            '« Le bail […] est résilié » ; immeuble du XXe siècle ; place Louis XIV ; **gras** ; fichier_final.',
          ],
          tableau: { colonnes: ['Lot', 'Prix'], lignes: [['T2', '[à renseigner]']] },
        },
      ],
      sources: ['Cadastre, parcelle [à confirmer]'],
    };
    expect(countToComplete(doc)).toBe(11);
  });

  it('texte masks telephones and e-mails while the PDF keeps them', async () => {
    const doc: DocumentSource = {
      type: 'compte_rendu',
      titre: 'Visite du 12 mars',
      sections: [
        {
          paragraphes: [
            'Agent : Jean Martin (06 12 34 56 78, jean.martin@agence-exemple.fr), bureau +33 5 56 00 11 22.',
            'Prix affiché 245 000 €, lot 0123, référence 2025-0042.',
          ],
        },
      ],
    };
    const texte = plainText(doc, { now });
    expect(texte).toContain('Agent : Jean Martin ([téléphone masqué], [e-mail masqué]), bureau [téléphone masqué].');
    expect(texte).toContain('Prix affiché 245 000 €, lot 0123, référence 2025-0042.');
    expect(texte).not.toMatch(/06 12 34|jean\.martin|56 00 11/);
    const pdf = await pdfText(await renderPdf(doc, { now }));
    expect(pdf).toContain('06 12 34 56 78');
    expect(pdf).toContain('jean.martin@agence-exemple.fr');
    expect(pdf).toContain('+33 5 56 00 11 22');
  });

  it('maskContacts finds contacts written in the usual ways', () => {
    expect(maskContacts('Tél. 06.12.34.56.78.')).toBe('Tél. [téléphone masqué].');
    expect(maskContacts('écrire à contact@sci-les-chenes.fr;')).toBe('écrire à [e-mail masqué];');
    expect(maskContacts('0033 6 12 34 56 78 ou 0612345678')).toBe('[téléphone masqué] ou [téléphone masqué]');
    expect(maskContacts('SIRET 123 456 789 00012, 250 000 €')).toBe('SIRET 123 456 789 00012, 250 000 €');
  });

  it('names the file after its title, without accents or contacts', () => {
    const doc = courrier('rapport');
    expect(fileName(doc, 'pdf')).toBe('proposition-d-achat-appartement-t3-14-rue-des-lilas.pdf');
    expect(fileName({ ...doc, titre: 'Appelez le 06 12 34 56 78' }, 'docx')).toBe('appelez-le.docx');
    expect(fileName({ ...doc, titre: '«  »' }, 'docx')).toBe('rapport.docx');
  });

  it('keeps what the fonts must show: œ, €, « », narrow no-break spaces, and drops control characters', async () => {
    const doc: DocumentSource = {
      type: 'note',
      titre: 'Cœur de ville',
      sections: [{ paragraphes: ['Œuvre « phare » : 1\u202f250\u00a0€ — bœuf\u0007 ﬁn'] }],
    };
    // poppler reads every kind of space as a space: the letters and signs are what must come back exactly.
    const text = squash(await pdfText(await renderPdf(doc, { now })));
    expect(text).toContain('Œuvre « phare » : 1 250 € — bœuf ﬁn');
  });
});

describe('render pool', () => {
  it('renders off the calling thread, stops a render whose time is up, and goes on with the next', async () => {
    const pool = createRenderPool(1);
    try {
      const doc = rapportAcceptation();
      const first = await pool.render(doc, 'pdf', now);
      expect(Buffer.from(first.bytes.subarray(0, 5)).toString()).toBe('%PDF-');
      expect(first.texte).toContain('20. Évolution n°20');
      expect(first.aCompleter).toBe(0);

      const late = new AbortController();
      const stopped = pool.render(doc, 'pdf', now, late.signal);
      const queued = pool.render(doc, 'docx', now);
      setTimeout(() => late.abort(), 20);
      await expect(stopped).rejects.toBeInstanceOf(RenderAborted);
      const next = await queued;
      expect(Buffer.from(next.bytes.subarray(0, 2)).toString()).toBe('PK');
    } finally {
      await pool.close();
    }
  });
});
