import { isAbsentValue, measuredNumber, sysfsPciAddress } from './tool-output';

describe('isAbsentValue', () => {
  it.each(['[N/A]', 'N/A', 'NA', '-', '', '[Not Supported]', '[Unknown Error]', '[Insufficient Permissions]', '[GPU requires reset]'])(
    '"%s" is a placeholder, not a reading',
    (raw) => {
      expect(isAbsentValue(raw)).toBe(true);
    },
  );

  it.each(['0', '0 %', 'Disabled', 'NVIDIA H100 80GB HBM3'])('"%s" is a reading', (raw) => {
    expect(isAbsentValue(raw)).toBe(false);
  });
});

describe('measuredNumber', () => {
  it('strips units and keeps a real zero', () => {
    expect(measuredNumber('81559 MiB')).toBe(81559);
    expect(measuredNumber('700.00 W')).toBe(700);
    expect(measuredNumber('0 %')).toBe(0);
  });

  it('a placeholder is undefined and anything else NaN', () => {
    expect(measuredNumber('[N/A]')).toBeUndefined();
    expect(measuredNumber('lots')).toBeNaN();
  });
});

describe('sysfsPciAddress', () => {
  it("turns nvidia-smi's 8-digit domain into the sysfs form", () => {
    expect(sysfsPciAddress('00000000:1B:00.0')).toBe('0000:1b:00.0');
    expect(sysfsPciAddress('0000:C1:00.0')).toBe('0000:c1:00.0');
    expect(sysfsPciAddress('3b:00.0')).toBe('0000:3b:00.0');
    expect(sysfsPciAddress('[N/A]')).toBeUndefined();
  });
});
