package e2e

import (
	"context"
	"errors"
	"iter"
	"maps"
	"math"
	"slices"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/codegen/genrt"
	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/plan"
	"github.com/genaic/genaic/vm"
)

// A floor is the least a runtime can do for one workload's document and
// still serve it correctly: find and check every request's inputs and
// companions (and, for float inputs, refuse NaN and infinities), form the
// groups the engine forms under the package's budgets, assemble each into
// reused buffers, make the ideal's direct call on it, and hand each
// request views of its rows. It is written by hand for one package, with
// none of the engine's generality (no IR, no queue, no locks, no stats),
// so it measures what the machine leaves to any runtime beside ONNX
// Runtime's own time: where grouped/ideal falls short and floor/ideal
// does not, the gap is genaic's; where floor/ideal falls short too, the
// machine's. TestWorkloadFloor checks that a floor does the engine's work:
// no more calls, and every request's outputs the engine's.
type floor interface {
	// run serves reqs, one document, through s and returns its calls.
	run(s backend.Session, reqs []vm.Request) (int, error)
	// outputs are request i's outputs of the last run, by the package's
	// output names (kept in a slot per output, as a response's table is:
	// a map per request would cost the floor more than its checks).
	outputs(i int) map[string]*backend.Tensor
}

// answers are what both floors keep for their calls and requests: the
// inputs of a call by name, and a document's outputs, a slot per request
// and output (names).
type answers struct {
	in    map[string]*backend.Tensor
	names [3]string
	slots [][3]*backend.Tensor
}

func newAnswers(names ...string) answers {
	return answers{in: map[string]*backend.Tensor{}, names: [3]string(names)}
}

func (a *answers) reset(n int) { a.slots = slices.Grow(a.slots[:0], n)[:n] }

func (a *answers) outputs(i int) map[string]*backend.Tensor {
	m := map[string]*backend.Tensor{}
	for k, name := range a.names {
		m[name] = a.slots[i][k]
	}
	return m
}

// floors are the workloads that have one: how to make it, how to start
// its served floor (servedfloor_test.go), and an owner companion a
// request must get right.
var floors = map[string]struct {
	make  func(budgets []plan.Budget) floor
	serve floorStarter
	owner string
}{
	"text_packed/short": {newTextFloor, served(newTextLayout), "token_owner"},
	"text_packed/long":  {newTextFloor, served(newTextLayout), "token_owner"},
	"text_padded/short": {newPaddedFloor[int64](textNames), served(newPaddedLayout[int64](textNames)), "segment_owner"},
	"text_padded/long":  {newPaddedFloor[int64](textNames), served(newPaddedLayout[int64](textNames)), "segment_owner"},
	"image_padded/64":   {newPaddedFloor[float32](imageNames), served(newPaddedLayout[float32](imageNames)), "image_owner"},
}

// The padded packages' names.
var (
	textNames = paddedNames{payload: "token_ids", lengths: "token_lengths", offsets: "segment_offsets",
		owner: "segment_owner", output: "segment_embeddings", items: "segments", extent: "positions"}
	imageNames = paddedNames{payload: "pixel_patches", lengths: "patch_lengths", offsets: "image_offsets",
		owner: "image_owner", output: "embeddings", items: "images", extent: "patches"}
)

var errFloorInput = errors.New("a request's inputs do not hold")

// int64s returns request r's int64 vector input name, checked.
func int64s(r vm.Request, name string) ([]int64, error) {
	t, ok := r.Inputs[name]
	if !ok || t.DType != "int64" || len(t.Shape) != 1 {
		return nil, errFloorInput
	}
	d, ok := t.Data.([]int64)
	if !ok || int64(len(d)) != t.Shape[0] {
		return nil, errFloorInput
	}
	return d, nil
}

