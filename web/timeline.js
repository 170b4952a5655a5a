// @ts-check
// timeline.js: the timeline on a 2D canvas. Rows: a header per process, then one row per
// thread with its zones stacked by depth, a strip of instant ticks, a line per counter and,
// when the capture has samples, a strip of sample ticks (dark marks, one per pixel).
// Time runs left to right from the capture's first event. Which rows there are is the
// layout's (tracks.js): a collapsed process is its header alone, a collapsed thread one row
// of its depth-0 zones, a process's async tracks one row of all their depth-0 spans until
// the group is opened, pinned tracks a band at the top that does not scroll; a process's
// header shows its busiest thread's depth-0 zones. A counter is a row of its own: a step
// line with its least and greatest value on a y-axis in the gutter (never over the line),
// and under the pointer the value the capture holds at that time. Flow arrows (flows.js)
// are drawn from the selected event to the other ends of its flows, and every flow in view
// when "all flows" is on; clicking an arrow's far end jumps there.
//
// Level of detail: per lane, the first visible event is found by binary search, a zone at
// least MIN_W pixels wide is drawn on its own, and anything narrower is merged with every
// event that starts in the same pixel (one binary search jumps over them), adjacent merged
// pixels becoming one rectangle. Rectangles are collected per colour and filled as one
// path per colour, so a frame costs O(visible pixels x log n), whatever the events in view.
//
// A stored capture's events are not held: its rows draw the view frames the pager holds
// (pages.js) — the overview first, then over the range of the frame that serves the view
// (cleared first), that frame: long events exactly, as zones, and cells merged per lane and
// column: a zone lane's cell as a block of its dominant name's colour, paler the less busy
// the cell is, an instant's as a tick, a counter's as a
// bar from its least to its greatest value. A live capture's ring (model.js) is drawn over
// them, from its cut on; the frames only before it.
//
// Input: wheel, ctrl+wheel (a trackpad's pinch) and two-finger touch zoom around the
// pointer; drag pans (time and rows); shift+drag, or a drag on the time axis, selects a
// range; click selects an event; keys: + - (or w s) zoom, arrows (or a d) pan, f or 0 fits,
// Escape clears the selection. Panning away from the live edge turns "follow" off.
import { lowerBound } from './model.js';
import { trackKey } from './pages.js';
import { LANE_INSTANT, LANE_COUNTER } from './view.js';
import { Tracks, trackKind, weight } from './tracks.js';
import { Flows } from './flows.js';
import { api } from './session.js';

/** @typedef {import('./model.js').Model} Model */
/** @typedef {import('./model.js').Track} Track */
/** @typedef {import('./model.js').Lane} Lane */
/** @typedef {import('./pages.js').Pager} Pager */
/** @typedef {import('./pages.js').Placed} Placed */
/**
 * A row of the timeline, y and h in CSS pixels from the top of the rows (a pinned row's
 * from the top of the pinned band, which does not scroll): a process's header (pid; track
 * its busiest thread, drawn in it), a thread (track, with the heights of its zones zh —
 * depth lanes of them —, instants ih and sample ticks th, top down), a process's async
 * group (members, its tracks; open: laid out as rows below it, else drawn in it) or a
 * counter (track; id the ring's series, -1 the view frames' counter cells; lo and hi its
 * axis, as last drawn).
 * @typedef {{ kind: 'proc' | 'thread' | 'group' | 'counter', y: number, h: number, label: string,
 *   pinned: boolean, track: Track | null, key: string, pid: number, zh: number, ih: number,
 *   th: number, depth: number, collapsed: boolean, members: Track[], id: number,
 *   lo: number, hi: number }} Row
 */
/**
 * An event under a point (Timeline.hit): its track and lane (a zone's depth), its index in
 * the lane, times in ns from the capture's base, its name, and how many events its pixel
 * merges (1: drawn on its own). From a view frame: its index in the capture (event, -1 when
 * not known), or the cell it is (its events, busy time and width; name the dominant one).
 * @typedef {{ track: Track, lane: 'zone' | 'instant', depth: number, index: number,
 *   start: number, dur: number, nameId: number, name: string, merged: number,
 *   event?: number, cell?: { count: number, busy: number, width: number } }} Hit
 */
/**
 * What the last draw did (the tests and the benchmark read it): rectangles filled, its time
 * in ms, zone labels drawn, sample tick marks drawn; of the frame that served the view
 * (primary) and of the overview: the events and cells in view that were drawn, and the
 * primary's url.
 * @typedef {{ rects: number, ms: number, labels?: number, tickMarks?: number,
 *   primary?: { url: string, events: number, cells: number } | null,
 *   overview?: { events: number, cells: number } | null, rows?: string[], drawn?: number }} DrawStats
 * (rows: the tracks drawn whole on screen — open threads' rows and counters' —, whose
 * events and cells primary and overview count; drawn: every row on screen)
 */

const BUSY_LEVELS = 4; // a cell's shade: one step paler per quarter of it not busy
export const LABEL_W = 200;
const AXIS_H = 24, PROC_H = 18, LANE_H = 16, INST_H = 10, COUNTER_H = 36, TICK_H = 7;
const MIN_W = 2; // px: narrower zones are merged
const F64 = new Float64Array(1), F64U32 = new Uint32Array(F64.buffer);
const NCOL = 24;
const PALETTE = Array.from({ length: NCOL }, (_, i) => `hsl(${(i * 360 / NCOL + 15) % 360}, 55%, ${i % 2 ? 62 : 70}%)`);
/**
 * A track's counter cells' least and greatest value.
 * @param {import('./view.js').ViewFrame} f @param {import('./view.js').ViewTrack} vt
 * @param {[number, number]} r its counter cells
 * @returns {[number, number]}
 */
function valueRange(f, vt, r) {
  let lo = Infinity, hi = -Infinity;
  for (let i = 0; i < r[1] - r[0]; i++) {
    lo = Math.min(lo, f.cMin[vt.v0 + i]);
    hi = Math.max(hi, f.cMax[vt.v0 + i]);
  }
  return lo <= hi ? [lo, hi] : [0, 1];
}

const DIM = NCOL, HIGHLIGHT_RUN = NCOL + 1, TICK = NCOL + 2; // extra buckets: non-matching (search), merged matches, samples
// a cell's colour: its name's, paler the less busy it is (BUSY_LEVELS - 1 pale shades of
// each colour after the extra buckets; the busiest cells take the colour itself)
const SHADES = NCOL + 3;
/**
 * The pale shades of every colour, going toward lightness `toward` (%) as a cell is less busy.
 * @param {number} toward
 * @returns {string[]}
 */
function shades(toward) {
  return Array.from({ length: NCOL * (BUSY_LEVELS - 1) }, (_, j) => {
    const i = Math.floor(j / (BUSY_LEVELS - 1)), lvl = 1 + (j % (BUSY_LEVELS - 1)), l = i % 2 ? 62 : 70;
    const pale = 1 - lvl / BUSY_LEVELS;
    return `hsl(${(i * 360 / NCOL + 15) % 360}, ${Math.round(55 - 20 * pale)}%, ${Math.round(l + (toward - l) * pale)}%)`;
  });
}
const COLOURS = [...PALETTE, '#d6d6d6', '#ff9800', '#455a64', ...shades(96)];

// ---- theme ----
// The canvas's colours other than the names' are the page's CSS custom properties (--tl-*,
// at the top of web/style.css), read again when the theme the root element names changes
// (its data-theme attribute, which app.js keeps to the chosen or the system's theme). The
// search's grey and the cells' pale shades (toward --tl-pale, a lightness in %) follow it.
/**
 * @typedef {{ name: string, bg: string, gutter: string, proc: string, procText: string,
 *   label: string, rule: string, axis: string, axisLine: string, axisText: string,
 *   note: string, zoneText: string, counterText: string, select: string, group: string,
 *   rangeFill: string, rangeLine: string }} Theme
 */
/** @type {Theme | null} */
let themeNow = null;
/** @returns {Theme} the colours of the theme the page shows now */
export function theme() {
  const name = document.documentElement.dataset.theme || 'light';
  if (themeNow && themeNow.name === name) return themeNow;
  const css = getComputedStyle(document.documentElement);
  /** @param {string} v @param {string} dflt */
  const v = (v, dflt) => css.getPropertyValue(`--tl-${v}`).trim() || dflt;
  themeNow = {
    name, bg: v('bg', '#ffffff'), gutter: v('gutter', '#f4f4f4'), proc: v('proc', '#e3e8ef'), procText: v('proc-text', '#223'),
    label: v('label', '#333'), rule: v('rule', '#e6e6e6'), axis: v('axis', '#fafafa'), axisLine: v('axis-line', '#ccc'),
    axisText: v('axis-text', '#333'), note: v('note', '#666'), zoneText: v('zone-text', '#1a1a1a'),
    counterText: v('counter-text', '#555'), select: v('select', '#000'), group: v('group', '#eef1f5'),
    rangeFill: v('range-fill', 'rgba(33, 150, 243, 0.15)'), rangeLine: v('range-line', 'rgba(33, 150, 243, 0.8)'),
  };
  COLOURS[DIM] = v('dim', '#d6d6d6');
  COLOURS.splice(SHADES, NCOL * (BUSY_LEVELS - 1), ...shades(Number(v('pale', '96')) || 96));
  return themeNow;
}
// ---- end theme ----

/**
 * @param {number} nameId
 * @returns {number} its colour's index in PALETTE, the same on every draw
 */
export function colourOf(nameId) {
  let h = Math.imul(nameId ^ 0x9e3779b9, 0x85ebca6b);
  h ^= h >>> 15;
  return (h >>> 0) % NCOL;
}

/**
 * @param {number} ns
 * @param {number} [res] the finest difference that matters (ns: a pixel of the view): the
 *   digits go down to it (at most to the ns), so a time of seconds in a view of µs keeps them
 * @returns {string} ns as a duration in the unit that suits it: 12 ns, 3.5 µs, 1.25 ms, 2 s
 */
