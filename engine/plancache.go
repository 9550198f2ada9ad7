package engine

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/internal/safefile"
	"github.com/genaic/genaic/plan"
	"github.com/genaic/genaic/vm"
	"github.com/genaic/genaic/vm/ortlib"
)

// A plan serves each way of dividing the cores for up to planWayBudget,
// so a server holding many packages on a machine of many cores would wait
// minutes at every start before it is ready. What a plan's measurement
// depends on is known: the package, the requests it serves, the settings
// that change how fast a way serves, the build, the ONNX Runtime library
// and the machine. Where none of them changed, measuring again chooses
// among the same ways on the same evidence, so a plan is kept under a key
// made of all of them, and a start that finds its key takes the plan kept.

// PlanCache keeps planned executions in a folder, a file per key.
type PlanCache struct {
	// Dir holds the plans (made on the first plan kept); "" keeps none:
	// every plan is measured.
	Dir string
	// Replan measures even where a plan is kept, and keeps the new plan
	// in its place.
	Replan bool
	// Log, where set, is told of a plan that could not be read or kept
	// (the plan is measured, or serves without being kept).
	Log *slog.Logger
}

// planCacheFormat names what a kept plan holds and how the planner
// chooses: a planner that chooses otherwise changes it, and the plans
// kept before are no longer found.
const planCacheFormat = 1

// maxKeptPlanBytes bounds the size of a kept plan's file: one lists a few
// dozen ways.
const maxKeptPlanBytes = 1 << 20

// keptPlan is a kept plan's file: the key it was measured under, written
// out for whoever reads the folder, and the execution planned.
type keptPlan struct {
	Key       planKey       `json:"key"`
	Execution *vm.Execution `json:"execution"`
}

// planKey is what a plan's measurement depends on; a file is named by its
// digest.
type planKey struct {
	Format int `json:"format"`
	// Build identifies the running executable's build (buildID): another
	// build may serve each way at another speed.
	Build string `json:"build"`
	Go    string `json:"go"`
	// Machine is the operating system, the architecture and the CPU
	// model; CPUs the CPUs the process may use, Procs Go's processors.
	Machine  string `json:"machine"`
	CPUs     int    `json:"cpus"`
	Procs    int    `json:"procs"`
	CPUClass string `json:"cpu_class"`
	// Library is the ONNX Runtime library (path, size, modification time).
	Library string `json:"library"`
	// Plan and Requests are the SHA-256 of the compiled plan (which holds
	// its models' digests) and of the requests it was measured with.
	Plan     string `json:"plan"`
	Requests string `json:"requests"`
	// Settings are the options that change how fast a way serves.
	Settings []string `json:"settings"`
}

// Plan returns the execution kept under this plan's key, or plans it
// (PlanExecution) and keeps it. A plan kept is taken only where it is one
// of the ways PlanExecution would try, each of the ways it lists too: a
// file another program wrote, or one cut short, is measured anew and
// replaced, as is every plan with Replan. A workflow PlanExecution plans
// without measuring is not kept. Failing to keep a plan is no error: the
// plan is returned, and Log told.
func (c PlanCache) Plan(ctx context.Context, f *plan.File, pkgDir string, opts Options, reqs []vm.Request, po PlanOptions) (*vm.Execution, error) {
	if c.Dir == "" || !measures(f) || len(reqs) == 0 {
		return PlanExecution(ctx, f, pkgDir, opts, reqs, po)
	}
	po = po.withDefaults()
	key, err := newPlanKey(f, opts, reqs, po)
	if err != nil {
		c.warn("the plan's key could not be made: measuring without keeping it", err)
		return PlanExecution(ctx, f, pkgDir, opts, reqs, po)
	}
	path := filepath.Join(c.Dir, key.name())
	ways := plannedWays(f, opts, po)
	if !c.Replan {
		x, err := readKept(path, key, ways, po)
		switch {
		case err == nil:
			now := time.Now()
			os.Chtimes(path, now, now) // taken: the last to prune
			return x, nil
		case !errors.Is(err, os.ErrNotExist):
			c.warn("the plan kept at "+path+" is not taken: measuring anew", err)
		}
	}
	x, err := PlanExecution(ctx, f, pkgDir, opts, reqs, po)
	if err != nil {
		return nil, err
	}
	x.MeasuredAt = time.Now().UTC().Truncate(time.Second)
	if err := keep(path, keptPlan{Key: key, Execution: x}); err != nil {
		c.warn("the plan could not be kept", err)
	} else if err := prune(c.Dir, maxKeptPlans); err != nil {
		c.warn("the plans kept could not be pruned", err)
	}
	return x, nil
}

func (c PlanCache) warn(msg string, err error) {
	if c.Log != nil {
		c.Log.Warn(msg, "error", err.Error())
	}
}

