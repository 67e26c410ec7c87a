import { describe, expect, it } from 'vitest';
import { isFerryError } from '../common/index.js';
import { assertUrlAllowed, isBlockedAddress, isHostAllowed, isLocalhostName, policyHost, urlRefusal } from './outbound-policy.js';

function refusal(raw: string, allow: readonly string[] = []): string {
  let caught: unknown;
  try {
    assertUrlAllowed(raw, allow);
  } catch (error) {
    caught = error;
  }
  expect(isFerryError(caught, 'url_not_allowed'), `${raw} should be refused`).toBe(true);
  const err = caught as { status: number; message: string; errors?: { pointer: string; code: string }[] };
  expect(err.status).toBe(422);
  expect(err.errors?.[0]).toMatchObject({ pointer: '/url', code: 'url_not_allowed' });
  return err.message;
}

describe('assertUrlAllowed: scheme and credentials', () => {
  it('accepts a public https URL and returns it parsed', () => {
    const url = assertUrlAllowed('https://hooks.example.com/ferry?x=1', []);
    expect(url).toBeInstanceOf(URL);
    expect(url.hostname).toBe('hooks.example.com');
  });

  it.each(['https://8.8.8.8/', 'https://[2606:4700:4700::1111]/', 'https://example.com:8443/path'])('accepts public host %s', (raw) => {
    expect(() => assertUrlAllowed(raw, [])).not.toThrow();
  });

  it('refuses http to a host that is not allowed', () => {
    expect(refusal('http://hooks.example.com/')).toMatch(/https/);
    expect(refusal('http://hooks.example.com/', ['other.example.com'])).toMatch(/https/);
  });

  it('accepts http to an allowed host', () => {
    expect(assertUrlAllowed('http://hooks.example.com/', ['hooks.example.com']).protocol).toBe('http:');
    expect(assertUrlAllowed('http://127.0.0.1:3000/', ['127.0.0.0/8']).port).toBe('3000');
  });

  it.each(['ftp://example.com/', 'file:///etc/passwd', 'javascript:alert(1)', 'ws://example.com/', 'data:text/plain,hi'])(
    'refuses the non-http scheme %s even when everything is allowed',
    (raw) => {
      refusal(raw, ['*']);
    },
  );

  it.each(['', 'not a url', '/relative/path', 'https://', 'https://exa mple.com/'])('refuses the invalid URL %j', (raw) => {
    expect(refusal(raw)).toMatch(/valid/);
  });

  it('refuses credentials in the URL, allowed host or not', () => {
    expect(refusal('https://user:pass@example.com/')).toMatch(/credentials/);
    expect(refusal('https://user@example.com/')).toMatch(/credentials/);
    expect(refusal('http://user:pass@localhost/', ['localhost'])).toMatch(/credentials/);
  });

  it('never echoes credentials in the message', () => {
    expect(refusal('https://user:s3cr3t-Zq9@example.com/')).not.toContain('s3cr3t-Zq9');
  });
});

describe('assertUrlAllowed: blocked literal addresses', () => {
  it.each([
    ['loopback', 'https://127.0.0.1/'],
    ['loopback range', 'https://127.255.0.9/'],
    ['this network', 'https://0.0.0.0/'],
    ['private 10/8', 'https://10.1.2.3/'],
    ['private 172.16/12', 'https://172.16.0.1/'],
    ['private 172.31', 'https://172.31.255.255/'],
    ['private 192.168/16', 'https://192.168.1.1/'],
    ['link-local', 'https://169.254.1.1/'],
    ['cloud metadata', 'https://169.254.169.254/latest/meta-data/'],
    ['CGNAT', 'https://100.64.0.1/'],
    ['CGNAT top', 'https://100.127.255.254/'],
    ['benchmarking', 'https://198.18.0.1/'],
    ['documentation', 'https://192.0.2.1/'],
    ['multicast', 'https://224.0.0.1/'],
    ['multicast top', 'https://239.255.255.250/'],
    ['reserved', 'https://240.0.0.1/'],
    ['broadcast', 'https://255.255.255.255/'],
    ['IPv6 loopback', 'https://[::1]/'],
    ['IPv6 unspecified', 'https://[::]/'],
    ['IPv6 unique local fc00::/7', 'https://[fc00::1]/'],
    ['IPv6 unique local fd', 'https://[fd12:3456::1]/'],
    ['IPv6 link-local fe80::/10', 'https://[fe80::1]/'],
    ['IPv6 link-local top', 'https://[febf::1]/'],
    ['IPv6 multicast', 'https://[ff02::1]/'],
    ['IPv4-mapped loopback, dotted', 'https://[::ffff:127.0.0.1]/'],
    ['IPv4-mapped loopback, hex', 'https://[::ffff:7f00:1]/'],
    ['IPv4-mapped loopback, long form', 'https://[0:0:0:0:0:ffff:7f00:1]/'],
    ['IPv4-mapped metadata', 'https://[::ffff:169.254.169.254]/'],
    ['NAT64 of loopback', 'https://[64:ff9b::7f00:1]/'],
    ['decimal IPv4', 'https://2130706433/'],
    ['hex and short IPv4', 'https://0x7f.1/'],
    ['short IPv4', 'https://127.1/'],
    ['octal IPv4', 'https://0177.0.0.1/'],
    ['hex metadata', 'https://0xa9fea9fe/'],
    ['trailing dot IPv4', 'https://127.0.0.1./'],
  ])('refuses %s (%s)', (_name, raw) => {
    expect(refusal(raw)).toMatch(/private, loopback or reserved/);
  });

  it.each(['https://localhost/', 'https://LOCALHOST:8443/', 'https://api.localhost/', 'https://localhost./', 'https://api.localhost./'])(
    'refuses %s',
    (raw) => {
      expect(refusal(raw)).toMatch(/private, loopback or reserved/);
    },
  );

  it('refuses odd IPv4 spellings over http as well (https rule first)', () => {
    expect(refusal('http://2130706433/')).toMatch(/https/);
    expect(refusal('http://0x7f.1/')).toMatch(/https/);
    expect(refusal('http://127.1/')).toMatch(/https/);
  });

  it('accepts the odd spellings when their normalized address is allowed', () => {
    expect(assertUrlAllowed('http://2130706433/', ['127.0.0.1']).hostname).toBe('127.0.0.1');
    expect(assertUrlAllowed('http://0x7f.1/', ['127.0.0.0/8']).hostname).toBe('127.0.0.1');
    expect(assertUrlAllowed('https://127.1/', ['127.0.0.1/32']).hostname).toBe('127.0.0.1');
  });

  it('does not block addresses just outside the private ranges', () => {
    for (const raw of ['https://172.32.0.1/', 'https://100.128.0.1/', 'https://11.0.0.1/', 'https://169.255.0.1/', 'https://192.169.0.1/']) {
      expect(() => assertUrlAllowed(raw, []), raw).not.toThrow();
    }
  });
});

