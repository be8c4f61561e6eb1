/**
 * Generation of a document from the caller's sections (no model): the PDF and Word renderers, the plain text and the
 * to-complete count, behind one entry point.
 */
import { MIME_TYPES, type DocumentFormat, type DocumentSource, type RenderOptions } from './document.ts';
import { renderDocx } from './docx.ts';
import { renderPdf } from './pdf.ts';

export { countToComplete, fileName, maskContacts, plainText, MIME_TYPES } from './document.ts';
export type { DocumentFormat, DocumentSource, DocumentType, RenderOptions, Section, Tableau } from './document.ts';
export { renderDocx, renderPdf };

export interface RenderedFile {
  bytes: Uint8Array;
  contentType: string;
}

export async function render(
  doc: DocumentSource,
  format: DocumentFormat,
  options: RenderOptions = {},
): Promise<RenderedFile> {
  const bytes = format === 'pdf' ? await renderPdf(doc, options) : await renderDocx(doc, options);
  return { bytes, contentType: MIME_TYPES[format] };
}
