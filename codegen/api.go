package codegen

import (
	"fmt"

	"github.com/dave/jennifer/jen"
)

// doc adds a wrapped doc comment to a file.
func doc(f *jen.File, format string, args ...any) {
	for _, l := range wrap(0, fmt.Sprintf(format, args...)) {
		f.Comment(l)
	}
}

// api writes what every executor has: Executor, its options, New, Close,
// Stats and Copies.
func (g *gen) api(f *jen.File) {
	doc(f, "Executor runs the workflow for many concurrent requests; the items of concurrent requests meet in the groupers of grouped components. It is safe for concurrent use.")
	f.Type().Id("Executor").Struct(jen.Id("engine").Op("*").Qual(vmPath, "Engine"))
	doc(f, "Option configures New.")
	f.Type().Id("Option").Op("=").Qual(genrtPath, "Option")
	// The options are the runtime's own, so that every executor spells them
	// alike and none repeats their bodies.
	options := []struct{ name, doc string }{
		{"WithSolo", "WithSolo runs every invocation with exactly one request, as `genaic run --solo` does: the reference the grouped runs are compared with."},
		{"WithMaxDelay", "WithMaxDelay sets how long a group waits for more items (default 5ms, as for `genaic run`)."},
		{"WithQueue", "WithQueue bounds each grouped component's queue of waiting items (default 1024); a request that finds its queue full fails at once."},
		{"WithWorkers", "WithWorkers lets several groups of one component be formed and run at once (default 1)."},
		{"WithBackend", "WithBackend runs the components of one implementation kind on b: a *backend.Bindings for binding components, or a test double in place of ONNX Runtime."},
		{"WithBackendNamed", "WithBackendNamed runs the components of one implementation kind on a registered backend, by name."},
		{"WithBackendConfig", "WithBackendConfig configures the backends New makes: execution provider, ONNX Runtime thread counts and library path, Go bindings."},
		{"WithDecline", "WithDecline declines grouped execution by component, operator class and execution provider, with a reason."},
	}
	var vars []jen.Code
	for i, o := range options {
		if i > 0 {
			vars = append(vars, jen.Line())
		}
		for _, l := range wrap(1, o.doc) {
			vars = append(vars, jen.Comment(l))
		}
		vars = append(vars, jen.Id(o.name).Op("=").Qual(genrtPath, o.name))
	}
	f.Var().Defs(vars...)
	doc(f, "New opens the executor on the package folder packageDir: the folder holding %s and the artifacts the executor was generated from, which must not have changed since. ONNX Runtime is found as `genaic run` finds it: $ONNXRUNTIME_LIB, else the cache of \"make setup\".", g.f.Source)
	f.Func().Id("New").Params(jen.Id("packageDir").String(), jen.Id("opts").Op("...").Id("Option")).
		Params(jen.Op("*").Id("Executor"), jen.Error()).Block(
		jen.List(jen.Id("engine"), jen.Err()).Op(":=").Qual(genrtPath, "Open").Call(jen.Id("planJSON"), jen.Id("packageDir"), jen.Id("opts")),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
		jen.Return(jen.Op("&").Id("Executor").Values(jen.Id("engine").Op(":").Id("engine")), jen.Nil()),
	)
	doc(f, "Close stops the groupers, failing the requests that still wait, and releases the components.")
	f.Func().Params(jen.Id("ex").Op("*").Id("Executor")).Id("Close").Params().Error().Block(
		jen.Return(jen.Id("ex").Dot("engine").Dot("Close").Call()))
	doc(f, "Stats returns what every component did so far: invocations, group sizes, padding, copies, queue waits.")
	f.Func().Params(jen.Id("ex").Op("*").Id("Executor")).Id("Stats").Params().Qual(vmPath, "Stats").Block(
		jen.Return(jen.Id("ex").Dot("engine").Dot("Stats").Call()))
	doc(f, "Copies returns the host copies the groups of one component made so far, by reason (pack, pad, stack, companion, gather): splits are views, so a split never adds to them.")
	f.Func().Params(jen.Id("ex").Op("*").Id("Executor")).Id("Copies").Params(jen.Id("component").String()).Op("*").Qual(vmPath, "Copies").Block(
		jen.Return(jen.Id("ex").Dot("engine").Dot("Copies").Call(jen.Id("component"))))
}

