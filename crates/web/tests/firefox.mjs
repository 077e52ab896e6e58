// Drives cpuprof's web UI in Debian's firefox-esr (headless) over WebDriver
// BiDi with Puppeteer, and prints what it saw as JSON; the Rust test
// (firefox.rs) compares it with `cpuprof report` outputs.
//
//     node firefox.mjs URL SCREENSHOT_DIR
//
// As browser.py does in Chromium, the pages are read by their visible
// structure (no test hooks). Console errors, page errors, failed requests
// and HTTP errors are collected into "problems". Every wait is bounded.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

// puppeteer-core is installed globally (scripts/install-peers: npm -g);
// NODE_PATH points there, which `require` honours and `import` does not.
const require = createRequire(import.meta.url);
const puppeteer = require('puppeteer-core');

const [URL, SHOTS] = process.argv.slice(2);
fs.mkdirSync(SHOTS, { recursive: true });
const TIMEOUT = 15000;
const seen = { problems: [], loaded: {} };

function watch(page) {
  const p = seen.problems;
  page.on('console', (m) => { if (m.type() === 'error') p.push('console: ' + m.text()); });
  page.on('pageerror', (e) => p.push('pageerror: ' + e));
  page.on('requestfailed', (r) => p.push('failed: ' + r.url() + ' ' + (r.failure() || {}).errorText));
  page.on('response', (r) => { if (r.status() >= 400) p.push('HTTP ' + r.status() + ': ' + r.url()); });
}

const rows = (page) => page.$$eval('#toptable tbody tr', (rs) =>
  rs.filter((r) => !r.hidden).map((r) => Array.from(r.cells).map((c) => c.textContent)));

async function flameReady(page) {
  const frame = await (await page.waitForSelector('iframe#flame-frame')).contentFrame();
  await frame.waitForSelector('svg g.f');
  return frame;
}

const browser = await puppeteer.launch({
  browser: 'firefox',
  executablePath: '/usr/bin/firefox-esr',
  headless: true,
  protocolTimeout: 30000,
  timeout: 30000,
  // A fresh profile; no first-run pages, updates or telemetry (no network).
  extraPrefsFirefox: {
    'app.update.enabled': false,
    'browser.shell.checkDefaultBrowser': false,
    'datareporting.policy.dataSubmissionEnabled': false,
    'network.captive-portal-service.enabled': false,
  },
});
try {
  const page = await browser.newPage();
  page.setDefaultTimeout(TIMEOUT);
  await page.setViewport({ width: 1280, height: 760 });
  watch(page);
  seen.user_agent = await browser.userAgent();

  // Every view loads with no error.
  for (const [name, route] of [['top', '/ui/top'], ['graph', '/ui/graph'], ['flamegraph', '/'],
    ['peek', '/ui/peek?f=burn_a'], ['source', '/ui/source?f=burn_a'], ['disasm', '/ui/disasm?f=burn_a']]) {
    await page.goto(URL + route, { waitUntil: 'load' });
    let frames = null;
    if (name === 'flamegraph') {
      const frame = await flameReady(page);
      frames = await frame.$$eval('svg g.f', (gs) => gs.length);
    }
    seen.loaded[name] = {
      url: page.url(),
      title: await page.title(),
      current: await page.$eval('nav a[aria-current=page]', (a) => a.textContent),
      frames,
    };
    await page.screenshot({ path: path.join(SHOTS, name + '.png') });
  }

  // Graph: click the node burn_b, Refine > Focus: the URL changes; Top
  // then shows the focused numbers.
  await page.goto(URL + '/ui/graph', { waitUntil: 'load' });
  const nodes = await page.$$('svg g.node');
  let clicked = false;
  for (const node of nodes) {
    const title = await node.$eval('title', (t) => t.textContent);
    if (title.startsWith('burn_b |')) {
      await node.click();
      clicked = true;
      break;
    }
  }
  seen.graph_clicked = clicked;
  seen.selection_text = await page.$eval('#selection', (s) => s.textContent);
  const before = page.url();
  await page.click('#refine summary');
  await Promise.all([
    page.waitForNavigation({ waitUntil: 'load' }),
    page.click('#refine button[data-param=f]'),
  ]);
  seen.graph_focus_url = page.url();
  seen.url_changed = seen.graph_focus_url !== before;
  await Promise.all([
    page.waitForNavigation({ waitUntil: 'load' }),
    page.click('nav .views a[data-view=top]'),
  ]);
  seen.focus_top_url = page.url();
  seen.focus_rows = await rows(page);
  await page.screenshot({ path: path.join(SHOTS, 'top-focus.png') });

  // The flame graph: a click on a frame selects its function; search
  // highlights.
  await page.goto(URL + '/ui/flamegraph', { waitUntil: 'load' });
  const frame = await flameReady(page);
  const frameBox = await (await frame.$('svg g.f:last-of-type rect')).boundingBox();
  seen.flame_frame_box = frameBox !== null;
  await page.type('#search', 'burn_a');
  await frame.waitForFunction(() => /Matched/.test(document.getElementById('matched').textContent));
  seen.flame_matched = await frame.$eval('#matched', (m) => m.textContent);
  await page.screenshot({ path: path.join(SHOTS, 'flamegraph-search.png') });
} finally {
  await browser.close();
}
console.log(JSON.stringify(seen));
