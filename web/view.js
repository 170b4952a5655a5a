// @ts-check
// view.js: the view frame in the browser (GET /api/captures/NAME/view; its decoder in C is
// src/capture/view_frame.c, trove_view_decode, and this one refuses what that one refuses):
//
//   0  "TROVVIEW"   8  version u32 (1)   12 flags u32 (bit 0: the body is raw deflate)
//   16 from_ns u64  24 to_ns u64          32 shift u32 (cells are 2^shift ns)
//   36 tracks u32   40 names u32          44 events u32   48 cells u32
//   52 body_len u32 (the bytes after the 60-byte fixed part)   56 raw_len u32 (inflated)
//   body: names (id, len, bytes; ids ascending), then per track (pid, tid ascending):
//     pid tid nevents ncells, its events (zigzag start delta from the last start, the first
//     from from_ns; dur; kind depth extra as bytes; name; index), its cells (lane as a delta
//     from the last cell's; column: the first of a lane from from_ns >> shift, the next ones
//     as the gap to the last minus one; count - 1; busy; name; name_dur; a counter's least
//     and greatest value as a double's bits). Every number is a LEB128 varint.
//
// Trust rules, as the C decoder's: the fixed part first (magic, version, flags, an empty
// range, a shift over 63, the body's length against the message and the 64 MiB limit), the
// body inflated into exactly raw_len bytes, then every count against the bytes left before
// anything is allocated (a name takes at least 2 bytes, a track 4, an event 7, a cell 6), every
// varint's width, every read against the end, the order of names, tracks and events, every
// lane and column against the frame, and no byte left over. A frame that breaks one throws a
// ViewError naming the rule and the byte; nothing of it is returned.
//
// Times: from_ns and to_ns are kept exact as BigInt; events and cells carry float64 ns from
// from_ns (exact while a frame's events lie within 2^53 ns of it, 104 days), which the page
// moves onto its own base once per frame.
import { inflateRaw, WireError } from './wire.js';

export const VIEW_FIXED = 60;
export const VIEW_MAX_BODY = 64 * 1024 * 1024;
export const LANE_INSTANT = 256, LANE_COUNTER = 257, LANES = 258;

/**
 * A track of a frame: its events are [e0, e0 + ne) of the frame's event columns (by start),
 * its cells [c0, c0 + nc) of its cell columns (by lane, then column); its counter cells
 * (lane 257, the last of its cells) have their values at [v0, ...) of cMin and cMax.
 * @typedef {{ pid: number, tid: number, e0: number, ne: number, c0: number, nc: number, v0: number }} ViewTrack
 */
/**
 * A decoded view frame. Event columns: start (ns from from_ns), dur, kind, depth, extra,
 * name, index (the event's index in the capture). Cell columns: lane, col (from the frame's
 * first column, from_ns >> shift), count, busy (ns, as float32: it only shades), name (the
 * dominant one) and nameDur (float32); a counter cell's least and greatest value are in
 * cMin and cMax, by the track's v0. col0Ns: where the first column starts, in ns from
 * from_ns (0 or negative). bytes: the frame's size on the wire; held: its columns' bytes.
 * @typedef {{
 *   fromNs: bigint, toNs: bigint, shift: number, cellNs: number, col0Ns: number, bytes: number,
 *   held: number, tracks: ViewTrack[], names: Map<number, string>,
 *   nevents: number, evStart: Float64Array, evDur: Float64Array, evKind: Uint8Array,
 *   evDepth: Uint8Array, evExtra: Uint8Array, evName: Uint32Array, evIndex: Float64Array,
 *   ncells: number, cLane: Uint16Array, cCol: Uint32Array, cCount: Float64Array,
 *   cBusy: Float32Array, cName: Uint32Array, cNameDur: Float32Array, cMin: Float64Array,
 *   cMax: Float64Array,
 * }} ViewFrame
 */

