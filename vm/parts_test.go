package vm

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// TestPartGate: admitted parts wait until every sibling is admitted or has
// finished, then all go on; a refusal (or a failed part) fails the parts
// that wait and every later admission; a cancelled waiter leaves, and its
// siblings still meet.
func TestPartGate(t *testing.T) {
	ctx := context.Background()
	t.Run("all admitted", func(t *testing.T) {
		g := newPartGate(3)
		var wg sync.WaitGroup
		errs := make([]error, 3)
		for i := range 3 {
			wg.Go(func() { errs[i] = g.admitted(ctx) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("part %d: %v", i, err)
			}
		}
		// A second round meets the same way.
		for i := range 3 {
			wg.Go(func() { errs[i] = g.admitted(ctx) })
		}
		wg.Wait()
		if errors.Join(errs...) != nil {
			t.Errorf("second round: %v", errs)
		}
	})
	t.Run("waits for the last", func(t *testing.T) {
		g := newPartGate(2)
		done := make(chan error, 1)
		go func() { done <- g.admitted(ctx) }()
		select {
		case err := <-done:
			t.Fatalf("part went on (%v) while its sibling had not been admitted", err)
		case <-time.After(20 * time.Millisecond):
		}
		g.finished(nil)
		if err := <-done; err != nil {
			t.Errorf("released by a finished sibling: %v", err)
		}
	})
	t.Run("refused", func(t *testing.T) {
		g := newPartGate(3)
		refusal := errors.New("too wide")
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range 2 {
			wg.Go(func() { errs[i] = g.admitted(ctx) })
		}
		time.Sleep(10 * time.Millisecond)
		g.refused(refusal)
		wg.Wait()
		for i, err := range errs {
			if !errors.Is(err, refusal) {
				t.Errorf("waiting part %d: %v, want the refusal", i, err)
			}
		}
		if err := g.admitted(ctx); !errors.Is(err, refusal) {
			t.Errorf("a later admission: %v, want the refusal", err)
		}
	})
	t.Run("failed part", func(t *testing.T) {
		g := newPartGate(2)
		done := make(chan error, 1)
		go func() { done <- g.admitted(ctx) }()
		failed := errors.New("corrupt image")
		g.finished(failed)
		if err := <-done; !errors.Is(err, failed) {
			t.Errorf("waiting part: %v, want its sibling's failure", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		g := newPartGate(3)
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- g.admitted(cctx) }()
		time.Sleep(10 * time.Millisecond)
		cancel()
		if err := <-done; err == nil {
			t.Fatal("a cancelled waiter went on")
		}
		g.finished(nil) // the cancelled part ends
		other := make(chan error, 1)
		go func() { other <- g.admitted(ctx) }()
		g.finished(nil)
		if err := <-other; err != nil {
			t.Errorf("the last part waited on a cancelled sibling: %v", err)
		}
	})
}
