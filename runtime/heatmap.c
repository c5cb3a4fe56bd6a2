/* --heatmap: per-PE and per-link maps as PNG (libpng) + CSV (runtime/heatmap.h).
 *
 * Layout of every image: two title lines (what the map shows; the plan, its GEMM lowering,
 * target and mesh), the mesh (PE (0,0) top left, x to the right, y down; each PE a square
 * block, scaled so small meshes stay readable) with x coordinates above it and y coordinates
 * left of it, a vertical colour bar labelled with the scale's top and bottom, and a key line
 * with the values' range. By default every map of every run uses the same fixed scale (0-100%
 * of cycles, or of a link's capacity of one wavelet per cycle), so images compare at a
 * glance. Text is drawn with the 5x7 bitmap font below, so the images need no font library. */
#include <errno.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "runtime/heatmap.h"
#include "waferc/diag.h"

/* ---- a 5x7 bitmap font: one byte per row, bit 4 = leftmost pixel; lowercase has a 5-row
 * x-height (g p q y: drawn two rows lower, with a 2-row descender) -------------------------- */

typedef struct glyph {
  char c;
  unsigned char rows[7];
} glyph;

static const glyph font[] = {
    {'0', {0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E}}, {'1', {0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E}},
    {'2', {0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F}}, {'3', {0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E}},
    {'4', {0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02}}, {'5', {0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E}},
    {'6', {0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E}}, {'7', {0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08}},
    {'8', {0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E}}, {'9', {0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C}},
    {'A', {0x0E, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11}}, {'B', {0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E}},
    {'C', {0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E}}, {'D', {0x1C, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1C}},
    {'E', {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F}}, {'F', {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10}},
    {'G', {0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F}}, {'H', {0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11}},
    {'I', {0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E}}, {'J', {0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C}},
    {'K', {0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11}}, {'L', {0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F}},
    {'M', {0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11}}, {'N', {0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11}},
    {'O', {0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E}}, {'P', {0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10}},
    {'Q', {0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D}}, {'R', {0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11}},
    {'S', {0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E}}, {'T', {0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04}},
    {'U', {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E}}, {'V', {0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04}},
    {'W', {0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A}}, {'X', {0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11}},
    {'Y', {0x11, 0x11, 0x11, 0x0A, 0x04, 0x04, 0x04}}, {'Z', {0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F}},
    {'.', {0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x0C}}, {'%', {0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03}},
    {':', {0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x0C, 0x00}}, {'-', {0x00, 0x00, 0x00, 0x1F, 0x00, 0x00, 0x00}},
    {'(', {0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02}}, {')', {0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08}},
    {',', {0x00, 0x00, 0x00, 0x00, 0x0C, 0x04, 0x08}}, {'/', {0x00, 0x01, 0x02, 0x04, 0x08, 0x10, 0x00}},
    {'=', {0x00, 0x00, 0x1F, 0x00, 0x1F, 0x00, 0x00}}, {'_', {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1F}},
    {'+', {0x00, 0x04, 0x04, 0x1F, 0x04, 0x04, 0x00}}, {'>', {0x08, 0x04, 0x02, 0x01, 0x02, 0x04, 0x08}},
    {'<', {0x02, 0x04, 0x08, 0x10, 0x08, 0x04, 0x02}}, {'[', {0x0E, 0x08, 0x08, 0x08, 0x08, 0x08, 0x0E}},
    {']', {0x0E, 0x02, 0x02, 0x02, 0x02, 0x02, 0x0E}}, {'*', {0x00, 0x04, 0x15, 0x0E, 0x15, 0x04, 0x00}},
    {'#', {0x0A, 0x0A, 0x1F, 0x0A, 0x1F, 0x0A, 0x0A}}, {';', {0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x04, 0x08}},
    {'a', {0x00, 0x00, 0x0E, 0x01, 0x0F, 0x11, 0x0F}}, {'b', {0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x1E}},
    {'c', {0x00, 0x00, 0x0E, 0x10, 0x10, 0x11, 0x0E}}, {'d', {0x01, 0x01, 0x0D, 0x13, 0x11, 0x11, 0x0F}},
    {'e', {0x00, 0x00, 0x0E, 0x11, 0x1F, 0x10, 0x0E}}, {'f', {0x06, 0x09, 0x08, 0x1C, 0x08, 0x08, 0x08}},
    {'g', {0x0F, 0x11, 0x11, 0x13, 0x0D, 0x01, 0x0E}}, {'h', {0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x11}},
    {'i', {0x04, 0x00, 0x0C, 0x04, 0x04, 0x04, 0x0E}}, {'j', {0x02, 0x00, 0x06, 0x02, 0x02, 0x12, 0x0C}},
    {'k', {0x10, 0x10, 0x12, 0x14, 0x18, 0x14, 0x12}}, {'l', {0x0C, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E}},
    {'m', {0x00, 0x00, 0x1A, 0x15, 0x15, 0x11, 0x11}}, {'n', {0x00, 0x00, 0x16, 0x19, 0x11, 0x11, 0x11}},
    {'o', {0x00, 0x00, 0x0E, 0x11, 0x11, 0x11, 0x0E}}, {'p', {0x1E, 0x11, 0x11, 0x11, 0x1E, 0x10, 0x10}},
    {'q', {0x0F, 0x11, 0x11, 0x11, 0x0F, 0x01, 0x01}}, {'r', {0x00, 0x00, 0x16, 0x19, 0x10, 0x10, 0x10}},
    {'s', {0x00, 0x00, 0x0E, 0x10, 0x0E, 0x01, 0x1E}}, {'t', {0x08, 0x08, 0x1C, 0x08, 0x08, 0x09, 0x06}},
    {'u', {0x00, 0x00, 0x11, 0x11, 0x11, 0x13, 0x0D}}, {'v', {0x00, 0x00, 0x11, 0x11, 0x11, 0x0A, 0x04}},
    {'w', {0x00, 0x00, 0x11, 0x11, 0x15, 0x15, 0x0A}}, {'x', {0x00, 0x00, 0x11, 0x0A, 0x04, 0x0A, 0x11}},
    {'y', {0x11, 0x11, 0x11, 0x11, 0x0F, 0x01, 0x0E}}, {'z', {0x00, 0x00, 0x1F, 0x02, 0x04, 0x08, 0x1F}},
};

