//go:build nolocal

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

package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// errLocalOmitted is what "espo local" says in a build without the local mode.
var errLocalOmitted = errors.New(`this espo was built without the local mode (build tag nolocal), as the container image builds it: ` +
	`the local mode runs etcd, kube-apiserver and pods as processes of the machine it runs on, not in a container. ` +
	`Build espo on that machine with "make build" and run "bin/espo local up"`)

// newLocalCommand is "espo local" in a build with the nolocal tag: a hidden command
// that fails with errLocalOmitted, so that the image's espo links none of the local
// mode (etcd and kube-apiserver's launcher, virtual-kubelet), whose reflective code
// would keep every exported method in the binary.
func newLocalCommand() *cobra.Command {
	return &cobra.Command{
		Use:                "local",
		Short:              "Not in this build: the local mode (build espo with make build)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE:               func(*cobra.Command, []string) error { return errLocalOmitted },
	}
}
