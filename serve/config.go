package serve

import (
	"bytes"
	"fmt"
	"time"

	"github.com/genaic/genaic/engine"
	"github.com/genaic/genaic/internal/safefile"
	"gopkg.in/yaml.v3"
)

// ModelConfig is how one model's engine groups and runs. A zero field
// keeps the value of the defaults (or of the command line).
type ModelConfig struct {
	// MaxDelay is how long a group waits for more items ("5ms").
	MaxDelay *time.Duration `yaml:"max_delay"`
	// Queue bounds each component's queue (items); beyond it a request
	// fails at once with run/queue-full.
	Queue int `yaml:"queue"`
	// Workers is how many groups of one component form and run at once,
	// and Threads ONNX Runtime's intra-op thread count; both 0 (the
	// default) plans them on the machine at load (engine.PlanExecution),
	// with the package's warm-up requests. One of them 0 alone is
	// completed from the cores (engine.Divide): the cores divided among
	// the workers, or as many workers as the cores hold of the threads.
	Workers int `yaml:"workers"`
	Threads int `yaml:"threads"`
	// Provider is the execution provider (cpu, cuda, tensorrt, ...).
	Provider string `yaml:"provider"`
	// MaxMediaBytes is the memory one request's media (images, video
	// frames, audio clips) may take decoded and preprocessed
	// (engine.Config.MaxMediaBytes).
	MaxMediaBytes int64 `yaml:"max_media_bytes"`
	// DefaultPriority is the priority of the requests that name none (the
	// `priority` parameter), from 1, the most urgent, to MaxPriority; 0:
	// DefaultPriority.
	DefaultPriority int `yaml:"default_priority"`
	// DefaultTimeout is the timeout of the requests that name none (the
	// `timeout` parameter), up to MaxTimeout; 0: none. A gRPC call's own
	// deadline still bounds it.
	DefaultTimeout time.Duration `yaml:"default_timeout"`
}

// DefaultPriority is a model's default_priority where none is set: the
// most urgent, so that a request's priority can only make it less urgent
// unless the model's default is raised.
const DefaultPriority = 1

// Over returns c with the fields it leaves unset taken from d.
func (c ModelConfig) Over(d ModelConfig) ModelConfig {
	if c.MaxDelay == nil {
		c.MaxDelay = d.MaxDelay
	}
	if c.Queue == 0 {
		c.Queue = d.Queue
	}
	if c.Workers == 0 {
		c.Workers = d.Workers
	}
	if c.Threads == 0 {
		c.Threads = d.Threads
	}
	if c.Provider == "" {
		c.Provider = d.Provider
	}
	if c.MaxMediaBytes == 0 {
		c.MaxMediaBytes = d.MaxMediaBytes
	}
	if c.DefaultPriority == 0 {
		c.DefaultPriority = d.DefaultPriority
	}
	if c.DefaultTimeout == 0 {
		c.DefaultTimeout = d.DefaultTimeout
	}
	return c
}

// check refuses a setting beyond the limits the command line's flags have
// (engine.CheckWorkers, ...), in the flags' words; 0 (unset) is always
// taken.
func (c ModelConfig) check(where string) error {
	var checks []error
	if c.MaxDelay != nil {
		checks = append(checks, named("max_delay", *c.MaxDelay, engine.CheckMaxDelay(*c.MaxDelay)))
	}
	if c.Queue != 0 {
		checks = append(checks, named("queue", c.Queue, engine.CheckQueue(c.Queue)))
	}
	checks = append(checks, named("workers", c.Workers, engine.CheckWorkers(c.Workers)),
		named("threads", c.Threads, engine.CheckThreads(c.Threads)),
		named("max_media_bytes", c.MaxMediaBytes, engine.CheckMaxMediaBytes(c.MaxMediaBytes)),
		named("default_priority", c.DefaultPriority, CheckDefaultPriority(c.DefaultPriority)),
		named("default_timeout", c.DefaultTimeout, CheckDefaultTimeout(c.DefaultTimeout)))
	for _, err := range checks {
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
	}
	return nil
}

// CheckDefaultPriority refuses a default_priority outside 0 (unset) to
// MaxPriority.
func CheckDefaultPriority(p int) error {
	if p < 0 || p > MaxPriority {
		return fmt.Errorf("want a priority from 1 (the most urgent) to %d", MaxPriority)
	}
	return nil
}

// CheckDefaultTimeout refuses a default_timeout outside 0 (none) to
// MaxTimeout.
func CheckDefaultTimeout(d time.Duration) error {
	if d < 0 || d > MaxTimeout {
		return fmt.Errorf("want 0 (none) to %v", MaxTimeout)
	}
	return nil
}

// named is err, when not nil, after the setting's name and value.
func named(key string, value any, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s %v: %w", key, value, err)
}

// File is the --config document:
//
//	defaults: { max_delay: 5ms, queue: 1024, workers: 0, threads: 0, provider: cpu }
//	models:
//	  image_padded: { max_delay: 10ms, queue: 256 }
type File struct {
	Defaults ModelConfig            `yaml:"defaults"`
	Models   map[string]ModelConfig `yaml:"models"`
}

// maxConfigBytes bounds a --config file: it names a few settings per
// model.
const maxConfigBytes = 1 << 20

// ReadConfig reads a --config file: a regular file of at most
// maxConfigBytes (a FIFO or a device is refused, never read), parsed by
// ParseConfig.
func ReadConfig(path string) (*File, error) {
	b, err := safefile.ReadFile(path, maxConfigBytes)
	if err != nil {
		return nil, err
	}
	return ParseConfig(path, b)
}

// ParseConfig parses a --config document read from path; unknown keys are
// errors.
func ParseConfig(path string, b []byte) (*File, error) {
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && err.Error() != "EOF" {
		return nil, fmt.Errorf("config %s: %v (keys: defaults, models: {NAME: {max_delay, queue, workers, threads, provider, max_media_bytes}})", path, err)
	}
	if err := f.Defaults.check("config " + path + ": defaults"); err != nil {
		return nil, err
	}
	for name, c := range f.Models {
		if err := c.check(fmt.Sprintf("config %s: model %s", path, name)); err != nil {
			return nil, err
		}
	}
	return &f, nil
}
