import { DEFAULT_CLAMD_PORT, FINDING_KINDS } from '@disarm/core';
import type { FindingKind, Policy, PolicyAction } from '@disarm/core';
import { InvalidArgumentError } from 'commander';

/** Largest TCP port. */
const MAX_PORT = 65_535;

/** Commander parser: an integer of at least 1. */
export function parsePositiveInteger(value: string): number {
  const number = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(number) || number < 1) {
    throw new InvalidArgumentError('expected a positive integer');
  }
  return number;
}

/** Commander parser: an integer of at least 0. */
export function parseNonNegativeInteger(value: string): number {
  const number = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(number)) {
    throw new InvalidArgumentError('expected a non-negative integer');
  }
  return number;
}

/** Commander parser: an integer, possibly negative. */
export function parseInteger(value: string): number {
  const number = Number(value);
  if (!/^-?\d+$/.test(value) || !Number.isSafeInteger(number)) {
    throw new InvalidArgumentError('expected an integer');
  }
  return number;
}

/** Commander parser: a TCP port, `0` for any free one. */
export function parsePort(value: string): number {
  const number = Number(value);
  if (!/^\d+$/.test(value) || number > MAX_PORT) {
    throw new InvalidArgumentError(`expected a port from 0 to ${MAX_PORT}`);
  }
  return number;
}

/** Where clamd listens, as `--clamd` gives it. */
export type ClamdAddress =
  { readonly socket: string } | { readonly host: string; readonly port: number };

/**
 * Commander parser for `--clamd`: a Unix socket path (anything with a `/`), or `host:port` (a
 * bare host means clamd's port 3310; an IPv6 address goes in brackets, `[::1]:3310`).
 */
export function parseClamdAddress(value: string): ClamdAddress {
  if (value.includes('/')) return { socket: value };
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]]+))(?::(\d+))?$/.exec(value);
  const host = match?.[1] ?? match?.[2];
  const port = match?.[3] === undefined ? DEFAULT_CLAMD_PORT : Number(match[3]);
  if (host === undefined || port < 1 || port > MAX_PORT) {
    throw new InvalidArgumentError(
      'expected a Unix socket path (/run/clamav/clamd.ctl) or host:port (127.0.0.1:3310)',
    );
  }
  return { host, port };
}

/** Commander parser: an absolute http(s) URL, without a trailing slash. */
export function parseBaseUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidArgumentError('expected an absolute URL such as https://cdr.example.com');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new InvalidArgumentError('expected an http or https URL');
  }
  if (url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') {
    throw new InvalidArgumentError('expected a base URL without query, fragment or credentials');
  }
  return url.href.replace(/\/+$/, '');
}

/** Commander parser for repeatable `--policy kind=strip|reject` (also comma-separated). */
export function parsePolicy(value: string, previous: Policy | undefined): Policy {
  const policy: Partial<Record<FindingKind, PolicyAction>> = { ...previous };
  for (const item of value.split(',')) {
    const [kind = '', action = '', ...rest] = item.trim().split('=');
    if (!isFindingKind(kind)) {
      throw new InvalidArgumentError(`unknown finding kind "${kind}" (see disarm clean --help)`);
    }
    if ((action !== 'strip' && action !== 'reject') || rest.length > 0) {
      throw new InvalidArgumentError(`expected ${kind}=strip or ${kind}=reject`);
    }
    policy[kind] = action;
  }
  return policy;
}

function isFindingKind(kind: string): kind is FindingKind {
  return Object.hasOwn(FINDING_KINDS, kind);
}
