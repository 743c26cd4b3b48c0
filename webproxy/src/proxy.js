// The browser proxy: it polls the broker for clients and serves them, as
// Flurry's Go proxy does (docs/proxy.md), with the browser's WebRTC.
//
// Each poll first takes a client slot (at most the capacity at once). A
// poll carries a fresh Sid, version 1.3, the proxy type ("webext" or
// "badge"), the NAT type from the last NAT test, the number of clients
// rounded down to a multiple of 8 and the accepted relay pattern. The next
// poll waits as long as the broker's NextPoll says (clamped), also after an
// "incorrect relay pattern" refusal; transport errors and bad replies back
// off exponentially with jitter. The default relay, if configured, is
// checked before the first poll and again later; polling goes on while it
// is down, since the broker may name other relays.
//
// Nothing a peer sends (SDP, statuses, URLs, close reasons) reaches the
// console: log lines are fixed texts and numbers.

import { NAT, Status, newSid, encodePollRequest, decodePollReply, ReplyError } from './protocol.js';
import { post } from './http.js';
import { runSession, SessionError, dialRelay } from './session.js';
import { probeNAT } from './natprobe.js';

/**
 * What a proxy shows its user.
 * @typedef {object} ProxyState
 * @property {boolean} running
 * @property {string} nat unknown, restricted or unrestricted
 * @property {string} natTest untested, testing, done or failed (the probe server could not be used)
 * @property {string} relay unknown, reachable or unreachable (the default relay)
 * @property {string} broker unknown, ok, unreachable, refused (our relay pattern) or bad-reply
 * @property {number} clients sessions now relaying
 * @property {number} helped sessions that relayed, since start
 * @property {number} failed sessions that failed before relaying, since start
 * @property {number} bytesToClient
 * @property {number} bytesFromClient
 */

/**
 * A console logger that takes fixed texts and numbers only.
 * @typedef {(level: 'debug' | 'info' | 'warn', text: string, fields?: Record<string, string | number>) => void} Logger
 */

/** @type {Logger} */
export function consoleLogger(level, text, fields) {
  const parts = ['flurry-webproxy:', text];
  if (fields) for (const [k, v] of Object.entries(fields)) parts.push(k + '=' + v);
  const line = parts.join(' ');
  if (level === 'warn') console.warn(line);
  else if (level === 'info') console.info(line);
  else console.debug(line);
}

/**
 * Sleeps ms, or until signal aborts; resolves to whether ms passed.
 * @param {number} ms
 * @param {AbortSignal} signal
 * @returns {Promise<boolean>}
 */
function sleep(ms, signal) {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve(false);
      return;
    }
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

export class Proxy {
  /**
   * @param {import('./settings.js').Settings} settings
   * @param {{onState?: (s: ProxyState) => void, log?: Logger}} [hooks]
   */
  constructor(settings, hooks = {}) {
    this.s = settings;
    this.onState = hooks.onState ?? (() => {});
    this.log = hooks.log ?? consoleLogger;
    /** @type {AbortController | null} */
    this.ctl = null;
    /** @type {Set<Promise<void>>} every loop and session, until it ends */
    this.tasks = new Set();
    this.slotsHeld = 0;
    /** @type {(() => void)[]} */
    this.slotWaiters = [];
    this.relayRecheckSoon = () => {};
    /** @type {ProxyState} */
    this.state = {
      running: false, nat: NAT.UNKNOWN, natTest: 'untested', relay: 'unknown', broker: 'unknown',
      clients: 0, helped: 0, failed: 0, bytesToClient: 0, bytesFromClient: 0,
    };
    this.bytesTimer = 0;
    this.pendingTo = 0;
    this.pendingFrom = 0;
  }

  /** @param {Promise<void>} p */
  track(p) {
    this.tasks.add(p);
    p.finally(() => this.tasks.delete(p)).catch(() => {});
  }

  /** @param {Partial<ProxyState>} change */
  set(change) {
    let changed = false;
    for (const [k, v] of Object.entries(change)) {
      if (/** @type {Record<string, unknown>} */ (this.state)[k] !== v) changed = true;
    }
    if (!changed) return;
    this.state = { ...this.state, ...change };
    this.onState(this.state);
  }

  /** Starts polling and serving; does nothing if running. */
  start() {
    if (this.ctl) return;
    this.ctl = new AbortController();
    const signal = this.ctl.signal;
    this.set({ running: true });
    this.log('info', 'proxy starting', { capacity: this.s.capacity, type: this.s.proxyType });
    if (this.s.natProbeURL !== '') this.track(this.natLoop(signal));
    this.track(this.run(signal));
  }

