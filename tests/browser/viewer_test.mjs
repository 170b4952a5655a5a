// viewer_test.mjs: the viewer (web/) in Debian's chromium, headless, driven by
// playwright-core, against a real `trove serve` (tests/cli/cli_viewer.sh starts it). Every
// check compares counts, names and bytes; none is timed.
//   - raw, packed and deflate: a live capture from a producer; the page's decoded count is
//     the service's and the stats line names the wire;
//   - a viewer joining a live capture mid-way gets every event exactly once: the count and
//     the checksum of (start, dur, name) are what `trove cat --json` gives; one whose ring is
//     small holds at most its bound, exactly the events from its cut on, and draws the rest
//     from view frames;
//   - a known capture, stored, drawn from view frames: hover shows a zone's name and
//     duration, the wheel and keys zoom, a dragged range lists the expected top name (the
//     service's statistics) and sorts, search counts its matches (the service's counts);
//   - a capture of samples (trove-test-hot recorded live): a tick per sample on its thread's
//     row, the top functions table led by the two hot ones with their file, a flame graph; a
//     shift+dragged range shows that range's samples (as many as its ticks), Esc (or a
//     shift+click) the whole capture again; a click on a flame node zooms into it; a capture without samples, and
//     one whose profile is 404, show no panel and no error;
//   - a Chrome JSON file dropped on the page is imported and opened; a bundle downloads;
//   - a corrupt frame (the WebSocket of a replay intercepted in the page) shows an error,
//     and the events of the frames before it are all that is shown;
//   - a screenshot of the timeline is saved and is not blank.
// usage: node viewer_test.mjs TROVE URL STORE SOURCE_DIR ARTIFACT_DIR
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { chromium } from 'playwright-core';

const [trove, url, store, src, artifacts] = process.argv.slice(2);
const sock = `${store}/trove.sock`;
let pass = 0, failed = 0;
function check(cond, what) {
  if (cond) pass++;
  else { failed++; console.error(`FAIL: ${what}`); }
}

function run(args, { stdout = false } = {}) {
  return new Promise((resolve, reject) => {
    const p = spawn(trove, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const out = [], err = [];
    p.stdout.on('data', (b) => out.push(b));
    p.stderr.on('data', (b) => err.push(b));
    p.on('error', reject);
    p.on('close', (code) => {
      if (code !== 0) reject(new Error(`trove ${args.join(' ')}: exit ${code}: ${Buffer.concat(err)}`));
      else resolve(stdout ? Buffer.concat(out).toString() : null);
    });
  });
}

async function info(name) {
  const r = await fetch(`${url}api/captures/${name}`);
  return r.ok ? r.json() : null;
}

// Until the service lists the capture as stored and no longer live.
async function closed(name) {
  for (;;) {
    const i = await info(name);
    if (i && !i.live && i.events > 0) return i;
    await new Promise((r) => setTimeout(r, 100));
  }
}

const browser = await chromium.launch({
  executablePath: process.env.TROVE_CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
const pageErrors = [];
async function openPage(hash, setup) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 760 } });
  page.on('pageerror', (e) => pageErrors.push(`${hash}: ${e.message}`));
  if (setup) await setup(page);
  await page.goto(`${url}#${hash}`);
  return page;
}
const stats = (page) => page.evaluate(() => ({ ...window.troveStats }));
const until = (page, fn, arg) => page.waitForFunction(fn, arg, { timeout: 120000, polling: 50 });

