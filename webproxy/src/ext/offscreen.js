// The proxy in Chromium's offscreen document: it reports every state change
// to the service worker, which stores it for the popup.

import config from './config.js';
import { settle } from './settings.js';
import { Proxy } from './proxy.js';

let seen = 0;
const proxy = new Proxy(settle(config, 'webext'), {
  onState: (state) => {
    const newlyHelped = Math.max(state.helped - seen, 0);
    seen = state.helped;
    chrome.runtime.sendMessage({ type: 'flurry-state', state, newlyHelped }).catch(() => {});
  },
});
proxy.start();
