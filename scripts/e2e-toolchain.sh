#!/usr/bin/env bash
# Builds the e2e toolchain (Pulumi CLI + nodejs language host, Kubernetes and
# control-plane binaries) from Go modules only, into a cache folder keyed by
# the versions. Every binary that already exists there is skipped.
#
# Usage:
#   scripts/e2e-toolchain.sh                 # build what is missing; last stdout line = bin dir
#   scripts/e2e-toolchain.sh bin             # print the bin dir only (no build)
#   scripts/e2e-toolchain.sh versions        # print the pinned versions (name=version lines)
#   scripts/e2e-toolchain.sh plugins PULUMI_HOME   # build if needed, then install the
#                                            # provider plugins into PULUMI_HOME (--file)
#
# Environment:
#   UI_EXPOSURE_TOOLS_CACHE  cache root (default $HOME/.cache/ui-exposure-e2e)
#   E2E_ONLY                 space-separated subset of: pulumi langhost k8sprov
#                            kube-apiserver kube-controller-manager etcd kube-proxy
#                            kube-scheduler prometheus (default: all)
#                            and the optional stages, built only when named here:
#                            helm (used by scripts/render-charts.sh, not by the e2e), cilium
#   E2E_CILIUM               1 also builds the opt-in cilium stage (cilium-agent, cilium-dbg,
#                            cilium-cni, cilium-health-responder, and from the same module the
#                            agent's BPF sources, the chart and the CRDs); E2E_ONLY
#                            naming `cilium` does the same
#
# Needs: Go >= 1.26 and the Go module proxy. No other downloads.
# See docs/e2e-toolchain.md for versions, deviations and measured times.
set -euo pipefail

# ---- versions ---------------------------------------------------------------
PULUMI_VERSION=3.248.0
# pulumi-kubernetes provider/v4 has no tags: only pseudo-versions exist, and the
# module proxy here serves exactly one, the v4.25.0 release commit. v4.32.0
# (a03ff6ba58d2) is refused with "403 This module version is not available".
K8SPROV_VERSION=4.25.0
K8SPROV_MODVER=v4.0.0-20260115033456-f47bc2d6f199
# pulumi-command/provider is not served by the proxy at all (403 on @v/list and
# on the v1.2.1 pseudo-version), so pulumi-resource-command cannot be built here.
COMMAND_VERSION=1.2.1
K8S_VERSION=1.37.2
ETCD_VERSION=3.7.3          # what the k8s v1.37.2 module graph selects (checked at build)
# helm renders the upstream charts into test/data/charts (scripts/render-charts.sh). It is
# an optional stage: not part of KEY, never built unless E2E_ONLY names it.
HELM_VERSION=3.22.0
# Opt-in stage (not part of KEY: a new Cilium version rebuilds only this stage, see
# CILIUM_STAMP). The module pins github.com/osrg/gobgp/v4 at a pseudo-version the proxy
# refuses (403); v4.8.0 is served and builds.
CILIUM_VERSION=1.20.2
CILIUM_GOBGP=v4.8.0
# pulumi-language-nodejs is a separate module the proxy refuses (403); we build
# a small language host of our own against sdk/v3 (see the langhost stage; it is
# rebuilt whenever its source in this script changes).

KEY="pulumi-${PULUMI_VERSION}_k8sprov-${K8SPROV_VERSION}_k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}"
CACHE_ROOT="${UI_EXPOSURE_TOOLS_CACHE:-$HOME/.cache/ui-exposure-e2e}"
ROOT="$CACHE_ROOT/$KEY"
BIN="$ROOT/bin"
WORK="$ROOT/work"

