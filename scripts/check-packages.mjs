#!/usr/bin/env node
// Lints the packaging of every published workspace (after `npm run build`): exports map,
// files, types, module format — what `npm i @disarm/<name>` would get.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { publint } from 'publint';
import { formatMessage } from 'publint/utils';

let failed = false;
for (const dir of readdirSync('packages')) {
  const pkgDir = join('packages', dir);
  const pkg = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
  if (pkg.private === true) continue;
  const { messages } = await publint({ pkgDir, level: 'warning', strict: true });
  for (const message of messages) {
    failed = true;
    console.error(`${pkg.name}: ${formatMessage(message, pkg) ?? message.code}`);
  }
  if (messages.length === 0) console.log(`${pkg.name}: packaging ok`);
}
process.exit(failed ? 1 : 0);
