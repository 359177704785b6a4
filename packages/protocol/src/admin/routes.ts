import { FINDING_KINDS } from '@disarm/core';
import type { Policy, PolicyAction } from '@disarm/core';

import { generateApiKey } from '../auth/api-keys.ts';
import { SCOPE_ADMIN } from '../auth/principal.ts';
import { newId } from '../domain/ids.ts';
import { isPlanName } from '../domain/plans.ts';
import type { PlanName } from '../domain/plans.ts';
import type { ApiKeyRecord, Organisation } from '../domain/types.ts';
import type { Handler, RequestContext } from '../http/context.ts';
import { asJsonObject, readJsonBody } from '../http/json-body.ts';
import { jsonResponse } from '../http/negotiation.ts';
import { ProblemError } from '../http/problem-error.ts';
import { FieldErrors } from '../http/validation.ts';
import type { OrganisationPatch, PlanTermsOverride } from '../ports.ts';
import { forgetRateLimits } from '../limits/rate-limit.ts';

const MAX_NAME_CHARS = 200;
const TERM_FIELDS = [
  'monthlyAllowance',
  'rateLimitPerMinute',
  'maxUploadSizeBytes',
  'pricePerDocumentPence',
] as const;

/** Only a caller with scope `cdr.admin` gets past; API keys never carry it. */
export function assertAdmin(context: RequestContext): void {
  if (!context.principal?.scopes.has(SCOPE_ADMIN)) {
    // A valid API key never reaches admin routes: 403 (README "Credentials: API keys").
    throw new ProblemError('Forbidden', {
      detail:
        context.principal?.credential === 'api_key'
          ? `An API key never works on admin routes: use a bearer token with scope ${SCOPE_ADMIN}.`
          : `Admin routes need scope ${SCOPE_ADMIN}; this credential does not carry it.`,
    });
  }
}

/** The admin view of an organisation. */
export function toAdminOrganisation(organisation: Organisation): Record<string, unknown> {
  return {
    id: organisation.id,
    name: organisation.name,
    status: organisation.status,
    plan: organisation.plan,
    planType: organisation.planType,
    monthlyAllowance: organisation.monthlyAllowance,
    rateLimitPerMinute: organisation.rateLimitPerMinute,
    maxFileSizeBytes: organisation.maxFileSizeBytes,
    maxUploadSizeBytes: organisation.maxUploadSizeBytes,
    pricePerDocumentPence: organisation.pricePerDocumentPence,
    creditBalancePence: organisation.creditBalancePence,
    periodStart: organisation.periodStart.toISOString(),
    periodEnd: organisation.periodEnd.toISOString(),
    periodUsedSubmissions: organisation.periodUsedSubmissions,
    policy: organisation.policy,
    createdAt: organisation.createdAt.toISOString(),
  };
}

function toAdminKey(record: ApiKeyRecord): Record<string, unknown> {
  return {
    id: record.id,
    name: record.name,
    displayPrefix: record.displayPrefix,
    createdAt: record.createdAt.toISOString(),
    revokedAt: record.revokedAt?.toISOString() ?? null,
  };
}

function parsePolicy(value: unknown, errors: FieldErrors): Policy | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    errors.add('body.policy', 'must be an object of finding kind to "strip" or "reject"');
    return undefined;
  }
  const policy: Partial<Record<keyof typeof FINDING_KINDS, PolicyAction>> = {};
  for (const [kind, action] of Object.entries(value as Record<string, unknown>)) {
    if (!Object.hasOwn(FINDING_KINDS, kind)) {
      errors.add(`body.policy.${kind}`, 'unknown finding kind');
    } else if (action !== 'strip' && action !== 'reject') {
      errors.add(`body.policy.${kind}`, 'must be "strip" or "reject"');
    } else {
      policy[kind as keyof typeof FINDING_KINDS] = action;
    }
  }
  return policy;
}

function parseTerms(value: unknown, errors: FieldErrors): Partial<PlanTermsOverride> | undefined {
  if (value === undefined) return undefined;
  const terms =
    typeof value === 'object' && value !== null && !Array.isArray(value) ? value : undefined;
  if (!terms) {
    errors.add('body.terms', 'must be an object');
    return undefined;
  }
  const result: Partial<Record<(typeof TERM_FIELDS)[number], number>> = {};
  for (const [key, term] of Object.entries(terms)) {
    if (!(TERM_FIELDS as readonly string[]).includes(key)) {
      errors.add(`body.terms.${key}`, `unknown term; one of ${TERM_FIELDS.join(', ')}`);
    } else if (typeof term !== 'number' || !Number.isSafeInteger(term) || term < 0) {
      errors.add(`body.terms.${key}`, 'must be a whole number, 0 or more');
    } else {
      result[key as (typeof TERM_FIELDS)[number]] = term;
    }
  }
  return result;
}