  /** Stops polling and ends every session; resolves once all have ended. */
  async stop() {
    if (!this.ctl) return;
    this.ctl.abort();
    this.ctl = null;
    // Loops start sessions until they see the abort: wait until none is left.
    while (this.tasks.size > 0) await Promise.allSettled([...this.tasks]);
    clearTimeout(this.bytesTimer);
    this.bytesTimer = 0;
    this.set({
      running: false, clients: 0,
      bytesToClient: this.state.bytesToClient + this.pendingTo, bytesFromClient: this.state.bytesFromClient + this.pendingFrom,
    });
    this.pendingTo = this.pendingFrom = 0;
    this.log('info', 'proxy stopped');
  }

  /** @param {AbortSignal} signal */
  async run(signal) {
    if (this.s.relayURL !== '') {
      const retry = await this.checkDefaultRelay(signal, this.s.timings.relayRetry);
      this.track(this.relayCheckLoop(signal, retry));
    }
    await this.pollLoop(signal);
  }

  /**
   * Takes a client slot, waiting while the proxy is at capacity.
   * @param {AbortSignal} signal
   * @returns {Promise<boolean>} false if stopped
   */
  async acquire(signal) {
    while (this.slotsHeld >= this.s.capacity) {
      if (signal.aborted) return false;
      await new Promise((resolve) => {
        this.slotWaiters.push(() => resolve(undefined));
        signal.addEventListener('abort', () => resolve(undefined), { once: true });
      });
    }
    if (signal.aborted) return false;
    this.slotsHeld++;
    return true;
  }

  release() {
    this.slotsHeld--;
    const waiters = this.slotWaiters;
    this.slotWaiters = [];
    for (const w of waiters) w();
  }

  /**
   * The wait after n consecutive failures: pollInterval doubled n-1 times,
   * capped, with jitter in [d/2, d].
   * @param {number} n
   */
  backoff(n) {
    const t = this.s.timings;
    let d = t.pollInterval;
    for (let i = 1; i < n && d < t.backoffMax; i++) d *= 2;
    d = Math.min(d, t.backoffMax);
    const half = Math.floor(d / 2);
    return half + Math.floor(Math.random() * (half + 1));
  }

  /** @param {number} ms the broker's NextPoll, 0 = not given */
  nextPoll(ms) {
    const t = this.s.timings;
    if (ms <= 0) return t.pollInterval;
    return Math.min(Math.max(ms, t.minPollInterval), t.maxPollInterval);
  }

  /** @param {AbortSignal} signal */
  async pollLoop(signal) {
    let failures = 0;
    for (;;) {
      if (!(await this.acquire(signal))) return;
      const sid = newSid();
      let wait;
      try {
        const reply = await this.poll(sid, signal);
        failures = 0;
        wait = this.nextPoll(reply.nextPoll);
        if (reply.status === Status.INCORRECT_RELAY_PATTERN) {
          this.release();
          if (reply.nextPoll <= 0) wait = this.s.timings.maxPollInterval;
          this.set({ broker: 'refused' });
          this.log('warn', 'broker refused our relay pattern; this build is configured for another network',
            { pattern: this.s.relayPolicy.pattern.rule, next_poll_s: Math.round(wait / 1000) });
        } else {
          this.set({ broker: 'ok' });
          if (reply.status === Status.CLIENT_MATCH) {
            this.track(this.serve(sid, reply, signal).finally(() => this.release()));
          } else {
            this.release();
          }
        }
      } catch (e) {
        this.release();
        if (signal.aborted) return;
        failures++;
        wait = this.backoff(failures);
        const reason = e instanceof Error ? e.message : 'failed';
        const bad = Object.values(ReplyError).includes(reason);
        this.set({ broker: bad ? 'bad-reply' : 'unreachable' });
        this.log('warn', 'poll failed: ' + reason, { retry_in_s: Math.round(wait / 1000) });
      }
      if (!(await sleep(wait, signal))) return;
    }
  }

  /**
   * @param {string} sid
   * @param {AbortSignal} signal
   */
  async poll(sid, signal) {
    const body = encodePollRequest({
      sid, type: this.s.proxyType, nat: this.state.nat, clients: this.slotsHeld, pattern: this.s.relayPolicy.pattern.rule,
    });
    let reply;
    try {
      reply = await post(this.s.pollURL.href, body, this.s.timings.brokerTimeout, signal);
    } catch (e) {
      throw new Error('broker ' + (e instanceof Error ? e.message : 'failed'));
    }
    return decodePollReply(reply);
  }

