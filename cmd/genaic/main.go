// Command genaic compiles and runs ONNX model-package workflows with
// cross-request batching. See README.md for the commands.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// Exit codes shared by every command.
const (
	exitOK    = 0
	exitDiags = 1 // diagnostics, or a request that failed
	exitUsage = 2 // usage or I/O errors
)

// command is one subcommand of the CLI.
type command struct {
	name    string
	usage   string
	summary string
	run     func(env *env, args []string) int
}

// env is what a command may touch, so tests can run commands in-process.
type env struct {
	stdout, stderr io.Writer
}

func (e *env) errorf(format string, args ...any) {
	fmt.Fprintf(e.stderr, "genaic: "+format+"\n", args...)
}

var commands = map[string]command{}

func register(c command) { commands[c.name] = c }

func main() {
	os.Exit(run(&env{stdout: os.Stdout, stderr: os.Stderr}, os.Args[1:]))
}

func run(e *env, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(e.stderr)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	c, ok := commands[args[0]]
	if !ok {
		e.errorf("unknown command %q; run `genaic help` for the list", args[0])
		return exitUsage
	}
	return c.run(e, args[1:])
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "genaic compiles ONNX model-package workflows and runs them with cross-request batching.")
	fmt.Fprintln(w, "\nUsage:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  genaic %s\n      %s\n", commands[n].usage, commands[n].summary)
	}
	fmt.Fprintln(w, "\nPATH is a metadata document (YAML or JSON) or a package folder holding inference_metadata.yaml.")
	fmt.Fprintln(w, "Exit codes: 0 success, 1 diagnostics or a failed request, 2 usage or I/O errors.")
}

// parseFlags parses flags that may stand before or after the positional
// arguments, as in `genaic check PKG --json`.
func parseFlags(e *env, fs *flag.FlagSet, c command, args []string) ([]string, bool) {
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "usage: genaic %s\n", c.usage)
		fs.PrintDefaults()
	}
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, false
		}
		rest := fs.Args()
		i := 0
		for i < len(rest) && !strings.HasPrefix(rest[i], "-") {
			i++
		}
		positional = append(positional, rest[:i]...)
		if i == len(rest) {
			return positional, true
		}
		if rest[i] == "--" {
			return append(positional, rest[i+1:]...), true
		}
		args = rest[i:]
	}
}

// ioError reports an I/O problem and returns the usage/I/O exit code.
func ioError(e *env, err error) int {
	var pe *os.PathError
	if errors.As(err, &pe) {
		e.errorf("%s: %v", pe.Path, pe.Err)
	} else {
		e.errorf("%v", err)
	}
	return exitUsage
}
