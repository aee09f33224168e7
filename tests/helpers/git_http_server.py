#!/usr/bin/env python3
"""git_http_server.py - git's smart HTTP protocol on loopback, behind Basic auth.

    python3 git_http_server.py --root DIR --user NAME --password-file FILE --log FILE

Serves the repositories under DIR (http://127.0.0.1:PORT/NAME.git) by running
`git http-backend` as a CGI program for each request, as a web server in front
of git does (GIT_PROJECT_ROOT, GIT_HTTP_EXPORT_ALL, REMOTE_USER; chunked
request bodies decoded, as libgit2 sends a push).  Every request must carry
Basic credentials NAME and the password in FILE: without them, or with others,
the answer is 401 with `WWW-Authenticate: Basic realm="forge-test"`, as a git
host asks a client for a credential.

It listens on 127.0.0.1 on a free port, then forks: the parent prints
"PORT PID" on stdout and exits, so `read PORT PID < <(python3 ...)` returns
once the server accepts connections (no polling).  Each request is one line
of the log: "METHOD PATH STATUS user=NAME|none|wrong" (never a password).
Stop it with kill PID.
"""
import argparse
import base64
import os
import subprocess
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--root", required=True)
    p.add_argument("--user", required=True)
    p.add_argument("--password-file", required=True)
    p.add_argument("--log", required=True)
    return p.parse_args()


ARGS = parse_args()


class Handler(BaseHTTPRequestHandler):
    def log_message(self, fmt, *args):
        pass

    def note(self, status, who):
        with open(ARGS.log, "a") as f:
            f.write("%s %s %d user=%s\n" % (self.command, self.path, status, who))

    def who(self):
        """The user when the request's Basic credentials are right, else
        'none' (no credentials) or 'wrong'."""
        h = self.headers.get("Authorization", "")
        if not h.startswith("Basic "):
            return "none"
        try:
            user, _, password = base64.b64decode(h[6:]).decode().partition(":")
        except ValueError:
            return "wrong"
        with open(ARGS.password_file) as f:
            expected = f.read().strip()
        return user if user == ARGS.user and password == expected else "wrong"

    def body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length", "0") or 0)
        return self.rfile.read(n) if n else b""

    def serve(self):
        data = self.body() if self.command == "POST" else b""
        user = self.who()
        if user in ("none", "wrong"):
            self.note(401, user)
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="forge-test"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        path, _, query = self.path.partition("?")
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": ARGS.root,
            "GIT_HTTP_EXPORT_ALL": "1",
            "REQUEST_METHOD": self.command,
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(data)),
            "REMOTE_USER": user,
            "REMOTE_ADDR": "127.0.0.1",
            "GATEWAY_INTERFACE": "CGI/1.1",
            "SERVER_PROTOCOL": "HTTP/1.0",
        }
        for h, v in (("Content-Encoding", "HTTP_CONTENT_ENCODING"), ("Git-Protocol", "GIT_PROTOCOL")):
            if self.headers.get(h):
                env[v] = self.headers[h]
        r = subprocess.run(["git", "http-backend"], input=data, env=env, capture_output=True)
        head, sep, out = r.stdout.partition(b"\r\n\r\n")
        if not sep:
            head, sep, out = r.stdout.partition(b"\n\n")
        status, headers = 200, []
        for line in head.decode("latin-1").splitlines():
            k, _, v = line.partition(":")
            if k.lower() == "status":
                status = int(v.split()[0])
            elif k:
                headers.append((k, v.strip()))
        self.note(status, user)
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_GET = serve
    do_POST = serve


def main():
    server = HTTPServer(("127.0.0.1", 0), Handler)
    pid = os.fork()
    if pid:
        print(server.server_address[1], pid, flush=True)
        os._exit(0)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
