// The extension's background: it keeps the on/off switch and the count of
// people helped in storage, and runs the proxy while the switch is on.
// Chromium's MV3 service worker has no RTCPeerConnection, so there the
// proxy runs in an offscreen document (reason WEB_RTC) that reports its
// state here; Firefox's background page has WebRTC and runs it itself.

const api = /** @type {typeof chrome} */ (globalThis.browser ?? globalThis.chrome);
const inPage = typeof globalThis.RTCPeerConnection === 'function';

const OFFSCREEN = 'offscreen.html';
const KEEPALIVE = 'flurry-keepalive';

/** @type {import('./js/proxy.js').Proxy | null} */
let local = null;

/** @returns {Promise<boolean>} */
async function enabled() {
  const { enabled = true } = await api.storage.local.get('enabled');
  return enabled === true;
}

/**
 * Records a state the proxy reported: the state for the popup, the people
 * helped added to the total, and the toolbar badge.
 * @param {import('./js/proxy.js').ProxyState} state
 * @param {number} newlyHelped
 */
async function record(state, newlyHelped) {
  await api.storage.session.set({ state });
  if (newlyHelped > 0) {
    const { helped = 0 } = await api.storage.local.get('helped');
    await api.storage.local.set({ helped: helped + newlyHelped });
  }
  const problem = state.running && (state.relay === 'unreachable' || state.broker === 'unreachable' ||
    state.broker === 'refused' || state.natTest === 'failed');
  await api.action.setBadgeText({ text: !state.running ? 'off' : problem ? '!' : state.clients > 0 ? String(state.clients) : '' });
  await api.action.setBadgeBackgroundColor({ color: problem ? '#b35900' : '#1a7f37' });
}

async function startProxy() {
  if (inPage) {
    if (local) return;
    const [{ default: config }, { settle }, { Proxy }] = await Promise.all([
      import('./js/config.js'), import('./js/settings.js'), import('./js/proxy.js')]);
    let seen = 0;
    local = new Proxy(settle(config, 'webext'), {
      onState: (s) => {
        const fresh = Math.max(s.helped - seen, 0);
        seen = s.helped;
        record(s, fresh);
      },
    });
    local.start();
    // Firefox suspends an idle event page: an alarm brings it back.
    await api.alarms.create(KEEPALIVE, { periodInMinutes: 0.5 });
    return;
  }
  const contexts = await api.runtime.getContexts({ contextTypes: ['OFFSCREEN_DOCUMENT'] });
  if (contexts.length > 0) return;
  await api.offscreen.createDocument({
    url: OFFSCREEN,
    reasons: ['WEB_RTC'],
    justification: 'Relay WebRTC connections of people in censored networks (the browser proxy)',
  }).catch(() => {}); // created meanwhile by another event
}

async function stopProxy() {
  if (inPage) {
    await api.alarms.clear(KEEPALIVE);
    const p = local;
    local = null;
    await p?.stop();
  } else {
    const contexts = await api.runtime.getContexts({ contextTypes: ['OFFSCREEN_DOCUMENT'] });
    if (contexts.length > 0) await api.offscreen.closeDocument();
  }
  const { state } = await api.storage.session.get('state');
  await record({ ...(state ?? {}), running: false, clients: 0 }, 0);
}

async function apply() {
  if (await enabled()) await startProxy();
  else await stopProxy();
}

api.runtime.onInstalled.addListener(() => { apply(); });
api.runtime.onStartup.addListener(() => { apply(); });
api.storage.onChanged.addListener((changes, area) => {
  if (area === 'local' && 'enabled' in changes) apply();
});
api.runtime.onMessage.addListener((msg, sender) => {
  // Only the extension's own offscreen document reports states.
  if (sender.id !== api.runtime.id || !msg || msg.type !== 'flurry-state') return;
  record(msg.state, msg.newlyHelped);
});
if (inPage) api.alarms.onAlarm.addListener(() => { apply(); });
apply();