// oneRow checks a request's outermost level: offsets [0, n] and an owner
// of n zeros.
func oneRow(r vm.Request, offsets, owner string, n int64) error {
	offs, err := int64s(r, offsets)
	if err != nil || len(offs) != 2 || offs[0] != 0 || offs[1] != n {
		return errFloorInput
	}
	own, err := int64s(r, owner)
	if err != nil || int64(len(own)) != n {
		return errFloorInput
	}
	for _, w := range own {
		if w != 0 {
			return errFloorInput
		}
	}
	return nil
}

// limit is a budget's max_total on exactly dims, or the largest int64.
func limit(budgets []plan.Budget, dims ...string) int64 {
	for _, b := range budgets {
		if slices.Equal(b.Dimensions, dims) {
			return b.MaxTotal
		}
	}
	return math.MaxInt64
}

// textFloor serves text_packed: token ids packed with two levels
// (tokens→segments, segments→rows), FIFO groups under the segments and
// tokens budgets.
type textFloor struct {
	layout textLayout // its budgets
	reqs   []textRequest
	group  textGroup
	answers
}

type textRequest struct {
	ids, offs []int64
	segments  int64
}

func newTextFloor(budgets []plan.Budget) floor {
	return &textFloor{layout: newTextLayout(budgets).(textLayout),
		answers: newAnswers("segment_embeddings", "segment_offsets", "segment_owner")}
}

// admitText checks a text_packed request r into q.
func admitText(r vm.Request, q *textRequest) error {
	ids, err := int64s(r, "token_ids")
	if err != nil {
		return err
	}
	offs, err := int64s(r, "token_offsets")
	if err != nil || len(offs) == 0 || offs[0] != 0 || offs[len(offs)-1] != int64(len(ids)) {
		return errFloorInput
	}
	owner, err := int64s(r, "token_owner")
	if err != nil || len(owner) != len(ids) {
		return errFloorInput
	}
	for s := 1; s < len(offs); s++ {
		if offs[s] < offs[s-1] {
			return errFloorInput
		}
		for _, w := range owner[offs[s-1]:offs[s]] {
			if w != int64(s-1) {
				return errFloorInput
			}
		}
	}
	*q = textRequest{ids: ids, offs: offs, segments: int64(len(offs) - 1)}
	return oneRow(r, "segment_offsets", "segment_owner", q.segments)
}

func (f *textFloor) run(s backend.Session, reqs []vm.Request) (int, error) {
	f.reqs = slices.Grow(f.reqs[:0], len(reqs))[:len(reqs)]
	f.reset(len(reqs))
	for i := range reqs {
		if err := admitText(reqs[i], &f.reqs[i]); err != nil {
			return 0, err
		}
	}
	calls := 0
	for lo := 0; lo < len(reqs); calls++ {
		hi, sum := lo, [3]int64{}
		for hi < len(reqs) && f.layout.fits(&sum, &f.reqs[hi], hi == lo) {
			hi++
		}
		f.group.assemble(func(yield func(*textRequest) bool) {
			for k := lo; k < hi; k++ {
				if !yield(&f.reqs[k]) {
					return
				}
			}
		}, f.in)
		out, err := s.Run(context.Background(), f.in, []string{"segment_embeddings"})
		if err != nil {
			return calls, err
		}
		row := int64(0)
		for k := lo; k < hi; k++ {
			n := f.reqs[k].segments
			f.slots[k] = [3]*backend.Tensor{out["segment_embeddings"].View(row, row+n), reqs[k].Inputs["segment_offsets"], reqs[k].Inputs["segment_owner"]}
			row += n
		}
		lo = hi
	}
	return calls, nil
}

// textGroup is a text_packed group's inputs, packed in buffers reused
// from group to group.
type textGroup struct {
	ids, offs, owner []int64
	tensors          [3]backend.Tensor
}