static const unsigned char *glyph_rows(char c) {
  for (size_t i = 0; i < sizeof font / sizeof font[0]; i++)
    if (font[i].c == c) return font[i].rows;
  return NULL; /* space and anything unknown: blank */
}

/* ---- an RGB canvas ---------------------------------------------------------------------- */

typedef struct canvas {
  int w, h;
  unsigned char *px; /* RGB, row-major */
} canvas;

static void fill_rect(canvas *c, int x0, int y0, int w, int h, const unsigned char rgb[3]) {
  for (int y = y0 < 0 ? 0 : y0; y < y0 + h && y < c->h; y++)
    for (int x = x0 < 0 ? 0 : x0; x < x0 + w && x < c->w; x++)
      memcpy(c->px + ((size_t)y * c->w + x) * 3, rgb, 3);
}

#define CHAR_W 6 /* 5 pixels and a gap */

static void draw_text(canvas *c, int x, int y, const char *s, int scale, const unsigned char rgb[3]) {
  for (; *s; s++, x += CHAR_W * scale) {
    const unsigned char *g = glyph_rows(*s);
    if (!g) continue;
    /* g p q y hang two rows below the line (into the gap under it): their rows are x-height
     * then descender */
    int dy = strchr("gpqy", *s) ? 2 * scale : 0;
    for (int r = 0; r < 7; r++)
      for (int col = 0; col < 5; col++)
        if (g[r] >> (4 - col) & 1) fill_rect(c, x + col * scale, y + dy + r * scale, scale, scale, rgb);
  }
}

/* ---- colour ----------------------------------------------------------------------------- */

/* Viridis-like: dark purple (low) through blue and green to yellow (high); perceptually
 * ordered and readable in greyscale. */
