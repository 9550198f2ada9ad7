package codegen_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/internal/testenv"
)

// client is a program of an application: it imports a committed example
// executor, opens it on the package folder and answers a requests
// document, all through the executor's public API.
const client = `package main

import (
	"context"
	"fmt"
	"os"

	"github.com/genaic/genaic/examples/imagepadded"
)

func main() {
	x, err := imagepadded.New(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer x.Close()
	requests, err := os.ReadFile(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	responses, err := x.RunJSON(context.Background(), requests)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Stdout.Write(responses)
}
`

// TestProgramOutsideTheModule builds and runs a program in a module of its
// own that requires genaic (through a replace to this checkout) and
// imports a generated executor, and checks that it answers the package's
// requests document as `genaic run` does.
func TestProgramOutsideTheModule(t *testing.T) {
	mod := tempModule(t, "example.com/client")
	writeFile(t, filepath.Join(mod, "main.go"), []byte(client))
	pkg := filepath.Join(testenv.Root(t), "testdata", "packages", "image_padded")
	requests := filepath.Join(pkg, "requests.json")
	got := goCommand(t, mod, "run", ".", pkg, requests)
	doc, err := os.ReadFile(requests)
	if err != nil {
		t.Fatal(err)
	}
	want := vmResponses(t, fixtures.Lookup("imagepadded"), doc, false)
	n, failed := sameResponses(t, got, want, true)
	if n == 0 || failed > 0 {
		t.Errorf("the program answered %d requests, %d of them failed; want every request of %s answered", n, failed, requests)
	}
}
