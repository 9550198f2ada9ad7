// Package serve is genaic's model server: every package of a model
// repository served on the Open Inference Protocol (KServe v2), over
// HTTP/REST and gRPC, with Prometheus metrics, health, warm-up,
// per-request deadlines and graceful drain. docs/serve.md describes it.
package serve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/compiler/diag"
	"github.com/genaic/genaic/engine"
	"github.com/genaic/genaic/internal/safefile"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/passes"
	"github.com/genaic/genaic/plan"
	"github.com/genaic/genaic/vm"
	"github.com/genaic/genaic/vm/adapters"
)

// Config configures a Server.
type Config struct {
	// Repo is the model repository: a folder whose sub-folders are
	// packages (each holding inference_metadata.yaml), or one package.
	Repo string
	// Name names the model when Repo is one package (default: its
	// folder's name); a repository of several packages takes none.
	Name string
	// Defaults apply to every model; Models override them by name.
	Defaults ModelConfig
	Models   map[string]ModelConfig
	// MaxRequestBytes bounds an inference request's body (HTTP) or
	// message (gRPC); 0 means 64 MiB.
	MaxRequestBytes int64
	// HeaderTimeout bounds how long an HTTP request's headers may take to
	// arrive, BodyTimeout its body once they have, and IdleTimeout how
	// long an HTTP keep-alive or gRPC connection may wait for its next
	// request; HandshakeTimeout bounds a gRPC connection's handshake (the
	// client's HTTP/2 preface). 0 means the Default of each (conn.go).
	HeaderTimeout, BodyTimeout, IdleTimeout, HandshakeTimeout time.Duration
	// Logger receives structured logs; nil discards them.
	Logger *slog.Logger
	// Use and Bindings give backends of one's own (tests, embedders):
	// see engine.Options and engine.Config.
	Use      map[ir.ImplKind]backend.Backend
	Bindings *backend.Bindings
	// Backends names the registered backend each implementation kind runs
	// on (engine.Options.Backends; `serve --backend`).
	Backends map[ir.ImplKind]string
	// Declines decline grouped execution where a key matches (`serve
	// --decline`); each names a component of a model served at start,
	// or none (any).
	Declines backend.Declines
	// NoWarmup skips the warm-up invocation at load.
	NoWarmup bool
	// PlanCache is the folder where the executions planned at load are
	// kept and taken again while nothing they were measured under changed
	// (engine.PlanCache); "" plans every load. Replan measures every
	// plan, replacing the plan kept.
	PlanCache string
	Replan    bool
	// ModelControl is "explicit" to let clients load, reload and unload
	// models (the repository extension, repository.go); "" or "none"
	// serves the models found at start until the server stops.
	ModelControl string
	// MetricsNames is "genaic" (or "") for genaic's own metric names, or
	// "triton" to export Triton's nv_inference_* metrics beside them.
	MetricsNames string
}

// Model is one served package.
type Model struct {
	Name    string
	Dir     string
	plan    *plan.File
	eng     *vm.Engine
	ready   atomic.Bool
	inputs  []tensorMeta
	outputs []tensorMeta
	known   map[string]string // input name → dtype
	// stats counts requests and invocations for Triton's statistics
	// extension (triton.go); maxDelay is the engine's, for its
	// configuration.
	stats    *inferStats
	maxDelay time.Duration
	// defaultPriority and defaultTimeout are the priority and the timeout
	// of the requests that name none (ModelConfig).
	defaultPriority int
	defaultTimeout  time.Duration
	// met are the model's series of the per-request metrics.
	met *modelMetrics
	// inflight counts the model's requests admitted and not yet
	// answered, so that an unload can wait for them.
	inflight sync.WaitGroup
}

type tensorMeta struct {
	Name     string  `json:"name"`
	Datatype string  `json:"datatype"`
	Shape    []int64 `json:"shape"`
	// Parameters say how an input may come beyond its datatype and
	// shape (inputParams).
	Parameters map[string]any `json:"parameters,omitempty"`
}

