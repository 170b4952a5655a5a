// view_test.mjs: the viewer's view frame decoder (web/view.js) in node, against frames a real
// `trove serve` answered (tests/cli/cli_viewer_wire.sh asks for them) and against bad ones.
//   - each frame decoded is what the capture's events say it must hold, worked out here by
//     brute force from `trove cat --json` of the capture: every zone, frame or lock at least
//     2^shift ns long that overlaps the range, whole, with its index; every other event in
//     its track's cell (lane, start >> shift) when that column covers the range, with the
//     count, busy time, dominant name (the longest, the least id on ties) and a counter's
//     least and greatest value; only the tracks asked for; the names when asked;
//   - bad frames are refused with a ViewError, never another exception, never a frame:
//     every prefix of a frame, every byte of a small one changed, and the rules one by one
//     (magic, version, flags, an empty range, a shift over 63, body_len, raw_len over the
//     limit or unlike body_len, counts over the body, a track with nothing, tracks out of
//     order, a cell's lane, a cell past the range, a varint too wide, bytes left over).
// usage: node view_test.mjs SOURCE_DIR CAPTURE_JSONL FRAME[@PID:TID,...]...
import { readFileSync } from 'node:fs';
import { deflateRawSync } from 'node:zlib';

const [src, jsonl, ...frames] = process.argv.slice(2);
// Node before 21.2 has no DecompressionStream('deflate-raw'): zlib's raw inflater behind the
// web stream interface, as wire_test.mjs does.
try {
  new DecompressionStream('deflate-raw');
} catch {
  const zlib = await import('node:zlib');
  const { Duplex } = await import('node:stream');
  const Native = globalThis.DecompressionStream;
  globalThis.DecompressionStream = class {
    constructor(format) {
      if (format !== 'deflate-raw') return new Native(format);
      const { readable, writable } = Duplex.toWeb(zlib.createInflateRaw());
      this.readable = readable;
      this.writable = writable;
    }
  };
}
// web/view.js imports ./wire.js: both loaded from their text (a node that does not guess a
// .js file's module type takes them), the import pointed at wire.js's.
const wireUrl = 'data:text/javascript;base64,' + readFileSync(`${src}/web/wire.js`).toString('base64');
const viewText = readFileSync(`${src}/web/view.js`, 'utf8').replace("from './wire.js'", `from '${wireUrl}'`);
const V = await import('data:text/javascript;base64,' + Buffer.from(viewText).toString('base64'));

let pass = 0, failed = 0;
function check(cond, what) {
  if (cond) pass++;
  else { failed++; console.error(`FAIL: ${what}`); }
}

// ---- the capture's events, as trove cat --json writes them, in the capture's order -------
const KIND = { zone: 0, instant: 1, 'async-instant': 2, frame: 3, lock: 4, counter: 5 };
const events = [];
const nameOf = new Map();
for (const line of readFileSync(jsonl, 'utf8').split('\n')) {
  if (!line) continue;
  const j = JSON.parse(line);
  const start = BigInt(/"start_ns":(\d+)/.exec(line)[1]), dur = BigInt(/"dur_ns":(\d+)/.exec(line)[1]);
  const kind = KIND[j.kind];
  if (kind === undefined) throw new Error(`a kind this test does not know: ${j.kind}`);
  events.push({ index: events.length, start, dur, pid: j.pid, tid: j.tid, kind, depth: j.depth, extra: j.extra, name: j.name_id });
  if (j.name !== undefined) nameOf.set(j.name_id, j.name);
}
const f64 = new DataView(new ArrayBuffer(8));
const asDouble = (bits) => { f64.setBigUint64(0, bits, true); return f64.getFloat64(0, true); };

