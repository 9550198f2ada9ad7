package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestTable: values group by build, benchmark and figure (the GOMAXPROCS
// suffix dropped), medians and ranges come from every run, an all-zero
// figure is left out, and a bench document's modes become figures too,
// named by their processor count where a document holds several.
func TestTable(t *testing.T) {
	in := strings.Join([]string{
		"base\tBenchmarkW/a-2   100  3 x/s  0 ns/op",
		"head\tBenchmarkW/a-16  100  8 x/s  0 ns/op",
		"noise between the runs",
		"base\tBenchmarkW/a-2   100  1 x/s  0 ns/op",
		"head\tBenchmarkW/a-16  100  4 x/s  0 ns/op",
		"base\tBenchmarkW/a-2   100  2 x/s  0 ns/op",
		"head\tBenchmarkW/a-16  100  6 x/s  0 ns/op",
		`head	{"modes":[{"name":"grouped","concurrency":16,"requests_per_second":900,"vs_one_at_a_time":2.5,"latency_ms":{"p50":0.2,"p99":1.5},"groups":{"enc":{"mean_size":15.5}}}]}`,
		`head	{"package":"p","modes":[{"name":"http","concurrency":16,"requests_per_second":900,"server_cpu_us":113.5}]}`,
		`head	{"modes":[{"name":"grouped","concurrency":8,"procs":1,"requests_per_second":700},{"name":"grouped","concurrency":8,"procs":2,"requests_per_second":500}]}`,
	}, "\n")
	tb := newTable()
	if err := tb.read(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := tb.write(&out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	holds(t, got,
		"2 [1–3] 3",
		"6 [4–8] 3",
		"vs-one-at-a-time",
		"group-size/enc",
		"GenaicBench/grouped/clients=16 ",
		"GenaicBench/grouped/clients=8/procs=1",
		"GenaicBench/grouped/clients=8/procs=2",
	)
	if line := lineOf(got, "server-cpu-us/req"); !strings.Contains(line, "114 [114–114] 1") {
		t.Errorf("a server's CPU per request: %q", line)
	}
	if strings.Contains(got, "ns/op") {
		t.Errorf("a figure zero in every run is shown:\n%s", got)
	}
	// head/base of the medians: 6/2.
	if f := strings.Fields(lineOf(got, "x/s")); len(f) == 0 || f[0] != "W/a" || f[len(f)-1] != "3.000" {
		t.Errorf("the line of W/a's x/s is not the figure with a ratio of medians of 3.000: %q", f)
	}
	// A line without a build's name belongs to the build "-".
	one := newTable()
	if err := one.read(strings.NewReader("BenchmarkUnlabelled-2  10  5 y")); err != nil || len(one.builds) != 1 || one.builds[0] != "-" {
		t.Errorf("an unlabelled line: builds %q, %v", one.builds, err)
	}
	if err := newTable().read(strings.NewReader("head\t{not json")); err == nil {
		t.Error("a broken bench document is not reported")
	}
}

// TestMarkdown: the Markdown table has the plain table's rows, a header
// rule after the first, and every row as many cells as the header.
func TestMarkdown(t *testing.T) {
	tb := newTable()
	in := "base\tBenchmarkW/a-2  1  2 x/s\nhead\tBenchmarkW/a-2  1  6 x/s\nbase\tBenchmarkW/b-2  1  1 y\n"
	if err := tb.read(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := tb.writeMarkdown(&out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	want := []string{
		"| benchmark | figure | base: median [min–max] n | head: median [min–max] n | head/base |",
		"| --- | --- | --- | --- | --- |",
		"| W/a | x/s | 2 [2–2] 1 | 6 [6–6] 1 | 3.000 |",
		"| W/b | y | 1 [1–1] 1 | - | - |",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("markdown:\n%s\nwant:\n%s", out.String(), strings.Join(want, "\n"))
	}
}

func lineOf(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

// TestPackUnpack: acceptance.sh pack puts builds and the cache's library
// and models into one folder, smaller than they are, and unpack gives back
// the same bytes, the binaries executable, without Go on the path.
func TestPackUnpack(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string]string{
		"head/e2e.test":                         strings.Repeat("test binary ", 4000),
		"head/genaic":                           strings.Repeat("cli ", 5000),
		"exp/e2e.test":                          strings.Repeat("another binary ", 3000),
		"cache/onnxruntime/libonnxruntime.so.1": strings.Repeat("library ", 9000),
		"cache/models/m.onnx":                   strings.Repeat("model ", 2000),
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script, err := filepath.Abs(filepath.Join("..", "acceptance.sh"))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	run := func(args ...string) {
		cmd := exec.Command(bash, append([]string{script}, args...)...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "GENAIC_CACHE=" + filepath.Join(dir, "cache")}
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("acceptance.sh %s: %v\n%s", strings.Join(args, " "), err, b)
		}
	}
	run("pack", out, filepath.Join(dir, "head"), filepath.Join(dir, "exp"))
	if b, err := os.ReadFile(filepath.Join(out, "builds", "head", "genaic.gz")); err != nil || len(b) >= len(files["head/genaic"]) {
		t.Fatalf("packed genaic: %d bytes of %d, %v", len(b), len(files["head/genaic"]), err)
	}
	run("unpack", out)
	for name, body := range files {
		packed := filepath.Join(out, "builds", name)
		if strings.HasPrefix(name, "cache/") {
			packed = filepath.Join(out, name)
		}
		b, err := os.ReadFile(packed)
		if err != nil || string(b) != body {
			t.Errorf("%s unpacked as %d bytes (%v), want %d", name, len(b), err, len(body))
			continue
		}
		if fi, _ := os.Stat(packed); !strings.HasPrefix(name, "cache/") && fi.Mode()&0o100 == 0 {
			t.Errorf("%s is not executable after unpack: %v", name, fi.Mode())
		}
	}
}

// TestCountArithmetic runs acceptance.sh count against stand-ins for
// valgrind, callgrind_annotate and the test binaries, whose instruction
// totals grow by a known amount per iteration, part in the binary's own
// code and part in a native library: count must print that amount per
// request and per document, split into Go and native, with the grouped
// engine's Go beyond the ideal's, whatever the set-up costs.
func TestCountArithmetic(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, body string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// valgrind records the iterations and the way asked for in its
	// output file, then runs the binary.
	write("bin/valgrind", `#!/bin/bash
for a in "$@"; do
	case $a in
	--callgrind-out-file=*) out=${a#*=} ;;
	*x) n=${a%x} ;;
	esac
done
case "$*" in
*RuntimeOverhead*) way=noop ;;
*grouped*) way=grouped ;;
*) way=ideal ;;
esac
while [ "${1#--}" != "$1" ]; do shift; done
echo "$n $way $(basename "$1")" >"$out"
exec "$@"
`)
	// callgrind_annotate: set-up costs (which differ by way and by run
	// length only through the iterations), then per iteration Go and
	// native instructions of each way.
	write("bin/callgrind_annotate", `#!/bin/bash
read -r n way bin <"${@: -1}"
case $way in
noop) g=$((64 * 11000)) c=0 ;;
grouped) g=900000 c=1300000 ;;
ideal) g=100000 c=1400000 ;;
esac
go=$((5000000 + g * n)) native=$((7000000 + c * n))
printf -- '----\n%s (100.0%%)  PROGRAM TOTALS\n----\n' "$((go + native))" | sed ':a;s/\B[0-9]\{3\}\b/,&/;ta'
printf '%s ( 1.0%%)  ???:0x4000 [/x/%s]\n' "$go" "$bin"
printf '%s ( 2.0%%)  ???:0x9000 [/usr/lib/libonnxruntime.so.1]\n' "$native"
`)
	write("b/vm.test", "#!/bin/bash\necho 'BenchmarkRuntimeOverhead/solo=false-2  10  640000 ns/op  10000 ns/request'\n")
	write("b/e2e.test", "#!/bin/bash\necho 'BenchmarkWorkloadCost/w/grouped-2  10  1 ns/op  64.00 requests/op'\n")
	script, err := filepath.Abs(filepath.Join("..", "acceptance.sh"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bash, script, "count", "-w", "image_padded/64", "-r", "1", filepath.Join(dir, "b"))
	cmd.Env = []string{"PATH=" + filepath.Join(dir, "bin") + ":/usr/bin:/bin"}
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("acceptance.sh count: %v\n%s", err, b)
	}
	for _, want := range [][]string{
		{"b", "no-op", "grouped", "11000", "11000", "0", "per", "request", "(batches", "of", "64)"},
		{"b", "image_padded/64", "grouped", "2200000", "900000", "1300000"},
		{"b", "image_padded/64", "ideal", "1500000", "100000", "1400000"},
		{"b", "image_padded/64", "own", "800000", "own:"},
	} {
		found := false
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= len(want) && slices.Equal(f[:len(want)], want) {
				found = true
			}
		}
		if !found {
			t.Errorf("no line starting %q in:\n%s", want, b)
		}
	}
	if !strings.Contains(string(b), "(12500 per request)") {
		t.Errorf("the own instructions per request are not 800000/64:\n%s", b)
	}
}

// TestAcceptance: each of issue 11's checks is judged on its medians per
// build, against a bound or another figure, across every benchmark a
// pattern matches; a check with no runs says so.
func TestAcceptance(t *testing.T) {
	in := strings.Join([]string{
		"head\tBenchmarkWorkloads/text_packed/short-2  100  0.90 grouped/ideal  2.0 grouped/solo",
		"head\tBenchmarkWorkloads/text_packed/short-2  100  0.97 grouped/ideal  2.2 grouped/solo",
		"head\tBenchmarkWorkloads/text_packed/short-2  100  0.96 grouped/ideal  2.1 grouped/solo",
		"head\tBenchmarkWorkloads/text_padded/long-2  100  0.3 grouped-padding  0.2 fifo-padding",
		`head	{"modes":[{"name":"grouped","concurrency":16,"procs":1,"vs_one_at_a_time":1.5},{"name":"grouped","concurrency":16,"procs":2,"vs_one_at_a_time":0.9}]}`,
		`head	{"package":"ocr_rec","modes":[{"name":"grouped","concurrency":64,"procs":2,"vs_one_at_a_time":0.97},{"name":"one-at-a-time","concurrency":64,"procs":2,"vs_one_at_a_time":1}]}`,
		`head	{"package":"text_packed","modes":[{"name":"grouped","concurrency":64,"procs":2,"vs_one_at_a_time":2.5,"vs_direct":0.85},{"name":"direct","concurrency":2,"procs":2,"vs_one_at_a_time":3,"vs_direct":1}]}`,
		"head\tBenchmarkBest/text_packed/short-2  3  0.93 served16/best  0.95 served64/best  1.9 served16/solo",
		"head\tBenchmarkBest/ocr_rec/mixed-2  3  0.8 served16/best  0.97 served64/best  0.99 served16/solo",
	}, "\n")
	got := written(t, in, (*table).writeAcceptance)
	for what, want := range map[string]string{
		"short text: grouped >= 0.95 x ideal":             "met    0.96 (want >= 0.95)",
		"short text: grouped >= 1.4 x one-at-a-time":      "met    2.1 (want >= 1.4)",
		"long padded text: padding below FIFO grouping's": "SHORT  0.3 (want <= 0.2)",
		"README example":                                   "SHORT  /procs=1 1.5 (want >= 1); /procs=2 0.9 (want >= 1)",
		"image encoder, 64 requests":                       "no runs",
		"served callers (16): >= 0.9 x":                    "SHORT  text_packed/short 0.93 (want >= 0.9); ocr_rec/mixed 0.8 (want >= 0.9)",
		"served callers (64): >= 0.9 x":                    "met",
		"served callers (16): >= 0.98 x":                   "met",
		"real models, genaic bench":                        "SHORT  ocr_rec/clients=64 0.97 (want >= 0.98)",
		"short text (64 clients): grouped >= 0.9 x direct": "SHORT  0.85 (want >= 0.9)",
		"served callers (64): >= 0.98 x ":                  "no runs",
	} {
		words := func(s string) string { return strings.Join(strings.Fields(s), " ") }
		if line := lineOf(got, what); !strings.Contains(words(line), words(want)) {
			t.Errorf("%s: %q, want %q in it:\n%s", what, line, want, got)
		}
	}
}

// TestVerdicts: the Markdown verdicts hold a row per check the runs have
// values for and none for the others; with several builds each verdict
// names its build.
func TestVerdicts(t *testing.T) {
	one := strings.Join([]string{
		"measured\tBenchmarkBest/text_packed/short-2  3  0.93 served16/best  0.85 served64/best",
		"measured\tBenchmarkBest/text_packed/short-2  3  0.91 served16/best  0.87 served64/best",
		"measured\tBenchmarkBest/text_packed/short-2  3  0.95 served16/best  0.80 served64/best",
	}, "\n")
	lines := strings.Split(strings.TrimSpace(written(t, one, (*table).writeVerdicts)), "\n")
	want := []string{
		"| issue | check | verdict | medians |",
		"| --- | --- | --- | --- |",
		"| 44 | served callers (16): >= 0.9 x the best hand strategy | met | text_packed/short 0.93 (want >= 0.9) |",
		"| 44 | served callers (64): >= 0.9 x the best hand strategy | SHORT | text_packed/short 0.85 (want >= 0.9) |",
	}
	if !slices.Equal(lines, want) {
		t.Errorf("verdicts:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	two := written(t, "base\tBenchmarkBest/x-2  3  0.8 served16/best\nhead\tBenchmarkBest/x-2  3  0.95 served16/best", (*table).writeVerdicts)
	holds(t, two, "| base: SHORT | x 0.8 (want >= 0.9) |", "| head: met | x 0.95 (want >= 0.9) |")
}

// TestServerVerdicts: the server's checks are ratios to other runs: of a
// grouped server's modes to the same bench's grouped mode in process, and
// to the same modes against a server that declines grouping (+one); runs
// of a server that declines grouping are no subject of either.
func TestServerVerdicts(t *testing.T) {
	doc := func(pkg string, modes ...string) string {
		return `measured	{"package":"` + pkg + `","modes":[` + strings.Join(modes, ",") + `]}`
	}
	mode := func(name string, rps int) string {
		return fmt.Sprintf(`{"name":%q,"concurrency":16,"procs":2,"requests_per_second":%d}`, name, rps)
	}
	in := strings.Join([]string{
		doc("text_packed", mode("grouped", 1000), mode("one-at-a-time", 400)),
		doc("text_packed", mode("http", 500), mode("grpc_stream", 900)),
		doc("text_packed+one", mode("http", 200), mode("grpc_stream", 600)),
	}, "\n")
	got := written(t, in, (*table).writeVerdicts)
	holds(t, got,
		"| genaic serve, HTTP binary and gRPC stream: >= 0.8 x the same bench in process | SHORT | http/pkg=text_packed/clients=16 0.5 (want >= 0.8); grpc_stream/pkg=text_packed/clients=16 0.9 (want >= 0.8) |",
		"| genaic serve, HTTP binary and gRPC stream: grouped >= 1.8 x one request per invocation | SHORT | http/pkg=text_packed/clients=16 2.5 (want >= 1.8); grpc_stream/pkg=text_packed/clients=16 1.5 (want >= 1.8) |",
	)
	if strings.Contains(got, "+one/clients") {
		t.Errorf("a server that declines grouping was judged:\n%s", got)
	}
}

// holds reports each of wants that got lacks.
func holds(t *testing.T, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("no %q in:\n%s", w, got)
		}
	}
}

// written is what write prints of the table read from in.
func written(t *testing.T, in string, write func(*table, io.Writer) error) string {
	t.Helper()
	tb := newTable()
	if err := tb.read(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := write(tb, &out); err != nil {
		t.Fatal(err)
	}
	return out.String()
}
