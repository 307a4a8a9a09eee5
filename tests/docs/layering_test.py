#!/usr/bin/env python3
"""The folders' dependencies point one way (docs/architecture.md): every `#include "..."` of
a library folder names only itself or a folder it may depend on, the training loop includes
no collective, reducer or store and calls no regroup, broadcast or sum across workers (the
elastic group's), the kernels (kernels/, optional) are included only under `#if
EST_WITH_KERNELS`, and no vector intrinsics live outside kernels/ and the few low-level files
listed, and no folder includes another's private `*_impl.h`. Usage: layering_test.py <repository
root>."""

import pathlib
import re
import sys

# Each folder (most specific first) and the folders its sources may include.
ALLOWED = [
    ("common/", {"common/"}),
    ("kernels/", {"kernels/", "common/"}),
    ("data/", {"data/", "common/"}),
    ("checkpoint/", {"checkpoint/", "common/"}),
    ("distribute/cluster/", {"distribute/cluster/", "common/"}),
    ("distribute/rendezvous/", {"distribute/rendezvous/", "common/"}),
    ("distribute/collective/", {"distribute/collective/", "distribute/rendezvous/", "common/"}),
    ("distribute/optimizer/", {"distribute/optimizer/", "kernels/", "common/"}),
    ("distribute/elastic/", {"distribute/elastic/", "distribute/collective/", "distribute/rendezvous/", "common/"}),
    ("distribute/", {"distribute/", "common/"}),
    ("estimator/", {"estimator/", "distribute/", "checkpoint/", "data/", "common/"}),
    ("serving/", {"serving/", "estimator/", "distribute/", "checkpoint/", "data/", "common/"}),
]
# Files that must stay free of what the strategy owns.
FORBIDDEN = {
    "estimator/training_loop.cc": ("distribute/collective/", "distribute/rendezvous/",
                                   "distribute/gradient_reducer.h"),
}
# The training loop (estimator/training_*.cc) hands a lost worker to the strategy's elastic group
# (distribute/elastic/): it re-forms no group and moves no state between workers itself.
TRAINING_LOOP = re.compile(r"^estimator/training_[a-z_]+\.(cc|h)$")
GROUP_MECHANICS = re.compile(r"\b(regroup|broadcast\w*|sum_across_workers)\s*\(")
INCLUDE = re.compile(r'^#include "([^"]+)"', re.M)
# Vector intrinsics: the kernels' own, and the checksums' and 16-bit conversions' below them.
INTRINSICS = re.compile(r"<immintrin\.h>|\b_mm(256|512)?_[a-z0-9_]+\(")
INTRINSICS_ALLOWED = ("kernels/", "common/crc32c.cc", "distribute/collective/kernels_16_bit.cc")
KERNELS_GUARD = "#if EST_WITH_KERNELS"


def kernels_includes_outside_guard(text: str) -> list:
    """The kernels/ headers `text` includes outside an `#if EST_WITH_KERNELS` block."""
    outside, depth, guarded = [], 0, []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#if"):
            depth += 1
            guarded.append(stripped.startswith(KERNELS_GUARD))
        elif stripped.startswith("#endif") and depth:
            depth -= 1
            guarded.pop()
        elif stripped.startswith('#include "kernels/') and not any(guarded):
            outside.append(stripped.split('"')[1])
    return outside


def main() -> int:
    root = pathlib.Path(sys.argv[1]).resolve()
    errors = []
    checked = 0
    for path in sorted(root.glob("*/**/*")):
        if path.suffix not in (".h", ".cc", ".cu") or not path.is_file():
            continue
        name = path.relative_to(root).as_posix()
        if name.startswith(("build", "tests/", "examples/")):
            continue
        text = path.read_text(encoding="utf-8")
        if not name.startswith(INTRINSICS_ALLOWED) and INTRINSICS.search(text):
            errors.append(f"{name} uses vector intrinsics: they belong in kernels/ (optional, EST_WITH_KERNELS)")
        if not name.startswith("kernels/"):
            for included in kernels_includes_outside_guard(text):
                errors.append(f"{name} includes {included} outside #if EST_WITH_KERNELS: the kernels are optional")
        if TRAINING_LOOP.match(name):
            for call in sorted(set(GROUP_MECHANICS.findall(text))):
                errors.append(f"{name} calls {call}(): the elastic group re-forms the training group "
                              "(distribute/elastic/elastic_group.h), not the training loop")
        folder = next((entry for entry in ALLOWED if name.startswith(entry[0])), None)
        if folder is None:
            continue
        for included in INCLUDE.findall(text):
            checked += 1
            if included.endswith("_impl.h") and not included.startswith(folder[0]):
                errors.append(f"{name} includes {included}: a folder's *_impl.h is private to it")
            if not any(included.startswith(allowed) for allowed in folder[1]):
                errors.append(f"{name} includes {included}: {folder[0]} may include only "
                              + ", ".join(sorted(folder[1])))
            for forbidden in FORBIDDEN.get(name, ()):
                if included.startswith(forbidden):
                    errors.append(f"{name} includes {included}: the strategy owns it (StepSync)")
    for error in errors:
        print(error)
    if checked < 100:
        errors.append(f"only {checked} includes checked; is {root} the repository?")
        print(errors[-1])
    if not errors:
        print(f"ok: {checked} includes point one way")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
