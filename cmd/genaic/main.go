// Command genaic compiles and runs ONNX model-package workflows with
// cross-request batching. See docs/cli.md for the commands.
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

	// exitInterrupted: a run stopped by SIGINT or SIGTERM (what a shell
	// reports for a process SIGINT ended).
	exitInterrupted = 130
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
	stdin          io.Reader
	stdout, stderr io.Writer
}

func (e *env) errorf(format string, args ...any) {
	fmt.Fprintf(e.stderr, "genaic: "+format+"\n", args...)
}

var commands = map[string]command{}

func register(c command) { commands[c.name] = c }

func main() {
	tuneGC(os.Getenv)
	os.Exit(run(&env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}, os.Args[1:]))
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

// stdinArg is the argument that names standard input where a document or
// a requests file is read; anywhere else it is a usage error.
const stdinArg = "-"

// parseFlags parses flags that may stand before or after the positional
// arguments, as in `genaic check PKG --json`. A bare "-" is a positional
// argument (standard input, where the command reads one); everything after
// "--" is positional.
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
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(positional, rest...), true // Parse stopped at "--"
		}
		// Parse stops at the first argument that is not a flag: take the
		// positional ones up to the next flag. "-" is positional, so every
		// round either ends or hands Parse a flag, which it consumes or
		// refuses: the loop always makes progress.
		i := 0
		for i < len(rest) && (rest[i] == stdinArg || !strings.HasPrefix(rest[i], "-")) {
			i++
		}
		positional = append(positional, rest[:i]...)
		if i == len(rest) {
			return positional, true
		}
		args = rest[i:]
	}
}

// noStdin refuses "-" where a command does not read standard input; what
// says what the argument is (such as "PATH|plan.json" or "--out").
func noStdin(e *env, cmd, what, arg, hint string) bool {
	if arg != stdinArg {
		return true
	}
	msg := fmt.Sprintf("%s: %s -: - stands for standard input, which %s reads only as a document or a requests file", cmd, what, cmd)
	if hint != "" {
		msg += "; " + hint
	}
	e.errorf("%s", msg)
	return false
}

// ioError reports an I/O problem and returns the usage/I/O exit code.
func ioError(e *env, err error) int {
	e.errorf("%s", ioErrorText(err))
	return exitUsage
}

// ioErrorText is an I/O error as genaic prints it: the path, then what
// went wrong.
func ioErrorText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Sprintf("%s: %v", pe.Path, pe.Err)
	}
	return err.Error()
}