log() { printf '[e2e-toolchain %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

if [[ "${1:-}" == "bin" ]]; then echo "$BIN"; exit 0; fi
# the pinned versions, for a binary found elsewhere to be checked against (src/adapters/sandbox/toolchain.ts)
if [[ "${1:-}" == "versions" ]]; then
  printf 'pulumi=%s\nk8sprov=%s\nkubernetes=%s\netcd=%s\n' "$PULUMI_VERSION" "$K8SPROV_VERSION" "$K8S_VERSION" "$ETCD_VERSION"
  exit 0
fi

command -v go >/dev/null || die "go not found in PATH"
export GOTOOLCHAIN=local CGO_ENABLED=0
export GOFLAGS="-mod=mod -buildvcs=false"
export GOPROXY="${GOPROXY:-https://proxy.golang.org,direct}"

# Provider plugins go to bin/prov/, so that putting bin/ on PATH never makes them
# "ambient" plugins (those win over PULUMI_HOME whatever version is asked for).
mkdir -p "$BIN/prov" "$WORK"
# The Prometheus stage has a lock of its own (taken in build_prometheus), so that building it
# alone (E2E_ONLY=prometheus) can run beside a build of the base toolchain.
if [[ "${E2E_ONLY:-}" != "prometheus" ]]; then
  exec 9>"$ROOT/.lock"
  flock 9 || die "cannot lock $ROOT/.lock"
fi

want() { [[ -z "${E2E_ONLY:-}" ]] || [[ " $E2E_ONLY " == *" $1 "* ]]; }
# optional stages are built only when E2E_ONLY names them
named() { [[ " ${E2E_ONLY:-} " == *" $1 "* ]]; }
# opt-in stages: only when named in E2E_ONLY, or E2E_CILIUM=1
want_optin() { [[ " ${E2E_ONLY:-} " == *" $1 "* ]] || [[ "${E2E_CILIUM:-}" == 1 ]]; }
have() { [[ -x "$BIN/$1" ]]; }

declare -A TIMES=()
# stage NAME BINARY FUNC: run FUNC unless BIN/BINARY exists; record the time. FUNC starts in
# WORK (a stage before may have removed the folder it worked in, and go cannot run in one).
stage() {
  local name=$1 binary=$2 fn=$3
  if ! want "$name"; then return 0; fi
  if have "$binary"; then log "skip $name: $BIN/$binary exists"; return 0; fi
  log "build $name ..."
  local t0=$SECONDS
  cd "$WORK"
  "$fn"
  [[ -x "$BIN/$binary" ]] || die "$name: $BIN/$binary was not produced"
  TIMES[$name]=$((SECONDS - t0))
  log "built $name in ${TIMES[$name]}s ($(du -hL "$BIN/$binary" | cut -f1))"
}

# fresh wrapper module dir
wrapper() { local d="$WORK/$1"; rm -rf "$d"; mkdir -p "$d"; cd "$d"; go mod init "e2etools/$1" >/dev/null 2>&1; }
# build to a temp name and rename, so an interrupted build never looks cached
gobuild() { # OUT LDFLAGS TAGS PKG
  local out=$1 ldf=$2 tags=$3 pkg=$4
  go build -trimpath ${tags:+-tags "$tags"} -ldflags "-s -w $ldf" -o "$out.tmp.$$" "$pkg" ||
    { rm -f "$out.tmp.$$"; die "go build $pkg failed"; }
  mv -f "$out.tmp.$$" "$out"
}

# ---- pulumi CLI ---------------------------------------------------------------
PULUMI_VER_LDF="-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v${PULUMI_VERSION}"
pulumi_wrapper() {
  [[ -f "$WORK/pulumi/.ready" ]] && { cd "$WORK/pulumi"; return 0; }
  wrapper pulumi
  # pkg/v3's own go.mod replaces atotto/clipboard; replaces of dependencies are
  # ignored, so repeat it here.
  go mod edit -replace=github.com/atotto/clipboard=github.com/tgummerer/clipboard@v0.0.0-20241001131231-d02d263e614e
  go get github.com/pulumi/pulumi/pkg/v3@v${PULUMI_VERSION} github.com/pulumi/pulumi/sdk/v3@v${PULUMI_VERSION}
  go get -tool github.com/pulumi/pulumi/pkg/v3/cmd/pulumi@v${PULUMI_VERSION}
  touch .ready
}
build_pulumi() {
  pulumi_wrapper
  gobuild "$BIN/pulumi" "$PULUMI_VER_LDF" osusergo,grpcnotrace github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
  local sdk; sdk=$(go list -m -f '{{.Dir}}' github.com/pulumi/pulumi/sdk/v3)
  if [[ -f "$sdk/nodejs/dist/pulumi-resource-pulumi-nodejs" ]]; then
    install -m 755 "$sdk/nodejs/dist/pulumi-resource-pulumi-nodejs" "$BIN/"
  fi
}

# ---- nodejs language host (our own; upstream module not served) --------------
LANGHOST_SRC=$(cat <<'GOEOF'
// pulumi-language-nodejs (ui-exposure e2e build).
//
// The upstream module github.com/pulumi/pulumi/sdk/nodejs/cmd/pulumi-language-nodejs/v3
// is not served by the Go module proxy available here, so this is a small
// language host of our own, written against the sdk/v3 protocol. It supports what
// `pulumi preview|up|destroy|refresh` need for a Node.js (JS or TS) program:
// GetRequiredPackages, Run (spawns `node @pulumi/pulumi/cmd/run ...` like the real
// host), RunPlugin for a policy pack (spawns the pack's own
// `node @pulumi/pulumi/cmd/run-policy-pack <engine> <pack dir>` with the stack's config, like the
// real host), GetPluginInfo, Handshake,
// Cancel, About, GetProgramDependencies and a plain `npm install` for InstallDependencies.
// Code generation, templates and other plugins written in Node are not supported.
//
// It never outlives its engine. The engine starts it in a process group of its own, so a
// SIGKILL of `pulumi up`'s group does not reach it; then it would serve Run (which takes node
// arguments from the request) on 127.0.0.1 without authentication for ever. So it watches its
// parent (the engine) every half second, and the engine's gRPC health every 5 minutes as
// Pulumi's own plugins do; when either goes, it kills the programs it runs and exits.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"

	sdk "github.com/pulumi/pulumi/sdk/v3"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/config"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	"github.com/pulumi/pulumi/sdk/v3/go/common/version"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// exit code of the Node.js runtime after it printed an actionable error
const bailExitCode = 32

type host struct {
	pulumirpc.UnimplementedLanguageRuntimeServer

	mu            sync.Mutex
	engineAddress string
	tracing       string
	cancelCtx     context.Context
	cancel        context.CancelFunc
	programs      map[*os.Process]bool
}

// engineGone kills the programs this host runs (and, when it leads its own process group as
// the engine starts it, that whole group, itself included), then exits.
func (h *host) engineGone(why string) {
	h.mu.Lock()
	for p := range h.programs {
		_ = p.Kill()
	}
	h.mu.Unlock()
	if syscall.Getpgrp() == os.Getpid() {
		_ = syscall.Kill(0, syscall.SIGKILL)
	}
	fmt.Fprintf(os.Stderr, "language host: %s; exiting\n", why)
	os.Exit(1)
}

func main() {
	tracing := flag.String("tracing", "", "tracing endpoint (passed through to the runtime)")
	runtimeName := flag.String("runtime", "nodejs", "only nodejs is supported")
	showVersion := flag.Bool("version", false, "print the version and exit")
	flag.Parse()
	if *showVersion {
		fmt.Println(version.Version)
		return
	}
	if *runtimeName != "nodejs" {
		fmt.Fprintf(os.Stderr, "unsupported runtime %q (this build supports nodejs only)\n", *runtimeName)
		os.Exit(1)
	}
	engineAddress := ""
	if args := flag.Args(); len(args) > 0 {
		engineAddress = args[0]
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	cancelCh := make(chan bool)
	go func() { <-ctx.Done(); stop(); close(cancelCh) }()

	cctx, ccancel := context.WithCancel(context.Background())
	h := &host{engineAddress: engineAddress, tracing: *tracing, cancelCtx: cctx, cancel: ccancel, programs: map[*os.Process]bool{}}
	// The engine is the parent: a new parent (init or a subreaper) means it is gone.
	parent := os.Getppid()
	go func() {
		for range time.Tick(500 * time.Millisecond) {
			if os.Getppid() != parent {
				h.engineGone(fmt.Sprintf("its engine (pid %d) exited", parent))
			}
		}
	}()
	if engineAddress != "" {
		gone, cancelGone := context.WithCancel(context.Background())
		go func() { <-gone.Done(); h.engineGone("its engine stopped answering its health check") }()
		if err := rpcutil.Healthcheck(context.Background(), engineAddress, 5*time.Minute, cancelGone); err != nil {
			fmt.Fprintf(os.Stderr, "health check: %v\n", err)
			os.Exit(1)
		}
	}
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Cancel: cancelCh,
		Init: func(srv *grpc.Server) error {
			pulumirpc.RegisterLanguageRuntimeServer(srv, h)
			return nil
		},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "could not start language host RPC server: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("%d\n", handle.Port)
	if err := <-handle.Done; err != nil {
		fmt.Fprintf(os.Stderr, "language host RPC stopped serving: %v\n", err)
		os.Exit(1)
	}
}

func (h *host) Handshake(ctx context.Context, req *pulumirpc.LanguageHandshakeRequest,
) (*pulumirpc.LanguageHandshakeResponse, error) {
	h.mu.Lock()
	if req.GetEngineAddress() != "" {
		h.engineAddress = req.GetEngineAddress()
	}
	h.mu.Unlock()
	return &pulumirpc.LanguageHandshakeResponse{}, nil
}

func (h *host) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version.Version}, nil
}

func (h *host) Cancel(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	h.cancel()
	return &emptypb.Empty{}, nil
}

type packageJSON struct {
	Name            string                  `json:"name"`
	Version         string                  `json:"version"`
	Pulumi          plugin.PulumiPluginJSON `json:"pulumi"`
	Dependencies    map[string]string       `json:"dependencies"`
	DevDependencies map[string]string       `json:"devDependencies"`
}

// walkPackages calls fn for every package.json below a node_modules directory of dir.
func walkPackages(dir string, inNodeModules bool, seen map[string]bool, fn func(path string, p packageJSON)) {
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil || seen[dir] {
		return
	}
	seen[dir] = true
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		curr := filepath.Join(dir, e.Name())
		isDir := e.IsDir()
		if e.Type()&os.ModeSymlink != 0 {
			if fi, err := os.Stat(curr); err == nil {
				isDir = fi.IsDir()
			}
		}
		if isDir {
			walkPackages(curr, inNodeModules || filepath.Base(dir) == "node_modules", seen, fn)
		} else if inNodeModules && e.Name() == "package.json" {
			b, err := os.ReadFile(curr)
			if err != nil {
				continue
			}
			var p packageJSON
			if json.Unmarshal(b, &p) == nil {
				fn(curr, p)
			}
		}
	}
}

