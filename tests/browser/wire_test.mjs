// wire_test.mjs: the viewer's wire decoders (web/wire.js) against the golden vectors of
// tests/vectors/ (docs/formats/wire.md), byte for byte, and against bad frames: every
// prefix of every vector, every byte of a frame changed, and the rules one by one. A bad
// frame must throw a WireError (never another exception, never a batch).
// And streams trove wrote, event by event against `trove cat --json`.
// usage: node wire_test.mjs SOURCE_DIR [WIRE JSONL]...
import { readFileSync } from 'node:fs';

const src = process.argv[2];
// The browser's DecompressionStream takes 'deflate-raw'; node took it from 21.2 on. On an
// older node (Debian 12's is 18) the same stream is zlib's raw inflater behind the web
// stream interface, which is what the page's decoder uses.
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

// web/wire.js is an ES module without imports; loaded from its text, so that a node that
// does not guess a .js file's module type (Debian 12's node 18) takes it too.
const W = await import('data:text/javascript;base64,' +
                       readFileSync(`${src}/web/wire.js`).toString('base64'));
let pass = 0, failed = 0;
function check(cond, what) {
  if (cond) pass++;
  else { failed++; console.error(`FAIL: ${what}`); }
}
const vec = (n) => new Uint8Array(readFileSync(`${src}/tests/vectors/${n}`));

// The batch of docs/formats/wire.md.
const want = [
  [1000000000000n, 5000n, 100, 101, 0, 0, 0, 0],
  [1000000002500n, 1200n, 100, 101, 0, 1, 0, 1],
  [1000000004000n, 0n, 100, 102, 1, 0, 0, 2],
  [1000000003000n, 300n, 200, 201, 0, 0, 0, 300],
  [1000000010000n, 70000n, 100, 101, 0, 0, 3, 0],
];
const u64 = (lo, hi) => (BigInt(hi) << 32n) | BigInt(lo);
function sameBatch(b, what) {
  check(b.count === want.length, `${what}: count ${b.count}`);
  for (let i = 0; i < want.length; i++) {
    const w = want[i];
    const got = [u64(b.startLo[i], b.startHi[i]), u64(b.durLo[i], b.durHi[i]), b.pid[i], b.tid[i],
      b.kind[i], b.depth[i], b.extra[i], b.name[i]];
    check(JSON.stringify(got.map(String)) === JSON.stringify(w.map(String)), `${what}: event ${i}: ${got} != ${w}`);
  }
}
async function throwsWire(u8, what) {
  try {
    await W.decodeFrame(u8);
  } catch (e) {
    check(e instanceof W.WireError, `${what}: threw ${e && e.stack}`);
    return e;
  }
  check(false, `${what}: decoded`);
  return null;
}
// Anything at all: a WireError or a result, never another exception.
async function noCrash(u8, what) {
  try {
    await W.decodeFrame(u8);
    pass++;
  } catch (e) {
    check(e instanceof W.WireError, `${what}: threw ${e && e.stack}`);
  }
}

