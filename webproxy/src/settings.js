// The browser proxy's settings: the network's configuration (config.json,
// built into every packaging) checked once, with the timings of the Go
// proxy's defaults.

import { parsePattern, checkRelayURL } from './relaypattern.js';
import { ProxyType } from './protocol.js';

/**
 * The network's configuration, as config.json holds it.
 * @typedef {object} NetworkConfig
 * @property {string} brokerURL the broker's base URL; "proxy" and "answer" are resolved against it
 * @property {string} relayPattern relay hostname pattern, ending in '$', optionally with ":ports" before it
 * @property {string} [relayURL] the default relay, used when the broker names none, and checked for reachability
 * @property {string} [natProbeURL] the NAT probe (flurry-natprobe); empty: the NAT type stays unknown
 * @property {string[]} [stunServers] stun: URLs
 * @property {number} [capacity] most clients served at once; 0 means the default
 * @property {boolean} [allowNonTLSRelay] permit ws:// relays (test networks only)
 * @property {boolean} [allowPrivateRelay] permit relays at local addresses (test networks only)
 */

/** Timings, in milliseconds; the Go proxy's defaults. */
export const defaultTimings = Object.freeze({
  pollInterval: 5000, // when the broker gives no NextPoll; first error back-off
  minPollInterval: 1000,
  maxPollInterval: 60 * 60 * 1000,
  backoffMax: 10 * 60 * 1000,
  brokerTimeout: 30000,
  answerTimeout: 3000,
  dataChannelTimeout: 20000,
  inactivityTimeout: 30000,
  relayDialTimeout: 10000,
  relayRecheck: 24 * 60 * 60 * 1000,
  relayRetry: 5 * 60 * 1000,
  natRetest: 24 * 60 * 60 * 1000,
  natProbeTimeout: 20000,
});

export const DEFAULT_CAPACITY = 4;
export const MAX_CAPACITY = 64;

/**
 * Checked settings.
 * @typedef {object} Settings
 * @property {string} proxyType
 * @property {URL} pollURL
 * @property {URL} answerURL
 * @property {string} relayURL
 * @property {string} natProbeURL
 * @property {RTCIceServer[]} iceServers
 * @property {number} capacity
 * @property {import('./relaypattern.js').RelayPolicy} relayPolicy
 * @property {typeof defaultTimings} timings
 */

/**
 * Checks cfg and returns settings; throws an Error naming the field.
 * @param {NetworkConfig} cfg
 * @param {string} proxyType "webext" or "badge"
 * @param {Partial<typeof defaultTimings>} [timings] overrides, for tests
 * @returns {Settings}
 */
export function settle(cfg, proxyType, timings = {}) {
  if (proxyType !== ProxyType.WEBEXT && proxyType !== ProxyType.BADGE) {
    throw new Error('proxy type must be webext or badge');
  }
  let base;
  try {
    base = new URL(cfg.brokerURL);
  } catch {
    throw new Error('brokerURL is not a URL');
  }
  if (base.protocol !== 'https:' && base.protocol !== 'http:') throw new Error('brokerURL must be an http(s) URL');
  const natProbeURL = cfg.natProbeURL ?? '';
  if (natProbeURL !== '') {
    let u;
    try {
      u = new URL(natProbeURL);
    } catch {
      throw new Error('natProbeURL is not a URL');
    }
    if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new Error('natProbeURL must be an http(s) URL');
  }
  const stun = cfg.stunServers ?? [];
  if (!Array.isArray(stun) || stun.some((s) => typeof s !== 'string' || !/^stuns?:[^\s]+$/.test(s))) {
    throw new Error('stunServers must be a list of stun: URLs');
  }
  let capacity = cfg.capacity ?? 0;
  if (!Number.isInteger(capacity) || capacity < 0 || capacity > MAX_CAPACITY) {
    throw new Error('capacity must be an integer from 0 to ' + MAX_CAPACITY);
  }
  if (capacity === 0) capacity = DEFAULT_CAPACITY;
  const pattern = parsePattern(cfg.relayPattern);
  const relayPolicy = {
    pattern,
    allowNonTLS: cfg.allowNonTLSRelay === true,
    allowPrivate: cfg.allowPrivateRelay === true,
  };
  const relayURL = cfg.relayURL ?? '';
  if (relayURL !== '') {
    try {
      checkRelayURL(relayPolicy, relayURL);
    } catch (e) {
      throw new Error('relayURL: ' + (e instanceof Error ? e.message : 'refused'));
    }
  }
  for (const [k, v] of Object.entries(timings)) {
    if (!(k in defaultTimings) || !Number.isFinite(v) || v < 0) throw new Error('bad timing ' + k);
  }
  return {
    proxyType,
    pollURL: new URL('proxy', base),
    answerURL: new URL('answer', base),
    relayURL,
    natProbeURL,
    iceServers: stun.length > 0 ? [{ urls: [...stun] }] : [],
    capacity,
    relayPolicy,
    timings: { ...defaultTimings, ...timings },
  };
}
