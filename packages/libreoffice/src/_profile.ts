import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * The settings every soffice of the pool starts with, written into its own profile
 * (`user/registrymodifications.xcu`), as configuration path, property, XML Schema type and value.
 * The documents it opens were disarmed already; these hold when something was missed.
 */
export const PROFILE_SETTINGS: readonly (readonly [string, string, string, string])[] = [
  // Highest macro security, and no macro runs whatever its signature or location.
  ['/org.openoffice.Office.Common/Security/Scripting', 'MacroSecurityLevel', 'int', '3'],
  ['/org.openoffice.Office.Common/Security/Scripting', 'DisableMacrosExecution', 'boolean', 'true'],
  // Images and other resources a document names outside itself are not loaded.
  [
    '/org.openoffice.Office.Common/Security/Scripting',
    'BlockUntrustedRefererLinks',
    'boolean',
    'true',
  ],
  // Calc updates linked sheets, ranges and DDE never (0 always, 1 never, 2 on request).
  ['/org.openoffice.Office.Calc/Content/Update', 'Link', 'int', '1'],
  // Formulas show the values stored with them, not recalculated on load (0 always, 1 never).
  ['/org.openoffice.Office.Calc/Formula/Load', 'ODFRecalcMode', 'int', '1'],
  ['/org.openoffice.Office.Calc/Formula/Load', 'OOXMLRecalcMode', 'int', '1'],
  // Documents are opened read-only from a private folder: no lock files.
  ['/org.openoffice.Office.Common/Misc', 'UseLocking', 'boolean', 'false'],
];

/** Writes a fresh profile under `dir` and returns its `-env:UserInstallation` URL. */
export async function writeProfile(dir: string): Promise<string> {
  const user = join(dir, 'user');
  await mkdir(user, { recursive: true });
  const items = PROFILE_SETTINGS.map(
    ([path, name, type, value]) =>
      `<item oor:path="${path}"><prop oor:name="${name}" oor:op="fuse" oor:type="xs:${type}"><value>${value}</value></prop></item>`,
  );
  await writeFile(
    join(user, 'registrymodifications.xcu'),
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
      '<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n' +
      `${items.join('\n')}\n</oor:items>\n`,
  );
  return pathToFileURL(dir).href;
}
