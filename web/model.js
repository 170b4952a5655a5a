// @ts-check
// model.js: the events the page holds, arranged for drawing. One Track per (pid, tid); in
// it one Lane per zone depth, one for instants and one per counter series. A Lane is
// columns of typed arrays (start, duration or value, name id) that grow by doubling, kept
// sorted by start (events of one depth on one thread do not overlap and arrive in order, so
// they are sorted as they come; a lane that is not is sorted once before it is drawn).
// Sorted columns are what makes the level of detail cheap: the timeline finds the first
// event of a pixel by binary search and jumps over everything narrower than that pixel, so
// a frame costs O(pixels x log n) per lane, not O(events).
//
// Times are float64 nanoseconds from the capture's first event (exact while a capture spans
// under 2^53 ns, 104 days): the u64 halves of the wire are subtracted from that base first.
// A capture's samples (profile.js fetches them) are ticks on their thread's track: sorted
// times on that base, or on the first sample's when the capture has no events.
//
// The events held are a ring: past ringMax of them, the oldest are dropped down to three
// quarters, by time: the ring's cut moves up to the latest start among the batches dropped,
// and every event starting before it is dropped then and when it comes later. What starts
// before the cut is drawn from the service's view frames (pages.js), never from here. A
// stored capture opened through pages.js holds no events here at all: only its processes
// and tracks (with the lanes its frames show, vZones, vInstants, vCounter) and its names.
import { fnv1a, eventMix } from './wire.js';

/** @typedef {import('./wire.js').Batch} Batch */
/**
 * A held event's attributes and where the event is: its track, depth (-1: an instant),
 * start, duration and name id.
 * @typedef {{ rows: import('./wire.js').AttrRow[], pid: number, tid: number, depth: number, s: number, d: number, name: number }} HeldAttrs
 */
/** @typedef {import('./wire.js').NameEntry} NameEntry */
/**
 * A process: its name and sort index (names frames), and its threads by tid.
 * @typedef {{ pid: number, name: string, sort: number, threads: Map<number, Track> }} Proc
 */
/**
 * A process and its threads as the timeline lists them (Model.sortedTracks).
 * @typedef {{ proc: Proc, threads: Track[] }} ProcTracks
 */

const TWO32 = 4294967296;
export const ATTRS_MAX = 200000; // held events' attributes kept (a live capture's, by event)
export const RING_MAX = 1 << 20; // events held of a live capture (about 20 bytes each)
const f64 = new Float64Array(1), u32 = new Uint32Array(f64.buffer);

/**
 * The key of a held event's attributes: its track, depth (-1: an instant) and start.
 * @param {number} pid @param {number} tid @param {number} depth @param {number} s
 */
export function attrKey(pid, tid, depth, s) { return `${pid}:${tid}:${depth}:${s}`; }

export class Lane {
  constructor() {
    this.n = 0;
    this.s = new Float64Array(256);
    this.d = new Float64Array(256);
    this.name = new Uint32Array(256);
    this.sorted = true;
    this.prefix = 0; // unsorted: its events [0, prefix) are in order, the ones after came since
    this.last = -Infinity;
    this.maxDur = 0;
    this.min = Infinity; // counters: the range of values
    this.max = -Infinity;
    /** @type {Float64Array | null} the events' indexes in the capture (a view frame's lanes) */
    this.index = null;
  }

  /** @returns {number} the bytes of its columns */
  bytes() { return this.s.length * 20 + (this.index ? this.index.length * 8 : 0); }

  /**
   * Drops the events that start before t (the lane sorted).
   * @param {number} t
   * @returns {number} how many
   */
  dropBefore(t) {
    this.ensureSorted();
    const k = lowerBound(this.s, t, 0, this.n);
    if (k === 0) return 0;
    this.s.copyWithin(0, k, this.n); this.d.copyWithin(0, k, this.n); this.name.copyWithin(0, k, this.n);
    this.n -= k;
    return k;
  }

  /**
   * Appends an event; one that starts before the last leaves the lane unsorted until
   * ensureSorted.
   * @param {number} s @param {number} d @param {number} name
   */
  push(s, d, name) {
    if (this.n === this.s.length) this.grow();
    const k = this.n++;
    this.s[k] = s; this.d[k] = d; this.name[k] = name;
    if (s >= this.last) this.last = s;
    else if (this.sorted) { this.sorted = false; this.prefix = k; } // [0, k) are in order
  }

