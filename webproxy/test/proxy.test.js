// The poll loop against a broker on loopback (node's http server): NextPoll
// obeyed, the relay pattern refusal, malformed replies (logged without the
// broker's text, never a crash), capacity, and relay URLs outside the
// pattern. WebRTC is a stand-in here (node has none): the browser tests
// (interop/webproxy_test.go) run the real thing.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { Proxy } from '../src/proxy.js';
import { settle } from '../src/settings.js';
import { encodeSessionDescription } from '../src/protocol.js';

const offer = encodeSessionDescription('offer', 'v=0\r\nc=IN IP4 0.0.0.0\r\na=candidate:1 1 udp 1 1.2.3.4 5 typ host\r\n');

/** A stand-in RTCPeerConnection: it answers, but no client ever connects. */
class FakePeerConnection extends EventTarget {
  static live = 0;
  static most = 0;
  static made = 0;
  constructor() {
    super();
    FakePeerConnection.made++;
    FakePeerConnection.live++;
    FakePeerConnection.most = Math.max(FakePeerConnection.most, FakePeerConnection.live);
    this.iceGatheringState = 'new';
    this.connectionState = 'new';
    /** @type {{type: string, sdp: string} | null} */
    this.localDescription = null;
    this.closed = false;
  }
  async setRemoteDescription() {}
  async createAnswer() { return { type: 'answer', sdp: 'v=0\r\na=candidate:1 1 udp 1 5.6.7.8 9 typ host\r\n' }; }
  /** @param {{type: string, sdp: string}} d */
  async setLocalDescription(d) {
    this.localDescription = d;
    this.iceGatheringState = 'complete';
  }
  close() {
    if (!this.closed) FakePeerConnection.live--;
    this.closed = true;
  }
}
globalThis.RTCPeerConnection = /** @type {any} */ (FakePeerConnection);

/**
 * A broker whose /proxy replies come from reply(n) (n counts polls from 0).
 * @param {(n: number, body: string) => string} reply
 */
async function broker(reply) {
  /** @type {{at: number, body: string}[]} */
  const polls = [];
  const answers = [];
  const srv = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      res.setHeader('Access-Control-Allow-Origin', '*');
      if (req.url === '/proxy') {
        polls.push({ at: Date.now(), body });
        res.end(reply(polls.length - 1, body));
      } else if (req.url === '/answer') {
        answers.push(body);
        res.end('{"Status":"success"}');
      } else {
        res.statusCode = 404;
        res.end();
      }
    });
  });
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', () => resolve(undefined)));
  const addr = /** @type {import('node:net').AddressInfo} */ (srv.address());
  return { url: 'http://127.0.0.1:' + addr.port + '/', polls, answers, close: () => srv.close() };
}

/**
 * @param {string} url
 * @param {Partial<import('../src/settings.js').defaultTimings>} [timings]
 * @param {number} [capacity]
 */
function newProxy(url, timings = {}, capacity = 4) {
  /** @type {string[]} */
  const lines = [];
  const p = new Proxy(settle({ brokerURL: url, relayPattern: '^relay.example:8443$', capacity }, 'badge',
    { minPollInterval: 10, pollInterval: 50, backoffMax: 100, dataChannelTimeout: 200, ...timings }), {
    log: (level, text, fields) => lines.push(level + ' ' + text + ' ' + JSON.stringify(fields ?? {})),
  });
  return { p, lines };
}

/** @param {() => boolean} cond */
async function until(cond) {
  const deadline = Date.now() + 10000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
}