export class ViewError extends Error {
  /**
   * @param {string} code the rule broken: TRUNCATED, MAGIC, VERSION, CORRUPT, LIMIT, VARINT
   *   or INFLATE (the C decoder's TROVE_ERR_ names)
   * @param {number} offset the byte of the frame where it was found
   * @param {string} message what was found there
   */
  constructor(code, offset, message) {
    super(`${code} at byte ${offset}: view frame: ${message}`);
    this.code = code;
    this.offset = offset;
  }
}

/**
 * @param {string} code @param {number} offset @param {string} message
 * @returns {never}
 */
function fail(code, offset, message) {
  throw new ViewError(code, offset, message);
}

const TWO32 = 4294967296;
const bits = new DataView(new ArrayBuffer(8));
const utf8 = new TextDecoder('utf-8');

/**
 * The body's reader: varints of 32 or 64 bits (trove_get_varint's rules: at most
 * ceil(bits / 7) bytes, the last carrying no bit above the width), each end-checked.
 */
class Reader {
  /** @param {Uint8Array} p the body @param {number} start its offset in the frame */
  constructor(p, start) {
    this.p = p;
    this.pos = 0;
    this.end = p.length;
    this.base = start;
    this.lo = 0; // the last 64-bit varint's halves
    this.hi = 0;
  }

  /** @param {string} what @returns {never} */
  bad(what) { return fail('CORRUPT', this.base + this.pos, `${what} (body byte ${this.pos})`); }

  /**
   * @param {string} field
   * @param {boolean} truncated
   * @returns {never}
   */
  badVarint(field, truncated) {
    return fail(truncated ? 'TRUNCATED' : 'VARINT', this.base + this.pos,
      `${field} ${truncated ? 'runs past the end' : 'is not a valid varint'} (body byte ${this.pos})`);
  }

  /** @param {string} field @returns {number} a u32 varint */
  u32(field) {
    const p = this.p;
    let r = 0, pos = this.pos;
    for (let i = 0; i < 5; i++) {
      if (pos >= this.end) this.badVarint(field, true);
      const b = p[pos++];
      if (i === 4) {
        if (b > 15) this.badVarint(field, false);
        this.pos = pos;
        return r + b * 268435456;
      }
      r |= (b & 0x7f) << (7 * i);
      if (b < 0x80) { this.pos = pos; return r >>> 0; }
    }
    return this.badVarint(field, false);
  }

  /**
   * A u64 varint: its halves in lo and hi, and its value as a float64 (exact below 2^53).
   * @param {string} field @returns {number}
   */
  u64(field) {
    const p = this.p;
    let lo = 0, hi = 0, pos = this.pos;
    for (let i = 0; i < 10; i++) {
      if (pos >= this.end) this.badVarint(field, true);
      const b = p[pos++], v = b & 0x7f;
      if (i < 4) lo |= v << (7 * i);
      else if (i === 4) { lo |= v << 28; hi = v >>> 4; }
      else if (i < 9) hi |= v << (7 * i - 32);
      else {
        if (b > 1) this.badVarint(field, false);
        hi |= b << 31;
      }
      if (b < 0x80) {
        this.lo = lo >>> 0; this.hi = hi >>> 0; this.pos = pos;
        return this.hi * TWO32 + this.lo;
      }
    }
    return this.badVarint(field, false);
  }
}

/**
 * Decodes a view frame (a whole answer of /view). Throws a ViewError on anything
 * trove_view_decode refuses.
 * @param {Uint8Array<ArrayBuffer>} u8
 * @returns {Promise<ViewFrame>}
 */