// Server serves the models of a repository.
type Server struct {
	cfg Config
	log *slog.Logger
	// reg is the models served now: read without a lock on every
	// request, replaced whole by a load or unload (repository.go).
	reg      atomic.Pointer[registry]
	m        *metrics
	stats    *StatsCollector
	draining atomic.Bool
	// drained is closed when the server starts draining: streams end.
	drained   chan struct{}
	drainOnce sync.Once
	// accepted counts inference requests accepted and not yet answered,
	// so that Drain can wait for them.
	accepted sync.WaitGroup
	// admitted and answered count the requests admitted to an engine and
	// those answered, since start.
	admitted, answered atomic.Int64
	mu                 sync.Mutex
	closed             bool
	// loading serializes loads and unloads, and Close after them.
	loading sync.Mutex
	// reasons says, under mu, why a model of the repository the server
	// does not serve is unavailable (unloaded, or its load failed).
	reasons map[string]string
	// dirs are the packages Open found, by model name, which Start loads.
	dirs map[string]string
	// started is set once Start has loaded every package: the server is
	// not ready before.
	started atomic.Bool
	// health is the gRPC health service's state (syncHealth).
	health *health.Server
	// wholeJSON decodes every HTTP request's JSON in one piece, data
	// included (httpsplit.go): what tests compare the split decoding with.
	wholeJSON bool
}

// Version is what ServerMetadata reports.
const Version = "1"

// New loads every package of the repository (compiling it, or using its
// plan.json when the plan is fresh), warms each up, and returns the
// server ready: Open, then Start.
func New(cfg Config) (*Server, error) {
	s, err := Open(cfg)
	if err != nil {
		return nil, err
	}
	if err := s.Start(); err != nil {
		return nil, err
	}
	return s, nil
}

// Open checks cfg and finds the repository's packages, and returns the
// server with none loaded yet: its fronts may listen at once, answering
// live, and not ready until Start has loaded every package.
func Open(cfg Config) (*Server, error) {
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = 64 << 20
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := cfg.timeouts(); err != nil {
		return nil, err
	}
	switch cfg.ModelControl {
	case "", "none", "explicit":
	default:
		return nil, fmt.Errorf("model control %q: use none (the models found at start) or explicit (clients load and unload them)", cfg.ModelControl)
	}
	switch cfg.MetricsNames {
	case "", "genaic", "triton":
	default:
		return nil, fmt.Errorf("metrics names %q: use genaic (genaic's own) or triton (Triton's nv_inference_* names too)", cfg.MetricsNames)
	}
	s := &Server{cfg: cfg, log: log, m: newMetrics(), drained: make(chan struct{}), stats: &StatsCollector{}, health: health.NewServer()}
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	s.reg.Store(&registry{models: map[string]*Model{}})
	dirs, err := packages(cfg.Repo, cfg.Name)
	if isEmptyRepo(err) && cfg.ModelControl == "explicit" {
		err = nil // clients load the packages put there later
	}
	if err != nil {
		return nil, err
	}
	for name := range cfg.Models {
		if _, ok := dirs[name]; !ok {
			return nil, fmt.Errorf("the config names model %q, which repository %s does not hold (its models: %s)", name, cfg.Repo, keys(dirs))
		}
	}
	s.m.reg.MustRegister(s.stats)
	if cfg.MetricsNames == "triton" {
		s.m.reg.MustRegister(tritonCollector{s})
	}
	s.dirs = dirs
	return s, nil
}

// Start loads, warms up and serves every package Open found, and turns
// the server ready. Where one fails to load, the server serves none and
// Start says why.
func (s *Server) Start() error {
	s.loading.Lock()
	defer s.loading.Unlock()
	loaded := map[string]*Model{}
	var components []string
	for name, dir := range s.dirs {
		md, err := s.load(name, dir)
		if err != nil {
			for _, md := range loaded {
				md.eng.Close()
			}
			return fmt.Errorf("model %s (%s): %w", name, dir, err)
		}
		loaded[name] = md
		for _, c := range md.plan.IR.Components {
			components = append(components, c.Name)
		}
	}
	if err := engine.CheckDeclines(s.cfg.Declines, components); err != nil && len(loaded) > 0 {
		for _, md := range loaded {
			md.eng.Close()
		}
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(loaded)) {
		s.start(loaded[name])
		s.reg.Store(s.reg.Load().with(loaded[name]))
	}
	s.started.Store(true)
	s.syncHealth()
	return nil
}