  grow() {
    const cap = this.s.length * 2;
    const s = new Float64Array(cap), d = new Float64Array(cap), name = new Uint32Array(cap);
    s.set(this.s); d.set(this.d); name.set(this.name);
    this.s = s; this.d = d; this.name = name;
    if (this.index) { const x = new Float64Array(cap); x.set(this.index); this.index = x; }
  }

  /**
   * Puts the lane in start order (ties: in the order the events came). Only what came since
   * it was last in order is sorted, then merged into the ordered part from the first of those
   * it displaces: a live ring's lane takes a batch's worth of work, not its million events'.
   */
  ensureSorted() {
    if (this.sorted) return;
    const n = this.n, k = Math.min(this.prefix, n), s = this.s, d = this.d, nm = this.name;
    const t = n - k, idx = new Uint32Array(t);
    for (let i = 0; i < t; i++) idx[i] = k + i;
    idx.sort((a, b) => s[a] - s[b] || a - b);
    // the ordered part stays as it is up to its first start after the least that came since
    let lo = 0, hi = k;
    const least = t ? s[idx[0]] : Infinity;
    while (lo < hi) { const m = (lo + hi) >>> 1; if (s[m] <= least) lo = m + 1; else hi = m; }
    const len = n - lo, s2 = new Float64Array(len), d2 = new Float64Array(len), n2 = new Uint32Array(len);
    let i = lo, j = 0, o = 0;
    while (i < k || j < t) { // an event that came first goes first among equal starts
      const x = j < t ? idx[j] : -1;
      if (i < k && (x < 0 || s[i] <= s[x])) { s2[o] = s[i]; d2[o] = d[i]; n2[o++] = nm[i++]; }
      else { s2[o] = s[x]; d2[o] = d[x]; n2[o++] = nm[x]; j++; }
    }
    s.set(s2, lo); d.set(d2, lo); nm.set(n2, lo);
    this.sorted = true;
  }
}

/**
 * The first index in [lo, hi) whose start is >= t (hi if none).
 * @param {ArrayLike<number>} s sorted starts
 * @param {number} t @param {number} lo @param {number} hi
 * @returns {number}
 */
export function lowerBound(s, t, lo, hi) {
  while (lo < hi) {
    const m = (lo + hi) >>> 1;
    if (s[m] < t) lo = m + 1; else hi = m;
  }
  return lo;
}

export class Track {
  /** @param {number} pid @param {number} tid */
  constructor(pid, tid) {
    this.pid = pid;
    this.tid = tid;
    this.name = '';
    this.sort = 0;
    /** @type {Lane[]} Lane per depth */
    this.zones = [];
    /** @type {Lane | null} */
    this.instants = null;
    /** @type {Map<number, Lane>} name id -> Lane (d holds the value) */
    this.counters = new Map();
    this.events = 0;
    /** @type {Float64Array | null} sample times, sorted, or null */
    this.ticks = null;
    this.samples = 0;  // the thread's samples in the capture (ticks may be fewer)
    this.stored = 0;   // its events in the store (/tracks)
    this.maxDepth = 0; // its deepest zone's depth (/tracks)
    /** @type {string} what /tracks says it is (thread, async, counter), '' when not told (tracks.js trackKind) */
    this.kind = '';
    this.vZones = 0;   // the zone lanes, instants and counter its view frames have shown
    this.vInstants = false;
    this.vCounter = false;
  }
}

export class Model {
  constructor() {
    this.checksumOn = false;
    // The fields reset() empties, declared with their types; layout and data only grow.
    /** @type {Map<number, Proc>} pid -> its process */
    this.procs = new Map();
    /** @type {(string | undefined)[]} name id -> the latest name (holes: not named yet) */
    this.names = [];
    /** @type {(number | undefined)[]} name id -> fnv1a of its UTF-8 (for the checksum) */
    this.nameHash = [];
    this.baseLo = 0;
    this.baseHi = 0;
    this.haveBase = false;
    this.minT = Infinity;
    this.maxT = -Infinity;
    this.events = 0;
    this.ticks = 0;
    this.checksum = 0;
    this.layout = 0;
    this.data = 0;
    /** @type {Track | null} the track of the last event (most come in runs of one thread) */
    this.lastTrack = null;
    this.ringMax = RING_MAX;
    this.cut = -Infinity;   // the ring holds no event that starts before it
    this.received = 0;      // events that came, held or not
    this.storedEvents = 0;  // the stored capture's events (/tracks), when it is paged in
    /** @type {[number, number][]} per batch held: its latest start and its events, oldest first */
    this.batches = [];
    /** @type {Map<string, HeldAttrs>} held events' attributes (attrKey), oldest first */
    this.attrs = new Map();
    /** frames from frame marks held (kind 3, extra 255): start, duration, name (every set's) */
    this.frames = new Lane();
    this.reset();
  }