describe('assertUrlAllowed: allow-list', () => {
  it('allows a private address by exact host', () => {
    expect(() => assertUrlAllowed('https://10.0.0.5/', ['10.0.0.5'])).not.toThrow();
    refusal('https://10.0.0.6/', ['10.0.0.5']);
  });

  it('allows localhost by name, case-insensitively, with or without a trailing dot', () => {
    expect(() => assertUrlAllowed('http://localhost:3000/hook', ['localhost'])).not.toThrow();
    expect(() => assertUrlAllowed('http://localhost./hook', [' LocalHost '])).not.toThrow();
    refusal('http://api.localhost/', ['localhost']);
  });

  it('allows by CIDR', () => {
    expect(() => assertUrlAllowed('http://192.168.10.20/', ['192.168.0.0/16'])).not.toThrow();
    refusal('http://192.169.10.20/', ['192.168.0.0/16']);
    expect(() => assertUrlAllowed('https://[fd00::5]/', ['fd00::/8'])).not.toThrow();
    refusal('https://[fe80::5]/', ['fd00::/8']);
  });

  it("allows everything with '*'", () => {
    for (const raw of ['http://127.0.0.1/', 'http://localhost/', 'https://[::1]/', 'http://169.254.169.254/']) {
      expect(() => assertUrlAllowed(raw, ['*']), raw).not.toThrow();
    }
  });

  it('does not let an IPv4 CIDR allow an IPv6 address', () => {
    refusal('https://[::1]/', ['0.0.0.0/0']);
  });
});

describe('isBlockedAddress', () => {
  it.each([
    '127.0.0.1',
    '10.255.255.255',
    '169.254.169.254',
    '100.64.0.0',
    '224.0.0.1',
    '240.1.2.3',
    '::1',
    'fc00::',
    'fdff:ffff::1',
    'fe80::abcd',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:10.0.0.1',
    '2001:db8::1',
  ])('blocks %s', (address) => {
    expect(isBlockedAddress(address)).toBe(true);
  });

  it.each(['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '172.32.0.1'])('does not block %s', (address) => {
    expect(isBlockedAddress(address)).toBe(false);
  });

  it('answers false for things that are not IP literals', () => {
    expect(isBlockedAddress('localhost')).toBe(false);
    expect(isBlockedAddress('')).toBe(false);
    expect(isBlockedAddress('[::1]')).toBe(false);
  });
});

describe('isHostAllowed', () => {
  it('matches exact names, brackets and case aside', () => {
    expect(isHostAllowed('Example.COM', ['example.com'])).toBe(true);
    expect(isHostAllowed('[::1]', ['::1'])).toBe(true);
    expect(isHostAllowed('example.com', ['example.org'])).toBe(false);
    expect(isHostAllowed('sub.example.com', ['example.com'])).toBe(false);
    expect(isHostAllowed('example.com', [])).toBe(false);
  });

  it('matches CIDRs for IPv4 and IPv6', () => {
    expect(isHostAllowed('10.1.2.3', ['10.0.0.0/8'])).toBe(true);
    expect(isHostAllowed('11.1.2.3', ['10.0.0.0/8'])).toBe(false);
    expect(isHostAllowed('fd00::1', ['fd00::/8'])).toBe(true);
    expect(isHostAllowed('10.1.2.3', ['0.0.0.0/0'])).toBe(true);
    expect(isHostAllowed('example.com', ['0.0.0.0/0'])).toBe(false);
  });

  it.each([
    '10.0.0.0/',
    '10.0.0.0/abc',
    '10.0.0.0/99',
    '10.0.0.0/-1',
    '10.0.0.0/8.5',
    '10.0.0.0/8/9',
    '10.0.0.0/0x8',
    '10.0.0.0/1e1',
    '/8',
    'garbage/8',
    '10.0.0/8',
    '::/999',
  ])('never allows anything through the malformed entry %j', (entry) => {
    expect(isHostAllowed('10.0.0.5', [entry])).toBe(false);
    expect(isHostAllowed('::1', [entry])).toBe(false);
  });

  it('keeps checking later entries after a malformed one', () => {
    expect(isHostAllowed('10.0.0.5', ['10.0.0.0/99', 'bad/', '10.0.0.0/24'])).toBe(true);
  });
});

