#!/usr/bin/env python3
"""The engine's API size, from rustdoc: the public items of the driver and the core counted
together (an item the driver re-exports counts once; each at one path), and the methods of
GpuSplitter and Prepared together. Fails past the bounds given.

    python3 scripts/api_size.py DRIVER_DOC CORE_DOC MAX_ITEMS MAX_METHODS

DRIVER_DOC is the wgpu crate's rustdoc directory (target/.../doc/wgpu_split), CORE_DOC the
core's (target/.../doc/wgsl_split)."""
import re
import sys


def items_of(doc):
    with open(f"{doc}/all.html") as f:
        return [name for _, name in re.findall(r'<li><a href="([^"]+)">([^<]+)</a></li>', f.read())]


def main():
    driver, core, max_items, max_methods = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    driver_items = items_of(driver)
    items = sorted(set(driver_items) | set(items_of(core)))
    methods = []
    for ty in ["GpuSplitter", "Prepared"]:
        with open(f"{driver}/struct.{ty}.html") as f:
            page = f.read()
        # Inherent methods only: the trait implementations come after this anchor.
        page = page.split('id="trait-implementations"')[0]
        methods += [f"{ty}::{m}" for m in sorted(set(re.findall(r'id="method\.(\w+)"', page)))]
    print(f"{len(items)} items, driver and core (at most {max_items}): {', '.join(items)}")
    print(f"{len(methods)} methods (at most {max_methods}): {', '.join(methods)}")
    last = [n.split('::')[-1] for n in items]
    twice = sorted({n for n in last if last.count(n) > 1})
    if twice:
        print(f"items at two paths: {twice}")
    if len(items) > max_items or len(methods) > max_methods or twice:
        sys.exit(1)


if __name__ == "__main__":
    main()
