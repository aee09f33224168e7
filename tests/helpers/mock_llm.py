#!/usr/bin/env python3
"""mock_llm.py - a scripted, protocol-true mock of the LLM provider APIs.

Speaks the wire formats of
  Anthropic Messages API   POST /v1/messages            (JSON or SSE "stream": true)
  OpenAI Chat Completions  POST /v1/chat/completions    (JSON or SSE "stream": true)
  OpenAI embeddings        POST /v1/embeddings          (float or base64 encoding_format)
  Ollama embeddings        POST /api/embed
exactly as the real servers do (see /work/shared/reference/llm-wire.md and the
recorded fixtures in llm-wire-fixtures/): same JSON shapes, SSE framing (Anthropic
event:/data: pairs with a ping, no [DONE]; OpenAI data:-only chunks ending in
"data: [DONE]"), error bodies, request-id / x-request-id and rate-limit headers.
It answers from a SCRIPT of steps and can inject faults. Python 3 stdlib only.
Binds 127.0.0.1 only. HTTP/1.1 with keep-alive; SSE uses Transfer-Encoding: chunked.

USAGE
  python3 tests/helpers/mock_llm.py [--script FILE] [--port-file FILE] [--log FILE]
                                    [--port N] [--embed-dim N] [--lenient] [--verbose]

  --script FILE     JSON script of steps (below). Default: no steps (every chat
                    request then gets the "script exhausted" 500).
  --port-file FILE  after listening, the port number is written here atomically
                    (temp file + rename), followed by a newline.
  --log FILE        JSON-lines request log, one line per API request, flushed
                    before the response is sent (appended to).
  --port N          port to bind on 127.0.0.1 (default 0 = a free port).
  --embed-dim N     size of the default embedding vectors (default 64).
  --lenient         do not validate requests (see VALIDATION).
  --verbose         one line per request on stderr.
  SIGTERM / SIGINT stop the server cleanly (exit 0).

  Typical use in bats (start with fd 3 closed, stop by PID):
    python3 tests/helpers/mock_llm.py --script s.json --port-file p --log l.jsonl 3>&- &
    echo $! >pid; until [ -s p ]; do sleep 0.05; done
    base=http://127.0.0.1:$(cat p)   # Anthropic base URL; OpenAI base URL is $base/v1

SCRIPT FORMAT
  A JSON array of steps, or an object {"steps": [...]}. Steps are consumed in
  order: each request takes the FIRST remaining step that matches it, and that
  step is removed (unless "times" says otherwise).

  Matching (all optional):
    "provider": "anthropic" | "openai" | "ollama"   only requests of that API
    "path": "/v1/messages"                          only that exact path
    "kind": "chat" | "embed"                        default "chat"; "embed" is
        implied by an "embeddings" key or an embeddings path. Chat requests only
        take chat steps; embedding requests only take embed steps and, when none
        matches, get deterministic feature-hashed vectors (never "exhausted").
    "times": N | "always"                           serve this step N times
                                                    (default 1) or forever
    "forced_tool": "NAME"                           only requests that force the
        model to call tool NAME (Anthropic tool_choice {"type":"tool","name"},
        OpenAI {"type":"function","function":{"name"}})

  Run reflection (forge-supervisor's Loop 3, app/reflect_run.h): a request
  forcing "record_run_learnings" takes only steps whose "forced_tool" names it,
  and with none left gets the answer {"learnings": []} (logged with "step":
  null, "default": true) - so a script written for the phases needs no step
  for it, and its steps are never taken by it.

  Answer step (normalised form, rendered in the provider's format, streamed or
  not as the request asks):
    {"text": "Hello!",
     "tool_calls": [{"id": "toolu_01...",          (optional; generated if absent)
                     "name": "get_weather",
                     "input": {"city": "Paris"},    (object)
                     "arguments": "{\"city\":"}],   (optional raw JSON text sent
                                                     instead of input, e.g. to
                                                     send broken arguments)
     "thinking": "...",                             (optional; Anthropic only)
     "stop_reason": "end_turn" | "tool_use" | "max_tokens" | "stop_sequence" |
                    "refusal",                      (default: tool_use if there
                                                     are tool calls else end_turn)
     "stop_sequence": "###",                        (with stop_reason stop_sequence)
     "usage": {"input_tokens": 10, "output_tokens": 5,
               "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
     "model": "...", "id": "..."}                   (default: echo the request's
                                                     model; a generated id)
    OpenAI mapping: end_turn/stop_sequence -> "stop", tool_use -> "tool_calls",
    max_tokens -> "length", refusal -> message.refusal = text, finish "stop";
    prompt_tokens = input + cache_read + cache_creation, cached_tokens = cache_read.
    Unknown usage -> estimated from the request (system prompt, tools and
    messages) and answer sizes, 4 characters a token.
  Embedding step: {"embeddings": [[0.1, 0.2], ...]} (one vector per input).

  Conditional step (a choice that depends on the prompt, as a model's would):
    {"when_prompt_contains": "format string is not a constant",
     "then": {answer or fault step}, "else": {answer or fault step},
     "times": N}
    Conditions (all that are given must hold): "when_prompt_contains": TEXT
    or [TEXT, ...] (every one present), "when_prompt_lacks": TEXT or [...]
    (none present), "when_prompt_matches": a Python regex (re.search). The
    prompt is the chat request's text: the system prompt and every message's
    text, tool results and tool-call arguments, one part per line (the same
    for Anthropic and OpenAI requests). The step is taken like any other and
    answers with "then" when the conditions hold, else with "else"; without
    "else" a step whose conditions fail does not match, and the next step is
    tried. "then"/"else" are ordinary steps ("times" only on the outer step);
    the request log says which was used ("branch": "then" | "else").

  Modifiers usable on any step:
    "delay_ms": N          sleep N ms before answering (slow answer / timeouts)
    "wait_file": PATH      answer only once PATH exists (at most 120 s, then
                           answer anyway): a test holds the answer until it has
                           done what must happen while the call is in flight
    "headers": {...}       extra response headers
    "chunk": N             SSE: split text/arguments into N-char pieces
                           (default: words for text, 7 chars for JSON)
    "dribble": N           SSE: write the stream N bytes at a time (tests the
                           client's buffering; may split UTF-8 sequences)
    "pause_after": N       SSE: after N events, wait until "pause_file" exists (at
    "pause_file": PATH     most 120 s) before the rest: a test sees the call in
                           flight with part of its answer sent
    "ping_ms": N           SSE, with pause_after: while paused, a keep-alive every N
                           ms (Anthropic "event: ping", OpenAI ": keep-alive"), as
                           a provider or proxy sends them: bytes keep coming, the
                           answer never does
    "no_done": true        OpenAI SSE: no "data: [DONE]" line; the body ends
                           after the finish_reason (and usage) chunks, as older
                           llama.cpp and TGI servers end it
    "hold_open": true      SSE: after the last event ([DONE] / message_stop)
                           neither end the body nor close: wait (at most 30 s)
                           until the client closes the connection
    "omit_ids": true       tool calls are sent without an "id" (OpenAI: in the
                           message and in every tool_calls delta, as some
                           OpenAI-compatible servers and proxies send them;
                           Anthropic: a malformed tool_use without one)
    "cut_after": N         SSE: close the connection after N events without
                           message_stop / [DONE]; non-streaming: send half the
                           body and close (Content-Length says more)

  Fault steps ({"fault": KIND, ...}); bodies use the provider's real error shape
  (Anthropic {"type":"error","error":{"type","message"},"request_id"}, OpenAI
  {"error":{"message","type","param","code"}}, Ollama {"error":"..."}):
    "rate_limit"      429; "retry_after": "2" (seconds, -> retry-after) and/or
                      "retry_after_ms": 1500 (-> retry-after-ms); neither is sent
                      unless given
    "quota"           429 spend cap / insufficient_quota, no retry-after
                      (Anthropic: rate_limit_error "You have reached your
                      specified API usage limits. ..."; "status": 400 with
                      "type": "invalid_request_error" gives the 400 it also sends)
    "credit"          Anthropic 400 invalid_request_error "Your credit balance is
                      too low to access the Anthropic API. ..."; OpenAI as
                      "quota" (429 insufficient_quota)
    "server_error"    500 api_error / server_error
    "overloaded"      Anthropic 529 overloaded_error; OpenAI 503
    "auth"            401 authentication_error "invalid x-api-key" /
                      invalid_api_key
    "context_length"  400 "prompt is too long: ..." / context_length_exceeded
    "bad_request"     400 invalid_request_error
    "error"           any "status" with given "type", "message", "code", "param"
    "malformed"       200 with a body that is not valid JSON (or, streaming,
                      one data: line that is not valid JSON); "body" overrides
    "stream_error"    200 stream, "error_after" events (default 4; never the
                      last, message_stop / [DONE], however short the answer), then a
                      mid-stream error event (Anthropic "event: error"
                      overloaded_error; OpenAI data: {"error":...} server_error;
                      "type", "message", "code", "param" override them); answer
                      fields give the text sent first
    "cut"             same as an answer with "cut_after" (default: half the events)
    "disconnect"      close the connection without any response
    "raw"             "status", "headers", "body" (string) sent as given;
                      "parts": [[text, count], ...] instead of "body" sends
                      each text count times (a body of any size)
  Fault fields: "status", "message", "type", "code", "param" override the
  defaults; "should_retry": true|false sets x-should-retry (Anthropic errors get
  x-should-retry by default: true for 408/409/429/5xx/529, false otherwise;
  null omits it).

  Example:
    [{"provider": "anthropic", "text": "Hello there!"},
     {"fault": "rate_limit", "retry_after": "1"},
     {"tool_calls": [{"name": "read_file", "input": {"path": "README"}}]},
     {"fault": "cut", "text": "this answer is cut", "cut_after": 4},
     {"path": "/v1/embeddings", "embeddings": [[0.5, 0.5]]}]

  When no step matches a chat request: 500 with the provider's error shape,
  message "mock_llm: script exhausted: ...", x-should-retry: false.

VALIDATION (off with --lenient; never consumes a step)
  Anthropic: no x-api-key/Authorization -> 401; no anthropic-version -> 400;
  body not JSON, or no model/max_tokens/messages -> 400; a tool_use not
  answered by a tool_result in the next message, or a tool_result that
  answers no tool_use of the message before -> 400 with the API's words;
  more than 4 cache_control breakpoints (tools, system blocks, message
  content blocks) -> 400 "A maximum of 4 blocks with cache_control may be
  provided. Found N.".
  OpenAI: no Authorization -> 401; body not JSON or no model/messages (chat),
  model/input (embeddings) -> 400; an assistant message's tool_calls not each
  answered by a following role "tool" message, or a tool message answering
  none -> 400 with the API's words.

CONTROL ENDPOINTS (not logged)
  GET  /_mock/health              200 "ok"
  GET  /_mock/requests            the request log as a JSON array
  GET  /_mock/script              {"remaining": N, "steps": [...]}
  GET  /_mock/stats               {"api_requests": N, "api_seconds": S, "connections": C}:
                                  the API requests served since the start or the last
                                  reset, the time from each one's request line to its
                                  answer's last byte, and the connections they came on
  POST /_mock/script[?replace=1]  append (or replace with) steps: same format
                                  as the script file; returns {"remaining": N}
  POST /_mock/reset               forget steps, models and the in-memory request log
  POST /_mock/models              body {"MODEL": {FIELDS}, ...}: the models the server
                                  says it serves (replaces earlier ones). GET /v1/models
                                  lists them OpenAI-style, each {"id","object":"model",
                                  "created":0,"owned_by":"mock"} plus FIELDS (e.g.
                                  "max_model_len": 8192 as vLLM says it); POST /api/show
                                  {"model": M} answers Ollama-style {"parameters":
                                  "num_ctx N", ...} for a model whose FIELDS have
                                  "num_ctx", else 404 (neither is logged: they are not
                                  model calls)

REQUEST LOG (one JSON object per line; also GET /_mock/requests)
  {"seq": 1, "ts_ms": 1700000000000, "method": "POST", "path": "/v1/messages",
   "query": "", "provider": "anthropic", "headers": {lower-cased; x-api-key and
   authorization are "REDACTED"}, "auth": "present" | "absent",
   "auth_sha256": sha256 hex of the key (x-api-key value or Bearer token) | null,
   "body": parsed JSON (or {"_raw": text} if not JSON), "stream": bool,
   "step": index of the step used (0-based, in load order) | null,
   "branch": "then" | "else" (only when the step was a conditional one),
   "status": the HTTP status sent}
"""

