/* wafer-onnx-test — the phase-2 op scope, read from tests/onnx/scope.txt (format there). */
#ifndef WAFER_ONNX_TEST_SCOPE_H
#define WAFER_ONNX_TEST_SCOPE_H

typedef struct scope_entry {
  char prefix[96]; /* test-name prefix */
  char op[64];     /* ONNX op type */
  int in_scope;
} scope_entry;

typedef struct scope {
  int n;
  scope_entry *v;
  int n_ops;           /* in-scope op types */
  char (*ops)[64];
  char path[512];      /* where it was read from */
} scope;

/* Loads `path`; when NULL, looks in $WAFERC_SOURCE_DIR/tests/onnx/scope.txt, then relative to
 * the executable (build/bin/../../tests/onnx/scope.txt). 0 on success, else reports an error. */
int scope_load(scope *s, const char *path, const char *argv0);
void scope_free(scope *s);
/* The entry whose prefix is the longest prefix of `test_name`, or NULL. */
const scope_entry *scope_match(const scope *s, const char *test_name);
int scope_has_op(const scope *s, const char *op);

#endif
