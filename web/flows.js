// @ts-check
// flows.js: the arrows between events. A capture keeps flow rows — points on threads, the
// rows of one id in time order one chain (docs/formats/flows.md) — and the service gives the
// chains that touch a range (GET /api/captures/NAME/flows, docs/serve.md). The page asks for
// the selected event's (its thread, its span) and, while "all flows" is on, for the view's
// (its range, the tracks on screen; asked again after the view rests for 150 ms).
//
// A point binds to an event as the Trace Event Format says: an enclosing point to the zone
// that encloses it on its thread, the deepest one the page holds; an end that is not
// enclosing to the next zone to start on its thread. So the selected event's flows are the
// points on its thread inside its span that no deeper zone the page holds encloses (and the
// non-enclosing ends just before it that no other zone starts after); each has the chain's
// point before it (a flow in) and after it (a flow out). The timeline (timeline.js) draws
// them and jumps to their other ends.
import { api } from './session.js';

/** @typedef {import('./model.js').Model} Model */
/** @typedef {import('./model.js').Track} Track */
/**
 * A row of the service's answer.
 * @typedef {{ id: number, ts_ns: number, pid: number, tid: number, name_id: number, phase: number, enclosing: boolean }} FlowRow
 */
/**
 * A point of a chain on the page's time base (ns from the model's base).
 * @typedef {{ t: number, pid: number, tid: number, enclosing: boolean }} FlowPoint
 */
/**
 * A flow of the selected event: in (from the other end to it) or out (from it to the other
 * end), its id and name, its point on the selected event and the other end.
 * @typedef {{ dir: 'in' | 'out', id: number, name: string, at: FlowPoint, other: FlowPoint }} BoundFlow
 */
/**
 * What flows.js needs of the timeline: the deepest held zone of a track that covers t, as
 * [depth, start, dur], or null; and whether a zone of the track starts in [a, b).
 * @typedef {{ zoneAt(track: Track, t: number): [number, number, number] | null,
 *   startsIn(track: Track, a: number, b: number): boolean }} FlowView
 */

const VIEW_WAIT_MS = 150;

export class Flows {
  /**
   * @param {Model} model
   * @param {() => string} capture the capture open ('' none), whose flows are asked
   * @param {() => boolean} stored whether the service has it stored
   * @param {() => void} arrived an answer came: draw again
   */
  constructor(model, capture, stored, arrived) {
    this.model = model;
    this.capture = capture;
    this.stored = stored;
    this.arrived = arrived;
    /** @type {BoundFlow[]} the selected event's */
    this.bound = [];
    /** @type {FlowPoint[][]} the chains of the view (all flows on) */
    this.chains = [];
    this.all = false;
    this.ask = 0;
    this.viewAsk = 0;
    /** @type {ReturnType<typeof setTimeout> | null} */
    this.timer = null;
    this.lastView = '';
    this.error = '';
    this.selAnswers = 0; // answers for a selection that arrived (the tests wait on it)
    /** @type {((bound: BoundFlow[]) => void)[]} told when the selected event's flows change */
    this.listeners = [];
  }

  /**
   * Calls fn with the selected event's flows each time they change (the details panel lists
   * them; Timeline.jumpFlow jumps to one's far end).
   * @param {(bound: BoundFlow[]) => void} fn
   */
  onChange(fn) { this.listeners.push(fn); }

  /** @param {BoundFlow[]} b */
  setBound(b) {
    this.bound = b;
    for (const fn of this.listeners) fn(b);
  }

  reset() {
    if (this.bound.length) this.setBound([]);
    this.chains = []; this.ask++; this.viewAsk++; this.lastView = ''; this.error = '';
  }

  /**
   * @param {number} from @param {number} to ns from the base
   * @param {string[] | null} keys the tracks ("pid:tid"), null every one
   * @returns {Promise<{ flows: number, chains: number, truncated: boolean, rows: FlowRow[] }>}
   */
  async fetch(from, to, keys) {
    const m = this.model;
    const q = `from_ns=${m.abs(from)}&to_ns=${m.abs(to) + 1n}${keys && keys.length ? `&tracks=${keys.slice(0, 1024).join(',')}` : ''}&limit=10000`;
    return /** @type {{ flows: number, chains: number, truncated: boolean, rows: FlowRow[] }} */ (
      await api(`/api/captures/${encodeURIComponent(this.capture())}/flows?${q}`));
  }