// What a frame of [from, to) at this shift must hold, for these tracks (null: all).
function expected(from, to, shift, tracks) {
  const sh = BigInt(shift), cLo = from >> sh, cHi = (to - 1n) >> sh, cell = 1n << sh;
  const longs = [], cells = new Map();
  for (const e of events) {
    if (tracks && !tracks.has(`${e.pid}:${e.tid}`)) continue;
    const span = e.kind === 0 || e.kind === 3 || e.kind === 4;
    if (span && e.dur >= cell) {
      if (e.start < to && e.start + e.dur > from) longs.push(e);
      continue;
    }
    const col = e.start >> sh;
    if (col < cLo || col > cHi) continue;
    const lane = span ? e.depth : e.kind === 5 ? 257 : 256;
    const key = `${e.pid}:${e.tid}:${lane}:${col - cLo}`;
    let c = cells.get(key);
    const nd = span ? e.dur : 0n;
    if (!c) { c = { count: 0, busy: 0n, name: e.name, nameDur: nd, min: Infinity, max: -Infinity }; cells.set(key, c); }
    else if (nd > c.nameDur || (nd === c.nameDur && e.name < c.name)) { c.name = e.name; c.nameDur = nd; }
    c.count++;
    if (span) c.busy += e.dur;
    if (e.kind === 5) { const v = asDouble(e.dur); c.min = Math.min(c.min, v); c.max = Math.max(c.max, v); }
  }
  return { longs, cells };
}

// ---- every frame: decoded, and what the events say --------------------------------------
const bodies = [];
for (const arg of frames) {
  const [file, tr] = arg.split('@');
  const tracks = tr ? new Set(tr.split(',')) : null;
  const u8 = new Uint8Array(readFileSync(file));
  bodies.push(u8);
  let f;
  try {
    f = await V.decodeView(u8);
  } catch (e) {
    check(false, `${file}: ${e.stack}`);
    continue;
  }
  const want = expected(f.fromNs, f.toNs, f.shift, tracks);
  check(f.nevents === want.longs.length, `${file}: ${f.nevents} long events, ${want.longs.length} by the events`);
  check(f.ncells === want.cells.size, `${file}: ${f.ncells} cells, ${want.cells.size} by the events`);
  // the long events by index, each exactly
  const byIndex = new Map(want.longs.map((e) => [e.index, e]));
  let same = 0, cellsSame = 0, ordered = true, named = 0;
  for (const t of f.tracks) {
    if (tracks && !tracks.has(`${t.pid}:${t.tid}`)) ordered = false;
    for (let i = t.e0; i < t.e0 + t.ne; i++) {
      const e = byIndex.get(f.evIndex[i]);
      if (e && e.pid === t.pid && e.tid === t.tid && BigInt(f.evStart[i]) + f.fromNs === e.start && BigInt(f.evDur[i]) === e.dur &&
          f.evKind[i] === e.kind && f.evDepth[i] === e.depth && f.evName[i] === e.name) same++;
      if (i > t.e0 && f.evStart[i] < f.evStart[i - 1]) ordered = false;
    }
    let v = t.v0;
    for (let i = t.c0; i < t.c0 + t.nc; i++) {
      const c = want.cells.get(`${t.pid}:${t.tid}:${f.cLane[i]}:${f.cCol[i]}`);
      let ok = c && c.count === f.cCount[i] && Math.fround(Number(c.busy)) === f.cBusy[i] && c.name === f.cName[i] &&
        Math.fround(Number(c.nameDur)) === f.cNameDur[i];
      if (f.cLane[i] === 257) { ok = ok && f.cMin[v] === c.min && f.cMax[v] === c.max; v++; }
      if (ok) cellsSame++;
    }
  }
  check(same === want.longs.length, `${file}: ${same} of ${want.longs.length} long events as the capture has them`);
  check(cellsSame === want.cells.size, `${file}: ${cellsSame} of ${want.cells.size} cells as the capture's events make them`);
  check(ordered, `${file}: tracks asked for, events by start`);
  for (const [id, text] of f.names) if (nameOf.get(id) === text) named++;
  check(f.names.size === 0 || named === f.names.size, `${file}: ${named} of ${f.names.size} names as trove cat names them`);
  console.log(`${file}: shift ${f.shift}, ${f.tracks.length} tracks, ${f.nevents} events, ${f.ncells} cells, ${f.names.size} names, ${u8[12] & 1 ? 'deflated' : 'stored'}`);
}
check(bodies.length >= 2, `${bodies.length} frames`);

