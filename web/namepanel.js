// @ts-check
// namepanel.js: one event name measured, as Tracy's Find Zone does, from the service's
// answers only, so that it costs the same on a capture of any size. The panel shows the
// name's count, total, self time, min, p50, p90, p99 and max and its duration histogram
// (/api/captures/NAME/stats?name=: the sketch's buckets, within 1 %), over the whole capture
// or over a selected range (clip=1, and tracks=). The histogram's x axis is the duration on
// a log scale; its bars gather the sketch's buckets into at most BARS bars of equal log
// width between the least and the greatest duration, and a bar's height is its count. A
// click on a bar lists the instances whose duration falls in it (/events with min_dur_ns
// and max_dur_ns, the first LIST by start); a click on one of them shows it. "slowest" shows
// the longest instance; "‹ previous" and "next ›" the instances before and after the one
// selected (or the first and the last).
//
// Stepping (stepEvent) is shared with the search box (panels.js): instances are in time
// order, by start and then by their index in the capture, so that instances that start at
// the same nanosecond are stepped one by one and every instance is reached exactly once.
import { api } from './session.js';
import { fmtDur } from './timeline.js';

/**
 * An instance as /events answers (docs/serve.md, "Events").
 * @typedef {{ index: number, start_ns: number, dur_ns: number, end_ns: number, pid: number, tid: number,
 *   track: string, depth: number, kind: string, name_id: number }} Found
 */
/**
 * A row of /stats (docs/serve.md, "Statistics").
 * @typedef {{ name: string, name_id: number, count: number, total_ns: number, self_ns: number, min_ns: number,
 *   p50_ns: number, p90_ns: number, p99_ns: number, max_ns: number, hist: [number, number][] }} StatsRow
 */
/**
 * What the panel covers: the whole capture (null), or a range [from_ns, to_ns) in the
 * capture's ns, clipped, on some tracks ('' every one); label says it in words.
 * @typedef {{ from_ns: bigint, to_ns: bigint, tracks: string, label: string } | null} Scope
 */
/**
 * What the panel asks of the page: the capture open and stored ('' none), the event
 * selected now (its start in the capture's ns, its index; null none), show an instance
 * (centre and select it).
 * @typedef {{ capture(): string, current(): { start: bigint, index: number } | null, show(e: Found): void,
 *   names?: () => (string | undefined)[] }} NamePanelHooks (names: the page's names by id)
 */
/** @typedef {{ lo: number, hi: number, count: number }} Bar */

export const BARS = 40;
const LIST = 50;

/**
 * The next (dir 1) or previous (dir -1) instance of a name, after or before cursor (the
 * first or the last without one), in time order (start, then index); null past the end.
 * @param {string} capture
 * @param {{ name: string, match: boolean, ids?: number[], text?: string }} what the name, or
 *   (match) every name containing it; ids, when given, the ids of those names (the page's
 *   names list): asked for by id, which spares the service reading the names (unless they are
 *   too many for a URL); text, instead: every event whose name or attribute values hold it
 * @param {{ start: bigint, index: number } | null} cursor
 * @param {1 | -1} dir
 * @param {{ from_ns?: bigint, to_ns?: bigint, tracks?: string }} [scope]
 * @returns {Promise<Found | null>}
 */
export async function stepEvent(capture, what, cursor, dir, scope = {}) {
  for (let limit = 8; ; limit *= 8) {
    const q = new URLSearchParams({ order: dir > 0 ? 'start' : 'start_desc', limit: String(Math.min(limit, 10000)) });
    const ids = what.ids && what.ids.length ? what.ids.join(',') : '';
    if (what.text) q.set('text', what.text); // in a name or an attribute value
    else if (ids && ids.length <= 3000 && what.ids && what.ids.length <= 1024) q.set('ids', ids);
    else { q.set('name', what.name); if (what.match) q.set('match', '1'); }
    if (scope.tracks) q.set('tracks', scope.tracks);
    let from = scope.from_ns, to = scope.to_ns;
    if (cursor && dir > 0 && (from === undefined || cursor.start > from)) from = cursor.start;
    if (cursor && dir < 0 && (to === undefined || cursor.start + 1n < to)) to = cursor.start + 1n;
    if (from !== undefined) q.set('from_ns', String(from));
    if (to !== undefined) q.set('to_ns', String(to));
    const a = /** @type {{ events: Found[] }} */ (await api(`/api/captures/${encodeURIComponent(capture)}/events?${q}`));
    for (const e of a.events) {
      if (!cursor) return e;
      const s = BigInt(e.start_ns);
      if (dir > 0 ? s > cursor.start || (s === cursor.start && e.index > cursor.index)
        : s < cursor.start || (s === cursor.start && e.index < cursor.index)) return e;
    }
    // every one answered starts where the cursor does: ask for more, unless that was all
    if (a.events.length < limit || limit >= 10000) return null;
  }
}