  /**
   * @param {FlowRow[]} rows sorted by id, then time
   * @returns {Map<number, FlowPoint[]>} id -> its chain's points on the page's base
   */
  chainsOf(rows) {
    /** @type {Map<number, FlowPoint[]>} */
    const by = new Map();
    for (const r of rows) {
      let c = by.get(r.id);
      if (!c) { c = []; by.set(r.id, c); }
      c.push({ t: this.model.rel(BigInt(r.ts_ns)), pid: r.pid, tid: r.tid, enclosing: r.enclosing });
    }
    return by;
  }

  /**
   * The selected event's flows, asked of the service; bound with what view holds.
   * @param {import('./timeline.js').Hit | null} sel @param {FlowView} view
   */
  async select(sel, view) {
    const mine = ++this.ask;
    if (this.bound.length) this.setBound([]);
    if (!sel || sel.cell || !this.capture() || !this.stored()) return;
    const t = sel.track, end = sel.start + sel.dur;
    let ans;
    try {
      // a non-enclosing end binds to the next zone: its point may be a little before the start
      ans = await this.fetch(Math.max(this.model.minT, sel.start - Math.max(sel.dur, 1e6)), end, [`${t.pid}:${t.tid}`]);
    } catch (e) {
      if (mine === this.ask) this.error = `flows: ${e instanceof Error ? e.message : e}`;
      return;
    }
    if (mine !== this.ask) return;
    /** @type {BoundFlow[]} */
    const out = [];
    for (const [id, pts] of this.chainsOf(ans.rows)) {
      const name = this.model.nameOf(ans.rows.find((r) => r.id === id)?.name_id ?? 0);
      pts.forEach((p, i) => {
        if (p.pid !== t.pid || p.tid !== t.tid) return;
        let mine = false;
        if (p.t >= sel.start && p.t <= end) {
          const z = view.zoneAt(t, p.t);
          mine = !z || z[0] <= sel.depth || !p.enclosing && p.t === sel.start;
        } else if (!p.enclosing && p.t < sel.start) mine = !view.startsIn(t, p.t, sel.start);
        if (!mine) return;
        if (i > 0) out.push({ dir: 'in', id, name, at: p, other: pts[i - 1] });
        if (i + 1 < pts.length) out.push({ dir: 'out', id, name, at: p, other: pts[i + 1] });
      });
    }
    out.sort((a, b) => a.other.t - b.other.t || a.id - b.id);
    this.setBound(out);
    this.error = '';
    this.selAnswers++;
    this.arrived();
  }

  /**
   * The view moved (all flows on): its chains asked again once it rests.
   * @param {number} t0 @param {number} t1 @param {string[]} keys the tracks on screen
   */
  view(t0, t1, keys) {
    if (!this.all || !this.capture() || !this.stored()) return;
    const sig = `${Math.round(t0)}|${Math.round(t1)}|${keys.join(',')}`;
    if (sig === this.lastView) return;
    this.lastView = sig;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(async () => {
      this.timer = null;
      const mine = ++this.viewAsk;
      try {
        const a = await this.fetch(Math.max(this.model.minT, t0), t1, keys);
        if (mine !== this.viewAsk) return;
        this.chains = [...this.chainsOf(a.rows).values()];
        this.error = a.truncated ? `flows: the ${a.chains.toLocaleString('en')} in view are more than drawn` : '';
      } catch (e) {
        if (mine === this.viewAsk) this.error = `flows: ${e instanceof Error ? e.message : e}`;
      }
      this.arrived();
    }, VIEW_WAIT_MS);
  }

  /** @param {boolean} on all the flows in view drawn, or only the selected event's */
  setAll(on) {
    this.all = on;
    this.lastView = '';
    if (!on) { this.chains = []; this.viewAsk++; }
    this.arrived();
  }
}