test('polls carry protocol 1.3 and obey NextPoll', async () => {
  const b = await broker(() => '{"Status":"no match","Offer":"","NAT":"","NextPoll":300,"RelayURL":""}');
  const { p } = newProxy(b.url);
  p.start();
  await until(() => b.polls.length >= 3);
  await p.stop();
  b.close();
  const req = JSON.parse(b.polls[0].body);
  assert.deepEqual(Object.keys(req), ['Sid', 'Version', 'Type', 'NAT', 'Clients', 'AcceptedRelayPattern']);
  assert.equal(req.Version, '1.3');
  assert.equal(req.Type, 'badge');
  assert.equal(req.NAT, 'unknown');
  assert.equal(req.Clients, 0);
  assert.equal(req.AcceptedRelayPattern, '^relay.example$');
  assert.notEqual(JSON.parse(b.polls[1].body).Sid, req.Sid);
  for (let i = 1; i < b.polls.length; i++) assert.ok(b.polls[i].at - b.polls[i - 1].at >= 290, 'waited NextPoll');
  assert.equal(p.state.broker, 'ok');
});

test('an incorrect relay pattern reply is obeyed, NextPoll included', async () => {
  const b = await broker(() => '{"Status":"incorrect relay pattern","Offer":"","NAT":"","NextPoll":3600000,"RelayURL":""}');
  const { p, lines } = newProxy(b.url);
  p.start();
  await until(() => p.state.broker === 'refused');
  await new Promise((r) => setTimeout(r, 300));
  await p.stop();
  b.close();
  assert.equal(b.polls.length, 1);
  assert.ok(lines.some((l) => l.includes('broker refused our relay pattern')));
});

test('malformed replies are logged without their text and polling goes on', async () => {
  const evil = 'PEER-TEXT-<script>';
  const replies = [
    evil, '{"Status":"' + evil + '"}', '{"Status":"client match","Offer":"' + evil + '"}',
    JSON.stringify({ Status: 'client match', Offer: offer, RelayURL: 'wss://' + evil }), '[]', '{"Status":7}',
    '{"Status":"no match","NextPoll":50}',
  ];
  const b = await broker((n) => replies[Math.min(n, replies.length - 1)]);
  const { p, lines } = newProxy(b.url);
  p.start();
  await until(() => b.polls.length >= replies.length && p.state.broker === 'ok');
  await p.stop();
  b.close();
  assert.ok(lines.filter((l) => l.includes('poll failed')).length >= replies.length - 1, lines.join('\n'));
  for (const l of lines) assert.ok(!l.includes('PEER-TEXT'), l);
});

test('capacity bounds the sessions at once', async () => {
  const b = await broker(() => JSON.stringify({ Status: 'client match', Offer: offer, NAT: 'unknown', NextPoll: 10,
    RelayURL: 'wss://relay.example:8443/' }));
  const { p } = newProxy(b.url, {}, 2);
  FakePeerConnection.most = 0;
  p.start();
  await until(() => b.answers.length >= 6);
  await p.stop();
  b.close();
  assert.equal(FakePeerConnection.most, 2);
  assert.equal(FakePeerConnection.live, 0);
  // The poll that fills the last slot reports the clients already held,
  // rounded down to a multiple of 8.
  assert.ok(b.polls.every((x) => JSON.parse(x.body).Clients === 0));
  assert.ok(p.state.failed >= 4);
});

test('a relay outside the pattern is refused before any WebRTC', async () => {
  const b = await broker((n) => n === 0
    ? JSON.stringify({ Status: 'client match', Offer: offer, NextPoll: 10, RelayURL: 'wss://relay.example.evil:8443/' })
    : '{"Status":"no match","NextPoll":10000}');
  const { p, lines } = newProxy(b.url);
  const made = FakePeerConnection.made;
  p.start();
  await until(() => p.state.failed === 1);
  await p.stop();
  b.close();
  assert.equal(FakePeerConnection.made, made);
  assert.equal(b.answers.length, 0);
  assert.ok(lines.some((l) => l.includes('relay refused: relay hostname does not match the accepted pattern')), lines.join('\n'));
  for (const l of lines) assert.ok(!l.includes('evil'), l);
});

test('the broker unreachable backs off and says so', async () => {
  const b = await broker(() => '');
  b.close();
  const { p, lines } = newProxy(b.url);
  p.start();
  await until(() => lines.filter((l) => l.includes('poll failed: broker unreachable')).length >= 2);
  await p.stop();
  assert.equal(p.state.broker, 'unreachable');
});
