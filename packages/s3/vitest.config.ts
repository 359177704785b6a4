import { defineProject } from 'vitest/config';

export default defineProject({
  resolve: { conditions: ['@disarm/source'] },
  ssr: { resolve: { conditions: ['@disarm/source'] } },
  test: {
    name: 's3',
    testTimeout: 60_000,
    hookTimeout: 120_000,
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // s3rver (in process) makes ListObjectsV2 continuation tokens with DES, which OpenSSL 3
    // keeps in its legacy provider: without it a truncated listing fails inside s3rver.
    execArgv: ['--openssl-legacy-provider'],
  },
});
