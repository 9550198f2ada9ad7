package vm

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
)

// ruleOf is the rule of a response's error ("" for none).
func ruleOf(err error) string {
	var re *backend.RunError
	if errors.As(err, &re) {
		return re.Rule
	}
	if err != nil {
		return fmt.Sprintf("not a RunError: %v", err)
	}
	return ""
}

// TestRuntimeRulesOfRefusals: a full queue, a closed engine, a cancelled
// request and a passed deadline fail with run/queue-full, run/closed,
// run/cancelled and run/deadline (RunErrors), and still wrap what Go
// callers match on: QueueFullError, ErrClosed and the context's errors.
func TestRuntimeRulesOfRefusals(t *testing.T) {
	rng := rand.New(rand.NewSource(21))

	t.Run("queue-full", func(t *testing.T) {
		held, _, proceed := heldEncoder()
		e := engineWith(t, held, Options{Queue: 1}, nil)
		defer e.Close()
		var reqs []Request
		for i := range 8 {
			reqs = append(reqs, imageRequest(rand.New(rand.NewSource(int64(i))), fmt.Sprint(i), 1))
		}
		first, rest := runHeld(t, e, reqs, proceed)
		full := 0
		for _, r := range append([]Response{first}, rest...) {
			if r.Err == nil {
				continue
			}
			var qf *QueueFullError
			if ruleOf(r.Err) != backend.RunQueueFull || !errors.As(r.Err, &qf) || qf.Limit != 1 {
				t.Errorf("%s: %v (rule %s)", r.ID, r.Err, ruleOf(r.Err))
			}
			full++
		}
		if full == 0 {
			t.Error("8 concurrent requests never met a queue of 1")
		}
	})

	t.Run("closed", func(t *testing.T) {
		e := engineWith(t, slowEncoder(0), Options{}, nil)
		e.Close()
		for _, r := range []Response{e.Run(context.Background(), imageRequest(rng, "run", 1)), e.RunAll(context.Background(), []Request{imageRequest(rng, "all", 1)})[0]} {
			if ruleOf(r.Err) != backend.RunClosed || !errors.Is(r.Err, ErrClosed) {
				t.Errorf("%s after Close: %v (rule %s)", r.ID, r.Err, ruleOf(r.Err))
			}
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		e := engineWith(t, slowEncoder(0), Options{}, nil)
		defer e.Close()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		for _, r := range []Response{e.Run(ctx, imageRequest(rng, "run", 1)), e.RunAll(ctx, []Request{imageRequest(rng, "all", 1)})[0]} {
			if ruleOf(r.Err) != backend.RunCancelled || !errors.Is(r.Err, context.Canceled) {
				t.Errorf("%s cancelled: %v (rule %s)", r.ID, r.Err, ruleOf(r.Err))
			}
		}
	})

	t.Run("deadline", func(t *testing.T) {
		// The first request holds the only runner until the second has
		// waited in the queue past its 20ms deadline.
		held, entered, proceed := heldEncoder()
		e := engineWith(t, held, Options{}, nil)
		defer e.Close()
		go e.Run(context.Background(), imageRequest(rng, "slow", 1))
		<-entered
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		r := e.Run(ctx, imageRequest(rng, "late", 1))
		close(proceed)
		if ruleOf(r.Err) != backend.RunDeadline || !errors.Is(r.Err, context.DeadlineExceeded) {
			t.Errorf("past its deadline: %v (rule %s)", r.Err, ruleOf(r.Err))
		}
	})
}

// TestAsRunError: errors from outside the catalogue are given the rule
// they stand for.
func TestAsRunError(t *testing.T) {
	for err, rule := range map[error]string{
		context.Canceled: backend.RunCancelled,
		fmt.Errorf("x: %w", context.DeadlineExceeded): backend.RunDeadline,
		ErrClosed:                               backend.RunClosed,
		&QueueFullError{Component: "c"}:         backend.RunQueueFull,
		errors.New("boom"):                      backend.RunBackend,
		backend.Errorf(backend.RunInput, "bad"): backend.RunInput,
	} {
		if re := AsRunError(err); re == nil || re.Rule != rule || !errors.Is(re, err) && re != err {
			t.Errorf("%v: %+v, want %s", err, re, rule)
		}
	}
	if AsRunError(nil) != nil {
		t.Error("nil became an error")
	}
}

// TestUnreadableRequestFailsAlone: a request that could not be read
// (Request.Err) is answered with run/input at once, by Run and by RunAll,
// and its neighbours run as usual.
func TestUnreadableRequestFailsAlone(t *testing.T) {
	e := imageEngine(t, Options{MaxDelay: time.Millisecond})
	rng := rand.New(rand.NewSource(22))
	bad := Request{ID: "bad", Err: errors.New(`input "x": data holds 47 elements, shape [2 3 8] holds 48`)}
	res := e.RunAll(context.Background(), []Request{imageRequest(rng, "a", 2), bad, imageRequest(rng, "b", 1)})
	res = append(res, e.Run(context.Background(), bad))
	for i, r := range res {
		if i == 0 || i == 2 {
			if r.Err != nil {
				t.Errorf("%s: %v", r.ID, r.Err)
			}
			continue
		}
		if ruleOf(r.Err) != backend.RunInput || !strings.Contains(r.Err.Error(), "47 elements") || r.ID != "bad" {
			t.Errorf("the unreadable request: %+v", r)
		}
	}
}
