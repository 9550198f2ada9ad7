package irtext

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"

	"github.com/genaic/genaic/ir"
)

// The grammar is written so that a name (an identifier or a string) only
// ever stands in a fixed position or inside a delimited list; everything
// optional starts with a keyword or punctuation. No word is reserved, so
// the printer writes any identifier-shaped name bare.

var textLexer = lexer.MustSimple([]lexer.SimpleRule{
	{Name: "Comment", Pattern: `//[^\n]*`},
	{Name: "Whitespace", Pattern: `[ \t\r\n]+`},
	{Name: "Loc", Pattern: `#-?[0-9]+`},
	{Name: "Value", Pattern: `%(?:\?|-?[0-9]+)`},
	{Name: "String", Pattern: `"(?:\\.|[^"\\\n])*"`},
	{Name: "Int", Pattern: `-?[0-9]+`},
	{Name: "Ident", Pattern: `[A-Za-z_][A-Za-z0-9_]*`},
	{Name: "Punct", Pattern: `->|[][{}(),:=@.]`},
})

var textParser = participle.MustBuild[file](
	participle.Lexer(textLexer),
	participle.Elide("Comment", "Whitespace"),
)

// text is a name or a string: an identifier as written, a Go string
// literal unquoted.
type text string

func (t *text) Capture(vs []string) error {
	s := strings.Join(vs, "")
	if strings.HasPrefix(s, `"`) {
		u, err := strconv.Unquote(s)
		if err != nil {
			return fmt.Errorf("%s is not a valid Go string literal", s)
		}
		s = u
	}
	*t = text(s)
	return nil
}

// integer is a decimal int64.
type integer int64

func (n *integer) Capture(vs []string) error {
	v, err := strconv.ParseInt(strings.Join(vs, ""), 10, 64)
	*n = integer(v)
	return err
}

// locRef is a location reference #n.
type locRef int32

func (l *locRef) Capture(vs []string) error {
	v, err := strconv.ParseInt(strings.TrimPrefix(strings.Join(vs, ""), "#"), 10, 32)
	*l = locRef(v)
	return err
}

// valRef is a value reference %n, or %? for no value.
type valRef int32

func (r *valRef) Capture(vs []string) error {
	s := strings.TrimPrefix(strings.Join(vs, ""), "%")
	if s == "?" {
		*r = -1
		return nil
	}
	v, err := strconv.ParseInt(s, 10, 32)
	*r = valRef(v)
	return err
}

type boolean bool

func (b *boolean) Capture(vs []string) error {
	*b = boolean(strings.Join(vs, "") == "true")
	return nil
}

type file struct {
	Schema     text         `parser:"'module' @String"`
	Major      integer      `parser:"@Int '.'"`
	Minor      integer      `parser:"@Int"`
	Manifest   *manifest    `parser:"@@?"`
	Inputs     []*input     `parser:"@@*"`
	Cells      []*cell      `parser:"@@*"`
	Outputs    []*output    `parser:"@@*"`
	Components []*component `parser:"@@*"`
	Serving    *serving     `parser:"@@?"`
	Programs   []*program   `parser:"@@*"`
	Values     []*value     `parser:"'values' '{' @@* '}'"`
	Body       []*step      `parser:"'body' '{' @@* '}'"`
	Locs       []*locEntry  `parser:"'locs' '{' @@* '}'"`
}

type manifest struct {
	Keyword      string      `parser:"@'manifest'"`
	Loc          locRef      `parser:"@Loc?"`
	ABIs         []*keyValue `parser:"('abi' @@)*"`
	Capabilities []text      `parser:"('capability' @(Ident | String))*"`
}

type keyValue struct {
	Key   text   `parser:"@(Ident | String) '='"`
	Value text   `parser:"@String"`
	Loc   locRef `parser:"@Loc?"`
}

type ref struct {
	Name text   `parser:"@(Ident | String)"`
	Loc  locRef `parser:"@Loc?"`
}

type use struct {
	ID   valRef `parser:"@Value"`
	Name text   `parser:"@(Ident | String)"`
	Loc  locRef `parser:"@Loc?"`
}

type contract struct {
	Loc      locRef     `parser:"@Loc?"`
	DType    text       `parser:"@(Ident | String)"`
	DTypeLoc locRef     `parser:"@Loc?"`
	Shape    *shape     `parser:"@@?"`
	Rank     *rank      `parser:"('rank' @@)?"`
	Optional bool       `parser:"@'optional'?"`
	Layout   *layout    `parser:"@@?"`
	Padding  []*padding `parser:"@@*"`
}

