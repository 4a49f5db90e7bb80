#!/usr/bin/env bash
# The Cilium data path of the e2e: cilium-agent (built by `E2E_CILIUM=1
# scripts/e2e-toolchain.sh`) runs as a process on a node network namespace,
# with the cilium-config a real chart rendered, against the loopback control plane of
# scripts/e2e-cluster.sh. No kube-proxy, no containers. There is no cilium-operator (the module
# proxy refuses one of its dependencies, see docs/e2e.md): `start` installs the CRDs it would
# register, from the same module, and pod CIDRs come from Node.spec.podCIDR (ipam: kubernetes).
#
#   scripts/e2e-cilium.sh check                 # exit 0 when this machine can run it, else says why
#   scripts/e2e-cilium.sh start DIR CONFIG_DIR  # CONFIG_DIR: one file per cilium-config key
#   scripts/e2e-cilium.sh pod DIR NS NAME       # CNI ADD for a pod (as a kubelet would); prints its IP
#   scripts/e2e-cilium.sh exec DIR WHAT CMD...  # run CMD in the node/client/pod-<NAME> namespace
#   scripts/e2e-cilium.sh dbg DIR ARGS...       # cilium-dbg against this agent
#   scripts/e2e-cilium.sh agent-stop DIR        # stops the agent only (its BPF datapath stays pinned)
#   scripts/e2e-cilium.sh agent-start DIR CONFIG_DIR   # starts it again with a new configuration
#   scripts/e2e-cilium.sh stop DIR              # stops what DIR records, removes namespaces, mounts
#                                               # and DIR (E2E_KEEP=1 keeps DIR and its logs)
#
# Environment: KUBECONFIG (the loopback cluster), E2E_BIN (toolchain bin dir),
#   E2E_NODE (Node name, default e2e-cilium-node), E2E_NODE_IP (default 198.18.0.11),
#   E2E_CLIENT_IP (default 198.18.0.2), E2E_API_HOST/E2E_API_PORT (where the agent reaches the
#   API server inside the node namespace: the release's k8sServiceHost/Port, default
#   127.0.0.1:6443; a relay over a Unix socket forwards it to the loopback API server).
# Addresses are 198.18.0.0/15 only, inside namespaces this script creates; nothing routes out.
# Every name carries a per-run prefix (recorded in DIR/prefix), so parallel runs never collide.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
log() { printf '[e2e-cilium %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

CGROUP2_PARENT=${E2E_CGROUP2_PARENT:-/sys/fs/cgroup/unified}

clang_bin() {
  local c
  for c in clang clang-19 clang-20 clang-18; do command -v "$c" >/dev/null && { command -v "$c"; return 0; }; done
  return 1
}

# Says why this machine cannot run the Cilium data path (exit 1), or nothing (exit 0).
cmd_check() {
  [[ -z "${E2E_CILIUM_SKIP:-}" ]] || { echo "$E2E_CILIUM_SKIP"; return 1; }
  local bin=${E2E_BIN:-}
  [[ -n "$bin" ]] || bin=$("$HERE/e2e-toolchain.sh" bin)
  [[ "$(id -u)" == 0 ]] || { echo "needs root (network namespaces, bpffs, BPF programs)"; return 1; }
  local b
  for b in cilium-agent cilium-dbg cilium-cni cilium-health-responder; do
    [[ -x "$bin/$b" ]] || { echo "$bin/$b missing: the opt-in stage is not built (E2E_CILIUM=1 scripts/e2e-toolchain.sh)"; return 1; }
  done
  for b in cilium-lib/bpf cilium-chart cilium-crds/v2; do
    [[ -d "$bin/../$b" ]] || { echo "$bin/../$b missing: the opt-in stage is not built (E2E_CILIUM=1 scripts/e2e-toolchain.sh)"; return 1; }
  done
  clang_bin >/dev/null || { echo "no clang on PATH (apt-get install clang-19): the agent compiles its BPF datapath with it"; return 1; }
  for b in ip socat nsenter unshare curl python3; do
    command -v "$b" >/dev/null || { echo "$b not found (apt-get install iproute2 socat util-linux curl python3)"; return 1; }
  done
  # the phase-2 rehearsal runs the runbook's kubectl commands as printed
  command -v kubectl >/dev/null || { echo "kubectl not found (the phase-2 rehearsal runs the runbook's kubectl commands)"; return 1; }
  [[ -d "$CGROUP2_PARENT" ]] && [[ "$(stat -f -c %T "$CGROUP2_PARENT")" == cgroup2fs ]] ||
    { echo "no cgroup v2 hierarchy at $CGROUP2_PARENT (set E2E_CGROUP2_PARENT)"; return 1; }
  local t; t=$(mktemp -d)
  if ! mount -t bpf bpf "$t" 2>/dev/null; then rmdir "$t"; echo "cannot mount bpffs"; return 1; fi
  umount "$t"; rmdir "$t"
  return 0
}

rec() { echo "$2" >> "$1/$3"; }

on_start_exit() {
  local rc=$? d=$1 f
  [[ $rc != 0 ]] || return 0
  log "start failed; logs kept in $d/logs"
  for f in "$d"/logs/*.log; do log "--- tail $f"; tail -n 20 "$f" >&2 || true; done
  teardown "$d" || true
}

cmd_start() {
  local d=${1:?usage: start DIR CONFIG_DIR} cfg=${2:?usage: start DIR CONFIG_DIR}
  [[ -n "${KUBECONFIG:-}" && -f "$KUBECONFIG" ]] || die "KUBECONFIG must name the loopback cluster's kubeconfig"
  local why; why=$(cmd_check) || die "$why"
  local bin=${E2E_BIN:-}; [[ -n "$bin" ]] || bin=$("$HERE/e2e-toolchain.sh" bin)
  bin=$(cd "$bin" && pwd)
  mkdir -p "$d"; d=$(cd "$d" && pwd)
  [[ ! -e "$d/.e2e-cilium" ]] || die "$d is already in use"
  touch "$d/.e2e-cilium"
  local p; p="uxc$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"
  echo "$p" > "$d/prefix"
  : > "$d/pids"; : > "$d/netns"; : > "$d/mounts"
  mkdir -p "$d/logs" "$d/run" "$d/path" "$d/config"
  cp -r "$cfg"/. "$d/config/"
  # on any failure: show the log tails and undo what was set up (DIR and its logs stay)
  trap "on_start_exit $(printf %q "$d")" EXIT

  local node=${E2E_NODE:-e2e-cilium-node} nip=${E2E_NODE_IP:-198.18.0.11} cip=${E2E_CLIENT_IP:-198.18.0.2}
  local ahost=${E2E_API_HOST:-127.0.0.1} aport=${E2E_API_PORT:-6443}
  local nn="$p-node" cn="$p-client"
  ip netns add "$nn"; rec "$d" "$nn" netns
  ip netns add "$cn"; rec "$d" "$cn" netns
  # node <-> client: the client is the user's machine, outside the cluster
  ip link add "${p}n0" type veth peer name "${p}c0"
  ip link set "${p}n0" netns "$nn"; ip link set "${p}c0" netns "$cn"
  ip -n "$nn" link set "${p}n0" name eth0; ip -n "$cn" link set "${p}c0" name eth0
  ip -n "$nn" addr add "$nip/24" dev eth0; ip -n "$cn" addr add "$cip/24" dev eth0
  ip -n "$nn" link set lo up; ip -n "$nn" link set eth0 up
  ip -n "$cn" link set lo up; ip -n "$cn" link set eth0 up
  # The node's default route (through the client, which routes nowhere further) makes eth0
  # the device Cilium detects, as on a real node.
  ip -n "$nn" route add default via "$cip"
  ip netns exec "$nn" sysctl -qw net.ipv4.ip_forward=1

  # API server relay: host 127.0.0.1:<port> <- unix socket <- node $ahost:$aport
  local server hp
  server=$(sed -n 's/^ *server: *//p' "$KUBECONFIG" | head -1)
  hp=${server#https://}
  socat "UNIX-LISTEN:$d/api.sock,fork,mode=600" "TCP:$hp" </dev/null >"$d/logs/relay-host.log" 2>&1 &
  rec "$d" "relay-host=$!" pids
  if [[ "$ahost" != 127.0.0.1 ]]; then ip -n "$nn" addr add "$ahost/32" dev lo; fi
  ip netns exec "$nn" socat "TCP-LISTEN:$aport,bind=$ahost,fork,reuseaddr" "UNIX-CONNECT:$d/api.sock" \
    </dev/null >"$d/logs/relay-node.log" 2>&1 &
  rec "$d" "relay-node=$!" pids
  sed "s#^\( *server: *\).*#\1https://$ahost:$aport#" "$KUBECONFIG" > "$d/kubeconfig"; chmod 600 "$d/kubeconfig"

  # A private bpffs (pins never mix with anyone else's) and a private cgroup v2 subtree for
  # socket-LB: attached there, it applies to no process of this machine but the ones put in it.
  mkdir -p "$d/bpffs" "$d/cgroup2"
  mount -t bpf bpf "$d/bpffs"; rec "$d" "$d/bpffs" mounts
  mkdir "$CGROUP2_PARENT/$p"; echo "$CGROUP2_PARENT/$p" > "$d/cgroup"
  mount --bind "$CGROUP2_PARENT/$p" "$d/cgroup2"; rec "$d" "$d/cgroup2" mounts

  local clang; clang=$(clang_bin); ln -sfn "$clang" "$d/path/clang"
  printf 'node=%s\nnode_ip=%s\nclient_ip=%s\nnetns_node=%s\nnetns_client=%s\n' "$node" "$nip" "$cip" "$nn" "$cn" > "$d/env"

  install_crds "$bin"

  launch_agent "$d"
  trap - EXIT
  cat "$d/env"
}

# The agent, with the configuration in DIR/config (one file per cilium-config key).
launch_agent() {
  local d=$1 bin=${E2E_BIN:-}; [[ -n "$bin" ]] || bin=$("$HERE/e2e-toolchain.sh" bin)
  bin=$(cd "$bin" && pwd)
  local node nn; node=$(sed -n 's/^node=//p' "$d/env"); nn=$(sed -n 's/^netns_node=//p' "$d/env")
  local lib; lib=$(cd "$bin/../cilium-lib" && pwd)
  local path="$bin:$d/path:$PATH"
  local common=(--config-dir="$d/config" --k8s-kubeconfig-path="$d/kubeconfig")
  # agent, in its own mount namespace:
  # - /proc/sys/kernel is read-only there: the agent's machine-wide sysctls
  #   (kernel.unprivileged_bpf_disabled=1, which cannot be undone, kernel.timer_migration=0)
  #   are refused and it goes on (it marks them ignorable); net.* are per namespace, writable;
  # - /run/cilium (= /var/run/cilium, its runtime dir, which some paths use whatever
  #   --state-dir says) is DIR/run, as the DaemonSet's hostPath volume would be.
  [[ -d /run/cilium ]] || { mkdir -p /run/cilium; echo "created /run/cilium (empty mount point)" >> "$d/logs/host-changes.log"; }
  # - /run/cilium/netns shows the host's /run/netns (the DaemonSet's cilium-netns volume), and
  #   mounts made there later (pods' namespaces) propagate in (slave propagation).
  # The chart's other hostPath volumes are given as flags: procfs (/host/proc in the pod is
  # the node's /proc), the CNI config dir, and hubble's TLS files (the projected Secret).
  [[ -f "$d/tls/server.crt" ]] || hubble_tls "$d"
  mkdir -p "$d/run/netns"
  unshare --mount --propagation slave sh -c 'run=$1; shift
    mount --bind /proc/sys/kernel /proc/sys/kernel && mount -o remount,bind,ro /proc/sys/kernel &&
    mount --bind "$run" /run/cilium && mount --bind /run/netns /run/cilium/netns &&
    exec ip netns exec "$0" "$@"' "$nn" "$d/run" env -i PATH="$path" HOME="$d/run" \
    K8S_NODE_NAME="$node" CILIUM_K8S_NAMESPACE=kube-system \
    "$bin/cilium-agent" "${common[@]}" \
    --lib-dir="$lib" --bpf-root="$d/bpffs" --cgroup-root="$d/cgroup2" --procfs=/proc \
    --write-cni-conf-when-ready="$d/cni/05-cilium.conflist" --cni-log-file="$d/logs/cilium-cni.log" \
    --hubble-tls-cert-file="$d/tls/server.crt" --hubble-tls-key-file="$d/tls/server.key" \
    --hubble-tls-client-ca-files="$d/tls/client-ca.crt" \
    </dev/null >"$d/logs/agent.log" 2>&1 &
  rec "$d" "agent=$!" pids
}

# Stops the agent only (what a kubelet does when the DaemonSet deletes its pod): the BPF
# programs and maps stay pinned in DIR's bpffs, the namespaces and pods stay.
cmd_agent_stop() {
  local d=${1:?usage: agent-stop DIR} pid kids
  pid=$(sed -n 's/^agent=//p' "$d/pids" | tail -1)
  [[ "$pid" =~ ^[1-9][0-9]*$ ]] || die "no agent recorded in $d/pids"
  if [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' </proc/"$pid"/cmdline | grep -qF "$d"; then
    kids=$(descendants "$pid")
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do [[ -e /proc/$pid ]] || break; sleep 0.2; done
    [[ -e /proc/$pid ]] && kill -KILL "$pid" 2>/dev/null || true
    for k in $kids; do kill -KILL "$k" 2>/dev/null || true; done
  fi
  sed -i '/^agent=/d' "$d/pids"
  log "agent stopped"
}

# Starts the agent again with CONFIG_DIR (the new cilium-config), as a kubelet starts the new pod.
cmd_agent_start() {
  local d=${1:?usage: agent-start DIR CONFIG_DIR} cfg=${2:?usage: agent-start DIR CONFIG_DIR}
  [[ -f "$d/.e2e-cilium" ]] || die "$d is not an e2e-cilium dir"
  ! grep -q '^agent=' "$d/pids" || die "an agent is already recorded in $d/pids (agent-stop first)"
  rm -rf "$d/config"; mkdir -p "$d/config"; cp -r "$cfg"/. "$d/config/"
  mv "$d/logs/agent.log" "$d/logs/agent.$(date +%s).log" 2>/dev/null || true
  launch_agent "$d"
  log "agent started"
}

prefix() { cat "$1/prefix"; }

# kube-system/hubble-server-certs (made by the chart) as the DaemonSet projects it.
hubble_tls() {
  local d=$1 server token
  server=$(sed -n 's/^ *server: *//p' "$KUBECONFIG" | head -1)
  token=$(sed -n 's/^ *token: *//p' "$KUBECONFIG" | head -1)
  mkdir -p "$d/tls"; chmod 700 "$d/tls"
  curl -skf -H "Authorization: Bearer $token" "$server/api/v1/namespaces/kube-system/secrets/hubble-server-certs" |
    python3 -c 'import base64,json,os,sys
d=json.load(sys.stdin)["data"]
for k,f in (("tls.crt","server.crt"),("tls.key","server.key"),("ca.crt","client-ca.crt")):
    p=os.path.join(sys.argv[1],f); open(p,"wb").write(base64.b64decode(d[k])); os.chmod(p,0o600)' "$d/tls" ||
    die "cannot read kube-system/hubble-server-certs (did the chart install?)"
}

# The CRDs cilium-operator registers at start (the YAML it embeds), created as it would: an
# existing one is left as it is.
install_crds() {
  local bin=$1 server token f code
  server=$(sed -n 's/^ *server: *//p' "$KUBECONFIG" | head -1)
  token=$(sed -n 's/^ *token: *//p' "$KUBECONFIG" | head -1)
  for f in "$bin"/../cilium-crds/v2/*.yaml "$bin"/../cilium-crds/v2alpha1/*.yaml; do
    code=$(curl -sk -o "$d/logs/crd.out" -w '%{http_code}' -X POST -H "Authorization: Bearer $token" \
      -H 'Content-Type: application/yaml' --data-binary @"$f" "$server/apis/apiextensions.k8s.io/v1/customresourcedefinitions" || true)
    [[ "$code" != 000 ]] || die "cannot reach the API server at $server (KUBECONFIG=$KUBECONFIG)"
    [[ "$code" == 201 || "$code" == 409 ]] || die "creating CRD $(basename "$f"): HTTP $code $(head -c 300 "$d/logs/crd.out")"
  done
  log "CRDs installed from $(cd "$bin/../cilium-crds" && pwd)"
}

descendants() {
  local c
  for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do echo "$c"; descendants "$c"; done
}

# kill what DIR/pids records, only if the process still mentions DIR on its command line
stop_pids() {
  local d=$1 line pid
  [[ -f "$d/pids" ]] || return 0
  for line in $(tac "$d/pids"); do
    pid=${line#*=}
    # never 0 (our process group) or 1, whatever the file says
    [[ "$pid" =~ ^[1-9][0-9]*$ ]] && (( pid > 1 )) || continue
    if [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' </proc/"$pid"/cmdline | grep -qF "$d"; then
      # its children (the agent's health responder) by id, taken before it goes
      local kids; kids=$(descendants "$pid")
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do [[ -e /proc/$pid ]] || break; sleep 0.2; done
      [[ -e /proc/$pid ]] && kill -KILL "$pid" 2>/dev/null || true
      for k in $kids; do kill -KILL "$k" 2>/dev/null || true; done
    fi
  done
  : > "$d/pids"
}

# Undoes what DIR records (processes, namespaces, mounts, the cgroup), trusting none of it
# beyond what this script writes: names must carry the run's prefix, mounts lie inside DIR.
teardown() {
  local d=$1
  local p; p=$(prefix "$d")
  [[ "$p" =~ ^uxc[0-9a-f]{6}$ ]] || die "$d/prefix is not one this script writes"
  stop_pids "$d"
  local n m
  # processes still inside our namespaces (servers in pods, children of the agent)
  for n in $(cat "$d/netns" 2>/dev/null); do
    [[ "$n" == "$p"-* ]] || continue
    for pid in $(ip netns pids "$n" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
    ip netns del "$n" 2>/dev/null || true
  done
  for m in $(tac "$d/mounts" 2>/dev/null); do
    [[ "$m" == "$d"/* ]] && umount -l "$m" 2>/dev/null || true
  done
  local cg; cg=$(cat "$d/cgroup" 2>/dev/null || true)
  [[ "$cg" == "$CGROUP2_PARENT/$p" ]] && rmdir "$cg" 2>/dev/null || true
  log "stopped $p"
}

cmd_stop() {
  local d=${1:?usage: stop DIR}
  [[ -f "$d/.e2e-cilium" ]] || die "$d is not an e2e-cilium dir"
  d=$(cd "$d" && pwd)
  teardown "$d"
  if [[ "${E2E_KEEP:-0}" != 1 ]]; then rm -rf "$d"; fi
}

# The network configuration a container runtime hands the plugin: the conflist the agent
# wrote when ready (write-cni-conf-when-ready), its first plugin with the list's name/version.
netconf() {
  local f="$1/cni/05-cilium.conflist"
  [[ -f "$f" ]] || die "the agent has not written $f yet (not ready)"
  python3 -c 'import json,sys; l=json.load(open(sys.argv[1])); p=dict(l["plugins"][0]); p["name"]=l["name"]; p["cniVersion"]=l["cniVersion"]; p["log-file"]=sys.argv[2]; print(json.dumps(p))' "$f" "$1/logs/cni.log"
}

# CNI ADD as a kubelet runs it for a pod: the plugin makes the veth and the agent the endpoint.
cmd_pod() {
  local d=${1:?} ns=${2:?} name=${3:?}
  local p; p=$(prefix "$d"); local bin=${E2E_BIN:-}; [[ -n "$bin" ]] || bin=$("$HERE/e2e-toolchain.sh" bin)
  local pn="$p-pod-$name"
  ip netns add "$pn"; rec "$d" "$pn" netns
  ip -n "$pn" link set lo up
  local nn; nn=$(sed -n 's/^netns_node=//p' "$d/env")
  local cid; cid=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
  ip netns exec "$nn" env -i PATH="$bin:$PATH" CILIUM_SOCK="$d/run/cilium.sock" \
    CNI_COMMAND=ADD CNI_CONTAINERID="$cid" CNI_NETNS="/run/netns/$pn" CNI_IFNAME=eth0 CNI_PATH="$bin" \
    CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=$ns;K8S_POD_NAME=$name;K8S_POD_INFRA_CONTAINER_ID=$cid" \
    "$bin/cilium-cni" < <(netconf "$d") > "$d/cni-$name.json" ||
    die "cilium-cni ADD failed for $ns/$name: $(cat "$d/cni-$name.json")"
  sed -n 's/.*"address": *"\([0-9.]*\)\/.*/\1/p' "$d/cni-$name.json" | head -1
}

cmd_exec() {
  local d=${1:?} what=${2:?}; shift 2
  local p; p=$(prefix "$d")
  case "$what" in
    node) exec ip netns exec "$p-node" "$@" ;;
    client) exec ip netns exec "$p-client" "$@" ;;
    pod-*) exec ip netns exec "$p-$what" "$@" ;;
    *) die "exec: node, client or pod-<name>" ;;
  esac
}

