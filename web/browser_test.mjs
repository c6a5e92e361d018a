// The browser test: serves web/, opens the page in headless Chromium with WebGPU, waits for it
// to finish and checks the results it left in `window.wgpuSplit`, not its text: through
// wgpu-split compiled to wasm, and through the JavaScript driver. Fails on any output that
// differs from the CPU reference, any error, a sweep that covers less than it
// must, and a page that does not finish in time.
//
//   node web/browser_test.mjs [--sweep=N] [--seed=S] [--bench=0|1] [--timeout=SECONDS]
//                             [--json=FILE] (the page's results, as it left them)
//
// Chromium is driven over the DevTools protocol on a pipe (--remote-debugging-pipe), so
// nothing but node and chromium is needed.
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtempSync, readFileSync, rmSync, existsSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, extname, normalize, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const arg = (name, fallback) => {
  const a = process.argv.find((x) => x.startsWith(`--${name}=`));
  return a ? a.split('=')[1] : fallback;
};
const sweep = Number(arg('sweep', 300));
const seed = Number(arg('seed', Date.now() % 1e6));
const bench = arg('bench', '1');
const timeout = Number(arg('timeout', 900)) * 1000;
const chromium = arg('chromium', '/usr/bin/chromium');
const root = dirname(fileURLToPath(import.meta.url));
if (!existsSync(join(root, 'pkg', 'wgpu_split_web.js'))) {
  console.error('web/pkg is missing: build the page first (bash web/build.sh)');
  process.exit(2);
}

