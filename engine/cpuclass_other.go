//go:build !linux

package engine

import "errors"

// batchClass says whether the system has a batch scheduling class.
const batchClass = false

func setCPUClass(c CPUClass) error {
	if c == ClassBatch {
		return errors.New("the batch CPU class is Linux's (SCHED_BATCH); this system has only the normal one")
	}
	return nil
}
