/** `--renderers`, shared by `disarm serve`, `disarm clean` and `disarm doctor`. */
import { InvalidArgumentError, Option } from 'commander';
import type { Command } from 'commander';

import {
  createRenderers,
  parseRendererSelection,
  RENDERER_NAMES,
  RendererUnavailableError,
} from '../render/renderers.ts';
import type { RendererSelection } from '../render/renderers.ts';
import { UsageError } from './_exit-codes.ts';

/** The flag as commander parses it. */
export interface RendererFlags {
  readonly renderers: RendererSelection;
}

/** Adds `--renderers <auto|names>` (env `DISARM_RENDERERS`) to `command`. */
export function addRendererOption(command: Command): Command {
  return command.addOption(
    new Option(
      '--renderers <auto|names>',
      `renderers for svg, html, htm, ods and odp, in the order to ask them: auto (every installed one) or a comma-separated list of ${RENDERER_NAMES.join(', ')}; the built-in renderer always comes last`,
    )
      .env('DISARM_RENDERERS')
      .default('auto' satisfies RendererSelection)
      .argParser((value): RendererSelection => {
        try {
          return parseRendererSelection(value);
        } catch (error) {
          throw new InvalidArgumentError(error instanceof Error ? error.message : String(error));
        }
      }),
  );
}

/**
 * Checks that every renderer `flags` names is ready before any document is taken, the way the
 * workers will create them.
 * @throws {UsageError} naming the renderer that is not ready and why.
 */
export async function assertRenderersReady(flags: RendererFlags): Promise<void> {
  try {
    const renderers = await createRenderers({ selection: flags.renderers });
    await Promise.all(renderers.map((renderer) => renderer.close()));
  } catch (error) {
    if (error instanceof RendererUnavailableError)
      throw new UsageError(`--renderers: ${error.message}`);
    throw error;
  }
}
