package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/plan"
	"github.com/genaic/genaic/vm"
)

// goEncoder is image_padded's encoder as a Go function whose call costs a
// little per image: a plan measures in milliseconds.
func goEncoder() Options {
	b := &backend.Bindings{}
	b.Register("encoder", func(_ context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
		x := in["pixel_patches"]
		time.Sleep(time.Duration(x.Shape[0]) * 20 * time.Microsecond)
		return map[string]*backend.Tensor{"embeddings": {DType: "float32", Shape: []int64{x.Shape[0], x.Shape[2]}, Data: make([]float32, x.Shape[0]*x.Shape[2])}}, nil
	})
	return Options{Backends: map[ir.ImplKind]string{ir.ImplONNX: "go"}, Config: Config{Bindings: b}}
}

// cachePlanOptions measure quickly.
var cachePlanOptions = PlanOptions{Cores: 2, Clients: 8, Round: 10 * time.Millisecond, Rounds: 1}

// TestPlanCache: a plan is measured and kept; planned again under the same
// key it is taken as kept, the same execution, saying so; Replan measures
// and replaces it; a change of what the measurement depends on (the
// options, the requests) is measured under its own key.
func TestPlanCache(t *testing.T) {
	f, dir := compile(t, "testdata/packages/image_padded")
	reqs := readRequests(t, dir)
	opts := goEncoder()
	ctx := context.Background()
	c := PlanCache{Dir: filepath.Join(t.TempDir(), "plans")}

	first, err := c.Plan(ctx, f, dir, opts, reqs, cachePlanOptions)
	if err != nil {
		t.Fatal(err)
	}
	if first.Kept || first.MeasuredAt.IsZero() || len(first.Tried) != 4 {
		t.Fatalf("first plan %+v: want one measured now, of 4 ways", first)
	}
	files := keptFiles(t, c.Dir)
	if len(files) != 1 {
		t.Fatalf("kept %v, want one plan", files)
	}
	// Taken, a plan is the last to prune: its file's time is the take's.
	hourAgo := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(c.Dir, files[0]), hourAgo, hourAgo); err != nil {
		t.Fatal(err)
	}
	again, err := c.Plan(ctx, f, dir, opts, reqs, cachePlanOptions)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(c.Dir, files[0])); err != nil {
		t.Error(err)
	} else if time.Since(st.ModTime()) > time.Minute {
		t.Errorf("the plan taken keeps its time, %v", st.ModTime())
	}
	if !again.Kept || again.Slots != first.Slots || again.Threads != first.Threads || !slices.Equal(again.Ungrouped, first.Ungrouped) ||
		!slices.EqualFunc(again.Tried, first.Tried, func(a, b vm.Candidate) bool { return a.RequestsPerSecond == b.RequestsPerSecond }) ||
		!again.MeasuredAt.Equal(first.MeasuredAt) || !strings.Contains(again.String(), "kept from") {
		t.Fatalf("planned again: %+v; want the plan kept, %+v", again, first)
	}

	c.Replan = true
	if x, err := c.Plan(ctx, f, dir, opts, reqs, cachePlanOptions); err != nil || x.Kept {
		t.Fatalf("with Replan: %+v, %v; want a plan measured", x, err)
	}
	c.Replan = false

	slower := opts
	slower.MaxDelay = 7 * time.Millisecond
	if x, err := c.Plan(ctx, f, dir, slower, reqs, cachePlanOptions); err != nil || x.Kept {
		t.Errorf("another max delay: %+v, %v; want a plan measured", x, err)
	}
	if x, err := c.Plan(ctx, f, dir, opts, reqs[:1], cachePlanOptions); err != nil || x.Kept {
		t.Errorf("other requests: %+v, %v; want a plan measured", x, err)
	}
	if got := keptFiles(t, c.Dir); len(got) != 3 || !slices.Contains(got, files[0]) {
		t.Errorf("kept %v, want the first plan's file and one for each other key", got)
	}

	// A workflow planned without measuring is not kept.
	goOnly, gdir := compile(t, "vm/adapters/testdata/image_grouped.yaml")
	if x, err := c.Plan(ctx, goOnly, gdir, Options{}, nil, cachePlanOptions); err != nil || x.Kept || len(keptFiles(t, c.Dir)) != 3 {
		t.Errorf("a workflow without ONNX components: %+v, %v; want one slot, nothing kept", x, err)
	}
}

