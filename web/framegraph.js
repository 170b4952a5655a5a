// @ts-check
// framegraph.js: the frame-time graph of a capture whose program marks its frames
// (libtrove-client's TROVE_FRAME_MARK: frame events of kind 3, extra 255, on a track "frames"
// of their own). One bar per frame, left to right in the order of the frames, its height the
// frame's time; the budget line at 16.7 ms (60 frames a second); a frame within the budget
// is green, one past it orange, one past twice it red. The frames on the timeline's screen
// are drawn brighter. A click on a bar shows that frame on the timeline. More frames than
// pixels: a column shows the slowest of its frames, and a click shows that one.
//
// Where the frames come from: a stored capture's from the service (GET
// /api/captures/NAME/frames, docs/serve.md), a live capture's from the events the page holds
// (model.frames). A capture with several frame sets shows one, chosen in the list beside the
// graph (the default set, "frame", first). The caption says the count, the median and p99
// and how many missed the budget; its data-frames and data-slow are what the tests read.
import { api } from './session.js';
import { fmtDur } from './timeline.js';

export const BUDGET_NS = 16.7e6;
const HEIGHT = 72;

/**
 * @typedef {{ zoom(t0: number, t1: number): void, range(): [number, number] }} FrameHooks
 * (zoom: show [t0, t1] (ns from the base) on the timeline; range: what it shows now)
 */

export class FrameGraph {
  /**
   * @param {HTMLElement} root the panel (#frames-panel): its canvas, caption and set list
   * @param {import('./model.js').Model} model
   * @param {FrameHooks} hooks
   */
  constructor(root, model, hooks) {
    this.root = root;
    this.model = model;
    this.hooks = hooks;
    this.canvas = /** @type {HTMLCanvasElement} */ (root.querySelector('canvas'));
    this.caption = /** @type {HTMLElement} */ (root.querySelector('.frame-caption'));
    this.sets = /** @type {HTMLSelectElement} */ (root.querySelector('select'));
    /** @type {Float64Array} starts (ns from the base) of the set shown, in order */
    this.s = new Float64Array(0);
    /** @type {Float64Array} their durations */
    this.d = new Float64Array(0);
    /** @type {Map<number, { s: number[], d: number[] }>} every set's frames, by name id */
    this.bySet = new Map();
    this.set = -1;
    this.stored = ''; // the stored capture shown ('' a live one: the model's frames)
    this.heldData = -1; // the model's data version the live frames were taken at
    this.ask = 0;
    /** @type {number[]} per column drawn: the frame it stands for */
    this.colFrame = [];
    this.canvas.addEventListener('click', (e) => this.click(e));
    this.sets.addEventListener('change', () => { this.pick(Number(this.sets.value)); this.draw(); });
  }

  /** A capture opened: nothing shown until its frames come. */
  reset() {
    this.ask++;
    this.bySet = new Map();
    this.s = new Float64Array(0);
    this.d = new Float64Array(0);
    this.set = -1;
    this.stored = '';
    this.heldData = -1;
    this.root.hidden = true;
  }

  /**
   * A stored capture's frames, from the service.
   * @param {string} capture
   */
  async load(capture) {
    const ask = ++this.ask;
    this.stored = capture;
    /** @type {{ frames: number, truncated: boolean, rows: { name_id: number, start_ns: number, dur_ns: number }[] }} */
    let a;
    try {
      a = /** @type {typeof a} */ (await api(`/api/captures/${encodeURIComponent(capture)}/frames?limit=100000`));
    } catch { return; } // no graph: the timeline is all there is
    if (ask !== this.ask || !this.model.haveBase) return;
    const base = this.model.baseNs();
    this.bySet = new Map();
    for (const r of a.rows) this.add(r.name_id, r.start_ns - base, r.dur_ns);
    this.chooseSet();
    this.draw();
  }

  /** @param {number} id @param {number} s @param {number} d */
  add(id, s, d) {
    let g = this.bySet.get(id);
    if (!g) { g = { s: [], d: [] }; this.bySet.set(id, g); }
    g.s.push(s);
    g.d.push(d);
  }

  /** A live capture's frames: the ones the page holds, taken again when more came. */
  takeHeld() {
    const m = this.model, f = m.frames;
    if (this.stored || this.heldData === m.data) return;
    this.heldData = m.data;
    if (!f.n) return;
    f.ensureSorted();
    this.bySet = new Map();
    for (let i = 0; i < f.n; i++) this.add(f.name[i], f.s[i], f.d[i]);
    this.chooseSet();
  }

  /** The set shown: the one chosen if it is still there, else "frame", else the first. */
  chooseSet() {
    const ids = [...this.bySet.keys()];
    if (!ids.length) { this.root.hidden = true; return; }
    const m = this.model;
    let id = this.bySet.has(this.set) ? this.set : ids.find((i) => m.nameOf(i) === 'frame');
    if (id === undefined) id = ids[0];
    this.sets.textContent = '';
    for (const i of ids) {
      const o = document.createElement('option');
      o.value = String(i);
      o.textContent = m.nameOf(i);
      o.selected = i === id;
      this.sets.append(o);
    }
    this.sets.hidden = ids.length < 2;
    this.pick(id);
    this.root.hidden = false;
  }

