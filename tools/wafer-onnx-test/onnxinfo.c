/* wafer-onnx-test — a minimal protobuf wire-format walk over ModelProto (see onnxinfo.h).
 * Field numbers are those of onnx.proto (ModelProto.graph = 7, GraphProto.node = 1, ...). */
#include "onnxinfo.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct span {
  const uint8_t *p, *end;
} span;

/* One field: number, wire type, and either its varint or its bytes. */
typedef struct field {
  uint32_t num;
  int wire;
  uint64_t v;
  span bytes;
} field;

static int read_varint(span *s, uint64_t *out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (s->p >= s->end) return -1;
    uint8_t b = *s->p++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *out = v;
      return 0;
    }
  }
  return -1;
}

/* Returns 1 with the next field, 0 at the end, -1 on malformed input. */
static int next_field(span *s, field *f) {
  if (s->p >= s->end) return 0;
  uint64_t key;
  if (read_varint(s, &key) != 0) return -1;
  f->num = (uint32_t)(key >> 3);
  f->wire = (int)(key & 7);
  switch (f->wire) {
  case 0: return read_varint(s, &f->v) == 0 ? 1 : -1;
  case 1:
    if (s->end - s->p < 8) return -1;
    s->p += 8;
    return 1;
  case 5:
    if (s->end - s->p < 4) return -1;
    s->p += 4;
    return 1;
  case 2: {
    uint64_t len;
    if (read_varint(s, &len) != 0 || len > (uint64_t)(s->end - s->p)) return -1;
    f->bytes.p = s->p;
    f->bytes.end = s->p + len;
    s->p += len;
    return 1;
  }
  default: return -1; /* groups (3, 4) are not used by onnx.proto */
  }
}

static void copy_str(char *dst, span b) {
  size_t n = (size_t)(b.end - b.p);
  if (n >= OI_MAX_NAME) n = OI_MAX_NAME - 1;
  memcpy(dst, b.p, n);
  dst[n] = 0;
}

/* TypeProto -> is it a tensor, and is any dimension unknown? -1 on malformed input. */
static int read_type(span s, oi_io *io) {
  field f;
  int r;
  while ((r = next_field(&s, &f)) == 1) {
    if (f.num != 1 || f.wire != 2) continue; /* TypeProto.tensor_type */
    io->is_tensor = 1;
    span t = f.bytes;
    field g;
    int has_shape = 0;
    while ((r = next_field(&t, &g)) == 1) {
      if (g.num == 1 && g.wire == 0) io->elem_type = (int)g.v; /* Tensor.elem_type */
      if (g.num != 2 || g.wire != 2) continue; /* Tensor.shape */
      has_shape = 1;
      span sh = g.bytes;
      field d;
      while ((r = next_field(&sh, &d)) == 1) {
        if (d.num != 1 || d.wire != 2) continue; /* TensorShapeProto.dim */
        span ds = d.bytes;
        field x;
        int known = 0;
        while ((r = next_field(&ds, &x)) == 1)
          if (x.num == 1 && x.wire == 0) known = 1; /* dim_value */
        if (r < 0) return -1;
        if (!known) io->dynamic = 1;
      }
      if (r < 0) return -1;
    }
    if (r < 0) return -1;
    if (!has_shape) io->dynamic = 1;
  }
  return r;
}

static int read_value_info(span s, oi_io *io) {
  memset(io, 0, sizeof *io);
  field f;
  int r;
  while ((r = next_field(&s, &f)) == 1) {
    if (f.num == 1 && f.wire == 2) copy_str(io->name, f.bytes);
    else if (f.num == 2 && f.wire == 2 && read_type(f.bytes, io) < 0) return -1;
  }
  return r;
}

static void add_op(oi_model *m, const char *op) {
  for (int i = 0; i < m->n_ops; i++)
    if (!strcmp(m->ops[i], op)) return;
  if (m->n_ops < OI_MAX_OPS) snprintf(m->ops[m->n_ops++], OI_MAX_NAME, "%s", op);
}

