import { createHash, createHmac } from 'node:crypto';

/** What {@link verifyPresignedUrl} concluded. */
export type PresignVerdict = 'valid' | 'expired' | 'bad_signature' | 'malformed';

/**
 * Checks a SigV4 presigned S3 link the way S3 does (AWS Signature Version 4, "Authenticating
 * Requests: Using Query Parameters"), written from the published algorithm rather than the SDK, so
 * the test does not grade the SDK by itself. `headers` are those the client sends: every header
 * named in `X-Amz-SignedHeaders` must be there with the signed value.
 */
export function verifyPresignedUrl(options: {
  readonly url: string;
  readonly method: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly secretAccessKey: string;
  readonly now: Date;
}): PresignVerdict {
  const url = new URL(options.url);
  const query = url.searchParams;
  const algorithm = query.get('X-Amz-Algorithm');
  const credential = query.get('X-Amz-Credential');
  const date = query.get('X-Amz-Date');
  const expires = Number(query.get('X-Amz-Expires'));
  const signedHeaders = query.get('X-Amz-SignedHeaders');
  const signature = query.get('X-Amz-Signature');
  if (
    algorithm !== 'AWS4-HMAC-SHA256' ||
    credential === null ||
    date === null ||
    !/^\d{8}T\d{6}Z$/.test(date) ||
    !Number.isInteger(expires) ||
    signedHeaders === null ||
    signature === null
  ) {
    return 'malformed';
  }
  const [, day, region, service] = credential.split('/');
  if (day === undefined || region === undefined || service === undefined) return 'malformed';

  const sent = new Map(
    Object.entries(options.headers).map(([name, value]) => [name.toLowerCase(), value.trim()]),
  );
  sent.set('host', url.host);
  const canonicalHeaders = signedHeaders
    .split(';')
    .map((name) => `${name}:${sent.get(name) ?? ''}\n`)
    .join('');
  if (signedHeaders.split(';').some((name) => !sent.has(name))) return 'bad_signature';
  const canonicalQuery = [...query.entries()]
    .filter(([name]) => name !== 'X-Amz-Signature')
    .map(([name, value]) => [rfc3986(name), rfc3986(value)] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, value]) => `${name}=${value}`)
    .join('&');
  const canonicalRequest = [
    options.method,
    url.pathname,
    canonicalQuery,
    canonicalHeaders,
    signedHeaders,
    'UNSIGNED-PAYLOAD',
  ].join('\n');
  const scope = `${day}/${region}/${service}/aws4_request`;
  const stringToSign = [
    'AWS4-HMAC-SHA256',
    date,
    scope,
    createHash('sha256').update(canonicalRequest).digest('hex'),
  ].join('\n');
  let key: Buffer = hmac(`AWS4${options.secretAccessKey}`, day);
  for (const part of [region, service, 'aws4_request']) key = hmac(key, part);
  const expected = createHmac('sha256', key).update(stringToSign).digest('hex');
  if (expected !== signature) return 'bad_signature';

  const signedAt = Date.UTC(
    Number(date.slice(0, 4)),
    Number(date.slice(4, 6)) - 1,
    Number(date.slice(6, 8)),
    Number(date.slice(9, 11)),
    Number(date.slice(11, 13)),
    Number(date.slice(13, 15)),
  );
  return options.now.getTime() > signedAt + expires * 1000 ? 'expired' : 'valid';
}

function hmac(key: string | Buffer, data: string): Buffer {
  return createHmac('sha256', key).update(data).digest();
}

/** URI encoding as SigV4 canonicalises it: everything but unreserved characters (RFC 3986 2.3). */
function rfc3986(value: string): string {
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}
