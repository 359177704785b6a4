import { defineConfig } from 'tsdown';

export default defineConfig({
  entry: ['src/index.ts'],
  format: 'esm',
  platform: 'node',
  target: 'node20',
  dts: true,
  sourcemap: true,
  clean: true,
  // rolldown warns when a plugin takes much of the build's time, which declaration output
  // always does and a loaded machine makes worse: noise on every build, nothing to act on.
  checks: { pluginTimings: false },
  external: [/^@disarm\//],
});