// syncHealth sets the gRPC health service's statuses: the server's ("")
// as Ready says, and each model's as its own readiness. Once draining,
// the service answers NOT_SERVING for all (SetDraining).
func (s *Server) syncHealth() {
	status := func(ok bool) healthpb.HealthCheckResponse_ServingStatus {
		if ok {
			return healthpb.HealthCheckResponse_SERVING
		}
		return healthpb.HealthCheckResponse_NOT_SERVING
	}
	s.health.SetServingStatus("", status(s.Ready()))
	for _, md := range s.reg.Load().models {
		s.health.SetServingStatus(md.Name, status(md.ready.Load()))
	}
}

// start warms a loaded model up and makes it ready.
func (s *Server) start(md *Model) {
	if !s.cfg.NoWarmup {
		s.warm(md)
	}
	md.stats.serving.Store(true)
	md.ready.Store(true)
	s.stats.Add(md.Name, func() vm.Stats {
		if md := s.model(md.Name); md != nil {
			return md.eng.Stats()
		}
		return vm.Stats{}
	})
	s.m.ready.WithLabelValues(md.Name).Set(1)
	md.met.depth.Set(0)
}

// registry is the models served at one moment, by name and in order.
type registry struct {
	models map[string]*Model
	names  []string
}

// with is the registry with md in place of any model of its name.
func (r *registry) with(md *Model) *registry {
	out := &registry{models: maps.Clone(r.models)}
	out.models[md.Name] = md
	out.names = slices.Sorted(maps.Keys(out.models))
	return out
}

// without is the registry without the model of that name.
func (r *registry) without(name string) *registry {
	out := &registry{models: maps.Clone(r.models)}
	delete(out.models, name)
	out.names = slices.Sorted(maps.Keys(out.models))
	return out
}

// model is the model served under name now, or nil.
func (s *Server) model(name string) *Model { return s.reg.Load().models[name] }

func keys[V any](m map[string]V) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	if len(ks) == 0 {
		return "none"
	}
	return fmt.Sprint(ks)
}

// RepositoryPackages finds the packages of a repository folder as the
// server does: the folder itself when it is a package, else each of its
// subfolders that is one, by model (folder) name.
func RepositoryPackages(repo string) (map[string]string, error) { return packages(repo, "") }

// packages finds the packages of a repository by folder name.
func packages(repo, name string) (map[string]string, error) {
	if _, err := os.Stat(filepath.Join(repo, "inference_metadata.yaml")); err == nil {
		if name == "" {
			abs, _ := filepath.Abs(repo)
			name = filepath.Base(abs)
		}
		return map[string]string{name: repo}, nil
	}
	if name != "" {
		return nil, fmt.Errorf("a model name (%s) is given, but %s is no package: a repository's models are named by their folders", name, repo)
	}
	ents, err := os.ReadDir(repo)
	if err != nil {
		return nil, fmt.Errorf("model repository: %w", err)
	}
	out := map[string]string{}
	for _, e := range ents {
		dir := filepath.Join(repo, e.Name())
		if _, err := os.Stat(filepath.Join(dir, "inference_metadata.yaml")); err == nil {
			out[e.Name()] = dir
		}
	}
	if len(out) == 0 {
		return out, emptyRepoError(repo)
	}
	return out, nil
}

// emptyRepoError is a repository folder without a package: an error at
// start unless models are to be loaded into the server later (explicit
// model control).
type emptyRepoError string

func (e emptyRepoError) Error() string {
	return fmt.Sprintf("model repository %s holds no package (a folder with inference_metadata.yaml)", string(e))
}

