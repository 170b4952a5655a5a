// viewer_bench.mjs: the viewer's speed in headless chromium, by the browser's own clock
// (performance.now() around the draw calls and the decode of each frame,
// requestAnimationFrame deltas), against a running `trove serve` (bench/viewer_bench.sh
// starts it with the captures imported). Prints one table: medians over the frames.
//   - decode: every frame of a capture replayed at speed=max, packed: events per second of
//     decode time (the page's one thread, so one core);
//   - draw, everything in view: the capture fitted, drawn FRAMES times;
//   - zoom and pan: FRAMES frames of a zoom from the whole capture in to 1/1000 of it and
//     back out, panning as it goes, each frame one draw;
//   - rAF: the deltas between animation frames while the view changes every frame;
//   - the decoders alone on WIRE_FILES (fetched into the page): decode rates per wire.
// usage: node viewer_bench.mjs URL CAPTURE [CAPTURE...]   (FRAMES: default 120)
// playwright-core from tests/browser's lockfile (make deps-npm)
const { chromium } = await import(new URL('../tests/browser/node_modules/playwright-core/index.mjs', import.meta.url));

const [url, ...names] = process.argv.slice(2);
const FRAMES = +(process.env.FRAMES || 120);
const median = (a) => { const b = [...a].sort((x, y) => x - y); return b.length ? b[b.length >> 1] : NaN; };
const p90 = (a) => { const b = [...a].sort((x, y) => x - y); return b.length ? b[Math.floor(b.length * 0.9)] : NaN; };

const browser = await chromium.launch({
  executablePath: process.env.TROVE_CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
const rows = [];
for (const name of names) {
  const page = await browser.newPage({ viewport: { width: 1600, height: 900 } });
  page.on('pageerror', (e) => console.error(`page error: ${e.message}`));
  const t0 = Date.now();
  // the whole capture through the replay socket, held in a ring larger than it: the decode
  // and the level of detail over every event, as this benchmark has always measured them
  await page.goto(`${url}#capture=${name}&replay=1&wire=packed&ring=1000000000`);
  await page.waitForFunction(() => window.troveStats && (window.troveStats.ended || window.troveStats.error), null, { timeout: 900000, polling: 200 });
  const load = (Date.now() - t0) / 1000;
  const s = await page.evaluate(() => ({ ...window.troveStats }));
  if (s.error) throw new Error(`${name}: ${s.error}`);
  // everything in view
  const all = await page.evaluate((n) => {
    window.troveView.fit();
    const out = [], rects = [];
    for (let i = 0; i < n; i++) {
      const t = performance.now();
      const st = window.troveView.draw();
      out.push(performance.now() - t);
      rects.push(st.rects);
    }
    return { ms: out, rects: rects[0] };
  }, FRAMES);
  // zoom in to 1/1000 and out again, panning, one draw per frame
  const zoom = await page.evaluate((n) => {
    const [a, b] = window.troveView.extent(), span = b - a, out = [];
    for (let i = 0; i < n; i++) {
      const f = i < n / 2 ? i / (n / 2) : (n - i) / (n / 2); // 0 -> 1 -> 0
      const w = span * Math.pow(1e-3, f), c = a + span * (0.3 + 0.4 * i / n);
      const t = performance.now();
      window.troveView.setRange(c - w / 2, c + w / 2);
      out.push(performance.now() - t);
    }
    return out;
  }, FRAMES);
  // rAF deltas while the view changes every frame (the page's own loop draws)
  const raf = await page.evaluate((n) => new Promise((resolve) => {
    const [a, b] = window.troveView.extent(), span = b - a, out = [];
    let last = 0, i = 0;
    const tick = (now) => {
      if (last) out.push(now - last);
      last = now;
      const w = span * Math.pow(1e-3, (i % 60) / 60), c = a + span * 0.5;
      window.troveView.setRange(c - w / 2, c + w / 2);
      if (++i < n) requestAnimationFrame(tick); else resolve(out);
    };
    requestAnimationFrame(tick);
  }), FRAMES);
  rows.push({
    name, events: s.events, load,
    decodeMevs: s.events / (s.decodeUs / 1e6) / 1e6, decodeUsBatch: s.decodeUs / s.batches, batches: s.batches,
    allMs: median(all.ms), allP90: p90(all.ms), rects: all.rects,
    zoomMs: median(zoom), zoomP90: p90(zoom), zoomMax: Math.max(...zoom), rafMs: median(raf),
  });
  await page.close();
}
// The decoders alone: each wire file (WIRE_FILES: raw, packed, deflate streams of one
// capture) fetched into the page and decoded frame by frame PASSES times, by web/wire.js as
// the page uses it; the median pass.
const wires = [];
const PASSES = +(process.env.PASSES || 7);
for (const f of (process.env.WIRE_FILES || '').split(' ').filter(Boolean)) {
  const page = await browser.newPage();
  await page.route('**/bench-input', (r) => r.fulfill({ path: f, contentType: 'application/octet-stream' }));
  await page.goto(`${url}#`);
  const r = await page.evaluate(async (passes) => {
    const W = await import('/web/wire.js');
    const u8 = new Uint8Array(await (await fetch('/bench-input')).arrayBuffer());
    const frames = [...W.splitStream(u8)], times = [];
    let events = 0, batches = 0;
    for (let p = 0; p < passes; p++) {
      events = 0; batches = 0;
      const t = performance.now();
      for (const fr of frames) {
        const x = W.decodeFrameSync(fr) || await W.decodeFrame(fr);
        if (x.events) { events += x.count; batches++; }
      }
      times.push(performance.now() - t);
    }
    times.sort((a, b) => a - b);
    return { events, batches, bytes: u8.length, ms: times[times.length >> 1], first: times[0] };
  }, PASSES);
  wires.push({ file: f.split('/').pop(), ...r });
  await page.close();
}
await browser.close();
if (wires.length) {
  console.log(`decoding in the page (web/wire.js, the page's one thread), median of ${PASSES} passes over each file:`);
  console.log('');
  console.log('| file | events | bytes/event | decode M events/s | decode µs/batch |');
  console.log('|---|---:|---:|---:|---:|');
  for (const w of wires) console.log(`| ${w.file} | ${w.events.toLocaleString('en')} | ${(w.bytes / w.events).toFixed(2)} | ${(w.events / w.ms / 1e3).toFixed(1)} | ${(w.ms * 1e3 / w.batches).toFixed(0)} |`);
  console.log('');
}
console.log(`chromium headless, 1600x900, ${FRAMES} frames each; medians (p90) in ms; load and decode: the capture's packed frames replayed at speed=max while the page appends and draws`);
console.log('');
console.log('| capture | events | load s | decode M events/s | decode µs/batch | draw all in view ms (p90) | rects drawn | zoom+pan frame ms (p90, max) | rAF delta ms |');
console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const r of rows)
  console.log(`| ${r.name} | ${r.events.toLocaleString('en')} | ${r.load.toFixed(1)} | ${r.decodeMevs.toFixed(1)} | ${r.decodeUsBatch.toFixed(0)} | ${r.allMs.toFixed(2)} (${r.allP90.toFixed(2)}) | ${r.rects.toLocaleString('en')} | ${r.zoomMs.toFixed(2)} (${r.zoomP90.toFixed(2)}, ${r.zoomMax.toFixed(1)}) | ${r.rafMs.toFixed(1)} |`);
