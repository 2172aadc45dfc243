#!/usr/bin/env bash
# govulncheck against a vulnerability database built here, from the Go
# vulnerability database's own repository fetched as a module through the
# module proxy (golang.org/x/vulndb carries every report as OSV, and its
# cmd/indexdb writes the layout govulncheck reads with -db file://). No
# other network is needed: machines that reach only the module proxy can
# run it. VULNDB pins the reports' version; the database is built once per
# version under $(go env GOCACHE)/dcpi-vulndb.
set -euo pipefail
GO=${GO:-go}
VULNDB=${VULNDB:-v0.0.0-20261105234957-e22db6528018}
GOVULNCHECK=${GOVULNCHECK:-golang.org/x/vuln/cmd/govulncheck@v1.9.0}
out="$($GO env GOCACHE)/dcpi-vulndb/$VULNDB"
if [ ! -f "$out/index/db.json" ]; then
  dir=$($GO mod download -json "golang.org/x/vulndb@$VULNDB" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  rm -rf "$out.tmp" && mkdir -p "$(dirname "$out")"
  (cd "$dir" && GOFLAGS=-mod=mod $GO run ./cmd/indexdb -vulns data/osv -out "$out.tmp")
  rm -rf "$out" && mv "$out.tmp" "$out"
fi
exec $GO run "$GOVULNCHECK" -db "file://$out" "$@" ./...
