// attrs_test.mjs: what a trace carries besides names, in the viewer, in Debian's chromium,
// headless (playwright-core), against a real `trove serve` (tests/cli/cli_viewer_attrs.sh
// starts it with the sample Chrome trace imported and a capture of trove-example-frames
// recorded, and computes what is expected outside the page). What is checked:
//   - the sample trace: searching a name whose events carry args selects the first one, and
//     its details list its category and every arg, equal to the Chrome export's;
//   - the frames capture: the frame graph shows every frame of the main set (its count and
//     those past 16.7 ms equal the service's /frames answer); a click on the slowest bar
//     shows that frame on the timeline; the timeline has the track "frames";
//   - an "update" zone's details list its text and value (examples/frames.c writes the
//     frame's number into both); a message selected lists its text, and hovering it shows
//     the text in the tooltip;
//   - a search no name holds ("over budget") steps through the events whose attribute
//     values hold it, and says so;
//   - no errors in the page.
// Screenshots go to OUT_DIR/attrs-*.png.
// With --live, a live capture instead (`trove gen --live --attrs`): its attrs frames held
// with its events, a search by value among them, a held event's attributes.
// usage: node attrs_test.mjs URL DOM_CAPTURE FRAMES_CAPTURE EXPECT_JSON OUT_DIR
//        node attrs_test.mjs --live URL CAPTURE OUT_DIR
import { readFileSync } from 'node:fs';
import { chromium } from 'playwright-core';

let pass = 0, failed = 0;
function check(cond, what) {
  if (cond) pass++;
  else { failed++; console.error(`FAIL: ${what}`); }
}
if (process.argv[2] === '--live') await live(...process.argv.slice(3));
const [url, dom, game, expectFile, outDir] = process.argv.slice(2);
const want = JSON.parse(readFileSync(expectFile, 'utf8'));

/**
 * The live case: `trove gen --live --attrs` while the page follows it: the attrs frames
 * come with their batches (the stats count their rows); a search no name holds steps through
 * the held events whose values hold it, and the selected one lists its attributes.
 */
