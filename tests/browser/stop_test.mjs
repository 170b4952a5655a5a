// stop_test.mjs: what the viewer (web/) says when the service stops under a live capture, in
// Debian's chromium, headless, driven by playwright-core (tests/cli/cli_stop.sh runs it). A
// `trove gen --live` producer writes capture `stopped`; once the page has events, the
// service is sent SIGTERM. The service closes the page's WebSocket with 1001 and no
// {"type":"end"}: the stats line must say "service stopped", never "ended", the banner must
// say so, and the events that arrived stay counted. Nothing here is timed.
// usage: node stop_test.mjs TROVE URL SOCKET SERVE_PID
import { spawn } from 'node:child_process';
import { chromium } from 'playwright-core';

const [trove, url, sock, servePid] = process.argv.slice(2);
let pass = 0, failed = 0;
function check(cond, what) {
  if (cond) pass++;
  else { failed++; console.error(`FAIL: ${what}`); }
}

const gen = spawn(trove, ['gen', '--live', 'stopped', '--rate', '20000', '--seconds', '120',
  '--socket', sock, '-q'], { stdio: ['ignore', 'ignore', 'pipe'] });
const genErr = [];
gen.stderr.on('data', (b) => genErr.push(b));
const genDone = new Promise((resolve) => gen.on('close', (code) => resolve(code)));

const browser = await chromium.launch({
  executablePath: process.env.TROVE_CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
const page = await browser.newPage({ viewport: { width: 1280, height: 760 } });
const pageErrors = [];
page.on('pageerror', (e) => pageErrors.push(e.message));
await page.goto(`${url}#capture=stopped`);
const until = (fn) => page.waitForFunction(fn, null, { timeout: 120000, polling: 50 });
await until(() => window.troveStats.events > 0);
process.kill(Number(servePid), 'SIGTERM');
await until(() => window.troveStats.stopped || window.troveStats.ended || window.troveStats.error);
const st = await page.evaluate(() => ({ ...window.troveStats }));
const line = await page.evaluate(() => document.getElementById('stats').textContent);
const banner = await page.evaluate(() => {
  const e = document.getElementById('error');
  return e.hidden ? '' : e.textContent;
});
check(st.stopped === true, `the page knows the service stopped (${JSON.stringify(st)})`);
check(st.ended === false, 'the page was not told the capture ended');
check(st.error === '', `no error (${st.error})`);
check(line.endsWith('· service stopped'), `the stats line says "service stopped": ${line}`);
check(!line.includes('ended'), `the stats line does not say "ended": ${line}`);
check(banner.startsWith('service stopped'), `the banner says "service stopped": ${banner}`);
check(st.events > 0, 'the events that arrived stay counted');
check(pageErrors.length === 0, `no page errors: ${pageErrors.join('; ')}`);
const code = await genDone;
check(code === 3, `trove gen --live exits 3 when the service stops (${code}): ${Buffer.concat(genErr)}`);
await browser.close();
console.log(`${pass} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
