/* Writing a JSON report (runtime/report.c): the run report and the generation report. */
#ifndef WAFERC_RUNTIME_JSON_OUT_H
#define WAFERC_RUNTIME_JSON_OUT_H

#include <cjson/cJSON.h>

/* Prints root to path and deletes it; WF_EXIT_OK, or WF_EXIT_IO (reported, naming path). */
int wf_json_write_report(cJSON *root, const char *path);

#endif