static void colormap(double t, unsigned char rgb[3]) {
  static const unsigned char stops[5][3] = {
      {68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};
  if (!(t > 0)) t = 0; /* NaN too */
  if (t > 1) t = 1;
  double f = t * 4;
  int i = (int)f;
  if (i > 3) i = 3;
  f -= i;
  for (int k = 0; k < 3; k++)
    rgb[k] = (unsigned char)(stops[i][k] + (stops[i + 1][k] - stops[i][k]) * f + 0.5);
}

static const unsigned char C_BG[3] = {255, 255, 255}, C_TEXT[3] = {20, 20, 20},
                           C_NONE[3] = {150, 150, 150}, C_FRAME[3] = {90, 90, 90};

/* ---- options ---------------------------------------------------------------------------- */

int wf_heatmap_parse_scale(const char *text, wf_heatmap_opts *o) {
  if (!strcmp(text, "auto")) {
    o->auto_scale = 1;
    return 0;
  }
  char *end;
  double lo = strtod(text, &end);
  if (end == text || *end != ':') return -1;
  const char *h = end + 1;
  double hi = strtod(h, &end);
  if (end == h || *end || !(lo >= 0) || !(hi <= 100) || !(lo < hi)) return -1;
  o->auto_scale = 0;
  o->lo = lo;
  o->hi = hi;
  return 0;
}

/* ---- layout ----------------------------------------------------------------------------- */

typedef struct layout {
  int block;            /* pixels per PE */
  int gap;              /* pixels between PEs */
  int scale;            /* text scale */
  int line_h;           /* pixels per text line */
  int xstep, ystep;     /* axis labels every so many PEs */
  int xneed, yneed;     /* pixels a label needs along its axis */
  int mx, my, mw, mh;   /* mesh area */
  int bx, by, bw, bh;   /* colour bar */
  int img_w, img_h;
} layout;

#define MARGIN 10
#define LABEL_CHARS 10  /* colour bar labels: ">100.0%", "1.00/CYC" */
#define TEXT_CHARS 56   /* title and key lines the layout makes room for (longer ones are cut) */

static int digits(int v) {
  int d = 1;
  while (v >= 10) {
    v /= 10;
    d++;
  }
  return d;
}

/* The smallest of 1, 2, 5, 10, 20, 50, ... PEs whose labels do not touch. */
static int label_step(int block, int need_px) {
  for (int m = 1;; m *= 10)
    for (int k = 0; k < 3; k++) {
      int step = m * (k == 0 ? 1 : k == 1 ? 2 : 5);
      if ((int64_t)step * block >= need_px) return step;
    }
}

static layout make_layout(int w, int h) {
  layout L;
  int big = w > h ? w : h;
  L.block = 480 / (big ? big : 1);
  if (L.block > 48) L.block = 48;
  if (L.block < 1) L.block = 1;
  L.gap = L.block >= 8 ? 1 : 0;
  L.scale = 2;
  L.line_h = 7 * L.scale + 4;
  L.mw = w * L.block;
  L.mh = h * L.block;
  int char_w = CHAR_W * L.scale;
  L.xneed = digits(w > 0 ? w - 1 : 0) * char_w + char_w;
  L.yneed = L.line_h;
  L.xstep = label_step(L.block, L.xneed);
  L.ystep = label_step(L.block, L.yneed);
  int ylab_w = digits(h > 0 ? h - 1 : 0) * char_w + 6;
  L.mx = MARGIN + ylab_w;
  L.my = MARGIN + 2 * L.line_h + MARGIN + L.line_h + 3; /* two title lines, the x labels */
  L.bw = 16;
  L.bh = L.mh < 120 ? 120 : L.mh;
  L.bx = L.mx + L.mw + 2 * MARGIN;
  L.by = L.my;
  int right = L.bx + L.bw + MARGIN + LABEL_CHARS * char_w;
  int text = MARGIN + TEXT_CHARS * char_w;
  L.img_w = (right > text ? right : text) + MARGIN;
  L.img_h = L.my + (L.bh > L.mh ? L.bh : L.mh) + MARGIN + L.line_h + MARGIN;
  return L;
}

void wf_heatmap_image_size(int w, int h, int *img_w, int *img_h) {
  layout L = make_layout(w, h);
  *img_w = L.img_w;
  *img_h = L.img_h;
}

/* Draws at most TEXT_CHARS characters of s. */
static void draw_line(canvas *c, int x, int y, const char *s, int scale) {
  char buf[TEXT_CHARS + 1];
  size_t n = strlen(s);
  if (n > TEXT_CHARS) n = TEXT_CHARS;
  memcpy(buf, s, n);
  buf[n] = 0;
  draw_text(c, x, y, buf, scale, C_TEXT);
}

/* x coordinates above the mesh and y coordinates left of it, each at its PE's centre, with a
 * tick; every xstep-th / ystep-th PE, and the last one when it has room after the one before. */
static void draw_axes(canvas *c, const layout *L, int w, int h) {
  int cw = CHAR_W * L->scale, prev = 0;
  char num[16];
  for (int x = 0; x < w; x++) {
    int cx = L->mx + x * L->block + L->block / 2;
    if (x % L->xstep && !(x == w - 1 && cx - prev >= L->xneed)) continue;
    prev = cx;
    snprintf(num, sizeof num, "%d", x);
    int tw = (int)strlen(num) * cw - L->scale;
    draw_text(c, cx - tw / 2, L->my - 3 - L->line_h + 2, num, L->scale, C_TEXT);
    fill_rect(c, cx, L->my - 3, 1, 2, C_FRAME);
  }
  for (int y = 0; y < h; y++) {
    int cy = L->my + y * L->block + L->block / 2;
    /* centred on the row, kept within the mesh's height (1-pixel rows at the edges) */
    int ty = cy - 7 * L->scale / 2;
    if (ty < L->my) ty = L->my;
    if (ty > L->my + L->mh - 7 * L->scale) ty = L->my + L->mh - 7 * L->scale;
    if (y % L->ystep && !(y == h - 1 && ty - prev >= L->yneed)) continue;
    prev = ty;
    snprintf(num, sizeof num, "%d", y);
    int tw = (int)strlen(num) * cw - L->scale;
    draw_text(c, L->mx - 5 - tw, ty, num, L->scale, C_TEXT);
    fill_rect(c, L->mx - 3, cy, 2, 1, C_FRAME);
  }
}

/* ---- one map ---------------------------------------------------------------------------- */

typedef struct map {
  const char *file;     /* stem: DIR/<file>.png and .csv */
  char title[96];
  int link;             /* wavelets per cycle of link capacity (else % of cycles) */
  double *v;            /* [w*h] */
  unsigned char *has;   /* [w*h]: 1 = a value, 0 = no PE or no link there */
  unsigned char *pe;    /* [w*h]: 1 = a PE runs a program (CSV rows) */
  const wf_sim *sim;    /* for the CSV's extra columns; NULL: a count map (wf_heatmap_write_counts) */
  int dir;              /* link maps: WF_DIR_*; -1 = the PE map */
  const char *unit;     /* a count map's unit ("tokens") */
} map;

static void fmt_value(const map *m, double v, char *buf, size_t cap) {
  if (!m->sim) snprintf(buf, cap, "%g %s", v, m->unit);
  else if (m->link) snprintf(buf, cap, "%.2f/cyc", v);
  else snprintf(buf, cap, "%.1f%%", v);
}

/* libpng's errors end in a longjmp; one that says it ran out of memory is marked, so that it
 * exits 7 (out of host memory) rather than as a write error (6). */
static void png_fail(png_structp png, png_const_charp msg) {
  volatile int *nomem = png_get_error_ptr(png);
  if (nomem && msg && strstr(msg, "memory")) *nomem = 1;
  png_longjmp(png, 1);
}

static int write_png(const char *path, const canvas *c) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  volatile int nomem = 0;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, (png_voidp)&nomem, png_fail, NULL);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  WF_ASSERT(png && info); /* they fail only when an allocation does: out of host memory, exit 7 */
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    fclose(f);
    WF_ASSERT(!nomem); /* libpng ran out of host memory: exit 7 */
    return -1;
  }
  png_init_io(png, f);
  png_set_IHDR(png, info, (png_uint_32)c->w, (png_uint_32)c->h, 8, PNG_COLOR_TYPE_RGB,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int y = 0; y < c->h; y++) png_write_row(png, c->px + (size_t)y * c->w * 3);
  png_write_end(png, NULL);
  png_destroy_write_struct(&png, &info);
  return fclose(f);
}