  reset() {
    this.procs = new Map(); // pid -> {pid, name, sort, threads: Map tid -> Track}
    this.names = [];
    this.nameHash = [];
    this.baseLo = 0;
    this.baseHi = 0;
    this.haveBase = false;
    this.minT = Infinity;
    this.maxT = -Infinity;
    this.events = 0;
    this.ticks = 0; // sample ticks held, on every track
    this.checksum = 0;
    this.layout++; // changes when rows appear or are renamed
    this.data++;   // changes when events arrive
    this.names.length = 0;
    this.lastTrack = null;
    this.cut = -Infinity;
    this.received = 0;
    this.storedEvents = 0;
    this.batches = [];
    this.attrs = new Map();
    this.frames = new Lane();
  }

  /**
   * The attributes of the batch about to be appended (an attrs frame's rows, by index in
   * it), kept by event (attrKey) for the details, at most ATTRS_MAX events' (the oldest go).
   * @param {import('./wire.js').AttrRow[]} rows @param {Batch} b
   */
  attach(rows, b) {
    if (!this.haveBase && b.count) { this.baseLo = b.startLo[0]; this.baseHi = b.startHi[0]; this.haveBase = true; }
    for (const r of rows) {
      const i = r.event;
      if (i >= b.count) continue;
      const s = (b.startHi[i] - this.baseHi) * TWO32 + (b.startLo[i] - this.baseLo), k = b.kind[i];
      const depth = k === 1 || k === 2 ? -1 : b.depth[i], key = attrKey(b.pid[i], b.tid[i], depth, s);
      const have = this.attrs.get(key);
      if (have) have.rows.push(r);
      else this.attrs.set(key, { rows: [r], pid: b.pid[i], tid: b.tid[i], depth, s, d: b.durHi[i] * TWO32 + b.durLo[i], name: b.name[i] });
    }
    for (const key of this.attrs.keys()) {
      if (this.attrs.size <= ATTRS_MAX) break;
      this.attrs.delete(key);
    }
  }

  /**
   * A held event's attributes (attach), or undefined.
   * @param {number} pid @param {number} tid @param {number} depth -1 for an instant @param {number} s its start
   */
  attrsOf(pid, tid, depth, s) { const h = this.attrs.get(attrKey(pid, tid, depth, s)); return h && h.rows; }

  /**
   * The base of the times: u64 ns (a BigInt); kept when it is set already.
   * @param {bigint} ns
   */
  setBase(ns) {
    if (this.haveBase) return;
    this.baseHi = Number(ns >> 32n); this.baseLo = Number(ns & 0xffffffffn); this.haveBase = true;
  }

  /** @param {bigint} ns a u64 time @returns {number} it in ns from the base */
  rel(ns) { return Number(ns - (BigInt(this.baseHi) << 32n | BigInt(this.baseLo))); }

  /** @param {number} t ns from the base @returns {bigint} it as a u64 time (0 at the least) */
  abs(t) {
    const v = (BigInt(this.baseHi) << 32n | BigInt(this.baseLo)) + BigInt(Math.floor(t));
    return v < 0n ? 0n : v;
  }

  /**
   * @param {Batch} b a batch (not empty)
   * @returns {number} its greatest start, in ns from the base (which it sets if unset)
   */
  maxStart(b) {
    if (!this.haveBase) { this.baseLo = b.startLo[0]; this.baseHi = b.startHi[0]; this.haveBase = true; }
    let m = -Infinity;
    for (let i = 0; i < b.count; i++) m = Math.max(m, (b.startHi[i] - this.baseHi) * TWO32 + (b.startLo[i] - this.baseLo));
    return m;
  }

