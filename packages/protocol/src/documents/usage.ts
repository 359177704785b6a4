import type { Organisation } from '../domain/types.ts';

/**
 * The usage headers (README "Plans, metering and usage") for an organisation's state: allowance
 * fields on tier plans, the credit balance on pay-as-you-go, none on internal plans.
 */
export function usageHeaders(organisation: Organisation): Record<string, string> {
  switch (organisation.planType) {
    case 'tier':
      return {
        'X-CDR-Usage-Used': String(organisation.periodUsedSubmissions),
        'X-CDR-Usage-Allowance': String(organisation.monthlyAllowance),
        'X-CDR-Usage-Remaining': String(
          Math.max(0, organisation.monthlyAllowance - organisation.periodUsedSubmissions),
        ),
      };
    case 'payg':
      return { 'X-CDR-Credit-Balance-Pence': String(organisation.creditBalancePence) };
    case 'internal':
    case null:
      return {};
  }
}