export async function decodeView(u8) {
  const len = u8.length;
  if (len < VIEW_FIXED) fail('TRUNCATED', len, `${len} bytes, shorter than its ${VIEW_FIXED}-byte fixed part`);
  const magic = 'TROVVIEW';
  for (let i = 0; i < 8; i++)
    if (u8[i] !== magic.charCodeAt(i)) fail('MAGIC', 0, 'not a trove view frame (it does not start with "TROVVIEW")');
  const dv = new DataView(u8.buffer, u8.byteOffset, VIEW_FIXED);
  const version = dv.getUint32(8, true);
  if (version !== 1) fail('VERSION', 8, `version ${version}; this page reads version 1`);
  const flags = dv.getUint32(12, true);
  if (flags & ~1) fail('CORRUPT', 12, `flags 0x${flags.toString(16)}; only 0x1 is defined`);
  const fromNs = dv.getBigUint64(16, true), toNs = dv.getBigUint64(24, true), shift = dv.getUint32(32, true);
  const bodyLen = dv.getUint32(52, true), rawLen = dv.getUint32(56, true);
  if (toNs <= fromNs || shift > 63) fail('CORRUPT', 16, 'an empty range or a shift over 63');
  if (bodyLen !== len - VIEW_FIXED) fail('CORRUPT', 52, `its body is ${bodyLen} bytes by its header; it holds ${len - VIEW_FIXED}`);
  if (rawLen > VIEW_MAX_BODY || (!(flags & 1) && rawLen !== bodyLen))
    fail('LIMIT', 56, `a body of ${rawLen} bytes (limit ${VIEW_MAX_BODY}; unpacked, it is its stored length)`);
  let body = u8.subarray(VIEW_FIXED);
  if (flags & 1) {
    try {
      body = await inflateRaw(u8.subarray(VIEW_FIXED), rawLen);
    } catch (e) {
      if (!(e instanceof WireError)) throw e;
      fail(e.code === 'INFLATE' ? 'INFLATE' : 'CORRUPT', VIEW_FIXED, `the body does not inflate to its ${rawLen} bytes`);
    }
  }
  const ntracks = dv.getUint32(36, true), nnames = dv.getUint32(40, true);
  const nevents = dv.getUint32(44, true), ncells = dv.getUint32(48, true);
  return parse(new Reader(body, VIEW_FIXED), fromNs, toNs, shift, ntracks, nnames, nevents, ncells, len);
}

/**
 * @param {Reader} r @param {bigint} fromNs @param {bigint} toNs @param {number} shift
 * @param {number} ntracks @param {number} nnames @param {number} nevents @param {number} ncells
 * @param {number} bytes the frame's size
 * @returns {ViewFrame}
 */
