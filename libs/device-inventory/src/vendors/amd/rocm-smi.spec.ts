import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LinkType } from '@gpufleet/contracts';
import { parseRocmSmiCards, parseRocmSmiLinkTypes } from './rocm-smi';

const fixture = (name: string): string => readFileSync(join(__dirname, '__fixtures__', name), 'utf8');
const amdId = (index: number): string => `amd-${index}`;

describe('parseRocmSmiCards', () => {
  it('4 MI250X GCDs: product from "Card Series", VRAM bytes as MiB, gfx9010 read as gfx90a', () => {
    const cards = parseRocmSmiCards(fixture('rocm-smi-4xmi250x.json'));

    expect(cards).toHaveLength(4);
    expect(cards[2]).toEqual({
      index: 2,
      product: 'AMD INSTINCT MI200 (MCM) OAM LC MBA HPE C2',
      uuid: '0x87fc3ea34b220002',
      pciBusId: '0000:c9:00.0',
      gfxTarget: 'gfx90a',
      memoryMib: 65520,
      memoryUsedMib: 10,
      driverVersion: '6.3.6',
    });
  });

  it('a Radeon card without bus or unique id flags still parses', () => {
    expect(parseRocmSmiCards(fixture('rocm-smi-rx7900xt.json'))).toEqual([
      { index: 0, product: 'Radeon RX 7900 XT', gfxTarget: 'gfx1100', memoryMib: 20464, memoryUsedMib: 26 },
    ]);
  });

  it('ROCm 5 spelled the key "Card series" and put the name in "Card model"', () => {
    const text = JSON.stringify({
      card1: { 'Card series': 'Fiji [Radeon R9 FURY / NANO Series]', 'Card model': 'Radeon R9 FURY X' },
      card0: { 'Card model': 'Radeon R9 FURY X', 'Unique ID': 'N/A' },
    });

    expect(parseRocmSmiCards(text)).toEqual([
      { index: 0, product: 'Radeon R9 FURY X' },
      { index: 1, product: 'Fiji [Radeon R9 FURY / NANO Series]' },
    ]);
  });

  it('a card with no product name throws, naming the flag to add', () => {
    expect(() => parseRocmSmiCards('{"card0": {"Card Model": "0x740f"}}')).toThrow(/card0 has no "Card Series"/);
  });

  it('garbage output throws with the line number', () => {
    expect(() => parseRocmSmiCards('\n\n{"card0": {"Card Series": }}')).toThrow(/line 3: not valid JSON/);
  });
});

describe('parseRocmSmiLinkTypes', () => {
  it('4 MI250X GCDs on one hive: every pair is XGMI, each once', () => {
    const links = parseRocmSmiLinkTypes(fixture('rocm-smi-showtopotype-4xmi250x.json'), amdId);

    expect(links).toHaveLength(6);
    expect(links.every((link) => link.type === LinkType.LINK_TYPE_XGMI)).toBe(true);
    expect(links[0]).toEqual({ a: 'amd-0', b: 'amd-1', type: LinkType.LINK_TYPE_XGMI });
  });

  it('PCIE pairs go through the host (PHB); both directions of a pair count once', () => {
    const text = JSON.stringify({
      system: {
        '(Topology) Link type between DRM devices 0 and 1': 'PCIE',
        '(topology) link type between drm devices 1 and 0': 'PCIE',
      },
    });

    expect(parseRocmSmiLinkTypes(text, amdId)).toEqual([{ a: 'amd-0', b: 'amd-1', type: LinkType.LINK_TYPE_PHB }]);
  });

  it('an unknown link type throws', () => {
    const text = JSON.stringify({ system: { '(Topology) Link type between DRM devices 0 and 1': 'CARRIER PIGEON' } });

    expect(() => parseRocmSmiLinkTypes(text, amdId)).toThrow(/expected XGMI or PCIE/);
  });
});
