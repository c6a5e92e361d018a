// Runs the checks and the benchmark in this browser and shows them. The results are also
// left in `window.wgpuSplit` ({ checks, driver, bench, done, error }), which the browser test
// reads: `checks` through wgpu-split compiled to wasm, `driver` through the JavaScript driver.
import init, { run_checks, run_bench } from './pkg/wgpu_split_web.js';
import { driverChecks, driverTimings } from './driver_checks.js';

const params = new URLSearchParams(location.search);
const sweep = Number(params.get('sweep') ?? 300);
const seed = Number(params.get('seed') ?? 1);
const repeats = Number(params.get('repeats') ?? 10);
const withBench = params.get('bench') !== '0';
const state = { checks: null, driver: null, bench: null, driverBench: null, startMs: null, done: false, error: null };
window.wgpuSplit = state;

const $ = (id) => document.getElementById(id);
const esc = (s) => String(s).replace(/[&<>]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;' })[c]);
const yes = (ok) => ok ? '<span class="ok">yes</span>' : '<span class="bad">NO</span>';
const table = (head, rows) =>
  `<table><tr>${head.map((h) => `<th>${h}</th>`).join('')}</tr>` +
  rows.map((r) => `<tr>${r.map((c) => `<td>${c}</td>`).join('')}</tr>`).join('') + '</table>';

function showChecks(c) {
  const a = c.adapter;
  $('adapter').innerHTML = table(['name', 'backend', 'type', 'storage buffers / stage', 'largest binding', 'largest buffer'],
    [[esc(a.name || '(no name given)'), a.backend, a.device_type, a.storage_buffers_per_stage, a.max_storage_binding, a.max_buffer]]);
  $('examples').innerHTML = c.examples.map((e) =>
    `<h3>${esc(e.title)} ${yes(e.ok)}</h3>` + (e.error ? `<p class="bad">${esc(e.error)}</p>` :
      table(['output', 'shape', 'bytes', 'GPU == CPU'],
        e.outputs.map((o, i) => [i, `[${o.shape.join(', ')}]`, o.bytes, yes(o.same)])))).join('');
  const s = c.sweep;
  $('sweep').innerHTML = table(['splits', 'failed', 'per operator', 'dtypes', 'negative axes', 'zero-length outputs', 'most outputs', 'past one binding'],
    [[s.cases, s.failed === 0 ? '<span class="ok">0</span>' : `<span class="bad">${s.failed}</span>`,
      Object.entries(s.per_operator).map(([k, v]) => `${k} ${v}`).join(', '), s.dtypes.length,
      s.negative_axes, s.zero_length_outputs, s.most_outputs, s.past_one_binding]]) +
    s.failures.map((f) => `<p class="bad">${esc(f)}</p>`).join('');
}

function showDriver(d) {
  $('driver').innerHTML = table(['jobs', 'failed', 'per kind', 'dispatches', 'copies', 'seconds', 'module load ms (wgpu-split / core)'],
    [[d.jobs, d.failures.length === 0 ? '<span class="ok">0</span>' : `<span class="bad">${d.failures.length}</span>`,
      Object.entries(d.kinds).map(([k, v]) => `${k} ${v}`).join(', '), d.dispatches, d.copies, d.seconds.toFixed(1),
      `${state.startMs.toFixed(0)} / ${d.startMs.toFixed(0)}`]]) +
    d.failures.map((f) => `<p class="bad">${esc(f)}</p>`).join('');
}

function showBench(b, driver) {
  const f = (x) => x.toFixed(3);
  const js = (c) => driver.find((d) => d.name === c.name && d.op === c.op);
  $('bench').innerHTML = table(['case', 'dtype', 'shape', 'outputs', 'bytes', 'dispatches', 'split GB/s', 'JS driver GB/s', 'copy kernel GB/s', 'copyBufferToBuffer GB/s', 'split / kernel'],
    b.cases.map((c) => [c.name, c.dtype, `[${c.shape.join(', ')}]`, c.outputs, c.bytes, c.dispatches,
      f(c.split_gbps), js(c) ? f(js(c).split_gbps) : '–', f(c.copy_kernel_gbps), f(c.copy_gbps), c.split_vs_kernel.toFixed(2)])) + chart(b.cases) +
    '<h3>Rows placed by indices</h3>' +
    table(['case', 'dtype', 'bytes', 'dispatches', 'equal', 'rows GB/s', 'copy kernel GB/s', 'copyBufferToBuffer GB/s', 'rows / kernel'],
      (b.rows ?? []).map((c) => [c.name, c.dtype, c.bytes, c.dispatches, c.same ? '<span class="ok">yes</span>' : '<span class="bad">NO</span>',
        f(c.rows_gbps), f(c.copy_kernel_gbps), f(c.copy_gbps), c.rows_vs_kernel.toFixed(2)]));
}

// Grouped bars: split, copy kernel and copyBufferToBuffer per case, in GB/s.
function chart(cases) {
  const series = [['split_gbps', '#36c', 'split'], ['copy_kernel_gbps', '#999', 'copy kernel'], ['copy_gbps', '#c63', 'copyBufferToBuffer']];
  const top = Math.max(1e-9, ...cases.flatMap((c) => series.map(([k]) => c[k])));
  const w = 60, h = 200, pad = 40;
  let svg = `<svg width="${pad + cases.length * w + 160}" height="${h + 60}" xmlns="http://www.w3.org/2000/svg" font-size="11">`;
  cases.forEach((c, i) => {
    series.forEach(([k, color], j) => {
      const bh = (c[k] / top) * h;
      svg += `<rect x="${pad + i * w + j * 16}" y="${10 + h - bh}" width="14" height="${bh}" fill="${color}"><title>${c.name} ${k}: ${c[k].toFixed(3)} GB/s</title></rect>`;
    });
    svg += `<text x="${pad + i * w}" y="${h + 25}">${c.name}</text>`;
  });
  svg += `<text x="0" y="15">${top.toFixed(2)}</text><text x="0" y="${h + 10}">0 GB/s</text>`;
  series.forEach(([, color, label], j) => {
    svg += `<rect x="${pad + cases.length * w + 10}" y="${20 + j * 18}" width="12" height="12" fill="${color}"/><text x="${pad + cases.length * w + 28}" y="${30 + j * 18}">${label}</text>`;
  });
  return svg + '</svg>';
}

async function main() {
  if (!navigator.gpu) throw new Error('this browser has no WebGPU (navigator.gpu is missing)');
  const loading = performance.now();
  await init();
  state.startMs = performance.now() - loading;
  $('status').textContent = `running the spec examples and ${sweep} random splits…`;
  state.checks = JSON.parse(await run_checks(sweep, seed));
  if (state.checks.error) throw new Error(state.checks.error);
  showChecks(state.checks);
  $('status').textContent = 'running the checks through the JavaScript driver…';
  state.driver = await driverChecks(sweep, seed);
  showDriver(state.driver);
  if (withBench) {
    $('status').textContent = 'running the benchmark…';
    state.bench = JSON.parse(await run_bench(repeats));
    if (state.bench.error) throw new Error(state.bench.error);
    $('status').textContent = 'timing the cases through the JavaScript driver…';
    state.driverBench = await driverTimings(repeats);
    showBench(state.bench, state.driverBench);
  }
  const s = state.checks.sweep;
  const examplesOk = state.checks.examples.every((e) => e.ok);
  $('status').innerHTML = examplesOk && s.failed === 0 && state.driver.failures.length === 0
    ? '<span class="ok">every output equals the CPU reference, byte for byte</span>'
    : '<span class="bad">MISMATCH: some outputs differ from the CPU reference</span>';
}

main().catch((e) => {
  state.error = String(e && e.stack || e);
  $('status').innerHTML = `<span class="bad">${esc(state.error)}</span>`;
}).finally(() => { state.done = true; });
