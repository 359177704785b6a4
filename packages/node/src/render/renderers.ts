import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { delimiter, isAbsolute, join } from 'node:path';

import type { Renderer } from '@disarm/core';
import { createLibreOfficeRenderer } from '@disarm/libreoffice';
import type { LibreOfficeRendererOptions } from '@disarm/libreoffice';

/** Which renderers {@link createRenderers} sets up, and how. */
export interface RenderersOptions {
  /**
   * The LibreOffice pool (spreadsheets and presentations), or `false` to leave it out. One pool
   * per process that calls this, so a worker keeps its own soffice warm across documents.
   * @default `{ poolSize: 1 }` when its executable (`soffice`) is installed
   */
  readonly libreoffice?: LibreOfficeRendererOptions | false;
}

/**
 * The renderers installed on this machine and enabled, in the order the engine asks them:
 * LibreOffice for spreadsheets and presentations when `soffice` is on the PATH. The caller keeps
 * them for as long as it converts and closes them when done.
 */
export async function createRenderers(options: RenderersOptions = {}): Promise<Renderer[]> {
  const renderers: Renderer[] = [];
  const libreoffice = options.libreoffice ?? {};
  if (libreoffice !== false && (await isExecutable(libreoffice.executable ?? 'soffice'))) {
    renderers.push(createLibreOfficeRenderer({ poolSize: 1, ...libreoffice }));
  }
  return renderers;
}

/** Whether `command` names an executable file, itself or on the PATH. */
async function isExecutable(command: string): Promise<boolean> {
  const candidates = isAbsolute(command)
    ? [command]
    : (process.env.PATH ?? '').split(delimiter).map((dir) => join(dir, command));
  for (const candidate of candidates) {
    try {
      await access(candidate, constants.X_OK);
      return true;
    } catch {
      // Not here.
    }
  }
  return false;
}
