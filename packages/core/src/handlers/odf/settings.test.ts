import { describe, expect, it } from 'vitest';

import { checkWhole, WalkedPartCheck } from '../office/part-checks.ts';
import { settingsWalker, settingsXml } from './settings.ts';
import type { SettingsItem } from './settings.ts';

const KEPT: SettingsItem[] = [
  { name: 'TabOverMargin', type: 'boolean', value: 'true' },
  { name: 'Rsid', type: 'int', value: '1543273' },
  { name: 'PrinterIndependentLayout', type: 'string', value: 'disabled' },
];

/** Verify's check of a written settings.xml. */
function check(xml: string): void {
  checkWhole(
    new WalkedPartCheck('settings.xml', 'odf.xml-parse', settingsWalker),
    Buffer.from(xml),
  );
}

describe("verify's settings.xml check", () => {
  it('passes what the rebuild writes', () => {
    expect(() => {
      check(settingsXml(KEPT, '1.3'));
    }).not.toThrow();
  });

  it.each([
    ['a printer name', { name: 'PrinterName', type: 'string', value: 'lp0' }],
    ['a printer driver blob', { name: 'PrinterSetup', type: 'base64Binary', value: 'AAA=' }],
    [
      'a layout value outside its set',
      { name: 'PrinterIndependentLayout', type: 'string', value: 'x' },
    ],
    ['a switch with more than its value', { name: 'EmbedFonts', type: 'boolean', value: 'true x' }],
    ['the link-update mode', { name: 'LinkUpdateMode', type: 'short', value: '2' }],
    ['a number too long for its type', { name: 'Rsid', type: 'short', value: '1543273' }],
  ] as const)('fails %s as odf.settings', (_label, item) => {
    const xml = settingsXml(KEPT, '1.3').replace(
      '</config:config-item-set>',
      `<config:config-item config:name="${item.name}" config:type="${item.type}">${item.value}</config:config-item></config:config-item-set>`,
    );
    expect(() => {
      check(xml);
    }).toThrow(expect.objectContaining({ check: 'odf.settings' }) as Error);
  });

  it('fails another item set or a nested map as odf.settings', () => {
    const view = settingsXml(KEPT, '1.3').replace(
      '<config:config-item-set config:name="ooo:configuration-settings">',
      '<config:config-item-set config:name="ooo:view-settings"></config:config-item-set><config:config-item-set config:name="ooo:configuration-settings">',
    );
    const map = settingsXml(KEPT, '1.3').replace(
      '</config:config-item-set>',
      '<config:config-item-map-indexed config:name="Views"/></config:config-item-set>',
    );
    for (const xml of [view, map]) {
      expect(() => {
        check(xml);
      }).toThrow(expect.objectContaining({ check: 'odf.settings' }) as Error);
    }
  });
});
