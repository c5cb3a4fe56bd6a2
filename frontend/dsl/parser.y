/* waferc — grammar of the IR text form (docs/ir-text-format.md).
 *
 * The actions only collect what they read; build.c turns it into IR through the ir.h API
 * and reports semantic errors (undefined values, unknown ops, ...) at the right token.
 * Syntax errors stop the parse: "file:line:col: error: expected X, got Y". */
%code requires {
#include "build.h"
}

%define api.pure full
%define api.prefix {wf_dsl_}
%define parse.error custom
%define parse.lac full
%define lr.default-reduction accepting
%locations
%lex-param {void *scanner}
%parse-param {void *scanner} {wf_dsl_state *s}

%code {
#include <string.h>

int wf_dsl_lex(WF_DSL_STYPE *lval, WF_DSL_LTYPE *lloc, void *scanner);

#define LOC(l) wf_dsl_loc(s, (uint32_t)(l).first_line, (uint32_t)(l).first_column)

static wf_dsl_num num_int(int64_t v, wf_loc loc) { return (wf_dsl_num){0, v, (double)v, loc}; }
static wf_dsl_num num_float(double v, wf_loc loc) { return (wf_dsl_num){1, 0, v, loc}; }
/* Bison calls this only when its stack is exhausted; syntax errors go through
 * yyreport_syntax_error below. */
static void wf_dsl_error(WF_DSL_LTYPE *l, void *scanner, wf_dsl_state *s, const char *msg) {
  (void)scanner;
  wf_dsl_report(s, LOC(*l), "%s", msg);
}

static wf_dsl_num num_bool(int v, wf_loc loc) { return (wf_dsl_num){2, v, v, loc}; }
}

%union {
  const char *str;
  int64_t i;
  double f;
  int n;
  wf_type ty;
  wf_layout layout;
  wf_layout_dim ldim;
  wf_attr attr;
  wf_dsl_num num;
  wf_dsl_data data;
  wf_value val;
}

%token <str> IDENT "identifier"
%token <str> VALUE_NAME "value name"
%token <str> SYMBOL "symbol"
%token <str> STRING "string"
%token <i> INT "integer"
%token <f> FLOAT "float"
%token <str> KW_MODULE "'module'" KW_ATTRIBUTES "'attributes'" KW_REGION "'region'"
%token <str> KW_RECT "'rect'" KW_CONST "'const'" KW_DENSE "'dense'" KW_FILE "'file'"
%token <str> KW_OFFSET "'offset'" KW_ELIDED "'elided'" KW_FUNC "'func'"
%token <str> KW_RETURN "'return'" KW_LOC "'loc'"
%token <str> KW_TRUE "'true'" KW_FALSE "'false'" KW_INF "'inf'" KW_NAN "'nan'"
%token NEG_INF "'-inf'"
%token ARROW "'->'"
%token LAYOUT_LBRACE "'{' (layout)"

%type <str> word
%type <n> result_names opt_types types opt_loc
%type <ty> type
%type <layout> opt_layout
%type <ldim> ldim
%type <attr> attr_value
%type <num> number
%type <data> data dense_body
%type <val> operand

%%

module
  : KW_MODULE opt_module_name opt_module_attrs '{' items '}'
  ;

opt_module_name
  : %empty
  | SYMBOL { s->m->name = wf_intern(s->m, $1); }
  ;

opt_module_attrs
  : %empty
  | KW_ATTRIBUTES attr_dict { wf_dsl_module_attrs(s); }
  ;

items
  : %empty
  | items item
  ;

item
  : region_item
  | const_item
  | func_item
  ;

region_item
  : KW_REGION SYMBOL '=' KW_RECT '(' INT ',' INT ',' INT ',' INT ')'
      { wf_dsl_region(s, $2, LOC(@2), $6, $8, $10, $12, LOC(@6)); }
  ;

const_item
  : KW_CONST SYMBOL ':' type '=' data
      { wf_dsl_const(s, $2, LOC(@2), &$4, $6.kind, $6.path, $6.offset, LOC(@6)); }
  ;

