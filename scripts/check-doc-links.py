#!/usr/bin/env python3
"""Checks the relative links of the documentation: README.md, CONTRIBUTING.md, SECURITY.md and
docs/*.md.

Every link `[text](path)`, `[text](path#anchor)` or `[text](#anchor)` (and every reference
definition `[label]: path`) that is not a URL with a scheme must name a file or directory that
exists, relative to the page; an anchor must be one of the headings of the page it points at,
spelled as GitHub makes them (lower case, punctuation dropped, spaces as hyphens, `-1`, `-2`, …
for a heading repeated). Links inside code blocks and code spans are not links and are skipped.

    scripts/check-doc-links.py          # from anywhere; exit 1 and one line per broken link

Python 3, standard library only.
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = ["README.md", "CONTRIBUTING.md", "SECURITY.md", "docs/*.md"]

INLINE_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s{0,3}(```|~~~)")


def prose_lines(text):
    """(line number, line) of the lines outside fenced code blocks."""
    fence = None
    for number, line in enumerate(text.splitlines(), start=1):
        match = FENCE.match(line)
        if match:
            if fence is None:
                fence = match.group(1)
            elif match.group(1) == fence:
                fence = None
            continue
        if fence is None:
            yield number, line


def heading_text(markdown):
    """A heading as GitHub reads it for its anchor: a link's text in place of the link."""
    return re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", markdown)


def slug(heading):
    """GitHub's anchor of a heading: lower case, anything but letters, digits, spaces, `-` and
    `_` dropped, spaces as hyphens."""
    text = heading_text(heading).strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors(path, cache={}):
    """Every anchor of a Markdown page."""
    if path not in cache:
        seen = {}
        found = set()
        for _, line in prose_lines(path.read_text(encoding="utf-8")):
            match = HEADING.match(line)
            if not match:
                continue
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
        cache[path] = found
    return cache[path]


def links(text):
    """(line number, target) of every link outside code."""
    for number, line in prose_lines(text):
        line = CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)
        for match in INLINE_LINK.finditer(line):
            yield number, match.group(1)
        match = REFERENCE_DEFINITION.match(line)
        if match:
            yield number, match.group(1)


def problems(page):
    text = page.read_text(encoding="utf-8")
    for number, target in links(text):
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):  # https:, mailto:, …
            continue
        path_part, _, anchor = target.partition("#")
        where = f"{page.relative_to(ROOT)}:{number}: {target}"
        linked = (page.parent / path_part).resolve() if path_part else page
        if not linked.exists():
            yield f"{where}: no file {path_part}"
            continue
        if anchor:
            if linked.is_dir() or linked.suffix.lower() != ".md":
                yield f"{where}: an anchor into {path_part}, which is not a Markdown page"
            elif anchor not in anchors(linked):
                yield f"{where}: {linked.relative_to(ROOT)} has no heading with the anchor #{anchor}"


def main():
    pages = sorted({path for pattern in PAGES for path in ROOT.glob(pattern)})
    found = [problem for page in pages for problem in problems(page)]
    for problem in found:
        print(problem)
    checked = ", ".join(str(page.relative_to(ROOT)) for page in pages)
    if found:
        print(f"{len(found)} broken link(s) in {checked}")
        return 1
    print(f"documentation links: ok ({checked})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