type shape struct {
	Dims []*dim `parser:"'[' (@@ (',' @@)*)? ']'"`
}

type dim struct {
	Sym  *text    `parser:"(@(Ident | String)"`
	Size *integer `parser:" | @Int)"`
	Loc  locRef   `parser:"@Loc?"`
}

type rank struct {
	N   integer `parser:"@Int"`
	Loc locRef  `parser:"@Loc?"`
}

type layout struct {
	Kind string      `parser:"@('shared' | 'request_aligned' | 'request_expanded' | 'token_packed')"`
	Loc  locRef      `parser:"@Loc?"`
	Args *layoutArgs `parser:"('(' @@ ')')?"`
}

type layoutArgs struct {
	Axis    integer  `parser:"@Int"`
	AxisLoc locRef   `parser:"@Loc?"`
	Factor  integer  `parser:"(',' 'factor' ':' @Int)?"`
	Levels  []*level `parser:"(',' 'levels' ':' '[' (@@ (',' @@)*)? ']')?"`
}

type level struct {
	Offsets ref    `parser:"'(' @@ ','"`
	Owner   ref    `parser:"@@"`
	Extent  string `parser:"@('preserved' | 'produced')? ')'"`
	Loc     locRef `parser:"@Loc?"`
}

type padding struct {
	Loc     locRef `parser:"'pad' @Loc? '('"`
	Dim     ref    `parser:"@@ ':'"`
	Lengths ref    `parser:"@@ ')'"`
}

type input struct {
	Value     valRef    `parser:"'input' @Value"`
	Name      text      `parser:"@(Ident | String)"`
	Loc       locRef    `parser:"@Loc?"`
	Contract  *contract `parser:"(':' @@)?"`
	Role      *role     `parser:"('role' @@)?"`
	Source    *source   `parser:"('source' @@)?"`
	Required  *boolean  `parser:"('required' @('true' | 'false'))?"`
	Default   bool      `parser:"@'default'?"`
	PresentAs text      `parser:"('present_as' @(Ident | String))?"`
	External  *external `parser:"('externally_suppliable' @@)?"`
}

type role struct {
	Kind    text  `parser:"@(Ident | String)"`
	Runtime *text `parser:"('(' @(Ident | String) ','"`
	Version text  `parser:"    @String ')')?"`
}

type source struct {
	Kind text  `parser:"@(Ident | String)"`
	Arg  *text `parser:"('(' @String ')')?"`
}

type external struct {
	Value boolean `parser:"@('true' | 'false')"`
	Loc   locRef  `parser:"@Loc?"`
}

type cell struct {
	Value           valRef    `parser:"'cell' @Value"`
	Name            text      `parser:"@(Ident | String)"`
	Loc             locRef    `parser:"@Loc?"`
	Contract        *contract `parser:"(':' @@)?"`
	Scope           text      `parser:"('scope' @(Ident | String))?"`
	Init            *use      `parser:"('init' @@)?"`
	Recurrence      text      `parser:"('recurrence' @(Ident | String))?"`
	Next            text      `parser:"('next' @(Ident | String))?"`
	Class           text      `parser:"('class' @(Ident | String))?"`
	Management      text      `parser:"('management' @(Ident | String))?"`
	ReleaseBoundary text      `parser:"('release_boundary' @(Ident | String))?"`
	ServiceGroup    text      `parser:"('service_group' @(Ident | String))?"`
}

type output struct {
	Name     text      `parser:"'output' @(Ident | String)"`
	Loc      locRef    `parser:"@Loc?"`
	Contract *contract `parser:"(':' @@)?"`
	Role     text      `parser:"('role' @(Ident | String))?"`
	Stage    text      `parser:"('stage' @(Ident | String))?"`
}

type component struct {
	Name     text      `parser:"'component' @(Ident | String)"`
	Loc      locRef    `parser:"@Loc?"`
	Impl     string    `parser:"'impl' @('onnx' | 'adapter' | 'binding')"`
	Artifact text      `parser:"('artifact' @String)?"`
	ABI      text      `parser:"('abi' @String)?"`
	Version  text      `parser:"('version' @String)?"`
	Inputs   []*port   `parser:"('in' @@)*"`
	Outputs  []*port   `parser:"('out' @@)*"`
	Capacity *capacity `parser:"@@?"`
	RowScope *rowScope `parser:"@@?"`
}

