// The broker's proxy protocol, version 1.3, as Flurry's Go proxy and
// Snowflake's proxies speak it (see docs/broker.md and the Go package
// messages). Requests are encoded byte for byte as Go's encoding/json
// writes them; replies are decoded and validated as the Go proxy does, and
// every failure is an Error whose message is a fixed text (never text from
// the reply), so that it can be logged as it is.
//
//	POST /proxy  {"Sid":"…","Version":"1.3","Type":"webext","NAT":"unknown","Clients":0,"AcceptedRelayPattern":"relay.example$"}
//	      reply  {"Status":"client match","Offer":"{\"type\":\"offer\",\"sdp\":\"…\"}","NAT":"unknown","NextPoll":20000,"RelayURL":"wss://relay.example/"}
//	POST /answer {"Version":"1.3","Sid":"…","Answer":"{\"type\":\"answer\",\"sdp\":\"…\"}"}
//	      reply  {"Status":"success"} or {"Status":"client gone"}

export const PROXY_VERSION = '1.3';

export const Status = Object.freeze({
  CLIENT_MATCH: 'client match',
  NO_MATCH: 'no match',
  INCORRECT_RELAY_PATTERN: 'incorrect relay pattern',
  SUCCESS: 'success',
  CLIENT_GONE: 'client gone',
});

export const NAT = Object.freeze({ UNKNOWN: 'unknown', RESTRICTED: 'restricted', UNRESTRICTED: 'unrestricted' });

/** Proxy types the broker knows for browser proxies. */
export const ProxyType = Object.freeze({ WEBEXT: 'webext', BADGE: 'badge' });

// Bounds, as the Go package messages.
export const MAX_BODY_SIZE = 100000;
export const MAX_SESSION_DESCRIPTION_LENGTH = 16000;
export const MAX_RELAY_URL_LENGTH = 1024;
export const MAX_NEXT_POLL = 24 * 60 * 60 * 1000;
const MAX_CLIENTS = 1 << 16;

/** Why a reply was refused: fixed texts, safe to log. */
export const ReplyError = Object.freeze({
  TOO_LARGE: 'reply too large',
  NOT_UTF8: 'reply is not valid UTF-8',
  MALFORMED: 'reply is not a valid message',
  EMPTY: 'reply has no status',
  UNKNOWN_STATUS: 'reply has an unknown status',
  MISSING_OFFER: 'match without an offer',
  BAD_SESSION_DESCRIPTION: 'malformed session description',
  BAD_RELAY_URL: 'relay URL malformed',
  INCORRECT_RELAY_PATTERN: 'broker refused our relay pattern',
  MISSING_ANSWER: 'probe reply has no answer',
  BAD_VERSION: 'unknown protocol version',
  BAD_SID: 'invalid session id',
});

/**
 * A string as Go's encoding/json writes it: JSON with <, >, &, U+2028 and
 * U+2029 escaped.
 * @param {string} s
 */
