package plans

import (
	"bytes"
	"context"
	"slices"
	"sort"
	"strings"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

var utf8BOM = []byte("\xef\xbb\xbf")

// mdParser is goldmark's CommonMark block parser with no inline parsers.
// Plans are read from their block structure and raw lines; emphasis, links
// and code spans are never needed, and leaving those parsers out cuts the
// parse time by about a third. Link reference definitions are still
// recognised (they are block-level). Closed paragraphs are swapped for raw
// ones (see rawParagraph), which goldmark's inline pass skips.
// It is built once: a goldmark parser initialises itself under a sync.Once
// and keeps no per-document state, so it is safe to share.
var mdParser = newMarkdownParser(true)

// newMarkdownParser builds the plan parser; with raw false it keeps
// goldmark's own paragraphs, which the tests use as the reference.
func newMarkdownParser(raw bool) parser.Parser {
	if !raw {
		return parser.NewParser(
			parser.WithBlockParsers(parser.DefaultBlockParsers()...),
			parser.WithParagraphTransformers(parser.DefaultParagraphTransformers()...),
		)
	}
	var blocks []util.PrioritizedValue
	for _, v := range parser.DefaultBlockParsers() {
		if bp, ok := v.Value.(parser.BlockParser); ok && bp == parser.NewParagraphParser() {
			v.Value = paragraphParser{bp}
		}
		blocks = append(blocks, v)
	}
	return parser.NewParser(
		parser.WithBlockParsers(blocks...),
		parser.WithParagraphTransformers(
			util.Prioritized(linkRefs{}, 100), // in place of goldmark's LinkReferenceParagraphTransformer
			util.Prioritized(rawParagraphs{parser.NewParagraphParser()}, 1000)),
	)
}

// rawParagraph holds the lines of a closed paragraph. Goldmark's inline pass
// turns every line of every paragraph into a text node, about a quarter of
// its parse time, and plans never read those nodes; it skips raw blocks.
type rawParagraph struct{ ast.BaseBlock }

var kindRawParagraph = ast.NewNodeKind("RawParagraph")

func (n *rawParagraph) Kind() ast.NodeKind { return kindRawParagraph }
func (n *rawParagraph) IsRaw() bool        { return true }
func (n *rawParagraph) Dump(src []byte, level int) {
	ast.DumpHelper(n, src, level, nil, nil)
}

// closedParagraph records the paragraph closed last. Goldmark closes a
// paragraph before transforming it only when a setext heading takes it
// over; that paragraph must stay an *ast.Paragraph for the heading to read.
var closedParagraph = parser.NewContextKey()

// paragraphParser is goldmark's paragraph parser, noting what it closes.
type paragraphParser struct{ parser.BlockParser }

func (p paragraphParser) Close(node ast.Node, reader text.Reader, pc parser.Context) {
	p.BlockParser.Close(node, reader, pc)
	pc.Set(closedParagraph, node)
}

// rawParagraphs is the last paragraph transformer: it closes the paragraph
// as goldmark's paragraph parser would (closing is skipped for a node that a
// transformer replaced) and puts a rawParagraph with its lines in its place.
type rawParagraphs struct{ close parser.BlockParser }

func (t rawParagraphs) Transform(node *ast.Paragraph, reader text.Reader, pc parser.Context) {
	if n, ok := pc.Get(closedParagraph).(*ast.Paragraph); ok && n == node {
		return
	}
	t.close.Close(node, reader, pc)
	parent := node.Parent()
	if parent == nil {
		return
	}
	raw := &rawParagraph{}
	raw.SetLines(node.Lines())
	raw.SetBlankPreviousLines(node.HasBlankPreviousLines())
	parent.ReplaceChild(parent, node, raw)
}

// Parse parses a plan. It is a pure function of src, never panics, and
// returns a Plan with no tasks for empty or task-less input. Input past the
// bounds (MaxPlanSize, MaxNesting) is not parsed: the Plan has no tasks and
// says why in Invalid. The returned Plan keeps src (not a copy) in Src.
func Parse(src []byte) *Plan {
	p, _ := parseWith(context.Background(), mdParser, src)
	return p
}

// ParseContext is Parse that gives up once ctx is done, returning ctx's
// error and no plan, so that a signal ends a command reading a huge plan.
func ParseContext(ctx context.Context, src []byte) (*Plan, error) {
	return parseWith(ctx, mdParser, src)
}

func parseWith(ctx context.Context, md parser.Parser, src []byte) (*Plan, error) {
	if why := checkBounds(src); why != "" {
		return &Plan{Src: src, Invalid: why}, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ps := newParseState(src)
	p := &Plan{Src: src}
	pc := parser.NewContext()
	pc.Set(parseCtx, ctx)
	doc := md.Parse(text.NewReader(ps.body), parser.WithContext(pc))
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		h, ok := n.(*ast.Heading)
		if !ok {
			continue
		}
		off := ps.lineStart(ps.pos(h))
		s := Section{Title: ps.headingText(h), Level: h.Level, Line: ps.lineOf(off), Offset: off}
		if h.Level == 1 && p.Title == "" {
			p.Title = s.Title
		}
		p.Sections = append(p.Sections, s)
	}

	type cand struct {
		item *ast.ListItem
		mark int
	}
	var cands []cand
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.ListItem:
			if mark, ok := ps.checkbox(n); ok {
				cands = append(cands, cand{n, mark})
				// Checkboxes nested in a task belong to it.
				return ast.WalkSkipChildren, nil
			}
		case *rawParagraph, *ast.Paragraph, *ast.TextBlock:
			if p.EffortLine == 0 {
				ps.effort(n, p)
			}
		}
		return ast.WalkContinue, nil
	})

	todos := sectionRanges(p.Sections, len(src), "todos", "todo")
	gate := sectionRanges(p.Sections, len(src), "verification", "verification strategy")
	p.Tasks = make([]Task, 0, len(cands))
	p.HasTODOs = len(todos) > 0
	sec := 0
	for _, c := range cands {
		start := ps.lineStart(min(ps.pos(c.item), c.mark-1))
		check := inRanges(gate, start)
		if p.HasTODOs && !inRanges(todos, start) && !check {
			continue
		}
		t := ps.task(c.item, c.mark, start)
		t.Verification = check
		t.Index = len(p.Tasks)
		for sec < len(p.Sections) && p.Sections[sec].Offset <= start {
			sec++
		}
		if sec > 0 {
			t.Section = p.Sections[sec-1].Title
		}
		p.Tasks = append(p.Tasks, t)
	}
	return p, nil
}