func (h *host) GetRequiredPackages(ctx context.Context, req *pulumirpc.GetRequiredPackagesRequest,
) (*pulumirpc.GetRequiredPackagesResponse, error) {
	var pkgs []*pulumirpc.PackageDependency
	dedupe := map[string]bool{}
	walkPackages(req.GetInfo().GetProgramDirectory(), false, map[string]bool{}, func(_ string, p packageJSON) {
		if !p.Pulumi.Resource {
			return
		}
		name := p.Pulumi.Name
		if name == "" {
			if !strings.HasPrefix(p.Name, "@pulumi/") {
				return
			}
			name = strings.TrimPrefix(p.Name, "@pulumi/")
		}
		v := p.Pulumi.Version
		if v == "" {
			v = p.Version
		}
		if v == "" {
			return
		}
		if !strings.HasPrefix(v, "v") {
			v = "v" + v
		}
		dep := &pulumirpc.PackageDependency{Name: name, Kind: "resource", Version: v, Server: p.Pulumi.Server}
		if pz := p.Pulumi.Parameterization; pz != nil {
			dep.Parameterization = &pulumirpc.PackageParameterization{Name: pz.Name, Version: pz.Version, Value: pz.Value}
		}
		key := name + "@" + v
		if dep.Parameterization != nil {
			key += "/" + dep.Parameterization.Name + "@" + dep.Parameterization.Version
		}
		if !dedupe[key] {
			dedupe[key] = true
			pkgs = append(pkgs, dep)
		}
	})
	return &pulumirpc.GetRequiredPackagesResponse{Packages: pkgs}, nil
}