export function fmtDur(ns, res) {
  const a = Math.abs(ns);
  if (res !== undefined && res > 0 && a >= 1e3) {
    const u = a < 1e6 ? 1e3 : a < 1e9 ? 1e6 : 1e9;
    const dec = Math.min(Math.log10(u), Math.max(0, Math.ceil(Math.log10(u / Math.max(1, res)) - 1e-9)));
    // trailing zeros go: the digits shown are exact to the resolution, and a round value stays short
    const x = (ns / u).toFixed(dec).replace(/(\.\d*?)0+$/, '$1').replace(/\.$/, '');
    return `${x} ${u === 1e3 ? 'µs' : u === 1e6 ? 'ms' : 's'}`;
  }
  if (a < 1e3) return `${+ns.toFixed(0)} ns`;
  if (a < 1e6) return `${+(ns / 1e3).toPrecision(4)} µs`;
  if (a < 1e9) return `${+(ns / 1e6).toPrecision(4)} ms`;
  return `${+(ns / 1e9).toPrecision(5)} s`;
}

/**
 * @param {number} v a counter's value
 * @returns {string} it short: 4 significant digits, k/M/G past 10,000
 */
export function fmtValue(v) {
  const a = Math.abs(v);
  if (a >= 1e10) return `${+(v / 1e9).toPrecision(4)}G`;
  if (a >= 1e7) return `${+(v / 1e6).toPrecision(4)}M`;
  if (a >= 1e4) return `${+(v / 1e3).toPrecision(4)}k`;
  return `${+v.toPrecision(4)}`;
}

/**
 * @param {number} t a time on the axis (ns)
 * @param {number} step the axis's step (ns): sets the unit and the decimals
 * @returns {string}
 */
function fmtAt(t, step) {
  /** @type {[number, string][]} */
  const units = [[1e9, 's'], [1e6, 'ms'], [1e3, 'µs'], [1, 'ns']];
  for (const [u, name] of units) {
    if (step >= u * 0.1 || u === 1) {
      const dec = Math.max(0, Math.ceil(-Math.log10(step / u) - 1e-9));
      return `${(t / u).toFixed(Math.min(dec, 6))} ${name}`;
    }
  }
  return `${t}`;
}

class Buckets {
  constructor() {
    this.a = Array.from({ length: COLOURS.length }, () => new Float64Array(4096));
    this.n = new Uint32Array(COLOURS.length);
  }
  clear() { this.n.fill(0); }
  /**
   * A rectangle of colour c (an index in COLOURS).
   * @param {number} c @param {number} x @param {number} y @param {number} w @param {number} h
   */
  add(c, x, y, w, h) {
    let a = this.a[c];
    const k = this.n[c];
    if (k + 4 > a.length) { const b = new Float64Array(a.length * 2); b.set(a); this.a[c] = a = b; }
    a[k] = x; a[k + 1] = y; a[k + 2] = w; a[k + 3] = h;
    this.n[c] = k + 4;
  }
  /**
   * @param {CanvasRenderingContext2D} ctx
   * @returns {number} the rectangles filled
   */
  fill(ctx) {
    let rects = 0;
    for (let c = 0; c < COLOURS.length; c++) {
      const n = this.n[c];
      if (!n) continue;
      const a = this.a[c];
      ctx.fillStyle = COLOURS[c];
      ctx.beginPath();
      for (let k = 0; k < n; k += 4) ctx.rect(a[k], a[k + 1], a[k + 2], a[k + 3]);
      ctx.fill();
      rects += n / 4;
    }
    return rects;
  }
}

/**
 * What the timeline tells the page: the event under the pointer (null: none) at client
 * (x, y), the event clicked (null: the selection cleared), the range selected with its
 * table of names (null: cleared), and "follow" turned on or off.
 * @typedef {{
 *   hover(info: import('./panels.js').EventInfo | null, x?: number, y?: number): void,
 *   select(info: import('./panels.js').EventInfo | null): void,
 *   range(span: [number, number] | null): void,
 *   followChanged(on: boolean): void,
 *   viewed(t0: number, t1: number, px: number, keys: string[]): void,
 * }} TimelineHooks
 */

export class Timeline {
  /**
   * @param {HTMLCanvasElement} canvas
   * @param {import('./model.js').Model} model
   * @param {Pager} pages the view frames of a stored capture (or a live one's history)
   * @param {TimelineHooks} hooks
   */
  constructor(canvas, model, pages, hooks) {
    this.pages = pages;
    this.canvas = canvas;
    const ctx = canvas.getContext('2d', { alpha: false });
    if (!ctx) throw new Error('the timeline needs a 2D canvas, and this one has another context');
    this.ctx = ctx;
    this.model = model;
    this.hooks = hooks;
    this.t0 = 0; this.t1 = 1e6;
    // the canvas's size in CSS pixels and the device's pixels per CSS pixel (resize())
    this.cssW = 0; this.cssH = 0; this.dpr = 1;
    this.scrollY = 0;
    this.follow = true;
    this.followAll = true; // following and showing everything so far
    this.fitted = false;   // showing the whole capture, as fit() left it
    /** @type {Row[]} */
    this.rows = [];
    this.layout = -1;
    this.totalH = 0;
    this.buckets = new Buckets();
    /** @type {[x: number, y: number, w: number, text: string][]} the zone labels of a draw */
    this.labels = [];
    /** @type {Uint8Array | null} by name id: 1 = matches, or null */
    this.search = null;
    /** @type {Hit | null} */
    this.selected = null;
    /** @type {[number, number] | null} [r0, r1] while selecting or selected */
    this.range = null;
    this.dirty = true;
    this.lastData = -1; // the model's data when last drawn
    /** @type {number[]} */
    this.drawTimes = [];
    /** @type {DrawStats} */
    this.lastStats = { rects: 0, ms: 0 };
    /** @type {[number, number] | null} where the pointer last was on the canvas */
    this.pointer = null;
    /** @type {{ primary: { url: string, events: number, cells: number } | null, overview: { events: number, cells: number } | null, labels0: number }} */
    this.lastFrames = { primary: null, overview: null, labels0: 0 };
    this.pinH = 0; // the pinned band's height
    this.labelsDrawn = 0;
    /** @type {Map<Track, Row>} where each laid-out track is drawn (its own row, or the row that holds it) */
    this.rowOf = new Map();
    /** @type {Map<Track, string>} each track's label */
    this.labelOf = new Map();
    this.tracksVersion = -1;
    /** the layout: collapsed, pinned, filter (tracks.js) */
    this.tracks = new Tracks(model, { changed: () => { this.tracksVersion = -1; this.invalidate(); }, jump: (t, pid) => this.jumpTo(t, pid) });
    /** the arrows (flows.js) */
    this.flows = new Flows(model, () => pages.name, () => pages.ready && !pages.live, () => this.invalidate());
    /** @type {Hit | null} the selection whose flows were asked */
    this.flowSel = null;
    /** @type {[number, number, number, number, import('./flows.js').BoundFlow][]} the far ends drawn: x, y, radius */
    this.flowEnds = [];
    /** @type {{ track: Track, t: number } | null} a flow's far end jumped to, selected once its zone is held */
    this.pendingJump = null;
    /** @type {{ row: Row, t: number, value: number, exact: boolean, count: number, name: string } | null} a counter under the pointer */
    this.counterHover = null;
    this.counterAsk = 0;
    this.quiet = false; // while drawing a group's row: zones without labels
    this.bind();
    const loop = () => {
      if (this.dirty || (this.follow && this.lastData !== this.model.data)) this.draw();
      requestAnimationFrame(loop);
    };
    requestAnimationFrame(loop);
  }

  /**
   * A capture opens: its layout (tracks.js: the URL's, the one kept for it, or the default),
   * no selection, no flows, at the top.
   * @param {string} name
   */
  opened(name) {
    this.tracks.open(name);
    this.flows.reset();
    this.selected = null; this.flowSel = null; this.pendingJump = null; this.counterHover = null;
    this.scrollY = 0;
    this.tracksVersion = -1;
    this.invalidate();
  }

  get plotW() { return Math.max(1, this.cssW - LABEL_W); }

  invalidate() { this.dirty = true; }

  /** @param {boolean} on */
  setFollow(on) {
    this.follow = on;
    if (on) this.followAll = true;
    this.hooks.followChanged(on);
    this.invalidate();
  }

  fit() {
    const m = this.model;
    if (!(m.maxT >= m.minT)) return;
    const span = Math.max(m.maxT - m.minT, 1000);
    this.t0 = m.minT - span * 0.01;
    this.t1 = m.maxT + span * 0.01;
    this.followAll = this.follow;
    this.fitted = true;
    this.invalidate();
  }

