/**
 * Test helpers for crashing `disarm serve` mid-request: request bodies that stop half-way, the
 * submissions and reads the crash tests repeat, and waiting on a condition the server's state
 * shows (never a fixed sleep).
 */
import { randomBytes } from 'node:crypto';

/** Between two looks at a condition while waiting for it. */
const POLL_INTERVAL_MS = 50;
/** How long a condition may take on this small, shared machine. */
export const CONDITION_TIMEOUT_MS = 120_000;

/** A multipart/form-data body holding one `file` part. */
export interface MultipartBody {
  readonly contentType: string;
  readonly bytes: Uint8Array<ArrayBuffer>;
}

/** The multipart body of `file` named `fileName`, with a fresh boundary. */
export function multipartBody(fileName: string, file: Uint8Array): MultipartBody {
  const boundary = `----disarm-crash-${randomBytes(8).toString('hex')}`;
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${fileName}"\r\n` +
      'Content-Type: application/octet-stream\r\n\r\n',
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  return {
    contentType: `multipart/form-data; boundary=${boundary}`,
    bytes: new Uint8Array(Buffer.concat([head, file, tail])),
  };
}

/**
 * A request body that sends the first `sentBytes` of `bytes` and then stops, as a client whose
 * connection hangs; `cut()` ends it with an error (the client giving up).
 */
export function stalledBody(
  bytes: Uint8Array,
  sentBytes: number,
): { readonly stream: ReadableStream<Uint8Array>; cut(): void } {
  let cut: () => void = () => undefined;
  const stopped = new Promise<void>((resolve) => {
    cut = resolve;
  });
  let sent = false;
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!sent) {
        sent = true;
        controller.enqueue(bytes.slice(0, sentBytes));
        return;
      }
      await stopped;
      controller.error(new Error('the client gave up'));
    },
  });
  return { stream, cut };
}

/** Resolves once `check` answers true; polls it meanwhile. */
export async function until(
  what: string,
  check: () => Promise<boolean> | boolean,
  timeoutMs = CONDITION_TIMEOUT_MS,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
  }
}

/** An API answer: its status, headers and JSON body. */
export interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly body: Record<string, unknown>;
}

async function answerOf(response: Response): Promise<Answer> {
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>),
  };
}

/** `POST /v1/documents` of `file` in the raw lane, with `Idempotency-Key: key` when given. */
export async function submitRaw(
  apiUrl: string,
  apiKey: string,
  options: {
    readonly fileName: string;
    readonly file: Uint8Array<ArrayBuffer>;
    readonly key?: string;
    readonly query?: string;
  },
): Promise<Answer> {
  const query = `filename=${encodeURIComponent(options.fileName)}${options.query ?? ''}`;
  return answerOf(
    await fetch(`${apiUrl}/v1/documents?${query}`, {
      method: 'POST',
      headers: {
        'X-Api-Key': apiKey,
        'Content-Type': 'application/octet-stream',
        ...(options.key === undefined ? {} : { 'Idempotency-Key': options.key }),
      },
      body: options.file,
    }),
  );
}

/** `POST /v1/documents` of a multipart body, with `Idempotency-Key: key`. */
export async function submitMultipart(
  apiUrl: string,
  apiKey: string,
  body: MultipartBody,
  key: string,
): Promise<Answer> {
  return answerOf(
    await fetch(`${apiUrl}/v1/documents`, {
      method: 'POST',
      headers: { 'X-Api-Key': apiKey, 'Content-Type': body.contentType, 'Idempotency-Key': key },
      body: body.bytes,
    }),
  );
}

/** `GET` of an API path as the organisation of `apiKey`. */
export async function read(apiUrl: string, apiKey: string, path: string): Promise<Answer> {
  return answerOf(await fetch(`${apiUrl}${path}`, { headers: { 'X-Api-Key': apiKey } }));
}

/** The organisation's prepaid credit now. */
export async function creditOf(apiUrl: string, apiKey: string): Promise<number> {
  const account = await read(apiUrl, apiKey, '/v1/account');
  if (account.status !== 200) throw new Error(`GET /v1/account answered ${account.status}`);
  return Number(account.body.creditBalancePence);
}
