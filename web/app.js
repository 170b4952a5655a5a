// @ts-check
// app.js: the viewer page's entry. It makes the page's parts and wires them to each other,
// so that none of them calls another: the model (model.js) and the timeline (timeline.js);
// the pager (pages.js), which holds a stored capture's view frames for what is on screen;
// the session (session.js), which opens the capture the URL's fragment names and feeds the
// model or the pager; the capture list and drop to import (captures.js); the panels (panels.js): stats
// line, details, samples, search count; the keys, marks and the keys' overlay (keys.js); the
// hooks of the tests (debug.js); the compare view (compare.js), which takes the page's place
// while the fragment says #compare=A,B. The controls of the header (follow, fit, theme, keys,
// search) are wired here too, and the questions the page asks the service about a range or
// a name (/stats, /events, through the pager).
//
// The view is kept in the URL's fragment (session.js says its keys): every 300 ms, when it
// has changed, with history.replaceState (no history entry, no hashchange); when a capture
// opens, the range, selection, marks and layout the fragment names are put back once its
// times are known. The theme is the root's data-theme: the one chosen with the header's
// toggle (local storage, "trove.theme"), else the system's prefers-color-scheme.
import { Model } from './model.js';
import { Pager } from './pages.js';
import { Timeline } from './timeline.js';
import { Session, params, viewParams, fragment, api } from './session.js';
import { Keys } from './keys.js';
import { CaptureList, installDrop } from './captures.js';
import { StatsLine, Details, Samples, Finder, search } from './panels.js';
import { NamePanel } from './namepanel.js';
import { fmtDur } from './timeline.js';
import { installDebugHooks, installCompareHooks, installFrameHooks } from './debug.js';
import { Compare, compareParams } from './compare.js';
import { FrameGraph } from './framegraph.js';

/**
 * @param {string} id
 * @returns {HTMLElement} the page's element of that id (index.html has each one the code names)
 */
function $(id) {
  const el = document.getElementById(id);
  if (!el) throw new Error(`the page has no #${id}`);
  return el;
}
const canvas = /** @type {HTMLCanvasElement} */ ($('timeline'));
const follow = /** @type {HTMLInputElement} */ ($('follow'));
const searchBox = /** @type {HTMLInputElement} */ ($('search'));

const model = new Model();
const pager = new Pager(model, {
  arrived: () => view.invalidate(),
  failed: (msg) => session.failed(msg),
});
const details = new Details(model, { jump: (name, how, from) => jump(name, how, from) });
const view = new Timeline(canvas, model, pager, {
  hover: (info, x, y) => details.hover(info, x, y),
  select: (info) => details.select(info),
  range: (span) => { details.askRange(span); samples.range(span); },
  followChanged: (on) => { follow.checked = on; },
  viewed: (t0, t1, px, keys) => pager.want(t0, t1, px, keys),
});
const samples = new Samples($('profile'), model, view);
const names = new NamePanel($('name-panel'), { capture: () => details.stored(), current: () => details.current(), show: (e) => details.show(e),
  names: () => model.names });
details.attach(view, pager, names);
// the selected event's flows (web/flows.js binds them as the service's /flows answers come):
// listed in the details, each a link to its far end
details.flowsOf = () => view.flowsOf().map((f) => ({
  dir: f.dir, name: f.name, start: f.other.t, dur: 0, depth: 0,
  track: model.track(f.other.pid, f.other.tid), jump: () => view.jumpFlow(f),
}));
view.flows.onChange(() => { if (view.selected) details.select(view.selected); });
const finder = new Finder(model, details, () => session.stats.searchMatches);
// the frame-time graph (framegraph.js): a click on a frame shows it on the timeline
const frameGraph = new FrameGraph($('frames-panel'), model, {
  zoom(t0, t1) { view.t0 = t0; view.t1 = t1; view.fitted = false; view.setFollow(false); view.invalidate(); },
  range: () => [view.t0, view.t1],
});
const list = new CaptureList($('capture-list'));
const keys = new Keys(view, $('marks'), $('keys'), { now: (t) => fmtDur(t - model.minT) });
const session = new Session(model, view, pager, {
  opened(name) {
    view.opened(name);
    samples.reset(name);
    details.range(null);
    names.hide();
    details.select(null); // the last capture's selection is not this one's
    frameGraph.reset();
    finder.reset(searchBox.value);
    list.markOpen(name);
    keys.setMarks([]);
    // the rates start again with this capture's counts (never a difference across two)
    statsLine.lastBytes = 0; statsLine.lastDecodeUs = 0; statsLine.lastBatches = 0;
    statsLine.lastAt = performance.now();
    restoring = viewParams();
  },
  based(name) {
    restore();
    if (pager.ready && !pager.live) frameGraph.load(name); // a live one's: the ring's
  },
  ended() { samples.load(null); },
  changed() { statsLine.render(); },
});
const statsLine = new StatsLine(session.stats, () => {
  session.stats.held = pager.held() + model.bytes();
  if (!pager.ready) return '';
  const frames = pager.detail.length + (pager.overview ? 1 : 0);
  return `view: ${frames} frames, ${(session.stats.held / 1e6).toFixed(1)} MB held · ${pager.answers} answers, ${(pager.bytes / 1e6).toFixed(1)} MB` +
    (pager.live ? ` · ring ${model.events.toLocaleString('en')} events` : '');
});
setInterval(() => { statsLine.render(); frameGraph.draw(); }, 250);
installDebugHooks({ stats: session.stats, model, view, samples, canvas, pager });
installFrameHooks(frameGraph);
view.tracks.bindPage(view.flows);

