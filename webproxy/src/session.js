// One client session: answer the client's offer with the browser's own
// RTCPeerConnection, wait for its DataChannel, open a WebSocket to the relay
// and copy messages both ways until either side ends or the session idles.
//
//	broker ──offer──▶ RTCPeerConnection ──answer──▶ broker ──▶ client
//	client ══ DataChannel ══▶ this page ── WebSocket (wss://relay/?client_ip=…) ──▶ relay
//
// The proxy never looks into the bytes it carries. Writes to the client are
// paced by the DataChannel's bufferedAmount (a high and a low water mark);
// what cannot be sent yet waits in a queue whose size is bounded, and a
// session whose queue overflows ends (the client's turbotunnel session
// carries on through another proxy). The relay's smux flow control keeps
// a healthy session far below the bound.

import { decodeSessionDescription, encodeSessionDescription, encodeAnswerRequest, decodeAnswerReply } from './protocol.js';
import { checkRelayURL } from './relaypattern.js';
import { clientIP } from './sdp.js';
import { post } from './http.js';

/** Stages at which a session can fail, as the Go proxy's metrics name them. */
export const Stage = Object.freeze({
  OFFER: 'offer',
  ANSWER: 'answer',
  DATACHANNEL: 'datachannel',
  RELAY: 'relay',
});

// Water marks of the DataChannel's send buffer, and the bound on what
// waits in either direction.
const HIGH_WATER = 1 << 20;
const LOW_WATER = 256 << 10;
const MAX_QUEUED = 16 << 20;
// The largest message accepted from a client (the Go proxy's default).
const MAX_MESSAGE = 64 << 10;

/** A failure with the stage it happened at and a fixed reason text. */
export class SessionError extends Error {
  /** @param {string} stage @param {string} reason */
  constructor(stage, reason) {
    super(reason);
    this.stage = stage;
  }
}

/**
 * What a session needs from its proxy.
 * @typedef {object} SessionEnv
 * @property {import('./settings.js').Settings} settings
 * @property {AbortSignal} signal the proxy is stopping
 * @property {() => boolean} defaultRelayUp the default relay passed its last check
 * @property {(up: boolean) => void} defaultRelayResult a session reached, or failed to reach, the default relay
 * @property {() => void} onRelaying the session is carrying bytes
 * @property {(toClient: number, fromClient: number) => void} onBytes
 */

/**
 * Runs one session for the offer in reply, under session id sid. Resolves
 * when the session has ended, with why (a fixed text, "" for a close by
 * either side); rejects with a SessionError when it failed before it
 * relayed anything.
 * @param {SessionEnv} env
 * @param {string} sid
 * @param {import('./protocol.js').PollReply} reply
 */
export async function runSession(env, sid, reply) {
  const s = env.settings;
  const t = s.timings;
  let offer;
  try {
    offer = decodeSessionDescription(reply.offer);
  } catch {
    throw new SessionError(Stage.OFFER, 'bad offer from broker');
  }
  if (offer.type !== 'offer') throw new SessionError(Stage.OFFER, 'bad offer from broker');
  let relayURL = reply.relayURL;
  const usesDefault = relayURL === '';
  if (usesDefault) {
    if (s.relayURL === '') throw new SessionError(Stage.OFFER, 'no relay named and no default relay');
    if (!env.defaultRelayUp()) throw new SessionError(Stage.RELAY, 'default relay unreachable');
    relayURL = s.relayURL;
  }
  let relay;
  try {
    relay = checkRelayURL(s.relayPolicy, relayURL);
  } catch (e) {
    throw new SessionError(Stage.OFFER, 'relay refused: ' + (e instanceof Error ? e.message : ''));
  }
  const ip = clientIP(offer.sdp);
  if (ip !== null) relay.searchParams.set('client_ip', ip);

  const stop = new AbortController();
  const onAbort = () => stop.abort();
  env.signal.addEventListener('abort', onAbort);
  const pc = new RTCPeerConnection({ iceServers: s.iceServers });
  try {
    /** @type {Promise<RTCDataChannel>} */
    const opened = new Promise((resolve, reject) => {
      let taken = false;
      pc.ondatachannel = (ev) => {
        const dc = ev.channel;
        if (taken) {
          dc.close();
          return;
        }
        taken = true;
        dc.binaryType = 'arraybuffer';
        if (dc.readyState === 'open') resolve(dc);
        else dc.onopen = () => resolve(dc);
      };
      pc.onconnectionstatechange = () => {
        if (pc.connectionState === 'failed' || pc.connectionState === 'closed') {
          reject(new SessionError(Stage.DATACHANNEL, 'peer connection failed'));
          stop.abort();
        }
      };
    });
    opened.catch(() => {});

    try {
      await pc.setRemoteDescription({ type: 'offer', sdp: offer.sdp });
    } catch {
      throw new SessionError(Stage.OFFER, 'bad offer from broker: refused by WebRTC');
    }
    let answerSDP;
    try {
      await pc.setLocalDescription(await pc.createAnswer());
      await gathered(pc, t.answerTimeout, stop.signal);
      answerSDP = pc.localDescription?.sdp ?? '';
    } catch {
      throw new SessionError(Stage.ANSWER, 'cannot make an answer');
    }
    if (!/^a=candidate:/m.test(answerSDP)) throw new SessionError(Stage.ANSWER, 'no ICE candidate gathered');
    let accepted;
    try {
      const body = await post(s.answerURL.href, encodeAnswerRequest(sid, encodeSessionDescription('answer', answerSDP)),
        t.brokerTimeout, stop.signal);
      accepted = decodeAnswerReply(body);
    } catch (e) {
      throw new SessionError(Stage.ANSWER, 'send answer: ' + (e instanceof Error ? e.message : ''));
    }
    if (!accepted) throw new SessionError(Stage.ANSWER, 'broker returned client gone');

    const dc = await within(opened, t.dataChannelTimeout, stop.signal,
      new SessionError(Stage.DATACHANNEL, 'timed out waiting for the client\'s data channel'));
    return await carry(env, dc, relay, usesDefault, stop);
  } finally {
    env.signal.removeEventListener('abort', onAbort);
    stop.abort();
    pc.close();
  }
}

