#!/usr/bin/env python3
"""mcp_server.py - a scripted MCP stdio server for Forge's tests (faults included).

    mcp_server.py [--protocol V] [--page-size N] [--log FILE] [--tag NAME]
                  [--on-init crash|hang|garbage|huge|string-id] [--stderr TEXT] [--env-out FILE]
                  [--extra-tools FILE] [--pid-out FILE] [--stubborn yes] [--batch yes]
                  [--pager loop|endless]

One JSON-RPC message per line on stdin/stdout (the MCP stdio transport).
Every message received is appended to --log (one JSON line each), so a test
can see notifications/initialized and notifications/cancelled arrive.
--env-out writes the server's environment (NAME=value lines) and its cwd
(a line PWD_IS=...) at its start.  --extra-tools FILE: a JSON array of
more tool definitions listed after these (a call to one: -32602).
--pid-out FILE writes the server's pid and that of a child it starts
(`sleep 300`, in the background), a line each: the pids the test sees (the
server may be in a PID namespace of its own, where getpid() says another).  --stubborn yes: the server
(and its child) ignore SIGTERM, and it stays after its stdin ends; with --log it logs
{"event": "eof"} when its stdin ends and {"event": "sigterm"} for each SIGTERM, with "tag": --tag.
--on-init string-id: initialize is answered with the id as a string ("1" for 1).
--batch yes: every tools/call is answered in a JSON-RPC batch (one line,
an array) of a notifications/message and the answer (MCP 2025-03-26).

--pager loop: the last page's nextCursor is the second page's again (a
pager that goes round); --pager endless: every page has a nextCursor, past
the tools too (empty pages without end).

Tools (tools/list pages of --page-size, default 2, chained by nextCursor):
  echo {text}          -> the text back
  add {a, b}           -> structuredContent {"sum": a+b} and its JSON as text
  fail {}              -> isError with a message
  env {name?}          -> the server's environment (NAME=value lines), or one variable
  hang {}              -> never answers (the client's timeout cancels it)
  crash {}             -> writes to stderr and exits 3 in the middle of the call
  rpc_error {}         -> a JSON-RPC error -32000 ({"null_result": true}: a reply
                          whose result is null, which no MCP result is; {"code": C,
                          "message"?: M}: an error with that code and message, any JSON)
  garbage {}           -> writes a line that is not JSON
  change {}            -> adds the tool `added`, sends notifications/tools/list_changed
  big {bytes}          -> a text of that many 'x'
  ping_me {}           -> sends the client a ping request first, answers after the pong
  added {}             -> exists only after `change`
Not listed, callable all the same:
  block {until}        -> reads nothing more until the file `until` exists, then answers
  len {text}           -> the text's length (a big request with a small answer)
  wrong_id {as}        -> answers with the id as a string ("string"), null with an error
                          ("null"), an object ("object") or none ("none")
  deep {levels}        -> structuredContent {"a": [[...1...]]}, the array `levels` deep, and a text
"""
import json
import os
import signal
import subprocess
import sys
import time

args = sys.argv[1:]
opts = {"protocol": "2025-06-18", "page-size": "2", "log": None, "on-init": None, "stderr": None,
        "env-out": None, "extra-tools": None, "pid-out": None, "stubborn": None,
        "batch": None, "pager": None, "tag": None}
while args:
    k = args.pop(0)
    if not k.startswith("--") or k[2:] not in opts or not args:
        sys.stderr.write("mcp_server.py: bad argument %r\n" % k)
        sys.exit(2)
    opts[k[2:]] = args.pop(0)

