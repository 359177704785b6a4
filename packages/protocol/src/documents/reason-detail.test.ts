import { describe, expect, it } from 'vitest';

import { MAX_REASON_DETAIL_CHARS, toReasonDetail } from './reason-detail.ts';

const rejected = (detail: string, reason: 'invalid_file' | 'policy_violation' = 'invalid_file') =>
  toReasonDetail({ status: 'rejected', reason, threatNames: [], detail });

describe('toReasonDetail', () => {
  it('keeps the engine’s sentence of a rejection, as a sentence', () => {
    expect(
      toReasonDetail({
        status: 'rejected',
        reason: 'threat_detected',
        threatNames: ['EICAR-Test-File'],
        detail: 'the archive contains EICAR-Test-File',
      }),
    ).toBe('The archive contains EICAR-Test-File.');
    expect(
      rejected(
        'member "../../etc/cron.d/x.png" escapes the archive with a ".." path segment',
        'policy_violation',
      ),
    ).toBe('Member "../../etc/cron.d/x.png" escapes the archive with a ".." path segment.');
    // A member name is the caller's own data, even when it looks like a server path.
    expect(rejected('member "/tmp/x.png" has an absolute path', 'policy_violation')).toBe(
      'Member "/tmp/x.png" has an absolute path.',
    );
  });

  it('never shows a failure’s internal detail, only its reason’s fixed sentence', () => {
    const internal = toReasonDetail({
      status: 'failed',
      reason: 'internal_error',
      detail:
        'Error: ENOENT /var/lib/disarm/work/w1/in.bin\n    at Worker.run (/app/worker.js:1:1)',
    });
    expect(internal).toMatch(
      /^The service failed while processing this file; the charge was credited back/,
    );
    expect(internal).not.toMatch(/ENOENT|\/var|worker\.js|at /);
    expect(
      toReasonDetail({
        status: 'failed',
        reason: 'timeout',
        detail: 'worker 3 killed after 60000 ms',
      }),
    ).toMatch(/^Processing did not finish within the time budget/);
  });

  it('removes control, bidirectional and zero-width characters and server paths', () => {
    const detail = rejected(
      'the png image cannot be decoded:\u0000 VipsForeignLoad:\r\n "/tmp/vips-0-123.v" \u202eevil\u200b at C:\\srv\\x.png',
    );
    expect(detail).toBe(
      'The png image cannot be decoded: VipsForeignLoad: "[path]" evil at [path].',
    );
    // eslint-disable-next-line no-control-regex -- control characters are what must be gone
    expect(detail).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e]/);
  });

  it('caps the sentence at 500 characters without splitting a character', () => {
    const long = rejected(`part ${'😀'.repeat(600)} is broken`);
    expect(Array.from(long)).toHaveLength(MAX_REASON_DETAIL_CHARS);
    expect(long.endsWith('…')).toBe(true);
    expect(long).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/);
  });

  it('gives the reason’s generic sentence when the engine said nothing usable', () => {
    expect(rejected(' \u0000 ')).toBe(
      'The file is corrupt or not a valid file of its declared type.',
    );
  });
});
