// The JavaScript driver of wgsl-split: executes the core's recordings (their JSON, from
// `recording_json` in web/core) on a WebGPU device, `navigator.gpu`'s or any other. The host
// owns every buffer and names it by the role it plays; the driver owns what the recording's
// builds need besides: shader modules, bind group layouts, pipelines and stand-ins, made once
// and kept, and each dispatch's table. docs/hosts.md gives the contract it keeps.

const { STORAGE, COPY_DST } = GPUBufferUsage;

export class Driver {
  constructor(device) {
    this.device = device;
    this.modules = new Map(); // WGSL -> its module and a number
    this.layouts = new Map(); // a build's layout, as JSON -> its layouts and stand-ins
    this.pipelines = new Map(); // layout, module, entry point and constants -> pipeline
  }

  // The bind group layout, pipeline layout and stand-ins of a build's `layout`.
  layout(layout) {
    const key = JSON.stringify(layout);
    let made = this.layouts.get(key);
    if (!made) {
      const bindGroupLayout = this.device.createBindGroupLayout({
        label: 'wgsl-split',
        entries: layout.entries.map((e, binding) => ({
          binding,
          visibility: GPUShaderStage.COMPUTE,
          buffer: { type: e.readOnly ? 'read-only-storage' : 'storage', hasDynamicOffset: e.dynamic },
        })),
      });
      const standIns = {};
      for (const [role, size] of Object.entries(layout.standIns)) {
        standIns[role] = this.device.createBuffer({ label: `wgsl-split ${role}`, size, usage: STORAGE });
      }
      made = {
        key,
        bindGroupLayout,
        pipelineLayout: this.device.createPipelineLayout({ bindGroupLayouts: [bindGroupLayout] }),
        standIns,
      };
      this.layouts.set(key, made);
    }
    return made;
  }

  // The pipeline of one dispatch `d` of `recording`, in `layout`.
  pipeline(recording, layout, d) {
    const source = recording.modules[d.module];
    let module = this.modules.get(source);
    if (!module) {
      const made = this.device.createShaderModule({ label: 'wgsl-split', code: source });
      module = { made, id: this.modules.size };
      this.modules.set(source, module);
    }
    const key = `${layout.key}|${module.id}|${d.entry}|${JSON.stringify(d.constants)}`;
    let pipeline = this.pipelines.get(key);
    if (!pipeline) {
      pipeline = this.device.createComputePipeline({
        label: `wgsl-split ${d.entry}`,
        layout: layout.pipelineLayout,
        compute: { module: module.made, entryPoint: d.entry, constants: d.constants },
      });
      this.pipelines.set(key, pipeline);
    }
    return pipeline;
  }

  // Prepares `recording` on `buffers` (each role's buffer `buffers[role]`): its tables
  // written and its bind groups made once. The result records it into any encoder, as often
  // as wanted (`encode`), until `destroy` frees its tables.
  prepare(recording, buffers) {
    const buffer = (role) => {
      const b = buffers[role];
      if (!b) throw new Error(`the recording binds ${role}, which the host did not give`);
      return b;
    };
    const tables = [];
    const steps = recording.commands.map((command) => {
      if (command.copy) {
        const c = command.copy;
        return { copy: [buffer(c.from), c.fromOffset, buffer(c.to), c.toOffset, c.size] };
      }
      const d = command.dispatch;
      const layout = this.layout(recording.layouts[d.layout]);
      const table = this.device.createBuffer({
        label: 'wgsl-split table',
        size: Math.max(16, d.table.length),
        usage: STORAGE | COPY_DST,
      });
      this.device.queue.writeBuffer(table, 0, new Uint8Array(d.table));
      tables.push(table);
      const entries = d.binds.map((b, binding) => ({
        binding,
        resource: {
          buffer: b.role === 'table' ? table : (layout.standIns[b.role] ?? buffer(b.role)),
          offset: b.offset,
          size: b.size ?? undefined,
        },
      }));
      return {
        pipeline: this.pipeline(recording, layout, d),
        bindGroup: this.device.createBindGroup({ layout: layout.bindGroupLayout, entries }),
        offsets: d.offsets,
        workgroups: d.workgroups,
      };
    });
    return {
      // Records the commands into `encoder`: consecutive dispatches share a compute pass.
      encode(encoder) {
        let pass = null;
        for (const step of steps) {
          if (step.copy) {
            pass?.end();
            pass = null;
            encoder.copyBufferToBuffer(...step.copy);
            continue;
          }
          pass ??= encoder.beginComputePass({ label: 'wgsl-split' });
          pass.setPipeline(step.pipeline);
          pass.setBindGroup(0, step.bindGroup, step.offsets);
          pass.dispatchWorkgroups(step.workgroups[0], step.workgroups[1]);
        }
        pass?.end();
      },
      destroy() {
        tables.forEach((t) => t.destroy());
      },
    };
  }

  // Executes `recording` on `buffers` once and waits for it; a validation or memory error of
  // the device becomes a thrown Error.
  async execute(recording, buffers) {
    const device = this.device;
    device.pushErrorScope('out-of-memory');
    device.pushErrorScope('validation');
    let prepared = null;
    try {
      prepared = this.prepare(recording, buffers);
      const encoder = device.createCommandEncoder({ label: 'wgsl-split' });
      prepared.encode(encoder);
      device.queue.submit([encoder.finish()]);
    } finally {
      const errors = [await device.popErrorScope(), await device.popErrorScope()].filter(Boolean);
      await device.queue.onSubmittedWorkDone();
      prepared?.destroy();
      if (errors.length) throw new Error(errors.map((e) => e.message).join('; '));
    }
  }
}