const raw = vec('wire_raw.bin'), packed = vec('wire_packed.bin'), deflate = vec('wire_deflate.bin');
const names = vec('wire_names.bin'), names2 = vec('wire_names_v2.bin');
check(raw.length === 176 && packed.length === 75 && deflate.length === 74 && names.length === 63 && names2.length === 86, 'vector sizes');
sameBatch((await W.decodeFrame(raw)).events, 'raw');
{ // the DataView path too: the frame one byte into its buffer, so its payload is not aligned
  const odd = new Uint8Array(raw.length + 1);
  odd.set(raw, 1);
  sameBatch((await W.decodeFrame(odd.subarray(1))).events, 'raw, unaligned');
}
sameBatch((await W.decodeFrame(packed)).events, 'packed');
sameBatch((await W.decodeFrame(deflate)).events, 'deflate');
// The inflated deflate payload is the packed vector's payload byte for byte.
{
  const h = W.parseHeader(deflate);
  const inflated = await W.inflateRaw(deflate.subarray(16), h.rawLen);
  check(Buffer.compare(Buffer.from(inflated), Buffer.from(packed.subarray(16))) === 0, 'deflate inflates to the packed payload');
}
{
  const n = (await W.decodeFrame(names)).names;
  const flat = n.map((e) => [e.type, e.a, e.b, e.text ?? e.value].join(':'));
  check(JSON.stringify(flat) === JSON.stringify(['1:0:0:frame', '1:1:0:layout', '1:2:0:mark', '1:300:0:gc é', '2:100:101:main', '3:100:0:app']), `names v1: ${flat}`);
  const n2 = (await W.decodeFrame(names2)).names;
  const flat2 = n2.slice(6).map((e) => [e.type, e.a, e.b, e.value].join(':'));
  check(n2.length === 10 && JSON.stringify(flat2) === JSON.stringify(['4:100:0:-1', '5:100:101:3', '5:100:102:-2147483648', '4:200:0:2147483647']), `names v2: ${flat2}`);
  // A version 1 header on the v2 payload: types 4 and 5 are unknown there.
  const v1 = names2.slice(); v1[3] = 1;
  check((await throwsWire(v1, 'sort index in a v1 frame'))?.code === 'CORRUPT', 'v1 refuses type 4');
}
// A stream of frames back to back splits into them.
{
  const all = new Uint8Array([...names, ...packed, ...raw]);
  const parts = [...W.splitStream(all)];
  check(parts.length === 3 && parts[2].length === 176, 'splitStream');
}
// Every prefix of every frame is an error (TRUNCATED mostly), and every frame with a byte
// after its payload.
for (const [name, v] of [['raw', raw], ['packed', packed], ['deflate', deflate], ['names', names], ['names2', names2]]) {
  for (let n = 0; n < v.length; n++) await throwsWire(v.subarray(0, n), `${name} cut at ${n}`);
  await throwsWire(new Uint8Array([...v, 0]), `${name} with a byte after it`);
  // every byte changed to every value that matters: no exception but WireError
  for (let i = 0; i < v.length; i++)
    for (const x of [0, 1, 0x7f, 0x80, 0xff, v[i] ^ 1]) {
      const c = v.slice(); c[i] = x;
      await noCrash(c, `${name} byte ${i} = ${x}`);
    }
}
// The rules one by one, on the packed vector (payload at 16).
const mut = (v, f) => { const c = v.slice(); f(c); return c; };
const setU32 = (c, o, x) => new DataView(c.buffer).setUint32(o, x, true);
const code = async (u8, what) => (await throwsWire(u8, what))?.code;
check(await code(mut(packed, (c) => { c[0] = 0x55; }), 'magic') === 'MAGIC', 'magic');
check(await code(mut(packed, (c) => { c[2] = 9; }), 'format') === 'FORMAT', 'format');
check(await code(mut(packed, (c) => { c[3] = 2; }), 'version') === 'VERSION', 'version');
check(await code(mut(packed, (c) => setU32(c, 4, 65537)), 'count limit') === 'LIMIT', 'count limit');
check(await code(mut(packed, (c) => setU32(c, 12, 5)), 'raw_len on packed') === 'CORRUPT', 'raw_len on packed');
check(await code(mut(packed, (c) => setU32(c, 4, 1)), 'payload bound') === 'CORRUPT', 'packed bound');
check(await code(mut(packed, (c) => { c[16] = 6; }), 'threads > count') === 'CORRUPT', 'threads > count');
check(await code(mut(packed, (c) => { c[16 + 9] = 3; }), 'thread index') === 'THREAD', 'thread index');
check(await code(mut(raw, (c) => setU32(c, 8, 161)), 'raw size') === 'CORRUPT', 'raw payload size');
check(await code(mut(deflate, (c) => setU32(c, 12, 58)), 'deflate short raw_len') === 'BOMB', 'deflate bomb');
check(await code(mut(deflate, (c) => setU32(c, 12, 60)), 'deflate long raw_len') === 'CORRUPT', 'deflate short output');
check(await code(mut(deflate, (c) => setU32(c, 12, 10000)), 'deflate raw_len past bound') === 'BOMB', 'deflate raw_len bound');
check(await code(mut(deflate, (c) => { c[16] = 0xff; c[17] = 0xff; }), 'deflate garbage') === 'INFLATE', 'inflate error');
// an 11-byte varint, a 6-byte u32 and a wide 10th byte
{
  const hdr = (fmt, count, len) => { const h = new Uint8Array(16); h.set([0x54, 0x56, fmt, 1]); setU32(h, 4, count); setU32(h, 8, len); return h; };
  const frame = (fmt, count, p) => new Uint8Array([...hdr(fmt, count, p.length), ...p]);
  check(await code(frame(2, 1, [1, 1, 1, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02, 0, 0, 0, 0, 0]), 'wide 10th byte') === 'VARINT', '10th byte');
  check(await code(frame(2, 1, [1, 0x80, 0x80, 0x80, 0x80, 0x10, 1, 0, 0, 0, 0, 0, 0, 0]), 'wide u32') === 'VARINT', '5th byte');
  // the largest values decode exactly: start 2^64-1 (zigzag of -1 is 1), dur 2^64-1, name 2^32-1
  const b = (await W.decodeFrame(frame(2, 1, [1, 0xff, 0xff, 0xff, 0xff, 0x0f, 0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0x01,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0xff, 0xff, 0xff, 0xff, 0x0f, 5, 255, 7]))).events;
  check(u64(b.startLo[0], b.startHi[0]) === (1n << 64n) - 1n && u64(b.durLo[0], b.durHi[0]) === (1n << 64n) - 1n &&
    b.name[0] === 0xffffffff && b.pid[0] === 0xffffffff && b.tid[0] === 0xffffffff && b.kind[0] === 5 && b.depth[0] === 255 && b.extra[0] === 7, 'widest values');
  // names: a name past the end, bad UTF-8, an unknown type
  check(await code(frame(4, 1, [1, 0, 9, 0x61]), 'name overrun') === 'OVERRUN', 'names overrun');
  check(await code(frame(4, 1, [1, 0, 2, 0xc3, 0x28]), 'bad utf8') === 'CORRUPT', 'names utf-8');
  check(await code(frame(4, 1, [6, 0, 0]), 'type 6') === 'CORRUPT', 'names type');
}
// The attrs frame (format 7): the golden table of docs/formats/attrs.md, every prefix, every
// byte changed, and its rules.
{
  const av = vec('wire_attrs.bin');
  check(av.length === 105, 'attrs vector size');
  const r = await W.decodeFrame(av);
  const flat = r.attrs.map((x) => [x.event, x.scope, x.key, x.type, String(x.value)].join('|'));
  check(JSON.stringify(flat) === JSON.stringify(['0|0|url|3|https://example.org/', '0|0|size|1|-5', '2|0|ratio|2|0.5',
    '2|0|ok|4|true', '7|0|data|5|{"k":[1,2]}', '7|0|url|3|https://example.org/']), `attrs rows: ${flat.join(', ')}`);
  check(typeof r.attrs[1].value === 'bigint', 'an int is a BigInt');
  for (let n = 0; n < av.length; n++) await throwsWire(av.subarray(0, n), `attrs cut at ${n}`);
  await throwsWire(new Uint8Array([...av, 0]), 'attrs with a byte after it');
  for (let i = 0; i < av.length; i++)
    for (const x of [0, 1, 0x7f, 0x80, 0xff, av[i] ^ 1]) {
      const c = av.slice(); c[i] = x;
      await noCrash(c, `attrs byte ${i} = ${x}`);
    }
  check(await code(mut(av, (c) => setU32(c, 12, 1)), 'attrs raw_len') === 'CORRUPT', 'attrs raw_len');
  check(await code(mut(av, (c) => setU32(c, 4, 1048577)), 'attrs rows limit') === 'LIMIT', 'attrs rows limit');
  check(await code(mut(av, (c) => setU32(c, 4, 23)), 'attrs rows room') === 'CORRUPT', 'attrs rows room');
  check(await code(mut(av, (c) => { c[16] = 0x7f; }), 'attrs strings') === 'CORRUPT', 'attrs strings past the payload');
  check(await code(mut(av, (c) => { c[17 + 56 + 6] = 9; }), 'attrs key') === 'CORRUPT', 'attrs key past the strings');
  // a trailing byte inside the payload
  const t = new Uint8Array([...av, 0]); setU32(t, 8, av.length - 16 + 1);
  check(await code(t, 'attrs trailing') === 'CORRUPT', 'attrs bytes after the last value');
}
// Ints written as each key's differences (test_attrs.c's test_deltas): taken back exactly,
// the extremes of an i64 included.
{
  const rows = (await W.decodeFrame(vec('wire_attrs_deltas.bin'))).attrs;
  let seed = 5n, ok = rows.length === 8003;
  const M = (1n << 64n) - 1n;
  for (let i = 0; ok && i < 4000; i++) {
    seed = (seed * 6364136223846793005n + 1442695040888963407n) & M;
    const tts = rows[2 * i], line = rows[2 * i + 1];
    ok = tts.event === i && tts.key === 'tts' && tts.value === 1000000000n + BigInt(i) * 37n + (seed >> 60n) &&
      line.key === 'line' && line.value === (seed >> 52n);
  }
  ok = ok && rows[8000].value === -(1n << 63n) && rows[8001].value === (1n << 63n) - 1n && rows[8002].value === -1n;
  check(ok, 'attrs differences taken back exactly');
}
// Streams trove wrote (usage: ... WIRE JSONL ...): every event decodes to what `trove cat
// --json` prints for it, field by field, whichever path a varint took.
const kinds = ['zone', 'instant', 'async-instant', 'frame', 'lock', 'counter'];
for (let a = 3; a + 1 < process.argv.length; a += 2) {
  const lines = readFileSync(process.argv[a + 1], 'utf8').split('\n').filter(Boolean);
  let k = 0, bad = 0;
  for (const f of W.splitStream(new Uint8Array(readFileSync(process.argv[a])))) {
    const r = await W.decodeFrame(f);
    if (!r.events) continue;
    const b = r.events;
    for (let i = 0; i < b.count; i++, k++) {
      const line = lines[k] || '', j = JSON.parse(line || '{}');
      const start = /"start_ns":(\d+)/.exec(line), dur = /"dur_ns":(\d+)/.exec(line);
      if (!start || u64(b.startLo[i], b.startHi[i]) !== BigInt(start[1]) || u64(b.durLo[i], b.durHi[i]) !== BigInt(dur[1]) ||
        b.pid[i] !== j.pid || b.tid[i] !== j.tid || kinds[b.kind[i]] !== j.kind || b.depth[i] !== j.depth ||
        b.extra[i] !== j.extra || b.name[i] !== j.name_id) {
        if (bad++ < 3) console.error(`${process.argv[a]}: event ${k}: ${line}`);
      }
    }
  }
  check(bad === 0 && k === lines.length && k > 0, `${process.argv[a]}: ${k} events decoded, ${lines.length} printed by trove cat, ${bad} differ`);
}
console.log(`${pass} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
