package main

import (
	"flag"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/genaic/genaic/codegen"
)

func init() {
	register(command{
		name:    "gen",
		usage:   "gen PATH -o DIR -p NAME [-check]",
		summary: "generate a Go executor of the workflow (or, with -check, tell whether DIR is stale)",
		run:     runGen,
	})
}

func runGen(e *env, args []string) int {
	c := commands["gen"]
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	dir := fs.String("o", "", "the folder the executor package is written to")
	name := fs.String("p", "", "the Go package name of the executor")
	check := fs.Bool("check", false, "write nothing; exit 1 when DIR differs from what genaic gen would write")
	paths, ok := parseFlags(e, fs, c, args)
	if !ok {
		return exitUsage
	}
	if len(paths) != 1 || *dir == "" || *name == "" {
		fs.Usage()
		return exitUsage
	}
	if !noStdin(e, "gen", "PATH", paths[0], "the executor reads its package folder; give its path") ||
		!noStdin(e, "gen", "-o", *dir, "give the folder to write the package to") {
		return exitUsage
	}
	f, _, code := loadPlan(e, paths[0])
	if f == nil {
		return code
	}
	files, err := codegen.Generate(f, codegen.Config{
		Package: *name,
		Command: genCommand(paths[0], *dir, *name),
		Source:  slashPath(paths[0]),
	})
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	if *check {
		return checkGenerated(e, *dir, files, genCommand(paths[0], *dir, *name))
	}
	if err := codegen.Write(*dir, files); err != nil {
		return ioError(e, err)
	}
	fmt.Fprintf(e.stdout, "wrote %s (package %s: %s)\n", *dir, *name, fileNames(files))
	return exitOK
}

// genCommand is the command a generated package's header names: the one
// that writes it, whatever the order of its flags and however its paths
// were spelled (examples/x/ and ./examples/x are examples/x).
func genCommand(path, dir, name string) string {
	return fmt.Sprintf("genaic gen %s -o %s -p %s", slashPath(path), slashPath(dir), name)
}

func slashPath(p string) string { return filepath.ToSlash(filepath.Clean(p)) }

// checkGenerated compares dir with the generated files.
func checkGenerated(e *env, dir string, files []codegen.File, command string) int {
	stale, err := codegen.Stale(dir, files)
	if err != nil {
		return ioError(e, err)
	}
	if len(stale) > 0 {
		verb := "differs"
		if len(stale) > 1 {
			verb = "differ"
		}
		e.errorf("%s is stale: %s %s from what `%s` writes; run it to regenerate the executor",
			dir, strings.Join(stale, ", "), verb, command)
		return exitDiags
	}
	return exitOK
}

func fileNames(files []codegen.File) string {
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}
