package vm

import (
	"math"
	"testing"
	"time"
)

// TestSchedulerFit: invocation times of 20 µs + 3 ns per element are
// recovered, and an item joins a group only while the padding it adds
// costs less than the invocation it saves.
func TestSchedulerFit(t *testing.T) {
	s := newScheduler()
	if !s.pays(1 << 40) {
		t.Error("with nothing measured, the scheduler refused an item")
	}
	for _, n := range []int64{100, 900, 5000, 20000, 300, 12000, 7000, 60, 40000, 2500} {
		s.observe(1, groupElements{padded: n, real: n}, time.Duration(20000+3*n))
	}
	a, c, ok := s.fit()
	if !ok || math.Abs(a-20000) > 1 || math.Abs(c-3) > 1e-3 {
		t.Fatalf("fit a=%v c=%v ok=%v, want 20000 and 3", a, c, ok)
	}
	if !s.pays(6000) || s.pays(7000) {
		t.Errorf("pays(6000)=%v pays(7000)=%v: 3 ns × waste against a 20 µs call", s.pays(6000), s.pays(7000))
	}
	if !s.pays(0) {
		t.Error("an item that adds no padding was refused")
	}
}

// TestSchedulerCap: groups of up to 4 items run fastest per element and
// larger ones slower, so groups are capped at 4; where larger groups keep
// paying there is no cap, and every schedExplore-th group is formed
// without one.
func TestSchedulerCap(t *testing.T) {
	s := newScheduler()
	perElement := map[int]int64{1: 10, 2: 6, 4: 5, 8: 9, 16: 12}
	for range schedMinClass {
		for size, ns := range perElement {
			s.observe(size, groupElements{padded: 1000, real: 1000}, time.Duration(ns*1000))
		}
	}
	if got := s.snapshot().Cap; got != 4 {
		t.Errorf("cap %d, want 4 (per element: %v)", got, s.snapshot().PerElementBySize)
	}
	capped := 0
	for range schedExplore {
		if s.limit() == 4 {
			capped++
		}
	}
	if capped != schedExplore-1 {
		t.Errorf("%d of %d groups capped, want all but one", capped, schedExplore)
	}
	paying := newScheduler()
	for range schedMinClass {
		for size := 1; size <= 16; size *= 2 {
			paying.observe(size, groupElements{padded: 1000, real: 1000}, time.Duration(20000/size))
		}
	}
	if got := paying.snapshot().Cap; got != 0 {
		t.Errorf("larger groups keep paying, yet cap %d", got)
	}
}

func TestSizeClass(t *testing.T) {
	for n, want := range map[int]int{1: 0, 2: 1, 3: 2, 4: 2, 5: 3, 8: 3, 9: 4, 1 << 20: schedClasses - 1} {
		if got := sizeClass(n); got != want {
			t.Errorf("sizeClass(%d) = %d, want %d", n, got, want)
		}
	}
}
