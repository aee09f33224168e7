/*
 * tui_palette.c - the command palette of `forge tui` (tui.h): the existing
 * commands, run as processes (`forge CMD [TRACE]`) on the terminal, so they
 * behave exactly as when typed; the screen comes back after a key.
 */
#include "app/tui.h"

#include "app/cli.h"
#include "core/buf.h"
#include "core/forge.h"

#include <curses.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const struct {
	const char *name, *help;
	bool trace;             /* takes the selected run */
} commands[] = {
	{ "run", "start a run (asks for the task)", false },
	{ "resume", "continue the selected run", true },
	{ "cancel", "cancel the selected run", true },
	{ "show", "the selected run in full", true },
	{ "merge", "merge the selected run's branch", true },
	{ "gc", "remove worktrees and branches of finished runs", false },
};
enum { NCOMMANDS = sizeof commands / sizeof commands[0] };

/* Run forge with argv (argv[0] "forge", NULL-terminated) on the terminal;
 * its exit status, or -1 when it could not start. */
static int run_forge(const struct tui *t, char *const *argv)
{
	struct buf path = BUF_INIT;
	int status = -1;
	pid_t pid;

	buf_addf(&path, "%s/forge", t->bindir);
	def_prog_mode();
	endwin();
	printf("$ forge");
	for (int i = 1; argv[i]; i++)
		printf(" %s", argv[i]);
	printf("\n");
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		execv(path.buf, argv);
		fprintf(stderr, "forge tui: cannot run %s: %s\n", path.buf, strerror(errno));
		_exit(127);
	}
	if (pid > 0) {
		/* Ctrl-C belongs to the command while it runs */
		signal(SIGINT, SIG_IGN);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		printf("\n[forge %s exited %d; press Enter to return]", argv[1], status);
		fflush(stdout);
		/* a resize (SIGWINCH) interrupts the read: not the Enter awaited,
		 * which would wipe the output the window grew to read */
		for (int c; (c = getchar()) != '\n';) {
			if (c != EOF)
				continue;
			if (!ferror(stdin) || errno != EINTR || tui_stop)
				break;
			clearerr(stdin);
		}
	}
	buf_release(&path);
	reset_prog_mode();
	tui_screen_open_signals();
	refresh();
	return status;
}

static int choose(struct tui *t, const char *trace)
{
	int sel = 0;

	for (;;) {
		erase();
		tui_put(t, 0, 0, COLS, TUI_HEAD, trace ? "commands (the selected run: " : "commands");
		if (trace)
			tui_put(t, 0, 28, COLS - 28, TUI_HEAD, trace);
		for (int i = 0; i < NCOMMANDS; i++) {
			char row[256];
			snprintf(row, sizeof row, "  %-8s %s", commands[i].name, commands[i].help);
			tui_put(t, 2 + i, 0, COLS, i == sel ? TUI_SELECTED : TUI_PLAIN, row);
		}
		tui_footer(t, " Enter run  Esc back  arrows or the first letter choose");
		refresh();
		int c = tui_getch();
		if (tui_stop || c == 27 || c == 3 || c == 'q')
			return -1;
		if (c == KEY_UP || c == 'k')
			sel = (sel + NCOMMANDS - 1) % NCOMMANDS;
		else if (c == KEY_DOWN || c == 'j')
			sel = (sel + 1) % NCOMMANDS;
		else if (c == '\n' || c == '\r' || c == KEY_ENTER)
			return sel;
		for (int i = 0; i < NCOMMANDS; i++)
			if (c == commands[i].name[0] && strchr("rcsmg", c) && (c != 'r' || i == 0))
				sel = i;
	}
}

void tui_palette(struct tui *t)
{
	const char *trace = t->screen == TUI_RUN ? t->trace : tui_list_selected(t);
	char *copy = trace ? xstrdup(trace) : NULL, *task = NULL;
	int i = choose(t, copy);

	if (i < 0)
		goto out;
	/* forge CMD, the options forge tui was given (--repo, --db, --config,
	 * -q/-v: the same store and configuration), the operand; 2 + 19 + 3
	 * entries at most */
	const char *argv[24] = { "forge", commands[i].name };
	int n = 2 + cli_common_argv(argv + 2, 20, t->common, true);
	if (commands[i].trace) {
		if (!copy) {
			tui_say(t, "%s needs a run: select one first", commands[i].name);
			goto out;
		}
		argv[n] = copy;
	} else if (i == 0) {
		task = tui_read_line(t, "task: ");
		if (!task || !*task) {
			tui_say(t, "no task: nothing started");
			goto out;
		}
		/* the text typed is the task, even one that starts with '-' */
		argv[n++] = "--";
		argv[n] = task;
	}
	int status = run_forge(t, (char *const *)argv);
	tui_say(t, "forge %s exited %d", commands[i].name, status);
out:
	free(task);
	free(copy);
}
