// The client's public address, from its SDP offer, as the Go proxy finds
// it (common/sdp.ClientIP): the relay gets it as the client_ip query
// parameter, for its per-country statistics.

import { parseAddr, isLocal, formatAddr } from './ip.js';

/**
 * Returns the address of the first ICE candidate that is a public IP, else
 * the first public address of a "c=" line, else null.
 * @param {string} sdp
 * @returns {string | null}
 */
export function clientIP(sdp) {
  let fromConnection = null;
  for (const raw of sdp.split('\n')) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line.startsWith('a=candidate:')) {
      const f = line.slice('a=candidate:'.length).trim().split(/\s+/);
      if (f.length >= 8 && f[6] === 'typ') {
        const a = parseAddr(f[4]);
        if (a && !isLocal(a)) return formatAddr(unmapped(a));
      }
      continue;
    }
    if (fromConnection === null && line.startsWith('c=')) {
      const f = line.slice(2).trim().split(/\s+/);
      if (f.length >= 3 && f[0] === 'IN' && (f[1] === 'IP4' || f[1] === 'IP6')) {
        const a = parseAddr(f[2]);
        if (a && !isLocal(a)) fromConnection = formatAddr(unmapped(a));
      }
    }
  }
  return fromConnection;
}

/** @param {Uint8Array} a */
function unmapped(a) {
  if (a.length === 16 && a.subarray(0, 10).every((b) => b === 0) && a[10] === 0xff && a[11] === 0xff) {
    return a.slice(12);
  }
  return a;
}
