import { BlockList, isIP } from 'node:net';
import { FerryError } from '../common/index.js';

/**
 * Address ranges no outbound request may reach unless explicitly allowed: loopback, private
 * (RFC 1918), link-local (cloud metadata, 169.254.169.254, lives there), CGNAT, "this network",
 * benchmarking, documentation, multicast, reserved and broadcast, and their IPv6 counterparts
 * (unique local, where fd00:ec2::254 lives, link-local, site-local, multicast, documentation,
 * benchmarking) plus every IPv6 form that embeds an IPv4 address. {@link isBlockedAddress} also
 * refuses IPv6 outside global unicast space, which this list does not spell out.
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
    // 6to4, Teredo, NAT64 (well-known and local-use), IPv4-compatible and IPv4-translated
    // addresses all embed an IPv4 address that could be a private one: refused whole rather
    // than decoded, since no webhook receiver needs them.
    ['2002::', 16], ['64:ff9b::', 96], ['64:ff9b:1::', 48], ['::ffff:0:0:0', 96], ['::', 96],
    // 2001::/23 is IETF protocol assignments: Teredo (2001::/32), benchmarking (2001:2::/48), ORCHID.
    ['2001::', 23],
    ['::1', 128], ['100::', 64], ['2001:db8::', 32], ['3fff::', 20], ['5f00::', 16],
    ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8],
  ];
  for (const [net, prefix] of v6) list.addSubnet(net, prefix, 'ipv6');
  return list;
})();

/**
 * IPv6 outside 2000::/3 (global unicast) is special purpose or unassigned; only the IPv4-mapped
 * block is let through there, and only for the public IPv4 addresses {@link BLOCKED_RANGES}
 * leaves alone (it carries a mapped copy of every IPv4 range).
 */
const GLOBAL_UNICAST_V6 = (() => {
  const list = new BlockList();
  list.addSubnet('2000::', 3, 'ipv6');
  return list;
})();
const IPV4_MAPPED = (() => {
  const list = new BlockList();
  list.addSubnet('::ffff:0:0', 96, 'ipv6');
  return list;
})();

/**
 * True when `address` (an IP literal, no brackets) is in a blocked range, or is an IPv6 address
 * outside global unicast space that is not an IPv4-mapped public address. An IPv6 address with
 * a zone (`fe80::1%eth0`) is always blocked: only link-local addresses carry one.
 */
export function isBlockedAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  if (family === 4) return BLOCKED_RANGES.check(address, 'ipv4');
  if (address.includes('%')) return true;
  if (BLOCKED_RANGES.check(address, 'ipv6')) return true;
  return !GLOBAL_UNICAST_V6.check(address, 'ipv6') && !IPV4_MAPPED.check(address, 'ipv6');
}

/**
 * The host of a URL as the policy compares it: without IPv6 brackets and without trailing dots
 * (`localhost.` and `127.0.0.1..` name the same hosts as without them, and must not slip past).
 */
export function policyHost(hostname: string): string {
  return hostname.replace(/^\[|\]$/g, '').replace(/\.+$/, '').toLowerCase();
}

/** True for `localhost` and its subdomains, which resolvers answer with loopback (RFC 6761). */
export function isLocalhostName(host: string): boolean {
  const bare = policyHost(host);
  return bare === 'localhost' || bare.endsWith('.localhost');
}

/**
 * True when `host` matches an allow-list entry (`FERRY_OUTBOUND_ALLOW` syntax): `*`, an exact
 * host name or IP, or a CIDR holding the IP. Brackets, case and trailing dots aside.
 */
export function isHostAllowed(host: string, allow: readonly string[]): boolean {
  const bare = policyHost(host);
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
 * Why the outbound policy refuses an already parsed URL, or null when it passes: not http(s);
 * http to a host that is not allowed; user info; or, unless the host is allowed, a literal
 * address in a blocked range (every spelling the WHATWG parser turns into one: `2130706433`,
 * `0x7f.1`, `[::ffff:127.0.0.1]`...) or a `localhost` name. A host name passes: its resolved
 * addresses are checked when connecting (see `OutboundClient`). The reason never repeats the URL.
 */
export function urlRefusal(url: URL, allow: readonly string[]): string | null {
  const host = policyHost(url.hostname);
  const allowed = isHostAllowed(host, allow);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && allowed)) return 'it must use https';
  if (url.username || url.password) return 'it must not contain credentials';
  if (!allowed && (isBlockedAddress(host) || isLocalhostName(host))) return 'it points to a private, loopback or reserved address';
  return null;
}

/**
 * Checks a URL before it is stored or called, with the same rules as {@link urlRefusal} (which
 * the outbound client applies to every request), and returns it parsed. Throws 422
 * `url_not_allowed` with a field error on `/url`.
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
  const why = urlRefusal(url, allow);
  if (why) throw fail(why);
  return url;
}

/**
 * A host as the system resolver will take it, in the WHATWG URL parser's canonical form: the
 * other spellings of an IPv4 address (`2130706433`, `0x7f.1`, `0177.0.0.1`, `127.1`), which
 * `getaddrinfo` also accepts, become the dotted quad, and IPv6 loses its brackets and its
 * zeros. A host the parser refuses is returned bare (it cannot be an address then).
 */
export function canonicalHost(host: string): string {
  const bare = policyHost(host);
  if (isIP(bare) !== 0) return bare;
  try {
    return policyHost(new URL(`http://${bare.includes(':') ? `[${bare}]` : bare}/`).hostname);
  } catch {
    return bare;
  }
}

/**
 * Why the outbound policy refuses a host a connector is configured with (a database host, a
 * broker, the host of an endpoint URL), or null when it passes: unless the host is allowed, a
 * literal address in a blocked range in any spelling ({@link canonicalHost}), a `localhost`
 * name, an empty host (drivers read it as the local machine) or a Unix socket path (a local
 * socket by definition). A host name passes here: its resolved addresses are checked when
 * connecting. The reason never repeats the host.
 */
export function hostRefusal(host: string, allow: readonly string[]): string | null {
  if (isHostAllowed(host, allow)) return null;
  const canonical = canonicalHost(host);
  if (canonical !== policyHost(host) && isHostAllowed(canonical, allow)) return null;
  if (canonical === '' || host.startsWith('/')) return 'it points to the local machine';
  if (isBlockedAddress(canonical) || isLocalhostName(canonical)) return 'it points to a private, loopback or reserved address';
  return null;
}
