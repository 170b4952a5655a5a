// page_bench.mjs: how the viewer opens and browses a stored capture, in Debian's chromium
// (headless, playwright-core), against a running `trove serve` (bench/summary_bench.sh starts
// it). PAGES pages open the capture at once and each then zooms in STEPS steps (each range an
// eighth of the last, around a point of its own) and back out to the whole capture; for each
// page it reports the time from the navigation to the first complete draw (the overview frame
// drawn, nothing asked or waiting), each step's time until the page has drawn the answer for
// it, and the page's JS heap after a collection (array buffers included); and the service's
// peak RSS (VmHWM of SERVICE_PID) at the end.
// usage: node page_bench.mjs URL CAPTURE PAGES STEPS SERVICE_PID
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

// playwright-core as the browser tests have it (make deps-npm)
const { chromium } = createRequire(new URL('../tests/browser/', import.meta.url))('playwright-core');

const [url, capture, pagesArg, stepsArg, pid] = process.argv.slice(2);
const PAGES = Number(pagesArg || 4), STEPS = Number(stepsArg || 8);
// each page in a browser of its own: pages of one browser but the front one are background
// tabs, whose timers are throttled
const launch = () => chromium.launch({
  executablePath: process.env.TROVE_CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
const median = (a) => { const s = [...a].sort((x, y) => x - y); return s.length ? s[(s.length - 1) >> 1] : 0; };
const errors = [];

async function browse(browser, k) {
  const page = await browser.newPage({ viewport: { width: 1400, height: 820 } });
  page.on('pageerror', (e) => errors.push(`page ${k}: ${e.message}`));
  const cdp = await page.context().newCDPSession(page);
  const until = (fn, arg) => page.waitForFunction(fn, arg, { timeout: 600000, polling: 10 });
  // drawn: no ask waiting or under way, and the view drawn since
  const drawn = () => until(() => {
    const v = window.troveView;
    if (!v) return false;
    const f = v.frames();
    if (f.timer || f.inflight || !f.overview) return false;
    v.draw();
    return true;
  });
  const t0 = Date.now();
  await page.goto(`${url}#capture=${capture}`);
  await until(() => window.troveStats && (window.troveStats.ended || window.troveStats.error));
  await drawn();
  const open = Date.now() - t0;
  const err = await page.evaluate(() => window.troveStats.error);
  if (err) errors.push(`page ${k}: ${err}`);
  const [e0, e1] = await page.evaluate(() => window.troveView.extent());
  const steps = [];
  let lo = e0, hi = e1;
  const at = (k + 1) / (PAGES + 1); // each page zooms around a point of its own
  for (let i = 0; i < STEPS; i++) {
    const span = (hi - lo) / 8, mid = lo + (hi - lo) * at;
    lo = mid - span / 2; hi = mid + span / 2;
    const t = Date.now();
    await page.evaluate(([a, b]) => window.troveView.setRange(a, b), [lo, hi]);
    await page.waitForTimeout(0);
    await drawn();
    steps.push(Date.now() - t);
  }
  const t = Date.now();
  await page.evaluate(([a, b]) => window.troveView.setRange(a, b), [e0, e1]);
  await drawn();
  steps.push(Date.now() - t);
  await cdp.send('HeapProfiler.collectGarbage');
  const h = await cdp.send('Runtime.getHeapUsage');
  return { page: k, open_ms: open, steps_ms: steps, heap_mb: (h.usedSize + (h.backingStorageSize || 0)) / 1e6 };
}

const browsers = await Promise.all(Array.from({ length: PAGES }, launch));
const results = await Promise.all(browsers.map((b, k) => browse(b, k)));
await Promise.all(browsers.map((b) => b.close()));
let rss = null;
try {
  const m = /VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (m) rss = Number(m[1]) / 1024;
} catch { /* the service is gone */ }
const all = results.flatMap((r) => r.steps_ms);
for (const r of results)
  console.log(`  page ${r.page}: first complete draw ${r.open_ms} ms; steps ${r.steps_ms.join(' ')} ms; heap ${r.heap_mb.toFixed(1)} MB`);
console.log(`  ${PAGES} pages at once: first draw median ${median(results.map((r) => r.open_ms))} ms, slowest ${Math.max(...results.map((r) => r.open_ms))} ms; ` +
  `a step median ${median(all)} ms, slowest ${Math.max(...all)} ms; heap at most ${Math.max(...results.map((r) => r.heap_mb)).toFixed(1)} MB; ` +
  `service peak RSS ${rss === null ? '?' : rss.toFixed(1)} MB`);
for (const e of errors) console.log(`  error: ${e}`);
process.exit(errors.length ? 1 : 0);
