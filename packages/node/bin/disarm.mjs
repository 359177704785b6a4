#!/usr/bin/env node
// The `disarm` command's committed entry: npm links it at install time, before any build, so
// `npx disarm` resolves in a fresh checkout; it loads the built CLI, or says how to build it.
import { existsSync } from 'node:fs';

const cli = new URL('../dist/cli.mjs', import.meta.url);
if (existsSync(cli)) {
  await import(cli.href);
} else {
  process.stderr.write(
    'disarm: the CLI is not built yet. Run `npm run build` at the repository root (or `npm run serve`, which builds first), then try again.\n',
  );
  process.exitCode = 2;
}
