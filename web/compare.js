// @ts-check
// compare.js: two captures side by side, opened by the fragment #compare=A,B (app.js routes
// it here; name=X and align=first keep the selected name and the alignment, so a reload
// shows the same). Three parts, each from the service's answers only:
//   - the diff table: GET /api/diff?a=A&b=B (docs/serve.md), one row per name in the order
//     the service sorts them (significant slower first, then new, significant faster, gone,
//     the rest by the change of total time): each capture's count, total, p50 and p99,
//     B's over A's as +x% / −x%, and a mark for a significant change, a new and a gone
//     name. A click on a row selects its name;
//   - the selected name's duration histograms overlaid (comparehist.js), from each
//     capture's /stats?name=X&limit=1 row;
//   - the two timelines stacked, each a Timeline of its own (timeline.js) over its own
//     model and pager (view frames of what is on screen, pages.js), half the height each.
//     They share one time axis: a zoom or a pan on either (wheel, drag, keys) is applied to
//     the other, B's range being A's plus an offset: 0 when aligned at each capture's start
//     (times count from each capture's first event), else, aligned at the selected name's
//     first instance (/events?name=X&limit=1 of each), B's first instance's time minus A's.
//     Each draws its own axis in its own capture's times; the bar says the offset.
// A capture the service does not have is said in the service's words (its 404's error).
import { Model } from './model.js';
import { el } from './namepanel.js';
import { Pager } from './pages.js';
import { Timeline, fmtDur } from './timeline.js';
import { api } from './session.js';
import { drawOverlay } from './comparehist.js';

/**
 * What the fragment asks the compare view for.
 * @typedef {{ a: string, b: string, name: string, align: boolean }} CompareParams
 */
/**
 * One capture's statistics of a name in /api/diff's answer.
 * @typedef {{ count: number, total_ns: number, min_ns: number, p50_ns: number, p90_ns: number, p99_ns: number, max_ns: number }} DiffSide
 */
/**
 * A row of /api/diff (docs/serve.md): a name in A, in B or in both, its statistics in each,
 * B's over A's (a ratio null where A's is 0), B's minus A's, and the test of its durations.
 * @typedef {{ name: string, thread?: string, in: 'both' | 'a' | 'b', change: 'slower' | 'faster' | 'same' | 'new' | 'gone',
 *   significant: boolean, a: DiffSide | null, b: DiffSide | null,
 *   ratio: { count: number | null, total: number | null, p50: number | null, p90: number | null, p99: number | null, max: number | null } | null,
 *   delta: { count: number, total_ns: number, p50_ns: number, p90_ns: number, p99_ns: number, max_ns: number } | null,
 *   test: { method: string, u: number, z: number, p: number, effect: number, shift?: number } | null }} DiffRow
 */
/**
 * The answer of GET /api/diff.
 * @typedef {{ a: { capture: string, from_ns: number, to_ns: number, events: number, names: number },
 *   b: { capture: string, from_ns: number, to_ns: number, events: number, names: number },
 *   by: string, method: string, alpha: number, min_effect: number, min_count: number, nrows: number, significant?: number,
 *   rows: DiffRow[] }} DiffAnswer (significant: the significant rows of all nrows)
 */
/**
 * One side of the comparison: its capture, model, pager and timeline; the first instance
 * of the selected name (ns from its base; null: none, undefined: not asked yet).
 * @typedef {{ key: 'a' | 'b', name: string, model: Model, pager: Pager, view: Timeline, canvas: HTMLCanvasElement,
 *   error: string, ready: boolean, first: number | null | undefined, firstNs: string }} Side
 */

/**
 * The compare view the fragment names, or null when it names none.
 * @returns {CompareParams | null}
 */
export function compareParams() {
  const h = new URLSearchParams(location.hash.slice(1));
  const c = h.get('compare');
  if (c === null) return null;
  const i = c.indexOf(',');
  return { a: i < 0 ? c : c.slice(0, i), b: i < 0 ? '' : c.slice(i + 1), name: h.get('name') || '', align: h.get('align') === 'first' };
}

/**
 * A ratio (B over A) as a change in percent: +12%, −3.4%, ±0%; '–' when there is none.
 * @param {number | null | undefined} r
 * @returns {string}
 */