// isEmptyRepo reports whether err is an emptyRepoError.
func isEmptyRepo(err error) bool { return errors.As(err, new(emptyRepoError)) }

// compile returns a package's plan: its plan.json when fresh, else the
// package compiled in memory.
func compile(dir string) (*plan.File, error) {
	if f, err := plan.Load(filepath.Join(dir, "plan.json")); err == nil {
		return f, nil
	}
	d, err := passes.CheckPath(dir, passes.Options{Adapters: func(m *ir.Module) backend.Backend { return adapters.New(m) }})
	if err != nil {
		return nil, err
	}
	if !d.Valid() {
		for _, x := range d.Diags() {
			if x.Severity == diag.Error {
				return nil, fmt.Errorf("the package has diagnostics, the first %s:%d:%d: error[%s]: %s; run `genaic check %s`", filepath.Base(d.File), x.Line, x.Column, x.Rule, x.Message, dir)
			}
		}
		return nil, fmt.Errorf("the package has diagnostics; run `genaic check %s`", dir)
	}
	f, err := passes.BuildPlan(d, filepath.Dir(d.File))
	if err != nil {
		return nil, err
	}
	return f, f.CheckPackage(filepath.Dir(d.File))
}

func (s *Server) load(name, dir string) (*Model, error) {
	start := time.Now()
	f, err := compile(dir)
	if err != nil {
		return nil, err
	}
	c := s.cfg.Models[name].Over(s.cfg.Defaults)
	st := &inferStats{}
	opts := engine.Apply(engine.Options{
		Options:  vm.Options{Queue: c.Queue, Declines: s.cfg.Declines, Observer: statsObserver{s.m.Observer(name), st}},
		Backends: s.cfg.Backends,
		Use:      s.cfg.Use,
		Config:   engine.Config{Provider: c.Provider, Bindings: s.cfg.Bindings, MaxMediaBytes: c.MaxMediaBytes},
	}, engine.Divide(c.Workers, c.Threads, engine.CPUs()))
	if c.MaxDelay != nil {
		opts.MaxDelay = *c.MaxDelay
	} else {
		opts.MaxDelay = 5 * time.Millisecond
	}
	if c.Workers == 0 && c.Threads == 0 && !s.cfg.NoWarmup {
		opts = s.planned(name, f, dir, opts)
	}
	eng, err := engine.Open(f, dir, opts)
	if err != nil {
		return nil, err
	}
	if !s.cfg.NoWarmup {
		if eng, err = s.verified(name, f, dir, opts, eng); err != nil {
			return nil, err
		}
	}
	md := &Model{Name: name, Dir: dir, plan: f, eng: eng, known: map[string]string{}, stats: st, maxDelay: opts.MaxDelay,
		defaultPriority: cmp.Or(c.DefaultPriority, DefaultPriority), defaultTimeout: c.DefaultTimeout, met: s.m.of(name)}
	fixed := graphExtents(f.IR, dir)
	params := inputParams(f.IR)
	for _, in := range f.IR.Inputs {
		if !fromRequest(in) && !in.ExternallySuppliable {
			continue
		}
		tm := meta(in.Name, in.Contract, fixed)
		tm.Parameters = params[in.Name]
		md.inputs = append(md.inputs, tm)
		md.known[in.Name] = in.Contract.DType
	}
	for _, out := range f.IR.Outputs {
		md.outputs = append(md.outputs, meta(out.Name, out.Contract, fixed))
	}
	s.log.Info("model loaded", "model", name, "dir", dir, "components", len(f.IR.Components),
		"max_delay", opts.MaxDelay.String(), "queue", c.Queue, "execution", opts.Execution.String(), "elapsed", time.Since(start).String())
	return md, nil
}

