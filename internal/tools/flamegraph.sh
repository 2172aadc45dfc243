#!/bin/sh
# flamegraph.sh: the flame graph screenshot in docs (docs/flamegraph-demo.png).
# It runs the demo fleet (stacks on by default), exports its profile with
# dcpi pprof, serves it with go tool pprof -http, and has headless Chromium
# photograph pprof's flame graph page. Needs chromium (Debian's package).
set -eu
out=${1:-docs/flamegraph-demo.png}
command -v chromium >/dev/null || { echo "flamegraph.sh: needs chromium (apt-get install chromium)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'kill $pprof_pid 2>/dev/null || true; rm -rf "$tmp"' EXIT
pprof_pid=
go build -o "$tmp/dcpi" ./cmd/dcpi
"$tmp/dcpi" demo --dir "$tmp/fleet" >"$tmp/demo.out" 2>/dev/null
grep '^call stacks:' "$tmp/demo.out"
"$tmp/dcpi" pprof --db "$tmp/fleet/c1" -o "$tmp/fleet.pb.gz" 2>/dev/null
port=$((20000 + $$ % 20000))
go tool pprof -http="127.0.0.1:$port" -no_browser "$tmp/fleet.pb.gz" >"$tmp/pprof.log" 2>&1 &
pprof_pid=$!
for _ in $(seq 50); do
	curl -sf -o /dev/null "http://127.0.0.1:$port/ui/flamegraph" && break
	sleep 0.2
done
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1600,900 \
	--screenshot="$tmp/flame.png" "http://127.0.0.1:$port/ui/flamegraph" 2>/dev/null
cp "$tmp/flame.png" "$out"
echo "wrote $out"
