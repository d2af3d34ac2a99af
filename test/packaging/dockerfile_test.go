/*
Copyright 2026 The espo-operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package packaging

import (
	"debug/elf"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"

	"github.com/espo-dev/espo-operator/test/testenv"
)

// dockerStage is one FROM ... stage of a Dockerfile.
type dockerStage struct {
	from     *parser.Node
	image    string // the FROM image with the global ARGs expanded
	name     string // the AS name
	commands []*parser.Node
}

// parseDockerfile parses the repository's Dockerfile with BuildKit's own parser and
// splits it into stages; it returns the global ARG defaults too.
func parseDockerfile(t *testing.T) ([]*dockerStage, map[string]string) {
	t.Helper()
	return parseDockerfileAt(t, repoPath("Dockerfile"))
}

// parseDockerfileAt is parseDockerfile of the Dockerfile at path.
func parseDockerfileAt(t *testing.T, path string) ([]*dockerStage, map[string]string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := parser.Parse(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, w := range res.Warnings {
		t.Errorf("%s: parser warning: %s", path, w.Short)
	}
	args := map[string]string{}
	var stages []*dockerStage
	for _, n := range res.AST.Children {
		n.Value = strings.ToLower(n.Value) // the keyword as written
		switch {
		case n.Value == "from":
			s := &dockerStage{from: n, image: expand(t, n.Next.Value, args)}
			if n.Next.Next != nil && strings.EqualFold(n.Next.Next.Value, "as") {
				s.name = n.Next.Next.Next.Value
			}
			stages = append(stages, s)
		case len(stages) == 0 && n.Value == "arg":
			name, def, _ := strings.Cut(n.Next.Value, "=")
			args[name] = def
		case len(stages) > 0:
			stages[len(stages)-1].commands = append(stages[len(stages)-1].commands, n)
		}
	}
	return stages, args
}

// expand expands the variables of a Dockerfile word as BuildKit does.
func expand(t *testing.T, word string, vars map[string]string) string {
	t.Helper()
	out, _, err := shell.NewLex('\\').ProcessWord(word, envGetter(vars))
	if err != nil {
		t.Fatalf("expanding %q: %v", word, err)
	}
	return out
}

// envGetter turns a map into BuildKit's variable lookup.
func envGetter(vars map[string]string) shell.EnvGetter {
	var kv []string
	for k, v := range vars {
		kv = append(kv, k+"="+v)
	}
	return shell.EnvsFromSlice(kv)
}

// args returns the words after an instruction's keyword.
func args(n *parser.Node) []string {
	var out []string
	for a := n.Next; a != nil; a = a.Next {
		out = append(out, a.Value)
	}
	return out
}

// hasRegistryHost reports whether an image reference names a registry host: a first
// path component with a dot or a port, or localhost (the rule of the reference
// grammar).
func hasRegistryHost(ref string) bool {
	first, _, found := strings.Cut(ref, "/")
	return found && (strings.ContainsAny(first, ".:") || first == "localhost")
}

// TestDockerfileStages checks the Dockerfile's shape: a Go build stage from a bare image
// name whose modules download in a layer of their own, and a final stage from scratch
// with the pieces of a distroless static base, running `espo` as the nonroot user.
func TestDockerfileStages(t *testing.T) {
	stages, _ := parseDockerfile(t)
	if len(stages) != 2 {
		t.Fatalf("want 2 stages (build, final), got %d", len(stages))
	}
	build, final := stages[0], stages[1]

	if !strings.HasPrefix(build.image, "golang:1.26") || build.name != "build" {
		t.Errorf("first stage: FROM %s AS %s, want golang:1.26... AS build", build.image, build.name)
	}
	for _, s := range stages {
		if hasRegistryHost(s.image) {
			t.Errorf("FROM %s names a registry host; use the bare image name", s.image)
		}
	}
	// go.mod and go.sum alone, then the download, then the sources: the module layer
	// is cached until go.mod or go.sum change.
	var order []string
	for _, c := range build.commands {
		switch {
		case c.Value == "copy" && slices.Equal(args(c), []string{"go.mod", "go.sum", "./"}):
			order = append(order, "copy-mod")
		case c.Value == "run" && strings.Contains(c.Next.Value, "go mod download"):
			order = append(order, "download")
		case c.Value == "copy" && slices.Equal(args(c), []string{".", "."}):
			order = append(order, "copy-all")
		case c.Value == "run" && strings.Contains(c.Next.Value, "go build"):
			order = append(order, "build")
		}
	}
	if !slices.Equal(order, []string{"copy-mod", "download", "copy-all", "build"}) {
		t.Errorf("build stage steps: %v, want [copy-mod download copy-all build]", order)
	}
	rootfs := ""
	for _, c := range build.commands {
		if c.Value == "run" {
			rootfs += c.Next.Value
		}
	}
	for _, want := range []string{"ca-certificates.crt", "nonroot:x:65532:65532:", "nonroot:x:65532:", "chmod 1777 /rootfs/tmp"} {
		if !strings.Contains(rootfs, want) {
			t.Errorf("build stage does not prepare the final root filesystem with %q", want)
		}
	}

	if final.image != "scratch" {
		t.Errorf("final stage FROM %s, want scratch", final.image)
	}
	user, entrypoint, cmd := "", []string(nil), []string(nil)
	for _, c := range final.commands {
		switch c.Value {
		case "run":
			t.Errorf("final stage runs %q: scratch has no shell", c.Next.Value)
		case "copy":
			if !slices.Contains(c.Flags, "--from=build") {
				t.Errorf("final stage: %s copies from outside the build stage", c.Original)
			}
		case "user":
			user = c.Next.Value
		case "entrypoint":
			entrypoint = args(c)
		case "cmd":
			cmd = args(c)
		}
	}
	if user != "65532" && user != "65532:65532" {
		t.Errorf("final stage USER %q, want 65532 (nonroot)", user)
	}
	if !slices.Equal(entrypoint, []string{"/usr/local/bin/espo"}) || !slices.Equal(cmd, []string{"manager"}) {
		t.Errorf("ENTRYPOINT %q CMD %q, want [/usr/local/bin/espo] [manager]", entrypoint, cmd)
	}
	// The binary lands where the entrypoint looks: the build writes it into /rootfs,
	// which the final stage copies to /.
	argv := dockerGoBuild(t, nil).argv
	if out := argAfter(argv, "-o"); out != "/rootfs/usr/local/bin/espo" {
		t.Errorf("go build -o %s, want /rootfs/usr/local/bin/espo", out)
	}
}

// goBuild is a go build command line: its environment assignments and its argv.
type goBuild struct {
	env  []string
	argv []string
}

// splitCommand splits shell words into leading VAR=value assignments and the rest.
func splitCommand(words []string) goBuild {
	assignment := regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`)
	i := 0
	for i < len(words) && assignment.MatchString(words[i]) {
		i++
	}
	return goBuild{env: words[:i], argv: words[i:]}
}

// withoutOutput returns argv with the value of -o replaced by OUT.
func withoutOutput(argv []string) []string {
	out := slices.Clone(argv)
	for i := range out {
		if out[i] == "-o" && i+1 < len(out) {
			out[i+1] = "OUT"
		}
	}
	return out
}

// dockerGoBuild returns the go build command of the Dockerfile's build stage, expanded
// with the ARG defaults and the given build arguments, as BuildKit would run it for
// the build machine's platform.
func dockerGoBuild(t *testing.T, buildArgs map[string]string) goBuild {
	t.Helper()
	stages, global := parseDockerfile(t)
	vars := map[string]string{"TARGETOS": runtime.GOOS, "TARGETARCH": runtime.GOARCH}
	for k, v := range global {
		vars[k] = v
	}
	var run *parser.Node
	for _, c := range stages[0].commands {
		if c.Value == "arg" {
			name, def, _ := strings.Cut(c.Next.Value, "=")
			if _, set := vars[name]; !set {
				vars[name] = def
			}
		}
		if c.Value == "run" && strings.Contains(c.Next.Value, "go build") {
			run = c
		}
	}
	if run == nil {
		t.Fatal("the build stage has no RUN ... go build")
	}
	for k, v := range buildArgs {
		vars[k] = v
	}
	words, err := shell.NewLex('\\').ProcessWords(run.Next.Value, envGetter(vars))
	if err != nil {
		t.Fatal(err)
	}
	return splitCommand(words)
}

// makeGoBuild returns the command `make build` runs (with the make variables vars), as
// make -n prints it. The test may
// itself run under make (make test): the make it starts must not inherit that make's
// flags or level, or it would print "Entering directory" lines around the command.
func makeGoBuild(t *testing.T, version, commit string, vars ...string) goBuild {
	t.Helper()
	args := append([]string{"--no-print-directory", "-n", "build", "VERSION=" + version, "COMMIT=" + commit, "BIN=OUT"}, vars...)
	cmd := exec.Command("make", args...)
	cmd.Dir = env.RepoRoot
	cmd.Env = withoutMakeVariables(os.Environ())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make -n build: %v", err)
	}
	words, err := shell.NewLex('\\').ProcessWords(strings.TrimSpace(string(out)), envGetter(nil))
	if err != nil {
		t.Fatal(err)
	}
	return splitCommand(words)
}

// withoutMakeVariables drops the variables a parent make passes to its children.
func withoutMakeVariables(environ []string) []string {
	var out []string
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "MAKEFLAGS=") && !strings.HasPrefix(kv, "MAKELEVEL=") && !strings.HasPrefix(kv, "MFLAGS=") {
			out = append(out, kv)
		}
	}
	return out
}

// Build tags: every espo build leaves out gRPC's x/net/trace; the image's also leaves
// out the local mode.
const (
	makeTags  = "grpcnotrace"
	imageTags = "grpcnotrace,nolocal"
)

// argAfter is the word after flag in argv, "" if there is none.
func argAfter(argv []string, flag string) string {
	if i := slices.Index(argv, flag); i >= 0 && i+1 < len(argv) {
		return argv[i+1]
	}
	return ""
}

// TestDockerfileBuild checks that the image's go build is the Makefile's (static, with
// the version stamped, with the image's build tags), then runs it on the Dockerfile's
// build context (the tree less .dockerignore) and runs the binary it makes: there is
// no Docker engine here. The link must keep the linker's removal of unused methods
// (no reflective method call reachable, which would keep them all): it is what keeps
// the manager's memory down.
func TestDockerfileBuild(t *testing.T) {
	const version, commit = "v0.0.0-packaging-test", "c0ffee1"
	docker := dockerGoBuild(t, map[string]string{"VERSION": version, "COMMIT": commit})
	if tags := argAfter(docker.argv, "-tags"); tags != imageTags {
		t.Errorf("the Dockerfile builds with -tags %q, want %q", tags, imageTags)
	}
	if tags := argAfter(makeGoBuild(t, version, commit).argv, "-tags"); tags != makeTags {
		t.Errorf("make build builds with -tags %q, want %q (the local mode in, gRPC's trace out)", tags, makeTags)
	}
	mk := makeGoBuild(t, version, commit, "TAGS="+imageTags)
	if !slices.Contains(docker.env, "CGO_ENABLED=0") || !slices.Contains(mk.env, "CGO_ENABLED=0") {
		t.Errorf("CGO_ENABLED=0 missing: Dockerfile %q, Makefile %q", docker.env, mk.env)
	}
	if !slices.Equal(withoutOutput(docker.argv), withoutOutput(mk.argv)) {
		t.Fatalf("the Dockerfile builds\n  %q\nbut make build TAGS=%s runs\n  %q", docker.argv, imageTags, mk.argv)
	}

	context := buildContext(t)
	bin := filepath.Join(t.TempDir(), "espo")
	argv := slices.Clone(docker.argv)
	argv[slices.Index(argv, "-o")+1] = bin
	argv[slices.Index(argv, "-ldflags")+1] += " -dumpdep" // the linker's reachability graph, on stderr
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = context
	cmd.Env = append(os.Environ(), docker.env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(docker.argv, " "), err, testenv.LastLines(string(out), 40))
	}
	if reflective := reflectMethodCallers(string(out)); len(reflective) > 0 {
		t.Errorf("the image's link reaches reflective method calls, so the linker keeps every exported method "+
			"(about 25 MB more binary, 10 MiB more of the manager's memory); trace them with go build -ldflags=-dumpdep: %v", reflective)
	}

	out, err = exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("espo version: %v", err)
	}
	if want := "espo " + version + " (commit " + commit; !strings.HasPrefix(string(out), want) {
		t.Errorf("espo version printed %q, want it to start with %q", out, want)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary needs a dynamic loader; scratch has none (CGO must be off)")
		}
	}
	// The subcommands the image serves.
	for _, sub := range [][]string{{"manager", "--help"}, {"trainer", "--help"}, {"worker", "--device", "cpu", "--help"}} {
		if out, err := exec.Command(bin, sub...).CombinedOutput(); err != nil {
			t.Errorf("espo %s: %v\n%s", strings.Join(sub, " "), err, out)
		}
	}
	// and the one it does not, which says where to get it.
	if out, err := exec.Command(bin, "local", "up", "--sample").CombinedOutput(); err == nil || !strings.Contains(string(out), "make build") {
		t.Errorf("espo local up in the image: %v, %s; want a failure that says to build espo with make build", err, out)
	}
}

// reflectMethodCallers are the functions a -dumpdep link output marks <ReflectMethod>
// (their reflective method calls make the linker keep every exported method), at most
// five.
func reflectMethodCallers(dumpdep string) []string {
	var callers []string
	for line := range strings.Lines(dumpdep) {
		from, _, _ := strings.Cut(line, " -> ")
		if name, marked := strings.CutSuffix(strings.TrimSpace(from), " <ReflectMethod>"); marked && !slices.Contains(callers, name) {
			if callers = append(callers, name); len(callers) == 5 {
				break
			}
		}
	}
	return callers
}

// buildContext copies what `docker build .` would send, the repository less the paths
// .dockerignore excludes, into a temporary folder.
func buildContext(t *testing.T) string {
	t.Helper()
	f, err := os.Open(repoPath(".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	patterns, err := ignorefile.ReadAll(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	err = filepath.WalkDir(env.RepoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(env.RepoRoot, path)
		if rel == "." {
			return nil
		}
		if skip, err := pm.MatchesOrParentMatches(filepath.ToSlash(rel)); err != nil || skip {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			return copyFile(path, target)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// copyFile copies a regular file.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func TestReflectMethodCallersReadsTheLinkersMarks(t *testing.T) {
	dumpdep := "text/template.(*state).evalFieldChain -> text/template.(*state).evalField <ReflectMethod>\n" +
		"text/template.(*state).evalField <ReflectMethod> -> reflect.Value.MethodByName\n" +
		"text/template.(*state).evalField <ReflectMethod> -> reflect.Value.FieldByIndexErr\n" +
		"main.main -> fmt.Println\n"
	if got := reflectMethodCallers(dumpdep); !slices.Equal(got, []string{"text/template.(*state).evalField"}) {
		t.Errorf("reflectMethodCallers = %q, want the one marked caller", got)
	}
	if got := reflectMethodCallers("main.main -> fmt.Println\n"); len(got) != 0 {
		t.Errorf("reflectMethodCallers of a clean link = %q", got)
	}
}
