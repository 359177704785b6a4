import type { Logger } from '@disarm/protocol';

/** A {@link Logger} that drops everything: the default where logging is optional. */
export const silentLogger: Logger = {
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};
