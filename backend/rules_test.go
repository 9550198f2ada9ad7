package backend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

// TestRunRulesMatchCatalogue keeps the run/* constants equal to the
// runtime ids of RULES.md.
func TestRunRulesMatchCatalogue(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "shared", "spec", "RULES.md"))
	if err != nil {
		t.Skipf("the rule catalogue is not beside the checkout: %v", err)
	}
	var ids []string
	for _, m := range regexp.MustCompile("(?m)^\\| `(run/[a-z0-9./-]+)`").FindAllStringSubmatch(string(b), -1) {
		ids = append(ids, m[1])
	}
	got := []string{RunOffsets, RunOwner, RunExtent, RunLengths, RunBudget, RunUniform, RunInput, RunBackend,
		RunUnsupported, RunQueueFull, RunClosed, RunCancelled, RunDeadline}
	if !slices.Equal(got, ids) {
		t.Errorf("run rules\n got: %v\nwant: %v", got, ids)
	}
}

func TestContextError(t *testing.T) {
	for _, c := range []struct {
		err  error
		rule string
	}{
		{context.Canceled, RunCancelled},
		{context.DeadlineExceeded, RunDeadline},
		{fmt.Errorf("waiting: %w", context.DeadlineExceeded), RunDeadline},
	} {
		err := ContextError(c.err)
		var re *RunError
		if !errors.As(err, &re) || re.Rule != c.rule || !errors.Is(err, c.err) {
			t.Errorf("%v: %v (rule %v), want %s wrapping it", c.err, err, re, c.rule)
		}
	}
	if ContextError(nil) != nil {
		t.Error("nil became an error")
	}
	in := Errorf(RunInput, "x")
	if ContextError(in) != error(in) {
		t.Error("a RunError was replaced")
	}
}
