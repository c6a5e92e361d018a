// The page's checks of the JavaScript driver (driver.js): the core compiled to wasm without
// wgpu (web/core) gives each job, a recording with the buffers it runs on; the driver executes
// it on this browser's device; every buffer is read back and compared byte for byte with what
// it must hold, the guard bytes after each region included.
import init, { Jobs } from './pkg/wgsl_split_js.js';
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

// Runs every job on a device with WebGPU's default limits; returns what ran and what failed.
export async function driverChecks(sweep, seed) {
  const started = performance.now();
  await init();
  const adapter = await navigator.gpu.requestAdapter();
  if (!adapter) throw new Error('no WebGPU adapter');
  const device = await adapter.requestDevice({ label: 'wgsl-split JS driver' });
  const limits = Object.fromEntries(LIMITS.map((k) => [k, device.limits[k]]));
  const jobs = new Jobs(JSON.stringify(limits), sweep, seed);
  const driver = new Driver(device);
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
  const tally = { jobs: 0, kinds: {}, dispatches: 0, copies: 0, failures: JSON.parse(jobs.refused()) };
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
