#!/usr/bin/env bash
# The layers of the source tree (README "Layout", backend/README.md) hold: every
# `#include "dir/..."` of a project header is allowed by the table below, no two .c files of
# the backend call each other (a cycle of files, through the symbols their objects define and
# use), and no object of ir/ (or of the runtime) calls a function another layer defines. A new
# include or call that breaks a layer fails here, naming the file and line or the symbol.
#
#   ir/ (ir/pe, ir/support)  <  frontend/, runtime/, backend/  <  passes/  <  tools/
#   backend: resources < collectives < ops < gemm < plan
# The runtime reaches the compiler only through ir/pe (the PE program format and kernel ABI);
# its die-level engine (runtime/die/) reaches only ir/ and the runtime.
set -euo pipefail
src="${WAFERC_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
bin="${WAFERC_BINARY_DIR:-$src/build}"
cd "$src"
fail=0

# may_include FILE_DIR INCLUDED_DIR -> 0 when FILE_DIR's files may include INCLUDED_DIR's
rank_backend() {
  case "$1" in
    backend/resources) echo 1 ;; backend/collectives) echo 2 ;; backend/ops) echo 3 ;;
    backend/gemm) echo 4 ;; backend/plan) echo 5 ;; *) echo 0 ;;
  esac
}
may_include() {
  local from="$1" to="$2"
  case "$to" in waferc/*|waferc) return 0 ;; esac
  case "$from" in
    ir|ir/*) case "$to" in ir|ir/*) return 0 ;; esac; return 1 ;;
    frontend/*) case "$to" in ir|ir/*|frontend/*|onnx) return 0 ;; esac; return 1 ;;
    runtime|runtime/*) case "$to" in ir|ir/*|runtime|runtime/*) return 0 ;; esac; return 1 ;;
    backend/*)
      case "$to" in ir|ir/*) return 0 ;; backend/*) ;; *) return 1 ;; esac
      local a b
      a=$(rank_backend "$from"); b=$(rank_backend "$to")
      [ "$a" -gt 0 ] && [ "$b" -gt 0 ] && [ "$b" -le "$a" ]
      return ;;
    passes) case "$to" in ir|ir/*|frontend/*|backend/*|passes) return 0 ;; esac; return 1 ;;
  esac
  return 0
}

checked=0
while IFS= read -r f; do
  dir=$(dirname "$f")
  while IFS=: read -r line inc; do
    [ -n "$inc" ] || continue
    to=$(dirname "$inc")
    checked=$((checked + 1))
    if ! may_include "$dir" "$to"; then
      echo "layering: $f:$line: includes \"$inc\": $dir/ may not reach $to/" >&2
      fail=1
    fi
  done < <(grep -n '^#include "[a-z_]*/' "$f" | sed -E 's/^([0-9]+):#include "([^"]+)".*/\1:\2/')
done < <(find ir frontend runtime backend passes -name '*.[chyl]' -o -name '*.def' | sort)
[ "$checked" -gt 100 ] || { echo "layering: only $checked includes seen: wrong tree?" >&2; exit 1; }

# Files of the backend that call each other in a loop, from the library's objects.
objdir="$bin/CMakeFiles/waferc.dir"
if [ -d "$objdir/backend" ] && command -v nm >/dev/null; then
  python3 - "$objdir" <<'EOF' || fail=1
import collections, glob, os, subprocess, sys
root = sys.argv[1]
defs, uses = {}, collections.defaultdict(set)
srcdir = os.environ.get("WAFERC_SOURCE_DIR", ".")
every = [f for pat in ("ir/**/*.c", "frontend/**/*.c", "passes/*.c", "backend/*/*.c", "runtime/*.c", "runtime/die/*.c")
         for f in glob.glob(os.path.join(srcdir, pat), recursive=True)]
for src in every:
    rel = os.path.relpath(src, os.environ.get("WAFERC_SOURCE_DIR", "."))
    o = os.path.join(root, rel + ".o")
    if rel.startswith("runtime/die/"):  # the die-level engine's own library (built with SimGrid)
        o = os.path.join(os.path.dirname(root), "wf_die.dir", rel + ".o")
    if not os.path.exists(o):
        continue
    for line in subprocess.run(["nm", o], capture_output=True, text=True).stdout.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in "TDBR": defs[f[2]] = rel
        elif len(f) == 2 and f[0] == "U": uses[rel].add(f[1])
if sum(1 for a in uses if a.startswith("backend/")) < 40:
    sys.exit("layering: only %d objects found under %s" % (len(uses), root))
# Calls that cross layers the wrong way: ir/ calls only ir/, the runtime only ir/ and itself
# (a public header declares what another layer defines, so includes alone do not show these).
allowed = {"ir": ("ir/",), "runtime": ("ir/", "runtime/")}
crossing = 0
for a, us in sorted(uses.items()):
    top = a.split("/")[0]
    if top not in allowed: continue
    for s in sorted(us):
        b = defs.get(s)
        if b and not b.startswith(allowed[top]):
            print("layering: %s calls %s, defined in %s" % (a, s, b), file=sys.stderr)
            crossing += 1
uses = {a: u for a, u in uses.items() if a.startswith("backend/")}
g = {a: {defs[s] for s in us if s in defs and defs[s] != a} for a, us in uses.items()}
index, low, stack, on, n, bad = {}, {}, [], set(), [0], []
def visit(v):
    index[v] = low[v] = n[0]; n[0] += 1; stack.append(v); on.add(v)
    for w in g.get(v, ()):
        if w not in index: visit(w); low[v] = min(low[v], low[w])
        elif w in on: low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop(); on.discard(w); comp.append(w)
            if w == v: break
        if len(comp) > 1: bad.append(sorted(comp))
sys.setrecursionlimit(10000)
for v in sorted(g):
    if v not in index: visit(v)
for comp in bad:
    print("layering: backend files call each other in a loop: " + ", ".join(comp), file=sys.stderr)
sys.exit(1 if bad or crossing else 0)
EOF
fi

[ "$fail" = 0 ] && echo "layering: $checked includes checked, no backend file cycle"
exit "$fail"
