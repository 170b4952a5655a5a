#!/usr/bin/env node
// duckdb_tool.mjs: DuckDB (through @duckdb/node-api, pinned in package-lock.json) as a Parquet
// reader and writer independent of trove, for the interop tests and the parquet benchmark.
//
//   node tools/duckdb/duckdb_tool.mjs info FILE.parquet
//   node tools/duckdb/duckdb_tool.mjs copy IN.parquet OUT.parquet [--compression C] [--row-group-size N]
//                                         [--select LIST] [--where COND]
//   node tools/duckdb/duckdb_tool.mjs gen OUT.parquet N [--compression C] [--row-group-size N]
//   node tools/duckdb/duckdb_tool.mjs bench IN.parquet [--repeat R] [--threads N]
//   node tools/duckdb/duckdb_tool.mjs query SQL
//
// Each command prints one JSON object (one line) on stdout; an error prints one line
// "duckdb_tool: ..." on stderr and exits with status 1. C is uncompressed, snappy or zstd.
// tools/duckdb/duckdb_tool.md describes the output of each command.
//
// The checksum `info` reports for each column, so that a C or Python test can compute the same:
//
//   checksum = FNV-1a 64-bit over the concatenation, for each value of the column in file row
//              order (row 0 first), of the value's canonical text followed by one 0x0a byte;
//              printed as 16 lowercase hex digits.
//   FNV-1a 64: h = 0xcbf29ce484222325; for each byte b: h = h XOR b; h = h * 0x100000001b3 mod 2^64.
//   canonical text:
//     integers (TINYINT .. HUGEINT, UTINYINT .. UHUGEINT): the decimal digits, with a leading '-'
//       when negative, no '+', no leading zeros ("0" for zero)
//     VARCHAR: the string's UTF-8 bytes, unchanged
//     BLOB: the raw bytes
//     BOOLEAN: "true" or "false"
//     NULL (any type): the single byte 0xff (never in UTF-8 text)
//     anything else (floats, decimals, dates, nested types): DuckDB's CAST(value AS VARCHAR),
//       which is not meant to be reproduced outside DuckDB.
//   A column with no rows has the checksum cbf29ce484222325.
//   Example: an INTEGER column with the values 1, -2, NULL hashes the bytes
//   "1\n-2\n\xff\n".

import { DuckDBInstance } from '@duckdb/node-api';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const USAGE = 'usage: duckdb_tool.mjs info FILE | copy IN OUT [--compression C] [--row-group-size N] [--select LIST] [--where COND] | ' +
    'gen OUT N [--compression C] [--row-group-size N] | bench IN [--repeat R] [--threads N] | ' +
    'query SQL';
const COMPRESSIONS = ['uncompressed', 'snappy', 'zstd'];
const INTEGER_TYPES = new Set(['TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT', 'HUGEINT',
    'UTINYINT', 'USMALLINT', 'UINTEGER', 'UBIGINT', 'UHUGEINT']);

class UsageError extends Error {}

function fail(message) {
    process.stderr.write('duckdb_tool: ' + String(message).replace(/\s*\n\s*/g, ' ').trim() + '\n');
    process.exit(1);
}

