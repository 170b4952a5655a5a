// @ts-check
// pages.js: a stored capture (or the history of a live one) drawn from the service's answers
// rather than from its events. On open: its tracks (GET /api/captures/NAME/tracks, the rows)
// and names (/names, names frames) once; then view frames (/view, view.js) for what is on
// screen: the visible range and half a screen either side, at the canvas's width in pixels,
// for the tracks whose rows are on screen (and a few more). A frame's cells are at most one
// pixel wide, so whatever the capture's size a frame holds at most a few columns per lane
// per pixel, and long events whole.
//
// What the page holds is bounded whatever the capture: the overview (the whole capture at
// the canvas's width, every track: it also says which lanes each track has) and at most
// DETAIL_KEEP frames, the least recently drawn dropped first. A view change asks again
// after DEBOUNCE_MS without another one; a newer ask aborts the older (AbortController).
// Until a frame that serves the view arrives, the timeline draws what it holds (the overview
// and the latest frame), stretched.
//
// A live capture's live edge comes over its WebSocket into the model's ring (model.js); the
// ring holds every event that starts at or after its cut, the frames are drawn only before
// it, so nothing is drawn twice.
import { api, apiBytes } from './session.js';
import { decodeView, LANE_INSTANT, LANE_COUNTER } from './view.js';
import { decodeFrame, splitStream } from './wire.js';
import { Lane } from './model.js';

/** @typedef {import('./model.js').Model} Model */
/** @typedef {import('./view.js').ViewFrame} ViewFrame */
/** @typedef {import('./view.js').ViewTrack} ViewTrack */
/**
 * The answer of GET /api/captures/NAME/tracks (docs/serve.md).
 * @typedef {{ capture: string, events: number, first_ns: number, end_ns: number, summaries: boolean,
 *   processes: { id: string, pid: number, name: string, sort: number, events: number }[],
 *   tracks: { id: string, kind: string, pid: number, tid: number, name: string, sort: number,
 *     events: number, max_depth: number, first_ns: number, end_ns: number }[] }} TracksAnswer
 */
/**
 * A frame's track, ready to draw: its long events as a Lane per depth (with their capture
 * indexes), and its cells' ranges per lane.
 * @typedef {{ vt: ViewTrack, zones: (Lane | undefined)[], cells: Map<number, [number, number]> }} PlacedTrack
 */
/**
 * A frame on the page's time base: t0 and t1 its range (ns from the model's base), colT0 the
 * start of its first column, the tracks it answered for (null: every one), when it came.
 * askNs: the ns a pixel it was asked for; its cells are coarser when the service answered
 * from its summaries rather than read many segments (docs/formats/view.md): that is its
 * best answer for any pixel at least as wide.
 * @typedef {{ f: ViewFrame, t0: number, t1: number, colT0: number, cellNs: number,
 *   askNs: number, tracks: Map<string, PlacedTrack>, answered: Set<string> | null,
 *   overview: boolean, at: number, used: number, url: string }} Placed
 */
/**
 * What the pager tells the page: a frame arrived (draw again), something failed.
 * @typedef {{ arrived(): void, failed(msg: string): void }} PagerHooks
 */

export const DETAIL_KEEP = 3;
const DEBOUNCE_MS = 120, MAX_WAIT_MS = 600, LIVE_FRESH_MS = 2000;

/** @param {number} pid @param {number} tid @returns {string} a track's key, as tracks= names it */
export function trackKey(pid, tid) { return `${pid}:${tid}`; }

export class Pager {
  /** @param {Model} model @param {PagerHooks} hooks */
  constructor(model, hooks) {
    this.model = model;
    this.hooks = hooks;
    this.name = '';
    this.live = false;
    this.ready = false;   // tracks and names are in the model
    /** @type {Placed | null} */
    this.overview = null;
    /** @type {Placed[]} */
    this.detail = [];
    /** @type {AbortController | null} */
    this.inflight = null;
    this.inflightUrl = '';
    /** @type {ReturnType<typeof setTimeout> | null} */
    this.timer = null;
    this.timerSince = 0;
    this.lastWant = '';
    this.id = 0;        // the open's number: answers of an older one are dropped
    this.stamp = 0;
    // what the tests and the stats line read
    this.asked = 0;
    this.answers = 0;
    this.bytes = 0;
    /** @type {{ url: string, from_ns: string, to_ns: string, shift: number, events: number, cells: number, tracks: number } | null} */
    this.last = null;
    /** @type {{ t0: number, t1: number, px: number, keys: string[] } | null} the latest want */
    this.want_ = null;
    this.searchCounts = /** @type {Promise<Map<number, number>> | null} */ (null);
    this.opening = false;
    this.openedAt = -Infinity;
  }

