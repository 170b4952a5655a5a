// @ts-check
// session.js: the page's connection to the service. api() is every HTTP request of the page
// and the sign-in state: a 401 shows the banner that says how to sign in, any other answer
// hides it. A Session opens one capture at a time over a WebSocket (/api/live?from=start
// for a live capture: everything so far, then the live edge; /api/replay for a stored one)
// and decodes every binary message as one wire frame (wire.js) in the order they came (a
// deflate frame's inflate is awaited before the next) on a worker (decode_worker.js: the
// message's buffer is transferred there and the decoded columns back), feeding the model
// and the timeline and counting into the stats object. Opening another capture drops the
// old socket; anything of the old one still queued is dropped by its session number.
//
// What the page says of the service: a socket closed with 1001 (going away) is the service
// stopping, which is not the capture's end ({"type":"end"}); a stored capture has no socket,
// so the session also asks /api/status every 2 s and says when the service stops answering
// (and when it answers again). A capture name the service does not have is said plainly:
// the page waits for a producer to start it, as /api/live does.
//
// A stored capture is not read whole: the pager (pages.js) asks the service for its tracks,
// names and the view frames of what is on screen. A live one comes over the WebSocket into
// the model's ring, and the pager draws what the ring has dropped (or never had: a live
// capture whose stored part is past half the ring is joined from=now) from view frames.
//
// The URL's fragment says what to open: #capture=NAME[&wire=raw|packed|deflate]
// [&replay=1][&checksum=1][&ring=N][&from=start|now] (replay: a stored capture through
// /api/replay into the ring, as a live one; checksum: also sum eventMix over every event,
// wire.js; ring: the ring's bound in events, model.js's RING_MAX by default; from: how a live
// one is joined, whatever its stored part; worker=0: decode on the page's main thread, as
// before the worker, for bench/frames_bench.mjs's comparison). And what the view shows,
// kept up to date as the user moves (app.js) so that the URL opens the same view: from_ns
// and to_ns (the visible range, the capture's clock's u64 ns), sel (the selected event:
// START_NS,PID:TID,DEPTH,NAME), marks (START_NS,... ; keys.js) and layout (the tracks'
// layout, in the encoding its owner gives). viewParams() reads those, fragment() writes the
// whole fragment back.
import { decodeFrameSync, decodeFrame, WireError } from './wire.js';

/**
 * What the stats line shows and the tests read (debug.js): counts since the capture opened.
 * @typedef {{
 *   capture: string, wire: string, from: string, events: number, bytes: number, frames: number,
 *   batches: number, names: number, gaps: number, gapEvents: number, decodeUs: number,
 *   decodeUsPerBatch: number, ended: boolean, endEvents: number | null, stopped: boolean,
 *   error: string, checksum: number, searchMatches: number, mbps: number, connected: boolean,
 *   held: number, cut: boolean, workerFrames: number, attrRows: number,
 * }} Stats
 * (from is the hello's, or 'view' for a stored capture drawn from view frames; held: the
 * bytes of events and frames the page holds; cut: the live ring has dropped its oldest;
 * workerFrames: the frames decoded on the worker, the others on the main thread; attrRows: the
 * attribute rows that came, in attrs frames before their batches: /api/live?attrs=1.)
 */

/**
 * A control message of /api/live and /api/replay (docs/serve.md, "Viewers"): the hello with
 * the wire chosen, events the service dropped for a slow viewer, the end, or why it refused.
 * @typedef {{ type: 'hello', capture: string, wire: string, from: string }
 *   | { type: 'gap', events: number, batches: number }
 *   | { type: 'end', events: number }
 *   | { type: 'error', message: string }} ControlMessage
 */

/**
 * What the session tells the page: a capture opened (before its first frame), its times are
 * known (a stored one's tracks came, or a live one's first events: the view can be set),
 * it ended (every event has come), or something the stats line shows changed.
 * @typedef {{ opened(name: string): void, based(name: string): void, ended(name: string): void, changed(): void }} SessionHooks
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

/** @returns {Stats} the counts of no capture */
function emptyStats() {
  return {
    capture: '', wire: '', from: '', events: 0, bytes: 0, frames: 0, batches: 0, names: 0,
    gaps: 0, gapEvents: 0, decodeUs: 0, decodeUsPerBatch: 0, ended: false, endEvents: null,
    stopped: false, error: '', checksum: 0, searchMatches: 0, mbps: 0, connected: false,
    held: 0, cut: false, workerFrames: 0, attrRows: 0,
  };
}

