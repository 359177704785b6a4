import { access, constants } from 'node:fs/promises';

import { createChromiumRenderer, DEFAULT_CHROMIUM_PATH } from '@disarm/chromium';
import type { Renderer } from '@disarm/core';

/** Which renderers {@link createRenderers} may start, and where their programs are. */
export interface CreateRenderersOptions {
  /**
   * Headless Chromium for html, htm and svg: its executable, or `false` to leave it out.
   * @default {@link DEFAULT_CHROMIUM_PATH}, used when it is installed
   */
  readonly chromium?: { readonly executablePath?: string } | false;
}

/**
 * The renderers installed and enabled here, in the order the engine asks them (chromium first).
 * Each starts its program on its first render and keeps it warm; close them when done.
 */
export async function createRenderers(options: CreateRenderersOptions = {}): Promise<Renderer[]> {
  const renderers: Renderer[] = [];
  if (options.chromium !== false) {
    const executablePath = options.chromium?.executablePath ?? DEFAULT_CHROMIUM_PATH;
    if (await isExecutable(executablePath)) {
      renderers.push(createChromiumRenderer({ executablePath }));
    }
  }
  return renderers;
}

async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