export function goString(s) {
  return JSON.stringify(s).replace(/[<>&\u2028\u2029]/g,
    (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
}

/**
 * A fresh session id as Snowflake's: 16 random bytes, unpadded standard
 * base64 (22 characters).
 * @returns {string}
 */
export function newSid() {
  const b = new Uint8Array(16);
  crypto.getRandomValues(b);
  return btoa(String.fromCharCode(...b)).replace(/=+$/, '');
}

/**
 * Encodes a poll request: every key, in Go's order; Clients rounded down to
 * a multiple of 8, so that the broker learns less about the proxy's users.
 * @param {{sid: string, type: string, nat: string, clients: number, pattern: string}} r
 * @returns {string}
 */
export function encodePollRequest(r) {
  const clients = Math.min(Math.max(Math.floor(r.clients / 8) * 8, 0), MAX_CLIENTS);
  return '{"Sid":' + goString(r.sid) + ',"Version":"' + PROXY_VERSION + '","Type":' + goString(r.type) +
    ',"NAT":' + goString(r.nat) + ',"Clients":' + clients + ',"AcceptedRelayPattern":' + goString(r.pattern) + '}';
}

/**
 * Encodes an answer request.
 * @param {string} sid
 * @param {string} answer the serialized session description
 */
export function encodeAnswerRequest(sid, answer) {
  return '{"Version":"' + PROXY_VERSION + '","Sid":' + goString(sid) + ',"Answer":' + goString(answer) + '}';
}

/**
 * Serializes a session description as Go (and so Snowflake) does.
 * @param {string} type
 * @param {string} sdp
 */
export function encodeSessionDescription(type, sdp) {
  return '{"type":' + goString(type) + ',"sdp":' + goString(sdp) + '}';
}

/**
 * Encodes what a NAT probe is sent: a poll response carrying our offer.
 * @param {string} offer the serialized session description
 */
export function encodeProbeRequest(offer) {
  return '{"Status":"client match","Offer":' + goString(offer) + ',"NAT":"","NextPoll":0,"RelayURL":""}';
}

/**
 * Decodes a reply body (bytes) as a UTF-8 JSON object, as Go's decoder
 * does: keys match field names case-insensitively, and of two keys for one
 * field the later wins.
 * @param {Uint8Array} body
 * @returns {Map<string, unknown>} keys lower-cased
 */
function decodeObject(body) {
  if (body.length > MAX_BODY_SIZE) throw new Error(ReplyError.TOO_LARGE);
  let text;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    throw new Error(ReplyError.NOT_UTF8);
  }
  let v;
  try {
    v = JSON.parse(text);
  } catch {
    throw new Error(ReplyError.MALFORMED);
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error(ReplyError.MALFORMED);
  const m = new Map();
  for (const [k, val] of Object.entries(v)) m.set(k.toLowerCase(), val);
  return m;
}

/**
 * A string field: absent or null is "", a string is kept, anything else is
 * malformed (Go refuses to decode a number into a string).
 * @param {Map<string, unknown>} m
 * @param {string} name
 */
function stringField(m, name) {
  const v = m.get(name.toLowerCase());
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw new Error(ReplyError.MALFORMED);
  return v;
}

/**
 * An integer field (NextPoll): absent or null is 0.
 * @param {Map<string, unknown>} m
 * @param {string} name
 */
function intField(m, name) {
  const v = m.get(name.toLowerCase());
  if (v === undefined || v === null) return 0;
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw new Error(ReplyError.MALFORMED);
  return v;
}

/** @param {string} s @param {boolean} allowSpace */
function isPlainText(s, allowSpace) {
  return (allowSpace ? /^[\x20-\x7e]*$/ : /^[\x21-\x7e]*$/).test(s) && !/[<>&"'`\\]/.test(s);
}

/**
 * A session description.
 * @typedef {{type: string, sdp: string}} SessionDescription
 */

/**
 * Decodes a serialized session description as the Go package messages:
 * bounded, no control characters, a string type of offer, answer,
 * pranswer or rollback, and a string sdp.
 * @param {string} s
 * @returns {SessionDescription}
 */
export function decodeSessionDescription(s) {
  if (s.length > MAX_SESSION_DESCRIPTION_LENGTH || new TextEncoder().encode(s).length > MAX_SESSION_DESCRIPTION_LENGTH ||
    // eslint-disable-next-line no-control-regex
    /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/.test(s)) {
    throw new Error(ReplyError.BAD_SESSION_DESCRIPTION);
  }
  let v;
  try {
    v = JSON.parse(s);
  } catch {
    throw new Error(ReplyError.BAD_SESSION_DESCRIPTION);
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v) ||
    typeof v.type !== 'string' || typeof v.sdp !== 'string' ||
    !['offer', 'answer', 'pranswer', 'rollback'].includes(v.type)) {
    throw new Error(ReplyError.BAD_SESSION_DESCRIPTION);
  }
  return { type: v.type, sdp: v.sdp };
}

/** @param {string} s */
function validRelayURL(s) {
  if (s.length > MAX_RELAY_URL_LENGTH || !isPlainText(s, false) || /[{}|^]/.test(s)) return false;
  let u;
  try {
    u = new URL(s);
  } catch {
    return false;
  }
  return (u.protocol === 'ws:' || u.protocol === 'wss:') && u.hostname !== '' && u.username === '' && u.password === '';
}

/**
 * A decoded poll reply.
 * @typedef {object} PollReply
 * @property {string} status one of the Status constants
 * @property {string} offer serialized offer (client match only)
 * @property {string} nat the client's NAT type
 * @property {number} nextPoll milliseconds, 0 = not given
 * @property {string} relayURL empty or a ws(s) URL (not yet checked against the pattern)
 */

/**
 * Decodes the broker's reply to a poll. An "incorrect relay pattern" reply
 * is returned (with its NextPoll) and flagged by its status; the caller
 * treats it as the refusal it is.
 * @param {Uint8Array} body
 * @returns {PollReply}
 */
export function decodePollReply(body) {
  const m = decodeObject(body);
  const status = stringField(m, 'Status');
  let offer = stringField(m, 'Offer');
  let nat = stringField(m, 'NAT');
  const nextPoll = Math.min(Math.max(intField(m, 'NextPoll'), 0), MAX_NEXT_POLL);
  const relayURL = stringField(m, 'RelayURL');
  if (status === '') throw new Error(ReplyError.EMPTY);
  if (!Object.values(NAT).includes(nat)) nat = NAT.UNKNOWN;
  if (relayURL !== '' && !validRelayURL(relayURL)) throw new Error(ReplyError.BAD_RELAY_URL);
  switch (status) {
    case Status.CLIENT_MATCH:
      if (offer === '') throw new Error(ReplyError.MISSING_OFFER);
      decodeSessionDescription(offer);
      break;
    case Status.NO_MATCH:
    case Status.INCORRECT_RELAY_PATTERN:
      offer = '';
      break;
    default:
      throw new Error(ReplyError.UNKNOWN_STATUS);
  }
  return { status, offer, nat, nextPoll, relayURL };
}

/**
 * Decodes the broker's reply to an answer: true for success, false for
 * client gone.
 * @param {Uint8Array} body
 * @returns {boolean}
 */
export function decodeAnswerReply(body) {
  const status = stringField(decodeObject(body), 'Status');
  if (status === Status.SUCCESS) return true;
  if (status === Status.CLIENT_GONE) return false;
  if (status === '') throw new Error(ReplyError.EMPTY);
  throw new Error(ReplyError.UNKNOWN_STATUS);
}

/**
 * Decodes a NAT probe's reply (an answer request, Sid "stub-sid") and
 * returns the serialized answer.
 * @param {Uint8Array} body
 * @returns {SessionDescription}
 */
export function decodeProbeReply(body) {
  const m = decodeObject(body);
  const version = stringField(m, 'Version');
  const sid = stringField(m, 'Sid');
  const answer = stringField(m, 'Answer');
  const [major, minor = ''] = version.split(/\.(.*)/s);
  if (major !== '1' || version.length > 16 || !/^[A-Za-z0-9._-]*$/.test(minor)) throw new Error(ReplyError.BAD_VERSION);
  if (sid === '' || sid.length > 64 || !/^[A-Za-z0-9+/=._-]+$/.test(sid)) throw new Error(ReplyError.BAD_SID);
  if (answer === '') throw new Error(ReplyError.MISSING_ANSWER);
  const desc = decodeSessionDescription(answer);
  if (desc.type !== 'answer') throw new Error(ReplyError.BAD_SESSION_DESCRIPTION);
  return desc;
}