type parseState struct {
	src  []byte // the whole file
	str  string // src as a string, made once, so that lines and fields are views of it
	body []byte // src without a leading byte-order mark; what goldmark sees
	base int    // len(src) - len(body)
	nl   []int  // offsets of '\n' in src, for line numbers
}

func newParseState(src []byte) *parseState {
	ps := &parseState{src: src, body: src, str: string(src)}
	if bytes.HasPrefix(src, utf8BOM) {
		ps.base = len(utf8BOM)
		ps.body = src[ps.base:]
	}
	ps.nl = make([]int, 0, bytes.Count(src, []byte{'\n'}))
	for i := 0; ; {
		j := bytes.IndexByte(src[i:], '\n')
		if j < 0 {
			break
		}
		ps.nl = append(ps.nl, i+j)
		i += j + 1
	}
	return ps
}

// pos is a node's offset in src (goldmark's offsets are into body).
func (ps *parseState) pos(n ast.Node) int {
	p := n.Pos()
	if p < 0 {
		if l := n.Lines(); l != nil && l.Len() > 0 {
			p = l.At(0).Start
		} else {
			p = 0
		}
	}
	return min(ps.base+p, len(ps.src))
}

// lineOf returns the 1-based line holding offset off.
func (ps *parseState) lineOf(off int) int {
	return sort.SearchInts(ps.nl, off) + 1
}

func (ps *parseState) lineStart(off int) int {
	off = max(0, min(off, len(ps.src)))
	return bytes.LastIndexByte(ps.src[:off], '\n') + 1
}

// lineEnd returns the offset just past the newline ending off's line.
func (ps *parseState) lineEnd(off int) int {
	off = max(0, min(off, len(ps.src)))
	if i := bytes.IndexByte(ps.src[off:], '\n'); i >= 0 {
		return off + i + 1
	}
	return len(ps.src)
}

