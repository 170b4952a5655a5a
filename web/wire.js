// @ts-check
// wire.js: trove's wire format in the browser (docs/formats/wire.md), the same rules as the
// C decoders of src/codec/: a 16-byte frame header, then raw (32-byte records), packed (a
// thread table, zigzag start deltas, varints), deflate (raw deflate of a packed payload,
// inflated with DecompressionStream('deflate-raw') into at most raw_len bytes) or names
// (event, thread and process names, sort indexes).
//
// Trust rules: every length and count comes from outside, so each is checked against the
// header's limits before anything is allocated, and every read is checked against the end
// of its payload. A frame that breaks a rule throws a WireError naming the rule and the
// byte offset in the frame; nothing of that frame reaches the caller, so a bad frame is an
// error shown to the user, never a wrong picture.
//
// 64-bit fields (start_ns, dur_ns) are kept exact as two u32 halves (lo, hi), because a
// JavaScript number holds only 53 bits; the timeline converts them to offsets from the
// capture's first event, which are small.
//
// An event batch is columns of typed arrays, `count` long:
//   startLo startHi durLo durHi pid tid : Uint32Array   kind depth extra : Uint8Array
//   name : Uint32Array

/**
 * A frame's header, checked (parseHeader).
 * @typedef {{ format: number, version: number, count: number, payload: number, rawLen: number }} FrameHeader
 */
/**
 * Events as columns, `count` long (newBatch): the u64 times as (lo, hi) halves.
 * @typedef {{
 *   count: number,
 *   startLo: Uint32Array, startHi: Uint32Array, durLo: Uint32Array, durHi: Uint32Array,
 *   pid: Uint32Array, tid: Uint32Array,
 *   kind: Uint8Array, depth: Uint8Array, extra: Uint8Array,
 *   name: Uint32Array,
 * }} Batch
 */
/**
 * A names entry that carries text: type 1 an event name (a: its id), 2 a thread's (a: pid,
 * b: tid), 3 a process's (a: pid); bytes are the text's UTF-8 (the checksum hashes them).
 * @typedef {{ type: 1 | 2 | 3, a: number, b: number, text: string, bytes: Uint8Array }} NameText
 */
/**
 * A names entry that carries a sort index (version 2): type 4 a process's (a: pid), 5 a
 * thread's (a: pid, b: tid).
 * @typedef {{ type: 4 | 5, a: number, b: number, value: number }} NameSort
 */
/** @typedef {NameText | NameSort} NameEntry */
/**
 * An attribute row (docs/formats/attrs.md): the index of its event in the events frame after
 * the attrs frame, scope (0 arg, 1 field, 2 trace), key, type (1 int, 2 double, 3 string,
 * 4 bool, 5 JSON text) and value (an int as a BigInt, a double or bool as a number or
 * boolean, a string or JSON text as a string).
 * @typedef {{ event: number, scope: number, key: string, type: number, value: bigint | number | boolean | string }} AttrRow
 */
/**
 * A decoded frame: a batch of events, the entries of a names frame, or the attribute rows
 * of the events frame that follows (format 7).
 * @typedef {{ format: number, count: number, events: Batch, names?: undefined, attrs?: undefined }
 *   | { format: number, count: number, names: NameEntry[], events?: undefined, attrs?: undefined }
 *   | { format: number, count: number, attrs: AttrRow[], events?: undefined, names?: undefined }} Frame
 */

export const HEADER_SIZE = 16;
export const FORMAT_RAW = 1, FORMAT_PACKED = 2, FORMAT_DEFLATE = 3, FORMAT_NAMES = 4, FORMAT_ATTRS = 7;
export const MAX_ATTRS = 1048576;
export const MAX_EVENTS = 65536;
export const MAX_NAMES = 1048576;
export const MAX_PAYLOAD = 64 * 1024 * 1024;
export const EVENT_SIZE = 32;
// The worst packed event: an index byte and its escape (5), three varints (10 + 10 + 5) and
// three bytes; and a thread table entry (two u32 varints) per event: 5 + 44 per event.
export const PACKED_PER_EVENT = 44;
export const FORMAT_NAMES_TEXT = { 1: 'raw', 2: 'packed', 3: 'deflate', 4: 'names' };

