package engine

import (
	"os"
	"runtime"
)

// CPUs is how many CPUs the process may use: Go's default processor count,
// which counts the machine's logical CPUs, the process's affinity mask
// and, on Linux, its container's CPU limit (runtime.NumCPU counts no
// limit). Planning divides these cores, and genaic serve runs Go on twice
// them; both read it as the process started, whatever GOMAXPROCS is set
// to since.
func CPUs() int { return startCPUs }

var startCPUs = defaultProcs()

// defaultProcs is Go's default processor count. Where the environment
// sets GOMAXPROCS, Go has applied it and does not follow the default:
// the default is read by restoring it for a moment, and the setting put
// back, with its automatic updates off as they were.
func defaultProcs() int {
	if _, set := os.LookupEnv("GOMAXPROCS"); !set {
		return runtime.GOMAXPROCS(0)
	}
	set := runtime.GOMAXPROCS(0)
	runtime.SetDefaultGOMAXPROCS()
	return runtime.GOMAXPROCS(set) // the default, replaced by set
}