data
  : KW_DENSE '<' dense_body '>'          { $$ = $3; }
  | KW_FILE '<' STRING '>'               { $$ = (wf_dsl_data){WF_DATA_FILE, $3, -1}; }
  | KW_FILE '<' STRING ',' KW_OFFSET '=' INT '>'
      {
        $$ = (wf_dsl_data){WF_DATA_FILE, $3, $7};
        if ($7 < 0) {
          wf_dsl_report(s, LOC(@7), "file offset must be non-negative");
          $$.offset = 0;
        }
      }
  ;

dense_body
  : number               { s->nums.n = 0; WF_DSL_PUSH(s->nums, $1); $$ = (wf_dsl_data){WF_DATA_SPLAT, NULL, -1}; }
  | '[' ']'              { s->nums.n = 0; $$ = (wf_dsl_data){WF_DATA_INLINE, NULL, -1}; }
  | '[' numbers ']'      { $$ = (wf_dsl_data){WF_DATA_INLINE, NULL, -1}; }
  | KW_ELIDED            { $$ = (wf_dsl_data){WF_DATA_ELIDED, NULL, -1}; }
  ;

numbers
  : number               { s->nums.n = 0; WF_DSL_PUSH(s->nums, $1); }
  | numbers ',' number   { WF_DSL_PUSH(s->nums, $3); }
  ;

number
  : INT        { $$ = num_int($1, LOC(@1)); }
  | FLOAT      { $$ = num_float($1, LOC(@1)); }
  | KW_INF     { $$ = num_float(1.0 / 0.0, LOC(@1)); }
  | NEG_INF    { $$ = num_float(-1.0 / 0.0, LOC(@1)); }
  | KW_NAN     { $$ = num_float(0.0 / 0.0, LOC(@1)); }
  | KW_TRUE    { $$ = num_bool(1, LOC(@1)); }
  | KW_FALSE   { $$ = num_bool(0, LOC(@1)); }
  ;

func_item
  : KW_FUNC SYMBOL { wf_dsl_func_begin(s, $2, LOC(@1)); }
    '(' opt_args ')' opt_results '{' ops ret '}'
      { wf_dsl_func_end(s); }
  ;

opt_args
  : %empty
  | args
  ;

args
  : arg
  | args ',' arg
  ;

arg
  : VALUE_NAME ':' type  { wf_dsl_func_arg(s, $1, LOC(@1), &$3); }
  ;

opt_results
  : %empty               { if (s->func) wf_func_set_result_types(s->func, 0, NULL); }
  | ARROW type           { if (s->func) wf_func_set_result_types(s->func, 1, &$2); }
  | ARROW '(' ')'        { if (s->func) wf_func_set_result_types(s->func, 0, NULL); }
  | ARROW '(' types ')'  { if (s->func) wf_func_set_result_types(s->func, $3, s->types.v); }
  ;

ops
  : %empty
  | ops op
  ;

op
  : result_names '=' IDENT op_lparen opt_operands ')' opt_attrs opt_types opt_loc
      { wf_dsl_op(s, $1, $3, LOC(@3), $8, $9, LOC(@1)); }
  | IDENT op_lparen opt_operands ')' opt_attrs opt_types opt_loc
      { wf_dsl_op(s, 0, $1, LOC(@1), $6, $7, LOC(@1)); }
  ;

ret
  : KW_RETURN opt_operands opt_loc  { wf_dsl_return(s, $3, LOC(@1)); }
  ;

result_names
  : VALUE_NAME
      { s->names.n = 0; WF_DSL_PUSH(s->names, ((wf_dsl_name){$1, LOC(@1)})); $$ = 1; }
  | result_names ',' VALUE_NAME
      { WF_DSL_PUSH(s->names, ((wf_dsl_name){$3, LOC(@3)})); $$ = $1 + 1; }
  ;

/* Operands are resolved as they are read, so an undefined name is reported at its token. */
op_lparen
  : '('  { s->operands.n = 0; }
  ;

opt_operands
  : %empty              { s->operands.n = 0; }
  | operands
  ;

operands
  : operand               { s->operands.n = 0; WF_DSL_PUSH(s->operands, $1); }
  | operands ',' operand  { WF_DSL_PUSH(s->operands, $3); }
  ;