cmd_dbg() {
  local d=${1:?}; shift
  local bin=${E2E_BIN:-}; [[ -n "$bin" ]] || bin=$("$HERE/e2e-toolchain.sh" bin)
  local p; p=$(prefix "$d")
  # `cilium-dbg bpf ...` reads the pinned maps at /sys/fs/bpf: there, in a mount namespace of
  # its own, that is this agent's bpffs.
  exec unshare --mount --propagation private sh -c 'b=$1; shift; mount --bind "$b" /sys/fs/bpf && exec nsenter --net="/run/netns/$0" "$@"' \
    "$p-node" "$d/bpffs" env CILIUM_SOCK="$d/run/cilium.sock" "$bin/cilium-dbg" -H "unix://$d/run/cilium.sock" "$@"
}

case "${1:-}" in
  check) shift; cmd_check "$@" ;;
  start) shift; cmd_start "$@" ;;
  stop) shift; cmd_stop "$@" ;;
  pod) shift; cmd_pod "$@" ;;
  exec) shift; cmd_exec "$@" ;;
  dbg) shift; cmd_dbg "$@" ;;
  agent-stop) shift; cmd_agent_stop "$@" ;;
  agent-start) shift; cmd_agent_start "$@" ;;
  *) die "usage: $0 check|start|stop|pod|exec|dbg|agent-stop|agent-start ..." ;;
esac