export class WireError extends Error {
  /**
   * @param {string} code the rule broken: TRUNCATED, MAGIC, FORMAT, VERSION, LIMIT, CORRUPT,
   *   BOMB, VARINT, THREAD, OVERRUN or INFLATE
   * @param {number} offset the byte in the frame (or stream) where it was found
   * @param {string} message what was found there
   */
  constructor(code, offset, message) {
    super(`${code} at byte ${offset}: ${message}`);
    this.code = code;
    this.offset = offset;
  }
}

/**
 * @param {string} code @param {number} offset @param {string} message
 * @returns {never}
 */
function fail(code, offset, message) {
  throw new WireError(code, offset, message);
}

/**
 * @param {number} count events
 * @returns {number} the most bytes a packed payload of that many events may take
 */
export function packedBound(count) {
  return 5 + PACKED_PER_EVENT * count;
}

/**
 * The header of the frame at the start of `u8` (a Uint8Array): {format, version, count,
 * payload, rawLen}. Checks the magic, version, format and every limit; that the payload is
 * all there (TRUNCATED) and that nothing follows it (a WebSocket message is one frame).
 * @param {Uint8Array} u8
 * @returns {FrameHeader}
 */
export function parseHeader(u8) {
  if (u8.length < HEADER_SIZE) fail('TRUNCATED', 0, `a frame of ${u8.length} bytes is shorter than its 16-byte header`);
  if (u8[0] !== 0x54 || u8[1] !== 0x56) fail('MAGIC', 0, 'not a trove wire frame (no "TV")');
  const dv = new DataView(u8.buffer, u8.byteOffset, HEADER_SIZE);
  const format = u8[2], version = u8[3];
  const count = dv.getUint32(4, true), payload = dv.getUint32(8, true), rawLen = dv.getUint32(12, true);
  if ((format < FORMAT_RAW || format > FORMAT_NAMES) && format !== FORMAT_ATTRS) fail('FORMAT', 2, `unknown wire format id ${format}`);
  if (version !== 1 && !(format === FORMAT_NAMES && version === 2)) fail('VERSION', 3, `version ${version} of format ${format} is not known`);
  if (payload > MAX_PAYLOAD) fail('LIMIT', 8, `payload of ${payload} bytes over the ${MAX_PAYLOAD} limit`);
  if (format === FORMAT_NAMES) {
    if (count > MAX_NAMES) fail('LIMIT', 4, `names frame of ${count} entries over the ${MAX_NAMES} limit`);
    if (rawLen !== 0) fail('CORRUPT', 12, 'names frame with nonzero raw_len');
  } else if (format === FORMAT_ATTRS) {
    if (count > MAX_ATTRS) fail('LIMIT', 4, `attrs frame of ${count} rows over the ${MAX_ATTRS} limit`);
    if (rawLen !== 0) fail('CORRUPT', 12, 'attrs frame with nonzero raw_len');
    if (payload < 1 + 4 * count) fail('CORRUPT', 8, `attrs frame of ${count} rows with a ${payload}-byte payload`);
  } else {
    if (count > MAX_EVENTS) fail('LIMIT', 4, `frame of ${count} events over the ${MAX_EVENTS} limit`);
    if (format === FORMAT_RAW && (payload !== count * EVENT_SIZE || rawLen !== 0))
      fail('CORRUPT', 8, `raw frame of ${count} events with a ${payload}-byte payload (or a raw_len)`);
    if (format === FORMAT_PACKED && (payload > packedBound(count) || rawLen !== 0))
      fail('CORRUPT', 8, `packed frame of ${count} events with a ${payload}-byte payload (or a raw_len)`);
    if (format === FORMAT_DEFLATE && (rawLen > packedBound(count) || rawLen > MAX_PAYLOAD))
      fail('BOMB', 12, `deflate frame of ${count} events claims ${rawLen} bytes inflated`);
  }
  if (u8.length - HEADER_SIZE < payload) fail('TRUNCATED', u8.length, `payload of ${payload} bytes, ${u8.length - HEADER_SIZE} present`);
  if (u8.length - HEADER_SIZE > payload) fail('CORRUPT', HEADER_SIZE + payload, `${u8.length - HEADER_SIZE - payload} bytes after the frame's payload`);
  return { format, version, count, payload, rawLen };
}