/**
 * Waits until ICE gathering is complete, or ms, or abort.
 * @param {RTCPeerConnection} pc
 * @param {number} ms
 * @param {AbortSignal} signal
 * @returns {Promise<void>}
 */
function gathered(pc, ms, signal) {
  return new Promise((resolve) => {
    if (pc.iceGatheringState === 'complete') {
      resolve();
      return;
    }
    const done = () => {
      clearTimeout(timer);
      pc.removeEventListener('icegatheringstatechange', check);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const check = () => {
      if (pc.iceGatheringState === 'complete') done();
    };
    const timer = setTimeout(done, ms);
    pc.addEventListener('icegatheringstatechange', check);
    signal.addEventListener('abort', done);
  });
}

/**
 * Resolves as p does, or rejects with err after ms or on abort.
 * @template T
 * @param {Promise<T>} p
 * @param {number} ms
 * @param {AbortSignal} signal
 * @param {Error} err
 * @returns {Promise<T>}
 */
function within(p, ms, signal, err) {
  return new Promise((resolve, reject) => {
    const fail = () => {
      clearTimeout(timer);
      reject(signal.aborted && !timedOut ? new SessionError(Stage.DATACHANNEL, 'stopped') : err);
    };
    let timedOut = false;
    const timer = setTimeout(() => { timedOut = true; fail(); }, ms);
    if (signal.aborted) fail();
    signal.addEventListener('abort', fail, { once: true });
    p.then((v) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', fail);
      resolve(v);
    }, (e) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', fail);
      reject(e);
    });
  });
}

/**
 * Connects to the relay and copies until either side ends; returns why it
 * ended.
 * @param {SessionEnv} env
 * @param {RTCDataChannel} dc
 * @param {URL} relay
 * @param {boolean} usesDefault
 * @param {AbortController} stop
 * @returns {Promise<string>}
 */
