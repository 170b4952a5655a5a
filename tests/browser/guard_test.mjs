// guard_test.mjs: what a page of another site can make the user's browser do to `trove
// serve` (docs/serve.md, "Who may use it"), in Debian's chromium, headless, driven by
// playwright-core. tests/cli/cli_guard.sh runs it; it starts its own services.
//   - a service without a token holding capture "victim" (50,000 events); pages served from
//     another port of 127.0.0.1 and from localhost try to replace it (a POST of a one-event
//     trace as text/plain, as a typeless blob, as application/octet-stream with CORS, and
//     as a multipart form into an iframe) and to delete it (fetch with and without CORS):
//     afterwards the capture is untouched and nothing else was stored;
//   - a service with a token: the same attempts, and logins (fetch, an iframe, a
//     navigation of the top window), before and after the user's own /login — no cookie
//     is set by another site's page, and with the user's cookie present the attempts still
//     change nothing (SameSite=Strict ignores ports: the Origin check holds);
//   - the service's own page, and the user typing /login, still can;
//   - DNS rebinding: a name that resolves to the service (--host-resolver-rules) gets 400.
// usage: node guard_test.mjs TROVE TMPDIR WIRE_FILE ARTIFACT_DIR
import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { chromium } from 'playwright-core';

const [trove, tmp, wire, artifacts] = process.argv.slice(2);
let pass = 0, failed = 0;
function check(cond, what) {
  if (cond) pass++;
  else { failed++; console.error(`FAIL: ${what}`); }
}

// A service on a store of its own with "victim" imported; resolves to { url, proc }.
async function service(name, extra = []) {
  const store = `${tmp}/guard-${name}`;
  mkdirSync(store, { recursive: true });
  const imp = spawnSync(trove, ['import', wire, '--name', 'victim', '--store', store, '-q']);
  if (imp.status !== 0) throw new Error(`import: ${imp.stderr}`);
  const proc = spawn(trove, ['serve', '--store', store, '--listen', '127.0.0.1:0', ...extra],
    { stdio: ['ignore', 'pipe', 'pipe'] });
  const url = await new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (b) => {
      out += b;
      const m = out.match(/listening on (http\S+),/);
      if (m) resolve(m[1]);
    });
    proc.on('exit', (code) => reject(new Error(`serve exited ${code}`)));
  });
  proc.stderr.on('data', () => {});
  return { url, proc, port: new URL(url).port };
}

async function stop(svc) {
  svc.proc.kill('SIGTERM');
  const code = await new Promise((r) => svc.proc.on('exit', r));
  check(code === 0, `the service stopped cleanly (${code})`);
}

// What the service holds, asked as a program would (no Origin, the bearer token).
async function captures(svc, token) {
  const r = await fetch(`${svc.url}api/captures`,
    { headers: token ? { Authorization: `Bearer ${token}` } : {} });
  const list = await r.json();
  return Object.fromEntries(list.map((c) => [c.name, c.events]));
}

// The attacker's pages: /attack.html runs every attempt against ?target= and sets the
// title to "done"; /form.html holds the multipart form it submits into an iframe.
const evil = '{"traceEvents":[{"ph":"X","name":"evil","pid":1,"tid":1,"ts":1,"dur":1}]}';
const attackPage = `<!doctype html><html><body><script>
(async () => {
  const q = new URLSearchParams(location.search);
  const t = q.get('target'), tok = q.get('token') || 'x';
  const log = [];
  async function attempt(what, f) {
    try { const r = await f(); log.push(what + ': ' + r.type + ' ' + r.status); }
    catch (e) { log.push(what + ': ' + e.name); }
  }
  const body = ${JSON.stringify(evil)};
  const imp = t + 'api/captures/import?name=victim';
  await attempt('text/plain', () => fetch(imp, { method: 'POST', mode: 'no-cors', credentials: 'include', body }));
  await attempt('blob', () => fetch(imp, { method: 'POST', mode: 'no-cors', credentials: 'include', body: new Blob([body]) }));
  await attempt('octet-stream', () => fetch(imp, { method: 'POST', credentials: 'include', headers: { 'Content-Type': 'application/octet-stream' }, body }));
  await attempt('x-trove', () => fetch(imp, { method: 'POST', credentials: 'include', headers: { 'X-Trove-Request': '1' }, body }));
  await attempt('delete', () => fetch(t + 'api/captures/victim', { method: 'DELETE', credentials: 'include' }));
  await attempt('delete no-cors', () => fetch(t + 'api/captures/victim', { method: 'DELETE', mode: 'no-cors', credentials: 'include' }));
  await attempt('login', () => fetch(t + 'login?token=' + encodeURIComponent(tok), { mode: 'no-cors', credentials: 'include' }));
  const frame = (src) => new Promise((res) => {
    const f = document.createElement('iframe');
    f.name = 'f' + Math.random();
    f.onload = res; setTimeout(res, 3000);
    if (src) f.src = src;
    document.body.appendChild(f);
    if (!src) {
      const form = document.createElement('form');
      form.method = 'POST'; form.action = imp; form.enctype = 'multipart/form-data'; form.target = f.name;
      const a = document.createElement('textarea'); a.name = 'trace'; a.value = body; form.appendChild(a);
      document.body.appendChild(form); form.submit();
    }
  });
  await frame(null);
  await frame(t + 'login?token=' + encodeURIComponent(tok));
  window.attempts = log;
  document.title = 'done';
})();
</script></body></html>`;
const attacker = createServer((req, res) => {
  res.writeHead(200, { 'Content-Type': 'text/html' });
  res.end(attackPage);
});
await new Promise((r) => attacker.listen(0, '127.0.0.1', r));
const attackPort = attacker.address().port;

