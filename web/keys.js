// @ts-check
// keys.js: the keys a user of a timeline expects, the marks, and the overlay that lists
// every key (? or the header's ? button). The timeline (timeline.js) handles the keys that
// move the view (zoom, pan, scroll, Esc); this module takes the ones that are the page's:
// f fits the selection, m marks, ? shows the keys. Its listener runs in the capture phase
// of the window, before the timeline's, so that its f wins over the timeline's fit-all (0
// still fits the whole capture). KEYS is the one list the overlay shows; a part that adds a
// key adds its line here (tests/browser/shell_test.mjs checks every key the timeline
// handles is listed).
//
// A mark is a vertical line across the timeline at a time: m puts one at the selected
// event's start, or where the pointer is when nothing is selected (the middle of the view
// when the pointer is not on it); m again within 4 px of a mark removes it; shift+m clears
// them all. Each is labelled with its time from the capture's start and, after the first,
// with the time since the mark before it. They are drawn on a layer of the page over the
// canvas (#marks), moved as the view moves, and kept in the URL (session.js, marks=).
import { fmtDur } from './timeline.js';

/** @typedef {import('./timeline.js').Timeline} Timeline */

/** Every key of the page, in the overlay's order: [keys, what they do]. */
export const KEYS = /** @type {const} */ ([
  [['w', '+', '='], 'zoom in around the pointer (the wheel, ctrl+wheel and a pinch too)'],
  [['s', '-', '_'], 'zoom out around the pointer'],
  [['a', '←'], 'pan left (dragging pans too)'],
  [['d', '→'], 'pan right'],
  [['↑', '↓'], 'scroll the rows'],
  [['PageUp', 'PageDown'], 'scroll the rows a screen'],
  [['f'], 'fit the selected event, else the selected range, else the whole capture'],
  [['0'], 'fit the whole capture'],
  [['m'], 'mark the selected event\'s start, else the time under the pointer; again on a mark: remove it'],
  [['shift+m'], 'remove every mark'],
  [['Esc'], 'clear the selection and the range; close this overlay'],
  [['?'], 'show or hide these keys'],
  [['Enter', 'shift+Enter'], 'in the search box: the next or the previous match'],
  [['click'], 'select an event'],
  [['shift+drag'], 'select a range (or drag on the time axis)'],
]);

const MARK_NEAR_PX = 4;

export class Keys {
  /**
   * @param {Timeline} view
   * @param {HTMLElement} layer the layer over the canvas the marks are drawn on
   * @param {HTMLElement} overlay the keys' overlay (hidden until asked for)
   * @param {{ now(ns: number): string }} times how the marks label a time (ns from the base)
   */
  constructor(view, layer, overlay, times) {
    this.view = view;
    this.layer = layer;
    this.overlay = overlay;
    this.times = times;
    /** @type {number[]} the marks, ns from the capture's base, in time order */
    this.marks = [];
    /** @type {string | null} what the layer shows (null: to be drawn): redrawn only when it changes */
    this.drawn = null;
    this.fill();
    window.addEventListener('keydown', (e) => this.key(e), { capture: true });
    overlay.addEventListener('click', (e) => { if (e.target === overlay) this.help(false); });
    const loop = () => { this.place(); requestAnimationFrame(loop); };
    requestAnimationFrame(loop);
  }

  /** The overlay's table, from KEYS. */
  fill() {
    const card = document.createElement('div');
    card.className = 'card';
    const h = document.createElement('h2');
    h.textContent = 'keys';
    const table = document.createElement('table');
    for (const [keys, what] of KEYS) {
      const tr = table.insertRow();
      const k = tr.insertCell();
      for (const key of keys) {
        const kbd = document.createElement('kbd');
        kbd.textContent = key;
        k.append(kbd);
      }
      tr.insertCell().textContent = what;
    }
    const foot = document.createElement('p');
    foot.className = 'hint';
    foot.textContent = 'drop a bundle or a Chrome JSON file on the page to import it · the URL holds the view: copy it to share it';
    card.append(h, table, foot);
    this.overlay.textContent = '';
    this.overlay.append(card);
  }

  /** @param {boolean} [on] shown, hidden, or (undefined) the other */
  help(on) { this.overlay.hidden = on === undefined ? !this.overlay.hidden : !on; }

  /** @param {KeyboardEvent} e */
  key(e) {
    const tag = e.target instanceof Element ? e.target.tagName : '';
    if (tag === 'INPUT' || tag === 'TEXTAREA' || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === '?') this.help();
    else if (e.key === 'Escape' && !this.overlay.hidden) this.help(false);
    else if (e.key === 'f' || e.key === 'F') this.fitSelection();
    else if (e.key === 'm') this.mark();
    else if (e.key === 'M') this.setMarks([]);
    else return;
    e.preventDefault();
    e.stopImmediatePropagation(); // the timeline's listener does not see it
  }

  /** f: the selected event, else the selected range, else the whole capture. */
  fitSelection() {
    const v = this.view, sel = v.selected, r = v.range;
    let a = 0, z = 0;
    if (sel) { a = sel.start; z = sel.start + Math.max(sel.dur, 1); }
    else if (r && r[1] > r[0]) { a = r[0]; z = r[1]; }
    else { v.fit(); return; }
    const pad = Math.max(z - a, 100) * 0.1;
    v.t0 = a - pad; v.t1 = z + pad;
    v.fitted = false;
    v.setFollow(false);
    v.invalidate();
  }

  /** m: a mark at the selected event's start, or at the pointer; on a mark, none there. */
  mark() {
    const v = this.view;
    const t = v.selected ? v.selected.start : v.timeAt(v.pointer ? v.pointer[0] : v.xOf((v.t0 + v.t1) / 2));
    const near = this.marks.findIndex((m) => Math.abs(v.xOf(m) - v.xOf(t)) <= MARK_NEAR_PX);
    if (near >= 0) this.marks.splice(near, 1);
    else this.setMarks([...this.marks, t]);
    this.drawn = null;
  }

  /** @param {number[]} marks ns from the base */
  setMarks(marks) {
    this.marks = marks.filter((m) => Number.isFinite(m)).sort((a, b) => a - b);
    this.drawn = null;
  }

  /** The marks where the view puts them now (each frame; the DOM only when they move). */
  place() {
    const v = this.view;
    const shown = this.marks.map((m) => [m, Math.round(v.xOf(m))]).filter(([, x]) => x >= v.xOf(v.t0) && x <= v.xOf(v.t1));
    const key = shown.map(([m, x]) => `${m}@${x}`).join(',');
    if (key === this.drawn) return;
    this.drawn = key;
    this.layer.textContent = '';
    for (const [m, x] of shown) {
      const i = this.marks.indexOf(m);
      const div = document.createElement('div');
      div.className = 'mark';
      div.style.left = `${x}px`;
      const label = document.createElement('span');
      label.textContent = this.times.now(m) + (i > 0 ? ` · +${fmtDur(m - this.marks[i - 1])}` : '');
      div.append(label);
      this.layer.append(div);
    }
  }
}