// line returns off's line without its line ending.
func (ps *parseState) line(off int) string {
	s, e := ps.lineStart(off), ps.lineEnd(off)
	return strings.TrimRight(string(ps.src[s:e]), "\r\n")
}

func (ps *parseState) headingText(h *ast.Heading) string {
	lines := h.Lines()
	parts := make([]string, 0, lines.Len())
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		parts = append(parts, strings.TrimSpace(string(seg.Value(ps.body))))
	}
	return strings.TrimSpace(strings.Join(parts, " "))
}

// checkbox reports whether item is a task-list item and where its mark is.
// Only " ", "x" and "X" count as marks, so that ticking and unticking give
// back the original bytes. An item whose box is directly followed by a
// colon ("[ ]: x") is not a task: ticked, it would read as a link reference
// definition and stop being a list item with a checkbox.
func (ps *parseState) checkbox(item *ast.ListItem) (int, bool) {
	// A task's checkbox opens the first text of its item, as GFM has it:
	// read the bytes there rather than run an inline parser over every
	// line of the plan.
	fc := item.FirstChild()
	switch fc.(type) {
	case *rawParagraph, *ast.TextBlock, *ast.Paragraph:
	default:
		return 0, false
	}
	lines := fc.Lines()
	if lines.Len() == 0 {
		return 0, false
	}
	mark := ps.base + lines.At(0).Start + 1
	if mark < 1 || mark+1 >= len(ps.src) || ps.src[mark-1] != '[' || ps.src[mark+1] != ']' {
		return 0, false
	}
	switch ps.src[mark] {
	case ' ', 'x', 'X':
	default:
		return 0, false
	}
	if mark+2 < len(ps.src) && ps.src[mark+2] == ':' {
		return 0, false
	}
	return mark, true
}

func (ps *parseState) task(item *ast.ListItem, mark, start int) Task {
	t := Task{
		Mark:  mark,
		Done:  ps.src[mark] != ' ',
		Line:  ps.lineOf(mark),
		Start: start,
	}
	titleLineEnd := ps.lineEnd(mark)
	t.End = max(ps.itemEnd(item), titleLineEnd)
	rest := strings.TrimSpace(ps.str[mark+2 : titleLineEnd])
	t.Number, rest = splitNumber(rest)
	var tags titleTags
	t.Title, tags = splitTags(rest)
	tags.apply(&t)

	var code [][2]int // byte ranges of code lines, skipped when reading fields
	_ = ast.Walk(item, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.FencedCodeBlock:
			open := ps.lineStart(ps.pos(n))
			t.Blocks = append(t.Blocks, ps.block(n, open))
			code = append(code, [2]int{open, ps.fencedEnd(n)})
			return ast.WalkSkipChildren, nil
		case *ast.CodeBlock:
			if l := n.Lines(); l.Len() > 0 {
				code = append(code, [2]int{ps.base + l.At(0).Start, ps.base + l.At(l.Len()-1).Stop})
			}
			return ast.WalkSkipChildren, nil
		}
		return ast.WalkContinue, nil
	})
	ps.fields(&t, titleLineEnd, code)
	t.After = dependencyNumbers(t.Depends, tags.after)
	return t
}

// splitNumber splits "3. Title" or "3) Title" into 3 and "Title".
func splitNumber(s string) (int, string) {
	i, n := 0, 0
	for i < len(s) && i < 9 && s[i] >= '0' && s[i] <= '9' {
		n = n*10 + int(s[i]-'0')
		i++
	}
	if i == 0 || i >= len(s) || (s[i] != '.' && s[i] != ')') {
		return 0, s
	}
	if i+1 < len(s) && s[i+1] != ' ' && s[i+1] != '\t' {
		return 0, s
	}
	return n, strings.TrimSpace(s[i+1:])
}

// titleTags are the tags read off a task's line.
type titleTags struct {
	category string // [category: x], the first one
	after    string // the values of [after: ...] tags, joined by ","
	serial   bool   // [serial]
	needs    []string
	budget   string // [budget: ...], the first one
}

