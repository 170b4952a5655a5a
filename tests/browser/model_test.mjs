// model_test.mjs: the live ring's lanes (web/model.js) put in start order, in node: a lane
// fed in batches with some events out of order, sorted after each batch as the page does
// (ensureSorted sorts what came since and merges it), holds exactly what one stable sort of
// everything it was given holds — the same starts, durations and names in the same order,
// ties in the order they came — and dropping the events before a time keeps the rest.
// usage: node model_test.mjs SOURCE_DIR
import { readFileSync } from 'node:fs';

const src = process.argv[2];
const wireUrl = 'data:text/javascript;base64,' + readFileSync(`${src}/web/wire.js`).toString('base64');
const M = await import('data:text/javascript;base64,' + Buffer.from(
  readFileSync(`${src}/web/model.js`, 'utf8').replace("from './wire.js'", `from '${wireUrl}'`)).toString('base64'));

let pass = 0, failed = 0;
function check(cond, what) { if (cond) pass++; else { failed++; console.error(`FAIL: ${what}`); } }
let seed = 12345;
const rand = (n) => { seed = (seed * 1103515245 + 12345) >>> 0; return seed % n; };

for (const [batches, per, spread, ties] of [[1, 1000, 50, false], [40, 500, 2000, false], [60, 300, 10, true], [5, 4000, 100000, true]]) {
  const lane = new M.Lane();
  /** @type {[number, number, number, number][]} start, dur, name, arrival */
  const all = [];
  let t = 1000;
  for (let b = 0; b < batches; b++) {
    for (let i = 0; i < per; i++) {
      t += rand(20);
      // most in order, some reaching back up to `spread` ns; with ties, starts repeat
      const s = ties ? Math.floor(t / 7) * 7 : (rand(5) === 0 ? Math.max(0, t - rand(spread)) : t);
      const x = [s, rand(1000), rand(50), all.length];
      all.push(x);
      lane.push(x[0], x[1], x[2]); // as Model.append does
    }
    lane.ensureSorted();
  }
  const want = [...all].sort((a, b) => a[0] - b[0] || a[3] - b[3]);
  let same = lane.n === want.length;
  for (let i = 0; same && i < want.length; i++)
    same = lane.s[i] === want[i][0] && lane.d[i] === want[i][1] && lane.name[i] === want[i][2];
  check(same, `${batches} batches of ${per}: the lane equals one stable sort of what it was given`);
  const cut = want[want.length >> 1][0], kept = want.filter((x) => x[0] >= cut);
  lane.dropBefore(cut);
  check(lane.n === kept.length && lane.s[0] === kept[0][0] && lane.name[lane.n - 1] === kept[kept.length - 1][2],
    `${batches} batches: dropping before ${cut} keeps the ${kept.length} after it`);
}
console.log(`${pass} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
