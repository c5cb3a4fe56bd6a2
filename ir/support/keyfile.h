/* The `key = value` text files of targets (backend/resources/target.c) and die targets
 * (runtime/die/target.c): one reader of their lines. */
#ifndef WAFERC_IR_SUPPORT_KEYFILE_H
#define WAFERC_IR_SUPPORT_KEYFILE_H

#include <stdio.h>

typedef struct wf_keyline {
  char buf[1024];       /* the line, cut into key and value */
  char *key, *val;      /* trimmed, inside buf */
  unsigned line;        /* 1-based line number */
  unsigned col, vcol;   /* 1-based columns of the key and of the value */
} wf_keyline;

/* The next `key = value` line of f: a comment (#...) is dropped, blank lines are skipped, key
 * and value are trimmed. Returns 1 with kl filled, 0 at the end of the file. A line without
 * '=' is reported at its place in `path` ("expected 'key = value'"), counted in *errors and
 * skipped. Set kl->line to 0 before the first call. */
int wf_keyfile_next(FILE *f, const char *path, wf_keyline *kl, int *errors);

#endif
