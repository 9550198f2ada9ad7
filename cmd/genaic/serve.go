package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/engine"
	"github.com/genaic/genaic/serve"
)

func init() {
	register(command{
		name:    "serve",
		usage:   "serve REPO [--http :8000] [--grpc :8001] [--config FILE] [--model-name NAME] [--max-delay D] [--queue N] [--workers N] [--threads N] [--provider P] [--max-media-bytes N] [--default-priority N] [--default-timeout D] [--backend KIND=NAME] [--decline KEY=REASON] [--max-request-bytes N] [--header-timeout D] [--body-timeout D] [--idle-timeout D] [--grpc-handshake-timeout D] [--drain-timeout D] [--log-format text|json] [--metrics-names genaic|triton] [--no-warmup] [--plan-cache DIR] [--replan] [--model-control none|explicit] [--cpu-class batch|normal] [--procs N]",
		summary: "serve every package of a model repository on the Open Inference Protocol (HTTP/REST and gRPC), with /metrics",
		run:     runServe,
	})
}

func runServe(e *env, args []string) int {
	c := commands["serve"]
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var (
		httpAddr, grpcAddr, config, logFormat, name string
		modelControl, metricsNames                  string
		maxBytes                                    int64
		procs, defaultPriority                      int
		drain, defaultTimeout                       time.Duration
		timeouts                                    [4]time.Duration
		noWarmup, replan                            bool
		planCache                                   string
		ef                                          engineFlags
	)
	fs.StringVar(&httpAddr, "http", ":8000", "HTTP/REST address (health, metadata, infer, /metrics); empty: none")
	fs.StringVar(&grpcAddr, "grpc", ":8001", "gRPC address (GRPCInferenceService); empty: none")
	fs.StringVar(&config, "config", "", "YAML file of per-model settings: {defaults: {max_delay, queue, workers, threads, provider, max_media_bytes, default_priority, default_timeout}, models: {NAME: {...}}}; its values win over the flags")
	fs.DurationVar(&defaultTimeout, "default-timeout", 0, fmt.Sprintf("the timeout of the requests whose `timeout` parameter is absent, at most %v (0: none): past it a request still waiting fails run/deadline", serve.MaxTimeout))
	fs.IntVar(&defaultPriority, "default-priority", serve.DefaultPriority, fmt.Sprintf("the priority of the requests whose `priority` parameter is 0 or absent, from 1 (the most urgent) to %d: at each component, more urgent requests are grouped and run first", serve.MaxPriority))
	fs.StringVar(&name, "model-name", "", "when REPO is one package, the model's name (default: its folder's name)")
	fs.StringVar(&metricsNames, "metrics-names", "genaic", "genaic: /metrics has genaic's own names; triton: Triton's nv_inference_* metrics too, for dashboards built for Triton")
	fs.StringVar(&logFormat, "log-format", "text", "structured log format on standard error: text or json")
	fs.Int64Var(&maxBytes, "max-request-bytes", 64<<20, "the largest inference request body (HTTP) or message (gRPC) taken")
	timeoutFlags := []struct {
		name  string
		def   time.Duration
		usage string
	}{
		{"header-timeout", serve.DefaultHeaderTimeout, "how long an HTTP client may take to send a request's headers before its connection is closed"},
		{"body-timeout", serve.DefaultBodyTimeout, "how long an HTTP client may take to send a request's body once its headers are in: past it the request is answered 408 and its connection closed"},
		{"idle-timeout", serve.DefaultIdleTimeout, "how long an HTTP keep-alive or gRPC connection may wait for its next request before it is closed"},
		{"grpc-handshake-timeout", serve.DefaultHandshakeTimeout, "how long a gRPC connection may take to send the HTTP/2 preface before it is closed"},
	}
	for i, f := range timeoutFlags {
		fs.DurationVar(&timeouts[i], f.name, f.def, f.usage+" (at most "+serve.MaxTimeout.String()+")")
	}
	fs.DurationVar(&drain, "drain-timeout", 5*time.Minute, "on SIGTERM or SIGINT, how long accepted requests may take to finish before the server exits anyway")
	fs.BoolVar(&noWarmup, "no-warmup", false, "skip the warm-up request (the package's first requests.json request) each model runs before it is ready")
	fs.StringVar(&planCache, "plan-cache", defaultPlanCache(), "the folder where each model's planned execution is kept, to be taken at the next start or load while the package, its requests, the settings, genaic's build, ONNX Runtime and the machine are the same; empty: measure every plan")
	fs.BoolVar(&replan, "replan", false, "measure every model's execution anew at load, replacing the plan kept")
	fs.StringVar(&modelControl, "model-control", "none", "none: serve the repository's models found at start; explicit: clients may also load, reload and unload them (POST /v2/repository/models/NAME/load|unload, gRPC RepositoryModelLoad|Unload)")
	fs.IntVar(&procs, "procs", 0, fmt.Sprintf("Go's processors (GOMAXPROCS; 1 to %d); 0: twice the CPUs the process may use, or the GOMAXPROCS environment variable where it is set", maxProcs))
	ef.register(fs, 5*time.Millisecond, "how long a group waits for more items")
	paths, ok := parseFlags(e, fs, c, args)
	if !ok {
		return exitUsage
	}
	if len(paths) != 1 {
		fs.Usage()
		return exitUsage
	}
	if !ef.valid(e) {
		return exitUsage
	}
	if procs < 0 || procs > maxProcs {
		e.errorf("--procs %d: want 0 (twice the CPUs) to %d processors", procs, maxProcs)
		return exitUsage
	}
	ef.useCPUClass(e)
	_, envProcs := os.LookupEnv("GOMAXPROCS")
	if n := serveProcs(procs, envProcs, engine.CPUs()); n > 0 {
		// Restored on return, for a caller that goes on (the tests).
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(n))
	}
	if err := serve.CheckDefaultTimeout(defaultTimeout); err != nil {
		e.errorf("--default-timeout %v: %v", defaultTimeout, err)
		return exitUsage
	}
	if defaultPriority < 1 || serve.CheckDefaultPriority(defaultPriority) != nil {
		e.errorf("--default-priority %d: want a priority from 1 (the most urgent) to %d", defaultPriority, serve.MaxPriority)
		return exitUsage
	}
	if maxBytes <= 0 {
		e.errorf("--max-request-bytes %d: want a positive size", maxBytes)
		return exitUsage
	}
	for i, f := range timeoutFlags {
		if err := serve.CheckTimeout("--"+f.name, timeouts[i]); err != nil {
			e.errorf("%v", err)
			return exitUsage
		}
	}
	if st, err := os.Stat(planCache); planCache != "" && err == nil && !st.IsDir() {
		e.errorf("--plan-cache %s: not a folder; name a folder to keep the plans in (made if missing), or '' to keep none", planCache)
		return exitUsage
	}
	if httpAddr == "" && grpcAddr == "" {
		e.errorf("--http and --grpc are both empty: give at least one address to listen on")
		return exitUsage
	}
	var handler slog.Handler
	switch logFormat {
	case "text":
		handler = slog.NewTextHandler(e.stderr, nil)
	case "json":
		handler = slog.NewJSONHandler(e.stderr, nil)
	default:
		e.errorf("--log-format %s: want text or json", logFormat)
		return exitUsage
	}
	log := slog.New(handler)
	delay := ef.maxDelay
	cfg := serve.Config{Repo: paths[0], Name: name, MaxRequestBytes: maxBytes, Logger: log, NoWarmup: noWarmup, PlanCache: planCache, Replan: replan, ModelControl: modelControl, MetricsNames: metricsNames,
		HeaderTimeout: timeouts[0], BodyTimeout: timeouts[1], IdleTimeout: timeouts[2], HandshakeTimeout: timeouts[3],
		Backends: ef.backends, Declines: backend.Declines(ef.decline),
		Defaults: serve.ModelConfig{MaxDelay: &delay, Queue: ef.queue, Workers: ef.workers, Threads: ef.threads, Provider: ef.provider, MaxMediaBytes: ef.media, DefaultPriority: defaultPriority, DefaultTimeout: defaultTimeout}}
	if config != "" {
		f, err := serve.ReadConfig(config)
		if err != nil {
			e.errorf("--config %v", err)
			return exitUsage
		}
		cfg.Defaults = f.Defaults.Over(cfg.Defaults)
		cfg.Models = f.Models
	}
	// Signals are watched from the start: one during loading ends the
	// start-up once loading is done.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	// The fronts listen before the models load, so that health answers
	// from the start: live, and not ready until every model is.
	srv, err := serve.Open(cfg)
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	var hs *http.Server
	var hl, gl net.Listener
	if httpAddr != "" {
		if hl, err = net.Listen("tcp", httpAddr); err != nil {
			srv.Close()
			e.errorf("--http %v", err)
			return exitUsage
		}
		// Neither a slow nor an idle client holds a connection (a
		// goroutine and its buffers), or the drain, for longer than the
		// timeouts.
		hs = srv.NewHTTPServer()
	}
	gs := srv.NewGRPCServer()
	if grpcAddr != "" {
		if gl, err = net.Listen("tcp", grpcAddr); err != nil {
			if hl != nil {
				hl.Close()
			}
			srv.Close()
			e.errorf("--grpc %v", err)
			return exitUsage
		}
	}
	failed := make(chan error, 2)
	if hl != nil {
		log.Info("listening", "protocol", "http", "addr", hl.Addr().String())
		go func() {
			if err := hs.Serve(hl); !errors.Is(err, http.ErrServerClosed) {
				failed <- err
			}
		}()
	}
	if gl != nil {
		log.Info("listening", "protocol", "grpc", "addr", gl.Addr().String())
		go func() {
			if err := gs.Serve(gl); err != nil {
				failed <- err
			}
		}()
	}
	started := make(chan error, 1)
	go func() { started <- srv.Start() }()
	code := exitOK
	var sig os.Signal
	select {
	case err := <-started:
		if err != nil {
			e.errorf("%v", err)
			code = exitUsage
			break
		}
		log.Info("ready", "models", srv.Models(), "cpu_class", cmp.Or(ef.inClass, "unchanged"), "go_procs", runtime.GOMAXPROCS(0))
		select {
		case sig = <-sigs:
		case err := <-failed:
			log.Error("listener failed; draining", "error", err.Error())
			code = exitUsage
		}
	case sig = <-sigs:
		// Close, below, waits for the loading to end.
	case err := <-failed:
		log.Error("listener failed; draining", "error", err.Error())
		code = exitUsage
	}
	if sig != nil {
		log.Info("draining: accepting no new connections or requests; finishing those accepted (a second signal exits at once)", "signal", sig.String())
	}
	go func() {
		sig := <-sigs
		log.Error("second signal: exiting without finishing the accepted requests", "signal", sig.String())
		os.Exit(exitInterrupted)
	}()
	srv.SetDraining()
	ctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	var wg sync.WaitGroup
	if hs != nil {
		wg.Go(func() {
			if err := hs.Shutdown(ctx); err != nil {
				log.Error("HTTP drain", "error", err.Error())
			}
		})
	}
	wg.Go(func() {
		done := make(chan struct{})
		go func() { gs.GracefulStop(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			gs.Stop()
		}
	})
	wg.Wait()
	if err := srv.Drain(ctx); err != nil {
		log.Error("drain timed out; requests still running fail with run/closed", "timeout", drain.String())
	}
	srv.Close()
	admitted, answered := srv.Counts()
	log.Info("stopped", "admitted", admitted, "answered", answered)
	return code
}

// serveProcs is the Go processor count a server runs with (0: leave it
// as it is): the --procs flag where given, else GOMAXPROCS from the
// environment where set (Go has applied it), else twice cpus, the CPUs
// the process may use (engine.CPUs: Go's default count, a container's
// limit included). An invocation computes in ONNX Runtime on the
// thread that calls it and keeps that thread's processor until Go's
// system monitor takes it back, so with one processor per CPU a request
// that arrives while every processor is in an invocation waits for one
// to come back, while a core may idle; with twice the processors, Go's
// own work (reading requests, writing answers, forming groups) always
// has one per CPU. In-process callers (bench, run) keep Go's default:
// there the extra processors only add threads beside the invocations.
func serveProcs(flagProcs int, envSet bool, cpus int) int {
	switch {
	case flagProcs > 0:
		return flagProcs
	case envSet:
		return 0
	}
	return 2 * cpus
}

// defaultPlanCache is the folder genaic serve keeps plans in unless told:
// genaic/plans in the user's cache folder ($XDG_CACHE_HOME, else
// ~/.cache, on Linux), or none where the user has no cache folder.
func defaultPlanCache() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "genaic", "plans")
}
