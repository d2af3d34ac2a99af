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

package tensorboard

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/espo-dev/espo-operator/trainer/tracking"
)

// BenchmarkLog logs a typical step, 30 scalars, with the default sync to stable
// storage and without it.
func BenchmarkLog(b *testing.B) {
	for name, opts := range map[string][]Option{"sync": nil, "no sync": {WithoutSync()}} {
		b.Run(name, func(b *testing.B) {
			w := New(b.TempDir(), opts...)
			ctx := context.Background()
			if _, err := w.Open(ctx, run); err != nil {
				b.Fatal(err)
			}
			defer w.Close(ctx, "")
			points := make([]tracking.Point, 30)
			for i := range points {
				points[i].Key = fmt.Sprintf("train/metric_%02d", i)
			}
			b.ReportAllocs()
			step := int64(0)
			for b.Loop() {
				step++
				now := time.Now()
				for i := range points {
					points[i].Value, points[i].Step, points[i].Time = float64(step)*0.01+float64(i), step, now
				}
				if err := w.Log(ctx, points); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(w.end)/float64(step), "file-bytes/op")
		})
	}
}
