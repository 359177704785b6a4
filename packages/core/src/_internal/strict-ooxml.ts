/**
 * ISO/IEC 29500 Strict, the conformance class Excel, Word and PowerPoint write as "Strict Open XML":
 * the same parts and content types as Transitional, under other namespace names and relationship
 * types. ISO/IEC 29500-1:2016 Annex A (the Strict schemas) names them
 * `http://purl.oclc.org/ooxml/{family}/{name}` where Transitional (ECMA-376 Part 4) has
 * `http://schemas.openxmlformats.org/{family}/2006/{name}`; two names are spelled in camel case
 * in Strict. The readers hand rules the Transitional name, so one rule covers both classes; a
 * rewritten part keeps the names it was written with.
 */
const STRICT = 'http://purl.oclc.org/ooxml/';
const TRANSITIONAL = 'http://schemas.openxmlformats.org/';
const RENAMED: Readonly<Record<string, string>> = {
  extendedProperties: 'extended-properties',
  customProperties: 'custom-properties',
};

/** The Transitional twin of a Strict namespace name or relationship type; any other unchanged. */
export function transitional(name: string): string {
  if (!name.startsWith(STRICT)) return name;
  const [family = '', ...rest] = name.slice(STRICT.length).split('/');
  return `${TRANSITIONAL}${family}/2006/${rest.map((part) => RENAMED[part] ?? part).join('/')}`;
}