operand
  : VALUE_NAME  { $$ = wf_dsl_operand_value(s, $1, LOC(@1)); }
  | SYMBOL      { $$ = wf_dsl_operand_global(s, $1, LOC(@1)); }
  ;

opt_attrs
  : %empty     { s->attrs.n = 0; }
  | attr_dict
  ;

attr_dict
  : '{' '}'          { s->attrs.n = 0; }
  | '{' attrs '}'
  ;

attrs
  : word '=' attr_value
      { s->attrs.n = 0; wf_dsl_attr(s, $1, LOC(@1), $3); }
  | attrs ',' word '=' attr_value
      { wf_dsl_attr(s, $3, LOC(@3), $5); }
  ;

attr_value
  : INT          { $$ = (wf_attr){0}; $$.kind = WF_ATTR_INT; $$.u.i = $1; }
  | FLOAT        { $$ = (wf_attr){0}; $$.kind = WF_ATTR_FLOAT; $$.u.f = $1; }
  | KW_INF       { $$ = (wf_attr){0}; $$.kind = WF_ATTR_FLOAT; $$.u.f = 1.0 / 0.0; }
  | NEG_INF      { $$ = (wf_attr){0}; $$.kind = WF_ATTR_FLOAT; $$.u.f = -1.0 / 0.0; }
  | KW_NAN       { $$ = (wf_attr){0}; $$.kind = WF_ATTR_FLOAT; $$.u.f = 0.0 / 0.0; }
  | KW_TRUE      { $$ = (wf_attr){0}; $$.kind = WF_ATTR_BOOL; $$.u.i = 1; }
  | KW_FALSE     { $$ = (wf_attr){0}; $$.kind = WF_ATTR_BOOL; $$.u.i = 0; }
  | STRING       { $$ = (wf_attr){0}; $$.kind = WF_ATTR_STR; $$.u.s = wf_intern(s->m, $1); }
  | word         { $$ = (wf_attr){0}; $$.kind = WF_ATTR_IDENT; $$.u.s = wf_intern(s->m, $1); }
  | '[' ']'      { s->nums.n = 0; $$ = wf_dsl_attr_list(s); }
  | '[' numbers ']'  { $$ = wf_dsl_attr_list(s); }
  ;

opt_types
  : %empty      { $$ = 0; s->types.n = 0; }
  | ':' types   { $$ = $2; }
  ;

types
  : type            { s->types.n = 0; WF_DSL_PUSH(s->types, $1); $$ = 1; }
  | types ',' type  { WF_DSL_PUSH(s->types, $3); $$ = $1 + 1; }
  ;

opt_loc
  : %empty   { $$ = 0; }
  | KW_LOC '(' STRING ':' INT ':' INT ')'
      {
        $$ = 1;
        if ($5 < 0 || $5 > UINT32_MAX || $7 < 0 || $7 > UINT32_MAX) {
          wf_dsl_report(s, LOC(@5), "location line/column out of range");
          $$ = 0;
        } else {
          s->written_loc = wf_loc_make($3, (uint32_t)$5, (uint32_t)$7);
        }
      }
  ;

type
  : IDENT '[' opt_dims ']' opt_layout
      { wf_dsl_type(s, $1, LOC(@1), &$5, LOC(@5), &$$); }
  ;

opt_dims
  : %empty  { s->dims.n = 0; }
  | dims
  ;

dims
  : INT
      {
        s->dims.n = 0;
        if ($1 < 0) wf_dsl_report(s, LOC(@1), "negative dimension %lld", (long long)$1);
        WF_DSL_PUSH(s->dims, $1);
      }
  | dims ',' INT
      {
        if ($3 < 0) wf_dsl_report(s, LOC(@3), "negative dimension %lld", (long long)$3);
        WF_DSL_PUSH(s->dims, $3);
      }
  ;

opt_layout
  : %empty  { memset(&$$, 0, sizeof $$); $$.region = -1; }
  | LAYOUT_LBRACE ldims '}'          { wf_dsl_layout(s, NULL, LOC(@1), &$$); }
  | LAYOUT_LBRACE ldims '}' SYMBOL   { wf_dsl_layout(s, $4, LOC(@4), &$$); }
  ;

