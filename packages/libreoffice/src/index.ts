export { createLibreOfficeRenderer } from './renderer.ts';
export type { LibreOfficeRendererOptions } from './renderer.ts';