export function fmtRatio(r) {
  if (r === null || r === undefined || !Number.isFinite(r)) return '–';
  const p = (r - 1) * 100, a = Math.abs(p);
  if (a < 0.05) return '±0%';
  return `${p > 0 ? '+' : '−'}${a < 10 ? a.toFixed(1) : a.toFixed(0)}%`;
}

/**
 * @param {string} id
 * @returns {HTMLElement} the page's element of that id (index.html has each one)
 */
function $(id) {
  const e = document.getElementById(id);
  if (!e) throw new Error(`the page has no #${id}`);
  return e;
}

// the table's rows at most (the service's order: what changed most comes first); a capture
// of many thousands of names would otherwise make as many rows of the page
const ROWS = 2000;

/** @typedef {{ shown(on: boolean): void }} CompareHooks (shown: the compare view replaced the normal one, or gave it back) */

export class Compare {
  /** @param {CompareHooks} hooks */
  constructor(hooks) {
    this.hooks = hooks;
    this.root = $('compare');
    this.active = false;
    /** @type {Side[]} made when the view is first shown (the canvases need their size) */
    this.sides = [];
    this.a = ''; this.b = '';
    this.name = '';
    this.align = false;
    this.offset = 0;      // B's time minus A's at the same place on the shared axis
    this.id = 0;          // the open's number: answers of an older one are dropped
    this.nameAsk = 0;
    /** @type {DiffAnswer | null} */
    this.diff = null;
    this.diffError = '';
    /** @type {import('./comparehist.js').SharedBar[]} */
    this.bars = [];
    /** @type {{ a: import('./namepanel.js').StatsRow | null, b: import('./namepanel.js').StatsRow | null } | null} */
    this.stats = null;
    this.histReady = false;
    /** @type {'a' | 'b'} the timeline the pointer was last on: its move wins when both moved */
    this.leader = 'a';
    /** @type {[number, number, number, number]} A's and B's ranges as last synced */
    this.last = [NaN, NaN, NaN, NaN];
    this.alignBox = /** @type {HTMLInputElement} */ ($('cmp-align'));
    // a ticked box lets the focus go, so that the keys move the timelines again
    this.alignBox.addEventListener('change', () => { this.setAlign(this.alignBox.checked); this.alignBox.blur(); });
    this.onlyBox = /** @type {HTMLInputElement} */ ($('cmp-only'));
    this.onlyBox.addEventListener('change', () => { this.colourOnly(); this.onlyBox.blur(); });
    $('cmp-fit').addEventListener('click', () => this.fit());
    $('cmp-leave').addEventListener('click', (e) => { e.preventDefault(); location.hash = ''; });
    // the theme is the root's data-theme (app.js): both canvases draw again in its colours
    new MutationObserver(() => { for (const x of this.sides) x.view.invalidate(); })
      .observe(document.documentElement, { attributes: true, attributeFilter: ['data-theme'] });
    const loop = () => {
      if (this.active) this.sync();
      requestAnimationFrame(loop);
    };
    requestAnimationFrame(loop);
  }

  /** @returns {Side[]} the two sides, made on first use */
  make() {
    if (this.sides.length) return this.sides;
    const tip = $('cmp-tip');
    for (const key of /** @type {('a' | 'b')[]} */ (['a', 'b'])) {
      const canvas = /** @type {HTMLCanvasElement} */ ($(`cmp-canvas-${key}`));
      const model = new Model();
      /** @type {Side} */
      const side = /** @type {Side} */ ({ key, name: '', model, canvas, error: '', ready: false, first: undefined, firstNs: '' });
      side.pager = new Pager(model, {
        arrived: () => side.view.invalidate(),
        failed: (msg) => this.sideError(side, msg),
      });
      side.view = new Timeline(canvas, model, side.pager, {
        hover: (info, x = 0, y = 0) => {
          if (!info) { tip.hidden = true; return; }
          tip.hidden = false;
          tip.textContent = '';
          const b = el('b', '', info.cell && info.cell.count > 1 ? `${info.name} and others` : info.name);
          tip.append(b, el('br'), info.cell ? `${info.cell.count.toLocaleString('en')} events over ${fmtDur(info.cell.width)}` : `duration ${fmtDur(info.dur)}`,
            el('br'), `${side.name} · thread ${info.track.name || info.track.tid}`);
          tip.style.left = `${x + 14}px`; tip.style.top = `${y + 14}px`;
        },
        select: (info) => { if (info && info.name) this.select(info.name); },
        range: () => {},
        followChanged: () => {},
        viewed: (t0, t1, px, keys) => side.pager.want(t0, t1, px, keys),
      });
      const lead = () => { this.leader = key; };
      canvas.addEventListener('pointerenter', lead);
      canvas.addEventListener('pointerdown', lead);
      canvas.addEventListener('wheel', lead, { passive: true });
      this.sides.push(side);
    }
    return this.sides;
  }

