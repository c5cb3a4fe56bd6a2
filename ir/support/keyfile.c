/* Lines of `key = value` text files (keyfile.h). */
#include "ir/support/keyfile.h"

#include <ctype.h>
#include <string.h>

#include "waferc/diag.h"

static char *trim(char *s) {
  while (isspace((unsigned char)*s)) s++;
  size_t n = strlen(s);
  while (n && isspace((unsigned char)s[n - 1])) s[--n] = 0;
  return s;
}

int wf_keyfile_next(FILE *f, const char *path, wf_keyline *kl, int *errors) {
  while (fgets(kl->buf, sizeof kl->buf, f)) {
    kl->line++;
    char *hash = strchr(kl->buf, '#');
    if (hash) *hash = 0;
    char *s = trim(kl->buf);
    if (!*s) continue;
    kl->col = (unsigned)(s - kl->buf) + 1;
    char *eq = strchr(s, '=');
    if (!eq) {
      wf_error(wf_loc_make(path, kl->line, kl->col), "expected 'key = value'");
      (*errors)++;
      continue;
    }
    *eq = 0;
    kl->key = trim(s);
    kl->val = trim(eq + 1);
    kl->vcol = (unsigned)(kl->val - kl->buf) + 1;
    return 1;
  }
  return 0;
}