ldims
  : ldim             { s->ldims.n = 0; WF_DSL_PUSH(s->ldims, $1); }
  | ldims ',' ldim   { WF_DSL_PUSH(s->ldims, $3); }
  ;

ldim
  : word              { wf_dsl_layout_dim(s, $1, LOC(@1), NULL, LOC(@1), &$$); }
  | word '^' word     { wf_dsl_layout_dim(s, $1, LOC(@1), $3, LOC(@3), &$$); }
  ;

/* Free-form words: identifiers and the keywords that cannot start a value. */
word
  : IDENT | KW_MODULE | KW_ATTRIBUTES | KW_REGION | KW_RECT | KW_CONST | KW_DENSE | KW_FILE
  | KW_OFFSET | KW_ELIDED | KW_FUNC | KW_RETURN | KW_LOC
  ;

%%

/* Token names as messages show them: "identifier", "'{'", "end of file". */
static const char *token_name(yysymbol_kind_t k) {
  if (k == YYSYMBOL_LAYOUT_LBRACE) return "'{'";
  const char *n = yysymbol_name(k);
  return n;
}

static int token_has_text(yysymbol_kind_t k) {
  return k == YYSYMBOL_IDENT || k == YYSYMBOL_VALUE_NAME || k == YYSYMBOL_SYMBOL ||
         k == YYSYMBOL_STRING || k == YYSYMBOL_INT || k == YYSYMBOL_FLOAT;
}

static int yyreport_syntax_error(const yypcontext_t *ctx, void *scanner, wf_dsl_state *s) {
  (void)scanner;
  enum { SHOWN = 6 };
  yysymbol_kind_t expected[YYNTOKENS];
  int n = yypcontext_expected_tokens(ctx, expected, YYNTOKENS);
  /* A layout brace and a plain brace read the same to a user: list '{' once. */
  int m = 0;
  for (int i = 0; i < n; i++) {
    int dup = 0;
    for (int j = 0; j < m; j++)
      if (strcmp(token_name(expected[j]), token_name(expected[i])) == 0) dup = 1;
    if (!dup) expected[m++] = expected[i];
  }
  char want[512] = "";
  size_t len = 0;
  for (int i = 0; i < m && i < SHOWN; i++) {
    const char *sep = i == 0 ? "" : (i == m - 1 || i == SHOWN - 1) && m <= SHOWN ? " or " : ", ";
    len += (size_t)snprintf(want + len, sizeof want - len, "%s%s", sep, token_name(expected[i]));
    if (len >= sizeof want) len = sizeof want - 1;
  }
  if (m > SHOWN) snprintf(want + len, sizeof want - len, ", ...");

  yysymbol_kind_t got = yypcontext_token(ctx);
  /* A '{' the lexer did not take for a layout, where a layout may start: say what a
   * layout looks like rather than "expected '{', got '{'". */
  int layout_ok = 0;
  for (int i = 0; i < n; i++)
    if (expected[i] == YYSYMBOL_LAYOUT_LBRACE) layout_ok = 1;
  char got_text[128];
  if (token_has_text(got) && s->tok_text) {
    char shown[64];
    size_t k = 0;
    for (size_t i = 0; i < s->tok_len && k + 5 < sizeof shown; i++) {
      unsigned char c = (unsigned char)s->tok_text[i];
      if (c >= 0x20 && c < 0x7f && c != '\'') shown[k++] = (char)c;
      else k += (size_t)snprintf(shown + k, sizeof shown - k, "\\x%02x", c);
    }
    shown[k] = '\0';
    snprintf(got_text, sizeof got_text, "%s '%s'%s", token_name(got), shown,
             k + 5 >= sizeof shown ? "..." : "");
  } else {
    snprintf(got_text, sizeof got_text, "%s", token_name(got));
  }
  wf_loc loc = LOC(*yypcontext_location(ctx));
  if (layout_ok && strcmp(token_name(got), "'{'") == 0)
    wf_dsl_report(s, loc, "malformed layout: expected labels separated by commas, as in "
                          "{B, L_y, E_x} or {B, E_y, L^x}");
  else if (m > 0)
    wf_dsl_report(s, loc, "expected %s, got %s", want, got_text);
  else
    wf_dsl_report(s, loc, "unexpected %s", got_text);
  return 0;
}