/**
 * The URL fragment: what to open and how.
 * @returns {{ capture: string, wire: string, replay: boolean, checksum: boolean, ring: number, from: string, worker: boolean }}
 */
export function params() {
  const h = new URLSearchParams(location.hash.slice(1));
  const from = h.get('from');
  return { capture: h.get('capture') || '', wire: h.get('wire') || '', replay: h.get('replay') === '1', checksum: h.get('checksum') === '1',
    ring: Number(h.get('ring')) || 0, from: from === 'start' || from === 'now' ? from : '', worker: h.get('worker') !== '0' };
}

/**
 * What the fragment says of the view: each field null when it is not there (or not valid).
 * @typedef {{ from: bigint | null, to: bigint | null,
 *   sel: { start: bigint, pid: number, tid: number, depth: number, name: string } | null,
 *   marks: bigint[], layout: string | null }} ViewParams
 */

/** @param {string | null} v @returns {bigint | null} a u64 decimal, or null */
function u64(v) { return v && /^\d{1,20}$/.test(v) ? BigInt(v) : null; }

/** @returns {ViewParams} the view the URL's fragment names */
export function viewParams() {
  const h = new URLSearchParams(location.hash.slice(1));
  let from = u64(h.get('from_ns')), to = u64(h.get('to_ns'));
  if (from === null || to === null || to <= from) from = to = null;
  /** @type {ViewParams['sel']} */
  let sel = null;
  const m = /^(\d{1,20}),(\d{1,10}):(\d{1,10}),(\d{1,3}),(.+)$/s.exec(h.get('sel') || '');
  if (m) sel = { start: BigInt(m[1]), pid: Number(m[2]), tid: Number(m[3]), depth: Number(m[4]), name: m[5] };
  const marks = (h.get('marks') || '').split(',').map(u64).filter((x) => x !== null);
  return { from, to, sel, marks: /** @type {bigint[]} */ (marks), layout: h.get('layout') };
}

/**
 * The fragment of the URL for a view: what to open as it is now (capture, wire, replay…)
 * and the view's keys, in a fixed order; a view key that is null or empty is left out, but
 * for layout: null leaves the fragment's layout= as it is (the tracks' code may keep it
 * there itself).
 * @param {{ from: string | null, to: string | null, sel: string | null, marks: string | null, layout: string | null }} v
 * @returns {string} without the '#'
 */
export function fragment(v) {
  const h = new URLSearchParams(location.hash.slice(1));
  const layout = v.layout === null ? h.get('layout') : v.layout;
  for (const k of ['from_ns', 'to_ns', 'sel', 'marks', 'layout']) h.delete(k);
  /** @type {[string, string | null][]} */
  const add = [['from_ns', v.from], ['to_ns', v.to], ['sel', v.sel], ['marks', v.marks], ['layout', layout]];
  for (const [k, x] of add) if (x) h.set(k, x);
  return h.toString().replace(/%2C/g, ',').replace(/%3A/g, ':').replace(/%7E/g, '~');
}

// The service answers at most four queries of a capture (views, statistics, events, tracks,
// names, flows; docs/serve.md, "Views and statistics") at once and refuses more with 503 and
// Retry-After. The page asks at most QUERIES at once, the others waiting their turn (the
// compare view's two captures ask for as much as two pages), and asks again after a 503 (at
// most RETRIES times, waiting what Retry-After says, 2 s at most): another page or client
// of the service may hold the slots.
const QUERIES = 4, RETRIES = 2;
let querying = 0;
/** @type {(() => void)[]} */
const waiting = [];
/** @returns {Promise<void>} once one of the QUERIES slots is this request's */
function slot() {
  if (querying < QUERIES) { querying++; return Promise.resolve(); }
  return new Promise((ok) => waiting.push(ok));
}
/** Gives the slot to the next request waiting, or frees it. */
function unslot() {
  const next = waiting.shift();
  if (next) next(); else querying--;
}

