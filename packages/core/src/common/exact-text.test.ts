import { describe, expect, it } from 'vitest';
import { decodePercent, decodeUtf8Exact, exceedsJsonDepth, utf8Fault } from './exact-text.js';

const bytes = (...b: number[]) => Uint8Array.from(b);

describe('utf8Fault', () => {
  it('accepts UTF-8, the longest forms and the edges of the code space included', () => {
    for (const text of ['', 'ascii', 'Zürich', '東京', '\u{1F6A2}', '\u{10FFFF}', '\uFFFD', '\uD7FF\uE000']) expect(utf8Fault(Buffer.from(text))).toBeUndefined();
  });

  it('locates every kind of fault, and tells a surrogate apart', () => {
    expect(utf8Fault(bytes(0x61, 0xed, 0xa0, 0x80))).toEqual({ offset: 1, surrogate: true });
    expect(utf8Fault(bytes(0xed, 0xbf, 0xbf))).toEqual({ offset: 0, surrogate: true });
    expect(utf8Fault(bytes(0xc0, 0xaf))).toEqual({ offset: 0, surrogate: false }); // overlong
    expect(utf8Fault(bytes(0xe0, 0x80, 0xaf))).toEqual({ offset: 0, surrogate: false }); // overlong
    expect(utf8Fault(bytes(0x61, 0x62, 0xe2, 0x82))).toEqual({ offset: 2, surrogate: false }); // truncated
    expect(utf8Fault(bytes(0x80))).toEqual({ offset: 0, surrogate: false }); // stray continuation
    expect(utf8Fault(bytes(0xf4, 0x90, 0x80, 0x80))).toEqual({ offset: 0, surrogate: false }); // above U+10FFFF
    expect(utf8Fault(bytes(0xff))).toEqual({ offset: 0, surrogate: false });
    expect(utf8Fault(bytes(0xed, 0xa0))).toEqual({ offset: 0, surrogate: false }); // a surrogate's start, cut short
  });

  it('decodes exactly or refuses with a code', () => {
    expect(decodeUtf8Exact(Buffer.from('Zürich'), 'x')).toBe('Zürich');
    expect(() => decodeUtf8Exact(bytes(0xc0, 0xaf), 'The body')).toThrow(expect.objectContaining({ code: 'invalid_encoding' }));
    expect(() => decodeUtf8Exact(bytes(0xed, 0xa0, 0x80), 'The body')).toThrow(expect.objectContaining({ code: 'invalid_character' }));
  });
});

describe('decodePercent', () => {
  it('decodes escapes and, in queries, + as a space', () => {
    expect(decodePercent('a%20b', false)).toEqual({ text: 'a b' });
    expect(decodePercent('a+b', true)).toEqual({ text: 'a b' });
    expect(decodePercent('a+b', false)).toEqual({ text: 'a+b' });
    expect(decodePercent('gr%C3%B6%C3%9Fe', false)).toEqual({ text: 'größe' });
    // Node hands raw bytes over as Latin-1 characters: they are bytes too.
    expect(decodePercent(Buffer.from('größe').toString('latin1'), false)).toEqual({ text: 'größe' });
  });

  it('refuses malformed escapes and bytes that are not UTF-8, never replacing them', () => {
    for (const text of ['%zz', 'abc%', '%4', '%%41']) expect(decodePercent(text, true)).toEqual({ fault: 'malformed_escape' });
    expect(decodePercent('%ED%A0%80', true)).toEqual({ fault: { offset: 0, surrogate: true } });
    expect(decodePercent('x%FF', true)).toEqual({ fault: { offset: 1, surrogate: false } });
    expect(decodePercent('\uD800', true)).toEqual({ fault: { offset: 0, surrogate: true } });
  });
});

describe('exceedsJsonDepth', () => {
  it('counts nesting outside strings only, at any depth without recursion', () => {
    expect(exceedsJsonDepth('[[1]]', 2)).toBe(false);
    expect(exceedsJsonDepth('[[[1]]]', 2)).toBe(true);
    expect(exceedsJsonDepth('{"a":"[[[[","b":{"c":"\\"{{"}}', 2)).toBe(false);
    expect(exceedsJsonDepth('[{}, {}, [[]]]', 3)).toBe(false);
    expect(exceedsJsonDepth('['.repeat(1_000_000), 64)).toBe(true);
    // Escaped quotes and backslashes inside strings, an unterminated string.
    expect(exceedsJsonDepth('["\\\\", [[[]]]]', 2)).toBe(true);
    expect(exceedsJsonDepth('["a\\\\\\"[[[["]', 2)).toBe(false);
    expect(exceedsJsonDepth('["abc', 0)).toBe(true);
    expect(exceedsJsonDepth('"abc', 0)).toBe(false);
  });
});