/**
 * @param {number} count
 * @returns {Batch} zeroed columns of count events
 */
export function newBatch(count) {
  return {
    count,
    startLo: new Uint32Array(count), startHi: new Uint32Array(count),
    durLo: new Uint32Array(count), durHi: new Uint32Array(count),
    pid: new Uint32Array(count), tid: new Uint32Array(count),
    kind: new Uint8Array(count), depth: new Uint8Array(count), extra: new Uint8Array(count),
    name: new Uint32Array(count),
  };
}

const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/**
 * Raw: 32-byte records. `p` is the payload (Uint8Array of exactly 32 * count bytes). On a
 * little-endian machine with the payload 4-byte aligned (a WebSocket message's is: it starts
 * 16 bytes into its own buffer), the u32 fields are read through one Uint32Array view.
 * @param {Uint8Array} p @param {number} count
 * @returns {Batch}
 */
export function decodeRaw(p, count) {
  const b = newBatch(count);
  if (LITTLE_ENDIAN && p.byteOffset % 4 === 0) {
    const u = new Uint32Array(p.buffer, p.byteOffset, count * 8);
    for (let i = 0, w = 0, o = 0; i < count; i++, w += 8, o += EVENT_SIZE) {
      b.startLo[i] = u[w]; b.startHi[i] = u[w + 1];
      b.durLo[i] = u[w + 2]; b.durHi[i] = u[w + 3];
      b.pid[i] = u[w + 4]; b.tid[i] = u[w + 5];
      b.kind[i] = p[o + 24]; b.depth[i] = p[o + 25]; b.extra[i] = p[o + 26];
      b.name[i] = u[w + 7];
    }
    return b;
  }
  const dv = new DataView(p.buffer, p.byteOffset, p.byteLength);
  for (let i = 0, o = 0; i < count; i++, o += EVENT_SIZE) {
    b.startLo[i] = dv.getUint32(o, true);
    b.startHi[i] = dv.getUint32(o + 4, true);
    b.durLo[i] = dv.getUint32(o + 8, true);
    b.durHi[i] = dv.getUint32(o + 12, true);
    b.pid[i] = dv.getUint32(o + 16, true);
    b.tid[i] = dv.getUint32(o + 20, true);
    b.kind[i] = p[o + 24];
    b.depth[i] = p[o + 25];
    b.extra[i] = p[o + 26];
    // pad (o + 27) is not carried by the other formats and decodes as 0 there: the same here.
    b.name[i] = dv.getUint32(o + 28, true);
  }
  return b;
}

// The varint readers leave their result in these (no allocation per value).
let vLo = 0, vHi = 0, vPos = 0;

/**
 * A u32 varint at p[pos]: at most 5 bytes, the 5th below 16. Sets vLo, vPos.
 * @param {Uint8Array} p the payload
 * @param {number} pos where the varint starts
 * @param {number} end the payload's end
 * @param {number} base the payload's offset in the frame (for messages)
 */
function varint32(p, pos, end, base) {
  let r = 0, shift = 0;
  for (let i = 0; i < 5; i++) {
    if (pos >= end) fail('TRUNCATED', base + pos, 'the payload ends inside a varint');
    const b = p[pos++];
    if (i === 4) {
      if (b > 15) fail('VARINT', base + pos - 1, 'a 32-bit varint with bits above its width');
      r += b * 268435456; // 2^28
      vLo = r >>> 0; vPos = pos;
      return;
    }
    r |= (b & 0x7f) << shift;
    shift += 7;
    if (b < 0x80) { vLo = r >>> 0; vPos = pos; return; }
  }
}

