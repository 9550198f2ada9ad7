package main

import (
	"encoding/json"
	"errors"
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
// some 10 s) writing to out, and returns once some have finished.
func slowRun(t *testing.T, out string) (*exec.Cmd, *strings.Builder) {
	t.Helper()
	pkg := branchPackage(t)
	reqs := branchRequests(t, 2000)
	cmd, stderr := genaicProcess(t, "run", pkg, "--requests", reqs, "--concurrency", "1", "--out", out)
	time.Sleep(1500 * time.Millisecond)
	return cmd, stderr
}

// TestRunInterrupted: SIGTERM during run stops admitting requests, and
// the responses written hold every request that finished, the others
// failing as cancelled; the exit code is 130.
func TestRunInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("runs genaic as a process")
	}
	out := filepath.Join(t.TempDir(), "out.json")
	cmd, stderr := slowRun(t, out)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	code := waitExit(t, cmd, 20*time.Second)
	if code != exitInterrupted {
		t.Fatalf("exit %d, want %d: %s", code, exitInterrupted, stderr)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("run took %v to stop after SIGTERM", d)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rf jsonio.ResponseFile
	if err := json.Unmarshal(b, &rf); err != nil {
		t.Fatalf("the responses written on SIGTERM are not JSON: %v\n%.500s", err, b)
	}
	finished := 0
	for _, r := range rf.Responses {
		if r.Error == nil {
			if len(r.Outputs) == 0 {
				t.Fatalf("%s finished without outputs", r.ID)
			}
			finished++
		}
	}
	if len(rf.Responses) != 2000 || finished == 0 || finished == 2000 {
		t.Errorf("%d responses, %d finished; want all 2000, some but not all finished", len(rf.Responses), finished)
	}
	if !strings.Contains(stderr.String(), "requests finished") {
		t.Errorf("stderr says nothing of the interruption: %s", stderr)
	}
}

// TestRunSecondSignal: a second signal exits at once, with 130 (or, when
// it comes after the responses were written, the run has ended with 130).
func TestRunSecondSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("runs genaic as a process")
	}
	cmd, stderr := slowRun(t, filepath.Join(t.TempDir(), "out.json"))
	cmd.Process.Signal(os.Interrupt)
	time.Sleep(10 * time.Millisecond)
	cmd.Process.Signal(os.Interrupt)
	if code := waitExit(t, cmd, 10*time.Second); code != exitInterrupted {
		t.Errorf("exit %d, want %d: %s", code, exitInterrupted, stderr)
	}
}
