// find_test.mjs: finding and measuring in the viewer, in Debian's chromium, headless
// (playwright-core), against a real `trove serve` holding the sample Chrome trace
// (tests/cli/cli_viewer_find.sh starts it, imports the trace and exports it). What is
// checked, each against an answer computed outside the page:
//   - search "RunTask": Enter steps through the first three events whose names contain it,
//     in time order (their starts are those of a brute-force scan of the export), the count
//     reads "k / N" with N the export's matching events; Shift+Enter steps back;
//   - the selected event's details: its exact start and duration;
//   - the name panel (a click on the selected event's name): count, min, p50, p99 and max
//     equal `trove stats --name RunTask --json`; a click on a histogram bar lists instances
//     whose durations fall in the bar, and a click on one selects it;
//   - a range of a few ms (shift+drag on the timeline): each name's total equals a
//     brute-force clip of the export's events to the range, and so does its count;
//   - no errors in the page (exceptions or console errors).
// Screenshots of each state go to OUT_DIR/find-*.png.
// With --live, a live capture instead (`trove gen --live`, names zone_N): Enter steps
// through the matches among the events the page holds, in time order, each selected.
// usage: node find_test.mjs URL CAPTURE EXPORT_JSON CLI_STATS_JSON OUT_DIR
//        node find_test.mjs --live URL CAPTURE OUT_DIR
import { readFileSync } from 'node:fs';
import { chromium } from 'playwright-core';

let pass = 0, failed = 0;
function check(cond, what) {
  if (cond) pass++;
  else { failed++; console.error(`FAIL: ${what}`); }
}
if (process.argv[2] === '--live') await live(...process.argv.slice(3));
const [url, capture, exported, cliStats, outDir] = process.argv.slice(2);

/**
 * The live case: search "zone_1" while the capture comes; three Enters select three
 * matches in time order, each named with the text, and without an index in the capture
 * (the page's own events); a search with no match says so.
 */
