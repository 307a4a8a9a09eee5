#!/usr/bin/env python3
"""The folders' dependencies point one way (docs/architecture.md): every `#include "..."` of
a library folder names only itself or a folder it may depend on, the training loop includes
no collective, reducer or store, the estimator calls no regroup, broadcast or sum across
workers (the elastic group's and the strategy's), the kernels (kernels/, optional) are included only under `#if
EST_WITH_KERNELS`, and no vector intrinsics live outside kernels/ and the few low-level files
listed, no folder includes another's private `*_impl.h`, and no `detail::` symbol crosses a
folder: a header whose declarations are all in a detail namespace is included by its own folder
only, and a `detail::Name` names something of the folder that uses it. Usage: layering_test.py
<repository root>."""

import pathlib
import re
import sys

# Each folder (most specific first) and the folders its sources may include.
ALLOWED = [
    ("common/", {"common/"}),
    ("net/", {"net/", "common/"}),
    ("kernels/", {"kernels/", "common/"}),
    ("data/", {"data/", "common/"}),
    ("checkpoint/", {"checkpoint/", "common/"}),
    ("distribute/cluster/", {"distribute/cluster/", "common/"}),
    ("distribute/rendezvous/", {"distribute/rendezvous/", "net/", "common/"}),
    ("distribute/collective/", {"distribute/collective/", "distribute/rendezvous/", "net/", "common/"}),
    ("distribute/optimizer/", {"distribute/optimizer/", "kernels/", "common/"}),
    ("distribute/elastic/", {"distribute/elastic/", "distribute/collective/", "distribute/rendezvous/", "common/"}),
    ("distribute/", {"distribute/", "net/", "common/"}),
    ("estimator/", {"estimator/", "distribute/", "checkpoint/", "data/", "kernels/", "common/"}),
    ("serving/", {"serving/", "estimator/", "checkpoint/", "data/", "net/", "common/"}),
]
# Files that must stay free of what the strategy owns.
FORBIDDEN = {
    "estimator/training_loop.cc": ("distribute/collective/", "distribute/rendezvous/",
                                   "distribute/gradient_reducer.h"),
}
# The estimator (the training loop above all) hands a lost worker to the strategy's elastic group
# (distribute/elastic/) and reduces through the strategy's reduce(), reduce_across_workers() and
# chief_value(): it re-forms no group and moves no state between workers itself.
ESTIMATOR = re.compile(r"^estimator/.+\.(cc|h)$")
GROUP_MECHANICS = re.compile(r"\b(regroup|broadcast\w*|sum_across_workers)\s*\(")
INCLUDE = re.compile(r'^#include "([^"]+)"', re.M)
# Vector intrinsics: the kernels' own, and the checksums' and 16-bit conversions' below them.
INTRINSICS = re.compile(r"<immintrin\.h>|\b_mm(256|512)?_[a-z0-9_]+\(")
INTRINSICS_ALLOWED = ("kernels/", "common/crc32c.cc", "distribute/collective/kernels_16_bit.cc")
KERNELS_GUARD = "#if EST_WITH_KERNELS"
# A detail namespace's block (the project closes each namespace with a comment naming it), the
# names declared in it, and a qualified use of one.
DETAIL_BLOCK = re.compile(r"^namespace ([\w:]*\bdetail) \{\n(.*?)^\}  // namespace \1\b", re.M | re.S)
DETAIL_TYPE = re.compile(r"\b(?:class|struct|enum class|enum|using)\s+(\w+)")
DETAIL_FUNCTION = re.compile(r"^[A-Za-z][\w:<>,*& ]*?[\s*&](\w+)\(", re.M)
DETAIL_USE = re.compile(r"(?<![\w:])(?:(?:est|distribute|serving|net|data|checkpoint)::)*detail::(\w+)")


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


def folder_of(name: str):
    """The most specific folder of ALLOWED that holds `name`, or the first two parts of its path."""
    entry = next((entry for entry in ALLOWED if name.startswith(entry[0])), None)
    return entry[0] if entry else "/".join(name.split("/")[:2]) + "/"


def detail_declarations(sources: dict) -> tuple:
    """The names each folder declares in detail namespaces, and the headers that declare
    nothing outside one (a folder's private headers)."""
    names, private = {}, set()
    for name, text in sources.items():
        if not name.endswith(".h"):
            continue
        blocks = DETAIL_BLOCK.findall(text)
        for _, body in blocks:
            declared = set(DETAIL_TYPE.findall(body)) | set(DETAIL_FUNCTION.findall(body))
            names.setdefault(folder_of(name), set()).update(declared)
        outside = DETAIL_BLOCK.sub("", text)
        if blocks and not re.search(r"^namespace [\w:]+ \{", outside, re.M):
            private.add(name)
    return names, private


def detail_crossings(name: str, text: str, names: dict, private: set) -> list:
    """The detail symbols of other folders that `name` includes or names."""
    errors, own = [], folder_of(name)
    for included in INCLUDE.findall(text):
        if included in private and folder_of(included) != own:
            errors.append(f"{name} includes {included}, whose declarations are all {folder_of(included)}'s "
                          "detail: move what crosses the folder out of its detail namespace")
    theirs = set().union(*(declared for folder, declared in names.items() if folder != own))
    for used in sorted(set(DETAIL_USE.findall(text))):
        if used in theirs and used not in names.get(own, set()):
            errors.append(f"{name} uses detail::{used} of another folder: a detail symbol stays in its folder")
    return errors


def main() -> int:
    root = pathlib.Path(sys.argv[1]).resolve()
    errors = []
    checked = 0
    sources = {}
    for path in sorted(root.glob("*/**/*")):
        if path.suffix not in (".h", ".cc", ".cu") or not path.is_file():
            continue
        name = path.relative_to(root).as_posix()
        if name.startswith(("build", "tests/", "examples/")):
            continue
        sources[name] = path.read_text(encoding="utf-8")
    detail_names, private_headers = detail_declarations(sources)
    if len(private_headers) < 10:
        errors.append(f"only {len(private_headers)} private detail headers found; is the detail rule reading them?")
        print(errors[-1])
    for name, text in sources.items():
        errors.extend(detail_crossings(name, text, detail_names, private_headers))
        if not name.startswith(INTRINSICS_ALLOWED) and INTRINSICS.search(text):
            errors.append(f"{name} uses vector intrinsics: they belong in kernels/ (optional, EST_WITH_KERNELS)")
        if not name.startswith("kernels/"):
            for included in kernels_includes_outside_guard(text):
                errors.append(f"{name} includes {included} outside #if EST_WITH_KERNELS: the kernels are optional")
        if ESTIMATOR.match(name):
            for call in sorted(set(GROUP_MECHANICS.findall(text))):
                errors.append(f"{name} calls {call}(): the elastic group re-forms the training group "
                              "(distribute/elastic/elastic_group.h) and the strategy reduces "
                              "(reduce_across_workers, chief_value), not the estimator")
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
