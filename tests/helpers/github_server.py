#!/usr/bin/env python3
"""github_server.py - a loopback GitHub REST server for forge-review --pr
(tests/pr-review.bats): just the endpoints Forge uses, written from GitHub's
published OpenAPI description (@octokit/openapi, scripts/github-openapi).

    python3 github_server.py --port-file FILE --config FILE [--openapi FILE]

config (JSON): {"owner", "repo", "token", "page_size" (default 30),
"pulls": {"N": {"repo_dir", "base_ref"}}} -- the pull request's base and head
are the commits repo_dir's refs/heads/BASE_REF and refs/pull/N/head name,
and its diff (git diff base...head) says which lines a comment may be on
(side RIGHT: a line inside a hunk), as GitHub answers 422 otherwise.

Endpoints (each needs "Authorization: Bearer TOKEN", else 401):
    GET   /repos/O/R/pulls/N                          pulls/get
    GET   /repos/O/R/pulls/N/comments                 pulls/list-review-comments (paged, Link)
    GET   /repos/O/R/pulls/N/reviews                  pulls/list-reviews (paged, Link)
    POST  /repos/O/R/pulls/N/reviews                  pulls/create-review
    PUT   /repos/O/R/pulls/N/reviews/ID               pulls/update-review
    PUT   /repos/O/R/pulls/N/reviews/ID/dismissals    pulls/dismiss-review (422 unless the
                                                      review is APPROVED or CHANGES_REQUESTED)
    PATCH /repos/O/R/pulls/comments/ID                pulls/update-review-comment
    POST  /repos/O/R/pulls/N/comments/ID/replies      pulls/create-reply-for-review-comment

With --openapi, each request body is validated against its operation's
request schema and each answer against the response schema of its status
(OpenAPI 3.0 "nullable" read as JSON Schema's null type); a request that does
not validate is answered 422, and every failure is kept in the violations
list.  Answers are built from the description's own examples
(components/examples) with the fields that matter set.

Control (no token needed):
    GET  /_gh/state        {"reviews", "comments", "dismissals": {ID: MESSAGE},
                            "requests": [[METHOD, PATH], ...], "violations"}
    POST /_gh/fault        {"method", "path" (regex), "status", "headers", "count", "message",
                            "errors"}: the next count matching requests get that answer (a
                           rate limit; "message" replaces the secondary rate limit's;
                           "errors", when given, is the answer's errors list as a 422's)
    POST /_gh/reset        CONFIG (as --config's): forget every review, comment,
                           dismissal, request, violation and fault and serve CONFIG
                           from now on, as a new server would (the description is
                           kept: one server serves a bats file's tests one by one)
"""

import argparse
import copy
import json
import os
import re
import subprocess
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

