#!/usr/bin/env bash
# benchvs.sh BASE BENCH PKG COUNT: run the benchmarks matching BENCH in PKG
# on commit BASE and on the work tree, alternating one run of each COUNT
# times (so a load change on a shared machine hits both alike), and print
# benchstat's comparison. The base is checked out in a temporary worktree.
set -euo pipefail
base=$1 bench=$2 pkg=$3 count=$4
root=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$tmp/base" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
git -C "$root" worktree add --detach "$tmp/base" "$base" >/dev/null
for i in $(seq "$count"); do
  (cd "$tmp/base" && go test -run '^$' -bench "$bench" -benchmem -count 1 "$pkg") >>"$tmp/old.txt"
  (cd "$root" && go test -run '^$' -bench "$bench" -benchmem -count 1 "$pkg") >>"$tmp/new.txt"
done
cd "$root" && go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da "$tmp/old.txt" "$tmp/new.txt"