int oi_shape_operand(const char *op, int index) {
  static const struct {
    const char *op;
    unsigned inputs; /* bit i: input i */
  } table[] = {
      {"Reshape", 1u << 1},   {"Slice", 0xfu << 1},    {"Squeeze", 1u << 1},
      {"Unsqueeze", 1u << 1}, {"ReduceSum", 1u << 1},  {"ReduceMean", 1u << 1},
      {"ReduceMax", 1u << 1}, {"Split", 1u << 1},      {"Expand", 1u << 1},
      {"ConstantOfShape", 1u}, {"Range", 7u},          {"TopK", 1u << 1},
      {"Trilu", 1u << 1},     {"Tile", 1u << 1},       {"OneHot", 1u << 1},
      {"CumSum", 1u << 1},
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (!strcmp(table[i].op, op)) return index < 32 && (table[i].inputs >> index) & 1;
  return 0;
}

/* Names consumed at shape-like operands, marked on the graph inputs after the walk. */
#define OI_MAX_SHAPE_NAMES 64
static char g_shape_names[OI_MAX_SHAPE_NAMES][OI_MAX_NAME];
static int g_n_shape_names;

static int read_node(span s, oi_model *m) {
  char op[OI_MAX_NAME] = "", domain[OI_MAX_NAME] = "";
  char ins[8][OI_MAX_NAME];
  int n_ins = 0;
  field f;
  int r;
  while ((r = next_field(&s, &f)) == 1) {
    if (f.num == 4 && f.wire == 2) copy_str(op, f.bytes);
    else if (f.num == 7 && f.wire == 2) copy_str(domain, f.bytes);
    else if (f.num == 1 && f.wire == 2 && n_ins < 8) copy_str(ins[n_ins++], f.bytes);
  }
  if (r < 0 || !op[0]) return -1;
  if (!domain[0] || !strcmp(domain, "ai.onnx"))
    for (int i = 0; i < n_ins; i++)
      if (ins[i][0] && oi_shape_operand(op, i) && g_n_shape_names < OI_MAX_SHAPE_NAMES)
        memcpy(g_shape_names[g_n_shape_names++], ins[i], OI_MAX_NAME);
  m->n_nodes++;
  if (domain[0] && strcmp(domain, "ai.onnx")) {
    char q[2 * OI_MAX_NAME + 1];
    snprintf(q, sizeof q, "%s.%s", domain, op);
    add_op(m, q);
  } else {
    add_op(m, op);
  }
  return 0;
}

static int read_graph(span s, oi_model *m) {
  /* Inputs that name an initializer are weights, not test inputs: collect both, then filter. */
  oi_io all_in[OI_MAX_IO];
  int n_in = 0;
  char inits[256][OI_MAX_NAME];
  int n_inits = 0;
  field f;
  int r;
  while ((r = next_field(&s, &f)) == 1) {
    if (f.wire != 2) continue;
    if (f.num == 1) {
      if (read_node(f.bytes, m) < 0) return -1;
    } else if (f.num == 5 && n_inits < 256) { /* initializer: TensorProto.name = 8 */
      span t = f.bytes;
      field g;
      int rr;
      inits[n_inits][0] = 0;
      while ((rr = next_field(&t, &g)) == 1)
        if (g.num == 8 && g.wire == 2) copy_str(inits[n_inits], g.bytes);
      if (rr < 0) return -1;
      n_inits++;
    } else if (f.num == 11) {
      if (n_in == OI_MAX_IO || read_value_info(f.bytes, &all_in[n_in++]) < 0) return -1;
    } else if (f.num == 12) {
      if (m->n_outputs == OI_MAX_IO || read_value_info(f.bytes, &m->outputs[m->n_outputs++]) < 0)
        return -1;
    }
  }
  if (r < 0) return -1;
  for (int i = 0; i < n_in; i++) {
    int is_init = 0;
    for (int j = 0; j < n_inits && !is_init; j++) is_init = !strcmp(inits[j], all_in[i].name);
    if (is_init) continue;
    for (int j = 0; j < g_n_shape_names; j++)
      if (!strcmp(g_shape_names[j], all_in[i].name)) all_in[i].shape_operand = 1;
    m->inputs[m->n_inputs++] = all_in[i];
  }
  return 0;
}

int oi_read(const char *path, oi_model *m, char *why, int why_len) {
  memset(m, 0, sizeof *m);
  FILE *fp = fopen(path, "rb");
  if (!fp) {
    snprintf(why, (size_t)why_len, "cannot open %s", path);
    return -1;
  }
  uint8_t *buf = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len == cap) {
      cap = cap ? 2 * cap : 1 << 16;
      uint8_t *nb = realloc(buf, cap);
      if (!nb) {
        free(buf);
        fclose(fp);
        snprintf(why, (size_t)why_len, "out of memory reading %s", path);
        return -1;
      }
      buf = nb;
    }
    size_t got = fread(buf + len, 1, cap - len, fp);
    if (got == 0) break;
    len += got;
  }
  fclose(fp);
  span s = {buf, buf + len};
  field f;
  int r, have_graph = 0;
  g_n_shape_names = 0;
  while ((r = next_field(&s, &f)) == 1) {
    if (f.num == 7 && f.wire == 2) {
      if (read_graph(f.bytes, m) < 0) {
        r = -1;
        break;
      }
      have_graph = 1;
    } else if (f.num == 25 && f.wire == 2) {
      m->n_functions++;
    }
  }
  free(buf);
  if (r < 0 || !have_graph) {
    snprintf(why, (size_t)why_len, "%s: not a readable ModelProto%s", path,
             r < 0 ? " (malformed protobuf or too many inputs)" : " (no graph)");
    return -1;
  }
  return 0;
}

