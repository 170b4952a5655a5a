// @ts-check
// panels.js: what the page shows around the timeline. The stats line (counts, throughput
// over the last half second, the state of the connection); the details: the tooltip of the
// event under the pointer, the table of the selected event and the sortable table of the
// names in a selected range; the samples: once a capture has come whole (its end), its
// samples are asked for (/api/captures/NAME/profile) and become ticks on the timeline and
// the samples panel (profile.js), asked again for a range selected on the timeline. A
// capture without samples, or one the store does not hold (404), shows no panel. And the
// search box's count of the events whose names match.
// The range table's rows come from the service (/stats?clip=1: every event that overlaps the
// range, its duration cut to it) for a stored capture, with each name's min, median, p99
// and self time, over every track, the tracks on screen or the selected thread; only a
// capture the service has not stored yet has them counted over the events the page holds.
// A row opens the name panel (namepanel.js) for that range. The selected event's table
// gives its exact start and duration, its thread and process, the zones around it and its
// flows when the page has them. The search box steps through the matching events (Finder).
// The panels read the model and the stats: the session (session.js) fills them, and app.js
// tells the panels when to draw. The details and the search also move the timeline, as a
// user would: they centre an event they found and select it (Details.show).
import { fmtDur } from './timeline.js';
import { ProfilePanel } from './profile.js';
import { api, apiExact } from './session.js';
import { stepEvent, nameIds } from './namepanel.js';

/** @typedef {import('./model.js').Model} Model */
/** @typedef {import('./timeline.js').Timeline} Timeline */
/** @typedef {import('./session.js').Stats} Stats */
/** @typedef {import('./profile.js').Profile} Profile */
/**
 * An event the timeline hit (Timeline.hit): its track, lane kind, depth, times in ns from
 * the capture's base, its name, and how many events its pixel merges; from a view frame,
 * its index in the capture (event; -1 unknown) or the cell it is.
 * @typedef {{ track: { pid: number, tid: number, name: string }, lane: string, depth: number,
 *   start: number, dur: number, name: string, merged: number, event?: number,
 *   cell?: { count: number, busy: number, width: number } }} EventInfo
 */
/**
 * An attribute of an event (docs/formats/attrs.md): from an attrs frame (wire.js) or the
 * service's /attrs answer (docs/serve.md), where scope is a word and an int a number.
 * @typedef {{ scope: number | string, key: string, type: number | string, value: unknown }} Attr
 */
