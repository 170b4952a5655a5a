// @ts-check
// tracks.js: which tracks the timeline shows and how — the layout a user makes of a capture
// (collapsed processes and threads, async groups opened, pinned tracks and their order, the
// filter), kept per capture in local storage and in the URL's fragment as layout=, and the
// controls that change it: the filter box, collapse all / expand all, the track list that
// jumps to a track, and clicks on the timeline's gutter (timeline.js calls toggle and pin).
//
// The state is a small serialisable object (get() and set()); encode() writes it as one
// URL-safe string and decode() reads it back:
//
//   layout=c10585.10682~t10585_10600~a10682~p10585_10585.10682_4261412864~fRun%20Task
//
// segments separated by "~", each a letter and a "."-separated list: c the collapsed
// processes (pids), t the collapsed threads (pid_tid), or T the threads whose state differs
// from the default's (below: so a layout of a capture with many threads stays short), a the processes whose async group is
// open (async groups are closed by default), p the pinned tracks in their order (pid_tid),
// o the process order when the user moved one (pids, first on top); f the filter, percent-
// encoded ("~" too), always last. Without t or T the threads are the default's. Ids are decimal; an empty list is left out, and so is
// everything when the layout is the default one ("d" marks a default layout that the user
// has touched, so that it is not replaced by the first screen's choice on the next open).
//
// The default, for a capture seen for the first time: async groups closed; when the capture
// has more than 8 threads, each process shows its busiest thread expanded and its other
// threads as one summary row each, so that the first screen holds many threads rather than
// the deep stacks of three.

/** @typedef {import('./model.js').Model} Model */
/** @typedef {import('./model.js').Track} Track */

/**
 * A layout, as get() gives it and set() takes it: collapsed processes (pids), collapsed
 * threads ("pid:tid"), open async groups (pids), pinned tracks in order ("pid:tid"), the
 * process order (pids; empty: the capture's), the filter, and whether the user made it.
 * threadsDiff, when given, says the collapsed threads as those whose state differs from the
 * default's, which is worked out when the capture's tracks are known.
 * @typedef {{ collapsed: number[], threads: string[], open: number[], pinned: string[],
 *   order: number[], filter: string, touched: boolean, threadsDiff?: string[] }} Layout
 */

const STORE_PREFIX = 'trove.layout.';

/** @param {string} k "pid:tid" @returns {string} "pid_tid" */
const enc = (k) => k.replace(':', '_');
/** @param {string} k "pid_tid" @returns {string} "pid:tid" */
const dec = (k) => k.replace('_', ':');

/**
 * @param {Layout} l
 * @param {Set<string> | null} [def] the default's collapsed threads, when known: the threads
 *   are then written as those that differ from it (T)
 * @returns {string} l as the URL's layout= value ('' for the untouched default)
 */
export function encodeLayout(l, def = null) {
  /** @type {string[]} */
  const seg = [];
  if (l.collapsed.length) seg.push('c' + l.collapsed.join('.'));
  if (def) {
    const now = new Set(l.threads), diff = [...new Set([...now, ...def])].filter((k) => now.has(k) !== def.has(k)).sort();
    if (diff.length) seg.push('T' + diff.map(enc).join('.'));
  } else seg.push('t' + l.threads.map(enc).join('.')); // written even empty: none collapsed
  if (l.open.length) seg.push('a' + l.open.join('.'));
  if (l.pinned.length) seg.push('p' + l.pinned.map(enc).join('.'));
  if (l.order.length) seg.push('o' + l.order.join('.'));
  if (!seg.length && l.touched) seg.push('d');
  if (l.filter) seg.push('f' + encodeURIComponent(l.filter).replace(/~/g, '%7E'));
  return seg.join('~');
}

/**
 * @param {string} s a layout= value
 * @returns {Layout | null} the layout it says, or null when it is not one (nothing is thrown)
 */
export function decodeLayout(s) {
  /** @type {Layout} */
  const l = { collapsed: [], threads: [], open: [], pinned: [], order: [], filter: '', touched: true };
  if (!s) return null;
  const fi = s.search(/(^|~)f/);
  if (fi >= 0) {
    const at = s[fi] === '~' ? fi + 1 : fi;
    try { l.filter = decodeURIComponent(s.slice(at + 1)); } catch { return null; }
    s = s.slice(0, fi);
  }
  const ids = /^\d+$/, keys = /^\d+_\d+$/;
  let absolute = false;
  for (const seg of s ? s.split('~') : []) {
    const kind = seg[0], items = seg.length > 1 ? seg.slice(1).split('.') : [];
    if (kind === 'd' && seg.length === 1) continue;
    if (kind === 'c' || kind === 'a' || kind === 'o') {
      if (!items.every((x) => ids.test(x))) return null;
      (kind === 'c' ? l.collapsed : kind === 'a' ? l.open : l.order).push(...items.map(Number));
    } else if (kind === 't' || kind === 'p' || kind === 'T') {
      if (!items.every((x) => keys.test(x))) return null;
      if (kind === 'T') l.threadsDiff = items.map(dec);
      else (kind === 't' ? l.threads : l.pinned).push(...items.map(dec));
      if (kind === 't') absolute = true;
    } else return null;
  }
  if (!absolute && !l.threadsDiff) l.threadsDiff = []; // no t and no T: the default's threads
  return l;
}

