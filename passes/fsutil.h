/* Small file-system helpers shared by the pass manager and the command-line tools. */
#ifndef WAFERC_PASSES_FSUTIL_H
#define WAFERC_PASSES_FSUTIL_H

/* mkdir -p. Returns 0, or nonzero after reporting "cannot create directory". */
int wf_mkdir_p(const char *path);
/* Writes `text` to `path` (replacing it). Returns 0, or nonzero after reporting. */
int wf_write_text_file(const char *path, const char *text);
/* path + "/" + name, malloc'd. */
char *wf_path_join(const char *dir, const char *name);

#endif