// assemble packs the requests of qs, in order, and names the group's
// inputs in in.
func (g *textGroup) assemble(qs iter.Seq[*textRequest], in map[string]*backend.Tensor) {
	ids, offs, owner := g.ids[:0], append(g.offs[:0], 0), g.owner[:0]
	for q := range qs {
		base, first := int64(len(ids)), int64(len(offs)-1)
		ids = append(ids, q.ids...)
		for s := 1; s < len(q.offs); s++ {
			offs = append(offs, base+q.offs[s])
			for range q.offs[s] - q.offs[s-1] {
				owner = append(owner, first+int64(s-1))
			}
		}
	}
	g.ids, g.offs, g.owner = ids, offs, owner
	g.tensors = [3]backend.Tensor{vector(ids), vector(offs), vector(owner)}
	in["token_ids"], in["token_offsets"], in["token_owner"] = &g.tensors[0], &g.tensors[1], &g.tensors[2]
}

func vector(d []int64) backend.Tensor {
	return backend.Tensor{DType: "int64", Shape: []int64{int64(len(d))}, Data: d}
}

// paddedFloor serves a package whose payload (T: float32 images of
// patches, int64 segments of token ids) is padded on axis 1 with valid
// lengths, one level (items→rows): image_padded and text_padded. Like the
// engine, it orders a document's requests by padded extent and fills each
// group with the first that fit the items and items×extent budgets.
type paddedFloor[T float32 | int64] struct {
	names             paddedNames
	maxItems, maxArea int64
	reqs              []paddedRequest[T]
	order, group      []int
	taken             []bool
	buffers           paddedGroup[T]
	answers
}

// paddedNames are a padded package's names: its payload, lengths, offsets
// and owner inputs, its output, and its budgets' dimensions (items, then
// the padded one).
type paddedNames struct {
	payload, lengths, offsets, owner, output string
	items, extent                            string
}

type paddedRequest[T float32 | int64] struct {
	payload       []T
	lengths       []int64
	items, extent int64
	inner, stride int64 // the elements of one position, and of one item
}

// dtypeOf is the dtype of T's tensors.
func dtypeOf[T float32 | int64]() string {
	var zero T
	if _, ok := any(zero).(float32); ok {
		return "float32"
	}
	return "int64"
}

func newPaddedFloor[T float32 | int64](n paddedNames) func(budgets []plan.Budget) floor {
	return func(budgets []plan.Budget) floor {
		return &paddedFloor[T]{names: n, maxItems: limit(budgets, n.items), maxArea: limit(budgets, n.items, n.extent),
			answers: newAnswers(n.output, n.offsets, n.owner)}
	}
}

func (f *paddedFloor[T]) admit(r vm.Request, q *paddedRequest[T]) error {
	t, ok := r.Inputs[f.names.payload]
	if !ok || t.DType != dtypeOf[T]() || len(t.Shape) < 2 {
		return errFloorInput
	}
	d, ok := t.Data.([]T)
	if !ok || int64(len(d)) != backend.Elements(t.Shape) {
		return errFloorInput
	}
	if fs, ok := any(d).([]float32); ok {
		for _, v := range fs {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return errFloorInput
			}
		}
	}
	inner := backend.Elements(t.Shape[2:])
	*q = paddedRequest[T]{payload: d, items: t.Shape[0], extent: t.Shape[1], inner: inner, stride: t.Shape[1] * inner}
	lengths, err := int64s(r, f.names.lengths)
	if err != nil || int64(len(lengths)) != q.items {
		return errFloorInput
	}
	for _, l := range lengths {
		if l < 0 || l > q.extent {
			return errFloorInput
		}
	}
	q.lengths = lengths
	return oneRow(r, f.names.offsets, f.names.owner, q.items)
}

