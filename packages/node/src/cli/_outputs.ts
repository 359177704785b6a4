import { basename, dirname, join, relative, sep } from 'node:path';

import { formatForFileName, outputFileName } from '@disarm/core';

import { UsageError } from './_exit-codes.ts';
import type { InputFile } from './_inputs.ts';

/** An input and the path its cleaned copy will have. */
export interface PlannedFile extends InputFile {
  /** Absolute path of the copy; `undefined` for a type the engine rejects without writing. */
  readonly outputPath: string | undefined;
}

/** Most colliding copies named in the refusal; the rest are counted. */
const MAX_LISTED_COLLISIONS = 5;

/**
 * Gives every input the path of its copy, before any file is processed: the name the engine
 * returns it under (`a.gz` becomes `a.zip`) in the input's folder under `--out`. Two inputs whose
 * copies would take one path, or one copy whose path another needs as a folder, are a usage
 * error naming both inputs and the path: the run would otherwise fail one of them after the
 * other was cleaned, or replace a copy it had just written.
 * @throws {UsageError} when copies collide.
 */
export function planOutputs(
  files: readonly InputFile[],
  out: { readonly path: string; readonly display: string },
): PlannedFile[] {
  const planned = files.map((file): PlannedFile => {
    const format = formatForFileName(file.fileName);
    return {
      ...file,
      outputPath: format && join(file.outputDir, outputFileName(file.fileName, format)),
    };
  });
  const byOutput = new Map<string, PlannedFile>();
  const collisions: string[] = [];
  // Copies of files from different folders can keep those folders apart below --out.
  let apartBelowOut = false;
  for (const file of planned) {
    if (file.outputPath === undefined) continue;
    const earlier = byOutput.get(file.outputPath);
    if (earlier) {
      apartBelowOut ||= dirname(earlier.path) !== dirname(file.path);
      collisions.push(
        `${inputName(earlier)} and ${inputName(file)} -> ${shown(file.outputPath, out)}`,
      );
    } else {
      byOutput.set(file.outputPath, file);
    }
  }
  for (const [outputPath, file] of byOutput) {
    // A copy named like a folder another copy goes into (x.zip beside x.zip/a.png).
    for (
      let folder = dirname(outputPath);
      folder.startsWith(out.path + sep);
      folder = dirname(folder)
    ) {
      const occupant = byOutput.get(folder);
      if (occupant) {
        apartBelowOut = true;
        collisions.push(
          `${inputName(occupant)} -> ${shown(folder, out)}, which ${inputName(file)} needs as its folder`,
        );
      }
    }
  }
  if (collisions.length === 0) return planned;
  const listed = collisions.slice(0, MAX_LISTED_COLLISIONS);
  const more = collisions.length - listed.length;
  throw new UsageError(
    `inputs would be cleaned to the same place in --out ${out.display}: ${listed.join('; ')}${more > 0 ? `; and ${more} more` : ''}. Nothing was processed. Clean them into separate --out folders${apartBelowOut ? ', or name a folder that holds them all, so each keeps its path below it' : ''}`,
  );
}

/** The input as the user named it, and the name its copy takes when the format changes it. */
function inputName(file: PlannedFile): string {
  const copyName = file.outputPath === undefined ? file.fileName : basename(file.outputPath);
  return copyName === file.fileName ? file.display : `${file.display} (cleaned as ${copyName})`;
}

function shown(path: string, out: { readonly path: string; readonly display: string }): string {
  return join(out.display, relative(out.path, path));
}