/* ---- writing a copy with some inputs frozen into initializers -------------------------- */

typedef struct buf {
  uint8_t *p;
  size_t n, cap;
  int oom;
} buf;

static void put(buf *b, const void *p, size_t n) {
  if (b->oom) return;
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->n + n) cap *= 2;
    uint8_t *np = realloc(b->p, cap);
    if (!np) {
      b->oom = 1;
      return;
    }
    b->p = np, b->cap = cap;
  }
  memcpy(b->p + b->n, p, n);
  b->n += n;
}

static void put_varint(buf *b, uint64_t v) {
  uint8_t tmp[10];
  int k = 0;
  do {
    tmp[k++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    v >>= 7;
  } while (v);
  put(b, tmp, (size_t)k);
}

static void put_bytes_field(buf *b, uint32_t num, const void *p, size_t n) {
  put_varint(b, (uint64_t)num << 3 | 2);
  put_varint(b, n);
  put(b, p, n);
}

static int slurp(const char *path, uint8_t **out, size_t *len) {
  FILE *fp = fopen(path, "rb");
  if (!fp) return -1;
  buf b = {0};
  uint8_t chunk[65536];
  size_t got;
  while ((got = fread(chunk, 1, sizeof chunk, fp)) > 0) put(&b, chunk, got);
  fclose(fp);
  if (b.oom) {
    free(b.p);
    return -1;
  }
  *out = b.p;
  *len = b.n;
  return 0;
}

static int is_frozen(span value_info, int n, const char *const *names) {
  oi_io io;
  if (read_value_info(value_info, &io) < 0) return 0;
  for (int i = 0; i < n; i++)
    if (!strcmp(io.name, names[i])) return 1;
  return 0;
}

int oi_freeze_inputs(const char *in, const char *out, int n, const char *const *names,
                     const char *const *pb_paths, char *why, int why_len) {
  why[0] = 0;
  uint8_t *model = NULL;
  size_t len = 0;
  if (slurp(in, &model, &len) != 0) {
    snprintf(why, (size_t)why_len, "cannot read %s", in);
    return -1;
  }
  buf mb = {0}, gb = {0};
  span s = {model, model + len};
  field f;
  int r, rc = -1;
  const uint8_t *start = s.p;
  while ((r = next_field(&s, &f)) == 1) {
    if (f.num != 7 || f.wire != 2) {
      put(&mb, start, (size_t)(s.p - start)); /* every other field as it was */
      start = s.p;
      continue;
    }
    /* The graph: drop the frozen inputs' ValueInfos, add one initializer per frozen input
     * (the test's TensorProto bytes, then its name: protobuf keeps the last value). */
    span g = f.bytes;
    field h;
    const uint8_t *gs = g.p;
    int rr;
    gb.n = 0;
    while ((rr = next_field(&g, &h)) == 1) {
      if (!(h.num == 11 && h.wire == 2 && is_frozen(h.bytes, n, names))) put(&gb, gs, (size_t)(g.p - gs));
      gs = g.p;
    }
    if (rr < 0) goto done;
    for (int i = 0; i < n; i++) {
      uint8_t *pb = NULL;
      size_t pl = 0;
      if (slurp(pb_paths[i], &pb, &pl) != 0) {
        snprintf(why, (size_t)why_len, "cannot read %s", pb_paths[i]);
        goto done;
      }
      buf t = {0};
      put(&t, pb, pl);
      put_bytes_field(&t, 8, names[i], strlen(names[i]));
      free(pb);
      if (!t.oom) put_bytes_field(&gb, 5, t.p, t.n);
      gb.oom |= t.oom;
      free(t.p);
    }
    put_bytes_field(&mb, 7, gb.p, gb.n);
    start = s.p;
  }
  if (r < 0) {
    snprintf(why, (size_t)why_len, "%s: malformed protobuf", in);
    goto done;
  }
  if (mb.oom || gb.oom) {
    snprintf(why, (size_t)why_len, "out of memory");
    goto done;
  }
  FILE *fp = fopen(out, "wb");
  if (!fp || fwrite(mb.p, 1, mb.n, fp) != mb.n) {
    snprintf(why, (size_t)why_len, "cannot write %s", out);
    if (fp) fclose(fp);
    goto done;
  }
  rc = fclose(fp) == 0 ? 0 : -1;
  if (rc) snprintf(why, (size_t)why_len, "cannot write %s", out);
done:
  if (rc && !why[0]) snprintf(why, (size_t)why_len, "%s: malformed graph", in);
  free(model);
  free(mb.p);
  free(gb.p);
  return rc;
}
