// The extension's popup: the on/off switch, the state and the count of
// people helped, kept up to date from storage.

import { render } from './ui/status.js';

const api = /** @type {typeof chrome} */ (globalThis.browser ?? globalThis.chrome);
const box = /** @type {HTMLInputElement} */ (document.getElementById('enabled'));

async function show() {
  const [{ enabled = true, helped = 0 }, { state = null }] = await Promise.all([
    api.storage.local.get(['enabled', 'helped']), api.storage.session.get('state')]);
  box.checked = enabled === true;
  render(document, state, box.checked, helped);
}

box.addEventListener('change', () => { api.storage.local.set({ enabled: box.checked }); });
api.storage.onChanged.addListener(() => { show(); });
show();