async function live(url, capture, outDir) {
  const b = await chromium.launch({
    executablePath: process.env.TROVE_CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  const errs = [];
  const p = await b.newPage({ viewport: { width: 1400, height: 900 } });
  p.on('pageerror', (e) => errs.push(e.message));
  p.on('console', (m) => { if (m.type() === 'error') errs.push(m.text()); });
  await p.goto(`${url}#capture=${capture}`);
  await p.waitForFunction(() => window.troveStats && window.troveStats.attrRows > 2000 && window.troveStats.events > 5000, null, { timeout: 120000, polling: 100 });
  check(!(await p.evaluate(() => window.troveStats.error)), 'the live capture comes');
  await p.fill('#search', 'assets/zone_0/');
  await p.press('#search', 'Enter');
  await p.waitForFunction(() => (document.getElementById('search-count').textContent || '').startsWith('1 · in attribute values'), null, { timeout: 120000 });
  await p.waitForSelector('#selection-attrs', { timeout: 120000 });
  const path = await p.$eval('#selection-attrs td[data-key="attr:path"]', (td) => td.textContent);
  check(/^assets\/zone_0\/\d+\.bin$/.test(path), `the held event's path: ${path}`);
  check((await p.textContent('#sel-name')) === 'zone_0', 'a zone_0 is selected');
  await p.screenshot({ path: `${outDir}/attrs-live.png` });
  check(errs.length === 0, `errors in the page: ${errs.join('; ')}`);
  await b.close();
  console.log(`${pass} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

const browser = await chromium.launch({
  executablePath: process.env.TROVE_CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
const errors = [];
const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
page.on('pageerror', (e) => errors.push(e.message));
page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });

/** The selected event's attributes as the details list them: key -> [scope, text]. */
async function attrs() {
  await page.waitForSelector('#selection-attrs', { timeout: 120000 });
  return page.$$eval('#selection-attrs td.attr-value', (tds) =>
    Object.fromEntries(tds.map((td) => [td.dataset.key.slice(5), [td.dataset.scope, td.textContent]])));
}

/** Search q and step to its first match (Enter). */
async function searchFirst(q) {
  await page.fill('#search', q);
  await page.press('#search', 'Enter');
  await page.waitForFunction(() => (document.getElementById('search-count').textContent || '').startsWith('1 / '), null, { timeout: 120000 });
}

/** @param {string} a @param {string} b equal as text, or as numbers */
const same = (a, b) => a === b || (a !== '' && b !== '' && !Number.isNaN(Number(a)) && Number(a) === Number(b));

// ---- the sample trace: a zone's args and category ----
await page.goto(`${url}#capture=${dom}`);
await page.waitForFunction(() => window.troveStats && window.troveStats.from === 'view', null, { timeout: 60000 });
await searchFirst(want.name);
check((await page.textContent('#sel-name')) === want.name, `the search selects ${want.name}`);
{
  const got = await attrs();
  check(got.cat && got.cat[0] === 'field' && got.cat[1] === want.cat, `its category: ${JSON.stringify(got.cat)} vs ${want.cat}`);
  const keys = Object.keys(want.args);
  check(keys.length > 0, 'the event has args');
  for (const k of keys) check(got[k] && got[k][0] === 'arg' && same(got[k][1], want.args[k]), `arg ${k}: ${JSON.stringify(got[k])} vs ${want.args[k]}`);
  const label = await page.$$eval('#selection-attrs tr td:first-child', (tds) => tds.map((t) => t.textContent));
  check(label[0] === 'category', `the category comes first: ${label.join(', ')}`);
}
await page.screenshot({ path: `${outDir}/attrs-dom-attrs.png` });
check(!(await page.evaluate(() => window.troveFrames.shown())), 'a trace without frame marks has no frame graph');

// ---- the frames capture: the frame graph, a click on a bar ----
await page.goto(`${url}#capture=${game}`);
await page.waitForFunction(() => window.troveFrames && window.troveFrames.shown() && window.troveFrames.state().frames > 0, null, { timeout: 60000 });
const st = await page.evaluate(() => window.troveFrames.state());
check(st.frames === want.set_frames, `the graph's frames: ${st.frames} vs ${want.set_frames}`);
check(st.slow === want.slow, `frames past 16.7 ms: ${st.slow} vs ${want.slow}`);
check((await page.getAttribute('#frames-panel .frame-caption', 'data-frames')) === String(want.set_frames), 'the caption says the count');
const labels = await page.evaluate(() => window.troveView.labels());
check(labels.some((l) => /^frames\b/.test(l)), `a track "frames": ${labels.join(' | ').slice(0, 300)}`);
await page.screenshot({ path: `${outDir}/attrs-frames.png` });
{
  let slowest = 0;
  st.d.forEach((d, i) => { if (d > st.d[slowest]) slowest = i; });
  const at = await page.evaluate((i) => window.troveFrames.barAt(i), slowest);
  check(at !== null, 'the slowest frame has a bar');
  if (at) {
    await page.mouse.click(at[0], at[1]);
    await page.waitForFunction(([s, d]) => { const [a, b] = window.troveView.range(); return a <= s && b >= s + d && b - a < d * 1.5; },
      [st.s[slowest], st.d[slowest]], { timeout: 60000 });
    const [a, b] = await page.evaluate(() => window.troveView.range());
    check(a <= st.s[slowest] && b >= st.s[slowest] + st.d[slowest], `the click shows the frame: [${a}, ${b}] holds ${st.s[slowest]} + ${st.d[slowest]}`);
  }
}
await page.waitForTimeout(500); // its view frames
await page.screenshot({ path: `${outDir}/attrs-frames-zoomed.png` });

// ---- a zone's text and value, a message's text ----
await searchFirst('update');
{
  const got = await attrs();
  check(got.text && got.text[1] === 'frame 0', `the first update's text: ${JSON.stringify(got.text)}`);
  check(got.value && got.value[1] === '0', `its value: ${JSON.stringify(got.value)}`);
}
await page.screenshot({ path: `${outDir}/attrs-game-attrs.png` });
// a 64-bit value past 2^53 shows its exact digits (the example's scene id, 0x123456789abcdef0)
await searchFirst('render');
{
  const got = await attrs();
  check(got.value && got.value[1] === '1311768467463790320', `the first render's 64-bit value: ${JSON.stringify(got.value)}`);
}
await searchFirst('message');
{
  const got = await attrs();
  check(got.log_message && got.log_message[1] === 'checkpoint', `the first message's text: ${JSON.stringify(got.log_message)}`);
  const sel = await page.evaluate(() => window.troveLayout.selected());
  check(sel !== null, 'the message is selected');
  if (sel) {
    // shown wide enough that the instant is its own mark, then hovered
    await page.evaluate(([s]) => window.troveView.setRange(s - 2e6, s + 2e6), [sel.start]);
    await page.waitForTimeout(600);
    const pt = await page.evaluate(([s, pid, tid]) => window.troveView.instantOf(s, pid, tid), [sel.start, sel.pid, sel.tid]);
    check(pt !== null, 'the message has a place on its thread');
    if (pt) {
      await page.mouse.move(pt[0], pt[1]);
      await page.waitForFunction(() => (document.querySelector('#tooltip .tip-message')?.textContent || '').includes('checkpoint'), null, { timeout: 60000 })
        .catch(() => {});
      const tip = await page.textContent('#tooltip');
      check(tip.includes('message') && tip.includes('“checkpoint”'), `the tooltip says the message: ${tip}`);
      await page.screenshot({ path: `${outDir}/attrs-message-hover.png` });
    }
  }
}
// ---- a search that no name holds finds the events whose attribute values hold it ----
await page.fill('#search', 'over budget');
await page.press('#search', 'Enter');
await page.waitForFunction(() => (document.getElementById('search-count').textContent || '').startsWith('1 · in attribute values'), null, { timeout: 120000 });
{
  const got = await attrs();
  check(got.log_message && /^frame \d+ over budget: /.test(got.log_message[1]), `the value's event is selected: ${JSON.stringify(got.log_message)}`);
  await page.press('#search', 'Enter');
  await page.waitForFunction(() => (document.getElementById('search-count').textContent || '').startsWith('2 · '), null, { timeout: 120000 });
  await page.screenshot({ path: `${outDir}/attrs-search-value.png` });
}
check(errors.length === 0, `errors in the page: ${errors.join('; ')}`);
await browser.close();
console.log(`${pass} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