  /** Forgets the capture: nothing held. */
  reset() {
    this.id++;
    if (this.inflight) this.inflight.abort();
    if (this.timer) clearTimeout(this.timer);
    this.inflight = null; this.timer = null;
    this.name = ''; this.ready = false; this.overview = null; this.detail = [];
    this.asked = this.answers = this.bytes = 0; this.last = null; this.want_ = null;
    this.lastWant = '';
    this.searchCounts = null;
  }

  /**
   * Opens capture name: its tracks and names into the model (which the caller has reset).
   * Returns the tracks' answer, or throws the service's error.
   * @param {string} name @param {boolean} live
   * @returns {Promise<TracksAnswer>}
   */
  async open(name, live) {
    this.reset();
    const mine = this.id;
    this.name = name;
    this.live = live;
    const enc = encodeURIComponent(name);
    const [tracks, names] = await Promise.all([
      /** @type {Promise<TracksAnswer>} */ (api(`/api/captures/${enc}/tracks`)),
      apiBytes(`/api/captures/${enc}/names`),
    ]);
    if (mine !== this.id) return tracks;
    this.applyTracks(tracks);
    for (const fr of splitStream(names)) {
      const r = await decodeFrame(fr);
      if (r.names) this.model.applyNames(r.names);
    }
    this.ready = true;
    return tracks;
  }

  /**
   * open() again for a live capture whose ring has dropped events, at most every 2 s while
   * the service does not have it stored.
   * @param {string} name
   */
  retryOpen(name) {
    const now = performance.now();
    if (this.ready || this.opening || now - this.openedAt < 2000) return;
    this.openedAt = now;
    this.opening = true;
    this.open(name, true).catch(() => {}).finally(() => { this.opening = false; this.hooks.arrived(); });
  }

  /**
   * The tracks' answer into the model: the base (the capture's first event), the extent,
   * each process and track with its name, sort index and stored events.
   * @param {TracksAnswer} t
   */
  applyTracks(t) {
    const m = this.model;
    if (t.events > 0) m.setBase(BigInt(t.first_ns));
    for (const p of t.processes) {
      const pr = m.proc(p.pid);
      if (p.name) pr.name = p.name;
      pr.sort = p.sort;
    }
    for (const x of t.tracks) {
      const tr = m.track(x.pid, x.tid);
      if (x.name) tr.name = x.name;
      tr.sort = x.sort;
      tr.kind = x.kind;
      tr.stored = x.events;
      tr.maxDepth = x.max_depth;
      const a = m.rel(BigInt(x.first_ns)), b = m.rel(BigInt(x.end_ns));
      if (a < m.minT) m.minT = a;
      if (b > m.maxT) m.maxT = b;
    }
    m.storedEvents = t.events;
    m.layout++;
    m.data++;
  }

  /** Asks the tracks again (a live capture's history grows): new tracks get rows. */
  async refreshTracks() {
    if (!this.name) return;
    const mine = this.id;
    try {
      const t = /** @type {TracksAnswer} */ (await api(`/api/captures/${encodeURIComponent(this.name)}/tracks`));
      if (mine === this.id) { this.applyTracks(t); this.hooks.arrived(); }
    } catch { /* not stored yet */ }
  }

  /** @returns {boolean} whether frames are drawn: a stored capture, or a live one's ring has a cut */
  get active() { return this.ready && (!this.live || this.model.cut > -Infinity); }

  /** @returns {number} the bytes of the frames held (their columns) */
  held() {
    let n = this.overview ? this.overview.f.held : 0;
    for (const p of this.detail) n += p.f.held;
    return n;
  }

  /**
   * The timeline's view after a draw: [t0, t1] on px CSS pixels, the tracks on screen.
   * Asks for a frame when none held serves it (debounced).
   * @param {number} t0 @param {number} t1 @param {number} px @param {string[]} keys
   */
  want(t0, t1, px, keys) {
    if (!this.active || !(t1 > t0) || px < 1) return;
    const m = this.model;
    if (!this.overview) {
      // a capture of no events (samples alone) has no view to ask for until it has times
      if (!(m.maxT >= m.minT)) return;
      if (!this.inflight && !this.timer) this.request(m.minT, m.maxT + 1, Math.round(px), null, true);
      return;
    }
    const w = (t1 - t0) / px, now = performance.now();
    const lo = Math.max(t0, m.minT), hi = Math.min(t1, m.maxT + 1, this.live ? m.cut : Infinity);
    if (this.live && this.overview && now - this.overview.at > 4 * LIVE_FRESH_MS && !this.inflight) {
      this.overview = null; // a live capture's overview goes stale as its history grows
      this.refreshTracks();
      return;
    }
    if (hi <= lo || this.serving(lo, hi, w, keys)) return;
    const sig = `${t0}|${t1}|${px}|${keys.join(',')}`;
    this.want_ = { t0, t1, px, keys };
    if (sig === this.lastWant && this.timer) return;
    this.lastWant = sig;
    if (this.timer && now - this.timerSince < MAX_WAIT_MS) clearTimeout(this.timer);
    else if (this.timer) return; // waited long enough: let it fire
    if (!this.timer) this.timerSince = now;
    this.timer = setTimeout(() => {
      this.timer = null;
      const q = this.want_;
      if (!q) return;
      const span = q.t1 - q.t0, ww = span / q.px;
      const from = Math.max(m.minT, q.t0 - span / 2), to = Math.min(m.maxT + 1, q.t1 + span / 2);
      if (to <= from) return;
      this.request(from, to, Math.min(16384, Math.max(1, Math.ceil((to - from) / ww))), q.keys, false);
    }, DEBOUNCE_MS);
  }

