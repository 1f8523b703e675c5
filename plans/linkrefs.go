package plans

import (
	"context"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// linkRefs takes link reference definitions off the front of a paragraph,
// as goldmark's LinkReferenceParagraphTransformer does, in time linear in the
// paragraph. Goldmark's transformer is quadratic in the number of
// definitions: each label is read through text.Reader.Value, which searches
// for its line backwards from the paragraph's last line, and each definition
// taken off shifts every line after it. A plan of 200,000 definitions took a
// minute. Plans never resolve references (there is no inline pass), so the
// definitions are only recognised and dropped: which lines stay in the
// paragraph is all that the plan reads, and that matches goldmark's (FuzzParse
// compares the two). It stops early, leaving the paragraph whole, once the
// parse's context (parseCtx) is done; the parse is then thrown away.
type linkRefs struct{}

// parseCtx holds the context.Context a parse runs under, if any.
var parseCtx = parser.NewContextKey()

// checkEvery is how many definitions are read between looks at the context.
const checkEvery = 1024

func (linkRefs) Transform(node *ast.Paragraph, reader text.Reader, pc parser.Context) {
	ctx, _ := pc.Get(parseCtx).(context.Context)
	lines := node.Lines()
	block := text.NewBlockReader(reader.Source(), lines)
	var removes [][2]int
	for n := 1; ; n++ {
		if ctx != nil && n%checkEvery == 0 && ctx.Err() != nil {
			return
		}
		start, end, at := linkRefDefinition(block)
		if start < 0 {
			break
		}
		// The definition stays in the tree, as goldmark leaves it, since
		// where a task's item ends is read from its last child's lines.
		ref := ast.NewLinkReferenceDefinition(nil, nil, nil)
		if start == 0 {
			ref.SetBlankPreviousLines(node.HasBlankPreviousLines())
		}
		node.Parent().InsertBefore(node.Parent(), node, ref)
		ref.Lines().Append(at)
		for i := start + 1; i < end; i++ {
			ref.Lines().Append(lines.At(i))
		}
		last := ref.Lines().Len() - 1
		seg := ref.Lines().At(last)
		ref.Lines().Set(last, seg.TrimRightSpace(reader.Source()))
		if start == end {
			end++
		}
		removes = append(removes, [2]int{start, end})
	}
	// Goldmark's removal, kept as is (with its offset arithmetic) so that
	// the same lines stay, but a removal at the front of what is left, the
	// usual case, reslices instead of copying the rest of the lines down.
	offset := 0
	for _, remove := range removes {
		if lines.Len() == 0 {
			break
		}
		if remove[0] == offset {
			lines.SetSliced(min(remove[1]-offset, lines.Len()), lines.Len())
		} else {
			s := lines.Sliced(remove[1]-offset, lines.Len())
			lines.SetSliced(0, remove[0]-offset)
			lines.AppendAll(s)
		}
		offset = remove[1]
	}
	if lines.Len() == 0 {
		node.Parent().RemoveChild(node.Parent(), node)
		return
	}
	node.SetLines(lines)
}

// linkRefDefinition is goldmark's parseLinkReferenceDefinition (parser/
// link_ref.go, v1.8.7) without reading its label, destination or title: it
// reports the lines [start, end) that the definition at the reader's position
// spans (start -1 if there is none) and where on its first line it begins.
// The label's text is needed only to see that it is not blank, which is
// read from the source instead of through text.Reader.Value (quadratic).
//
// The recognition steps of linkRefDefinition, blankSegments and
// linkDestination follow goldmark's, whose license says:
//
//	MIT License
//
//	Copyright (c) 2019 Yusuke Inuzuka
//
//	Permission is hereby granted, free of charge, to any person obtaining a
//	copy of this software and associated documentation files (the
//	"Software"), to deal in the Software without restriction, including
//	without limitation the rights to use, copy, modify, merge, publish,
//	distribute, sublicense, and/or sell copies of the Software, and to
//	permit persons to whom the Software is furnished to do so, subject to
//	the following conditions:
//
//	The above copyright notice and this permission notice shall be included
//	in all copies or substantial portions of the Software.
//
//	THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS
//	OR IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF
//	MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT.
//	IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY
//	CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT,
//	TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE
//	SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
func linkRefDefinition(block text.Reader) (start, end int, at text.Segment) {
	block.SkipSpaces()
	line, _ := block.PeekLine()
	if line == nil {
		return -1, -1, at
	}
	startLine, _ := block.Position()
	width, pos := util.IndentWidth(line, 0)
	if width > 3 {
		return -1, -1, at
	}
	if width != 0 {
		pos++
	}
	if line[pos] != '[' {
		return -1, -1, at
	}
	_, at = block.Position()
	block.Advance(pos + 1)
	closure := text.FindClosureOptions{Nesting: false, Newline: true, Advance: true}
	segments, found := block.FindClosure('[', ']', closure)
	if !found {
		return -1, -1, at
	}
	if blankSegments(block.Source(), segments) {
		return -1, -1, at
	}
	if block.Peek() != ':' {
		return -1, -1, at
	}
	block.Advance(1)
	block.SkipSpaces()
	if !linkDestination(block) {
		return -1, -1, at
	}
	line, _ = block.PeekLine()
	isNewLine := line == nil || util.IsBlank(line)

	endLine, _ := block.Position()
	_, spaces, _ := block.SkipSpaces()
	opener := block.Peek()
	if opener != '"' && opener != '\'' && opener != '(' {
		if !isNewLine {
			return -1, -1, at
		}
		return startLine, endLine + 1, at
	}
	if spaces == 0 {
		return -1, -1, at
	}
	block.Advance(1)
	closer := opener
	if opener == '(' {
		closer = ')'
	}
	_, found = block.FindClosure(opener, closer, closure)
	if !found {
		if !isNewLine {
			return -1, -1, at
		}
		block.AdvanceLine()
		return startLine, endLine + 1, at
	}
	line, _ = block.PeekLine()
	if line != nil && !util.IsBlank(line) {
		if !isNewLine {
			return -1, -1, at
		}
		return startLine, endLine, at
	}
	endLine, _ = block.Position()
	return startLine, endLine + 1, at
}

// blankSegments reports whether the text in segs is all white space (their
// padding is spaces).
func blankSegments(src []byte, segs *text.Segments) bool {
	for i := range segs.Len() {
		s := segs.At(i)
		if !util.IsBlank(src[s.Start:s.Stop]) {
			return false
		}
	}
	return true
}

// linkDestination is goldmark's parseLinkDestination (parser/link.go,
// v1.8.7), reporting only whether there is one and moving past it.
func linkDestination(block text.Reader) bool {
	block.SkipSpaces()
	line, _ := block.PeekLine()
	if block.Peek() == '<' {
		i := 1
		for i < len(line) {
			c := line[i]
			if c == '\\' && i < len(line)-1 && util.IsPunct(line[i+1]) {
				i += 2
				continue
			} else if c == '>' {
				block.Advance(i + 1)
				return true
			}
			i++
		}
		return false
	}
	opened := 0
	i := 0
	for i < len(line) {
		c := line[i]
		if c == '\\' && i < len(line)-1 && util.IsPunct(line[i+1]) {
			i += 2
			continue
		} else if c == '(' {
			opened++
		} else if c == ')' {
			opened--
			if opened < 0 {
				break
			}
		} else if util.IsSpace(c) {
			break
		}
		i++
	}
	block.Advance(i)
	return i != 0
}
