// app.js: the viewer page. It lists the service's captures (/api/captures), opens one over
// a WebSocket (/api/live?from=start for a live capture: everything so far, then the live
// edge; /api/replay for a stored one), decodes every binary message as one wire frame
// (wire.js) in the order they came (a deflate frame's inflate is awaited before the next),
// feeds the model (model.js) and the timeline (timeline.js), and keeps the stats line.
// Once a capture has come whole (its end), its samples are asked for
// (/api/captures/NAME/profile): ticks on the timeline and the samples panel (profile.js),
// asked again for a range selected on the timeline. A capture without samples, or one the
// store does not hold (404), shows no panel.
// window.troveStats is the stats object itself, for tests and the benchmark.
//
// The URL's fragment says what to open: #capture=NAME[&wire=raw|packed|deflate]
// [&replay=1][&checksum=1] (checksum: also sum eventMix over every event, wire.js).
import { decodeFrameSync, decodeFrame, WireError } from './wire.js';
import { Model } from './model.js';
import { Timeline, fmtDur } from './timeline.js';
import { ProfilePanel } from './profile.js';

const $ = (id) => document.getElementById(id);
const model = new Model();
const stats = {
  capture: '', wire: '', from: '', events: 0, bytes: 0, frames: 0, batches: 0, names: 0,
  gaps: 0, gapEvents: 0, decodeUs: 0, decodeUsPerBatch: 0, ended: false, endEvents: null,
  stopped: false, error: '', checksum: 0, searchMatches: 0, mbps: 0, connected: false,
};
window.troveStats = stats;

const hover = (info, cx, cy) => {
  const tip = $('tooltip');
  if (!info) { tip.hidden = true; return; }
  tip.hidden = false;
  tip.textContent = '';
  const b = document.createElement('b');
  b.textContent = info.name;
  tip.append(b, document.createElement('br'),
    `start ${fmtDur(info.start)} · ${info.lane === 'instant' ? 'instant' : `duration ${fmtDur(info.dur)}`}`,
    document.createElement('br'), `thread ${threadLabel(info.track)}`);
  if (info.merged > 1) tip.append(document.createElement('br'), `(${info.merged.toLocaleString('en')} events within 3 px here: zoom in)`);
  tip.style.left = `${cx + 14}px`;
  tip.style.top = `${cy + 14}px`;
};

function threadLabel(t) {
  const p = model.procs.get(t.pid);
  return `${t.name || t.tid} (${t.pid}:${t.tid})${p && p.name ? ` · ${p.name}` : ''}`;
}

const select = (info) => {
  const el = $('selection');
  el.textContent = '';
  if (!info) { el.textContent = 'click an event to select it; shift+drag a range for its table'; return; }
  const rows = [['name', info.name], ['start', fmtDur(info.start)], ['duration', info.lane === 'instant' ? '(instant)' : fmtDur(info.dur)],
    ['thread', threadLabel(info.track)], ['depth', String(info.depth)]];
  const t = document.createElement('table');
  for (const [k, v] of rows) {
    const tr = t.insertRow();
    tr.insertCell().textContent = k;
    tr.insertCell().textContent = v;
  }
  el.append(t);
};

let rangeRows = null, rangeSort = { key: 'total', desc: true }, rangeSpan = null;
const range = (rows, r0, r1) => {
  rangeRows = rows;
  rangeSpan = rows ? [r0, r1] : null;
  renderRange();
  if (profileWhole) {
    if (rows) loadProfile(stats.capture, session, [r0, r1]);
    else { profileAsk++; panel.show(profileWhole, null); }
  }
};

function renderRange() {
  const el = $('range');
  el.textContent = '';
  if (!rangeRows) return;
  const { key, desc } = rangeSort;
  const rows = [...rangeRows].sort((a, b) => {
    const x = a[key], y = b[key];
    const c = typeof x === 'string' ? x.localeCompare(y) : x - y;
    return desc ? -c : c;
  });
  const cap = document.createElement('div');
  cap.textContent = `${fmtDur(rangeSpan[1] - rangeSpan[0])} selected: ${rows.length} names`;
  const t = document.createElement('table');
  t.id = 'range-table';
  const head = t.createTHead().insertRow();
  for (const k of ['name', 'count', 'total', 'mean', 'max']) {
    const th = document.createElement('th');
    th.textContent = k + (k === key ? (desc ? ' ▼' : ' ▲') : '');
    th.dataset.key = k;
    th.addEventListener('click', () => {
      rangeSort = { key: k, desc: rangeSort.key === k ? !rangeSort.desc : k !== 'name' };
      renderRange();
    });
    head.append(th);
  }
  const body = t.createTBody();
  for (const r of rows.slice(0, 200)) {
    const tr = body.insertRow();
    tr.insertCell().textContent = r.name;
    for (const [v, f] of [[r.count, String], [r.total, fmtDur], [r.mean, fmtDur], [r.max, fmtDur]]) {
      const td = tr.insertCell();
      td.className = 'num';
      td.textContent = f(v);
    }
  }
  el.append(cap, t);
}

