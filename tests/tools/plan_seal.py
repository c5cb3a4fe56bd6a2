"""Seals a plan written by hand as waferc seals its plans (docs/plan-format.md, "Digests"): the
manifest's "digests" maps every file it names to its SHA-256, and "manifest.json" to the
SHA-256 of the manifest's text with that one value written as 64 zeros. For the test tools that
write plans without waferc (gen_toy_plan.py, fidelity/collectives.py), so waferrun checks them
like any other plan."""
import hashlib
import json
import os


def _sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def write_sealed(d, m, indent=1):
    """Writes manifest m into plan directory d, sealed; the files it names must exist."""
    names = [c["program"] for r in m.get("regions", []) for c in r.get("classes", [])]
    names += [k["file"] for k in m.get("kernels", [])]
    w = m.get("weights", {})
    if w.get("bytes", 0) or os.path.exists(os.path.join(d, w.get("file", "weights.bin"))):
        names.append(w.get("file", "weights.bin"))
    digests = {}
    for n in names:
        digests.setdefault(n, _sha256(os.path.join(d, n)))
    digests["manifest.json"] = "0" * 64
    m = dict(m, digests=digests)
    text = json.dumps(m, indent=indent) + "\n"
    key = '"manifest.json": "' + "0" * 64 + '"'
    at = text.rindex(key) + len(key) - 65
    text = text[:at] + hashlib.sha256(text.encode()).hexdigest() + text[at + 64:]
    with open(os.path.join(d, "manifest.json"), "w") as f:
        f.write(text)
