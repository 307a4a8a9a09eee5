#!/usr/bin/env python3
"""The README and docs/ keep their shape: the README is at most 200 lines and a page of docs/
with a limit of its own (PAGE_LIMITS) at most that, no line of either is longer than 100
characters outside tables and code blocks, every relative link points to a file that exists
(and a #section of a page to one of its headings), every source path in backquotes names a
file or folder that exists (or its `.in` template), every `est-train --flag`, `est-launch
--flag` and `est-serve --flag` in backquotes is a flag of that program, and the README's quick
start is examples/quickstart/quickstart.cc, byte for byte. Usage: docs_shape_test.py
<repository root>. Exits 1 naming each violation."""

import pathlib
import re
import sys

LINK = re.compile(r"\]\(([^)\s]+)\)")
SOURCE_FOLDERS = ("apps", "checkpoint", "cmake", "common", "data", "distribute", "estimator", "examples", "kernels",
                  "serving", "tests")
SOURCE_PATH = re.compile(r"`((?:%s)/[A-Za-z0-9_./-]*)`" % "|".join(SOURCE_FOLDERS))
PROGRAM_FLAGS = re.compile(r"`(est-train|est-launch|est-serve)((?: [^`]*)?)`")
PROGRAM_SOURCES = {"est-train": "apps/est_train", "est-launch": "apps/est_launch", "est-serve": "apps/est_serve"}
# Line limits of single pages of docs/: a page that grows past its limit has taken in what
# belongs elsewhere (lab notes, dated experiments, figures that another page gives).
PAGE_LIMITS = {"performance.md": 150}


def anchor(heading: str) -> str:
    """The #fragment GitHub gives a heading: lower case, spaces to dashes, punctuation dropped."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: pathlib.Path) -> set:
    found, in_code = set(), False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            found.add(anchor(line.lstrip("#")))
    return found


def program_flags(root: pathlib.Path, program: str) -> set:
    text = "".join(path.read_text(encoding="utf-8") for path in (root / PROGRAM_SOURCES[program]).glob("*.cc"))
    return set(re.findall(r'"(--[a-z0-9-]+)', text))


def check_page(page: pathlib.Path, root: pathlib.Path, errors: list) -> None:
    name = page.relative_to(root)
    flags = {program: program_flags(root, program) for program in PROGRAM_SOURCES}
    in_code = False
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
        if line.startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        if not line.startswith("|") and len(line) > 100:
            errors.append(f"{name}:{number} is {len(line)} characters long; at most 100 outside tables and code")
        for target in LINK.findall(line):
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue
            path, _, section = target.partition("#")
            if not (page.parent / path).exists():
                errors.append(f"{name}:{number} links to {target}, which does not exist")
            elif section and path.endswith(".md") and section not in anchors(page.parent / path):
                errors.append(f"{name}:{number} links to {target}, but {path} has no heading #{section}")
        for source in SOURCE_PATH.findall(line):
            source = source.rstrip(".")
            if not (root / source).exists() and not (root / (source + ".in")).exists():
                errors.append(f"{name}:{number} names {source}, which does not exist")
        for program, arguments in PROGRAM_FLAGS.findall(line):
            for flag in re.findall(r"(?<![\w-])(--[a-z0-9-]+)", arguments):
                if flag not in flags[program]:
                    errors.append(f"{name}:{number} names {program} {flag}, which {program} does not take")


def main() -> int:
    root = pathlib.Path(sys.argv[1]).resolve()
    readme = root / "README.md"
    pages = sorted((root / "docs").glob("*.md"))
    errors = []
    if len(pages) < 5:
        errors.append(f"docs/ has {len(pages)} pages; expected the pages the README links to")
    text = readme.read_text(encoding="utf-8")
    length = len(text.splitlines())
    if length > 200:
        errors.append(f"README.md has {length} lines; at most 200 (the rest belongs in docs/)")
    for name in PAGE_LIMITS:
        if not (root / "docs" / name).exists():
            errors.append(f"docs/{name} has a line limit but does not exist; move the limit with the page")
    for page in [readme] + pages:
        check_page(page, root, errors)
        limit = PAGE_LIMITS.get(page.name) if page != readme else None
        page_length = len(page.read_text(encoding="utf-8").splitlines())
        if limit is not None and page_length > limit:
            errors.append(f"docs/{page.name} has {page_length} lines; at most {limit} (move detail to the page "
                          "it belongs to, and lab notes to notes/)")
        if page != readme and f"docs/{page.name}" not in text:
            errors.append(f"README.md does not link to docs/{page.name}")
    match = re.search(r"^```cpp\n(.*?)^```", text, re.S | re.M)
    example = (root / "examples/quickstart/quickstart.cc").read_text(encoding="utf-8")
    if match is None:
        errors.append("README.md has no ```cpp block: the quick start is missing")
    elif match.group(1) != example:
        errors.append("README.md's quick start differs from examples/quickstart/quickstart.cc; copy the file")
    for error in errors:
        print(error)
    if not errors:
        print(f"ok: README.md ({length} lines) and {len(pages)} pages of docs/")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