// ---- the samples ---------------------------------------------------------------------------

const panel = new ProfilePanel($('profile'));
let profileWhole = null, profileAsk = 0;

// The capture's samples, whole (span null: ticks and the panel) or over span [r0, r1] (the
// panel only). An answer for another capture or an older ask is dropped.
async function loadProfile(name, mine, span) {
  const ask = ++profileAsk;
  let q = '';
  if (span) {
    const b = model.baseNs(), from = Math.max(0, Math.floor(b + span[0]));
    q = `?from_ns=${from}&to_ns=${Math.max(from, Math.ceil(b + span[1]))}`;
  }
  let data = null, why = '';
  try {
    data = await api(`/api/captures/${encodeURIComponent(name)}/profile${q}`);
  } catch (e) {
    why = e.message; // not stored (a live view), or the service is busy: no panel, or the old one
  }
  if (mine !== session || ask !== profileAsk) return;
  if (span) {
    if (data) panel.show(data, span);
    else {
      panel.show(profileWhole, null);
      panel.note(`the selection's samples could not be had (${why}); these are the whole capture's`);
    }
    return;
  }
  if (!data || !data.samples) { panel.hide(); return; }
  profileWhole = data;
  model.applyTicks(data.ticks, data.threads);
  panel.show(data, null);
  if (view.fitted || model.events === 0) view.fit();
  view.invalidate();
}

const view = new Timeline($('timeline'), model, {
  hover, select, range,
  followChanged: (on) => { $('follow').checked = on; },
});

// For tests and the benchmark: where things are, and the timings of the draws.
window.troveView = {
  model,
  range: () => [view.t0, view.t1],
  labels() { view.draw(); return view.rows.map((r) => r.label); }, // the rows' labels, top down
  clientOf(t, pid, tid, depth) {
    const r = $('timeline').getBoundingClientRect();
    view.draw();
    const row = view.rows.find((x) => x.track && x.track.pid === pid && x.track.tid === tid);
    if (!row) return null;
    return [r.left + view.xOf(t), r.top + 24 + row.y - view.scrollY + depth * 16 + 8];
  },
  zoneOf(name) { // the longest zone called name: {start, dur, pid, tid, depth}
    let best = null;
    for (const p of model.procs.values())
      for (const t of p.threads.values())
        for (let d = 0; d < t.zones.length; d++) {
          const l = t.zones[d];
          for (let i = 0; i < l.n; i++)
            if (model.nameOf(l.name[i]) === name && (!best || l.d[i] > best.dur)) best = { start: l.s[i], dur: l.d[i], pid: t.pid, tid: t.tid, depth: d };
        }
    return best;
  },
  draw() { view.draw(); return view.lastStats; },
  drawTimes: () => view.drawTimes.slice(),
  setRange(t0, t1) { view.t0 = t0; view.t1 = t1; view.fitted = false; view.setFollow(false); view.draw(); return view.lastStats; },
  ticks() { // the sample ticks held, per thread: [{pid, tid, ticks, samples}]
    const out = [];
    for (const p of model.procs.values())
      for (const t of p.threads.values()) if (t.ticks) out.push({ pid: t.pid, tid: t.tid, ticks: t.ticks.length, samples: t.samples });
    return out;
  },
  profile: () => panel.data,
  baseNs: () => model.baseNs(),
  fit() { view.fit(); view.draw(); },
  extent: () => [model.minT, model.maxT],
  pixels() { // distinct colours in a sample of the canvas, and how many pixels are not white
    const c = $('timeline'), ctx = c.getContext('2d');
    const d = ctx.getImageData(0, 0, c.width, c.height).data, seen = new Set();
    let inked = 0;
    for (let i = 0; i < d.length; i += 4 * 7) {
      const v = (d[i] << 16) | (d[i + 1] << 8) | d[i + 2];
      seen.add(v);
      if (v !== 0xffffff) inked++;
    }
    return { colours: seen.size, inked, samples: Math.floor(d.length / 28) };
  },
};

// ---- the stats line ----------------------------------------------------------------------