/** @returns {Layout} the layout before anything is decided */
function empty() { return { collapsed: [], threads: [], open: [], pinned: [], order: [], filter: '', touched: false }; }

/**
 * @param {Track} t
 * @returns {'thread' | 'async' | 'counter' | 'frames'} what the track is: /tracks says it for a
 *   stored capture; else a synthetic tid (include/trove/event.h) of counters only is a counter
 *   track, one named "frames" (libtrove-client's frame marks) a frames track, and any other an
 *   async one
 */
export function trackKind(t) {
  if (t.kind === 'async' || t.kind === 'counter' || t.kind === 'thread' || t.kind === 'frames') return t.kind;
  const synthetic = t.tid >= 0xfe000000 && t.tid < 0xff000000;
  if (!synthetic) return 'thread';
  if (t.name === 'frames' || t.name.startsWith('frames: ')) return 'frames';
  return t.zones.length === 0 && !t.instants && !t.vZones && !t.vInstants && (t.counters.size > 0 || t.vCounter) ? 'counter' : 'async';
}

export class Tracks {
  /**
   * @param {Model} model
   * @param {{ changed(): void, jump(t: Track | null, pid: number): void }} hooks a change to
   *   draw again; a track (or a process, t null) chosen in the list
   */
  constructor(model, hooks) {
    this.model = model;
    this.hooks = hooks;
    this.capture = '';
    /** @type {Layout} */
    this.l = empty();
    this.collapsedP = new Set();
    this.collapsedT = new Set();
    this.openA = new Set();
    this.decided = false; // the default has been worked out from the capture's tracks
    /** @type {Set<string> | null} the default's collapsed threads, once worked out */
    this.defaultT = null;
    /** @type {string[] | null} a layout's threads as a difference from the default, until it is known */
    this.pendingDiff = null;
    this.version = 0;     // changes with the layout: the timeline lays its rows out again
    /** @type {HTMLInputElement | null} */
    this.filterBox = null;
    /** @type {HTMLSelectElement | null} */
    this.list = null;
    this.listLayout = -1;
  }

  /** @returns {Layout} a copy of the layout */
  get() {
    const l = this.l;
    return { collapsed: [...this.collapsedP], threads: [...this.collapsedT], open: [...this.openA], pinned: [...l.pinned],
      order: [...l.order], filter: l.filter, touched: l.touched };
  }

  /**
   * Takes a layout (a copy is kept) and shows it.
   * @param {Layout} l
   */
  set(l) {
    this.l = { collapsed: [...l.collapsed], threads: [...l.threads], open: [...l.open], pinned: [...l.pinned], order: [...l.order],
      filter: l.filter || '', touched: !!l.touched };
    this.collapsedP = new Set(this.l.collapsed);
    this.collapsedT = new Set(this.l.threads);
    this.openA = new Set(this.l.open);
    this.decided = true;
    this.pendingDiff = l.threadsDiff ? [...l.threadsDiff] : null;
    this.applyDiff();
    if (this.filterBox && this.filterBox.value !== this.l.filter) this.filterBox.value = this.l.filter;
    this.version++;
    this.hooks.changed();
  }

  /** @returns {string} the layout as the URL's layout= value */
  encoded() { return encodeLayout(this.get(), this.defaultT); }

  /** A layout's threads given as a difference from the default, once the default is known. */
  applyDiff() {
    const def = this.defaultT, diff = this.pendingDiff;
    if (!def || !diff) return;
    this.pendingDiff = null;
    this.collapsedT = new Set(def);
    for (const k of diff) if (!this.collapsedT.delete(k)) this.collapsedT.add(k);
    this.l.threads = [...this.collapsedT];
  }

  /**
   * A capture opens: its layout is the URL's layout= when the fragment has one, else the one
   * kept for it in local storage, else the default (worked out when its tracks are known).
   * @param {string} name
   */
  open(name) {
    this.capture = name;
    this.decided = false;
    this.defaultT = null;
    this.pendingDiff = null;
    this.l = empty();
    this.collapsedP = new Set(); this.collapsedT = new Set(); this.openA = new Set();
    const fromUrl = new URLSearchParams(location.hash.slice(1)).get('layout');
    const l = (fromUrl !== null ? decodeLayout(fromUrl) : null) || this.stored();
    if (l) this.set(l);
    else { this.version++; this.hooks.changed(); }
    if (this.filterBox) this.filterBox.value = this.l.filter;
  }

