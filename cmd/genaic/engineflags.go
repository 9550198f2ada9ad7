package main

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/engine"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/plan"
	"github.com/genaic/genaic/vm"
	"github.com/genaic/genaic/vm/adapters"
)

// engineFlags are the options run and bench share: how the engine groups,
// and which backends it makes and how.
type engineFlags struct {
	maxDelay time.Duration
	threads  int
	provider string
	queue    int
	workers  int
	media    int64
	backends backendNames
	decline  declines
	cpuClass string
	// inClass is the class useCPUClass put the threads in ("": none).
	inClass string
}

func (ef *engineFlags) register(fs *flag.FlagSet, delay time.Duration, delayDoc string) {
	fs.DurationVar(&ef.maxDelay, "max-delay", delay, delayDoc)
	fs.IntVar(&ef.threads, "threads", 0, "ONNX Runtime intra-op threads of each worker (0: the cores divided among --workers; with --workers 0 too, planned where the command plans (bench, serve), else ONNX Runtime's default)")
	fs.StringVar(&ef.provider, "provider", "cpu", "the execution provider ONNX Runtime runs on: cpu, cuda, tensorrt, openvino, coreml or directml (one the library lacks declines grouping, saying why)")
	fs.IntVar(&ef.queue, "queue", 1024, "the most items that may wait for one component; beyond it a served request fails at once (run/queue-full) and one of genaic run waits for room")
	fs.IntVar(&ef.workers, "workers", 0, "how many groups of one component may be formed and run at once (0: as many as the cores hold of --threads; with --threads 0 too, planned where the command plans (bench, serve): the machine's cores divided between workers and threads as measured on the requests, else 1)")
	fs.Int64Var(&ef.media, "max-media-bytes", 0, fmt.Sprintf("the memory one request's media (images, video frames, audio clips) may take decoded and preprocessed, read off their headers before decoding; beyond it the request fails with run/budget (0: %d)", adapters.DefaultMaxMediaBytes))
	fs.Var(&ef.backends, "backend", "KIND=NAME: run the components of KIND (onnx, adapter, binding) on the registered backend NAME (repeatable; "+registeredText()+")")
	fs.StringVar(&ef.cpuClass, "cpu-class", string(engine.DefaultCPUClass()), "the scheduling class of the process's threads: batch (Linux's SCHED_BATCH, the default there: the runtime's thread wake-ups never preempt ONNX Runtime's compute) or normal")
	fs.Var(&ef.decline, "decline", "COMPONENT[/OPCLASS[/PROVIDER]]=REASON: decline grouped execution where the key matches (* matches anything; repeatable); such components run one request per invocation and the decline is counted")
}

// valid checks the numeric flags before anything is loaded, against the
// limits `serve --config` checks too (engine.CheckWorkers, ...), saying
// what is wrong: a run never starts with values the engine would misread.
func (ef *engineFlags) valid(e *env) bool {
	for _, c := range []struct {
		flag  string
		value any
		err   error
	}{
		{"--threads", ef.threads, engine.CheckThreads(ef.threads)},
		{"--queue", ef.queue, engine.CheckQueue(ef.queue)},
		{"--workers", ef.workers, engine.CheckWorkers(ef.workers)},
		{"--max-delay", ef.maxDelay, engine.CheckMaxDelay(ef.maxDelay)},
		{"--max-media-bytes", ef.media, engine.CheckMaxMediaBytes(ef.media)},
		{"--cpu-class", ef.cpuClass, checkCPUClass(ef.cpuClass)},
	} {
		if c.err != nil {
			e.errorf("%s %v: %v", c.flag, c.value, c.err)
			return false
		}
	}
	return true
}

func checkCPUClass(s string) error {
	_, err := engine.ParseCPUClass(s)
	return err
}

// useCPUClass puts the process's threads in the --cpu-class (valid has
// checked it). A system that refuses (a sandbox may) leaves them where
// they are, which only costs speed: the command goes on, saying so.
func (ef *engineFlags) useCPUClass(e *env) {
	if err := engine.SetCPUClass(engine.CPUClass(ef.cpuClass)); err != nil {
		e.errorf("--cpu-class %s: %v; the threads stay in their class", ef.cpuClass, err)
		return
	}
	ef.inClass = ef.cpuClass
}

// validPlan checks the flags that name parts of the plan: each --decline
// names a component of f, or * for any.
func (ef *engineFlags) validPlan(e *env, f *plan.File) bool {
	var names []string
	for _, c := range f.IR.Components {
		names = append(names, c.Name)
	}
	if err := engine.CheckDeclines(backend.Declines(ef.decline), names); err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			e.errorf("%s", line)
		}
		return false
	}
	return true
}

// planned reports whether the flags leave the execution (workers and
// threads) to be planned on this machine, where the command plans.
func (ef *engineFlags) planned() bool { return ef.workers == 0 && ef.threads == 0 }

// options returns the engine options the flags say, solo or grouped:
// the cores divided as --workers and --threads say (engine.Divide).
func (ef *engineFlags) options(solo bool) engine.Options {
	return engine.Apply(engine.Options{
		Options:  vm.Options{Solo: solo, MaxDelay: ef.maxDelay, Queue: ef.queue, Declines: backend.Declines(ef.decline)},
		Backends: ef.backends,
		Config:   engine.Config{Provider: ef.provider, MaxMediaBytes: ef.media},
	}, ef.division())
}

// division is the execution --workers and --threads set, the half left
// unset completed from the cores (engine.Divide).
func (ef *engineFlags) division() *vm.Execution {
	return engine.Divide(ef.workers, ef.threads, engine.CPUs())
}

func registeredText() string {
	var out []string
	for _, f := range engine.Registered() {
		var kinds []string
		for _, k := range f.Kinds {
			kinds = append(kinds, k.String())
		}
		out = append(out, f.Name+" runs "+strings.Join(kinds, ", "))
	}
	return strings.Join(out, "; ")
}

// backendNames is --backend KIND=NAME, repeatable.
type backendNames map[ir.ImplKind]string

func (b *backendNames) String() string { return fmt.Sprint(map[ir.ImplKind]string(*b)) }

func (b *backendNames) Set(v string) error {
	word, name, ok := strings.Cut(v, "=")
	var kind ir.ImplKind
	if !ok || name == "" || kind.UnmarshalText([]byte(word)) != nil {
		return fmt.Errorf("want KIND=NAME with KIND onnx, adapter or binding, got %q", v)
	}
	if _, ok := engine.Lookup(name); !ok {
		return fmt.Errorf("no backend called %q is registered (%s)", name, registeredText())
	}
	if *b == nil {
		*b = backendNames{}
	}
	(*b)[kind] = name
	return nil
}

// declines is the readiness table given on the command line:
// --decline COMPONENT[/OPCLASS[/PROVIDER]]=REASON, repeatable.
type declines backend.Declines

func (d *declines) String() string { return fmt.Sprint(map[backend.ReadinessKey]string(*d)) }

func (d *declines) Set(v string) error {
	key, reason, ok := strings.Cut(v, "=")
	if !ok || reason == "" {
		return fmt.Errorf("want COMPONENT[/OPCLASS[/PROVIDER]]=REASON, got %q", v)
	}
	k, err := backend.ParseReadinessKey(key)
	if err != nil {
		return err
	}
	if *d == nil {
		*d = declines{}
	}
	(*d)[k] = reason
	return nil
}
