package plugins

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// authorAPI is every name this package exports, with the methods of its
// exported types (interface methods included) as Type.Method: what a plugin
// author implements, calls or reads. A name joins it on purpose, with the
// question asked first: does an author use it, or only the host? What only
// the host, its supervisor, the built-ins or cmd/weave use belongs in
// package pluginhost.
var authorAPI = []string{
	// Implemented.
	"Agent", "Agent.Handle", "Agent.Info",
	"Hook", "Hook.Handle", "Hook.Info",
	// Called.
	"Serve", "ServeAgent", "ServeConfig", "ServeHook",
	"Host", "Host.CallTool", "Host.Complete", "Host.Log", "Host.Progress", "Host.TickTask",
	// Read and written: the protocol's values.
	"Action", "Allow", "Block", "Modify",
	"AgentRequest", "AgentResponse",
	"ChatMessage", "ChatRequest", "ChatResponse", "ChatRole", "RoleAssistant", "RoleSystem", "RoleTool", "RoleUser",
	"Decision", "Event", "Info", "Info.CheckTools", "Info.Handles", "Kind", "KindAgent", "KindHook", "Manifest",
	"PlanProgress", "PlanTask", "TaskRef", "ToolCall", "ToolResult", "ToolSpec", "Usage",
	"EnvPluginName", "ErrNoModel", "ErrPluginUnavailable", "ProtocolVersion",
	// The hook events.
	"EventChatMessage", "EventCommandExecuteBefore", "EventPlanTaskDone", "EventPlanTodosDone", "EventSessionCompacted",
	"EventSessionCompacting", "EventSessionEnd", "EventSessionIdle", "EventSessionStart",
	"EventToolExecuteAfter", "EventToolExecuteBefore", "Events",
	// The host's tools, as an agent offers them to its model and a hook
	// matches them.
	"IsTool", "LookupTool", "ToolBash", "ToolDef", "ToolDef.Spec", "ToolEdit", "ToolEvent", "ToolGlob",
	"ToolGrep", "ToolNames", "ToolPath", "ToolPlanCheck", "ToolRead", "ToolSkill", "ToolTask", "ToolTodoWrite",
	"ToolWebFetch", "ToolWrite", "Tools",
}

// hostOnly are names the host's side exports from package pluginhost; each
// was once exported here, and none is an author's.
var hostOnly = []string{
	"BuiltinCommand", "Conn", "DialOptions", "Dispense", "EnvHostPID", "Handshake",
	"MagicCookieKey", "MagicCookieValue", "NewRegistry", "PluginSet", "Registry", "ServeBuiltin",
}

// TestExportedAPI fails when this package exports a name that is not in
// authorAPI, or stops exporting one that is: the contract grows, and
// shrinks, only on purpose.
func TestExportedAPI(t *testing.T) {
	_, files := parsePackage(t, ".", parser.SkipObjectResolution)
	got := exportedNames(files)
	want := slices.Sorted(slices.Values(authorAPI))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("exported API of package plugins changed (-authorAPI +exported):\n%s\n"+
			"an author's name goes in authorAPI; a name only the host uses goes in package pluginhost", diff)
	}
	for _, name := range hostOnly {
		if slices.Contains(got, name) {
			t.Errorf("package plugins exports %s, which is the host's: it lives in package pluginhost", name)
		}
	}
}

// exportedNames lists, sorted, the exported top-level names declared in
// files and the exported methods of exported types as Type.Method.
func exportedNames(files []*ast.File) []string {
	var names []string
	for _, f := range files {
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					names = append(names, d.Name.Name)
					continue
				}
				if recv := receiverType(d.Recv.List[0].Type); ast.IsExported(recv) {
					names = append(names, recv+"."+d.Name.Name)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						names = append(names, s.Name.Name)
						if it, ok := s.Type.(*ast.InterfaceType); ok {
							for _, m := range it.Methods.List {
								for _, n := range m.Names {
									if n.IsExported() {
										names = append(names, s.Name.Name+"."+n.Name)
									}
								}
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								names = append(names, n.Name)
							}
						}
					}
				}
			}
		}
	}
	slices.Sort(names)
	return names
}

// receiverType is the name of a method's receiver type: T for T, *T, T[P]
// and *T[P].
func receiverType(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}

// parsePackage parses the non-test Go files of the package in dir that build
// on this platform, as go/build lists them.
func parsePackage(t *testing.T, dir string, mode parser.Mode) (string, []*ast.File) {
	t.Helper()
	bp, err := build.ImportDir(dir, 0)
	if err != nil {
		t.Fatalf("list package in %s: %v", dir, err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, mode|parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parse %s: %v", filepath.Join(dir, name), err)
		}
		files = append(files, f)
	}
	return bp.Name, files
}