func (h *host) GetRequiredPlugins(ctx context.Context, req *pulumirpc.GetRequiredPluginsRequest,
) (*pulumirpc.GetRequiredPluginsResponse, error) {
	resp, err := h.GetRequiredPackages(ctx, &pulumirpc.GetRequiredPackagesRequest{Info: req.GetInfo()})
	if err != nil {
		return nil, err
	}
	var plugins []*pulumirpc.PluginDependency
	for _, p := range resp.Packages {
		if p.Parameterization == nil {
			plugins = append(plugins, &pulumirpc.PluginDependency{Name: p.Name, Kind: p.Kind, Version: p.Version, Server: p.Server})
		}
	}
	return &pulumirpc.GetRequiredPluginsResponse{Plugins: plugins}, nil
}

// resolve finds a module with Node's own resolution, starting in dir.
func resolve(nodeBin, dir, mod string) (string, error) {
	cmd := exec.Command(nodeBin, "-e", "console.log(require.resolve("+strconv.Quote(mod)+"))")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("It looks like the Pulumi SDK has not been installed in %s (cannot resolve %s). "+
			"Have you run npm install?", dir, mod)
	}
	return strings.TrimSpace(string(out)), nil
}

func (h *host) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	nodeBin, err := exec.LookPath("node")
	if err != nil {
		return &pulumirpc.RunResponse{Error: "could not find node on the $PATH: " + err.Error()}, nil
	}
	info := req.GetInfo()
	progDir := info.GetProgramDirectory()
	if progDir == "" {
		progDir = req.GetPwd()
	}
	runPath := os.Getenv("PULUMI_LANGUAGE_NODEJS_RUN_PATH")
	if runPath == "" {
		runPath = "@pulumi/pulumi/cmd/run"
	}
	if runPath, err = resolve(nodeBin, progDir, runPath); err != nil {
		return &pulumirpc.RunResponse{Error: err.Error()}, nil
	}

	// options from Pulumi.yaml `runtime.options`
	typescript, tsconfig, nodeargs := true, "", ""
	if opts := info.GetOptions(); opts != nil {
		m := opts.AsMap()
		if v, ok := m["typescript"].(bool); ok {
			typescript = v
		}
		if v, ok := m["tsconfig"].(string); ok {
			tsconfig = v
		}
		if v, ok := m["nodeargs"].(string); ok {
			nodeargs = v
		}
	}

	h.mu.Lock()
	engine := h.engineAddress
	h.mu.Unlock()
	args := strings.Fields(nodeargs)
	args = append(args, runPath)
	add := func(k, v string) {
		if v != "" {
			args = append(args, "--"+k, v)
		}
	}
	add("monitor", req.GetMonitorAddress())
	add("engine", engine)
	add("organization", req.GetOrganization())
	add("project", req.GetProject())
	add("root-directory", info.GetRootDirectory())
	add("stack", req.GetStack())
	add("pwd", progDir)
	if req.GetDryRun() {
		args = append(args, "--dry-run")
	}
	add("parallel", strconv.Itoa(int(req.GetParallel())))
	add("tracing", h.tracing)
	entry := info.GetEntryPoint()
	if entry == "" {
		entry = req.GetProgram()
	}
	if entry == "" {
		entry = "."
	}
	args = append(args, entry)
	args = append(args, req.GetArgs()...)

	// config keys are presented in the old "<ns>:config:<name>" form, as the real host does
	cfg := map[string]string{}
	for k, v := range req.GetConfig() {
		pk, err := config.ParseKey(k)
		if err != nil {
			return &pulumirpc.RunResponse{Error: "bad config key " + k + ": " + err.Error()}, nil
		}
		cfg[pk.Namespace()+":config:"+pk.Name()] = v
	}
	cfgJSON, _ := json.Marshal(cfg)
	secretKeys := req.GetConfigSecretKeys()
	if secretKeys == nil {
		secretKeys = []string{}
	}
	secretJSON, _ := json.Marshal(secretKeys)

	env := append(os.Environ(), "PULUMI_CONFIG="+string(cfgJSON), "PULUMI_CONFIG_SECRET_KEYS="+string(secretJSON))
	if typescript {
		env = append(env, "PULUMI_NODEJS_TYPESCRIPT=true")
	}
	if tsconfig != "" {
		env = append(env, "PULUMI_NODEJS_TSCONFIG_PATH="+tsconfig)
	}

	cmdCtx, cmdCancel := context.WithCancel(h.cancelCtx)
	defer cmdCancel()
	context.AfterFunc(ctx, cmdCancel)
	cmd := exec.CommandContext(cmdCtx, nodeBin, args...)
	cmd.Cancel = func() error {
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			return cmd.Process.Kill()
		}
		return nil
	}
	cmd.WaitDelay = 5 * time.Second
	cmd.Dir = req.GetPwd()
	cmd.Env = env
	// Node may switch its stdio to non-blocking mode; never hand it our own fds.
	cmd.Stdout = struct{ *os.File }{os.Stdout}
	cmd.Stderr = struct{ *os.File }{os.Stderr}
	err = cmd.Start()
	if err == nil {
		h.mu.Lock()
		h.programs[cmd.Process] = true
		h.mu.Unlock()
		err = cmd.Wait()
		h.mu.Lock()
		delete(h.programs, cmd.Process)
		h.mu.Unlock()
	}
	if err != nil {
		_ = os.Stdout.Sync()
		_ = os.Stderr.Sync()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ee.ExitCode() == bailExitCode {
				return &pulumirpc.RunResponse{Bail: true}, nil
			}
			return &pulumirpc.RunResponse{Error: fmt.Sprintf("Program exited with non-zero exit code: %d", ee.ExitCode())}, nil
		}
		return &pulumirpc.RunResponse{Error: "Problem executing program (could not run language executor): " + err.Error()}, nil
	}
	return &pulumirpc.RunResponse{}, nil
}