// apply fills t's tag fields.
func (tg titleTags) apply(t *Task) {
	t.Category, t.Serial, t.Needs, t.Budget = tg.category, tg.serial, tg.needs, tg.budget
}

// add records one tag; unknown keys are dropped with the tag.
func (tg *titleTags) add(key, val string) {
	switch strings.ToLower(key) {
	case "category":
		if tg.category == "" {
			tg.category = val
		}
	case "after":
		if tg.after != "" {
			tg.after += ","
		}
		tg.after += val
	case "serial":
		tg.serial = tg.serial || !slices.Contains([]string{"false", "no", "off", "0"}, strings.ToLower(val))
	case "needs":
		for _, n := range strings.Split(val, ",") {
			if n = strings.TrimSpace(n); n != "" {
				tg.needs = append(tg.needs, n)
			}
		}
	case "budget":
		if tg.budget == "" {
			tg.budget = val
		}
	}
}

// splitTags removes [key: value] tags and the bare [serial] tag from a
// title and returns what they say. Keys are a letter followed by letters,
// digits, "_" or "-", matched case-insensitively. A bracket followed by "("
// or "[" is a link, not a tag.
func splitTags(s string) (title string, tags titleTags) {
	if strings.IndexByte(s, '[') < 0 {
		return s, tags
	}
	var b []byte
	found := false
	last := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '[' {
			continue
		}
		key, val, end, ok := tagAt(s, i)
		if !ok {
			if end, ok = bareTagAt(s, i); !ok {
				continue
			}
			key = "serial"
		}
		tags.add(key, val)
		if !found {
			// The usual case, one tag ending the title: no copy needed.
			if strings.TrimRight(s[end:], " \t") == "" {
				return strings.TrimSpace(s[:i]), tags
			}
			b = make([]byte, 0, len(s))
			found = true
		}
		// Drop the tag and the blanks around it, keeping one blank
		// between the words on either side.
		b = bytes.TrimRight(append(b, s[last:i]...), " \t")
		if len(b) > 0 {
			b = append(b, ' ')
		}
		end2 := end
		for end2 < len(s) && (s[end2] == ' ' || s[end2] == '\t') {
			end2++
		}
		last = end2
		i = end2 - 1
	}
	if !found {
		return s, tags
	}
	b = append(b, s[last:]...)
	return strings.TrimSpace(string(b)), tags
}

// bareTagAt recognises the one tag without a value, "[serial]" in any
// case, at s[i] == '[', and returns the offset just past it.
func bareTagAt(s string, i int) (int, bool) {
	const tag = "[serial]"
	end := i + len(tag)
	if end > len(s) || !strings.EqualFold(s[i:end], tag) {
		return 0, false
	}
	if end < len(s) && (s[end] == '(' || s[end] == '[') {
		return 0, false
	}
	return end, true
}

// tagAt parses a "[key: value]" tag starting at s[i] == '['.
func tagAt(s string, i int) (key, val string, end int, ok bool) {
	j := i + 1
	if j >= len(s) || !isASCIILetter(s[j]) {
		return "", "", 0, false
	}
	for j < len(s) && (isASCIILetter(s[j]) || s[j] >= '0' && s[j] <= '9' || s[j] == '_' || s[j] == '-') {
		j++
	}
	key = s[i+1 : j]
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	if j >= len(s) || s[j] != ':' {
		return "", "", 0, false
	}
	k := strings.IndexAny(s[j+1:], "[]")
	if k < 0 || s[j+1+k] != ']' {
		return "", "", 0, false
	}
	end = j + 1 + k + 1
	if end < len(s) && (s[end] == '(' || s[end] == '[') {
		return "", "", 0, false
	}
	return key, strings.TrimSpace(s[j+1 : j+1+k]), end, true
}

func isASCIILetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// itemEnd returns the offset just past the last line of item's content.
func (ps *parseState) itemEnd(item ast.Node) int {
	end := 0
	_ = ast.Walk(item, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering || n.Type() != ast.TypeBlock {
			return ast.WalkContinue, nil
		}
		if fc, ok := n.(*ast.FencedCodeBlock); ok {
			end = max(end, ps.fencedEnd(fc))
			return ast.WalkSkipChildren, nil
		}
		// An HTML block's closing line ("-->") is not among its lines.
		if hb, ok := n.(*ast.HTMLBlock); ok && hb.HasClosure() {
			end = max(end, ps.lineEnd(ps.base+max(hb.ClosureLine.Start, hb.ClosureLine.Stop-1)))
		}
		if l := n.Lines(); l != nil && l.Len() > 0 {
			last := l.At(l.Len() - 1)
			end = max(end, ps.lineEnd(max(ps.base+last.Stop-1, ps.base+last.Start)))
		} else if n.Pos() >= 0 {
			end = max(end, ps.lineEnd(ps.pos(n)))
		}
		return ast.WalkContinue, nil
	})
	return end
}

// fencedEnd returns the offset just past a fenced block's closing fence, or
// past its last line when it is not closed.
func (ps *parseState) fencedEnd(n *ast.FencedCodeBlock) int {
	open := ps.pos(n)
	end := ps.lineEnd(open)
	if l := n.Lines(); l.Len() > 0 {
		last := l.At(l.Len() - 1)
		end = max(end, ps.lineEnd(max(ps.base+last.Stop-1, ps.base+last.Start)))
	}
	// The opening fence is a run of ` or ~ at open; the closing one is a run
	// of at least as many of the same character on the next line.
	fence := fenceRun(ps.src[open:ps.lineEnd(open)])
	if fence == "" || end >= len(ps.src) {
		return end
	}
	next := strings.TrimLeft(ps.line(end), " \t>")
	if run := fenceRun([]byte(next)); len(run) >= len(fence) && run[0] == fence[0] &&
		strings.TrimSpace(next[len(run):]) == "" {
		return ps.lineEnd(end)
	}
	return end
}

func fenceRun(line []byte) string {
	line = bytes.TrimLeft(line, " \t>-*+0123456789.)")
	if len(line) == 0 || (line[0] != '`' && line[0] != '~') {
		return ""
	}
	i := 0
	for i < len(line) && line[i] == line[0] {
		i++
	}
	if i < 3 {
		return ""
	}
	return string(line[:i])
}

func (ps *parseState) block(n *ast.FencedCodeBlock, open int) Block {
	b := Block{Line: ps.lineOf(open)}
	if n.Info != nil {
		b.Info = strings.TrimSpace(string(n.Info.Segment.Value(ps.body)))
	}
	words := strings.FieldsFunc(b.Info, func(r rune) bool {
		return r == ' ' || r == '\t' || r == ','
	})
	if len(words) > 0 {
		b.Lang, b.Args = words[0], words[1:]
	}
	var code strings.Builder
	l := n.Lines()
	for i := 0; i < l.Len(); i++ {
		seg := l.At(i)
		v := seg.Value(ps.body)
		if bytes.HasSuffix(v, []byte("\r\n")) {
			code.Write(v[:len(v)-2])
			code.WriteByte('\n')
			continue
		}
		code.Write(v)
	}
	b.Code = code.String()
	return b
}

// label recognises a bold field label at the start of a line, as in
// "**What**: text", "**What:** text" or "- **Files**: a.go", and returns the
// label lower-cased and the text after it.
func label(line string) (string, string, bool) {
	s := strings.TrimLeft(line, " \t")
	if len(s) > 2 && (s[0] == '-' || s[0] == '*' || s[0] == '+') && (s[1] == ' ' || s[1] == '\t') {
		s = strings.TrimLeft(s[2:], " \t")
	}
	if !strings.HasPrefix(s, "**") {
		return "", "", false
	}
	end := strings.Index(s[2:], "**")
	if end <= 0 {
		return "", "", false
	}
	name, rest := s[2:2+end], s[4+end:]
	switch {
	case strings.HasSuffix(name, ":"):
		name = name[:len(name)-1]
	case strings.HasPrefix(strings.TrimLeft(rest, " \t"), ":"):
		rest = strings.TrimLeft(rest, " \t")[1:]
	default:
		return "", "", false
	}
	return strings.TrimSpace(name), strings.TrimSpace(rest), true
}

