import { BUILTIN_RENDERER_NAME, FORMATS } from '@disarm/core';
import type { FormatRow, RenderKind, Renderer, RendererStatus } from '@disarm/core';
import { createChromiumRenderer } from '@disarm/chromium';
import { createLibreOfficeRenderer } from '@disarm/libreoffice';

/**
 * A renderer that {@link createRenderers} can start besides the engine's built-in one: an adapter
 * package of a program (a browser, an office suite).
 */
interface RendererModule {
  /** The renderer's name, as `--renderers` spells it. */
  readonly name: string;
  /**
   * Creates the renderer. It must not start its program yet (a warm renderer starts it on the
   * first document), so that creating one to ask its {@link Renderer.status} costs nothing.
   */
  create(): Renderer;
}

/**
 * The renderers besides the built-in one, in the order `auto` asks them. Each adapter adds its
 * row: `@disarm/chromium` (html and svg), then `@disarm/libreoffice` (ods and odp).
 */
const RENDERER_MODULES: readonly RendererModule[] = [
  // One browser per process that creates it, started with its first document; a fresh isolated
  // context per document.
  { name: 'chromium', create: () => createChromiumRenderer() },
  // One soffice per process that creates it: each worker keeps its own warm across documents.
  { name: 'libreoffice', create: () => createLibreOfficeRenderer({ poolSize: 1 }) },
];

/** Every renderer name `--renderers` accepts, the built-in one last. */
export const RENDERER_NAMES: readonly string[] = [
  ...RENDERER_MODULES.map((module) => module.name),
  BUILTIN_RENDERER_NAME,
];

/**
 * Which renderers to use: `auto`, every installed one in the order of {@link RENDERER_NAMES}; or
 * names in the order to ask them. The engine's built-in renderer always follows them, so a kind
 * none of them draws is still converted.
 */
export type RendererSelection = 'auto' | readonly string[];

/** Options of {@link createRenderers}. */
export interface CreateRenderersOptions {
  /** @default 'auto' */
  readonly selection?: RendererSelection;
}

/** A renderer named in a selection cannot render here (its program is missing or broken). */
export class RendererUnavailableError extends Error {
  override readonly name = 'RendererUnavailableError';
}

/**
 * The renderers a selection asks for, created and ready, in order, for `disarm()`'s `renderers`
 * option (the built-in renderer is not among them: the engine appends it). With `auto`, a
 * renderer whose program is not installed is left out; a named one must be ready.
 *
 * @example A worker keeps its renderers warm across documents:
 * ```ts
 * const renderers = await createRenderers({ selection: 'auto' });
 * const outcome = await disarm(source, { renderers });
 * await Promise.all(renderers.map((renderer) => renderer.close()));
 * ```
 * @throws {TypeError} for a name that is no renderer.
 * @throws {RendererUnavailableError} (rejected) when a named renderer is not ready; the ones
 *   created are closed again.
 */
export async function createRenderers(options: CreateRenderersOptions = {}): Promise<Renderer[]> {
  const selection = options.selection ?? 'auto';
  const modules =
    selection === 'auto' ? RENDERER_MODULES : selection.flatMap((name) => moduleNamed(name));
  const renderers: Renderer[] = [];
  try {
    for (const module of modules) {
      const renderer = module.create();
      const status = await renderer.status();
      if (status.ready) {
        renderers.push(renderer);
        continue;
      }
      await renderer.close();
      if (selection !== 'auto') {
        throw new RendererUnavailableError(
          `the ${module.name} renderer is not ready: ${status.detail ?? 'its program was not found'}`,
        );
      }
    }
  } catch (error) {
    await Promise.all(renderers.map((renderer) => renderer.close()));
    throw error;
  }
  return renderers;
}

/** The module of `name`; none for the built-in renderer, which the engine always adds. */
function moduleNamed(name: string): RendererModule[] {
  if (name === BUILTIN_RENDERER_NAME) return [];
  const module = RENDERER_MODULES.find((candidate) => candidate.name === name);
  if (module === undefined) {
    throw new TypeError(`unknown renderer "${name}" (known: ${RENDERER_NAMES.join(', ')})`);
  }
  return [module];
}

/**
 * A selection as `--renderers` and `DISARM_RENDERERS` write it: `auto`, or names separated by
 * commas in the order to ask them.
 * @throws {TypeError} for an empty list, an unknown or repeated name, or a name after `builtin`
 *   (the built-in renderer draws every kind, so one after it would never be asked).
 */
export function parseRendererSelection(value: string): RendererSelection {
  const trimmed = value.trim();
  if (trimmed === 'auto') return 'auto';
  const names = trimmed.split(',').map((name) => name.trim());
  if (names.some((name) => name === '')) {
    throw new TypeError('renderers must be "auto" or a comma-separated list of names');
  }
  const unknown = names.find((name) => !RENDERER_NAMES.includes(name));
  if (unknown !== undefined) {
    throw new TypeError(
      `unknown renderer "${unknown}" (known: auto, ${RENDERER_NAMES.join(', ')})`,
    );
  }
  const repeated = names.find((name, index) => names.indexOf(name) !== index);
  if (repeated !== undefined) throw new TypeError(`renderer "${repeated}" is named twice`);
  if (names.includes(BUILTIN_RENDERER_NAME) && names.at(-1) !== BUILTIN_RENDERER_NAME) {
    throw new TypeError(
      `"${BUILTIN_RENDERER_NAME}" draws every kind, so it can only come last (renderers after it would never be asked)`,
    );
  }
  return names;
}

/** The kind of renderer input a format converted to PDF is, or `undefined` for the others. */
function renderKindOf(row: FormatRow): RenderKind | undefined {
  if (row.outputExtension !== 'pdf' || row.extension === 'pdf') return undefined;
  switch (row.kind) {
    case 'svg':
      return 'svg';
    case 'html':
      return 'html';
    case 'odf-spreadsheet':
      return 'spreadsheet';
    case 'odf-presentation':
      return 'presentation';
    default:
      return undefined;
  }
}

/**
 * Which renderer draws each format returned as PDF (`svg`, `html`, `htm`, `ods`, `odp`), given
 * the configured renderers' statuses in order: the first that lists its kind, else `builtin`.
 */
export function renderersByFormat(
  statuses: readonly Pick<RendererStatus, 'name' | 'kinds'>[],
): Record<string, string> {
  const byFormat: Record<string, string> = {};
  for (const row of FORMATS) {
    const kind = renderKindOf(row);
    if (kind === undefined) continue;
    byFormat[row.extension] =
      statuses.find((status) => status.kinds.includes(kind))?.name ?? BUILTIN_RENDERER_NAME;
  }
  return byFormat;
}
