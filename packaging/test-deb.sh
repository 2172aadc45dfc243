#!/usr/bin/env bash
# The package's install test (make deb-test): installs DEB on this machine
# with dpkg, checks its files, user and units, runs each unit's ExecStart
# as its User= with the packaged configuration until the roles form a
# one-machine cluster (NATS, a coordinator, an aggregator, and a node
# enrolled with a bundle through dcpi enroll), then purges the package and
# checks it left nothing. Needs root and dpkg (skips without); refuses to
# run where a dcpi package is already installed. About a minute.
set -euo pipefail
deb=${1:?usage: test-deb.sh DEB}
if [ "$(id -u)" != 0 ] || ! command -v dpkg >/dev/null; then
	echo "test-deb: SKIP: needs root and dpkg"; exit 0
fi
if dpkg -s dcpi >/dev/null 2>&1; then
	echo "test-deb: a dcpi package is installed here already; not touching it" >&2; exit 1
fi
work=$(mktemp -d)
chmod 0711 "$work" # the roles, run as dcpi, write their bundle below it
pids=()
fail() { echo "test-deb: FAIL: $*" >&2; for f in "$work"/*.log; do [ -f "$f" ] && { echo "--- $f"; tail -20 "$f"; }; done >&2; exit 1; }
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	dpkg --purge dcpi >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
ok() { echo "test-deb: ok: $*"; }

dpkg -i "$deb" >"$work/dpkg.log" 2>&1 || fail "dpkg -i"
ok "dpkg -i $(basename "$deb")"

# Files, conffiles, modes.
units="dcpi-nats dcpi-coordinator dcpi-aggregator dcpi-node dcpi-node-linux"
for f in /usr/bin/dcpi /etc/dcpi/node.yaml /etc/dcpi/aggregator.yaml /etc/dcpi/coordinator.yaml /usr/share/doc/dcpi/deploy.md; do
	[ -f "$f" ] || fail "missing $f"
done
for u in $units; do [ -f "/lib/systemd/system/$u.service" ] || fail "missing unit $u"; done
[ "$(sort /var/lib/dpkg/info/dcpi.conffiles | tr '\n' ' ')" = "/etc/dcpi/aggregator.yaml /etc/dcpi/coordinator.yaml /etc/dcpi/node.yaml " ] ||
	fail "conffiles: $(cat /var/lib/dpkg/info/dcpi.conffiles)"
/usr/bin/dcpi --version | grep -q "^dcpi " || fail "dcpi --version"
ok "files and conffiles; $(/usr/bin/dcpi --version)"

# The user and its directories.
IFS=: read -r _ _ uid _ _ home shell < <(getent passwd dcpi) || fail "no user dcpi"
[ "$uid" -lt 1000 ] && [ "$home" = /var/lib/dcpi ] && [ "$shell" = /usr/sbin/nologin ] || fail "user dcpi: uid $uid home $home shell $shell"
[ "$(stat -c '%U:%G %a' /var/lib/dcpi)" = "dcpi:dcpi 750" ] || fail "/var/lib/dcpi: $(stat -c '%U:%G %a' /var/lib/dcpi)"
[ "$(stat -c '%U:%G %a' /etc/dcpi)" = "root:dcpi 750" ] || fail "/etc/dcpi: $(stat -c '%U:%G %a' /etc/dcpi)"
ok "system user dcpi (uid $uid), /var/lib/dcpi, /etc/dcpi"

# The units: systemd's verifier, and their hardening.
if command -v systemd-analyze >/dev/null; then
	for u in $units; do
		systemd-analyze verify "/lib/systemd/system/$u.service" >"$work/verify-$u.log" 2>&1 || fail "systemd-analyze verify $u: $(cat "$work/verify-$u.log")"
	done
	ok "systemd-analyze verify: $units"
else
	echo "test-deb: systemd-analyze not installed: units not verified"
fi
linuxcaps="CAP_PERFMON CAP_SYSLOG CAP_SYS_PTRACE CAP_DAC_READ_SEARCH"
for u in $units; do
	for opt in User=dcpi NoNewPrivileges=yes ProtectSystem=strict PrivateTmp=yes ReadWritePaths=/var/lib/dcpi; do
		grep -qx "$opt" "/lib/systemd/system/$u.service" || fail "$u lacks $opt"
	done
	if [ "$u" = dcpi-node-linux ]; then
		# Sampling the whole machine: these four capabilities, no more.
		for opt in "CapabilityBoundingSet=$linuxcaps" "AmbientCapabilities=$linuxcaps" ProtectHome=read-only; do
			grep -qx "$opt" "/lib/systemd/system/$u.service" || fail "$u lacks $opt"
		done
	else
		for opt in ProtectHome=yes CapabilityBoundingSet=; do
			grep -qx "$opt" "/lib/systemd/system/$u.service" || fail "$u lacks $opt"
		done
	fi
done
ok "hardening options in every unit"

# Each unit's command line, as its user, in the order of their After=.
start() { # unit: runs its ExecStart as its User= in its WorkingDirectory=, logging to $work/unit.log
	local cmd dir user
	cmd=$(sed -n 's/^ExecStart=//p' "/lib/systemd/system/$1.service")
	dir=$(sed -n 's/^WorkingDirectory=//p' "/lib/systemd/system/$1.service")
	user=$(sed -n 's/^User=//p' "/lib/systemd/system/$1.service")
	(cd "${dir:-/}" && exec runuser -u "$user" -- $cmd) >"$work/$1.log" 2>&1 &
	pids+=($!)
}
waitlog() { # unit pattern: within 25 s
	for _ in $(seq 1 125); do grep -q "$2" "$work/$1.log" && return 0; sleep 0.2; done
	fail "$1: no '$2' in its log within 25 s"
}
start dcpi-nats; waitlog dcpi-nats "serving at"; ok "dcpi-nats serving"
start dcpi-coordinator; waitlog dcpi-coordinator "c1 is the leader"; ok "dcpi-coordinator is the leader"
start dcpi-aggregator; waitlog dcpi-aggregator "aggregator"; ok "dcpi-aggregator started"

# Enrollment: issue on the cluster's side (as dcpi, the store's owner),
# install on the "host" (this machine, as root).
install -d -o dcpi -m 0700 "$work/issue"
runuser -u dcpi -- /usr/bin/dcpi nats-server add-host debtest --dir /var/lib/dcpi/nats \
	--url nats://127.0.0.1:4222 --label rack=r1 -o "$work/issue/debtest.dcpi-bundle" >"$work/issue.log" 2>&1 || fail "add-host --url"
/usr/bin/dcpi enroll "$work/issue/debtest.dcpi-bundle" --host wronghost >"$work/wrong.log" 2>&1 && fail "a bundle installed on the wrong host"
[ ! -e /etc/dcpi/enrollment.yaml ] || fail "a refused bundle wrote /etc/dcpi/enrollment.yaml"
/usr/bin/dcpi enroll "$work/issue/debtest.dcpi-bundle" --host debtest >"$work/enroll.log" 2>&1 || fail "dcpi enroll"
for f in host.nk enrollment.yaml; do
	[ "$(stat -c '%U %a' "/etc/dcpi/$f")" = "dcpi 600" ] || fail "/etc/dcpi/$f: $(stat -c '%U %a' "/etc/dcpi/$f")"
done
ok "bundle issued and installed: $(ls /etc/dcpi | tr '\n' ' ')"

# The packaged publish_every (1 simulated second) takes the better part of
# a minute of a loaded CI machine's time to simulate: publish sooner.
DCPI_NODE_PUBLISH_EVERY=0.05 start dcpi-node; waitlog dcpi-node "publishing to nats://127.0.0.1:4222"
# Joined: the stream acknowledges its batches (it logs every 5 s), and
# the aggregator consumes them (every 10 s) when the machine is quick
# enough to have flushed by then.
waitlog dcpi-node "[1-9][0-9]* samples published"
grep -q "register:" "$work/dcpi-node.log" && fail "dcpi-node: $(grep -m1 register: "$work/dcpi-node.log")"
ok "dcpi-node (host debtest) joined the cluster"

# This machine itself as the host, with the Linux unit's capabilities
# (as systemd grants them: ambient, to the unit's user), enrolled under
# a name of its own.
kill "${pids[-1]}" 2>/dev/null || true
runuser -u dcpi -- /usr/bin/dcpi nats-server add-host debtestlinux --dir /var/lib/dcpi/nats \
	--url nats://127.0.0.1:4222 --label rack=r1 -o "$work/issue/debtestlinux.dcpi-bundle" >"$work/issue-linux.log" 2>&1 || fail "add-host debtestlinux"
/usr/bin/dcpi enroll "$work/issue/debtestlinux.dcpi-bundle" --host debtestlinux >"$work/enroll-linux.log" 2>&1 || fail "dcpi enroll debtestlinux"
caps=$(echo "$linuxcaps" | tr 'A-Z' 'a-z' | sed 's/cap_/+/g; s/ /,/g')
cmd=$(sed -n 's/^ExecStart=//p' /lib/systemd/system/dcpi-node-linux.service)
(cd /var/lib/dcpi && exec setpriv --reuid=dcpi --regid=dcpi --init-groups --inh-caps="$caps" --ambient-caps="$caps" -- $cmd) >"$work/dcpi-node-linux.log" 2>&1 &
pids+=($!)
waitlog dcpi-node-linux "publishing to nats://127.0.0.1:4222"
waitlog dcpi-node-linux "[1-9][0-9]* published"
ok "dcpi-node-linux (host debtestlinux, as dcpi with $linuxcaps) joined the cluster"

for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
wait 2>/dev/null || true
pids=()
dpkg --purge dcpi >"$work/purge.log" 2>&1 || fail "dpkg --purge"
for f in /usr/bin/dcpi /lib/systemd/system/dcpi-node.service /lib/systemd/system/dcpi-node-linux.service /etc/dcpi /var/lib/dcpi; do
	[ ! -e "$f" ] || fail "$f left after purge"
done
ok "purged: binary, units, /etc/dcpi and /var/lib/dcpi gone (the user dcpi stays, as Debian policy asks)"
