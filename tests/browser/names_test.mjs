// names_test.mjs: the viewer's rows name threads so they can be told apart, in Debian's
// chromium, headless (playwright-core), against a real `trove serve` (tests/cli/cli_viewer_names.sh
// starts it and records the capture). The capture is the example program's: its process
// (named by the program, trove-example-s), its main thread "main" (one of that name: no tid)
// and two rounds of workers "sorter 0".."sorter 3" (each name twice: "sorter 0 (TID)").
// The rows' labels are compared with the threads `trove export --format chrome-json` names;
// a screenshot of the timeline goes to OUT_DIR/names-screenshot.png.
// usage: node names_test.mjs URL CAPTURE EXPORT_JSON OUT_DIR
import { readFileSync } from 'node:fs';
import { chromium } from 'playwright-core';

const [url, capture, exported, outDir] = process.argv.slice(2);
let pass = 0, failed = 0;
function check(cond, what) {
  if (cond) pass++;
  else { failed++; console.error(`FAIL: ${what}`); }
}

// What the export names: the process, and each thread that has events.
const doc = JSON.parse(readFileSync(exported, 'utf8'));
const ev = Array.isArray(doc) ? doc : doc.traceEvents;
const meta = ev.filter((e) => e.ph === 'M');
const procName = meta.find((e) => e.name === 'process_name').args.name;
const threadName = new Map(meta.filter((e) => e.name === 'thread_name').map((e) => [e.tid, e.args.name]));
const busy = new Set(ev.filter((e) => e.ph !== 'M').map((e) => e.tid).filter((t) => t));
const pid = ev.find((e) => e.ph !== 'M' && e.tid).pid;
const count = new Map();
for (const t of busy) count.set(threadName.get(t), (count.get(threadName.get(t)) || 0) + 1);
const want = new Set([...busy].map((t) => {
  const n = threadName.get(t);
  return !n ? `thread ${t}` : count.get(n) > 1 ? `${n} (${t})` : n;
}));

const browser = await chromium.launch({
  executablePath: process.env.TROVE_CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
const errors = [];
const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
page.on('pageerror', (e) => errors.push(e.message));
await page.goto(`${url}#capture=${capture}`);
await page.waitForFunction(() => window.troveStats && (window.troveStats.ended || window.troveStats.error),
  null, { timeout: 120000, polling: 50 });
await page.evaluate(() => window.troveView.fit());
const labels = await page.evaluate(() => window.troveView.labels());
const got = new Set(labels.slice(1));
check(labels[0] === `${procName} (pid ${pid})`, `the process row: ${labels[0]}`);
check(procName === 'trove-example-s', `the process is named by the program: ${procName}`);
check(got.size === labels.length - 1, `every row's label is its own: ${labels.join(' | ')}`);
for (const w of want) check(got.has(w), `a row "${w}" among ${labels.join(' | ')}`);
check(got.has('main'), 'the main thread is "main", without its tid (no other thread has the name)');
const sorters = labels.filter((l) => /^sorter \d \(\d+\)$/.test(l));
check(sorters.length === 8, `eight "sorter N (TID)" rows: ${sorters.join(' | ')}`);
check(labels.every((l) => !l.startsWith('trove-example-s') || l === labels[0]),
  `no thread carries the executable's name: ${labels.join(' | ')}`);
const shot = `${outDir}/names-screenshot.png`;
await page.screenshot({ path: shot });
console.log(`screenshot: ${shot}; rows: ${labels.join(' | ')}`);
check(errors.length === 0, `errors in the page: ${errors.join('; ')}`);
await browser.close();
console.log(`${pass} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