// TestPlanCacheKey: each thing a measurement depends on changes the key.
func TestPlanCacheKey(t *testing.T) {
	f, dir := compile(t, "testdata/packages/image_padded")
	reqs := readRequests(t, dir)
	po := cachePlanOptions.withDefaults()
	key := func(f *plan.File, opts Options, reqs []vm.Request, po PlanOptions) string {
		t.Helper()
		k, err := newPlanKey(f, opts, reqs, po)
		if err != nil {
			t.Fatal(err)
		}
		return k.name()
	}
	base := key(f, Options{}, reqs, po)
	if again := key(f, Options{}, slices.Clone(reqs), po); again != base {
		t.Fatalf("the same plan's key changed: %s, then %s", base, again)
	}
	other, _ := compile(t, "testdata/packages/image_patches")
	edited := slices.Clone(reqs)
	edited[0] = vm.Request{ID: reqs[0].ID, Inputs: map[string]*backend.Tensor{}}
	for name, in := range reqs[0].Inputs {
		edited[0].Inputs[name] = in
		if data, ok := in.Data.([]float32); ok {
			data = slices.Clone(data)
			data[0]++
			edited[0].Inputs[name] = &backend.Tensor{DType: in.DType, Shape: in.Shape, Data: data}
		}
	}
	for what, k := range map[string]string{
		"another package":    key(other, Options{}, reqs, po),
		"a request's data":   key(f, Options{}, edited, po),
		"fewer requests":     key(f, Options{}, reqs[1:], po),
		"solo":               key(f, Options{Options: vm.Options{Solo: true}}, reqs, po),
		"max delay":          key(f, Options{Options: vm.Options{MaxDelay: time.Millisecond}}, reqs, po),
		"provider":           key(f, Options{Config: Config{Provider: "cuda"}}, reqs, po),
		"backend":            key(f, Options{Backends: map[ir.ImplKind]string{ir.ImplONNX: "go"}}, reqs, po),
		"a decline":          key(f, Options{Options: vm.Options{Declines: backend.Declines{{Component: "encoder"}: "no"}}}, reqs, po),
		"media":              key(f, Options{Config: Config{MaxMediaBytes: 1 << 20}}, reqs, po),
		"cores":              key(f, Options{}, reqs, PlanOptions{Cores: 4, Clients: po.Clients, Round: po.Round, Rounds: po.Rounds}),
		"the library":        key(f, Options{Config: Config{LibraryPath: os.Args[0]}}, reqs, po),
		"rounds of planning": key(f, Options{}, reqs, PlanOptions{Cores: po.Cores, Clients: po.Clients, Round: po.Round, Rounds: 5}),
	} {
		if k == base {
			t.Errorf("%s: the key did not change", what)
		}
	}
}

// TestPlanCacheRefuses: a kept plan that is not what PlanExecution would
// have made under its key (garbage, cut short, edited, another key's) is
// not taken: the plan is measured, the log says why, and the plan kept
// is replaced, to be taken next time.
func TestPlanCacheRefuses(t *testing.T) {
	f, dir := compile(t, "testdata/packages/image_padded")
	reqs := readRequests(t, dir)
	opts := goEncoder()
	ctx := context.Background()
	var log bytes.Buffer
	c := PlanCache{Dir: t.TempDir(), Log: slog.New(slog.NewTextHandler(&log, nil))}
	if _, err := c.Plan(ctx, f, dir, opts, reqs, cachePlanOptions); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(c.Dir, keptFiles(t, c.Dir)[0])
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edit := func(change func(kp map[string]any)) []byte {
		var kp map[string]any
		if err := json.Unmarshal(good, &kp); err != nil {
			t.Fatal(err)
		}
		change(kp)
		b, _ := json.Marshal(kp)
		return b
	}
	x := func(kp map[string]any) map[string]any { return kp["execution"].(map[string]any) }
	way := func(kp map[string]any, i int) map[string]any { return x(kp)["tried"].([]any)[i].(map[string]any) }
	for what, b := range map[string][]byte{
		"garbage":          []byte("not json"),
		"cut short":        good[:len(good)/2],
		"empty":            {},
		"no execution":     edit(func(kp map[string]any) { delete(kp, "execution") }),
		"64 slots":         edit(func(kp map[string]any) { x(kp)["slots"] = 64 }),
		"3 threads":        edit(func(kp map[string]any) { x(kp)["threads"] = 3 }),
		"another way":      edit(func(kp map[string]any) { way(kp, 1)["slots"] = 2 }),
		"a way less":       edit(func(kp map[string]any) { x(kp)["tried"] = x(kp)["tried"].([]any)[1:] }),
		"a negative rate":  edit(func(kp map[string]any) { way(kp, 0)["requests_per_second"] = -1 }),
		"many callers":     edit(func(kp map[string]any) { way(kp, 0)["light_clients"] = 1 << 20 }),
		"other cores":      edit(func(kp map[string]any) { x(kp)["cores"] = 16 }),
		"not planned":      edit(func(kp map[string]any) { delete(x(kp), "planned") }),
		"kept already":     edit(func(kp map[string]any) { x(kp)["kept"] = true }),
		"another key":      edit(func(kp map[string]any) { kp["key"].(map[string]any)["requests"] = "0" }),
		"an unknown field": edit(func(kp map[string]any) { x(kp)["workers"] = 2 }),
		"a grouped encoder apart": edit(func(kp map[string]any) {
			for _, w := range x(kp)["tried"].([]any) {
				w.(map[string]any)["ungrouped"] = []string{"other"}
			}
		}),
	} {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		log.Reset()
		got, err := c.Plan(ctx, f, dir, opts, reqs, cachePlanOptions)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got.Kept || !strings.Contains(log.String(), "is not taken") {
			t.Errorf("%s: planned %+v, log %q; want a plan measured, saying why", what, got, log.String())
		}
		if kept, err := c.Plan(ctx, f, dir, opts, reqs, cachePlanOptions); err != nil || !kept.Kept {
			t.Errorf("%s: after measuring, %+v, %v; want the plan kept in its place", what, kept, err)
		}
	}

	// A folder that cannot be written: the plan is measured and served,
	// the log saying it was not kept.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	log.Reset()
	c.Dir = filepath.Join(file, "plans")
	if got, err := c.Plan(ctx, f, dir, opts, reqs, cachePlanOptions); err != nil || got.Kept || !strings.Contains(log.String(), "could not be kept") {
		t.Errorf("an unwritable folder: %+v, %v, log %q", got, err, log.String())
	}
}

