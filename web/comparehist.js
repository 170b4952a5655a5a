// @ts-check
// comparehist.js: one name's duration histograms of two captures, overlaid on one log axis
// (the compare view, compare.js). Each capture's histogram is its /stats row's `hist` (the
// sketch's buckets, docs/serve.md "Statistics"), gathered into the same bars: at most BARS
// bars of equal log width between the least and the greatest duration of either capture,
// as the name panel's (namepanel.js) are over one (but that the axis starts at the least
// nonzero duration when some are 0 ns). A is drawn as filled bars, B as outlined
// bars over them (no fill), so that where both have counts both stay readable; each bar's
// height is its count over the taller series' fullest bar. Drawn as SVG: each bar is an
// element carrying its count and bounds, which the tests read.
import { BARS, el } from './namepanel.js';
import { fmtDur } from './timeline.js';

/** @typedef {import('./namepanel.js').StatsRow} StatsRow */
/** @typedef {{ lo: number, hi: number, a: number, b: number }} SharedBar */

const SVG = 'http://www.w3.org/2000/svg';

/**
 * Two captures' buckets in the same n bars of equal log width over [min, max] (ns): the
 * bounds as namepanel.js's histBars draws them for one, and each series' count per bar (a
 * bucket goes to the bar its estimate falls in, clamped to the ends).
 * @param {[number, number][]} ha @param {[number, number][]} hb @param {number} min @param {number} max @param {number} n
 * @returns {SharedBar[]}
 */
export function sharedBars(ha, hb, min, max, n) {
  // a capture of zero-length instances would start the log axis at 1 ns, far left of the
  // rest: it starts at the least nonzero bucket instead, the zeros in the first bar
  let least = Infinity;
  for (const [v] of ha) if (v > 0 && v < least) least = v;
  for (const [v] of hb) if (v > 0 && v < least) least = v;
  const lo = Math.max(1, min > 0 || least === Infinity ? min : least), hi = Math.max(lo + 1, max);
  n = Math.max(1, Math.min(n, Math.max(ha.length, hb.length)));
  const l0 = Math.log(lo), w = (Math.log(hi) - l0) / n;
  /** @type {SharedBar[]} */
  const bars = [];
  for (let i = 0; i < n; i++)
    bars.push({ lo: i === 0 ? min : Math.ceil(Math.exp(l0 + i * w)), hi: i === n - 1 ? max : Math.ceil(Math.exp(l0 + (i + 1) * w)) - 1, a: 0, b: 0 });
  /** @param {number} v @returns {number} */
  const at = (v) => (v <= lo ? 0 : Math.min(n - 1, Math.max(0, Math.floor((Math.log(v) - l0) / w))));
  for (const [v, c] of ha) bars[at(v)].a += c;
  for (const [v, c] of hb) bars[at(v)].b += c;
  return bars;
}

/**
 * @param {string} tag @param {Record<string, string | number>} attrs
 * @returns {SVGElement}
 */
function svg(tag, attrs) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return e;
}

/**
 * Draws the two histograms of one name into root (emptied first); a or b null: that
 * capture has no such name (its series is empty).
 * @param {HTMLElement} root
 * @param {string} name
 * @param {{ label: string, row: StatsRow | null, p50?: number }} a
 * @param {{ label: string, row: StatsRow | null, p50?: number }} b (p50: the exact median, where
 *   the caller has it, for the legend; else the row's, within 1 %)
 * @returns {SharedBar[]} the bars drawn
 */
export function drawOverlay(root, name, a, b) {
  root.textContent = '';
  const ra = a.row, rb = b.row;
  const rows = [ra, rb].filter((r) => r !== null);
  const head = document.createElement('div');
  head.className = 'cmp-hist-head';
  const title = document.createElement('b');
  title.textContent = name;
  title.id = 'cmp-hist-name';
  head.append(title);
  // the legend: each series' swatch, capture and count
  for (const [cls, s, r] of /** @type {[string, { label: string, p50?: number }, StatsRow | null][]} */ ([['a', a, ra], ['b', b, rb]])) {
    const k = document.createElement('span');
    k.className = `cmp-key cmp-key-${cls}`;
    k.dataset.series = cls;
    const sw = document.createElement('i');
    k.append(sw, `${s.label}: ${r ? `${r.count.toLocaleString('en')} · p50 ${fmtDur(s.p50 !== undefined ? s.p50 : r.p50_ns)}` : 'none'}`);
    head.append(k);
  }
  root.append(head);
  if (!rows.length) {
    const n = document.createElement('div');
    n.className = 'hint';
    n.textContent = `no ${name} in either capture`;
    root.append(n);
    return [];
  }
  const min = Math.min(...rows.map((r) => r.min_ns)), max = Math.max(...rows.map((r) => r.max_ns));
  const bars = sharedBars(ra ? ra.hist : [], rb ? rb.hist : [], min, max, BARS);
  const top = Math.max(1, ...bars.map((x) => Math.max(x.a, x.b)));
  head.append(el('span', 'hint', `height: count (the tallest ${top.toLocaleString('en')})`));
  const W = 100 * bars.length, H = 100;
  const plot = svg('svg', { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: 'none', class: 'cmp-plot', id: 'cmp-hist-plot' });
  /** @param {number} c @returns {number} a count's height in the plot */
  const h = (c) => (c ? Math.max(1.5, (H * c) / top) : 0);
  bars.forEach((x, i) => {
    const r = svg('rect', { x: i * 100 + 8, width: 84, y: H - h(x.a), height: h(x.a), class: 'cmp-bar-a',
      'data-series': 'a', 'data-i': i, 'data-count': x.a, 'data-lo': x.lo, 'data-hi': x.hi });
    const t = svg('title', {});
    t.textContent = `${a.label}: ${x.a.toLocaleString('en')} between ${fmtDur(x.lo)} and ${fmtDur(x.hi)}`;
    r.append(t);
    plot.append(r);
  });
  // B over A: outlines only (the stroke keeps its width however the plot is stretched)
  bars.forEach((x, i) => {
    const r = svg('rect', { x: i * 100 + 8, width: 84, y: H - h(x.b), height: h(x.b), class: 'cmp-bar-b',
      'vector-effect': 'non-scaling-stroke', 'data-series': 'b', 'data-i': i, 'data-count': x.b, 'data-lo': x.lo, 'data-hi': x.hi });
    const t = svg('title', {});
    t.textContent = `${b.label}: ${x.b.toLocaleString('en')} between ${fmtDur(x.lo)} and ${fmtDur(x.hi)}`;
    r.append(t);
    plot.append(r);
  });
  const axis = document.createElement('div');
  axis.className = 'np-axis';
  /** @param {string} text @param {string} [cls] */
  const span = (text, cls) => { const s = document.createElement('span'); if (cls) s.className = cls; s.textContent = text; return s; };
  axis.append(span(fmtDur(min)));
  const n = bars.length;
  for (const f of [0.25, 0.5, 0.75]) {
    const x = bars[Math.floor(n * f)];
    if (n >= 8 && x) axis.append(span(fmtDur(x.lo)));
    if (f === 0.5) axis.append(span('duration, log scale', 'hint'));
  }
  axis.append(span(fmtDur(max)));
  root.append(plot, axis);
  return bars;
}
