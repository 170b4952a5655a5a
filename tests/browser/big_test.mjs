// big_test.mjs: a large stored capture in the viewer, in Debian's chromium, headless
// (playwright-core), against a real `trove serve` (tests/cli/cli_viewer_big.sh makes the
// capture with `trove gen` and starts the service). The page must draw it from the
// service's view frames and hold a bounded window of it, whatever its size:
//   - it opens with the capture's event count from its tracks, the whole timeline drawn
//     from the overview frame (not blank);
//   - zoomed to a range, the frame that serves it is the one the service answers for its
//     url (the test asks the same url and compares the headers), and the events and cells
//     the page drew in view are those of that answer in view, counted here from its bytes;
//   - zoomed to the slowest instance of the busiest name (/events): the event is drawn
//     whole, and a click on it selects it with its index in the capture and its name;
//     "slowest ›" shows the same one, "next ›" the next one by start;
//   - panning across the capture and zooming back out, the page never holds more than its
//     overview and three frames; its JS heap after a collection (Runtime.getHeapUsage, array
//     buffers included) stays under HEAP_MB, and so do the bytes it says it holds;
//   - screenshots: the whole capture, a zoomed range, the single event.
// usage: node big_test.mjs URL CAPTURE OUT_DIR HEAP_MB SOURCE_DIR
import { readFileSync } from 'node:fs';
import { chromium } from 'playwright-core';

const [url, capture, outDir, heapMb, src] = process.argv.slice(2);
const heapBound = Number(heapMb) * 1e6;
let pass = 0, failed = 0;
function check(cond, what) {
  if (cond) pass++;
  else { failed++; console.error(`FAIL: ${what}`); }
}
// web/view.js in node, to count what an answer holds in view (as view_test.mjs loads it)
try {
  new DecompressionStream('deflate-raw');
} catch {
  const zlib = await import('node:zlib');
  const { Duplex } = await import('node:stream');
  const Native = globalThis.DecompressionStream;
  globalThis.DecompressionStream = class {
    constructor(format) {
      if (format !== 'deflate-raw') return new Native(format);
      const { readable, writable } = Duplex.toWeb(zlib.createInflateRaw());
      this.readable = readable;
      this.writable = writable;
    }
  };
}
const wireUrl = 'data:text/javascript;base64,' + readFileSync(`${src}/web/wire.js`).toString('base64');
const V = await import('data:text/javascript;base64,' + Buffer.from(
  readFileSync(`${src}/web/view.js`, 'utf8').replace("from './wire.js'", `from '${wireUrl}'`)).toString('base64'));

