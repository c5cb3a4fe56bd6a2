/* waferc — a command line's `--name=value` / `--name value` options and their integer
 * values, for the tools. */
#ifndef WAFERC_IR_SUPPORT_CLIOPT_H
#define WAFERC_IR_SUPPORT_CLIOPT_H

/* The value of option `name` when argv[*i] is it, written `--name=value` or `--name value`
 * (then *i moves past the value); NULL when argv[*i] is another option. An option with no
 * value after it sets *bad and is reported under `tool`. */
const char *wf_cli_value(const char *tool, int argc, char **argv, int *i, const char *name, int *bad);
/* An integer option value in lo..hi into *out: 0, or -1 reported under `opt`. */
int wf_cli_long(const char *opt, const char *v, long lo, long hi, long *out);

#endif
