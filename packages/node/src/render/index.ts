export {
  createRenderers,
  parseRendererSelection,
  RENDERER_NAMES,
  RendererUnavailableError,
  renderersByFormat,
} from './renderers.ts';
export type { CreateRenderersOptions, RendererSelection } from './renderers.ts';