function parseName(value: unknown, errors: FieldErrors, required: boolean): string | undefined {
  if (value === undefined && !required) return undefined;
  if (typeof value !== 'string' || value.trim().length === 0 || value.length > MAX_NAME_CHARS) {
    errors.add('body.name', `required, 1 to ${MAX_NAME_CHARS} characters`);
    return undefined;
  }
  return value.trim();
}

function parsePlan(value: unknown, errors: FieldErrors): PlanName | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !isPlanName(value)) {
    errors.add('body.plan', 'one of starter, growth, business, volume, payg, internal');
    return undefined;
  }
  return value;
}

function rejectUnknown(
  body: Record<string, unknown>,
  allowed: readonly string[],
  errors: FieldErrors,
): void {
  for (const key of Object.keys(body)) {
    if (!allowed.includes(key))
      errors.add(`body.${key}`, `unknown property; allowed: ${allowed.join(', ')}`);
  }
}

async function loadOrganisation(context: RequestContext): Promise<Organisation> {
  const organisation = await context.api.store.getOrganisation(
    context.params.organisationId ?? '',
    context.api.clock.now(),
  );
  if (!organisation) throw new ProblemError('OrganisationNotFound');
  return organisation;
}

/** `POST /v1/admin/organisations`. */
export const createOrganisation: Handler = async (context) => {
  assertAdmin(context);
  const { api, request } = context;
  const body = asJsonObject(await readJsonBody(request));
  const errors = new FieldErrors();
  rejectUnknown(body, ['name', 'plan', 'creditPence', 'terms', 'policy'], errors);
  const name = parseName(body.name, errors, true);
  const plan = parsePlan(body.plan, errors);
  const terms = parseTerms(body.terms, errors);
  const policy = parsePolicy(body.policy, errors);
  const credit = body.creditPence;
  if (
    credit !== undefined &&
    (typeof credit !== 'number' || !Number.isSafeInteger(credit) || credit < 0)
  ) {
    errors.add('body.creditPence', 'must be a whole number of pence, 0 or more');
  }
  errors.throwIfAny();
  const organisation = await api.store.createOrganisation(
    {
      id: newId('org', api.random),
      name: name ?? '',
      plan: plan ?? null,
      ...(terms ? { terms } : {}),
      ...(typeof credit === 'number' ? { creditBalancePence: credit } : {}),
      ...(policy ? { policy } : {}),
    },
    api.clock.now(),
  );
  api.logger.info(
    { organisationId: organisation.id, plan: organisation.plan },
    'organisation created',
  );
  return jsonResponse(request, toAdminOrganisation(organisation), { status: 201 });
};

/** `GET /v1/admin/organisations`. */
export const listOrganisations: Handler = async (context) => {
  assertAdmin(context);
  const organisations = await context.api.store.listOrganisations(context.api.clock.now());
  return jsonResponse(context.request, { organisations: organisations.map(toAdminOrganisation) });
};

/** `GET /v1/admin/organisations/{organisationId}`. */
export const getOrganisation: Handler = async (context) => {
  assertAdmin(context);
  return jsonResponse(context.request, toAdminOrganisation(await loadOrganisation(context)));
};

