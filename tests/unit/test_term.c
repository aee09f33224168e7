/* test_term.c - the width and cleaning of what Forge shows on a terminal
 * (app/term.h): display columns, cutting to a width, control characters. */
#include "app/term.h"
#include "unit.h"

#include <string.h>

static size_t cols(const char *s)
{
	return term_columns(s, strlen(s));
}

static void test_columns(void)
{
	CHECK_INT((int)cols("plain.txt"), 9);
	CHECK_INT((int)cols("café"), 4);                 /* é: 2 bytes, 1 column */
	CHECK_INT((int)cols("cafe\xcc\x81"), 4);         /* e + combining acute: 0 */
	CHECK_INT((int)cols("説明書.md"), 9);            /* wide: 2 columns each */
	CHECK_INT((int)cols("한글"), 4);
	CHECK_INT((int)cols("ok \xf0\x9f\x9a\x80"), 5);  /* an emoji: 2 */
	CHECK_INT((int)cols("\xff" "a"), 2);             /* a stray byte: 1 */
	CHECK_INT((int)cols("⠋ · …"), 5);
}

static void test_cut(void)
{
	const char *cjk = "模型正在思考";           /* 6 characters, 12 columns */

	CHECK_INT((int)term_cut(cjk, strlen(cjk), 12), 18);
	CHECK_INT((int)term_cut(cjk, strlen(cjk), 11), 15);   /* a wide character is not split */
	CHECK_INT((int)term_cut(cjk, strlen(cjk), 1), 0);
	CHECK_INT((int)term_cut("abc", 3, 2), 2);
	CHECK_INT((int)term_cut("abc", 3, 10), 3);
	/* a combining mark stays with its letter */
	CHECK_INT((int)term_cut("e\xcc\x81x", 4, 1), 3);
	CHECK_INT((int)term_cut("é", 2, 0), 0);
}

static void test_clean(void)
{
	char s[] = "a\033]0;T\a \xc2\x9b" "2J\tb\nc\x7f é 説";

	term_clean_line(s, strlen(s));
	CHECK_STR(s, "a ]0;T    2J b c  é 説");
	char t[] = "x\ty\nz\xc2\x85";
	term_clean(t, strlen(t));
	CHECK_STR(t, "x\ty\nz  ");
}

int main(void)
{
	RUN(test_columns);
	RUN(test_cut);
	RUN(test_clean);
	return unit_done();
}
