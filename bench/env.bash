# Sourced by the bench scripts (not a bench itself: tests/CMakeLists.txt runs bench/*.sh under the
# label "long"): the repository root ($here), the targets, the tools ($waferc,
# $waferrun: WAFERC / WAFERRUN or the ones on PATH) and a scratch directory ($tmp) removed at
# exit.
here=$(cd "$(dirname "${BASH_SOURCE[1]}")/.." && pwd)
export WAFERC_TARGET_PATH=${WAFERC_TARGET_PATH:-$here/targets}
waferc=${WAFERC:-waferc}
waferrun=${WAFERRUN:-waferrun}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
