// The NAT test, with Snowflake's probe protocol as flurry-natprobe serves
// it, exactly as Snowflake's browser proxy and Flurry's Go proxy run it:
//
//	proxy                                             probe server
//	  │ WebRTC offer with a DataChannel "test", all candidates gathered
//	  │ POST {"Status":"client match","Offer":"<offer>","NAT":"","NextPoll":0,"RelayURL":""}
//	  │──────────────────────────────────────────────────────────▶│
//	  │◀─ 200 {"Version":"1.3","Sid":"stub-sid","Answer":"<answer>"}
//	  │ DataChannel opens within the timeout → "unrestricted", else "restricted"
//
// The probe server sits behind a restrictive NAT, so only a proxy whose own
// NAT lets the probe's packets in connects.

import { NAT, encodeProbeRequest, encodeSessionDescription, decodeProbeReply } from './protocol.js';
import { post } from './http.js';

/**
 * Runs one probe. Resolves to "restricted" or "unrestricted"; rejects with
 * an Error of fixed text when the probe server cannot be used.
 * @param {import('./settings.js').Settings} s
 * @param {AbortSignal} signal
 * @returns {Promise<string>}
 */
export async function probeNAT(s, signal) {
  const t = s.timings;
  const pc = new RTCPeerConnection({ iceServers: s.iceServers });
  try {
    const dc = pc.createDataChannel('test');
    /** @type {Promise<void>} */
    const opened = new Promise((resolve) => { dc.onopen = () => resolve(); });
    await pc.setLocalDescription(await pc.createOffer());
    await new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        pc.removeEventListener('icegatheringstatechange', check);
        resolve(undefined);
      };
      const check = () => { if (pc.iceGatheringState === 'complete') done(); };
      const timer = setTimeout(done, t.natProbeTimeout);
      pc.addEventListener('icegatheringstatechange', check);
      check();
    });
    const offer = encodeSessionDescription('offer', pc.localDescription?.sdp ?? '');
    let answer;
    try {
      answer = decodeProbeReply(await post(s.natProbeURL, encodeProbeRequest(offer), t.brokerTimeout, signal));
    } catch (e) {
      throw new Error('NAT probe: ' + (e instanceof Error ? e.message : 'failed'));
    }
    try {
      await pc.setRemoteDescription({ type: 'answer', sdp: answer.sdp });
    } catch {
      throw new Error('NAT probe: answer refused by WebRTC');
    }
    const open = await Promise.race([
      opened.then(() => true),
      new Promise((resolve) => {
        const timer = setTimeout(() => resolve(false), t.natProbeTimeout);
        signal.addEventListener('abort', () => { clearTimeout(timer); resolve(false); }, { once: true });
      }),
    ]);
    if (signal.aborted) throw new Error('NAT probe: stopped');
    return open ? NAT.UNRESTRICTED : NAT.RESTRICTED;
  } finally {
    pc.close();
  }
}
