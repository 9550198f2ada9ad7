package sched

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestCostFit: invocation times of 20 µs + 3 ns per element are
// recovered, and an item joins a group only while the padding it adds
// costs less than the invocation it saves.
func TestCostFit(t *testing.T) {
	s := &Cost{}
	if !pays(s, 1<<40) {
		t.Error("with nothing measured, the scheduler refused an item")
	}
	for _, n := range []int64{100, 900, 5000, 20000, 300, 12000, 7000, 60, 40000, 2500} {
		s.Observe(1, n, n, time.Duration(20000+3*n))
	}
	a, c, ok := s.fit()
	if !ok || math.Abs(a-20000) > 1 || math.Abs(c-3) > 1e-3 {
		t.Fatalf("fit a=%v c=%v ok=%v, want 20000 and 3", a, c, ok)
	}
	if !pays(s, 6000) || pays(s, 7000) {
		t.Errorf("pays(6000)=%v pays(7000)=%v: 3 ns × waste against a 20 µs call", pays(s, 6000), pays(s, 7000))
	}
	if !pays(s, 0) {
		t.Error("an item that adds no padding was refused")
	}
}

// TestCostFitWithoutFixedCost: times whose line through the groups
// seen has no positive fixed cost (groups too alike in size for the noise
// in their times) are no fit: an item that adds padding is not refused on
// their word.
func TestCostFitWithoutFixedCost(t *testing.T) {
	s := &Cost{}
	for i, n := range []int64{1000, 1010, 990, 1005, 995, 1000, 1010, 990, 1005, 995} {
		// Times that rise steeply over a narrow range of sizes: 3 µs per
		// element and an intercept of -2 ms.
		d := 3000*n - 2_000_000 + int64(i%2)*20_000
		s.Observe(4, n, n, time.Duration(d))
	}
	if a, c, ok := s.fit(); ok {
		t.Errorf("fit a=%v c=%v accepted", a, c)
	}
	if !pays(s, 10) {
		t.Error("an item adding 10 padding elements was refused on a fit with no fixed cost")
	}
	if s.Snapshot().Fitted {
		t.Error("the stats call a fit with no fixed cost fitted")
	}
}

// TestCostCap: groups of up to 4 items run fastest per element and
// larger ones slower, so groups are capped at 4; where larger groups keep
// paying there is no cap, and every costExplore-th group is formed
// without one.
func TestCostCap(t *testing.T) {
	s := &Cost{}
	perElement := map[int]int64{1: 10, 2: 6, 4: 5, 8: 9, 16: 12}
	for range costMinClass {
		for size, ns := range perElement {
			s.Observe(size, 1000, 1000, time.Duration(ns*1000))
		}
	}
	if got := s.Snapshot().Cap; got != 4 {
		t.Errorf("cap %d, want 4 (per element: %v)", got, s.Snapshot().PerElementBySize)
	}
	capped := 0
	for range costExplore {
		if s.Limit() == 4 {
			capped++
		}
	}
	if capped != costExplore-1 {
		t.Errorf("%d of %d groups capped, want all but one", capped, costExplore)
	}
	paying := &Cost{}
	for range costMinClass {
		for size := 1; size <= 16; size *= 2 {
			paying.Observe(size, 1000, 1000, time.Duration(20000/size))
		}
	}
	if got := paying.Snapshot().Cap; got != 0 {
		t.Errorf("larger groups keep paying, yet cap %d", got)
	}
}

// TestCostCapIgnoresNoise: invocation times vary from call to call.
// Where time per element is the same for groups of 16 and of 32 (a model
// saturated at 16), ±30 % noise on every call must not cap groups at 16,
// not even for a while: each such stretch would cost an invocation per 32
// items for nothing. Where groups of 32 cost 1.6 times as much per element
// under the same noise, they are capped.
func TestCostCapIgnoresNoise(t *testing.T) {
	stream := func(perElement32 float64) (capped int) {
		rng := rand.New(rand.NewPCG(7, 11))
		s := &Cost{}
		for i := range 4000 {
			size, per := 16, 1000.0
			if i%3 != 0 {
				size, per = 24, perElement32
			}
			noisy := per * (0.7 + 0.6*rng.Float64())
			s.Observe(size, 1000, 1000, time.Duration(noisy*1000))
			if s.Snapshot().Cap != 0 {
				capped++
			}
		}
		return capped
	}
	if n := stream(1000); n > 0 {
		t.Errorf("equal cost per element: groups were capped after %d of 4000 noisy observations", n)
	}
	if n := stream(1600); n < 3900 {
		t.Errorf("groups of 32 cost 1.6 × per element: capped after only %d of 4000 observations", n)
	}
}

func TestSizeClass(t *testing.T) {
	for n, want := range map[int]int{1: 0, 2: 1, 3: 2, 4: 2, 5: 3, 8: 3, 9: 4, 1 << 20: costClasses - 1} {
		if got := sizeClass(n); got != want {
			t.Errorf("sizeClass(%d) = %d, want %d", n, got, want)
		}
	}
}

// pays reports whether an item that adds waste padding elements to a group
// costs less than the invocation it saves, as formation judges it.
func pays(s *Cost, waste int64) bool { return paysWithin(waste, s.Payable()) }
