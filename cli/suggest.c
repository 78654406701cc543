/* suggest.c — "did you mean" for a mistyped option or verb. */
#include <string.h>

#include "cli.h"
#include "cli_int.h"

/* Edits (insert, delete, change, swap two neighbours) between a and b, capped at 9. */
static int distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	int d[3][64];

	if (la > 62 || lb > 62)
		return 9;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		int *cur = d[i % 3], *prev = d[(i - 1) % 3], *prev2 = d[(i + 1) % 3];
		cur[0] = (int)i;
		for (size_t j = 1; j <= lb; j++) {
			int best = prev[j - 1] + (a[i - 1] != b[j - 1]);
			if (prev[j] + 1 < best)
				best = prev[j] + 1;
			if (cur[j - 1] + 1 < best)
				best = cur[j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    prev2[j - 2] + 1 < best)
				best = prev2[j - 2] + 1;
			cur[j] = best;
		}
	}
	return d[la % 3][lb] > 9 ? 9 : d[la % 3][lb];
}

/* Keeps cand in *best when it is closer to word than what *best holds. */
static void consider(const char *word, const char *cand, const char **best, int *bestd)
{
	int d = distance(word, cand);

	if (d < *bestd) {
		*bestd = d;
		*best = cand;
	}
}

/* Close enough to be a typo: a third of the word, at least one edit, at most two. */
static int allowed(const char *word)
{
	int n = (int)strlen(word) / 3;

	return n < 1 ? 1 : n > 2 ? 2 : n;
}

const char *cli_suggest(const char *word, const char *const *cands, int n)
{
	const char *best = NULL;
	int bestd = allowed(word) + 1;

	for (int i = 0; i < n && cands[i]; i++)
		consider(word, cands[i], &best, &bestd);
	return best;
}

static void options_of(const struct poptOption *t, const char *word, const char **best, int *bestd)
{
	for (; t && (t->longName || t->shortName || t->argInfo || t->arg); t++) {
		if ((t->argInfo & POPT_ARG_MASK) == POPT_ARG_INCLUDE_TABLE)
			options_of(t->arg, word, best, bestd);
		else if (t->longName && !(t->argInfo & POPT_ARGFLAG_DOC_HIDDEN))
			consider(word, t->longName, best, bestd);
	}
}

const char *cli_suggest_option(const char *bad, const struct poptOption *table)
{
	const char *best = NULL, *word = bad;
	int bestd;

	while (*word == '-')
		word++;
	if (word - bad != 2) /* only long options: one letter is too short to guess from */
		return NULL;
	word = strndupa(word, strcspn(word, "="));
	bestd = allowed(word) + 1;
	options_of(table, word, &best, &bestd);
	return best;
}
