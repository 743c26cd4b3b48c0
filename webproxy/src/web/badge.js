// The badge: an iframe page any site can embed. The proxy runs only after
// the visitor switches it on here; the choice and the count of people
// helped stay in this page's storage (partitioned by the embedding site).

import config from './config.js';
import { settle } from './settings.js';
import { Proxy } from './proxy.js';
import { render } from './ui/status.js';

const ENABLED_KEY = 'flurry-webproxy-enabled';
const HELPED_KEY = 'flurry-webproxy-helped';

const box = /** @type {HTMLInputElement} */ (document.getElementById('enabled'));
const helpedEl = /** @type {HTMLElement} */ (document.getElementById('helped'));

/** @param {string} key */
function load(key) {
  try {
    return localStorage.getItem(key);
  } catch {
    return null; // storage blocked: the badge still works for this visit
  }
}

/** @param {string} key @param {string} value */
function save(key, value) {
  try {
    localStorage.setItem(key, value);
  } catch {
    // storage blocked
  }
}

let helped = Number(load(HELPED_KEY)) || 0;
let seen = 0;
const proxy = new Proxy(settle(config, 'badge'), {
  onState: (s) => {
    if (s.helped > seen) {
      helped += s.helped - seen;
      seen = s.helped;
      save(HELPED_KEY, String(helped));
    }
    show();
  },
});

function show() {
  render(document, proxy.state, box.checked, helped);
  helpedEl.hidden = helped === 0;
}

box.checked = load(ENABLED_KEY) === '1';
box.addEventListener('change', () => {
  save(ENABLED_KEY, box.checked ? '1' : '0');
  if (box.checked) proxy.start();
  else proxy.stop();
  show();
});
if (box.checked) proxy.start();
show();