/**
 * Shows the slowest instance of a name, or the next one after `from`: the view zooms to it
 * and it is selected.
 * @param {string} name @param {'slowest' | 'next'} how @param {number} from
 */
async function jump(name, how, from) {
  const note = () => document.getElementById('jump-note');
  try {
    if (!pager.ready) throw new Error('only a stored capture can be asked');
    const [e] = await pager.find(name, how === 'slowest' ? 'dur_desc' : 'start', how === 'next' ? from + 1 : undefined);
    if (!e) { const n = note(); if (n) n.textContent = `no ${how === 'next' ? 'later ' : ''}${name}`; return; }
    const s = model.rel(BigInt(e.start_ns)), d = e.dur_ns;
    const pad = Math.max(d, 1000) * 0.4;
    view.t0 = s - pad; view.t1 = s + d + pad;
    view.fitted = false;
    view.setFollow(false);
    /** @type {import('./timeline.js').Hit} */
    const sel = { track: model.track(e.pid, e.tid), lane: e.kind === 'instant' || e.kind === 'async-instant' ? 'instant' : 'zone', depth: e.depth,
      index: -1, start: s, dur: d, nameId: e.name_id, name: model.nameOf(e.name_id), merged: 1, event: e.index };
    view.selected = sel;
    view.scrollTo(sel.track);
    details.select(sel);
    const n = note();
    if (n) n.textContent = `${how === 'slowest' ? 'the slowest' : 'the next'}: ${fmtDur(d)}`;
  } catch (err) {
    const n = note();
    if (n) n.textContent = `${err instanceof Error ? err.message : err}`;
  }
}
installDrop(list, (msg) => session.fail(msg));

// ---- the view in the URL ----------------------------------------------------------------

/**
 * The tracks' layout (collapsed, pinned, order) as the URL's layout= holds it: an object
 * whose get() gives the layout= value and set() takes it back plugs in here, and the URL
 * keeps and restores it with the rest. While it is null, the fragment's layout= is left as
 * it is (kept and read by the tracks' code itself, if it does).
 * @typedef {{ get(): string, set(encoded: string): void }} LayoutState
 */
/** @type {LayoutState | null} */
const trackLayout = null;

/** @type {import('./session.js').ViewParams | null} what the URL named, until put back */
let restoring = null;

/** Puts back the view the URL named, once the capture's times are known. */
async function restore() {
  const v = restoring;
  if (!v) return;
  try { await put(v); } finally { if (restoring === v) restoring = null; } // the URL is written again from here on
}

/** @param {import('./session.js').ViewParams} v the view to put back */
async function put(v) {
  if (v.layout !== null && trackLayout) trackLayout.set(v.layout);
  if (v.marks.length) keys.setMarks(v.marks.map((m) => model.rel(m)));
  if (v.from !== null && v.to !== null) {
    view.t0 = model.rel(v.from); view.t1 = model.rel(v.to);
    view.fitted = false;
    view.setFollow(false);
  }
  if (v.sel) {
    // the rows take their final heights from the overview (which lanes each track has):
    // scrolled to before it comes, the row would be elsewhere once it does
    for (let i = 0; i < 200 && pager.ready && !pager.overview; i++) await new Promise((r) => setTimeout(r, 50));
    await select(v.sel);
  }
  view.invalidate();
}

/**
 * Selects the event the URL names: the service's answer for its name, start and track
 * (the one at its depth), or, for a capture the service has not stored, the ring's.
 * @param {NonNullable<import('./session.js').ViewParams['sel']>} s
 */
async function select(s) {
  const t = model.rel(s.start), track = model.track(s.pid, s.tid);
  /** @type {import('./timeline.js').Hit | null} */
  let sel = null;
  if (pager.ready) {
    try {
      const q = new URLSearchParams({ name: s.name, from_ns: `${s.start}`, to_ns: `${s.start + 1n}`, tracks: `${s.pid}:${s.tid}`, limit: '64' });
      const a = /** @type {{ events: { index: number, start_ns: number, dur_ns: number, depth: number, kind: string, name_id: number }[] }} */ (
        await api(`/api/captures/${encodeURIComponent(session.stats.capture)}/events?${q}`));
      const e = a.events.find((x) => x.depth === s.depth) || a.events[0];
      if (e) sel = { track, lane: e.kind === 'instant' || e.kind === 'async-instant' ? 'instant' : 'zone', depth: e.depth, index: -1,
        start: t, dur: e.dur_ns, nameId: e.name_id, name: model.nameOf(e.name_id), merged: 1, event: e.index };
    } catch { /* not stored: the ring's */ }
  }
  const lane = track.zones[s.depth];
  if (!sel && lane)
    for (let i = 0; i < lane.n; i++)
      if (lane.s[i] === t && model.nameOf(lane.name[i]) === s.name) {
        sel = { track, lane: 'zone', depth: s.depth, index: i, start: t, dur: lane.d[i], nameId: lane.name[i], name: s.name, merged: 1 };
        break;
      }
  if (!sel) return;
  view.selected = sel;
  view.scrollTo(track);
  details.select(sel);
}

