#!/usr/bin/env python3
"""Checks the user-facing docs (README.md, docs/, models/README.md, bench/results/README.md):
no issue numbers and no paths outside the repository (a reader of the repository cannot follow
them), and every relative Markdown link points at a file that exists.
Usage: check_docs_references.py REPO"""
import os
import re
import sys

repo = sys.argv[1]
files = ["README.md", "models/README.md", "bench/results/README.md"]
for root, _, names in os.walk(os.path.join(repo, "docs")):
    files += [os.path.relpath(os.path.join(root, n), repo) for n in names if n.endswith(".md")]

FORBIDDEN = [
    (re.compile(r"\bissues? ?#?[0-9]+", re.I), "an issue number"),
    (re.compile(r"\bthe issue's\b", re.I), "a reference to an issue"),
    (re.compile(r"\.\./shared\b"), "a path outside the repository"),
    (re.compile(r"(?<![\w.])/work/"), "a path outside the repository"),
]
LINK = re.compile(r"\]\(([^)\s]+)\)")
failures = []
for rel in sorted(files):
    path = os.path.join(repo, rel)
    if not os.path.exists(path):
        continue
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            for pattern, what in FORBIDDEN:
                m = pattern.search(line)
                if m:
                    failures.append(f"{rel}:{lineno}: {what}: '{m.group(0)}'")
            for target in LINK.findall(line):
                if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                    continue
                file_part = target.split("#", 1)[0]
                if not os.path.exists(os.path.normpath(os.path.join(os.path.dirname(path), file_part))):
                    failures.append(f"{rel}:{lineno}: broken link '{target}'")
for f in failures:
    print("FAIL", f)
print(f"check_docs_references: {len(files)} files, {len(failures)} problems")
sys.exit(1 if failures else 0)
