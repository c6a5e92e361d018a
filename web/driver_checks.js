// The page's checks of the JavaScript driver (driver.js): the core compiled to wasm without
// wgpu (web/core) gives each job, a recording with the buffers it runs on; the driver executes
// it on this browser's device; every buffer is read back and compared byte for byte with what
// it must hold, the guard bytes after each region included.
import init, { Jobs, suite_recordings } from './pkg/wgsl_split_js.js';
import { Driver } from './driver.js';

const LIMITS = ['maxStorageBufferBindingSize', 'maxBufferSize', 'maxStorageBuffersPerShaderStage',
  'maxDynamicStorageBuffersPerPipelineLayout', 'maxComputeWorkgroupsPerDimension',
  'minStorageBufferOffsetAlignment'];

// The bytes of `buffer`, `size` of them.
async function read(device, buffer, size) {
  const staging = device.createBuffer({ size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const encoder = device.createCommandEncoder();
  encoder.copyBufferToBuffer(buffer, 0, staging, 0, size);
  device.queue.submit([encoder.finish()]);
  await staging.mapAsync(GPUMapMode.READ);
  const bytes = new Uint8Array(staging.getMappedRange()).slice();
  staging.destroy();
  return bytes;
}

// The core's module, loaded once, and a device with WebGPU's default limits, with the JSON
// the core takes of it (its limits, and whether it is a CPU); `startMs`: the milliseconds the
// module took to load.
async function open() {
  const loading = performance.now();
  await init();
  const startMs = performance.now() - loading;
  const adapter = await navigator.gpu.requestAdapter();
  if (!adapter) throw new Error('no WebGPU adapter');
  const device = await adapter.requestDevice({ label: 'wgsl-split JS driver' });
  const limits = Object.fromEntries(LIMITS.map((k) => [k, device.limits[k]]));
  const isFallbackAdapter = adapter.info?.isFallbackAdapter ?? adapter.isFallbackAdapter ?? false;
  return { device, limits: JSON.stringify({ ...limits, isFallbackAdapter }), startMs };
}

// Runs every job on a device with WebGPU's default limits; returns what ran and what failed.
export async function driverChecks(sweep, seed) {
  const started = performance.now();
  const { device, limits, startMs } = await open();
  const jobs = new Jobs(limits, sweep, seed);
  const driver = new Driver(device);
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
  const tally = { startMs, jobs: 0, kinds: {}, dispatches: 0, copies: 0, failures: JSON.parse(jobs.refused()) };
  for (let i = 0; i < jobs.count(); i++) {
    const job = JSON.parse(jobs.job(i));
    const byName = {};
    for (const b of job.buffers) {
      const buffer = device.createBuffer({ label: b.name, size: b.size, usage, mappedAtCreation: true });
      new Uint8Array(buffer.getMappedRange()).set(jobs.start(i, b.name));
      buffer.unmap();
      byName[b.name] = buffer;
    }
    const buffers = Object.fromEntries(Object.entries(job.roles).map(([role, name]) => [role, byName[name]]));
    try {
      await driver.execute(job.recording, buffers);
      for (const b of job.buffers) {
        const wrong = jobs.check(i, b.name, await read(device, byName[b.name], b.size));
        if (wrong) tally.failures.push(`${job.title}: ${wrong}`);
      }
    } catch (e) {
      tally.failures.push(`${job.title}: ${e.message ?? e}`);
    }
    Object.values(byName).forEach((b) => b.destroy());
    tally.jobs += 1;
    tally.kinds[job.kind] = (tally.kinds[job.kind] ?? 0) + 1;
    tally.dispatches += job.recording.commands.filter((c) => c.dispatch).length;
    tally.copies += job.recording.commands.filter((c) => c.copy).length;
  }
  jobs.free();
  device.destroy();
  tally.seconds = (performance.now() - started) / 1000;
  return tally;
}

// Milliseconds from submitting `encoder`'s commands to the queue's report that they are done.
async function timed(device, encoder) {
  const start = performance.now();
  device.queue.submit([encoder.finish()]);
  await device.queue.onSubmittedWorkDone();
  return performance.now() - start;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// Times the suite's cases with their parts in one region through the driver, each prepared
// once (as an engine prepares a node) and recorded `repeats` times, against
// copyBufferToBuffer of the same bytes: `repeats` of each per submission, the median of three
// submissions, in GB/s.
export async function driverTimings(repeats) {
  const { device, limits } = await open();
  const driver = new Driver(device);
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
  const cases = [];
  for (const c of JSON.parse(suite_recordings(limits))) {
    const whole = device.createBuffer({ size: c.whole, usage });
    const parts = device.createBuffer({ size: Math.max(16, c.parts), usage });
    const copy = device.createBuffer({ size: c.whole, usage });
    const buffers = c.op === 'concat' ? { input0: parts, output0: whole } : { input0: whole, output0: parts };
    const [split, copies] = [[], []];
    const prepared = driver.prepare(c.recording, buffers);
    for (let run = 0; run < 3; run++) {
      let encoder = device.createCommandEncoder();
      for (let i = 0; i < repeats; i++) prepared.encode(encoder);
      split.push(await timed(device, encoder));
      encoder = device.createCommandEncoder();
      for (let i = 0; i < repeats; i++) encoder.copyBufferToBuffer(whole, 0, copy, 0, c.whole);
      copies.push(await timed(device, encoder));
    }
    prepared.destroy();
    [whole, parts, copy].forEach((b) => b.destroy());
    const gbps = (ms) => (c.bytes * repeats) / Math.max(ms, 1e-3) / 1e6;
    cases.push({ name: c.name, op: c.op, dtype: c.dtype, bytes: c.bytes,
      dispatches: c.recording.commands.length, split_gbps: gbps(median(split)), copy_gbps: gbps(median(copies)) });
  }
  device.destroy();
  return cases;
}
