package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/serve/oippb"
)

// The model repository extension of the protocol (as Triton and KServe
// define it): an index of the repository's packages and their state, and,
// under explicit model control (Config.ModelControl), loading, reloading
// and unloading a model while the server runs.
//
//	POST /v2/repository/index                  [{"name","version","state","reason"}]
//	POST /v2/repository/models/{m}/load        {} (or {"error"})
//	POST /v2/repository/models/{m}/unload      {}
//
// and over gRPC RepositoryIndex, RepositoryModelLoad and
// RepositoryModelUnload.
//
// A load compiles the package from the repository folder as it is now,
// warms it up and then puts it in place of the model of that name, if
// any: requests that find the old one finish on it, and it is closed once
// they are answered. A load that fails leaves the model served as it was.
// An unload makes the model refuse new requests (run/closed), waits until
// the ones it accepted are answered (nothing accepted is lost), closes its
// engine and stops serving the name. Loads and unloads run one at a time.

// Model states in the index, as Triton names them.
const (
	stateReady       = "READY"
	stateUnavailable = "UNAVAILABLE"
)

// indexEntry is one model of the repository index.
type indexEntry struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	State   string `json:"state"`
	Reason  string `json:"reason"`
}

// errNoModel is a load of a name the repository holds no package for.
var errNoModel = errors.New("no such package")

// errControl is a load or unload while model control is not explicit.
var errControl = errors.New("model control is not explicit")

// controlled refuses a load or unload unless model control is explicit.
func (s *Server) controlled() error {
	if s.cfg.ModelControl != "explicit" {
		return fmt.Errorf("%w: start the server with --model-control explicit to load and unload models", errControl)
	}
	return nil
}

// index lists the repository's packages as they are now: those served and
// ready, and the others (never loaded, unloaded, or failed) unavailable,
// with why. readyOnly keeps the ready ones.
func (s *Server) index(readyOnly bool) ([]indexEntry, error) {
	dirs, err := packages(s.cfg.Repo, s.cfg.Name)
	if err != nil && !isEmptyRepo(err) {
		return nil, err
	}
	reg := s.reg.Load()
	names := map[string]bool{} // a model served may have left the repository
	for name := range dirs {
		names[name] = true
	}
	for name := range reg.models {
		names[name] = true
	}
	out := []indexEntry{}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		e := indexEntry{Name: name, State: stateUnavailable, Reason: "not loaded"}
		if md := reg.models[name]; md != nil {
			e.Version = Version
			if md.ready.Load() {
				e.State, e.Reason = stateReady, ""
			} else {
				e.Reason = "unloading"
			}
		} else if why, ok := s.unloaded(name); ok {
			e.Reason = why
		}
		if !readyOnly || e.State == stateReady {
			out = append(out, e)
		}
	}
	return out, nil
}

// unloaded says why a model the server does not serve is unavailable,
// where a load or unload of it said so.
func (s *Server) unloaded(name string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	why, ok := s.reasons[name]
	return why, ok
}

func (s *Server) setReason(name, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reasons == nil {
		s.reasons = map[string]string{}
	}
	if why == "" {
		delete(s.reasons, name)
	} else {
		s.reasons[name] = why
	}
}

// LoadModel loads the repository's package of that name, or loads it
// again, and serves it once it is warm (see above).
func (s *Server) LoadModel(name string) error {
	if err := s.controlled(); err != nil {
		return err
	}
	s.loading.Lock()
	defer s.loading.Unlock()
	action := "load"
	if s.model(name) != nil {
		action = "reload"
	}
	err := s.loadModel(name)
	s.counted(name, action, err)
	return err
}

// counted counts a load or unload a client asked for, of a package the
// repository holds.
func (s *Server) counted(name, action string, err error) {
	result := "ok"
	switch {
	case errors.Is(err, errNoModel):
		return // no such model: no series of its name
	case err != nil:
		result = "failed"
	}
	s.m.control.WithLabelValues(name, action, result).Inc()
}

func (s *Server) loadModel(name string) error {
	if s.isClosed() || s.draining.Load() {
		return closedErr(name)
	}
	dirs, err := packages(s.cfg.Repo, s.cfg.Name)
	if err != nil && !isEmptyRepo(err) {
		return err
	}
	dir, ok := dirs[name]
	if !ok {
		return fmt.Errorf("%w: repository %s has no package %q (its packages: %s)", errNoModel, s.cfg.Repo, name, keys(dirs))
	}
	start := time.Now()
	md, err := s.load(name, dir)
	if err != nil {
		if s.model(name) == nil {
			s.setReason(name, "load failed: "+err.Error())
		}
		return fmt.Errorf("model %s (%s): %w", name, dir, err)
	}
	if s.isClosed() || s.draining.Load() { // began draining meanwhile
		md.eng.Close()
		return closedErr(name)
	}
	s.start(md)
	old := s.model(name)
	s.reg.Store(s.reg.Load().with(md))
	s.syncHealth()
	s.setReason(name, "")
	if old != nil {
		s.retire(old)
	}
	s.log.Info("model now served", "model", name, "reloaded", old != nil, "elapsed", time.Since(start).String())
	return nil
}

// UnloadModel stops serving a model once the requests it accepted are
// answered (see above).
func (s *Server) UnloadModel(name string) error {
	if err := s.controlled(); err != nil {
		return err
	}
	s.loading.Lock()
	defer s.loading.Unlock()
	md := s.model(name)
	if md == nil {
		return fmt.Errorf("%w: model %q is not loaded (loaded: %s)", errNoModel, name, s.served())
	}
	s.retire(md)
	s.reg.Store(s.reg.Load().without(name))
	s.health.SetServingStatus(name, healthpb.HealthCheckResponse_NOT_SERVING)
	s.syncHealth()
	s.setReason(name, "unloaded")
	s.counted(name, "unload", nil)
	s.log.Info("model unloaded", "model", name)
	return nil
}

