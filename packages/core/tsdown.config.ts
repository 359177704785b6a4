import { defineConfig } from 'tsdown';

export default defineConfig({
  // The part-check worker is started by file, beside the bundle
  // (see src/handlers/office/part-checks.ts).
  entry: ['src/index.ts', 'src/check-worker.ts'],
  format: 'esm',
  platform: 'node',
  target: 'node20',
  dts: true,
  sourcemap: true,
  clean: true,
  // rolldown warns when a plugin takes much of the build's time, which declaration output
  // always does and a loaded machine makes worse: noise on every build, nothing to act on.
  checks: { pluginTimings: false },
});
