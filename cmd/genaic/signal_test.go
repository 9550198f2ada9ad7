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

// waitForLine waits until the responses file at path, or the temporary
// file beside it that run writes until it renames it to path, holds a
// whole line: a response streamed by --format jsonl. The limit only keeps
// a broken run from hanging the test.
func waitForLine(t *testing.T, path string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		temps, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp"))
		for _, p := range append(temps, path) {
			if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), "\n") {
				return
			}
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

// TestRunSecondSignal: a second signal exits at once, with 130, writing
// no responses: the --out file there before keeps its contents, and the
// temporary file the responses were going to is removed. The signals are
// sent once the run is under way.
func TestRunSecondSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("runs genaic as a process")
	}
	for _, format := range []string{"jsonl", "json"} {
		dir := t.TempDir()
		out := filepath.Join(dir, "out."+format)
		before := []byte("the results of an earlier run") // no line: waitForLine waits for the run's own
		if err := os.WriteFile(out, before, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd, stderr := slowRun(t, "--format", format, "--out", out)
		if format == "jsonl" {
			waitForLine(t, out, 2*time.Minute)
		} else {
			waitForTemp(t, out, 2*time.Minute)
		}
		// The two signals are sent while the process is stopped, so that
		// both arrive together, before the run can end: two kinds, for
		// two of one kind pending would be one.
		cmd.Process.Signal(syscall.SIGSTOP)
		cmd.Process.Signal(os.Interrupt)
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Process.Signal(syscall.SIGCONT)
		code := waitExit(t, cmd, time.Minute)
		if code != exitInterrupted || !strings.Contains(stderr.String(), "again: exiting without writing") {
			t.Errorf("%s: exit %d, want %d after a second signal: %s", format, code, exitInterrupted, stderr)
		}
		if b, err := os.ReadFile(out); err != nil || string(b) != string(before) {
			t.Errorf("%s: --out holds %.200q (%v) after two signals; want its earlier contents", format, b, err)
		}
		if left, _ := os.ReadDir(dir); len(left) != 1 {
			t.Errorf("%s: the folder holds %d entries after two signals; want --out alone", format, len(left))
		}
	}
}

// TestRemoveTemps: what a second signal does before it exits (removeTemps)
// removes the temporary file of an output being written, and leaves the
// file it was to replace as it was.
func TestRemoveTemps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.json")
	if err := os.WriteFile(path, []byte("earlier"), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := openOutput(&env{}, path, true)
	if err != nil {
		t.Fatal(err)
	}
	o.begin()
	o.bw.WriteString("{\"responses\": [")
	o.bw.Flush()
	removeTemps()
	if b, err := os.ReadFile(path); err != nil || string(b) != "earlier" {
		t.Errorf("--out holds %q (%v); want its earlier contents", b, err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Errorf("the folder holds %d entries; want the output alone", len(left))
	}
}

// waitForTemp waits until run has opened the temporary file beside path,
// and a while longer, so that the run is under way.
func waitForTemp(t *testing.T, path string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		if temps, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")); len(temps) > 0 {
			time.Sleep(500 * time.Millisecond)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("run opened no temporary file beside %s within %v", path, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
