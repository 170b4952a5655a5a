// @ts-check
// debug.js: the page's hooks for the browser tests (tests/browser/) and the viewer's
// benchmark (bench/viewer_bench.mjs), in one place. window.troveStats is the session's
// stats object itself (session.js: counts, state, error); window.troveView says where things
// are drawn, times the draws, and reads the model, the pager's view frames and the samples
// panel; window.troveLayout reads the tracks' layout and the rows it makes (tracks.js), the
// selected event's flows (flows.js) and the counter under the pointer, and says where to
// click a label, a pin mark or a process's ▲ ▼. Nothing of the page calls them: they only
// read, except setRange and fit, which move the view as a user would.

import { LABEL_W } from './timeline.js';

/**
 * @param {{
 *   stats: import('./session.js').Stats,
 *   model: import('./model.js').Model,
 *   view: import('./timeline.js').Timeline,
 *   samples: import('./panels.js').Samples,
 *   canvas: HTMLCanvasElement,
 *   pager: import('./pages.js').Pager,
 * }} page
 */
export function installDebugHooks({ stats, model, view, samples, canvas, pager }) {
  /** @param {import('./pages.js').Placed} p */
  const frame = (p) => ({ url: p.url, from_ns: p.f.fromNs.toString(), to_ns: p.f.toNs.toString(), shift: p.f.shift,
    tracks: p.f.tracks.length, events: p.f.nevents, cells: p.f.ncells, held: p.f.held, t0: p.t0, t1: p.t1 });
  /** @returns {[import('./model.js').Track, number, import('./model.js').Lane][]} the zone lanes of the ring and the frames: track, depth, lane */
  const lanesOf = () => {
    /** @type {[import('./model.js').Track, number, import('./model.js').Lane][]} */
    const out = [];
    for (const p of model.procs.values())
      for (const t of p.threads.values()) t.zones.forEach((l, d) => out.push([t, d, l]));
    for (const p of [pager.overview, ...pager.detail]) {
      if (!p) continue;
      for (const pt of p.tracks.values()) pt.zones.forEach((l, d) => { if (l) out.push([model.track(pt.vt.pid, pt.vt.tid), d, l]); });
    }
    return out;
  };
  const w = /** @type {Window & { troveStats?: object, troveView?: object, troveLayout?: object }} */ (window);
  /** @param {import('./timeline.js').Row} r */
  const rowInfo = (r) => ({ kind: r.kind, label: r.label, key: r.key, pid: r.pid, pinned: r.pinned, collapsed: r.collapsed, depth: r.depth,
    y: view.sy(r), h: r.h, members: r.members.length, lo: r.lo, hi: r.hi });
  // the layout (tracks.js) and what it draws: the rows laid out, those on screen, the
  // encoded layout= value; the flows of the selection (flows.js) and the counter under the
  // pointer. Read-only but for jumpFlow, which clicks a flow's far end as a user would.
  w.troveLayout = {
    get: () => view.tracks.get(),
    encoded: () => view.tracks.encoded(),
    rows() { view.draw(); return view.rows.map(rowInfo); },
    drawn() { view.draw(); return view.rows.filter((r) => { const y = view.sy(r); return y + r.h > 24 + (r.pinned ? 0 : view.pinH) && y < view.cssH; }).map(rowInfo); },
    pinH: () => view.pinH,
    /** @param {number} pid @param {number} tid @param {number} t @returns {[number, number, number] | null} the deepest held zone there: depth, start, dur */
    zoneAt: (pid, tid, t) => view.zoneAt(model.track(pid, tid), t),
    flows: () => view.flows.bound.map((f) => ({ dir: f.dir, id: f.id, name: f.name, at: f.at, other: f.other })),
    flowState: () => ({ answers: view.flows.selAnswers, all: view.flows.all, chains: view.flows.chains.length, error: view.flows.error }),
    flowEnds() { view.draw(); const r = canvas.getBoundingClientRect(); return view.flowEnds.map((f) => [r.left + f[0], r.top + f[1]]); },
    selected: () => (view.selected ? { pid: view.selected.track.pid, tid: view.selected.track.tid, depth: view.selected.depth, start: view.selected.start,
      dur: view.selected.dur, name: view.selected.name, event: view.selected.event } : null),
    counterHover: () => (view.counterHover ? { name: view.counterHover.name, t: view.counterHover.t, value: view.counterHover.value,
      exact: view.counterHover.exact, count: view.counterHover.count } : null),
    /** @param {number} t @param {string} key a counter row's track "pid:tid" @returns {[number, number] | null} its client point at t */
    counterPoint(t, key) {
      view.draw();
      const r = canvas.getBoundingClientRect(), row = view.rows.find((x) => x.kind === 'counter' && x.key === key);
      return row ? [r.left + view.xOf(t), r.top + view.sy(row) + 20] : null;
    },
    /** @param {string} key a row's track "pid:tid" (or "p:PID", a process header) @returns {[number, number] | null} the client point of its label */
    labelPoint(key) {
      view.draw();
      const r = canvas.getBoundingClientRect();
      const row = key.startsWith('p:') ? view.rows.find((x) => x.kind === 'proc' && x.pid === Number(key.slice(2))) : view.rows.find((x) => x.kind !== 'proc' && x.key === key);
      return row ? [r.left + 60, r.top + view.sy(row) + Math.min(row.h, 16) / 2] : null;
    },
    /** @param {number} pid @param {number} by -1 up, 1 down @returns {[number, number] | null} the client point of a process's ▲ or ▼ */
    movePoint(pid, by) {
      view.draw();
      const r = canvas.getBoundingClientRect(), row = view.rows.find((x) => x.kind === 'proc' && x.pid === pid);
      return row ? [r.left + LABEL_W - (by < 0 ? 25 : 11), r.top + view.sy(row) + 9] : null;
    },
    /** @param {string} key @returns {[number, number] | null} the client point of a track's pin mark */
    pinPoint(key) {
      view.draw();
      const r = canvas.getBoundingClientRect(), row = view.rows.find((x) => x.kind !== 'proc' && x.key === key);
      if (!row) return null;
      return row.kind === 'counter' ? [r.left + LABEL_W - 57, r.top + view.sy(row) + 9] : [r.left + LABEL_W - 13, r.top + view.sy(row) + Math.min(row.h, 16) / 2 + 1];
    },
  };
  w.troveStats = stats;
  w.troveView = {
    model,
    range: () => [view.t0, view.t1],
    labels() { view.draw(); return view.rows.map((r) => r.label); }, // the rows' labels, top down
    /**
     * The client point of time t (ns) on thread pid:tid at depth, or null if no such row.
     * @param {number} t @param {number} pid @param {number} tid @param {number} depth
     */
    clientOf(t, pid, tid, depth) {
      const r = canvas.getBoundingClientRect();
      view.draw();
      const row = view.rows.find((x) => x.kind === 'thread' && x.track && x.track.pid === pid && x.track.tid === tid);
      if (!row) return null;
      return [r.left + view.xOf(t), r.top + view.sy(row) + depth * 16 + 8];
    },
    /**
     * The client point of an instant at time t (ns) on thread pid:tid (its instants' lane),
     * or null if no such row.
     * @param {number} t @param {number} pid @param {number} tid
     */
    instantOf(t, pid, tid) {
      const r = canvas.getBoundingClientRect();
      view.draw();
      const track = model.track(pid, tid);
      const y = view.laneY({ track, lane: 'instant', depth: 0, index: -1, start: t, dur: 0, nameId: 0, name: '', merged: 1 });
      return y === null ? null : [r.left + view.xOf(t), r.top + y + 6];
    },
    /** @param {string} name */
    zoneOf(name) { // the longest zone called name held (ring or frames): {start, dur, pid, tid, depth, index}
      /** @type {{ start: number, dur: number, pid: number, tid: number, depth: number, index: number } | null} */
      let best = null;
      for (const [t, d, l] of lanesOf())
        for (let i = 0; i < l.n; i++)
          if (model.nameOf(l.name[i]) === name && (!best || l.d[i] > best.dur))
            best = { start: l.s[i], dur: l.d[i], pid: t.pid, tid: t.tid, depth: d, index: l.index ? l.index[i] : -1 };
      return best;
    },
    // the view frames held: the overview, the others, their bytes and the ring's, the asks
    frames: () => ({
      overview: pager.overview ? frame(pager.overview) : null, detail: pager.detail.map(frame),
      held: pager.held(), ring: model.bytes(), ringEvents: model.events, cut: model.cut, asked: pager.asked,
      answers: pager.answers, inflight: !!pager.inflight, timer: !!pager.timer, last: pager.last,
    }),
    // counter series: the ring's per name, and the overview's counter cells per track: [name, samples, min, max]
    counters() {
      /** @type {[string, number, number, number][]} */
      const out = [];
      for (const p of model.procs.values())
        for (const t of p.threads.values()) for (const [id, l] of t.counters) out.push([model.nameOf(id), l.n, l.min, l.max]);
      const ov = pager.overview;
      if (ov)
        for (const pt of ov.tracks.values()) {
          const r = pt.cells.get(257);
          if (!r) continue;
          let n = 0, lo = Infinity, hi = -Infinity;
          for (let i = r[0]; i < r[1]; i++) {
            n += ov.f.cCount[i];
            lo = Math.min(lo, ov.f.cMin[pt.vt.v0 + i - r[0]]);
            hi = Math.max(hi, ov.f.cMax[pt.vt.v0 + i - r[0]]);
          }
          out.push([model.nameOf(ov.f.cName[r[0]]), n, lo, hi]);
        }
      return out.sort();
    },
    draw() { view.draw(); return view.lastStats; },
    drawTimes: () => view.drawTimes.slice(),
    /** @param {number} t0 @param {number} t1 */
    setRange(t0, t1) { view.t0 = t0; view.t1 = t1; view.fitted = false; view.setFollow(false); view.draw(); return view.lastStats; },
    ticks() { // the sample ticks held, per thread: [{pid, tid, ticks, samples}]
      const out = [];
      for (const p of model.procs.values())
        for (const t of p.threads.values()) if (t.ticks) out.push({ pid: t.pid, tid: t.tid, ticks: t.ticks.length, samples: t.samples });
      return out;
    },
    profile: () => samples.panel.data,
    baseNs: () => model.baseNs(),
    fit() { view.fit(); view.draw(); },
    /** @param {number} pid @param {number} tid its row scrolled into view */
    scrollTo(pid, tid) { view.scrollTo(model.track(pid, tid)); view.draw(); },
    extent: () => [model.minT, model.maxT],
    // the time as the service writes it (u64 ns, a decimal string) of t ns from the base, and back
    absNs: (/** @type {number} */ t) => model.abs(t).toString(),
    relNs: (/** @type {string} */ ns) => model.rel(BigInt(ns)),
    pixels() { // distinct colours in a sample of the canvas, and how many pixels are not white
      const ctx = /** @type {CanvasRenderingContext2D} */ (canvas.getContext('2d'));
      const d = ctx.getImageData(0, 0, canvas.width, canvas.height).data, seen = new Set();
      let inked = 0;
      for (let i = 0; i < d.length; i += 4 * 7) {
        const v = (d[i] << 16) | (d[i + 1] << 8) | d[i + 2];
        seen.add(v);
        if (v !== 0xffffff) inked++;
      }
      return { colours: seen.size, inked, samples: Math.floor(d.length / 28) };
    },
  };
}