  /**
   * Shows the compare view of p (opening its captures unless they are open already).
   * @param {CompareParams} p
   */
  show(p) {
    const first = !this.active;
    this.active = true;
    this.root.hidden = false;
    document.body.classList.add('comparing');
    $('title').textContent = `${p.a} vs ${p.b}`;
    if (first) this.hooks.shown(true);
    const [sa, sb] = this.make();
    if (p.a !== this.a || p.b !== this.b || first) {
      this.open(p, sa, sb);
      return;
    }
    if (p.name !== this.name) this.select(p.name, p.align);
    else if (p.align !== this.align) this.setAlign(p.align);
  }

  /** Gives the page back to the normal view: the captures' frames are dropped. */
  hide() {
    if (!this.active) return;
    this.active = false;
    this.id++;
    this.root.hidden = true;
    document.body.classList.remove('comparing');
    for (const s of this.sides) { s.pager.reset(); s.model.reset(); s.view.invalidate(); }
    this.a = this.b = '';
    $('cmp-tip').hidden = true;
    this.hooks.shown(false);
  }

  /**
   * Opens both captures and asks for their diff.
   * @param {CompareParams} p @param {Side} sa @param {Side} sb
   */
  async open(p, sa, sb) {
    const mine = ++this.id;
    this.a = p.a; this.b = p.b;
    this.name = ''; this.align = false; this.offset = 0;
    this.diff = null; this.diffError = ''; this.bars = []; this.stats = null; this.histReady = false;
    this.alignBox.checked = false;
    this.alignBox.disabled = true;
    this.onlyBox.disabled = true;
    $('cmp-only-label').textContent = 'colour only the selected name';
    $('cmp-align-label').textContent = 'align at the first instance of a name (select one)';
    $('cmp-offset').textContent = 'aligned at each capture’s start';
    $('cmp-error').hidden = true;
    $('cmp-hist').textContent = '';
    $('cmp-hist').append(el('span', 'hint', 'click a row (or an event below) for its durations in both captures'));
    $('cmp-table').textContent = '';
    $('cmp-summary').textContent = 'asking the service…';
    for (const [s, name] of /** @type {[Side, string][]} */ ([[sa, p.a], [sb, p.b]])) {
      s.name = name; s.error = ''; s.ready = false; s.first = undefined; s.firstNs = '';
      s.model.reset();
      s.pager.reset();
      s.view.opened(name);
      s.view.search = null;
      s.view.setFollow(false);
      $(`cmp-head-${s.key}`).textContent = name;
      const open = /** @type {HTMLAnchorElement} */ ($(`cmp-open-${s.key}`));
      open.href = `#capture=${encodeURIComponent(name)}`;
      $(`cmp-msg-${s.key}`).hidden = true;
    }
    const opens = [sa, sb].map(async (s) => {
      try {
        const t = await s.pager.open(s.name, false);
        if (mine !== this.id) return;
        s.ready = true;
        $(`cmp-head-${s.key}`).textContent = `${s.name} · ${t.events.toLocaleString('en')} events over ${fmtDur(Math.max(0, t.end_ns - t.first_ns))}`;
      } catch (e) {
        if (mine === this.id) this.sideError(s, e instanceof Error ? e.message : String(e));
      }
    });
    const diff = this.loadDiff(mine);
    await Promise.all(opens);
    if (mine !== this.id) return;
    this.fit();
    await diff;
    if (mine !== this.id) return;
    if (p.name) await this.select(p.name, p.align);
    else this.writeUrl();
  }

