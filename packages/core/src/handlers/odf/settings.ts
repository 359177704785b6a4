/**
 * `settings.xml` of an OpenDocument text (OASIS ODF 1.3 Part 3 §3.10), rebuilt from an allowlist:
 * only the application's document configuration switches — numbers and booleans such as the
 * layout compatibility options LibreOffice sets for a document converted from Word
 * (`TabOverMargin`, `AddExternalLeading`, `UseFormerLineSpacing`…), without which the text lays
 * out differently — and `PrinterIndependentLayout`, whose values are a closed set. View state,
 * printer names and driver settings (`PrinterSetup`, an opaque blob), data sources, passwords and
 * every other string, binary or nested item are left out, as is the link-update mode.
 */
import { walkXml } from '../../_internal/xml-rewrite.ts';
import type { XmlElementNode, XmlWalker } from '../../_internal/xml-rewrite.ts';
import { VerifyFailure } from '../types.ts';

export const CONFIG_NS = 'urn:oasis:names:tc:opendocument:xmlns:config:1.0';
const OFFICE_NS = 'urn:oasis:names:tc:opendocument:xmlns:office:1.0';

/** LibreOffice's namespace, the `ooo` of the set names. */
const OOO_NS = 'http://openoffice.org/2004/office';

/**
 * The one item set kept: the document's configuration, by the name LibreOffice (and
 * OpenOffice.org before it) writes, always with that prefix.
 */
export const CONFIGURATION_SET = 'ooo:configuration-settings';

/** One kept configuration item. */
export interface SettingsItem {
  readonly name: string;
  readonly type: 'boolean' | 'short' | 'int' | 'long' | 'string';
  readonly value: string;
}

const VALUE_PATTERNS: Readonly<Record<SettingsItem['type'], RegExp>> = {
  boolean: /^(?:true|false)$/,
  short: /^-?\d{1,5}$/,
  int: /^-?\d{1,10}$/,
  long: /^-?\d{1,19}$/,
  string: /^$/,
};

/** String items kept, with the values they may take. */
const STRING_ITEMS: ReadonlyMap<string, ReadonlySet<string>> = new Map([
  ['PrinterIndependentLayout', new Set(['disabled', 'low-resolution', 'high-resolution'])],
]);

/** Numbers and switches left out anyway: how linked content is updated on load. */
const EXCLUDED_ITEMS: ReadonlySet<string> = new Set(['LinkUpdateMode']);

const ITEM_NAME = /^[A-Za-z][A-Za-z0-9]{0,63}$/;

/** Whether `item` is one the rebuild keeps. */
export function isKeptSettingsItem(item: SettingsItem): boolean {
  if (!ITEM_NAME.test(item.name) || EXCLUDED_ITEMS.has(item.name)) return false;
  if (item.type === 'string') return STRING_ITEMS.get(item.name)?.has(item.value) === true;
  return VALUE_PATTERNS[item.type].test(item.value);
}

/**
 * The configuration items of `settings.xml` the rebuild keeps, in document order; none when the
 * stream is not a settings document.
 */
export function readOdfSettings(bytes: Uint8Array, what: string): SettingsItem[] {
  const items: SettingsItem[] = [];
  const seen = new Set<string>();
  let current: { name: string; type: SettingsItem['type']; value: string } | undefined;
  const isItemInSet = (element: XmlElementNode, ancestors: readonly XmlElementNode[]): boolean => {
    const [root, settings, set] = ancestors;
    return (
      ancestors.length === 3 &&
      root?.uri === OFFICE_NS &&
      root.localName === 'document-settings' &&
      settings?.uri === OFFICE_NS &&
      settings.localName === 'settings' &&
      set?.uri === CONFIG_NS &&
      set.localName === 'config-item-set' &&
      configAttribute(set, 'name') === CONFIGURATION_SET &&
      element.uri === CONFIG_NS &&
      element.localName === 'config-item'
    );
  };
  walkXml(bytes, what, {
    open(element, ancestors) {
      current = undefined;
      if (!isItemInSet(element, ancestors)) return;
      const type = configAttribute(element, 'type');
      if (type === undefined || !(type in VALUE_PATTERNS)) return;
      current = {
        name: configAttribute(element, 'name') ?? '',
        type: type as SettingsItem['type'],
        value: '',
      };
    },
    text(value) {
      if (current) current.value += value;
    },
    close() {
      const item = current;
      current = undefined;
      if (item === undefined || seen.has(item.name) || !isKeptSettingsItem(item)) return;
      seen.add(item.name);
      items.push(item);
    },
  });
  return items;
}

function configAttribute(element: XmlElementNode, local: string): string | undefined {
  return element.attributes.find((a) => a.uri === CONFIG_NS && a.local === local)?.value;
}

/** A fresh `settings.xml` holding `items` (`version` as the content's `office:version`). */
export function settingsXml(items: readonly SettingsItem[], version: string): string {
  return [
    '<?xml version="1.0" encoding="UTF-8"?>\n',
    // LibreOffice resolves the set's name as a qualified name: without the `ooo` prefix bound
    // it does not recognise the configuration and ignores every item.
    `<office:document-settings xmlns:office="${OFFICE_NS}" xmlns:config="${CONFIG_NS}" xmlns:ooo="${OOO_NS}" office:version="${version}">`,
    `<office:settings><config:config-item-set config:name="${CONFIGURATION_SET}">`,
    ...items.map(
      (item) =>
        `<config:config-item config:name="${item.name}" config:type="${item.type}">${item.value}</config:config-item>`,
    ),
    '</config:config-item-set></office:settings></office:document-settings>',
  ].join('');
}

/**
 * Verify's check of a written `settings.xml`, read on its own: exactly the shape
 * {@link settingsXml} writes, every item one the rebuild keeps.
 * @throws {VerifyFailure} `odf.settings` otherwise (`odf.xml-parse` from the parser).
 */
export function settingsWalker(): XmlWalker {
  const fail = (detail: string): never => {
    throw new VerifyFailure('odf.settings', `settings.xml ${detail}`);
  };
  const shape = [
    `${OFFICE_NS} document-settings`,
    `${OFFICE_NS} settings`,
    `${CONFIG_NS} config-item-set`,
    `${CONFIG_NS} config-item`,
  ];
  let item: { name: string; type: string; value: string } | undefined;
  return {
    open(element, ancestors) {
      if (shape[ancestors.length] !== element.key) fail(`holds ${element.name}`);
      if (ancestors.length === 2 && configAttribute(element, 'name') !== CONFIGURATION_SET) {
        fail('holds an item set other than the configuration');
      }
      if (ancestors.length === 3) {
        item = {
          name: configAttribute(element, 'name') ?? '',
          type: configAttribute(element, 'type') ?? '',
          value: '',
        };
      }
    },
    text(value, ancestors) {
      if (ancestors.length === 4 && item) item.value += value;
      else if (value.trim() !== '') fail('holds text outside an item');
    },
    close(element) {
      if (element.localName !== 'config-item' || item === undefined) return;
      const { name, type, value } = item;
      item = undefined;
      if (!(type in VALUE_PATTERNS)) fail(`holds the ${type} item ${name}`);
      if (!isKeptSettingsItem({ name, type: type as SettingsItem['type'], value })) {
        fail(`holds the item ${name}`);
      }
    },
  };
}