  // The rows, recomputed when tracks, names or the layout change. A thread is labelled by
  // its name, with its tid where another thread of its process has the same name (a
  // program's "worker" threads, one per round), or by its tid alone when it has none. The
  // layout (tracks.js) decides what is shown: pinned tracks first, in their order, then
  // the processes in the layout's order, each as its header and (unless collapsed) its
  // threads, its counters and its async group; the filter keeps the tracks whose process or
  // own name or id holds it.
  relayout() {
    const tk = this.tracks, groups = this.model.sortedTracks();
    tk.decide(groups);
    /** @type {Row[]} */
    const rows = [];
    /** @type {Map<Track, Row>} */
    const rowOf = new Map();
    /** @type {Map<Track, string>} */
    const labelOf = new Map();
    /** @type {Map<string, Track>} */
    const byKey = new Map();
    for (const g of groups) {
      /** @type {Map<string, number>} thread name -> threads of this process with it */
      const seen = new Map();
      for (const t of g.threads) if (t.name) seen.set(t.name, (seen.get(t.name) || 0) + 1);
      for (const t of g.threads) {
        labelOf.set(t, !t.name ? `thread ${t.tid}` : (seen.get(t.name) || 0) > 1 ? `${t.name} (${t.tid})` : t.name);
        byKey.set(`${t.pid}:${t.tid}`, t);
      }
    }
    let y = 0;
    /** @param {Partial<Row> & { kind: Row['kind'], h: number, label: string }} r @returns {Row} */
    const push = (r) => {
      /** @type {Row} */
      const row = Object.assign({ y, pinned: false, track: null, key: '', pid: 0, zh: 0, ih: 0, th: 0, depth: 0, collapsed: false,
        members: [], id: -1, lo: 0, hi: 1 }, r);
      rows.push(row);
      y += row.h;
      return row;
    };
    /** @param {Track} t @param {boolean} pinned */
    const trackRows = (t, pinned) => {
      const key = trackKey(t.pid, t.tid), own = labelOf.get(t) || '';
      const proc = this.model.procs.get(t.pid), label = pinned ? `${own} · ${proc && proc.name ? proc.name : 'pid'} ${t.pid}` : own;
      const counters = () => {
        if (t.counters.size) for (const id of t.counters.keys()) push({ kind: 'counter', h: COUNTER_H, label: `${trackKind(t) === 'counter' ? '' : `${label}: `}${this.model.nameOf(id)}`, track: t, key, pid: t.pid, id, pinned });
        else if (t.vCounter) push({ kind: 'counter', h: COUNTER_H, label, track: t, key, pid: t.pid, pinned });
      };
      if (trackKind(t) === 'counter') {
        const first = rows.length;
        counters();
        if (rows.length > first) rowOf.set(t, rows[first]);
        return;
      }
      const collapsed = tk.threadCollapsed(t);
      const depth = collapsed ? Math.min(1, Math.max(t.zones.length, t.vZones)) : Math.max(t.zones.length, t.vZones);
      const zh = depth * LANE_H, ih = (!collapsed || depth === 0) && (t.instants || t.vInstants) ? INST_H : 0;
      const th = !collapsed && t.ticks ? TICK_H : 0;
      rowOf.set(t, push({ kind: 'thread', h: Math.max(zh + ih + th, LANE_H) + 2, label, track: t, key, pid: t.pid, zh, ih, th, depth, collapsed, pinned }));
      if (!collapsed) counters();
    };
    for (const k of tk.l.pinned) {
      const t = byKey.get(k);
      if (t) trackRows(t, true);
    }
    this.pinH = y > 0 ? y + 3 : 0;
    y = this.pinH;
    const byPid = new Map(groups.map((g) => [g.proc.pid, g]));
    for (const pid of tk.sortPids(groups.map((g) => g.proc.pid))) {
      const g = byPid.get(pid);
      if (!g) continue;
      const p = g.proc;
      const shown = g.threads.filter((t) => tk.pinIndex(t) < 0 && tk.keeps(p, t, labelOf.get(t)));
      const selfMatch = !tk.l.filter.trim() || `${p.name} ${p.pid}`.toLowerCase().includes(tk.l.filter.trim().toLowerCase());
      if (!shown.length && !(selfMatch && g.threads.every((t) => tk.pinIndex(t) < 0))) continue;
      const th = g.threads.filter((t) => trackKind(t) === 'thread');
      const busiest = (th.length ? th : g.threads).reduce((a, t) => (weight(t) > weight(a) ? t : a));
      const collapsed = tk.procCollapsed(pid);
      const head = push({ kind: 'proc', h: PROC_H, label: `${p.name || 'process'} (pid ${p.pid})`, pid, track: busiest, key: trackKey(busiest.pid, busiest.tid), depth: 1, zh: LANE_H, collapsed });
      if (collapsed) { for (const t of g.threads) if (!rowOf.has(t)) rowOf.set(t, head); continue; }
      const asyncs = shown.filter((t) => trackKind(t) === 'async');
      // a process's frames (its frame marks' tracks) above its threads, as a frame profiler shows them
      for (const t of shown) if (trackKind(t) === 'frames') trackRows(t, false);
      for (const t of shown) if (trackKind(t) === 'thread' || trackKind(t) === 'counter') trackRows(t, false);
      if (asyncs.length) {
        const open = tk.asyncOpen(pid);
        const grp = push({ kind: 'group', h: open ? PROC_H : LANE_H + 2, label: `async (${asyncs.length} ${asyncs.length === 1 ? 'track' : 'tracks'})`, pid, members: asyncs, depth: 1, zh: LANE_H, collapsed: !open });
        if (open) for (const t of asyncs) trackRows(t, false);
        else for (const t of asyncs) rowOf.set(t, grp);
      }
    }
    this.rows = rows;
    this.rowOf = rowOf;
    this.labelOf = labelOf;
    this.totalH = y;
    this.layout = this.model.layout;
    this.tracksVersion = tk.version;
    tk.fillList((t) => labelOf.get(t) || '');
  }

  /** @param {Row} row @returns {number} its top on the canvas, CSS pixels */
  sy(row) { return AXIS_H + row.y - (row.pinned ? 0 : this.scrollY); }

  /**
   * The tracks a row draws, each with the lanes it shows: [track, depth lanes, instants].
   * @param {Row} row
   * @returns {Track[]}
   */
  tracksOf(row) {
    if (row.kind === 'group') return row.collapsed ? row.members : [];
    return row.track ? [row.track] : [];
  }

  resize() {
    const r = this.canvas.getBoundingClientRect();
    const dpr = window.devicePixelRatio || 1;
    this.cssW = Math.max(100, Math.floor(r.width));
    this.cssH = Math.max(100, Math.floor(r.height));
    const w = Math.floor(this.cssW * dpr), h = Math.floor(this.cssH * dpr);
    if (this.canvas.width !== w || this.canvas.height !== h) {
      this.canvas.width = w;
      this.canvas.height = h;
    }
    this.dpr = dpr;
  }

  /** @param {number} x CSS pixels from the canvas's left @returns {number} the time there */
  timeAt(x) { return this.t0 + (x - LABEL_W) * (this.t1 - this.t0) / this.plotW; }
  /** @param {number} t @returns {number} the CSS pixel of time t */
  xOf(t) { return LABEL_W + (t - this.t0) * this.plotW / (this.t1 - this.t0); }

  draw() {
    const t = performance.now();
    const m = this.model;
    this.dirty = false;
    this.lastData = m.data;
    this.resize();
    if (this.layout !== m.layout || this.tracksVersion !== this.tracks.version) this.relayout();
    if (this.follow && m.maxT >= m.minT) {
      if (this.followAll) {
        const span = Math.max(m.maxT - m.minT, 1000);
        this.t0 = m.minT; this.t1 = m.minT + span * 1.02;
      } else {
        const span = this.t1 - this.t0;
        this.t1 = m.maxT + span * 0.02; this.t0 = this.t1 - span;
      }
    }
    const ctx = this.ctx, W = this.cssW, H = this.cssH;
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    const th = theme();
    ctx.fillStyle = th.bg;
    ctx.fillRect(0, 0, W, H);
    this.scrollY = Math.max(0, Math.min(this.scrollY, Math.max(0, this.totalH - (H - AXIS_H) + 20)));
    if (this.selected !== this.flowSel) { this.flowSel = this.selected; this.flows.select(this.selected, this); }
    if (this.pendingJump) this.selectAt(this.pendingJump.track, this.pendingJump.t);
    const k = this.plotW / (this.t1 - this.t0);
    let tickMarks = 0, rects = 0, labels0 = 0;
    const pg = this.pages, act = pg.active;
    const { overview, primary } = act ? pg.drawList(this.t0, this.t1) : { overview: null, primary: null };
    const hi = pg.live ? m.cut : Infinity; // frames draw what starts before the ring's cut
    /** @type {{ events: number, cells: number }} */
    const ov = { events: 0, cells: 0 }, pr = { events: 0, cells: 0 };
    const pinH = this.pinH;
    const vis = this.rows.filter((row) => { const y = this.sy(row); return y + row.h > AXIS_H + (row.pinned ? 0 : pinH) && y < H; });
    /** @type {Set<string>} the tracks on screen, and a few rows more */
    const keySet = new Set();
    const rest = this.rows.filter((r) => !r.pinned), lo = rest.findIndex((r) => vis.includes(r));
    let up = lo;
    while (up + 1 < rest.length && vis.includes(rest[up + 1])) up++;
    /** @param {Row} row */
    const addKeys = (row) => { for (const t of row.kind === 'group' ? row.members : row.track ? [row.track] : []) if (t.stored > 0) keySet.add(trackKey(t.pid, t.tid)); };
    for (const row of this.rows) if (row.pinned) addKeys(row);
    for (let i = Math.max(0, lo - 4); lo >= 0 && i <= Math.min(rest.length - 1, up + 4); i++) addKeys(rest[i]);
    const keys = [...keySet];
    this.labelsDrawn = 0;
    // process headers' and groups' backgrounds under what they draw
    for (const row of vis) {
      if (row.kind !== 'proc' && row.kind !== 'group') continue;
      ctx.fillStyle = row.kind === 'proc' ? theme().proc : theme().group;
      ctx.fillRect(LABEL_W, this.sy(row), W - LABEL_W, row.h);
    }
    // the scrolled rows, then the pinned band over them
    for (const band of [vis.filter((r) => !r.pinned), vis.filter((r) => r.pinned)]) {
      if (!band.length) continue;
      const top = band[0].pinned ? AXIS_H : AXIS_H + pinH, bottom = band[0].pinned ? AXIS_H + pinH : H;
      const st = this.drawBand(band, top, bottom, k, overview, primary, hi, ov, pr);
      rects += st.rects; tickMarks += st.tickMarks; labels0 += st.labels0;
    }
    if (pinH) { ctx.fillStyle = theme().axisLine; ctx.fillRect(0, AXIS_H + pinH - 2, W, 2); }
    ctx.save();
    ctx.beginPath();
    ctx.rect(LABEL_W, AXIS_H, W - LABEL_W, H - AXIS_H);
    ctx.clip();
    this.drawOverlays(k);
    this.drawFlows(k);
    ctx.restore();
    this.drawGutter();
    this.drawAxis(k);
    this.lastFrames = { primary: primary ? { url: primary.url, ...pr } : null, overview: overview ? ov : null, labels0 };
    if (act) this.hooks.viewed(this.t0, this.t1, this.plotW, keys);
    this.flows.view(this.t0, this.t1, keys);
    const ms = performance.now() - t;
    this.drawTimes.push(ms);
    if (this.drawTimes.length > 600) this.drawTimes.splice(0, 300);
    this.lastStats = { rects, ms, labels: this.labelsDrawn, tickMarks, primary: this.lastFrames.primary, overview: this.lastFrames.overview,
      rows: vis.flatMap((r) => (r.kind === 'counter' || (r.kind === 'thread' && !r.collapsed) ? [r.key] : [])), drawn: vis.length };
  }

