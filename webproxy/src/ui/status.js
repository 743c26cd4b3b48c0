// What the extension's popup, the badge and the test page say about a
// proxy's state: one place, so that all three say the same.

/**
 * @typedef {import('../proxy.js').ProxyState} ProxyState
 */

/**
 * The headline: off, waiting, or helping.
 * @param {ProxyState | null} s
 * @param {boolean} enabled
 */
export function headline(s, enabled) {
  if (!enabled || !s || !s.running) return 'Off';
  if (s.clients === 1) return 'Helping 1 person right now';
  if (s.clients > 1) return 'Helping ' + s.clients + ' people right now';
  return 'On: waiting for someone to help';
}

/**
 * Problems the user should know about, most serious first.
 * @param {ProxyState | null} s
 * @param {boolean} enabled
 * @returns {string[]}
 */
export function warnings(s, enabled) {
  if (!enabled || !s || !s.running) return [];
  const out = [];
  if (s.relay === 'unreachable') out.push('The relay cannot be reached: nobody can be helped through it until it is back.');
  if (s.broker === 'unreachable') out.push('The broker cannot be reached.');
  if (s.broker === 'refused') out.push('The broker refused this proxy: it was built for another network.');
  if (s.broker === 'bad-reply') out.push('The broker sent replies this proxy cannot use.');
  if (s.natTest === 'failed') out.push('The NAT test cannot be reached: your NAT type is unknown, so you are matched with fewer people.');
  if (s.nat === 'restricted') out.push('Your NAT is restrictive: you can help only people whose own NAT is not.');
  return out;
}

/**
 * How many people this proxy has helped, in words.
 * @param {number} n
 */
export function helpedText(n) {
  if (n === 1) return 'You have helped 1 person.';
  return 'You have helped ' + n + ' people.';
}

/**
 * Renders a state into elements with the ids headline, warnings (a list)
 * and helped, wherever they exist in doc.
 * @param {Document} doc
 * @param {ProxyState | null} s
 * @param {boolean} enabled
 * @param {number} helped
 */
export function render(doc, s, enabled, helped) {
  const h = doc.getElementById('headline');
  if (h) h.textContent = headline(s, enabled);
  const w = doc.getElementById('warnings');
  if (w) {
    w.replaceChildren(...warnings(s, enabled).map((text) => {
      const li = doc.createElement('li');
      li.textContent = text;
      return li;
    }));
    w.hidden = w.childElementCount === 0;
  }
  const c = doc.getElementById('helped');
  if (c) c.textContent = helpedText(helped);
  doc.documentElement.dataset.state = !enabled || !s || !s.running ? 'off' : s.clients > 0 ? 'helping' : 'on';
}