  /**
   * A held frame that serves [lo, hi] at w ns a pixel for these tracks, marked used.
   * @param {number} lo @param {number} hi @param {number} w @param {string[]} keys
   * @returns {Placed | null}
   */
  serving(lo, hi, w, keys) {
    const now = performance.now();
    for (const p of [...this.detail, ...(this.overview ? [this.overview] : [])]) {
      if (p.t0 > lo || p.t1 < hi || (p.cellNs > w * 1.001 && p.askNs > w * 1.001)) continue;
      if (this.live && now - p.at > LIVE_FRESH_MS && !p.overview) continue;
      const ans = p.answered;
      if (ans && !keys.every((k) => ans.has(k))) continue;
      p.used = ++this.stamp;
      return p;
    }
    return null;
  }

  /**
   * The frames to draw for [t0, t1]: the overview, and the frame that serves it best (the
   * last used that overlaps it), or null.
   * @param {number} t0 @param {number} t1
   * @returns {{ overview: Placed | null, primary: Placed | null }}
   */
  drawList(t0, t1) {
    let best = null;
    for (const p of this.detail)
      if (p.t0 < t1 && p.t1 > t0 && (!best || p.used > best.used)) best = p;
    return { overview: this.overview, primary: best };
  }

  /**
   * Asks for a frame of [from, to) (ns from the base) at px pixels, for these tracks (null:
   * every one); aborts the ask before it.
   * @param {number} from @param {number} to @param {number} px @param {string[] | null} keys
   * @param {boolean} overview
   */
  async request(from, to, px, keys, overview) {
    const m = this.model, mine = this.id;
    const a = m.abs(from), b = m.abs(to) + 1n;
    const q = `from_ns=${a}&to_ns=${b}&px=${px}&names=0${keys ? `&tracks=${keys.join(',')}` : ''}`;
    const url = `/api/captures/${encodeURIComponent(this.name)}/view?${q}`;
    // the same ask under way already: wait for it (aborting it for itself, each time the page
    // draws before a slow answer comes, would never let one come)
    if (this.inflight && this.inflightUrl === url) return;
    if (this.inflight) this.inflight.abort();
    const ctl = new AbortController();
    this.inflight = ctl;
    this.inflightUrl = url;
    this.asked++;
    let f;
    try {
      const u8 = await apiBytes(url, { signal: ctl.signal });
      f = await decodeView(u8);
    } catch (e) {
      if (this.inflight === ctl) this.inflight = null;
      if (ctl.signal.aborted || mine !== this.id) return;
      this.hooks.failed(`the view of ${this.name} could not be had: ${e instanceof Error ? e.message : e}`);
      return;
    }
    if (this.inflight === ctl) this.inflight = null;
    if (mine !== this.id) return;
    this.answers++;
    this.bytes += f.bytes;
    this.last = { url, from_ns: f.fromNs.toString(), to_ns: f.toNs.toString(), shift: f.shift, events: f.nevents, cells: f.ncells, tracks: f.tracks.length };
    const p = this.place(f, keys, overview, url);
    p.askNs = (to - from) / px;
    if (overview) this.overview = p;
    else {
      this.detail.push(p);
      if (this.detail.length > DETAIL_KEEP) {
        this.detail.sort((x, y) => y.used - x.used);
        this.detail.length = DETAIL_KEEP;
      }
    }
    this.hooks.arrived();
  }