  /** @param {number} id */
  pick(id) {
    const g = this.bySet.get(id);
    this.set = id;
    if (!g) return;
    const order = g.s.map((_, i) => i).sort((a, b) => g.s[a] - g.s[b]);
    this.s = Float64Array.from(order, (i) => g.s[i]);
    this.d = Float64Array.from(order, (i) => g.d[i]);
    const sorted = Float64Array.from(this.d).sort(), n = sorted.length;
    const q = (/** @type {number} */ p) => (n ? sorted[Math.min(n - 1, Math.floor(p * n))] : 0);
    const slow = this.d.filter((x) => x > BUDGET_NS).length;
    this.caption.textContent = `${n.toLocaleString('en')} frames · median ${fmtDur(q(0.5))} · p99 ${fmtDur(q(0.99))} · ` +
      `${slow.toLocaleString('en')} over ${fmtDur(BUDGET_NS)} (${n ? (100 * slow / n).toFixed(1) : 0} %)` +
      ' · click a bar to show its frame';
    this.caption.dataset.frames = String(n);
    this.caption.dataset.slow = String(slow);
    this.ymax = Math.max(2 * BUDGET_NS, q(0.98) * 1.15);
  }

  draw() {
    this.takeHeld();
    if (this.root.hidden) return;
    const c = this.canvas, dpr = window.devicePixelRatio || 1;
    const w = c.clientWidth || 800, h = HEIGHT;
    if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) {
      c.width = Math.round(w * dpr);
      c.height = Math.round(h * dpr);
    }
    const ctx = /** @type {CanvasRenderingContext2D} */ (c.getContext('2d'));
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const css = getComputedStyle(document.documentElement);
    ctx.fillStyle = css.getPropertyValue('--tl-gutter').trim() || '#f4f4f4';
    ctx.fillRect(0, 0, w, h);
    const n = this.s.length, ymax = this.ymax || 2 * BUDGET_NS;
    const [v0, v1] = this.hooks.range();
    const bw = n ? Math.max(1, Math.min(12, Math.floor(w / n))) : 1;
    const cols = n ? Math.min(n, Math.floor(w / bw)) : 0;
    this.colFrame = [];
    for (let col = 0; col < cols; col++) {
      const a = Math.floor(col * n / cols), z = Math.max(a + 1, Math.floor((col + 1) * n / cols));
      let best = a;
      for (let i = a + 1; i < z; i++) if (this.d[i] > this.d[best]) best = i;
      this.colFrame.push(best);
      const dur = this.d[best], bh = Math.max(1, Math.min(h - 2, (dur / ymax) * (h - 2)));
      const seen = this.s[best] + dur > v0 && this.s[best] < v1;
      ctx.fillStyle = dur > 2 * BUDGET_NS ? (seen ? '#e0413a' : '#b9605b') : dur > BUDGET_NS ? (seen ? '#f0a030' : '#c89a5c') : seen ? '#3fae4a' : '#7fa884';
      ctx.fillRect(col * bw, h - bh, Math.max(1, bw - (bw > 3 ? 1 : 0)), bh);
    }
    const by = h - (BUDGET_NS / ymax) * (h - 2);
    ctx.strokeStyle = css.getPropertyValue('--fg').trim() || '#333';
    ctx.setLineDash([4, 3]);
    ctx.beginPath();
    ctx.moveTo(0, by + 0.5);
    ctx.lineTo(w, by + 0.5);
    ctx.stroke();
    ctx.setLineDash([]);
    ctx.fillStyle = ctx.strokeStyle;
    ctx.font = '10px sans-serif';
    ctx.fillText('16.7 ms', 4, Math.max(10, by - 3));
    this.barW = bw;
  }

  /** @param {MouseEvent} e a click on the graph: its bar's frame shown on the timeline */
  click(e) {
    const r = this.canvas.getBoundingClientRect(), col = Math.floor((e.clientX - r.left) / (this.barW || 1));
    const i = this.colFrame[col];
    if (i === undefined) return;
    const pad = this.d[i] * 0.05;
    this.hooks.zoom(this.s[i] - pad, this.s[i] + this.d[i] + pad);
  }

  /**
   * Where the bar of frame i is, for the tests: its centre in client coordinates.
   * @param {number} i
   * @returns {[number, number] | null}
   */
  barAt(i) {
    const col = this.colFrame.indexOf(i), r = this.canvas.getBoundingClientRect();
    if (col < 0) return null;
    return [r.left + (col + 0.5) * (this.barW || 1), r.top + HEIGHT - 2];
  }
}
