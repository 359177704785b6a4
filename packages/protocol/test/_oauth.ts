/**
 * OAuth test harness: the API with OAuth over a real SQLite store in a temporary folder, on a
 * manual clock, every response checked against the OpenAPI document that describes OAuth.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { createSqliteStore } from '@disarm/sqlite';
import type { SqliteStore } from '@disarm/sqlite';
import { expect } from 'vitest';

import { createDisarmApi } from '../src/api.ts';
import type { DisarmApi } from '../src/api.ts';
import { createOpenApiDocument } from '../src/openapi/document.ts';
import { cryptoRandom, newId } from '../src/domain/ids.ts';
import { generateClientSecret } from '../src/oauth/client-secrets.ts';
import { createOAuth } from '../src/oauth/create-oauth.ts';
import type { OAuth } from '../src/oauth/create-oauth.ts';
import type { OAuthConfig } from '../src/oauth/config.ts';
import type { BlobStore, Clock, DocumentEvents } from '../src/ports.ts';
import { createOpenApiValidator } from '../src/testing/openapi-validator.ts';
import type { OpenApiValidator } from '../src/testing/openapi-validator.ts';

export const BASE = 'https://cdr.example.com';
export const AUDIENCE = `${BASE}/v1`;

/** A clock tests move by hand. */
export interface TestClock extends Clock {
  advance(milliseconds: number): Date;
}

export function createTestClock(start = new Date('2025-03-01T10:00:00.000Z')): TestClock {
  let now = start.getTime();
  return {
    now: () => new Date(now),
    advance(milliseconds) {
      now += milliseconds;
      return new Date(now);
    },
  };
}

const refuse = (): never => {
  throw new Error('not used by the OAuth tests');
};
/** The OAuth routes touch no blobs. */
const NO_BLOBS: BlobStore = {
  put: refuse,
  get: refuse,
  stat: refuse,
  delete: refuse,
  list: refuse,
  signedDownloadUrl: refuse,
  signedUploadUrl: refuse,
};
const NO_EVENTS: DocumentEvents = {
  queued: () => undefined,
  finished: () => undefined,
  waitForFinish: () => Promise.resolve(),
  waitForQueued: () => Promise.resolve(),
};

/** A client as the admin API returns it with its secret. */
export interface CreatedClient {
  readonly clientId: string;
  readonly clientSecret: string;
  readonly organisationId: string | null;
  readonly scopes: string[];
}

/** Log lines the API wrote. */
export interface LogLine {
  readonly level: string;
  readonly object: Record<string, unknown>;
  readonly message: string | undefined;
}

export interface OAuthHarness {
  readonly store: SqliteStore;
  readonly clock: TestClock;
  readonly oauth: OAuth;
  readonly api: DisarmApi;
  readonly adminToken: string;
  readonly keyEncryptionKey: Uint8Array;
  readonly directory: string;
  readonly validator: OpenApiValidator;
  readonly logs: LogLine[];
  /** Request to the API, checked against the contract. */
  send(path: string, init?: RequestInit): Promise<Response>;
  /** Admin request with the bootstrap token (or `token`). */
  admin(method: string, path: string, body?: unknown, token?: string): Promise<Response>;
  /** Creates an organisation (provisioned on `internal` unless `plan: null`). */
  organisation(plan?: string | null): Promise<string>;
  client(organisationId: string, scopes?: string[]): Promise<CreatedClient>;
  /**
   * A client written straight into the store, as `disarm admin client create` does: `null` for an
   * operator client, or an organisation's client with scopes the admin API would refuse (a row
   * from before schema migration 3).
   */
  storedClient(organisationId: string | null, scopes: string[]): Promise<CreatedClient>;
  /** POST /connect/token with client_secret_post. */
  tokenRequest(fields: Record<string, string>, headers?: Record<string, string>): Promise<Response>;
  /** A token for `client` (asserts 200). */
  token(client: CreatedClient, scope?: string): Promise<string>;
  close(): Promise<void>;
}