/** `PATCH /v1/admin/organisations/{organisationId}`: plan, terms, credit, status, policy. */
export const updateOrganisation: Handler = async (context) => {
  assertAdmin(context);
  const { api, request } = context;
  const existing = await loadOrganisation(context);
  const body = asJsonObject(await readJsonBody(request));
  const errors = new FieldErrors();
  rejectUnknown(body, ['name', 'status', 'plan', 'terms', 'creditDeltaPence', 'policy'], errors);
  const name = parseName(body.name, errors, false);
  const plan = parsePlan(body.plan, errors);
  const terms = parseTerms(body.terms, errors);
  const policy = parsePolicy(body.policy, errors);
  const status = body.status;
  if (status !== undefined && status !== 'active' && status !== 'suspended') {
    errors.add('body.status', 'must be "active" or "suspended"');
  }
  const delta = body.creditDeltaPence;
  if (delta !== undefined && (typeof delta !== 'number' || !Number.isSafeInteger(delta))) {
    errors.add('body.creditDeltaPence', 'must be a whole number of pence');
  }
  errors.throwIfAny();
  const patch: OrganisationPatch = {
    ...(name !== undefined ? { name } : {}),
    ...(status === 'active' || status === 'suspended' ? { status } : {}),
    ...(plan !== undefined ? { plan } : {}),
    ...(terms ? { terms } : {}),
    ...(typeof delta === 'number' ? { creditDeltaPence: delta } : {}),
    ...(policy ? { policy } : {}),
  };
  const updated = await api.store.updateOrganisation(existing.id, patch, api.clock.now());
  forgetRateLimits(api);
  if (!updated) throw new ProblemError('OrganisationNotFound');
  api.logger.info(
    { organisationId: updated.id, changes: Object.keys(patch) },
    'organisation updated',
  );
  return jsonResponse(request, toAdminOrganisation(updated));
};

/** `POST /v1/admin/organisations/{organisationId}/keys`: the key is in this response only. */
export const createApiKey: Handler = async (context) => {
  assertAdmin(context);
  const { api, request } = context;
  const organisation = await loadOrganisation(context);
  const hasBody = request.headers.get('Content-Length') !== '0' && request.body !== null;
  const body = hasBody ? asJsonObject(await readJsonBody(request)) : {};
  const errors = new FieldErrors();
  rejectUnknown(body, ['name'], errors);
  const name = body.name === undefined ? 'default' : parseName(body.name, errors, true);
  errors.throwIfAny();
  const made = await generateApiKey(api.random);
  const record: ApiKeyRecord = {
    id: newId('key', api.random),
    organisationId: organisation.id,
    name: name ?? 'default',
    displayPrefix: made.displayPrefix,
    hash: made.hash,
    createdAt: api.clock.now(),
    revokedAt: null,
  };
  await api.store.createApiKey(record);
  api.logger.info({ organisationId: organisation.id, keyId: record.id }, 'api key created');
  return jsonResponse(request, { ...toAdminKey(record), key: made.key }, { status: 201 });
};

/** `GET /v1/admin/organisations/{organisationId}/keys`: revoked keys stay listed. */
export const listApiKeys: Handler = async (context) => {
  assertAdmin(context);
  const organisation = await loadOrganisation(context);
  const keys = await context.api.store.listApiKeys(organisation.id);
  return jsonResponse(context.request, { keys: keys.map(toAdminKey) });
};

/** `DELETE /v1/admin/organisations/{organisationId}/keys/{keyId}`: revokes (idempotent). */
export const revokeApiKey: Handler = async (context) => {
  assertAdmin(context);
  const { api } = context;
  const organisation = await loadOrganisation(context);
  const revoked = await api.store.revokeApiKey(
    organisation.id,
    context.params.keyId ?? '',
    api.clock.now(),
  );
  if (!revoked) throw new ProblemError('ApiKeyNotFound');
  // Refused from the next request on here; other processes within the cache's time-to-live.
  api.apiKeys.clear();
  api.logger.info({ organisationId: organisation.id, keyId: revoked.id }, 'api key revoked');
  return jsonResponse(context.request, toAdminKey(revoked));
};

/** `POST /v1/admin/clock` (test mode only): moves the manual clock forward. */
export const advanceClock: Handler = async (context) => {
  assertAdmin(context);
  const { api, request } = context;
  const clock = api.settings.manualClock;
  if (!clock) throw new ProblemError('NotFound');
  const body = asJsonObject(await readJsonBody(request));
  const errors = new FieldErrors();
  rejectUnknown(body, ['advanceSeconds'], errors);
  const seconds = body.advanceSeconds;
  if (typeof seconds !== 'number' || !Number.isSafeInteger(seconds) || seconds < 0) {
    errors.add('body.advanceSeconds', 'required, a whole number of seconds, 0 or more');
  }
  errors.throwIfAny();
  // The embedding runs its retention sweep at the new time before this resolves.
  const now = await clock.advance((seconds as number) * 1000);
  api.logger.warn({ advanceSeconds: seconds, now: now.toISOString() }, 'test clock advanced');
  return jsonResponse(request, { now: now.toISOString() });
};