  /** @returns {Layout | null} the layout local storage keeps for the capture */
  stored() {
    try {
      const s = localStorage.getItem(STORE_PREFIX + this.capture);
      return s ? decodeLayout(s) : null;
    } catch { return null; } // storage refused (a private window): the default
  }

  /** The layout into local storage and the URL's fragment (layout=), after a user's change. */
  save() {
    this.l.touched = true;
    this.l.collapsed = [...this.collapsedP];
    this.l.threads = [...this.collapsedT];
    this.l.open = [...this.openA];
    const s = this.encoded();
    try { localStorage.setItem(STORE_PREFIX + this.capture, s); } catch { /* kept for this page only */ }
    const h = new URLSearchParams(location.hash.slice(1));
    if (h.get('capture') === this.capture) {
      if (s) h.set('layout', s); else h.delete('layout');
      history.replaceState(null, '', `#${h.toString().replace(/%3A/gi, ':').replace(/%7E/gi, '~')}`);
    }
    this.version++;
    this.hooks.changed();
  }

  /**
   * Works out the default layout once the capture's tracks are known (timeline.js asks
   * before each layout): with more than 8 threads, each process's threads but its busiest
   * start collapsed.
   * @param {{ proc: import('./model.js').Proc, threads: Track[] }[]} groups
   */
  decide(groups) {
    if (this.defaultT) return;
    let threads = 0;
    for (const g of groups) for (const t of g.threads) if (trackKind(t) === 'thread') threads++;
    if (threads === 0) return; // nothing known yet: decided when the tracks come
    /** @type {Set<string>} */
    const def = new Set();
    if (threads > 8)
      for (const g of groups) {
        const th = g.threads.filter((t) => trackKind(t) === 'thread');
        const busiest = th.reduce((a, t) => (!a || weight(t) > weight(a) ? t : a), /** @type {Track | null} */ (null));
        for (const t of th) if (t !== busiest) def.add(key(t));
      }
    this.defaultT = def;
    if (!this.decided) { this.collapsedT = new Set(def); this.decided = true; }
    this.applyDiff();
    this.version++;
  }

  /** @param {number} pid @returns {boolean} */
  procCollapsed(pid) { return this.collapsedP.has(pid); }
  /** @param {Track} t @returns {boolean} */
  threadCollapsed(t) { return this.collapsedT.has(key(t)); }
  /** @param {number} pid @returns {boolean} whether its async group is laid out in rows */
  asyncOpen(pid) { return this.openA.has(pid) || !!this.l.filter; }
  /** @param {Track} t @returns {number} its place among the pinned (-1: not pinned) */
  pinIndex(t) { return this.l.pinned.indexOf(key(t)); }

  /** @param {number} pid */
  toggleProc(pid) {
    if (!this.collapsedP.delete(pid)) this.collapsedP.add(pid);
    this.save();
  }

  /** @param {Track} t */
  toggleThread(t) {
    const k = key(t);
    if (!this.collapsedT.delete(k)) this.collapsedT.add(k);
    this.save();
  }

  /** @param {number} pid */
  toggleAsync(pid) {
    if (!this.openA.delete(pid)) this.openA.add(pid);
    this.save();
  }

  /** @param {Track} t pinned to the top (last of the pinned), or unpinned */
  pin(t) {
    const k = key(t), i = this.l.pinned.indexOf(k);
    if (i >= 0) this.l.pinned.splice(i, 1); else this.l.pinned.push(k);
    this.save();
  }

  /**
   * Moves a process up or down among the processes (the layout's order).
   * @param {number} pid @param {number} by -1 up, 1 down
   */
  moveProc(pid, by) {
    const pids = this.model.sortedTracks().map((g) => g.proc.pid);
    const order = this.sortPids(pids);
    const i = order.indexOf(pid), j = i + by;
    if (i < 0 || j < 0 || j >= order.length) return;
    [order[i], order[j]] = [order[j], order[i]];
    this.l.order = order;
    this.save();
  }

  /**
   * @param {number[]} pids the processes in the capture's order
   * @returns {number[]} them in the layout's order (those it does not name after, as they were)
   */
  sortPids(pids) {
    const at = new Map(this.l.order.map((p, i) => [p, i]));
    return pids.map((p, i) => [p, i]).sort((a, b) => (at.has(a[0]) ? /** @type {number} */ (at.get(a[0])) : 1e9 + a[1]) - (at.has(b[0]) ? /** @type {number} */ (at.get(b[0])) : 1e9 + b[1])).map((x) => x[0]);
  }

