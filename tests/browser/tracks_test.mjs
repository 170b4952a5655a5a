// tracks_test.mjs: the viewer's tracks, flows and counters in Debian's chromium, headless
// (playwright-core), against a real `trove serve` (tests/cli/cli_viewer_tracks.sh starts it
// and imports the captures). What it checks, with counts, orders and equalities only:
//
// - layout, on the sample Chrome trace (capture DOM): the first screen at full zoom-out holds
//   more than three threads; "collapse all" leaves one header per process, in the capture's
//   order (/tracks: sort index, then pid); opening one process (a click on its label) adds
//   its threads in their order and its async tracks as one group row; ▼ moves the first
//   process down a place; the filter narrows to
//   one thread (a name that only that thread's row holds); pinning it (a click on its pin
//   mark) puts it first and alone in the pinned band; with the filter cleared it is there
//   once, on top; a new browser opening the URL (its layout=) and a reload (local storage)
//   draw the same rows; a layout= that is not one gives the default rows; in node, layout=
//   values round-trip and bad ones decode to null;
// - flows, on the same capture: a flow of the capture (/flows) whose start is on one thread
//   and its end on another; clicking the zone at its start selects it and lists that flow
//   out with the other end's time and thread; turning "all flows" on changes the canvas's
//   pixels and turning it off gives back exactly the pixels before; clicking the far end's
//   mark selects the zone there, on the other thread, covering the end's time;
// - counters, on capture CTR (a Chrome JSON with "C" events this script writes: TRACE_OUT):
//   the counter is a row of its own with its least and greatest value on its axis, and the
//   value under the pointer is the last sample at or before the pointer's time, zoomed in
//   (a cell per sample) and zoomed out (many samples a cell: asked of the service).
//
// A screenshot of each state goes to OUT_DIR; no errors in the page's console.
// usage: node tracks_test.mjs write-counters TRACE_OUT
//        node tracks_test.mjs URL DOM CTR OUT_DIR
import { writeFileSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { encodeLayout, decodeLayout } from '../../web/tracks.js';

// The counter capture: thread 10 of process 1 with one zone a millisecond, and counter
// "mem" (series "heap") sampled every 100 µs with values no two alike and not integers.
const SAMPLES = 60, STEP_US = 100;
const value = (i) => ((i * 7919) % 1000) + 0.25;
if (process.argv[2] === 'write-counters') {
  const ev = [{ ph: 'M', name: 'process_name', pid: 1, tid: 0, args: { name: 'counters' } },
    { ph: 'M', name: 'thread_name', pid: 1, tid: 10, args: { name: 'main' } }];
  for (let i = 0; i < SAMPLES * STEP_US / 1000; i++) ev.push({ ph: 'X', name: 'tick', pid: 1, tid: 10, ts: i * 1000, dur: 800 });
  for (let i = 0; i < SAMPLES; i++) ev.push({ ph: 'C', name: 'mem', pid: 1, ts: i * STEP_US, args: { heap: value(i) } });
  writeFileSync(process.argv[3], JSON.stringify({ traceEvents: ev }));
  process.exit(0);
}

const [url, dom, ctr, outDir] = process.argv.slice(2);
let pass = 0, failed = 0;
function check(cond, what) {
  if (cond) pass++;
  else { failed++; console.error(`FAIL: ${what}`); }
}
const get = async (path) => (await fetch(`${url}${path}`)).json();

// ---- layout=, in node: round trips, and what is not a layout is refused, never thrown ----------
{
  const l = { collapsed: [0, 10585], threads: ['10585:10616'], open: [10682], pinned: ['10585:10625', '1:4261412864'], order: [10682, 0],
    filter: 'a~b & c=d #é', touched: true };
  const e = encodeLayout(l);
  check(/^[A-Za-z0-9._~%-]+$/.test(e), `encoded with URL-safe characters only: ${e}`);
  const d = decodeLayout(e);
  check(d && JSON.stringify({ ...d, threadsDiff: undefined }) === JSON.stringify({ ...l, threadsDiff: undefined }), `a layout round-trips: ${JSON.stringify(d)}`);
  const def = new Set(['10585:10616', '10585:10617']);
  const t = decodeLayout(encodeLayout({ ...l, threads: ['10585:10617', '10585:10618'] }, def));
  check(t && JSON.stringify(t.threadsDiff) === JSON.stringify(['10585:10616', '10585:10618']), `threads as a difference from the default: ${t && t.threadsDiff}`);
  check(JSON.stringify(decodeLayout('c1')?.threadsDiff) === '[]', 'no t or T: the default\'s threads');
  for (const bad of ['x1', 'c1.a', 'p1', 'c1~t1:2', 'f%E0%A4%A', 'a-1', '~~q'])
    check(decodeLayout(bad) === null, `"${bad}" is not a layout`);
  check(decodeLayout('') === null, 'an empty layout= is none');
}

const browser = await chromium.launch({
  executablePath: process.env.TROVE_CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
const errors = [];
/** A page in a context of its own (its own local storage), its errors collected. */
async function newPage() {
  const ctx = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await ctx.newPage();
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  return page;
}
/** @param {import('playwright-core').Page} page @param {string} frag */
async function open(page, frag) {
  await page.goto(`${url}#${frag}`);
  await page.waitForFunction(() => window.troveView && window.troveView.frames().overview && window.troveLayout.rows().length > 0,
    null, { timeout: 60000, polling: 100 });
}
/** @param {import('playwright-core').Page} page until the frames the view wants have come */
async function settle(page) {
  await page.waitForFunction(() => { const f = window.troveView.frames(); return !f.inflight && !f.timer; }, null, { timeout: 30000, polling: 100 });
  await page.waitForTimeout(250); // one more round of asks, if the frame that came asks for another
  await page.waitForFunction(() => { const f = window.troveView.frames(); return !f.inflight && !f.timer; }, null, { timeout: 30000, polling: 100 });
}
const shot = (page, name) => page.screenshot({ path: `${outDir}/${name}.png` });
const rowsOf = (page) => page.evaluate(() => window.troveLayout.rows());
const sig = (rows) => rows.map((r) => `${r.kind}|${r.label}|${r.collapsed}|${r.pinned}|${r.depth}`).join('\n');
/** @param {import('playwright-core').Page} page @returns {Promise<string>} a hash of the canvas's pixels */
const canvasHash = (page) => page.evaluate(() => {
  window.troveView.draw();
  const c = /** @type {HTMLCanvasElement} */ (document.getElementById('timeline'));
  const d = /** @type {CanvasRenderingContext2D} */ (c.getContext('2d')).getImageData(0, 0, c.width, c.height).data;
  let h = 2166136261;
  for (let i = 0; i < d.length; i++) h = Math.imul(h ^ d[i], 16777619);
  return `${h >>> 0}:${d.length}`;
});

// ---- layout -------------------------------------------------------------------------------
const tracks = await get(`api/captures/${dom}/tracks`);
const procOrder = tracks.processes.filter((p) => tracks.tracks.some((t) => t.pid === p.pid))
  .sort((a, b) => a.sort - b.sort || a.pid - b.pid).map((p) => p.pid);
// the process with the most async tracks, and a thread of it whose name only its row holds
const asyncCount = (pid) => tracks.tracks.filter((t) => t.pid === pid && t.kind === 'async').length;
const open1 = [...procOrder].sort((a, b) => asyncCount(b) - asyncCount(a))[0];
const threads1 = tracks.tracks.filter((t) => t.pid === open1 && t.kind === 'thread').sort((a, b) => a.sort - b.sort || a.tid - b.tid);
const holds = (t, f) => `${t.name} ${t.tid}`.toLowerCase().includes(f.toLowerCase());
const procNames = tracks.processes.map((p) => `${p.name} ${p.pid}`.toLowerCase());
const only = (f) => tracks.tracks.filter((x) => holds(x, f)).length === 1 && !procNames.some((n) => n.includes(f.toLowerCase()));
// its name when no other track's or process's holds it, else its tid
const target = threads1.find((t) => t.name && only(t.name)) || threads1.find((t) => only(String(t.tid)));
check(!!target, `a thread of process ${open1} that a filter can single out`);
const filterText = target.name && only(target.name) ? target.name : String(target.tid);
const lp = await newPage();
let page = lp;
await open(page, `capture=${dom}`);
await page.evaluate(() => window.troveView.fit());
await settle(page);
let drawn = await page.evaluate(() => window.troveLayout.drawn());
const firstThreads = drawn.filter((r) => r.kind === 'thread').length;
check(firstThreads > 3, `the first screen at full zoom-out holds more than three threads: ${firstThreads}`);
const defaultRows = await rowsOf(page);
console.log(`first screen (1400 x 900, fit): ${drawn.length} rows, ${firstThreads} of them threads, of ${defaultRows.length} rows laid out`);
check(drawn.every((r) => r.kind !== 'thread' || !r.label.startsWith('async:')), 'no async track is a row of its own at first');
await shot(page, 'tracks-default');

await page.click('#collapse-all');
let rows = await rowsOf(page);
check(rows.length === procOrder.length, `collapse all: ${rows.length} rows, one per process (${procOrder.length})`);
check(rows.every((r) => r.kind === 'proc' && r.collapsed), 'collapse all: headers only, each collapsed');
check(rows.map((r) => r.pid).join() === procOrder.join(), `collapse all: the capture's process order: ${rows.map((r) => r.pid).join()} vs ${procOrder.join()}`);
await shot(page, 'tracks-collapsed');

const at = await page.evaluate((pid) => window.troveLayout.labelPoint(`p:${pid}`), open1);
await page.mouse.click(at[0], at[1]);
rows = await rowsOf(page);
const i1 = rows.findIndex((r) => r.kind === 'proc' && r.pid === open1);
const mine = rows.slice(i1 + 1, i1 + 1 + threads1.length + 1);
check(rows.length === procOrder.length + threads1.length + 1, `one process open: ${rows.length} rows = ${procOrder.length} headers + ${threads1.length} threads + 1 async group`);
check(!rows[i1].collapsed, 'its header is open');
check(mine.slice(0, threads1.length).map((r) => r.key).join() === threads1.map((t) => `${t.pid}:${t.tid}`).join(), 'its threads follow its header in their order');
check(mine[threads1.length] && mine[threads1.length].kind === 'group' && mine[threads1.length].members === asyncCount(open1),
  `then one group of its ${asyncCount(open1)} async tracks`);
await shot(page, 'tracks-one-open');

// the first process moved down a place: the order is part of the layout from here on
const mv = await page.evaluate((pid) => window.troveLayout.movePoint(pid, 1), procOrder[0]);
await page.mouse.click(mv[0], mv[1]);
rows = await rowsOf(page);
const moved = [procOrder[1], procOrder[0], ...procOrder.slice(2)];
check(rows.filter((r) => r.kind === 'proc').map((r) => r.pid).join() === moved.join(), `▼ moves the first process down a place: ${rows.filter((r) => r.kind === 'proc').map((r) => r.pid).join()}`);
procOrder.splice(0, procOrder.length, ...moved);
const key1 = `${target.pid}:${target.tid}`;
await page.fill('#track-filter', filterText);
await page.waitForTimeout(50);
rows = await rowsOf(page);
check(rows.length === 2 && rows[0].kind === 'proc' && rows[0].pid === open1 && rows[1].key === key1,
  `filtered to "${filterText}": its process and it (${rows.map((r) => r.label).join(' | ')})`);
await shot(page, 'tracks-filtered');
const pin = await page.evaluate((k) => window.troveLayout.pinPoint(k), key1);
await page.mouse.click(pin[0], pin[1]);
rows = await rowsOf(page);
check(rows.length === 1 && rows[0].key === key1 && rows[0].pinned, `pinned: it alone, in the pinned band (${rows.map((r) => r.label).join(' | ')})`);
await shot(page, 'tracks-pinned');
await page.fill('#track-filter', '');
await page.waitForTimeout(50);
rows = await rowsOf(page);
check(rows[0].key === key1 && rows[0].pinned && rows.filter((r) => r.key === key1 && r.kind === 'thread').length === 1, 'filter cleared: the pinned thread first, and only there');
check(rows.length === procOrder.length + threads1.length + 1, `filter cleared: ${rows.length} rows, as before the filter`);
check(rows.slice(1).filter((r) => r.kind === 'proc').map((r) => r.pid).join() === procOrder.join(), 'the processes in their order under it');
await shot(page, 'tracks-pinned-all');
const layout = await page.evaluate(() => window.troveLayout.encoded());
const hash = await page.evaluate(() => location.hash);
check(hash.includes(`layout=${layout}`), `the URL holds the layout: ${hash}`);
const want = sig(rows);

const page2 = await newPage(); // no local storage: the URL alone
await open(page2, hash.slice(1));
const diff = (a, b) => { const x = a.split('\n'), y = b.split('\n'); const i = x.findIndex((l, j) => l !== y[j]); return i < 0 ? `${x.length} vs ${y.length} rows` : `row ${i}: ${x[i]} vs ${y[i]}`; };
const got2 = sig(await rowsOf(page2));
check(got2 === want, `a new browser opening the URL draws the same rows (${diff(got2, want)})`);
await shot(page2, 'tracks-restored');
await page2.context().close();
await page.goto(`${url}#capture=${dom}`); // local storage alone
await page.reload();
await page.waitForFunction(() => window.troveView && window.troveView.frames().overview && window.troveLayout.rows().length > 0, null, { timeout: 60000, polling: 100 });
const got3 = sig(await rowsOf(page));
check(got3 === want, `a reload without layout= draws the rows kept in local storage (${diff(got3, want)})`);
// the track list: with everything open (rows far taller than the screen), a thread of the
// last process picked comes on screen
await page.click('#expand-all');
const last = tracks.tracks.filter((t) => t.kind === 'thread' && t.pid === procOrder[procOrder.length - 1]).sort((a, b) => a.sort - b.sort || a.tid - b.tid)[0];
const lastKey = `${last.pid}:${last.tid}`;
check(!(await page.evaluate(() => window.troveLayout.drawn())).some((r) => r.key === lastKey), `${last.name || last.tid} is off screen before`);
await page.selectOption('#track-list', lastKey);
rows = await page.evaluate(() => window.troveLayout.drawn());
check(rows.some((r) => r.key === lastKey), `the track list's ${last.name || last.tid} is on screen after`);
await shot(page, 'tracks-jumped');
await page.click('#expand-all');
rows = await rowsOf(page);
check(rows.filter((r) => r.kind === 'thread').length === tracks.tracks.filter((t) => t.kind !== 'counter').length,
  `expand all: every thread and async track a row (${rows.filter((r) => r.kind === 'thread').length})`);
await page.context().close();

// a layout= that is not one: the default layout, and no error
{
  const bp = await newPage();
  await open(bp, `capture=${dom}&layout=zz~%25%25~p1`);
  const r = await rowsOf(bp);
  check(sig(r) === sig(defaultRows), `a bad layout= is ignored: ${r.length} rows, the default's ${defaultRows.length}`);
  await bp.context().close();
}

// ---- flows --------------------------------------------------------------------------------
const fl = await get(`api/captures/${dom}/flows?limit=10000`);
check(fl.flows > 0 && fl.rows.length === fl.flows, `/flows: every row of the capture (${fl.rows.length} of ${fl.flows})`);
const byId = new Map();
for (const r of fl.rows) { if (!byId.has(r.id)) byId.set(r.id, []); byId.get(r.id).push(r); }
const chain = [...byId.values()].find((c) => c.length === 2 && c[0].phase === 0 && c[1].phase === 2 && c[0].pid === c[1].pid &&
  c[0].tid !== c[1].tid && c[1].ts_ns - c[0].ts_ns > 1e6 && c[1].ts_ns - c[0].ts_ns < 2e7 && c[0].tid < 0xfe000000 && c[1].tid < 0xfe000000);
check(!!chain, 'a flow from one thread to another, 1 to 20 ms later');
const [from, to] = chain;
// a browser of its own (the default layout), with the far end's thread pinned so both ends show
const fp = await newPage();
await open(fp, `capture=${dom}`);
page = fp;
await page.evaluate(([pid, tid]) => window.troveView.scrollTo(pid, tid), [to.pid, to.tid]);
const pinTo = await page.evaluate((k) => window.troveLayout.pinPoint(k), `${to.pid}:${to.tid}`);
await page.mouse.click(pinTo[0], pinTo[1]);
check((await rowsOf(page))[0].key === `${to.pid}:${to.tid}`, 'the far end\'s thread pinned');
const t0 = await page.evaluate((ns) => window.troveView.relNs(ns), String(from.ts_ns));
const t1 = await page.evaluate((ns) => window.troveView.relNs(ns), String(to.ts_ns));
await page.evaluate(([a, b]) => window.troveView.setRange(a - (b - a) * 0.2, b + (b - a) * 0.4), [t0, t1]);
await page.evaluate(([pid, tid]) => window.troveView.scrollTo(pid, tid), [from.pid, from.tid]);
await settle(page);
const z = await page.evaluate(([p, t, at]) => window.troveLayout.zoneAt(p, t, at), [from.pid, from.tid, t0]);
check(!!z, 'the page holds the zone at the flow\'s start');
const pt = await page.evaluate(([t, p, tid, d]) => window.troveView.clientOf(t, p, tid, d), [t0 + 1, from.pid, from.tid, z[0]]);
const before = await canvasHash(page);
await page.mouse.click(pt[0], pt[1]);
await page.waitForFunction(() => window.troveLayout.flowState().answers > 0, null, { timeout: 10000, polling: 50 });
const sel = await page.evaluate(() => window.troveLayout.selected());
check(sel && sel.pid === from.pid && sel.tid === from.tid && sel.depth === z[0], `the zone at the start is selected: ${JSON.stringify(sel)}`);
const flows = await page.evaluate(() => window.troveLayout.flows());
const out = flows.find((f) => f.id === from.id && f.dir === 'out');
check(!!out && out.other.t === t1 && out.other.pid === to.pid && out.other.tid === to.tid,
  `its flows list flow ${from.id} out to ${to.pid}:${to.tid} at ${t1}: ${JSON.stringify(out)}`);
check(flows.every((f) => f.at.pid === from.pid && f.at.tid === from.tid), 'every flow listed starts on the selected zone\'s thread');
// the details panel lists them, one link each
await page.waitForFunction((n) => document.querySelectorAll('#sel-flows a').length === n, flows.length, { timeout: 10000, polling: 50 });
const links = await page.$$eval('#sel-flows a', (as) => as.map((a) => a.textContent));
check(links.filter((t) => t.startsWith('→ to')).length === flows.filter((f) => f.dir === 'out').length,
  `the details list the flows out: ${JSON.stringify(links)}`);
await shot(page, 'flows-selected');
const selected = await canvasHash(page);
check(selected !== before, 'the selection and its arrows change the canvas');
await page.check('#flows-all');
await page.waitForFunction(() => window.troveLayout.flowState().chains > 0, null, { timeout: 10000, polling: 50 });
const all = await canvasHash(page);
check(all !== selected, 'all flows in view: the canvas\'s pixels differ from the selection\'s arrows alone');
await shot(page, 'flows-all');
await page.uncheck('#flows-all');
check(await canvasHash(page) === selected, 'all flows off: exactly the pixels of the selection\'s arrows again');
const ends = await page.evaluate(() => window.troveLayout.flowEnds());
const flowsNow = await page.evaluate(() => window.troveLayout.flows());
const k = flowsNow.findIndex((f) => f.id === from.id && f.dir === 'out');
check(k >= 0 && ends.length === flowsNow.length, `a far-end mark per flow (${ends.length})`);
await page.mouse.click(ends[k][0], ends[k][1]);
await page.waitForFunction(([pid, tid]) => { const s = window.troveLayout.selected(); return s && s.pid === pid && s.tid === tid; },
  [to.pid, to.tid], { timeout: 15000, polling: 50 });
const sel2 = await page.evaluate(() => window.troveLayout.selected());
check(sel2.start <= t1 && t1 <= sel2.start + sel2.dur, `the far end's zone is selected: ${JSON.stringify(sel2)} covers ${t1}`);
const range = await page.evaluate(() => window.troveView.range());
check(range[0] < t1 && t1 < range[1], 'the view shows the far end');
await settle(page);
await shot(page, 'flows-jumped');
// and back: the far end's details list the flow in; its link selects the zone it came from
await page.waitForFunction(() => [...document.querySelectorAll('#sel-flows a')].some((a) => a.textContent.startsWith('← from')), null,
  { timeout: 15000, polling: 50 });
await page.evaluate(() => /** @type {HTMLElement} */ ([...document.querySelectorAll('#sel-flows a')].find((a) => a.textContent.startsWith('← from'))).click());
await page.waitForFunction(([pid, tid]) => { const s = window.troveLayout.selected(); return s && s.pid === pid && s.tid === tid; },
  [from.pid, from.tid], { timeout: 15000, polling: 50 });
const sel3 = await page.evaluate(() => window.troveLayout.selected());
check(sel3.depth === z[0], `the details' flow in jumps back to the zone it left: ${JSON.stringify(sel3)}`);
await page.context().close();

// ---- counters -----------------------------------------------------------------------------
const ct = await get(`api/captures/${ctr}/tracks`);
const ctrack = ct.tracks.find((t) => t.kind === 'counter');
check(!!ctrack, 'the counter capture has a counter track');
const ckey = `${ctrack.pid}:${ctrack.tid}`;
const cp = await newPage();
await open(cp, `capture=${ctr}`);
await cp.evaluate(() => window.troveView.fit());
await settle(cp);
const crow = (await rowsOf(cp)).find((r) => r.kind === 'counter');
const vals = Array.from({ length: SAMPLES }, (_, i) => value(i));
check(!!crow && crow.key === ckey, `the counter is a row of its own (${crow && crow.label})`);
check(crow && crow.lo === Math.min(...vals) && crow.hi === Math.max(...vals), `its axis: ${crow && crow.lo} … ${crow && crow.hi}, the least and greatest value`);
const firstNs = BigInt(ct.first_ns);
/**
 * Hovers the counter row half way between samples i and i + 1 (to the pixel) and returns
 * what the page says is the value there, with the sample the capture holds at the pointer's
 * time (the last at or before it).
 */
async function hoverAt(i) {
  const t = await cp.evaluate((ns) => window.troveView.relNs(ns), String(BigInt(i * STEP_US + STEP_US / 2) * 1000n));
  const p = await cp.evaluate(([t, k]) => window.troveLayout.counterPoint(t, k), [t, ckey]);
  await cp.mouse.move(p[0], p[1]);
  await cp.waitForFunction(() => { const h = window.troveLayout.counterHover(); return h && h.exact; }, null, { timeout: 10000, polling: 50 });
  const h = await cp.evaluate(() => window.troveLayout.counterHover());
  const abs = Number(firstNs) + h.t, j = Math.min(SAMPLES - 1, Math.floor(abs / (STEP_US * 1000)));
  return { h, want: value(j), j };
}
// zoomed in: each sample its own cell
const base = await cp.evaluate(() => window.troveView.extent());
await cp.evaluate(([a, b]) => window.troveView.setRange(a, b), [base[0] - 50e3, base[0] + 20 * STEP_US * 1000]);
await settle(cp);
for (const i of [3, 11, 17]) {
  const { h, want, j } = await hoverAt(i);
  check(j === i && h.value === want && h.count === 1, `zoomed in, between sample ${i} and ${i + 1} (sample ${j} at the pointer): ${h.value}, the capture holds ${want}`);
}
await shot(cp, 'counter-hover-in');
// zoomed out: many samples a pixel, the value asked of the service
await cp.evaluate(([a, b]) => window.troveView.setRange(a - 4e9, b + 4e9), [base[0], base[1]]);
await settle(cp);
for (const i of [20, 41]) {
  const { h, want, j } = await hoverAt(i);
  check(h.value === want && h.count === 1, `zoomed out, near sample ${i} (sample ${j} at the pointer): ${h.value}, the capture holds ${want}`);
}
await shot(cp, 'counter-hover-out');
await cp.context().close();

check(errors.length === 0, `errors in the page: ${errors.join('; ')}`);
await browser.close();
console.log(`${pass} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
