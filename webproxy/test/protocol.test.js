// The protocol code against the Go package messages' golden files: what
// the browser proxy sends is byte for byte what Go sends, and what it
// accepts and refuses is what the Go proxy does.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  encodePollRequest, encodeAnswerRequest, encodeSessionDescription, encodeProbeRequest, decodePollReply,
  decodeAnswerReply, decodeProbeReply, decodeSessionDescription, newSid, goString, ReplyError, Status,
} from '../src/protocol.js';

const golden = (/** @type {string} */ name) => readFileSync(new URL('../../messages/testdata/' + name, import.meta.url), 'utf8');
const bytes = (/** @type {string} */ s) => new TextEncoder().encode(s);

test('poll request matches the golden file', () => {
  const got = encodePollRequest({ sid: 'q0Dq3Cq4t2o0kB4QeWm2Vw', type: 'standalone', nat: 'unrestricted', clients: 13,
    pattern: 'snowflake.torproject.net$' });
  assert.equal(got, golden('proxy-poll-request-1.3.json').trim());
});

test('clients are rounded down to a multiple of 8', () => {
  for (const [n, want] of [[0, 0], [7, 0], [8, 8], [15, 8], [16, 16], [-3, 0]]) {
    assert.match(encodePollRequest({ sid: 'a', type: 'webext', nat: 'unknown', clients: n, pattern: '$' }),
      new RegExp('"Clients":' + want + ','));
  }
});

test('answer request matches the golden file', () => {
  const want = golden('proxy-answer-request.json').trim();
  const answer = JSON.parse(want).Answer;
  const sd = JSON.parse(answer);
  assert.equal(encodeSessionDescription(sd.type, sd.sdp), answer);
  assert.equal(encodeAnswerRequest('q0Dq3Cq4t2o0kB4QeWm2Vw', answer), want);
});

test('strings are escaped as Go escapes them', () => {
  assert.equal(goString('<a&b>\u2028'), '"\\u003ca\\u0026b\\u003e\\u2028"');
  assert.equal(goString('v=0\r\n'), '"v=0\\r\\n"');
});

test('probe request is a client-match poll response', () => {
  const offer = encodeSessionDescription('offer', 'v=0\r\n');
  assert.deepEqual(JSON.parse(encodeProbeRequest(offer)),
    { Status: 'client match', Offer: offer, NAT: '', NextPoll: 0, RelayURL: '' });
});

test('session ids are 22 characters of base64', () => {
  const a = newSid();
  assert.match(a, /^[A-Za-z0-9+/]{22}$/);
  assert.notEqual(a, newSid());
});

test('poll replies from the golden files decode', () => {
  const m = decodePollReply(bytes(golden('proxy-poll-response-match.json')));
  assert.equal(m.status, Status.CLIENT_MATCH);
  assert.equal(m.nat, 'unrestricted');
  assert.equal(m.nextPoll, 20000);
  assert.equal(m.relayURL, 'wss://snowflake.torproject.net/');
  assert.equal(decodeSessionDescription(m.offer).type, 'offer');
  const n = decodePollReply(bytes(golden('proxy-poll-response-nomatch.json')));
  assert.equal(n.status, Status.NO_MATCH);
  assert.equal(n.offer, '');
  const r = decodePollReply(bytes(golden('proxy-poll-response-incorrect-relay-pattern.json')));
  assert.equal(r.status, Status.INCORRECT_RELAY_PATTERN);
  assert.equal(r.nextPoll, 3600000);
});

test('poll replies are decoded as Go decodes them', () => {
  const offer = encodeSessionDescription('offer', 'v=0\r\n');
  // Keys fold case; a later key wins; missing NAT, NextPoll, RelayURL are fine.
  const folded = decodePollReply(bytes(JSON.stringify({ status: 'client match', OFFER: offer })));
  assert.equal(folded.status, Status.CLIENT_MATCH);
  assert.equal(folded.nat, 'unknown');
  assert.equal(folded.nextPoll, 0);
  assert.equal(decodePollReply(bytes('{"Status":"no match","NAT":"weird","NextPoll":-5}')).nat, 'unknown');
  assert.equal(decodePollReply(bytes('{"Status":"no match","NextPoll":-5}')).nextPoll, 0);
  assert.equal(decodePollReply(bytes('{"Status":"no match","NextPoll":1e12}')).nextPoll, 24 * 3600 * 1000);
  assert.equal(decodePollReply(bytes('{"Status":"no match","Offer":"junk"}')).offer, '');
});

