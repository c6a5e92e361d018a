#!/usr/bin/env python3
"""The kernel's size (#76's targets), counted the same way every time:

- the product's WGSL, in code lines (neither blank nor only a comment): the gather's shader
  files (`crates/wgsl-split/shaders/`) and the WGSL pieces Rust assembles into its builds
  (string constants of the core's `gather/builds*`); the bench's own kernels are not the
  product's;
- the gather (the core's `src/gather` and the driver's `src/gpu/gather`) and the driver's
  `src/gpu` in lines without tests: every `.rs` file but the test modules (a file a `#[cfg(..test..)]` declaration names, by its name or its `#[path]`, and a
  `#[cfg(test)] mod .. {` block to its file's end);
- the shader's entry points (`EntryPoint::STAMPED`) and the program keys (`ProgramKey::COUNT`,
  from the lengths of the arrays it is made of).

    python3 scripts/kernel_size.py        (from the repository root)"""
import pathlib
import re

root = pathlib.Path(__file__).resolve().parent.parent


def code_lines(text):
    return [l for l in text.splitlines() if l.strip() and not l.strip().startswith("//")]


core = root / "crates/wgsl-split"
shaders = sorted((core / "shaders").glob("split_gather*.wgsl"))
wgsl = {str(p.relative_to(root)): len(code_lines(p.read_text())) for p in shaders}
for p in sorted((core / "src/gather").glob("builds*/**/*.rs")) + [core / "src/gather/builds.rs"]:
    pieces = re.findall(r'const [A-Z_0-9]+: &str = "(.*?)";', p.read_text(), re.S)
    if pieces:
        wgsl[f"{p.relative_to(root)} (strings)"] = sum(len(code_lines(s)) for s in pieces)

gpu = sorted((root / "src/gpu").rglob("*.rs")) + sorted((core / "src/gather").rglob("*.rs"))
gpu.append(core / "src/gather.rs")
test_files = set()
for p in gpu:
    text = p.read_text()
    test_mod = r"#\[cfg\([^\]]*\btest\b[^\]]*\)\]\s*(?:#\[path = \"([^\"]+)\"\]\s*)?(?:pub(?:\([a-z]+\))? )?mod (\w+);"
    for path, name in re.findall(test_mod, text):
        stem = p.parent / (p.stem if p.name != "mod.rs" else "")
        test_files |= {stem / f"{name}.rs", p.parent / f"{name}.rs", stem / name / "mod.rs"}
        if path:
            test_files.add(p.parent / path)
lines = {}
for p in gpu:
    if p in test_files or any(t in p.parents for t in (f.with_suffix("") for f in test_files)):
        continue
    text = p.read_text().splitlines()
    end = next((i for i, l in enumerate(text)
                if l.strip() == "#[cfg(test)]" and i + 1 < len(text)
                and re.match(r"\s*(pub(\([a-z]+\))? )?mod \w+ \{", text[i + 1])), len(text))
    lines[str(p.relative_to(root))] = end

program = (core / "src/gather/abi/program.rs").read_text()
stamped = re.search(r"STAMPED: \[\(&'static str, &'static str\); (\d+)\]", program)
arrays = dict(re.findall(r"pub const ALL: \[(\w+); (\d+)\]", program))
count = re.search(r"pub const COUNT: usize = (.*);", program).group(1)
keys = eval(re.sub(r"(\w+)::ALL\.len\(\)", lambda m: arrays[m.group(1)], count))
gather = {k: n for k, n in lines.items()
          if k.startswith(("src/gpu/gather", "crates/wgsl-split/src/gather"))}

print(f"WGSL code lines: {sum(wgsl.values())} (at most 900)")
for name, n in sorted(wgsl.items(), key=lambda kv: -kv[1]):
    print(f"  {n:5}  {name}")
print(f"entry points: {stamped.group(1)} (at most 3); program keys: {keys} (at most 20)")
print(f"the gather's lines without tests: {sum(gather.values())} (at most 2,800)")
print(f"src/gpu and the gather, lines without tests: {sum(lines.values())} in {len(lines)} files")
for name, n in sorted(lines.items(), key=lambda kv: -kv[1]):
    print(f"  {n:5}  {name}")