OPS = [
    ("GET", r"/repos/([^/]+)/([^/]+)/pulls/(\d+)", "/repos/{owner}/{repo}/pulls/{pull_number}", "get"),
    ("GET", r"/repos/([^/]+)/([^/]+)/pulls/(\d+)/comments", "/repos/{owner}/{repo}/pulls/{pull_number}/comments", "comments"),
    ("GET", r"/repos/([^/]+)/([^/]+)/pulls/(\d+)/reviews", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews", "reviews"),
    ("POST", r"/repos/([^/]+)/([^/]+)/pulls/(\d+)/reviews", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews", "create_review"),
    ("PUT", r"/repos/([^/]+)/([^/]+)/pulls/(\d+)/reviews/(\d+)", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}", "update_review"),
    ("PUT", r"/repos/([^/]+)/([^/]+)/pulls/(\d+)/reviews/(\d+)/dismissals",
     "/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/dismissals", "dismiss_review"),
    ("PATCH", r"/repos/([^/]+)/([^/]+)/pulls/comments/(\d+)", "/repos/{owner}/{repo}/pulls/comments/{comment_id}", "update_comment"),
    ("POST", r"/repos/([^/]+)/([^/]+)/pulls/(\d+)/comments/(\d+)/replies",
     "/repos/{owner}/{repo}/pulls/{pull_number}/comments/{comment_id}/replies", "reply"),
]

# the description's components/examples the answers are built from
# (OPS and EXAMPLES are all github_openapi_trim.py keeps of the description)
EXAMPLES = ("pull-request", "pull-request-review", "pull-request-review-comment")


def nullable(s):
    """OpenAPI 3.0 schema -> JSON Schema: nullable: true becomes a null alternative."""
    if isinstance(s, list):
        return [nullable(x) for x in s]
    if not isinstance(s, dict):
        return s
    s = {k: nullable(v) for k, v in s.items() if k not in ("example", "examples", "discriminator")}
    if s.pop("nullable", False):
        return {"anyOf": [s, {"type": "null"}]}
    return s


class Spec:
    def __init__(self, path):
        import jsonschema  # only with --openapi
        self.jsonschema = jsonschema
        with open(path, encoding="utf-8") as f:
            self.doc = json.load(f)
        self.components = {"schemas": nullable(self.doc["components"]["schemas"])}
        self.examples = self.doc["components"]["examples"]

    def op(self, path, method):
        return self.doc["paths"][path][method.lower()]

    def check(self, schema, value):
        """Error messages of value against an OpenAPI schema (empty when valid)."""
        root = {"allOf": [nullable(schema)], "components": self.components}
        v = self.jsonschema.Draft7Validator(root)
        return ["%s at %s" % (e.message[:200], "/".join(str(p) for p in e.absolute_path))
                for e in v.iter_errors(value)][:5]

    def request_schema(self, path, method):
        rb = self.op(path, method).get("requestBody")
        return rb and rb["content"]["application/json"]["schema"]

    def response_schema(self, path, method, status):
        r = self.op(path, method)["responses"].get(str(status))
        if r is None:
            return None
        if "$ref" in r:
            r = self.doc["components"]["responses"][r["$ref"].split("/")[-1]]
        c = r.get("content", {}).get("application/json")
        return c and c["schema"]

    def example(self, name):
        return copy.deepcopy(self.examples[name]["value"])


# Minimal answers when no description is at hand (npm absent).
FALLBACK = {
    "pull-request": {"url": "", "id": 1, "number": 1, "state": "open", "head": {}, "base": {}, "user": {"login": "octocat"}},
    "pull-request-review": {"id": 1, "user": {"login": "forge"}, "body": "", "state": "COMMENTED"},
    "pull-request-review-comment": {"id": 1, "body": "", "path": "", "user": {"login": "forge"}},
}


class State:
    def __init__(self, cfg, spec):
        self.spec = spec
        self.lock = threading.Lock()
        self.reset(cfg)

    def reset(self, cfg):
        """Forget everything but the description: a new server for cfg."""
        self.cfg = cfg
        self.reviews = []
        self.comments = []
        self.requests = []
        self.violations = []
        self.dismissals = {}
        self.faults = []
        self.next_id = 1000

    def new_id(self):
        self.next_id += 1
        return self.next_id

    def example(self, name):
        if self.spec:
            return self.spec.example(name)
        return copy.deepcopy(FALLBACK[name])


def git(repo, *args):
    return subprocess.run(["git", "-C", repo] + list(args), check=True, capture_output=True, text=True).stdout


def pull_info(cfg, n):
    p = cfg["pulls"][str(n)]
    repo = p["repo_dir"]
    base = git(repo, "rev-parse", "refs/heads/" + p.get("base_ref", "main")).strip()
    head = git(repo, "rev-parse", "refs/pull/%s/head" % n).strip()
    return repo, p.get("base_ref", "main"), base, head


def diff_lines(repo, base, head):
    """{path: set(new-side line numbers inside a hunk)} of git diff base...head."""
    out = git(repo, "diff", "-U3", "--no-color", "%s...%s" % (base, head))
    lines, path = {}, None
    for l in out.splitlines():
        if l.startswith("+++ "):
            path = l[6:] if l.startswith("+++ b/") else None
        m = re.match(r"@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", l)
        if m and path:
            start, count = int(m.group(1)), int(m.group(2) or "1")
            lines.setdefault(path, set()).update(range(start, start + count))
    return lines


def make_handler(st):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            pass

        def send(self, code, obj, headers=None, schema_of=None):
            if st.spec and schema_of and obj is not None:
                schema = st.spec.response_schema(schema_of[0], schema_of[1], code)
                if schema is None:
                    st.violations.append("%s %s: status %d is not in the description" % (schema_of[1], schema_of[0], code))
                else:
                    for e in st.spec.check(schema, obj):
                        st.violations.append("answer to %s %s (%d): %s" % (schema_of[1], schema_of[0], code, e))
            body = b"" if obj is None else json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def handle_any(self, method):
            url = urllib.parse.urlsplit(self.path)
            n = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(n) if n else b""
            if url.path.startswith("/_gh/"):
                return self.control(method, url.path, raw)
            with st.lock:
                st.requests.append([method, url.path])
                if self.headers.get("Authorization") != "Bearer " + st.cfg["token"]:
                    return self.send(401, {"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"})
                for f in st.faults:
                    if f["count"] > 0 and f["method"] == method and re.fullmatch(f["path"], url.path):
                        f["count"] -= 1
                        ans = {"message": f.get("message", "You have exceeded a secondary rate limit."),
                               "documentation_url": "https://docs.github.com/rest"}
                        if "errors" in f:
                            ans["errors"] = f["errors"]
                        return self.send(f["status"], ans, f.get("headers"))
                for m, rx, oapath, name in OPS:
                    g = re.fullmatch(rx, url.path)
                    if m == method and g:
                        if (g.group(1), g.group(2)) != (st.cfg["owner"], st.cfg["repo"]):
                            return self.send(404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"})
                        body = None
                        if raw:
                            try:
                                body = json.loads(raw)
                            except ValueError:
                                return self.send(400, {"message": "Problems parsing JSON"})
                        if st.spec and method != "GET":
                            schema = st.spec.request_schema(oapath, method)
                            errs = st.spec.check(schema, body) if schema else ["no request body in the description"]
                            if errs:
                                st.violations.extend("request %s %s: %s" % (method, oapath, e) for e in errs)
                                return self.send(422, {"message": "Invalid request", "errors": errs})
                        q = urllib.parse.parse_qs(url.query)
                        return getattr(self, "op_" + name)((oapath, method.lower()), g.groups()[2:], body, q)
                return self.send(404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"})

        def control(self, method, path, raw):
            with st.lock:
                if method == "GET" and path == "/_gh/state":
                    return self.send(200, {"reviews": st.reviews, "comments": st.comments,
                                           "dismissals": st.dismissals, "requests": st.requests,
                                           "violations": st.violations})
                if method == "POST" and path == "/_gh/fault":
                    st.faults.append(json.loads(raw))
                    return self.send(200, {})
                if method == "POST" and path == "/_gh/reset":
                    st.reset(json.loads(raw))
                    return self.send(200, {})
            return self.send(404, {"message": "no such control"})

        def paged(self, oapath, items, q):
            size = min(int(q.get("per_page", ["30"])[0]), st.cfg.get("page_size", 30))
            page = int(q.get("page", ["1"])[0])
            chunk = items[(page - 1) * size: page * size]
            headers = {}
            if page * size < len(items):
                host = "http://%s:%d" % self.server.server_address[:2]
                nxt = "%s%s?per_page=%d&page=%d" % (host, urllib.parse.urlsplit(self.path).path, size, page + 1)
                headers["Link"] = '<%s>; rel="next", <%s>; rel="last"' % (nxt, nxt)
            return self.send(200, chunk, headers, oapath)

        def review_obj(self, n, body, event, commit):
            r = st.example("pull-request-review")
            r.update({"id": st.new_id(), "body": body, "commit_id": commit,
                      "state": {"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED"}.get(event, "COMMENTED")})
            r["node_id"] = "PRR_%d" % r["id"]
            return r

        def comment_obj(self, n, c, review_id, reply_to=None):
            o = st.example("pull-request-review-comment")
            o.update({"id": st.new_id(), "body": c["body"], "path": c.get("path", ""), "pull_request_review_id": review_id})
            o["node_id"] = "PRRC_%d" % o["id"]
            if c.get("line") is not None:
                o.update({"line": c["line"], "original_line": c["line"], "side": c.get("side", "RIGHT")})
            if reply_to is not None:
                o["in_reply_to_id"] = reply_to
            else:
                o.pop("in_reply_to_id", None)
            return o

        def op_get(self, oapath, ids, body, q):
            n = ids[0]
            if str(n) not in st.cfg["pulls"]:
                return self.send(404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}, None, oapath)
            _, base_ref, base, head = pull_info(st.cfg, n)
            p = st.example("pull-request")
            p["number"] = int(n)
            p["head"]["sha"], p["base"]["sha"], p["base"]["ref"] = head, base, base_ref
            p["head"]["ref"] = "feature"
            # the description's own example lacks requested_teams[].type, which its schema requires
            p["requested_teams"] = []
            return self.send(200, p, None, oapath)

        def op_comments(self, oapath, ids, body, q):
            return self.paged(oapath, st.comments, q)

        def op_reviews(self, oapath, ids, body, q):
            return self.paged(oapath, st.reviews, q)

        def op_create_review(self, oapath, ids, body, q):
            n = ids[0]
            repo, _, base, head = pull_info(st.cfg, n)
            valid = diff_lines(repo, base, head)
            for c in body.get("comments", []):
                if c.get("line") not in valid.get(c.get("path"), set()) or c.get("side", "RIGHT") != "RIGHT":
                    return self.send(422, {"message": "Unprocessable Entity",
                                           "errors": ["Line could not be resolved"],
                                           "documentation_url": "https://docs.github.com/rest"}, None, oapath)
            if body.get("event") in ("REQUEST_CHANGES", "COMMENT") and not body.get("body"):
                return self.send(422, {"message": "Body is required", "documentation_url": "https://docs.github.com/rest"}, None, oapath)
            r = self.review_obj(n, body.get("body", ""), body.get("event"), body.get("commit_id", head))
            st.reviews.append(r)
            for c in body.get("comments", []):
                st.comments.append(self.comment_obj(n, c, r["id"]))
            return self.send(200, r, None, oapath)

        def op_update_review(self, oapath, ids, body, q):
            for r in st.reviews:
                if r["id"] == int(ids[1]):
                    r["body"] = body["body"]
                    return self.send(200, r, None, oapath)
            return self.send(404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}, None, oapath)

        def op_dismiss_review(self, oapath, ids, body, q):
            for r in st.reviews:
                if r["id"] == int(ids[1]):
                    if r["state"] not in ("APPROVED", "CHANGES_REQUESTED"):
                        return self.send(422, {"message": "Can not dismiss a %s pull request review" % r["state"].lower(),
                                               "documentation_url": "https://docs.github.com/rest"}, None, oapath)
                    r["state"] = "DISMISSED"
                    st.dismissals[str(r["id"])] = body["message"]
                    return self.send(200, r, None, oapath)
            return self.send(404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}, None, oapath)

        def op_update_comment(self, oapath, ids, body, q):
            for c in st.comments:
                if c["id"] == int(ids[0]):
                    c["body"] = body["body"]
                    return self.send(200, c, None, oapath)
            return self.send(404, {"message": "Not Found"})

        def op_reply(self, oapath, ids, body, q):
            n, cid = ids[0], int(ids[1])
            for c in st.comments:
                if c["id"] == cid:
                    o = self.comment_obj(n, {"body": body["body"], "path": c["path"], "line": c.get("line")},
                                         c.get("pull_request_review_id"), cid)
                    st.comments.append(o)
                    return self.send(201, o, {"Location": "https://api.github.com/x"}, oapath)
            return self.send(404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}, None, oapath)

        def do_GET(self):
            self.handle_any("GET")

        def do_POST(self):
            self.handle_any("POST")

        def do_PUT(self):
            self.handle_any("PUT")

        def do_PATCH(self):
            self.handle_any("PATCH")

    return Handler


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--openapi")
    a = ap.parse_args()
    with open(a.config, encoding="utf-8") as f:
        cfg = json.load(f)
    spec = Spec(a.openapi) if a.openapi else None
    srv = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(State(cfg, spec)))
    tmp = a.port_file + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(str(srv.server_address[1]))
    os.replace(tmp, a.port_file)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
