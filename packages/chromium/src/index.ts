export {
  createChromiumRenderer,
  DEFAULT_CHROMIUM_PATH,
  DEFAULT_LAUNCH_TIMEOUT_MS,
} from './chromium-renderer.ts';
export type { ChromiumRendererOptions } from './chromium-renderer.ts';
