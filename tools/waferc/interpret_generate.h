/* waferc --interpret --generate=N: the reference for generation (issue 17).
 *
 *   waferc model.onnx --interpret --input input_ids=prompt.npy --generate=8 --output-dir ref/
 *
 * Greedy decoding that recomputes the whole sequence at every step: step i imports the model
 * at input_ids=1x(L+i), runs the reference interpreter, takes the argmax of the last row of
 * the first output (logits [1, S, V]) and appends it. No KV cache is involved, so the tokens
 * are a check on waferrun's cached decode that shares none of its machinery. Writes
 * ref/tokens.npy (i64 [1, N]) and prints the tokens.
 */
#ifndef WAFERC_TOOLS_INTERPRET_GENERATE_H
#define WAFERC_TOOLS_INTERPRET_GENERATE_H

#include "waferc/ir.h"

/* main.c's model loader: imports the model with these ONNX input shapes ("NAME=DIMS" each) and
 * runs the --interpret pipeline on it. Returns the module with *rc = WF_EXIT_OK, or sets *rc
 * (errors reported) and returns NULL or a module the caller still frees. */
typedef wf_module *(*wf_waferc_load_fn)(void *user, const char *const *shapes, int n_shapes, int *rc);

typedef struct wf_waferc_generate_ref {
  const char *model;                   /* the model file (.onnx; .wir is refused) */
  const char *func;                    /* --func, or NULL: main, else the first function */
  const char *const *inputs;           /* --input NAME=FILE: exactly one, the prompt */
  int n_inputs;
  const char *const *input_shapes;     /* the user's --input-shape options */
  int n_input_shapes;
  int n_new;                           /* --generate=N: tokens to generate (>= 1) */
  const char *output_dir;              /* --output-dir: tokens.npy goes there */
  wf_waferc_load_fn load;              /* see above */
  void *load_user;
} wf_waferc_generate_ref;

/* Runs the generation; a WF_EXIT_* code, errors reported. Nothing is written unless every step
 * succeeded. */
int wf_waferc_interpret_generate(const wf_waferc_generate_ref *g);

#endif