async function live(url, capture, outDir) {
  const browser = await chromium.launch({
    executablePath: process.env.TROVE_CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  const errors = [];
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto(`${url}#capture=${capture}`);
  await page.waitForFunction(() => window.troveStats && window.troveStats.events > 20000, null, { timeout: 120000, polling: 100 });
  const state = await page.evaluate(() => ({ ended: window.troveStats.ended, error: window.troveStats.error }));
  check(!state.ended && !state.error, `the capture is live: ${JSON.stringify(state)}`);
  await page.fill('#search', 'zone_1');
  const starts = [];
  for (let k = 1; k <= 3; k++) {
    await page.press('#search', 'Enter');
    await page.waitForFunction((k) => (document.getElementById('search-count').textContent || '').startsWith(`${k} / `), k, { timeout: 30000 });
    starts.push(Number(await page.getAttribute('#search-count', 'data-start')));
    const nm = await page.textContent('#sel-name');
    check(nm.toLowerCase().includes('zone_1'), `live step ${k} selects a match: ${nm}`);
    check(!(await page.$('#selection-table td[data-key="index"]')), `live step ${k}: no index in the capture claimed`);
  }
  check(starts[0] <= starts[1] && starts[1] <= starts[2] && starts[0] > 0, `live steps in time order: ${starts.join(', ')}`);
  await page.screenshot({ path: `${outDir}/find-live.png` });
  // the details' next and previous step through the selected name's instances the page holds
  const selStart = async () => Number(/\(([\d,]+) ns\)/.exec(await page.textContent('#selection-table td[data-key="start"]'))[1].replace(/,/g, ''));
  const name3 = await page.textContent('#sel-name');
  await page.click('#jump-next');
  await page.waitForFunction((s) => !(document.querySelector('#selection-table td[data-key="start"]')?.textContent || '').includes(`(${s.toLocaleString('en')} ns)`), starts[2], { timeout: 30000 });
  const nextStart = await selStart();
  check(nextStart >= starts[2] && (await page.textContent('#sel-name')) === name3, `live next: ${name3} at ${nextStart} after ${starts[2]}`);
  await page.click('#jump-prev');
  await page.waitForFunction((s) => (document.querySelector('#selection-table td[data-key="start"]')?.textContent || '').includes(`(${s.toLocaleString('en')} ns)`), starts[2], { timeout: 30000 });
  check((await selStart()) === starts[2], 'live previous: back to the third match');
  await page.fill('#search', 'no such name anywhere');
  await page.press('#search', 'Enter');
  await page.waitForFunction(() => (document.getElementById('search-count').textContent || '').startsWith('no '), null, { timeout: 30000 });
  check((await page.textContent('#search-count')) === 'no no such name anywhere', 'a search without a match says so');
  check(errors.length === 0, `errors in the page: ${errors.join('; ')}`);
  await browser.close();
  console.log(`${pass} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

// The export's events in ns: X spans, b/e async pairs (matched per pid, tid, name and id),
// i and n instants.
const doc = JSON.parse(readFileSync(exported, 'utf8'));
const raw = Array.isArray(doc) ? doc : doc.traceEvents;
const events = [];
const open = new Map();
for (const e of raw) {
  const ns = Math.round(e.ts * 1000);
  const track = `${e.pid}:${e.tid}`;
  if (e.ph === 'X') events.push({ name: e.name, start: ns, dur: Math.round((e.dur || 0) * 1000), span: true, track });
  else if (e.ph === 'i' || e.ph === 'I' || e.ph === 'n') events.push({ name: e.name, start: ns, dur: 0, span: false, track });
  else if (e.ph === 'b' || e.ph === 'e') {
    const key = `${e.pid}|${e.tid}|${e.name}|${JSON.stringify(e.id2 ?? e.id)}`;
    if (e.ph === 'b') { if (!open.has(key)) open.set(key, []); open.get(key).push(ns); }
    else { const st = open.get(key); if (st && st.length) { const b = st.pop(); events.push({ name: e.name, start: b, dur: ns - b, span: true, track }); } }
  }
}
const matching = events.filter((e) => e.name.toLowerCase().includes('runtask')).sort((a, b) => a.start - b.start);
const cli = JSON.parse(readFileSync(cliStats, 'utf8')).rows[0];

const browser = await chromium.launch({
  executablePath: process.env.TROVE_CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
const errors = [];
const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
page.on('pageerror', (e) => errors.push(e.message));
page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
await page.goto(`${url}#capture=${capture}`);
await page.waitForFunction(() => window.troveStats && (window.troveStats.ended || window.troveStats.error),
  null, { timeout: 120000, polling: 50 });
check(!(await page.evaluate(() => window.troveStats.error)), 'the capture opened');
await page.evaluate(() => window.troveView.fit());
// a wait that, on timeout, fails the test with a screenshot of how the page was
const waitFor = async (fn, arg, what) => {
  try { await page.waitForFunction(fn, arg, { timeout: 30000, polling: 50 }); return true; } catch {
    await page.screenshot({ path: `${outDir}/find-timeout.png` });
    check(false, `timed out waiting for ${what} (find-timeout.png)`);
    return false;
  }
};
// a screenshot once the view frames that serve the view have come (none asked or awaited)
const shot = async (name) => {
  await waitFor(() => { window.troveView.draw(); const f = window.troveView.frames(); return !f.inflight && !f.timer; }, null, `the view's frames before ${name}`);
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r())));
  await page.screenshot({ path: `${outDir}/find-${name}.png` });
};

// ---- search: Enter steps through the matches in time order --------------------------------
await page.fill('#search', 'RunTask');
await page.waitForFunction(() => /events in \d+ names/.test(document.getElementById('search-count').textContent || ''), null, { timeout: 30000 });
const counted = await page.textContent('#search-count');
check(counted.startsWith(`${matching.length.toLocaleString('en')} events`), `the count: "${counted}", the export has ${matching.length}`);
const starts = [];
for (let k = 1; k <= 3; k++) {
  await page.press('#search', 'Enter');
  await page.waitForFunction((k) => (document.getElementById('search-count').textContent || '').startsWith(`${k} / `), k, { timeout: 30000 });
  const st = Number(await page.getAttribute('#search-count', 'data-start'));
  starts.push(st);
  const text = await page.textContent('#search-count');
  check(text === `${k} / ${matching.length.toLocaleString('en')}`, `step ${k} reads "${text}"`);
  check(st === matching[k - 1].start, `step ${k} starts at ${st}, the export's match ${k} at ${matching[k - 1].start} (${matching[k - 1].name})`);
  // the details say the same start, exactly, and the name
  const det = await page.textContent('#selection-table td[data-key="start"]');
  check(det.includes(`(${st.toLocaleString('en')} ns)`), `the details' start "${det}" holds ${st}`);
  const nm = await page.textContent('#sel-name');
  check(nm === matching[k - 1].name, `the selected name "${nm}" is ${matching[k - 1].name}`);
  // a nested match names the zones around it, innermost first: each one of the export's
  // zones on its track that holds it
  const depth = Number(await page.textContent('#selection-table td[data-key="depth"]'));
  if (depth > 0) {
    const chain = await page.$$eval('#sel-parents a', (as) => as.map((a) => a.textContent));
    const m = matching[k - 1];
    const holds = (n) => events.some((e) => e.track === m.track && e.name === n && e.span && e.start <= m.start && e.start + e.dur >= m.start + m.dur && e !== m);
    check(chain.length === depth && chain.every(holds), `match ${k} at depth ${depth} is inside ${chain.join(' ‹ ')}`);
  }
  if (k === 1) await shot('search');
}
check(starts[0] <= starts[1] && starts[1] <= starts[2], `time order: ${starts.join(', ')}`);
// the view is centred on the selected event
const centred = await page.evaluate(() => { const [t0, t1] = window.troveView.range(); return [t0, t1]; });
const sel3 = starts[2] - Number(await page.evaluate(() => String(window.troveView.baseNs())));
check(centred[0] < sel3 && sel3 < centred[1], `the view [${centred}] holds the third match at ${sel3}`);
await page.press('#search', 'Shift+Enter');
await page.waitForFunction(() => (document.getElementById('search-count').textContent || '').startsWith('2 / '), null, { timeout: 30000 });
check(Number(await page.getAttribute('#search-count', 'data-start')) === starts[1], 'Shift+Enter steps back to the second match');
const dur = await page.textContent('#selection-table td[data-key="duration"]');
const m2 = matching[1];
check(dur.includes(`(${m2.dur.toLocaleString('en')} ns)`), `the duration "${dur}" is exact: ${m2.dur} ns`);

// ---- the name panel of the first match's name (RunTask) -----------------------------------
await page.press('#search', 'Shift+Enter');
await page.waitForFunction(() => (document.getElementById('search-count').textContent || '').startsWith('1 / '), null, { timeout: 30000 });
check((await page.textContent('#sel-name')) === 'RunTask', 'the first match is a RunTask');
await page.click('#sel-name');
await page.waitForSelector('#np-stats td[data-key="count"]', { timeout: 30000 });
const val = async (k) => Number(await page.getAttribute(`#np-stats td[data-key="${k}"]`, 'data-value'));
check((await page.textContent('#np-name')) === 'RunTask', 'the panel is RunTask\'s');
for (const [k, want] of [['count', cli.count], ['total', cli.total_ns], ['min', cli.min_ns], ['p50', cli.p50_ns], ['p90', cli.p90_ns], ['p99', cli.p99_ns], ['max', cli.max_ns]])
  check((await val(k)) === want, `name panel ${k}: ${await val(k)}, trove stats says ${want}`);
const bars = await page.$$eval('#np-hist .np-bar', (bs) => bs.map((b) => Number(b.dataset.count)));
check(bars.length > 5 && bars.reduce((a, b) => a + b, 0) === cli.count, `the histogram's ${bars.length} bars hold ${bars.reduce((a, b) => a + b, 0)} of ${cli.count}`);
await shot('namepanel');
// a bar's instances: the fullest bar
const fullest = bars.indexOf(Math.max(...bars));
await page.click(`#np-hist .np-bar[data-i="${fullest}"]`);
await page.waitForSelector('#np-instances li', { timeout: 30000 });
const listed = await page.$$eval('#np-instances a', (as) => as.map((a) => Number(a.dataset.start)));
const runTasks = events.filter((e) => e.name === 'RunTask');
const byStart = new Map(runTasks.map((e) => [e.start, e]));
check(listed.length > 0 && listed.every((s) => byStart.has(s)), `the bar lists ${listed.length} RunTask instances of the export`);
check(listed.every((s, i) => i === 0 || listed[i - 1] <= s), 'the bar\'s instances are in time order');
await shot('namebar');
await page.click('#np-instances a');
await page.waitForFunction((s) => (document.querySelector('#selection-table td[data-key="start"]')?.textContent || '').includes(`(${s.toLocaleString('en')} ns)`), listed[0], { timeout: 30000 });
check(true, 'a click on an instance selects it');
// slowest
await page.click('#np-slowest');
await page.waitForFunction((d) => (document.querySelector('#selection-table td[data-key="duration"]')?.textContent || '').includes(`(${d.toLocaleString('en')} ns)`), cli.max_ns, { timeout: 30000 });
check(true, '"slowest" selects the longest RunTask');
// the tooltip's times carry the digits the zoom needs: 400 µs of view around the slowest
// RunTask (1.13 s into the capture), its start to within a pixel's time
{
  const base0 = Number(await page.evaluate(() => String(window.troveView.baseNs())));
  const slowest = runTasks.find((e) => e.dur === cli.max_ns);
  const rel = slowest.start - base0, [pid, tid] = slowest.track.split(':').map(Number);
  await page.evaluate(([a, b]) => window.troveView.setRange(a, b), [rel - 2e5, rel + 2e5]);
  await waitFor(() => { window.troveView.draw(); const f = window.troveView.frames(); return !f.inflight && !f.timer; }, null, 'the zoomed frames');
  const [hx, hy] = await page.evaluate(([t, pid, tid]) => window.troveView.clientOf(t, pid, tid, 0), [rel + 1e5, pid, tid]);
  await page.mouse.move(hx, hy);
  await waitFor(() => !document.getElementById('tooltip').hidden, null, 'the tooltip');
  const tip = await page.textContent('#tooltip');
  const m = /start ([\d.]+) (ns|µs|ms|s)/.exec(tip);
  const unit = m ? { ns: 1, µs: 1e3, ms: 1e6, s: 1e9 }[m[2]] : 0;
  const plotW = await page.$eval('#timeline', (c) => c.getBoundingClientRect().width - 160);
  const res = 4e5 / plotW;
  check(m && Math.abs(Number(m[1]) * unit - rel) <= res && m[1].split('.')[1]?.length >= 6,
    `the tooltip "${tip}" gives the start ${rel} ns to within ${res.toFixed(0)} ns`);
  await page.mouse.move(hx, hy + 400);
}

// ---- a range of a few ms: shift+drag, totals against a brute-force clip --------------------
const base = Number(await page.evaluate(() => String(window.troveView.baseNs())));
// a 20 ms view 1.2 s into the capture, and 6 ms of it selected
await page.evaluate(() => window.troveView.setRange(1.2e9, 1.22e9));
const box = await page.$eval('#timeline', (c) => { const r = c.getBoundingClientRect(); return { x: r.x, y: r.y, w: r.width, h: r.height }; });
await page.keyboard.down('Shift');
await page.mouse.move(box.x + 160 + (box.w - 160) * 0.3, box.y + 100);
await page.mouse.down();
await page.mouse.move(box.x + 160 + (box.w - 160) * 0.5, box.y + 110, { steps: 5 });
await page.mouse.move(box.x + 160 + (box.w - 160) * 0.6, box.y + 120, { steps: 5 });
await page.mouse.up();
await page.keyboard.up('Shift');
if (!(await waitFor(() => { const c = document.getElementById('range-caption'); return c && c.dataset.from && document.querySelectorAll('#range-table tbody tr').length > 0; }, null, 'the range table'))) {
  console.error(await page.textContent('#range'));
}
const from = Number(await page.getAttribute('#range-caption', 'data-from')), to = Number(await page.getAttribute('#range-caption', 'data-to'));
check(to - from > 1e6 && to - from < 2e7, `a range of a few ms: ${(to - from) / 1e6} ms from ${from - base} ns`);
const tableRows = () => page.$$eval('#range-table tbody tr', (trs) => trs.map((t) => ({ name: t.dataset.name, total: Number(t.dataset.total), count: Number(t.children[1].textContent.replace(/,/g, '')) })));
// the brute-force clip of the export's events to [from, to), on the given tracks (null: all)
const clip = (tracks) => {
  const want = new Map();
  for (const e of events) {
    if (tracks && !tracks.has(e.track)) continue;
    let d;
    if (e.span && e.dur > 0) { if (e.start >= to || e.start + e.dur <= from) continue; d = Math.min(e.start + e.dur, to) - Math.max(e.start, from); }
    else { if (e.start < from || e.start >= to) continue; d = 0; }
    const w = want.get(e.name) || { total: 0, count: 0 };
    w.total += d; w.count++;
    want.set(e.name, w);
  }
  return want;
};
const compare = (rows, want, what) => {
  let same = 0;
  for (const r of rows) {
    const w = want.get(r.name);
    const ok = w && w.total === r.total && w.count === r.count;
    if (!ok) console.error(`  ${r.name}: page ${r.total} ns in ${r.count}, clip ${w ? w.total : '-'} ns in ${w ? w.count : '-'}`);
    same += ok ? 1 : 0;
  }
  check(rows.length > 0 && same === rows.length, `${what}: ${same} of ${rows.length} names' totals and counts equal the brute-force clip`);
  check(rows.length === Math.min(200, want.size), `${what}: the table has every name: ${rows.length} of ${want.size}`);
};
const rows = await tableRows();
const want = clip(null);
check(rows.length > 5, `the range has names: ${rows.length}`);
compare(rows, want, 'every track');
const maxTotal = Math.max(...rows.map((r) => r.total));
check(maxTotal < 1000 * (to - from), `no total is absurd: the largest ${maxTotal} ns in ${to - from} ns`);
await shot('range');
// the selected thread's only
await page.selectOption('#range-tracks', 'thread');
await waitFor(() => { const c = document.getElementById('range-caption'); return c && c.dataset.tracks && document.querySelectorAll('#range-table tbody tr').length > 0; }, null, 'the thread\'s range table');
const thread = await page.getAttribute('#range-caption', 'data-tracks');
const threadRows = await tableRows();
check(/^\d+:\d+$/.test(thread), `one track asked: ${thread}`);
compare(threadRows, clip(new Set([thread])), `thread ${thread}`);
check(threadRows.every((r) => r.total <= to - from), 'on one thread no name holds more than the range');
await shot('range-thread');
await page.selectOption('#range-tracks', 'all');
await waitFor(() => { const c = document.getElementById('range-caption'); return c && c.dataset.from && !c.dataset.tracks && document.querySelectorAll('#range-table tbody tr').length > 0; }, null, 'every track\'s range table again');
// a row opens the name panel over the range (clipped)
const first = rows[0];
await page.click('#range-table tbody tr');
await page.waitForFunction((n) => document.getElementById('np-name')?.textContent === n && document.querySelector('#np-stats td[data-key="total"]'), first.name, { timeout: 30000 });
check((await val('total')) === first.total, `the range's name panel total ${await val('total')} is the row's ${first.total}`);
await shot('range-namepanel');
// everything at once (docs/viewer-find.png): the range table, RunTask's panel over the whole
// capture with a bar's instances, the slowest RunTask selected
await page.click('#sel-name');
await waitFor(() => document.getElementById('np-name')?.textContent === 'RunTask' && !!document.querySelector('#np-hist .np-bar'), null, 'RunTask\'s panel again');
await page.click(`#np-hist .np-bar[data-i="${fullest}"]`);
await waitFor(() => !!document.querySelector('#np-instances li'), null, 'the bar\'s instances again');
await shot('all');

// a search without a match says so, and a new text starts from its first match again
await page.fill('#search', 'no such name anywhere');
await page.press('#search', 'Enter');
await waitFor(() => (document.getElementById('search-count').textContent || '') === 'no no such name anywhere', null, 'the no-match message');
await page.fill('#search', 'RunTask');
await page.press('#search', 'Enter');
await waitFor(() => (document.getElementById('search-count').textContent || '').startsWith('1 / '), null, 'the first match again');
check(Number(await page.getAttribute('#search-count', 'data-start')) === matching[0].start, 'a new search starts from the first match');

check(errors.length === 0, `errors in the page: ${errors.join('; ')}`);
await browser.close();
console.log(`${pass} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
