// find_bench.mjs: how long finding takes in the viewer, measured in the page with
// performance.now() around the user's action until the page has drawn its answer (the
// timeline's frame after it: a requestAnimationFrame that runs after the timeline's own):
//   - a search step: Enter in the search box until the count reads "k / N" and the view
//     centred on the match has been drawn (the service's /events?match=1 in between);
//   - the name panel: a click on the selected event's name until the panel's statistics and
//     histogram are drawn (the service's /stats?name=).
// Each is repeated RUNS times; the median and the slowest are printed, one line a capture.
// usage: node find_bench.mjs URL CAPTURE:SEARCH ...   (env RUNS, default 21)
const { chromium } = await import(new URL('../tests/browser/node_modules/playwright-core/index.mjs', import.meta.url));

const [url, ...targets] = process.argv.slice(2);
const RUNS = Number(process.env.RUNS || 21);
const browser = await chromium.launch({
  executablePath: process.env.TROVE_CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
const med = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]; };
let bad = 0;
for (const target of targets) {
  const [capture, q] = target.split(':');
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto(`${url}#capture=${capture}`);
  await page.waitForFunction(() => window.troveStats && (window.troveStats.ended || window.troveStats.error), null, { timeout: 300000, polling: 100 });
  await page.fill('#search', q);
  await page.waitForFunction(() => /events in/.test(document.getElementById('search-count').textContent || ''), null, { timeout: 120000 });
  const r = await page.evaluate(async (runs) => {
    const box = /** @type {HTMLInputElement} */ (document.getElementById('search'));
    const count = /** @type {HTMLElement} */ (document.getElementById('search-count'));
    const frame = () => new Promise((res) => requestAnimationFrame(() => res(undefined)));
    const until = (cond) => new Promise((res) => {
      if (cond()) { res(undefined); return; }
      const o = new MutationObserver(() => { if (cond()) { o.disconnect(); res(undefined); } });
      o.observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
    });
    const step = [], panel = [];
    for (let k = 1; k <= runs; k++) {
      const t0 = performance.now();
      box.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true }));
      await until(() => (count.textContent || '').startsWith(`${k.toLocaleString('en')} / `));
      await frame();
      step.push(performance.now() - t0);
    }
    for (let k = 0; k < runs; k++) {
      const close = document.querySelector('#name-panel .np-close');
      if (close) /** @type {HTMLElement} */ (close).click();
      await frame();
      const t0 = performance.now();
      /** @type {HTMLElement} */ (document.getElementById('sel-name')).click();
      await until(() => !!document.querySelector('#np-stats td[data-key="count"]') && !!document.querySelector('#np-hist .np-bar'));
      await frame();
      panel.push(performance.now() - t0);
    }
    return { step, panel, total: count.textContent, name: document.getElementById('np-name')?.textContent,
      n: document.querySelector('#np-stats td[data-key="count"]')?.textContent };
  }, RUNS);
  console.log(`${capture}: search "${q}" step: median ${med(r.step).toFixed(1)} ms, slowest ${Math.max(...r.step).toFixed(1)} ms (${RUNS} steps, ${r.total}); ` +
    `name panel (${r.name}, ${r.n} instances): median ${med(r.panel).toFixed(1)} ms, slowest ${Math.max(...r.panel).toFixed(1)} ms (${RUNS} opens)`);
  if (errors.length) { console.error(`errors in the page: ${errors.join('; ')}`); bad++; }
  await page.close();
}
await browser.close();
process.exit(bad ? 1 : 0);
