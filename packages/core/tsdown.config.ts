import { defineConfig } from 'tsdown';

export default defineConfig({
  // The part-check worker is started by file, beside the bundle (see _internal/part-checks.ts).
  entry: ['src/index.ts', 'src/check-worker.ts'],
  format: 'esm',
  platform: 'node',
  target: 'node20',
  dts: true,
  sourcemap: true,
  clean: true,
});