// name is the file a key's plan is kept in.
func (k planKey) name() string {
	b, _ := json.Marshal(k) // of strings and numbers: cannot fail
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16]) + ".json"
}

// readKept reads the plan kept at path: an error wrapping os.ErrNotExist
// where there is none, another where it was measured under another key or
// is not a plan PlanExecution could have made (checkKept).
func readKept(path string, key planKey, ways []vm.Candidate, po PlanOptions) (*vm.Execution, error) {
	b, err := safefile.ReadFile(path, maxKeptPlanBytes)
	if err != nil {
		return nil, err
	}
	return decodeKept(b, key, ways, po)
}

// decodeKept decodes and checks a kept plan's file.
func decodeKept(b []byte, key planKey, ways []vm.Candidate, po PlanOptions) (*vm.Execution, error) {
	var kp keptPlan
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&kp); err != nil {
		return nil, fmt.Errorf("not a kept plan: %v", err)
	}
	if kp.Key.name() != key.name() {
		return nil, errors.New("it was measured under another key")
	}
	if err := checkKept(kp.Execution, ways, po); err != nil {
		return nil, err
	}
	kp.Execution.Kept = true
	return kp.Execution, nil
}

// checkKept holds a kept execution to what PlanExecution makes: planned on
// po's cores, the chosen way one of ways, and the ways tried exactly ways,
// each served at a finite rate, by at most po's clients.
func checkKept(x *vm.Execution, ways []vm.Candidate, po PlanOptions) error {
	same := func(a, b vm.Candidate) bool {
		return a.Slots == b.Slots && a.Threads == b.Threads && slices.Equal(a.Ungrouped, b.Ungrouped)
	}
	rate := func(r float64) bool { return r >= 0 && !math.IsInf(r, 0) && !math.IsNaN(r) }
	switch {
	case x == nil:
		return errors.New("it holds no execution")
	case !x.Planned || x.Cores != po.Cores || x.Kept:
		return fmt.Errorf("its execution is not one planned on %d cores", po.Cores)
	case !slices.ContainsFunc(ways, func(w vm.Candidate) bool {
		return same(w, vm.Candidate{Slots: x.Slots, Threads: x.Threads, Ungrouped: x.Ungrouped})
	}):
		return fmt.Errorf("%d slots × %d threads is none of the ways planned", x.Slots, x.Threads)
	case len(x.Tried) != len(ways):
		return fmt.Errorf("it lists %d ways tried, where %d are", len(x.Tried), len(ways))
	}
	for i, c := range x.Tried {
		if !same(c, ways[i]) || !rate(c.RequestsPerSecond) || !rate(c.LightRequestsPerSecond) || c.LightClients < 0 || c.LightClients > po.Clients {
			return fmt.Errorf("way %d (%v) is not the way planned there, %v", i, c, ways[i])
		}
	}
	return nil
}