let lastBytes = 0, lastAt = performance.now(), decodeWin = 0, batchesWin = 0;
function renderStats() {
  const now = performance.now(), dt = (now - lastAt) / 1000;
  if (dt >= 0.5) {
    stats.mbps = (stats.bytes - lastBytes) / dt / 1e6;
    lastBytes = stats.bytes; lastAt = now;
    if (batchesWin) stats.decodeUsPerBatch = decodeWin / batchesWin;
    decodeWin = 0; batchesWin = 0;
  }
  const bpe = stats.events ? (stats.bytes / stats.events).toFixed(1) : '–';
  const state = stats.error ? 'error' : stats.stopped ? 'service stopped' : stats.ended ? 'ended'
    : stats.connected ? (stats.from === 'replay' ? 'replaying' : 'live') : 'idle';
  $('stats').textContent = `events ${stats.events.toLocaleString('en')} · ${bpe} B/event · wire ${stats.wire || '–'} · ` +
    `${stats.mbps.toFixed(2)} MB/s · decode ${stats.decodeUsPerBatch.toFixed(0)} µs/batch · ` +
    `drops ${stats.gapEvents.toLocaleString('en')} (${stats.gaps} gaps) · ${state}`;
}
setInterval(renderStats, 250);

function showError(msg) {
  stats.error = msg;
  const e = $('error');
  e.textContent = msg;
  e.hidden = false;
  renderStats();
}

// ---- the connection ----------------------------------------------------------------------

let ws = null, chain = Promise.resolve(), session = 0;

function params() {
  const h = new URLSearchParams(location.hash.slice(1));
  return { capture: h.get('capture') || '', wire: h.get('wire') || '', replay: h.get('replay') === '1', checksum: h.get('checksum') === '1' };
}