type port struct {
	Name     text      `parser:"@(Ident | String)"`
	Loc      locRef    `parser:"@Loc?"`
	Contract *contract `parser:"(':' @@)?"`
}

type capacity struct {
	Keyword string    `parser:"@'capacity'"`
	Loc     locRef    `parser:"@Loc?"`
	Uniform []*ref    `parser:"('uniform' '[' (@@ (',' @@)*)? ']')?"`
	Budgets []*budget `parser:"@@*"`
}

type budget struct {
	Loc      locRef  `parser:"'budget' @Loc?"`
	Path     []*ref  `parser:"'[' (@@ (',' @@)*)? ']'"`
	MaxTotal integer `parser:"'max_total' @Int"`
}

type rowScope struct {
	Loc      locRef  `parser:"'row_scope' @Loc?"`
	Axis     integer `parser:"'axis' @Int"`
	Stateful bool    `parser:"@'stateful'?"`
}

type serving struct {
	Keyword     string   `parser:"@'serving'"`
	Loc         locRef   `parser:"@Loc?"`
	Active      *ref     `parser:"('active' @@)?"`
	Done        *ref     `parser:"('done' @@)?"`
	AcceptedLen *ref     `parser:"('accepted_len' @@)?"`
	Groups      []*group `parser:"('group' @@)*"`
}

type group struct {
	Name           text     `parser:"@(Ident | String)"`
	Loc            locRef   `parser:"@Loc?"`
	Kind           text     `parser:"('kind' @(Ident | String))?"`
	Layout         text     `parser:"('layout' @(Ident | String))?"`
	Aliasing       text     `parser:"('aliasing' @(Ident | String))?"`
	SequenceAxis   *integer `parser:"('sequence_axis' @Int)?"`
	LogicalLengths *ref     `parser:"('logical_lengths' @@)?"`
}

type program struct {
	Modality   text             `parser:"'program' @(Ident | String)"`
	Loc        locRef           `parser:"@Loc?"`
	Transforms []*transform     `parser:"('transform' @@)*"`
	Outputs    []*programOutput `parser:"('out' @@)*"`
}

type transform struct {
	Op      text     `parser:"@(Ident | String)"`
	Loc     locRef   `parser:"@Loc?"`
	Inputs  []text   `parser:"'[' (@(Ident | String) (',' @(Ident | String))*)? ']' '->'"`
	Outputs []text   `parser:"'[' (@(Ident | String) (',' @(Ident | String))*)? ']'"`
	Params  []*param `parser:"('{' (@@ (',' @@)*)? '}')?"`
}

// param is a transform parameter: key = kind "text", or a list of those.
type param struct {
	Key    text           `parser:"@(Ident | String) '='"`
	List   bool           `parser:"( @'['"`
	Items  []*paramScalar `parser:"  (@@ (',' @@)*)? ']'"`
	Scalar *paramScalar   `parser:"| @@ )"`
	Loc    locRef         `parser:"@Loc?"`
}

type paramScalar struct {
	Kind paramKind `parser:"@Ident"`
	Text text      `parser:"@String"`
}

// paramKind is the kind word of a parameter scalar: string, int, float or
// bool.
type paramKind ir.ParamKind

func (k *paramKind) Capture(vs []string) error {
	w := strings.Join(vs, "")
	kind, ok := ir.ParseParamKind(w)
	if !ok || kind == ir.ParamList {
		return fmt.Errorf("%q is not a parameter kind; write string, int, float or bool", w)
	}
	*k = paramKind(kind)
	return nil
}

type programOutput struct {
	Name     text      `parser:"@(Ident | String)"`
	Loc      locRef    `parser:"@Loc?"`
	Source   text      `parser:"('source' @(Ident | String))?"`
	Content  text      `parser:"('content' @(Ident | String))?"`
	DType    text      `parser:"('dtype' @(Ident | String))?"`
	Contract *contract `parser:"(':' @@)?"`
}

type value struct {
	ID       valRef    `parser:"@Value"`
	Def      string    `parser:"@('input' | 'cell' | 'invoke' | 'phi' | 'iteration')"`
	Name     text      `parser:"@(Ident | String)"`
	Loc      locRef    `parser:"@Loc?"`
	Site     *siteRef  `parser:"(':' ( '@' @@"`
	Contract *contract `parser:"         | @@ ))?"`
}