const browser = await chromium.launch({
  executablePath: process.env.TROVE_CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage',
    '--host-resolver-rules=MAP rebind.test 127.0.0.1'],
});

// Open the attack page at `origin` against svc, in ctx; the attempts it logged.
async function attack(ctx, origin, svc, token) {
  const page = await ctx.newPage();
  await page.goto(`${origin}/attack.html?target=${encodeURIComponent(svc.url)}&token=${encodeURIComponent(token || '')}`);
  await page.waitForFunction(() => document.title === 'done', null, { timeout: 60000 });
  const log = await page.evaluate(() => window.attempts);
  await page.close();
  return log;
}

const attackers = [`http://127.0.0.1:${attackPort}`, `http://localhost:${attackPort}`];

// ---- a service without a token ----
{
  const svc = await service('open');
  const ctx = await browser.newContext();
  const before = await captures(svc);
  check(before.victim === 50000, `victim has 50000 events (${before.victim})`);
  for (const origin of attackers) {
    const log = await attack(ctx, origin, svc);
    console.log(`${origin}: ${log.join('; ')}`);
    const now = await captures(svc);
    check(JSON.stringify(now) === JSON.stringify(before), `${origin} changed nothing: ${JSON.stringify(now)}`);
  }
  // the service's own page can (the viewer's import: application/octet-stream)
  const own = await ctx.newPage();
  await own.goto(svc.url);
  const st = await own.evaluate(async (body) => (await fetch('/api/captures/import?name=mine', {
    method: 'POST', body, headers: { 'Content-Type': 'application/octet-stream' } })).status, evil);
  check(st === 200, `the service's own page imports (${st})`);
  check((await captures(svc)).mine === 1, 'its import is stored');
  // and so does its page under its other name, localhost
  const own2 = await ctx.newPage();
  await own2.goto(`http://localhost:${svc.port}/`);
  const del = await own2.evaluate(async () => (await fetch('/api/captures/mine', { method: 'DELETE' })).status);
  check(del === 200, `its page at localhost deletes (${del})`);
  // DNS rebinding: a name of the attacker's that resolves to the service
  const rb = await ctx.newPage();
  const resp = await rb.goto(`http://rebind.test:${svc.port}/`);
  check(resp.status() === 400, `a rebinding name gets 400 (${resp.status()})`);
  check((await rb.content()).includes('rebind.test'), 'the answer names the refused Host');
  await rb.screenshot({ path: `${artifacts}/guard-rebinding.png` });
  const api = await rb.evaluate(async () => { try { return (await fetch('/api/captures')).status; } catch (e) { return e.name; } });
  check(api === 400, `and so does its API (${api})`);
  await ctx.close();
  await stop(svc);
}

// ---- a service with a token ----
{
  const token = readFileSync(`${tmp}/token`, 'utf8').trim();
  const svc = await service('token', ['--token-file', `${tmp}/token`]);
  const ctx = await browser.newContext();
  const cookies = async () => (await ctx.cookies(svc.url)).filter((c) => c.name.startsWith('trove_token'));
  const before = await captures(svc, token);
  for (const origin of attackers) {
    const log = await attack(ctx, origin, svc, token); // even knowing the token
    console.log(`${origin} (token, before login): ${log.join('; ')}`);
    check((await cookies()).length === 0, `${origin} could not log the browser in`);
    check(JSON.stringify(await captures(svc, token)) === JSON.stringify(before), `${origin} changed nothing`);
  }
  // the user's own login: typed in the address bar
  const me = await ctx.newPage();
  const r = await me.goto(`${svc.url}login?token=${encodeURIComponent(token)}`);
  check(r.ok(), `the user's login lands on the viewer (${r.status()})`);
  const jar = await cookies();
  check(jar.length === 1 && jar[0].name === `trove_token_${svc.port}` && jar[0].httpOnly &&
        jar[0].sameSite === 'Strict', `the cookie: ${JSON.stringify(jar)}`);
  for (const origin of attackers) {
    const log = await attack(ctx, origin, svc);
    console.log(`${origin} (token, after login): ${log.join('; ')}`);
    check(JSON.stringify(await captures(svc, token)) === JSON.stringify(before), `${origin} changed nothing with the user's cookie`);
  }
  const st = await me.evaluate(async (body) => (await fetch('/api/captures/import?name=mine', {
    method: 'POST', body, headers: { 'Content-Type': 'application/octet-stream' } })).status, evil);
  check(st === 200, `the service's own page imports with the cookie (${st})`);
  await ctx.close();
  await stop(svc);
}

await browser.close();
attacker.close();
console.log(`${pass} passed, ${failed} failed`);
writeFileSync(`${artifacts}/guard-test.txt`, `${pass} passed, ${failed} failed\n`);
process.exit(failed ? 1 : 0);
