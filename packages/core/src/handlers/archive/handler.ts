import { memorySink } from '../../_internal/byte-sink.ts';
import { memorySource } from '../../_internal/byte-source.ts';
import type { ByteSink } from '../../_internal/byte-sink.ts';
import type { DetectedFile, EngineContext, FormatHandler, SourcedFile } from '../types.ts';
import { rebuildGzip } from './gzip.ts';
import { preflightArchive } from './preflight.ts';
import { verifyArchive } from './verify.ts';
import { rebuildZip } from './zip.ts';

/**
 * Archives: zip is rebuilt member by member, read by range and written as it goes (a submitted
 * zip on disk is never held whole); gz is unwrapped in memory and returned as a zip.
 */
export const archiveHandler: FormatHandler = {
  family: 'archive',
  async rebuild(input, context) {
    if (input.format.kind === 'gzip') {
      if (context.depth === 0) await preflightArchive(sourced(input), context);
      return rebuildGzip(input, context);
    }
    const output = await rebuildSourcedZip(sourced(input), context, memorySink());
    return {
      bytes: output.content.bytes ?? (await output.content.readAll()),
      findings: output.findings,
      ...(output.manifest ? { manifest: output.manifest } : {}),
    };
  },
  verify: (output, input, context) =>
    verifyArchive({ ...output, content: memorySource(output.bytes) }, sourced(input), context),
  sourced: {
    kinds: new Set(['zip']),
    rebuild: rebuildSourcedZip,
    verify: verifyArchive,
  },
};

async function rebuildSourcedZip(input: SourcedFile, context: EngineContext, sink: ByteSink) {
  // The budgets of the whole tree are checked once, from the listings, before any member work.
  if (context.depth === 0) await preflightArchive(input, context);
  return rebuildZip(input, context, sink);
}

function sourced(input: DetectedFile): SourcedFile {
  return { source: memorySource(input.bytes), fileName: input.fileName, format: input.format };
}
