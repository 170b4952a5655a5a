// @ts-check
// timeline.js: the timeline on a 2D canvas. Rows: a header per process, then one row per
// thread with its zones stacked by depth, a strip of instant ticks, a line per counter and,
// when the capture has samples, a strip of sample ticks (dark marks, one per pixel).
// Time runs left to right from the capture's first event.
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

/** @typedef {import('./model.js').Model} Model */
/** @typedef {import('./model.js').Track} Track */
/** @typedef {import('./model.js').Lane} Lane */
/** @typedef {import('./pages.js').Pager} Pager */
/** @typedef {import('./pages.js').Placed} Placed */
/**
 * A row of the timeline, y and h in CSS pixels from the top of the rows: a process's header,
 * or a thread with the heights of its zones (zh), instants (ih), counters (ch) and sample
 * ticks (th), top down.
 * @typedef {{ kind: 'proc', y: number, h: number, label: string, track?: undefined }
 *   | { kind: 'thread', y: number, h: number, label: string, track: Track, key: string,
 *       zh: number, ih: number, ch: number, th: number }} Row
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
 *   overview?: { events: number, cells: number } | null, rows?: string[] }} DrawStats
 * (rows: the tracks whose rows are on screen)
 */

const BUSY_LEVELS = 4; // a cell's shade: one step paler per quarter of it not busy
const AXIS_H = 24, LABEL_W = 160, PROC_H = 18, LANE_H = 16, INST_H = 10, COUNTER_H = 36, TICK_H = 7;
const MIN_W = 2; // px: narrower zones are merged
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
 *   note: string, zoneText: string, counterText: string, select: string,
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
    counterText: v('counter-text', '#555'), select: v('select', '#000'),
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
 * @returns {string} ns as a duration in the unit that suits it: 12 ns, 3.5 µs, 1.25 ms, 2 s
 */