// The checksum of web/wire.js (fnv1a, eventMix), over `trove cat --json` lines.
function imul(a, b) { return Math.imul(a, b); }
function fnv1a(bytes) { let h = 0x811c9dc5; for (const x of bytes) h = imul(h ^ x, 0x01000193); return h >>> 0; }
function mix(sLo, sHi, dLo, dHi, nh) {
  let h = imul(sLo ^ 0x9e3779b9, 0x85ebca6b);
  h ^= sHi; h = imul(h ^ (h >>> 13), 0xc2b2ae35);
  h ^= dLo; h = imul(h ^ (h >>> 16), 0x85ebca6b);
  h ^= dHi; h = imul(h ^ (h >>> 13), 0xc2b2ae35);
  h ^= nh; h = imul(h ^ (h >>> 16), 0x85ebca6b);
  h ^= h >>> 13;
  return h >>> 0;
}
function cliChecksum(text) {
  let n = 0, sum = 0;
  const hashes = new Map();
  for (const line of text.split('\n')) {
    if (!line) continue;
    // start_ns and dur_ns are u64: keep them exact (JSON.parse would round them)
    const start = BigInt(/"start_ns":(\d+)/.exec(line)[1]), dur = BigInt(/"dur_ns":(\d+)/.exec(line)[1]);
    const j = JSON.parse(line);
    const name = j.name !== undefined ? j.name : `#${j.name_id}`;
    let nh = hashes.get(name);
    if (nh === undefined) { nh = fnv1a(new TextEncoder().encode(name)); hashes.set(name, nh); }
    const lo = (x) => Number(x & 0xffffffffn), hi = (x) => Number(x >> 32n);
    sum = (sum + mix(lo(start), hi(start), lo(dur), hi(dur), nh)) >>> 0;
    n++;
  }
  return { n, sum };
}

// ---- each wire: a live capture, counted -------------------------------------------------
for (const wire of ['raw', 'packed', 'deflate']) {
  const name = `w-${wire}`;
  const page = await openPage(`capture=${name}&wire=${wire}`);
  await until(page, () => window.troveStats && window.troveStats.connected);
  await run(['gen', '--live', name, '--rate', '200000', '--seconds', '1', '--socket', sock, '--seed', '3', '-q']);
  await until(page, () => window.troveStats.ended || window.troveStats.error);
  const s = await stats(page), i = await closed(name);
  check(s.error === '', `${wire}: ${s.error}`);
  check(s.wire === wire && s.from === 'start', `${wire}: the hello said ${s.wire} ${s.from}`);
  check(s.events > 0 && s.events === i.events && s.events === s.endEvents, `${wire}: the page decoded ${s.events}, the service has ${i.events}, its end said ${s.endEvents}`);
  check(s.batches > 1, `${wire}: ${s.batches} batches`);
  const line = await page.textContent('#stats');
  check(line.includes(`wire ${wire}`) && line.includes(`events ${i.events.toLocaleString('en')}`), `${wire}: the stats line: ${line}`);
  check(/\d+(\.\d)? B\/event/.test(line) && /decode \d+ µs\/batch/.test(line) && /drops 0 \(0 gaps\)/.test(line), `${wire}: the stats line: ${line}`);
  // the capture list marks what it holds
  await until(page, (n) => [...document.querySelectorAll('#capture-list li')].some((li) => li.dataset.name === n), name);
  await page.close();
}