const types = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm', '.json': 'application/json' };
const server = createServer((req, res) => {
  const path = normalize(join(root, decodeURIComponent(new URL(req.url, 'http://x').pathname)));
  const file = path.endsWith('/') ? join(path, 'index.html') : path;
  if (!file.startsWith(root) || !existsSync(file) || !statSync(file).isFile()) {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, { 'content-type': types[extname(file)] ?? 'application/octet-stream' });
  res.end(readFileSync(file));
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${server.address().port}/index.html?sweep=${sweep}&seed=${seed}&bench=${bench}`;

const profile = mkdtempSync(join(tmpdir(), 'wgpu-split-chromium-'));
const browser = spawn(chromium, [
  '--headless=new', '--no-sandbox', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  `--user-data-dir=${profile}`, '--enable-unsafe-webgpu', '--remote-debugging-pipe', 'about:blank',
], { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
let stderr = '';
browser.stderr.on('data', (d) => { stderr = (stderr + d).slice(-4000); });

// The DevTools protocol: JSON messages ended by NUL, written to fd 3, read from fd 4.
let nextId = 1, buffered = '';
const pending = new Map();
const logs = [];
browser.stdio[4].on('data', (chunk) => {
  buffered += chunk;
  let end;
  while ((end = buffered.indexOf('\0')) >= 0) {
    const msg = JSON.parse(buffered.slice(0, end));
    buffered = buffered.slice(end + 1);
    if (msg.id && pending.has(msg.id)) {
      const { resolve, reject } = pending.get(msg.id);
      pending.delete(msg.id);
      msg.error ? reject(new Error(JSON.stringify(msg.error))) : resolve(msg.result);
    } else if (msg.method === 'Runtime.exceptionThrown') {
      logs.push(`exception: ${msg.params.exceptionDetails.exception?.description ?? msg.params.exceptionDetails.text}`);
    } else if (msg.method === 'Runtime.consoleAPICalled') {
      logs.push(`console.${msg.params.type}: ${msg.params.args.map((a) => a.value ?? a.description).join(' ')}`);
    }
  }
});
const send = (method, params = {}, sessionId) => new Promise((resolve, reject) => {
  const id = nextId++;
  pending.set(id, { resolve, reject });
  browser.stdio[3].write(JSON.stringify({ id, method, params, sessionId }) + '\0');
});

let finished = false;
function finish(code, message) {
  if (finished) return;
  finished = true;
  console.log(message);
  if (logs.length) console.log(`page log (last 20):\n  ${logs.slice(-20).join('\n  ')}`);
  if (code !== 0 && stderr) console.log(`chromium stderr (tail, D-Bus noise left out):\n${stderr.split('\n').filter((l) => !l.includes('dbus')).join('\n')}`);
  browser.removeAllListeners('exit');
  browser.kill('SIGKILL');
  server.close();
  // Chromium may still be writing its profile as it dies: leave what it leaves.
  setTimeout(() => {
    try { rmSync(profile, { recursive: true, force: true }); } catch { /* a temporary dir */ }
    process.exit(code);
  }, 200);
}
browser.on('exit', (code) => finish(1, `FAIL: chromium exited (${code}) before the page finished`));

const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
const { sessionId } = await send('Target.attachToTarget', { targetId, flatten: true });
await send('Runtime.enable', {}, sessionId);
await send('Page.navigate', { url }, sessionId);
console.log(`opened ${url}`);

const started = Date.now();
let state = null;
while (Date.now() - started < timeout) {
  await new Promise((r) => setTimeout(r, 1000));
  const { result } = await send('Runtime.evaluate', { expression: 'JSON.stringify(window.wgpuSplit ?? null)', returnByValue: true }, sessionId);
  state = result.value ? JSON.parse(result.value) : null;
  if (state?.done) break;
}
const seconds = ((Date.now() - started) / 1000).toFixed(1);
if (arg('json')) writeFileSync(arg('json'), JSON.stringify(state, null, 1));
if (!state?.done) finish(1, `FAIL: the page did not finish in ${timeout / 1000} s`);

// What must hold; each failure names the rule and the numbers.
const problems = [];
const must = (ok, what) => { if (!ok) problems.push(what); };
must(state.error === null, `the page reported an error: ${state.error}`);
const c = state.checks;
if (c) {
  const a = c.adapter;
  must(a.storage_buffers_per_stage === 8 && a.max_storage_binding === 128 * 2 ** 20 && a.workgroup_storage === 16384,
    `the page's device has WebGPU's default limits, not ${a.storage_buffers_per_stage} storage buffers, ${a.max_storage_binding} per binding, ${a.workgroup_storage} B of workgroup memory`);
  must(c.examples.length === 7, `7 spec examples, not ${c.examples.length}`);
  for (const e of c.examples) must(e.ok, `spec example "${e.title}": ${e.error ?? 'an output differs from the CPU reference'}`);
  for (const e of c.examples) must(e.error || e.round_trip === true, `spec example "${e.title}": the concat of its outputs on the GPU is not its input`);
  const s = c.sweep;
  must(s.cases >= 200, `at least 200 random splits, not ${s.cases}`);
  must(s.failed === 0, `${s.failed} random splits failed:\n    ${s.failures.join('\n    ')}`);
  for (const [op, n] of Object.entries(s.per_operator)) must(n > 0, `the sweep ran no ${op}`);
  const kinds = new Set(s.dtypes.map((d) => d.startsWith('<U') ? 'strings' : d));
  must(kinds.size === 16, `every dtype (15 numeric and strings), not ${kinds.size}: ${[...kinds].join(', ')}`);
  must(s.negative_axes > 0, 'no negative axis');
  must(s.zero_length_outputs > 0, 'no zero-length output');
  must(s.most_outputs >= 10000, `a split into 10,000 outputs, not at most ${s.most_outputs}`);
  must(s.past_one_binding >= 1, 'no input past one storage binding');
  must(s.views.splits >= s.cases / 2, `only ${s.views.splits} of ${s.cases} random splits written into views`);
  must(s.past_one_binding_concats === s.past_one_binding, `inputs past one binding concatenated back: ${s.past_one_binding_concats} of ${s.past_one_binding}`);
  must(s.concats >= 200, `at least 200 splits concatenated back, not ${s.concats}`);
  const f = s.from_buffers;
  must(f.concats >= 100, `at least 100 splits concatenated back from buffers of their own, not ${f.concats}`);
  must(f.dispatches < f.buffers, `input buffers read together: ${f.dispatches} dispatches for ${f.buffers} buffers`);
  const d = c.decode;
  must(d && d.error === null && d.steps === 5 && d.same,
    `a prepared decode step moved through 5 positions (set_views): ${d?.error ?? (d?.same === false ? 'a buffer differs from the reference' : `${d?.steps} steps`)}`);
  const r = c.rows;
  must(r && r.cases === 6 && r.errors.length === 0,
    `rows placed by indices (gather, scatter, paged write): ${r ? r.errors.join('; ') || `${r.cases} cases` : 'not run'}`);
  must(/on WebGPU, call GpuSplitter::new_async/.test(c.sync_entry_point),
    `a sync entry point must refuse on WebGPU, naming its async twin: ${c.sync_entry_point}`);
} else {
  must(false, 'the page left no check results');
}
const j = state.driver;
if (j) {
  // Each split with its concat back: the examples, the sweep and its 10,000 outputs, the
  // splits in copies; the rows and the paged writes.
  const want = { example: 14, sweep: 2 * (sweep + 1), copies: 4, rows: 4, paged: 2 };
  must((j.kinds.views ?? 0) >= sweep / 2, `through the JavaScript driver, at least ${sweep / 2} random splits into views, not ${j.kinds.views ?? 0}`);
  for (const [kind, n] of Object.entries(want)) must(j.kinds[kind] === n, `through the JavaScript driver, ${n} jobs of ${kind}, not ${j.kinds[kind] ?? 0}`);
  must(j.copies > 0 && j.dispatches > j.jobs / 2, `through the JavaScript driver, copies and dispatches: ${j.copies} copies, ${j.dispatches} dispatches in ${j.jobs} jobs`);
  must(j.failures.length === 0, `${j.failures.length} jobs failed through the JavaScript driver:\n    ${j.failures.slice(0, 20).join('\n    ')}`);
} else {
  must(false, 'the page left no results of the JavaScript driver');
}
if (bench !== '0') {
  const b = state.bench;
  must(b && b.cases.length > 0, 'the benchmark timed no case');
  for (const k of b?.cases ?? []) must(k.split_gbps > 0 && k.copy_kernel_gbps > 0 && k.copy_gbps > 0, `benchmark case ${k.name} has a zero figure`);
  const rows = (b?.rows ?? []).map((k) => k.name).join(',');
  must(rows === 'embedding,set_rows,paged_decode,paged_prefill', `the rows cases timed are ${rows}`);
  for (const k of b?.rows ?? []) must(k.same && k.rows_gbps > 0 && k.copy_kernel_gbps > 0 && k.copy_gbps > 0, `rows case ${k.name}: equal ${k.same}, GB/s ${k.rows_gbps}`);
  const t = state.driverBench;
  must(t && t.length > 0, 'the benchmark timed no case through the JavaScript driver');
  for (const k of t ?? []) must(k.split_gbps > 0 && k.copy_gbps > 0, `benchmark case ${k.name} (${k.op}) through the JavaScript driver has a zero figure`);
}
const wasmSizes = ['wgpu_split_web_bg.wasm', 'wgsl_split_js_bg.wasm'].map((f) => `${f} ${statSync(join(root, 'pkg', f)).size} B`).join(', ');
const adapter = c?.adapter ? `${c.adapter.name || '(no name)'} ${c.adapter.backend} ${c.adapter.device_type}` : '?';
const summary = c ? `${c.examples.length} spec examples, ${c.sweep.cases} random splits (${c.sweep.concats} concatenated back, ${c.sweep.from_buffers.concats} of them also from ${c.sweep.from_buffers.buffers} buffers in ${c.sweep.from_buffers.dispatches} dispatches, ${c.sweep.views.splits} into random views; a prepared decode step moved through ${c.decode?.steps ?? 0} positions; ${c.rows?.cases ?? 0} cases of rows placed by indices; seed ${seed}, ${c.sweep.dtypes.length} dtypes counting each string width, up to ${c.sweep.most_outputs} outputs), ${state.bench?.cases.length ?? 0} benchmark cases, on ${adapter}, in ${seconds} s; through the JavaScript driver ${j?.jobs ?? 0} jobs (${j?.dispatches ?? 0} dispatches, ${j?.copies ?? 0} copies) in ${j?.seconds.toFixed(1) ?? '?'} s, ${state.driverBench?.length ?? 0} benchmark cases; wasm ${wasmSizes}, loaded in ${state.startMs?.toFixed(0)} ms (wgpu-split) and ${j?.startMs?.toFixed(0)} ms (the core)` : '';
const rowsTimed = (state?.bench?.rows ?? []).map((k) => `${k.name} ${k.rows_gbps.toFixed(2)} GB/s (copy kernel ${k.copy_kernel_gbps.toFixed(2)}, equal ${k.same})`).join('; ');
const full = rowsTimed ? `${summary}\nrows timed: ${rowsTimed}` : summary;
if (problems.length) finish(1, `FAIL: ${full}\n  ${problems.join('\n  ')}`);
finish(0, `ok: ${full}`);