// effort looks for **Estimated Effort**: in a paragraph's lines.
func (ps *parseState) effort(n ast.Node, p *Plan) {
	l := n.Lines()
	for i := 0; i < l.Len(); i++ {
		seg := l.At(i)
		v := seg.Value(ps.body)
		if !bytes.Contains(v, []byte("**")) {
			continue
		}
		if name, rest, ok := label(string(v)); ok && strings.EqualFold(name, "estimated effort") {
			p.Effort = strings.TrimSpace(strings.TrimSuffix(rest, "\\"))
			p.EffortLine = ps.lineOf(ps.base + seg.Start)
			return
		}
	}
}

// fieldOf maps an accepted label, in any case, to the field it fills.
func fieldOf(label string) (string, bool) {
	for _, f := range [...]struct{ label, field string }{
		{"what", "what"}, {"what to do", "what"},
		{"files", "files"}, {"file", "files"},
		{"acceptance", "acceptance"}, {"acceptance criteria", "acceptance"},
		{"depends", "depends"}, {"depends on", "depends"}, {"after", "depends"},
		{"dependencies", "depends"},
	} {
		if strings.EqualFold(label, f.label) {
			return f.field, true
		}
	}
	return "", false
}

// fields reads the **What**, **Files**, **Acceptance** and **Depends** fields of a task
// from its lines after the title line. A field runs until the next bold label
// or the end of the item; code lines are left out.
func (ps *parseState) fields(t *Task, from int, code [][2]int) {
	var cur string
	var first string
	var more []string
	flush := func() {
		if cur == "" {
			return
		}
		v := joinField(first, more)
		switch cur {
		case "what":
			if t.What == "" {
				t.What = v
			}
		case "files":
			if t.Files == "" {
				t.Files = v
			}
		case "acceptance":
			if t.Acceptance == "" {
				t.Acceptance = v
			}
		case "depends":
			if t.Depends == "" {
				t.Depends = v
			}
		}
		cur, first, more = "", "", nil
	}
	ci := 0
	for off := from; off < t.End; {
		end := min(ps.lineEnd(off), t.End)
		for ci < len(code) && code[ci][1] <= off {
			ci++
		}
		start := off
		raw := ps.src[off:end]
		off = end
		if ci < len(code) && code[ci][0] <= off-len(raw) && off-len(raw) < code[ci][1] {
			continue
		}
		isLabel := bytes.Contains(raw, []byte("**"))
		if !isLabel && cur == "" {
			continue // no field open: the line is not needed
		}
		line := strings.TrimRight(ps.str[start:end], "\r\n")
		if isLabel {
			if name, rest, ok := label(line); ok {
				flush()
				if f, known := fieldOf(name); known {
					cur, first = f, rest
				}
				continue
			}
		}
		if cur != "" {
			more = append(more, line)
		}
	}
	flush()
}

// joinField joins a field's first line and its continuation lines, with the
// continuation lines' common indentation removed.
func joinField(first string, more []string) string {
	if len(more) == 0 {
		return strings.TrimSpace(first)
	}
	indent := -1
	for _, l := range more {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " \t"))
		if indent < 0 || n < indent {
			indent = n
		}
	}
	lines := make([]string, 0, len(more)+1)
	lines = append(lines, first)
	for _, l := range more {
		l = strings.TrimRight(l, " \t")
		if len(l) >= indent && indent > 0 {
			l = l[indent:]
		}
		lines = append(lines, l)
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// sectionRanges returns the byte ranges of the sections whose heading is
// one of names (lower case, without a trailing colon), each up to the next
// heading of the same or a higher level.
func sectionRanges(secs []Section, size int, names ...string) [][2]int {
	var rs [][2]int
	for i, s := range secs {
		if !slices.Contains(names, strings.ToLower(strings.TrimRight(s.Title, ": "))) {
			continue
		}
		end := size
		for _, next := range secs[i+1:] {
			if next.Level <= s.Level {
				end = next.Offset
				break
			}
		}
		rs = append(rs, [2]int{s.Offset, end})
	}
	return rs
}

func inRanges(rs [][2]int, off int) bool {
	for _, r := range rs {
		if r[0] <= off && off < r[1] {
			return true
		}
	}
	return false
}