// ---- joining mid-way: every event exactly once ------------------------------------------
{
  let done = false;
  const producer = run(['gen', '--live', 'join', '--rate', '20000', '--seconds', '12', '--socket', sock, '--seed', '9', '-q']).finally(() => { done = true; });
  for (;;) { // until the service has committed some of it and published more
    const i = await info('join');
    if (i && i.live && i.events >= 20000) break;
    if (done) { check(false, 'join: the capture ended before the viewer could join it'); break; }
    await new Promise((r) => setTimeout(r, 50));
  }
  const page = await openPage('capture=join&checksum=1&wire=packed');
  // and one whose ring holds 20,000 events: what it drops is drawn from view frames
  const small = await openPage('capture=join&wire=packed&ring=20000&from=start');
  await until(page, () => window.troveStats.connected && window.troveStats.events > 0);
  const mid = await stats(page);
  // following: everything so far is in view, up to the live edge
  const edge = await page.evaluate(() => { window.troveView.draw(); return [...window.troveView.range(), ...window.troveView.extent(), document.getElementById('follow').checked]; });
  check(edge[4] && edge[0] <= edge[2] && edge[1] >= edge[3], `join: following, the view ${edge[0]}..${edge[1]} holds ${edge[2]}..${edge[3]}`);
  await producer;
  await until(page, () => window.troveStats.ended || window.troveStats.error);
  const s = await stats(page), i = await closed('join');
  const cli = cliChecksum(await run(['cat', 'store:join', '--store', store, '--json'], { stdout: true }));
  check(mid.from === 'start', `join: from ${mid.from}`);
  check(s.error === '' && s.gaps === 0, `join: ${s.error} ${s.gaps} gaps`);
  check(s.events === cli.n && s.events === i.events, `join: the page has ${s.events} events, trove cat ${cli.n}, the service ${i.events}`);
  check(s.checksum === cli.sum, `join: checksum ${s.checksum} in the page, ${cli.sum} from trove cat`);
  // the small ring: every event came, it holds at most its bound, and the events it holds
  // are exactly those that start at or after its cut (the service counts the others, which
  // the frames draw): none is drawn twice, none missed
  await until(small, () => window.troveStats.ended || window.troveStats.error);
  await until(small, () => { window.troveView.draw(); return window.troveView.frames().overview !== null; });
  const sr = await small.evaluate(() => ({ s: { ...window.troveStats }, f: window.troveView.frames(), cutNs: Number.isFinite(window.troveView.frames().cut) ? window.troveView.absNs(window.troveView.frames().cut) : '0' }));
  const before = await (await fetch(`${url}api/captures/join/stats?to_ns=${sr.cutNs}&limit=1`)).json();
  check(sr.s.error === '' && sr.s.events === cli.n && sr.s.cut, `ring: ${sr.s.events} events came, the cut ${sr.s.cut}: ${sr.s.error}`);
  check(sr.f.ringEvents <= 20000 && sr.f.ringEvents > 0, `ring: ${sr.f.ringEvents} events held`);
  check(sr.f.ringEvents + before.events === cli.n, `ring: ${sr.f.ringEvents} held from the cut on, ${before.events} stored before it, ${cli.n} in all`);
  const sd = await small.evaluate(() => window.troveView.draw());
  check(sd.overview && sd.overview.cells + sd.overview.events > 0, `ring: the frames draw what it dropped: ${JSON.stringify(sd.overview)}`);
  await small.close();
  // the screenshot artifact: the timeline of a real capture, not blank
  await page.evaluate(() => window.troveView.fit());
  const shot = `${artifacts}/viewer-screenshot.png`;
  await page.screenshot({ path: shot });
  const px = await page.evaluate(() => window.troveView.pixels());
  check(px.colours >= 8 && px.inked > px.samples / 50, `screenshot: ${JSON.stringify(px)}`);
  console.log(`screenshot: ${shot} (${px.colours} colours in ${px.samples} samples)`);
  await page.close();
}