  /** @returns {number} the bytes of the events held */
  bytes() {
    let n = 0;
    for (const p of this.procs.values())
      for (const t of p.threads.values()) {
        for (const l of t.zones) n += l.bytes();
        if (t.instants) n += t.instants.bytes();
        for (const l of t.counters.values()) n += l.bytes();
      }
    return n;
  }

  /** Past ringMax events held, drops the oldest batches' worth down to 3/4 of it. */
  trim() {
    if (this.events <= this.ringMax) return;
    let keep = this.events, cut = this.cut, i = 0;
    while (i < this.batches.length && keep > this.ringMax * 0.75) {
      keep -= this.batches[i][1];
      cut = Math.max(cut, this.batches[i][0]);
      i++;
    }
    this.batches.splice(0, i);
    // the cut is just past the latest start dropped: everything before it goes
    cut = cut + 1;
    let dropped = 0;
    for (const p of this.procs.values())
      for (const t of p.threads.values()) {
        for (const l of t.zones) dropped += l.dropBefore(cut);
        if (t.instants) dropped += t.instants.dropBefore(cut);
        for (const l of t.counters.values()) dropped += l.dropBefore(cut);
      }
    this.frames.dropBefore(cut);
    this.cut = cut;
    this.events -= dropped;
    this.data++;
  }

  /**
   * @param {number} pid
   * @returns {Proc} its process, made when it is new
   */
  proc(pid) {
    let p = this.procs.get(pid);
    if (!p) {
      p = { pid, name: '', sort: 0, threads: new Map() };
      this.procs.set(pid, p);
      this.layout++;
    }
    return p;
  }

  /**
   * @param {number} pid @param {number} tid
   * @returns {Track} its track, made when it is new
   */
  track(pid, tid) {
    const l = this.lastTrack;
    if (l && l.pid === pid && l.tid === tid) return l;
    const p = this.proc(pid);
    let t = p.threads.get(tid);
    if (!t) {
      t = new Track(pid, tid);
      p.threads.set(tid, t);
      this.layout++;
    }
    this.lastTrack = t;
    return t;
  }

  /**
   * @param {number} id a name id
   * @returns {string} its name, or #id when it has none
   */
  nameOf(id) {
    const n = this.names[id];
    return n === undefined ? `#${id}` : n;
  }

  /**
   * @param {number} id a name id
   * @returns {number} fnv1a of its name (of #id when it has none), as the checksum takes it
   */
  hashOf(id) {
    let h = this.nameHash[id];
    if (h === undefined) h = fnv1a(new TextEncoder().encode(`#${id}`));
    return h;
  }

  /**
   * Entries of a names frame (wire.js decodeNames): the latest wins.
   * @param {NameEntry[]} entries
   */
  applyNames(entries) {
    for (const e of entries) {
      if (e.type === 1) { this.names[e.a] = e.text; this.nameHash[e.a] = fnv1a(e.bytes); }
      else if (e.type === 2) this.track(e.a, e.b).name = e.text;
      else if (e.type === 3) this.proc(e.a).name = e.text;
      else if (e.type === 4) this.proc(e.a).sort = e.value;
      else if (e.type === 5) this.track(e.a, e.b).sort = e.value;
    }
    this.layout++;
    this.data++;
  }

