package serve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/vm"
	"github.com/genaic/genaic/vm/jsonio"
)

// meta is a workflow input's or output's metadata: its OIP datatype and
// its shape in one request: the extent the contract fixes, or that a
// component's graph fixes for the symbol (fixed), 1 on a request_aligned
// axis and the factor on a request_expanded one (a request brings that
// many rows), and -1 where the extent varies from request to request (a
// padded axis too, even one the graph fixes: a request may bring fewer).
// Clients that make inputs from metadata (perf_analyzer) then need a
// shape only for what really varies.
func meta(name string, c *ir.Contract, fixed map[string]int64) tensorMeta {
	tm := tensorMeta{Name: name, Datatype: "BYTES", Shape: []int64{}}
	if c == nil {
		return tm
	}
	tm.Datatype = Datatype(c.DType)
	if !c.HasShape && c.Rank > 0 {
		// A rank without a shape: every extent is variable.
		for range c.Rank {
			tm.Shape = append(tm.Shape, -1)
		}
		return tm
	}
	for i, d := range c.Shape {
		n, ok := fixed[d.Sym]
		switch {
		case !d.IsSym():
			n = d.Size
		case slices.ContainsFunc(c.Padding, func(p ir.Padding) bool { return p.Dim.Name == d.Sym }):
			n = -1
		case int64(i) == c.Layout.Axis && c.Layout.Kind == ir.RequestAligned:
			n = 1
		case int64(i) == c.Layout.Axis && c.Layout.Kind == ir.RequestExpanded:
			n = c.Layout.Factor
		case !ok:
			n = -1
		}
		tm.Shape = append(tm.Shape, n)
	}
	return tm
}

// fromRequest reports whether requests bring a workflow input's value:
// its source is request or application (DESIGN §6; an application's
// value reaches the workflow through its requests). Literal and artifact
// inputs come from the package.
func fromRequest(in *ir.Input) bool {
	switch in.Source {
	case "", "request", "application":
		return true
	}
	return false
}

// The parameters of an input's metadata (docs/serve.md) that tell a
// client how it may come beyond its datatype and shape; itemsParam says
// that the input takes the items form, its value the contract's ownership
// levels (2: units of items may nest).
const (
	// paramBytes: the input takes BYTES, one encoded item per element.
	paramBytes = "bytes"
	// paramCompanion: the input is a companion (offsets, owners, valid
	// lengths) the runtime derives when the inputs it names (comma-
	// separated) come in the items form or as BYTES.
	paramCompanion = "companion_of"
)

// inputParams returns the metadata parameters of a workflow's inputs, by
// name: which take the items form and BYTES, and which are companions.
func inputParams(m *ir.Module) map[string]map[string]any {
	out := map[string]map[string]any{}
	set := func(name, key string, v any) {
		if out[name] == nil {
			out[name] = map[string]any{}
		}
		out[name][key] = v
	}
	companionOf := map[string][]string{}
	for _, in := range m.Inputs {
		c := in.Contract
		if !fromRequest(in) || c == nil || c.Layout.Kind != ir.TokenPacked || len(c.Layout.Levels) == 0 {
			continue
		}
		set(in.Name, itemsParam, int64(len(c.Layout.Levels)))
		if takesBytes(c) {
			set(in.Name, paramBytes, true)
		}
		for _, comp := range c.Companions() {
			if !slices.Contains(companionOf[comp], in.Name) {
				companionOf[comp] = append(companionOf[comp], in.Name)
			}
		}
	}
	for _, in := range m.Inputs {
		if of := companionOf[in.Name]; of != nil {
			set(in.Name, paramCompanion, strings.Join(of, ","))
		}
	}
	return out
}

func readRequests(dir string) ([]vm.Request, error) {
	f, err := openFile(dir, "requests.json")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return jsonio.ReadRequests(f, dir)
}

// closedErr answers a request to a model that is not (or no longer)
// ready.
func closedErr(model string) error {
	return backend.Errorf(backend.RunClosed, "model %s is not accepting requests (the server is starting or draining, or the model is being unloaded); retry on another replica", model)
}

// testHookAdmitted, when set (tests), runs as a request has been admitted
// to md and before its engine takes it.
var testHookAdmitted func(md *Model)

// refused counts a request that failed before it was decoded.
func (s *Server) refused(md *Model, protocol string, err error) {
	md.met.counted(protocol)
	s.m.errors.WithLabelValues(md.Name, asRun(err).Rule).Inc()
	md.stats.answered(true, 0)
}

