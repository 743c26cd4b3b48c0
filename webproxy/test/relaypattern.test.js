// Relay patterns and URLs: the vectors of the Go packages relaypattern and
// proxy (relayports, relay URL policy).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePattern, matchHost, checkRelayURL, RelayRefusal } from '../src/relaypattern.js';

test('patterns parse as the Go proxy splits them', () => {
  const cases = [
    ['snowflake.torproject.net$', 'snowflake.torproject.net$', false, 'snowflake.torproject.net', false, []],
    ['^relay.example:8443$', '^relay.example$', true, 'relay.example', false, [8443]],
    ['relay.example:443,8443$', 'relay.example$', false, 'relay.example', false, [443, 8443]],
    ['^127.0.0.1:*$', '^127.0.0.1$', true, '127.0.0.1', true, []],
    ['^[2001:db8::1]:8443$', '^2001:db8::1$', true, '2001:db8::1', false, [8443]],
    ['::1$', '::1$', false, '::1', false, []],
    ['$', '$', false, '', false, []],
    ['Snowflake.TorProject.NET$', 'Snowflake.TorProject.NET$', false, 'snowflake.torproject.net', false, []],
  ];
  for (const [rule, sent, exact, suffix, anyPort, ports] of cases) {
    const p = parsePattern(/** @type {string} */ (rule));
    assert.deepEqual([p.rule, p.exact, p.suffix, p.anyPort, p.ports], [sent, exact, suffix, anyPort, ports], String(rule));
  }
  for (const bad of ['snowflake.torproject.net', '', 'a:0$', 'a:70000$', 'a b$', 'a<b$']) {
    assert.throws(() => parsePattern(bad), undefined, bad);
  }
});

test('hostnames match by suffix without label boundary, or exactly', () => {
  const suffix = parsePattern('example.com$');
  assert.ok(matchHost(suffix, 'example.com'));
  assert.ok(matchHost(suffix, 'www.example.com'));
  assert.ok(matchHost(suffix, 'evilexample.com'));
  assert.ok(matchHost(suffix, 'WWW.EXAMPLE.COM'));
  assert.ok(!matchHost(suffix, 'example.com.evil'));
  const exact = parsePattern('^example.com$');
  assert.ok(matchHost(exact, 'example.com'));
  assert.ok(!matchHost(exact, 'www.example.com'));
});

test('relay URLs are checked as the Go proxy checks them', () => {
  const policy = (/** @type {string} */ rule, allowNonTLS = false, allowPrivate = false) =>
    ({ pattern: parsePattern(rule), allowNonTLS, allowPrivate });
  const ok = [
    ['snowflake.torproject.net$', 'wss://snowflake.torproject.net/'],
    ['snowflake.torproject.net$', 'wss://snowflake.torproject.net:443/?x=1'],
    ['torproject.net$', 'wss://faketorproject.net'],
    ['relay.example:443,8443$', 'wss://relay.example:8443/'],
    ['^1.1.1.1$', 'wss://1.1.1.1/'],
    ['^127.0.0.1:*$', 'wss://127.0.0.1:4443/', false, true],
    ['^127.0.0.1:*$', 'ws://127.0.0.1:8080/', true, true],
  ];
  for (const [rule, url, nonTLS, priv] of ok) {
    assert.equal(checkRelayURL(policy(String(rule), Boolean(nonTLS), Boolean(priv)), String(url)).protocol.startsWith('ws'), true, String(url));
  }
  const refused = [
    ['snowflake.torproject.net$', 'wss://evil.com/snowflake.torproject.net', RelayRefusal.HOSTNAME],
    ['snowflake.torproject.net$', 'snowflake.torproject.net', RelayRefusal.URL],
    ['snowflake.torproject.net$', 'https://snowflake.torproject.net/', RelayRefusal.SCHEME],
    ['snowflake.torproject.net$', 'ws://snowflake.torproject.net/', RelayRefusal.SCHEME],
    ['snowflake.torproject.net$', 'wss://snowflake.torproject.net:8443/', RelayRefusal.PORT],
    ['$', 'wss://192.168.1.1/', RelayRefusal.PRIVATE],
    ['$', 'wss://127.0.0.1/', RelayRefusal.PRIVATE],
    ['$', 'wss://[fc00::]/', RelayRefusal.PRIVATE],
    ['$', 'wss://[::1]/', RelayRefusal.PRIVATE],
    ['$', 'wss://0.0.0.0/', RelayRefusal.PRIVATE],
    ['$', 'wss://169.254.1.1/', RelayRefusal.PRIVATE],
    ['$', 'wss://100.111.1.1/', RelayRefusal.PRIVATE],
    ['$', 'wss://198.18.0.1/', RelayRefusal.PRIVATE],
    ['$', 'wss://[64:ff9b::7f00:1]/', RelayRefusal.PRIVATE],
    ['$', 'wss://0x7f.1/', RelayRefusal.PRIVATE],
    ['$', 'wss://user@relay.example/', RelayRefusal.URL],
  ];
  for (const [rule, url, want] of refused) {
    assert.throws(() => checkRelayURL(policy(rule), url), { message: want }, url);
  }
});