// ---- bad frames ------------------------------------------------------------------------------
async function refused(u8, what, code) {
  try {
    await V.decodeView(u8);
  } catch (e) {
    check(e instanceof V.ViewError, `${what}: threw ${e && e.stack}`);
    if (code) check(e.code === code, `${what}: ${e.message} (wanted ${code})`);
    return;
  }
  check(false, `${what}: decoded`);
}
async function noCrash(u8, what) {
  try {
    await V.decodeView(u8);
    pass++;
  } catch (e) {
    check(e instanceof V.ViewError, `${what}: threw ${e && e.stack}`);
  }
}
// A frame made here: the fixed part, then the body as given (stored, or deflated).
function frame(body, { flags = 0, from = 1000n, to = 2000n, shift = 4, tracks = 0, names = 0, nev = 0, ncell = 0, bodyLen, rawLen, version = 1, magic = 'TROVVIEW' } = {}) {
  const stored = flags & 1 ? deflateRawSync(body) : body;
  const b = Buffer.alloc(60 + stored.length);
  b.write(magic, 0, 'latin1');
  b.writeUInt32LE(version, 8); b.writeUInt32LE(flags, 12);
  b.writeBigUInt64LE(from, 16); b.writeBigUInt64LE(to, 24); b.writeUInt32LE(shift, 32);
  b.writeUInt32LE(tracks, 36); b.writeUInt32LE(names, 40); b.writeUInt32LE(nev, 44); b.writeUInt32LE(ncell, 48);
  b.writeUInt32LE(bodyLen ?? stored.length, 52); b.writeUInt32LE(rawLen ?? body.length, 56);
  Buffer.from(stored).copy(b, 60);
  return new Uint8Array(b.buffer, b.byteOffset, b.length);
}
// one track (pid 1, tid 2) with one event (start 1000, dur 32, zone, depth 0, name 7, index 5)
// and one cell (lane 0, col 0, count 3, busy 10, name 7, name_dur 4): the frame decodes
const good = [1, 2, 1, 1, 0, 32, 0, 0, 0, 7, 5, 0, 0, 2, 10, 7, 4];
{
  const f = await V.decodeView(frame(Buffer.from(good), { tracks: 1, nev: 1, ncell: 1 }));
  check(f.nevents === 1 && f.evStart[0] === 0 && f.evDur[0] === 32 && f.evIndex[0] === 5 && f.ncells === 1 && f.cCount[0] === 3 && f.cBusy[0] === 10,
    'a frame made here decodes');
  const z = await V.decodeView(frame(Buffer.from(good), { flags: 1, tracks: 1, nev: 1, ncell: 1 }));
  check(z.nevents === 1 && z.ncells === 1 && z.cName[0] === 7, 'deflated, too');
}
const G = { tracks: 1, nev: 1, ncell: 1 };
await refused(frame(Buffer.from(good), { ...G, magic: 'TROVVIEX' }), 'bad magic', 'MAGIC');
await refused(frame(Buffer.from(good), { ...G, version: 2 }), 'version 2', 'VERSION');
await refused(frame(Buffer.from(good), { ...G, flags: 2 }), 'flags 2', 'CORRUPT');
await refused(frame(Buffer.from(good), { ...G, to: 1000n }), 'an empty range', 'CORRUPT');
await refused(frame(Buffer.from(good), { ...G, shift: 64 }), 'a shift over 63', 'CORRUPT');
await refused(frame(Buffer.from(good), { ...G, bodyLen: good.length + 1 }), 'body_len past the frame', 'CORRUPT');
await refused(frame(Buffer.from(good), { ...G, rawLen: good.length + 1 }), 'raw_len unlike body_len, stored', 'LIMIT');
await refused(frame(Buffer.from(good), { ...G, flags: 1, rawLen: 64 * 1024 * 1024 + 1 }), 'raw_len over 64 MiB', 'LIMIT');
await refused(frame(Buffer.from(good), { ...G, flags: 1, rawLen: good.length + 1 }), 'inflates to less than raw_len', 'CORRUPT');
await refused(frame(Buffer.from(good), { ...G, flags: 1, rawLen: good.length - 1 }), 'inflates past raw_len', 'CORRUPT');
{
  const bad = frame(Buffer.from(good), { ...G, flags: 1 });
  bad[60] = 0xff; bad[61] = 0xff; bad[62] = 0xff;
  await refused(bad, 'a body that is not deflate');
}
await refused(frame(Buffer.from(good), { ...G, ncell: 3 }), 'cells over the body', 'CORRUPT');
await refused(frame(Buffer.from(good), { ...G, nev: 3 }), 'events over the body', 'CORRUPT');
await refused(frame(Buffer.from(good), { ...G, tracks: 5 }), 'tracks over the body', 'CORRUPT');
await refused(frame(Buffer.from(good), { ...G, names: 9 }), 'names over the body', 'CORRUPT');
await refused(frame(Buffer.from(good), { ...G, ncell: 2 }), 'the tracks hold fewer cells than the header', 'CORRUPT');
await refused(frame(Buffer.from([...good, 0]), G), 'a byte left over', 'CORRUPT');
await refused(frame(Buffer.from([1, 2, 0, 0]), { tracks: 1 }), 'a track with nothing', 'CORRUPT');
await refused(frame(Buffer.from([1, 2, 0, 1, 0, 0, 0, 0, 0, 0, 1, 2, 0, 1, 0, 0, 0, 0, 0, 0]), { tracks: 2, ncell: 2 }), 'tracks out of order', 'CORRUPT');
await refused(frame(Buffer.from([1, 2, 0, 1, 0x82, 2, 0, 0, 0, 0, 0]), { tracks: 1, ncell: 1 }), 'a cell of lane 258', 'CORRUPT');
await refused(frame(Buffer.from([1, 2, 0, 1, 0, 63, 0, 0, 0, 0]), { tracks: 1, ncell: 1, from: 1000n, to: 2000n, shift: 4 }), 'a cell past the range', 'CORRUPT');
await refused(frame(Buffer.from([1, 2, 0, 1, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0, 0, 0]), { tracks: 1, ncell: 1 }), 'a count past 64 bits', 'VARINT');
await refused(frame(Buffer.from([0xff, 0xff, 0xff, 0xff, 0x1f, 2, 0, 1, 0, 0, 0, 0, 0, 0]), { tracks: 1, ncell: 1 }), 'a pid past 32 bits', 'VARINT');
await refused(frame(Buffer.from([1, 2, 2, 0, 0, 32, 0, 0, 0, 7, 5, 1, 32, 0, 0, 0, 7, 6]), { tracks: 1, nev: 2 }), 'events out of order', 'CORRUPT');
await refused(frame(Buffer.from([5, 0, 3, 0, 3, 0, 0]), { names: 2 }), 'names out of order', 'CORRUPT');
await refused(frame(Buffer.from([3, 9, 0, 0, 0, 0]), { names: 1 }), 'a name past the body', 'CORRUPT');
// every prefix of the frames the service made (the fixed part's length no longer matches)
// and of the body inside a stored one (the counts no longer fit): refused, each
for (const u8 of bodies.slice(0, 3)) {
  for (let n = 0; n < u8.length; n += Math.max(1, Math.floor(u8.length / 300))) await refused(u8.slice(0, n), `a prefix of ${n} bytes`);
}
{
  const small = bodies.reduce((a, b) => (b.length < a.length ? b : a));
  // the body of a stored frame cut short under its own header's counts
  const stored = bodies.find((b) => !(b[12] & 1) && b.length < 20000);
  if (stored) {
    const h = new DataView(stored.buffer, stored.byteOffset, 60), body = stored.slice(60);
    for (let n = 0; n < body.length; n++) {
      const cut = frame(body.slice(0, n), { from: h.getBigUint64(16, true), to: h.getBigUint64(24, true), shift: h.getUint32(32, true),
        tracks: h.getUint32(36, true), names: h.getUint32(40, true), nev: h.getUint32(44, true), ncell: h.getUint32(48, true) });
      await refused(cut, `a body cut at ${n} of ${body.length}`);
    }
  }
  // every byte of the smallest frame changed: a ViewError or a frame, never anything else
  for (let i = 0; i < Math.min(small.length, 4000); i++) {
    const c = small.slice();
    c[i] ^= 0x5a;
    await noCrash(c, `byte ${i} changed`);
  }
}

console.log(`${pass} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
