// POSTs to the broker and the NAT probe: a time limit, a size limit on the
// reply, no cookies, no redirects, no referrer. Failures are Errors with
// fixed texts.

import { MAX_BODY_SIZE } from './protocol.js';

export const HTTPError = Object.freeze({
  UNREACHABLE: 'unreachable',
  STATUS: 'unexpected HTTP status',
  TOO_LARGE: 'reply too large',
  TIMEOUT: 'timed out',
});

/**
 * POSTs body to url and returns the reply's bytes; any status but 200 is
 * an error. The request is a CORS "simple" one (text/plain), so no
 * preflight precedes it.
 * @param {string} url
 * @param {string} body
 * @param {number} timeoutMs bounds the whole exchange, long-poll included
 * @param {AbortSignal} [signal] aborts it early
 * @returns {Promise<Uint8Array>}
 */
export async function post(url, body, timeoutMs, signal) {
  const ctl = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => { timedOut = true; ctl.abort(); }, timeoutMs);
  const onAbort = () => ctl.abort();
  signal?.addEventListener('abort', onAbort);
  try {
    let resp;
    try {
      resp = await fetch(url, {
        method: 'POST',
        body,
        signal: ctl.signal,
        credentials: 'omit',
        cache: 'no-store',
        redirect: 'error',
        referrerPolicy: 'no-referrer',
      });
    } catch {
      throw new Error(timedOut ? HTTPError.TIMEOUT : HTTPError.UNREACHABLE);
    }
    if (resp.status !== 200) {
      await resp.body?.cancel().catch(() => {});
      throw new Error(HTTPError.STATUS);
    }
    return await readLimited(resp, () => timedOut);
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  }
}

/**
 * Reads at most MAX_BODY_SIZE bytes of a reply.
 * @param {Response} resp
 * @param {() => boolean} timedOut
 * @returns {Promise<Uint8Array>}
 */
async function readLimited(resp, timedOut) {
  if (!resp.body) return new Uint8Array(0);
  const reader = resp.body.getReader();
  const chunks = [];
  let n = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      n += value.length;
      if (n > MAX_BODY_SIZE) {
        await reader.cancel().catch(() => {});
        throw new Error(HTTPError.TOO_LARGE);
      }
      chunks.push(value);
    }
  } catch (e) {
    if (e instanceof Error && e.message === HTTPError.TOO_LARGE) throw e;
    throw new Error(timedOut() ? HTTPError.TIMEOUT : HTTPError.UNREACHABLE);
  }
  const out = new Uint8Array(n);
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.length;
  }
  return out;
}
