import { buildGzip, buildImage, buildRawZip, deflateBomb, nestedZips } from '@disarm/fixtures';
import { describe, expect, it, vi } from 'vitest';

import { disarm } from '../../disarm.ts';
import type { DisarmOptions } from '../../disarm.ts';
import type { Outcome } from '../../outcome.ts';
import { builtinScanner } from '../../scan/eicar.ts';
import type { Scanner } from '../../scan/scanner.ts';
import { scaledMs } from '@disarm/fixtures/time-budget';

// These tests run for minutes on a busy machine: one hang guard for the file, scaled by the
// machine's load when it starts, so that load makes them slower, never red.
vi.setConfig({ testTimeout: scaledMs(120_000) });

const KiB = 1024;

/** The built-in scanner, counting the files and members it is shown. */
function countingScanner(): Scanner & { calls: number } {
  const scanner = {
    name: 'counting',
    calls: 0,
    scan(bytes: Uint8Array, context: Parameters<Scanner['scan']>[1]) {
      scanner.calls += 1;
      return builtinScanner.scan(bytes, context);
    },
  };
  return scanner;
}

async function run(bytes: Uint8Array, options: DisarmOptions = {}): Promise<Outcome> {
  return disarm({ bytes, fileName: 'tree.zip' }, options);
}

describe('one member budget across all nesting levels, checked before any member work', () => {
  it('refuses five nested zips of 9,999 tiny PNGs from their listings, without scanning a member', async () => {
    const png = await buildImage('png', { width: 1, height: 1 });
    const input = nestedZips(5, 9_999, png);
    const scanner = countingScanner();
    const outcome = await run(input, { scanners: [scanner] });
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'policy_violation' });
    expect(outcome.status === 'rejected' && outcome.detail).toMatch(
      /counting nested archives; the limit is 10000/,
    );
    // Only the submitted file itself was scanned: the listings decided.
    expect(scanner.calls).toBe(1);
  });

  it('counts entries of every level together, to the entry', async () => {
    const png = await buildImage('png', { width: 2, height: 2 });
    // 40 + (40 + 1) + (40 + 1) = 122 entries in the tree, no level above 41.
    const input = nestedZips(3, 40, png);
    expect(await run(input, { limits: { maxEntries: 121 } })).toMatchObject({
      status: 'rejected',
      reason: 'policy_violation',
    });
    expect(await run(input, { limits: { maxEntries: 122 } })).toMatchObject({
      status: 'cleaned',
    });
  });

  it('adds up declared sizes across levels before inflating any member', async () => {
    const inner = buildRawZip([
      {
        name: 'z.png',
        method: 8,
        rawCompressed: deflateBomb(400 * KiB, 64 * KiB),
        declaredUncompressedSize: 400 * KiB,
      },
    ]);
    const input = buildRawZip(
      ['a', 'b', 'c'].map((name) => ({ name: `${name}.zip`, data: inner })),
    );
    const scanner = countingScanner();
    const outcome = await run(input, { scanners: [scanner], limits: { maxBytes: 1024 * KiB } });
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'file_too_large' });
    expect(outcome.status === 'rejected' && outcome.detail).toMatch(/archives inside it declare/);
    expect(scanner.calls).toBe(1);
  });

  it('looks through a gzip into the zip it holds', async () => {
    const png = await buildImage('png', { width: 2, height: 2 });
    const input = buildGzip(nestedZips(2, 30, png), { fileName: 'tree.zip' });
    const scanner = countingScanner();
    const outcome = await disarm(
      { bytes: input, fileName: 'tree.zip.gz' },
      { scanners: [scanner], limits: { maxEntries: 50 } },
    );
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'policy_violation' });
    expect(scanner.calls).toBe(1);
  });

  it('refuses nesting past the limit from the listings', async () => {
    const png = await buildImage('png', { width: 2, height: 2 });
    const scanner = countingScanner();
    const outcome = await run(nestedZips(4, 1, png), {
      scanners: [scanner],
      limits: { maxDepth: 3 },
    });
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'policy_violation' });
    expect(outcome.status === 'rejected' && outcome.detail).toMatch(/nest more than 3 levels/);
    expect(scanner.calls).toBe(1);
  });
});
