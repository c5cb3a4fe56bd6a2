/* Small file-system helpers shared by the frontend, pass manager, backend, runtime and tools. */
#ifndef WAFERC_PASSES_FSUTIL_H
#define WAFERC_PASSES_FSUTIL_H

/* mkdir -p. Returns 0, or nonzero after reporting "cannot create directory". */
int wf_mkdir_p(const char *path);
/* Writes `text` to `path` (replacing it). Returns 0, or nonzero after reporting. */
int wf_write_text_file(const char *path, const char *text);
/* Reads a whole file into a malloc'd, NUL-terminated buffer; *len (if not NULL) gets its size.
 * Returns NULL with errno set (nothing reported: callers say what the file was for). Works
 * on pipes, and fails cleanly on directories and read errors. */
char *wf_read_file(const char *path, size_t *len);
/* path + "/" + name, malloc'd. */
char *wf_path_join(const char *dir, const char *name);

#endif