// infer runs one decoded request on a model under the request's timeout
// and at its priority, counting it, and returns its response.
func (s *Server) infer(ctx context.Context, md *Model, protocol string, req vm.Request, cp callParams) vm.Response {
	start := time.Now()
	md.met.counted(protocol)
	resp := s.admit(ctx, md, req, cp)
	took := time.Since(start)
	md.met.latency.Observe(took.Seconds())
	md.stats.answered(resp.Err != nil, took)
	if resp.Err != nil {
		re := vm.AsRunError(resp.Err)
		s.m.errors.WithLabelValues(md.Name, re.Rule).Inc()
		level := s.log.Debug
		if re.Rule == backend.RunBackend {
			level = s.log.Error
		}
		level("request failed", "model", md.Name, "id", req.ID, "protocol", protocol, "rule", re.Rule, "error", re.Message)
	}
	return resp
}

func (s *Server) admit(ctx context.Context, md *Model, req vm.Request, cp callParams) vm.Response {
	s.mu.Lock()
	if s.closed || !md.ready.Load() {
		s.mu.Unlock()
		return vm.Response{ID: req.ID, Err: closedErr(md.Name)}
	}
	s.accepted.Add(1)
	md.inflight.Add(1)
	s.mu.Unlock()
	s.admitted.Add(1)
	defer func() {
		s.answered.Add(1)
		md.inflight.Done()
		s.accepted.Done()
	}()
	if testHookAdmitted != nil {
		testHookAdmitted(md)
	}
	md.met.depth.Inc()
	defer md.met.depth.Dec()
	md.stats.pending.Add(1)
	defer md.stats.pending.Add(-1)
	if timeout := cmp.Or(cp.timeout, md.defaultTimeout); timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	return md.eng.Run(md.prioritized(ctx, cp.priority), req)
}

// prioritized is ctx for a request of priority p (0: the model's
// default). The engine's levels are relative to the model's default, 0
// (vm.WithPriority): a request of the default priority carries none.
func (md *Model) prioritized(ctx context.Context, p int) context.Context {
	if p == 0 || p == md.defaultPriority {
		return ctx
	}
	return vm.WithPriority(ctx, p-md.defaultPriority)
}

// callParams are what a request's parameters ask of its run: a timeout
// (0: the model's default_timeout) and a priority (0: the model's
// default_priority).
type callParams struct {
	timeout  time.Duration
	priority int
}

// readCallParams reads the `timeout` and `priority` parameters' values
// (nil where a request has none).
func readCallParams(timeout, priority any) (cp callParams, err error) {
	if cp.timeout, err = parseTimeout(timeout); err != nil {
		return callParams{}, err
	}
	if cp.priority, err = parsePriority(priority); err != nil {
		return callParams{}, err
	}
	return cp, nil
}

// MaxPriority is the largest priority a request or a model's
// default_priority may name.
const MaxPriority = 1 << 20

// parsePriority reads the `priority` parameter, as Triton's clients send
// it: an integer, 1 the most urgent and larger ones less; 0 (or none) is
// the model's default_priority.
func parsePriority(v any) (int, error) {
	bad := func() (int, error) {
		return 0, inputErr("parameter `priority` %v: give an integer from 1 (the most urgent) to %d, or 0 for the model's default", v, MaxPriority)
	}
	switch t := v.(type) {
	case nil:
		return 0, nil
	case float64: // a JSON number
		if t != math.Trunc(t) || t < 0 || t > MaxPriority {
			return bad()
		}
		return int(t), nil
	case int64:
		if t < 0 || t > MaxPriority {
			return bad()
		}
		return int(t), nil
	case uint64:
		if t > MaxPriority {
			return bad()
		}
		return int(t), nil
	}
	return 0, inputErr("parameter `priority` is %T: give an integer from 1 (the most urgent) to %d, or 0 for the model's default", v, MaxPriority)
}

