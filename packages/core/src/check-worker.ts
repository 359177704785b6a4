/**
 * Entry of a part-check worker thread: checks written parts chunk by chunk while the main thread
 * writes them (see `handlers/office/part-checks.ts`). Started by the engine, never by hand.
 */
import { createHash } from 'node:crypto';
import type { Hash } from 'node:crypto';
import { parentPort } from 'node:worker_threads';
import type { MessagePort } from 'node:worker_threads';

import type {
  PartCheck,
  PartCheckKind,
  PartCheckReply,
  PartCheckRequest,
} from './handlers/office/part-checks.ts';
import { OdfStreamCheck } from './handlers/odf/part-check.ts';
import { XmlPartCheck } from './handlers/ooxml/part-check.ts';
import { VerifyFailure } from './handlers/types.ts';

const CHECKS: Record<PartCheckKind, new (name: string) => PartCheck> = {
  'ooxml-xml': XmlPartCheck,
  'odf-xml': OdfStreamCheck,
};

interface Session {
  readonly check: PartCheck;
  readonly hash: Hash;
  size: number;
  /** The part failed its check; later chunks are only counted off. */
  failure: VerifyFailure | undefined;
}

function serve(port: MessagePort): void {
  const sessions = new Map<number, Session>();
  const reply = (message: PartCheckReply): void => {
    port.postMessage(message);
  };
  port.on('message', (request: PartCheckRequest) => {
    const { id } = request;
    try {
      switch (request.type) {
        case 'start':
          sessions.set(id, {
            check: new CHECKS[request.kind](request.name),
            hash: createHash('sha256'),
            size: 0,
            failure: undefined,
          });
          return;
        case 'chunk': {
          const session = sessions.get(id);
          if (!session) return;
          if (!session.failure) {
            session.size += request.bytes.length;
            session.hash.update(request.bytes);
            session.failure = failureOf(() => {
              session.check.write(request.bytes);
            });
          }
          reply({ type: 'consumed', id, bytes: request.bytes.length });
          return;
        }
        case 'end': {
          const session = sessions.get(id);
          if (!session) return;
          sessions.delete(id);
          let references: ReadonlyMap<string, string> = new Map();
          const failure =
            session.failure ??
            failureOf(() => {
              references = session.check.end().references;
            });
          reply({
            type: 'done',
            id,
            result: failure
              ? { status: 'failed', check: failure.check, message: failure.message }
              : {
                  status: 'checked',
                  size: session.size,
                  sha256: session.hash.digest('hex'),
                  references,
                },
          });
          return;
        }
        case 'abort':
          sessions.delete(id);
          return;
      }
    } catch (error) {
      // A fault of the check itself, not of the part: the main thread checks the part instead.
      sessions.delete(id);
      reply({ type: 'error', id, message: error instanceof Error ? error.message : String(error) });
    }
  });
}

/** The part's failure, or `undefined`; anything but a verify failure is the check's own fault. */
function failureOf(step: () => void): VerifyFailure | undefined {
  try {
    step();
    return undefined;
  } catch (error) {
    if (error instanceof VerifyFailure) return error;
    throw error;
  }
}

if (parentPort) serve(parentPort);
