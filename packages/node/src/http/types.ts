/** A WHATWG fetch handler: what `createDisarmApi()` and `createStorageApi()` return as `fetch`. */
export type FetchHandler = (request: Request) => Response | Promise<Response>;

/**
 * Called when a handler throws (or its response cannot be sent) — the bridge answers with a
 * detail-free 500 and hands the error here, the only place its details go.
 */
export type ErrorReporter = (error: unknown, context: { method: string; path: string }) => void;