export function fmtDur(ns) {
  const a = Math.abs(ns);
  if (a < 1e3) return `${+ns.toFixed(0)} ns`;
  if (a < 1e6) return `${+(ns / 1e3).toPrecision(4)} µs`;
  if (a < 1e9) return `${+(ns / 1e6).toPrecision(4)} ms`;
  return `${+(ns / 1e9).toPrecision(5)} s`;
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
    this.bind();
    const loop = () => {
      if (this.dirty || (this.follow && this.lastData !== this.model.data)) this.draw();
      requestAnimationFrame(loop);
    };
    requestAnimationFrame(loop);
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

  // The rows, recomputed when tracks or names change. A thread is labelled by its name, with
  // its tid where another thread of its process has the same name (a program's "worker"
  // threads, one per round), or by its tid alone when it has none.
  relayout() {
    /** @type {Row[]} */
    const rows = [];
    let y = 0;
    for (const g of this.model.sortedTracks()) {
      const p = g.proc;
      rows.push({ kind: 'proc', y, h: PROC_H, label: `${p.name || 'process'} (pid ${p.pid})` });
      y += PROC_H;
      /** @type {Map<string, number>} thread name -> threads of this process with it */
      const seen = new Map();
      for (const t of g.threads) if (t.name) seen.set(t.name, (seen.get(t.name) || 0) + 1);
      /** @param {Track} t */
      const label = (t) =>
        !t.name ? `thread ${t.tid}` : (seen.get(t.name) || 0) > 1 ? `${t.name} (${t.tid})` : t.name;
      for (const t of g.threads) {
        const zh = Math.max(t.zones.length, t.vZones) * LANE_H, ih = t.instants || t.vInstants ? INST_H : 0;
        const ch = Math.max(t.counters.size, t.vCounter ? 1 : 0) * COUNTER_H;
        const th = t.ticks ? TICK_H : 0;
        const h = Math.max(zh + ih + ch + th, LANE_H) + 2;
        rows.push({ kind: 'thread', y, h, track: t, key: trackKey(t.pid, t.tid), zh, ih, ch, th, label: label(t) });
        y += h;
      }
    }
    this.rows = rows;
    this.totalH = y;
    this.layout = this.model.layout;
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
    if (this.layout !== m.layout) this.relayout();
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
    const b = this.buckets;
    b.clear();
    this.labels.length = 0;
    /** @type {[Lane, number, number][]} lane, name id, y */
    const counters = [];
    const k = this.plotW / (this.t1 - this.t0);
    let tickMarks = 0;
    const pg = this.pages, act = pg.active;
    const { overview, primary } = act ? pg.drawList(this.t0, this.t1) : { overview: null, primary: null };
    const hi = pg.live ? m.cut : Infinity; // frames draw what starts before the ring's cut
    /** @type {{ events: number, cells: number }} */
    const ov = { events: 0, cells: 0 }, pr = { events: 0, cells: 0 };
    /** @type {string[]} the tracks on screen, and a few rows more */
    const keys = [];
    const vis = this.rows.filter((row) => { const y = AXIS_H + row.y - this.scrollY; return !(y + row.h < AXIS_H || y > H); });
    const lo = this.rows.indexOf(vis[0]), up = this.rows.indexOf(vis[vis.length - 1]);
    for (let i = Math.max(0, lo - 4); i <= Math.min(this.rows.length - 1, up + 4) && lo >= 0; i++) {
      const row = this.rows[i];
      if (row.kind === 'thread' && row.track.stored > 0) keys.push(row.key);
    }
    ctx.save();
    ctx.beginPath();
    ctx.rect(LABEL_W, AXIS_H, W - LABEL_W, H - AXIS_H);
    ctx.clip();
    /** @type {[number, number, number, number][]} the primary frame's area per row: cleared */
    const clear = [];
    let labels0 = 0, rects0 = 0;
    if (overview) {
      for (const row of vis) {
        if (row.kind !== 'thread') continue;
        const pt = overview.tracks.get(row.key);
        if (pt) this.drawPlaced(overview, pt, row, AXIS_H + row.y - this.scrollY, k, hi, ov);
        if (primary && (!primary.answered || primary.answered.has(row.key))) {
          const a = Math.max(0, (primary.t0 - this.t0) * k), z = Math.min(this.plotW, (Math.min(primary.t1, hi) - this.t0) * k);
          if (z > a) clear.push([LABEL_W + a, AXIS_H + row.y - this.scrollY, z - a, row.h - 1]);
        }
      }
      rects0 = b.fill(ctx);
      b.clear();
      ctx.fillStyle = th.bg;
      for (const [x, y, w, h] of clear) ctx.fillRect(x, y, w, h);
      // the overview's labels where the primary frame draws its own go
      this.labels = this.labels.filter((l) => !clear.some(([x, y, w, h]) => l[1] >= y && l[1] < y + h && l[0] + l[2] > x && l[0] < x + w));
      labels0 = this.labels.length;
    }
    for (const row of vis) {
      const y = AXIS_H + row.y - this.scrollY;
      if (row.kind !== 'thread') continue;
      const tr = row.track;
      if (primary) {
        const pt = primary.tracks.get(row.key);
        if (pt) this.drawPlaced(primary, pt, row, y, k, hi, pr);
      }
      for (let d = 0; d < tr.zones.length; d++) this.drawZones(tr.zones[d], y + d * LANE_H + 1, LANE_H - 2, k);
      if (tr.instants) this.drawInstants(tr.instants, y + row.zh, INST_H - 1, k);
      let cy = y + row.zh + row.ih;
      for (const [id, lane] of tr.counters) { counters.push([lane, id, cy]); cy += COUNTER_H; }
      if (tr.ticks) tickMarks += this.drawTicks(tr.ticks, y + row.zh + row.ih + row.ch + 1, TICK_H - 2, k);
    }
    const rects = rects0 + b.fill(ctx);
    ctx.fillStyle = th.zoneText;
    ctx.font = '11px sans-serif';
    ctx.textBaseline = 'middle';
    for (const l of this.labels) ctx.fillText(l[3], l[0], l[1]);
    for (const [lane, id, cy] of counters) this.drawCounter(lane, id, cy, k);
    this.drawOverlays(k);
    ctx.restore();
    this.drawGutter();
    this.drawAxis(k);
    this.lastFrames = { primary: primary ? { url: primary.url, ...pr } : null, overview: overview ? ov : null, labels0 };
    if (act) this.hooks.viewed(this.t0, this.t1, this.plotW, keys);
    const ms = performance.now() - t;
    this.drawTimes.push(ms);
    if (this.drawTimes.length > 600) this.drawTimes.splice(0, 300);
    this.lastStats = { rects, ms, labels: this.labels.length, tickMarks, primary: this.lastFrames.primary, overview: this.lastFrames.overview,
      rows: vis.flatMap((r) => (r.kind === 'thread' ? [r.key] : [])) };
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
        if (z - a > 30) labels.push([LABEL_W + a + 3, y + h / 2, z - a - 6, this.label(nm[i], z - a - 6)]);
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
   * @param {Row & { kind: 'thread' }} row @param {number} y @param {number} k
   * @param {number} hi what starts at or after it is not drawn (the live ring's)
   * @param {{ events: number, cells: number }} n
   */
  drawPlaced(p, pt, row, y, k, hi, n) {
    for (let d = 0; d < pt.zones.length; d++) {
      const l = pt.zones[d];
      if (l) n.events += this.drawZones(l, y + d * LANE_H + 1, LANE_H - 2, k, hi);
    }
    for (const [lane, [a, z]] of pt.cells) {
      if (lane < LANE_INSTANT) n.cells += this.drawCells(p, a, z, y + lane * LANE_H + 1, LANE_H - 2, k, hi, false);
      else if (lane === LANE_INSTANT) n.cells += this.drawCells(p, a, z, y + row.zh, INST_H - 1, k, hi, true);
      else n.cells += this.drawCounterCells(p, pt, a, z, y + row.zh + row.ih, k, hi);
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
   * @returns {number} the cells in view
   */
  drawCounterCells(p, pt, a, z, y, k, hi) {
    const f = p.f, t0 = this.t0, t1 = this.t1, b = this.buckets, w = p.cellNs, c0 = p.colT0;
    const ov = this.pages.overview, ot = ov && ov.tracks.get(trackKey(pt.vt.pid, pt.vt.tid));
    const range = ot && ot.cells.get(LANE_COUNTER) && ov ? valueRange(ov.f, ot.vt, /** @type {[number, number]} */ (ot.cells.get(LANE_COUNTER))) : valueRange(f, pt.vt, [a, z]);
    const lo = range[0], span = range[1] > range[0] ? range[1] - range[0] : 1, h = COUNTER_H - 14;
    let i = lowerBound(f.cCol, Math.floor((t0 - c0) / w), a, z), seen = 0;
    const c = colourOf(f.cName[a]);
    for (; i < z; i++) {
      const ts = c0 + f.cCol[i] * w;
      if (ts > t1 || ts >= hi) break;
      if (ts + w < t0) continue;
      seen++;
      const v = pt.vt.v0 + (i - a), y0 = y + 10 + h - (f.cMax[v] - lo) / span * h, y1 = y + 10 + h - (f.cMin[v] - lo) / span * h;
      b.add(c, LABEL_W + (ts - t0) * k, y0, Math.max(1, w * k), Math.max(1.5, y1 - y0));
    }
    this.labels.push([LABEL_W + 4, y + 5, 300, `${this.model.nameOf(f.cName[a])}  ${+range[0].toPrecision(4)} … ${+range[1].toPrecision(4)}`]);
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

  /** @param {Lane} lane @param {number} id its name id @param {number} y @param {number} k */
  drawCounter(lane, id, y, k) {
    lane.ensureSorted();
    const ctx = this.ctx, s = lane.s, v = lane.d, n = lane.n, t0 = this.t0, t1 = this.t1;
    const lo = lane.min, hi = lane.max > lane.min ? lane.max : lane.min + 1, h = COUNTER_H - 8;
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
    ctx.fillStyle = theme().counterText;
    ctx.font = '10px sans-serif';
    ctx.fillText(`${this.model.nameOf(id)}  ${+lo.toPrecision(4)} … ${+hi.toPrecision(4)}`, LABEL_W + 4, y + 8);
  }

  /** @param {number} k */
  drawOverlays(k) {
    const ctx = this.ctx, th = theme();
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

  drawGutter() {
    const ctx = this.ctx, H = this.cssH, th = theme();
    ctx.fillStyle = th.gutter;
    ctx.fillRect(0, AXIS_H, LABEL_W, H - AXIS_H);
    ctx.font = '11px sans-serif';
    ctx.textBaseline = 'middle';
    for (const row of this.rows) {
      const y = AXIS_H + row.y - this.scrollY;
      if (y + row.h < AXIS_H || y > H) continue;
      if (row.kind === 'proc') {
        ctx.fillStyle = th.proc;
        ctx.fillRect(0, y, this.cssW, row.h);
        ctx.fillStyle = th.procText;
        ctx.font = 'bold 11px sans-serif';
        ctx.fillText(row.label, 6, y + row.h / 2);
        ctx.font = '11px sans-serif';
      } else {
        ctx.fillStyle = th.label;
        // too long: the name is cut, a tid after it kept
        const tail = row.label.length > 24 ? (/ \(\d+\)$/.exec(row.label) || [''])[0] : '';
        const label = row.label.length > 24 ? row.label.slice(0, 23 - tail.length) + '…' + tail : row.label;
        ctx.fillText(label, 12, y + Math.min(row.h, LANE_H) / 2 + 1);
        ctx.fillStyle = th.rule;
        ctx.fillRect(0, y + row.h - 1, this.cssW, 1);
      }
    }
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
    for (const row of this.rows) {
      if (row.kind !== 'thread' || row.track !== info.track) continue;
      const y = AXIS_H + row.y - this.scrollY;
      if (info.lane === 'zone') return y + info.depth * LANE_H;
      if (info.lane === 'instant') return y + row.zh;
    }
    return null;
  }

  /**
   * What is under (x, y) in CSS pixels of the canvas: an event, or null.
   * @param {number} x @param {number} y
   * @returns {Hit | null}
   */
  hit(x, y) {
    if (x < LABEL_W || y < AXIS_H) return null;
    const yy = y - AXIS_H + this.scrollY;
    const row = this.rows.find((r) => yy >= r.y && yy < r.y + r.h);
    if (!row || row.kind !== 'thread') return null;
    const tr = row.track, off = yy - row.y, k = this.plotW / (this.t1 - this.t0), tol = 3 / k;
    const t = this.timeAt(x);
    /** @type {Lane | null | undefined} */
    let lane;
    /** @type {'zone' | 'instant'} */
    let kind;
    let depth = 0;
    if (off < row.zh) { depth = Math.floor(off / LANE_H); lane = tr.zones[depth]; kind = 'zone'; }
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
      if (!p || (p === primary && (t < p.t0 || t >= p.t1 || (p.answered && !p.answered.has(row.key))))) continue;
      const pt = p.tracks.get(row.key);
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

  /** @param {Track} track scrolled to, when its row is off screen */
  scrollTo(track) {
    if (this.layout !== this.model.layout) this.relayout();
    const row = this.rows.find((r) => r.track === track);
    if (row && (row.y < this.scrollY || row.y + row.h > this.scrollY + this.cssH - AXIS_H)) this.scrollY = Math.max(0, row.y - 40);
    this.invalidate();
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
    c.addEventListener('pointerleave', () => this.hooks.hover(null));
    window.addEventListener('keydown', (e) => {
      const tag = e.target instanceof Element ? e.target.tagName : '';
      if (tag === 'INPUT' || tag === 'TEXTAREA') return;
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
