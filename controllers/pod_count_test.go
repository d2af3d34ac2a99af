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

import "testing"

func TestPodCountsReadAsEnglish(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{trainerPods(1), "1 trainer pod"},
		{trainerPods(2), "2 trainer pods"},
		{podsRunning(0, 1), "the trainer pod is not running yet"},
		{podsRunning(1, 1), "the trainer pod is running"},
		{podsRunning(0, 2), "0 of 2 trainer pods are running"},
		{podsRunning(1, 2), "1 of 2 trainer pods are running"},
		{podsRunning(2, 2), "all 2 trainer pods are running"},
	} {
		if tc.got != tc.want {
			t.Errorf("%q, want %q", tc.got, tc.want)
		}
	}
}