test('malformed poll replies are refused with fixed texts', () => {
  const offer = encodeSessionDescription('offer', 'v=0\r\n');
  const cases = [
    ['', ReplyError.MALFORMED],
    ['[]', ReplyError.MALFORMED],
    ['null', ReplyError.MALFORMED],
    ['{"Status":5}', ReplyError.MALFORMED],
    ['{"Status":"no match","NextPoll":"5"}', ReplyError.MALFORMED],
    ['{"Status":"no match","NextPoll":1.5}', ReplyError.MALFORMED],
    ['{}', ReplyError.EMPTY],
    ['{"Status":"<script>evil</script>"}', ReplyError.UNKNOWN_STATUS],
    ['{"Status":"client match"}', ReplyError.MISSING_OFFER],
    ['{"Status":"client match","Offer":"{\\"type\\":\\"offer\\"}"}', ReplyError.BAD_SESSION_DESCRIPTION],
    ['{"Status":"client match","Offer":"{\\"type\\":\\"bogus\\",\\"sdp\\":\\"\\"}"}', ReplyError.BAD_SESSION_DESCRIPTION],
    ['{"Status":"client match","Offer":"{\\"type\\":\\"offer\\",\\"sdp\\":\\"\\u0000\\"}"}', ReplyError.BAD_SESSION_DESCRIPTION],
    [JSON.stringify({ Status: 'client match', Offer: offer, RelayURL: 'https://relay.example/' }), ReplyError.BAD_RELAY_URL],
    [JSON.stringify({ Status: 'client match', Offer: offer, RelayURL: 'wss://user:pw@relay.example/' }), ReplyError.BAD_RELAY_URL],
    [JSON.stringify({ Status: 'client match', Offer: offer, RelayURL: 'wss://relay.example/<x>' }), ReplyError.BAD_RELAY_URL],
  ];
  for (const [body, want] of cases) {
    assert.throws(() => decodePollReply(bytes(body)), { message: want }, body);
  }
  assert.throws(() => decodePollReply(new Uint8Array([0x7b, 0xff, 0x7d])), { message: ReplyError.NOT_UTF8 });
  assert.throws(() => decodePollReply(new Uint8Array(100001).fill(0x20)), { message: ReplyError.TOO_LARGE });
  const big = encodeSessionDescription('offer', 'x'.repeat(16001));
  assert.throws(() => decodePollReply(bytes(JSON.stringify({ Status: 'client match', Offer: big }))),
    { message: ReplyError.BAD_SESSION_DESCRIPTION });
});

test('answer replies', () => {
  assert.equal(decodeAnswerReply(bytes(golden('proxy-answer-response-success.json'))), true);
  assert.equal(decodeAnswerReply(bytes(golden('proxy-answer-response-client-gone.json'))), false);
  assert.throws(() => decodeAnswerReply(bytes('{}')), { message: ReplyError.EMPTY });
  assert.throws(() => decodeAnswerReply(bytes('{"Status":"maybe"}')), { message: ReplyError.UNKNOWN_STATUS });
});

test('probe replies', () => {
  const answer = encodeSessionDescription('answer', 'v=0\r\n');
  assert.equal(decodeProbeReply(bytes(encodeAnswerRequest('stub-sid', answer))).type, 'answer');
  const offer = encodeSessionDescription('offer', 'v=0\r\n');
  assert.throws(() => decodeProbeReply(bytes(encodeAnswerRequest('stub-sid', offer))), { message: ReplyError.BAD_SESSION_DESCRIPTION });
  assert.throws(() => decodeProbeReply(bytes(JSON.stringify({ Version: '2.0', Sid: 'x', Answer: answer }))), { message: ReplyError.BAD_VERSION });
  assert.throws(() => decodeProbeReply(bytes(JSON.stringify({ Version: '1.3', Sid: 'a b', Answer: answer }))), { message: ReplyError.BAD_SID });
  assert.throws(() => decodeProbeReply(bytes('{"Version":"1.3","Sid":"x"}')), { message: ReplyError.MISSING_ANSWER });
});