  /** Every process collapsed. */
  collapseAll() {
    for (const g of this.model.sortedTracks()) this.collapsedP.add(g.proc.pid);
    this.save();
  }

  /** Every process, thread and async group open. */
  expandAll() {
    this.collapsedP.clear();
    this.collapsedT.clear();
    for (const g of this.model.sortedTracks()) this.openA.add(g.proc.pid);
    this.save();
  }

  /** @param {string} f the filter (substring of a process's or a track's name or id, any case) */
  setFilter(f) {
    this.l.filter = f;
    this.save();
  }

  /**
   * @param {import('./model.js').Proc} p @param {Track | null} t a track of it, or null
   * @param {string} label the track's label as the timeline shows it
   * @returns {boolean} whether the filter keeps it: its process's name or pid, or the track's
   *   label, name or tid, contains the filter (any case); a process is kept when it or any
   *   of its tracks is
   */
  keeps(p, t, label = '') {
    const f = this.l.filter.trim().toLowerCase();
    if (!f) return true;
    const pm = `${p.name} ${p.pid}`.toLowerCase().includes(f);
    if (!t) return pm || [...p.threads.values()].some((x) => `${x.name} ${x.tid}`.toLowerCase().includes(f));
    return pm || `${label} ${t.name} ${t.tid}`.toLowerCase().includes(f);
  }

  /**
   * Binds the page's controls (index.html's tracks block: #track-filter, #collapse-all,
   * #expand-all, #track-list, #flows-all); a page without them has none.
   * @param {import('./flows.js').Flows} flows whose "all flows" the checkbox turns on
   */
  bindPage(flows) {
    const $ = (/** @type {string} */ id) => document.getElementById(id);
    const filter = $('track-filter'), collapse = $('collapse-all'), expand = $('expand-all'), list = $('track-list'), all = $('flows-all');
    if (filter instanceof HTMLInputElement && collapse && expand && list instanceof HTMLSelectElement) this.bind({ filter, collapse, expand, list });
    if (all instanceof HTMLInputElement) all.addEventListener('change', () => flows.setAll(all.checked));
  }

  /**
   * The page's controls: the filter box, collapse all / expand all, the track list.
   * @param {{ filter: HTMLInputElement, collapse: HTMLElement, expand: HTMLElement, list: HTMLSelectElement }} el
   */
  bind(el) {
    this.filterBox = el.filter;
    this.list = el.list;
    el.filter.value = this.l.filter;
    el.filter.addEventListener('input', () => this.setFilter(el.filter.value));
    el.collapse.addEventListener('click', () => this.collapseAll());
    el.expand.addEventListener('click', () => this.expandAll());
    el.list.addEventListener('change', () => {
      const v = el.list.value;
      el.list.selectedIndex = 0;
      if (!v) return;
      const [pid, tid] = v.split(':').map(Number);
      if (tid === undefined || Number.isNaN(tid)) { this.hooks.jump(null, pid); return; }
      const p = this.model.procs.get(pid), t = p && p.threads.get(tid);
      if (!t) return;
      // a track jumped to is shown: its process opened, its async group if it is one
      let changed = this.collapsedP.delete(pid);
      if (trackKind(t) === 'async' && !this.openA.has(pid)) { this.openA.add(pid); changed = true; }
      if (changed) this.save();
      this.hooks.jump(t, pid);
    });
  }

  /**
   * The track list's entries, made again when the model's tracks change: each process, then
   * its threads (async and counter tracks in a group of their own).
   * @param {(t: Track) => string} label a thread's label as the timeline shows it
   */
  fillList(label) {
    const sel = this.list;
    if (!sel || this.listLayout === this.model.layout) return;
    this.listLayout = this.model.layout;
    sel.textContent = '';
    const head = document.createElement('option');
    head.value = '';
    head.textContent = 'jump to a track…';
    sel.append(head);
    for (const g of this.model.sortedTracks()) {
      const og = document.createElement('optgroup');
      og.label = `${g.proc.name || 'process'} (pid ${g.proc.pid})`;
      const po = document.createElement('option');
      po.value = `${g.proc.pid}`;
      po.textContent = `${og.label}`;
      og.append(po);
      for (const t of g.threads) {
        const o = document.createElement('option');
        o.value = key(t);
        o.textContent = `  ${label(t)}`;
        og.append(o);
      }
      sel.append(og);
    }
  }
}

/** @param {Track} t @returns {string} its key, "pid:tid" */
export function key(t) { return `${t.pid}:${t.tid}`; }

/** @param {Track} t @returns {number} how busy it is: stored events, else those held */
export function weight(t) { return Math.max(t.stored, t.events); }
