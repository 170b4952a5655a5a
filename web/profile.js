// @ts-check
// profile.js: the samples panel below the timeline — a stored capture's sampled call stacks
// as the service sums them (GET /api/captures/NAME/profile, docs/serve.md): a table of the
// top functions by self samples and a flame graph (an icicle: callers above callees, each
// node as wide as its share of the samples), for the whole capture or for the range
// selected on the timeline. The flame graph is DOM: one absolutely placed div per node (the
// service sends at most 5,000), so hovering needs no hit testing and a click on a node
// zooms into it (a click on its top row, "all", back out).
import { fmtDur } from './timeline.js';

/**
 * A node of the flame graph: a function, its samples (at least its children's sum), and its
 * callees by samples, descending.
 * @typedef {{ name: string, value: number, children: FlameNode[] }} FlameNode
 */
/**
 * A function of the top table: its samples innermost (self) and anywhere on the stack (total);
 * file is '' and line 0 when unknown.
 * @typedef {{ function: string, file: string, line: number, module: string, self: number,
 *   total: number }} TopFunction
 */
/**
 * The answer of GET /api/captures/NAME/profile (docs/serve.md, "Profiles"): the samples in
 * [from_ns, to_ns), per thread, the top functions, the flame graph from its root "all", and
 * [tid, time_ns] per sample (thinned past 20,000: ticks_dropped is how many are not there).
 * @typedef {{
 *   capture: string, from_ns: number, to_ns: number, samples: number,
 *   threads: { tid: number, name: string, samples: number }[],
 *   top: TopFunction[], flame: FlameNode, ticks: [number, number][], ticks_dropped: number,
 * }} Profile
 */

const ROW_H = 16;

/** @param {string} path @returns {string} its last component */
function base(path) { const i = path.lastIndexOf('/'); return i < 0 ? path : path.slice(i + 1); }

/** @param {string} name @returns {string} a warm colour per name, the same on every draw */
function hue(name) {
  let h = 0;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193);
  h >>>= 0;
  return `hsl(${8 + h % 42}, ${70 + (h >> 8) % 20}%, ${62 + (h >> 16) % 14}%)`;
}

/**
 * @param {HTMLElement} root
 * @param {string} selector
 * @returns {HTMLElement} the element under root that selector names
 */
function part(root, selector) {
  const el = root.querySelector(selector);
  if (!(el instanceof HTMLElement)) throw new Error(`the samples panel has no ${selector}`);
  return el;
}

export class ProfilePanel {
  /** @param {HTMLElement} root the panel (#profile), with its caption, table and flame graph */
  constructor(root) {
    this.root = root;
    this.caption = part(root, '#profile-caption');
    this.top = part(root, '#profile-top');
    this.flame = part(root, '#flame');
    /** @type {Profile | null} the answer shown */
    this.data = null;
    /** @type {FlameNode | null} the flame node shown as the whole width, or null for the root */
    this.zoom = null;
    /** @type {FlameNode[] | null} the nodes drawn, by their div's data-i */
    this.nodes = null;
    this.flame.addEventListener('click', (e) => {
      const el = e.target instanceof Element ? e.target.closest('.fl') : null;
      if (!(el instanceof HTMLElement) || !this.nodes || !this.data) return;
      const n = this.nodes[Number(el.dataset.i)];
      this.zoom = n === this.data.flame ? null : n;
      this.drawFlame();
    });
  }

  hide() { this.root.hidden = true; this.data = null; this.nodes = null; }

  /**
   * A word in the caption, the panel as it is (an answer that did not come).
   * @param {string} text
   */
  note(text) { if (this.data) this.caption.textContent = text; }