/** @param {Attr} a @returns {string} its scope as a word: arg, field or trace */
function scopeOf(a) { return typeof a.scope === 'string' ? a.scope : ['arg', 'field', 'trace'][a.scope] || 'arg'; }
/** @param {Attr} a @returns {string} its value as the details show it */
function attrText(a) {
  const v = a.value;
  if (typeof v === 'string') return v;
  if (typeof v === 'bigint' || typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}
const ATTR_CACHE = 512; // events' attributes the details keep, by index in the capture

/**
 * A name's row of the range table: min, median, p99 and self are the service's (NaN or
 * absent when counted here).
 * @typedef {{ name: string, count: number, total: number, mean: number, max: number, p99: number, self: number,
 *   min?: number, median?: number }} RangeRow
 */
/**
 * What the details ask of the page: show the slowest instance of a name, or the next one
 * starting after `from` (ns from the base), when the details cannot ask the service
 * themselves.
 * @typedef {{ jump(name: string, how: 'slowest' | 'next', from: number): void }} DetailsHooks
 */

/**
 * @param {string} id
 * @returns {HTMLElement} the page's element of that id (index.html has each one the code names)
 */
function $(id) {
  const el = document.getElementById(id);
  if (!el) throw new Error(`the page has no #${id}`);
  return el;
}

// ---- the stats line ----------------------------------------------------------------------

export class StatsLine {
  /**
   * @param {Stats} stats
   * @param {() => string} paged what the view frames held say (pages.js), '' for none
   */
  constructor(stats, paged) {
    this.stats = stats;
    this.paged = paged;
    // the counts at the start of the throughput window
    this.lastBytes = 0; this.lastDecodeUs = 0; this.lastBatches = 0;
    this.lastAt = performance.now();
  }

  render() {
    const stats = this.stats, now = performance.now(), dt = (now - this.lastAt) / 1000;
    if (stats.bytes < this.lastBytes || stats.batches < this.lastBatches) { // another capture opened
      this.lastBytes = 0; this.lastDecodeUs = 0; this.lastBatches = 0;
    }
    if (dt >= 0.5) {
      stats.mbps = (stats.bytes - this.lastBytes) / dt / 1e6;
      if (stats.batches > this.lastBatches) stats.decodeUsPerBatch = (stats.decodeUs - this.lastDecodeUs) / (stats.batches - this.lastBatches);
      this.lastBytes = stats.bytes; this.lastDecodeUs = stats.decodeUs; this.lastBatches = stats.batches;
      this.lastAt = now;
    }
    const bpe = stats.events ? (stats.bytes / stats.events).toFixed(1) : '–';
    const state = stats.error ? 'error' : stats.stopped ? 'service stopped' : stats.ended ? 'ended'
      : stats.connected ? (stats.from === 'replay' ? 'replaying' : 'live') : 'idle';
    const paged = this.paged();
    if (stats.from === 'view') {
      $('stats').textContent = `events ${stats.events.toLocaleString('en')} · ${paged} · ${state === 'ended' ? 'stored' : state}`;
      return;
    }
    $('stats').textContent = `events ${stats.events.toLocaleString('en')} · ${bpe} B/event · wire ${stats.wire || '–'} · ` +
      `${stats.mbps.toFixed(2)} MB/s · decode ${stats.decodeUsPerBatch.toFixed(0)} µs/batch · ` +
      `drops ${stats.gapEvents.toLocaleString('en')} (${stats.gaps} gaps) · ${paged ? `${paged} · ` : ''}${state}`;
  }
}

// ---- the details: tooltip, selection, range table --------------------------------------

/** @typedef {import('./namepanel.js').Found} Found */
/**
 * A flow of the selected event, if the page has them (another module may give them through
 * Details.flowsOf): in or out, the other end's name, its start (ns from the base), its track.
 * @typedef {{ dir: 'in' | 'out', name: string, start: number, dur: number, depth: number,
 *   track: import('./model.js').Track, jump?: () => void }} FlowEnd
 */
/**
 * An enclosing zone of the selected event, as the page holds it.
 * @typedef {{ name: string, nameId: number, start: number, dur: number, depth: number, event: number }} Parent
 */

export class Details {
  /** @param {Model} model @param {DetailsHooks} hooks */
  constructor(model, hooks) {
    this.model = model;
    this.hooks = hooks;
    this.note = '';
    /** @type {RangeRow[] | null} */
    this.rows = null;
    /** @type {[number, number] | null} */
    this.span = null;
    /** @type {{ key: keyof RangeRow, desc: boolean }} */
    this.sort = { key: 'total', desc: true };
    /** @type {Timeline | null} */
    this.view = null;
    /** @type {import('./pages.js').Pager | null} */
    this.pager = null;
    /** @type {import('./namepanel.js').NamePanel | null} */
    this.names = null;
    /** @type {((sel: EventInfo) => FlowEnd[]) | null} the flows of an event, when a module gives them */
    this.flowsOf = null;
    /** @type {'all' | 'screen' | 'thread'} which tracks the range table covers */
    this.rangeTracks = 'all';
    /** @type {string} the tracks= of the range table's answer ('' every one) */
    this.rangeKeys = '';
    this.rangeAsk = 0;
    /** @type {[string, string] | null} the range the service was asked for, in the capture's ns */
    this.rangeNs = null;
    /** @type {Map<string, Promise<number>>} the index of a cell's one event, asked for (capture:track:lane:start) */
    this.cellIndex = new Map();
    /** @type {Map<string, Promise<Attr[]>>} a stored capture's events' attributes asked for (capture:index) */
    this.attrCache = new Map();
    this.selAsk = 0;
    this.tipAsk = 0;
  }

  /**
   * The attributes of an event: a stored capture's from the service (/attrs?event=I, for an
   * event whose index in the capture the view knows), a live one's from those the page holds
   * (attrs frames). null when there are none to know (a cell, an event without an index).
   * @param {EventInfo} info
   * @returns {Promise<Attr[] | null>}
   */
  async attrsOf(info) {
    const capture = this.stored();
    if (info.cell && info.cell.count === 1 && capture && this.model.haveBase) {
      // a cell of one event (an instant is never drawn on its own from view frames): which
      // one, from the service, then its attributes
      const key = `${capture}:${info.track.pid}:${info.track.tid}:${info.lane}:${info.start}`;
      let idx = this.cellIndex.get(key);
      if (idx === undefined) {
        const m = this.model, from = m.abs(info.start), to = m.abs(info.start + info.cell.width);
        const q = new URLSearchParams({ name: info.name, from_ns: `${from}`, to_ns: `${to}`, tracks: `${info.track.pid}:${info.track.tid}`, limit: '1' });
        idx = api(`/api/captures/${encodeURIComponent(capture)}/events?${q}`).then((a) => {
          const e = /** @type {{ events: { index: number }[] }} */ (a).events[0];
          return e ? e.index : -1;
        });
        this.cellIndex.set(key, idx);
        for (const k of this.cellIndex.keys()) { if (this.cellIndex.size <= ATTR_CACHE) break; this.cellIndex.delete(k); }
      }
      const i = await idx;
      return i < 0 ? null : this.attrsOf({ ...info, cell: undefined, event: i });
    }
    if (info.cell) return null;
    if (capture && info.event !== undefined && info.event >= 0) {
      const key = `${capture}:${info.event}`;
      let rows = this.attrCache.get(key); // asked once, however often the pointer comes back
      if (!rows) {
        rows = apiExact(`/api/captures/${encodeURIComponent(capture)}/attrs?event=${info.event}`).then((a) => /** @type {{ attrs: Attr[] }} */ (a).attrs);
        rows.catch(() => this.attrCache.delete(key));
        this.attrCache.set(key, rows);
        for (const k of this.attrCache.keys()) { if (this.attrCache.size <= ATTR_CACHE) break; this.attrCache.delete(k); }
      }
      return rows;
    }
    return this.model.attrsOf(info.track.pid, info.track.tid, info.lane === 'instant' ? -1 : info.depth, info.start) || null;
  }

  /**
   * The selected event's attributes, as a table after its own (#selection-attrs): its
   * category first, then its args, then the other members it carries; a message's text.
   * @param {EventInfo} info @param {HTMLElement} el the box of the selection's tables
   */
  async showAttrs(info, el) {
    const ask = ++this.selAsk;
    /** @type {Attr[] | null} */
    let rows;
    try { rows = await this.attrsOf(info); } catch { rows = null; }
    if (ask !== this.selAsk || !rows || !rows.length) return;
    const order = (/** @type {Attr} */ a) => (scopeOf(a) === 'field' && a.key === 'cat' ? 0 : scopeOf(a) === 'arg' ? 1 : 2);
    const t = document.createElement('table');
    t.id = 'selection-attrs';
    const cap = t.createCaption();
    cap.textContent = 'attributes';
    for (const a of [...rows].sort((x, y) => order(x) - order(y))) {
      const sc = scopeOf(a), tr = t.insertRow();
      tr.insertCell().textContent = sc === 'field' && a.key === 'cat' ? 'category' : sc === 'field' && a.key === 'log_message' ? 'message'
        : sc === 'arg' ? a.key : `${a.key} (${sc})`;
      const td = tr.insertCell();
      td.textContent = attrText(a);
      td.dataset.key = `attr:${a.key}`;
      td.dataset.scope = sc;
      td.className = 'attr-value';
    }
    el.append(t);
  }

  /**
   * What the details use beyond the model: the timeline (zoom, selection, frames held), the
   * pager (a stored capture's name) and the name panel.
   * @param {Timeline} view @param {import('./pages.js').Pager} pager @param {import('./namepanel.js').NamePanel} names
   */
  attach(view, pager, names) {
    this.view = view;
    this.pager = pager;
    this.names = names;
  }

  /** @returns {string} the capture the service has stored and the page shows, or '' */
  stored() {
    const p = this.pager;
    return p && p.ready ? p.name : '';
  }

  /** @returns {number | undefined} the ns a pixel of the view: the digits times need */
  res() {
    const v = this.view;
    return v ? (v.t1 - v.t0) / v.plotW : undefined;
  }

  /**
   * @param {{ pid: number, tid: number, name: string }} t a track
   * @returns {string} its thread's name, ids and process
   */
  threadLabel(t) {
    const p = this.model.procs.get(t.pid);
    return `${t.name || t.tid} (${t.pid}:${t.tid})${p && p.name ? ` · ${p.name}` : ''}`;
  }

  /**
   * The tooltip: the event under the pointer at client (cx, cy), or none. Its times carry
   * the digits the zoom needs.
   * @param {EventInfo | null} info
   * @param {number} [cx]
   * @param {number} [cy]
   */
  hover(info, cx = 0, cy = 0) {
    const tip = $('tooltip');
    if (!info) { tip.hidden = true; this.tipAsk++; return; }
    tip.hidden = false;
    tip.textContent = '';
    const res = this.res();
    const b = document.createElement('b');
    b.textContent = info.name;
    const c = info.cell;
    if (c) {
      tip.append(b, document.createElement('br'),
        `${c.count.toLocaleString('en')} ${c.count === 1 ? 'event' : 'events'} from ${fmtDur(info.start, res)} over ${fmtDur(c.width)}` +
        (info.lane === 'instant' ? '' : `, busy ${fmtDur(Math.min(c.busy, c.width * 2))}`),
        document.createElement('br'), `the longest ${info.name}${info.lane === 'instant' ? '' : ` (${fmtDur(info.dur)})`} · zoom in for each`,
        document.createElement('br'), `thread ${this.threadLabel(info.track)}`);
      b.textContent = `${info.name}${c.count > 1 ? ' and others' : ''}`;
    } else {
      tip.append(b, document.createElement('br'),
        `start ${fmtDur(info.start, res)} · ${info.lane === 'instant' ? 'instant' : `duration ${fmtDur(info.dur, res)}`}`,
        document.createElement('br'), `thread ${this.threadLabel(info.track)}`);
      if (info.merged > 1) tip.append(document.createElement('br'), `(${info.merged.toLocaleString('en')} events within 3 px here: zoom in)`);
    }
    tip.style.left = `${cx + 14}px`;
    tip.style.top = `${cy + 14}px`;
    // a message (an instant whose attributes say log_message): its text, when it is known
    const ask = ++this.tipAsk;
    if ((!c || c.count === 1) && info.lane === 'instant')
      this.attrsOf(info).then((rows) => {
        const m = rows && rows.find((a) => a.key === 'log_message');
        if (!m || ask !== this.tipAsk || tip.hidden) return;
        const q = document.createElement('div');
        q.className = 'tip-message';
        q.textContent = `“${attrText(m).slice(0, 300)}”`;
        tip.append(q);
      }).catch(() => {});
  }

  /**
   * The zones that enclose sel on its thread, innermost first, as far as the page holds
   * them (the live ring, the view frames' long events); null where a depth is not held.
   * @param {EventInfo} sel
   * @returns {(Parent | null)[]}
   */
  parents(sel) {
    const v = this.view, out = /** @type {(Parent | null)[]} */ ([]);
    if (!v || sel.lane !== 'zone') return out;
    const tr = this.model.track(sel.track.pid, sel.track.tid), key = `${sel.track.pid}:${sel.track.tid}`;
    const frames = this.pager ? [...this.pager.detail, ...(this.pager.overview ? [this.pager.overview] : [])] : [];
    for (let d = sel.depth - 1; d >= 0; d--) {
      /** @type {Parent | null} */
      let found = null;
      /** @type {[import('./model.js').Lane | undefined, boolean][]} */
      /** @type {[import('./model.js').Lane | undefined, boolean][]} the ring's lane, then the frames' */
      const lanes = [[tr.zones[d], false]];
      for (const p of frames) lanes.push([p.tracks.get(key)?.zones[d], true]);
      for (const [l, framed] of lanes) {
        if (!l || !l.n) continue;
        const i = v.hitLane(l, sel.start, 0);
        if (i < 0 || l.s[i] > sel.start || l.s[i] + l.d[i] < sel.start + sel.dur) continue;
        found = { name: this.model.nameOf(l.name[i]), nameId: l.name[i], start: l.s[i], dur: l.d[i], depth: d, event: framed && l.index ? l.index[i] : -1 };
        break;
      }
      out.push(found);
    }
    return out;
  }

  /**
   * The selected event's table: its name (a click opens the name panel), exact start and
   * duration, thread and process, depth, the zones that enclose it, its flows (when the page
   * has them), its index; and the buttons that step through its name's instances.
   * @param {EventInfo | null} info the selected event, or none
   */
  select(info) {
    const el = $('selection');
    el.textContent = '';
    if (!info) { this.selAsk++; el.textContent = 'click an event to select it; shift+drag a range for its table'; return; }
    const res = this.res(), m = this.model;
    const abs = m.haveBase ? m.abs(info.start) : null;
    /** @type {[string, string | HTMLElement][]} */
    const rows = [];
    const nameLink = document.createElement('a');
    nameLink.href = '#';
    nameLink.id = 'sel-name';
    nameLink.textContent = info.cell ? `${info.name} (the longest of ${info.cell.count.toLocaleString('en')})` : info.name;
    nameLink.title = `the name panel: every ${info.name}, its statistics and histogram`;
    nameLink.addEventListener('click', (e) => { e.preventDefault(); if (this.names) this.names.open(info.name); });
    rows.push(['name', nameLink]);
    rows.push(['start', `${fmtDur(info.start, res)}${abs !== null ? ` (${abs.toLocaleString('en')} ns)` : ''}`]);
    if (info.cell) rows.push(['cell', fmtDur(info.cell.width)]);
    else rows.push(['duration', info.lane === 'instant' ? '(instant)' : `${fmtDur(info.dur, res)} (${Math.round(info.dur).toLocaleString('en')} ns)`]);
    const p = m.procs.get(info.track.pid);
    rows.push(['thread', `${info.track.name || info.track.tid} (tid ${info.track.tid})`]);
    rows.push(['process', `${p && p.name ? p.name : 'process'} (pid ${info.track.pid})`]);
    rows.push(['depth', String(info.depth)]);
    if (!info.cell && info.depth > 0) {
      const chain = document.createElement('span');
      chain.id = 'sel-parents';
      this.parents(info).forEach((par, k) => {
        if (k) chain.append(' ‹ ');
        if (!par) { chain.append('(not held at this zoom)'); return; }
        const a = document.createElement('a');
        a.href = '#';
        a.textContent = par.name;
        a.title = `${fmtDur(par.dur, res)} from ${fmtDur(par.start, res)}`;
        a.addEventListener('click', (e) => {
          e.preventDefault();
          this.showHit({ track: info.track, lane: 'zone', depth: par.depth, start: par.start, dur: par.dur, name: par.name, merged: 1, event: par.event });
        });
        chain.append(a);
      });
      rows.push(['inside', chain]);
    }
    const flows = this.flowsOf && !info.cell ? this.flowsOf(info) : null;
    if (flows && flows.length) {
      const f = document.createElement('span');
      f.id = 'sel-flows';
      flows.forEach((fe, k) => {
        if (k) f.append(', ');
        const a = document.createElement('a');
        a.href = '#';
        a.textContent = `${fe.dir === 'in' ? '← from' : '→ to'} ${fe.name}`;
        a.addEventListener('click', (e) => {
          e.preventDefault();
          if (fe.jump) fe.jump(); // the timeline's own jump to the far end
          else this.showHit({ track: fe.track, lane: 'zone', depth: fe.depth, start: fe.start, dur: fe.dur, name: fe.name, merged: 1 });
        });
        f.append(a);
      });
      rows.push(['flows', f]);
    }
    if (info.event !== undefined && info.event >= 0) rows.push(['index', String(info.event)]);
    const t = document.createElement('table');
    t.id = 'selection-table';
    for (const [k, v] of rows) {
      const tr = t.insertRow();
      tr.insertCell().textContent = k;
      const td = tr.insertCell();
      if (typeof v === 'string') td.textContent = v; else td.append(v);
      td.dataset.key = k;
    }
    const bar = document.createElement('div');
    /** @type {['slowest' | 'prev' | 'next', string][]} */
    const buttons = [['slowest', 'slowest ›'], ['prev', '‹ previous'], ['next', 'next ›']];
    for (const [how, text] of buttons) {
      const btn = document.createElement('button');
      btn.id = `jump-${how}`;
      btn.textContent = text;
      btn.title = how === 'slowest' ? `show the longest ${info.name} of the capture` : `show the ${how === 'next' ? 'next' : 'previous'} ${info.name}`;
      btn.addEventListener('click', () => this.stepName(info, how));
      bar.append(btn);
    }
    const note = document.createElement('span');
    note.id = 'jump-note';
    note.className = 'hint';
    bar.append(' ', note);
    bar.className = 'sel-buttons';
    const tables = document.createElement('div'); // the event's table, and its attributes' beside it
    tables.className = 'sel-tables';
    tables.append(t);
    el.append(bar, tables);
    this.showAttrs(info, tables);
  }

  /**
   * The slowest, previous or next instance of the selected event's name, shown.
   * @param {EventInfo} info @param {'slowest' | 'prev' | 'next'} how
   */
  async stepName(info, how) {
    const note = () => document.getElementById('jump-note');
    if (how === 'slowest') { this.hooks.jump(info.name, 'slowest', info.start); return; }
    try {
      const dir = how === 'next' ? 1 : -1, m = this.model;
      /** @type {Found | null} */
      let e = null;
      if (this.stored() && !(this.pager && this.pager.live)) {
        const ids = nameIds(m.names, (n) => n === info.name);
        e = await stepEvent(this.stored(), { name: info.name, match: false, ids }, this.current(info), dir);
      } else { // a live capture: the instances the page holds, from the selected one
        const all = heldMatches(m, (n) => n === info.name);
        const k = all.findIndex((x) => x.s === info.start && x.pid === info.track.pid && x.tid === info.track.tid && x.depth === info.depth);
        if (k >= 0 && all[k + dir]) e = heldFound(m, all[k + dir], -1);
      }
      if (!e) { const n = note(); if (n) n.textContent = `no ${how === 'next' ? 'later' : 'earlier'} ${info.name}`; return; }
      this.show(e);
      const n = note();
      if (n) n.textContent = `the ${how === 'next' ? 'next' : 'previous'}: ${fmtDur(e.dur_ns)}`;
    } catch (err) {
      const n = note();
      if (n) n.textContent = `${err instanceof Error ? err.message : err}`;
    }
  }

  /**
   * Where an event is, as a cursor for stepping: its start in the capture's ns and its index
   * (-1 unknown: then the instances that start with it are all stepped past).
   * @param {EventInfo | null} [info] default: the timeline's selection
   * @returns {{ start: bigint, index: number } | null}
   */
  current(info) {
    const sel = info || (this.view ? this.view.selected : null);
    if (!sel || !this.model.haveBase) return null;
    return { start: this.model.abs(sel.start), index: sel.event !== undefined && sel.event >= 0 ? sel.event : -1 };
  }

  /**
   * Shows an event the service found: the view centred on it, its row scrolled to, and
   * selected.
   * @param {Found} e
   */
  show(e) {
    const m = this.model;
    this.showHit({ track: m.track(e.pid, e.tid), lane: e.kind === 'instant' || e.kind === 'async-instant' ? 'instant' : 'zone',
      depth: e.depth, start: m.rel(BigInt(e.start_ns)), dur: e.dur_ns, name: m.nameOf(e.name_id), merged: 1, event: e.index }, e.name_id);
  }

  /**
   * @param {EventInfo} info @param {number} [nameId]
   */
  showHit(info, nameId) {
    const v = this.view;
    if (!v) return;
    const tr = this.model.track(info.track.pid, info.track.tid);
    // the zoom is kept while the event is at least a pixel wide and fits; else the event
    // takes a fifth of the view
    let span = v.t1 - v.t0;
    if (!(info.dur * 1.25 <= span) || info.dur < span / v.plotW) span = Math.max(info.dur * 5, 5000);
    const mid = info.start + info.dur / 2;
    v.t0 = mid - span / 2; v.t1 = mid + span / 2;
    v.fitted = false;
    if (v.follow) v.setFollow(false);
    /** @type {import('./timeline.js').Hit} */
    const sel = { track: tr, lane: /** @type {'zone' | 'instant'} */ (info.lane), depth: info.depth, index: -1, start: info.start, dur: info.dur,
      nameId: nameId !== undefined ? nameId : this.model.names.indexOf(info.name), name: info.name, merged: 1, event: info.event };
    v.selected = sel;
    v.scrollTo(tr);
    v.invalidate();
    this.select(sel);
  }

  /**
   * A range selected on the timeline ([r0, r1] ns from the base; null: cleared): its table
   * from the service (/stats, clip=1: every event that overlaps it, its time cut to it),
   * over every track, the tracks on screen, or the selected event's thread; a capture not
   * stored has it counted over the events the page holds.
   * @param {[number, number] | null} span
   */
  async askRange(span) {
    const ask = ++this.rangeAsk;
    if (!span) { this.range(null); return; }
    const [r0, r1] = span, v = this.view, m = this.model, capture = this.stored();
    let why = '';
    if (capture && !(this.pager && this.pager.live)) {
      const from = r0 <= m.minT ? m.abs(m.minT) : m.abs(r0), to = m.abs(r1) + 1n;
      let keys = '';
      if (this.rangeTracks === 'screen' && v && v.lastStats.rows) keys = v.lastStats.rows.slice(0, 1024).join(',');
      if (this.rangeTracks === 'thread' && v && v.selected) keys = `${v.selected.track.pid}:${v.selected.track.tid}`;
      this.rangeKeys = keys;
      this.range([], r0, r1, 'asking the service…');
      this.rangeNs = [String(from), String(to)];
      try {
        const q = `from_ns=${from}&to_ns=${to}&clip=1&limit=500${keys ? `&tracks=${keys}` : ''}`;
        const a = /** @type {import('./pages.js').StatsAnswer} */ (await api(`/api/captures/${encodeURIComponent(capture)}/stats?${q}`));
        if (ask !== this.rangeAsk) return;
        const rows = a.rows.map((r) => ({ name: r.name || m.nameOf(r.name_id), count: r.count, total: r.total_ns, mean: r.total_ns / r.count,
          min: r.min_ns, median: r.p50_ns, max: r.max_ns, p99: r.p99_ns, self: r.self_ns }));
        const on = this.rangeTracks === 'thread' && v && v.selected ? ` on ${this.threadLabel(v.selected.track)}`
          : keys ? ` on the ${keys.split(',').length} tracks on screen` : '';
        const most = a.names > rows.length ? `; the ${rows.length} names of most time of ${a.names}` : '';
        this.range(rows, r0, r1, `every event that overlaps it${on}, its time cut to the range${most}`);
        return;
      } catch (e) {
        why = ` (the service: ${e instanceof Error ? e.message : e})`;
      }
      if (ask !== this.rangeAsk) return;
    }
    this.rangeKeys = '';
    this.rangeNs = null;
    this.range(v ? v.rangeTable(r0, r1) : [], r0, r1, `the events this page holds${why}`);
  }

  /**
   * The range table: the names in the selected range [r0, r1] (ns), or none; note says
   * where its rows come from.
   * @param {RangeRow[] | null} rows
   * @param {number} [r0]
   * @param {number} [r1]
   * @param {string} [note]
   */
  range(rows, r0 = 0, r1 = 0, note = '') {
    this.rows = rows;
    this.span = rows ? [r0, r1] : null;
    this.note = note;
    this.renderRange();
  }

  renderRange() {
    const el = $('range');
    el.textContent = '';
    if (!this.rows || !this.span) return;
    const { key, desc } = this.sort;
    const rows = [...this.rows].sort((a, b) => {
      const x = a[key], y = b[key];
      const c = typeof x === 'string' ? x.localeCompare(/** @type {string} */ (y)) : (x ?? 0) - /** @type {number} */ (y ?? 0);
      return desc ? -c : c;
    });
    const cap = document.createElement('div');
    cap.id = 'range-caption';
    if (this.rangeNs) { cap.dataset.from = this.rangeNs[0]; cap.dataset.to = this.rangeNs[1]; cap.dataset.tracks = this.rangeKeys; }
    cap.textContent = `${fmtDur(this.span[1] - this.span[0], this.res())} selected: ${rows.length} names${this.note ? ` · ${this.note}` : ''} · `;
    const pick = document.createElement('select');
    pick.id = 'range-tracks';
    for (const [k, text] of [['all', 'every track'], ['screen', 'the tracks on screen'], ['thread', 'the selected thread']]) {
      const o = document.createElement('option');
      o.value = k; o.textContent = text;
      o.selected = k === this.rangeTracks;
      pick.append(o);
    }
    pick.addEventListener('change', () => {
      this.rangeTracks = /** @type {'all' | 'screen' | 'thread'} */ (pick.value);
      if (this.span) this.askRange(this.span);
    });
    cap.append(pick);
    const t = document.createElement('table');
    t.id = 'range-table';
    const head = t.createTHead().insertRow();
    for (const k of /** @type {(keyof RangeRow)[]} */ (['name', 'count', 'total', 'mean', 'max', 'p99', 'self', 'min', 'median'])) {
      const th = document.createElement('th');
      th.textContent = k + (k === key ? (desc ? ' ▼' : ' ▲') : '');
      th.dataset.key = k;
      th.addEventListener('click', () => {
        this.sort = { key: k, desc: this.sort.key === k ? !this.sort.desc : k !== 'name' };
        this.renderRange();
      });
      head.append(th);
    }
    const body = t.createTBody();
    const [r0, r1] = this.span;
    for (const r of rows.slice(0, 200)) {
      const tr = body.insertRow();
      tr.dataset.name = r.name;
      tr.dataset.total = String(r.total);
      tr.title = `the name panel of ${r.name} in this range`;
      tr.addEventListener('click', () => {
        const m = this.model, names = this.names;
        if (!names || !m.haveBase) return;
        names.open(r.name, { from_ns: r0 <= m.minT ? m.abs(m.minT) : m.abs(r0), to_ns: m.abs(r1) + 1n, tracks: this.rangeKeys,
          label: `the ${fmtDur(r1 - r0, this.res())} selected${this.rangeKeys ? ` on ${this.rangeKeys.split(',').length} tracks` : ''}` });
      });
      tr.insertCell().textContent = r.name;
      /** @param {number | undefined} x */
      const dur = (x) => (x === undefined || Number.isNaN(x) ? '–' : fmtDur(x));
      /** @type {[number | undefined, (x: number | undefined) => string][]} */
      const cells = [[r.count, (x) => (x ?? 0).toLocaleString('en')], [r.total, dur], [r.mean, dur], [r.max, dur],
        [r.p99, dur], [r.self, dur], [r.min, dur], [r.median, dur]];
      for (const [v, f] of cells) {
        const td = tr.insertCell();
        td.className = 'num';
        td.textContent = f(v);
      }
    }
    el.append(cap, t);
  }
}

// ---- search: highlight, count and step ---------------------------------------------------

/**
 * The search box's stepping: Enter shows the next event whose name contains the text (any
 * case), Shift+Enter the previous, in time order over every matching name at once (by
 * start, then by index in the capture: names interleave by their instances' starts), each
 * centred and selected; past the last it wraps to the first. The count reads "k / N" (N
 * the matching events of the capture, from the service's per-name counts). A stored
 * capture's matches come from the service (/events?match=1); a live one's from the events
 * the page holds.
 */
export class Finder {
  /**
   * @param {Model} model @param {Details} details
   * @param {() => number} total the matching events of the capture (the count the box shows)
   */
  constructor(model, details, total) {
    this.model = model;
    this.details = details;
    this.total = total;
    this.q = '';
    /** @type {{ start: bigint, index: number } | null} */
    this.cursor = null;
    this.pos = 0;
    this.ask = 0;
    this.heldByValue = false; // the last held step found values, not names
  }

  /** @param {string} q the box's text: a new one starts again from the first */
  reset(q) {
    this.q = q.trim();
    this.cursor = null;
    this.pos = 0;
    this.ask++;
  }

  /**
   * One step: dir 1 the next match, -1 the previous.
   * @param {1 | -1} dir
   */
  async step(dir) {
    const ask = ++this.ask, q = this.q, count = $('search-count');
    if (!q) return;
    const capture = this.details.stored();
    try {
      /** @type {Found | null} */
      let e;
      let byValue = false; // no name holds q: the events whose attribute values do
      const held = !capture || !!(this.details.pager && this.details.pager.live);
      if (!held) {
        const lq = q.toLowerCase(), ids = nameIds(this.model.names, (n) => n.toLowerCase().includes(lq));
        byValue = ids.length === 0;
        const what = byValue ? { name: q, match: true, text: q } : { name: q, match: true, ids };
        e = await stepEvent(capture, what, this.cursor, dir);
        if (!e && this.cursor) e = await stepEvent(capture, what, null, dir); // wrap
      } else {
        e = this.stepHeld(dir);
        byValue = this.heldByValue;
      }
      if (ask !== this.ask) return;
      if (!e) { count.textContent = `no ${q}`; return; }
      const wrapped = this.cursor && (dir > 0 ? BigInt(e.start_ns) < this.cursor.start : BigInt(e.start_ns) > this.cursor.start);
      const n = this.total();
      this.pos = !this.cursor ? (dir > 0 || byValue ? 1 : n) : wrapped ? (dir > 0 || byValue ? 1 : n) : Math.max(1, this.pos + dir);
      this.cursor = { start: BigInt(e.start_ns), index: e.index };
      this.details.show(capture && !held ? e : { ...e, index: -1 }); // a held event's index is its place here, not in the capture
      count.textContent = byValue ? `${this.pos.toLocaleString('en')} · in attribute values`
        : `${this.pos.toLocaleString('en')} / ${n.toLocaleString('en')}`;
      count.dataset.start = String(e.start_ns);
    } catch (err) {
      if (ask === this.ask) count.textContent = `the search failed: ${err instanceof Error ? err.message : err}`;
    }
  }

  /**
   * The next or previous match among the events the page holds (a live capture's ring),
   * as /events would give it (index: its place in the order of starts).
   * @param {1 | -1} dir
   * @returns {Found | null}
   */
  stepHeld(dir) {
    const m = this.model, q = this.q.toLowerCase();
    let all = heldMatches(m, (n) => n.toLowerCase().includes(q));
    this.heldByValue = !all.length;
    if (!all.length) all = heldValueMatches(m, q); // no name holds it: the attribute values that do
    if (!all.length || !m.haveBase) return null;
    const cur = this.cursor, cs = cur ? m.rel(cur.start) : 0;
    /** @param {number} i @returns {number} below 0: match i is before the cursor; above: after */
    const cmp = (i) => (!cur ? 0 : all[i].s !== cs ? all[i].s - cs : i - cur.index);
    let k = -1;
    if (dir > 0) {
      for (let i = 0; i < all.length && k < 0; i++) if (!cur || cmp(i) > 0) k = i;
    } else {
      for (let i = all.length - 1; i >= 0 && k < 0; i--) if (!cur || cmp(i) < 0) k = i;
    }
    if (k < 0) k = dir > 0 ? 0 : all.length - 1; // past the end: wrap
    return heldFound(m, all[k], k);
  }
}

/** @typedef {{ s: number, d: number, depth: number, pid: number, tid: number, name: number, instant: boolean }} Held */

/**
 * The zones and instants the page holds (a live capture's ring) whose names pass want, in
 * time order: by start, ties in the order of the threads and lanes.
 * @param {Model} m @param {(name: string) => boolean} want
 * @returns {Held[]}
 */
function heldMatches(m, want) {
  const hit = new Uint8Array(m.names.length + 1); // by name id
  m.names.forEach((n, id) => { if (n !== undefined && want(n)) hit[id] = 1; });
  /** @type {Held[]} */
  const all = [];
  for (const p of m.procs.values())
    for (const t of p.threads.values())
      [...t.zones, t.instants].forEach((l, depth) => {
        if (!l) return;
        const instant = l === t.instants;
        for (let i = 0; i < l.n; i++)
          if (hit[l.name[i]]) all.push({ s: l.s[i], d: l.d[i], depth: instant ? 0 : depth, pid: t.pid, tid: t.tid, name: l.name[i], instant });
      });
  return all.sort((a, b) => a.s - b.s);
}

/**
 * The held events (a live capture's, with their attrs frames) whose string or JSON attribute
 * values hold q (lower case), in time order.
 * @param {Model} m @param {string} q
 * @returns {Held[]}
 */
function heldValueMatches(m, q) {
  /** @type {Held[]} */
  const all = [];
  for (const h of m.attrs.values())
    if (h.rows.some((r) => (r.type === 3 || r.type === 5) && String(r.value).toLowerCase().includes(q)))
      all.push({ s: h.s, d: h.d, depth: Math.max(0, h.depth), pid: h.pid, tid: h.tid, name: h.name, instant: h.depth < 0 });
  return all.sort((a, b) => a.s - b.s);
}

/**
 * A held event as /events gives one.
 * @param {Model} m @param {Held} x @param {number} index
 * @returns {Found}
 */
function heldFound(m, x, index) {
  const start = Number(m.abs(x.s));
  return { index, start_ns: start, dur_ns: x.d, end_ns: start + x.d, pid: x.pid, tid: x.tid, track: `${x.pid}:${x.tid}`,
    depth: x.depth, kind: x.instant ? 'instant' : 'zone', name_id: x.name };
}

// ---- the samples ---------------------------------------------------------------------------

export class Samples {
  /**
   * @param {HTMLElement} root the samples panel (#profile)
   * @param {Model} model
   * @param {Timeline} view
   */
  constructor(root, model, view) {
    this.panel = new ProfilePanel(root);
    this.model = model;
    this.view = view;
    this.capture = '';
    /** @type {Profile | null} the whole capture's answer, once it came with samples */
    this.whole = null;
    this.ask = 0; // the latest ask: older answers are dropped
  }

  /** @param {string} capture the capture now open: no panel until its end */
  reset(capture) {
    this.capture = capture;
    this.whole = null;
    this.ask++;
    this.panel.hide();
  }

  /**
   * The samples of the range [r0, r1] selected on the timeline, or (null) the whole
   * capture's again; nothing while the capture has no samples.
   * @param {[number, number] | null} span
   */
  range(span) {
    if (!this.whole) return;
    if (span) this.load(span);
    else { this.ask++; this.panel.show(this.whole, null); }
  }

  /**
   * The capture's samples, whole (span null: ticks and the panel) or over span [r0, r1] (the
   * panel only). An answer for another capture or an older ask is dropped.
   * @param {[number, number] | null} span
   */
  async load(span) {
    const ask = ++this.ask, model = this.model, view = this.view;
    let q = '';
    if (span) {
      const b = model.baseNs(), from = Math.max(0, Math.floor(b + span[0]));
      q = `?from_ns=${from}&to_ns=${Math.max(from, Math.ceil(b + span[1]))}`;
    }
    /** @type {Profile | null} */
    let data = null;
    let why = '';
    try {
      data = /** @type {Profile} */ (await api(`/api/captures/${encodeURIComponent(this.capture)}/profile${q}`));
    } catch (e) {
      why = e instanceof Error ? e.message : `${e}`; // not stored (a live view), or the service is busy: no panel, or the old one
    }
    if (ask !== this.ask) return;
    if (span) {
      if (data) this.panel.show(data, span);
      else if (this.whole) {
        this.panel.show(this.whole, null);
        this.panel.note(`the selection's samples could not be had (${why}); these are the whole capture's`);
      }
      return;
    }
    if (!data || !data.samples) { this.panel.hide(); return; }
    this.whole = data;
    model.applyTicks(data.ticks, data.threads);
    this.panel.show(data, null);
    if (view.fitted || model.events === 0) view.fit();
    view.invalidate();
  }
}

// ---- search ----------------------------------------------------------------------------------

/**
 * Highlights the names that contain q (case-blind; '' clears) and counts their events the
 * page holds (app.js adds a stored capture's from /stats).
 * @param {Model} model
 * @param {Timeline} view
 * @param {string} q
 * @returns {{ events: number, names: number }}
 */
export function search(model, view, q) {
  q = q.trim().toLowerCase();
  if (!q) { view.search = null; view.invalidate(); return { events: 0, names: 0 }; }
  const sr = new Uint8Array(model.names.length + 1);
  let names = 0;
  model.names.forEach((n, id) => { if (n !== undefined && n.toLowerCase().includes(q)) { sr[id] = 1; names++; } });
  view.search = sr;
  let events = 0;
  for (const p of model.procs.values())
    for (const t of p.threads.values())
      for (const l of [...t.zones, t.instants, ...t.counters.values()]) {
        if (!l) continue;
        for (let i = 0; i < l.n; i++) if (sr[l.name[i]]) events++;
      }
  view.invalidate();
  return { events, names };
}
