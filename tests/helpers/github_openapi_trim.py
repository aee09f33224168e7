#!/usr/bin/env python3
"""github_openapi_trim.py - the part of GitHub's OpenAPI description that
github_server.py uses, cached: its operations (github_server.OPS) and every
component they reference, directly or through other components, plus the
examples the server builds its answers from (github_server.EXAMPLES).

    python3 github_openapi_trim.py FULL [DIR]

prints the path of DIR/api.github.com.trimmed-KEY.json (DIR defaults to
FULL's directory), writing it first when it is not there.  KEY is a hash of
FULL, this script and the operations and examples asked for, so a new
description or a new endpoint in the server makes a new file.  The file is
written under a temporary name and renamed, so runs sharing DIR never read
half of one.

Why: the full description is 13 MB; json.load() of it and the server's
"nullable" pass cost ~1 CPU-s, once per server start (each test of
tests/pr-review.bats starts one).  The trimmed one is a few hundred KB.

Why it checks exactly what the full one does: a JSON Schema validator only
ever reads the schema it is given and what its $refs reach, and every $ref
in the description is a local "#/components/KIND/NAME"; the closure over
those refs from the operations is therefore all a check can touch.  A $ref
of any other form is refused (exit 1) rather than trimmed on a guess.
"""

import hashlib
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import github_server  # noqa: E402  (OPS and EXAMPLES: what the server reads)

REF = re.compile(r"#/components/([^/]+)/([^/]+)\Z")


def refs(node, out):
    """Append every $ref under node (a parsed JSON value) to out."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                out.append(v)
            else:
                refs(v, out)
    elif isinstance(node, list):
        for v in node:
            refs(v, out)


def trim(doc, ops, examples):
    """The description doc with only the operations ops ([(METHOD, PATH)])
    and the components reachable from them and from examples (names in
    components/examples).  Raises ValueError on a $ref it cannot follow."""
    paths = {}
    for method, path in ops:
        paths.setdefault(path, {})[method.lower()] = doc["paths"][path][method.lower()]
    comps = {}
    todo = []
    refs(paths, todo)
    todo.extend("#/components/examples/" + name for name in examples)
    while todo:
        ref = todo.pop()
        m = REF.match(ref)
        if not m:
            raise ValueError("a $ref that is not #/components/KIND/NAME: " + ref)
        kind, name = m.groups()
        name = name.replace("~1", "/").replace("~0", "~")
        if name in comps.get(kind, {}):
            continue
        node = doc["components"][kind][name]
        comps.setdefault(kind, {})[name] = node
        refs(node, todo)
    return {"openapi": doc["openapi"], "info": doc["info"], "paths": paths, "components": comps}


def main(argv):
    if len(argv) not in (2, 3):
        print("usage: github_openapi_trim.py FULL [DIR]", file=sys.stderr)
        return 2
    full = argv[1]
    outdir = argv[2] if len(argv) == 3 else os.path.dirname(os.path.abspath(full))
    ops = sorted({(m, oapath) for m, _, oapath, _ in github_server.OPS})
    examples = sorted(github_server.EXAMPLES)
    h = hashlib.sha256()
    with open(full, "rb") as f:
        raw = f.read()
    h.update(raw)
    with open(os.path.abspath(__file__), "rb") as f:
        h.update(f.read())
    h.update(json.dumps([ops, examples]).encode())
    out = os.path.join(outdir, "api.github.com.trimmed-%s.json" % h.hexdigest()[:16])
    if not os.path.exists(out):
        try:
            small = trim(json.loads(raw), ops, examples)
        except (KeyError, ValueError) as e:
            print("github_openapi_trim: %s: not in the description or not followed: %s" % (full, e), file=sys.stderr)
            return 1
        fd, tmp = tempfile.mkstemp(dir=outdir, prefix=".trimmed-")
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(small, f)
        os.replace(tmp, out)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