  /**
   * An answer of the endpoint; span: [r0, r1] of the selection in ns, or null for the whole.
   * @param {Profile} data
   * @param {[number, number] | null} span
   */
  show(data, span) {
    this.data = data;
    this.zoom = null;
    this.root.hidden = false;
    const what = span ? `${fmtDur(span[1] - span[0])} selected` : 'the whole capture';
    const n = data.samples.toLocaleString('en');
    this.caption.textContent = `${n} samples of ${data.threads.length} threads in ${what}` +
      (data.ticks_dropped ? ` · 1 tick drawn per ${Math.round(data.samples / data.ticks.length)} samples` : '');
    this.drawTop();
    this.drawFlame();
  }

  drawTop() {
    const d = this.data;
    if (!d) return;
    const t = document.createElement('table');
    t.id = 'profile-table';
    const head = t.createTHead().insertRow();
    for (const k of ['self', 'self %', 'total', 'total %', 'function', 'file', 'module']) {
      const th = document.createElement('th');
      th.textContent = k;
      head.append(th);
    }
    /** @param {number} x */
    const pct = (x) => (d.samples ? (100 * x / d.samples).toFixed(1) : '0.0');
    const body = t.createTBody();
    for (const f of d.top) {
      const tr = body.insertRow();
      for (const v of [f.self.toLocaleString('en'), pct(f.self), f.total.toLocaleString('en'), pct(f.total)]) {
        const td = tr.insertCell();
        td.className = 'num';
        td.textContent = v;
      }
      tr.insertCell().textContent = f.function;
      const file = tr.insertCell();
      file.textContent = f.file ? `${base(f.file)}${f.line ? `:${f.line}` : ''}` : '–';
      file.title = f.file;
      const mod = tr.insertCell();
      mod.textContent = base(f.module);
      mod.title = f.module;
    }
    this.top.textContent = '';
    this.top.append(t);
  }

  drawFlame() {
    const d = this.data;
    if (!d) return;
    const root = this.zoom || d.flame, el = this.flame;
    /** @type {FlameNode[]} */
    const nodes = [];
    const frag = document.createDocumentFragment();
    /** @type {FlameNode[]} the path down to the zoomed node, full width above it */
    const path = [];
    if (this.zoom) {
      /** @param {FlameNode} n @param {FlameNode[]} trail @returns {boolean} */
      const find = (n, trail) => {
        if (n === this.zoom) { path.push(...trail); return true; }
        return n.children.some((c) => find(c, [...trail, n]));
      };
      find(d.flame, []);
    }
    let depth = 0;
    /** @param {FlameNode} n @param {number} x @param {number} w @param {number} deep */
    const place = (n, x, w, deep) => {
      const div = document.createElement('div');
      div.className = 'fl';
      div.dataset.i = String(nodes.length);
      nodes.push(n);
      div.style.left = `${x * 100}%`;
      div.style.width = `${w * 100}%`;
      div.style.top = `${deep * ROW_H}px`;
      div.style.background = n === d.flame ? '#cfd8dc' : hue(n.name);
      div.textContent = n.name;
      const share = d.samples ? ` (${(100 * n.value / d.samples).toFixed(1)}%)` : '';
      div.title = `${n.name}: ${n.value.toLocaleString('en')} samples${share}`;
      frag.append(div);
      if (deep > depth) depth = deep;
    };
    path.forEach((n, i) => place(n, 0, 1, i));
    /** @param {FlameNode} n @param {number} x @param {number} w @param {number} deep */
    const walk = (n, x, w, deep) => {
      place(n, x, w, deep);
      let cx = x;
      for (const c of n.children) {
        const cw = n.value ? w * c.value / n.value : 0;
        if (cw * el.clientWidth >= 0.5) walk(c, cx, cw, deep + 1); // narrower: not drawn
        cx += cw;
      }
    };
    walk(root, 0, 1, path.length);
    const inner = document.createElement('div');
    inner.className = 'flame-inner';
    inner.style.height = `${(depth + 1) * ROW_H}px`;
    inner.append(frag);
    el.textContent = '';
    el.append(inner);
    this.nodes = nodes;
  }
}
