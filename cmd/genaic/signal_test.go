package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/genaic/genaic/vm/jsonio"
)

// mainEnv, set in a child's environment, makes the test binary run
// genaic's main instead of the tests, so that tests can signal a real
// process.
const mainEnv = "GENAIC_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// genaicProcess starts genaic with args as a child process.
func genaicProcess(t *testing.T, args ...string) (*exec.Cmd, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &stderr
}

// waitExit waits for cmd and returns its exit code, failing the test when
// it has not ended within limit.
func waitExit(t *testing.T, cmd *exec.Cmd, limit time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(limit):
		cmd.Process.Kill()
		t.Fatalf("genaic did not exit within %v", limit)
		return -1
	}
}

// slowRun starts a run of 2,000 requests one at a time (about 5 ms each:
// some 10 s) with the extra flags.
func slowRun(t *testing.T, extra ...string) (*exec.Cmd, *strings.Builder) {
	t.Helper()
	pkg := branchPackage(t)
	reqs := branchRequests(t, slowRequests)
	return genaicProcess(t, append([]string{"run", pkg, "--requests", reqs, "--concurrency", "1"}, extra...)...)
}

const slowRequests = 2000

// waitForLine waits until the file at path holds a whole line: a response
// streamed by --format jsonl. The limit only keeps a broken run from
// hanging the test.
func waitForLine(t *testing.T, path string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), "\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no response was streamed to %s within %v", path, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkFinished checks the responses an interrupted run wrote: at least
// one, fewer than all, no id twice, and each one finished with its outputs
// (every request of the run is valid), none cancelled or left unstarted.
func checkFinished(t *testing.T, ids []string, failed []*jsonio.ErrorJSON, outputs []int) {
	t.Helper()
	seen := map[string]bool{}
	bad := 0
	for i, id := range ids {
		if bad >= 5 {
			t.Errorf("(and more)")
			break
		}
		if seen[id] {
			t.Errorf("%s is in the responses twice", id)
			bad++
		}
		seen[id] = true
		if failed[i] != nil {
			bad++
			t.Errorf("%s is in the responses with %s: %s; only requests that finished belong there", id, failed[i].Rule, failed[i].Message)
		} else if outputs[i] == 0 {
			t.Errorf("%s finished without outputs", id)
		}
	}
	if len(ids) == 0 || len(ids) >= slowRequests {
		t.Errorf("%d responses; want those that finished before the signal: some, not all %d", len(ids), slowRequests)
	}
}

// checkInterruptMessage checks the line run prints after an interrupted
// run.
func checkInterruptMessage(t *testing.T, stderr string, finished int) {
	t.Helper()
	want := fmt.Sprintf("%d of %d requests finished and are in the responses", finished, slowRequests)
	if !strings.Contains(stderr, want) {
		t.Errorf("stderr does not say %q: %s", want, stderr)
	}
}

// TestRunInterrupted: SIGTERM during run stops admitting requests; the
// requests started finish, and the responses document written holds every
// request that finished and no other; the exit code is 130. When the
// signal comes before any request finished (a slow start on a busy
// machine), the run is tried again with a later signal.
func TestRunInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("runs genaic as a process")
	}
	for wait := 1500 * time.Millisecond; ; wait *= 2 {
		out := filepath.Join(t.TempDir(), "out.json")
		cmd, stderr := slowRun(t, "--out", out)
		time.Sleep(wait)
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		code := waitExit(t, cmd, 2*time.Minute)
		if code == -1 && wait < 30*time.Second {
			t.Logf("the signal came before run watched for it (within %v of the start); trying again", wait)
			continue
		}
		if code != exitInterrupted {
			t.Fatalf("exit %d, want %d: %s", code, exitInterrupted, stderr)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		var rf jsonio.ResponseFile
		if err := json.Unmarshal(b, &rf); err != nil {
			t.Fatalf("the responses written on SIGTERM are not JSON: %v\n%.500s", err, b)
		}
		if len(rf.Responses) == 0 && wait < 30*time.Second {
			t.Logf("no request finished within %v of the start; trying again", wait)
			continue
		}
		var ids []string
		var failed []*jsonio.ErrorJSON
		var outputs []int
		for _, r := range rf.Responses {
			ids, failed, outputs = append(ids, r.ID), append(failed, r.Error), append(outputs, len(r.Outputs))
		}
		checkFinished(t, ids, failed, outputs)
		checkInterruptMessage(t, stderr.String(), len(ids))
		return
	}
}

// TestRunInterruptedJSONL: with --format jsonl, the responses are streamed
// as requests finish: once one is there, SIGTERM ends the run with 130,
// and every line is a finished request.
func TestRunInterruptedJSONL(t *testing.T) {
	if testing.Short() {
		t.Skip("runs genaic as a process")
	}
	out := filepath.Join(t.TempDir(), "out.jsonl")
	cmd, stderr := slowRun(t, "--format", "jsonl", "--out", out)
	waitForLine(t, out, 2*time.Minute)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, cmd, 2*time.Minute); code != exitInterrupted {
		t.Fatalf("exit %d, want %d: %s", code, exitInterrupted, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	var failed []*jsonio.ErrorJSON
	var outputs []int
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var r struct {
			ID      string                       `json:"id"`
			Outputs map[string]jsonio.TensorJSON `json:"outputs"`
			Error   *jsonio.ErrorJSON            `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("a streamed line is not a response: %v\n%.300s", err, line)
		}
		ids, failed, outputs = append(ids, r.ID), append(failed, r.Error), append(outputs, len(r.Outputs))
	}
	checkFinished(t, ids, failed, outputs)
	checkInterruptMessage(t, stderr.String(), len(ids))
}

// TestRunSecondSignal: a second signal exits at once, with 130 (or, when
// it comes after the responses were written, the run has ended with 130).
// The signals are sent once a response streamed: the run is under way.
func TestRunSecondSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("runs genaic as a process")
	}
	out := filepath.Join(t.TempDir(), "out.jsonl")
	cmd, stderr := slowRun(t, "--format", "jsonl", "--out", out)
	waitForLine(t, out, 2*time.Minute)
	cmd.Process.Signal(os.Interrupt)
	time.Sleep(10 * time.Millisecond)
	cmd.Process.Signal(os.Interrupt)
	if code := waitExit(t, cmd, time.Minute); code != exitInterrupted {
		t.Errorf("exit %d, want %d: %s", code, exitInterrupted, stderr)
	}
}
