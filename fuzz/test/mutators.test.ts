/**
 * The fuzzer's own parts: describers find the structure of every seed, container mutators write
 * well-formed containers, and a recipe replays to the same bytes.
 */
import { describe, expect, it } from 'vitest';

import { applySteps, replayRecipe } from '../src/campaign.ts';
import {
  describeCompoundFile,
  readCompoundStreams,
  writeCompoundStreams,
} from '../src/layout/cfb.ts';
import { describeImage } from '../src/layout/images.ts';
import { describeMarkup, describePdf, describeRtf } from '../src/layout/text.ts';
import type { Describe } from '../src/layout/types.ts';
import { describeGzip, describeZip, readZipMembers } from '../src/layout/zip.ts';
import { decodeProgram } from '../src/http/program.ts';
import { zipContainerMutators } from '../src/mutate/containers.ts';
import { Choices } from '../src/random.ts';
import { buildSeeds } from '../src/seeds.ts';
import { targetNamed } from '../src/targets.ts';

const DESCRIBERS: Readonly<Record<string, Describe>> = {
  image: describeImage,
  pdf: describePdf,
  rtf: describeRtf,
  markup: describeMarkup,
  cfb: describeCompoundFile,
  ooxml: describeZip,
  odf: describeZip,
};

describe('layouts', () => {
  it.each(Object.entries(DESCRIBERS))(
    '%s: every seed has parts and fields',
    async (target, describe) => {
      for (const seed of await buildSeeds(target, { quick: true })) {
        const layout = describe(seed.bytes);
        expect(layout, seed.name).toBeDefined();
        expect(layout?.parts.length, seed.name).toBeGreaterThan(0);
        // An HTML page may have no numeric attribute; every other format has lengths or counts.
        if (target !== 'markup') expect(layout?.fields.length, seed.name).toBeGreaterThan(0);
      }
    },
  );

  it('archive: zips and gzips are described', async () => {
    for (const seed of await buildSeeds('archive')) {
      expect(describeZip(seed.bytes) ?? describeGzip(seed.bytes), seed.name).toBeDefined();
    }
  });
});

describe('container mutators', () => {
  it('drop, duplicate and reorder zip members and write a zip that lists again', async () => {
    const [docx] = await buildSeeds('ooxml');
    if (!docx) throw new Error('no ooxml seed');
    const members = readZipMembers(docx.bytes);
    expect(members?.length).toBeGreaterThan(3);
    const byName = new Map(zipContainerMutators().map((mutator) => [mutator.name, mutator]));
    const apply = (name: string): string[] | undefined => {
      const out = byName.get(name)?.apply(docx.bytes, { choices: new Choices(7), donors: [] });
      return out === undefined ? undefined : readZipMembers(out)?.map((member) => member.name);
    };
    const names = members?.map((member) => member.name) ?? [];
    expect(apply('zip.drop-member')).toHaveLength(names.length - 1);
    expect(apply('zip.duplicate-member')).toHaveLength(names.length + 1);
    expect(apply('zip.reorder-members')?.sort()).toEqual([...names].sort());
  });

  it('read the streams of every compound file seed and write them back', async () => {
    for (const seed of await buildSeeds('cfb', { quick: true })) {
      const streams = readCompoundStreams(seed.bytes);
      expect(streams?.length, seed.name).toBeGreaterThan(0);
      const written = writeCompoundStreams(streams ?? []);
      expect(
        readCompoundStreams(written ?? new Uint8Array())
          ?.map((stream) => stream.path)
          .sort(),
      ).toEqual(streams?.map((stream) => stream.path).sort());
    }
  });

  it('refuse a compound file whose directory chain loops, without reading on', async () => {
    const [doc] = await buildSeeds('cfb', { quick: true });
    if (!doc) throw new Error('no cfb seed');
    const looped = Uint8Array.from(doc.bytes);
    const view = new DataView(looped.buffer);
    const directory = view.getUint32(48, true);
    const fat = 512 * (view.getUint32(76, true) + 1);
    view.setUint32(fat + directory * 4, directory, true);
    expect(readCompoundStreams(looped)).toBeUndefined();
  });
});

describe('recipes', () => {
  it.each(['image', 'archive', 'pdf', 'ooxml', 'cfb', 'rtf', 'markup', 'http'])(
    '%s: the same steps give the same bytes',
    async (name) => {
      const target = targetNamed(name);
      if (!target) throw new Error(`no target ${name}`);
      const seeds = await target.seeds({ quick: true });
      const steps = target.mutators
        .slice(0, 12)
        .map((mutator, index) => ({ mutator: mutator.name, seed: 1_000 + index }));
      const recipe = { seed: seeds[0]?.name ?? '', fileName: seeds[0]?.fileName ?? '', steps };
      const once = replayRecipe(target, seeds, recipe);
      expect(Buffer.from(replayRecipe(target, seeds, recipe)).equals(Buffer.from(once))).toBe(true);
      expect(Buffer.from(once).equals(Buffer.from(seeds[0]?.bytes ?? []))).toBe(false);
      if (name === 'http') expect(decodeProgram(once)).toBeDefined();
      expect(applySteps(target, seeds[0]?.bytes ?? new Uint8Array(), [], [])).toBe(seeds[0]?.bytes);
    },
  );
});
