package plans

import (
	"fmt"

	"github.com/weavehq/weave/internal/safefile"
)

// The bounds of a plan. Markdown's block parser costs time that grows with
// the square of how deeply containers nest (a line of 20,000 ">" takes
// seconds, 200 KB of them minutes), so a plan past either bound is not
// parsed: it is listed as invalid, with the reason, and never run. Real
// plans are far inside both: a long plan is some tens of KiB (a generated
// runbook of 100,000 tasks is about 15 MiB), and lists nest a handful of
// levels.
const (
	// MaxPlanSize is the largest plan file read, in bytes.
	MaxPlanSize = 32 << 20
	// MaxNesting is how deep block quotes and lists may nest on a line.
	MaxNesting = 32
)

// checkBounds says why src is past the bounds, or "" when it is within.
func checkBounds(src []byte) string {
	if len(src) > MaxPlanSize {
		return tooLarge()
	}
	line := 1
	for i := 0; i < len(src); {
		d, end := lineNesting(src, i)
		if d > MaxNesting {
			return fmt.Sprintf("line %d nests block quotes or lists more than %d levels deep; flatten it", line, MaxNesting)
		}
		i = end
		line++
	}
	return ""
}

// lineNesting estimates from above how many containers the line starting
// at src[i] opens or continues: each ">" and list marker before its text
// counts one, and each two columns of indentation one more (a list nested
// by indentation alone shows only its depth there). It returns the estimate
// and the offset of the next line.
func lineNesting(src []byte, i int) (depth, next int) {
	cols := 0
scan:
	for i < len(src) {
		switch c := src[i]; {
		case c == ' ':
			cols++
			i++
			continue
		case c == '\t':
			cols += 4
			i++
			continue
		case c == '>':
			depth++
			i++
			continue
		case (c == '-' || c == '*' || c == '+') && i+1 < len(src) && (src[i+1] == ' ' || src[i+1] == '\t'):
			depth++
			i++
			continue
		case c >= '0' && c <= '9':
			j := i
			for j < len(src) && j-i < 9 && src[j] >= '0' && src[j] <= '9' {
				j++
			}
			if j+1 < len(src) && (src[j] == '.' || src[j] == ')') && (src[j+1] == ' ' || src[j+1] == '\t') {
				depth++
				i = j + 1
				continue
			}
		}
		break scan
	}
	depth += cols / 2
	for i < len(src) && src[i] != '\n' {
		i++
	}
	return depth, i + 1
}

// tooLarge is the reason given for a plan past MaxPlanSize.
func tooLarge() string {
	return fmt.Sprintf("the plan is larger than %s; split it into smaller plans", safefile.FormatSize(MaxPlanSize))
}