/**
 * The ids of the names the page holds that pass want.
 * @param {(string | undefined)[]} names the model's names, by id
 * @param {(name: string) => boolean} want
 * @returns {number[]} ascending
 */
export function nameIds(names, want) {
  /** @type {number[]} */
  const ids = [];
  names.forEach((n, id) => { if (n !== undefined && want(n)) ids.push(id); });
  return ids;
}

/**
 * The sketch's buckets in at most n bars of equal log width over [min, max] (ns); a
 * bucket goes to the bar its estimate falls in (clamped to the ends).
 * @param {[number, number][]} hist @param {number} min @param {number} max @param {number} n
 * @returns {Bar[]}
 */
export function histBars(hist, min, max, n) {
  const lo = Math.max(1, min), hi = Math.max(lo + 1, max);
  const distinct = hist.length;
  n = Math.max(1, Math.min(n, distinct));
  const l0 = Math.log(lo), w = (Math.log(hi) - l0) / n;
  /** @type {Bar[]} */
  const bars = [];
  for (let i = 0; i < n; i++) {
    bars.push({ lo: i === 0 ? min : Math.ceil(Math.exp(l0 + i * w)), hi: i === n - 1 ? max : Math.ceil(Math.exp(l0 + (i + 1) * w)) - 1, count: 0 });
  }
  for (const [v, c] of hist) {
    const i = v <= lo ? 0 : Math.min(n - 1, Math.max(0, Math.floor((Math.log(v) - l0) / w)));
    bars[i].count += c;
  }
  return bars;
}

/**
 * An element with a class and a text (the panels' one helper).
 * @param {string} tag @param {string} [cls] @param {string} [text]
 * @returns {HTMLElement}
 */
export function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

export class NamePanel {
  /** @param {HTMLElement} root the panel (#name-panel) @param {NamePanelHooks} hooks */
  constructor(root, hooks) {
    this.root = root;
    this.hooks = hooks;
    this.name = '';
    /** @type {Scope} */
    this.scope = null;
    /** @type {StatsRow | null} */
    this.row = null;
    /** @type {Bar[]} */
    this.bars = [];
    this.ask = 0;
  }

  hide() { this.ask++; this.root.hidden = true; this.name = ''; }

  /**
   * Opens the panel on an event name over scope (null: the whole capture).
   * @param {string} name @param {Scope} [scope]
   */
  async open(name, scope = null) {
    const ask = ++this.ask, capture = this.hooks.capture();
    this.name = name;
    this.scope = scope;
    this.root.hidden = false;
    if (!capture) { this.message(name, 'the name panel needs a capture the service has stored'); return; }
    const q = new URLSearchParams({ name, limit: '1' });
    if (scope) {
      q.set('from_ns', String(scope.from_ns)); q.set('to_ns', String(scope.to_ns)); q.set('clip', '1');
      if (scope.tracks) q.set('tracks', scope.tracks);
    }
    let row = null;
    try {
      const a = /** @type {{ rows: StatsRow[] }} */ (await api(`/api/captures/${encodeURIComponent(capture)}/stats?${q}`));
      row = a.rows[0] || null;
    } catch (e) {
      if (ask === this.ask) this.message(name, `the service could not answer: ${e instanceof Error ? e.message : e}`);
      return;
    }
    if (ask !== this.ask) return;
    this.row = row;
    this.render();
  }