/**
 * A request and its body read, in a query slot when path is a capture's query or the diff,
 * asked again after a 503 while Retry-After allows; a 401 shows the sign-in banner.
 * @template T
 * @param {string} path @param {RequestInit | undefined} init
 * @param {(r: Response) => Promise<T>} read the body, whatever the status
 * @returns {Promise<{ r: Response, body: T }>}
 */
async function ask(path, init, read) {
  const gated = /^\/api\/(captures\/[^/?]+\/|diff\?)/.test(path);
  for (let tries = 0; ; tries++) {
    if (gated) await slot();
    /** @type {{ r: Response, body: T }} */
    let got;
    try {
      const r = await fetch(path, Object.assign({ credentials: 'same-origin' }, init));
      got = { r, body: await read(r) };
    } finally {
      if (gated) unslot();
    }
    const r = got.r;
    if (r.status === 401) { $('signin').hidden = false; throw new Error('the service needs its token'); }
    $('signin').hidden = true;
    if (r.status !== 503 || tries >= RETRIES || !gated || (init && init.signal && init.signal.aborted)) return got;
    const wait = Math.min(2, Math.max(0.1, Number(r.headers.get('retry-after')) || 1));
    await new Promise((ok) => setTimeout(ok, wait * 1000));
  }
}

/**
 * A request to the service's API, with the page's cookie; its JSON body, which the caller
 * reads as the answer docs/serve.md describes for path. Throws an Error whose message is the
 * service's (or "HTTP status") when the answer is not 2xx.
 * @param {string} path
 * @param {RequestInit} [init]
 * @returns {Promise<unknown>}
 */
export async function api(path, init) {
  const { r, body } = await ask(path, init, (r) => r.json().catch(() => ({})));
  if (!r.ok) throw new Error(/** @type {{ error?: string }} */ (body).error || `HTTP ${r.status}`);
  return body;
}

/**
 * As api(), but an integer of the answer past 2^53 in size (a zone's 64-bit value, a pointer)
 * is a BigInt of its exact digits rather than the nearest double (JSON.parse's source text).
 * @param {string} path
 * @returns {Promise<unknown>}
 */
export async function apiExact(path) {
  /** @param {string} _k @param {unknown} v @param {{ source?: string }} [ctx] */
  const exact = (_k, v, ctx) =>
    typeof v === 'number' && Number.isInteger(v) && !Number.isSafeInteger(v) && ctx && ctx.source && /^-?\d+$/.test(ctx.source)
      ? BigInt(ctx.source) : v;
  const { r, body } = await ask(path, undefined, async (r) => {
    const text = await r.text();
    try { return JSON.parse(text, exact); } catch { return {}; }
  });
  if (!r.ok) throw new Error(/** @type {{ error?: string }} */ (body).error || `HTTP ${r.status}`);
  return body;
}

/**
 * A request whose answer is bytes (a view frame, names frames); errors as api()'s.
 * @param {string} path
 * @param {RequestInit} [init]
 * @returns {Promise<Uint8Array<ArrayBuffer>>}
 */
export async function apiBytes(path, init) {
  const { r, body } = await ask(path, init, async (r) => (r.ok ? r.arrayBuffer() : r.json().catch(() => ({}))));
  if (!r.ok) throw new Error(/** @type {{ error?: string }} */ (body).error || `HTTP ${r.status}`);
  return new Uint8Array(/** @type {ArrayBuffer} */ (body));
}

/**
 * The decoder of a socket's frames: decode(buf) posts the buffer to the worker
 * (decode_worker.js), transferred, and answers in the order asked. Frames that come before
 * the worker has said it runs (its first message) wait for it, up to WORKER_WAIT_MS — a
 * burst of them (a replay's first segment) decoded here would hold the page, and the
 * worker's message with it; where one cannot be made, fails to start or is not running by
 * then, frames are decoded here, on the main thread, as the page once did: no frame is ever
 * handed to a worker that is not running. (The session takes the answers in the order the
 * messages came, whichever side decoded them.)
 */
