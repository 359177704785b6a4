import type { Finding } from '@disarm/core';

import type { JobResult } from '../pool/types.ts';

/** One line of `disarm clean --json`: absent fields are omitted, never `null`. */
export interface CleanRecord {
  readonly input: string;
  readonly status: JobResult['status'];
  readonly reason?: string;
  readonly threatNames?: readonly string[];
  /** Path of the written copy. */
  readonly output?: string;
  /** Extension of the returned format. */
  readonly outputFormat?: string;
  readonly modifications?: readonly string[];
  /** What the rebuild removed, by kind, with `locations` where the engine knows them. */
  readonly findings?: readonly Finding[];
  readonly detail?: string;
}

/** The JSON record of one input; `output` is the copy's path as shown to the user. */
export function toCleanRecord(input: string, result: JobResult, output: string): CleanRecord {
  switch (result.status) {
    case 'cleaned':
      return {
        input,
        status: result.status,
        output,
        outputFormat: result.format,
        modifications: result.modifications,
        findings: result.findings.map(({ kind, count, locations }) =>
          locations === undefined ? { kind, count } : { kind, count, locations },
        ),
      };
    case 'rejected':
      return result.threatNames === undefined
        ? { input, status: result.status, reason: result.reason, detail: result.detail }
        : {
            input,
            status: result.status,
            reason: result.reason,
            threatNames: result.threatNames,
            detail: result.detail,
          };
    case 'failed':
      return { input, status: result.status, reason: result.reason, detail: result.detail };
  }
}

/**
 * The human line of one input, e.g. `cleaned  in/a.png -> out/a.png (findings: image-metadata×1)`.
 * File names and details can come from hostile files (archive member names): control characters
 * are escaped so they cannot drive the terminal.
 */
export function toHumanLine(record: CleanRecord): string {
  const status = record.status.padEnd('rejected'.length);
  const input = printable(record.input);
  if (record.status === 'cleaned') {
    const findings = (record.findings ?? []).map(({ kind, count }) => `${kind}×${count}`);
    const suffix = findings.length > 0 ? ` (findings: ${findings.join(', ')})` : '';
    return `${status} ${input} -> ${printable(record.output ?? '')}${suffix}`;
  }
  return `${status} ${input}: ${record.reason ?? ''} — ${printable(record.detail ?? '')}`;
}

/** C0 and C1 controls and DEL, as `\xNN`. */
function printable(text: string): string {
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (char) => {
    return `\\x${char.charCodeAt(0).toString(16).padStart(2, '0')}`;
  });
}
