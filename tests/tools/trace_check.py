"""Checks a waferrun --trace file (docs/report-format.md, "The trace"); used by the e2e scripts.

check_trace(path, report=None) -> (otherData, categories of the spans, {tid: track name})

Asserts: every event has its required fields; otherData's `events` is the exact number of
traceEvents entries and the timeline entries (everything but metadata) fit in `limit`; within
each track timestamps never decrease and spans nest; fabric spans' wavelet and waiting cycles
add up to their length; async streams sit on their own named `PE (x,y) async k` tracks. With
the run's report: every event lies inside the run, and the mesh-wide op spans are exactly the
report's ops (start, end) for every op that ran, the last one included.
"""
import json


def check_trace(path, report=None):
    t = json.load(open(path))
    meta, evs = t["otherData"], t["traceEvents"]
    assert meta["events"] == len(evs), "otherData.events %d, the file has %d" % (meta["events"], len(evs))
    timeline = [e for e in evs if e["ph"] != "M"]
    assert len(timeline) <= meta["limit"], "%d timeline events over the limit %d" % (len(timeline), meta["limit"])
    assert meta["dropped_events"] >= 0
    assert meta["complete"] == (meta["dropped_events"] == 0 and meta["run_finished"])
    cycles = report["cycles"]["total"] if report else None
    tracks, names, cats, ops = {}, {}, set(), {}
    for e in evs:
        for k in ("name", "ph", "pid"):
            assert k in e, "event without %s: %r" % (k, e)
        if e["ph"] == "M":
            if e["name"] == "thread_name":
                names[e["tid"]] = e["args"]["name"]
            continue
        assert isinstance(e["ts"], int) and e["ts"] >= 0, "bad ts: %r" % e
        if cycles is not None:
            assert e["ts"] <= cycles, "ts outside the run: %r" % e
        if e["ph"] in ("b", "e"):
            assert e["cat"] == "op"
            ops.setdefault(e["id"], {})[e["ph"]] = e["ts"]
        if e["ph"] == "X":
            assert isinstance(e["dur"], int) and e["dur"] > 0, "bad dur: %r" % e
            if cycles is not None:
                assert e["ts"] + e["dur"] <= cycles, "span past the end of the run: %r" % e
            cats.add(e["cat"])
            a = e.get("args", {})
            if "wavelet_cycles" in a:
                assert a["wavelet_cycles"] + a["stall_cycles"] == e["dur"], "fabric span cycles: %r" % e
            tracks.setdefault(e["tid"], []).append(e)
    for tid, es in tracks.items():
        assert tid in names, "track %d has no name" % tid
        is_async = "async" in names[tid]
        stack, last = [], -1
        for e in es:  # file order
            assert e.get("args", {}).get("async", False) == is_async, "async span off its track: %r" % e
            if is_async:
                assert e["cat"] in ("comm", "stall"), "async track %d holds %r" % (tid, e)
            assert e["ts"] >= last, "track %d: ts not monotonic" % tid
            last = e["ts"]
            while stack and stack[-1] <= e["ts"]:
                stack.pop()
            assert not stack or e["ts"] + e["dur"] <= stack[-1], "track %d: spans overlap without nesting: %r" % (tid, e)
            stack.append(e["ts"] + e["dur"])
    for k, be in ops.items():
        assert set(be) == {"b", "e"} and be["b"] < be["e"], "op %d: unpaired mesh-wide span %r" % (k, be)
    if report and meta["dropped_events"] == 0:
        want = {o["index"]: (o["start"], o["end"]) for o in report["ops"] if o["cycles"] > 0}
        got = {k: (be["b"], be["e"]) for k, be in ops.items()}
        assert got == want, "mesh-wide op spans %r, the report's ops %r" % (got, want)
    return meta, cats, names