const WORKER_WAIT_MS = 1000;
class Decoder {
  /** @param {boolean} worker on a worker (else on the main thread) */
  constructor(worker) {
    /** @type {Map<number, { ok(a: import('./decode_worker.js').DecodeAnswer): void }>} */
    this.waiting = new Map();
    this.next = 0;
    /** @type {Worker | null} */
    this.worker = null;
    this.running = false; // the worker has said it runs: frames go to it from here on
    /** @type {(v: boolean) => void} */
    let settle = () => {};
    /** resolves when the worker runs, fails, or WORKER_WAIT_MS have passed: frames wait for it */
    this.started = new Promise((ok) => { settle = ok; });
    if (worker) try {
      const w = new Worker('/web/decode_worker.js', { type: 'module', name: 'trove-decode' });
      this.worker = w;
      setTimeout(() => settle(false), WORKER_WAIT_MS);
      w.onmessage = (e) => {
        const a = /** @type {import('./decode_worker.js').DecodeAnswer | { running: true }} */ (e.data);
        if ('running' in a) { this.running = true; settle(true); return; }
        const ok = this.waiting.get(a.id);
        this.waiting.delete(a.id);
        if (ok) ok.ok(a);
      };
      w.onerror = () => { // it failed: what it had is said lost, and every frame from here is decoded here
        this.worker = null;
        this.running = false;
        settle(false);
        for (const [id, ok] of this.waiting) ok.ok({ id, error: 'the decoding worker failed before it decoded it', wire: false });
        this.waiting.clear();
      };
    } catch { this.worker = null; }
    if (!this.worker) settle(false);
  }

  /**
   * @param {ArrayBuffer} buf a whole message: it belongs to the decoder from here on
   * @returns {Promise<import('./decode_worker.js').DecodeAnswer>}
   */
  decode(buf) {
    const id = ++this.next;
    // every frame passes the same wait, so they are sent on in the order they came
    return this.started.then(() => this.dispatch(id, buf));
  }

  /**
   * @param {number} id
   * @param {ArrayBuffer} buf
   * @returns {Promise<import('./decode_worker.js').DecodeAnswer>}
   */
  dispatch(id, buf) {
    if (this.worker && this.running) {
      const w = this.worker;
      return new Promise((ok) => { this.waiting.set(id, { ok }); w.postMessage({ id, buf }, [buf]); });
    }
    return (async () => {
      const u8 = new Uint8Array(buf), t = performance.now();
      try {
        const frame = decodeFrameSync(u8) || await decodeFrame(u8);
        return { id, frame, us: (performance.now() - t) * 1000, here: true };
      } catch (e) {
        return { id, error: e instanceof WireError ? e.message : `${e}`, wire: e instanceof WireError };
      }
    })();
  }
}

export class Session {
  /**
   * @param {import('./model.js').Model} model
   * @param {import('./timeline.js').Timeline} view
   * @param {import('./pages.js').Pager} pager
   * @param {SessionHooks} hooks
   */
  constructor(model, view, pager, hooks) {
    this.model = model;
    this.view = view;
    this.pager = pager;
    this.hooks = hooks;
    /** @type {Stats} the object itself stays: the tests hold it */
    this.stats = emptyStats();
    /** @type {WebSocket | null} */
    this.ws = null;
    /** @type {Promise<unknown>} the messages not yet handled, in order */
    this.chain = Promise.resolve();
    this.id = 0; // the open's number: anything queued by an older one is dropped
    this.decoder = new Decoder(params().worker);
    /** @type {import('./wire.js').AttrRow[] | null} an attrs frame's rows, for the batch after it */
    this.heldAttrs = null;
    this.answering = true; // the service answered the last probe (watch())
    this.watch();
  }

  /**
   * Asks /api/status every 2 s: when the service stops answering, the banner says so (a
   * stored capture has no socket to be closed); when it answers again, the banner goes.
   */
  watch() {
    setInterval(() => this.probe(), 2000);
  }