  /**
   * A side's capture could not be had: said on its half and in the banner, in the
   * service's words.
   * @param {Side} s @param {string} msg
   */
  sideError(s, msg) {
    s.error = msg;
    const m = $(`cmp-msg-${s.key}`);
    m.hidden = false;
    m.textContent = `${s.key.toUpperCase()}, ${s.name}: ${msg}`;
    const banner = $('cmp-error');
    banner.hidden = false;
    banner.textContent = this.sides.filter((x) => x.error).map((x) => `capture ${x.name}: ${x.error}`).join(' · ');
  }

  /** @param {number} mine */
  async loadDiff(mine) {
    const q = new URLSearchParams({ a: this.a, b: this.b, limit: String(ROWS) });
    try {
      const d = /** @type {DiffAnswer} */ (await api(`/api/diff?${q}`));
      if (mine !== this.id) return;
      this.diff = d;
      this.renderTable();
    } catch (e) {
      if (mine !== this.id) return;
      this.diffError = e instanceof Error ? e.message : String(e);
      $('cmp-summary').textContent = `the comparison could not be had: ${this.diffError}`;
    }
  }

  renderTable() {
    const d = this.diff;
    if (!d) return;
    const sum = $('cmp-summary');
    const sig = d.significant !== undefined ? d.significant : d.rows.filter((r) => r.significant).length;
    sum.textContent = `${d.rows.length.toLocaleString('en')}${d.nrows > d.rows.length ? ` of ${d.nrows.toLocaleString('en')}` : ''} names · ` +
      `${sig} changed significantly (${d.method}, α ${d.alpha}) · A ${d.a.events.toLocaleString('en')} events, B ${d.b.events.toLocaleString('en')}`;
    const t = /** @type {HTMLTableElement} */ ($('cmp-table'));
    t.textContent = '';
    const head = t.createTHead();
    const h1 = head.insertRow(), h2 = head.insertRow();
    /** @param {HTMLTableRowElement} r @param {string} text @param {number} span @param {string} [cls] */
    const th = (r, text, span, cls) => { const c = el('th', cls, text); if (span > 1) /** @type {HTMLTableCellElement} */ (c).colSpan = span; r.append(c); };
    th(h1, '', 1); th(h1, `A · ${this.a}`, 4, 'cmp-ga'); th(h1, `B · ${this.b}`, 4, 'cmp-gb'); th(h1, 'B over A', 4); th(h1, '', 1);
    th(h2, 'name', 1);
    for (let i = 0; i < 3; i++) for (const k of ['count', 'total', 'p50', 'p99']) th(h2, k, 1, i < 2 ? `cmp-g${'ab'[i]}` : '');
    th(h2, 'change', 1);
    const body = t.createTBody();
    for (const r of d.rows) {
      const tr = body.insertRow();
      tr.dataset.name = r.name;
      tr.className = `cmp-row cmp-${r.change}${r.significant ? ' cmp-sig' : ''}`;
      if (r.name === this.name) tr.classList.add('on');
      const n = tr.insertCell();
      n.textContent = r.thread ? `${r.name} · ${r.thread}` : r.name;
      n.title = n.textContent;
      n.className = 'cmp-name';
      for (const [k, s] of /** @type {['a' | 'b', DiffSide | null][]} */ ([['a', r.a], ['b', r.b]])) {
        for (const [f, v, text] of /** @type {[string, number | undefined, string][]} */ ([
          ['count', s?.count, s ? s.count.toLocaleString('en') : '–'], ['total', s?.total_ns, s ? fmtDur(s.total_ns) : '–'],
          ['p50', s?.p50_ns, s ? fmtDur(s.p50_ns) : '–'], ['p99', s?.p99_ns, s ? fmtDur(s.p99_ns) : '–']])) {
          const c = tr.insertCell();
          c.className = `num cmp-g${k}`;
          c.textContent = text;
          c.dataset.key = `${k}.${f}`;
          if (v !== undefined) { c.dataset.value = String(v); if (f !== 'count') c.title = `${v.toLocaleString('en')} ns`; }
        }
      }
      for (const f of /** @type {('count' | 'total' | 'p50' | 'p99')[]} */ (['count', 'total', 'p50', 'p99'])) {
        const c = tr.insertCell();
        const v = r.ratio ? r.ratio[f] : null;
        // longer is red, shorter green; a count's change is neither
        c.className = `num cmp-ratio${f === 'count' || v === null ? '' : v > 1 ? ' up' : v < 1 ? ' down' : ''}`;
        c.textContent = fmtRatio(v);
        c.dataset.key = `ratio.${f}`;
        if (v !== null) c.dataset.value = String(v);
      }
      const m = tr.insertCell();
      m.className = 'cmp-mark';
      m.dataset.key = 'change';
      m.textContent = r.change === 'new' ? 'new' : r.change === 'gone' ? 'gone' : r.significant ? (r.change === 'slower' ? '▲ slower' : r.change === 'faster' ? '▼ faster' : r.change) : '';
      if (r.test) m.title = `Mann–Whitney U (${r.test.method}): p ${r.test.p.toPrecision(3)}, B longer than A in ${(100 * r.test.effect).toFixed(1)} % of pairs` +
        `${r.test.shift !== undefined ? `, typical instance ×${r.test.shift.toPrecision(3)}` : ''}${r.significant ? '' : ' — not significant'}`;
      tr.addEventListener('click', () => this.select(r.name));
    }
  }

