package e2e

import (
	"fmt"
	"os"
	"testing"

	"github.com/genaic/genaic/engine"
)

// TestMain runs the package's tests and benchmarks with the process's
// threads in the CPU class genaic serve and genaic bench put theirs in
// (engine.DefaultCPUClass), so that a served figure is what the server
// serves, and the hand strategies it is held to run in the same class.
// GENAIC_CPU_CLASS=normal measures them in the class threads start in.
func TestMain(m *testing.M) {
	class := engine.DefaultCPUClass()
	if s := os.Getenv("GENAIC_CPU_CLASS"); s != "" {
		c, err := engine.ParseCPUClass(s)
		if err != nil {
			fmt.Fprintln(os.Stderr, "GENAIC_CPU_CLASS:", err)
			os.Exit(2)
		}
		class = c
	}
	if err := engine.SetCPUClass(class); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: the CPU class stays as it was:", err)
	}
	os.Exit(m.Run())
}