/** @returns {string} the fragment of the view as it is now */
function viewFragment() {
  const live = (view.follow && !session.stats.ended) || !Number.isFinite(view.t0) || !Number.isFinite(view.t1);
  const sel = view.selected;
  return fragment({
    from: live ? null : model.abs(view.t0).toString(),
    to: live ? null : model.abs(view.t1).toString(),
    sel: sel && Number.isFinite(sel.start) ? `${model.abs(sel.start)},${sel.track.pid}:${sel.track.tid},${sel.depth},${sel.name}` : null,
    marks: keys.marks.filter(Number.isFinite).map((m) => model.abs(m).toString()).join(','),
    layout: trackLayout ? trackLayout.get() : null,
  });
}
setInterval(() => {
  if (restoring || !session.stats.capture || !model.haveBase || compare.active) return;
  const f = viewFragment();
  if (f !== location.hash.slice(1)) history.replaceState(history.state, '', `#${f}`);
}, 300);

// ---- the theme ------------------------------------------------------------------------------

const THEME_KEY = 'trove.theme';
const dark = matchMedia('(prefers-color-scheme: dark)');
/** @returns {string} the theme chosen with the toggle, '' for the system's */
function chosenTheme() {
  try { return localStorage.getItem(THEME_KEY) || ''; } catch { return ''; }
}
function applyTheme() {
  const c = chosenTheme();
  document.documentElement.dataset.theme = c === 'dark' || c === 'light' ? c : dark.matches ? 'dark' : 'light';
  view.invalidate();
}
applyTheme();
dark.addEventListener('change', applyTheme);
$('theme').addEventListener('click', () => {
  const next = document.documentElement.dataset.theme === 'dark' ? 'light' : 'dark';
  try { localStorage.setItem(THEME_KEY, next); } catch { /* kept for this page only */ }
  document.documentElement.dataset.theme = next;
  view.invalidate();
});

// ---- opening what the URL names ----------------------------------------------------------

// #compare=A,B shows the compare view (compare.js) in place of the normal one; leaving it
// (a fragment without compare=) gives the normal view back as it was
const compare = new Compare({ shown: (on) => { if (!on) { $('title').textContent = session.stats.capture || 'no capture open'; view.invalidate(); } } });
installCompareHooks(compare);

let opened = ''; // what route() opened: the capture and how, not the view
function route() {
  const cmp = compareParams();
  if (cmp) { compare.show(cmp); return; }
  compare.hide();
  const p = params();
  if (!p.capture) return;
  const how = JSON.stringify(p);
  if (how === opened) { // the same capture: only the view moves
    restoring = viewParams();
    restore();
    return;
  }
  opened = how;
  const c = list.find(p.capture);
  // a capture the service does not list yet is waited for on /api/live
  session.open(p.capture, p.replay ? false : c ? !!c.live : true, c ? c.events || 0 : 0, !!c || p.replay);
}

// a live capture's samples, asked again every 3 s while the capture list counts some (the
// service commits them as they come), so that its ticks and flame graph show while it
// runs, not only at its end; not while a range's samples are shown
setInterval(() => {
  const st = session.stats, c = list.find(st.capture);
  if (c && c.live && (c.samples || 0) > 0 && st.connected && !st.ended && !st.stopped && !st.error && st.from !== 'view' && !view.range) samples.load(null);
}, 3000);

follow.addEventListener('change', () => view.setFollow(follow.checked));
$('fit').addEventListener('click', () => view.fit());
$('help-button').addEventListener('click', () => keys.help());
let searchAsk = 0;
searchBox.addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); finder.step(e.shiftKey ? -1 : 1); } });
searchBox.addEventListener('input', async () => {
  const ask = ++searchAsk;
  finder.reset(searchBox.value);
  let { events, names } = search(model, view, searchBox.value);
  const sr = view.search;
  if (sr && pager.ready && !pager.live) { // a stored capture's counts are the service's
    try {
      const counts = await pager.nameCounts();
      if (ask !== searchAsk) return;
      events = 0;
      for (const [id, n] of counts) if (sr[id]) events += n;
    } catch { /* the events held, then */ }
  }
  session.stats.searchMatches = events;
  $('search-count').textContent = searchBox.value.trim() ? `${events.toLocaleString('en')} events in ${names} names` : '';
});

window.addEventListener('hashchange', route);
(async () => {
  await list.refresh();
  route();
  statsLine.render();
  setInterval(() => list.refresh(), 2000);
})();