// keep writes a plan to path whole or not at all: to a file beside it,
// then renamed, so that a server reading it meanwhile, or one keeping the
// same plan at once, never sees a part of it.
func keep(path string, kp keptPlan) error {
	b, err := json.MarshalIndent(kp, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".plan-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(append(b, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// Another build of genaic, or a package edited, keys its plans anew, and
// the plans kept before are found no more: a folder keeps the plans kept
// or taken within maxKeptAge, at most maxKeptPlans of them (many more than
// a repository's models, whose plans a server takes at every start, so
// that a large repository's plans never push each other out).
const (
	maxKeptAge   = 30 * 24 * time.Hour
	maxKeptPlans = 4096
)

// prune removes the plans of dir neither kept nor taken (their files'
// modification times) within maxKeptAge, and beyond the most most recent,
// and what a keep cut short left behind over an hour ago. Other files are
// left alone.
func prune(dir string, most int) error {
	es, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	type kept struct {
		name string
		at   time.Time
	}
	var plans []kept
	var errs []error
	remove := func(name string) {
		// Another server pruning the folder at once may have removed it.
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	for _, e := range es {
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		name := e.Name()
		switch {
		case strings.HasPrefix(name, ".plan-") && time.Since(info.ModTime()) > time.Hour:
			remove(name)
		case keptName(name) && time.Since(info.ModTime()) > maxKeptAge:
			remove(name)
		case keptName(name):
			plans = append(plans, kept{name, info.ModTime()})
		}
	}
	slices.SortFunc(plans, func(a, b kept) int { return b.at.Compare(a.at) })
	for _, p := range plans[min(most, len(plans)):] {
		remove(p.name)
	}
	return errors.Join(errs...)
}

// keptName says whether name is one planKey.name makes.
func keptName(name string) bool {
	h, ok := strings.CutSuffix(name, ".json")
	_, err := hex.DecodeString(h)
	return ok && len(h) == 32 && err == nil
}

// newPlanKey makes the key a plan of f with opts, reqs and po is kept
// under.
func newPlanKey(f *plan.File, opts Options, reqs []vm.Request, po PlanOptions) (planKey, error) {
	build, err := buildID()
	if err != nil {
		return planKey{}, err
	}
	lib := opts.Config.LibraryPath
	if lib == "" {
		lib, _ = ortlib.Library() // none: ONNX Runtime fails to start, planning with it
	}
	library, _ := fileStamp(lib)
	pb, err := json.Marshal(f)
	if err != nil {
		return planKey{}, err
	}
	ps := sha256.Sum256(pb)
	return planKey{
		Format:   planCacheFormat,
		Build:    build,
		Go:       runtime.Version(),
		Machine:  runtime.GOOS + "/" + runtime.GOARCH + " " + cpuModel(),
		CPUs:     CPUs(),
		Procs:    runtime.GOMAXPROCS(0),
		CPUClass: string(currentCPUClass()),
		Library:  library,
		Plan:     hex.EncodeToString(ps[:]),
		Requests: requestsDigest(reqs),
		Settings: settings(opts, po),
	}, nil
}

// buildID identifies the running executable by what it was built from:
// the Go toolchain's build ID (an ELF note, the same for the same sources
// and toolchain, whenever and wherever built), else the SHA-256 of the
// file. Its path and times change with every build and copy, which would
// measure the same build again.
var buildID = sync.OnceValues(func() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	if f, err := elf.Open(exe); err == nil {
		defer f.Close()
		if sec := f.Section(".note.go.buildid"); sec != nil {
			if b, err := sec.Data(); err == nil && len(b) > 0 {
				sum := sha256.Sum256(b)
				return "go build " + hex.EncodeToString(sum[:]), nil
			}
		}
	}
	sum, err := plan.HashFile(exe)
	return "sha256 " + sum, err
})

// fileStamp names a file as it is now: its path, size and modification
// time.
func fileStamp(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s %d %s", path, st.Size(), st.ModTime().UTC().Format(time.RFC3339Nano)), nil
}

// cpuModel is the CPU's model name as Linux reports it ("" elsewhere).
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// settings are the options a plan is measured under that change how fast
// a way serves, each as "name=value", in a fixed order. (Go bindings are
// the build's: Build names them.)
func settings(opts Options, po PlanOptions) []string {
	out := []string{
		fmt.Sprintf("solo=%v", opts.Solo),
		fmt.Sprintf("max_delay=%v", opts.MaxDelay),
		fmt.Sprintf("queue=%d", planningQueue(opts.Queue)),
		fmt.Sprintf("provider=%s", opts.Config.Provider),
		fmt.Sprintf("inter_op_threads=%d", opts.Config.InterOpThreads),
		fmt.Sprintf("max_media_bytes=%d", opts.Config.MaxMediaBytes),
		fmt.Sprintf("plan=%d cores, %d clients, rounds of %v, %d rounds", po.Cores, po.Clients, po.Round, po.Rounds),
	}
	var declines, backends []string
	for k, why := range opts.Declines {
		declines = append(declines, fmt.Sprintf("decline %s/%s/%s=%s", k.Component, k.OpClass, k.Provider, why))
	}
	for kind, name := range opts.Backends {
		backends = append(backends, fmt.Sprintf("backend %s=%s", kind, name))
	}
	for kind := range opts.Use {
		backends = append(backends, fmt.Sprintf("backend %s given", kind))
	}
	sort.Strings(declines)
	sort.Strings(backends)
	return append(append(out, declines...), backends...)
}

// requestsDigest is the SHA-256 of reqs: each request's inputs and items
// by name, their types, shapes and data.
func requestsDigest(reqs []vm.Request) string {
	h := sha256.New()
	for _, r := range reqs {
		fmt.Fprintf(h, "request %d inputs %d items\n", len(r.Inputs), len(r.Items))
		for _, name := range slices.Sorted(maps.Keys(r.Inputs)) {
			fmt.Fprintf(h, "input %q\n", name)
			hashTensor(h, r.Inputs[name])
		}
		for _, name := range slices.Sorted(maps.Keys(r.Items)) {
			fmt.Fprintf(h, "items %q\n", name)
			hashItems(h, r.Items[name])
		}
		if r.Err != nil {
			fmt.Fprintf(h, "unreadable %q\n", r.Err.Error())
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

func hashItems(h hash.Hash, items []vm.Item) {
	fmt.Fprintf(h, "%d items\n", len(items))
	for _, it := range items {
		hashTensor(h, it.Tensor)
		hashItems(h, it.Items)
	}
}

func hashTensor(h hash.Hash, t *backend.Tensor) {
	if t == nil {
		fmt.Fprintln(h, "none")
		return
	}
	fmt.Fprintf(h, "%s %v\n", t.DType, t.Shape)
	if err := binary.Write(h, binary.LittleEndian, t.Data); err != nil {
		fmt.Fprintf(h, "%q\n", t.Data) // strings, or data binary cannot write
	}
}
