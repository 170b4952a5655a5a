// compare_test.mjs: the compare view (#compare=A,B) in Debian's chromium, headless
// (playwright-core), against a real `trove serve` holding two captures
// (tests/cli/cli_viewer_compare.sh makes them and the CLI's diff). What is checked, each
// against an answer had outside the page:
//   - the table: its rows are the names of `trove diff A B --json` in its order, and each
//     shown count, total, p50 and p99 of A and B is the JSON's value (data-value) and its
//     text the viewer's formatting of it (fmtDur, counts with thousands' commas); the ratios
//     are fmtRatio of the JSON's, the marks say significant slower/faster, new and gone;
//   - a click on the slowed name's row draws both histograms: each series' bar counts are
//     its /stats?name= answer's hist gathered into the bars' bounds, and they sum to its count;
//   - both timelines draw: rows of both captures laid out and on screen, frames asked for
//     and held; a wheel zoom over either, and a key, change both ranges identically (B's is
//     A's plus the offset, spans equal);
//   - the align toggle, on a name whose first instances are at different times: the offset
//     equals the difference of the first instances' times from each capture's start
//     (/events?name=&limit=1 and /tracks), B's range moves by it and A's stays; unticked,
//     B is back at A's range;
//   - the fragment keeps compare=, name= and align=: a reload shows the same;
//   - × close compare gives the normal view back; a capture the service does not have says
//     the service's 404 error text;
//   - no console errors (but the 404 of the missing capture's requests, on purpose).
//   - "colour only NAME" greys every other name in both timelines, and unticked gives them back;
// Screenshots: OUT_DIR/compare-all.png (table, histograms, timelines), compare-only.png, compare-aligned.png,
// compare-dark.png, compare-missing.png.
// usage: node compare_test.mjs URL A B DIFF_JSON SLOWED_NAME OUT_DIR
import { readFileSync } from 'node:fs';
import { chromium } from 'playwright-core';

const [url, A, B, diffPath, slowed, outDir] = process.argv.slice(2);
let pass = 0, failed = 0;
function check(cond, what) {
  if (cond) pass++;
  else { failed++; console.error(`FAIL: ${what}`); }
}
const get = async (path) => {
  const r = await fetch(`${url}${path.slice(1)}`);
  return { status: r.status, body: await r.json() };
};
const diff = JSON.parse(readFileSync(diffPath, 'utf8'));

