package engine

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// batchClass says whether the system has a batch scheduling class.
const batchClass = true

// classPasses bounds the passes over the process's threads: a thread may
// be created from one not yet moved while a pass runs, and the next pass
// moves it; a pass that moves none ends the work.
const classPasses = 8

func setCPUClass(c CPUClass) error {
	from, to := uint32(unix.SCHED_NORMAL), uint32(unix.SCHED_BATCH)
	if c == ClassNormal {
		from, to = to, from
	}
	for range classPasses {
		moved, err := moveThreads(from, to)
		if err != nil || moved == 0 {
			return err
		}
	}
	return fmt.Errorf("threads kept being created in the old CPU class over %d passes", classPasses)
}

// moveThreads moves the process's threads of policy from to policy to,
// keeping their nice value, and returns how many it moved.
func moveThreads(from, to uint32) (int, error) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0, fmt.Errorf("listing the process's threads: %w", err)
	}
	moved := 0
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		attr, err := unix.SchedGetAttr(tid, 0)
		if errors.Is(err, unix.ESRCH) {
			continue // the thread has exited
		}
		if err != nil {
			return moved, fmt.Errorf("reading thread %d's CPU class: %w", tid, err)
		}
		if attr.Policy != from {
			continue
		}
		attr.Policy = to
		switch err := unix.SchedSetAttr(tid, attr, 0); {
		case errors.Is(err, unix.ESRCH):
			continue // the thread has exited
		case err != nil:
			return moved, fmt.Errorf("setting thread %d's CPU class: %w", tid, err)
		}
		moved++
	}
	return moved, nil
}