const tracks = await (await fetch(`${url}api/captures/${capture}/tracks`)).json();
const browser = await chromium.launch({
  executablePath: process.env.TROVE_CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
const errors = [];
const page = await browser.newPage({ viewport: { width: 1400, height: 820 } });
page.on('pageerror', (e) => errors.push(e.message));
const cdp = await page.context().newCDPSession(page);
const until = (fn, arg) => page.waitForFunction(fn, arg, { timeout: 120000, polling: 50 });
const frames = () => page.evaluate(() => window.troveView.frames());
// until no ask is waiting or under way, and the view has been drawn since
const settled = async () => {
  await page.waitForTimeout(50);
  await until(() => { window.troveView.draw(); const f = window.troveView.frames(); return !f.timer && !f.inflight; });
  return page.evaluate(() => window.troveView.draw());
};
async function heap() {
  await cdp.send('HeapProfiler.collectGarbage');
  const h = await cdp.send('Runtime.getHeapUsage');
  return { used: h.usedSize, buffers: h.backingStorageSize || 0 };
}
let maxHeld = 0, maxHeap = 0, maxFrames = 0;
async function bounded(what) {
  const f = await frames(), h = await heap();
  const held = f.held + f.ring, frameCount = f.detail.length + (f.overview ? 1 : 0);
  maxHeld = Math.max(maxHeld, held); maxHeap = Math.max(maxHeap, h.used + h.buffers); maxFrames = Math.max(maxFrames, frameCount);
  check(frameCount <= 4, `${what}: ${frameCount} frames held`);
  check(h.used + h.buffers < heapBound, `${what}: a heap of ${((h.used + h.buffers) / 1e6).toFixed(1)} MB (${(h.buffers / 1e6).toFixed(1)} MB of it array buffers), over ${heapMb} MB`);
  check(held < heapBound / 2, `${what}: the page holds ${(held / 1e6).toFixed(1)} MB`);
  console.log(`${what}: ${frameCount} frames, ${(held / 1e6).toFixed(1)} MB held, heap ${(h.used / 1e6).toFixed(1)} MB + ${(h.buffers / 1e6).toFixed(1)} MB of buffers`);
}

// ---- open: the whole capture from its overview --------------------------------------------
await page.goto(`${url}#capture=${capture}`);
await until(() => window.troveStats && (window.troveStats.ended || window.troveStats.error));
await until(() => window.troveView.frames().overview !== null);
let s = await page.evaluate(() => ({ ...window.troveStats }));
check(s.error === '' && s.from === 'view' && s.events === tracks.events, `open: ${s.events} events from ${s.from}, the service has ${tracks.events}: ${s.error}`);
let d = await settled();
check(d.overview && d.overview.cells > 1000 && d.rects > 100, `the whole capture drawn: ${JSON.stringify(d.overview)}, ${d.rects} rectangles`);
const px = await page.evaluate(() => window.troveView.pixels());
check(px.colours >= 8 && px.inked > px.samples / 20, `the whole capture is not blank: ${JSON.stringify(px)}`);
await page.screenshot({ path: `${outDir}/big-whole.png` });
await bounded('open');

// ---- a range: the page's frame is the service's answer, and it draws what is in view ------
const [e0, e1] = await page.evaluate(() => window.troveView.extent());
await page.evaluate(([a, b]) => window.troveView.setRange(a, b), [e0 + (e1 - e0) * 0.4, e0 + (e1 - e0) * 0.402]);
d = await settled();
check(d.primary !== null, 'a zoomed range is served by a frame of its own');
if (d.primary) {
  const f = await frames();
  const held = f.detail.find((x) => x.url === d.primary.url);
  const u8 = new Uint8Array(await (await fetch(`${url}${d.primary.url.slice(1)}`)).arrayBuffer());
  const ans = await V.decodeView(u8);
  check(held && held.events === ans.nevents && held.cells === ans.ncells && held.tracks === ans.tracks.length && held.shift === ans.shift &&
    held.from_ns === ans.fromNs.toString(), `the frame held is the service's answer: ${JSON.stringify(held)} vs ${ans.nevents} events, ${ans.ncells} cells`);
  // what of it is in view on the rows on screen, counted from the answer's bytes
  const [t0, t1] = await page.evaluate(() => window.troveView.range());
  const off = await page.evaluate((ns) => window.troveView.relNs(ns), ans.fromNs.toString());
  const rows = new Set(d.rows);
  let ev = 0, cells = 0;
  for (const t of ans.tracks) {
    if (!rows.has(`${t.pid}:${t.tid}`)) continue;
    for (let i = t.e0; i < t.e0 + t.ne; i++) {
      const a = off + ans.evStart[i];
      if (a <= t1 && a + ans.evDur[i] >= t0) ev++;
    }
    for (let i = t.c0; i < t.c0 + t.nc; i++) {
      const a = off + ans.col0Ns + ans.cCol[i] * ans.cellNs;
      if (a <= t1 && a + ans.cellNs >= t0) cells++;
    }
  }
  check(d.primary.events === ev && d.primary.cells === cells && ev + cells > 0,
    `drawn in view: ${d.primary.events} events and ${d.primary.cells} cells; the answer has ${ev} and ${cells} there`);
  console.log(`range: shift ${ans.shift}, ${ans.nevents} events and ${ans.ncells} cells in the answer, ${ev} and ${cells} in view`);
}
await page.screenshot({ path: `${outDir}/big-range.png` });
await bounded('zoomed');

// ---- one event: the slowest of the busiest name ----------------------------------------------
const top = await (await fetch(`${url}api/captures/${capture}/stats?limit=1`)).json();
const name = top.rows[0].name;
const [slow] = (await (await fetch(`${url}api/captures/${capture}/events?name=${encodeURIComponent(name)}&order=dur_desc&limit=1`)).json()).events;
const rel = await page.evaluate((ns) => window.troveView.relNs(ns), String(slow.start_ns));
await page.evaluate(([a, dur, pid, tid]) => { window.troveView.scrollTo(pid, tid); window.troveView.setRange(a - dur * 0.25, a + dur * 1.25); },
  [rel, slow.dur_ns, slow.pid, slow.tid]);
d = await settled();
const [cx, cy] = await page.evaluate(([t, pid, tid, depth]) => window.troveView.clientOf(t, pid, tid, depth), [rel + slow.dur_ns / 2, slow.pid, slow.tid, slow.depth]);
await page.mouse.click(cx, cy);
let sel = await page.$$eval('#selection-table tr', (trs) => Object.fromEntries(trs.map((tr) => [tr.cells[0].textContent, tr.cells[1].textContent])));
check(sel.name === name && sel.index === String(slow.index), `a click on the slowest ${name} selects it: ${JSON.stringify(sel)}, the service says index ${slow.index}`);
await page.mouse.move(cx, cy + 300);
await page.screenshot({ path: `${outDir}/big-event.png` });
// "next ›": the next instance in time order (by start, then index: one that starts with it
// and comes after it in the capture is next); "slowest ›": it again, from anywhere
const after = (await (await fetch(`${url}api/captures/${capture}/events?name=${encodeURIComponent(name)}&order=start&limit=100&from_ns=${slow.start_ns}`)).json()).events;
const next = after.find((e) => BigInt(e.start_ns) > BigInt(slow.start_ns) || (e.start_ns === slow.start_ns && e.index > slow.index));
await page.click('#jump-next');
const selIndex = (i) => [...document.querySelectorAll('#selection-table tr')].some((tr) => tr.cells[0].textContent === 'index' && tr.cells[1].textContent === i);
await until(selIndex, String(next.index));
sel = await page.$$eval('#selection-table tr', (trs) => Object.fromEntries(trs.map((tr) => [tr.cells[0].textContent, tr.cells[1].textContent])));
check(sel.index === String(next.index), `next: ${JSON.stringify(sel)}, the service's next is ${next.index}`);
await page.evaluate(() => window.troveView.fit());
await page.click('#jump-slowest');
await until(selIndex, String(slow.index));
const r = await page.evaluate(() => window.troveView.range());
check(r[0] <= rel && r[1] >= rel + slow.dur_ns && r[1] - r[0] < slow.dur_ns * 3, `slowest: the view ${r} shows it`);
d = await settled();
await bounded('one event');

// ---- pan across, zoom back out: still bounded ---------------------------------------------
for (let i = 0; i < 6; i++) {
  const q = 0.1 + i * 0.15;
  await page.evaluate(([a, b]) => window.troveView.setRange(a, b), [e0 + (e1 - e0) * q, e0 + (e1 - e0) * (q + 0.01)]);
  await settled();
}
await bounded('panned');
await page.evaluate(() => window.troveView.fit());
d = await settled();
check(d.primary === null || d.overview !== null, 'zoomed out: the overview draws');
await bounded('back out');
console.log(`bounds: at most ${maxFrames} frames, ${(maxHeld / 1e6).toFixed(1)} MB held, a heap of ${(maxHeap / 1e6).toFixed(1)} MB (bound ${heapMb} MB) for ${tracks.events} events`);
check(errors.length === 0, `errors in the page: ${errors.join('; ')}`);
await browser.close();
console.log(`${pass} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