async function carry(env, dc, relay, usesDefault, stop) {
  const t = env.settings.timings;
  // Messages the client sends before the relay is connected wait here.
  /** @type {ArrayBuffer[]} */
  const toRelay = [];
  let toRelayBytes = 0;
  /** @type {ArrayBuffer[]} */
  const toClient = [];
  let toClientBytes = 0;
  let lastMoved = Date.now();
  /** @type {(err: SessionError | null) => void} */
  let finish = () => {};
  const ended = new Promise((resolve, reject) => {
    finish = (err) => (err ? reject(err) : resolve(undefined));
  });
  ended.catch(() => {});

  /** @type {WebSocket | null} */
  let ws = null;
  const flushToRelay = () => {
    while (ws && ws.readyState === WebSocket.OPEN && toRelay.length > 0 && ws.bufferedAmount < HIGH_WATER) {
      const m = /** @type {ArrayBuffer} */ (toRelay.shift());
      toRelayBytes -= m.byteLength;
      ws.send(m);
    }
    if (toRelay.length > 0 && !relayTimer) relayTimer = setTimeout(() => { relayTimer = 0; flushToRelay(); }, 10);
  };
  let relayTimer = 0;
  const flushToClient = () => {
    while (dc.readyState === 'open' && toClient.length > 0 && dc.bufferedAmount < HIGH_WATER) {
      const m = /** @type {ArrayBuffer} */ (toClient.shift());
      toClientBytes -= m.byteLength;
      dc.send(m);
    }
  };

  dc.onmessage = (ev) => {
    const data = ev.data;
    if (!(data instanceof ArrayBuffer)) {
      finish(new SessionError(Stage.RELAY, 'client sent a text message'));
      return;
    }
    if (data.byteLength > MAX_MESSAGE) {
      finish(new SessionError(Stage.RELAY, 'data channel message too large'));
      return;
    }
    lastMoved = Date.now();
    env.onBytes(0, data.byteLength);
    toRelay.push(data);
    toRelayBytes += data.byteLength;
    if (toRelayBytes > MAX_QUEUED) {
      finish(new SessionError(Stage.RELAY, 'relay too slow'));
      return;
    }
    flushToRelay();
  };
  dc.bufferedAmountLowThreshold = LOW_WATER;
  dc.onbufferedamountlow = flushToClient;
  dc.onclose = () => finish(null);
  dc.onerror = () => finish(null);
  stop.signal.addEventListener('abort', () => finish(null), { once: true });

  let relaying = false;
  try {
    ws = await dialRelay(relay, t.relayDialTimeout, stop.signal);
  } catch {
    if (usesDefault) env.defaultRelayResult(false);
    throw new SessionError(Stage.RELAY, 'cannot connect to the relay');
  }
  const sock = ws;
  try {
    if (usesDefault) env.defaultRelayResult(true);
    if (stop.signal.aborted || dc.readyState !== 'open') return '';
    relaying = true;
    env.onRelaying();
    sock.onmessage = (ev) => {
      const data = ev.data;
      if (!(data instanceof ArrayBuffer)) {
        finish(new SessionError(Stage.RELAY, 'relay sent a text message'));
        return;
      }
      lastMoved = Date.now();
      env.onBytes(data.byteLength, 0);
      if (toClient.length === 0 && dc.bufferedAmount < HIGH_WATER) {
        dc.send(data);
        return;
      }
      toClient.push(data);
      toClientBytes += data.byteLength;
      if (toClientBytes > MAX_QUEUED) finish(new SessionError(Stage.RELAY, 'client too slow'));
    };
    sock.onclose = () => finish(null);
    sock.onerror = () => finish(null);
    flushToRelay();
    const idle = setInterval(() => {
      if (Date.now() - lastMoved >= t.inactivityTimeout) finish(new SessionError(Stage.RELAY, 'session inactive'));
    }, Math.max(t.inactivityTimeout / 4, 10));
    try {
      await ended;
    } finally {
      clearInterval(idle);
    }
    return '';
  } catch (e) {
    // A failure after relaying began is a session's end, not a failure to
    // serve: only the stages before it count.
    if (!relaying) throw e;
    return e instanceof Error ? e.message : '';
  } finally {
    clearTimeout(relayTimer);
    dc.onmessage = dc.onclose = dc.onerror = dc.onbufferedamountlow = null;
    sock.onmessage = sock.onclose = sock.onerror = null;
    sock.close(1000);
    if (dc.readyState === 'open' || dc.readyState === 'connecting') dc.close();
  }
}

/**
 * Opens a WebSocket to the relay, within ms.
 * @param {URL} url
 * @param {number} ms
 * @param {AbortSignal} signal
 * @returns {Promise<WebSocket>}
 */
export function dialRelay(url, ms, signal) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url.href);
    ws.binaryType = 'arraybuffer';
    const fail = () => {
      cleanup();
      ws.onclose = ws.onerror = ws.onopen = null;
      if (ws.readyState === WebSocket.CONNECTING || ws.readyState === WebSocket.OPEN) ws.close();
      reject(new Error('relay unreachable'));
    };
    const timer = setTimeout(fail, ms);
    const cleanup = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', fail);
    };
    signal.addEventListener('abort', fail, { once: true });
    ws.onopen = () => {
      cleanup();
      ws.onclose = ws.onerror = ws.onopen = null;
      resolve(ws);
    };
    ws.onerror = fail;
    ws.onclose = fail;
  });
}