function parse(r, fromNs, toNs, shift, ntracks, nnames, nevents, ncells, bytes) {
  const left = r.end - r.pos;
  if (nnames > left / 2 || ntracks > left / 4 || nevents > left / 7 || ncells > left / 6)
    r.bad('more names, tracks, events or cells than its body can hold');
  const sh = BigInt(shift), cLoB = fromNs >> sh;
  // the last column as a count from the first: every column is checked against it
  const lastCol = Number(((toNs - 1n) >> sh) - cLoB);
  // 45 bytes an event and 26 a cell: columns of exactly the counts checked above
  /** @type {ViewFrame} */
  const f = {
    fromNs, toNs, shift, cellNs: 2 ** shift, col0Ns: -Number(fromNs - (cLoB << sh)), bytes,
    held: nevents * 45 + ncells * 26, tracks: [], names: new Map(),
    nevents, evStart: new Float64Array(nevents), evDur: new Float64Array(nevents),
    evKind: new Uint8Array(nevents), evDepth: new Uint8Array(nevents), evExtra: new Uint8Array(nevents),
    evName: new Uint32Array(nevents), evIndex: new Float64Array(nevents),
    ncells, cLane: new Uint16Array(ncells), cCol: new Uint32Array(ncells), cCount: new Float64Array(ncells),
    cBusy: new Float32Array(ncells), cName: new Uint32Array(ncells), cNameDur: new Float32Array(ncells),
    cMin: new Float64Array(0), cMax: new Float64Array(0),
  };
  // counter values: few in most captures, so their columns grow as they come
  let vals = new Float64Array(0), nv = 0;
  const p = r.p;
  let prevId = -1;
  for (let i = 0; i < nnames; i++) {
    const id = r.u32("a name's id"), n = r.u32("a name's length");
    if (n > r.end - r.pos) r.bad('a name runs past the body');
    if (i > 0 && id <= prevId) r.bad('names out of order');
    f.names.set(id, utf8.decode(p.subarray(r.pos, r.pos + n)));
    r.pos += n;
    prevId = id;
  }
  let ev = 0, ce = 0, prevPid = -1, prevTid = -1;
  for (let t = 0; t < ntracks; t++) {
    const pid = r.u32("a track's pid"), tid = r.u32("a track's tid");
    const ne = r.u32("a track's events"), nc = r.u32("a track's cells");
    if (ne > nevents - ev || nc > ncells - ce) r.bad('a track holds more events or cells than the frame');
    if (t > 0 && (prevPid > pid || (prevPid === pid && prevTid >= tid))) r.bad('tracks out of order');
    if (ne === 0 && nc === 0) r.bad('a track with nothing in it');
    f.tracks.push({ pid, tid, e0: ev, ne, c0: ce, nc, v0: nv });
    prevPid = pid; prevTid = tid;
    let prev = 0;
    for (let i = 0; i < ne; i++, ev++) {
      r.u64("an event's start");
      // zigzag: even is +v/2, odd is -(v+1)/2, from the halves so that no bit is lost below 2^53
      const mag = (r.hi * TWO32 + (r.lo - (r.lo & 1))) / 2;
      const start = prev + ((r.lo & 1) ? -mag - 1 : mag);
      if (i > 0 && start < prev) r.bad("a track's events out of order");
      f.evDur[ev] = r.u64("an event's duration");
      if (r.end - r.pos < 3) r.bad("an event's kind, depth and extra run past the body");
      f.evKind[ev] = p[r.pos]; f.evDepth[ev] = p[r.pos + 1]; f.evExtra[ev] = p[r.pos + 2];
      r.pos += 3;
      f.evName[ev] = r.u32("an event's name");
      f.evIndex[ev] = r.u64("an event's index");
      f.evStart[ev] = start;
      prev = start;
    }
    let prevLane = 0, prevCol = 0;
    for (let i = 0; i < nc; i++, ce++) {
      const dl = r.u32("a cell's lane"), col = r.u64("a cell's column");
      const count = r.u64("a cell's count"), countMax = r.lo === 0xffffffff && r.hi === 0xffffffff;
      f.cBusy[ce] = r.u64("a cell's busy time");
      f.cName[ce] = r.u32("a cell's name");
      f.cNameDur[ce] = r.u64("a cell's name duration");
      const lane = i > 0 ? prevLane + dl : dl;
      if (dl >= LANES || lane >= LANES) r.bad('a cell of no lane');
      // in its lane: one past the last cell plus the gap; else from the frame's first column.
      // (A column past the range by more than one is refused here, as an overflow in C is:
      // the encoder's frames have at most 2 px + 1 columns, so a u32 holds every column.)
      const c = i > 0 && dl === 0 ? prevCol + col + 1 : col;
      if (c > lastCol + 1 || c > 0xffffffff) r.bad("a cell's column overflows");
      if (countMax) r.bad("a cell's count overflows");
      f.cLane[ce] = lane; f.cCol[ce] = c; f.cCount[ce] = count + 1;
      if (lane === LANE_COUNTER) {
        if (2 * nv + 2 > vals.length) { const g = new Float64Array(Math.max(64, vals.length * 2)); g.set(vals); vals = g; }
        r.u64("a cell's least value");
        bits.setUint32(0, r.lo, true); bits.setUint32(4, r.hi, true);
        vals[2 * nv] = bits.getFloat64(0, true);
        r.u64("a cell's greatest value");
        bits.setUint32(0, r.lo, true); bits.setUint32(4, r.hi, true);
        vals[2 * nv + 1] = bits.getFloat64(0, true);
        nv++;
      }
      if (c > lastCol) r.bad("a cell past the frame's range");
      prevLane = lane; prevCol = c;
    }
  }
  if (ev !== nevents || ce !== ncells) r.bad('its tracks hold fewer events or cells than its header says');
  if (r.pos !== r.end) r.bad('bytes left over after the tracks');
  f.cMin = new Float64Array(nv); f.cMax = new Float64Array(nv);
  for (let i = 0; i < nv; i++) { f.cMin[i] = vals[2 * i]; f.cMax[i] = vals[2 * i + 1]; }
  f.held += nv * 16;
  return f;
}
