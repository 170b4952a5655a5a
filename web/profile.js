// @ts-check
// profile.js: the samples panel below the timeline — a stored capture's sampled call stacks
// as the service sums them (GET /api/captures/NAME/profile, docs/serve.md): a table of the
// top functions by self samples and a flame graph (an icicle: callers above callees, each
// node as wide as its share of the samples), for the whole capture or for the range
// selected on the timeline. The flame graph is DOM: one absolutely placed div per node (the
// service sends at most 5,000), so hovering needs no hit testing and a click on a node
// zooms into it (a click on its top row, "all", back out).
import { fmtDur } from './timeline.js';

const ROW_H = 16;

function base(path) { const i = path.lastIndexOf('/'); return i < 0 ? path : path.slice(i + 1); }

function hue(name) { // a warm colour per name, the same on every draw
  let h = 0;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193);
  h >>>= 0;
  return `hsl(${8 + h % 42}, ${70 + (h >> 8) % 20}%, ${62 + (h >> 16) % 14}%)`;
}

export class ProfilePanel {
  constructor(root) {
    this.root = root;
    this.caption = root.querySelector('#profile-caption');
    this.top = root.querySelector('#profile-top');
    this.flame = root.querySelector('#flame');
    this.data = null;
    this.zoom = null; // the flame node shown as the whole width, or null for the root
    this.flame.addEventListener('click', (e) => {
      const el = e.target.closest('.fl');
      if (!el || !this.nodes) return;
      const n = this.nodes[+el.dataset.i];
      this.zoom = n === this.data.flame ? null : n;
      this.drawFlame();
    });
  }

  hide() { this.root.hidden = true; this.data = null; this.nodes = null; }

  // A word in the caption, the panel as it is (an answer that did not come).
  note(text) { if (this.data) this.caption.textContent = text; }

  // An answer of the endpoint; span: [r0, r1] of the selection in ns, or null for the whole.
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
    const d = this.data, t = document.createElement('table');
    t.id = 'profile-table';
    const head = t.createTHead().insertRow();
    for (const k of ['self', 'self %', 'total', 'total %', 'function', 'file', 'module']) {
      const th = document.createElement('th');
      th.textContent = k;
      head.append(th);
    }
    const body = t.createTBody(), pct = (x) => (d.samples ? (100 * x / d.samples).toFixed(1) : '0.0');
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
    const d = this.data, root = this.zoom || d.flame, el = this.flame;
    const nodes = [], frag = document.createDocumentFragment();
    // the path down to the zoomed node, full width above it
    const path = [];
    if (this.zoom) {
      const find = (n, trail) => {
        if (n === this.zoom) { path.push(...trail); return true; }
        return n.children.some((c) => find(c, [...trail, n]));
      };
      find(d.flame, []);
    }
    let depth = 0;
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
