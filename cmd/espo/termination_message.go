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
	"fmt"
	"io"
	"io/fs"
	"os"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"

	"github.com/espo-dev/espo-operator/internal/localcluster/podenv"
)

// maxTerminationMessage is the most of a termination message kubelet keeps.
const maxTerminationMessage = 4096

// terminationElision stands for the middle of a message cut to maxTerminationMessage.
const terminationElision = "\n[...]\n"

// terminationMessagePath is the file of the container's termination message:
// $ESPO_TERMINATION_MESSAGE_PATH where the local mode's process node names it,
// else kubelet's default, the terminationMessagePath the controller leaves on the
// trainer pods' containers.
func terminationMessagePath() string {
	if p := os.Getenv(podenv.TerminationMessagePath); p != "" {
		return p
	}
	return corev1.TerminationMessagePathDefault
}

// writeTerminationMessage writes msg, cut to maxTerminationMessage bytes, into the
// file at path, so that the container's terminated state (and the ESPOJob's
// condition) quote it rather than the log's tail. It writes only into a file that
// exists, as kubelet (or the process node) creates it for each container: outside
// one there is none, and nothing is written.
func writeTerminationMessage(path, msg string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = f.WriteString(boundTerminationMessage(msg))
	return errors.Join(err, f.Close())
}

// boundTerminationMessage is msg when it fits in maxTerminationMessage bytes, else
// its beginning (the outermost context) and its end (the root cause of a wrapped
// error) around terminationElision, cut between UTF-8 characters.
func boundTerminationMessage(msg string) string {
	if len(msg) <= maxTerminationMessage {
		return msg
	}
	keep := (maxTerminationMessage - len(terminationElision)) / 2
	head, tail := keep, len(msg)-keep
	for head > 0 && !utf8.RuneStart(msg[head]) {
		head--
	}
	for tail < len(msg) && !utf8.RuneStart(msg[tail]) {
		tail++
	}
	return msg[:head] + terminationElision + msg[tail:]
}

// reportTermination writes err, a command's final error, as the container's
// termination message (see writeTerminationMessage), saying on stderr when that
// fails; a nil err writes nothing. It returns err.
func reportTermination(err error, stderr io.Writer) error {
	if err == nil {
		return nil
	}
	if werr := writeTerminationMessage(terminationMessagePath(), err.Error()); werr != nil {
		fmt.Fprintf(stderr, "espo: writing the termination message: %v\n", werr)
	}
	return err
}