  /** @returns {Promise<boolean>} whether the service answers /api/status now (the banner says it) */
  async probe() {
    let ok = true;
    try {
      const r = await fetch('/api/status', { credentials: 'same-origin', cache: 'no-store' });
      ok = r.status < 500;
    } catch { ok = false; }
    if (ok !== this.answering) {
      this.answering = ok;
      const b = $('service');
      b.hidden = ok || this.stats.stopped; // the socket's 1001 has said it already
      b.textContent = ok ? '' : `service stopped: the service at ${location.host} does not answer (it stopped, or the network to it is down); what the page holds stays shown`;
      this.hooks.changed();
    }
    return ok;
  }

  /**
   * A request of the capture's failed: an error of the capture (fail()) if the service
   * answers, else the service's banner alone (it stopped; the capture is not at fault).
   * @param {string} msg
   */
  async failed(msg) {
    if (await this.probe()) this.fail(msg);
  }

  /**
   * A notice that is not an error (the capture is waited for…); '' hides it.
   * @param {string} msg
   */
  notice(msg) {
    const n = $('notice');
    n.textContent = msg;
    n.hidden = !msg;
  }

  /**
   * An error that stops the view: the banner says it, the stats line shows "error".
   * @param {string} msg
   */
  fail(msg) {
    this.stats.error = msg;
    const e = $('error');
    e.textContent = msg;
    e.hidden = false;
    this.hooks.changed();
  }