// RunPlugin runs a policy pack (kind "analyzer", the only kind supported) as the real host does: in
// the pack's folder, `node <its @pulumi/pulumi/cmd/run-policy-pack> <engine> <pack folder>`. The
// SDK's policy proxy answers the engine first, so that the stack's configuration reaches the pack
// (PULUMI_CONFIG), then relays to the pack. The pack is one of the programs killed when the engine goes.
func (h *host) RunPlugin(req *pulumirpc.RunPluginRequest, server grpc.ServerStreamingServer[pulumirpc.RunPluginResponse]) error {
	if req.GetKind() != "analyzer" {
		return fmt.Errorf("this language host runs policy packs only, not %q plugins", req.GetKind())
	}
	nodeBin, err := exec.LookPath("node")
	if err != nil {
		return fmt.Errorf("could not find node on the $PATH: %w", err)
	}
	dir := req.GetInfo().GetProgramDirectory()
	runPath, err := resolve(nodeBin, dir, "@pulumi/pulumi/cmd/run-policy-pack")
	if err != nil {
		return err
	}
	closer, stdout, stderr, err := rpcutil.MakeRunPluginStreams(server, false)
	if err != nil {
		return err
	}
	defer closer.Close()
	ctx := server.Context()
	proxy, stdout, err := sdk.NewPolicyProxy(ctx, stdout)
	if err != nil {
		return err
	}
	cfg, err := proxy.AwaitConfiguration(ctx)
	if err != nil {
		return err
	}
	env := req.GetEnv()
	if cfg != nil {
		config, _ := json.Marshal(cfg.GetConfig())
		env = append(env, "PULUMI_NODEJS_ORGANIZATION="+cfg.GetOrganization(), "PULUMI_NODEJS_PROJECT="+cfg.GetProject(),
			"PULUMI_NODEJS_STACK="+cfg.GetStack(), "PULUMI_NODEJS_DRY_RUN="+strconv.FormatBool(cfg.GetDryRun()), "PULUMI_CONFIG="+string(config))
	}
	args := append(append([]string{runPath}, req.GetArgs()...), dir)
	cmd := exec.CommandContext(ctx, nodeBin, args...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, stdout, stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("could not run the policy pack: %w", err)
	}
	h.mu.Lock()
	h.programs[cmd.Process] = true
	h.mu.Unlock()
	err = proxy.Attach(ctx, cmd)
	h.mu.Lock()
	delete(h.programs, cmd.Process)
	h.mu.Unlock()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return fmt.Errorf("policy pack exited with non-zero exit code: %d", ee.ExitCode())
	} else if err != nil {
		return err
	}
	return closer.Close()
}

func (h *host) About(ctx context.Context, req *pulumirpc.AboutRequest) (*pulumirpc.AboutResponse, error) {
	nodeBin, err := exec.LookPath("node")
	if err != nil {
		return nil, err
	}
	out, err := exec.Command(nodeBin, "--version").Output()
	if err != nil {
		return nil, err
	}
	return &pulumirpc.AboutResponse{Executable: nodeBin, Version: strings.TrimSpace(string(out))}, nil
}

func (h *host) GetProgramDependencies(ctx context.Context, req *pulumirpc.GetProgramDependenciesRequest,
) (*pulumirpc.GetProgramDependenciesResponse, error) {
	dir := req.GetInfo().GetProgramDirectory()
	if dir == "" {
		dir = req.GetPwd()
	}
	var deps []*pulumirpc.DependencyInfo
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return &pulumirpc.GetProgramDependenciesResponse{}, nil
	}
	var top packageJSON
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for n := range top.Dependencies {
		names[n] = true
	}
	for n := range top.DevDependencies {
		names[n] = true
	}
	for n := range names {
		v := ""
		if b, err := os.ReadFile(filepath.Join(dir, "node_modules", n, "package.json")); err == nil {
			var p packageJSON
			if json.Unmarshal(b, &p) == nil {
				v = p.Version
			}
		}
		deps = append(deps, &pulumirpc.DependencyInfo{Name: n, Version: v})
	}
	return &pulumirpc.GetProgramDependenciesResponse{Dependencies: deps}, nil
}

func (h *host) InstallDependencies(req *pulumirpc.InstallDependenciesRequest,
	server grpc.ServerStreamingServer[pulumirpc.InstallDependenciesResponse],
) error {
	closer, stdout, stderr, err := rpcutil.MakeInstallDependenciesStreams(server, req.GetIsTerminal())
	if err != nil {
		return err
	}
	defer closer.Close()
	dir := req.GetInfo().GetProgramDirectory()
	if dir == "" {
		dir = req.GetDirectory()
	}
	fmt.Fprintf(stdout, "Installing dependencies (npm install) in %s...\n\n", dir)
	cmd := exec.CommandContext(server.Context(), "npm", "install")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("npm install failed: %w", err)
	}
	fmt.Fprintf(stdout, "Finished installing dependencies\n\n")
	return closer.Close()
}
GOEOF
)
LANGHOST_SUM=$(printf '%s' "$LANGHOST_SRC$PULUMI_VERSION" | sha256sum | cut -c1-16)
build_langhost() {
  pulumi_wrapper
  mkdir -p cmd/pulumi-language-nodejs
  printf '%s\n' "$LANGHOST_SRC" > cmd/pulumi-language-nodejs/main.go
  gobuild "$BIN/pulumi-language-nodejs" "$PULUMI_VER_LDF" osusergo,grpcnotrace ./cmd/pulumi-language-nodejs
  echo "$LANGHOST_SUM" > "$BIN/.pulumi-language-nodejs.sum"
}
# rebuild the language host when its source changed (only in a run that builds it: a run of
# another stage must not leave the cache without one)
if want langhost && [[ -x "$BIN/pulumi-language-nodejs" && "$(cat "$BIN/.pulumi-language-nodejs.sum" 2>/dev/null)" != "$LANGHOST_SUM" ]]; then
  rm -f "$BIN/pulumi-language-nodejs"