  /**
   * A frame onto the page's base, each track's long events as a Lane per depth; the lanes
   * it shows become rows' lanes (a track's zones, instants, counter).
   * @param {ViewFrame} f @param {string[] | null} keys @param {boolean} overview @param {string} url
   * @returns {Placed}
   */
  place(f, keys, overview, url) {
    const m = this.model, off = m.rel(f.fromNs);
    /** @type {Map<string, PlacedTrack>} */
    const tracks = new Map();
    let layout = false;
    for (const vt of f.tracks) {
      /** @type {(Lane | undefined)[]} */
      const zones = [];
      for (let i = vt.e0; i < vt.e0 + vt.ne; i++) {
        const d = f.evDepth[i];
        let l = zones[d];
        if (!l) { l = zones[d] = new Lane(); l.index = new Float64Array(l.s.length); }
        if (l.n === l.s.length) l.grow();
        const k = l.n++;
        l.s[k] = off + f.evStart[i]; l.d[k] = f.evDur[i]; l.name[k] = f.evName[i];
        /** @type {Float64Array} */ (l.index)[k] = f.evIndex[i];
        if (f.evDur[i] > l.maxDur) l.maxDur = f.evDur[i];
      }
      /** @type {Map<number, [number, number]>} */
      const cells = new Map();
      for (let i = vt.c0; i < vt.c0 + vt.nc;) {
        const lane = f.cLane[i];
        let j = i + 1;
        while (j < vt.c0 + vt.nc && f.cLane[j] === lane) j++;
        cells.set(lane, [i, j]);
        i = j;
      }
      const tr = m.track(vt.pid, vt.tid);
      let depth = zones.length;
      for (const lane of cells.keys()) if (lane < LANE_INSTANT && lane + 1 > depth) depth = lane + 1;
      if (depth > 0) depth = Math.max(depth, tr.maxDepth + 1);
      if (depth > tr.vZones) { tr.vZones = depth; layout = true; }
      if (cells.has(LANE_INSTANT) && !tr.vInstants) { tr.vInstants = true; layout = true; }
      if (cells.has(LANE_COUNTER) && !tr.vCounter) { tr.vCounter = true; layout = true; }
      tracks.set(trackKey(vt.pid, vt.tid), { vt, zones, cells });
    }
    if (layout) m.layout++;
    m.data++;
    return {
      f, t0: off, t1: off + Number(f.toNs - f.fromNs), colT0: off + f.col0Ns, cellNs: f.cellNs, askNs: f.cellNs, tracks,
      answered: keys ? new Set(keys) : null, overview, at: performance.now(), used: ++this.stamp, url,
    };
  }

  /**
   * The instances of an event name, as /events answers (docs/serve.md): the slowest
   * (order dur_desc) or the first starting at or after from (ns from the base).
   * @param {string} name @param {'dur_desc' | 'start'} order @param {number} [from]
   * @returns {Promise<{ index: number, start_ns: number, dur_ns: number, pid: number, tid: number, depth: number, kind: string, name_id: number }[]>}
   */
  async find(name, order, from) {
    const q = new URLSearchParams({ name, order, limit: '1' });
    if (from !== undefined) q.set('from_ns', this.model.abs(from).toString());
    const r = /** @type {{ events: { index: number, start_ns: number, dur_ns: number, pid: number, tid: number, depth: number, kind: string, name_id: number }[] }} */ (
      await api(`/api/captures/${encodeURIComponent(this.name)}/events?${q}`));
    return r.events;
  }

  /**
   * The names of the events that start in [r0, r1) (ns from the base) with their counts and
   * times, as /stats answers; the 500 of most total time.
   * @param {number} r0 @param {number} r1
   * @returns {Promise<StatsAnswer>}
   */
  async stats(r0, r1) {
    const m = this.model;
    const from = r0 <= m.minT ? 0n : m.abs(r0), to = m.abs(r1) + 1n;
    return /** @type {StatsAnswer} */ (await api(`/api/captures/${encodeURIComponent(this.name)}/stats?from_ns=${from}&to_ns=${to}&limit=500`));
  }

  /**
   * Every name's count of events in the whole capture (asked once, kept as counts only).
   * @returns {Promise<Map<number, number>>}
   */
  nameCounts() {
    if (!this.searchCounts) {
      const name = this.name;
      this.searchCounts = api(`/api/captures/${encodeURIComponent(name)}/stats?limit=0`).then((a) => {
        const counts = new Map();
        for (const r of /** @type {StatsAnswer} */ (a).rows) counts.set(r.name_id, r.count);
        return counts;
      });
    }
    return this.searchCounts;
  }
}

/**
 * The answer of /stats (docs/serve.md): per name, the events that start in the range.
 * @typedef {{ capture: string, from_ns: number, to_ns: number, events: number, names: number,
 *   rows: { name: string, name_id: number, count: number, total_ns: number, self_ns: number,
 *     min_ns: number, p50_ns: number, p90_ns: number, p99_ns: number, max_ns: number }[] }} StatsAnswer
 */
