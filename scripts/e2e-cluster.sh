#!/usr/bin/env bash
# A throw-away Kubernetes control plane on loopback for e2e tests:
# etcd + kube-apiserver (+ kube-controller-manager, + kube-scheduler), built by
# scripts/e2e-toolchain.sh. etcd speaks TLS only, to clients holding the API server's
# certificate (DIR is 0700). No kubelet: Services get real ClusterIPs/NodePorts; a pod runs only
# where a node agent of the caller plays the kubelet's part (src/adapters/datapath/kubelet.ts).
#
#   scripts/e2e-cluster.sh start [DIR]   # prints KEY=VALUE lines (KUBECONFIG, E2E_DIR, ...)
#   scripts/e2e-cluster.sh stop DIR      # stops the processes started in DIR and deletes DIR
#   scripts/e2e-cluster.sh restart DIR   # starts again, on DIR's data, certificates and ports,
#                                        # each recorded process that is gone (a killed API server)
#
# Typical use:
#   eval "$(scripts/e2e-cluster.sh start | sed 's/^/export /')"
#   ...; scripts/e2e-cluster.sh stop "$E2E_DIR"
#
# Environment:
#   E2E_BIN            folder with the binaries (default: `scripts/e2e-toolchain.sh bin`)
#   E2E_KCM            1 (default) also runs kube-controller-manager (GC, namespace deletion,
#                      endpoints, service accounts); 0 runs apiserver + etcd only, with
#                      --enable-garbage-collector=false and the ServiceAccount admission off
#   E2E_KCM_CONTROLLERS  controllers to run (default: all but node-lifecycle-controller, which
#                      would mark the harness's kubelet-less Nodes NotReady after ~40 s)
#   E2E_SCHEDULER      1 also runs kube-scheduler (binds the pods of Deployments to the Nodes
#                      the caller registers); 0 (default): pods are bound by spec.nodeName
#   E2E_READY_TIMEOUT  seconds to wait for /readyz (default 120)
#   E2E_KEEP           1 keeps DIR on stop (logs)
#   E2E_SERVICE_CIDR   Service ClusterIP range (default 10.96.0.0/24: 253 Services; the
#                      benchmark of hundreds of UIs needs a larger one, e.g. 10.96.0.0/20)
# Only loopback addresses are used; all ports are picked free at start. Each process runs in a
# session of its own (setsid): it outlives the shell or terminal that ran `start` (an ssh command,
# a CI step, `script`) until `stop`. The kubeconfig trusts the API server's own CA (the
# self-signed pair it writes in DIR/pki), never skips TLS verification.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

