/**
 * The HTTP conformance harness: one suite, run against the fetch handler in process and against
 * a real `disarm serve` over loopback. Every API response the suite sees is validated against the
 * served OpenAPI document (status, content type, headers, body); an undocumented status fails.
 */
import { expect } from 'vitest';

import { createOpenApiValidator } from '@disarm/protocol/testing';
import type { OpenApiValidator } from '@disarm/protocol/testing';

/** Where the suite sends its requests. */
export interface ConformanceTarget {
  readonly name: string;
  readonly apiUrl: string;
  readonly storageUrl: string;
  readonly adminToken: string;
  /** Over real sockets (raw HTTP cases such as lying Content-Length run only there). */
  readonly loopback: boolean;
  /** Sends a request to the API or the storage origin (absolute URL). */
  send(url: string, init?: RequestInit): Promise<Response>;
  /** Whether the blob store still holds `key` (retention checks). */
  blobExists(key: string): Promise<boolean>;
  /** Moves the manual clock and runs a retention sweep. */
  advanceClock(milliseconds: number): Promise<void>;
  stop(): Promise<void>;
}

/** A target wrapped with response validation and provisioning helpers. */
export interface Client {
  readonly target: ConformanceTarget;
  readonly validator: OpenApiValidator;
  /** Request to the API (`path` relative to its base); the response is validated. */
  api(path: string, init?: RequestInit): Promise<Response>;
  /** Request to an absolute URL (storage links); not validated against the API contract. */
  raw(url: string, init?: RequestInit): Promise<Response>;
  admin(method: string, path: string, body?: unknown): Promise<Response>;
  newOrganisation(body: Record<string, unknown>): Promise<{ id: string; key: string }>;
}

/** Builds a client over `target` and loads the served contract. */
export async function createClient(target: ConformanceTarget): Promise<Client> {
  const contract = (await (await target.send(`${target.apiUrl}/v1/openapi.json`)).json()) as Record<
    string,
    unknown
  >;
  const validator = await createOpenApiValidator(contract);
  const client: Client = {
    target,
    validator,
    async api(path, init = {}) {
      const url = path.startsWith('http') ? path : `${target.apiUrl}${path}`;
      const response = await target.send(url, { redirect: 'manual', ...init });
      const copy = response.clone();
      const text = await copy.text();
      const contentType = copy.headers.get('Content-Type') ?? '';
      let body: unknown = text === '' ? undefined : text;
      if (contentType.includes('json') || contentType.startsWith('text/plain')) {
        try {
          body = JSON.parse(text) as unknown;
        } catch {
          body = text;
        }
      }
      const errors = validator.validate({
        method: init.method ?? 'GET',
        path: new URL(url).pathname,
        status: response.status,
        headers: response.headers,
        body,
      });
      expect(
        errors,
        `${init.method ?? 'GET'} ${url} -> ${response.status} breaks the contract`,
      ).toEqual([]);
      return response;
    },
    raw(url, init = {}) {
      return target.send(url, { redirect: 'manual', ...init });
    },
    admin(method, path, body) {
      return client.api(path, {
        method,
        headers: {
          Authorization: `Bearer ${target.adminToken}`,
          ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
    },
    async newOrganisation(body) {
      const created = await client.admin('POST', '/v1/admin/organisations', {
        name: 'Test Org',
        ...body,
      });
      expect(created.status).toBe(201);
      const { id } = (await created.json()) as { id: string };
      const key = await client.admin('POST', `/v1/admin/organisations/${id}/keys`, { name: 'ci' });
      expect(key.status).toBe(201);
      return { id, key: ((await key.json()) as { key: string }).key };
    },
  };
  return client;
}

/** The document envelope as the tests read it. */
export interface Envelope {
  id: string;
  status: 'pending' | 'processing' | 'completed' | 'rejected' | 'failed';
  statusUrl: string;
  outcome?: string;
  modifications?: string[];
  outputFormat?: string;
  findings?: {
    kind: string;
    count: number;
    locations: { member?: string[]; part?: string; sheet?: string; page?: number; count: number }[];
  }[];
  reason?: string;
  reasonDetail?: string;
  threatNames?: string[];
  submittedAt: string;
  completedAt?: string;
  downloadUrl?: string;
  downloadExpiresAt?: string;
  pollAfterSeconds?: number;
  helpUrl?: string;
  deleteAfterDownload?: boolean;
  deletedAt?: string;
}

/** A problem body. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  code: string;
  detail: string;
  [member: string]: unknown;
}

/** Polls `GET /v1/documents/{id}` until the status is terminal (bounded). */
export async function waitForTerminal(client: Client, key: string, id: string): Promise<Envelope> {
  for (let attempt = 0; attempt < 600; attempt += 1) {
    const response = await client.api(`/v1/documents/${id}`, { headers: { 'X-Api-Key': key } });
    const envelope = (await response.json()) as Envelope;
    if (envelope.status !== 'pending' && envelope.status !== 'processing') return envelope;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`document ${id} did not finish`);
}

/** A multipart body with one file (and extra fields). */
export function multipart(
  file: { name: string; bytes: Uint8Array } | undefined,
  fields: Readonly<Record<string, string>> = {},
): FormData {
  const form = new FormData();
  if (file) form.append('file', new Blob([new Uint8Array(file.bytes)]), file.name);
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  return form;
}