import argparse
import base64
import hashlib
import json
import math
import os
import random
import re
import select
import signal
import socket
import ssl
import struct
import sys
import threading
import time
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

CHAT_PATHS = {"/v1/messages": "anthropic", "/v1/chat/completions": "openai"}
EMBED_PATHS = {"/v1/embeddings": "openai", "/api/embed": "ollama"}
RETRYABLE = {408, 409, 429, 500, 502, 503, 504, 529}
B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def jdump(obj):
    """Compact JSON as the real servers send it (no spaces, raw UTF-8)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


class State:
    """Script steps and request log, shared by the handler threads."""

    def __init__(self, log_path, embed_dim, lenient, verbose):
        self.lock = threading.Lock()
        self.steps = []  # [index, step dict, uses left (int) or None = always]
        self.loaded = 0
        self.requests = []
        self.api_requests = 0        # API (not /_mock/) requests served, and the time
        self.api_seconds = 0.0       # spent on them: GET /_mock/stats
        self.connections = 0         # connections that carried API requests (kept alive: 1)
        self.seq = 0
        self.log_path = log_path
        self.log_file = open(log_path, "a", encoding="utf-8") if log_path else None
        self.embed_dim = embed_dim
        self.lenient = lenient
        self.verbose = verbose
        self.rng = random.Random(4242)
        self.models = {}

    def add_steps(self, doc, replace=False):
        steps = doc.get("steps") if isinstance(doc, dict) else doc
        if not isinstance(steps, list) or not all(isinstance(s, dict) for s in steps):
            raise ValueError("script must be a JSON array of step objects or {\"steps\": [...]}")
        lefts = []
        for n, s in enumerate(steps):
            check_step(s, n)
            times = s.get("times", 1)
            if times == "always":
                lefts.append(None)
            elif isinstance(times, int) and not isinstance(times, bool) and times >= 1:
                lefts.append(times)
            else:
                raise ValueError("step %d: \"times\" must be a positive integer or \"always\"" % n)
        with self.lock:
            if replace:
                self.steps = []
            for s, left in zip(steps, lefts):
                self.steps.append([self.loaded, s, left])
                self.loaded += 1
            return len(self.steps)

    def take_step(self, kind, provider, path, prompt="", forced=None):
        """The first matching step (index, step, branch): a conditional step
        resolves to its "then" or "else" step (branch "then"/"else"), or does
        not match when its condition fails and it has no "else"."""
        with self.lock:
            for i, (index, step, left) in enumerate(self.steps):
                if step_kind(step) != kind:
                    continue
                if "provider" in step and step["provider"] != provider:
                    continue
                if "path" in step and step["path"] != path:
                    continue
                want = step.get("forced_tool")
                if (want is not None or forced in RESERVED_TOOLS) and want != forced:
                    continue
                branch = None
                if is_conditional(step):
                    branch = "then" if condition_holds(step, prompt) else "else"
                    if branch == "else" and "else" not in step:
                        continue
                if left is not None:
                    if left <= 1:
                        del self.steps[i]
                    else:
                        self.steps[i][2] = left - 1
                return index, (step[branch] if branch else step), branch
            return None, None, None

    def remaining(self):
        with self.lock:
            return len(self.steps)

    def new_id(self, prefix, n, alphabet=B62):
        with self.lock:
            return prefix + "".join(self.rng.choice(alphabet) for _ in range(n))

    def record(self, entry):
        with self.lock:
            self.seq += 1
            entry = dict(seq=self.seq, **entry)
            self.requests.append(entry)
            if self.log_file:
                self.log_file.write(json.dumps(entry, ensure_ascii=False) + "\n")
                self.log_file.flush()
        if self.verbose:
            sys.stderr.write("mock_llm: %s %s -> %s (step %s)\n" % (
                entry["method"], entry["path"], entry["status"], entry["step"]))
            sys.stderr.flush()

    def reset(self):
        with self.lock:
            self.steps = []
            self.requests = []
            self.api_requests = 0
            self.api_seconds = 0.0
            self.connections = 0
            self.models = {}
            if self.log_file:
                self.log_file.truncate(0)
                self.log_file.seek(0)


# Forced tools whose requests only take steps that name them ("forced_tool"),
# else this answer (the input of the tool call).
RESERVED_TOOLS = {"record_run_learnings": {"learnings": []}}


def blocks(msg):
    c = msg.get("content") if isinstance(msg, dict) else None
    return [b for b in c if isinstance(b, dict)] if isinstance(c, list) else []


def anthropic_pairing(messages):
    """The Messages API's rule, as it words a breach: every tool_use block is
    answered by a tool_result in the next message, and every tool_result
    answers a tool_use of the message before it.  None when kept."""
    if not isinstance(messages, list):
        return None
    for i, m in enumerate(messages):
        prev = messages[i - 1] if i > 0 else None
        asked = [b.get("id") for b in blocks(prev) if b.get("type") == "tool_use"] \
            if isinstance(prev, dict) and prev.get("role") == "assistant" else []
        for j, b in enumerate(blocks(m)):
            if b.get("type") == "tool_result" and b.get("tool_use_id") not in asked:
                return ("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. "
                        "Each `tool_result` block must have a corresponding `tool_use` block in the previous "
                        "message." % (i, j, b.get("tool_use_id")))
        if isinstance(m, dict) and m.get("role") == "assistant":
            ids = [b.get("id") for b in blocks(m) if b.get("type") == "tool_use"]
            nxt = messages[i + 1] if i + 1 < len(messages) else None
            told = {b.get("tool_use_id") for b in blocks(nxt) if b.get("type") == "tool_result"}
            missing = [x for x in ids if x not in told]
            if missing and nxt is not None:
                return ("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: "
                        "%s. Each `tool_use` block must have a corresponding `tool_result` block in the next "
                        "message." % (i, ", ".join(str(x) for x in missing)))
    return None


def cache_breakpoints(req):
    """The cache_control breakpoints of an Anthropic request: on tools, system
    blocks and message content blocks (the API takes at most 4)."""
    n = 0
    parts = [req.get("tools"), req.get("system")]
    for m in req.get("messages") or []:
        if isinstance(m, dict):
            parts.append(m.get("content"))
    for part in parts:
        if isinstance(part, list):
            n += sum(1 for b in part if isinstance(b, dict) and "cache_control" in b)
    return n


def openai_pairing(messages):
    """Chat Completions' rule: an assistant message with tool_calls is
    followed by a tool message for each tool_call_id, and a tool message
    answers one of those.  None when kept."""
    if not isinstance(messages, list):
        return None
    open_ids, i = None, 0
    for i, m in enumerate(messages):
        role = m.get("role") if isinstance(m, dict) else None
        if role == "tool":
            if open_ids is None or m.get("tool_call_id") not in open_ids:
                return ("Invalid parameter: messages with role 'tool' must be a response to a preceeding "
                        "message with 'tool_calls'.")
            open_ids.discard(m.get("tool_call_id"))
            continue
        if open_ids:
            return ("An assistant message with 'tool_calls' must be followed by tool messages responding to "
                    "each 'tool_call_id'. The following tool_call_ids did not have response messages: %s"
                    % ", ".join(sorted(str(x) for x in open_ids)))
        open_ids = None
        if role == "assistant" and isinstance(m.get("tool_calls"), list) and m["tool_calls"]:
            open_ids = {c.get("id") for c in m["tool_calls"] if isinstance(c, dict)}
    return None


def forced_tool(req):
    """The tool a chat request forces the model to call, or None."""
    tc = req.get("tool_choice") if isinstance(req, dict) else None
    if not isinstance(tc, dict):
        return None
    if tc.get("type") == "tool":
        return tc.get("name")
    if tc.get("type") == "function" and isinstance(tc.get("function"), dict):
        return tc["function"].get("name")
    return None


FAULTS = {"rate_limit", "quota", "credit", "server_error", "overloaded", "auth", "context_length",
          "bad_request", "not_found", "error", "malformed", "stream_error", "cut", "disconnect", "raw"}


def check_step(step, n):
    """Reject script mistakes at load time, not as a crash mid-request."""
    if "fault" in step and step["fault"] not in FAULTS:
        raise ValueError("step %d: unknown fault %r (one of %s)" % (n, step["fault"], ", ".join(sorted(FAULTS))))
    if step.get("fault") == "error" and not isinstance(step.get("status"), int):
        raise ValueError("step %d: fault \"error\" needs an integer \"status\"" % n)
    tcs = step.get("tool_calls") or []
    if not isinstance(tcs, list) or not all(isinstance(t, dict) and isinstance(t.get("name"), str) for t in tcs):
        raise ValueError("step %d: \"tool_calls\" must be a list of objects with a \"name\"" % n)
    for t in tcs:
        if "input" in t and not isinstance(t["input"], dict):
            raise ValueError("step %d: tool call \"input\" must be an object" % n)
        if "arguments" in t and not isinstance(t["arguments"], str):
            raise ValueError("step %d: tool call \"arguments\" must be a string" % n)
    if "text" in step and not isinstance(step["text"], str):
        raise ValueError("step %d: \"text\" must be a string" % n)
    if "forced_tool" in step and not isinstance(step["forced_tool"], str):
        raise ValueError("step %d: \"forced_tool\" must be a tool name" % n)
    if "wait_file" in step and not isinstance(step["wait_file"], str):
        raise ValueError("step %d: \"wait_file\" must be a path" % n)
    if "pause_file" in step and not isinstance(step["pause_file"], str):
        raise ValueError("step %d: \"pause_file\" must be a path" % n)
    if "pause_after" in step and not isinstance(step["pause_after"], int):
        raise ValueError("step %d: \"pause_after\" must be a number of events" % n)
    if "ping_ms" in step and (not isinstance(step["ping_ms"], int) or step["ping_ms"] <= 0):
        raise ValueError("step %d: \"ping_ms\" must be a positive number of ms" % n)
    if is_conditional(step):
        for c in ("when_prompt_contains", "when_prompt_lacks"):
            v = step.get(c, "")
            if not (isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v))):
                raise ValueError("step %d: \"%s\" must be a string or a list of strings" % (n, c))
        if "when_prompt_matches" in step:
            try:
                re.compile(step["when_prompt_matches"])
            except (re.error, TypeError) as e:
                raise ValueError("step %d: \"when_prompt_matches\" is not a regex: %s" % (n, e))
        if not isinstance(step.get("then"), dict):
            raise ValueError("step %d: a conditional step needs a \"then\" step object" % n)
        if "else" in step and not isinstance(step["else"], dict):
            raise ValueError("step %d: \"else\" must be a step object" % n)
        for b in ("then", "else"):
            if b in step:
                if "times" in step[b]:
                    raise ValueError("step %d: \"times\" belongs on the conditional step, not in \"%s\"" % (n, b))
                check_step(step[b], n)
    elif "then" in step or "else" in step:
        raise ValueError("step %d: \"then\"/\"else\" need a when_prompt_* condition" % n)


CONDITIONS = ("when_prompt_contains", "when_prompt_lacks", "when_prompt_matches")


def is_conditional(step):
    return any(c in step for c in CONDITIONS)


def condition_holds(step, prompt):
    """Every condition the step names holds for the request's prompt text."""
    def texts(v):
        return [v] if isinstance(v, str) else v
    if "when_prompt_contains" in step and not all(t in prompt for t in texts(step["when_prompt_contains"])):
        return False
    if "when_prompt_lacks" in step and any(t in prompt for t in texts(step["when_prompt_lacks"])):
        return False
    if "when_prompt_matches" in step and not re.search(step["when_prompt_matches"], prompt):
        return False
    return True


