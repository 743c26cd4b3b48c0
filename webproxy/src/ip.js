// IP address parsing and classification, as the Go proxy does it
// (net/netip, common/sdp.IsLocal and proxy/addrpolicy.go): a relay or a
// client address is "local" or "not global" by the same rules in both.

/**
 * An IP address: 4 bytes (IPv4) or 16 bytes (IPv6).
 * @typedef {Uint8Array} Addr
 */

const v4Part = /^(0|[1-9][0-9]{0,2})$/;

/**
 * Parses dotted-decimal IPv4 without leading zeros, as netip.ParseAddr.
 * @param {string} s
 * @returns {Addr | null}
 */
function parse4(s) {
  const parts = s.split('.');
  if (parts.length !== 4) return null;
  const out = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    if (!v4Part.test(parts[i])) return null;
    const n = Number(parts[i]);
    if (n > 255) return null;
    out[i] = n;
  }
  return out;
}

/**
 * Parses an IPv6 address (RFC 4291 text, with "::" and an optional
 * embedded IPv4 tail); zones are refused.
 * @param {string} s
 * @returns {Addr | null}
 */
function parse6(s) {
  if (s.length < 2 || s.length > 45 || s.includes('%')) return null;
  const out = new Uint8Array(16);
  const halves = s.split('::');
  if (halves.length > 2) return null;
  /** @param {string} h @param {boolean} last @returns {number[] | null} */
  const groups = (h, last) => {
    if (h === '') return [];
    const words = [];
    const fields = h.split(':');
    for (let i = 0; i < fields.length; i++) {
      const f = fields[i];
      if (last && i === fields.length - 1 && f.includes('.')) {
        const v4 = parse4(f);
        if (!v4) return null;
        words.push((v4[0] << 8) | v4[1], (v4[2] << 8) | v4[3]);
        continue;
      }
      if (!/^[0-9a-fA-F]{1,4}$/.test(f)) return null;
      words.push(parseInt(f, 16));
    }
    return words;
  };
  const head = groups(halves[0], halves.length === 1);
  const tail = halves.length === 2 ? groups(halves[1], true) : [];
  if (!head || !tail) return null;
  const n = head.length + tail.length;
  if (halves.length === 1 ? n !== 8 : n > 7) return null;
  const words = [...head, ...new Array(8 - n).fill(0), ...tail];
  words.forEach((w, i) => {
    out[2 * i] = w >> 8;
    out[2 * i + 1] = w & 0xff;
  });
  return out;
}

/**
 * Parses an IPv4 or IPv6 address (no brackets, no zone), or returns null.
 * @param {string} s
 * @returns {Addr | null}
 */
export function parseAddr(s) {
  return s.includes(':') ? parse6(s) : parse4(s);
}

/**
 * Returns the IPv4 address inside an IPv4-mapped IPv6 address, or a itself.
 * @param {Addr} a
 * @returns {Addr}
 */
function unmap(a) {
  if (a.length === 16 && a.subarray(0, 10).every((b) => b === 0) && a[10] === 0xff && a[11] === 0xff) {
    return a.slice(12);
  }
  return a;
}

/**
 * A prefix: address bytes and length in bits.
 * @typedef {{addr: Addr, bits: number}} Prefix
 */

/** @param {string} s @returns {Prefix} */
function prefix(s) {
  const [a, b] = s.split('/');
  const addr = parseAddr(a);
  if (!addr) throw new Error('bad prefix ' + s);
  return { addr, bits: Number(b) };
}

/** @param {Prefix[]} list @param {Addr} a */
function inAny(list, a) {
  return list.some((p) => contains(p, a));
}

/** @param {Prefix} p @param {Addr} a */
function contains(p, a) {
  if (p.addr.length !== a.length) return false;
  let bits = p.bits;
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if ((p.addr[i] & mask) !== (a[i] & mask)) return false;
  }
  return true;
}

// common/sdp.IsLocal: unspecified, loopback, private, link-local, multicast,
// CGNAT (100.64.0.0/10) and "this network" (0.0.0.0/8).
const local = [
  '0.0.0.0/8', '10.0.0.0/8', '100.64.0.0/10', '127.0.0.0/8', '169.254.0.0/16', '172.16.0.0/12',
  '192.168.0.0/16', '224.0.0.0/4',
  '::/128', '::1/128', 'fc00::/7', 'fe80::/10', 'ff00::/8',
].map(prefix);

/**
 * Reports whether a is not a public unicast address (common/sdp.IsLocal).
 * @param {Addr} a
 */
export function isLocal(a) {
  return inAny(local, unmap(a));
}

// proxy/addrpolicy.go: IANA special-purpose blocks that are not globally
// reachable, and the reachable exceptions inside them.
const notGlobalV4 = ['192.0.0.0/24', '192.0.2.0/24', '192.88.99.0/24', '198.18.0.0/15', '198.51.100.0/24',
  '203.0.113.0/24', '240.0.0.0/4'].map(prefix);
const globalV4 = ['192.0.0.9/32', '192.0.0.10/32'].map(prefix);
const notGlobalV6 = ['2001::/23', '2001:db8::/32', '3fff::/20'].map(prefix);
const globalV6 = ['2001:1::1/128', '2001:1::2/128', '2001:1::3/128', '2001:3::/32', '2001:4:112::/48',
  '2001:20::/28', '2001:30::/28'].map(prefix);
const global6 = prefix('2000::/3');
const nat64 = prefix('64:ff9b::/96');
const sixTo4 = prefix('2002::/16');

/**
 * Reports whether a relay at a must be refused unless private relays are
 * allowed: a local address or one IANA marks not globally reachable.
 * @param {Addr} a
 * @returns {boolean}
 */
export function notGlobal(a) {
  if (isLocal(a)) return true;
  a = unmap(a);
  if (a.length === 4) return inAny(notGlobalV4, a) && !inAny(globalV4, a);
  if (contains(nat64, a)) return notGlobal(a.slice(12, 16));
  if (contains(sixTo4, a)) return notGlobal(a.slice(2, 6));
  if (!contains(global6, a)) return true;
  return inAny(notGlobalV6, a) && !inAny(globalV6, a);
}

/**
 * Formats an address as netip does (IPv6 compressed, lower case).
 * @param {Addr} a
 * @returns {string}
 */
export function formatAddr(a) {
  if (a.length === 4) return a.join('.');
  const words = [];
  for (let i = 0; i < 16; i += 2) words.push((a[i] << 8) | a[i + 1]);
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8;) {
    if (words[i] !== 0) { i++; continue; }
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > bestLen) { best = i; bestLen = j - i; }
    i = j;
  }
  const hex = words.map((w) => w.toString(16));
  if (best < 0) return hex.join(':');
  return hex.slice(0, best).join(':') + '::' + hex.slice(best + bestLen).join(':');
}