func (f *paddedFloor[T]) run(s backend.Session, reqs []vm.Request) (int, error) {
	n := len(reqs)
	f.reqs = slices.Grow(f.reqs[:0], n)[:n]
	f.reset(n)
	f.order, f.taken = f.order[:0], slices.Grow(f.taken[:0], n)[:n]
	clear(f.taken)
	for i := range reqs {
		if err := f.admit(reqs[i], &f.reqs[i]); err != nil {
			return 0, err
		}
		if i > 0 && f.reqs[i].inner != f.reqs[0].inner {
			return 0, errFloorInput
		}
		f.order = append(f.order, i)
	}
	slices.SortStableFunc(f.order, func(a, b int) int { return int(f.reqs[a].extent - f.reqs[b].extent) })
	calls := 0
	for next, left := 0, n; left > 0; calls++ {
		for f.taken[f.order[next]] {
			next++
		}
		group, sum := f.group[:0], [3]int64{} // items, extent (paddedLayout.fits)
		for _, k := range f.order[next:] {
			if !f.taken[k] && (paddedLayout[T]{f}).fits(&sum, &f.reqs[k], len(group) == 0) {
				group, f.taken[k] = append(group, k), true
			}
		}
		f.group, left = group, left-len(group)
		if err := f.call(s, reqs, sum[0], sum[1]); err != nil {
			return calls, err
		}
	}
	return calls, nil
}

// call assembles the group and runs it.
func (f *paddedFloor[T]) call(s backend.Session, reqs []vm.Request, items, extent int64) error {
	f.buffers.assemble(f.names, func(yield func(*paddedRequest[T]) bool) {
		for _, k := range f.group {
			if !yield(&f.reqs[k]) {
				return
			}
		}
	}, items, extent, reqs[f.group[0]].Inputs[f.names.payload].Shape[2:], f.in)
	out, err := s.Run(context.Background(), f.in, []string{f.names.output})
	if err != nil {
		return err
	}
	row := int64(0)
	for _, k := range f.group {
		m := f.reqs[k].items
		f.slots[k] = [3]*backend.Tensor{out[f.names.output].View(row, row+m), reqs[k].Inputs[f.names.offsets], reqs[k].Inputs[f.names.owner]}
		row += m
	}
	return nil
}

// paddedGroup is a padded package's group inputs, assembled in buffers
// reused from group to group.
type paddedGroup[T float32 | int64] struct {
	payload               []T
	lengths, offs, owners []int64
	tensors               [4]backend.Tensor
}

// assemble pads the items of the requests of qs, in order, to extent
// (items of them in all, each position of the shape inner), and names the
// group's inputs in in.
func (g *paddedGroup[T]) assemble(n paddedNames, qs iter.Seq[*paddedRequest[T]], items, extent int64, inner []int64, in map[string]*backend.Tensor) {
	stride := extent * backend.Elements(inner)
	payload := slices.Grow(g.payload[:0], int(items*stride))[:items*stride]
	lengths, offs, owners := g.lengths[:0], append(g.offs[:0], 0), g.owners[:0]
	at, row := int64(0), int64(0)
	for q := range qs {
		for i := range q.items {
			dst := payload[(at+i)*stride : (at+i+1)*stride]
			clear(dst[copy(dst, q.payload[i*q.stride:(i+1)*q.stride]):])
			owners = append(owners, row)
		}
		lengths = append(lengths, q.lengths...)
		at += q.items
		offs = append(offs, at)
		row++
	}
	g.payload, g.lengths, g.offs, g.owners = payload, lengths, offs, owners
	shape := append([]int64{items, extent}, inner...)
	g.tensors = [4]backend.Tensor{{DType: dtypeOf[T](), Shape: shape, Data: payload}, vector(lengths), vector(offs), vector(owners)}
	for i, name := range []string{n.payload, n.lengths, n.offsets, n.owner} {
		in[name] = &g.tensors[i]
	}
}

// newFloor is a workload's floor under its package's budgets.
func newFloor(t testing.TB, w workload) floor {
	fx := fixtures.Lookup(w.pkg)
	f, _ := fixtures.Compile(t, fx)
	return floors[w.name].make(f.Component(fx.Component).Budgets)
}

