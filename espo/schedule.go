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

package espo

import "math"

// Schedule names how the learning rate changes over a run's optimizer steps after
// the warm-up.
type Schedule string

// The schedules, as transformers' get_constant_schedule_with_warmup,
// get_linear_schedule_with_warmup and get_cosine_schedule_with_warmup.
const (
	ScheduleConstant Schedule = "constant"
	ScheduleLinear   Schedule = "linear"
	ScheduleCosine   Schedule = "cosine"
)

// ScheduledRate returns the learning rate of optimizer step s (counted from 0) of a
// run of total steps T, with W warm-up steps and the base rate lr:
//
//	s < W:              lr * s / W                                (warm-up from 0)
//	constant, s >= W:   lr
//	linear, s >= W:     lr * max(0, (T - s) / max(1, T - W))
//	cosine, s >= W:     lr * max(0, (1 + cos(pi * (s - W) / max(1, T - W))) / 2)
//
// which are transformers' schedules (the HF Trainer's and TRL's): the first step of
// a warm-up has rate 0, and the last step of a run, s = T-1, has lr / (T - W) under
// linear and lr * (1 + cos(pi * (T-1-W) / (T-W))) / 2 under cosine, not 0. With
// W >= T every step of the run is a warm-up step: the rate only rises, and never
// decays below 0. It depends on s alone, so a resumed run takes the rates the
// uninterrupted run took. An unknown schedule is read as constant.
func ScheduledRate(lr float64, sched Schedule, s, warmup, total int64) float64 {
	if s < warmup {
		return lr * float64(s) / float64(warmup)
	}
	span := float64(max(1, total-warmup))
	switch sched {
	case ScheduleLinear:
		return lr * max(0, float64(total-s)/span)
	case ScheduleCosine:
		return lr * max(0, (1+math.Cos(math.Pi*float64(s-warmup)/span))/2)
	}
	return lr
}