/**
 * A u64 varint at p[pos]: at most 10 bytes, the 10th 0 or 1. Sets vLo, vHi, vPos.
 * @param {Uint8Array} p @param {number} pos @param {number} end @param {number} base
 */
function varint64(p, pos, end, base) {
  let lo = 0, hi = 0;
  for (let i = 0; i < 10; i++) {
    if (pos >= end) fail('TRUNCATED', base + pos, 'the payload ends inside a varint');
    const b = p[pos++], v = b & 0x7f;
    if (i < 4) lo |= v << (7 * i);
    else if (i === 4) { lo |= v << 28; hi = v >>> 4; }
    else if (i < 9) hi |= v << (7 * i - 32);
    else {
      if (b > 1) fail('VARINT', base + pos - 1, 'a 64-bit varint with bits above its width');
      hi |= b << 31;
    }
    if (b < 0x80) { vLo = lo >>> 0; vHi = hi >>> 0; vPos = pos; return; }
  }
  fail('VARINT', base + pos - 1, 'a varint longer than 10 bytes');
}

/**
 * Packed: p is the payload (Uint8Array), `base` its offset in the frame (for messages).
 * @param {Uint8Array} p @param {number} count @param {number} [base]
 * @returns {Batch}
 */
export function decodePacked(p, count, base = HEADER_SIZE) {
  const end = p.length;
  varint32(p, 0, end, base);
  const nThreads = vLo;
  let pos = vPos;
  if (nThreads > count) fail('CORRUPT', base, `${nThreads} threads for ${count} events`);
  const tPid = new Uint32Array(nThreads), tTid = new Uint32Array(nThreads);
  for (let t = 0; t < nThreads; t++) {
    varint32(p, pos, end, base); tPid[t] = vLo; pos = vPos;
    varint32(p, pos, end, base); tTid[t] = vLo; pos = vPos;
  }
  const b = newBatch(count);
  const escape = nThreads > 256;
  let prevLo = 0, prevHi = 0;
  for (let i = 0; i < count; i++) {
    if (pos >= end) fail('TRUNCATED', base + pos, `the payload ends before event ${i}`);
    let ix = p[pos++];
    if (ix === 255 && escape) {
      varint32(p, pos, end, base); pos = vPos;
      ix = 255 + vLo;
    }
    if (ix >= nThreads) fail('THREAD', base + pos - 1, `event ${i}: thread index ${ix} of ${nThreads}`);
    // start: zigzag delta, added in wrapping 64-bit arithmetic. The varints of an event
    // take at most 25 bytes: with that many left, those of up to 4 bytes (28 bits, the common
    // case) are read here without a bound check per byte; the rest go through varint64/32.
    let zLo, zHi, x = 0, c = 0;
    const fast = end - pos >= 25;
    if (fast && (c = p[pos]) < 0x80) { zLo = c; zHi = 0; pos += 1; }
    else if (fast && (x = p[pos + 1]) < 0x80) { zLo = (c & 0x7f) | (x << 7); zHi = 0; pos += 2; }
    else { varint64(p, pos, end, base); zLo = vLo; zHi = vHi; pos = vPos; }
    const m = -(zLo & 1);
    const dLo = (((zLo >>> 1) | (zHi << 31)) ^ m) >>> 0, dHi = ((zHi >>> 1) ^ m) >>> 0;
    const lo = prevLo + dLo;
    prevHi = (prevHi + dHi + (lo > 0xffffffff ? 1 : 0)) >>> 0;
    prevLo = lo >>> 0;
    b.startLo[i] = prevLo; b.startHi[i] = prevHi;
    if (fast && (c = p[pos]) < 0x80) { b.durLo[i] = c; b.durHi[i] = 0; pos += 1; }
    else if (fast && (x = p[pos + 1]) < 0x80) { b.durLo[i] = (c & 0x7f) | (x << 7); b.durHi[i] = 0; pos += 2; }
    else if (fast && (c = p[pos + 2]) < 0x80) { b.durLo[i] = (p[pos] & 0x7f) | ((x & 0x7f) << 7) | (c << 14); b.durHi[i] = 0; pos += 3; }
    else { varint64(p, pos, end, base); b.durLo[i] = vLo; b.durHi[i] = vHi; pos = vPos; }
    if (fast && (c = p[pos]) < 0x80) { b.name[i] = c; pos += 1; }
    else if (fast && (x = p[pos + 1]) < 0x80) { b.name[i] = (c & 0x7f) | (x << 7); pos += 2; }
    else { varint32(p, pos, end, base); b.name[i] = vLo; pos = vPos; }
    if (end - pos < 3) fail('TRUNCATED', base + pos, `the payload ends inside event ${i}`);
    b.kind[i] = p[pos]; b.depth[i] = p[pos + 1]; b.extra[i] = p[pos + 2];
    pos += 3;
    b.pid[i] = tPid[ix]; b.tid[i] = tTid[ix];
  }
  if (pos !== end) fail('CORRUPT', base + pos, `${end - pos} bytes after the last event`);
  return b;
}

