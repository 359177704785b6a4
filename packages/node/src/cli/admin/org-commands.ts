import type { Policy } from '@disarm/core';
import { cryptoRandom, isPlanName, newId, PLANS } from '@disarm/protocol';
import type {
  Organisation,
  OrganisationPatch,
  PlanName,
  PlanTermsOverride,
  StateStore,
} from '@disarm/protocol';
import { InvalidArgumentError } from 'commander';
import type { Command } from 'commander';

import { UsageError } from '../_exit-codes.ts';
import {
  parseInteger,
  parseNonNegativeInteger,
  parsePolicy,
  parsePositiveInteger,
} from '../_parse.ts';
import type { CliContext } from '../context.ts';
import { adminAction, RefusedError, withAdminOptions } from './_common.ts';

/** Flags that set an organisation's terms. */
interface TermsFlags {
  readonly pricePence?: number;
  readonly allowance?: number;
  readonly rateLimit?: number;
  readonly maxUploadBytes?: number;
  readonly policy?: Policy;
}

interface CreateFlags extends TermsFlags {
  readonly name: string;
  readonly plan: PlanName;
  readonly creditPence?: number;
}

interface UpdateFlags extends TermsFlags {
  readonly org: string;
  readonly name?: string;
  readonly plan?: PlanName;
  readonly creditPenceDelta?: number;
  readonly replacePolicy?: true;
}

interface OrgFlags {
  readonly org: string;
}

const PLAN_NAMES = Object.keys(PLANS).join('|');

/** Adds `disarm admin org create|list|show|suspend|activate|update` under `admin`. */
export function registerOrgCommands(admin: Command, context: CliContext): void {
  const org = admin.command('org').summary('organisations');

  const create = withTermsOptions(
    withAdminOptions(
      org
        .command('create')
        .summary('create an organisation on a plan; prints its id')
        .requiredOption('--name <name>', 'display name', parseName)
        .requiredOption('--plan <plan>', PLAN_NAMES, parsePlan)
        .option('--credit-pence <n>', 'starting prepaid credit in pence', parseNonNegativeInteger),
    ),
  );
  create.action(
    adminAction<CreateFlags>(create, context, async ({ store, flags, now, print }) => {
      const organisation = await store.createOrganisation(
        {
          id: newId('org', cryptoRandom),
          name: flags.name,
          plan: flags.plan,
          ...termsOf(flags),
          ...(flags.creditPence === undefined ? {} : { creditBalancePence: flags.creditPence }),
          ...(flags.policy === undefined ? {} : { policy: flags.policy }),
        },
        now,
      );
      print(organisation, () => organisation.id);
    }),
  );

  const list = withAdminOptions(org.command('list').summary('list every organisation'));
  list.action(
    adminAction(list, context, async ({ store, now, print }) => {
      const organisations = await store.listOrganisations(now);
      print({ organisations }, () =>
        organisations.length === 0
          ? '(no organisations)'
          : organisations.map((item) => summaryLine(item)).join('\n'),
      );
    }),
  );

  const show = withAdminOptions(
    org
      .command('show')
      .summary('show one organisation')
      .requiredOption('--org <id>', 'organisation id'),
  );
  show.action(
    adminAction<OrgFlags>(show, context, async ({ store, flags, now, print }) => {
      const organisation = await store.getOrganisation(flags.org, now);
      if (!organisation) throw new RefusedError(`no organisation ${flags.org}`);
      print(organisation, () => details(organisation));
    }),
  );

  for (const [name, status, summary] of [
    ['suspend', 'suspended', 'suspend an organisation (its submissions get 403 CustomerSuspended)'],
    ['activate', 'active', 'reactivate a suspended organisation'],
  ] as const) {
    const command = withAdminOptions(
      org.command(name).summary(summary).requiredOption('--org <id>', 'organisation id'),
    );
    command.action(
      adminAction<OrgFlags>(command, context, async ({ store, flags, now, print }) => {
        const organisation = await store.updateOrganisation(flags.org, { status }, now);
        if (!organisation) throw new RefusedError(`no organisation ${flags.org}`);
        print(organisation, () => `${organisation.id} ${organisation.status}`);
      }),
    );
  }

  const update = withTermsOptions(
    withAdminOptions(
      org
        .command('update')
        .summary("change an organisation's plan, terms, credit or policy")
        .requiredOption('--org <id>', 'organisation id')
        .option('--name <name>', 'new display name', parseName)
        .option(
          '--plan <plan>',
          `re-provision on ${PLAN_NAMES} (terms reset to the plan's)`,
          parsePlan,
        )
        .option(
          '--credit-pence-delta <n>',
          'add (or, negative, take) prepaid credit in pence',
          parseInteger,
        )
        .option(
          '--replace-policy',
          'replace the whole policy with the --policy given (none: every kind back to strip) ' +
            'instead of merging them by kind into the current one',
        ),
    ),
  ).addHelpText(
    'after',
    '\n--policy merges by finding kind: kinds not named keep their current action.\n' +
      'With --replace-policy the given kinds become the whole policy.',
  );
  update.action(
    adminAction<UpdateFlags>(update, context, async ({ store, flags, now, print }) => {
      const terms = termsOf(flags);
      const patch: OrganisationPatch = {
        ...(flags.name === undefined ? {} : { name: flags.name }),
        ...(flags.plan === undefined ? {} : { plan: flags.plan }),
        ...terms,
        ...(flags.creditPenceDelta === undefined
          ? {}
          : { creditDeltaPence: flags.creditPenceDelta }),
        ...(await policyPatch(store, flags, now)),
      };
      if (Object.keys(patch).length === 0) throw new UsageError('nothing to update (see --help)');
      const organisation = await store.updateOrganisation(flags.org, patch, now);
      if (!organisation) throw new RefusedError(`no organisation ${flags.org}`);
      print(organisation, () => details(organisation));
    }),
  );
}