// retire makes md refuse new requests (run/closed, to a request that
// still finds it), waits for those it accepted and closes its engine.
func (s *Server) retire(md *Model) {
	s.mu.Lock()
	md.ready.Store(false)
	s.mu.Unlock() // no request is admitted to md after this
	if s.model(md.Name) == md {
		s.m.ready.WithLabelValues(md.Name).Set(0)
	}
	md.inflight.Wait()
	if err := md.eng.Close(); err != nil {
		s.log.Warn("closing a retired model's engine", "model", md.Name, "error", err.Error())
	}
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// served names the models served now.
func (s *Server) served() string { return keys(s.reg.Load().models) }

// repositoryStatus is the HTTP status of a load or unload error.
func repositoryStatus(err error) int {
	switch {
	case errors.Is(err, errNoModel):
		return http.StatusNotFound
	case isClosed(err):
		return http.StatusServiceUnavailable
	}
	return http.StatusBadRequest
}

// repositoryCode is the gRPC code of a load or unload error.
func repositoryCode(err error) codes.Code {
	switch {
	case errors.Is(err, errNoModel):
		return codes.NotFound
	case errors.Is(err, errControl):
		return codes.FailedPrecondition
	case isClosed(err):
		return codes.Unavailable
	}
	return codes.InvalidArgument
}

// isClosed says whether err is run/closed: the server is draining or
// closed.
func isClosed(err error) bool {
	var re *backend.RunError
	return errors.As(err, &re) && re.Rule == backend.RunClosed
}

// repositoryParams reads a load or unload request's body: empty, or
// {"parameters": {...}}. Triton's "config" parameter (a configuration in
// place of the model's) has no meaning for a genaic package and is
// refused; "unload_dependents" is accepted (a genaic model has none).
func repositoryParams(r *http.Request) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil || len(b) == 0 {
		return err
	}
	var body struct {
		Parameters map[string]any `json:"parameters"`
	}
	if err := json.Unmarshal(b, &body); err != nil {
		return fmt.Errorf("the request body is not {\"parameters\": {...}}: %v", err)
	}
	return checkRepositoryParams(slices.Sorted(maps.Keys(body.Parameters)))
}

func checkRepositoryParams(names []string) error {
	for _, k := range names {
		switch k {
		case "unload_dependents":
		case "config":
			return errors.New(`parameter "config" is not taken: a genaic model is configured by its package (and serve's --config); edit them and load the model again`)
		default:
			return fmt.Errorf("unknown parameter %q (taken: unload_dependents)", k)
		}
	}
	return nil
}

// repositoryRoutes adds the extension's HTTP endpoints to mux.
func (s *Server) repositoryRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v2/repository/index", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Ready bool `json:"ready"`
		}
		b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if errors.Is(err, errBodyTimeout) {
			s.bodyFailed(w, err)
			return
		}
		if err != nil || len(b) > 0 && json.Unmarshal(b, &body) != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": `the request body is not {"ready": BOOL}`})
			return
		}
		idx, err := s.index(body.Ready)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, idx)
	})
	for verb, do := range map[string]func(string) error{"load": s.LoadModel, "unload": s.UnloadModel} {
		mux.HandleFunc("POST /v2/repository/models/{model}/"+verb, func(w http.ResponseWriter, r *http.Request) {
			err := repositoryParams(r)
			if errors.Is(err, errBodyTimeout) {
				s.bodyFailed(w, err)
				return
			}
			if err == nil {
				err = do(r.PathValue("model"))
			}
			if err != nil {
				writeJSON(w, repositoryStatus(err), map[string]string{"error": err.Error()})
				return
			}
			writeJSON(w, http.StatusOK, map[string]any{})
		})
	}
}

func (g *grpcService) RepositoryIndex(_ context.Context, r *oippb.RepositoryIndexRequest) (*oippb.RepositoryIndexResponse, error) {
	idx, err := g.s.index(r.Ready)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	resp := &oippb.RepositoryIndexResponse{}
	for _, e := range idx {
		resp.Models = append(resp.Models, &oippb.RepositoryIndexResponse_ModelIndex{Name: e.Name, Version: e.Version, State: e.State, Reason: e.Reason})
	}
	return resp, nil
}

func (g *grpcService) RepositoryModelLoad(_ context.Context, r *oippb.RepositoryModelLoadRequest) (*oippb.RepositoryModelLoadResponse, error) {
	return &oippb.RepositoryModelLoadResponse{}, control(g.s.LoadModel, r.ModelName, r.Parameters)
}

func (g *grpcService) RepositoryModelUnload(_ context.Context, r *oippb.RepositoryModelUnloadRequest) (*oippb.RepositoryModelUnloadResponse, error) {
	return &oippb.RepositoryModelUnloadResponse{}, control(g.s.UnloadModel, r.ModelName, r.Parameters)
}

// control checks a gRPC load's or unload's parameters and does it; the
// error is the call's status.
func control(do func(string) error, model string, params map[string]*oippb.ModelRepositoryParameter) error {
	err := checkRepositoryParams(slices.Sorted(maps.Keys(params)))
	if err == nil {
		err = do(model)
	}
	if err != nil {
		return status.Error(repositoryCode(err), err.Error())
	}
	return nil
}
