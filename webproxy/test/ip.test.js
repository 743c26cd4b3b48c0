import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseAddr, isLocal, notGlobal, formatAddr } from '../src/ip.js';
import { clientIP } from '../src/sdp.js';

test('addresses parse as netip parses them', () => {
  for (const s of ['1.2.3.4', '255.255.255.255', '::', '::1', '2001:db8::1', '::ffff:1.2.3.4', '1:2:3:4:5:6:7:8', 'fe80::1:2']) {
    assert.ok(parseAddr(s), s);
  }
  for (const s of ['', '1.2.3', '01.2.3.4', '256.1.1.1', '1.2.3.4.5', ':::', '1::2::3', '1:2:3:4:5:6:7:8:9', 'fe80::1%eth0',
    'example.com', '12345::']) {
    assert.equal(parseAddr(s), null, s);
  }
  for (const s of ['1.2.3.4', '2001:db8::1', '::', '::1', '1:0:0:2::3', '1:2:3:4:5:6:7:8']) {
    assert.equal(formatAddr(/** @type {Uint8Array} */ (parseAddr(s))), s);
  }
});

test('local and global addresses', () => {
  const local = ['0.1.2.3', '10.0.0.1', '100.64.0.1', '127.0.0.1', '169.254.0.1', '172.16.0.1', '192.168.1.1', '224.0.0.1',
    '::', '::1', 'fc00::1', 'fe80::1', 'ff02::1', '::ffff:10.0.0.1'];
  for (const s of local) assert.ok(isLocal(/** @type {Uint8Array} */ (parseAddr(s))), s);
  for (const s of ['1.1.1.1', '8.8.8.8', '2606:4700::1111', '198.18.0.1']) {
    assert.ok(!isLocal(/** @type {Uint8Array} */ (parseAddr(s))), s);
  }
  for (const s of ['198.18.0.1', '192.0.2.1', '203.0.113.9', '240.0.0.1', '2001:db8::1', '64:ff9b::a00:1', '2002:a00:1::',
    '3fff::1', '4000::1']) {
    assert.ok(notGlobal(/** @type {Uint8Array} */ (parseAddr(s))), s);
  }
  for (const s of ['1.1.1.1', '192.0.0.9', '2606:4700::1111', '2001:3::1', '64:ff9b::101:101']) {
    assert.ok(!notGlobal(/** @type {Uint8Array} */ (parseAddr(s))), s);
  }
});

test('the client address comes from the first public candidate, else c=', () => {
  const sdp = [
    'v=0', 'c=IN IP4 0.0.0.0',
    'a=candidate:1 1 udp 2130706431 192.168.1.5 5000 typ host',
    'a=candidate:2 1 udp 2130706431 abcd.local 5000 typ host',
    'a=candidate:3 1 udp 1694498815 203.0.114.7 6000 typ srflx raddr 0.0.0.0 rport 0',
    'a=candidate:4 1 udp 1694498815 1.2.3.4 6000 typ srflx raddr 0.0.0.0 rport 0', '',
  ].join('\r\n');
  assert.equal(clientIP(sdp), '203.0.114.7');
  assert.equal(clientIP('v=0\r\nc=IN IP6 2001:4860::1\r\na=candidate:1 1 udp 1 10.0.0.1 1 typ host\r\n'), '2001:4860::1');
  assert.equal(clientIP('v=0\r\nc=IN IP4 0.0.0.0\r\na=candidate:1 1 udp 1 x.local 1 typ host\r\n'), null);
  assert.equal(clientIP('a=candidate:1 1 udp 1 ::ffff:1.2.3.4 1 typ host\n'), '1.2.3.4');
});
