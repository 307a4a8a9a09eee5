#!/usr/bin/env python3
"""The README and docs/ keep their shape: the README is at most 200 lines, no line of either
is longer than 100 characters outside tables and code blocks, every relative link points to
a file that exists, and the README's quick start is examples/quickstart/quickstart.cc, byte
for byte. Usage: docs_shape_test.py <repository root>. Exits 1 naming each violation."""

import pathlib
import re
import sys

LINK = re.compile(r"\]\(([^)\s]+)\)")


def check_page(page: pathlib.Path, root: pathlib.Path, errors: list) -> None:
    name = page.relative_to(root)
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
            path = target.split("#", 1)[0]
            if not (page.parent / path).exists():
                errors.append(f"{name}:{number} links to {target}, which does not exist")


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
    for page in [readme] + pages:
        check_page(page, root, errors)
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