/**
 * The frame graph's hooks (framegraph.js): window.troveFrames says what it shows (the set,
 * its frames' starts and durations, the caption's counts) and where a frame's bar is.
 * Read-only.
 * @param {import('./framegraph.js').FrameGraph} g
 */
export function installFrameHooks(g) {
  const w = /** @type {Window & { troveFrames?: object }} */ (window);
  w.troveFrames = {
    shown: () => !g.root.hidden,
    state: () => ({ set: g.set, frames: Number(g.caption.dataset.frames || 0), slow: Number(g.caption.dataset.slow || 0),
      s: Array.from(g.s), d: Array.from(g.d) }),
    /** @param {number} i @returns {[number, number] | null} */
    barAt(i) { g.draw(); return g.barAt(i); },
  };
}

/**
 * The compare view's hooks (compare.js): window.troveCompare says what each side holds and
 * shows (its range, rows laid out and drawn, frames, first instance), the offset between
 * them, the table's names in order and the histogram's bars as drawn. Read-only.
 * @param {import('./compare.js').Compare} cmp
 */
export function installCompareHooks(cmp) {
  /** @param {import('./compare.js').Side} s */
  const side = (s) => {
    s.view.draw();
    const st = s.view.lastStats;
    return { name: s.name, ready: s.ready, error: s.error, range: [s.view.t0, s.view.t1], rows: s.view.rows.length,
      drawn: st.drawn || 0, drawnTracks: (st.rows || []).length, overview: !!s.pager.overview, answers: s.pager.answers,
      primary: st.primary ? st.primary.url : null, first: s.first === undefined ? null : s.first, firstNs: s.firstNs,
      base: s.model.haveBase ? s.model.baseNs().toString() : '', rects: st.rects,
      coloured: s.view.search ? s.model.names.filter((n, id) => n !== undefined && s.view.search && s.view.search[id]) : null };
  };
  const w = /** @type {Window & { troveCompare?: object }} */ (window);
  w.troveCompare = {
    state: () => ({ active: cmp.active, a: cmp.sides[0] ? side(cmp.sides[0]) : null, b: cmp.sides[1] ? side(cmp.sides[1]) : null,
      offset: cmp.offset, align: cmp.align, name: cmp.name, histReady: cmp.histReady, diff: !!cmp.diff, diffError: cmp.diffError }),
    rows: () => (cmp.diff ? cmp.diff.rows.map((r) => r.name) : null),
    bars: () => cmp.bars.map((b) => ({ ...b })),
  };
}
