package engine

import (
	"fmt"
	"sync/atomic"
)

// CPUClass is the operating system's scheduling class a process's threads
// run in.
//
// A grouped component runs ONNX Runtime's compute on the threads that call
// it, and each call lasts long enough for Go's runtime to treat it as a
// blocking system call: it hands the caller's processor to another thread
// to run Go code and wakes threads to look for work, over and over under
// load. In the normal class each such wake-up may preempt a thread in the
// middle of its compute, and the kernel may leave that thread queued
// behind the woken one while another core idles, so that a call takes
// several times its compute. In the batch class (Linux's SCHED_BATCH) a
// waking thread never preempts a running one: it takes an idle core or
// waits for the running thread's time slice to end. Compute runs
// uninterrupted, the Go code runs between the calls, and the process
// serves as fast after an idle spell as after a busy one.
type CPUClass string

const (
	// ClassNormal is the class threads start in (SCHED_OTHER).
	ClassNormal CPUClass = "normal"
	// ClassBatch is the class of CPU-bound threads whose wake-ups do not
	// preempt (SCHED_BATCH); the default of genaic serve and genaic bench
	// where the system has it.
	ClassBatch CPUClass = "batch"
)

// ParseCPUClass reads a class's name: normal or batch.
func ParseCPUClass(s string) (CPUClass, error) {
	switch c := CPUClass(s); c {
	case ClassNormal, ClassBatch:
		return c, nil
	}
	return "", fmt.Errorf("unknown CPU class %q: want normal or batch", s)
}

// DefaultCPUClass is the class serving commands put their threads in:
// batch where the system has it, else normal.
func DefaultCPUClass() CPUClass {
	if batchClass {
		return ClassBatch
	}
	return ClassNormal
}

// SetCPUClass puts every thread of the process in class c; threads
// created later inherit it from the thread that creates them. Threads in
// another class than these two (real-time, idle) are left as they are:
// someone chose it. Where the system has no batch class, asking for it
// fails and nothing changes.
func SetCPUClass(c CPUClass) error {
	if _, err := ParseCPUClass(string(c)); err != nil {
		return err
	}
	if err := setCPUClass(c); err != nil {
		return err
	}
	cpuClass.Store(&c)
	return nil
}

// cpuClass is the class SetCPUClass last put the process's threads in
// (nil: none; they run in the class they started in).
var cpuClass atomic.Pointer[CPUClass]

// currentCPUClass is the class SetCPUClass last put the process's threads
// in, "" where it was not called.
func currentCPUClass() CPUClass {
	if c := cpuClass.Load(); c != nil {
		return *c
	}
	return ""
}
