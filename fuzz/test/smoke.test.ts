/**
 * The fuzzing smoke CI runs: every target for a few seconds from a fixed seed, coverage-guided,
 * with every property checked (one outcome, in budget, idempotent, memory under the bound; for
 * the HTTP front, no 500 and the contract). Any finding fails the test with what was found and
 * how to replay it. The long runs are `npm run fuzz` (bench/RESULTS-fuzz.md).
 */
import { afterAll, describe, expect, it } from 'vitest';

import { HANG_MS, runCampaign } from '../src/campaign.ts';
import type { CampaignResult } from '../src/campaign.ts';
import { Executor } from '../src/exec/executor.ts';
import { TARGETS } from '../src/targets.ts';

/** Seconds each target fuzzes: nine targets stay well under a minute with start-up. */
const SMOKE_SECONDS_PER_TARGET = 2;
const SMOKE_SEED = 30_007;

// The engine targets share one executor process, so its start-up is paid once.
const engine = new Executor({ scope: 'engine', hangMs: HANG_MS });
afterAll(async () => {
  await engine.close();
});

function describeFindings(result: CampaignResult): string[] {
  return result.findings.map(
    (finding) =>
      `${finding.kind}: ${finding.message}\n  recipe ${JSON.stringify(finding.recipe)}\n  replay: npm run fuzz -- --replay ${finding.savedAs ?? '<file>'} --target ${result.target}`,
  );
}

describe('fuzz smoke', () => {
  it.each(TARGETS.map((target) => [target.name, target] as const))(
    '%s: no crash, hang, fault or property failure',
    async (_name, target) => {
      const result = await runCampaign({
        target,
        seconds: SMOKE_SECONDS_PER_TARGET,
        seed: SMOKE_SEED,
        quickSeeds: true,
        ...(target.kind === 'engine' ? { executor: engine } : {}),
      });
      expect(result.executions).toBeGreaterThan(0);
      expect(describeFindings(result)).toEqual([]);
    },
  );
});