// SQL literals and identifiers (file paths cannot be bound as parameters in COPY).
const lit = (s) => "'" + String(s).replace(/'/g, "''") + "'";
const ident = (s) => '"' + String(s).replace(/"/g, '""') + '"';

// Parse the arguments after the command: positional ones, then --name value options.
function parseArgs(args, npos, allowed) {
    const pos = [];
    const opts = {};
    for (let i = 0; i < args.length; i++) {
        const a = args[i];
        if (a.startsWith('--')) {
            const name = a.slice(2);
            if (!allowed.includes(name)) throw new UsageError('unknown option ' + a);
            if (i + 1 >= args.length) throw new UsageError(a + ' needs a value');
            opts[name] = args[++i];
        } else {
            pos.push(a);
        }
    }
    if (pos.length !== npos) throw new UsageError(USAGE);
    return { pos, opts };
}

function positiveInt(name, s) {
    if (!/^[0-9]+$/.test(s) || Number(s) < 1 || !Number.isSafeInteger(Number(s)))
        throw new UsageError(`--${name} wants a positive integer, not '${s}'`);
    return Number(s);
}

function compressionOpt(opts) {
    const c = (opts.compression ?? 'zstd').toLowerCase();
    if (!COMPRESSIONS.includes(c))
        throw new UsageError(`--compression wants one of ${COMPRESSIONS.join(', ')}, not '${opts.compression}'`);
    return c;
}

function copyOptions(opts) {
    let s = 'FORMAT parquet, COMPRESSION ' + compressionOpt(opts);
    if (opts['row-group-size'] !== undefined)
        s += ', ROW_GROUP_SIZE ' + positiveInt('row-group-size', opts['row-group-size']);
    return s;
}

function mustExist(path) {
    try {
        if (!statSync(path).isFile()) throw new Error();
    } catch {
        throw new UsageError(`${path}: no such file`);
    }
}

async function all(conn, sql) {
    return (await conn.runAndReadAll(sql)).getRowObjectsJS();
}

// ---- FNV-1a 64 in two 32-bit halves (BigInt per byte would be far slower) ----

class Fnv64 {
    constructor() {
        this.hi = 0xcbf29ce4;
        this.lo = 0x84222325;
    }
    byte(b) {
        // h ^= b; h *= 0x100000001b3 = 2^40 + 0x1b3 (mod 2^64).
        const lo = (this.lo ^ b) >>> 0;
        const t = lo * 0x1b3; // < 2^41: exact in a double
        this.lo = t >>> 0;
        this.hi = (Math.imul(this.hi, 0x1b3) + Math.floor(t / 4294967296) + (lo << 8)) >>> 0;
    }
    // The UTF-8 bytes of a JS string.
    string(s) {
        for (let i = 0; i < s.length; i++) {
            let c = s.charCodeAt(i);
            if (c < 0x80) {
                this.byte(c);
            } else if (c < 0x800) {
                this.byte(0xc0 | (c >> 6));
                this.byte(0x80 | (c & 0x3f));
            } else {
                if (c >= 0xd800 && c < 0xdc00 && i + 1 < s.length) {
                    const d = s.charCodeAt(i + 1);
                    if (d >= 0xdc00 && d < 0xe000) {
                        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
                        i++;
                        this.byte(0xf0 | (c >> 18));
                        this.byte(0x80 | ((c >> 12) & 0x3f));
                        this.byte(0x80 | ((c >> 6) & 0x3f));
                        this.byte(0x80 | (c & 0x3f));
                        continue;
                    }
                }
                this.byte(0xe0 | (c >> 12));
                this.byte(0x80 | ((c >> 6) & 0x3f));
                this.byte(0x80 | (c & 0x3f));
            }
        }
    }
    bytes(u8) {
        for (let i = 0; i < u8.length; i++) this.byte(u8[i]);
    }
    hex() {
        return this.hi.toString(16).padStart(8, '0') + this.lo.toString(16).padStart(8, '0');
    }
}

// ---- info ----

async function describe(conn, file) {
    return (await all(conn, `DESCRIBE SELECT * FROM read_parquet(${lit(file)})`))
        .map((r) => ({ name: r.column_name, type: r.column_type }));
}

// Per top-level column: distinct encodings and compressions over every column chunk of every
// row group. Leaf columns come in schema order; a top-level column owns the leaves whose path
// is its name or starts with "name, ".
async function chunkMetadata(conn, file, cols) {
    const rows = await all(conn, `SELECT column_id, path_in_schema, encodings, compression
        FROM parquet_metadata(${lit(file)}) ORDER BY column_id, row_group_id`);
    const leafOwner = new Map();
    let c = 0;
    for (const r of rows) {
        const id = Number(r.column_id);
        if (leafOwner.has(id)) continue;
        const p = r.path_in_schema;
        const owns = (k) => k < cols.length && (p === cols[k].name || p.startsWith(cols[k].name + ', '));
        while (c < cols.length && !owns(c)) c++;
        if (c >= cols.length) throw new Error(`parquet_metadata leaf '${p}' matches no column`);
        leafOwner.set(id, c);
    }
    const meta = cols.map(() => ({ encodings: [], compression: [] }));
    const add = (list, v) => { if (v != null && v !== '' && !list.includes(v)) list.push(v); };
    for (const r of rows) {
        const m = meta[leafOwner.get(Number(r.column_id))];
        for (const e of String(r.encodings ?? '').split(',')) add(m.encodings, e.trim());
        add(m.compression, r.compression);
    }
    return meta;
}

// Checksums of every column in one streamed pass. file_row_number proves the scan kept the
// file's row order; if it did not, the pass is redone with ORDER BY file_row_number.
async function checksums(conn, file, cols) {
    const exprs = cols.map((c) => {
        const id = ident(c.name);
        if (c.type === 'VARCHAR' || c.type === 'BLOB') return id;
        if (c.type === 'BOOLEAN') return `CASE WHEN ${id} THEN 'true' WHEN NOT ${id} THEN 'false' END`;
        return `CAST(${id} AS VARCHAR)`;
    });
    const base = `SELECT file_row_number${exprs.map((e) => ', ' + e).join('')}
        FROM read_parquet(${lit(file)}, file_row_number = true)`;
    for (const sql of [base, base + ' ORDER BY file_row_number']) {
        const hashes = cols.map(() => new Fnv64());
        const result = await conn.stream(sql);
        let next = 0;
        let ordered = true;
        for (let chunk; ordered && (chunk = await result.fetchChunk()) && chunk.rowCount > 0;) {
            const n = chunk.rowCount;
            const rowNumbers = chunk.getColumnValues(0);
            for (let j = 0; j < n; j++) {
                if (Number(rowNumbers[j]) !== next + j) { ordered = false; break; }
            }
            if (!ordered) break;
            next += n;
            for (let k = 0; k < cols.length; k++) {
                const h = hashes[k];
                const values = chunk.getColumnValues(k + 1);
                for (let j = 0; j < n; j++) {
                    const v = values[j];
                    if (v === null) h.byte(0xff);
                    else if (typeof v === 'string') h.string(v);
                    else if (v.bytes instanceof Uint8Array) h.bytes(v.bytes);
                    else h.string(String(v));
                    h.byte(0x0a);
                }
            }
        }
        if (ordered) return hashes.map((h) => h.hex());
    }
    throw new Error('could not read the rows in file order');
}

async function cmdInfo(conn, args) {
    const { pos } = parseArgs(args, 1, []);
    const file = pos[0];
    mustExist(file);
    const cols = await describe(conn, file);
    const nested = (t) => /[\[(]|^MAP|^UNION/.test(t) && !/^DECIMAL/.test(t);
    const aggs = ['count(*) AS "rows"'];
    cols.forEach((c, k) => {
        const id = ident(c.name);
        const sum = INTEGER_TYPES.has(c.type)
            ? (c.type === 'UHUGEINT' ? `CAST(sum(${id}) AS VARCHAR)` : `CAST(sum(CAST(${id} AS HUGEINT)) AS VARCHAR)`)
            : 'NULL';
        aggs.push(`${sum} AS s${k}`);
        aggs.push(nested(c.type) ? `NULL AS lo${k}` : `CAST(min(${id}) AS VARCHAR) AS lo${k}`);
        aggs.push(nested(c.type) ? `NULL AS hi${k}` : `CAST(max(${id}) AS VARCHAR) AS hi${k}`);
    });
    const [agg] = await all(conn, `SELECT ${aggs.join(', ')} FROM read_parquet(${lit(file)})`);
    const meta = await chunkMetadata(conn, file, cols);
    const sums = await checksums(conn, file, cols);
    return {
        rows: Number(agg.rows),
        columns: cols.map((c, k) => ({
            name: c.name,
            type: c.type,
            encodings: meta[k].encodings,
            compression: meta[k].compression.length ? meta[k].compression.join(',') : null,
            sum: agg['s' + k] ?? null,
            min: agg['lo' + k] ?? null,
            max: agg['hi' + k] ?? null,
            checksum: sums[k],
        })),
    };
}

// ---- copy, gen ----

async function rowCount(conn, file) {
    const [r] = await all(conn, `SELECT count(*) AS n FROM read_parquet(${lit(file)})`);
    return Number(r.n);
}

async function cmdCopy(conn, args) {
    const { pos, opts } = parseArgs(args, 2, ['compression', 'row-group-size', 'select', 'where']);
    const [input, output] = pos;
    mustExist(input);
    const options = copyOptions(opts);
    // --select and --where: SQL, as a user editing the table in DuckDB would write it.
    const list = opts.select ?? '*';
    const where = opts.where !== undefined ? ` WHERE ${opts.where}` : '';
    await conn.run(`COPY (SELECT ${list} FROM read_parquet(${lit(input)})${where}) TO ${lit(output)} (${options})`);
    return { rows: await rowCount(conn, output) };
}

// The columns of `gen` (duckdb_tool.md lists them with the same formulas), for i = 0 .. N-1
// in order.
const GEN_COLUMNS = [
    'range AS id',                                                          // BIGINT: i
    'CAST((range * 7919) % 1000 - 500 AS INTEGER) AS small',                // INTEGER
    '(range * 2654435761) % 4294967296 - 2147483648 AS big',                // BIGINT
    'CAST(CASE WHEN range % 7 = 3 THEN NULL ELSE range % 100 END AS INTEGER) AS maybe', // INTEGER, NULLs
    "'k' || (range % 13) AS name",                                          // VARCHAR, 13 distinct
    "'r' || range || (['', 'é', '€', '😀'])[range % 4 + 1] AS text",        // VARCHAR, non-ASCII
    'range % 2 = 0 AS flag',                                                // BOOLEAN
    'range / 4 AS ratio',                                                   // DOUBLE: i / 4
];

async function cmdGen(conn, args) {
    const { pos, opts } = parseArgs(args, 2, ['compression', 'row-group-size']);
    const [output, n] = pos;
    if (!/^[0-9]+$/.test(n) || !Number.isSafeInteger(Number(n))) throw new UsageError(`N wants a row count, not '${n}'`);
    const options = copyOptions(opts);
    await conn.run(`COPY (SELECT ${GEN_COLUMNS.join(', ')} FROM range(${Number(n)}) ORDER BY range)
        TO ${lit(output)} (${options})`);
    return { rows: await rowCount(conn, output) };
}

// ---- bench ----

function median(xs) {
    const s = [...xs].sort((a, b) => a - b);
    const m = s.length >> 1;
    return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

async function timed(fn) {
    const t0 = process.hrtime.bigint();
    await fn();
    return Number(process.hrtime.bigint() - t0) / 1e9;
}

async function cmdBench(conn, args) {
    const { pos, opts } = parseArgs(args, 1, ['repeat', 'threads']);
    const input = pos[0];
    mustExist(input);
    const repeat = opts.repeat === undefined ? 5 : positiveInt('repeat', opts.repeat);
    if (opts.threads !== undefined) await conn.run(`SET threads = ${positiveInt('threads', opts.threads)}`);
    await conn.run(`CREATE TABLE t AS SELECT * FROM read_parquet(${lit(input)})`);
    const [info] = await all(conn, `SELECT version() AS v, current_setting('threads') AS threads`);
    const dir = mkdtempSync(join(tmpdir(), 'trove-duckdb-bench-'));
    try {
        const out = {};
        for (const [key, options] of [['duckdb_default', 'FORMAT parquet'],
                                      ['duckdb_uncompressed', 'FORMAT parquet, COMPRESSION uncompressed']]) {
            const file = join(dir, key + '.parquet');
            const writes = [];
            const reads = [];
            for (let r = 0; r < repeat; r++) {
                rmSync(file, { force: true });
                writes.push(await timed(() => conn.run(`COPY t TO ${lit(file)} (${options})`)));
            }
            // Every value of every column is decoded and hashed.
            const read = `SELECT count(*), sum(hash(COLUMNS(*))) FROM read_parquet(${lit(file)})`;
            for (let r = 0; r < repeat; r++) reads.push(await timed(() => conn.runAndReadAll(read)));
            out[key] = { bytes: statSync(file).size, write_s: median(writes), read_s: median(reads) };
        }
        out.duckdb_version = String(info.v);
        out.threads = Number(info.threads);
        return out;
    } finally {
        rmSync(dir, { recursive: true, force: true });
    }
}

// query SQL: its rows, each value as text (integers as their digits, NULL as null), so that a
// test compares them with its own pass over the data. Relative paths are the caller's cwd's.
async function cmdQuery(conn, args) {
    const { pos } = parseArgs(args, 1, []);
    const reader = await conn.runAndReadAll(pos[0]);
    const rows = reader.getRowsJS().map((r) => r.map((v) => (v === null ? null : String(v))));
    return { columns: reader.columnNames(), rows };
}

// ---- main ----

const COMMANDS = { info: cmdInfo, copy: cmdCopy, gen: cmdGen, bench: cmdBench, query: cmdQuery };

async function main() {
    const [cmd, ...args] = process.argv.slice(2);
    if (cmd === '--help' || cmd === '-h') {
        process.stdout.write(USAGE + '\n');
        return;
    }
    const fn = COMMANDS[cmd];
    if (!fn) throw new UsageError(USAGE);
    const instance = await DuckDBInstance.create(':memory:');
    const conn = await instance.connect();
    await conn.run('SET preserve_insertion_order = true');
    const result = await fn(conn, args);
    process.stdout.write(JSON.stringify(result) + '\n');
    conn.closeSync();
    instance.closeSync?.();
}

main().catch((e) => fail(e instanceof Error ? e.message : e));