  /**
   * Serves one client and records how it went.
   * @param {string} sid
   * @param {import('./protocol.js').PollReply} reply
   * @param {AbortSignal} signal
   */
  async serve(sid, reply, signal) {
    let relaying = false;
    try {
      const why = await runSession({
        settings: this.s,
        signal,
        defaultRelayUp: () => this.state.relay !== 'unreachable',
        defaultRelayResult: (up) => this.defaultRelayResult(up),
        onRelaying: () => {
          relaying = true;
          this.set({ clients: this.state.clients + 1, helped: this.state.helped + 1 });
          this.log('info', 'relaying a client', { clients: this.state.clients });
        },
        onBytes: (toClient, fromClient) => this.countBytes(toClient, fromClient),
      }, sid, reply);
      this.log('debug', 'client session ended' + (why ? ': ' + why : ''));
    } catch (e) {
      if (!signal.aborted) {
        this.set({ failed: this.state.failed + 1 });
        const stage = e instanceof SessionError ? e.stage : 'unknown';
        this.log('info', 'client session failed: ' + (e instanceof Error ? e.message : 'error'), { stage });
      }
    } finally {
      if (relaying) this.set({ clients: this.state.clients - 1 });
    }
  }

  /**
   * Byte counts change often; the state is updated at most once a second.
   * @param {number} toClient
   * @param {number} fromClient
   */
  countBytes(toClient, fromClient) {
    this.pendingTo += toClient;
    this.pendingFrom += fromClient;
    if (this.bytesTimer) return;
    this.bytesTimer = setTimeout(() => {
      this.bytesTimer = 0;
      const to = this.pendingTo;
      const from = this.pendingFrom;
      this.pendingTo = this.pendingFrom = 0;
      this.set({ bytesToClient: this.state.bytesToClient + to, bytesFromClient: this.state.bytesFromClient + from });
    }, 1000);
  }

  /** @param {boolean} up */
  defaultRelayResult(up) {
    const was = this.state.relay;
    this.set({ relay: up ? 'reachable' : 'unreachable' });
    if (!up && was !== 'unreachable') {
      this.log('warn', 'default relay unreachable');
      this.relayRecheckSoon();
    } else if (up && was === 'unreachable') {
      this.log('info', 'default relay reachable again');
    }
  }

  /**
   * Opens and closes a WebSocket to the default relay; returns the wait
   * before the next check (0: it is up, check again after relayRecheck).
   * @param {AbortSignal} signal
   * @param {number} retry
   */
  async checkDefaultRelay(signal, retry) {
    try {
      const ws = await dialRelay(new URL(this.s.relayURL), this.s.timings.relayDialTimeout, signal);
      ws.close(1000);
      this.defaultRelayResult(true);
      return 0;
    } catch {
      if (signal.aborted) return retry;
      this.defaultRelayResult(false);
      return retry;
    }
  }

  /**
   * @param {AbortSignal} signal
   * @param {number} wait
   */
  async relayCheckLoop(signal, wait) {
    const t = this.s.timings;
    let retry = t.relayRetry;
    for (;;) {
      if (wait === 0) {
        wait = t.relayRecheck;
        retry = t.relayRetry;
      } else {
        retry = Math.min(retry * 2, t.relayRecheck);
      }
      // A session that fails to reach the relay cuts the wait short.
      const woken = new AbortController();
      this.relayRecheckSoon = () => woken.abort();
      const wake = () => woken.abort();
      signal.addEventListener('abort', wake, { once: true });
      await sleep(wait, woken.signal);
      signal.removeEventListener('abort', wake);
      this.relayRecheckSoon = () => {};
      if (signal.aborted) return;
      if (woken.signal.aborted) {
        // Checked soon after a failure, then on the back-off schedule.
        await sleep(t.relayRetry, signal);
        if (signal.aborted) return;
      }
      wait = await this.checkDefaultRelay(signal, retry);
    }
  }

  /** @param {AbortSignal} signal */
  async natLoop(signal) {
    for (;;) {
      this.set({ natTest: 'testing' });
      try {
        const nat = await probeNAT(this.s, signal);
        if (signal.aborted) return;
        if (nat !== this.state.nat) this.log('info', 'NAT type', { type: nat, previous: this.state.nat });
        this.set({ nat, natTest: 'done' });
      } catch (e) {
        if (signal.aborted) return;
        this.set({ natTest: 'failed' });
        this.log('warn', (e instanceof Error ? e.message : 'NAT probe failed') + '; keeping the NAT type', { type: this.state.nat });
      }
      if (!(await sleep(this.s.timings.natRetest, signal))) return;
    }
  }
}