// siteRef names the site whose contract a value shares: a workflow input,
// cell or output by name, or a port or program output by two names.
type siteRef struct {
	Pos    lexer.Position
	Single *siteOne `parser:"  @@"`
	Pair   *siteTwo `parser:"| @@"`
}

type siteOne struct {
	Kind string `parser:"@('input' | 'cell' | 'output')"`
	A    text   `parser:"@(Ident | String)"`
}

type siteTwo struct {
	Kind string `parser:"@('in' | 'out' | 'program')"`
	A    text   `parser:"@(Ident | String)"`
	B    text   `parser:"@(Ident | String)"`
}

type step struct {
	Invoke   *invoke   `parser:"  @@"`
	Emit     *emit     `parser:"| @@"`
	Sequence *sequence `parser:"| @@"`
	Branch   *branch   `parser:"| @@"`
	Loop     *loop     `parser:"| @@"`
}

// block is a braced list of steps; the brace is captured so that an empty
// block still counts as written.
type block struct {
	Open  string  `parser:"@'{'"`
	Steps []*step `parser:"@@* '}'"`
}

type invoke struct {
	Results   []*result `parser:"('(' @@ (',' @@)* ')' '=')?"`
	Loc       locRef    `parser:"'invoke' @Loc?"`
	Component ref       `parser:"@@"`
	Args      []*arg    `parser:"'(' (@@ (',' @@)*)? ')'"`
}

type result struct {
	Port  text   `parser:"@(Ident | String)"`
	Loc   locRef `parser:"@Loc? ':'"`
	Value valRef `parser:"@Value"`
}

type arg struct {
	Port  text   `parser:"@(Ident | String)"`
	Loc   locRef `parser:"@Loc? ':'"`
	Value use    `parser:"@@"`
}

type emit struct {
	Loc         locRef `parser:"'emit' @Loc?"`
	Mode        text   `parser:"@(Ident | String)"`
	Value       use    `parser:"@@ '->'"`
	Output      ref    `parser:"@@"`
	When        *use   `parser:"('when' @@)?"`
	ValidLength *use   `parser:"('valid_length' @@)?"`
	Axis        *axis  `parser:"('axis' @@)?"`
}

type axis struct {
	N   integer `parser:"@Int"`
	Loc locRef  `parser:"@Loc?"`
}

type sequence struct {
	Loc  locRef `parser:"'sequence' @Loc?"`
	Body block  `parser:"@@"`
}

type branch struct {
	Loc       locRef     `parser:"'branch' @Loc?"`
	Predicate use        `parser:"@@ '{'"`
	Cases     []*caseArm `parser:"@@*"`
	Default   *block     `parser:"('default' @@)?"`
	Phis      []*phi     `parser:"@@* '}'"`
}

type caseArm struct {
	Key  text   `parser:"'case' @(Ident | String)"`
	Loc  locRef `parser:"@Loc?"`
	Body block  `parser:"@@"`
}

type phi struct {
	Value   valRef      `parser:"@Value '=' 'phi'"`
	Loc     locRef      `parser:"@Loc? '('"`
	Inputs  []*phiInput `parser:"(@@ (',' @@)*)? ')'"`
	Default *use        `parser:"('default' @@)?"`
}

type phiInput struct {
	Key   text `parser:"@(Ident | String) ':'"`
	Value use  `parser:"@@"`
}

type loop struct {
	Loc       locRef   `parser:"'loop' @Loc?"`
	Iteration *valRef  `parser:"('iteration' @Value)?"`
	Max       integer  `parser:"('max_iterations' @Int)? '{'"`
	Setup     *block   `parser:"('setup' @@)?"`
	Body      block    `parser:"'body' @@"`
	While     use      `parser:"'while' @@"`
	Carried   []*carry `parser:"@@* '}'"`
}

type carry struct {
	Loc     locRef `parser:"'carry' @Loc?"`
	Cell    ref    `parser:"@@"`
	Initial *use   `parser:"('init' @@)?"`
	Next    use    `parser:"'next' @@"`
}

type locEntry struct {
	Pos   lexer.Position
	Index locRef  `parser:"@Loc '='"`
	Line  integer `parser:"@Int ':'"`
	Col   integer `parser:"@Int"`
	Path  text    `parser:"@String"`
}
