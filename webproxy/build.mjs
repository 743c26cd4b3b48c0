#!/usr/bin/env node
// Builds Flurry's browser proxy for one network, from one source, with no
// dependencies: the web pages (badge and test page), the Chromium and
// Firefox extensions (directories, and .zip / .xpi archives).
//
//	node build.mjs [-config config.json] [-out ../out/webproxy]
//	               [-broker URL] [-relay-pattern PATTERN] [-relay URL]
//	               [-nat-probe URL] [-stun URL,URL] [-capacity N]
//	               [-allow-private-relay] [-allow-non-tls-relay]
//
// Flags override the values of the configuration file. The output:
//
//	OUT/web/          badge.html, index.html (test page), style.css, js/
//	OUT/chromium/     an unpacked MV3 extension (offscreen document)
//	OUT/firefox/      an unpacked MV3 extension (background page)
//	OUT/flurry-webproxy-chromium.zip, OUT/flurry-webproxy-firefox.xpi
//
// The archives are reproducible: fixed timestamps, sorted entries.

import { readFileSync, writeFileSync, mkdirSync, rmSync, readdirSync, statSync, copyFileSync } from 'node:fs';
import { join, dirname, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { deflateRawSync, deflateSync } from 'node:zlib';
import { settle } from './src/settings.js';

// CRC-32 (IEEE), for PNG chunks and ZIP entries.
const crcTable = new Uint32Array(256).map((_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

const here = dirname(fileURLToPath(import.meta.url));
const pkg = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8'));

/** @param {string[]} argv */
function parseArgs(argv) {
  /** @type {Record<string, string | boolean>} */
  const out = {};
  const bools = new Set(['allow-private-relay', 'allow-non-tls-relay']);
  const strings = new Set(['config', 'out', 'broker', 'relay-pattern', 'relay', 'nat-probe', 'stun', 'capacity']);
  for (let i = 0; i < argv.length; i++) {
    const name = argv[i].replace(/^--?/, '');
    const [key, inline] = name.split(/=(.*)/s);
    if (bools.has(key)) {
      out[key] = inline === undefined ? true : inline === 'true';
    } else if (strings.has(key)) {
      const v = inline ?? argv[++i];
      if (v === undefined) throw new Error('flag -' + key + ' needs a value');
      out[key] = v;
    } else {
      throw new Error('unknown flag ' + argv[i]);
    }
  }
  return out;
}

const args = parseArgs(process.argv.slice(2));
const configPath = typeof args.config === 'string' ? args.config : join(here, 'config.json');
const config = JSON.parse(readFileSync(configPath, 'utf8'));
/** @param {string} flag @param {string} key @param {(v: string) => unknown} [conv] */
const override = (flag, key, conv = (v) => v) => {
  if (typeof args[flag] === 'string' && args[flag] !== '') config[key] = conv(/** @type {string} */ (args[flag]));
};
override('broker', 'brokerURL');
override('relay-pattern', 'relayPattern');
if (typeof args.relay === 'string') config.relayURL = args.relay;
override('nat-probe', 'natProbeURL');
if (typeof args.stun === 'string') config.stunServers = args.stun.split(',').map((s) => s.trim()).filter((s) => s !== '');
override('capacity', 'capacity', Number);
if (args['allow-private-relay']) config.allowPrivateRelay = true;
if (args['allow-non-tls-relay']) config.allowNonTLSRelay = true;
for (const k of Object.keys(config)) {
  if (!['brokerURL', 'relayPattern', 'relayURL', 'natProbeURL', 'stunServers', 'capacity',
    'allowPrivateRelay', 'allowNonTLSRelay'].includes(k)) {
    throw new Error(configPath + ': unknown key ' + k);
  }
}
try {
  settle(config, 'webext');
} catch (e) {
  console.error('flurry-webproxy build: bad configuration: ' + (e instanceof Error ? e.message : e));
  process.exit(2);
}

const out = typeof args.out === 'string' ? args.out : join(here, '..', 'out', 'webproxy');
rmSync(out, { recursive: true, force: true });

const origin = (/** @type {string} */ u) => new URL(u).origin;
const connect = [origin(config.brokerURL)];
if (config.natProbeURL) connect.push(origin(config.natProbeURL));
connect.push('wss:');
if (config.allowNonTLSRelay) connect.push('ws:');
const connectSrc = [...new Set(connect)].join(' ');
// Nothing but this build's own files runs, and the pages talk only to the
// broker, the NAT probe and relays.
const pageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src " + connectSrc +
  "; base-uri 'none'; form-action 'none'";
const extensionCSP = "default-src 'self'; script-src 'self'; object-src 'none'; connect-src " + connectSrc +
  "; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const configJS = '// This build\'s network (webproxy/config.json and the make webproxy flags).\n' +
  'export default Object.freeze(' + JSON.stringify(config, null, 2) + ');\n';

/** Modules every packaging carries. */
const modules = ['ip.js', 'relaypattern.js', 'protocol.js', 'sdp.js', 'http.js', 'settings.js', 'session.js',
  'natprobe.js', 'proxy.js', 'ui/status.js'];

/**
 * @param {string} dir
 * @param {string[]} extra files of src/ to add to js/
 */
function writeModules(dir, extra) {
  for (const m of [...modules, ...extra]) {
    const to = join(dir, 'js', m.replace(/^(web|ext)\//, ''));
    mkdirSync(dirname(to), { recursive: true });
    copyFileSync(join(here, 'src', m), to);
  }
  writeFileSync(join(dir, 'js', 'config.js'), configJS);
}

/** @param {string} s */
function htmlEscape(s) {
  return s.replace(/[&<>"']/g, (c) => '&#' + c.charCodeAt(0) + ';');
}

/** @param {string} src @param {string} to */
function writePage(src, to) {
  const html = readFileSync(join(here, 'src', src), 'utf8')
    .replaceAll('@CSP@', htmlEscape(pageCSP))
    .replaceAll('@BROKER@', htmlEscape(config.brokerURL));
  writeFileSync(to, html);
}

// The web pages.
const web = join(out, 'web');
mkdirSync(web, { recursive: true });
writeModules(web, ['web/page.js', 'web/badge.js']);
writePage('web/index.html', join(web, 'index.html'));
writePage('web/badge.html', join(web, 'badge.html'));
copyFileSync(join(here, 'src/web/style.css'), join(web, 'style.css'));
const icons = { 16: png(16), 32: png(32), 48: png(48), 128: png(128) };
writeFileSync(join(web, 'icon.png'), icons[32]);

// The extensions.
/** @param {'chromium' | 'firefox'} browser */
function extension(browser) {
  const dir = join(out, browser);
  mkdirSync(join(dir, 'icons'), { recursive: true });
  writeModules(dir, browser === 'chromium' ? ['ext/offscreen.js', 'ext/popup.js'] : ['ext/popup.js']);
  copyFileSync(join(here, 'src/ext/background.js'), join(dir, 'background.js'));
  copyFileSync(join(here, 'src/ext/popup.html'), join(dir, 'popup.html'));
  if (browser === 'chromium') copyFileSync(join(here, 'src/ext/offscreen.html'), join(dir, 'offscreen.html'));
  copyFileSync(join(here, 'src/web/style.css'), join(dir, 'style.css'));
  /** @type {Record<string, string>} */
  const iconFiles = {};
  for (const [size, data] of Object.entries(icons)) {
    writeFileSync(join(dir, 'icons', size + '.png'), data);
    iconFiles[size] = 'icons/' + size + '.png';
  }
  /** @type {Record<string, unknown>} */
  const manifest = {
    manifest_version: 3,
    name: 'Flurry browser proxy',
    short_name: 'Flurry',
    version: pkg.version,
    description: 'Lets people in censored networks reach the Internet through your browser (a Flurry proxy).',
    icons: iconFiles,
    action: { default_title: 'Flurry', default_popup: 'popup.html', default_icon: iconFiles },
    permissions: browser === 'chromium' ? ['storage', 'offscreen'] : ['storage', 'alarms'],
    content_security_policy: { extension_pages: extensionCSP },
    background: browser === 'chromium'
      ? { service_worker: 'background.js', type: 'module' }
      : { scripts: ['background.js'], type: 'module' },
  };
  if (browser === 'chromium') {
    manifest.minimum_chrome_version = '116';
  } else {
    manifest.browser_specific_settings = {
      gecko: { id: 'webproxy@flurry.invalid', strict_min_version: '128.0', data_collection_permissions: { required: ['none'] } },
    };
  }
  writeFileSync(join(dir, 'manifest.json'), JSON.stringify(manifest, null, 2) + '\n');
  return dir;
}
writeFileSync(join(out, 'flurry-webproxy-chromium.zip'), zip(extension('chromium')));
writeFileSync(join(out, 'flurry-webproxy-firefox.xpi'), zip(extension('firefox')));
console.log('flurry-webproxy ' + pkg.version + ' built for ' + config.brokerURL + ' (relays ' + config.relayPattern + ') in ' + out);

/** @param {Uint8Array} b */
function crc32(b) {
  let c = 0xffffffff;
  for (const x of b) c = crcTable[(c ^ x) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/**
 * The toolbar icon at size px: a blue disc with a white six-armed flake,
 * drawn as RGBA and encoded as PNG.
 * @param {number} size
 */
function png(size) {
  const px = Buffer.alloc(size * (size * 4 + 1));
  const c = (size - 1) / 2;
  for (let y = 0; y < size; y++) {
    px[y * (size * 4 + 1)] = 0; // filter: none
    for (let x = 0; x < size; x++) {
      const dx = x - c;
      const dy = y - c;
      const r = Math.hypot(dx, dy) / (size / 2);
      let arm = false;
      for (let i = 0; i < 3; i++) {
        const a = (i * Math.PI) / 3;
        const d = Math.abs(dx * Math.sin(a) - dy * Math.cos(a)) / (size / 2);
        if (d < 0.09 && r < 0.72) arm = true;
      }
      const o = y * (size * 4 + 1) + 1 + x * 4;
      const inDisc = r <= 1;
      const rgb = arm ? [255, 255, 255] : [37, 99, 235];
      px[o] = rgb[0];
      px[o + 1] = rgb[1];
      px[o + 2] = rgb[2];
      px[o + 3] = inDisc ? 255 : 0;
    }
  }
  /** @param {string} type @param {Buffer} data */
  const chunk = (type, data) => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(data.length, 0);
    head.write(type, 4, 'latin1');
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
    return Buffer.concat([head, data, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 6; // RGBA
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(px, { level: 9 })), chunk('IEND', Buffer.alloc(0))]);
}

/**
 * A ZIP archive (deflate) of every file under dir, sorted, with a fixed
 * timestamp (1980-01-01), so that the same tree gives the same bytes.
 * @param {string} dir
 */
function zip(dir) {
  /** @type {string[]} */
  const files = [];
  /** @param {string} d */
  const walk = (d) => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else files.push(p);
    }
  };
  walk(dir);
  const locals = [];
  const central = [];
  let offset = 0;
  for (const p of files) {
    const name = Buffer.from(relative(dir, p).split('\\').join('/'), 'utf8');
    const data = readFileSync(p);
    const packed = deflateRawSync(data, { level: 9 });
    const crc = crc32(data);
    const head = Buffer.alloc(30);
    head.writeUInt32LE(0x04034b50, 0);
    head.writeUInt16LE(20, 4); // version needed
    head.writeUInt16LE(0x0800, 6); // UTF-8 names
    head.writeUInt16LE(8, 8); // deflate
    head.writeUInt16LE(0, 10); // time
    head.writeUInt16LE(0x21, 12); // date: 1980-01-01
    head.writeUInt32LE(crc, 14);
    head.writeUInt32LE(packed.length, 18);
    head.writeUInt32LE(data.length, 22);
    head.writeUInt16LE(name.length, 26);
    locals.push(head, name, packed);
    const entry = Buffer.alloc(46);
    entry.writeUInt32LE(0x02014b50, 0);
    entry.writeUInt16LE(20, 4);
    entry.writeUInt16LE(20, 6);
    entry.writeUInt16LE(0x0800, 8);
    entry.writeUInt16LE(8, 10);
    entry.writeUInt16LE(0, 12);
    entry.writeUInt16LE(0x21, 14);
    entry.writeUInt32LE(crc, 16);
    entry.writeUInt32LE(packed.length, 20);
    entry.writeUInt32LE(data.length, 24);
    entry.writeUInt16LE(name.length, 28);
    entry.writeUInt32LE(0o100644 * 0x10000, 38); // external attributes: a regular file, 0644
    entry.writeUInt32LE(offset, 42);
    central.push(entry, name);
    offset += 30 + name.length + packed.length;
  }
  const centralBuf = Buffer.concat(central);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(files.length, 8);
  end.writeUInt16LE(files.length, 10);
  end.writeUInt32LE(centralBuf.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, centralBuf, end]);
}
