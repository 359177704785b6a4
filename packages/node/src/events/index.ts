export { createDocumentEvents } from './create-document-events.ts';
