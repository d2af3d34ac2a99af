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

package localcluster

import (
	"maps"
	"path"
	"strings"
)

// pathRewriter maps the absolute paths a container would see to the folder of the
// pod on this machine, since a process cannot mount anything. Every volume mount of the
// pod is exposed at root+mountPath; a path is rewritten when it is a mount path, lies
// under one, or is an ancestor of one (so that "/data" becomes root+"/data" when
// "/data/smartspot" is mounted, and joining names to it still works). Every other path
// ("/etc/hosts", "/bin/sh") is the machine's own and stays as it is.
type pathRewriter struct {
	root string
	// mounts are the pod's mount paths, cleaned.
	mounts []string
	// files map a cleaned path to a file of this machine, as a container's
	// terminationMessagePath maps to its own termination message file.
	files map[string]string
}

// newPathRewriter returns the rewriter of a pod whose root folder is root and whose
// containers mount the given paths.
func newPathRewriter(root string, mountPaths []string) *pathRewriter {
	r := &pathRewriter{root: root}
	for _, m := range mountPaths {
		r.mounts = append(r.mounts, path.Clean(m))
	}
	return r
}

// withFile returns a copy of r that rewrites the absolute path p itself to file.
func (r *pathRewriter) withFile(p, file string) *pathRewriter {
	files := maps.Clone(r.files)
	if files == nil {
		files = map[string]string{}
	}
	files[path.Clean(p)] = file
	return &pathRewriter{root: r.root, mounts: r.mounts, files: files}
}

// rooted reports whether the absolute path p is a mount path, under one, or an
// ancestor of one ("/" itself never is).
func (r *pathRewriter) rooted(p string) bool {
	p = path.Clean(p)
	if p == "/" {
		return false
	}
	for _, m := range r.mounts {
		if within(p, m) || within(m, p) {
			return true
		}
	}
	return false
}

// within reports whether p is dir or lies under it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// Path rewrites one absolute path, or returns p unchanged.
func (r *pathRewriter) Path(p string) string {
	if f, ok := r.files[path.Clean(p)]; ok && strings.HasPrefix(p, "/") {
		return f
	}
	if !strings.HasPrefix(p, "/") || !r.rooted(p) {
		return p
	}
	return r.root + p
}

// String rewrites every absolute path inside s that starts a token: at the start of
// s, or after white space, a quote, '=', ':', ',' or an opening bracket. A token runs
// to the next white space, quote, ',', ':', ';' or closing bracket. So "--config=/etc/espo/
// run.yaml", "dataRoot: /data" and `["/checkpoints/a"]` are rewritten, and URLs
// ("file:///x", "http://h/x") are not.
func (r *pathRewriter) String(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '/' || !startsToken(s, i) || (i+1 < len(s) && s[i+1] == '/') {
			b.WriteByte(s[i])
			i++
			continue
		}
		end := i + 1
		for end < len(s) && !endsToken(s[end]) {
			end++
		}
		b.WriteString(r.Path(s[i:end]))
		i = end
	}
	return b.String()
}

// Strings rewrites each element of ss (see String) into a new slice.
func (r *pathRewriter) Strings(ss []string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = r.String(s)
	}
	return out
}

func startsToken(s string, i int) bool {
	return i == 0 || strings.IndexByte(" \t\r\n\"'=:,[({", s[i-1]) >= 0
}

func endsToken(c byte) bool {
	return strings.IndexByte(" \t\r\n\"',:;])}", c) >= 0
}