function open(name, live) {
  const p = params();
  if (ws) { ws.onmessage = ws.onclose = null; ws.close(); }
  session++;
  const mine = session;
  model.reset();
  model.checksumOn = p.checksum;
  Object.assign(stats, { capture: name, wire: '', from: '', events: 0, bytes: 0, frames: 0, batches: 0, names: 0, gaps: 0, gapEvents: 0,
    decodeUs: 0, decodeUsPerBatch: 0, ended: false, endEvents: null, stopped: false, error: '', checksum: 0,
    connected: false });
  $('error').hidden = true;
  $('title').textContent = name;
  profileWhole = null; profileAsk++; panel.hide();
  view.selected = null; view.range = null; range(null);
  view.setFollow(true);
  chain = Promise.resolve();
  const wire = p.wire ? `&wire=${encodeURIComponent(p.wire)}` : '';
  const path = live ? `/api/live?capture=${encodeURIComponent(name)}&from=start${wire}`
    : `/api/replay?capture=${encodeURIComponent(name)}&speed=max${wire}`;
  ws = new WebSocket(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}${path}`);
  ws.binaryType = 'arraybuffer';
  stats.connected = true;
  ws.onmessage = (m) => {
    chain = chain.then(() => (mine === session && !stats.error ? handle(m.data) : null));
  };
  ws.onclose = (e) => {
    chain = chain.then(() => {
      if (mine !== session) return;
      stats.connected = false;
      if (!stats.ended && !stats.error && e.code === 1001) {
        // The service stopped (SIGTERM): the capture did not end; what arrived stays shown.
        stats.stopped = true;
        const b = $('error');
        b.textContent = 'service stopped: the service stopped before the capture ended; what arrived is shown';
        b.hidden = false;
        view.setFollow(false);
        view.invalidate();
      } else if (!stats.ended && !stats.error && e.code !== 1000)
        showError(e.code === 1006 ? 'the connection to the service was lost (is it running? does it need a token?); what arrived is shown'
          : `the service closed the connection (${e.code} ${e.reason}); what arrived is shown`);
      renderStats();
    });
  };
  markOpen();
}

async function handle(data) {
  if (typeof data === 'string') {
    let msg;
    try { msg = JSON.parse(data); } catch { showError(`a control message that is not JSON: ${data.slice(0, 80)}`); return; }
    if (msg.type === 'hello') { stats.wire = msg.wire; stats.from = msg.from; }
    else if (msg.type === 'gap') { stats.gaps++; stats.gapEvents += msg.events || 0; }
    else if (msg.type === 'end') {
      stats.ended = true;
      stats.endEvents = msg.events;
      // nothing more will come: stop following, and show it all if the user has not zoomed
      const all = view.followAll;
      view.setFollow(false);
      if (all) view.fit();
      view.invalidate();
      loadProfile(stats.capture, session, null);
    } else if (msg.type === 'error') showError(`the service: ${msg.message}`);
    return;
  }
  const u8 = new Uint8Array(data);
  stats.bytes += u8.length;
  stats.frames++;
  const t = performance.now();
  let r;
  try {
    r = decodeFrameSync(u8) || await decodeFrame(u8);
  } catch (e) {
    const what = e instanceof WireError ? e.message : `${e}`;
    showError(`frame ${stats.frames} (${u8.length} bytes) is bad and was not shown: ${what}; the view stops here`);
    if (ws) ws.close();
    return;
  }
  const us = (performance.now() - t) * 1000;
  if (r.names) { model.applyNames(r.names); stats.names += r.count; }
  else {
    stats.decodeUs += us; decodeWin += us; batchesWin++;
    stats.batches++;
    model.append(r.events);
    stats.events = model.events;
    stats.checksum = model.checksum;
  }
  view.invalidate();
}

// ---- the capture list --------------------------------------------------------------------

let captures = [];
async function api(path, init) {
  const r = await fetch(path, Object.assign({ credentials: 'same-origin' }, init));
  if (r.status === 401) { $('signin').hidden = false; throw new Error('the service needs its token'); }
  $('signin').hidden = true;
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(body.error || `HTTP ${r.status}`);
  return body;
}

function markOpen() {
  for (const li of $('capture-list').children) li.classList.toggle('open', li.dataset.name === stats.capture);
}

async function refresh() {
  try {
    captures = await api('/api/captures');
  } catch (e) {
    return;
  }
  const ul = $('capture-list');
  ul.textContent = '';
  for (const c of captures) {
    const li = document.createElement('li');
    li.dataset.name = c.name;
    const n = document.createElement('span'); n.className = 'name'; n.textContent = c.name;
    const ev = document.createElement('span'); ev.className = 'n'; ev.textContent = (c.events ?? 0).toLocaleString('en');
    li.append(n, ev);
    if (c.live) { const l = document.createElement('span'); l.className = 'live'; l.textContent = '● live'; li.append(l); }
    const a = document.createElement('a');
    a.href = `/api/captures/${encodeURIComponent(c.name)}/export?format=bundle`;
    a.textContent = '⤓';
    a.title = 'download its bundle';
    a.setAttribute('download', `${c.name}.bundle`);
    a.addEventListener('click', (e) => e.stopPropagation());
    li.append(a);
    li.addEventListener('click', () => { location.hash = `capture=${encodeURIComponent(c.name)}`; });
    ul.append(li);
  }
  markOpen();
}

function route() {
  const p = params();
  if (!p.capture) return;
  const c = captures.find((x) => x.name === p.capture);
  // a capture the service does not list yet is waited for on /api/live
  open(p.capture, p.replay ? false : c ? !!c.live : true);
}

// ---- drop to import ----------------------------------------------------------------------

function importName(file) {
  let n = file.name.replace(/\.(bundle|json|zip|parquet|wire|packed|gz|zst)$/gi, '').replace(/[^A-Za-z0-9._-]/g, '_').replace(/^[.-]+/, '');
  return (n || 'imported').slice(0, 128);
}

window.addEventListener('dragover', (e) => { e.preventDefault(); $('drop').hidden = false; });
window.addEventListener('dragleave', (e) => { if (!e.relatedTarget) $('drop').hidden = true; });
window.addEventListener('drop', async (e) => {
  e.preventDefault();
  $('drop').hidden = true;
  const f = e.dataTransfer && e.dataTransfer.files[0];
  if (!f) return;
  const name = importName(f);
  $('title').textContent = `importing ${f.name} as ${name}…`;
  try {
    // The service takes a body only with a type no plain form can send (docs/serve.md).
    const r = await api(`/api/captures/import?name=${encodeURIComponent(name)}`, {
      method: 'POST', body: f, headers: { 'Content-Type': 'application/octet-stream' },
    });
    await refresh();
    location.hash = `capture=${encodeURIComponent(r.name)}`;
  } catch (err) {
    showError(`import of ${f.name}: ${err.message}`);
  }
});

// ---- controls ----------------------------------------------------------------------------

$('follow').addEventListener('change', (e) => view.setFollow(e.target.checked));
$('fit').addEventListener('click', () => view.fit());
$('help-button').addEventListener('click', () => { $('help').hidden = !$('help').hidden; });
$('search').addEventListener('input', (e) => {
  const q = e.target.value.trim().toLowerCase();
  if (!q) { view.search = null; stats.searchMatches = 0; $('search-count').textContent = ''; view.invalidate(); return; }
  const sr = new Uint8Array(model.names.length + 1);
  let names = 0;
  model.names.forEach((n, id) => { if (n !== undefined && n.toLowerCase().includes(q)) { sr[id] = 1; names++; } });
  view.search = sr;
  let events = 0;
  for (const p of model.procs.values())
    for (const t of p.threads.values())
      for (const l of [...t.zones, t.instants, ...t.counters.values()]) {
        if (!l) continue;
        for (let i = 0; i < l.n; i++) if (sr[l.name[i]]) events++;
      }
  stats.searchMatches = events;
  $('search-count').textContent = `${events.toLocaleString('en')} events in ${names} names`;
  view.invalidate();
});

window.addEventListener('hashchange', route);
(async () => {
  await refresh();
  route();
  renderStats();
  setInterval(refresh, 2000);
})();