/**
 * Inflate a raw deflate stream into exactly rawLen bytes; never more (BOMB), never fewer
 * (CORRUPT), a malformed stream or bytes after its end are INFLATE.
 * @param {Uint8Array<ArrayBuffer>} data @param {number} rawLen
 * @returns {Promise<Uint8Array<ArrayBuffer>>}
 */
export async function inflateRaw(data, rawLen) {
  const out = new Uint8Array(rawLen);
  let n = 0;
  const ds = new DecompressionStream('deflate-raw');
  const writer = ds.writable.getWriter();
  const reader = ds.readable.getReader();
  const w = writer.write(data).then(() => writer.close()).catch(() => {});
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      if (n + value.length > rawLen) {
        reader.cancel().catch(() => {});
        fail('BOMB', 12, `the deflate stream inflates past its raw_len of ${rawLen} bytes`);
      }
      out.set(value, n);
      n += value.length;
    }
  } catch (e) {
    if (e instanceof WireError) throw e;
    fail('INFLATE', HEADER_SIZE, `a malformed deflate stream (${(e instanceof Error && e.message) || e})`);
  }
  await w;
  if (n !== rawLen) fail('CORRUPT', 12, `the deflate stream inflates to ${n} bytes, not its raw_len of ${rawLen}`);
  return out;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Names: entries [{type, a, b, text | value}], the whole frame checked before any is returned.
 * @param {Uint8Array} p @param {number} count @param {number} version @param {number} [base]
 * @returns {NameEntry[]}
 */
export function decodeNames(p, count, version, base = HEADER_SIZE) {
  const end = p.length;
  /** @type {NameEntry[]} */
  const out = new Array(count);
  let pos = 0;
  for (let i = 0; i < count; i++) {
    if (pos >= end) fail('TRUNCATED', base + pos, `the payload ends before entry ${i}`);
    const at = pos, type = p[pos++];
    if (type < 1 || type > 5 || (type >= 4 && version < 2)) fail('CORRUPT', base + at, `entry ${i}: unknown type ${type}`);
    varint32(p, pos, end, base); pos = vPos;
    const a = vLo;
    let b = 0;
    if (type === 2 || type === 5) { varint32(p, pos, end, base); pos = vPos; b = vLo; }
    if (type <= 3) {
      varint32(p, pos, end, base); pos = vPos;
      const len = vLo;
      if (len > 65535) fail('CORRUPT', base + pos, `entry ${i}: a name of ${len} bytes`);
      if (len > end - pos) fail('OVERRUN', base + pos, `entry ${i}: a name of ${len} bytes past the payload's end`);
      let text;
      try { text = utf8.decode(p.subarray(pos, pos + len)); } catch { fail('CORRUPT', base + pos, `entry ${i}: a name that is not UTF-8`); }
      out[i] = { type: /** @type {1 | 2 | 3} */ (type), a, b, text, bytes: p.slice(pos, pos + len) };
      pos += len;
    } else {
      varint32(p, pos, end, base); pos = vPos;
      const z = vLo;
      out[i] = { type: /** @type {4 | 5} */ (type), a, b, value: (z >>> 1) ^ -(z & 1) };
    }
  }
  if (pos !== end) fail('CORRUPT', base + pos, `${end - pos} bytes after the last entry`);
  return out;
}