// ---- a known capture: hover, zoom, range, search ----------------------------------------
{
  // the golden vectors: names (frame, layout, mark, gc é) and the five events of wire.md
  const known = `${artifacts}/viewer-known.wire`;
  writeFileSync(known, Buffer.concat([readFileSync(`${src}/tests/vectors/wire_names.bin`), readFileSync(`${src}/tests/vectors/wire_packed.bin`)]));
  await run(['record', 'known', '--from', known, '--rate', 'max', '--socket', sock, '-q']);
  await closed('known');
  const page = await openPage('capture=known');
  await until(page, () => window.troveStats.ended || window.troveStats.error);
  const s = await stats(page);
  // a stored capture is drawn from the service's view frames, not replayed
  check(s.events === 5 && s.from === 'view', `known: ${s.events} events from ${s.from}`);
  await until(page, () => window.troveView.frames().overview !== null);
  await page.evaluate(() => window.troveView.fit());
  const z = await page.evaluate(() => window.troveView.zoneOf('frame'));
  check(z && z.dur === 70000 && z.pid === 100 && z.tid === 101, `known: the longest frame ${JSON.stringify(z)}`);
  const [x, y] = await page.evaluate((z) => window.troveView.clientOf(z.start + z.dur / 2, z.pid, z.tid, z.depth), z);
  await page.mouse.move(x, y);
  await until(page, () => !document.getElementById('tooltip').hidden);
  const tip = await page.textContent('#tooltip');
  check(tip.includes('frame') && tip.includes('duration 70 µs') && tip.includes('main'), `hover: ${tip}`);
  // click selects it
  await page.mouse.click(x, y);
  const sel = await page.textContent('#selection');
  check(sel.includes('frame') && sel.includes('70 µs'), `select: ${sel}`);
  // zoom: the wheel around the pointer, then keys
  const r0 = await page.evaluate(() => window.troveView.range());
  await page.mouse.wheel(0, -400);
  await page.waitForFunction((r) => { const q = window.troveView.range(); return q[1] - q[0] < r[1] - r[0]; }, r0, { timeout: 10000 }).catch(() => {});
  const r1 = await page.evaluate(() => window.troveView.range());
  check(r1[1] - r1[0] < r0[1] - r0[0], `wheel zoom: ${r0} -> ${r1}`);
  const keep0 = (z.start + z.dur / 2 - r0[0]) / (r0[1] - r0[0]), keep1 = (z.start + z.dur / 2 - r1[0]) / (r1[1] - r1[0]);
  check(Math.abs(keep0 - keep1) < 0.02, `wheel zoom keeps the pointer's time: ${keep0} ${keep1}`);
  await page.keyboard.press('-');
  const r2 = await page.evaluate(() => window.troveView.range());
  check(r2[1] - r2[0] > r1[1] - r1[0], `key zoom out: ${r1} -> ${r2}`);
  await page.keyboard.press('ArrowRight');
  const r3 = await page.evaluate(() => window.troveView.range());
  check(r3[0] > r2[0] && Math.abs((r3[1] - r3[0]) - (r2[1] - r2[0])) < 1e-6 * (r2[1] - r2[0]), `key pan: ${r2} -> ${r3}`);
  check(!(await page.isChecked('#follow')), 'panning turned follow off');
  // a range over everything: shift+drag
  await page.keyboard.press('0');
  const [ext0, ext1] = await page.evaluate(() => window.troveView.extent());
  const [ax] = await page.evaluate((t) => window.troveView.clientOf(t, 100, 101, 0), ext0 - 500);
  const [bx] = await page.evaluate((t) => window.troveView.clientOf(t, 100, 101, 0), ext1 + 500);
  await page.keyboard.down('Shift');
  await page.mouse.move(ax, y);
  await page.mouse.down();
  await page.mouse.move((ax + bx) / 2, y, { steps: 4 });
  await page.mouse.move(bx, y, { steps: 4 });
  await page.mouse.up();
  await page.keyboard.up('Shift');
  const rows = () => page.$$eval('#range-table tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
  // the rows are the service's statistics of the range: they come a moment later
  await until(page, () => document.querySelectorAll('#range-table tbody tr').length > 0);
  let t = await rows();
  check(t.length === 4 && t[0][0] === 'frame' && t[0][1] === '2' && t[0][2] === '75 µs' && t[0][4] === '70 µs', `range table: ${JSON.stringify(t)}`);
  await page.click('#range-table th[data-key=name]');
  t = await rows();
  check(JSON.stringify(t.map((r) => r[0])) === JSON.stringify(['frame', 'gc é', 'layout', 'mark']), `range sorted by name: ${JSON.stringify(t)}`);
  await page.click('#range-table th[data-key=name]');
  t = await rows();
  check(t[0][0] === 'mark', `range sorted by name, descending: ${JSON.stringify(t)}`);
  // search: a stored capture's counts are the service's (/stats), which come a moment later
  await page.fill('#search', 'lay');
  await until(page, () => document.getElementById('search-count').textContent.includes('1 events'));
  let m = await stats(page);
  check(m.searchMatches === 1, `search 'lay': ${m.searchMatches}`);
  check((await page.textContent('#search-count')).includes('1 events in 1 names'), 'search count shown');
  await page.fill('#search', 'FRAME');
  await until(page, () => document.getElementById('search-count').textContent.includes('2 events'));
  m = await stats(page);
  check(m.searchMatches === 2, `search 'FRAME': ${m.searchMatches}`);
  await page.close();
}

// ---- samples: ticks on their threads' rows, the top functions, a range, a flame zoom ------
{
  const hot = `${dirname(trove)}/trove-test-hot`;
  let recorded = true;
  try {
    await run(['record', 'hotp', '--socket', sock, '-q', '--', hot, '--seconds', '1']);
  } catch (e) {
    if (!/refused by the kernel/.test(e.message)) throw e;
    recorded = false;
    console.log(`note: the samples' checks skipped: ${e.message}`);
  }
  if (recorded) {
    let p = null;
    for (;;) { // until the service has stored it, with its samples
      const i = await info('hotp');
      if (i && !i.live) {
        const r = await fetch(`${url}api/captures/hotp/profile`);
        if (r.ok && (p = await r.json()).samples > 0) break;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    const page = await openPage('capture=hotp');
    await until(page, () => window.troveView.profile() !== null);
    const s = await stats(page);
    check(s.error === '' && s.events === 0 && s.ended, `samples: ${s.events} events, ${s.error}`);
    // a tick per sample (thinned past 20,000) on each sampled thread's row, and drawn
    const ticks = await page.evaluate(() => window.troveView.ticks());
    const want = new Map(p.threads.map((t) => [t.tid, t.samples]));
    check(ticks.length === 2 && ticks.every((t) => want.get(t.tid) === t.samples) &&
      ticks.reduce((a, t) => a + t.ticks, 0) === p.ticks.length && p.ticks.length === Math.min(p.samples, 20000),
      `ticks: ${JSON.stringify(ticks)} for ${JSON.stringify(p.threads)}`);
    const drawn = await page.evaluate(() => window.troveView.draw());
    check(drawn.tickMarks > 0, `tick marks drawn: ${drawn.tickMarks}`);
    // the top functions: the two hot ones first, with their file and line
    const rows = () => page.$$eval('#profile-table tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
    let t = await rows();
    check(t.length === p.top.length && t.length >= 2 && JSON.stringify(t.slice(0, 2).map((r) => r[4]).sort()) === '["hot_alpha","hot_beta"]' &&
      t.slice(0, 2).every((r) => /^sample_hot_work\.c:\d+$/.test(r[5]) && r[6] === 'trove-test-hot'),
      `profile table: ${JSON.stringify(t.slice(0, 3))}`);
    check(t[0][0] === p.top[0].self.toLocaleString('en'), `profile table: self ${t[0][0]}, the service ${p.top[0].self}`);
    let cap = await page.textContent('#profile-caption');
    check(cap.includes(`${p.samples.toLocaleString('en')} samples of 2 threads in the whole capture`), `caption: ${cap}`);
    const flame = () => page.$$eval('#flame .fl', (els) => els.map((e) => [e.textContent, e.style.width]));
    let f = await flame();
    check(f.length >= 4 && f[0][0] === 'all' && f.some((x) => x[0] === 'hot_alpha') && f.some((x) => x[0] === 'hot_beta'), `flame: ${JSON.stringify(f)}`);
    // shift+drag over the first half: that range's samples, as many as its ticks
    const [e0, e1] = await page.evaluate(() => window.troveView.extent());
    const tr = ticks[0];
    const [ax, y] = await page.evaluate(([t, a, b]) => window.troveView.clientOf(t, a, b, 0), [e0 - (e1 - e0) * 0.005, tr.pid, tr.tid]);
    const [bx] = await page.evaluate(([t, a, b]) => window.troveView.clientOf(t, a, b, 0), [(e0 + e1) / 2, tr.pid, tr.tid]);
    await page.keyboard.down('Shift');
    await page.mouse.move(ax, y);
    await page.mouse.down();
    await page.mouse.move((ax + bx) / 2, y, { steps: 4 });
    await page.mouse.move(bx, y, { steps: 4 });
    await page.mouse.up();
    await page.keyboard.up('Shift');
    await until(page, () => document.getElementById('profile-caption').textContent.includes('selected'));
    const sub = await page.evaluate(() => window.troveView.profile());
    const inRange = p.ticks.filter(([, x]) => x >= sub.from_ns && x < sub.to_ns).length;
    check(sub.samples > 0 && sub.samples < p.samples && sub.samples === inRange,
      `range: ${sub.samples} samples in ${sub.from_ns}..${sub.to_ns}, ${inRange} ticks there, ${p.samples} in all`);
    t = await rows();
    check(t.length > 0 && t[0][0] === sub.top[0].self.toLocaleString('en'), `range table: ${JSON.stringify(t.slice(0, 2))}`);
    // Esc: the whole capture again
    await page.keyboard.press('Escape');
    cap = await page.textContent('#profile-caption');
    check(cap.includes('in the whole capture'), `after Esc: ${cap}`);
    // the range again, then a shift+click without a drag: the range goes, and the panel's too
    await page.keyboard.down('Shift');
    await page.mouse.move(ax, y);
    await page.mouse.down();
    await page.mouse.move(bx, y, { steps: 4 });
    await page.mouse.up();
    await page.keyboard.up('Shift');
    await until(page, () => document.getElementById('profile-caption').textContent.includes('selected'));
    await page.keyboard.down('Shift');
    await page.mouse.click(bx, y);
    await page.keyboard.up('Shift');
    cap = await page.textContent('#profile-caption');
    check(cap.includes('in the whole capture'), `after a shift+click: ${cap}`);
    // a click on a frame zooms into it; on the top row, back out
    await page.click('#flame .fl >> text=hot_alpha');
    f = await flame();
    check(f.some((x) => x[0] === 'hot_alpha' && x[1] === '100%') && !f.some((x) => x[0] === 'hot_beta'), `flame zoomed: ${JSON.stringify(f)}`);
    await page.click('#flame .fl >> text=all');
    f = await flame();
    check(f.some((x) => x[0] === 'hot_beta'), `flame zoomed out: ${JSON.stringify(f)}`);
    await page.close();
  }
}

// ---- no samples, no profile: no panel, no error -----------------------------------------
{
  // a capture without samples (200, zero counts), and the endpoint answering 404 (a capture
  // the store does not hold, as a live-only view finds)
  for (const missing of [false, true]) {
    let asked = 0;
    const page = await openPage('capture=known', (pg) => pg.route(/\/api\/captures\/known\/profile/, (r) => {
      asked++;
      if (missing) r.fulfill({ status: 404, contentType: 'application/json', body: '{"error":"no such capture","code":"not_found"}' });
      else r.continue();
    }));
    await until(page, () => window.troveStats.ended || window.troveStats.error);
    for (let i = 0; i < 600 && !asked; i++) await new Promise((r) => setTimeout(r, 50));
    await page.evaluate(() => new Promise((r) => setTimeout(r, 100)));
    const s = await stats(page);
    const ticks = await page.evaluate(() => window.troveView.ticks());
    check(asked === 1 && s.error === '' && s.events === 5 && ticks.length === 0 && await page.isHidden('#profile'),
      `${missing ? '404' : 'no samples'}: asked ${asked}, ${s.events} events, ${ticks.length} ticked threads, error '${s.error}'`);
    await page.close();
  }
}

// ---- drop a Chrome JSON file to import it; download a bundle ------------------------------
{
  const json = readFileSync(`${src}/tests/vectors/chrome_small.json`, 'utf8');
  const want = (await run(['cat', `${src}/tests/vectors/chrome_small.json`], { stdout: true })).split('\n').filter(Boolean).length;
  const page = await openPage('');
  await until(page, () => document.querySelectorAll('#capture-list li').length > 0);
  await page.evaluate((text) => {
    const dt = new DataTransfer();
    dt.items.add(new File([text], 'chrome_small.json', { type: 'application/json' }));
    window.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, json);
  await until(page, () => window.troveStats.capture === 'chrome_small' && (window.troveStats.ended || window.troveStats.error));
  const s = await stats(page);
  check(s.error === '' && s.events === want && want > 0, `drop: ${s.events} events shown, trove cat reads ${want}: ${s.error}`);
  // its counters are series of their own, with their values (the doubles of dur_ns): the
  // view frame's counter cells of each counter's track
  await until(page, () => window.troveView.frames().overview !== null);
  const ctr = await page.evaluate(() => window.troveView.counters());
  check(JSON.stringify(ctr) === JSON.stringify([['cpu', 1, -0.5, -0.5], ['mem', 2, 1024, 2048]]), `drop: counters ${JSON.stringify(ctr)}`);
  const i = await info('chrome_small');
  check(i && i.events === want, `drop: the service stored ${i && i.events}`);
  // the list's download link gives the capture's bundle (a zip)
  const href = await page.getAttribute('#capture-list li[data-name="w-raw"] a', 'href');
  const bytes = await page.evaluate(async (h) => [...new Uint8Array(await (await fetch(h)).arrayBuffer()).slice(0, 4)], href);
  check(href === '/api/captures/w-raw/export?format=bundle' && bytes[0] === 0x50 && bytes[1] === 0x4b, `download: ${href} ${bytes}`);
  await page.close();
}

// ---- a corrupt frame: an error, and nothing of it shown ---------------------------------
for (const [wire, how] of [['packed', 'cut'], ['deflate', 'raw_len'], ['raw', 'count']]) {
  let good = 0, bad = false;
  // (replay=1: a stored capture read through /api/replay, as a live one comes)
  const page = await openPage(`capture=w-packed&wire=${wire}&replay=1`, (p) => p.routeWebSocket(/\/api\/(live|replay)/, (ws) => {
    const server = ws.connectToServer();
    let frames = 0;
    server.onMessage((msg) => {
      if (typeof msg === 'string' || bad) { ws.send(msg); return; }
      const b = Buffer.from(msg);
      if (b[2] !== 4 && ++frames === 3) { // the third event frame is spoilt
        bad = true;
        const c = Buffer.from(b);
        if (how === 'cut') { ws.send(c.subarray(0, c.length - 1)); return; }
        if (how === 'raw_len') c.writeUInt32LE(c.readUInt32LE(12) - 1, 12);
        if (how === 'count') c.writeUInt32LE(c.readUInt32LE(4) + 1, 4);
        ws.send(c);
        return;
      }
      if (b[2] !== 4) good += b.readUInt32LE(4);
      ws.send(b);
    });
  }));
  await until(page, () => window.troveStats.error || window.troveStats.ended);
  const s = await stats(page);
  check(bad && /is bad and was not shown/.test(s.error), `${how}: the error: ${s.error}`);
  check(await page.isVisible('#error'), `${how}: the error is shown`);
  check(s.events === good && good > 0, `${how}: ${s.events} events shown, ${good} in the good frames before`);
  const shown = await page.textContent('#error');
  check(shown.includes(how === 'cut' ? 'TRUNCATED' : how === 'raw_len' ? 'BOMB' : 'CORRUPT'), `${how}: ${shown}`);
  await page.close();
}

check(pageErrors.length === 0, `errors in the page: ${pageErrors.join('; ')}`);
await browser.close();
console.log(`${pass} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