  /**
   * Draws rows (all pinned or all scrolled) clipped to [top, bottom): the overview, then,
   * over its area cleared, the frame that serves the view, then the ring; zone labels and
   * counter lines last.
   * @param {Row[]} band @param {number} top @param {number} bottom @param {number} k
   * @param {Placed | null} overview @param {Placed | null} primary @param {number} hi
   * @param {{ events: number, cells: number }} ov @param {{ events: number, cells: number }} pr
   * @returns {{ rects: number, tickMarks: number, labels0: number }}
   */
  drawBand(band, top, bottom, k, overview, primary, hi, ov, pr) {
    const ctx = this.ctx, b = this.buckets;
    b.clear();
    this.labels.length = 0;
    /** @type {[Lane, number, number, Row][]} lane, name id, y, row */
    const counters = [];
    let tickMarks = 0, labels0 = 0, rects0 = 0;
    ctx.save();
    ctx.beginPath();
    ctx.rect(LABEL_W, top, this.cssW - LABEL_W, bottom - top);
    ctx.clip();
    /** @type {[number, number, number, number][]} the primary frame's area per row: cleared */
    const clear = [];
    // what is in view is counted on the rows that draw a track whole (DrawStats)
    const scratch = { events: 0, cells: 0 };
    /** @param {Row} row */
    const whole = (row) => row.kind === 'counter' || (row.kind === 'thread' && !row.collapsed);
    if (overview) {
      for (const row of band) {
        const y = this.sy(row);
        this.quiet = row.kind === 'group';
        for (const tr of this.tracksOf(row)) {
          const key = trackKey(tr.pid, tr.tid), pt = overview.tracks.get(key);
          if (pt) this.drawPlaced(overview, pt, row, y, k, hi, whole(row) ? ov : scratch);
          if (primary && (!primary.answered || primary.answered.has(key))) {
            const a = Math.max(0, (primary.t0 - this.t0) * k), z = Math.min(this.plotW, (Math.min(primary.t1, hi) - this.t0) * k);
            if (z > a) clear.push([LABEL_W + a, y, z - a, row.h - 1]);
          }
        }
      }
      rects0 = b.fill(ctx);
      b.clear();
      for (const [x, y, w, h] of clear) {
        const row = band.find((r) => this.sy(r) === y);
        ctx.fillStyle = row && row.kind === 'proc' ? theme().proc : row && row.kind === 'group' ? theme().group : theme().bg;
        ctx.fillRect(x, y, w, h);
      }
      // the overview's labels where the primary frame draws its own go
      this.labels = this.labels.filter((l) => !clear.some(([x, y, w, h]) => l[1] >= y && l[1] < y + h && l[0] + l[2] > x && l[0] < x + w));
      labels0 = this.labels.length;
    }
    for (const row of band) {
      const y = this.sy(row);
      this.quiet = row.kind === 'group'; // a group's tracks overlap: no labels
      for (const tr of this.tracksOf(row)) {
        if (primary) {
          const pt = primary.tracks.get(trackKey(tr.pid, tr.tid));
          if (pt) this.drawPlaced(primary, pt, row, y, k, hi, whole(row) ? pr : scratch);
        }
        if (row.kind === 'counter') {
          const lane = row.id >= 0 ? tr.counters.get(row.id) : undefined;
          if (lane) counters.push([lane, row.id, y, row]);
          continue;
        }
        for (let d = 0; d < Math.min(tr.zones.length, row.depth); d++) this.drawZones(tr.zones[d], y + d * LANE_H + 1, LANE_H - 2, k);
        if (tr.instants && row.ih) this.drawInstants(tr.instants, y + row.zh, INST_H - 1, k);
        if (tr.ticks && row.th) tickMarks += this.drawTicks(tr.ticks, y + row.zh + row.ih + 1, TICK_H - 2, k);
      }
    }
    this.quiet = false;
    const rects = rects0 + b.fill(ctx);
    ctx.fillStyle = theme().zoneText;
    ctx.font = '11px sans-serif';
    ctx.textBaseline = 'middle';
    for (const l of this.labels) ctx.fillText(l[3], l[0], l[1]);
    this.labelsDrawn = (this.labelsDrawn || 0) + this.labels.length;
    for (const [lane, id, cy, row] of counters) this.drawCounter(lane, id, cy, k, row);
    ctx.restore();
    return { rects, tickMarks, labels0 };
  }

  /** @param {number} id a name id @returns {number} its colour, or DIM when a search leaves it out */
  colour(id) {
    if (this.search) return this.search[id] ? colourOf(id) : DIM;
    return colourOf(id);
  }

  /**
   * The zones of a lane that start before hi.
   * @param {Lane} lane @param {number} y @param {number} h
   * @param {number} k CSS pixels per ns
   * @param {number} [hi]
   * @returns {number} the events in view
   */
  drawZones(lane, y, h, k, hi = Infinity) {
    lane.ensureSorted();
    const s = lane.s, d = lane.d, nm = lane.name, t0 = this.t0, t1 = this.t1;
    const W = this.plotW, b = this.buckets, labels = this.labels;
    const n = hi === Infinity ? lane.n : lowerBound(s, hi, 0, lane.n);
    let i = lowerBound(s, t0 - lane.maxDur, 0, n), seen = 0;
    let runX0 = 0, runX1 = -10, runC = 0;
    while (i < n) {
      const si = s[i];
      if (si > t1) break;
      const ei = si + d[i];
      if (ei < t0) { i++; continue; }
      seen++;
      const x0 = (si - t0) * k, x1 = (ei - t0) * k;
      if (x1 - x0 >= MIN_W) {
        const a = Math.max(x0, -2), z = Math.min(x1, W + 2), c = this.colour(nm[i]);
        b.add(c, LABEL_W + a, y, z - a - (z - a > 3 ? 1 : 0), h);
        if (z - a > 30 && !this.quiet) labels.push([LABEL_W + a + 3, y + h / 2, z - a - 6, this.label(nm[i], z - a - 6)]);
        i++;
        continue;
      }
      // narrower than MIN_W: merge everything that starts in this pixel
      const px = Math.floor(x0);
      let j = lowerBound(s, t0 + (px + 1) / k, i + 1, n);
      if (j - 1 > i && (d[j - 1] * k >= MIN_W)) j--; // the pixel's last event is wide: its own
      // a frame's events (few a pixel: each is a cell wide or more) counted exactly, the ring's by the pixel
      if (lane.index) { for (let q = i + 1; q < j; q++) if (s[q] <= t1 && s[q] + d[q] >= t0) seen++; }
      else seen += j - i - 1;
      const xe = Math.max(px + 1, (s[j - 1] + d[j - 1] - t0) * k);
      const c = this.search ? (this.anyMatch(nm, i, j) ? HIGHLIGHT_RUN : DIM) : colourOf(nm[i]);
      if (px <= runX1 + 0.5 && c === runC) runX1 = Math.max(runX1, xe);
      else {
        if (runX1 > runX0) b.add(runC, LABEL_W + runX0, y, runX1 - runX0, h);
        runX0 = px; runX1 = xe; runC = c;
      }
      i = j;
    }
    if (runX1 > runX0) b.add(runC, LABEL_W + runX0, y, runX1 - runX0, h);
    return seen;
  }

  /**
   * A frame's track on its row: its long events (zones, per depth), its cells per lane.
   * Counts what is in view into n.
   * @param {Placed} p @param {import('./pages.js').PlacedTrack} pt
   * @param {Row} row its depth lanes and instants (a counter row: its counter) @param {number} y @param {number} k
   * @param {number} hi what starts at or after it is not drawn (the live ring's)
   * @param {{ events: number, cells: number }} n
   */
  drawPlaced(p, pt, row, y, k, hi, n) {
    if (row.kind === 'counter') {
      const r = pt.cells.get(LANE_COUNTER);
      if (r) n.cells += this.drawCounterCells(p, pt, r[0], r[1], y, k, hi, row);
      return;
    }
    for (let d = 0; d < Math.min(pt.zones.length, row.depth); d++) {
      const l = pt.zones[d];
      if (l) n.events += this.drawZones(l, y + d * LANE_H + 1, LANE_H - 2, k, hi);
    }
    for (const [lane, [a, z]] of pt.cells) {
      if (lane < LANE_INSTANT) { if (lane < row.depth) n.cells += this.drawCells(p, a, z, y + lane * LANE_H + 1, LANE_H - 2, k, hi, false); }
      else if (lane === LANE_INSTANT) { if (row.ih) n.cells += this.drawCells(p, a, z, y + row.zh, INST_H - 1, k, hi, true); }
    }
  }

  /**
   * Cells [a, z) of a frame, one lane's: a zone lane's as blocks of the dominant name's
   * colour, paler the less of the cell is busy (in BUSY_LEVELS steps), adjacent ones of one
   * shade as one; an instant lane's as ticks.
   * @param {Placed} p @param {number} a @param {number} z @param {number} y @param {number} h
   * @param {number} k @param {number} hi @param {boolean} ticks
   * @returns {number} the cells in view
   */
  drawCells(p, a, z, y, h, k, hi, ticks) {
    const f = p.f, t0 = this.t0, t1 = this.t1, b = this.buckets, w = p.cellNs, c0 = p.colT0;
    let i = lowerBound(f.cCol, Math.floor((t0 - c0) / w), a, z), seen = 0;
    let runX0 = 0, runX1 = -10, runC = -1;
    for (; i < z; i++) {
      const ts = c0 + f.cCol[i] * w;
      if (ts > t1 || ts >= hi) break;
      if (ts + w < t0) continue;
      seen++;
      const c = this.colour(f.cName[i]);
      const x0 = (ts - t0) * k;
      if (ticks) { b.add(c, LABEL_W + x0, y, 1.5, h); continue; }
      const x1 = Math.max(x0 + 1, (ts + w - t0) * k);
      const lvl = Math.max(1, Math.min(BUSY_LEVELS, Math.ceil(f.cBusy[i] / w * BUSY_LEVELS)));
      const cc = c < NCOL && lvl < BUSY_LEVELS ? SHADES + c * (BUSY_LEVELS - 1) + lvl - 1 : c;
      if (cc === runC && x0 <= runX1 + 0.5) { runX1 = Math.max(runX1, x1); continue; }
      if (runX1 > runX0) b.add(runC, LABEL_W + runX0, y, runX1 - runX0, h);
      runX0 = x0; runX1 = x1; runC = cc;
    }
    if (runX1 > runX0) b.add(runC, LABEL_W + runX0, y, runX1 - runX0, h);
    return seen;
  }

