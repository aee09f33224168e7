/*
 * mcp.h - a Model Context Protocol client over stdio (JSON-RPC 2.0, one
 * JSON object per line; the MCP specification's stdio transport and
 * lifecycle, protocol version 2025-06-18).
 *
 *	struct mcp_opts o = MCP_OPTS_INIT;
 *	o.name = "github"; o.argv = argv; o.envp = env; o.cwd = worktree;
 *	struct mcp_client *c;
 *	if (mcp_open(&c, &o) < 0)                 // spawn, initialize, initialized
 *		... forge_last_error() says why (and the server's stderr) ...
 *	jv tools;
 *	mcp_tools(&tools, c);                     // tools/list, every page
 *	struct mcp_call_result r;
 *	int rc = mcp_call(&r, c, "search", args);  // tools/call
 *	... rc 0: r.text, r.is_error, r.structured ...
 *	mcp_call_result_release(&r);
 *	mcp_close(c);                             // close stdin, wait, TERM, KILL
 *
 * The server is spawned with argv (argv[0] without a '/' is looked up in
 * the PATH of this process), envp (the caller builds it: no secrets), cwd,
 * stdin and stdout as pipes and stderr captured: its last stderr_cap bytes
 * are kept for the log (mcp_stderr()).  It runs contained (os/spawn.h,
 * CONTAIN): under a small init, in a PID namespace of its own where the
 * kernel allows one, so that what it starts (the real server behind `npx`,
 * `uvx`, `sh -c`; what that detaches) ends when it exits, when mcp_close()
 * ends it, and when this process dies, also by SIGKILL, which stops
 * nothing here (PR_SET_PDEATHSIG SIGKILL takes the namespace along).
 *
 * Requests wait at most timeout_ms for their answer; a request that times
 * out is cancelled (notifications/cancelled with the request id and a
 * reason; not initialize, which MCP says a client must not cancel) and its
 * late answer, if any, is dropped.  A request the server
 * did not read whole by then stays whole: its rest (and the cancellation)
 * are written before anything else; one none of which could be written is
 * not sent at all and not cancelled.  While waiting, the
 * client answers the server's own requests (ping with {}, anything else
 * with -32601 "method not found"), notes notifications/tools/list_changed
 * (the next mcp_tools() or mcp_call() lists the tools again) and ignores
 * other notifications.
 *
 * A server that exits, closes its stdout, writes a line that is not a JSON
 * object or a line longer than max_line, or answers with an id that no
 * request of ours has (ours are numbers: "1" for 1, an object, none) is
 * dead: the call fails with MCP_EDEAD and every later call fails at once
 * the same way.  A JSON-RPC error answer leaves the server usable
 * (MCP_ERPC), also one with the id null (the server could not read the
 * request), and so does an answer nested deeper than libjq reads (256
 * levels, an array counting 1 and an object 2): the request it answers
 * fails alone (MCP_ERPC), and a tool of tools/list that deep is left out
 * (mcp_tools_unreadable()).
 *
 * Nothing here prints or exits; errors are forge_error() messages.
 * Ownership: jv arguments follow json.h (consumed unless "borrows").
 */
#ifndef FORGE_MCP_H
#define FORGE_MCP_H

#include <jv.h>
#include <stdbool.h>
#include <stddef.h>

/* The version Forge asks for, and every version it accepts from a server
 * (newest first, NULL-terminated). */
#define MCP_PROTOCOL_VERSION "2025-06-18"
extern const char *const mcp_protocol_versions[];

/* Return codes (besides 0). */
enum {
	MCP_EFAIL = -1,      /* could not spawn / initialize, or misuse */
	MCP_ERPC = -2,       /* the server answered with a JSON-RPC error, or an
				answer Forge cannot use (no result object, too deep) */
	MCP_ETIMEOUT = -3,   /* no answer within timeout_ms: cancelled */
	MCP_EDEAD = -4,      /* the server exited or broke the protocol */
};

/* How long a server gets to leave, after its stdin closes and after SIGTERM. */
#define MCP_KILL_GRACE_MS 2000

struct mcp_opts {
	const char *name;              /* for messages: "github" */
	const char *const *argv;       /* the command and its arguments; required */
	char *const *envp;             /* the server's environment; NULL = empty */
	const char *cwd;               /* NULL = the caller's */
	long timeout_ms;               /* per request; 0 = 30000 */
	long init_timeout_ms;          /* initialize; 0 = timeout_ms */
	size_t max_line;               /* longest message accepted; 0 = 8 MiB */
	size_t stderr_cap;             /* bytes of stderr kept (the last ones); 0 = 64 KiB */
	long kill_grace_ms;            /* close -> SIGTERM -> SIGKILL waits; 0 = MCP_KILL_GRACE_MS */
	const char *client_version;    /* clientInfo.version; NULL = "0" */
};