describe('IPv6 forms that embed an IPv4 address', () => {
  it.each(['https://[2002:7f00:1::]/', 'https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/', 'https://[64:ff9b:1::a00:1]/', 'https://[::ffff:0:7f00:1]/'])('refuses %s', (url) => {
    expect(() => assertUrlAllowed(url, [])).toThrow(/not allowed/);
  });
  it('still allows a public IPv6 address', () => {
    expect(assertUrlAllowed('https://[2606:4700:4700::1111]/', []).hostname).toBe('[2606:4700:4700::1111]');
  });
});

describe('assertUrlAllowed: the spellings the outbound client refuses are refused at create time too', () => {
  // The WHATWG parser normalizes most of these to a blocked literal; the rest are blocked IPv6
  // forms, trailing dots or localhost names. OutboundClient applies the same urlRefusal per request.
  it.each([
    '0x7f000001',
    '0X7F000001',
    '017700000001',
    '0x7f.0x0.0x0.0x1',
    '127.000.000.001',
    '127.0.0.1..',
    '0x7f000001.',
    '%31%32%37.0.0.1',
    '127\u30020\u30020\u30021',
    '\uff11\uff12\uff17.0.0.1',
    '[::FFFF:7F00:1]',
    '[::127.0.0.1]',
    '[::ffff:0:127.0.0.1]',
    '[64:ff9b::127.0.0.1]',
    '0',
    '0x0',
    '4294967295',
    '0xa9.0xfe.0xa9.0xfe',
    '[fd00:ec2::254]',
    '[fec0::1]',
    '[2001:2::1]',
    '[3fff::1]',
    '[100::1]',
    '[4000::1]',
    '[2002:a00:1::]',
    'localhost..',
    'LOCALHOST.',
    'a.b.localhost',
  ])('refuses https://%s/', (host) => {
    expect(refusal(`https://${host}/`)).toMatch(/private, loopback or reserved/);
  });

  it('lets the same spellings through when their normalized host is allowed', () => {
    expect(assertUrlAllowed('http://0x7f000001:8080/', ['127.0.0.1']).hostname).toBe('127.0.0.1');
    expect(assertUrlAllowed('http://127.0.0.1..:8080/', ['127.0.0.1']).hostname).toBe('127.0.0.1..');
    expect(assertUrlAllowed('https://[::FFFF:7F00:1]/', ['::ffff:7f00:1']).hostname).toBe('[::ffff:7f00:1]');
  });
});

describe('urlRefusal and the helpers the outbound client shares', () => {
  it('gives the reason without the URL, or null', () => {
    expect(urlRefusal(new URL('https://hooks.example.com/'), [])).toBeNull();
    expect(urlRefusal(new URL('http://hooks.example.com/'), [])).toBe('it must use https');
    expect(urlRefusal(new URL('https://u:p@hooks.example.com/'), [])).toBe('it must not contain credentials');
    expect(urlRefusal(new URL('https://10.0.0.1/'), [])).toBe('it points to a private, loopback or reserved address');
    expect(urlRefusal(new URL('http://10.0.0.1/'), ['10.0.0.0/8'])).toBeNull();
  });

  it('normalizes hosts for comparison: brackets, case and trailing dots', () => {
    expect(policyHost('[::1]')).toBe('::1');
    expect(policyHost('Example.COM..')).toBe('example.com');
    expect(isLocalhostName('LOCALHOST.')).toBe(true);
    expect(isLocalhostName('x.localhost')).toBe(true);
    expect(isLocalhostName('localhost.example.com')).toBe(false);
    expect(isHostAllowed('example.com.', ['example.com'])).toBe(true);
  });

  it('blocks IPv6 outside global unicast and zoned addresses, not IPv4-mapped public ones', () => {
    for (const address of ['4000::1', '::2', 'fe80::1%eth0', '2001:2::1', '3fff::1', '5f00::1', '2001:0:4136:e378:8000:63bf:3fff:fdd2']) {
      expect(isBlockedAddress(address), address).toBe(true);
    }
    for (const address of ['2606:4700:4700::1111', '2a00:1450:4001::200e', '::ffff:1.1.1.1']) {
      expect(isBlockedAddress(address), address).toBe(false);
    }
  });
});
