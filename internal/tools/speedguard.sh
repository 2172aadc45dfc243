#!/usr/bin/env bash
# speedguard.sh BASE [THRESHOLD%]: the whole simulated machine's speed on
# commit BASE against the work tree, counted in host instructions by
# valgrind's callgrind (the same count every run, whatever the load or the
# code's placement), and a failure if any case costs more than THRESHOLD
# percent (default 2) more host instructions than on BASE.
#
# The cases run dcpi itself, as users do: functional, the 21164's issue
# model and the 21264's core, over a mix of workloads, and dcpi profile
# (driver and daemon). Each case runs on BASE and on the work tree side by
# side. SPEEDGUARD_TAGS builds the work tree with those build tags
# (speedguard_slow: a deliberately slowed run loop, to see the guard fail);
# SPEEDGUARD_CASES, a regular expression, runs only the cases it matches.
# docs/hwsim.md, "Simulator speed", says why counts and not seconds.
set -euo pipefail
base=$1 thr=${2:-2}
root=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$tmp/base" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
command -v valgrind >/dev/null || { echo "speedguard: needs valgrind (apt-get install valgrind)"; exit 2; }
git -C "$root" worktree add --detach "$tmp/base" "$base" >/dev/null 2>&1
(cd "$tmp/base" && CGO_ENABLED=0 go build -o "$tmp/dcpi-base" ./cmd/dcpi)
(cd "$root" && CGO_ENABLED=0 go build -tags "${SPEEDGUARD_TAGS:-}" -o "$tmp/dcpi-new" ./cmd/dcpi)

cases=(
  "func-matmul|sim run --cpus 1 --timing=false matmul 30"
  "func-sort|sim run --cpus 1 --timing=false sort 2000"
  "func-hashdb|sim run --cpus 1 --timing=false hashdb 1000 5000"
  "ev5-matmul|sim run --cpus 1 matmul 30"
  "ev5-hashdb|sim run --cpus 1 hashdb 1000 5000"
  "ev6-sort|sim run --cpus 1 --model ev6 sort 500"
  "ev6-hashdb|sim run --cpus 1 --model ev6 hashdb 500 2000"
  "profile-matmul|profile --cpus 1 -o DB matmul 30"
)

# count BIN NAME ARGS: the host instructions of one run, all threads.
count() {
  local bin=$1 name=$2 args=${3//DB/$tmp/db-$2-$(basename "$1")}
  # Go's asynchronous preemption signals trip callgrind's signal handling.
  GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --callgrind-out-file="$tmp/$name.$(basename "$bin").cg" \
    "$bin" $args >/dev/null 2>"$tmp/$name.$(basename "$bin").err" </dev/null
  grep -o 'Collected : [0-9]*' "$tmp/$name.$(basename "$bin").err" | awk '{s+=$3} END {print s}'
}

fail=0
printf '%-16s %16s %16s %8s\n' case base work 'delta%'
for c in "${cases[@]}"; do
  name=${c%%|*} args=${c#*|}
  [[ $name =~ ${SPEEDGUARD_CASES:-.} ]] || continue
  count "$tmp/dcpi-base" "$name" "$args" >"$tmp/$name.base" &
  count "$tmp/dcpi-new" "$name" "$args" >"$tmp/$name.new" &
  wait
  b=$(cat "$tmp/$name.base") n=$(cat "$tmp/$name.new")
  d=$(awk -v b="$b" -v n="$n" 'BEGIN {printf "%+.2f", (n-b)*100/b}')
  verdict=ok
  if awk -v d="$d" -v t="$thr" 'BEGIN {exit !(d > t)}'; then verdict=SLOWER; fail=1; fi
  printf '%-16s %16s %16s %8s %s\n' "$name" "$b" "$n" "$d" "$verdict"
done
if [ "$fail" = 1 ]; then
  echo "speedguard: the work tree runs more than ${thr}% more host instructions than $base on a case above"
  exit 1
fi
echo "speedguard: no case more than ${thr}% slower than $base"
