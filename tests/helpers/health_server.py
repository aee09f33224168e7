#!/usr/bin/env python3
"""health_server.py - a tiny HTTP service on 127.0.0.1 whose health can be
switched, for forge-deploy's health checks (tests/deploy.bats).  Stdlib only.

    python3 health_server.py --port-file FILE [--mode-file FILE] [--log FILE]

It listens on 127.0.0.1 on a free port and writes the port number to the
port file once it accepts connections.  Every GET (any path but /_health/*)
is answered by the current mode:

    healthy      200 "ok"                         (the default)
    500          500 "unhealthy"
    slow[:MS]    wait MS milliseconds (default 2000), then 200 "ok"

The mode is the first word of the mode file (read on every request, so a
deploy or rollback command can switch it: `echo 500 > FILE`), or what
POST /_health/mode?set=MODE last set when there is no mode file.  A missing
or empty mode file means healthy.  GET /_health/mode prints the mode;
GET /_health/hits the number of requests answered.  With --log every request
is appended to the log as "METHOD PATH STATUS".
"""

import argparse
import os
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class State:
    def __init__(self, mode_file, log):
        self.mode_file = mode_file
        self.log = log
        self.mode = "healthy"
        self.hits = 0
        self.lock = threading.Lock()

    def current(self):
        if self.mode_file:
            try:
                with open(self.mode_file, encoding="utf-8") as f:
                    words = f.read().split()
                return words[0] if words else "healthy"
            except FileNotFoundError:
                return "healthy"
        return self.mode


def make_handler(state):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, fmt, *args):  # quiet
            pass

        def reply(self, code, text):
            body = (text + "\n").encode()
            self.send_response(code)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)
            if state.log:
                with state.lock, open(state.log, "a", encoding="utf-8") as f:
                    f.write(f"{self.command} {self.path} {code}\n")

        def do_GET(self):
            url = urllib.parse.urlparse(self.path)
            if url.path == "/_health/mode":
                return self.reply(200, state.current())
            if url.path == "/_health/hits":
                return self.reply(200, str(state.hits))
            with state.lock:
                state.hits += 1
            mode = state.current()
            if mode == "500":
                return self.reply(500, "unhealthy")
            if mode.startswith("slow"):
                ms = 2000
                if ":" in mode:
                    try:
                        ms = int(mode.split(":", 1)[1])
                    except ValueError:
                        pass
                time.sleep(ms / 1000)
            return self.reply(200, "ok")

        def do_POST(self):
            url = urllib.parse.urlparse(self.path)
            if url.path != "/_health/mode":
                return self.reply(404, "not found")
            mode = urllib.parse.parse_qs(url.query).get("set", ["healthy"])[0]
            if state.mode_file:
                with open(state.mode_file, "w", encoding="utf-8") as f:
                    f.write(mode + "\n")
            state.mode = mode
            return self.reply(200, mode)

    return Handler


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--mode-file")
    ap.add_argument("--log")
    args = ap.parse_args()
    state = State(args.mode_file, args.log)
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(state))
    server.daemon_threads = True
    tmp = args.port_file + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(f"{server.server_address[1]}\n")
    os.replace(tmp, args.port_file)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
