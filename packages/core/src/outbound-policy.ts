import { BlockList, isIP } from 'node:net';
import { FerryError } from './errors.js';

/**
 * Address ranges no outbound request may reach unless explicitly allowed: loopback, private,
 * link-local (cloud metadata lives there), CGNAT, "this network", benchmarking, documentation,
 * multicast and reserved ranges, and their IPv6 counterparts (IPv4-mapped forms included).
 */
export const BLOCKED_RANGES: BlockList = (() => {
  const list = new BlockList();
  const v4: Array<[string, number]> = [
    ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
    ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24],
    ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
  ];
  for (const [net, prefix] of v4) {
    list.addSubnet(net, prefix, 'ipv4');
    list.addSubnet(`::ffff:${net}`, 96 + prefix, 'ipv6');
  }
  const v6: Array<[string, number]> = [
    // 6to4, Teredo, NAT64 (well-known and local-use) and IPv4-translated addresses all embed an
    // IPv4 address that could be a private one.
    ['2002::', 16], ['2001::', 32], ['64:ff9b:1::', 48], ['::ffff:0:0:0', 96],
    ['::', 96], ['::1', 128], ['64:ff9b::', 96], ['100::', 64], ['2001:db8::', 32], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8],
  ];
  for (const [net, prefix] of v6) list.addSubnet(net, prefix, 'ipv6');
  return list;
})();

/** True when `address` (an IP literal) is in a blocked range. */
export function isBlockedAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  return BLOCKED_RANGES.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** True when `host` matches an allow-list entry: `*`, an exact host name, or a CIDR holding the IP. */
export function isHostAllowed(host: string, allow: readonly string[]): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  for (const entry of allow) {
    const e = entry.trim().toLowerCase();
    if (e === '*' || e === bare) return true;
    const [net, bits, ...rest] = e.split('/');
    // Only `<ip>/<decimal prefix>`: `10.0.0.0/` or `10.0.0.0/8/9` must not read as a valid CIDR.
    if (bits !== undefined && rest.length === 0 && /^\d{1,3}$/.test(bits) && net && isIP(bare) && isIP(net) === isIP(bare)) {
      const list = new BlockList();
      const type = isIP(net) === 4 ? 'ipv4' : 'ipv6';
      try {
        list.addSubnet(net, Number(bits), type);
        if (list.check(bare, type)) return true;
      } catch {
        // A malformed allow-list entry never allows anything.
      }
    }
  }
  return false;
}

/**
 * Checks a URL before it is stored or called: https only (http for allowed hosts), no user
 * info, and no literal address in a blocked range unless allowed. A host name passes here; the
 * outbound HTTP client must check the address it resolves to at connect time (against DNS
 * rebinding) with {@link isBlockedAddress}. Throws 422 `url_not_allowed`.
 */
export function assertUrlAllowed(raw: string, allow: readonly string[]): URL {
  const fail = (why: string) => new FerryError('url_not_allowed', `The URL is not allowed: ${why}.`, {
    errors: [{ pointer: '/url', code: 'url_not_allowed', detail: `The URL is not allowed: ${why}.` }],
  });
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw fail('it is not a valid absolute URL');
  }
  // A trailing dot (`localhost.`) names the same host; drop it so it cannot slip past the checks.
  const host = url.hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '');
  const allowed = isHostAllowed(host, allow);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && allowed)) throw fail('it must use https');
  if (url.username || url.password) throw fail('it must not contain credentials');
  if (!allowed && (isBlockedAddress(host) || host === 'localhost' || host.endsWith('.localhost'))) {
    throw fail('it points to a private, loopback or reserved address');
  }
  return url;
}