// TestWorkloadFloor: a floor makes no more calls than the grouped engine
// and answers every request with the engine's outputs (exactly where their
// groups agree; a padded text encoder's sums may round a unit apart where
// they do not, hence the tolerance); a request whose companions disagree
// fails it, as it fails the engine.
func TestWorkloadFloor(t *testing.T) {
	be := ortBackend(t)
	for _, w := range workloads {
		if floors[w.name].make == nil {
			continue
		}
		t.Run(w.name, func(t *testing.T) {
			fx := fixtures.Lookup(w.pkg)
			reqs := readDocument(t, w.pkg, w.doc)
			e := vmEngine.start(t, fx, append([]genrt.Option{genrt.WithBackend(ir.ImplONNX, be)}, ways[1].opts...)...)
			want := runAll(context.Background(), e, reqs)
			// The engine's groups follow timing (a runner may start on
			// part of a burst): its fewest calls over a few documents.
			engineCalls := int64(math.MaxInt64)
			for range 3 {
				before := e.Stats().Components[fx.Component].Invocations
				runAll(context.Background(), e, reqs)
				engineCalls = min(engineCalls, e.Stats().Components[fx.Component].Invocations-before)
			}
			f, sess := newFloor(t, w), session(t, fx, fx.Component, be)
			calls, err := f.run(sess, reqs)
			if err != nil {
				t.Fatal(err)
			}
			if int64(calls) > engineCalls {
				t.Errorf("the floor made %d calls, more than the engine's %d", calls, engineCalls)
			}
			for i, r := range want {
				if r.Err != nil {
					t.Fatalf("%s: %v", r.ID, r.Err)
				}
				got := f.outputs(i)
				if len(got) != r.Outputs.Len() {
					t.Errorf("%s: the floor gave %d outputs, the engine %d", r.ID, len(got), r.Outputs.Len())
				}
				for name, o := range r.Outputs.All() {
					if d := fixtures.Diff(got[name], o, tolerance); d != "" {
						t.Errorf("%s: output %s: %s", r.ID, name, d)
					}
				}
			}
			// One request's owner off by one: the floor refuses the document.
			bad := slices.Clone(reqs)
			r := &bad[len(bad)/2]
			owner := r.Inputs[floors[w.name].owner]
			wrong := make([]int64, owner.Len())
			for i, v := range owner.Int64s() {
				wrong[i] = v + 1
			}
			r.Inputs = maps.Clone(r.Inputs)
			r.Inputs[floors[w.name].owner] = fixtures.I64(wrong...)
			if _, err := f.run(sess, bad); !errors.Is(err, errFloorInput) {
				t.Errorf("the floor served a request whose owner disagrees with its offsets (%v)", err)
			}
		})
	}
}

// BenchmarkWorkloadFloor times, document by document in turn (the order
// shuffled every iteration), the grouped engine, the ideal's direct calls
// and the workload's floor, and reports floor/ideal (what any runtime can
// reach on this machine), grouped/ideal and grouped/floor (what genaic's
// generality costs).
//
//	go test ./vm/e2e -run '^$' -bench WorkloadFloor -benchtime 200x -count 3
func BenchmarkWorkloadFloor(b *testing.B) {
	for _, w := range workloads {
		if floors[w.name].make == nil {
			continue
		}
		b.Run(w.name, func(b *testing.B) {
			s := newBench(b, w)
			grouped := s.engine(b, ways[1].opts...)
			f := newFloor(b, w)
			floorRun := func() {
				if _, err := f.run(s.direct, s.reqs); err != nil {
					b.Fatal(err)
				}
			}
			runs := []func(){func() { serveAll(context.Background(), grouped, s.reqs) }, s.ideal, floorRun}
			for range warmupDocs {
				mustRun(b, grouped, s.reqs)
				s.ideal()
				floorRun()
			}
			times := interleaved(b, runs)
			perDoc := func(i int) float64 { return times[i].Seconds() * 1e6 / float64(b.N) }
			b.ReportMetric(perDoc(0), "grouped-us/doc")
			b.ReportMetric(perDoc(1), "ideal-us/doc")
			b.ReportMetric(perDoc(2), "floor-us/doc")
			b.ReportMetric(perDoc(1)/perDoc(2), "floor/ideal")
			b.ReportMetric(perDoc(1)/perDoc(0), "grouped/ideal")
			b.ReportMetric(perDoc(2)/perDoc(0), "grouped/floor")
			b.ReportMetric(0, "ns/op")
		})
	}
}