  /**
   * Opens capture name: stored (drawn from view frames), live (what has come so far, then
   * the live edge, into the ring) or a replay into the ring (the fragment's replay=1).
   * @param {string} name
   * @param {boolean} live
   * @param {number} [stored] the events the capture list says it has stored
   * @param {boolean} [known] the service lists it (else it is waited for, and the page says so)
   */
  async open(name, live, stored = 0, known = true) {
    const p = params(), stats = this.stats, view = this.view;
    if (this.ws) { this.ws.onmessage = this.ws.onclose = null; this.ws.close(); this.ws = null; }
    const mine = ++this.id;
    this.heldAttrs = null;
    this.model.reset();
    this.model.checksumOn = p.checksum;
    if (p.ring > 0) this.model.ringMax = p.ring;
    this.pager.reset();
    Object.assign(stats, emptyStats(), { capture: name, searchMatches: stats.searchMatches });
    $('error').hidden = true;
    this.notice(known ? '' : `there is no capture named “${name}” on this service: the page waits for a producer to start it (the captures it has are listed on the left)`);
    $('title').textContent = name;
    view.selected = null; view.range = null;
    this.hooks.opened(name);
    this.chain = Promise.resolve();
    if (!live && !p.replay) {
      view.setFollow(false);
      stats.from = 'view';
      stats.connected = true;
      try {
        const t = await this.pager.open(name, false);
        if (mine !== this.id) return;
        stats.events = t.events;
        stats.ended = true;
        stats.endEvents = t.events;
        view.fit();
        this.hooks.based(name);
        this.hooks.ended(name);
      } catch (e) {
        if (mine === this.id) await this.failed(`capture ${name}: ${e instanceof Error ? e.message : e}`);
      }
      if (mine === this.id) stats.connected = false;
      this.hooks.changed();
      return;
    }
    view.setFollow(true);
    let from = 'start';
    if (live) {
      // its tracks and names first (a capture not stored yet has none: the ring alone)
      if (known && stored > 0) try { await this.pager.open(name, true); } catch { /* not stored yet */ }
      if (mine !== this.id) return;
      if (this.pager.ready) this.hooks.based(name);
      if (p.from) from = p.from;
      else if (this.pager.ready && stored > this.model.ringMax / 2) from = 'now';
    }
    const wire = p.wire ? `&wire=${encodeURIComponent(p.wire)}` : '';
    const path = live ? `/api/live?capture=${encodeURIComponent(name)}&from=${from}${wire}&attrs=1`
      : `/api/replay?capture=${encodeURIComponent(name)}&speed=max${wire}`;
    const ws = new WebSocket(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}${path}`);
    this.ws = ws;
    ws.binaryType = 'arraybuffer';
    stats.connected = true;
    ws.onmessage = (m) => {
      // a frame goes to the worker at once (it decodes in order); what it answers is taken
      // here in the order the messages came, control messages included
      const data = typeof m.data === 'string' ? m.data : { bytes: m.data.byteLength, answer: this.decoder.decode(m.data) };
      this.chain = this.chain.then(() => (mine === this.id && !stats.error ? this.handle(data) : null));
    };
    ws.onclose = (e) => {
      this.chain = this.chain.then(() => {
        if (mine !== this.id) return;
        stats.connected = false;
        if (!stats.ended && !stats.error && e.code === 1001) {
          // The service stopped (SIGTERM): the capture did not end; what arrived stays shown.
          stats.stopped = true;
          const b = $('error');
          b.textContent = `service stopped: the service stopped before the capture ${stats.events || stats.names ? 'ended; what arrived is shown' : 'started'}`;
          b.hidden = false;
          view.setFollow(false);
          view.invalidate();
        } else if (!stats.ended && !stats.error && e.code !== 1000)
          this.fail(e.code === 1006 ? 'the connection to the service was lost (is it running? does it need a token?); what arrived is shown'
            : `the service closed the connection (${e.code} ${e.reason}); what arrived is shown`);
        this.hooks.changed();
      });
    };
  }

  /**
   * One message of the socket: a control message (JSON text) or a wire frame, as the
   * decoder answers it.
   * @param {string | { bytes: number, answer: Promise<import('./decode_worker.js').DecodeAnswer> }} data
   */
  async handle(data) {
    const stats = this.stats, view = this.view, model = this.model;
    if (typeof data === 'string') {
      /** @type {ControlMessage} */
      let msg;
      try { msg = JSON.parse(data); } catch { this.fail(`a control message that is not JSON: ${data.slice(0, 80)}`); return; }
      if (msg.type === 'hello') { stats.wire = msg.wire; stats.from = msg.from; this.notice(''); }
      else if (msg.type === 'gap') { stats.gaps++; stats.gapEvents += msg.events || 0; this.heldAttrs = null; }
      else if (msg.type === 'end') {
        stats.ended = true;
        stats.endEvents = msg.events;
        // nothing more will come: stop following, and show it all if the user has not zoomed
        const all = view.followAll;
        view.setFollow(false);
        if (all) view.fit();
        view.invalidate();
        this.hooks.ended(stats.capture);
      } else if (msg.type === 'error') this.fail(`the service: ${msg.message}`);
      return;
    }
    stats.bytes += data.bytes;
    stats.frames++;
    const a = await data.answer;
    if (stats.error) return;
    if ('error' in a) {
      this.fail(`frame ${stats.frames} (${data.bytes} bytes) is bad and was not shown: ${a.error}; the view stops here`);
      if (this.ws) this.ws.close();
      return;
    }
    const r = a.frame, us = a.us;
    if (!('here' in a)) stats.workerFrames++;
    if (r.names) { model.applyNames(r.names); stats.names += r.count || 0; }
    else if (r.attrs) { this.heldAttrs = r.attrs; stats.attrRows += r.attrs.length; } // the next batch's
    else {
      stats.decodeUs += us;
      stats.batches++;
      // joined from=now: what starts before the first batch's last event is the view frames'
      // (pages.js); of the batches published before the join, which this viewer never gets,
      // only an event starting after that would be drawn by neither
      if (model.received === 0 && stats.from === 'now' && r.events.count > 0) model.cut = model.maxStart(r.events) + 1;
      const first = model.received === 0 && !this.pager.ready;
      if (this.heldAttrs) { model.attach(this.heldAttrs, r.events); this.heldAttrs = null; }
      model.append(r.events);
      if (first && model.received > 0) this.hooks.based(stats.capture);
      stats.events = model.received;
      stats.checksum = model.checksum;
      stats.cut = model.cut > -Infinity;
      // the ring has dropped some: the service's frames draw it, once it has the tracks
      if (stats.cut && !this.pager.ready) this.pager.retryOpen(stats.capture);
    }
    view.invalidate();
  }
}