#define MCP_OPTS_INIT { 0 }

struct mcp_client;

/*
 * Spawn the server and run the lifecycle's first phase: initialize (our
 * protocol version, capabilities {}, clientInfo {"name":"forge"}), accept a
 * protocolVersion listed in mcp_protocol_versions, refuse any other with a
 * message naming both, then notifications/initialized.  0 with *out, or a
 * negative code with a message that ends with the server's stderr tail;
 * *out is NULL then and the server is gone.
 */
int mcp_open(struct mcp_client **out, const struct mcp_opts *opts);

/*
 * The server's tools, each {"name","description"?,"inputSchema",...} as the
 * server gave them; listed (following nextCursor) on the first call and again
 * after a notifications/tools/list_changed.  *out is a new reference.
 * 0, or a negative code with a message (*out is jv_null()).  A pager that
 * goes round (a nextCursor it gave before) or past 1000 pages is not
 * followed further: *out has the pages so far, and mcp_tools_cut() says so.
 */
int mcp_tools(jv *out, struct mcp_client *c);
/* Why the last listing stopped before the server's last page (for a
 * warning), or NULL when it has them all.  Owned by c, until the next. */
const char *mcp_tools_cut(const struct mcp_client *c);
/* The tools the last listing left out because their definition nests
 * deeper than libjq reads: [{"name": string or null, "reason"}] (borrowed,
 * until the next listing; [] when none). */
jv mcp_tools_unreadable(const struct mcp_client *c);

struct mcp_call_result {
	bool is_error;       /* the tool said it failed (isError) */
	char *text;          /* the content as text (malloc'd): text items joined
				by newlines, other items as a short note; the
				structured content as JSON when there is no text */
	jv content;          /* the content array as sent */
	jv structured;       /* structuredContent, or jv_null() */
	long long duration_ms;
};

/*
 * tools/call name with arguments (borrowed; an object).  0 with *out filled
 * (also when the tool reports is_error), else a negative code with a
 * message and *out empty.  Lists the tools first when the server said they
 * changed.  *out must be released either way.
 */
int mcp_call(struct mcp_call_result *out, struct mcp_client *c, const char *name, jv arguments);
void mcp_call_result_release(struct mcp_call_result *r);

/*
 * A raw request: method with params (consumed; jv_null() for none); *result
 * the answer's result (a new reference).  Same codes as mcp_call().
 */
int mcp_request(jv *result, struct mcp_client *c, const char *method, jv params);

/* The negotiated protocol version; the server's serverInfo (borrowed, or
 * null); its instructions (or NULL). */
const char *mcp_protocol(const struct mcp_client *c);
jv mcp_server_info(const struct mcp_client *c);
const char *mcp_instructions(const struct mcp_client *c);

/* The time limit of later requests (ms > 0). */
void mcp_set_timeout(struct mcp_client *c, long ms);

/* False once the server died or broke the protocol. */
bool mcp_alive(const struct mcp_client *c);

/* Why it died ("" while alive); borrowed. */
const char *mcp_death(const struct mcp_client *c);

/* What the server wrote on stderr (its last stderr_cap bytes, prefixed
 * "[… N bytes omitted …]\n" when more came); borrowed, "" when nothing. */
const char *mcp_stderr(struct mcp_client *c);

/* The server's process id (0 once it was reaped). */
int mcp_pid(const struct mcp_client *c);

/*
 * Shut down: close the server's stdin and wait kill_grace_ms for it to
 * exit, then SIGTERM and wait again, then SIGKILL.  Frees c (NULL is
 * fine).  *status (may be NULL) gets its exit status, or 128 + signal.
 */
void mcp_close_status(struct mcp_client *c, int *status);
void mcp_close(struct mcp_client *c);

/*
 * mcp_close_status() of n servers at once: every stdin closed, then one
 * wait of kill_grace_ms for them all, SIGTERM to those still there, one
 * more wait, SIGKILL -- two graces in all however many stay (not two
 * each, one server after another).  cs[i] NULL is skipped; each is freed
 * and set to NULL; status (may be NULL) gets n statuses as above.
 */
void mcp_close_all(struct mcp_client **cs, size_t n, int *status);

#endif