log() { printf '[e2e-cluster %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

free_port() {
  if command -v python3 >/dev/null; then
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
  else
    node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
  fi
}

# A process's start time (field 22 of /proc/PID/stat), which a reused pid does not share.
start_time() { sed -n 's/^.*) [A-Za-z] \([^ ]* \)\{18\}\([0-9]*\) .*$/\2/p' "/proc/$1/stat" 2>/dev/null; }

# record NAME PID: the pid and its start time, so that stop signals only that very process
record() { echo "$1=$2" >> "$d/pids"; echo "$1=$(start_time "$2")" >> "$d/starts"; }

# await_ready NAME FAILURE COMMAND...: polls COMMAND every 0.5 s until it succeeds (logs how long
# that took); dies if the recorded process NAME exits meanwhile, or with "FAILURE after N s"
# after $timeout s. Reads cmd_start's $d and $timeout.
await_ready() {
  local name=$1 failure=$2 t0=$SECONDS p
  shift 2
  while (( SECONDS - t0 < timeout )); do
    if "$@" >/dev/null 2>&1; then
      log "$name ready in $((SECONDS - t0))s"
      return 0
    fi
    p=$(sed -n "s/^$name=//p" "$d/pids")
    [[ -e /proc/$p ]] || die "$name exited during start-up (see $d/logs)"
    sleep 0.5
  done
  die "$failure after ${timeout}s (see $d/logs)"
}

# recorded_pid DIR NAME: the pid of NAME recorded in DIR/pids if it is still that very process:
# exactly one line for its role, an integer pid > 1, the recorded start time, a command line
# naming DIR; nothing otherwise
recorded_pid() {
  local d=$1 name=$2 pid start
  [[ -f "$d/pids" && $(grep -c "^$name=" "$d/pids") == 1 ]] || return 0
  pid=$(sed -n "s/^$name=//p" "$d/pids")
  start=$(sed -n "s/^$name=//p" "$d/starts" 2>/dev/null | head -n 1)
  [[ "$pid" =~ ^[0-9]{1,8}$ && "$pid" -gt 1 && -n "$start" ]] || return 0
  [[ "$(start_time "$pid")" == "$start" ]] || return 0
  if [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' </proc/"$pid"/cmdline | grep -qF "$d"; then echo "$pid"; fi
}

# kill the processes recorded in DIR/pids, each only if it is the one recorded (recorded_pid)
stop_dir() {
  local d=$1 name pid
  [[ -f "$d/pids" ]] || return 0
  # reverse start order: scheduler, controller-manager, apiserver, etcd
  for name in kube-scheduler kube-controller-manager kube-apiserver etcd; do
    pid=$(recorded_pid "$d" "$name")
    if [[ -n "$pid" ]]; then
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do [[ -e /proc/$pid ]] || break; sleep 0.2; done
      [[ -e /proc/$pid ]] && kill -KILL "$pid" 2>/dev/null || true
      log "stopped $name ($pid)"
    fi
  done
  rm -f "$d/pids" "$d/starts"
}

cmd_stop() {
  local d=${1:-}
  [[ -n "$d" && -d "$d" ]] || die "usage: $0 stop DIR"
  d=$(cd "$d" && pwd)
  [[ -f "$d/.e2e-cluster" ]] || die "$d is not an e2e-cluster dir"
  stop_dir "$d"
  if [[ "${E2E_KEEP:-0}" != 1 ]]; then rm -rf "$d"; log "removed $d"; fi
}

# The control plane's processes, one function each, started in the background in a session of
# their own and recorded. They read the caller's $bin $d $e and the settings (ports, $kcm,
# $cidr, $controllers, $TOKEN, $server, $timeout). Logs are appended: a restart keeps the story.
# setsid: not a leader of its group (a background job of this script), it execs in place, so $!
# is the server's own pid.
run_etcd() {
  # --initial-cluster-state is ignored once the data folder holds a member (a restart)
  setsid "$bin/etcd" --name e2e --data-dir "$d/etcd" \
    --listen-client-urls "https://127.0.0.1:$etcd_port" --advertise-client-urls "https://127.0.0.1:$etcd_port" \
    --cert-file "$e/etcd.crt" --key-file "$e/etcd.key" --client-cert-auth --trusted-ca-file "$e/ca.crt" \
    --listen-peer-urls "https://127.0.0.1:$etcd_peer" --initial-advertise-peer-urls "https://127.0.0.1:$etcd_peer" \
    --peer-cert-file "$e/etcd.crt" --peer-key-file "$e/etcd.key" --peer-client-cert-auth --peer-trusted-ca-file "$e/ca.crt" \
    --initial-cluster "e2e=https://127.0.0.1:$etcd_peer" --initial-cluster-state new \
    --unsafe-no-fsync --log-level warn \
    </dev/null >>"$d/logs/etcd.log" 2>&1 &
  record etcd $!
}

# Started, then awaited on /readyz. Its serving pair is the one in $d/pki when there is one (it
# writes it at its first start): the kubeconfig's CA stays true across a restart.
run_apiserver() {
  local extra=()
  if [[ "$kcm" != 1 ]]; then
    # no garbage collector: store.go then adds no foregroundDeletion finalizers;
    # no service-account controller: do not require a default ServiceAccount
    extra+=(--enable-garbage-collector=false --disable-admission-plugins=ServiceAccount)
  fi
  setsid "$bin/kube-apiserver" \
    --etcd-servers "https://127.0.0.1:$etcd_port" \
    --etcd-cafile "$e/ca.crt" --etcd-certfile "$e/etcd.crt" --etcd-keyfile "$e/etcd.key" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
    --cert-dir "$d/pki" --token-auth-file "$d/pki/tokens.csv" \
    --authorization-mode RBAC --allow-privileged=true \
    --service-account-issuer https://kubernetes.default.svc \
    --service-account-key-file "$d/pki/sa.pub" --service-account-signing-key-file "$d/pki/sa.key" \
    --service-cluster-ip-range "$cidr" --service-node-port-range 30000-32767 \
    --endpoint-reconciler-type none \
    "${extra[@]}" \
    </dev/null >>"$d/logs/kube-apiserver.log" 2>&1 &
  record kube-apiserver $!
  local t0=$SECONDS ok=0 b p
  while (( SECONDS - t0 < timeout )); do
    if [[ "$(curl -sk -m 2 -H "Authorization: Bearer $TOKEN" "$server/readyz" 2>/dev/null)" == ok ]]; then ok=1; break; fi
    for b in etcd kube-apiserver; do
      p=$(sed -n "s/^$b=//p" "$d/pids")
      [[ -e /proc/$p ]] || die "$b exited during start-up (see $d/logs/$b.log)"
    done
    sleep 0.5
  done
  [[ $ok == 1 ]] || die "kube-apiserver not ready after ${timeout}s at $server/readyz (see $d/logs)"
  log "kube-apiserver ready in $((SECONDS - t0))s at $server"
}

run_kcm() {
  setsid "$bin/kube-controller-manager" \
    --kubeconfig "$d/kubeconfig" \
    --authentication-kubeconfig "$d/kubeconfig" --authorization-kubeconfig "$d/kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$kcm_port" \
    --service-account-private-key-file "$d/pki/sa.key" \
    --use-service-account-credentials=false --leader-elect=false \
    --cluster-name e2e --controllers "$controllers" \
    </dev/null >>"$d/logs/kube-controller-manager.log" 2>&1 &
  record kube-controller-manager $!
  # ready when the service-account controller made the default ServiceAccount
  await_ready kube-controller-manager "kube-controller-manager: no default ServiceAccount" \
    curl -skf -m 2 -H "Authorization: Bearer $TOKEN" "$server/api/v1/namespaces/default/serviceaccounts/default"
}

run_scheduler() {
  setsid "$bin/kube-scheduler" \
    --kubeconfig "$d/kubeconfig" \
    --authentication-kubeconfig "$d/kubeconfig" --authorization-kubeconfig "$d/kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$sched_port" --leader-elect=false \
    </dev/null >>"$d/logs/kube-scheduler.log" 2>&1 &
  record kube-scheduler $!
  # ready when its health endpoint answers
  await_ready kube-scheduler "kube-scheduler not healthy" curl -skf -m 2 "https://127.0.0.1:$sched_port/healthz"
}

cmd_start() {
  local bin=${E2E_BIN:-}
  [[ -n "$bin" ]] || bin=$("$HERE/e2e-toolchain.sh" bin)
  local kcm=${E2E_KCM:-1} timeout=${E2E_READY_TIMEOUT:-120} b
  for b in etcd kube-apiserver; do [[ -x "$bin/$b" ]] || die "$bin/$b missing: run scripts/e2e-toolchain.sh first"; done
  if [[ "$kcm" == 1 && ! -x "$bin/kube-controller-manager" ]]; then
    die "$bin/kube-controller-manager missing (or set E2E_KCM=0)"
  fi
  local scheduler=${E2E_SCHEDULER:-0}
  if [[ "$scheduler" == 1 && ! -x "$bin/kube-scheduler" ]]; then
    die "$bin/kube-scheduler missing: scripts/e2e-toolchain.sh builds it (stage kube-scheduler)"
  fi
  command -v curl >/dev/null || die "curl is needed"
  command -v openssl >/dev/null || die "openssl is needed (apt-get install openssl)"
  command -v setsid >/dev/null || die "setsid is needed (apt-get install util-linux)"

  local d=${1:-}
  if [[ -z "$d" ]]; then d=$(mktemp -d "${TMPDIR:-/tmp}/e2e-cluster.XXXXXX"); else mkdir -p "$d"; fi
  d=$(cd "$d" && pwd)
  # The folder holds the admin token, the keys and etcd's data: its owner's alone.
  chmod 700 "$d"
  touch "$d/.e2e-cluster"
  mkdir -p "$d/etcd" "$d/pki" "$d/logs"
  chmod 700 "$d/etcd"
  # on any failure: show the log tails, stop what was started, keep DIR for inspection
  trap 'rc=$?; if [[ $rc != 0 ]]; then log "start failed; logs kept in $d/logs";
    for f in "$d"/logs/*.log; do log "--- tail $f"; tail -n 15 "$f" >&2 || true; done; stop_dir "$d"; fi' EXIT

  local etcd_port etcd_peer api_port kcm_port sched_port
  etcd_port=$(free_port); etcd_peer=$(free_port); api_port=$(free_port); kcm_port=$(free_port); sched_port=$(free_port)
  # what `restart` starts again with: the same ports and settings (the kubeconfig names the port)
  local cidr=${E2E_SERVICE_CIDR:-10.96.0.0/24} controllers=${E2E_KCM_CONTROLLERS:-*,-node-lifecycle-controller}
  printf '%s\n' "etcd_port=$etcd_port" "etcd_peer=$etcd_peer" "api_port=$api_port" "kcm_port=$kcm_port" \
    "sched_port=$sched_port" "kcm=$kcm" "scheduler=$scheduler" "cidr=$cidr" "controllers=$controllers" > "$d/settings"

  # service-account signing key and a static token for the admin user
  openssl genrsa -out "$d/pki/sa.key" 2048 2>/dev/null
  openssl rsa -in "$d/pki/sa.key" -pubout -out "$d/pki/sa.pub" 2>/dev/null
  # etcd speaks TLS only and asks for a client certificate (the API server's): a local user who
  # finds its port on the command line reads nothing (the keys stay in this 0700 folder)
  local e=$d/pki/etcd
  mkdir -p "$e"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 \
    -subj /CN=e2e-etcd-ca -keyout "$e/ca.key" -out "$e/ca.crt" 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=e2e-etcd \
    -keyout "$e/etcd.key" -out "$e/etcd.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\nkeyUsage=digitalSignature\n' > "$e/ext.cnf"
  openssl x509 -req -in "$e/etcd.csr" -CA "$e/ca.crt" -CAkey "$e/ca.key" -CAcreateserial -days 30 \
    -extfile "$e/ext.cnf" -out "$e/etcd.crt" 2>/dev/null
  rm -f "$e/etcd.csr" "$e/ca.key"
  # a fresh admin token per cluster (cluster-admin: never a fixed, guessable one)
  local TOKEN; TOKEN=$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')
  echo "$TOKEN,e2e-admin,e2e-admin,system:masters" > "$d/pki/tokens.csv"
  : > "$d/pids"; : > "$d/starts"

  local server="https://127.0.0.1:$api_port"
  run_etcd
  run_apiserver
  # its self-signed pair (written at start-up) is the CA the kubeconfig trusts: checked once here
  curl -sf -m 5 --cacert "$d/pki/apiserver.crt" -H "Authorization: Bearer $TOKEN" "$server/readyz" >/dev/null ||
    die "kube-apiserver's certificate ($d/pki/apiserver.crt) does not verify for $server"
  cat > "$d/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: $server
    certificate-authority-data: $(base64 -w0 "$d/pki/apiserver.crt")
users:
- name: e2e-admin
  user:
    token: $TOKEN
contexts:
- name: e2e
  context:
    cluster: e2e
    user: e2e-admin
    namespace: default
current-context: e2e
EOF
  chmod 600 "$d/kubeconfig"
  if [[ "$kcm" == 1 ]]; then run_kcm; fi
  if [[ "$scheduler" == 1 ]]; then run_scheduler; fi
  trap - EXIT

  cat > "$d/env" <<EOF
KUBECONFIG=$d/kubeconfig
E2E_DIR=$d
E2E_KUBE_CONTEXT=e2e
E2E_APISERVER=$server
E2E_TOKEN=$TOKEN
E2E_PIDS=$d/pids
EOF
  cat "$d/env"
}

# Starts again, on DIR's own data, certificates, token and ports (DIR/settings, written by
# start), each process of DIR that is not the one recorded any more (recorded_pid): a killed API
# server comes back at the URL its kubeconfig names, on the same etcd. Those still running are
# left as they are. Fails, changing nothing else, when DIR lacks what start wrote or a port is
# taken meanwhile (the new process exits: stopped again, its log says why).
cmd_restart() {
  local bin=${E2E_BIN:-}
  [[ -n "$bin" ]] || bin=$("$HERE/e2e-toolchain.sh" bin)
  local d=${1:-} timeout=${E2E_READY_TIMEOUT:-120} key value name
  [[ -n "$d" && -d "$d" ]] || die "usage: $0 restart DIR"
  d=$(cd "$d" && pwd)
  [[ -f "$d/.e2e-cluster" && -f "$d/settings" && -f "$d/kubeconfig" && -f "$d/pki/tokens.csv" && -f "$d/pki/apiserver.crt" ]] ||
    die "$d lacks what start wrote (settings, kubeconfig, pki): it cannot be restarted in place"
  local etcd_port="" etcd_peer="" api_port="" kcm_port="" sched_port="" kcm="" scheduler="" cidr="" controllers=""
  # read back, untrusted: only these keys, each of its own shape
  while IFS='=' read -r key value; do
    case "$key" in
      etcd_port|etcd_peer|api_port|kcm_port|sched_port) [[ "$value" =~ ^[0-9]{1,5}$ ]] && printf -v "$key" '%s' "$value" ;;
      kcm|scheduler) [[ "$value" =~ ^[01]$ ]] && printf -v "$key" '%s' "$value" ;;
      cidr) [[ "$value" =~ ^[0-9./]{1,18}$ ]] && cidr=$value ;;
      controllers) [[ "$value" =~ ^[-a-z*,]{1,200}$ ]] && controllers=$value ;;
    esac
  done < "$d/settings"
  for key in etcd_port etcd_peer api_port kcm_port sched_port kcm scheduler cidr controllers; do
    [[ -n "${!key}" ]] || die "$d/settings: no valid $key: it cannot be restarted in place"
  done
  local e=$d/pki/etcd server="https://127.0.0.1:$api_port" TOKEN
  TOKEN=$(cut -d, -f1 "$d/pki/tokens.csv" | head -n 1)
  [[ "$TOKEN" =~ ^[0-9a-f]{48}$ ]] || die "$d/pki/tokens.csv: no admin token"
  local roles=(etcd kube-apiserver)
  [[ "$kcm" == 1 ]] && roles+=(kube-controller-manager)
  [[ "$scheduler" == 1 ]] && roles+=(kube-scheduler)
  # on failure: what this restart started is stopped again (only what is recorded and proven)
  trap 'rc=$?; if [[ $rc != 0 ]]; then log "restart failed; see $d/logs"; for f in "${started[@]}"; do
    p=$(recorded_pid "$d" "$f"); [[ -n "$p" ]] && kill -TERM "$p" 2>/dev/null; done; fi' EXIT
  local started=()
  for name in "${roles[@]}"; do
    [[ -z "$(recorded_pid "$d" "$name")" ]] || continue
    # its old lines go: one line per role, the one started now
    sed -i "/^$name=/d" "$d/pids" "$d/starts"
    started+=("$name")
    case "$name" in
      etcd) run_etcd ;;
      kube-apiserver) run_apiserver ;;
      kube-controller-manager) run_kcm ;;
      kube-scheduler) run_scheduler ;;
    esac
  done
  trap - EXIT
  log "restarted in $d: ${started[*]:-nothing (every process runs)}"
}

case "${1:-}" in
  start) shift; cmd_start "$@" ;;
  stop) shift; cmd_stop "$@" ;;
  restart) shift; cmd_restart "$@" ;;
  *) echo "usage: $0 start [DIR] | stop DIR | restart DIR" >&2; exit 2 ;;
esac