const browser = await chromium.launch({
  executablePath: process.env.TROVE_CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
const errors = [];
let missingPhase = false;
const page = await browser.newPage({ viewport: { width: 1400, height: 900 }, colorScheme: 'light' });
page.on('pageerror', (e) => errors.push(e.message));
page.on('console', (m) => {
  if (m.type() !== 'error') return;
  if (missingPhase && /status of 404/.test(m.text())) return; // the missing capture's, on purpose
  errors.push(m.text());
});
const state = () => page.evaluate(() => window.troveCompare.state());
const ready = () => page.waitForFunction(() => {
  const s = window.troveCompare && window.troveCompare.state();
  return s && s.active && s.diff && s.a && s.b && s.a.ready && s.b.ready && s.a.overview && s.b.overview;
}, null, { timeout: 60000, polling: 100 });

try {
  await page.goto(`${url}#compare=${A},${B}`);
  await ready();

  // ---- the table ----
  const names = await page.$$eval('#cmp-table tr.cmp-row', (rs) => rs.map((r) => r.dataset.name));
  check(names.length === Math.min(2000, diff.rows.length) && names.every((n, i) => n === diff.rows[i].name),
    `the table's names are trove diff's in its order (${names.length} rows, ${diff.rows.length} in the JSON; 2,000 at most)`);
  const shown = await page.$$eval('#cmp-table tr.cmp-row', (rs) => rs.map((r) => {
    const o = {};
    for (const td of r.querySelectorAll('td[data-key]')) o[td.dataset.key] = { text: td.textContent, value: td.dataset.value };
    return o;
  }));
  // the viewer's own formatters, applied to the JSON's values
  const want = await page.evaluate(async (rows) => {
    const { fmtDur } = await import('/web/timeline.js');
    const { fmtRatio } = await import('/web/compare.js');
    return rows.map((r) => {
      const o = {};
      for (const k of ['a', 'b']) {
        const s = r[k];
        o[`${k}.count`] = s ? { text: s.count.toLocaleString('en'), value: String(s.count) } : { text: '–' };
        o[`${k}.total`] = s ? { text: fmtDur(s.total_ns), value: String(s.total_ns) } : { text: '–' };
        o[`${k}.p50`] = s ? { text: fmtDur(s.p50_ns), value: String(s.p50_ns) } : { text: '–' };
        o[`${k}.p99`] = s ? { text: fmtDur(s.p99_ns), value: String(s.p99_ns) } : { text: '–' };
      }
      for (const f of ['count', 'total', 'p50', 'p99']) o[`ratio.${f}`] = { text: fmtRatio(r.ratio ? r.ratio[f] : null) };
      o.change = { text: r.change === 'new' ? 'new' : r.change === 'gone' ? 'gone' : r.significant ? (r.change === 'slower' ? '▲ slower' : r.change === 'faster' ? '▼ faster' : r.change) : '' };
      return o;
    });
  }, diff.rows);
  let cells = 0, bad = 0;
  for (let i = 0; i < Math.min(shown.length, want.length); i++)
    for (const [k, w] of Object.entries(want[i])) {
      cells++;
      const s = shown[i][k];
      if (!s || s.text !== w.text || (w.value !== undefined && s.value !== w.value)) {
        if (bad++ < 5) console.error(`  row ${diff.rows[i].name} ${k}: shown ${JSON.stringify(s)}, want ${JSON.stringify(w)}`);
      }
    }
  check(bad === 0 && cells > 0, `every cell of the table is the JSON's value as the viewer formats it (${cells} cells, ${bad} differ)`);
  const summary = await page.textContent('#cmp-summary');
  check(summary.startsWith(`${diff.rows.length} names · ${diff.significant} changed significantly (${diff.method}, α ${diff.alpha})`),
    `the line above the table says the JSON's counts: ${summary}`);
  const slowedRow = diff.rows.find((r) => r.name === slowed);
  check(!!slowedRow, `${slowed} is a row of trove diff`);

  // ---- both timelines draw ----
  const s0 = await state();
  check(s0.a.rows > 0 && s0.b.rows > 0, `both captures' rows are laid out (${s0.a.rows}, ${s0.b.rows})`);
  check(s0.a.drawnTracks > 0 && s0.b.drawnTracks > 0 && s0.a.rects > 0 && s0.b.rects > 0,
    `both timelines draw rows on screen (${s0.a.drawnTracks}, ${s0.b.drawnTracks} tracks; ${s0.a.rects}, ${s0.b.rects} rectangles)`);
  check(s0.a.range[0] === s0.b.range[0] && s0.a.range[1] === s0.b.range[1], `aligned at the starts, one range: ${s0.a.range} / ${s0.b.range}`);

  // ---- the slowed name: both histograms ----
  await page.click(`#cmp-table tr.cmp-row[data-name="${slowed}"]`);
  await page.waitForFunction((n) => { const s = window.troveCompare.state(); return s.name === n && s.histReady; }, slowed, { timeout: 30000 });
  const bars = await page.evaluate(() => window.troveCompare.bars());
  const drawn = await page.$$eval('#cmp-hist-plot rect', (rs) => rs.map((r) => ({ s: r.dataset.series, i: Number(r.dataset.i), count: Number(r.dataset.count) })));
  for (const [k, cap] of [['a', A], ['b', B]]) {
    const st = (await get(`/api/captures/${cap}/stats?name=${slowed}&limit=1`)).body.rows[0];
    const fromHist = bars.map((b, i) => st.hist.filter(([v]) => (i === 0 || v >= b.lo) && (i === bars.length - 1 || v <= b.hi)).reduce((n, [, c]) => n + c, 0));
    const series = bars.map((b) => b[k]);
    check(series.every((c, i) => c === fromHist[i]), `${cap}'s bars are its /stats hist in their bounds: ${series.join(',')} vs ${fromHist.join(',')}`);
    check(series.reduce((x, y) => x + y, 0) === st.count, `${cap}'s bars sum to its count ${st.count}`);
    const rects = drawn.filter((d) => d.s === k).sort((x, y) => x.i - y.i).map((d) => d.count);
    check(rects.length === bars.length && rects.every((c, i) => c === series[i]), `${cap}'s series is drawn, a rect a bar`);
  }
  await page.waitForTimeout(300);
  await page.screenshot({ path: `${outDir}/compare-all.png` });
  // colour only the selected name: both timelines grey the others, and give them back
  await page.check('#cmp-only');
  let co = await state();
  check(JSON.stringify(co.a.coloured) === JSON.stringify([slowed]) && JSON.stringify(co.b.coloured) === JSON.stringify([slowed]),
    `colour only ${slowed}: ${JSON.stringify(co.a.coloured)}, ${JSON.stringify(co.b.coloured)}`);
  await page.screenshot({ path: `${outDir}/compare-only.png` });
  await page.uncheck('#cmp-only');
  co = await state();
  check(co.a.coloured === null && co.b.coloured === null, 'unticked: every name in colour');

  // ---- zoom: both ranges move alike ----
  const before = await state();
  for (const side of ['a', 'b']) {
    const box = await page.locator(`#cmp-canvas-${side}`).boundingBox();
    const prev = await state();
    await page.mouse.move(box.x + box.width * 0.6, box.y + box.height * 0.5);
    await page.mouse.wheel(0, -400);
    await page.waitForFunction((r) => { const s = window.troveCompare.state(); return s.a.range[0] !== r[0] || s.a.range[1] !== r[1]; }, prev.a.range, { timeout: 10000 });
    await page.waitForTimeout(200);
    const s = await state();
    const spanA = s.a.range[1] - s.a.range[0], spanB = s.b.range[1] - s.b.range[0];
    check(spanA < prev.a.range[1] - prev.a.range[0], `a wheel over ${side} zooms in (${spanA})`);
    check(s.b.range[0] === s.a.range[0] + s.offset && s.b.range[1] === s.a.range[1] + s.offset && Math.abs(spanA - spanB) <= 1e-9 * spanA,
      `zoomed over ${side}, both ranges alike: A ${s.a.range}, B ${s.b.range}, offset ${s.offset}`);
  }
  // a key pans both (each timeline takes it; the one under the pointer leads)
  {
    const prev = await state();
    await page.keyboard.press('d');
    await page.waitForFunction((r) => window.troveCompare.state().a.range[0] !== r[0], prev.a.range, { timeout: 10000 });
    await page.waitForTimeout(200);
    const s = await state();
    check(s.a.range[0] > prev.a.range[0] && s.b.range[0] === s.a.range[0] + s.offset && s.b.range[1] === s.a.range[1] + s.offset,
      `d pans both alike: A ${s.a.range}, B ${s.b.range}`);
  }
  // the zoomed view's frames are asked for and drawn on both sides
  await page.waitForFunction(() => { const s = window.troveCompare.state(); return s.a.primary && s.b.primary; }, null, { timeout: 30000 });
  check(true, 'both timelines draw a frame of the zoomed range');
  check(before.offset === 0, 'aligned at the starts: no offset');

  // ---- align at the first instance ----
  // of a name whose first instance is not at the same time in both (the slowed name's first
  // one may be where the captures have not parted yet): the rarest names are tried first
  const firstNs = {};
  for (const cap of [A, B]) firstNs[cap] = (await get(`/api/captures/${cap}/tracks`)).body.first_ns;
  const first = async (cap, name) => {
    const ev = (await get(`/api/captures/${cap}/events?name=${encodeURIComponent(name)}&limit=1`)).body.events[0];
    return ev.start_ns - firstNs[cap];
  };
  let alignName = '', fa = 0, fb = 0;
  for (const r of diff.rows.filter((x) => x.a && x.b).sort((x, y) => x.a.count - y.a.count).slice(0, 20)) {
    [fa, fb] = [await first(A, r.name), await first(B, r.name)];
    if (fa !== fb) { alignName = r.name; break; }
  }
  check(alignName !== '', `a name whose first instances differ (${alignName}: ${fa} and ${fb} ns from the starts)`);
  await page.click(`#cmp-table tr.cmp-row[data-name="${alignName}"]`);
  await page.waitForFunction((n) => { const s = window.troveCompare.state(); return s.name === n && s.histReady; }, alignName, { timeout: 30000 });
  const beforeAlign = await state();
  await page.check('#cmp-align');
  await page.waitForFunction(() => window.troveCompare.state().align, null, { timeout: 10000 });
  const al = await state();
  check(al.offset === fb - fa && al.offset !== 0, `the offset is the first ${alignName}'s start in B less A's, each from its capture's start: ${al.offset} vs ${fb - fa}`);
  check(beforeAlign.b.range[0] + al.offset === al.b.range[0], `B's range moved by the offset: ${beforeAlign.b.range[0]} to ${al.b.range[0]}`);
  check(al.a.range[0] === beforeAlign.a.range[0] && al.a.range[1] === beforeAlign.a.range[1], 'aligning keeps A where it was');
  check(al.b.range[0] === al.a.range[0] + al.offset && al.b.range[1] === al.a.range[1] + al.offset,
    `B moves by the offset: ${al.b.range} = ${al.a.range} + ${al.offset}`);
  await page.waitForTimeout(400);
  await page.screenshot({ path: `${outDir}/compare-aligned.png` });

  // ---- the fragment survives a reload ----
  await page.waitForFunction(() => location.hash.includes('align=first'), null, { timeout: 5000 });
  const hash = await page.evaluate(() => location.hash);
  check(hash === `#compare=${A},${B}&name=${alignName}&align=first`, `the fragment says the view: ${hash}`);
  await page.reload();
  await ready();
  await page.waitForFunction(() => { const s = window.troveCompare.state(); return s.histReady && s.align; }, null, { timeout: 30000 });
  const re = await state();
  check(re.name === alignName && re.align && re.offset === al.offset, `a reload shows the same name, aligned, offset ${re.offset}`);
  check((await page.$$('#cmp-table tr.cmp-row.on')).length === 1, 'the selected row is marked after the reload');
  await page.uncheck('#cmp-align');
  await page.waitForFunction(() => !window.troveCompare.state().align, null, { timeout: 10000 });
  const un = await state();
  check(un.offset === 0 && un.b.range[0] === un.a.range[0] && un.b.range[1] === un.a.range[1], 'unticked: B is back at A\'s range');

  // ---- dark ----
  await page.check('#cmp-align');
  // a pixel at the bottom left of each canvas (gutter or background): light, then dark
  const corner = () => page.evaluate(() => ['a', 'b'].map((k) => {
    const c = document.getElementById(`cmp-canvas-${k}`);
    const d = c.getContext('2d').getImageData(2, c.height - 3, 1, 1).data;
    return (d[0] + d[1] + d[2]) / 3;
  }));
  const light = await corner();
  await page.click('#theme');
  await page.waitForTimeout(400);
  const dark = await corner();
  check(light.every((v) => v > 200) && dark.every((v) => v < 60), `both timelines follow the theme: light ${light}, dark ${dark}`);
  await page.screenshot({ path: `${outDir}/compare-dark.png` });
  await page.click('#theme');

  // ---- leaving ----
  await page.click('#cmp-leave');
  await page.waitForFunction(() => !window.troveCompare.state().active, null, { timeout: 10000 });
  check(await page.isVisible('#timeline') && await page.isHidden('#compare'), 'closing gives the normal view back');
  check(!(await page.evaluate(() => location.hash)).includes('compare'), 'and the fragment no longer says compare');

  // ---- a missing capture ----
  missingPhase = true;
  const miss = await get('/api/captures/nosuch/tracks');
  check(miss.status === 404 && miss.body.error, `the service's 404 for a missing capture: ${JSON.stringify(miss.body)}`);
  await page.evaluate((a) => { location.hash = `compare=${a},nosuch`; }, A);
  await page.waitForFunction(() => !document.getElementById('cmp-error').hidden, null, { timeout: 30000 });
  await page.waitForFunction(() => window.troveCompare.state().diffError !== '' || window.troveCompare.state().diff, null, { timeout: 30000 });
  const msg = await page.textContent('#cmp-error');
  check(msg.includes('nosuch') && msg.includes(miss.body.error), `the banner says the service's error: ${msg}`);
  check((await page.textContent('#cmp-msg-b')).includes(miss.body.error), 'and B\'s half says it');
  const ms = await state();
  check(ms.a.ready && ms.a.rows > 0 && !ms.a.error, 'the capture that is there still draws');
  check(ms.diffError.length > 0 && (await page.textContent('#cmp-summary')).includes(ms.diffError), `the table says why it is empty: ${ms.diffError}`);
  await page.screenshot({ path: `${outDir}/compare-missing.png` });
  missingPhase = false;
} catch (e) {
  failed++;
  console.error(`FAIL: ${e.stack || e}`);
  await page.screenshot({ path: `${outDir}/compare-failed.png` }).catch(() => {});
}
check(errors.length === 0, `errors in the page: ${errors.join('; ')}`);
await browser.close();
console.log(`${pass} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
