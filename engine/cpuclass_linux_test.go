package engine

import (
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// policies counts the process's threads by scheduling policy.
func policies(t *testing.T) map[uint32]int {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	n := map[uint32]int{}
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		attr, err := unix.SchedGetAttr(tid, 0)
		if err != nil {
			continue // exited meanwhile
		}
		n[attr.Policy]++
	}
	return n
}

// newThreads makes the runtime start k more threads than it has: k
// goroutines locked to threads of their own, each blocked in a system
// call at once.
func newThreads(k int) {
	var wg sync.WaitGroup
	for range k {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			time.Sleep(20 * time.Millisecond)
		})
	}
	wg.Wait()
}

func TestSetCPUClassMovesEveryThreadAndTheirChildren(t *testing.T) {
	t.Cleanup(func() {
		if err := SetCPUClass(ClassNormal); err != nil {
			t.Error(err)
		}
	})
	newThreads(4) // threads that exist before the class is set
	if err := SetCPUClass(ClassBatch); err != nil {
		t.Fatal(err)
	}
	newThreads(16) // threads created after it, which must inherit it
	got := policies(t)
	if got[unix.SCHED_NORMAL] != 0 || got[unix.SCHED_BATCH] < 2 {
		t.Fatalf("after SetCPUClass(batch), threads by policy: %v; want every one batch (%d)", got, unix.SCHED_BATCH)
	}
	if err := SetCPUClass(ClassNormal); err != nil {
		t.Fatal(err)
	}
	if got := policies(t); got[unix.SCHED_BATCH] != 0 {
		t.Fatalf("after SetCPUClass(normal), threads by policy: %v; want none batch", got)
	}
}

func TestCPUClassNames(t *testing.T) {
	for _, s := range []string{"normal", "batch"} {
		if c, err := ParseCPUClass(s); err != nil || string(c) != s {
			t.Errorf("ParseCPUClass(%q) = %q, %v", s, c, err)
		}
	}
	if _, err := ParseCPUClass("realtime"); err == nil {
		t.Error("ParseCPUClass(realtime) took an unknown class")
	}
	if err := SetCPUClass("idle"); err == nil {
		t.Error("SetCPUClass(idle) took an unknown class")
	}
	if DefaultCPUClass() != ClassBatch {
		t.Errorf("DefaultCPUClass() = %s on Linux, want batch", DefaultCPUClass())
	}
}
