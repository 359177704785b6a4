import { join } from 'node:path';

import { hashApiKey } from '@disarm/protocol';
import { createSqliteStore } from '@disarm/sqlite';
import { beforeAll, describe, expect, it } from 'vitest';

import { tempDir } from './_fixtures.ts';
import { runDisarm } from './_server.ts';
import type { CliRun } from './_server.ts';

let dataDir: string;

beforeAll(async () => {
  dataDir = await tempDir();
});

/** `disarm admin ...` against the test's data folder, given through the environment. */
function admin(...args: string[]): Promise<CliRun> {
  return runDisarm(['admin', ...args], { ...process.env, DISARM_DATA_DIR: dataDir });
}

function json(run: CliRun): Record<string, unknown> {
  expect(run.code, run.stderr).toBe(0);
  const lines = run.stdout.trimEnd().split('\n');
  expect(lines).toHaveLength(1);
  return JSON.parse(lines[0] ?? '') as Record<string, unknown>;
}

describe('disarm admin', () => {
  it('creates, lists, shows, suspends, activates and updates organisations', async () => {
    const human = await admin('org', 'create', '--name', 'Acme Ltd', '--plan', 'starter');
    expect(human.code, human.stderr).toBe(0);
    const acmeId = human.stdout.trim();
    expect(acmeId).toMatch(/^org_[0-9a-z]{20}$/);

    const payg = json(
      await admin(
        'org',
        'create',
        '--name=Pay Co',
        '--plan=payg',
        '--credit-pence=500',
        '--price-pence=12',
        '--rate-limit=99',
        '--json',
      ),
    );
    expect(payg).toMatchObject({
      name: 'Pay Co',
      plan: 'payg',
      planType: 'payg',
      status: 'active',
      creditBalancePence: 500,
      pricePerDocumentPence: 12,
      rateLimitPerMinute: 99,
    });
    const paygId = String(payg.id);

    const listed = json(await admin('org', 'list', '--json')) as {
      organisations: { id: string }[];
    };
    expect(listed.organisations.map((org) => org.id).sort()).toEqual([acmeId, paygId].sort());
    const table = await admin('org', 'list');
    expect(table.stdout).toContain(acmeId);
    expect(table.stdout).toContain('Acme Ltd');

    const shown = await admin('org', 'show', '--org', acmeId);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/plan\s+starter \(tier\)/);
    expect(shown.stdout).toMatch(/monthly allowance\s+1000/);

    expect(json(await admin('org', 'suspend', '--org', acmeId, '--json'))).toMatchObject({
      status: 'suspended',
    });
    expect((await admin('org', 'activate', '--org', acmeId)).stdout.trim()).toBe(
      `${acmeId} active`,
    );

    const updated = json(
      await admin(
        'org',
        'update',
        '--org',
        paygId,
        '--credit-pence-delta',
        '-150',
        '--policy',
        'vba-macro=reject',
        '--policy=pdf-javascript=reject,image-metadata=strip',
        '--json',
      ),
    );
    expect(updated).toMatchObject({
      creditBalancePence: 350,
      policy: { 'vba-macro': 'reject', 'pdf-javascript': 'reject', 'image-metadata': 'strip' },
    });
    const replanned = json(
      await admin(
        'org',
        'update',
        `--org=${acmeId}`,
        '--plan=growth',
        '--allowance=42',
        '--name=Acme',
        '--json',
      ),
    );
    expect(replanned).toMatchObject({ name: 'Acme', plan: 'growth', monthlyAllowance: 42 });
  });

  it('creates, lists and revokes API keys, storing only their hash', async () => {
    const orgId = (await admin('org', 'create', '--name=Keys', '--plan=internal')).stdout.trim();
    const created = json(
      await admin('key', 'create', '--org', orgId, '--name', 'zapier', '--json'),
    );
    expect(created).toMatchObject({ organisationId: orgId, name: 'zapier', revokedAt: null });
    expect(created).not.toHaveProperty('hash');
    const key = String(created.key);
    expect(key).toMatch(/^dsm_live_[0-9a-z]{43}$/);
    expect(String(created.displayPrefix)).toBe(key.slice(0, 13));

    const human = await admin('key', 'create', `--org=${orgId}`);
    const [humanId, humanKey] = human.stdout.trim().split('\n');
    expect(humanId).toMatch(/^key_/);
    expect(humanKey).toMatch(/^dsm_live_/);

    const store = createSqliteStore({ path: join(dataDir, 'disarm.sqlite') });
    try {
      expect(await store.findApiKeyByHash(await hashApiKey(key))).toMatchObject({
        id: created.id,
        organisationId: orgId,
      });
    } finally {
      await store.close();
    }

    const listed = json(await admin('key', 'list', '--org', orgId, '--json')) as {
      keys: Record<string, unknown>[];
    };
    expect(listed.keys).toHaveLength(2);
    expect(JSON.stringify(listed)).not.toContain(key);
    expect(JSON.stringify(listed)).not.toContain('hash');
    expect((await admin('key', 'list', `--org=${orgId}`)).stdout).toContain('zapier');

    const revoked = json(
      await admin('key', 'revoke', '--org', orgId, '--key', String(created.id), '--json'),
    );
    expect(revoked.revokedAt).toEqual(expect.any(String));
    expect((await admin('key', 'list', `--org=${orgId}`)).stdout).toMatch(/revoked\s+zapier/);
  });

  it('answers 1 for what does not exist and 64 for misuse', async () => {
    const missing = 'org_00000000000000000000';
    const refused: string[][] = [];
    const misused: string[][] = [];
    for (const args of [
      ['org', 'show', `--org=${missing}`],
      ['org', 'suspend', `--org=${missing}`],
      ['org', 'update', `--org=${missing}`, '--plan=starter'],
      ['key', 'create', `--org=${missing}`],
      ['key', 'list', `--org=${missing}`],
      ['key', 'revoke', `--org=${missing}`, '--key=key_00000000000000000000'],
    ]) {
      refused.push(args);
    }
    const refusedRuns = await Promise.all(refused.map((args) => admin(...args)));
    refusedRuns.forEach((run, index) => {
      expect(run.code, refused[index]?.join(' ')).toBe(1);
      expect(run.stderr).toMatch(/^disarm admin: no (organisation|key)/);
      expect(run.stdout).toBe('');
    });
    for (const args of [
      ['org', 'create', '--name=X'],
      ['org', 'create', '--name=X', '--plan=gold'],
      ['org', 'create', '--name=X', '--plan=starter', '--credit-pence=-5'],
      ['org', 'create', '--name=  ', '--plan=starter'],
      ['org', 'update', `--org=${missing}`],
      ['org', 'update', `--org=${missing}`, '--policy=macros=reject'],
      ['key', 'revoke', `--org=${missing}`],
      ['org', 'explode'],
    ]) {
      misused.push(args);
    }
    const misusedRuns = await Promise.all(misused.map((args) => admin(...args)));
    misusedRuns.forEach((run, index) => {
      expect(run.code, misused[index]?.join(' ')).toBe(64);
    });
  });

  it('documents its commands', async () => {
    const help = await runDisarm(['admin', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('org');
    expect(help.stdout).toContain('key');
    expect(help.stdout).toContain('DISARM_DATA_DIR');
    const create = await runDisarm(['admin', 'org', 'create', '--help']);
    for (const flag of [
      '--name',
      '--plan',
      '--credit-pence',
      '--price-pence',
      '--allowance',
      '--rate-limit',
      '--json',
      '--data-dir',
    ]) {
      expect(create.stdout).toContain(flag);
    }
  });
});

describe('disarm admin org update --policy', () => {
  it('merges by finding kind, and replaces only with --replace-policy', async () => {
    const org = String(
      json(
        await admin(
          'org',
          'create',
          '--name=Policy Co',
          '--plan=starter',
          '--policy=vba-macro=reject',
          '--json',
        ),
      ).id,
    );
    const merged = json(
      await admin('org', 'update', `--org=${org}`, '--policy=pdf-javascript=reject', '--json'),
    );
    expect(merged.policy).toEqual({ 'vba-macro': 'reject', 'pdf-javascript': 'reject' });
    const changed = json(
      await admin('org', 'update', `--org=${org}`, '--policy=vba-macro=strip', '--json'),
    );
    expect(changed.policy).toEqual({ 'vba-macro': 'strip', 'pdf-javascript': 'reject' });
    const replaced = json(
      await admin(
        'org',
        'update',
        `--org=${org}`,
        '--replace-policy',
        '--policy=embedded-object=reject',
        '--json',
      ),
    );
    expect(replaced.policy).toEqual({ 'embedded-object': 'reject' });
    const reset = json(await admin('org', 'update', `--org=${org}`, '--replace-policy', '--json'));
    expect(reset.policy).toEqual({});
    const help = await admin('org', 'update', '--help');
    expect(help.stdout).toContain('--policy merges by finding kind');
    expect(help.stdout).toContain('--replace-policy');
  });
});
