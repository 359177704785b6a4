export { createListener } from './create-listener.ts';
export type { ListenerOptions, NodeListener } from './create-listener.ts';
export {
  DEFAULT_CLOSE_GRACE_MS,
  DEFAULT_HEADERS_TIMEOUT_MS,
  DEFAULT_IDLE_TIMEOUT_MS,
  DEFAULT_KEEP_ALIVE_TIMEOUT_MS,
  DEFAULT_MAX_HEADER_BYTES,
  DEFAULT_REQUEST_TIMEOUT_MS,
  listen,
} from './listen.ts';
export type { ListenOptions, RunningServer } from './listen.ts';
export { sendResponse } from './send-response.ts';
export { toRequest } from './to-request.ts';
export type { ErrorReporter, FetchHandler } from './types.ts';
