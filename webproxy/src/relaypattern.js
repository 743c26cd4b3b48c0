// Relay patterns and the relay URL policy, with the Go proxy's semantics
// (common/relaypattern, proxy/relayports.go, proxy/relay.go).
//
// A pattern ends with '$'; one leading '^' makes it exact, otherwise it is a
// plain suffix test (no label boundary: "example.com$" matches
// "evilexample.com"; write ".example.com$" for subdomains only). ASCII
// letters compare case-insensitively. An optional ":ports" part before the
// '$' lists the relay ports allowed ("relay.example:443,8443$", ":*" for
// any); without it only 443 (80 for ws://) is. The broker is sent the
// hostname pattern alone, as Snowflake's broker expects.

import { parseAddr, notGlobal } from './ip.js';

/** Why a relay URL was refused: fixed texts, safe to log. */
export const RelayRefusal = Object.freeze({
  URL: 'invalid relay URL',
  SCHEME: 'relay URL scheme not allowed',
  HOSTNAME: 'relay hostname does not match the accepted pattern',
  PORT: 'relay port not allowed by the pattern',
  PRIVATE: 'relay address is not public',
});

const maxPatternPorts = 16;

/** @param {string} s */
function lowerASCII(s) {
  return s.replace(/[A-Z]/g, (c) => c.toLowerCase());
}

/**
 * A parsed relay pattern.
 * @typedef {object} Pattern
 * @property {string} rule the hostname pattern as sent to the broker
 * @property {boolean} exact
 * @property {string} suffix lower-cased host or suffix
 * @property {boolean} anyPort
 * @property {number[]} ports empty (and not anyPort): the default port only
 */

/**
 * Parses a relay pattern with optional ports. Throws an Error whose message
 * is fixed text on a pattern that does not end with '$' or lists bad ports.
 * @param {string} rule
 * @returns {Pattern}
 */
export function parsePattern(rule) {
  if (typeof rule !== 'string' || !rule.endsWith('$')) {
    throw new Error('relay pattern must end with $');
  }
  if (rule.length > 256 || !/^[\x21-\x7e]*$/.test(rule) || /[<>&"'`\\]/.test(rule)) {
    throw new Error('relay pattern has characters a broker refuses');
  }
  let hostRule = rule;
  let anyPort = false;
  /** @type {number[]} */
  let ports = [];
  const body = rule.slice(0, -1);
  const i = body.lastIndexOf(':');
  if (i >= 0) {
    let host = body.slice(0, i);
    const list = body.slice(i + 1);
    const exact = host.startsWith('^');
    let bare = exact ? host.slice(1) : host;
    let split = true;
    if (bare.startsWith('[') && bare.endsWith(']')) {
      bare = bare.slice(1, -1);
    } else if (bare.includes(':') || list === '' || !/^[0-9,*]+$/.test(list)) {
      split = false; // an IPv6 literal without brackets, or no ports part
    }
    if (split) {
      if (list === '*') {
        anyPort = true;
      } else {
        for (const f of list.split(',')) {
          if (!/^[0-9]{1,5}$/.test(f) || Number(f) === 0 || Number(f) > 65535) {
            throw new Error('relay pattern port is not a number from 1 to 65535');
          }
          if (!ports.includes(Number(f))) ports.push(Number(f));
        }
        if (ports.length > maxPatternPorts) throw new Error('relay pattern lists too many ports');
      }
      host = (exact ? '^' : '') + bare;
      hostRule = host + '$';
    }
  }
  let s = hostRule.slice(0, -1);
  const exact = s.startsWith('^');
  if (exact) s = s.slice(1);
  return { rule: hostRule, exact, suffix: lowerASCII(s), anyPort, ports };
}

/**
 * Reports whether host matches the pattern's hostname part.
 * @param {Pattern} p
 * @param {string} host
 */
export function matchHost(p, host) {
  const h = lowerASCII(host);
  return p.exact ? h === p.suffix : h.endsWith(p.suffix);
}

/**
 * @param {Pattern} p
 * @param {number} port
 * @param {number} def the scheme's default port
 */
function allowsPort(p, port, def) {
  if (p.anyPort) return true;
  if (p.ports.length === 0) return port === def;
  return p.ports.includes(port);
}

/**
 * The relay policy of a proxy.
 * @typedef {object} RelayPolicy
 * @property {Pattern} pattern
 * @property {boolean} allowNonTLS permit ws://
 * @property {boolean} allowPrivate permit local and non-global IP literals
 */

/**
 * Checks a relay URL against the policy, in the Go proxy's order; returns
 * the URL to dial, or throws an Error whose message is a RelayRefusal.
 * A browser cannot resolve names before it connects, so only literal IP
 * addresses are checked for being public.
 * @param {RelayPolicy} policy
 * @param {string} raw
 * @returns {URL}
 */
export function checkRelayURL(policy, raw) {
  let u;
  try {
    u = new URL(raw);
  } catch {
    throw new Error(RelayRefusal.URL);
  }
  let host = u.hostname;
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  const ip = parseAddr(host);
  if (ip && !policy.allowPrivate && notGlobal(ip)) throw new Error(RelayRefusal.PRIVATE);
  if (u.protocol === 'ws:') {
    if (!policy.allowNonTLS) throw new Error(RelayRefusal.SCHEME);
  } else if (u.protocol !== 'wss:') {
    throw new Error(RelayRefusal.SCHEME);
  }
  if (host === '' || u.username !== '' || u.password !== '') throw new Error(RelayRefusal.URL);
  if (!matchHost(policy.pattern, host)) throw new Error(RelayRefusal.HOSTNAME);
  const def = u.protocol === 'ws:' ? 80 : 443;
  const port = u.port === '' ? def : Number(u.port);
  if (!allowsPort(policy.pattern, port, def)) throw new Error(RelayRefusal.PORT);
  return u;
}
