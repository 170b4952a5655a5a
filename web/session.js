// @ts-check
// session.js: the page's connection to the service. api() is every HTTP request of the page
// and the sign-in state: a 401 shows the banner that says how to sign in, any other answer
// hides it. A Session opens one capture at a time over a WebSocket (/api/live?from=start
// for a live capture: everything so far, then the live edge; /api/replay for a stored one)
// and decodes every binary message as one wire frame (wire.js) in the order they came (a
// deflate frame's inflate is awaited before the next), feeding the model and the timeline
// and counting into the stats object. Opening another capture drops the old socket; anything
// of the old one still queued is dropped by its session number.
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
// one is joined, whatever its stored part).
import { decodeFrameSync, decodeFrame, WireError } from './wire.js';

/**
 * What the stats line shows and the tests read (debug.js): counts since the capture opened.
 * @typedef {{
 *   capture: string, wire: string, from: string, events: number, bytes: number, frames: number,
 *   batches: number, names: number, gaps: number, gapEvents: number, decodeUs: number,
 *   decodeUsPerBatch: number, ended: boolean, endEvents: number | null, stopped: boolean,
 *   error: string, checksum: number, searchMatches: number, mbps: number, connected: boolean,
 *   held: number, cut: boolean,
 * }} Stats
 * (from is the hello's, or 'view' for a stored capture drawn from view frames; held: the
 * bytes of events and frames the page holds; cut: the live ring has dropped its oldest.)
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
 * What the session tells the page: a capture opened (before its first frame), it ended
 * (every event has come), or something the stats line shows changed.
 * @typedef {{ opened(name: string): void, ended(name: string): void, changed(): void }} SessionHooks
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
    held: 0, cut: false,
  };
}

/**
 * The URL fragment: what to open and how.
 * @returns {{ capture: string, wire: string, replay: boolean, checksum: boolean, ring: number, from: string }}
 */
export function params() {
  const h = new URLSearchParams(location.hash.slice(1));
  const from = h.get('from');
  return { capture: h.get('capture') || '', wire: h.get('wire') || '', replay: h.get('replay') === '1', checksum: h.get('checksum') === '1',
    ring: Number(h.get('ring')) || 0, from: from === 'start' || from === 'now' ? from : '' };
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
  const r = await fetch(path, Object.assign({ credentials: 'same-origin' }, init));
  if (r.status === 401) { $('signin').hidden = false; throw new Error('the service needs its token'); }
  $('signin').hidden = true;
  /** @type {unknown} */
  const body = await r.json().catch(() => ({}));
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
  const r = await fetch(path, Object.assign({ credentials: 'same-origin' }, init));
  if (r.status === 401) { $('signin').hidden = false; throw new Error('the service needs its token'); }
  $('signin').hidden = true;
  if (!r.ok) {
    /** @type {{ error?: string }} */
    const body = await r.json().catch(() => ({}));
    throw new Error(body.error || `HTTP ${r.status}`);
  }
  return new Uint8Array(await r.arrayBuffer());
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
   */
  async open(name, live, stored = 0) {
    const p = params(), stats = this.stats, view = this.view;
    if (this.ws) { this.ws.onmessage = this.ws.onclose = null; this.ws.close(); this.ws = null; }
    const mine = ++this.id;
    this.model.reset();
    this.model.checksumOn = p.checksum;
    if (p.ring > 0) this.model.ringMax = p.ring;
    this.pager.reset();
    Object.assign(stats, emptyStats(), { capture: name, searchMatches: stats.searchMatches, mbps: stats.mbps });
    $('error').hidden = true;
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
        this.hooks.ended(name);
      } catch (e) {
        if (mine === this.id) this.fail(`capture ${name}: ${e instanceof Error ? e.message : e}`);
      }
      if (mine === this.id) stats.connected = false;
      this.hooks.changed();
      return;
    }
    view.setFollow(true);
    let from = 'start';
    if (live) {
      // its tracks and names first (a capture not stored yet has none: the ring alone)
      try { await this.pager.open(name, true); } catch { /* not stored yet */ }
      if (mine !== this.id) return;
      if (p.from) from = p.from;
      else if (this.pager.ready && stored > this.model.ringMax / 2) from = 'now';
    }
    const wire = p.wire ? `&wire=${encodeURIComponent(p.wire)}` : '';
    const path = live ? `/api/live?capture=${encodeURIComponent(name)}&from=${from}${wire}`
      : `/api/replay?capture=${encodeURIComponent(name)}&speed=max${wire}`;
    const ws = new WebSocket(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}${path}`);
    this.ws = ws;
    ws.binaryType = 'arraybuffer';
    stats.connected = true;
    ws.onmessage = (m) => {
      this.chain = this.chain.then(() => (mine === this.id && !stats.error ? this.handle(m.data) : null));
    };
    ws.onclose = (e) => {
      this.chain = this.chain.then(() => {
        if (mine !== this.id) return;
        stats.connected = false;
        if (!stats.ended && !stats.error && e.code === 1001) {
          // The service stopped (SIGTERM): the capture did not end; what arrived stays shown.
          stats.stopped = true;
          const b = $('error');
          b.textContent = 'service stopped: the service stopped before the capture ended; what arrived is shown';
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
   * One message of the socket: a control message (JSON text) or a wire frame.
   * @param {string | ArrayBuffer} data
   */
  async handle(data) {
    const stats = this.stats, view = this.view, model = this.model;
    if (typeof data === 'string') {
      /** @type {ControlMessage} */
      let msg;
      try { msg = JSON.parse(data); } catch { this.fail(`a control message that is not JSON: ${data.slice(0, 80)}`); return; }
      if (msg.type === 'hello') { stats.wire = msg.wire; stats.from = msg.from; }
      else if (msg.type === 'gap') { stats.gaps++; stats.gapEvents += msg.events || 0; }
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
    const u8 = new Uint8Array(data);
    stats.bytes += u8.length;
    stats.frames++;
    const t = performance.now();
    let r;
    try {
      r = decodeFrameSync(u8) || await decodeFrame(u8);
    } catch (e) {
      const what = e instanceof WireError ? e.message : `${e}`;
      this.fail(`frame ${stats.frames} (${u8.length} bytes) is bad and was not shown: ${what}; the view stops here`);
      if (this.ws) this.ws.close();
      return;
    }
    const us = (performance.now() - t) * 1000;
    if (r.names) { model.applyNames(r.names); stats.names += r.count || 0; }
    else {
      stats.decodeUs += us;
      stats.batches++;
      // joined from=now: what starts before the first batch's last event is the view frames'
      // (pages.js); of the batches published before the join, which this viewer never gets,
      // only an event starting after that would be drawn by neither
      if (model.received === 0 && stats.from === 'now' && r.events.count > 0) model.cut = model.maxStart(r.events) + 1;
      model.append(r.events);
      stats.events = model.received;
      stats.checksum = model.checksum;
      stats.cut = model.cut > -Infinity;
      // the ring has dropped some: the service's frames draw it, once it has the tracks
      if (stats.cut && !this.pager.ready) this.pager.retryOpen(stats.capture);
    }
    view.invalidate();
  }
}