const lenient = new TextDecoder('utf-8', { fatal: false }); // a value's text: '?' for what is not UTF-8

/**
 * Attrs (format 7): the strings' count, then the stream of docs/formats/attrs.md (strings,
 * event deltas, keys, types, the keys whose ints are differences, values), every varint and
 * id checked against the payload.
 * @param {Uint8Array} p the payload @param {number} count rows
 * @returns {AttrRow[]}
 */
export function decodeAttrs(p, count) {
  const end = p.length, base = HEADER_SIZE;
  varint32(p, 0, end, base);
  const ns = vLo;
  let pos = vPos;
  if (end - pos < ns + 4 * count) fail('CORRUPT', 8, `${ns} strings and ${count} rows cannot fit the payload`);
  /** @type {string[]} */
  const strs = [];
  for (let i = 0; i < ns; i++) {
    varint32(p, pos, end, base);
    const len = vLo;
    pos = vPos;
    if (len > end - pos) fail('CORRUPT', base + pos, `a string of ${len} bytes past the payload`);
    strs.push(lenient.decode(p.subarray(pos, pos + len)));
    pos += len;
  }
  const ev = new Float64Array(count), key = new Uint32Array(count), tb = new Uint8Array(count);
  let e = 0;
  for (let i = 0; i < count; i++) {
    varint64(p, pos, end, base);
    pos = vPos;
    e += vHi * 4294967296 + vLo;
    ev[i] = e;
  }
  for (let i = 0; i < count; i++) {
    varint32(p, pos, end, base);
    pos = vPos;
    if (vLo >= ns) fail('CORRUPT', base + pos - 1, 'a key past the strings');
    key[i] = vLo;
  }
  if (end - pos < count) fail('TRUNCATED', base + end, 'the types cut by the end');
  for (let i = 0; i < count; i++, pos++) {
    const t = p[pos] & 15, sc = p[pos] >> 4;
    if (t < 1 || t > 5 || sc > 2) fail('CORRUPT', base + pos, 'a type outside 1..5 or a scope outside 0..2');
    tb[i] = p[pos];
  }
  varint32(p, pos, end, base);
  const nd = vLo;
  pos = vPos;
  if (nd > ns) fail('CORRUPT', base + pos - 1, 'more keys of differences than strings');
  const delta = new Uint8Array(ns);
  for (let k = 0, prev = -1; k < nd; k++) {
    varint32(p, pos, end, base);
    pos = vPos;
    if (vLo >= ns || vLo <= prev) fail('CORRUPT', base + pos - 1, 'a key of differences past the strings or not rising');
    delta[vLo] = 1;
    prev = vLo;
  }
  /** @type {Map<number, bigint>} */
  const last = new Map();
  const dv = new DataView(p.buffer, p.byteOffset, p.length);
  /** @type {AttrRow[]} */
  const rows = [];
  for (let i = 0; i < count; i++) {
    const t = tb[i] & 15;
    /** @type {bigint | number | boolean | string} */
    let v;
    if (t === 1) {
      varint64(p, pos, end, base);
      pos = vPos;
      const z = (BigInt(vHi) << 32n) | BigInt(vLo);
      let x = (z >> 1n) ^ -(z & 1n);
      if (delta[key[i]]) x = BigInt.asIntN(64, (last.get(key[i]) || 0n) + x);
      last.set(key[i], x);
      v = x;
    } else if (t === 2) {
      if (end - pos < 8) fail('TRUNCATED', base + end, 'a double cut by the end');
      v = dv.getFloat64(pos, true);
      pos += 8;
    } else if (t === 4) {
      if (pos >= end) fail('TRUNCATED', base + end, 'a bool cut by the end');
      if (p[pos] > 1) fail('CORRUPT', base + pos, 'a bool not 0 or 1');
      v = p[pos++] === 1;
    } else {
      varint32(p, pos, end, base);
      pos = vPos;
      if (vLo >= ns) fail('CORRUPT', base + pos - 1, 'a string value past the strings');
      v = strs[vLo];
    }
    rows.push({ event: ev[i], scope: tb[i] >> 4, key: strs[key[i]], type: t, value: v });
  }
  if (pos !== end) fail('CORRUPT', base + pos, 'bytes after the last value');
  return rows;
}

