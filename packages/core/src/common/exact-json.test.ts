import { describe, expect, it } from 'vitest';
import { parseExactJson } from './exact-json.js';

describe('parseExactJson', () => {
  it('keeps numbers a double cannot hold as strings of their exact digits', () => {
    expect(parseExactJson('{"a":12345678901234567890,"c":1e400,"d":-1e-400,"e":0.1000000000000000055511151231257827}')).toEqual({
      a: '12345678901234567890',
      c: '1e400',
      d: '-1e-400',
      e: '0.1000000000000000055511151231257827',
    });
    expect(parseExactJson('[9007199254740993, 123456789.123456789, 1234567890.12345678]')).toEqual(['9007199254740993', '123456789.123456789', '1234567890.12345678']);
    // 17 digits that a double happens to keep exactly stay a number.
    expect(parseExactJson('[1234567890.1234567]')).toEqual([1234567890.1234567]);
  });

  it('finds an inexact number wherever JSON lets a value start, whatever the spacing', () => {
    expect(parseExactJson('12345678901234567890')).toBe('12345678901234567890');
    expect(parseExactJson(' \n -1e400')).toBe('-1e400');
    expect(parseExactJson('{"a" : \n\t 12345678901234567890}')).toEqual({ a: '12345678901234567890' });
    expect(parseExactJson('[1,\r\n 9007199254740993 ]')).toEqual([1, '9007199254740993']);
    expect(parseExactJson('{"a":[[{"b":[ 1E400]}]]}')).toEqual({ a: [[{ b: ['1E400'] }]] });
    // Ids in strings that look like long numbers or exponents do not change numbers beside them.
    expect(parseExactJson('{"id":"01KDVDNBYGT785YDDBK5ZWSXEX","uuid":"3e4f5a6b-1e2d","digits":"12345678901234567890","n":12.5}')).toEqual({
      id: '01KDVDNBYGT785YDDBK5ZWSXEX', uuid: '3e4f5a6b-1e2d', digits: '12345678901234567890', n: 12.5,
    });
  });

  it('keeps numbers a double holds as numbers, on both paths', () => {
    expect(parseExactJson('{"n":12.5,"m":-3,"big":9007199254740991,"e":1e3,"f":2.5E-3}')).toEqual({ n: 12.5, m: -3, big: 9007199254740991, e: 1000, f: 0.0025 });
    // A long string sends the text down the exact path; the numbers beside it are unchanged.
    expect(parseExactJson('{"id":"0000000000000000000001","n":0.1,"x":1e2}')).toEqual({ id: '0000000000000000000001', n: 0.1, x: 100 });
  });

  it('keeps unicode exact, __proto__ an own key, and the last of duplicate keys', () => {
    const text = '{"s":"\\u2028 é 👍 e\\u0301","__proto__":{"polluted":1},"k":1,"k":12345678901234567890}';
    const value = parseExactJson(text) as Record<string, unknown>;
    expect(value.s).toBe('\u2028 é 👍 e\u0301');
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(value, '__proto__')?.value).toEqual({ polluted: 1 });
    expect(value.k).toBe('12345678901234567890');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('throws a SyntaxError on text that is not JSON, on both paths', () => {
    expect(() => parseExactJson('{"a":')).toThrow(SyntaxError);
    expect(() => parseExactJson('{"a":1e400')).toThrow(SyntaxError);
  });
});