  /**
   * A decoded batch (wire.js newBatch columns).
   * @param {Batch} b
   */
  append(b) {
    const n = b.count;
    if (n === 0) return;
    if (!this.haveBase) {
      this.baseLo = b.startLo[0]; this.baseHi = b.startHi[0]; this.haveBase = true;
    }
    const baseLo = this.baseLo, baseHi = this.baseHi, sum = this.checksumOn, cut = this.cut;
    let minT = this.minT, maxT = this.maxT, ck = this.checksum, layout = false, held = 0, last = -Infinity;
    for (let i = 0; i < n; i++) {
      if (sum) ck = (ck + eventMix(b.startLo[i], b.startHi[i], b.durLo[i], b.durHi[i], this.hashOf(b.name[i]))) >>> 0;
      const s = (b.startHi[i] - baseHi) * TWO32 + (b.startLo[i] - baseLo);
      if (s < cut) continue; // before the ring's cut: the view frames draw it
      const t = this.track(b.pid[i], b.tid[i]);
      const kind = b.kind[i];
      let lane, d;
      if (kind === 5) { // counter: dur_ns holds a double's bits
        u32[0] = b.durLo[i]; u32[1] = b.durHi[i];
        d = f64[0];
        const id = b.name[i];
        lane = t.counters.get(id);
        if (!lane) { lane = new Lane(); t.counters.set(id, lane); layout = true; }
        if (d < lane.min) lane.min = d;
        if (d > lane.max) lane.max = d;
        if (s > maxT) maxT = s;
      } else {
        d = b.durHi[i] * TWO32 + b.durLo[i];
        if (kind === 1 || kind === 2) {
          lane = t.instants;
          if (!lane) { lane = t.instants = new Lane(); layout = true; }
        } else {
          const depth = b.depth[i];
          while (t.zones.length <= depth) { t.zones.push(new Lane()); layout = true; }
          lane = t.zones[depth];
        }
        if (s + d > maxT) maxT = s + d;
        if (d > lane.maxDur) lane.maxDur = d;
      }
      if (s < minT) minT = s;
      lane.push(s, d, b.name[i]);
      if (kind === 3 && b.extra[i] === 255) this.frames.push(s, d, b.name[i]);
      if (s > last) last = s;
      t.events++;
      held++;
    }
    this.minT = minT;
    this.maxT = maxT;
    this.checksum = ck;
    this.events += held;
    this.received += n;
    if (held) this.batches.push([last, held]);
    this.data++;
    if (layout) this.layout++;
    this.trim();
  }

  // The base of the times, in ns since the clock's start (u64 ns as a float64: exact up to
  // 2^53, a clock 104 days old).
  baseNs() { return this.baseHi * TWO32 + this.baseLo; }

  /**
   * A profile's ticks ([[tid, t_ns], ...]) and threads ([{tid, samples}]), each on the track
   * of its tid (one the names created, or a new one in process 0 when none has that tid).
   * Replaces the ticks held before.
   * @param {[number, number][]} ticks [tid, time_ns] per sample
   * @param {{ tid: number, samples: number }[]} threads
   */
  applyTicks(ticks, threads) {
    /** @type {Map<number, Track>} */
    const byTid = new Map();
    for (const p of this.procs.values())
      for (const t of p.threads.values()) {
        if (!byTid.has(t.tid)) byTid.set(t.tid, t);
        t.ticks = null; t.samples = 0;
      }
    this.ticks = 0;
    if (!ticks.length) { this.layout++; this.data++; return; }
    if (!this.haveBase) {
      const t0 = ticks.reduce((m, x) => Math.min(m, x[1]), Infinity);
      this.baseHi = Math.floor(t0 / TWO32); this.baseLo = t0 - this.baseHi * TWO32; this.haveBase = true;
    }
    const b = this.baseNs();
    /** @type {Map<number, number[]>} tid -> its sample times, on the base */
    const per = new Map();
    for (const [tid, t] of ticks) {
      let a = per.get(tid);
      if (!a) { a = []; per.set(tid, a); }
      a.push(t - b);
    }
    /** @param {number} tid */
    const track = (tid) => {
      let t = byTid.get(tid);
      if (!t) { t = this.track(0, tid); byTid.set(tid, t); }
      return t;
    };
    for (const [tid, a] of per) {
      const t = track(tid), s = Float64Array.from(a).sort();
      t.ticks = s;
      this.ticks += s.length;
      if (s[0] < this.minT) this.minT = s[0];
      if (s[s.length - 1] > this.maxT) this.maxT = s[s.length - 1];
    }
    for (const th of threads) if (per.has(th.tid)) track(th.tid).samples = th.samples;
    this.layout++;
    this.data++;
  }

  /**
   * Processes, then their threads, in the capture's sort order (sort index, then id).
   * @returns {ProcTracks[]}
   */
  sortedTracks() {
    const procs = [...this.procs.values()].sort((a, b) => a.sort - b.sort || a.pid - b.pid);
    return procs.map((p) => ({ proc: p, threads: [...p.threads.values()].filter((t) => t.events > 0 || t.stored > 0 || t.ticks).sort((a, b) => a.sort - b.sort || a.tid - b.tid) }))
      .filter((g) => g.threads.length > 0);
  }
}