  /**
   * A frame's counter cells [a, z) on a track: per cell a bar from its least to its
   * greatest value, on the scale of the track's cells in the overview (or this frame's).
   * @param {Placed} p @param {import('./pages.js').PlacedTrack} pt @param {number} a
   * @param {number} z @param {number} y @param {number} k @param {number} hi
   * @param {Row} row its row, which takes the axis's range
   * @returns {number} the cells in view
   */
  drawCounterCells(p, pt, a, z, y, k, hi, row) {
    const f = p.f, t0 = this.t0, t1 = this.t1, b = this.buckets, w = p.cellNs, c0 = p.colT0;
    const ov = this.pages.overview, ot = ov && ov.tracks.get(trackKey(pt.vt.pid, pt.vt.tid));
    const range = ot && ot.cells.get(LANE_COUNTER) && ov ? valueRange(ov.f, ot.vt, /** @type {[number, number]} */ (ot.cells.get(LANE_COUNTER))) : valueRange(f, pt.vt, [a, z]);
    const lo = range[0], span = range[1] > range[0] ? range[1] - range[0] : 1, h = COUNTER_H - 8;
    row.lo = range[0]; row.hi = range[1];
    let i = Math.max(a, lowerBound(f.cCol, Math.floor((t0 - c0) / w), a, z) - 1), seen = 0;
    const c = colourOf(f.cName[a]);
    // per cell a bar from its least to its greatest value; from a cell to the next a step at
    // its level (its value when it holds one sample, else the middle of its bar)
    let lastX = NaN, lastY = 0;
    for (; i < z; i++) {
      const ts = c0 + f.cCol[i] * w;
      if (ts >= hi) break;
      const v = pt.vt.v0 + (i - a), y0 = y + 4 + h - (f.cMax[v] - lo) / span * h, y1 = y + 4 + h - (f.cMin[v] - lo) / span * h;
      const x = LABEL_W + (ts - t0) * k, xw = Math.max(1, w * k);
      if (lastX === lastX) {
        b.add(c, lastX, lastY, Math.max(0, x - lastX), 1.5);
        b.add(c, x, Math.min(lastY, y0), 1.5, Math.abs(lastY - y0) + 1.5);
      }
      if (ts > t1) break;
      if (ts + w >= t0) { seen++; b.add(c, x, y0, xw, Math.max(1.5, y1 - y0)); }
      lastX = x + xw; lastY = (y0 + y1) / 2;
    }
    if (lastX === lastX && i >= z) b.add(c, lastX, lastY, Math.max(0, LABEL_W + (Math.min(this.model.maxT, t1) - t0) * k - lastX), 1.5);
    return seen;
  }

  /**
   * @param {Uint32Array} nm a lane's name ids @param {number} i @param {number} j
   * @returns {boolean} whether any of nm[i, j) matches the search (a sample of them past 64)
   */
  anyMatch(nm, i, j) {
    const sr = this.search;
    if (!sr) return false;
    if (j - i > 64) { // a sample is enough to colour a pixel
      const step = Math.floor((j - i) / 64);
      for (let q = i; q < j; q += step) if (sr[nm[q]]) return true;
      return false;
    }
    for (let q = i; q < j; q++) if (sr[nm[q]]) return true;
    return false;
  }

  /**
   * @param {number} id a name id @param {number} w the width it has, CSS pixels
   * @returns {string} the name, cut with an ellipsis to fit ('' when nothing fits)
   */
  label(id, w) {
    const name = this.model.nameOf(id), fit = Math.floor(w / 6.2);
    return name.length <= fit ? name : fit > 1 ? name.slice(0, fit - 1) + '…' : '';
  }

  /** @param {Lane} lane @param {number} y @param {number} h @param {number} k */
  drawInstants(lane, y, h, k) {
    lane.ensureSorted();
    const s = lane.s, nm = lane.name, n = lane.n, t0 = this.t0, t1 = this.t1, b = this.buckets;
    let i = lowerBound(s, t0, 0, n);
    while (i < n && s[i] <= t1) {
      const px = Math.floor((s[i] - t0) * k);
      const j = lowerBound(s, t0 + (px + 1) / k, i + 1, n);
      b.add(this.search ? (this.anyMatch(nm, i, j) ? HIGHLIGHT_RUN : DIM) : colourOf(nm[i]), LABEL_W + px, y, 1.5, h);
      i = j;
    }
  }

  /**
   * Sample ticks (sorted times): one mark per pixel that holds any. Returns the marks.
   * @param {Float64Array} s @param {number} y @param {number} h @param {number} k
   * @returns {number}
   */
  drawTicks(s, y, h, k) {
    const n = s.length, t0 = this.t0, t1 = this.t1, b = this.buckets;
    let i = lowerBound(s, t0, 0, n), marks = 0;
    while (i < n && s[i] <= t1) {
      const px = Math.floor((s[i] - t0) * k);
      b.add(TICK, LABEL_W + px, y, 1, h);
      marks++;
      i = lowerBound(s, t0 + (px + 1) / k, i + 1, n);
    }
    return marks;
  }