  /** @param {string} name @param {string} text */
  message(name, text) {
    this.root.textContent = '';
    const head = el('div', 'np-head');
    head.append(el('b', 'np-name', name), this.closeButton());
    const m = el('div', 'np-note', text);
    m.id = 'np-note';
    this.root.append(head, m);
  }

  /** @returns {HTMLElement} */
  closeButton() {
    const x = el('button', 'np-close', '×');
    x.title = 'close the name panel';
    x.addEventListener('click', () => this.hide());
    return x;
  }

  render() {
    const r = this.row, root = this.root;
    if (!r) { this.message(this.name, `no ${this.name} ${this.scope ? 'in the range' : 'in the capture'}`); return; }
    root.textContent = '';
    const head = el('div', 'np-head');
    const title = el('b', 'np-name', r.name || this.name);
    title.id = 'np-name';
    const scope = el('span', 'hint', this.scope ? `in ${this.scope.label} (durations cut to it)` : 'in the whole capture');
    head.append(title, scope);
    for (const [id, text, how] of /** @type {[string, string, 'slowest' | 'prev' | 'next'][]} */ (
      [['np-slowest', 'slowest', 'slowest'], ['np-prev', '‹ previous', 'prev'], ['np-next', 'next ›', 'next']])) {
      const b = el('button', '', text);
      b.id = id;
      b.addEventListener('click', () => this.jump(how));
      head.append(b);
    }
    const note = el('span', 'hint');
    note.id = 'np-jump-note';
    head.append(note, this.closeButton());

    const t = el('table');
    t.id = 'np-stats';
    const h = /** @type {HTMLTableElement} */ (t).createTHead().insertRow(), v = /** @type {HTMLTableElement} */ (t).createTBody().insertRow();
    /** @type {[string, string, string][]} */
    const cells = [['count', r.count.toLocaleString('en'), String(r.count)], ['total', fmtDur(r.total_ns), String(r.total_ns)],
      ['self', fmtDur(r.self_ns), String(r.self_ns)], ['min', fmtDur(r.min_ns), String(r.min_ns)], ['p50', fmtDur(r.p50_ns), String(r.p50_ns)],
      ['p90', fmtDur(r.p90_ns), String(r.p90_ns)], ['p99', fmtDur(r.p99_ns), String(r.p99_ns)], ['max', fmtDur(r.max_ns), String(r.max_ns)]];
    for (const [k, text, ns] of cells) {
      const th = el('th', '', k);
      h.append(th);
      const td = v.insertCell();
      td.className = 'num';
      td.textContent = text;
      td.dataset.key = k;
      td.dataset.value = ns; // exact, for the tests
      td.title = k === 'count' ? '' : `${Number(ns).toLocaleString('en')} ns`;
    }

    const hist = el('div');
    hist.id = 'np-hist';
    this.bars = histBars(r.hist, r.min_ns, r.max_ns, BARS);
    const top = Math.max(1, ...this.bars.map((b) => b.count));
    const plot = el('div', 'np-plot');
    this.bars.forEach((b, i) => {
      const bar = el('div', 'np-bar');
      bar.dataset.i = String(i);
      bar.dataset.count = String(b.count);
      bar.title = `${b.count.toLocaleString('en')} between ${fmtDur(b.lo)} and ${fmtDur(b.hi)}: click for them`;
      const fill = el('div', 'np-fill');
      fill.style.height = `${b.count ? Math.max(2, (100 * b.count) / top) : 0}%`;
      bar.append(fill);
      if (b.count) bar.addEventListener('click', () => this.listBar(i));
      plot.append(bar);
    });
    // the axis: the ends, and the bars' lower bounds at a quarter, a half and three quarters
    const axis = el('div', 'np-axis');
    const n = this.bars.length;
    axis.append(el('span', '', fmtDur(r.min_ns)));
    for (const f of [0.25, 0.5, 0.75]) {
      const b = this.bars[Math.floor(n * f)];
      if (n >= 8 && b) axis.append(el('span', '', fmtDur(b.lo)));
      if (f === 0.5) axis.append(el('span', 'hint', 'duration, log scale'));
    }
    axis.append(el('span', '', fmtDur(r.max_ns)));
    hist.append(plot, axis);

    const list = el('div', 'np-list');
    list.id = 'np-list';
    list.append(el('span', 'hint', 'click a bar for its instances'));
    const body = el('div', 'np-body');
    const left = el('div', 'np-left');
    left.append(t, hist);
    body.append(left, list);
    root.append(head, body);
  }

