import { describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from '@ferry/core/internal';
import { isJsonContentType, parseJson, readBody } from './request-body.js';

async function* chunks(...parts: string[]): AsyncIterable<Uint8Array> {
  for (const p of parts) yield Buffer.from(p);
}

describe('request bodies', () => {
  it('reads strings, bytes and streams within the limit', async () => {
    expect((await readBody('{"a":1}', {}, 10)).toString()).toBe('{"a":1}');
    expect((await readBody(Buffer.from('é'), {}, 10)).toString()).toBe('é');
    expect((await readBody(chunks('{"a"', ':1}'), {}, 10)).toString()).toBe('{"a":1}');
    expect((await readBody(undefined, {}, 10)).length).toBe(0);
  });

  it('hands over the bytes as received, undecoded (a lone surrogate\'s CESU-8 stays three bytes)', async () => {
    const bytes = Buffer.from([0x7b, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x7d]);
    expect(Buffer.compare(await readBody(bytes, {}, 100), bytes)).toBe(0);
    expect(Buffer.compare(await readBody(chunks('{"', '\u00ff'), {}, 100), Buffer.from('{"\u00ff'))).toBe(0);
  });

  it('refuses oversized bodies by Content-Length before reading, and while reading', async () => {
    let pulled = 0;
    async function* endless(): AsyncIterable<Uint8Array> {
      for (;;) {
        pulled++;
        yield Buffer.alloc(1000);
      }
    }
    await expect(readBody(endless(), { 'content-length': '5000' }, 4096)).rejects.toMatchObject({ code: 'payload_too_large' });
    expect(pulled).toBe(0);
    await expect(readBody(endless(), {}, 4096)).rejects.toMatchObject({ code: 'payload_too_large' });
    expect(pulled).toBe(5);
    await expect(readBody('x'.repeat(11), {}, 10)).rejects.toMatchObject({ status: 413 });
  });

  it('accepts JSON media types only, UTF-8 if a charset is named', () => {
    expect(isJsonContentType('application/json')).toBe(true);
    expect(isJsonContentType('Application/JSON; charset=UTF-8')).toBe(true);
    expect(isJsonContentType('application/json; charset=latin1')).toBe(false);
    expect(isJsonContentType('text/plain')).toBe(false);
    expect(isJsonContentType('application/jsonp')).toBe(false);
    expect(isJsonContentType(undefined)).toBe(false);
  });

  it('reports malformed JSON by position, never quoting the input', () => {
    try {
      parseJson('{"password": "hunter2" x');
      expect.unreachable();
    } catch (error) {
      expect(error).toMatchObject({ code: 'malformed_json' });
      expect(String((error as Error).message)).not.toContain('hunter2');
    }
    expect(() => parseJson('hunter2')).toThrow(/^(?!.*hunter2)/);
  });

  it('refuses documents nested deeper than the limit, without overflowing the stack', () => {
    expect(parseJson('['.repeat(MAX_JSON_DEPTH) + ']'.repeat(MAX_JSON_DEPTH))).toBeTruthy();
    expect(() => parseJson('['.repeat(MAX_JSON_DEPTH + 1) + ']'.repeat(MAX_JSON_DEPTH + 1))).toThrow(expect.objectContaining({ code: 'validation_failed' }));
    const deep = '{"a":'.repeat(200_000) + '1' + '}'.repeat(200_000);
    expect(() => parseJson(deep)).toThrow(expect.objectContaining({ code: 'validation_failed' }));
    // Brackets inside strings are text, not nesting.
    expect(parseJson(JSON.stringify({ a: '['.repeat(1000), b: '\\"[[' }))).toBeTruthy();
  });
});