/** `--policy` merged by kind into the current policy, or with `--replace-policy` replacing it. */
async function policyPatch(
  store: StateStore,
  flags: UpdateFlags,
  now: Date,
): Promise<{ policy?: Policy }> {
  if (flags.replacePolicy === true) return { policy: flags.policy ?? {} };
  if (flags.policy === undefined) return {};
  const current = await store.getOrganisation(flags.org, now);
  if (!current) throw new RefusedError(`no organisation ${flags.org}`);
  return { policy: { ...current.policy, ...flags.policy } };
}

function withTermsOptions(command: Command): Command {
  return command
    .option(
      '--price-pence <n>',
      'pay-as-you-go price per document in pence',
      parseNonNegativeInteger,
    )
    .option('--allowance <n>', 'documents per billing period (tier plans)', parseNonNegativeInteger)
    .option('--rate-limit <n>', 'API requests per minute', parsePositiveInteger)
    .option('--max-upload-bytes <n>', 'upload-lane ceiling in bytes', parsePositiveInteger)
    .option(
      '--policy <kind=action>',
      'strip (default) or reject a finding kind; repeatable, or comma-separated',
      parsePolicy,
    );
}

function termsOf(flags: TermsFlags): { terms?: Partial<PlanTermsOverride> } {
  const terms: Partial<Record<keyof PlanTermsOverride, number>> = {};
  if (flags.pricePence !== undefined) terms.pricePerDocumentPence = flags.pricePence;
  if (flags.allowance !== undefined) terms.monthlyAllowance = flags.allowance;
  if (flags.rateLimit !== undefined) terms.rateLimitPerMinute = flags.rateLimit;
  if (flags.maxUploadBytes !== undefined) terms.maxUploadSizeBytes = flags.maxUploadBytes;
  return Object.keys(terms).length === 0 ? {} : { terms };
}

function parsePlan(value: string): PlanName {
  if (!isPlanName(value)) throw new InvalidArgumentError(`expected one of ${PLAN_NAMES}`);
  return value;
}

function parseName(value: string): string {
  const name = value.trim();
  if (name.length === 0 || name.length > 200) {
    throw new InvalidArgumentError('expected 1 to 200 characters');
  }
  return name;
}

function summaryLine(organisation: Organisation): string {
  return [
    organisation.id,
    organisation.status.padEnd(9),
    (organisation.plan ?? 'none').padEnd(8),
    organisation.name,
  ].join('  ');
}

function details(organisation: Organisation): string {
  const rows: [string, string][] = [
    ['id', organisation.id],
    ['name', organisation.name],
    ['status', organisation.status],
    ['plan', `${organisation.plan ?? 'none'} (${organisation.planType ?? 'not provisioned'})`],
    ['monthly allowance', String(organisation.monthlyAllowance)],
    [
      'period',
      `${organisation.periodStart.toISOString()} .. ${organisation.periodEnd.toISOString()}`,
    ],
    ['used this period', String(organisation.periodUsedSubmissions)],
    ['credit (pence)', String(organisation.creditBalancePence)],
    [
      'price (pence)',
      organisation.pricePerDocumentPence === null
        ? '-'
        : String(organisation.pricePerDocumentPence),
    ],
    ['rate limit/min', String(organisation.rateLimitPerMinute)],
    ['max file bytes', String(organisation.maxFileSizeBytes)],
    ['max upload bytes', String(organisation.maxUploadSizeBytes)],
    ['policy', policyText(organisation.policy)],
    ['created', organisation.createdAt.toISOString()],
  ];
  return rows.map(([label, value]) => `${label.padEnd(18)} ${value}`).join('\n');
}

function policyText(policy: Policy): string {
  const entries = Object.entries(policy);
  return entries.length === 0
    ? 'strip everything'
    : entries.map(([kind, action]) => `${kind}=${action}`).join(', ');
}