/**
 * One frame (a whole WebSocket message, Uint8Array): {format, count, events?, names?}.
 * Raw and packed decode synchronously; a deflate frame is inflated first (a Promise).
 * @param {Uint8Array<ArrayBuffer>} u8
 * @returns {Frame | null} null for a deflate frame (decodeFrame inflates it)
 */
export function decodeFrameSync(u8) {
  const h = parseHeader(u8);
  const p = u8.subarray(HEADER_SIZE, HEADER_SIZE + h.payload);
  if (h.format === FORMAT_RAW) return { format: h.format, count: h.count, events: decodeRaw(p, h.count) };
  if (h.format === FORMAT_PACKED) return { format: h.format, count: h.count, events: decodePacked(p, h.count) };
  if (h.format === FORMAT_NAMES) return { format: h.format, count: h.count, names: decodeNames(p, h.count, h.version) };
  if (h.format === FORMAT_ATTRS) return { format: h.format, count: h.count, attrs: decodeAttrs(p, h.count) };
  return null; // deflate: decodeFrame
}

/**
 * @param {Uint8Array<ArrayBuffer>} u8
 * @returns {Promise<Frame>}
 */
export async function decodeFrame(u8) {
  const r = decodeFrameSync(u8);
  if (r) return r;
  const h = parseHeader(u8);
  const inflated = await inflateRaw(u8.subarray(HEADER_SIZE, HEADER_SIZE + h.payload), h.rawLen);
  return { format: h.format, count: h.count, events: decodePacked(inflated, h.count, 0) };
}

/**
 * A stream of frames back to back (a .wire file): each frame's bytes, in order.
 * @param {Uint8Array<ArrayBuffer>} u8
 * @returns {Generator<Uint8Array<ArrayBuffer>>}
 */
export function* splitStream(u8) {
  let o = 0;
  while (o < u8.length) {
    if (u8.length - o < HEADER_SIZE) fail('TRUNCATED', o, 'the stream ends inside a frame header');
    const payload = new DataView(u8.buffer, u8.byteOffset + o + 8, 4).getUint32(0, true);
    if (payload > MAX_PAYLOAD) fail('LIMIT', o + 8, `payload of ${payload} bytes over the limit`);
    if (u8.length - o - HEADER_SIZE < payload) fail('TRUNCATED', o, 'the stream ends inside a frame');
    yield u8.subarray(o, o + HEADER_SIZE + payload);
    o += HEADER_SIZE + payload;
  }
}

// The checksum of a set of events that the tests compare with the CLI's output: a 32-bit
// mix of (start_ns, dur_ns, the name's FNV-1a hash) per event, summed modulo 2^32, so that it
// does not depend on the order the events came in. tests/browser/viewer_test.mjs computes
// the same from `trove cat --json`.
/**
 * @param {ArrayLike<number>} bytes
 * @returns {number}
 */
export function fnv1a(bytes) {
  let h = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) h = Math.imul(h ^ bytes[i], 0x01000193);
  return h >>> 0;
}

/**
 * @param {number} sLo @param {number} sHi start_ns's halves
 * @param {number} dLo @param {number} dHi dur_ns's halves
 * @param {number} nameHash fnv1a of the name's UTF-8
 * @returns {number}
 */
export function eventMix(sLo, sHi, dLo, dHi, nameHash) {
  let h = Math.imul(sLo ^ 0x9e3779b9, 0x85ebca6b);
  h ^= sHi; h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  h ^= dLo; h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h ^= dHi; h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  h ^= nameHash; h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h ^= h >>> 13;
  return h >>> 0;
}