fi

# ---- kubernetes provider ------------------------------------------------------
build_k8sprov() {
  wrapper k8sprov
  go get "github.com/pulumi/pulumi-kubernetes/provider/v4@${K8SPROV_MODVER}"
  local src; src="$(go list -m -f '{{.Dir}}' github.com/pulumi/pulumi-kubernetes/provider/v4)/cmd/pulumi-resource-kubernetes"
  mkdir -p cmd/pulumi-resource-kubernetes gen
  # Our own main: the upstream one embeds two files that go generate creates.
  cat > cmd/pulumi-resource-kubernetes/main.go <<'EOF'
package main

import (
	_ "embed"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

//go:embed schema-embed.json
var pulumiSchema []byte

//go:embed terraform-mapping-embed.json
var terraformMapping []byte

func main() { provider.Serve("kubernetes", version.Version, pulumiSchema, terraformMapping) }
EOF
  # Equivalent of upstream generate.go: set schema.version, minify both files.
  cat > gen/main.go <<'EOF'
package main

import (
	"bytes"
	"encoding/json"
	"os"
)

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func main() {
	src, dst, version := os.Args[1], os.Args[2], os.Args[3]
	b, err := os.ReadFile(src + "/schema.json")
	must(err)
	var s map[string]json.RawMessage
	must(json.Unmarshal(b, &s))
	v, _ := json.Marshal(version)
	s["version"] = v
	out, err := json.Marshal(s)
	must(err)
	must(os.WriteFile(dst+"/schema-embed.json", out, 0o644))
	b, err = os.ReadFile(src + "/terraform-mapping.json")
	must(err)
	var buf bytes.Buffer
	must(json.Compact(&buf, b))
	must(os.WriteFile(dst+"/terraform-mapping-embed.json", buf.Bytes(), 0o644))
}
EOF
  go run ./gen "$src" cmd/pulumi-resource-kubernetes "$K8SPROV_VERSION"
  go mod tidy
  gobuild "$BIN/prov/pulumi-resource-kubernetes" \
    "-X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=v${K8SPROV_VERSION}" "" ./cmd/pulumi-resource-kubernetes
}

# ---- kubernetes control plane -------------------------------------------------
K8S_VER_LDF=""
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  K8S_VER_LDF+=" -X $p.gitVersion=v${K8S_VERSION} -X $p.gitMajor=${K8S_VERSION%%.*}"
  K8S_VER_LDF+=" -X $p.gitMinor=$(cut -d. -f2 <<<"$K8S_VERSION") -X $p.gitTreeState=clean"
done
k8s_wrapper() {
  [[ -f "$WORK/k8s/.ready" ]] && { cd "$WORK/k8s"; return 0; }
  wrapper k8s
  local kmod
  kmod=$(go mod download -json "k8s.io/kubernetes@v${K8S_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')
  [[ -f "$kmod" ]] || die "cannot download k8s.io/kubernetes@v${K8S_VERSION}"
  # k8s.io/kubernetes replaces every staging module with ./staging/...; those
  # replaces are ignored for a dependency, so pin each to its v0.X.Y release.
  local m n=0 args=()
  for m in $(sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => \./staging/.*#\1#p' "$kmod"); do
    args+=("-replace=$m=$m@v0.${K8S_VERSION#*.}"); n=$((n + 1))
  done
  go mod edit "${args[@]}"
  log "k8s wrapper: $n staging replaces"
  go get "k8s.io/kubernetes@v${K8S_VERSION}" "go.etcd.io/etcd/server/v3@v${ETCD_VERSION}"
  go get -tool k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-proxy go.etcd.io/etcd/server/v3
  local got
  got=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
  [[ "$got" == "v$K8S_VERSION" ]] || die "k8s wrapper selected k8s.io/kubernetes $got, expected v$K8S_VERSION"
  got=$(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
  [[ "$got" == "v$ETCD_VERSION" ]] || die "k8s wrapper selected etcd $got, expected v$ETCD_VERSION (update ETCD_VERSION)"
  touch .ready
}
build_kube_apiserver() {
  k8s_wrapper
  gobuild "$BIN/kube-apiserver" "$K8S_VER_LDF" "" k8s.io/kubernetes/cmd/kube-apiserver
}
build_kcm() {
  k8s_wrapper
  gobuild "$BIN/kube-controller-manager" "$K8S_VER_LDF" "" k8s.io/kubernetes/cmd/kube-controller-manager
}
# kube-proxy, the data path of the e2e (test/e2e/datapath.e2e.ts): run in nftables mode inside
# each node's network namespace. A wrapper made before this stage existed lacks its tool line;
# -mod=mod lets go build add the few modules it needs (google/nftables, mdlayher/netlink, ...).
build_kube_proxy() {
  k8s_wrapper
  gobuild "$BIN/kube-proxy" "$K8S_VER_LDF" "" k8s.io/kubernetes/cmd/kube-proxy
}
# kube-scheduler binds the sandbox's and the e2e harness's pods to their nodes
build_kube_scheduler() {
  k8s_wrapper
  gobuild "$BIN/kube-scheduler" "$K8S_VER_LDF" "" k8s.io/kubernetes/cmd/kube-scheduler
}
build_etcd() {
  k8s_wrapper
  gobuild "$BIN/etcd" "" "" go.etcd.io/etcd/server/v3
}

# ---- helm (optional) ---------------------------------------------------------
# Its own wrapper: helm's module graph (k8s.io/* v0.3x) must not move the control plane's.
build_helm() {
  wrapper helm
  go get "helm.sh/helm/v3@v${HELM_VERSION}"
  gobuild "$BIN/helm" "-X helm.sh/helm/v3/internal/version.version=v${HELM_VERSION} -X helm.sh/helm/v3/internal/version.gitTreeState=clean" "" helm.sh/helm/v3/cmd/helm
  local v; v=$("$BIN/helm" version --template '{{.Version}}')
  [[ "$v" == "v${HELM_VERSION}" ]] || { rm -f "$BIN/helm"; die "helm: the built binary reports version $v"; }
}
# ---- prometheus -----------------------------------------------------------------
# promtool checks the portal's metrics and the generated rules (npm test, .ci/run); the server
# scrapes the in-cluster portal in the monitoring e2e. Both from one wrapper module, so they
# share the module cache. Not part of KEY: a new version rebuilds this stage only (PROM_STAMP).
# Built with plain `go build`: the server serves its API without the web UI's assets.
PROMETHEUS_VERSION=0.316.0
PROM_DIR="$CACHE_ROOT/prometheus-v$PROMETHEUS_VERSION"
PROM_STAMP="prometheus-v$PROMETHEUS_VERSION"
build_prometheus() {
  mkdir -p "$PROM_DIR/bin"
  exec 8>"$PROM_DIR/.lock"
  flock 8 || die "cannot lock $PROM_DIR/.lock"
  have promtool && have prometheus && return 0
  wrapper prometheus
  go get "github.com/prometheus/prometheus@v${PROMETHEUS_VERSION}"
  # Go tag v0.3yy.z is Prometheus 3.yy.z
  local minor=${PROMETHEUS_VERSION#0.3}
  local ldf="-X github.com/prometheus/common/version.Version=3.${minor}"
  gobuild "$PROM_DIR/bin/promtool" "$ldf" "" github.com/prometheus/prometheus/cmd/promtool
  gobuild "$PROM_DIR/bin/prometheus" "$ldf" "" github.com/prometheus/prometheus/cmd/prometheus
  echo "$PROM_STAMP" > "$PROM_DIR/.stamp"
  ln -sfn "$PROM_DIR/bin/prometheus" "$BIN/prometheus"
  ln -sfn "$PROM_DIR/bin/promtool" "$BIN/promtool"
  rm -rf "$WORK/prometheus"
}
if want prometheus && [[ -e "$BIN/promtool" && "$(cat "$PROM_DIR/.stamp" 2>/dev/null)" != "$PROM_STAMP" ]]; then
  rm -f "$BIN/promtool" "$BIN/prometheus"
fi

# ---- cilium (opt-in) ------------------------------------------------------------
# The agent compiles its datapath at run time with clang from the module's bpf/ sources,
# which it reads from <lib-dir>/bpf: they are installed next to the binaries.
CILIUM_DIR="$ROOT/cilium-$CILIUM_VERSION"
CILIUM_STAMP="$CILIUM_VERSION gobgp-$CILIUM_GOBGP"
build_cilium() {
  local src="$WORK/cilium-$CILIUM_VERSION" mod
  mod=$(go mod download -json "github.com/cilium/cilium@v${CILIUM_VERSION}" | sed -n 's/.*"Dir": "\(.*\)",*/\1/p')
  [[ -d "$mod" ]] || die "cannot download github.com/cilium/cilium@v${CILIUM_VERSION}"
  # A writable copy of the module: its go.mod needs one replace (dependencies' replaces
  # would be ignored in a wrapper, and the module has its own main packages).
  rm -rf "$src"; cp -r "$mod" "$src"; chmod -R u+w "$src"; cd "$src"
  go mod edit -replace="github.com/osrg/gobgp/v4=github.com/osrg/gobgp/v4@${CILIUM_GOBGP}"
  local ldf="-X 'github.com/cilium/cilium/pkg/version.ciliumVersion=${CILIUM_VERSION} ui-exposure-e2e'"
  gobuild "$CILIUM_DIR/bin/cilium-agent" "$ldf" osusergo ./daemon
  gobuild "$CILIUM_DIR/bin/cilium-dbg" "$ldf" osusergo ./cilium-dbg
  # No cilium-operator: ./operator imports sigs.k8s.io/mcs-api/controllers, which the module
  # proxy refuses (403) at v0.5.2 and every other version. What the agent needs from it is
  # done by the e2e harness instead: the CRDs (the module's own YAML, installed below) and
  # pod CIDRs (ipam mode kubernetes: Node.spec.podCIDR). See docs/e2e.md, "Cilium agent".
  # the CNI plugin a kubelet would call: it creates the pod's veth and its endpoint
  gobuild "$CILIUM_DIR/bin/cilium-cni" "$ldf" osusergo ./plugins/cilium-cni
  # the agent starts it (from PATH) in its health endpoint
  gobuild "$CILIUM_DIR/bin/cilium-health-responder" "$ldf" osusergo ./cilium-health/responder
  rm -rf "$CILIUM_DIR/lib.tmp"; mkdir -p "$CILIUM_DIR/lib.tmp"; cp -r "$src/bpf" "$CILIUM_DIR/lib.tmp/bpf"
  # the release's own chart, from the same module (what `helm pull cilium/cilium --version` gives)
  rm -rf "$CILIUM_DIR/chart"; cp -r "$src/install/kubernetes/cilium" "$CILIUM_DIR/chart"
  ln -sfn "$CILIUM_DIR/chart" "$ROOT/cilium-chart"
  # the CRDs the operator would register (the same files it embeds)
  rm -rf "$CILIUM_DIR/crds"; cp -r "$src/pkg/k8s/apis/cilium.io/client/crds" "$CILIUM_DIR/crds"
  ln -sfn "$CILIUM_DIR/crds" "$ROOT/cilium-crds"
  rm -rf "$CILIUM_DIR/lib"; mv "$CILIUM_DIR/lib.tmp" "$CILIUM_DIR/lib"
  ln -sfn "$CILIUM_DIR/lib" "$ROOT/cilium-lib"
  echo "$CILIUM_STAMP" > "$CILIUM_DIR/.stamp"
  # the marker the stage checks, written last
  ln -sfn "$CILIUM_DIR/bin/cilium-agent" "$BIN/cilium-agent"
  ln -sfn "$CILIUM_DIR/bin/cilium-dbg" "$BIN/cilium-dbg"
  ln -sfn "$CILIUM_DIR/bin/cilium-cni" "$BIN/cilium-cni"
  ln -sfn "$CILIUM_DIR/bin/cilium-health-responder" "$BIN/cilium-health-responder"
  rm -rf "$src"
}
# a different CILIUM_VERSION or gobgp replace rebuilds the stage
if want_optin cilium && [[ -e "$BIN/cilium-agent" && "$(cat "$CILIUM_DIR/.stamp" 2>/dev/null)" != "$CILIUM_STAMP" ]]; then
  rm -f "$BIN/cilium-agent"
fi

# ---- plugins mode -------------------------------------------------------------
# The npm SDK asks the engine for the plugin version of its own package.json
# (@pulumi/kubernetes 4.32.0 -> kubernetes v4.32.0). Only the 4.25.0 provider can
# be built here, so it is also registered under the versions listed in
# E2E_K8S_PLUGIN_ALIASES (default 4.32.0; set it empty to disable).
E2E_K8S_PLUGIN_ALIASES=${E2E_K8S_PLUGIN_ALIASES-4.32.0}
install_plugins() { # PULUMI_HOME
  local ph=$1 v
  mkdir -p "$ph"
  local env=(env PULUMI_HOME="$ph" PULUMI_SKIP_UPDATE_CHECK=true PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true)
  for v in "$K8SPROV_VERSION" $E2E_K8S_PLUGIN_ALIASES; do
    [[ "$v" != "$K8SPROV_VERSION" ]] && log "NOTE: registering the kubernetes provider v$K8SPROV_VERSION binary as plugin version $v"
    "${env[@]}" "$BIN/pulumi" plugin install resource kubernetes "$v" --file "$BIN/prov/pulumi-resource-kubernetes" --reinstall >&2
  done
  if [[ -x "$BIN/prov/pulumi-resource-command" ]]; then
    "${env[@]}" "$BIN/pulumi" plugin install resource command "$COMMAND_VERSION" --file "$BIN/prov/pulumi-resource-command" --reinstall >&2
  else
    log "NOTE: no pulumi-resource-command (github.com/pulumi/pulumi-command/provider is not served by the module proxy)"
  fi
  "${env[@]}" "$BIN/pulumi" plugin ls >&2
}

# ---- main ---------------------------------------------------------------------
T0=$SECONDS
log "cache: $ROOT"
stage pulumi pulumi build_pulumi
stage langhost pulumi-language-nodejs build_langhost
# (earlier layout had the provider in bin/ itself)
[[ -x "$BIN/pulumi-resource-kubernetes" && ! -e "$BIN/prov/pulumi-resource-kubernetes" ]] &&
  mv "$BIN/pulumi-resource-kubernetes" "$BIN/prov/pulumi-resource-kubernetes"
stage k8sprov prov/pulumi-resource-kubernetes build_k8sprov
stage kube-apiserver kube-apiserver build_kube_apiserver
stage etcd etcd build_etcd
stage kube-controller-manager kube-controller-manager build_kcm
stage kube-proxy kube-proxy build_kube_proxy
stage kube-scheduler kube-scheduler build_kube_scheduler
stage prometheus promtool build_prometheus
if named helm; then stage helm helm build_helm; fi
if want_optin cilium; then stage cilium cilium-agent build_cilium; fi
for k in "${!TIMES[@]}"; do log "time $k: ${TIMES[$k]}s"; done
log "total: $((SECONDS - T0))s; bin: $(du -sh "$BIN" | cut -f1)"

if [[ "${1:-}" == "plugins" ]]; then
  [[ -n "${2:-}" ]] || die "usage: $0 plugins PULUMI_HOME"
  install_plugins "$2"
fi
echo "$BIN"
