// Drives cpuprof's timeline view in Debian's firefox-esr (headless) over
// WebDriver BiDi with Puppeteer, and prints what it saw as JSON; the Rust
// test (timeline.rs) checks it.
//
//     node timeline_firefox.mjs URL SCREENSHOT_DIR
//
// One page load: the page draws (painted canvas pixels), and a drag with
// the mouse over the first track from 30% to 60% of its width selects a
// range (the URL's t=, the legend). Every wait is bounded.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const puppeteer = require('puppeteer-core');

const [URL, SHOTS] = process.argv.slice(2);
fs.mkdirSync(SHOTS, { recursive: true });
const TIMEOUT = 15000;
const seen = { problems: [] };

const browser = await puppeteer.launch({
  browser: 'firefox',
  executablePath: '/usr/bin/firefox-esr',
  headless: true,
  protocolTimeout: 30000,
  timeout: 30000,
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
  const p = seen.problems;
  page.on('console', (m) => { if (m.type() === 'error') p.push('console: ' + m.text()); });
  page.on('pageerror', (e) => p.push('pageerror: ' + e));
  page.on('requestfailed', (r) => p.push('failed: ' + r.url() + ' ' + (r.failure() || {}).errorText));
  page.on('response', (r) => { if (r.status() >= 400) p.push('HTTP ' + r.status() + ': ' + r.url()); });
  seen.user_agent = await browser.userAgent();

  await page.goto(URL + '/ui/timeline', { waitUntil: 'load' });
  seen.current = await page.$eval('nav a[aria-current=page]', (a) => a.textContent);
  seen.tracks = await page.$$eval('#tracks .track-label', (ls) => ls.map((l) => l.textContent));
  seen.to = await page.$eval('#timeline-data', (s) => JSON.parse(s.textContent).to);
  seen.canvases = await page.$$eval('canvas[role=img], #heat', (cs) => cs.map((c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
    return { label: c.getAttribute('aria-label'), painted: n };
  }));
  await page.screenshot({ path: path.join(SHOTS, 'timeline.png') });

  const box = await (await page.$('#tracks canvas')).boundingBox();
  const y = box.y + box.height / 2;
  await page.mouse.move(box.x + box.width * 0.3, y);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.45, y);
  await Promise.all([
    page.waitForNavigation({ waitUntil: 'load' }),
    (async () => {
      await page.mouse.move(box.x + box.width * 0.6, y);
      await page.mouse.up();
    })(),
  ]);
  seen.selected_url = page.url();
  seen.selected_legend = await page.$eval('#legend', (l) => l.textContent);
  await page.screenshot({ path: path.join(SHOTS, 'timeline-selected.png') });
} finally {
  await browser.close();
}
console.log(JSON.stringify(seen));