  /**
   * Lists the instances of bar i (the first LIST by start) to click.
   * @param {number} i
   */
  async listBar(i) {
    const b = this.bars[i], capture = this.hooks.capture(), ask = this.ask;
    const list = this.root.querySelector('#np-list');
    if (!b || !capture || !list) return;
    for (const x of this.root.querySelectorAll('.np-bar.on')) x.classList.remove('on');
    const barEl = this.root.querySelector(`.np-bar[data-i="${i}"]`);
    if (barEl) barEl.classList.add('on');
    const q = new URLSearchParams({ name: this.name, order: 'start', limit: String(LIST),
      min_dur_ns: String(Math.max(0, Math.floor(b.lo))), max_dur_ns: String(Math.max(1, Math.ceil(b.hi))) });
    if (this.scope) {
      q.set('from_ns', String(this.scope.from_ns)); q.set('to_ns', String(this.scope.to_ns));
      if (this.scope.tracks) q.set('tracks', this.scope.tracks);
    }
    list.textContent = 'asking the service…';
    let found;
    try {
      found = /** @type {{ events: Found[] }} */ (await api(`/api/captures/${encodeURIComponent(capture)}/events?${q}`)).events;
    } catch (e) {
      if (ask === this.ask) list.textContent = `the service could not answer: ${e instanceof Error ? e.message : e}`;
      return;
    }
    if (ask !== this.ask) return;
    list.textContent = '';
    const first = b.count > found.length ? `, the first ${found.length} by start` : '';
    list.append(el('div', 'hint', `${fmtDur(b.lo)} – ${fmtDur(b.hi)}: ${b.count.toLocaleString('en')}${first}`));
    const ol = el('ol');
    ol.id = 'np-instances';
    for (const e of found) {
      const li = el('li');
      const a = el('a', '', `${fmtDur(e.dur_ns)} at ${e.start_ns.toLocaleString('en')} ns · ${e.track}`);
      a.setAttribute('href', '#');
      a.dataset.start = String(e.start_ns);
      a.addEventListener('click', (ev) => { ev.preventDefault(); this.hooks.show(e); });
      li.append(a);
      ol.append(li);
    }
    list.append(ol);
  }

  /** @param {'slowest' | 'prev' | 'next'} how */
  async jump(how) {
    const capture = this.hooks.capture(), note = this.root.querySelector('#np-jump-note');
    if (!capture) return;
    const sc = this.scope ? { from_ns: this.scope.from_ns, to_ns: this.scope.to_ns, tracks: this.scope.tracks } : {};
    try {
      /** @type {Found | null} */
      let e;
      if (how === 'slowest') {
        const q = new URLSearchParams({ name: this.name, order: 'dur_desc', limit: '1' });
        if (sc.from_ns !== undefined) { q.set('from_ns', String(sc.from_ns)); q.set('to_ns', String(sc.to_ns)); }
        if (sc.tracks) q.set('tracks', sc.tracks);
        e = (/** @type {{ events: Found[] }} */ (await api(`/api/captures/${encodeURIComponent(capture)}/events?${q}`))).events[0] || null;
      } else {
        const cur = this.hooks.current();
        const ids = this.hooks.names ? nameIds(this.hooks.names(), (n) => n === this.name) : undefined;
        e = await stepEvent(capture, { name: this.name, match: false, ids }, cur, how === 'next' ? 1 : -1, sc);
      }
      const which = how === 'slowest' ? 'the slowest' : how === 'next' ? 'the next' : 'the previous';
      if (note) note.textContent = e ? `${which}: ${fmtDur(e.dur_ns)}` : `no ${how === 'prev' ? 'earlier' : 'later'} ${this.name}`;
      if (e) this.hooks.show(e);
    } catch (err) {
      if (note) note.textContent = `${err instanceof Error ? err.message : err}`;
    }
  }
}
