// @ts-check
// decode_worker.js: the wire frames of a live capture (or a replay) decoded off the page's
// main thread, so that decoding a frame never holds up a frame of the page. The session
// (session.js) posts each WebSocket message's ArrayBuffer here as it comes, transferred
// (not copied): { id, buf }, once this worker has said it runs ({ running: true }). They are
// decoded strictly in the order they came — a deflate frame's inflate is awaited before the
// next frame is begun — with the same decoders as anywhere else (wire.js), and each answer
// goes back with its columns' buffers transferred: { id, frame, us } (us: the decode's time,
// inflate included, as the stats line reports it), or { id, error, wire } when the frame is
// bad (wire: a WireError, whose message names the rule and the byte). A frame is a bounded
// thing (wire.js checks the header's limits before allocating), so one message never makes
// this worker hold more than one frame's columns.
import { decodeFrame, WireError } from './wire.js';

/** @typedef {{ id: number, buf: ArrayBuffer }} DecodeAsk */
/**
 * An answer (here: decoded on the main thread, by session.js's fallback, not by this worker).
 * @typedef {{ id: number, frame: import('./wire.js').Frame, us: number, here?: true }
 *   | { id: number, error: string, wire: boolean }} DecodeAnswer
 */

const self_ = /** @type {{ onmessage: ((e: MessageEvent<DecodeAsk>) => void) | null, postMessage(m: DecodeAnswer | { running: true }, t?: Transferable[]): void }} */ (
  /** @type {unknown} */ (globalThis));

/** @type {Promise<void>} the frames not yet answered, in order */
let chain = Promise.resolve();

/**
 * @param {import('./wire.js').Frame} f
 * @returns {ArrayBuffer[]} the buffers its columns hold, each once
 */
function buffersOf(f) {
  /** @type {Set<ArrayBuffer>} */
  const out = new Set();
  const b = f.events;
  if (b)
    for (const col of [b.startLo, b.startHi, b.durLo, b.durHi, b.pid, b.tid, b.kind, b.depth, b.extra, b.name])
      if (col.buffer instanceof ArrayBuffer) out.add(col.buffer);
  return [...out];
}

self_.onmessage = (e) => {
  const { id, buf } = e.data;
  chain = chain.then(async () => {
    const t = performance.now();
    try {
      const frame = await decodeFrame(new Uint8Array(buf));
      self_.postMessage({ id, frame, us: (performance.now() - t) * 1000 }, buffersOf(frame));
    } catch (err) {
      self_.postMessage({ id, error: err instanceof WireError ? err.message : `${err}`, wire: err instanceof WireError });
    }
  });
};
// the page sends frames here only once this has come (until then it decodes them itself)
self_.postMessage({ running: true });