def prompt_text(req):
    """The text a model would read in a chat request: the system prompt
    (Anthropic "system" string or blocks) and every message's text, tool
    results and tool inputs included, one part per line."""
    parts = []

    def walk(v):
        if isinstance(v, str):
            parts.append(v)
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, dict):
            for k in ("text", "content", "input", "arguments", "function", "tool_calls"):
                if k in v:
                    walk(v[k] if k != "input" else jdump(v[k]))
    if isinstance(req, dict):
        walk(req.get("system"))
        walk(req.get("messages"))
    return "\n".join(parts)


def step_kind(step):
    if "kind" in step:
        return step["kind"]
    if is_conditional(step) and isinstance(step.get("then"), dict):
        return step_kind(step["then"])
    if "embeddings" in step or step.get("path") in EMBED_PATHS:
        return "embed"
    return "chat"


# ---------------------------------------------------------------------------
# Normalised answer -> provider formats


def estimate_tokens(text):
    return max(1, len(text) // 4)


def split_words(text, chunk):
    if not text:
        return []
    if chunk:
        return [text[i:i + chunk] for i in range(0, len(text), chunk)]
    parts = re.findall(r"\s*\S+|\s+$", text)
    return parts or [text]


def split_fixed(text, chunk):
    chunk = chunk or 7
    return [text[i:i + chunk] for i in range(0, len(text), chunk)]


class Answer:
    """A normalised answer step, with defaults filled in for one request."""

    def __init__(self, state, step, req, provider):
        self.text = step.get("text", "")
        self.thinking = step.get("thinking")
        self.model = step.get("model") or req.get("model") or "mock-model"
        self.calls = []
        for tc in step.get("tool_calls", []) or []:
            if "arguments" in tc:
                args = tc["arguments"]
                try:
                    inp = json.loads(args)
                    if not isinstance(inp, dict):
                        inp = {}
                except ValueError:
                    inp = {}
            else:
                inp = tc.get("input", {})
                args = jdump(inp)
            cid = tc.get("id") or (state.new_id("toolu_01", 22) if provider == "anthropic"
                                   else state.new_id("call_", 24))
            self.calls.append({"id": cid, "name": tc["name"], "input": inp, "arguments": args})
        self.omit_ids = bool(step.get("omit_ids"))
        self.stop_reason = step.get("stop_reason") or ("tool_use" if self.calls else "end_turn")
        self.stop_sequence = step.get("stop_sequence") if self.stop_reason == "stop_sequence" else None
        u = dict(step.get("usage") or {})
        if "input_tokens" not in u:
            # what the real APIs count: the system prompt and the tools too
            u["input_tokens"] = estimate_tokens(jdump([req.get(k) for k in ("system", "tools", "messages")
                                                       if k in req]) if "messages" in req
                                                else jdump(req.get("input", "")))
        if "output_tokens" not in u:
            u["output_tokens"] = estimate_tokens(self.text + "".join(c["arguments"] for c in self.calls)
                                                 + (self.thinking or ""))
        u.setdefault("cache_creation_input_tokens", 0)
        u.setdefault("cache_read_input_tokens", 0)
        self.usage = u
        self.chunk = step.get("chunk")
        self.id_anth = step.get("id") or state.new_id("msg_01", 22)
        self.id_oai = step.get("id") or state.new_id("chatcmpl-", 29)
        self.created = int(time.time())

    # -- Anthropic ---------------------------------------------------------

    def anth_usage(self):
        u = self.usage
        return {"input_tokens": u["input_tokens"],
                "cache_creation_input_tokens": u["cache_creation_input_tokens"],
                "cache_read_input_tokens": u["cache_read_input_tokens"],
                "cache_creation": {"ephemeral_5m_input_tokens": u["cache_creation_input_tokens"],
                                   "ephemeral_1h_input_tokens": 0},
                "output_tokens": u["output_tokens"],
                "service_tier": "standard"}

    def anth_content(self):
        content = []
        if self.thinking is not None:
            content.append({"type": "thinking", "thinking": self.thinking,
                            "signature": "EqQBCgIYAhIM" + hashlib.sha256(self.thinking.encode()).hexdigest()})
        if self.text or not self.calls:
            content.append({"type": "text", "text": self.text})
        for c in self.calls:
            content.append(self.no_id({"type": "tool_use", "id": c["id"], "name": c["name"],
                                       "input": c["input"]}))
        return content

    def no_id(self, call):
        """call without its "id" when the step says "omit_ids"."""
        if self.omit_ids:
            call.pop("id", None)
        return call

    def anth_body(self):
        body = {"id": self.id_anth, "type": "message", "role": "assistant", "model": self.model,
                "content": self.anth_content(), "stop_reason": self.stop_reason,
                "stop_sequence": self.stop_sequence, "usage": self.anth_usage()}
        if self.stop_reason == "refusal":
            body["stop_details"] = {"type": "refusal", "category": None,
                                    "explanation": "This request was refused due to policy."}
        return body

    def anth_events(self):
        """The SSE events as (event name, data text) pairs."""
        ev = []

        def add(name, obj):
            ev.append((name, jdump(obj)))

        start_usage = self.anth_usage()
        start_usage["output_tokens"] = 1
        add("message_start", {"type": "message_start", "message": {
            "id": self.id_anth, "type": "message", "role": "assistant", "model": self.model,
            "content": [], "stop_reason": None, "stop_sequence": None, "usage": start_usage}})
        index = 0
        pinged = False

        def ping():
            nonlocal pinged
            if not pinged:
                ev.append(("ping", '{"type": "ping"}'))
                pinged = True

        if self.thinking is not None:
            add("content_block_start", {"type": "content_block_start", "index": index,
                                        "content_block": {"type": "thinking", "thinking": "", "signature": ""}})
            ping()
            for piece in split_words(self.thinking, self.chunk):
                add("content_block_delta", {"type": "content_block_delta", "index": index,
                                            "delta": {"type": "thinking_delta", "thinking": piece}})
            sig = self.anth_content()[0]["signature"]
            add("content_block_delta", {"type": "content_block_delta", "index": index,
                                        "delta": {"type": "signature_delta", "signature": sig}})
            add("content_block_stop", {"type": "content_block_stop", "index": index})
            index += 1
        if self.text or not self.calls:
            add("content_block_start", {"type": "content_block_start", "index": index,
                                        "content_block": {"type": "text", "text": ""}})
            if self.text:
                ping()
            for piece in split_words(self.text, self.chunk):
                add("content_block_delta", {"type": "content_block_delta", "index": index,
                                            "delta": {"type": "text_delta", "text": piece}})
            add("content_block_stop", {"type": "content_block_stop", "index": index})
            index += 1
        for c in self.calls:
            add("content_block_start", {"type": "content_block_start", "index": index,
                                        "content_block": self.no_id({"type": "tool_use", "id": c["id"],
                                                                     "name": c["name"], "input": {}})})
            ping()
            for piece in [""] + split_fixed(c["arguments"], self.chunk):
                add("content_block_delta", {"type": "content_block_delta", "index": index,
                                            "delta": {"type": "input_json_delta", "partial_json": piece}})
            add("content_block_stop", {"type": "content_block_stop", "index": index})
            index += 1
        delta = {"stop_reason": self.stop_reason, "stop_sequence": self.stop_sequence}
        if self.stop_reason == "refusal":
            delta["stop_details"] = {"type": "refusal", "category": None,
                                     "explanation": "This request was refused due to policy."}
        add("message_delta", {"type": "message_delta", "delta": delta,
                              "usage": {"output_tokens": self.usage["output_tokens"]}})
        add("message_stop", {"type": "message_stop"})
        return ev

    # -- OpenAI --------------------------------------------------------------

    def oai_finish(self):
        return {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls",
                "max_tokens": "length", "refusal": "stop",
                "pause_turn": "stop"}.get(self.stop_reason, self.stop_reason)

    def oai_usage(self):
        u = self.usage
        prompt = u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]
        return {"prompt_tokens": prompt, "completion_tokens": u["output_tokens"],
                "total_tokens": prompt + u["output_tokens"],
                "prompt_tokens_details": {"cached_tokens": u["cache_read_input_tokens"], "audio_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                              "accepted_prediction_tokens": 0,
                                              "rejected_prediction_tokens": 0}}

    def oai_body(self):
        refusal = self.stop_reason == "refusal"
        msg = {"role": "assistant",
               "content": None if refusal or (not self.text and self.calls) else self.text,
               "refusal": self.text if refusal else None, "annotations": []}
        if self.calls:
            msg["tool_calls"] = [self.no_id({"id": c["id"], "type": "function",
                                              "function": {"name": c["name"],
                                                           "arguments": c["arguments"]}})
                                 for c in self.calls]
        return {"id": self.id_oai, "object": "chat.completion", "created": self.created,
                "model": self.model,
                "choices": [{"index": 0, "message": msg, "logprobs": None,
                             "finish_reason": self.oai_finish()}],
                "usage": self.oai_usage(), "service_tier": "default",
                "system_fingerprint": "fp_mock0001"}

    def oai_chunks(self, include_usage):
        out = []

        def chunk(delta, finish=None):
            c = {"id": self.id_oai, "object": "chat.completion.chunk", "created": self.created,
                 "model": self.model, "service_tier": "default", "system_fingerprint": "fp_mock0001",
                 "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
            if include_usage:
                c["usage"] = None
            out.append(jdump(c))

        refusal = self.stop_reason == "refusal"
        if self.text and not refusal:
            chunk({"role": "assistant", "content": "", "refusal": None})
            for piece in split_words(self.text, self.chunk):
                chunk({"content": piece})
        else:
            chunk({"role": "assistant", "content": None, "refusal": None})
            if refusal:
                for piece in split_words(self.text, self.chunk):
                    chunk({"refusal": piece})
        for i, c in enumerate(self.calls):
            chunk({"tool_calls": [self.no_id({"index": i, "id": c["id"], "type": "function",
                                              "function": {"name": c["name"], "arguments": ""}})]})
            for piece in split_fixed(c["arguments"], self.chunk):
                chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
        chunk({}, self.oai_finish())
        if include_usage:
            out.append(jdump({"id": self.id_oai, "object": "chat.completion.chunk",
                              "created": self.created, "model": self.model,
                              "service_tier": "default", "system_fingerprint": "fp_mock0001",
                              "choices": [], "usage": self.oai_usage()}))
        return out


def default_embedding(text, dim):
    """Deterministic, weight-free: feature hashing of words, L2-normalised."""
    vec = [0.0] * dim
    for word in re.findall(r"\w+", text.lower()) or [text]:
        h = hashlib.sha256(word.encode("utf-8")).digest()
        idx = int.from_bytes(h[:4], "little") % dim
        vec[idx] += 1.0 if h[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [round(v / norm, 8) for v in vec]


# ---------------------------------------------------------------------------
# Errors


def error_defaults(kind, provider, req_model):
    """(status, anthropic type, openai type, openai code, message) for a fault kind."""
    model = req_model or "mock-model"
    if kind == "rate_limit":
        if provider == "anthropic":
            msg = ("This request would exceed your organization's rate limit of 50 requests per minute "
                   "(org: 00000000-0000-4000-8000-000000000000, model: %s). For details, refer to: "
                   "https://docs.claude.com/en/api/rate-limits. You can see the response headers for "
                   "current usage. Please reduce the prompt length or the maximum tokens requested, or "
                   "try again later." % model)
        else:
            msg = ("Rate limit reached for %s in organization org-mock on requests per min (RPM): "
                   "Limit 60, Used 60, Requested 1. Please try again in 1s. Visit "
                   "https://platform.openai.com/account/rate-limits to learn more." % model)
        return 429, "rate_limit_error", "requests", "rate_limit_exceeded", msg
    if kind == "quota":
        if provider == "anthropic":
            msg = ("You have reached your specified API usage limits. You will regain access on "
                   "2099-01-01 at 00:00 UTC.")
        else:
            msg = ("You exceeded your current quota, please check your plan and billing details. For more "
                   "information on this error, read the docs: "
                   "https://platform.openai.com/docs/guides/error-codes/api-errors.")
        return 429, "rate_limit_error", "insufficient_quota", "insufficient_quota", msg
    if kind == "credit":
        if provider == "anthropic":
            return 400, "invalid_request_error", None, None, \
                ("Your credit balance is too low to access the Anthropic API. Please go to Plans & "
                 "Billing to upgrade or purchase credits.")
        return error_defaults("quota", provider, req_model)
    if kind == "server_error":
        msg = ("Internal server error" if provider == "anthropic" else
               "The server had an error while processing your request. Sorry about that!")
        return 500, "api_error", "server_error", None, msg
    if kind == "overloaded":
        if provider == "anthropic":
            return 529, "overloaded_error", "server_error", None, "Overloaded"
        return 503, "overloaded_error", "server_error", None, \
            "The engine is currently overloaded, please try again later."
    if kind == "auth":
        if provider == "anthropic":
            return 401, "authentication_error", None, None, "invalid x-api-key"
        return 401, "authentication_error", "invalid_request_error", "invalid_api_key", \
            ("Incorrect API key provided: sk-mock***********key. You can find your API key at "
             "https://platform.openai.com/account/api-keys.")
    if kind == "context_length":
        if provider == "anthropic":
            return 400, "invalid_request_error", None, None, "prompt is too long: 215789 tokens > 200000 maximum"
        return 400, "invalid_request_error", "invalid_request_error", "context_length_exceeded", \
            ("This model's maximum context length is 128000 tokens. However, your messages resulted "
             "in 215789 tokens. Please reduce the length of the messages.")
    if kind == "bad_request":
        return 400, "invalid_request_error", "invalid_request_error", None, "Invalid request."
    if kind == "not_found":
        return 404, "not_found_error", "invalid_request_error", None, "Not found"
    return 500, "api_error", "server_error", None, "mock_llm: error"


ANTH_TYPE_BY_STATUS = {400: "invalid_request_error", 401: "authentication_error", 402: "billing_error",
                       403: "permission_error", 404: "not_found_error", 409: "conflict_error",
                       413: "request_too_large", 429: "rate_limit_error", 500: "api_error",
                       504: "timeout_error", 529: "overloaded_error"}


# ---------------------------------------------------------------------------
# HTTP


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "mock_llm/1"
    sys_version = ""
    disable_nagle_algorithm = True
    state = None  # set in main()

    def version_string(self):
        return self.server_version

    def log_message(self, fmt, *args):  # quiet; --verbose logs via State.record
        pass

    # -- plumbing -----------------------------------------------------------

    def read_body(self):
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            data = b""
            while True:
                line = self.rfile.readline()
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n > 0 else b""

    def send_head(self, status, headers, length=None, chunked=False):
        self.send_response(status)
        for k, v in headers.items():
            if v is not None:
                self.send_header(k, str(v))
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        elif length is not None:
            self.send_header("Content-Length", str(length))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()

    def send_bytes(self, status, headers, data):
        self.send_head(status, headers, length=len(data))
        self.wfile.write(data)
        self.wfile.flush()

    def send_json(self, status, headers, obj):
        h = {"Content-Type": "application/json"}
        h.update(headers)
        self.send_bytes(status, h, jdump(obj).encode("utf-8"))

    def write_chunk(self, data, dribble=None):
        pieces = [data] if not dribble else [data[i:i + dribble] for i in range(0, len(data), dribble)]
        for p in pieces:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(p), p))
            self.wfile.flush()
            if dribble:
                time.sleep(0.002)

    def abort_connection(self):
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def send_sse(self, headers, events, step, cut_after=None):
        """events: list of raw SSE event texts (each ends with a blank line)."""
        h = {"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache"}
        h.update(headers)
        self.send_head(200, h, chunked=True)
        dribble = step.get("dribble")
        for n, ev in enumerate(events):
            if cut_after is not None and n >= cut_after:
                self.abort_connection()
                return
            if step.get("pause_file") and n == step.get("pause_after", 0):
                limit = time.monotonic() + 120
                ping_s = step.get("ping_ms", 0) / 1000.0
                ping = ('event: ping\ndata: {"type": "ping"}\n\n'
                        if any(e.startswith("event:") for e in events) else ": keep-alive\n\n")
                next_ping = time.monotonic() + ping_s
                while not os.path.exists(step["pause_file"]) and time.monotonic() < limit:
                    if ping_s and time.monotonic() >= next_ping:
                        try:
                            self.write_chunk(ping.encode("utf-8"))
                        except OSError:
                            return     # the client gave up on the answer
                        next_ping += ping_s
                    time.sleep(0.02)
            self.write_chunk(ev.encode("utf-8"), dribble)
        if step.get("hold_open"):
            self.wfile.flush()
            self.wait_client_close(30)
            self.close_connection = True
            return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def wait_client_close(self, limit_s):
        """Block until the client closes its end (or limit_s passes)."""
        end = time.monotonic() + limit_s
        while time.monotonic() < end:
            ready, _, _ = select.select([self.connection], [], [], 0.1)
            if ready:
                try:
                    if not self.connection.recv(4096):
                        return
                except OSError:
                    return

    # -- headers as the real servers send them ------------------------------

    def provider_headers(self, provider, status):
        now = datetime.now(timezone.utc)

        def rfc3339(sec):
            return (now + timedelta(seconds=sec)).strftime("%Y-%m-%dT%H:%M:%SZ")

        if provider == "anthropic":
            self.request_id = self.state.new_id("req_011C", 20)
            remaining = "0" if status == 429 else "49"
            return {"request-id": self.request_id,
                    "anthropic-organization-id": "00000000-0000-4000-8000-000000000000",
                    "anthropic-ratelimit-requests-limit": "50",
                    "anthropic-ratelimit-requests-remaining": remaining,
                    "anthropic-ratelimit-requests-reset": rfc3339(1),
                    "anthropic-ratelimit-tokens-limit": "38000",
                    "anthropic-ratelimit-tokens-remaining": "36000",
                    "anthropic-ratelimit-tokens-reset": rfc3339(4),
                    "anthropic-ratelimit-input-tokens-limit": "30000",
                    "anthropic-ratelimit-input-tokens-remaining": "28000",
                    "anthropic-ratelimit-input-tokens-reset": rfc3339(5),
                    "anthropic-ratelimit-output-tokens-limit": "8000",
                    "anthropic-ratelimit-output-tokens-remaining": "8000",
                    "anthropic-ratelimit-output-tokens-reset": rfc3339(4)}
        if provider == "openai":
            self.request_id = "req_" + self.state.new_id("", 32, "0123456789abcdef")
            return {"x-request-id": self.request_id,
                    "openai-organization": "forge-mock",
                    "openai-processing-ms": "42",
                    "openai-version": "2020-10-01",
                    "access-control-expose-headers": "X-Request-ID",
                    "x-ratelimit-limit-requests": "60",
                    "x-ratelimit-limit-tokens": "150000",
                    "x-ratelimit-remaining-requests": "0" if status == 429 else "59",
                    "x-ratelimit-remaining-tokens": "149984",
                    "x-ratelimit-reset-requests": "1s",
                    "x-ratelimit-reset-tokens": "6m0s"}
        self.request_id = None
        return {}

    def error_body(self, provider, status, etype, otype, code, param, message):
        if provider == "anthropic":
            return {"type": "error", "error": {"type": etype, "message": message},
                    "request_id": self.request_id}
        if provider == "ollama":
            return {"error": message}
        return {"error": {"message": message, "type": otype, "param": param, "code": code}}

    def send_error_json(self, provider, status, etype, otype, code, param, message,
                        extra=None, should_retry="default"):
        h = self.provider_headers(provider, status)
        if should_retry == "default":
            should_retry = (status in RETRYABLE) if provider == "anthropic" else None
        if should_retry is not None:
            h["x-should-retry"] = "true" if should_retry else "false"
        h.update(extra or {})
        self.send_json(status, h, self.error_body(provider, status, etype, otype, code, param, message))

    # -- control endpoints ---------------------------------------------------

    def do_GET(self):
        url = urlsplit(self.path)
        if url.path == "/_mock/health":
            return self.send_bytes(200, {"Content-Type": "text/plain"}, b"ok\n")
        if url.path == "/_mock/requests":
            with self.state.lock:
                reqs = list(self.state.requests)
            return self.send_json(200, {}, reqs)
        if url.path == "/_mock/stats":
            with self.state.lock:
                stats = {"api_requests": self.state.api_requests, "api_seconds": self.state.api_seconds,
                         "connections": self.state.connections}
            return self.send_json(200, {}, stats)
        if url.path == "/_mock/script":
            with self.state.lock:
                steps = [s for _, s, _ in self.state.steps]
            return self.send_json(200, {}, {"remaining": len(steps), "steps": steps})
        self.read_body()
        if url.path == "/v1/models":
            with self.state.lock:
                models = dict(self.state.models)
            data = [dict({"id": m, "object": "model", "created": 0, "owned_by": "mock"},
                         **{k: v for k, v in f.items() if k != "num_ctx"}) for m, f in models.items()]
            return self.send_json(200, {}, {"object": "list", "data": data})
        provider = self.provider_for(url.path)
        self.send_error_json(provider, 404, "not_found_error", "invalid_request_error", None, None,
                             "Not Found: GET %s" % url.path)

    def ollama_show(self, raw):
        try:
            name = json.loads(raw.decode("utf-8")).get("model")
        except (ValueError, UnicodeDecodeError, AttributeError):
            name = None
        with self.state.lock:
            fields = self.state.models.get(name)
        if not fields or "num_ctx" not in fields:
            return self.send_json(404, {}, {"error": "model '%s' not found" % name})
        return self.send_json(200, {}, {"modelfile": "FROM %s" % name,
                                        "parameters": "num_ctx                        %d\nstop \"<|im_end|>\"" % fields["num_ctx"],
                                        "details": {"format": "gguf"}})

    def do_POST(self):
        url = urlsplit(self.path)
        raw = self.read_body()
        if url.path.startswith("/_mock/"):
            return self.control_post(url, raw)
        path = url.path
        if path in CHAT_PATHS:
            return self.api(CHAT_PATHS[path], "chat", url, raw)
        if path in EMBED_PATHS:
            return self.api(EMBED_PATHS[path], "embed", url, raw)
        if path == "/api/show":
            return self.ollama_show(raw)
        provider = self.provider_for(path)
        self.send_error_json(provider, 404, "not_found_error", "invalid_request_error", None, None,
                             "Not Found: POST %s" % path)

    def provider_for(self, path):
        if path.startswith("/api/"):
            return "ollama"
        if self.headers.get("x-api-key") or self.headers.get("anthropic-version"):
            return "anthropic"
        return "openai"

    def control_post(self, url, raw):
        if url.path == "/_mock/script":
            try:
                doc = json.loads(raw.decode("utf-8"))
                replace = parse_qs(url.query).get("replace", ["0"])[0] not in ("0", "", "false")
                n = self.state.add_steps(doc, replace)
            except (ValueError, UnicodeDecodeError) as e:
                return self.send_json(400, {}, {"error": "bad script: %s" % e})
            return self.send_json(200, {}, {"remaining": n})
        if url.path == "/_mock/models":
            try:
                models = json.loads(raw.decode("utf-8"))
                if not isinstance(models, dict) or not all(isinstance(v, dict) for v in models.values()):
                    raise ValueError("models must be an object of objects")
            except (ValueError, UnicodeDecodeError) as e:
                return self.send_json(400, {}, {"error": "bad models: %s" % e})
            with self.state.lock:
                self.state.models = models
            return self.send_json(200, {}, {"models": len(models)})
        if url.path == "/_mock/reset":
            self.state.reset()
            return self.send_json(200, {}, {"remaining": 0})
        return self.send_json(404, {}, {"error": "unknown control endpoint %s" % url.path})

    # -- API requests ----------------------------------------------------------

    def auth_info(self):
        key = self.headers.get("x-api-key")
        if key is None:
            authz = self.headers.get("Authorization")
            if authz is not None:
                key = authz[7:] if authz.lower().startswith("bearer ") else authz
        if key is None:
            return "absent", None
        return "present", hashlib.sha256(key.encode("utf-8")).hexdigest()

    def validate(self, provider, kind, req, parse_ok):
        """(status, anthropic type, openai type, openai code, param, message) or None."""
        h = self.headers
        if provider == "anthropic":
            if not h.get("x-api-key") and not h.get("Authorization"):
                return 401, "authentication_error", None, None, None, "x-api-key header is required"
            if not h.get("anthropic-version"):
                return 400, "invalid_request_error", None, None, None, "anthropic-version: header is required"
            if not parse_ok or not isinstance(req, dict):
                return 400, "invalid_request_error", None, None, None, \
                    "There was an issue with the format of your request body: invalid JSON"
            for f in ("model", "max_tokens", "messages"):
                if f not in req:
                    return 400, "invalid_request_error", None, None, None, "%s: Field required" % f
            bad = anthropic_pairing(req.get("messages"))
            if bad:
                return 400, "invalid_request_error", None, None, None, bad
            marks = cache_breakpoints(req)
            if marks > 4:
                return 400, "invalid_request_error", None, None, None, \
                    "A maximum of 4 blocks with cache_control may be provided. Found %d." % marks
            return None
        if provider == "openai":
            if not h.get("Authorization"):
                return 401, None, "invalid_request_error", None, None, (
                    "You didn't provide an API key. You need to provide your API key in an Authorization "
                    "header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).")
        if not parse_ok or not isinstance(req, dict):
            return 400, "invalid_request_error", "invalid_request_error", None, None, (
                "We could not parse the JSON body of your request. (HINT: This likely means you aren't "
                "using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was "
                "sent was not valid JSON.)")
        for f in (("model", "messages") if kind == "chat" else ("model", "input")):
            if f not in req:
                return 400, "invalid_request_error", "invalid_request_error", None, f, \
                    "Missing required parameter: '%s'." % f
        if kind == "chat" and provider == "openai":
            bad = openai_pairing(req.get("messages"))
            if bad:
                return 400, "invalid_request_error", "invalid_request_error", None, "messages", bad
        return None

    def api(self, provider, kind, url, raw):
        try:
            req = json.loads(raw.decode("utf-8")) if raw else None
            parse_ok = req is not None
        except (ValueError, UnicodeDecodeError):
            req, parse_ok = None, False
        body_log = req if parse_ok else {"_raw": raw.decode("utf-8", "replace")}
        stream = bool(isinstance(req, dict) and req.get("stream") is True and kind == "chat")
        auth, auth_sha = self.auth_info()
        headers_log = {}
        for k, v in self.headers.items():
            k = k.lower()
            if k in ("authorization", "x-api-key", "api-key"):
                v = "REDACTED"
            headers_log[k] = headers_log[k] + ", " + v if k in headers_log else v
        entry = {"ts_ms": int(time.time() * 1000), "method": self.command, "path": url.path,
                 "query": url.query, "provider": provider, "headers": headers_log, "auth": auth,
                 "auth_sha256": auth_sha, "body": body_log, "stream": stream}

        invalid = None if self.state.lenient else self.validate(provider, kind, req, parse_ok)
        if invalid:
            status, at, ot, code, param, msg = invalid
            self.state.record(dict(entry, step=None, status=status))
            return self.send_error_json(provider, status, at or ANTH_TYPE_BY_STATUS.get(status, "api_error"),
                                        ot, code, param, msg)

        forced = forced_tool(req) if kind == "chat" else None
        index, step, branch = self.state.take_step(kind, provider, url.path,
                                                   prompt_text(req) if kind == "chat" else "", forced)
        if branch:
            entry["branch"] = branch
        if step is None and kind == "embed":
            step = {}
        if step is None and forced in RESERVED_TOOLS:
            step = {"tool_calls": [{"name": forced, "input": RESERVED_TOOLS[forced]}]}
            entry["default"] = True
        if step is None:
            self.state.record(dict(entry, step=None, status=500))
            return self.send_error_json(
                provider, 500, "api_error", "server_error", "mock_script_exhausted", None,
                "mock_llm: script exhausted: no step left for %s %s (%d requests served)"
                % (self.command, url.path, self.state.seq), should_retry=False)

        fault = step.get("fault")
        status = self.planned_status(step, fault, provider, req)
        self.state.record(dict(entry, step=index, status=status))
        if step.get("delay_ms"):
            time.sleep(step["delay_ms"] / 1000.0)
        if step.get("wait_file"):
            limit = time.monotonic() + 120
            while not os.path.exists(step["wait_file"]) and time.monotonic() < limit:
                time.sleep(0.02)
        model = req.get("model") if isinstance(req, dict) else None
        if fault:
            return self.fault(provider, kind, step, fault, req if isinstance(req, dict) else {}, stream, model)
        if kind == "embed":
            return self.embed(provider, step, req)
        return self.answer(provider, step, req, stream, cut_after=step.get("cut_after"))

    def planned_status(self, step, fault, provider, req):
        if not fault or fault in ("malformed", "stream_error", "cut", "disconnect"):
            return 0 if fault == "disconnect" else 200
        if fault == "raw":
            return step.get("status", 200)
        if "status" in step:
            return step["status"]
        return error_defaults(fault, provider, None)[0]

    def answer(self, provider, step, req, stream, cut_after=None, tail_error=None):
        ans = Answer(self.state, step, req, provider)
        h = self.provider_headers(provider, 200)
        h.update(step.get("headers") or {})
        if provider == "anthropic":
            if stream:
                events = ["event: %s\ndata: %s\n\n" % e for e in ans.anth_events()]
                if tail_error is not None:
                    events = events[:self.error_point(tail_error, events)]
                    events += ["event: error\ndata: %s\n\n" % jdump({
                        "type": "error", "error": {"type": step.get("type") or "overloaded_error",
                                                   "message": step.get("message") or "Overloaded"}})]
                return self.send_sse(h, events, step, self.cut_point(cut_after, len(events)))
            data = jdump(ans.anth_body()).encode("utf-8")
        else:
            if stream:
                so = req.get("stream_options") or {}
                events = ["data: %s\n\n" % c for c in ans.oai_chunks(bool(so.get("include_usage")))]
                if not step.get("no_done"):
                    events.append("data: [DONE]\n\n")
                if tail_error is not None:
                    events = events[:self.error_point(tail_error, events)]
                    events += ["data: %s\n\n" % jdump({"error": {
                        "message": step.get("message") or
                        "The server had an error while processing your request. Sorry about that!",
                        "type": step.get("type") or "server_error", "param": step.get("param"),
                        "code": step.get("code")}})]
                return self.send_sse(h, events, step, self.cut_point(cut_after, len(events)))
            data = jdump(ans.oai_body()).encode("utf-8")
        h["Content-Type"] = "application/json"
        if cut_after is not None:
            self.send_head(200, h, length=len(data))
            self.wfile.write(data[:len(data) // 2])
            return self.abort_connection()
        self.send_bytes(200, h, data)

    @staticmethod
    def error_point(error_after, events):
        """How many events go before a stream_error's error event: error_after,
        but never the last one (message_stop, [DONE], or with no_done the last
        chunk), so that a short answer's stream still ends with the error."""
        return max(0, min(int(error_after), len(events) - 1))

    @staticmethod
    def cut_point(cut_after, n):
        if cut_after is None:
            return None
        if cut_after == "half":
            return n // 2
        return min(int(cut_after), n - 1)

    def embed(self, provider, step, req):
        inputs = req.get("input")
        if isinstance(inputs, str) or not isinstance(inputs, list):
            inputs = [inputs]
        inputs = [x if isinstance(x, str) else jdump(x) for x in inputs]
        dim = req.get("dimensions") or self.state.embed_dim
        vecs = step.get("embeddings") or [default_embedding(t, dim) for t in inputs]
        ntok = sum(estimate_tokens(t) for t in inputs)
        h = self.provider_headers(provider, 200)
        h.update(step.get("headers") or {})
        if provider == "ollama":
            return self.send_json(200, h, {"model": req.get("model"), "embeddings": vecs,
                                           "total_duration": 14143917, "load_duration": 1019500,
                                           "prompt_eval_count": ntok})
        b64 = req.get("encoding_format") == "base64"
        data = []
        for i, v in enumerate(vecs):
            emb = base64.b64encode(struct.pack("<%df" % len(v), *v)).decode("ascii") if b64 else v
            data.append({"object": "embedding", "index": i, "embedding": emb})
        self.send_json(200, h, {"object": "list", "data": data, "model": req.get("model"),
                                "usage": {"prompt_tokens": ntok, "total_tokens": ntok}})

    def fault(self, provider, kind, step, fault, req, stream, model):
        extra = dict(step.get("headers") or {})
        if fault == "disconnect":
            return self.abort_connection()
        if fault == "raw":
            body = step.get("body", "")
            body = body if isinstance(body, str) else jdump(body)
            if "parts" in step:
                body = "".join(text * int(n) for text, n in step["parts"])
            h = {"Content-Type": "application/json"}
            h.update(extra)
            return self.send_bytes(step.get("status", 200), h, body.encode("utf-8"))
        if fault == "cut":
            return self.answer(provider, step, req, stream, cut_after=step.get("cut_after", "half"))
        if fault == "stream_error":
            return self.answer(provider, step, req, True, tail_error=step.get("error_after", 4))
        if fault == "malformed":
            h = self.provider_headers(provider, 200)
            h.update(extra)
            if stream:
                if provider == "anthropic":
                    events = ['event: message_start\ndata: {"type":"message_start","message":{"id":"msg_01'
                              'Malformed","type":"message","role":"assistant","content":[],"model":"%s",'
                              '"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1,'
                              '"output_tokens":1}}}\n\n' % (model or "mock-model"),
                              "event: content_block_delta\ndata: %s\n\n"
                              % step.get("body", '{"type":"content_block_delta","index":0,"delta":{'),
                              'event: message_stop\ndata: {"type":"message_stop"}\n\n']
                else:
                    events = ["data: %s\n\n" % step.get("body", '{"id":"chatcmpl-malformed","choices":[{'),
                              "data: [DONE]\n\n"]
                return self.send_sse(h, events, step)
            h["Content-Type"] = "application/json"
            body = step.get("body", '{"id": "malformed", "type": "message", "content": [{"type": "te')
            return self.send_bytes(200, h, body.encode("utf-8"))
        status, atype, otype, code, msg = error_defaults(fault, provider, model)
        status = step.get("status", status)
        if fault == "error":
            atype = ANTH_TYPE_BY_STATUS.get(status, "api_error")
            otype = "server_error" if status >= 500 else "invalid_request_error"
        atype = step.get("type", atype)
        otype = step.get("type", otype)
        code = step.get("code", code)
        msg = step.get("message", msg)
        if fault == "rate_limit":
            if "retry_after" in step:
                extra["retry-after"] = str(step["retry_after"])
            if "retry_after_ms" in step:
                extra["retry-after-ms"] = str(step["retry_after_ms"])
        elif "retry_after" in step or "retry_after_ms" in step:
            if "retry_after" in step:
                extra["retry-after"] = str(step["retry_after"])
            if "retry_after_ms" in step:
                extra["retry-after-ms"] = str(step["retry_after_ms"])
        should_retry = step["should_retry"] if "should_retry" in step else "default"
        self.send_error_json(provider, status, atype, otype, code, step.get("param"), msg,
                             extra, should_retry)

    def parse_request(self):
        # (after the request line has come: a connection kept alive waits
        # for the next one before, and that is not the mock's time)
        self.parse_start = time.perf_counter()
        return super().parse_request()

    def handle_one_request(self):
        # The time from the request line to the answer's last byte, for
        # API requests: what the client waits on the mock (a benchmark
        # takes it out of the client's time, as if the model answered at
        # once).
        self.path = ""
        self.parse_start = None
        try:
            super().handle_one_request()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True
        if self.parse_start is not None and self.path and not self.path.startswith("/_mock/"):
            spent = time.perf_counter() - self.parse_start
            with self.state.lock:
                self.state.api_requests += 1
                self.state.api_seconds += spent
                if not getattr(self, "api_connection", False):
                    self.state.connections += 1
            self.api_connection = True


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        exc = sys.exc_info()[1]
        if isinstance(exc, (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError)):
            return
        super().handle_error(request, client_address)


def main(argv=None):
    ap = argparse.ArgumentParser(description="Scripted mock of the Anthropic/OpenAI/Ollama APIs "
                                             "(see the top of this file for the script format).")
    ap.add_argument("--script", help="JSON script of steps")
    ap.add_argument("--port-file", help="write the bound port here (atomically)")
    ap.add_argument("--log", help="JSON-lines request log (appended, flushed per request)")
    ap.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    ap.add_argument("--embed-dim", type=int, default=64, help="size of default embedding vectors")
    ap.add_argument("--lenient", action="store_true", help="do not validate requests")
    ap.add_argument("--verbose", action="store_true", help="log requests on stderr")
    ap.add_argument("--tls-cert", help="serve https: PEM file with the certificate and its key")
    args = ap.parse_args(argv)

    state = State(args.log, args.embed_dim, args.lenient, args.verbose)
    if args.script:
        try:
            with open(args.script, encoding="utf-8") as f:
                state.add_steps(json.load(f))
        except (OSError, ValueError) as e:
            sys.stderr.write("mock_llm: %s: %s\n" % (args.script, e))
            return 2
    Handler.state = state
    server = Server(("127.0.0.1", args.port), Handler)
    if args.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.tls_cert)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    port = server.server_address[1]

    def stop(signum, frame):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    if args.port_file:
        tmp = "%s.tmp.%d" % (args.port_file, os.getpid())
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.replace(tmp, args.port_file)
    if args.verbose:
        sys.stderr.write("mock_llm: listening on 127.0.0.1:%d\n" % port)
    server.serve_forever(poll_interval=0.1)
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
