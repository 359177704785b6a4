import { defineDisarmProject } from '../../vitest.shared.ts';

export default defineDisarmProject('s3', {
  // s3rver (in process) makes ListObjectsV2 continuation tokens with DES, which OpenSSL 3
  // keeps in its legacy provider: without it a truncated listing fails inside s3rver.
  execArgv: ['--openssl-legacy-provider'],
});