// requests writes Run, RunJSON and what turns a request of a requests
// document into a typed one.
func (g *gen) requests(f *jen.File) {
	ex := func() *jen.Statement { return jen.Id("ex") }
	recv := jen.Id("ex").Op("*").Id("Executor")
	// begin counts a request as running until the function returns, so that
	// a group may wait for it rather than judge from arrival rates.
	begin := func() []jen.Code {
		return []jen.Code{ex().Dot("engine").Dot("Begin").Call(), jen.Defer().Add(ex()).Dot("engine").Dot("End").Call()}
	}
	doc(f, "Run executes the workflow for one request. Many goroutines may call it at once. A failed request returns an error; a *backend.RunError carries the rule and message `genaic run` reports.")
	f.Func().Params(recv).Id("Run").Params(jen.Id("ctx").Qual("context", "Context"), jen.Id("req").Op("*").Id("Request")).
		Params(jen.Op("*").Id("Response"), jen.Error()).Block(append([]jen.Code{
		jen.If(jen.Id("req").Op("==").Nil()).Block(jen.Id("req").Op("=").Op("&").Id("Request").Values()),
		g.runItemsCall(),
		jen.If(jen.Err().Op(":=").Add(ex()).Dot("check").Call(jen.Id("req")), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
	}, append(begin(), jen.Return(ex().Dot("run").Call(jen.Id("ctx"), jen.Id("req"))))...)...,
	)
	doc(f, "RunJSON runs the requests document of `genaic run` ({\"requests\":[{\"id\",\"inputs\":{NAME: TENSOR}}]}) with its requests concurrent, and returns the responses document `genaic run` writes without --stats. A request that fails is a response with an error; RunJSON itself fails only on a document it cannot read. Paths of .npy tensors are relative to the working directory.")
	f.Func().Params(recv.Clone()).Id("RunJSON").Params(jen.Id("ctx").Qual("context", "Context"), jen.Id("requests").Index().Byte()).
		Params(jen.Index().Byte(), jen.Error()).Block(
		jen.Return(jen.Qual(genrtPath, "RunJSON").Call(jen.Id("ctx"), jen.Id("requests"), ex().Dot("RunAll"))))
	doc(f, "RunAll runs requests given by input name concurrently, as vm.Engine.RunAll does: RunBatch with no limit, no stop and no report.")
	f.Func().Params(recv.Clone()).Id("RunAll").Params(jen.Id("ctx").Qual("context", "Context"), jen.Id("reqs").Index().Qual(vmPath, "Request")).
		Index().Qual(vmPath, "Response").Block(
		jen.Return(ex().Dot("RunBatch").Call(jen.Id("ctx"), jen.Id("reqs"), jen.Qual(vmPath, "BatchOptions").Values())))
	doc(f, "RunBatch runs requests given by input name concurrently, as vm.Engine.RunBatch does, and returns their responses in order: at most opts.Limit in flight (0: all), none started once opts.Stop closes (a request never started is answered with an error vm.NotStarted recognises, while those started finish), and opts.Finished told of each response as soon as it is known. The engine is told how many are coming, so that a group never waits for more than the batch holds. A request that gives items is packed into the plain requests its items make and answered once they all are.")
	f.Func().Params(recv.Clone()).Id("RunBatch").Params(jen.Id("ctx").Qual("context", "Context"), jen.Id("reqs").Index().Qual(vmPath, "Request"), jen.Id("opts").Qual(vmPath, "BatchOptions")).
		Index().Qual(vmPath, "Response").Block(
		jen.Return(ex().Dot("engine").Dot("RunBatchWith").Call(jen.Id("ctx"), jen.Id("reqs"), jen.Id("opts"), ex().Dot("runRequest"))))
	names := make([]jen.Code, len(g.m.Inputs))
	fields := jen.Dict{}
	for i, in := range g.m.Inputs {
		names[i] = jen.Lit(in.Name)
		fields[jen.Id(g.inFields[in.Name])] = jen.Id("r").Dot("Inputs").Index(jen.Lit(in.Name))
	}
	doc(f, "inputNames are the workflow's inputs: a request may supply no other.")
	f.Var().Id("inputNames").Op("=").Index().String().Values(names...)
	fail := func() jen.Code {
		return jen.Return(jen.Qual(vmPath, "Response").Values(jen.Id("ID").Op(":").Id("r").Dot("ID"), jen.Id("Err").Op(":").Err()))
	}
	doc(f, "RunRequest runs one request given by input name, as vm.Engine.Run takes it (a request of a requests document, or of a table that drives the VM and executors alike): its inputs are checked in the order the VM checks them, then the names it supplies. A failed request is a response with an error.")
	f.Func().Params(recv.Clone()).Id("RunRequest").Params(jen.Id("ctx").Qual("context", "Context"), jen.Id("r").Qual(vmPath, "Request")).
		Qual(vmPath, "Response").Block(append([]jen.Code{
		jen.If(jen.Len(jen.Id("r").Dot("Items")).Op(">").Lit(0)).Block(
			jen.Return(jen.Qual(genrtPath, "RunItems").Call(jen.Id("ctx"), ex().Dot("engine"), jen.Id("r"), ex().Dot("RunRequest")))),
	}, append(begin(), jen.Return(ex().Dot("runRequest").Call(jen.Id("ctx"), jen.Id("r"))))...)...,
	)
	doc(f, "runRequest runs one plain request given by input name, which its caller counts as running.")
	f.Func().Params(recv.Clone()).Id("runRequest").Params(jen.Id("ctx").Qual("context", "Context"), jen.Id("r").Qual(vmPath, "Request")).
		Qual(vmPath, "Response").Block(
		jen.Id("req").Op(":=").Op("&").Id("Request").Values(fields),
		jen.If(jen.Err().Op(":=").Add(ex()).Dot("check").Call(jen.Id("req")), jen.Err().Op("!=").Nil()).Block(fail()),
		jen.If(jen.Err().Op(":=").Qual(genrtPath, "Unexpected").Call(jen.Id("r").Dot("Inputs"), jen.Id("inputNames").Op("...")), jen.Err().Op("!=").Nil()).Block(fail()),
		jen.List(jen.Id("resp"), jen.Err()).Op(":=").Add(ex()).Dot("run").Call(jen.Id("ctx"), jen.Id("req")),
		jen.If(jen.Err().Op("!=").Nil()).Block(fail()),
		jen.Return(jen.Id("resp").Dot("held").Dot("Respond").Call(jen.Id("r").Dot("ID"), jen.Id("resp").Dot("outputs").Call())),
	)
	g.check(f)
	g.runItems(f)
}

// check writes the check of a request's inputs: present unless optional,
// and each against its contract, in the workflow's order.
func (g *gen) check(f *jen.File) {
	var body []jen.Code
	for _, in := range g.m.Inputs {
		field := jen.Id("req").Dot(g.inFields[in.Name])
		contract := jen.If(jen.Err().Op(":=").Id("ex").Dot("engine").Dot("CheckInput").Call(jen.Lit(in.Name), field.Clone()), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err()))
		switch {
		case in.Source == "literal" || in.Source == "artifact":
			body = append(body, jen.If(field.Clone().Op("==").Nil()).Block(jen.Return(jen.Qual(genrtPath, "NotLoaded").Call(jen.Lit(in.Name), jen.Lit(in.Source)))), contract)
		case g.optional[in.Name]:
			body = append(body, jen.If(field.Clone().Op("!=").Nil()).Block(contract))
		default:
			body = append(body, jen.If(field.Clone().Op("==").Nil()).Block(jen.Return(jen.Qual(genrtPath, "Missing").Call(jen.Lit(in.Name)))), contract)
		}
	}
	body = append(body, jen.Return(jen.Nil()))
	doc(f, "check checks a request's inputs as the VM does before it runs the workflow: each present unless it is optional, and each against its contract.")
	f.Func().Params(jen.Id("ex").Op("*").Id("Executor")).Id("check").Params(jen.Id("req").Op("*").Id("Request")).Error().Block(body...)
}