  /**
   * Selects a name: its row, its histograms, and its first instance in each capture for
   * the alignment.
   * @param {string} name @param {boolean} [align] align at its first instance (default: as now)
   */
  async select(name, align = this.align) {
    const mine = this.id, ask = ++this.nameAsk;
    this.name = name;
    for (const tr of document.querySelectorAll('#cmp-table tr.cmp-row'))
      tr.classList.toggle('on', /** @type {HTMLElement} */ (tr).dataset.name === name);
    const row = /** @type {HTMLElement | null} */ (document.querySelector(`#cmp-table tr.cmp-row[data-name="${CSS.escape(name)}"]`));
    if (row) row.scrollIntoView({ block: 'nearest' });
    this.histReady = false;
    this.alignBox.disabled = true;
    $('cmp-align-label').textContent = `align at the first ${name}`;
    this.onlyBox.disabled = false;
    $('cmp-only-label').textContent = `colour only ${name}`;
    this.colourOnly();
    this.writeUrl();
    /** @param {Side} s @returns {Promise<[import('./namepanel.js').StatsRow | null, { start_ns: number } | null]>} */
    const ask1 = async (s) => {
      if (s.error) return [null, null];
      const enc = encodeURIComponent(s.name), q = new URLSearchParams({ name, limit: '1' });
      const [st, ev] = await Promise.all([
        /** @type {Promise<{ rows: import('./namepanel.js').StatsRow[] }>} */ (api(`/api/captures/${enc}/stats?${q}`)),
        /** @type {Promise<{ events: { start_ns: number }[] }>} */ (api(`/api/captures/${enc}/events?${q}`)),
      ]);
      return [st.rows.find((r) => r.name === name) || null, ev.events[0] || null];
    };
    const [sa, sb] = this.sides;
    let got;
    try {
      got = await Promise.all([ask1(sa), ask1(sb)]);
    } catch (e) {
      if (mine !== this.id || ask !== this.nameAsk) return;
      $('cmp-hist').textContent = `the service could not answer: ${e instanceof Error ? e.message : e}`;
      return;
    }
    if (mine !== this.id || ask !== this.nameAsk) return;
    const [[ra, ea], [rb, eb]] = got;
    this.stats = { a: ra, b: rb };
    // the legend's medians are the table's (the diff's, exact when it says so)
    const dr = this.diff ? this.diff.rows.find((r) => r.name === name && !r.thread) : undefined;
    this.bars = drawOverlay($('cmp-hist'), name, { label: this.a, row: ra, p50: dr && dr.a ? dr.a.p50_ns : undefined },
      { label: this.b, row: rb, p50: dr && dr.b ? dr.b.p50_ns : undefined });
    this.histReady = true;
    for (const [s, e] of /** @type {[Side, { start_ns: number } | null][]} */ ([[sa, ea], [sb, eb]])) {
      s.first = e && s.model.haveBase ? s.model.rel(BigInt(e.start_ns)) : null;
      s.firstNs = e ? String(e.start_ns) : '';
    }
    const can = sa.first !== null && sa.first !== undefined && sb.first !== null && sb.first !== undefined;
    this.alignBox.disabled = !can;
    if (!can) $('cmp-align-label').textContent = `align at the first ${name} (not in ${sa.first == null ? 'A' : 'B'})`;
    this.setAlign(can && align);
  }

