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

import "testing"

func TestPathRewriter(t *testing.T) {
	r := newPathRewriter("/state/pod", []string{"/etc/espo", "/data/smartspot", "/checkpoints/", "/tmp"})
	for in, want := range map[string]string{
		"/etc/espo/run.yaml":          "/state/pod/etc/espo/run.yaml",
		"--config=/etc/espo/run.yaml": "--config=/state/pod/etc/espo/run.yaml",
		"dataRoot: /data\n":           "dataRoot: /state/pod/data\n",
		`dir: "/checkpoints/run-1"`:   `dir: "/state/pod/checkpoints/run-1"`,
		`["/tmp","/etc/hosts"]`:       `["/state/pod/tmp","/etc/hosts"]`,
		"/etc/hosts":                  "/etc/hosts",
		"/bin/sh":                     "/bin/sh",
		"/":                           "/",
		"/tmpfoo":                     "/tmpfoo",
		"file:///etc/espo/x":          "file:///etc/espo/x",
		"http://h/etc/espo":           "http://h/etc/espo",
		"a/etc/espo":                  "a/etc/espo",
		"PATH=/usr/bin:/tmp/bin":      "PATH=/usr/bin:/state/pod/tmp/bin",
	} {
		if got := r.String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPathRewriterWithFile(t *testing.T) {
	base := newPathRewriter("/state/pod", []string{"/etc/espo"})
	r := base.withFile("/dev/termination-log", "/state/pod/containers/main/termination-log")
	for in, want := range map[string]string{
		"/dev/termination-log":          "/state/pod/containers/main/termination-log",
		"echo x > /dev/termination-log": "echo x > /state/pod/containers/main/termination-log",
		"/dev/termination-log/x":        "/dev/termination-log/x",
		"/dev/null":                     "/dev/null",
		"/etc/espo/run.yaml":            "/state/pod/etc/espo/run.yaml",
	} {
		if got := r.String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
	if got := base.Path("/dev/termination-log"); got != "/dev/termination-log" {
		t.Errorf("the rewriter withFile copied from rewrites %q", got)
	}
}
