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

package controllers

import "fmt"

// trainerPods counts trainer pods in words: "1 trainer pod", "3 trainer pods".
func trainerPods(n int32) string {
	if n == 1 {
		return "1 trainer pod"
	}
	return fmt.Sprintf("%d trainer pods", n)
}

// podsRunning says how many of a job's n trainer pods are running, in the Running
// condition's message: "all 3 trainer pods are running", "1 of 3 trainer pods are
// running", and for a one-pod job "the trainer pod is running" or "the trainer pod
// is not running yet".
func podsRunning(running, n int32) string {
	switch {
	case n == 1 && running == 1:
		return "the trainer pod is running"
	case n == 1:
		return "the trainer pod is not running yet"
	case running == n:
		return fmt.Sprintf("all %d trainer pods are running", n)
	}
	return fmt.Sprintf("%d of %d trainer pods are running", running, n)
}