/** Starts the harness; `oauth` overrides parts of the OAuth configuration. */
export async function createOAuthHarness(
  options: {
    readonly oauth?: Partial<OAuthConfig>;
    readonly directory?: string;
    readonly keyEncryptionKey?: Uint8Array;
    readonly clock?: TestClock;
  } = {},
): Promise<OAuthHarness> {
  const directory = options.directory ?? (await mkdtemp(join(tmpdir(), 'disarm-oauth-')));
  const store = createSqliteStore({ path: join(directory, 'disarm.sqlite') });
  const clock = options.clock ?? createTestClock();
  const keyEncryptionKey = options.keyEncryptionKey ?? new Uint8Array(randomBytes(32));
  const logs: LogLine[] = [];
  const logAt =
    (level: string) =>
    (object: Record<string, unknown>, message?: string): void => {
      logs.push({ level, object, message });
    };
  const logger = {
    debug: logAt('debug'),
    info: logAt('info'),
    warn: logAt('warn'),
    error: logAt('error'),
  };
  const oauth = createOAuth({ store, clock, logger }, { keyEncryptionKey, ...options.oauth }, BASE);
  const adminToken = randomBytes(24).toString('hex');
  const api = createDisarmApi(
    { store, blobs: NO_BLOBS, events: NO_EVENTS, clock, logger },
    {
      publicBaseUrl: BASE,
      adminTokenHashes: [createHash('sha256').update(adminToken).digest('hex')],
    },
    { routes: oauth.routes, verifyBearer: oauth.verifyBearer },
  );
  const validator = await createOpenApiValidator(
    createOpenApiDocument({ publicBaseUrl: BASE, testMode: false, oauth: true }),
  );

  async function send(path: string, init: RequestInit = {}): Promise<Response> {
    const response = await api.fetch(new Request(`${BASE}${path}`, init));
    const text = await response.clone().text();
    const contentType = response.headers.get('Content-Type') ?? '';
    let body: unknown = text === '' ? undefined : text;
    if (contentType.includes('json')) body = JSON.parse(text) as unknown;
    const errors = validator.validate({
      method: init.method ?? 'GET',
      path,
      status: response.status,
      headers: response.headers,
      body,
    });
    expect(errors, `${init.method ?? 'GET'} ${path} -> ${response.status}`).toEqual([]);
    return response;
  }

  const harness: OAuthHarness = {
    store,
    clock,
    oauth,
    api,
    adminToken,
    keyEncryptionKey,
    directory,
    validator,
    logs,
    send,
    admin(method, path, body, token = adminToken) {
      return send(path, {
        method,
        headers: {
          Authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    },
    async organisation(plan = 'internal') {
      const response = await harness.admin('POST', '/v1/admin/organisations', {
        name: 'Org',
        ...(plan === null ? {} : { plan }),
      });
      expect(response.status).toBe(201);
      return ((await response.json()) as { id: string }).id;
    },
    async client(organisationId, scopes) {
      const response = await harness.admin(
        'POST',
        `/v1/admin/organisations/${organisationId}/clients`,
        scopes === undefined ? { name: 'test' } : { name: 'test', scopes },
      );
      expect(response.status).toBe(201);
      return (await response.json()) as CreatedClient;
    },
    async storedClient(organisationId, scopes) {
      const secret = await generateClientSecret(cryptoRandom);
      const clientId = newId('cli', cryptoRandom);
      await store.createOAuthClient({
        id: clientId,
        organisationId,
        name: 'stored',
        scopes,
        secretHashes: [secret.hash],
        createdAt: clock.now(),
        revokedAt: null,
      });
      return { clientId, clientSecret: secret.secret, organisationId, scopes };
    },
    tokenRequest(fields, headers = {}) {
      return send('/connect/token', {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...headers },
        body: new URLSearchParams(fields).toString(),
      });
    },
    async token(client, scope) {
      const response = await harness.tokenRequest({
        grant_type: 'client_credentials',
        client_id: client.clientId,
        client_secret: client.clientSecret,
        ...(scope === undefined ? {} : { scope }),
      });
      expect(response.status).toBe(200);
      return ((await response.json()) as { access_token: string }).access_token;
    },
    async close() {
      await store.close();
      if (options.directory === undefined) await rm(directory, { recursive: true, force: true });
    },
  };
  return harness;
}

/** `Authorization: Basic` for a client, form-urlencoded first (RFC 6749 2.3.1). */
export function basic(clientId: string, secret: string): string {
  const encode = (value: string): string => encodeURIComponent(value).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${encode(clientId)}:${encode(secret)}`).toString('base64')}`;
}