  /**
   * With "colour only NAME" ticked, each timeline greys every name but the selected one (as
   * the search box does in the normal view: a merged cell keeps its colour when the name is
   * its longest event's); unticked, every name has its colour.
   */
  colourOnly() {
    for (const s of this.sides) {
      let sr = null;
      if (this.onlyBox.checked && this.name) {
        sr = new Uint8Array(s.model.names.length + 1);
        s.model.names.forEach((n, id) => { if (n === this.name) sr[id] = 1; });
      }
      s.view.search = sr;
      s.view.invalidate();
    }
  }

  /**
   * Aligns B at the selected name's first instance (on) or at its start (off): B's range
   * moves by the difference, A's stays.
   * @param {boolean} on
   */
  setAlign(on) {
    const [sa, sb] = this.sides;
    const can = !!sa && !!sb && typeof sa.first === 'number' && typeof sb.first === 'number';
    this.align = on && can;
    this.alignBox.checked = this.align;
    this.offset = this.align ? /** @type {number} */ (sb.first) - /** @type {number} */ (sa.first) : 0;
    $('cmp-offset').textContent = this.align
      ? `B shifted by ${this.offset >= 0 ? '' : '−'}${fmtDur(Math.abs(this.offset))}: its first ${this.name} at ${fmtDur(/** @type {number} */ (sb.first))}, A's at ${fmtDur(/** @type {number} */ (sa.first))}`
      : 'aligned at each capture’s start';
    if (sa && sb) this.follow('a');
    this.writeUrl();
  }

  /** Both timelines show everything of both captures (on the shared axis). */
  fit() {
    const [sa, sb] = this.sides;
    if (!sa || !sb) return;
    const ext = [sa, sb].filter((s) => s.ready && s.model.maxT >= s.model.minT);
    if (!ext.length) return;
    // each on A's axis: B's times less the offset
    const lo = Math.min(...ext.map((s) => s.model.minT - (s === sb ? this.offset : 0)));
    const hi = Math.max(...ext.map((s) => s.model.maxT - (s === sb ? this.offset : 0)));
    const span = Math.max(hi - lo, 1000);
    sa.view.t0 = lo - span * 0.01; sa.view.t1 = hi + span * 0.01;
    sa.view.fitted = false;
    sa.view.invalidate();
    this.follow('a');
  }

  /**
   * The other timeline takes the range of this one (B's is A's plus the offset).
   * @param {'a' | 'b'} from
   */
  follow(from) {
    const [sa, sb] = this.sides, a = sa.view, b = sb.view;
    if (from === 'a') { b.t0 = a.t0 + this.offset; b.t1 = a.t1 + this.offset; }
    else { a.t0 = b.t0 - this.offset; a.t1 = b.t1 - this.offset; }
    a.fitted = b.fitted = false;
    a.invalidate(); b.invalidate();
    this.last = [a.t0, a.t1, b.t0, b.t1];
  }

  /** Each frame: a timeline whose range moved (zoom, pan, keys) moves the other with it. */
  sync() {
    if (this.sides.length < 2) return;
    const a = this.sides[0].view, b = this.sides[1].view, l = this.last;
    const ma = a.t0 !== l[0] || a.t1 !== l[1], mb = b.t0 !== l[2] || b.t1 !== l[3];
    if (!ma && !mb) return;
    this.follow(ma && mb ? this.leader : ma ? 'a' : 'b');
  }

  /** The fragment: the captures, the selected name, the alignment (history.replaceState). */
  writeUrl() {
    if (!this.active) return;
    const h = new URLSearchParams();
    h.set('compare', `${this.a},${this.b}`);
    if (this.name) h.set('name', this.name);
    if (this.align) h.set('align', 'first');
    const f = h.toString().replace(/%2C/gi, ',');
    if (f !== location.hash.slice(1)) history.replaceState(history.state, '', `#${f}`);
  }
}
