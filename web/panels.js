// @ts-check
// panels.js: what the page shows around the timeline. The stats line (counts, throughput
// over the last half second, the state of the connection); the details: the tooltip of the
// event under the pointer, the table of the selected event and the sortable table of the
// names in a selected range; the samples: once a capture has come whole (its end), its
// samples are asked for (/api/captures/NAME/profile) and become ticks on the timeline and
// the samples panel (profile.js), asked again for a range selected on the timeline. A
// capture without samples, or one the store does not hold (404), shows no panel. And the
// search box's count of the events whose names match.
// The range table's rows come from the service (/stats, asked by app.js) for a stored
// capture, with each name's p99 and self time; only a live capture the service has not
// stored yet has them counted over the events the page holds.
// Each panel only reads the model and the stats: the session (session.js) fills them, and
// app.js tells the panels when to draw.
import { fmtDur } from './timeline.js';
import { ProfilePanel } from './profile.js';
import { api } from './session.js';

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
 * A name's row of the range table: p99 and self are the service's (NaN when counted here).
 * @typedef {{ name: string, count: number, total: number, mean: number, max: number, p99: number, self: number }} RangeRow
 */
/**
 * What the details ask of the page: show the slowest instance of a name, or the next one
 * starting after `from` (ns from the base).
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
   * The tooltip: the event under the pointer at client (cx, cy), or none.
   * @param {EventInfo | null} info
   * @param {number} [cx]
   * @param {number} [cy]
   */
  hover(info, cx = 0, cy = 0) {
    const tip = $('tooltip');
    if (!info) { tip.hidden = true; return; }
    tip.hidden = false;
    tip.textContent = '';
    const b = document.createElement('b');
    b.textContent = info.name;
    const c = info.cell;
    if (c) {
      tip.append(b, document.createElement('br'),
        `${c.count.toLocaleString('en')} ${c.count === 1 ? 'event' : 'events'} from ${fmtDur(info.start)} over ${fmtDur(c.width)}` +
        (info.lane === 'instant' ? '' : `, busy ${fmtDur(Math.min(c.busy, c.width * 2))}`),
        document.createElement('br'), `the longest ${info.name}${info.lane === 'instant' ? '' : ` (${fmtDur(info.dur)})`} · zoom in for each`,
        document.createElement('br'), `thread ${this.threadLabel(info.track)}`);
      b.textContent = `${info.name}${c.count > 1 ? ' and others' : ''}`;
    } else {
      tip.append(b, document.createElement('br'),
        `start ${fmtDur(info.start)} · ${info.lane === 'instant' ? 'instant' : `duration ${fmtDur(info.dur)}`}`,
        document.createElement('br'), `thread ${this.threadLabel(info.track)}`);
      if (info.merged > 1) tip.append(document.createElement('br'), `(${info.merged.toLocaleString('en')} events within 3 px here: zoom in)`);
    }
    tip.style.left = `${cx + 14}px`;
    tip.style.top = `${cy + 14}px`;
  }

  /** @param {EventInfo | null} info the selected event, or none */
  select(info) {
    const el = $('selection');
    el.textContent = '';
    if (!info) { el.textContent = 'click an event to select it; shift+drag a range for its table'; return; }
    const rows = info.cell
      ? [['name', `${info.name} (the longest of ${info.cell.count.toLocaleString('en')})`], ['start', fmtDur(info.start)], ['cell', fmtDur(info.cell.width)],
        ['thread', this.threadLabel(info.track)], ['depth', String(info.depth)]]
      : [['name', info.name], ['start', fmtDur(info.start)], ['duration', info.lane === 'instant' ? '(instant)' : fmtDur(info.dur)],
        ['thread', this.threadLabel(info.track)], ['depth', String(info.depth)]];
    if (info.event !== undefined && info.event >= 0) rows.push(['index', String(info.event)]);
    const t = document.createElement('table');
    t.id = 'selection-table';
    for (const [k, v] of rows) {
      const tr = t.insertRow();
      tr.insertCell().textContent = k;
      tr.insertCell().textContent = v;
    }
    const bar = document.createElement('div');
    for (const [how, text] of /** @type {['slowest' | 'next', string][]} */ ([['slowest', 'slowest ›'], ['next', 'next ›']])) {
      const btn = document.createElement('button');
      btn.id = `jump-${how}`;
      btn.textContent = text;
      btn.title = how === 'slowest' ? `show the longest ${info.name} of the capture` : `show the next ${info.name} after this one`;
      btn.addEventListener('click', () => this.hooks.jump(info.name, how, info.start));
      bar.append(btn);
    }
    const note = document.createElement('span');
    note.id = 'jump-note';
    note.className = 'hint';
    bar.append(' ', note);
    el.append(t, bar);
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
      const c = typeof x === 'string' ? x.localeCompare(/** @type {string} */ (y)) : x - /** @type {number} */ (y);
      return desc ? -c : c;
    });
    const cap = document.createElement('div');
    cap.textContent = `${fmtDur(this.span[1] - this.span[0])} selected: ${rows.length} names${this.note ? ` · ${this.note}` : ''}`;
    const t = document.createElement('table');
    t.id = 'range-table';
    const head = t.createTHead().insertRow();
    for (const k of /** @type {(keyof RangeRow)[]} */ (['name', 'count', 'total', 'mean', 'max', 'p99', 'self'])) {
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
    for (const r of rows.slice(0, 200)) {
      const tr = body.insertRow();
      tr.insertCell().textContent = r.name;
      /** @param {number} x */
      const dur = (x) => (Number.isNaN(x) ? '–' : fmtDur(x));
      /** @type {[number, (x: number) => string][]} */
      const cells = [[r.count, String], [r.total, dur], [r.mean, dur], [r.max, dur], [r.p99, dur], [r.self, dur]];
      for (const [v, f] of cells) {
        const td = tr.insertCell();
        td.className = 'num';
        td.textContent = f(v);
      }
    }
    el.append(cap, t);
  }
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
