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

// api writes Executor and Option: Executor is genrt's, for this
// package's Request and Response, so that no executor repeats what does
// not depend on its workflow.
func (g *gen) api(f *jen.File) {
	doc(f, "Executor runs the workflow for many concurrent requests; the items of concurrent requests meet in the groupers of grouped components. Its methods are genrt.Executor's: Run takes a Request, RunJSON the requests document of `genaic run`, RunBatch and RunRequest requests by input name; Stats, Close. It is safe for concurrent use.")
	f.Type().Id("Executor").Op("=").Qual(genrtPath, "Executor").Types(jen.Id("Request"), jen.Id("Response"))
	doc(f, "Option configures New: genrt's options (genrt.WithSolo, WithMaxDelay, WithQueue, WithWorkers, WithBackend, WithBackendConfig, WithDecline, ...).")
	f.Type().Id("Option").Op("=").Qual(genrtPath, "Option")
}

// requests writes Request, Response, New, and ports: the table that maps
// Request and Response onto the workflow's inputs and outputs by name.
func (g *gen) requests(f *jen.File) {
	g.requestType(f)
	g.responseType(f)
	g.newFunc(f)
	var ins, outs []jen.Code
	for _, in := range g.m.Inputs {
		e := []jen.Code{jen.Id("Name").Op(":").Lit(in.Name)}
		switch {
		case in.Source == "literal" || in.Source == "artifact":
			e = append(e, jen.Id("Unloaded").Op(":").Lit(in.Source))
		case g.optional[in.Name]:
			e = append(e, jen.Id("Optional").Op(":").True())
		}
		e = append(e, jen.Id("Field").Op(":").Add(field("Request", jen.Op("**").Qual(backendPath, "Tensor"), jen.Op("&").Id("r").Dot(g.inFields[in.Name]))))
		if items, ok := g.inItems[in.Name]; ok {
			if byteItems(in) {
				e = append(e, jen.Id("Bytes").Op(":").Add(field("Request", jen.Index().Index().Byte(), jen.Id("r").Dot(items))))
			} else {
				e = append(e, jen.Id("Tensors").Op(":").Add(field("Request", jen.Index().Op("*").Qual(backendPath, "Tensor"), jen.Id("r").Dot(items))))
			}
		}
		ins = append(ins, jen.Line().Values(e...))
	}
	for _, o := range g.m.Outputs {
		e := []jen.Code{jen.Id("Name").Op(":").Lit(o.Name), jen.Id("Field").Op(":").Add(field("Response", jen.Op("**").Qual(backendPath, "Tensor"), jen.Op("&").Id("r").Dot(g.outFields[o.Name])))}
		if items, ok := g.outItems[o.Name]; ok {
			e = append(e, jen.Id("Items").Op(":").Add(field("Response", jen.Op("*").Index().Op("*").Qual(backendPath, "Tensor"), jen.Op("&").Id("r").Dot(items))))
		}
		outs = append(outs, jen.Line().Values(e...))
	}
	doc(f, "ports are the workflow's inputs, in the order the VM checks them (a request may supply no other), its outputs, in the order the VM's responses hold them, and their fields.")
	f.Var().Id("ports").Op("=").Qual(genrtPath, "Ports").Types(jen.Id("Request"), jen.Id("Response")).Values(
		jen.Line().Id("In").Op(":").Index().Qual(genrtPath, "In").Types(jen.Id("Request")).Values(append(ins, jen.Line())...),
		jen.Line().Id("Out").Op(":").Index().Qual(genrtPath, "Out").Types(jen.Id("Response")).Values(append(outs, jen.Line())...),
		jen.Line().Id("Held").Op(":").Add(field("Response", jen.Op("*").Qual(vmPath, "Holding"), jen.Op("&").Id("r").Dot("held"))),
		jen.Line().Id("Run").Op(":").Id("run"),
		jen.Line(),
	)
}

// newFunc writes New, which opens genrt's Executor on ports.
func (g *gen) newFunc(f *jen.File) {
	doc(f, "New opens the executor on the package folder packageDir: the folder holding %s and the artifacts the executor was generated from, which must not have changed since. ONNX Runtime is found as `genaic run` finds it: $ONNXRUNTIME_LIB, else the cache of \"make setup\".", g.f.Source)
	f.Func().Id("New").Params(jen.Id("packageDir").String(), jen.Id("opts").Op("...").Id("Option")).
		Params(jen.Op("*").Id("Executor"), jen.Error()).Block(
		jen.Return(genrtCall("New", jen.Id("planJSON"), jen.Id("packageDir"), jen.Id("opts"), jen.Op("&").Id("ports"))))
}

// field is an accessor of one field of typ, on one line (jen's Block
// spreads a body over lines): func(r *typ) result { return expr }.
func field(typ string, result, expr jen.Code) *jen.Statement {
	return jen.Func().Params(jen.Id("r").Op("*").Id(typ)).Add(result).Op("{").Return(expr).Op("}")
}

// requestType writes Request.
func (g *gen) requestType(f *jen.File) {
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
}

// responseType writes Response and its Release.
func (g *gen) responseType(f *jen.File) {
	doc(f, "Response is what a request's run emitted: a value for each workflow output the workflow emitted, nil for the others.")
	var fields []jen.Code
	for i, o := range g.m.Outputs {
		if i > 0 {
			fields = append(fields, jen.Line())
		}
		field := g.outFields[o.Name]
		fields = append(fields, comments(8, fmt.Sprintf("%s is workflow output `%s`: %s.", field, o.Name, describe(o.Contract)))...)
		fields = append(fields, jen.Id(field).Op("*").Qual(backendPath, "Tensor"))
	}
	fields = append(fields, g.itemsOutputFields()...)
	fields = append(fields, jen.Line())
	fields = append(fields, comments(8, "held holds the group outputs the response's tensors view.")...)
	fields = append(fields, jen.Id("held").Qual(vmPath, "Holding"))
	f.Type().Id("Response").Struct(fields...)
	doc(f, "Release says that the response's tensors, and anything made from them without a copy, are read no more: the engine may then write later requests' outputs into the memory they view. Releasing again does nothing; a response never released stays valid.")
	f.Func().Params(jen.Id("r").Op("*").Id("Response")).Id("Release").Params().Block(jen.Id("r").Dot("held").Dot("Release").Call())
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
