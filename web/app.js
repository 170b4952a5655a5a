// @ts-check
// app.js: the viewer page's entry. It makes the page's parts and wires them to each other,
// so that none of them calls another: the model (model.js) and the timeline (timeline.js);
// the session (session.js), which opens the capture the URL's fragment names and feeds the
// model; the capture list and drop to import (captures.js); the panels (panels.js): stats
// line, details, samples, search count; the hooks of the tests (debug.js). The controls of
// the header (follow, fit, help, search) are wired here too.
import { Model } from './model.js';
import { Timeline } from './timeline.js';
import { Session, params } from './session.js';
import { CaptureList, installDrop } from './captures.js';
import { StatsLine, Details, Samples, search } from './panels.js';
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
const details = new Details(model);
const view = new Timeline(canvas, model, {
  hover: (info, x, y) => details.hover(info, x, y),
  select: (info) => details.select(info),
  range: (rows, r0 = 0, r1 = 0) => {
    details.range(rows, r0, r1);
    samples.range(rows ? [r0, r1] : null);
  },
  followChanged: (on) => { follow.checked = on; },
});
const samples = new Samples($('profile'), model, view);
const list = new CaptureList($('capture-list'));
const session = new Session(model, view, {
  opened(name) {
    samples.reset(name);
    details.range(null);
    list.markOpen(name);
  },
  ended() { samples.load(null); },
  changed() { statsLine.render(); },
});
const statsLine = new StatsLine(session.stats);
setInterval(() => statsLine.render(), 250);
installDebugHooks({ stats: session.stats, model, view, samples, canvas });
installDrop(list, (msg) => session.fail(msg));

function route() {
  const p = params();
  if (!p.capture) return;
  const c = list.find(p.capture);
  // a capture the service does not list yet is waited for on /api/live
  session.open(p.capture, p.replay ? false : c ? !!c.live : true);
}

follow.addEventListener('change', () => view.setFollow(follow.checked));
$('fit').addEventListener('click', () => view.fit());
$('help-button').addEventListener('click', () => { $('help').hidden = !$('help').hidden; });
searchBox.addEventListener('input', () => {
  const { events, names } = search(model, view, searchBox.value);
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
