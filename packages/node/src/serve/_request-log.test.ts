import type { Logger } from '@disarm/protocol';
import { describe, expect, it } from 'vitest';

import { withRequestLog } from './_request-log.ts';

const DOC_ID = 'doc_0123456789abcdefghjk';

function recordingLogger(): Logger & { lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const record = (object: Record<string, unknown>): void => {
    lines.push(object);
  };
  return { lines, info: record, warn: record, error: record };
}

describe('withRequestLog()', () => {
  it('logs method, path without the query, status, time and the document of the path', async () => {
    const logger = recordingLogger();
    const handler = withRequestLog('api', () => new Response(null, { status: 302 }), logger);
    await handler(
      new Request(`http://localhost/v1/documents/${DOC_ID}/download?token=secret`, {
        headers: { 'X-Api-Key': 'dsm_live_secret' },
      }),
    );
    expect(logger.lines).toEqual([
      {
        server: 'api',
        method: 'GET',
        path: `/v1/documents/${DOC_ID}/download`,
        status: 302,
        ms: expect.any(Number) as number,
        documentId: DOC_ID,
      },
    ]);
    expect(JSON.stringify(logger.lines)).not.toContain('secret');
  });

  it('reads the id of a submitted document from its envelope, leaving the body intact', async () => {
    const logger = recordingLogger();
    const envelope = { id: DOC_ID, status: 'pending' };
    const handler = withRequestLog('api', () => Response.json(envelope, { status: 202 }), logger);
    const response = await handler(
      new Request('http://localhost/v1/documents', { method: 'POST', body: 'x' }),
    );
    expect(await response.json()).toEqual(envelope);
    expect(logger.lines[0]).toMatchObject({ method: 'POST', status: 202, documentId: DOC_ID });

    const refused = withRequestLog(
      'api',
      () => Response.json({ code: 'X' }, { status: 400 }),
      logger,
    );
    await refused(new Request('http://localhost/v1/documents', { method: 'POST', body: 'x' }));
    expect(logger.lines[1]).not.toHaveProperty('documentId');
  });

  it('logs a throwing handler as 500 and rethrows', async () => {
    const logger = recordingLogger();
    const failure = new Error('boom');
    const handler = withRequestLog(
      'storage',
      () => {
        throw failure;
      },
      logger,
    );
    await expect(handler(new Request('http://localhost/blobs/output/x?sig=abc'))).rejects.toBe(
      failure,
    );
    expect(logger.lines).toEqual([
      expect.objectContaining({ server: 'storage', path: '/blobs/output/x', status: 500 }),
    ]);
  });
});
