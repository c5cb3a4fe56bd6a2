"""Checks queued plans' total predicted cycles against their simulated totals (tests only):
cycles_check.py QUEUE, each line of QUEUE "MANIFEST<TAB>REPORT<TAB>BOUND<TAB>LABEL": the plan's
summed ops' predicted_cycles must be within BOUND (a fraction) of the report's cycles.total.
Every failing line is reported; exit 1 if any failed. One python start-up for all of them."""
import json
import sys
import traceback

bad = 0
for line in open(sys.argv[1]):
    mpath, rpath, bound, what = line.rstrip("\n").split("\t")
    try:
        pred = sum(o["predicted_cycles"] for o in json.load(open(mpath))["ops"])
        sim = json.load(open(rpath))["cycles"]["total"]
        err = abs(sim - pred) / pred
        assert err <= float(bound), "%s: predicted %d, simulated %d (%.1f%%)" % (what, pred, sim, 100 * err)
    except Exception:
        traceback.print_exc()
        print("FAIL: %s: cycles" % what, file=sys.stderr)
        bad += 1
sys.exit(1 if bad else 0)