static int write_map(const map *m, int w, int h, const char *dir, const char *plan_line,
                     const wf_heatmap_opts *o) {
  double lo = 0, hi = 0;
  int any = 0;
  for (int i = 0; i < w * h; i++)
    if (m->has[i]) {
      if (!any || m->v[i] < lo) lo = m->v[i];
      if (!any || m->v[i] > hi) hi = m->v[i];
      any = 1;
    }
  /* The colour scale: fixed (in percent; a link's capacity is 100%; a count map's own units)
   * unless auto. */
  double unit = m->link ? 0.01 : 1.0, s_lo = o->lo * unit, s_hi = o->hi * unit;
  if (o->auto_scale) {
    s_lo = any ? lo : 0;
    s_hi = any ? hi : 0;
  }
  layout L = make_layout(w, h);
  canvas c = {L.img_w, L.img_h, malloc((size_t)L.img_w * L.img_h * 3)};
  WF_ASSERT(c.px != NULL);
  fill_rect(&c, 0, 0, c.w, c.h, C_BG);
  draw_line(&c, MARGIN, MARGIN, m->title, L.scale);
  draw_line(&c, MARGIN, MARGIN + L.line_h, plan_line, L.scale);
  draw_axes(&c, &L, w, h);
  fill_rect(&c, L.mx - 1, L.my - 1, L.mw + 2, L.mh + 2, C_FRAME);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      int i = y * w + x;
      unsigned char rgb[3];
      if (m->has[i]) colormap(s_hi > s_lo ? (m->v[i] - s_lo) / (s_hi - s_lo) : 0.0, rgb);
      else memcpy(rgb, C_NONE, 3);
      fill_rect(&c, L.mx + x * L.block, L.my + y * L.block, L.block - L.gap, L.block - L.gap, rgb);
    }
  /* colour bar: top = the scale's top, bottom = its bottom; values beyond are clipped, which
   * the labels say with > and < */
  fill_rect(&c, L.bx - 1, L.by - 1, L.bw + 2, L.bh + 2, C_FRAME);
  for (int r = 0; r < L.bh; r++) {
    unsigned char rgb[3];
    colormap(L.bh > 1 ? 1.0 - (double)r / (L.bh - 1) : 1.0, rgb);
    fill_rect(&c, L.bx, L.by + r, L.bw, 1, rgb);
  }
  char label[64], val[48];
  fmt_value(m, s_hi, val, sizeof val);
  snprintf(label, sizeof label, "%s%s", any && hi > s_hi ? ">" : "", val);
  draw_text(&c, L.bx + L.bw + MARGIN, L.by, label, L.scale, C_TEXT);
  fmt_value(m, s_lo, val, sizeof val);
  snprintf(label, sizeof label, "%s%s", any && lo < s_lo ? "<" : "", val);
  draw_text(&c, L.bx + L.bw + MARGIN, L.by + L.bh - 7 * L.scale, label, L.scale, C_TEXT);
  char key[160], a[48], b[48];
  fmt_value(m, lo, a, sizeof a);
  fmt_value(m, hi, b, sizeof b);
  if (any) snprintf(key, sizeof key, "values %s to %s; grey = no %s", a, b, m->link ? "link" : "PE");
  else snprintf(key, sizeof key, "no values; grey = no %s", m->link ? "link" : "PE");
  draw_line(&c, MARGIN, L.img_h - MARGIN - 7 * L.scale, key, L.scale);

  char path[4200];
  snprintf(path, sizeof path, "%s/%s.png", dir, m->file);
  int rc = write_png(path, &c);
  free(c.px);
  if (rc) {
    wf_error_at(path, "cannot write the heatmap: %s", strerror(errno));
    return WF_EXIT_IO;
  }
  snprintf(path, sizeof path, "%s/%s.csv", dir, m->file);
  FILE *f = fopen(path, "w");
  if (!f) {
    wf_error_at(path, "cannot write the heatmap data: %s", strerror(errno));
    return WF_EXIT_IO;
  }
  /* value is what the image colours; the PE map adds each PE's cycle classes (which add up
   * to `cycles`), the link maps the wavelet count behind the rate. */
  if (!m->sim) fprintf(f, "x,y,value\n");
  else if (m->dir < 0) fprintf(f, "x,y,value,cycles,compute,communication,stall,idle,overlap\n");
  else fprintf(f, "x,y,value,wavelets\n");
  int64_t total = m->sim ? wf_sim_cycles(m->sim) : 0;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      int i = y * w + x;
      if (!m->pe[i]) continue;
      if (!m->sim) {
        fprintf(f, "%d,%d,%g\n", x, y, m->v[i]);
      } else if (m->dir < 0) {
        wf_sim_pe_stats st;
        wf_sim_pe_stats_at(m->sim, x, y, &st);
        fprintf(f, "%d,%d,%.3f,%lld,%lld,%lld,%lld,%lld,%lld\n", x, y, m->v[i], (long long)total,
                (long long)st.compute, (long long)st.comm, (long long)st.stall, (long long)st.idle,
                (long long)st.overlap);
      } else {
        fprintf(f, "%d,%d,%.6f,%lld\n", x, y, m->v[i],
                (long long)wf_sim_link_wavelets(m->sim, x, y, m->dir));
      }
    }
  if (fclose(f)) {
    wf_error_at(path, "cannot write the heatmap data: %s", strerror(errno));
    return WF_EXIT_IO;
  }
  return WF_EXIT_OK;
}