// parseTimeout reads the `timeout` parameter: a Go duration ("250ms",
// "2s") or a number of milliseconds.
func parseTimeout(v any) (time.Duration, error) {
	var d time.Duration
	switch t := v.(type) {
	case nil:
		return 0, nil
	case string:
		var err error
		if d, err = time.ParseDuration(t); err != nil {
			ms, err2 := strconv.ParseFloat(t, 64)
			if err2 != nil {
				return 0, inputErr("parameter `timeout` %q is no duration: give milliseconds (250) or a duration (\"250ms\", \"2s\")", t)
			}
			d = time.Duration(ms * float64(time.Millisecond))
		}
	case float64:
		d = time.Duration(t * float64(time.Millisecond))
	case int64:
		d = time.Duration(t) * time.Millisecond
	case uint64:
		d = time.Duration(min(t, uint64(1<<62)/uint64(time.Millisecond))) * time.Millisecond
	default:
		return 0, inputErr("parameter `timeout` is %T: give milliseconds (250) or a duration (\"250ms\")", v)
	}
	if d <= 0 {
		return 0, inputErr("parameter `timeout` %v: a timeout must be positive", v)
	}
	return d, nil
}

// checkInput refuses an input the workflow does not take, or takes as
// another datatype, before anything is decoded.
func (md *Model) checkInput(name, datatype string) (string, error) {
	dt, err := dtypeOf(name, datatype)
	if err != nil {
		return "", err
	}
	want, ok := md.known[name]
	if !ok {
		return "", inputErr("model %s has no input `%s` (its inputs: %s)", md.Name, name, md.inputNames())
	}
	if want != "" && want != dt {
		return "", inputErr("input `%s` of model %s is %s; the request sends %s", name, md.Name, Datatype(want), datatype)
	}
	return dt, nil
}

func (md *Model) inputNames() string { return names(md.inputs) }

func (md *Model) outputNames() string { return names(md.outputs) }

// names lists tensors' names, for messages.
func names(ts []tensorMeta) string {
	ns := make([]string, len(ts))
	for i, t := range ts {
		ns[i] = t.Name
	}
	return fmt.Sprint(ns)
}

// checkAsked refuses, before the request runs, outputs a request asks
// for that the model does not have or that it names more than once: each
// output is answered once, so a request asks for at most as many outputs
// as the model has, and the loop stops at the first name past them.
func (md *Model) checkAsked(asked []string) error {
	seen := make(map[string]bool, min(len(asked), len(md.outputs)))
	for _, n := range asked {
		if !slices.ContainsFunc(md.outputs, func(o tensorMeta) bool { return o.Name == n }) {
			return inputErr("model %s has no output `%s` (its outputs: %s)", md.Name, n, md.outputNames())
		}
		if seen[n] {
			return inputErr("output `%s` is asked for more than once: name each output once", n)
		}
		seen[n] = true
	}
	return nil
}

// outputOrder returns the names of the outputs to answer with: those
// asked for (checkAsked), in their order, or every output the response
// holds in the workflow's order.
func (md *Model) outputOrder(resp vm.Response, asked []string) ([]string, error) {
	if len(asked) > 0 {
		for _, n := range asked {
			if resp.Outputs.Get(n) == nil && resp.Items[n] == nil {
				return nil, inputErr("model %s has no output `%s` in this response (its outputs: %s)", md.Name, n, md.outputNames())
			}
		}
		return asked, nil
	}
	var names []string
	for _, o := range md.outputs {
		if resp.Outputs.Get(o.Name) != nil || resp.Items[o.Name] != nil {
			names = append(names, o.Name)
		}
	}
	return names, nil
}

// httpStatus is the HTTP status of a failed request's rule.
func httpStatus(rule string) int {
	switch rule {
	case backend.RunQueueFull:
		return http.StatusTooManyRequests
	case backend.RunClosed:
		return http.StatusServiceUnavailable
	case backend.RunDeadline:
		return http.StatusGatewayTimeout
	case backend.RunCancelled:
		return 499 // client closed request
	case backend.RunBackend:
		return http.StatusInternalServerError
	}
	return http.StatusBadRequest
}

// grpcCode is the gRPC status code of a failed request's rule.
func grpcCode(rule string) codes.Code {
	switch rule {
	case backend.RunQueueFull:
		return codes.ResourceExhausted
	case backend.RunClosed:
		return codes.Unavailable
	case backend.RunDeadline:
		return codes.DeadlineExceeded
	case backend.RunCancelled:
		return codes.Canceled
	case backend.RunBackend:
		return codes.Internal
	}
	return codes.InvalidArgument
}

// asRun returns err's RunError (run/input for an error of no rule).
func asRun(err error) *backend.RunError {
	var re *backend.RunError
	if errors.As(err, &re) {
		return re
	}
	return vm.AsRunError(err)
}
