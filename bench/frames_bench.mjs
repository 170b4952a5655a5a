// frames_bench.mjs: the viewer's frames in headless chromium, by the page's own clock,
// against a running `trove serve` (bench/frames_bench.sh starts it). Two measures:
//   - zooming a stored capture (paged from view frames, as a user opens it): FRAMES
//     animation frames, each with one wheel event on the canvas (in for the first half,
//     out for the second, the pointer in the middle of the rows); per frame, the timeline's
//     draw time (performance.now() around its draw) and the requestAnimationFrame delta;
//   - following a live capture (`trove gen --live NAME --rate R`, started here through
//     TROVE and SOCKET): the requestAnimationFrame deltas over SECONDS seconds once events
//     flow, with the frames decoded on the worker (the default) and on the main thread
//     (worker=0), each with a capture of its own; and the events the page received, the
//     gaps the service sent it, and the mean decode time per frame. With PROFILE=1, the
//     page's main thread is also sampled (the CDP's Profiler, 200 µs) over those seconds,
//     and the functions of most self time are printed after the table.
// usage: node frames_bench.mjs URL TROVE SOCKET STORED... [--live RATE]
// (FRAMES: default 120; SECONDS: default 10)
const { chromium } = await import(new URL('../tests/browser/node_modules/playwright-core/index.mjs', import.meta.url));
import { spawn } from 'node:child_process';

const argv = process.argv.slice(2);
const li = argv.indexOf('--live');
const rate = li >= 0 ? Number(argv[li + 1]) : 1000000;
const [url, trove, sock, ...stored] = li >= 0 ? argv.slice(0, li) : argv;
const FRAMES = +(process.env.FRAMES || 120);
const SECONDS = +(process.env.SECONDS || 10);
const sorted = (a) => [...a].sort((x, y) => x - y);
const median = (a) => { const b = sorted(a); return b.length ? b[b.length >> 1] : NaN; };
const max = (a) => a.reduce((m, x) => Math.max(m, x), 0);
const f1 = (x) => x.toFixed(1);

const browser = await chromium.launch({
  executablePath: process.env.TROVE_CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
async function open(hash) {
  const page = await browser.newPage({ viewport: { width: 1600, height: 900 } });
  page.on('pageerror', (e) => console.error(`page error: ${e.message}`));
  await page.goto(`${url}#${hash}`);
  return page;
}

console.log(`| capture | events | frames | draw median ms | draw slowest ms | rAF median ms | rAF slowest ms | rAF over 50 ms |`);
console.log(`|---|---:|---:|---:|---:|---:|---:|---:|`);
for (const name of stored) {
  const page = await open(`capture=${name}`);
  await page.waitForFunction(() => window.troveStats && window.troveStats.ended && window.troveView.frames().overview, null, { timeout: 600000, polling: 100 });
  const events = await page.evaluate(() => window.troveStats.events);
  const r = await page.evaluate((n) => new Promise((done) => {
    const c = document.getElementById('timeline'), b = c.getBoundingClientRect();
    const x = b.left + b.width * 0.55, y = b.top + b.height * 0.5;
    const d0 = window.troveView.drawTimes().length;
    const raf = [];
    let i = 0, last = performance.now();
    const step = () => {
      const now = performance.now();
      if (i > 0) raf.push(now - last);
      last = now;
      if (i === n) { done({ draws: window.troveView.drawTimes().slice(d0), raf }); return; }
      c.dispatchEvent(new WheelEvent('wheel', { deltaY: i < n / 2 ? -40 : 40, clientX: x, clientY: y, bubbles: true, cancelable: true }));
      i++;
      requestAnimationFrame(step);
    };
    requestAnimationFrame(step);
  }), FRAMES);
  console.log(`| ${name} (zoom) | ${events.toLocaleString('en')} | ${r.draws.length} | ${f1(median(r.draws))} | ${f1(max(r.draws))} | ${f1(median(r.raf))} | ${f1(max(r.raf))} | ${r.raf.filter((x) => x > 50).length} |`);
  await page.close();
}

const profiles = [];
if (trove && sock) {
  for (const worker of [true, false]) {
    const name = `follow-${worker ? 'worker' : 'main'}-${process.pid}`;
    const gen = spawn(trove, ['gen', '--live', name, '--rate', `${rate}`, '--seconds', `${SECONDS + 20}`, '--socket', sock, '-q'], { stdio: 'ignore' });
    const done = new Promise((r) => gen.on('close', r));
    await new Promise((r) => setTimeout(r, 300));
    const page = await open(`capture=${name}${worker ? '' : '&worker=0'}`);
    await page.waitForFunction(() => window.troveStats.events > 0, null, { timeout: 60000, polling: 50 });
    // a second for the page to settle into following, then the frames of SECONDS seconds
    await page.waitForTimeout(1000);
    const cdp = process.env.PROFILE === '1' ? await page.context().newCDPSession(page) : null;
    if (cdp) {
      await cdp.send('Profiler.enable');
      await cdp.send('Profiler.setSamplingInterval', { interval: 200 });
      await cdp.send('Profiler.start');
    }
    const r = await page.evaluate((sec) => new Promise((done) => {
      const raf = [], s0 = { ...window.troveStats }, d0 = window.troveView.drawTimes().length;
      const t0 = performance.now();
      let last = t0;
      const step = () => {
        const now = performance.now();
        raf.push(now - last);
        last = now;
        if (now - t0 >= sec * 1000) {
          const s1 = { ...window.troveStats };
          done({ raf, draws: window.troveView.drawTimes().slice(d0), events: s1.events - s0.events, gaps: s1.gapEvents - s0.gapEvents,
            decode: (s1.decodeUs - s0.decodeUs) / Math.max(1, s1.batches - s0.batches), secs: (now - t0) / 1000, ring: s1.cut });
          return;
        }
        requestAnimationFrame(step);
      };
      requestAnimationFrame(step);
    }), SECONDS);
    if (cdp) {
      const { profile } = await cdp.send('Profiler.stop');
      const byId = new Map(profile.nodes.map((n) => [n.id, n])), self = new Map();
      profile.samples.forEach((id, i) => {
        const f = byId.get(id).callFrame, k = `${f.functionName || '(anonymous)'} ${f.url.split('/').pop()}${f.url ? `:${f.lineNumber + 1}` : ''}`;
        self.set(k, (self.get(k) || 0) + (profile.timeDeltas[i] || 0) / 1000);
      });
      profiles.push(`${name.replace(/-\d+$/, '')}, main thread self time over ${SECONDS} s: ` +
        [...self].sort((x, y) => y[1] - x[1]).slice(0, 8).map(([k, v]) => `${k} ${Math.round(v)} ms`).join(' · '));
    }
    console.log(`| follow ${name.replace(/-\d+$/, '')} at ${(rate / 1e6).toFixed(1)} M/s: ${Math.round(r.events / r.secs).toLocaleString('en')} events/s received, ${r.gaps.toLocaleString('en')} dropped by the service, ${f1(r.decode)} µs decode/frame | ${r.events.toLocaleString('en')} | ${r.raf.length} | ${f1(median(r.draws))} | ${f1(max(r.draws))} | ${f1(median(r.raf))} | ${f1(max(r.raf))} | ${r.raf.filter((x) => x > 50).length} |`);
    await page.close();
    gen.kill('SIGINT');
    await done;
  }
}
for (const p of profiles) console.log(`\n${p}`);
await browser.close();
