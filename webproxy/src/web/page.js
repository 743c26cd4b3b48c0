// The plain test page: it starts the proxy at once and shows everything,
// the state as JSON included (the browser tests read it).

import config from './config.js';
import { settle } from './settings.js';
import { Proxy, consoleLogger } from './proxy.js';
import { render } from './ui/status.js';

const out = /** @type {HTMLElement} */ (document.getElementById('state-json'));
const log = /** @type {HTMLElement} */ (document.getElementById('log'));
const button = /** @type {HTMLButtonElement} */ (document.getElementById('toggle'));

/** @type {import('./proxy.js').Logger} */
function pageLogger(level, text, fields) {
  consoleLogger(level, text, fields);
  const line = document.createElement('div');
  line.textContent = new Date().toISOString().slice(11, 19) + ' ' + text +
    (fields ? ' ' + Object.entries(fields).map(([k, v]) => k + '=' + v).join(' ') : '');
  log.prepend(line);
  while (log.childElementCount > 200) log.lastElementChild?.remove();
}

let proxy;
try {
  proxy = new Proxy(settle(config, 'badge'), {
    log: pageLogger,
    onState: (s) => {
      out.textContent = JSON.stringify(s);
      render(document, s, true, s.helped);
      button.textContent = s.running ? 'Stop' : 'Start';
    },
  });
} catch (e) {
  out.textContent = JSON.stringify({ error: e instanceof Error ? e.message : 'bad configuration' });
  throw e;
}
button.addEventListener('click', () => {
  if (proxy.state.running) proxy.stop();
  else proxy.start();
});
proxy.start();