  /**
   * A ring's counter series as a step line, on its row's axis (the series' least and
   * greatest value: labelled in the gutter, drawGutter).
   * @param {Lane} lane @param {number} id its name id @param {number} y @param {number} k @param {Row} row
   */
  drawCounter(lane, id, y, k, row) {
    lane.ensureSorted();
    const ctx = this.ctx, s = lane.s, v = lane.d, n = lane.n, t0 = this.t0, t1 = this.t1;
    const lo = lane.min, hi = lane.max > lane.min ? lane.max : lane.min + 1, h = COUNTER_H - 8;
    row.lo = lane.min; row.hi = lane.max;
    /** @param {number} x */
    const yOf = (x) => y + 4 + h - (x - lo) / (hi - lo) * h;
    let i = Math.max(0, lowerBound(s, t0, 0, n) - 1);
    ctx.strokeStyle = COLOURS[colourOf(id)].replace('55%', '70%').replace(/, \d+%\)/, ', 40%)');
    ctx.lineWidth = 1.2;
    ctx.beginPath();
    let first = true, lastY = 0;
    while (i < n) {
      const x = LABEL_W + (s[i] - t0) * k, yy = yOf(v[i]);
      if (first) { ctx.moveTo(Math.max(x, LABEL_W), yy); first = false; } else { ctx.lineTo(x, lastY); ctx.lineTo(x, yy); }
      lastY = yy;
      if (s[i] > t1) break;
      const px = Math.floor((s[i] - t0) * k);
      i = lowerBound(s, t0 + (px + 1) / k, i + 1, n);
    }
    if (!first && i >= n) ctx.lineTo(LABEL_W + (Math.min(this.model.maxT, t1) - t0) * k, lastY);
    ctx.stroke();
  }

  /** @param {number} k */
  drawOverlays(k) {
    const ctx = this.ctx, th = theme();
    const ch = this.counterHover;
    if (ch && this.rows.includes(ch.row)) {
      const y = this.sy(ch.row), x = LABEL_W + (ch.t - this.t0) * k, r = ch.row;
      const span = r.hi > r.lo ? r.hi - r.lo : 1, vy = y + 4 + (COUNTER_H - 8) - (ch.value - r.lo) / span * (COUNTER_H - 8);
      ctx.fillStyle = theme().axisLine;
      ctx.fillRect(x, y, 1, COUNTER_H - 1);
      ctx.fillStyle = theme().label;
      ctx.beginPath();
      ctx.arc(x, vy, 3, 0, Math.PI * 2);
      ctx.fill();
      const text = `${ch.name} ${ch.exact ? '' : '≈ '}${+ch.value.toPrecision(8)}`;
      ctx.font = '11px sans-serif';
      const w = ctx.measureText(text).width + 8, tx = x + 8 + w > this.cssW ? x - 8 - w : x + 8;
      ctx.fillStyle = theme().bg;
      ctx.fillRect(tx, y + 2, w, 15);
      ctx.fillStyle = theme().label;
      ctx.textBaseline = 'middle';
      ctx.fillText(text, tx + 4, y + 10);
    }
    if (this.range) {
      const [r0, r1] = this.range;
      const a = LABEL_W + (Math.min(r0, r1) - this.t0) * k, z = LABEL_W + (Math.max(r0, r1) - this.t0) * k;
      ctx.fillStyle = th.rangeFill;
      ctx.fillRect(a, AXIS_H, Math.max(1, z - a), this.cssH - AXIS_H);
      ctx.strokeStyle = th.rangeLine;
      ctx.strokeRect(a, AXIS_H, Math.max(1, z - a), this.cssH - AXIS_H);
    }
    const sel = this.selected;
    if (sel) {
      const y = this.laneY(sel);
      if (y !== null) {
        const x0 = LABEL_W + (sel.start - this.t0) * k, x1 = LABEL_W + (sel.start + sel.dur - this.t0) * k;
        ctx.strokeStyle = th.select;
        ctx.lineWidth = 2;
        ctx.strokeRect(x0, y, Math.max(2, x1 - x0), sel.lane === 'instant' ? INST_H : LANE_H);
      }
    }
  }

  // The gutter: each row's label (a process's and a thread's with ▸ collapsed or ▾ open, a
  // process's with ▲ ▼ to move it among the processes, a
  // pinned track's with ● and the others' with a pin mark ○ at the right, which pins it), and a
  // counter's y-axis: its greatest value at the top of its line's band, its least at the
  // bottom, right-aligned against the plot, so that no label lies over the line.
  drawGutter() {
    const ctx = this.ctx, H = this.cssH, pinH = this.pinH;
    ctx.fillStyle = theme().gutter;
    ctx.fillRect(0, AXIS_H, LABEL_W, H - AXIS_H);
    ctx.textBaseline = 'middle';
    for (const pass of [false, true]) {
      ctx.save();
      ctx.beginPath();
      ctx.rect(0, pass ? AXIS_H : AXIS_H + pinH, this.cssW, pass ? pinH : H - AXIS_H - pinH);
      ctx.clip();
      for (const row of this.rows) {
        if (row.pinned !== pass) continue;
        const y = this.sy(row);
        if (y + row.h < AXIS_H || y > H) continue;
        /** @param {string} text @param {number} x @param {number} w */
        const fit = (text, x, w) => { // measured in the font set when it is called
          if (ctx.measureText(text).width <= w) return text;
          const tail = (/ \((?:pid )?\d+\)$/.exec(text) || [''])[0]; // a tid or pid after the name is kept
          let n = text.length - tail.length;
          while (n > 1 && ctx.measureText(text.slice(0, n) + '…' + tail).width > w) n--;
          return text.slice(0, n) + '…' + tail;
        };
        if (row.kind === 'proc' || row.kind === 'group') {
          ctx.fillStyle = row.kind === 'proc' ? theme().proc : theme().group;
          ctx.fillRect(0, y, LABEL_W, row.h);
          ctx.fillStyle = theme().procText;
          ctx.font = row.kind === 'proc' ? 'bold 11px sans-serif' : '11px sans-serif';
          const ind = row.kind === 'proc' ? 2 : 12;
          ctx.fillText(`${row.collapsed ? '▸' : '▾'} ${fit(row.label, 0, LABEL_W - ind - (row.kind === 'proc' ? 46 : 18))}`, ind, y + Math.min(row.h, PROC_H) / 2);
          if (row.kind === 'proc') { // moves it up or down among the processes
            ctx.fillStyle = '#78909c';
            ctx.font = '10px sans-serif';
            ctx.fillText('▲', LABEL_W - 30, y + PROC_H / 2);
            ctx.fillText('▼', LABEL_W - 16, y + PROC_H / 2);
          }
          ctx.font = '11px sans-serif';
          ctx.fillStyle = theme().axisLine;
          ctx.fillRect(0, y + row.h - 1, this.cssW, 1);
          continue;
        }
        ctx.fillStyle = theme().label;
        ctx.font = '11px sans-serif';
        const mid = y + Math.min(row.h, LANE_H) / 2 + 1;
        if (row.kind === 'thread') ctx.fillText(`${row.collapsed ? '▸' : '▾'} ${fit(row.label, 0, LABEL_W - 48)}`, 10, mid);
        else {
          ctx.fillText(fit(row.label, 0, LABEL_W - 70), 10, y + 9);
          ctx.font = '10px sans-serif';
          ctx.textAlign = 'right';
          ctx.fillStyle = theme().counterText;
          if (row.hi >= row.lo) {
            ctx.fillText(fmtValue(row.hi), LABEL_W - 6, y + 6);
            ctx.fillText(fmtValue(row.lo), LABEL_W - 6, y + COUNTER_H - 6);
            ctx.fillRect(LABEL_W - 4, y + 4, 4, 1);
            ctx.fillRect(LABEL_W - 4, y + COUNTER_H - 4, 4, 1);
            ctx.fillRect(LABEL_W - 1, y + 4, 1, COUNTER_H - 8);
          }
          ctx.textAlign = 'left';
        }
        ctx.fillStyle = row.pinned ? '#1565c0' : '#b0bec5';
        ctx.fillText(row.pinned ? '●' : '○', LABEL_W - (row.kind === 'counter' ? 60 : 16), row.kind === 'counter' ? y + 9 : mid);
        ctx.fillStyle = theme().rule;
        ctx.fillRect(0, y + row.h - 1, this.cssW, 1);
      }
      ctx.restore();
    }
  }

  /**
   * A click on the gutter at (x, y): a process's or a thread's label collapses or opens it, a
   * group's opens or closes it, a pin mark pins or unpins the track, a process's ▲ or ▼
   * moves it up or down.
   * @param {number} x @param {number} y
   * @returns {boolean} whether it did something
   */
  gutterClick(x, y) {
    const row = this.rowAtY(y);
    if (!row) return false;
    const tk = this.tracks;
    if (row.kind === 'proc' && x >= LABEL_W - 32 && x < LABEL_W - 18) tk.moveProc(row.pid, -1);
    else if (row.kind === 'proc' && x >= LABEL_W - 18 && x < LABEL_W - 2) tk.moveProc(row.pid, 1);
    else if (row.kind === 'proc') tk.toggleProc(row.pid);
    else if (row.kind === 'group') tk.toggleAsync(row.pid);
    else if (!row.track) return false;
    else if (x >= LABEL_W - (row.kind === 'counter' ? 68 : 24) && x < LABEL_W - (row.kind === 'counter' ? 48 : 4)) tk.pin(row.track);
    else if (row.kind === 'thread') tk.toggleThread(row.track);
    else return false;
    return true;
  }

  /** @param {number} y CSS pixels on the canvas @returns {Row | null} the row there */
  rowAtY(y) {
    if (y < AXIS_H) return null;
    const pinned = y < AXIS_H + this.pinH;
    for (const r of this.rows) {
      if (r.pinned !== pinned) continue;
      const top = this.sy(r);
      if (y >= top && y < top + r.h) return r;
    }
    return null;
  }

  /** @param {number} k */
  drawAxis(k) {
    const ctx = this.ctx, W = this.cssW, th = theme();
    ctx.fillStyle = th.axis;
    ctx.fillRect(0, 0, W, AXIS_H);
    ctx.fillStyle = th.axisLine;
    ctx.fillRect(0, AXIS_H - 1, W, 1);
    const span = this.t1 - this.t0, raw = span * 110 / this.plotW;
    const p = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = raw / p < 2 ? 2 * p : raw / p < 5 ? 5 * p : 10 * p;
    ctx.fillStyle = th.axisText;
    ctx.font = '10px sans-serif';
    ctx.textBaseline = 'middle';
    for (let t = Math.ceil(this.t0 / step) * step; t <= this.t1; t += step) {
      const x = LABEL_W + (t - this.t0) * k;
      ctx.fillRect(x, AXIS_H - 7, 1, 6);
      ctx.fillText(fmtAt(t, step), x + 3, 9);
    }
    ctx.fillStyle = th.note;
    ctx.fillText(`view ${fmtDur(span)}`, 6, 9);
  }

  /**
   * Where a selected or hovered event's lane is on screen (null when scrolled away).
   * @param {Hit} info
   * @returns {number | null}
   */
  laneY(info) {
    const row = this.rowOf.get(info.track);
    if (!row) return null;
    const y = this.sy(row);
    if (row.kind !== 'thread') return y + (row.kind === 'proc' ? 1 : 1);
    if (info.lane === 'zone') return y + Math.min(info.depth, Math.max(0, row.depth - 1)) * LANE_H;
    if (info.lane === 'instant') return y + row.zh;
    return null;
  }

  /**
   * What is under (x, y) in CSS pixels of the canvas: an event, or null.
   * @param {number} x @param {number} y
   * @returns {Hit | null}
   */
  hit(x, y) {
    if (x < LABEL_W || y < AXIS_H) return null;
    const row = this.rowAtY(y);
    if (!row || row.kind === 'counter' || (row.kind === 'group' && !row.collapsed)) return null;
    if (row.kind !== 'thread') { // a header or a closed group: the depth-0 zone of the track under it
      for (const t of this.tracksOf(row)) {
        const h = this.hitTrack(row, t, x, y);
        if (h) return h;
      }
      return null;
    }
    return row.track ? this.hitTrack(row, row.track, x, y) : null;
  }

  /**
   * What is under (x, y) of one track drawn in a row.
   * @param {Row} row @param {Track} tr @param {number} x @param {number} y
   * @returns {Hit | null}
   */
  hitTrack(row, tr, x, y) {
    const off = y - this.sy(row), k = this.plotW / (this.t1 - this.t0), tol = 3 / k;
    const t = this.timeAt(x);
    /** @type {Lane | null | undefined} */
    let lane;
    /** @type {'zone' | 'instant'} */
    let kind;
    let depth = 0;
    if (off < row.zh) { depth = Math.min(Math.floor(off / LANE_H), row.depth - 1); lane = tr.zones[depth]; kind = 'zone'; }
    else if (off < row.zh + row.ih) { lane = tr.instants; kind = 'instant'; }
    else return null;
    const ring = lane && lane.n ? this.hitLane(lane, t, tol) : -1;
    if (lane && ring >= 0) {
      // narrower than a pixel: it was drawn merged with the others starting in that pixel
      const merged = lane.d[ring] * k < MIN_W ? lowerBound(lane.s, t + 1.5 / k, 0, lane.n) - lowerBound(lane.s, t - 1.5 / k, 0, lane.n) : 1;
      return { track: tr, lane: kind, depth, index: ring, start: lane.s[ring], dur: lane.d[ring], nameId: lane.name[ring], name: this.model.nameOf(lane.name[ring]), merged };
    }
    if (!this.pages.active || (this.pages.live && t >= this.model.cut)) return null;
    // the frames: the primary where it serves, the overview elsewhere
    const { overview, primary } = this.pages.drawList(this.t0, this.t1);
    for (const p of [primary, overview]) {
      const key = trackKey(tr.pid, tr.tid);
      if (!p || (p === primary && (t < p.t0 || t >= p.t1 || (p.answered && !p.answered.has(key))))) continue;
      const pt = p.tracks.get(key);
      if (!pt) return null;
      const l = kind === 'zone' ? pt.zones[depth] : undefined;
      const i = l ? this.hitLane(l, t, tol) : -1;
      if (l && i >= 0) {
        return { track: tr, lane: kind, depth, index: i, start: l.s[i], dur: l.d[i], nameId: l.name[i],
          name: this.model.nameOf(l.name[i]), merged: 1, event: l.index ? l.index[i] : -1 };
      }
      const r = pt.cells.get(kind === 'zone' ? depth : LANE_INSTANT);
      if (!r) return null;
      const f = p.f, w = p.cellNs, col = Math.floor((t - p.colT0) / w), slack = Math.ceil(tol / w);
      let best = -1;
      for (let c = lowerBound(f.cCol, col - slack, r[0], r[1]); c < r[1] && f.cCol[c] <= col + slack; c++)
        if (best < 0 || Math.abs(f.cCol[c] - col) < Math.abs(f.cCol[best] - col)) best = c;
      if (best < 0) return null;
      const start = p.colT0 + f.cCol[best] * w;
      return { track: tr, lane: kind, depth, index: best, start, dur: kind === 'zone' ? f.cNameDur[best] : 0, nameId: f.cName[best],
        name: this.model.nameOf(f.cName[best]), merged: f.cCount[best], event: -1, cell: { count: f.cCount[best], busy: f.cBusy[best], width: w } };
    }
    return null;
  }

  /**
   * The event of a lane under time t (within tol ns), the last starting at or before it that
   * covers it, or -1.
   * @param {Lane} lane @param {number} t @param {number} tol
   * @returns {number}
   */
  hitLane(lane, t, tol) {
    lane.ensureSorted();
    let i = lowerBound(lane.s, t + tol, 0, lane.n) - 1;
    for (let q = i, seen = 0; q >= 0 && seen < 64; q--, seen++) {
      if (lane.s[q] + lane.d[q] + tol >= t) { i = q; break; }
      if (q === 0 || lane.s[q] < t - lane.maxDur - tol) { i = -1; break; }
    }
    if (i < 0 || lane.s[i] + lane.d[i] + tol < t || lane.s[i] - tol > t) return -1;
    return i;
  }

  /**
   * The names of every zone and instant that overlaps [r0, r1]: [{name, count, total, mean, max}].
   * @param {number} r0 @param {number} r1
   * @returns {import('./panels.js').RangeRow[]}
   */
  rangeTable(r0, r1) {
    /** @type {Map<number, { id: number, count: number, total: number, max: number }>} name id -> its sums */
    const acc = new Map();
    /** @param {Lane} lane */
    const add = (lane) => {
      lane.ensureSorted();
      const s = lane.s, d = lane.d, nm = lane.name, n = lane.n;
      for (let i = lowerBound(s, r0 - lane.maxDur, 0, n); i < n && s[i] <= r1; i++) {
        if (s[i] + d[i] < r0) continue;
        let a = acc.get(nm[i]);
        if (!a) { a = { id: nm[i], count: 0, total: 0, max: 0 }; acc.set(nm[i], a); }
        a.count++; a.total += d[i]; if (d[i] > a.max) a.max = d[i];
      }
    };
    for (const g of this.model.procs.values())
      for (const t of g.threads.values()) {
        for (const l of t.zones) add(l);
        if (t.instants) add(t.instants);
      }
    return [...acc.values()].map((a) => ({ name: this.model.nameOf(a.id), count: a.count, total: a.total, mean: a.total / a.count, max: a.max, p99: NaN, self: NaN }));
  }

  /** @param {number} x the CSS pixel that stays put @param {number} factor the span's, > 1 zooms out */
  zoomAt(x, factor) {
    const tp = this.timeAt(x), m = this.model;
    const full = Math.max(m.maxT - m.minT, 1000) * 4;
    let span = (this.t1 - this.t0) * factor;
    span = Math.min(Math.max(span, 50), Math.max(full, 1e4));
    const f = span / (this.t1 - this.t0);
    this.t0 = tp - (tp - this.t0) * f;
    this.t1 = this.t0 + span;
    this.followAll = false; // still following the live edge, with this span
    this.fitted = false;
    this.invalidate();
  }

  /** @param {Track} track scrolled to, when its row is off screen; opened when collapsed (its process, itself, its async group) */
  scrollTo(track) {
    const tk = this.tracks;
    if (tk.procCollapsed(track.pid)) tk.toggleProc(track.pid);
    if (tk.threadCollapsed(track)) tk.toggleThread(track);
    if (trackKind(track) === 'async' && !tk.asyncOpen(track.pid)) tk.toggleAsync(track.pid);
    if (this.layout !== this.model.layout || this.tracksVersion !== this.tracks.version) this.relayout();
    const row = this.rowOf.get(track);
    if (row && !row.pinned && (row.y < this.scrollY + this.pinH || row.y + row.h > this.scrollY + this.cssH - AXIS_H)) this.scrollY = Math.max(0, row.y - this.pinH - 40);
    this.invalidate();
  }

  /**
   * The track list's choice: the track's row (or the process's header, t null) scrolled to
   * the top of the scrolled rows.
   * @param {Track | null} t @param {number} pid
   */
  jumpTo(t, pid) {
    this.relayout();
    const row = t ? this.rowOf.get(t) : this.rows.find((r) => r.kind === 'proc' && r.pid === pid);
    if (row && !row.pinned) this.scrollY = Math.max(0, row.y - this.pinH);
    this.invalidate();
  }

  /**
   * The deepest zone held (ring or view frames' long events) of a track that covers t.
   * @param {Track} track @param {number} t
   * @returns {[number, number, number] | null} [depth, start, dur]
   */
  zoneAt(track, t) {
    /** @type {[number, number, number] | null} */
    let best = null;
    /** @param {Lane | undefined} l @param {number} d */
    const look = (l, d) => {
      if (!l || !l.n || (best && best[0] >= d)) return;
      const i = this.hitLane(l, t, 0);
      if (i >= 0) best = [d, l.s[i], l.d[i]];
    };
    track.zones.forEach(look);
    const key = trackKey(track.pid, track.tid);
    for (const p of [...this.pages.detail, this.pages.overview]) {
      const pt = p && p.tracks.get(key);
      if (pt) pt.zones.forEach(look);
    }
    return best;
  }

  /**
   * Whether a zone the page holds of a track starts in [a, b).
   * @param {Track} track @param {number} a @param {number} b
   * @returns {boolean}
   */
  startsIn(track, a, b) {
    /** @param {Lane | undefined} l */
    const has = (l) => !!l && l.n > 0 && (l.ensureSorted(), lowerBound(l.s, a, 0, l.n) < lowerBound(l.s, b, 0, l.n));
    if (track.zones.some(has)) return true;
    const key = trackKey(track.pid, track.tid);
    for (const p of [...this.pages.detail, this.pages.overview]) {
      const pt = p && p.tracks.get(key);
      if (pt && pt.zones.some(has)) return true;
    }
    return false;
  }

  /**
   * Selects the deepest zone of a track at time t (a flow's far end) as a click would; when
   * the page does not hold it yet, once a frame that has it arrives.
   * @param {Track} track @param {number} t
   * @returns {boolean} whether it is selected
   */
  selectAt(track, t) {
    const z = this.zoneAt(track, t);
    if (!z) { this.pendingJump = { track, t }; return false; }
    this.pendingJump = null;
    const [depth, start, dur] = z;
    /** @type {Lane | undefined} */
    let lane = track.zones[depth];
    let i = lane ? this.hitLane(lane, t, 0) : -1, event = -1;
    if (i < 0 || !lane) {
      const key = trackKey(track.pid, track.tid);
      for (const p of [...this.pages.detail, this.pages.overview]) {
        const l = p && p.tracks.get(key)?.zones[depth];
        const j = l ? this.hitLane(l, t, 0) : -1;
        if (l && j >= 0) { lane = l; i = j; event = l.index ? l.index[j] : -1; break; }
      }
    }
    if (!lane || i < 0) return false;
    /** @type {Hit} */
    const sel = { track, lane: 'zone', depth, index: i, start, dur, nameId: lane.name[i], name: this.model.nameOf(lane.name[i]), merged: 1, event };
    this.selected = sel;
    this.hooks.select(sel);
    this.invalidate();
    return true;
  }

  /**
   * @returns {import('./flows.js').BoundFlow[]} the selected event's flows in and out, each
   *   with the other end's time (ns from the base) and thread, nearest first in time
   */
  flowsOf() { return this.flows.bound.slice(); }

  /**
   * Jumps to a flow's far end: the view centred on it (its span kept), its track scrolled
   * to, and the zone there selected.
   * @param {import('./flows.js').BoundFlow} f
   */
  jumpFlow(f) {
    const span = this.t1 - this.t0;
    this.t0 = f.other.t - span / 2; this.t1 = f.other.t + span / 2;
    this.fitted = false;
    this.setFollow(false);
    const tr = this.model.track(f.other.pid, f.other.tid);
    this.scrollTo(tr);
    this.selectAt(tr, f.other.t);
    this.invalidate();
  }

  /**
   * The y of a lane's middle where a track is drawn (its own row, or the header or group
   * that holds it), or null when it is not laid out.
   * @param {Track} track @param {number} t the time: its deepest zone there sets the depth
   * @returns {number | null}
   */
  flowY(track, t) {
    const row = this.rowOf.get(track);
    if (!row) return null;
    const y = this.sy(row);
    if (row.kind !== 'thread') return y + Math.min(row.h, LANE_H) / 2;
    const z = this.zoneAt(track, t), d = z ? Math.min(z[0], Math.max(0, row.depth - 1)) : 0;
    return y + d * LANE_H + LANE_H / 2;
  }

  /**
   * The arrows: the selected event's flows (orange; a circle at each far end, which a click
   * jumps to) and, with all flows on, every chain in view (grey-blue).
   * @param {number} k
   */
  drawFlows(k) {
    const ctx = this.ctx, W = this.cssW;
    this.flowEnds = [];
    /** @param {number} x0 @param {number} y0 @param {number} x1 @param {number} y1 */
    const arrow = (x0, y0, x1, y1) => {
      const dx = Math.max(20, Math.abs(x1 - x0) / 3);
      ctx.beginPath();
      ctx.moveTo(x0, y0);
      ctx.bezierCurveTo(x0 + dx, y0, x1 - dx, y1, x1, y1);
      ctx.stroke();
      ctx.beginPath();
      ctx.moveTo(x1, y1);
      ctx.lineTo(x1 - 7, y1 - 4);
      ctx.lineTo(x1 - 7, y1 + 4);
      ctx.closePath();
      ctx.fill();
    };
    /** @param {number} t */
    const xOf = (t) => LABEL_W + (t - this.t0) * k;
    if (this.flows.all) {
      ctx.strokeStyle = 'rgba(69, 90, 160, 0.55)';
      ctx.fillStyle = 'rgba(69, 90, 160, 0.75)';
      ctx.lineWidth = 1;
      for (const c of this.flows.chains)
        for (let i = 0; i + 1 < c.length; i++) {
          const a = c[i], b = c[i + 1];
          const ya = this.flowY(this.model.track(a.pid, a.tid), a.t), yb = this.flowY(this.model.track(b.pid, b.tid), b.t);
          const xa = xOf(a.t), xb = xOf(b.t);
          if (ya === null || yb === null || Math.max(xa, xb) < LABEL_W || Math.min(xa, xb) > W) continue;
          arrow(xa, ya, xb, yb);
        }
    }
    const sel = this.selected;
    if (!sel || !this.flows.bound.length) return;
    ctx.strokeStyle = '#e65100';
    ctx.fillStyle = '#e65100';
    ctx.lineWidth = 2;
    for (const f of this.flows.bound) {
      const here = this.laneY(sel), farY = this.flowY(this.model.track(f.other.pid, f.other.tid), f.other.t);
      if (here === null || farY === null) continue;
      // a far end off screen is drawn at the edge it lies beyond, where a click still takes it
      const far = Math.max(AXIS_H + 6, Math.min(this.cssH - 6, farY));
      const xh = xOf(f.at.t), xf = Math.max(LABEL_W + 6, Math.min(W - 6, xOf(f.other.t))), yh = here + LANE_H / 2;
      if (f.dir === 'out') arrow(xh, yh, xf, far); else arrow(xf, far, xh, yh);
      ctx.beginPath();
      ctx.arc(xf, far, 5, 0, Math.PI * 2);
      ctx.stroke();
      this.flowEnds.push([xf, far, 7, 0, f]);
    }
    ctx.lineWidth = 1;
  }

  /**
   * The value a counter row's series holds at time t: the ring's latest sample at or before
   * it, else the view frames' (a cell of one sample is its value; a cell of more has only
   * its least and greatest, so the service is asked for the samples before t, /events).
   * @param {Row} row @param {number} t
   */
  counterAt(row, t) {
    const tr = row.track;
    if (!tr) return;
    const lane = row.id >= 0 ? tr.counters.get(row.id) : undefined;
    if (lane && lane.n && (!this.pages.live || t >= this.model.cut || !this.pages.active)) {
      lane.ensureSorted();
      const i = lowerBound(lane.s, t + 1e-6, 0, lane.n) - 1;
      this.counterHover = i >= 0 ? { row, t, value: lane.d[i], exact: true, count: 1, name: this.model.nameOf(row.id) } : null;
      return;
    }
    const key = trackKey(tr.pid, tr.tid), { overview, primary } = this.pages.drawList(this.t0, this.t1);
    for (const p of [primary, overview]) {
      if (!p || (p === primary && (t < p.t0 || t >= p.t1 || (p.answered && !p.answered.has(key))))) continue;
      const pt = p.tracks.get(key), r = pt && pt.cells.get(LANE_COUNTER);
      if (!pt || !r) continue;
      const f = p.f, w = p.cellNs, col = Math.floor((t - p.colT0) / w);
      const i = lowerBound(f.cCol, col + 1, r[0], r[1]) - 1; // the last cell at or before t's column
      if (i < r[0]) { this.counterHover = null; return; }
      const name = this.model.nameOf(f.cName[r[0]]), exact = f.cCount[i] === 1;
      this.counterHover = { row, t, value: f.cMax[pt.vt.v0 + (i - r[0])], exact, count: f.cCount[i], name };
      // a cell of many samples: the service's, from the cell before it on
      if (!exact) this.askCounter(row, t, name, p.colT0 + f.cCol[Math.max(r[0], i - 1)] * w);
      return;
    }
    this.counterHover = null;
  }

  /**
   * The service's samples of a counter from `from` to t: the last one is the value at t.
   * @param {Row} row @param {number} t @param {string} name @param {number} from
   */
  async askCounter(row, t, name, from) {
    const mine = ++this.counterAsk, tr = row.track;
    if (!tr || !this.pages.ready) return;
    const q = new URLSearchParams({ name, tracks: trackKey(tr.pid, tr.tid), from_ns: this.model.abs(from).toString(),
      to_ns: (this.model.abs(t) + 1n).toString(), limit: '10000' });
    try {
      const a = /** @type {{ events: { start_ns: number, dur_ns: number }[] }} */ (await api(`/api/captures/${encodeURIComponent(this.pages.name)}/events?${q}`));
      if (mine !== this.counterAsk || !this.counterHover || this.counterHover.row !== row || this.counterHover.t !== t) return;
      const e = a.events[a.events.length - 1];
      if (!e || a.events.length >= 10000) return;
      // dur_ns holds the double's bits (a JSON number: exact for a value whose low bits are 0)
      const bits = BigInt(e.dur_ns);
      F64U32[0] = Number(bits & 0xffffffffn); F64U32[1] = Number(bits >> 32n);
      this.counterHover = { row, t, value: F64[0], exact: true, count: 1, name };
      this.invalidate();
    } catch { /* the cell's value stays, marked approximate */ }
  }

  /** @param {number} dxPx @param {number} dyPx */
  pan(dxPx, dyPx) {
    const dt = dxPx * (this.t1 - this.t0) / this.plotW;
    this.t0 -= dt; this.t1 -= dt;
    if (dxPx !== 0) this.fitted = false;
    this.scrollY -= dyPx;
    if (this.follow && dxPx !== 0) this.setFollow(false);
    this.invalidate();
  }

  bind() {
    const c = this.canvas;
    /** @param {MouseEvent} e @returns {[number, number]} */
    const pos = (e) => { const r = c.getBoundingClientRect(); return [e.clientX - r.left, e.clientY - r.top]; };
    c.addEventListener('wheel', (e) => {
      e.preventDefault();
      const [x] = pos(e);
      if (e.shiftKey && !e.ctrlKey) { this.pan(-e.deltaY, 0); return; }
      this.zoomAt(x, Math.exp(e.deltaY * (e.ctrlKey ? 0.01 : 0.002)));
    }, { passive: false });
    /** @type {Map<number, number>} pointer id -> its x, while down */
    const touches = new Map();
    /** @type {{ x: number, y: number, lx: number, ly: number, moved: boolean, select: boolean } | null} */
    let drag = null;
    /** @type {{ d: number, mid: number } | null} two pointers' distance and middle */
    let pinch = null;
    c.addEventListener('pointerdown', (e) => {
      c.setPointerCapture(e.pointerId);
      const [x, y] = pos(e);
      touches.set(e.pointerId, x);
      if (touches.size === 2) {
        const [a, b] = [...touches.values()];
        pinch = { d: Math.abs(a - b) || 1, mid: (a + b) / 2 };
        drag = null;
        return;
      }
      const select = e.shiftKey || y < AXIS_H;
      drag = { x, y, lx: x, ly: y, moved: false, select };
      if (select) { this.range = [this.timeAt(x), this.timeAt(x)]; this.invalidate(); }
    });
    c.addEventListener('pointermove', (e) => {
      const [x, y] = pos(e);
      this.pointer = [x, y];
      if (pinch && touches.has(e.pointerId)) {
        touches.set(e.pointerId, x);
        const [a, b] = [...touches.values()];
        const d = Math.abs(a - b) || 1;
        this.zoomAt(pinch.mid, pinch.d / d);
        pinch.d = d;
        return;
      }
      if (drag) {
        if (Math.abs(x - drag.x) + Math.abs(y - drag.y) > 3) drag.moved = true;
        // the range is null when Escape cleared it during the drag: nothing to extend
        if (drag.select) { if (this.range) this.range[1] = this.timeAt(x); this.invalidate(); }
        else if (drag.moved) this.pan(x - drag.lx, y - drag.ly);
        drag.lx = x; drag.ly = y;
        this.hooks.hover(null);
        return;
      }
      const h = this.hit(x, y);
      this.hooks.hover(h, e.clientX, e.clientY);
      const row = x >= LABEL_W ? this.rowAtY(y) : null;
      const was = this.counterHover;
      if (row && row.kind === 'counter') this.counterAt(row, this.timeAt(x));
      else this.counterHover = null;
      if (was || this.counterHover) this.invalidate();
    });
    /** @param {PointerEvent} e */
    const up = (e) => {
      touches.delete(e.pointerId);
      if (touches.size < 2) pinch = null;
      if (!drag) return;
      const [x, y] = pos(e);
      if (drag.select && drag.moved) {
        const r = this.range; // null: Escape cleared it during the drag, nothing is selected
        if (r) {
          const [r0, r1] = [Math.min(r[0], r[1]), Math.max(r[0], r[1])];
          this.range = [r0, r1];
          this.hooks.range([r0, r1]);
        }
      } else if (!drag.moved && !drag.select && x < LABEL_W) {
        this.gutterClick(x, y);
      } else if (!drag.moved && !drag.select && this.flowEnds.some((f) => Math.hypot(f[0] - x, f[1] - y) <= f[2])) {
        const end = this.flowEnds.find((f) => Math.hypot(f[0] - x, f[1] - y) <= f[2]);
        if (end) this.jumpFlow(end[4]);
      } else if (!drag.moved) {
        if (drag.select) { this.range = null; this.hooks.range(null); } // as Escape: the panels too
        this.selected = this.hit(x, y);
        this.hooks.select(this.selected);
      }
      drag = null;
      this.invalidate();
    };
    c.addEventListener('pointerup', up);
    c.addEventListener('pointercancel', up);
    c.addEventListener('pointerleave', () => { this.hooks.hover(null); if (this.counterHover) { this.counterHover = null; this.invalidate(); } });
    window.addEventListener('keydown', (e) => {
      const tag = e.target instanceof Element ? e.target.tagName : '';
      if (tag === 'INPUT' || tag === 'TEXTAREA') return;
      if (!this.canvas.offsetParent) return; // not shown (the page shows another view): not its keys
      const x = this.pointer ? this.pointer[0] : LABEL_W + this.plotW / 2;
      const span = this.plotW;
      switch (e.key) {
        case '+': case '=': case 'w': this.zoomAt(x, 0.7); break;
        case '-': case '_': case 's': this.zoomAt(x, 1 / 0.7); break;
        case 'ArrowLeft': case 'a': this.pan(span * 0.2, 0); break;
        case 'ArrowRight': case 'd': this.pan(-span * 0.2, 0); break;
        case 'ArrowUp': this.pan(0, 40); break;
        case 'ArrowDown': this.pan(0, -40); break;
        case 'PageUp': this.pan(0, this.cssH * 0.8); break;
        case 'PageDown': this.pan(0, -this.cssH * 0.8); break;
        case 'f': case '0': this.fit(); break;
        case 'Escape': this.selected = null; this.range = null; this.hooks.select(null); this.hooks.range(null); this.invalidate(); break;
        default: return;
      }
      e.preventDefault();
    });
    window.addEventListener('resize', () => this.invalidate());
  }
}