// TestPlanCachePrunes: beyond the plans a folder keeps, the least
// recently kept or taken go, as do plans neither kept nor taken for
// maxKeptAge and a keep cut short long ago; a recent one, and files that
// are no plans, stay.
func TestPlanCachePrunes(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, age time.Duration) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-age)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for i := range 6 {
		names = append(names, fmt.Sprintf("%032x.json", i))
		write(names[i], time.Duration(i)*time.Minute) // the first the newest
	}
	write(fmt.Sprintf("%032x.json", 100), maxKeptAge+time.Hour)
	write("notes.json", 10*time.Hour)
	write(".plan-1", 2*time.Hour)
	write(".plan-2", time.Minute)
	if err := prune(dir, 100); err != nil {
		t.Fatal(err)
	}
	if got, want := keptFiles(t, dir), append([]string{".plan-2"}, append(slices.Clone(names), "notes.json")...); !slices.Equal(got, want) {
		t.Errorf("after pruning to 100: %v, want %v", got, want)
	}
	if err := prune(dir, 4); err != nil {
		t.Fatal(err)
	}
	if got, want := keptFiles(t, dir), append([]string{".plan-2"}, append(names[:4], "notes.json")...); !slices.Equal(got, want) {
		t.Errorf("after pruning to 4: %v, want %v", got, want)
	}
}

// FuzzKeptPlan: whatever a kept plan's file holds, reading it neither
// panics nor takes an execution PlanExecution could not have made.
func FuzzKeptPlan(f *testing.F) {
	ways := withApart(Divisions(2), []string{"encoder"})
	po := PlanOptions{Cores: 2, Clients: 8, Round: time.Millisecond, Rounds: 1}
	key := planKey{Format: planCacheFormat, Build: "b", Plan: "p", Requests: "r", Settings: []string{"solo=false"}}
	tried := slices.Clone(ways)
	for i := range tried {
		tried[i].RequestsPerSecond, tried[i].LightClients, tried[i].LightRequestsPerSecond = float64(100*i), 2, float64(50*i)
	}
	good, err := json.Marshal(keptPlan{Key: key, Execution: &vm.Execution{Slots: 2, Threads: 1, Cores: 2, Planned: true, Tried: tried}})
	if err != nil {
		f.Fatal(err)
	}
	if _, err := decodeKept(good, key, ways, po); err != nil {
		f.Fatalf("the seed is refused: %v", err)
	}
	f.Add(good)
	f.Add([]byte(`{"key":{},"execution":null}`))
	f.Add([]byte(`{"execution":{"slots":1e309}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := decodeKept(b, key, ways, po)
		if err != nil {
			return
		}
		if !x.Kept || x.Cores != 2 || !slices.ContainsFunc(ways, func(w vm.Candidate) bool {
			return w.Slots == x.Slots && w.Threads == x.Threads && slices.Equal(w.Ungrouped, x.Ungrouped)
		}) {
			t.Fatalf("took %+v, none of the ways %v", x, ways)
		}
	})
}

func keptFiles(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}