/* "plan NAME, gemm LOWERING[+...], TARGET WxH": what the maps are of. */
static void plan_line(const wf_plan *p, char *buf, size_t cap) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s", p->dir);
  size_t n = strlen(dir);
  while (n > 1 && dir[n - 1] == '/') dir[--n] = 0;
  const char *base = strrchr(dir, '/');
  base = base ? base + 1 : dir;
  char algos[128] = "";
  for (int i = 0; i < p->n_ops; i++) {
    const char *lw = p->ops[i].lowering;
    if (strncmp(p->ops[i].op, "dist.gemm", 9) || !lw[0] || strstr(algos, lw)) continue;
    size_t k = strlen(algos);
    snprintf(algos + k, sizeof algos - k, "%s%s", k ? "+" : "", lw);
  }
  size_t k = (size_t)snprintf(buf, cap, "plan %.24s, ", base);
  if (algos[0] && k < cap) k += (size_t)snprintf(buf + k, cap - k, "gemm %s, ", algos);
  if (k < cap) snprintf(buf + k, cap - k, "%s %dx%d", p->target.name, p->mesh_w, p->mesh_h);
}

int wf_heatmap_write(const wf_sim *s, const wf_plan *p, const char *dir, const wf_heatmap_opts *o) {
  wf_heatmap_opts def = WF_HEATMAP_OPTS_DEFAULT;
  if (!o) o = &def;
  if (mkdir(dir, 0777) && errno != EEXIST) {
    wf_error_at(dir, "cannot create the heatmap directory: %s", strerror(errno));
    return WF_EXIT_IO;
  }
  int w = wf_sim_mesh_w(s), h = wf_sim_mesh_h(s);
  size_t cells = (size_t)w * (size_t)h;
  int64_t total = wf_sim_cycles(s);
  unsigned char *pe = calloc(cells, 1);
  WF_ASSERT(pe != NULL);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      wf_sim_pe_stats st;
      pe[(size_t)y * w + x] = wf_sim_pe_stats_at(s, x, y, &st) == 0 && st.present;
    }
  char pl[160];
  plan_line(p, pl, sizeof pl);
  static const char *const dir_file[4] = {"link_n", "link_e", "link_s", "link_w"};
  static const char *const dir_word[4] = {"north", "east", "south", "west"};
  int rc = WF_EXIT_OK;
  for (int k = -1; k < 4 && !rc; k++) {
    map m = {k < 0 ? "pe_busy" : dir_file[k], "", k >= 0, calloc(cells, sizeof(double)),
             calloc(cells, 1), pe, s, k, NULL};
    WF_ASSERT(m.v && m.has);
    if (k < 0) snprintf(m.title, sizeof m.title, "PE busy %% of %lld cycles", (long long)total);
    else snprintf(m.title, sizeof m.title, "link %s: wavelets per cycle", dir_word[k]);
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) {
        size_t i = (size_t)y * w + x;
        if (!pe[i]) continue;
        if (k < 0) {
          wf_sim_pe_stats st;
          wf_sim_pe_stats_at(s, x, y, &st);
          m.v[i] = total > 0 ? 100.0 * (double)st.busy / (double)total : 0;
          m.has[i] = 1;
        } else {
          /* a link carries at most one wavelet per direction per cycle (cycle-model.md,
           * "Fabric"): the rate is the share of its capacity used */
          m.v[i] = total > 0 ? (double)wf_sim_link_wavelets(s, x, y, k) / (double)total : 0;
          int nx = x + wf_dir_dx[k], ny = y + wf_dir_dy[k];
          /* a port with no PE behind it carries nothing: shown as "none" */
          m.has[i] = nx >= 0 && ny >= 0 && nx < w && ny < h && pe[(size_t)ny * w + nx];
        }
      }
    rc = write_map(&m, w, h, dir, pl, o);
    free(m.v);
    free(m.has);
  }
  free(pe);
  return rc;
}

int wf_heatmap_write_counts(const char *dir, const char *file, const char *title, const char *subtitle,
                            const char *unit, int w, int h, const double *v, double hi) {
  if (mkdir(dir, 0777) && errno != EEXIST) {
    wf_error_at(dir, "cannot create the heatmap directory: %s", strerror(errno));
    return WF_EXIT_IO;
  }
  size_t cells = (size_t)w * (size_t)h;
  map m = {file, "", 0, (double *)v, malloc(cells), malloc(cells), NULL, -1, unit};
  WF_ASSERT(m.has && m.pe);
  memset(m.has, 1, cells);
  memset(m.pe, 1, cells);
  snprintf(m.title, sizeof m.title, "%s", title);
  wf_heatmap_opts o = {0, 0.0, hi > 0 ? hi : 1.0};
  int rc = write_map(&m, w, h, dir, subtitle, &o);
  free(m.has);
  free(m.pe);
  return rc;
}