TOOLS = [
    {"name": "echo", "description": "Echo the text back.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    {"name": "add", "description": "Add two numbers.",
     "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                     "required": ["a", "b"]},
     "outputSchema": {"type": "object", "properties": {"sum": {"type": "number"}}}},
    {"name": "fail", "description": "Always fails.", "inputSchema": {"type": "object"}},
    {"name": "env", "description": "The server's environment.",
     "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}}},
    {"name": "hang", "description": "Never answers.", "inputSchema": {"type": "object"}},
    {"name": "crash", "description": "Exits mid-call.", "inputSchema": {"type": "object"}},
    {"name": "rpc_error", "description": "A JSON-RPC error.", "inputSchema": {"type": "object"}},
    {"name": "garbage", "description": "Writes garbage.", "inputSchema": {"type": "object"}},
    {"name": "change", "description": "Changes the tool list.", "inputSchema": {"type": "object"}},
    {"name": "big", "description": "A long text.",
     "inputSchema": {"type": "object", "properties": {"bytes": {"type": "integer"}}}},
    {"name": "ping_me", "description": "Pings the client first.", "inputSchema": {"type": "object"}},
]
if opts["extra-tools"]:
    with open(opts["extra-tools"]) as f:
        TOOLS += json.load(f)
CALLS = set()     # the ids of tools/call requests (--batch)
ADDED = {"name": "added", "description": "Added by change.", "inputSchema": {"type": "object"}}


def log(msg):
    if opts["log"]:
        with open(opts["log"], "a") as f:
            f.write(json.dumps(msg) + "\n")


def send(msg):
    msg["jsonrpc"] = "2.0"
    if opts["batch"] and "result" in msg and msg.get("id") in CALLS:
        msg = [{"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "data": "working"}}, msg]
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def result(id_, res):
    send({"id": id_, "result": res})


def text(s):
    return {"content": [{"type": "text", "text": s}]}


def call(id_, name, a):
    if name == "echo":
        result(id_, text(a.get("text", "")))
    elif name == "add":
        s = {"sum": a["a"] + a["b"]}
        result(id_, {"content": [{"type": "text", "text": json.dumps(s)}], "structuredContent": s})
    elif name == "fail":
        result(id_, {"content": [{"type": "text", "text": "the tool failed on purpose"}], "isError": True})
    elif name == "env":
        if a.get("name"):
            result(id_, text(os.environ.get(a["name"], "(unset)")))
        else:
            result(id_, text("\n".join("%s=%s" % kv for kv in sorted(os.environ.items()))))
    elif name == "hang":
        pass
    elif name == "crash":
        sys.stderr.write("mcp_server.py: crashing as asked\n")
        sys.stderr.flush()
        os._exit(3)
    elif name == "rpc_error" and a.get("null_result"):
        send({"id": id_, "result": None})
    elif name == "rpc_error" and "code" in a:
        err = {"code": a["code"]}
        if "message" in a:
            err["message"] = a["message"]
        send({"id": id_, "error": err})
    elif name == "rpc_error":
        send({"id": id_, "error": {"code": -32000, "message": "the server refuses", "data": {"why": "asked to"}}})
    elif name == "garbage":
        sys.stdout.write("this is not json\n")
        sys.stdout.flush()
    elif name == "change":
        if ADDED not in TOOLS:
            TOOLS.append(ADDED)
        send({"method": "notifications/tools/list_changed"})
        result(id_, text("changed"))
    elif name == "big":
        result(id_, text("x" * int(a.get("bytes", 1000))))
    elif name == "ping_me":
        send({"id": "srv-1", "method": "ping"})
        pong = json.loads(sys.stdin.readline())
        log(pong)
        result(id_, text("pong: %s" % json.dumps(pong.get("result"))))
    elif name == "block":
        while not os.path.exists(a["until"]):
            time.sleep(0.01)
        result(id_, text("unblocked"))
    elif name == "len":
        result(id_, text(str(len(a.get("text", "")))))
    elif name == "wrong_id":
        how = a.get("as")
        if how == "null":
            send({"id": None, "error": {"code": -32700, "message": "Parse error"}})
        elif how == "none":
            send({"result": text("no id")})
        else:
            send({"id": str(id_) if how == "string" else {"n": id_}, "result": text("wrong id")})
    elif name == "deep":
        n = int(a.get("levels", 300))
        sys.stdout.write('{"jsonrpc": "2.0", "id": %s, "result": {"content": [{"type": "text", "text": "deep"}], '
                         '"structuredContent": {"a": %s1%s}}}\n' % (json.dumps(id_), "[" * n, "]" * n))
        sys.stdout.flush()
    elif name == "added" and ADDED in TOOLS:
        result(id_, text("the added tool"))
    else:
        send({"id": id_, "error": {"code": -32602, "message": "unknown tool: %s" % name}})


def host_pid():
    """This process's pid in the namespace of /proc (the host's, the test's)."""
    return int(os.readlink("/proc/self"))


def child_of(parent):
    """The pid (as /proc numbers it) of the one child of parent."""
    for d in os.listdir("/proc"):
        try:
            with open("/proc/%s/stat" % d) as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) == parent:
                    return int(d)
        except (OSError, ValueError, IndexError):
            pass
    return -1


def main():
    if opts["stubborn"]:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if opts["pid-out"]:
        child = subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        me = host_pid()
        with open(opts["pid-out"], "w") as f:
            f.write("%d\n%d\n" % (me, child_of(me)))
    if opts["stubborn"] and opts["log"]:
        # (after the child started: it keeps ignoring SIGTERM)
        signal.signal(signal.SIGTERM, lambda sig, frame: log({"event": "sigterm", "tag": opts["tag"]}))
    if opts["env-out"]:
        with open(opts["env-out"], "w") as f:
            for k, v in sorted(os.environ.items()):
                f.write("%s=%s\n" % (k, v))
            f.write("PWD_IS=%s\n" % os.getcwd())
    if opts["stderr"]:
        sys.stderr.write(opts["stderr"] + "\n")
        sys.stderr.flush()
    page = int(opts["page-size"])
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        log(msg)
        method, id_ = msg.get("method"), msg.get("id")
        if method == "initialize":
            how = opts["on-init"]
            if how == "crash":
                sys.stderr.write("mcp_server.py: cannot start: no configuration\n")
                sys.exit(1)
            if how == "hang":
                continue
            if how == "garbage":
                sys.stdout.write("Starting server... done!\n")
                sys.stdout.flush()
                continue
            if how == "huge":
                sys.stdout.write("{\"pad\":\"" + "y" * (1 << 20) + "\"}\n")
                sys.stdout.flush()
                continue
            if how == "string-id":
                id_ = str(id_)
            result(id_, {"protocolVersion": opts["protocol"], "capabilities": {"tools": {"listChanged": True}},
                         "serverInfo": {"name": "scripted", "version": "1.0"},
                         "instructions": "A scripted server for tests."})
        elif method == "tools/list":
            start = int((msg.get("params") or {}).get("cursor") or 0)
            res = {"tools": TOOLS[start:start + page]}
            if start + page < len(TOOLS) or opts["pager"] == "endless":
                res["nextCursor"] = str(start + page)
            elif opts["pager"] == "loop":
                res["nextCursor"] = str(page)
            result(id_, res)
        elif method == "tools/call":
            CALLS.add(id_)
            p = msg.get("params") or {}
            call(id_, p.get("name"), p.get("arguments") or {})
        elif method == "ping":
            result(id_, {})
        elif id_ is not None and method:
            send({"id": id_, "error": {"code": -32601, "message": "method not found"}})
    if opts["stubborn"]:
        log({"event": "eof", "tag": opts["tag"]})
    while opts["stubborn"]:
        time.sleep(1)


main()