// planned returns opts with the execution planned on this machine
// (engine.PlanExecution, or the plan kept in the plan cache where one was
// measured under the same key) with the package's warm-up requests: those of
// its requests.json, or, when they cannot plan, requests synthesized from
// the workflow's inputs (synthSets: the minimal warm-up request, then, for
// a model that refuses it, the varied sets, smallest first; their items,
// alike and small, would not show what grouping the package's own
// requests gain). Where none can, the model runs one worker on ONNX
// Runtime's default threads, and the log says why.
func (s *Server) planned(name string, f *plan.File, dir string, opts engine.Options) engine.Options {
	tries := []func() ([]vm.Request, error){func() ([]vm.Request, error) {
		reqs, err := readRequests(dir)
		if err == nil && len(reqs) == 0 {
			err = errors.New("requests.json holds no request")
		}
		return reqs[:min(len(reqs), maxPlanRequests)], err
	}}
	for _, ss := range synthSets(f.IR, dir) {
		tries = append(tries, func() ([]vm.Request, error) { return ss.make(f.IR) })
	}
	err := errors.New("no warm-up request: the package has no requests.json, and none can be synthesized")
	cache := engine.PlanCache{Dir: s.cfg.PlanCache, Replan: s.cfg.Replan, Log: s.log.With("model", name)}
	for _, try := range tries {
		reqs, made := try()
		if made != nil {
			continue
		}
		var x *vm.Execution
		if x, err = cache.Plan(context.Background(), f, dir, opts, reqs, engine.PlanOptions{}); err == nil {
			return engine.Apply(opts, x)
		}
	}
	s.log.Warn("execution not planned: one worker on ONNX Runtime's default threads", "model", name, "error", fmt.Sprint(err), "help", giveRequests)
	return opts
}

// giveRequests is what a model whose execution could not be planned, or
// whose warm-up failed, needs: requests it accepts, which a contract's
// zeros need not be (a model may want a window of samples, or values in
// a range).
const giveRequests = "put a requests.json (the document genaic run reads) in the package folder, with requests the model accepts: serve plans the execution with them and warms the model up with the first"

// maxPlanRequests bounds the requests of a package's requests.json that
// plan its execution: enough for groups of every size.
const maxPlanRequests = 256

func openFile(dir, name string) (*os.File, error) {
	f, _, err := safefile.Open(filepath.Join(dir, name))
	return f, err
}

// Ready reports whether every model is ready and the server not draining.
func (s *Server) Ready() bool {
	if s.draining.Load() || !s.started.Load() {
		return false
	}
	for _, md := range s.reg.Load().models {
		if !md.ready.Load() {
			return false
		}
	}
	return true
}

// Models returns the model names in order.
func (s *Server) Models() []string { return append([]string(nil), s.reg.Load().names...) }

// Counts returns how many inference requests were admitted to an engine
// and how many of them were answered, since start.
func (s *Server) Counts() (admitted, answered int64) { return s.admitted.Load(), s.answered.Load() }

// Drain turns readiness false, so that load balancers send no more, and
// waits until every accepted request is answered or ctx ends. Requests
// still arriving are admitted until Close: the front ends stop accepting
// by closing their listeners (http.Server.Shutdown, grpc GracefulStop).
func (s *Server) Drain(ctx context.Context) error {
	s.SetDraining()
	done := make(chan struct{})
	go func() {
		s.accepted.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// SetDraining turns readiness false (health, ModelReady, genaic_model_ready).
func (s *Server) SetDraining() {
	s.draining.Store(true)
	s.drainOnce.Do(func() { close(s.drained) })
	s.health.Shutdown() // NOT_SERVING for every service from now on
	for _, name := range s.reg.Load().names {
		s.m.ready.WithLabelValues(name).Set(0)
	}
}

// Close releases every model's engine; a request still running fails with
// run/closed.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.loading.Lock() // a load in progress ends first (repository.go)
	defer s.loading.Unlock()
	var errs []error
	for _, md := range s.reg.Load().models {
		md.ready.Store(false)
		errs = append(errs, md.eng.Close())
	}
	return errors.Join(errs...)
}

// Engine returns a model's engine (tests, embedders), or nil.
func (s *Server) Engine(model string) *vm.Engine {
	if md := s.model(model); md != nil {
		return md.eng
	}
	return nil
}
