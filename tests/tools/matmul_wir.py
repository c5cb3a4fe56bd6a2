"""Writes TMP/NAME.wir, c = matmul(a, b), for the GEMM tests (tests only):
matmul_wir.py TMP NAME MODE SHAPE_A SHAPE_B SHAPE_C. An operand whose letter is in MODE is a
constant read from TMP/NAME.<letter>.npy (a weight: pre-skewed when a shift GEMM multiplies
it), the other an argument."""
import sys

tmp, name, mode, sa, sb, sc = sys.argv[1:]
consts, args, ops = [], [], {}
for o, s in (("a", sa), ("b", sb)):
    if o in mode:
        consts.append('  const @%s : f32[%s] = file<"%s.%s.npy">\n' % (o, s, name, o))
        ops[o] = "@" + o
    else:
        args.append("%%%s: f32[%s]" % (o, s))
        ops[o] = "%" + o
open("%s/%s.wir" % (tmp, name), "w").write(
    "module @g {\n%s  func @main(%s) -> f32[%s] {\n    %%c = matmul(%s, %s) : f32[%s]\n    return %%c\n  }\n}\n"
    % ("".join(consts), ", ".join(args), sc, ops["a"], ops["b"], sc))
