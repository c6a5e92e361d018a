#!/usr/bin/env python3
"""The engine build's API size, from its rustdoc: items (each at one path) and the methods of
GpuSplitter and Prepared together. Fails past the bounds given.

    python3 scripts/api_size.py DOC_DIR MAX_ITEMS MAX_METHODS

DOC_DIR is the crate's rustdoc directory (target/.../doc/wgpu_split)."""
import re
import sys


def main():
    doc, max_items, max_methods = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    with open(f"{doc}/all.html") as f:
        items = [name for _, name in re.findall(r'<li><a href="([^"]+)">([^<]+)</a></li>', f.read())]
    methods = []
    for ty in ["GpuSplitter", "Prepared"]:
        with open(f"{doc}/struct.{ty}.html") as f:
            page = f.read()
        # Inherent methods only: the trait implementations come after this anchor.
        page = page.split('id="trait-implementations"')[0]
        methods += [f"{ty}::{m}" for m in sorted(set(re.findall(r'id="method\.(\w+)"', page)))]
    print(f"{len(items)} items (at most {max_items}): {', '.join(items)}")
    print(f"{len(methods)} methods (at most {max_methods}): {', '.join(methods)}")
    twice = sorted({n.split('::')[-1] for n in items if sum(m.split('::')[-1] == n.split('::')[-1] for m in items) > 1})
    if twice:
        print(f"items at two paths: {twice}")
    if len(items) > max_items or len(methods) > max_methods or twice:
        sys.exit(1)


if __name__ == "__main__":
    main()
