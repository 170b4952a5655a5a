// @ts-check
// app.js: the viewer page's entry. It makes the page's parts and wires them to each other,
// so that none of them calls another: the model (model.js) and the timeline (timeline.js);
// the pager (pages.js), which holds a stored capture's view frames for what is on screen;
// the session (session.js), which opens the capture the URL's fragment names and feeds the
// model or the pager; the capture list and drop to import (captures.js); the panels (panels.js): stats
// line, details, samples, search count; the hooks of the tests (debug.js). The controls of
// the header (follow, fit, help, search) are wired here too, and the questions the page
// asks the service about a range or a name (/stats, /events, through the pager).
import { Model } from './model.js';
import { Pager } from './pages.js';
import { Timeline } from './timeline.js';
import { Session, params } from './session.js';
import { CaptureList, installDrop } from './captures.js';
import { StatsLine, Details, Samples, Finder, search } from './panels.js';
import { NamePanel } from './namepanel.js';
import { fmtDur } from './timeline.js';
import { installDebugHooks } from './debug.js';

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
  failed: (msg) => session.fail(msg),
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
const finder = new Finder(model, details, () => session.stats.searchMatches);
const list = new CaptureList($('capture-list'));
const session = new Session(model, view, pager, {
  opened(name) {
    view.opened(name);
    samples.reset(name);
    details.range(null);
    names.hide();
    finder.reset(searchBox.value);
    list.markOpen(name);
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
setInterval(() => statsLine.render(), 250);
installDebugHooks({ stats: session.stats, model, view, samples, canvas, pager });
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

function route() {
  const p = params();
  if (!p.capture) return;
  const c = list.find(p.capture);
  // a capture the service does not list yet is waited for on /api/live
  session.open(p.capture, p.replay ? false : c ? !!c.live : true, c ? c.events || 0 : 0);
}

follow.addEventListener('change', () => view.setFollow(follow.checked));
$('fit').addEventListener('click', () => view.fit());
$('help-button').addEventListener('click', () => { $('help').hidden = !$('help').hidden; });
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