// types writes Request and Response.
func (g *gen) types(f *jen.File) {
	doc(f, "Request is one request: a value for each workflow input. A nil field is an input the request leaves out.")
	var fields []jen.Code
	for i, in := range g.m.Inputs {
		if i > 0 {
			fields = append(fields, jen.Line())
		}
		text := fmt.Sprintf("%s is workflow input `%s`: %s. It comes from the %s.", g.inFields[in.Name], in.Name, describe(in.Contract), source(in.Source))
		switch {
		case in.Source == "literal" || in.Source == "artifact":
			text += " This runtime does not load it yet: a request must supply it."
		case g.optional[in.Name]:
			text += " It is optional: nil leaves it out."
		}
		fields = append(fields, comments(8, text)...)
		fields = append(fields, jen.Id(g.inFields[in.Name]).Op("*").Qual(backendPath, "Tensor"))
	}
	fields = append(fields, g.itemsInputFields()...)
	f.Type().Id("Request").Struct(fields...)
	doc(f, "Response is what a request's run emitted: a value for each workflow output the workflow emitted, nil for the others.")
	fields = nil
	var names, vals []jen.Code
	for i, o := range g.m.Outputs {
		if i > 0 {
			fields = append(fields, jen.Line())
		}
		field := g.outFields[o.Name]
		fields = append(fields, comments(8, fmt.Sprintf("%s is workflow output `%s`: %s.", field, o.Name, describe(o.Contract)))...)
		fields = append(fields, jen.Id(field).Op("*").Qual(backendPath, "Tensor"))
		names = append(names, jen.Lit(o.Name))
		vals = append(vals, jen.Id("r").Dot(field))
	}
	fields = append(fields, g.itemsOutputFields()...)
	fields = append(fields, jen.Line())
	fields = append(fields, comments(8, "held holds the group outputs the response's tensors view.")...)
	fields = append(fields, jen.Id("held").Qual(vmPath, "Holding"))
	f.Type().Id("Response").Struct(fields...)
	doc(f, "Release says that the response's tensors, and anything made from them without a copy, are read no more: the engine may then write later requests' outputs into the memory they view. Releasing again does nothing; a response never released stays valid.")
	f.Func().Params(jen.Id("r").Op("*").Id("Response")).Id("Release").Params().Block(jen.Id("r").Dot("held").Dot("Release").Call())
	doc(f, "outputNames are the workflow's outputs, as the VM's responses name them.")
	f.Var().Id("outputNames").Op("=").Qual(vmPath, "NewOutputNames").Call(names...)
	doc(f, "outputs returns the emitted outputs by name, as the VM's responses hold them.")
	f.Func().Params(jen.Id("r").Op("*").Id("Response")).Id("outputs").Params().Qual(vmPath, "Outputs").Block(
		jen.Return(jen.Id("outputNames").Dot("Outputs").Call(jen.Index().Op("*").Qual(backendPath, "Tensor").Values(vals...))))
}

// source says where an input's value comes from.
func source(kind string) string {
	switch kind {
	case "request":
		return "request"
	case "application":
		return "application (through the request)"
	case "":
		return "request"
	}
	return kind
}
