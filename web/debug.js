// @ts-check
// debug.js: the page's hooks for the browser tests (tests/browser/) and the viewer's
// benchmark (bench/viewer_bench.mjs), in one place. window.troveStats is the session's
// stats object itself (session.js: counts, state, error); window.troveView says where things
// are drawn, times the draws, and reads the model and the samples panel. Nothing of the
// page calls them: they only read, except setRange and fit, which move the view as a user
// would.

/**
 * @param {{
 *   stats: import('./session.js').Stats,
 *   model: import('./model.js').Model,
 *   view: import('./timeline.js').Timeline,
 *   samples: import('./panels.js').Samples,
 *   canvas: HTMLCanvasElement,
 * }} page
 */
export function installDebugHooks({ stats, model, view, samples, canvas }) {
  const w = /** @type {Window & { troveStats?: object, troveView?: object }} */ (window);
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
      const row = view.rows.find((x) => x.track && x.track.pid === pid && x.track.tid === tid);
      if (!row) return null;
      return [r.left + view.xOf(t), r.top + 24 + row.y - view.scrollY + depth * 16 + 8];
    },
    /** @param {string} name */
    zoneOf(name) { // the longest zone called name: {start, dur, pid, tid, depth}
      /** @type {{ start: number, dur: number, pid: number, tid: number, depth: number } | null} */
      let best = null;
      for (const p of model.procs.values())
        for (const t of p.threads.values())
          for (let d = 0; d < t.zones.length; d++) {
            const l = t.zones[d];
            for (let i = 0; i < l.n; i++)
              if (model.nameOf(l.name[i]) === name && (!best || l.d[i] > best.dur)) best = { start: l.s[i], dur: l.d[i], pid: t.pid, tid: t.tid, depth: d };
          }
      return best;
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
    extent: () => [model.minT, model.maxT],
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
